/* Compiling one schema object: references, combinators, then one node per
 * admitted JSON type with the keywords that apply to it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/formats/formats.h"
#include "grammar/compile/compile.h"
#include "grammar/compile/keywords.h"
#include "grammar/regex/regex.h"
#include "grammar/validator/validator.h"

enum {
    T_NULL = 1, T_BOOL = 2, T_INT = 4, T_NUM = 8, T_STR = 16, T_OBJ = 32, T_ARR = 64,
    T_ALL = 127
};

/* Formats with a defined meaning; others are annotations. */
static const char *const formats[] = {
    "date", "time", "date-time", "duration", "email", "idn-email", "hostname",
    "idn-hostname", "ipv4", "ipv6", "uuid", "uri", "uri-reference", "iri", "iri-reference",
    "uri-template", "json-pointer", "relative-json-pointer", "regex", NULL};

int gc_in_list(const char *const *l, const char *s)
{
    for (; *l; l++)
        if (!strcmp(*l, s))
            return 1;
    return 0;
}

static int type_bit(const char *t)
{
    static const char *const names[] = {"null", "boolean", "integer", "number",
                                        "string", "object", "array"};
    for (int i = 0; i < 7; i++)
        if (!strcmp(t, names[i]))
            return 1 << i;
    return 0;
}

/* A condition on which keys an object has, from an enclosing anyOf/oneOf
 * whose branches only list required keys: lists is the array of those
 * `required` arrays, one is 1 for oneOf (exactly one list complete), 0 for
 * anyOf.  It belongs to the object node of the schema being compiled, not
 * to objects nested in it, so it travels as an argument down to that
 * node: NULL where there is none. */
typedef struct gc_pres {
    const json_t *lists;
    int one;
} gc_pres;

static int schema_at(gc_ctx *c, const json_t *s, const gc_pres *pres, int32_t *node);

/* ---- references --------------------------------------------------------- */

static const json_t *find_anchor(const json_t *s, const char *name, int depth)
{
    if (depth > 64)
        return NULL;
    if (json_is_object(s)) {
        const char *a = json_string_value(json_object_get(s, "$anchor"));
        if (a && !strcmp(a, name))
            return s;
        /* before 2019-09 a plain-name fragment is an id of its own:
         * "$id": "#name" (draft 6, 7) or "id": "#name" (draft 4) */
        for (int i = 0; i < 2; i++) {
            const char *id = json_string_value(json_object_get(s, i ? "id" : "$id"));
            if (id && id[0] == '#' && !strcmp(id + 1, name))
                return s;
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)s, k, v) {
            if (!strcmp(k, "enum") || !strcmp(k, "const") || !strcmp(k, "default") ||
                !strcmp(k, "examples"))
                continue;
            const json_t *r = find_anchor(v, name, depth + 1);
            if (r)
                return r;
        }
    } else if (json_is_array(s)) {
        size_t i;
        json_t *v;
        json_array_foreach((json_t *)s, i, v) {
            const json_t *r = find_anchor(v, name, depth + 1);
            if (r)
                return r;
        }
    }
    return NULL;
}

static int unescape_pct(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k + 1 >= cap)
            return -1;
        if (s[i] == '%' && i + 2 < n + 0 && i + 2 <= n - 1 + 0) {
            char hx[3] = {s[i + 1], s[i + 2], 0};
            char *end;
            long v = strtol(hx, &end, 16);
            if (*end)
                return -1;
            out[k++] = (char)v;
            i += 2;
        } else {
            out[k++] = s[i];
        }
    }
    out[k] = '\0';
    return (int)k;
}

const json_t *gc_resolve_ref(gc_ctx *c, const char *ref)
{
    const json_t *root = c->root_schema;
    if (ref[0] != '#') {
        /* a ref naming the root's own $id is local */
        const char *id = json_is_object(root) ? json_string_value(json_object_get(root, "$id")) : NULL;
        size_t idl = id ? strlen(id) : 0;
        if (id && !strncmp(ref, id, idl) && (ref[idl] == '#' || ref[idl] == '\0'))
            ref += idl;
        else
            return NULL;
        if (!*ref)
            return root;
    }
    ref++;
    if (*ref && *ref != '/')
        return find_anchor(root, ref, 0);
    const json_t *cur = root;
    while (*ref == '/') {
        ref++;
        size_t n = strcspn(ref, "/");
        char raw[256], seg[256];
        if (unescape_pct(ref, n, raw, sizeof raw) < 0)
            return NULL;
        size_t k = 0;
        for (size_t i = 0; raw[i] && k + 1 < sizeof seg; i++) {
            if (raw[i] == '~' && raw[i + 1] == '0') {
                seg[k++] = '~';
                i++;
            } else if (raw[i] == '~' && raw[i + 1] == '1') {
                seg[k++] = '/';
                i++;
            } else {
                seg[k++] = raw[i];
            }
        }
        seg[k] = '\0';
        if (json_is_object(cur)) {
            cur = json_object_get(cur, seg);
        } else if (json_is_array(cur)) {
            char *end;
            long idx = strtol(seg, &end, 10);
            if (*end || idx < 0)
                return NULL;
            cur = json_array_get(cur, (size_t)idx);
        } else {
            return NULL;
        }
        if (!cur)
            return NULL;
        ref += n;
    }
    return cur;
}

static int compile_ref(gc_ctx *c, const json_t *target, const gc_pres *pres, int32_t *node)
{
    const gc_ref *found = gc_refs_find_target(c, target);
    if (found) {
        *node = found->node;
        return SX_OK;
    }
    /* reserve an indirection node first so recursive refs find it */
    int32_t id, inner;
    int rc = gc_new_node(c, GK_ALT, &id);
    if (rc)
        return rc;
    gc_ref *r = gc_alloc(c, sizeof *r);
    int32_t *alts = gc_alloc(c, sizeof *alts);
    if (!r || !alts)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    r->target = target;
    r->node = id;
    if ((rc = gc_refs_push(c, r)))
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if ((rc = schema_at(c, target, pres, &inner)))
        return rc;
    alts[0] = inner;
    c->g->nodes[id].u.alt.alts = alts;
    c->g->nodes[id].u.alt.n = 1;
    *node = id;
    return SX_OK;
}

/* ---- small node builders -------------------------------------------------- */

static int any_node(gc_ctx *c, const gc_pres *pres, int32_t *node);

static int cmp_lit(const void *a, const void *b)
{
    const gr_lit *x = a, *y = b;
    int r = memcmp(x->b, y->b, x->len < y->len ? x->len : y->len);
    if (r)
        return r;
    return (x->len > y->len) - (x->len < y->len);
}

/* A literal-set node from texts (takes ownership of the malloc'd texts). */
static int lit_node(gc_ctx *c, char **texts, int n, int32_t *node)
{
    int32_t id;
    int rc = gc_new_node(c, GK_LITSET, &id);
    gr_lit *lits = rc ? NULL : gc_alloc(c, (size_t)(n ? n : 1) * sizeof *lits);
    if (!rc && !lits)
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
    for (int i = 0; i < n && !rc; i++) {
        size_t len = strlen(texts[i]);
        uint8_t *b = gc_alloc(c, len);
        if (!b) {
            rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
            break;
        }
        memcpy(b, texts[i], len);
        lits[i].b = b;
        lits[i].len = (uint32_t)len;
    }
    for (int i = 0; i < n; i++)
        free(texts[i]);
    if (rc)
        return rc;
    qsort(lits, (size_t)n, sizeof *lits, cmp_lit);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || cmp_lit(&lits[m - 1], &lits[i]))
            lits[m++] = lits[i];
    uint64_t *hash = gc_alloc(c, (size_t)(m ? m : 1) * sizeof *hash);
    if (!hash)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    for (int i = 0; i < m; i++) {
        int ok;
        hash[i] = gr_text_hash((const char *)lits[i].b, lits[i].len, &ok);
    }
    gr_node *nd = &c->g->nodes[id];
    nd->u.lit.lits = lits;
    nd->u.lit.n = (uint32_t)m;
    nd->u.lit.hash = hash;
    if (m == 0)
        nd->kind = GK_EMPTY;
    *node = id;
    return SX_OK;
}

static int alt_node(gc_ctx *c, const int32_t *alts, int n, int32_t *node)
{
    if (n == 1) {
        *node = alts[0];
        return SX_OK;
    }
    int32_t id;
    int rc = gc_new_node(c, n ? GK_ALT : GK_EMPTY, &id);
    if (rc)
        return rc;
    if (n) {
        int32_t *a = gc_alloc(c, (size_t)n * sizeof *a);
        if (!a)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        memcpy(a, alts, (size_t)n * sizeof *a);
        c->g->nodes[id].u.alt.alts = a;
        c->g->nodes[id].u.alt.n = (uint32_t)n;
    }
    *node = id;
    return SX_OK;
}

static int empty_node(gc_ctx *c, int32_t *node)
{
    return gc_new_node(c, GK_EMPTY, node);
}

/* ---- types ----------------------------------------------------------- */

static int get_num(const json_t *s, const char *k, double *out)
{
    const json_t *v = json_object_get(s, k);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 1;
}

static int get_count(gc_ctx *c, const json_t *s, const char *k, int64_t *out)
{
    const json_t *v = json_object_get(s, k);
    if (!v)
        return SX_OK;
    double d = json_is_number(v) ? json_number_value(v) : -1;
    if (d < 0 || d != floor(d))
        return gc_invalid(c, k, "must be a non-negative integer");
    *out = d > 1e15 ? (int64_t)1e15 : (int64_t)d;
    return SX_OK;
}

/* Decimal multipleOf: the bounds as integers at the node's scale, exact
 * from their decimal forms, within the digits a hashed number may have. */
static int scaled_bounds(gc_ctx *c, gr_node *n)
{
    const int64_t cap = 999999999999999LL; /* GR_HASH_DIGITS digits */
    n->u.num.imin = -cap;
    n->u.num.imax = cap;
    for (int hi = 0; hi < 2; hi++) {
        if (!(hi ? n->u.num.has_max : n->u.num.has_min))
            continue;
        double b = hi ? n->u.num.max : n->u.num.min;
        int excl = hi ? n->u.num.excl_max : n->u.num.excl_min;
        int64_t m;
        int e;
        if (gr_decimal(b, &m, &e))
            return gc_invalid(c, hi ? "maximum" : "minimum", "must be finite");
        /* |b| * 10^scale = m * 10^(e + scale): an integer, or between two */
        int s = e + n->u.num.scale;
        __int128 v = m, frac = 0;
        if (s >= 0) {
            for (int i = 0; i < s && v <= cap * (__int128)10; i++)
                v *= 10;
        } else {
            __int128 d = 1;
            for (int i = 0; i < -s && d <= (__int128)m * 10; i++)
                d *= 10;
            frac = v % d != 0;
            v /= d;
        }
        if (b < 0)
            v = -v;
        /* v is |b|*10^scale rounded toward zero; frac: b was between */
        __int128 lim;
        if (!hi) /* lower: the least integer >= (or >) b */
            lim = (b > 0 && frac) ? v + 1 : (!frac && excl) ? v + 1 : v;
        else     /* upper: the greatest integer <= (or <) b */
            lim = (b < 0 && frac) ? v - 1 : (!frac && excl) ? v - 1 : v;
        if (!hi && lim > n->u.num.imin)
            n->u.num.imin = lim > cap ? cap + 1 : (int64_t)lim;
        if (hi && lim < n->u.num.imax)
            n->u.num.imax = lim < -cap ? -cap - 1 : (int64_t)lim;
    }
    if (n->u.num.imin > n->u.num.imax)
        n->kind = GK_EMPTY;
    return SX_OK;
}

static int number_node(gc_ctx *c, const json_t *s, int integer, const json_t *excl,
                       int32_t *node)
{
    int32_t id;
    int rc = gc_new_node(c, GK_NUMBER, &id);
    if (rc)
        return rc;
    gr_node *n = &c->g->nodes[id];
    double v, m = 0;
    int r;
    n->u.num.integer = integer;
    n->u.num.imin = INT64_MIN + 1;
    n->u.num.imax = INT64_MAX;
    static const char *const bkw[] = {"minimum", "exclusiveMinimum", "maximum",
                                      "exclusiveMaximum"};
    for (int i = 0; i < 4; i++) {
        const json_t *bv = json_object_get(s, bkw[i]);
        if (bv && json_is_boolean(bv))
            return gc_unsupported(c, bkw[i], "draft-04 boolean form");
        if ((r = get_num(s, bkw[i], &v)) < 0)
            return gc_invalid(c, bkw[i], "must be a number");
        if (!r)
            continue;
        n = &c->g->nodes[id];
        if (i < 2) { /* lower bounds: keep the tighter */
            if (!n->u.num.has_min || v > n->u.num.min || (v == n->u.num.min && i == 1)) {
                n->u.num.has_min = 1;
                n->u.num.min = v;
                n->u.num.excl_min = i == 1;
            }
        } else if (!n->u.num.has_max || v < n->u.num.max || (v == n->u.num.max && i == 3)) {
            n->u.num.has_max = 1;
            n->u.num.max = v;
            n->u.num.excl_max = i == 3;
        }
    }
    if ((r = get_num(s, "multipleOf", &m)) < 0 || (r && !(m > 0)))
        return gc_invalid(c, "multipleOf", "must be a number greater than 0");
    n = &c->g->nodes[id];
    if (r && m == floor(m) && m <= 1e15) {
        n->u.num.integer = 1; /* multiples of an integer are integers */
        n->u.num.multiple = (int64_t)m;
    } else if (r) {
        /* a decimal divisor P/10^K: x*10^K must be an integer multiple of
         * P, checked exactly on the digits */
        int64_t P;
        int e;
        if (gr_decimal(m, &P, &e) || e >= 0 || -e > 15 || P > 100000000000000LL)
            return gc_unsupported(c, "multipleOf", "a divisor beyond 15 significant digits");
        int64_t p10 = 1;
        for (int i = 0; i < -e; i++)
            p10 *= 10;
        if (n->u.num.integer) {
            /* integers x with x*10^K a multiple of P: multiples of P/gcd */
            int64_t a = P, b = p10;
            while (b) {
                int64_t t = a % b;
                a = b;
                b = t;
            }
            n->u.num.multiple = P / a;
        } else {
            n->u.num.scale = -e;
            n->u.num.multiple = P;
        }
    }
    if (integer && c->draft4)
        n->u.num.no_frac = 1;
    /* a document someone wrote may spell an integer as any number whose
     * value is one (1e2, 1.5e1); generation keeps the plain spellings */
    n->u.num.int_exp = n->u.num.integer && !n->u.num.no_frac && c->opts.escapes == SX_ESC_ANY;
    if (n->u.num.scale && (rc = scaled_bounds(c, n)))
        return rc;
    /* `not` of listed numbers: their hashes, checked when a number ends */
    size_t ne = 0, i;
    json_t *ev;
    json_array_foreach((json_t *)excl, i, ev)
        ne += json_is_number(ev);
    if (ne) {
        uint64_t *h = gc_alloc(c, ne * sizeof *h);
        if (!h)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        n = &c->g->nodes[id];
        n->u.num.excl = h;
        json_array_foreach((json_t *)excl, i, ev)
            if (json_is_number(ev))
                h[n->u.num.n_excl++] = gr_json_hash(ev);
    }
    /* a bound past int64 leaves no int64 value on its side; integers of
     * any length beyond it are read digit by digit and compared exactly
     * (ir/gr_number.c), except under a multipleOf or `not` */
    int long_ok = n->u.num.multiple <= 0 && !n->u.num.scale && !n->u.num.n_excl;
    if (n->u.num.integer) {
        if (n->u.num.has_min) {
            double lo = n->u.num.excl_min ? floor(n->u.num.min) + 1 : ceil(n->u.num.min);
            if (lo > 9e18 && long_ok)
                n->u.num.imin = INT64_MAX;
            else if (lo > 9e18)
                n->kind = GK_EMPTY;
            else if (lo > -9e18)
                n->u.num.imin = (int64_t)lo;
        }
        if (n->u.num.has_max) {
            double hi = n->u.num.excl_max ? ceil(n->u.num.max) - 1 : floor(n->u.num.max);
            if (hi < -9e18 && long_ok)
                n->u.num.imax = INT64_MIN + 1;
            else if (hi < -9e18)
                n->kind = GK_EMPTY;
            else if (hi < 9e18)
                n->u.num.imax = (int64_t)hi;
        }
        if (n->u.num.imin > n->u.num.imax)
            n->kind = GK_EMPTY;
    }
    if (n->u.num.has_min && n->u.num.has_max &&
               (n->u.num.min > n->u.num.max ||
                (n->u.num.min == n->u.num.max && (n->u.num.excl_min || n->u.num.excl_max)))) {
        n->kind = GK_EMPTY;
    }
    *node = id;
    return SX_OK;
}

