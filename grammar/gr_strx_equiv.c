/* States of a string automaton that the plain-token mask cannot tell apart.
 *
 * gr_strx_plain_mask walks the vocabulary trie from a state and keeps a
 * plain token when every byte of it leaves the automaton alive (a state
 * >= 0).  Two states whose liveness agrees on every byte string up to the
 * longest plain token therefore have the same mask, and the walk -- a
 * third of a million trie nodes for a permissive state -- is needed once
 * per class of such states, not once per state.  This matters for the
 * patterns that make many states with one behaviour: an unanchored
 * pattern (search semantics: every state is alive on every byte), a
 * counted repetition far from its bound (`(\S+\s+){0,99}`: state k and
 * state k+1 differ only after some 2 (99 - k) bytes), a fixed length.
 *
 * The classes are a bounded Moore refinement: round 0 puts all live
 * states together; round r + 1 splits states whose successors on some
 * byte class fall in different round-r classes (a dead successor is a
 * class of its own).  After r rounds two states share a class exactly
 * when their liveness agrees on all strings of at most r bytes; once a
 * round splits nothing, no later round would.  Refinement stops at the
 * longest plain token's byte length, or earlier when stable.  Too large
 * an automaton gets no classes (every state its own). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/gr_internal.h"
#include "grammar/vocab/vocab.h"

/* cells (states x byte classes) one computation may visit, over all rounds */
#define EQUIV_BUDGET (4u << 20)

static uint64_t row_hash(const int32_t *r, int32_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (int32_t i = 0; i < n; i++)
        h = (h ^ (uint32_t)r[i]) * 1099511628211ULL;
    return gr_mix(h);
}

int32_t gr_vocab_plain_depth(const sx_vocab *v)
{
    uint32_t d = 0;
    for (int32_t t = 0; t < v->n_tokens; t++)
        if (v->plain_cp[t] >= 0 && v->tok_len[t] > d)
            d = v->tok_len[t];
    return (int32_t)d;
}

/* Byte classes whose columns of the table are equal move every state
 * alike, so one of each is enough (key automata have a class per byte,
 * and most bytes act alike).  Fills col[] with one class per distinct
 * column; returns how many, or -1. */
int32_t gr_strx_columns(const gr_strx *x, int32_t *col)
{
    int32_t S = x->n_states, C = x->n_classes, k = 0;
    uint64_t *h = malloc((size_t)C * sizeof *h);
    if (!h)
        return -1;
    for (int32_t c = 0; c < C; c++) {
        uint64_t v = 1469598103934665603ULL;
        for (int32_t s = 0; s < S; s++)
            v = (v ^ (uint32_t)x->next[(size_t)s * (size_t)C + (size_t)c]) * 1099511628211ULL;
        h[c] = v;
        int32_t j = 0;
        for (; j < k; j++) {
            int32_t d = col[j], s = 0;
            if (h[d] != v)
                continue;
            while (s < S && x->next[(size_t)s * (size_t)C + (size_t)d] ==
                                x->next[(size_t)s * (size_t)C + (size_t)c])
                s++;
            if (s == S)
                break;
        }
        if (j == k)
            col[k++] = c;
    }
    free(h);
    return k;
}

/* One refinement round: new class ids into nc from the signatures (own
 * class, successors' classes on each distinct column); returns the
 * number of classes. */
static int32_t refine(const gr_strx *x, const int32_t *col, int32_t ncol, const int32_t *cls,
                      int32_t *nc, int32_t *sig, int32_t *table, uint32_t tmask)
{
    int32_t S = x->n_states, C = x->n_classes, w = ncol + 1, k = 0;
    for (uint32_t i = 0; i <= tmask; i++)
        table[i] = -1;
    for (int32_t s = 0; s < S; s++) {
        int32_t *r = sig + (size_t)s * (size_t)w;
        r[0] = cls[s];
        const int32_t *nx = x->next + (size_t)s * (size_t)C;
        for (int32_t j = 0; j < ncol; j++)
            r[j + 1] = nx[col[j]] < 0 ? -1 : cls[nx[col[j]]];
        uint32_t h = (uint32_t)row_hash(r, w) & tmask;
        for (;; h = (h + 1) & tmask) {
            int32_t o = table[h];
            if (o < 0) {
                table[h] = s;
                nc[s] = k++;
                break;
            }
            if (!memcmp(sig + (size_t)o * (size_t)w, r, (size_t)w * sizeof *r)) {
                nc[s] = nc[o];
                break;
            }
        }
    }
    return k;
}

/* The first state of each class, from class ids numbered by first state
 * (table has room for S entries). */
