/* sx_client: see client.h. */
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "rpc/client.h"

struct sx_client {
    nng_socket sock;
};

int sx_client_open(const char *addr, sx_client **out, sx_error *err)
{
    *out = NULL;
    sx_client *c = calloc(1, sizeof *c);
    if (!c)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    int rv;
    if ((rv = nng_req0_open(&c->sock)) != 0) {
        free(c);
        return sx_err_set(err, SX_EIO, "cannot open a REQ socket: %s", nng_strerror(rv));
    }
    /* responses can be large (logprobs); the server bounds them anyway */
    nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, 0);
    nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
    nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 50);
    nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 1000);
    if ((rv = nng_dial(c->sock, addr, NULL, 0)) != 0) {
        nng_close(c->sock);
        free(c);
        return sx_err_set(err, SX_EIO, "cannot connect to %s: %s", addr, nng_strerror(rv));
    }
    *out = c;
    return SX_OK;
}

void sx_client_close(sx_client *c)
{
    if (!c)
        return;
    nng_close(c->sock);
    free(c);
}

static int transport_error(sx_error *err, const char *what, int rv)
{
    if (rv == NNG_ETIMEDOUT)
        return sx_err_set(err, SX_ELIMIT, "timed out waiting for the server (%s)", what);
    return sx_err_set(err, SX_EIO, "%s failed: %s", what, nng_strerror(rv));
}

int sx_client_call(sx_client *c, const char *req, size_t len, int timeout_ms, char **resp,
                   size_t *resp_len, sx_error *err)
{
    *resp = NULL;
    if (resp_len)
        *resp_len = 0;
    nng_ctx ctx;
    nng_aio *aio = NULL;
    nng_msg *m = NULL;
    int rv, rc = SX_OK;
    if ((rv = nng_ctx_open(&ctx, c->sock)) != 0)
        return transport_error(err, "opening a context", rv);
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
    if (resp_len)
        *resp_len = n;
fail:
    if (m)
        nng_msg_free(m);
    nng_aio_free(aio);
    nng_ctx_close(ctx);
    return rc;
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
    json_error_t je;
    *resp = json_loadb(body, n, JSON_ALLOW_NUL, &je);
    free(body);
    if (!*resp)
        return sx_err_set(err, SX_EFORMAT, "the response is not JSON: %s", je.text);
    return SX_OK;
}
