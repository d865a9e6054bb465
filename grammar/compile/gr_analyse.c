/* After compiling: which nodes admit at least one finite value (a least
 * fixpoint, so recursive schemas that never bottom out are empty), then
 * every impossible branch is cut so the run-time never enters a dead end. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/compile/compile.h"

/* Calls fn for every node that node n's values are built from (with
 * repeats): O(the node's own size). */
static void each_child(const gr_node *n, void (*fn)(void *, int32_t), void *ctx)
{
    switch (n->kind) {
    case GK_OBJECT:
        for (uint32_t k = 0; k < n->u.obj.n; k++)
            fn(ctx, n->u.obj.props[k].node);
        fn(ctx, n->u.obj.additional);
        if (n->u.obj.keyx && n->u.obj.close_node)
            for (int32_t s = 0; s < n->u.obj.keyx->n_states; s++)
                fn(ctx, n->u.obj.close_node[s]);
        break;
    case GK_ARRAY:
        for (uint32_t k = 0; k < n->u.arr.n_prefix; k++)
            fn(ctx, n->u.arr.prefix[k]);
        fn(ctx, n->u.arr.items);
        if (n->u.arr.n_cont)
            for (int S = 0; S < 1 << n->u.arr.n_cont; S++)
                fn(ctx, n->u.arr.ctag_node[S]);
        break;
    case GK_ALT:
        for (uint32_t k = 0; k < n->u.alt.n; k++)
            fn(ctx, n->u.alt.alts[k]);
        break;
    default:
        break;
    }
}

typedef struct par_ctx {
    int32_t *at, *par;
    int32_t self, n;
} par_ctx;

static void par_count(void *ctx, int32_t child)
{
    par_ctx *p = ctx;
    if (child >= 0 && child < p->n)
        p->at[child + 1]++;
}

static void par_fill(void *ctx, int32_t child)
{
    par_ctx *p = ctx;
    if (child >= 0 && child < p->n)
        p->par[p->at[child]++] = p->self;
}

int gc_parents(const sx_grammar *g, int32_t **at, int32_t **par)
{
    int32_t n = g->n_nodes;
    par_ctx p = {.at = calloc((size_t)n + 2, sizeof *p.at), .n = n};
    *at = NULL;
    *par = NULL;
    if (!p.at)
        return -1;
    for (int32_t i = 0; i < n; i++)
        each_child(&g->nodes[i], par_count, &p);
    for (int32_t i = 0; i < n; i++)
        p.at[i + 1] += p.at[i];
    p.par = malloc(((size_t)p.at[n] + 1) * sizeof *p.par);
    if (!p.par) {
        free(p.at);
        return -1;
    }
    /* fill moves each start forward to the next one's: shift back after */
    for (int32_t i = 0; i < n; i++) {
        p.self = i;
        each_child(&g->nodes[i], par_fill, &p);
    }
    for (int32_t i = n; i > 0; i--)
        p.at[i] = p.at[i - 1];
    p.at[0] = 0;
    *at = p.at;
    *par = p.par;
    return 0;
}

static int ok(const uint8_t *ne, const gr_node *nodes, int32_t id)
{
    return id >= 0 && nodes[id].kind != GK_EMPTY && ne[id];
}

/* Properties whose presence would force a property that cannot exist are
 * themselves impossible; iterate to a fixpoint. */
static uint64_t obj_forbidden(const gr_node *n, const uint8_t *ne, const gr_node *nodes)
{
    uint64_t bad = 0;
    for (uint32_t i = 0; i < n->u.obj.n; i++)
        if (!ok(ne, nodes, n->u.obj.props[i].node))
            bad |= gr_prop_bit(&n->u.obj.props[i]);
    for (int changed = 1; changed && n->u.obj.dep_req;) {
        changed = 0;
        for (uint32_t i = 0; i < n->u.obj.n; i++) {
            uint64_t b = gr_prop_bit(&n->u.obj.props[i]);
            if (b && !(bad & b) && (n->u.obj.dep_req[n->u.obj.props[i].index] & bad)) {
                bad |= b;
                changed = 1;
            }
        }
    }
    return bad;
}

/* Can the object take any key beyond its listed ones? */
static int gen_available(const gr_node *n, const uint8_t *ne, const gr_node *nodes)
{
    if (!n->u.obj.keyx)
        return ok(ne, nodes, n->u.obj.additional);
    if (n->u.obj.keyx->start < 0)
        return 0;
    for (int32_t s = 0; s < n->u.obj.keyx->n_states; s++)
        if (ok(ne, nodes, n->u.obj.close_node[s]))
            return 1;
    return 0;
}

typedef struct ne_ctx {
    const uint8_t *ne;
    const gr_node *nodes;
} ne_ctx;

static int value_nonempty(void *ctx, int32_t node)
{
    const ne_ctx *c = ctx;
    return ok(c->ne, c->nodes, node);
}

