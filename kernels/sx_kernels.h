/* sx_kernels: GPU kernels (kernels/ *.cu files) and their CPU references
 * (kernels/ *.c files).  Every GPU kernel has a reference here with the same
 * semantics, and tests/gpu compares the two (the llm.c habit).
 *
 * Launchers take a CUDA stream as `void *` so this header stays plain C;
 * they check launch errors and return 0 or an sx_code, printing file/line
 * of the failing CUDA call to stderr. */
#ifndef SX_KERNELS_H
#define SX_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Grammar bitmask: ceil(n_vocab/32) uint32 words per row, bit t of word
 * t/32 set = token t allowed.  Disallowed logits become -INFINITY. */
void sx_ref_apply_mask(float *logits, const uint32_t *mask, int n_rows, int n_vocab);

/* GPU: the same on device pointers, asynchronously on `stream`. */
int sx_cuda_apply_mask(float *d_logits, const uint32_t *d_mask, int n_rows, int n_vocab,
                       void *stream);

/* The masked sampler, one sequence per row (kernels/sampler.cu).  Its CPU
 * reference is sx_sampler_sample (engine/sampler/sampler.h), whose order of
 * operations and definitions it follows: mask (rows >= vocab_valid too),
 * repetition penalty over hist, no-repeat-n-gram, log-softmax, then for
 * temperature > 0 top-k, top-p, min-p and a draw keyed by (seed, draw)
 * through common/sx_sample_math.h; temperature 0 is argmax, ties to the
 * lowest id.  Per-row parameters, in device memory: */
typedef struct sx_cuda_sample_args {
    float    temperature;        /* 0 = greedy */
    float    top_p;              /* 1 = off */
    float    min_p;              /* 0 = off */
    float    repetition_penalty; /* 1 = off */
    int32_t  top_k;              /* 0 = off */
    int32_t  no_repeat_ngram;    /* 0 = off */
    int32_t  vocab_valid;        /* rows at or past it are never sampled; <= 0: all valid */
    int32_t  hist_len;           /* generated tokens at hist + hist_off */
    int64_t  hist_off;
    uint64_t seed;
    uint64_t draw;               /* RNG counter; the CPU sampler uses hist_len */
} sx_cuda_sample_args;

/* d_logits: n_rows x n_vocab, modified in place (scratch).  d_mask: NULL or
 * n_rows x ceil(n_vocab/32) words.  d_hist: NULL when every hist_len is 0.
 * Writes d_tokens[r] and d_logprobs[r] (the log-softmax after mask and
 * penalties); a row with every token masked gets token -1 and a NaN
 * log-prob (the CPU sampler fails with SX_EINTERNAL there).  Asynchronous
 * on `stream`; SX_EINVAL for bad sizes, SX_EINTERNAL for a CUDA error. */
int sx_cuda_sample(float *d_logits, const uint32_t *d_mask, const sx_cuda_sample_args *d_args,
                   const int32_t *d_hist, int n_rows, int n_vocab, int32_t *d_tokens,
                   float *d_logprobs, void *stream);

/* 1 if a CUDA device is usable, else 0 (and *why gets a reason). */
int sx_cuda_available(const char **why);


/* ---- the Qwen3 forward pass ------------------------------------------------
 * bf16 values are uint16_t bit patterns (common/sx_bf16.h).  Every sx_cuda_*
 * launcher works on device pointers, enqueues on `stream` (a cudaStream_t,
 * NULL = the legacy default stream) without synchronising, and returns
 * SX_EINVAL for impossible sizes or SX_EINTERNAL after printing the file and
 * line of a failed CUDA call.  Each has an sx_ref_* twin on host arrays with
 * the same meaning; the twins are the specification the kernels are tested
 * against (tests/gpu), and are themselves tested against double precision
 * (tests/unit/test_kernel_refs.c). */

/* Embedding gather: out[i][c] = table[tokens[i]][c] for c < hidden.  A token
 * outside [0, vocab) gives a zero row. */
void sx_ref_embed_f32(const uint16_t *table, int vocab, int hidden, const int32_t *tokens, int n,
                      float *out);
