/* Pruning and minimisation of partial DFAs.
 *
 * Minimisation follows Valmari and Lehtinen's refinement of Hopcroft's
 * algorithm for partial DFAs: states and transitions are both kept in
 * refinable partitions ("blocks" of states and "cords" of transitions), and
 * each new block splits the cords by head while each cord splits the blocks
 * by tail, always leaving the larger half implicit.  It needs every state to
 * be reachable and co-reachable, which the pruning pass guarantees, and it
 * runs in O(m log n) on m transitions. */
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex_internal.h"

void sx_rx_sdfa_free(sx_rx_sdfa *d)
{
    free(d->accept);
    free(d->row);
    free(d->lab);
    free(d->dst);
    memset(d, 0, sizeof *d);
    d->start = -1;
}

typedef struct refine {
    int32_t  n_sets;
    int32_t *elems, *loc, *set_of, *first, *past;
} refine;

typedef struct marks {
    int32_t *count;   /* marked elements per set */
    int32_t *touched; /* sets with marks */
    int32_t  n_touched;
} marks;

static int refine_init(refine *r, int32_t n)
{
    size_t sz = (size_t)n + 1;
    r->elems = malloc(sz * sizeof *r->elems);
    r->loc = malloc(sz * sizeof *r->loc);
    r->set_of = malloc(sz * sizeof *r->set_of);
    r->first = malloc(sz * sizeof *r->first);
    r->past = malloc(sz * sizeof *r->past);
    if (!r->elems || !r->loc || !r->set_of || !r->first || !r->past)
        return SX_ENOMEM;
    for (int32_t i = 0; i < n; i++) {
        r->elems[i] = r->loc[i] = i;
        r->set_of[i] = 0;
    }
    r->n_sets = n > 0;
    r->first[0] = 0;
    r->past[0] = n;
    return SX_OK;
}

static void refine_free(refine *r)
{
    free(r->elems);
    free(r->loc);
    free(r->set_of);
    free(r->first);
    free(r->past);
}

/* Moves e into the marked prefix of its set. */
static void mark(refine *r, marks *m, int32_t e)
{
    int32_t s = r->set_of[e], i = r->loc[e], j = r->first[s] + m->count[s];
    int32_t other = r->elems[j];
    r->elems[i] = other;
    r->loc[other] = i;
    r->elems[j] = e;
    r->loc[e] = j;
    if (m->count[s]++ == 0)
        m->touched[m->n_touched++] = s;
}

/* Splits every touched set into marked and unmarked parts; the smaller part
 * gets the new set index. */
static void split(refine *r, marks *m)
{
    while (m->n_touched > 0) {
        int32_t s = m->touched[--m->n_touched];
        int32_t j = r->first[s] + m->count[s];
        if (j == r->past[s]) {
            m->count[s] = 0;
            continue;
        }
        int32_t z = r->n_sets++;
        if (m->count[s] <= r->past[s] - j) {
            r->first[z] = r->first[s];
            r->past[z] = j;
            r->first[s] = j;
        } else {
            r->past[z] = r->past[s];
            r->first[z] = j;
            r->past[s] = j;
        }
        for (int32_t i = r->first[z]; i < r->past[z]; i++)
            r->set_of[r->elems[i]] = z;
        m->count[s] = m->count[z] = 0;
    }
}