static int names_automaton(gc_ctx *c, const json_t *pn, const char *kw, sx_re **out);

static int string_node(gc_ctx *c, const json_t *s, const json_t *excl, const json_t *not_str,
                       int32_t *node)
{
    int32_t id;
    int64_t mn = 0, mx = -1;
    int rc;
    const json_t *pat = json_object_get(s, "pattern");
    const char *fmt = json_string_value(json_object_get(s, "format"));
    if (pat && !json_is_string(pat))
        return gc_invalid(c, "pattern", "must be a string");
    if (fmt && !gc_in_list(formats, fmt))
        fmt = NULL; /* unknown formats are annotations */
    if ((rc = get_count(c, s, "minLength", &mn)) || (rc = get_count(c, s, "maxLength", &mx)))
        return rc;
    const sx_format_info *fi = NULL;
    if (fmt && !sx_format_lookup(fmt, &fi) && fi->max_len >= 0 && (mx < 0 || mx > fi->max_len))
        mx = fi->max_len; /* the format's own length bound (hostname: 253) */
    gr_strx *x = NULL;
    int has_excl = 0;
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)excl, i, v)
        has_excl |= json_is_string(v);
    sx_re *minus_re = NULL;
    if (not_str && (rc = names_automaton(c, not_str, "not", &minus_re)))
        return rc;
    const sx_re *more = NULL;
    if ((rc = gc_more_patterns_minus(c, s, minus_re, &more)))
        return rc;
    if (more)
        minus_re = (sx_re *)more;
    if ((pat || fmt || has_excl || minus_re) &&
        (rc = gc_string_automaton(c, pat ? json_string_value(pat) : NULL,
                                  pat ? json_string_length(pat) : 0, fmt, excl, minus_re, mn, mx,
                                  &x)))
        return rc;
    if ((rc = gc_new_node(c, GK_STRING, &id)))
        return rc;
    c->g->nodes[id].u.str.min_len = mn;
    c->g->nodes[id].u.str.max_len = mx;
    c->g->nodes[id].u.str.x = x;
    if (mx >= 0 && mn > mx)
        c->g->nodes[id].kind = GK_EMPTY;
    *node = id;
    return SX_OK;
}

typedef struct prop_tmp {
    const char *name;
    const json_t *schema; /* NULL: present only through required/dependencies */
    int cond;             /* named by a key condition: needs a bit in the seen set */
    int index;            /* its gr_prop.index */
} prop_tmp;

/* Property-order mode: the tables of gr_node.u.obj (ord_before, by_order)
 * for props P (sorted by key); every key needs a bit in the seen set. */
static int order_tables(gc_ctx *c, const gr_prop *P, int np, int32_t id)
{
    int listed = 0;
    for (int k = 0; k < np; k++) {
        if (!gr_prop_bit(&P[k]))
            return gc_unsupported(c, "properties", "more than 64 names in property-order mode");
        listed += P[k].order != GR_ORD_UNLISTED;
    }
    uint64_t *before = gc_alloc(c, (size_t)(listed + 1) * sizeof *before);
    uint16_t *by = gc_alloc(c, (size_t)(np ? np : 1) * sizeof *by);
    if (!before || !by)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    for (int o = 0; o <= listed; o++)
        for (int k = 0; k < np; k++)
            if (P[k].order < o)
                before[o] |= gr_prop_bit(&P[k]);
    int m = 0;
    for (int o = 0; o < listed; o++)
        for (int k = 0; k < np; k++)
            if (P[k].order == o)
                by[m++] = (uint16_t)k;
    for (int k = 0; k < np; k++)
        if (P[k].order == GR_ORD_UNLISTED)
            by[m++] = (uint16_t)k;
    gr_node *n = &c->g->nodes[id];
    n->u.obj.ord_before = before;
    n->u.obj.by_order = by;
    n->u.obj.n_listed = (uint16_t)listed;
    return SX_OK;
}

static int cmp_prop(const void *a, const void *b)
{
    const gr_prop *x = a, *y = b;
    int r = memcmp(x->key, y->key, x->key_len < y->key_len ? x->key_len : y->key_len);
    if (r)
        return r;
    return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static int prop_index(prop_tmp *t, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, name))
            return i;
    return -1;
}

/* Adds a name (once); cond marks it as one a key condition names. */
static void prop_add(prop_tmp *t, int *n, const char *name, const json_t *schema, int cond)
{
    int i = prop_index(t, *n, name);
    if (i < 0) {
        i = (*n)++;
        t[i].name = name;
        t[i].schema = schema;
        t[i].cond = 0;
    }
    t[i].cond |= cond;
}

/* The seen-set bit of a name that a key condition names (index < 64). */
static uint64_t prop_bit(prop_tmp *t, int n, const char *name)
{
    return 1ull << t[prop_index(t, n, name)].index;
}

/* Upper bound of the names an object node lists. */
static size_t names_bound(const json_t *s, const json_t *pres, const json_t *const *forbid,
                          int n_forbid, const json_t *deps)
{
    size_t n = json_object_size(json_object_get(s, "properties")) +
               json_array_size(json_object_get(s, "required")), i;
    const char *k;
    json_t *v;
    json_array_foreach((json_t *)pres, i, v)
        n += json_array_size(v);
    for (int f = 0; f < n_forbid; f++)
        n += json_array_size(forbid[f]);
    if (json_is_object(deps))
        json_object_foreach((json_t *)deps, k, v)
            n += 1 + json_array_size(v);
    return n;
}

/* A regex over key contents, kept with the grammar. */
/* The automaton of keyword kw of the schema at c->ptr (errors point at
 * c->ptr/kw). */
