/* Writing values from the compiled grammar alone: a node's witness (its
 * shortest value), object members that meet the key conditions, items
 * that differ from earlier ones, fresh keys.  The compiler chooses each
 * node's witness with them (compile/gr_witness.c); the matcher's
 * completion finishes open values with them (match/gr_complete.c).  They
 * read the grammar and the caller's key/item sets, no matcher state. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/ir/ir.h"

void gr_wput(gr_wbuf *w, const void *p, size_t n)
{
    if (w->oom || n == 0)
        return;
    if (w->limit && w->n + n > w->limit) {
        w->oom = w->over = 1;
        return;
    }
    if (w->work && gr_work_spend(w->work, (long)n)) {
        w->oom = 1;
        return;
    }
    if (w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        while (cap < w->n + n)
            cap *= 2;
        uint8_t *nb = realloc(w->b, cap);
        if (!nb) {
            w->oom = 1;
            return;
        }
        w->b = nb;
        w->cap = cap;
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

void gr_wputs(gr_wbuf *w, const char *s)
{
    gr_wput(w, s, strlen(s));
}

/* ---- compile time --------------------------------------------------------- */

static int num_in_bounds(const gr_node *n, double x)
{
    if (n->u.num.has_min && (n->u.num.excl_min ? !(x > n->u.num.min) : !(x >= n->u.num.min)))
        return 0;
    if (n->u.num.has_max && (n->u.num.excl_max ? !(x < n->u.num.max) : !(x <= n->u.num.max)))
        return 0;
    return 1;
}

/* The grammar takes text as a whole number of node n (a witness must be a
 * value the matcher accepts, not only one inside the bounds as doubles see
 * them). */
static int num_text_ok(const gr_node *n, const char *text)
{
    gr_frame f, nf;
    memset(&f, 0, sizeof f);
    f.phase = N_START;
    for (const char *p = text; *p; p++) {
        if (!gr_num_step(n, &f, (unsigned char)*p, &nf))
            return 0;
        f = nf;
    }
    return (f.phase == N_ZERO || f.phase == N_INT || f.phase == N_FRAC || f.phase == N_EXP) &&
           gr_num_ok(n, &f, 1);
}

/* A bound's own digits, plain (no exponent), and the texts just past it
 * on either side: where the bounds are close together far from 1
 * (1.2345678901234e22 to 1.2345678901235e22) the rounded candidates below
 * miss, and the grammar reads plain digits exactly. */
static int bound_witness(const gr_node *n, double b, char *out, size_t cap)
{
    int64_t m;
    int e;
    if (gr_decimal(b, &m, &e) || m <= 0 || e < 0 || (size_t)e + 48 > cap)
        return 0;
    const char *sg = b < 0 ? "-" : "";
    for (int k = 0; k < 3; k++) {
        /* k 0: the bound; 1: just above |b|; 2: just below */
        int64_t mm = k == 2 ? m - 1 : m;
        if (k == 2 && mm <= 0)
            continue;
        int l = snprintf(out, cap, "%s%lld", sg, (long long)mm);
        memset(out + l, k == 2 ? '9' : '0', (size_t)e);
        l += e;
        snprintf(out + l, cap - (size_t)l, "%s", k ? ".5" : "");
        if (num_text_ok(n, out))
            return 1;
    }
    return 0;
}

