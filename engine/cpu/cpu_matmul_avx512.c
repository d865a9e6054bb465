/* AVX-512 kernels (avx512f/bw/vl + fma) over packed panels: the 32 rows of
 * a panel sit in two vectors' lanes and each activation is broadcast from
 * its tile, so 32 rows x 12 tokens keep 24 accumulators in registers and
 * need no horizontal sums.  bf16 widens with one shift (even k) or one mask
 * (odd k) per 16 weights; int8 with a sign-extend and a convert. */
#include "engine/cpu/cpu_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))
#define INL static inline __attribute__((always_inline)) TGT

enum { TT = 12, KSLICE = 256, X_BUDGET = 1 << 20, PF_AHEAD = 2048 };

/* Tokens per chunk: a chunk's activations (~1 MiB) stay in L2 while every
 * panel of the call streams past them. */
static int token_chunk(int n_tok, int k)
{
    if (n_tok <= TT)
        return n_tok;
    int c = X_BUDGET / (k * 4) / TT * TT;
    return c < TT ? TT : c;
}

INL __m512 widen16(const int8_t *p)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}

INL __mmask16 lanes(int n)   /* the first n (clamped to 0..16) lanes */
{
    return (__mmask16)(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1);
}

INL void store_tile(float *y, long ldy, int T, int nrows, const __m512 *a0, const __m512 *a1,
                    int add)
{
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

/* one panel x one tile of T tokens; y points at the panel's first row of
 * the tile's first token */
INL void tile_bf16(const uint16_t *pan, int k2, const float *xt, float *y, long ldy, int nrows,
                   const int T, int add, int pf)
{
    __m512 a0[TT], a1[TT];
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 12
    for (int t = 0; t < T; t++)
        a0[t] = a1[t] = _mm512_setzero_ps();
    for (int kp = 0; kp < k2; kp++) {
        if (pf) {   /* the panel comes from memory once: overlap it with the FMAs */
            _mm_prefetch((const char *)(pan + (size_t)kp * 64) + PF_AHEAD, _MM_HINT_T0);
            _mm_prefetch((const char *)(pan + (size_t)kp * 64) + PF_AHEAD + 64, _MM_HINT_T0);
        }
        __m512i v0 = _mm512_loadu_si512((const void *)(pan + (size_t)kp * 64));
        __m512i v1 = _mm512_loadu_si512((const void *)(pan + (size_t)kp * 64 + 32));
        __m512 e0 = _mm512_castsi512_ps(_mm512_slli_epi32(v0, 16));
        __m512 e1 = _mm512_castsi512_ps(_mm512_slli_epi32(v1, 16));
        __m512 o0 = _mm512_castsi512_ps(_mm512_and_si512(v0, hi));
        __m512 o1 = _mm512_castsi512_ps(_mm512_and_si512(v1, hi));
        const float *xk = xt + (size_t)kp * 2 * T;
#pragma GCC unroll 12
        for (int t = 0; t < T; t++) {
            __m512 xa = _mm512_set1_ps(xk[2 * t]);
            __m512 xb = _mm512_set1_ps(xk[2 * t + 1]);
            a0[t] = _mm512_fmadd_ps(e0, xa, a0[t]);
            a1[t] = _mm512_fmadd_ps(e1, xa, a1[t]);
            a0[t] = _mm512_fmadd_ps(o0, xb, a0[t]);
            a1[t] = _mm512_fmadd_ps(o1, xb, a1[t]);
        }
    }
    store_tile(y, ldy, T, nrows, a0, a1, add);
}

/* decode (one token): tile_bf16's sums for T = 1 -- each row's products
 * added in k order into one sum, so a token's result does not depend on
 * how many tokens share its call (batch invariance, docs/PROTOCOL.md).
 * Two panels at once when there are two, so four independent chains hide
 * the FMA latency; bf16 needs no software prefetch at this rate. */
INL void vec_bf16(const uint16_t *pan, size_t pstride, int np, int k2, const float *xt, float *y,
                  int nrows, int nrows2, int add)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    const uint16_t *pb = pan + (np > 1 ? pstride : 0);
    for (int kp = 0; kp < k2; kp++) {
        __m512i v0 = _mm512_loadu_si512((const void *)(pan + (size_t)kp * 64));
        __m512i v1 = _mm512_loadu_si512((const void *)(pan + (size_t)kp * 64 + 32));
        __m512i u0 = _mm512_loadu_si512((const void *)(pb + (size_t)kp * 64));
        __m512i u1 = _mm512_loadu_si512((const void *)(pb + (size_t)kp * 64 + 32));
        __m512 xa = _mm512_set1_ps(xt[2 * kp]), xb = _mm512_set1_ps(xt[2 * kp + 1]);
        a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v0, 16)), xa, a0);
        a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v1, 16)), xa, a1);
        b0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(u0, 16)), xa, b0);
        b1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(u1, 16)), xa, b1);
        a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v0, hi)), xb, a0);
        a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v1, hi)), xb, a1);
        b0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(u0, hi)), xb, b0);
        b1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(u1, hi)), xb, b1);
    }
    store_tile(y, 0, 1, nrows, &a0, &a1, add);
    if (np > 1)
        store_tile(y + SX_PANEL, 0, 1, nrows2, &b0, &b1, add);
}

