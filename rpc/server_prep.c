/* sx_rpc_server: the prep threads -- everything about a request that does
 * not need the generator (parse, check, compile, build and tokenize the
 * prompt), so that the scheduler thread only ever steps the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Returns 1 when the job was answered (refused) here. */
static int prepare(sx_rpc_server *s, rpc_job *j)
{
    sx_error err;
    char ptr[600];
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
        return 1;
    }
    j->parsed = 1;
    free(j->body);
    j->body = NULL;
    if (j->req.timeout_s > 0)
        j->deadline = j->t_recv + j->req.timeout_s * 1e3;

    if (j->req.mode != SX_RPC_TEXT) {
        rc = sx_rpc_cache_get(s->cache, &j->req, &j->comp, &j->cache_hit, &err);
        if (rc) {
            snprintf(ptr, sizeof ptr, "%s%s", constraint_at(j), err.pointer);
            rpc_fail(j, sx_rpc_code_of(SX_RPC_STAGE_COMPILE, rc), err.msg, ptr, NULL);
            return 1;
        }
        j->compile_ms = j->cache_hit ? 0 : j->comp->compile_ms;
    }

    sx_chat_msg *msgs = NULL;
    size_t n_msgs = 0;
    char *owned = NULL;
    if (j->req.prompt) /* /v1/completions: the text as given, no chat template */
        rc = sx_tok_encode(s->tok, j->req.prompt, j->req.prompt_len, SX_TOK_SPECIAL, &j->prompt,
                           &err);
    else
        rc = sx_rpc_build_messages(&j->req, &msgs, &n_msgs, &owned, &err);
    if (!rc && !j->req.prompt)
        rc = sx_chat_encode(s->tok, msgs, n_msgs, 1, &j->prompt, &err);
    /* a system turn (strux's extraction prompt with the schema, or the
     * caller's) is what requests share: its KV is cached by the generator */
    if (!rc && n_msgs > 1 && !strcmp(msgs[0].role, "system")) {
        int32_t im_end = sx_tok_find(s->tok, "<|im_end|>", 10);
        for (size_t k = 0; k < j->prompt.n; k++)
            if (j->prompt.v[k] == im_end) {
                j->prefix_len = (int)k + 1;
                break;
            }
    }
    /* a forced tool call: the answer opens with Qwen3's tag, as the model
     * writes it, and the grammar takes the call's JSON from there */
    if (!rc && j->req.tool_call) {
        int32_t tag = sx_tok_find(s->tok, "<tool_call>", 11);
        if (tag < 0)
            rc = sx_err_set(&err, SX_EUNSUPPORTED, "this model's tokenizer has no <tool_call>");
        else if ((rc = sx_ids_push(&j->prompt, tag)))
            sx_err_set(&err, rc, "out of memory");
        else
            rc = sx_tok_encode(s->tok, "\n", 1, 0, &j->prompt, &err);
    }
    free(msgs);
    free(owned);
    if (rc) {
        rpc_fail(j, sx_rpc_code_of(SX_RPC_STAGE_PARSE, rc), err.msg,
                 j->req.document ? "/document" : j->req.prompt ? "/prompt" : "/messages", NULL);
        return 1;
    }
    /* logit_bias names tokens of this model's vocabulary */
    for (int k = 0; k < j->req.sampling.n_bias; k++)
        if (j->req.sampling.bias_ids[k] >= sx_tok_vocab_size(s->tok)) {
            char msg[160];
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
    if (j->req.stream && j->via == VIA_HTTP && (rc = rpc_stream_start(j))) {
        rpc_fail(j, SX_RPC_INTERNAL, "cannot start the event stream", NULL, NULL);
        return 1;
    }
    if (!j->req.stream && j->via == VIA_HTTP && (rc = rpc_http_watch(j))) {
        rpc_fail(j, SX_RPC_INTERNAL, "cannot watch the connection", NULL, NULL);
        return 1;
    }
    j->t_prep1 = rpc_now_ms();
    return 0;
}

void *rpc_prep_main(void *arg)
{
    sx_rpc_server *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->prep_head && !s->stop)
            pthread_cond_wait(&s->prep_cv, &s->mu);
        if (!s->prep_head)
            break;
        rpc_job *j = s->prep_head;
        s->prep_head = j->qnext;
        if (!s->prep_head)
            s->prep_tail = NULL;
        j->qnext = NULL;
        pthread_mutex_unlock(&s->mu);
        int answered = prepare(s, j);
        pthread_mutex_lock(&s->mu);
        if (!answered) {
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
