/* rpc/schema_cache: canonical keys hit, modes are kept apart, errors are
 * not cached, LRU eviction by bytes, evicted-but-held grammars stay usable,
 * and concurrent use from several threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/schema_cache.h"
#include "tests/unit/helpers/test_vocab.h"

static sx_vocab *V;

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

static void req(const char *text, sx_rpc_req *r)
{
    sx_error e;
    if (sx_rpc_req_parse(text, strlen(text), NULL, r, &e)) {
        fprintf(stderr, "parse %s: %s\n", text, e.msg);
        fail();
    }
}

/* Feeds text through a fresh matcher of g: 1 when accepted and complete. */
static int accepts(const sx_grammar *g, const char *text)
{
    sx_matcher *m;
    assert_int_equal(sx_matcher_new(g, &m, NULL), 0);
    int ok = sx_matcher_accept_bytes(m, text, strlen(text), NULL) == 0 && sx_matcher_can_end(m);
    sx_matcher_free(m);
    return ok;
}

static void hits_on_canonical_key(void **state)
{
    (void)state;
    sx_rpc_cache *c;
    sx_error e;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 1 << 24, &c, &e), 0);
    sx_rpc_req a, b, d, ch;
    req("{\"schema\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}},"
        "\"required\":[\"x\"]},\"document\":\"d\"}", &a);
    req("{\"document\":\"q\",\"schema\":{\"required\":[\"x\"],\"properties\":{\"x\":{\"type\":"
        "\"integer\"}},  \"type\":\"object\"}}", &b);
    req("{\"schema\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\"}},"
        "\"required\":[\"x\"]},\"document\":\"d\"}", &d);
    req("{\"choices\":[\"x\",\"y\"],\"document\":\"d\"}", &ch);
    const sx_rpc_compiled *ea, *eb, *ed, *ec;
    int hit;
    assert_int_equal(sx_rpc_cache_get(c, &a, &ea, &hit, &e), 0);
    assert_int_equal(hit, 0);
    assert_non_null(ea->grammar);
    assert_non_null(ea->validator);
    assert_int_equal(ea->mode, SX_RPC_SCHEMA);
    assert_true(ea->bytes >= sx_gr_mem_bytes(ea->grammar));
    assert_int_equal(sx_rpc_cache_get(c, &b, &eb, &hit, &e), 0);
    assert_int_equal(hit, 1);
    assert_ptr_equal(ea, eb);
    assert_int_equal(sx_rpc_cache_get(c, &d, &ed, &hit, &e), 0);
    assert_int_equal(hit, 0);
    assert_ptr_not_equal(ea, ed);
    assert_true(accepts(ea->grammar, "{\"x\":12}"));
    assert_false(accepts(ed->grammar, "{\"x\":12}"));
    assert_true(accepts(ed->grammar, "{\"x\":\"12\"}"));
    assert_int_equal(sx_rpc_cache_get(c, &ch, &ec, &hit, &e), 0);
    assert_int_equal(ec->mode, SX_RPC_CHOICES);
    assert_null(ec->validator);
    assert_true(accepts(ec->grammar, "\"y\""));
    assert_false(accepts(ec->grammar, "\"z\""));

    sx_rpc_cache_stats st;
    sx_rpc_cache_stats_get(c, &st);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 3);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.bytes, ea->bytes + ed->bytes + ec->bytes);
    sx_rpc_cache_release(c, ea);
    sx_rpc_cache_release(c, eb);
    sx_rpc_cache_release(c, ed);
    sx_rpc_cache_release(c, ec);
    sx_rpc_req_free(&a);
    sx_rpc_req_free(&b);
    sx_rpc_req_free(&d);
    sx_rpc_req_free(&ch);
    sx_rpc_cache_free(c);
}

static void modes_are_separate(void **state)
{
    (void)state;
    sx_rpc_cache *c;
    sx_error e;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 1 << 24, &c, &e), 0);
    sx_rpc_req j, r1, r2;
    req("{\"json_object\":true,\"document\":\"d\"}", &j);
    req("{\"regex\":\"[ab]+\",\"document\":\"d\"}", &r1);
    req("{\"regex\":\"[ab]+\",\"document\":\"other\"}", &r2);
    const sx_rpc_compiled *ej, *e1, *e2;
    int hit;
    assert_int_equal(sx_rpc_cache_get(c, &j, &ej, &hit, &e), 0);
    assert_true(accepts(ej->grammar, "{\"k\":[1,{}]}"));
    assert_false(accepts(ej->grammar, "[1]"));
    assert_int_equal(sx_rpc_cache_get(c, &r1, &e1, &hit, &e), 0);
    assert_int_equal(sx_rpc_cache_get(c, &r2, &e2, &hit, &e), 0);
    assert_int_equal(hit, 1);
    assert_ptr_equal(e1, e2);
    assert_true(accepts(e1->grammar, "abba"));
    assert_false(accepts(e1->grammar, "abc"));
    sx_rpc_cache_release(c, ej);
    sx_rpc_cache_release(c, e1);
    sx_rpc_cache_release(c, e2);
    sx_rpc_req_free(&j);
    sx_rpc_req_free(&r1);
    sx_rpc_req_free(&r2);
    sx_rpc_cache_free(c);
}

