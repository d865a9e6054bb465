/* sx_rpc_server: nng REQ/REP.  One REP socket listens on every address;
 * many contexts, each with its own aio, receive concurrently (nng's
 * context-per-worker pattern), so every waiting client holds a context and
 * none blocks another.  A context carries one request from receipt to
 * reply, then receives again. */
#include <stdlib.h>
#include <string.h>

#include "rpc/server_internal.h"

#include <nng/protocol/reqrep0/rep.h>

enum { W_INIT, W_RECV, W_WAIT, W_SEND };

/* An OpenAI request over nng (strux call --openai-batch): a message that
 * starts {"openai": and is exactly {"openai": ROUTE, "body": TEXT}, ROUTE
 * "/v1/chat/completions" or "/v1/completions", TEXT the request's JSON as
 * a string (its numbers kept exactly).  *body becomes TEXT and the job is
 * answered in the OpenAI dialect.  Returns 1 when the envelope was
 * malformed and answered here. */
static int openai_envelope(nng_worker *w, char **body, size_t *len, int *completions, int *api)
{
    static const char pre[] = "{\"openai\":";
    if (*len < sizeof pre - 1 || memcmp(*body, pre, sizeof pre - 1))
        return 0;
    json_t *e = json_loadb(*body, *len, JSON_REJECT_DUPLICATES, NULL);
    const json_t *route = json_object_get(e, "openai"), *text = json_object_get(e, "body");
    const char *r = json_string_value(route);
    const char *why = NULL;
    if (!json_is_object(e) || json_object_size(e) != 2 || !json_is_string(text))
        why = "an OpenAI request over nng is {\"openai\": ROUTE, \"body\": \"<the request's "
              "JSON as a string>\"}";
    else if (!r || (strcmp(r, "/v1/chat/completions") && strcmp(r, "/v1/completions")))
        why = "openai: the route must be \"/v1/chat/completions\" or \"/v1/completions\"";
    if (why) {
        char *out = NULL;
        size_t n = 0;
        json_decref(e);
        free(*body);
        *body = NULL;
        if (sx_rpc_openai_error_dump(SX_RPC_BAD_REQUEST, why, "/openai", &out, &n) == 0)
            rpc_nng_reply(w, out, n);
        else
            rpc_nng_reply(w, "{}", 2);
        free(out);
        return 1;
    }
    size_t n = json_string_length(text);
    char *b = malloc(n + 1);
    if (b) {
        memcpy(b, json_string_value(text), n);
        b[n] = 0;
        *completions = !strcmp(r, "/v1/completions");
        *api = API_OPENAI;
    }
    json_decref(e);
    free(*body);
    *body = b;
    *len = b ? n : 0;
    return 0;
}

static void worker_recv(nng_worker *w)
{
    w->state = W_RECV;
    nng_ctx_recv(w->ctx, w->aio);
}

static void worker_cb(void *arg)
{
    nng_worker *w = arg;
    int rv;
    switch (w->state) {
    case W_INIT:
        worker_recv(w);
        break;
    case W_RECV: {
        if ((rv = nng_aio_result(w->aio)) != 0) {
            if (rv != NNG_ECLOSED)
                worker_recv(w);
            break;
        }
        nng_msg *m = nng_aio_get_msg(w->aio);
        size_t len = nng_msg_len(m);
        uint32_t pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(m));
        char *body = malloc(len + 1);
        if (body) {
            memcpy(body, nng_msg_body(m), len);
            body[len] = 0;
        }
        nng_msg_free(m);
        int api = API_NATIVE, completions = 0;
        if (body && openai_envelope(w, &body, &len, &completions, &api)) {
            w->state = W_WAIT;
            break; /* answered: a malformed envelope */
        }
        rpc_job *j = body ? rpc_job_new(w->s, VIA_NNG, api, body, len) : NULL;
        w->state = W_WAIT;
        if (!j) {
            static const char oom[] = "{\"ok\":false,\"id\":null,\"error\":{\"code\":\"internal\","
                                      "\"message\":\"out of memory\"}}";
            free(body);
            rpc_nng_reply(w, oom, sizeof oom - 1);
            break;
        }
        j->nw = w;
        j->pipe = pipe;
        j->completions = completions;
        rpc_submit(w->s, j);
        break;
    }
    case W_SEND:
        if ((rv = nng_aio_result(w->aio)) != 0)
            nng_msg_free(nng_aio_get_msg(w->aio));
        if (rv != NNG_ECLOSED)
            worker_recv(w);
        break;
    default:
        break;
    }
}