static int compile_key_regex(gc_ctx *c, const char *src, size_t len, sx_re_mode mode,
                             const char *kw, sx_re **out)
{
    sx_error e;
    char p[300];
    sx_err_clear(&e);
    snprintf(p, sizeof p, "%s/%s", c->ptr, kw);
    int rc = sx_re_compile(src, len, mode, NULL, out, &e);
    if (rc == SX_EUNSUPPORTED)
        return sx_err_setp(c->err, rc, p, -1, "unsupported: '%s' at %s: %s", kw, p, e.msg);
    if (rc == SX_ELIMIT)
        return sx_err_setp(c->err, rc, p, -1, "'%s' at %s is too complex: %s", kw, p, e.msg);
    if (rc)
        return sx_err_setp(c->err, SX_EFORMAT, p, -1, "invalid schema at %s: bad regex: %s", p,
                           e.msg);
    if (gc_keep_re(c, *out)) {
        sx_re_free(*out);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    return SX_OK;
}

static int listed_not(const json_t *nt);
static int not_values(gc_ctx *c, const json_t *nt, int types, json_t **out);

/* `not` of a string schema: pattern, lengths or format, perhaps type
 * string (no listed values, which listed_not takes). */
static int string_not(const json_t *nt)
{
    const char *k;
    json_t *v;
    int any = 0;
    if (!json_is_object(nt))
        return 0;
    json_object_foreach((json_t *)nt, k, v) {
        gc_kw id = gc_kw_id(k);
        if (!(gc_kw_flags(id) & GK_ASSERTION))
            continue;
        if (gc_kw_types(id) == GK_T_STR)
            any = 1;
        else if (id != GK_TYPE || !json_is_string(v) || strcmp(json_string_value(v), "string"))
            return 0;
    }
    return any;
}

static int inline_member(gc_ctx *c, const json_t *m, json_t **out, int depth);

/* *acc = *acc intersected with part, kept with the grammar (names_automaton's
 * step for every piece it joins). */
static int names_and(gc_ctx *c, const char *kw, sx_re **acc, const sx_re *part)
{
    sx_re *both;
    sx_error e;
    int rc = sx_re_intersect(*acc, part, NULL, &both, &e);
    if (rc)
        return sx_err_setp(c->err, rc, c->ptr, -1, "%s at %s: %s", kw, c->ptr, e.msg);
    if (gc_keep_re(c, both)) {
        sx_re_free(both);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    *acc = both;
    return SX_OK;
}

/* propertyNames as one automaton over key contents: the string keywords
 * (pattern, format, lengths, enum/const) intersected, less the names a
 * `not` of listed values leaves out. */
static int names_automaton_at(gc_ctx *c, const json_t *pn, const char *kw, int push,
                              sx_re **out);

static int names_automaton(gc_ctx *c, const json_t *pn, const char *kw, sx_re **out)
{
    return names_automaton_at(c, pn, kw, 1, out);
}

/* The string keywords of name schema pn (type, lengths, pattern,
 * format) as automata over key contents, intersected into *acc (NULL:
 * nothing yet). */
static int names_pieces(gc_ctx *c, const json_t *pn, const char *kw, sx_re **acc)
{
    int rc = SX_OK;
    sx_re *part = NULL;
    const json_t *ty = json_object_get(pn, "type");
    int types = ty ? (json_is_string(ty) ? type_bit(json_string_value(ty)) : 0) : T_STR;
    if (json_is_array(ty)) {
        size_t i;
        json_t *e2;
        json_array_foreach((json_t *)ty, i, e2)
            types |= json_is_string(e2) ? type_bit(json_string_value(e2)) : 0;
    }
    char src[96];
    const char *pieces[4] = {NULL, NULL, NULL, NULL}; /* lengths, pattern, format, within */
    sx_re_mode modes[4] = {SX_RE_FULL, SX_RE_SEARCH, SX_RE_FULL, SX_RE_FULL};
    if (!(types & T_STR)) {
        pieces[0] = "[]"; /* keys are strings: nothing passes */
    } else {
        int64_t mn = 0, mx = -1;
        if ((rc = get_count(c, pn, "minLength", &mn)) || (rc = get_count(c, pn, "maxLength", &mx)))
            return rc;
        if (mn > 0 || mx >= 0) {
            if (mx >= 0)
                snprintf(src, sizeof src, "^[\\s\\S]{%lld,%lld}$", (long long)mn, (long long)mx);
            else
                snprintf(src, sizeof src, "^[\\s\\S]{%lld,}$", (long long)mn);
            pieces[0] = src;
        }
        pieces[1] = json_string_value(json_object_get(pn, "pattern"));
        const char *fmt = json_string_value(json_object_get(pn, "format"));
        const sx_format_info *fi = NULL;
        if (fmt && gc_in_list(formats, fmt) && !sx_format_lookup(fmt, &fi) && fi->max_len >= 0) {
            /* the format's own length bound joins the length piece */
            if (mx < 0 || mx > fi->max_len)
                mx = fi->max_len;
            snprintf(src, sizeof src, "^[\\s\\S]{%lld,%lld}$", (long long)mn, (long long)mx);
            pieces[0] = src;
        }
        if (fmt && gc_in_list(formats, fmt) && sx_format_regex(fmt, &pieces[2]))
            return gc_unsupported(c, "format", "this format is not enforced");
        if (fi)
            pieces[3] = fi->within;
    }
    for (int i = 0; i < 4 && !rc; i++) {
        if (!pieces[i])
            continue;
        static const char *const piece_kw[4] = {"maxLength", "pattern", "format", "format"};
        rc = compile_key_regex(c, pieces[i], strlen(pieces[i]), modes[i],
                               types & T_STR ? piece_kw[i] : "type", &part);
        if (rc)
            break;
        if (!*acc)
            *acc = part;
        else if ((rc = names_and(c, kw, acc, part)))
            break;
    }
    return rc;
}

/* enum/const of name schema pn: the listed names, intersected into *acc. */
static int names_listed(gc_ctx *c, const json_t *pn, const char *kw, sx_re **acc)
{
    int rc = SX_OK;
    sx_re *part = NULL;
    sx_error e;
    const json_t *en = json_object_get(pn, "enum"), *cn = json_object_get(pn, "const");
    if (en || cn) {
        const char *lit[256];
        size_t nl = 0, i;
        json_t *x;
        if (cn && json_is_string(cn))
            lit[nl++] = json_string_value(cn);
        if (json_is_array(en))
            json_array_foreach((json_t *)en, i, x)
                if (json_is_string(x) && nl < 256 && !(cn && !json_equal(x, (json_t *)cn)))
                    lit[nl++] = json_string_value(x);
        if (json_is_array(en) && json_array_size(en) > 256) {
            rc = gc_unsupported(c, "enum", "more than 256 property names");
        } else if ((rc = sx_re_from_literals(lit, NULL, nl, NULL, &part, &e))) {
            rc = sx_err_set(c->err, rc, "%s enum: %s", kw, e.msg);
        } else if ((rc = gc_keep_re(c, part))) {
            sx_re_free(part);
        } else if (!*acc) {
            *acc = part;
        } else {
            rc = names_and(c, kw, acc, part);
        }
    }
    return rc;
}

/* `not` of name schema pn: the names it leaves out (of listed names or
 * of a string schema), taken out of *acc. */
static int names_not(gc_ctx *c, const json_t *pn, const char *kw, sx_re **acc)
{
    int rc = SX_OK;
    const json_t *pnot = json_object_get(pn, "not");
    if (pnot) {
        json_t *ex = NULL;
        sx_re *less = NULL;
        sx_re *sub = NULL;
        sx_error e2;
        if (!strcmp(kw, "not")) {
            rc = gc_unsupported(c, "not", "inside not");
        } else if (string_not(pnot)) {
            /* names that do not match a string schema */
            if (!(rc = names_automaton(c, pnot, "not", &sub)) &&
                (rc = sx_re_minus(*acc, sub, NULL, &less, &e2)))
                rc = sx_err_setp(c->err, rc, c->ptr, -1, "'not' at %s/not is too complex: %s",
                                 c->ptr, e2.msg);
            if (!rc && (rc = gc_keep_re(c, less)))
                sx_re_free(less);
            else if (!rc)
                *acc = less;
        } else if (!listed_not(pnot)) {
            rc = gc_unsupported(c, "not", "inside propertyNames: only not of listed names or of a pattern");
        } else if (!(rc = not_values(c, pnot, T_STR, &ex)) &&
                   !(rc = gc_minus_strings(c, *acc, ex, &less))) {
            if ((rc = gc_keep_re(c, less)))
                sx_re_free(less);
            else
                *acc = less;
        }
        json_decref(ex);
    }
    return rc;
}

/* push: the schema's pointer is c->ptr/kw (else c->ptr already, as for a
 * member of an allOf inside one) */
static int names_automaton_at(gc_ctx *c, const json_t *pn, const char *kw, int push,
                              sx_re **out)
{
    size_t old = push ? gc_ptr_push(c, kw) : strlen(c->ptr);
    int rc = SX_OK;
    sx_re *acc = NULL;
    *out = NULL;
    /* name schemas nest through allOf, not and $ref (a $ref back to an
     * enclosing one would recurse without end) */
    if (++c->depth > c->opts.max_depth) {
        rc = sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1, "schema nesting deeper than %d at %s",
                         c->opts.max_depth, c->ptr);
        goto done;
    }
    if (json_is_false(pn)) {
        rc = compile_key_regex(c, "[]", 2, SX_RE_FULL, kw, out);
        goto done;
    }
    if (json_is_true(pn)) {
        rc = compile_key_regex(c, "[\\s\\S]*", 7, SX_RE_FULL, kw, out);
        goto done;
    }
    if (!json_is_object(pn)) {
        rc = gc_invalid(c, NULL, "must be a schema");
        goto done;
    }
    if (json_is_string(json_object_get(pn, "$ref"))) {
        /* a referenced name schema: its target (with the siblings, from
         * 2019-09 on), inlined; the copy is again a name schema */
        json_t *in = NULL;
        const json_t *t = NULL;
        if (c->opts.draft7) {
            t = gc_resolve_ref(c, json_string_value(json_object_get(pn, "$ref")));
            if (!t)
                rc = gc_unsupported(c, "$ref", "inside propertyNames: not found");
            else if (!(in = json_is_object(t) ? gc_copy(t)
                                              : json_is_false(t) ? json_false() : json_object()))
                rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        } else {
            rc = inline_member(c, pn, &in, 0);
        }
        if (!rc && json_is_object(in) && json_object_get(in, "$ref"))
            rc = gc_unsupported(c, "$ref", "inside propertyNames: a chain of references");
        gc_ptr_pop(c, old); /* the copy stands where pn stood */
        if (!rc)
            rc = names_automaton(c, in, kw, out);
        json_decref(in);
        goto done;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)pn, k, v) {
        gc_kw id = gc_kw_id(k);
        /* the string keywords, and what combines them */
        if (gc_kw_types(id) == GK_T_STR || id == GK_TYPE || id == GK_ENUM || id == GK_CONST ||
            id == GK_NOT || id == GK_ALL_OF || !(gc_kw_flags(id) & GK_ASSERTION))
            continue;
        rc = gc_unsupported(c, k, !strcmp(kw, "not") ? "inside not of a string schema"
                                                      : "inside propertyNames");
        goto done;
    }
    rc = names_pieces(c, pn, kw, &acc);
    if (!rc)
        rc = names_listed(c, pn, kw, &acc);
    if (!rc && !acc)
        rc = compile_key_regex(c, "[\\s\\S]*", 7, SX_RE_FULL, kw, &acc);
    if (!rc)
        rc = names_not(c, pn, kw, &acc);
    /* allOf (two propertyNames merged): a name passes every member */
    const json_t *pall = json_object_get(pn, "allOf");
    if (!rc && pall && !json_is_array(pall))
        rc = gc_invalid(c, "allOf", "must be an array");
    for (size_t ai = 0; !rc && ai < json_array_size(pall); ai++) {
        sx_re *sub = NULL;
        size_t at = gc_ptr_push(c, "allOf");
        gc_ptr_pushi(c, ai);
        rc = names_automaton_at(c, json_array_get(pall, ai), kw, 0, &sub);
        gc_ptr_pop(c, at);
        if (!rc)
            rc = names_and(c, kw, &acc, sub);
        if (!rc && (c->name_states += sx_re_n_states(sub) + sx_re_n_states(acc)) >
                       GC_MAX_NAME_STATES)
            rc = sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1,
                             "%s at %s: the name schemas intersected in this schema need more "
                             "than %d automaton states in all",
                             kw, c->ptr, GC_MAX_NAME_STATES);
    }
    *out = acc;
done:
    c->depth--;
    gc_ptr_pop(c, old);
    return rc;
}

/* The object's property names into tmp (*np of them): the listed
 * properties first, in their written order, then the names under key
 * conditions (required, presence lists, forbidden lists, dependencies),
 * which get the additionalProperties schema; each gets its index (the
 * conditioned ones the 64 bits of the seen set). */
static int object_names(gc_ctx *c, const json_t *props, const json_t *req, const json_t *pres,
                        const json_t *const *forbid_lists, int n_forbid, json_t *dep_src,
                        const json_t *dr, prop_tmp *tmp, int *np)
{
    if (props) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)props, k, v)
            prop_add(tmp, np, k, v, 0);
    }
    /* names that must or may appear without their own schema get the
     * additionalProperties schema, tracked like the others */
    if (dep_src && !json_is_object(dep_src))
        return gc_invalid(c, dr ? "dependentRequired" : "dependencies", "must be an object");
    size_t i;
    json_t *e;
    json_array_foreach((json_t *)req, i, e) {
        if (!json_is_string(e))
            return gc_invalid(c, "required", "must hold strings");
        prop_add(tmp, np, json_string_value(e), NULL, 1);
    }
    size_t pi2;
    json_t *pl;
    json_array_foreach((json_t *)pres, pi2, pl)
        json_array_foreach(pl, i, e)
            prop_add(tmp, np, json_string_value(e), NULL, 1);
    for (int fi = 0; fi < n_forbid; fi++)
        json_array_foreach((json_t *)forbid_lists[fi], i, e) {
            if (!json_is_string(e))
                return gc_invalid(c, "not", "required must hold strings");
            prop_add(tmp, np, json_string_value(e), NULL, 1);
        }
    if (dep_src) {
        const char *k;
        json_t *v;
        json_object_foreach(dep_src, k, v) {
            if (!json_is_array(v))
                return gc_unsupported(c, dr ? "dependentRequired" : "dependencies",
                                      "schema dependencies are not enforced yet");
            prop_add(tmp, np, k, NULL, 1);
            json_array_foreach(v, i, e) {
                if (!json_is_string(e))
                    return gc_invalid(c, dr ? "dependentRequired" : "dependencies",
                                      "must hold strings");
                prop_add(tmp, np, json_string_value(e), NULL, 1);
            }
        }
    }
    /* names under key conditions take the 64 bits of the seen set; the
     * rest are optional and tracked by key hash at run time */
    int n_cond = 0, n_idx = 0;
    for (int k = 0; k < *np; k++)
        if (tmp[k].cond)
            tmp[k].index = n_cond++;
    if (n_cond > 64)
        return gc_unsupported(c, "required", "more than 64 properties under key conditions");
    for (int k = 0; k < *np; k++)
        if (!tmp[k].cond)
            tmp[k].index = n_cond + n_idx++;
    return SX_OK;
}

/* patternProperties pp (an object): each pattern's automaton over key
 * contents and its value schema's node, at most 16 (*npat of them). */
static int pattern_properties(gc_ctx *c, const json_t *pp, sx_re **pats, int32_t *pat_nodes,
                              const json_t **pat_schemas, int *npat)
{
    const char *k;
    json_t *v;
    int rc;
    size_t o1 = gc_ptr_push(c, "patternProperties");
    json_object_foreach((json_t *)pp, k, v) {
        if (*npat == 16) {
            gc_ptr_pop(c, o1);
            return gc_unsupported(c, "patternProperties", "more than 16 patterns");
        }
        size_t o2 = gc_ptr_push(c, k);
        rc = compile_key_regex(c, k, strlen(k), SX_RE_SEARCH, "patternProperties", &pats[*npat]);
        if (!rc)
            rc = gc_schema(c, v, &pat_nodes[*npat]);
        gc_ptr_pop(c, o2);
        if (rc) {
            gc_ptr_pop(c, o1);
            return rc;
        }
        pat_schemas[(*npat)++] = v;
    }
    gc_ptr_pop(c, o1);
    return SX_OK;
}

/* The value node of property t: its own schema and those of the patterns
 * its name matches, together; addl_node where none applies (-1: refused);
 * refused where propertyNames refuses the name. */
static int property_value(gc_ctx *c, const prop_tmp *t, const sx_re *names,
                          sx_re *const *pats, const json_t *const *pat_schemas, int npat,
                          int32_t addl_node, int32_t *node)
{
    int rc;
    /* a listed name still has to satisfy propertyNames, and the
     * patterns it matches apply to its value too */
    const char *nm = t->name;
    json_t *all = json_array();
    if (!all)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if (t->schema)
        json_array_append(all, (json_t *)t->schema);
    for (int pi = 0; pi < npat; pi++)
        if (sx_re_matches(pats[pi], nm, strlen(nm)))
            json_array_append(all, (json_t *)pat_schemas[pi]);
    if (names && !sx_re_matches(names, nm, strlen(nm))) {
        rc = empty_node(c, node);
    } else if (json_array_size(all) == 0) {
        rc = addl_node >= 0 ? (*node = addl_node, SX_OK) : empty_node(c, node);
    } else {
        size_t o1 = gc_ptr_push(c, t->schema ? "properties" : "patternProperties");
        size_t o2 = gc_ptr_push(c, nm);
        if (json_array_size(all) == 1) {
            rc = gc_schema(c, json_array_get(all, 0), node);
        } else {
            json_t *sch = json_pack("{s:O}", "allOf", all);
            rc = sch ? gc_schema(c, sch, node)
                     : sx_err_set(c->err, SX_ENOMEM, "out of memory");
            json_decref(sch);
        }
        gc_ptr_pop(c, o2);
        gc_ptr_pop(c, o1);
    }
    json_decref(all);
    return rc;
}

/* Object node id's key automaton, where propertyNames (names) or
 * patterns constrain the keys: over key contents, the np listed names of
 * tmp excluded from the additional keys. */
