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

/* ---- which members a request may hold ------------------------------------- */

/* A member strux acts on, one it accepts knowing it changes nothing in the
 * answer, or one it knows and refuses (it would change the answer and
 * strux does not do it).  A refused member is still accepted with the
 * value that asks for nothing (null, [], {}, "none", ...; see noop). */
enum { M_ACT, M_HARMLESS, M_REFUSE };

/* Which routes a member belongs to: chat completions, completions. */
enum { R_CHAT = 1, R_COMPL = 2, R_BOTH = 3 };

static const struct member {
    const char *name;
    int         kind;
    const char *why; /* M_REFUSE: the message */
    int         routes;
} members[] = {
    {"model", M_ACT, NULL, R_BOTH},
    {"messages", M_ACT, NULL, R_CHAT},
    {"prompt", M_ACT, NULL, R_COMPL},
    {"echo", M_REFUSE, "echo is not supported", R_COMPL},
    {"suffix", M_REFUSE, "suffix (insertion) is not supported", R_COMPL},
    {"response_format", M_ACT, NULL, R_BOTH},
    {"guided_json", M_ACT, NULL, R_BOTH},
    {"guided_regex", M_ACT, NULL, R_BOTH},
    {"guided_choice", M_ACT, NULL, R_BOTH},
    {"guided_grammar", M_ACT, NULL, R_BOTH},
    {"structured_outputs", M_ACT, NULL, R_BOTH},
    {"max_tokens", M_ACT, NULL, R_BOTH},
    {"max_completion_tokens", M_ACT, NULL, R_BOTH},
    {"temperature", M_ACT, NULL, R_BOTH},
    {"top_p", M_ACT, NULL, R_BOTH},
    {"top_k", M_ACT, NULL, R_BOTH},
    {"min_p", M_ACT, NULL, R_BOTH},
    {"repetition_penalty", M_ACT, NULL, R_BOTH},
    {"presence_penalty", M_ACT, NULL, R_BOTH},
    {"logit_bias", M_ACT, NULL, R_BOTH},
    {"frequency_penalty", M_ACT, NULL, R_BOTH},
    {"seed", M_ACT, NULL, R_BOTH},
    {"n", M_ACT, NULL, R_BOTH},
    {"stop", M_ACT, NULL, R_BOTH},
    {"logprobs", M_ACT, NULL, R_BOTH},
    {"top_logprobs", M_ACT, NULL, R_BOTH},
    {"stream", M_ACT, NULL, R_BOTH},
    {"stream_options", M_ACT, NULL, R_BOTH},
    {"timeout", M_ACT, NULL, R_BOTH},
    {"speculate", M_ACT, NULL, R_BOTH},
    {"strux", M_ACT, NULL, R_BOTH},
    /* bookkeeping for the caller, not for the model */
    {"user", M_HARMLESS, NULL, R_BOTH},
    {"metadata", M_HARMLESS, NULL, R_BOTH},
    {"store", M_HARMLESS, NULL, R_BOTH},
    {"service_tier", M_HARMLESS, NULL, R_BOTH},
    {"prompt_cache_key", M_HARMLESS, NULL, R_BOTH},
    {"safety_identifier", M_HARMLESS, NULL, R_BOTH},
    /* vLLM picks among grammar engines; strux has one */
    {"guided_decoding_backend", M_HARMLESS, NULL, R_BOTH},
    /* a forced call is one call, which either value allows */
    {"parallel_tool_calls", M_HARMLESS, NULL, R_CHAT},
    {"tools", M_ACT, NULL, R_CHAT},
    {"tool_choice", M_ACT, NULL, R_CHAT},
    {"functions", M_REFUSE, "the legacy functions are not supported; give tools and "
                            "tool_choice", R_BOTH},
    {"function_call", M_REFUSE, "the legacy function_call is not supported; give tools and "
                                "tool_choice", R_BOTH},
    {"best_of", M_REFUSE, "best_of is not supported; use n, or strux.num_beams for beam search", R_BOTH},
    {"reasoning_effort", M_REFUSE, "reasoning_effort is not supported (Qwen3's thinking has no "
                                   "effort levels); turn thinking on with chat_template_kwargs "
                                   "{\"enable_thinking\": true} or strux.thinking {\"budget\": N}",
     R_BOTH},
    {"chat_template_kwargs", M_ACT, NULL, R_BOTH},
    {"modalities", M_REFUSE, "only text output is supported", R_BOTH},
    {"audio", M_REFUSE, "audio output is not supported", R_BOTH},
    {"prediction", M_REFUSE, "predicted outputs are not supported (see speculate)", R_BOTH},
    {"web_search_options", M_REFUSE, "web search is not supported", R_BOTH},
    {"verbosity", M_REFUSE, "verbosity is not supported", R_BOTH},
    {"ignore_eos", M_REFUSE, "ignore_eos is not supported: the grammar decides where output ends", R_BOTH},
    {"min_tokens", M_REFUSE, "min_tokens is not supported: the grammar decides where output ends", R_BOTH},
    {"guided_whitespace_pattern", M_REFUSE, "guided_whitespace_pattern is not supported: "
                                            "give the whitespace policy in strux.layout", R_BOTH},
};

