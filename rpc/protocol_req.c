/* sx_rpc: parsing and checking a request (see protocol.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_numjson.h"
#include "engine/generate.h"
#include "grammar/grammar.h"
#include "rpc/protocol.h"

void sx_rpc_limits_default(sx_rpc_limits *l)
{
    memset(l, 0, sizeof *l);
    l->max_request_bytes = 4u << 20;
    l->max_schema_bytes = 256u << 10;
    l->max_tokens = 4096;
    l->default_max_tokens = 512;
    l->max_choices = 256;
    l->max_label_bytes = 256;
    l->max_messages = 256;
    l->max_timeout_s = 600;
}

/* "/" + key with '~' and '/' escaped (RFC 6901), appended to base. */
static void ptr_join(char *out, size_t cap, const char *base, const char *key)
{
    size_t n = (size_t)snprintf(out, cap, "%s/", base);
    for (const char *k = key; *k && n + 3 < cap; k++) {
        if (*k == '~' || *k == '/') {
            out[n++] = '~';
            out[n++] = *k == '~' ? '0' : '1';
        } else {
            out[n++] = *k;
        }
    }
    out[n < cap ? n : cap - 1] = 0;
}

static void ptr_index(char *out, size_t cap, const char *base, size_t i)
{
    snprintf(out, cap, "%s/%zu", base, i);
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static int bad_type(sx_error *err, const char *ptr, const char *field, const char *want,
                    const json_t *v)
{
    return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must be %s, not %s", field, want,
                       type_name(v));
}

/* A number field in [lo, hi]; lo_open makes the lower bound exclusive. */
static int get_number(const json_t *v, const char *name, double lo, int lo_open, double hi,
                      double *out, sx_error *err)
{
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", name);
    if (!json_is_number(v))
        return bad_type(err, ptr, name, "a number", v);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must be in %c%g, %g], got %g", name,
                           lo_open ? '(' : '[', lo, hi, x);
    *out = x;
    return SX_OK;
}

static int get_int(const json_t *v, const char *name, long long lo, long long hi, long long *out,
                   sx_error *err)
{
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", name);
    if (!json_is_integer(v))
        return bad_type(err, ptr, name, "an integer", v);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must be in [%lld, %lld], got %lld", name,
                           lo, hi, x);
    *out = x;
    return SX_OK;
}

static int get_bool(const json_t *v, const char *name, int *out, sx_error *err)
{
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", name);
    if (!json_is_boolean(v))
        return bad_type(err, ptr, name, "a boolean", v);
    *out = json_is_true(v);
    return SX_OK;
}

static int get_string(const json_t *v, const char *name, const char **out, size_t *len,
                      sx_error *err)
{
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", name);
    if (!json_is_string(v))
        return bad_type(err, ptr, name, "a string", v);
    *out = json_string_value(v);
    if (len)
        *len = json_string_length(v);
    if (strlen(*out) != json_string_length(v))
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must not contain NUL characters", name);
    return SX_OK;
}

/* ---- constraint ----------------------------------------------------------- */

static int set_key(sx_rpc_req *r, const json_t *v, size_t max, const char *at, sx_error *err)
{
    free(r->key);
    r->key = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!r->key)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    r->key_len = strlen(r->key);
    if (max && r->key_len > max)
        return sx_err_setp(err, SX_ELIMIT, at, -1,
                           "schema is %zu bytes as compact JSON; the limit is %zu", r->key_len,
                           max);
    return SX_OK;
}

int sx_rpc_req_set_schema(sx_rpc_req *r, const json_t *schema, const sx_rpc_limits *lim,
                          const char *at, sx_error *err)
{
    if (!json_is_object(schema) && !json_is_boolean(schema))
        return bad_type(err, at, "schema", "an object or a boolean", schema);
    r->mode = SX_RPC_SCHEMA;
    r->schema = schema;
    return set_key(r, schema, lim->max_schema_bytes, at, err);
}

int sx_rpc_req_set_choices(sx_rpc_req *r, const json_t *v, const sx_rpc_limits *lim,
                           const char *at, sx_error *err)
{
    char ptr[256];
    if (!json_is_array(v))
        return bad_type(err, at, "choices", "an array of strings", v);
    size_t n = json_array_size(v);
    if (n == 0)
        return sx_err_setp(err, SX_EINVAL, at, -1, "choices must hold at least one label");
    if (n > (size_t)lim->max_choices)
        return sx_err_setp(err, SX_ELIMIT, at, -1,
                           "choices holds %zu labels; the limit is %d", n, lim->max_choices);
    free(r->choices);
    r->choices = calloc(n, sizeof *r->choices);
    if (!r->choices)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(v, i);
        ptr_index(ptr, sizeof ptr, at, i);
        if (!json_is_string(s))
            return bad_type(err, ptr, "a label", "a string", s);
        const char *t = json_string_value(s);
        size_t len = json_string_length(s);
        if (strlen(t) != len)
            return sx_err_setp(err, SX_EINVAL, ptr, -1, "a label must not contain NUL characters");
        if (len > lim->max_label_bytes)
            return sx_err_setp(err, SX_ELIMIT, ptr, -1, "label is %zu bytes; the limit is %zu",
                               len, lim->max_label_bytes);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(r->choices[j], t))
                return sx_err_setp(err, SX_EINVAL, ptr, -1, "label \"%s\" appears twice", t);
        r->choices[i] = t;
    }
    r->n_choices = n;
    r->mode = SX_RPC_CHOICES;
    return set_key(r, v, 0, at, err);
}

