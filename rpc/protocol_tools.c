/* sx_rpc: tool calling on the OpenAI route, in Qwen3's own format (see
 * protocol.h).
 *
 * The tools are shown to the model exactly as Qwen3's chat template shows
 * them: a "# Tools" block at the end of the system turn with each tool as
 * Python's json.dumps writes it.  A forced call (tool_choice "required" or
 * a named function) is the answer's constraint: the assistant turn is
 * opened with Qwen3's <tool_call> tag (server_prep.c) and the grammar takes
 * {"name": ..., "arguments": ...} whose arguments validate against that
 * tool's `parameters`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_pyjson.h"
#include "rpc/protocol.h"

static int bad(sx_error *err, const char *ptr, const char *msg)
{
    return sx_err_setp(err, SX_EINVAL, ptr, -1, "%s", msg);
}

/* Members of obj outside `allowed` are errors naming them. */
static int only(const json_t *obj, const char *at, const char *const *allowed, sx_error *err)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = !strcmp(k, allowed[i]);
        if (!ok)
            return sx_err_setp(err, SX_EINVAL, at, -1, "unknown member \"%.100s\" at %s", k,
                               *at ? at : "the request");
    }
    return SX_OK;
}

static int valid_name(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* Checks tools[i]; *fn gets its `function` object. */
static int check_tool(const json_t *tool, size_t i, const json_t **fn, sx_error *err)
{
    static const char *const tool_m[] = {"type", "function", NULL};
    static const char *const fn_m[] = {"name", "description", "parameters", "strict", NULL};
    char at[96], sub[128];
    snprintf(at, sizeof at, "/tools/%zu", i);
    if (!json_is_object(tool))
        return bad(err, at, "a tool must be an object");
    const json_t *type = json_object_get(tool, "type");
    snprintf(sub, sizeof sub, "%s/type", at);
    if (!json_is_string(type) || strcmp(json_string_value(type), "function"))
        return sx_err_setp(err, SX_EUNSUPPORTED, sub, -1,
                           "only tools of type \"function\" are supported");
    *fn = json_object_get(tool, "function");
    snprintf(sub, sizeof sub, "%s/function", at);
    if (!json_is_object(*fn))
        return bad(err, sub, "a tool needs a \"function\" object");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)tool, k, v) {
        if (strcmp(k, tool_m[0]) && strcmp(k, tool_m[1])) {
            snprintf(sub, sizeof sub, "%s/%.60s", at, k);
            return sx_err_setp(err, SX_EINVAL, sub, -1, "unknown member \"%.60s\" of a tool", k);
        }
    }
    json_object_foreach((json_t *)*fn, k, v) {
        int ok = 0;
        for (int j = 0; fn_m[j] && !ok; j++)
            ok = !strcmp(k, fn_m[j]);
        if (!ok) {
            snprintf(sub, sizeof sub, "%s/function/%.60s", at, k);
            return sx_err_setp(err, SX_EINVAL, sub, -1,
                               "unknown member \"%.60s\" of a function (expected name, "
                               "description, parameters, strict)", k);
        }
    }
    const json_t *name = json_object_get(*fn, "name"), *desc = json_object_get(*fn, "description");
    const json_t *params = json_object_get(*fn, "parameters"), *strict = json_object_get(*fn, "strict");
    snprintf(sub, sizeof sub, "%s/function/name", at);
    if (!json_is_string(name) || !valid_name(json_string_value(name), json_string_length(name)))
        return bad(err, sub, "a function's name must be 1 to 64 letters, digits, _ or -");
    snprintf(sub, sizeof sub, "%s/function/description", at);
    if (desc && !json_is_string(desc) && !json_is_null(desc))
        return bad(err, sub, "description must be a string");
    snprintf(sub, sizeof sub, "%s/function/parameters", at);
    if (params && !json_is_object(params) && !json_is_null(params))
        return bad(err, sub, "parameters must be a JSON Schema object");
    snprintf(sub, sizeof sub, "%s/function/strict", at);
    /* strict or not, the arguments are enforced exactly */
    if (strict && !json_is_boolean(strict) && !json_is_null(strict))
        return bad(err, sub, "strict must be a boolean");
    return SX_OK;
}