/* The value that asks for nothing: the member may be sent as its default. */
static int noop(const char *k, const json_t *v)
{
    if (json_is_null(v))
        return 1;
    if (!strcmp(k, "tools") || !strcmp(k, "functions"))
        return json_is_array(v) && json_array_size(v) == 0;
    if (!strcmp(k, "tool_choice") || !strcmp(k, "function_call"))
        return json_is_string(v) && !strcmp(json_string_value(v), "none");
    if (!strcmp(k, "best_of"))
        return json_is_integer(v) && json_integer_value(v) == 1;
    if (!strcmp(k, "modalities"))
        return json_is_array(v) && json_array_size(v) == 1 &&
               json_is_string(json_array_get(v, 0)) &&
               !strcmp(json_string_value(json_array_get(v, 0)), "text");
    if (!strcmp(k, "ignore_eos") || !strcmp(k, "echo"))
        return json_is_false(v);
    if (!strcmp(k, "suffix"))
        return json_is_string(v) && json_string_length(v) == 0;
    if (!strcmp(k, "min_tokens"))
        return json_is_integer(v) && json_integer_value(v) == 0;
    return 0;
}

/* "/" + key, escaped as RFC 6901 asks. */
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

static const char *const strux_members[] = {"num_beams", "length_penalty",
                                            "num_return_sequences", "early_stopping",
                                            "field_confidence", "thinking", "layout", NULL};

static int is_strux_member(const char *k)
{
    for (int i = 0; strux_members[i]; i++)
        if (!strcmp(k, strux_members[i]))
            return 1;
    return 0;
}

static int check_members(const json_t *root, int route, sx_error *err)
{
    const char *k;
    const json_t *v;
    char ptr[256];
    json_object_foreach((json_t *)root, k, v) {
        const struct member *m = NULL;
        for (size_t i = 0; i < sizeof members / sizeof members[0] && !m; i++)
            if (!strcmp(k, members[i].name) && (members[i].routes & route))
                m = &members[i];
        ptr_join(ptr, sizeof ptr, "", k);
        if (!m)
            return sx_err_setp(err, SX_EINVAL, ptr, -1, "unknown member \"%.100s\"%s", k,
                               is_strux_member(k) ? " (strux's own options go in the \"strux\" object)"
                                                  : " (docs/PROTOCOL.md lists what strux takes)");
        if (m->kind == M_REFUSE && !noop(k, v))
            return sx_err_setp(err, SX_EUNSUPPORTED, ptr, -1, "%s", m->why);
    }
    return SX_OK;
}

/* Members of a nested object: `allowed` (NULL-terminated), else an error
 * naming the first other one. */
