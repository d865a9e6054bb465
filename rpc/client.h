/* sx_client: a C client for struxd's nng REQ/REP protocol
 * (docs/PROTOCOL.md).
 *
 * One client is one REQ socket dialled to one or more replicas (every
 * address a dialer); nng spreads requests over the connected ones, and a
 * replica that goes away is re-dialled in the background.  Every call opens
 * its own context, so any number of threads may call at once.
 *
 * Retries ("Replicas and retries" in docs/PROTOCOL.md).  nng never resends
 * a request by itself (a resend on a live connection would run the model
 * twice).  Instead the client sends the same bytes again -- same `id`, same
 * seed, so the same answer -- when
 *   - the replica's connection closed before it answered (it died, or was
 *     restarted), or no answer came within the call's timeout: at most
 *     `retries` times per call, each time to whichever replica nng picks
 *     (the dead one is gone from the socket);
 *   - the replica answered `overloaded` (its queue is full, or it is
 *     draining on SIGTERM): not counted as a failure; retried after a short
 *     growing backoff for up to `overload_wait_ms`, then the `overloaded`
 *     answer is returned as it is.
 * A call returns exactly one answer.  A timed-out attempt may still run on
 * its replica (its answer is dropped): a retry after a timeout can cost
 * model time twice, never a second answer.
 *
 * Ownership: sx_client_open* return a client freed with sx_client_close
 * (after every call has returned); the options' strings are copied.
 * Responses are malloc'd; the caller frees them. */
#ifndef SX_CLIENT_H
#define SX_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "common/sx_error.h"

typedef struct sx_client sx_client;

typedef struct sx_client_opts {
    const char *const *addrs;  /* n_addrs addresses, tcp://HOST:PORT or ipc:///PATH */
    int n_addrs;
    int retries;               /* transport failures and timeouts retried per call */
    int overload_wait_ms;      /* how long `overloaded` answers are retried; 0: never */
    int backoff_ms;            /* first wait after `overloaded`; doubles up to 1 s */
} sx_client_opts;

/* The defaults for many replicas: retries 3, overload_wait_ms 60000,
 * backoff_ms 20, no addresses. */
void sx_client_opts_init(sx_client_opts *o);

/* Dials every address.  SX_EIO when none of them can be reached now;
 * those that cannot are dialled again in the background until they answer
 * (a replica started later joins by itself).  SX_EINVAL without addresses. */
int  sx_client_open_opts(const sx_client_opts *o, sx_client **out, sx_error *err);

/* One address, no retries, `overloaded` returned at once: a single
 * server's answers exactly as it gives them. */
int  sx_client_open(const char *addr, sx_client **out, sx_error *err);
void sx_client_close(sx_client *c);

/* Sends one request body and waits for the response body (*resp,
 * NUL-terminated, *resp_len without the NUL), retrying as above.
 * timeout_ms bounds each attempt's wait (<= 0 waits forever).  SX_ELIMIT
 * when the last attempt timed out, SX_EIO on other transport errors. */
int  sx_client_call(sx_client *c, const char *req, size_t len, int timeout_ms, char **resp,
                    size_t *resp_len, sx_error *err);

/* The same with JSON values: *resp is a new reference to the parsed
 * response ({"ok":...}). */
int  sx_client_call_json(sx_client *c, const json_t *req, int timeout_ms, json_t **resp,
                         sx_error *err);

/* Counters since open; safe to read while calls run. */
typedef struct sx_client_stats {
    long long calls;              /* sx_client_call invocations */
    long long attempts;           /* requests sent, retries included */
    long long retries;            /* resent after a lost connection or a timeout */
    long long overloaded;         /* resent after an `overloaded` answer */
    long long failed;             /* calls that ended in a transport error */
    int       connected;          /* replicas connected now */
} sx_client_stats;
void sx_client_get_stats(sx_client *c, sx_client_stats *st);

#endif
