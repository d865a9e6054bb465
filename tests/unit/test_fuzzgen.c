/* grammar/fuzzgen: documents sampled from the masks of the real Qwen3
 * vocabulary are all valid, for every format alone and inside objects and
 * arrays; the harness itself notices invalid documents, is deterministic,
 * and its modes do what they say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer.h"
#include "grammar/formats/formats.h"
#include "grammar/fuzzgen/fuzzgen.h"

static sx_tokenizer *tok;
static sx_vocab *voc;

static int setup(void **state)
{
    (void)state;
    const char *shared = getenv("STRUX_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/qwen3-tokenizer/tokenizer.json", shared ? shared : "../shared");
    sx_error e;
    if (sx_tok_load(path, &tok, &e) || sx_tok_make_vocab(tok, &voc, &e)) {
        fprintf(stderr, "cannot load %s: %s\n", path, e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sx_vocab_free(voc);
    sx_tok_free(tok);
    return 0;
}

typedef struct run {
    sx_grammar   *g;
    sx_validator *val;
    sx_matcher   *m;
} run;

static void open_run(run *r, const char *grammar_schema, const char *validator_schema)
{
    sx_error e;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    json_error_t je;
    json_t *vs = json_loads(validator_schema, 0, &je);
    assert_non_null(vs);
    if (sx_gr_compile_schema(voc, grammar_schema, strlen(grammar_schema), &o, &r->g, &e))
        fail_msg("%s: %s", grammar_schema, e.msg);
    if (sx_val_compile(vs, NULL, &r->val, &e))
        fail_msg("%s: %s", validator_schema, e.msg);
    assert_int_equal(sx_matcher_new(r->g, &r->m, &e), SX_OK);
    json_decref(vs);
}

static void close_run(run *r)
{
    sx_matcher_free(r->m);
    sx_val_free(r->val);
    sx_gr_free(r->g);
}

static void fuzz(const char *schema, long count, const sx_fg_opts *o, sx_fg_stats *st)
{
    run r;
    sx_error e;
    open_run(&r, schema, schema);
    memset(st, 0, sizeof *st);
    if (sx_fg_run(r.g, voc, r.val, o, count, 0, NULL, NULL, st, &e))
        fail_msg("%s: %s", schema, e.msg);
    close_run(&r);
}

/* Every format, alone, as an object's member and as array items, in every
 * mode: not one document refused. */
static void formats_everywhere(void **state)
{
    (void)state;
    long docs = 0, closed = 0;
    for (int i = 0; sx_format_at(i); i++) {
        const char *f = sx_format_at(i)->name;
        char schemas[3][512];
        snprintf(schemas[0], sizeof schemas[0], "{\"type\":\"string\",\"format\":\"%s\"}", f);
        snprintf(schemas[1], sizeof schemas[1],
                 "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"format\":"
                 "\"%s\"},\"n\":{\"type\":\"integer\"}},\"required\":[\"a\"],"
                 "\"additionalProperties\":false}", f);
        snprintf(schemas[2], sizeof schemas[2],
                 "{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"%s\"},"
                 "\"minItems\":1,\"maxItems\":4}", f);
        for (int k = 0; k < 3; k++) {
            sx_fg_opts o;
            sx_fg_opts_default(&o);
            o.seed = (uint64_t)(i * 3 + k + 1);
            o.max_tokens = 48;
            sx_fg_stats st;
            fuzz(schemas[k], 120, &o, &st);
            if (st.by_verdict[SX_FG_VALID] != st.docs)
                fail_msg("%s: %ld of %ld documents not valid (invalid %ld, not-json %ld, stuck "
                         "%ld, no-completion %ld)", schemas[k], st.docs - st.by_verdict[SX_FG_VALID],
                         st.docs, st.by_verdict[SX_FG_INVALID], st.by_verdict[SX_FG_NOT_JSON],
                         st.by_verdict[SX_FG_STUCK], st.by_verdict[SX_FG_NO_COMPLETION]);
            docs += st.docs;
            closed += st.closed;
        }
    }
    print_message("  %ld documents over every format, %ld closed by the shortest completion\n",
                  docs, closed);
    assert_true(closed > 0 && closed < docs);
}

typedef struct seen {
    long invalid;
    char first[256];
} seen;

static int note(void *ctx, uint64_t index, const char *doc, size_t len, const sx_fg_doc *info)
{
    seen *s = ctx;
    if (info->verdict == SX_FG_INVALID && s->invalid++ == 0)
        snprintf(s->first, sizeof s->first, "%.*s", (int)len, doc);
    return 0;
}

/* A validator stricter than the grammar: the harness must say so. */
static void notices_invalid_documents(void **state)
{
    (void)state;
    run r;
    sx_error e;
    open_run(&r, "{\"type\":\"string\"}", "{\"type\":\"string\",\"maxLength\":3}");
    sx_fg_opts o;
    sx_fg_opts_default(&o);
    sx_fg_stats st = {0};
    seen s = {0};
    assert_int_equal(sx_fg_run(r.g, voc, r.val, &o, 200, 0, note, &s, &st, &e), SX_OK);
    print_message("  %ld of %ld refused, e.g. %s\n", s.invalid, st.docs, s.first);
    assert_int_equal(st.by_verdict[SX_FG_INVALID], s.invalid);
    assert_true(s.invalid > 50);
    close_run(&r);
}