int sx_rpc_req_set_regex(sx_rpc_req *r, const json_t *v, const sx_rpc_limits *lim,
                         const char *at, sx_error *err)
{
    if (!json_is_string(v))
        return bad_type(err, at, "regex", "a string", v);
    r->regex = json_string_value(v);
    r->regex_len = json_string_length(v);
    if (strlen(r->regex) != r->regex_len)
        return sx_err_setp(err, SX_EINVAL, at, -1, "regex must not contain NUL characters");
    if (r->regex_len > lim->max_schema_bytes)
        return sx_err_setp(err, SX_ELIMIT, at, -1, "regex is %zu bytes; the limit is %zu",
                           r->regex_len, lim->max_schema_bytes);
    r->mode = SX_RPC_REGEX;
    free(r->key);
    r->key = strdup(r->regex);
    if (!r->key)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    r->key_len = r->regex_len;
    return SX_OK;
}

/* ---- messages ------------------------------------------------------------- */

static int valid_role(const char *role)
{
    return !strcmp(role, "system") || !strcmp(role, "user") || !strcmp(role, "assistant");
}

/* Joins the text parts of an OpenAI content array into one string kept in
 * r->keep. */
static int join_parts(sx_rpc_req *r, const json_t *parts, const char *at, const char **out,
                      sx_error *err)
{
    char ptr[256];
    size_t total = 0, i;
    const json_t *p;
    json_array_foreach(parts, i, p) {
        const json_t *type = json_object_get(p, "type"), *text = json_object_get(p, "text");
        ptr_index(ptr, sizeof ptr, at, i);
        if (!json_is_object(p) || !json_is_string(type) || strcmp(json_string_value(type), "text"))
            return sx_err_setp(err, SX_EUNSUPPORTED, ptr, -1,
                               "only text content parts are supported");
        if (!json_is_string(text))
            return sx_err_setp(err, SX_EINVAL, ptr, -1, "a text part needs a string \"text\"");
        total += json_string_length(text);
    }
    char *buf = malloc(total + 1);
    if (!buf)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    size_t n = 0;
    json_array_foreach(parts, i, p) {
        const json_t *text = json_object_get(p, "text");
        memcpy(buf + n, json_string_value(text), json_string_length(text));
        n += json_string_length(text);
    }
    buf[n] = 0;
    if (strlen(buf) != n) {
        free(buf);
        return sx_err_setp(err, SX_EINVAL, at, -1, "content must not contain NUL characters");
    }
    if (!r->keep && !(r->keep = json_array())) {
        free(buf);
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    json_t *s = json_stringn_nocheck(buf, n);
    free(buf);
    if (!s || json_array_append_new(r->keep, s))
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    *out = json_string_value(s);
    return SX_OK;
}

/* A member of an OpenAI message other than role and content.  `name` is
 * accepted and has no effect (Qwen3's chat template does not render it,
 * as vLLM does not); the members an assistant turn echoed back from an
 * earlier answer carries are accepted when empty; everything else -- a
 * tool call, a tool_call_id, a typo -- would change what the model is
 * shown, so it is an error naming the member. */
static int lenient_member(const char *k, const json_t *v, const char *at, sx_error *err)
{
    static const char *const empty_ok[] = {"refusal", "tool_calls", "function_call", "audio",
                                           "reasoning_content", "annotations", NULL};
    if (!strcmp(k, "name")) {
        if (!json_is_string(v))
            return bad_type(err, at, "name", "a string", v);
        return SX_OK;
    }
    /* checked with the role (sx_rpc_req_set_messages) */
    if ((!strcmp(k, "tool_calls") && json_is_array(v)) || !strcmp(k, "tool_call_id"))
        return SX_OK;
    for (int i = 0; empty_ok[i]; i++) {
        if (strcmp(k, empty_ok[i]))
            continue;
        if (json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0))
            return SX_OK;
        if (!strcmp(k, "function_call"))
            return sx_err_setp(err, SX_EUNSUPPORTED, at, -1,
                               "the legacy function_call is not supported; use tool_calls");
        return sx_err_setp(err, SX_EUNSUPPORTED, at, -1,
                           "a message's \"%s\" must be null here: strux does not show it to "
                           "the model", k);
    }
    return sx_err_setp(err, SX_EINVAL, at, -1,
                       "unknown message field \"%.100s\" (expected role, content, name)", k);
}

