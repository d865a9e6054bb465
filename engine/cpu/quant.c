/* int8 weight quantisation: symmetric, one f32 scale per output row, so a
 * row's dot product is scale * sum(q * x) and the kernels need no zero
 * point.  Packed into panels of SX_PANEL rows, k-major, k padded to even
 * (cpu_kernels.h).  Below them, the 4-bit group-wise format. */
#include "engine/cpu/cpu_kernels.h"

#include <float.h>
#include <math.h>

/* scale of a row; *inv multiplies a weight into [-127, 127].  An all-zero
 * (or non-finite, which no real checkpoint has) row gets 0: all q are 0. */
static float row_scale(const uint16_t *wr, int cols, float *inv)
{
    float amax = 0.0f;
    for (int i = 0; i < cols; i++)
        amax = fmaxf(amax, fabsf(sx_bf16_to_f32(wr[i])));
    if (!(amax > 0.0f) || !isfinite(amax)) {
        *inv = 0.0f;
        return 0.0f;
    }
    *inv = 127.0f / amax;
    return amax / 127.0f;
}

static int8_t quant(uint16_t w, float inv)
{
    float v = nearbyintf(sx_bf16_to_f32(w) * inv);
    v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
    return (int8_t)v;
}

void sx_quant_q8_rows(const uint16_t *w, long r0, long r1, int cols, int8_t *q, float *scale)
{
    for (long r = r0; r < r1; r++) {
        float inv;
        scale[r] = row_scale(w + r * cols, cols, &inv);
        for (int i = 0; i < cols; i++)
            q[r * cols + i] = quant(w[r * cols + i], inv);
    }
}

size_t sx_pack_q8_size(int rows, int k, int layout)
{
    return (size_t)sx_pad_rows(rows) * (size_t)(layout != SX_Q8_PAIRS ? sx_q8_kpad(k) : (k + 1) & ~1);
}

/* Every layout, panel by panel.  SX_Q8_PAIRS: for each k, the 32 rows'
 * values.  SX_Q8_VNNI: for each group of 4 k, the 32 rows' 4 values as
 * unsigned bytes q + 128 (vpdpbusd multiplies unsigned by signed bytes;
 * the kernel takes 128 * sum(x) back out); k padded to 32 with q = 0.
 * SX_Q8_QUADS: the same places, the values as they are (signed). */
void sx_pack_q8(const uint16_t *w, int rows, int k, int r0, int r1, int layout, int8_t *wp,
                float *scale)
{
    int quads = layout != SX_Q8_PAIRS, vnni = layout == SX_Q8_VNNI;
    int kp = quads ? sx_q8_kpad(k) : (k + 1) & ~1;
    for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
        int8_t *dst = wp + (size_t)p0 * kp;
        for (int j = 0; j < SX_PANEL; j++) {
            int r = p0 + j;
            const uint16_t *src = r < rows ? w + (size_t)r * k : w;
            float inv = 0.0f;
            scale[r] = r < rows ? row_scale(src, k, &inv) : 0.0f;
            for (int i = 0; i < kp; i++) {
                int q = r < rows && i < k ? quant(src[i], inv) : 0;
                if (quads)
                    dst[(size_t)(i / 4) * 4 * SX_PANEL + 4 * j + i % 4] =
                        vnni ? (int8_t)(uint8_t)(q + 128) : (int8_t)q;
                else
                    dst[(size_t)i * SX_PANEL + j] = (int8_t)q;
            }
        }
    }
}

/* ---- 4-bit weights (cpu_kernels.h has the layout and the rounding) ---- */

float sx_f16_to_f32(uint16_t h)
{
    uint32_t e = h >> 10 & 0x1fu, m = h & 0x3ffu;
    float v;
    if (e == 0) {
        v = ldexpf((float)m, -24);   /* zero or subnormal: exact */
    } else if (e == 31) {
        v = m ? NAN : INFINITY;
    } else {
        union { uint32_t u; float f; } c = { (e + 112) << 23 | m << 13 };
        v = c.f;
    }
    return h & 0x8000u ? -v : v;
}

