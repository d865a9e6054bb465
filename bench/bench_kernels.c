/* Kernel-only throughput of the CPU matrix kernels on Qwen3-0.6B's matrix
 * shapes, without the rest of the forward pass: for tuning kernels and for
 * telling a kernel's speed from the engine's overheads (pool waits,
 * attention, norms).
 *
 * For each kernel this CPU runs (f32-activation bf16 of every path,
 * bf16-activation vdpbf16ps, int8 widening and int8 VNNI) and each shape:
 *   - prefill: --tokens tokens (default 512) through one matrix, the best of
 *     --reps runs: GFLOP/s (compute-bound);
 *   - decode: one token through --copies distinct copies of the matrix
 *     (default: enough for 256 MB, far beyond the caches), the best of
 *     --reps passes: GB/s of weights read (memory-bound).
 * --threads N splits the rows of every call across N threads, as the
 * engine's matrix stage does (contiguous panel ranges).
 *
 * usage: bench_kernels [--threads N] [--tokens N] [--reps N] [--mb N] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/cpu/cpu_kernels.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct kern {
    const char *name;
    int         q8_layout;  /* -1: bf16 weights */
    void (*bf16)(const uint16_t *, int, const float *, int, float *, long, int, int, int);
    void (*q8)(const int8_t *, const float *, int, const float *, int, float *, long, int, int, int);
    int         tile;
} kern;

typedef struct job {
    const kern *k;
    void      **w;       /* copies of the packed matrix */
    float     **sc;      /* their row scales (int8) */
    int         rows, cols, n_tok, copies;
    const float *xp;
    float      *y;
} job;

typedef struct worker {
    pthread_t   th;
    int         tid, nth;
    job        *j;
    atomic_int *go, *done;
    int         gen;
} worker;

static void run_part(const job *j, int tid, int nth)
{
    int panels = sx_pad_rows(j->rows) / SX_PANEL;
    int p0 = (int)((long)panels * tid / nth), p1 = (int)((long)panels * (tid + 1) / nth);
    int r0 = p0 * SX_PANEL, r1 = p1 * SX_PANEL < j->rows ? p1 * SX_PANEL : j->rows;
    if (r0 >= r1)
        return;
    for (int c = 0; c < j->copies; c++) {
        if (j->k->q8_layout < 0)
            j->k->bf16(j->w[c], j->cols, j->xp, j->n_tok, j->y, j->rows, r0, r1, 0);
        else
            j->k->q8(j->w[c], j->sc[c], j->cols, j->xp, j->n_tok, j->y, j->rows, r0, r1, 0);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (;;) {
        int g;
        while ((g = atomic_load(w->go)) == w->gen)
            ;
        w->gen = g;
        if (g < 0)
            return NULL;
        run_part(w->j, w->tid, w->nth);
        atomic_fetch_add(w->done, 1);
    }
}

/* one timed pass over every copy, all threads; returns seconds */
static double pass(worker *ws, int nth, job *j, atomic_int *go, atomic_int *done)
{
    for (int i = 1; i < nth; i++)
        ws[i].j = j;
    atomic_store(done, 0);
    double a = now();
    atomic_fetch_add(go, 1);
    run_part(j, 0, nth);
    while (atomic_load(done) < nth - 1)
        ;
    return now() - a;
}

int main(int argc, char **argv)
{
    int nth = 1, n_tok = 512, reps = 5, mb = 256;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc)
            n_tok = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mb") && i + 1 < argc)
            mb = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_kernels [--threads N] [--tokens N] [--reps N] [--mb N]\n");
            return 2;
        }
    }
    if (nth < 1 || nth > 256 || n_tok < 1 || reps < 1 || mb < 1) {
        fprintf(stderr, "bench_kernels: --threads 1..256, --tokens, --reps, --mb positive\n");
        return 2;
    }
    kern ks[12];
    static char names[12][64];
    int nk = 0;
    for (int p = 0; p < SX_CPU_PATHS; p++) {
        const sx_cpu_kernels *kr = sx_cpu_kernels_for(p);
        if (!kr || p == SX_CPU_SCALAR)
            continue;
        snprintf(names[nk], sizeof names[nk], "%s bf16", kr->name);
        ks[nk] = (kern){ names[nk], -1, kr->mm_bf16, NULL, kr->tile };
        nk++;
        snprintf(names[nk], sizeof names[nk], "%s int8%s", kr->name,
                 kr->q8_layout == SX_Q8_VNNI ? " (vnni)" : "");
        ks[nk] = (kern){ names[nk], kr->q8_layout, NULL, kr->mm_q8, kr->tile };
        nk++;
    }
    if (sx_dpbf16_usable())
        ks[nk++] = (kern){ "avx512 bf16, bf16 activations", -1, sx_dpbf16_mm_bf16, NULL, 12 };
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (sx_cpu_kernels_for(SX_CPU_AVX512) && !sx_cpu_kernels_for(SX_CPU_AMX) &&
        __builtin_cpu_supports("avx512vnni"))
        ks[nk++] = (kern){ "avx512 int8 through vnni", SX_Q8_VNNI, NULL, sx_vnni_mm_q8, 12 };