static int obj_nonempty(const gr_node *n, const uint8_t *ne, const gr_node *nodes)
{
    uint64_t bad = obj_forbidden(n, ne, nodes), req = n->u.obj.required;
    for (int changed = 1; changed && n->u.obj.dep_req;) {
        changed = 0;
        for (uint32_t i = 0; i < n->u.obj.n; i++) {
            int idx = n->u.obj.props[i].index;
            if (idx < 64 && (req >> idx & 1) && (n->u.obj.dep_req[idx] & ~req)) {
                req |= n->u.obj.dep_req[idx];
                changed = 1;
            }
        }
    }
    if (req & bad)
        return 0;
    for (int i = 0; i < n->u.obj.n_forbid; i++)
        if ((req & n->u.obj.forbid[i]) == n->u.obj.forbid[i])
            return 0;
    if (n->u.obj.n_pres) {
        /* some list completes the condition without a forbidden key */
        int any = 0;
        for (int i = 0; i < n->u.obj.n_pres && !any; i++) {
            uint64_t S = req | n->u.obj.pres[i];
            any = !(S & bad) && gr_obj_pres_holds(n, S) &&
                  (n->u.obj.max_props < 0 || __builtin_popcountll(S) <= n->u.obj.max_props);
            for (int f = 0; f < n->u.obj.n_forbid && any; f++)
                any = (S & n->u.obj.forbid[f]) != n->u.obj.forbid[f];
        }
        if (!any)
            return 0;
    }
    int64_t nreq = __builtin_popcountll(req), avail = 0;
    for (uint32_t i = 0; i < n->u.obj.n; i++) {
        uint64_t b = gr_prop_bit(&n->u.obj.props[i]);
        if (b ? !(bad & b) : ok(ne, nodes, n->u.obj.props[i].node))
            avail++;
    }
    int64_t mx = n->u.obj.max_props, mn = n->u.obj.min_props;
    if (mx >= 0 && (nreq > mx || mn > mx))
        return 0;
    if (!gen_available(n, ne, nodes) && avail < mn)
        return 0;
    return 1;
}

static int arr_nonempty(const gr_node *n, const uint8_t *ne, const gr_node *nodes)
{
    int64_t mn = n->u.arr.min_items, mx = n->u.arr.max_items;
    if (mx >= 0 && mn > mx)
        return 0;
    if (n->u.arr.n_cont == 1)
        return gr_cont_feasible(n, 0, 0, ok(ne, nodes, n->u.arr.ctag_node[0]),
                                ok(ne, nodes, n->u.arr.ctag_node[1]));
    if (n->u.arr.n_cont > 1) {
        /* no maximum, no maxItems: an item per constraint, then any */
        for (int i = 0; i < n->u.arr.n_cont; i++)
            if (n->u.arr.cmin[i] > 0 && !ok(ne, nodes, n->u.arr.ctag_node[1 << i]))
                return 0;
        return mn == 0 || ok(ne, nodes, n->u.arr.ctag_node[0]) || ok(ne, nodes, n->u.arr.ctag_node[1]);
    }
    for (int64_t i = 0; i < mn; i++) {
        int32_t it = i < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[i] : n->u.arr.items;
        if (!ok(ne, nodes, it))
            return 0;
        if (i >= (int64_t)n->u.arr.n_prefix)
            break; /* the rest use the same node */
    }
    return 1;
}

static int num_nonempty(const gr_node *n)
{
    if (n->u.num.n_excl) {
        gr_frame f;
        memset(&f, 0, sizeof f);
        f.phase = N_START;
        if (!gr_num_live(n, &f, NULL, 0))
            return 0; /* `not` leaves no value */
    }
    if ((!n->u.num.integer && !n->u.num.scale) || n->u.num.multiple <= 0)
        return 1;
    __int128 a = n->u.num.imin, b = n->u.num.imax, m = n->u.num.multiple;
    __int128 q = a / m;
    if (q * m < a)
        q++;
    return q * m <= b;
}

/* DFS over alternative edges only: a cycle there would expand forever. */
static int alt_cycle(const gr_node *nodes, int32_t id, uint8_t *state)
{
    if (state[id] == 1)
        return 1;
    if (state[id] == 2 || nodes[id].kind != GK_ALT)
        return 0;
    state[id] = 1;
    for (uint32_t i = 0; i < nodes[id].u.alt.n; i++)
        if (alt_cycle(nodes, nodes[id].u.alt.alts[i], state))
            return 1;
    state[id] = 2;
    return 0;
}

