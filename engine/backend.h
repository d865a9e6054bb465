/* sx_backend: the engine interface.  Generation (engine/gen*.c), beams,
 * speculative decoding, label scores, perplexity and the server reach a
 * forward pass only through this table of operations over an opaque
 * backend, so `--device cpu|cuda[:N]` picks the machine and nothing above
 * changes.  Backends: engine/cpu/ (sx_engine, sx_engine_backend) and
 * engine/cuda/ (the CUDA engine, in builds that link libstrux_cuda.a).
 *
 * The contract every backend keeps is the CPU engine's: a sequence is a slot
 * in a paged KV cache; a step appends tokens to any subset of live sequences
 * (prompt chunks and decode rows together) and writes f32 logits rows, with
 * an optional grammar bitmask per row; sequences are made, forked (sharing
 * full blocks, copy-on-write), truncated and freed between steps.
 *
 * Ownership: sx_backend_open makes a backend that owns its engine;
 * a wrapper such as sx_engine_backend borrows one.  sx_backend_close frees
 * the backend (and the engine when it owns it).  The model is borrowed and
 * must outlive the backend.  One thread drives a backend at a time. */
#ifndef SX_BACKEND_H
#define SX_BACKEND_H

#include <stdint.h>
#include "common/sx_error.h"
#include "engine/model/model.h"
#include "engine/sampler/sampler.h"

/* An AWQ checkpoint's layer matrices (sx_layer_weights.q4) are 4-bit in
 * every mode: they go into the q4 panels unchanged plus a per-group zero
 * correction, and the mode then decides the lm_head alone. */
typedef enum sx_weight_mode {
    SX_W_BF16 = 0, /* use the bf16 weights as loaded */
    SX_W_INT8 = 1, /* quantise matrices to int8 (per-row scale) at start-up */
    SX_W_Q4   = 2  /* quantise matrices to 4 bits (a scale per row and 32 k)
                    * at start-up: ~0.28 of bf16's bytes, so decode ~1.7x
                    * int8 where memory sets its pace; the activations of
                    * its products are rounded to int8 per 32 k */
} sx_weight_mode;

/* Precision of the activations in matrix products.  F32 (the default) is
 * held to the reference within f32 rounding.  BF16 rounds them to bf16 in
 * products of 12 or more tokens (prefill, large batches), and rounds q, k,
 * v and the probabilities in prefill attention, as bf16 frameworks do, for
 * about twice the prefill speed on CPUs with AVX512-BF16 and no AMX;
 * logits move by ~1e-2 (docs/BENCHMARKS.md has the perplexity change).  AMX CPUs keep their f32-accurate tile products,
 * which are faster still; other CPUs answer SX_EUNSUPPORTED. */
typedef enum sx_act_mode {
    SX_ACT_F32  = 0,
    SX_ACT_BF16 = 1
} sx_act_mode;

/* Element type of the KV cache.  F32 (the default) keeps keys and values
 * as computed.  BF16 rounds them to bf16 as they are stored (what a bf16
 * framework's cache holds): half the memory for the same kv_tokens, and
 * half the bytes decode reads per token of context; logits move by about
 * 1e-3 of their scale (docs/BENCHMARKS.md). */
typedef enum sx_kv_mode {
    SX_KV_F32  = 0,
    SX_KV_BF16 = 1
} sx_kv_mode;

typedef struct sx_engine_opts {
    int     n_threads;       /* 0 = number of online CPUs */
    int     max_seqs;        /* live sequences at once (default 64) */
    int64_t kv_tokens;       /* KV-cache capacity in tokens over all sequences (default 65536) */
    int     block_tokens;    /* tokens per KV block (default 16) */
    int     weight_mode;     /* sx_weight_mode */
    int     act_mode;        /* sx_act_mode (bf16 weights only; int8 and q4 ignore it) */
    int     kv_mode;         /* sx_kv_mode */
    int     dense_logits;    /* 1: compute every logit even for masked rows
                              * (same results, slower; for A/B benchmarks) */
    int     batch_variant;   /* 0 (default): batch-invariant -- a sequence's
                              * logits are bitwise the same whatever shares
                              * its step, how its prompt is split into
                              * chunks and the thread count, so a request
                              * retried on a replica with the same build and
                              * model gets the same answer.  1: kernels may
                              * be chosen by batch shape (prefill attention
                              * with queries in vector lanes, AMX bf16 tiles
                              * only from 8 tokens), faster prefill, results
                              * move by f32 rounding with the batch.  The
                              * environment's STRUX_BATCH_INVARIANT=0 sets
                              * it too.  SX_ACT_BF16 is never invariant. */
    int     device;          /* the GPU's ordinal for a CUDA backend (cuda:N);
                              * the CPU engine ignores it */
} sx_engine_opts;

