/* oneOf split by JSON type: "exactly one branch" decided one type at a
 * time.  Branches that overlap only on a type both admit wholesale (a
 * string is a valid object-rules branch) leave that type out: every such
 * value matches two branches.  Within a type, each pair of branches must
 * be disjoint (exact tests: types, listed values, a required key's values,
 * string automata; [] or {} as the only common value, excluded) or, for
 * objects, be narrowed so that neither side can match the other (a
 * discriminator key made required, or a key only the other requires made
 * absent): every value the result admits matches exactly one branch, and
 * the narrowing is listed in docs/ORACLE.md.  Anything else is left to the
 * negations of gr_schema.c. */
#include <stdlib.h>
#include <string.h>

#include "grammar/compile/compile.h"
#include "grammar/compile/keywords.h"
#include "grammar/regex/regex.h"

enum {
    K_NULL = GK_T_NULL, K_BOOL = GK_T_BOOL, K_INT = GK_T_INT, K_NUM = GK_T_NUM, K_STR = GK_T_STR,
    K_OBJ = GK_T_OBJ, K_ARR = GK_T_ARR /* the keyword table's type bits (gc_kw_types) */
};

/* The type classes the split decides one by one (integers go with the
 * numbers: an integer branch and a number branch overlap). */
static const int classes[] = {K_NULL, K_BOOL, K_INT | K_NUM, K_STR, K_OBJ, K_ARR};

/* 1 when branch b (types bt) admits every value of class k: its type takes
 * the whole class and none of its assertions reach that class. */
static int admits_all(const json_t *b, int bt, int k)
{
    const char *kw;
    json_t *v;
    if ((bt & k) != k)
        return 0;
    json_object_foreach((json_t *)b, kw, v) {
        gc_kw id = gc_kw_id(kw);
        if (!(gc_kw_flags(id) & GK_ASSERTION) || id == GK_TYPE)
            continue;
        int kc = (int)gc_kw_types(id);
        if (!kc || (kc & k))
            return 0;
    }
    return 1;
}

static const char *class_name(int k)
{
    switch (k) {
    case K_NULL: return "null";
    case K_BOOL: return "boolean";
    case K_STR: return "string";
    case K_OBJ: return "object";
    case K_ARR: return "array";
    default: return "number";
    }
}

/* The strings schema b may take, as an automaton over the decoded text: its
 * enum/const strings when it lists values (other values are not strings),
 * else its pattern.  *out NULL when b says neither (or it fails to
 * compile: then nothing is decided). */
static void string_language(const json_t *b, sx_re **out)
{
    const json_t *en = json_object_get(b, "enum"), *cn = json_object_get(b, "const");
    const json_t *pat = json_object_get(b, "pattern");
    *out = NULL;
    if (cn || json_is_array(en)) {
        enum { MAX = 256 };
        const char *strs[MAX];
        size_t lens[MAX], n = 0, i;
        json_t *e;
        if (cn) {
            if (json_is_string(cn)) {
                strs[n] = json_string_value(cn);
                lens[n++] = json_string_length(cn);
            }
        } else {
            if (json_array_size(en) > MAX)
                return;
            json_array_foreach((json_t *)en, i, e)
                if (json_is_string(e)) {
                    strs[n] = json_string_value(e);
                    lens[n++] = json_string_length(e);
                }
        }
        sx_re_from_literals(strs, lens, n, NULL, out, NULL);
        return;
    }
    if (json_is_string(pat))
        sx_re_compile(json_string_value(pat), json_string_length(pat), SX_RE_SEARCH, NULL, out,
                      NULL);
}

/* No string satisfies both a and b: their listed strings or patterns share
 * none (decided on the automata; 0 when either says nothing). */
static int strings_disjoint(const json_t *a, const json_t *b)
{
    sx_re *la, *lb, *both = NULL;
    string_language(a, &la);
    string_language(b, &lb);
    int disjoint = la && lb && !sx_re_intersect(la, lb, NULL, &both, NULL) && both &&
                   sx_re_is_empty(both);
    sx_re_free(la);
    sx_re_free(lb);
    sx_re_free(both);
    return disjoint;
}

