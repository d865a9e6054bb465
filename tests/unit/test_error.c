#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "common/sx_error.h"
#include "common/sx_file.h"

static void set_returns_code_and_formats(void **state)
{
    (void)state;
    sx_error e;
    sx_err_clear(&e);
    assert_int_equal(e.code, SX_OK);
    assert_int_equal(sx_err_set(&e, SX_EIO, "cannot open %s", "x.json"), SX_EIO);
    assert_string_equal(e.msg, "cannot open x.json");
    assert_int_equal(e.offset, -1);
    sx_err_prefix(&e, "loading %d", 3);
    assert_string_equal(e.msg, "loading 3: cannot open x.json");
    assert_int_equal(sx_err_setp(&e, SX_EUNSUPPORTED, "/properties/a", 7, "keyword %s", "foo"),
                     SX_EUNSUPPORTED);
    assert_string_equal(e.pointer, "/properties/a");
    assert_int_equal(e.offset, 7);
    /* NULL error sinks are allowed everywhere */
    assert_int_equal(sx_err_set(NULL, SX_ELIMIT, "x"), SX_ELIMIT);
    assert_string_equal(sx_strerror(SX_OK), "ok");
    assert_string_equal(sx_strerror(999), "unknown error");
}

static void file_read_reports_missing(void **state)
{
    (void)state;
    sx_error e;
    char *d = NULL;
    size_t n = 0;
    assert_int_equal(sx_file_read("/nonexistent/strux.json", &d, &n, &e), SX_EIO);
    assert_non_null(strstr(e.msg, "/nonexistent/strux.json"));
    assert_null(d);
    assert_int_equal(sx_file_read("/", &d, &n, &e), SX_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_returns_code_and_formats),
        cmocka_unit_test(file_read_reports_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
