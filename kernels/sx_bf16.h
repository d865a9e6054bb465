/* sx_bf16: bfloat16 <-> float for the kernels and their CPU references.
 *
 * A bf16 value is carried as its uint16_t bit pattern (the top half of an
 * f32), so that plain C, nvcc and the CPU emulator of tests/gpu/emu all
 * share one definition and round identically: to nearest even, NaN kept
 * quiet, overflow to infinity.  Header-only; nothing here fails. */
#ifndef SX_BF16_H
#define SX_BF16_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SX_BF_HD __host__ __device__
#else
#define SX_BF_HD
#endif

static inline SX_BF_HD float sx_bf2f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline SX_BF_HD uint16_t sx_f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

#endif
