/* Reading the packed activations (cpu_kernels.h: tiles of `tile` tokens,
 * each [k pair][Tj][2] floats) token by token, for the kernels that
 * re-lay them out (AMX tiles, VNNI digits).  x86-64 AVX-512 only; include
 * from files that target it. */
#ifndef SX_CPU_XTILE_H
#define SX_CPU_XTILE_H

#include <immintrin.h>

/* The 16 k pairs [p0, p0 + 16) of token t as two vectors: pairs p0..p0+7
 * in v[0], the next 8 in v[1] (each pair's even k first); pairs past k2
 * read as zero. */
static inline __attribute__((always_inline, target("avx512f,avx512vl,avx2"))) void
sx_xtile_pairs16(const float *xp, int n_tok, int tile, int t, int k2, int p0, __m512 v[2])
{
    int j = t / tile, u = t % tile, Tj = n_tok - j * tile < tile ? n_tok - j * tile : tile;
    const float *xt = xp + (size_t)j * tile * 2 * k2;
    /* pair (p, u) of the tile is pair number p * Tj + u */
    __m256i i0 = _mm256_add_epi32(
        _mm256_mullo_epi32(_mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32(p0)),
                           _mm256_set1_epi32(Tj)),
        _mm256_set1_epi32(u));
    __m256i i1 = _mm256_add_epi32(i0, _mm256_set1_epi32(8 * Tj));
    int n0 = k2 - p0, n1 = k2 - p0 - 8;
    __mmask8 m0 = (__mmask8)(n0 >= 8 ? 0xff : n0 <= 0 ? 0 : (1u << n0) - 1);
    __mmask8 m1 = (__mmask8)(n1 >= 8 ? 0xff : n1 <= 0 ? 0 : (1u << n1) - 1);
    v[0] = _mm512_castsi512_ps(_mm512_mask_i32gather_epi64(_mm512_setzero_si512(), m0, i0, xt, 8));
    v[1] = _mm512_castsi512_ps(_mm512_mask_i32gather_epi64(_mm512_setzero_si512(), m1, i1, xt, 8));
}

#endif
