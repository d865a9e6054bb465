/* The compiler's keyword table (grammar/compile/keywords.h): every name
 * finds its own id (gc_kw_id bisects, so the table must stay in byte
 * order), unknown names and annotations constrain nothing, and the flags
 * the walkers rely on sit on the right keywords. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "grammar/compile/keywords.h"

static void test_names_round_trip_in_order(void **state)
{
    (void)state;
    for (int k = 0; k < GK_COUNT; k++) {
        const char *n = gc_kw_name((gc_kw)k);
        assert_non_null(n);
        assert_int_equal(gc_kw_id(n), k);
        if (k > 0)
            assert_true(strcmp(gc_kw_name((gc_kw)(k - 1)), n) < 0);
        /* exactly one of the two classes */
        unsigned f = gc_kw_flags((gc_kw)k);
        assert_int_equal(!(f & GK_ANNOTATION), !!(f & GK_ASSERTION));
    }
    assert_null(gc_kw_name(GK_UNKNOWN));
}

static void test_unknown_and_annotations(void **state)
{
    (void)state;
    const char *unknown[] = {"", "AllOf", "allof", "x-foo", "$strux:", "zzz", "$", "nullable"};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
        assert_int_equal(gc_kw_id(unknown[i]), GK_UNKNOWN);
        assert_int_equal(gc_kw_flags(gc_kw_id(unknown[i])), 0);
    }
    assert_true(gc_kw_flags(gc_kw_id("title")) & GK_ANNOTATION);
    assert_true(gc_kw_flags(gc_kw_id("$defs")) & GK_ANNOTATION);
    assert_int_equal(gc_kw_types(gc_kw_id("description")), 0);
}

static void test_flags_and_types(void **state)
{
    (void)state;
    assert_int_equal(gc_kw_id("allOf"), GK_ALL_OF);
    assert_int_equal(gc_kw_id("$ref"), GK_REF);
    assert_true(gc_kw_flags(GK_ALL_OF) & GK_APPLICATOR);
    assert_false(gc_kw_flags(GK_PROPERTIES) & GK_APPLICATOR);
    assert_true(gc_kw_flags(GK_MINIMUM) & GK_LOWER);
    assert_true(gc_kw_flags(GK_MAX_ITEMS) & GK_UPPER);
    assert_false(gc_kw_flags(GK_MIN_CONTAINS) & (GK_LOWER | GK_UPPER));
    assert_true(gc_kw_flags(GK_IF) & GK_SINCE7);
    assert_false(gc_kw_flags(GK_ALL_OF) & GK_SINCE7);
    assert_int_equal(gc_kw_types(GK_PATTERN), GK_T_STR);
    assert_int_equal(gc_kw_types(GK_MULTIPLE_OF), GK_T_INT | GK_T_NUM);
    assert_int_equal(gc_kw_types(GK_REQUIRED), GK_T_OBJ);
    assert_int_equal(gc_kw_types(GK_MORE_CONTAINS), GK_T_ARR);
    assert_int_equal(gc_kw_types(GK_ENUM), 0);
    assert_int_equal(gc_kw_types(GK_ANY_OF), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_round_trip_in_order),
        cmocka_unit_test(test_unknown_and_annotations),
        cmocka_unit_test(test_flags_and_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
