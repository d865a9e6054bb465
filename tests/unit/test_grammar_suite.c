/* The grammar against the official JSON Schema Test Suite (required tests
 * of draft2020-12 and draft7): for every schema the grammar compiles, each
 * test instance, written as Python's json.dumps writes it, must be accepted
 * exactly when it is valid.  Accepting an invalid instance fails at once
 * (soundness).  Every outcome is compared, case by case, with the committed
 * baseline (tests/fixtures/grammar_suite_baseline.json), which lists per
 * file the schemas (groups) the grammar declines and the valid instances it
 * rejects: a group or an instance that did and no longer does is a
 * regression and fails, even where another case improved; one that now
 * does better is printed and asks for a new baseline.  Aggregate counts
 * alone would let a regression hide behind an improvement.
 * STRUX_GRAMMAR_BASELINE_OUT=<file> writes the current outcomes in the
 * baseline's format (review, then copy over the baseline). */
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

/* A group's label: its index in the file and its description; a test's:
 * the group's index, its own, and both descriptions. */
static json_t *group_label(size_t gi, json_t *g)
{
    return json_sprintf("%zu: %s", gi, json_string_value(json_object_get(g, "description")));
}

static json_t *test_label(size_t gi, json_t *g, size_t ti, json_t *tc)
{
    return json_sprintf("%zu.%zu: %s / %s", gi, ti,
                        json_string_value(json_object_get(g, "description")),
                        json_string_value(json_object_get(tc, "description")));
}

/* Runs one file; fills out {"not_compiled": [...], "valid_rejected": [...],
 * "unspellable": [...], "agree": N} (labels as above). */