void sx_ref_embed_bf16(const uint16_t *table, int vocab, int hidden, const int32_t *tokens, int n,
                       uint16_t *out);
int  sx_cuda_embed_f32(const uint16_t *table, int vocab, int hidden, const int32_t *tokens, int n,
                       float *out, void *stream);
int  sx_cuda_embed_bf16(const uint16_t *table, int vocab, int hidden, const int32_t *tokens, int n,
                        uint16_t *out, void *stream);

/* RMSNorm fused with the residual add, row by row (n rows of dim):
 *   x = res[r] + delta[r]   (delta may be NULL: x = res[r])
 *   res[r] = x;  out[r] = bf16(x * w / sqrt(mean(x*x) + eps))   in f32. */
void sx_ref_add_rmsnorm(float *res, const float *delta, const float *w, float eps, int n, int dim,
                        uint16_t *out);
int  sx_cuda_add_rmsnorm(float *res, const float *delta, const float *w, float eps, int n, int dim,
                         uint16_t *out, void *stream);
/* The same norm for selected rows, nothing written back: out[i] is the norm
 * of x[rows[i]] + delta[rows[i]] (delta may be NULL).  For the final norm of
 * just the rows whose logits are wanted. */
void sx_ref_rmsnorm_rows(const float *x, const float *delta, const int32_t *rows, int n_out,
                         const float *w, float eps, int dim, uint16_t *out);
int  sx_cuda_rmsnorm_rows(const float *x, const float *delta, const int32_t *rows, int n_out,
                          const float *w, float eps, int dim, uint16_t *out, void *stream);

/* Rotary tables, as Hugging Face computes them in f32:
 *   inv[i] = 1 / theta^(2i/head_dim),  a = f32(p * inv[i]),
 *   cos_t[p*(head_dim/2) + i] = cos(a), sin_t[...] = sin(a),
 * for p < n_pos, i < head_dim/2.  Host only; the engine uploads them. */
void sx_rope_table(double theta, int head_dim, int n_pos, float *cos_t, float *sin_t);

/* Geometry of the paged KV cache and of attention.  A cache holds blocks of
 * block_tokens tokens; block b of a layer starts at element b*block_stride of
 * k_cache (and of v_cache) and is laid out [n_kv_heads][block_tokens]
 * [head_dim] bf16.  A token's slot is block*block_tokens + offset in block.
 * Block tables are int32 rows of max_blocks entries, one row per sequence. */
typedef struct sx_attn_dims {
    int     n_heads, n_kv_heads;           /* n_heads = group * n_kv_heads, group <= 8 */
    int     head_dim;                      /* 64, 128 or 256 */
    int     block_tokens;
    int     max_blocks;
    int64_t block_stride;                  /* >= n_kv_heads*block_tokens*head_dim, even
                                              (the kernels load bf16 pairs as words) */
} sx_attn_dims;

/* Per-head q/k RMSNorm fused with rotate-half RoPE and the KV-cache write.
 * qkv: n rows of [n_heads + 2*n_kv_heads][head_dim] f32 (q heads, k heads,
 * v heads).  Row t sits at position pos[t] (< the rope tables' n_pos):
 *   q_out[t][h] = rope(rmsnorm(q_h, q_norm), pos)          f32
 *   k_cache[slot[t]] = bf16(rope(rmsnorm(k_h, k_norm), pos))
 *   v_cache[slot[t]] = bf16(v_h)
 * rope(x)[i] = x[i]*cos - x[i+D/2]*sin, rope(x)[i+D/2] = x[i+D/2]*cos + x[i]*sin
 * (i < D/2).  slot[t] < 0 skips the cache write for that row. */
void sx_ref_qk_rope_kv(const sx_attn_dims *d, const float *qkv, int n, const int32_t *pos,
                       const int32_t *slot, const float *q_norm, const float *k_norm, float eps,
                       const float *rope_cos, const float *rope_sin, float *q_out,
                       uint16_t *k_cache, uint16_t *v_cache);
