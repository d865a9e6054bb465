/* Paged KV cache: block pool, free list, per-sequence block tables. */
#include "engine/cpu/kv_cache_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int sx_kv_init(sx_kv *kv, int n_layers, int n_kv_heads, int head_dim, int max_seqs,
               int64_t capacity_tokens, int block_tokens, int max_len, int elem, sx_error *err)
{
    memset(kv, 0, sizeof *kv);
    if ((elem != 2 && elem != 4) || n_layers <= 0 || n_kv_heads <= 0 || head_dim <= 0 || max_seqs <= 0 ||
        block_tokens <= 0 || capacity_tokens < block_tokens)
        return sx_err_set(err, SX_EINVAL,
                          "kv cache: bad shape (layers %d, kv heads %d, head_dim %d, seqs %d, "
                          "tokens %lld, block %d)", n_layers, n_kv_heads, head_dim, max_seqs,
                          (long long)capacity_tokens, block_tokens);
    int64_t nb = capacity_tokens / block_tokens;
    if (nb > INT32_MAX / 2)
        return sx_err_set(err, SX_ELIMIT, "kv cache: %lld blocks is too many", (long long)nb);
    kv->n_layers = n_layers;
    kv->n_kv_heads = n_kv_heads;
    kv->head_dim = head_dim;
    kv->block_tokens = block_tokens;
    kv->max_seqs = max_seqs;
    kv->n_blocks = (int32_t)nb;
    int64_t per_seq = nb;
    if (max_len > 0 && (max_len + (int64_t)block_tokens - 1) / block_tokens < per_seq)
        per_seq = (max_len + (int64_t)block_tokens - 1) / block_tokens;
    kv->max_blocks_per_seq = (int)per_seq;
    kv->elem = elem;
    kv->block_elems = (size_t)n_layers * n_kv_heads * 2 * block_tokens * head_dim;
    kv->pool_bytes = kv->block_elems * (size_t)elem * (size_t)nb;
    if (kv->pool_bytes / (size_t)elem / (size_t)nb != kv->block_elems)
        return sx_err_set(err, SX_ELIMIT, "kv cache: size overflows");
    int rc;
    void *p = mmap(NULL, kv->pool_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        kv->pool = NULL;
        rc = sx_err_set(err, SX_ENOMEM, "kv cache: cannot reserve %zu bytes", kv->pool_bytes);
        goto fail;
    }
    kv->pool = p;
    (void)madvise(p, kv->pool_bytes, MADV_HUGEPAGE);   /* fewer TLB misses in attention */
    kv->refcnt = calloc((size_t)nb, sizeof *kv->refcnt);
    kv->free_list = malloc((size_t)nb * sizeof *kv->free_list);
    kv->tables = malloc((size_t)max_seqs * (size_t)per_seq * sizeof *kv->tables);
    kv->seqs = calloc((size_t)max_seqs, sizeof *kv->seqs);
    if (!kv->refcnt || !kv->free_list || !kv->tables || !kv->seqs) {
        rc = sx_err_set(err, SX_ENOMEM, "kv cache: out of memory");
        goto fail;
    }
    /* block 0 on top of the stack */
    for (int32_t i = 0; i < kv->n_blocks; i++)
        kv->free_list[i] = kv->n_blocks - 1 - i;
    kv->n_free = kv->n_blocks;
    for (int s = 0; s < max_seqs; s++)
        kv->seqs[s].blocks = kv->tables + (size_t)s * (size_t)per_seq;
    return SX_OK;
fail:
    sx_kv_destroy(kv);
    return rc;
}

void sx_kv_destroy(sx_kv *kv)
{
    if (kv->pool)
        munmap(kv->pool, kv->pool_bytes);
    free(kv->refcnt);
    free(kv->free_list);
    free(kv->tables);
    free(kv->seqs);
    memset(kv, 0, sizeof *kv);
}

static int32_t block_take(sx_kv *kv)
{
    int32_t b = kv->free_list[--kv->n_free];
    kv->refcnt[b] = 1;
    return b;
}

static void block_drop(sx_kv *kv, int32_t b)
{
    if (--kv->refcnt[b] == 0)
        kv->free_list[kv->n_free++] = b;
}

