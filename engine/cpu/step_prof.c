/* Timing of the forward pass's parallel-fors (step_prof.h). */
#include "engine/cpu/step_prof.h"

#include <stdlib.h>
#include <time.h>

/* passes of one row, of 2..32 (decode-sized: several sequences, forced
 * tokens), of more (a prompt's chunk in them) */
enum { KINDS = 3, FEW_ROWS = 32 };

typedef struct stage_acc {
    long   calls;
    double wall, busy_max, busy0, lag_max;   /* seconds, summed over calls */
    double cpu_max;                          /* the most CPU time one thread took */
} stage_acc;

struct sx_step_prof {
    int       n;
    int       kind;        /* of the pass under way */
    double    pass_t0;
    long      passes[KINDS];
    double    pass_wall[KINDS];
    stage_acc st[KINDS][SX_ST_COUNT];
    /* the dispatch being timed */
    sx_pool_fn fn;
    void      *ctx;
    double     issue;
    double    *t_start, *t_end;   /* [n] */
    double    *t_cpu;             /* [n] the thread's CPU time in the call */
};

static const char *const names[SX_ST_COUNT] = {
    "embed", "norm", "mm_qkv", "qk_rope_kv", "attention", "pack_att", "mm_o", "mm_gate_up",
    "swiglu", "mm_down", "lm_head", "lm_mask", "awq_sums", "other",
};

static double clk(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now(void)
{
    return clk(CLOCK_MONOTONIC);
}

sx_step_prof *sx_step_prof_new(int n_threads)
{
    const char *v = getenv("STRUX_STEP_PROFILE");
    if (!v || !*v || (v[0] == '0' && !v[1]))
        return NULL;
    sx_step_prof *pr = calloc(1, sizeof *pr);
    if (!pr)
        return NULL;
    pr->n = n_threads;
    pr->t_start = calloc((size_t)n_threads, sizeof *pr->t_start);
    pr->t_end = calloc((size_t)n_threads, sizeof *pr->t_end);
    pr->t_cpu = calloc((size_t)n_threads, sizeof *pr->t_cpu);
    if (!pr->t_start || !pr->t_end || !pr->t_cpu) {
        sx_step_prof_free(pr);
        return NULL;
    }
    return pr;
}

void sx_step_prof_free(sx_step_prof *pr)
{
    if (!pr)
        return;
    free(pr->t_start);
    free(pr->t_end);
    free(pr->t_cpu);
    free(pr);
}

void sx_step_prof_pass(sx_step_prof *pr, int rows, int end)
{
    if (!end) {
        pr->kind = rows <= 1 ? 0 : rows <= FEW_ROWS ? 1 : 2;
        pr->pass_t0 = now();
        return;
    }
    pr->passes[pr->kind]++;
    pr->pass_wall[pr->kind] += now() - pr->pass_t0;
}

static void timed(void *arg, int tid, int nth)
{
    sx_step_prof *pr = arg;
    double a = now(), c = clk(CLOCK_THREAD_CPUTIME_ID);
    pr->fn(pr->ctx, tid, nth);
    pr->t_cpu[tid] = clk(CLOCK_THREAD_CPUTIME_ID) - c;
    pr->t_start[tid] = a;
    pr->t_end[tid] = now();
}

void sx_step_prof_run(sx_step_prof *pr, sx_pool *pool, int stage, sx_pool_fn fn, void *ctx)
{
    int n = sx_pool_size(pool);
    pr->fn = fn;
    pr->ctx = ctx;
    pr->issue = now();
    sx_pool_run(pool, timed, pr);
    double done = now();
    stage_acc *s = &pr->st[pr->kind][stage];
    double bmax = 0, lag = 0, cmax = 0;
    for (int i = 0; i < n && i < pr->n; i++) {
        double b = pr->t_end[i] - pr->t_start[i], l = pr->t_start[i] - pr->issue;
        bmax = b > bmax ? b : bmax;
        lag = l > lag ? l : lag;
        cmax = pr->t_cpu[i] > cmax ? pr->t_cpu[i] : cmax;
    }
    s->cpu_max += cmax;
    s->calls++;
    s->wall += done - pr->issue;
    s->busy_max += bmax;
    s->busy0 += pr->t_end[0] - pr->t_start[0];
    s->lag_max += lag;
}

void sx_step_prof_print(const sx_step_prof *pr, FILE *f)
{
    for (int k = 0; k < KINDS; k++) {
        if (!pr->passes[k])
            continue;
        double np = (double)pr->passes[k], tw = 0, tb = 0, tc = 0;
        long calls = 0;
        fprintf(f, "step profile, %s passes: %ld, %.1f us per pass, %d threads (per pass, us)\n",
                k == 0 ? "one-row" : k == 1 ? "2-32-row" : "33+-row", pr->passes[k], 1e6 * pr->pass_wall[k] / np, pr->n);
        fprintf(f, "  %-11s %7s %9s %9s %9s %9s %9s %9s\n", "stage", "calls", "wall", "slowest",
                "thread0", "overhead", "max_lag", "cpu_max");
        for (int i = 0; i < SX_ST_COUNT; i++) {
            const stage_acc *s = &pr->st[k][i];
            if (!s->calls)
                continue;
            fprintf(f, "  %-11s %7.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", names[i],
                    (double)s->calls / np, 1e6 * s->wall / np, 1e6 * s->busy_max / np,
                    1e6 * s->busy0 / np, 1e6 * (s->wall - s->busy_max) / np,
                    1e6 * s->lag_max / np, 1e6 * s->cpu_max / np);
            tc += s->cpu_max;
            tw += s->wall;
            tb += s->busy_max;
            calls += s->calls;
        }
        fprintf(f, "  %-11s %7.1f %9.1f %9.1f %9s %9.1f %9s %9.1f   (outside dispatches %.1f)\n",
                "total", (double)calls / np, 1e6 * tw / np, 1e6 * tb / np, "",
                1e6 * (tw - tb) / np, "", 1e6 * tc / np, 1e6 * (pr->pass_wall[k] - tw) / np);
    }
}