/* Keeps the states reachable from start and co-reachable to acceptance. */
static int prune(sx_rx_sdfa *d)
{
    int32_t n = d->n;
    int rc = SX_ENOMEM;
    uint8_t *keep = calloc((size_t)n + 1, 1);
    int32_t *queue = malloc(((size_t)n + 1) * sizeof *queue);
    int32_t *rin = calloc((size_t)n + 2, sizeof *rin);
    int32_t *rsrc = malloc(((size_t)d->n_trans + 1) * sizeof *rsrc);
    int32_t *renum = malloc(((size_t)n + 1) * sizeof *renum);
    if (!keep || !queue || !rin || !rsrc || !renum)
        goto out;

    /* forward reachability: bit 1 */
    int32_t qh = 0, qt = 0;
    if (d->start >= 0) {
        keep[d->start] = 1;
        queue[qt++] = d->start;
    }
    while (qh < qt) {
        int32_t s = queue[qh++];
        for (int32_t t = d->row[s]; t < d->row[s + 1]; t++)
            if (!(keep[d->dst[t]] & 1)) {
                keep[d->dst[t]] |= 1;
                queue[qt++] = d->dst[t];
            }
    }
    /* reverse adjacency, then co-reachability: bit 2 */
    for (int32_t t = 0; t < d->n_trans; t++)
        rin[d->dst[t] + 1]++;
    for (int32_t s = 0; s < n; s++)
        rin[s + 1] += rin[s];
    for (int32_t s = 0; s < n; s++)
        for (int32_t t = d->row[s]; t < d->row[s + 1]; t++)
            rsrc[rin[d->dst[t]]++] = s;
    for (int32_t s = n; s > 0; s--)
        rin[s] = rin[s - 1];
    rin[0] = 0;
    qh = qt = 0;
    for (int32_t s = 0; s < n; s++)
        if ((keep[s] & 1) && d->accept[s]) {
            keep[s] |= 2;
            queue[qt++] = s;
        }
    while (qh < qt) {
        int32_t s = queue[qh++];
        for (int32_t k = rin[s]; k < rin[s + 1]; k++) {
            int32_t p = rsrc[k];
            if (keep[p] == 1) {
                keep[p] |= 2;
                queue[qt++] = p;
            }
        }
    }
    int32_t nn = 0;
    for (int32_t s = 0; s < n; s++)
        renum[s] = keep[s] == 3 ? nn++ : -1;
    /* compact in place: new ids never exceed old ones */
    int32_t w = 0;
    for (int32_t s = 0; s < n; s++) {
        if (renum[s] < 0)
            continue;
        int32_t lo = d->row[s], hi = d->row[s + 1];
        d->row[renum[s]] = w;
        d->accept[renum[s]] = d->accept[s];
        for (int32_t t = lo; t < hi; t++) {
            if (renum[d->dst[t]] < 0)
                continue;
            d->lab[w] = d->lab[t];
            d->dst[w] = renum[d->dst[t]];
            w++;
        }
    }
    d->row[nn] = w;
    d->n_trans = w;
    d->start = d->start >= 0 ? renum[d->start] : -1;
    d->n = d->start >= 0 ? nn : 0;
    if (d->n == 0) {
        d->n_trans = 0;
        d->row[0] = 0;
    }
    rc = SX_OK;
out:
    free(keep);
    free(queue);
    free(rin);
    free(rsrc);
    free(renum);
    return rc;
}