#endif
    static const struct { const char *what; int rows, cols; } shapes[] = {
        { "q+k+v 2048x1024", 2048, 1024 }, { "o 1024x2048", 1024, 2048 },
        { "gate/up 3072x1024", 3072, 1024 }, { "down 1024x3072", 1024, 3072 },
    };
    atomic_int go = 0, done = 0;
    worker ws[256];
    for (int i = 1; i < nth; i++) {
        ws[i] = (worker){ .tid = i, .nth = nth, .go = &go, .done = &done, .gen = 0 };
        pthread_create(&ws[i].th, NULL, worker_main, &ws[i]);
    }
    printf("threads: %d, prefill tokens: %d, decode reads %d MB per pass, best of %d\n", nth,
           n_tok, mb, reps);
    int rc = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        int R = shapes[si].rows, K = shapes[si].cols;
        uint16_t *w = malloc((size_t)R * K * sizeof *w);
        float *x = malloc((size_t)n_tok * K * sizeof *x);
        float *xp = malloc(sx_xpack_size(n_tok, K) * sizeof *xp);
        float *y = malloc((size_t)n_tok * R * sizeof *y);
        if (!w || !x || !xp || !y) {
            fprintf(stderr, "bench_kernels: out of memory\n");
            return 1;
        }
        uint64_t s = 0x9e3779b97f4a7c15ull;
        for (size_t i = 0; i < (size_t)R * K; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            w[i] = sx_f32_to_bf16((float)((int)(s >> 40) % 1000) * 1e-4f);
        }
        for (size_t i = 0; i < (size_t)n_tok * K; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            x[i] = (float)((int)(s >> 40) % 2000) * 1e-3f - 1.0f;
        }
        for (int ki = 0; ki < nk; ki++) {
            const kern *k = &ks[ki];
            size_t bytes = k->q8_layout < 0 ? sx_pack_bf16_size(R, K) * 2
                                            : sx_pack_q8_size(R, K, k->q8_layout);
            int copies = (int)((size_t)mb * 1000000 / bytes);
            copies = copies < 1 ? 1 : copies;
            void **wc = calloc((size_t)copies, sizeof *wc);
            float **sc = calloc((size_t)copies, sizeof *sc);
            int ok = wc && sc;
            for (int c = 0; ok && c < copies; c++) {
                wc[c] = malloc(bytes);
                sc[c] = malloc((size_t)sx_pad_rows(R) * sizeof(float));
                if (!wc[c] || !sc[c]) {
                    ok = 0;
                    break;
                }
                if (k->q8_layout < 0)
                    sx_pack_bf16(w, R, K, 0, R, wc[c]);
                else
                    sx_pack_q8(w, R, K, 0, R, k->q8_layout, wc[c], sc[c]);
            }
            if (!ok) {
                fprintf(stderr, "bench_kernels: out of memory for %d copies\n", copies);
                rc = 1;
            } else {
                for (int t = 0; t < n_tok; t++)
                    sx_pack_x_row(x + (size_t)t * K, t, n_tok, K, k->tile, xp);
                job pj = { k, wc, sc, R, K, n_tok, 1, xp, y };
                double best = 1e30;
                for (int r = 0; r < reps; r++) {
                    double d = pass(ws, nth, &pj, &go, &done);
                    best = d < best ? d : best;
                }
                double gflops = 2.0 * R * K * n_tok / best / 1e9;
                sx_pack_x_row(x, 0, 1, K, k->tile, xp);
                job dj = { k, wc, sc, R, K, 1, copies, xp, y };
                double bd = 1e30;
                for (int r = 0; r < reps; r++) {
                    double d = pass(ws, nth, &dj, &go, &done);
                    bd = d < bd ? d : bd;
                }
                printf("%-18s %-32s prefill %7.1f GFLOP/s   decode %6.2f GB/s\n",
                       shapes[si].what, k->name, gflops, (double)bytes * copies / bd / 1e9);
                fflush(stdout);
            }
            for (int c = 0; wc && c < copies; c++) {
                free(wc[c]);
                if (sc)
                    free(sc[c]);
            }
            free(wc);
            free(sc);
        }
        free(w);
        free(x);
        free(xp);
        free(y);
    }
    atomic_store(&go, -1);
    for (int i = 1; i < nth; i++)
        pthread_join(ws[i].th, NULL);
    return rc;
}