/* s, or the target of its $ref when that is all it says (one level). */
static const json_t *deref(gc_ctx *c, const json_t *s)
{
    const json_t *r = json_is_object(s) ? json_object_get(s, "$ref") : NULL;
    const json_t *t = json_is_string(r) ? gc_resolve_ref(c, json_string_value(r)) : NULL;
    return t && json_is_object(t) ? t : s;
}

/* 1 when s admits strings only, by its type keyword. */
static int string_only(const json_t *s)
{
    const json_t *t = json_object_get(s, "type");
    return json_is_string(t) && !strcmp(json_string_value(t), "string");
}

/* Two property schemas no value satisfies both: by the compiler's own
 * tests, or as strings whose patterns/lists share nothing. */
static int values_apart(gc_ctx *c, const json_t *va, const json_t *vb, gc_disjoint_fn disjoint)
{
    if (!json_is_object(va) || !json_is_object(vb))
        return 0;
    if (disjoint(c, va, vb, -1, -1))
        return 1;
    va = deref(c, va);
    vb = deref(c, vb);
    return string_only(va) && string_only(vb) && strings_disjoint(va, vb);
}

/* No object satisfies both: a key one requires has values, in the two,
 * that share nothing (exact). */
static int required_apart(gc_ctx *c, const json_t *a, const json_t *b, gc_disjoint_fn disjoint)
{
    const json_t *pa = json_object_get(a, "properties"), *pb = json_object_get(b, "properties");
    const json_t *sides[2][2] = {{a, b}, {b, a}};
    if (!json_is_object(pa) || !json_is_object(pb))
        return 0;
    for (int s = 0; s < 2; s++) {
        const json_t *req = json_object_get(sides[s][0], "required");
        size_t i;
        json_t *e;
        if (!json_is_array(req))
            continue;
        json_array_foreach((json_t *)req, i, e) {
            if (!json_is_string(e))
                continue;
            const json_t *va = json_object_get(pa, json_string_value(e));
            const json_t *vb = json_object_get(pb, json_string_value(e));
            if (va && vb && values_apart(c, va, vb, disjoint))
                return 1;
        }
    }
    return 0;
}

/* The keys of `required` in a and not in b (strings only), new. */
static json_t *required_minus(const json_t *a, const json_t *b)
{
    const json_t *ra = json_object_get(a, "required"), *rb = json_object_get(b, "required");
    json_t *d = json_array(), *e, *f;
    size_t i, j;
    if (!d || !json_is_array(ra))
        return d;
    json_array_foreach((json_t *)ra, i, e) {
        int have = !json_is_string(e);
        if (json_is_array(rb))
            json_array_foreach((json_t *)rb, j, f)
                have |= json_equal(e, f);
        if (!have)
            json_array_append(d, e);
    }
    return d;
}

/* "not all of the keys d" as a schema: `properties: {k: false}` for one
 * key, `not: {required: d}` for more (both compiled exactly).  New. */
static json_t *lacks_one(const json_t *d)
{
    if (json_array_size(d) == 1)
        return json_pack("{s:{s:b}}", "properties", json_string_value(json_array_get(d, 0)), 0);
    return json_pack("{s:{s:O}}", "not", "required", d);
}

/* The narrowing m (taken; NULL out of memory) for both sides: 1, or 0
 * when out of memory. */
static int narrow_both(json_t *xa, json_t *xb, json_t *m)
{
    int ok = m && !json_array_append(xa, m) && !json_array_append(xb, m);
    json_decref(m);
    return ok;
}

/* Closed objects (additionalProperties false, no patternProperties) whose
 * property names share nothing: only {} may match both, so both get
 * minProperties 1 -- exact where {} matches both, else it only narrows
 * away {}.  0 when not of this form. */