int sx_rpc_req_set_messages(sx_rpc_req *r, const json_t *messages, const sx_rpc_limits *lim,
                            int strict, const char *at, sx_error *err)
{
    char ptr[256];
    if (!json_is_array(messages))
        return bad_type(err, at, "messages", "an array", messages);
    size_t n = json_array_size(messages);
    if (n == 0)
        return sx_err_setp(err, SX_EINVAL, at, -1, "messages must hold at least one message");
    if (n > (size_t)lim->max_messages)
        return sx_err_setp(err, SX_ELIMIT, at, -1, "messages holds %zu entries; the limit is %d",
                           n, lim->max_messages);
    free(r->msgs);
    r->msgs = calloc(n, sizeof *r->msgs);
    if (!r->msgs)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(messages, i);
        ptr_index(ptr, sizeof ptr, at, i);
        if (!json_is_object(m))
            return bad_type(err, ptr, "a message", "an object", m);
        const char *k;
        const json_t *v;
        char sub[300];
        json_object_foreach((json_t *)m, k, v) {
            if (!strcmp(k, "role") || !strcmp(k, "content"))
                continue;
            ptr_join(sub, sizeof sub, ptr, k);
            if (strict)
                return sx_err_setp(err, SX_EINVAL, sub, -1,
                                   "unknown message field \"%s\" (expected role, content)", k);
            int rc = lenient_member(k, v, sub, err);
            if (rc)
                return rc;
        }
        const json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
        ptr_join(sub, sizeof sub, ptr, "role");
        if (!role)
            return sx_err_setp(err, SX_EINVAL, ptr, -1, "a message needs a \"role\"");
        if (!json_is_string(role))
            return bad_type(err, sub, "role", "a string", role);
        /* OpenAI's newer name for the system turn; Qwen3 has only `system` */
        int developer = !strict && !strcmp(json_string_value(role), "developer");
        int tool = !strict && !strcmp(json_string_value(role), "tool");
        if (!developer && !tool && (!valid_role(json_string_value(role)) ||
                                    strlen(json_string_value(role)) != json_string_length(role)))
            return sx_err_setp(err, SX_EINVAL, sub, -1,
                               "role must be \"system\", \"user\" or \"assistant\"%s, not \"%s\"",
                               strict ? "" : " (or \"developer\", \"tool\")",
                               json_string_value(role));
        r->msgs[i].role = developer ? "system" : json_string_value(role);
        const json_t *calls = strict ? NULL : json_object_get(m, "tool_calls");
        const json_t *call_id = strict ? NULL : json_object_get(m, "tool_call_id");
        int has_calls = json_is_array(calls) && json_array_size(calls) > 0;
        if (has_calls && strcmp(r->msgs[i].role, "assistant")) {
            ptr_join(sub, sizeof sub, ptr, "tool_calls");
            return sx_err_setp(err, SX_EINVAL, sub, -1, "only assistant messages hold tool_calls");
        }
        if (call_id && (!tool || !json_is_string(call_id))) {
            ptr_join(sub, sizeof sub, ptr, "tool_call_id");
            return sx_err_setp(err, SX_EINVAL, sub, -1,
                               tool ? "tool_call_id must be a string"
                                    : "only tool messages hold a tool_call_id");
        }
        ptr_join(sub, sizeof sub, ptr, "content");
        if (!content)
            return sx_err_setp(err, SX_EINVAL, ptr, -1, "a message needs a \"content\"");
        if (has_calls && json_is_null(content)) {
            /* an assistant turn that only calls tools */
            r->msgs[i].content = "";
        } else if (json_is_string(content)) {
            if (strlen(json_string_value(content)) != json_string_length(content))
                return sx_err_setp(err, SX_EINVAL, sub, -1,
                                   "content must not contain NUL characters");
            r->msgs[i].content = json_string_value(content);
        } else if (!strict && json_is_array(content)) {
            int rc = join_parts(r, content, sub, &r->msgs[i].content, err);
            if (rc)
                return rc;
        } else {
            return bad_type(err, sub, "content", "a string", content);
        }
        if (has_calls) {
            ptr_join(sub, sizeof sub, ptr, "tool_calls");
            int rc = sx_rpc_render_tool_calls(r, r->msgs[i].content, calls, sub,
                                              &r->msgs[i].content, err);
            if (rc)
                return rc;
        }
    }
    r->n_msgs = n;
    return SX_OK;
}

int sx_rpc_req_set_penalties(sx_rpc_req *r, const json_t *obj, const char *at, sx_error *err)
{
    char ptr[300];
    const char *const pen[] = {"presence_penalty", "frequency_penalty"};
    int any = 0;
    for (int k = 0; k < 2; k++) {
        const json_t *v = json_object_get(obj, pen[k]);
        if (!v || json_is_null(v))
            continue;
        ptr_join(ptr, sizeof ptr, at, pen[k]);
        if (!json_is_number(v))
            return bad_type(err, ptr, pen[k], "a number", v);
        double x = json_number_value(v);
        if (!(x >= -2 && x <= 2))
            return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s must be in [-2, 2], got %g", pen[k],
                               x);
        if (k == 0)
            r->sampling.presence_penalty = (float)x;
        else
            r->sampling.frequency_penalty = (float)x;
        any |= x != 0;
    }
    const json_t *lb = json_object_get(obj, "logit_bias");
    ptr_join(ptr, sizeof ptr, at, "logit_bias");
    if (lb && !json_is_null(lb)) {
        if (!json_is_object(lb))
            return bad_type(err, ptr, "logit_bias", "an object of token ids", lb);
        size_t n = json_object_size(lb);
        if (n > 1024)
            return sx_err_setp(err, SX_ELIMIT, ptr, -1, "logit_bias holds %zu tokens; the limit is "
                               "1024", n);
        free(r->bias_ids);
        free(r->bias_vals);
        r->bias_ids = n ? malloc(n * sizeof *r->bias_ids) : NULL;
        r->bias_vals = n ? malloc(n * sizeof *r->bias_vals) : NULL;
        if (n && (!r->bias_ids || !r->bias_vals))
            return sx_err_set(err, SX_ENOMEM, "out of memory");
        const char *k;
        const json_t *v;
        size_t i = 0;
        json_object_foreach((json_t *)lb, k, v) {
            char sub[400];
            ptr_join(sub, sizeof sub, ptr, k);
            char *e;
            long long id = strtoll(k, &e, 10);
            if (!*k || *e || id < 0 || id > INT32_MAX || k[0] == '+' || k[0] == '-' ||
                (k[0] == '0' && k[1]))
                return sx_err_setp(err, SX_EINVAL, sub, -1,
                                   "logit_bias keys are token ids (decimal integers), not "
                                   "\"%.60s\"", k);
            if (!json_is_number(v) || !(json_number_value(v) >= -100) ||
                !(json_number_value(v) <= 100))
                return sx_err_setp(err, SX_EINVAL, sub, -1,
                                   "a logit_bias value must be a number in [-100, 100]");
            r->bias_ids[i] = (int32_t)id;
            r->bias_vals[i] = (float)json_number_value(v);
            any |= r->bias_vals[i] != 0;
            i++;
        }
        r->sampling.bias_ids = r->bias_ids;
        r->sampling.bias_vals = r->bias_vals;
        r->sampling.n_bias = (int)n;
    }
    if (!any)
        return SX_OK;
    if (r->mode == SX_RPC_CHOICES)
        return sx_err_setp(err, SX_EINVAL, *at ? at : "/logit_bias", -1,
                           "logit_bias and the penalties do not apply to choices: the label "
                           "scores are the model's own probabilities");
    if (r->num_beams)
        return sx_err_setp(err, SX_EINVAL, *at ? at : "/logit_bias", -1,
                           "beam search does not take logit_bias or penalties");
    return SX_OK;
}

