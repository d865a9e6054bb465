/* Key automata at run time: whether a plain token can lead a key into a
 * state whose every completion is a key already in the object, judged
 * from the least count of completions reachable within the longest plain
 * token (computed on first use, published into the automaton's fin_near
 * slot). */
#include <stdlib.h>
#include <string.h>

#include "grammar/match/match.h"
#include "grammar/vocab/vocab.h"

/* fin_near[s]: the least fin_count of any state reachable from s in at
 * most `depth` bytes -- no token goes further, and the states far ahead
 * (the ends of a bounded key) need not hold a token back.  Rounds of
 * r'[s] = min(fin[s], r[successors]) over the distinct columns; NULL when
 * too large (fin_reach, over any distance, is used then). */
static uint32_t *near_min(const gr_strx *x, int32_t depth)
{
    int32_t n = x->n_states, C = x->n_classes;
    int32_t *col = malloc((size_t)C * sizeof *col), ncol = col ? gr_strx_columns(x, col) : -1;
    uint32_t *r = NULL, *nr = NULL;
    if (ncol < 0 || (uint64_t)n * (uint64_t)(ncol + 1) * (uint64_t)depth > (8u << 20))
        goto fail;
    r = malloc((size_t)n * sizeof *r);
    nr = malloc((size_t)n * sizeof *nr);
    if (!r || !nr)
        goto fail;
    memcpy(r, x->fin_count, (size_t)n * sizeof *r);
    for (int32_t d = 0; d < depth; d++) {
        int changed = 0;
        for (int32_t s = 0; s < n; s++) {
            uint32_t v = x->fin_count[s];
            for (int32_t j = 0; j < ncol; j++) {
                int32_t t = x->next[(size_t)s * (size_t)C + (size_t)col[j]];
                if (t >= 0 && r[t] < v)
                    v = r[t];
            }
            nr[s] = v;
            changed |= v != r[s];
        }
        uint32_t *tmp = r;
        r = nr;
        nr = tmp;
        if (!changed)
            break;
    }
    free(col);
    free(nr);
    return r;
fail:
    free(col);
    free(r);
    free(nr);
    return NULL;
}

int gr_keyauto_none_all_seen(const sx_grammar *g, const gr_strx *x, int32_t st, const void *seen)
{
    uint32_t n_seen = 0;
    for (const gr_keyh *k = seen; k; k = k->next)
        n_seen++;
    if (!x->fin_count)
        return 0;
    const uint32_t *r = gr_once_get(&x->fin_near);
    if (!r)
        r = gr_once_publish(&x->fin_near, near_min(x, gr_vocab_plain_depth(g->vocab)), free);
    if (r == GR_ONCE_NONE)
        return x->fin_reach && x->fin_reach[st] > n_seen;
    return r[st] > n_seen;
}