static int only(const json_t *obj, const char *at, const char *what, const char *const *allowed,
                sx_error *err)
{
    const char *k;
    const json_t *v;
    char ptr[256], list[256];
    json_object_foreach((json_t *)obj, k, v) {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = !strcmp(k, allowed[i]);
        if (ok)
            continue;
        size_t n = 0;
        list[0] = 0;
        for (int i = 0; allowed[i] && n < sizeof list; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", allowed[i]);
        ptr_join(ptr, sizeof ptr, at, k);
        return sx_err_setp(err, SX_EINVAL, ptr, -1, "unknown member \"%.100s\" of %s (expected %s)",
                           k, what, list);
    }
    return SX_OK;
}

/* ---- the constraint ---------------------------------------------------------- */

/* Where the request's one constraint came from, for the error when it
 * gives two. */
typedef struct constraint_src {
    const char *seen; /* the first source's pointer, or NULL */
} constraint_src;

static int one_source(constraint_src *cs, const char *at, sx_error *err)
{
    if (cs->seen)
        return sx_err_setp(err, SX_EINVAL, at, -1,
                           "give one constraint: %s already sets one (response_format, "
                           "guided_json, guided_regex, guided_choice and structured_outputs "
                           "each do)", cs->seen);
    cs->seen = at;
    return SX_OK;
}

/* A schema given as JSON or as a string holding JSON (vLLM takes both). */
static int use_schema(sx_rpc_req *r, const json_t *v, const sx_rpc_limits *lim, const char *at,
                      sx_error *err)
{
    r->constraint_at = at;
    if (!json_is_string(v))
        return sx_rpc_req_set_schema(r, v, lim, at, err);
    json_error_t je;
    json_t *schema = json_loadb(json_string_value(v), json_string_length(v),
                                JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!schema)
        return sx_err_setp(err, SX_EINVAL, at, -1, "the schema string is not JSON: %s at byte %d",
                           je.text, je.position);
    if ((!r->keep && !(r->keep = json_array())) || json_array_append_new(r->keep, schema))
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    return sx_rpc_req_set_schema(r, schema, lim, at, err);
}

static int use_regex(sx_rpc_req *r, const json_t *v, const sx_rpc_limits *lim, const char *at,
                     sx_error *err)
{
    r->constraint_at = at;
    return sx_rpc_req_set_regex(r, v, lim, at, err);
}

static int use_choices(sx_rpc_req *r, const json_t *v, const sx_rpc_limits *lim, const char *at,
                       sx_error *err)
{
    r->constraint_at = at;
    return sx_rpc_req_set_choices(r, v, lim, at, err);
}

static int grammar_refused(const char *at, sx_error *err)
{
    return sx_err_setp(err, SX_EUNSUPPORTED, at, -1,
                       "grammars (EBNF, Lark, GBNF) are not supported; strux enforces a JSON "
                       "schema (guided_json), a regular expression (guided_regex), labels "
                       "(guided_choice) or any JSON object (response_format json_object)");
}

static int response_format(sx_rpc_req *r, constraint_src *cs, const json_t *rf,
                           const sx_rpc_limits *lim, sx_error *err)
{
    static const char *const plain[] = {"type", NULL}, *const js_m[] = {"type", "json_schema", NULL};
    static const char *const rx_m[] = {"type", "regex", NULL}, *const ch_m[] = {"type", "choice", NULL};
    static const char *const js_inner[] = {"name", "schema", "strict", "description", NULL};
    int rc;
    if (!rf || json_is_null(rf))
        return SX_OK;
    if (!json_is_object(rf))
        return bad(err, "/response_format", "response_format must be an object");
    const json_t *type = json_object_get(rf, "type");
    if (!json_is_string(type))
        return bad(err, "/response_format/type", "response_format.type must be a string");
    const char *t = json_string_value(type);
    if (!strcmp(t, "text"))
        return only(rf, "/response_format", "response_format", plain, err);
    if (!strcmp(t, "json_object")) {
        if ((rc = only(rf, "/response_format", "response_format", plain, err)) ||
            (rc = one_source(cs, "/response_format", err)))
            return rc;
        r->mode = SX_RPC_JSON_OBJECT;
        r->constraint_at = "/response_format";
        return SX_OK;
    }
    if (!strcmp(t, "regex")) {
        if ((rc = only(rf, "/response_format", "response_format", rx_m, err)) ||
            (rc = one_source(cs, "/response_format", err)))
            return rc;
        const json_t *p = json_object_get(rf, "regex");
        if (!p)
            return bad(err, "/response_format", "a regex response_format needs \"regex\"");
        return use_regex(r, p, lim, "/response_format/regex", err);
    }
    if (!strcmp(t, "choice")) {
        if ((rc = only(rf, "/response_format", "response_format", ch_m, err)) ||
            (rc = one_source(cs, "/response_format", err)))
            return rc;
        const json_t *c = json_object_get(rf, "choice");
        if (!c)
            return bad(err, "/response_format", "a choice response_format needs \"choice\"");
        return use_choices(r, c, lim, "/response_format/choice", err);
    }
    if (strcmp(t, "json_schema"))
        return sx_err_setp(err, SX_EINVAL, "/response_format/type", -1,
                           "response_format.type must be text, json_object, json_schema, regex "
                           "or choice, not \"%.60s\"", t);
    if ((rc = only(rf, "/response_format", "response_format", js_m, err)) ||
        (rc = one_source(cs, "/response_format", err)))
        return rc;
    const json_t *js = json_object_get(rf, "json_schema");
    if (!json_is_object(js))
        return bad(err, "/response_format/json_schema", "json_schema must be an object");
    if ((rc = only(js, "/response_format/json_schema", "json_schema", js_inner, err)))
        return rc;
    const json_t *name = json_object_get(js, "name"), *strict = json_object_get(js, "strict");
    const json_t *desc = json_object_get(js, "description");
    if (name && !json_is_string(name))
        return bad(err, "/response_format/json_schema/name", "name must be a string");
    if (desc && !json_is_string(desc))
        return bad(err, "/response_format/json_schema/description", "description must be a string");
    /* strict or not, strux only ever enforces the schema exactly */
    if (strict && !json_is_boolean(strict) && !json_is_null(strict))
        return bad(err, "/response_format/json_schema/strict", "strict must be a boolean");
    const json_t *schema = json_object_get(js, "schema");
    if (!schema)
        return bad(err, "/response_format/json_schema", "json_schema needs a \"schema\"");
    r->constraint_at = SX_RPC_OPENAI_SCHEMA_AT;
    return sx_rpc_req_set_schema(r, schema, lim, SX_RPC_OPENAI_SCHEMA_AT, err);
}

/* vLLM's structured_outputs object (SamplingParams.structured_outputs). */
static int structured_outputs(sx_rpc_req *r, constraint_src *cs, const json_t *so,
                              const sx_rpc_limits *lim, sx_error *err)
{
    static const char *const allowed[] = {"json", "regex", "choice", "grammar", "json_object",
                                          NULL};
    int rc;
    if (!so || json_is_null(so))
        return SX_OK;
    if (!json_is_object(so))
        return bad(err, "/structured_outputs", "structured_outputs must be an object");
    if ((rc = only(so, "/structured_outputs", "structured_outputs", allowed, err)))
        return rc;
    const json_t *v;
    if ((v = json_object_get(so, "grammar")) && !json_is_null(v))
        return grammar_refused("/structured_outputs/grammar", err);
    if ((v = json_object_get(so, "json")) && !json_is_null(v)) {
        if ((rc = one_source(cs, "/structured_outputs/json", err)) ||
            (rc = use_schema(r, v, lim, "/structured_outputs/json", err)))
            return rc;
    }
    if ((v = json_object_get(so, "regex")) && !json_is_null(v)) {
        if ((rc = one_source(cs, "/structured_outputs/regex", err)) ||
            (rc = use_regex(r, v, lim, "/structured_outputs/regex", err)))
            return rc;
    }
    if ((v = json_object_get(so, "choice")) && !json_is_null(v)) {
        if ((rc = one_source(cs, "/structured_outputs/choice", err)) ||
            (rc = use_choices(r, v, lim, "/structured_outputs/choice", err)))
            return rc;
    }
    if ((v = json_object_get(so, "json_object")) && !json_is_null(v)) {
        if (!json_is_boolean(v))
            return bad(err, "/structured_outputs/json_object", "json_object must be a boolean");
        if (json_is_true(v)) {
            if ((rc = one_source(cs, "/structured_outputs/json_object", err)))
                return rc;
            r->mode = SX_RPC_JSON_OBJECT;
            r->constraint_at = "/structured_outputs/json_object";
        }
    }
    return SX_OK;
}

static int constraint(sx_rpc_req *r, const json_t *root, const sx_rpc_limits *lim, sx_error *err)
{
    constraint_src cs = {NULL};
    const json_t *v;
    int rc;
    if ((rc = response_format(r, &cs, json_object_get(root, "response_format"), lim, err)))
        return rc;
    /* vLLM's older top-level fields (the openai SDK sends extra_body's
     * members at the top level) */
    if ((v = json_object_get(root, "guided_json")) && !json_is_null(v) &&
        ((rc = one_source(&cs, "/guided_json", err)) ||
         (rc = use_schema(r, v, lim, "/guided_json", err))))
        return rc;
    if ((v = json_object_get(root, "guided_regex")) && !json_is_null(v) &&
        ((rc = one_source(&cs, "/guided_regex", err)) ||
         (rc = use_regex(r, v, lim, "/guided_regex", err))))
        return rc;
    if ((v = json_object_get(root, "guided_choice")) && !json_is_null(v) &&
        ((rc = one_source(&cs, "/guided_choice", err)) ||
         (rc = use_choices(r, v, lim, "/guided_choice", err))))
        return rc;
    if ((v = json_object_get(root, "guided_grammar")) && !json_is_null(v))
        return grammar_refused("/guided_grammar", err);
    return structured_outputs(r, &cs, json_object_get(root, "structured_outputs"), lim, err);
}

/* `stop`: a string or up to 16 strings.  The grammar decides where a
 * document ends and a stop string never cuts one, so with a constraint they
 * are accepted and the answer is the whole document; free text would have
 * to be cut, which strux does not do yet, so there they are refused. */
static int stop_field(const sx_rpc_req *r, const json_t *stop, sx_error *err)
{
    if (!stop || json_is_null(stop))
        return SX_OK;
    size_t n = 1;
    if (json_is_array(stop)) {
        n = json_array_size(stop);
        if (n > 16)
            return bad(err, "/stop", "stop holds at most 16 strings");
        for (size_t i = 0; i < n; i++)
            if (!json_is_string(json_array_get(stop, i))) {
                char ptr[64];
                snprintf(ptr, sizeof ptr, "/stop/%zu", i);
                return bad(err, ptr, "a stop sequence must be a string");
            }
    } else if (!json_is_string(stop)) {
        return bad(err, "/stop", "stop must be a string or an array of strings");
    }
    if (n == 0 || r->mode != SX_RPC_TEXT)
        return SX_OK;
    return sx_err_setp(err, SX_EUNSUPPORTED, "/stop", -1,
                       "stop sequences apply to constrained output only (where they never cut "
                       "the document); free text is not cut at stop sequences yet");
}

/* Thinking: chat_template_kwargs {"enable_thinking": true} (vLLM's
 * convention) or strux.thinking (true, or {"budget": N}).  The answer is
 * then free reasoning inside <think>...</think>, closed by the model or
 * by the budget, and the constraint from there on. */
static int thinking(sx_rpc_req *r, const json_t *root, const json_t *ext, sx_error *err)
{
    static const char *const kw_m[] = {"enable_thinking", NULL};
    static const char *const th_m[] = {"budget", NULL};
    const json_t *kw = json_object_get(root, "chat_template_kwargs");
    const json_t *th = ext ? json_object_get(ext, "thinking") : NULL;
    int rc, on = 0;
    const char *at = NULL;
    if (kw && !json_is_null(kw)) {
        if (!json_is_object(kw))
            return bad(err, "/chat_template_kwargs", "chat_template_kwargs must be an object");
        if ((rc = only(kw, "/chat_template_kwargs", "chat_template_kwargs", kw_m, err)))
            return rc;
        const json_t *et = json_object_get(kw, "enable_thinking");
        if (et && !json_is_boolean(et) && !json_is_null(et))
            return bad(err, "/chat_template_kwargs/enable_thinking",
                       "enable_thinking must be a boolean");
        if (json_is_true(et)) {
            on = 1;
            at = "/chat_template_kwargs/enable_thinking";
        }
    }
    if (th && !json_is_null(th)) {
        if (json_is_object(th)) {
            if ((rc = only(th, "/strux/thinking", "strux.thinking", th_m, err)))
                return rc;
            const json_t *b = json_object_get(th, "budget");
            if (b && (!json_is_integer(b) || json_integer_value(b) < 1 ||
                      json_integer_value(b) > 1 << 20))
                return bad(err, "/strux/thinking/budget",
                           "the thinking budget must be an integer of at least 1 (tokens)");
            r->think_budget = b ? (int)json_integer_value(b) : 0;
            on = 1;
        } else if (json_is_boolean(th)) {
            on = on || json_is_true(th);
        } else {
            return bad(err, "/strux/thinking", "strux.thinking must be a boolean or {\"budget\": N}");
        }
        if (json_is_true(th) || json_is_object(th))
            at = "/strux/thinking";
    }
    if (!on)
        return SX_OK;
    r->thinking = 1;
    if (r->completion)
        return bad(err, at, "thinking applies to chat completions (a raw prompt is written as "
                            "given)");
    if (r->mode == SX_RPC_CHOICES)
        return sx_err_setp(err, SX_EUNSUPPORTED, at, -1,
                           "thinking does not apply to choices (the labels are scored, not "
                           "written): use a json_schema with an enum");
    if (r->mode == SX_RPC_TEXT && r->think_budget)
        return sx_err_setp(err, SX_EUNSUPPORTED, "/strux/thinking/budget", -1,
                           "a thinking budget needs a constrained answer (response_format or a "
                           "forced tool call)");
    if (r->num_beams)
        return bad(err, at, "thinking does not combine with beam search");
    if (r->field_confidence)
        return bad(err, at, "thinking does not combine with field_confidence (not yet)");
    return SX_OK;
}

static int strux_ext(sx_rpc_req *r, const json_t *root, sx_error *err)
{
    int rc;
    /* the `strux` extension: beam search (temperature defaults to 0 there),
     * field_confidence */
    const json_t *ext = json_object_get(root, "strux");
    if (!ext || json_is_null(ext))
        return thinking(r, root, NULL, err);
    if (!json_is_object(ext))
        return bad(err, "/strux", "strux must be an object");
    if ((rc = only(ext, "/strux", "strux", strux_members, err)))
        return rc;
    const json_t *lay = json_object_get(ext, "layout");
    if (lay && (rc = sx_rpc_req_set_layout(r, lay, "/strux/layout", err)))
        return rc;
    if (json_object_get(ext, "num_beams") && !json_object_get(root, "temperature"))
        r->sampling.temperature = 0;
    if ((rc = sx_rpc_req_set_beams(r, ext, "/strux", err)))
        return rc;
    if (r->num_beams && r->stream)
        return bad(err, "/stream", "beam search answers once, at the end: no stream");
    if ((rc = sx_rpc_req_set_field_confidence(r, json_object_get(ext, "field_confidence"),
                                              "/strux/field_confidence", err)))
        return rc;
    if ((r->tool_auto || r->tool_none) && (r->num_beams || r->field_confidence))
        return bad(err, "/strux", "beam search and field_confidence do not combine with "
                                  "tool_choice \"auto\" or \"none\"");
    return thinking(r, root, ext, err);
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
    const json_t *lp = json_object_get(root, "logprobs");
    if (r->completion && lp && !json_is_null(lp) && !json_is_false(lp) &&
        !(json_is_integer(lp) && json_integer_value(lp) == 0))
        return sx_err_setp(err, SX_EUNSUPPORTED, "/logprobs", -1,
                           "logprobs on /v1/completions are not supported yet (they are on "
                           "/v1/chat/completions)");
    if (!r->completion && (rc = flag(root, "logprobs", &r->logprobs, err)))
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
    if ((rc = stop_field(r, json_object_get(root, "stop"), err)))
        return rc;
    if ((rc = flag(root, "stream", &r->stream, err)))
        return rc;
    if (r->completion && r->stream)
        return sx_err_setp(err, SX_EUNSUPPORTED, "/stream", -1,
                           "stream on /v1/completions is not supported yet (it is on "
                           "/v1/chat/completions)");
    const json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        static const char *const so_m[] = {"include_usage", NULL};
        if (!json_is_object(so))
            return bad(err, "/stream_options", "stream_options must be an object");
        if ((rc = only(so, "/stream_options", "stream_options", so_m, err)))
            return rc;
        const json_t *iu = json_object_get(so, "include_usage");
        if (iu && !json_is_boolean(iu) && !json_is_null(iu))
            return bad(err, "/stream_options/include_usage", "include_usage must be a boolean");
        r->stream_usage = json_is_true(iu);
    }
    if (r->mode == SX_RPC_CHOICES) {
        /* one label, chosen with every label's probability (strux.scores) */
        r->scores = 1;
        if (r->n > 1)
            return bad(err, "/n", "n > 1 does not apply to choices: strux.scores gives every "
                                  "label's probability");
        if (r->stream)
            return bad(err, "/stream", "choices answer with one label and its scores at once: "
                                       "no stream");
    }
    if ((rc = strux_ext(r, root, err)))
        return rc;
    return sx_rpc_req_set_penalties(r, root, "", err);
}

