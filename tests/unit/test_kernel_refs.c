/* The CPU references of the CUDA kernels (kernels/ *_ref.c, sx_kernels.h):
 * each one against a direct double-precision computation written here, and,
 * where the CPU engine has the same operation (engine/cpu/cpu_kernels.h),
 * against that too.  These references are what tests/gpu holds the kernels
 * to, so they run in CI where no GPU is.
 *
 * Tolerances: a bf16 result may differ from the exact value by its rounding
 * (2^-9 relative) plus f32 error, so bf16 outputs are allowed 2^-8 relative
 * (of the value, or of the row's scale where cancellation can occur); f32
 * outputs are allowed 1e-5 relative to the sum of magnitudes involved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/cpu_kernels.h"
#include "common/sx_bf16.h"
#include "kernels/sx_kernels.h"

static uint64_t rs;

static double rnd01(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0;
}

/* uniform in [-a, a) */
static float rndf(float a)
{
    return (float)((rnd01() * 2.0 - 1.0) * a);
}

static uint16_t rndbf(float a)
{
    return sx_f32_to_bf16(rndf(a));
}

/* Distance in bf16 steps between two bf16 values (same sign assumed near). */
static int bf_steps(uint16_t a, uint16_t b)
{
    int ka = (a & 0x8000) ? -(int)(a & 0x7fff) : (int)a;
    int kb = (b & 0x8000) ? -(int)(b & 0x7fff) : (int)b;
    return abs(ka - kb);
}