static void errors_are_reported_not_cached(void **state)
{
    (void)state;
    sx_rpc_cache *c;
    sx_error e;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 1 << 24, &c, &e), 0);
    const struct {
        const char *req;
        int code;
        const char *pointer;
    } cases[] = {
        {"{\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":5}}},\"document\":\"d\"}",
         SX_RPC_SCHEMA_INVALID, "/properties/a/type"},
        {"{\"schema\":{\"$ref\":\"#/$defs/missing\"},\"document\":\"d\"}", -1, ""},
        {"{\"regex\":\"(ab\",\"document\":\"d\"}", SX_RPC_SCHEMA_INVALID, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sx_rpc_req r;
        const sx_rpc_compiled *ce;
        int hit;
        req(cases[i].req, &r);
        for (int round = 0; round < 2; round++) {
            sx_err_clear(&e);
            int rc = sx_rpc_cache_get(c, &r, &ce, &hit, &e);
            assert_int_not_equal(rc, 0);
            assert_null(ce);
            assert_true(strlen(e.msg) > 0);
            int code = sx_rpc_code_of(SX_RPC_STAGE_COMPILE, rc);
            if (cases[i].code >= 0)
                assert_int_equal(code, cases[i].code);
            else
                assert_true(code == SX_RPC_SCHEMA_INVALID || code == SX_RPC_SCHEMA_UNSUPPORTED);
            if (cases[i].pointer && *cases[i].pointer)
                assert_string_equal(e.pointer, cases[i].pointer);
        }
        sx_rpc_req_free(&r);
    }
    sx_rpc_cache_stats st;
    sx_rpc_cache_stats_get(c, &st);
    assert_int_equal(st.compile_errors, 6);
    assert_int_equal(st.misses, 6);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.bytes, 0);
    sx_rpc_cache_free(c);
}

static void schema_of(int i, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "{\"schema\":{\"type\":\"object\",\"properties\":{\"f%d\":{\"type\":\"string\","
             "\"maxLength\":%d}},\"required\":[\"f%d\"]},\"document\":\"d\"}",
             i, 5 + i, i);
}

static void lru_eviction_keeps_held_entries_alive(void **state)
{
    (void)state;
    sx_error e;
    char text[512];
    sx_rpc_req r[4];
    const sx_rpc_compiled *ce[4];
    int hit;
    /* measure one entry, then allow about two */
    sx_rpc_cache *probe;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 1 << 24, &probe, &e), 0);
    for (int i = 0; i < 4; i++) {
        schema_of(i, text, sizeof text);
        req(text, &r[i]);
    }
    assert_int_equal(sx_rpc_cache_get(probe, &r[0], &ce[0], &hit, &e), 0);
    size_t one = ce[0]->bytes;
    sx_rpc_cache_release(probe, ce[0]);
    sx_rpc_cache_free(probe);

    sx_rpc_cache *c;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 2 * one + one / 2, &c, &e), 0);
    assert_int_equal(sx_rpc_cache_get(c, &r[0], &ce[0], &hit, &e), 0);
    sx_rpc_cache_release(c, ce[0]);
    assert_int_equal(sx_rpc_cache_get(c, &r[1], &ce[1], &hit, &e), 0); /* held below */
    /* touch 0 so that 1 is the least recently used */
    assert_int_equal(sx_rpc_cache_get(c, &r[0], &ce[0], &hit, &e), 0);
    assert_int_equal(hit, 1);
    sx_rpc_cache_release(c, ce[0]);
    assert_int_equal(sx_rpc_cache_get(c, &r[2], &ce[2], &hit, &e), 0);
    sx_rpc_cache_release(c, ce[2]);

    sx_rpc_cache_stats st;
    sx_rpc_cache_stats_get(c, &st);
    assert_int_equal(st.evictions, 1);
    assert_int_equal(st.entries, 2);
    assert_true(st.bytes <= st.max_bytes);
    assert_int_equal(st.pinned_evicted, 1);
    /* 1 was evicted while held: it still works (ASan would see a free) */
    assert_true(accepts(ce[1]->grammar, "{\"f1\":\"abc\"}"));
    assert_false(accepts(ce[1]->grammar, "{\"f1\":\"abcdefghij\"}"));
    sx_rpc_cache_release(c, ce[1]);
    sx_rpc_cache_stats_get(c, &st);
    assert_int_equal(st.pinned_evicted, 0);
    /* 0 stayed, 1 is gone */
    assert_int_equal(sx_rpc_cache_get(c, &r[0], &ce[0], &hit, &e), 0);
    assert_int_equal(hit, 1);
    sx_rpc_cache_release(c, ce[0]);
    assert_int_equal(sx_rpc_cache_get(c, &r[1], &ce[1], &hit, &e), 0);
    assert_int_equal(hit, 0);
    sx_rpc_cache_release(c, ce[1]);
    for (int i = 0; i < 4; i++)
        sx_rpc_req_free(&r[i]);
    sx_rpc_cache_free(c);
}