/* One batched step.  items[i].tokens[0..n) are appended to sequence
 * items[i].seq at positions seq_len .. seq_len+n-1.  Logits (f32, vocab_rows
 * per row) are written to `logits` in item order: one row (the last token)
 * per item, or n rows when logits_all is set.  SX_ELIMIT when the cache is
 * full (nothing is appended then).
 *
 * allow (optional, not with logits_all): a grammar bitmask of
 * ceil(vocab_rows/32) words, bit t set = token t wanted.  The item's logits
 * of the other tokens come back as -INFINITY, and the LM head skips the
 * 32-row panels no masked row of the pass needs: a third of a 0.6B model's
 * decode bytes are that matrix, and a grammar often allows a few hundred
 * tokens (digits, structure, enum prefixes). */
typedef struct sx_step_sample sx_step_sample;
typedef struct sx_step_item {
    int             seq;
    const int32_t  *tokens;
    int             n;
    int             logits_all;
    const uint32_t *allow;
    sx_step_sample *sample;
} sx_step_item;

/* The masked step and sample: an item with `sample` set (not with
 * logits_all) has its row's token drawn by the backend, under the item's
 * `allow` mask, with the sequence's sampler -- its params, the history of
 * accepted tokens and the draw index, exactly as sx_sampler_sample would on
 * that row -- and the result written to *sample.  That row of `logits` is
 * then scratch (the caller must not read it): on the CUDA backend only the
 * token (and log-prob) crosses back, the device sampler of kernels/
 * sampler.cu drawing with the shared math (common/sx_sample_math.h), so the
 * same seed gives the same draw as the CPU sampler on the same logits.
 * What the device sampler cannot do (top-n log-probs, logit_bias, presence
 * and frequency penalties) the backend does on the host with the CPU
 * sampler; the caller sees no difference.  The CPU backend runs
 * sx_sampler_sample on the row.  A row's sampling error (every token
 * masked: the grammar's mask failed) is that row's rc, not the step's.
 * Ownership: the caller's; the backend only reads `sampler` (never accepts
 * a token into it) and writes out/rc/err. */
struct sx_step_sample {
    sx_sampler *sampler;  /* in: the sequence's sampler, borrowed */
    sx_sample   out;      /* out: token, logprob (and top-n when asked) */
    int         rc;       /* out: SX_OK, or the row's error (out.token -1) */
    int         on_device;/* out: 1 when the device drew it */
    sx_error    err;      /* out: the message when rc != SX_OK */
};

/* Since the engine was made: tokens run through the model (prompt and
 * output: what prefix sharing saves shows here), LM-head runs with masked
 * rows (one per pass that had any), the 32-row panels a dense head would
 * have read in them, and the panels read (the sparse head skipped the
 * rest). */
typedef struct sx_engine_lm_stats {
    int64_t tokens;
    int64_t heads;
    int64_t panels_dense, panels_computed;
    /* masked steps whose forward pass overlapped the mask threads (the CUDA
     * backend; 0 on the CPU): the host's time blocked on masks after the
     * launch, the GPU's idle time waiting on them (launch to masks ready,
     * less the pass's GPU time) and that GPU time, microseconds */
    int64_t mask_steps, mask_wait_us, gpu_idle_us, gpu_busy_us;
    /* sample requests (sx_step_sample) the CUDA backend drew on the
     * device, and those it gave the host sampler (top-n, logit_bias, ...);
     * 0 on the CPU */
    int64_t dev_samples, host_samples;
} sx_engine_lm_stats;

typedef struct sx_backend sx_backend;

/* Memory figures, in bytes and tokens; 0 where a backend does not know. */
typedef struct sx_backend_mem {
    int64_t weight_bytes;    /* the weights as the backend holds them */
    int64_t kv_bytes;        /* the KV cache's pool */
    int64_t kv_tokens;       /* its capacity in tokens */
    int64_t kv_free_tokens;  /* capacity left now */
    int     max_seqs;        /* live sequences at once */
    int     block_tokens;    /* tokens per KV block */
} sx_backend_mem;

/* masks_ready(ctx, wait) of a masked step: nonzero when every row's mask is
 * written; with wait set it blocks until they are (sx_engine_step_masked). */
typedef int (*sx_backend_ready_fn)(void *ctx, int wait);

/* The operations a backend provides, each over its own `impl`.  All are
 * required.  Their contracts are those of the sx_backend_* calls below. */