static int object_key_automaton(gc_ctx *c, int32_t id, const prop_tmp *tmp, int np,
                                const sx_re *names, sx_re *const *pats,
                                const int32_t *pat_nodes, const json_t *const *pat_schemas,
                                int npat, int32_t addl_node)
{
    int rc;
    /* the listed names, excluded from the additional keys */
    const char **lit = gc_alloc(c, (size_t)(np ? np : 1) * sizeof *lit);
    if (!lit)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    for (int k = 0; k < np; k++)
        lit[k] = tmp[k].name;
    sx_re *listed = NULL;
    sx_error le;
    if (np && sx_re_from_literals(lit, NULL, (size_t)np, NULL, &listed, &le))
        return sx_err_set(c->err, le.code, "property names: %s", le.msg);
    if (listed && gc_keep_re(c, listed)) {
        sx_re_free(listed);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    gr_strx *kx = NULL;
    int32_t *close = NULL;
    if ((rc = gc_key_automaton(c, names, listed, (const sx_re *const *)pats, pat_nodes, npat,
                               addl_node, pat_schemas, &kx, &close)))
        return rc;
    gr_node *n = &c->g->nodes[id];
    n->u.obj.keyx = kx;
    n->u.obj.close_node = close;
    return SX_OK;
}

/* Object node n's key conditions as bit sets over the seen set: the
 * presence lists of pres (NULL: none) and the n_forbid forbidden lists. */
static int object_key_conditions(gc_ctx *c, gr_node *n, prop_tmp *tmp, int np,
                                 const gc_pres *pres, const json_t *const *forbid_lists,
                                 int n_forbid)
{
    size_t i, pi2;
    json_t *e, *pl;
    if (pres) {
        n->u.obj.n_pres = (int)json_array_size(pres->lists);
        n->u.obj.pres_one = pres->one;
        n->u.obj.pres = gc_alloc(c, (size_t)n->u.obj.n_pres * sizeof *n->u.obj.pres);
        if (!n->u.obj.pres)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        json_array_foreach((json_t *)pres->lists, pi2, pl)
            json_array_foreach(pl, i, e)
                n->u.obj.pres[pi2] |= prop_bit(tmp, np, json_string_value(e));
    }
    for (int fi = 0; fi < n_forbid; fi++) {
        uint64_t bits = 0;
        json_array_foreach((json_t *)forbid_lists[fi], i, e)
            bits |= prop_bit(tmp, np, json_string_value(e));
        n->u.obj.forbid[n->u.obj.n_forbid++] = bits;
    }
    return SX_OK;
}

/* pres: the presence condition for this object (NULL: none); forbid_lists:
 * n_forbid `required` lists of a `not` (none of them all present). */
static int object_node(gc_ctx *c, const json_t *s, const gc_pres *pr,
                       const json_t *const *forbid_lists, int n_forbid, int32_t *node)
{
    enum { MAXP = 4096 };
    prop_tmp *tmp = NULL;
    int np = 0, rc;
    const json_t *props = json_object_get(s, "properties");
    const json_t *req = json_object_get(s, "required");
    const json_t *addl = json_object_get(s, "additionalProperties");
    const json_t *pp = json_object_get(s, "patternProperties");
    const json_t *pn = json_object_get(s, "propertyNames");
    const json_t *dr = json_object_get(s, "dependentRequired");
    const json_t *deps = json_object_get(s, "dependencies");
    const json_t *uneval = json_object_get(s, "unevaluatedProperties");
    const json_t *pres = pr ? pr->lists : NULL;
    int pres_one = pr ? pr->one : 0;
    if (pres && pres_one && json_object_get(s, "minProperties"))
        return gc_unsupported(c, "oneOf", "required-only branches together with minProperties");
    if (pp && !json_is_object(pp))
        return gc_invalid(c, "patternProperties", "must be an object");
    if (pp && json_object_size(pp) == 0)
        pp = NULL;
    if (pn && (json_is_true(pn) || (json_is_object(pn) && json_object_size(pn) == 0)))
        pn = NULL;
    if (json_object_get(s, "dependentSchemas"))
        return gc_unsupported(c, "dependentSchemas", NULL);
    if (!addl && uneval)
        addl = uneval;
    if (props && !json_is_object(props))
        return gc_invalid(c, "properties", "must be an object");
    if (req && !json_is_array(req))
        return gc_invalid(c, "required", "must be an array");
    json_t *dep_src = (json_t *)(dr ? dr : deps);
    size_t bound = names_bound(s, pres, forbid_lists, n_forbid, dep_src);
    if (bound > MAXP)
        return gc_unsupported(c, "properties", "more than 4096 property names");
    tmp = gc_alloc(c, (bound ? bound : 1) * sizeof *tmp);
    if (!tmp)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if ((rc = object_names(c, props, req, pres, forbid_lists, n_forbid, dep_src, dr, tmp, &np)))
        return rc;

    int32_t id, addl_node = -1;
    if (!addl || json_is_true(addl)) {
        if ((rc = any_node(c, NULL, &addl_node)))
            return rc;
    } else if (!json_is_false(addl)) {
        size_t old = gc_ptr_push(c, json_object_get(s, "additionalProperties")
                                        ? "additionalProperties"
                                        : "unevaluatedProperties");
        rc = gc_schema(c, addl, &addl_node);
        gc_ptr_pop(c, old);
        if (rc)
            return rc;
    }
    /* propertyNames and patternProperties: automata over key contents */
    sx_re *names = NULL, *pats[16];
    int32_t pat_nodes[16];
    const json_t *pat_schemas[16];
    int npat = 0;
    if (pn && (rc = names_automaton(c, pn, "propertyNames", &names)))
        return rc;
    if (pp && (rc = pattern_properties(c, pp, pats, pat_nodes, pat_schemas, &npat)))
        return rc;
    if ((rc = gc_new_node(c, GK_OBJECT, &id)))
        return rc;
    gr_prop *P = gc_alloc(c, (size_t)(np ? np : 1) * sizeof *P);
    uint64_t *dep = dep_src ? gc_alloc(c, 64 * sizeof *dep) : NULL;
    if (!P || (dep_src && !dep))
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    for (int k = 0; k < np; k++) {
        size_t klen;
        char *enc = gr_encode_string(tmp[k].name, strlen(tmp[k].name), &klen);
        uint8_t *kb = enc ? gc_alloc(c, klen) : NULL;
        if (!kb) {
            free(enc);
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        }
        memcpy(kb, enc, klen);
        free(enc);
        P[k].key = kb;
        P[k].key_len = (uint32_t)klen;
        P[k].index = tmp[k].index;
        P[k].hash = gr_key_hash(kb, klen);
        /* `properties` come first in tmp, in their written order */
        P[k].order = tmp[k].schema ? (uint16_t)k : GR_ORD_UNLISTED;
        rc = property_value(c, &tmp[k], names, pats, pat_schemas, npat, addl_node, &P[k].node);
        if (rc)
            return rc;
    }
    gr_node *n = &c->g->nodes[id];
    uint64_t required = 0;
    size_t i;
    json_t *e;
    json_array_foreach((json_t *)req, i, e)
        required |= prop_bit(tmp, np, json_string_value(e));
    if (dep_src) {
        const char *k;
        json_t *v;
        json_object_foreach(dep_src, k, v) {
            int at = tmp[prop_index(tmp, np, k)].index;
            json_array_foreach(v, i, e)
                dep[at] |= prop_bit(tmp, np, json_string_value(e));
        }
    }
    if ((names || npat) &&
        (rc = object_key_automaton(c, id, tmp, np, names, pats, pat_nodes, pat_schemas, npat,
                                   addl_node)))
        return rc;
    n = &c->g->nodes[id];
    qsort(P, (size_t)np, sizeof *P, cmp_prop);
    if (c->opts.prop_order && (rc = order_tables(c, P, np, id)))
        return rc;
    n = &c->g->nodes[id];
    n->u.obj.props = P;
    n->u.obj.n = (uint32_t)np;
    n->u.obj.required = required;
    n->u.obj.dep_req = dep;
    n->u.obj.additional = addl_node;
    n->u.obj.min_props = 0;
    n->u.obj.max_props = -1;
    if ((rc = object_key_conditions(c, n, tmp, np, pr, forbid_lists, n_forbid)))
        return rc;
    if ((rc = get_count(c, s, "minProperties", &n->u.obj.min_props)) ||
        (rc = get_count(c, s, "maxProperties", &n->u.obj.max_props)))
        return rc;
    *node = id;
    return SX_OK;
}

/* JSON equality of two literal texts (numbers by value). */
static int same_value(const gr_lit *a, const gr_lit *b)
{
    json_t *x = json_loadb((const char *)a->b, a->len, JSON_DECODE_ANY, NULL);
    json_t *y = json_loadb((const char *)b->b, b->len, JSON_DECODE_ANY, NULL);
    int eq = x && y &&
             (json_is_number(x) && json_is_number(y) ? json_number_value(x) == json_number_value(y)
                                                      : json_equal(x, y));
    json_decref(x);
    json_decref(y);
    return eq;
}

/* uniqueItems over listed values (enum/const of scalars, at most 64 of
 * them): each item uses up one value class, a bit in the frame.  Other
 * items are kept distinct by their value hashes (GR_UNIQ_HASH, checked
 * after analysis by gc_unique_check). */
static int unique_hashed(gc_ctx *c, int32_t id)
{
    char p[256];
    snprintf(p, sizeof p, "%s/uniqueItems", c->ptr);
    char *ptr = gc_alloc(c, strlen(p) + 1);
    if (!ptr)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    memcpy(ptr, p, strlen(p));
    c->g->nodes[id].u.arr.unique = GR_UNIQ_HASH;
    c->g->nodes[id].u.arr.unique_ptr = ptr;
    return SX_OK;
}

static int unique_classes(gc_ctx *c, int32_t id)
{
    gr_node *n = &c->g->nodes[id];
    int32_t it = n->u.arr.items;
    /* through single-branch alternatives ($ref chains), at most one step
     * per node: a chain that loops back ({"$ref": itself} through $defs,
     * found by the schema fuzzer) spun here for ever */
    for (int32_t steps = 0; it >= 0 && c->g->nodes[it].kind == GK_ALT &&
                            c->g->nodes[it].u.alt.n == 1 && steps <= c->g->n_nodes;
         steps++)
        it = c->g->nodes[it].u.alt.alts[0];
    if (n->u.arr.n_prefix || it < 0 || c->g->nodes[it].kind != GK_LITSET)
        return unique_hashed(c, id);
    const gr_node *ls = &c->g->nodes[it];
    uint8_t *cls = gc_alloc(c, ls->u.lit.n ? ls->u.lit.n : 1);
    if (!cls)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    int nc = 0;
    for (uint32_t i = 0; i < ls->u.lit.n; i++) {
        int found = -1;
        for (uint32_t j = 0; j < i && found < 0; j++)
            if (same_value(&ls->u.lit.lits[i], &ls->u.lit.lits[j]))
                found = cls[j];
        if (found < 0) {
            if (nc == 64)
                return unique_hashed(c, id);
            found = nc++;
        }
        cls[i] = (uint8_t)found;
    }
    n = &c->g->nodes[id];
    n->u.arr.items = it;
    n->u.arr.unique = GR_UNIQ_CLASS;
    n->u.arr.lit_class = cls;
    n->u.arr.n_classes = nc;
    /* each item takes a new value: no more items than values */
    if (n->u.arr.max_items < 0 || n->u.arr.max_items > nc)
        n->u.arr.max_items = nc;
    if (n->u.arr.min_items > nc)
        n->kind = GK_EMPTY;
    return SX_OK;
}

/* The contains constraints of s: its own and those gathered from allOf,
 * as {contains, minContains, maxContains} objects (a new array); those
 * that hold for every array (minContains 0, no maximum) are left out. */
static json_t *contains_list(const json_t *s)
{
    json_t *all = json_array();
    const json_t *more = json_object_get(s, GC_MORE_CONTAINS);
    if (!all)
        return NULL;
    if (json_object_get(s, "contains")) {
        json_t *e = json_pack("{s:O}", "contains", json_object_get(s, "contains"));
        if (e && json_object_get(s, "minContains"))
            json_object_set(e, "minContains", json_object_get(s, "minContains"));
        if (e && json_object_get(s, "maxContains"))
            json_object_set(e, "maxContains", json_object_get(s, "maxContains"));
        json_array_append_new(all, e);
    }
    if (json_is_array(more))
        json_array_extend(all, (json_t *)more);
    return all;
}

/* contains: every item is of one of the nodes ctag_node[S], S the set of
 * constraints it counts for: the items schema with those contains, and
 * `not` the others that have a maximum (so an item outside S never
 * matches them); the matcher counts per constraint.  minContains-only
 * constraints need no `not`: an item that matches but is not counted only
 * leaves the count low, and the interpretation that counts it exists too. */
static int contains_nodes(gc_ctx *c, const json_t *s, const json_t *more, int32_t items_node,
                          int32_t id)
{
    json_t *list = contains_list(s);
    if (!list)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    int rc = SX_OK, k = 0;
    json_t *keep[GR_MAX_CONTAINS];
    int64_t mn[GR_MAX_CONTAINS], mx[GR_MAX_CONTAINS];
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        int64_t a = 1, b = -1;
        if ((rc = get_count(c, e, "minContains", &a)) || (rc = get_count(c, e, "maxContains", &b)))
            goto out;
        if (a == 0 && b < 0)
            continue; /* every array has at least zero matches */
        if (a > 65534 || b > 65534) {
            rc = gc_unsupported(c, "minContains", "counts above 65534");
            goto out;
        }
        if (k == GR_MAX_CONTAINS) {
            rc = gc_unsupported(c, "contains", "more than 3 contains constraints on one array");
            goto out;
        }
        if (b >= 0 && a > b) {
            c->g->nodes[id].kind = GK_EMPTY; /* no count fits */
            goto out;
        }
        keep[k] = json_object_get(e, "contains");
        mn[k] = a;
        mx[k++] = b;
    }
    if (k == 0)
        goto out;
    gr_node *n = &c->g->nodes[id];
    if (n->u.arr.n_prefix) {
        rc = gc_unsupported(c, "contains", "together with prefixItems (tuple items)");
        goto out;
    }
    if (n->u.arr.unique) {
        rc = gc_unsupported(c, "contains", "together with uniqueItems");
        goto out;
    }
    if (k > 1 && n->u.arr.max_items >= 0) {
        rc = gc_unsupported(c, "contains", "several contains constraints together with maxItems");
        goto out;
    }
    for (int j = 0; j < k && k > 1; j++)
        if (mx[j] >= 0) {
            rc = gc_unsupported(c, "maxContains", "with several contains constraints on one array");
            goto out;
        }
    int any_max = 0;
    for (int j = 0; j < k; j++)
        any_max |= mx[j] >= 0;
    for (int S = 0; S < (1 << k) && !rc; S++) {
        int32_t tn = -1;
        if (S == 0 && !any_max) {
            tn = items_node;
        } else if (items_node < 0) {
            tn = -1;
        } else {
            json_t *parts = json_array();
            if (more && !json_is_true(more))
                json_array_append(parts, (json_t *)more);
            for (int j = 0; j < k; j++) {
                if (S >> j & 1)
                    json_array_append(parts, keep[j]);
                else if (mx[j] >= 0)
                    json_array_append_new(parts, json_pack("{s:O}", "not", keep[j]));
            }
            json_t *sch = json_array_size(parts) ? json_pack("{s:o}", "allOf", parts)
                                                 : (json_decref(parts), json_true());
            /* errors inside point into the contains subschema */
            size_t old = gc_ptr_push(c, "contains");
            rc = sch ? gc_schema(c, sch, &tn) : sx_err_set(c->err, SX_ENOMEM, "out of memory");
            gc_ptr_pop(c, old);
            json_decref(sch);
        }
        c->g->nodes[id].u.arr.ctag_node[S] = tn;
    }
    if (!rc) {
        n = &c->g->nodes[id];
        n->u.arr.n_cont = k;
        for (int j = 0; j < k; j++) {
            n->u.arr.cmin[j] = mn[j];
            n->u.arr.cmax[j] = mx[j];
        }
    }
out:
    json_decref(list);
    return rc;
}

