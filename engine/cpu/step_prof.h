/* sx_step_prof: where a forward pass spends its time, per stage, for
 * tuning the dispatch layer (a debug aid, off unless STRUX_STEP_PROFILE is
 * set when the engine starts; then sx_engine_free prints the table to
 * stderr).  Each parallel-for of the pass is timed on the driver (issue to
 * return) and inside every thread (its call of the stage function), so the
 * table splits a stage's wall time into the slowest thread's work and the
 * rest: hand-off, join and imbalance.  Passes of one row (single-sequence
 * decode), of 2..32 rows (batched decode, forced tokens) and of more (with
 * a prompt's chunk) are kept apart.  Internal to engine/cpu/.
 *
 * Ownership: sx_step_prof_new returns a table the engine frees with
 * sx_step_prof_free. */
#ifndef SX_STEP_PROF_H
#define SX_STEP_PROF_H

#include <stdio.h>
#include "engine/cpu/threadpool.h"

enum {
    SX_ST_EMBED, SX_ST_NORM, SX_ST_MM_QKV, SX_ST_QK, SX_ST_ATT, SX_ST_PACK_ATT, SX_ST_MM_O,
    SX_ST_MM_GATEUP, SX_ST_SWIGLU, SX_ST_MM_DOWN, SX_ST_LM, SX_ST_LM_MASK, SX_ST_AWQ_SUMS,
    SX_ST_OTHER,
    SX_ST_COUNT
};

typedef struct sx_step_prof sx_step_prof;

/* NULL unless the environment asks for it (or out of memory: no profile) */
sx_step_prof *sx_step_prof_new(int n_threads);
void sx_step_prof_free(sx_step_prof *pr);
/* marks the start and end of one pass of `rows` rows */
void sx_step_prof_pass(sx_step_prof *pr, int rows, int end);
/* sx_pool_run(pool, fn, ctx), timed as stage `stage` */
void sx_step_prof_run(sx_step_prof *pr, sx_pool *pool, int stage, sx_pool_fn fn, void *ctx);
void sx_step_prof_print(const sx_step_prof *pr, FILE *f);

#endif
