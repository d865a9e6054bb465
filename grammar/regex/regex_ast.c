/* The regex AST: a node arena plus interned code-point sets. */
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex_internal.h"

void sx_rx_ast_init(sx_rx_ast *a)
{
    memset(a, 0, sizeof *a);
    a->root = -1;
}

void sx_rx_ast_free(sx_rx_ast *a)
{
    for (int32_t i = 0; i < a->n_sets; i++)
        sx_rx_cset_free(&a->sets[i]);
    free(a->sets);
    free(a->nodes);
    free(a->set_hash);
    sx_rx_ast_init(a);
}

int32_t sx_rx_ast_node(sx_rx_ast *a, int kind)
{
    if (a->n_nodes == a->cap_nodes) {
        int32_t nc = a->cap_nodes ? a->cap_nodes * 2 : 64;
        sx_rx_node *nn = realloc(a->nodes, (size_t)nc * sizeof *nn);
        if (!nn)
            return -1;
        a->nodes = nn;
        a->cap_nodes = nc;
    }
    sx_rx_node *n = &a->nodes[a->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->set = n->child = n->last = n->next = -1;
    return a->n_nodes++;
}

void sx_rx_ast_append(sx_rx_ast *a, int32_t parent, int32_t child)
{
    sx_rx_node *p = &a->nodes[parent];
    if (p->last < 0)
        p->child = child;
    else
        a->nodes[p->last].next = child;
    p->last = child;
}

static uint32_t set_hash(const sx_rx_cset *s)
{
    uint32_t h = 2166136261u ^ (uint32_t)s->n;
    for (int32_t i = 0; i < 2 * s->n; i++)
        h = (h ^ s->r[i]) * 16777619u;
    return h;
}

static int rehash(sx_rx_ast *a, int32_t cap)
{
    int32_t *t = malloc((size_t)cap * sizeof *t);
    if (!t)
        return SX_ENOMEM;
    for (int32_t i = 0; i < cap; i++)
        t[i] = -1;
    for (int32_t id = 0; id < a->n_sets; id++) {
        uint32_t j = set_hash(&a->sets[id]) & (uint32_t)(cap - 1);
        while (t[j] >= 0)
            j = (j + 1) & (uint32_t)(cap - 1);
        t[j] = id;
    }
    free(a->set_hash);
    a->set_hash = t;
    a->set_hash_cap = cap;
    return SX_OK;
}

int32_t sx_rx_ast_set(sx_rx_ast *a, sx_rx_cset *s)
{
    sx_rx_cset_normalize(s);
    if (sx_rx_cset_remove_surrogates(s))
        goto fail;
    if (2 * (a->n_sets + 1) > a->set_hash_cap &&
        rehash(a, a->set_hash_cap ? a->set_hash_cap * 2 : 64))
        goto fail;
    uint32_t mask = (uint32_t)a->set_hash_cap - 1;
    uint32_t j = set_hash(s) & mask;
    for (; a->set_hash[j] >= 0; j = (j + 1) & mask) {
        if (sx_rx_cset_equal(&a->sets[a->set_hash[j]], s)) {
            sx_rx_cset_free(s);
            return a->set_hash[j];
        }
    }
    if (a->n_sets == a->cap_sets) {
        int32_t nc = a->cap_sets ? a->cap_sets * 2 : 16;
        sx_rx_cset *ns = realloc(a->sets, (size_t)nc * sizeof *ns);
        if (!ns)
            goto fail;
        a->sets = ns;
        a->cap_sets = nc;
    }
    a->sets[a->n_sets] = *s;
    memset(s, 0, sizeof *s);
    a->set_hash[j] = a->n_sets;
    return a->n_sets++;
fail:
    sx_rx_cset_free(s);
    return -1;
}

static uint64_t sat_add(uint64_t x, uint64_t y, uint64_t cap)
{
    return x + y > cap ? cap + 1 : x + y;
}

uint64_t sx_rx_ast_size(const sx_rx_ast *a, int32_t node, uint64_t cap)
{
    const sx_rx_node *n = &a->nodes[node];
    uint64_t s = 0;
    switch (n->kind) {
    case SX_RX_EMPTY:
        return 0;
    case SX_RX_SET:
    case SX_RX_ASSERT:
        return 1;
    case SX_RX_CAT:
    case SX_RX_ALT:
        for (int32_t c = n->child; c >= 0; c = a->nodes[c].next) {
            s = sat_add(s, sx_rx_ast_size(a, c, cap) + (n->kind == SX_RX_ALT), cap);
            if (s > cap)
                return s;
        }
        return s;
    case SX_RX_REP: {
        uint64_t body = sx_rx_ast_size(a, n->child, cap) + 1;
        uint64_t copies = n->max < 0 ? (uint64_t)n->min + 1 : (uint64_t)n->max;
        if (copies == 0)
            return 0;
        if (body > cap || copies > cap / body + 1)
            return cap + 1;
        return sat_add(body * copies, 0, cap);
    }
    }
    return 0;
}
