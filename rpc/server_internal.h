/* Internals of sx_rpc_server (rpc/server.h), shared by server*.c and
 * metrics.c.  Locking: one server mutex (s->mu) guards the queues, the
 * job list, the counters and every job's `cancel`; a stream has its own
 * mutex, always taken after (never while holding) s->mu. */
#ifndef SX_RPC_SERVER_INTERNAL_H
#define SX_RPC_SERVER_INTERNAL_H

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <pthread.h>
#include <stdint.h>

#include "rpc/schema_cache.h"
#include "rpc/server.h"
#include "rpc/tool_stream.h"

enum { VIA_NNG, VIA_HTTP };
enum { API_NATIVE, API_OPENAI };
enum { CANCEL_NONE, CANCEL_CLIENT, CANCEL_DEADLINE };
/* where a job is counted: not yet accepted, waiting (prep or run queue),
 * in the generator */
enum { STAGE_NONE, STAGE_WAIT, STAGE_RUN };

/* ---- metrics -------------------------------------------------------------- */

#define RPC_HIST_MAX 20
typedef struct rpc_hist {
    const double *bounds;   /* upper bounds, ascending; +Inf is implicit */
    int           n;
    uint64_t      counts[RPC_HIST_MAX + 1];
    double        sum;
    uint64_t      count;
} rpc_hist;

typedef struct rpc_metrics {
    pthread_mutex_t mu;
    uint64_t requests[2][SX_RPC_CODE_COUNT]; /* [via][code] */
    uint64_t tok_prompt, tok_completion, tok_forced;
    uint64_t tok_prefilled;                  /* prompt tokens run, less the cached and forked */
    uint64_t steps;
    uint64_t recheck_failures;               /* outputs the validator refused: grammar bugs */
    sx_engine_lm_stats lm;                   /* the engine's, after the last step */
    int64_t  spec_drafted, spec_accepted;    /* the generator's, after the last step */
    sx_gen_prefix_stats prefix;              /* the generator's prefix cache, likewise */
    rpc_hist ttft, tpot, total, queue, batch;
} rpc_metrics;

/* Live values sampled when /metrics is read. */
typedef struct rpc_gauges {
    int     queued, running, inflight;
    int64_t kv_capacity;
    sx_rpc_cache_stats cache;
} rpc_gauges;

void rpc_metrics_init(rpc_metrics *m);
void rpc_metrics_destroy(rpc_metrics *m);
void rpc_hist_add(rpc_hist *h, double x);
void rpc_metrics_request(rpc_metrics *m, int via, int code, int n_prompt, int n_completion,
                         int n_forced, int n_prefilled, double queue_ms, double ttft_ms, double tpot_ms,
                         double total_ms);
/* An output the validator's re-check refused (answered `internal`). */
void rpc_metrics_recheck_failure(rpc_metrics *m);
/* lm: the engine's LM-head counters now, or NULL */
void rpc_metrics_step(rpc_metrics *m, int batch, const sx_engine_lm_stats *lm);
/* speculation counters after a step */
void rpc_metrics_spec(rpc_metrics *m, int64_t drafted, int64_t accepted);
/* prefix-cache counters after a step */
void rpc_metrics_prefix(rpc_metrics *m, const sx_gen_prefix_stats *st);
/* Prometheus text exposition format 0.0.4. */
int  rpc_metrics_render(rpc_metrics *m, const rpc_gauges *g, sx_bytes *out);

/* ---- HTTP event streams ----------------------------------------------------- */

typedef struct rpc_stream rpc_stream;

/* ---- requests --------------------------------------------------------------- */

typedef struct nng_worker nng_worker;

/* One generated sequence of a job.  A request with n choices runs n of
 * them over one prefill (greedy n > 1 runs one: the choices would all be
 * equal), each the generator's `user`.  Touched by the scheduler thread
 * only. */