#define BF16_CASE(N) case N: tile_bf16(pan, k2, xt, y, ldy, nrows, N, add, pf); break

TGT static void tile_bf16_any(const uint16_t *pan, int k2, const float *xt, float *y, long ldy,
                              int nrows, int T, int add, int pf)
{
    switch (T) {
    BF16_CASE(1); BF16_CASE(2); BF16_CASE(3); BF16_CASE(4); BF16_CASE(5); BF16_CASE(6);
    BF16_CASE(7); BF16_CASE(8); BF16_CASE(9); BF16_CASE(10); BF16_CASE(11);
    default: tile_bf16(pan, k2, xt, y, ldy, nrows, TT, add, pf); break;
    }
}

/* Every call walks k in the same slices, whatever n_tok (the sums of a
 * slice are added to y before the next starts), and every tile size adds
 * a row's products in the same order: a token's result is bitwise the same
 * alone or in any batch.  Several tiles share a panel slice in L1. */
TGT void sx_avx512_mm_bf16(const uint16_t *wp, int k, const float *xp, int n_tok, float *y,
                          long ldy, int r0, int r1, int accumulate)
{
    int k2 = (k + 1) / 2;
    size_t pstride = (size_t)SX_PANEL * 2 * k2;
    int tc = token_chunk(n_tok, k);
    int ks = KSLICE;
    for (int c0 = 0; c0 < n_tok; c0 += tc) {
        int c1 = c0 + tc < n_tok ? c0 + tc : n_tok;
        int np = n_tok == 1 ? 2 : 1;   /* decode: two panels per call */
        for (int p0 = r0; p0 < r1; p0 += np * SX_PANEL) {
            const uint16_t *pan = wp + (size_t)(p0 / SX_PANEL) * pstride;
            int nrows = r1 - p0 < SX_PANEL ? r1 - p0 : SX_PANEL;
            for (int s0 = 0; s0 < k2; s0 += ks) {
                int ns = k2 - s0 < ks ? k2 - s0 : ks;
                if (n_tok == 1) {
                    int rest = r1 - p0 - SX_PANEL;
                    vec_bf16(pan + (size_t)s0 * 2 * SX_PANEL, pstride, rest > 0 ? 2 : 1, ns,
                             xp + (size_t)s0 * 2, y + p0, nrows, rest < SX_PANEL ? rest : SX_PANEL,
                             s0 ? 1 : accumulate);
                    continue;
                }
                for (int t0 = c0; t0 < c1; t0 += TT) {
                    int T = n_tok - t0 < TT ? n_tok - t0 : TT;
                    tile_bf16_any(pan + (size_t)s0 * 2 * SX_PANEL, ns,
                                  xp + (size_t)t0 * 2 * k2 + (size_t)s0 * 2 * T,
                                  y + t0 * ldy + p0, ldy, nrows, T, s0 ? 1 : accumulate,
                                  t0 == c0);
                }
            }
        }
    }
}

INL void tile_q8(const int8_t *pan, const float *scale, int k2, const float *xt, float *y,
                 long ldy, int nrows, const int T, int add, int pf)
{
    __m512 a0[TT], a1[TT];
#pragma GCC unroll 12
    for (int t = 0; t < T; t++)
        a0[t] = a1[t] = _mm512_setzero_ps();
    for (int kp = 0; kp < k2; kp++) {
        const int8_t *p = pan + (size_t)kp * 2 * SX_PANEL;
        if (pf)
            _mm_prefetch((const char *)(p + PF_AHEAD), _MM_HINT_T0);
        __m512 e0 = widen16(p), e1 = widen16(p + 16), o0 = widen16(p + 32), o1 = widen16(p + 48);
        const float *xk = xt + (size_t)kp * 2 * T;
#pragma GCC unroll 12
        for (int t = 0; t < T; t++) {
            __m512 xa = _mm512_set1_ps(xk[2 * t]);
            __m512 xb = _mm512_set1_ps(xk[2 * t + 1]);
            a0[t] = _mm512_fmadd_ps(e0, xa, a0[t]);
            a1[t] = _mm512_fmadd_ps(e1, xa, a1[t]);
            a0[t] = _mm512_fmadd_ps(o0, xb, a0[t]);
            a1[t] = _mm512_fmadd_ps(o1, xb, a1[t]);
        }
    }
    __m512 s0 = _mm512_loadu_ps(scale), s1 = _mm512_loadu_ps(scale + 16);
#pragma GCC unroll 12
    for (int t = 0; t < T; t++) {
        a0[t] = _mm512_mul_ps(a0[t], s0);
        a1[t] = _mm512_mul_ps(a1[t], s1);
    }
    store_tile(y, ldy, T, nrows, a0, a1, add);
}

