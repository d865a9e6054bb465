// Decode attention over the paged KV cache: one query per item.
//
// Pass 1: a block per (kv head, item, split) walks its share of the keys.
// Its 4 warps take keys in turn; lane l holds dims [l*EPL, l*EPL+EPL) of the
// query, key and value, so a key's score is one warp reduction, and every
// query head of the GQA group reuses the key/value just loaded.  Each warp
// keeps an online softmax (max, sum, weighted values), the warps are merged
// in shared memory and the split's (max, sum, acc[D]) goes to `work`.
// Pass 2: a block per (query head, item) merges the splits.
//
// How a split's range is cut depends on the item's length, read on the GPU,
// so the grid depends only on (items, splits): a CUDA graph replays it.
#include <math.h>

#include "kernels/sx_cuda_util.cuh"
#include "kernels/sx_kernels.h"

#define DEC_WARPS 4
#define DEC_MAXG 8

template <int EPL>
__global__ static void attn_decode_split(sx_attn_dims d, const float *q, const uint16_t *kc,
                                         const uint16_t *vc, const int32_t *tables,
                                         const sx_attn_item *items, int n_splits, float scale,
                                         float *work)
{
    const int D = EPL * 32;
    __shared__ float sm_m[DEC_WARPS][DEC_MAXG], sm_l[DEC_WARPS][DEC_MAXG];
    __shared__ float sm_acc[DEC_WARPS][DEC_MAXG][D];
    int kvh = blockIdx.x, sp = blockIdx.z;
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    sx_attn_item it = items[blockIdx.y];
    int G = d.n_heads / d.n_kv_heads, bt = d.block_tokens;
    if (it.n_q <= 0)
        return;
    int part = (it.n_ctx + n_splits - 1) / n_splits;
    part = (part + bt - 1) / bt * bt;
    int k0 = sp * part, k1 = min(it.n_ctx, k0 + part);
    size_t row = (size_t)(d.n_heads * n_splits) * (D + 2);
    float *wbase = work + blockIdx.y * row + ((size_t)kvh * G * n_splits + sp) * (D + 2);
    if (k0 >= k1) {
        if ((int)threadIdx.x < G) {
            wbase[(size_t)threadIdx.x * n_splits * (D + 2)] = -INFINITY;
            wbase[(size_t)threadIdx.x * n_splits * (D + 2) + 1] = 0.0f;
        }
        return;
    }
    float qr[DEC_MAXG][EPL], m[DEC_MAXG], l[DEC_MAXG], acc[DEC_MAXG][EPL];
#pragma unroll
    for (int g = 0; g < DEC_MAXG; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < EPL; e++) {
            acc[g][e] = 0.0f;
            qr[g][e] = g < G ? q[((size_t)it.q_row * d.n_heads + kvh * G + g) * D + lane * EPL + e] *
                                   scale
                             : 0.0f;
        }
    }
    const int32_t *table = tables + (size_t)it.seq * d.max_blocks;
    for (int p = k0 + wid; p < k1; p += DEC_WARPS) {
        int64_t at = (int64_t)table[p / bt] * d.block_stride +
                     ((int64_t)kvh * bt + p % bt) * D + lane * EPL;
        float kf[EPL], vf[EPL];
        sx_load_bf16<EPL>(kc + at, kf);
        sx_load_bf16<EPL>(vc + at, vf);
#pragma unroll
        for (int g = 0; g < DEC_MAXG; g++) {
            if (g >= G)
                break; // G is the same for the whole block: the shuffles stay converged
            float s = 0.0f;
#pragma unroll
            for (int e = 0; e < EPL; e++)
                s += qr[g][e] * kf[e];
            s = sx_warp_sum(s);
            float mn = fmaxf(m[g], s);
            float corr = expf(m[g] - mn), pw = expf(s - mn);
            l[g] = l[g] * corr + pw;
#pragma unroll
            for (int e = 0; e < EPL; e++)
                acc[g][e] = acc[g][e] * corr + pw * vf[e];
            m[g] = mn;
        }
    }
