/* sx_cpu: the CPU kernels of the forward pass, one table per instruction
 * set (AVX-512, AVX2+FMA, plain C), picked at run time.
 *
 * Weight matrices ([rows][k] row-major in the model, rows = output
 * features) are repacked once into panels of SX_PANEL rows so a kernel
 * reads one contiguous stream per panel and keeps 32 output rows in vector
 * lanes, with each activation broadcast:
 *   bf16 panel: for each pair kp of k, the 32 rows' (w[r][2kp], w[r][2kp+1]),
 *     i.e. 64 bf16 = two 512-bit vectors whose 32-bit lanes are rows; a shift
 *     widens the even element to f32, a mask the odd one;
 *   int8 panel (SX_Q8_PAIRS): for each k, the 32 rows' int8 values
 *     (per-row symmetric scale, w = q * scale[r]);
 *   int8 panel (SX_Q8_VNNI, the AMX path): for each group of 4 k, the 32
 *     rows' 4 values as q + 128, k padded to 32.  These kernels quantise
 *     the activations too, per token and block of 32 k (x ~ sx[b] * xq,
 *     |error| <= sx[b] / 2), and multiply bytes;
 *   int8 panel (SX_Q8_QUADS, the AVX2 and scalar paths): the same places
 *     as SX_Q8_VNNI with the signed values q themselves: 128 bytes per 4 k,
 *     two 256-bit vectors whose 32-bit lanes are 8 rows' 4 k each.  These
 *     kernels round the activations to int8 per token and block of 32 k
 *     with sx_q8_quant_x (the q4 kernels' quantiser) and multiply bytes
 *     with vpmaddubsw, which takes unsigned times signed bytes: the
 *     unsigned side is |xq|, the signed one q with xq's sign
 *     (vpsignb), so every pair of products (|q|, |xq| <= 127) stays within
 *     2 * 127 * 127 = 32,258 and the int16 sums never saturate; the exact
 *     integer sum of each block is then scaled by sx[b] in f32, and the
 *     row's sum by scale[r] at the end -- the same integer sums and f32
 *     operations on every such path and tile, so a token's result does
 *     not depend on its batch;
 *   q4 panel (every path): for each group of SX_Q4_GROUP k, the 32 rows'
 *     scales (f16, 64 bytes), then per 8 k the 32 rows' 4 bytes, byte i
 *     holding k = 8s + i in its low nibble and k = 8s + 4 + i in its high
 *     one, as q + 8 (w = (q4 - 8) * scale[r][group]): 128 bytes = two
 *     512-bit vectors whose 32-bit lanes are rows, so one load, a mask and
 *     a shift give two vectors of 4 k per row, what vpdpbusd (VNNI) and
 *     vpmaddubsw (AVX2, AVX-512BW) multiply by 4 broadcast activation
 *     bytes.  The scales sit in the stream beside their data, so decode
 *     reads each panel as one sequential run of 4.5 bits per weight.
 *     The q4 kernels quantise the activations per token and block of 32 k
 *     to int8 (x ~ sx[b] * xq, sx[b] = max|x| / 127, round to nearest
 *     even), every path the same way (sx_q4_quant_x), so every path
 *     computes the same integer sums and differs from the scalar reference
 *     only in the order of the f32 additions.
 * k is padded to even and rows to a multiple of SX_PANEL with zeros.
 *
 * Activations are packed too, in tiles of `tile` tokens (the path's tile
 * height): tile j holds tokens [j*tile, j*tile + Tj), Tj = min(tile, n - j*tile),
 * as [k pair][Tj][2] floats, so a kernel broadcasts them from one pointer.
 *
 * The matrix kernels compute, for rows [r0, r1) (r0 a multiple of
 * SX_PANEL) and tokens [0, n_tok):
 *     y[t*ldy + r] (= or +=) sum_i w[r][i] * x[t][i]
 * in f32 (bf16 and SX_Q8_PAIRS: activations stay f32, weights are widened
 * in registers; the byte kernels above: as described there).  Callers
 * split panels across threads; a call writes only its rows of y.
 *
 * Tables are static constants: nothing to free. */
