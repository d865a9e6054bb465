/* GPU tests and benchmarks (tests/gpu/run.sh runs them on a GPU machine):
 * each kernel against its CPU reference, the sampler, the engine against
 * the CPU engine, and the benchmarks, in groups chosen on the command line.
 * Without a GPU it says so and exits 0 with every test skipped (so CI only
 * proves that it compiles and links), or 1 with --require-gpu. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/cuda/engine_cuda.h"
#include "kernels/sx_kernels.h"

static int passed, failed;
#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (cond) {                                                              \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                 \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

static void test_apply_mask(void)
{
    const int rows = 3, vocab = 151936, words = (vocab + 31) / 32;
    size_t nl = (size_t)rows * vocab, nm = (size_t)rows * words;
    float *h = malloc(nl * sizeof *h), *ref = malloc(nl * sizeof *ref), *got = malloc(nl * sizeof *got);
    uint32_t *mask = malloc(nm * sizeof *mask);
    unsigned s = 12345;
    for (size_t i = 0; i < nl; i++) {
        s = s * 1103515245u + 12345u;
        h[i] = (float)(s >> 8) / (1u << 24) - 0.5f;
    }
    for (size_t i = 0; i < nm; i++) {
        s = s * 1103515245u + 12345u;
        mask[i] = s;
    }
    memcpy(ref, h, nl * sizeof *h);
    sx_ref_apply_mask(ref, mask, rows, vocab);
    float *dl;
    uint32_t *dm;
    cudaMalloc((void **)&dl, nl * sizeof *dl);
    cudaMalloc((void **)&dm, nm * sizeof *dm);
    cudaMemcpy(dl, h, nl * sizeof *h, cudaMemcpyHostToDevice);
    cudaMemcpy(dm, mask, nm * sizeof *mask, cudaMemcpyHostToDevice);
    CHECK(sx_cuda_apply_mask(dl, dm, rows, vocab, NULL) == 0, "launch failed");
    cudaMemcpy(got, dl, nl * sizeof *got, cudaMemcpyDeviceToHost);
    size_t bad = 0;
    for (size_t i = 0; i < nl; i++)
        if (!(got[i] == ref[i] || (isinf(got[i]) && isinf(ref[i]))))
            bad++;
    CHECK(bad == 0, "apply_mask: %zu of %zu logits differ from the CPU reference", bad, nl);
    cudaFree(dl);
    cudaFree(dm);
    free(h);
    free(ref);
    free(got);
    free(mask);
}

/* tests/gpu/test_gpu_sampler.c */
void sx_gpu_test_sampler(int *passed, int *failed);
/* tests/gpu/test_gpu_kernels.c, test_gpu_engine.c, test_gpu_bench.c */
void sx_gpu_test_kernels(int *passed, int *failed);
void sx_gpu_test_engine(int *passed, int *failed, const char *shape, const char *dir);
void sx_gpu_test_refengine(int *passed, int *failed, const char *dir);
/* tests/gpu/test_gpu_sampled.c */
void sx_gpu_test_sampled(int *passed, int *failed, const char *dir);
int  sx_gpu_bench(const char *dir, const char *shapes, FILE *json);

/* Without a device the GPU engine must refuse cleanly (run where there is
 * none: CI, or tests/gpu/emu with SX_EMU_NO_DEVICE=1). */
static int test_no_device(void)
{
    sx_model m;
    sx_error err;
    sx_cuda_engine *e = (sx_cuda_engine *)&m; /* must come back NULL */
    memset(&m, 0, sizeof m);
    int rc = sx_cuda_engine_new(&m, NULL, &e, &err);
    int ok = rc == SX_EUNSUPPORTED && e == NULL && !strncmp(err.msg, "no CUDA device", 14);
    printf("%s: sx_cuda_engine_new without a device: %s (%s)\n", ok ? "ok" : "not ok",
           sx_strerror(rc), err.msg);
    return ok ? 0 : 1;
}

