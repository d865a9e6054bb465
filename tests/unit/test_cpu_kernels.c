/* Every CPU kernel path (scalar, AVX2, AVX-512, AMX where the CPU has it)
 * against plain double-precision loops, on odd sizes that exercise every
 * tile edge and tail; plus the thread pool and path selection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/threadpool.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)   /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / (double)(1ull << 52) - 1.0;
}

static const int ks[] = { 1, 7, 16, 31, 32, 33, 48, 100, 1000, 1057, 2100 };
static const int toks[] = { 1, 2, 3, 4, 5, 7, 9, 12, 13, 16, 29, 37 };

static void fill(float *x, size_t n, double amp)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(urand() * amp);
}

/* y = W x checked for rows [r0, r1) (r0 on a panel boundary); every other
 * row must keep its sentinel. */
static void check_mm(const sx_cpu_kernels *kr, int q8)
{
    static const int rows_set[] = { 1, 37, 64, 70 };
    for (size_t ri = 0; ri < sizeof rows_set / sizeof *rows_set; ri++)
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
        for (size_t ti = 0; ti < sizeof toks / sizeof *toks; ti++)
            for (int acc = 0; acc < 2; acc++) {
                int R = rows_set[ri], K = ks[ki], T = toks[ti];
                int r0 = R > SX_PANEL && (ki + ti) % 2 ? SX_PANEL : 0;
                int r1 = (ki + ti) % 3 == 1 && R > 2 ? R - 1 : R;
                if (r1 <= r0)
                    r1 = R;
                long ldx = K + 5, ldy = R + 3;
                uint16_t *w = malloc((size_t)R * K * sizeof *w);
                uint16_t *wp = malloc(sx_pack_bf16_size(R, K) * sizeof *wp);
                int8_t *wq = malloc((size_t)R * K);
                int8_t *wqp = malloc(sx_pack_q8_size(R, K, kr->q8_layout));
                float *sc = malloc((size_t)sx_pad_rows(R) * sizeof *sc);
                float *scp = malloc((size_t)sx_pad_rows(R) * sizeof *scp);
                float *x = malloc((size_t)T * ldx * sizeof *x);
                float *xp = malloc(sx_xpack_size(T, K) * sizeof *xp);
                float *y = malloc((size_t)T * ldy * sizeof *y);
                float *y0 = malloc((size_t)T * ldy * sizeof *y0);
                assert_non_null(w); assert_non_null(wp); assert_non_null(wq); assert_non_null(wqp);
                assert_non_null(sc); assert_non_null(scp); assert_non_null(x); assert_non_null(y);
                assert_non_null(y0); assert_non_null(xp);
                for (long i = 0; i < (long)R * K; i++)
                    w[i] = sx_f32_to_bf16((float)(urand() * 0.5));
                w[(long)R * K / 2] = sx_f32_to_bf16(-3.0f);   /* a negative extreme */
                fill(x, (size_t)T * ldx, 2.0);
                for (int t = 0; t < T; t++)
                    sx_pack_x_row(x + t * ldx, t, T, K, kr->tile, xp);
                fill(y0, (size_t)T * ldy, 1.0);
                memcpy(y, y0, (size_t)T * ldy * sizeof *y);
                sx_quant_q8_rows(w, 0, R, K, wq, sc);
                if (q8) {
                    /* packed in two row ranges, as threads would */
                    sx_pack_q8(w, R, K, 0, SX_PANEL < R ? SX_PANEL : R, kr->q8_layout, wqp, scp);
                    if (R > SX_PANEL)
                        sx_pack_q8(w, R, K, SX_PANEL, R, kr->q8_layout, wqp, scp);
                    for (int r = 0; r < R; r++)
                        assert_true(scp[r] == sc[r]);
                    for (int r = R; r < sx_pad_rows(R); r++)
                        assert_true(scp[r] == 0.0f);
                    kr->mm_q8(wqp, scp, K, xp, T, y, ldy, r0, r1, acc);
                } else {
                    sx_pack_bf16(w, R, K, 0, SX_PANEL < R ? SX_PANEL : R, wp);
                    if (R > SX_PANEL)
                        sx_pack_bf16(w, R, K, SX_PANEL, R, wp);
                    kr->mm_bf16(wp, K, xp, T, y, ldy, r0, r1, acc);
                }
                /* SX_Q8_QUADS: the activations as sx_q8_quant_x rounds them */
                int quads = q8 && kr->q8_layout == SX_Q8_QUADS;
                int kq = sx_q8_kpad(K), nbq = kq / SX_Q8_XBLOCK;
                int8_t *xq = malloc((size_t)T * kq);
                float *sxq = malloc((size_t)T * nbq * sizeof *sxq);
                assert_non_null(xq); assert_non_null(sxq);
                for (int t = 0; t < T; t++)
                    sx_q8_quant_x(xp, T, kr->tile, t, K, xq + (size_t)t * kq, sxq + (size_t)t * nbq);
                for (int t = 0; t < T; t++)
                    for (int r = 0; r < R + 3; r++) {
                        float got = y[t * ldy + r];
                        if (r < r0 || r >= r1) {
                            if (got != y0[t * ldy + r])
                                fail_msg("%s %s R=%d K=%d T=%d rows %d..%d: row %d touched",
                                         kr->name, q8 ? "q8" : "bf16", R, K, T, r0, r1, r);
                            continue;
                        }
                        if (quads) {
                            /* the exact arithmetic (integer block sums),
                             * within f32 rounding; and W x with f32
                             * activations within their rounding to int8 */
                            double ref = 0, mag = 0, refx = 0, xerr = 0;
                            for (int i = 0; i < K; i++) {
                                double wv = (double)wq[(long)r * K + i] * sc[r];
                                double sb = sxq[(size_t)t * nbq + i / SX_Q8_XBLOCK];
                                double pr = wv * sb * xq[(size_t)t * kq + i];
                                ref += pr;
                                mag += fabs(pr);
                                refx += wv * x[t * ldx + i];
                                xerr += fabs(wv) * sb * 0.5 * (1 + 1e-5);
                            }
                            if (fabs(ref - refx) > xerr + 1e-12)
                                fail_msg("q8 activations R=%d K=%d T=%d row %d tok %d: %.9g vs "
                                         "%.9g beyond %.3g", R, K, T, r, t, ref, refx, xerr);
                            if (acc)
                                ref += y0[t * ldy + r];
                            double tol = 2e-6 * mag + 1e-6 * (acc ? 1 : 0) + 1e-30;
                            if (fabs(got - ref) > tol)
                                fail_msg("%s q8 R=%d K=%d T=%d acc=%d row %d tok %d: got %.9g "
                                         "want %.9g", kr->name, R, K, T, acc, r, t, got, ref);
                            continue;
                        }
                        double ref = 0, mag = 0, xerr = 0;
                        /* the bf16-activation kernel rounds x from 12 tokens on */
                        int xround = !q8 && kr->mm_bf16 == sx_dpbf16_mm_bf16 && T >= 12;
                        for (int i = 0; i < K; i++) {
                            double wv = q8 ? (double)wq[(long)r * K + i] * sc[r]
                                           : (double)sx_bf16_to_f32(w[(long)r * K + i]);
                            double xv = xround ? sx_bf16_to_f32(sx_f32_to_bf16(x[t * ldx + i]))
                                               : x[t * ldx + i];
                            ref += wv * xv;
                            mag += fabs(wv * xv);
                            if (q8 && kr->q8_layout == SX_Q8_VNNI) {
                                /* activations as two int8 digits per block
                                 * of 32 k: within max|x in block| / (127 * 508) */
                                double amax = 0;
                                for (int j = i / 32 * 32; j < i / 32 * 32 + 32 && j < K; j++)
                                    amax = fmax(amax, fabs(x[t * ldx + j]));
                                xerr += fabs(wv) * amax / (127.0 * 508) * (1 + 1e-3);
                            }
                        }
                        if (acc)
                            ref += y0[t * ldy + r];
                        /* AMX multiplies activations split into two bf16
                         * halves: each product is within 2^-17 of exact
                         * (every T: batch-invariant, no AVX-512 below 8) */
                        double rel = kr->path == SX_CPU_AMX && !q8 ? 8e-6 : 2e-6;
                        double tol = rel * mag + xerr + 1e-6 * (acc ? 1 : 0) + 1e-30;
                        if (fabs(got - ref) > tol)
                            fail_msg("%s %s R=%d K=%d T=%d acc=%d row %d tok %d: got %.9g want %.9g",
                                     kr->name, q8 ? "q8" : "bf16", R, K, T, acc, r, t, got, ref);
                    }
                free(w); free(wp); free(wq); free(wqp); free(sc); free(scp); free(x); free(xp);
                free(y); free(y0); free(xq); free(sxq);
            }
}

