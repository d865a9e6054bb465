/* Liveness of values that must differ from a finite set of others: the
 * items of a uniqueItems array (each must differ from the earlier ones)
 * and numbers under `not` of listed values.  Values are compared by their
 * hashes (ir/ir.h).  A value being written stays alive while some
 * completion of it hashes to none of the blocked values: most states have
 * far more completions than there are blocked values (a count decides),
 * the few others are enumerated. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/ir/ir.h"

#define LIVE_BIG ((int64_t)1 << 40)

static int str_new(uint64_t fnv, const gr_vseen *seen)
{
    return !gr_vseen_has(seen, gr_hash_str(fnv));
}

/* ---- strings without a pattern -------------------------------------- */

/* The last character is half written: some way to finish its `aux`
 * bytes (the next in [lo, hi], the others continuation bytes) gives a
 * new value. */
static int tail_new(uint64_t h, int aux, int lo, int hi, const gr_vseen *seen)
{
    for (int b = lo; b <= hi; b++) {
        uint64_t h2 = gr_fnv(h, (uint8_t)b);
        if (aux == 1 ? str_new(h2, seen) : tail_new(h2, aux - 1, 0x80, 0xBF, seen))
            return 1;
    }
    return 0;
}

/* One more code point in [lo, hi] (not a surrogate) ends the string with
 * a new value. */
static int cp_new(uint64_t h, uint32_t lo, uint32_t hi, const gr_vseen *seen, int64_t n_seen)
{
    int64_t ways = (int64_t)hi - lo + 1;
    uint32_t slo = lo > 0xD800 ? lo : 0xD800, shi = hi < 0xDFFF ? hi : 0xDFFF;
    if (slo <= shi)
        ways -= (int64_t)shi - slo + 1;
    if (ways > n_seen)
        return 1;
    for (uint32_t cp = lo; cp <= hi; cp++)
        if ((cp < 0xD800 || cp > 0xDFFF) && str_new(gr_fnv_cp(h, cp), seen))
            return 1;
    return 0;
}

static int plain_live(const gr_node *n, const gr_frame *f, const gr_vseen *seen, int64_t n_seen)
{
    int64_t mx = n->u.str.max_len;
    switch (f->phase) {
    case S_START:
        return mx != 0 || str_new(GR_FNV_BASIS, seen);
    case S_IN:
        /* count includes a half-written character */
        if (mx < 0 || f->count < mx)
            return 1; /* another character: more values than items */
        if (!f->aux)
            return str_new(f->vh, seen);
        {
            int64_t ways = (int64_t)(f->u8hi - f->u8lo + 1) << (6 * (f->aux - 1));
            if (ways > n_seen)
                return 1;
            return tail_new(f->vh, f->aux, f->u8lo, f->u8hi, seen);
        }
    case S_ESC:
        if (mx < 0 || f->count + 1 < mx)
            return 1;
        /* the escape is the last character: any BMP code point */
        return cp_new(f->vh, 0, 0xFFFF, seen, n_seen);
    case S_U:
    case S_LBS:
    case S_LU:
    case S_LOW: {
        if (mx < 0 || f->count + 1 < mx)
            return 1;
        /* the escape (or pair) under way is the last character */
        uint32_t r[3][2];
        int nr = gr_u_ranges(f, r);
        for (int i = 0; i < nr; i++)
            if (cp_new(f->vh, r[i][0], r[i][1], seen, n_seen))
                return 1;
        return 0;
    }
    }
    return 1;
}

/* ---- strings with a pattern or format ------------------------------- */

/* Decoded bytes a patterned string can hold: raw characters and the
 * control characters that have a short escape (no \u, see grammar.h). */
static int writable(int b)
{
    return b >= 0x20 || b == '\b' || b == '\t' || b == '\n' || b == '\f' || b == '\r';
}

typedef struct sx_dfs {
    const gr_strx *x;
    int64_t min_len, max_len;
    const gr_vseen *seen;
    int64_t n_seen, found;
} sx_dfs;

