/* Unit tests of grammar/validator: each keyword and format on small cases
 * with the verdict, the failing keyword's JSON Pointer and the message
 * pinned; compile errors; run-time limits; the API contract (ownership,
 * NULLs, threads).  The official test suite runs in test_schema_suite.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/validator.h"

/* ---- helpers ------------------------------------------------------------------- */

typedef struct row {
    const char *schema;
    const char *instance;
    int valid;
    const char *pointer; /* of the failing keyword, when invalid */
    const char *msg;     /* exact message, when invalid */
} row;

static int check(const char *schema, const char *inst, const sx_val_opts *o,
                 int *valid, sx_error *e)
{
    return sx_val_check_text(schema, strlen(schema), inst, strlen(inst), o,
                             valid, e);
}

static void run_rows(const row *rows, size_t n, const sx_val_opts *o)
{
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        sx_error e;
        int valid = -1;
        int rc = check(r->schema, r->instance, o, &valid, &e);
        if (rc || valid != r->valid)
            print_error("row %zu: schema %s instance %s: rc=%d valid=%d %s\n",
                        i, r->schema, r->instance, rc, valid, e.msg);
        assert_int_equal(rc, SX_OK);
        assert_int_equal(valid, r->valid);
        if (r->valid) {
            assert_string_equal(e.msg, "");
            continue;
        }
        assert_int_equal(e.code, SX_OK);
        assert_non_null(strstr(e.msg, "instance \""));
        if (r->pointer && strcmp(e.pointer, r->pointer))
            print_error("row %zu: pointer %s\n", i, e.pointer);
        if (r->pointer)
            assert_string_equal(e.pointer, r->pointer);
        if (r->msg && strcmp(e.msg, r->msg))
            print_error("row %zu: message %s\n", i, e.msg);
        if (r->msg)
            assert_string_equal(e.msg, r->msg);
    }
}

#define RUN(rows, opts) run_rows(rows, sizeof rows / sizeof rows[0], opts)

static int compile_text(const char *schema, const sx_val_opts *o,
                        sx_validator **v, sx_error *e)
{
    json_error_t je;
    json_t *s = json_loads(schema, JSON_DECODE_ANY, &je);
    assert_non_null(s);
    int rc = sx_val_compile(s, o, v, e);
    json_decref(s);
    return rc;
}

/* ---- keywords: types and values ------------------------------------------------- */

static void type_enum_const(void **state)
{
    (void)state;
    static const row rows[] = {
        {"{\"type\":\"integer\"}", "1", 1, NULL, NULL},
        {"{\"type\":\"integer\"}", "1.0", 1, NULL, NULL},
        {"{\"type\":\"integer\"}", "1e3", 1, NULL, NULL},
        {"{\"type\":\"integer\"}", "1.5", 0, "/type",
         "instance \"\": type: expected integer, got number"},
        {"{\"type\":\"number\"}", "7", 1, NULL, NULL},
        {"{\"type\":[\"string\",\"null\"]}", "null", 1, NULL, NULL},
        {"{\"type\":[\"string\",\"null\"]}", "false", 0, "/type",
         "instance \"\": type: expected null or string, got boolean"},
        {"{\"properties\":{\"a\":{\"type\":\"object\"}}}", "{\"a\":[]}", 0,
         "/properties/a/type", "instance \"/a\": type: expected object, got array"},
        {"{\"enum\":[1,\"x\",{\"a\":[1]}]}", "1.0", 1, NULL, NULL},
        {"{\"enum\":[1,\"x\",{\"a\":[1]}]}", "{\"a\":[1.0]}", 1, NULL, NULL},
        {"{\"enum\":[1,\"x\"]}", "\"y\"", 0, "/enum",
         "instance \"\": enum: value is not one of the 2 allowed values"},
        {"{\"enum\":[false]}", "0", 0, "/enum", NULL},
        {"{\"const\":{\"a\":1,\"b\":[2,3]}}", "{\"b\":[2.0,3],\"a\":1}", 1, NULL,
         NULL},
        {"{\"const\":{\"a\":1}}", "{\"a\":1,\"b\":2}", 0, "/const",
         "instance \"\": const: value differs from the constant"},
        {"{\"const\":null}", "null", 1, NULL, NULL},
        {"{\"const\":null}", "0", 0, "/const", NULL},
        {"{\"const\":\"a\\u0000b\"}", "\"a\\u0000b\"", 1, NULL, NULL},
        {"{\"const\":\"a\\u0000b\"}", "\"a\\u0000c\"", 0, "/const", NULL},
        {"true", "{}", 1, NULL, NULL},
        {"false", "{}", 0, "", "instance \"\": false: no value is valid here"},
        {"{\"properties\":{\"x\":false}}", "{\"x\":1}", 0, "/properties/x",
         "instance \"/x\": false: no value is valid here"},
    };
    RUN(rows, NULL);
}

