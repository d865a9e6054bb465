/* The grammar against the official JSON Schema Test Suite (required tests
 * of draft2020-12 and draft7): for every schema the grammar compiles, each
 * test instance, written as Python's json.dumps writes it, must be accepted
 * exactly when it is valid.  Accepting an invalid instance fails at once
 * (soundness); the counts of compiled schemas and agreeing instances are
 * held to a committed baseline (tests/fixtures/grammar_suite_baseline.json)
 * so that a regression fails, and an improvement asks for a new baseline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_pyjson.h"
#include "grammar/grammar.h"
#include "tests/unit/helpers/test_vocab.h"

static sx_vocab *V;

typedef struct tally {
    long groups, compiled, instances, agree, valid_rejected, invalid_accepted;
} tally;

static const char *shared_dir(void)
{
    const char *s = getenv("STRUX_SHARED");
    return s && *s ? s : "../shared";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_file(const char *path, tally *t)
{
    json_error_t je;
    json_t *groups = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (!groups)
        fail_msg("%s: %s", path, je.text);
    size_t gi, ti;
    json_t *g, *tc;
    json_array_foreach(groups, gi, g) {
        sx_grammar *gr = NULL;
        t->groups++;
        if (sx_gr_compile_json(V, json_object_get(g, "schema"), NULL, &gr, NULL))
            continue;
        t->compiled++;
        json_array_foreach(json_object_get(g, "tests"), ti, tc) {
            size_t len;
            char *text = sx_pyjson_dumps(json_object_get(tc, "data"), &len);
            int valid = json_is_true(json_object_get(tc, "valid"));
            if (!text)
                continue;
            sx_matcher *m;
            assert_int_equal(sx_matcher_new(gr, &m, NULL), 0);
            int acc = sx_matcher_accept_bytes(m, text, len, NULL) == 0 && sx_matcher_can_end(m);
            t->instances++;
            if (acc == valid) {
                t->agree++;
            } else if (valid) {
                t->valid_rejected++;
                if (getenv("STRUX_SUITE_VERBOSE"))
                    print_message("valid rejected: %s: \"%s\" / \"%s\": %s\n", path,
                                  json_string_value(json_object_get(g, "description")),
                                  json_string_value(json_object_get(tc, "description")), text);
            } else {
                t->invalid_accepted++;
                fail_msg("UNSOUND: %s: \"%s\" / \"%s\": accepted the invalid instance %s", path,
                         json_string_value(json_object_get(g, "description")),
                         json_string_value(json_object_get(tc, "description")), text);
            }
            sx_matcher_free(m);
            free(text);
        }
        sx_gr_free(gr);
    }
    json_decref(groups);
}

static void run_draft(const char *draft, tally *t)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/json-schema-test-suite/tests/%s", shared_dir(), draft);
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot open %s (set STRUX_SHARED)", dir);
    char *names[512];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".json"))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        run_file(path, t);
        free(names[i]);
    }
}

static void suite_against_baseline(void **state)
{
    (void)state;
    static const char *const drafts[] = {"draft2020-12", "draft7"};
    json_error_t je;
    json_t *base = json_load_file("tests/fixtures/grammar_suite_baseline.json", 0, &je);
    if (!base)
        fail_msg("tests/fixtures/grammar_suite_baseline.json: %s", je.text);
    json_t *now = json_object();
    int regress = 0;
    for (int k = 0; k < 2; k++) {
        tally t = {0};
        run_draft(drafts[k], &t);
        print_message("%s: %ld schemas, %ld compiled, %ld instances, %ld agree, %ld valid "
                      "rejected, %ld invalid accepted\n",
                      drafts[k], t.groups, t.compiled, t.instances, t.agree, t.valid_rejected,
                      t.invalid_accepted);
        json_object_set_new(now, drafts[k],
                            json_pack("{s:I,s:I,s:I}", "compiled", (json_int_t)t.compiled,
                                      "instances", (json_int_t)t.instances, "agree",
                                      (json_int_t)t.agree));
        json_t *b = json_object_get(base, drafts[k]);
        long bc = (long)json_integer_value(json_object_get(b, "compiled"));
        long ba = (long)json_integer_value(json_object_get(b, "agree"));
        if (t.compiled < bc || t.agree < ba) {
            print_error("%s regressed: compiled %ld (baseline %ld), agree %ld (baseline %ld)\n",
                        drafts[k], t.compiled, bc, t.agree, ba);
            regress = 1;
        } else if (t.compiled > bc || t.agree > ba) {
            print_message("%s improved on the baseline: update "
                          "tests/fixtures/grammar_suite_baseline.json\n",
                          drafts[k]);
        }
    }
    const char *out = getenv("STRUX_GRAMMAR_BASELINE_OUT");
    if (out)
        json_dump_file(now, out, JSON_INDENT(2));
    json_decref(now);
    json_decref(base);
    assert_false(regress);
}

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(suite_against_baseline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