int gc_analyse(gc_ctx *c)
{
    gr_node *N = c->g->nodes;
    int32_t n = c->g->n_nodes;
    uint8_t *ne = calloc((size_t)n + 1, 1), *st = calloc((size_t)n + 1, 1), *inq = NULL;
    int32_t *par_at = NULL, *par = NULL, *queue = NULL;
    gr_work work;
    int rc = SX_OK;
    if (!ne || !st) {
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        goto out;
    }
    for (int32_t i = 0; i < n; i++)
        if (alt_cycle(N, i, st)) {
            rc = sx_err_setp(c->err, SX_EUNSUPPORTED, "", -1,
                             "circular $ref: a schema refers to itself without nesting a value");
            goto out;
        }
    /* least fixpoint by a worklist: a node is looked at once, then again
     * each time one of its children turns out nonempty -- O(edges)
     * evaluations, each O(the node's own size), where rounds over all
     * nodes took O(nodes x depth) */
    if (gc_parents(c->g, &par_at, &par) ||
        !(queue = malloc(((size_t)n + 1) * sizeof *queue)) || !(inq = calloc((size_t)n + 1, 1))) {
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        goto out;
    }
    size_t qh = 0, qn = 0; /* a ring of at most n entries (inq: queued); n > 0: a root */
    for (int32_t i = 0; i < n; i++) {
        queue[qn++] = i;
        inq[i] = 1;
    }
    gr_work_init(&work, &c->opts, LONG_MAX);
    while (qn) {
        int32_t i = queue[qh];
        qh = (qh + 1) % (size_t)n;
        qn--;
        inq[i] = 0;
        if (ne[i])
            continue;
        if (gr_work_spend(&work, 1)) {
            rc = sx_err_setp(c->err, SX_ELIMIT, gc_node_ptr(c, i), -1, "compile stopped (%s)",
                             gr_stop_text(work.stop));
            goto out;
        }
        int v = 0;
        switch (N[i].kind) {
        case GK_EMPTY: v = 0; break;
        case GK_LITSET: v = N[i].u.lit.n > 0; break;
        case GK_NUMBER: v = num_nonempty(&N[i]); break;
        case GK_STRING:
            v = !N[i].u.str.x ||
                (N[i].u.str.x->start >= 0 &&
                 gr_strx_len_ok(N[i].u.str.x, N[i].u.str.x->start, 0, N[i].u.str.min_len,
                                N[i].u.str.max_len));
            break;
        case GK_OBJECT: v = obj_nonempty(&N[i], ne, N); break;
        case GK_ARRAY: v = arr_nonempty(&N[i], ne, N); break;
        case GK_ALT:
            for (uint32_t k = 0; k < N[i].u.alt.n; k++)
                v |= ok(ne, N, N[i].u.alt.alts[k]);
            break;
        }
        if (!v)
            continue;
        ne[i] = 1;
        for (int32_t e = par_at[i]; e < par_at[i + 1]; e++) {
            int32_t p = par[e];
            if (!ne[p] && !inq[p]) {
                queue[(qh + qn++) % (size_t)n] = p;
                inq[p] = 1;
            }
        }
    }
    /* cut what can never be completed */
    for (int32_t i = 0; i < n; i++) {
        gr_node *x = &N[i];
        if (!ne[i]) {
            x->kind = GK_EMPTY;
            continue;
        }
        if (x->kind == GK_ALT) {
            uint32_t m = 0;
            for (uint32_t k = 0; k < x->u.alt.n; k++)
                if (ne[x->u.alt.alts[k]])
                    x->u.alt.alts[m++] = x->u.alt.alts[k];
            x->u.alt.n = m;
        } else if (x->kind == GK_OBJECT) {
            uint64_t bad = obj_forbidden(x, ne, N);
            for (uint32_t k = 0; k < x->u.obj.n; k++) {
                uint64_t b = gr_prop_bit(&x->u.obj.props[k]);
                if (b ? (bad & b) != 0 : !ok(ne, N, x->u.obj.props[k].node))
                    x->u.obj.props[k].node = -1; /* the key may never appear */
            }
            if (!ok(ne, N, x->u.obj.additional))
                x->u.obj.additional = -1;
            if (x->u.obj.keyx) {
                ne_ctx nc = {ne, N};
                gr_keyauto_prune(x->u.obj.keyx, x->u.obj.close_node, value_nonempty, &nc);
            }
        } else if (x->kind == GK_ARRAY) {
            for (uint32_t k = 0; k < x->u.arr.n_prefix; k++)
                if (!ne[x->u.arr.prefix[k]]) {
                    if (x->u.arr.max_items < 0 || x->u.arr.max_items > (int64_t)k)
                        x->u.arr.max_items = k;
                    break;
                }
            if (!ok(ne, N, x->u.arr.items))
                x->u.arr.items = -1;
        }
    }
    if (c->g->root < 0 || !ne[c->g->root])
        rc = sx_err_setp(c->err, SX_EINVAL, "", -1, "the schema admits no value at all");
    else if ((rc = gc_unique_check(c)) == SX_OK)
        rc = gc_witness(c);
out:
    free(ne);
    free(st);
    free(inq);
    free(queue);
    free(par_at);
    free(par);
    return rc;
}
