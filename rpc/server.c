/* sx_rpc_server: life cycle, admission into the queue, and answering. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpc/server_internal.h"

double rpc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void sx_rpc_server_opts_default(sx_rpc_server_opts *o)
{
    memset(o, 0, sizeof *o);
    sx_rpc_limits_default(&o->limits);
    o->model_name = "strux";
    o->max_queue = 1024;
    o->max_running = 32;
    o->prep_threads = 2;
    o->compile_threads = 2;
    o->compile_timeout_ms = 20000;
    o->max_abandoned_compiles = 4;
    o->cache_bytes = 64u << 20;
    o->default_timeout_s = 300;
    sx_gr_opts_default(&o->gr);
}

int sx_rpc_server_new(const sx_rpc_server_opts *o, const sx_tokenizer *tok, const sx_vocab *v,
                      sx_rpc_backend *backend, sx_rpc_server **out, sx_error *err)
{
    *out = NULL;
    if (!o || !tok || !v || !backend || !backend->ops)
        return sx_err_set(err, SX_EINVAL, "server: options, tokenizer, vocabulary and backend "
                                          "are required");
    if (o->n_listen <= 0 && !o->http)
        return sx_err_set(err, SX_EINVAL, "server: nothing to listen on");
    sx_rpc_server *s = calloc(1, sizeof *s);
    if (!s)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    s->o = *o;
    if (s->o.max_queue <= 0)
        s->o.max_queue = 1024;
    if (s->o.max_running <= 0)
        s->o.max_running = 32;
    if (s->o.prep_threads <= 0)
        s->o.prep_threads = 2;
    if (s->o.compile_threads <= 0)
        s->o.compile_threads = 2;
    if (s->o.compile_timeout_ms <= 0)
        s->o.compile_timeout_ms = 20000;
    if (s->o.max_abandoned_compiles <= 0)
        s->o.max_abandoned_compiles = 4;
    if (s->o.default_timeout_s <= 0)
        s->o.default_timeout_s = 300;
    if (!s->o.model_name)
        s->o.model_name = "strux";
    if (!s->o.gr.max_nodes)
        sx_gr_opts_default(&s->o.gr);
    s->tok = tok;
    s->v = v;
    s->be = backend;
    s->eot = sx_tok_find(tok, "<|im_end|>", 10);
    s->kv_capacity = backend->ops->kv_capacity(backend->b);
    s->http_port = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->prep_cv, NULL);
    pthread_cond_init(&s->sched_cv, NULL);
    pthread_cond_init(&s->idle_cv, NULL);
    rpc_metrics_init(&s->metrics);
    int rc = sx_rpc_cache_new(v, &s->o.gr, s->o.cache_bytes ? s->o.cache_bytes : 64u << 20,
                              &s->cache, err);
    if (rc) {
        sx_rpc_server_free(s);
        return rc;
    }
    sx_rpc_cache_set_compile(s->cache, s->o.compile_threads, s->o.compile_timeout_ms,
                             s->o.max_abandoned_compiles);
    *out = s;
    return SX_OK;
}

int sx_rpc_server_start(sx_rpc_server *s, sx_error *err)
{
    int rc;
    if ((rc = rpc_sched_bind(s, err)))
        return rc;
    s->prep_threads = calloc((size_t)s->o.prep_threads, sizeof *s->prep_threads);
    if (!s->prep_threads)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    for (; s->n_prep < s->o.prep_threads; s->n_prep++)
        if (pthread_create(&s->prep_threads[s->n_prep], NULL, rpc_prep_main, s)) {
            rc = sx_err_set(err, SX_EINTERNAL, "cannot start a prep thread");
            goto fail;
        }
    if (pthread_create(&s->sched, NULL, rpc_sched_main, s)) {
        rc = sx_err_set(err, SX_EINTERNAL, "cannot start the scheduler thread");
        goto fail;
    }
    s->sched_started = 1;
    if ((s->o.n_listen > 0 && (rc = rpc_nng_start(s, err))) ||
        (s->o.http && (rc = rpc_http_start(s, err))))
        goto fail;
    s->started = 1;
    return SX_OK;
fail:
    rpc_http_stop(s);
    rpc_nng_stop(s);
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->prep_cv);
    pthread_cond_broadcast(&s->sched_cv);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sx_rpc_server_http_port(const sx_rpc_server *s)
{
    return s->http_port;
}

void sx_rpc_server_drain(sx_rpc_server *s)
{
    pthread_mutex_lock(&s->mu);
    s->draining = 1;
    while (s->n_inflight > 0)
        pthread_cond_wait(&s->idle_cv, &s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->prep_cv);
    pthread_cond_broadcast(&s->sched_cv);
    pthread_mutex_unlock(&s->mu);
    /* every request is answered: compiles still running (abandoned by
     * requests that timed out) are cancelled */
    sx_rpc_cache_quiesce(s->cache, 0);
}