static int known_group(const char *g)
{
    return !strcmp(g, "mask") || !strcmp(g, "kernels") || !strcmp(g, "sampler") ||
           !strcmp(g, "refengine") || !strcmp(g, "sampled") || !strcmp(g, "engine") || !strncmp(g, "engine-", 7) ||
           !strcmp(g, "bench") || !strncmp(g, "bench=", 6);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: strux_gpu_tests [--require-gpu] [--dir DIR] [--json FILE] [GROUP...]\n"
            "groups: mask kernels sampler refengine sampled engine (tiny model) engine-0.6b\n"
            "        nodevice (alone, where there is no GPU: the engine's clear refusal)\n"
            "        bench (0.6b, 1.7b) bench=SHAPES (comma-separated)\n"
            "        default: mask kernels sampler refengine sampled engine\n"
            "--dir: where random models are written and reused (default /tmp/strux-gpu-models)\n"
            "--json: a summary {device, passed, failed, bench: [...]} for tests/gpu/run.sh\n");
}

int main(int argc, char **argv)
{
    const char *why = NULL, *dir = "/tmp/strux-gpu-models", *json_path = NULL;
    const char *groups[16];
    setvbuf(stdout, NULL, _IOLBF, 0);
    int n_groups = 0, require = 0, bench_rc = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--require-gpu"))
            require = 1;
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json_path = argv[++i];
        else if (!strcmp(argv[i], "nodevice"))
            return test_no_device();
        else if (argv[i][0] != '-' && n_groups < 16 && known_group(argv[i]))
            groups[n_groups++] = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (n_groups == 0) {
        static const char *def[] = { "mask", "kernels", "sampler", "refengine", "sampled",
                                     "engine" };
        for (int i = 0; i < 6; i++)
            groups[n_groups++] = def[i];
    }
    if (!sx_cuda_available(&why)) {
        printf("no GPU (%s): GPU tests skipped\n", why);
        printf("gpu: 0 passed, 0 failed, %d skipped\n", n_groups);
        return require ? 1 : 0;
    }
    mkdir(dir, 0755);
    FILE *json = json_path ? fopen(json_path, "w") : NULL;
    if (json_path && !json) {
        fprintf(stderr, "cannot write %s\n", json_path);
        return 2;
    }
    if (json)
        fprintf(json, "{\"bench\": [");
    for (int g = 0; g < n_groups; g++) {
        const char *name = groups[g];
        if (!strcmp(name, "mask"))
            test_apply_mask();
        else if (!strcmp(name, "kernels"))
            sx_gpu_test_kernels(&passed, &failed);
        else if (!strcmp(name, "sampler"))
            sx_gpu_test_sampler(&passed, &failed);
        else if (!strcmp(name, "refengine"))
            sx_gpu_test_refengine(&passed, &failed, dir);
        else if (!strcmp(name, "sampled"))
            sx_gpu_test_sampled(&passed, &failed, dir);
        else if (!strcmp(name, "engine"))
            sx_gpu_test_engine(&passed, &failed, "tiny", dir);
        else if (!strncmp(name, "engine-", 7))
            sx_gpu_test_engine(&passed, &failed, name + 7, dir);
        else if (!strcmp(name, "bench"))
            bench_rc |= sx_gpu_bench(dir, "0.6b,1.7b", json);
        else
            bench_rc |= sx_gpu_bench(dir, name + 6, json);
        fflush(stdout);
    }
    printf("gpu: %d passed, %d failed%s\n", passed, failed, bench_rc ? ", benchmarks FAILED" : "");
    if (json) {
        fprintf(json, "], \"passed\": %d, \"failed\": %d, \"bench_ok\": %s}\n", passed, failed,
                bench_rc ? "false" : "true");
        fclose(json);
    }
    return failed || bench_rc ? 1 : 0;
}