/* attention over one block against a double-precision softmax, fed in two
 * block-shaped pieces as the engine feeds a sequence's blocks */
static void check_att(const sx_cpu_kernels *kr)
{
    static const int hds[] = { 8, 40, 128, 67 };
    static const int bts[] = { 16, 5, 33 };
    for (size_t hi = 0; hi < sizeof hds / sizeof *hds; hi++)
        for (size_t bi = 0; bi < sizeof bts / sizeof *bts; bi++) {
            int hd = hds[hi], bt = bts[bi], nq = 7, n = bt + bt / 2 + 1;   /* 2 blocks */
            float *q = malloc((size_t)nq * (hd + 3) * sizeof *q);
            float *kt = malloc((size_t)2 * hd * bt * sizeof *kt), *v = malloc((size_t)2 * bt * hd * sizeof *v);
            float *acc = calloc((size_t)nq * hd, sizeof *acc), m[7], l[7];   /* 4 + 3 queries */
            double *keys = malloc((size_t)n * hd * sizeof *keys), *vals = malloc((size_t)n * hd * sizeof *vals);
            assert_non_null(q); assert_non_null(kt); assert_non_null(v); assert_non_null(acc);
            assert_non_null(keys); assert_non_null(vals);
            fill(q, (size_t)nq * (hd + 3), 3.0);
            for (int j = 0; j < n; j++)
                for (int d = 0; d < hd; d++) {
                    float kk = (float)(urand() * 2.0), vv = (float)urand();
                    keys[j * hd + d] = kk;
                    vals[j * hd + d] = vv;
                    int b = j / bt, jj = j % bt;
                    kt[(size_t)b * hd * bt + (size_t)d * bt + jj] = kk;
                    v[(size_t)b * bt * hd + (size_t)jj * hd + d] = vv;
                }
            for (int i = 0; i < nq; i++) {
                m[i] = -INFINITY;
                l[i] = 0.0f;
            }
            float scale = 1.0f / sqrtf((float)hd);
            kr->att_block(q, hd + 3, nq, kt, v, bt, bt, hd, scale, m, l, acc);
            kr->att_block(q, hd + 3, nq, kt + (size_t)hd * bt, v + (size_t)bt * hd, bt, n - bt, hd,
                          scale, m, l, acc);
            for (int i = 0; i < nq; i++) {
                double s[100], mx = -INFINITY, sum = 0;
                for (int j = 0; j < n; j++) {
                    s[j] = 0;
                    for (int d = 0; d < hd; d++)
                        s[j] += (double)q[i * (hd + 3) + d] * keys[j * hd + d];
                    s[j] *= scale;
                    mx = fmax(mx, s[j]);
                }
                for (int j = 0; j < n; j++)
                    sum += s[j] = exp(s[j] - mx);
                for (int d = 0; d < hd; d++) {
                    double ref = 0;
                    for (int j = 0; j < n; j++)
                        ref += s[j] * vals[j * hd + d];
                    ref /= sum;
                    double got = acc[i * hd + d] / l[i];
                    if (fabs(got - ref) > 2e-6)
                        fail_msg("%s att hd=%d bt=%d q%d d%d: %.8g vs %.8g", kr->name, hd, bt, i,
                                 d, got, ref);
                }
            }
            free(q); free(kt); free(v); free(acc); free(keys); free(vals);
        }
}

