/* Bounded work (issue 28): recursive schemas whose shortest values used to
 * be found by unfolding the recursion (exponential: minutes of CPU for a
 * one-line schema) compile, mask, take their documents and complete from
 * every prefix in milliseconds; a deadline or a cancel flag stops a compile
 * with SX_ELIMIT; a schema past the compile's work budget is refused with
 * a pointer, never compiled for minutes.
 *
 * Wall bounds are generous (2 s per schema, against a few milliseconds
 * measured) because CI machines are noisy; before the fix each case ran
 * for more than 20 s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#define WALL_MS 2000.0

/* The two schemas, and variants of their shape: more branches,
 * anyOf, allOf wrappers, mutual recursion, deeper nesting, required keys. */
#define BR_F "{\"properties\":{\"f\":{\"type\":\"string\"}},\"additionalProperties\":false}"
#define BR_ARR(k, min, ref)                                                                   \
    "{\"properties\":{\"" k "\":{\"type\":\"array\",\"minItems\":" #min                       \
    ",\"items\":{\"$ref\":\"" ref "\"}}},\"additionalProperties\":false}"
#define E "#/$defs/e"

typedef struct bcase {
    const char *name, *schema, *instance;
} bcase;

static const bcase CASES[] = {
    {"issue: smallest (compile hung)",
     "{\"$defs\":{\"e\":{\"oneOf\":[" BR_ARR("a", 2, E) "," BR_F "]}},\"$ref\":\"" E "\"}",
     "{\"a\":[{\"f\":\"x\"},{\"a\":[{\"f\":\"y\"},{\"f\":\"z\"}]}]}"},
    {"issue: and/or/not/field (check hung)",
     "{\"$defs\":{\"e\":{\"oneOf\":[" BR_ARR("and", 2, E) "," BR_ARR("or", 2, E)
     ",{\"properties\":{\"not\":{\"$ref\":\"" E "\"}},\"additionalProperties\":false}," 
     "{\"properties\":{\"field\":{\"type\":\"string\"}},\"additionalProperties\":false}]}},"
     "\"$ref\":\"" E "\"}",
     "{\"and\": [{\"field\": \"a\"}, {\"not\": {\"field\": \"b\"}}]}"},
    {"anyOf instead of oneOf",
     "{\"$defs\":{\"e\":{\"anyOf\":[" BR_ARR("a", 2, E) "," BR_F "]}},\"$ref\":\"" E "\"}",
     "{\"a\":[{\"f\":\"x\"},{\"a\":[{},{}]}]}"},
    {"more branches, minItems 3",
     "{\"$defs\":{\"e\":{\"oneOf\":[" BR_ARR("k0", 3, E) "," BR_ARR("k1", 3, E) "," BR_ARR("k2", 3, E)
     "," BR_ARR("k3", 3, E) "," BR_ARR("k4", 3, E) "," BR_ARR("k5", 3, E) "," BR_F "]}},"
     "\"$ref\":\"" E "\"}",
     "{\"k3\":[{\"f\":\"x\"},{\"f\":\"y\"},{\"k0\":[{\"f\":\"1\"},{\"f\":\"2\"},{\"f\":\"3\"}]}]}"},
    {"allOf wrappers",
     "{\"$defs\":{\"e\":{\"allOf\":[{\"$ref\":\"#/$defs/i\"}]},"
     "\"i\":{\"allOf\":[{\"oneOf\":[" BR_ARR("a", 2, E) "," BR_F "]}]}},"
     "\"allOf\":[{\"$ref\":\"" E "\"}]}",
     "{\"a\":[{\"f\":\"x\"},{\"f\":\"y\"}]}"},
    {"mutual recursion a -> b -> a",
     "{\"$defs\":{\"a\":{\"oneOf\":[" BR_ARR("b", 2, "#/$defs/b")
     ",{\"properties\":{\"x\":{\"type\":\"string\"}},\"additionalProperties\":false}]},"
     "\"b\":{\"oneOf\":[" BR_ARR("a", 2, "#/$defs/a")
     ",{\"properties\":{\"y\":{\"type\":\"integer\"}},\"additionalProperties\":false}]}},"
     "\"$ref\":\"#/$defs/a\"}",
     "{\"b\":[{\"y\":1},{\"a\":[{\"x\":\"q\"},{\"x\":\"r\"}]}]}"},
    {"deeper nesting through objects",
     "{\"$defs\":{\"e\":{\"oneOf\":[{\"properties\":{\"a\":{\"type\":\"array\",\"minItems\":2,"
     "\"items\":{\"$ref\":\"" E "\"}},\"n\":{\"properties\":{\"m\":{\"properties\":{\"o\":"
     "{\"$ref\":\"" E "\"}},\"additionalProperties\":false}},\"additionalProperties\":false}},"
     "\"additionalProperties\":false}," BR_F "]}},\"$ref\":\"" E "\"}",
     "{\"n\":{\"m\":{\"o\":{\"a\":[{\"f\":\"x\"},{\"f\":\"y\"}]}}}}"},
    {"required keys",
     "{\"$defs\":{\"e\":{\"oneOf\":[{\"properties\":{\"and\":{\"type\":\"array\",\"minItems\":2,"
     "\"items\":{\"$ref\":\"" E "\"}}},\"required\":[\"and\"],\"additionalProperties\":false},"
     "{\"properties\":{\"not\":{\"$ref\":\"" E "\"}},\"required\":[\"not\"],"
     "\"additionalProperties\":false},{\"properties\":{\"field\":{\"type\":\"string\"}},"
     "\"required\":[\"field\"],\"additionalProperties\":false}]}},\"$ref\":\"" E "\"}",
     "{\"and\":[{\"field\":\"a\"},{\"not\":{\"field\":\"b\"}}]}"},
    /* found by the schema fuzzer (seed 12, schemas 505 and 1744): prefixes
     * the masks allowed with no completion found.  A new URI item: the
     * search for a value unlike the earlier items followed the scheme's
     * endless letters 4096 bytes deep and ran out of budget. */
    {"uniqueItems of URIs (completion search looped)",
     "{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"type\":\"string\",\"format\":\"uri\"}}",
     "[\"Peopleamples.BackgroundColor-x:y\", \"Peopleamples.BackgroundColor-x:z\"]"},
    /* minProperties met with an optional key that requires another: the
     * completion closed the object without the required one */
    {"dependentRequired key taken for minProperties",
     "{\"type\":\"object\",\"minProperties\":2,\"dependentRequired\":{\"b\":[\"n\"]}}",
     "{\"time\":0,\"a\":1}"},
    /* seed 20, schema 198: an array item of a uniqueItems array, equal to
     * an earlier one so far, was made new with items that had to differ
     * from each other -- impossible for [null, null, ...] */
    {"uniqueItems of arrays of null",
     "{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"type\":\"array\",\"items\":{\"type\":\"null\"}}}",
     "[[null],[null,null],[null,null,null,null]]"},
};

