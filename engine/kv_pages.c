/* Paged KV-cache bookkeeping for both backends (see kv_pages.h). */
#include "engine/kv_pages.h"

#include <stdlib.h>

typedef struct kvp_seq {
    int live;
    int len;      /* positions cached (committed) */
    int n_blocks; /* table entries in use: >= ceil(len / block_tokens) */
    int dirty_lo, dirty_hi;
} kvp_seq;

struct sx_kvp {
    int32_t  n_blocks;
    int      block_tokens, max_seqs, max_blocks;
    int32_t *refcnt;    /* [n_blocks] */
    int32_t *free_list; /* [n_blocks], a stack: recently freed blocks first */
    int32_t  n_free;
    int32_t *tables;    /* [max_seqs][max_blocks] */
    kvp_seq *seqs;      /* [max_seqs] */
};

int sx_kvp_new(int32_t n_blocks, int block_tokens, int max_seqs, int max_blocks, sx_kvp **out,
               sx_error *err)
{
    *out = NULL;
    if (n_blocks <= 0 || block_tokens <= 0 || max_seqs <= 0 || max_blocks <= 0 ||
        (int64_t)max_blocks * block_tokens > INT32_MAX ||
        (int64_t)n_blocks * block_tokens > INT32_MAX)
        return sx_err_set(err, SX_EINVAL,
                          "kv pages: bad geometry (%d blocks of %d tokens, %d seqs, %d blocks/seq)",
                          (int)n_blocks, block_tokens, max_seqs, max_blocks);
    sx_kvp *p = calloc(1, sizeof *p);
    if (!p)
        return sx_err_set(err, SX_ENOMEM, "kv pages: out of memory");
    p->n_blocks = n_blocks;
    p->block_tokens = block_tokens;
    p->max_seqs = max_seqs;
    p->max_blocks = max_blocks;
    p->refcnt = calloc((size_t)n_blocks, sizeof *p->refcnt);
    p->free_list = malloc((size_t)n_blocks * sizeof *p->free_list);
    p->tables = calloc((size_t)max_seqs * max_blocks, sizeof *p->tables);
    p->seqs = calloc((size_t)max_seqs, sizeof *p->seqs);
    if (!p->refcnt || !p->free_list || !p->tables || !p->seqs) {
        sx_kvp_free(p);
        return sx_err_set(err, SX_ENOMEM, "kv pages: out of memory for %d blocks, %d seqs",
                          (int)n_blocks, max_seqs);
    }
    /* pushed high to low so that block 0 is handed out first */
    for (int32_t b = n_blocks - 1; b >= 0; b--)
        p->free_list[p->n_free++] = b;
    *out = p;
    return SX_OK;
}

void sx_kvp_free(sx_kvp *p)
{
    if (!p)
        return;
    free(p->refcnt);
    free(p->free_list);
    free(p->tables);
    free(p->seqs);
    free(p);
}

static int32_t *row(const sx_kvp *p, int seq)
{
    return p->tables + (size_t)seq * p->max_blocks;
}

static int live(const sx_kvp *p, int seq)
{
    return seq >= 0 && seq < p->max_seqs && p->seqs[seq].live;
}

static void mark(kvp_seq *s, int lo, int hi)
{
    if (s->dirty_lo == s->dirty_hi) {
        s->dirty_lo = lo;
        s->dirty_hi = hi;
        return;
    }
    if (lo < s->dirty_lo)
        s->dirty_lo = lo;
    if (hi > s->dirty_hi)
        s->dirty_hi = hi;
}

static void release(sx_kvp *p, int32_t b)
{
    if (--p->refcnt[b] == 0)
        p->free_list[p->n_free++] = b;
}

static int32_t take(sx_kvp *p)
{
    int32_t b = p->free_list[--p->n_free];
    p->refcnt[b] = 1;
    return b;
}

int sx_kvp_seq_new(sx_kvp *p, int *seq, sx_error *err)
{
    for (int s = 0; s < p->max_seqs; s++)
        if (!p->seqs[s].live) {
            kvp_seq z = { .live = 1 };
            p->seqs[s] = z;
            *seq = s;
            return SX_OK;
        }
    return sx_err_set(err, SX_ELIMIT, "kv cache: all %d sequence slots are live", p->max_seqs);
}

