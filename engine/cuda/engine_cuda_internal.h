/* sx_cuda_engine internals shared by engine_cuda.cu (set-up, sequences),
 * engine_cuda_step.cu (the forward pass, graphs) and engine_cuda_sample.cu.
 * C++ (nvcc) only. */
#ifndef SX_ENGINE_CUDA_INTERNAL_H
#define SX_ENGINE_CUDA_INTERNAL_H

/* the C headers first, with C linkage (they carry no extern "C" of their own) */
extern "C" {
#include "common/sx_error.h"
#include "engine/backend.h"
#include "engine/model/model.h"
#include "engine/sampler/sampler.h"
#include "engine/kv_pages.h"
}

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"
#include "engine/cuda/engine_cuda.h"
#include "kernels/sx_kernels.h"

/* Buckets of the decode graphs: 1, 2, 4, ..., 256 sequences. */
#define SX_CUDA_N_BUCKETS 9

/* Device weights of one layer; q/k/v and gate/up are fused row-wise. */
typedef struct cu_layer {
    uint16_t *wqkv;  /* [(n_heads + 2 n_kv_heads) head_dim][hidden] */
    uint16_t *wo;    /* [hidden][n_heads head_dim] */
    uint16_t *wgu;   /* [2 intermediate][hidden]: gate rows, then up rows */
    uint16_t *wdown; /* [hidden][intermediate] */
    float    *attn_norm, *mlp_norm, *q_norm, *k_norm;
} cu_layer;

/* Offsets (in int32) of the per-pass metadata, the same in the pinned host
 * copy and the device copy, so that graphs see fixed addresses. */
enum { META_TOK, META_POS, META_SLOT, META_LG, META_PF, META_DC, META_N };

/* One forward pass whose metadata is on the device. */
typedef struct cu_pass {
    int T;      /* token rows */
    int R;      /* logits rows (indices at META_LG) */
    int n_pf;   /* prefill attention items (META_PF), n_q > 1 */
    int n_dc;   /* decode attention items (META_DC), n_q == 1 */
    int max_q;  /* largest n_q among the prefill items */
    int splits; /* decode key splits */
} cu_pass;

struct sx_cuda_engine {
    const sx_model  *m;
    sx_qwen3_config  cfg;
    sx_cuda_info     info;
    cudaStream_t     st;
    void            *blas;
    void            *blas_ws;

    /* weights */
    uint16_t *embed, *lm_head;
    float    *final_norm;
    cu_layer *layers;
    float    *rope_cos, *rope_sin; /* [max_pos][head_dim/2] */

    /* paged KV cache: block b, layer l: K at kv + b*block_stride + 2l*blk,
     * V one blk further (blk = n_kv_heads * block_tokens * head_dim) */
    uint16_t    *kv;
    int64_t      blk, block_stride;
    sx_kvp      *kvp;
    int32_t     *d_tables;   /* [max_seqs][max_blocks] */
    int          max_blocks;
    int          tables_pinned;
    sx_attn_dims dims;
    float        scale;

    /* activations, for cap_t rows */
    int       cap_t, cap_l;  /* rows per pass; logits rows on the device */
    float    *x, *delta, *qkv, *q, *gu, *work, *logits;
    uint16_t *xin;           /* bf16 GEMM input, widest of hidden, q dim, intermediate */
    int       max_dec;       /* decode items a pass can hold */

    /* per-pass metadata */
    int32_t *h_meta, *d_meta;
    size_t   meta_off[META_N];

    /* sampling */
    uint32_t            *h_mask, *d_mask;
    int                  mask_words;
    sx_cuda_sample_args *h_args, *d_args;
    int32_t             *h_hist, *d_hist;
    size_t               hist_cap;
    int32_t             *h_tok, *d_tok;
    float               *h_lp, *d_lp;

    /* decode graphs by bucket */
    cudaGraphExec_t graphs[SX_CUDA_N_BUCKETS];
    int             graphs_on;
    int             max_bucket;

    /* step state */
    int       pending;    /* a launched step awaits logits or sample */
    int       pending_r;  /* its logits rows, at the start of `logits` */
    int       broken;     /* a CUDA call failed mid-step: the cache is unknown */
    uint32_t *seen, stamp;
};

/* Decode key splits for n items: enough blocks to cover the SMs twice. */
int sx_cu_splits(const sx_cuda_engine *e, int n_items);

/* Waits for a pending step's GPU work (sequence calls need its tables). */
int sx_cu_quiesce(sx_cuda_engine *e, sx_error *err);

#endif
