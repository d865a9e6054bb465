/* allOf by merging: the conjunction of two schema objects written as one
 * schema object, keyword by keyword, where that is exact.  Where it is not
 * (two different patterns, combinators on both sides) the merge fails and
 * names the keyword, so the compile error is honest. */
#include <math.h>
#include <string.h>

#include "grammar/compile/compile.h"
#include "grammar/compile/keywords.h"
#include "grammar/regex/regex.h"

static int merge_local(gc_ctx *c, json_t *dst, const json_t *src);

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

int gc_value_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        if (json_is_integer(b)) {
            const json_t *t = a;
            a = b;
            b = t;
        }
        if (json_is_integer(a)) { /* a integer, b real: exactly the same number? */
            double r = json_real_value(b);
            return r >= -9.2e18 && r <= 9.2e18 && r == floor(r) &&
                   (json_int_t)r == json_integer_value(a);
        }
        return json_real_value(a) == json_real_value(b);
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!gc_value_equal(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_object_foreach((json_t *)a, k, v) {
            const json_t *w = json_object_get(b, k);
            if (!w || !gc_value_equal(v, w))
                return 0;
        }
        return 1;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* A copy of v whose objects and arrays are new, free to change, and whose
 * scalars are shared (the compiler never changes a scalar in place), keys
 * in their order.  json_deep_copy copies every scalar too and checks each
 * container for loops (a formatted address in a hash table per object),
 * which made copying most of the time of compiles that merge and branch
 * much.  NULL when v is NULL or out of memory. */
json_t *gc_copy(const json_t *v)
{
    if (json_is_object(v)) {
        json_t *o = json_object(), *x;
        const char *k;
        size_t kl;
        if (!o)
            return NULL;
        json_object_keylen_foreach((json_t *)v, k, kl, x) {
            json_t *cx = gc_copy(x);
            if (!cx || json_object_setn_new_nocheck(o, k, kl, cx)) {
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array(), *x;
        size_t i;
        if (!a)
            return NULL;
        json_array_foreach((json_t *)v, i, x) {
            json_t *cx = gc_copy(x);
            if (!cx || json_array_append_new(a, cx)) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    return json_incref((json_t *)v);
}

int gc_add_allof(json_t *s, json_t *m)
{
    json_t *all = json_object_get(s, "allOf");
    if (all && !json_is_array(all)) {
        json_decref(m);
        return 1;
    }
    if (all)
        return json_array_append_new(all, m) ? -1 : 0;
    return json_object_set_new(s, "allOf", json_pack("[o]", m)) ? -1 : 0;
}

/* {"allOf": [a, b]} as a new value; boolean true members drop out. */
static json_t *all_of(const json_t *a, const json_t *b)
{
    if (!a || json_is_true(a))
        return gc_copy(b);
    if (!b || json_is_true(b))
        return gc_copy(a);
    if (json_is_false(a) || json_is_false(b))
        return json_false();
    if (json_equal((json_t *)a, (json_t *)b))
        return gc_copy(a);
    return json_pack("{s:[OO]}", "allOf", a, b);
}

/* 1 if key k matches one of the patterns of map pp (an object or NULL);
 * -1 if a pattern cannot be compiled. */
static int key_matches(const json_t *pp, const char *k)
{
    const char *pk;
    json_t *pv;
    if (!json_is_object(pp))
        return 0;
    json_object_foreach((json_t *)pp, pk, pv) {
        sx_re *re;
        if (sx_re_compile(pk, strlen(pk), SX_RE_SEARCH, NULL, &re, NULL))
            return -1;
        int m = sx_re_matches(re, k, strlen(k));
        sx_re_free(re);
        if (m)
            return 1;
    }
    return 0;
}

/* What one side asks of the value of key k beyond its patterns (which
 * the merged node applies to every key they match): its own property
 * schema, else its additionalProperties when no pattern of it matches. */
static int side_rest(const json_t *props, const json_t *pp, const json_t *addl, const char *k,
                     const json_t **out)
{
    const json_t *v = json_is_object(props) ? json_object_get(props, k) : NULL;
    if (v) {
        *out = v;
        return 0;
    }
    int m = addl ? key_matches(pp, k) : 0;
    if (m < 0)
        return -1;
    *out = m ? NULL : addl;
    return 0;
}

static int is_open(const json_t *a)
{
    return !a || json_is_true(a);
}

static int merge_properties(gc_ctx *c, json_t *dst, const json_t *src)
{
    json_t *dp = json_object_get(dst, "properties"), *sp = json_object_get(src, "properties");
    const json_t *da = json_object_get(dst, "additionalProperties");
    const json_t *sa = json_object_get(src, "additionalProperties");
    const json_t *dpp = json_object_get(dst, "patternProperties");
    const json_t *spp = json_object_get(src, "patternProperties");
    if (dpp && json_is_object(dpp) && json_object_size(dpp) == 0)
        dpp = NULL;
    if (spp && json_is_object(spp) && json_object_size(spp) == 0)
        spp = NULL;
    if ((dpp && !json_is_object(dpp)) || (spp && !json_is_object(spp)))
        return gc_invalid(c, "patternProperties", "must be an object");
    /* a key one side's patterns match but the other's do not falls to the
     * other side's additionalProperties, which the merged node would not
     * apply: exact only while that is open */
    if ((dpp && !is_open(sa)) || (spp && !is_open(da)))
        return gc_unsupported(c, "patternProperties",
                              "inside allOf together with additionalProperties");
    json_t *pm = NULL;
    if (spp) {
        pm = dpp ? gc_copy(dpp) : json_object();
        const char *pk;
        json_t *pv;
        json_object_foreach((json_t *)spp, pk, pv)
            json_object_set_new(pm, pk, all_of(json_object_get(pm, pk), pv));
    }
    json_t *out = json_object();
    const char *k;
    json_t *v;
    int bad = 0;
    if (dp)
        json_object_foreach(dp, k, v) {
            const json_t *other = NULL;
            bad |= side_rest(sp, spp, sa, k, &other);
            json_object_set_new(out, k, all_of(v, other));
        }
    if (sp)
        json_object_foreach((json_t *)sp, k, v)
            if (!dp || !json_object_get(dp, k)) {
                const json_t *mine = NULL;
                bad |= side_rest(dp, dpp, da, k, &mine);
                json_object_set_new(out, k, all_of(mine, v));
            }
    if (bad) {
        json_decref(out);
        json_decref(pm);
        return gc_unsupported(c, "patternProperties", "a pattern that cannot be compiled");
    }
    if (pm)
        json_object_set_new(dst, "patternProperties", pm);
    if (json_object_size(out))
        json_object_set_new(dst, "properties", out);
    else
        json_decref(out);
    if (da || sa)
        json_object_set_new(dst, "additionalProperties", all_of(da, sa));
    return SX_OK;
}

/* Per-index constraints of an array schema: prefix (prefixItems, or the
 * draft-07 items array) and the schema for the rest (items, or
 * additionalItems with the array form; NULL = anything). */
static void array_parts(const json_t *s, const json_t **prefix, const json_t **rest,
                        int *draft7_form)
{
    const json_t *items = json_object_get(s, "items");
    *draft7_form = json_is_array(items);
    if (*draft7_form) {
        *prefix = items;
        *rest = json_object_get(s, "additionalItems");
    } else {
        *prefix = json_object_get(s, "prefixItems");
        *rest = items;
    }
}

/* allOf of two arrays' item rules, index by index: exact, since the item
 * at index i must satisfy both sides' rule for i. */
static int merge_items(gc_ctx *c, json_t *dst, const json_t *src)
{
    const json_t *dp, *dr, *sp, *sr;
    int d7, s7;
    array_parts(dst, &dp, &dr, &d7);
    array_parts(src, &sp, &sr, &s7);
    if (!sp && !sr)
        return SX_OK;
    size_t dn = json_is_array(dp) ? json_array_size(dp) : 0;
    size_t sn = json_is_array(sp) ? json_array_size(sp) : 0, n = dn > sn ? dn : sn;
    json_t *pre = json_array(), *rest = all_of(dr, sr);
    for (size_t i = 0; i < n; i++) {
        const json_t *a = i < dn ? json_array_get(dp, i) : dr;
        const json_t *b = i < sn ? json_array_get(sp, i) : sr;
        json_array_append_new(pre, a || b ? all_of(a, b) : json_true());
    }
    json_object_del(dst, "items");
    json_object_del(dst, "prefixItems");
    json_object_del(dst, "additionalItems");
    if (d7 || s7) {
        /* keep the draft-07 spelling the compiler reads for this schema */
        if (n)
            json_object_set_new(dst, "items", pre);
        else
            json_decref(pre);
        if (rest)
            json_object_set_new(dst, n ? "additionalItems" : "items", rest);
    } else {
        if (n)
            json_object_set_new(dst, "prefixItems", pre);
        else
            json_decref(pre);
        if (rest)
            json_object_set_new(dst, "items", rest);
    }
    (void)c;
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

/* A member's unevaluatedProperties/Items see only the member's own
 * keywords, not its siblings in the parent: written as additionalProperties
 * / items of the member they keep that meaning through the merge, which is
 * exact when the member has no applicators of its own. */
int gc_localise_unevaluated(gc_ctx *c, const json_t *src, json_t **out)
{
    const json_t *up = json_object_get(src, "unevaluatedProperties");
    const json_t *ui = json_object_get(src, "unevaluatedItems");
    *out = NULL;
    if ((!up || json_is_true(up)) && (!ui || json_is_true(ui)))
        return SX_OK;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v) {
        gc_kw id = gc_kw_id(k);
        /* draft-07's dependencies is let through here: its list form
         * applies no subschema */
        if ((gc_kw_flags(id) & GK_APPLICATOR) && id != GK_DEPENDENCIES)
            return gc_unsupported(c, "unevaluatedProperties",
                                  "inside a combined schema that has applicators of its own");
    }
    json_t *s = gc_copy(src);
    if (!s)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if (up && !json_is_true(up) && !json_object_get(s, "additionalProperties"))
        json_object_set(s, "additionalProperties", (json_t *)up);
    json_object_del(s, "unevaluatedProperties");
    if (ui && !json_is_true(ui)) {
        const json_t *items = json_object_get(s, "items");
        if (json_is_array(items) && !json_object_get(s, "additionalItems"))
            json_object_set(s, "additionalItems", (json_t *)ui);
        else if (!items)
            json_object_set(s, "items", (json_t *)ui);
    }
    json_object_del(s, "unevaluatedItems");
    *out = s;
    return SX_OK;
}

int gc_merge(gc_ctx *c, json_t *dst, const json_t *src_in)
{
    json_t *local = NULL;
    if (json_is_object(src_in)) {
        int lrc = gc_localise_unevaluated(c, src_in, &local);
        if (lrc)
            return lrc;
    }
    int rc = merge_local(c, dst, local ? local : src_in);
    json_decref(local);
    return rc;
}

/* Appends the alternatives of a `not` operand: the branches of a bare
 * anyOf, else the operand itself. */
static int not_branches(json_t *alts, const json_t *x)
{
    const json_t *any = json_is_object(x) ? json_object_get(x, "anyOf") : NULL;
    const char *k;
    json_t *v;
    if (json_is_array(any)) {
        json_object_foreach((json_t *)x, k, v)
            if (gc_kw_id(k) != GK_ANY_OF && gc_is_assertion(k))
                any = NULL;
    }
    if (json_is_array(any))
        return json_array_extend(alts, (json_t *)any);
    return json_array_append(alts, (json_t *)x);
}

/* contains of an allOf member: each constraint holds on its own, so dst
 * keeps a list of them; minContains/maxContains stay with their contains. */
static int merge_contains(gc_ctx *c, json_t *dst, const json_t *src)
{
    const json_t *sc_c = json_object_get(src, "contains");
    const json_t *more = json_object_get(src, GC_MORE_CONTAINS);
    if (sc_c || more) {
        json_t *list = json_object_get(dst, GC_MORE_CONTAINS);
        if (!list) {
            list = json_array();
            json_object_set_new(dst, GC_MORE_CONTAINS, list);
        }
        if (!list)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        if (sc_c) {
            json_t *e = json_pack("{s:O}", "contains", sc_c);
            const json_t *mn = json_object_get(src, "minContains");
            const json_t *mx = json_object_get(src, "maxContains");
            if (e && mn)
                json_object_set(e, "minContains", (json_t *)mn);
            if (e && mx)
                json_object_set(e, "maxContains", (json_t *)mx);
            if (!e || json_array_append_new(list, e))
                return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        }
        if (json_is_array(more))
            json_array_extend(list, (json_t *)more);
    }
    return SX_OK;
}

/* enum/const of an allOf member: dst keeps the intersection of the
 * admitted values (as an enum). */
static void merge_values(json_t *dst, const json_t *src)
{
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
                keep |= gc_value_equal(a, b);
            if (keep)
                json_array_append(res, a);
        }
        json_object_del(dst, "const");
        json_object_set_new(dst, "enum", res);
        json_decref(mine);
        json_decref(theirs);
    }
}

/* Two positive multipleOf values dv and sv of one allOf: the multiples of
 * both are the multiples of their least common multiple, written to dst. */
static int merge_multiple_of(gc_ctx *c, json_t *dst, const char *k, const json_t *dv,
                             const json_t *sv)
{
    if (json_is_integer(dv) && json_is_integer(sv)) {
        /* multiples of both integers are the multiples of their lcm */
        json_int_t a = json_integer_value(dv), b = json_integer_value(sv), x = a, y = b;
        while (y) {
            json_int_t t = x % y;
            x = y;
            y = t;
        }
        if (a / x > (json_int_t)1e15 / b)
            return gc_unsupported(c, k, "two different values inside allOf");
        json_object_set_new(dst, k, json_integer(a / x * b));
        return SX_OK;
    }
    /* decimal divisors: the lcm at their common scale */
    int64_t p1, p2;
    int e1, e2;
    if (gr_decimal(json_number_value(dv), &p1, &e1) ||
        gr_decimal(json_number_value(sv), &p2, &e2))
        return gc_unsupported(c, k, "two different values inside allOf");
    int K = -(e1 < e2 ? e1 : e2);
    if (K < 0)
        K = 0;
    __int128 a = p1, b = p2;
    for (int i = 0; i < K + e1; i++)
        a *= 10;
    for (int i = 0; i < K + e2; i++)
        b *= 10;
    __int128 x = a, y = b;
    while (y) {
        __int128 t = x % y;
        x = y;
        y = t;
    }
    __int128 l = a / x * b;
    if (K > 15 || l > (__int128)100000000000000LL)
        return gc_unsupported(c, k, "two different values inside allOf");
    double scale = 1;
    for (int i = 0; i < K; i++)
        scale *= 10;
    json_object_set_new(dst, k, K ? json_real((double)l / scale)
                                  : json_integer((json_int_t)l));
    return SX_OK;
}

static int merge_local(gc_ctx *c, json_t *dst, const json_t *src)
{
    if (!json_is_object(src))
        return gc_invalid(c, NULL, "allOf member must be a schema object");
    const char *k;
    json_t *sv;
    int did_props = 0, did_items = 0;
    json_object_foreach((json_t *)src, k, sv) {
        json_t *dv = json_object_get(dst, k);
        gc_kw id = gc_kw_id(k);
        unsigned fl = gc_kw_flags(id);
        if (!(fl & GK_ASSERTION))
            continue; /* annotations and unknown keywords: nothing to merge */
        if (id == GK_CONTAINS || id == GK_MIN_CONTAINS || id == GK_MAX_CONTAINS ||
            id == GK_MORE_CONTAINS)
            continue; /* kept together, below */
        if ((fl & (GK_LOWER | GK_UPPER)) && json_is_number(sv) && (!dv || json_is_number(dv))) {
            merge_bound(dst, k, sv, (fl & GK_LOWER) != 0);
            continue;
        }
        if (id == GK_ITEMS || id == GK_PREFIX_ITEMS || id == GK_ADDITIONAL_ITEMS) {
            if (!did_items) {
                int rc = merge_items(c, dst, src);
                if (rc)
                    return rc;
                did_items = 1;
            }
            continue;
        }
        if (id == GK_PROPERTIES || id == GK_ADDITIONAL_PROPERTIES ||
            id == GK_PATTERN_PROPERTIES) {
            if (!did_props) {
                int rc = merge_properties(c, dst, src);
                if (rc)
                    return rc;
                did_props = 1;
            }
            continue;
        }
        if (id == GK_ENUM || id == GK_CONST)
            continue; /* intersected below, against what dst had */
        if (!dv) {
            json_object_set(dst, k, sv);
            continue;
        }
        if (json_equal(dv, sv))
            continue;
        if (id == GK_TYPE) {
            json_object_set_new(dst, "type", type_json(type_mask(dv) & type_mask(sv)));
        } else if (id == GK_REQUIRED) {
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
        } else if (id == GK_UNIQUE_ITEMS) {
            json_object_set(dst, k, json_is_true(dv) ? dv : sv);
        } else if (id == GK_ANY_OF && json_is_array(dv) && json_is_array(sv) &&
                   json_array_size(dv) * json_array_size(sv) <= 64) {
            /* (a1 or a2) and (b1 or b2) is the or of every pair */
            json_t *alts = json_array();
            size_t i, j;
            json_t *a, *b;
            json_array_foreach(dv, i, a)
                json_array_foreach(sv, j, b)
                    json_array_append_new(alts, json_pack("{s:[OO]}", "allOf", a, b));
            if (!alts || json_array_size(alts) != json_array_size(dv) * json_array_size(sv)) {
                json_decref(alts);
                return sx_err_set(c->err, SX_ENOMEM, "out of memory");
            }
            json_object_set_new(dst, "anyOf", alts);
        } else if (id == GK_MULTIPLE_OF && json_is_number(dv) && json_is_number(sv) &&
                   json_number_value(dv) > 0 && json_number_value(sv) > 0) {
            int rc = merge_multiple_of(c, dst, k, dv, sv);
            if (rc)
                return rc;
        } else if ((id == GK_PATTERN && json_is_string(dv) && json_is_string(sv)) ||
                   (id == GK_MORE_PATTERNS && json_is_array(dv) && json_is_array(sv))) {
            /* a string matches both patterns: the others wait in a list
             * that string_node intersects */
            int rc = gc_more_patterns(c, dst, sv);
            if (rc)
                return rc;
        } else if (id == GK_PROPERTY_NAMES) {
            /* every name passes both (names_automaton intersects them);
             * one flat allOf however many members bring one, so that the
             * name schema does not nest a level deeper with each */
            json_t *dall = json_object_size(dv) == 1 ? json_object_get(dv, "allOf") : NULL;
            json_t *list = json_is_array(dall) ? json_copy(dall) : json_pack("[O]", dv);
            json_t *both = NULL;
            if (list && !json_array_append(list, sv))
                both = json_pack("{s:o}", "allOf", list);
            else
                json_decref(list);
            if (!both || json_object_set_new(dst, k, both))
                return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        } else if (id == GK_ALL_OF && json_is_array(dv) && json_is_array(sv)) {
            json_array_extend(dv, sv); /* all of both lists */
        } else if (id == GK_NOT) {
            /* not A and not B is not (A or B) */
            json_t *alts = json_array();
            if (!alts || not_branches(alts, dv) || not_branches(alts, sv)) {
                json_decref(alts);
                return sx_err_set(c->err, SX_ENOMEM, "out of memory");
            }
            json_object_set_new(dst, "not", json_pack("{s:o}", "anyOf", alts));
        } else {
            return gc_unsupported(c, k, "two different values inside allOf");
        }
    }
    int rc = merge_contains(c, dst, src);
    if (!rc)
        merge_values(dst, src);
    return rc;
}
