/* sx_rpc_server: HTTP routes on nng's HTTP server.
 *   POST /v1/chat/completions  OpenAI-compatible (JSON or server-sent events)
 *   POST /v1/completions       OpenAI-compatible, a raw prompt (JSON)
 *   POST /v1/strux             the native protocol (docs/PROTOCOL.md) over HTTP
 *   GET  /v1/models, /health, /metrics
 * POST handlers hand their aio to a job.  Once the request is parsed the
 * job takes the connection over (hijack): a streaming answer writes its
 * events itself, in order, one write in flight at a time; a plain answer
 * is one whole response written the same way, and meanwhile a pending read
 * sees the client leave, which cancels the request. */
#include <arpa/inet.h>
#include <stdio.h>
#include <strings.h>
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

/* An answer before the job exists, in the route's dialect (api < 0: the
 * OpenAI shape with `code` as given).  close: the request's body was not
 * (all) read, so the connection cannot serve another request. */
static void reply_error(nng_aio *aio, int api, int status, int code, const char *codename,
                        const char *msg, int close)
{
    char *t = NULL;
    size_t n = 0;
    int rc;
    if (api == API_NATIVE) {
        rc = sx_rpc_error_dump(NULL, code, msg, NULL, NULL, &t, &n);
    } else {
        json_t *o = json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", msg, "type",
                              "invalid_request_error", "param", "code",
                              codename ? codename : sx_rpc_code_name(code));
        t = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        rc = t ? SX_OK : SX_ENOMEM;
        n = t ? strlen(t) : 0;
    }
    nng_http_res *res = NULL;
    if (rc || nng_http_res_alloc(&res) || nng_http_res_set_status(res, (uint16_t)status) ||
        nng_http_res_set_header(res, "Content-Type", "application/json") ||
        (close && nng_http_res_set_header(res, "Connection", "close")) ||
        (status == 401 && nng_http_res_set_header(res, "WWW-Authenticate", "Bearer")) ||
        nng_http_res_copy_data(res, t, n)) {
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

/* "Authorization: Bearer KEY" against --api-key, in time that does not
 * depend on where the two differ. */
static int authorized(const sx_rpc_server *s, nng_http_req *req)
{
    const char *key = s->o.api_key;
    if (!key)
        return 1;
    const char *h = nng_http_req_get_header(req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7))
        return 0;
    h += 7;
    while (*h == ' ')
        h++;
    size_t a = strlen(h), b = strlen(key);
    unsigned diff = a != b;
    for (size_t i = 0; i < b; i++)
        diff |= (unsigned char)(h[i < a ? i : 0] ^ key[i]);
    return diff == 0;
}

static int loopback_name(const char *h, size_t n)
{
    return (n == 9 && !strncasecmp(h, "localhost", 9)) || (n >= 4 && !strncmp(h, "127.", 4)) ||
           (n == 5 && !strncmp(h, "[::1]", 5)) || (n == 3 && !strncmp(h, "::1", 3));
}

/* The hostname of "host:port", "[v6]:port", "host". */
static size_t host_part(const char *h)
{
    if (*h == '[') {
        const char *e = strchr(h, ']');
        return e ? (size_t)(e - h) + 1 : strlen(h);
    }
    return strcspn(h, ":");
}

/* A server bound to a loopback address answers only requests addressed to
 * a loopback name: a web page's script cannot reach it through a DNS name
 * rebound to 127.0.0.1 (its Host header names the page's domain).  With an
 * API key the key keeps such pages out, and a proxy in front may forward
 * its public Host. */
static int host_allowed(const sx_rpc_server *s, nng_http_req *req)
{
    const char *bind = s->o.http;
    if (s->o.api_key || !bind || !loopback_name(bind, host_part(bind)))
        return 1;
    const char *h = nng_http_req_get_header(req, "Host");
    if (!h) /* HTTP/1.0 (nng refuses a 1.1 request without Host) */
        return 1;
    while (*h == ' ')
        h++;
    return loopback_name(h, host_part(h));
}

/* A JSON body: application/json, or a +json type, any parameters.  No
 * Content-Type at all passes (not what a browser's form or fetch sends). */
static int is_json_type(const char *ct)
{
    if (!ct)
        return 1;
    while (*ct == ' ')
        ct++;
    size_t n = strcspn(ct, "; \t");
    if (n == 16 && !strncasecmp(ct, "application/json", 16))
        return 1;
    return n > 5 && !strncasecmp(ct, "application/", 12) && !strncasecmp(ct + n - 5, "+json", 5);
}

