/* sx_bf16: bfloat16 <-> float, the one definition every part of strux uses
 * (the CPU engine, the model loader, the CUDA kernels and their CPU
 * references, the emulator of tests/gpu/emu).
 *
 * A bf16 value is carried as its uint16_t bit pattern: the top half of an
 * IEEE f32.  f32 -> bf16 rounds to nearest, ties to even; a NaN stays a NaN
 * (its top half with the quiet bit set, so a NaN whose payload lies only in
 * the low half does not become infinity); values past the largest bf16
 * round to infinity.  bf16 -> f32 is exact.  Header-only, usable from C and
 * from nvcc (host and device); nothing here fails. */
#ifndef SX_COMMON_BF16_H
#define SX_COMMON_BF16_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SX_BF16_HD __host__ __device__
#else
#define SX_BF16_HD
#endif

static inline SX_BF16_HD float sx_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline SX_BF16_HD uint16_t sx_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    /* + half an ulp of bf16, less one unless that would round an odd
     * value's tie down: ties go to the even neighbour */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

#endif
