/* sx_rpc_server: strux's service -- nng REQ/REP (tcp://, ipc://) and an
 * OpenAI-compatible HTTP server in front of one generator.
 *
 * The path of a request:
 *   receive (nng context callback or HTTP handler) -> bounded queue (full:
 *   `overloaded` at once) -> a prep thread parses and checks it, finds the
 *   constraint in the schema cache or parks the request (holding no thread)
 *   until its compile, on the cache's compile threads, ends or its wait is
 *   over (`timeout`), and tokenizes the prompt -> the
 *   scheduler thread, the only one that touches the generator, admits it into
 *   the running batch between steps, steps, routes each event back to its
 *   request and sends the response.
 * Every request gets exactly one answer (or, over HTTP streaming, one event
 * stream) and is logged in one line.
 *
 * The generator sits behind sx_rpc_backend so that the server can run over
 * the real engine (sx_rpc_gen_backend_new) or over anything else with the
 * same contract (tests use a grammar-only stand-in).
 *
 * Ownership: the server borrows the tokenizer, the vocabulary and the
 * backend (all must outlive it).  sx_rpc_server_free stops everything and
 * answers what is still queued with `overloaded`. */
#ifndef SX_RPC_SERVER_H
#define SX_RPC_SERVER_H

#include <stdint.h>
#include <stdio.h>

#include "common/sx_error.h"
#include "engine/beam.h"
#include "engine/backend.h"
#include "engine/generate.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/grammar.h"
#include "grammar/vocab/vocab.h"
#include "rpc/protocol.h"

/* The generator contract, modelled on sx_gen (engine/generate.h): requests
 * are added and cancelled between steps, events come through the callback
 * given to bind, from inside step, on the scheduler thread.  All calls come
 * from that one thread. */
typedef struct sx_rpc_backend_ops {
    int     (*bind)(void *b, sx_gen_cb cb, void *cb_ctx, sx_error *err);
    int     (*add)(void *b, const int32_t *prompt, int n_prompt, const sx_gen_params *p,
                   void *user, int *handle, sx_error *err);
    void    (*cancel)(void *b, int handle);
    int     (*step)(void *b, int *n_live, sx_error *err);
    /* log-probabilities of whole continuations after a prompt: logp[i] =
     * sum of log p(labels[i] token j | prompt, labels[i] tokens < j).  The
     * first prefix_len prompt tokens are a shared prefix (0 = none) whose
     * cache may be reused. */
    int     (*score)(void *b, const int32_t *prompt, int n_prompt, int prefix_len,
                     const sx_ids *labels, size_t n_labels, double *logp, sx_error *err);
    /* beam search over a prompt (engine/beam.h; the backend sets the end
     * tokens), run to the end in the call; NULL when the backend has none */
    int     (*beam)(void *b, const int32_t *prompt, int n_prompt, const sx_beam_params *p,
                    sx_beam_result *out, sx_error *err);
    int64_t (*kv_capacity)(void *b); /* tokens the cache holds in all */
    /* the engine's LM-head counters (engine.h); NULL when there are none */
    void    (*lm_stats)(void *b, sx_engine_lm_stats *out);
    void    (*free)(void *b);
    /* speculation counters (sx_gen_spec_stats); NULL when there are none */
    void    (*spec_stats)(void *b, int64_t *drafted, int64_t *accepted);
    /* prefix-cache counters (sx_gen_prefix_stats_get); NULL when there are none */
    void    (*prefix_stats)(void *b, sx_gen_prefix_stats *out);
} sx_rpc_backend_ops;

typedef struct sx_rpc_backend {
    const sx_rpc_backend_ops *ops;
    void                     *b;
} sx_rpc_backend;

/* The real backend: an sx_gen over `e` (created at bind).  It borrows the
 * engine and tokenizer; sx_rpc_backend_free releases what it made. */
int  sx_rpc_gen_backend_new(sx_backend *e, const sx_tokenizer *tok, const sx_gen_opts *opts,
                            sx_rpc_backend *out, sx_error *err);
void sx_rpc_backend_free(sx_rpc_backend *b);
/* The draft model of speculate "draft" for the real backend (before the
 * server starts; sx_gen_set_draft).  Borrowed: it must outlive b. */
