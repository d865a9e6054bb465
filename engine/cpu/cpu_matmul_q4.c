/* q4 weights on AVX-512 (cpu_kernels.h has the panel layout): the tokens'
 * activations quantised to int8 per block of 32 k, then per panel and
 * tile of up to TG tokens the integer sums of each block -- through
 * AVX512-VNNI where the CPU has it, else AVX-512BW -- scaled by the
 * weights' group scale and the block's activation scale into f32 sums.
 * Decode reads 4.5 bits per weight (a 32-k group: 32 f16 scales + 512
 * bytes of nibbles per panel), so it streams at the memory's pace with
 * most of the core idle; the same kernel serves batches and prefill, where
 * one unpacked weight vector meets TG tokens. */
#include "engine/cpu/cpu_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <float.h>
#include <immintrin.h>

#include "engine/cpu/cpu_q4.h"
#include "engine/cpu/cpu_xtile.h"

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define INL static inline __attribute__((always_inline)) TGT

enum {
    TG = 4,            /* tokens per register tile: 4 accumulators each */
    XT = 12,           /* the activation tile of the AVX-512 / AMX paths */
    PF_AHEAD = 4096,
};

INL __mmask16 lanes(int n)
{
    return (__mmask16)(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1);
}

/* sx_q4_quant_x in AVX-512: the same products and the same rounding (to
 * nearest even), so the same bytes */
TGT static void xquant(const float *xp, int n_tok, int tile, int t, int k, int8_t *xq, float *sx,
                       int32_t *s8)
{
    const __m512i lim = _mm512_set1_epi32(127), nlim = _mm512_set1_epi32(-127);
    int k2 = (k + 1) / 2, nb = sx_q4_kpad(k) / SX_Q4_XBLOCK;
    for (int b = 0; b < nb; b++) {
        __m512 v[2];
        sx_xtile_pairs16(xp, n_tok, tile, t, k2, b * (SX_Q4_XBLOCK / 2), v);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1])));
        if (!(amax > 0.0f) || !(amax <= FLT_MAX)) {
            _mm256_storeu_si256((__m256i *)(xq + b * SX_Q4_XBLOCK), _mm256_setzero_si256());
            sx[b] = 0.0f;
            s8[b] = 0;
            continue;
        }
        __m512 inv = _mm512_set1_ps(127.0f / amax);
        __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v[0], inv));
        __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v[1], inv));
        q0 = _mm512_max_epi32(_mm512_min_epi32(q0, lim), nlim);
        q1 = _mm512_max_epi32(_mm512_min_epi32(q1, lim), nlim);
        _mm_storeu_si128((__m128i *)(xq + b * SX_Q4_XBLOCK), _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(xq + b * SX_Q4_XBLOCK + 16), _mm512_cvtepi32_epi8(q1));
        sx[b] = amax / 127.0f;
        s8[b] = 8 * _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    }
}

#define Q4_NAME(x) x##_vnni
#define Q4_TGT "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"
#define Q4_VNNI 1
#include "engine/cpu/cpu_q4_avx512_tile.h"
#undef Q4_NAME
#undef Q4_TGT
#undef Q4_VNNI

#define Q4_NAME(x) x##_bw
#define Q4_TGT "avx512f,avx512bw,avx512vl,avx2,fma,f16c"
#define Q4_VNNI 0
#include "engine/cpu/cpu_q4_avx512_tile.h"
#undef Q4_NAME
#undef Q4_TGT
#undef Q4_VNNI

void sx_avx512_mm_q4_vnni(const uint8_t *wp, int k, const float *xp, int n_tok, float *y,
                          long ldy, int r0, int r1, int accumulate)
{
    sx_q4_drive(wp, k, xp, n_tok, XT, y, ldy, r0, r1, accumulate, TG, xquant, tile_any_vnni);
}

void sx_avx512_mm_q4_bw(const uint8_t *wp, int k, const float *xp, int n_tok, float *y, long ldy,
                        int r0, int r1, int accumulate)
{
    sx_q4_drive(wp, k, xp, n_tok, XT, y, ldy, r0, r1, accumulate, TG, xquant, tile_any_bw);
}

int sx_avx512_q4_vnni_usable(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni");
}

#endif