static int closed_apart(const json_t *a, const json_t *b, json_t *xa, json_t *xb)
{
    const json_t *pa = json_object_get(a, "properties"), *pb = json_object_get(b, "properties");
    const char *k;
    json_t *v;
    if (!json_is_false(json_object_get(a, "additionalProperties")) ||
        !json_is_false(json_object_get(b, "additionalProperties")) ||
        json_object_get(a, "patternProperties") || json_object_get(b, "patternProperties"))
        return 0;
    if (json_is_object(pa) && json_is_object(pb))
        json_object_foreach((json_t *)pa, k, v)
            if (json_object_get(pb, k))
                return 0;
    return narrow_both(xa, xb, json_pack("{s:i}", "minProperties", 1));
}

/* Arrays whose items are disjoint: only [] may match both.  Where one
 * side already needs an item, they are disjoint; where both keep [] (no
 * keyword that could refuse it), both get minItems 1, exactly.  0 when
 * not of this form. */
static int arrays_apart(gc_ctx *c, const json_t *a, const json_t *b, json_t *xa, json_t *xb,
                        gc_disjoint_fn disjoint)
{
    static const char *const empty_ok[] = {"type", "items", "maxItems", "uniqueItems",
                                           "additionalItems", NULL};
    const json_t *ia = json_object_get(a, "items"), *ib = json_object_get(b, "items");
    /* items must govern every position, the first included */
    if (json_object_get(a, "prefixItems") || json_object_get(b, "prefixItems") ||
        !json_is_object(ia) || !json_is_object(ib) || !disjoint(c, ia, ib, -1, -1))
        return 0;
    const json_t *ma = json_object_get(a, "minItems"), *mb = json_object_get(b, "minItems");
    if ((json_is_number(ma) && json_number_value(ma) >= 1) ||
        (json_is_number(mb) && json_number_value(mb) >= 1))
        return 1;
    const json_t *sides[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)sides[s], k, v)
            if (gc_is_assertion(k) && !gc_in_list(empty_ok, k))
                return 0;
    }
    return narrow_both(xa, xb, json_pack("{s:i}", "minItems", 1));
}

/* Objects that may match both a and b, told apart by a property both
 * list with disjoint values: each side narrowed to require that key (the
 * deliberate narrowing of docs/ORACLE.md).  Values lost: objects without
 * the key.  0 when no such key. */
static int narrow_by_key(gc_ctx *c, const json_t *a, const json_t *b, json_t *xa, json_t *xb,
                         gc_disjoint_fn disjoint)
{
    const json_t *pa = json_object_get(a, "properties"), *pb = json_object_get(b, "properties");
    const char *k;
    json_t *va;
    if (!json_is_object(pa) || !json_is_object(pb))
        return 0;
    json_object_foreach((json_t *)pa, k, va) {
        const json_t *vb = json_object_get(pb, k);
        if (!vb || !values_apart(c, va, vb, disjoint))
            continue;
        return narrow_both(xa, xb, json_pack("{s:[s]}", "required", k));
    }
    return 0;
}

/* Objects that may match both a and b: each side narrowed so that it
 * cannot match the other (the deliberate narrowing of docs/ORACLE.md).
 * An object of a that lacks one of the keys b requires beyond a's own
 * fails b, and the other way round; so a gets "not all of b's required
 * less a's" and b the converse.  Both differences must be non-empty.
 * Values lost: objects with every key both require (valid when the rest
 * of one branch fails).  0 when they cannot be told apart this way. */
static int narrow_pair(const json_t *a, const json_t *b, json_t *xa, json_t *xb)
{
    json_t *da = required_minus(b, a), *db = required_minus(a, b);
    int ok = da && db && json_array_size(da) > 0 && json_array_size(db) > 0;
    if (ok)
        ok = !json_array_append_new(xa, lacks_one(da)) && !json_array_append_new(xb, lacks_one(db));
    json_decref(da);
    json_decref(db);
    return ok;
}