/* decode: tile_q8's order for T = 1 (see vec_bf16), two panels at once */
INL void vec_q8(const int8_t *pan, size_t pstride, int np, const float *scale, int k2,
                const float *xt, float *y, int nrows, int nrows2, int add)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
    const int8_t *pb = pan + (np > 1 ? pstride : 0);
    for (int kp = 0; kp < k2; kp++) {
        const int8_t *p = pan + (size_t)kp * 2 * SX_PANEL, *u = pb + (size_t)kp * 2 * SX_PANEL;
        /* int8 streams faster than the hardware prefetcher asks */
        _mm_prefetch((const char *)(p + PF_AHEAD), _MM_HINT_T0);
        _mm_prefetch((const char *)(u + PF_AHEAD), _MM_HINT_T0);
        __m512 xa = _mm512_set1_ps(xt[2 * kp]), xb = _mm512_set1_ps(xt[2 * kp + 1]);
        a0 = _mm512_fmadd_ps(widen16(p), xa, a0);
        a1 = _mm512_fmadd_ps(widen16(p + 16), xa, a1);
        b0 = _mm512_fmadd_ps(widen16(u), xa, b0);
        b1 = _mm512_fmadd_ps(widen16(u + 16), xa, b1);
        a0 = _mm512_fmadd_ps(widen16(p + 32), xb, a0);
        a1 = _mm512_fmadd_ps(widen16(p + 48), xb, a1);
        b0 = _mm512_fmadd_ps(widen16(u + 32), xb, b0);
        b1 = _mm512_fmadd_ps(widen16(u + 48), xb, b1);
    }
    a0 = _mm512_mul_ps(a0, _mm512_loadu_ps(scale));
    a1 = _mm512_mul_ps(a1, _mm512_loadu_ps(scale + 16));
    store_tile(y, 0, 1, nrows, &a0, &a1, add);
    if (np > 1) {
        b0 = _mm512_mul_ps(b0, _mm512_loadu_ps(scale + SX_PANEL));
        b1 = _mm512_mul_ps(b1, _mm512_loadu_ps(scale + SX_PANEL + 16));
        store_tile(y + SX_PANEL, 0, 1, nrows2, &b0, &b1, add);
    }
}

#define Q8_CASE(N) case N: tile_q8(pan, scale, k2, xt, y, ldy, nrows, N, add, pf); break

TGT static void tile_q8_any(const int8_t *pan, const float *scale, int k2, const float *xt,
                            float *y, long ldy, int nrows, int T, int add, int pf)
{
    switch (T) {
    Q8_CASE(1); Q8_CASE(2); Q8_CASE(3); Q8_CASE(4); Q8_CASE(5); Q8_CASE(6);
    Q8_CASE(7); Q8_CASE(8); Q8_CASE(9); Q8_CASE(10); Q8_CASE(11);
    default: tile_q8(pan, scale, k2, xt, y, ldy, nrows, TT, add, pf); break;
    }
}

/* k slices and sum order as sx_avx512_mm_bf16's, whatever n_tok */
TGT void sx_avx512_mm_q8(const int8_t *wp, const float *scale, int k, const float *xp, int n_tok,
                        float *y, long ldy, int r0, int r1, int accumulate)
{
    int k2 = (k + 1) / 2;
    int tc = token_chunk(n_tok, k);
    int ks = KSLICE;
    size_t pstride = (size_t)SX_PANEL * 2 * k2;
    for (int c0 = 0; c0 < n_tok; c0 += tc) {
        int c1 = c0 + tc < n_tok ? c0 + tc : n_tok;
        int np = n_tok == 1 ? 2 : 1;   /* decode: two panels per call */
        for (int p0 = r0; p0 < r1; p0 += np * SX_PANEL) {
            const int8_t *pan = wp + (size_t)p0 * 2 * k2;
            int nrows = r1 - p0 < SX_PANEL ? r1 - p0 : SX_PANEL;
            for (int s0 = 0; s0 < k2; s0 += ks) {
                int ns = k2 - s0 < ks ? k2 - s0 : ks;
                if (n_tok == 1) {
                    int rest = r1 - p0 - SX_PANEL;
                    vec_q8(pan + (size_t)s0 * 2 * SX_PANEL, pstride, rest > 0 ? 2 : 1, scale + p0,
                           ns, xp + (size_t)s0 * 2, y + p0, nrows,
                           rest < SX_PANEL ? rest : SX_PANEL, s0 ? 1 : accumulate);
                    continue;
                }
                for (int t0 = c0; t0 < c1; t0 += TT) {
                    int T = n_tok - t0 < TT ? n_tok - t0 : TT;
                    tile_q8_any(pan + (size_t)s0 * 2 * SX_PANEL, scale + p0, ns,
                                xp + (size_t)t0 * 2 * k2 + (size_t)s0 * 2 * T,
                                y + t0 * ldy + p0, ldy, nrows, T, s0 ? 1 : accumulate,
                                t0 == c0);
                }
            }
        }
    }
}

/* e^x = 2^n * e^r, n = round(x / ln2), |r| <= ln2/2, e^r by its degree-7
 * Taylor polynomial (error < 1e-8 relative); scalef applies 2^n and
 * saturates to 0 / inf outside the f32 range. */