#ifndef SX_CPU_KERNELS_H
#define SX_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "common/sx_bf16.h"
#include "common/sx_error.h"

#define SX_PANEL 32

typedef enum sx_cpu_path {
    SX_CPU_SCALAR = 0,
    SX_CPU_AVX2   = 1,
    SX_CPU_AVX512 = 2,
    SX_CPU_AMX    = 3,   /* AVX-512 plus AMX bf16 tiles for prefill */
    SX_CPU_PATHS
} sx_cpu_path;

typedef struct sx_cpu_kernels {
    const char *name;   /* "scalar", "avx2", "avx512", "amx" */
    int         path;   /* sx_cpu_path */
    int         tile;   /* tokens per activation tile */
    int         q8_layout; /* SX_Q8_PAIRS, SX_Q8_VNNI or SX_Q8_QUADS */
    void  (*mm_bf16)(const uint16_t *wp, int k, const float *xp, int n_tok,
                     float *y, long ldy, int r0, int r1, int accumulate);
    void  (*mm_q8)(const int8_t *wp, const float *scale, int k, const float *xp,
                   int n_tok, float *y, long ldy, int r0, int r1, int accumulate);
    /* q4 panels (sx_pack_q4), activations quantised as sx_q4_quant_x does */
    void  (*mm_q4)(const uint8_t *wp, int k, const float *xp, int n_tok,
                   float *y, long ldy, int r0, int r1, int accumulate);
    /* Online-softmax attention of nq queries (q + i*ldq, hd floats each)
     * over keys/values [0, nj) of one cache block: kt holds the block's keys
     * transposed ([hd][bt]), v its values ([bt][hd]).  Per query i, with
     * s_j = scale * q.k_j: m[i] is the running max, l[i] the running sum of
     * e^(s_j - m[i]), acc[i*hd ..] the running sum of e^(s_j - m[i]) v_j;
     * start from m = -inf, l = 0, acc = 0 and divide acc by l at the end. */
    void  (*att_block)(const float *q, long ldq, int nq, const float *kt, const float *v,
                       int bt, int nj, int hd, float scale, float *m, float *l, float *acc);
    void  (*exp)(float *y, const float *x, int n);             /* y = e^x, y may be x */
    /* sx_cpu_rmsnorm's and sx_cpu_swiglu's contracts (y may be x); vector
     * forms differ from them only in the order of the double sum of squares */
    void  (*rmsnorm)(float *y, const float *x, const float *w, int n, float eps);
    void  (*swiglu)(float *g, const float *u, int n);
    /* y[i] = x[i] widened from bf16 (exact), for a bf16 KV cache's blocks */
    void  (*bf16_to_f32)(float *y, const uint16_t *x, size_t n);
} sx_cpu_kernels;

/* The table for a path, or NULL when this CPU (or compiler) lacks it. */
const sx_cpu_kernels *sx_cpu_kernels_for(int path);

/* The fastest path this CPU runs, unless STRUX_CPU=amx|avx512|avx2|scalar names
 * one; a path the CPU lacks is SX_EUNSUPPORTED, an unknown name SX_EINVAL. */
int sx_cpu_kernels_select(const sx_cpu_kernels **out, sx_error *err);

/* Per-path tables, defined in cpu_matmul_<path>.c. */
extern const sx_cpu_kernels sx_cpu_scalar_kernels;
extern const sx_cpu_kernels sx_cpu_avx2_kernels;
extern const sx_cpu_kernels sx_cpu_avx512_kernels;
extern const sx_cpu_kernels sx_cpu_amx_kernels;
/* The AVX-512 kernels themselves, which the AMX path reuses (x86-64 only). */
void sx_avx512_mm_bf16(const uint16_t *wp, int k, const float *xp, int n_tok, float *y, long ldy,
                       int r0, int r1, int accumulate);
void sx_avx512_mm_q8(const int8_t *wp, const float *scale, int k, const float *xp, int n_tok,
                     float *y, long ldy, int r0, int r1, int accumulate);
