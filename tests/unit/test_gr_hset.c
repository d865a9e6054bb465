/* The persistent hash set under uniqueItems' item hashes (ir/gr_vseen.c):
 * exact membership for random hashes and for hashes that agree on all but
 * their top bits (the deepest tries), every earlier version unchanged by
 * later additions, an allocation failure leaving the set as it was, and
 * gr_vseen_has over a list whose newest nodes carry no set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>

#include "grammar/ir/ir.h"

/* A bump allocator over one malloc'd block; fails once `left` allocations
 * are spent (left < 0: never). */
typedef struct pool {
    unsigned char *b;
    size_t used, cap;
    long left;
} pool;

static void *pool_alloc(void *ctx, size_t n)
{
    pool *p = ctx;
    n = (n + 15) & ~(size_t)15;
    if (p->left == 0 || p->used + n > p->cap)
        return NULL;
    if (p->left > 0)
        p->left--;
    void *r = p->b + p->used;
    p->used += n;
    return r;
}

static pool pool_new(size_t cap)
{
    pool p = {.b = malloc(cap), .cap = cap, .left = -1};
    assert_non_null(p.b);
    return p;
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_random_hashes(void **state)
{
    (void)state;
    enum { N = 20000 };
    pool p = pool_new((size_t)64 << 20);
    uint64_t s = 0x9E3779B97F4A7C15ULL, *in = malloc(N * sizeof *in);
    assert_non_null(in);
    const gr_hset *set = NULL;
    assert_false(gr_hset_has(set, 1));
    for (int i = 0; i < N; i++) {
        in[i] = next_rand(&s);
        set = gr_hset_add(set, in[i], pool_alloc, &p);
        assert_non_null(set);
    }
    for (int i = 0; i < N; i++)
        assert_true(gr_hset_has(set, in[i]));
    for (int i = 0; i < N; i++) /* others (the generator does not repeat) */
        assert_false(gr_hset_has(set, next_rand(&s)));
    /* adding a member changes nothing */
    assert_ptr_equal(gr_hset_add(set, in[7], pool_alloc, &p), set);
    free(in);
    free(p.b);
}

/* Hashes equal but for their top bits share a path down to the last level
 * (five bits a level: the 13th holds bits 60..63). */
static void test_deep_paths(void **state)
{
    (void)state;
    pool p = pool_new((size_t)1 << 20);
    const uint64_t base = 0x0123456789ABCDEFULL & ~(0xFULL << 60);
    const gr_hset *set = NULL;
    for (uint64_t top = 0; top < 16; top += 2)
        set = gr_hset_add(set, base | top << 60, pool_alloc, &p);
    assert_non_null(set);
    for (uint64_t top = 0; top < 16; top++)
        assert_int_equal(gr_hset_has(set, base | top << 60), top % 2 == 0);
    /* one bit apart, at the top and at the bottom */
    set = gr_hset_add(NULL, UINT64_MAX, pool_alloc, &p);
    set = gr_hset_add(set, UINT64_MAX >> 1, pool_alloc, &p);
    set = gr_hset_add(set, UINT64_MAX - 1, pool_alloc, &p);
    assert_non_null(set);
    assert_true(gr_hset_has(set, UINT64_MAX));
    assert_true(gr_hset_has(set, UINT64_MAX >> 1));
    assert_true(gr_hset_has(set, UINT64_MAX - 1));
    assert_false(gr_hset_has(set, UINT64_MAX - 2));
    assert_false(gr_hset_has(set, 0));
    free(p.b);
}

/* Each version keeps exactly its own members: the matcher's frames (and
 * its rollback history) hold sets from every step. */
static void test_versions(void **state)
{
    (void)state;
    enum { N = 3000 };
    pool p = pool_new((size_t)32 << 20);
    const gr_hset **ver = calloc(N + 1, sizeof *ver);
    uint64_t s = 42, *in = malloc(N * sizeof *in);
    assert_non_null(ver);
    assert_non_null(in);
    for (int i = 0; i < N; i++) {
        in[i] = next_rand(&s);
        ver[i + 1] = gr_hset_add(ver[i], in[i], pool_alloc, &p);
        assert_non_null(ver[i + 1]);
    }
    for (int v = 0; v <= N; v += 97)
        for (int i = 0; i < N; i++)
            assert_int_equal(gr_hset_has(ver[v], in[i]), i < v);
    /* a failed allocation: NULL, the set as it was */
    p.left = 0;
    assert_null(gr_hset_add(ver[N], next_rand(&s), pool_alloc, &p));
    p.left = 1; /* enough for a new root, not for a path below it */
    for (int i = 0; i < 64; i++) {
        uint64_t h = next_rand(&s);
        const gr_hset *t = gr_hset_add(ver[N], h, pool_alloc, &p);
        if (t)
            assert_true(gr_hset_has(t, h));
        assert_false(gr_hset_has(ver[N], h));
        p.left = 1;
    }
    for (int i = 0; i < N; i++)
        assert_true(gr_hset_has(ver[N], in[i]));
    free(in);
    free(ver);
    free(p.b);
}

/* gr_vseen_has: nodes without a set are tested one by one, down to the
 * first node that has one (which covers the rest of the list). */
static void test_list_with_index(void **state)
{
    (void)state;
    pool p = pool_new((size_t)1 << 20);
    gr_vseen node[6];
    const gr_vseen *list = NULL;
    for (int i = 0; i < 4; i++) { /* as gr_feed builds them: 10..13 */
        node[i].next = list;
        node[i].h = 10 + (uint64_t)i;
        node[i].idx = gr_hset_add(list ? list->idx : NULL, node[i].h, pool_alloc, &p);
        assert_non_null(node[i].idx);
        list = &node[i];
    }
    for (int i = 4; i < 6; i++) { /* as a completion pushes them: 14, 15 */
        node[i].next = list;
        node[i].h = 10 + (uint64_t)i;
        node[i].idx = NULL;
        list = &node[i];
    }
    for (uint64_t h = 0; h < 20; h++)
        assert_int_equal(gr_vseen_has(list, h), h >= 10 && h < 16);
    assert_false(gr_vseen_has(NULL, 10));
    /* the older list does not see the newer hashes */
    assert_true(gr_vseen_has(&node[1], 11));
    assert_false(gr_vseen_has(&node[1], 12));
    free(p.b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_hashes),
        cmocka_unit_test(test_deep_paths),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_list_with_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
