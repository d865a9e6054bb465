// Per-head q/k RMSNorm + rotate-half RoPE + the paged KV-cache write.
// One block per (token, head) over q, k and v heads; thread i owns the
// rotation pair (i, i + head_dim/2), so the norm's statistics are the only
// cross-thread step.
#include "kernels/sx_cuda_util.cuh"
#include "kernels/sx_kernels.h"

__global__ static void qk_rope_kv_kernel(sx_attn_dims d, const float *qkv, const int32_t *pos,
                                         const int32_t *slot, const float *q_norm,
                                         const float *k_norm, float eps, const float *rope_cos,
                                         const float *rope_sin, float *q_out, uint16_t *k_cache,
                                         uint16_t *v_cache)
{
    __shared__ float red[32];
    int t = blockIdx.x, h = blockIdx.y, i = threadIdx.x;
    int D = d.head_dim, half = D / 2, hq = d.n_heads, hkv = d.n_kv_heads;
    const float *x = qkv + ((size_t)t * (hq + 2 * hkv) + h) * D;
    int s = slot[t];
    if (h >= hq && s < 0)
        return; // the whole block leaves: no barrier is skipped by part of it
    int64_t at = 0;
    if (h >= hq) {
        int kvh = (h - hq) % hkv;
        at = (s / d.block_tokens) * d.block_stride +
             ((int64_t)kvh * d.block_tokens + s % d.block_tokens) * D;
    }
    if (h >= hq + hkv) {
        v_cache[at + i] = sx_f32_to_bf16(x[i]);
        v_cache[at + i + half] = sx_f32_to_bf16(x[i + half]);
        return;
    }
    float a = x[i], b = x[i + half];
    float ss = sx_block_sum(a * a + b * b, red);
    float inv = 1.0f / sqrtf(ss / (float)D + eps);
    const float *w = h < hq ? q_norm : k_norm;
    a = a * inv * w[i];
    b = b * inv * w[i + half];
    size_t rp = (size_t)pos[t] * half + i;
    float c = rope_cos[rp], sn = rope_sin[rp];
    float y0 = a * c - b * sn, y1 = b * c + a * sn;
    if (h < hq) {
        float *qo = q_out + ((size_t)t * hq + h) * D;
        qo[i] = y0;
        qo[i + half] = y1;
    } else {
        k_cache[at + i] = sx_f32_to_bf16(y0);
        k_cache[at + i + half] = sx_f32_to_bf16(y1);
    }
}

extern "C" int sx_cuda_qk_rope_kv(const sx_attn_dims *d, const float *qkv, int n, const int32_t *pos,
                                  const int32_t *slot, const float *q_norm, const float *k_norm,
                                  float eps, const float *rope_cos, const float *rope_sin,
                                  float *q_out, uint16_t *k_cache, uint16_t *v_cache, void *stream)
{
    if (n < 0 || d->head_dim % 64 || d->head_dim > 256 || d->n_kv_heads <= 0 ||
        d->n_heads <= 0 || d->block_tokens <= 0)
        return SX_EINVAL;
    if (n == 0)
        return SX_OK;
    dim3 grid((unsigned)n, (unsigned)(d->n_heads + 2 * d->n_kv_heads));
    SX_LAUNCH(qk_rope_kv_kernel, grid, d->head_dim / 2, 0, stream, *d, qkv, pos, slot, q_norm,
              k_norm, eps, rope_cos, rope_sin, q_out, k_cache, v_cache);
    SX_LAUNCH_CHECK();
    return SX_OK;
}
