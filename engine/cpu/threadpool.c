/* Workers wait on a generation counter: spin first (a forward step hands out
 * work every few microseconds), then yield (on a shared or oversubscribed
 * CPU the thread being waited for may need this very core), then sleep on a
 * condition variable so an idle engine costs no CPU.
 *
 * While everyone spins, a hand-off is one atomic store and a join one
 * atomic decrement: the mutex and the condition variables are touched only
 * when a thread says it is (about to be) asleep.  Each side stores "I sleep"
 * and then loads the other's progress, the other stores progress and then
 * loads "sleeps", all sequentially consistent, so at least one of the two
 * sees the other: a sleeper is always woken, and nobody sleeps through the
 * event it waits for. */
#include "engine/cpu/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define SPIN_ROUNDS  256    /* pause loops before yielding (~10 us) */
#define YIELD_ROUNDS 2000   /* sched_yield calls before sleeping */

struct sx_pool {
    int             n;
    pthread_t      *threads;
    int             n_started;
    pthread_mutex_t mu;
    pthread_cond_t  wake;     /* workers sleep here for a new generation */
    pthread_cond_t  done;     /* the driver sleeps here for the last worker */
    atomic_uint     gen;
    atomic_int      pending;  /* workers still running this generation */
    atomic_int      stop;
    atomic_int      sleepers;        /* workers waiting on wake */
    atomic_int      driver_waiting;  /* the driver is waiting on done */
    sx_pool_fn      fn;
    void           *ctx;
};

typedef struct worker_arg {
    sx_pool *p;
    int      tid;
} worker_arg;

static inline void cpu_relax(int round)
{
    if (round >= SPIN_ROUNDS) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg)
{
    worker_arg *wa = arg;
    sx_pool *p = wa->p;
    int tid = wa->tid;
    free(wa);
    unsigned seen = 0;   /* the generation at creation, not now: a job may already be out */
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&p->stop, memory_order_acquire) &&
               spins < SPIN_ROUNDS + YIELD_ROUNDS)
            cpu_relax(spins++);
        if (g == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while ((g = atomic_load(&p->gen)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop))
            break;
        seen = g;
        p->fn(p->ctx, tid, p->n);
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->driver_waiting)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

int sx_pool_new(int n_threads, sx_pool **out, sx_error *err)
{
    *out = NULL;
    if (n_threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)c : 1;
    }
    if (n_threads > 1024)
        return sx_err_set(err, SX_EINVAL, "thread pool: %d threads is too many", n_threads);
    sx_pool *p = calloc(1, sizeof *p);
    if (!p)
        return sx_err_set(err, SX_ENOMEM, "thread pool: out of memory");
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->driver_waiting, 0);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
        if (!p->threads)
            goto nomem;
        for (int i = 1; i < n_threads; i++) {
            worker_arg *wa = malloc(sizeof *wa);
            if (!wa)
                goto nomem;
            wa->p = p;
            wa->tid = i;
            if (pthread_create(&p->threads[i - 1], NULL, worker_main, wa) != 0) {
                free(wa);
                sx_pool_free(p);
                return sx_err_set(err, SX_ENOMEM, "thread pool: cannot start thread %d", i);
            }
            p->n_started++;
        }
    }
    *out = p;
    return SX_OK;
nomem:
    sx_pool_free(p);
    return sx_err_set(err, SX_ENOMEM, "thread pool: out of memory");
}

void sx_pool_free(sx_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
}

int sx_pool_size(const sx_pool *p)
{
    return p->n;
}

void sx_pool_run(sx_pool *p, sx_pool_fn fn, void *ctx)
{
    if (p->n_started == 0) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, p->n_started, memory_order_relaxed);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    fn(ctx, 0, p->n);
    int spins = 0;
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0 &&
           spins < SPIN_ROUNDS + YIELD_ROUNDS)
        cpu_relax(spins++);
    if (atomic_load_explicit(&p->pending, memory_order_acquire) != 0) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->driver_waiting, 1);
        while (atomic_load(&p->pending) != 0)
            pthread_cond_wait(&p->done, &p->mu);
        atomic_store(&p->driver_waiting, 0);
        pthread_mutex_unlock(&p->mu);
    }
}

void sx_pool_range(long n, int parts, int i, long align, long *lo, long *hi)
{
    if (align < 1)
        align = 1;
    long units = (n + align - 1) / align;
    long per = units / parts, rem = units % parts;
    long u0 = i * per + (i < rem ? i : rem);
    long u1 = u0 + per + (i < rem ? 1 : 0);
    *lo = u0 * align < n ? u0 * align : n;
    *hi = u1 * align < n ? u1 * align : n;
}