/* Depth-first over the completions from (st, count): 1 once one is new,
 * or once more completions than blocked values were met (distinct paths
 * of a DFA are distinct strings). */
static int strx_dfs(sx_dfs *d, int32_t st, int64_t count, uint64_t h, int depth)
{
    const gr_strx *x = d->x;
    if (x->accept[st] && count >= d->min_len) {
        if (str_new(h, d->seen) || ++d->found > d->n_seen)
            return 1;
    }
    if (depth > 4096)
        return 0;
    for (int b = 0; b < 256; b++) {
        if (!writable(b))
            continue;
        int32_t ns = gr_strx_step(x, st, (uint8_t)b);
        if (ns < 0)
            continue;
        int64_t nc = count + ((b & 0xC0) != 0x80);
        if (!gr_strx_len_ok(x, ns, nc, d->min_len, d->max_len))
            continue;
        if (d->max_len < 0 && x->unbounded[ns])
            return 1; /* endless completions */
        if (strx_dfs(d, ns, nc, gr_fnv(h, (uint8_t)b), depth + 1))
            return 1;
    }
    return 0;
}

static int strx_live(const gr_node *n, const gr_frame *f, const gr_vseen *seen, int64_t n_seen)
{
    const gr_strx *x = n->u.str.x;
    sx_dfs d = {x, n->u.str.min_len, n->u.str.max_len, seen, n_seen, 0};
    int32_t st = f->phase == S_START ? x->start : (int32_t)f->pos;
    uint64_t h = f->phase == S_START ? GR_FNV_BASIS : f->vh;
    if (st < 0)
        return 0;
    if (f->phase != S_ESC) {
        if (d.max_len < 0 && x->unbounded[st])
            return 1;
        return strx_dfs(&d, st, f->phase == S_START ? 0 : f->count, h, 0);
    }
    static const char dec[] = "\"\\/\b\f\n\r\t";
    for (int i = 0; i < 8; i++) {
        int32_t ns = gr_strx_step(x, st, (uint8_t)dec[i]);
        if (ns < 0 || !gr_strx_len_ok(x, ns, f->count + 1, d.min_len, d.max_len))
            continue;
        if (d.max_len < 0 && x->unbounded[ns])
            return 1;
        if (strx_dfs(&d, ns, f->count + 1, gr_fnv(h, (uint8_t)dec[i]), 1))
            return 1;
    }
    return 0;
}

int gr_str_live(const gr_node *n, const gr_frame *f, const gr_vseen *seen, int64_t n_seen)
{
    if (n_seen <= 0)
        return 1;
    return n->u.str.x ? strx_live(n, f, seen, n_seen) : plain_live(n, f, seen, n_seen);
}

/* ---- numbers ----------------------------------------------------------- */

typedef struct num_block {
    const gr_node *n;
    const gr_vseen *seen;
    int64_t nb;       /* blocked values in all */
    uint64_t *found;  /* distinct blocked completions met so far */
    int64_t n_found;
    long budget;
} num_block;

static int blocked(const num_block *k, uint64_t h)
{
    for (uint32_t i = 0; i < k->n->u.num.n_excl; i++)
        if (k->n->u.num.excl[i] == h)
            return 1;
    return gr_vseen_has(k->seen, h);
}

/* A completion of value h: 1 when it is new, or when more distinct
 * completions than blocked values have been met. */
static int meet(num_block *k, uint64_t h)
{
    if (!blocked(k, h))
        return 1;
    for (int64_t i = 0; i < k->n_found; i++)
        if (k->found[i] == h)
            return 0;
    k->found[k->n_found++] = h;
    return k->n_found > k->nb;
}

/* Integers in [a, b] that bounds and multipleOf allow: how many (at most
 * cap), and with `k` set, 1 as soon as one of them is new. */
