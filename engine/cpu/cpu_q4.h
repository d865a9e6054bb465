/* The q4 matrix kernels' common driver: every path quantises the tokens'
 * activations (sx_q4_quant_x's definition, in its own instructions) and
 * runs its panel x token-tile kernel over them.  Internal to engine/cpu/. */
#ifndef SX_CPU_Q4_H
#define SX_CPU_Q4_H

#include <stdlib.h>
#include "engine/cpu/cpu_kernels.h"

_Static_assert(SX_Q4_GROUP % SX_Q4_XBLOCK == 0, "a q4 group holds whole activation blocks");

/* token t of the packed activations into xq (kp bytes), sx, s8 (kp / 32 each) */
typedef void (*sx_q4_xquant_fn)(const float *xp, int n_tok, int tile, int t, int k, int8_t *xq,
                                float *sx, int32_t *s8);
/* one panel (nrows real rows) x T tokens: token u's quantised row at
 * xq + u * kp, its scales at sx + u * nb, s8 + u * nb; y at the panel's
 * first row of the first token */
typedef void (*sx_q4_tile_fn)(const uint8_t *pan, int kp, const int8_t *xq, const float *sx,
                              const int32_t *s8, int T, float *y, long ldy, int nrows, int add);

/* mm_q4's contract for a path whose activation tiles hold `tile` tokens
 * and whose tile kernel takes up to tg tokens. */
static inline void sx_q4_drive(const uint8_t *wp, int k, const float *xp, int n_tok, int tile,
                               float *y, long ldy, int r0, int r1, int accumulate, int tg,
                               sx_q4_xquant_fn xquant, sx_q4_tile_fn tilef)
{
    int kp = sx_q4_kpad(k), nb = kp / SX_Q4_XBLOCK;
    size_t pstride = (size_t)(kp / SX_Q4_GROUP) * SX_Q4_GROUP_BYTES;
    /* all tokens quantised on the heap, so every panel is read once; decode
     * (or no memory) in chunks on the stack -- at least one token of the
     * largest k a config may give (intermediate_size <= 2^18, model_config.c) */
    enum { STACK_K = 1 << 18 };
    int8_t xq_s[STACK_K];
    float sx_s[STACK_K / SX_Q4_XBLOCK];
    int32_t s8_s[STACK_K / SX_Q4_XBLOCK];
    int8_t *xq = xq_s;
    float *sx = sx_s;
    int32_t *s8 = s8_s;
    int chunk = STACK_K / kp;
    if (chunk > tg)
        chunk -= chunk % tg;
    if (chunk < n_tok) {
        int8_t *hq = malloc((size_t)n_tok * kp);
        float *hs = malloc((size_t)n_tok * nb * sizeof *hs);
        int32_t *h8 = malloc((size_t)n_tok * nb * sizeof *h8);
        if (hq && hs && h8) {
            xq = hq;
            sx = hs;
            s8 = h8;
            chunk = n_tok;
        } else {
            free(hq);
            free(hs);
            free(h8);
        }
    }
    for (int c0 = 0; c0 < n_tok; c0 += chunk) {
        int c1 = c0 + chunk < n_tok ? c0 + chunk : n_tok;
        for (int t = c0; t < c1; t++)
            xquant(xp, n_tok, tile, t, k, xq + (size_t)(t - c0) * kp, sx + (size_t)(t - c0) * nb,
                   s8 + (size_t)(t - c0) * nb);
        for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
            const uint8_t *pan = wp + (size_t)(p0 / SX_PANEL) * pstride;
            int nrows = r1 - p0 < SX_PANEL ? r1 - p0 : SX_PANEL;
            for (int t0 = c0; t0 < c1; t0 += tg) {
                int T = c1 - t0 < tg ? c1 - t0 : tg;
                size_t u = (size_t)(t0 - c0);
                tilef(pan, kp, xq + u * kp, sx + u * nb, s8 + u * nb, T, y + (long)t0 * ldy + p0,
                      ldy, nrows, accumulate);
            }
        }
    }
    if (xq != xq_s) {
        free(xq);
        free(sx);
        free(s8);
    }
}

#endif
