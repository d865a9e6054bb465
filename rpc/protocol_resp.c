/* sx_rpc: error codes, output checks and response serialisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_numjson.h"
#include "grammar/validator/validator.h"
#include "rpc/protocol.h"

static const char *const code_names[SX_RPC_CODE_COUNT] = {
    "ok",       "bad_request", "schema_unsupported", "schema_invalid", "too_large", "overloaded",
    "timeout",  "incomplete",  "cancelled",          "internal",
};

const char *sx_rpc_code_name(int code)
{
    return code >= 0 && code < SX_RPC_CODE_COUNT ? code_names[code] : "internal";
}

int sx_rpc_http_status(int code)
{
    switch (code) {
    case SX_RPC_OK: return 200;
    case SX_RPC_BAD_REQUEST: return 400;
    case SX_RPC_SCHEMA_UNSUPPORTED:
    case SX_RPC_SCHEMA_INVALID:
    case SX_RPC_INCOMPLETE: return 422;
    case SX_RPC_TOO_LARGE: return 413;
    case SX_RPC_OVERLOADED: return 503;
    case SX_RPC_TIMEOUT: return 504;
    case SX_RPC_CANCELLED: return 499;
    default: return 500;
    }
}

int sx_rpc_code_of(int stage, int code)
{
    switch (code) {
    case SX_OK: return SX_RPC_OK;
    case SX_ELIMIT: return SX_RPC_TOO_LARGE;
    case SX_ENOMEM:
    case SX_EINTERNAL:
    case SX_EIO: return SX_RPC_INTERNAL;
    default: break;
    }
    if (stage == SX_RPC_STAGE_COMPILE)
        return code == SX_EUNSUPPORTED ? SX_RPC_SCHEMA_UNSUPPORTED : SX_RPC_SCHEMA_INVALID;
    if (stage == SX_RPC_STAGE_RUN)
        return SX_RPC_INTERNAL;
    return SX_RPC_BAD_REQUEST;
}

const char *sx_rpc_mode_name(int mode)
{
    static const char *const names[] = {"text", "schema", "choices", "regex", "json_object"};
    return mode >= 0 && mode <= SX_RPC_JSON_OBJECT ? names[mode] : "text";
}

/* jansson refuses integers beyond int64 and generated documents may hold
 * them: read with sx_numjson (big numbers become reals; their digits are
 * kept by sx_rpc_output_json, which reads the text again). */
static json_t *load_value(const char *text, size_t len, json_error_t *je)
{
    sx_numtab t = {0};
    json_t *v = sx_numjson_loadb(text, len, SX_NUMJSON_REJECT_DUPLICATES, &t, je);
    sx_numtab_free(&t);
    return v;
}

int sx_rpc_check_output(const sx_rpc_req *r, const char *text, size_t len,
                        const sx_validator *validator, json_t **output, sx_error *err)
{
    json_error_t je;
    json_t *v = NULL;
    int rc = SX_OK;
    *output = NULL;
    switch (r->mode) {
    case SX_RPC_TEXT:
        return SX_OK;
    case SX_RPC_REGEX:
        if (!(v = json_stringn(text, len)))
            return sx_err_set(err, SX_EFORMAT, "output is not valid UTF-8");
        *output = v;
        return SX_OK;
    default:
        break;
    }
    if (!(v = load_value(text, len, &je)))
        return sx_err_setp(err, SX_EFORMAT, NULL, je.position, "output is not JSON: %s", je.text);
    if (r->mode == SX_RPC_JSON_OBJECT && !json_is_object(v)) {
        rc = sx_err_set(err, SX_EFORMAT, "output is not a JSON object");
        goto fail;
    }
    if (r->mode == SX_RPC_CHOICES) {
        size_t i = 0;
        if (json_is_string(v))
            for (; i < r->n_choices; i++)
                if (!strcmp(json_string_value(v), r->choices[i]))
                    break;
        if (!json_is_string(v) || i == r->n_choices) {
            rc = sx_err_set(err, SX_EFORMAT, "output is not one of the labels");
            goto fail;
        }
    }
    if (r->mode == SX_RPC_SCHEMA && validator) {
        int valid = 0;
        sx_error why;
        sx_err_clear(&why);
        /* on the text: numbers judged on the digits the model wrote */
        if ((rc = sx_val_validate_text(validator, text, len, &valid, &why))) {
            sx_err_setp(err, rc, why.pointer, -1, "validator: %s", why.msg);
            goto fail;
        }
        if (!valid) {
            rc = sx_err_setp(err, SX_EFORMAT, why.pointer, -1,
                             "output does not validate against the schema: %s", why.msg);
            goto fail;
        }
    }
    *output = v;
    return SX_OK;
fail:
    json_decref(v);
    return rc;
}

/* Milliseconds rounded to microseconds: enough, and short on the wire. */
static json_t *ms(double x)
{
    if (!isfinite(x) || x < 0)
        x = 0;
    return json_real(round(x * 1000.0) / 1000.0);
}

