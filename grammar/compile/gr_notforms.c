/* `not` of key-name tests, written as the positive conditions they are.
 *
 *   not {propertyNames: false}              some key exists: minProperties 1
 *   not {propertyNames: {not: {const: k}}}  some key is k: required [k]
 *   not {propertyNames: {not: {enum: K}}}   some key is in K: anyOf of required [k]
 *   not {not: A}                            A
 *   not {items: S}                          an array that contains {not: S}
 *   not {contains: S}                       an array whose items are {not: S}
 *   not {anyOf: [A, B]}                     allOf [not A, not B]
 *   not {allOf: [A, B]}                     anyOf [not A, not B]
 *
 * Non-objects satisfy every propertyNames, so they fail its negation: each
 * positive form carries type object.  Members of anyOf/allOf that are none
 * of these forms stay `not` members for the ordinary paths to judge; a
 * `not` with no such form inside is left alone. */
#include <string.h>

#include "grammar/compile/compile.h"
#include "grammar/compile/keywords.h"

#define MAX_NAMES 16

static const json_t *follow(gc_ctx *c, const json_t *s)
{
    for (int hops = 0; hops < 16 && json_is_object(s) && json_object_size(s) == 1 &&
                       json_is_string(json_object_get(s, "$ref"));
         hops++) {
        const json_t *t = gc_resolve_ref(c, json_string_value(json_object_get(s, "$ref")));
        if (!t)
            return s;
        s = t;
    }
    return s;
}

/* The one assertion keyword of s (others are annotations), or NULL. */
static const char *only_assertion(const json_t *s)
{
    const char *k, *only = NULL;
    json_t *v;
    if (!json_is_object(s))
        return NULL;
    json_object_foreach((json_t *)s, k, v) {
        if (!gc_is_assertion(k))
            continue;
        if (only)
            return NULL;
        only = k;
    }
    return only;
}

/* pn = {not: {const|enum of strings}} (perhaps with type string): the
 * names it excludes, new array; NULL when pn is anything else. */
static json_t *excluded_names(gc_ctx *c, const json_t *pn)
{
    const char *k;
    json_t *v;
    if (!json_is_object(pn) || !json_object_get(pn, "not"))
        return NULL;
    json_object_foreach((json_t *)pn, k, v) {
        gc_kw id = gc_kw_id(k);
        if (!(gc_kw_flags(id) & GK_ASSERTION) || id == GK_NOT)
            continue;
        if (id != GK_TYPE || !json_is_string(v) || strcmp(json_string_value(v), "string"))
            return NULL;
    }
    const json_t *nt = follow(c, json_object_get(pn, "not"));
    const json_t *cn = json_is_object(nt) ? json_object_get(nt, "const") : NULL;
    const json_t *en = json_is_object(nt) ? json_object_get(nt, "enum") : NULL;
    json_object_foreach((json_t *)nt, k, v) {
        gc_kw id = gc_kw_id(k);
        if (!(gc_kw_flags(id) & GK_ASSERTION) || id == GK_CONST || id == GK_ENUM)
            continue;
        if (id != GK_TYPE || !json_is_string(v) || strcmp(json_string_value(v), "string"))
            return NULL;
    }
    if ((cn && en) || (!cn && !en) || (en && !json_is_array(en)))
        return NULL;
    json_t *names = json_array();
    if (!names)
        return NULL;
    if (cn) {
        json_array_append(names, (json_t *)cn);
    } else {
        json_array_extend(names, (json_t *)en);
    }
    size_t i;
    json_t *x;
    json_array_foreach(names, i, x)
        if (!json_is_string(x) || json_array_size(names) > MAX_NAMES) {
            json_decref(names);
            return NULL;
        }
    return names;
}

static json_t *negate(gc_ctx *c, const json_t *nt, int depth);

/* 1 if an unevaluatedProperties/Items keyword may occur anywhere in the
 * document (looked for once per compile). */
static int mentions_unevaluated(gc_ctx *c)
{
    if (!c->root_uneval)
        c->root_uneval = gc_has_key_prefix(c->root_schema, "unevaluated") ? 2 : 1;
    return c->root_uneval == 2;
}