int sx_rpc_server_compiles_left(sx_rpc_server *s, double wait_ms)
{
    return sx_rpc_cache_quiesce(s->cache, wait_ms);
}

void sx_rpc_server_free(sx_rpc_server *s)
{
    if (!s)
        return;
    if (s->started)
        sx_rpc_server_drain(s);
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->prep_cv);
    pthread_cond_broadcast(&s->sched_cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->n_prep; i++)
        pthread_join(s->prep_threads[i], NULL);
    if (s->sched_started)
        pthread_join(s->sched, NULL);
    rpc_http_stop(s);
    rpc_nng_stop(s);
    free(s->prep_threads);
    sx_rpc_cache_free(s->cache);
    rpc_metrics_destroy(&s->metrics);
    pthread_cond_destroy(&s->prep_cv);
    pthread_cond_destroy(&s->sched_cv);
    pthread_cond_destroy(&s->idle_cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ---- jobs ------------------------------------------------------------------ */

rpc_job *rpc_job_new(sx_rpc_server *s, int via, int api, char *body, size_t len)
{
    rpc_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->s = s;
    j->via = via;
    j->api = api;
    j->body = body;
    j->body_len = len;
    j->t_recv = rpc_now_ms();
    j->deadline = j->t_recv + s->o.default_timeout_s * 1e3;
    j->created = (long)time(NULL);
    return j;
}

static void job_free(rpc_job *j)
{
    if (j->comp)
        sx_rpc_cache_release(j->s->cache, j->comp);
    if (j->labels) {
        for (size_t i = 0; i < j->req.n_choices; i++)
            sx_ids_free(&j->labels[i]);
        free(j->labels);
    }
    sx_rpc_req_free(&j->req);
    sx_ids_free(&j->prompt);
    for (int i = 0; i < j->n_seq; i++) {
        sx_bytes_free(&j->seqs[i].text);
        json_decref(j->seqs[i].logprobs);
        sx_bytes_free(&j->seqs[i].spans);
        sx_bytes_free(&j->seqs[i].calls);
        sx_bytes_free(&j->seqs[i].c_pending);
        json_decref(j->seqs[i].fields);
        json_decref(j->seqs[i].output);
    }
    free(j->seqs);
    free(j->scores);
    free(j->beam_scores);
    sx_gr_free(j->best_only);
    free(j->body);
    free(j);
}

void rpc_submit(sx_rpc_server *s, rpc_job *j)
{
    pthread_mutex_lock(&s->mu);
    j->no = ++s->next_no;
    const char *why = NULL;
    if (s->draining || s->stop)
        why = "the server is shutting down";
    else if (s->broken)
        why = "the generator failed; the server must be restarted";
    else if (s->n_waiting >= s->o.max_queue)
        why = "the request queue is full";
    if (why) {
        pthread_mutex_unlock(&s->mu);
        rpc_fail(j, s->broken ? SX_RPC_INTERNAL : SX_RPC_OVERLOADED, why, NULL, NULL);
        return;
    }
    j->stage = STAGE_WAIT;
    s->n_waiting++;
    s->n_inflight++;
    j->next = s->jobs;
    if (s->jobs)
        s->jobs->prev = j;
    s->jobs = j;
    if (s->prep_tail)
        s->prep_tail->qnext = j;
    else
        s->prep_head = j;
    s->prep_tail = j;
    pthread_cond_signal(&s->prep_cv);
    pthread_mutex_unlock(&s->mu);
}

void rpc_cancel_pipe(sx_rpc_server *s, uint32_t pipe)
{
    pthread_mutex_lock(&s->mu);
    for (rpc_job *j = s->jobs; j; j = j->next)
        if (j->via == VIA_NNG && j->pipe == pipe && !j->cancel)
            j->cancel = CANCEL_CLIENT;
    pthread_cond_signal(&s->sched_cv);
    pthread_cond_broadcast(&s->prep_cv); /* a parked job leaves its compile */
    pthread_mutex_unlock(&s->mu);
}

const char *rpc_stuck(sx_rpc_server *s, const sx_rpc_cache_stats *cs)
{
    if (cs->overdue_ms > RPC_STUCK_COMPILE_MS)
        return "a compile has run past its deadline";
    if (cs->queued_ms > RPC_STUCK_QUEUE_MS)
        return "every compile thread is busy: compiles wait to start";
    pthread_mutex_lock(&s->mu);
    double t0 = s->step_t0;
    pthread_mutex_unlock(&s->mu);
    if (t0 > 0 && rpc_now_ms() - t0 > RPC_STUCK_STEP_MS)
        return "a generator step has run for over a minute";
    return NULL;
}

static void log_line(rpc_job *j, int code)
{
    FILE *f = j->s->o.log;
    if (!f)
        return;
    char id[80] = "-";
    if (j->req.id) {
        char *t = json_dumps(j->req.id, JSON_COMPACT | JSON_ENCODE_ANY);
        if (t)
            snprintf(id, sizeof id, "%.70s", t);
        free(t);
    }
    char n[16] = "";
    if (j->req.n > 1)
        snprintf(n, sizeof n, " n=%d", j->req.n);
    fprintf(f,
            "struxd: req=%llu id=%s via=%s%s mode=%s%s status=%s finish=%s prompt=%d "
            "completion=%d forced=%d cached=%d queue_ms=%.1f ttft_ms=%.1f total_ms=%.1f\n",
            (unsigned long long)j->no, id, j->via == VIA_NNG ? "nng" : "http",
            j->api == API_OPENAI ? "/openai" : "", sx_rpc_mode_name(j->req.mode), n,
            sx_rpc_code_name(code), j->finish ? j->finish : "-", j->n_prompt, j->n_completion,
            j->n_forced, j->n_cached, j->queue_ms, j->ttft_ms, j->total_ms);
    fflush(f);
}

void rpc_answer(rpc_job *j, int code, const char *body, size_t len, const char *finish)
{
    sx_rpc_server *s = j->s;
    if (!j->finish)
        j->finish = finish;
    if (!j->total_ms)
        j->total_ms = rpc_now_ms() - j->t_recv;
    /* counted before the answer leaves, so a client that reads /metrics
     * right after its answer sees it */
    int cancelled = j->cancel == CANCEL_CLIENT;
    log_line(j, cancelled && code != SX_RPC_OK ? SX_RPC_CANCELLED : code);
    rpc_metrics_request(&s->metrics, j->via, cancelled && code != SX_RPC_OK ? SX_RPC_CANCELLED : code,
                        j->n_prompt, j->n_completion, j->n_forced, j->n_prefilled,
                        j->queue_ms, j->ttft_ms,
                        j->tpot_ms, j->total_ms);
    if (j->via == VIA_NNG) {
        rpc_nng_reply(j->nw, body, len);
    } else if (j->stream) {
        if (j->http_plain) {
            int st = sx_rpc_http_status(code);
            char head[256];
            int hn = snprintf(head, sizeof head,
                              "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                              "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                              st, rpc_http_reason(st), len);
            rpc_stream_write(j->stream, head, (size_t)hn);
        }
        rpc_stream_write(j->stream, body, len);
        pthread_mutex_lock(&s->mu);
        rpc_stream *st = j->stream;
        j->stream = NULL;
        pthread_mutex_unlock(&s->mu);
        rpc_stream_end(st);
    } else if (j->http_aio) {
        rpc_http_reply(j->http_aio, sx_rpc_http_status(code), "application/json", body, len);
        j->http_aio = NULL;
    }
    pthread_mutex_lock(&s->mu);
    if (j->stage != STAGE_NONE) {
        if (j->stage == STAGE_WAIT)
            s->n_waiting--;
        else
            s->n_running--;
        if (j->prev)
            j->prev->next = j->next;
        else
            s->jobs = j->next;
        if (j->next)
            j->next->prev = j->prev;
        s->n_inflight--;
        pthread_cond_broadcast(&s->idle_cv);
        pthread_cond_signal(&s->sched_cv);
    }
    pthread_mutex_unlock(&s->mu);
    job_free(j);
}

void rpc_fail(rpc_job *j, int code, const char *msg, const char *pointer, const json_t *extra)
{
    char *body = NULL;
    size_t len = 0;
    int rc;
    if (j->api == API_OPENAI) {
        char *e = NULL;
        size_t n = 0;
        rc = sx_rpc_openai_error_dump(code, msg, pointer, &e, &n);
        if (!rc && j->stream && !j->http_plain) {
            /* mid-stream: an error event, then the end of the stream */
            body = malloc(n + 32);
            if (body)
                len = (size_t)snprintf(body, n + 32, "data: %s\n\ndata: [DONE]\n\n", e);
            free(e);
        } else {
            body = e;
            len = n;
        }
    } else {
        rc = sx_rpc_error_dump(j->req.id, code, msg, pointer, extra, &body, &len);
    }
    if (rc || !body) {
        /* out of memory: still answer, with a fixed body */
        free(body);
        body = NULL;
        static const char oom[] = "{\"ok\":false,\"error\":{\"code\":\"internal\",\"message\":"
                                  "\"out of memory\"}}";
        rpc_answer(j, SX_RPC_INTERNAL, oom, sizeof oom - 1, NULL);
        return;
    }
    rpc_answer(j, code, body, len, NULL);
    free(body);
}
