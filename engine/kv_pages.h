/* sx_kvp: the bookkeeping of a paged KV cache, one module for both backends:
 * the CPU engine's (engine/cpu/kv_cache.c) and the GPU engine's
 * (engine/cuda/engine_cuda*.cu).  Plain C, unit-tested without either
 * (tests/unit/test_kv_pages.c).  Each backend keeps its own block memory and
 * does the copies this module asks for.
 *
 * The cache is a pool of n_blocks blocks of block_tokens positions; it knows
 * nothing of their contents.  Each live sequence has a block table (logical
 * block i -> pool block) of at most max_blocks entries, stored in one
 * [max_seqs][max_blocks] int32 array (the GPU engine mirrors it on the device;
 * the CPU engine reads it in place).
 * Blocks are refcounted: fork shares the source's blocks, and a sequence
 * about to write into a shared block is first given a private copy (the
 * engine copies the block's contents, as sx_kvp_prepare asks).  Which table
 * entries changed since the engine last uploaded them is tracked per
 * sequence (the CPU engine never asks).
 *
 * Ownership: sx_kvp_new allocates, sx_kvp_free releases.  Not thread-safe. */
#ifndef SX_KV_PAGES_H
#define SX_KV_PAGES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "common/sx_error.h"

typedef struct sx_kvp sx_kvp;

int  sx_kvp_new(int32_t n_blocks, int block_tokens, int max_seqs, int max_blocks, sx_kvp **out,
                sx_error *err);
void sx_kvp_free(sx_kvp *p);

/* Same contracts as sx_engine_seq_* (engine/cpu/engine.h): SX_ELIMIT when every
 * slot is live, SX_EINVAL for a dead sequence or a length out of range. */
int  sx_kvp_seq_new(sx_kvp *p, int *seq, sx_error *err);
int  sx_kvp_seq_fork(sx_kvp *p, int src, int len, int *seq, sx_error *err);
int  sx_kvp_seq_truncate(sx_kvp *p, int seq, int len, sx_error *err);
void sx_kvp_seq_free(sx_kvp *p, int seq);
int  sx_kvp_seq_len(const sx_kvp *p, int seq); /* -1 when not live */

int32_t sx_kvp_free_blocks(const sx_kvp *p);
int     sx_kvp_block_tokens(const sx_kvp *p);
/* Longest sequence the tables can describe: max_blocks * block_tokens. */
int64_t sx_kvp_max_len(const sx_kvp *p);

/* Pool blocks (fresh ones plus a copy-on-write copy) that appending n
 * positions to a live seq would take. */
int  sx_kvp_blocks_needed(const sx_kvp *p, int seq, int n);
/* Makes positions [len, len+n) of seq writable.  When the block holding
 * position len is shared it is replaced by a fresh one, and *cow_src /
 * *cow_dst name the pool blocks whose contents the caller must copy
 * (both -1 otherwise).  The caller has checked sx_kvp_blocks_needed against
 * sx_kvp_free_blocks and the length against sx_kvp_max_len; len itself does
 * not change until sx_kvp_commit. */
void sx_kvp_prepare(sx_kvp *p, int seq, int n, int32_t *cow_src, int32_t *cow_dst);
void sx_kvp_commit(sx_kvp *p, int seq, int n);

/* Cache slot of a prepared position: block * block_tokens + pos % block_tokens. */
int32_t sx_kvp_slot(const sx_kvp *p, int seq, int pos);

/* The [max_seqs][max_blocks] tables (entries past a sequence's blocks are
 * stale).  take_dirty gives the entries [*lo, *hi) of seq's row written since
 * the last take_dirty for it (lo == hi: none) and forgets them. */
int32_t *sx_kvp_tables(sx_kvp *p);
void     sx_kvp_take_dirty(sx_kvp *p, int seq, int *lo, int *hi);

#ifdef __cplusplus
}
#endif

#endif