static int64_t int_range(const gr_node *n, __int128 a, __int128 b, int64_t cap, num_block *k,
                         int *hit)
{
    if (a < n->u.num.imin)
        a = n->u.num.imin;
    if (b > n->u.num.imax)
        b = n->u.num.imax;
    if (a > b)
        return 0;
    __int128 m = n->u.num.multiple > 0 ? n->u.num.multiple : 1;
    __int128 q = a / m;
    if (q * m < a)
        q++;
    __int128 r = b / m;
    if (r * m > b)
        r--;
    if (q > r)
        return 0;
    __int128 cnt = r - q + 1;
    if (k)
        for (__int128 v = q; v <= r && !*hit; v++)
            *hit = meet(k, gr_hash_num((double)(v * m)));
    return cnt > cap ? cap : (int64_t)cnt;
}

/* The integer completions of f as ranges: counted first, enumerated only
 * when there are no more than blocked values. */
static int int_live(num_block *k, const gr_frame *f)
{
    const gr_node *n = k->n;
    __int128 most = 1;
    for (int i = 0; i < GR_HASH_DIGITS; i++)
        most *= 10;
    most--;
    __int128 lo[GR_HASH_DIGITS + 3], hi[GR_HASH_DIGITS + 3];
    int nr = 0, neg = (f->flags & F_NEG) != 0;
    switch (f->phase) {
    case N_START:
        lo[nr] = -most;
        hi[nr++] = most;
        break;
    case N_SIGN:
        lo[nr] = -most;
        hi[nr++] = 0;
        break;
    case N_INT: {
        __int128 scale = 1;
        for (int i = 0; i <= GR_HASH_DIGITS; i++, scale *= 10) {
            __int128 a = (__int128)f->val * scale, b = a + scale - 1;
            if (a > most)
                break;
            if (b > most)
                b = most;
            lo[nr] = neg ? -b : a;
            hi[nr++] = neg ? -a : b;
        }
        break;
    }
    default: /* the value is complete: N_ZERO, or zeros after the point */
        lo[nr] = hi[nr] = (__int128)f->val * (neg ? -1 : 1);
        nr++;
        break;
    }
    int64_t total = 0;
    int hit = 0;
    for (int i = 0; i < nr; i++)
        total += int_range(n, lo[i], hi[i], LIVE_BIG, NULL, &hit);
    if (total > k->nb)
        return 1;
    for (int i = 0; i < nr && !hit; i++)
        int_range(n, lo[i], hi[i], LIVE_BIG, k, &hit);
    return hit;
}

static int num_endable(const gr_node *n, const gr_frame *f)
{
    return (f->phase == N_ZERO || f->phase == N_INT || f->phase == N_FRAC) && gr_num_ok(n, f, 1);
}

/* Depth-limited search over the characters that extend a number. */
static int num_dfs(num_block *k, const gr_frame *f, int left)
{
    if (--k->budget < 0)
        return 0;
    if (num_endable(k->n, f) && meet(k, gr_hash_num(gr_num_value(f))))
        return 1;
    if (left == 0)
        return 0;
    static const char chars[] = "-0123456789.";
    for (int i = 0; chars[i]; i++) {
        gr_frame nf;
        if (gr_num_step(k->n, f, chars[i], &nf) && num_dfs(k, &nf, left - 1))
            return 1;
    }
    return 0;
}

int gr_num_live(const gr_node *n, const gr_frame *f, const gr_vseen *seen, int64_t n_seen)
{
    int64_t nb = (int64_t)n->u.num.n_excl + (n_seen > 0 ? n_seen : 0);
    if (nb == 0)
        return 1;
    if (!n->u.num.integer && !n->u.num.scale && !n->u.num.has_min && !n->u.num.has_max) {
        /* unbounded: fraction digits alone give 10^(digits left) values */
        int left = f->phase == N_START || f->phase == N_SIGN || f->phase == N_ZERO
                       ? GR_HASH_DIGITS
                       : GR_HASH_DIGITS - gr_num_digits(f->val);
        if (f->phase == N_DOT || f->phase == N_FRAC) {
            int fl = GR_HASH_FRAC - (int)f->count;
            if (fl < left)
                left = fl;
        }
        if (left >= 12 || pow(10.0, left) > (double)nb)
            return 1;
    }
    num_block k = {n, seen, nb, NULL, 0, 2000000};
    k.found = malloc((size_t)(nb + 1) * sizeof *k.found);
    if (!k.found)
        return 0;
    int r;
    if (n->u.num.integer) {
        r = int_live(&k, f);
    } else {
        r = 0;
        /* iterative deepening: new values turn up at the shallowest depth */
        for (int limit = 0; limit <= GR_HASH_DIGITS + 3 && !r && k.budget > 0; limit++) {
            k.n_found = 0;
            r = num_dfs(&k, f, limit);
        }
    }
    free(k.found);
    return r;
}

