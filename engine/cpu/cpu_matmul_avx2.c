/* AVX2 + FMA kernels: the same panel scheme as the AVX-512 path at half
 * width; a tile covers half a panel (16 rows in two vectors) so it fits in
 * 16 ymm registers.  int8 and q4 multiply bytes (int8 activations per
 * block of 32 k), the int8 weights in SX_Q8_QUADS panels. */
#include "engine/cpu/cpu_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "engine/cpu/cpu_q4.h"
#include "engine/cpu/cpu_q8.h"

#define TGT __attribute__((target("avx2,fma,f16c")))
#define INL static inline __attribute__((always_inline)) TGT

/* Pins v to a register at this point: the compiler may not move work
 * across it.  tile_q4_m1 uses it so that GCC neither turns the running
 * int16 sums into addition trees over the unrolled loops (32 products
 * alive at once, spilled to the stack) nor hoists every load of a group
 * ahead of its use; slice_bf16 so that its sums stay in registers. */
#define PIN(v) __asm__("" : "+x"(v))

enum { TT = 4, KSLICE = 128, X_BUDGET = 1 << 20 };

static int token_chunk(int n_tok, int k)
{
    if (n_tok <= TT)
        return n_tok;
    int c = X_BUDGET / (k * 4) / TT * TT;
    return c < TT ? TT : c;
}

/* 8 lanes of a tile to y, only the first n (rows past the matrix end are
 * padding) */
INL void store8(float *y, __m256 v, int n, int add)
{
    if (n >= 8) {
        if (add)
            v = _mm256_add_ps(v, _mm256_loadu_ps(y));
        _mm256_storeu_ps(y, v);
        return;
    }
    float tmp[8];
    _mm256_storeu_ps(tmp, v);
    for (int i = 0; i < n; i++)
        y[i] = add ? y[i] + tmp[i] : tmp[i];
}

/* half a panel (16 rows, lanes of two vectors) x one tile of T tokens */
INL void tile_bf16(const uint16_t *pan, int half, int k2, const float *xt, float *y, long ldy,
                   int nrows, const int T, int add)
{
    __m256 a0[TT], a1[TT];
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        a0[t] = a1[t] = _mm256_setzero_ps();
    const uint16_t *ph = pan + half * 32;
    for (int kp = 0; kp < k2; kp++) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)(ph + (size_t)kp * 64));
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(ph + (size_t)kp * 64 + 16));
        __m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(v0, 16));
        __m256 e1 = _mm256_castsi256_ps(_mm256_slli_epi32(v1, 16));
        __m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(v0, hi));
        __m256 o1 = _mm256_castsi256_ps(_mm256_and_si256(v1, hi));
        const float *xk = xt + (size_t)kp * 2 * T;
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            __m256 xa = _mm256_set1_ps(xk[2 * t]);
            __m256 xb = _mm256_set1_ps(xk[2 * t + 1]);
            a0[t] = _mm256_fmadd_ps(e0, xa, a0[t]);
            a1[t] = _mm256_fmadd_ps(e1, xa, a1[t]);
            a0[t] = _mm256_fmadd_ps(o0, xb, a0[t]);
            a1[t] = _mm256_fmadd_ps(o1, xb, a1[t]);
        }
    }
    int n0 = nrows - half * 16;
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) {
        store8(y + t * ldy + half * 16, a0[t], n0, add);
        store8(y + t * ldy + half * 16 + 8, a1[t], n0 - 8, add);
    }
}

/* decode's software prefetch distance in bytes (0: none) for bf16 panels,
 * which one token streams at 128 bytes per k pair */
#ifndef SX_BF16_AVX2_PF
#define SX_BF16_AVX2_PF 1024
#endif

/* One KSLICE slice [s0, s1) of a whole panel (both halves in one
 * sequential pass) for a tile of T <= 3 tokens: 4 T running sums, one per
 * row vector and token, each lane's FMAs those of tile_bf16 in the same
 * order from zero, the slice's sum added to y as store8 adds it.  The odd
 * elements are unpacked by two shifts rather than a mask to keep a
 * register free. */