static void check_vec(const sx_cpu_kernels *kr)
{
    check_att(kr);
    /* exp over the range softmax and silu use, relative error in ulps */
    enum { N = 4001 };
    static float xs[N], ys[N];
    for (int i = 0; i < N; i++)
        xs[i] = -87.0f + 175.0f * (float)i / (N - 1);
    kr->exp(ys, xs, N);
    for (int i = 0; i < N; i++) {
        double ref = exp((double)xs[i]);
        if (fabs(ys[i] - ref) > 4e-7 * ref)
            fail_msg("%s exp(%.9g) = %.9g, want %.9g", kr->name, xs[i], ys[i], ref);
    }
    float big[3] = { -200.0f, 0.0f, -100.0f }, out[3];
    kr->exp(out, big, 3);
    assert_true(out[0] >= 0.0f && out[0] < 1e-37f);
    assert_true(out[1] == 1.0f);
    assert_true(out[2] >= 0.0f && out[2] < 1e-37f);
    /* in place */
    float ip[17];
    for (int i = 0; i < 17; i++)
        ip[i] = (float)i / 4;
    kr->exp(ip, ip, 17);
    for (int i = 0; i < 17; i++)
        assert_true(fabs(ip[i] - exp(i / 4.0)) <= 4e-7 * exp(i / 4.0));
}


/* q4: y = W x for rows [r0, r1), against two double-precision references:
 * the exact arithmetic every path follows (sx_quant_q4_rows' weights times
 * sx_q4_quant_x's int8 activations), within f32 rounding of the sum; and
 * W x itself with f32 activations, within the activations' rounding to
 * int8 (sum over i of |w_i| * sx_b / 2).  Every other row keeps its
 * sentinel.  Odd k, partial panels, rows split across calls, accumulate. */
static void check_mm_q4(const sx_cpu_kernels *kr)
{
    static const int rows_set[] = { 1, 37, 64, 70 };
    /* every tile remainder of the q4 kernels (4 tokens) and of the
     * activation tiles (1, 4, 12), at half check_mm's cost */
    static const int qtoks[] = { 1, 2, 3, 4, 5, 13, 37 };
    for (size_t ri = 0; ri < sizeof rows_set / sizeof *rows_set; ri++)
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
        for (size_t ti = 0; ti < sizeof qtoks / sizeof *qtoks; ti++)
            for (int acc = 0; acc < 2; acc++) {
                int R = rows_set[ri], K = ks[ki], T = qtoks[ti];
                int r0 = R > SX_PANEL && (ki + ti) % 2 ? SX_PANEL : 0;
                int r1 = (ki + ti) % 3 == 1 && R > 2 ? R - 1 : R;
                if (r1 <= r0)
                    r1 = R;
                int kp = sx_q4_kpad(K), nb = kp / SX_Q4_XBLOCK, ng = kp / SX_Q4_GROUP;
                long ldx = K + 5, ldy = R + 3;
                uint16_t *w = malloc((size_t)R * K * sizeof *w);
                uint8_t *wp = malloc(sx_pack_q4_size(R, K));
                int8_t *wq = malloc((size_t)R * K), *xq = malloc((size_t)T * kp);
                float *sc = malloc((size_t)R * ng * sizeof *sc);
                float *sx = malloc((size_t)T * nb * sizeof *sx);
                int32_t *s8 = malloc((size_t)T * nb * sizeof *s8);
                float *x = malloc((size_t)T * ldx * sizeof *x);
                float *xp = malloc(sx_xpack_size(T, K) * sizeof *xp);
                float *y = malloc((size_t)T * ldy * sizeof *y);
                float *y0 = malloc((size_t)T * ldy * sizeof *y0);
                assert_non_null(w); assert_non_null(wp); assert_non_null(wq); assert_non_null(xq);
                assert_non_null(sc); assert_non_null(sx); assert_non_null(s8); assert_non_null(x);
                assert_non_null(xp); assert_non_null(y); assert_non_null(y0);
                for (long i = 0; i < (long)R * K; i++)
                    w[i] = sx_f32_to_bf16((float)(urand() * 0.5));
                w[(long)R * K / 2] = sx_f32_to_bf16(-3.0f);   /* a negative extreme */
                if (R > 2)
                    for (int i = 0; i < K; i++)
                        w[(long)K + i] = 0;                   /* an all-zero row */
                fill(x, (size_t)T * ldx, 2.0);
                if (T > 1)
                    for (int i = 0; i < K && i < 40; i++)
                        x[ldx + i] = 0.0f;                     /* an all-zero block */
                for (int t = 0; t < T; t++)
                    sx_pack_x_row(x + t * ldx, t, T, K, kr->tile, xp);
                for (int t = 0; t < T; t++)
                    sx_q4_quant_x(xp, T, kr->tile, t, K, xq + (size_t)t * kp, sx + (size_t)t * nb,
                                  s8 + (size_t)t * nb);
                fill(y0, (size_t)T * ldy, 1.0);
                memcpy(y, y0, (size_t)T * ldy * sizeof *y);
                sx_quant_q4_rows(w, 0, R, K, wq, sc);
                /* packed in two row ranges, as threads would */
                sx_pack_q4(w, R, K, 0, SX_PANEL < R ? SX_PANEL : R, wp);
                if (R > SX_PANEL)
                    sx_pack_q4(w, R, K, SX_PANEL, R, wp);
                kr->mm_q4(wp, K, xp, T, y, ldy, r0, r1, acc);
                for (int t = 0; t < T; t++)
                    for (int r = 0; r < R + 3; r++) {
                        float got = y[t * ldy + r];
                        if (r < r0 || r >= r1) {
                            if (got != y0[t * ldy + r])
                                fail_msg("%s q4 R=%d K=%d T=%d rows %d..%d: row %d touched",
                                         kr->name, R, K, T, r0, r1, r);
                            continue;
                        }
                        double ref = 0, mag = 0, refx = 0, xerr = 0;
                        for (int i = 0; i < K; i++) {
                            int b = i / SX_Q4_XBLOCK;
                            double wv = (double)wq[(long)r * K + i] * sc[(long)r * ng + i / SX_Q4_GROUP];
                            double p = wv * sx[(size_t)t * nb + b] * xq[(size_t)t * kp + i];
                            ref += p;
                            mag += fabs(p);
                            refx += wv * x[t * ldx + i];
                            xerr += fabs(wv) * sx[(size_t)t * nb + b] * 0.5 * (1 + 1e-5);
                        }
                        if (fabs(ref - refx) > xerr + 1e-12)
                            fail_msg("q4 activations R=%d K=%d T=%d row %d tok %d: %.9g vs %.9g "
                                     "beyond %.3g", R, K, T, r, t, ref, refx, xerr);
                        if (acc)
                            ref += y0[t * ldy + r];
                        double tol = 2e-6 * mag + 1e-6 * (acc ? 1 : 0) + 1e-30;
                        if (fabs(got - ref) > tol)
                            fail_msg("%s q4 R=%d K=%d T=%d acc=%d row %d tok %d: got %.9g want %.9g",
                                     kr->name, R, K, T, acc, r, t, got, ref);
                    }
                free(w); free(wp); free(wq); free(xq); free(sc); free(sx); free(s8); free(x);
                free(xp); free(y); free(y0);
            }
}