/* ---- a fresh item --------------------------------------------------- */

int gr_item_start_live(const sx_grammar *g, int32_t node, const gr_vseen *seen, int64_t n_seen)
{
    if (node < 0)
        return 0;
    const gr_node *n = &g->nodes[node];
    gr_frame f;
    memset(&f, 0, sizeof f);
    f.node = node;
    switch (n->kind) {
    case GK_EMPTY:
        return 0;
    case GK_ALT:
        for (uint32_t i = 0; i < n->u.alt.n; i++)
            if (gr_item_start_live(g, n->u.alt.alts[i], seen, n_seen))
                return 1;
        return 0;
    case GK_LITSET:
        for (uint32_t i = 0; i < n->u.lit.n; i++)
            if (!gr_vseen_has(seen, n->u.lit.hash[i]))
                return 1;
        return 0;
    case GK_STRING:
        f.phase = S_START;
        return gr_str_live(n, &f, seen, n_seen);
    case GK_NUMBER:
        f.phase = N_START;
        f.flags = F_UH;
        return gr_num_live(n, &f, seen, n_seen);
    case GK_OBJECT:
    case GK_ARRAY:
        return 1; /* items that can always grow (checked when compiled) */
    }
    return 0;
}

/* ---- completions that are new values (for shortest completions) -------- */

/* Writes decoded byte b as string content: escaped where JSON needs it. */
static size_t put_content(uint8_t b, uint8_t *out)
{
    static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
    const char *p = b ? memchr(from, b, 7) : NULL;
    if (p) {
        out[0] = '\\';
        out[1] = (uint8_t)to[p - from];
        return 2;
    }
    out[0] = b;
    return 1;
}

typedef struct sx_gen {
    const gr_strx *x;
    int64_t min_len, max_len;
    const gr_vseen *seen;
    int64_t skip;     /* new completions to pass over before taking one */
    const int32_t *dist; /* per state: fewest writable bytes to an accepting state */
    int limit;        /* this round's completion length in bytes */
    uint8_t path[4096];
    int len;
    long budget;
    uint64_t hash; /* the value hash of the completion found */
} sx_gen;

#define GEN_FAR INT32_MAX

/* Per state, the fewest writable bytes that reach an accepting state
 * (GEN_FAR: none): a breadth-first walk backwards over the transitions,
 * O(states x classes).  NULL when out of memory. */
static int32_t *gen_dist(const gr_strx *x)
{
    size_t ns = (size_t)x->n_states, nc = (size_t)x->n_classes;
    int32_t *dist = malloc(ns * sizeof *dist), *queue = malloc(ns * sizeof *queue);
    int32_t *deg = calloc(ns + 1, sizeof *deg), *src = malloc(ns * nc * sizeof *src + 1);
    uint8_t wcls[256] = {0};
    int32_t *res = NULL;
    if (!dist || !queue || !deg || !src)
        goto out;
    for (int b = 0; b < 256; b++)
        if (writable(b))
            wcls[x->byte_class[b]] = 1;
    /* reverse edges grouped by target (counting sort) */
    for (size_t s = 0; s < ns; s++)
        for (size_t c = 0; c < nc; c++) {
            int32_t t = x->next[s * nc + c];
            if (t >= 0 && wcls[c])
                deg[t + 1]++;
        }
    for (size_t t = 0; t < ns; t++)
        deg[t + 1] += deg[t];
    int32_t *fill = queue; /* the queue is free until the walk */
    for (size_t t = 0; t < ns; t++)
        fill[t] = deg[t];
    for (size_t s = 0; s < ns; s++)
        for (size_t c = 0; c < nc; c++) {
            int32_t t = x->next[s * nc + c];
            if (t >= 0 && wcls[c])
                src[fill[t]++] = (int32_t)s;
        }
    size_t head = 0, tail = 0;
    for (size_t s = 0; s < ns; s++) {
        dist[s] = x->accept[s] ? 0 : GEN_FAR;
        if (x->accept[s])
            queue[tail++] = (int32_t)s;
    }
    while (head < tail) {
        int32_t t = queue[head++];
        for (int32_t e = deg[t]; e < deg[t + 1]; e++)
            if (dist[src[e]] == GEN_FAR) {
                dist[src[e]] = dist[t] + 1;
                queue[tail++] = src[e];
            }
    }
    res = dist;
    dist = NULL;
out:
    free(dist);
    free(queue);
    free(deg);
    free(src);
    return res;
}