uint16_t sx_f32_to_f16(float f)
{
    union { float f; uint32_t u; } c = { f };
    uint32_t sign = c.u >> 16 & 0x8000u, a = c.u & 0x7fffffffu;
    if (a >= 0x7f800000u)                         /* inf, NaN (kept quiet) */
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
    if (a >= 0x477ff000u)                         /* rounds past 65504 */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) {                       /* a normal f16 */
        uint32_t m = a - 0x38000000u;             /* exponent bias 127 -> 15 */
        m += 0x0fffu + (m >> 13 & 1u);            /* nearest even; a carry bumps the exponent */
        return (uint16_t)(sign | m >> 13);
    }
    /* subnormal (units of 2^-24; 1024 rounds up into the smallest normal,
     * whose encoding is the same number) */
    return (uint16_t)(sign | (uint32_t)nearbyintf(fabsf(f) * 16777216.0f));
}

/* One group: n real values of w (the rest of the group is padding, 0)
 * into q[0 .. SX_Q4_GROUP) in [-8, 7]; returns the f16 scale.  A group
 * whose largest value is 0, not finite, or whose scale underflows f16 is
 * all zeros with scale 0. */
static uint16_t q4_group(const uint16_t *w, int n, int8_t *q)
{
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        float v = sx_bf16_to_f32(w[i]);
        if (fabsf(v) > fabsf(m))
            m = v;
    }
    uint16_t h = 0;
    float d = 0.0f;
    if (m != 0.0f && isfinite(m)) {
        h = sx_f32_to_f16(m / -8.0f);
        if ((h & 0x7c00u) == 0x7c00u)   /* past f16: the largest scale, q clamps */
            h = (uint16_t)((h & 0x8000u) | 0x7bffu);
        d = sx_f16_to_f32(h);
    }
    if (d == 0.0f) {
        for (int i = 0; i < SX_Q4_GROUP; i++)
            q[i] = 0;
        return 0;
    }
    float inv = 1.0f / d;
    for (int i = 0; i < SX_Q4_GROUP; i++) {
        float r = i < n ? nearbyintf(sx_bf16_to_f32(w[i]) * inv) : 0.0f;
        q[i] = (int8_t)(r > 7.0f ? 7.0f : r >= -8.0f ? r : r < -8.0f ? -8.0f : 0.0f); /* NaN: 0 */
    }
    return h;
}

size_t sx_pack_q4_size(int rows, int k)
{
    return (size_t)(sx_pad_rows(rows) / SX_PANEL) * (size_t)(sx_q4_kpad(k) / SX_Q4_GROUP) *
           SX_Q4_GROUP_BYTES;
}

void sx_pack_q4(const uint16_t *w, int rows, int k, int r0, int r1, uint8_t *wp)
{
    int ng = sx_q4_kpad(k) / SX_Q4_GROUP;
    size_t pstride = (size_t)ng * SX_Q4_GROUP_BYTES;
    int8_t q[SX_Q4_GROUP];
    for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
        uint8_t *pan = wp + (size_t)(p0 / SX_PANEL) * pstride;
        for (int j = 0; j < SX_PANEL; j++) {
            int r = p0 + j;
            for (int g = 0; g < ng; g++) {
                int n = k - g * SX_Q4_GROUP < SX_Q4_GROUP ? k - g * SX_Q4_GROUP : SX_Q4_GROUP;
                uint16_t h = r < rows ? q4_group(w + (size_t)r * k + (size_t)g * SX_Q4_GROUP, n, q)
                                      : q4_group(w, 0, q);
                uint8_t *gb = pan + (size_t)g * SX_Q4_GROUP_BYTES;
                gb[2 * j] = (uint8_t)(h & 0xffu);
                gb[2 * j + 1] = (uint8_t)(h >> 8);
                for (int s = 0; s < SX_Q4_GROUP / 8; s++)
                    for (int i = 0; i < 4; i++)
                        gb[2 * SX_PANEL + s * 4 * SX_PANEL + 4 * j + i] =
                            (uint8_t)((q[8 * s + i] + 8) | (q[8 * s + 4 + i] + 8) << 4);
            }
        }
    }
}

