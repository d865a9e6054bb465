/* The compiled grammar's lifetime: its owned allocations (a pool freed
 * with it), the caches the matcher fills on first use (gr_once slots), the
 * automata it holds, and the public queries on its size. */
#include <stdlib.h>
#include <string.h>

#include "grammar/ir/ir.h"
#include "grammar/regex/regex.h"

char gr_once_none[1];

/* ---- owned allocations ------------------------------------------------ */

typedef struct pool_block {
    struct pool_block *next;
    _Alignas(16) unsigned char data[];
} pool_block;

void *gr_pool_alloc(sx_grammar *g, size_t n)
{
    pool_block *b = malloc(sizeof *b + (n ? n : 1));
    if (!b)
        return NULL;
    b->next = g->pool;
    g->pool = b;
    g->pool_bytes += sizeof *b + (n ? n : 1);
    memset(b->data, 0, n ? n : 1);
    return b->data;
}

static void pool_free(void *p)
{
    pool_block *b = p;
    while (b) {
        pool_block *n = b->next;
        free(b);
        b = n;
    }
}

void gr_equiv_drop(void *p)
{
    gr_equiv *e = p;
    if (e->short_cache)
        for (int32_t s = 0; s < e->n_states; s++)
            gr_once_clear(&e->short_cache[s], free);
    free(e->short_cache);
    free(e->rep);
    free(e->rep_short);
    free(e);
}

void gr_strx_free_caches(sx_grammar *g)
{
    for (int32_t i = 0; i < g->n_nodes; i++) {
        gr_node *n = &g->nodes[i];
        if (n->kind == GK_STRING)
            gr_once_clear(&n->u.str.start_mask, free);
        gr_strx *x = n->kind == GK_STRING ? n->u.str.x : n->kind == GK_OBJECT ? n->u.obj.keyx : NULL;
        if (!x || !x->plain_cache)
            continue;
        /* (an automaton can serve several nodes: freed once, the slots
         * are empty the second time) */
        gr_once_clear(&x->plain_rep, gr_equiv_drop);
        gr_once_clear(&x->fin_near, free);
        for (int32_t s = 0; s < x->n_states; s++)
            gr_once_clear(&x->plain_cache[s], free);
    }
    for (int i = 0; i < g->n_res; i++)
        sx_re_free(g->res[i]);
    free(g->res);
}

void sx_gr_free(sx_grammar *g)
{
    if (!g)
        return;
    gr_strx_free_caches(g);
    free(g->nodes);
    pool_free(g->pool);
    free(g);
}

int sx_gr_n_nodes(const sx_grammar *g)
{
    return g->n_nodes;
}

size_t sx_gr_mem_bytes(const sx_grammar *g)
{
    size_t b = sizeof *g + (size_t)g->cap_nodes * sizeof *g->nodes + g->pool_bytes;
    for (int i = 0; i < g->n_res; i++)
        b += sx_re_mem_bytes(g->res[i]);
    return b;
}