int sx_rpc_req_set_speculate(sx_rpc_req *r, const json_t *v, const char *at, sx_error *err)
{
    if (json_is_boolean(v)) {
        r->speculate = json_is_true(v) ? -1 : SX_SPEC_OFF;
        return SX_OK;
    }
    int m = json_is_string(v) ? sx_gen_speculate_parse(json_string_value(v)) : -1;
    if (m < 0)
        return sx_err_setp(err, SX_EINVAL, at, -1,
                           "speculate must be \"off\", \"ngram\", \"draft\" or a boolean");
    r->speculate = m;
    return SX_OK;
}

/* One integer member of `layout` in [lo, hi]. */
static int layout_int(const json_t *v, const char *at, const char *name, int lo, int hi, int *out,
                      sx_error *err)
{
    char ptr[256];
    snprintf(ptr, sizeof ptr, "%s/%s", at, name);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "layout.%s must be an integer in [%d, %d]",
                           name, lo, hi);
    *out = (int)json_integer_value(v);
    return SX_OK;
}

int sx_rpc_req_set_layout(sx_rpc_req *r, const json_t *v, const char *at, sx_error *err)
{
    char ptr[256];
    sx_rpc_layout l = {0};
    if (!json_is_object(v))
        return bad_type(err, at, "layout", "an object", v);
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        ptr_join(ptr, sizeof ptr, at, k);
        int rc = SX_OK;
        if (!strcmp(k, "whitespace")) {
            const char *w = json_string_value(x);
            l.has |= SX_RPC_LAY_WS;
            if (w && !strcmp(w, "flexible"))
                l.ws_mode = SX_WS_FLEXIBLE;
            else if (w && !strcmp(w, "compact"))
                l.ws_mode = SX_WS_COMPACT;
            else if (w && !strcmp(w, "indent"))
                l.ws_mode = SX_WS_INDENTED;
            else
                return sx_err_setp(err, SX_EINVAL, ptr, -1,
                                   "layout.whitespace must be \"flexible\", \"compact\" or "
                                   "\"indent\"");
        } else if (!strcmp(k, "max_ws")) {
            l.has |= SX_RPC_LAY_MAXWS;
            rc = layout_int(x, at, k, 0, 64, &l.max_ws, err);
        } else if (!strcmp(k, "indent")) {
            l.has |= SX_RPC_LAY_INDENT;
            rc = layout_int(x, at, k, 1, 16, &l.indent, err);
        } else if (!strcmp(k, "property_order")) {
            const char *o = json_string_value(x);
            l.has |= SX_RPC_LAY_ORDER;
            if (o && (!strcmp(o, "schema") || !strcmp(o, "any")))
                l.prop_order = !strcmp(o, "schema");
            else
                return sx_err_setp(err, SX_EINVAL, ptr, -1,
                                   "layout.property_order must be \"schema\" or \"any\"");
        } else {
            return sx_err_setp(err, SX_EINVAL, ptr, -1,
                               "unknown layout member \"%.100s\" (expected whitespace, max_ws, "
                               "indent, property_order)",
                               k);
        }
        if (rc)
            return rc;
    }
    /* a part given alone implies its whitespace mode; a contradiction is an error */
    if ((l.has & SX_RPC_LAY_MAXWS) && !(l.has & SX_RPC_LAY_WS)) {
        l.has |= SX_RPC_LAY_WS;
        l.ws_mode = SX_WS_FLEXIBLE;
    }
    if ((l.has & SX_RPC_LAY_INDENT) && !(l.has & SX_RPC_LAY_WS)) {
        l.has |= SX_RPC_LAY_WS;
        l.ws_mode = SX_WS_INDENTED;
    }
    if ((l.has & SX_RPC_LAY_MAXWS) && l.ws_mode != SX_WS_FLEXIBLE) {
        ptr_join(ptr, sizeof ptr, at, "max_ws");
        return sx_err_setp(err, SX_EINVAL, ptr, -1,
                           "layout.max_ws applies to \"whitespace\": \"flexible\" only");
    }
    if ((l.has & SX_RPC_LAY_INDENT) && l.ws_mode != SX_WS_INDENTED) {
        ptr_join(ptr, sizeof ptr, at, "indent");
        return sx_err_setp(err, SX_EINVAL, ptr, -1,
                           "layout.indent applies to \"whitespace\": \"indent\" only");
    }
    if (r->mode == SX_RPC_TEXT)
        return sx_err_setp(err, SX_EINVAL, at, -1,
                           "layout applies to constrained output (schema, choices, regex or "
                           "json_object); free text has none");
    r->layout = l;
    return SX_OK;
}

