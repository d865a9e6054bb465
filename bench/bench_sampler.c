/* bench_sampler: time of one sx_sampler_sample call over a Qwen3-sized row
 * (151,936 logits, 151,669 valid), median of many, for the common settings
 * with and without a grammar mask.
 *
 *   make build/bench_sampler && build/bench_sampler [iterations]
 *
 * The row looks like a language model's: a normal bulk (sd 2) and a few
 * dozen tokens lifted 8-15 above it.  The mask allows a random half. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/sampler/sampler.h"

#define ROWS 151936
#define VALID 151669

static uint64_t rs = 88172645463325252ull;

static double rnd01(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 300;
    if (iters < 1)
        iters = 1;
    float *logits = malloc(ROWS * sizeof *logits), *work = malloc(ROWS * sizeof *work);
    uint32_t *mask = malloc((ROWS + 31) / 32 * sizeof *mask);
    double *t = malloc((size_t)iters * sizeof *t);
    if (!logits || !work || !mask || !t)
        return 1;
    for (int i = 0; i < ROWS; i++) {
        double u = rnd01() + 1e-300, v = rnd01();
        logits[i] = (float)(2.0 * sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
    }
    for (int i = 0; i < 40; i++)
        logits[(int)(rnd01() * VALID)] += (float)(8 + 7 * rnd01());
    for (int w = 0; w < (ROWS + 31) / 32; w++)
        mask[w] = (uint32_t)(rnd01() * 4294967296.0);

    struct {
        const char *name;
        float temperature, top_p;
        int top_k;
    } cfg[] = {
        {"greedy", 0.0f, 1.0f, 0},
        {"temperature 1", 1.0f, 1.0f, 0},
        {"top-p 0.9", 1.0f, 0.9f, 0},
        {"top-k 50", 1.0f, 1.0f, 50},
        {"top-k 50 top-p 0.9 T 0.7", 0.7f, 0.9f, 50},
    };
    printf("sx_sampler_sample, %d logits, median of %d (us)\n", ROWS, iters);
    printf("%-26s %10s %10s\n", "setting", "no mask", "mask 50%");
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        double med[2];
        for (int m = 0; m < 2; m++) {
            sx_sampling p;
            sx_sampler *s = NULL;
            sx_error err;
            sx_sampling_default(&p);
            p.temperature = cfg[c].temperature;
            p.top_p = cfg[c].top_p;
            p.top_k = cfg[c].top_k;
            p.seed = 7;
            if (sx_sampler_new(&p, ROWS, VALID, &s, &err)) {
                fprintf(stderr, "bench_sampler: %s\n", err.msg);
                return 1;
            }
            for (int i = 0; i < iters; i++) {
                sx_sample out;
                memcpy(work, logits, ROWS * sizeof *work);
                double t0 = now_us();
                if (sx_sampler_sample(s, work, m ? mask : NULL, &out, &err)) {
                    fprintf(stderr, "bench_sampler: %s\n", err.msg);
                    return 1;
                }
                t[i] = now_us() - t0;
                sx_sampler_accept(s, out.token);
            }
            qsort(t, (size_t)iters, sizeof *t, cmp_d);
            med[m] = t[iters / 2];
            sx_sampler_free(s);
        }
        printf("%-26s %10.1f %10.1f\n", cfg[c].name, med[0], med[1]);
    }
    free(logits);
    free(work);
    free(mask);
    free(t);
    return 0;
}