static int valid_text(const char *schema, const char *text, size_t n)
{
    int valid = 0;
    sx_error err = {0};
    int rc = sx_val_check_text(schema, strlen(schema), text, n, NULL, &valid, &err);
    if (rc)
        fail_msg("validator: %s", err.msg);
    return valid;
}

/* Compile, first mask, the instance fed byte by byte with a mask before
 * each byte, and a shortest completion from every prefix (each judged by
 * the validator too), all within WALL_MS. */
static void run_case(const bcase *c)
{
    double t0 = now_ms();
    sx_grammar *g = NULL;
    sx_matcher *m = NULL;
    sx_error err = {0};
    if (sx_gr_compile_schema(V, c->schema, strlen(c->schema), NULL, &g, &err))
        fail_msg("%s: compile: %s", c->name, err.msg);
    double t_compile = now_ms() - t0;
    uint32_t *mask = calloc((size_t)V->mask_words, sizeof *mask);
    assert_non_null(mask);
    assert_int_equal(sx_matcher_new(g, &m, NULL), 0);
    assert_int_equal(sx_matcher_fill_mask(m, mask), 0);
    size_t n = strlen(c->instance), cap = 4096;
    uint8_t *comp = malloc(cap);
    char *doc = malloc(n + cap + 1);
    assert_non_null(comp);
    assert_non_null(doc);
    for (size_t i = 0; i <= n; i++) {
        size_t k = sx_matcher_shortest_completion(m, comp, cap);
        if (k == (size_t)-1)
            fail_msg("%s: no completion after %zu bytes", c->name, i);
        memcpy(doc, c->instance, i);
        memcpy(doc + i, comp, k);
        if (!valid_text(c->schema, doc, i + k))
            fail_msg("%s: completion '%.*s' of '%.*s' is invalid", c->name, (int)k, comp,
                     (int)i, c->instance);
        if (i == n)
            break;
        assert_int_equal(sx_matcher_fill_mask(m, mask), 0);
        if (sx_matcher_accept_bytes(m, c->instance + i, 1, &err))
            fail_msg("%s: byte %zu of the instance refused: %s", c->name, i, err.msg);
    }
    assert_true(sx_matcher_can_end(m));
    assert_true(valid_text(c->schema, c->instance, n));
    double t_all = now_ms() - t0;
    print_message("# %-40s compile %.2f ms, all %.2f ms\n", c->name, t_compile, t_all);
    assert_true(t_all < WALL_MS);
    free(doc);
    free(comp);
    free(mask);
    sx_matcher_free(m);
    sx_gr_free(g);
}