INL void slice_bf16(const uint16_t *pan, int s0, int s1, const float *xt, const int T, float *y,
                    long ldy, int nrows, int add)
{
    __m256 a[3][4];
#pragma GCC unroll 4
    for (int u = 0; u < T; u++)
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
            a[u][q] = _mm256_setzero_ps();
    for (int kp = s0; kp < s1; kp++) {
        const uint16_t *pk = pan + (size_t)kp * 64;
        const float *xk = xt + (size_t)kp * 2 * T;
#if SX_BF16_AVX2_PF
        _mm_prefetch((const char *)pk + SX_BF16_AVX2_PF, _MM_HINT_T0);
        _mm_prefetch((const char *)pk + SX_BF16_AVX2_PF + 64, _MM_HINT_T0);
#endif
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(pk + 16 * q));
            __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
            __m256 o = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(v, 16), 16));
            if (T == 3)   /* broadcast again per vector: 12 sums leave no room to keep 6 */
                __asm__("" : "+r"(xk));
#pragma GCC unroll 3
            for (int u = 0; u < T; u++) {
                a[u][q] = _mm256_fmadd_ps(e, _mm256_set1_ps(xk[2 * u]), a[u][q]);
                a[u][q] = _mm256_fmadd_ps(o, _mm256_set1_ps(xk[2 * u + 1]), a[u][q]);
                PIN(a[u][q]);
            }
        }
    }
#pragma GCC unroll 3
    for (int u = 0; u < T; u++)
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
            store8(y + u * ldy + 8 * q, a[u][q], nrows - 8 * q, add);
}

/* tile_bf16 for a tile of T <= 3 tokens alone in its chunk (decode, small
 * batches) and a whole panel: per slice one sequential pass over both
 * halves with 4 T independent sums, the next lines prefetched, instead of
 * two strided passes with 2 T sums each (T = 1: 2 chains of dependent
 * FMAs, the panel read as every other line).  The same slices and per-lane
 * order as tile_bf16, so the same bits whatever the batch. */
INL void tile_bf16_pass(const uint16_t *pan, int k2, const float *xt, float *y, long ldy,
                        int nrows, const int T, int accumulate)
{
    for (int s0 = 0; s0 < k2; s0 += KSLICE) {
        int s1 = k2 - s0 < KSLICE ? k2 : s0 + KSLICE, add = s0 ? 1 : accumulate;
        slice_bf16(pan, s0, s1, xt, T, y, ldy, nrows, add);
    }
}

#define BF16_CASE(N) case N: tile_bf16(pan, h, k2, xt, y, ldy, nrows, N, add); break

TGT static void tile_bf16_any(const uint16_t *pan, int k2, const float *xt, float *y, long ldy,
                              int nrows, int T, int add)
{
    for (int h = 0; h < 2 && h * 16 < nrows; h++)
        switch (T) {
        BF16_CASE(1); BF16_CASE(2); BF16_CASE(3);
        default: tile_bf16(pan, h, k2, xt, y, ldy, nrows, TT, add); break;
        }
}

TGT static void mm_bf16(const uint16_t *wp, int k, const float *xp, int n_tok, float *y,
                        long ldy, int r0, int r1, int accumulate)
{
    int k2 = (k + 1) / 2;
    size_t pstride = (size_t)SX_PANEL * 2 * k2;
    int tc = token_chunk(n_tok, k);
    /* k in the same slices whatever n_tok, so a token's sums do not
     * depend on its batch (each slice's sums are added to y); several
     * tiles share a panel slice in L1 */
    int ks = KSLICE;
    for (int c0 = 0; c0 < n_tok; c0 += tc) {
        int c1 = c0 + tc < n_tok ? c0 + tc : n_tok;
        for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
            const uint16_t *pan = wp + (size_t)(p0 / SX_PANEL) * pstride;
            int nrows = r1 - p0 < SX_PANEL ? r1 - p0 : SX_PANEL;
            /* a chunk of one tile of up to 3 tokens (decode, small batches)
             * walks the whole panel in one pass */
            if (c1 - c0 < TT) {
                const float *xt = xp + (size_t)c0 * 2 * k2;
                float *yt = y + c0 * ldy + p0;
                switch (c1 - c0) {
                case 1: tile_bf16_pass(pan, k2, xt, yt, ldy, nrows, 1, accumulate); break;
                case 2: tile_bf16_pass(pan, k2, xt, yt, ldy, nrows, 2, accumulate); break;
                default: tile_bf16_pass(pan, k2, xt, yt, ldy, nrows, 3, accumulate); break;
                }
                continue;
            }
            for (int s0 = 0; s0 < k2; s0 += ks) {
                int ns = k2 - s0 < ks ? k2 - s0 : ks;
                for (int t0 = c0; t0 < c1; t0 += TT) {
                    int T = n_tok - t0 < TT ? n_tok - t0 : TT;
                    tile_bf16_any(pan + (size_t)s0 * 2 * SX_PANEL, ns,
                                  xp + (size_t)t0 * 2 * k2 + (size_t)s0 * 2 * T,
                                  y + t0 * ldy + p0, ldy, nrows, T, s0 ? 1 : accumulate);
                }
            }
        }
    }
}