static void bf16_roundtrip(void **state)
{
    (void)state;
    assert_int_equal(sx_f32_to_bf16(1.0f), 0x3f80);
    assert_true(sx_bf16_to_f32(0x3f80) == 1.0f);
    /* ties go to even: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 */
    assert_int_equal(sx_f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
    assert_int_equal(sx_f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
    assert_int_equal(sx_f32_to_bf16(INFINITY), 0x7f80);
    assert_true(isnan(sx_bf16_to_f32(sx_f32_to_bf16(NAN))));
    assert_int_equal(sx_f32_to_bf16(3.4e38f), 0x7f80); /* rounds past the largest bf16 */
    for (int i = 0; i < 1000; i++) {
        float f = rndf(100.0f);
        assert_true(fabsf(sx_bf16_to_f32(sx_f32_to_bf16(f)) - f) <= fabsf(f) / 256);
    }
}

static void embed_gathers_rows(void **state)
{
    (void)state;
    enum { V = 50, H = 24, N = 6 };
    uint16_t table[V * H], got_bf[N * H];
    float got[N * H];
    int32_t tok[N] = { 0, 49, 7, -1, 50, 7 };
    rs = 11;
    for (int i = 0; i < V * H; i++)
        table[i] = rndbf(1.0f);
    sx_ref_embed_f32(table, V, H, tok, N, got);
    sx_ref_embed_bf16(table, V, H, tok, N, got_bf);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < H; c++) {
            int ok = tok[i] >= 0 && tok[i] < V;
            double want = ok ? (double)sx_bf16_to_f32(table[tok[i] * H + c]) : 0.0;
            assert_true(got[i * H + c] == want);
            assert_int_equal(got_bf[i * H + c], ok ? table[tok[i] * H + c] : 0);
        }
}

static void rmsnorm_matches_double_and_cpu_engine(void **state)
{
    (void)state;
    enum { N = 5, D = 300 };
    float res[N * D], res0[N * D], delta[N * D], w[D], y[D];
    uint16_t out[N * D], out_rows[N * D];
    const float eps = 1e-6f;
    rs = 22;
    for (int i = 0; i < N * D; i++) {
        res0[i] = res[i] = rndf(3.0f);
        delta[i] = rndf(1.0f);
    }
    for (int i = 0; i < D; i++)
        w[i] = 1.0f + rndf(0.5f);
    sx_ref_add_rmsnorm(res, delta, w, eps, N, D, out);
    double worst = 0;
    for (int r = 0; r < N; r++) {
        double ss = 0;
        for (int c = 0; c < D; c++) {
            float x = res0[r * D + c] + delta[r * D + c];
            assert_true(res[r * D + c] == x); /* the residual written back, exactly */
            ss += (double)x * x;
        }
        double inv = 1.0 / sqrt(ss / D + eps);
        for (int c = 0; c < D; c++) {
            double want = (double)res[r * D + c] * inv * w[c];
            double diff = fabs(sx_bf16_to_f32(out[r * D + c]) - want);
            assert_true(diff <= fabs(want) / 256 + 1e-30);
            worst = fmax(worst, diff / (fabs(want) + 1e-30));
        }
        /* the CPU engine's norm (f32 out) rounds to the same bf16, or its neighbour */
        sx_cpu_rmsnorm(y, res + r * D, w, D, eps);
        for (int c = 0; c < D; c++)
            assert_true(bf_steps(sx_f32_to_bf16(y[c]), out[r * D + c]) <= 1);
    }
    printf("rmsnorm: max relative error vs double %.3g (bf16 output)\n", worst);

    /* selected rows, nothing written back, same bits as the in-place version */
    int32_t rows[3] = { 4, 0, 4 };
    float x[N * D];
    memcpy(x, res0, sizeof x);
    sx_ref_rmsnorm_rows(x, delta, rows, 3, w, eps, D, out_rows);
    assert_memory_equal(x, res0, sizeof x);
    for (int i = 0; i < 3; i++)
        assert_memory_equal(out_rows + i * D, out + rows[i] * D, D * sizeof(uint16_t));
    /* no delta: the norm of x itself; equal to add_rmsnorm over a copy */
    float xc[N * D];
    memcpy(xc, res0, sizeof xc);
    sx_ref_rmsnorm_rows(res0, NULL, NULL, N, w, eps, D, out);
    sx_ref_add_rmsnorm(xc, NULL, w, eps, N, D, out_rows);
    assert_memory_equal(out, out_rows, sizeof out);
    assert_memory_equal(xc, res0, sizeof xc);
}

static void rope_table_matches_cpu_engine(void **state)
{
    (void)state;
    enum { D = 128, HALF = D / 2, P = 300 };
    static float c[P * HALF], s[P * HALF];
    float inv[HALF], cc[HALF], ss[HALF];
    sx_rope_table(1000000.0, D, P, c, s);
    sx_cpu_rope_inv_freq(1000000.0, D, inv);
    double worst = 0;
    for (int p = 0; p < P; p++) {
        sx_cpu_rope_angles(p, inv, HALF, cc, ss);
        assert_memory_equal(cc, c + p * HALF, sizeof cc);
        assert_memory_equal(ss, s + p * HALF, sizeof ss);
        for (int i = 0; i < HALF; i++) {
            double a = p * pow(1000000.0, -2.0 * i / D);
            /* f32 angles: |error| <= p * 2^-23 relative, small at these positions */
            worst = fmax(worst, fabs(c[p * HALF + i] - cos(a)));
            assert_true(fabs(c[p * HALF + i] - cos(a)) < 1e-4);
            assert_true(fabs(s[p * HALF + i] - sin(a)) < 1e-4);
        }
    }
    printf("rope: max |cos - exact| %.3g over %d positions\n", worst, P);
}

/* A small paged cache: 2 kv heads, head_dim 64, blocks of 4 tokens, with a
 * block stride larger than a block so that strides are exercised. */
enum { HQ = 4, HKV = 2, HD = 64, BT = 4, NBLK = 24, MAXB = 8 };
static const sx_attn_dims dims = {
    .n_heads = HQ, .n_kv_heads = HKV, .head_dim = HD, .block_tokens = BT,
    .max_blocks = MAXB, .block_stride = HKV * BT * HD + 40,
};
#define CACHE_ELEMS ((size_t)NBLK * (HKV * BT * HD + 40))

static size_t cache_at(int32_t slot, int kvh)
{
    return (size_t)(slot / BT) * dims.block_stride + ((size_t)kvh * BT + slot % BT) * HD;
}

static void qk_rope_kv_matches_double(void **state)
{
    (void)state;
    enum { N = 5, ROW = (HQ + 2 * HKV) * HD, P = 64 };
    static float qkv[N * ROW], q[N * HQ * HD], c[P * HD / 2], s[P * HD / 2];
    static uint16_t kc[CACHE_ELEMS], vc[CACHE_ELEMS];
    float qn[HD], kn[HD], y[HD];
    int32_t pos[N] = { 0, 1, 17, 63, 5 }, slot[N] = { 3, 4, 50, -1, 95 };
    const float eps = 1e-6f;
    rs = 33;
    for (int i = 0; i < N * ROW; i++)
        qkv[i] = rndf(2.0f);
    for (int i = 0; i < HD; i++) {
        qn[i] = 1.0f + rndf(0.3f);
        kn[i] = 1.0f + rndf(0.3f);
    }
    for (size_t i = 0; i < CACHE_ELEMS; i++)
        kc[i] = vc[i] = 0x7fc1; /* canary */
    sx_rope_table(10000.0, HD, P, c, s);
    sx_ref_qk_rope_kv(&dims, qkv, N, pos, slot, qn, kn, eps, c, s, q, kc, vc);
    double worst_q = 0;
    for (int t = 0; t < N; t++) {
        for (int h = 0; h < HQ + HKV; h++) {
            const float *x = qkv + t * ROW + h * HD;
            const float *w = h < HQ ? qn : kn;
            double ss = 0, n[HD], want[HD];
            for (int i = 0; i < HD; i++)
                ss += (double)x[i] * x[i];
            double inv = 1.0 / sqrt(ss / HD + eps);
            for (int i = 0; i < HD; i++)
                n[i] = x[i] * inv * w[i];
            for (int i = 0; i < HD / 2; i++) {
                double cs = c[pos[t] * HD / 2 + i], sn = s[pos[t] * HD / 2 + i];
                want[i] = n[i] * cs - n[i + HD / 2] * sn;
                want[i + HD / 2] = n[i + HD / 2] * cs + n[i] * sn;
            }
            if (h < HQ) {
                const float *got = q + (t * HQ + h) * HD;
                for (int i = 0; i < HD; i++) {
                    assert_true(fabs(got[i] - want[i]) <= 1e-5 * (fabs(n[i]) + fabs(n[(i + HD / 2) % HD])) + 1e-7);
                    worst_q = fmax(worst_q, fabs(got[i] - want[i]));
                }
                /* the CPU engine: rmsnorm then rope on the same head */
                sx_cpu_rmsnorm(y, x, w, HD, eps);
                sx_cpu_rope(y, c + pos[t] * HD / 2, s + pos[t] * HD / 2, HD);
                for (int i = 0; i < HD; i++)
                    assert_true(fabsf(y[i] - got[i]) <= 2e-5f * (fabsf(y[i]) + 1.0f));
            } else if (slot[t] >= 0) {
                size_t at = cache_at(slot[t], h - HQ);
                const float *v = x + HKV * HD;
                for (int i = 0; i < HD; i++) {
                    assert_true(fabs(sx_bf16_to_f32(kc[at + i]) - want[i]) <= fabs(want[i]) / 256 + 1e-6);
                    assert_int_equal(vc[at + i], sx_f32_to_bf16(v[i]));
                }
            }
        }
    }
    /* exactly the slots named were written: 4 of 5 tokens, 2 heads, K and V */
    size_t written = 0;
    for (size_t i = 0; i < CACHE_ELEMS; i++)
        written += (kc[i] != 0x7fc1) + (vc[i] != 0x7fc1);
    assert_int_equal(written, 4 * HKV * HD * 2);
    printf("qk_rope_kv: max |q - double| %.3g\n", worst_q);
}

static void attention_matches_double(void **state)
{
    (void)state;
    enum { ROWS = 14, SEQS = 3 };
    static float q[ROWS * HQ * HD];
    static uint16_t kc[CACHE_ELEMS], vc[CACHE_ELEMS], out[ROWS * HQ * HD];
    int32_t tables[SEQS * MAXB];
    /* sequence s uses blocks in a scrambled order, no block shared */
    int perm[NBLK];
    for (int i = 0; i < NBLK; i++)
        perm[i] = (i * 7 + 3) % NBLK;
    for (int i = 0; i < SEQS * MAXB; i++)
        tables[i] = perm[i % NBLK];
    rs = 44;
    for (int i = 0; i < ROWS * HQ * HD; i++)
        q[i] = rndf(1.0f);
    for (size_t i = 0; i < CACHE_ELEMS; i++) {
        kc[i] = rndbf(1.0f);
        vc[i] = rndbf(1.0f);
    }
    /* a prefill chunk after 7 cached tokens, a decode, a padding row, a
     * prefill from position 0 */
    sx_attn_item items[4] = {
        { .q_row = 0, .n_q = 5, .n_ctx = 12, .seq = 0 },
        { .q_row = 5, .n_q = 1, .n_ctx = 29, .seq = 1 },
        { .q_row = 6, .n_q = 1, .n_ctx = 0, .seq = 0 },
        { .q_row = 7, .n_q = 5, .n_ctx = 5, .seq = 2 },
    };
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        out[i] = 0x7fc1;
    float scale = 1.0f / sqrtf(HD);
    sx_ref_attn(&dims, q, kc, vc, tables, items, 4, scale, out);
    double worst = 0;
    for (int it = 0; it < 4; it++) {
        const sx_attn_item *a = &items[it];
        for (int j = 0; j < a->n_q; j++) {
            int r = a->q_row + j, keys = a->n_ctx - a->n_q + j + 1;
            for (int h = 0; h < HQ; h++) {
                const uint16_t *o = out + (r * HQ + h) * HD;
                if (a->n_ctx == 0) {
                    for (int i = 0; i < HD; i++)
                        assert_int_equal(o[i], 0);
                    continue;
                }
                int kvh = h / (HQ / HKV);
                double sc[64], m = -INFINITY, l = 0, acc[HD] = { 0 };
                for (int k = 0; k < keys; k++) {
                    int32_t slot = tables[a->seq * MAXB + k / BT] * BT + k % BT;
                    const uint16_t *kk = kc + cache_at(slot, kvh);
                    double d = 0;
                    for (int i = 0; i < HD; i++)
                        d += (double)q[(r * HQ + h) * HD + i] * sx_bf16_to_f32(kk[i]);
                    sc[k] = d * scale;
                    m = fmax(m, sc[k]);
                }
                for (int k = 0; k < keys; k++) {
                    int32_t slot = tables[a->seq * MAXB + k / BT] * BT + k % BT;
                    const uint16_t *vv = vc + cache_at(slot, kvh);
                    double p = exp(sc[k] - m);
                    l += p;
                    for (int i = 0; i < HD; i++)
                        acc[i] += p * sx_bf16_to_f32(vv[i]);
                }
                for (int i = 0; i < HD; i++) {
                    double want = acc[i] / l, diff = fabs(sx_bf16_to_f32(o[i]) - want);
                    /* |v| <= 1: bf16 rounding of the output plus f32 sums */
                    assert_true(diff <= fabs(want) / 256 + 1e-5);
                    worst = fmax(worst, diff);
                }
            }
        }
    }
    /* the CPU engine's attention block kernel, block by block over the same
     * cache (keys transposed per block, as it wants them), for the decode item */
    {
        const sx_attn_item *a = &items[1];
        int r = a->q_row;
        for (int h = 0; h < HQ; h++) {
            int kvh = h / (HQ / HKV);
            float m = -INFINITY, l = 0, acc[HD] = { 0 }, kt[HD * BT], v[BT * HD];
            for (int b = 0; b * BT < a->n_ctx; b++) {
                int nj = a->n_ctx - b * BT < BT ? a->n_ctx - b * BT : BT;
                for (int j = 0; j < nj; j++) {
                    size_t at = cache_at(tables[a->seq * MAXB + b] * BT + j, kvh);
                    for (int i = 0; i < HD; i++) {
                        kt[i * BT + j] = sx_bf16_to_f32(kc[at + i]);
                        v[j * HD + i] = sx_bf16_to_f32(vc[at + i]);
                    }
                }
                sx_cpu_scalar_kernels.att_block(q + (r * HQ + h) * HD, HD, 1, kt, v, BT, nj, HD,
                                                scale, &m, &l, acc);
            }
            for (int i = 0; i < HD; i++)
                assert_true(bf_steps(sx_f32_to_bf16(acc[i] / l), out[(r * HQ + h) * HD + i]) <= 1);
        }
    }
    /* rows outside the items are untouched */
    for (int i = 12 * HQ * HD; i < ROWS * HQ * HD; i++)
        assert_int_equal(out[i], 0x7fc1);
    printf("attention: max |out - double| %.3g\n", worst);
}

static void swiglu_matches_double_and_cpu_engine(void **state)
{
    (void)state;
    enum { N = 3, I = 200 };
    float gu[N * 2 * I], g[I];
    uint16_t out[N * I];
    rs = 55;
    for (int i = 0; i < N * 2 * I; i++)
        gu[i] = rndf(6.0f);
    sx_ref_swiglu(gu, N, I, out);
    for (int t = 0; t < N; t++) {
        const float *gt = gu + t * 2 * I, *ut = gt + I;
        for (int j = 0; j < I; j++) {
            double want = gt[j] / (1.0 + exp(-(double)gt[j])) * ut[j];
            assert_true(fabs(sx_bf16_to_f32(out[t * I + j]) - want) <= fabs(want) / 256 + 1e-30);
        }
        memcpy(g, gt, sizeof g);
        sx_cpu_swiglu(&sx_cpu_scalar_kernels, g, ut, I);
        for (int j = 0; j < I; j++)
            assert_true(bf_steps(sx_f32_to_bf16(g[j]), out[t * I + j]) <= 1);
    }
}

static void gemm_matches_double_and_cpu_engine(void **state)
{
    (void)state;
    enum { M = 7, N = 64, K = 130 };
    static uint16_t x[M * K], w[N * K];
    static float y[M * N], xf[M * K], yc[M * N];
    rs = 66;
    for (int i = 0; i < M * K; i++) {
        x[i] = rndbf(2.0f);
        xf[i] = sx_bf16_to_f32(x[i]);
    }
    for (int i = 0; i < N * K; i++)
        w[i] = rndbf(0.5f);
    sx_ref_gemm(x, w, M, N, K, y);
    /* the CPU engine's plain C matmul on its packed weights and activations */
    const sx_cpu_kernels *kr = &sx_cpu_scalar_kernels;
    uint16_t *wp = malloc(sx_pack_bf16_size(N, K) * sizeof *wp);
    float *xp = malloc(sx_xpack_size(M, K) * sizeof *xp);
    assert_non_null(wp);
    assert_non_null(xp);
    sx_pack_bf16(w, N, K, 0, N, wp);
    for (int t = 0; t < M; t++)
        sx_pack_x_row(xf + t * K, t, M, K, kr->tile, xp);
    kr->mm_bf16(wp, K, xp, M, yc, N, 0, N, 0);
    free(wp);
    free(xp);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double d = 0, mag = 0;
            for (int c = 0; c < K; c++) {
                d += (double)sx_bf16_to_f32(x[i * K + c]) * sx_bf16_to_f32(w[j * K + c]);
                mag += fabs((double)sx_bf16_to_f32(x[i * K + c]) * sx_bf16_to_f32(w[j * K + c]));
            }
            assert_true(fabs(y[i * N + j] - d) <= 1e-5 * mag);
            assert_true(fabs(yc[i * N + j] - y[i * N + j]) <= 1e-5 * mag);
            worst = fmax(worst, fabs(y[i * N + j] - d) / mag);
        }
    printf("gemm: max |y - double| / sum|x w| %.3g\n", worst);
}

