/* Strings constrained by `pattern` and `format`: the automaton over the
 * decoded content, lengths reachable from each state (for exactness with
 * minLength/maxLength), and the per-state masks of plain tokens. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/formats/formats.h"
#include "grammar/compile/compile.h"
#include "grammar/regex/regex.h"

int gc_keep_re(gc_ctx *c, sx_re *re)
{
    sx_grammar *g = c->g;
    if (g->n_res == g->cap_res) {
        int cap = g->cap_res ? g->cap_res * 2 : 8;
        sx_re **n = realloc(g->res, (size_t)cap * sizeof *n);
        if (!n)
            return SX_ENOMEM;
        g->res = n;
        g->cap_res = cap;
    }
    g->res[g->n_res++] = re;
    return SX_OK;
}

static int re_error(gc_ctx *c, const char *kw, const char *src, int rc, const sx_error *e)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", c->ptr, kw);
    if (rc == SX_EUNSUPPORTED)
        return sx_err_setp(c->err, SX_EUNSUPPORTED, p, -1, "unsupported: '%s' at %s: %s", kw, p,
                           e->msg);
    if (rc == SX_ELIMIT)
        return sx_err_setp(c->err, SX_ELIMIT, p, -1, "'%s' at %s is too complex: %s", kw, p,
                           e->msg);
    return sx_err_setp(c->err, SX_EFORMAT, p, -1, "invalid schema at %s: bad regex '%.80s': %s", p,
                       src, e->msg);
}

/* Reachable completion lengths of every state at once, as bitsets up to
 * K code points: the least fixpoint of "a state reaches what its
 * successors reach, one more after a byte that starts a code point".
 * Sweeps deepest first over the reverse edges, a state's set handed on
 * only when it grew, so a long counted pattern costs the few sets that
 * change per sweep, not the whole table each time.  A table too large to
 * fill is refused. */
static int length_sets(gc_ctx *c, gr_strx *x, int64_t K)
{
    uint64_t words = (uint64_t)K / 64 + 1, n = (uint64_t)x->n_states;
    int32_t C = x->n_classes;
    if (words * n > (1u << 22) || words * n * (uint64_t)C * (uint64_t)(K + 2) > 400000000ull)
        return sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1,
                           "pattern at %s with maxLength %lld needs too large a length table",
                           c->ptr, (long long)K);
    uint64_t *L = gc_alloc(c, words * n * sizeof *L), *tmp = malloc(words * sizeof *tmp);
    int32_t *rstart = calloc(n + 1, sizeof *rstart), *fill = calloc(n + 1, sizeof *fill);
    int32_t *redge = NULL, *seen = malloc((n + 1) * 2 * sizeof *seen);
    uint8_t *queued = calloc(n + 1, 1);
    size_t ne = 0;
    if (!L || !tmp || !rstart || !fill || !queued || !seen)
        goto oom;
    /* an edge into t: its source state times 2, plus 1 when it shifts --
     * once per pair, however many byte classes make it (the classes of a
     * UTF-8 lead or continuation byte mostly go to one state: several
     * times fewer edges to hand sets over) */
    for (uint64_t k = 0; k < 2 * n; k++)
        seen[k] = -1;
    for (uint64_t st = 0; st < n; st++)
        for (int32_t cl = 0; cl < C; cl++) {
            int32_t t = x->next[st * (size_t)C + (size_t)cl];
            int32_t e = (int32_t)(st * 2 + (x->class_starts_cp[cl] != 0));
            if (t >= 0 && seen[2 * (size_t)t + (e & 1)] != e) {
                seen[2 * (size_t)t + (e & 1)] = e;
                rstart[t + 1]++;
                ne++;
            }
        }
    for (uint64_t st = 0; st < n; st++)
        rstart[st + 1] += rstart[st];
    if (!(redge = malloc((ne ? ne : 1) * sizeof *redge)))
        goto oom;
    for (uint64_t k = 0; k < 2 * n; k++)
        seen[k] = -1;
    for (uint64_t st = 0; st < n; st++)
        for (int32_t cl = 0; cl < C; cl++) {
            int32_t t = x->next[st * (size_t)C + (size_t)cl];
            int32_t e = (int32_t)(st * 2 + (x->class_starts_cp[cl] != 0));
            if (t >= 0 && seen[2 * (size_t)t + (e & 1)] != e) {
                seen[2 * (size_t)t + (e & 1)] = e;
                redge[rstart[t] + fill[t]++] = e;
            }
        }
    free(seen);
    seen = NULL;
    for (uint64_t st = 0; st < n; st++)
        if (x->accept[st])
            L[st * words] = 1;
    /* sweeps deepest first, as sets flow from the accepting states back:
     * a state whose set grew since it last did hands it to each of its
     * predecessors (so an acyclic part settles in one sweep, a loop in
     * as many as its sets grow) */
    for (uint64_t st = 0; st < n; st++)
        queued[st] = 1;
    for (int any = 1; any;) {
        any = 0;
        for (int64_t t = (int64_t)n - 1; t >= 0; t--) {
            if (!queued[t])
                continue;
            queued[t] = 0;
            const uint64_t *lt = L + (uint64_t)t * words;
            for (int32_t k = rstart[t]; k < rstart[t + 1]; k++) {
                int32_t sp = redge[k] >> 1;
                uint64_t *ls = L + (uint64_t)sp * words;
                const uint64_t *src = lt;
                if (redge[k] & 1) { /* shift by one */
                    uint64_t carry = 0;
                    for (uint64_t w = 0; w < words; w++) {
                        tmp[w] = lt[w] << 1 | carry;
                        carry = lt[w] >> 63;
                    }
                    if ((uint64_t)(K + 1) % 64)
                        tmp[words - 1] &= (1ull << ((uint64_t)(K + 1) % 64)) - 1;
                    src = tmp;
                }
                uint64_t grew = 0;
                for (uint64_t w = 0; w < words; w++) {
                    uint64_t nw = src[w] & ~ls[w];
                    ls[w] |= nw;
                    grew |= nw;
                }
                if (grew) {
                    queued[sp] = 1;
                    any = 1;
                }
            }
        }
    }
    free(rstart);
    free(fill);
    free(redge);
    free(queued);
    free(tmp);
    x->lenbits = L;
    x->len_words = (uint32_t)words;
    x->len_k = K;
    /* dense: from every state, every length from its shortest completion
     * (no more than max_min_cps) up to K -- then whether a length fits
     * depends only on the maximum, never on the minimum */
    x->len_dense = 1;
    for (uint64_t st = 0; st < n && x->len_dense; st++) {
        const uint64_t *ls = L + st * words;
        int64_t k = 0;
        while (k <= K && !(ls[k >> 6] >> (k & 63) & 1))
            k++;
        if (k > K || k > x->max_min_cps)
            x->len_dense = 0;
        for (; k <= K && x->len_dense; k++)
            if (!(ls[k >> 6] >> (k & 63) & 1))
                x->len_dense = 0;
    }
    return SX_OK;
