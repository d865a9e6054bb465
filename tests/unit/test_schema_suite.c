/* The official JSON Schema Test Suite (../shared/json-schema-test-suite)
 * against grammar/validator, draft 2020-12 and draft-07: the required
 * tests, optional/ and optional/format/ (with format as an assertion).
 *
 * Remote documents are served from the suite's remotes/ folder under
 * http://localhost:1234/, and the official meta-schemas from
 * tests/fixtures/metaschemas/.  Every verdict is compared with
 * tests/fixtures/schema_suite_baseline.json, which lists per file the
 * number of passing tests and each known failure with its reason: a test
 * that newly fails is a regression, and a known failure that now passes
 * means the baseline must be updated, so it stays honest.
 *
 * The same runs over MaskBench (../shared/maskbench): 5,679 real-world
 * schemas whose instances carry a ground-truth `valid` flag, with format
 * as an assertion, against the baseline's "maskbench" entry.
 *
 * STRUX_SUITE_BASELINE_OUT=<file> writes the current results in the
 * baseline's format (to review and commit after a deliberate change). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/validator.h"

#define BASELINE "tests/fixtures/schema_suite_baseline.json"
#define METASCHEMAS "tests/fixtures/metaschemas/"

static const char *shared(void)
{
    const char *s = getenv("STRUX_SHARED");
    return s && *s ? s : "../shared";
}

/* ---- remote documents --------------------------------------------------------- */

static json_t *load_file(const char *path)
{
    json_error_t e;
    return json_load_file(path, JSON_ALLOW_NUL, &e);
}

static int suite_resolve(void *ctx, const char *uri, json_t **doc,
                         sx_error *err)
{
    (void)ctx;
    char path[1024];
    static const char local[] = "http://localhost:1234/";
    const char *org = NULL;
    if (!strncmp(uri, local, sizeof local - 1)) {
        snprintf(path, sizeof path, "%s/json-schema-test-suite/remotes/%s",
                 shared(), uri + sizeof local - 1);
    } else if (!strncmp(uri, "https://json-schema.org/", 24)) {
        org = uri + 24;
    } else if (!strncmp(uri, "http://json-schema.org/", 23)) {
        org = uri + 23;
    } else {
        return sx_err_set(err, SX_ENOTFOUND, "no such test document");
    }
    if (org)
        snprintf(path, sizeof path, METASCHEMAS "json-schema.org/%s.json", org);
    *doc = load_file(path);
    return *doc ? SX_OK : sx_err_set(err, SX_ENOTFOUND, "no file %s", path);
}

/* ---- running a folder ------------------------------------------------------------ */

typedef struct group {
    const char *name;   /* baseline key */
    const char *dir;    /* under json-schema-test-suite/tests */
    int dialect;
    int format;
} group;

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted *.json names directly in dir; *n set; caller frees. */
static char **list_json(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d)
        return NULL;
    char **names = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json"))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            assert_non_null(names);
        }
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (*n)
        qsort(names, *n, sizeof *names, name_cmp);
    return names;
}

/* Runs one file; returns {"passed": N, "failures": {key: reason}}. */
static json_t *run_file(const group *g, const char *path)
{
    json_t *res = json_pack("{s:i,s:{}}", "passed", 0, "failures");
    json_t *fails = json_object_get(res, "failures");
    json_t *cases = load_file(path);
    if (!cases) {
        json_object_set_new(res, "unparseable", json_true());
        return res;
    }
    sx_val_opts opts = {0};
    opts.dialect = g->dialect;
    opts.format = g->format;
    opts.resolve = suite_resolve;
    int passed = 0;
    size_t ci;
    json_t *cs;
    json_array_foreach(cases, ci, cs) {
        const char *cdesc = json_string_value(json_object_get(cs, "description"));
        sx_validator *v = NULL;
        sx_error err;
        int crc = sx_val_compile(json_object_get(cs, "schema"), &opts, &v, &err);
        size_t ti;
        json_t *t;
        json_array_foreach(json_object_get(cs, "tests"), ti, t) {
            const char *tdesc = json_string_value(json_object_get(t, "description"));
            int want = json_is_true(json_object_get(t, "valid"));
            char key[1024], reason[1024];
            snprintf(key, sizeof key, "%s :: %s", cdesc, tdesc);
            if (crc) {
                snprintf(reason, sizeof reason, "compile error (%s): %s",
                         sx_strerror(crc), err.msg);
            } else {
                int got = 0;
                sx_error why;
                int rc = sx_val_validate(v, json_object_get(t, "data"), &got, &why);
                /* a rejection must always say why */
                int mute = !rc && !got && (!why.msg[0] || !strstr(why.msg, ": "));
                if (!rc && got == want && !mute) {
                    passed++;
                    continue;
                }
                if (mute)
                    snprintf(reason, sizeof reason, "rejected without a reason");
                else if (rc)
                    snprintf(reason, sizeof reason, "validate error (%s): %s",
                             sx_strerror(rc), why.msg);
                else if (got)
                    snprintf(reason, sizeof reason, "accepted an invalid instance");
                else
                    snprintf(reason, sizeof reason, "rejected a valid instance: %s",
                             why.msg);
            }
            /* descriptions repeat now and then: keep every key distinct */
            for (int k = 2; json_object_get(fails, key); k++) {
                char base[1000];
                snprintf(base, sizeof base, "%s :: %s", cdesc, tdesc);
                snprintf(key, sizeof key, "%s #%d", base, k);
            }
            json_object_set_new(fails, key, json_string(reason));
        }
        sx_val_free(v);
    }
    json_decref(cases);
    json_object_set_new(res, "passed", json_integer(passed));
    return res;
}