/* ---- the request ---------------------------------------------------------- */

static const char *const known_fields[] = {
    "id", "schema", "choices", "regex", "json_object", "messages", "document", "instruction",
    "system", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "no_repeat_ngram",
    "seed", "max_tokens", "n", "logprobs", "top_logprobs", "scores", "timeout", "speculate",
    "num_beams", "length_penalty", "num_return_sequences", "early_stopping", "field_confidence",
    "logit_bias", "presence_penalty", "frequency_penalty", "layout", NULL,
};

static int check_fields(const json_t *root, sx_error *err)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)root, k, v) {
        int ok = 0;
        for (int i = 0; known_fields[i] && !ok; i++)
            ok = !strcmp(k, known_fields[i]);
        if (!ok) {
            char ptr[256];
            ptr_join(ptr, sizeof ptr, "", k);
            return sx_err_setp(err, SX_EINVAL, ptr, -1, "unknown field \"%.100s\"", k);
        }
    }
    return SX_OK;
}

static int parse_constraint(sx_rpc_req *r, const json_t *root, const sx_rpc_limits *lim,
                            sx_error *err)
{
    static const char *const names[] = {"schema", "choices", "regex", "json_object"};
    const char *seen = NULL;
    for (int i = 0; i < 4; i++) {
        const json_t *v = json_object_get(root, names[i]);
        if (!v)
            continue;
        int rc = SX_OK;
        if (i == 3) {
            int on = 0;
            if ((rc = get_bool(v, "json_object", &on, err)))
                return rc;
            if (!on)
                continue;
        }
        if (seen) {
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/%s", names[i]);
            return sx_err_setp(err, SX_EINVAL, ptr, -1,
                               "give one of schema, choices, regex, json_object (got %s and %s)",
                               seen, names[i]);
        }
        seen = names[i];
        switch (i) {
        case 0: rc = sx_rpc_req_set_schema(r, v, lim, "/schema", err); break;
        case 1: rc = sx_rpc_req_set_choices(r, v, lim, "/choices", err); break;
        case 2: rc = sx_rpc_req_set_regex(r, v, lim, "/regex", err); break;
        default:
            r->mode = SX_RPC_JSON_OBJECT;
            break;
        }
        if (rc)
            return rc;
    }
    if (!r->key && !(r->key = strdup("")))
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    return SX_OK;
}

static int parse_input(sx_rpc_req *r, const json_t *root, const sx_rpc_limits *lim, sx_error *err)
{
    const json_t *msgs = json_object_get(root, "messages"), *doc = json_object_get(root, "document");
    const json_t *ins = json_object_get(root, "instruction"), *sys = json_object_get(root, "system");
    int rc;
    if (msgs && doc)
        return sx_err_setp(err, SX_EINVAL, "/document", -1, "give messages or document, not both");
    if (!msgs && !doc)
        return sx_err_setp(err, SX_EINVAL, "", -1, "a request needs messages or a document");
    if (msgs) {
        if (ins || sys)
            return sx_err_setp(err, SX_EINVAL, ins ? "/instruction" : "/system", -1,
                               "%s applies to document requests only",
                               ins ? "instruction" : "system");
        return sx_rpc_req_set_messages(r, msgs, lim, 1, "/messages", err);
    }
    if ((rc = get_string(doc, "document", &r->document, &r->document_len, err)))
        return rc;
    if (ins && sys)
        return sx_err_setp(err, SX_EINVAL, "/system", -1,
                           "system replaces the whole default prompt; give it or instruction");
    if (ins && (rc = get_string(ins, "instruction", &r->instruction, NULL, err)))
        return rc;
    if (sys && (rc = get_string(sys, "system", &r->system, NULL, err)))
        return rc;
    return SX_OK;
}

