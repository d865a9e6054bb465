/* sx_rpc_server: the prep threads -- everything about a request that does
 * not need the generator (parse, check, compile, build and tokenize the
 * prompt), so that the scheduler thread only ever steps the model.
 * A request whose constraint is not cached parks while it compiles (on the
 * schema cache's threads, merged with identical compiles in flight): no
 * prep thread waits on a compile, and idle prep threads answer parked
 * requests whose wait is over (deadline, --compile-timeout-ms, client
 * gone), every 50 ms, leaving their compile to the cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpc/server_internal.h"

/* A refused request still gets its id back when the JSON had one. */
static void salvage_id(rpc_job *j)
{
    json_t *root = json_loadb(j->body, j->body_len, 0, NULL);
    const json_t *id = json_object_get(root, "id");
    if (id && (json_is_string(id) || json_is_integer(id))) {
        j->req.root = root;
        j->req.id = id;
    } else {
        json_decref(root);
    }
}

static const char *constraint_at(const rpc_job *j)
{
    if (j->api == API_OPENAI)
        return j->req.constraint_at ? j->req.constraint_at : "/response_format";
    switch (j->req.mode) {
    case SX_RPC_SCHEMA: return "/schema";
    case SX_RPC_CHOICES: return "/choices";
    case SX_RPC_REGEX: return "/regex";
    default: return "/json_object";
    }
}

static int label_tokens(rpc_job *j, sx_error *err)
{
    sx_rpc_server *s = j->s;
    size_t n = j->req.n_choices;
    j->labels = calloc(n, sizeof *j->labels);
    if (!j->labels)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        /* the label exactly as the choices grammar writes it: a JSON string */
        json_t *str = json_string(j->req.choices[i]);
        char *text = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
        json_decref(str);
        if (!text)
            return sx_err_set(err, SX_ENOMEM, "out of memory");
        int rc = sx_tok_encode(s->tok, text, strlen(text), 0, &j->labels[i], err);
        free(text);
        if (rc)
            return rc;
        if ((rc = sx_ids_push(&j->labels[i], s->eot)))
            return sx_err_set(err, rc, "out of memory");
    }
    return SX_OK;
}

/* The compile a parked job waited for ended (a compile thread, no lock
 * held): the job goes back to the front of the prep queue. */
static void compile_done(sx_rpc_cache_wait *w, int how, const sx_rpc_compiled *e,
                         const sx_error *err)
{
    rpc_job *j = w->user;
    sx_rpc_server *s = j->s;
    pthread_mutex_lock(&s->mu);
    j->c_how = how;
    j->comp = e;
    if (err)
        j->c_err = *err;
    j->compiled = 1;
    if (j->parked) {
        j->parked = 0;
        s->n_parked--;
        j->qnext = s->prep_head;
        s->prep_head = j;
        if (!s->prep_tail)
            s->prep_tail = j;
        pthread_cond_signal(&s->prep_cv);
    }
    pthread_mutex_unlock(&s->mu);
}

/* A compile that gave up, or a parked job past its wait: `timeout` (or
 * `cancelled` when its client left). */
static void fail_compile_wait(sx_rpc_server *s, rpc_job *j, const char *why)
{
    char msg[512];
    if (j->cancel == CANCEL_CLIENT) {
        rpc_fail(j, SX_RPC_CANCELLED, "the client went away", NULL, NULL);
        return;
    }
    if (rpc_now_ms() >= j->deadline)
        snprintf(msg, sizeof msg,
                 "the deadline of %.3g s passed while the constraint was compiling%s%s",
                 (j->deadline - j->t_recv) / 1e3, why ? ": " : "", why ? why : "");
    else
        snprintf(msg, sizeof msg,
                 "the constraint's compile did not finish within this server's limit of %.0f ms "
                 "(--compile-timeout-ms)%s%s",
                 s->o.compile_timeout_ms, why ? ": " : "", why ? why : "");
    rpc_fail(j, SX_RPC_TIMEOUT, msg, constraint_at(j), NULL);
}