/* /v1/completions' prompt: a string, or an array holding one string. */
static int prompt_field(sx_rpc_req *r, const json_t *root, sx_error *err)
{
    const json_t *p = json_object_get(root, "prompt");
    if (!p)
        return bad(err, "", "a completions request needs a prompt");
    const char *at = "/prompt";
    if (json_is_array(p)) {
        if (json_array_size(p) != 1)
            return sx_err_setp(err, SX_EUNSUPPORTED, "/prompt", -1,
                               "prompt: give one string (a batch of prompts is not supported)");
        p = json_array_get(p, 0);
        at = "/prompt/0";
    }
    if (!json_is_string(p))
        return bad(err, at, "prompt must be a string (token-id prompts are not supported)");
    if (strlen(json_string_value(p)) != json_string_length(p))
        return bad(err, at, "prompt must not contain NUL characters");
    if (json_string_length(p) == 0)
        return bad(err, at, "prompt must not be empty");
    r->prompt = json_string_value(p);
    r->prompt_len = json_string_length(p);
    return SX_OK;
}

static int parse(const char *buf, size_t len, const sx_rpc_limits *lim, sx_rpc_req *out,
                 int completion, sx_error *err);

int sx_rpc_openai_parse(const char *buf, size_t len, const sx_rpc_limits *lim, sx_rpc_req *out,
                        sx_error *err)
{
    return parse(buf, len, lim, out, 0, err);
}

