// SwiGLU over [gate | up] rows: elementwise, grid-stride.
#include "kernels/sx_cuda_util.cuh"
#include "kernels/sx_kernels.h"

__global__ static void swiglu_kernel(const float *gate_up, int64_t total, int inter, uint16_t *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / inter, j = i % inter;
        float g = gate_up[t * 2 * inter + j], u = gate_up[t * 2 * inter + inter + j];
        out[i] = sx_f32_to_bf16(g / (1.0f + expf(-g)) * u);
    }
}

extern "C" int sx_cuda_swiglu(const float *gate_up, int n, int inter, uint16_t *out, void *stream)
{
    if (n < 0 || inter <= 0)
        return SX_EINVAL;
    int64_t total = (int64_t)n * inter;
    if (total == 0)
        return SX_OK;
    int64_t blocks = (total + 255) / 256;
    if (blocks > 65536)
        blocks = 65536;
    SX_LAUNCH(swiglu_kernel, (unsigned)blocks, 256, 0, stream, gate_up, total, inter, out);
    SX_LAUNCH_CHECK();
    return SX_OK;
}
