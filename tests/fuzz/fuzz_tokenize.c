/* Fuzz target: arbitrary bytes encoded with the real Qwen3 tokenizer
 * (loaded once from $STRUX_SHARED or ../shared), lossy and with added
 * tokens.  Checks: ids in range; for valid UTF-8, decode(encode(x)) is
 * NFC(x); streaming decode only ever emits valid UTF-8 and, finished, equals
 * the full decode whenever that is valid UTF-8. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_internal.h"

static sx_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char path[4096];
    sx_error err;
    (void)argc;
    (void)argv;
    if (sx_tok_resolve_path(NULL, NULL, NULL, path, sizeof path, &err) ||
        sx_tok_load(path, &tok, &err)) {
        fprintf(stderr, "fuzz_tokenize: %s (set STRUX_SHARED)\n", err.msg);
        exit(1);
    }
    return 0;
}

static int valid(const sx_bytes *b)
{
    return sx_utf8_check(b->v ? b->v : "", b->n, NULL) == b->n;
}

static void check_ids(const sx_ids *ids)
{
    sx_bytes full = {0}, streamed = {0};
    sx_detok st = {0};
    sx_error err;
    for (size_t i = 0; i < ids->n; i++)
        if (ids->v[i] < 0 || ids->v[i] >= sx_tok_vocab_size(tok))
            __builtin_trap();
    if (sx_tok_decode(tok, ids->v, ids->n, &full, &err))
        __builtin_trap();
    for (size_t i = 0; i < ids->n; i++) {
        if (sx_detok_push(tok, &st, ids->v[i], &streamed, &err) || !valid(&streamed))
            __builtin_trap();
    }
    if (sx_detok_finish(&st, &streamed) || !valid(&streamed))
        __builtin_trap();
    if (valid(&full) && (full.n != streamed.n || memcmp(full.v, streamed.v, full.n)))
        __builtin_trap();
    sx_bytes_free(&full);
    sx_bytes_free(&streamed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    sx_ids ids = {0};
    sx_error err;
    int is_valid = sx_utf8_check(s, size, NULL) == size;
    /* lossy: never fails on text */
    if (sx_tok_encode(tok, s, size, SX_TOK_LOSSY, &ids, &err))
        __builtin_trap();
    check_ids(&ids);
    ids.n = 0;
    if (sx_tok_encode(tok, s, size, SX_TOK_LOSSY | SX_TOK_SPECIAL, &ids, &err))
        __builtin_trap();
    check_ids(&ids);
    ids.n = 0;
    int rc = sx_tok_encode(tok, s, size, 0, &ids, &err);
    if (is_valid != (rc == SX_OK) || (!is_valid && (rc != SX_EUTF8 || err.offset < 0 ||
                                                     (size_t)err.offset >= size || ids.n)))
        __builtin_trap();
    if (is_valid) {
        /* decode(encode(x)) == NFC(x), and plain mode has no added tokens */
        sx_bytes dec = {0};
        char *nfc = NULL;
        size_t nfc_len = 0;
        if (sx_tok_decode(tok, ids.v, ids.n, &dec, &err) || sx_nfc_apply(s, size, &nfc, &nfc_len))
            __builtin_trap();
        if (dec.n != nfc_len || (nfc_len && memcmp(dec.v, nfc, nfc_len)))
            __builtin_trap();
        for (size_t i = 0; i < ids.n; i++)
            if (sx_tok_is_added(tok, ids.v[i]))
                __builtin_trap();
        free(nfc);
        sx_bytes_free(&dec);
    }
    sx_ids_free(&ids);
    return 0;
}
