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
 * longest plain token's byte length, or earlier when stable.
 *
 * A round does not look at every state (a counter's states split one
 * or two per round, over hundreds of rounds): two states of one class
 * can only part in round r + 1 through a successor class that split in
 * round r, so each round splits by the pieces the previous round made --
 * all but the largest of each, as in Hopcroft's algorithm -- touching
 * only their predecessors.  Too large an automaton gets no classes
 * (every state its own). */
#include <stdlib.h>
#include <string.h>

#include "grammar/match/match.h"
#include "grammar/vocab/vocab.h"

/* states x distinct columns of one automaton (the predecessor lists) */
#define EQUIV_BUDGET (4u << 20)
/* predecessors one computation may visit, over all rounds */
#define EQUIV_WORK (64u << 20)

int32_t gr_vocab_plain_depth(const sx_vocab *v)
{
    return v->max_plain_bytes;
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
        uint64_t v = GR_FNV_BASIS;
        for (int32_t s = 0; s < S; s++)
            v = (v ^ (uint32_t)x->next[(size_t)s * (size_t)C + (size_t)c]) * GR_FNV_PRIME;
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

/* The partition: the states of each class lie together in elem, the
 * marked ones (predecessors of the splitter at hand) first. */
typedef struct part {
    int32_t *elem, *pos, *cls;   /* pos[s]: index of s in elem */
    int32_t *start, *len, *mark; /* per class */
    int32_t *touched;            /* classes with marked members */
    int32_t k;                   /* classes so far */
} part;

/* Predecessors of each target (S = the dead state) on each distinct
 * column: pred[pst[j * (S + 2) + t] .. pst[j * (S + 2) + t + 1]). */
typedef struct preds {
    int32_t *pst, *pred;
} preds;

static int preds_build(const gr_strx *x, const int32_t *col, int32_t ncol, preds *p)
{
    int32_t S = x->n_states, C = x->n_classes, W = S + 2;
    p->pst = calloc((size_t)ncol * (size_t)W, sizeof *p->pst);
    p->pred = malloc((size_t)ncol * (size_t)S * sizeof *p->pred);
    if (!p->pst || !p->pred)
        return -1;
    for (int32_t j = 0; j < ncol; j++) {
        int32_t *st = p->pst + (size_t)j * (size_t)W, *pr = p->pred + (size_t)j * (size_t)S;
        for (int32_t s = 0; s < S; s++) {
            int32_t t = x->next[(size_t)s * (size_t)C + (size_t)col[j]];
            st[(t < 0 ? S : t) + 1]++;
        }
        for (int32_t t = 0; t <= S; t++)
            st[t + 1] += st[t];
        /* fill back to front so that st[t] ends at the list's first slot */
        for (int32_t s = S - 1; s >= 0; s--) {
            int32_t t = x->next[(size_t)s * (size_t)C + (size_t)col[j]];
            t = t < 0 ? S : t;
            pr[--st[t + 1]] = s;
        }
        /* st[t + 1] now holds the start of t's list: shift back one */
        for (int32_t t = 0; t <= S; t++)
            st[t] = st[t + 1];
        st[S + 1] = S;
    }
    return 0;
}

/* Marks the predecessors on column j of the states sp[0..n). */
static uint64_t mark_preds(part *P, const preds *pr, int32_t S, int32_t j, const int32_t *sp,
                           int32_t n, int32_t *n_touched)
{
    const int32_t *st = pr->pst + (size_t)j * (size_t)(S + 2);
    const int32_t *list = pr->pred + (size_t)j * (size_t)S;
    uint64_t work = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t t = sp[i];
        for (int32_t q = st[t]; q < st[t + 1]; q++) {
            int32_t s = list[q], B = P->cls[s];
            if (P->mark[B] == 0)
                P->touched[(*n_touched)++] = B;
            /* swap s to the end of B's marked front */
            int32_t at = P->start[B] + P->mark[B]++, o = P->elem[at], ps = P->pos[s];
            P->elem[at] = s;
            P->pos[s] = at;
            P->elem[ps] = o;
            P->pos[o] = ps;
        }
        work += (uint64_t)(st[t + 1] - st[t]) + 1;
    }
    return work;
}

/* A round's splitters: segments of (length, states).  A piece split
 * again in the same round is there twice (whole, then its smaller part),
 * so the size is not bounded by the states. */
typedef struct segs {
    int32_t *v;
    size_t n, cap;
} segs;

static int segs_room(segs *g, size_t more)
{
    if (g->n + more <= g->cap)
        return 0;
    size_t cap = g->cap ? g->cap : 64;
    while (cap < g->n + more)
        cap *= 2;
    int32_t *nv = realloc(g->v, cap * sizeof *nv);
    if (!nv)
        return -1;
    g->v = nv;
    g->cap = cap;
    return 0;
}