int sx_rpc_openai_completion_parse(const char *buf, size_t len, const sx_rpc_limits *lim,
                                   sx_rpc_req *out, sx_error *err)
{
    return parse(buf, len, lim, out, 1, err);
}

static int parse(const char *buf, size_t len, const sx_rpc_limits *lim, sx_rpc_req *out,
                 int completion, sx_error *err)
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
    out->completion = completion;
    if ((rc = check_members(root, completion ? R_COMPL : R_CHAT, err)))
        goto fail;
    const json_t *model = json_object_get(root, "model");
    if (model && !json_is_string(model)) {
        rc = bad(err, "/model", "model must be a string");
        goto fail;
    }
    out->model = model ? json_string_value(model) : NULL;
    const json_t *msgs = json_object_get(root, "messages");
    if (completion) {
        if ((rc = prompt_field(out, root, err)))
            goto fail;
    } else if (!msgs) {
        rc = bad(err, "", "a request needs messages");
        goto fail;
    } else if ((rc = sx_rpc_req_set_messages(out, msgs, lim, 0, "/messages", err))) {
        goto fail;
    }
    if ((rc = constraint(out, root, lim, err)) ||
        (rc = sx_rpc_openai_tools(out, root, lim, err)) || (rc = sampling(out, root, lim, err)))
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
                     res->n_prompt + res->n_completion, "prompt_tokens_details",
                     "cached_tokens", res->n_cached, "completion_tokens_details",
                     "forced_tokens", res->n_forced);
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

