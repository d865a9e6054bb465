/* The classes of automaton states that plain masks cannot tell apart
 * (gr_strx_equiv.c) against a plain Moore refinement written here the
 * slow way: every round recomputes every state's signature (own class,
 * the classes of its successors on each byte class) and stops at the
 * depth or when a round splits nothing.  Random tables of many shapes:
 * dense and sparse dead transitions, counters (chains of states that
 * part one per round, the case the splitting by pieces is for), equal
 * columns, depths below, at and above SX_VOCAB_SHORT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/match/match.h"
#include "grammar/vocab/vocab.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* Moore's classes after `rounds` rounds (or when stable: *stable = 1),
 * as the first state of each class; *k = the number of classes. */
static void moore(const int32_t *next, int32_t S, int32_t C, int32_t rounds, int32_t *rep,
                  int32_t *k, int *stable)
{
    int32_t *cls = calloc((size_t)S, sizeof *cls), *nc = malloc((size_t)S * sizeof *nc);
    int32_t *sig = malloc((size_t)S * (size_t)(C + 1) * sizeof *sig);
    assert_non_null(cls);
    assert_non_null(nc);
    assert_non_null(sig);
    int32_t kk = 1;
    *stable = 0;
    for (int32_t r = 0; r < rounds; r++) {
        int32_t nk = 0;
        for (int32_t s = 0; s < S; s++) {
            int32_t *row = sig + (size_t)s * (size_t)(C + 1);
            row[0] = cls[s];
            for (int32_t c = 0; c < C; c++) {
                int32_t t = next[(size_t)s * (size_t)C + (size_t)c];
                row[c + 1] = t < 0 ? -1 : cls[t];
            }
            int32_t o = 0;
            while (o < s && memcmp(sig + (size_t)o * (size_t)(C + 1), row,
                                   (size_t)(C + 1) * sizeof *row))
                o++;
            nc[s] = o < s ? nc[o] : nk++;
        }
        memcpy(cls, nc, (size_t)S * sizeof *cls);
        if (nk == kk) {
            *stable = 1;
            break;
        }
        kk = nk;
    }
    for (int32_t s = 0; s < S; s++) {
        int32_t o = 0;
        while (cls[o] != cls[s])
            o++;
        rep[s] = o;
    }
    *k = kk;
    free(cls);
    free(nc);
    free(sig);
}

/* One random automaton of the given shape. */
static int32_t *make_table(int shape, int32_t S, int32_t C)
{
    int32_t *next = malloc((size_t)S * (size_t)C * sizeof *next);
    assert_non_null(next);
    for (int32_t s = 0; s < S; s++)
        for (int32_t c = 0; c < C; c++) {
            int32_t *t = &next[(size_t)s * (size_t)C + (size_t)c];
            switch (shape) {
            case 0: /* random, a few dead transitions */
                *t = rnd(8) == 0 ? -1 : (int32_t)rnd((uint32_t)S);
                break;
            case 1: /* mostly dead */
                *t = rnd(3) ? -1 : (int32_t)rnd((uint32_t)S);
                break;
            case 2: /* a counter: class 0 advances, class 1 stays, the last
                     * state dies on class 0; other classes copy those */
                if (c % 2 == 0)
                    *t = s + 1 < S ? s + 1 : -1;
                else
                    *t = s;
                break;
            default: /* a counter with a few random side exits */
                *t = c == 0 ? (s + 1 < S ? s + 1 : -1)
                            : rnd(6) == 0 ? (int32_t)rnd((uint32_t)S) : s;
                break;
            }
        }
    return next;
}

static void one(int shape, int32_t S, int32_t C, int32_t depth)
{
    int32_t *next = make_table(shape, S, C);
    uint8_t bc[256] = {0};
    sx_vocab v;
    memset(&v, 0, sizeof v);
    v.max_plain_bytes = depth;
    sx_grammar g;
    memset(&g, 0, sizeof g);
    g.vocab = &v;
    gr_strx x;
    memset(&x, 0, sizeof x);
    x.n_states = S;
    x.n_classes = C;
    x.next = next;
    x.byte_class = bc;
    const gr_equiv *e = gr_strx_equiv(&g, &x);

    int32_t *full = malloc((size_t)S * sizeof *full), *shrt = malloc((size_t)S * sizeof *shrt);
    assert_non_null(full);
    assert_non_null(shrt);
    int32_t k_full, k_short = -1;
    int stable, stable_short = 1;
    moore(next, S, C, depth, full, &k_full, &stable);
    if (depth > SX_VOCAB_SHORT)
        moore(next, S, C, SX_VOCAB_SHORT, shrt, &k_short, &stable_short);
    /* what gr_strx_equiv promises: rep when fewer classes than states,
     * rep_short when the short depth is coarser still */
    int want_rep = k_full < S;
    int want_short = depth > SX_VOCAB_SHORT && !stable_short && k_short < S && k_short != k_full;
    if (!want_rep && !want_short) {
        assert_null(e);
    } else {
        assert_non_null(e);
        if (want_rep) {
            assert_non_null(e->rep);
            for (int32_t s = 0; s < S; s++)
                assert_int_equal(e->rep[s], full[s]);
        } else {
            assert_null(e->rep);
        }
        if (want_short) {
            assert_non_null(e->rep_short);
            for (int32_t s = 0; s < S; s++)
                assert_int_equal(e->rep_short[s], shrt[s]);
        } else {
            assert_null(e->rep_short);
        }
    }
    gr_once_clear(&x.plain_rep, gr_equiv_drop);
    free(full);
    free(shrt);
    free(next);
}

static void classes_equal_moore(void **state)
{
    (void)state;
    static const int32_t depths[] = {1, 2, 5, 16, 17, 40, 200};
    int n = 0;
    for (int shape = 0; shape < 4; shape++)
        for (int32_t S = 1; S <= 160; S = S < 8 ? S + 1 : S * 2)
            for (int32_t C = 1; C <= 9; C += 4)
                for (size_t d = 0; d < sizeof depths / sizeof *depths; d++)
                    for (int rep = 0; rep < 2; rep++, n++)
                        one(shape, S, C, depths[d]);
    assert_true(n > 1000);
}

/* A counter far longer than the depth: the classes of its far states
 * merge into one, those within reach of the end stay apart. */
static void counter_far_states_share(void **state)
{
    (void)state;
    int32_t S = 600, C = 2, depth = 40;
    int32_t *next = make_table(2, S, C);
    uint8_t bc[256] = {0};
    sx_vocab v;
    memset(&v, 0, sizeof v);
    v.max_plain_bytes = depth;
    sx_grammar g;
    memset(&g, 0, sizeof g);
    g.vocab = &v;
    gr_strx x;
    memset(&x, 0, sizeof x);
    x.n_states = S;
    x.n_classes = C;
    x.next = next;
    x.byte_class = bc;
    const gr_equiv *e = gr_strx_equiv(&g, &x);
    assert_non_null(e);
    assert_non_null(e->rep);
    /* state s dies after S - s bytes of class 0: s and 0 agree on all
     * strings of at most depth bytes when S - s > depth */
    for (int32_t s = 0; s < S; s++)
        assert_int_equal(e->rep[s], S - s > depth ? 0 : s);
    gr_once_clear(&x.plain_rep, gr_equiv_drop);
    free(next);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classes_equal_moore),
        cmocka_unit_test(counter_far_states_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
