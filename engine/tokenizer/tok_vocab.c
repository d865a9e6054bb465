#include "engine/tokenizer/tokenizer.h"

#include <stdlib.h>

int sx_tok_make_vocab(const sx_tokenizer *tok, sx_vocab **out, sx_error *err)
{
    int32_t n = sx_tok_vocab_size(tok);
    const uint8_t **bytes = calloc((size_t)n, sizeof *bytes);
    uint32_t *lens = calloc((size_t)n, sizeof *lens);
    uint8_t *special = calloc((size_t)n, 1);
    int32_t eos[2];
    int n_eos = 0, rc;
    if (!bytes || !lens || !special) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory building the vocabulary");
        goto fail;
    }
    for (int32_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *b = sx_tok_bytes(tok, i, &len);
        bytes[i] = (const uint8_t *)(b ? b : "");
        lens[i] = b ? (uint32_t)len : 0;
        special[i] = sx_tok_is_added(tok, i) != 0;
    }
    static const char *const ends[] = {"<|im_end|>", "<|endoftext|>"};
    for (int k = 0; k < 2; k++) {
        int32_t id = sx_tok_find(tok, ends[k], __builtin_strlen(ends[k]));
        if (id >= 0)
            eos[n_eos++] = id;
    }
    if (n_eos == 0) {
        rc = sx_err_set(err, SX_EFORMAT, "tokenizer has neither <|im_end|> nor <|endoftext|>");
        goto fail;
    }
    rc = sx_vocab_new(n, sx_tok_n_rows(tok), bytes, lens, special, eos, n_eos, out, err);
fail:
    free(bytes);
    free(lens);
    free(special);
    return rc;
}