void sx_avx512_att_block(const float *q, long ldq, int nq, const float *kt, const float *v, int bt,
                         int nj, int hd, float scale, float *m, float *l, float *acc);
void sx_avx512_exp(float *y, const float *x, int n);
void sx_avx512_rmsnorm(float *y, const float *x, const float *w, int n, float eps);
void sx_avx512_swiglu(float *g, const float *u, int n);
void sx_avx512_bf16_to_f32(float *y, const uint16_t *x, size_t n);
/* Online-softmax attention of up to 32 queries held in vector lanes,
 * transposed: qt[d*32 + u], acct[d*32 + u], state m[32], l[32] (as
 * att_block's, per lane; lanes without a query start at m = -inf, l = 0,
 * acct = 0 and see no key).  Keys/values of one cache block as att_block's
 * (kt [hd][bt], v [bt][hd]), keys [0, nj); key j is seen by the lanes
 * u >= vis0 + j * vstep (causal masking: lanes are rows x heads, row-major).
 * kpad: 16 * hd floats of scratch.  x86-64 AVX-512 only. */
void sx_avx512_att_qt(const float *qt, const float *kt, const float *v, int bt, int nj, int hd,
                      float scale, int vis0, int vstep, float *m, float *l, float *acct,
                      float *kpad);
/* The same on AVX512-BF16 dot products, for the bf16-activation mode: q,
 * k, the probabilities and v are rounded to bf16 (nearest even) and
 * multiplied in pairs with f32 sums -- about half the instructions, with
 * results within ~2^-8 of each term's size of sx_avx512_att_qt's.  Only
 * where sx_dpbf16_usable(); head_dim above 256 or odd falls back to
 * sx_avx512_att_qt. */
void sx_avx512_att_qt_dp(const float *qt, const float *kt, const float *v, int bt, int nj,
                         int hd, float scale, int vis0, int vstep, float *m, float *l,
                         float *acct, float *kpad);
/* The AMX bf16 kernel as it was before batch invariance: the AVX-512
 * kernel below 8 tokens (other sums than the tiles'), for
 * sx_engine_opts.batch_variant.  x86-64 only. */
void sx_amx_mm_bf16_variant(const uint16_t *wp, int k, const float *xp, int n_tok, float *y,
                            long ldy, int r0, int r1, int accumulate);
/* int8 through AVX512-VNNI (SX_Q8_VNNI weights), which the AMX path uses. */
void sx_vnni_mm_q8(const int8_t *wp, const float *scale, int k, const float *xp, int n_tok,
                   float *y, long ldy, int r0, int r1, int accumulate);

/* q4 on AVX-512: through AVX512-VNNI vpdpbusd, and through AVX-512BW
 * vpmaddubsw for CPUs without VNNI; the avx512 table's mm_q4 picks one at
 * run time (sx_avx512_q4_vnni_usable), the amx table uses the VNNI one. */
void sx_avx512_mm_q4_vnni(const uint8_t *wp, int k, const float *xp, int n_tok, float *y,
                          long ldy, int r0, int r1, int accumulate);
void sx_avx512_mm_q4_bw(const uint8_t *wp, int k, const float *xp, int n_tok, float *y,
                        long ldy, int r0, int r1, int accumulate);
int  sx_avx512_q4_vnni_usable(void);

/* bf16-activation products through AVX512-BF16 dot products
 * (cpu_matmul_dpbf16.c), the engine's opt-in fast prefill: mm_bf16's
 * contract, except that from 12 tokens on the activations are rounded to
 * bf16 first (products within ~2^-8 of each term's size instead of f32's
 * 2^-20); fewer tokens run the f32 AVX-512 kernel.  Only where
 * sx_dpbf16_usable() says the CPU has AVX512-BF16. */
void sx_dpbf16_mm_bf16(const uint16_t *wp, int k, const float *xp, int n_tok, float *y, long ldy,
                       int r0, int r1, int accumulate);
int  sx_dpbf16_usable(void);