/* The schema of one call: {"name": NAME, "arguments": <parameters>}. */
static json_t *call_schema(const json_t *fn)
{
    const json_t *params = json_object_get(fn, "parameters");
    json_t *args = params && json_is_object(params)
                       ? json_deep_copy(params)
                       /* OpenAI: no parameters is an empty parameter list */
                       : json_pack("{s:s, s:{}, s:b}", "type", "object", "properties",
                                   "additionalProperties", 0);
    if (!args)
        return NULL;
    return json_pack("{s:s, s:{s:{s:O}, s:o}, s:[s, s], s:b}", "type", "object", "properties",
                     "name", "const", json_object_get(fn, "name"), "arguments", args, "required",
                     "name", "arguments", "additionalProperties", 0);
}

/* Keeps a string alive in r (r->keep); *out points into it. */
static int keep_text(sx_rpc_req *r, const char *s, size_t n, const char **out, sx_error *err)
{
    json_t *str = json_stringn_nocheck(s, n);
    if (!str || (!r->keep && !(r->keep = json_array())) || json_array_append_new(r->keep, str))
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    *out = json_string_value(str);
    return SX_OK;
}

/* The system turn with Qwen3's tools block, as its chat template writes it:
 * the caller's system message (if first) and a blank line, then the block.
 * A request without a system message gets one holding the block alone. */
static int render_tools(sx_rpc_req *r, const json_t *tools, sx_error *err)
{
    static const char head[] =
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
    static const char tail[] =
        "\n</tools>\n\nFor each function call, return a json object with function name and "
        "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
        "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
    sx_bytes b = {0};
    int rc = SX_ENOMEM, has_sys = r->n_msgs > 0 && !strcmp(r->msgs[0].role, "system");
    if (has_sys && (sx_bytes_append(&b, r->msgs[0].content, strlen(r->msgs[0].content)) ||
                    sx_bytes_append(&b, "\n\n", 2)))
        goto fail;
    if (sx_bytes_append(&b, head, sizeof head - 1))
        goto fail;
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        size_t n;
        char *js = sx_pyjson_dumps(t, &n);
        if (!js)
            goto fail;
        int bad_append = sx_bytes_append(&b, "\n", 1) || sx_bytes_append(&b, js, n);
        free(js);
        if (bad_append)
            goto fail;
    }
    if (sx_bytes_append(&b, tail, sizeof tail - 1))
        goto fail;
    const char *text = NULL;
    if ((rc = keep_text(r, b.v, b.n, &text, err)))
        goto out;
    if (!has_sys) {
        sx_chat_msg *m = realloc(r->msgs, (r->n_msgs + 1) * sizeof *m);
        if (!m)
            goto fail;
        memmove(m + 1, m, r->n_msgs * sizeof *m);
        r->msgs = m;
        r->n_msgs++;
        r->msgs[0].role = "system";
    }
    r->msgs[0].content = text;
    rc = SX_OK;
    goto out;
fail:
    rc = sx_err_set(err, SX_ENOMEM, "out of memory");
out:
    sx_bytes_free(&b);
    return rc;
}

