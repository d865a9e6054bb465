/* sx_client: a C client for struxd's nng REQ/REP protocol
 * (docs/PROTOCOL.md).
 *
 * One client is one REQ socket dialled to one address; every call opens its
 * own context, so any number of threads may call at once over the same
 * connection.  Requests are never resent by nng (a resend would run the
 * model twice); a call waits for its answer or its timeout.
 *
 * Ownership: sx_client_open returns a client freed with sx_client_close
 * (after every call has returned).  Responses are malloc'd; the caller frees
 * them. */
#ifndef SX_CLIENT_H
#define SX_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "common/sx_error.h"

typedef struct sx_client sx_client;

/* Dials addr (tcp://host:port or ipc:///path).  SX_EIO when nothing
 * listens there; once connected, a dropped connection is re-dialled in the
 * background. */
int  sx_client_open(const char *addr, sx_client **out, sx_error *err);
void sx_client_close(sx_client *c);

/* Sends one request body and waits for the response body (*resp,
 * NUL-terminated, *resp_len without the NUL).  timeout_ms <= 0 waits
 * forever.  SX_ELIMIT on timeout, SX_EIO on transport errors. */
int  sx_client_call(sx_client *c, const char *req, size_t len, int timeout_ms, char **resp,
                    size_t *resp_len, sx_error *err);

/* The same with JSON values: *resp is a new reference to the parsed
 * response ({"ok":...}). */
int  sx_client_call_json(sx_client *c, const json_t *req, int timeout_ms, json_t **resp,
                         sx_error *err);

#endif
