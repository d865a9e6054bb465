/* Schemas whose values come from a finite list: an enum/const in the schema
 * itself or in any allOf conjunct (also through $ref) bounds what it admits,
 * so the schema is exactly the listed values that satisfy all of it.  The
 * independent validator decides each value against the whole schema, which
 * enforces every other keyword (not, oneOf, if/then/else, uniqueItems, ...)
 * exactly, whatever the grammar could express on its own. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/compile/compile.h"
#include "grammar/compile/keywords.h"
#include "grammar/validator/validator.h"

/* The retrieval URI the root document is served under when the schema
 * refers into it (its own $id, if any, still sets the base). */
#define ROOT_URI "strux:/grammar-root"
#define ENTRY_KW "x-strux-finite-entry"

/* Bits 1 null, 2 boolean, 4 anything else; 0 when there is no type. */
static int type_set(const json_t *ty)
{
    int m = 0;
    size_t n = json_is_array(ty) ? json_array_size(ty) : 1;
    if (!ty)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = json_string_value(json_is_array(ty) ? json_array_get(ty, i) : ty);
        m |= !t ? 4 : !strcmp(t, "null") ? 1 : !strcmp(t, "boolean") ? 2 : 4;
    }
    return m ? m : 4;
}

/* listed_values' memo for one call: the schema objects being looked at
 * (a $ref cycle met again answers NULL, as the depth cut did) and those
 * known to answer NULL -- so each is looked at once, O(the schema objects
 * reachable), where recursive allOf/$ref schemas were unfolded 32 deep,
 * exponentially (seconds, found by the schema fuzzer).  Only NULL is
 * remembered: a list returns at once up the walk. */
typedef struct lv_memo {
    const json_t **key;
    uint8_t *st;  /* 1 being looked at, 2 answers NULL */
    size_t cap;   /* a power of two; 0: no memo (out of memory) */
    size_t n;
} lv_memo;

static size_t lv_hash(const json_t *s, size_t cap)
{
    return (size_t)(((uintptr_t)s >> 4) * 0x9E3779B97F4A7C15ULL) & (cap - 1);
}

/* The state slot of s (0 when new), or NULL without a memo. */
static uint8_t *lv_slot(lv_memo *m, const json_t *s)
{
    if (!m->cap)
        return NULL;
    if (2 * (m->n + 1) > m->cap) {
        lv_memo b = {calloc(2 * m->cap, sizeof *b.key), calloc(2 * m->cap, 1), 2 * m->cap, 0};
        if (!b.key || !b.st) {
            free(b.key);
            free(b.st);
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t h = lv_hash(m->key[i], b.cap);
                while (b.key[h])
                    h = (h + 1) & (b.cap - 1);
                b.key[h] = m->key[i];
                b.st[h] = m->st[i];
                b.n++;
            }
        free(m->key);
        free(m->st);
        *m = b;
    }
    size_t h = lv_hash(s, m->cap);
    while (m->key[h] && m->key[h] != s)
        h = (h + 1) & (m->cap - 1);
    if (!m->key[h]) {
        m->key[h] = s;
        m->st[h] = 0;
        m->n++;
    }
    return &m->st[h];
}

static json_t *listed_values_(gc_ctx *c, const json_t *s, int depth, lv_memo *m);
static json_t *listed_values_at(gc_ctx *c, const json_t *s, int depth, lv_memo *m);

/* The listed values that bound s, as a new array; NULL when s is not
 * bounded that way (as far as this can see). */
static json_t *listed_values(gc_ctx *c, const json_t *s, int depth)
{
    lv_memo m = {calloc(64, sizeof *m.key), calloc(64, 1), 64, 0};
    if (!m.key || !m.st)
        m.cap = 0;
    json_t *v = listed_values_(c, s, depth, &m);
    free(m.key);
    free(m.st);
    return v;
}

static json_t *listed_values_(gc_ctx *c, const json_t *s, int depth, lv_memo *m)
{
    if (depth > 32)
        return NULL;
    if (json_is_false(s))
        return json_array();
    if (!json_is_object(s))
        return NULL;
    uint8_t *slot = lv_slot(m, s);
    if (slot && *slot)
        return NULL; /* being looked at (a cycle), or known to answer NULL */
    if (slot)
        *slot = 1;
    json_t *r = listed_values_at(c, s, depth, m);
    if ((slot = lv_slot(m, s))) /* the table may have grown */
        *slot = r ? 0 : 2;
    return r;
}

