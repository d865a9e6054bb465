/* Integers in any spelling (issue 28): under SX_ESC_ANY an integer schema
 * accepts every number whose value is an integer (1e2, 1.5e1, 100e-2,
 * 0.0001e4), and nothing else.  Exhaustive over short texts: every text of
 * up to LEN characters from a small alphabet, against several integer
 * schemas (bounds, one-sided bounds, multipleOf), is accepted by the
 * matcher exactly when the independent validator accepts it; and every
 * prefix the matcher takes has a shortest completion the validator
 * accepts (so no dead prefix is let through).  Generation's default
 * (SX_ESC_CANONICAL) keeps the plain spellings only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/validator/validator.h"
#include "grammar/vocab/vocab.h"
#include "tests/unit/helpers/test_vocab.h"

static sx_vocab *V;

static int setup(void **state)
{
    (void)state;
    V = tv_small_vocab();
    return V ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sx_vocab_free(V);
    return 0;
}

static const char *const SCHEMAS[] = {
    "{\"type\": \"integer\"}",
    "{\"type\": \"integer\", \"minimum\": -20, \"maximum\": 150}",
    "{\"type\": \"integer\", \"multipleOf\": 4}",
    "{\"type\": \"integer\", \"exclusiveMinimum\": 10, \"multipleOf\": 5}",
    "{\"type\": \"number\", \"multipleOf\": 3, \"maximum\": 1000}",
    "{\"type\": \"integer\", \"minimum\": 100}",
    "{\"type\": \"integer\", \"maximum\": -5, \"multipleOf\": 25}",
    "{\"type\": \"integer\", \"minimum\": 1, \"exclusiveMaximum\": 2}",
};

#define LEN 6
static const char ALPHA[] = "015.e-";

typedef struct {
    sx_grammar *g;
    sx_validator *val;
    const char *schema;
    long full, prefixes;
} run;

/* Matcher takes the bytes (as a prefix); *end: and may end there. */
static int takes(const sx_grammar *g, const char *t, size_t n, int *end, char *done, size_t cap,
                 size_t *dn)
{
    sx_matcher *m;
    assert_int_equal(sx_matcher_new(g, &m, NULL), 0);
    int ok = sx_matcher_accept_bytes(m, t, n, NULL) == 0;
    *end = ok && sx_matcher_can_end(m);
    *dn = (size_t)-1;
    if (ok && done) {
        memcpy(done, t, n);
        size_t cn = sx_matcher_shortest_completion(m, (uint8_t *)done + n, cap - n);
        if (cn != (size_t)-1)
            *dn = n + cn;
    }
    sx_matcher_free(m);
    return ok;
}

static int valid(const run *r, const char *t, size_t n)
{
    int ok = 0;
    sx_error err;
    if (sx_val_validate_text(r->val, t, n, &ok, &err))
        return 0; /* not JSON */
    return ok;
}

/* Valid, and a finite double: values past the doubles are narrowed, as
 * for reals (docs/ORACLE.md). */
static int wanted(const run *r, const char *t, size_t n)
{
    char z[LEN + 1];
    memcpy(z, t, n);
    z[n] = '\0';
    return valid(r, t, n) && isfinite(strtod(z, NULL));
}

/* A refused prefix's extensions are refused by the matcher; the validator
 * must refuse them as well (else the prefix was a valid document's): the
 * walk checks them all once, without the matcher. */
static void refused_below(const run *r, char *t, size_t n, size_t from)
{
    if (n > from && wanted(r, t, n))
        fail_msg("%s: '%.*s' is valid, its prefix '%.*s' was refused", r->schema, (int)n, t,
                 (int)from, t);
    if (n == LEN)
        return;
    for (const char *a = ALPHA; *a; a++) {
        t[n] = *a;
        refused_below(r, t, n + 1, from);
    }
}

static void walk(run *r, char *t, size_t n)
{
    if (n) {
        int end;
        char done[512];
        size_t dn;
        int pre = takes(r->g, t, n, &end, done, sizeof done, &dn);
        int want = wanted(r, t, n);
        if (end != want)
            fail_msg("%s: '%.*s' %s by the matcher, %s by the validator", r->schema, (int)n, t,
                     end ? "accepted" : "refused", want ? "valid" : "invalid");
        r->full++;
        if (pre) {
            if (dn == (size_t)-1)
                fail_msg("%s: no completion after '%.*s'", r->schema, (int)n, t);
            if (!valid(r, done, dn))
                fail_msg("%s: completion '%.*s' is invalid", r->schema, (int)dn, done);
            r->prefixes++;
        }
        if (!pre) {
            refused_below(r, t, n, n); /* the validator must refuse them too */
            return;
        }
    }
    if (n == LEN)
        return;
    for (const char *a = ALPHA; *a; a++) {
        t[n] = *a;
        walk(r, t, n + 1);
    }
}

