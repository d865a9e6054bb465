/* rpc/tool_stream.c: a call's text, fed in any split (byte by byte, whole,
 * every cut in two), gives its name and exactly its arguments' text --
 * objects with strings holding braces, quotes and escapes, scalars ended
 * by whitespace, a comma or the outer brace, the arguments before the name,
 * escaped keys and names -- and gives up (fallback) on text that is not a
 * call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "rpc/tool_stream.h"

typedef struct call_case {
    const char *text;   /* what follows <tool_call> */
    const char *name;
    const char *args;   /* the arguments' text exactly */
} call_case;

static const call_case CASES[] = {
    {"\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 3}}\n",
     "get_weather", "{\"city\": \"Oslo\", \"days\": 3}"},
    {"{\"name\":\"f\",\"arguments\":{\"s\":\"a}b]c{\\\"d\\\\\",\"n\":[1,{\"x\":[]}]}}", "f",
     "{\"s\":\"a}b]c{\\\"d\\\\\",\"n\":[1,{\"x\":[]}]}"},
    {"{\n  \"arguments\" :\t{\"q\": \"x\"} ,\n  \"name\": \"lookup\"\n}", "lookup",
     "{\"q\": \"x\"}"},
    {"{\"name\": \"n\", \"arguments\": 42 }", "n", "42"},
    {"{\"name\": \"n\", \"arguments\": -1.5e3}", "n", "-1.5e3"},
    {"{\"arguments\": true,\"name\": \"n\"}", "n", "true"},
    {"{\"name\": \"n\", \"arguments\": \"a \\\" } b\"}", "n", "\"a \\\" } b\""},
    {"{\"\\u006eame\": \"\\u0067o\", \"argument\\u0073\": {}}", "go", "{}"},
    {"{\"name\": \"e\", \"arguments\": {}}", "e", "{}"},
};

static void feed_split(const call_case *c, const size_t *cuts, int n_cuts)
{
    sx_rpc_callscan s;
    sx_rpc_callscan_init(&s);
    sx_bytes frag = {0};
    size_t len = strlen(c->text), at = 0;
    for (int i = 0; i <= n_cuts; i++) {
        size_t to = i < n_cuts ? cuts[i] : len;
        assert_int_equal(sx_rpc_callscan_feed(&s, c->text + at, to - at, &frag), 0);
        at = to;
    }
    assert_false(s.fallback);
    assert_true(s.have_name);
    assert_string_equal(s.name, c->name);
    assert_true(s.args_begun && s.args_done);
    assert_int_equal(frag.n, strlen(c->args));
    assert_memory_equal(frag.v, c->args, frag.n);
    sx_bytes_free(&frag);
}

static void splits(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        const call_case *c = &CASES[k];
        size_t len = strlen(c->text);
        feed_split(c, NULL, 0);
        size_t every[512];
        assert_true(len < 512);
        for (size_t i = 0; i < len; i++)
            every[i] = i + 1;
        feed_split(c, every, (int)len - 1);
        for (size_t cut = 0; cut <= len; cut++)
            feed_split(c, &cut, 1);
    }
}

static void not_a_call(void **state)
{
    (void)state;
    const char *bad[] = {"{\"name\" \"x\"}", "{name: 1}", "{\"name\": 1, \"arguments\": {}}",
                         "{\"name\": \"x\" \"arguments\": {}}"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        sx_rpc_callscan s;
        sx_rpc_callscan_init(&s);
        sx_bytes frag = {0};
        assert_int_equal(sx_rpc_callscan_feed(&s, bad[k], strlen(bad[k]), &frag), 0);
        assert_true(s.fallback);
        sx_bytes_free(&frag);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splits),
        cmocka_unit_test(not_a_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