static int array_node(gc_ctx *c, const json_t *s, int32_t *node)
{
    const json_t *items = json_object_get(s, "items");
    const json_t *prefix = json_object_get(s, "prefixItems");
    const json_t *more = NULL;
    const char *more_kw = "items";
    int rc;
    int unique = json_is_true(json_object_get(s, "uniqueItems"));
    if (json_is_array(items)) { /* draft-07 tuple form */
        prefix = items;
        more = json_object_get(s, "additionalItems");
        more_kw = "additionalItems";
    } else {
        more = items;
        if (prefix && !json_is_array(prefix))
            return gc_invalid(c, "prefixItems", "must be an array");
    }
    if (!more && json_object_get(s, "unevaluatedItems")) {
        more = json_object_get(s, "unevaluatedItems");
        more_kw = "unevaluatedItems";
    }
    size_t np = prefix ? json_array_size(prefix) : 0;
    int32_t id, items_node = -1;
    int32_t *pre = gc_alloc(c, (np ? np : 1) * sizeof *pre);
    if (!pre)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    size_t old = gc_ptr_push(c, json_is_array(items) ? "items" : "prefixItems");
    for (size_t i = 0; i < np; i++) {
        size_t o2 = gc_ptr_pushi(c, i);
        rc = gc_schema(c, json_array_get(prefix, i), &pre[i]);
        gc_ptr_pop(c, o2);
        if (rc) {
            gc_ptr_pop(c, old);
            return rc;
        }
    }
    gc_ptr_pop(c, old);
    if (!more || json_is_true(more)) {
        if ((rc = any_node(c, NULL, &items_node)))
            return rc;
    } else if (!json_is_false(more)) {
        old = gc_ptr_push(c, more_kw);
        rc = gc_schema(c, more, &items_node);
        gc_ptr_pop(c, old);
        if (rc)
            return rc;
    }
    if ((rc = gc_new_node(c, GK_ARRAY, &id)))
        return rc;
    gr_node *n = &c->g->nodes[id];
    n->u.arr.prefix = pre;
    n->u.arr.n_prefix = (uint32_t)np;
    n->u.arr.items = items_node;
    n->u.arr.min_items = 0;
    n->u.arr.max_items = -1;
    if ((rc = get_count(c, s, "minItems", &n->u.arr.min_items)) ||
        (rc = get_count(c, s, "maxItems", &n->u.arr.max_items)))
        return rc;
    if (unique && (rc = unique_classes(c, id)))
        return rc;
    if ((json_object_get(s, "contains") || json_object_get(s, GC_MORE_CONTAINS)) &&
        (rc = contains_nodes(c, s, more, items_node, id)))
        return rc;
    *node = id;
    return SX_OK;
}

static int any_node(gc_ctx *c, const gc_pres *pres, int32_t *node)
{
    if (c->any_built) {
        *node = c->any_node;
        return SX_OK;
    }
    /* the union of every type, with no constraints; built once */
    json_t *t = json_object();
    if (!t)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    int32_t id;
    int rc = gc_new_node(c, GK_ALT, &id);
    if (rc) {
        json_decref(t);
        return rc;
    }
    c->any_node = id;
    c->any_built = 1;
    int32_t alts[5];
    char *lits[3] = {strdup("null"), strdup("true"), strdup("false")};
    if (!lits[0] || !lits[1] || !lits[2])
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if (!rc)
        rc = lit_node(c, lits, 3, &alts[0]);
    else
        for (int i = 0; i < 3; i++)
            free(lits[i]);
    if (!rc)
        rc = number_node(c, t, 0, NULL, &alts[1]);
    if (!rc)
        rc = string_node(c, t, NULL, NULL, &alts[2]);
    if (!rc)
        rc = object_node(c, t, pres, NULL, 0, &alts[3]);
    if (!rc)
        rc = array_node(c, t, &alts[4]);
    json_decref(t);
    if (rc)
        return rc;
    int32_t *a = gc_alloc(c, sizeof alts);
    if (!a)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    memcpy(a, alts, sizeof alts);
    c->g->nodes[id].u.alt.alts = a;
    c->g->nodes[id].u.alt.n = 5;
    *node = id;
    return SX_OK;
}

/* ---- enum / const ------------------------------------------------------ */

static int value_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_NULL: return T_NULL;
    case JSON_TRUE:
    case JSON_FALSE: return T_BOOL;
    case JSON_INTEGER: return T_INT | T_NUM;
    case JSON_REAL: return json_real_value(v) == floor(json_real_value(v)) ? T_INT | T_NUM : T_NUM;
    case JSON_STRING: return T_STR;
    case JSON_OBJECT: return T_OBJ;
    case JSON_ARRAY: return T_ARR;
    }
    return 0;
}

static int const_node(gc_ctx *c, const json_t *v, int32_t *node);

static int const_container(gc_ctx *c, const json_t *v, int32_t *node)
{
    /* an exact object or array: every key required, nothing else */
    json_t *s = json_object();
    int rc = SX_OK;
    if (!s)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if (json_is_object(v)) {
        json_t *props = json_object(), *req = json_array();
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            json_object_set_new(props, k, json_pack("{s:O}", "const", x));
            json_array_append_new(req, json_string(k));
        }
        json_object_set_new(s, "type", json_string("object"));
        json_object_set_new(s, "properties", props);
        json_object_set_new(s, "required", req);
        json_object_set_new(s, "additionalProperties", json_false());
    } else {
        json_t *pre = json_array();
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x)
            json_array_append_new(pre, json_pack("{s:O}", "const", x));
        json_object_set_new(s, "type", json_string("array"));
        json_object_set_new(s, "prefixItems", pre);
        json_object_set_new(s, "items", json_false());
        json_object_set_new(s, "minItems", json_integer((json_int_t)json_array_size(v)));
    }
    rc = gc_schema(c, s, node);
    json_decref(s);
    return rc;
}

static int const_node(gc_ctx *c, const json_t *v, int32_t *node)
{
    if (json_is_object(v) || json_is_array(v))
        return const_container(c, v, node);
    char *texts[4];
    int n = 0, rc = gr_spellings(v, texts, &n, 4);
    if (rc) {
        for (int i = 0; i < n; i++)
            free(texts[i]);
        return sx_err_set(c->err, rc, "cannot spell constant");
    }
    return lit_node(c, texts, n, node);
}

/* Keywords besides type/enum/const that would further restrict enum values;
 * filtering by them needs the validator, so refuse rather than loosen. */
static const char *enum_sibling(const json_t *s)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        gc_kw id = gc_kw_id(k);
        if (id == GK_TYPE || id == GK_ENUM || id == GK_CONST)
            continue;
        if (gc_kw_flags(id) & GK_ASSERTION)
            return k;
    }
    return NULL;
}

static int enum_node(gc_ctx *c, const json_t *s, int types, int32_t *node)
{
    const json_t *en = json_object_get(s, "enum");
    const json_t *cn = json_object_get(s, "const");
    const char *sib = enum_sibling(s);
    int rc;
    sx_validator *filter = NULL;
    if (sib) {
        /* the other keywords filter the listed values: the validator
         * decides each one exactly */
        json_t *rest = gc_copy(s);
        sx_error ve;
        if (!rest)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        json_object_del(rest, "enum");
        json_object_del(rest, "const");
        if (gc_externalise(rest, 0)) { /* the validator knows no internal keyword */
            json_decref(rest);
            return gc_unsupported(c, sib, "combined with enum/const");
        }
        char *txt = json_dumps(rest, JSON_COMPACT);
        int has_ref = !txt || strstr(txt, "\"$ref\"") != NULL;
        free(txt);
        rc = has_ref ? SX_EUNSUPPORTED : sx_val_compile(rest, NULL, &filter, &ve);
        json_decref(rest);
        if (rc)
            return gc_unsupported(c, sib, "combined with enum/const");
    }
    if (en && !json_is_array(en)) {
        sx_val_free(filter);
        return gc_invalid(c, "enum", "must be an array");
    }
    json_t *vals = json_array();
    if (!vals) {
        sx_val_free(filter);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    if (cn) {
        json_array_append(vals, (json_t *)cn);
    } else {
        size_t i;
        json_t *v;
        json_array_foreach((json_t *)en, i, v)
            json_array_append(vals, v);
    }
    if (cn && en) {
        /* both: the const value, only if the enum has it */
        int found = 0;
        size_t i;
        json_t *v;
        json_array_foreach((json_t *)en, i, v)
            found |= gc_value_equal(v, cn);
        if (!found)
            json_array_clear(vals);
    }
    size_t nv = json_array_size(vals);
    char **texts = malloc((nv * 2 + 1) * sizeof *texts);
    int32_t *alts = malloc((nv + 1) * sizeof *alts);
    int nt = 0, na = 0;
    rc = (!texts || !alts) ? sx_err_set(c->err, SX_ENOMEM, "out of memory") : SX_OK;
    for (size_t i = 0; i < nv && !rc; i++) {
        const json_t *v = json_array_get(vals, i);
        int vt = value_type(v), ok = 1;
        /* integer-valued reals satisfy "integer"; plain reals do not */
        if (!(vt & types))
            continue;
        if (filter && (sx_val_validate(filter, v, &ok, NULL) || !ok))
            continue;
        if (json_is_object(v) || json_is_array(v)) {
            /* nested numbers are spelled both ways, which draft-04's
             * integer type tells apart */
            if (filter && c->draft4 && gc_has_integral(v)) {
                rc = gc_unsupported(c, sib, "draft-04 integers inside listed values");
                break;
            }
            rc = const_node(c, v, &alts[na]);
            if (!rc)
                na++;
            continue;
        }
        int k = 0;
        char *sp[4];
        rc = gr_spellings(v, sp, &k, 4);
        if (rc) {
            for (int j = 0; j < k; j++)
                free(sp[j]);
            rc = gc_invalid(c, "enum", "cannot spell value %zu", i);
            break;
        }
        for (int j = 0; j < k; j++) {
            /* with "integer" only, an integral real keeps both spellings --
             * except in draft-04, where 1.0 is not an integer */
            int keep = !(c->draft4 && json_is_number(v) && !(types & T_NUM) &&
                         strpbrk(sp[j], ".eE"));
            if (keep && filter && c->draft4 && json_is_number(v)) {
                json_t *back = json_loads(sp[j], JSON_DECODE_ANY, NULL);
                keep = back && !sx_val_validate(filter, back, &ok, NULL) && ok;
                json_decref(back);
            }
            if (keep)
                texts[nt++] = sp[j];
            else
                free(sp[j]);
        }
    }
    if (!rc && nt)
        rc = lit_node(c, texts, nt, &alts[na++]);
    else
        for (int i = 0; i < nt; i++)
            free(texts[i]);
    if (!rc)
        rc = alt_node(c, alts, na, node);
    free(texts);
    free(alts);
    json_decref(vals);
    sx_val_free(filter);
    return rc;
}

/* ---- combinators -------------------------------------------------------- */

/* schema_types' memo: the answer per schema object of one call, so that
 * $refs met again (recursive schemas: d0 = allOf [$ref d0, oneOf [$ref d0,
 * ...]]) are looked at once -- O(the schema objects reachable) per call,
 * where the walk unfolded them 32 deep, exponentially.  A schema met again
 * while its own answer is pending (a cycle) admits T_ALL, as the depth cut
 * said: wider, so the disjointness test stays safe. */
typedef struct types_memo {
    const json_t **key;
    int *val;   /* -1: pending, -2: new */
    size_t cap; /* a power of two; 0 = no memo (out of memory) */
    size_t n;
} types_memo;

static size_t types_hash(const json_t *s, size_t cap)
{
    return (size_t)(((uintptr_t)s >> 4) * 0x9E3779B97F4A7C15ULL) & (cap - 1);
}

static int *types_slot(types_memo *m, const json_t *s)
{
    if (!m->cap)
        return NULL;
    if (2 * (m->n + 1) > m->cap) {
        types_memo b = {calloc(2 * m->cap, sizeof *b.key), calloc(2 * m->cap, sizeof *b.val),
                        2 * m->cap, 0};
        if (!b.key || !b.val) {
            free(b.key);
            free(b.val);
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t h = types_hash(m->key[i], b.cap);
                while (b.key[h])
                    h = (h + 1) & (b.cap - 1);
                b.key[h] = m->key[i];
                b.val[h] = m->val[i];
                b.n++;
            }
        free(m->key);
        free(m->val);
        *m = b;
    }
    size_t h = types_hash(s, m->cap);
    while (m->key[h] && m->key[h] != s)
        h = (h + 1) & (m->cap - 1);
    if (!m->key[h]) {
        m->key[h] = s;
        m->val[h] = -2;
        m->n++;
    }
    return &m->val[h];
}

static int schema_types_(gc_ctx *c, const json_t *s, int depth, types_memo *m);

/* Types a schema can possibly admit (for the oneOf disjointness test). */
static int schema_types(gc_ctx *c, const json_t *s, int depth)
{
    types_memo m = {calloc(64, sizeof *m.key), calloc(64, sizeof *m.val), 64, 0};
    if (!m.key || !m.val)
        m.cap = 0;
    int t = schema_types_(c, s, depth, &m);
    free(m.key);
    free(m.val);
    return t;
}

static int schema_types_(gc_ctx *c, const json_t *s, int depth, types_memo *m)
{
    if (depth > 32)
        return T_ALL;
    if (json_is_false(s))
        return 0;
    if (!json_is_object(s))
        return T_ALL;
    int *slot = types_slot(m, s);
    if (slot && *slot != -2)
        return *slot == -1 ? T_ALL : *slot;
    if (slot)
        *slot = -1;
    int t = T_ALL;
    const json_t *ty = json_object_get(s, "type");
    if (json_is_string(ty)) {
        t = type_bit(json_string_value(ty));
    } else if (json_is_array(ty)) {
        t = 0;
        size_t i;
        json_t *e;
        json_array_foreach((json_t *)ty, i, e)
            if (json_is_string(e))
                t |= type_bit(json_string_value(e));
    }
    if (t & T_NUM)
        t |= T_INT;
    const json_t *cn = json_object_get(s, "const"), *en = json_object_get(s, "enum");
    if (cn)
        t &= value_type(cn);
    if (json_is_array(en)) {
        int et = 0;
        size_t i;
        json_t *e;
        json_array_foreach((json_t *)en, i, e)
            et |= value_type(e);
        t &= et;
    }
    const char *ref = json_string_value(json_object_get(s, "$ref"));
    if (ref) {
        const json_t *tg = gc_resolve_ref(c, ref);
        if (tg)
            t &= schema_types_(c, tg, depth + 1, m);
    }
    /* applicators: a union for anyOf/oneOf, an intersection for allOf */
    static const char *const unions[] = {"anyOf", "oneOf"};
    for (int u = 0; u < 2; u++) {
        const json_t *alts = json_object_get(s, unions[u]);
        if (!json_is_array(alts))
            continue;
        int ut = 0;
        size_t i;
        json_t *e;
        json_array_foreach((json_t *)alts, i, e)
            ut |= schema_types_(c, e, depth + 1, m);
        t &= ut;
    }
    const json_t *all = json_object_get(s, "allOf");
    if (json_is_array(all)) {
        size_t i;
        json_t *e;
        json_array_foreach((json_t *)all, i, e)
            t &= schema_types_(c, e, depth + 1, m);
    }
    /* the slot may have moved (the table grew): look it up again */
    if (slot && (slot = types_slot(m, s)))
        *slot = t;
    return t;
}

static json_t *schema_values_(gc_ctx *c, const json_t *s, int depth);

/* vals less the strings that s's own pattern refuses (a narrower, still
 * complete list of what s admits).  Takes vals. */
static json_t *pattern_filter(const json_t *s, json_t *vals)
{
    const json_t *pat = json_is_object(s) ? json_object_get(s, "pattern") : NULL;
    sx_re *re = NULL;
    if (!vals || !json_is_string(pat) ||
        sx_re_compile(json_string_value(pat), json_string_length(pat), SX_RE_SEARCH, NULL, &re,
                      NULL))
        return vals;
    json_t *keep = json_array(), *x;
    size_t i;
    json_array_foreach(vals, i, x)
        if ((!json_is_string(x) ||
             sx_re_matches(re, json_string_value(x), json_string_length(x))) &&
            json_array_append(keep, x)) {
            json_decref(keep); /* out of memory: unbounded, never a part */
            keep = NULL;
            break;
        }
    sx_re_free(re);
    json_decref(vals);
    return keep;
}

/* The finite set of values a schema admits, if it says so through
 * enum/const (directly, through $ref or allOf; strings its patterns refuse
 * left out); NULL when unbounded.  Returns a new array. */
static json_t *schema_values(gc_ctx *c, const json_t *s, int depth)
{
    json_t *v = pattern_filter(s, schema_values_(c, s, depth));
    const json_t *all = json_is_object(s) ? json_object_get(s, "allOf") : NULL;
    size_t i;
    json_t *e;
    if (v && json_is_array(all))
        json_array_foreach((json_t *)all, i, e)
            v = pattern_filter(e, v);
    return v;
}

static json_t *schema_values_(gc_ctx *c, const json_t *s, int depth)
{
    if (depth > 16 || !json_is_object(s))
        return NULL;
    const json_t *cn = json_object_get(s, "const"), *en = json_object_get(s, "enum");
    if (cn)
        return json_pack("[O]", cn);
    if (json_is_array(en))
        return gc_copy(en);
    const char *ref = json_string_value(json_object_get(s, "$ref"));
    if (ref) {
        const json_t *tg = gc_resolve_ref(c, ref);
        if (tg)
            return schema_values(c, tg, depth + 1);
    }
    /* allOf: the values every listing member admits */
    const json_t *all = json_object_get(s, "allOf");
    json_t *acc = NULL;
    if (json_is_array(all)) {
        size_t i;
        json_t *e;
        json_array_foreach((json_t *)all, i, e) {
            json_t *v = schema_values(c, e, depth + 1);
            if (!v)
                continue;
            if (acc) {
                json_t *keep = json_array();
                size_t a, b;
                json_t *x, *y;
                json_array_foreach(acc, a, x)
                    json_array_foreach(v, b, y)
                        if (gc_value_equal(x, y)) {
                            if (keep && json_array_append(keep, x)) {
                                json_decref(keep);
                                keep = NULL;
                            }
                            break;
                        }
                json_decref(acc);
                json_decref(v);
                if (!keep)
                    return NULL; /* out of memory: unbounded, never a part */
                v = keep;
            }
            acc = v;
        }
    }
    return acc;
}

/* Two schemas whose enum/const value sets share nothing (1 and 1.0 are
 * one value). */
static int lists_disjoint(const json_t *va, const json_t *vb)
{
    int disjoint = va && vb;
    size_t i, j;
    json_t *x, *y;
    if (disjoint)
        json_array_foreach((json_t *)va, i, x)
            json_array_foreach((json_t *)vb, j, y)
                if (gc_value_equal(x, y))
                    disjoint = 0;
    return disjoint;
}

static int values_disjoint(gc_ctx *c, const json_t *a, const json_t *b)
{
    json_t *va = schema_values(c, a, 0), *vb = schema_values(c, b, 0);
    int disjoint = lists_disjoint(va, vb);
    json_decref(va);
    json_decref(vb);
    return disjoint;
}

/* No object satisfies both: a requires a key that b forbids, or whose
 * listed values b's listing of it does not share. */
static int key_excludes(gc_ctx *c, const json_t *a, const json_t *b)
{
    const json_t *ra = json_object_get(a, "required"), *pa = json_object_get(a, "properties");
    const json_t *pb = json_object_get(b, "properties"), *ab = json_object_get(b, "additionalProperties");
    size_t i;
    json_t *e;
    if (!json_is_array(ra))
        return 0;
    json_array_foreach((json_t *)ra, i, e) {
        if (!json_is_string(e))
            continue;
        const char *k = json_string_value(e);
        const json_t *vb = json_is_object(pb) ? json_object_get(pb, k) : NULL;
        const json_t *va = json_is_object(pa) ? json_object_get(pa, k) : NULL;
        if (!vb && json_is_false(ab) && !json_object_get(b, "patternProperties"))
            return 1; /* b admits no such key */
        if (vb && json_is_false(vb))
            return 1;
        if (va && vb && values_disjoint(c, va, vb))
            return 1;
    }
    return 0;
}

static int keyed_disjoint(gc_ctx *c, const json_t *a, const json_t *b, int ta, int tb)
{
    /* non-objects satisfy every key rule: they must be excluded by type */
    if (ta & tb & ~T_OBJ)
        return 0;
    return key_excludes(c, a, b) || key_excludes(c, b, a);
}

/* The integer/number overlap counts: 1 is both. */
static int types_overlap(int a, int b)
{
    int na = (a & T_NUM) ? (a | T_INT) : a, nb = (b & T_NUM) ? (b | T_INT) : b;
    if ((na & T_INT) && (nb & T_INT))
        return 1;
    return (na & nb & ~(T_INT | T_NUM)) != 0 || ((na & T_NUM) && (nb & T_NUM));
}

/* unevaluatedProperties beside a $ref, applied to the merged schema m:
 * where m has additionalProperties every property is already evaluated
 * (the keyword is void); without applicators the properties nobody
 * evaluated are exactly m's additional ones. */
static int unevaluated_after_ref(gc_ctx *c, json_t *m, json_t *up)
{
    if (json_object_get(m, "additionalProperties"))
        return SX_OK;
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v)
        if (gc_kw_flags(gc_kw_id(k)) & GK_APPLICATOR)
            return gc_unsupported(c, "unevaluatedProperties",
                                  "beside a $ref whose target has applicators");
    if (json_object_set(m, "additionalProperties", up))
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    return SX_OK;
}