static void numbers(void **state)
{
    (void)state;
    static const row rows[] = {
        {"{\"minimum\":5}", "5", 1, NULL, NULL},
        {"{\"minimum\":5}", "4.99", 0, "/minimum",
         "instance \"\": minimum: 4.99 is less than the minimum 5"},
        {"{\"maximum\":5.5}", "6", 0, "/maximum",
         "instance \"\": maximum: 6 is greater than the maximum 5.5"},
        {"{\"exclusiveMinimum\":5}", "5", 0, "/exclusiveMinimum",
         "instance \"\": exclusiveMinimum: 5 is not greater than 5"},
        {"{\"exclusiveMaximum\":5}", "4.999", 1, NULL, NULL},
        {"{\"exclusiveMaximum\":5}", "5.0", 0, "/exclusiveMaximum",
         "instance \"\": exclusiveMaximum: 5.0 is not less than 5"},
        /* numbers of any length, judged on their digits */
        {"{\"type\":\"integer\"}", "123456789012345678901234567890", 1, NULL, NULL},
        {"{\"type\":\"integer\"}", "123456789012345678901234567890.5", 0, "/type", NULL},
        {"{\"type\":\"integer\"}", "1e400", 1, NULL, NULL},
        {"{\"type\":\"integer\"}", "1.0e-400", 0, "/type", NULL},
        {"{\"maximum\":1.2e22}", "12000000000000000000000", 1, NULL, NULL},
        {"{\"maximum\":1.2e22}", "12000000000000000000000.000001", 0, "/maximum",
         "instance \"\": maximum: 12000000000000000000000.000001 is greater than the maximum 1.2e+22"},
        {"{\"minimum\":0}", "-1.0e-400", 0, "/minimum", NULL},
        {"{\"minimum\":0}", "-0", 1, NULL, NULL},
        {"{\"multipleOf\":0.01}", "12345678901234567890.01", 1, NULL, NULL},
        {"{\"multipleOf\":0.01}", "12345678901234567890.011", 0, "/multipleOf", NULL},
        {"{\"multipleOf\":7}", "123456789012345678901234567890", 1, NULL, NULL},
        {"{\"multipleOf\":7}", "123456789012345678901234567891", 0, "/multipleOf", NULL},
        {"{\"const\":1e30}", "1000000000000000000000000000000", 1, NULL, NULL},
        {"{\"const\":1e30}", "1000000000000000000000000000001", 0, "/const", NULL},
        {"{\"enum\":[0.3]}", "0.30", 1, NULL, NULL},
        {"{\"uniqueItems\":true}", "[123456789012345678901234567890,123456789012345678901234567891]", 1, NULL, NULL},
        {"{\"uniqueItems\":true}", "[123456789012345678901234567890,1.2345678901234567890123456789e29]", 0, "/uniqueItems", NULL},
        /* exact across integers and doubles, beyond 2^53 */
        {"{\"maximum\":9007199254740993}", "9007199254740992.0", 1, NULL, NULL},
        {"{\"maximum\":9007199254740992.0}", "9007199254740993", 0, "/maximum",
         NULL},
        {"{\"minimum\":-9223372036854775808}", "-9223372036854775808", 1, NULL,
         NULL},
        {"{\"multipleOf\":0.0001}", "0.0075", 1, NULL, NULL},
        {"{\"multipleOf\":0.1}", "0.3", 1, NULL, NULL},
        {"{\"multipleOf\":0.01}", "19.99", 1, NULL, NULL},
        {"{\"multipleOf\":0.5}", "1e308", 1, NULL, NULL},
        {"{\"multipleOf\":3}", "9.0", 1, NULL, NULL},
        {"{\"multipleOf\":0.3}", "0.1", 0, "/multipleOf",
         "instance \"\": multipleOf: 0.1 is not a multiple of 0.3"},
        {"{\"multipleOf\":0.3}", "1e20", 0, "/multipleOf", NULL},
        {"{\"multipleOf\":7}", "9223372036854775807", 1, NULL, NULL},
        {"{\"multipleOf\":2}", "9223372036854775807", 0, "/multipleOf", NULL},
        {"{\"multipleOf\":1e-30}", "3e-29", 1, NULL, NULL},
        {"{\"multipleOf\":123456789}", "1.23456789e30", 1, NULL, NULL},
        {"{\"multipleOf\":0.0001}", "0.00751", 0, "/multipleOf", NULL},
        {"{\"minimum\":1}", "\"0\"", 1, NULL, NULL}, /* only numbers */
    };
    RUN(rows, NULL);
}

static void strings(void **state)
{
    (void)state;
    static const row rows[] = {
        {"{\"minLength\":2}", "\"\\u00e9\"", 0, "/minLength",
         "instance \"\": minLength: string of length 1 is shorter than 2"},
        {"{\"maxLength\":2}", "\"\\ud83d\\ude00\\u00e9\"", 1, NULL, NULL},
        {"{\"maxLength\":2}", "\"abc\"", 0, "/maxLength",
         "instance \"\": maxLength: string of length 3 is longer than 2"},
        {"{\"maxLength\":3}", "\"a\\u0000b\"", 1, NULL, NULL},
        {"{\"minLength\":3}", "4", 1, NULL, NULL},
    };
    RUN(rows, NULL);
}

/* ECMA-262 semantics, as pattern means them */
static void patterns(void **state)
{
    (void)state;
    static const row rows[] = {
        {"{\"pattern\":\"b\"}", "\"abc\"", 1, NULL, NULL}, /* a search */
        {"{\"pattern\":\"^b\"}", "\"abc\"", 0, "/pattern",
         "instance \"\": pattern: string does not match /^b/"},
        {"{\"pattern\":\"^abc$\"}", "\"abc\\n\"", 0, "/pattern", NULL},
        {"{\"pattern\":\"^a.c$\"}", "\"a\\nc\"", 0, "/pattern", NULL},
        {"{\"pattern\":\"^a.c$\"}", "\"a\\u00e9c\"", 1, NULL, NULL},
        {"{\"pattern\":\"^a.c$\"}", "\"a\\ud83d\\ude00c\"", 1, NULL, NULL},
        {"{\"pattern\":\"^\\\\d$\"}", "\"\\u0663\"", 0, "/pattern", NULL},
        {"{\"pattern\":\"^\\\\w+$\"}", "\"a_Z9\"", 1, NULL, NULL},
        {"{\"pattern\":\"^\\\\w$\"}", "\"\\u00e9\"", 0, "/pattern", NULL},
        {"{\"pattern\":\"^\\\\s$\"}", "\"\\u00a0\"", 1, NULL, NULL},
        {"{\"pattern\":\"^\\\\s$\"}", "\"\\ufeff\"", 1, NULL, NULL},
        {"{\"pattern\":\"^[\\\\S]$\"}", "\"\\u2003\"", 0, "/pattern", NULL},
        {"{\"pattern\":\"^[^\\\\s]$\"}", "\"x\"", 1, NULL, NULL},
        {"{\"pattern\":\"^\\\\bfoo\\\\b\"}", "\"foo\\u00e9\"", 1, NULL, NULL},
        {"{\"pattern\":\"^\\\\u00e9\\\\u{1F600}$\"}",
         "\"\\u00e9\\ud83d\\ude00\"", 1, NULL, NULL},
        {"{\"pattern\":\"^\\\\ud83d\\\\ude00$\"}", "\"\\ud83d\\ude00\"", 1,
         NULL, NULL},
        {"{\"pattern\":\"^\\\\p{Lu}\\\\p{Ll}+$\"}", "\"\\u00c9cole\"", 1, NULL,
         NULL},
        {"{\"pattern\":\"^\\\\p{Script=Greek}+$\"}", "\"\\u03b1\\u03b2\"", 1,
         NULL, NULL},
        {"{\"pattern\":\"^[\\\\p{L}\\\\d-]+$\"}", "\"\\u00e9-9\"", 1, NULL,
         NULL},
        {"{\"pattern\":\"^\\\\cJ$\"}", "\"\\n\"", 1, NULL, NULL},
        {"{\"pattern\":\"^a{2,3}$\"}", "\"aaaa\"", 0, "/pattern", NULL},
        {"{\"pattern\":\"^a{,2}$\"}", "\"a{,2}\"", 1, NULL, NULL},
        {"{\"pattern\":\"^[]$\"}", "\"a\"", 0, "/pattern", NULL},
        {"{\"pattern\":\"^[^]$\"}", "\"\\n\"", 1, NULL, NULL},
        {"{\"pattern\":\"^(['\\\"]).*\\\\1$\"}", "\"'x'\"", 1, NULL, NULL},
        {"{\"pattern\":\"^(?<q>a)\\\\k<q>$\"}", "\"aa\"", 1, NULL, NULL},
        {"{\"pattern\":\"^\\\\1(a)$\"}", "\"a\"", 1, NULL, NULL},
        {"{\"pattern\":\"^(a|b)+\\\\1$\"}", "\"abb\"", 1, NULL, NULL},
        {"{\"pattern\":\"^(a|b)+\\\\1$\"}", "\"aba\"", 0, "/pattern", NULL},
        {"{\"pattern\":\"^(?=.*\\\\d)(?!.*x).{3}$\"}", "\"ab1\"", 1, NULL,
         NULL},
        {"{\"pattern\":\"(?<=\\\\$)\\\\d\"}", "\"$5\"", 1, NULL, NULL},
        {"{\"pattern\":\"^[a-z\\\\-_.]+$\"}", "\"a-b_c.d\"", 1, NULL, NULL},
        {"{\"pattern\":\"^[\\\\w-.]+$\"}", "\"a-.\"", 1, NULL, NULL},
        {"{\"pattern\":\"^\\\\/\\\\#$\"}", "\"/#\"", 1, NULL, NULL},
        {"{\"patternProperties\":{\"^x-\":{\"type\":\"string\"}}}",
         "{\"x-a\":1}", 0, "/patternProperties/^x-/type",
         "instance \"/x-a\": type: expected string, got integer"},
    };
    RUN(rows, NULL);
}

