/* Subset construction: NFA over set ids -> DFA over alphabet classes.
 *
 * A DFA state is (core, flags): the NFA states reached right after consuming
 * a code point, plus whether we are at the string start and whether the
 * previous code point was a word character.  Assertions are resolved when
 * the state is expanded, because whether ^ $ \b \B hold depends on that
 * context and on the next code point (or the end of input); with \b the
 * closure is computed once for a following word character and once for a
 * non-word one. */
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex_internal.h"

enum { NEXT_NONWORD, NEXT_WORD, NEXT_END };
enum { F_START = 1, F_PREV_WORD = 2 };

typedef struct ctx {
    const sx_rx_nfa   *nfa;
    const sx_rx_alpha *al;
    sx_rx_sdfa        *d;
    sx_error          *err;
    uint64_t          *work;
    uint64_t           max_work;
    int32_t            max_states;

    /* states */
    int32_t *core_off, *core_len;
    uint8_t *flags;
    int32_t  cap_states;
    int32_t *pool;
    size_t   pool_n, pool_cap;
    int32_t *table; /* open addressing over state ids */
    uint32_t table_cap;

    /* closure scratch */
    uint32_t *mark;
    uint32_t  stamp;
    int32_t  *stack;
    int32_t  *sets_w, *sets_n; /* SET states of the two closures */
    int32_t   n_sets_w, n_sets_n;

    uint64_t *pairs, *pairs2;
    size_t    n_pairs, cap_pairs;
    int32_t  *tmp;
    int32_t  *cls_count, *touched; /* per class, for bucketing */
} ctx;

static int fail_nomem(ctx *c)
{
    return sx_err_set(c->err, SX_ENOMEM, "out of memory in the regex subset construction");
}

static uint32_t key_hash(const int32_t *core, int32_t n, uint8_t flags)
{
    uint32_t h = 2166136261u ^ flags;
    for (int32_t i = 0; i < n; i++)
        h = (h ^ (uint32_t)core[i]) * 16777619u;
    return h ^ (h >> 15);
}

static int table_grow(ctx *c)
{
    uint32_t nc = c->table_cap ? c->table_cap * 2 : 1024;
    int32_t *t = malloc(nc * sizeof *t);
    if (!t)
        return SX_ENOMEM;
    for (uint32_t i = 0; i < nc; i++)
        t[i] = -1;
    for (int32_t s = 0; s < c->d->n; s++) {
        uint32_t j = key_hash(c->pool + c->core_off[s], c->core_len[s], c->flags[s]) & (nc - 1);
        while (t[j] >= 0)
            j = (j + 1) & (nc - 1);
        t[j] = s;
    }
    free(c->table);
    c->table = t;
    c->table_cap = nc;
    return SX_OK;
}

/* Finds or adds the state (core, flags); core is sorted and unique. */
static int32_t intern(ctx *c, const int32_t *core, int32_t n, uint8_t flags)
{
    if (2 * ((uint32_t)c->d->n + 1) > c->table_cap && table_grow(c))
        return fail_nomem(c), -1;
    uint32_t mask = c->table_cap - 1;
    uint32_t j = key_hash(core, n, flags) & mask;
    for (; c->table[j] >= 0; j = (j + 1) & mask) {
        int32_t s = c->table[j];
        (*c->work)++;
        if (c->flags[s] == flags && c->core_len[s] == n &&
            memcmp(c->pool + c->core_off[s], core, (size_t)n * sizeof *core) == 0)
            return s;
    }
    if (c->d->n >= c->max_states) {
        sx_err_set(c->err, SX_ELIMIT, "regex needs more than %d DFA states", c->max_states);
        return -1;
    }
    int32_t s = c->d->n;
    if (s == c->cap_states) {
        int32_t nc = c->cap_states ? c->cap_states * 2 : 64;
        int32_t *o = realloc(c->core_off, (size_t)nc * sizeof *o);
        if (o)
            c->core_off = o;
        int32_t *l = realloc(c->core_len, (size_t)nc * sizeof *l);
        if (l)
            c->core_len = l;
        uint8_t *f = realloc(c->flags, (size_t)nc);
        if (f)
            c->flags = f;
        uint8_t *acc = realloc(c->d->accept, (size_t)nc);
        if (acc)
            c->d->accept = acc;
        int32_t *row = realloc(c->d->row, ((size_t)nc + 1) * sizeof *row);
        if (row)
            c->d->row = row;
        if (!o || !l || !f || !acc || !row)
            return fail_nomem(c), -1;
        c->cap_states = nc;
    }
    if (c->pool_n + (size_t)n > c->pool_cap) {
        size_t nc = c->pool_cap ? c->pool_cap * 2 : 1024;
        while (nc < c->pool_n + (size_t)n)
            nc *= 2;
        int32_t *p = realloc(c->pool, nc * sizeof *p);
        if (!p)
            return fail_nomem(c), -1;
        c->pool = p;
        c->pool_cap = nc;
    }
    memcpy(c->pool + c->pool_n, core, (size_t)n * sizeof *core);
    c->core_off[s] = (int32_t)c->pool_n;
    c->core_len[s] = n;
    c->flags[s] = flags;
    c->pool_n += (size_t)n;
    c->table[j] = s;
    c->d->n++;
    return s;
}