INL __m512 exp16(__m512 v)
{
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512 ln2hi = _mm512_set1_ps(0.693359375f);
    const __m512 ln2lo = _mm512_set1_ps(-2.12194440e-4f);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(89.0f));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(v, log2e), _MM_FROUND_TO_NEAREST_INT);
    __m512 r = _mm512_fnmadd_ps(k, ln2hi, v);
    r = _mm512_fnmadd_ps(k, ln2lo, r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, k);
}

TGT void sx_avx512_exp(float *y, const float *x, int n)
{
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = lanes(n - i);
        _mm512_mask_storeu_ps(y + i, m, exp16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

INL __m512 kcol(const float *kc, int d, int bt, __mmask16 km)
{
    return _mm512_maskz_loadu_ps(km, kc + (size_t)d * bt);
}

/* U (1..4) queries at once: each key column and value row is loaded once
 * for all U.  Each query's arithmetic is the same whatever U and its place
 * among them, so a query's result does not depend on how many share its
 * call (batch invariance). */
INL void att_four(const float *q, long ldq, const float *kc, const float *vj, int bt, int nc,
                  __mmask16 km, int hd, float scale, float *m, float *l, float *acc, const int U)
{
    __m512 s[4][2];
    float p[4][16];
    for (int u = 0; u < 4; u++)
        s[u][0] = s[u][1] = _mm512_setzero_ps();
    /* four lanes of state whatever U: the rest run on -inf and are not stored */
    float mu[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    for (int u = 0; u < U; u++)
        mu[u] = m[u];
    int d = 0;
    for (; d + 2 <= hd; d += 2) {
        __m512 k0 = kcol(kc, d, bt, km), k1 = kcol(kc, d + 1, bt, km);
#pragma GCC unroll 4
        for (int u = 0; u < U; u++) {
            s[u][0] = _mm512_fmadd_ps(_mm512_set1_ps(q[u * ldq + d]), k0, s[u][0]);
            s[u][1] = _mm512_fmadd_ps(_mm512_set1_ps(q[u * ldq + d + 1]), k1, s[u][1]);
        }
    }
    for (; d < hd; d++) {
        __m512 k0 = kcol(kc, d, bt, km);
        for (int u = 0; u < U; u++)
            s[u][0] = _mm512_fmadd_ps(_mm512_set1_ps(q[u * ldq + d]), k0, s[u][0]);
    }
    /* the four softmax steps side by side and without branches: the new
     * maxima, their four corrections in one vector exp, and the
     * accumulators rescaled as the value loop loads them (a rescale
     * branch per query mispredicts while the maxima still grow) */
    __m512 sv[4];
    float mx[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY }, corr[4];
#pragma GCC unroll 4
    for (int u = 0; u < U; u++) {
        sv[u] = _mm512_mul_ps(_mm512_add_ps(s[u][0], s[u][1]), _mm512_set1_ps(scale));
        mx[u] = _mm512_mask_reduce_max_ps(km, sv[u]);
    }
    __m128 m_old = _mm_loadu_ps(mu), m_new = _mm_max_ps(m_old, _mm_loadu_ps(mx));
    _mm_storeu_ps(mx, m_new);
    for (int u = 0; u < U; u++)
        m[u] = mx[u];
    /* m_old = -inf on the first block: e^-104 (exp16's floor) times the
     * zero sums there */
    _mm_storeu_ps(corr, _mm512_castps512_ps128(
                            exp16(_mm512_castps128_ps512(_mm_sub_ps(m_old, m_new)))));
#pragma GCC unroll 4
    for (int u = 0; u < U; u++) {
        __m512 pv = _mm512_maskz_mov_ps(km, exp16(_mm512_sub_ps(sv[u], _mm512_set1_ps(mx[u]))));
        l[u] = l[u] * corr[u] + _mm512_reduce_add_ps(pv);
        _mm512_storeu_ps(p[u], pv);
    }
    /* values: 64-wide slices of the four accumulators, row by row */
    for (int e = 0; e < hd; e += 64) {
        __mmask16 mk[4] = { lanes(hd - e), lanes(hd - e - 16), lanes(hd - e - 32),
                            lanes(hd - e - 48) };
        __m512 av[4][4];
#pragma GCC unroll 4
        for (int u = 0; u < U; u++)
#pragma GCC unroll 4
            for (int w = 0; w < 4; w++)
                av[u][w] = _mm512_mul_ps(_mm512_set1_ps(corr[u]),
                                         _mm512_maskz_loadu_ps(mk[w], acc + (size_t)u * hd + e + 16 * w));
        for (int j = 0; j < nc; j++) {
            const float *vr = vj + (size_t)j * hd + e;
            __m512 vv[4];
#pragma GCC unroll 4
            for (int w = 0; w < 4; w++)
                vv[w] = _mm512_maskz_loadu_ps(mk[w], vr + 16 * w);
#pragma GCC unroll 4
            for (int u = 0; u < U; u++) {
                __m512 pj = _mm512_set1_ps(p[u][j]);
#pragma GCC unroll 4
                for (int w = 0; w < 4; w++)
                    av[u][w] = _mm512_fmadd_ps(pj, vv[w], av[u][w]);
            }
        }
#pragma GCC unroll 4
        for (int u = 0; u < U; u++)
#pragma GCC unroll 4
            for (int w = 0; w < 4; w++)
                _mm512_mask_storeu_ps(acc + (size_t)u * hd + e + 16 * w, mk[w], av[u][w]);
    }
}

/* 16 keys at a time: scores are one vector (keys in lanes, from the
 * transposed block), values are added row by row into 4-vector slices of
 * the accumulator; queries in fours where there are four. */
TGT void sx_avx512_att_block(const float *q, long ldq, int nq, const float *kt, const float *v,
                            int bt, int nj, int hd, float scale, float *m, float *l, float *acc)
{
    for (int j0 = 0; j0 < nj; j0 += 16) {
        int nc = nj - j0 < 16 ? nj - j0 : 16;
        __mmask16 km = lanes(nc);
        const float *kc = kt + j0;
        const float *vj = v + (size_t)j0 * hd;
        int i = 0;
        for (; i + 4 <= nq; i += 4)
            att_four(q + i * ldq, ldq, kc, vj, bt, nc, km, hd, scale, m + i, l + i,
                     acc + (size_t)i * hd, 4);
        if (nq - i == 3)
            att_four(q + i * ldq, ldq, kc, vj, bt, nc, km, hd, scale, m + i, l + i,
                     acc + (size_t)i * hd, 3);
        else if (nq - i == 2)
            att_four(q + i * ldq, ldq, kc, vj, bt, nc, km, hd, scale, m + i, l + i,
                     acc + (size_t)i * hd, 2);
        else if (nq - i == 1)
            att_four(q + i * ldq, ldq, kc, vj, bt, nc, km, hd, scale, m + i, l + i,
                     acc + (size_t)i * hd, 1);
    }
}

/* ---- attention with the queries in lanes ------------------------------------
 * Keys in lanes (above) costs one broadcast per FMA in Q.K: only 16 keys
 * share a block vector.  With up to 32 queries in two vectors instead,
 * each broadcast key element feeds two FMAs, the softmax runs across key
 * vectors element by element (no horizontal max or sum), and causal
 * masking is a lane threshold per key, so a diagonal block is one call. */

/* Q.K for 16 keys of a sub-block: s[j][0..31] = q_u . k_j, keys j >= nk
 * left at zero (the caller masks them) */
INL void qk16(const float *qt, const float *kc, int ldk, int nk, int hd, float s[16][32])
{
    for (int h = 0; h < 2; h++) {
        __m512 a[8][2];
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++)
            a[j][0] = a[j][1] = _mm512_setzero_ps();
        if (nk > h * 8)
            for (int d = 0; d < hd; d++) {
                __m512 q0 = _mm512_loadu_ps(qt + (size_t)d * 32);
                __m512 q1 = _mm512_loadu_ps(qt + (size_t)d * 32 + 16);
                const float *kr = kc + (size_t)d * ldk + h * 8;
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++) {
                    __m512 kb = _mm512_set1_ps(kr[j]);
                    a[j][0] = _mm512_fmadd_ps(kb, q0, a[j][0]);
                    a[j][1] = _mm512_fmadd_ps(kb, q1, a[j][1]);
                }
            }
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            _mm512_storeu_ps(s[h * 8 + j], a[j][0]);
            _mm512_storeu_ps(s[h * 8 + j] + 16, a[j][1]);
        }
    }
}

