/* int8 weights times int8 activations with AVX512-VNNI (vpdpbusd), for the
 * AMX path: one instruction multiplies 64 byte pairs and adds them in
 * fours, where widening int8 weights to f32 (the AVX-512 kernel) takes
 * three per 16 -- so decode streams int8 weights at the memory's pace.
 *
 * Weights are SX_Q8_VNNI panels: per group of 4 k, each row's 4 values as
 * q + 128 (unsigned), rows in the 32-bit lanes of two vectors.  Each
 * token's activations are written per block of 32 k as two int8 digits:
 * u = x / sx with sx = max|x| / 127 over the block, x1 = round(u),
 * x2 = round((u - x1) * 254), so x = sx * (x1 + x2 / 254) within
 * sx / 508 -- 16 bits, as close as the AMX path's two bf16 halves (one
 * int8 digit alone would cost int8 weights' quality again).  Then
 *     sum_k w x ~= scale[r] * sum_b sx[b] * (D1_b + D2_b / 254)
 *     D_b = sum_{k in b} (q + 128) xd - 128 sum_{k in b} xd
 * and the 128 * sum(xd) terms, the same for every row, are one number per
 * token (corr). */
#include "engine/cpu/cpu_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <stdlib.h>

#include "engine/cpu/cpu_xtile.h"

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))
#define INL static inline __attribute__((always_inline)) TGT

enum {
    QB = 32,        /* k per activation scale */
    TG = 4,         /* tokens per register tile: 6 accumulators each */
    XT = 12,        /* the activation tile of the AVX-512 / AMX paths */
    PF_AHEAD = 2048,
};

INL __mmask16 lanes(int n)
{
    return (__mmask16)(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1);
}

/* Token t of the packed activations (tiles of XT tokens, [k pair][Tj][2])
 * as two digits x1[kp], x2[kp] (k padded to kp with zeros) and block
 * scales sx[nb]; returns the correction 128 * sum_b sx[b] * sum(x1 + x2 / 254). */
INL float quant_token(const float *xp, int n_tok, int t, int k2, int kp, int8_t *x1, int8_t *x2,
                      float *sx)
{
    const __m512i lim = _mm512_set1_epi32(127), nlim = _mm512_set1_epi32(-127);
    float corr = 0.0f;
    for (int b = 0; b < kp / QB; b++) {
        __m512 v[2];
        sx_xtile_pairs16(xp, n_tok, XT, t, k2, b * (QB / 2), v);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1])));
        if (!(amax > 0.0f) || amax > 3.0e38f) {
            /* all zero (or not finite: no scale represents it; zero keeps
             * the sums finite rather than poisoning every row) */
            _mm256_storeu_si256((__m256i *)(x1 + b * QB), _mm256_setzero_si256());
            _mm256_storeu_si256((__m256i *)(x2 + b * QB), _mm256_setzero_si256());
            sx[b] = 0.0f;
            continue;
        }
        __m512 inv = _mm512_set1_ps(127.0f / amax);
        __m512i sum = _mm512_setzero_si512();
        __m512 sum2 = _mm512_setzero_ps();
        for (int h = 0; h < 2; h++) {
            __m512 uu = _mm512_mul_ps(v[h], inv);
            __m512i q1 = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(uu), lim), nlim);
            __m512 rest = _mm512_mul_ps(_mm512_sub_ps(uu, _mm512_cvtepi32_ps(q1)), _mm512_set1_ps(254.0f));
            __m512i q2 = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(rest), lim), nlim);
            _mm_storeu_si128((__m128i *)(x1 + b * QB + 16 * h), _mm512_cvtepi32_epi8(q1));
            _mm_storeu_si128((__m128i *)(x2 + b * QB + 16 * h), _mm512_cvtepi32_epi8(q2));
            sum = _mm512_add_epi32(sum, q1);
            sum2 = _mm512_add_ps(sum2, _mm512_cvtepi32_ps(q2));
        }
        sx[b] = amax / 127.0f;
        corr += 128.0f * sx[b] *
                ((float)_mm512_reduce_add_epi32(sum) + _mm512_reduce_add_ps(sum2) / 254.0f);
    }
    return corr;
}