void sx_quant_q4_rows(const uint16_t *w, long r0, long r1, int cols, int8_t *q, float *scale)
{
    int ng = sx_q4_kpad(cols) / SX_Q4_GROUP;
    int8_t qg[SX_Q4_GROUP];
    for (long r = r0; r < r1; r++)
        for (int g = 0; g < ng; g++) {
            int n = cols - g * SX_Q4_GROUP < SX_Q4_GROUP ? cols - g * SX_Q4_GROUP : SX_Q4_GROUP;
            scale[r * ng + g] =
                sx_f16_to_f32(q4_group(w + r * cols + (long)g * SX_Q4_GROUP, n, qg));
            for (int i = 0; i < n; i++)
                q[r * cols + (long)g * SX_Q4_GROUP + i] = qg[i];
        }
}

/* sx_q4_quant_x and sx_q8_quant_x: nb blocks of 32 (s8 NULL: not wanted) */
static void quant_x(const float *xp, int n_tok, int tile, int t, int k, int nb, int8_t *xq,
                    float *sx, int32_t *s8)
{
    int k2 = (k + 1) / 2, j = t / tile, u = t % tile;
    int tj = n_tok - j * tile < tile ? n_tok - j * tile : tile;
    const float *xt = xp + (size_t)j * tile * 2 * k2 + 2 * u;
    for (int b = 0; b < nb; b++) {
        float v[SX_Q4_XBLOCK], amax = 0.0f;
        for (int i = 0; i < SX_Q4_XBLOCK; i++) {
            int kk = b * SX_Q4_XBLOCK + i;
            v[i] = kk < k ? xt[(size_t)(kk / 2) * 2 * tj + (kk & 1)] : 0.0f;
            float a = fabsf(v[i]);
            amax = a > amax ? a : amax;
        }
        int8_t *xb = xq + b * SX_Q4_XBLOCK;
        if (!(amax > 0.0f) || !(amax <= FLT_MAX)) {
            /* all zero, or not finite: no scale represents it, and zero
             * keeps every row's sum finite */
            for (int i = 0; i < SX_Q4_XBLOCK; i++)
                xb[i] = 0;
            sx[b] = 0.0f;
            if (s8)
                s8[b] = 0;
            continue;
        }
        float inv = 127.0f / amax;
        int32_t sum = 0;
        for (int i = 0; i < SX_Q4_XBLOCK; i++) {
            float r = nearbyintf(v[i] * inv);
            r = r > 127.0f ? 127.0f : r >= -127.0f ? r : r < -127.0f ? -127.0f : 0.0f;
            xb[i] = (int8_t)r;
            sum += xb[i];
        }
        sx[b] = amax / 127.0f;
        if (s8)
            s8[b] = 8 * sum;
    }
}

void sx_q4_quant_x(const float *xp, int n_tok, int tile, int t, int k, int8_t *xq, float *sx,
                   int32_t *s8)
{
    quant_x(xp, n_tok, tile, t, k, sx_q4_kpad(k) / SX_Q4_XBLOCK, xq, sx, s8);
}

void sx_q8_quant_x(const float *xp, int n_tok, int tile, int t, int k, int8_t *xq, float *sx)
{
    quant_x(xp, n_tok, tile, t, k, sx_q8_kpad(k) / SX_Q8_XBLOCK, xq, sx, NULL);
}

/* ---- AWQ checkpoints in the q4 panels ----
 *
 * AWQ stores w = (q - z) * s with q, z in 0..15 per group of `group` k.
 * The panels hold w = (nib - 8) * scale, so nib = q and scale = s (AWQ's
 * scales are f16 already) reproduce (q - 8) * s exactly, and the rest,
 * (8 - z) * s, is one f32 per row and AWQ group: a zero correction added
 * after the kernel as zb[g][r] * (sum of x over group g).  This keeps every
 * q4 kernel path as it is (they stay symmetric), costs 4 bytes per 128
 * weights, and loses nothing: storing zero-adjusted scales instead cannot
 * express q - z, which spans -15..15, in 4 bits. */
