/* sx_numjson: the number-keeping JSON reader and exact decimals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_numjson.h"

static int cmp(const char *a, const char *b)
{
    sx_dec x, y;
    assert_int_equal(sx_dec_parse(a, strlen(a), &x), 0);
    assert_int_equal(sx_dec_parse(b, strlen(b), &y), 0);
    int c = sx_dec_cmp(&x, &y);
    sx_dec_free(&x);
    sx_dec_free(&y);
    return c;
}

static int mult(const char *a, const char *b)
{
    sx_dec x, y;
    assert_int_equal(sx_dec_parse(a, strlen(a), &x), 0);
    assert_int_equal(sx_dec_parse(b, strlen(b), &y), 0);
    int c = sx_dec_multiple_of(&x, &y);
    sx_dec_free(&x);
    sx_dec_free(&y);
    return c;
}

static int isint(const char *a)
{
    sx_dec x;
    assert_int_equal(sx_dec_parse(a, strlen(a), &x), 0);
    int c = sx_dec_is_integer(&x);
    sx_dec_free(&x);
    return c;
}

static void compare(void **state)
{
    (void)state;
    assert_int_equal(cmp("0", "-0"), 0);
    assert_int_equal(cmp("-0.0e5", "0"), 0);
    assert_int_equal(cmp("1", "1.0"), 0);
    assert_int_equal(cmp("100", "1e2"), 0);
    assert_int_equal(cmp("0.0012", "12e-4"), 0);
    assert_int_equal(cmp("0.0012", "0.012"), -1);
    assert_int_equal(cmp("1e400", "9e399"), 1);
    assert_int_equal(cmp("1.0e-400", "0"), 1);
    assert_int_equal(cmp("-1.0e-400", "0"), -1);
    assert_int_equal(cmp("123456789012345678901234567890", "123456789012345678901234567891"), -1);
    assert_int_equal(cmp("-123456789012345678901234567890", "-123456789012345678901234567891"), 1);
    assert_int_equal(cmp("123456789012345678901234567890", "1.2345678901234567890123456789e29"), 0);
    assert_int_equal(cmp("12000000000000000000000", "1.2e22"), 0);
    assert_int_equal(cmp("11999999999999999999999.9", "1.2e22"), -1);
    assert_int_equal(cmp("10.5", "9.99"), 1);
    assert_int_equal(cmp("-10.5", "-9.99"), -1);
}

static void integers_and_multiples(void **state)
{
    (void)state;
    assert_true(isint("1e400"));
    assert_true(isint("1.50e1"));
    assert_true(isint("-0"));
    assert_false(isint("1.0e-400"));
    assert_false(isint("123456789012345678901234567890.5"));
    assert_true(isint("123456789012345678901234567890.000"));
    assert_int_equal(mult("12345678901234567890.01", "0.01"), 1);
    assert_int_equal(mult("12345678901234567890.011", "0.01"), 0);
    assert_int_equal(mult("123456789012345678901234567890", "7"), 1);
    assert_int_equal(mult("123456789012345678901234567891", "7"), 0);
    assert_int_equal(mult("1e400", "7"), 0);
    assert_int_equal(mult("7e400", "7"), 1);
    assert_int_equal(mult("1e400", "1024"), 1); /* 10^400 = 2^400 * 5^400 */
    assert_int_equal(mult("0.75", "0.25"), 1);
    assert_int_equal(mult("0.25", "0.5"), 0);
    assert_int_equal(mult("-0", "0.3"), 1);
    assert_int_equal(mult("0.3", "0.1"), 1);
    assert_int_equal(mult("1.0e-400", "1e-401"), 1);
    assert_int_equal(mult("1.0e-400", "3e-401"), 0);
    assert_int_equal(mult("999999999999999999999999999999999999", "333333333333333333333333333333333333"), 1);
}

static void reader_keeps_text(void **state)
{
    (void)state;
    const char *t = "{\"a\":[123456789012345678901234567890, 0.3, 1e400, 5, -0.0],"
                    "\"b\":\"x\\u00e9\\ud83d\\ude00\",\"a\":12}";
    sx_numtab tab = {0};
    json_error_t je;
    json_t *v = sx_numjson_loadb(t, strlen(t), 0, &tab, &je);
    assert_non_null(v);
    json_t *a = json_object_get(v, "a"); /* the last duplicate wins, as in jansson */
    assert_true(json_is_integer(a));
    assert_int_equal(json_integer_value(a), 12);
    assert_string_equal(json_string_value(json_object_get(v, "b")), "x\xc3\xa9\xf0\x9f\x98\x80");
    assert_int_equal(tab.n, 4); /* the big integer, 0.3, 1e400, -0.0; 5 and 12 are int64 */
    json_decref(v);
    sx_numtab_free(&tab);
    sx_numtab tab2 = {0};
    v = sx_numjson_loadb("[1, 123456789012345678901234567890]", 35, 0, &tab2, &je);
    assert_non_null(v);
    size_t len;
    const char *s = sx_numtab_find(&tab2, json_array_get(v, 1), &len);
    assert_non_null(s);
    assert_int_equal(len, 30);
    assert_memory_equal(s, "123456789012345678901234567890", 30);
    assert_null(sx_numtab_find(&tab2, json_array_get(v, 0), NULL));
    json_decref(v);
    sx_numtab_free(&tab2);
    /* negative one-digit integers are plain int64s (only "-0" keeps its text) */
    sx_numtab tn = {0};
    v = sx_numjson_loadb("[-1, -9, -0, -10]", 17, 0, &tn, &je);
    assert_non_null(v);
    assert_int_equal(tn.n, 1);
    assert_null(sx_numtab_find(&tn, json_array_get(v, 0), NULL));
    assert_non_null(sx_numtab_find(&tn, json_array_get(v, 2), NULL));
    assert_int_equal(json_integer_value(json_array_get(v, 1)), -9);
    json_decref(v);
    sx_numtab_free(&tn);
    sx_numtab td = {0};
    assert_null(sx_numjson_loadb("{\"a\":1,\"a\":2}", 13, SX_NUMJSON_REJECT_DUPLICATES, &td, &je));
    assert_string_equal(je.text, "duplicate object key");
    static const char *bad[] = {"[1,]", "01", "{\"a\" 1}", "\"\\ud800\"", "[1", "1 2", "\"\x01\"",
                                "-", "1.", "1e", "\"\xff\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sx_numtab tb = {0};
        assert_null(sx_numjson_loadb(bad[i], strlen(bad[i]), 0, &tb, &je));
        assert_int_equal(tb.n, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compare),
        cmocka_unit_test(integers_and_multiples),
        cmocka_unit_test(reader_keeps_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