static void number_witness(const gr_node *n, char *out, size_t cap)
{
    if (n->u.num.n_excl) {
        /* the first value that `not` leaves in */
        gr_frame f;
        uint64_t h;
        memset(&f, 0, sizeof f);
        f.phase = N_START;
        long l = gr_num_new_completion(n, &f, NULL, 0, (uint8_t *)out, cap - 1, &h);
        if (l > 0) {
            out[l] = '\0';
            return;
        }
    }
    if (n->u.num.integer && (n->u.num.imin == INT64_MAX ||
                             (n->u.num.has_max && n->u.num.max < -9e18))) {
        /* a bound past int64 (compile's number_node): its own digits, plus
         * one when exclusive -- an integral decimal of at most 17
         * significant digits and a positive exponent, so it ends in 0 */
        int lo = n->u.num.imin == INT64_MAX;
        double b = lo ? n->u.num.min : n->u.num.max;
        int64_t m;
        int e;
        if (!gr_decimal(b, &m, &e) && e >= 1 && (size_t)e + 24 < cap) {
            int l = snprintf(out, cap, "%s%lld", lo ? "" : "-", (long long)m);
            memset(out + l, '0', (size_t)e);
            out[l + e] = '\0';
            if (lo ? n->u.num.excl_min : n->u.num.excl_max)
                out[l + e - 1] = '1';
            return;
        }
    }
    if (n->u.num.integer || n->u.num.scale) {
        __int128 lo = n->u.num.imin, hi = n->u.num.imax, m = n->u.num.multiple, v = 0;
        if (m <= 0)
            m = 1;
        if (lo > 0) {
            v = lo / m;
            if (v * m < lo)
                v++;
            v *= m;
        } else if (hi < 0) {
            v = hi / m;
            if (v * m > hi)
                v--;
            v *= m;
        }
        if (n->u.num.scale) {
            /* v / 10^scale, written out */
            long long p = 1, a = (long long)(v < 0 ? -v : v);
            for (int i = 0; i < n->u.num.scale; i++)
                p *= 10;
            int l = snprintf(out, cap, "%s%lld.%0*lld", v < 0 ? "-" : "", a / p, n->u.num.scale,
                             a % p);
            while (l > 0 && (size_t)l < cap && out[l - 1] == '0')
                out[--l] = '\0';
            if (l > 0 && out[l - 1] == '.')
                out[--l] = '\0';
            return;
        }
        snprintf(out, cap, "%lld", (long long)v);
        return;
    }
    double cands[9];
    int nc = 0;
    double lo = n->u.num.has_min ? n->u.num.min : -1e300, hi = n->u.num.has_max ? n->u.num.max : 1e300;
    cands[nc++] = 0;
    cands[nc++] = ceil(lo);
    cands[nc++] = floor(hi);
    cands[nc++] = ceil(lo) + 1;
    cands[nc++] = lo;
    cands[nc++] = (lo + hi) / 2;
    cands[nc++] = lo + (hi - lo) / 1024;
    /* one bound, far from 0 and exclusive: past it by a factor */
    cands[nc++] = hi < 0 ? 2 * hi : 2 * lo;
    for (int i = 0; i < nc; i++) {
        double x = cands[i];
        if (!isfinite(x))
            continue;
        /* past 1e17 (bounds up to 1e308) in exponent form, "1e+300" */
        int big = fabs(x) > 1e17;
        for (int prec = 0; prec <= 17; prec++) {
            snprintf(out, cap, big ? "%.*e" : "%.*f", prec, x);
            double y = strtod(out, NULL);
            if (num_in_bounds(n, y) && isfinite(y) && (!big || num_text_ok(n, out))) {
                /* "-0" would need care for bounds at zero; plain 0 is fine */
                if (!strcmp(out, "-0"))
                    snprintf(out, cap, "0");
                return;
            }
        }
    }
    if ((n->u.num.has_min && bound_witness(n, n->u.num.min, out, cap)) ||
        (n->u.num.has_max && bound_witness(n, n->u.num.max, out, cap)))
        return;
    snprintf(out, cap, "0");
}

int gr_wit(const gr_node *N, int32_t node, gr_wbuf *w)
{
    if (node < 0 || !N[node].wit) {
        w->oom = 1;
        return 0;
    }
    gr_wput(w, N[node].wit, (size_t)N[node].min_bytes);
    return 1;
}

/* Finishes an additional key with the key automaton from state st
 * (escaped content, closing quote and colon); returns the value node for
 * it or -1.  in_escape: a backslash was just read. */
int32_t gr_wit_auto_key(const gr_node *n, int32_t st, int in_escape, uint64_t h,
                        const void *seen, gr_wbuf *w, uint64_t *key_hash)
{
    const gr_strx *x = n->u.obj.keyx;
    static const char esc[] = "\"\\bfnrt", dec[] = "\"\\\b\f\n\r\t";
    if (in_escape) {
        int32_t ns = -1;
        for (int i = 0; i < 7 && ns < 0; i++) {
            ns = gr_strx_step(x, st, (uint8_t)dec[i]);
            if (ns >= 0) {
                gr_wput(w, &esc[i], 1);
                h = (h ^ (uint8_t)esc[i]) * GR_FNV_PRIME;
            }
        }
        if (ns < 0)
            return -1;
        st = ns;
    }
    uint8_t tmp[1024];
    int32_t final = -1;
    long l = gr_keyauto_new_key(x, n->u.obj.close_node, st, h, seen, tmp, sizeof tmp, &final);
    if (l < 0 || final < 0)
        return -1;
    /* the whole key's hash, as the matcher keeps it, for the keys the
     * completion invents after this one */
    for (long i = 0; i < l; i++)
        h = (h ^ tmp[i]) * GR_FNV_PRIME;
    if (key_hash)
        *key_hash = h;
    gr_wput(w, tmp, (size_t)l);
    gr_wputs(w, "\":");
    return n->u.obj.close_node[final];
}


