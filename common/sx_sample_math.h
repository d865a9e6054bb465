/* sx_sample_math: the arithmetic that the CPU sampler (engine/sampler/sampler.c) and
 * the CUDA sampler (kernels/sampler.cu) must share bit for bit, so that with
 * the same logits and the same (seed, draw index) both pick the same token.
 *
 * Header-only: every function is `static inline`, compiled for host and
 * device.  Nothing here allocates or fails.
 *
 * Floating-point contraction must stay off on both sides: C11 mode (-std=c11)
 * turns it off for gcc, and the device path uses the _rn intrinsics, which
 * nvcc never fuses.  A fused multiply-add would change the last bit of a
 * weight and with it, rarely, the drawn token. */
#ifndef SX_SAMPLE_MATH_H
#define SX_SAMPLE_MATH_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SX_HD __host__ __device__
#else
#define SX_HD __attribute__((always_inline))
#endif

#if defined(__CUDA_ARCH__)
#define SX_FMUL(a, b) __fmul_rn((a), (b))
#define SX_FADD(a, b) __fadd_rn((a), (b))
#define SX_FSUB(a, b) __fsub_rn((a), (b))
#else
#define SX_FMUL(a, b) ((a) * (b))
#define SX_FADD(a, b) ((a) + (b))
#define SX_FSUB(a, b) ((a) - (b))
#endif

/* Counter-based RNG.  A draw is a pure function of (seed, index): the
 * splitmix64 finaliser applied to the seed, then to a Weyl step of the index
 * from there.  No state is carried between draws, so a sequence's draws do
 * not depend on which other sequences share its batch, and rolling back
 * replays the same numbers.  The sampler uses as index the number of tokens
 * the sequence has accepted so far. */
static inline SX_HD uint64_t sx_mix64(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z;
}

static inline SX_HD uint64_t sx_rng_u64(uint64_t seed, uint64_t index)
{
    return sx_mix64(sx_mix64(seed) + (index + 1) * 0x9E3779B97F4A7C15ull);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline SX_HD double sx_rng_uniform(uint64_t seed, uint64_t index)
{
    return (double)(sx_rng_u64(seed, index) >> 11) * (1.0 / 9007199254740992.0);
}

static inline SX_HD uint32_t sx_f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline SX_HD float sx_u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Order-preserving key of a logit: a > b as floats iff key(a) > key(b) as
 * unsigned.  -0 is folded into +0 so that equal logits are equal keys (ties
 * are then broken by token id, lowest first). */
static inline SX_HD uint32_t sx_fkey(float f)
{
    uint32_t u = sx_f2u(f == 0.0f ? 0.0f : f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static inline SX_HD float sx_kfloat(uint32_t k)
{
    return sx_u2f((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k);
}

/* e^x for x <= 0 (and -inf), written out so that host and device agree to
 * the bit (libm's expf and CUDA's expf differ by an ulp here and there) and
 * so that the CPU loops over 151,936 logits vectorise.  Cody-Waite reduction
 * x = n ln2 + r, |r| <= ln2/2, then the degree-7 Taylor polynomial of e^r
 * (truncation error < 5e-9 relative), scaled by 2^n through the exponent
 * bits.  Results below FLT_MIN (x < -87.33) flush to 0: such a weight is
 * below 1e-38 of the best token's and cannot matter. */
static inline SX_HD float sx_expneg(float x)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    /* selects through bit masks rather than branches, so that gcc -O2
     * if-converts and vectorises the loops that call this */
    uint32_t keep = 0u - (uint32_t)(x >= -87.0f); /* all ones, or 0 for tiny/-inf/NaN */
    float xc = sx_u2f((sx_f2u(x) & keep) | (sx_f2u(-87.0f) & ~keep));
    float t = SX_FADD(SX_FMUL(xc, 1.44269504088896341f), magic);
    float kf = SX_FSUB(t, magic);
    int32_t n = (int32_t)(sx_f2u(t) - sx_f2u(magic));
    float r = SX_FSUB(xc, SX_FMUL(kf, 0.693145751953125f));  /* ln2 high part: exact product */
    r = SX_FSUB(r, SX_FMUL(kf, 1.428606765330187e-06f));     /* ln2 low part */
    float p = 1.0f / 5040.0f;
    p = SX_FADD(SX_FMUL(p, r), 1.0f / 720.0f);
    p = SX_FADD(SX_FMUL(p, r), 1.0f / 120.0f);
    p = SX_FADD(SX_FMUL(p, r), 1.0f / 24.0f);
    p = SX_FADD(SX_FMUL(p, r), 1.0f / 6.0f);
    p = SX_FADD(SX_FMUL(p, r), 0.5f);
    p = SX_FADD(SX_FMUL(p, r), 1.0f);
    p = SX_FADD(SX_FMUL(p, r), 1.0f);
    float y = SX_FMUL(p, sx_u2f((uint32_t)(n + 127) << 23));
    return sx_u2f(sx_f2u(y) & keep);
}

/* The sampling weight of a logit l given the row maximum m and the inverse
 * temperature inv_t = 1.0f / T (one IEEE float division, the same on both
 * sides): proportional to softmax(l / T), exactly 1 for the best token. */
static inline SX_HD float sx_weight(float l, float m, float inv_t)
{
    return sx_expneg(SX_FMUL(SX_FSUB(l, m), inv_t));
}

#endif
