/* Short completions.  At compile time every node gets a shortest value
 * text (its witness); at run time a document is finished by closing each
 * open frame from the top down, using witnesses for the values still
 * required.  The generator uses this to close a document before
 * max_tokens runs out; callers verify the text by feeding it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/compile/gr_compile_internal.h"

typedef struct wbuf {
    uint8_t *b;
    size_t n, cap;
    int oom;        /* failed: out of memory, a part without a value, or a stop */
    gr_work *work;  /* spends a step per byte written (NULL: unbounded) */
    size_t limit;   /* the most bytes (0: no limit) */
    int over;       /* failed for the limit */
} wbuf;

static void put(wbuf *w, const void *p, size_t n)
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

static void puts_(wbuf *w, const char *s)
{
    put(w, s, strlen(s));
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
    double cands[8];
    int nc = 0;
    double lo = n->u.num.has_min ? n->u.num.min : -1e300, hi = n->u.num.has_max ? n->u.num.max : 1e300;
    cands[nc++] = 0;
    cands[nc++] = ceil(lo);
    cands[nc++] = floor(hi);
    cands[nc++] = ceil(lo) + 1;
    cands[nc++] = lo;
    cands[nc++] = (lo + hi) / 2;
    cands[nc++] = lo + (hi - lo) / 1024;
    for (int i = 0; i < nc; i++) {
        double x = cands[i];
        if (!isfinite(x) || fabs(x) > 1e17)
            continue;
        for (int prec = 0; prec <= 17; prec++) {
            snprintf(out, cap, "%.*f", prec, x);
            double y = strtod(out, NULL);
            if (num_in_bounds(n, y)) {
                /* "-0" would need care for bounds at zero; plain 0 is fine */
                if (!strcmp(out, "-0"))
                    snprintf(out, cap, "0");
                return;
            }
        }
    }
    snprintf(out, cap, "0");
}

static int wit(const gr_node *N, int32_t node, wbuf *w)
{
    if (node < 0 || !N[node].wit) {
        w->oom = 1;
        return 0;
    }
    put(w, N[node].wit, (size_t)N[node].min_bytes);
    return 1;
}

/* Finishes an additional key with the key automaton from state st
 * (escaped content, closing quote and colon); returns the value node for
 * it or -1.  in_escape: a backslash was just read. */
