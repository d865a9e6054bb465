/* if/then/else as alternatives: a value satisfies it when it satisfies
 * `if` and `then`, or the negation of `if` and `else`.  The negation is
 * written in forms the compiler enforces exactly: `not` of a type or
 * required list is compiled as such, and a test of property values
 * ({properties: {k: P}, required: [...]}) is negated key by key -- some
 * tested key present with a value outside P, or a required one missing.
 * A `not P` on a property value is exact where the compiler can compile
 * it (a type, or values bounded by an enum elsewhere); anything else stays
 * a compile error naming the keyword. */
#include <string.h>

#include "grammar/compile/compile.h"

/* Only these assertion keywords, and at least one of them. */
static int only_keywords(const json_t *s, const char *const *allowed)
{
    const char *k;
    json_t *v;
    int n = 0;
    json_object_foreach((json_t *)s, k, v) {
        if (!gc_is_assertion(k))
            continue;
        int ok = 0;
        for (int i = 0; allowed[i]; i++)
            ok |= !strcmp(k, allowed[i]);
        if (!ok)
            return 0;
        n++;
    }
    return n > 0;
}

/* The negation of schema f, as a new schema. */
static json_t *negation(const json_t *f)
{
    static const char *const keyed[] = {"properties", "required", "type", NULL};
    if (json_is_boolean(f))
        return json_boolean(!json_is_true(f));
    if (!json_is_object(f))
        return NULL;
    const json_t *props = json_object_get(f, "properties");
    const json_t *req = json_object_get(f, "required");
    const json_t *ty = json_object_get(f, "type");
    int obj_type = json_is_string(ty) && !strcmp(json_string_value(ty), "object");
    if (!only_keywords(f, keyed) || (!props && !req) || (ty && !obj_type) ||
        (props && !json_is_object(props)) || (req && !json_is_array(req)))
        return json_pack("{s:O}", "not", f);
    /* objects failing some key test; non-objects fail only `type` */
    json_t *alts = json_array();
    const char *k;
    json_t *v;
    size_t i;
    if (!alts)
        return NULL;
    if (obj_type)
        json_array_append_new(alts, json_pack("{s:[sssss]}", "type", "null", "boolean",
                                              "number", "string", "array"));
    json_object_foreach((json_t *)props, k, v) {
        if (json_is_true(v) || (json_is_object(v) && json_object_size(v) == 0))
            continue; /* every value passes */
        json_array_append_new(alts, json_pack("{s:s,s:[s],s:{s:{s:O}}}", "type", "object",
                                              "required", k, "properties", k, "not", v));
    }
    json_array_foreach((json_t *)req, i, v)
        if (json_is_string(v))
            json_array_append_new(alts, json_pack("{s:s,s:{s:b}}", "type", "object",
                                                  "properties", json_string_value(v), 0));
    if (json_array_size(alts) == 0) {
        json_decref(alts);
        return json_false(); /* the test passes for every value */
    }
    return json_pack("{s:o}", "anyOf", alts);
}

/* unevaluatedProperties/Items that are not `true`. */
static int has_uneval(const json_t *s);

/* `not` of a property test, of anyOf (all of the negations), of a $ref
 * (its target): written as one more allOf member with the negation pushed
 * down, so that `not` itself is left only in the forms plain schemas take
 * (type, required, listed values, string patterns). */