typedef struct rpc_seq {
    struct rpc_job *job;
    int             index;         /* the choice it answers (0 .. n_seq-1) */
    int             handle;        /* in the generator */
    int             added;         /* in the generator (it ran a prefill) */
    int             live;          /* added; its final event has not come */
    int             finish;        /* sx_finish, once done */
    sx_bytes        text;
    json_t         *logprobs;
    sx_bytes        spans;         /* field_confidence: an sx_rpc_tok_span per token */
    json_t         *fields;        /* ... and the fields, once re-checked */
    json_t         *output;        /* re-checked output (NULL = null or not yet) */
    int             bad;           /* 0, or the code its re-check gave (internal, incomplete) */
    char            why[256];      /* ... and why */
    char            why_at[128];
    int             n_events;
    double          t_first, t_last;
    int             n_completion, n_forced, n_cached;
    /* thinking and tool calls in free text: where the parts of text are,
     * from the tokens that open and close them (server_sched.c) */
    int             phase;         /* RPC_PH_* */
    size_t          think_end;     /* thinking: where </think> starts (once past THINK) */
    size_t          content_end;   /* tool_choice auto: where the first <tool_call> starts */
    size_t          call_start;    /* ... where the open call's text starts */
    sx_bytes        calls;         /* ... closed calls: size_t pairs [start, end) of text */
    int             n_calls_sent;  /* ... streamed so far */
    /* streaming the open call (auto, or the forced one): its text read as
     * it grows; c_opened once its first chunk (id, type, name) went out,
     * after which its arguments go out in fragments; c_pending: arguments
     * read but not sent (written before the name) */
    sx_rpc_callscan cscan;
    int             c_opened;
    sx_bytes        c_pending;
} rpc_seq;

/* FREE: free text (tool_choice "auto": the answer's text, calls may open);
 * CALL: inside a call; ANSWER: thinking's answer after </think>; THINK:
 * the reasoning (where a thinking request starts). */
enum { RPC_PH_FREE = 0, RPC_PH_CALL, RPC_PH_ANSWER, RPC_PH_THINK };

typedef struct rpc_job {
    struct sx_rpc_server *s;
    int             via, api;
    int             completions;   /* API_OPENAI: POST /v1/completions (a raw prompt) */
    uint64_t        no;            /* server-wide request number */
    /* where the answer goes */
    nng_worker     *nw;            /* VIA_NNG */
    uint32_t        pipe;          /* VIA_NNG: the client's connection */
    nng_aio        *http_aio;      /* VIA_HTTP: the handler's aio until answered */
    nng_http_conn  *conn;          /* VIA_HTTP: its connection (hijacked to stream) */
    rpc_stream     *stream;        /* VIA_HTTP with stream: true, once started;
                                      or a watched plain answer (http_plain) */
    int             http_plain;    /* the stream carries one whole HTTP response */
    /* the request */
    char           *body;
    size_t          body_len;
    sx_rpc_req      req;
    int             parsed;
    const sx_rpc_compiled *comp;
    int             cache_hit;
    sx_ids          prompt;
    sx_ids         *labels;        /* CHOICES with scores: tokens of each label + end of turn */
    double         *scores;
    double         *beam_scores;   /* beam search: each returned sequence's score */
    sx_grammar     *best_only;     /* greedy CHOICES: the top-scored label alone */
    /* waiting for its compile (server_prep.c): parked, no thread held */
    sx_rpc_cache_wait cw;
    int             parked;        /* waiting on cw; under s->mu */
    int             compiled;      /* cw's done came: c_how, c_err (and comp); under s->mu */
    int             c_how;
    sx_error        c_err;
    double          park_deadline; /* answered `timeout` past it */
    /* running */
    int             running, cancel_sent;
    int             cancel;        /* CANCEL_*, under s->mu */
    double          t_recv, t_prep0, t_prep1, t_admit, t_first, deadline;
    double          compile_ms;
    rpc_seq        *seqs;          /* n_seq of them, from admission */
    int             n_seq, n_done;
    int             fail_code;     /* a sequence failed (generator error, cancel, add): */
    char            fail_msg[256]; /* the request's answer, once every sequence is done */
    int             stage;         /* STAGE_*, under s->mu */
    /* for the log and metrics: the prompt once, output summed over choices */
    int             n_prompt, n_completion, n_forced;
    int             prefix_len;    /* tokens of the system turn (shared prefix), 0 = none */
    int             n_cached;      /* prompt tokens not run: prefix cache, or forked */
    int             n_prefilled;   /* prompt tokens the generator ran, over all sequences */
    double          queue_ms, ttft_ms, tpot_ms, total_ms;
    const char     *finish;        /* finish_reason, for the log */
    uint32_t        sent_role;     /* streaming: bit i, choice i's first chunk went out */
    char            cid[48];       /* OpenAI completion id */
    long            created;
    /* list links */
    struct rpc_job *qnext;         /* prep or run queue */
    struct rpc_job *prev, *next;   /* all live jobs */
} rpc_job;