/* The completions of exactly d->limit bytes, depth-first in byte order.
 * A byte is taken only when the completion can still end within the
 * limit (the distance to acceptance and the code points still required
 * both fit): without that bound, a loop of the automaton (a URI's
 * endless scheme letters) led the walk 4096 bytes deep before any
 * backtracking, and the budget ran out with no completion found. */
static int gen_dfs(sx_gen *d, int32_t st, int64_t count, uint64_t h)
{
    const gr_strx *x = d->x;
    if (--d->budget < 0)
        return 0;
    if (d->len == d->limit) {
        if (x->accept[st] && count >= d->min_len && str_new(h, d->seen) && d->skip-- <= 0) {
            d->hash = gr_hash_str(h);
            return 1;
        }
        return 0;
    }
    int64_t room = d->limit - d->len - 1; /* bytes left after this one */
    for (int b = 0; b < 256; b++) {
        if (!writable(b))
            continue;
        int32_t ns = gr_strx_step(x, st, (uint8_t)b);
        if (ns < 0 || d->dist[ns] > room)
            continue;
        int64_t nc = count + ((b & 0xC0) != 0x80);
        if (d->min_len - nc > room || !gr_strx_len_ok(x, ns, nc, d->min_len, d->max_len))
            continue;
        d->path[d->len++] = (uint8_t)b;
        if (gen_dfs(d, ns, nc, gr_fnv(h, (uint8_t)b)))
            return 1;
        d->len--;
    }
    return 0;
}

/* Iterative deepening over the completion's length from (st, count):
 * shortest completions first, each met once (the round of its length),
 * all rounds together within d->budget steps. */
static int gen_find(sx_gen *d, int32_t st, int64_t count, uint64_t h)
{
    if (d->dist[st] == GEN_FAR)
        return 0;
    int64_t from = d->min_len - count > d->dist[st] ? d->min_len - count : d->dist[st];
    for (int64_t L = from; L < (int64_t)sizeof d->path && d->budget > 0; L++) {
        d->limit = (int)L;
        d->len = 0;
        if (gen_dfs(d, st, count, h))
            return 1;
    }
    return 0;
}

/* Content for the `skip`-th new completion of a patterned string from
 * (st, count, h), escaped into out; its length or -1.  esc_first: a
 * backslash is pending, so the first byte is written as its escape letter. */
