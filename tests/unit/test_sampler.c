/* Tests of sx_sampler against independent references: log-softmax and the
 * truncation rules recomputed in double with a full sort, softmax(l/T)
 * checked by chi-square, penalties against hand-computed logits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sampler/sampler.h"
#include "engine/sampler/sampler_internal.h"
#include "common/sx_sample_math.h"

#define FULL_ROWS 151936
#define FULL_VALID 151669

/* ---- test data ------------------------------------------------------------ */

static uint64_t rs = 0x1234567u;

static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static double rnd01(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static double rnd_normal(void)
{
    double u = rnd01() + 1e-300, v = rnd01();
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static uint32_t *mask_new(int rows)
{
    uint32_t *m = calloc((size_t)(rows + 31) / 32, sizeof *m);
    assert_non_null(m);
    return m;
}

static void mask_set(uint32_t *m, int t)
{
    m[t / 32] |= 1u << (t % 32);
}

static int mask_get(const uint32_t *m, int t)
{
    return (m[t / 32] >> (t % 32)) & 1;
}

static sx_sampler *mk(const sx_sampling *p, int rows, int valid)
{
    sx_sampler *s = NULL;
    sx_error e;
    assert_int_equal(sx_sampler_new(p, rows, valid, &s, &e), SX_OK);
    return s;
}

static sx_sampling params(float t, int k, float p, float minp)
{
    sx_sampling s;
    sx_sampling_default(&s);
    s.temperature = t;
    s.top_k = k;
    s.top_p = p;
    s.min_p = minp;
    return s;
}

/* ---- references ------------------------------------------------------------- */

static int allowed(const float *l, const uint32_t *mask, int valid, int t)
{
    return t < valid && (!mask || mask_get(mask, t)) && l[t] == l[t] && l[t] != -INFINITY;
}

/* log-softmax over the allowed tokens, in double */
static void ref_logsoftmax(const float *l, const uint32_t *mask, int rows, int valid,
                           double *out)
{
    double m = -INFINITY, z = 0;
    for (int t = 0; t < rows; t++)
        if (allowed(l, mask, valid, t) && l[t] > m)
            m = l[t];
    for (int t = 0; t < rows; t++)
        if (allowed(l, mask, valid, t))
            z += exp(l[t] - m);
    for (int t = 0; t < rows; t++)
        out[t] = allowed(l, mask, valid, t) ? l[t] - m - log(z) : -INFINITY;
}

static const float *g_sort_l;

static int by_rank(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (g_sort_l[x] != g_sort_l[y])
        return g_sort_l[x] > g_sort_l[y] ? -1 : 1;
    return x - y;
}

/* The candidate set by the definitions in engine/sampler/sampler_plan.c, with a full
 * sort.  Returns 0 when a boundary is within rounding distance (the case is
 * then ambiguous and skipped), else 1 and member[]. */
static int ref_support(const float *l, const uint32_t *mask, int rows, int valid,
                       const sx_sampling *p, uint8_t *member)
{
    int *ord = malloc((size_t)rows * sizeof *ord);
    double *w = malloc((size_t)rows * sizeof *w);
    assert_true(ord && w);
    int n = 0, ok = 1;
    for (int t = 0; t < rows; t++)
        if (allowed(l, mask, valid, t))
            ord[n++] = t;
    g_sort_l = l;
    qsort(ord, (size_t)n, sizeof *ord, by_rank);
    double m = l[ord[0]];
    for (int r = 0; r < n; r++)
        w[r] = exp((l[ord[r]] - m) / p->temperature);
    int nc = n;
    if (p->top_k > 0 && p->top_k < nc)
        nc = p->top_k;
    if (p->top_p < 1.0f) {
        double z = 0, cum = 0, target;
        for (int r = 0; r < nc; r++)
            z += w[r];
        target = (double)p->top_p * z;
        for (int r = 0; r < nc; r++) {
            if (fabs(cum - target) < 2e-6 * z)
                ok = 0;
            if (cum >= target) {
                nc = r;
                break;
            }
            cum += w[r];
        }
    }
    memset(member, 0, (size_t)rows);
    for (int r = 0; r < nc; r++) {
        if (p->min_p > 0 && fabs(w[r] - p->min_p) < 1e-5 * p->min_p)
            ok = 0;
        if (w[r] >= p->min_p)
            member[ord[r]] = 1;
    }
    free(ord);
    free(w);
    return ok;
}

/* Upper tail of chi-square with `df` degrees of freedom (Wilson-Hilferty:
 * the cube root of chi2/df is close to normal; ample for p-value bounds). */
static double chi2_upper(double x, int df)
{
    double k = df, v = 2.0 / (9.0 * k);
    double z = (cbrt(x / k) - (1.0 - v)) / sqrt(v);
    return 0.5 * erfc(z / sqrt(2.0));
}

/* Pearson's test of counts against probabilities; bins expected below 5 are
 * pooled.  Returns the p-value. */
static double chi2_p(const long *obs, const double *prob, int k, long n)
{
    double stat = 0, pool_e = 0;
    long pool_o = 0;
    int bins = 0;
    for (int i = 0; i < k; i++) {
        double e = prob[i] * (double)n;
        if (e < 5) {
            pool_e += e;
            pool_o += obs[i];
            continue;
        }
        stat += (obs[i] - e) * (obs[i] - e) / e;
        bins++;
    }
    if (pool_e > 0) {
        if (pool_e < 1e-9 && pool_o > 0)
            return 0; /* something impossible was observed */
        stat += (pool_o - pool_e) * (pool_o - pool_e) / (pool_e < 1 ? 1 : pool_e);
        bins++;
    }
    return bins < 2 ? 1.0 : chi2_upper(stat, bins - 1);
}

/* softmax(l/T) over the allowed tokens, in double */
static void ref_softmax_t(const float *l, int rows, double T, double *p)
{
    double m = -INFINITY, z = 0;
    for (int t = 0; t < rows; t++)
        if (l[t] > m)
            m = l[t];
    for (int t = 0; t < rows; t++)
        z += (p[t] = exp((l[t] - m) / T));
    for (int t = 0; t < rows; t++)
        p[t] /= z;
}

/* ---- tests ------------------------------------------------------------------- */

static void rng_is_the_documented_hash(void **state)
{
    (void)state;
    /* values of splitmix64(splitmix64(seed) + (i + 1) * golden) computed by
     * an independent script */
    assert_true(sx_rng_u64(0, 0) == 0xe220a8397b1dcdafull);
    assert_true(sx_rng_u64(42, 7) == 0x272404a0a3926552ull);
    assert_true(sx_rng_u64(0xDEADBEEFull, 123456789) == 0x5113c163d94d406dull);
    assert_true(fabs(sx_rng_uniform(42, 7) - 0.15289334222649975) < 1e-15);
    double sum = 0, lo = 1, hi = 0;
    for (int i = 0; i < 100000; i++) {
        double u = sx_rng_uniform(9, (uint64_t)i);
        assert_true(u >= 0.0 && u < 1.0);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    assert_true(fabs(sum / 100000 - 0.5) < 0.005);
    assert_true(lo < 1e-3 && hi > 1 - 1e-3);
}

static void expneg_matches_exp(void **state)
{
    (void)state;
    assert_true(sx_expneg(0.0f) == 1.0f);
    assert_true(sx_expneg(-INFINITY) == 0.0f);
    assert_true(sx_expneg(-100.0f) == 0.0f);
    double worst = 0;
    for (int i = 0; i <= 2000000; i++) {
        float x = (float)(-87.0 * i / 2000000.0);
        double r = fabs((double)sx_expneg(x) / exp((double)x) - 1.0);
        worst = r > worst ? r : worst;
    }
    assert_true(worst < 4e-7);
    /* order-preserving keys */
    float v[] = {-INFINITY, -FLT_MAX, -3.5f, -1e-30f, -0.0f, 0.0f, 1e-30f, 2.0f, FLT_MAX};
    for (int i = 0; i + 1 < 9; i++)
        assert_true(sx_fkey(v[i]) <= sx_fkey(v[i + 1]));
    assert_true(sx_fkey(-0.0f) == sx_fkey(0.0f));
    assert_true(sx_kfloat(sx_fkey(-3.5f)) == -3.5f && sx_kfloat(sx_fkey(2.0f)) == 2.0f);
}

static void check_rejects_bad_params(void **state)
{
    (void)state;
    sx_sampling p;
    sx_error e;
    sx_sampling_default(&p);
    assert_int_equal(sx_sampling_check(&p, &e), SX_OK);
    assert_true(p.temperature == 1.0f && p.top_p == 1.0f && p.repetition_penalty == 1.0f);
    assert_true(p.top_k == 0 && p.min_p == 0.0f && p.no_repeat_ngram == 0 && p.top_n == 0);
#define BAD(field, value, where)                                                 \
    do {                                                                           \
        sx_sampling_default(&p);                                                   \
        p.field = value;                                                           \
        assert_int_equal(sx_sampling_check(&p, &e), SX_EINVAL);                    \
        assert_string_equal(e.pointer, where);                                     \
        assert_true(e.msg[0] != 0);                                                \
    } while (0)
    BAD(temperature, -0.5f, "/temperature");
    BAD(temperature, NAN, "/temperature");
    BAD(temperature, INFINITY, "/temperature");
    BAD(top_k, -1, "/top_k");
    BAD(top_p, 0.0f, "/top_p");
    BAD(top_p, 1.5f, "/top_p");
    BAD(top_p, NAN, "/top_p");
    BAD(min_p, -0.1f, "/min_p");
    BAD(min_p, 1.01f, "/min_p");
    BAD(repetition_penalty, 0.0f, "/repetition_penalty");
    BAD(repetition_penalty, -1.0f, "/repetition_penalty");
    BAD(repetition_penalty, INFINITY, "/repetition_penalty");
    BAD(no_repeat_ngram, -1, "/no_repeat_ngram");
    BAD(no_repeat_ngram, 100000, "/no_repeat_ngram");
    BAD(top_n, -1, "/top_n");
    BAD(top_n, SX_SAMPLER_MAX_TOPN + 1, "/top_n");
#undef BAD
    assert_int_equal(sx_sampling_check(NULL, &e), SX_EINVAL);
    /* the boundaries themselves are fine */
    sx_sampling_default(&p);
    p.temperature = 0;
    p.top_p = 1;
    p.min_p = 1;
    p.top_n = SX_SAMPLER_MAX_TOPN;
    assert_int_equal(sx_sampling_check(&p, &e), SX_OK);

    sx_sampler *s = (sx_sampler *)&p; /* must be overwritten with NULL */
    sx_sampling_default(&p);
    assert_int_equal(sx_sampler_new(&p, 0, 0, &s, &e), SX_EINVAL);
    assert_null(s);
    assert_int_equal(sx_sampler_new(&p, 10, 11, &s, &e), SX_EINVAL);
    p.top_p = 2;
    assert_int_equal(sx_sampler_new(&p, 10, 10, &s, &e), SX_EINVAL);
    assert_null(s);
    sx_sampling_default(&p);
    s = mk(&p, 10, 8);
    assert_int_equal(sx_sampler_accept(s, 10), SX_EINVAL);
    assert_int_equal(sx_sampler_accept(s, -1), SX_EINVAL);
    assert_int_equal(sx_sampler_accept(s, 9), SX_OK); /* a row past the tokenizer: forced */
    float l[10] = {0};
    sx_sample out;
    assert_int_equal(sx_sampler_sample(s, NULL, NULL, &out, &e), SX_EINVAL);
    assert_int_equal(sx_sampler_sample(s, l, NULL, NULL, &e), SX_EINVAL);
    sx_sampler_rollback(s, -3);
    sx_sampler_rollback(s, 100);
    sx_sampler_free(s);
    sx_sampler_free(NULL);
}

static void greedy_is_argmax_lowest_id(void **state)
{
    (void)state;
    sx_sampling p = params(0, 0, 1, 0);
    p.top_k = 3;    /* truncation has no effect on greedy */
    p.top_p = 0.5f;
    sx_error e;
    sx_sample out;
    for (int rows = 100; rows <= FULL_ROWS; rows += FULL_ROWS - 100) {
        int valid = rows == FULL_ROWS ? FULL_VALID : 90;
        sx_sampler *s = mk(&p, rows, valid);
        float *l = malloc((size_t)rows * sizeof *l), *c = malloc((size_t)rows * sizeof *c);
        double *ref = malloc((size_t)rows * sizeof *ref);
        for (int rep = 0; rep < 20; rep++) {
            for (int t = 0; t < rows; t++)
                l[t] = (float)rnd_normal() * 3;
            int a = (int)(rnd() % (uint64_t)(valid / 2)), b = a + 1 + (int)(rnd() % 20);
            l[a] = l[b] = 50;               /* a tie: the lower id wins */
            l[valid] = 80;                  /* past the tokenizer: never */
            memcpy(c, l, (size_t)rows * sizeof *l);
            assert_int_equal(sx_sampler_sample(s, c, NULL, &out, &e), SX_OK);
            assert_int_equal(out.token, a);
            ref_logsoftmax(l, NULL, rows, valid, ref);
            assert_true(fabs(out.logprob - ref[a]) < 1e-5);
            /* masking the winner moves the choice to the other one */
            uint32_t *m = mask_new(rows);
            for (int t = 0; t < rows; t++)
                if (t != a)
                    mask_set(m, t);
            memcpy(c, l, (size_t)rows * sizeof *l);
            assert_int_equal(sx_sampler_sample(s, c, m, &out, &e), SX_OK);
            assert_int_equal(out.token, b);
            ref_logsoftmax(l, m, rows, valid, ref);
            assert_true(fabs(out.logprob - ref[b]) < 1e-5);
            free(m);
        }
        free(l);
        free(c);
        free(ref);
        sx_sampler_free(s);
    }
}

/* 10^6 draws: never a masked token, never a row past the tokenizer. */
static void masked_tokens_never_sampled(void **state)
{
    (void)state;
    const int rows = 64, valid = 60;
    float l[64], c[64];
    uint32_t m[2];
    sx_sample out;
    sx_error e;
    long draws = 0;
    for (int cfg = 0; cfg < 100; cfg++) {
        static const float temps[] = {0.25f, 0.7f, 1.0f, 1.6f, 4.0f};
        sx_sampling p = params(temps[cfg % 5], (cfg / 5) % 3 == 1 ? 5 : 0,
                               (cfg / 15) % 2 ? 0.8f : 1.0f, (cfg / 30) % 2 ? 0.05f : 0.0f);
        p.seed = (uint64_t)cfg * 7919;
        p.repetition_penalty = cfg % 4 == 3 ? 1.3f : 1.0f;
        p.no_repeat_ngram = cfg % 7 == 6 ? 2 : 0;
        sx_sampler *s = mk(&p, rows, valid);
        for (int rep = 0; rep < 10000; rep++) {
            if (rep % 50 == 0) {
                for (int t = 0; t < rows; t++)
                    l[t] = (float)rnd_normal() * 2;
                l[rows - 1] = l[valid] = 30; /* rows past vocab_valid are attractive */
                do {
                    m[0] = (uint32_t)rnd() & (uint32_t)rnd();
                    m[1] = (uint32_t)rnd() | 0xF0000000u; /* rows past valid "allowed" */
                } while (!(m[0] | (m[1] & 0x0FFFFFFFu)));
                /* a masked token is made the most likely one */
                for (int t = 0; t < valid; t++)
                    if (!mask_get(m, t)) {
                        l[t] = 40;
                        break;
                    }
            }
            memcpy(c, l, sizeof l);
            const uint32_t *mm = rep % 10 == 9 ? NULL : m;
            assert_int_equal(sx_sampler_sample(s, c, mm, &out, &e), SX_OK);
            draws++;
            if (out.token < 0 || out.token >= valid || (mm && !mask_get(mm, out.token)))
                fail_msg("cfg %d draw %d: token %d is masked", cfg, rep, out.token);
            if (sx_sampler_accept(s, out.token))
                fail();
            if (rep % 64 == 63)
                sx_sampler_rollback(s, 64);
        }
        sx_sampler_free(s);
    }
    assert_int_equal(draws, 1000000);

    /* and at the real size, sparse and dense masks */
    float *lf = malloc(FULL_ROWS * sizeof *lf), *cf = malloc(FULL_ROWS * sizeof *cf);
    uint32_t *mf = mask_new(FULL_ROWS);
    for (int t = 0; t < FULL_ROWS; t++)
        lf[t] = (float)rnd_normal() * 2;
    for (int t = FULL_VALID; t < FULL_ROWS; t++)
        lf[t] = 25;
    for (int cfg = 0; cfg < 8; cfg++) {
        sx_sampling p = params(cfg % 2 ? 1.0f : 1.7f, cfg & 2 ? 50 : 0, cfg & 4 ? 0.9f : 1.0f, 0);
        p.seed = (uint64_t)cfg;
        sx_sampler *s = mk(&p, FULL_ROWS, FULL_VALID);
        for (int rep = 0; rep < 150; rep++) {
            if (rep % 25 == 0) {
                int dense = rep % 50 == 0;
                for (int w = 0; w < (FULL_ROWS + 31) / 32; w++)
                    mf[w] = dense ? (uint32_t)rnd() | (uint32_t)rnd() : ((rnd() % 64) ? 0 : (uint32_t)rnd());
                mf[0] |= 1;
            }
            memcpy(cf, lf, FULL_ROWS * sizeof *lf);
            assert_int_equal(sx_sampler_sample(s, cf, rep % 5 == 4 ? NULL : mf, &out, &e), SX_OK);
            assert_true(out.token >= 0 && out.token < FULL_VALID);
            if (rep % 5 != 4)
                assert_true(mask_get(mf, out.token));
            sx_sampler_accept(s, out.token);
        }
        sx_sampler_free(s);
    }
    free(lf);
    free(cf);
    free(mf);
}

/* Draws n tokens from one fixed row, the counter advancing by accept. */
static void histogram(sx_sampler *s, const float *l, int rows, long n, long *obs)
{
    float *c = malloc((size_t)rows * sizeof *c);
    sx_sample out;
    sx_error e;
    memset(obs, 0, (size_t)rows * sizeof *obs);
    for (long i = 0; i < n; i++) {
        memcpy(c, l, (size_t)rows * sizeof *c);
        assert_int_equal(sx_sampler_sample(s, c, NULL, &out, &e), SX_OK);
        obs[out.token]++;
        sx_sampler_accept(s, out.token);
    }
    free(c);
}

static void temperature_matches_softmax(void **state)
{
    (void)state;
    enum { V = 400 };
    static float l[V];
    static double prob[V], wrong[V];
    static long obs[V];
    static const float temps[] = {0.6f, 1.0f, 1.8f};
    const long n = 100000;
    for (int ti = 0; ti < 3; ti++) {
        for (int t = 0; t < V; t++)
            l[t] = (float)rnd_normal() * 1.5f;
        sx_sampling p = params(temps[ti], 0, 1, 0);
        p.seed = 1000 + (uint64_t)ti;
        sx_sampler *s = mk(&p, V, V);
        histogram(s, l, V, n, obs);
        ref_softmax_t(l, V, temps[ti], prob);
        double pv = chi2_p(obs, prob, V, n);
        print_message("T=%.1f: chi-square p = %.4f\n", temps[ti], pv);
        assert_true(pv > 1e-3);
        /* the same counts are far from a 15%-off temperature */
        ref_softmax_t(l, V, temps[ti] * 1.15, wrong);
        assert_true(chi2_p(obs, wrong, V, n) < 1e-9);
        sx_sampler_free(s);
    }
}

/* The helper itself: a plain inverse-CDF sampler passes, a wrong one fails. */
static void chi_square_helper_discriminates(void **state)
{
    (void)state;
    enum { V = 50 };
    double prob[V], wrong[V], cdf[V];
    long obs[V] = {0}, obs_w[V] = {0};
    float l[V];
    for (int t = 0; t < V; t++)
        l[t] = (float)rnd_normal();
    ref_softmax_t(l, V, 1.0, prob);
    /* a fifth of the likeliest token's mass moved to the least likely one */
    int hi = 0, lo = 0;
    for (int t = 0; t < V; t++) {
        hi = prob[t] > prob[hi] ? t : hi;
        lo = prob[t] < prob[lo] ? t : lo;
    }
    memcpy(wrong, prob, sizeof wrong);
    wrong[hi] -= 0.2 * prob[hi];
    wrong[lo] += 0.2 * prob[hi];
    const long n = 200000;
    for (int pass = 0; pass < 2; pass++) {
        const double *q = pass ? wrong : prob;
        double c = 0;
        for (int t = 0; t < V; t++)
            cdf[t] = c += q[t];
        for (long i = 0; i < n; i++) {
            double u = sx_rng_uniform(77, (uint64_t)i) * c;
            int t = 0;
            while (t < V - 1 && cdf[t] <= u)
                t++;
            (pass ? obs_w : obs)[t]++;
        }
    }
    assert_true(chi2_p(obs, prob, V, n) > 1e-3);
    assert_true(chi2_p(obs_w, prob, V, n) < 1e-6);
    /* the tail approximation against known quantiles */
    assert_true(fabs(chi2_upper(3.841, 1) - 0.05) < 0.01);
    assert_true(fabs(chi2_upper(124.342, 100) - 0.05) < 0.002);
    assert_true(fabs(chi2_upper(18.307, 10) - 0.05) < 0.003);
}

/* top-k/top-p/min-p candidate sets against a full sort. */
static void run_support_case(int rows, int valid, const float *l, const uint32_t *mask,
                             const sx_sampling *p, uint8_t *got, uint8_t *want, float *c,
                             int *checked)
{
    if (!ref_support(l, mask, rows, valid, p, want))
        return;
    sx_sampler *s = mk(p, rows, valid);
    sx_error e;
    memcpy(c, l, (size_t)rows * sizeof *c);
    assert_int_equal(sx_sampler_support(s, c, mask, got, &e), SX_OK);
    int n = 0;
    for (int t = 0; t < rows; t++) {
        if (got[t] != want[t])
            fail_msg("T=%g k=%d p=%g minp=%g: token %d is %s", p->temperature, p->top_k,
                     p->top_p, p->min_p, t, want[t] ? "missing" : "extra");
        n += want[t];
    }
    assert_true(n >= 1);
    /* every draw lands in the set */
    sx_sample out;
    for (int i = 0; i < 20; i++) {
        memcpy(c, l, (size_t)rows * sizeof *c);
        assert_int_equal(sx_sampler_sample(s, c, mask, &out, &e), SX_OK);
        assert_true(want[out.token]);
        sx_sampler_accept(s, out.token);
    }
    sx_sampler_free(s);
    (*checked)++;
}

static void truncation_sets_are_exact(void **state)
{
    (void)state;
    static const float temps[] = {0.3f, 0.7f, 1.0f, 1.5f};
    static const int ks[] = {0, 1, 5, 40, 150, 1000};
    static const float ps[] = {1.0f, 0.95f, 0.8f, 0.5f, 0.1f};
    static const float mps[] = {0.0f, 0.01f, 0.1f, 0.5f};
    enum { V = 200 };
    float l[V], c[V];
    uint8_t got[V], want[V];
    uint32_t mask[(V + 31) / 32];
    int checked = 0, cases = 0;
    for (int rep = 0; rep < 3000; rep++) {
        int mode = rep % 4;
        double sigma = 0.5 + 4.5 * rnd01();
        for (int t = 0; t < V; t++) {
            double x = rnd_normal() * sigma;
            if (mode == 1)
                x = floor(x * 2) / 2; /* many exact ties */
            l[t] = (float)x;
        }
        if (mode == 2)
            l[rnd() % V] += 20; /* one dominant token */
        for (int w = 0; w < (V + 31) / 32; w++)
            mask[w] = mode == 3 ? (uint32_t)(rnd() | rnd()) : 0xFFFFFFFFu;
        mask_set(mask, 3);
        sx_sampling p = params(temps[rnd() % 4], ks[rnd() % 6], ps[rnd() % 5], mps[rnd() % 4]);
        cases++;
        run_support_case(V, V - 7, l, mask, &p, got, want, c, &checked);
    }
    print_message("small vocabulary: %d of %d cases unambiguous\n", checked, cases);
    assert_true(checked > cases * 9 / 10);

    /* the real size: growth of the gathered prefix (dominant token with
     * top-k), big prefixes (flat rows with top-p), ties, a mask */
    float *lf = malloc(FULL_ROWS * sizeof *lf), *cf = malloc(FULL_ROWS * sizeof *cf);
    uint8_t *gf = malloc(FULL_ROWS), *wf = malloc(FULL_ROWS);
    uint32_t *mf = mask_new(FULL_ROWS);
    int full_checked = 0;
    for (int rep = 0; rep < 24; rep++) {
        double sigma = rep % 3 == 0 ? 0.05 : rep % 3 == 1 ? 1.0 : 3.0;
        for (int t = 0; t < FULL_ROWS; t++)
            lf[t] = (float)(rep % 4 == 3 ? floor(rnd_normal() * sigma * 4) / 4 : rnd_normal() * sigma);
        if (rep % 2)
            lf[rnd() % FULL_VALID] += 40;
        for (int w = 0; w < (FULL_ROWS + 31) / 32; w++)
            mf[w] = rep % 5 == 4 ? (uint32_t)rnd() : 0xFFFFFFFFu;
        mask_set(mf, 0);
        static const int fk[] = {0, 50, 20000};
        static const float fp[] = {1.0f, 0.9f, 0.5f};
        sx_sampling p = params(rep % 2 ? 1.0f : 0.8f, fk[rep % 3], fp[(rep / 3) % 3],
                               rep % 8 == 7 ? 0.05f : 0.0f);
        if (p.top_k == 0 && p.top_p == 1.0f && p.min_p == 0.0f)
            p.top_p = 0.7f;
        run_support_case(FULL_ROWS, FULL_VALID, lf, mf, &p, gf, wf, cf, &full_checked);
    }
    print_message("full vocabulary: %d of 24 cases unambiguous\n", full_checked);
    assert_true(full_checked >= 20);
    free(lf);
    free(cf);
    free(gf);
    free(wf);
    free(mf);
}

/* The truncated distribution is softmax(l/T) renormalised over the set. */
static void truncated_distribution_matches(void **state)
{
    (void)state;
    enum { V = 300 };
    float l[V];
    uint8_t want[V];
    double prob[V];
    long obs[V];
    for (int t = 0; t < V; t++)
        l[t] = (float)(floor(rnd_normal() * 8) / 4); /* ties across the cut */
    sx_sampling p = params(0.9f, 60, 0.85f, 0.002f);
    p.seed = 31337;
    assert_true(ref_support(l, NULL, V, V, &p, want));
    sx_sampler *s = mk(&p, V, V);
    histogram(s, l, V, 100000, obs);
    ref_softmax_t(l, V, p.temperature, prob);
    double z = 0;
    for (int t = 0; t < V; t++) {
        if (!want[t]) {
            assert_int_equal(obs[t], 0);
            prob[t] = 0;
        }
        z += prob[t];
    }
    for (int t = 0; t < V; t++)
        prob[t] /= z;
    double pv = chi2_p(obs, prob, V, 100000);
    print_message("top-k/top-p/min-p: chi-square p = %.4f\n", pv);
    assert_true(pv > 1e-3);
    sx_sampler_free(s);
}

static void select_matches_sort(void **state)
{
    (void)state;
    enum { N = 3000 };
    static uint32_t keys[N];
    static float w[N];
    static int32_t idx[N];
    for (int rep = 0; rep < 200; rep++) {
        int n = 1 + (int)(rnd() % N);
        for (int i = 0; i < n; i++) {
            keys[i] = rep % 2 ? (uint32_t)rnd() : 0x80000000u + (uint32_t)(rnd() % 50) * 65793u;
            w[i] = (float)rnd01();
        }
        int k = 1 + (int)(rnd() % (uint64_t)n);
        uint32_t th = sx_select_count(keys, n, k, idx);
        int ge = 0, gt = 0;
        for (int i = 0; i < n; i++) {
            ge += keys[i] >= th;
            gt += keys[i] > th;
        }
        assert_true(ge >= k && gt < k);
        double total = 0;
        for (int i = 0; i < n; i++)
            total += w[i];
        double target = total * rnd01();
        th = sx_select_mass(keys, w, n, target, idx);
        double mge = 0, mgt = 0;
        for (int i = 0; i < n; i++) {
            mge += keys[i] >= th ? w[i] : 0;
            mgt += keys[i] > th ? w[i] : 0;
        }
        assert_true(mge >= target - 1e-9 * total && mgt < target + 1e-9 * total);
    }
}

static void repetition_penalty_is_ctrl(void **state)
{
    (void)state;
    enum { V = 8 };
    const float l0[V] = {1.0f, 3.0f, 2.5f, -1.0f, -2.0f, 0.0f, 0.5f, -0.5f};
    float l[V], want[V];
    double ref[V];
    sx_sampling p = params(0, 0, 1, 0);
    p.repetition_penalty = 2.0f;
    p.top_n = V;
    sx_sampler *s = mk(&p, V, V);
    sx_sample out;
    sx_error e;
    /* 1 generated twice (penalised once), 3 negative, 5 zero */
    int hist[] = {1, 3, 1, 5};
    for (int i = 0; i < 4; i++)
        assert_int_equal(sx_sampler_accept(s, hist[i]), SX_OK);
    memcpy(l, l0, sizeof l);
    memcpy(want, l0, sizeof l);
    want[1] = 1.5f;
    want[3] = -2.0f;
    assert_int_equal(sx_sampler_sample(s, l, NULL, &out, &e), SX_OK);
    assert_int_equal(out.token, 2); /* 2.5 now beats 3/2 */
    ref_logsoftmax(want, NULL, V, V, ref);
    assert_int_equal(out.n_top, V);
    for (int i = 0; i < V; i++)
        assert_true(fabs(out.top_logprobs[i] - ref[out.top_ids[i]]) < 1e-5);
    assert_true(fabs(out.logprob - ref[2]) < 1e-5);
    /* penalty < 1 favours repeats */
    sx_sampler_free(s);
    p.repetition_penalty = 0.5f;
    s = mk(&p, V, V);
    sx_sampler_accept(s, 0);
    memcpy(l, l0, sizeof l);
    l[0] = 2.0f;
    assert_int_equal(sx_sampler_sample(s, l, NULL, &out, &e), SX_OK);
    assert_int_equal(out.token, 0); /* 2 / 0.5 = 4 > 3 */
    /* rollback forgets the token */
    sx_sampler_rollback(s, 1);
    memcpy(l, l0, sizeof l);
    l[0] = 2.0f;
    assert_int_equal(sx_sampler_sample(s, l, NULL, &out, &e), SX_OK);
    assert_int_equal(out.token, 1);
    sx_sampler_free(s);
}


/* logit_bias is added to allowed logits only: -100 on the greedy token
 * changes the choice, +100 on a masked token leaves it masked (the grammar
 * outranks the bias), the log-probs are those of the biased logits, and
 * the sampler keeps its own copy of the bias. */
static void logit_bias_applies_before_the_draw(void **state)
{
    (void)state;
    enum { V = 8 };
    const float l0[V] = {1.0f, 3.0f, 2.5f, -1.0f, -2.0f, 0.0f, 0.5f, -0.5f};
    float l[V], want[V];
    double ref[V];
    int32_t ids[2] = {1, 4};
    float vals[2] = {-100.0f, 100.0f};
    sx_sampling p = params(0, 0, 1, 0);
    p.top_n = V;
    p.bias_ids = ids;
    p.bias_vals = vals;
    p.n_bias = 2;
    sx_sampler *s = mk(&p, V, V);
    ids[0] = 7; /* the sampler copied them */
    sx_sample out;
    sx_error e;
    uint32_t *mask = mask_new(V);
    for (int t = 0; t < V; t++)
        if (t != 4)
            mask_set(mask, t);
    memcpy(l, l0, sizeof l);
    assert_int_equal(sx_sampler_sample(s, l, mask, &out, &e), SX_OK);
    assert_int_equal(out.token, 2); /* 1 lost 100; 4 is masked */
    memcpy(want, l0, sizeof l);
    want[1] -= 100.0f;
    ref_logsoftmax(want, mask, V, V, ref);
    assert_true(fabs(out.logprob - ref[2]) < 1e-5);
    /* unmasked, +100 wins */
    memcpy(l, l0, sizeof l);
    assert_int_equal(sx_sampler_sample(s, l, NULL, &out, &e), SX_OK);
    assert_int_equal(out.token, 4);
    /* the only allowed token is still returned, biased or not */
    uint32_t *one = mask_new(V);
    mask_set(one, 1);
    memcpy(l, l0, sizeof l);
    assert_int_equal(sx_sampler_sample(s, l, one, &out, &e), SX_OK);
    assert_int_equal(out.token, 1);
    sx_sampler_free(s);
    free(one);
    free(mask);
    /* ids past the vocabulary and values out of range are refused */
    ids[0] = V;
    assert_int_equal(sx_sampler_new(&p, V, V, &s, &e), SX_EINVAL);
    ids[0] = 1;
    vals[0] = -101.0f;
    assert_int_equal(sx_sampler_new(&p, V, V, &s, &e), SX_EINVAL);
}

/* OpenAI's penalties: frequency per occurrence, presence once per token. */
static void presence_and_frequency_penalties(void **state)
{
    (void)state;
    enum { V = 8 };
    const float l0[V] = {1.0f, 3.0f, 2.5f, -1.0f, -2.0f, 0.0f, 0.5f, -0.5f};
    float l[V], want[V];
    double ref[V];
    sx_sampling p = params(0, 0, 1, 0);
    p.top_n = V;
    p.presence_penalty = 0.25f;
    p.frequency_penalty = 0.5f;
    sx_sampler *s = mk(&p, V, V);
    int hist[] = {1, 3, 1, 5};
    for (int i = 0; i < 4; i++)
        assert_int_equal(sx_sampler_accept(s, hist[i]), SX_OK);
    sx_sample out;
    sx_error e;
    memcpy(l, l0, sizeof l);
    memcpy(want, l0, sizeof l);
    want[1] -= 2 * 0.5f + 0.25f; /* 1.75 */
    want[3] -= 0.5f + 0.25f;
    want[5] -= 0.5f + 0.25f;
    assert_int_equal(sx_sampler_sample(s, l, NULL, &out, &e), SX_OK);
    assert_int_equal(out.token, 2); /* 2.5 now beats 1.75 */
    ref_logsoftmax(want, NULL, V, V, ref);
    for (int i = 0; i < out.n_top; i++)
        assert_true(fabs(out.top_logprobs[i] - ref[out.top_ids[i]]) < 1e-5);
    sx_sampler_free(s);
    p.presence_penalty = 2.5f;
    assert_int_equal(sx_sampler_new(&p, V, V, &s, &e), SX_EINVAL);
}

static int greedy_with_history(sx_sampling *p, const int *hist, int nh, const float *l0, int V,
                               const uint32_t *mask, uint8_t *member)
{
    sx_sampler *s = mk(p, V, V);
    float l[64];
    sx_sample out;
    sx_error e;
    for (int i = 0; i < nh; i++)
        sx_sampler_accept(s, hist[i]);
    memcpy(l, l0, (size_t)V * sizeof *l);
    assert_int_equal(sx_sampler_sample(s, l, mask, &out, &e), SX_OK);
    if (member) {
        memcpy(l, l0, (size_t)V * sizeof *l);
        assert_int_equal(sx_sampler_support(s, l, mask, member, &e), SX_OK);
    }
    sx_sampler_free(s);
    return out.token;
}

static void no_repeat_ngram_bans(void **state)
{
    (void)state;
    enum { V = 10 };
    float l[V];
    uint8_t mem[V];
    for (int t = 0; t < V; t++)
        l[t] = (float)(10 - t); /* 0 best, then 1, 2, ... */
    sx_sampling p = params(0, 0, 1, 0);
    /* bigrams: history 0 1 2 0 -> "0 1" seen, so 1 after 0 is banned; 0 is
     * still fine (no "0 0") */
    p.no_repeat_ngram = 2;
    int h1[] = {0, 1, 2, 0};
    assert_int_equal(greedy_with_history(&p, h1, 4, l, V, NULL, NULL), 0);
    l[0] = 0;
    assert_int_equal(greedy_with_history(&p, h1, 4, l, V, NULL, NULL), 2);
    /* with temperature the banned token is out of the support */
    p.temperature = 1;
    greedy_with_history(&p, h1, 4, l, V, NULL, mem);
    for (int t = 0; t < V; t++)
        assert_int_equal(mem[t], t != 1);
    p.temperature = 0;
    /* n = 1: every generated token is banned */
    p.no_repeat_ngram = 1;
    assert_int_equal(greedy_with_history(&p, h1, 4, l, V, NULL, NULL), 3);
    /* n = 3: "5 6 7" seen, tail "5 6" -> 7 banned */
    p.no_repeat_ngram = 3;
    for (int t = 0; t < V; t++)
        l[t] = t == 7 ? 5.0f : 0.0f;
    int h3[] = {5, 6, 7, 5, 6};
    assert_int_equal(greedy_with_history(&p, h3, 5, l, V, NULL, NULL), 0);
    int h3b[] = {5, 6, 7, 6, 6}; /* tail "6 6": nothing banned */
    assert_int_equal(greedy_with_history(&p, h3b, 5, l, V, NULL, NULL), 7);
    assert_int_equal(greedy_with_history(&p, h3, 2, l, V, NULL, NULL), 7); /* too short */
    /* the grammar outranks the n-gram rule: the only allowed token is banned */
    uint32_t m = 1u << 7;
    assert_int_equal(greedy_with_history(&p, h3, 5, l, V, &m, NULL), 7);
    /* rollback: after forgetting the last token the tail is "6 7"... */
    sx_sampler *s = mk(&p, V, V);
    for (int i = 0; i < 5; i++)
        sx_sampler_accept(s, h3[i]);
    sx_sampler_rollback(s, 1); /* 5 6 7 5: tail "7 5", "7 5 x" never seen */
    float c[V];
    sx_sample out;
    sx_error e;
    memcpy(c, l, sizeof c);
    assert_int_equal(sx_sampler_sample(s, c, NULL, &out, &e), SX_OK);
    assert_int_equal(out.token, 7);
    sx_sampler_accept(s, 6); /* back to 5 6 7 5 6 */
    memcpy(c, l, sizeof c);
    assert_int_equal(sx_sampler_sample(s, c, NULL, &out, &e), SX_OK);
    assert_int_equal(out.token, 0);
    sx_sampler_free(s);
}

static void run_seq(sx_sampler *s, const float *l, int rows, int n, int32_t *toks)
{
    float *c = malloc((size_t)rows * sizeof *c);
    sx_sample out;
    sx_error e;
    for (int i = 0; i < n; i++) {
        memcpy(c, l, (size_t)rows * sizeof *c);
        assert_int_equal(sx_sampler_sample(s, c, NULL, &out, &e), SX_OK);
        toks[i] = out.token;
        sx_sampler_accept(s, out.token);
    }
    free(c);
}

static void seeded_and_reproducible(void **state)
{
    (void)state;
    enum { V = 1000, N = 200 };
    static float l[V];
    int32_t a[N], b[N], c[N], d[N];
    for (int t = 0; t < V; t++)
        l[t] = (float)rnd_normal();
    sx_sampling p = params(1.0f, 0, 0.95f, 0);
    p.seed = 5;
    p.repetition_penalty = 1.1f;
    sx_sampler *s1 = mk(&p, V, V), *s2 = mk(&p, V, V);
    run_seq(s1, l, V, N, a);
    run_seq(s2, l, V, N, b);
    assert_memory_equal(a, b, sizeof a);
    /* rollback replays the same draws */
    sx_sampler_rollback(s1, 50);
    run_seq(s1, l, V, 50, c);
    assert_memory_equal(a + N - 50, c, 50 * sizeof *c);
    /* a different seed gives a different sequence */
    p.seed = 6;
    sx_sampler *s3 = mk(&p, V, V);
    run_seq(s3, l, V, N, d);
    int same = 0;
    for (int i = 0; i < N; i++)
        same += a[i] == d[i];
    assert_true(same < N / 4);
    /* interleaving with another sequence changes nothing */
    sx_sampler_free(s2);
    p.seed = 5;
    s2 = mk(&p, V, V);
    sx_sampler_free(s3);
    p.seed = 99;
    s3 = mk(&p, V, V);
    for (int i = 0; i < N; i++) {
        run_seq(s3, l, V, 1, d);
        run_seq(s2, l, V, 1, b + i);
    }
    assert_memory_equal(a, b, sizeof a);
    sx_sampler_free(s1);
    sx_sampler_free(s2);
    sx_sampler_free(s3);
}

static void logprobs_sum_to_one(void **state)
{
    (void)state;
    sx_sampling p = params(0.7f, 0, 1, 0);
    p.top_n = SX_SAMPLER_MAX_TOPN;
    sx_sample out;
    sx_error e;
    for (int rows = 64; rows <= FULL_ROWS; rows += FULL_ROWS - 64) {
        int valid = rows == 64 ? 60 : FULL_VALID;
        sx_sampler *s = mk(&p, rows, valid);
        float *l = malloc((size_t)rows * sizeof *l), *c = malloc((size_t)rows * sizeof *c);
        double *ref = malloc((size_t)rows * sizeof *ref);
        uint32_t *m = mask_new(rows);
        for (int rep = 0; rep < 10; rep++) {
            for (int t = 0; t < rows; t++)
                l[t] = (float)rnd_normal() * 4;
            memset(m, 0, (size_t)(rows + 31) / 32 * sizeof *m);
            int allow = 1 + rep * 2; /* 1..19 allowed tokens: all of them in the top-n */
            for (int i = 0; i < allow; i++)
                mask_set(m, (int)(rnd() % (uint64_t)valid));
            memcpy(c, l, (size_t)rows * sizeof *l);
            assert_int_equal(sx_sampler_sample(s, c, m, &out, &e), SX_OK);
            ref_logsoftmax(l, m, rows, valid, ref);
            double sum = 0;
            int n_allowed = 0;
            for (int t = 0; t < rows; t++)
                n_allowed += ref[t] != -INFINITY;
            assert_int_equal(out.n_top, n_allowed);
            for (int i = 0; i < out.n_top; i++) {
                assert_true(mask_get(m, out.top_ids[i]));
                assert_true(fabs(out.top_logprobs[i] - ref[out.top_ids[i]]) < 1e-5);
                if (i)
                    assert_true(out.top_logprobs[i] <= out.top_logprobs[i - 1]);
                sum += exp(out.top_logprobs[i]);
            }
            assert_true(fabs(sum - 1) < 1e-5);
            assert_true(fabs(out.logprob - ref[out.token]) < 1e-5);
            /* unmasked: top-n are the n best of the whole distribution */
            memcpy(c, l, (size_t)rows * sizeof *l);
            assert_int_equal(sx_sampler_sample(s, c, NULL, &out, &e), SX_OK);
            ref_logsoftmax(l, NULL, rows, valid, ref);
            assert_int_equal(out.n_top, SX_SAMPLER_MAX_TOPN);
            int beaten = 0;
            for (int t = 0; t < valid; t++)
                beaten += ref[t] > out.top_logprobs[SX_SAMPLER_MAX_TOPN - 1] + 1e-6;
            assert_true(beaten < SX_SAMPLER_MAX_TOPN);
            for (int i = 0; i < out.n_top; i++)
                assert_true(fabs(out.top_logprobs[i] - ref[out.top_ids[i]]) < 1e-5);
        }
        free(l);
        free(c);
        free(ref);
        free(m);
        sx_sampler_free(s);
    }
}

static void all_masked_is_an_error(void **state)
{
    (void)state;
    enum { R = 70, V = 64 };
    float l[R];
    uint32_t m[3] = {0, 0, 0};
    sx_sample out;
    sx_error e;
    for (int greedy = 0; greedy < 2; greedy++) {
        sx_sampling p = params(greedy ? 0.0f : 1.0f, 0, 1, 0);
        sx_sampler *s = mk(&p, R, V);
        for (int t = 0; t < R; t++)
            l[t] = 1;
        assert_int_equal(sx_sampler_sample(s, l, m, &out, &e), SX_EINTERNAL);
        assert_int_equal(e.code, SX_EINTERNAL);
        assert_int_equal(out.token, -1);
        /* only rows past the tokenizer allowed: still nothing */
        m[2] = 0x3F;
        for (int t = 0; t < R; t++)
            l[t] = 1;
        assert_int_equal(sx_sampler_sample(s, l, m, &out, &e), SX_EINTERNAL);
        /* NaN and -inf logits are not samplable, +inf is the best */
        for (int t = 0; t < R; t++)
            l[t] = t % 2 ? NAN : -INFINITY;
        assert_int_equal(sx_sampler_sample(s, l, NULL, &out, &e), SX_EINTERNAL);
        for (int t = 0; t < R; t++)
            l[t] = t % 2 ? NAN : 0;
        l[10] = INFINITY;
        assert_int_equal(sx_sampler_sample(s, l, NULL, &out, &e), SX_OK);
        assert_int_equal(out.token, 10);
        assert_true(isfinite(out.logprob) && out.logprob <= 0);
        sx_sampler_free(s);
    }
}

/* Extreme but legal parameters stay well defined. */
static void extreme_parameters(void **state)
{
    (void)state;
    enum { V = 500 };
    float l[V], c[V];
    sx_sample out;
    sx_error e;
    for (int t = 0; t < V; t++)
        l[t] = (float)floor(rnd_normal() * 3);
    float m = -INFINITY;
    for (int t = 0; t < V; t++)
        m = l[t] > m ? l[t] : m;
    int first = 0;
    while (l[first] != m)
        first++;
    /* tiny temperatures draw among the best tokens only; top-k 1 is greedy */
    static const float tiny[] = {1e-3f, 1e-30f, 1e-40f};
    for (int i = 0; i < 4; i++) {
        sx_sampling p = params(i < 3 ? tiny[i] : 1.0f, i < 3 ? 0 : 1, 1, 0);
        p.seed = (uint64_t)i;
        sx_sampler *s = mk(&p, V, V);
        for (int k = 0; k < 200; k++) {
            memcpy(c, l, sizeof l);
            assert_int_equal(sx_sampler_sample(s, c, NULL, &out, &e), SX_OK);
            assert_true(l[out.token] == m);
            if (i >= 2)
                assert_int_equal(out.token, first);
            sx_sampler_accept(s, out.token);
        }
        sx_sampler_free(s);
    }
    /* a huge temperature is close to uniform over the allowed tokens */
    sx_sampling p = params(1e6f, 0, 0.5f, 0);
    sx_sampler *s = mk(&p, V, V);
    uint8_t mem[V];
    memcpy(c, l, sizeof l);
    assert_int_equal(sx_sampler_support(s, c, NULL, mem, &e), SX_OK);
    int n = 0;
    for (int t = 0; t < V; t++)
        n += mem[t];
    assert_true(n >= V / 2 - 1 && n <= V / 2 + 1);
    sx_sampler_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rng_is_the_documented_hash),
        cmocka_unit_test(expneg_matches_exp),
        cmocka_unit_test(check_rejects_bad_params),
        cmocka_unit_test(greedy_is_argmax_lowest_id),
        cmocka_unit_test(masked_tokens_never_sampled),
        cmocka_unit_test(chi_square_helper_discriminates),
        cmocka_unit_test(temperature_matches_softmax),
        cmocka_unit_test(truncation_sets_are_exact),
        cmocka_unit_test(truncated_distribution_matches),
        cmocka_unit_test(select_matches_sort),
        cmocka_unit_test(repetition_penalty_is_ctrl),
        cmocka_unit_test(logit_bias_applies_before_the_draw),
        cmocka_unit_test(presence_and_frequency_penalties),
        cmocka_unit_test(no_repeat_ngram_bans),
        cmocka_unit_test(seeded_and_reproducible),
        cmocka_unit_test(logprobs_sum_to_one),
        cmocka_unit_test(all_masked_is_an_error),
        cmocka_unit_test(extreme_parameters),
    };
    /* STRUX_TEST_FILTER=name runs one test (for timing and debugging) */
    if (getenv("STRUX_TEST_FILTER"))
        cmocka_set_test_filter(getenv("STRUX_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