/* Document i depends on (seed, i) alone; modes shape the documents. */
static void deterministic_and_modes(void **state)
{
    (void)state;
    run r;
    sx_error e;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\"},"
                         "\"k\":{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}},"
                         "\"additionalProperties\":false}";
    open_run(&r, schema, schema);
    sx_fg_opts o;
    sx_fg_opts_default(&o);
    o.seed = 7;
    double mean_len[SX_FG_MIXED] = {0};
    double depth[SX_FG_MIXED] = {0};
    for (int mode = 0; mode < SX_FG_MIXED; mode++) {
        o.mode = mode;
        for (uint64_t i = 0; i < 60; i++) {
            char *a, *b;
            size_t na, nb;
            sx_fg_doc da, db;
            assert_int_equal(sx_fg_sample(r.m, voc, r.val, &o, i, &a, &na, &da, &e), SX_OK);
            assert_int_equal(sx_fg_sample(r.m, voc, r.val, &o, i, &b, &nb, &db, &e), SX_OK);
            assert_int_equal(na, nb);
            assert_memory_equal(a, b, na);
            if (da.verdict != SX_FG_VALID)
                fail_msg("mode %s document %llu: %s: %s", sx_fg_mode_name(mode),
                         (unsigned long long)i, sx_fg_verdict_name(da.verdict), da.why);
            mean_len[mode] += (double)na / 60;
            int d = 0, dmax = 0;
            for (size_t k = 0; k < na; k++) {
                d += a[k] == '{' ? 1 : a[k] == '}' ? -1 : 0;
                dmax = d > dmax ? d : dmax;
            }
            depth[mode] += (double)dmax / 60;
            free(a);
            free(b);
        }
        print_message("  %-7s mean %.0f bytes, mean depth %.1f\n", sx_fg_mode_name(mode),
                      mean_len[mode], depth[mode]);
    }
    /* threads change who samples a document, not what it is */
    sx_fg_stats one = {0}, three = {0};
    o.mode = SX_FG_MIXED;
    o.threads = 1;
    assert_int_equal(sx_fg_run(r.g, voc, r.val, &o, 90, 0, NULL, NULL, &one, &e), SX_OK);
    o.threads = 3;
    assert_int_equal(sx_fg_run(r.g, voc, r.val, &o, 90, 0, NULL, NULL, &three, &e), SX_OK);
    assert_int_equal(one.docs, 90);
    assert_int_equal(three.docs, 90);
    assert_int_equal(one.tokens, three.tokens);
    assert_int_equal(one.closed, three.closed);
    assert_int_equal(three.by_verdict[SX_FG_VALID], 90);
    assert_true(depth[SX_FG_DEEP] > depth[SX_FG_UNIFORM]);
    assert_true(mean_len[SX_FG_EDGE] < mean_len[SX_FG_UNIFORM]);
    assert_int_equal(sx_fg_mode_parse("deep"), SX_FG_DEEP);
    assert_int_equal(sx_fg_mode_parse("nope"), -1);
    close_run(&r);
}

/* At a budget of zero the document is the grammar's shortest completion,
 * and a date there is a plausible one. */
static void plausible_shortest_dates(void **state)
{
    (void)state;
    static const struct {
        const char *schema, *doc;
    } cases[] = {
        {"{\"type\":\"string\",\"format\":\"date\"}", "\"2000-01-01\""},
        {"{\"type\":\"string\",\"format\":\"date-time\"}", "\"2000-01-01T00:00:00Z\""},
        {"{\"type\":\"string\",\"format\":\"time\"}", "\"00:00:00Z\""},
        /* a pattern that refuses the example: the plain shortest value */
        {"{\"type\":\"string\",\"format\":\"date\",\"pattern\":\"^19\"}", "\"1900-01-01\""},
        {"{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\",\"format\":\"date\"}},"
         "\"required\":[\"d\"],\"additionalProperties\":false}", "{\"d\":\"2000-01-01\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run r;
        sx_error e;
        open_run(&r, cases[i].schema, cases[i].schema);
        sx_fg_opts o = {.mode = SX_FG_UNIFORM, .max_tokens = 0, .seed = 1};
        char *doc;
        size_t n;
        sx_fg_doc d;
        assert_int_equal(sx_fg_sample(r.m, voc, r.val, &o, 0, &doc, &n, &d, &e), SX_OK);
        assert_int_equal(d.verdict, SX_FG_VALID);
        assert_int_equal(d.closed, 1);
        assert_string_equal(doc, cases[i].doc);
        free(doc);
        close_run(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(formats_everywhere),
        cmocka_unit_test(notices_invalid_documents),
        cmocka_unit_test(deterministic_and_modes),
        cmocka_unit_test(plausible_shortest_dates),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