static int32_t auto_key(const gr_node *n, int32_t st, int in_escape, uint64_t h,
                        const void *seen, wbuf *w, uint64_t *key_hash)
{
    const gr_strx *x = n->u.obj.keyx;
    static const char esc[] = "\"\\bfnrt", dec[] = "\"\\\b\f\n\r\t";
    if (in_escape) {
        int32_t ns = -1;
        for (int i = 0; i < 7 && ns < 0; i++) {
            ns = gr_strx_step(x, st, (uint8_t)dec[i]);
            if (ns >= 0) {
                put(w, &esc[i], 1);
                h = (h ^ (uint8_t)esc[i]) * 1099511628211ULL;
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
        h = (h ^ tmp[i]) * GR_KEY_PRIME;
    if (key_hash)
        *key_hash = h;
    put(w, tmp, (size_t)l);
    puts_(w, "\":");
    return n->u.obj.close_node[final];
}

#define KEY_BASIS 1469598103934665603ULL

/* uniqueItems over listed values: n more items, each the shortest literal
 * of a value class not used yet. */
static void unique_items(const gr_node *N, const gr_node *arr, uint64_t used, int64_t n,
                         int need_comma, wbuf *w)
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
            puts_(w, ",");
        put(w, ls->u.lit.lits[best].b, ls->u.lit.lits[best].len);
        used |= 1ull << arr->u.arr.lit_class[best];
    }
}

static void write_witness(const sx_grammar *g, int32_t i, wbuf *w,
                          int depth);

/* The object's remaining members: required ones not yet seen, then
 * optional ones until minProperties is met.  `first` says whether a comma
 * is needed before the first member written. */
static void object_members(const sx_grammar *g, const gr_node *n, uint64_t seen, int64_t count,
                           int need_comma, wbuf *w, int depth,
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
            char *e = gc_encode_string(k, strlen(k), &kl);
            if (e && *used < cap) {
                into[*used].next = list;
                into[*used].h = gr_key_hash((const uint8_t *)e, kl);
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
static size_t fresh_key(const gr_node *n, const void *seen_keys, long *next, char key[32])
{
    for (;;) {
        long i = (*next)++;
        size_t kl = i ? (size_t)snprintf(key, 32, "_%ld", i) : (size_t)snprintf(key, 32, "_");
        if (!listed_name(n, key, kl) &&
            !(seen_keys && gr_key_listed(seen_keys, gr_key_hash((const uint8_t *)key, kl))))
            return kl;
    }
}

/* Property-order mode: the keys still needed, in `properties` order from
 * position ord -- the required ones, and optional ones while the object
 * is short of minProperties. */
static void ordered_members(const sx_grammar *g, const gr_node *n, uint64_t seen, int64_t count,
                            uint64_t req, int need_comma, wbuf *w, int depth,
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
            puts_(w, ",");
        puts_(w, "\"");
        put(w, p->key, p->key_len);
        puts_(w, "\":");
        wit(g->nodes, p->node, w);
        seen |= bit;
        count++;
        ord = gr_ord_after(p);
        need_comma = 1;
    }
    /* still short of minProperties: invented additional keys (last) */
    long next_key = 0;
    for (int64_t k = 0; count < n->u.obj.min_props && n->u.obj.additional >= 0 && k < 1000; k++) {
        char key[32];
        size_t kl = fresh_key(n, seen_keys, &next_key, key);
        puts_(w, need_comma ? ",\"" : "\"");
        put(w, key, kl);
        puts_(w, "\":");
        wit(g->nodes, n->u.obj.additional, w);
        count++;
        need_comma = 1;
    }
    if (count < n->u.obj.min_props)
        w->oom = 1;
}

static void object_members(const sx_grammar *g, const gr_node *n, uint64_t seen, int64_t count,
                           int need_comma, wbuf *w, int depth,
                           const void *seen_keys, int32_t skip, uint16_t ord)
{
    uint64_t req = n->u.obj.required, before;
    /* a key that will be written can require others in turn
     * (dependentRequired): to the closure */
    do {
        before = req;
        for (uint32_t k = 0; n->u.obj.dep_req && k < n->u.obj.n; k++)
            if ((seen | req) & gr_prop_bit(&n->u.obj.props[k]))
                req |= n->u.obj.dep_req[n->u.obj.props[k].index];
    } while (req != before);
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
            int wanted = pass == 0 ? (req & bit) != 0 : count < n->u.obj.min_props;
            /* pass 0 writes bit keys only, so a hashed key comes up once */
            if (!wanted || gr_prop_seen(p, seen, seen_keys) || (int32_t)k == skip || p->node < 0)
                continue;
            if (pass == 1 && !gr_obj_feasible(n, seen | bit, count + 1))
                continue;
            /* an optional key whose value has no witness yet (a recursive
             * one, while shortest values are found: {"b": <this object>}
             * under minProperties) is left to invented keys below, which
             * may well finish the object without it */
            if (pass == 1 && !g->nodes[p->node].wit)
                continue;
            if (need_comma)
                puts_(w, ",");
            puts_(w, "\"");
            put(w, p->key, p->key_len);
            puts_(w, "\":");
            wit(g->nodes, p->node, w);
            seen |= bit;
            count++;
            need_comma = 1;
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
                puts_(w, ",");
            puts_(w, "\"");
            size_t key_at = w->n;
            int32_t vn = auto_key(n, n->u.obj.keyx->start, 0, KEY_BASIS, keys, w, NULL);
            if (vn < 0 || w->oom || w->n < key_at + 2) {
                w->oom = 1;
                return;
            }
            /* the key as written, without the closing quote and colon */
            made[i].h = gr_key_hash(w->b + key_at, w->n - key_at - 2);
            made[i].next = keys;
            keys = &made[i];
            wit(g->nodes, vn, w);
            count++;
            need_comma = 1;
        }
        return;
    }
    long next_key = 0;
    for (int64_t k = 0; count < n->u.obj.min_props && n->u.obj.additional >= 0 && k < 1000; k++) {
        char key[32];
        size_t kl = fresh_key(n, seen_keys, &next_key, key);
        puts_(w, need_comma ? ",\"" : "\"");
        put(w, key, kl);
        puts_(w, "\":");
        wit(g->nodes, n->u.obj.additional, w);
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
static void cont_fill(const sx_grammar *g, const gr_node *n, int64_t count, const int64_t *cnt,
                      int must_one, int need_comma, wbuf *w, int depth)
{
    const gr_node *N = g->nodes;
    int64_t wrote = 0;
    for (int i = 0; i < n->u.arr.n_cont; i++) {
        int32_t tn = n->u.arr.ctag_node[1 << i];
        for (int64_t k = cnt[i]; k < n->u.arr.cmin[i] && !w->oom; k++, wrote++) {
            if (need_comma || wrote)
                puts_(w, ",");
            wit(g->nodes, tn, w);
        }
    }
    int32_t fill = n->u.arr.ctag_node[0];
    if (fill < 0 || N[fill].kind == GK_EMPTY || !N[fill].wit)
        fill = n->u.arr.ctag_node[1];
    for (; (count + wrote < n->u.arr.min_items || (must_one && !wrote)) && !w->oom; wrote++) {
        if (need_comma || wrote)
            puts_(w, ",");
        wit(g->nodes, fill, w);
    }
}

/* ---- distinct values (uniqueItems items) -------------------------------- */

static int nth_value(const sx_grammar *g, int32_t node, int64_t j, wbuf *w,
                     int depth);

#define MAX_EXTRA 64

/* k more members with invented additional keys, none among `keys` (a
 * gr_vseen list of key hashes) or the listed names. */
static void extra_members(const sx_grammar *g, const gr_node *n, int64_t k, int need_comma,
                          const gr_vseen *keys, wbuf *w, int depth)
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
            puts_(w, ",");
        puts_(w, "\"");
        if (n->u.obj.keyx) {
            uint8_t tmp[1024];
            int32_t final = -1;
            long l = gr_keyauto_new_key(n->u.obj.keyx, n->u.obj.close_node, n->u.obj.keyx->start,
                                        GR_FNV_BASIS, keys, tmp, sizeof tmp, &final);
            if (l < 0 || final < 0) {
                w->oom = 1;
                return;
            }
            put(w, tmp, (size_t)l);
            kh = gr_key_hash(tmp, (size_t)l);
            vn = n->u.obj.close_node[final];
        } else {
            char key[32];
            size_t kl;
            do {
                kl = (size_t)snprintf(key, sizeof key, "_v%ld", name++);
                kh = gr_key_hash((const uint8_t *)key, kl);
            } while (listed_name(n, key, kl) || gr_vseen_has(keys, kh));
            put(w, key, kl);
            vn = n->u.obj.additional;
        }
        puts_(w, "\":");
        local[i].next = keys;
        local[i].h = kh;
        keys = &local[i];
        wit(g->nodes, vn, w);
    }
}