int  sx_rpc_gen_backend_set_draft(sx_rpc_backend *b, sx_backend *draft, sx_error *err);

/* Exact label scoring on the engine: the prompt is prefilled once into a
 * sequence (chunks of `chunk` tokens), each label is run on a fork that
 * shares the prompt's cache blocks, and logp[i] sums the model's
 * log-softmax over each label token (rows at or past vocab_valid excluded).
 * `base`: -1, or a sequence already holding the first n_base (< n_prompt)
 * prompt tokens, which the call takes over.  Sequences are freed before
 * returning. */
int  sx_rpc_score_labels(sx_backend *e, int vocab_valid, const int32_t *prompt, int n_prompt,
                         int base, int n_base, const sx_ids *labels, size_t n_labels, int chunk,
                         double *logp, sx_error *err);

typedef struct sx_rpc_server_opts {
    const char *const *listen;      /* nng URLs (tcp://host:port, ipc:///path) */
    int                n_listen;
    const char        *http;        /* "host:port" for HTTP, NULL = none */
    const char        *model_name;  /* shown by /v1/models and in responses */
    const char        *api_key;     /* HTTP: every route but /health needs "Authorization:
                                     * Bearer KEY" (401 otherwise); NULL = open.  Kept,
                                     * not copied: it must outlive the server */
    sx_rpc_limits      limits;
    int                max_queue;   /* requests waiting (default 1024) */
    int                max_running; /* requests in the generator at once (default 32) */
    int                prep_threads;/* parse/tokenize threads (default 2) */
    /* Compiles run on their own threads (schema_cache.h): at most
     * compile_threads at once (default 2), each stopped at the request's
     * deadline or after compile_timeout_ms (default 20000), whichever is
     * first; a request whose compile is not done by then is answered
     * `timeout`.  New compiles are refused (`overloaded`) while
     * max_abandoned_compiles (default 4) compiles whose requests gave up
     * still run. */
    int                compile_threads;
    double             compile_timeout_ms;
    int                max_abandoned_compiles;
    size_t             cache_bytes; /* compiled-schema cache bound (default 64 MiB) */
    double             default_timeout_s; /* when a request gives none (default 300) */
    sx_gr_opts         gr;          /* grammar options (zero = sx_gr_opts_default) */
    FILE              *log;         /* one line per request; NULL = silent */
    /* Speculative decoding, opt-in: the mode of requests that do not say
     * (sx_gen_speculate; 0 = off, and then requests may not ask for it),
     * and the tokens drafted per step (0 = 4). */
    int                speculate;
    int                draft_k;
} sx_rpc_server_opts;

void sx_rpc_server_opts_default(sx_rpc_server_opts *o);

typedef struct sx_rpc_server sx_rpc_server;

int  sx_rpc_server_new(const sx_rpc_server_opts *o, const sx_tokenizer *tok, const sx_vocab *v,
                       sx_rpc_backend *backend, sx_rpc_server **out, sx_error *err);
/* Binds every address and starts the threads; on error nothing listens. */
int  sx_rpc_server_start(sx_rpc_server *s, sx_error *err);
/* The HTTP port actually bound (useful with port 0), or -1. */
int  sx_rpc_server_http_port(const sx_rpc_server *s);
/* The TCP port the i-th --listen address bound (useful with port 0), or -1
 * when it is not a tcp:// address or not listening. */
int  sx_rpc_server_listen_port(const sx_rpc_server *s, int i);
/* Graceful stop: new requests are refused with `overloaded`, the ones
 * already accepted run to completion (or to their deadline) and are
 * answered; returns when none is left, after cancelling the compiles that
 * still run. */
void sx_rpc_server_drain(sx_rpc_server *s);
/* After drain: waits up to wait_ms for compiles still running (cancelled by
 * drain) and returns how many are left.  sx_rpc_server_free waits for them
 * however long they take; a process that cannot wait (a grammar that does
 * not honour the cancel flag) may exit without freeing instead. */
int  sx_rpc_server_compiles_left(sx_rpc_server *s, double wait_ms);
void sx_rpc_server_free(sx_rpc_server *s);

#endif
