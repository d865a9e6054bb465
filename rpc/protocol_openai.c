/* sx_rpc: the OpenAI chat-completions dialect (see protocol.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/protocol.h"

static int bad(sx_error *err, const char *ptr, const char *msg)
{
    return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s", msg);
}

static int num(const json_t *root, const char *k, double lo, int lo_open, double hi, int *set,
               double *out, sx_error *err)
{
    const json_t *v = json_object_get(root, k);
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", k);
    *set = 0;
    if (!v || json_is_null(v))
        return SX_OK;
    if (!json_is_number(v))
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must be a number", k);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must be in %c%g, %g], got %g", k,
                           lo_open ? '(' : '[', lo, hi, x);
    *set = 1;
    *out = x;
    return SX_OK;
}

static int integer(const json_t *root, const char *k, long long lo, long long hi, int *set,
                   long long *out, sx_error *err)
{
    const json_t *v = json_object_get(root, k);
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", k);
    *set = 0;
    if (!v || json_is_null(v))
        return SX_OK;
    if (!json_is_integer(v))
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must be an integer", k);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must be in [%lld, %lld], got %lld", k, lo,
                           hi, x);
    *set = 1;
    *out = x;
    return SX_OK;
}

static int flag(const json_t *root, const char *k, int *out, sx_error *err)
{
    const json_t *v = json_object_get(root, k);
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", k);
    if (!v || json_is_null(v))
        return SX_OK;
    if (!json_is_boolean(v))
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must be a boolean", k);
    *out = json_is_true(v);
    return SX_OK;
}

static int response_format(sx_rpc_req *r, const json_t *rf, const sx_rpc_limits *lim,
                           sx_error *err)
{
    if (!rf || json_is_null(rf))
        return SX_OK;
    if (!json_is_object(rf))
        return bad(err, "/response_format", "response_format must be an object");
    const json_t *type = json_object_get(rf, "type");
    if (!json_is_string(type))
        return bad(err, "/response_format/type", "response_format.type must be a string");
    const char *t = json_string_value(type);
    if (!strcmp(t, "text"))
        return SX_OK;
    if (!strcmp(t, "json_object")) {
        r->mode = SX_RPC_JSON_OBJECT;
        return SX_OK;
    }
    if (strcmp(t, "json_schema"))
        return sx_err_setp(err, SX_EINVAL, "/response_format/type", -1,
                           "response_format.type must be text, json_object or json_schema, not "
                           "\"%.60s\"", t);
    const json_t *js = json_object_get(rf, "json_schema");
    if (!json_is_object(js))
        return bad(err, "/response_format/json_schema", "json_schema must be an object");
    const json_t *name = json_object_get(js, "name"), *strict = json_object_get(js, "strict");
    if (name && !json_is_string(name))
        return bad(err, "/response_format/json_schema/name", "name must be a string");
    /* strict or not, strux only ever enforces the schema exactly */
    if (strict && !json_is_boolean(strict) && !json_is_null(strict))
        return bad(err, "/response_format/json_schema/strict", "strict must be a boolean");
    const json_t *schema = json_object_get(js, "schema");
    if (!schema)
        return bad(err, "/response_format/json_schema", "json_schema needs a \"schema\"");
    return sx_rpc_req_set_schema(r, schema, lim, SX_RPC_OPENAI_SCHEMA_AT, err);
}