int gc_rewrite_not(gc_ctx *c, const json_t *s, const json_t *parent, json_t **out)
{
    const json_t *nt = json_object_get(s, "not");
    *out = NULL;
    if (!json_is_object(nt))
        return SX_OK;
    static const char *const ref_only[] = {"$ref", NULL};
    for (int hops = 0; hops < 16 && only_keywords(nt, ref_only); hops++) {
        const json_t *ref = json_object_get(nt, "$ref");
        const json_t *t = json_is_string(ref) ? gc_resolve_ref(c, json_string_value(ref)) : NULL;
        if (!t || !json_is_object(t))
            return SX_OK; /* left to the ordinary path (and its errors) */
        nt = t;
    }
    static const char *const any_only[] = {"anyOf", NULL};
    json_t *neg;
    if (only_keywords(nt, any_only) && json_is_array(json_object_get(nt, "anyOf"))) {
        /* not (a or b) is (not a) and (not b) */
        json_t *parts = json_array();
        size_t i;
        json_t *b;
        int pushed = 1;
        json_array_foreach(json_object_get(nt, "anyOf"), i, b) {
            json_t *nb = negation(b);
            /* every branch must push down, or merging the nots back into
             * one `not` would undo this */
            pushed &= nb && (json_object_get(nb, "anyOf") || json_is_boolean(nb));
            json_array_append_new(parts, nb);
        }
        if (!pushed) {
            json_decref(parts);
            return SX_OK;
        }
        neg = json_pack("{s:o}", "allOf", parts);
    } else {
        /* not {required} (with nothing tested of the values) is compiled
         * as it is, a condition on the keys */
        static const char *const req_only[] = {"required", "properties", NULL};
        const json_t *props = json_object_get(nt, "properties");
        int trivial = only_keywords(nt, req_only) && json_object_get(nt, "required");
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)props, k, v)
            trivial &= json_is_true(v) || (json_is_object(v) && json_object_size(v) == 0);
        if (trivial) {
            if (!props)
                return SX_OK;
            json_t *r = gc_copy(s);
            if (!r || json_object_set_new(r, "not", json_pack("{s:O}", "required",
                                                              json_object_get(nt, "required")))) {
                json_decref(r);
                return sx_err_set(c->err, SX_ENOMEM, "out of memory");
            }
            *out = r;
            return SX_OK;
        }
        neg = negation(nt);
        if (neg && !json_object_get(neg, "anyOf") && !json_is_boolean(neg)) {
            json_decref(neg); /* not pushed down: stays as it is */
            return SX_OK;
        }
    }
    if (!neg)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if (has_uneval(s) || (parent && has_uneval(parent))) {
        json_decref(neg);
        return gc_unsupported(c, "not", "a property test together with unevaluatedProperties");
    }
    json_t *r = gc_copy(s);
    json_t *all = r ? json_object_get(r, "allOf") : NULL;
    if (!r || (all && !json_is_array(all))) {
        json_decref(neg);
        json_decref(r);
        return r ? gc_invalid(c, "allOf", "must be an array")
                 : sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    json_object_del(r, "not");
    if (!all) {
        all = json_array();
        json_object_set_new(r, "allOf", all);
    }
    if (!all || json_array_append_new(all, neg)) {
        json_decref(r);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    *out = r;
    return SX_OK;
}

static int has_uneval(const json_t *s)
{
    const json_t *up = json_object_get(s, "unevaluatedProperties");
    const json_t *ui = json_object_get(s, "unevaluatedItems");
    return (up && !json_is_true(up)) || (ui && !json_is_true(ui));
}

int gc_rewrite_if(gc_ctx *c, const json_t *s, const json_t *parent, json_t **out)
{
    const json_t *f = json_object_get(s, "if");
    *out = NULL;
    if (!f || c->no_if)
        return SX_OK;
    if (!json_is_object(f) && !json_is_boolean(f))
        return gc_invalid(c, "if", "must be a schema");
    const json_t *th = json_object_get(s, "then"), *el = json_object_get(s, "else");
    json_t *neg = negation(f);
    /* the negation tests keys through `properties`, which unevaluated*
     * would count as evaluated although a failed `if` evaluates nothing */
    if (neg && json_object_get(neg, "anyOf") && (has_uneval(s) || (parent && has_uneval(parent)))) {
        json_decref(neg);
        return gc_unsupported(c, "if", "a property test together with unevaluatedProperties");
    }
    json_t *r = gc_copy(s);
    json_t *all = r ? json_object_get(r, "allOf") : NULL;
    if (!neg || !r || (all && !json_is_array(all))) {
        json_decref(neg);
        json_decref(r);
        return all ? gc_invalid(c, "allOf", "must be an array")
                   : sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    json_object_del(r, "if");
    json_object_del(r, "then");
    json_object_del(r, "else");
    json_t *yes = json_pack("{s:[O]}", "allOf", f), *no = json_pack("{s:[o]}", "allOf", neg);
    if (yes && th)
        json_array_append(json_object_get(yes, "allOf"), (json_t *)th);
    if (no && el)
        json_array_append(json_object_get(no, "allOf"), (json_t *)el);
    json_t *choice = (yes && no) ? json_pack("{s:[oo]}", "anyOf", yes, no) : NULL;
    if (!choice) {
        json_decref(yes);
        json_decref(no);
        json_decref(r);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    if (!all) {
        all = json_array();
        json_object_set_new(r, "allOf", all);
    }
    if (json_array_append_new(all, choice)) {
        json_decref(r);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    *out = r;
    return SX_OK;
}
