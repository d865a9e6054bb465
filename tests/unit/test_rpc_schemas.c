/* schemas/: every ready-made schema compiles to a grammar and a validator,
 * and its sample's hand-written extraction (schemas/samples/NAME.expected
 * .json) validates and is accepted byte by byte by the grammar -- so the
 * schemas are both enforceable and right for their documents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "grammar/grammar.h"
#include "grammar/validator/validator.h"
#include "tests/unit/helpers/test_vocab.h"

static void one(const sx_vocab *V, const char *name)
{
    char path[512];
    sx_error e;
    snprintf(path, sizeof path, "schemas/%s.json", name);
    json_error_t je;
    json_t *schema = json_load_file(path, 0, &je);
    if (!schema) {
        fprintf(stderr, "%s: %s\n", path, je.text);
        fail();
    }
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    sx_grammar *g = NULL;
    sx_validator *v = NULL;
    if (sx_gr_compile_json(V, schema, &o, &g, &e) || sx_val_compile(schema, NULL, &v, &e)) {
        fprintf(stderr, "%s: %s at %s\n", path, e.msg, e.pointer);
        fail();
    }
    /* the sample document exists and is not empty */
    snprintf(path, sizeof path, "schemas/samples/%s.txt", name);
    char *doc = NULL;
    size_t len = 0;
    assert_int_equal(sx_file_read(path, &doc, &len, &e), SX_OK);
    assert_true(len > 40);
    free(doc);
    snprintf(path, sizeof path, "schemas/samples/%s.expected.json", name);
    json_t *want = json_load_file(path, JSON_DECODE_ANY, &je);
    if (!want) {
        fprintf(stderr, "%s: %s\n", path, je.text);
        fail();
    }
    int ok = 0;
    assert_int_equal(sx_val_validate(v, want, &ok, &e), SX_OK);
    if (!ok)
        fprintf(stderr, "%s: %s\n", path, e.msg);
    assert_true(ok);
    char *text = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
    sx_matcher *m;
    assert_int_equal(sx_matcher_new(g, &m, &e), SX_OK);
    int rc = sx_matcher_accept_bytes(m, text, strlen(text), &e);
    if (rc)
        fprintf(stderr, "%s: matcher refused: %s\n", path, e.msg);
    assert_int_equal(rc, SX_OK);
    assert_true(sx_matcher_can_end(m));
    sx_matcher_free(m);
    free(text);
    json_decref(want);
    sx_val_free(v);
    sx_gr_free(g);
    json_decref(schema);
}

static void every_schema(void **state)
{
    (void)state;
    sx_vocab *V = tv_small_vocab();
    DIR *d = opendir("schemas");
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json"))
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(l - 5), de->d_name);
        one(V, name);
        n++;
    }
    closedir(d);
    /* the issue asks for at least 8 */
    assert_true(n >= 8);
    sx_vocab_free(V);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