static int sampling(sx_rpc_req *r, const json_t *root, const sx_rpc_limits *lim, sx_error *err)
{
    sx_sampling *s = &r->sampling;
    int set, rc;
    double d;
    long long i;
    memset(s, 0, sizeof *s);
    s->temperature = 1; /* OpenAI's default */
    s->top_p = 1;
    s->repetition_penalty = 1;
    r->max_tokens = lim->default_max_tokens;
    if ((rc = num(root, "temperature", 0, 0, 2, &set, &d, err)))
        return rc;
    if (set)
        s->temperature = (float)d;
    if ((rc = num(root, "top_p", 0, 1, 1, &set, &d, err)))
        return rc;
    if (set)
        s->top_p = (float)d;
    if ((rc = num(root, "min_p", 0, 0, 1, &set, &d, err)))
        return rc;
    if (set)
        s->min_p = (float)d;
    if ((rc = num(root, "repetition_penalty", 0, 1, 100, &set, &d, err)))
        return rc;
    if (set)
        s->repetition_penalty = (float)d;
    if ((rc = integer(root, "top_k", 0, 1 << 30, &set, &i, err)))
        return rc;
    if (set)
        s->top_k = (int)i;
    if ((rc = integer(root, "seed", -(1ll << 62), 1ll << 62, &set, &i, err)))
        return rc;
    if (set)
        s->seed = (uint64_t)i;
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "max_completion_tokens" : "max_tokens";
        if ((rc = integer(root, name, 1, 1ll << 40, &set, &i, err)))
            return rc;
        if (!set)
            continue;
        if (i > lim->max_tokens) {
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/%s", name);
            return sx_err_setp(err, SX_ELIMIT, ptr, -1,
                               "%s %lld is over this server's limit of %d", name, i,
                               lim->max_tokens);
        }
        r->max_tokens = (int)i;
    }
    if ((rc = flag(root, "logprobs", &r->logprobs, err)))
        return rc;
    if ((rc = integer(root, "top_logprobs", 0, SX_SAMPLER_MAX_TOPN, &set, &i, err)))
        return rc;
    if (set)
        r->top_logprobs = (int)i;
    if (r->top_logprobs && !r->logprobs)
        return bad(err, "/top_logprobs", "top_logprobs needs logprobs: true");
    s->top_n = r->logprobs ? r->top_logprobs : 0;
    r->n = 1;
    r->speculate = -1;
    const json_t *spec = json_object_get(root, "speculate");
    if (spec && (rc = sx_rpc_req_set_speculate(r, spec, "/speculate", err)))
        return rc;
    if ((rc = integer(root, "n", 1, SX_RPC_MAX_N, &set, &i, err)))
        return rc;
    if (set)
        r->n = (int)i;
    if ((rc = num(root, "timeout", 0, 1, lim->max_timeout_s, &set, &d, err)))
        return rc;
    if (set)
        r->timeout_s = d;
    const json_t *stop = json_object_get(root, "stop");
    if (stop && !json_is_null(stop))
        return sx_err_setp(err, SX_EUNSUPPORTED, "/stop", -1,
                           "stop sequences are not supported (the grammar decides where output "
                           "ends)");
    const char *const zero[] = {"presence_penalty", "frequency_penalty"};
    for (int k = 0; k < 2; k++) {
        if ((rc = num(root, zero[k], -2, 0, 2, &set, &d, err)))
            return rc;
        if (set && d != 0) {
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/%s", zero[k]);
            return sx_err_setp(err, SX_EUNSUPPORTED, ptr, -1,
                               "%s is not supported; use repetition_penalty", zero[k]);
        }
    }
    if ((rc = flag(root, "stream", &r->stream, err)))
        return rc;
    const json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so))
            return bad(err, "/stream_options", "stream_options must be an object");
        const json_t *iu = json_object_get(so, "include_usage");
        if (iu && !json_is_boolean(iu))
            return bad(err, "/stream_options/include_usage", "include_usage must be a boolean");
        r->stream_usage = json_is_true(iu);
    }
    /* the `strux` extension: beam search (temperature defaults to 0 there),
     * field_confidence */
    const json_t *ext = json_object_get(root, "strux");
    if (ext && !json_is_null(ext)) {
        if (!json_is_object(ext))
            return bad(err, "/strux", "strux must be an object");
        if (json_object_get(ext, "num_beams") && !json_object_get(root, "temperature"))
            s->temperature = 0;
        if ((rc = sx_rpc_req_set_beams(r, ext, "/strux", err)))
            return rc;
        if (r->num_beams && r->stream)
            return bad(err, "/stream", "beam search answers once, at the end: no stream");
        if ((rc = sx_rpc_req_set_field_confidence(r, json_object_get(ext, "field_confidence"),
                                                  "/strux/field_confidence", err)))
            return rc;
    }
    return SX_OK;
}

int sx_rpc_openai_parse(const char *buf, size_t len, const sx_rpc_limits *lim, sx_rpc_req *out,
                        sx_error *err)
{
    sx_rpc_limits dl;
    int rc;
    memset(out, 0, sizeof *out);
    if (!lim) {
        sx_rpc_limits_default(&dl);
        lim = &dl;
    }
    if (len > lim->max_request_bytes)
        return sx_err_setp(err, SX_ELIMIT, "", -1, "request is %zu bytes; the limit is %zu", len,
                           lim->max_request_bytes);
    /* \u0000 is valid JSON; text fields refuse it themselves */
    json_t *root;
    int rc0 = sx_rpc_load_json(buf, len, &root, err);
    if (rc0)
        return rc0;
    out->root = root;
    if (!json_is_object(root)) {
        rc = bad(err, "", "a request must be a JSON object");
        goto fail;
    }
    const json_t *model = json_object_get(root, "model");
    if (model && !json_is_string(model)) {
        rc = bad(err, "/model", "model must be a string");
        goto fail;
    }
    out->model = model ? json_string_value(model) : NULL;
    const json_t *msgs = json_object_get(root, "messages");
    if (!msgs) {
        rc = bad(err, "", "a request needs messages");
        goto fail;
    }
    if ((rc = sx_rpc_req_set_messages(out, msgs, lim, 0, "/messages", err)) ||
        (rc = response_format(out, json_object_get(root, "response_format"), lim, err)) ||
        (rc = sampling(out, root, lim, err)))
        goto fail;
    if (!out->key && !(out->key = strdup(""))) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    return SX_OK;
fail:
    sx_rpc_req_free(out);
    return rc;
}

