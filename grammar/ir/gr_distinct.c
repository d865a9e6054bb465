/* How many distinct values a node has (up to what is needed) and whether
 * an object or array node can always take one more member: pure queries on
 * the compiled grammar.  The compiler asks them to decide which uniqueItems
 * arrays stay exact (compile/gr_unique_check.c); the completion asks them
 * for values no earlier item has (match/gr_complete.c, ir/gr_witness.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/ir/ir.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int nonempty(const sx_grammar *g, int32_t node)
{
    return node >= 0 && g->nodes[node].kind != GK_EMPTY;
}

int gr_can_grow(const sx_grammar *g, int32_t node)
{
    const gr_node *n = &g->nodes[node];
    if (n->kind == GK_OBJECT) {
        if (n->u.obj.max_props >= 0)
            return 0;
        if (n->u.obj.keyx)
            return n->u.obj.keyx->start >= 0 && n->u.obj.keyx->unbounded &&
                   n->u.obj.keyx->unbounded[n->u.obj.keyx->start];
        return nonempty(g, n->u.obj.additional);
    }
    if (n->kind == GK_ARRAY) {
        if (n->u.arr.grows >= 2)
            return n->u.arr.grows == 3;
        if (n->u.arr.grows == 1)
            return 0; /* met again while deciding it: "cannot tell", the safe no */
        /* Compile time only (gc_unique_check decides every array before
         * the grammar is shared, so at run time this is a read): the memo
         * is written through a cast, on the one thread compiling. */
        gr_node *wn = (gr_node *)n;
        wn->u.arr.grows = 1;
        int r = !(n->u.arr.max_items >= 0 || !nonempty(g, n->u.arr.items) || n->u.arr.lit_class) &&
                (n->u.arr.unique != GR_UNIQ_HASH ||
                 gr_distinct_values(g, n->u.arr.items, 1, GR_LIVE_BIG) >= GR_LIVE_BIG);
        wn->u.arr.grows = r ? 3 : 2;
        return r;
    }
    return 0;
}

/* Accepted strings of a pattern automaton within the lengths, counted up
 * to cap by a depth-first walk. */
static void count_strx(const gr_strx *x, int32_t st, int64_t count, int64_t mn, int64_t mx,
                       int64_t cap, int64_t *found, long *budget, int depth)
{
    if (*found >= cap || --*budget < 0 || depth > 4096)
        return;
    if (x->accept[st] && count >= mn)
        ++*found;
    for (int b = 0; b < 256 && *found < cap; b++) {
        if (!(b >= 0x20 || b == '\b' || b == '\t' || b == '\n' || b == '\f' || b == '\r'))
            continue;
        int32_t ns = gr_strx_step(x, st, (uint8_t)b);
        if (ns < 0)
            continue;
        int64_t nc = count + ((b & 0xC0) != 0x80);
        if (!gr_strx_len_ok(x, ns, nc, mn, mx))
            continue;
        if (mx < 0 && x->unbounded[ns]) {
            *found = cap;
            return;
        }
        count_strx(x, ns, nc, mn, mx, cap, found, budget, depth + 1);
    }
}

static int64_t num_values(const gr_node *n)
{
    int64_t lb;
    if (n->u.num.integer || n->u.num.scale) { /* scaled: as integers */
        __int128 most = 1;
        for (int i = 0; i < GR_HASH_DIGITS; i++)
            most *= 10;
        most--;
        __int128 a = n->u.num.imin > -most ? n->u.num.imin : -most;
        __int128 b = n->u.num.imax < most ? n->u.num.imax : most;
        __int128 m = n->u.num.multiple > 0 ? n->u.num.multiple : 1;
        __int128 q = a / m, r = b / m;
        if (q * m < a)
            q++;
        if (r * m > b)
            r--;
        __int128 cnt = q > r ? 0 : r - q + 1;
        lb = cnt > GR_LIVE_BIG ? GR_LIVE_BIG : (int64_t)cnt;
    } else if (!n->u.num.has_min || !n->u.num.has_max) {
        lb = GR_LIVE_BIG;
    } else {
        /* decimals of GR_HASH_DIGITS digits between the bounds */
        double lo = n->u.num.min, hi = n->u.num.max, w = hi - lo;
        double big = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
        int idig = big >= 1 ? (int)floor(log10(big)) + 1 : 0;
        double k = w * pow(10.0, GR_HASH_DIGITS - idig) - 2;
        if (w <= 0)
            lb = n->u.num.excl_min || n->u.num.excl_max ? 0 : 1;
        else
            lb = k >= (double)GR_LIVE_BIG ? GR_LIVE_BIG : k < 1 ? 1 : (int64_t)k;
    }
    if (lb < GR_LIVE_BIG)
        lb -= n->u.num.n_excl;
    return lb < 0 ? 0 : lb;
}

int64_t gr_distinct_values(const sx_grammar *g, int32_t node, int depth, int64_t need)
{
    if (node < 0)
        return 0;
    if (depth > 64)
        return -1;
    const gr_node *n = &g->nodes[node];
    switch (n->kind) {
    case GK_EMPTY:
        return 0;
    case GK_LITSET: {
        uint64_t *h = malloc((size_t)(n->u.lit.n ? n->u.lit.n : 1) * sizeof *h);
        if (!h)
            return 0;
        memcpy(h, n->u.lit.hash, (size_t)n->u.lit.n * sizeof *h);
        qsort(h, n->u.lit.n, sizeof *h, cmp_u64);
        int64_t d = 0;
        for (uint32_t i = 0; i < n->u.lit.n; i++)
            d += i == 0 || h[i] != h[i - 1];
        free(h);
        return d;
    }
    case GK_NUMBER:
        return num_values(n);
    case GK_STRING: {
        const gr_strx *x = n->u.str.x;
        if (n->u.str.raw)
            return -1;
        if (!x)
            return n->u.str.max_len == 0 ? 1 : GR_LIVE_BIG;
        if (x->start < 0)
            return 0;
        if (n->u.str.max_len < 0 && x->unbounded[x->start])
            return GR_LIVE_BIG;
        /* counted only as far as the caller needs */
        int64_t found = 0, cap = need < (1 << 16) ? need : (1 << 16);
        long budget = 20000;
        count_strx(x, x->start, 0, n->u.str.min_len, n->u.str.max_len, cap, &found, &budget, 0);
        return found >= (1 << 16) ? GR_LIVE_BIG : found;
    }
    case GK_OBJECT:
    case GK_ARRAY:
        return gr_can_grow(g, node) ? GR_LIVE_BIG : -1;
    case GK_ALT: {
        int64_t best = 0;
        for (uint32_t i = 0; i < n->u.alt.n; i++) {
            int64_t d = gr_distinct_values(g, n->u.alt.alts[i], depth + 1, need);
            if (d < 0)
                return -1;
            if (d > best)
                best = d;
        }
        return best;
    }
    }
    return -1;
}