/* acct[e..e+ne) += sum_j v[j][e..] * p[j][lanes], after acct *= corr */
INL void pv_slice(const float *v, int hd, int nk, int e, int ne, const __m512 corr[2],
                  float p[16][32], float *acct)
{
    __m512 o[8][2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        o[i][0] = o[i][1] = _mm512_setzero_ps();
        if (i < ne) {
            o[i][0] = _mm512_mul_ps(corr[0], _mm512_loadu_ps(acct + (size_t)(e + i) * 32));
            o[i][1] = _mm512_mul_ps(corr[1], _mm512_loadu_ps(acct + (size_t)(e + i) * 32 + 16));
        }
    }
    for (int j = 0; j < nk; j++) {
        __m512 p0 = _mm512_loadu_ps(p[j]), p1 = _mm512_loadu_ps(p[j] + 16);
        const float *vr = v + (size_t)j * hd + e;
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            if (i < ne) {
                __m512 vb = _mm512_set1_ps(vr[i]);
                o[i][0] = _mm512_fmadd_ps(vb, p0, o[i][0]);
                o[i][1] = _mm512_fmadd_ps(vb, p1, o[i][1]);
            }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        if (i < ne) {
            _mm512_storeu_ps(acct + (size_t)(e + i) * 32, o[i][0]);
            _mm512_storeu_ps(acct + (size_t)(e + i) * 32 + 16, o[i][1]);
        }
}

/* The online softmax step over one sub-block's scores s (16 keys x 32
 * lanes): key j0+j is visible to lanes u >= vis0 + (j0+j)*vstep (the rest
 * and keys j >= nk score -inf); s becomes the probabilities e^(s*scale-m),
 * m and l move on, and corr is what earlier sums must be scaled by. */
INL void softmax16(float s[16][32], int nk, int j0, int vis0, int vstep, float scale, float *m,
                   float *l, __m512 corr[2])
{
    const __m512i lane0 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i lane1 = _mm512_add_epi32(lane0, _mm512_set1_epi32(16));
    const __m512 ninf = _mm512_set1_ps(-INFINITY), sc = _mm512_set1_ps(scale);
    __mmask16 vm[16][2];
    __m512 mx[2] = { ninf, ninf };
    for (int j = 0; j < 16; j++) {
        int th = j < nk ? vis0 + (j0 + j) * vstep : 1 << 30;
        __m512i t = _mm512_set1_epi32(th);
        vm[j][0] = _mm512_cmpge_epi32_mask(lane0, t);
        vm[j][1] = _mm512_cmpge_epi32_mask(lane1, t);
        for (int h = 0; h < 2; h++)
            mx[h] = _mm512_mask_max_ps(mx[h], vm[j][h], mx[h],
                                       _mm512_mul_ps(_mm512_loadu_ps(s[j] + 16 * h), sc));
    }
    for (int h = 0; h < 2; h++) {
        __m512 mo = _mm512_loadu_ps(m + 16 * h), mn = _mm512_max_ps(mo, mx[h]);
        /* lanes that have seen no key yet stay at -inf: e^(-inf) as
         * exp16's floor, times their zero sums */
        corr[h] = exp16(_mm512_sub_ps(mo, mn));
        _mm512_storeu_ps(m + 16 * h, mn);
        __m512 sum = _mm512_setzero_ps();
        for (int j = 0; j < nk; j++) {
            __m512 pj = _mm512_maskz_mov_ps(
                vm[j][h], exp16(_mm512_fmsub_ps(_mm512_loadu_ps(s[j] + 16 * h), sc, mn)));
            _mm512_storeu_ps(s[j] + 16 * h, pj);
            sum = _mm512_add_ps(sum, pj);
        }
        _mm512_storeu_ps(l + 16 * h, _mm512_fmadd_ps(_mm512_loadu_ps(l + 16 * h), corr[h], sum));
    }
}

TGT void sx_avx512_att_qt(const float *qt, const float *kt, const float *v, int bt, int nj, int hd,
                          float scale, int vis0, int vstep, float *m, float *l, float *acct,
                          float *kpad)
{
    float s[16][32];
    for (int j0 = 0; j0 < nj; j0 += 16) {
        int nk = nj - j0 < 16 ? nj - j0 : 16;
        const float *kc = kt + j0;
        int ldk = bt;
        if (nk < 16 || j0 + 16 > bt) {
            /* a short sub-block: its keys into a zero-padded copy, so the
             * 8-key loads never run past the block */
            for (int d = 0; d < hd; d++)
                for (int j = 0; j < 16; j++)
                    kpad[(size_t)d * 16 + j] = j < nk ? kt[(size_t)d * bt + j0 + j] : 0.0f;
            kc = kpad;
            ldk = 16;
        }
        qk16(qt, kc, ldk, nk, hd, s);
        __m512 corr[2];
        softmax16(s, nk, j0, vis0, vstep, scale, m, l, corr);
        int e = 0;
        for (; e + 8 <= hd; e += 8)
            pv_slice(v + (size_t)j0 * hd, hd, nk, e, 8, corr, s, acct);
        if (e < hd)
            pv_slice(v + (size_t)j0 * hd, hd, nk, e, hd - e, corr, s, acct);
    }
}

/* ---- the same attention on bf16 dot products --------------------------------
 * For the bf16-activation mode (SX_ACT_BF16): Q.K over pairs of dims and
 * P.V over pairs of keys with vdpbf16ps, q, k, p and v rounded to bf16
 * (nearest even) and sums kept in f32 -- half the instructions per
 * product, what bf16 frameworks' attention does.  The softmax is the f32
 * kernel's. */
#define TGT_DP __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma")))
enum { SX_ATT_DP_MAX_HD2 = 128 };   /* head_dim up to 256: the pair buffers live on the stack */
#define INL_DP static inline __attribute__((always_inline)) TGT_DP

/* 32-bit lanes holding (a[i], b[i]) rounded to bf16, a in the low half:
 * a vdpbf16ps operand */
INL_DP __m512i pair16(__m512 a, __m512 b)
{
    __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(a));
    __m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(b));
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

