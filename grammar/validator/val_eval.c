/* val_eval: evaluation of a compiled schema against an instance: the
 * dispatcher, references (static and dynamic), the in-place applicators,
 * annotation sets for unevaluated*, and failure reporting.
 *
 * Only the first failure that decides the verdict is reported: branches
 * whose failure is expected (anyOf, oneOf, not, if, contains,
 * propertyNames) run "quiet" and report at their own keyword instead. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

/* ---- reporting ----------------------------------------------------------------- */

static void render_path(const sxv_ctx *c, char *out, size_t cap)
{
    sxv_buf b = {0};
    sxv_buf_add(&b, "", 0);
    for (size_t i = 0; i < c->npath; i++) {
        if (c->path[i].key)
            sxv_buf_ptrseg(&b, c->path[i].key, c->path[i].len);
        else
            sxv_buf_addf(&b, "/%zu", c->path[i].len);
    }
    snprintf(out, cap, "%s", b.oom ? "?" : b.p);
    sxv_buf_free(&b);
}

int sxv_fail(sxv_ctx *c, const sxv_node *n, const char *kw, const char *fmt,
             ...)
{
    if (c->quiet || c->why_set || !c->why)
        return SXV_INVALID;
    c->why_set = 1;
    sx_error *w = c->why;
    char path[200], detail[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    render_path(c, path, sizeof path);
    w->code = SX_OK;
    w->offset = -1;
    snprintf(w->pointer, sizeof w->pointer, "%s%s%s", n->ptr, kw ? "/" : "",
             kw ? kw : "");
    if (n->doc && n->doc != c->v->docs_root)
        snprintf(w->msg, sizeof w->msg, "instance \"%s\": %s: %s (in %s)",
                 path, kw ? kw : "false", detail, n->doc->uri);
    else
        snprintf(w->msg, sizeof w->msg, "instance \"%s\": %s: %s", path,
                 kw ? kw : "false", detail);
    return SXV_INVALID;
}

int sxv_hard(sxv_ctx *c, int code, const char *fmt, ...)
{
    if (c->err)
        return SXV_ERROR;
    c->err = code;
    if (c->why) {
        char path[200], detail[300];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
        render_path(c, path, sizeof path);
        sx_err_set(c->why, code, "instance \"%s\": %s", path, detail);
    }
    return SXV_ERROR;
}

int sxv_path_push_key(sxv_ctx *c, const char *key, size_t len)
{
    if (c->npath > c->v->max_depth)
        return sxv_hard(c, SX_ELIMIT, "instance nested too deeply");
    c->path[c->npath].key = key;
    c->path[c->npath].len = len;
    c->npath++;
    return SX_OK;
}

int sxv_path_push_index(sxv_ctx *c, size_t i)
{
    if (c->npath > c->v->max_depth)
        return sxv_hard(c, SX_ELIMIT, "instance nested too deeply");
    c->path[c->npath].key = NULL;
    c->path[c->npath].len = i;
    c->npath++;
    return SX_OK;
}

void sxv_path_pop(sxv_ctx *c)
{
    c->npath--;
}

/* The match limit counts PCRE2's steps over all start positions, so a long
 * subject gets a budget that grows with its length: a linear pattern must
 * not fail on a long but honest string. */
int sxv_match(sxv_ctx *c, const pcre2_code *re, const char *s, size_t len)
{
    pcre2_match_context *mc = c->v->mctx;
    if (len > 10000) {
        if (!c->mc_long && !(c->mc_long = pcre2_match_context_copy(mc)))
            return -SX_ENOMEM;
        unsigned long lim = c->v->match_limit + 100ul * len;
        pcre2_set_match_limit(c->mc_long,
                              (uint32_t)(lim > 0xffffffffu ? 0xffffffffu : lim));
        mc = c->mc_long;
    }
    return sxv_regex_search(re, s, len, c->md, mc);
}

/* ---- annotations ------------------------------------------------------------------ */

int sxv_ann_init(sxv_ctx *c, sxv_ann *a, size_t n)
{
    a->n = n;
    a->seen = calloc(n ? n : 1, 1);
    if (!a->seen)
        return sxv_hard(c, SX_ENOMEM, "out of memory");
    return SX_OK;
}

void sxv_ann_merge(sxv_ann *into, const sxv_ann *from)
{
    size_t n = into->n < from->n ? into->n : from->n;
    for (size_t i = 0; i < n; i++)
        into->seen[i] |= from->seen[i];
}

void sxv_ann_free(sxv_ann *a)
{
    free(a->seen);
    a->seen = NULL;
    a->n = 0;
}

static size_t container_size(const json_t *x)
{
    return json_is_array(x) ? json_array_size(x) : json_object_size(x);
}

/* Evaluates a branch with its own annotation set, merged into `into` only
 * when the branch holds. */
static int eval_branch(sxv_ctx *c, const sxv_node *n, const json_t *x,
                       sxv_ann *into)
{
    if (!into)
        return sxv_eval(c, n, x, NULL);
    sxv_ann a;
    if (sxv_ann_init(c, &a, into->n))
        return SXV_ERROR;
    int r = sxv_eval(c, n, x, &a);
    if (r == SXV_VALID)
        sxv_ann_merge(into, &a);
    sxv_ann_free(&a);
    return r;
}

/* ---- types, enum, const ------------------------------------------------------------ */

const char *sxv_type_name(const sx_numtab *t, const json_t *x)
{
    switch (json_typeof(x)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return sxv_num_is_integer(t, x) ? "integer" : "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

/* An integer literal (draft-04's integers): no point, no exponent. */
static int int_literal(const sx_numtab *t, const json_t *x)
{
    size_t len;
    const char *s = sx_numtab_find(t, x, &len);
    return s && !memchr(s, '.', len) && !memchr(s, 'e', len) && !memchr(s, 'E', len);
}

static unsigned inst_types(const sx_numtab *t, const json_t *x, int int_strict)
{
    switch (json_typeof(x)) {
    case JSON_OBJECT: return SXV_T_OBJECT;
    case JSON_ARRAY: return SXV_T_ARRAY;
    case JSON_STRING: return SXV_T_STRING;
    case JSON_INTEGER: return SXV_T_NUMBER | SXV_T_INTEGER;
    case JSON_REAL:
        return SXV_T_NUMBER |
               ((int_strict ? int_literal(t, x) : sxv_num_is_integer(t, x)) ? SXV_T_INTEGER : 0);
    case JSON_TRUE:
    case JSON_FALSE: return SXV_T_BOOLEAN;
    default: return SXV_T_NULL;
    }
}

static void types_str(unsigned t, char *out, size_t cap)
{
    static const char *const names[] = {"null",   "boolean", "object",
                                        "array",  "number",  "string",
                                        "integer"};
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < 7; i++) {
        if (!(t & (1u << i)))
            continue;
        int w = snprintf(out + len, cap - len, "%s%s", len ? " or " : "",
                         names[i]);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
}

static int check_basic(sxv_ctx *c, const sxv_node *n, const json_t *x)
{
    if (n->types && !(n->types & inst_types(c->nums, x, n->int_strict))) {
        char want[80];
        types_str(n->types, want, sizeof want);
        return sxv_fail(c, n, "type", "expected %s, got %s", want,
                        json_is_real(x) && n->int_strict ? "number"
                                                         : sxv_type_name(c->nums, x));
    }
    if (n->enum_) {
        size_t k = json_array_size(n->enum_);
        size_t i;
        for (i = 0; i < k; i++)
            if (sxv_json_equal(c->nums, json_array_get(n->enum_, i), x))
                break;
        if (i == k)
            return sxv_fail(c, n, "enum", "value is not one of the %zu "
                                          "allowed values", k);
    }
    if (n->const_ && !sxv_json_equal(c->nums, n->const_, x))
        return sxv_fail(c, n, "const", "value differs from the constant");
    return SXV_VALID;
}

/* ---- references ---------------------------------------------------------------------- */

static int eval_ref(sxv_ctx *c, const sxv_node *n, const sxv_node *target,
                    const json_t *x, sxv_ann *a, const char *kw)
{
    /* Re-entering the same reference on the same instance, with nothing
     * consumed in between, would repeat forever.  Frames for the current
     * instance sit on top of the stack, since evaluation only descends. */
    for (size_t i = c->nrefs; i-- > 0 && c->refs[i].inst == x;)
        if (c->refs[i].node == n)
            return sxv_hard(c, SX_ELIMIT,
                            "%s at %s loops without consuming input", kw,
                            n->ptr[0] ? n->ptr : "the root");
    if (c->nrefs > c->v->max_depth)
        return sxv_hard(c, SX_ELIMIT, "references nested too deeply");
    c->refs[c->nrefs].node = n;
    c->refs[c->nrefs].inst = x;
    c->nrefs++;
    int r = sxv_eval(c, target, x, a);
    c->nrefs--;
    return r;
}

static const sxv_node *dynamic_target(const sxv_ctx *c, const sxv_node *n)
{
    if (!n->dyn_name)
        return n->dynref;
    /* the outermost resource in scope with a matching $dynamicAnchor */
    for (size_t i = 0; i < c->nscope; i++)
        for (const sxv_anchor *a = c->scope[i]->anchors; a; a = a->next)
            if (a->dynamic && a->node && !strcmp(a->name, n->dyn_name))
                return a->node;
    return n->dynref;
}

/* ---- in-place applicators -------------------------------------------------------------- */

static int applicators(sxv_ctx *c, const sxv_node *n, const json_t *x,
                       sxv_ann *a)
{
    int r;
    for (size_t i = 0; i < n->nall_of; i++)
        if ((r = sxv_eval(c, n->all_of[i], x, a)) != SXV_VALID)
            return r;
    if (n->nany_of) {
        int any = 0;
        c->quiet++;
        for (size_t i = 0; i < n->nany_of; i++) {
            r = eval_branch(c, n->any_of[i], x, a);
            if (r == SXV_ERROR) {
                c->quiet--;
                return r;
            }
            if (r == SXV_VALID) {
                any = 1;
                if (!a)
                    break; /* the rest only matter for annotations */
            }
        }
        c->quiet--;
        if (!any)
            return sxv_fail(c, n, "anyOf", "no subschema matched");
    }
    if (n->none_of) {
        size_t hits = 0, first = 0, second = 0;
        sxv_ann keep = {0};
        c->quiet++;
        for (size_t i = 0; i < n->none_of && hits < 2; i++) {
            sxv_ann t = {0};
            if (a && sxv_ann_init(c, &t, a->n)) {
                c->quiet--;
                sxv_ann_free(&keep);
                return SXV_ERROR;
            }
            r = sxv_eval(c, n->one_of[i], x, a ? &t : NULL);
            if (r == SXV_ERROR) {
                c->quiet--;
                sxv_ann_free(&t);
                sxv_ann_free(&keep);
                return r;
            }
            if (r == SXV_VALID) {
                if (hits++ == 0) {
                    first = i;
                    keep = t;
                    t.seen = NULL;
                } else {
                    second = i;
                }
            }
            sxv_ann_free(&t);
        }
        c->quiet--;
        if (hits == 1 && a)
            sxv_ann_merge(a, &keep);
        sxv_ann_free(&keep);
        if (hits == 0)
            return sxv_fail(c, n, "oneOf", "no subschema matched");
        if (hits > 1)
            return sxv_fail(c, n, "oneOf",
                            "subschemas %zu and %zu both matched", first,
                            second);
    }
    if (n->not_) {
        c->quiet++;
        r = sxv_eval(c, n->not_, x, NULL);
        c->quiet--;
        if (r == SXV_ERROR)
            return r;
        if (r == SXV_VALID)
            return sxv_fail(c, n, "not",
                            "value matches the schema it must not match");
    }
    if (n->if_) {
        c->quiet++;
        r = eval_branch(c, n->if_, x, a);
        c->quiet--;
        if (r == SXV_ERROR)
            return r;
        const sxv_node *next = r == SXV_VALID ? n->then_ : n->else_;
        if (next && (r = sxv_eval(c, next, x, a)) != SXV_VALID)
            return r;
    }
    return SXV_VALID;
}

/* ---- the dispatcher ----------------------------------------------------------------------- */

static int eval_body(sxv_ctx *c, const sxv_node *n, const json_t *x,
                     sxv_ann *a)
{
    int r = check_basic(c, n, x);
    if (r != SXV_VALID)
        return r;
    if (n->ref && (r = eval_ref(c, n, n->ref, x, a, "$ref")) != SXV_VALID)
        return r;
    if (n->dynref &&
        (r = eval_ref(c, n, dynamic_target(c, n), x, a, "$dynamicRef")) !=
            SXV_VALID)
        return r;
    if (json_is_number(x) || json_is_string(x)) {
        if ((r = sxv_kw_scalar(c, n, x)) != SXV_VALID)
            return r;
    } else if (json_is_array(x)) {
        if ((r = sxv_kw_array(c, n, x, a)) != SXV_VALID)
            return r;
    } else if (json_is_object(x)) {
        if ((r = sxv_kw_object(c, n, x, a)) != SXV_VALID)
            return r;
    }
    if ((r = applicators(c, n, x, a)) != SXV_VALID)
        return r;
    if (json_is_array(x) && n->uneval_items)
        return sxv_kw_array_uneval(c, n, x, a);
    if (json_is_object(x) && n->uneval_props)
        return sxv_kw_object_uneval(c, n, x, a);
    return SXV_VALID;
}

int sxv_eval(sxv_ctx *c, const sxv_node *n, const json_t *x, sxv_ann *ann)
{
    if (n->boolean == 1)
        return SXV_VALID;
    if (n->boolean == 0)
        return sxv_fail(c, n, NULL, "no value is valid here");
    if (c->depth >= c->v->max_depth)
        return sxv_hard(c, SX_ELIMIT, "evaluation nested deeper than %u",
                        c->v->max_depth);
    c->depth++;
    int pushed = 0;
    if (!c->nscope || c->scope[c->nscope - 1] != n->res) {
        c->scope[c->nscope++] = n->res;
        pushed = 1;
    }
    /* unevaluated* sees only the annotations of this schema's own
     * subschemas, so it starts a fresh set, passed up when valid */
    sxv_ann own = {0}, *a = ann;
    int r = SXV_VALID;
    if (n->need_ann && (json_is_array(x) || json_is_object(x))) {
        if (sxv_ann_init(c, &own, container_size(x)))
            r = SXV_ERROR;
        a = &own;
    }
    if (r == SXV_VALID)
        r = eval_body(c, n, x, a);
    if (r == SXV_VALID && a == &own && ann)
        sxv_ann_merge(ann, &own);
    sxv_ann_free(&own);
    if (pushed)
        c->nscope--;
    c->depth--;
    return r;
}