/* ---- request bodies ---------------------------------------------------------
 * nng collects a Content-Length body only, and answers one over its limit
 * with an HTML page; the POST routes read theirs here instead: a
 * Content-Length body, or a chunked one (what curl sends for a streamed
 * upload), after "100 Continue" when the client waits for it, and a body
 * over --max-request-bytes is a JSON 413 before it is read.  Reads never go
 * past the body's end, so the connection stays in step for the next
 * request. */

enum { RD_CONTINUE, RD_FIXED, RD_SIZE, RD_DATA, RD_DATA_END, RD_TRAILER, RD_SKIP };

/* A body over the limit is read and dropped, up to this much, before the
 * 413: closing a connection with unread data resets it, and the client may
 * then lose the answer.  Past this, the answer goes out at once. */
#define RD_DRAIN_MAX ((size_t)64 << 20)
#define RD_SCRATCH ((size_t)64 << 10)

typedef struct body_rd {
    sx_rpc_server *s;
    nng_aio       *haio;    /* the handler's: answered or handed to the job */
    nng_http_conn *conn;
    nng_aio       *aio;
    int            api, state, chunked, completions;
    char          *buf;
    size_t         len, cap, limit, want;
    char           line[96];
    size_t         line_n;
    char           one, crlf[2];
    int            over;    /* past the limit: the rest is dropped, then 413 */
    char          *scratch; /* RD_SKIP's buffer */
    size_t         skip, last, drained;
    int            after;   /* the state after RD_SKIP */
} body_rd;

static void rd_free(body_rd *rd)
{
    nng_aio_reap(rd->aio); /* may run in its own callback */
    free(rd->scratch);
    free(rd->buf);
    free(rd);
}

static void rd_read(body_rd *rd, void *at, size_t n, int all)
{
    nng_iov iov = {.iov_buf = at, .iov_len = n};
    nng_aio_set_iov(rd->aio, 1, &iov);
    if (all)
        nng_http_conn_read_all(rd->conn, rd->aio);
    else
        nng_http_conn_read(rd->conn, rd->aio);
}

static int rd_grow(body_rd *rd, size_t need)
{
    if (need + 1 <= rd->cap)
        return 0;
    size_t cap = rd->cap ? rd->cap : 4096;
    while (cap < need + 1)
        cap *= 2;
    char *b = realloc(rd->buf, cap);
    if (!b)
        return -1;
    rd->buf = b;
    rd->cap = cap;
    return 0;
}

static void rd_too_large(body_rd *rd, size_t n)
{
    char msg[160];
    if (rd->chunked)
        snprintf(msg, sizeof msg, "request body is over the limit of %zu bytes", rd->limit);
    else
        snprintf(msg, sizeof msg, "request body is %zu bytes; the limit is %zu", n, rd->limit);
    reply_error(rd->haio, rd->api, 413, SX_RPC_TOO_LARGE, NULL, msg, 1);
}

/* Drops the next n bytes of the body, then goes on in state `after`;
 * returns 1 when the answer went out at once (too much to drop). */
static int rd_skip(body_rd *rd, size_t n, int after)
{
    if (rd->drained + n > RD_DRAIN_MAX || (!rd->scratch && !(rd->scratch = malloc(RD_SCRATCH)))) {
        rd_too_large(rd, rd->len);
        return 1;
    }
    rd->skip = n;
    rd->after = after;
    rd->state = RD_SKIP;
    rd->last = n < RD_SCRATCH ? n : RD_SCRATCH;
    rd_read(rd, rd->scratch, rd->last, 1);
    return 0;
}

/* The whole body is in: the job takes the handler's aio over. */
static void rd_done(body_rd *rd)
{
    rpc_job *j = rpc_job_new(rd->s, VIA_HTTP, rd->api, rd->buf, rd->len);
    if (!j) {
        reply_error(rd->haio, rd->api, 500, SX_RPC_INTERNAL, NULL, "out of memory", 1);
        return;
    }
    rd->buf[rd->len] = 0;
    rd->buf = NULL; /* the job's now */
    j->http_aio = rd->haio;
    j->conn = rd->conn;
    j->completions = rd->completions;
    rpc_submit(rd->s, j);
}

/* One step of reading; returns 1 when the reader is finished (answered or
 * handed over) and must be freed. */
