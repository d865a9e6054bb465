// Embedding gather: one block per token row, bf16 table to f32 or bf16.
#include "kernels/sx_cuda_util.cuh"
#include "kernels/sx_kernels.h"

template <typename T>
static __device__ __forceinline__ T embed_cast(uint16_t h);
template <>
__device__ __forceinline__ float embed_cast<float>(uint16_t h)
{
    return sx_bf16_to_f32(h);
}
template <>
__device__ __forceinline__ uint16_t embed_cast<uint16_t>(uint16_t h)
{
    return h;
}

template <typename T>
__global__ static void embed_kernel(const uint16_t *table, int vocab, int hidden,
                                    const int32_t *tokens, T *out)
{
    int32_t t = tokens[blockIdx.x];
    T *o = out + (size_t)blockIdx.x * hidden;
    bool ok = t >= 0 && t < vocab;
    const uint16_t *row = table + (ok ? (size_t)t * hidden : 0);
    for (int c = threadIdx.x; c < hidden; c += blockDim.x)
        o[c] = ok ? embed_cast<T>(row[c]) : (T)0;
}

template <typename T>
static int embed_launch(const uint16_t *table, int vocab, int hidden, const int32_t *tokens, int n,
                        T *out, void *stream)
{
    if (n < 0 || hidden <= 0 || vocab <= 0)
        return SX_EINVAL;
    if (n == 0)
        return SX_OK;
    SX_LAUNCH(embed_kernel<T>, n, 256, 0, stream, table, vocab, hidden, tokens, out);
    SX_LAUNCH_CHECK();
    return SX_OK;
}

extern "C" int sx_cuda_embed_f32(const uint16_t *table, int vocab, int hidden,
                                 const int32_t *tokens, int n, float *out, void *stream)
{
    return embed_launch(table, vocab, hidden, tokens, n, out, stream);
}

extern "C" int sx_cuda_embed_bf16(const uint16_t *table, int vocab, int hidden,
                                  const int32_t *tokens, int n, uint16_t *out, void *stream)
{
    return embed_launch(table, vocab, hidden, tokens, n, out, stream);
}