/* sx_q4_quant_x and sx_q8_quant_x (nb blocks; s8 NULL: not wanted) with
 * AVX2's rounding (to nearest even, as nearbyintf).  A token alone in its
 * activation tile (decode) has its k contiguous, so its blocks are read in
 * place; others gather their pairs. */
INL void xquant(const float *xp, int n_tok, int tile, int t, int k, int nb, int8_t *xq,
                float *sx, int32_t *s8)
{
    const __m256i lim = _mm256_set1_epi32(127), nlim = _mm256_set1_epi32(-127);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    int k2 = (k + 1) / 2, j = t / tile, u = t % tile;
    int tj = n_tok - j * tile < tile ? n_tok - j * tile : tile;
    const float *xt = xp + (size_t)j * tile * 2 * k2 + 2 * u;
    for (int b = 0; b < nb; b++) {
        float vb[SX_Q4_XBLOCK], m[8];
        const float *v = vb;
        if (tj == 1 && (b + 1) * SX_Q4_XBLOCK <= 2 * k2) {
            v = xt + (size_t)b * SX_Q4_XBLOCK;
        } else {
            for (int i = 0; i < SX_Q4_XBLOCK; i++) {
                int kk = b * SX_Q4_XBLOCK + i;
                vb[i] = kk < 2 * k2 ? xt[(size_t)(kk / 2) * 2 * tj + (kk & 1)] : 0.0f;
            }
        }
        __m256 mx = _mm256_setzero_ps();
        for (int i = 0; i < SX_Q4_XBLOCK; i += 8)
            mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(v + i), absm));
        _mm256_storeu_ps(m, mx);
        float amax = 0.0f;
        for (int i = 0; i < 8; i++)
            amax = m[i] > amax ? m[i] : amax;
        int8_t *xb = xq + b * SX_Q4_XBLOCK;
        if (!(amax > 0.0f) || !(amax <= FLT_MAX)) {
            memset(xb, 0, SX_Q4_XBLOCK);
            sx[b] = 0.0f;
            if (s8)
                s8[b] = 0;
            continue;
        }
        __m256 inv = _mm256_set1_ps(127.0f / amax);
        __m256i q[4];
        for (int i = 0; i < 4; i++) {
            q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + 8 * i), inv));
            q[i] = _mm256_max_epi32(_mm256_min_epi32(q[i], lim), nlim);
        }
        /* within +-127 the saturating packs are exact; they interleave
         * 4-value runs across the 128-bit lanes, which the permute undoes */
        __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
                                       _mm256_packs_epi32(q[2], q[3]));
        _mm256_storeu_si256((__m256i *)xb, _mm256_permutevar8x32_epi32(w, order));
        sx[b] = amax / 127.0f;
        if (!s8)
            continue;
        __m256i sum = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
        s8[b] = 8 * _mm_cvtsi128_si32(s4);
    }
}

TGT static void q4_xquant(const float *xp, int n_tok, int tile, int t, int k, int8_t *xq,
                          float *sx, int32_t *s8)
{
    xquant(xp, n_tok, tile, t, k, sx_q4_kpad(k) / SX_Q4_XBLOCK, xq, sx, s8);
}

TGT static void q8_xquant(const float *xp, int n_tok, int tile, int t, int k, int8_t *xq,
                          float *sx)
{
    xquant(xp, n_tok, tile, t, k, sx_q8_kpad(k) / SX_Q8_XBLOCK, xq, sx, NULL);
}

/* NQ quarters of a panel (8 rows each, from quarter q0) x T tokens, NQ * T
 * <= 4 so the int16 block sums and the f32 sums fit in registers; one
 * token takes the whole panel in one pass.  vpmaddubsw's int16 pair sums
 * added over a block of 32 k stay within 8 * 2 * 15 * 127 = 30,480. */
