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
#include "engine/backend.h"
#include "engine/model/model.h"

typedef struct sx_engine sx_engine;

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

/* One batched step: the contract of sx_step_item (engine/backend.h). */
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

/* The engine behind the engine interface (engine/backend.h): *out's
 * operations are this engine's.  owns: sx_backend_close frees e too;
 * otherwise e is borrowed and must outlive *out.  SX_ENOMEM. */
int sx_engine_backend(sx_engine *e, int owns, sx_backend **out, sx_error *err);
/* The CPU engine behind b, or NULL when b is another backend (for reports
 * that only the CPU engine has: sx_engine_cpu_path, act_rounding). */
sx_engine *sx_engine_of_backend(const sx_backend *b);

/* sx_engine_lm_stats (engine/backend.h) since the engine was made. */
void sx_engine_lm_stats_get(const sx_engine *e, sx_engine_lm_stats *out);

#endif