static void pattern_errors(void **state)
{
    (void)state;
    static const struct {
        const char *schema;
        int code;
        const char *pointer;
        const char *msg;
    } bad[] = {
        {"{\"pattern\":\"\\\\a\"}", SX_EFORMAT, "/pattern",
         "pattern \"\\a\": invalid escape at offset 1"},
        {"{\"pattern\":\"(?i)a\"}", SX_EFORMAT, "/pattern",
         "pattern \"(?i)a\": invalid group at offset 1"},
        {"{\"pattern\":\"(?P<n>a)\"}", SX_EFORMAT, "/pattern", NULL},
        {"{\"pattern\":\"a**\"}", SX_EFORMAT, "/pattern",
         "pattern \"a**\": nothing to repeat at offset 2"},
        {"{\"pattern\":\"a*+\"}", SX_EFORMAT, "/pattern", NULL},
        {"{\"pattern\":\"(a\"}", SX_EFORMAT, "/pattern",
         "pattern \"(a\": missing ) at offset 2"},
        {"{\"pattern\":\"a)\"}", SX_EFORMAT, "/pattern", NULL},
        {"{\"pattern\":\"[b-a]\"}", SX_EFORMAT, "/pattern", NULL},
        {"{\"pattern\":\"\\\\2(a)\"}", SX_EFORMAT, "/pattern", NULL},
        {"{\"pattern\":\"\\\\k<x>(?<y>a)\"}", SX_EFORMAT, "/pattern", NULL},
        {"{\"pattern\":\"\\\\01\"}", SX_EFORMAT, "/pattern", NULL},
        {"{\"pattern\":\"\\\\ud800\"}", SX_EUNSUPPORTED, "/pattern", NULL},
        {"{\"pattern\":\"\\\\p{NoSuchProperty}\"}", SX_EUNSUPPORTED,
         "/pattern", NULL},
        {"{\"pattern\":\"(?<=a+)b\"}", SX_EUNSUPPORTED, "/pattern",
         "pattern \"(?<=a+)b\": PCRE2 cannot match it: lookbehind assertion "
         "is not fixed length"},
        {"{\"pattern\":\"((a)|b)+\\\\2\"}", SX_EUNSUPPORTED, "/pattern",
         "pattern \"((a)|b)+\\2\": backreference to a group inside a repeated "
         "group at offset 10"},
        {"{\"pattern\":\"(a\\\\1)+\"}", SX_EUNSUPPORTED, "/pattern",
         "pattern \"(a\\1)+\": backreference inside a repeated group to one "
         "of its groups at offset 6"},
        {"{\"pattern\":\"a{70000}\"}", SX_EUNSUPPORTED, "/pattern", NULL},
        {"{\"patternProperties\":{\"(\":true}}", SX_EFORMAT,
         "/patternProperties/(", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sx_validator *v = (sx_validator *)1;
        sx_error e;
        int rc = compile_text(bad[i].schema, NULL, &v, &e);
        if (rc != bad[i].code)
            print_error("case %zu: rc %d %s\n", i, rc, e.msg);
        assert_int_equal(rc, bad[i].code);
        assert_null(v);
        assert_int_equal(e.code, bad[i].code);
        assert_string_equal(e.pointer, bad[i].pointer);
        if (bad[i].msg)
            assert_string_equal(e.msg, bad[i].msg);
    }
}

/* ---- keywords: arrays and objects ------------------------------------------------- */

static void arrays(void **state)
{
    (void)state;
    static const row rows[] = {
        {"{\"minItems\":2}", "[1]", 0, "/minItems",
         "instance \"\": minItems: array of length 1 is shorter than 2"},
        {"{\"maxItems\":1}", "[1,2]", 0, "/maxItems",
         "instance \"\": maxItems: array of length 2 is longer than 1"},
        {"{\"uniqueItems\":true}", "[1,\"1\",[1],{\"a\":1}]", 1, NULL, NULL},
        {"{\"uniqueItems\":true}", "[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1.0}]", 0,
         "/uniqueItems", "instance \"\": uniqueItems: items 0 and 1 are equal"},
        {"{\"uniqueItems\":true}",
         "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,3.0]", 0,
         "/uniqueItems", "instance \"\": uniqueItems: items 3 and 20 are equal"},
        {"{\"uniqueItems\":true}", "[0,false,null,\"\",[],{}]", 1, NULL, NULL},
        {"{\"items\":{\"type\":\"integer\"}}", "[1,2,\"x\"]", 0, "/items/type",
         "instance \"/2\": type: expected integer, got string"},
        {"{\"prefixItems\":[{\"type\":\"string\"}],\"items\":false}",
         "[\"a\",1]", 0, "/items",
         "instance \"\": items: array of 2 items allows at most 1"},
        {"{\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"integer\"}}",
         "[\"a\",1,2]", 1, NULL, NULL},
        {"{\"contains\":{\"type\":\"string\"}}", "[1,2]", 0, "/contains",
         "instance \"\": contains: 0 items match \"contains\", at least 1 "
         "required"},
        {"{\"contains\":{\"type\":\"string\"},\"minContains\":2}", "[\"a\",1]", 0,
         "/minContains", NULL},
        {"{\"contains\":{\"type\":\"string\"},\"maxContains\":1}",
         "[\"a\",\"b\"]", 0, "/maxContains",
         "instance \"\": maxContains: 2 items match \"contains\", at most 1 "
         "allowed"},
        {"{\"contains\":{\"type\":\"string\"},\"minContains\":0}", "[]", 1, NULL,
         NULL},
        {"{\"minContains\":5}", "[]", 1, NULL, NULL},
    };
    RUN(rows, NULL);
}

static void objects(void **state)
{
    (void)state;
    static const row rows[] = {
        {"{\"required\":[\"a\",\"b\"]}", "{\"a\":1}", 0, "/required",
         "instance \"\": required: property \"b\" is missing"},
        {"{\"minProperties\":1}", "{}", 0, "/minProperties",
         "instance \"\": minProperties: object with 0 properties has fewer "
         "than 1"},
        {"{\"maxProperties\":1}", "{\"a\":1,\"b\":2}", 0, "/maxProperties",
         NULL},
        {"{\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}",
         "{\"a\":\"x\",\"b\":1}", 0, "/additionalProperties",
         "instance \"\": additionalProperties: property \"b\" is not allowed"},
        {"{\"patternProperties\":{\"^x\":true},\"additionalProperties\":false}",
         "{\"xa\":1}", 1, NULL, NULL},
        {"{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"a/b~c\":\"s\"}",
         0, "/additionalProperties/type",
         "instance \"/a~1b~0c\": type: expected integer, got string"},
        {"{\"propertyNames\":{\"maxLength\":2}}", "{\"abc\":1}", 0,
         "/propertyNames",
         "instance \"\": propertyNames: property name \"abc\" is not valid"},
        {"{\"dependentRequired\":{\"a\":[\"b\"]}}", "{\"a\":1}", 0,
         "/dependentRequired",
         "instance \"\": dependentRequired: property \"b\" is required by "
         "\"a\""},
        {"{\"dependentSchemas\":{\"a\":{\"required\":[\"c\"]}}}", "{\"a\":1}", 0,
         "/dependentSchemas/a/required", NULL},
        {"{\"dependentSchemas\":{\"a\":{\"required\":[\"c\"]}}}", "{\"b\":1}", 1,
         NULL, NULL},
        {"{\"properties\":{\"\":{\"type\":\"null\"}}}", "{\"\":null}", 1, NULL,
         NULL},
    };
    RUN(rows, NULL);
}

static void applicators(void **state)
{
    (void)state;
    static const row rows[] = {
        {"{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":2}]}", "1", 0,
         "/allOf/1/minimum", "instance \"\": minimum: 1 is less than the "
                             "minimum 2"},
        {"{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":2}]}", "1", 0, "/anyOf",
         "instance \"\": anyOf: no subschema matched"},
        {"{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":2}]}", "3", 1, NULL,
         NULL},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "1", 0,
         "/oneOf", "instance \"\": oneOf: subschemas 0 and 1 both matched"},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "-1", 1, NULL,
         NULL},
        {"{\"oneOf\":[{\"type\":\"integer\"}]}", "\"a\"", 0, "/oneOf",
         "instance \"\": oneOf: no subschema matched"},
        {"{\"not\":{\"type\":\"null\"}}", "null", 0, "/not",
         "instance \"\": not: value matches the schema it must not match"},
        {"{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":10},\"else\":{\"maximum\":5}}",
         "15", 0, "/then/multipleOf", NULL},
        {"{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":10},\"else\":{\"maximum\":5}}",
         "7", 0, "/else/maximum", NULL},
        {"{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":10},\"else\":{\"maximum\":5}}",
         "20", 1, NULL, NULL},
        {"{\"then\":false}", "1", 1, NULL, NULL}, /* no "if": ignored */
    };
    RUN(rows, NULL);
}