static json_t *listed_values_at(gc_ctx *c, const json_t *s, int depth, lv_memo *m)
{
    const char *ref = json_string_value(json_object_get(s, "$ref"));
    const json_t *t = ref ? gc_resolve_ref(c, ref) : NULL;
    if (ref && c->opts.draft7) /* siblings of $ref do not apply */
        return t ? listed_values_(c, t, depth + 1, m) : NULL;
    const json_t *cn = json_object_get(s, "const"), *en = json_object_get(s, "enum");
    if (cn)
        return json_pack("[O]", cn);
    if (json_is_array(en))
        return gc_copy(en);
    json_t *v = t ? listed_values_(c, t, depth + 1, m) : NULL;
    if (v)
        return v;
    const json_t *all = json_object_get(s, "allOf");
    size_t i;
    json_t *e;
    if (json_is_array(all))
        json_array_foreach((json_t *)all, i, e)
            if ((v = listed_values_(c, e, depth + 1, m)))
                return v;
    /* a choice among bounded branches is bounded by their union */
    static const char *const unions[] = {"anyOf", "oneOf"};
    for (int u = 0; u < 2; u++) {
        const json_t *alts = json_object_get(s, unions[u]);
        if (!json_is_array(alts) || json_array_size(alts) == 0)
            continue;
        json_t *acc = json_array();
        json_array_foreach((json_t *)alts, i, e) {
            json_t *b = acc ? listed_values_(c, e, depth + 1, m) : NULL;
            if (!b || json_array_extend(acc, b)) {
                json_decref(b);
                json_decref(acc);
                acc = NULL;
                break;
            }
            json_decref(b);
        }
        if (acc)
            return acc;
    }
    const json_t *th = json_object_get(s, "then"), *el = json_object_get(s, "else");
    if (json_object_get(s, "if") && th && el) {
        json_t *a = listed_values_(c, th, depth + 1, m);
        json_t *b = a ? listed_values_(c, el, depth + 1, m) : NULL;
        if (b && !json_array_extend(a, b)) {
            json_decref(b);
            return a;
        }
        json_decref(a);
        json_decref(b);
    }
    /* null and boolean are finite types */
    int types = type_set(json_object_get(s, "type"));
    if (types && !(types & ~3)) {
        v = json_array();
        if (v && (types & 1))
            json_array_append_new(v, json_null());
        if (v && (types & 2)) {
            json_array_append_new(v, json_true());
            json_array_append_new(v, json_false());
        }
        return v;
    }
    return NULL;
}

/* Any keyword that refers to another schema by URI. */
static int has_refs(const json_t *s, int depth)
{
    if (depth > 200)
        return 1;
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_object(s)) {
        json_object_foreach((json_t *)s, k, v) {
            if ((!strcmp(k, "$ref") || !strcmp(k, "$dynamicRef") || !strcmp(k, "$recursiveRef")) &&
                json_is_string(v))
                return 1;
            if (has_refs(v, depth + 1))
                return 1;
        }
    } else if (json_is_array(s)) {
        json_array_foreach((json_t *)s, i, v)
            if (has_refs(v, depth + 1))
                return 1;
    }
    return 0;
}

/* An identifier below the root changes the base URI of what lies under it,
 * which a copy of the subschema placed at the root would not see. */
static int has_nested_ids(const json_t *s, int depth, int draft4)
{
    if (depth > 200)
        return 1;
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_object(s)) {
        json_object_foreach((json_t *)s, k, v) {
            if (depth > 0 && json_is_string(v) &&
                (!strcmp(k, "$id") || (draft4 && !strcmp(k, "id"))))
                return 1;
            if (has_nested_ids(v, depth + 1, draft4))
                return 1;
        }
    } else if (json_is_array(s)) {
        json_array_foreach((json_t *)s, i, v)
            if (has_nested_ids(v, depth + 1, draft4))
                return 1;
    }
    return 0;
}

typedef struct root_doc {
    const json_t *root;
    const json_t *entry;
} root_doc;

/* Serves the root document, with the subschema under an unknown keyword
 * (which no keyword of the root sees) so that a $ref can enter there. */
static int serve_root(void *ctx, const char *uri, json_t **doc, sx_error *err)
{
    const root_doc *r = ctx;
    (void)err;
    if (strcmp(uri, ROOT_URI))
        return SX_ENOTFOUND;
    json_t *d = gc_copy(r->root);
    if (!d || json_object_set(d, ENTRY_KW, (json_t *)r->entry)) {
        json_decref(d);
        return SX_ENOMEM;
    }
    *doc = d;
    return SX_OK;
}

/* A validator for s as it stands in the root document; *out NULL (no
 * error) when the validator cannot take it. */
