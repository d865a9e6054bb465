/* sx_pool's hand-offs between spinning, yielding and sleeping threads.
 *
 * A run hands work out with one atomic store while the workers spin, and
 * touches the mutex only when a thread sleeps (threadpool.c).  These runs
 * put the threads in each state at the moment of a hand-off or a join --
 * workers asleep after an idle gap, a driver asleep behind a slow worker,
 * back-to-back runs while everyone spins -- and check that every run calls
 * every thread exactly once and that none is lost (a lost wake-up hangs the
 * test; alarm() turns that into a failure). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/cpu/threadpool.h"

typedef struct run_ctx {
    atomic_int calls;
    atomic_int per_tid[8];
    int        slow_tid;    /* this thread sleeps slow_us first (-1: none) */
    int        slow_us;
} run_ctx;

static void sleep_us(int us)
{
    struct timespec t = { us / 1000000, (long)(us % 1000000) * 1000 };
    nanosleep(&t, NULL);
}

static void fn(void *arg, int tid, int n)
{
    run_ctx *c = arg;
    (void)n;
    if (tid == c->slow_tid)
        sleep_us(c->slow_us);
    atomic_fetch_add(&c->per_tid[tid], 1);
    atomic_fetch_add(&c->calls, 1);
}

static void one_run(sx_pool *p, int n, int slow_tid, int slow_us)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.slow_tid = slow_tid;
    c.slow_us = slow_us;
    sx_pool_run(p, fn, &c);
    assert_int_equal(atomic_load(&c.calls), n);
    for (int i = 0; i < n; i++)
        assert_int_equal(atomic_load(&c.per_tid[i]), 1);
}

static void every_state(void **state)
{
    (void)state;
    alarm(120);
    for (int n = 2; n <= 4; n++) {
        sx_pool *p = NULL;
        assert_int_equal(sx_pool_new(n, &p, NULL), SX_OK);
        for (int rep = 0; rep < 240; rep++) {
            switch (rep % 8) {
            case 0:   /* idle long enough that the workers go to sleep */
                sleep_us(5000);
                one_run(p, n, -1, 0);
                break;
            case 1:   /* a slow worker: the driver sleeps on the join */
                one_run(p, n, 1 + rep % (n - 1), 4000);
                break;
            case 2:   /* a slow driver: the workers finish first */
                one_run(p, n, 0, 300);
                break;
            case 3:   /* short gaps: workers between spinning and yielding */
                sleep_us(rep % 500);
                one_run(p, n, -1, 0);
                break;
            default:  /* back to back, everyone spinning */
                for (int i = 0; i < 50; i++)
                    one_run(p, n, -1, 0);
            }
        }
        sx_pool_free(p);
    }
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