static void unevaluated(void **state)
{
    (void)state;
    static const row rows[] = {
        {"{\"allOf\":[{\"properties\":{\"a\":true}}],\"unevaluatedProperties\":false}",
         "{\"a\":1,\"b\":2}", 0, "/unevaluatedProperties",
         "instance \"\": unevaluatedProperties: property \"b\" is not evaluated "
         "by any keyword"},
        {"{\"allOf\":[{\"properties\":{\"a\":true}}],\"unevaluatedProperties\":false}",
         "{\"a\":1}", 1, NULL, NULL},
        {"{\"anyOf\":[{\"properties\":{\"a\":true},\"required\":[\"a\"]},"
         "{\"properties\":{\"b\":true},\"required\":[\"b\"]}],"
         "\"unevaluatedProperties\":false}",
         "{\"a\":1,\"b\":2}", 1, NULL, NULL},
        {"{\"if\":{\"properties\":{\"t\":{\"const\":1}}},\"then\":{\"properties\":"
         "{\"x\":true}},\"unevaluatedProperties\":{\"type\":\"string\"}}",
         "{\"t\":1,\"x\":5,\"y\":6}", 0, "/unevaluatedProperties/type",
         "instance \"/y\": type: expected string, got integer"},
        {"{\"prefixItems\":[true],\"contains\":{\"type\":\"string\"},"
         "\"unevaluatedItems\":false}",
         "[1,\"a\",2]", 0, "/unevaluatedItems",
         "instance \"\": unevaluatedItems: item 2 is not evaluated by any "
         "keyword"},
        {"{\"$defs\":{\"n\":{\"properties\":{\"a\":true}}},\"$ref\":\"#/$defs/n\","
         "\"unevaluatedProperties\":false}",
         "{\"a\":1}", 1, NULL, NULL},
        {"{\"properties\":{\"o\":{\"properties\":{\"a\":true}}},"
         "\"unevaluatedProperties\":false}",
         "{\"o\":{\"z\":1}}", 1, NULL, NULL},
    };
    RUN(rows, NULL);
}

