/* sx_cuda_engine: the Qwen3 forward pass on one NVIDIA GPU, with the
 * operations and contracts of the CPU engine (engine/cpu/engine.h) so that a
 * backend table can put either behind `--device cpu|cuda`.
 *
 * Numerics: weights bf16 as loaded; the residual stream, norms, softmax and
 * every GEMM accumulation in f32; GEMM inputs (normed activations, attention
 * output, SwiGLU output) and the KV cache in bf16.  Logits therefore differ
 * from the CPU engine's (f32 activations and cache) by a small tolerance.
 *
 * Memory: the weights are uploaded once (q/k/v and gate/up fused into one
 * matrix each).  The KV cache is paged (block tables, copy-on-write on fork)
 * and takes opts->kv_tokens tokens, or, when that is 0, 90% of the device
 * memory left after weights and scratch; sx_cuda_engine_info reports it.
 * A step of many tokens runs as passes of at most SX_CUDA_PASS_TOKENS rows.
 * Decode-only steps of up to 256 sequences run as CUDA graphs captured once
 * per bucket (1, 2, 4, ..., 256 sequences, padded up).
 *
 * Ownership: the engine borrows the model (it must outlive the engine, and
 * may be freed after sx_cuda_engine_new if nothing else needs it: the
 * weights live on the device).  It owns its device memory, stream, cuBLAS
 * handle, graphs and pinned host buffers.  One thread drives an engine. */
#ifndef SX_ENGINE_CUDA_H
#define SX_ENGINE_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common/sx_error.h"
#include "engine/backend.h"
#include "engine/model/model.h"
#include "engine/sampler/sampler.h"

#define SX_CUDA_PASS_TOKENS 4096
#define SX_CUDA_MAX_GRAPH_BATCH 256

typedef struct sx_cuda_engine sx_cuda_engine;

/* opts as for sx_engine_new, except: n_threads is ignored; kv_tokens 0 =
 * fill the device (see above); weight_mode must be SX_W_BF16 (int8 is
 * SX_EUNSUPPORTED).  No usable GPU (cudaGetDeviceCount fails or finds none):
 * SX_EUNSUPPORTED "no CUDA device: ...". */
int  sx_cuda_engine_new(const sx_model *m, const sx_engine_opts *opts, sx_cuda_engine **out,
                        sx_error *err);
void sx_cuda_engine_free(sx_cuda_engine *e);

/* As sx_engine_seq_* / sx_engine_free_tokens. */
int     sx_cuda_engine_seq_new(sx_cuda_engine *e, int *seq, sx_error *err);
int     sx_cuda_engine_seq_fork(sx_cuda_engine *e, int src, int len, int *seq, sx_error *err);
int     sx_cuda_engine_seq_truncate(sx_cuda_engine *e, int seq, int len, sx_error *err);
void    sx_cuda_engine_seq_free(sx_cuda_engine *e, int seq);
int     sx_cuda_engine_seq_len(const sx_cuda_engine *e, int seq);
int64_t sx_cuda_engine_free_tokens(const sx_cuda_engine *e);
const sx_model *sx_cuda_engine_model(const sx_cuda_engine *e);

/* As sx_engine_step: appends the items' tokens and writes f32 logits rows
 * (vocab_rows each) to host memory, in item order, one per item or n with
 * logits_all.  Synchronous.  SX_ELIMIT (nothing appended) when the cache is
 * full; SX_EINVAL for a dead or repeated sequence, a bad token or n <= 0;
 * SX_EUNSUPPORTED for an item with `allow` (masks go through
 * sx_cuda_engine_mask_buffer below). */
int sx_cuda_engine_step(sx_cuda_engine *e, const sx_step_item *items, int n_items, float *logits,
                        sx_error *err);

/* The same step split in two so that the CPU can build grammar masks while
 * the GPU runs: launch validates, reserves and enqueues the forward pass and
 * returns at once (logits stay on the device); then exactly one of
 *   sx_cuda_engine_logits   copies the logits to the host (= the rest of step)
 *   sx_cuda_engine_sample   samples one token per logits row on the GPU
 * completes it.  Sequence calls made in between wait for the GPU first.
 * sample needs one logits row per item (no logits_all) and at most 256
 * rows. */