static int parse_sampling(sx_rpc_req *r, const json_t *root, const sx_rpc_limits *lim,
                          sx_error *err)
{
    sx_sampling *s = &r->sampling;
    const json_t *v;
    double d;
    long long i;
    int rc;
    memset(s, 0, sizeof *s);
    s->temperature = 0; /* extraction wants the most likely document */
    s->top_p = 1;
    s->repetition_penalty = 1;
    r->max_tokens = lim->default_max_tokens;
    if ((v = json_object_get(root, "temperature"))) {
        if ((rc = get_number(v, "temperature", 0, 0, 100, &d, err)))
            return rc;
        s->temperature = (float)d;
    }
    if ((v = json_object_get(root, "top_p"))) {
        if ((rc = get_number(v, "top_p", 0, 1, 1, &d, err)))
            return rc;
        s->top_p = (float)d;
    }
    if ((v = json_object_get(root, "min_p"))) {
        if ((rc = get_number(v, "min_p", 0, 0, 1, &d, err)))
            return rc;
        s->min_p = (float)d;
    }
    if ((v = json_object_get(root, "repetition_penalty"))) {
        if ((rc = get_number(v, "repetition_penalty", 0, 1, 100, &d, err)))
            return rc;
        s->repetition_penalty = (float)d;
    }
    if ((v = json_object_get(root, "top_k"))) {
        if ((rc = get_int(v, "top_k", 0, 1 << 30, &i, err)))
            return rc;
        s->top_k = (int)i;
    }
    if ((v = json_object_get(root, "no_repeat_ngram"))) {
        if ((rc = get_int(v, "no_repeat_ngram", 0, 64, &i, err)))
            return rc;
        s->no_repeat_ngram = (int)i;
    }
    if ((v = json_object_get(root, "seed"))) {
        if ((rc = get_int(v, "seed", 0, LLONG_MAX, &i, err)))
            return rc;
        s->seed = (uint64_t)i;
    }
    if ((v = json_object_get(root, "max_tokens"))) {
        if (!json_is_integer(v))
            return bad_type(err, "/max_tokens", "max_tokens", "an integer", v);
        i = json_integer_value(v);
        if (i < 1)
            return sx_err_setp(err, SX_EINVAL, "/max_tokens", -1,
                               "max_tokens must be at least 1, got %lld", i);
        if (i > lim->max_tokens)
            return sx_err_setp(err, SX_ELIMIT, "/max_tokens", -1,
                               "max_tokens %lld is over this server's limit of %d", i,
                               lim->max_tokens);
        r->max_tokens = (int)i;
    }
    if ((v = json_object_get(root, "layout")) &&
        (rc = sx_rpc_req_set_layout(r, v, "/layout", err)))
        return rc;
    r->speculate = -1;
    if ((v = json_object_get(root, "speculate")) &&
        (rc = sx_rpc_req_set_speculate(r, v, "/speculate", err)))
        return rc;
    r->n = 1;
    if ((v = json_object_get(root, "n"))) {
        if ((rc = get_int(v, "n", 1, SX_RPC_MAX_N, &i, err)))
            return rc;
        /* the label scores already are the whole distribution, exactly;
         * n sampled labels would only estimate it */
        if (i > 1 && r->mode == SX_RPC_CHOICES)
            return sx_err_setp(err, SX_EINVAL, "/n", -1,
                               "n > 1 does not apply to choices: the response's scores give "
                               "every label's probability");
        r->n = (int)i;
    }
    if ((v = json_object_get(root, "logprobs"))) {
        if (json_is_boolean(v)) {
            r->logprobs = json_is_true(v);
        } else if (json_is_integer(v)) {
            if ((rc = get_int(v, "logprobs", 0, SX_SAMPLER_MAX_TOPN, &i, err)))
                return rc;
            r->logprobs = i > 0;
            r->top_logprobs = (int)i;
        } else {
            return bad_type(err, "/logprobs", "logprobs", "a boolean or an integer", v);
        }
    }
    if ((v = json_object_get(root, "top_logprobs"))) {
        if ((rc = get_int(v, "top_logprobs", 0, SX_SAMPLER_MAX_TOPN, &i, err)))
            return rc;
        r->top_logprobs = (int)i;
        if (i > 0)
            r->logprobs = 1;
    }
    s->top_n = r->logprobs ? r->top_logprobs : 0;
    r->scores = r->mode == SX_RPC_CHOICES;
    if ((v = json_object_get(root, "scores"))) {
        int on = 0;
        if ((rc = get_bool(v, "scores", &on, err)))
            return rc;
        if (on && r->mode != SX_RPC_CHOICES)
            return sx_err_setp(err, SX_EINVAL, "/scores", -1, "scores applies to choices only");
        r->scores = on;
    }
    if ((v = json_object_get(root, "timeout"))) {
        if ((rc = get_number(v, "timeout", 0, 1, lim->max_timeout_s, &d, err)))
            return rc;
        r->timeout_s = d;
    }
    if ((rc = sx_rpc_req_set_beams(r, root, "", err)))
        return rc;
    return sx_rpc_req_set_penalties(r, root, "", err);
}

/* One beam option: at is the JSON Pointer of the object holding it. */
static void beam_ptr(char *buf, size_t cap, const char *at, const char *name)
{
    snprintf(buf, cap, "%s/%s", at, name);
}

/* get_int / get_number name the field at the request's top level */
static int repoint(int rc, sx_error *err, const char *ptr)
{
    if (err)
        snprintf(err->pointer, sizeof err->pointer, "%s", ptr);
    return rc;
}