enum { ALONE_Q4, ALONE_Q8, ALONE_BF16 };

/* q4, q8 (SX_Q8_QUADS int8) or bf16 batch invariance at the kernel: each
 * token of a batch alone (the decode-only kernel and the in-place
 * activation reads) gives bit for bit
 * what it gets inside the batch (the tile kernels and the gathered
 * activations), rows split across calls, with and without accumulate. */
static void check_mm_alone(const sx_cpu_kernels *kr, int kind)
{
    int q8 = kind == ALONE_Q8, bf16 = kind == ALONE_BF16;
    static const int kq[] = { 1, 33, 64, 1000, 1057, 3072 };
    static const int rq[] = { 37, 96 };
    static const int tq[] = { 5, 13 };
    for (size_t ki = 0; ki < sizeof kq / sizeof *kq; ki++)
        for (size_t ri = 0; ri < sizeof rq / sizeof *rq; ri++)
            for (size_t ti = 0; ti < sizeof tq / sizeof *tq; ti++)
                for (int acc = 0; acc < 2; acc++) {
                    int K = kq[ki], R = rq[ri], T = tq[ti], split = R > SX_PANEL ? SX_PANEL : R;
                    long ldy = R + 1;
                    uint16_t *w = malloc((size_t)R * K * sizeof *w);
                    uint8_t *wp = malloc(q8     ? sx_pack_q8_size(R, K, kr->q8_layout)
                                         : bf16 ? sx_pack_bf16_size(R, K) * sizeof(uint16_t)
                                                : sx_pack_q4_size(R, K));
                    float *sc = malloc((size_t)sx_pad_rows(R) * sizeof *sc);
                    float *x = malloc((size_t)T * K * sizeof *x);
                    float *xp = malloc(sx_xpack_size(T, K) * sizeof *xp);
                    float *x1 = malloc(sx_xpack_size(1, K) * sizeof *x1);
                    float *y = malloc((size_t)T * ldy * sizeof *y);
                    float *y1 = malloc((size_t)ldy * sizeof *y1);
                    assert_non_null(w); assert_non_null(wp); assert_non_null(x);
                    assert_non_null(xp); assert_non_null(x1); assert_non_null(y);
                    assert_non_null(y1); assert_non_null(sc);
                    for (long i = 0; i < (long)R * K; i++)
                        w[i] = sx_f32_to_bf16((float)urand());
                    if (q8)
                        sx_pack_q8(w, R, K, 0, R, kr->q8_layout, (int8_t *)wp, sc);
                    else if (bf16)
                        sx_pack_bf16(w, R, K, 0, R, (uint16_t *)wp);
                    else
                        sx_pack_q4(w, R, K, 0, R, wp);
                    fill(x, (size_t)T * K, 3.0);
                    for (int i = 0; i < K && i < 40; i++)
                        x[K + i] = 0.0f;                       /* an all-zero block */
                    for (int i = 0; i < K; i += 7)
                        x[2 * K + i] *= 1e4f;                  /* a wide range */
                    for (int t = 0; t < T; t++)
                        sx_pack_x_row(x + (size_t)t * K, t, T, K, kr->tile, xp);
                    fill(y, (size_t)T * ldy, 1.0);
                    for (int t = 0; t < T; t++)
                        y[t * ldy + R] = (float)t;
                    float *yb = malloc((size_t)T * ldy * sizeof *yb);
                    assert_non_null(yb);
                    memcpy(yb, y, (size_t)T * ldy * sizeof *y);
#define MM(X, N, Y, A, B)                                                                  \
    (q8     ? kr->mm_q8((const int8_t *)wp, sc, K, X, N, Y, ldy, A, B, acc)                \
     : bf16 ? kr->mm_bf16((const uint16_t *)wp, K, X, N, Y, ldy, A, B, acc)                \
            : kr->mm_q4(wp, K, X, N, Y, ldy, A, B, acc))
                    MM(xp, T, yb, 0, split);
                    MM(xp, T, yb, split, R);
                    for (int t = 0; t < T; t++) {
                        sx_pack_x_row(x + (size_t)t * K, 0, 1, K, kr->tile, x1);
                        memcpy(y1, y + t * ldy, (size_t)ldy * sizeof *y1);
                        MM(x1, 1, y1, 0, split);
                        MM(x1, 1, y1, split, R);
                        if (memcmp(y1, yb + t * ldy, (size_t)ldy * sizeof *y1) != 0)
                            fail_msg("%s %s K=%d R=%d acc=%d: token %d of %d alone differs",
                                     kr->name, q8 ? "q8" : bf16 ? "bf16" : "q4", K, R, acc, t, T);
                    }
#undef MM
                    free(w); free(wp); free(sc); free(x); free(xp); free(x1); free(y); free(y1);
                    free(yb);
                }
}

static const char *const path_names[SX_CPU_PATHS] = { "scalar", "avx2", "avx512", "amx" };

/* A path this CPU lacks is a cmocka skip (counted as such by
 * tests/run_tests.sh), never a silent pass; a path it has says so. */