void rpc_nng_reply(nng_worker *w, const char *body, size_t len)
{
    nng_msg *m = NULL;
    if (nng_msg_alloc(&m, 0) || nng_msg_append(m, body, len)) {
        /* nothing can be sent; the client's own timeout will tell it */
        if (m)
            nng_msg_free(m);
        worker_recv(w);
        return;
    }
    w->state = W_SEND;
    nng_aio_set_msg(w->aio, m);
    nng_ctx_send(w->ctx, w->aio);
}

/* A client whose connection dropped cannot be answered: cancel its work. */
static void pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    (void)ev;
    rpc_cancel_pipe(arg, (uint32_t)nng_pipe_id(p));
}

/* Draining: connections already made are served to the end, new ones are
 * turned away (closing the listeners would drop the existing ones too). */
static void pipe_added(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    (void)ev;
    sx_rpc_server *s = arg;
    pthread_mutex_lock(&s->mu);
    int refuse = s->draining || s->stop;
    pthread_mutex_unlock(&s->mu);
    if (refuse)
        nng_pipe_close(p);
}

int rpc_nng_start(sx_rpc_server *s, sx_error *err)
{
    int rv;
    if ((rv = nng_rep0_open(&s->rep)) != 0)
        return sx_err_set(err, SX_EINTERNAL, "cannot open the REP socket: %s", nng_strerror(rv));
    s->rep_open = 1;
    /* Requests a little over the limit get a `too_large` answer; far bigger
     * ones are dropped by nng (with the connection) before they use memory. */
    size_t maxsz = s->o.limits.max_request_bytes * 4 + 4096;
    nng_socket_set_size(s->rep, NNG_OPT_RECVMAXSZ, maxsz);
    nng_pipe_notify(s->rep, NNG_PIPE_EV_REM_POST, pipe_gone, s);
    nng_pipe_notify(s->rep, NNG_PIPE_EV_ADD_PRE, pipe_added, s);

    s->n_workers = s->o.max_queue + s->o.max_running + 64;
    s->workers = calloc((size_t)s->n_workers, sizeof *s->workers);
    s->listeners = calloc((size_t)s->o.n_listen, sizeof *s->listeners);
    if (!s->workers || !s->listeners) {
        s->n_workers = 0;
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    for (int i = 0; i < s->n_workers; i++) {
        nng_worker *w = &s->workers[i];
        w->s = s;
        if ((rv = nng_aio_alloc(&w->aio, worker_cb, w)) != 0 ||
            (rv = nng_ctx_open(&w->ctx, s->rep)) != 0) {
            s->n_workers = i + 1;
            return sx_err_set(err, SX_EINTERNAL, "cannot open a context: %s", nng_strerror(rv));
        }
    }
    for (int i = 0; i < s->o.n_listen; i++) {
        const char *url = s->o.listen[i];
        if ((rv = nng_listener_create(&s->listeners[i], s->rep, url)) != 0)
            return sx_err_set(err, SX_EIO, "cannot listen on %s: %s", url, nng_strerror(rv));
        s->n_listeners = i + 1;
        nng_listener_set_size(s->listeners[i], NNG_OPT_RECVMAXSZ, maxsz);
        if ((rv = nng_listener_start(s->listeners[i], 0)) != 0)
            return sx_err_set(err, SX_EIO, "cannot listen on %s: %s", url, nng_strerror(rv));
    }
    for (int i = 0; i < s->n_workers; i++)
        worker_cb(&s->workers[i]);
    return SX_OK;
}

int sx_rpc_server_listen_port(const sx_rpc_server *s, int i)
{
    int port = -1;
    if (i < 0 || i >= s->n_listeners || strncmp(s->o.listen[i], "tcp", 3) ||
        nng_listener_get_int(s->listeners[i], NNG_OPT_TCP_BOUND_PORT, &port) != 0)
        return -1;
    return port;
}

void rpc_nng_close_listeners(sx_rpc_server *s)
{
    /* closes the listeners' connections too: only once nothing is left */
    for (int i = 0; i < s->n_listeners; i++)
        nng_listener_close(s->listeners[i]);
    s->n_listeners = 0;
}

void rpc_nng_stop(sx_rpc_server *s)
{
    rpc_nng_close_listeners(s);
    /* Workers first: nng_aio_stop waits out a running callback and makes
     * the aio refuse new operations, so no callback can re-arm a receive on
     * a context that the socket's close is tearing down (libnng 1.5.2 then
     * panics on the context's destroyed lock, rarely, under load). */
    for (int i = 0; i < s->n_workers; i++)
        if (s->workers[i].aio)
            nng_aio_stop(s->workers[i].aio);
    if (s->rep_open)
        nng_close(s->rep);
    s->rep_open = 0;
    for (int i = 0; i < s->n_workers; i++)
        if (s->workers[i].aio)
            nng_aio_free(s->workers[i].aio);
    free(s->workers);
    free(s->listeners);
    s->workers = NULL;
    s->listeners = NULL;
    s->n_workers = 0;
}