static void run_file(const char *path, tally *t, json_t *out)
{
    json_error_t je;
    json_t *groups = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (!groups)
        fail_msg("%s: %s", path, je.text);
    json_t *not_compiled = json_array(), *rejected = json_array(), *unspellable = json_array();
    long agree = 0;
    size_t gi, ti;
    json_t *g, *tc;
    json_array_foreach(groups, gi, g) {
        sx_grammar *gr = NULL;
        t->groups++;
        if (sx_gr_compile_json(V, json_object_get(g, "schema"), NULL, &gr, NULL)) {
            json_array_append_new(not_compiled, group_label(gi, g));
            continue;
        }
        t->compiled++;
        json_array_foreach(json_object_get(g, "tests"), ti, tc) {
            size_t len;
            char *text = sx_pyjson_dumps(json_object_get(tc, "data"), &len);
            int valid = json_is_true(json_object_get(tc, "valid"));
            if (!text) {
                json_array_append_new(unspellable, test_label(gi, g, ti, tc));
                continue;
            }
            sx_matcher *m;
            assert_int_equal(sx_matcher_new(gr, &m, NULL), 0);
            int acc = sx_matcher_accept_bytes(m, text, len, NULL) == 0 && sx_matcher_can_end(m);
            t->instances++;
            if (acc == valid) {
                t->agree++;
                agree++;
            } else if (valid) {
                t->valid_rejected++;
                json_array_append_new(rejected, test_label(gi, g, ti, tc));
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
    json_object_set_new(out, "not_compiled", not_compiled);
    json_object_set_new(out, "valid_rejected", rejected);
    json_object_set_new(out, "unspellable", unspellable);
    json_object_set_new(out, "agree", json_integer(agree));
    json_decref(groups);
}

static int has_label(json_t *arr, const char *label)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x)
        if (!strcmp(json_string_value(x), label))
            return 1;
    return 0;
}

/* The leading group index of a label ("12: ..." or "12.3: ..."). */
static long label_group(const char *label)
{
    return strtol(label, NULL, 10);
}

/* Compares one file's outcomes with its baseline entry (NULL: a file the
 * baseline lacks, every case new).  Returns the number of regressions;
 * prints each regression and each improvement. */
static int compare_file(const char *draft, const char *file, json_t *now, json_t *base)
{
    int bad = 0;
    json_t *bnc = json_object_get(base, "not_compiled"), *bvr = json_object_get(base, "valid_rejected");
    json_t *bun = json_object_get(base, "unspellable");
    size_t i;
    json_t *x;
    if (!base) {
        print_error("%s/%s: not in the baseline (a new file of the suite?)\n", draft, file);
        return 1;
    }
    json_array_foreach(json_object_get(now, "not_compiled"), i, x)
        if (!has_label(bnc, json_string_value(x))) {
            print_error("REGRESSION %s/%s: group %s no longer compiles\n", draft, file,
                        json_string_value(x));
            bad++;
        }
    json_array_foreach(bnc, i, x)
        if (!has_label(json_object_get(now, "not_compiled"), json_string_value(x)))
            print_message("improved %s/%s: group %s now compiles (update the baseline)\n", draft,
                          file, json_string_value(x));
    json_array_foreach(json_object_get(now, "valid_rejected"), i, x) {
        const char *l = json_string_value(x);
        if (has_label(bvr, l))
            continue;
        /* a valid instance rejected in a group the baseline did not compile
         * is new coverage, not a regression */
        int was_declined = 0;
        size_t k;
        json_t *y;
        json_array_foreach(bnc, k, y)
            was_declined |= label_group(json_string_value(y)) == label_group(l);
        if (was_declined) {
            print_message("improved %s/%s: %s now compiles, this valid instance still rejected "
                          "(update the baseline)\n", draft, file, l);
            continue;
        }
        print_error("REGRESSION %s/%s: valid instance %s now rejected\n", draft, file, l);
        bad++;
    }
    json_array_foreach(bvr, i, x)
        if (!has_label(json_object_get(now, "valid_rejected"), json_string_value(x)))
            print_message("improved %s/%s: valid instance %s now accepted (update the baseline)\n",
                          draft, file, json_string_value(x));
    /* instances sx_pyjson_dumps cannot write are the same set (the suite is pinned) */
    json_t *nun = json_object_get(now, "unspellable");
    if (bun ? !json_equal(nun, bun) : json_array_size(nun) != 0) {
        print_error("%s/%s: the instances json.dumps cannot write changed\n", draft, file);
        bad++;
    }
    return bad;
}

static void run_draft(const char *draft, tally *t, json_t *files)
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
        json_t *f = json_object();
        run_file(path, t, f);
        json_object_set_new(files, names[i], f);
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
    json_t *now = json_pack("{s:s}", "about",
                            "Per-case outcomes of tests/unit/test_grammar_suite.c on the JSON "
                            "Schema Test Suite (required tests): per file, the groups the grammar "
                            "declines, the valid instances it rejects, the instances json.dumps "
                            "cannot write, and the count of agreeing instances. Regenerate with "
                            "STRUX_GRAMMAR_BASELINE_OUT=/tmp/x.json, review, and copy.");
    int regress = 0;
    for (int k = 0; k < 2; k++) {
        tally t = {0};
        json_t *files = json_object();
        run_draft(drafts[k], &t, files);
        print_message("%s: %ld schemas, %ld compiled, %ld instances, %ld agree, %ld valid "
                      "rejected, %ld invalid accepted\n",
                      drafts[k], t.groups, t.compiled, t.instances, t.agree, t.valid_rejected,
                      t.invalid_accepted);
        json_t *bd = json_object_get(base, drafts[k]);
        const char *file;
        json_t *f;
        json_object_foreach(files, file, f)
            regress += compare_file(drafts[k], file, f, json_object_get(bd, file));
        json_object_foreach(bd, file, f)
            if (!json_object_get(files, file)) {
                print_error("%s/%s: in the baseline, not in the suite\n", drafts[k], file);
                regress++;
            }
        json_object_set_new(now, drafts[k], files);
    }
    const char *out = getenv("STRUX_GRAMMAR_BASELINE_OUT");
    if (out)
        json_dump_file(now, out, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(now);
    json_decref(base);
    if (regress)
        fail_msg("%d case(s) regressed against tests/fixtures/grammar_suite_baseline.json", regress);
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
