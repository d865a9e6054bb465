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

#include "grammar/gr_compile_internal.h"

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

int gc_rewrite_if(gc_ctx *c, const json_t *s, json_t **out)
{
    const json_t *f = json_object_get(s, "if");
    *out = NULL;
    if (!f)
        return SX_OK;
    if (!json_is_object(f) && !json_is_boolean(f))
        return gc_invalid(c, "if", "must be a schema");
    const json_t *th = json_object_get(s, "then"), *el = json_object_get(s, "else");
    json_t *neg = negation(f);
    json_t *r = json_deep_copy(s);
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