INL void tile_q4(const uint8_t *pan, int kp, const int8_t *xq, const float *sx,
                 const int32_t *s8, float *y, long ldy, int nrows, int q0, const int NQ,
                 const int T, int add)
{
    enum { SUB = SX_Q4_XBLOCK / 8, BPG = SX_Q4_GROUP / SX_Q4_XBLOCK };
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    int nb = kp / SX_Q4_XBLOCK, ng = kp / SX_Q4_GROUP;
    __m256 f[4];
#pragma GCC unroll 4
    for (int i = 0; i < NQ * T; i++)
        f[i] = _mm256_setzero_ps();
    for (int g = 0; g < ng; g++) {
        const uint8_t *gb = pan + (size_t)g * SX_Q4_GROUP_BYTES;
        __m256 w[4];
#pragma GCC unroll 4
        for (int q = 0; q < NQ; q++)
            w[q] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(gb + 16 * (q0 + q))));
        for (int bb = 0; bb < BPG; bb++) {
            int b = g * BPG + bb;
            __m256i a[4];
#pragma GCC unroll 4
            for (int i = 0; i < NQ * T; i++)
                a[i] = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int s = 0; s < SUB; s++) {
                const uint8_t *pd = gb + 2 * SX_PANEL + (size_t)(bb * SUB + s) * 4 * SX_PANEL;
                __m256i l[4], h[4];
#pragma GCC unroll 4
                for (int q = 0; q < NQ; q++) {
                    __m256i v = _mm256_loadu_si256((const __m256i *)(pd + 32 * (q0 + q)));
                    l[q] = _mm256_and_si256(v, m4);
                    h[q] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                }
#pragma GCC unroll 4
                for (int t = 0; t < T; t++) {
                    int32_t dl, dh;
                    const int8_t *xb = xq + (size_t)t * kp + b * SX_Q4_XBLOCK + 8 * s;
                    memcpy(&dl, xb, 4);
                    memcpy(&dh, xb + 4, 4);
                    __m256i xl = _mm256_set1_epi32(dl), xh = _mm256_set1_epi32(dh);
#pragma GCC unroll 4
                    for (int q = 0; q < NQ; q++)
                        a[t * NQ + q] = _mm256_add_epi16(
                            a[t * NQ + q], _mm256_add_epi16(_mm256_maddubs_epi16(l[q], xl),
                                                            _mm256_maddubs_epi16(h[q], xh)));
                }
            }
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                __m256i c = _mm256_set1_epi32(-s8[(size_t)t * nb + b]);
                __m256 xs = _mm256_set1_ps(sx[(size_t)t * nb + b]);
#pragma GCC unroll 4
                for (int q = 0; q < NQ; q++) {
                    __m256i d = _mm256_add_epi32(_mm256_madd_epi16(a[t * NQ + q], ones), c);
                    f[t * NQ + q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d),
                                                    _mm256_mul_ps(w[q], xs), f[t * NQ + q]);
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
#pragma GCC unroll 4
        for (int q = 0; q < NQ; q++)
            store8(y + t * ldy + 8 * (q0 + q), f[t * NQ + q], nrows - 8 * (q0 + q), add);
}

/* decode's software prefetch distance in bytes (0: none), ~3.5 groups of
 * 576 bytes ahead: on an AMD EPYC (Zen 3) the hardware prefetcher alone
 * left 2-thread streaming at 17 GB/s, 2048 bytes ahead gave 22 (3072: 21;
 * a shared machine, medians of 5) */
#ifndef SX_Q4_AVX2_PF
#define SX_Q4_AVX2_PF 2048
#endif

/* tile_q4 for one token and a whole panel (decode): the same integer sums
 * and the same f32 operations in the same order as tile_q4 (so the same
 * bits, whatever the batch), written for 16 ymm registers -- 4 running
 * block sums, 4 f32 sums, the nibble mask and the two activation words,
 * each 32-byte weight vector unpacked and consumed at once. */