static int rd_step(body_rd *rd)
{
    switch (rd->state) {
    case RD_CONTINUE:
        rd->state = rd->chunked ? RD_SIZE : RD_FIXED;
        if (rd->chunked)
            rd_read(rd, &rd->one, 1, 1);
        else
            rd_read(rd, rd->buf, rd->len, 1);
        return 0;
    case RD_FIXED:
        if (rd->over)
            rd_too_large(rd, rd->len);
        else
            rd_done(rd);
        return 1;
    case RD_SKIP:
        rd->skip -= rd->last;
        rd->drained += rd->last;
        if (rd->skip) {
            rd->last = rd->skip < RD_SCRATCH ? rd->skip : RD_SCRATCH;
            rd_read(rd, rd->scratch, rd->last, 1);
            return 0;
        }
        rd->state = rd->after;
        if (rd->after == RD_FIXED)
            return rd_step(rd);
        rd_read(rd, rd->crlf, 2, 1); /* RD_DATA_END */
        return 0;
    case RD_SIZE:
    case RD_TRAILER:
        if (rd->line_n + 1 >= sizeof rd->line) {
            reply_error(rd->haio, rd->api, 400, SX_RPC_BAD_REQUEST, NULL,
                        "malformed chunked body: a line is too long", 1);
            return 1;
        }
        rd->line[rd->line_n++] = rd->one;
        if (rd->line_n < 2 || rd->line[rd->line_n - 2] != '\r' || rd->one != '\n') {
            rd_read(rd, &rd->one, 1, 1);
            return 0;
        }
        rd->line[rd->line_n] = 0;
        if (rd->state == RD_TRAILER) {
            int end = rd->line_n == 2;
            rd->line_n = 0;
            if (end) {
                if (rd->over)
                    rd_too_large(rd, rd->len);
                else
                    rd_done(rd);
                return 1;
            }
            rd_read(rd, &rd->one, 1, 1); /* a trailer field: skipped */
            return 0;
        } else {
            char *e;
            unsigned long long n = strtoull(rd->line, &e, 16);
            rd->line_n = 0;
            if (e == rd->line || (*e != '\r' && *e != ';' && *e != ' ')) {
                reply_error(rd->haio, rd->api, 400, SX_RPC_BAD_REQUEST, NULL,
                            "malformed chunked body: bad chunk size", 1);
                return 1;
            }
            if (n == 0) {
                rd->state = RD_TRAILER;
                rd_read(rd, &rd->one, 1, 1);
                return 0;
            }
            if (rd->over || n > rd->limit - rd->len) {
                rd->over = 1;
                return rd_skip(rd, n > RD_DRAIN_MAX ? RD_DRAIN_MAX + 1 : (size_t)n, RD_DATA_END);
            }
            if (rd_grow(rd, rd->len + (size_t)n)) {
                reply_error(rd->haio, rd->api, 500, SX_RPC_INTERNAL, NULL, "out of memory", 1);
                return 1;
            }
            rd->want = (size_t)n;
            rd->state = RD_DATA;
            rd_read(rd, rd->buf + rd->len, rd->want, 1);
            return 0;
        }
    case RD_DATA:
        rd->len += rd->want;
        rd->state = RD_DATA_END;
        rd_read(rd, rd->crlf, 2, 1);
        return 0;
    default: /* RD_DATA_END */
        if (rd->crlf[0] != '\r' || rd->crlf[1] != '\n') {
            reply_error(rd->haio, rd->api, 400, SX_RPC_BAD_REQUEST, NULL,
                        "malformed chunked body: a chunk does not end with CRLF", 1);
            return 1;
        }
        rd->state = RD_SIZE;
        rd_read(rd, &rd->one, 1, 1);
        return 0;
    }
}

static void rd_cb(void *arg)
{
    body_rd *rd = arg;
    int rv = nng_aio_result(rd->aio);
    if (rv) { /* the client went away: nng closes the connection */
        nng_aio_finish(rd->haio, rv);
        rd_free(rd);
        return;
    }
    if (rd_step(rd))
        rd_free(rd);
}

