/* What uniqueItems can be kept exact for, decided after analysis: items
 * that are scalars (the matcher counts their remaining values as they are
 * written), objects that can always take one more additional key, and
 * arrays that can always take one more item (either can always still
 * become a value no earlier item has).  Also: minItems distinct values
 * must exist, or every required item could not be found a new value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/compile/compile.h"

static int refuse(gc_ctx *c, const gr_node *n, const char *why)
{
    const char *p = n->u.arr.unique_ptr ? n->u.arr.unique_ptr : "";
    return sx_err_setp(c->err, SX_EUNSUPPORTED, p, -1, "unsupported: 'uniqueItems' at %s: %s", p,
                       why);
}

int gc_unique_check(gc_ctx *c)
{
    const sx_grammar *g = c->g;
    /* every array's gr_can_grow decided now, while one thread owns g */
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].kind == GK_ARRAY)
            gr_can_grow(g, i);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        if (n->kind != GK_ARRAY || n->u.arr.unique != GR_UNIQ_HASH)
            continue;
        for (uint32_t k = 0; k <= n->u.arr.n_prefix; k++) {
            int32_t it = k < n->u.arr.n_prefix ? n->u.arr.prefix[k] : n->u.arr.items;
            if (it >= 0 && gr_distinct_values(g, it, 0, 1) < 0)
                return refuse(c, n, "items are objects or arrays that cannot always take "
                                    "one more member, so they cannot be kept distinct");
        }
        for (int64_t k = 0; k < n->u.arr.min_items; k++) {
            int32_t it = k < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[k] : n->u.arr.items;
            if (gr_distinct_values(g, it, 0, n->u.arr.min_items) < n->u.arr.min_items)
                return refuse(c, n, "minItems needs more distinct values than the items "
                                    "are known to have");
            if (k >= (int64_t)n->u.arr.n_prefix)
                break; /* the rest use the same node */
        }
    }
    return SX_OK;
}