static long strx_gen(const gr_node *n, int32_t st, int64_t count, uint64_t h, int esc_first,
                     const gr_vseen *seen, int64_t skip, uint8_t *out, size_t cap,
                     uint64_t *hash)
{
    sx_gen *d = calloc(1, sizeof *d);
    if (!d)
        return -1;
    d->x = n->u.str.x;
    d->min_len = n->u.str.min_len;
    d->max_len = n->u.str.max_len;
    d->seen = seen;
    d->skip = skip;
    d->budget = 200000;
    long r = -1;
    int32_t *dist = gen_dist(d->x);
    if (!dist) {
        free(d);
        return -1;
    }
    d->dist = dist;
    if (esc_first) {
        static const char dec[] = "\"\\/\b\f\n\r\t", esc[] = "\"\\/bfnrt";
        for (int i = 0; i < 8 && r < 0; i++) {
            int32_t ns = gr_strx_step(d->x, st, (uint8_t)dec[i]);
            if (ns < 0 || !gr_strx_len_ok(d->x, ns, count + 1, d->min_len, d->max_len))
                continue;
            if (gen_find(d, ns, count + 1, gr_fnv(h, (uint8_t)dec[i]))) {
                size_t k = 0;
                if (cap < 1)
                    break;
                out[k++] = (uint8_t)esc[i];
                for (int j = 0; j < d->len && k + 2 <= cap; j++)
                    k += put_content(d->path[j], out + k);
                r = (long)k;
            }
        }
    } else if (gen_find(d, st, count, h)) {
        size_t k = 0;
        for (int j = 0; j < d->len; j++) {
            if (k + 2 > cap) {
                free(dist);
                free(d);
                return -1;
            }
            k += put_content(d->path[j], out + k);
        }
        r = (long)k;
    }
    *hash = d->hash;
    free(dist);
    free(d);
    return r;
}

/* The j-th string over 'a'..'z' by length then order, at least lo and at
 * most hi (-1: any) characters long; its length or -1. */
static int alpha_nth(int64_t j, int64_t lo, int64_t hi, char *out, size_t cap)
{
    for (int64_t L = lo; (hi < 0 || L <= hi) && L < (int64_t)cap && L < 64; L++) {
        double total = pow(26.0, (double)L);
        if ((double)j < total) {
            for (int64_t i = L - 1; i >= 0; i--) {
                out[i] = (char)('a' + j % 26);
                j /= 26;
            }
            return (int)L;
        }
        j -= (int64_t)total;
    }
    return -1;
}

long gr_str_new_completion(const gr_node *n, const gr_frame *f, const gr_vseen *seen,
                           int64_t skip, uint8_t *out, size_t cap, uint64_t *hash)
{
    if (n->u.str.x) {
        const gr_strx *x = n->u.str.x;
        int32_t st = f->phase == S_START ? x->start : (int32_t)f->pos;
        if (st < 0)
            return -1;
        return strx_gen(n, st, f->phase == S_START ? 0 : f->count,
                        f->phase == S_START ? GR_FNV_BASIS : f->vh, f->phase == S_ESC, seen, skip,
                        out, cap, hash);
    }
    /* no pattern: finish the character under way (one of its ways), then
     * letters; the first combination whose value is new (after `skip`) */
    int64_t mn = n->u.str.min_len, mx = n->u.str.max_len;
    for (int opt = 0; opt < 64; opt++) {
        uint8_t fin[16], dec[8];
        size_t fl = 0, dl = 0;
        int64_t count = f->phase == S_START ? 0 : f->count;
        if (f->phase == S_IN && f->aux) {
            int b = f->u8lo + opt;
            if (b > f->u8hi)
                break;
            fin[fl++] = (uint8_t)b;
            for (int k = 1; k < f->aux; k++)
                fin[fl++] = 0x80;
            memcpy(dec, fin, fl);
            dl = fl;
        } else if (f->phase == S_ESC) {
            static const char esc[] = "nt\"\\/bfr", d8[] = "\n\t\"\\/\b\f\r";
            if (opt >= 8)
                break;
            fin[fl++] = (uint8_t)esc[opt];
            dec[dl++] = (uint8_t)d8[opt];
            count++;
        } else if (f->phase == S_U || f->phase == S_LBS || f->phase == S_LU ||
                   f->phase == S_LOW) {
            /* the opt-th code point the escape (or pair) can still spell */
            uint32_t r[3][2], cp = 0;
            int nr = gr_u_ranges(f, r), got = 0;
            int64_t left = opt;
            for (int i = 0; i < nr && !got; i++) {
                if (left <= (int64_t)(r[i][1] - r[i][0])) {
                    cp = r[i][0] + (uint32_t)left;
                    got = 1;
                } else {
                    left -= (int64_t)(r[i][1] - r[i][0]) + 1;
                }
            }
            if (!got)
                break;
            char t[16];
            int tl = gr_u_rest(f, cp, t);
            memcpy(fin, t, (size_t)tl);
            fl = (size_t)tl;
            /* decoded: the code point's UTF-8, hashed below */
            uint8_t u[6];
            int ul = gr_canon_char(cp, u);
            if (cp < 0x80) {
                u[0] = (uint8_t)cp;
                ul = 1;
            }
            memcpy(dec, u, (size_t)ul);
            dl = (size_t)ul;
            count++;
        } else if (opt > 0) {
            break; /* nothing under way: a single way */
        }
        uint64_t h = f->phase == S_START ? GR_FNV_BASIS : f->vh;
        for (size_t k = 0; k < dl; k++)
            h = gr_fnv(h, dec[k]);
        int64_t need = mn > count ? mn - count : 0, room = mx < 0 ? -1 : mx - count;
        for (int64_t j = 0; j < 100000; j++) {
            char suf[64];
            int sl = alpha_nth(j, need, room, suf, sizeof suf);
            if (sl < 0)
                break;
            uint64_t h2 = h;
            for (int k = 0; k < sl; k++)
                h2 = gr_fnv(h2, (uint8_t)suf[k]);
            if (!str_new(h2, seen) || skip-- > 0)
                continue;
            if (fl + (size_t)sl > cap)
                return -1;
            memcpy(out, fin, fl);
            memcpy(out + fl, suf, (size_t)sl);
            *hash = gr_hash_str(h2);
            return (long)(fl + (size_t)sl);
        }
    }
    return -1;
}