/* uniqueItems over listed values: n more items, each the shortest literal
 * of a value class not used yet. */
void gr_wit_unique_items(const gr_node *N, const gr_node *arr, uint64_t used, int64_t n,
                         int need_comma, gr_wbuf *w)
{
    const gr_node *ls = &N[arr->u.arr.items];
    for (int64_t k = 0; k < n; k++) {
        int best = -1;
        for (uint32_t i = 0; i < ls->u.lit.n; i++)
            if (!(used >> arr->u.arr.lit_class[i] & 1) &&
                (best < 0 || ls->u.lit.lits[i].len < ls->u.lit.lits[best].len))
                best = (int)i;
        if (best < 0) {
            w->oom = 1;
            return;
        }
        if (need_comma || k)
            gr_wputs(w, ",");
        gr_wput(w, ls->u.lit.lits[best].b, ls->u.lit.lits[best].len);
        used |= 1ull << arr->u.arr.lit_class[best];
    }
}

void gr_wit_write(const sx_grammar *g, int32_t i, gr_wbuf *w,
                          int depth);

/* The object's remaining members: required ones not yet seen, then
 * optional ones until minProperties is met.  `first` says whether a comma
 * is needed before the first member written. */
void gr_wit_object_members(const sx_grammar *g, const gr_node *n, uint64_t seen, int64_t count,
                           int need_comma, gr_wbuf *w, int depth,
                           const void *seen_keys, int32_t skip, uint16_t ord);

/* Hashes of the keys of the object text t (to keep invented keys apart). */
static gr_vseen *text_keys(const uint8_t *t, size_t n, gr_vseen *into, int cap, int *used)
{
    json_t *v = json_loadb((const char *)t, n, JSON_DECODE_ANY, NULL);
    gr_vseen *list = NULL;
    const char *k;
    json_t *x;
    if (json_is_object(v))
        json_object_foreach(v, k, x) {
            size_t kl;
            char *e = gr_encode_string(k, strlen(k), &kl);
            if (e && *used < cap) {
                into[*used].next = list;
                into[*used].h = gr_key_hash((const uint8_t *)e, kl);
                into[*used].idx = NULL;
                list = &into[(*used)++];
            }
            free(e);
        }
    json_decref(v);
    return list;
}

static int listed_name(const gr_node *n, const char *key, size_t kl)
{
    for (uint32_t i = 0; i < n->u.obj.n; i++)
        if (n->u.obj.props[i].key_len == kl && !memcmp(n->u.obj.props[i].key, key, kl))
            return 1;
    return 0;
}

/* An invented key for a member that additionalProperties takes: "_",
 * "_1", "_2"... from *next on, the first neither listed nor among
 * `seen_keys` (a gr_key_listed list, or NULL). */
size_t gr_wit_fresh_key(const gr_node *n, const void *seen_keys, long *next, char key[32])
{
    for (;;) {
        long i = (*next)++;
        size_t kl = i ? (size_t)snprintf(key, 32, "_%ld", i) : (size_t)snprintf(key, 32, "_");
        if (!listed_name(n, key, kl) &&
            !(seen_keys && gr_key_listed(seen_keys, gr_key_hash((const uint8_t *)key, kl))))
            return kl;
    }
}

/* req with the keys that the keys in seen | req require in turn
 * (dependentRequired), to the closure. */
static uint64_t dep_closure(const gr_node *n, uint64_t seen, uint64_t req)
{
    uint64_t before;
    do {
        before = req;
        for (uint32_t k = 0; n->u.obj.dep_req && k < n->u.obj.n; k++)
            if ((seen | req) & gr_prop_bit(&n->u.obj.props[k]))
                req |= n->u.obj.dep_req[n->u.obj.props[k].index];
    } while (req != before);
    return req;
}

