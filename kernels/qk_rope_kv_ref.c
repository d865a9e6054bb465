/* CPU reference of the q/k norm + RoPE + KV-cache write (kernels/qk_rope_kv.cu). */
#include "kernels/sx_kernels.h"

#include <math.h>

#include "common/sx_bf16.h"

/* RMSNorm then rotate-half RoPE of one head into y. */
static void norm_rope(const float *x, const float *w, float eps, int dim, const float *c,
                      const float *s, float *y)
{
    int half = dim / 2;
    float ss = 0.0f;
    for (int i = 0; i < dim; i++)
        ss += x[i] * x[i];
    float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    for (int i = 0; i < half; i++) {
        float a = x[i] * inv * w[i];
        float b = x[i + half] * inv * w[i + half];
        y[i] = a * c[i] - b * s[i];
        y[i + half] = b * c[i] + a * s[i];
    }
}

void sx_ref_qk_rope_kv(const sx_attn_dims *d, const float *qkv, int n, const int32_t *pos,
                       const int32_t *slot, const float *q_norm, const float *k_norm, float eps,
                       const float *rope_cos, const float *rope_sin, float *q_out,
                       uint16_t *k_cache, uint16_t *v_cache)
{
    int D = d->head_dim, half = D / 2, hq = d->n_heads, hkv = d->n_kv_heads;
    size_t row = (size_t)(hq + 2 * hkv) * D;
    float y[256];
    for (int t = 0; t < n; t++) {
        const float *x = qkv + t * row;
        const float *c = rope_cos + (size_t)pos[t] * half, *s = rope_sin + (size_t)pos[t] * half;
        for (int h = 0; h < hq; h++)
            norm_rope(x + (size_t)h * D, q_norm, eps, D, c, s, q_out + (t * hq + h) * (size_t)D);
        if (slot[t] < 0)
            continue;
        int64_t blk = slot[t] / d->block_tokens, off = slot[t] % d->block_tokens;
        for (int h = 0; h < hkv; h++) {
            size_t at = (size_t)(blk * d->block_stride + ((int64_t)h * d->block_tokens + off) * D);
            norm_rope(x + (size_t)(hq + h) * D, k_norm, eps, D, c, s, y);
            const float *v = x + (size_t)(hq + hkv + h) * D;
            for (int i = 0; i < D; i++) {
                k_cache[at + i] = sx_f32_to_bf16(y[i]);
                v_cache[at + i] = sx_f32_to_bf16(v[i]);
            }
        }
    }
}