/* s[j][0..31] = q_u . k_j over bf16 pairs: qp[d2][32 lanes], kp[d2][16 keys] */
INL_DP void qk16_dp(const uint32_t *qp, const uint32_t *kp, int nk, int hd2, float s[16][32])
{
    for (int h = 0; h < 2; h++) {
        __m512 a[8][2];
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++)
            a[j][0] = a[j][1] = _mm512_setzero_ps();
        if (nk > h * 8)
            for (int d = 0; d < hd2; d++) {
                __m512bh q0 = (__m512bh)_mm512_loadu_si512(qp + (size_t)d * 32);
                __m512bh q1 = (__m512bh)_mm512_loadu_si512(qp + (size_t)d * 32 + 16);
                const uint32_t *kr = kp + (size_t)d * 16 + h * 8;
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++) {
                    __m512bh kb = (__m512bh)_mm512_set1_epi32((int)kr[j]);
                    a[j][0] = _mm512_dpbf16_ps(a[j][0], q0, kb);
                    a[j][1] = _mm512_dpbf16_ps(a[j][1], q1, kb);
                }
            }
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            _mm512_storeu_ps(s[h * 8 + j], a[j][0]);
            _mm512_storeu_ps(s[h * 8 + j] + 16, a[j][1]);
        }
    }
}

