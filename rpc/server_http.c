/* sx_rpc_server: HTTP routes on nng's HTTP server.
 *   POST /v1/chat/completions  OpenAI-compatible (JSON or server-sent events)
 *   POST /v1/strux             the native protocol (docs/PROTOCOL.md) over HTTP
 *   GET  /v1/models, /health, /metrics
 * POST handlers hand their aio to a job.  Once the request is parsed the
 * job takes the connection over (hijack): a streaming answer writes its
 * events itself, in order, one write in flight at a time; a plain answer
 * is one whole response written the same way, and meanwhile a pending read
 * sees the client leave, which cancels the request. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/server_internal.h"

void rpc_http_reply(nng_aio *aio, int status, const char *ctype, const char *body, size_t len)
{
    nng_http_res *res = NULL;
    if (nng_http_res_alloc(&res) || nng_http_res_set_status(res, (uint16_t)status) ||
        nng_http_res_set_header(res, "Content-Type", ctype) ||
        nng_http_res_copy_data(res, body, len)) {
        if (res)
            nng_http_res_free(res);
        nng_aio_finish(aio, NNG_ENOMEM);
        return;
    }
    nng_aio_set_output(aio, 0, res);
    nng_aio_finish(aio, 0);
}

static sx_rpc_server *server_of(nng_aio *aio)
{
    return nng_http_handler_get_data(nng_aio_get_input(aio, 1));
}

static void handle_post(nng_aio *aio, int api)
{
    sx_rpc_server *s = server_of(aio);
    nng_http_req *req = nng_aio_get_input(aio, 0);
    void *data = NULL;
    size_t len = 0;
    nng_http_req_get_data(req, &data, &len);
    char *body = malloc(len + 1);
    rpc_job *j = body ? rpc_job_new(s, VIA_HTTP, api, body, len) : NULL;
    if (!j) {
        free(body);
        static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"code\":\"internal\"}}";
        rpc_http_reply(aio, 500, "application/json", oom, sizeof oom - 1);
        return;
    }
    if (len)
        memcpy(body, data, len);
    body[len] = 0;
    j->http_aio = aio;
    j->conn = nng_aio_get_input(aio, 2);
    rpc_submit(s, j);
}

static void h_chat(nng_aio *aio)
{
    handle_post(aio, API_OPENAI);
}

static void h_native(nng_aio *aio)
{
    handle_post(aio, API_NATIVE);
}

static void h_models(nng_aio *aio)
{
    sx_rpc_server *s = server_of(aio);
    json_t *o = json_pack("{s:s, s:[{s:s, s:s, s:i, s:s}]}", "object", "list", "data", "id",
                          s->o.model_name, "object", "model", "created", 0, "owned_by", "strux");
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!t) {
        nng_aio_finish(aio, NNG_ENOMEM);
        return;
    }
    rpc_http_reply(aio, 200, "application/json", t, strlen(t));
    free(t);
}

static void gauges(sx_rpc_server *s, rpc_gauges *g, const char **status)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_lock(&s->mu);
    g->queued = s->n_waiting;
    g->running = s->n_running;
    g->inflight = s->n_inflight;
    *status = s->broken ? "broken" : s->draining ? "draining" : "ok";
    pthread_mutex_unlock(&s->mu);
    g->kv_capacity = s->kv_capacity;
    sx_rpc_cache_stats_get(s->cache, &g->cache);
}

static void h_health(nng_aio *aio)
{
    sx_rpc_server *s = server_of(aio);
    rpc_gauges g;
    const char *status;
    gauges(s, &g, &status);
    json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:I}", "status", status, "model",
                          s->o.model_name, "queued", g.queued, "running", g.running,
                          "kv_capacity_tokens", (json_int_t)g.kv_capacity);
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!t) {
        nng_aio_finish(aio, NNG_ENOMEM);
        return;
    }
    rpc_http_reply(aio, strcmp(status, "ok") ? 503 : 200, "application/json", t, strlen(t));
    free(t);
}

static void h_metrics(nng_aio *aio)
{
    sx_rpc_server *s = server_of(aio);
    rpc_gauges g;
    const char *status;
    gauges(s, &g, &status);
    sx_bytes out = {0};
    if (rpc_metrics_render(&s->metrics, &g, &out)) {
        sx_bytes_free(&out);
        nng_aio_finish(aio, NNG_ENOMEM);
        return;
    }
    rpc_http_reply(aio, 200, "text/plain; version=0.0.4; charset=utf-8", out.v, out.n);
    sx_bytes_free(&out);
}

static void h_other(nng_aio *aio);

static const struct route {
    const char *path, *method;
    void (*cb)(nng_aio *);
} routes[] = {
    {"/v1/chat/completions", "POST", h_chat},
    {"/v1/strux", "POST", h_native},
    {"/v1/models", "GET", h_models},
    {"/health", "GET", h_health},
    {"/metrics", "GET", h_metrics},
};

/* Every other path and method (a tree handler on "/", which nng tries
 * after the exact routes): a JSON error in OpenAI's shape, never nng's
 * HTML page, so a client pointed at the wrong route learns why.  Any body
 * is left unread, so the connection closes after the answer. */