void sx_pack_q4_awq(const uint8_t *q, const uint16_t *scale, const uint8_t *zero, int rows, int k,
                    int group, int r0, int r1, uint8_t *wp, float *zb)
{
    int ng = sx_q4_kpad(k) / SX_Q4_GROUP, nag = k / group;
    size_t pstride = (size_t)ng * SX_Q4_GROUP_BYTES, ldz = (size_t)sx_pad_rows(rows);
    for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
        uint8_t *pan = wp + (size_t)(p0 / SX_PANEL) * pstride;
        for (int j = 0; j < SX_PANEL; j++) {
            int r = p0 + j;
            const uint8_t *qr = r < rows ? q + (size_t)r * (size_t)(k / 2) : NULL;
            for (int g = 0; g < nag; g++)
                zb[(size_t)g * ldz + (size_t)r] =
                    r < rows ? (float)(8 - zero[(size_t)r * nag + g]) *
                                   sx_f16_to_f32(scale[(size_t)r * nag + g])
                             : 0.0f;
            for (int g = 0; g < ng; g++) {
                uint16_t h = r < rows ? scale[(size_t)r * nag + (size_t)g * SX_Q4_GROUP / group] : 0;
                uint8_t *gb = pan + (size_t)g * SX_Q4_GROUP_BYTES, nib[SX_Q4_GROUP];
                gb[2 * j] = (uint8_t)(h & 0xffu);
                gb[2 * j + 1] = (uint8_t)(h >> 8);
                for (int i = 0; i < SX_Q4_GROUP; i++) {
                    int kk = g * SX_Q4_GROUP + i;
                    nib[i] = qr && kk < k ? (uint8_t)(qr[kk / 2] >> (4 * (kk & 1)) & 15u) : 8;
                }
                for (int s = 0; s < SX_Q4_GROUP / 8; s++)
                    for (int i = 0; i < 4; i++)
                        gb[2 * SX_PANEL + s * 4 * SX_PANEL + 4 * j + i] =
                            (uint8_t)(nib[8 * s + i] | nib[8 * s + 4 + i] << 4);
            }
        }
    }
}

/* each token's sum over each group, s = s + (x[2i] + x[2i + 1]) pair by
 * pair in k order: the order every caller shares, so a sum computed once
 * for a matrix call is the one each thread would have computed.  The
 * tokens of a tile sit side by side, so the loop runs over them inside
 * (independent sums) rather than down one token's strided k. */
void sx_q4_group_sums(const float *xp, int n_tok, int tile, int k, int group, int t0, int t1,
                      float *xs)
{
    int k2 = (k + 1) / 2, nag = k / group;
    for (int t = t0; t < t1;) {
        int j = t / tile, u0 = t % tile;
        int tj = n_tok - j * tile < tile ? n_tok - j * tile : tile;
        int u1 = t1 - j * tile < tj ? t1 - j * tile : tj;
        const float *xt = xp + (size_t)j * tile * 2 * k2;
        for (int g = 0; g < nag; g++) {
            float s[64];
            for (int ub = u0; ub < u1; ub += 64) {
                int nu = u1 - ub < 64 ? u1 - ub : 64;
                for (int u = 0; u < nu; u++)
                    s[u] = 0.0f;
                for (int i = g * group / 2; i < (g + 1) * group / 2; i++) {
                    const float *xi = xt + (size_t)i * 2 * tj + 2 * ub;
                    for (int u = 0; u < nu; u++)
                        s[u] += xi[2 * u] + xi[2 * u + 1];
                }
                for (int u = 0; u < nu; u++)
                    xs[(size_t)(j * tile + ub + u - t0) * nag + g] = s[u];
            }
        }
        t = j * tile + u1;
    }
}

/* y[r] + zb[0][r] * s0 + zb[1][r] * s1 + ..., added group by group in that
 * order, each product and each sum rounded to f32 (no fused multiply-add:
 * the product is its own statement, which neither GCC in ISO C mode nor
 * clang's default contraction fuses), so every width gives the same bits.  Rows go in blocks
 * of RB held in registers, so y is read and written once per token, not
 * once per group; the blocks' fixed trip count is what lets the compiler
 * vectorise them (the AVX-512 copy: one register per 16 rows; AVX2: 8).
 * Prefill spends real time here: one multiply and add per row, group and
 * token of every AWQ matrix. */