/* One panel x T tokens (T <= TG): y[t*ldy + r] (+)= scale[r] * (sums - corr[t]). */
INL void tile(const uint8_t *pan, int nb, const int8_t *x1, const int8_t *x2, int kp,
              const float *sx, const float *corr, const float *scale, float *y, long ldy,
              int nrows, const int T, int add)
{
    __m512 f0[TG], f1[TG];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        f0[t] = f1[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        /* per token: the first digit's sums for rows 0-15, 16-31, then
         * the second digit's */
        __m512i a0[TG], a1[TG], c0[TG], c1[TG];
        const uint8_t *pb = pan + (size_t)b * (QB / 4) * 128;
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            a0[t] = a1[t] = c0[t] = c1[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int g = 0; g < QB / 4; g++) {
            /* int8 streams faster than the hardware prefetcher asks */
            _mm_prefetch((const char *)(pb + g * 128) + PF_AHEAD, _MM_HINT_T0);
            __m512i w0 = _mm512_loadu_si512((const void *)(pb + g * 128));
            __m512i w1 = _mm512_loadu_si512((const void *)(pb + g * 128 + 64));
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                int32_t d1, d2;
                __builtin_memcpy(&d1, x1 + (size_t)t * kp + b * QB + 4 * g, 4);
                __builtin_memcpy(&d2, x2 + (size_t)t * kp + b * QB + 4 * g, 4);
                __m512i b1 = _mm512_set1_epi32(d1), b2 = _mm512_set1_epi32(d2);
                a0[t] = _mm512_dpbusd_epi32(a0[t], w0, b1);
                a1[t] = _mm512_dpbusd_epi32(a1[t], w1, b1);
                c0[t] = _mm512_dpbusd_epi32(c0[t], w0, b2);
                c1[t] = _mm512_dpbusd_epi32(c1[t], w1, b2);
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            float sv = sx[(size_t)t * nb + b];
            __m512 s = _mm512_set1_ps(sv), s2 = _mm512_set1_ps(sv / 254.0f);
            f0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a0[t]), s, f0[t]);
            f1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a1[t]), s, f1[t]);
            f0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c0[t]), s2, f0[t]);
            f1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c1[t]), s2, f1[t]);
        }
    }
    __m512 s0 = _mm512_loadu_ps(scale), s1 = _mm512_loadu_ps(scale + 16);
    __mmask16 m0 = lanes(nrows), m1 = lanes(nrows - 16);
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) {
        __m512 c = _mm512_set1_ps(corr[t]);
        __m512 v0 = _mm512_mul_ps(_mm512_sub_ps(f0[t], c), s0);
        __m512 v1 = _mm512_mul_ps(_mm512_sub_ps(f1[t], c), s1);
        float *yt = y + t * ldy;
        if (add) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, yt));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, yt + 16));
        }
        _mm512_mask_storeu_ps(yt, m0, v0);
        _mm512_mask_storeu_ps(yt + 16, m1, v1);
    }
}

#define TILE_CASE(N)                                                                      \
    case N:                                                                               \
        tile(pan, nb, x1, x2, kp, sx, corr, scale, y, ldy, nrows, N, add);                \
        break

TGT static void tile_any(const uint8_t *pan, int nb, const int8_t *x1, const int8_t *x2, int kp,
                         const float *sx, const float *corr, const float *scale, float *y,
                         long ldy, int nrows, int T, int add)
{
    switch (T) {
    TILE_CASE(1); TILE_CASE(2); TILE_CASE(3);
    default: tile(pan, nb, x1, x2, kp, sx, corr, scale, y, ldy, nrows, TG, add); break;
    }
}

TGT void sx_vnni_mm_q8(const int8_t *wp, const float *scale, int k, const float *xp, int n_tok,
                       float *y, long ldy, int r0, int r1, int accumulate)
{
    int k2 = (k + 1) / 2, kp = (k + 31) & ~31, nb = kp / QB;
    /* the quantised tokens: all of them on the heap, so every panel is
     * read once; decode-sized inputs (or no memory) in chunks that fit
     * on the stack -- at least one token of the largest k a config may
     * give (intermediate_size <= 2^18, model_config.c) */
    enum { STACK_Q = 1 << 18 };
    int8_t xq_s[2 * STACK_Q];
    float sx_s[STACK_Q / QB], corr_s[STACK_Q / QB];
    int8_t *xq = NULL;
    float *sx = NULL, *corr = NULL;
    int chunk = STACK_Q / kp;
    if (chunk > TG)
        chunk -= chunk % TG;
    if (chunk < n_tok) {
        xq = malloc((size_t)n_tok * 2 * kp);
        sx = malloc((size_t)n_tok * nb * sizeof *sx);
        corr = malloc((size_t)n_tok * sizeof *corr);
    }
    if (xq && sx && corr) {
        chunk = n_tok;
    } else {
        free(xq);
        free(sx);
        free(corr);
        xq = xq_s;
        sx = sx_s;
        corr = corr_s;
    }
    const uint8_t *w = (const uint8_t *)wp;
    for (int c0 = 0; c0 < n_tok; c0 += chunk) {
        int c1 = c0 + chunk < n_tok ? c0 + chunk : n_tok;
        for (int t = c0; t < c1; t++)
            corr[t - c0] = quant_token(xp, n_tok, t, k2, kp, xq + (size_t)(t - c0) * kp,
                                       xq + (size_t)(chunk + t - c0) * kp,
                                       sx + (size_t)(t - c0) * nb);
        for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
            const uint8_t *pan = w + (size_t)p0 * kp;
            int nrows = r1 - p0 < SX_PANEL ? r1 - p0 : SX_PANEL;
            for (int t0 = c0; t0 < c1; t0 += TG) {
                int T = c1 - t0 < TG ? c1 - t0 : TG;
                tile_any(pan, nb, xq + (size_t)(t0 - c0) * kp, xq + (size_t)(chunk + t0 - c0) * kp,
                         kp, sx + (size_t)(t0 - c0) * nb,
                         corr + (t0 - c0), scale + p0, y + (long)t0 * ldy + p0, ldy, nrows, T,
                         accumulate);
            }
        }
    }
    if (xq != xq_s) {
        free(xq);
        free(sx);
        free(corr);
    }
}
#endif
