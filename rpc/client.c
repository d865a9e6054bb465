/* sx_client: see client.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "common/sx_numjson.h"
#include "rpc/client.h"

struct sx_client {
    nng_socket      sock;
    int             retries, overload_wait_ms, backoff_ms;
    pthread_mutex_t mu;
    sx_client_stats st;
};

void sx_client_opts_init(sx_client_opts *o)
{
    memset(o, 0, sizeof *o);
    o->retries = 3;
    o->overload_wait_ms = 60000;
    o->backoff_ms = 20;
}

/* Pipe events keep the count of connected replicas (what a caller sees of
 * the background redialling). */
static void pipe_event(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    (void)p;
    sx_client *c = arg;
    pthread_mutex_lock(&c->mu);
    c->st.connected += ev == NNG_PIPE_EV_ADD_POST ? 1 : -1;
    pthread_mutex_unlock(&c->mu);
}

int sx_client_open_opts(const sx_client_opts *o, sx_client **out, sx_error *err)
{
    *out = NULL;
    if (!o || o->n_addrs < 1 || !o->addrs)
        return sx_err_set(err, SX_EINVAL, "no server address given");
    sx_client *c = calloc(1, sizeof *c);
    if (!c)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    c->retries = o->retries > 0 ? o->retries : 0;
    c->overload_wait_ms = o->overload_wait_ms > 0 ? o->overload_wait_ms : 0;
    c->backoff_ms = o->backoff_ms > 0 ? o->backoff_ms : 1;
    pthread_mutex_init(&c->mu, NULL);
    int rv, rc = SX_OK, reached = 0;
    if ((rv = nng_req0_open(&c->sock)) != 0) {
        pthread_mutex_destroy(&c->mu);
        free(c);
        return sx_err_set(err, SX_EIO, "cannot open a REQ socket: %s", nng_strerror(rv));
    }
    /* responses can be large (logprobs); the server bounds them anyway */
    nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, 0);
    /* a resend on a live connection would run the model twice; with resend
     * off, nng fails a request whose connection closes (NNG_ECONNRESET) and
     * the retry below decides what to do */
    nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
    nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 50);
    nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 1000);
    nng_pipe_notify(c->sock, NNG_PIPE_EV_ADD_POST, pipe_event, c);
    nng_pipe_notify(c->sock, NNG_PIPE_EV_REM_POST, pipe_event, c);
    const char *first_fail = NULL;
    int first_rv = 0;
    for (int i = 0; i < o->n_addrs; i++) {
        /* a blocking dial says whether the replica is there now; a dialer
         * whose first dial failed is gone, so one that keeps trying in the
         * background replaces it */
        if ((rv = nng_dial(c->sock, o->addrs[i], NULL, 0)) == 0) {
            reached++;
            continue;
        }
        if (!first_fail) {
            first_fail = o->addrs[i];
            first_rv = rv;
        }
        if (rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP ||
            (rv = nng_dial(c->sock, o->addrs[i], NULL, NNG_FLAG_NONBLOCK)) != 0) {
            rc = sx_err_set(err, SX_EIO, "cannot dial %s: %s", o->addrs[i], nng_strerror(rv));
            goto fail;
        }
    }
    if (!reached) {
        rc = sx_err_set(err, SX_EIO, "cannot connect to %s%s: %s", first_fail,
                        o->n_addrs > 1 ? " (nor to any other replica)" : "",
                        nng_strerror(first_rv));
        goto fail;
    }
    *out = c;
    return SX_OK;
fail:
    sx_client_close(c);
    return rc;
}

int sx_client_open(const char *addr, sx_client **out, sx_error *err)
{
    sx_client_opts o;
    sx_client_opts_init(&o);
    o.addrs = &addr;
    o.n_addrs = 1;
    o.retries = 0;
    o.overload_wait_ms = 0;
    return sx_client_open_opts(&o, out, err);
}