/* ---- references ---------------------------------------------------------------------- */

static void refs(void **state)
{
    (void)state;
    static const row rows[] = {
        {"{\"$defs\":{\"a~b/c%d\":{\"type\":\"integer\"}},"
         "\"$ref\":\"#/$defs/a~0b~1c%25d\"}",
         "\"x\"", 0, "/$defs/a~0b~1c%d/type",
         "instance \"\": type: expected integer, got string"},
        {"{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"},"
         "\"v\":{\"type\":\"integer\"}}}",
         "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":\"x\"}}}", 0,
         "/properties/v/type",
         "instance \"/next/next/v\": type: expected integer, got string"},
        {"{\"$id\":\"http://x.test/root.json\",\"$defs\":{\"b\":{\"$id\":\"sub/b.json\","
         "\"$defs\":{\"c\":{\"$anchor\":\"cee\",\"type\":\"null\"}}}},"
         "\"$ref\":\"http://x.test/sub/b.json#cee\"}",
         "null", 1, NULL, NULL},
        {"{\"$ref\":\"#/$defs/t\",\"$defs\":{\"t\":{\"prefixItems\":[{\"$ref\":\"#/$defs/t/prefixItems/1\"},"
         "{\"type\":\"string\"}]}}}",
         "[1]", 0, "/$defs/t/prefixItems/1/type", NULL},
        {"{\"$ref\":\"#/$defs/x\",\"$defs\":{\"x\":{\"unknown\":{\"type\":\"integer\"}}},"
         "\"properties\":{\"p\":{\"$ref\":\"#/$defs/x/unknown\"}}}",
         "{\"p\":\"s\"}", 0, "/$defs/x/unknown/type", NULL},
        /* draft 2020-12: $ref applies beside its siblings */
        {"{\"$defs\":{\"i\":{\"type\":\"integer\"}},\"$ref\":\"#/$defs/i\","
         "\"minimum\":3}",
         "2", 0, "/minimum", NULL},
        /* $dynamicRef: the outermost matching $dynamicAnchor wins */
        {"{\"$id\":\"http://x.test/strict\",\"$dynamicAnchor\":\"node\","
         "\"$ref\":\"tree\",\"unevaluatedProperties\":false,"
         "\"$defs\":{\"tree\":{\"$id\":\"tree\",\"$dynamicAnchor\":\"node\","
         "\"properties\":{\"data\":true,\"kids\":{\"items\":{\"$dynamicRef\":\"#node\"}}}}}}",
         "{\"kids\":[{\"data\":1,\"oops\":2}]}", 0, "/unevaluatedProperties",
         "instance \"/kids/0\": unevaluatedProperties: property \"oops\" is "
         "not evaluated by any keyword"},
    };
    RUN(rows, NULL);
}

static int test_resolve(void *ctx, const char *uri, json_t **doc,
                        sx_error *err)
{
    int *calls = ctx;
    (*calls)++;
    json_error_t je;
    if (!strcmp(uri, "http://remote.test/int.json"))
        *doc = json_loads("{\"$defs\":{\"pos\":{\"type\":\"integer\","
                          "\"minimum\":1}},\"$ref\":\"#/$defs/pos\"}",
                          0, &je);
    else if (!strcmp(uri, "http://remote.test/bad.json"))
        return sx_err_set(err, SX_EIO, "disk on fire");
    else
        return SX_ENOTFOUND;
    return SX_OK;
}

static void remote_refs(void **state)
{
    (void)state;
    int calls = 0;
    sx_val_opts o = {0};
    o.resolve = test_resolve;
    o.resolve_ctx = &calls;
    static const row rows[] = {
        {"{\"items\":{\"$ref\":\"http://remote.test/int.json\"}}", "[1,2]", 1,
         NULL, NULL},
        {"{\"items\":{\"$ref\":\"http://remote.test/int.json\"}}", "[1,0]", 0,
         "/$defs/pos/minimum",
         "instance \"/1\": minimum: 0 is less than the minimum 1 (in "
         "http://remote.test/int.json)"},
        {"{\"$id\":\"http://remote.test/main.json\",\"$ref\":\"int.json#/$defs/pos\"}",
         "1", 1, NULL, NULL},
    };
    RUN(rows, &o);
    assert_int_equal(calls, 3); /* once per compiled validator */

    sx_validator *v = (sx_validator *)1;
    sx_error e;
    assert_int_equal(compile_text("{\"$ref\":\"http://remote.test/none.json\"}",
                                  &o, &v, &e),
                     SX_ENOTFOUND);
    assert_null(v);
    assert_string_equal(e.pointer, "/$ref");
    assert_string_equal(e.msg, "$ref \"http://remote.test/none.json\": cannot "
                               "resolve \"http://remote.test/none.json\"");
    assert_int_equal(compile_text("{\"$ref\":\"http://remote.test/bad.json\"}",
                                  &o, &v, &e),
                     SX_EIO);
    assert_non_null(strstr(e.msg, "disk on fire"));
    /* without a resolver a remote $ref is an error, not a silent pass */
    assert_int_equal(compile_text("{\"$ref\":\"http://remote.test/int.json\"}",
                                  NULL, &v, &e),
                     SX_ENOTFOUND);
    assert_non_null(strstr(e.msg, "no resolver"));
}

/* ---- dialects ------------------------------------------------------------------------- */