oom:
    free(tmp);
    free(rstart);
    free(fill);
    free(redge);
    free(queued);
    free(seen);
    return sx_err_set(c->err, SX_ENOMEM, "out of memory");
}

/* Longest completion of every state that cannot loop (-1 for those that
 * can): relaxation, deepest states first.  A pass limit leaves lower
 * bounds, which is sound for "a completion at least this long exists". */
static int longest_completions(gc_ctx *c, gr_strx *x)
{
    int32_t n = x->n_states;
    int32_t *M = gc_alloc(c, (size_t)n * sizeof *M);
    if (!M)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    for (int32_t s = 0; s < n; s++)
        M[s] = x->unbounded[s] ? -1 : 0;
    for (int changed = 1, pass = 0; changed && pass < 256; pass++) {
        changed = 0;
        for (int32_t s = n - 1; s >= 0; s--) {
            if (M[s] < 0)
                continue;
            for (int32_t cl = 0; cl < x->n_classes; cl++) {
                int32_t t = x->next[(size_t)s * (size_t)x->n_classes + (size_t)cl];
                if (t < 0 || M[t] < 0)
                    continue;
                int32_t v = M[t] + x->class_starts_cp[cl];
                if (v > M[s]) {
                    M[s] = v;
                    changed = 1;
                }
            }
        }
    }
    x->max_cps = M;
    return SX_OK;
}

static int wrap_automaton(gc_ctx *c, sx_re *re, int64_t min_len, int64_t max_len,
                          const char *example, gr_strx **out);

int gc_regex_automaton(gc_ctx *c, const char *pattern, size_t len, gr_strx **out)
{
    sx_re *re = NULL;
    sx_error e;
    sx_err_clear(&e);
    int rc = sx_re_compile(pattern, len, SX_RE_FULL, NULL, &re, &e);
    if (rc)
        return sx_err_setp(c->err, rc, "", e.offset, "regex: %s", e.msg);
    return wrap_automaton(c, re, 0, -1, NULL, out);
}

