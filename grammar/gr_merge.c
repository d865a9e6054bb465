/* allOf by merging: the conjunction of two schema objects written as one
 * schema object, keyword by keyword, where that is exact.  Where it is not
 * (two different patterns, combinators on both sides) the merge fails and
 * names the keyword, so the compile error is honest. */
#include <math.h>
#include <string.h>

#include "grammar/gr_compile_internal.h"

static int type_mask(const json_t *t)
{
    static const char *const names[] = {"null", "boolean", "integer", "number",
                                        "string", "object", "array"};
    int m = 0;
    if (!t)
        return 127;
    for (size_t i = 0; i < (json_is_array(t) ? json_array_size(t) : 1); i++) {
        const json_t *e = json_is_array(t) ? json_array_get(t, i) : t;
        for (int k = 0; k < 7; k++)
            if (json_is_string(e) && !strcmp(json_string_value(e), names[k]))
                m |= 1 << k;
    }
    if (m & 8)
        m |= 4; /* number admits integers */
    return m;
}

static json_t *type_json(int m)
{
    static const char *const names[] = {"null", "boolean", "integer", "number",
                                        "string", "object", "array"};
    json_t *a = json_array();
    if ((m & 8) && (m & 4))
        m &= ~4;
    for (int k = 0; k < 7; k++)
        if (m & (1 << k))
            json_array_append_new(a, json_string(names[k]));
    return a;
}

/* {"allOf": [a, b]} as a new value; boolean true members drop out. */
static json_t *all_of(const json_t *a, const json_t *b)
{
    if (!a || json_is_true(a))
        return json_deep_copy(b);
    if (!b || json_is_true(b))
        return json_deep_copy(a);
    if (json_is_false(a) || json_is_false(b))
        return json_false();
    if (json_equal((json_t *)a, (json_t *)b))
        return json_deep_copy(a);
    return json_pack("{s:[OO]}", "allOf", a, b);
}

static int merge_properties(gc_ctx *c, json_t *dst, const json_t *src)
{
    json_t *dp = json_object_get(dst, "properties"), *sp = json_object_get(src, "properties");
    const json_t *da = json_object_get(dst, "additionalProperties");
    const json_t *sa = json_object_get(src, "additionalProperties");
    if (json_object_get(dst, "patternProperties") || json_object_get(src, "patternProperties"))
        return gc_unsupported(c, "patternProperties", "inside allOf");
    json_t *out = json_object();
    const char *k;
    json_t *v;
    if (dp)
        json_object_foreach(dp, k, v) {
            const json_t *other = sp ? json_object_get(sp, k) : NULL;
            json_object_set_new(out, k, all_of(v, other ? other : sa));
        }
    if (sp)
        json_object_foreach((json_t *)sp, k, v)
            if (!dp || !json_object_get(dp, k))
                json_object_set_new(out, k, all_of(da, v));
    if (json_object_size(out))
        json_object_set_new(dst, "properties", out);
    else
        json_decref(out);
    if (da || sa)
        json_object_set_new(dst, "additionalProperties", all_of(da, sa));
    return SX_OK;
}

static int merge_bound(json_t *dst, const char *k, const json_t *sv, int lower)
{
    const json_t *dv = json_object_get(dst, k);
    if (!dv) {
        json_object_set(dst, k, (json_t *)sv);
        return SX_OK;
    }
    double a = json_number_value(dv), b = json_number_value(sv);
    if (lower ? b > a : b < a)
        json_object_set(dst, k, (json_t *)sv);
    return SX_OK;
}

int gc_merge(gc_ctx *c, json_t *dst, const json_t *src)
{
    static const char *const lower[] = {"minimum", "exclusiveMinimum", "minLength", "minItems",
                                        "minProperties", NULL};
    static const char *const upper[] = {"maximum", "exclusiveMaximum", "maxLength", "maxItems",
                                        "maxProperties", NULL};
    if (!json_is_object(src))
        return gc_invalid(c, NULL, "allOf member must be a schema object");
    const char *k;
    json_t *sv;
    int did_props = 0;
    json_object_foreach((json_t *)src, k, sv) {
        json_t *dv = json_object_get(dst, k);
        int is_lower = 0, is_upper = 0;
        for (int i = 0; lower[i]; i++)
            is_lower |= !strcmp(k, lower[i]);
        for (int i = 0; upper[i]; i++)
            is_upper |= !strcmp(k, upper[i]);
        if (!strcmp(k, "$defs") || !strcmp(k, "definitions") || !strcmp(k, "title") ||
            !strcmp(k, "description") || !strcmp(k, "$schema") || !strcmp(k, "$id") ||
            !strcmp(k, "default") || !strcmp(k, "examples") || !strcmp(k, "$comment"))
            continue;
        if ((is_lower || is_upper) && json_is_number(sv) && (!dv || json_is_number(dv))) {
            merge_bound(dst, k, sv, is_lower);
            continue;
        }
        if (!strcmp(k, "properties") || !strcmp(k, "additionalProperties") ||
            !strcmp(k, "patternProperties")) {
            if (!did_props) {
                int rc = merge_properties(c, dst, src);
                if (rc)
                    return rc;
                did_props = 1;
            }
            continue;
        }
        if (!dv) {
            json_object_set(dst, k, sv);
            continue;
        }
        if (json_equal(dv, sv))
            continue;
        if (!strcmp(k, "type")) {
            json_object_set_new(dst, "type", type_json(type_mask(dv) & type_mask(sv)));
        } else if (!strcmp(k, "required")) {
            size_t i;
            json_t *e;
            json_array_foreach(sv, i, e) {
                int have = 0;
                size_t j;
                json_t *f;
                json_array_foreach(dv, j, f)
                    have |= json_equal(e, f);
                if (!have)
                    json_array_append(dv, e);
            }
        } else if (!strcmp(k, "enum") || !strcmp(k, "const")) {
            /* handled below together */
            continue;
        } else if (!strcmp(k, "items") && json_is_object(sv) && json_is_object(dv)) {
            json_object_set_new(dst, "items", all_of(dv, sv));
        } else if (!strcmp(k, "uniqueItems")) {
            json_object_set(dst, k, json_is_true(dv) ? dv : sv);
        } else {
            return gc_unsupported(c, k, "two different values inside allOf");
        }
    }
    /* enum/const: the intersection of the admitted values */
    const json_t *se = json_object_get(src, "enum"), *sc = json_object_get(src, "const");
    if (se || sc) {
        json_t *mine = json_array(), *theirs = json_array();
        const json_t *de = json_object_get(dst, "enum"), *dc = json_object_get(dst, "const");
        int dst_has = de || dc;
        if (dc)
            json_array_append(mine, (json_t *)dc);
        else if (json_is_array(de))
            json_array_extend(mine, (json_t *)de);
        if (sc)
            json_array_append(theirs, (json_t *)sc);
        else if (json_is_array(se))
            json_array_extend(theirs, (json_t *)se);
        json_t *res = json_array();
        size_t i, j;
        json_t *a, *b;
        json_array_foreach(dst_has ? mine : theirs, i, a) {
            int keep = !dst_has;
            json_array_foreach(theirs, j, b)
                keep |= json_equal(a, b);
            if (keep)
                json_array_append(res, a);
        }
        json_object_del(dst, "const");
        json_object_set_new(dst, "enum", res);
        json_decref(mine);
        json_decref(theirs);
    }
    return SX_OK;
}