/* acct[e..e+ne) = corr * acct + sum over key pairs of pp[jp][lanes] .
 * vp[jp][e..] */
INL_DP void pv_slice_dp(const uint32_t *vp, int hd, int np, int e, int ne, const __m512 corr[2],
                        const uint32_t *pp, float *acct)
{
    __m512 o[8][2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        o[i][0] = o[i][1] = _mm512_setzero_ps();
        if (i < ne) {
            o[i][0] = _mm512_mul_ps(corr[0], _mm512_loadu_ps(acct + (size_t)(e + i) * 32));
            o[i][1] = _mm512_mul_ps(corr[1], _mm512_loadu_ps(acct + (size_t)(e + i) * 32 + 16));
        }
    }
    for (int jp = 0; jp < np; jp++) {
        __m512bh p0 = (__m512bh)_mm512_loadu_si512(pp + (size_t)jp * 32);
        __m512bh p1 = (__m512bh)_mm512_loadu_si512(pp + (size_t)jp * 32 + 16);
        const uint32_t *vr = vp + (size_t)jp * hd + e;
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            if (i < ne) {
                __m512bh vb = (__m512bh)_mm512_set1_epi32((int)vr[i]);
                o[i][0] = _mm512_dpbf16_ps(o[i][0], p0, vb);
                o[i][1] = _mm512_dpbf16_ps(o[i][1], p1, vb);
            }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        if (i < ne) {
            _mm512_storeu_ps(acct + (size_t)(e + i) * 32, o[i][0]);
            _mm512_storeu_ps(acct + (size_t)(e + i) * 32 + 16, o[i][1]);
        }
}

TGT_DP void sx_avx512_att_qt_dp(const float *qt, const float *kt, const float *v, int bt, int nj,
                                int hd, float scale, int vis0, int vstep, float *m, float *l,
                                float *acct, float *kpad)
{
    if (hd > 2 * SX_ATT_DP_MAX_HD2 || hd % 2) {
        sx_avx512_att_qt(qt, kt, v, bt, nj, hd, scale, vis0, vstep, m, l, acct, kpad);
        return;
    }
    uint32_t qp[SX_ATT_DP_MAX_HD2 * 32], kp[SX_ATT_DP_MAX_HD2 * 16];
    uint32_t vp[8 * 2 * SX_ATT_DP_MAX_HD2], pp[8 * 32];
    float s[16][32];
    int hd2 = hd / 2;
    for (int d = 0; d < hd2; d++)
        for (int h = 0; h < 2; h++)
            _mm512_storeu_si512(qp + (size_t)d * 32 + 16 * h,
                                pair16(_mm512_loadu_ps(qt + (size_t)(2 * d) * 32 + 16 * h),
                                       _mm512_loadu_ps(qt + (size_t)(2 * d + 1) * 32 + 16 * h)));
    const __m512 zero = _mm512_setzero_ps();
    for (int j0 = 0; j0 < nj; j0 += 16) {
        int nk = nj - j0 < 16 ? nj - j0 : 16, np = (nk + 1) / 2;
        /* masked loads: keys past nk are zero and nothing past the block is read */
        __mmask16 km = lanes(nk);
        for (int d = 0; d < hd2; d++)
            _mm512_storeu_si512(kp + (size_t)d * 16,
                                pair16(_mm512_maskz_loadu_ps(km, kt + (size_t)(2 * d) * bt + j0),
                                       _mm512_maskz_loadu_ps(km, kt + (size_t)(2 * d + 1) * bt + j0)));
        qk16_dp(qp, kp, nk, hd2, s);
        __m512 corr[2];
        softmax16(s, nk, j0, vis0, vstep, scale, m, l, corr);
        for (int jp = 0; jp < np; jp++) {
            int j = 2 * jp, odd = j + 1 < nk;
            const float *v0 = v + (size_t)(j0 + j) * hd, *v1 = v0 + hd;
            for (int h = 0; h < 2; h++)
                _mm512_storeu_si512(pp + (size_t)jp * 32 + 16 * h,
                                    pair16(_mm512_loadu_ps(s[j] + 16 * h),
                                           odd ? _mm512_loadu_ps(s[j + 1] + 16 * h) : zero));
            for (int d = 0; d < hd; d += 16) {
                __mmask16 dm = lanes(hd - d);
                _mm512_mask_storeu_epi32(vp + (size_t)jp * hd + d, dm,
                                         pair16(_mm512_maskz_loadu_ps(dm, v0 + d),
                                                odd ? _mm512_maskz_loadu_ps(dm, v1 + d) : zero));
            }
        }
        for (int e = 0; e < hd; e += 8)
            pv_slice_dp(vp, hd, np, e, hd - e < 8 ? hd - e : 8, corr, pp, acct);
    }
}

/* The sum of squares in double, as the scalar form's, in 16 lanes (the
 * scalar loop's one dependent add per element was 2-3% of prefill); the
 * scaling rounds exactly as sx_cpu_rmsnorm's. */
TGT void sx_avx512_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
        __m512d b = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        s0 = _mm512_fmadd_pd(a, a, s0);
        s1 = _mm512_fmadd_pd(b, b, s1);
    }
    for (; i < n; i += 8) {
        __mmask8 m = (__mmask8)(n - i >= 8 ? 0xff : (1u << (n - i)) - 1);
        __m512d a = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, x + i));
        s0 = _mm512_fmadd_pd(a, a, s0);
    }
    double ss = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    float var = (float)(ss / n);
    __m512 inv = _mm512_set1_ps((float)(1.0 / sqrt((double)(var + eps))));
    for (i = 0; i < n; i += 16) {
        __mmask16 m = lanes(n - i);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + i), v));
    }
}