int sx_kvp_seq_fork(sx_kvp *p, int src, int len, int *seq, sx_error *err)
{
    if (!live(p, src))
        return sx_err_set(err, SX_EINVAL, "fork: sequence %d is not live", src);
    if (len < 0 || len > p->seqs[src].len)
        return sx_err_set(err, SX_EINVAL, "fork: length %d outside 0..%d", len, p->seqs[src].len);
    int rc = sx_kvp_seq_new(p, seq, err);
    if (rc)
        return rc;
    int nb = (len + p->block_tokens - 1) / p->block_tokens;
    int32_t *from = row(p, src), *to = row(p, *seq);
    for (int i = 0; i < nb; i++) {
        to[i] = from[i];
        p->refcnt[to[i]]++;
    }
    kvp_seq *s = &p->seqs[*seq];
    s->len = len;
    s->n_blocks = nb;
    mark(s, 0, nb);
    return SX_OK;
}

int sx_kvp_seq_truncate(sx_kvp *p, int seq, int len, sx_error *err)
{
    if (!live(p, seq))
        return sx_err_set(err, SX_EINVAL, "truncate: sequence %d is not live", seq);
    kvp_seq *s = &p->seqs[seq];
    if (len < 0 || len > s->len)
        return sx_err_set(err, SX_EINVAL, "truncate: length %d outside 0..%d", len, s->len);
    int nb = (len + p->block_tokens - 1) / p->block_tokens;
    int32_t *r = row(p, seq);
    for (int i = nb; i < s->n_blocks; i++)
        release(p, r[i]);
    if (nb < s->n_blocks)
        s->n_blocks = nb;
    s->len = len;
    return SX_OK;
}

void sx_kvp_seq_free(sx_kvp *p, int seq)
{
    if (!p || !live(p, seq))
        return;
    kvp_seq *s = &p->seqs[seq];
    int32_t *r = row(p, seq);
    for (int i = 0; i < s->n_blocks; i++)
        release(p, r[i]);
    kvp_seq z = { 0 };
    *s = z;
}

int sx_kvp_seq_len(const sx_kvp *p, int seq)
{
    return p && live(p, seq) ? p->seqs[seq].len : -1;
}

int32_t sx_kvp_free_blocks(const sx_kvp *p)
{
    return p->n_free;
}

int sx_kvp_block_tokens(const sx_kvp *p)
{
    return p->block_tokens;
}

int64_t sx_kvp_max_len(const sx_kvp *p)
{
    return (int64_t)p->max_blocks * p->block_tokens;
}

/* The table entry holding position len, when it exists and is shared. */
static int shared_at_len(const sx_kvp *p, const kvp_seq *s, const int32_t *r)
{
    int i = s->len / p->block_tokens;
    return i < s->n_blocks && p->refcnt[r[i]] > 1 ? i : -1;
}

int sx_kvp_blocks_needed(const sx_kvp *p, int seq, int n)
{
    const kvp_seq *s = &p->seqs[seq];
    int64_t need = ((int64_t)s->len + n + p->block_tokens - 1) / p->block_tokens;
    int64_t fresh = need > s->n_blocks ? need - s->n_blocks : 0;
    return (int)fresh + (n > 0 && shared_at_len(p, s, row(p, seq)) >= 0);
}

void sx_kvp_prepare(sx_kvp *p, int seq, int n, int32_t *cow_src, int32_t *cow_dst)
{
    kvp_seq *s = &p->seqs[seq];
    int32_t *r = row(p, seq);
    *cow_src = *cow_dst = -1;
    if (n <= 0)
        return;
    int i = shared_at_len(p, s, r);
    if (i >= 0) {
        *cow_src = r[i];
        *cow_dst = take(p);
        p->refcnt[r[i]]--; /* still > 0: another sequence holds it */
        r[i] = *cow_dst;
        mark(s, i, i + 1);
    }
    int need = (int)(((int64_t)s->len + n + p->block_tokens - 1) / p->block_tokens);
    if (need > s->n_blocks) {
        for (int j = s->n_blocks; j < need; j++)
            r[j] = take(p);
        mark(s, s->n_blocks, need);
        s->n_blocks = need;
    }
}

void sx_kvp_commit(sx_kvp *p, int seq, int n)
{
    p->seqs[seq].len += n;
}

int32_t sx_kvp_slot(const sx_kvp *p, int seq, int pos)
{
    return row(p, seq)[pos / p->block_tokens] * p->block_tokens + pos % p->block_tokens;
}

int32_t *sx_kvp_tables(sx_kvp *p)
{
    return p->tables;
}

void sx_kvp_take_dirty(sx_kvp *p, int seq, int *lo, int *hi)
{
    kvp_seq *s = &p->seqs[seq];
    *lo = s->dirty_lo;
    *hi = s->dirty_hi;
    s->dirty_lo = s->dirty_hi = 0;
}
