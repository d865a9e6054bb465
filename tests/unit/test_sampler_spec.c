/* The accept/resample rule of speculative sampling (sx_spec_accept): over
 * 2e5 draws on synthetic target/draft distributions, the tokens it returns
 * follow the target (chi-square), the acceptance rate is sum min(p, q),
 * and the point-mass form (deterministic drafts) keeps x with probability
 * p(x).  The same counts taken from the draft alone fail the chi-square
 * test by far: the test can tell the two apart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "engine/sampler/sampler.h"

#define N 12
#define DRAWS 200000
/* chi-square, 11 degrees of freedom, upper 0.1% point */
#define CHI2_999 31.26

static uint64_t rs = 0x9e3779b97f4a7c15u;

static double uni(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0;
}

static void random_dist(float *d, double sharpness)
{
    double sum = 0, w[N];
    for (int i = 0; i < N; i++)
        sum += w[i] = exp(sharpness * uni());
    for (int i = 0; i < N; i++)
        d[i] = (float)(w[i] / sum);
    /* exact sum 1 in float, as a softmax row would be close to */
}

static int32_t draw(const float *d, double u)
{
    double c = 0;
    for (int i = 0; i < N; i++)
        if ((c += d[i]) > u)
            return i;
    return N - 1;
}

static double chi2(const long *count, const float *p, long total)
{
    double x = 0;
    for (int i = 0; i < N; i++) {
        double e = (double)p[i] * (double)total;
        if (e > 0)
            x += ((double)count[i] - e) * ((double)count[i] - e) / e;
        else if (count[i])
            return INFINITY;
    }
    return x;
}

static void rule_keeps_the_target(void **state)
{
    (void)state;
    for (int round = 0; round < 3; round++) {
        float p[N], q[N];
        random_dist(p, 3.0 + round);
        random_dist(q, 2.0);
        if (round == 2)
            p[3] += p[5], p[5] = 0; /* a token the target never takes */
        long out[N] = {0}, drafted[N] = {0}, acc = 0;
        double overlap = 0;
        for (int i = 0; i < N; i++)
            overlap += fmin(p[i], q[i]);
        for (long d = 0; d < DRAWS; d++) {
            int32_t x = draw(q, uni());
            int a;
            int32_t t = sx_spec_accept(p, q, N, x, uni(), uni(), &a);
            assert_true(t >= 0 && t < N);
            out[t]++;
            drafted[x]++;
            acc += a;
        }
        double c = chi2(out, p, DRAWS), cq = chi2(drafted, p, DRAWS);
        print_message("round %d: chi2 %.1f (draft alone %.1f), accepted %.4f vs %.4f\n", round, c,
                      cq, (double)acc / DRAWS, overlap);
        assert_true(c < CHI2_999);
        assert_true(cq > 10 * CHI2_999);
        double sd = sqrt(overlap * (1 - overlap) / DRAWS);
        assert_true(fabs((double)acc / DRAWS - overlap) < 5 * sd);
    }
}

static void point_mass_drafts(void **state)
{
    (void)state;
    float p[N];
    random_dist(p, 4.0);
    for (int32_t x = 0; x < N; x += 5) {
        long out[N] = {0}, acc = 0;
        for (long d = 0; d < DRAWS; d++) {
            int a;
            out[sx_spec_accept(p, NULL, N, x, uni(), uni(), &a)]++;
            acc += a;
        }
        double c = chi2(out, p, DRAWS), sd = sqrt(p[x] * (1 - p[x]) / DRAWS);
        print_message("x=%d: chi2 %.1f, accepted %.4f vs p(x) %.4f\n", x, c, (double)acc / DRAWS,
                      (double)p[x]);
        assert_true(c < CHI2_999);
        assert_true(fabs((double)acc / DRAWS - p[x]) < 5 * sd);
    }
}

static void edge_cases(void **state)
{
    (void)state;
    float p[N], q[N];
    random_dist(p, 3.0);
    memcpy(q, p, sizeof q);
    int a;
    /* p == q: every draft is kept */
    for (int i = 0; i < 1000; i++) {
        int32_t x = draw(q, uni());
        assert_int_equal(sx_spec_accept(p, q, N, x, uni(), uni(), &a), x);
        assert_int_equal(a, 1);
    }
    /* p(x) = 0: never kept */
    p[2] += p[7];
    p[7] = 0;
    for (int i = 0; i < 1000; i++) {
        assert_int_not_equal(sx_spec_accept(p, q, N, 7, uni(), uni(), &a), 7);
        assert_int_equal(a, 0);
        assert_int_not_equal(sx_spec_accept(p, NULL, N, 7, uni(), uni(), &a), 7);
    }
    /* a certain target: its token whatever the draft */
    memset(p, 0, sizeof p);
    p[4] = 1;
    for (int32_t x = 0; x < N; x++)
        assert_int_equal(sx_spec_accept(p, q, N, x, 0.999, uni(), NULL), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rule_keeps_the_target),
        cmocka_unit_test(point_mass_drafts),
        cmocka_unit_test(edge_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