int gc_minus_strings(gc_ctx *c, const sx_re *re, const json_t *excl, sx_re **out)
{
    size_t n = json_array_size(excl), k = 0, i;
    const char **strs = malloc((n ? n : 1) * sizeof *strs);
    size_t *lens = malloc((n ? n : 1) * sizeof *lens);
    sx_re *lit = NULL;
    sx_error e;
    int rc = SX_OK;
    json_t *v;
    *out = NULL;
    if (!strs || !lens) {
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        goto out;
    }
    json_array_foreach((json_t *)excl, i, v)
        if (json_is_string(v)) {
            strs[k] = json_string_value(v);
            lens[k++] = json_string_length(v);
        }
    if ((rc = sx_re_from_literals(strs, lens, k, NULL, &lit, &e))) {
        rc = sx_err_setp(c->err, rc, c->ptr, -1, "'not' at %s/not: %s", c->ptr, e.msg);
        goto out;
    }
    if ((rc = sx_re_minus(re, lit, NULL, out, &e)))
        rc = sx_err_setp(c->err, rc, c->ptr, -1, "'not' at %s/not is too complex: %s", c->ptr,
                         e.msg);
out:
    sx_re_free(lit);
    free(strs);
    free(lens);
    return rc;
}

/* ---- automata remembered for the rest of one compile ------------------
 *
 * A schema often repeats a string constraint (the same pattern or format
 * on many properties, copies made by allOf merges and oneOf branches);
 * its automaton, length tables and, later, its per-state token masks
 * depend only on what gc_string_automaton was given, so one gr_strx
 * serves every node that asks for the same.  Keyed by the pattern, the
 * format, the excluded strings and the length bounds (a `not` automaton
 * is fresh each time and is not remembered). */

typedef struct strx_memo_entry {
    struct strx_memo_entry *next;
    uint64_t hash;
    size_t len;
    gr_strx *x;
    unsigned char key[];
} strx_memo_entry;

struct gc_strx_memo {
    strx_memo_entry **slot;
    size_t cap, n;
};

typedef struct key_buf {
    unsigned char *b;
    size_t n, cap;
    int oom;
} key_buf;

static void key_put(key_buf *k, const void *p, size_t n)
{
    if (k->oom)
        return;
    if (k->n + n > k->cap) {
        size_t cap = k->cap ? k->cap : 128;
        while (cap < k->n + n)
            cap *= 2;
        unsigned char *nb = realloc(k->b, cap);
        if (!nb) {
            k->oom = 1;
            return;
        }
        k->b = nb;
        k->cap = cap;
    }
    memcpy(k->b + k->n, p, n);
    k->n += n;
}

/* a length-prefixed field: no two different inputs spell the same key */
static void key_field(key_buf *k, const char *s, size_t n)
{
    uint64_t len = s ? (uint64_t)n : UINT64_MAX;
    key_put(k, &len, sizeof len);
    if (s)
        key_put(k, s, n);
}

static uint64_t key_hash(const unsigned char *p, size_t n)
{
    uint64_t h = GR_FNV_BASIS;
    for (size_t i = 0; i < n; i++)
        h = gr_fnv(h, p[i]);
    return h;
}

static strx_memo_entry *memo_find(const gc_ctx *c, const key_buf *k, uint64_t h)
{
    const struct gc_strx_memo *m = c->strx_memo;
    if (!m || !m->cap)
        return NULL;
    for (strx_memo_entry *e = m->slot[h & (m->cap - 1)]; e; e = e->next)
        if (e->hash == h && e->len == k->n && !memcmp(e->key, k->b, k->n))
            return e;
    return NULL;
}

/* Remembers x under key k; a failure only loses the sharing. */
static void memo_add(gc_ctx *c, const key_buf *k, uint64_t h, gr_strx *x)
{
    struct gc_strx_memo *m = c->strx_memo;
    if (!m && !(m = c->strx_memo = calloc(1, sizeof *m)))
        return;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 32;
        strx_memo_entry **ns = calloc(cap, sizeof *ns);
        if (!ns)
            return;
        for (size_t i = 0; i < m->cap; i++)
            for (strx_memo_entry *e = m->slot[i], *nx; e; e = nx) {
                nx = e->next;
                e->next = ns[e->hash & (cap - 1)];
                ns[e->hash & (cap - 1)] = e;
            }
        free(m->slot);
        m->slot = ns;
        m->cap = cap;
    }
    strx_memo_entry *e = malloc(sizeof *e + k->n);
    if (!e)
        return;
    e->hash = h;
    e->len = k->n;
    e->x = x;
    memcpy(e->key, k->b, k->n);
    e->next = m->slot[h & (m->cap - 1)];
    m->slot[h & (m->cap - 1)] = e;
    m->n++;
}