int sx_cuda_engine_launch(sx_cuda_engine *e, const sx_step_item *items, int n_items,
                          sx_error *err);
int sx_cuda_engine_logits(sx_cuda_engine *e, float *logits, sx_error *err);

/* sx_cuda_engine_logits with the grammar applied on the device first: masks
 * holds one row of ceil(vocab_rows/32) words per logits row of the pending
 * step (bit t set = token t allowed; a row of all ones leaves its logits
 * as they are), best the buffer of sx_cuda_engine_mask_buffer (pinned, no
 * copy).  The other tokens' logits come back as -INFINITY. */
int sx_cuda_engine_logits_masked(sx_cuda_engine *e, const uint32_t *masks, float *logits,
                                 sx_error *err);

/* The engine's CUDA stream (a cudaStream_t), for events around its work. */
void *sx_cuda_engine_stream(sx_cuda_engine *e);

/* Pinned host memory for the masks of the pending step's rows: n_rows x
 * ceil(vocab_rows/32) uint32 words (bit t set = token t allowed), valid
 * until the next launch.  NULL when n_rows is out of range. */
uint32_t *sx_cuda_engine_mask_buffer(sx_cuda_engine *e, int n_rows);

/* One row's sampling: the params of engine/sampler/sampler.h (top_n is not
 * supported on the GPU and must be 0), the tokens generated so far (for the
 * penalties) and the RNG draw index (the CPU sampler uses the number of
 * tokens accepted so far, i.e. hist_len). */
typedef struct sx_cuda_sample_row {
    sx_sampling    params;
    const int32_t *hist;
    int            hist_len;
    uint64_t       draw;
} sx_cuda_sample_row;

/* Samples the pending step's logits rows: masks is NULL (unconstrained) or
 * the buffer from sx_cuda_engine_mask_buffer, copied to the GPU
 * asynchronously just before the sampler kernel runs.  vocab_valid: ids at
 * or past it are never sampled (the tokenizer's size; <= 0 = all rows).
 * Writes tokens[r] and logprobs[r] (may be NULL).  A row whose every token is
 * masked is SX_EINTERNAL, as in the CPU sampler. */
int sx_cuda_engine_sample(sx_cuda_engine *e, const sx_cuda_sample_row *rows, int n_rows,
                          const uint32_t *masks, int vocab_valid, int32_t *tokens,
                          float *logprobs, sx_error *err);

/* sx_cuda_engine_sample for a step some of whose rows are wanted as
 * logits (keep NULL: none, the call above): the rows r with keep[r] set
 * are copied to logits + r * vocab_rows on the host, masked as by
 * sx_cuda_engine_logits_masked when masks is given, before the sampler
 * runs; rows[r], tokens[r] and logprobs[r] of those rows are neither read
 * nor written.  A sampled row whose every token is masked gets token -1
 * (the call still succeeds: the caller says which row failed). */
int sx_cuda_engine_sample_keep(sx_cuda_engine *e, const sx_cuda_sample_row *rows, int n_rows,
                               const uint32_t *masks, int vocab_valid, const uint8_t *keep,
                               float *logits, int32_t *tokens, float *logprobs, sx_error *err);

typedef struct sx_cuda_info {
    char    device[256];
    int     sm_count;
    int64_t weight_bytes, kv_bytes, scratch_bytes;
    int64_t kv_tokens;        /* capacity of the cache */
    int     block_tokens, max_seqs;
    int     max_len;          /* longest sequence: min(max_pos, what the tables hold) */
    int     graphs;           /* CUDA graphs on for decode */
    int64_t graph_steps;      /* decode steps replayed from a graph so far */
} sx_cuda_info;

void sx_cuda_engine_info(const sx_cuda_engine *e, sx_cuda_info *out);

/* Turns decode graphs off (0) or on (1, the default); for tests and
 * benchmarks that compare both paths. */
void sx_cuda_engine_set_graphs(sx_cuda_engine *e, int on);

#ifdef __cplusplus
}
#endif

#endif