static void run_path(int path)
{
    const sx_cpu_kernels *kr = sx_cpu_kernels_for(path);
    if (!kr) {
        print_message("# skipped: no %s path on this CPU\n", path_names[path]);
        skip();
    }
    print_message("# path %s\n", kr->name);
    check_mm(kr, 0);
    check_mm(kr, 1);
    check_mm_q4(kr);
    check_mm_alone(kr, ALONE_Q4);
    if (kr->q8_layout == SX_Q8_QUADS)   /* the byte kernels; PAIRS widens to f32 */
        check_mm_alone(kr, ALONE_Q8);
    if (path == SX_CPU_AVX2)   /* its one-token bf16 kernel walks whole panels */
        check_mm_alone(kr, ALONE_BF16);
    check_vec(kr);
}

/* attention with the queries in lanes (AVX-512): against a double
 * softmax over the keys each lane may see (causal thresholds), fed block by
 * block as the engine feeds it.  The bf16 dot-product form (where the CPU
 * has AVX512-BF16) against the same softmax of q, k and v rounded to bf16:
 * what is left is its bf16 probabilities, within 2^-8 of each term. */
static double bf16r(float x)
{
    return sx_bf16_to_f32(sx_f32_to_bf16(x));
}

static void check_att_qt(int dp)
{
    if (!sx_cpu_kernels_for(SX_CPU_AVX512)) {
        print_message("# skipped: no AVX-512 (queries-in-lanes attention)\n");
        skip();
    }
    if (dp && !sx_dpbf16_usable()) {
        print_message("# skipped: no AVX512-BF16 (the bf16 attention kernel)\n");
        skip();
    }
    print_message("# path %s\n", dp ? "avx512-bf16 att_qt_dp" : "avx512 att_qt");
    double dp_worst = 0;
    {
    static const int hds[] = { 8, 40, 128, 67 };
    static const int bts[] = { 16, 5, 33 };
    static const int nqs[] = { 32, 7, 2 };
    static const int steps[] = { 1, 2, 4, 0 };
    for (size_t hi = 0; hi < 4; hi++)
        for (size_t bi = 0; bi < 3; bi++)
            for (size_t qi = 0; qi < 3; qi++)
                for (size_t si = 0; si < 4; si++) {
                    int hd = hds[hi], bt = bts[bi], nq = nqs[qi], vs = steps[si];
                    int n = 2 * bt + bt / 2 + 1, nb = (n + bt - 1) / bt;   /* 3 blocks, the last short */
                    /* lanes see keys up to (u - base) / vs: the first lanes only the first keys */
                    int base = vs ? -(n / 3) * vs : 0;
                    float *qt = calloc((size_t)hd * 32, sizeof *qt), *acct = calloc((size_t)hd * 32, 4);
                    float *kt = malloc((size_t)nb * hd * bt * 4), *v = malloc((size_t)nb * bt * hd * 4);
                    float *kpad = malloc((size_t)16 * hd * 4), m[32], l[32];
                    double *keys = malloc((size_t)n * hd * 8), *vals = malloc((size_t)n * hd * 8);
                    assert_non_null(qt); assert_non_null(acct); assert_non_null(kt);
                    assert_non_null(v); assert_non_null(kpad); assert_non_null(keys);
                    assert_non_null(vals);
                    /* odd head_dim: the bf16 kernel falls back to the f32 one */
                    int rd = dp && hd % 2 == 0;
                    for (int u = 0; u < nq; u++)
                        for (int d = 0; d < hd; d++)
                            qt[d * 32 + u] = (float)(urand() * 3.0);
                    for (int j = 0; j < n; j++)
                        for (int d = 0; d < hd; d++) {
                            float kk = (float)(urand() * 2.0), vv = (float)urand();
                            keys[j * hd + d] = rd ? bf16r(kk) : kk;
                            vals[j * hd + d] = rd ? bf16r(vv) : vv;
                            kt[(size_t)(j / bt) * hd * bt + (size_t)d * bt + j % bt] = kk;
                            v[(size_t)(j / bt) * bt * hd + (size_t)(j % bt) * hd + d] = vv;
                        }
                    for (int u = 0; u < 32; u++) {
                        m[u] = -INFINITY;
                        l[u] = 0.0f;
                    }
                    float scale = 1.0f / sqrtf((float)hd);
                    for (int b = 0; b < nb; b++) {
                        int nj = n - b * bt < bt ? n - b * bt : bt;
                        (dp ? sx_avx512_att_qt_dp : sx_avx512_att_qt)(
                            qt, kt + (size_t)b * hd * bt, v + (size_t)b * bt * hd, bt, nj, hd,
                            scale, vs ? base + b * bt * vs : 0, vs, m, l, acct, kpad);
                    }
                    for (int u = 0; u < nq; u++) {
                        double s[100], mx = -INFINITY, sum = 0;
                        for (int j = 0; j < n; j++) {
                            s[j] = -INFINITY;
                            if (u < base + j * vs)
                                continue;
                            double dot = 0;
                            for (int d = 0; d < hd; d++)
                                dot += (rd ? bf16r(qt[d * 32 + u]) : (double)qt[d * 32 + u]) *
                                       keys[j * hd + d];
                            s[j] = dot * scale;
                            mx = fmax(mx, s[j]);
                        }
                        for (int j = 0; j < n; j++)
                            sum += s[j] = s[j] == -INFINITY ? 0.0 : exp(s[j] - mx);
                        for (int d = 0; d < hd; d++) {
                            double ref = 0;
                            for (int j = 0; j < n; j++)
                                ref += s[j] * vals[j * hd + d];
                            ref /= sum;
                            double got = acct[d * 32 + u] / l[u];
                            if (rd)
                                dp_worst = fmax(dp_worst, fabs(got - ref));
                            if (!(fabs(got - ref) <= (rd ? 4e-3 : 2e-6)))
                                fail_msg("att_qt%s hd=%d bt=%d nq=%d step=%d lane %d d%d: %.8g "
                                         "vs %.8g", dp ? "_dp" : "", hd, bt, nq, vs, u, d, got, ref);
                        }
                    }
                    free(qt); free(acct); free(kt); free(v); free(kpad); free(keys); free(vals);
                }
    }
    if (dp) {
        print_message("bf16 attention: worst %.3g from the rounded-input softmax\n", dp_worst);
        assert_true(dp_worst > 2e-6);   /* its probabilities are bf16: not the f32 kernel */
    }
}