INL void tile_q4_m1(const uint8_t *pan, int kp, const int8_t *xq, const float *sx,
                    const int32_t *s8, float *y, int nrows, int add)
{
    enum { SUB = SX_Q4_XBLOCK / 8, BPG = SX_Q4_GROUP / SX_Q4_XBLOCK };
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    int ng = kp / SX_Q4_GROUP;
    __m256 f[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
        f[q] = _mm256_setzero_ps();
    for (int g = 0; g < ng; g++) {
        const uint8_t *gb = pan + (size_t)g * SX_Q4_GROUP_BYTES;
#if SX_Q4_AVX2_PF
#pragma GCC unroll 16
        for (int l = 0; l < SX_Q4_GROUP_BYTES; l += 64)
            _mm_prefetch((const char *)gb + SX_Q4_AVX2_PF + l, _MM_HINT_T0);
#endif
        for (int bb = 0; bb < BPG; bb++) {
            int b = g * BPG + bb;
            __m256i a[4];
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++)
                a[q] = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int s = 0; s < SUB; s++) {
                const uint8_t *pd = gb + 2 * SX_PANEL + (size_t)(bb * SUB + s) * 4 * SX_PANEL;
                int32_t dl, dh;
                memcpy(&dl, xq + b * SX_Q4_XBLOCK + 8 * s, 4);
                memcpy(&dh, xq + b * SX_Q4_XBLOCK + 8 * s + 4, 4);
                __m256i xl = _mm256_set1_epi32(dl), xh = _mm256_set1_epi32(dh);
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++) {
                    __m256i v = _mm256_loadu_si256((const __m256i *)(pd + 32 * q));
                    __m256i l = _mm256_and_si256(v, m4);
                    __m256i h = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    a[q] = _mm256_add_epi16(a[q], _mm256_add_epi16(_mm256_maddubs_epi16(l, xl),
                                                                   _mm256_maddubs_epi16(h, xh)));
                    PIN(a[q]);
                }
            }
            __m256i c = _mm256_set1_epi32(-s8[b]);
            __m256 xs = _mm256_set1_ps(sx[b]);
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                __m256 w = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(gb + 16 * q)));
                __m256i d = _mm256_add_epi32(_mm256_madd_epi16(a[q], ones), c);
                f[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(w, xs), f[q]);
                PIN(f[q]);
            }
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
        store8(y + 8 * q, f[q], nrows - 8 * q, add);
}

TGT static void tile_q4_any(const uint8_t *pan, int kp, const int8_t *xq, const float *sx,
                            const int32_t *s8, int T, float *y, long ldy, int nrows, int add)
{
    if (T == 1) {
        tile_q4_m1(pan, kp, xq, sx, s8, y, nrows, add);
    } else if (T == 2) {
        for (int q0 = 0; q0 < 4 && 8 * q0 < nrows; q0 += 2)
            tile_q4(pan, kp, xq, sx, s8, y, ldy, nrows, q0, 2, 2, add);
    } else {
        for (int q0 = 0; q0 < 4 && 8 * q0 < nrows; q0++) {
            if (T == 3)
                tile_q4(pan, kp, xq, sx, s8, y, ldy, nrows, q0, 1, 3, add);
            else
                tile_q4(pan, kp, xq, sx, s8, y, ldy, nrows, q0, 1, TT, add);
        }
    }
}

TGT static void mm_q4(const uint8_t *wp, int k, const float *xp, int n_tok, float *y, long ldy,
                      int r0, int r1, int accumulate)
{
    sx_q4_drive(wp, k, xp, n_tok, TT, y, ldy, r0, r1, accumulate, TT, q4_xquant, tile_q4_any);
}

/* ---- int8 (SX_Q8_QUADS panels, cpu_kernels.h) ----
 * One 32-byte vector of a panel holds 8 rows' 4 k; a token's 4 activation
 * bytes are broadcast to every lane, as xq (signed) and |xq| (unsigned):
 * vpsignb gives each weight xq's sign, vpmaddubsw multiplies |xq| by it in
 * pairs (|products| <= 127 * 127, pair sums within int16) and vpmaddwd
 * adds the pairs into the rows' 32-bit lanes: 4 instructions per 32
 * weights and token where widening to f32 took 12.  Each block's exact
 * integer sums become f32 through one fused multiply-add by sx[b], in block
 * order, and the row scale multiplies at the end: every tile below does
 * exactly these operations per token, so a token alone gets the bits it
 * gets in any batch. */

/* decode's software prefetch distance in bytes (0: none): int8 streams
 * 1.8x the bytes of q4 per weight, from the same kind of loop */
#ifndef SX_Q8_AVX2_PF
#define SX_Q8_AVX2_PF 2048
#endif

enum { Q8_GROUP_BYTES = 4 * SX_PANEL, Q8_BLOCK_BYTES = SX_Q8_XBLOCK / 4 * Q8_GROUP_BYTES };

/* xq's and |xq|'s 4 bytes of group g (4 k), broadcast */
INL void q8_bcast(const int8_t *xt, int kp, int g, __m256i *xs, __m256i *xu)
{
    int32_t ds, du;
    memcpy(&ds, xt + 4 * g, 4);
    memcpy(&du, xt + kp + 4 * g, 4);
    *xs = _mm256_set1_epi32(ds);
    *xu = _mm256_set1_epi32(du);
}

INL __m256i q8_dot4(__m256i acc, __m256i w, __m256i xs, __m256i xu, __m256i ones)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(xu, _mm256_sign_epi8(w, xs)),
                                                   ones));
}

