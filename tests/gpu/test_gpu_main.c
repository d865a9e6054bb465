/* GPU parity tests: each kernel against its CPU reference.  Runs on a GPU
 * machine (tests/gpu/run.sh); without a GPU it says so and exits 0 with
 * every test skipped, so CI only proves that it compiles and links. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    const char *why = NULL;
    if (!sx_cuda_available(&why)) {
        printf("no GPU (%s): GPU tests skipped\n", why);
        printf("gpu: 0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    test_apply_mask();
    printf("gpu: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