void sx_client_close(sx_client *c)
{
    if (!c)
        return;
    nng_close(c->sock);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void sx_client_get_stats(sx_client *c, sx_client_stats *st)
{
    pthread_mutex_lock(&c->mu);
    *st = c->st;
    pthread_mutex_unlock(&c->mu);
}

static void count(sx_client *c, long long *field)
{
    pthread_mutex_lock(&c->mu);
    (*field)++;
    pthread_mutex_unlock(&c->mu);
}

static int transport_error(sx_error *err, const char *what, int rv)
{
    if (rv == NNG_ETIMEDOUT)
        return sx_err_set(err, SX_ELIMIT, "timed out waiting for the server (%s)", what);
    return sx_err_set(err, SX_EIO, "%s failed: %s", what, nng_strerror(rv));
}

/* One attempt on a fresh context.  *nng_rv is nng's error (0 when an
 * answer came), so the caller can tell a lost connection from the rest. */
static int call_once(sx_client *c, const char *req, size_t len, int timeout_ms, char **resp,
                     size_t *resp_len, int *nng_rv, sx_error *err)
{
    nng_ctx ctx;
    nng_aio *aio = NULL;
    nng_msg *m = NULL;
    int rv, rc = SX_OK;
    *nng_rv = 0;
    if ((rv = nng_ctx_open(&ctx, c->sock)) != 0) {
        *nng_rv = rv;
        return transport_error(err, "opening a context", rv);
    }
    if ((rv = nng_aio_alloc(&aio, NULL, NULL)) != 0 || (rv = nng_msg_alloc(&m, 0)) != 0 ||
        (rv = nng_msg_append(m, req, len)) != 0) {
        rc = transport_error(err, "allocating", rv);
        goto fail;
    }
    nng_aio_set_timeout(aio, timeout_ms > 0 ? timeout_ms : NNG_DURATION_INFINITE);
    nng_aio_set_msg(aio, m);
    nng_ctx_send(ctx, aio);
    nng_aio_wait(aio);
    if ((rv = nng_aio_result(aio)) != 0) {
        rc = transport_error(err, "send", rv); /* m still ours */
        goto fail;
    }
    m = NULL;
    nng_ctx_recv(ctx, aio);
    nng_aio_wait(aio);
    if ((rv = nng_aio_result(aio)) != 0) {
        rc = transport_error(err, "receive", rv);
        goto fail;
    }
    m = nng_aio_get_msg(aio);
    size_t n = nng_msg_len(m);
    *resp = malloc(n + 1);
    if (!*resp) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    memcpy(*resp, nng_msg_body(m), n);
    (*resp)[n] = 0;
    *resp_len = n;
fail:
    *nng_rv = rv;
    if (m)
        nng_msg_free(m);
    nng_aio_free(aio);
    nng_ctx_close(ctx);
    return rc;
}

static int is_overloaded(const char *body, size_t n)
{
    sx_numtab t = {0};
    json_t *v = sx_numjson_loadb(body, n, 0, &t, NULL);
    sx_numtab_free(&t);
    const char *code =
        json_string_value(json_object_get(json_object_get(v, "error"), "code"));
    int over = json_is_false(json_object_get(v, "ok")) && code && !strcmp(code, "overloaded");
    json_decref(v);
    return over;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int sx_client_call(sx_client *c, const char *req, size_t len, int timeout_ms, char **resp,
                   size_t *resp_len, sx_error *err)
{
    *resp = NULL;
    if (resp_len)
        *resp_len = 0;
    count(c, &c->st.calls);
    double give_up = now_ms() + c->overload_wait_ms;
    int failures = 0, backoff = c->backoff_ms;
    for (;;) {
        char *body = NULL;
        size_t n = 0;
        int rv;
        count(c, &c->st.attempts);
        int rc = call_once(c, req, len, timeout_ms, &body, &n, &rv, err);
        if (rc == SX_OK) {
            /* `overloaded` is answered before any model work, so sending
             * the request again can never run it twice */
            if (c->overload_wait_ms && now_ms() + backoff < give_up && is_overloaded(body, n)) {
                free(body);
                count(c, &c->st.overloaded);
                sleep_ms(backoff);
                backoff = backoff * 2 < 1000 ? backoff * 2 : 1000;
                continue;
            }
            *resp = body;
            if (resp_len)
                *resp_len = n;
            return SX_OK;
        }
        /* a closed connection (the replica died or restarted) or no answer
         * in time: the same bytes again, to whichever replica is up */
        int lost = rv == NNG_ECONNRESET || rv == NNG_ETIMEDOUT || rv == NNG_ECONNSHUT ||
                   rv == NNG_ECONNREFUSED || rv == NNG_ECONNABORTED;
        if (!lost || failures >= c->retries) {
            count(c, &c->st.failed);
            return rc;
        }
        failures++;
        count(c, &c->st.retries);
        /* a moment for the socket to notice the dead pipe everywhere */
        sleep_ms(10 * failures);
    }
}

int sx_client_call_json(sx_client *c, const json_t *req, int timeout_ms, json_t **resp,
                        sx_error *err)
{
    *resp = NULL;
    char *text = json_dumps(req, JSON_COMPACT);
    if (!text)
        return sx_err_set(err, SX_ENOMEM, "cannot serialise the request");
    char *body = NULL;
    size_t n = 0;
    int rc = sx_client_call(c, text, strlen(text), timeout_ms, &body, &n, err);
    free(text);
    if (rc)
        return rc;
    /* an output may hold integers beyond jansson's 64 bits */
    json_error_t je;
    sx_numtab t = {0};
    *resp = sx_numjson_loadb(body, n, 0, &t, &je);
    sx_numtab_free(&t);
    free(body);
    if (!*resp)
        return sx_err_set(err, SX_EFORMAT, "the response is not JSON: %s", je.text);
    return SX_OK;
}
