/* sx_engine: the Qwen3 forward pass on the CPU over a paged KV cache, for
 * many sequences at once (continuous batching).
 *
 * Contract of engine/cpu/: the forward pass, the paged KV cache, the matrix
 * kernels per ISA, packing, int8 quantisation and the thread pool; depends on
 * engine/model/ and common/.
 *
 * A sequence is a slot in the KV cache.  Each step takes, for any subset of
 * live sequences, the next tokens of that sequence (a whole prompt chunk for
 * prefill, one token for decode), appends their keys/values to the cache and
 * returns logits.  Sequences can be added, forked (sharing the prompt's cache
 * blocks, copy-on-write), truncated (rollback) and freed between steps; freed
 * blocks are reused.
 *
 * Ownership: the engine borrows the model (it must outlive the engine) and
 * owns its threads, KV cache and scratch, and a copy of the weight matrices
 * repacked for the CPU kernels (bf16, int8 in SX_W_INT8 mode, 4-bit in SX_W_Q4; after
 * sx_engine_new only the model's embedding and norm vectors are read).
 * One engine is driven by one thread at a time (the scheduler); it
 * parallelises internally over n_threads. */
#ifndef SX_ENGINE_H
#define SX_ENGINE_H

#include <stdint.h>
#include "common/sx_error.h"
#include "engine/model/model.h"

typedef struct sx_engine sx_engine;

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
} sx_engine_opts;

int  sx_engine_new(const sx_model *m, const sx_engine_opts *opts,
                   sx_engine **out, sx_error *err);
void sx_engine_free(sx_engine *e);

/* Sequences.  sx_engine_seq_new gives an empty sequence (SX_ELIMIT when
 * max_seqs are live).  fork: a new sequence whose cache equals src's first
 * `len` tokens, sharing full blocks.  truncate: keep the first len tokens. */
int  sx_engine_seq_new(sx_engine *e, int *seq, sx_error *err);
int  sx_engine_seq_fork(sx_engine *e, int src, int len, int *seq, sx_error *err);
int  sx_engine_seq_truncate(sx_engine *e, int seq, int len, sx_error *err);
void sx_engine_seq_free(sx_engine *e, int seq);
int  sx_engine_seq_len(const sx_engine *e, int seq);       /* tokens cached, -1 if not live */
int64_t sx_engine_free_tokens(const sx_engine *e);          /* cache capacity left, in tokens */
/* The CPU kernel path in use ("amx", "avx512", "avx2", "scalar", or
 * "avx512-bf16act" in SX_ACT_BF16 mode); static storage. */
const char *sx_engine_cpu_path(const sx_engine *e);
/* What the matrix products do to activations with this engine's weights and
 * path, for reports: "f32", "bf16", "int8 per 32 k" (q4 on every path, int8
 * on avx2 and scalar) or "two int8 digits per 32 k" (int8 on amx); static. */
const char *sx_engine_act_rounding(const sx_engine *e);

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
typedef struct sx_step_item {
    int             seq;
    const int32_t  *tokens;
    int             n;
    int             logits_all;
    const uint32_t *allow;
} sx_step_item;

int sx_engine_step(sx_engine *e, const sx_step_item *items, int n_items,
                   float *logits, sx_error *err);

/* sx_engine_step whose masks may still be being written when it starts,
 * so a caller can fill them while the model runs.  ready(ctx, wait), on
 * the calling thread, says whether every mask is written (nonzero), and
 * with wait set blocks until it is.  Before the LM head of the first pass
 * with a masked row the engine polls (wait = 0): masks that are ready give
 * the sparse head; late ones are not waited for: the head computes every
 * logit, then the engine waits (wait = 1) and applies them.  Never called
 * when no item has a mask; ready may be NULL (masks are ready). */
int sx_engine_step_masked(sx_engine *e, const sx_step_item *items, int n_items,
                          float *logits, int (*ready)(void *ctx, int wait), void *ready_ctx,
                          sx_error *err);

const sx_model *sx_engine_model(const sx_engine *e);

/* Since the engine was made: tokens run through the model (prompt and
 * output: what prefix sharing saves shows here), LM-head runs with masked
 * rows (one per pass that had any), the 32-row panels a dense head would
 * have read in them, and the panels read (the sparse head skipped the
 * rest). */
typedef struct sx_engine_lm_stats {
    int64_t tokens;
    int64_t heads;
    int64_t panels_dense, panels_computed;
} sx_engine_lm_stats;

void sx_engine_lm_stats_get(const sx_engine *e, sx_engine_lm_stats *out);

#endif