void gc_strx_memo_free(gc_ctx *c)
{
    struct gc_strx_memo *m = c->strx_memo;
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        for (strx_memo_entry *e = m->slot[i], *nx; e; e = nx) {
            nx = e->next;
            free(e);
        }
    free(m->slot);
    free(m);
    c->strx_memo = NULL;
}

static int string_automaton(gc_ctx *c, const char *pattern, size_t plen, const char *format,
                            const json_t *excl, const sx_re *minus_re, int64_t min_len,
                            int64_t max_len, gr_strx **out);

int gc_string_automaton(gc_ctx *c, const char *pattern, size_t plen, const char *format,
                        const json_t *excl, const sx_re *minus_re, int64_t min_len,
                        int64_t max_len, gr_strx **out)
{
    *out = NULL;
    if (minus_re)
        return string_automaton(c, pattern, plen, format, excl, minus_re, min_len, max_len, out);
    key_buf k = {0};
    int64_t lens[2] = {min_len, max_len};
    key_put(&k, lens, sizeof lens);
    key_field(&k, pattern, plen);
    key_field(&k, format, format ? strlen(format) : 0);
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)excl, i, v)
        if (json_is_string(v))
            key_field(&k, json_string_value(v), json_string_length(v));
    if (k.oom) {
        free(k.b);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    uint64_t h = key_hash(k.b, k.n);
    strx_memo_entry *e = memo_find(c, &k, h);
    int rc = SX_OK;
    if (e)
        *out = e->x;
    else if (!(rc = string_automaton(c, pattern, plen, format, excl, NULL, min_len, max_len,
                                     out)) &&
             *out)
        memo_add(c, &k, h, *out);
    free(k.b);
    return rc;
}

static int string_automaton(gc_ctx *c, const char *pattern, size_t plen, const char *format,
                            const json_t *excl, const sx_re *minus_re, int64_t min_len,
                            int64_t max_len, gr_strx **out)
{
    sx_re *a = NULL, *b = NULL, *re = NULL;
    sx_error e;
    int rc;
    sx_err_clear(&e);
    *out = NULL;
    if (pattern && (rc = sx_re_compile(pattern, plen, SX_RE_SEARCH, NULL, &a, &e)))
        return re_error(c, "pattern", pattern, rc, &e);
    if (format) {
        const sx_format_info *fi = NULL;
        if (sx_format_lookup(format, &fi)) {
            sx_re_free(a);
            return gc_unsupported(c, "format", "this format is not enforced");
        }
        if ((rc = sx_format_automaton(fi, NULL, &b, &e))) {
            sx_re_free(a);
            return re_error(c, "format", fi->regex, rc, &e);
        }
    }
    if (a && b) {
        rc = sx_re_intersect(a, b, NULL, &re, &e);
        sx_re_free(a);
        sx_re_free(b);
        if (rc)
            return re_error(c, "pattern", pattern, rc, &e);
    } else {
        re = a ? a : b;
    }
    int has_excl = 0;
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)excl, i, v)
        has_excl |= json_is_string(v);
    if ((has_excl || minus_re) && !re &&
        (rc = sx_re_compile("[\\s\\S]*", 7, SX_RE_FULL, NULL, &re, &e)))
        return sx_err_set(c->err, rc, "regex: %s", e.msg);
    if (has_excl) {
        /* none of the listed strings: the automaton less a literal set */
        sx_re *less;
        rc = gc_minus_strings(c, re, excl, &less);
        sx_re_free(re);
        if (rc)
            return rc;
        re = less;
    }
    if (minus_re) {
        /* `not` of a string schema: less what that schema accepts */
        sx_re *less;
        rc = sx_re_minus(re, minus_re, NULL, &less, &e);
        sx_re_free(re);
        if (rc)
            return sx_err_setp(c->err, rc, c->ptr, -1, "'not' at %s/not is too complex: %s",
                               c->ptr, e.msg);
        re = less;
    }
    if (!re)
        return SX_OK;
    const sx_format_info *fi = NULL;
    const char *example = format && !sx_format_lookup(format, &fi) ? fi->example : NULL;
    return wrap_automaton(c, re, min_len, max_len, example, out);
}