struct nng_worker {
    struct sx_rpc_server *s;
    nng_ctx         ctx;
    nng_aio        *aio;
    int             state;
};

struct sx_rpc_server {
    sx_rpc_server_opts  o;
    const sx_tokenizer *tok;
    const sx_vocab     *v;
    sx_rpc_backend     *be;
    sx_rpc_cache       *cache;
    int32_t             eot;           /* <|im_end|>, closes every label */
    int64_t             kv_capacity;

    pthread_mutex_t     mu;
    pthread_cond_t      prep_cv, sched_cv, idle_cv;
    rpc_job            *prep_head, *prep_tail, *run_head, *run_tail;
    rpc_job            *jobs;          /* every accepted, unanswered job */
    int                 n_waiting;     /* accepted, not yet in the generator */
    int                 n_running, n_inflight;
    int                 n_parked;      /* jobs waiting for a compile */
    double              step_t0;       /* when the step running now began; 0 = none */
    uint64_t            next_no;
    int                 draining, stop, broken, started;

    pthread_t          *prep_threads;
    int                 n_prep;
    pthread_t           sched;
    int                 sched_started;

    nng_socket          rep;
    int                 rep_open;
    nng_worker         *workers;
    int                 n_workers;
    nng_listener       *listeners;
    int                 n_listeners;

    nng_http_server    *http;
    int                 http_port;
    char                http_url[300];

    rpc_metrics         metrics;
};

double rpc_now_ms(void);

/* server.c: accepting and answering.  rpc_submit takes over `job`: it
 * queues it, or answers it at once (overloaded) and frees it. */
rpc_job *rpc_job_new(sx_rpc_server *s, int via, int api, char *body, size_t len);
void     rpc_submit(sx_rpc_server *s, rpc_job *job);
/* Answers with an error (code, message, JSON Pointer) and frees the job.
 * Must not be called with s->mu held. */
void     rpc_fail(rpc_job *job, int code, const char *msg, const char *pointer,
                  const json_t *extra);
/* Sends body (already the right format for the job's API) with status and
 * frees the job. */
void     rpc_answer(rpc_job *job, int code, const char *body, size_t len, const char *finish);
void     rpc_cancel_pipe(sx_rpc_server *s, uint32_t pipe);
/* The pipeline is stuck (GET /health answers "degraded", 503) when a
 * compile runs RPC_STUCK_COMPILE_MS past its deadline (the grammar does not
 * honour it), a compile has waited RPC_STUCK_QUEUE_MS to start (every
 * compile thread busy), or one generator step has run RPC_STUCK_STEP_MS.
 * Returns NULL, or why. */
#define RPC_STUCK_COMPILE_MS 1000.0
#define RPC_STUCK_QUEUE_MS   5000.0
#define RPC_STUCK_STEP_MS    60000.0
const char *rpc_stuck(sx_rpc_server *s, const sx_rpc_cache_stats *cs);

/* server_prep.c */
void    *rpc_prep_main(void *arg);
/* server_sched.c */
void    *rpc_sched_main(void *arg);
int      rpc_sched_bind(sx_rpc_server *s, sx_error *err);
/* server_nng.c */
int      rpc_nng_start(sx_rpc_server *s, sx_error *err);
void     rpc_nng_close_listeners(sx_rpc_server *s);
void     rpc_nng_stop(sx_rpc_server *s);
void     rpc_nng_reply(nng_worker *w, const char *body, size_t len);
/* server_http.c */
int      rpc_http_start(sx_rpc_server *s, sx_error *err);
void     rpc_http_stop(sx_rpc_server *s);
void     rpc_http_reply(nng_aio *aio, int status, const char *ctype, const char *body,
                        size_t len);
/* streams: start hijacks the job's connection and sends the headers; write
 * queues bytes; end flushes, closes and drops the job's reference. */
int      rpc_stream_start(rpc_job *job);
/* A non-streamed HTTP request: the connection is taken over too, so that a
 * client that goes away cancels its request (a pending read sees the
 * close); the answer is then written as a whole HTTP response. */
int      rpc_http_watch(rpc_job *job);
const char *rpc_http_reason(int status); /* "OK", "Not Found", ... */
void     rpc_stream_write(rpc_stream *st, const char *data, size_t len);
void     rpc_stream_end(rpc_stream *st);

#endif
