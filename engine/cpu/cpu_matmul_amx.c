/* AMX kernels: bf16 tile products for every input, decode included, so a
 * token's sums are the same alone or in any batch (batch invariance; the
 * tiles stream weights at the memory's pace for one token as the AVX-512
 * kernel does).  sx_amx_mm_bf16_variant keeps the AVX-512 kernel below 8
 * tokens, for sx_engine_opts.batch_variant.  Attention and exp are the
 * AVX-512 kernels, which this path extends; int8 is AVX512-VNNI's
 * (cpu_matmul_vnni.c).
 *
 * The bf16 weight panels already have the layout AMX wants for its "B"
 * operand: for each k pair the 32 rows' (even, odd) values, so 16 k pairs
 * of 16 rows are one B tile (64-byte rows, 128 bytes apart).  Activations
 * become the "A" operand: a tile's tokens as rows of bf16 k values.
 *
 * bf16 keeps 8 bits of an activation's mantissa, too few for the f32
 * tolerance every path is held to, so each activation is split into a
 * high and a low bf16 (x = hi + lo + r, |r| <= 2^-17 |x|) and both are
 * multiplied: twice the tile work, which AMX has to spare, for products as
 * close as the f32 paths'.  Weights are exact in bf16; sums are f32. */
#include "engine/cpu/cpu_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include "engine/cpu/cpu_xtile.h"
#include <stdlib.h>
#include <string.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16,fma")))
#define INL static inline __attribute__((always_inline)) TGT

enum {
    TT = 12,              /* tokens per activation tile, as the AVX-512 path */
    TB = 16,              /* tokens per A tile */
    MIN_TOK = 8,          /* fewer tokens: the AVX-512 kernel (both stream weights at the
                             memory's pace below 8; AMX wins from 8 on, 1.25x at 8) */
    KS = 4,               /* k steps (of 32) per slice: a panel's 8 KiB slice stays in L1
                             beside the blocks' A tiles (4 measured best of 2..32) */
    A_BUDGET = 1 << 20,   /* bytes of converted activations per chunk (L2) */
};

/* tiles: 0,1 = C of the even token block (rows 0-15, 16-31 of the panel),
 * 2,3 = C of the odd one, 4 = A hi, 5 = A lo, 6,7 = B (rows 0-15, 16-31) */
typedef struct tilecfg {
    uint8_t  palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t  rows[16];
} tilecfg;

/* m token rows in the C and A tiles (fewer than TB for decode, which then
 * loads and zeroes no padding rows); B tiles always 16 k pairs.  A row's
 * sums do not depend on the others', so m changes no result. */
INL void tiles_config(int m)
{
    tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 8; i++) {
        c.colsb[i] = 64;
        c.rows[i] = (uint8_t)(i < 6 ? m : 16);
    }
    _tile_loadconfig(&c);
}

/* Tokens [t0, t0 + nb) (nb <= TB) of the packed activations (tiles of TT
 * tokens, each [k pair][Tj][2] floats) into A tiles, one per k step of 32,
 * each `rows` rows of 64 bytes, contiguous: hi[(s*rows + u)*32 + i] is token u's
 * k = 32s + i; rows past nb and k past 2*k2 are zero.  A token's pairs
 * are gathered 8 at a time down its column of the packed tile. */
INL void to_a(const float *xp, int n_tok, int t0, int nb, int rows, int k2, int kpad,
              uint16_t *hi, uint16_t *lo)
{
    if (nb < rows) {
        memset(hi, 0, (size_t)rows * kpad * sizeof *hi);
        memset(lo, 0, (size_t)rows * kpad * sizeof *lo);
    }
    for (int u = 0; u < nb; u++) {
        uint16_t *h = hi + (size_t)u * 32, *l = lo + (size_t)u * 32;
        for (int kp = 0; kp < (k2 + 15) / 16 * 16; kp += 16) {
            __m512 v[2];
            sx_xtile_pairs16(xp, n_tok, TT, t0 + u, k2, kp, v);
            __m512 v0 = v[0], v1 = v[1];
            __m512i hb = (__m512i)_mm512_cvtne2ps_pbh(v1, v0);
            __m512 h0 = _mm512_castsi512_ps(
                _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(hb)), 16));
            __m512 h1 = _mm512_castsi512_ps(
                _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(hb, 1)), 16));
            __m512i lb = (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(v1, h1), _mm512_sub_ps(v0, h0));
            _mm512_storeu_si512((void *)(h + (size_t)kp * rows * 2), hb);
            _mm512_storeu_si512((void *)(l + (size_t)kp * rows * 2), lb);
        }
    }
}

INL __mmask16 lanes(int n)
{
    return (__mmask16)(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1);
}

/* a block's first nb tokens and nrows columns of y into c (TB x 32 sums,
 * stride 32 floats), zeros elsewhere: the sums then start from y as a
 * whole block's do (run_steps), so a token's result does not depend on
 * whether its block is whole */
