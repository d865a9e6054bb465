/* CPU reference of attention over the paged KV cache (kernels/attn_prefill.cu
 * and kernels/attn_decode.cu share this meaning). */
#include "kernels/sx_kernels.h"

#include <math.h>
#include <string.h>

#include "common/sx_bf16.h"

static const uint16_t *cache_at(const sx_attn_dims *d, const uint16_t *cache, const int32_t *table,
                                int p, int kvh)
{
    int64_t blk = table[p / d->block_tokens];
    int off = p % d->block_tokens;
    return cache + blk * d->block_stride + ((int64_t)kvh * d->block_tokens + off) * d->head_dim;
}

static float score(const sx_attn_dims *d, const float *q, const uint16_t *kc, const int32_t *table,
                   int j, int kvh, float scale)
{
    const uint16_t *k = cache_at(d, kc, table, j, kvh);
    float s = 0.0f;
    for (int i = 0; i < d->head_dim; i++)
        s += q[i] * sx_bf16_to_f32(k[i]);
    return s * scale;
}

/* Two passes (the maximum, then the weights) so that nothing is allocated. */
static void one_query(const sx_attn_dims *d, const float *q, const uint16_t *kc,
                      const uint16_t *vc, const int32_t *table, int n_keys, int kvh, float scale,
                      uint16_t *out)
{
    int D = d->head_dim;
    float m = -INFINITY, l = 0.0f, acc[256] = {0};
    for (int j = 0; j < n_keys; j++)
        m = fmaxf(m, score(d, q, kc, table, j, kvh, scale));
    for (int j = 0; j < n_keys; j++) {
        float p = expf(score(d, q, kc, table, j, kvh, scale) - m);
        const uint16_t *v = cache_at(d, vc, table, j, kvh);
        l += p;
        for (int i = 0; i < D; i++)
            acc[i] += p * sx_bf16_to_f32(v[i]);
    }
    for (int i = 0; i < D; i++)
        out[i] = sx_f32_to_bf16(acc[i] / l);
}

void sx_ref_attn(const sx_attn_dims *d, const float *q, const uint16_t *k_cache,
                 const uint16_t *v_cache, const int32_t *tables, const sx_attn_item *items,
                 int n_items, float scale, uint16_t *out)
{
    int D = d->head_dim, hq = d->n_heads, group = d->n_heads / d->n_kv_heads;
    for (int i = 0; i < n_items; i++) {
        const sx_attn_item *it = &items[i];
        const int32_t *table = tables + (size_t)it->seq * d->max_blocks;
        for (int j = 0; j < it->n_q; j++) {
            size_t r = (size_t)(it->q_row + j);
            int n_keys = it->n_ctx - it->n_q + j + 1;
            for (int h = 0; h < hq; h++) {
                uint16_t *o = out + (r * hq + h) * D;
                if (it->n_ctx == 0)
                    memset(o, 0, (size_t)D * sizeof *o);
                else
                    one_query(d, q + (r * hq + h) * D, k_cache, v_cache, table, n_keys,
                              h / group, scale, o);
            }
        }
    }
}