static int assertion_holds(int kind, uint8_t flags, int next)
{
    int prev_word = (flags & F_PREV_WORD) != 0;
    switch (kind) {
    case SX_RX_BOL: return (flags & F_START) != 0;
    case SX_RX_EOL: return next == NEXT_END;
    case SX_RX_WB: return prev_word != (next == NEXT_WORD);
    case SX_RX_NWB: return prev_word == (next == NEXT_WORD);
    }
    return 0;
}

/* Epsilon closure of state s's core in a context; SET states go to out
 * (may be NULL); returns 1 if MATCH is reached. */
static int closure(ctx *c, int32_t s, int next, int32_t *out, int32_t *n_out)
{
    const sx_rx_nfa *nfa = c->nfa;
    int32_t sp = 0, n = 0;
    int match = 0;
    uint8_t flags = c->flags[s];
    c->stamp++;
    for (int32_t i = 0; i < c->core_len[s]; i++)
        c->stack[sp++] = c->pool[c->core_off[s] + i];
    while (sp > 0) {
        int32_t q = c->stack[--sp];
        if (c->mark[q] == c->stamp)
            continue;
        c->mark[q] = c->stamp;
        (*c->work)++;
        switch (nfa->kind[q]) {
        case SX_RX_N_EPS:
            if (nfa->out2[q] >= 0)
                c->stack[sp++] = nfa->out2[q];
            if (nfa->out1[q] >= 0)
                c->stack[sp++] = nfa->out1[q];
            break;
        case SX_RX_N_ASSERT:
            if (assertion_holds(nfa->arg[q], flags, next))
                c->stack[sp++] = nfa->out1[q];
            break;
        case SX_RX_N_SET:
            if (out)
                out[n++] = q;
            break;
        case SX_RX_N_MATCH:
            match = 1;
            break;
        }
    }
    if (n_out)
        *n_out = n;
    return match;
}

/* Sorts SET states by their target (LSD radix on 8-bit digits; insertion
 * sort for short lists), so that pairs pushed in this order come out of the
 * stable bucket pass below already sorted by target within each class. */
static void sort_by_target(ctx *c, int32_t *v, int32_t n)
{
    const int32_t *out1 = c->nfa->out1;
    if (n <= 32) {
        for (int32_t i = 1; i < n; i++) {
            int32_t x = v[i], k = out1[x], j = i - 1;
            while (j >= 0 && out1[v[j]] > k) {
                v[j + 1] = v[j];
                j--;
            }
            v[j + 1] = x;
        }
        return;
    }
    int32_t *tmp = c->tmp;
    for (int shift = 0; shift < 32 && (c->nfa->n >> shift) > 0; shift += 8) {
        int32_t cnt[257] = {0};
        for (int32_t i = 0; i < n; i++)
            cnt[((uint32_t)out1[v[i]] >> shift & 0xFF) + 1]++;
        for (int d = 0; d < 256; d++)
            cnt[d + 1] += cnt[d];
        for (int32_t i = 0; i < n; i++)
            tmp[cnt[(uint32_t)out1[v[i]] >> shift & 0xFF]++] = v[i];
        memcpy(v, tmp, (size_t)n * sizeof *v);
    }
    *c->work += (uint64_t)n;
}