static int subschema_validator(gc_ctx *c, const json_t *s, sx_validator **out)
{
    const json_t *root = c->root_schema;
    const json_t *dialect = json_is_object(root) ? json_object_get(root, "$schema") : NULL;
    sx_val_opts o;
    sx_error e;
    memset(&o, 0, sizeof o);
    o.dialect = c->opts.draft7 ? SX_VAL_DRAFT7 : SX_VAL_DIALECT_DEFAULT;
    *out = NULL;
    json_t *doc;
    root_doc rd = {root, s};
    if (!has_refs(s, 0)) {
        doc = gc_copy(s);
    } else {
        if (!json_is_object(root) || has_nested_ids(root, 0, c->draft4))
            return SX_OK;
        doc = json_pack("{s:s}", "$ref", ROOT_URI "#/" ENTRY_KW);
        o.resolve = serve_root;
        o.resolve_ctx = &rd;
    }
    if (!doc || (dialect && !json_object_get(doc, "$schema") &&
                 json_object_set(doc, "$schema", (json_t *)dialect))) {
        json_decref(doc);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    int rc = sx_val_compile(doc, &o, out, &e);
    json_decref(doc);
    if (rc == SX_ENOMEM)
        return sx_err_set(c->err, rc, "out of memory");
    if (rc)
        *out = NULL;
    return SX_OK;
}

/* Integral numbers inside a container: draft-04 tells 1 from 1.0, and the
 * grammar spells nested numbers both ways. */
int gc_has_integral(const json_t *v)
{
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_integer(v))
        return 1;
    if (json_is_real(v))
        return json_real_value(v) == floor(json_real_value(v));
    if (json_is_object(v))
        json_object_foreach((json_t *)v, k, x)
            if (gc_has_integral(x))
                return 1;
    if (json_is_array(v))
        json_array_foreach((json_t *)v, i, x)
            if (gc_has_integral(x))
                return 1;
    return 0;
}

/* Accepts v (or one of its spellings) into texts/values when valid.
 * *undecided is set when the validator could not reach a verdict. */
static int keep_valid(gc_ctx *c, const sx_validator *val, const json_t *v, json_t *texts,
                      json_t *values, int *undecided)
{
    int ok = 0;
    if (json_is_object(v) || json_is_array(v)) {
        if (c->draft4 && gc_has_integral(v)) {
            *undecided = 1;
            return SX_OK;
        }
        if (sx_val_validate(val, v, &ok, NULL)) {
            *undecided = 1;
            return SX_OK;
        }
        if (ok && json_array_append(values, (json_t *)v))
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        return SX_OK;
    }
    /* scalars: each spelling the grammar would accept is decided as the
     * value it reads back as (1.0 is not an integer in draft-04) */
    char *sp[4];
    int n = 0, rc = gr_spellings(v, sp, &n, 4);
    for (int i = 0; i < n && !rc && !*undecided; i++) {
        json_t *back = json_loads(sp[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!back || sx_val_validate(val, back, &ok, NULL))
            *undecided = 1;
        else if (ok && json_array_append_new(texts, json_string(sp[i])))
            rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        json_decref(back);
    }
    for (int i = 0; i < n; i++)
        free(sp[i]);
    if (rc == SX_EINVAL || rc == SX_ELIMIT) {
        *undecided = 1;
        rc = SX_OK;
    }
    return rc;
}

static int only_plain_enum(const json_t *s)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        gc_kw id = gc_kw_id(k);
        if (id != GK_TYPE && id != GK_ENUM && id != GK_CONST && (gc_kw_flags(id) & GK_ASSERTION))
            return 0;
    }
    return 1;
}

int gc_finite_values(gc_ctx *c, const json_t *s, json_t **texts, json_t **values)
{
    *texts = *values = NULL;
    if (!json_is_object(s) || only_plain_enum(s) || gc_has_key_prefix(s, "$strux:"))
        return SX_OK;
    json_t *list = listed_values(c, s, 0);
    if (!list)
        return SX_OK;
    /* bounded work: a subschema with $refs gets a validator of the whole
     * document (its $refs may reach anywhere); a recursive schema whose
     * rewrites make thousands of such subschemas spent 15 s here (the
     * schema fuzzer).  Past GC_MAX_FINITE_CALLS of those the rest are
     * compiled the ordinary way, as when the validator cannot decide.  A
     * subschema without $refs is validated on its own copy, work in its
     * own size (bounded with the copies by GC_MAX_MEMO_BYTES), so it is
     * not counted: a large schema store (typo3) has hundreds of them. */
    if (has_refs(s, 0) && ++c->finite_calls > GC_MAX_FINITE_CALLS) {
        json_decref(list);
        return SX_OK;
    }
    sx_validator *val = NULL;
    int rc = subschema_validator(c, s, &val), undecided = 0;
    json_t *t = json_array(), *v = json_array();
    if (!rc && (!t || !v))
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
    size_t i;
    json_t *e;
    if (!rc && val)
        json_array_foreach(list, i, e) {
            if ((rc = keep_valid(c, val, e, t, v, &undecided)) || undecided)
                break;
        }
    if (!rc && val && !undecided) {
        *texts = t;
        *values = v;
        t = v = NULL;
    }
    json_decref(t);
    json_decref(v);
    json_decref(list);
    sx_val_free(val);
    return rc;
}