/* Property-order mode: the keys still needed, in `properties` order from
 * position ord -- the required ones, and optional ones while the object
 * is short of minProperties. */
static void ordered_members(const sx_grammar *g, const gr_node *n, uint64_t seen, int64_t count,
                            uint64_t req, int need_comma, gr_wbuf *w, int depth,
                            const void *seen_keys, int32_t skip, uint16_t ord)
{
    for (uint32_t m = 0; m < n->u.obj.n; m++) {
        uint32_t k = n->u.obj.by_order[m];
        const gr_prop *p = &n->u.obj.props[k];
        uint64_t bit = gr_prop_bit(p);
        int64_t owed = __builtin_popcountll(req & ~seen & ~bit);
        int wanted = (req & bit) || count + owed < n->u.obj.min_props;
        /* an optional key whose value has no witness yet (a recursive
         * one, while shortest values are found) is left to invented keys */
        if (!(req & bit) && p->node >= 0 && !g->nodes[p->node].wit)
            wanted = 0;
        if (!wanted || gr_prop_seen(p, seen, seen_keys) || (int32_t)k == skip || p->node < 0 ||
            !gr_ord_ok(n, ord, p) || !gr_obj_feasible_add(n, seen, count, p))
            continue;
        if (need_comma)
            gr_wputs(w, ",");
        gr_wputs(w, "\"");
        gr_wput(w, p->key, p->key_len);
        gr_wputs(w, "\":");
        gr_wit(g->nodes, p->node, w);
        seen |= bit;
        count++;
        ord = gr_ord_after(p);
        need_comma = 1;
        /* an optional key taken for minProperties may require others
         * (dependentRequired): they are wanted too */
        req = dep_closure(n, seen, req);
    }
    /* still short of minProperties: invented additional keys (last) */
    long next_key = 0;
    for (int64_t k = 0; count < n->u.obj.min_props && n->u.obj.additional >= 0 && k < 1000; k++) {
        char key[32];
        size_t kl = gr_wit_fresh_key(n, seen_keys, &next_key, key);
        gr_wputs(w, need_comma ? ",\"" : "\"");
        gr_wput(w, key, kl);
        gr_wputs(w, "\":");
        gr_wit(g->nodes, n->u.obj.additional, w);
        count++;
        need_comma = 1;
    }
    if (count < n->u.obj.min_props)
        w->oom = 1;
}