static int set(json_t *o, const char *k, json_t *v)
{
    return json_object_set_new(o, k, v) ? SX_ENOMEM : SX_OK;
}

static int dump(json_t *o, char **out, size_t *len)
{
    *out = json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY | SX_RPC_JSON_PRECISION);
    json_decref(o);
    if (!*out)
        return SX_ENOMEM;
    if (len)
        *len = strlen(*out);
    return SX_OK;
}

/* Messages and pointers may have been cut mid-character by fixed buffers;
 * they must still serialise. */
static json_t *safe_string(const char *s)
{
    json_t *v = json_string(s);
    if (v)
        return v;
    char *c = strdup(s);
    if (!c)
        return NULL;
    for (char *p = c; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    v = json_string(c);
    free(c);
    return v;
}

static json_t *id_value(const json_t *id)
{
    return id ? json_deep_copy(id) : json_null();
}

/* v written compactly with the digits the model wrote: its text (the
 * document v was parsed from) read again keeping each number's text -- a
 * double would print the model's 0.3 as 0.29999999999999999 and cannot
 * hold a 30-digit integer at all.  A string output (regex, a label) is
 * written as jansson writes it: its text is not its JSON. */
char *sx_rpc_output_json(const json_t *v, const char *text, size_t len)
{
    if (text && !json_is_string(v)) {
        sx_numtab t = {0};
        json_error_t je;
        json_t *x = sx_numjson_loadb(text, len, 0, &t, &je);
        char *s = x && json_equal(x, (json_t *)v) ? sx_numjson_dumps(x, &t) : NULL;
        json_decref(x);
        sx_numtab_free(&t);
        if (s)
            return s;
    }
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
}

/* body with the JSON string `mark` (present exactly once) replaced by v
 * written with the model's digits (sx_rpc_output_json): a generated number
 * must reach the client as the value the validator checked, while timings
 * and scores elsewhere keep their short form.  Frees body and returns the
 * new text in *out. */
static int put_value(char *body, const char *mark, const json_t *v, const char *text,
                     size_t text_len, char **out)
{
    char *val = NULL, *q = NULL, *res = NULL;
    int rc = SX_ENOMEM;
    val = sx_rpc_output_json(v, text, text_len);
    json_t *m = json_string(mark);
    q = m ? json_dumps(m, JSON_ENCODE_ANY) : NULL;
    json_decref(m);
    char *at = q ? strstr(body, q) : NULL;
    if (!val || !q || !at || strstr(at + 1, q)) {
        /* out of memory, or the mark is not there exactly once */
        rc = val && q ? SX_EINTERNAL : SX_ENOMEM;
        goto out;
    }
    size_t nb = strlen(body), nq = strlen(q), nv = strlen(val), pre = (size_t)(at - body);
    res = malloc(nb - nq + nv + 1);
    if (!res)
        goto out;
    memcpy(res, body, pre);
    memcpy(res + pre, val, nv);
    memcpy(res + pre + nv, at + nq, nb - pre - nq + 1);
    *out = res;
    rc = SX_OK;
out:
    free(body);
    free(val);
    free(q);
    return rc;
}

/* o dumped, then each marks[i] replaced by vals[i] at full precision (a
 * NULL vals[i] leaves nothing to replace).  Takes o. */
int sx_rpc_dump_with_outputs(json_t *o, char (*marks)[80], const json_t *const *vals,
                             const char *const *texts, const size_t *lens, int n, char **out,
                             size_t *len)
{
    char *body = NULL;
    int rc = dump(o, &body, NULL);
    for (int i = 0; !rc && i < n; i++) {
        char *next = NULL;
        if (!vals[i])
            continue;
        rc = put_value(body, marks[i], vals[i], texts[i], lens[i], &next);
        body = next;
    }
    if (rc) {
        free(body);
        return rc;
    }
    *out = body;
    if (len)
        *len = strlen(body);
    return SX_OK;
}

/* {index, output, text, finish_reason, usage, logprobs?, score?,
 * field_confidence?} of choice i */
static json_t *choice_json(const sx_rpc_choice *c, int i, const char *mark)
{
    json_t *o = json_pack("{s:i, s:o, s:o, s:s, s:{s:i, s:i}}", "index", i, "output",
                          c->output ? json_string(mark) : json_null(), "text",
                          json_stringn_nocheck(c->text ? c->text : "", c->text_len),
                          "finish_reason", c->finish_reason ? c->finish_reason : "stop", "usage",
                          "completion_tokens", c->n_completion, "forced_tokens", c->n_forced);
    if (o && ((c->logprobs && set(o, "logprobs", json_deep_copy(c->logprobs))) ||
              (c->score && set(o, "score", json_real(*c->score))) ||
              (c->field_confidence &&
               set(o, "field_confidence", json_deep_copy(c->field_confidence))))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int sx_rpc_response_dump(const sx_rpc_req *r, const sx_rpc_result *res, char **out, size_t *len)
{
    /* placeholders unique per call (the address of this frame and the
     * text's): [0] the top-level output, [1 + i] choice i's */
    char marks[1 + SX_RPC_MAX_N][80];
    const json_t *vals[1 + SX_RPC_MAX_N] = {0};
    const char *texts[1 + SX_RPC_MAX_N] = {0};
    size_t lens[1 + SX_RPC_MAX_N] = {0};
    int n_marks = 1;
    for (int i = 0; i < 1 + SX_RPC_MAX_N; i++)
        snprintf(marks[i], sizeof marks[i], "\x01strux-output-%d-%p-%p\x01", i, (void *)marks,
                 (const void *)res->text);
    vals[0] = res->output;
    texts[0] = res->text;
    lens[0] = res->text_len;
    *out = NULL;
    json_t *o = json_object(), *usage = json_object(), *timing = json_object();
    int rc = SX_ENOMEM;
    if (!o || !usage || !timing)
        goto fail;
    if (set(o, "ok", json_true()) || set(o, "id", id_value(r->id)) ||
        set(o, "output", res->output ? json_string(marks[0]) : json_null()) ||
        set(o, "text", json_stringn_nocheck(res->text ? res->text : "", res->text_len)) ||
        set(o, "finish_reason", json_string(res->finish_reason ? res->finish_reason : "stop")))
        goto fail;
    if (set(usage, "prompt_tokens", json_integer(res->n_prompt)) ||
        set(usage, "completion_tokens", json_integer(res->n_completion)) ||
        set(usage, "forced_tokens", json_integer(res->n_forced)) ||
        set(usage, "cached_tokens", json_integer(res->n_cached)))
        goto fail;
    rc = set(o, "usage", usage);
    usage = NULL;
    if (rc)
        goto fail;
    rc = SX_ENOMEM;
    if (set(timing, "queue_ms", ms(res->queue_ms)) ||
        set(timing, "compile_ms", ms(res->compile_ms)) ||
        set(timing, "ttft_ms", ms(res->ttft_ms)) || set(timing, "tpot_ms", ms(res->tpot_ms)) ||
        set(timing, "total_ms", ms(res->total_ms)) ||
        set(timing, "cache_hit", json_boolean(res->cache_hit)))
        goto fail;
    rc = set(o, "timing", timing);
    timing = NULL;
    if (rc)
        goto fail;
    rc = SX_ENOMEM;
    if (res->scores && r->mode == SX_RPC_CHOICES) {
        json_t *sc = json_object();
        if (!sc || set(o, "scores", sc))
            goto fail;
        for (size_t i = 0; i < r->n_choices; i++)
            if (set(sc, r->choices[i], json_real(res->scores[i])))
                goto fail;
    }
    if (res->logprobs && set(o, "logprobs", json_deep_copy(res->logprobs)))
        goto fail;
    if (res->field_confidence &&
        set(o, "field_confidence", json_deep_copy(res->field_confidence)))
        goto fail;
    if (res->choices) {
        json_t *a = json_array();
        if (!a || set(o, "choices", a))
            goto fail;
        for (int i = 0; i < res->n_choices && i < SX_RPC_MAX_N; i++) {
            vals[1 + i] = res->choices[i].output;
            texts[1 + i] = res->choices[i].text;
            lens[1 + i] = res->choices[i].text_len;
            if (json_array_append_new(a, choice_json(&res->choices[i], i, marks[1 + i])))
                goto fail;
        }
        n_marks = 1 + (res->n_choices < SX_RPC_MAX_N ? res->n_choices : SX_RPC_MAX_N);
    }
    return sx_rpc_dump_with_outputs(o, marks, vals, texts, lens, n_marks, out, len);
fail:
    json_decref(usage);
    json_decref(timing);
    json_decref(o);
    return SX_ENOMEM;
}

int sx_rpc_error_dump(const json_t *id, int code, const char *message, const char *pointer,
                      const json_t *extra, char **out, size_t *len)
{
    *out = NULL;
    json_t *o = json_object(), *e = json_object();
    if (!o || !e)
        goto fail;
    if (set(o, "ok", json_false()) || set(o, "id", id_value(id)) ||
        set(e, "code", json_string(sx_rpc_code_name(code))) ||
        set(e, "message", safe_string(message && *message ? message : sx_rpc_code_name(code))))
        goto fail;
    if (pointer && *pointer && set(e, "pointer", safe_string(pointer)))
        goto fail;
    if (extra) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)extra, k, v) {
            if (strcmp(k, "ok") && strcmp(k, "id") && strcmp(k, "error") &&
                set(o, k, json_deep_copy(v)))
                goto fail;
        }
    }
    if (json_object_set_new(o, "error", e)) {
        e = NULL;
        goto fail;
    }
    return dump(o, out, len);
fail:
    json_decref(e);
    json_decref(o);
    return SX_ENOMEM;
}