/* Returns 1 when the job was answered here. */
static int compile_result(sx_rpc_server *s, rpc_job *j)
{
    char ptr[600];
    switch (j->c_how) {
    case SX_RPC_CACHE_DONE:
        j->compile_ms = j->comp->compile_ms;
        return 0;
    case SX_RPC_CACHE_GAVE_UP:
        fail_compile_wait(s, j, j->c_err.msg);
        return 1;
    default:
        snprintf(ptr, sizeof ptr, "%s%s", constraint_at(j), j->c_err.pointer);
        rpc_fail(j, sx_rpc_code_of(SX_RPC_STAGE_COMPILE, j->c_err.code), j->c_err.msg, ptr, NULL);
        return 1;
    }
}

/* Everything after the compile.  Returns 1 when the job was answered here. */
static int prepare_rest(sx_rpc_server *s, rpc_job *j)
{
    sx_error err;
    int rc;
    sx_err_clear(&err);
    rc = sx_rpc_prompt_encode(s->tok, &j->req, &j->prompt, &j->prefix_len, &err);
    if (rc) {
        rpc_fail(j, sx_rpc_code_of(SX_RPC_STAGE_PARSE, rc), err.msg,
                 j->req.document ? "/document" : j->req.prompt ? "/prompt" : "/messages", NULL);
        return 1;
    }
    /* logit_bias names tokens of this model's vocabulary */
    for (int k = 0; k < j->req.sampling.n_bias; k++)
        if (j->req.sampling.bias_ids[k] >= sx_tok_vocab_size(s->tok)) {
            char msg[160], ptr[64];
            snprintf(msg, sizeof msg, "logit_bias: token %d is not in the vocabulary (%d tokens)",
                     (int)j->req.sampling.bias_ids[k], sx_tok_vocab_size(s->tok));
            snprintf(ptr, sizeof ptr, "/logit_bias/%d", (int)j->req.sampling.bias_ids[k]);
            rpc_fail(j, SX_RPC_BAD_REQUEST, msg, ptr, NULL);
            return 1;
        }
    /* the generator reserves prompt + max_tokens (+ slack) of KV cache */
    int64_t need = (int64_t)j->prompt.n + j->req.max_tokens + 32;
    if (need > s->kv_capacity) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the prompt (%zu tokens) plus max_tokens (%d) do not fit this server's KV cache "
                 "(%lld tokens)",
                 j->prompt.n, j->req.max_tokens, (long long)s->kv_capacity);
        rpc_fail(j, SX_RPC_TOO_LARGE, msg, j->req.document ? "/document" : "/messages", NULL);
        return 1;
    }
    if (j->req.mode == SX_RPC_CHOICES && j->req.scores && (rc = label_tokens(j, &err))) {
        rpc_fail(j, sx_rpc_code_of(SX_RPC_STAGE_PARSE, rc), err.msg, "/choices", NULL);
        return 1;
    }
    if (j->req.stream && j->via != VIA_HTTP) {
        /* an OpenAI request over nng (strux call --openai-batch): one message answers */
        rpc_fail(j, SX_RPC_BAD_REQUEST, "stream needs HTTP: over nng the answer is one message",
                 "/stream", NULL);
        return 1;
    }
    if (j->req.stream && j->via == VIA_HTTP && (rc = rpc_stream_start(j))) {
        rpc_fail(j, SX_RPC_INTERNAL, "cannot start the event stream", NULL, NULL);
        return 1;
    }
    j->t_prep1 = rpc_now_ms();
    return 0;
}

enum { PREP_READY, PREP_ANSWERED, PREP_PARKED };

/* Parse, then the constraint: cached, or the job parks until its compile
 * ends (compile_done) without holding this thread, so that requests whose
 * constraint is cached never wait behind a slow compile. */