static int32_t *reps(const int32_t *cls, int32_t S, int32_t *table)
{
    int32_t *rep = malloc((size_t)S * sizeof *rep);
    if (!rep)
        return NULL;
    for (int32_t s = 0; s < S; s++)
        table[s] = -1;
    for (int32_t s = 0; s < S; s++) {
        if (table[cls[s]] < 0)
            table[cls[s]] = s;
        rep[s] = table[cls[s]];
    }
    return rep;
}

/* The classes to the longest plain token's depth, and to SX_VOCAB_SHORT
 * bytes when they are coarser there; NULL when nothing is shared. */
static gr_equiv *compute(const sx_vocab *v, const gr_strx *x)
{
    int32_t S = x->n_states, C = x->n_classes;
    int32_t depth = gr_vocab_plain_depth(v);
    if (S <= 0 || C <= 0 || (uint64_t)S * (uint64_t)C > EQUIV_BUDGET)
        return NULL;
    uint32_t tsize = 1;
    while (tsize < 2u * (uint32_t)S)
        tsize <<= 1;
    int32_t *col = malloc((size_t)C * sizeof *col), ncol = col ? gr_strx_columns(x, col) : -1;
    int32_t *cls = calloc((size_t)S, sizeof *cls), *nc = malloc((size_t)S * sizeof *nc);
    int32_t *sig = ncol >= 0 ? malloc((size_t)S * (size_t)(ncol + 1) * sizeof *sig) : NULL;
    int32_t *table = malloc(tsize * sizeof *table);
    int32_t k = 1, k_short = -1, full = 0;
    int32_t *rep = NULL, *rep_short = NULL;
    gr_equiv *e = NULL;
    uint64_t spent = (uint64_t)S * (uint64_t)C;
    if (!cls || !nc || !sig || !table)
        goto out;
    for (int32_t r = 0; r < depth; r++) {
        if (r == SX_VOCAB_SHORT && depth > SX_VOCAB_SHORT && k < S) {
            /* the classes for the short tokens: states alike to this depth */
            if (!(rep_short = reps(cls, S, table)))
                goto out;
            k_short = k;
        }
        spent += (uint64_t)S * (uint64_t)(ncol + 1);
        if (spent > EQUIV_BUDGET)
            break; /* stopped early these classes would be too coarse */
        int32_t nk = refine(x, col, ncol, cls, nc, sig, table, tsize - 1);
        memcpy(cls, nc, (size_t)S * sizeof *cls);
        if (nk == k) {
            full = 1; /* stable: exact to any depth */
            break;
        }
        k = nk;
        if (r + 1 == depth)
            full = 1; /* `depth` rounds: exact for the plain walk */
    }
    if (full && k < S && !(rep = reps(cls, S, table)))
        goto out;
    if (rep_short && rep && k_short == k) {
        free(rep_short); /* no coarser at the short depth */
        rep_short = NULL;
    }
    if (!rep && !rep_short)
        goto out;
    e = calloc(1, sizeof *e);
    if (e && rep_short && !(e->short_cache = calloc((size_t)S, sizeof *e->short_cache))) {
        free(e);
        e = NULL;
    }
    if (e) {
        e->rep = rep;
        e->rep_short = rep_short;
        rep = rep_short = NULL;
    }
out:
    free(rep);
    free(rep_short);
    free(col);
    free(cls);
    free(nc);
    free(sig);
    free(table);
    return e;
}

/* A marker for "computed, nothing shared", distinct from NULL (not yet). */
static gr_equiv none_shared;

const gr_equiv *gr_strx_equiv(const sx_grammar *g, gr_strx *x)
{
    _Atomic(gr_equiv *) *slot = (_Atomic(gr_equiv *) *)&x->plain_rep;
    gr_equiv *e = atomic_load_explicit(slot, memory_order_acquire);
    if (!e) {
        gr_equiv *mine = compute(g->vocab, x);
        gr_equiv *want = mine ? mine : &none_shared, *expected = NULL;
        if (atomic_compare_exchange_strong_explicit(slot, &expected, want, memory_order_acq_rel,
                                                    memory_order_acquire)) {
            e = want;
        } else {
            gr_equiv_free(mine, x->n_states);
            e = expected;
        }
    }
    return e == &none_shared ? NULL : e;
}

void gr_equiv_free(gr_equiv *e, int32_t n_states)
{
    if (!e || e == &none_shared)
        return;
    if (e->short_cache)
        for (int32_t s = 0; s < n_states; s++)
            free(e->short_cache[s]);
    free(e->short_cache);
    free(e->rep);
    free(e->rep_short);
    free(e);
}

void gr_strx_free_rep(gr_strx *x)
{
    gr_equiv_free(x->plain_rep, x->n_states);
    x->plain_rep = NULL;
}