void gr_wit_object_members(const sx_grammar *g, const gr_node *n, uint64_t seen, int64_t count,
                           int need_comma, gr_wbuf *w, int depth,
                           const void *seen_keys, int32_t skip, uint16_t ord)
{
    /* a key that will be written can require others in turn
     * (dependentRequired): to the closure */
    uint64_t req = dep_closure(n, seen, n->u.obj.required);
    if (n->u.obj.n_pres && !gr_obj_pres_holds(n, seen | req)) {
        /* complete the first key list that satisfies the condition and is
         * allowed, with the keys it requires in turn (the matcher's own
         * feasibility test picks it, so the text it writes is accepted) */
        uint64_t S = gr_obj_pres_complete(n, seen | req, count + __builtin_popcountll(req & ~seen));
        if (S)
            req |= S & ~seen;
    }
    if (n->u.obj.by_order) {
        ordered_members(g, n, seen, count, req, need_comma, w, depth, seen_keys, skip, ord);
        return;
    }
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t k = 0; k < n->u.obj.n; k++) {
            const gr_prop *p = &n->u.obj.props[k];
            uint64_t bit = gr_prop_bit(p);
            /* pass 1 writes an optional key's own requirements (found
             * below) before any other optional key */
            int owed = (req & ~seen & bit) != 0;
            int wanted = pass == 0 || owed ? (req & bit) != 0 : count < n->u.obj.min_props;
            /* pass 0 writes bit keys only, so a hashed key comes up once */
            if (!wanted || gr_prop_seen(p, seen, seen_keys) || (int32_t)k == skip || p->node < 0)
                continue;
            if (pass == 1 && !owed && !gr_obj_feasible(n, seen | bit, count + 1))
                continue;
            /* an optional key whose value has no witness yet (a recursive
             * one, while shortest values are found: {"b": <this object>}
             * under minProperties) is left to invented keys below, which
             * may well finish the object without it */
            if (pass == 1 && !owed && !g->nodes[p->node].wit)
                continue;
            if (need_comma)
                gr_wputs(w, ",");
            gr_wputs(w, "\"");
            gr_wput(w, p->key, p->key_len);
            gr_wputs(w, "\":");
            gr_wit(g->nodes, p->node, w);
            seen |= bit;
            count++;
            need_comma = 1;
            if (pass == 1) {
                /* an optional key taken for minProperties may require
                 * others (dependentRequired: {"b": ["n"]}); written next,
                 * from the first key on (the schema fuzzer found
                 * completions that closed the object without them) */
                uint64_t more = dep_closure(n, seen, req);
                if (more & ~seen & ~req) {
                    req = more;
                    k = (uint32_t)-1;
                }
            }
        }
    /* still short of minProperties: invented keys of the key automaton,
     * each the shortest one not used yet (the ones written here join the
     * list of keys seen) */
    if (n->u.obj.keyx && count < n->u.obj.min_props) {
        gr_vseen made[16];
        const gr_vseen *keys = seen_keys;
        for (int i = 0; count < n->u.obj.min_props; i++) {
            if (i == 16) {
                w->oom = 1;
                return;
            }
            if (need_comma)
                gr_wputs(w, ",");
            gr_wputs(w, "\"");
            size_t key_at = w->n;
            int32_t vn = gr_wit_auto_key(n, n->u.obj.keyx->start, 0, GR_FNV_BASIS, keys, w, NULL);
            if (vn < 0 || w->oom || w->n < key_at + 2) {
                w->oom = 1;
                return;
            }
            /* the key as written, without the closing quote and colon */
            made[i].h = gr_key_hash(w->b + key_at, w->n - key_at - 2);
            made[i].next = keys;
            made[i].idx = NULL;
            keys = &made[i];
            gr_wit(g->nodes, vn, w);
            count++;
            need_comma = 1;
        }
        return;
    }
    long next_key = 0;
    for (int64_t k = 0; count < n->u.obj.min_props && n->u.obj.additional >= 0 && k < 1000; k++) {
        char key[32];
        size_t kl = gr_wit_fresh_key(n, seen_keys, &next_key, key);
        gr_wputs(w, need_comma ? ",\"" : "\"");
        gr_wput(w, key, kl);
        gr_wputs(w, "\":");
        gr_wit(g->nodes, n->u.obj.additional, w);
        count++;
        need_comma = 1;
    }
    /* short of minProperties still (no key left to add, or an optional
     * key's value not final yet): no witness from here, never a text the
     * object would refuse */
    if (count < n->u.obj.min_props)
        w->oom = 1;
}

/* contains: the items an array still needs from `count` items with
 * counts cnt[]: the missing matches of each constraint, then items up to
 * minItems (at least one when must_one: after a comma). */
void gr_wit_cont_fill(const sx_grammar *g, const gr_node *n, int64_t count, const int64_t *cnt,
                      int must_one, int need_comma, gr_wbuf *w, int depth)
{
    const gr_node *N = g->nodes;
    int64_t wrote = 0;
    for (int i = 0; i < n->u.arr.n_cont; i++) {
        int32_t tn = n->u.arr.ctag_node[1 << i];
        for (int64_t k = cnt[i]; k < n->u.arr.cmin[i] && !w->oom; k++, wrote++) {
            if (need_comma || wrote)
                gr_wputs(w, ",");
            gr_wit(g->nodes, tn, w);
        }
    }
    int32_t fill = n->u.arr.ctag_node[0];
    if (fill < 0 || N[fill].kind == GK_EMPTY || !N[fill].wit)
        fill = n->u.arr.ctag_node[1];
    for (; (count + wrote < n->u.arr.min_items || (must_one && !wrote)) && !w->oom; wrote++) {
        if (need_comma || wrote)
            gr_wputs(w, ",");
        gr_wit(g->nodes, fill, w);
    }
}

/* ---- distinct values (uniqueItems items) -------------------------------- */

static int nth_value(const sx_grammar *g, int32_t node, int64_t j, gr_wbuf *w,
                     int depth);

#define MAX_EXTRA 64