int sx_rpc_openai_tools(sx_rpc_req *r, const json_t *root, const sx_rpc_limits *lim,
                        sx_error *err)
{
    static const char *const named_m[] = {"type", "function", NULL};
    static const char *const named_fn_m[] = {"name", NULL};
    const json_t *tools = json_object_get(root, "tools");
    const json_t *choice = json_object_get(root, "tool_choice");
    int rc;
    if (choice && json_is_null(choice))
        choice = NULL;
    if (!tools || json_is_null(tools) || (json_is_array(tools) && json_array_size(tools) == 0)) {
        if (choice && !(json_is_string(choice) && !strcmp(json_string_value(choice), "none")))
            return bad(err, "/tool_choice", "tool_choice needs tools");
        return SX_OK;
    }
    if (!json_is_array(tools))
        return bad(err, "/tools", "tools must be an array");
    if (json_array_size(tools) > 128)
        return sx_err_setp(err, SX_ELIMIT, "/tools", -1, "at most 128 tools");
    size_t n = json_array_size(tools), i;
    const json_t **fns = calloc(n, sizeof *fns);
    if (!fns)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    const json_t *t;
    json_array_foreach(tools, i, t) {
        if ((rc = check_tool(t, i, &fns[i], err)))
            goto out;
        const char *name = json_string_value(json_object_get(fns[i], "name"));
        for (size_t j = 0; j < i; j++)
            if (!strcmp(name, json_string_value(json_object_get(fns[j], "name")))) {
                char at[96];
                snprintf(at, sizeof at, "/tools/%zu/function/name", i);
                rc = sx_err_setp(err, SX_EINVAL, at, -1, "two tools are named \"%s\"", name);
                goto out;
            }
    }
    /* which calls the answer may be: all tools, one, or none forced */
    const json_t *only_fn = NULL;
    int forced = 0;
    const json_t *par = json_object_get(root, "parallel_tool_calls");
    if (par && !json_is_boolean(par) && !json_is_null(par)) {
        rc = bad(err, "/parallel_tool_calls", "parallel_tool_calls must be a boolean");
        goto out;
    }
    r->one_call = json_is_false(par);
    if (!choice || (json_is_string(choice) && !strcmp(json_string_value(choice), "auto"))) {
        r->tool_auto = 1;
        forced = 1;
    } else if (json_is_string(choice) && !strcmp(json_string_value(choice), "required")) {
        forced = 1;
    } else if (json_is_string(choice) && !strcmp(json_string_value(choice), "none")) {
        forced = 0;
        r->tool_none = 1;
    } else if (json_is_object(choice)) {
        const json_t *type = json_object_get(choice, "type"), *f = json_object_get(choice, "function");
        if ((rc = only(choice, "/tool_choice", named_m, err)))
            goto out;
        if (!json_is_string(type) || strcmp(json_string_value(type), "function") ||
            !json_is_object(f)) {
            rc = bad(err, "/tool_choice",
                     "tool_choice must be \"none\", \"required\" or {\"type\": \"function\", "
                     "\"function\": {\"name\": ...}}");
            goto out;
        }
        if ((rc = only(f, "/tool_choice/function", named_fn_m, err)))
            goto out;
        const json_t *name = json_object_get(f, "name");
        for (i = 0; i < n && !only_fn; i++)
            if (json_is_string(name) &&
                json_equal((json_t *)name, json_object_get(fns[i], "name")))
                only_fn = fns[i];
        if (!only_fn) {
            rc = bad(err, "/tool_choice/function/name", "tool_choice names no tool in tools");
            goto out;
        }
        forced = 1;
    } else {
        rc = bad(err, "/tool_choice",
                 "tool_choice must be \"none\", \"required\" or {\"type\": \"function\", "
                 "\"function\": {\"name\": ...}}");
        goto out;
    }
    if ((rc = render_tools(r, tools, err)))
        goto out;
    if (!forced) {
        rc = SX_OK;
        goto out;
    }
    if (r->mode != SX_RPC_TEXT) {
        rc = bad(err, r->constraint_at ? r->constraint_at : "/response_format",
                 r->tool_auto ? "with tools, tool_choice \"auto\" (the default) makes the tool "
                                "calls the answer's constraint: give no other, or tool_choice "
                                "\"none\""
                              : "a forced tool call is the answer's constraint: give no other");
        goto out;
    }
    json_t *schema;
    if (only_fn || n == 1) {
        schema = call_schema(only_fn ? only_fn : fns[0]);
    } else {
        json_t *any = json_array();
        schema = any ? json_pack("{s:o}", "anyOf", any) : NULL;
        for (i = 0; schema && i < n; i++)
            if (json_array_append_new(any, call_schema(fns[i]))) {
                json_decref(schema);
                schema = NULL;
            }
    }
    if (!schema || (!r->keep && !(r->keep = json_array())) ||
        json_array_append_new(r->keep, schema)) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto out;
    }
    r->tool_call = !r->tool_auto;
    r->constraint_at = "/tools";
    rc = sx_rpc_req_set_schema(r, schema, lim, "/tools", err);