static int set(json_t *o, const char *k, json_t *v)
{
    return json_object_set_new(o, k, v) ? SX_ENOMEM : SX_OK;
}

static json_t *ms(double x)
{
    if (!isfinite(x) || x < 0)
        x = 0;
    return json_real(round(x * 1000.0) / 1000.0);
}

static json_t *usage_json(const sx_rpc_result *res)
{
    return json_pack("{s:i, s:i, s:i, s:{s:i}, s:{s:i}}", "prompt_tokens", res->n_prompt,
                     "completion_tokens", res->n_completion, "total_tokens",
                     res->n_prompt + res->n_completion, "completion_tokens_details",
                     "forced_tokens", res->n_forced, "prompt_tokens_details", "cached_tokens",
                     res->n_cached);
}

static int finish(json_t *o, char **out, size_t *len)
{
    *out = json_dumps(o, JSON_COMPACT | SX_RPC_JSON_PRECISION);
    json_decref(o);
    if (!*out)
        return SX_ENOMEM;
    if (len)
        *len = strlen(*out);
    return SX_OK;
}

/* choices[i] of a chat.completion */
static json_t *choice_json(const sx_rpc_choice *c, int i)
{
    json_t *content = json_stringn(c->text ? c->text : "", c->text_len);
    if (!content) /* free text cut mid-character by max_tokens */
        content = json_stringn_nocheck(c->text ? c->text : "", c->text_len);
    json_t *msg = json_pack("{s:s, s:o, s:n}", "role", "assistant", "content", content, "refusal");
    json_t *choice = json_pack("{s:i, s:o, s:s}", "index", i, "message", msg, "finish_reason",
                               c->finish_reason ? c->finish_reason : "stop");
    if (choice && set(choice, "logprobs", c->logprobs ? json_pack("{s:O}", "content", c->logprobs)
                                                      : json_null())) {
        json_decref(choice);
        return NULL;
    }
    return choice;
}

int sx_rpc_openai_response_dump(const sx_rpc_req *r, const char *cid, long created,
                                const char *model, const sx_rpc_result *res, char **out,
                                size_t *len)
{
    char marks[1 + SX_RPC_MAX_N][80];
    const json_t *vals[1 + SX_RPC_MAX_N] = {0};
    const char *texts[1 + SX_RPC_MAX_N] = {0};
    size_t lens[1 + SX_RPC_MAX_N] = {0};
    int n_marks = 1;
    *out = NULL;
    json_t *o = json_object(), *strux = NULL;
    if (!o)
        return SX_ENOMEM;
    /* n = 1: the result itself is the one choice */
    sx_rpc_choice one = {res->text, res->text_len, res->output, res->finish_reason,
                         res->n_completion, res->n_forced, res->logprobs, NULL,
                         res->field_confidence};
    const sx_rpc_choice *cs = res->choices ? res->choices : &one;
    int n = res->choices ? res->n_choices : 1;
    if (set(o, "id", json_string(cid)) || set(o, "object", json_string("chat.completion")) ||
        set(o, "created", json_integer(created)) || set(o, "model", json_string(model)))
        goto fail;
    json_t *choices = json_array();
    if (!choices || set(o, "choices", choices))
        goto fail;
    for (int i = 0; i < n; i++)
        if (json_array_append_new(choices, choice_json(&cs[i], i)))
            goto fail;
    if (set(o, "usage", usage_json(res)))
        goto fail;
    /* strux's own figures, ignored by OpenAI clients */
    strux = json_pack("{s:o, s:o, s:o, s:o, s:o, s:b}", "queue_ms", ms(res->queue_ms),
                      "compile_ms", ms(res->compile_ms), "ttft_ms", ms(res->ttft_ms), "tpot_ms",
                      ms(res->tpot_ms), "total_ms", ms(res->total_ms), "cache_hit",
                      res->cache_hit);
    /* outputs as marks, replaced by the model's digits once dumped */
    for (int i = 0; i < 1 + SX_RPC_MAX_N; i++)
        snprintf(marks[i], sizeof marks[i], "\x01strux-output-%d-%p-%p\x01", i, (void *)marks,
                 (const void *)res->text);
    vals[0] = res->output;
    texts[0] = res->text;
    lens[0] = res->text_len;
    if (!strux || set(strux, "output", res->output ? json_string(marks[0]) : json_null()))
        goto fail;
    if (n > 1) {
        json_t *outs = json_array();
        if (!outs || set(strux, "outputs", outs))
            goto fail;
        for (int i = 0; i < n && i < SX_RPC_MAX_N; i++) {
            vals[1 + i] = cs[i].output;
            texts[1 + i] = cs[i].text;
            lens[1 + i] = cs[i].text_len;
            n_marks = 2 + i;
            if (json_array_append_new(outs, cs[i].output ? json_string(marks[1 + i])
                                                         : json_null()))
                goto fail;
        }
    }
    if (cs[0].field_confidence) {
        /* confidence per field: choice 0's, and with n > 1 every choice's */
        if (set(strux, "field_confidence", json_deep_copy(cs[0].field_confidence)))
            goto fail;
        json_t *fcs = n > 1 ? json_array() : NULL;
        if (n > 1 && (!fcs || set(strux, "field_confidences", fcs)))
            goto fail;
        for (int i = 0; n > 1 && i < n; i++)
            if (json_array_append_new(fcs, cs[i].field_confidence
                                               ? json_deep_copy(cs[i].field_confidence)
                                               : json_null()))
                goto fail;
    }
    if (cs[0].score) {
        /* beam search: each choice's sequence score */
        json_t *bs = json_array();
        if (!bs || set(strux, "beam_scores", bs))
            goto fail;
        for (int i = 0; i < n; i++)
            if (json_array_append_new(bs, json_real(cs[i].score ? *cs[i].score : 0)))
                goto fail;
    }
    if (res->scores && r->mode == SX_RPC_CHOICES) {
        json_t *sc = json_object();
        if (!sc || set(strux, "scores", sc))
            goto fail;
        for (size_t i = 0; i < r->n_choices; i++)
            if (set(sc, r->choices[i], json_real(res->scores[i])))
                goto fail;
    }
    if (set(o, "strux", strux)) {
        strux = NULL;
        goto fail;
    }
    return sx_rpc_dump_with_outputs(o, marks, vals, texts, lens, n_marks, out, len);
fail:
    json_decref(strux);
    json_decref(o);
    return SX_ENOMEM;
}

