/* libFuzzer: the service's request parsers (native and OpenAI) and message
 * builders on untrusted bytes (what any client can send).  Input: a request
 * body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sx_rpc_limits lim;
    sx_rpc_limits_default(&lim);
    lim.max_request_bytes = 8192;
    lim.max_schema_bytes = 2048;
    lim.max_choices = 16;
    lim.max_messages = 8;
    sx_rpc_req r;
    sx_error e;
    char *text = NULL;
    size_t len = 0;
    /* the OpenAI dialect first: same bytes, other rules */
    if (sx_rpc_openai_parse((const char *)data, size, &lim, &r, &e) == SX_OK) {
        double sc[16] = {0};
        sx_rpc_result res = {.text = "{}", .text_len = 2, .finish_reason = "length",
                             .scores = r.mode == SX_RPC_CHOICES ? sc : NULL};
        if (sx_rpc_openai_response_dump(&r, "chatcmpl-x", 0, "m", &res, &text, &len) == SX_OK) {
            json_t *back = json_loads(text, 0, NULL);
            if (!back)
                abort();
            json_decref(back);
        }
        free(text);
        text = NULL;
        sx_rpc_req_free(&r);
    } else if (sx_rpc_openai_error_dump(sx_rpc_code_of(SX_RPC_STAGE_PARSE, e.code), e.msg,
                                        e.pointer, &text, &len) == SX_OK) {
        json_t *back = json_loads(text, 0, NULL);
        if (!back)
            abort();
        json_decref(back);
        free(text);
        text = NULL;
    }
    int rc = sx_rpc_req_parse((const char *)data, size, &lim, &r, &e);
    if (rc) {
        /* every refusal must serialise, whatever bytes the message quotes */
        if (sx_rpc_error_dump(NULL, sx_rpc_code_of(SX_RPC_STAGE_PARSE, rc), e.msg, e.pointer, NULL,
                              &text, &len) == SX_OK) {
            json_t *back = json_loads(text, 0, NULL);
            if (!back)
                abort();
            json_decref(back);
        }
        free(text);
        return 0;
    }
    sx_chat_msg *msgs = NULL;
    size_t n = 0;
    char *owned = NULL;
    if (sx_rpc_build_messages(&r, &msgs, &n, &owned, &e) == SX_OK && n == 0)
        abort();
    free(msgs);
    free(owned);
    /* the output check and the response on the request's own document */
    json_t *out = NULL;
    const char *doc = r.document ? r.document : "";
    if (sx_rpc_check_output(&r, doc, strlen(doc), NULL, &out, &e) == SX_OK) {
        double scores[16] = {0};
        sx_rpc_result res = {.text = doc, .text_len = strlen(doc), .output = out,
                             .finish_reason = "stop",
                             .scores = r.mode == SX_RPC_CHOICES ? scores : NULL};
        if (sx_rpc_response_dump(&r, &res, &text, &len) == SX_OK) {
            json_t *back = json_loads(text, 0, NULL);
            if (!back)
                abort();
            json_decref(back);
        }
        free(text);
        json_decref(out);
    }
    sx_rpc_req_free(&r);
    return 0;
}