int  sx_cuda_qk_rope_kv(const sx_attn_dims *d, const float *qkv, int n, const int32_t *pos,
                        const int32_t *slot, const float *q_norm, const float *k_norm, float eps,
                        const float *rope_cos, const float *rope_sin, float *q_out,
                        uint16_t *k_cache, uint16_t *v_cache, void *stream);

/* One sequence's share of an attention call: its n_q queries are rows
 * q_row .. q_row+n_q-1 of q and sit at positions n_ctx-n_q .. n_ctx-1 of
 * sequence `seq` (its block-table row); keys/values 0..n_ctx-1 are in the
 * cache.  n_ctx == 0 marks padding: its rows of out become zeros. */
typedef struct sx_attn_item {
    int32_t q_row, n_q, n_ctx, seq;
} sx_attn_item;

/* Causal attention over the paged cache (GQA: query head h reads kv head
 * h / (n_heads/n_kv_heads)).  q: [rows][n_heads][head_dim] f32; out:
 * [rows][n_heads*head_dim] bf16, only the items' rows written:
 *   out[r][h] = softmax_j(scale * q[r][h] . k_j) . v_j   over keys j <= position of r. */
void sx_ref_attn(const sx_attn_dims *d, const float *q, const uint16_t *k_cache,
                 const uint16_t *v_cache, const int32_t *tables, const sx_attn_item *items,
                 int n_items, float scale, uint16_t *out);
/* Prefill: tiled, flash-attention style (online softmax, K/V tiles in shared
 * memory).  max_q >= every item's n_q (it sizes the grid). */
int  sx_cuda_attn_prefill(const sx_attn_dims *d, const float *q, const uint16_t *k_cache,
                          const uint16_t *v_cache, const int32_t *tables,
                          const sx_attn_item *items, int n_items, int max_q, float scale,
                          uint16_t *out, void *stream);
/* Decode: every item has n_q == 1 (or 0: skipped).  The keys of each
 * (item, kv head) are split into n_splits parts (1..SX_ATTN_MAX_SPLITS) that
 * run in parallel, then reduced; work holds the partial results
 * (sx_attn_decode_work_bytes).  The grid depends on n_items and n_splits
 * only, never on the lengths, so a CUDA graph can replay it. */
#define SX_ATTN_MAX_SPLITS 64
size_t sx_attn_decode_work_bytes(const sx_attn_dims *d, int n_items, int n_splits);
int  sx_cuda_attn_decode(const sx_attn_dims *d, const float *q, const uint16_t *k_cache,
                         const uint16_t *v_cache, const int32_t *tables,
                         const sx_attn_item *items, int n_items, int n_splits, float *work,
                         float scale, uint16_t *out, void *stream);

/* SwiGLU: gate_up holds n rows of [gate (inter) | up (inter)] f32;
 * out[t][j] = bf16(silu(gate[j]) * up[j]), silu(g) = g / (1 + e^-g). */
void sx_ref_swiglu(const float *gate_up, int n, int inter, uint16_t *out);
int  sx_cuda_swiglu(const float *gate_up, int n, int inter, uint16_t *out, void *stream);

/* GEMM in the nn.Linear layout: y[m][n] = x[m][k] . w[n][k]^T, bf16 inputs,
 * f32 accumulation and output.  The GPU version runs on cuBLAS; `blas` is a
 * handle from sx_cuda_blas_new (wrapping a cublasHandle_t), moved to `stream`
 * when that differs from its previous call's. */
void sx_ref_gemm(const uint16_t *x, const uint16_t *w, int m, int n, int k, float *y);
int  sx_cuda_gemm(void *blas, const uint16_t *x, const uint16_t *w, int m, int n, int k,
                  float *y, void *stream);
/* A cuBLAS handle using `workspace` (device memory, >= 256-byte aligned;
 * NULL = cuBLAS's own) so that calls can be captured in CUDA graphs.  The
 * caller frees it with sx_cuda_blas_free. */
int  sx_cuda_blas_new(void *workspace, size_t workspace_bytes, void **blas);
void sx_cuda_blas_free(void *blas);

#ifdef __cplusplus
}
#endif

#endif