static void h_other(nng_aio *aio)
{
    nng_http_req *req = nng_aio_get_input(aio, 0);
    const char *method = nng_http_req_get_method(req), *uri = nng_http_req_get_uri(req);
    size_t plen = strcspn(uri, "?");
    const char *allow = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strlen(routes[i].path) == plen && !strncmp(uri, routes[i].path, plen))
            allow = routes[i].method;
    char msg[400];
    if (allow)
        snprintf(msg, sizeof msg, "%.*s takes %s, not %.20s", (int)(plen > 200 ? 200 : plen), uri,
                 allow, method);
    else
        snprintf(msg, sizeof msg,
                 "no route %.20s %.*s (strux serves POST /v1/chat/completions, POST /v1/strux, "
                 "GET /v1/models, GET /health, GET /metrics)",
                 method, (int)(plen > 200 ? 200 : plen), uri);
    json_t *m = json_string(msg);
    json_t *o = json_pack("{s:{s:o, s:s, s:n, s:s}}", "error", "message",
                          m ? m : json_string("no such route"), "type", "invalid_request_error",
                          "param", "code", allow ? "method_not_allowed" : "not_found");
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    nng_http_res *res = NULL;
    if (!t || nng_http_res_alloc(&res) ||
        nng_http_res_set_status(res, allow ? 405 : 404) ||
        nng_http_res_set_header(res, "Content-Type", "application/json") ||
        nng_http_res_set_header(res, "Connection", "close") ||
        (allow && nng_http_res_set_header(res, "Allow", allow)) ||
        nng_http_res_copy_data(res, t, strlen(t))) {
        free(t);
        if (res)
            nng_http_res_free(res);
        nng_aio_finish(aio, NNG_ENOMEM);
        return;
    }
    free(t);
    nng_aio_set_output(aio, 0, res);
    nng_aio_finish(aio, 0);
}

int rpc_http_start(sx_rpc_server *s, sx_error *err)
{
    nng_url *url = NULL;
    int rv;
    snprintf(s->http_url, sizeof s->http_url, "http://%s", s->o.http);
    if ((rv = nng_url_parse(&url, s->http_url)) != 0)
        return sx_err_set(err, SX_EINVAL, "bad HTTP address \"%s\": %s", s->o.http,
                          nng_strerror(rv));
    rv = nng_http_server_hold(&s->http, url);
    nng_url_free(url);
    if (rv)
        return sx_err_set(err, SX_EIO, "cannot make an HTTP server on %s: %s", s->o.http,
                          nng_strerror(rv));
    /* a body somewhat over the limit still gets a `too_large` answer */
    size_t maxbody = s->o.limits.max_request_bytes * 2 + 4096;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        nng_http_handler *h;
        if ((rv = nng_http_handler_alloc(&h, routes[i].path, routes[i].cb)) != 0)
            return sx_err_set(err, SX_ENOMEM, "cannot make an HTTP handler: %s",
                              nng_strerror(rv));
        if ((rv = nng_http_handler_set_method(h, routes[i].method)) ||
            (rv = nng_http_handler_set_data(h, s, NULL)) ||
            (rv = nng_http_handler_collect_body(h, true, maxbody)) ||
            (rv = nng_http_server_add_handler(s->http, h))) {
            nng_http_handler_free(h);
            return sx_err_set(err, SX_EINTERNAL, "cannot add route %s: %s", routes[i].path,
                              nng_strerror(rv));
        }
    }
    nng_http_handler *other;
    if ((rv = nng_http_handler_alloc(&other, "/", h_other)) != 0)
        return sx_err_set(err, SX_ENOMEM, "cannot make an HTTP handler: %s", nng_strerror(rv));
    if ((rv = nng_http_handler_set_method(other, NULL)) ||
        (rv = nng_http_handler_set_tree(other)) ||
        (rv = nng_http_handler_collect_body(other, false, 0)) ||
        (rv = nng_http_server_add_handler(s->http, other))) {
        nng_http_handler_free(other);
        return sx_err_set(err, SX_EINTERNAL, "cannot add the fallback route: %s",
                          nng_strerror(rv));
    }
    if ((rv = nng_http_server_start(s->http)) != 0)
        return sx_err_set(err, SX_EIO, "cannot listen for HTTP on %s: %s", s->o.http,
                          nng_strerror(rv));
    nng_sockaddr sa;
    if (nng_http_server_get_addr(s->http, &sa) == 0)
        s->http_port = sa.s_family == NNG_AF_INET6 ? ntohs(sa.s_in6.sa_port)
                                                   : ntohs(sa.s_in.sa_port);
    return SX_OK;
}

