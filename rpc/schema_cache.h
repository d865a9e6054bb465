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
 * Compiles in flight: a miss starts a compile ("flight") for its key; a
 * request for a key whose compile is already running or queued joins it as
 * another waiter instead of compiling again.  Flights run on their own
 * threads, at most `threads` at once (more wait in a queue), so a slow
 * compile never holds a request thread and never delays a request whose
 * constraint is cached.  Each compile runs with the grammar's deadline_ms
 * (the latest of its waiters' deadlines, capped at max_ms after its start)
 * and cancel flag (see below).  A waiter that gives up (its deadline, its client gone)
 * leaves with sx_rpc_cache_drop; a flight left with no waiter is
 * "abandoned": its cancel flag is set, it no longer counts against
 * `threads`, and its result, if it still finishes, is cached.  While
 * `max_abandoned` abandoned compiles still run, new compiles are refused
 * (SX_RPC_CACHE_BUSY) -- the bound on CPUs that departed requests can hold
 * (at most max_abandoned + threads).  A request for the key of an abandoned
 * flight takes it back (the cancel flag cleared); should the compile have
 * given up meanwhile, it is restarted for its waiters rather than handed to
 * them as an error.  A compile that gives up at its deadline or on cancel is
 * not an error of the schema and is never cached; other compile errors are
 * not cached either.
 *
 * Threads: every function may be called from any thread.  Compiles run
 * outside the lock, so a slow schema never blocks lookups.  A waiter's
 * `done` runs on the compile's thread with no cache lock held.
 *
 * The grammar is compiled with deadline_ms 0 and the deadline is delivered
 * through the cancel flag by sx_rpc_cache_tick: the grammar keeps both for
 * every matcher made from it (grammar.h), and a cached grammar must not
 * carry one request's deadline into the next (the flag is 0 again, and
 * lives as long as the grammar, once the compile is over).
 *
 * Ownership: the cache borrows the vocabulary (it must outlive the cache).
 * sx_rpc_cache_get hands out a reference that must be given back with
 * sx_rpc_cache_release; every reference must be released, and every waiter
 * answered or dropped, before sx_rpc_cache_free (which waits for compiles
 * still running). */
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
    /* compiles in flight */
    uint64_t merged;          /* requests that joined a compile already in flight */
    uint64_t gave_up;         /* compiles that stopped at a deadline or on cancel */
    uint64_t refused;         /* new compiles refused: too many abandoned ones */
    int      running, queued, abandoned;
    double   overdue_ms;      /* longest that a running compile is past its deadline (0: none) */
    double   queued_ms;       /* longest that a queued compile has waited to start */
} sx_rpc_cache_stats;

/* grammar options apply to every compile (they are part of what a cached
 * grammar means, so one cache serves one set of options). */
int  sx_rpc_cache_new(const sx_vocab *v, const sx_gr_opts *opts, size_t max_bytes,
                      sx_rpc_cache **out, sx_error *err);
void sx_rpc_cache_free(sx_rpc_cache *c);

/* Where compiles run: at most `threads` at once (default 2), at most
 * max_ms each (0: no cap), new ones refused while max_abandoned (default 4)
 * abandoned ones still run.  Before the first lookup. */
void sx_rpc_cache_set_compile(sx_rpc_cache *c, int threads, double max_ms, int max_abandoned);

/* The compiled constraint of r (mode != SX_RPC_TEXT), from the cache or
 * compiled now (*hit says which), waiting for the compile however long it
 * takes (no deadline).  Compile errors carry the error of the grammar
 * compiler or the validator, err->pointer relative to the schema (callers
 * prefix it with where the schema sits in their request); they are not
 * cached. */
int  sx_rpc_cache_get(sx_rpc_cache *c, const sx_rpc_req *r, const sx_rpc_compiled **out,
                      int *hit, sx_error *err);

/* How a compile a waiter waited for ended. */
enum {
    SX_RPC_CACHE_DONE,    /* compiled: e holds a reference for the waiter */
    SX_RPC_CACHE_FAILED,  /* a compile error of the constraint: err */
    SX_RPC_CACHE_GAVE_UP, /* stopped at its deadline or on cancel: err ("deadline" / "cancelled") */
};

/* A request waiting for a compile; the caller's memory (embed it in the
 * request), untouched by the cache once `done` has been called or
 * sx_rpc_cache_drop has returned 1. */
typedef struct sx_rpc_cache_wait {
    /* set by the caller: called exactly once (unless dropped), on the
     * compile's thread, no lock held; `e` (DONE only) is the waiter's
     * reference, released with sx_rpc_cache_release */
    void  (*done)(struct sx_rpc_cache_wait *w, int how, const sx_rpc_compiled *e,
                  const sx_error *err);
    void   *user;
    double  deadline_ms;  /* the waiter's deadline (CLOCK_MONOTONIC ms), 0 = none */
    /* the cache's */
    struct sx_rpc_cache_wait *next;
    void   *flight;
} sx_rpc_cache_wait;

/* What sx_rpc_cache_lookup did. */
enum {
    SX_RPC_CACHE_HIT,     /* *out: the cached constraint (a reference) */
    SX_RPC_CACHE_WAIT,    /* w waits for a compile (started or joined); `done` will tell */
    SX_RPC_CACHE_BUSY,    /* refused: too many abandoned compiles still run (err says so) */
};

/* Non-blocking: the cached constraint of r, or w joined to its compile.
 * *how: one of the three above.  Returns SX_OK or an allocation error. */
int  sx_rpc_cache_lookup(sx_rpc_cache *c, const sx_rpc_req *r, sx_rpc_cache_wait *w,
                         const sx_rpc_compiled **out, int *how, sx_error *err);
/* The waiter gives up.  1: it left its compile (done will not be called);
 * 0: done has been or is being called (the waiter still gets it). */
int  sx_rpc_cache_drop(sx_rpc_cache *c, sx_rpc_cache_wait *w);
/* Tells every running compile whose deadline has passed to stop (its
 * cancel flag).  Call every few tens of milliseconds while compiles run for
 * waiters (sx_rpc_cache_get does so itself while it waits). */
void sx_rpc_cache_tick(sx_rpc_cache *c);
/* Sets the cancel flag of every compile in flight and drops the queued
 * ones (they must have no waiters: call after the last request is
 * answered), then waits up to wait_ms for the running ones to end.
 * Returns how many still run (a grammar that does not honour the flag);
 * sx_rpc_cache_free waits for them. */
int  sx_rpc_cache_quiesce(sx_rpc_cache *c, double wait_ms);

void sx_rpc_cache_release(sx_rpc_cache *c, const sx_rpc_compiled *e);

void sx_rpc_cache_stats_get(sx_rpc_cache *c, sx_rpc_cache_stats *s);

/* The 64-bit hash the cache files r's constraint under (mode and canonical
 * text): a stable name for a schema in logs, the same for every layout and
 * key order of it. */
uint64_t sx_rpc_key_hash(const sx_rpc_req *r);

#endif
