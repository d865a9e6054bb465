/* The paged-KV bookkeeping both backends share (engine/kv_pages.c), without a GPU:
 * a pool of token ids stands in for the cache contents, and the copies that
 * sx_kvp_prepare asks for are done on it, so every sequence must read back
 * exactly the tokens it appended, through forks, truncations and frees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_pages.h"

enum { NB = 40, BT = 4, SEQS = 6, MAXB = 12 };

typedef struct model {
    sx_kvp *p;
    int32_t pool[NB * BT];     /* "cache contents": a token per slot */
    int32_t want[SEQS][MAXB * BT];
    int     len[SEQS], live[SEQS];
    int32_t dev[SEQS][MAXB];   /* the device copy of the tables, via take_dirty */
} model;

static void upload(model *m, int s)
{
    int lo, hi;
    sx_kvp_take_dirty(m->p, s, &lo, &hi);
    assert_true(lo >= 0 && hi <= MAXB && lo <= hi);
    const int32_t *t = sx_kvp_tables(m->p) + (size_t)s * MAXB;
    for (int i = lo; i < hi; i++)
        m->dev[s][i] = t[i];
}

/* Appends n tokens to s as the engine does; 0, or SX_ELIMIT with no change. */
static int append(model *m, int s, int n, int32_t first_tok)
{
    if (m->len[s] + n > MAXB * BT)
        return SX_ELIMIT;
    int need = sx_kvp_blocks_needed(m->p, s, n);
    if (need > sx_kvp_free_blocks(m->p))
        return SX_ELIMIT;
    int32_t before = sx_kvp_free_blocks(m->p), src, dst;
    sx_kvp_prepare(m->p, s, n, &src, &dst);
    assert_int_equal(before - sx_kvp_free_blocks(m->p), need);
    if (src >= 0) {
        assert_true(dst >= 0 && dst != src);
        memcpy(m->pool + dst * BT, m->pool + src * BT, BT * sizeof(int32_t));
    }
    upload(m, s);
    for (int j = 0; j < n; j++) {
        int pos = m->len[s] + j;
        int32_t slot = sx_kvp_slot(m->p, s, pos);
        /* what a kernel computes from the device table must agree */
        assert_int_equal(slot, m->dev[s][pos / BT] * BT + pos % BT);
        m->pool[slot] = first_tok + j;
        m->want[s][pos] = first_tok + j;
    }
    sx_kvp_commit(m->p, s, n);
    m->len[s] += n;
    return SX_OK;
}

static void check(model *m)
{
    /* every live sequence reads back its tokens through the device tables */
    for (int s = 0; s < SEQS; s++) {
        assert_int_equal(sx_kvp_seq_len(m->p, s), m->live[s] ? m->len[s] : -1);
        if (!m->live[s])
            continue;
        upload(m, s);
        for (int pos = 0; pos < m->len[s]; pos++)
            assert_int_equal(m->pool[m->dev[s][pos / BT] * BT + pos % BT], m->want[s][pos]);
    }
    /* blocks in use by someone + free blocks = all blocks */
    int used[NB] = { 0 }, n_used = 0;
    const int32_t *t = sx_kvp_tables(m->p);
    for (int s = 0; s < SEQS; s++)
        for (int i = 0; m->live[s] && i < (m->len[s] + BT - 1) / BT; i++)
            if (!used[t[s * MAXB + i]]++)
                n_used++;
    assert_int_equal(n_used + sx_kvp_free_blocks(m->p), NB);
}

