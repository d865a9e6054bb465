// RMSNorm fused with the residual add: one block per row, f32 statistics.
#include "kernels/sx_cuda_util.cuh"
#include "kernels/sx_kernels.h"

// rows == NULL: row i is input row i.  write_back: res[row] = x + delta.
__global__ static void add_rmsnorm_kernel(float *res, const float *delta, const int32_t *rows,
                                          int write_back, const float *w, float eps, int dim,
                                          uint16_t *out)
{
    __shared__ float red[32];
    size_t r = rows ? (size_t)rows[blockIdx.x] : blockIdx.x;
    float *x = res + r * dim;
    const float *dl = delta ? delta + r * dim : NULL;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        float v = dl ? x[c] + dl[c] : x[c];
        if (write_back)
            x[c] = v;
        ss += v * v;
    }
    ss = sx_block_sum(ss, red);
    float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    uint16_t *o = out + (size_t)blockIdx.x * dim;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        // each thread re-reads only the elements it wrote itself
        float v = write_back || !dl ? x[c] : x[c] + dl[c];
        o[c] = sx_f32_to_bf16(v * inv * w[c]);
    }
}

static int launch(float *x, const float *delta, const int32_t *rows, int write_back, int n,
                  const float *w, float eps, int dim, uint16_t *out, void *stream)
{
    if (n < 0 || dim <= 0)
        return SX_EINVAL;
    if (n == 0)
        return SX_OK;
    int threads = dim >= 1024 ? 256 : dim >= 256 ? 128 : 64;
    SX_LAUNCH(add_rmsnorm_kernel, n, threads, 0, stream, x, delta, rows, write_back, w, eps, dim,
              out);
    SX_LAUNCH_CHECK();
    return SX_OK;
}

extern "C" int sx_cuda_add_rmsnorm(float *res, const float *delta, const float *w, float eps, int n,
                                   int dim, uint16_t *out, void *stream)
{
    return launch(res, delta, NULL, 1, n, w, eps, dim, out, stream);
}

extern "C" int sx_cuda_rmsnorm_rows(const float *x, const float *delta, const int32_t *rows,
                                    int n_out, const float *w, float eps, int dim, uint16_t *out,
                                    void *stream)
{
    // the kernel never writes x when write_back is 0
    return launch((float *)x, delta, rows, 0, n_out, w, eps, dim, out, stream);
}