INL void load_c(float *c, const float *y, long ldy, int nb, int nrows)
{
    __mmask16 m0 = lanes(nrows), m1 = lanes(nrows - 16);
    for (int t = 0; t < TB; t++) {
        _mm512_storeu_ps(c + t * 32, t < nb ? _mm512_maskz_loadu_ps(m0, y + t * ldy)
                                            : _mm512_setzero_ps());
        _mm512_storeu_ps(c + t * 32 + 16, t < nb ? _mm512_maskz_loadu_ps(m1, y + t * ldy + 16)
                                                 : _mm512_setzero_ps());
    }
}

/* c: a block's TB x 32 sums (stride 32 floats); its first nb tokens and
 * nrows columns to y, added to y's values when add */
INL void store_c(const float *c, float *y, long ldy, int nb, int nrows, int add)
{
    __mmask16 m0 = lanes(nrows), m1 = lanes(nrows - 16);
    for (int t = 0; t < nb; t++) {
        __m512 v0 = _mm512_loadu_ps(c + t * 32), v1 = _mm512_loadu_ps(c + t * 32 + 16);
        if (add) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, y + t * ldy));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, y + t * ldy + 16));
        }
        _mm512_mask_storeu_ps(y + t * ldy, m0, v0);
        _mm512_mask_storeu_ps(y + t * ldy + 16, m1, v1);
    }
}

/* k steps [s0, s1) of one panel for blocks b and b+1 (when two).  Block
 * u's 16 x 32 sums come from in[u] (ld_in[u] bytes per token row), or
 * start from zero when in[u] is NULL, and go to out[u] (ld_out[u]). */