/* choices[i] of a chat.completion.  A label (choices) is the content
 * itself, as vLLM's guided_choice answers, not the JSON string the grammar
 * wrote. */
void sx_rpc_openai_call_id(const char *cid, int i, int k, char *out, size_t cap)
{
    const char *tail = strrchr(cid, '-');
    if (k == 0)
        snprintf(out, cap, "call_%s_%d", tail ? tail + 1 : cid, i);
    else
        snprintf(out, cap, "call_%s_%d_%d", tail ? tail + 1 : cid, i, k);
}

json_t *sx_rpc_openai_tool_call(const char *cid, int i, int k, const json_t *call)
{
    const json_t *name = json_object_get(call, "name");
    const json_t *args = json_object_get(call, "arguments");
    char *atext = args ? json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    char id[96];
    sx_rpc_openai_call_id(cid, i, k, id, sizeof id);
    json_t *c = atext && json_is_string(name)
                    ? json_pack("{s:s, s:s, s:{s:O, s:s}}", "id", id, "type", "function",
                                "function", "name", name, "arguments", atext)
                    : NULL;
    free(atext);
    return c;
}

/* A tool-calling answer's message: content (the free text before the
 * calls, null when none), OpenAI's tool_calls (arguments as JSON text),
 * reasoning_content when thinking. */
