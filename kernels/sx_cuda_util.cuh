/* Device helpers shared by the kernels/ *.cu files: the launch and dynamic
 * shared-memory spellings (so that tests/gpu/emu can run the same kernels on
 * the CPU), warp and block reductions, and bf16 vector loads. */
#ifndef SX_CUDA_UTIL_CUH
#define SX_CUDA_UTIL_CUH

#include <stdint.h>

#include "kernels/cuda_check.h"
#include "common/sx_bf16.h"

#ifdef SX_CUDA_EMU
// arguments are evaluated at the launch, as CUDA does, and bound by value
#define SX_LAUNCH(kern, grid, block, smem, stream, ...)                               \
    sx_emu_launch_named(#kern, dim3(grid), dim3(block), (smem), (cudaStream_t)(stream), \
                        sx_emu_bind(kern, __VA_ARGS__))
#define SX_DYN_SMEM(T, name) T *name = (T *)sx_emu_dyn_smem()
#else
#define SX_LAUNCH(kern, grid, block, smem, stream, ...)                               \
    kern<<<(grid), (block), (smem), (cudaStream_t)(stream)>>>(__VA_ARGS__)
#define SX_DYN_SMEM(T, name)                                                          \
    extern __shared__ __align__(16) unsigned char sx_dyn_smem_[];                     \
    T *name = (T *)sx_dyn_smem_
#endif

/* After a launch: the configuration error, if any, with this file and line. */
#define SX_LAUNCH_CHECK() SX_CUDA_TRY(cudaGetLastError())

static __device__ __forceinline__ float sx_warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ __forceinline__ float sx_warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32); every thread gets the
 * same value.  red: 32 floats of shared memory, free for reuse on return. */
static __device__ __forceinline__ float sx_block_sum(float v, float *red)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = sx_warp_sum(v);
    __syncthreads();
    if (lane == 0)
        red[w] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : 0.0f;
    return sx_warp_sum(v);
}

/* N consecutive bf16 (N even, p 4-byte aligned) to floats. */
template <int N>
static __device__ __forceinline__ void sx_load_bf16(const uint16_t *p, float *out)
{
    const uint32_t *w = (const uint32_t *)p;
#pragma unroll
    for (int j = 0; j < N / 2; j++) {
        uint32_t u = w[j];
        out[2 * j] = sx_bf16_to_f32((uint16_t)(u & 0xffffu));
        out[2 * j + 1] = sx_bf16_to_f32((uint16_t)(u >> 16));
    }
}

#endif