/* mu[s] from the shortest completion of each state to the most that any
 * state reachable from s needs (s included): a value moves backwards over
 * the reverse edges, a state queued again only when its value rises (at
 * most max_min_cps times).  Returns 1, or 0 when out of memory or the
 * table is too large (the caller then uses max_min_cps, which bounds
 * every mu). */
static int ahead_min_cps(const gr_strx *x, int32_t *mu)
{
    int32_t n = x->n_states, C = x->n_classes;
    if ((uint64_t)n * (uint64_t)C > (1u << 22))
        return 0;
    int32_t *rstart = calloc((size_t)n + 1, sizeof *rstart), *fill = NULL, *redge = NULL;
    int32_t *queue = malloc(((size_t)n + 1) * sizeof *queue);
    uint8_t *queued = calloc((size_t)n, 1);
    size_t ne = 0;
    int ok = 0;
    if (!rstart || !queue || !queued)
        goto out;
    for (size_t i = 0; i < (size_t)n * (size_t)C; i++)
        if (x->next[i] >= 0) {
            rstart[x->next[i] + 1]++;
            ne++;
        }
    for (int32_t s = 0; s < n; s++)
        rstart[s + 1] += rstart[s];
    redge = malloc((ne ? ne : 1) * sizeof *redge);
    fill = calloc((size_t)n, sizeof *fill);
    if (!redge || !fill)
        goto out;
    for (int32_t s = 0; s < n; s++)
        for (int32_t cl = 0; cl < C; cl++) {
            int32_t t = x->next[(size_t)s * (size_t)C + (size_t)cl];
            if (t >= 0)
                redge[rstart[t] + fill[t]++] = s;
        }
    size_t cap = (size_t)n + 1, head = 0, count = 0;
    for (int32_t s = 0; s < n; s++) {
        queue[count++] = s;
        queued[s] = 1;
    }
    while (count) {
        int32_t t = queue[head];
        head = (head + 1) % cap;
        count--;
        queued[t] = 0;
        for (int32_t k = rstart[t]; k < rstart[t + 1]; k++) {
            int32_t s = redge[k];
            if (mu[t] > mu[s]) {
                mu[s] = mu[t];
                if (!queued[s]) {
                    queued[s] = 1;
                    queue[(head + count) % cap] = s;
                    count++;
                }
            }
        }
    }
    ok = 1;
out:
    free(rstart);
    free(fill);
    free(redge);
    free(queue);
    free(queued);
    return ok;
}

static int wrap_automaton(gc_ctx *c, sx_re *re, int64_t min_len, int64_t max_len,
                          const char *example, gr_strx **out)
{
    int rc;
    if (gc_keep_re(c, re)) {
        sx_re_free(re);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    gr_strx *x = gc_alloc(c, sizeof *x);
    if (!x)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    sx_re_table t;
    sx_re_get_table(re, &t);
    x->re = re;
    x->n_states = t.n_states;
    x->n_classes = t.n_classes;
    x->byte_class = t.byte_class;
    x->next = t.next;
    x->accept = t.accept;
    x->start = t.start;
    if (t.n_states > 0) {
        x->plain_cache = gc_alloc(c, (size_t)t.n_states * sizeof *x->plain_cache);
        x->unbounded = gc_alloc(c, (size_t)t.n_states);
        if (!x->plain_cache || !x->unbounded)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        x->all_unbounded = 1;
        int32_t *mu = gc_alloc(c, (size_t)t.n_states * sizeof *mu);
        for (int32_t s = 0; s < t.n_states; s++) {
            x->unbounded[s] = sx_re_is_unbounded(re, s) == 1;
            x->all_unbounded &= x->unbounded[s];
            int32_t mc = sx_re_min_cps(re, s);
            if (mc > x->max_min_cps)
                x->max_min_cps = mc;
            if (mu)
                mu[s] = mc;
        }
        if (mu && ahead_min_cps(x, mu))
            x->mu = mu;
    }
    x->class_starts_cp = t.class_starts_cp;
    /* kept only when everything else on the string (pattern, not, enum
     * exclusions) allows it too; lengths are checked when completing */
    if (example && sx_re_matches(re, example, strlen(example)))
        x->example = example;
    if (t.n_states > 0 && max_len >= 0) {
        if ((rc = length_sets(c, x, max_len)))
            return rc;
    } else if (t.n_states > 0 && min_len > 0) {
        if ((rc = longest_completions(c, x)))
            return rc;
    }
    *out = x;
    return SX_OK;
}