static int push_pairs(ctx *c, int32_t *sets, int32_t n, int want_word)
{
    const sx_rx_alpha *al = c->al;
    sort_by_target(c, sets, n);
    for (int32_t i = 0; i < n; i++) {
        int32_t q = sets[i], set = c->nfa->arg[q];
        int32_t lo = al->set_start[set], hi = al->set_start[set + 1];
        if (c->n_pairs + (size_t)(hi - lo) > c->cap_pairs) {
            size_t nc = c->cap_pairs ? c->cap_pairs * 2 : 1024;
            while (nc < c->n_pairs + (size_t)(hi - lo))
                nc *= 2;
            uint64_t *p = realloc(c->pairs, nc * sizeof *p);
            uint64_t *p2 = realloc(c->pairs2, nc * sizeof *p2);
            if (p)
                c->pairs = p;
            if (p2)
                c->pairs2 = p2;
            if (!p || !p2)
                return fail_nomem(c);
            c->cap_pairs = nc;
        }
        for (int32_t k = lo; k < hi; k++) {
            int32_t cls = al->set_cls[k];
            if (want_word >= 0 && al->class_word[cls] != want_word)
                continue;
            c->pairs[c->n_pairs++] = ((uint64_t)(uint32_t)cls << 32) | (uint32_t)c->nfa->out1[q];
        }
        *c->work += (uint64_t)(hi - lo);
    }
    return SX_OK;
}

/* Stable bucketing of the pairs by class (into pairs2); returns the number
 * of distinct classes, listed in c->touched in first-seen order. */
static int32_t bucket_by_class(ctx *c)
{
    int32_t nt = 0;
    for (size_t i = 0; i < c->n_pairs; i++) {
        int32_t cls = (int32_t)(c->pairs[i] >> 32);
        if (c->cls_count[cls]++ == 0)
            c->touched[nt++] = cls;
    }
    int32_t off = 0;
    for (int32_t i = 0; i < nt; i++) {
        int32_t cls = c->touched[i], k = c->cls_count[cls];
        c->cls_count[cls] = off;
        off += k;
    }
    for (size_t i = 0; i < c->n_pairs; i++)
        c->pairs2[c->cls_count[c->pairs[i] >> 32]++] = c->pairs[i];
    for (int32_t i = 0; i < nt; i++)
        c->cls_count[c->touched[i]] = 0;
    *c->work += c->n_pairs;
    return nt;
}

static int add_trans(ctx *c, int32_t cls, int32_t to)
{
    sx_rx_sdfa *d = c->d;
    if (d->n_trans == d->cap_trans) {
        int32_t nc = d->cap_trans ? d->cap_trans * 2 : 1024;
        int32_t *l = realloc(d->lab, (size_t)nc * sizeof *l);
        if (l)
            d->lab = l;
        int32_t *t = realloc(d->dst, (size_t)nc * sizeof *t);
        if (t)
            d->dst = t;
        if (!l || !t)
            return fail_nomem(c);
        d->cap_trans = nc;
    }
    d->lab[d->n_trans] = cls;
    d->dst[d->n_trans] = to;
    d->n_trans++;
    return SX_OK;
}

