// Applies the grammar bitmask to logits: one thread per token.
#include <math.h>

#include "kernels/cuda_check.h"
#include "kernels/sx_cuda_util.cuh"

extern "C" {
#include "kernels/sx_kernels.h"
}

__global__ static void apply_mask_kernel(float *logits, const uint32_t *mask, int n_vocab, int words)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (t >= n_vocab)
        return;
    uint32_t w = mask[(long)r * words + t / 32];
    if (!((w >> (t % 32)) & 1u))
        logits[(long)r * n_vocab + t] = -INFINITY;
}

extern "C" int sx_cuda_apply_mask(float *d_logits, const uint32_t *d_mask, int n_rows, int n_vocab,
                                  void *stream)
{
    if (n_rows <= 0 || n_vocab <= 0)
        return SX_EINVAL;
    dim3 grid((n_vocab + 255) / 256, n_rows);
    SX_LAUNCH(apply_mask_kernel, grid, 256, 0, stream, d_logits, d_mask, n_vocab,
              (n_vocab + 31) / 32);
    SX_CUDA_TRY(cudaGetLastError());
    return SX_OK;
}

extern "C" int sx_cuda_available(const char **why)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (why)
            *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
        return 0;
    }
    return 1;
}