int sx_rx_minimise(sx_rx_sdfa *d, uint64_t *work, uint64_t max_work, sx_error *err)
{
    refine B = {0}, C = {0};
    marks mk = {0};
    int32_t *tail = NULL, *in_off = NULL, *in_list = NULL, *cnt = NULL;
    int32_t *nrow = NULL, *nlab = NULL, *ndst = NULL;
    uint8_t *nacc = NULL;
    int rc = SX_ENOMEM;

    if ((rc = prune(d)))
        goto fail;
    if (d->n == 0)
        return SX_OK;
    rc = SX_ENOMEM;
    int32_t n = d->n, m = d->n_trans;
    size_t big = (size_t)(n > m ? n : m) + 1;
    mk.count = calloc(big, sizeof *mk.count);
    mk.touched = malloc(big * sizeof *mk.touched);
    tail = malloc(((size_t)m + 1) * sizeof *tail);
    in_off = calloc((size_t)n + 2, sizeof *in_off);
    in_list = malloc(((size_t)m + 1) * sizeof *in_list);
    cnt = calloc((size_t)d->n_labels + 2, sizeof *cnt);
    if (!mk.count || !mk.touched || !tail || !in_off || !in_list || !cnt ||
        refine_init(&B, n) || refine_init(&C, m))
        goto fail;
    for (int32_t s = 0; s < n; s++)
        for (int32_t t = d->row[s]; t < d->row[s + 1]; t++)
            tail[t] = s;

    /* blocks: accepting vs not */
    for (int32_t s = 0; s < n; s++)
        if (d->accept[s])
            mark(&B, &mk, s);
    split(&B, &mk);

    /* cords: transitions grouped by label (counting sort) */
    for (int32_t t = 0; t < m; t++)
        cnt[d->lab[t] + 1]++;
    for (int32_t l = 0; l < d->n_labels; l++)
        cnt[l + 1] += cnt[l];
    for (int32_t t = 0; t < m; t++) {
        int32_t p = cnt[d->lab[t]]++;
        C.elems[p] = t;
        C.loc[t] = p;
    }
    C.n_sets = 0;
    for (int32_t p = 0; p < m;) {
        int32_t l = d->lab[C.elems[p]], z = C.n_sets++;
        C.first[z] = p;
        while (p < m && d->lab[C.elems[p]] == l)
            C.set_of[C.elems[p++]] = z;
        C.past[z] = p;
    }

    /* transitions by head */
    for (int32_t t = 0; t < m; t++)
        in_off[d->dst[t] + 1]++;
    for (int32_t s = 0; s < n; s++)
        in_off[s + 1] += in_off[s];
    for (int32_t t = 0; t < m; t++)
        in_list[in_off[d->dst[t]]++] = t;
    for (int32_t s = n; s > 0; s--)
        in_off[s] = in_off[s - 1];
    in_off[0] = 0;

    int32_t b = 1, c = 0;
    uint64_t steps = 0;
    while (c < C.n_sets) {
        for (int32_t i = C.first[c]; i < C.past[c]; i++)
            mark(&B, &mk, tail[C.elems[i]]);
        steps += (uint64_t)(C.past[c] - C.first[c]);
        split(&B, &mk);
        c++;
        while (b < B.n_sets) {
            for (int32_t i = B.first[b]; i < B.past[b]; i++) {
                int32_t q = B.elems[i];
                for (int32_t k = in_off[q]; k < in_off[q + 1]; k++)
                    mark(&C, &mk, in_list[k]);
                steps += (uint64_t)(in_off[q + 1] - in_off[q]) + 1;
            }
            split(&C, &mk);
            b++;
        }
        if (*work + steps > max_work) {
            rc = sx_err_set(err, SX_ELIMIT, "regex work budget exceeded minimising the DFA");
            goto fail;
        }
    }
    *work += steps;

    /* quotient automaton: one representative per block */
    int32_t nb = B.n_sets;
    nrow = malloc(((size_t)nb + 1) * sizeof *nrow);
    nacc = malloc((size_t)nb + 1);
    nlab = malloc(((size_t)m + 1) * sizeof *nlab);
    ndst = malloc(((size_t)m + 1) * sizeof *ndst);
    if (!nrow || !nacc || !nlab || !ndst)
        goto fail;
    int32_t w = 0;
    for (int32_t blk = 0; blk < nb; blk++) {
        int32_t rep = B.elems[B.first[blk]];
        nrow[blk] = w;
        nacc[blk] = d->accept[rep];
        for (int32_t t = d->row[rep]; t < d->row[rep + 1]; t++) {
            nlab[w] = d->lab[t];
            ndst[w] = B.set_of[d->dst[t]];
            w++;
        }
    }
    nrow[nb] = w;
    int32_t start = B.set_of[d->start];
    int32_t labels = d->n_labels;
    sx_rx_sdfa_free(d);
    d->n = nb;
    d->start = start;
    d->n_labels = labels;
    d->accept = nacc;
    d->row = nrow;
    d->lab = nlab;
    d->dst = ndst;
    d->n_trans = d->cap_trans = w;
    nacc = NULL;
    nrow = nlab = ndst = NULL;
    rc = SX_OK;
fail:
    if (rc == SX_ENOMEM)
        sx_err_set(err, SX_ENOMEM, "out of memory minimising the DFA");
    refine_free(&B);
    refine_free(&C);
    free(mk.count);
    free(mk.touched);
    free(tail);
    free(in_off);
    free(in_list);
    free(cnt);
    free(nrow);
    free(nacc);
    free(nlab);
    free(ndst);
    return rc;
}
