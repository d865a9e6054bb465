/* Fuzz target: arbitrary bytes as the contents of tokenizer.json.  Loading
 * must either fail with an error or give a tokenizer that encodes, decodes
 * and frees cleanly -- never crash, hang or leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sx_tokenizer *tok = NULL;
    sx_error err;
    if (sx_tok_load_mem((const char *)data, size, &tok, &err)) {
        if (tok || err.code == SX_OK || !err.msg[0])
            __builtin_trap(); /* a failure must say so, and leave nothing */
        return 0;
    }
    static const char *texts[] = {"", "a", "hello world", "ab abc  x\n\n", "<|end|>x",
                                  "caf\xC3\xA9 \xE4\xB8\x96\xF0\x9F\x98\x80", "\xFF\xFE"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        sx_ids ids = {0};
        sx_bytes out = {0};
        for (unsigned flags = 0; flags < 4; flags++) {
            ids.n = 0;
            if (sx_tok_encode(tok, texts[i], strlen(texts[i]), flags, &ids, &err))
                continue;
            for (size_t k = 0; k < ids.n; k++)
                if (ids.v[k] < 0 || ids.v[k] >= sx_tok_vocab_size(tok))
                    __builtin_trap();
            out.n = 0;
            if (sx_tok_decode(tok, ids.v, ids.n, &out, &err))
                __builtin_trap(); /* encode's ids always decode */
        }
        sx_ids_free(&ids);
        sx_bytes_free(&out);
    }
    for (int32_t id = 0; id < sx_tok_vocab_size(tok) && id < 512; id++) {
        size_t n;
        const char *b = sx_tok_bytes(tok, id, &n);
        if (b && sx_tok_find(tok, b, n) < 0)
            __builtin_trap();
    }
    sx_tok_free(tok);
    return 0;
}