void rpc_http_stop(sx_rpc_server *s)
{
    if (!s->http)
        return;
    nng_http_server_stop(s->http);
    nng_http_server_release(s->http);
    s->http = NULL;
}

/* ---- event streams ---------------------------------------------------------- */

struct rpc_stream {
    sx_rpc_server  *s;
    nng_http_conn  *conn;
    nng_http_req   *req;   /* ours after the hijack */
    nng_aio        *aio;   /* the write in flight */
    nng_aio        *raio;  /* watched answers: a read that ends when the client does */
    uint8_t         rbuf[64];
    pthread_mutex_t mu;
    sx_bytes        pending, sending;
    int             busy, ended, failed, gone;
    int             reading, closed;
};

static void stream_destroy(rpc_stream *st)
{
    if (!st->closed)
        nng_http_conn_close(st->conn);
    if (st->req)
        nng_http_req_free(st->req);
    /* may run inside an aio's own callback: let nng free them later */
    nng_aio_reap(st->aio);
    if (st->raio)
        nng_aio_reap(st->raio);
    pthread_mutex_destroy(&st->mu);
    sx_bytes_free(&st->pending);
    sx_bytes_free(&st->sending);
    free(st);
}

/* Marks every job of this stream cancelled by its client. */
static void stream_client_gone(rpc_stream *st)
{
    sx_rpc_server *s = st->s;
    pthread_mutex_lock(&s->mu);
    for (rpc_job *j = s->jobs; j; j = j->next)
        if (j->stream == st && !j->cancel)
            j->cancel = CANCEL_CLIENT;
    pthread_cond_signal(&s->sched_cv);
    pthread_mutex_unlock(&s->mu);
}

/* Under st->mu: moves pending bytes into the write buffer; returns 1 when
 * the caller must start the write (after unlocking). */
static int stream_next(rpc_stream *st)
{
    if (st->busy || st->failed || st->pending.n == 0)
        return 0;
    sx_bytes t = st->sending;
    st->sending = st->pending;
    st->pending = t;
    st->pending.n = 0;
    st->busy = 1;
    return 1;
}

static void stream_send(rpc_stream *st)
{
    nng_iov iov = {.iov_buf = st->sending.v, .iov_len = st->sending.n};
    nng_aio_set_iov(st->aio, 1, &iov);
    nng_http_conn_write_all(st->conn, st->aio);
}

/* Under st->mu: 1 when the stream is finished and this caller frees it.
 * A watch read still pending is ended by closing the connection first
 * (*wake); its callback then finishes the stream. */
static int stream_done(rpc_stream *st, int *wake)
{
    *wake = 0;
    if (!st->ended || st->busy || st->gone)
        return 0;
    if (st->reading) {
        if (!st->closed) {
            st->closed = 1;
            *wake = 1;
        }
        return 0;
    }
    st->gone = 1;
    return 1;
}