/* anyOf/allOf members negated one by one ({not: m} for the others);
 * NULL unless at least one member is a form of this file. */
static json_t *negate_members(gc_ctx *c, const json_t *members, const char *kw, int depth)
{
    if (!json_is_array(members) || json_array_size(members) == 0)
        return NULL;
    json_t *out = json_array();
    int any = 0;
    size_t i;
    json_t *m;
    json_array_foreach((json_t *)members, i, m) {
        json_t *n = negate(c, m, depth + 1);
        any |= n != NULL;
        if (!n)
            n = json_pack("{s:O}", "not", m);
        if (!n || json_array_append_new(out, n)) {
            json_decref(out);
            return NULL;
        }
    }
    if (!any) {
        json_decref(out);
        return NULL;
    }
    return json_pack("{s:o}", kw, out);
}

/* The positive schema for `not nt`, new; NULL when nt is not a form
 * handled here. */
static json_t *negate(gc_ctx *c, const json_t *nt, int depth)
{
    nt = follow(c, nt);
    const char *only = only_assertion(nt);
    if (depth > 8 || !only)
        return NULL;
    const json_t *v = json_object_get(nt, only);
    gc_kw id = gc_kw_id(only);
    if (id == GK_NOT) {
        /* `not` drops the annotations of what it holds, A does not: the
         * same only where no unevaluated* keyword could see them */
        if (mentions_unevaluated(c))
            return NULL;
        const json_t *t = follow(c, v);
        return json_is_object(t) || json_is_boolean(t) ? gc_copy(t) : NULL;
    }
    if (id == GK_ITEMS || id == GK_CONTAINS) {
        /* not {items: S}: an array with an item that fails S; not
         * {contains: S}: an array whose items all fail S (non-arrays pass
         * both, so fail their negation); the new keywords evaluate items
         * where `not` did not */
        if ((!json_is_object(v) && !json_is_boolean(v)) ||
            mentions_unevaluated(c))
            return NULL;
        return json_pack("{s:s,s:{s:O}}", "type", "array",
                         gc_kw_name(id == GK_ITEMS ? GK_CONTAINS : GK_ITEMS), "not", v);
    }
    if (id == GK_ANY_OF)
        return negate_members(c, v, gc_kw_name(GK_ALL_OF), depth);
    if (id == GK_ALL_OF)
        return negate_members(c, v, gc_kw_name(GK_ANY_OF), depth);
    if (id != GK_PROPERTY_NAMES)
        return NULL;
    v = follow(c, v);
    if (json_is_false(v))
        return json_pack("{s:s,s:i}", "type", "object", "minProperties", 1);
    json_t *names = excluded_names(c, v);
    if (!names)
        return NULL;
    if (json_array_size(names) == 0) {
        json_decref(names); /* no name is excluded: every object passes */
        return json_pack("{s:b}", "not", 1);
    }
    if (json_array_size(names) == 1)
        return json_pack("{s:s,s:o}", "type", "object", "required", names);
    json_t *alts = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(names, i, x)
        if (json_array_append_new(alts, json_pack("{s:[O]}", "required", x))) {
            json_decref(alts); /* out of memory: not a form, then */
            alts = NULL;
            break;
        }
    json_decref(names);
    return json_pack("{s:s,s:o}", "type", "object", "anyOf", alts);
}

int gc_rewrite_not_forms(gc_ctx *c, const json_t *s, json_t **out)
{
    *out = NULL;
    const json_t *nt = json_is_object(s) ? json_object_get(s, "not") : NULL;
    if (!nt)
        return SX_OK;
    json_t *pos = negate(c, nt, 0);
    if (!pos)
        return SX_OK;
    json_t *r = gc_copy(s);
    if (!r) {
        json_decref(pos);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    json_object_del(r, "not");
    int added = gc_add_allof(r, pos);
    if (added) {
        json_decref(r);
        /* added > 0: an invalid allOf, which the ordinary path names */
        return added < 0 ? sx_err_set(c->err, SX_ENOMEM, "out of memory") : SX_OK;
    }
    *out = r;
    return SX_OK;
}
