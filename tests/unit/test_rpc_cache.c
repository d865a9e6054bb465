/* rpc/schema_cache: canonical keys hit, modes are kept apart, errors are
 * not cached, LRU eviction by bytes, evicted-but-held grammars stay usable,
 * concurrent use from several threads, identical compiles in flight merged
 * into one, and a compile whose waiter left taken back by the next. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* ---- compiles in flight ------------------------------------------------------ */

typedef struct waiter {
    sx_rpc_cache_wait      w;
    pthread_mutex_t        mu;
    int                    calls, how;
    const sx_rpc_compiled *e;
} waiter;

static void waiter_done(sx_rpc_cache_wait *w, int how, const sx_rpc_compiled *e,
                        const sx_error *err)
{
    (void)err;
    waiter *wt = w->user;
    pthread_mutex_lock(&wt->mu);
    wt->calls++;
    wt->how = how;
    wt->e = e;
    pthread_mutex_unlock(&wt->mu);
}

static void waiter_init(waiter *wt)
{
    memset(wt, 0, sizeof *wt);
    pthread_mutex_init(&wt->mu, NULL);
    wt->w.done = waiter_done;
    wt->w.user = wt;
}

/* Waits (up to 60 s) for done; returns how many times it was called. */
static int waiter_wait(waiter *wt)
{
    for (int i = 0; i < 6000; i++) {
        pthread_mutex_lock(&wt->mu);
        int k = wt->calls;
        pthread_mutex_unlock(&wt->mu);
        if (k)
            return k;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* A schema whose compile takes a while: patterns with 1024-state DFAs. */
static void slow_req(const char *tag, sx_rpc_req *r)
{
    char text[4096];
    int n = snprintf(text, sizeof text, "{\"document\":\"d\",\"schema\":{\"properties\":{");
    for (int i = 0; i < 8; i++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "%s\"p%d\":{\"type\":\"string\",\"pattern\":\"^[ab]*a[ab]{10}-%s-%d$\"}",
                      i ? "," : "", i, tag, i);
    snprintf(text + n, sizeof text - (size_t)n, "}}}");
    req(text, r);
}

#define NMERGE 8
typedef struct merge_arg {
    sx_rpc_cache          *c;
    const sx_rpc_req      *r;
    const sx_rpc_compiled *e;
    int                    ok;
} merge_arg;

static void *merge_thread(void *p)
{
    merge_arg *a = p;
    waiter wt;
    waiter_init(&wt);
    sx_error e;
    int how;
    if (sx_rpc_cache_lookup(a->c, a->r, &wt.w, &a->e, &how, &e) == 0) {
        if (how == SX_RPC_CACHE_HIT)
            a->ok = 1;
        else if (how == SX_RPC_CACHE_WAIT && waiter_wait(&wt) == 1 &&
                 wt.how == SX_RPC_CACHE_DONE) {
            a->e = wt.e;
            a->ok = 1;
        }
    }
    pthread_mutex_destroy(&wt.mu);
    return NULL;
}

static void identical_compiles_are_merged(void **state)
{
    (void)state;
    sx_rpc_cache *c;
    sx_error e;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 1 << 26, &c, &e), 0);
    sx_rpc_cache_set_compile(c, 2, 0, 4);
    sx_rpc_req r;
    slow_req("m", &r);
    pthread_t t[NMERGE];
    merge_arg a[NMERGE];
    for (int i = 0; i < NMERGE; i++) {
        a[i] = (merge_arg){.c = c, .r = &r};
        assert_int_equal(pthread_create(&t[i], NULL, merge_thread, &a[i]), 0);
    }
    for (int i = 0; i < NMERGE; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NMERGE; i++) {
        assert_true(a[i].ok);
        assert_ptr_equal(a[i].e, a[0].e);
    }
    sx_rpc_cache_stats st;
    sx_rpc_cache_stats_get(c, &st);
    /* however the lookups interleaved, the schema was compiled once */
    assert_int_equal(st.hits + st.misses, NMERGE);
    assert_int_equal(st.misses - st.merged, 1);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.running, 0);
    for (int i = 0; i < NMERGE; i++)
        sx_rpc_cache_release(c, a[i].e);
    sx_rpc_req_free(&r);
    sx_rpc_cache_free(c);
}