/* k more members with invented additional keys, none among `keys` (a
 * gr_vseen list of key hashes) or the listed names. */
void gr_wit_extra_members(const sx_grammar *g, const gr_node *n, int64_t k, int need_comma,
                          const gr_vseen *keys, gr_wbuf *w, int depth)
{
    gr_vseen local[MAX_EXTRA];
    long name = 0;
    if (k > MAX_EXTRA) {
        w->oom = 1;
        return;
    }
    for (int64_t i = 0; i < k && !w->oom; i++) {
        int32_t vn;
        uint64_t kh;
        if (need_comma || i)
            gr_wputs(w, ",");
        gr_wputs(w, "\"");
        if (n->u.obj.keyx) {
            uint8_t tmp[1024];
            int32_t final = -1;
            long l = gr_keyauto_new_key(n->u.obj.keyx, n->u.obj.close_node, n->u.obj.keyx->start,
                                        GR_FNV_BASIS, keys, tmp, sizeof tmp, &final);
            if (l < 0 || final < 0) {
                w->oom = 1;
                return;
            }
            gr_wput(w, tmp, (size_t)l);
            kh = gr_key_hash(tmp, (size_t)l);
            vn = n->u.obj.close_node[final];
        } else {
            char key[32];
            size_t kl;
            do {
                kl = (size_t)snprintf(key, sizeof key, "_v%ld", name++);
                kh = gr_key_hash((const uint8_t *)key, kl);
            } while (listed_name(n, key, kl) || gr_vseen_has(keys, kh));
            gr_wput(w, key, kl);
            vn = n->u.obj.additional;
        }
        gr_wputs(w, "\":");
        local[i].next = keys;
        local[i].h = kh;
        local[i].idx = NULL;
        keys = &local[i];
        gr_wit(g->nodes, vn, w);
    }
}

/* n more items from position `at` of a GR_UNIQ_HASH array, each with a
 * value none of `seen` (or each other) has; candidates from `from` on. */
void gr_wit_new_items(const sx_grammar *g, const gr_node *arr, int64_t at, int64_t n,
                      const gr_vseen *seen, int64_t from, int need_comma, gr_wbuf *w, int depth)
{
    /* each item takes a byte at least: more than fit fail at once */
    gr_vseen *mine = n > 0 && !(w->limit && n > (int64_t)w->limit)
                         ? malloc((size_t)n * sizeof *mine) : NULL;
    if (n > 0 && !mine) {
        w->oom = 1;
        return;
    }
    for (int64_t k = 0; k < n && !w->oom; k++) {
        int64_t pos = at + k;
        int32_t it = pos < (int64_t)arr->u.arr.n_prefix ? arr->u.arr.prefix[pos] : arr->u.arr.items;
        int done = 0;
        for (int64_t j = from; j < from + 4096 && !done; j++) {
            gr_wbuf t = {.work = w->work, .limit = w->limit};
            /* the look-up below walks the k items written: spent too */
            if (w->work && gr_work_spend(w->work, k + 1)) {
                w->oom = 1;
                break;
            }
            int ok = it >= 0 && nth_value(g, it, j, &t, depth + 1) && !t.oom;
            uint64_t h = ok ? gr_text_hash((const char *)t.b, t.n, &ok) : 0;
            if (ok && !gr_vseen_has(seen, h)) {
                if (need_comma || k)
                    gr_wputs(w, ",");
                gr_wput(w, t.b, t.n);
                mine[k].next = seen;
                mine[k].h = h;
                mine[k].idx = NULL;
                seen = &mine[k];
                done = 1;
            }
            free(t.b);
            if (!ok && t.n == 0 && j > from + 64)
                break;
        }
        if (!done)
            w->oom = 1;
    }
    free(mine);
}

/* The base witness of node as text (compile time: built; run time: the
 * stored one). */
static int base_text(const sx_grammar *g, int32_t node, gr_wbuf *t, int depth)
{
    gr_wit(g->nodes, node, t);
    return !t->oom && t->n > 0;
}

/* The j-th of a set of distinct values of node (j = 0 its witness, or
 * near it); 0 when there is none. */