/* Resolves a top-level $ref of an allOf/anyOf member into a fresh copy of
 * its target (merged with the member's other keywords). */
static int inline_member(gc_ctx *c, const json_t *m, json_t **out, int depth)
{
    if (depth > 16)
        return gc_unsupported(c, "$ref", "reference chain too deep to merge");
    if (json_is_boolean(m)) {
        *out = json_is_true(m) ? json_object() : json_pack("{s:[]}", "enum");
        return *out ? SX_OK : sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    if (!json_is_object(m))
        return gc_invalid(c, NULL, "subschema must be an object or a boolean");
    const char *ref = json_string_value(json_object_get(m, "$ref"));
    if (!ref) {
        *out = gc_copy(m);
        return *out ? SX_OK : sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    const json_t *t = gc_resolve_ref(c, ref);
    if (!t)
        return sx_err_setp(c->err, SX_ENOTFOUND, c->ptr, -1, "unresolvable $ref '%s' at %s", ref,
                           c->ptr);
    json_t *base, *local = NULL;
    int rc = inline_member(c, t, &base, depth + 1);
    if (rc)
        return rc;
    /* the target's unevaluated* do not see the siblings of the $ref */
    if ((rc = gc_localise_unevaluated(c, base, &local))) {
        json_decref(base);
        return rc;
    }
    if (local) {
        json_decref(base);
        base = local;
    }
    json_t *rest = gc_copy(m);
    json_object_del(rest, "$ref");
    /* the siblings' unevaluatedProperties see what the target evaluates */
    json_t *up = json_incref(json_object_get(rest, "unevaluatedProperties"));
    if (up && json_is_true(up)) {
        json_decref(up);
        up = NULL;
    }
    json_object_del(rest, "unevaluatedProperties");
    rc = gc_merge(c, base, rest);
    json_decref(rest);
    if (!rc && up)
        rc = unevaluated_after_ref(c, base, up);
    json_decref(up);
    if (rc) {
        json_decref(base);
        return rc;
    }
    *out = base;
    return SX_OK;
}

/* What a failed attempt at a schema must leave as it found it: the nodes
 * built for it are unreachable from what came before, and the compiler's
 * state goes back to where the attempt began. */
typedef struct gc_mark {
    int32_t n_nodes, any_node;
    int any_built, depth;
    gc_ref *refs;
    size_t plen;
} gc_mark;

static void mark_save(const gc_ctx *c, gc_mark *m)
{
    m->n_nodes = c->g->n_nodes;
    m->any_node = c->any_node;
    m->any_built = c->any_built;
    m->depth = c->depth;
    m->refs = c->refs;
    m->plen = strlen(c->ptr);
}

static void mark_restore(gc_ctx *c, const gc_mark *m)
{
    c->g->n_nodes = m->n_nodes;
    c->any_node = m->any_node;
    c->any_built = m->any_built;
    c->depth = m->depth;
    gc_refs_cut(c, m->refs);
    c->ptr[m->plen] = '\0';
}

/* oneOf whose branches may overlap, as the anyOf of "branch i and not any
 * other": disjoint by construction, and exact wherever each `not` is (the
 * negations go through the same exact paths as a written `not`).  When
 * some part cannot be compiled exactly, the attempt is undone and the
 * original refusal stands -- never a looser grammar. */
static int exactly_one(gc_ctx *c, const json_t *s, const json_t *alts, const char *why,
                       const gc_pres *pres, int32_t *node)
{
    enum { MAX_BRANCHES = 6 };
    size_t n = json_array_size(alts);
    if (n > MAX_BRANCHES)
        return gc_unsupported(c, "oneOf", why);
    json_t *base = gc_copy(s), *any = json_array();
    int rc = base && any ? SX_OK : SX_ENOMEM;
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *all = json_array();
        if (!all || json_array_append(all, json_array_get(alts, i))) {
            json_decref(all);
            rc = SX_ENOMEM;
            break;
        }
        for (size_t j = 0; j < n && !rc; j++)
            if (j != i && json_array_append_new(all, json_pack("{s:O}", "not",
                                                                  json_array_get(alts, j))))
                rc = SX_ENOMEM;
        if (!rc && json_array_append_new(any, json_pack("{s:o}", "allOf", all)))
            rc = SX_ENOMEM;
    }
    if (rc) {
        json_decref(base);
        json_decref(any);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    json_object_del(base, "oneOf");
    json_object_set_new(base, "anyOf", any);
    gc_mark mark;
    mark_save(c, &mark);
    rc = schema_at(c, base, pres, node);
    json_decref(base);
    if (rc == SX_EUNSUPPORTED || rc == SX_ELIMIT) {
        mark_restore(c, &mark);
        sx_err_clear(c->err);
        return gc_unsupported(c, "oneOf", why);
    }
    return rc;
}

static int pair_disjoint(gc_ctx *c, const json_t *a, const json_t *b, int ta, int tb)
{
    if (ta < 0)
        ta = schema_types(c, a, 0);
    if (tb < 0)
        tb = schema_types(c, b, 0);
    return !types_overlap(ta, tb) || values_disjoint(c, a, b) || keyed_disjoint(c, a, b, ta, tb);
}

/* Branch b as the value must meet it: with the keywords beside the oneOf
 * and its allOf members merged in (exact merges only), so that a key the
 * parent requires or an enum an allOf member lists tells branches apart.
 * For the disjointness tests only; a new value, b's copy when a merge
 * fails. */
static json_t *effective_branch(gc_ctx *c, const json_t *s, const json_t *b)
{
    json_t *e = gc_copy(s);
    if (!e || !json_is_object(b))
        goto plain;
    json_object_del(e, "oneOf");
    if (gc_merge(c, e, b))
        goto plain;
    for (int round = 0; round < 4; round++) {
        json_t *all = json_incref(json_object_get(e, "allOf"));
        if (!json_is_array(all)) {
            json_decref(all);
            break;
        }
        json_object_del(e, "allOf");
        size_t i;
        json_t *m;
        int bad = 0;
        json_array_foreach(all, i, m) {
            json_t *im = NULL;
            bad = bad || inline_member(c, m, &im, 0) || gc_merge(c, e, im);
            json_decref(im);
        }
        json_decref(all);
        if (bad)
            goto plain;
    }
    return e;
plain:
    json_decref(e);
    sx_err_clear(c->err);
    return gc_copy(b);
}

/* Overlapping oneOf: first split by type (gr_oneof.c), exact where it
 * decides every type; else the negations of exactly_one. */
static int split_or_negate(gc_ctx *c, const json_t *s, const json_t *alts, const char *why,
                           const gc_pres *pres, int32_t *node)
{
    size_t n = json_array_size(alts);
    json_t **br = calloc(n, sizeof *br), *split = NULL;
    int *bt = calloc(n, sizeof *bt);
    int rc = br && bt ? SX_OK : SX_ENOMEM, tp = schema_types(c, s, 0);
    json_t **eff = calloc(n, sizeof *eff);
    if (!eff)
        rc = SX_ENOMEM;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = inline_member(c, json_array_get(alts, i), &br[i], 0);
        if (!rc)
            bt[i] = schema_types(c, br[i], 0) & tp;
        if (!rc)
            eff[i] = effective_branch(c, s, br[i]);
    }
    if (!rc)
        rc = gc_oneof_by_type(c, s, br, eff, bt, n, pair_disjoint, &split);
    for (size_t i = 0; br && i < n; i++) {
        json_decref(br[i]);
        if (eff)
            json_decref(eff[i]);
    }
    free(br);
    free(eff);
    free(bt);
    if (rc == SX_ENOMEM)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if (rc || !split) {
        json_decref(split);
        sx_err_clear(c->err);
        return exactly_one(c, s, alts, why, pres, node);
    }
    gc_mark mark;
    mark_save(c, &mark);
    rc = schema_at(c, split, pres, node);
    json_decref(split);
    if (rc && rc != SX_ENOMEM) { /* the negations may still do it */
        mark_restore(c, &mark);
        sx_err_clear(c->err);
        return exactly_one(c, s, alts, why, pres, node);
    }
    return rc;
}

static int compile_alternatives(gc_ctx *c, const json_t *s, const char *kw,
                                const gc_pres *outer_pres, int32_t *node)
{
    const json_t *alts = json_object_get(s, kw);
    if (!json_is_array(alts) || json_array_size(alts) == 0)
        return gc_invalid(c, kw, "must be a non-empty array");
    size_t n = json_array_size(alts);
    /* a presence condition of an enclosing oneOf/anyOf (outer_pres) is
     * still waiting for this schema's object: every branch carries it */
    /* branches that only list required keys: a condition on which keys
     * the object has, tracked exactly by the object itself */
    int presence = n <= 16, typed = 0, untyped = 0;
    for (size_t i = 0; i < n && presence; i++) {
        const json_t *b = json_array_get(alts, i);
        const char *bk;
        json_t *bv;
        if (!json_is_object(b) || !json_is_array(json_object_get(b, "required"))) {
            presence = 0;
            break;
        }
        json_object_foreach((json_t *)b, bk, bv) {
            if (!strcmp(bk, "required")) {
                size_t ri;
                json_t *re;
                json_array_foreach(bv, ri, re)
                    if (!json_is_string(re))
                        presence = 0;
            } else if (!strcmp(bk, "type") && json_is_string(bv) &&
                       !strcmp(json_string_value(bv), "object")) {
                typed++;
            } else if (gc_is_assertion(bk)) {
                presence = 0;
            }
        }
        untyped += !json_object_get(b, "type");
    }
    if (presence && (typed == 0 || untyped == 0) && outer_pres)
        return gc_unsupported(c, kw, "required-only branches under another anyOf/oneOf of "
                                     "required lists");
    if (presence && (typed == 0 || untyped == 0)) {
        json_t *base = gc_copy(s), *lists = json_array();
        int one = !strcmp(kw, "oneOf"), rc;
        json_object_del(base, kw);
        for (size_t i = 0; i < n; i++)
            json_array_append(lists, json_object_get(json_array_get(alts, i), "required"));
        /* non-objects satisfy every untyped branch: fine for anyOf, too
         * many for oneOf; typed branches refuse them */
        rc = SX_OK;
        if (typed || (one && n >= 2)) {
            json_t *obj = json_pack("{s:s}", "type", "object");
            rc = gc_merge(c, base, obj);
            json_decref(obj);
        }
        if (!rc) {
            gc_pres p = {lists, one};
            rc = schema_at(c, base, lists ? &p : NULL, node);
        }
        json_decref(lists);
        json_decref(base);
        return rc;
    }
    if (!strcmp(kw, "oneOf")) {
        /* oneOf is anyOf when no value can satisfy two branches; each
         * branch is inlined and typed once (the parent's own type keyword
         * narrows them all), its values listed when a pair first needs
         * them, not once per pair */
        json_t **in = calloc(n, sizeof *in), **vals = calloc(n, sizeof *vals);
        int *ty = calloc(n, sizeof *ty);
        char *listed = calloc(n, 1);
        int tp = schema_types(c, s, 0), apart = 1;
        size_t bi = 0, bj = 0;
        if (!in || !vals || !ty || !listed)
            apart = -1;
        for (size_t i = 0; i < n && apart > 0; i++) {
            if (inline_member(c, json_array_get(alts, i), &in[i], 0)) {
                json_decref(in[i]);
                in[i] = NULL; /* may match anything: apart from no branch */
            } else {
                ty[i] = schema_types(c, in[i], 0) & tp;
            }
            sx_err_clear(c->err);
        }
        for (size_t i = 0; i < n && apart > 0; i++)
            for (size_t j = i + 1; j < n && apart > 0; j++) {
                int disjoint = 0;
                if (in[i] && in[j]) {
                    disjoint = !types_overlap(ty[i], ty[j]);
                    if (!disjoint) {
                        size_t b[2] = {i, j};
                        for (int e = 0; e < 2; e++)
                            if (!listed[b[e]]) {
                                vals[b[e]] = schema_values(c, in[b[e]], 0);
                                listed[b[e]] = 1;
                            }
                        disjoint = lists_disjoint(vals[i], vals[j]) ||
                                   keyed_disjoint(c, in[i], in[j], ty[i], ty[j]);
                    }
                }
                sx_err_clear(c->err);
                if (!disjoint) {
                    apart = 0;
                    bi = i;
                    bj = j;
                }
            }
        for (size_t i = 0; i < n && in && vals; i++) {
            json_decref(in[i]);
            json_decref(vals[i]);
        }
        free(in);
        free(vals);
        free(ty);
        free(listed);
        if (apart < 0)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        if (!apart) {
            char why[96];
            snprintf(why, sizeof why, "branches %zu and %zu may both match", bi, bj);
            return split_or_negate(c, s, alts, why, outer_pres, node);
        }
    }
    json_t *base = gc_copy(s);
    if (!base)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    json_object_del(base, kw);
    int32_t *ids = malloc(n * sizeof *ids);
    int rc = ids ? SX_OK : sx_err_set(c->err, SX_ENOMEM, "out of memory");
    size_t old = gc_ptr_push(c, kw);
    for (size_t i = 0; i < n && !rc; i++) {
        size_t o2 = gc_ptr_pushi(c, i);
        json_t *m = NULL, *merged = gc_copy(base);
        rc = merged ? inline_member(c, json_array_get(alts, i), &m, 0)
                    : sx_err_set(c->err, SX_ENOMEM, "out of memory");
        if (!rc)
            rc = gc_merge(c, merged, m);
        if (!rc)
            rc = schema_at(c, merged, outer_pres, &ids[i]);
        json_decref(m);
        json_decref(merged);
        gc_ptr_pop(c, o2);
    }
    gc_ptr_pop(c, old);
    if (!rc)
        rc = alt_node(c, ids, (int)n, node);
    free(ids);
    json_decref(base);
    return rc;
}

/* ---- the schema ----------------------------------------------------------- */

/* Branches that are only `required` lists: *out gets one list per branch
 * (anyOf) or their union as one list (allOf).  0 if the branches are
 * anything else or too many. */
static int required_lists(const json_t *branches, int union_all, json_t **out)
{
    size_t i, j;
    json_t *b, *e;
    *out = NULL;
    if (!json_is_array(branches) || json_array_size(branches) == 0 ||
        (!union_all && json_array_size(branches) > 4))
        return 0;
    json_array_foreach((json_t *)branches, i, b) {
        const char *k;
        json_t *v;
        if (!json_is_object(b) || !json_is_array(json_object_get(b, "required")))
            return 0;
        json_object_foreach(b, k, v)
            if (gc_kw_id(k) != GK_REQUIRED && gc_is_assertion(k))
                return 0;
        json_array_foreach(json_object_get(b, "required"), j, e)
            if (!json_is_string(e))
                return 0;
    }
    json_t *lists = json_array();
    if (union_all) {
        json_t *u = json_array();
        json_array_foreach((json_t *)branches, i, b)
            json_array_extend(u, json_object_get(b, "required"));
        json_array_append_new(lists, u);
    } else {
        json_array_foreach((json_t *)branches, i, b)
            json_array_append(lists, json_object_get(b, "required"));
    }
    *out = lists;
    return 1;
}

/* `not` whose assertions are enum/const (and perhaps type): the values
 * it leaves out are listed. */
static int listed_not(const json_t *nt)
{
    const char *k;
    json_t *v;
    int listed = 0;
    if (!json_is_object(nt))
        return 0;
    json_object_foreach((json_t *)nt, k, v) {
        gc_kw id = gc_kw_id(k);
        if (!(gc_kw_flags(id) & GK_ASSERTION))
            continue;
        if (id == GK_ENUM || id == GK_CONST)
            listed = 1;
        else if (id != GK_TYPE)
            return 0;
    }
    return listed;
}

/* The values a listed `not` leaves out: enum and const together, of the
 * types nt's own `type` names (others pass `not` anyway).  *out is new. */
static int not_values(gc_ctx *c, const json_t *nt, int types, json_t **out)
{
    const json_t *en = json_object_get(nt, "enum"), *cn = json_object_get(nt, "const");
    json_t *all = json_array();
    size_t i;
    json_t *v;
    *out = NULL;
    if (!all)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if (en && !json_is_array(en)) {
        json_decref(all);
        return gc_invalid(c, "not", "enum must be an array");
    }
    if (cn)
        json_array_append(all, (json_t *)cn);
    else
        json_array_extend(all, (json_t *)en);
    json_t *res = json_array();
    json_array_foreach(all, i, v) {
        int in_enum = !en || !cn;
        for (size_t j = 0; en && cn && j < json_array_size(en) && !in_enum; j++) {
            const json_t *e = json_array_get(en, j);
            in_enum = json_is_number(e) && json_is_number(v)
                          ? json_number_value(e) == json_number_value(v)
                          : json_equal(e, v);
        }
        if (in_enum && (types & value_type(v)))
            json_array_append(res, v);
    }
    json_decref(all);
    *out = res;
    return res ? SX_OK : sx_err_set(c->err, SX_ENOMEM, "out of memory");
}

/* anyOf whose branches are all listed values: not of it leaves out
 * their union. */
static int listed_any(const json_t *nt)
{
    const json_t *any = json_is_object(nt) ? json_object_get(nt, "anyOf") : NULL;
    const char *k;
    json_t *v;
    size_t i;
    if (!json_is_array(any) || json_array_size(any) == 0)
        return 0;
    json_object_foreach((json_t *)nt, k, v)
        if (gc_kw_id(k) != GK_ANY_OF && gc_is_assertion(k))
            return 0;
    json_array_foreach(any, i, v)
        if (!listed_not(v))
            return 0;
    return 1;
}

static int any_values(gc_ctx *c, const json_t *nt, json_t **out)
{
    json_t *all = json_array();
    size_t i;
    json_t *b;
    int rc = all ? SX_OK : sx_err_set(c->err, SX_ENOMEM, "out of memory");
    json_array_foreach(json_object_get(nt, "anyOf"), i, b) {
        json_t *part = NULL;
        int ty = json_object_get(b, "type") ? schema_types(c, b, 0) : T_ALL;
        if (rc || (rc = not_values(c, b, ty, &part)))
            break;
        json_array_extend(all, part);
        json_decref(part);
    }
    if (rc) {
        json_decref(all);
        all = NULL;
    }
    *out = all;
    return rc;
}

/* A plain schema's `not`, in the forms whose complement is exact here:
 * what it takes out of *types, and what it leaves for the nodes to
 * enforce (the caller frees nf's lists, whatever the result). */
typedef struct not_form {
    json_t *excl;          /* not of listed values: the values left out */
    int excl_true, excl_false;
    const json_t *not_str; /* not of a string schema */
    const json_t *forbid;  /* not {required}: that list */
    json_t *owned;         /* forbidden key lists built from not {anyOf|allOf} */
    int nothing;           /* 1: the schema admits no value */
} not_form;

static int not_nothing(not_form *nf)
{
    json_decref(nf->owned);
    nf->owned = NULL;
    nf->nothing = 1;
    return SX_OK;
}

static int plain_not(gc_ctx *c, const json_t *s, int *types, not_form *nf)
{
    int rc;
    const json_t *nt = json_object_get(s, "not");
    for (int hops = 0; hops < 16 && json_is_object(nt) && json_object_size(nt) == 1 &&
                       json_is_string(json_object_get(nt, "$ref"));
         hops++) {
        const json_t *t = gc_resolve_ref(c, json_string_value(json_object_get(nt, "$ref")));
        if (!t)
            break;
        nt = t;
    }
    if (nt && !json_is_false(nt)) {
        const char *nk, *only = NULL;
        json_t *nv;
        int n_assert = 0;
        if (!json_is_object(nt) && !json_is_true(nt))
            return gc_invalid(c, "not", "must be a schema");
        if (json_is_object(nt))
            json_object_foreach((json_t *)nt, nk, nv)
                if (gc_kw_flags(gc_kw_id(nk)) & GK_ASSERTION) {
                    n_assert++;
                    only = nk;
                }
        if (n_assert == 0)
            return not_nothing(nf); /* not {} admits nothing */
        if (string_not(nt)) {
            /* strings that fail it; other values fail it only by type */
            nf->not_str = nt;
            if (!json_object_get(nt, "type"))
                *types &= T_STR;
            n_assert = 0;
            only = NULL;
        } else if (listed_not(nt) || listed_any(nt)) {
            /* not of listed values: each type of value leaves them out */
            int nty = json_object_get(nt, "type") ? schema_types(c, nt, 0) : T_ALL;
            if (nty & T_NUM)
                nty |= T_INT;
            if ((rc = listed_any(nt) ? any_values(c, nt, &nf->excl)
                                     : not_values(c, nt, nty, &nf->excl)))
                return rc;
            size_t ei;
            json_t *ev;
            json_array_foreach(nf->excl, ei, ev) {
                if (json_is_null(ev))
                    *types &= ~T_NULL;
                nf->excl_true |= json_is_true(ev);
                nf->excl_false |= json_is_false(ev);
                if ((json_is_object(ev) && (*types & T_OBJ)) || (json_is_array(ev) && (*types & T_ARR)))
                    return gc_unsupported(c, "not", "listed objects or arrays are not excluded");
            }
            if (nf->excl_true && nf->excl_false)
                *types &= ~T_BOOL;
            n_assert = 0;
            only = NULL;
        } else if (n_assert > 1) {
            return gc_unsupported(c, "not", "only not {type}, not {required}, not of listed values and not {} are enforced");
        }
        gc_kw oid = only ? gc_kw_id(only) : GK_UNKNOWN;
        if (!only) {
            /* done above */
        } else if (oid == GK_TYPE) {
            int ex = schema_types(c, nt, 0);
            if ((ex & T_INT) && !(ex & T_NUM) && (*types & T_NUM))
                return gc_unsupported(c, "not", "a number that is not an integer");
            *types &= ~ex;
        } else if (oid == GK_REQUIRED && json_is_array(json_object_get(nt, "required"))) {
            nf->forbid = json_object_get(nt, "required");
            if (json_array_size(nf->forbid) == 0)
                return not_nothing(nf); /* everything satisfies required: [] */
            *types &= T_OBJ; /* non-objects satisfy any required */
        } else if ((oid == GK_ANY_OF || oid == GK_ALL_OF) &&
                   required_lists(json_object_get(nt, only), oid == GK_ALL_OF, &nf->owned)) {
            /* not anyOf[required...]: no list complete; not allOf: not all
             * of their union; non-objects satisfy every branch */
            for (size_t li = 0; li < json_array_size(nf->owned); li++)
                if (json_array_size(json_array_get(nf->owned, li)) == 0)
                    return not_nothing(nf);
            *types &= T_OBJ;
        } else {
            return gc_unsupported(c, "not", "only not {type}, not {required}, not of listed values and not {} are enforced");
        }
    }
    return SX_OK;
}

/* pres: a presence condition from anyOf/oneOf, for this schema's own
 * object node only (NULL: none) */
static int plain_schema(gc_ctx *c, const json_t *s, const gc_pres *pres, int32_t *node)
{
    const char *k;
    json_t *v;
    int rc;
    json_object_foreach((json_t *)s, k, v) {
        gc_kw id = gc_kw_id(k);
        if (c->no_if && (gc_kw_flags(id) & GK_SINCE7))
            continue; /* unknown keywords before draft-07 */
        if (id == GK_IF || id == GK_DYNAMIC_REF || id == GK_RECURSIVE_REF)
            return gc_unsupported(c, k, NULL);
    }
    int types = T_ALL;
    const json_t *ty = json_object_get(s, "type");
    if (ty) {
        if (json_is_string(ty)) {
            types = type_bit(json_string_value(ty));
            if (!types)
                return gc_invalid(c, "type", "unknown type '%s'", json_string_value(ty));
        } else if (json_is_array(ty)) {
            types = 0;
            size_t i;
            json_t *e;
            json_array_foreach((json_t *)ty, i, e) {
                int b = json_is_string(e) ? type_bit(json_string_value(e)) : 0;
                if (!b)
                    return gc_invalid(c, "type", "entry %zu is not a type name", i);
                types |= b;
            }
        } else {
            return gc_invalid(c, "type", "must be a string or an array");
        }
    }
    not_form no = {0};
    if ((rc = plain_not(c, s, &types, &no)) || no.nothing) {
        json_decref(no.excl);
        json_decref(no.owned);
        return rc ? rc : empty_node(c, node);
    }
    json_t *excl = no.excl, *owned = no.owned;
    int excl_true = no.excl_true, excl_false = no.excl_false;
    const json_t *not_str = no.not_str, *forbid = no.forbid;
    if (types & T_NUM)
        types &= ~T_INT; /* number covers integer */
    if (json_object_get(s, "enum") || json_object_get(s, "const")) {
        /* listed values: key conditions on objects are not combined here,
         * nor listed values left out (the finite path decides those) */
        if (excl) {
            json_decref(excl);
            json_decref(owned);
            return gc_unsupported(c, "not", "listed values together with enum/const");
        }
        if (pres || forbid || owned) {
            json_decref(owned);
            return gc_unsupported(c, pres ? (pres->one ? "oneOf" : "anyOf") : "not",
                                  "key conditions together with enum/const");
        }
        return enum_node(c, s, (types & T_NUM) ? types | T_INT : types, node);
    }

    int32_t alts[7];
    int na = 0;
    rc = SX_OK;
    if (types & T_NULL) {
        char *t = strdup("null");
        rc = t ? lit_node(c, &t, 1, &alts[na++]) : sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    if (!rc && (types & T_BOOL)) {
        char *t[2] = {excl_true ? NULL : strdup("true"), excl_false ? NULL : strdup("false")};
        if ((t[0] || excl_true) && (t[1] || excl_false)) {
            if (!t[0]) {
                t[0] = t[1];
                t[1] = NULL;
            }
            rc = lit_node(c, t, t[1] ? 2 : 1, &alts[na++]);
        } else {
            free(t[0]);
            free(t[1]);
            rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        }
    }
    if (!rc && (types & (T_INT | T_NUM)))
        rc = number_node(c, s, !(types & T_NUM), excl, &alts[na++]);
    if (!rc && (types & T_STR))
        rc = string_node(c, s, excl, not_str, &alts[na++]);
    if (!rc && (types & T_OBJ)) {
        const json_t *fl[4];
        int nf = 0;
        if (forbid)
            fl[nf++] = forbid;
        for (size_t li = 0; owned && li < json_array_size(owned) && nf < 4; li++)
            fl[nf++] = json_array_get(owned, li);
        rc = object_node(c, s, pres, fl, nf, &alts[na++]);
    }
    if (!rc && (types & T_ARR))
        rc = array_node(c, s, &alts[na++]);
    json_decref(owned);
    json_decref(excl);
    if (rc)
        return rc;
    return alt_node(c, alts, na, node);
}

/* Keywords other than except that assert something. */
static int has_assertions_besides(const json_t *s, gc_kw except)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        gc_kw id = gc_kw_id(k);
        if (id == except || !(gc_kw_flags(id) & GK_ASSERTION))
            continue;
        return 1;
    }
    return 0;
}

