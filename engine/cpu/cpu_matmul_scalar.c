/* The plain C kernels over packed panels: the fallback on any CPU and the
 * baseline the vector paths are tested against. */
#include "engine/cpu/cpu_kernels.h"

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

static void mm_q8(const int8_t *wp, const float *scale, int k, const float *xp, int n_tok,
                  float *y, long ldy, int r0, int r1, int accumulate)
{
    int kp2 = (k + 1) & ~1;
    for (int r = r0; r < r1; r++) {
        const int8_t *pan = wp + (size_t)(r / SX_PANEL) * SX_PANEL * kp2 + r % SX_PANEL;
        for (int t = 0; t < n_tok; t++) {
            const float *xt = xp + (size_t)t * kp2;
            float s = 0.0f;
            for (int i = 0; i < kp2; i++)
                s += (float)pan[(size_t)i * SX_PANEL] * xt[i];
            store(y + t * ldy + r, s * scale[r], accumulate);
        }
    }
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
    .name = "scalar", .path = SX_CPU_SCALAR, .tile = 1,
    .mm_bf16 = mm_bf16, .mm_q8 = mm_q8,
    .att_block = att_block, .exp = vexp,
    .rmsnorm = sx_cpu_rmsnorm, .swiglu = swiglu, .bf16_to_f32 = sx_cpu_bf16_to_f32,
};