/* n more items from position `at` of a GR_UNIQ_HASH array, each with a
 * value none of `seen` (or each other) has; candidates from `from` on. */
static void new_items(const sx_grammar *g, const gr_node *arr, int64_t at, int64_t n,
                      const gr_vseen *seen, int64_t from, int need_comma, wbuf *w, int depth)
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
            wbuf t = {.work = w->work, .limit = w->limit};
            /* the look-up below walks the k items written: spent too */
            if (w->work && gr_work_spend(w->work, k + 1)) {
                w->oom = 1;
                break;
            }
            int ok = it >= 0 && nth_value(g, it, j, &t, depth + 1) && !t.oom;
            uint64_t h = ok ? gc_text_hash((const char *)t.b, t.n, &ok) : 0;
            if (ok && !gr_vseen_has(seen, h)) {
                if (need_comma || k)
                    puts_(w, ",");
                put(w, t.b, t.n);
                mine[k].next = seen;
                mine[k].h = h;
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
static int base_text(const sx_grammar *g, int32_t node, wbuf *t, int depth)
{
    wit(g->nodes, node, t);
    return !t->oom && t->n > 0;
}

/* The j-th of a set of distinct values of node (j = 0 its witness, or
 * near it); 0 when there is none. */
static int nth_value(const sx_grammar *g, int32_t node, int64_t j, wbuf *w,
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
                put(w, n->u.lit.lits[best].b, n->u.lit.lits[best].len);
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
        puts_(w, "\"");
        put(w, tmp, (size_t)l);
        puts_(w, "\"");
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
        put(w, tmp, (size_t)l);
        return 1;
    }
    case GK_OBJECT:
    case GK_ARRAY: {
        wbuf t = {.work = w->work, .limit = w->limit};
        if (!base_text(g, node, &t, depth) || (j > 0 && !gc_can_grow(g, node))) {
            free(t.b);
            return 0;
        }
        if (j == 0) {
            put(w, t.b, t.n);
            free(t.b);
            return 1;
        }
        /* j more members or items than the witness: a different value */
        put(w, t.b, t.n - 1);
        int empty = t.n == 2;
        if (n->kind == GK_OBJECT) {
            gr_vseen keys[256];
            int used = 0;
            const gr_vseen *kl = text_keys(t.b, t.n, keys, 256, &used);
            extra_members(g, n, j, !empty, kl, w, depth);
            puts_(w, "}");
        } else {
            int64_t at = n->u.arr.min_items;
            if (n->u.arr.unique == GR_UNIQ_HASH) {
                json_t *v = json_loadb((const char *)t.b, t.n, 0, NULL);
                size_t nv = json_array_size(v);
                gr_vseen *hs = malloc((nv + 1) * sizeof *hs), *list = NULL;
                for (size_t i = 0; hs && i < nv; i++) {
                    hs[i].next = list;
                    hs[i].h = gc_json_hash(json_array_get(v, i));
                    list = &hs[i];
                }
                json_decref(v);
                new_items(g, n, at, j, list, 0, !empty, w, depth);
                free(hs);
            } else {
                for (int64_t k = 0; k < j; k++) {
                    int32_t it = at + k < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[at + k]
                                                                     : n->u.arr.items;
                    if (!empty || k)
                        puts_(w, ",");
                    wit(g->nodes, it, w);
                }
            }
            puts_(w, "]");
        }
        free(t.b);
        return !w->oom;
    }
    case GK_ALT: {
        /* the alternative with the most values, then the others */
        int64_t best_d = -1;
        int32_t best = -1;
        for (uint32_t i = 0; i < n->u.alt.n; i++) {
            int64_t d = gc_distinct_values(g, n->u.alt.alts[i], 0, j + 1);
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
            int64_t d = gc_distinct_values(g, a, 0, j + 1);
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
static void write_witness(const sx_grammar *g, int32_t i, wbuf *w, int depth)
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
        put(w, n->u.lit.lits[best].b, n->u.lit.lits[best].len);
        return;
    }
    case GK_NUMBER: {
        char buf[64];
        number_witness(n, buf, sizeof buf);
        puts_(w, buf);
        return;
    }
    case GK_STRING:
        if (!n->u.str.raw)
            puts_(w, "\"");
        if (n->u.str.x) {
            uint8_t tmp[4096];
            long l = gr_strx_complete(n->u.str.x, n->u.str.x->start, 0, n->u.str.min_len,
                                      n->u.str.max_len, n->u.str.raw, tmp, sizeof tmp);
            if (l < 0)
                w->oom = 1;
            else
                put(w, tmp, (size_t)l);
        } else {
            char as[64];
            memset(as, 'a', sizeof as);
            for (int64_t k = 0; k < n->u.str.min_len && !w->oom; k += 64)
                put(w, as, (size_t)(n->u.str.min_len - k < 64 ? n->u.str.min_len - k : 64));
        }
        if (!n->u.str.raw)
            puts_(w, "\"");
        return;
    case GK_OBJECT:
        puts_(w, "{");
        object_members(g, n, 0, 0, 0, w, depth, NULL, -1, 0);
        puts_(w, "}");
        return;
    case GK_ARRAY:
        puts_(w, "[");
        if (n->u.arr.lit_class) {
            unique_items(N, n, 0, n->u.arr.min_items, 0, w);
            puts_(w, "]");
            return;
        }
        if (n->u.arr.unique == GR_UNIQ_HASH) {
            new_items(g, n, 0, n->u.arr.min_items, NULL, 0, 0, w, depth);
            puts_(w, "]");
            return;
        }
        if (n->u.arr.n_cont) {
            int64_t zero[GR_MAX_CONTAINS] = {0};
            cont_fill(g, n, 0, zero, 0, 0, w, depth);
            puts_(w, "]");
            return;
        }
        for (int64_t k = 0; k < n->u.arr.min_items && !w->oom; k++) {
            int32_t it = k < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[k] : n->u.arr.items;
            if (k)
                puts_(w, ",");
            wit(N, it, w);
        }
        puts_(w, "]");
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
        wit(N, best, w);
        return;
    }
    }
}