enum { ZB_RB = 32 };

#define ZERO_APPLY_BODY                                                                \
    int nag = k / group;                                                               \
    size_t ldz = (size_t)sx_pad_rows(rows);                                            \
    for (int t = 0; t < n_tok; t++) {                                                  \
        const float *st = xs + (size_t)t * nag;                                        \
        float *restrict yt = y + (long)t * ldy;                                        \
        int rb = r0;                                                                   \
        for (; rb + ZB_RB <= r1; rb += ZB_RB) {                                        \
            float acc[ZB_RB];                                                          \
            for (int i = 0; i < ZB_RB; i++)                                            \
                acc[i] = yt[rb + i];                                                   \
            for (int g = 0; g < nag; g++) {                                            \
                const float *restrict zg = zb + (size_t)g * ldz + rb;                  \
                float s = st[g];                                                       \
                for (int i = 0; i < ZB_RB; i++) {                                      \
                    float m = zg[i] * s; /* own statement: never fused */              \
                    acc[i] += m;                                                       \
                }                                                                      \
            }                                                                          \
            for (int i = 0; i < ZB_RB; i++)                                            \
                yt[rb + i] = acc[i];                                                   \
        }                                                                              \
        for (; rb < r1; rb++) {                                                        \
            float a = yt[rb];                                                          \
            for (int g = 0; g < nag; g++) {                                            \
                float m = zb[(size_t)g * ldz + rb] * st[g];                            \
                a += m;                                                                \
            }                                                                          \
            yt[rb] = a;                                                                \
        }                                                                              \
    }

static void zero_apply_c(const float *zb, int rows, int group, int k, const float *xs,
                         int n_tok, float *y, long ldy, int r0, int r1)
{
    ZERO_APPLY_BODY
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx512f"))) static void zero_apply_avx512(const float *zb, int rows,
                                                                 int group, int k,
                                                                 const float *xs, int n_tok,
                                                                 float *y, long ldy, int r0,
                                                                 int r1)
{
    ZERO_APPLY_BODY
}

__attribute__((target("avx2"))) static void zero_apply_avx2(const float *zb, int rows, int group,
                                                            int k, const float *xs, int n_tok,
                                                            float *y, long ldy, int r0, int r1)
{
    ZERO_APPLY_BODY
}
#endif

typedef void (*zero_apply_fn)(const float *zb, int rows, int group, int k, const float *xs,
                              int n_tok, float *y, long ldy, int r0, int r1);

/* the widest form this CPU runs, chosen on the first call (every thread
 * that races there chooses the same; every form gives the same bits) */
static zero_apply_fn zero_apply_pick(void)
{
    static zero_apply_fn chosen;
    zero_apply_fn f = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
    if (f)
        return f;
    f = zero_apply_c;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        f = zero_apply_avx512;
    else if (__builtin_cpu_supports("avx2"))
        f = zero_apply_avx2;
#endif
    __atomic_store_n(&chosen, f, __ATOMIC_RELAXED);
    return f;
}

void sx_q4_zero_apply(const float *zb, int rows, int group, int k, const float *xs, int n_tok,
                      float *y, long ldy, int r0, int r1)
{
    zero_apply_pick()(zb, rows, group, k, xs, n_tok, y, ldy, r0, r1);
}

void sx_q4_zero_correct(const float *zb, int rows, int group, int k, const float *xp, int n_tok,
                        int tile, float *y, long ldy, int r0, int r1)
{
    enum { MAXG = 1 << 13 };   /* k <= 2^18 (model_config.c), group >= 32 */
    float xs[MAXG];
    for (int t = 0; t < n_tok; t++) {
        sx_q4_group_sums(xp, n_tok, tile, k, group, t, t + 1, xs);
        sx_q4_zero_apply(zb, rows, group, k, xs, 1, y + (long)t * ldy, ldy, r0, r1);
    }
}