/* The values gc_finite_values accepted: a literal set of the scalar
 * spellings and one exact node per object or array. */
static int finite_node(gc_ctx *c, const json_t *texts, const json_t *vals, int32_t *node)
{
    size_t nt = json_array_size(texts), nv = json_array_size(vals), i;
    char **tx = malloc((nt + 1) * sizeof *tx);
    int32_t *alts = malloc((nv + 1) * sizeof *alts);
    int na = 0, rc = (tx && alts) ? SX_OK : sx_err_set(c->err, SX_ENOMEM, "out of memory");
    for (i = 0; i < nt && !rc; i++)
        if (!(tx[i] = strdup(json_string_value(json_array_get(texts, i))))) {
            for (size_t j = 0; j < i; j++)
                free(tx[j]);
            rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        }
    if (!rc && nt)
        rc = lit_node(c, tx, (int)nt, &alts[na++]);
    for (i = 0; i < nv && !rc; i++)
        rc = const_node(c, json_array_get(vals, i), &alts[na++]);
    if (!rc)
        rc = alt_node(c, alts, na, node);
    free(tx);
    free(alts);
    return rc;
}

static int schema_object(gc_ctx *c, const json_t *s, int plain_ref, const gc_pres *pres,
                         int32_t *node);
static int schema_fresh(gc_ctx *c, const json_t *s, const gc_pres *pres, int32_t *node);