typedef struct sx_backend_ops {
    const char *name;                      /* "cpu", "cuda" */
    void    (*close)(void *impl);          /* frees impl (only for an owning backend) */
    int     (*seq_new)(void *impl, int *seq, sx_error *err);
    int     (*seq_fork)(void *impl, int src, int len, int *seq, sx_error *err);
    int     (*seq_truncate)(void *impl, int seq, int len, sx_error *err);
    void    (*seq_free)(void *impl, int seq);
    int     (*seq_len)(const void *impl, int seq);
    int64_t (*free_tokens)(const void *impl);
    int     (*step)(void *impl, const sx_step_item *items, int n_items, float *logits,
                    sx_backend_ready_fn ready, void *ready_ctx, sx_error *err);
    const sx_model *(*model)(const void *impl);
    void    (*lm_stats)(const void *impl, sx_engine_lm_stats *out);
    void    (*mem)(const void *impl, sx_backend_mem *out);
    /* a short line for reports ("cpu avx512", "cuda NVIDIA H100 ..."); the
     * backend's storage */
    const char *(*describe)(const void *impl);
} sx_backend_ops;

/* A backend over `impl` with `ops` (copied by pointer: ops must be static).
 * owns: close calls ops->close(impl).  SX_ENOMEM. */
int  sx_backend_new(const sx_backend_ops *ops, void *impl, int owns, sx_backend **out,
                    sx_error *err);

/* Opens the backend named by device on model m: "cpu", "cuda" or "cuda:N"
 * (device N).  opts as for sx_engine_new (each backend documents what it
 * ignores).  A binary built without CUDA answers "cuda" with
 * SX_EUNSUPPORTED and a one-line message saying so.  An unknown name is
 * SX_EINVAL. */
int  sx_backend_open(const char *device, const sx_model *m, const sx_engine_opts *opts,
                     sx_backend **out, sx_error *err);
/* b's impl when b runs on these ops, else NULL: how a backend hands its
 * own engine back for backend-specific reports (sx_engine_of_backend). */
void *sx_backend_impl(const sx_backend *b, const sx_backend_ops *ops);
/* Frees b (and its engine when it owns it); NULL is a no-op. */
void sx_backend_close(sx_backend *b);

/* Parses a --device value: "cpu" (*cuda = 0) or "cuda"/"cuda:N" (*cuda = 1,
 * *ordinal = N, default 0).  SX_EINVAL naming the value otherwise. */
int  sx_backend_parse_device(const char *device, int *cuda, int *ordinal, sx_error *err);
/* sx_backend_parse_device, and SX_EUNSUPPORTED with a one-line message
 * when device names CUDA and this binary was built without it: for tools
 * to check --device before loading a model. */
int  sx_backend_device_check(const char *device, sx_error *err);
/* 1 when this binary has a CUDA backend linked in. */
int  sx_backend_have_cuda(void);

/* Sequences: new (an empty one; SX_ELIMIT when max_seqs are live), fork (a
 * new sequence whose cache equals src's first len tokens), truncate (keep
 * the first len), free, len (tokens cached, -1 if not live), and the cache
 * capacity left in tokens. */
int     sx_backend_seq_new(sx_backend *b, int *seq, sx_error *err);
int     sx_backend_seq_fork(sx_backend *b, int src, int len, int *seq, sx_error *err);
int     sx_backend_seq_truncate(sx_backend *b, int seq, int len, sx_error *err);
void    sx_backend_seq_free(sx_backend *b, int seq);
int     sx_backend_seq_len(const sx_backend *b, int seq);
int64_t sx_backend_free_tokens(const sx_backend *b);

/* One batched step (sx_step_item above), masks ready. */
int sx_backend_step(sx_backend *b, const sx_step_item *items, int n_items, float *logits,
                    sx_error *err);
/* A step whose masks may still be being written when it starts (the
 * contract of sx_engine_step_masked): ready may be NULL. */
int sx_backend_step_masked(sx_backend *b, const sx_step_item *items, int n_items, float *logits,
                           sx_backend_ready_fn ready, void *ready_ctx, sx_error *err);

/* For backends: an item's sample request answered by the CPU sampler on
 * its logits row (modified: scratch), rc and err set as sx_step_sample
 * says. */
void sx_backend_sample_host(const sx_step_item *it, float *row);

const sx_model *sx_backend_model(const sx_backend *b);
void        sx_backend_lm_stats_get(const sx_backend *b, sx_engine_lm_stats *out);
void        sx_backend_mem_get(const sx_backend *b, sx_backend_mem *out);
const char *sx_backend_name(const sx_backend *b);      /* "cpu", "cuda" */
const char *sx_backend_describe(const sx_backend *b);

/* The CUDA backend's constructor, defined only in builds that link
 * libstrux_cuda.a (engine/cuda/); sx_backend_open finds it through a weak
 * reference, so the CPU-only build needs no stub. */
int sx_cuda_backend_open(int ordinal, const sx_model *m, const sx_engine_opts *opts,
                         sx_backend **out, sx_error *err);

#endif