/* NQ quarters of a panel (8 rows each, from quarter q0) x T tokens, NQ * T
 * <= 8: the int32 block sums in registers (and with NQ * T <= 4 the f32
 * sums too; above, the compiler keeps those, touched once per block, on
 * the stack) */
INL void tile_q8(const int8_t *pan, int kp, const int8_t *xq, const float *sx,
                 const float *scale, float *y, long ldy, int nrows, int q0, const int NQ,
                 const int T, int add)
{
    enum { GPB = SX_Q8_XBLOCK / 4 };
    const __m256i ones = _mm256_set1_epi16(1);
    int nb = kp / SX_Q8_XBLOCK;
    __m256 f[8];
#pragma GCC unroll 8
    for (int i = 0; i < NQ * T; i++)
        f[i] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const int8_t *pb = pan + (size_t)b * Q8_BLOCK_BYTES;
        __m256i a[8];
#pragma GCC unroll 8
        for (int i = 0; i < NQ * T; i++)
            a[i] = _mm256_setzero_si256();
        for (int g = 0; g < GPB; g++) {
#if SX_Q8_AVX2_PF
            /* the first pass over a panel brings it in (batched decode
             * reads it from memory, as decode does); the others find it
             * in cache */
            if (q0 == 0) {
                _mm_prefetch((const char *)pb + SX_Q8_AVX2_PF + g * Q8_GROUP_BYTES, _MM_HINT_T0);
                _mm_prefetch((const char *)pb + SX_Q8_AVX2_PF + g * Q8_GROUP_BYTES + 64,
                             _MM_HINT_T0);
            }
#endif
            __m256i w[4];
#pragma GCC unroll 4
            for (int q = 0; q < NQ; q++)
                w[q] = _mm256_loadu_si256(
                    (const __m256i *)(pb + g * Q8_GROUP_BYTES + 32 * (q0 + q)));
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                __m256i xs, xu;
                q8_bcast(xq + (size_t)t * 2 * kp + b * SX_Q8_XBLOCK, kp, g, &xs, &xu);
#pragma GCC unroll 4
                for (int q = 0; q < NQ; q++) {
                    a[t * NQ + q] = q8_dot4(a[t * NQ + q], w[q], xs, xu, ones);
                    PIN(a[t * NQ + q]);
                }
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            __m256 s = _mm256_set1_ps(sx[(size_t)t * nb + b]);
#pragma GCC unroll 4
            for (int q = 0; q < NQ; q++)
                f[t * NQ + q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a[t * NQ + q]), s, f[t * NQ + q]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
#pragma GCC unroll 4
        for (int q = 0; q < NQ; q++)
            store8(y + t * ldy + 8 * (q0 + q),
                   _mm256_mul_ps(f[t * NQ + q], _mm256_loadu_ps(scale + 8 * (q0 + q))),
                   nrows - 8 * (q0 + q), add);
}

/* tile_q8 for one token and a whole panel (decode), the same operations;
 * PIN as tile_q4_m1's, and a prefetch per cache line of the stream */
INL void tile_q8_m1(const int8_t *pan, int kp, const int8_t *xq, const float *sx,
                    const float *scale, float *y, int nrows, int add)
{
    enum { GPB = SX_Q8_XBLOCK / 4 };
    const __m256i ones = _mm256_set1_epi16(1);
    int nb = kp / SX_Q8_XBLOCK;
    __m256 f[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
        f[q] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const int8_t *pb = pan + (size_t)b * Q8_BLOCK_BYTES;
        __m256i a[4];
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
            a[q] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int g = 0; g < GPB; g++) {
#if SX_Q8_AVX2_PF
            _mm_prefetch((const char *)pb + SX_Q8_AVX2_PF + g * Q8_GROUP_BYTES, _MM_HINT_T0);
            _mm_prefetch((const char *)pb + SX_Q8_AVX2_PF + g * Q8_GROUP_BYTES + 64, _MM_HINT_T0);
#endif
            __m256i xs, xu;
            q8_bcast(xq + b * SX_Q8_XBLOCK, kp, g, &xs, &xu);
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(pb + g * Q8_GROUP_BYTES + 32 * q));
                a[q] = q8_dot4(a[q], v, xs, xu, ones);
                PIN(a[q]);
            }
        }
        __m256 s = _mm256_set1_ps(sx[b]);
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            f[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a[q]), s, f[q]);
            PIN(f[q]);
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
        store8(y + 8 * q, _mm256_mul_ps(f[q], _mm256_loadu_ps(scale + 8 * q)), nrows - 8 * q, add);
}