static void fork_shares_and_copies_on_write(void **state)
{
    (void)state;
    model m;
    memset(&m, 0, sizeof m);
    sx_error err;
    assert_int_equal(sx_kvp_new(NB, BT, SEQS, MAXB, &m.p, &err), SX_OK);
    int a, b;
    assert_int_equal(sx_kvp_seq_new(m.p, &a, &err), SX_OK);
    m.live[a] = 1;
    assert_int_equal(append(&m, a, 10, 100), SX_OK); /* 3 blocks, the last half full */
    assert_int_equal(sx_kvp_free_blocks(m.p), NB - 3);
    assert_int_equal(sx_kvp_seq_fork(m.p, a, 10, &b, &err), SX_OK);
    m.live[b] = 1;
    m.len[b] = 10;
    memcpy(m.want[b], m.want[a], sizeof m.want[a]);
    assert_int_equal(sx_kvp_free_blocks(m.p), NB - 3); /* shared, not copied */
    check(&m);
    /* b writes position 10, inside the shared third block: one copy */
    assert_int_equal(sx_kvp_blocks_needed(m.p, b, 1), 1);
    assert_int_equal(append(&m, b, 1, 500), SX_OK);
    assert_int_equal(sx_kvp_free_blocks(m.p), NB - 4);
    /* a's block is now its own again: no copy for a */
    assert_int_equal(sx_kvp_blocks_needed(m.p, a, 2), 0);
    assert_int_equal(append(&m, a, 2, 200), SX_OK);
    check(&m);
    /* fork at a block boundary shares whole blocks only */
    int c;
    assert_int_equal(sx_kvp_seq_fork(m.p, a, 8, &c, &err), SX_OK);
    m.live[c] = 1;
    m.len[c] = 8;
    memcpy(m.want[c], m.want[a], sizeof m.want[a]);
    assert_int_equal(sx_kvp_blocks_needed(m.p, c, 1), 1); /* fresh block, no copy */
    assert_int_equal(append(&m, c, 1, 300), SX_OK);
    check(&m);
    /* truncate into a shared block, then write: copy-on-write again */
    assert_int_equal(sx_kvp_seq_truncate(m.p, a, 6, &err), SX_OK);
    m.len[a] = 6;
    assert_int_equal(sx_kvp_blocks_needed(m.p, a, 1), 1);
    assert_int_equal(append(&m, a, 1, 600), SX_OK);
    check(&m);
    /* errors */
    assert_int_equal(sx_kvp_seq_fork(m.p, a, 8, &c, &err), SX_EINVAL); /* longer than a */
    assert_int_equal(sx_kvp_seq_fork(m.p, 5, 0, &c, &err), SX_EINVAL); /* not live */
    assert_int_equal(sx_kvp_seq_truncate(m.p, b, 12, &err), SX_EINVAL);
    assert_int_equal(sx_kvp_seq_truncate(m.p, -1, 0, &err), SX_EINVAL);
    for (int s = 0; s < SEQS; s++)
        if (m.live[s]) {
            sx_kvp_seq_free(m.p, s);
            m.live[s] = 0;
        }
    sx_kvp_seq_free(m.p, 0); /* twice: ignored */
    assert_int_equal(sx_kvp_free_blocks(m.p), NB);
    sx_kvp_free(m.p);
}

static void slots_run_out_cleanly(void **state)
{
    (void)state;
    sx_kvp *p;
    sx_error err;
    int s;
    assert_int_equal(sx_kvp_new(0, BT, SEQS, MAXB, &p, &err), SX_EINVAL);
    assert_int_equal(sx_kvp_new(NB, BT, 2, MAXB, &p, &err), SX_OK);
    assert_int_equal(sx_kvp_seq_new(p, &s, &err), SX_OK);
    assert_int_equal(sx_kvp_seq_new(p, &s, &err), SX_OK);
    assert_int_equal(sx_kvp_seq_new(p, &s, &err), SX_ELIMIT);
    assert_int_equal(sx_kvp_max_len(p), MAXB * BT);
    sx_kvp_free(p);
}

/* Random operations against the model above. */
static void random_operations_keep_contents(void **state)
{
    (void)state;
    model m;
    memset(&m, 0, sizeof m);
    sx_error err;
    assert_int_equal(sx_kvp_new(NB, BT, SEQS, MAXB, &m.p, &err), SX_OK);
    uint32_t r = 12345;
    int32_t tok = 1;
    int full = 0;
    for (int step = 0; step < 20000; step++) {
        r = r * 1103515245u + 12345u;
        int op = (r >> 16) % 10, s = (r >> 8) % SEQS;
        if (op < 5 && m.live[s]) {
            int n = 1 + (r >> 20) % 7;
            int rc = append(&m, s, n, tok);
            tok += n;
            full += rc == SX_ELIMIT;
        } else if (op == 5) {
            int t;
            if (sx_kvp_seq_new(m.p, &t, &err) == SX_OK) {
                assert_false(m.live[t]);
                m.live[t] = 1;
                m.len[t] = 0;
            }
        } else if (op == 6 && m.live[s]) {
            int t, len = m.len[s] ? (int)((r >> 20) % (m.len[s] + 1)) : 0;
            if (sx_kvp_seq_fork(m.p, s, len, &t, &err) == SX_OK) {
                m.live[t] = 1;
                m.len[t] = len;
                memcpy(m.want[t], m.want[s], sizeof m.want[s]);
            }
        } else if (op == 7 && m.live[s]) {
            int len = m.len[s] ? (int)((r >> 20) % (m.len[s] + 1)) : 0;
            assert_int_equal(sx_kvp_seq_truncate(m.p, s, len, &err), SX_OK);
            m.len[s] = len;
        } else if (op == 8 && m.live[s]) {
            sx_kvp_seq_free(m.p, s);
            m.live[s] = 0;
        }
        check(&m);
    }
    assert_true(full > 0); /* the cache did fill up along the way */
    sx_kvp_free(m.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fork_shares_and_copies_on_write),
        cmocka_unit_test(slots_run_out_cleanly),
        cmocka_unit_test(random_operations_keep_contents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
