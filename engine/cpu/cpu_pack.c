/* bf16 weight panels and activation tiles: see cpu_kernels.h. */
#include "engine/cpu/cpu_kernels.h"

#include <string.h>

size_t sx_pack_bf16_size(int rows, int k)
{
    return (size_t)sx_pad_rows(rows) * (size_t)((k + 1) & ~1);
}

void sx_pack_bf16(const uint16_t *w, int rows, int k, int r0, int r1, uint16_t *wp)
{
    int k2 = (k + 1) / 2;
    for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
        uint16_t *dst = wp + (size_t)p0 * 2 * k2;
        for (int j = 0; j < SX_PANEL; j++) {
            int r = p0 + j;
            const uint16_t *src = w + (size_t)r * k;
            for (int kp = 0; kp < k2; kp++) {
                uint16_t *d = dst + (size_t)kp * 2 * SX_PANEL + 2 * j;
                if (r >= rows) {
                    d[0] = d[1] = 0;
                    continue;
                }
                d[0] = src[2 * kp];
                d[1] = 2 * kp + 1 < k ? src[2 * kp + 1] : 0;
            }
        }
    }
}

void sx_pack_x_cols(const float *x, int t, int n_tok, int k, int c0, int c1, int tile, float *xp)
{
    int k2 = (k + 1) / 2, j = t / tile, u = t % tile;
    int tj = n_tok - j * tile < tile ? n_tok - j * tile : tile;
    float *d = xp + (size_t)j * tile * 2 * k2 + 2 * u;
    for (int kp = c0 / 2; kp < (c1 + 1) / 2; kp++) {
        d[(size_t)kp * 2 * tj] = x[2 * kp];
        d[(size_t)kp * 2 * tj + 1] = 2 * kp + 1 < k ? x[2 * kp + 1] : 0.0f;
    }
}

void sx_pack_x_row(const float *x, int t, int n_tok, int k, int tile, float *xp)
{
    sx_pack_x_cols(x, t, n_tok, k, 0, k, tile, xp);
}
