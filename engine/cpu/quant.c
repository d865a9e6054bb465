/* int8 weight quantisation: symmetric, one f32 scale per output row, so a
 * row's dot product is scale * sum(q * x) and the kernels need no zero
 * point.  Packed into panels of SX_PANEL rows, k-major, k padded to even
 * (cpu_kernels.h). */
#include "engine/cpu/cpu_kernels.h"

#include <math.h>

/* scale of a row; *inv multiplies a weight into [-127, 127].  An all-zero
 * (or non-finite, which no real checkpoint has) row gets 0: all q are 0. */
static float row_scale(const uint16_t *wr, int cols, float *inv)
{
    float amax = 0.0f;
    for (int i = 0; i < cols; i++)
        amax = fmaxf(amax, fabsf(sx_bf16_to_f32(wr[i])));
    if (!(amax > 0.0f) || !isfinite(amax)) {
        *inv = 0.0f;
        return 0.0f;
    }
    *inv = 127.0f / amax;
    return amax / 127.0f;
}

static int8_t quant(uint16_t w, float inv)
{
    float v = nearbyintf(sx_bf16_to_f32(w) * inv);
    v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
    return (int8_t)v;
}

void sx_quant_q8_rows(const uint16_t *w, long r0, long r1, int cols, int8_t *q, float *scale)
{
    for (long r = r0; r < r1; r++) {
        float inv;
        scale[r] = row_scale(w + r * cols, cols, &inv);
        for (int i = 0; i < cols; i++)
            q[r * cols + i] = quant(w[r * cols + i], inv);
    }
}

size_t sx_pack_q8_size(int rows, int k, int layout)
{
    return (size_t)sx_pad_rows(rows) * (size_t)(layout == SX_Q8_VNNI ? (k + 31) & ~31 : (k + 1) & ~1);
}

/* Both layouts, panel by panel.  SX_Q8_PAIRS: for each k, the 32 rows'
 * values.  SX_Q8_VNNI: for each group of 4 k, the 32 rows' 4 values as
 * unsigned bytes q + 128 (vpdpbusd multiplies unsigned by signed bytes;
 * the kernel takes 128 * sum(x) back out); k padded to 32 with q = 0. */
void sx_pack_q8(const uint16_t *w, int rows, int k, int r0, int r1, int layout, int8_t *wp,
                float *scale)
{
    int vnni = layout == SX_Q8_VNNI, kp = vnni ? (k + 31) & ~31 : (k + 1) & ~1;
    for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
        int8_t *dst = wp + (size_t)p0 * kp;
        for (int j = 0; j < SX_PANEL; j++) {
            int r = p0 + j;
            const uint16_t *src = r < rows ? w + (size_t)r * k : w;
            float inv = 0.0f;
            scale[r] = r < rows ? row_scale(src, k, &inv) : 0.0f;
            for (int i = 0; i < kp; i++) {
                int q = r < rows && i < k ? quant(src[i], inv) : 0;
                if (vnni)
                    dst[(size_t)(i / 4) * 4 * SX_PANEL + 4 * j + i % 4] = (int8_t)(uint8_t)(q + 128);
                else
                    dst[(size_t)i * SX_PANEL + j] = (int8_t)q;
            }
        }
    }
}
