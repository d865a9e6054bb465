/* Paged KV cache: the block pool; its bookkeeping is engine/kv_pages.c. */
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
    if ((rc = sx_kvp_new(kv->n_blocks, block_tokens, max_seqs, kv->max_blocks_per_seq,
                         &kv->pages, err)))
        goto fail;
    return SX_OK;
fail:
    sx_kv_destroy(kv);
    return rc;
}

void sx_kv_destroy(sx_kv *kv)
{
    if (kv->pool)
        munmap(kv->pool, kv->pool_bytes);
    sx_kvp_free(kv->pages);
    memset(kv, 0, sizeof *kv);
}

int sx_kv_seq_live(const sx_kv *kv, int seq)
{
    return sx_kvp_seq_len(kv->pages, seq) >= 0;
}

int sx_kv_seq_new(sx_kv *kv, int *seq, sx_error *err)
{
    *seq = -1;
    return sx_kvp_seq_new(kv->pages, seq, err);
}

int sx_kv_seq_fork(sx_kv *kv, int src, int len, int *seq, sx_error *err)
{
    *seq = -1;
    return sx_kvp_seq_fork(kv->pages, src, len, seq, err);
}

int sx_kv_seq_truncate(sx_kv *kv, int seq, int len, sx_error *err)
{
    return sx_kvp_seq_truncate(kv->pages, seq, len, err);
}

void sx_kv_seq_free(sx_kv *kv, int seq)
{
    sx_kvp_seq_free(kv->pages, seq);
}

int sx_kv_blocks_needed(const sx_kv *kv, int seq, int n)
{
    return sx_kvp_blocks_needed(kv->pages, seq, n);
}

void sx_kv_prepare(sx_kv *kv, int seq, int n)
{
    int32_t src, dst;
    sx_kvp_prepare(kv->pages, seq, n, &src, &dst);
    if (src >= 0) {
        size_t bb = kv->block_elems * (size_t)kv->elem;
        memcpy(kv->pool + (size_t)dst * bb, kv->pool + (size_t)src * bb, bb);
    }
}
