/* bf16-activation matrix products through AVX512-BF16 dot products
 * (vdpbf16ps), the engine's opt-in fast prefill (SX_ACT_BF16).
 *
 * The bf16 weight panels already hold, per k pair, the 32 rows' (even,
 * odd) values in the 32-bit lanes of two vectors -- the operand layout of
 * vdpbf16ps.  Rounding each activation pair to bf16 and broadcasting it
 * turns the AVX-512 kernel's four FMAs and four widenings per k pair and
 * token into two dot products: about half the instructions, at the cost of
 * rounding activations to bf16 (8 mantissa bits, as bf16 frameworks do), so
 * results differ from the f32 paths by ~2^-9 of each product's size.
 * Fewer than MIN_TOK tokens (decode) stream weights at the memory's pace
 * either way: those stay on the f32 AVX-512 kernel. */
#include "engine/cpu/cpu_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <stdlib.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma")))
#define INL static inline __attribute__((always_inline)) TGT

/* TT is the AVX-512 path's tile height (the packed activations' layout) */
enum { TT = 12, MIN_TOK = 12, KSLICE = 256, X_BUDGET = 1 << 19, PF_AHEAD = 2048 };

INL __mmask16 lanes(int n)
{
    return (__mmask16)(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1);
}

/* one panel x one tile of T tokens: xb holds the tile's [k pair][T] bf16
 * pairs; y points at the panel's first row of the tile's first token */
INL void tile_dp(const uint16_t *pan, int k2, const uint32_t *xb, float *y, long ldy, int nrows,
                 const int T, int add, int pf)
{
    __m512 a0[TT], a1[TT];
#pragma GCC unroll 12
    for (int t = 0; t < T; t++)
        a0[t] = a1[t] = _mm512_setzero_ps();
    for (int kp = 0; kp < k2; kp++) {
        if (pf) {
            _mm_prefetch((const char *)(pan + (size_t)kp * 64) + PF_AHEAD, _MM_HINT_T0);
            _mm_prefetch((const char *)(pan + (size_t)kp * 64) + PF_AHEAD + 64, _MM_HINT_T0);
        }
        __m512bh w0 = (__m512bh)_mm512_loadu_si512((const void *)(pan + (size_t)kp * 64));
        __m512bh w1 = (__m512bh)_mm512_loadu_si512((const void *)(pan + (size_t)kp * 64 + 32));
        const uint32_t *xk = xb + (size_t)kp * T;
#pragma GCC unroll 12
        for (int t = 0; t < T; t++) {
            __m512bh xv = (__m512bh)_mm512_set1_epi32((int)xk[t]);
            a0[t] = _mm512_dpbf16_ps(a0[t], w0, xv);
            a1[t] = _mm512_dpbf16_ps(a1[t], w1, xv);
        }
    }
    __mmask16 m0 = lanes(nrows), m1 = lanes(nrows - 16);
#pragma GCC unroll 12
    for (int t = 0; t < T; t++) {
        float *yt = y + t * ldy;
        __m512 v0 = a0[t], v1 = a1[t];
        if (add) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, yt));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, yt + 16));
        }
        _mm512_mask_storeu_ps(yt, m0, v0);
        _mm512_mask_storeu_ps(yt + 16, m1, v1);
    }
}

#define DP_CASE(N) case N: tile_dp(pan, k2, xb, y, ldy, nrows, N, add, pf); break

TGT static void tile_dp_any(const uint16_t *pan, int k2, const uint32_t *xb, float *y, long ldy,
                            int nrows, int T, int add, int pf)
{
    switch (T) {
    DP_CASE(1); DP_CASE(2); DP_CASE(3); DP_CASE(4); DP_CASE(5); DP_CASE(6);
    DP_CASE(7); DP_CASE(8); DP_CASE(9); DP_CASE(10); DP_CASE(11);
    default: tile_dp(pan, k2, xb, y, ldy, nrows, TT, add, pf); break;
    }
}

/* The packed f32 activations are tiles of [k pair][Tj][2] floats laid end
 * to end, so rounding them element by element gives the same layout in
 * bf16: [k pair][Tj] pairs, the even k in the low half as in the panels. */
TGT static void round_to_bf16(const float *x, size_t n, uint16_t *out)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
        _mm512_storeu_si512((void *)(out + i), (__m512i)b);
    }
    for (; i < n; i++)
        out[i] = sx_f32_to_bf16(x[i]);
}

TGT void sx_dpbf16_mm_bf16(const uint16_t *wp, int k, const float *xp, int n_tok, float *y,
                           long ldy, int r0, int r1, int accumulate)
{
    int k2 = (k + 1) / 2;
    /* tokens per chunk (whole tiles): a chunk's bf16 activations stay in L2 */
    int tc = X_BUDGET / (k2 * 4) / TT * TT;
    if (tc < TT)
        tc = TT;
    if (tc > n_tok)
        tc = n_tok;
    uint32_t *xb = n_tok >= MIN_TOK ? malloc((size_t)tc * k2 * sizeof *xb) : NULL;
    if (!xb) { /* decode-sized, or no memory: the f32 kernel */
        sx_avx512_mm_bf16(wp, k, xp, n_tok, y, ldy, r0, r1, accumulate);
        return;
    }
    size_t pstride = (size_t)SX_PANEL * 2 * k2;
    for (int c0 = 0; c0 < n_tok; c0 += tc) {
        int c1 = c0 + tc < n_tok ? c0 + tc : n_tok;
        /* c0 is a multiple of TT, so the chunk starts a tile */
        round_to_bf16(xp + (size_t)c0 * 2 * k2, (size_t)(c1 - c0) * 2 * k2, (uint16_t *)xb);
        for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
            const uint16_t *pan = wp + (size_t)(p0 / SX_PANEL) * pstride;
            int nrows = r1 - p0 < SX_PANEL ? r1 - p0 : SX_PANEL;
            /* k in slices: a panel's slice stays in L1 while the chunk's
             * tiles pass it */
            for (int s0 = 0; s0 < k2; s0 += KSLICE) {
                int ns = k2 - s0 < KSLICE ? k2 - s0 : KSLICE;
                for (int t0 = c0; t0 < c1; t0 += TT) {
                    int T = n_tok - t0 < TT ? n_tok - t0 : TT;
                    tile_dp_any(pan + (size_t)s0 * 2 * SX_PANEL, ns,
                                xb + (size_t)(t0 - c0) * k2 + (size_t)s0 * T,
                                y + t0 * ldy + p0, ldy, nrows, T, s0 ? 1 : accumulate, t0 == c0);
                }
            }
        }
    }
    free(xb);
}

int sx_dpbf16_usable(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16") &&
           __builtin_cpu_supports("fma");
}

#else
void sx_dpbf16_mm_bf16(const uint16_t *wp, int k, const float *xp, int n_tok, float *y,
                       long ldy, int r0, int r1, int accumulate)
{
    (void)wp; (void)k; (void)xp; (void)n_tok; (void)y; (void)ldy; (void)r0; (void)r1;
    (void)accumulate;
}

int sx_dpbf16_usable(void)
{
    return 0;
}
#endif