static void handle_post(nng_aio *aio, int api, int completions)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    sx_rpc_server *s = server_of(aio);
    nng_http_req *req = nng_aio_get_input(aio, 0);
    const char *cl = nng_http_req_get_header(req, "Content-Length");
    const char *te = nng_http_req_get_header(req, "Transfer-Encoding");
    const char *expect = nng_http_req_get_header(req, "Expect");
    int chunked = te && !strcasecmp(te, "chunked");
    unsigned long long n = 0;
    char *e = NULL;
    /* with no body to read, the connection can go on after an answer */
    int unread = chunked || (cl && strcmp(cl, "0"));
    if (!host_allowed(s, req)) {
        reply_error(aio, -1, 403, SX_RPC_BAD_REQUEST, "forbidden_host",
                    "this server listens on a loopback address and answers requests to "
                    "localhost, 127.0.0.1 or [::1] only", unread);
        return;
    }
    if (!authorized(s, req)) {
        reply_error(aio, -1, 401, SX_RPC_BAD_REQUEST, "unauthorized",
                    "this server needs \"Authorization: Bearer KEY\" (struxd --api-key)", unread);
        return;
    }
    if (!is_json_type(nng_http_req_get_header(req, "Content-Type"))) {
        reply_error(aio, api, 415, SX_RPC_BAD_REQUEST, "unsupported_media_type",
                    "the body must be JSON: send Content-Type: application/json", unread);
        return;
    }
    if (te && !chunked) {
        reply_error(aio, api, 400, SX_RPC_BAD_REQUEST, NULL,
                    "Transfer-Encoding must be chunked or absent", 1);
        return;
    }
    if (!chunked && cl) {
        n = strtoull(cl, &e, 10);
        if (e == cl || *e) {
            reply_error(aio, api, 400, SX_RPC_BAD_REQUEST, NULL, "bad Content-Length", 1);
            return;
        }
    }
    body_rd *rd = calloc(1, sizeof *rd);
    if (!rd || nng_aio_alloc(&rd->aio, rd_cb, rd)) {
        free(rd);
        reply_error(aio, api, 500, SX_RPC_INTERNAL, NULL, "out of memory", 1);
        return;
    }
    rd->s = s;
    rd->haio = aio;
    rd->conn = nng_aio_get_input(aio, 2);
    rd->api = api;
    rd->completions = completions;
    rd->chunked = chunked;
    rd->limit = s->o.limits.max_request_bytes;
    if (!chunked && n > rd->limit) {
        rd->len = (size_t)n; /* for the message */
        /* a client waiting for "100 Continue" does not send the body */
        if (expect && !strcasecmp(expect, "100-continue")) {
            rd_too_large(rd, rd->len);
            rd_free(rd);
            return;
        }
        rd->over = 1;
        if (rd_skip(rd, n > RD_DRAIN_MAX ? RD_DRAIN_MAX + 1 : (size_t)n, RD_FIXED))
            rd_free(rd);
        return;
    }
    if (rd_grow(rd, chunked ? 0 : (size_t)n)) {
        rd_free(rd);
        reply_error(aio, api, 500, SX_RPC_INTERNAL, NULL, "out of memory", 1);
        return;
    }
    rd->len = chunked ? 0 : (size_t)n;
    if (!chunked && n == 0) {
        rd_done(rd);
        rd_free(rd);
        return;
    }
    /* the client waits for this before it sends the body (curl: 1 s) */
    if (expect && !strcasecmp(expect, "100-continue")) {
        rd->state = RD_CONTINUE;
        nng_iov iov = {.iov_buf = (void *)cont, .iov_len = sizeof cont - 1};
        nng_aio_set_iov(rd->aio, 1, &iov);
        nng_http_conn_write_all(rd->conn, rd->aio);
        return;
    }
    rd->state = RD_CONTINUE;
    if (rd_step(rd))
        rd_free(rd);
}

static void h_chat(nng_aio *aio)
{
    handle_post(aio, API_OPENAI, 0);
}

static void h_completions(nng_aio *aio)
{
    handle_post(aio, API_OPENAI, 1);
}

static void h_native(nng_aio *aio)
{
    handle_post(aio, API_NATIVE, 0);
}

/* The GET routes behind the key (all but /health); 1 when answered here. */
static int refused(nng_aio *aio)
{
    if (!host_allowed(server_of(aio), nng_aio_get_input(aio, 0))) {
        reply_error(aio, -1, 403, SX_RPC_BAD_REQUEST, "forbidden_host",
                    "this server listens on a loopback address and answers requests to "
                    "localhost, 127.0.0.1 or [::1] only", 0);
        return 1;
    }
    if (authorized(server_of(aio), nng_aio_get_input(aio, 0)))
        return 0;
    reply_error(aio, -1, 401, SX_RPC_BAD_REQUEST, "unauthorized",
                "this server needs \"Authorization: Bearer KEY\" (struxd --api-key)", 0);
    return 1;
}

