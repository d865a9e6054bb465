/* The per-state masks of plain tokens over a string automaton: which plain
 * tokens keep it alive from a state, and which may open a string node's
 * content.  Computed on first use and published into the grammar's
 * gr_once slots, shared by every thread. */
#include <stdlib.h>
#include <string.h>

#include "grammar/match/match.h"

/* Marks into m the plain tokens of trie N (n nodes) that keep the
 * automaton alive from st, going no deeper than max_depth bytes. */
static void plain_walk(const sx_vocab *v, const gr_strx *x, const sx_vocab_node *N, uint32_t n,
                       int32_t st, int max_depth, uint32_t *m)
{
    int32_t stack[257];
    stack[0] = st;
    for (uint32_t i = 1; i < n;) {
        int d = N[i].depth;
        int32_t s = d > max_depth ? -1 : gr_strx_step(x, stack[d - 1], N[i].byte);
        if (s < 0) {
            i = N[i].next;
            continue;
        }
        stack[d] = s;
        int32_t t = N[i].token;
        if (t >= 0 && v->plain_cp[t] >= 0)
            m[t >> 5] |= 1u << (t & 31);
        i++;
    }
}

/* Publishes a mask computed for a cache slot; the first one wins (m is
 * never NULL here, so the slot never holds GR_ONCE_NONE). */
static const uint32_t *publish(const gr_once *slot, uint32_t *m)
{
    return gr_once_publish(slot, m, free);
}

const uint32_t *gr_strx_plain_mask(const sx_grammar *g, const gr_strx *x, int32_t st)
{
    /* states the plain walk cannot tell apart share one mask */
    const gr_equiv *e = gr_strx_equiv(g, x);
    if (e && e->rep)
        st = e->rep[st];
    const uint32_t *hit = gr_once_get(&x->plain_cache[st]);
    if (hit)
        return hit;
    uint32_t *m;
    const sx_vocab *v = g->vocab;
    m = malloc((size_t)v->mask_words * sizeof *m);
    if (!m)
        return NULL;
    if (gr_strx_plain_universal(x, st)) {
        /* no plain character can kill it: every plain token */
        memcpy(m, v->plain_le + (size_t)v->max_plain_cp * (size_t)v->mask_words,
               (size_t)v->mask_words * sizeof *m);
    } else if (e && e->rep_short) {
        /* the short tokens' part, shared by the states alike to their
         * depth, then the few long tokens from this state */
        int32_t q = e->rep_short[st];
        const uint32_t *sh = gr_once_get(&e->short_cache[q]);
        if (!sh) {
            uint32_t *t = calloc((size_t)v->mask_words, sizeof *t);
            if (!t) {
                free(m);
                return NULL;
            }
            plain_walk(v, x, v->nodes, v->n_nodes, q, SX_VOCAB_SHORT, t);
            sh = publish(&e->short_cache[q], t);
        }
        memcpy(m, sh, (size_t)v->mask_words * sizeof *m);
        plain_walk(v, x, v->long_nodes, v->n_long_nodes, st, 256, m);
    } else {
        /* walk the whole trie with the automaton alone: cheap table steps */
        memset(m, 0, (size_t)v->mask_words * sizeof *m);
        plain_walk(v, x, v->nodes, v->n_nodes, st, 256, m);
    }
    return publish(&x->plain_cache[st], m);
}

const uint32_t *gr_strx_start_mask(const sx_grammar *g, const gr_node *n)
{
    const uint32_t *hit = gr_once_get(&n->u.str.start_mask);
    if (hit)
        return hit;
    uint32_t *m;
    const sx_vocab *v = g->vocab;
    const gr_strx *x = n->u.str.x;
    const sx_vocab_node *N = v->nodes;
    m = calloc((size_t)v->mask_words, sizeof *m);
    if (!m)
        return NULL;
    /* the plain walk, with the lengths judged at each token's end (a
     * completion from there fits, so one from every byte before does) */
    int32_t stack[257];
    stack[0] = x->start;
    for (uint32_t i = 1; i < v->n_nodes;) {
        int d = N[i].depth;
        int32_t s = gr_strx_step(x, stack[d - 1], N[i].byte);
        if (s < 0) {
            i = N[i].next;
            continue;
        }
        stack[d] = s;
        int32_t t = N[i].token;
        if (t >= 0 && v->plain_cp[t] >= 0 &&
            gr_strx_len_ok(x, s, v->plain_cp[t], n->u.str.min_len, n->u.str.max_len))
            m[t >> 5] |= 1u << (t & 31);
        i++;
    }
    return publish(&n->u.str.start_mask, m);
}