/* Activations: row t (k floats) of an n_tok-row matrix into its tile. */
static inline size_t sx_xpack_size(int n_tok, int k) { return (size_t)n_tok * ((k + 1) & ~1); }
void sx_pack_x_row(const float *x, int t, int n_tok, int k, int tile, float *xp);
/* The same for columns [c0, c1) of the row only (c0 even), so threads
 * that produce disjoint column ranges of a row can pack them in place. */
void sx_pack_x_cols(const float *x, int t, int n_tok, int k, int c0, int c1, int tile,
                    float *xp);

/* Packing (cpu_pack.c, quant.c).  Sizes are in elements of the packed
 * type; rows [r0, r1) of the source go to their panels (r0 a multiple of
 * SX_PANEL), so threads can pack disjoint row ranges. */
static inline int sx_pad_rows(int rows) { return (rows + SX_PANEL - 1) / SX_PANEL * SX_PANEL; }
size_t sx_pack_bf16_size(int rows, int k);
void   sx_pack_bf16(const uint16_t *w, int rows, int k, int r0, int r1, uint16_t *wp);
/* int8 layouts: a path's kernels name theirs in sx_cpu_kernels.q8_layout. */
enum { SX_Q8_PAIRS = 0, SX_Q8_VNNI = 1, SX_Q8_QUADS = 2 };
enum { SX_Q8_XBLOCK = 32 };   /* k per activation scale (VNNI, QUADS) */
static inline int sx_q8_kpad(int k) { return (k + SX_Q8_XBLOCK - 1) & ~(SX_Q8_XBLOCK - 1); }
size_t sx_pack_q8_size(int rows, int k, int layout);
/* Quantises rows [r0, r1) (per-row symmetric) and packs them in `layout`;
 * scale has sx_pad_rows(rows) entries, padding rows get 0. */
void   sx_pack_q8(const uint16_t *w, int rows, int k, int r0, int r1, int layout, int8_t *wp,
                  float *scale);
/* Per-row symmetric int8 of a row-major matrix: scale[r] = max|w[r]| / 127,
 * q = round(w / scale) (unpacked; the reference the packed form follows). */
void   sx_quant_q8_rows(const uint16_t *w, long r0, long r1, int cols, int8_t *q, float *scale);

/* 4-bit weights (quant.c): symmetric, one scale per row and group of
 * SX_Q4_GROUP k (a multiple of 32): the value of largest magnitude m sets
 * scale = m / -8 (rounded to f16), so m itself is -8 exactly and the other
 * side reaches +7: all 16 levels in use.  k is padded to the group with
 * zeros.  32 k per scale: docs/BENCHMARKS.md has the perplexity and KL of
 * 32, 64 and 128. */
#ifndef SX_Q4_GROUP
#define SX_Q4_GROUP 32
#endif
enum { SX_Q4_XBLOCK = 32 };   /* k per activation scale in the q4 kernels */
static inline int sx_q4_kpad(int k) { return (k + SX_Q4_GROUP - 1) / SX_Q4_GROUP * SX_Q4_GROUP; }
/* bytes of one group of one panel: 32 f16 scales, then 32 x GROUP nibbles */
#define SX_Q4_GROUP_BYTES (2 * SX_PANEL + SX_PANEL * SX_Q4_GROUP / 2)
size_t sx_pack_q4_size(int rows, int k);   /* bytes */
/* Quantises rows [r0, r1) (r0 a multiple of SX_PANEL) into their panels;
 * padding rows are zero (scale 0, q 8). */
void   sx_pack_q4(const uint16_t *w, int rows, int k, int r0, int r1, uint8_t *wp);
/* The same quantisation unpacked (the reference the packed form follows):
 * q[r*cols + i] in [-8, 7], scale[r*ng + g] for ng = ceil(cols / GROUP)
 * (the f16 value, widened), w ~ q * scale. */
void   sx_quant_q4_rows(const uint16_t *w, long r0, long r1, int cols, int8_t *q, float *scale);
/* Token t of packed activations (tile `tile`, k columns) as int8 blocks of
 * 32: xq[0 .. kp) (kp = sx_q4_kpad(k), zeros past k), sx[b] = max|x| / 127
 * over block b (0 for an all-zero or non-finite block, whose xq are 0) and
 * s8[b] = 8 * sum of the block's xq (what the kernels take back out for the
 * weights' +8).  The one definition every q4 path follows. */