static json_t *run_group(const group *g)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/json-schema-test-suite/tests/%s", shared(),
             g->dir);
    size_t n;
    char **names = list_json(dir, &n);
    json_t *files = json_object();
    for (size_t i = 0; i < n; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        json_object_set_new(files, names[i], run_file(g, path));
        free(names[i]);
    }
    free(names);
    return files;
}

/* ---- baseline ------------------------------------------------------------------------ */

static json_t *baseline_doc(void)
{
    static json_t *doc;
    if (!doc)
        doc = load_file(BASELINE);
    return doc;
}

static json_t *written;

static void check_group(const group *g)
{
    json_t *got = run_group(g);
    size_t nfiles = json_object_size(got);
    assert_true(nfiles > 0); /* the suite must be there */
    const char *out = getenv("STRUX_SUITE_BASELINE_OUT");
    if (out && *out) {
        if (!written)
            written = json_object();
        json_object_set(written, g->name, got);
        json_dump_file(written, out, JSON_INDENT(2) | JSON_SORT_KEYS);
    }
    json_t *base = json_object_get(baseline_doc(), g->name);
    int problems = 0;
    long passed = 0, failed = 0, known = 0;
    const char *fname;
    json_t *fr;
    json_object_foreach(got, fname, fr) {
        json_t *fails = json_object_get(fr, "failures");
        json_t *bf = json_object_get(base, fname);
        json_t *bfails = json_object_get(bf, "failures");
        long p = (long)json_integer_value(json_object_get(fr, "passed"));
        passed += p;
        failed += (long)json_object_size(fails);
        if (json_is_true(json_object_get(fr, "unparseable"))) {
            if (!json_is_true(json_object_get(bf, "unparseable"))) {
                print_error("%s/%s: cannot be parsed\n", g->name, fname);
                problems++;
            }
            continue;
        }
        if (!bf) {
            print_error("%s/%s: not in the baseline\n", g->name, fname);
            problems++;
            continue;
        }
        const char *key;
        json_t *why;
        json_object_foreach(fails, key, why) {
            if (json_object_get(bfails, key)) {
                known++;
                continue;
            }
            print_error("REGRESSION %s/%s: %s: %s\n", g->name, fname, key,
                        json_string_value(why));
            problems++;
        }
        json_object_foreach(bfails, key, why) {
            if (!json_object_get(fails, key)) {
                print_error("NOW PASSES (update the baseline) %s/%s: %s\n",
                            g->name, fname, key);
                problems++;
            }
        }
        if (p != (long)json_integer_value(json_object_get(bf, "passed"))) {
            print_error("%s/%s: %ld passed, baseline says %lld\n", g->name,
                        fname, p,
                        (long long)json_integer_value(json_object_get(bf, "passed")));
            problems++;
        }
    }
    json_object_foreach(base, fname, fr) {
        if (!json_object_get(got, fname)) {
            print_error("%s/%s: in the baseline but not in the suite\n",
                        g->name, fname);
            problems++;
        }
    }
    print_message("%s: %ld passed, %ld failed (%ld of them known and "
                  "skipped), %zu files\n",
                  g->name, passed, failed, known, nfiles);
    json_decref(got);
    assert_int_equal(problems, 0);
}

static const group groups[] = {
    {"draft2020-12", "draft2020-12", SX_VAL_DRAFT2020_12, SX_VAL_FORMAT_ANNOTATE},
    {"draft7", "draft7", SX_VAL_DRAFT7, SX_VAL_FORMAT_ANNOTATE},
    {"draft2020-12/optional/format", "draft2020-12/optional/format",
     SX_VAL_DRAFT2020_12, SX_VAL_FORMAT_ASSERT},
    {"draft7/optional/format", "draft7/optional/format", SX_VAL_DRAFT7,
     SX_VAL_FORMAT_ASSERT},
    {"draft2020-12/optional", "draft2020-12/optional", SX_VAL_DRAFT2020_12,
     SX_VAL_FORMAT_ANNOTATE},
    {"draft7/optional", "draft7/optional", SX_VAL_DRAFT7,
     SX_VAL_FORMAT_ANNOTATE},
};