/* The longest witness kept: a longer shortest value (a deep chain of
 * minItems) gets none, and completions through it are not offered. */
#define WIT_MAX_BYTES 65536
/* The witness search's work budget, in bytes written by all builds
 * together (each node is built at most once per child, plus the retry
 * passes): a schema past it is refused, naming the node's keyword. */
#define WIT_MAX_WORK (32L << 20)

typedef struct wheap {
    int64_t *k; /* (length << 32) | node */
    size_t n, cap;
} wheap;

static int heap_push(wheap *h, int64_t len, int32_t node)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        int64_t *nk = realloc(h->k, cap * sizeof *nk);
        if (!nk)
            return -1;
        h->k = nk;
        h->cap = cap;
    }
    size_t i = h->n++;
    int64_t v = len << 32 | (uint32_t)node;
    while (i > 0 && h->k[(i - 1) / 2] > v) {
        h->k[i] = h->k[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->k[i] = v;
    return 0;
}

static int64_t heap_pop(wheap *h)
{
    int64_t top = h->k[0], v = h->k[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = l + 1, s = i;
        int64_t sv = v;
        if (l < h->n && h->k[l] < sv) {
            s = l;
            sv = h->k[l];
        }
        if (m < h->n && h->k[m] < sv)
            s = m;
        if (s == i)
            break;
        h->k[i] = h->k[s];
        i = s;
    }
    if (h->n)
        h->k[i] = v;
    return top;
}

/* A candidate text for node i from the witnesses final so far; 1 when
 * one was built (into *cand / *clen when shorter than the one held). */
static int try_build(gc_ctx *c, gr_work *work, int32_t i, uint8_t **cand, int32_t *clen,
                     int32_t *stopped_at, uint8_t *too_long)
{
    wbuf w = {.work = work, .limit = WIT_MAX_BYTES};
    if (too_long[i])
        return 0;
    write_witness(c->g, i, &w, 0);
    /* past WIT_MAX_BYTES from final parts: no witness, and no more tries
     * (each would write as much again) */
    too_long[i] = (uint8_t)w.over;
    if (work->stop && *stopped_at < 0)
        *stopped_at = i; /* the node whose build the stop cut short */
    int better = !w.oom && (clen[i] < 0 || (int32_t)w.n < clen[i]);
    if (better) {
        free(cand[i]);
        cand[i] = w.b;
        clen[i] = (int32_t)w.n;
        w.b = NULL;
    }
    free(w.b);
    return better;
}

/* Shortest witnesses by Knuth's generalisation of Dijkstra's algorithm:
 * a node's text is built only from the final texts of its children, and
 * nodes become final in the order of their lengths (a container is
 * longer than each part it holds, an alternative as long as its branch),
 * so each node is built at most once per child that becomes final --
 * O(edges) builds of at most WIT_MAX_BYTES each, with no recursion over
 * the graph (recursive schemas used to be unfolded to depth 200 here,
 * exponentially).  Builds that reach through a child to a grandchild
 * (distinct items of uniqueItems) are retried in passes at the end, each
 * making one more node final or ending the search. */
int gc_witness(gc_ctx *c)
{
    gr_node *N = c->g->nodes;
    int32_t n = c->g->n_nodes;
    int32_t *clen = malloc(((size_t)n + 1) * sizeof *clen), *par = NULL, *par_at = NULL;
    int32_t *stamp = malloc(((size_t)n + 1) * sizeof *stamp);
    uint8_t **cand = calloc((size_t)n + 1, sizeof *cand), *too_long = calloc((size_t)n + 1, 1);
    wheap h = {0};
    gr_work work;
    int32_t stopped_at = -1;
    int rc = SX_OK;
    gr_work_init(&work, &c->opts, WIT_MAX_WORK);
    if (!clen || !stamp || !cand || !too_long || gc_parents(c->g, &par_at, &par)) {
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        goto out;
    }
    for (int32_t i = 0; i < n; i++) {
        clen[i] = -1;
        stamp[i] = -1;
        N[i].wit = NULL;
        N[i].min_bytes = -1;
    }
    for (int32_t i = 0; i < n && !work.stop; i++)
        if (N[i].kind != GK_EMPTY && try_build(c, &work, i, cand, clen, &stopped_at, too_long) &&
            heap_push(&h, clen[i], i))
            goto oom;
    for (int pass = 0; !work.stop; pass++) {
        int made = 0;
        while (h.n && !work.stop) {
            int64_t top = heap_pop(&h);
            int32_t i = (int32_t)(top & 0xFFFFFFFF), l = (int32_t)(top >> 32);
            if (N[i].wit || clen[i] != l)
                continue; /* final already, or a stale entry */
            uint8_t *t = gc_alloc(c, (size_t)l + 1);
            if (!t)
                goto oom;
            if (l) /* an empty witness: regex mode with an empty match */
                memcpy(t, cand[i], (size_t)l);
            N[i].wit = t;
            N[i].min_bytes = l;
            free(cand[i]);
            cand[i] = NULL;
            made = 1;
            for (int32_t e = par_at[i]; e < par_at[i + 1]; e++) {
                int32_t p = par[e];
                if (N[p].wit || stamp[p] == i)
                    continue;
                stamp[p] = i;
                if (try_build(c, &work, p, cand, clen, &stopped_at, too_long) &&
                    heap_push(&h, clen[p], p))
                    goto oom;
            }
        }
        if (!made && pass > 0)
            break;
        /* the retry pass: nodes still without a witness, with everything
         * final so far */
        for (int32_t i = 0; i < n && !work.stop; i++)
            if (!N[i].wit && N[i].kind != GK_EMPTY &&
                try_build(c, &work, i, cand, clen, &stopped_at, too_long) &&
                heap_push(&h, clen[i], i))
                goto oom;
        if (!h.n)
            break;
    }
    if (work.stop) {
        const char *p = gc_node_ptr(c, stopped_at);
        rc = sx_err_setp(c->err, SX_ELIMIT, p, -1,
                         "compile stopped (%s) while finding shortest values, at %s",
                         gr_stop_text(work.stop), p[0] ? p : "the root");
    }
    goto out;
oom:
    rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
out:
    if (cand)
        for (int32_t i = 0; i < n; i++)
            free(cand[i]);
    free(cand);
    free(too_long);
    free(clen);
    free(stamp);
    free(par);
    free(par_at);
    free(h.k);
    return rc;
}

/* ---- run time ------------------------------------------------------------ */

/* Numbers end on the next byte, and bounds decide which digits work: a
 * small iterative-deepening search over digits, run on a copy of the frame
 * under a fake root. */
static void finish_number(const sx_grammar *g, const gr_frame *f, wbuf *w)
{
    static const char digits[] = "0123456789.e-"; /* digits first: shortest plain */
    gr_frame root, top = *f;
    memset(&root, 0, sizeof root);
    root.node = -1;
    root.phase = R_WAIT;
    top.up = &root;
    gr_arena a = {0};
    gr_ctx cx = {.g = g, .arena = &a, .max_ws = 0, .max_stack = g->opts.max_stack};
    gr_set cur;
    cur.n = 1;
    cur.overflow = 0;
    cur.f[0] = &top;
    char path[24];
    int found = -1;
    for (int limit = 0; limit <= 20 && found < 0; limit++) {
        /* depth-first, digits in order; stack of (set, next digit) */
        gr_set stack[21];
        int next[21];
        int d = 0;
        stack[0] = cur;
        next[0] = 0;
        long budget = 20000;
        while (d >= 0 && budget-- > 0) {
            if (d == limit) {
                if (gr_can_end(&cx, &stack[d])) {
                    found = d;
                    break;
                }
                d--;
                continue;
            }
            if (next[d] >= (int)sizeof digits - 1) {
                d--;
                continue;
            }
            int c = digits[next[d]++];
            gr_feed_set(&cx, &stack[d], c, &stack[d + 1]);
            if (stack[d + 1].n == 0)
                continue;
            path[d] = (char)c;
            d++;
            next[d] = 0;
        }
    }
    gr_arena_free(&a);
    if (found < 0)
        w->oom = 1;
    else
        put(w, path, (size_t)found);
}

static void finish_string(const gr_node *n, const gr_frame *f, wbuf *w)
{
    int64_t count = f->count;
    int phase = f->phase;
    const gr_strx *x = n->u.str.x;
    int32_t st = (int32_t)f->pos;
    if (phase == S_START) {
        if (!n->u.str.raw)
            puts_(w, "\"");
        phase = S_IN;
        st = x ? x->start : 0;
    }
    if (phase == S_ESC) {
        /* the first escape that keeps the string alive */
        static const char esc[] = "\"\\/bfnrt", dec[] = "\"\\/\b\f\n\r\t";
        int done = 0;
        for (int i = 0; i < 8 && !done; i++) {
            int32_t ns = x ? gr_strx_step(x, st, (uint8_t)dec[i]) : 0;
            if (ns >= 0 && (!x || gr_strx_len_ok(x, ns, count + 1, n->u.str.min_len,
                                                 n->u.str.max_len))) {
                put(w, &esc[i], 1);
                st = ns;
                done = 1;
            }
        }
        if (!done) {
            w->oom = 1;
            return;
        }
        count++;
        phase = S_IN;
    } else if (phase == S_U) {
        for (int k = f->aux; k < 4; k++)
            puts_(w, "0");
        count++;
        phase = S_IN;
    } else if (f->aux && !x) {
        uint8_t b = f->u8lo;
        put(w, &b, 1);
        for (int k = 1; k < f->aux; k++)
            put(w, "\x80", 1);
    }
    if (x) {
        uint8_t tmp[4096];
        long l = gr_strx_complete(x, st, count, n->u.str.min_len, n->u.str.max_len,
                                  n->u.str.raw, tmp, sizeof tmp);
        if (l < 0) {
            w->oom = 1;
            return;
        }
        put(w, tmp, (size_t)l);
    } else {
        for (; count < n->u.str.min_len; count++)
            puts_(w, "a");
    }
    if (!n->u.str.raw)
        puts_(w, "\"");
}

/* Completes a key being typed with the shortest usable known key; returns
 * its index in props, or -1 when no known key fits (the key is then an
 * additional one). */
static int finish_key(const gr_node *n, const gr_frame *f, wbuf *w)
{
    const gr_prop *P = n->u.obj.props;
    int best = -1;
    for (uint32_t i = f->lo; i < f->hi; i++)
        if (P[i].node >= 0 && !gr_prop_seen(&P[i], f->seen, f->ext) &&
            (best < 0 || P[i].key_len < P[best].key_len) && gr_ord_ok(n, f->ord, &P[i]) &&
            gr_obj_feasible_add(n, f->seen, f->count, &P[i]))
            best = (int)i;
    if (best >= 0) {
        put(w, P[best].key + f->pos, P[best].key_len - f->pos);
        puts_(w, "\":");
    }
    return best;
}

long gr_complete(const sx_grammar *g, const gr_frame *top, int variant, gr_work *work,
                 uint8_t *buf, size_t cap)
{
    const gr_node *N = g->nodes;
    wbuf w = {.work = work, .limit = cap};
    const gr_frame *f = top;
    gr_frame tmp;
    int first = 1;
    uint64_t add_seen = 0; /* value class the finished literal item used */
    gr_vseen fin;          /* the value of a scalar item just finished */
    int have_fin = 0;
    int last_tag = 0;      /* the contains constraints the finished item counts for */
    while (f && !w.oom) {
        if (f->node == -2)
            break;
        if (f->node == -1) {
            if (f->phase == R_WAIT && f->lo == 1)
                wit(N, g->root, &w);
            break;
        }
        const gr_node *n = &N[f->node];
        if (!first) {
            /* a parent whose child just finished */
            tmp = *f;
            if (n->kind == GK_OBJECT) {
                tmp.phase = O_AFTER;
            } else if (n->kind == GK_ARRAY) {
                tmp.phase = A_AFTER;
                tmp.count++;
                tmp.seen |= add_seen;
                if (have_fin && n->u.arr.unique == GR_UNIQ_HASH) {
                    /* new items must differ from it too */
                    fin.next = tmp.ext;
                    tmp.ext = &fin;
                }
            }
            add_seen = 0;
            have_fin = 0;
            f = &tmp;
        }
        int first_frame = first;
        first = 0;
        switch (n->kind) {
        case GK_LITSET: {
            /* an item of a uniqueItems array takes a value not used yet */
            const gr_node *pn = f->up && f->up->node >= 0 ? &N[f->up->node] : NULL;
            const uint8_t *cls = pn && pn->kind == GK_ARRAY ? pn->u.arr.lit_class : NULL;
            const gr_vseen *hs = (f->flags & F_UITEM) ? f->up->ext : NULL;
            int best = -1;
            for (uint32_t k = f->lo; k < f->hi; k++)
                if ((!cls || !(f->up->seen >> cls[k] & 1)) &&
                    !(hs && gr_vseen_has(hs, n->u.lit.hash[k])) &&
                    (best < 0 || n->u.lit.lits[k].len < n->u.lit.lits[best].len))
                    best = (int)k;
            if (best < 0) {
                w.oom = 1;
                break;
            }
            put(&w, n->u.lit.lits[best].b + f->pos, n->u.lit.lits[best].len - f->pos);
            if (cls)
                add_seen = 1ull << cls[best];
            if (hs || (f->flags & F_UITEM)) {
                fin.h = n->u.lit.hash[best];
                have_fin = 1;
            }
            break;
        }
        case GK_NUMBER:
            if ((f->flags & F_UITEM) || n->u.num.n_excl) {
                /* a value no earlier item has, none of the excluded */
                uint8_t t[64];
                int uitem = (f->flags & F_UITEM) != 0;
                long l = gr_num_new_completion(n, f, uitem ? f->up->ext : NULL,
                                               uitem ? variant : 0, t, sizeof t, &fin.h);
                /* too few ways to finish this value for the variant (a
                 * lone "0"): the outer values take the variant instead */
                if (l < 0 && uitem && variant > 0)
                    l = gr_num_new_completion(n, f, f->up->ext, 0, t, sizeof t, &fin.h);
                if (l < 0)
                    w.oom = 1;
                else
                    put(&w, t, (size_t)l);
                have_fin = uitem;
            } else if (f->phase == N_START) {
                wit(N, f->node, &w);
            } else {
                finish_number(g, f, &w);
            }
            break;
        case GK_STRING:
            if ((f->flags & F_UITEM) && !n->u.str.raw) {
                uint8_t t[4096];
                long l = gr_str_new_completion(n, f, f->up->ext, variant, t, sizeof t, &fin.h);
                if (l < 0 && variant > 0)
                    l = gr_str_new_completion(n, f, f->up->ext, 0, t, sizeof t, &fin.h);
                have_fin = 1;
                if (l < 0) {
                    w.oom = 1;
                } else {
                    if (f->phase == S_START)
                        puts_(&w, "\"");
                    put(&w, t, (size_t)l);
                    puts_(&w, "\"");
                }
            } else {
                finish_string(n, f, &w);
            }
            break;
        case GK_OBJECT: {
            uint64_t seen = f->seen;
            int64_t count = f->count;
            int ph = f->phase;
            uint16_t ord = f->ord; /* property-order position */
            int32_t skip = -1; /* a hashed key just written */
            gr_vseen just = {0};   /* an invented key just finished */
            const void *keys = f->ext;
            size_t seg = w.n;
            if (ph == O_START) {
                wit(N, f->node, &w);
                break;
            }
            if (ph == O_KEY) {
                int best = finish_key(n, f, &w);
                if (best < 0 && n->u.obj.keyx) {
                    int32_t vn = auto_key(n, f->kst, (f->flags & 4u) != 0, (uint64_t)f->val,
                                          f->ext, &w, &just.h);
                    if (vn < 0) {
                        w.oom = 1;
                    } else {
                        wit(N, vn, &w);
                        /* keys invented below must differ from this one too */
                        just.next = f->ext;
                        keys = &just;
                    }
                    ord = GR_ORD_UNLISTED;
                } else if (best < 0) {
                    /* a new additional key: close it; more bytes make
                     * sure it spells neither a known key nor one the
                     * object already has (hashed as the matcher does) */
                    uint64_t h = (uint64_t)f->val;
                    if (f->flags & 4u) { /* inside an escape */
                        puts_(&w, "n");
                        h = (h ^ 'n') * GR_KEY_PRIME;
                    }
                    if (f->aux) {
                        uint8_t b = f->u8lo;
                        put(&w, &b, 1);
                        h = (h ^ b) * GR_KEY_PRIME;
                        for (int k = 1; k < f->aux; k++) {
                            put(&w, "\x80", 1);
                            h = (h ^ 0x80) * GR_KEY_PRIME;
                        }
                    }
                    int more = f->lo < f->hi || gr_key_listed(f->ext, h);
                    for (int k = 0; more && k < 64; k++) {
                        puts_(&w, "~");
                        h = (h ^ '~') * GR_KEY_PRIME;
                        more = gr_key_listed(f->ext, h);
                    }
                    puts_(&w, "\":");
                    wit(N, n->u.obj.additional, &w);
                    ord = GR_ORD_UNLISTED;
                } else {
                    wit(N, n->u.obj.props[best].node, &w);
                    seen |= gr_prop_bit(&n->u.obj.props[best]);
                    skip = best;
                    if (n->u.obj.by_order)
                        ord = gr_ord_after(&n->u.obj.props[best]);
                }
                count++;
                ph = O_AFTER;
            } else if (ph == O_COLON || ph == O_VALUE) {
                if (ph == O_COLON)
                    puts_(&w, ":");
                wit(N, (int32_t)f->lo, &w);
                ph = O_AFTER;
            }
            /* indented layout: a run after '{' announces a member */
            if (ph == O_COMMA || (ph == O_OPEN && f->ws > 0 && g->opts.ws_mode == SX_WS_INDENTED)) {
                /* a member must follow the comma */
                size_t before = w.n;
                object_members(g, n, seen, count, 0, &w, 0, keys, skip, ord);
                if (w.n == before) {
                    /* nothing required: any usable optional key, else an
                     * invented additional one */
                    int done = 0;
                    for (uint32_t m = 0; m < n->u.obj.n && !done; m++) {
                        uint32_t k = n->u.obj.by_order ? n->u.obj.by_order[m] : m;
                        const gr_prop *p = &n->u.obj.props[k];
                        if (p->node >= 0 && !gr_prop_seen(p, seen, f->ext) &&
                            gr_ord_ok(n, ord, p) && gr_obj_feasible_add(n, seen, count, p)) {
                            puts_(&w, "\"");
                            put(&w, p->key, p->key_len);
                            puts_(&w, "\":");
                            wit(N, p->node, &w);
                            done = 1;
                        }
                    }
                    if (!done && n->u.obj.keyx) {
                        puts_(&w, "\"");
                        int32_t vn = auto_key(n, n->u.obj.keyx->start, 0, KEY_BASIS, keys, &w, NULL);
                        if (vn < 0)
                            w.oom = 1;
                        else
                            wit(N, vn, &w);
                    } else if (!done) {
                        /* a name neither present nor listed */
                        char key[32];
                        long next = 0;
                        size_t kl = fresh_key(n, keys, &next, key);
                        puts_(&w, "\"");
                        put(&w, key, kl);
                        puts_(&w, "\":");
                        wit(N, n->u.obj.additional, &w);
                    }
                }
            } else {
                object_members(g, n, seen, count, ph != O_OPEN, &w, 0, keys, skip, ord);
            }
            if ((f->flags & F_UITEM) && variant > 0) {
                /* an item equal to an earlier one: more members make it new */
                int has = f->count > 0 || w.n > seg || f->phase == O_KEY;
                extra_members(g, n, variant, has, f->ext, &w, 0);
            }
            puts_(&w, "}");
            break;
        }
        case GK_ARRAY: {
            int64_t count = f->count;
            if (f->phase == A_START) {
                wit(N, f->node, &w);
                break;
            }
            int need_comma = f->phase == A_AFTER;
            /* an item must follow a comma, and in the indented layout a
             * run after '[' */
            int item_due = f->phase == A_COMMA ||
                           (f->phase == A_OPEN && f->ws > 0 && g->opts.ws_mode == SX_WS_INDENTED);
            if (n->u.arr.lit_class) {
                int64_t more = n->u.arr.min_items - count;
                if (item_due && more < 1)
                    more = 1; /* an item must follow the comma */
                unique_items(N, n, f->seen, more > 0 ? more : 0, f->phase == A_AFTER, &w);
                puts_(&w, "]");
                break;
            }
            if (n->u.arr.n_cont && f->phase != A_START) {
            int64_t cnt[GR_MAX_CONTAINS];
            for (int i = 0; i < n->u.arr.n_cont; i++) {
                cnt[i] = (int64_t)((uint64_t)f->val >> (16 * i) & 0xFFFF);
                if (!first_frame && (last_tag >> i & 1))
                    cnt[i]++;
            }
            cont_fill(g, n, count, cnt, item_due, f->phase == A_AFTER, &w, 0);
            puts_(&w, "]");
            break;
        }
        if (n->u.arr.unique == GR_UNIQ_HASH || ((f->flags & F_UITEM) && variant > 0)) {
                /* items that must be new; an item of an outer uniqueItems
                 * array that may equal an earlier one takes `variant`
                 * more */
                int64_t more = n->u.arr.min_items - count;
                if (item_due && more < 1)
                    more = 1; /* an item must follow the comma */
                if (more < 0)
                    more = 0;
                if ((f->flags & F_UITEM) && variant > 0)
                    more += variant;
                const gr_vseen *hs = n->u.arr.unique == GR_UNIQ_HASH ? f->ext : NULL;
                new_items(g, n, count, more, hs, 0, need_comma, &w, 0);
                puts_(&w, "]");
                break;
            }
            if (item_due) {
                int32_t it = count < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[count] : n->u.arr.items;
                wit(N, it, &w);
                count++;
                need_comma = 1;
            }
            for (; count < n->u.arr.min_items && !w.oom; count++) {
                int32_t it = count < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[count] : n->u.arr.items;
                if (need_comma)
                    puts_(&w, ",");
                wit(N, it, &w);
                need_comma = 1;
            }
            puts_(&w, "]");
            break;
        }
        case GK_EMPTY:
        case GK_ALT:
            w.oom = 1;
            break;
        }
        last_tag = f->ctag;
        f = f->up;
    }
    long result = -1;
    if (!w.oom && w.n <= cap) {
        if (w.n)
            memcpy(buf, w.b, w.n);
        result = (long)w.n;
    }
    free(w.b);
    return result;
}