void   sx_q4_quant_x(const float *xp, int n_tok, int tile, int t, int k, int8_t *xq, float *sx,
                     int32_t *s8);
/* The same rounding for the SX_Q8_QUADS kernels: xq[0 .. sx_q8_kpad(k)),
 * sx[b] per block of SX_Q8_XBLOCK; with SX_Q4_GROUP 32 the bytes and
 * scales are sx_q4_quant_x's. */
void   sx_q8_quant_x(const float *xp, int n_tok, int tile, int t, int k, int8_t *xq, float *sx);
/* AWQ weights (w = (q - zero) * scale per row and `group` k, q and zero
 * in 0..15, q as sx_q4_matrix in engine/model/model.h holds it: row-major
 * [rows][k/2], even k in the low nibble) into the q4 panels: rows [r0, r1)
 * (r0 a multiple of SX_PANEL) get nibbles q and their group's scale, so the
 * panels give (q - 8) * scale; zb[g * sx_pad_rows(rows) + r] = (8 - zero) *
 * scale is the rest (0 for padding rows), group-major so the correction's
 * row loop is contiguous.  group a multiple of SX_Q4_GROUP, k of
 * group. */
void   sx_pack_q4_awq(const uint8_t *q, const uint16_t *scale, const uint8_t *zero, int rows,
                      int k, int group, int r0, int r1, uint8_t *wp, float *zb);
/* After a q4 kernel over AWQ panels: y[t*ldy + r] += sum_g zb[g][r] * (sum
 * of token t's activations over group g), exact f32 activations from the
 * packed xp (tile `tile`), rows [r0, r1).  Scalar: 1/group of the work. */
void   sx_q4_zero_correct(const float *zb, int rows, int group, int k, const float *xp,
                          int n_tok, int tile, float *y, long ldy, int r0, int r1);
/* The same in two parts, so the group sums of a matrix call's activations
 * can be computed once and shared by the threads that split its rows:
 * xs[(t - t0) * (k / group) + g] = token t's sum over group g, t in [t0, t1),
 * then y[t*ldy + r] += sum_g zb[g][r] * xs[t][g] for rows [r0, r1).  The
 * same arithmetic in the same order as sx_q4_zero_correct, bit for bit. */
void   sx_q4_group_sums(const float *xp, int n_tok, int tile, int k, int group, int t0, int t1,
                        float *xs);
void   sx_q4_zero_apply(const float *zb, int rows, int group, int k, const float *xs,
                        int n_tok, float *y, long ldy, int r0, int r1);
float    sx_f16_to_f32(uint16_t h);
uint16_t sx_f32_to_f16(float f);   /* round to nearest even; overflow to +-inf */

/* Elementwise ops of the forward pass (cpu_ops.c), all in f32. */
/* y = x * rsqrt(mean(x^2) + eps) * w over n elements (y may be x). */
void sx_cpu_rmsnorm(float *y, const float *x, const float *w, int n, float eps);
/* rotate-half RoPE on one head: v[i], v[i+d/2] rotated by cos/sin[i]. */
void sx_cpu_rope(float *v, const float *cos_t, const float *sin_t, int head_dim);
/* cos/sin tables for one position: angle_i = pos * inv_freq[i] (f32). */
void sx_cpu_rope_angles(int pos, const float *inv_freq, int half, float *cos_t, float *sin_t);
void sx_cpu_rope_inv_freq(double theta, int head_dim, float *inv_freq);
/* g[i] = silu(g[i]) * u[i] = g[i] / (1 + e^-g[i]) * u[i], e^ by k->exp */
void sx_cpu_swiglu(const sx_cpu_kernels *k, float *g, const float *u, int n);
/* sx_bf16_to_f32, sx_f32_to_bf16 (round to nearest even, NaN kept): common/sx_bf16.h */
void sx_cpu_bf16_to_f32(float *y, const uint16_t *x, size_t n);   /* plain C */

#endif