/* ---- numbers -------------------------------------------------------- */

typedef struct num_gen {
    num_block k;
    int64_t skip;
    char path[32];
    int len;
    uint64_t hash;
} num_gen;

static int gen_num_dfs(num_gen *d, const gr_frame *f, int left)
{
    if (--d->k.budget < 0)
        return 0;
    if (num_endable(d->k.n, f) && !blocked(&d->k, gr_hash_num(gr_num_value(f)))) {
        /* a new value; distinct ones are told apart by their hashes */
        uint64_t h = gr_hash_num(gr_num_value(f));
        int met = 0;
        for (int64_t i = 0; i < d->k.n_found && !met; i++)
            met = d->k.found[i] == h;
        if (!met) {
            /* a value met for the first time, over all depths */
            if (d->skip <= 0) {
                d->hash = h;
                return 1;
            }
            d->skip--;
            d->k.found[d->k.n_found++] = h;
        }
    }
    if (left == 0 || d->len >= (int)sizeof d->path)
        return 0;
    static const char chars[] = "0123456789.-";
    for (int i = 0; chars[i]; i++) {
        gr_frame nf;
        if (!gr_num_step(d->k.n, f, chars[i], &nf))
            continue;
        d->path[d->len++] = chars[i];
        if (gen_num_dfs(d, &nf, left - 1))
            return 1;
        d->len--;
    }
    return 0;
}

long gr_num_new_completion(const gr_node *n, const gr_frame *f, const gr_vseen *seen,
                           int64_t skip, uint8_t *out, size_t cap, uint64_t *hash)
{
    num_gen d;
    memset(&d, 0, sizeof d);
    d.k.n = n;
    d.k.seen = seen;
    d.k.found = malloc((size_t)(skip + 1) * sizeof *d.k.found);
    d.k.budget = 2000000;
    d.skip = skip;
    long r = -1;
    /* iterative deepening, each value counted once (the first time) */
    for (int limit = 0; d.k.found && limit <= GR_HASH_DIGITS + 3 && d.k.budget > 0; limit++) {
        d.len = 0;
        if (gen_num_dfs(&d, f, limit)) {
            if ((size_t)d.len <= cap) {
                memcpy(out, d.path, (size_t)d.len);
                *hash = d.hash;
                r = d.len;
            }
            break;
        }
    }
    free(d.k.found);
    return r;
}