static void abandoned_compile_is_taken_back(void **state)
{
    (void)state;
    sx_rpc_cache *c;
    sx_error e;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 1 << 26, &c, &e), 0);
    sx_rpc_cache_set_compile(c, 1, 0, 4);
    sx_rpc_req r;
    slow_req("t", &r);
    waiter w1, w2;
    waiter_init(&w1);
    waiter_init(&w2);
    const sx_rpc_compiled *ce = NULL;
    int how;
    assert_int_equal(sx_rpc_cache_lookup(c, &r, &w1.w, &ce, &how, &e), 0);
    assert_int_equal(how, SX_RPC_CACHE_WAIT);
    if (sx_rpc_cache_drop(c, &w1.w)) {
        /* left: never told, and the next request takes the compile back --
         * it gets the grammar, never an error from the cancel it caused */
        assert_int_equal(sx_rpc_cache_lookup(c, &r, &w2.w, &ce, &how, &e), 0);
        if (how == SX_RPC_CACHE_WAIT) {
            assert_int_equal(waiter_wait(&w2), 1);
            assert_int_equal(w2.how, SX_RPC_CACHE_DONE);
            ce = w2.e;
        }
        assert_int_equal(w1.calls, 0);
    } else {
        /* the compile ended first: the waiter is told all the same */
        assert_int_equal(waiter_wait(&w1), 1);
        ce = w1.e;
    }
    assert_non_null(ce);
    assert_non_null(ce->grammar);
    sx_rpc_cache_stats st;
    sx_rpc_cache_stats_get(c, &st);
    assert_int_equal(st.abandoned, 0);
    assert_int_equal(st.compile_errors, 0);
    sx_rpc_cache_release(c, ce);
    /* a lone waiter that leaves a queued compile removes it */
    sx_rpc_req q1, q2;
    slow_req("q1", &q1);
    slow_req("q2", &q2);
    waiter a1, a2;
    waiter_init(&a1);
    waiter_init(&a2);
    assert_int_equal(sx_rpc_cache_lookup(c, &q1, &a1.w, &ce, &how, &e), 0);
    assert_int_equal(sx_rpc_cache_lookup(c, &q2, &a2.w, &ce, &how, &e), 0);
    sx_rpc_cache_stats_get(c, &st);
    if (st.queued == 1) /* one compile thread: q2 waits for q1 */
        assert_int_equal(sx_rpc_cache_drop(c, &a2.w), 1);
    if (!sx_rpc_cache_drop(c, &a1.w)) {
        waiter_wait(&a1);
        sx_rpc_cache_release(c, a1.e);
    }
    sx_rpc_cache_stats_get(c, &st);
    assert_int_equal(st.queued, 0);
    if (a2.w.flight || a2.calls) { /* it was not queued after all */
        if (!sx_rpc_cache_drop(c, &a2.w)) {
            waiter_wait(&a2);
            sx_rpc_cache_release(c, a2.e);
        }
    }
    sx_rpc_req_free(&q1);
    sx_rpc_req_free(&q2);
    sx_rpc_req_free(&r);
    sx_rpc_cache_free(c); /* waits for the abandoned compile */
    pthread_mutex_destroy(&w1.mu);
    pthread_mutex_destroy(&w2.mu);
    pthread_mutex_destroy(&a1.mu);
    pthread_mutex_destroy(&a2.mu);
}

/* A grammar compiled under a deadline is cached past it: its matchers
 * must not inherit that deadline (nor the compile's cancel flag), or every
 * later request's completion search would give up at once. */
static void cached_grammar_outlives_its_compile_deadline(void **state)
{
    (void)state;
    sx_rpc_cache *c;
    sx_error e;
    assert_int_equal(sx_rpc_cache_new(V, NULL, 1 << 24, &c, &e), 0);
    sx_rpc_cache_set_compile(c, 1, 150, 4); /* every compile capped at 150 ms */
    sx_rpc_req r;
    req("{\"document\":\"d\",\"schema\":{\"type\":\"object\",\"properties\":{\"x\":"
        "{\"type\":\"string\"}},\"required\":[\"x\"]}}",
        &r);
    const sx_rpc_compiled *ce;
    int hit;
    assert_int_equal(sx_rpc_cache_get(c, &r, &ce, &hit, &e), 0);
    struct timespec ts = {0, 250 * 1000000L};
    nanosleep(&ts, NULL); /* past the compile's deadline */
    const sx_rpc_compiled *again;
    assert_int_equal(sx_rpc_cache_get(c, &r, &again, &hit, &e), 0);
    assert_int_equal(hit, 1);
    sx_matcher *m;
    assert_int_equal(sx_matcher_new(again->grammar, &m, NULL), 0);
    assert_int_equal(sx_matcher_accept_bytes(m, "{\"x\":\"ab", 8, NULL), 0);
    uint8_t buf[64];
    size_t n = sx_matcher_shortest_completion(m, buf, sizeof buf);
    assert_true(n != (size_t)-1 && n > 0);
    assert_int_equal(sx_matcher_accept_bytes(m, buf, n, NULL), 0);
    assert_true(sx_matcher_can_end(m));
    sx_matcher_free(m);
    sx_rpc_cache_release(c, ce);
    sx_rpc_cache_release(c, again);
    sx_rpc_req_free(&r);
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
        cmocka_unit_test(identical_compiles_are_merged),
        cmocka_unit_test(abandoned_compile_is_taken_back),
        cmocka_unit_test(cached_grammar_outlives_its_compile_deadline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