static void dialects(void **state)
{
    (void)state;
    static const row d7[] = {
        /* draft-07: $ref replaces its siblings */
        {"{\"definitions\":{\"i\":{\"type\":\"integer\"}},\"properties\":{\"a\":"
         "{\"$ref\":\"#/definitions/i\",\"minimum\":3}}}",
         "{\"a\":2}", 1, NULL, NULL},
        {"{\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}",
         "[\"a\",1]", 0, "/additionalItems",
         "instance \"\": additionalItems: array of 2 items allows at most 1"},
        {"{\"dependencies\":{\"a\":[\"b\"],\"c\":{\"required\":[\"d\"]}}}",
         "{\"a\":1,\"b\":1,\"c\":1}", 0, "/dependencies/c/required", NULL},
        {"{\"dependencies\":{\"a\":[\"b\"]}}", "{\"a\":1}", 0, "/dependencies",
         "instance \"\": dependencies: property \"b\" is required by \"a\""},
        /* 2019+ keywords are unknown in draft-07 */
        {"{\"dependentRequired\":{\"a\":[\"b\"]},\"unevaluatedProperties\":false}",
         "{\"a\":1}", 1, NULL, NULL},
    };
    sx_val_opts o = {0};
    o.dialect = SX_VAL_DRAFT7;
    RUN(d7, &o);

    static const row by_schema[] = {
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\","
         "\"prefixItems\":[{\"type\":\"string\"}]}",
         "[1]", 1, NULL, NULL},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\"}",
         "1.0", 0, "/type", "instance \"\": type: expected integer, got number"},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\","
         "\"maximum\":5,\"exclusiveMaximum\":true}",
         "5", 0, "/exclusiveMaximum", NULL},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\","
         "\"if\":false,\"const\":1}",
         "2", 1, NULL, NULL},
        {"{\"$schema\":\"http://json-schema.org/draft-06/schema#\","
         "\"if\":false,\"const\":1}",
         "2", 0, "/const", NULL},
        {"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
         "\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}",
         "[\"a\",1]", 0, "/additionalItems", NULL},
        /* a 2020-12 subschema resource inside a draft-07 document */
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\","
         "\"definitions\":{\"n\":{\"$id\":\"http://x.test/n\",\"$schema\":"
         "\"https://json-schema.org/draft/2020-12/schema\",\"prefixItems\":"
         "[{\"type\":\"null\"}]}},\"allOf\":[{\"$ref\":\"http://x.test/n\"}]}",
         "[1]", 0, "/definitions/n/prefixItems/0/type", NULL},
    };
    RUN(by_schema, NULL);
}

/* ---- formats ------------------------------------------------------------------------- */

static void formats(void **state)
{
    (void)state;
    static const struct {
        const char *format, *s;
        int ok;
    } f[] = {
        {"date", "2020-02-29", 1},
        {"date", "2021-02-29", 0},
        {"date", "1900-02-29", 0},
        {"date", "2000-02-29", 1},
        {"date", "2020-1-01", 0},
        {"time", "23:59:60Z", 1},
        {"time", "15:59:60-08:00", 1},
        {"time", "23:59:60+01:00", 0},
        {"time", "12:00:00", 0},
        {"time", "12:00:00.5+05:30", 1},
        {"date-time", "1985-04-12T23:20:50.52Z", 1},
        {"date-time", "1985-04-12t23:20:50z", 1},
        {"date-time", "1985-04-12 23:20:50Z", 0},
        {"duration", "P1Y2M3DT4H5M6S", 1},
        {"duration", "P2W", 1},
        {"duration", "PT", 0},
        {"duration", "P1Y2D", 0},
        {"email", "a.b+c@example.com", 1},
        {"email", "\"a b\"@example.com", 1},
        {"email", "a..b@example.com", 0},
        {"email", "a@[IPv6:::1]", 1},
        {"email", "a@-x.com", 0},
        {"idn-email", "\xec\x8b\xa4@\xec\x8b\xa4.com", 1},
        {"hostname", "a-b.example.com", 1},
        {"hostname", "-a.com", 0},
        {"hostname", "xn--nxasmq6b.com", 1},
        {"hostname", "xn--X", 0},
        {"idn-hostname", "\xce\xb1\xce\xb2.com", 1},
        {"idn-hostname", "A\xce\xb1.com", 0}, /* upper case is DISALLOWED */
        {"ipv4", "192.168.0.1", 1},
        {"ipv4", "192.168.00.1", 0},
        {"ipv4", "256.1.1.1", 0},
        {"ipv6", "::1", 1},
        {"ipv6", "1:2:3:4:5:6:7:8", 1},
        {"ipv6", "1::2::3", 0},
        {"ipv6", "::ffff:1.2.3.4", 1},
        {"uuid", "123e4567-e89b-12d3-a456-426614174000", 1},
        {"uuid", "123e4567e89b12d3a456426614174000", 0},
        {"uri", "https://example.com/a?b#c", 1},
        {"uri", "/relative", 0},
        {"uri", "http://exa mple.com", 0},
        {"uri-reference", "../a/b?c", 1},
        {"uri-reference", "a:b:c/d", 1},
        {"uri-reference", "%zz", 0},
        {"iri", "http://\xc3\xa9x.com/\xc3\xa9", 1},
        {"iri-reference", "\xc3\xa9", 1},
        {"uri-template", "/users/{id}{?q,lang}", 1},
        {"uri-template", "/users/{id", 0},
        {"json-pointer", "/a~1b/~0", 1},
        {"json-pointer", "a", 0},
        {"relative-json-pointer", "1/a", 1},
        {"relative-json-pointer", "0#", 1},
        {"relative-json-pointer", "01", 0},
        {"regex", "^[a-z]+$", 1},
        {"regex", "(", 0},
        {"regex", "(?<=a+)b", 1}, /* ECMA-262, even if PCRE2 cannot run it */
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        int ok = -1;
        assert_int_equal(sx_val_format_check(f[i].format, f[i].s,
                                             strlen(f[i].s), &ok),
                         SX_OK);
        if (ok != f[i].ok)
            print_error("format %s \"%s\": got %d\n", f[i].format, f[i].s, ok);
        assert_int_equal(ok, f[i].ok);
    }
    int ok = 0;
    assert_int_equal(sx_val_format_check("color", "red", 3, &ok), SX_ENOTFOUND);
    assert_int_equal(ok, 1);
    /* a NUL inside the string counts */
    assert_int_equal(sx_val_format_check("ipv4", "1.2.3.4\0x", 9, &ok), SX_OK);
    assert_int_equal(ok, 0);

    static const row rows[] = {
        {"{\"format\":\"date\"}", "\"2021-02-29\"", 0, "/format",
         "instance \"\": format: string is not a valid date"},
        {"{\"format\":\"date\"}", "20210229", 1, NULL, NULL},
        {"{\"format\":\"color\"}", "\"not a color\"", 1, NULL, NULL},
    };
    RUN(rows, NULL);
    /* as annotations, formats never fail */
    sx_val_opts o = {0};
    o.format = SX_VAL_FORMAT_ANNOTATE;
    static const row ann[] = {
        {"{\"format\":\"date\"}", "\"2021-02-29\"", 1, NULL, NULL},
    };
    RUN(ann, &o);
}