int gc_oneof_by_type(gc_ctx *c, const json_t *s, json_t *const *br, json_t *const *eff,
                     const int *bt, size_t n, gc_disjoint_fn disjoint, json_t **out)
{
    *out = NULL;
    /* the split is written as anyOf; unevaluatedProperties would see the
     * narrowing's property names as evaluated */
    if (json_object_get(s, "anyOf") || json_object_get(s, "unevaluatedProperties") ||
        json_object_get(s, "unevaluatedItems") || n > 64)
        return SX_OK;
    int *give = calloc(n, sizeof *give);
    json_t **extra = calloc(n, sizeof *extra);
    int rc = give && extra ? SX_OK : SX_ENOMEM, decided = 1;
    for (size_t i = 0; i < n && !rc; i++)
        if (!(extra[i] = json_array()))
            rc = SX_ENOMEM;
    if (rc) {
        decided = 0;
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    for (size_t ci = 0; ci < sizeof classes / sizeof *classes && decided; ci++) {
        int k = classes[ci], in = 0, whole = 0;
        for (size_t i = 0; i < n; i++) {
            if (!(bt[i] & k) || !json_is_object(br[i]))
                continue;
            in++;
            whole += admits_all(br[i], bt[i], k);
        }
        if (in == 0 || whole >= 2)
            continue; /* no branch takes the class, or every value of it matches two */
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++)
            for (size_t j = i + 1; j < n && ok; j++)
                if ((bt[i] & k) && (bt[j] & k) && json_is_object(br[i]) &&
                    json_is_object(br[j]) && !json_equal(br[i], br[j])) {
                    ok = eff[i] && eff[j] && disjoint(c, eff[i], eff[j], bt[i] & k, bt[j] & k);
                    if (!ok && k == K_STR && eff[i] && eff[j] && n <= 16)
                        ok = strings_disjoint(eff[i], eff[j]);
                    if (!ok && k == K_ARR && eff[i] && eff[j])
                        ok = arrays_apart(c, eff[i], eff[j], extra[i], extra[j], disjoint);
                    if (!ok && k == K_OBJ && eff[i] && eff[j])
                        ok = required_apart(c, eff[i], eff[j], disjoint) ||
                             closed_apart(eff[i], eff[j], extra[i], extra[j]) ||
                             narrow_by_key(c, eff[i], eff[j], extra[i], extra[j], disjoint) ||
                             narrow_pair(eff[i], eff[j], extra[i], extra[j]);
                }
        if (!ok) {
            decided = 0;
            break;
        }
        for (size_t i = 0; i < n; i++)
            if ((bt[i] & k) && json_is_object(br[i]))
                give[i] |= k;
    }
    /* a branch written twice: whatever matches it matches two */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (i != j && json_equal(br[i], br[j]))
                give[i] = 0;
    json_t *any = decided ? json_array() : NULL, *res = NULL;
    for (size_t i = 0; i < n && any && !rc; i++) {
        if (!give[i])
            continue;
        json_t *m = gc_copy(br[i]), *names = json_array();
        for (size_t ci = 0; ci < sizeof classes / sizeof *classes && names; ci++)
            if (give[i] & classes[ci])
                json_array_append_new(names, json_string(class_name(classes[ci])));
        json_t *ty = names ? json_pack("{s:o}", "type", names) : NULL;
        rc = m && ty ? gc_merge(c, m, ty) : sx_err_set(c->err, SX_ENOMEM, "out of memory");
        json_decref(ty);
        if (!rc && json_array_size(extra[i]) > 0) {
            /* the narrowing, as more allOf members */
            json_t *all = json_pack("{s:[O]}", "allOf", m);
            if (!all || json_array_extend(json_object_get(all, "allOf"), extra[i]))
                rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
            json_decref(m);
            m = all;
        }
        if (!rc && json_array_append(any, m))
            rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        json_decref(m);
    }
    if (!rc && any && json_array_size(any) > 0) {
        res = gc_copy(s);
        if (!res || json_object_del(res, "oneOf") || json_object_set(res, "anyOf", any))
            rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    json_decref(any);
    for (size_t i = 0; extra && i < n; i++)
        json_decref(extra[i]);
    free(extra);
    free(give);
    if (rc) {
        json_decref(res);
        return rc;
    }
    *out = res;
    return SX_OK;
}