static void any_spelling_exact(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof SCHEMAS / sizeof *SCHEMAS; i++) {
        run r = {.schema = SCHEMAS[i]};
        sx_error err;
        sx_gr_opts o;
        sx_gr_opts_default(&o);
        o.escapes = SX_ESC_ANY;
        json_error_t je;
        json_t *s = json_loads(SCHEMAS[i], 0, &je);
        assert_non_null(s);
        assert_int_equal(sx_gr_compile_json(V, s, &o, &r.g, &err), 0);
        assert_int_equal(sx_val_compile(s, NULL, &r.val, &err), 0);
        char t[LEN + 1];
        walk(&r, t, 0);
        print_message("%s: %ld texts, %ld live prefixes\n", SCHEMAS[i], r.full, r.prefixes);
        sx_val_free(r.val);
        sx_gr_free(r.g);
        json_decref(s);
    }
}

/* Longer spellings the short walk cannot reach: long fractions of zeros,
 * long exponents, values past 64 bits, the edge of the doubles. */
static void any_spelling_long(void **state)
{
    (void)state;
    static const struct {
        const char *schema, *text;
        int ok;
    } T[] = {
        {"{\"type\": \"integer\"}", "1.000000000000000000000000000000", 1},
        {"{\"type\": \"integer\"}", "0.000000000000000000000000000001e30", 1},
        {"{\"type\": \"integer\"}", "0.000000000000000000000000000001e29", 0},
        {"{\"type\": \"integer\"}", "123456789012345678e-17", 0},
        {"{\"type\": \"integer\"}", "123456789012345.670e2", 1},
        /* narrowed (docs/ORACLE.md): 16 integer digits make a long integer
         * of any length, read by its remainder, which takes no exponent */
        {"{\"type\": \"integer\"}", "1234567890123456e1", 0},
        {"{\"type\": \"integer\"}", "1e308", 1},
        {"{\"type\": \"integer\"}", "1.7976931348623157e308", 1},
        {"{\"type\": \"integer\"}", "-2.50e2", 1},
        {"{\"type\": \"integer\"}", "10E+1", 1},
        {"{\"type\": \"integer\"}", "1e000000002", 1},
        {"{\"type\": \"integer\"}", "5e-000000000", 1},
        {"{\"type\": \"integer\", \"multipleOf\": 7}", "7e300", 1},
        {"{\"type\": \"integer\", \"multipleOf\": 7}", "1e300", 0},
        {"{\"type\": \"integer\", \"multipleOf\": 1024}", "1e10", 1},
        {"{\"type\": \"integer\", \"multipleOf\": 1024}", "1e9", 0},
        {"{\"type\": \"integer\", \"minimum\": 0}", "1e300", 1},
        {"{\"type\": \"integer\", \"minimum\": 0}", "-1e300", 0},
        {"{\"type\": \"integer\", \"maximum\": 999999999999}", "9.99999999999e11", 1},
        {"{\"type\": \"integer\", \"maximum\": 999999999999}", "1e12", 0},
        {"{\"type\": \"integer\", \"minimum\": -1e14, \"maximum\": 1e14}", "-1.00000000000000e14", 1},
        {"{\"type\": \"integer\", \"minimum\": -1e14, \"maximum\": 1e14}", "-1.00000000000001e14", 0},
    };
    for (size_t i = 0; i < sizeof T / sizeof *T; i++) {
        sx_grammar *g;
        sx_error err;
        sx_gr_opts o;
        sx_gr_opts_default(&o);
        o.escapes = SX_ESC_ANY;
        assert_int_equal(sx_gr_compile_schema(V, T[i].schema, strlen(T[i].schema), &o, &g, &err), 0);
        int end;
        size_t dn;
        takes(g, T[i].text, strlen(T[i].text), &end, NULL, 0, &dn);
        if (end != T[i].ok)
            fail_msg("%s: '%s' %s", T[i].schema, T[i].text, end ? "accepted" : "refused");
        sx_gr_free(g);
    }
}

/* Generation's layout keeps the plain spellings: no exponent, no
 * fraction digit but zeros. */
static void canonical_keeps_plain(void **state)
{
    (void)state;
    static const char *const refused[] = {"1e2", "1.5e1", "10E+1", "0e5", "100e-2"};
    static const char *const taken[] = {"100", "1.0", "-7", "0"};
    sx_grammar *g;
    sx_error err;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    const char *s = "{\"type\": \"integer\"}";
    assert_int_equal(sx_gr_compile_schema(V, s, strlen(s), &o, &g, &err), 0);
    int end;
    size_t dn;
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        takes(g, refused[i], strlen(refused[i]), &end, NULL, 0, &dn);
        if (end)
            fail_msg("canonical: accepted %s", refused[i]);
    }
    for (size_t i = 0; i < sizeof taken / sizeof *taken; i++) {
        takes(g, taken[i], strlen(taken[i]), &end, NULL, 0, &dn);
        if (!end)
            fail_msg("canonical: refused %s", taken[i]);
    }
    sx_gr_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(any_spelling_exact),
        cmocka_unit_test(any_spelling_long),
        cmocka_unit_test(canonical_keeps_plain),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
