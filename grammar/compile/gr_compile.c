/* JSON Schema -> grammar nodes.
 *
 * Each schema object compiles to a union over the JSON types it admits,
 * each type carrying the keywords that apply to it.  allOf members are
 * merged into their parent where the merge is exact; anyOf and disjoint
 * oneOf become alternatives.  Anything not enforced exactly is an error
 * naming the keyword and its JSON Pointer. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/compile/compile.h"
#include "grammar/regex/regex.h"

void sx_gr_opts_default(sx_gr_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_ws = 4;
    o->indent = 2;
    o->max_nodes = 100000;
    o->max_depth = 256;
    o->max_stack = 128;
}

/* ---- owned allocations ------------------------------------------------ */

void *gc_alloc(gc_ctx *c, size_t n)
{
    return gr_pool_alloc(c->g, n);
}

int gc_new_node(gc_ctx *c, gr_kind kind, int32_t *id)
{
    sx_grammar *g = c->g;
    if (g->n_nodes >= c->opts.max_nodes)
        return sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1,
                           "schema needs more than %d grammar nodes", c->opts.max_nodes);
    if (g->n_nodes == g->cap_nodes) {
        int32_t cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        gr_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    if (g->n_nodes >= c->cap_node_ptr) {
        int32_t cap = c->cap_node_ptr ? c->cap_node_ptr * 2 : 64;
        char **np = realloc(c->node_ptr, (size_t)cap * sizeof *np);
        if (!np)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        memset(np + c->cap_node_ptr, 0, (size_t)(cap - c->cap_node_ptr) * sizeof *np);
        c->node_ptr = np;
        c->cap_node_ptr = cap;
    }
    /* a failed attempt cuts the nodes back (mark_restore): the slot may
     * hold the pointer of a node that is gone */
    free(c->node_ptr[g->n_nodes]);
    c->node_ptr[g->n_nodes] = strdup(c->ptr); /* NULL (out of memory): no pointer */
    memset(&g->nodes[g->n_nodes], 0, sizeof g->nodes[0]);
    g->nodes[g->n_nodes].kind = kind;
    *id = g->n_nodes++;
    return SX_OK;
}

/* ---- JSON pointer bookkeeping ------------------------------------------- */

const char *gc_node_ptr(const gc_ctx *c, int32_t i)
{
    return i >= 0 && i < c->g->n_nodes && c->node_ptr && c->node_ptr[i] ? c->node_ptr[i] : "";
}

int gc_check_stop(gc_ctx *c)
{
    int why = gr_work_poll(&c->work);
    if (!why)
        return SX_OK;
    return sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1, "compile stopped (%s) at %s",
                       gr_stop_text(why), c->ptr[0] ? c->ptr : "the root");
}

static void node_ptr_free(gc_ctx *c)
{
    for (int32_t i = 0; c->node_ptr && i < c->cap_node_ptr; i++)
        free(c->node_ptr[i]);
    free(c->node_ptr);
    c->node_ptr = NULL;
}

size_t gc_ptr_push(gc_ctx *c, const char *seg)
{
    size_t old = strlen(c->ptr), at = old;
    if (at + 1 < sizeof c->ptr)
        c->ptr[at++] = '/';
    for (const char *s = seg; *s && at + 2 < sizeof c->ptr; s++) {
        if (*s == '~' || *s == '/') {
            c->ptr[at++] = '~';
            c->ptr[at++] = *s == '~' ? '0' : '1';
        } else {
            c->ptr[at++] = *s;
        }
    }
    c->ptr[at] = '\0';
    return old;
}

size_t gc_ptr_pushi(gc_ctx *c, size_t i)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", i);
    return gc_ptr_push(c, buf);
}

void gc_ptr_pop(gc_ctx *c, size_t old)
{
    c->ptr[old] = '\0';
}

int gc_unsupported(gc_ctx *c, const char *kw, const char *why)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", c->ptr, kw);
    return sx_err_setp(c->err, SX_EUNSUPPORTED, p, -1, "unsupported: '%s' at %s%s%s", kw, p,
                       why ? ": " : "", why ? why : "");
}