static int prepare(sx_rpc_server *s, rpc_job *j)
{
    sx_error err;
    int rc;
    sx_err_clear(&err);
    j->t_prep0 = rpc_now_ms();
    if (j->api == API_OPENAI)
        rc = j->completions
                 ? sx_rpc_openai_completion_parse(j->body, j->body_len, &s->o.limits, &j->req, &err)
                 : sx_rpc_openai_parse(j->body, j->body_len, &s->o.limits, &j->req, &err);
    else
        rc = sx_rpc_req_parse(j->body, j->body_len, &s->o.limits, &j->req, &err);
    if (rc) {
        salvage_id(j);
        rpc_fail(j, sx_rpc_code_of(SX_RPC_STAGE_PARSE, rc), err.msg, err.pointer, NULL);
        return PREP_ANSWERED;
    }
    j->parsed = 1;
    free(j->body);
    j->body = NULL;
    if (j->req.timeout_s > 0)
        j->deadline = j->t_recv + j->req.timeout_s * 1e3;
    /* HTTP: hold the connection from here on, so that a client that leaves
     * cancels its request during the compile too (a streamed answer turns
     * the same connection into its event stream later) */
    if (j->via == VIA_HTTP && rpc_http_watch(j)) {
        rpc_fail(j, SX_RPC_INTERNAL, "cannot watch the connection", NULL, NULL);
        return PREP_ANSWERED;
    }
    if (j->req.mode == SX_RPC_TEXT)
        return prepare_rest(s, j) ? PREP_ANSWERED : PREP_READY;

    int how;
    j->cw.done = compile_done;
    j->cw.user = j;
    j->cw.deadline_ms = j->deadline;
    if ((rc = sx_rpc_cache_lookup(s->cache, &j->req, &j->cw, &j->comp, &how, &err))) {
        rpc_fail(j, SX_RPC_INTERNAL, err.msg, NULL, NULL);
        return PREP_ANSWERED;
    }
    if (how == SX_RPC_CACHE_BUSY) {
        rpc_fail(j, SX_RPC_OVERLOADED, err.msg, NULL, NULL);
        return PREP_ANSWERED;
    }
    if (how == SX_RPC_CACHE_HIT) {
        j->cache_hit = 1;
        return prepare_rest(s, j) ? PREP_ANSWERED : PREP_READY;
    }
    pthread_mutex_lock(&s->mu);
    if (!j->compiled) {
        double cap = rpc_now_ms() + s->o.compile_timeout_ms;
        j->park_deadline = cap < j->deadline ? cap : j->deadline;
        j->parked = 1;
        s->n_parked++;
        pthread_mutex_unlock(&s->mu);
        return PREP_PARKED;
    }
    pthread_mutex_unlock(&s->mu);
    /* the compile ended before the job could park */
    if (compile_result(s, j))
        return PREP_ANSWERED;
    return prepare_rest(s, j) ? PREP_ANSWERED : PREP_READY;
}

/* Under s->mu: parked jobs whose wait is over (deadline, compile limit,
 * client gone) leave their compile; they are answered by the caller
 * (outside the lock), linked through qnext. */
static rpc_job *expired_parked(sx_rpc_server *s)
{
    rpc_job *dead = NULL;
    if (!s->n_parked)
        return NULL;
    sx_rpc_cache_tick(s->cache); /* compiles past their deadline stop */
    double now = rpc_now_ms();
    for (rpc_job *j = s->jobs; j; j = j->next)
        if (j->parked && (j->cancel || now > j->park_deadline) &&
            sx_rpc_cache_drop(s->cache, &j->cw)) {
            j->parked = 0;
            s->n_parked--;
            j->qnext = dead;
            dead = j;
        }
    return dead;
}

void *rpc_prep_main(void *arg)
{
    sx_rpc_server *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        rpc_job *dead = expired_parked(s);
        if (dead) {
            pthread_mutex_unlock(&s->mu);
            while (dead) {
                rpc_job *j = dead;
                dead = j->qnext;
                j->qnext = NULL;
                fail_compile_wait(s, j, NULL);
            }
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if (!s->prep_head && !s->stop) {
            if (s->n_parked) {
                /* parked jobs are checked every 50 ms */
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 50 * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&s->prep_cv, &s->mu, &ts);
            } else {
                pthread_cond_wait(&s->prep_cv, &s->mu);
            }
            continue;
        }
        if (!s->prep_head)
            break;
        rpc_job *j = s->prep_head;
        s->prep_head = j->qnext;
        if (!s->prep_head)
            s->prep_tail = NULL;
        j->qnext = NULL;
        int resumed = j->compiled;
        pthread_mutex_unlock(&s->mu);
        int st;
        if (!resumed)
            st = prepare(s, j);
        else if (compile_result(s, j) || prepare_rest(s, j))
            st = PREP_ANSWERED;
        else
            st = PREP_READY;
        pthread_mutex_lock(&s->mu);
        if (st == PREP_READY) {
            if (s->run_tail)
                s->run_tail->qnext = j;
            else
                s->run_head = j;
            s->run_tail = j;
            pthread_cond_signal(&s->sched_cv);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
