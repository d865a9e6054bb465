/* libFuzzer: the schema compiler and the matcher on untrusted input.
 * Input: a schema, optionally followed by a NUL and bytes to feed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "tests/unit/helpers/test_vocab.c"

static sx_vocab *V;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!V)
        V = tv_small_vocab();
    if (!V || size > 8192)
        return 0;
    const uint8_t *nul = memchr(data, 0, size);
    size_t slen = nul ? (size_t)(nul - data) : size;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    o.max_nodes = 20000;
    o.max_depth = 64;
    sx_grammar *g = NULL;
    sx_matcher *m = NULL;
    if (sx_gr_compile_schema(V, (const char *)data, slen, &o, &g, NULL))
        return 0;
    if (!sx_matcher_new(g, &m, NULL)) {
        uint32_t *mask = malloc((size_t)V->mask_words * sizeof *mask);
        uint8_t buf[512];
        const uint8_t *in = nul ? nul + 1 : NULL;
        size_t n = nul ? size - slen - 1 : 0;
        for (size_t i = 0; i < n && mask; i++) {
            if (i % 8 == 0)
                sx_matcher_fill_mask(m, mask);
            if (sx_matcher_accept_bytes(m, in + i, 1, NULL))
                break;
        }
        sx_matcher_can_end(m);
        sx_matcher_forced_bytes(m, buf, sizeof buf);
        size_t c = sx_matcher_shortest_completion(m, buf, sizeof buf);
        /* a completion the matcher proposes must finish the document */
        if (c != (size_t)-1 && (sx_matcher_accept_bytes(m, buf, c, NULL) || !sx_matcher_can_end(m)))
            abort();
        free(mask);
        sx_matcher_free(m);
    }
    sx_gr_free(g);
    return 0;
}