static json_t *tool_message(const char *cid, const sx_rpc_choice *c, int i, int auto_calls)
{
    json_t *calls = json_array();
    if (!calls)
        return NULL;
    if (auto_calls) {
        size_t k;
        const json_t *v;
        json_array_foreach(c->output, k, v)
            if (json_array_append_new(calls, sx_rpc_openai_tool_call(cid, i, (int)k, v)))
                goto fail;
    } else if (json_array_append_new(calls, sx_rpc_openai_tool_call(cid, i, 0, c->output))) {
        goto fail;
    }
    /* a forced call has no free text (with thinking, content is the call) */
    json_t *content = auto_calls && c->content && c->content_len
                          ? json_stringn(c->content, c->content_len)
                          : json_null();
    json_t *m = json_pack("{s:s, s:o, s:n}", "role", "assistant", "content",
                          content ? content : json_null(), "refusal");
    if (!m)
        goto fail;
    if (json_array_size(calls) > 0 ? json_object_set_new(m, "tool_calls", calls)
                                   : (json_decref(calls), 0)) {
        json_decref(m);
        return NULL;
    }
    if (c->reasoning)
        json_object_set_new(m, "reasoning_content", json_stringn_nocheck(c->reasoning,
                                                                          c->reasoning_len));
    return m;
fail:
    json_decref(calls);
    return NULL;
}

