/* sx_rpc_cache: compiled constraints (grammar + validator), shared by every
 * request that sends the same schema.
 *
 * Keyed by the request's mode and canonical constraint text (sx_rpc_req.key:
 * compact JSON with sorted keys, so layout and key order do not matter),
 * found through a 64-bit FNV-1a hash and confirmed by comparing the text.
 * Bounded by bytes: each entry is charged the grammar's sx_gr_mem_bytes
 * plus its key and an estimate for the validator (8 bytes per key byte);
 * the least recently used entries are evicted past the bound.  Entries are
 * reference-counted: an evicted entry that a request still holds stays alive
 * until that request releases it, so eviction never pulls a grammar out from
 * under a running sequence.
 *
 * Threads: every function may be called from any thread.  Compiles run
 * outside the lock, so a slow schema never blocks lookups; two threads
 * missing on the same key at once both compile and the second result is
 * dropped in favour of the first.
 *
 * Ownership: the cache borrows the vocabulary (it must outlive the cache).
 * sx_rpc_cache_get hands out a reference that must be given back with
 * sx_rpc_cache_release; every reference must be released before
 * sx_rpc_cache_free. */
#ifndef SX_RPC_SCHEMA_CACHE_H
#define SX_RPC_SCHEMA_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"
#include "grammar/grammar.h"
#include "grammar/validator/validator.h"
#include "grammar/vocab/vocab.h"
#include "rpc/protocol.h"

typedef struct sx_rpc_cache sx_rpc_cache;

/* What a request uses; read-only for holders. */
typedef struct sx_rpc_compiled {
    int           mode;       /* sx_rpc_mode */
    sx_grammar   *grammar;
    sx_validator *validator;  /* SCHEMA mode only, else NULL */
    size_t        bytes;      /* what the entry is charged */
    double        compile_ms; /* time its compile took */
} sx_rpc_compiled;

typedef struct sx_rpc_cache_stats {
    uint64_t hits, misses, evictions, compile_errors;
    size_t   entries, bytes, max_bytes;
    size_t   pinned_evicted;  /* evicted entries still held by requests */
} sx_rpc_cache_stats;

/* grammar options apply to every compile (they are part of what a cached
 * grammar means, so one cache serves one set of options). */
int  sx_rpc_cache_new(const sx_vocab *v, const sx_gr_opts *opts, size_t max_bytes,
                      sx_rpc_cache **out, sx_error *err);
void sx_rpc_cache_free(sx_rpc_cache *c);

/* The compiled constraint of r (mode != SX_RPC_TEXT), from the cache or
 * compiled now (*hit says which).  Compile errors carry the error of the
 * grammar compiler or the validator, err->pointer relative to the schema
 * (callers prefix it with where the schema sits in their request); they
 * are not cached. */
int  sx_rpc_cache_get(sx_rpc_cache *c, const sx_rpc_req *r, const sx_rpc_compiled **out,
                      int *hit, sx_error *err);
void sx_rpc_cache_release(sx_rpc_cache *c, const sx_rpc_compiled *e);

void sx_rpc_cache_stats_get(sx_rpc_cache *c, sx_rpc_cache_stats *s);

/* The 64-bit hash the cache files r's constraint under (mode and canonical
 * text): a stable name for a schema in logs, the same for every layout and
 * key order of it. */
uint64_t sx_rpc_key_hash(const sx_rpc_req *r);

#endif