int gc_schema(gc_ctx *c, const json_t *s, int32_t *node)
{
    return schema_at(c, s, NULL, node);
}

/* gc_schema with the presence condition pres for s's object node (NULL:
 * none); a compile under one is not remembered (gr_memo.c), its node is
 * not s's alone. */
static int schema_at(gc_ctx *c, const json_t *s, const gc_pres *pres, int32_t *node)
{
    gc_ref *entry, *refs = c->refs;
    if (++c->n_compiles > GC_MAX_COMPILES)
        return sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1,
                           "schema needs more than %d subschema compilations (at %s)",
                           GC_MAX_COMPILES, c->ptr);
    int rc = gc_check_stop(c); /* the caller's deadline, once per subschema */
    if (rc)
        return rc;
    if (pres) {
        entry = NULL;
        *node = -1;
    } else {
        rc = gc_memo_enter(c, s, node, &entry);
    }
    if (rc || *node >= 0)
        return rc;
    if (!entry)
        return schema_fresh(c, s, pres, node);
    int32_t inner;
    if ((rc = schema_fresh(c, s, NULL, &inner))) {
        gc_refs_cut(c, refs);
        return rc;
    }
    *node = entry->node;
    return gc_memo_done(c, entry, inner);
}

static int schema_fresh(gc_ctx *c, const json_t *s, const gc_pres *pres, int32_t *node)
{
    if (json_is_true(s))
        return any_node(c, pres, node);
    if (json_is_false(s))
        return empty_node(c, node);
    if (!json_is_object(s))
        return gc_invalid(c, NULL, "a schema must be an object or a boolean");
    const json_t *ref = json_object_get(s, "$ref");
    int plain_ref = ref && (c->opts.draft7 || !has_assertions_besides(s, GK_REF));
    gc_mark mark;
    mark_save(c, &mark);
    int rc = schema_object(c, s, plain_ref, pres, node);
    /* what the grammar cannot express may still be a finite list of values
     * (a presence condition from anyOf/oneOf is not part of s, though) */
    if ((rc != SX_EUNSUPPORTED && rc != SX_ELIMIT) || plain_ref || pres)
        return rc;
    sx_error first;
    if (c->err)
        first = *c->err;
    mark_restore(c, &mark);
    json_t *texts = NULL, *vals = NULL;
    int frc = gc_finite_values(c, s, &texts, &vals);
    if (!frc && texts)
        frc = finite_node(c, texts, vals, node);
    else if (!frc && c->err)
        *c->err = first;
    json_decref(texts);
    json_decref(vals);
    return frc ? frc : texts ? SX_OK : rc;
}

static int schema_object(gc_ctx *c, const json_t *s, int plain_ref, const gc_pres *pres,
                         int32_t *node)
{
    int rc;
    if (++c->depth > GC_MEMO_TRIGGER && !c->memo_on && c->opts.max_depth > GC_MEMO_TRIGGER) {
        /* probably recursion through copies: sx_gr_compile_json starts
         * over with copies remembered (gr_memo.c) */
        c->depth--;
        c->memo_wanted = 1;
        return sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1,
                           "schema nesting deeper than %d at %s", GC_MEMO_TRIGGER, c->ptr);
    }
    if (c->depth > c->opts.max_depth) {
        c->depth--;
        return sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1,
                           "schema nesting deeper than %d at %s", c->opts.max_depth, c->ptr);
    }
    const json_t *ref = json_object_get(s, "$ref");
    json_t *work = NULL;
    if (ref) {
        if (!json_is_string(ref)) {
            rc = gc_invalid(c, "$ref", "must be a string");
            goto out;
        }
        if (plain_ref) {
            const json_t *t = gc_resolve_ref(c, json_string_value(ref));
            if (!t) {
                char p[256];
                snprintf(p, sizeof p, "%s/$ref", c->ptr);
                rc = sx_err_setp(c->err, SX_ENOTFOUND, p, -1,
                                 "unresolvable $ref '%s' at %s (only local references are supported)",
                                 json_string_value(ref), p);
                goto out;
            }
            rc = compile_ref(c, t, pres, node);
            goto out;
        }
        /* 2020-12: $ref applies together with its siblings */
        if ((rc = inline_member(c, s, &work, 0)))
            goto out;
        s = work;
    }
    /* if/then/else: one more allOf member, a choice of two branches */
    json_t *iw = NULL;
    if ((rc = gc_rewrite_if(c, s, NULL, &iw)))
        goto out;
    if (iw) {
        json_decref(work);
        work = iw;
        s = work;
    }
    if ((rc = gc_rewrite_not_forms(c, s, &iw)))
        goto out;
    if (iw) {
        json_decref(work);
        work = iw;
        s = work;
    }
    if ((rc = gc_rewrite_not(c, s, NULL, &iw)))
        goto out;
    if (iw) {
        json_decref(work);
        work = iw;
        s = work;
    }
    const json_t *all = json_object_get(s, "allOf");
    if (all) {
        if (!json_is_array(all) || json_array_size(all) == 0) {
            rc = gc_invalid(c, "allOf", "must be a non-empty array");
            goto out;
        }
        json_t *merged = gc_copy(s);
        if (!merged) {
            rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
            goto out;
        }
        json_object_del(merged, "allOf");
        size_t i;
        json_t *m;
        size_t old = gc_ptr_push(c, "allOf");
        rc = SX_OK;
        json_array_foreach((json_t *)all, i, m) {
            json_t *im = NULL;
            size_t o2 = gc_ptr_pushi(c, i);
            rc = inline_member(c, m, &im, 0);
            json_t *imw = NULL;
            if (!rc && (rc = gc_rewrite_if(c, im, s, &imw)) == SX_OK && imw) {
                json_decref(im);
                im = imw;
            }
            if (!rc && (rc = gc_rewrite_not_forms(c, im, &imw)) == SX_OK && imw) {
                json_decref(im);
                im = imw;
            }
            if (!rc && (rc = gc_rewrite_not(c, im, s, &imw)) == SX_OK && imw) {
                json_decref(im);
                im = imw;
            }
            if (!rc)
                rc = gc_merge(c, merged, im);
            json_decref(im);
            gc_ptr_pop(c, o2);
            if (rc)
                break;
        }
        gc_ptr_pop(c, old);
        json_decref(work);
        work = merged;
        s = work;
        if (rc)
            goto out;
        /* members may have brought their own allOf/$ref/combinators */
        if (json_object_get(s, "allOf") || json_object_get(s, "$ref")) {
            rc = schema_at(c, s, pres, node);
            goto out;
        }
    }
    json_t *dw = NULL;
    if ((rc = gc_rewrite_dependencies(c, s, &dw)))
        goto out;
    if (dw) {
        rc = schema_at(c, dw, pres, node);
        json_decref(dw);
        goto out;
    }
    int has_any = json_object_get(s, "anyOf") != NULL, has_one = json_object_get(s, "oneOf") != NULL;
    if (has_any && has_one) {
        /* (a1 or a2) and oneOf(O) is (a1 and oneOf(O)) or (a2 and oneOf(O)):
         * every anyOf branch keeps the oneOf of the base */
        rc = compile_alternatives(c, s, "anyOf", pres, node);
        goto out;
    }
    if (has_any || has_one) {
        rc = compile_alternatives(c, s, has_any ? "anyOf" : "oneOf", pres, node);
        goto out;
    }
    rc = plain_schema(c, s, pres, node);
out:
    json_decref(work);
    c->depth--;
    return rc;
}