static json_t *choice_json(const sx_rpc_req *r, const char *cid, const sx_rpc_choice *c, int i)
{
    if (r->completion) {
        json_t *text = json_stringn(c->text ? c->text : "", c->text_len);
        if (!text) /* cut mid-character by max_tokens */
            text = json_stringn_nocheck(c->text ? c->text : "", c->text_len);
        return json_pack("{s:i, s:o, s:s, s:n}", "index", i, "text", text, "finish_reason",
                         c->finish_reason ? c->finish_reason : "stop", "logprobs");
    }
    if ((r->tool_call || r->tool_auto) && c->output) {
        const char *fr = c->finish_reason ? c->finish_reason : "stop";
        if (!strcmp(fr, "stop") && (r->tool_call || json_array_size(c->output) > 0))
            fr = "tool_calls"; /* a call was made */
        json_t *choice = json_pack("{s:i, s:o, s:s, s:n}", "index", i, "message",
                                   tool_message(cid, c, i, r->tool_auto), "finish_reason", fr,
                                   "logprobs");
        if (choice && c->logprobs &&
            set(choice, "logprobs", json_pack("{s:O}", "content", c->logprobs))) {
            json_decref(choice);
            return NULL;
        }
        return choice;
    }
    const char *ctext = c->content ? c->content : c->text ? c->text : "";
    size_t clen = c->content ? c->content_len : c->text_len;
    json_t *content = r->mode == SX_RPC_CHOICES && json_is_string(c->output)
                          ? json_string(json_string_value(c->output))
                          : json_stringn(ctext, clen);
    if (!content) /* free text cut mid-character by max_tokens */
        content = json_stringn_nocheck(ctext, clen);
    json_t *msg = json_pack("{s:s, s:o, s:n}", "role", "assistant", "content", content, "refusal");
    if (msg && c->reasoning)
        json_object_set_new(msg, "reasoning_content",
                            json_stringn_nocheck(c->reasoning, c->reasoning_len));
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
                         res->field_confidence, res->reasoning, res->reasoning_len,
                         res->content, res->content_len};
    const sx_rpc_choice *cs = res->choices ? res->choices : &one;
    int n = res->choices ? res->n_choices : 1;
    /* the name the caller asked for, as OpenAI-compatible servers answer */
    if (r->model && *r->model)
        model = r->model;
    char ccid[96];
    if (r->completion) { /* text_completion ids are "cmpl-..." */
        const char *tail = strncmp(cid, "chatcmpl-", 9) ? cid : cid + 9;
        snprintf(ccid, sizeof ccid, "cmpl-%s", tail);
        cid = ccid;
    }
    if (set(o, "id", json_string(cid)) ||
        set(o, "object", json_string(r->completion ? "text_completion" : "chat.completion")) ||
        set(o, "created", json_integer(created)) || set(o, "model", json_string(model)))
        goto fail;
    json_t *choices = json_array();
    if (!choices || set(o, "choices", choices))
        goto fail;
    for (int i = 0; i < n; i++)
        if (json_array_append_new(choices, choice_json(r, cid, &cs[i], i)))
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
    texts[0] = res->content ? res->content : res->text;
    lens[0] = res->content ? res->content_len : res->text_len;
    if (!strux || set(strux, "output", res->output ? json_string(marks[0]) : json_null()))
        goto fail;
    if (n > 1) {
        json_t *outs = json_array();
        if (!outs || set(strux, "outputs", outs))
            goto fail;
        for (int i = 0; i < n && i < SX_RPC_MAX_N; i++) {
            vals[1 + i] = cs[i].output;
            texts[1 + i] = cs[i].content ? cs[i].content : cs[i].text;
            lens[1 + i] = cs[i].content ? cs[i].content_len : cs[i].text_len;
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

int sx_rpc_openai_delta_dump(const char *cid, long created, const char *model, int index,
                             json_t *delta, int role_first, char **out, size_t *len)
{
    *out = NULL;
    if (!delta)
        return SX_ENOMEM;
    if (role_first && set(delta, "role", json_string("assistant"))) {
        json_decref(delta);
        return SX_ENOMEM;
    }
    json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:n, s:n}]}", "id", cid, "object",
                          "chat.completion.chunk", "created", (json_int_t)created, "model", model,
                          "choices", "index", index, "delta", delta, "finish_reason", "logprobs");
    if (!o)
        return SX_ENOMEM;
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