static void mask_ref_masks_exactly(void **state)
{
    (void)state;
    enum { R = 2, V = 70, W = (V + 31) / 32 };
    float l[R * V];
    uint32_t m[R * W];
    rs = 77;
    for (int i = 0; i < R * V; i++)
        l[i] = rndf(1.0f);
    for (int i = 0; i < R * W; i++)
        m[i] = (uint32_t)(rnd01() * 4294967296.0);
    float l0[R * V];
    memcpy(l0, l, sizeof l);
    sx_ref_apply_mask(l, m, R, V);
    for (int r = 0; r < R; r++)
        for (int t = 0; t < V; t++) {
            int on = (m[r * W + t / 32] >> (t % 32)) & 1;
            if (on)
                assert_true(l[r * V + t] == l0[r * V + t]);
            else
                assert_true(isinf(l[r * V + t]) && l[r * V + t] < 0);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bf16_roundtrip),
        cmocka_unit_test(embed_gathers_rows),
        cmocka_unit_test(rmsnorm_matches_double_and_cpu_engine),
        cmocka_unit_test(rope_table_matches_cpu_engine),
        cmocka_unit_test(qk_rope_kv_matches_double),
        cmocka_unit_test(attention_matches_double),
        cmocka_unit_test(swiglu_matches_double_and_cpu_engine),
        cmocka_unit_test(gemm_matches_double_and_cpu_engine),
        cmocka_unit_test(mask_ref_masks_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