static int expand(ctx *c, int32_t s)
{
    const sx_rx_nfa *nfa = c->nfa;
    int rc;
    c->n_pairs = 0;
    if (nfa->has_wb) {
        closure(c, s, NEXT_WORD, c->sets_w, &c->n_sets_w);
        closure(c, s, NEXT_NONWORD, c->sets_n, &c->n_sets_n);
        if ((rc = push_pairs(c, c->sets_w, c->n_sets_w, 1)) ||
            (rc = push_pairs(c, c->sets_n, c->n_sets_n, 0)))
            return rc;
        c->d->accept[s] = (uint8_t)closure(c, s, NEXT_END, NULL, NULL);
    } else {
        int m = closure(c, s, NEXT_NONWORD, c->sets_n, &c->n_sets_n);
        if ((rc = push_pairs(c, c->sets_n, c->n_sets_n, -1)))
            return rc;
        c->d->accept[s] = (uint8_t)(nfa->has_eol ? closure(c, s, NEXT_END, NULL, NULL) : m);
    }
    bucket_by_class(c);
    c->d->row[s] = c->d->n_trans;
    for (size_t i = 0; i < c->n_pairs;) {
        int32_t cls = (int32_t)(c->pairs2[i] >> 32);
        int32_t n = 0;
        for (; i < c->n_pairs && (int32_t)(c->pairs2[i] >> 32) == cls; i++) {
            int32_t t = (int32_t)(uint32_t)c->pairs2[i];
            if (n == 0 || c->tmp[n - 1] != t)
                c->tmp[n++] = t;
        }
        uint8_t fl = (nfa->has_wb && c->al->class_word[cls]) ? F_PREV_WORD : 0;
        /* once a search has matched, whatever else is pending no longer
         * matters: every such state is the same "accept anything" state */
        for (int32_t k = 0; k < n && nfa->accept_all >= 0; k++)
            if (c->tmp[k] == nfa->accept_all) {
                c->tmp[0] = nfa->accept_all;
                n = 1;
                fl = 0;
            }
        int32_t to = intern(c, c->tmp, n, fl);
        if (to < 0)
            return c->err->code ? c->err->code : SX_ENOMEM;
        if ((rc = add_trans(c, cls, to)))
            return rc;
    }
    if (*c->work > c->max_work)
        return sx_err_set(c->err, SX_ELIMIT,
                          "regex work budget exceeded in the subset construction (%d states so far)",
                          c->d->n);
    return SX_OK;
}

int sx_rx_subset(const sx_rx_nfa *nfa, const sx_rx_alpha *al,
                 const sx_re_limits *lim, uint64_t *work, sx_rx_sdfa *out,
                 sx_error *err)
{
    ctx c = {.nfa = nfa, .al = al, .d = out, .err = err, .work = work,
             .max_work = lim->max_work, .max_states = (int32_t)lim->max_states};
    int rc = SX_ENOMEM;
    memset(out, 0, sizeof *out);
    out->n_labels = al->n_classes;
    size_t nn = (size_t)nfa->n;
    c.mark = calloc(nn, sizeof *c.mark);
    /* pushes: the core (<= n) plus at most two per visited state */
    c.stack = malloc((3 * nn + 1) * sizeof *c.stack);
    c.sets_w = malloc((nn + 1) * sizeof *c.sets_w);
    c.sets_n = malloc((nn + 1) * sizeof *c.sets_n);
    c.tmp = malloc((nn + 1) * sizeof *c.tmp);
    c.cls_count = calloc((size_t)al->n_classes + 1, sizeof *c.cls_count);
    c.touched = malloc(((size_t)al->n_classes + 1) * sizeof *c.touched);
    if (!c.mark || !c.stack || !c.sets_w || !c.sets_n || !c.tmp || !c.cls_count || !c.touched) {
        fail_nomem(&c);
        goto fail;
    }
    int32_t start = nfa->start;
    if (intern(&c, &start, 1, F_START) < 0) {
        rc = err->code ? err->code : SX_ENOMEM;
        goto fail;
    }
    for (int32_t s = 0; s < out->n; s++)
        if ((rc = expand(&c, s)))
            goto fail;
    out->row[out->n] = out->n_trans;
    out->start = 0;
    rc = SX_OK;
fail:
    if (rc)
        sx_rx_sdfa_free(out);
    free(c.core_off);
    free(c.core_len);
    free(c.flags);
    free(c.pool);
    free(c.table);
    free(c.mark);
    free(c.stack);
    free(c.sets_w);
    free(c.sets_n);
    free(c.pairs);
    free(c.pairs2);
    free(c.tmp);
    free(c.cls_count);
    free(c.touched);
    return rc;
}
