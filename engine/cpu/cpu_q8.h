/* The SX_Q8_QUADS matrix kernels' common driver (cpu_kernels.h has the
 * layout): every path quantises the tokens' activations (sx_q8_quant_x's
 * definition, in its own instructions), keeps each token's |xq| beside
 * them (what vpmaddubsw multiplies as unsigned bytes), and runs its
 * panel x token-tile kernel over them.  Internal to engine/cpu/. */
#ifndef SX_CPU_Q8_H
#define SX_CPU_Q8_H

#include <stdlib.h>
#include "engine/cpu/cpu_kernels.h"

_Static_assert((int)SX_Q8_XBLOCK == (int)SX_Q4_XBLOCK, "int8 and q4 activations share their quantiser");

/* token t of the packed activations into xq (kp bytes) and sx (kp / 32) */
typedef void (*sx_q8_xquant_fn)(const float *xp, int n_tok, int tile, int t, int k, int8_t *xq,
                                float *sx);
/* one panel (nrows real rows, its row scales at scale) x T tokens: token
 * u's quantised row at xq + 2 * u * kp, its |xq| at xq + (2 * u + 1) * kp,
 * its block scales at sx + u * (kp / 32); y at the panel's first row of
 * the first token */
typedef void (*sx_q8_tile_fn)(const int8_t *pan, int kp, const int8_t *xq, const float *sx,
                              const float *scale, int T, float *y, long ldy, int nrows, int add);

/* mm_q8's contract for a path whose activation tiles hold `tile` tokens
 * and whose tile kernel takes up to tg tokens. */
static inline void sx_q8_drive(const int8_t *wp, const float *scale, int k, const float *xp,
                               int n_tok, int tile, float *y, long ldy, int r0, int r1,
                               int accumulate, int tg, sx_q8_xquant_fn xquant,
                               sx_q8_tile_fn tilef)
{
    int kp = sx_q8_kpad(k), nb = kp / SX_Q8_XBLOCK;
    /* all tokens quantised on the heap, so every panel is read once; decode
     * (or no memory) in chunks on the stack -- at least one token of the
     * largest k a config may give (intermediate_size <= 2^18, model_config.c) */
    enum { STACK_K = 1 << 18 };
    int8_t xq_s[2 * STACK_K];
    float sx_s[STACK_K / SX_Q8_XBLOCK];
    int8_t *xq = xq_s;
    float *sx = sx_s;
    int chunk = STACK_K / kp;
    if (chunk > tg)
        chunk -= chunk % tg;
    if (chunk < n_tok) {
        int8_t *hq = malloc((size_t)n_tok * 2 * kp);
        float *hs = malloc((size_t)n_tok * nb * sizeof *hs);
        if (hq && hs) {
            xq = hq;
            sx = hs;
            chunk = n_tok;
        } else {
            free(hq);
            free(hs);
        }
    }
    for (int c0 = 0; c0 < n_tok; c0 += chunk) {
        int c1 = c0 + chunk < n_tok ? c0 + chunk : n_tok;
        for (int t = c0; t < c1; t++) {
            int8_t *q = xq + (size_t)(t - c0) * 2 * kp;
            xquant(xp, n_tok, tile, t, k, q, sx + (size_t)(t - c0) * nb);
            for (int i = 0; i < kp; i++)   /* |q| <= 127: no overflow */
                q[kp + i] = (int8_t)(q[i] < 0 ? -q[i] : q[i]);
        }
        for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
            const int8_t *pan = wp + (size_t)p0 * kp;
            int nrows = r1 - p0 < SX_PANEL ? r1 - p0 : SX_PANEL;
            for (int t0 = c0; t0 < c1; t0 += tg) {
                int T = c1 - t0 < tg ? c1 - t0 : tg;
                size_t u = (size_t)(t0 - c0);
                tilef(pan, kp, xq + u * 2 * kp, sx + u * nb, scale + p0, T,
                      y + (long)t0 * ldy + p0, ldy, nrows, accumulate);
            }
        }
    }
    if (xq != xq_s) {
        free(xq);
        free(sx);
    }
}

#endif