static void test_recursive_schemas_fast(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        run_case(&CASES[i]);
}

/* Nested recursion deeper than any witness: each level of `e` needs two
 * values of the next, 40 levels deep (2^40 leaves if unfolded). */
static void test_deep_chain_fast(void **state)
{
    (void)state;
    char *s = malloc(1 << 16);
    assert_non_null(s);
    size_t at = (size_t)sprintf(s, "{\"$defs\":{");
    for (int i = 0; i < 40; i++)
        at += (size_t)sprintf(s + at,
                              "\"e%d\":{\"oneOf\":[{\"properties\":{\"a\":{\"type\":\"array\","
                              "\"minItems\":2,\"items\":{\"$ref\":\"#/$defs/e%d\"}}},"
                              "\"required\":[\"a\"],\"additionalProperties\":false},"
                              "{\"properties\":{\"f%d\":{\"type\":\"string\"}},\"required\":[\"f%d\"],"
                              "\"additionalProperties\":false}]},",
                              i, i + 1, i, i);
    at += (size_t)sprintf(s + at, "\"e40\":{\"$ref\":\"#/$defs/e0\"}},\"$ref\":\"#/$defs/e0\"}");
    bcase c = {"40 levels, mutually recursive", s, "{\"a\":[{\"f1\":\"x\"},{\"f1\":\"\"}]}"};
    run_case(&c);
    free(s);
}

/* Recursive uniqueItems items: deciding whether they can always be kept
 * distinct recursed without end (a crash); now refused with the pointer. */
static void test_recursive_unique_refused(void **state)
{
    (void)state;
    const char *s = "{\"$defs\":{\"a\":{\"type\":\"array\",\"uniqueItems\":true,\"items\":"
                    "{\"anyOf\":[{\"type\":\"boolean\"},{\"$ref\":\"#/$defs/a\"}]}}},"
                    "\"$ref\":\"#/$defs/a\"}";
    sx_grammar *g = NULL;
    sx_error err = {0};
    double t0 = now_ms();
    int rc = sx_gr_compile_schema(V, s, strlen(s), NULL, &g, &err);
    assert_int_equal(rc, SX_EUNSUPPORTED);
    assert_non_null(strstr(err.pointer, "uniqueItems"));
    assert_true(now_ms() - t0 < WALL_MS);
}

