/* The drafters of speculative decoding: prompt lookup (n-grams) and a
 * draft model.  Neither affects what is output, only how much of it one
 * verify pass confirms. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "engine/gen_spec_internal.h"

/* Longest n-gram first: a 4-token match predicts better than a 1-token
 * one; the latest occurrence is closest to what is being written. */
#define NGRAM_MAX 4

int gen_spec_draft_ngram(const gen_spec *sp, int max, int32_t *out)
{
    const int32_t *c = sp->ctx;
    int L = sp->n_ctx;
    for (int n = L - 1 < NGRAM_MAX ? L - 1 : NGRAM_MAX; n >= 1; n--) {
        const int32_t *pat = c + L - n;
        for (int i = L - n - 1; i >= 0; i--) {
            if (c[i] != pat[0] || memcmp(c + i, pat, (size_t)n * sizeof *c))
                continue;
            int got = 0;
            for (int j = i + n; j < L && got < max; j++)
                out[got++] = c[j];
            return got;
        }
    }
    return 0;
}

static void drop_draft_seq(sx_gen *g, gen_spec *sp)
{
    if (sp->dkv >= 0)
        sx_backend_seq_free(g->draft, sp->dkv);
    sp->dkv = -1;
    sp->n_dtok = 0;
}

/* Brings the draft engine's sequence to ctx + draft[0..nd) and leaves the
 * logits of its last position in g->draft_logits (masked by mask).  The
 * cache keeps its longest common prefix with what it held, so after a
 * verify only the newly confirmed tokens run. */
static int draft_run(sx_gen *g, gen_spec *sp, const uint32_t *mask)
{
    sx_error err;
    int L = sp->n_ctx + sp->nd;
    int p = 0;
    while (p < sp->n_dtok && p < L) {
        int32_t t = p < sp->n_ctx ? sp->ctx[p] : sp->draft[p - sp->n_ctx];
        if (sp->dtok[p] != t)
            break;
        p++;
    }
    if (p == L)
        p = L - 1; /* its logits are needed again: run the last one */
    if (sp->dkv < 0) {
        if (sx_backend_seq_new(g->draft, &sp->dkv, &err))
            return -1;
        p = 0;
    } else if (sx_backend_seq_truncate(g->draft, sp->dkv, p, &err)) {
        return -1;
    }
    sp->n_dtok = p;
    while (sp->n_dtok < L) {
        int32_t chunk[256];
        int n = 0;
        while (n < 256 && sp->n_dtok + n < L) {
            int q = sp->n_dtok + n;
            chunk[n++] = q < sp->n_ctx ? sp->ctx[q] : sp->draft[q - sp->n_ctx];
        }
        int last = sp->n_dtok + n == L;
        sx_step_item it = {sp->dkv, chunk, n, 0, last ? mask : NULL, NULL};
        if (sx_backend_step(g->draft, &it, 1, g->draft_logits, &err))
            return -1;
        for (int i = 0; i < n; i++)
            if (gen_spec_push(&sp->dtok, &sp->n_dtok, &sp->cap_dtok, chunk[i]))
                return -1;
    }
    return 0;
}

int gen_spec_draft_model(sx_gen *g, gen_spec *sp, int32_t *out)
{
    const uint32_t *mask = sp->masks ? sp->masks + (size_t)sp->nd * (size_t)g->mask_words : NULL;
    if (draft_run(g, sp, mask)) {
        drop_draft_seq(g, sp); /* the draft cache is full or failed: draft nothing */
        return 0;
    }
    int n = sx_tok_vocab_size(g->tok);
    if (n > g->vocab_rows)
        n = g->vocab_rows;
    const float *l = g->draft_logits;
    int32_t best = -1;
    for (int t = 0; t < n; t++)
        if (l[t] != -INFINITY && !isnan(l[t]) && (best < 0 || l[t] > l[best]))
            best = t;
    if (best < 0)
        return 0;
    *out = best;
    return 1;
}