out:
    free(fns);
    return rc;
}

int sx_rpc_render_tool_calls(sx_rpc_req *r, const char *content, const json_t *calls,
                             const char *at, const char **out, sx_error *err)
{
    static const char *const call_m[] = {"id", "type", "function", NULL};
    static const char *const fn_m[] = {"name", "arguments", NULL};
    char ptr[300];
    sx_bytes b = {0};
    int rc = SX_OK;
    size_t i;
    const json_t *c;
    if (sx_bytes_append(&b, content, strlen(content)))
        goto oom;
    json_array_foreach(calls, i, c) {
        snprintf(ptr, sizeof ptr, "%s/%zu", at, i);
        if (!json_is_object(c)) {
            rc = bad(err, ptr, "a tool call must be an object");
            goto out;
        }
        if ((rc = only(c, ptr, call_m, err)))
            goto out;
        const json_t *type = json_object_get(c, "type"), *fn = json_object_get(c, "function");
        if (type && !(json_is_string(type) && !strcmp(json_string_value(type), "function"))) {
            snprintf(ptr, sizeof ptr, "%s/%zu/type", at, i);
            rc = bad(err, ptr, "a tool call's type must be \"function\"");
            goto out;
        }
        snprintf(ptr, sizeof ptr, "%s/%zu/function", at, i);
        if (!json_is_object(fn)) {
            rc = bad(err, ptr, "a tool call needs a \"function\" object");
            goto out;
        }
        if ((rc = only(fn, ptr, fn_m, err)))
            goto out;
        const json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
        if (!json_is_string(name) || strlen(json_string_value(name)) != json_string_length(name)) {
            snprintf(ptr, sizeof ptr, "%s/%zu/function/name", at, i);
            rc = bad(err, ptr, "a tool call's name must be a string");
            goto out;
        }
        if (!args) {
            snprintf(ptr, sizeof ptr, "%s/%zu/function/arguments", at, i);
            rc = bad(err, ptr, "a tool call needs \"arguments\"");
            goto out;
        }
        /* the template: a newline before every call but a first one that
         * follows no content */
        if ((i > 0 || *content) && sx_bytes_append(&b, "\n", 1))
            goto oom;
        static const char open[] = "<tool_call>\n{\"name\": \"", mid[] = "\", \"arguments\": ",
                          close[] = "}\n</tool_call>";
        if (sx_bytes_append(&b, open, sizeof open - 1) ||
            sx_bytes_append(&b, json_string_value(name), json_string_length(name)) ||
            sx_bytes_append(&b, mid, sizeof mid - 1))
            goto oom;
        if (json_is_string(args)) {
            if (sx_bytes_append(&b, json_string_value(args), json_string_length(args)))
                goto oom;
        } else {
            size_t n;
            char *js = sx_pyjson_dumps(args, &n);
            int fail = !js || sx_bytes_append(&b, js, n);
            free(js);
            if (fail)
                goto oom;
        }
        if (sx_bytes_append(&b, close, sizeof close - 1))
            goto oom;
    }
    if (memchr(b.v, 0, b.n)) {
        rc = bad(err, at, "tool calls must not contain NUL characters");
        goto out;
    }
    rc = keep_text(r, b.v, b.n, out, err);
    goto out;
oom:
    rc = sx_err_set(err, SX_ENOMEM, "out of memory");
out:
    sx_bytes_free(&b);
    return rc;
}
