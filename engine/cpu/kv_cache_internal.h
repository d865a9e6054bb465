/* sx_kv: the paged KV cache behind sx_engine (internal).
 *
 * Memory is one pool of fixed-size blocks; a block holds block_tokens
 * consecutive positions of one sequence for every layer, laid out
 * [layer][kv_head][K|V] in f32 or bf16 (elem bytes), keys transposed ([head_dim][block_tokens]) and
 * values as rows ([block_tokens][head_dim]), so attention scores a block's
 * keys with one vector per head_dim element and adds values row by row.  The
 * bookkeeping -- block tables (logical block i -> pool block), reference
 * counts, copy-on-write, the LIFO free list that reuses recently touched
 * memory first -- is the GPU engine's too: engine/kv_pages.h.  This file
 * keeps the memory (reserved address space, so untouched blocks cost no RAM)
 * and does the copies it asks for.
 *
 * Ownership: sx_kv_init allocates everything, sx_kv_destroy releases it.
 * Not thread-safe; block contents are written by the forward pass's threads
 * at positions sx_kv_prepare reserved. */
#ifndef SX_KV_CACHE_INTERNAL_H
#define SX_KV_CACHE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "common/sx_error.h"
#include "engine/kv_pages.h"

typedef struct sx_kv {
    int       n_layers, n_kv_heads, head_dim, block_tokens;
    int       max_seqs, max_blocks_per_seq;
    int32_t   n_blocks;
    int       elem;           /* bytes per element: 4 (f32) or 2 (bf16) */
    size_t    block_elems;    /* elements per block */
    unsigned char *pool;
    size_t    pool_bytes;
    sx_kvp   *pages;          /* tables, reference counts, free list */
} sx_kv;

/* max_len: the longest sequence allowed (0 = limited by capacity only);
 * elem: 4 for an f32 cache, 2 for bf16. */
int  sx_kv_init(sx_kv *kv, int n_layers, int n_kv_heads, int head_dim, int max_seqs,
                int64_t capacity_tokens, int block_tokens, int max_len, int elem, sx_error *err);
void sx_kv_destroy(sx_kv *kv);

int  sx_kv_seq_new(sx_kv *kv, int *seq, sx_error *err);
int  sx_kv_seq_fork(sx_kv *kv, int src, int len, int *seq, sx_error *err);
int  sx_kv_seq_truncate(sx_kv *kv, int seq, int len, sx_error *err);
void sx_kv_seq_free(sx_kv *kv, int seq);
int  sx_kv_seq_live(const sx_kv *kv, int seq);

/* Blocks (new ones plus copy-on-write copies) that appending n positions to
 * seq would take. */
int  sx_kv_blocks_needed(const sx_kv *kv, int seq, int n);
/* Makes positions [len, len+n) of seq writable: copies a shared partial
 * last block and appends fresh blocks.  The caller has checked
 * sx_kv_blocks_needed against sx_kv_free_blocks; len itself changes only
 * with sx_kv_commit, after the pass wrote the positions. */
void sx_kv_prepare(sx_kv *kv, int seq, int n);

static inline void sx_kv_commit(sx_kv *kv, int seq, int n)
{
    sx_kvp_commit(kv->pages, seq, n);
}

/* positions cached in a live seq */
static inline int sx_kv_len(const sx_kv *kv, int seq)
{
    return sx_kvp_seq_len(kv->pages, seq);
}

static inline int32_t sx_kv_free_blocks(const sx_kv *kv)
{
    return sx_kvp_free_blocks(kv->pages);
}

/* seq's block table: logical block i -> pool block */
static inline const int32_t *sx_kv_blocks(const sx_kv *kv, int seq)
{
    return sx_kvp_tables(kv->pages) + (size_t)seq * (size_t)kv->max_blocks_per_seq;
}

/* K^T of a block for one layer and kv head, as float (f32 cache) or
 * uint16_t (bf16) elements; V follows block_tokens*head_dim elements on. */
static inline void *sx_kv_k(const sx_kv *kv, int32_t block, int layer, int kvh)
{
    return kv->pool + ((size_t)block * kv->block_elems +
                       ((size_t)layer * kv->n_kv_heads + kvh) * 2 * kv->block_tokens * kv->head_dim) *
                          (size_t)kv->elem;
}

#endif
