/* The plain C kernels over packed panels: the fallback on any CPU and the
 * baseline the vector paths are tested against. */
#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/cpu_q4.h"
#include "engine/cpu/cpu_q8.h"

#include <math.h>

static void store(float *y, float s, int add)
{
    *y = add ? *y + s : s;
}

/* x is packed with tile 1: each token's row, k padded to even */
static void mm_bf16(const uint16_t *wp, int k, const float *xp, int n_tok, float *y, long ldy,
                    int r0, int r1, int accumulate)
{
    int kp2 = (k + 1) & ~1;
    for (int r = r0; r < r1; r++) {
        const uint16_t *pan = wp + (size_t)(r / SX_PANEL) * SX_PANEL * kp2 + 2 * (r % SX_PANEL);
        for (int t = 0; t < n_tok; t++) {
            const float *xt = xp + (size_t)t * kp2;
            float s = 0.0f;
            for (int i = 0; i < kp2; i++)
                s += sx_bf16_to_f32(pan[(size_t)(i / 2) * 2 * SX_PANEL + (i & 1)]) * xt[i];
            store(y + t * ldy + r, s, accumulate);
        }
    }
}

/* The SX_Q8_QUADS reference: the integer sum of each block of 32 k
 * exactly, then y = scale[r] * sum over blocks of sx[b] * (sum q xq), the
 * f32 operations in block order as the vector kernels do them (those fuse
 * each block's multiply-add, so they differ from this only in rounding). */
static void tile_q8(const int8_t *pan, int kp, const int8_t *xq, const float *sx,
                    const float *scale, int T, float *y, long ldy, int nrows, int add)
{
    int nb = kp / SX_Q8_XBLOCK;
    for (int j = 0; j < nrows; j++)
        for (int t = 0; t < T; t++) {
            const int8_t *xt = xq + (size_t)t * 2 * kp;
            float s = 0.0f;
            for (int b = 0; b < nb; b++) {
                int32_t dot = 0;
                for (int i = b * SX_Q8_XBLOCK; i < (b + 1) * SX_Q8_XBLOCK; i++)
                    dot += pan[(size_t)(i / 4) * 4 * SX_PANEL + 4 * j + i % 4] * xt[i];
                s += (float)dot * sx[(size_t)t * nb + b];
            }
            store(y + t * ldy + j, s * scale[j], add);
        }
}

static void mm_q8(const int8_t *wp, const float *scale, int k, const float *xp, int n_tok,
                  float *y, long ldy, int r0, int r1, int accumulate)
{
    sx_q8_drive(wp, scale, k, xp, n_tok, 1, y, ldy, r0, r1, accumulate, 4, sx_q8_quant_x,
                tile_q8);
}

/* The q4 reference: the integer sums of each block of 32 k exactly, then
 * y = sum over blocks of (scale[r][group] * sx[b]) * (sum q x - 8 sum x). */
static void tile_q4(const uint8_t *pan, int kp, const int8_t *xq, const float *sx,
                    const int32_t *s8, int T, float *y, long ldy, int nrows, int add)
{
    int nb = kp / SX_Q4_XBLOCK, ng = kp / SX_Q4_GROUP;
    for (int j = 0; j < nrows; j++)
        for (int t = 0; t < T; t++) {
            float s = 0.0f;
            for (int g = 0; g < ng; g++) {
                const uint8_t *gb = pan + (size_t)g * SX_Q4_GROUP_BYTES;
                float d = sx_f16_to_f32((uint16_t)(gb[2 * j] | gb[2 * j + 1] << 8));
                for (int bb = 0; bb < SX_Q4_GROUP / SX_Q4_XBLOCK; bb++) {
                    int b = g * (SX_Q4_GROUP / SX_Q4_XBLOCK) + bb;
                    int32_t dot = -s8[(size_t)t * nb + b];
                    for (int s4 = 0; s4 < SX_Q4_XBLOCK / 8; s4++) {
                        const uint8_t *p = gb + 2 * SX_PANEL + (size_t)(bb * 4 + s4) * 4 * SX_PANEL + 4 * j;
                        const int8_t *xb = xq + (size_t)t * kp + b * SX_Q4_XBLOCK + 8 * s4;
                        for (int i = 0; i < 4; i++)
                            dot += (p[i] & 15) * xb[i] + (p[i] >> 4) * xb[4 + i];
                    }
                    s += d * sx[(size_t)t * nb + b] * (float)dot;
                }
            }
            store(y + t * ldy + j, s, add);
        }
}

static void mm_q4(const uint8_t *wp, int k, const float *xp, int n_tok, float *y, long ldy,
                  int r0, int r1, int accumulate)
{
    sx_q4_drive(wp, k, xp, n_tok, 1, y, ldy, r0, r1, accumulate, 4, sx_q4_quant_x, tile_q4);
}

static void att_block(const float *q, long ldq, int nq, const float *kt, const float *v,
                      int bt, int nj, int hd, float scale, float *m, float *l, float *acc)
{
    for (int i = 0; i < nq; i++) {
        const float *qi = q + i * ldq;
        float *a = acc + (size_t)i * hd;
        for (int j = 0; j < nj; j++) {
            float s = 0.0f;
            for (int d = 0; d < hd; d++)
                s += qi[d] * kt[(size_t)d * bt + j];
            s *= scale;
            if (s > m[i]) {
                float corr = m[i] == -INFINITY ? 0.0f : expf(m[i] - s);
                l[i] *= corr;
                for (int d = 0; d < hd; d++)
                    a[d] *= corr;
                m[i] = s;
            }
            float p = expf(s - m[i]);
            l[i] += p;
            for (int d = 0; d < hd; d++)
                a[d] += p * v[(size_t)j * hd + d];
        }
    }
}

static void vexp(float *y, const float *x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = expf(x[i]);
}

static void swiglu(float *g, const float *u, int n)
{
    sx_cpu_swiglu(&sx_cpu_scalar_kernels, g, u, n);
}

const sx_cpu_kernels sx_cpu_scalar_kernels = {
    .name = "scalar", .path = SX_CPU_SCALAR, .tile = 1, .q8_layout = SX_Q8_QUADS,
    .mm_bf16 = mm_bf16, .mm_q8 = mm_q8, .mm_q4 = mm_q4,
    .att_block = att_block, .exp = vexp,
    .rmsnorm = sx_cpu_rmsnorm, .swiglu = swiglu, .bf16_to_f32 = sx_cpu_bf16_to_f32,
};