static void test_past_deadline(void **state)
{
    (void)state;
    const char *s = CASES[1].schema;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    o.deadline_ms = now_ms() - 1;
    sx_grammar *g = NULL;
    sx_error err = {0};
    double t0 = now_ms();
    assert_int_equal(sx_gr_compile_schema(V, s, strlen(s), &o, &g, &err), SX_ELIMIT);
    assert_null(g);
    assert_non_null(strstr(err.msg, "deadline"));
    assert_true(now_ms() - t0 < 100);
    /* a cancel flag set beforehand */
    volatile int cancel = 1;
    sx_gr_opts_default(&o);
    o.cancel = &cancel;
    assert_int_equal(sx_gr_compile_schema(V, s, strlen(s), &o, &g, &err), SX_ELIMIT);
    assert_non_null(strstr(err.msg, "cancelled"));
    /* a future deadline and a clear flag change nothing */
    cancel = 0;
    o.deadline_ms = now_ms() + 60000;
    assert_int_equal(sx_gr_compile_schema(V, s, strlen(s), &o, &g, &err), SX_OK);
    /* the grammar keeps them: its matchers stop once the flag is set,
     * and sx_matcher_set_bounds replaces them */
    sx_matcher *m = NULL;
    uint8_t buf[256];
    assert_int_equal(sx_matcher_new(g, &m, NULL), 0);
    assert_int_not_equal(sx_matcher_shortest_completion(m, buf, sizeof buf), (size_t)-1);
    cancel = 1;
    assert_int_equal(sx_matcher_shortest_completion(m, buf, sizeof buf), (size_t)-1);
    sx_matcher_set_bounds(m, 0, NULL);
    assert_int_not_equal(sx_matcher_shortest_completion(m, buf, sizeof buf), (size_t)-1);
    sx_matcher_set_bounds(m, now_ms() - 1, NULL);
    assert_int_equal(sx_matcher_shortest_completion(m, buf, sizeof buf), (size_t)-1);
    /* masks too: past the bounds, SX_ELIMIT and nothing allowed */
    uint32_t *mask = calloc((size_t)V->mask_words, sizeof *mask);
    assert_non_null(mask);
    assert_int_equal(sx_matcher_fill_mask(m, mask), SX_ELIMIT);
    for (int32_t w = 0; w < V->mask_words; w++)
        assert_int_equal(mask[w], 0);
    sx_matcher_set_bounds(m, 0, &cancel);
    assert_int_equal(sx_matcher_fill_mask(m, mask), SX_ELIMIT);
    cancel = 0;
    assert_int_equal(sx_matcher_fill_mask(m, mask), SX_OK);
    assert_int_not_equal(mask[0] | mask[1] | mask[2] | mask[3], 0);
    free(mask);
    sx_matcher_free(m);
    sx_gr_free(g);
}

/* uniqueItems of 3-letter strings, with a vocabulary holding every item
 * with its closing quote as a token (as a real one has many: each such
 * token asks "is this value new?"), the matcher fed `items` distinct
 * items and an opening quote. */
typedef struct uniq_fixture {
    char *words;
    const char **multi;
    sx_vocab *v;
    sx_grammar *g;
    sx_matcher *m;
    uint32_t *mask;
} uniq_fixture;

enum { UNIQ_WORDS = 26 * 26 * 26 };

static void uniq_open(uniq_fixture *u, int items)
{
    const char *s = "{\"type\":\"array\",\"uniqueItems\":true,"
                    "\"items\":{\"type\":\"string\",\"minLength\":3,\"maxLength\":3}}";
    memset(u, 0, sizeof *u);
    u->words = malloc(UNIQ_WORDS * 5);
    u->multi = calloc(UNIQ_WORDS + 1, sizeof *u->multi);
    assert_non_null(u->words);
    assert_non_null(u->multi);
    for (int i = 0; i < UNIQ_WORDS; i++) { /* word i is token 256 + i */
        sprintf(u->words + 5 * i, "%c%c%c\"", 'a' + i / 676, 'a' + i / 26 % 26, 'a' + i % 26);
        u->multi[i] = u->words + 5 * i;
    }
    u->v = tv_vocab_with(u->multi);
    assert_non_null(u->v);
    assert_int_equal(sx_gr_compile_schema(u->v, s, strlen(s), NULL, &u->g, NULL), 0);
    assert_int_equal(sx_matcher_new(u->g, &u->m, NULL), 0);
    char *doc = malloc((size_t)items * 6 + 8), *p = doc;
    assert_non_null(doc);
    *p++ = '[';
    for (int i = 0; i < items; i++)
        p += sprintf(p, "\"%c%c%c\",", 'a' + i / 676, 'a' + i / 26 % 26, 'a' + i % 26);
    *p++ = '"';
    assert_int_equal(sx_matcher_accept_bytes(u->m, doc, (size_t)(p - doc), NULL), 0);
    free(doc);
    u->mask = calloc((size_t)u->v->mask_words, sizeof *u->mask);
    assert_non_null(u->mask);
}

static void uniq_close(uniq_fixture *u)
{
    free(u->mask);
    sx_matcher_free(u->m);
    sx_gr_free(u->g);
    sx_vocab_free(u->v);
    free(u->multi);
    free(u->words);
}

/* The mask after 2,000 and 8,000 items: each token's "new?" is a look-up
 * in a hash set, not a walk over every earlier item (before: 650 ms and
 * 6.3 s with Qwen's vocabulary).  Exact: the
 * items written are refused, every other one allowed. */