static int nth_value(const sx_grammar *g, int32_t node, int64_t j, gr_wbuf *w,
                     int depth)
{
    const gr_node *n = &g->nodes[node];
    /* depth: alternatives and distinct items nest; work: every value
     * tried spends a step, so the candidate loops stay bounded */
    if (depth > 64 || (w->work && gr_work_spend(w->work, 1)))
        return 0;
    switch (n->kind) {
    case GK_EMPTY:
        return 0;
    case GK_LITSET: {
        /* distinct values, shortest spellings first */
        uint32_t m = n->u.lit.n;
        uint8_t *used = calloc(m ? m : 1, 1);
        int r = 0;
        for (int64_t k = 0; used && k <= j; k++) {
            int best = -1;
            for (uint32_t i = 0; i < m; i++)
                if (!used[i] && (best < 0 || n->u.lit.lits[i].len < n->u.lit.lits[best].len))
                    best = (int)i;
            if (best < 0)
                break;
            for (uint32_t i = 0; i < m; i++)
                if (n->u.lit.hash[i] == n->u.lit.hash[best])
                    used[i] = 1;
            if (k == j) {
                gr_wput(w, n->u.lit.lits[best].b, n->u.lit.lits[best].len);
                r = 1;
            }
        }
        free(used);
        return r;
    }
    case GK_STRING: {
        gr_frame f;
        uint8_t tmp[4096];
        memset(&f, 0, sizeof f);
        f.node = node;
        f.phase = S_START;
        uint64_t h;
        long l = gr_str_new_completion(n, &f, NULL, j, tmp, sizeof tmp, &h);
        if (l < 0 || n->u.str.raw)
            return 0;
        gr_wputs(w, "\"");
        gr_wput(w, tmp, (size_t)l);
        gr_wputs(w, "\"");
        return 1;
    }
    case GK_NUMBER: {
        gr_frame f;
        uint8_t tmp[64];
        memset(&f, 0, sizeof f);
        f.node = node;
        f.phase = N_START;
        f.flags = F_UH;
        uint64_t h;
        long l = gr_num_new_completion(n, &f, NULL, j, tmp, sizeof tmp, &h);
        if (l <= 0)
            return 0;
        gr_wput(w, tmp, (size_t)l);
        return 1;
    }
    case GK_OBJECT:
    case GK_ARRAY: {
        gr_wbuf t = {.work = w->work, .limit = w->limit};
        if (!base_text(g, node, &t, depth) || (j > 0 && !gr_can_grow(g, node))) {
            free(t.b);
            return 0;
        }
        if (j == 0) {
            gr_wput(w, t.b, t.n);
            free(t.b);
            return 1;
        }
        /* j more members or items than the witness: a different value */
        gr_wput(w, t.b, t.n - 1);
        int empty = t.n == 2;
        if (n->kind == GK_OBJECT) {
            gr_vseen keys[256];
            int used = 0;
            const gr_vseen *kl = text_keys(t.b, t.n, keys, 256, &used);
            gr_wit_extra_members(g, n, j, !empty, kl, w, depth);
            gr_wputs(w, "}");
        } else {
            int64_t at = n->u.arr.min_items;
            if (n->u.arr.unique == GR_UNIQ_HASH) {
                json_t *v = json_loadb((const char *)t.b, t.n, 0, NULL);
                size_t nv = json_array_size(v);
                gr_vseen *hs = malloc((nv + 1) * sizeof *hs), *list = NULL;
                for (size_t i = 0; hs && i < nv; i++) {
                    hs[i].next = list;
                    hs[i].h = gr_json_hash(json_array_get(v, i));
                    hs[i].idx = NULL;
                    list = &hs[i];
                }
                json_decref(v);
                gr_wit_new_items(g, n, at, j, list, 0, !empty, w, depth);
                free(hs);
            } else {
                for (int64_t k = 0; k < j; k++) {
                    int32_t it = at + k < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[at + k]
                                                                     : n->u.arr.items;
                    if (!empty || k)
                        gr_wputs(w, ",");
                    gr_wit(g->nodes, it, w);
                }
            }
            gr_wputs(w, "]");
        }
        free(t.b);
        return !w->oom;
    }
    case GK_ALT: {
        /* the alternative with the most values, then the others */
        int64_t best_d = -1;
        int32_t best = -1;
        for (uint32_t i = 0; i < n->u.alt.n; i++) {
            int64_t d = gr_distinct_values(g, n->u.alt.alts[i], 0, j + 1);
            if (d > best_d) {
                best_d = d;
                best = n->u.alt.alts[i];
            }
        }
        if (best < 0)
            return 0;
        if (j < best_d || best_d >= GR_LIVE_BIG)
            return nth_value(g, best, j, w, depth + 1);
        j -= best_d;
        for (uint32_t i = 0; i < n->u.alt.n; i++) {
            int32_t a = n->u.alt.alts[i];
            if (a == best)
                continue;
            int64_t d = gr_distinct_values(g, a, 0, j + 1);
            if (d > j)
                return nth_value(g, a, j, w, depth + 1);
            j -= d > 0 ? d : 0;
        }
        return 0;
    }
    }
    return 0;
}