/* Splits each touched class into its marked and unmarked states; the
 * smaller part becomes the new class and goes to out (the next round's
 * splitters).  Returns 0, or -1 when out of memory. */
static int split_touched(part *P, int32_t n_touched, segs *out)
{
    for (int32_t i = 0; i < n_touched; i++) {
        int32_t B = P->touched[i], m = P->mark[B];
        P->mark[B] = 0;
        if (m == P->len[B])
            continue;
        int32_t K = P->k++;
        if (m <= P->len[B] - m) {
            P->start[K] = P->start[B];
            P->len[K] = m;
            P->start[B] += m;
            P->len[B] -= m;
        } else {
            P->start[K] = P->start[B] + m;
            P->len[K] = P->len[B] - m;
            P->len[B] = m;
        }
        P->mark[K] = 0;
        if (segs_room(out, (size_t)P->len[K] + 1))
            return -1;
        out->v[out->n++] = P->len[K];
        for (int32_t q = P->start[K]; q < P->start[K] + P->len[K]; q++) {
            P->cls[P->elem[q]] = K;
            out->v[out->n++] = P->elem[q];
        }
    }
    return 0;
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
    int32_t *col = malloc((size_t)C * sizeof *col), ncol = col ? gr_strx_columns(x, col) : -1;
    part P = {0};
    preds pr = {0};
    segs sp = {0}, nx = {0}; /* this round's splitters, the next's */
    int32_t *table = malloc((size_t)S * sizeof *table);
    int32_t k_short = -1, full = 0;
    int32_t *rep = NULL, *rep_short = NULL;
    gr_equiv *e = NULL;
    uint64_t work = 0;
    if (ncol < 0 || !table || preds_build(x, col, ncol, &pr) || segs_room(&sp, 2))
        goto out;
    P.elem = malloc((size_t)S * sizeof *P.elem);
    P.pos = malloc((size_t)S * sizeof *P.pos);
    P.cls = calloc((size_t)S, sizeof *P.cls);
    P.start = malloc((size_t)S * sizeof *P.start);
    P.len = malloc((size_t)S * sizeof *P.len);
    P.mark = calloc((size_t)S, sizeof *P.mark);
    P.touched = malloc((size_t)S * sizeof *P.touched);
    if (!P.elem || !P.pos || !P.cls || !P.start || !P.len || !P.mark || !P.touched)
        goto out;
    for (int32_t s = 0; s < S; s++)
        P.elem[s] = P.pos[s] = s;
    P.start[0] = 0;
    P.len[0] = S;
    P.k = 1;
    /* round 1 splits by the dead state */
    sp.v[sp.n++] = 1;
    sp.v[sp.n++] = S;
    for (int32_t r = 0; r < depth; r++) {
        if (r == SX_VOCAB_SHORT && depth > SX_VOCAB_SHORT && P.k < S) {
            /* the classes for the short tokens: states alike to this depth */
            if (!(rep_short = reps(P.cls, S, table)))
                goto out;
            k_short = P.k;
        }
        if (sp.n == 0) {
            full = 1; /* stable: exact to any depth */
            break;
        }
        nx.n = 0;
        for (size_t i = 0; i < sp.n; i += (size_t)sp.v[i] + 1) {
            for (int32_t j = 0; j < ncol; j++) {
                int32_t n_touched = 0;
                work += mark_preds(&P, &pr, S, j, sp.v + i + 1, sp.v[i], &n_touched);
                if (split_touched(&P, n_touched, &nx))
                    goto out;
            }
        }
        if (work > EQUIV_WORK)
            break; /* stopped early these classes would be too coarse */
        segs t = sp;
        sp = nx;
        nx = t;
        if (r + 1 == depth)
            full = 1; /* `depth` rounds: exact for the plain walk */
    }
    if (full && P.k < S && !(rep = reps(P.cls, S, table)))
        goto out;
    if (rep_short && rep && k_short == P.k) {
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
        e->n_states = x->n_states;
        rep = rep_short = NULL;
    }
out:
    free(rep);
    free(rep_short);
    free(col);
    free(sp.v);
    free(nx.v);
    free(table);
    free(pr.pst);
    free(pr.pred);
    free(P.elem);
    free(P.pos);
    free(P.cls);
    free(P.start);
    free(P.len);
    free(P.mark);
    free(P.touched);
    return e;
}

const gr_equiv *gr_strx_equiv(const sx_grammar *g, const gr_strx *x)
{
    gr_equiv *e = gr_once_get(&x->plain_rep);
    if (!e)
        e = gr_once_publish(&x->plain_rep, compute(g->vocab, x), gr_equiv_drop);
    return e == GR_ONCE_NONE ? NULL : e;
}