/* ---- compile errors and limits --------------------------------------------------------- */

static void compile_errors(void **state)
{
    (void)state;
    static const struct {
        const char *schema;
        int code;
        const char *pointer;
        const char *msg;
    } bad[] = {
        {"{\"minLength\":-1}", SX_EFORMAT, "/minLength",
         "\"minLength\" must be a non-negative integer"},
        {"{\"properties\":{\"a\":{\"type\":\"int\"}}}", SX_EFORMAT,
         "/properties/a/type", "unknown type \"int\""},
        {"{\"multipleOf\":0}", SX_EFORMAT, "/multipleOf",
         "\"multipleOf\" must be greater than 0"},
        {"{\"required\":\"a\"}", SX_EFORMAT, "/required", NULL},
        {"{\"allOf\":[]}", SX_EFORMAT, "/allOf", NULL},
        {"{\"items\":[1]}", SX_EFORMAT, "/items", NULL},
        {"{\"properties\":{\"a\":3}}", SX_EFORMAT, "/properties", NULL},
        {"{\"$ref\":\"#/$defs/missing\"}", SX_ENOTFOUND, "/$ref",
         "$ref \"#/$defs/missing\" points to nothing"},
        {"{\"$ref\":\"#nope\"}", SX_ENOTFOUND, "/$ref", NULL},
        {"{\"$ref\":\"#/enum/0\",\"enum\":[3]}", SX_EFORMAT, "/$ref",
         "$ref \"#/enum/0\" does not point to a schema"},
        {"{\"$schema\":\"http://json-schema.org/draft-03/schema#\"}",
         SX_EUNSUPPORTED, "/$schema",
         "unsupported dialect \"http://json-schema.org/draft-03/schema#\""},
        {"{\"$schema\":\"https://json-schema.org/draft/2019-09/schema\","
         "\"$recursiveRef\":\"#\"}",
         SX_EUNSUPPORTED, "/$recursiveRef", NULL},
        {"{\"$defs\":{\"a\":{\"$id\":\"http://x.test/a\"},\"b\":{\"$id\":"
         "\"http://x.test/a\"}},\"$ref\":\"http://x.test/a\"}",
         SX_EFORMAT, "/$ref", NULL},
        {"{\"$id\":\"http://x.test/a#frag\"}", SX_EFORMAT, "/$id", NULL},
        {"3", SX_EFORMAT, "", "a schema must be an object or a boolean"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sx_validator *v = (sx_validator *)1;
        sx_error e;
        int rc = compile_text(bad[i].schema, NULL, &v, &e);
        if (rc != bad[i].code)
            print_error("case %zu: rc %d %s %s\n", i, rc, e.pointer, e.msg);
        assert_int_equal(rc, bad[i].code);
        assert_null(v);
        if (strcmp(e.pointer, bad[i].pointer))
            print_error("case %zu: pointer %s\n", i, e.pointer);
        assert_string_equal(e.pointer, bad[i].pointer);
        if (bad[i].msg)
            assert_string_equal(e.msg, bad[i].msg);
    }
    /* a repeated $id is fine while nothing refers to it */
    sx_validator *v = NULL;
    sx_error e;
    assert_int_equal(compile_text("{\"$defs\":{\"a\":{\"$id\":\"http://x.test/a\"},"
                                  "\"b\":{\"$id\":\"http://x.test/a\"}}}",
                                  NULL, &v, &e),
                     SX_OK);
    sx_val_free(v);
}

static void limits(void **state)
{
    (void)state;
    sx_error e;
    int valid = -1;
    /* a $ref loop that consumes nothing is an error, not a stack overflow */
    assert_int_equal(check("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":"
                           "{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}",
                           "1", NULL, &valid, &e),
                     SX_ELIMIT);
    assert_int_equal(e.code, SX_ELIMIT);
    assert_string_equal(e.msg, "instance \"\": $ref at /$defs/a loops without "
                               "consuming input");
    /* the same schema location on the same instance twice is fine */
    assert_int_equal(check("{\"$defs\":{\"i\":{\"type\":\"integer\"}},\"allOf\":"
                           "[{\"$ref\":\"#/$defs/i\"},{\"$ref\":\"#/$defs/i\"}]}",
                           "1", NULL, &valid, &e),
                     SX_OK);
    assert_int_equal(valid, 1);
    /* nested repeats that make a backtracking matcher explode get a
     * verdict: without backreferences the DFA matcher runs them */
    assert_int_equal(check("{\"pattern\":\"^(a+)+$\"}",
                           "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\"",
                           NULL, &valid, &e),
                     SX_OK);
    assert_int_equal(valid, 0);
    /* with a backreference the backtracking matcher stops at its limit */
    assert_int_equal(check("{\"pattern\":\"^((a+)+)\\\\1b$\"}",
                           "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabc\"",
                           NULL, &valid, &e),
                     SX_ELIMIT);
    assert_non_null(strstr(e.msg, "could not be matched"));
    /* the budget grows with the subject: a linear pattern does not fail on
     * a long honest string even under a small limit */
    sx_val_opts lo = {0};
    lo.regex_match_limit = 1000;
    char *text = malloc(20003);
    assert_non_null(text);
    text[0] = '"';
    memset(text + 1, 'a', 20000);
    strcpy(text + 20001, "\"");
    assert_int_equal(check("{\"pattern\":\"[ab]+[cd]\"}", text, &lo, &valid,
                           &e),
                     SX_OK);
    assert_int_equal(valid, 0);
    free(text);
    /* recursion depth */
    char deep[2100];
    memset(deep, '[', 1000);
    memset(deep + 1000, ']', 1000);
    deep[2000] = '\0';
    assert_int_equal(check("{\"items\":{\"$ref\":\"#\"}}", deep, NULL, &valid,
                           &e),
                     SX_ELIMIT);
    sx_val_opts o = {0};
    o.max_depth = 4096;
    assert_int_equal(check("{\"items\":{\"$ref\":\"#\"}}", deep, &o, &valid, &e),
                     SX_OK);
    assert_int_equal(valid, 1);
    char schema[4000];
    size_t n = 0;
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(schema + n, sizeof schema - n, "{\"not\":");
    n += (size_t)snprintf(schema + n, sizeof schema - n, "true");
    for (int i = 0; i < 300; i++)
        schema[n++] = '}';
    schema[n] = '\0';
    sx_validator *v = (sx_validator *)1;
    assert_int_equal(compile_text(schema, NULL, &v, &e), SX_ELIMIT);
    assert_null(v);
}

/* ---- API contract ------------------------------------------------------------------------ */

static void api(void **state)
{
    (void)state;
    sx_validator *v = NULL;
    sx_error e;
    int valid = -1;
    assert_int_equal(sx_val_compile(NULL, NULL, &v, &e), SX_EINVAL);
    assert_int_equal(sx_val_compile(json_true(), NULL, NULL, &e), SX_EINVAL);
    sx_val_opts bad = {0};
    bad.dialect = 42;
    assert_int_equal(sx_val_compile(json_true(), &bad, &v, &e), SX_EINVAL);
    assert_int_equal(sx_val_validate(NULL, json_true(), &valid, &e), SX_EINVAL);
    sx_val_free(NULL);

    /* the validator keeps its own copy of the schema */
    json_t *s = json_pack("{s:s}", "type", "string");
    assert_int_equal(sx_val_compile(s, NULL, &v, NULL), SX_OK);
    json_object_set_new(s, "type", json_string("integer"));
    json_decref(s);
    json_t *i = json_string("x");
    assert_int_equal(sx_val_validate(v, i, &valid, NULL), SX_OK);
    assert_int_equal(valid, 1);
    json_decref(i);
    sx_val_free(v);

    /* parse errors name the side and the offset */
    assert_int_equal(sx_val_check_text("{\"type\":", 8, "1", 1, NULL, &valid, &e),
                     SX_EFORMAT);
    assert_non_null(strstr(e.msg, "schema: "));
    assert_int_equal(sx_val_check_text("{}", 2, "[1,", 3, NULL, &valid, &e),
                     SX_EFORMAT);
    assert_non_null(strstr(e.msg, "instance: "));
    assert_int_equal(e.offset, 3);
}

typedef struct job {
    const sx_validator *v;
    int bad;
} job;

static void *worker(void *p)
{
    job *j = p;
    for (int k = 0; k < 300; k++) {
        json_t *x = json_pack("{s:i,s:[s,s]}", "n", k, "tags", "a",
                              k % 3 ? "b" : "a");
        int valid = -1;
        sx_error e;
        if (sx_val_validate(j->v, x, &valid, &e) || valid != (k % 3 != 0))
            j->bad++;
        if (!valid && strcmp(e.msg, "instance \"/tags\": uniqueItems: items 0 "
                                    "and 1 are equal"))
            j->bad++;
        json_decref(x);
    }
    return NULL;
}

static void threads(void **state)
{
    (void)state;
    sx_validator *v = NULL;
    assert_int_equal(compile_text("{\"properties\":{\"n\":{\"type\":\"integer\"},"
                                  "\"tags\":{\"uniqueItems\":true,\"items\":"
                                  "{\"pattern\":\"^[a-z]$\"}}}}",
                                  NULL, &v, NULL),
                     SX_OK);
    pthread_t t[4];
    job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i].v = v;
        jobs[i].bad = 0;
        assert_int_equal(pthread_create(&t[i], NULL, worker, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(jobs[i].bad, 0);
    }
    sx_val_free(v);
}

/* Strings of 100,000 characters under typical patterns get a verdict, never
 * "could not check": without backreferences the work is one DFA pass. */
static char *long_doc(const char *head, char fill, size_t n, const char *tail)
{
    size_t hl = strlen(head), tl = strlen(tail);
    char *t = malloc(hl + n + tl + 1);
    assert_non_null(t);
    memcpy(t, head, hl);
    memset(t + hl, fill, n);
    memcpy(t + hl + n, tail, tl + 1);
    return t;
}

static void long_strings(void **state)
{
    (void)state;
    static const struct {
        const char *schema, *head;
        char fill;
        const char *tail;
        int valid;
    } rows[] = {
        {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":"
         "\"^([a-z])([a-z0-9-])*$\"}}", "[\"a", 'b', "-9\"]", 1},
        {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":"
         "\"^([a-z])([a-z0-9-])*$\"}}", "[\"a", 'b', "_\"]", 0},
        {"{\"pattern\":\"^(\\\\w+\\\\s?)*$\"}", "\"", 'w', " x y\"", 1},
        {"{\"pattern\":\"^(\\\\w+\\\\s?)*$\"}", "\"", 'w', " x y!\"", 0},
        {"{\"pattern\":\"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\\\.[a-zA-Z]{2,}$\"}",
         "\"", 'u', "@example.com\"", 1},
        {"{\"pattern\":\"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\\\.[a-zA-Z]{2,}$\"}",
         "\"", 'u', "@example\"", 0},
        {"{\"pattern\":\"^[A-Z]{2}[0-9]+$\"}", "\"AB", '7', "\"", 1},
        {"{\"pattern\":\"^[A-Z]{2}[0-9]+$\"}", "\"AB", '7', "x\"", 0},
        /* unanchored: found at the end, or nowhere */
        {"{\"pattern\":\"a.*b\"}", "\"", 'a', "b\"", 1},
        {"{\"pattern\":\"a.*b\"}", "\"", 'a', "c\"", 0},
        {"{\"pattern\":\"(x+x+)+y\"}", "\"", 'x', "\"", 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char *doc = long_doc(rows[i].head, rows[i].fill, 100000, rows[i].tail);
        sx_error e;
        int valid = -1;
        int rc = check(rows[i].schema, doc, NULL, &valid, &e);
        if (rc || valid != rows[i].valid)
            print_error("row %zu: rc=%d valid=%d %s\n", i, rc, valid, e.msg);
        assert_int_equal(rc, SX_OK);
        assert_int_equal(valid, rows[i].valid);
        free(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(type_enum_const),
        cmocka_unit_test(numbers),
        cmocka_unit_test(strings),
        cmocka_unit_test(patterns),
        cmocka_unit_test(pattern_errors),
        cmocka_unit_test(arrays),
        cmocka_unit_test(objects),
        cmocka_unit_test(applicators),
        cmocka_unit_test(unevaluated),
        cmocka_unit_test(refs),
        cmocka_unit_test(remote_refs),
        cmocka_unit_test(dialects),
        cmocka_unit_test(formats),
        cmocka_unit_test(compile_errors),
        cmocka_unit_test(limits),
        cmocka_unit_test(long_strings),
        cmocka_unit_test(api),
        cmocka_unit_test(threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
