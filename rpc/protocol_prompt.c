/* sx_rpc: the prompt strux builds for `document` requests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/protocol.h"

/* The wording matters to the model, not to the guarantee (the grammar
 * enforces the constraint whatever the prompt says).  docs/PROTOCOL.md
 * quotes these strings; change both together. */
const char *sx_rpc_default_instruction(int mode)
{
    switch (mode) {
    case SX_RPC_SCHEMA:
        return "Extract the information in the user's document into one JSON value that conforms "
               "to the JSON Schema below. Use only facts stated in the document; where the "
               "document gives no value, use null if the schema allows it or leave an optional "
               "field out. Reply with the JSON value only.";
    case SX_RPC_CHOICES:
        return "Classify the user's document. Reply with exactly one of the labels below, "
               "written as a JSON string.";
    case SX_RPC_REGEX:
        return "Answer from the user's document with text that matches the regular expression "
               "below, and nothing else.";
    case SX_RPC_JSON_OBJECT:
        return "Extract the information in the user's document into one JSON object with short, "
               "descriptive keys. Reply with the JSON object only.";
    default:
        return "Read the user's document and answer concisely.";
    }
}

static const char *constraint_label(int mode)
{
    switch (mode) {
    case SX_RPC_SCHEMA: return "JSON Schema: ";
    case SX_RPC_CHOICES: return "Labels: ";
    case SX_RPC_REGEX: return "Regular expression: ";
    default: return NULL;
    }
}

int sx_rpc_build_messages(const sx_rpc_req *r, sx_chat_msg **msgs, size_t *n, char **owned,
                          sx_error *err)
{
    *msgs = NULL;
    *n = 0;
    *owned = NULL;
    if (r->msgs) {
        *msgs = malloc(r->n_msgs * sizeof **msgs);
        if (!*msgs)
            return sx_err_set(err, SX_ENOMEM, "out of memory");
        memcpy(*msgs, r->msgs, r->n_msgs * sizeof **msgs);
        *n = r->n_msgs;
        return SX_OK;
    }
    if (!r->document)
        return sx_err_set(err, SX_EINVAL, "request has neither messages nor a document");
    const char *sys = r->system;
    if (!sys) {
        const char *ins = r->instruction ? r->instruction : sx_rpc_default_instruction(r->mode);
        const char *label = constraint_label(r->mode);
        size_t cap = strlen(ins) + (label ? strlen(label) + r->key_len + 2 : 0) + 1;
        char *buf = malloc(cap);
        if (!buf)
            return sx_err_set(err, SX_ENOMEM, "out of memory");
        if (label)
            snprintf(buf, cap, "%s\n\n%s%s", ins, label, r->key);
        else
            snprintf(buf, cap, "%s", ins);
        *owned = buf;
        sys = buf;
    }
    *msgs = malloc(2 * sizeof **msgs);
    if (!*msgs) {
        free(*owned);
        *owned = NULL;
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    (*msgs)[0].role = "system";
    (*msgs)[0].content = sys;
    (*msgs)[1].role = "user";
    (*msgs)[1].content = r->document;
    *n = 2;
    return SX_OK;
}

int sx_rpc_prompt_encode(const sx_tokenizer *tok, const sx_rpc_req *r, sx_ids *out,
                         int *prefix_len, sx_error *err)
{
    sx_chat_msg *msgs = NULL;
    size_t n_msgs = 0;
    char *owned = NULL;
    *prefix_len = 0;
    out->n = 0;
    int rc;
    if (r->prompt) /* /v1/completions: the text as given, no chat template */
        rc = sx_tok_encode(tok, r->prompt, r->prompt_len, SX_TOK_SPECIAL, out, err);
    else if (!(rc = sx_rpc_build_messages(r, &msgs, &n_msgs, &owned, err)))
        rc = sx_chat_encode(tok, msgs, n_msgs, !r->thinking, out, err);
    /* thinking: the assistant turn as Qwen3's template opens it with
     * enable_thinking (no empty think block), and the <think> the model
     * writes first, so that what follows is its reasoning */
    if (!rc && r->thinking && !r->prompt) {
        int32_t im_start = sx_tok_find(tok, "<|im_start|>", 12), think = sx_tok_find(tok, "<think>", 7);
        if (im_start < 0 || think < 0)
            rc = sx_err_set(err, SX_EUNSUPPORTED, "this model's tokenizer has no <think>");
        else if ((rc = sx_ids_push(out, im_start)))
            sx_err_set(err, rc, "out of memory");
        else if (!(rc = sx_tok_encode(tok, "assistant\n", 10, 0, out, err)) &&
                 (rc = sx_ids_push(out, think)))
            sx_err_set(err, rc, "out of memory");
        else if (!rc)
            rc = sx_tok_encode(tok, "\n", 1, 0, out, err);
    }
    /* a system turn (strux's extraction prompt with the schema, or the
     * caller's) is what requests share: its KV is cached by the generator */
    if (!rc && n_msgs > 1 && !strcmp(msgs[0].role, "system")) {
        int32_t im_end = sx_tok_find(tok, "<|im_end|>", 10);
        for (size_t k = 0; k < out->n; k++)
            if (out->v[k] == im_end) {
                *prefix_len = (int)k + 1;
                break;
            }
    }
    /* a forced tool call: the answer opens with Qwen3's tag, as the model
     * writes it, and the grammar takes the call's JSON from there */
    if (!rc && r->tool_call && !r->thinking) {
        int32_t tag = sx_tok_find(tok, "<tool_call>", 11);
        if (tag < 0)
            rc = sx_err_set(err, SX_EUNSUPPORTED, "this model's tokenizer has no <tool_call>");
        else if ((rc = sx_ids_push(out, tag)))
            sx_err_set(err, rc, "out of memory");
        else
            rc = sx_tok_encode(tok, "\n", 1, 0, out, err);
    }
    free(msgs);
    free(owned);
    return rc;
}
