/* sx_pool: a small persistent thread pool with a barrier-style parallel-for.
 *
 * sx_pool_run(p, fn, ctx) calls fn(ctx, tid, n) once for every tid in
 * [0, n) -- tid 0 on the calling thread, the rest on the pool's workers --
 * and returns when all calls have returned.  The forward pass issues a few
 * hundred of these per token, so workers spin briefly before sleeping to
 * keep the hand-off in the microsecond range.
 *
 * Ownership: sx_pool_new returns a pool the caller frees with sx_pool_free
 * (which joins the workers).  One thread drives a pool at a time; fn must
 * not call sx_pool_run on the same pool. */
#ifndef SX_THREADPOOL_H
#define SX_THREADPOOL_H

#include "common/sx_error.h"

typedef struct sx_pool sx_pool;
typedef void (*sx_pool_fn)(void *ctx, int tid, int n);

/* n_threads <= 0 means the number of online CPUs.  A pool of 1 runs
 * everything on the caller and starts no thread. */
int  sx_pool_new(int n_threads, sx_pool **out, sx_error *err);
void sx_pool_free(sx_pool *p);
int  sx_pool_size(const sx_pool *p);
void sx_pool_run(sx_pool *p, sx_pool_fn fn, void *ctx);

/* Splits [0, n) into `parts` contiguous ranges whose starts are multiples of
 * `align` (except the end); sets [*lo, *hi) for part i. */
void sx_pool_range(long n, int parts, int i, long align, long *lo, long *hi);

#endif