#pragma unroll
    for (int g = 0; g < DEC_MAXG; g++) {
        if (g >= G)
            break;
        if (lane == 0) {
            sm_m[wid][g] = m[g];
            sm_l[wid][g] = l[g];
        }
#pragma unroll
        for (int e = 0; e < EPL; e++)
            sm_acc[wid][g][lane * EPL + e] = acc[g][e];
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < G * D; idx += blockDim.x) {
        int g = idx / D, dd = idx % D;
        float mx = -INFINITY, sl = 0.0f, sa = 0.0f;
        for (int w = 0; w < DEC_WARPS; w++)
            mx = fmaxf(mx, sm_m[w][g]);
        for (int w = 0; w < DEC_WARPS; w++) {
            if (sm_m[w][g] == -INFINITY)
                continue; // a warp that saw no key
            float f = expf(sm_m[w][g] - mx);
            sl += f * sm_l[w][g];
            sa += f * sm_acc[w][g][dd];
        }
        float *o = wbase + (size_t)g * n_splits * (D + 2);
        o[2 + dd] = sa;
        if (dd == 0) {
            o[0] = mx;
            o[1] = sl;
        }
    }
}

__global__ static void attn_decode_reduce(sx_attn_dims d, const sx_attn_item *items, int n_splits,
                                          const float *work, uint16_t *out)
{
    int h = blockIdx.x, D = d.head_dim, dd = threadIdx.x;
    sx_attn_item it = items[blockIdx.y];
    if (it.n_q <= 0)
        return;
    uint16_t *o = out + ((size_t)it.q_row * d.n_heads + h) * D;
    if (it.n_ctx <= 0) {
        o[dd] = 0;
        return;
    }
    const float *w = work + ((size_t)blockIdx.y * d.n_heads + h) * n_splits * (D + 2);
    float mx = -INFINITY, sl = 0.0f, sa = 0.0f;
    for (int s = 0; s < n_splits; s++)
        mx = fmaxf(mx, w[(size_t)s * (D + 2)]);
    for (int s = 0; s < n_splits; s++) {
        const float *ws = w + (size_t)s * (D + 2);
        if (ws[0] == -INFINITY)
            continue; // an empty split: its acc was never written
        float f = expf(ws[0] - mx);
        sl += f * ws[1];
        sa += f * ws[2 + dd];
    }
    o[dd] = sx_f32_to_bf16(sa / sl);
}

extern "C" size_t sx_attn_decode_work_bytes(const sx_attn_dims *d, int n_items, int n_splits)
{
    return (size_t)n_items * d->n_heads * n_splits * (d->head_dim + 2) * sizeof(float);
}

extern "C" int sx_cuda_attn_decode(const sx_attn_dims *d, const float *q, const uint16_t *k_cache,
                                   const uint16_t *v_cache, const int32_t *tables,
                                   const sx_attn_item *items, int n_items, int n_splits,
                                   float *work, float scale, uint16_t *out, void *stream)
{
    if (n_items < 0 || n_items > 65535 || n_splits < 1 || n_splits > SX_ATTN_MAX_SPLITS ||
        d->n_kv_heads <= 0 || d->n_heads % d->n_kv_heads || d->n_heads / d->n_kv_heads > DEC_MAXG ||
        d->block_tokens <= 0)
        return SX_EINVAL;
    if (n_items == 0)
        return SX_OK;
    dim3 grid1((unsigned)d->n_kv_heads, (unsigned)n_items, (unsigned)n_splits);
    switch (d->head_dim) {
    case 64:
        SX_LAUNCH(attn_decode_split<2>, grid1, 32 * DEC_WARPS, 0, stream, *d, q, k_cache, v_cache,
                  tables, items, n_splits, scale, work);
        break;
    case 128:
        SX_LAUNCH(attn_decode_split<4>, grid1, 32 * DEC_WARPS, 0, stream, *d, q, k_cache, v_cache,
                  tables, items, n_splits, scale, work);
        break;
    case 256:
        SX_LAUNCH(attn_decode_split<8>, grid1, 32 * DEC_WARPS, 0, stream, *d, q, k_cache, v_cache,
                  tables, items, n_splits, scale, work);
        break;
    default:
        return SX_EINVAL;
    }
    SX_LAUNCH_CHECK();
    dim3 grid2((unsigned)d->n_heads, (unsigned)n_items);
    SX_LAUNCH(attn_decode_reduce, grid2, d->head_dim, 0, stream, *d, items, n_splits, work, out);
    SX_LAUNCH_CHECK();
    return SX_OK;
}
