/* The AVX-512 q4 panel kernel, included twice by cpu_matmul_q4.c: once
 * with Q4_VNNI 1 (vpdpbusd: 64 byte products summed in fours into int32
 * per instruction) and once with Q4_VNNI 0 (AVX-512BW: vpmaddubsw's int16
 * pair sums, added up over a block of 32 k -- at most 8 * 2 * 15 * 127 =
 * 30,480, so int16 holds them -- then vpmaddwd by ones into int32).
 * Expects Q4_NAME(x), Q4_TGT, TG and the includes of cpu_matmul_q4.c. */

static inline __attribute__((always_inline, target(Q4_TGT))) void
Q4_NAME(tile)(const uint8_t *pan, int kp, const int8_t *xq, const float *sx, const int32_t *s8,
              float *y, long ldy, int nrows, const int T, int add)
{
    enum { SUB = SX_Q4_XBLOCK / 8, BPG = SX_Q4_GROUP / SX_Q4_XBLOCK };
    const __m512i m4 = _mm512_set1_epi8(0x0f);
#if !Q4_VNNI
    const __m512i ones = _mm512_set1_epi16(1);
#endif
    int nb = kp / SX_Q4_XBLOCK, ng = kp / SX_Q4_GROUP;
    __m512 f0[TG], f1[TG];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        f0[t] = f1[t] = _mm512_setzero_ps();
    for (int g = 0; g < ng; g++) {
        const uint8_t *gb = pan + (size_t)g * SX_Q4_GROUP_BYTES;
        /* one stream per panel, faster than the hardware prefetcher asks */
#pragma GCC unroll 16
        for (int l = 0; l < SX_Q4_GROUP_BYTES; l += 64)
            _mm_prefetch((const char *)gb + PF_AHEAD + l, _MM_HINT_T0);
        __m512 w0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)gb));
        __m512 w1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(gb + 32)));
        for (int bb = 0; bb < BPG; bb++) {
            int b = g * BPG + bb;
            __m512i a0[TG], a1[TG];
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
#if Q4_VNNI
                /* the sums start at -8 sum(x): the weights' +8 taken back out */
                a0[t] = a1[t] = _mm512_set1_epi32(-s8[(size_t)t * nb + b]);
#else
                a0[t] = a1[t] = _mm512_setzero_si512();
#endif
            }
#pragma GCC unroll 4
            for (int s = 0; s < SUB; s++) {
                const uint8_t *pd = gb + 2 * SX_PANEL + (size_t)(bb * SUB + s) * 4 * SX_PANEL;
                __m512i v0 = _mm512_loadu_si512((const void *)pd);
                __m512i v1 = _mm512_loadu_si512((const void *)(pd + 64));
                __m512i l0 = _mm512_and_si512(v0, m4);
                __m512i h0 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4);
                __m512i l1 = _mm512_and_si512(v1, m4);
                __m512i h1 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4);
#pragma GCC unroll 4
                for (int t = 0; t < T; t++) {
                    int32_t dl, dh;
                    const int8_t *xb = xq + (size_t)t * kp + b * SX_Q4_XBLOCK + 8 * s;
                    __builtin_memcpy(&dl, xb, 4);
                    __builtin_memcpy(&dh, xb + 4, 4);
                    __m512i xl = _mm512_set1_epi32(dl), xh = _mm512_set1_epi32(dh);
#if Q4_VNNI
                    a0[t] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(a0[t], l0, xl), h0, xh);
                    a1[t] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(a1[t], l1, xl), h1, xh);
#else
                    a0[t] = _mm512_add_epi16(a0[t], _mm512_add_epi16(_mm512_maddubs_epi16(l0, xl),
                                                                     _mm512_maddubs_epi16(h0, xh)));
                    a1[t] = _mm512_add_epi16(a1[t], _mm512_add_epi16(_mm512_maddubs_epi16(l1, xl),
                                                                     _mm512_maddubs_epi16(h1, xh)));
#endif
                }
            }
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
#if !Q4_VNNI
                __m512i c = _mm512_set1_epi32(-s8[(size_t)t * nb + b]);
                a0[t] = _mm512_add_epi32(_mm512_madd_epi16(a0[t], ones), c);
                a1[t] = _mm512_add_epi32(_mm512_madd_epi16(a1[t], ones), c);
#endif
                __m512 xs = _mm512_set1_ps(sx[(size_t)t * nb + b]);
                f0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a0[t]), _mm512_mul_ps(w0, xs), f0[t]);
                f1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a1[t]), _mm512_mul_ps(w1, xs), f1[t]);
            }
        }
    }
    __mmask16 k0 = lanes(nrows), k1 = lanes(nrows - 16);
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) {
        float *yt = y + t * ldy;
        __m512 v0 = f0[t], v1 = f1[t];
        if (add) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(k0, yt));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(k1, yt + 16));
        }
        _mm512_mask_storeu_ps(yt, k0, v0);
        _mm512_mask_storeu_ps(yt + 16, k1, v1);
    }
}

__attribute__((target(Q4_TGT))) static void
Q4_NAME(tile_any)(const uint8_t *pan, int kp, const int8_t *xq, const float *sx,
                  const int32_t *s8, int T, float *y, long ldy, int nrows, int add)
{
    switch (T) {
    case 1: Q4_NAME(tile)(pan, kp, xq, sx, s8, y, ldy, nrows, 1, add); break;
    case 2: Q4_NAME(tile)(pan, kp, xq, sx, s8, y, ldy, nrows, 2, add); break;
    case 3: Q4_NAME(tile)(pan, kp, xq, sx, s8, y, ldy, nrows, 3, add); break;
    default: Q4_NAME(tile)(pan, kp, xq, sx, s8, y, ldy, nrows, TG, add); break;
    }
}