int sx_kv_seq_live(const sx_kv *kv, int seq)
{
    return seq >= 0 && seq < kv->max_seqs && kv->seqs[seq].live;
}

static int seq_slot(sx_kv *kv, int *seq, sx_error *err)
{
    for (int s = 0; s < kv->max_seqs; s++)
        if (!kv->seqs[s].live) {
            kv->seqs[s].live = 1;
            kv->seqs[s].len = 0;
            kv->seqs[s].n_blocks = 0;
            *seq = s;
            return SX_OK;
        }
    return sx_err_set(err, SX_ELIMIT, "kv cache: all %d sequence slots are live", kv->max_seqs);
}

int sx_kv_seq_new(sx_kv *kv, int *seq, sx_error *err)
{
    *seq = -1;
    return seq_slot(kv, seq, err);
}

int sx_kv_seq_fork(sx_kv *kv, int src, int len, int *seq, sx_error *err)
{
    *seq = -1;
    if (!sx_kv_seq_live(kv, src))
        return sx_err_set(err, SX_EINVAL, "fork: sequence %d is not live", src);
    if (len < 0 || len > kv->seqs[src].len)
        return sx_err_set(err, SX_EINVAL, "fork: length %d outside 0..%d", len, kv->seqs[src].len);
    int rc = seq_slot(kv, seq, err);
    if (rc)
        return rc;
    sx_kv_seq *d = &kv->seqs[*seq];
    const sx_kv_seq *s = &kv->seqs[src];
    int nb = (len + kv->block_tokens - 1) / kv->block_tokens;
    for (int i = 0; i < nb; i++) {
        d->blocks[i] = s->blocks[i];
        kv->refcnt[s->blocks[i]]++;
    }
    d->n_blocks = nb;
    d->len = len;
    return SX_OK;
}

int sx_kv_seq_truncate(sx_kv *kv, int seq, int len, sx_error *err)
{
    if (!sx_kv_seq_live(kv, seq))
        return sx_err_set(err, SX_EINVAL, "truncate: sequence %d is not live", seq);
    sx_kv_seq *s = &kv->seqs[seq];
    if (len < 0 || len > s->len)
        return sx_err_set(err, SX_EINVAL, "truncate: length %d outside 0..%d", len, s->len);
    int nb = (len + kv->block_tokens - 1) / kv->block_tokens;
    while (s->n_blocks > nb)
        block_drop(kv, s->blocks[--s->n_blocks]);
    s->len = len;
    return SX_OK;
}

void sx_kv_seq_free(sx_kv *kv, int seq)
{
    if (!sx_kv_seq_live(kv, seq))
        return;
    sx_kv_seq *s = &kv->seqs[seq];
    while (s->n_blocks > 0)
        block_drop(kv, s->blocks[--s->n_blocks]);
    s->live = 0;
    s->len = 0;
}

int sx_kv_blocks_needed(const sx_kv *kv, int seq, int n)
{
    const sx_kv_seq *s = &kv->seqs[seq];
    int64_t end = (int64_t)s->len + n;
    int64_t need = (end + kv->block_tokens - 1) / kv->block_tokens - s->n_blocks;
    if (need < 0)
        need = 0;
    if (n > 0 && s->len % kv->block_tokens != 0 && kv->refcnt[s->blocks[s->n_blocks - 1]] > 1)
        need++;
    return need > INT32_MAX ? INT32_MAX : (int)need;
}

void sx_kv_prepare(sx_kv *kv, int seq, int n)
{
    sx_kv_seq *s = &kv->seqs[seq];
    if (n > 0 && s->len % kv->block_tokens != 0) {
        int32_t old = s->blocks[s->n_blocks - 1];
        if (kv->refcnt[old] > 1) {
            int32_t b = block_take(kv);
            size_t bb = kv->block_elems * (size_t)kv->elem;
            memcpy(kv->pool + (size_t)b * bb, kv->pool + (size_t)old * bb, bb);
            block_drop(kv, old);
            s->blocks[s->n_blocks - 1] = b;
        }
    }
    int need = (int)(((int64_t)s->len + n + kv->block_tokens - 1) / kv->block_tokens);
    while (s->n_blocks < need)
        s->blocks[s->n_blocks++] = block_take(kv);
}