static void h_models(nng_aio *aio)
{
    if (refused(aio))
        return;
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

static void gauges(sx_rpc_server *s, rpc_gauges *g, const char **status, const char **stuck)
{
    memset(g, 0, sizeof *g);
    sx_rpc_cache_stats_get(s->cache, &g->cache);
    *stuck = rpc_stuck(s, &g->cache);
    pthread_mutex_lock(&s->mu);
    g->queued = s->n_waiting;
    g->running = s->n_running;
    g->inflight = s->n_inflight;
    *status = s->broken ? "broken" : s->draining ? "draining" : *stuck ? "degraded" : "ok";
    pthread_mutex_unlock(&s->mu);
    g->kv_capacity = s->kv_capacity;
}

static void h_health(nng_aio *aio)
{
    sx_rpc_server *s = server_of(aio);
    rpc_gauges g;
    const char *status, *stuck;
    gauges(s, &g, &status, &stuck);
    json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:I, s:{s:i, s:i, s:i}}", "status", status,
                          "model", s->o.model_name, "queued", g.queued, "running", g.running,
                          "kv_capacity_tokens", (json_int_t)g.kv_capacity, "compiles",
                          "running", g.cache.running - g.cache.abandoned, "abandoned",
                          g.cache.abandoned, "queued", g.cache.queued);
    if (o && stuck)
        json_object_set_new(o, "stuck", json_string(stuck));
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
    if (refused(aio))
        return;
    sx_rpc_server *s = server_of(aio);
    rpc_gauges g;
    const char *status, *stuck;
    gauges(s, &g, &status, &stuck);
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
    {"/v1/completions", "POST", h_completions},
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
    int batch = (plen >= 9 && !strncmp(uri, "/v1/files", 9)) ||
                (plen >= 11 && !strncmp(uri, "/v1/batches", 11));
    if (batch && !allow)
        /* the SDK's files.create / batches.create: say what does the job */
        snprintf(msg, sizeof msg,
                 "%.20s %.*s: OpenAI's /v1/files and /v1/batches are not served; run an OpenAI "
                 "batch file (custom_id, method, url, body lines) with `strux call --addr ADDR "
                 "--openai-batch IN.jsonl --out OUT.jsonl`", method,
                 (int)(plen > 100 ? 100 : plen), uri);
    else if (allow)
        snprintf(msg, sizeof msg, "%.*s takes %s, not %.20s", (int)(plen > 200 ? 200 : plen), uri,
                 allow, method);
    else
        snprintf(msg, sizeof msg,
                 "no route %.20s %.*s (strux serves POST /v1/chat/completions, POST "
                 "/v1/completions, POST /v1/strux, GET /v1/models, GET /health, GET /metrics)",
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
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        nng_http_handler *h;
        if ((rv = nng_http_handler_alloc(&h, routes[i].path, routes[i].cb)) != 0)
            return sx_err_set(err, SX_ENOMEM, "cannot make an HTTP handler: %s",
                              nng_strerror(rv));
        if ((rv = nng_http_handler_set_method(h, routes[i].method)) ||
            (rv = nng_http_handler_set_data(h, s, NULL)) ||
            /* POST bodies are read by the route (handle_post) */
            (rv = nng_http_handler_collect_body(h, false, 0)) ||
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
    int             reading, woken;
};

static void stream_destroy(rpc_stream *st)
{
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
 * A watch read still pending is ended first by cancelling it (*wake); its
 * callback then finishes the stream.  Not by closing the connection:
 * nng_http_conn_close waits for the connection's read callback, which
 * needs a free nng task thread -- with as many answers ending at once as
 * nng has task threads (2 per CPU), every one of them would wait there
 * and nng would stop serving. */
static int stream_done(rpc_stream *st, int *wake)
{
    *wake = 0;
    if (!st->ended || st->busy || st->gone)
        return 0;
    if (st->reading) {
        if (!st->woken) {
            st->woken = 1;
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
        nng_aio_cancel(st->raio);
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
        nng_aio_cancel(st->raio);
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
    rpc_stream *st = j->stream;
    if (st) {
        j->http_plain = 0; /* watched since it was parsed: now its event stream */
    } else {
        int rc = stream_take(j, 0, &st);
        if (rc)
            return rc;
    }
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
        nng_aio_cancel(st->raio);
    else if (destroy)
        stream_destroy(st);
}
