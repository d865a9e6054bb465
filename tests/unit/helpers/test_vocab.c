#include "tests/unit/helpers/test_vocab.h"

#include <stdlib.h>
#include <string.h>

static const char *const multi[] = {
    "{\"", "\":", "\": ", "\",", "\", \"", "\"}", "},", "}}", "]}", "[]", "{}", "[\"", "\"]",
    ", ", ": ", "true", "false", "null", "tr", "ue", "fal", "se", "nu", "ll", "12", "100",
    "0.", ".5", "e+", "-1", "\\n", "\\\"", "\\u00", "name", "\"name", "\"name\":", "tags",
    "\"tags\":", "age", "ab", "abc", "  ", "\n ", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98",
    "\x80", "id\"", "\"a\":", "\"b", "x\"", "y\"", ",\"", NULL};

sx_vocab *tv_small_vocab(void)
{
    return tv_vocab_with(multi);
}

sx_vocab *tv_vocab_with(const char *const *tokens)
{
    int nm = 0;
    while (tokens[nm])
        nm++;
    int32_t n = 256 + nm + 1; /* + end of turn */
    const uint8_t **bytes = calloc((size_t)n, sizeof *bytes);
    uint32_t *lens = calloc((size_t)n, sizeof *lens);
    uint8_t *special = calloc((size_t)n, 1), single[256];
    sx_vocab *v = NULL;
    for (int i = 0; i < 256; i++) {
        single[i] = (uint8_t)i;
        bytes[i] = &single[i];
        lens[i] = 1;
    }
    for (int i = 0; i < nm; i++) {
        bytes[256 + i] = (const uint8_t *)tokens[i];
        lens[256 + i] = (uint32_t)strlen(tokens[i]);
    }
    bytes[n - 1] = (const uint8_t *)"<eot>";
    lens[n - 1] = 5;
    special[n - 1] = 1;
    int32_t eos = n - 1;
    if (sx_vocab_new(n, n + 7, bytes, lens, special, &eos, 1, &v, NULL))
        v = NULL;
    free(bytes);
    free(lens);
    free(special);
    return v;
}

int32_t tv_byte_token(const sx_vocab *v, uint8_t b)
{
    (void)v;
    return b;
}

const uint8_t *tv_token_bytes(const sx_vocab *v, int32_t t, size_t *len)
{
    *len = v->tok_len[t];
    return v->tok_bytes[t];
}
