// Prefill attention over the paged KV cache, flash-attention style.
//
// A block takes 32 queries of one item and one query head, and walks the
// keys in tiles of 32 up to its last query's position: K and V tiles are
// staged in shared memory as f32, scores never leave registers/shared memory,
// and an online softmax (running max, running sum, rescaled accumulator)
// replaces the full score matrix.  Thread t owns query row t/4 and, of each
// tile, the keys t%4 + 4j (scores) and the dims t%4 + 4e (output), so a
// row's statistics are a 4-lane shuffle.  Rows are padded by one float to
// keep shared-memory banks apart.
#include <math.h>

#include "kernels/sx_cuda_util.cuh"
#include "kernels/sx_kernels.h"

#define PF_BQ 32
#define PF_BK 32
#define PF_THREADS 128

static size_t prefill_smem(int D)
{
    return sizeof(float) *
           ((size_t)PF_BQ * (D + 1) + (size_t)PF_BK * (D + 1) + (size_t)PF_BK * D +
            (size_t)PF_BQ * (PF_BK + 1));
}

template <int D>
__global__ static void attn_prefill_kernel(sx_attn_dims d, const float *q, const uint16_t *kc,
                                           const uint16_t *vc, const int32_t *tables,
                                           const sx_attn_item *items, float scale, uint16_t *out)
{
    SX_DYN_SMEM(float, sm);
    float *qs = sm, *ks = qs + PF_BQ * (D + 1), *vs = ks + PF_BK * (D + 1), *ps = vs + PF_BK * D;
    const int EPT = D / 4;
    int h = blockIdx.y, t = threadIdx.x, r = t >> 2, cq = t & 3;
    sx_attn_item it = items[blockIdx.z];
    int q0 = blockIdx.x * PF_BQ;
    if (q0 >= it.n_q)
        return;
    int nvalid = min(PF_BQ, it.n_q - q0);
    if (it.n_ctx <= 0) { // padding: zero rows
        for (int idx = t; idx < nvalid * D; idx += PF_THREADS)
            out[((size_t)(it.q_row + q0 + idx / D) * d.n_heads + h) * D + idx % D] = 0;
        return;
    }
    int start = it.n_ctx - it.n_q, bt = d.block_tokens;
    int kvh = h / (d.n_heads / d.n_kv_heads);
    int qpos = start + q0 + r;
    int kend = start + q0 + nvalid; // keys [0, kend) are needed by this tile
    const int32_t *table = tables + (size_t)it.seq * d.max_blocks;

    for (int idx = t; idx < PF_BQ * D; idx += PF_THREADS) {
        int rr = idx / D, dd = idx % D;
        qs[rr * (D + 1) + dd] =
            rr < nvalid ? q[((size_t)(it.q_row + q0 + rr) * d.n_heads + h) * D + dd] * scale : 0.0f;
    }
    float m = -INFINITY, l = 0.0f, acc[EPT];
#pragma unroll
    for (int e = 0; e < EPT; e++)
        acc[e] = 0.0f;

    for (int k0 = 0; k0 < kend; k0 += PF_BK) {
        __syncthreads(); // the previous tile's K/V are no longer read
        for (int idx = t; idx < PF_BK * D; idx += PF_THREADS) {
            int kk = idx / D, dd = idx % D, p = k0 + kk;
            float kv = 0.0f, vv = 0.0f;
            if (p < kend) {
                int64_t at = (int64_t)table[p / bt] * d.block_stride +
                             ((int64_t)kvh * bt + p % bt) * D + dd;
                kv = sx_bf16_to_f32(kc[at]);
                vv = sx_bf16_to_f32(vc[at]);
            }
            ks[kk * (D + 1) + dd] = kv;
            vs[kk * D + dd] = vv;
        }
        __syncthreads();
        float s[PF_BK / 4], mt = -INFINITY;
#pragma unroll
        for (int j = 0; j < PF_BK / 4; j++) {
            int c = cq + 4 * j;
            float a = 0.0f;
#pragma unroll 8
            for (int dd = 0; dd < D; dd++)
                a += qs[r * (D + 1) + dd] * ks[c * (D + 1) + dd];
            s[j] = (r < nvalid && k0 + c <= qpos) ? a : -INFINITY;
            mt = fmaxf(mt, s[j]);
        }
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
        float mn = fmaxf(m, mt);
        float corr = mn == -INFINITY ? 1.0f : expf(m - mn);
        float ls = 0.0f;
#pragma unroll
        for (int j = 0; j < PF_BK / 4; j++) {
            float p = s[j] == -INFINITY ? 0.0f : expf(s[j] - mn);
            ps[r * (PF_BK + 1) + cq + 4 * j] = p;
            ls += p;
        }
        ls += __shfl_xor_sync(0xffffffffu, ls, 1);
        ls += __shfl_xor_sync(0xffffffffu, ls, 2);
        l = l * corr + ls;
        m = mn;
        __syncwarp(); // row r's weights come from the 4 lanes of this warp
#pragma unroll
        for (int e = 0; e < EPT; e++) {
            int dd = cq + 4 * e;
            float a = acc[e] * corr;
            for (int c = 0; c < PF_BK; c++)
                a += ps[r * (PF_BK + 1) + c] * vs[c * D + dd];
            acc[e] = a;
        }
        __syncwarp(); // all lanes have read ps before the next tile rewrites it
    }
    if (r < nvalid) {
        uint16_t *o = out + ((size_t)(it.q_row + q0 + r) * d.n_heads + h) * D;
#pragma unroll
        for (int e = 0; e < EPT; e++)
            o[cq + 4 * e] = sx_f32_to_bf16(acc[e] / l);
    }
}

template <int D>
static int prefill_launch(const sx_attn_dims *d, const float *q, const uint16_t *kc,
                          const uint16_t *vc, const int32_t *tables, const sx_attn_item *items,
                          int n_items, int max_q, float scale, uint16_t *out, void *stream)
{
    size_t smem = prefill_smem(D);
    // above 48 KiB a kernel must opt in; the attribute is per function, idempotent
    SX_CUDA_TRY(cudaFuncSetAttribute(attn_prefill_kernel<D>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid((unsigned)((max_q + PF_BQ - 1) / PF_BQ), (unsigned)d->n_heads, (unsigned)n_items);
    SX_LAUNCH(attn_prefill_kernel<D>, grid, PF_THREADS, smem, stream, *d, q, kc, vc, tables, items,
              scale, out);
    SX_LAUNCH_CHECK();
    return SX_OK;
}

extern "C" int sx_cuda_attn_prefill(const sx_attn_dims *d, const float *q, const uint16_t *k_cache,
                                    const uint16_t *v_cache, const int32_t *tables,
                                    const sx_attn_item *items, int n_items, int max_q, float scale,
                                    uint16_t *out, void *stream)
{
    if (n_items < 0 || n_items > 65535 || max_q < 0 || d->n_kv_heads <= 0 ||
        d->n_heads % d->n_kv_heads || d->n_heads > 65535 || d->block_tokens <= 0)
        return SX_EINVAL;
    if (n_items == 0 || max_q == 0)
        return SX_OK;
    switch (d->head_dim) {
    case 64:
        return prefill_launch<64>(d, q, k_cache, v_cache, tables, items, n_items, max_q, scale, out,
                                  stream);
    case 128:
        return prefill_launch<128>(d, q, k_cache, v_cache, tables, items, n_items, max_q, scale,
                                   out, stream);
    case 256:
        return prefill_launch<256>(d, q, k_cache, v_cache, tables, items, n_items, max_q, scale,
                                   out, stream);
    default:
        return SX_EINVAL;
    }
}