TGT static void tile_q8_any(const int8_t *pan, int kp, const int8_t *xq, const float *sx,
                            const float *scale, int T, float *y, long ldy, int nrows, int add)
{
    if (T == 1) {
        tile_q8_m1(pan, kp, xq, sx, scale, y, nrows, add);
    } else if (T == 2) {
        for (int q0 = 0; q0 < 4 && 8 * q0 < nrows; q0 += 2)
            tile_q8(pan, kp, xq, sx, scale, y, ldy, nrows, q0, 2, 2, add);
    } else {
        for (int q0 = 0; q0 < 4 && 8 * q0 < nrows; q0 += 2) {
            if (T == 3)
                tile_q8(pan, kp, xq, sx, scale, y, ldy, nrows, q0, 2, 3, add);
            else
                tile_q8(pan, kp, xq, sx, scale, y, ldy, nrows, q0, 2, TT, add);
        }
    }
}

TGT static void mm_q8(const int8_t *wp, const float *scale, int k, const float *xp, int n_tok,
                      float *y, long ldy, int r0, int r1, int accumulate)
{
    sx_q8_drive(wp, scale, k, xp, n_tok, TT, y, ldy, r0, r1, accumulate, TT, q8_xquant,
                tile_q8_any);
}

/* As the AVX-512 exp; 2^n is built in the exponent field, so x is clamped
 * to the range where n stays a normal exponent and below it the result is 0. */