int sx_rpc_req_set_beams(sx_rpc_req *r, const json_t *obj, const char *at, sx_error *err)
{
    const json_t *v;
    char ptr[128];
    long long i;
    double d;
    int rc;
    r->length_penalty = 1.0f;
    r->early_stopping = 0;
    const json_t *nb = json_object_get(obj, "num_beams");
    const json_t *lp = json_object_get(obj, "length_penalty");
    const json_t *nr = json_object_get(obj, "num_return_sequences");
    const json_t *es = json_object_get(obj, "early_stopping");
    if (!nb) {
        const char *stray = lp ? "length_penalty" : nr ? "num_return_sequences"
                          : es ? "early_stopping" : NULL;
        if (!stray)
            return SX_OK;
        beam_ptr(ptr, sizeof ptr, at, stray);
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s needs num_beams", stray);
    }
    beam_ptr(ptr, sizeof ptr, at, "num_beams");
    if ((rc = get_int(nb, "num_beams", 1, SX_RPC_MAX_BEAMS, &i, err))) {
        return repoint(rc, err, ptr);
    }
    r->num_beams = (int)i;
    /* a deterministic search: no sampling, no n, no per-token log-probs */
    if (r->sampling.temperature > 0 || r->sampling.top_p < 1 || r->sampling.top_k ||
        r->sampling.min_p > 0 || r->sampling.repetition_penalty != 1 ||
        r->sampling.no_repeat_ngram)
        return sx_err_setp(err, SX_EINVAL, ptr, -1,
                           "beam search does not sample: give temperature 0 and no top_p, "
                           "top_k, min_p, repetition_penalty or no_repeat_ngram");
    if (r->n > 1)
        return sx_err_setp(err, SX_EINVAL, ptr, -1,
                           "with num_beams, ask for several sequences with num_return_sequences, "
                           "not n");
    if (r->logprobs)
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "beam search does not report logprobs");
    if (r->mode == SX_RPC_CHOICES)
        return sx_err_setp(err, SX_EINVAL, ptr, -1,
                           "beam search does not apply to choices: the scores give every "
                           "label's probability");
    if (lp) {
        beam_ptr(ptr, sizeof ptr, at, "length_penalty");
        if ((rc = get_number(lp, "length_penalty", -100, 0, 100, &d, err))) {
            return repoint(rc, err, ptr);
        }
        r->length_penalty = (float)d;
    }
    if (nr) {
        beam_ptr(ptr, sizeof ptr, at, "num_return_sequences");
        if ((rc = get_int(nr, "num_return_sequences", 1, r->num_beams, &i, err))) {
            return repoint(rc, err, ptr);
        }
        r->n = (int)i;
    }
    if ((v = es)) {
        beam_ptr(ptr, sizeof ptr, at, "early_stopping");
        if (json_is_boolean(v))
            r->early_stopping = json_is_true(v) ? 1 : 0;
        else if (json_is_string(v) && !strcmp(json_string_value(v), "never"))
            r->early_stopping = 2;
        else
            return sx_err_setp(err, SX_EINVAL, ptr, -1,
                               "early_stopping must be true, false or \"never\"");
    }
    return SX_OK;
}

int sx_rpc_req_from_json(json_t *root, const sx_rpc_limits *lim, sx_rpc_req *out,
                         sx_error *err)
{
    sx_rpc_limits dl;
    int rc;
    memset(out, 0, sizeof *out);
    if (!lim) {
        sx_rpc_limits_default(&dl);
        lim = &dl;
    }
    if (!json_is_object(root))
        return bad_type(err, "", "a request", "a JSON object", root);
    out->root = json_incref(root);
    const json_t *id = json_object_get(root, "id");
    if (id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id)) {
        rc = bad_type(err, "/id", "id", "a string, an integer or null", id);
        goto fail;
    }
    out->id = id;
    if ((rc = check_fields(root, err)) || (rc = parse_constraint(out, root, lim, err)) ||
        (rc = parse_input(out, root, lim, err)) || (rc = parse_sampling(out, root, lim, err)) ||
        (rc = sx_rpc_req_set_field_confidence(out, json_object_get(root, "field_confidence"),
                                              "/field_confidence", err)))
        goto fail;
    return SX_OK;
fail:
    sx_rpc_req_free(out);
    return rc;
}

/* ---- reading the request's JSON -------------------------------------------
 *
 * jansson refuses integers beyond 64 bits ("too big integer", no pointer),
 * so requests are read with sx_numjson: every number is read, those jansson
 * cannot hold become reals with their text kept, and each is then judged
 * where it stands, with its JSON Pointer:
 *   - a top-level member (id, seed, max_tokens, ...) written as an integer
 *     beyond 64 bits is refused naming the member and the range it takes
 *     (an id that large must be sent as a string, so that it comes back
 *     exactly as sent);
 *   - any other number (a schema's const, enum, bounds) is taken when its
 *     double holds the decimal written -- the shortest decimal that reads
 *     back as that double is the number written, so 1.2e22, 0.1 and
 *     12000000000000000000000 are read exactly -- and refused otherwise
 *     (123456789012345678901234567890 in a `const`: more significant
 *     digits than the compiler's doubles hold) instead of being rounded
 *     into a different constraint. */
static int held_exactly(const sx_numtab *t, const json_t *v)
{
    sx_dec a, b;
    size_t len;
    const char *s = sx_numtab_find(t, v, &len);
    if (!s)
        return 1;
    if (sx_dec_parse(s, len, &a))
        return 0;
    int ok = 0;
    json_t *d = json_real(json_real_value(v));
    if (d && sx_dec_from_json(NULL, d, &b) == 0) {
        ok = sx_dec_cmp(&a, &b) == 0;
        sx_dec_free(&b);
    }
    json_decref(d);
    sx_dec_free(&a);
    return ok;
}