int sx_rpc_openai_chunk_dump(const char *cid, long created, const char *model, int index,
                             const char *content, size_t content_len, int role_first,
                             const char *finish_reason, const sx_rpc_result *usage, char **out,
                             size_t *len)
{
    *out = NULL;
    json_t *o = json_pack("{s:s, s:s, s:I, s:s}", "id", cid, "object", "chat.completion.chunk",
                          "created", (json_int_t)created, "model", model);
    if (!o)
        return SX_ENOMEM;
    json_t *choices = json_array();
    if (!choices || set(o, "choices", choices))
        goto fail;
    if (usage) {
        if (set(o, "usage", usage_json(usage)))
            goto fail;
    } else {
        json_t *delta = json_object(), *c = NULL;
        if (!delta)
            goto fail;
        if (role_first && set(delta, "role", json_string("assistant"))) {
            json_decref(delta);
            goto fail;
        }
        if (content && content_len && set(delta, "content", json_stringn(content, content_len))) {
            json_decref(delta);
            goto fail;
        }
        c = json_pack("{s:i, s:o, s:o, s:n}", "index", index, "delta", delta, "finish_reason",
                      finish_reason ? json_string(finish_reason) : json_null(), "logprobs");
        if (!c || json_array_append_new(choices, c))
            goto fail;
    }
    char *body = json_dumps(o, JSON_COMPACT | SX_RPC_JSON_PRECISION);
    json_decref(o);
    if (!body)
        return SX_ENOMEM;
    size_t n = strlen(body);
    *out = malloc(n + 9);
    if (!*out) {
        free(body);
        return SX_ENOMEM;
    }
    memcpy(*out, "data: ", 6);
    memcpy(*out + 6, body, n);
    memcpy(*out + 6 + n, "\n\n", 3);
    free(body);
    if (len)
        *len = n + 8;
    return SX_OK;
fail:
    json_decref(o);
    return SX_ENOMEM;
}

int sx_rpc_openai_error_dump(int code, const char *message, const char *pointer, char **out,
                             size_t *len)
{
    *out = NULL;
    const char *type = code == SX_RPC_INTERNAL   ? "server_error"
                       : code == SX_RPC_OVERLOADED ? "overloaded_error"
                       : code == SX_RPC_TIMEOUT    ? "timeout_error"
                                                   : "invalid_request_error";
    json_t *msg = json_string(message && *message ? message : sx_rpc_code_name(code));
    if (!msg)
        msg = json_string(sx_rpc_code_name(code));
    json_t *param = pointer && *pointer ? json_string(pointer) : json_null();
    if (!param)
        param = json_null();
    json_t *o = json_pack("{s:{s:o, s:s, s:o, s:s}}", "error", "message", msg, "type", type,
                          "param", param, "code", sx_rpc_code_name(code));
    if (!o)
        return SX_ENOMEM;
    return finish(o, out, len);
}