INL void run_steps(const uint16_t *pan, const uint16_t *btail, int tail, int steps, int s0,
                   int s1, const uint16_t *ha, const uint16_t *hb, int rows, size_t per_blk,
                   float *const in[2], const long ld_in[2], float *const out[2],
                   const long ld_out[2], int two)
{
    if (!in[0]) {
        _tile_zero(0);
        _tile_zero(1);
    } else {
        _tile_loadd(0, in[0], ld_in[0]);
        _tile_loadd(1, in[0] + 16, ld_in[0]);
    }
    if (two && !in[1]) {
        _tile_zero(2);
        _tile_zero(3);
    } else if (two) {
        _tile_loadd(2, in[1], ld_in[1]);
        _tile_loadd(3, in[1] + 16, ld_in[1]);
    }
    /* each C tile's products sit four apart: one right after another
     * would wait for the first's latency */
    for (int s = s0; s < s1; s++) {
        const uint16_t *b = tail && s == steps - 1 ? btail : pan + (size_t)s * 16 * 64;
        _tile_loadd(4, ha + (size_t)s * rows * 32, 64);
        _tile_loadd(6, b, 128);
        _tile_loadd(7, b + 32, 128);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        if (two) {
            _tile_loadd(5, hb + (size_t)s * rows * 32, 64);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
        _tile_loadd(4, ha + per_blk + (size_t)s * rows * 32, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        if (two) {
            _tile_loadd(5, hb + per_blk + (size_t)s * rows * 32, 64);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, out[0], ld_out[0]);
    _tile_stored(1, out[0] + 16, ld_out[0]);
    if (two) {
        _tile_stored(2, out[1], ld_out[1]);
        _tile_stored(3, out[1] + 16, ld_out[1]);
    }
}

/* min_tok: fewer tokens run the AVX-512 kernel (whose sums differ from
 * the tiles'), 1 for none */
INL void mm_bf16_from(const uint16_t *wp, int k, const float *xp, int n_tok, float *y, long ldy,
                      int r0, int r1, int accumulate, int min_tok)
{
    int k2 = (k + 1) / 2, steps = (k2 + 15) / 16, kpad = steps * 32;
    int nblk = (n_tok + TB - 1) / TB;
    int cb = A_BUDGET / (TB * kpad * 4);
    cb = cb < 2 ? 2 : cb & ~1;
    if (cb > nblk)
        cb = nblk;
    /* token rows per tile: a decode-sized input configures and converts
     * only its own rows (a small buffer, no zeroing) */
    int rows = n_tok < TB ? n_tok : TB;
    size_t per_blk = (size_t)rows * kpad; /* uint16 of one block's hi (then lo) */
    uint16_t *abuf = NULL;
    float *cmem = NULL;
    if (n_tok >= (min_tok > 0 ? min_tok : 1)) {
        /* tile rows are whole cache lines only when the buffers are
         * line-aligned (a split row costs two loads); sizes are multiples
         * of 64 bytes already */
        abuf = aligned_alloc(64, (size_t)cb * 2 * per_blk * sizeof *abuf);
        cmem = aligned_alloc(64, (size_t)cb * TB * 32 * sizeof *cmem);
    }
    if (!abuf || !cmem) { /* decode-sized, or no memory: the AVX-512 kernel */
        free(abuf);
        free(cmem);
        sx_avx512_mm_bf16(wp, k, xp, n_tok, y, ldy, r0, r1, accumulate);
        return;
    }
    size_t pstride = (size_t)SX_PANEL * 2 * k2;
    /* the last k step of a panel when k2 is not a multiple of 16: its k
     * pairs, then zero rows (A is zero there too, but a tile load would
     * read past the panel) */
    _Alignas(64) uint16_t btail[16 * 64];
    int tail = k2 % 16;
    tiles_config(rows);
    for (int c0 = 0; c0 < nblk; c0 += cb) {
        int c1 = c0 + cb < nblk ? c0 + cb : nblk;
        for (int b = c0; b < c1; b++) {
            int nb = n_tok - b * TB < TB ? n_tok - b * TB : TB;
            uint16_t *h = abuf + (size_t)(b - c0) * 2 * per_blk;
            to_a(xp, n_tok, b * TB, nb, rows, k2, kpad, h, h + per_blk);
        }
        for (int p0 = r0; p0 < r1; p0 += SX_PANEL) {
            const uint16_t *pan = wp + (size_t)(p0 / SX_PANEL) * pstride;
            int nrows = r1 - p0 < SX_PANEL ? r1 - p0 : SX_PANEL;
            for (int b = c0; b < c1 && accumulate; b++) {
                int nb = n_tok - b * TB < TB ? n_tok - b * TB : TB;
                if (nb < TB || nrows < SX_PANEL)
                    load_c(cmem + (size_t)(b - c0) * TB * 32, y + (long)b * TB * ldy + p0, ldy,
                           nb, nrows);
            }
            if (tail) {
                memset(btail, 0, sizeof btail);
                memcpy(btail, pan + (size_t)(steps - 1) * 16 * 64, (size_t)tail * 64 * sizeof *btail);
            }
            /* k in slices: a panel's slice stays in L1 while every block
             * of the chunk passes; the sums wait in cmem between slices
             * (y's rows are too far apart for tile loads to share L1
             * sets), and a whole block of a whole panel starts from and
             * ends in y itself */
            for (int s0 = 0; s0 < steps; s0 += KS) {
                int s1 = s0 + KS < steps ? s0 + KS : steps;
                for (int b = c0; b < c1; b += 2) {
                    const uint16_t *ha = abuf + (size_t)(b - c0) * 2 * per_blk;
                    float *in[2], *out[2];
                    long ld_in[2], ld_out[2];
                    for (int u = 0; u < 2; u++) {
                        int direct = n_tok - (b + u) * TB >= TB && nrows == SX_PANEL;
                        float *cm = cmem + (size_t)(b + u - c0) * TB * 32;
                        float *yb = y + (long)(b + u) * TB * ldy + p0;
                        in[u] = s0 || (accumulate && !direct) ? cm
                                : direct && accumulate ? yb : NULL;
                        ld_in[u] = s0 || !direct ? 128 : ldy * (long)sizeof *y;
                        out[u] = s1 == steps && direct ? yb : cm;
                        ld_out[u] = s1 == steps && direct ? ldy * (long)sizeof *y : 128;
                    }
                    run_steps(pan, btail, tail, steps, s0, s1, ha, ha + 2 * per_blk, rows, per_blk, in,
                              ld_in, out, ld_out, b + 1 < c1);
                }
            }
            for (int b = c0; b < c1; b++) {
                int nb = n_tok - b * TB < TB ? n_tok - b * TB : TB;
                if (nb < TB || nrows < SX_PANEL)
                    store_c(cmem + (size_t)(b - c0) * TB * 32, y + (long)b * TB * ldy + p0, ldy,
                            nb, nrows, 0);
            }
        }
    }
    _tile_release();
    free(abuf);
    free(cmem);
}

/* Batch-invariant (the default): the tiles for every input, so a token's
 * sums are the same alone or in a batch of any size. */
TGT static void mm_bf16(const uint16_t *wp, int k, const float *xp, int n_tok, float *y,
                        long ldy, int r0, int r1, int accumulate)
{
    mm_bf16_from(wp, k, xp, n_tok, y, ldy, r0, r1, accumulate, 1);
}

/* The AVX-512 kernel below MIN_TOK tokens (sx_engine_opts.batch_variant) */
TGT void sx_amx_mm_bf16_variant(const uint16_t *wp, int k, const float *xp, int n_tok, float *y,
                                long ldy, int r0, int r1, int accumulate)
{
    mm_bf16_from(wp, k, xp, n_tok, y, ldy, r0, r1, accumulate, MIN_TOK);
}

const sx_cpu_kernels sx_cpu_amx_kernels = {
    .name = "amx", .path = SX_CPU_AMX, .tile = TT,
    .q8_layout = SX_Q8_VNNI, .mm_bf16 = mm_bf16, .mm_q8 = sx_vnni_mm_q8,
    .mm_q4 = sx_avx512_mm_q4_vnni,
    .att_block = sx_avx512_att_block, .exp = sx_avx512_exp,
    .rmsnorm = sx_avx512_rmsnorm, .swiglu = sx_avx512_swiglu,
    .bf16_to_f32 = sx_avx512_bf16_to_f32,
};

#else
const sx_cpu_kernels sx_cpu_amx_kernels = { .name = "amx", .path = SX_CPU_AMX };
#endif