static void att_queries_in_lanes(void **state) { (void)state; check_att_qt(0); }
static void att_queries_in_lanes_bf16(void **state) { (void)state; check_att_qt(1); }

static void scalar_path(void **state) { (void)state; run_path(SX_CPU_SCALAR); }
static void avx2_path(void **state) { (void)state; run_path(SX_CPU_AVX2); }
static void avx512_path(void **state) { (void)state; run_path(SX_CPU_AVX512); }
static void amx_path(void **state) { (void)state; run_path(SX_CPU_AMX); }

/* The avx512 table's q4 runs VNNI where the CPU has it; the AVX-512BW
 * kernel for CPUs without it is checked here, and VNNI's directly too. */
static void q4_avx512bw(void **state)
{
    (void)state;
    const sx_cpu_kernels *kr = sx_cpu_kernels_for(SX_CPU_AVX512);
    if (!kr) {
        print_message("# skipped: no AVX-512 (q4 AVX-512BW kernel)\n");
        skip();
    }
    print_message("# path avx512bw q4\n");
    sx_cpu_kernels k = *kr;
    k.name = "avx512bw";
    k.mm_q4 = sx_avx512_mm_q4_bw;
    check_mm_q4(&k);
}

static void q4_avx512vnni(void **state)
{
    (void)state;
    const sx_cpu_kernels *kr = sx_cpu_kernels_for(SX_CPU_AVX512);
    if (!kr || !sx_avx512_q4_vnni_usable()) {
        print_message("# skipped: no AVX512-VNNI (q4 VNNI kernel)\n");
        skip();
    }
    print_message("# path avx512vnni q4\n");
    sx_cpu_kernels k = *kr;
    k.name = "avx512vnni";
    k.mm_q4 = sx_avx512_mm_q4_vnni;
    check_mm_q4(&k);
}

/* f16 scales: exact round trips, nearest-even rounding, subnormals,
 * overflow; and the q4 quantiser's promises on rows (the extreme is -8
 * exactly, every value within half a step but the clamped +8s, an all-zero
 * group scales 0). */