/* The number's magnitude is past a double's range (1.2e400, 1e-400): its
 * own message, not one about digits. */
static int beyond_double(const char *s, size_t len)
{
    sx_dec a;
    if (sx_dec_parse(s, len, &a))
        return 0;
    long long mag = a.nd ? a.e + (long long)a.nd - 1 : 0;
    sx_dec_free(&a);
    return mag > 308 || mag < -323;
}

/* request: v is a whole request (its top-level integers are fields with
 * their own rule); else a schema, judged everywhere alike. */
static int check_numbers(const json_t *v, const sx_numtab *t, char *path, size_t n, size_t cap,
                         int depth, int request, sx_error *err)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            size_t m = n;
            if (m + 1 < cap)
                path[m++] = '/';
            for (const char *c = k; *c && m + 2 < cap; c++) {
                if (*c == '~' || *c == '/') {
                    path[m++] = '~';
                    path[m++] = *c == '~' ? '0' : '1';
                } else {
                    path[m++] = *c;
                }
            }
            path[m] = '\0';
            int rc = check_numbers(x, t, path, m, cap, depth + 1, request, err);
            if (rc)
                return rc;
        }
        path[n] = '\0';
        return SX_OK;
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            size_t m = n + (size_t)snprintf(path + n, cap - n, "/%zu", i);
            int rc = check_numbers(json_array_get(v, i), t, path, m < cap ? m : cap - 1, cap,
                                   depth + 1, request, err);
            if (rc)
                return rc;
        }
        path[n] = '\0';
        return SX_OK;
    }
    size_t len;
    const char *s = sx_numtab_find(t, v, &len);
    if (!s)
        return SX_OK;
    int integer = !memchr(s, '.', len) && !memchr(s, 'e', len) && !memchr(s, 'E', len);
    if (request && depth == 1 && integer) {
        if (!strcmp(path, "/id"))
            return sx_err_setp(err, SX_EINVAL, path, -1,
                               "an integer id must fit in 64 bits; got %.*s: send it as a string",
                               (int)(len > 60 ? 60 : len), s);
        return sx_err_setp(err, SX_EINVAL, path, -1,
                           "%s must be an integer within 64 bits (at most %lld); got %.*s",
                           path + 1, LLONG_MAX, (int)(len > 60 ? 60 : len), s);
    }
    if (beyond_double(s, len))
        return sx_err_setp(err, SX_EUNSUPPORTED, path, -1,
                           "the number %.*s%s is beyond the range strux holds here (that of a "
                           "double: magnitudes up to about 1.8e308)",
                           (int)(len > 60 ? 60 : len), s, len > 60 ? "..." : "");
    if (!held_exactly(t, v))
        return sx_err_setp(err, SX_EUNSUPPORTED, path, -1,
                           "the number %.*s%s has more significant digits than strux holds "
                           "exactly here (those of a double: up to 17)",
                           (int)(len > 60 ? 60 : len), s, len > 60 ? "..." : "");
    return SX_OK;
}

int sx_rpc_load_json(const char *buf, size_t len, json_t **root, sx_error *err)
{
    sx_numtab t = {0};
    json_error_t je;
    *root = sx_numjson_loadb(buf, len, SX_NUMJSON_REJECT_DUPLICATES, &t, &je);
    if (!*root)
        return sx_err_setp(err, SX_EFORMAT, "", (long)je.position,
                           "request is not valid JSON: %s at byte %d", je.text, je.position);
    char path[512] = "";
    int rc = t.n ? check_numbers(*root, &t, path, 0, sizeof path, 0, 1, err) : SX_OK;
    sx_numtab_free(&t);
    if (rc) {
        json_decref(*root);
        *root = NULL;
    }
    return rc;
}

int sx_rpc_check_schema_numbers(const json_t *schema, const sx_numtab *t, const char *at,
                                sx_error *err)
{
    char path[512];
    size_t n = (size_t)snprintf(path, sizeof path, "%s", at ? at : "");
    return check_numbers(schema, t, path, n < sizeof path ? n : sizeof path - 1, sizeof path, 1,
                         0, err);
}

int sx_rpc_req_parse(const char *buf, size_t len, const sx_rpc_limits *lim, sx_rpc_req *out,
                     sx_error *err)
{
    sx_rpc_limits dl;
    memset(out, 0, sizeof *out);
    if (!lim) {
        sx_rpc_limits_default(&dl);
        lim = &dl;
    }
    if (len > lim->max_request_bytes)
        return sx_err_setp(err, SX_ELIMIT, "", -1, "request is %zu bytes; the limit is %zu", len,
                           lim->max_request_bytes);
    /* \u0000 is valid JSON (a schema's const may hold it); the text fields
     * that become C strings refuse it themselves, naming the field */
    json_t *root;
    int rc = sx_rpc_load_json(buf, len, &root, err);
    if (rc)
        return rc;
    rc = sx_rpc_req_from_json(root, lim, out, err);
    json_decref(root);
    return rc;
}

void sx_rpc_req_free(sx_rpc_req *r)
{
    if (!r)
        return;
    free(r->choices);
    free(r->msgs);
    free(r->key);
    free(r->bias_ids);
    free(r->bias_vals);
    json_decref(r->keep);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}