static void required_2020_12(void **state)
{
    (void)state;
    check_group(&groups[0]);
}

static void required_draft7(void **state)
{
    (void)state;
    check_group(&groups[1]);
}

static void format_2020_12(void **state)
{
    (void)state;
    check_group(&groups[2]);
}

static void format_draft7(void **state)
{
    (void)state;
    check_group(&groups[3]);
}

static void optional_2020_12(void **state)
{
    (void)state;
    check_group(&groups[4]);
}

static void optional_draft7(void **state)
{
    (void)state;
    check_group(&groups[5]);
}

/* ---- MaskBench -------------------------------------------------------------------- */

static void run_maskbench_file(const char *path, const char *name,
                               json_t *fails, long *passed, json_t *bad)
{
    json_t *f = load_file(path);
    if (!f) {
        json_array_append_new(bad, json_string(name));
        return;
    }
    sx_val_opts opts = {0};
    opts.resolve = suite_resolve;
    sx_validator *v = NULL;
    sx_error err;
    int crc = sx_val_compile(json_object_get(f, "schema"), &opts, &v, &err);
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(f, "tests"), i, t) {
        char key[512], reason[1024];
        snprintf(key, sizeof key, "%s :: #%zu", name, i);
        int want = json_is_true(json_object_get(t, "valid")), got = 0;
        sx_error why;
        int rc = crc ? crc : sx_val_validate(v, json_object_get(t, "data"), &got, &why);
        if (!rc && !got && !why.msg[0]) {
            json_object_set_new(fails, key, json_string("rejected without a reason"));
            continue;
        }
        if (!rc && got == want) {
            (*passed)++;
            continue;
        }
        if (crc)
            snprintf(reason, sizeof reason, "compile error (%s): %s",
                     sx_strerror(crc), err.msg);
        else if (rc)
            snprintf(reason, sizeof reason, "validate error (%s): %s",
                     sx_strerror(rc), why.msg);
        else
            snprintf(reason, sizeof reason, "%s: %s",
                     got ? "accepted an invalid instance"
                         : "rejected a valid instance",
                     why.msg);
        json_object_set_new(fails, key, json_string(reason));
    }
    sx_val_free(v);
    json_decref(f);
}

static void maskbench_agreement(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/maskbench", shared());
    size_t n;
    char **names = list_json(dir, &n);
    assert_true(n > 1000);
    json_t *fails = json_object(), *bad = json_array();
    long passed = 0;
    for (size_t i = 0; i < n; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        run_maskbench_file(path, names[i], fails, &passed, bad);
        free(names[i]);
    }
    free(names);
    json_t *got = json_pack("{s:I,s:o,s:o}", "passed", (json_int_t)passed,
                            "failures", fails, "unparseable", bad);
    const char *out = getenv("STRUX_SUITE_BASELINE_OUT");
    if (out && *out) {
        if (!written)
            written = json_object();
        json_object_set(written, "maskbench", got);
        json_dump_file(written, out, JSON_INDENT(2) | JSON_SORT_KEYS);
    }
    json_t *base = json_object_get(baseline_doc(), "maskbench");
    json_t *bfails = json_object_get(base, "failures");
    int problems = 0;
    const char *key;
    json_t *why;
    json_object_foreach(fails, key, why) {
        if (!json_object_get(bfails, key)) {
            print_error("REGRESSION maskbench: %s: %s\n", key,
                        json_string_value(why));
            problems++;
        }
    }
    json_object_foreach(bfails, key, why) {
        if (!json_object_get(fails, key)) {
            print_error("NOW PASSES (update the baseline) maskbench: %s\n",
                        key);
            problems++;
        }
    }
    if (!json_equal(bad, json_object_get(base, "unparseable"))) {
        print_error("maskbench: the set of unparseable files changed\n");
        problems++;
    }
    print_message("maskbench: %ld instances agree with the ground truth, "
                  "%zu disagree (known: %zu), %zu files unparseable\n",
                  passed, json_object_size(fails), json_object_size(bfails),
                  json_array_size(bad));
    json_decref(got);
    assert_int_equal(problems, 0);
}

static void baseline_is_readable(void **state)
{
    (void)state;
    json_t *b = baseline_doc();
    assert_non_null(b);
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        assert_non_null(json_object_get(b, groups[i].name));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(baseline_is_readable),
        cmocka_unit_test(required_2020_12),
        cmocka_unit_test(required_draft7),
        cmocka_unit_test(format_2020_12),
        cmocka_unit_test(format_draft7),
        cmocka_unit_test(optional_2020_12),
        cmocka_unit_test(optional_draft7),
        cmocka_unit_test(maskbench_agreement),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    json_decref(baseline_doc());
    json_decref(written);
    return rc;
}