static void test_unique_mask_fast(void **state)
{
    (void)state;
    static const int sizes[] = {2000, 8000};
    double took[2];
    for (int k = 0; k < 2; k++) {
        uniq_fixture u;
        uniq_open(&u, sizes[k]);
        double t0 = now_ms();
        int rc = sx_matcher_fill_mask(u.m, u.mask);
        double t = now_ms() - t0;
        print_message("# mask after %d items: %.1f ms\n", sizes[k], t);
        assert_int_equal(rc, SX_OK);
        for (int i = 0; i < UNIQ_WORDS; i++) {
            int32_t tok = 256 + i;
            int allowed = (int)(u.mask[tok / 32] >> (tok % 32) & 1);
            if (allowed != (i >= sizes[k]))
                fail_msg("word %d (%.3s): allowed %d after %d items", i, u.multi[i], allowed,
                         sizes[k]);
        }
        assert_true(t < 2000);
        took[k] = t;
        uniq_close(&u);
    }
    /* four times the items, not four times the time (before: 275 and
     * 1,079 ms here, x86 under load; now 9 and 12 ms) */
    assert_true(took[1] < 2 * took[0] + 100);
}

/* A mask stops at the matcher's deadline, part way through its walk: the
 * deadline is a quarter of the fastest of three whole masks (each a walk
 * of 17,576 tokens), so the walk is still under way when it passes. */
static void test_slow_mask_stops(void **state)
{
    (void)state;
    uniq_fixture u;
    uniq_open(&u, 8000);
    double whole = 1e9;
    for (int i = 0; i < 3; i++) {
        double t0 = now_ms();
        assert_int_equal(sx_matcher_fill_mask(u.m, u.mask), SX_OK);
        double t = now_ms() - t0;
        whole = t < whole ? t : whole;
    }
    double t0 = now_ms();
    sx_matcher_set_bounds(u.m, t0 + whole / 4, NULL);
    int rc = sx_matcher_fill_mask(u.m, u.mask);
    double t = now_ms() - t0;
    print_message("# mask with a deadline of %.2f ms: rc %d after %.2f ms (whole: %.2f ms)\n",
                  whole / 4, rc, t, whole);
    assert_int_equal(rc, SX_ELIMIT);
    /* nothing allowed once stopped */
    for (int32_t w = 0; w < u.v->mask_words; w++)
        assert_int_equal(u.mask[w], 0);
    assert_true(t < whole / 4 + 500);
    /* cleared bounds: the whole mask again */
    sx_matcher_set_bounds(u.m, 0, NULL);
    assert_int_equal(sx_matcher_fill_mask(u.m, u.mask), SX_OK);
    uniq_close(&u);
}

/* Thousands of long shortest values: past the witness search's work
 * budget, refused with the pointer of a keyword, quickly. */
static void test_work_budget_refuses(void **state)
{
    (void)state;
    char *s = malloc(1 << 20);
    assert_non_null(s);
    size_t at = (size_t)sprintf(s, "{\"type\":\"object\",\"properties\":{");
    for (int i = 0; i < 1500; i++)
        at += (size_t)sprintf(s + at, "%s\"p%d\":{\"type\":\"string\",\"minLength\":60000,"
                                      "\"maxLength\":%d}", i ? "," : "", i, 60000 + i);
    sprintf(s + at, "}}");
    sx_grammar *g = NULL;
    sx_error err = {0};
    double t0 = now_ms();
    int rc = sx_gr_compile_schema(V, s, strlen(s), NULL, &g, &err);
    double t = now_ms() - t0;
    assert_int_equal(rc, SX_ELIMIT);
    assert_non_null(strstr(err.msg, "budget"));
    assert_non_null(strstr(err.pointer, "/properties/p"));
    print_message("# work budget refusal after %.0f ms: %s\n", t, err.msg);
    assert_true(t < 4 * WALL_MS);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recursive_schemas_fast),
        cmocka_unit_test(test_deep_chain_fast),
        cmocka_unit_test(test_recursive_unique_refused),
        cmocka_unit_test(test_past_deadline),
        cmocka_unit_test(test_unique_mask_fast),
        cmocka_unit_test(test_slow_mask_stops),
        cmocka_unit_test(test_work_budget_refuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