static void quant_q4_rows(void **state)
{
    (void)state;
    assert_true(sx_f32_to_f16(1.0f) == 0x3c00 && sx_f16_to_f32(0x3c00) == 1.0f);
    assert_true(sx_f32_to_f16(-2.0f) == 0xc000);
    assert_true(sx_f32_to_f16(65504.0f) == 0x7bff && sx_f32_to_f16(65520.0f) == 0x7c00);
    assert_true(sx_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00);        /* tie: even */
    assert_true(sx_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02);        /* tie: even, up */
    assert_true(sx_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    assert_true(sx_f32_to_f16(ldexpf(1.0f, -24)) == 0x0001);
    assert_true(sx_f32_to_f16(ldexpf(1.0f, -26)) == 0x0000);
    for (uint32_t h = 0; h < 0x7c00; h++)                           /* every finite f16 */
        assert_true(sx_f32_to_f16(sx_f16_to_f32((uint16_t)h)) == h);
    enum { R = 5, K = 77 };
    int ng = sx_q4_kpad(K) / SX_Q4_GROUP;
    uint16_t w[R * K];
    int8_t q[R * K];
    float sc[R * 8];
    for (int i = 0; i < R * K; i++)
        w[i] = sx_f32_to_bf16((float)urand());
    for (int i = 0; i < K; i++)
        w[2 * K + i] = 0;   /* an all-zero row */
    sx_quant_q4_rows(w, 0, R, K, q, sc);
    for (int g = 0; g < ng; g++)
        assert_true(sc[2 * ng + g] == 0.0f);
    for (int r = 0; r < R; r++)
        for (int g = 0; g < ng; g++) {
            double d = sc[r * ng + g];
            int seen8 = 0;
            for (int i = g * SX_Q4_GROUP; i < K && i < (g + 1) * SX_Q4_GROUP; i++) {
                double wv = sx_bf16_to_f32(w[r * K + i]);
                int qi = q[r * K + i];
                assert_true(qi >= -8 && qi <= 7);
                double step = fabs(d) * (qi == 7 ? 1.0001 : 0.5001);
                assert_true(fabs(qi * d - wv) <= step + 1e-12);
                seen8 |= qi == -8;
            }
            if (r != 2)
                assert_true(seen8);
        }
}

/* The opt-in bf16-activation kernel: exact products of the rounded
 * activations, summed in f32; and it really rounds (a value bf16 cannot
 * hold comes out as its rounding, not as itself). */
static void bf16act_kernel(void **state)
{
    (void)state;
    if (!sx_dpbf16_usable()) {
        print_message("# skipped: no AVX512-BF16 (bf16-activation kernel)\n");
        skip();
    }
    print_message("# path avx512-bf16act\n");
    sx_cpu_kernels kr = sx_cpu_avx512_kernels;
    kr.name = "avx512-bf16act";
    kr.mm_bf16 = sx_dpbf16_mm_bf16;
    check_mm(&kr, 0);
    enum { R = 32, K = 2, T = 12 };
    uint16_t w[R * K], wp[R * K];
    float xp[T * K], y[T * R];
    for (int i = 0; i < R * K; i++)
        w[i] = sx_f32_to_bf16(i % 2 ? 0.0f : 1.0f);     /* y = x[0] */
    sx_pack_bf16(w, R, K, 0, R, wp);
    float x[K] = { 1.0f + 1.0f / 1024, 0.0f };          /* 1 + 2^-10 rounds to 1 in bf16 */
    for (int t = 0; t < T; t++)
        sx_pack_x_row(x, t, T, K, kr.tile, xp);
    sx_dpbf16_mm_bf16(wp, K, xp, T, y, R, 0, R, 0);
    for (int i = 0; i < T * R; i++)
        assert_true(y[i] == 1.0f);
    sx_avx512_mm_bf16(wp, K, xp, T, y, R, 0, R, 0);      /* the f32 kernel keeps it */
    for (int i = 0; i < T * R; i++)
        assert_true(y[i] == x[0]);
}

/* The paths sum in different orders, so they need not agree bit for bit,
 * but they must agree closely on a realistic shape. */
static void paths_agree(void **state)
{
    (void)state;
    const int R = 64, K = 1024, T = 6;
    uint16_t *w = malloc((size_t)R * K * 2), *wp = malloc(sx_pack_bf16_size(R, K) * 2);
    float *x = malloc((size_t)T * K * 4), *xp = malloc(sx_xpack_size(T, K) * 4);
    float ys[SX_CPU_PATHS][6 * 64];
    assert_non_null(w); assert_non_null(wp); assert_non_null(x); assert_non_null(xp);
    for (int i = 0; i < R * K; i++)
        w[i] = sx_f32_to_bf16((float)(urand() * 0.05));
    sx_pack_bf16(w, R, K, 0, R, wp);
    fill(x, (size_t)T * K, 1.0);
    int have[SX_CPU_PATHS] = { 0 };
    for (int p = 0; p < SX_CPU_PATHS; p++) {
        const sx_cpu_kernels *kr = sx_cpu_kernels_for(p);
        if (!kr)
            continue;
        have[p] = 1;
        for (int t = 0; t < T; t++)
            sx_pack_x_row(x + t * K, t, T, K, kr->tile, xp);
        kr->mm_bf16(wp, K, xp, T, ys[p], R, 0, R, 0);
    }
    for (int p = 1; p < SX_CPU_PATHS; p++)
        if (have[p])
            print_message("# path %s against scalar\n", path_names[p]);
    for (int p = 1; p < SX_CPU_PATHS; p++)
        if (have[p])
            for (int i = 0; i < T * R; i++)
                assert_true(fabs(ys[p][i] - ys[0][i]) <= 1e-5);
    free(w); free(wp); free(x); free(xp);
}

static void norm_rope_ops(void **state)
{
    (void)state;
    float x[67], w[67], y[67];
    fill(x, 67, 3.0);
    fill(w, 67, 1.0);
    sx_cpu_rmsnorm(y, x, w, 67, 1e-6f);
    double ss = 0;
    for (int i = 0; i < 67; i++)
        ss += (double)x[i] * x[i];
    double inv = 1.0 / sqrt(ss / 67 + 1e-6);
    for (int i = 0; i < 67; i++)
        assert_true(fabs(y[i] - w[i] * x[i] * inv) <= 1e-6 * fabs(w[i] * x[i] * inv) + 1e-7);
    /* RoPE: pairs i and i + d/2, angle pos * theta^(-2i/d) */
    enum { D = 24 };
    float invf[D / 2], c[D / 2], s[D / 2], v[D], v0[D];
    sx_cpu_rope_inv_freq(10000.0, D, invf);
    sx_cpu_rope_angles(37, invf, D / 2, c, s);
    fill(v0, D, 1.0);
    memcpy(v, v0, sizeof v);
    sx_cpu_rope(v, c, s, D);
    for (int i = 0; i < D / 2; i++) {
        double a = 37.0 * pow(10000.0, -2.0 * i / D);
        double r0 = v0[i] * cos(a) - v0[i + D / 2] * sin(a);
        double r1 = v0[i + D / 2] * cos(a) + v0[i] * sin(a);
        assert_true(fabs(v[i] - r0) < 2e-5 && fabs(v[i + D / 2] - r1) < 2e-5);
    }
    /* swiglu on every path */
    for (int p = 0; p < SX_CPU_PATHS; p++) {
        const sx_cpu_kernels *kr = sx_cpu_kernels_for(p);
        if (!kr)
            continue;
        float g[300], u[300], g0[300];
        fill(g0, 300, 12.0);
        fill(u, 300, 1.0);
        memcpy(g, g0, sizeof g);
        sx_cpu_swiglu(kr, g, u, 300);
        for (int i = 0; i < 300; i++) {
            double ref = g0[i] / (1.0 + exp(-(double)g0[i])) * u[i];
            assert_true(fabs(g[i] - ref) <= 1e-6 * fabs(ref) + 1e-7);
        }
        /* the table's fused form rounds as the two-pass one, bit for bit,
         * on lengths with and without a vector tail */
        for (int n = 1; n <= 300; n += 37) {
            float gv[300];
            memcpy(gv, g0, sizeof gv);
            kr->swiglu(gv, u, n);
            memcpy(g, g0, sizeof g);
            sx_cpu_swiglu(kr, g, u, n);
            assert_memory_equal(gv, g, (size_t)n * sizeof *g);
            if (n < 300)
                assert_true(gv[n] == g0[n]);   /* nothing written past n */
        }
        /* the table's rmsnorm against the double reference, in place too */
        static const int ns[] = { 1, 7, 16, 67, 128, 1024 };
        for (size_t ci = 0; ci < sizeof ns / sizeof ns[0]; ci++) {
            int n = ns[ci];
            float *xn = malloc((size_t)n * sizeof *xn), *wn = malloc((size_t)n * sizeof *wn);
            float *yn = malloc((size_t)(n + 1) * sizeof *yn);
            assert_non_null(xn); assert_non_null(wn); assert_non_null(yn);
            fill(xn, n, 5.0);
            fill(wn, n, 2.0);
            yn[n] = 42.0f;
            kr->rmsnorm(yn, xn, wn, n, 1e-6f);
            double sn = 0;
            for (int i = 0; i < n; i++)
                sn += (double)xn[i] * xn[i];
            double iv = 1.0 / sqrt(sn / n + 1e-6);
            for (int i = 0; i < n; i++) {
                double ref = wn[i] * xn[i] * iv;
                assert_true(fabs(yn[i] - ref) <= 1e-6 * fabs(ref) + 1e-7);
            }
            assert_true(yn[n] == 42.0f);   /* nothing written past n */
            kr->rmsnorm(xn, xn, wn, n, 1e-6f);
            assert_memory_equal(xn, yn, (size_t)n * sizeof *xn);
            free(xn); free(wn); free(yn);
        }
    }
    /* bf16 -> f32 widening of a block, every path, tails included: exact */
    for (int p = 0; p < SX_CPU_PATHS; p++) {
        const sx_cpu_kernels *kr = sx_cpu_kernels_for(p);
        if (!kr)
            continue;
        uint16_t hb[203];
        float wide[204];
        for (int i = 0; i < 203; i++)
            hb[i] = (uint16_t)((urand() + 1.0) * 32767.0) & 0xff7f;   /* no NaN payloads */
        for (int n = 0; n <= 203; n += 29) {
            wide[n] = 7.0f;
            kr->bf16_to_f32(wide, hb, (size_t)n);
            for (int i = 0; i < n; i++)
                assert_true(memcmp(&wide[i], &(float){ sx_bf16_to_f32(hb[i]) }, 4) == 0);
            assert_true(wide[n] == 7.0f);
        }
    }
    /* bf16 rounding: nearest even, NaN stays NaN */
    assert_int_equal(sx_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(sx_f32_to_bf16(1.00390625f), 0x3f80);   /* tie -> even */
    assert_int_equal(sx_f32_to_bf16(1.01171875f), 0x3f82);   /* tie -> even (up) */
    assert_true(isnan(sx_bf16_to_f32(sx_f32_to_bf16(NAN))));
}

static void quant_rows(void **state)
{
    (void)state;
    enum { R = 5, K = 77 };
    uint16_t w[R * K];
    int8_t q[R * K];
    float sc[R];
    for (int i = 0; i < R * K; i++)
        w[i] = sx_f32_to_bf16((float)urand());
    for (int i = 0; i < K; i++)
        w[2 * K + i] = 0;   /* an all-zero row */
    sx_quant_q8_rows(w, 0, R, K, q, sc);
    assert_true(sc[2] == 0.0f);
    for (int r = 0; r < R; r++) {
        int seen127 = 0;
        for (int i = 0; i < K; i++) {
            double wv = sx_bf16_to_f32(w[r * K + i]);
            assert_true(fabs(q[r * K + i] * (double)sc[r] - wv) <= sc[r] * 0.5001 + 1e-12);
            seen127 |= abs(q[r * K + i]) == 127;
        }
        if (r != 2)
            assert_true(seen127);
    }
}

typedef struct pool_ctx {
    atomic_int calls;
    atomic_int mask;
    long       sum[8];
} pool_ctx;

static void pool_fn(void *arg, int tid, int n)
{
    pool_ctx *c = arg;
    atomic_fetch_add(&c->calls, 1);
    atomic_fetch_or(&c->mask, 1 << tid);
    long lo, hi;
    sx_pool_range(1000, n, tid, 16, &lo, &hi);
    for (long i = lo; i < hi; i++)
        c->sum[tid] += i;
}

static void pool_runs_every_tid(void **state)
{
    (void)state;
    for (int n = 1; n <= 4; n++) {
        sx_pool *p = NULL;
        assert_int_equal(sx_pool_new(n, &p, NULL), SX_OK);
        assert_int_equal(sx_pool_size(p), n);
        for (int rep = 0; rep < 500; rep++) {
            pool_ctx c;
            memset(&c, 0, sizeof c);
            sx_pool_run(p, pool_fn, &c);
            assert_int_equal(atomic_load(&c.calls), n);
            assert_int_equal(atomic_load(&c.mask), (1 << n) - 1);
            long s = 0;
            for (int i = 0; i < n; i++)
                s += c.sum[i];
            assert_int_equal(s, 999L * 1000 / 2);
        }
        sx_pool_free(p);
    }
    sx_pool *p = NULL;
    assert_int_equal(sx_pool_new(0, &p, NULL), SX_OK);   /* online CPUs */
    assert_true(sx_pool_size(p) >= 1);
    sx_pool_free(p);
    sx_error err;
    assert_int_equal(sx_pool_new(100000, &p, &err), SX_EINVAL);
    assert_null(p);
    /* ranges: aligned starts, cover everything, no overlap */
    for (int parts = 1; parts < 6; parts++) {
        long next = 0;
        for (int i = 0; i < parts; i++) {
            long lo, hi;
            sx_pool_range(1001, parts, i, 16, &lo, &hi);
            assert_int_equal(lo, next);
            assert_true(lo % 16 == 0 || lo == 1001);
            next = hi;
        }
        assert_int_equal(next, 1001);
    }
}

static void path_selection(void **state)
{
    (void)state;
    const sx_cpu_kernels *k = NULL;
    sx_error err;
    setenv("STRUX_CPU", "scalar", 1);
    assert_int_equal(sx_cpu_kernels_select(&k, &err), SX_OK);
    assert_string_equal(k->name, "scalar");
    setenv("STRUX_CPU", "avx9000", 1);
    assert_int_equal(sx_cpu_kernels_select(&k, &err), SX_EINVAL);
    assert_null(k);
    unsetenv("STRUX_CPU");
    assert_int_equal(sx_cpu_kernels_select(&k, &err), SX_OK);
    int best = SX_CPU_SCALAR;
    for (int p = 0; p < SX_CPU_PATHS; p++)
        if (sx_cpu_kernels_for(p))
            best = p;
    assert_int_equal(k->path, best);
    assert_null(sx_cpu_kernels_for(-1));
    assert_null(sx_cpu_kernels_for(SX_CPU_PATHS));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scalar_path),
        cmocka_unit_test(avx2_path),
        cmocka_unit_test(avx512_path),
        cmocka_unit_test(amx_path),
        cmocka_unit_test(q4_avx512bw),
        cmocka_unit_test(q4_avx512vnni),
        cmocka_unit_test(quant_q4_rows),
        cmocka_unit_test(bf16act_kernel),
        cmocka_unit_test(att_queries_in_lanes),
        cmocka_unit_test(att_queries_in_lanes_bf16),
        cmocka_unit_test(paths_agree),
        cmocka_unit_test(norm_rope_ops),
        cmocka_unit_test(quant_rows),
        cmocka_unit_test(pool_runs_every_tid),
        cmocka_unit_test(path_selection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