INL __m256 exp8(__m256 v)
{
    const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
    const __m256 ln2hi = _mm256_set1_ps(0.693359375f);
    const __m256 ln2lo = _mm256_set1_ps(-2.12194440e-4f);
    const __m256 lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.0f);
    __m256 under = _mm256_cmp_ps(v, lo, _CMP_LT_OQ);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    __m256 k = _mm256_round_ps(_mm256_mul_ps(v, log2e),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, ln2hi, v);
    r = _mm256_fnmadd_ps(k, ln2lo, r);
    __m256 p = _mm256_set1_ps(1.0f / 5040);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127));
    e = _mm256_slli_epi32(e, 23);
    return _mm256_andnot_ps(under, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

TGT static void vexp(float *y, const float *x, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
    if (i < n) {
        float t[8] = { 0 };
        for (int j = i; j < n; j++)
            t[j - i] = x[j];
        _mm256_storeu_ps(t, exp8(_mm256_loadu_ps(t)));
        for (int j = i; j < n; j++)
            y[j] = t[j - i];
    }
}

/* The scores of NCH whole 8-key chunks for one query (keys in lanes): each
 * chunk's sums in att_block's order (even d in one chain, odd d in
 * another, then their sum), the chunks interleaved so that 2 * NCH
 * independent FMA chains hide the FMA latency -- one chunk's two chains
 * alone left the core waiting ~4 cycles per FMA. */
INL void att_scores(const float *qi, const float *kc, int bt, int hd, float scale, float *s,
                    const int NCH)
{
    __m256 s0[4], s1[4];
#pragma GCC unroll 4
    for (int c = 0; c < NCH; c++)
        s0[c] = s1[c] = _mm256_setzero_ps();
    int d = 0;
    for (; d + 2 <= hd; d += 2) {
        __m256 b0 = _mm256_set1_ps(qi[d]), b1 = _mm256_set1_ps(qi[d + 1]);
        const float *k0 = kc + (size_t)d * bt, *k1 = k0 + bt;
#pragma GCC unroll 4
        for (int c = 0; c < NCH; c++) {
            s0[c] = _mm256_fmadd_ps(b0, _mm256_loadu_ps(k0 + 8 * c), s0[c]);
            s1[c] = _mm256_fmadd_ps(b1, _mm256_loadu_ps(k1 + 8 * c), s1[c]);
        }
    }
    if (d < hd)
#pragma GCC unroll 4
        for (int c = 0; c < NCH; c++)
            s0[c] = _mm256_fmadd_ps(_mm256_set1_ps(qi[d]),
                                    _mm256_loadu_ps(kc + (size_t)d * bt + 8 * c), s0[c]);
#pragma GCC unroll 4
    for (int c = 0; c < NCH; c++)
        _mm256_storeu_ps(s + 8 * c, _mm256_mul_ps(_mm256_add_ps(s0[c], s1[c]),
                                                  _mm256_set1_ps(scale)));
}

/* 8 keys at a time (keys in lanes); values added row by row.  A query's
 * keys are scored 32 at a time, then taken in chunks of 8 in key order:
 * the same operations per query and chunk as one chunk at a time, and
 * queries never meet, so a query's result does not depend on nq. */
TGT static void att_block(const float *q, long ldq, int nq, const float *kt, const float *v,
                          int bt, int nj, int hd, float scale, float *m, float *l, float *acc)
{
    float p[8], sg[32];
    for (int i = 0; i < nq; i++)
    for (int g0 = 0; g0 < nj; g0 += 32) {
        const float *qi = q + i * ldq;
        float *a = acc + (size_t)i * hd;
        int ng = nj - g0 < 32 ? nj - g0 : 32, nfull = ng / 8;
        switch (nfull) {
        case 1: att_scores(qi, kt + g0, bt, hd, scale, sg, 1); break;
        case 2: att_scores(qi, kt + g0, bt, hd, scale, sg, 2); break;
        case 3: att_scores(qi, kt + g0, bt, hd, scale, sg, 3); break;
        case 4: att_scores(qi, kt + g0, bt, hd, scale, sg, 4); break;
        default: break;
        }
        for (int j = 8 * nfull; j < ng; j++) {
            float t = 0.0f;
            for (int d = 0; d < hd; d++)
                t += qi[d] * kt[(size_t)d * bt + g0 + j];
            sg[j] = t * scale;
        }
        for (int j0 = g0; j0 < g0 + ng; j0 += 8) {
            int nc = nj - j0 < 8 ? nj - j0 : 8;
            const float *s = sg + (j0 - g0);
            float mx = s[0];
            for (int j = 1; j < nc; j++)
                mx = s[j] > mx ? s[j] : mx;
            if (mx > m[i]) {
                float corr = m[i] == -INFINITY ? 0.0f : expf(m[i] - mx);
                l[i] *= corr;
                for (int d = 0; d < hd; d++)
                    a[d] *= corr;
                m[i] = mx;
            }
            for (int j = 0; j < 8; j++)
                p[j] = j < nc ? s[j] - m[i] : -100.0f;
            _mm256_storeu_ps(p, exp8(_mm256_loadu_ps(p)));
            /* acc += sum_j p_j v_j with the keys innermost: each 8 values
             * of acc are loaded and stored once per 8 keys, not once per
             * key (a chain through memory), and each element still takes
             * the keys' products in key order, so the bits are the same */
            const float *vr = v + (size_t)j0 * hd;
            __m256 pv[8];
            for (int j = 0; j < nc; j++) {
                l[i] += p[j];
                pv[j] = _mm256_set1_ps(p[j]);
            }
            int d = 0;
            if (nc == 8) {
                for (; d + 8 <= hd; d += 8) {
                    __m256 sa = _mm256_loadu_ps(a + d);
#pragma GCC unroll 8
                    for (int j = 0; j < 8; j++)
                        sa = _mm256_fmadd_ps(pv[j], _mm256_loadu_ps(vr + (size_t)j * hd + d), sa);
                    _mm256_storeu_ps(a + d, sa);
                }
            } else {
                for (; d + 8 <= hd; d += 8) {
                    __m256 sa = _mm256_loadu_ps(a + d);
                    for (int j = 0; j < nc; j++)
                        sa = _mm256_fmadd_ps(pv[j], _mm256_loadu_ps(vr + (size_t)j * hd + d), sa);
                    _mm256_storeu_ps(a + d, sa);
                }
            }
            for (; d < hd; d++)
                for (int j = 0; j < nc; j++)
                    a[d] += p[j] * vr[(size_t)j * hd + d];
        }
    }
}

TGT static void bf16_to_f32(float *y, const uint16_t *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i)));
        _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
    }
    for (; i < n; i++)
        y[i] = sx_bf16_to_f32(x[i]);
}

static void swiglu(float *g, const float *u, int n)
{
    sx_cpu_swiglu(&sx_cpu_avx2_kernels, g, u, n);
}

const sx_cpu_kernels sx_cpu_avx2_kernels = {
    .name = "avx2", .path = SX_CPU_AVX2, .tile = TT, .q8_layout = SX_Q8_QUADS,
    .mm_bf16 = mm_bf16, .mm_q8 = mm_q8, .mm_q4 = mm_q4,
    .att_block = att_block, .exp = vexp,
    .rmsnorm = sx_cpu_rmsnorm, .swiglu = swiglu, .bf16_to_f32 = bf16_to_f32,
};

#else
const sx_cpu_kernels sx_cpu_avx2_kernels = { .name = "avx2", .path = SX_CPU_AVX2 };
#endif