/* silu(g) * u with sx_avx512_exp's e^x: the same roundings as
 * sx_cpu_swiglu on this path, without the pass through memory */
TGT void sx_avx512_swiglu(float *g, const float *u, int n)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = lanes(n - i);
        __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
        __m512 t = exp16(_mm512_sub_ps(_mm512_setzero_ps(), gv));
        __m512 r = _mm512_mul_ps(_mm512_div_ps(gv, _mm512_add_ps(one, t)),
                                 _mm512_maskz_loadu_ps(m, u + i));
        _mm512_mask_storeu_ps(g + i, m, r);
    }
}

TGT void sx_avx512_bf16_to_f32(float *y, const uint16_t *x, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(x + i)));
        _mm512_storeu_ps(y + i, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
    }
    for (; i < n; i++)
        y[i] = sx_bf16_to_f32(x[i]);
}

/* q4 through VNNI where the CPU has it (cpu_matmul_q4.c) */
static void mm_q4(const uint8_t *wp, int k, const float *xp, int n_tok, float *y, long ldy,
                  int r0, int r1, int accumulate)
{
    if (sx_avx512_q4_vnni_usable())
        sx_avx512_mm_q4_vnni(wp, k, xp, n_tok, y, ldy, r0, r1, accumulate);
    else
        sx_avx512_mm_q4_bw(wp, k, xp, n_tok, y, ldy, r0, r1, accumulate);
}

const sx_cpu_kernels sx_cpu_avx512_kernels = {
    .name = "avx512", .path = SX_CPU_AVX512, .tile = TT,
    .mm_bf16 = sx_avx512_mm_bf16, .mm_q8 = sx_avx512_mm_q8, .mm_q4 = mm_q4,
    .att_block = sx_avx512_att_block, .exp = sx_avx512_exp,
    .rmsnorm = sx_avx512_rmsnorm, .swiglu = sx_avx512_swiglu,
    .bf16_to_f32 = sx_avx512_bf16_to_f32,
};

#else
/* Not x86-64: the table exists so the program links; the dispatcher never
 * hands it out because the CPU check fails. */
const sx_cpu_kernels sx_cpu_avx512_kernels = { .name = "avx512", .path = SX_CPU_AVX512 };
void sx_avx512_att_qt(const float *qt, const float *kt, const float *v, int bt, int nj, int hd,
                      float scale, int vis0, int vstep, float *m, float *l, float *acct,
                      float *kpad)
{
    (void)qt; (void)kt; (void)v; (void)bt; (void)nj; (void)hd; (void)scale; (void)vis0;
    (void)vstep; (void)m; (void)l; (void)acct; (void)kpad;
}
void sx_avx512_att_qt_dp(const float *qt, const float *kt, const float *v, int bt, int nj,
                         int hd, float scale, int vis0, int vstep, float *m, float *l,
                         float *acct, float *kpad)
{
    sx_avx512_att_qt(qt, kt, v, bt, nj, hd, scale, vis0, vstep, m, l, acct, kpad);
}
void sx_avx512_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
    sx_cpu_rmsnorm(y, x, w, n, eps);
}
void sx_avx512_swiglu(float *g, const float *u, int n)
{
    (void)g; (void)u; (void)n;
}
void sx_avx512_bf16_to_f32(float *y, const uint16_t *x, size_t n)
{
    sx_cpu_bf16_to_f32(y, x, n);
}
#endif