int gc_invalid(gc_ctx *c, const char *kw, const char *fmt, ...)
{
    char p[256], m[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    snprintf(p, sizeof p, "%s%s%s", c->ptr, kw ? "/" : "", kw ? kw : "");
    return sx_err_setp(c->err, SX_EFORMAT, p, -1, "invalid schema at %s: %s", p, m);
}

/* ---- public entry points ------------------------------------------------- */

/* compile_json's answer when the first attempt asks for a second one with
 * copies remembered (not an sx_err code: it never leaves this file) */
#define SX_MEMO_RETRY (-1000)

static int compile_json(const sx_vocab *v, const json_t *schema, const sx_gr_opts *o, int memo,
                        sx_grammar **out, sx_error *err);

static int finish(gc_ctx *c, int rc, sx_grammar **out)
{
    gc_memo_free(c);
    gc_strx_memo_free(c);
    if (rc == SX_OK)
        rc = gc_check_stop(c);
    if (rc == SX_OK)
        rc = gc_analyse(c);
    node_ptr_free(c);
    if (rc != SX_OK) {
        sx_gr_free(c->g);
        return rc;
    }
    *out = c->g;
    return SX_OK;
}

static int begin(gc_ctx *c, const sx_vocab *v, const sx_gr_opts *o, sx_error *err)
{
    memset(c, 0, sizeof *c);
    if (o)
        c->opts = *o;
    else
        sx_gr_opts_default(&c->opts);
    if (c->opts.max_nodes <= 0)
        c->opts.max_nodes = 100000;
    if (c->opts.max_depth <= 0)
        c->opts.max_depth = 256;
    if (c->opts.max_stack <= 0)
        c->opts.max_stack = 128;
    if (c->opts.max_ws < 0 || c->opts.max_ws > 64)
        return sx_err_set(err, SX_EINVAL, "max_ws must be within 0..64");
    if (c->opts.ws_mode < SX_WS_FLEXIBLE || c->opts.ws_mode > SX_WS_INDENTED)
        return sx_err_set(err, SX_EINVAL, "ws_mode must be one of SX_WS_FLEXIBLE, "
                                          "SX_WS_COMPACT, SX_WS_INDENTED");
    if (c->opts.ws_mode == SX_WS_INDENTED && c->opts.indent == 0)
        c->opts.indent = 2;
    if (c->opts.ws_mode == SX_WS_INDENTED && (c->opts.indent < 1 || c->opts.indent > 16))
        return sx_err_set(err, SX_EINVAL, "indent must be within 1..16");
    if (c->opts.ws_mode == SX_WS_COMPACT)
        c->opts.max_ws = 0;
    if (c->opts.ws_mode == SX_WS_INDENTED && c->opts.max_stack > 254 / c->opts.indent)
        c->opts.max_stack = 254 / c->opts.indent; /* runs are counted in a byte */
    c->err = err;
    c->g = calloc(1, sizeof *c->g);
    if (!c->g)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    c->g->vocab = v;
    c->g->opts = c->opts;
    gr_work_init(&c->work, &c->opts, LONG_MAX);
    c->g->root = -1;
    return SX_OK;
}

int sx_gr_compile_json(const sx_vocab *v, const json_t *schema, const sx_gr_opts *o,
                       sx_grammar **out, sx_error *err)
{
    int rc = compile_json(v, schema, o, 0, out, err);
    if (rc == SX_MEMO_RETRY)
        rc = compile_json(v, schema, o, 1, out, err);
    return rc;
}

static int compile_json(const sx_vocab *v, const json_t *schema, const sx_gr_opts *o, int memo,
                        sx_grammar **out, sx_error *err)
{
    gc_ctx c;
    int rc = begin(&c, v, o, err);
    if (rc)
        return rc;
    c.memo_on = memo;
    c.root_schema = schema;
    if (json_is_object(schema)) {
        const char *dialect = json_string_value(json_object_get(schema, "$schema"));
        if (dialect && (strstr(dialect, "draft-07") || strstr(dialect, "draft-06") ||
                        strstr(dialect, "draft-04") || strstr(dialect, "draft-03")))
            c.opts.draft7 = 1;
        /* before draft 6, 1.0 is not an integer */
        if (dialect && (strstr(dialect, "draft-04") || strstr(dialect, "draft-03")))
            c.draft4 = 1;
        if (dialect && (strstr(dialect, "draft-06") || strstr(dialect, "draft-04") ||
                        strstr(dialect, "draft-03")))
            c.no_if = 1;
    }
    rc = gc_schema(&c, schema, &c.g->root);
    if (rc && c.memo_wanted && !memo) {
        gc_memo_free(&c);
        gc_strx_memo_free(&c);
        node_ptr_free(&c);
        sx_gr_free(c.g);
        return SX_MEMO_RETRY;
    }
    return finish(&c, rc, out);
}

int sx_gr_compile_schema(const sx_vocab *v, const char *schema, size_t len, const sx_gr_opts *o,
                         sx_grammar **out, sx_error *err)
{
    json_error_t je;
    json_t *j = json_loadb(schema, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return sx_err_setp(err, SX_EFORMAT, "", je.position,
                           "schema is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                           je.column);
    int rc = sx_gr_compile_json(v, j, o, out, err);
    json_decref(j);
    return rc;
}

int sx_gr_compile_json_object(const sx_vocab *v, const sx_gr_opts *o, sx_grammar **out,
                              sx_error *err)
{
    json_t *j = json_pack("{s:s}", "type", "object");
    if (!j)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    int rc = sx_gr_compile_json(v, j, o, out, err);
    json_decref(j);
    return rc;
}

int sx_gr_compile_choices(const sx_vocab *v, const char *const *labels, size_t n,
                          const sx_gr_opts *o, sx_grammar **out, sx_error *err)
{
    if (n == 0)
        return sx_err_set(err, SX_EINVAL, "choices: at least one label is needed");
    json_t *arr = json_array(), *j = NULL;
    if (!arr)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_string(labels[i]);
        if (!s) {
            json_decref(arr);
            return sx_err_set(err, SX_EUTF8, "choices: label %zu is not valid UTF-8", i);
        }
        json_array_append_new(arr, s);
    }
    j = json_pack("{s:o}", "enum", arr);
    if (!j)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    int rc = sx_gr_compile_json(v, j, o, out, err);
    json_decref(j);
    return rc;
}

int sx_gr_compile_regex(const sx_vocab *v, const char *pattern, size_t len, const sx_gr_opts *o,
                        sx_grammar **out, sx_error *err)
{
    gc_ctx c;
    int rc = begin(&c, v, o, err);
    if (rc)
        return rc;
    gr_strx *x = NULL;
    int32_t id;
    rc = gc_regex_automaton(&c, pattern, len, &x);
    if (!rc)
        rc = gc_new_node(&c, GK_STRING, &id);
    if (!rc) {
        c.g->nodes[id].u.str.x = x;
        c.g->nodes[id].u.str.raw = 1;
        c.g->nodes[id].u.str.max_len = -1;
        c.g->root = id;
    }
    return finish(&c, rc, out);
}