static void stream_cb(void *arg)
{
    rpc_stream *st = arg;
    int rv = nng_aio_result(st->aio);
    pthread_mutex_lock(&st->mu);
    st->busy = 0;
    if (rv)
        st->failed = 1;
    int wake = 0, send = stream_next(st), destroy = !send && stream_done(st, &wake);
    pthread_mutex_unlock(&st->mu);
    if (rv) /* the client left: stop generating for it */
        stream_client_gone(st);
    if (send)
        stream_send(st);
    else if (wake)
        nng_http_conn_close(st->conn);
    else if (destroy)
        stream_destroy(st);
}

/* The watch read ended.  With an error before the answer: the client
 * closed its end, so its request is cancelled. */
static void watch_cb(void *arg)
{
    rpc_stream *st = arg;
    int rv = nng_aio_result(st->raio);
    pthread_mutex_lock(&st->mu);
    st->reading = 0;
    int early = !st->ended, wake = 0;
    int destroy = stream_done(st, &wake);
    pthread_mutex_unlock(&st->mu);
    /* rv 0: the client sent more (a pipelined request, which a
     * Connection: close answer does not serve) -- it is still there */
    if (early && rv != 0 && rv != NNG_ECANCELED)
        stream_client_gone(st);
    if (wake)
        nng_http_conn_close(st->conn);
    else if (destroy)
        stream_destroy(st);
}

/* Takes the job's connection over; `watch`: also arm the read that sees
 * the client go. */
static int stream_take(rpc_job *j, int watch, rpc_stream **out)
{
    rpc_stream *st = calloc(1, sizeof *st);
    if (!st)
        return SX_ENOMEM;
    if (nng_aio_alloc(&st->aio, stream_cb, st)) {
        free(st);
        return SX_ENOMEM;
    }
    if (watch && nng_aio_alloc(&st->raio, watch_cb, st)) {
        nng_aio_free(st->aio);
        free(st);
        return SX_ENOMEM;
    }
    st->s = j->s;
    st->conn = j->conn;
    pthread_mutex_init(&st->mu, NULL);
    /* take the connection over (and its request object, which nng no longer
     * frees); the handler finishes with no response */
    st->req = nng_aio_get_input(j->http_aio, 0);
    nng_http_hijack(j->conn);
    nng_aio_set_output(j->http_aio, 0, NULL);
    nng_aio_finish(j->http_aio, 0);
    j->http_aio = NULL;
    pthread_mutex_lock(&j->s->mu);
    j->stream = st;
    pthread_mutex_unlock(&j->s->mu);
    if (watch) {
        st->reading = 1;
        nng_iov iov = {.iov_buf = st->rbuf, .iov_len = sizeof st->rbuf};
        nng_aio_set_iov(st->raio, 1, &iov);
        nng_http_conn_read(st->conn, st->raio);
    }
    *out = st;
    return SX_OK;
}

int rpc_stream_start(rpc_job *j)
{
    static const char head[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/event-stream\r\n"
                               "Cache-Control: no-cache\r\n"
                               "Connection: close\r\n\r\n";
    rpc_stream *st;
    int rc = stream_take(j, 0, &st);
    if (rc)
        return rc;
    rpc_stream_write(st, head, sizeof head - 1);
    return SX_OK;
}

int rpc_http_watch(rpc_job *j)
{
    rpc_stream *st;
    int rc = stream_take(j, 1, &st);
    if (!rc)
        j->http_plain = 1;
    return rc;
}

const char *rpc_http_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 499: return "Client Closed Request";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Internal Server Error";
    }
}

void rpc_stream_write(rpc_stream *st, const char *data, size_t len)
{
    pthread_mutex_lock(&st->mu);
    int send = 0;
    if (!st->failed && !st->ended && sx_bytes_append(&st->pending, data, len) == SX_OK)
        send = stream_next(st);
    pthread_mutex_unlock(&st->mu);
    if (send)
        stream_send(st);
}

void rpc_stream_end(rpc_stream *st)
{
    if (!st)
        return;
    pthread_mutex_lock(&st->mu);
    st->ended = 1;
    int wake = 0, send = stream_next(st), destroy = !send && stream_done(st, &wake);
    pthread_mutex_unlock(&st->mu);
    if (send)
        stream_send(st);
    else if (wake)
        nng_http_conn_close(st->conn);
    else if (destroy)
        stream_destroy(st);
}