/* Node i's text built from the stored witnesses of its children (a child
 * without one yet fails the build: w->oom).  Never recurses into the
 * graph, so one build costs O(the text written + the node's own size). */
void gr_wit_write(const sx_grammar *g, int32_t i, gr_wbuf *w, int depth)
{
    const gr_node *N = g->nodes;
    const gr_node *n = &N[i];
    switch (n->kind) {
    case GK_EMPTY:
        w->oom = 1;
        return;
    case GK_LITSET: {
        uint32_t best = 0;
        for (uint32_t k = 1; k < n->u.lit.n; k++)
            if (n->u.lit.lits[k].len < n->u.lit.lits[best].len)
                best = k;
        gr_wput(w, n->u.lit.lits[best].b, n->u.lit.lits[best].len);
        return;
    }
    case GK_NUMBER: {
        char buf[400]; /* a bound's digits: up to 309 */
        number_witness(n, buf, sizeof buf);
        gr_wputs(w, buf);
        return;
    }
    case GK_STRING:
        if (!n->u.str.raw)
            gr_wputs(w, "\"");
        if (n->u.str.x) {
            uint8_t tmp[4096];
            long l = gr_strx_complete(n->u.str.x, n->u.str.x->start, 0, n->u.str.min_len,
                                      n->u.str.max_len, n->u.str.raw, tmp, sizeof tmp);
            if (l < 0)
                w->oom = 1;
            else
                gr_wput(w, tmp, (size_t)l);
        } else {
            char as[64];
            memset(as, 'a', sizeof as);
            for (int64_t k = 0; k < n->u.str.min_len && !w->oom; k += 64)
                gr_wput(w, as, (size_t)(n->u.str.min_len - k < 64 ? n->u.str.min_len - k : 64));
        }
        if (!n->u.str.raw)
            gr_wputs(w, "\"");
        return;
    case GK_OBJECT:
        gr_wputs(w, "{");
        gr_wit_object_members(g, n, 0, 0, 0, w, depth, NULL, -1, 0);
        gr_wputs(w, "}");
        return;
    case GK_ARRAY:
        gr_wputs(w, "[");
        if (n->u.arr.lit_class) {
            gr_wit_unique_items(N, n, 0, n->u.arr.min_items, 0, w);
            gr_wputs(w, "]");
            return;
        }
        if (n->u.arr.unique == GR_UNIQ_HASH) {
            gr_wit_new_items(g, n, 0, n->u.arr.min_items, NULL, 0, 0, w, depth);
            gr_wputs(w, "]");
            return;
        }
        if (n->u.arr.n_cont) {
            int64_t zero[GR_MAX_CONTAINS] = {0};
            gr_wit_cont_fill(g, n, 0, zero, 0, 0, w, depth);
            gr_wputs(w, "]");
            return;
        }
        for (int64_t k = 0; k < n->u.arr.min_items && !w->oom; k++) {
            int32_t it = k < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[k] : n->u.arr.items;
            if (k)
                gr_wputs(w, ",");
            gr_wit(N, it, w);
        }
        gr_wputs(w, "]");
        return;
    case GK_ALT: {
        /* the shortest alternative that has a witness so far */
        int32_t best = -1;
        for (uint32_t k = 0; k < n->u.alt.n; k++) {
            int32_t a = n->u.alt.alts[k];
            if (N[a].wit && (best < 0 || N[a].min_bytes < N[best].min_bytes))
                best = a;
        }
        if (best < 0) {
            w->oom = 1;
            return;
        }
        gr_wit(N, best, w);
        return;
    }
    }
}