static void oversized_entry_is_served_then_dropped(void **state)
{
    (void)state;
    sx_error e;
    sx_rpc_cache *c;
    sx_rpc_req r;
    const sx_rpc_compiled *ce;
    int hit;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 16, &c, &e), 0);
    req("{\"schema\":{\"type\":\"integer\"},\"document\":\"d\"}", &r);
    assert_int_equal(sx_rpc_cache_get(c, &r, &ce, &hit, &e), 0);
    assert_true(accepts(ce->grammar, "42"));
    sx_rpc_cache_release(c, ce);
    sx_rpc_cache_stats st;
    sx_rpc_cache_stats_get(c, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.bytes, 0);
    sx_rpc_req_free(&r);
    sx_rpc_cache_free(c);
}

typedef struct worker {
    sx_rpc_cache *c;
    sx_rpc_req *reqs;
    int n_reqs, seed, failures;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    unsigned s = (unsigned)w->seed;
    for (int i = 0; i < 300; i++) {
        s = s * 1103515245u + 12345u;
        int k = (int)((s >> 16) % (unsigned)w->n_reqs);
        const sx_rpc_compiled *ce;
        int hit;
        sx_error e;
        if (sx_rpc_cache_get(w->c, &w->reqs[k], &ce, &hit, &e)) {
            w->failures++;
            continue;
        }
        char doc[64];
        snprintf(doc, sizeof doc, "{\"f%d\":\"a\"}", k);
        if (!accepts(ce->grammar, doc))
            w->failures++;
        sx_rpc_cache_release(w->c, ce);
    }
    return NULL;
}

static void threads_share_the_cache(void **state)
{
    (void)state;
    sx_error e;
    enum { NREQ = 12, NTHR = 4 };
    sx_rpc_req reqs[NREQ];
    char text[512];
    for (int i = 0; i < NREQ; i++) {
        schema_of(i, text, sizeof text);
        req(text, &reqs[i]);
    }
    sx_rpc_cache *c;
    /* room for a few entries only, so evictions race with use */
    const sx_rpc_compiled *ce;
    int hit;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 1 << 24, &c, &e), 0);
    assert_int_equal(sx_rpc_cache_get(c, &reqs[0], &ce, &hit, &e), 0);
    size_t one = ce->bytes;
    sx_rpc_cache_release(c, ce);
    sx_rpc_cache_free(c);
    assert_int_equal(sx_rpc_cache_new(V, NULL, 4 * one, &c, &e), 0);

    pthread_t t[NTHR];
    worker w[NTHR];
    for (int i = 0; i < NTHR; i++) {
        w[i] = (worker){.c = c, .reqs = reqs, .n_reqs = NREQ, .seed = i + 1};
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < NTHR; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    sx_rpc_cache_stats st;
    sx_rpc_cache_stats_get(c, &st);
    assert_int_equal(st.hits + st.misses, NTHR * 300);
    assert_true(st.hits > 0);
    assert_true(st.evictions > 0);
    assert_int_equal(st.pinned_evicted, 0);
    assert_true(st.entries <= 4);
    for (int i = 0; i < NREQ; i++)
        sx_rpc_req_free(&reqs[i]);
    sx_rpc_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hits_on_canonical_key),
        cmocka_unit_test(modes_are_separate),
        cmocka_unit_test(errors_are_reported_not_cached),
        cmocka_unit_test(lru_eviction_keeps_held_entries_alive),
        cmocka_unit_test(oversized_entry_is_served_then_dropped),
        cmocka_unit_test(threads_share_the_cache),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
