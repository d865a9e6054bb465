/* Witnesses: every node gets a shortest value text at compile time, built
 * bottom-up in order of length with the writers of ir/gr_witness.c.  The
 * matcher's completion (match/gr_complete.c) uses them for the values
 * still required. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/compile/compile.h"

/* The longest witness kept: a longer shortest value (a deep chain of
 * minItems) gets none, and completions through it are not offered. */
#define WIT_MAX_BYTES 65536
/* The witness search's work budget, in bytes written by all builds
 * together (each node is built at most once per child, plus the retry
 * passes): a schema past it is refused, naming the node's keyword. */
#define WIT_MAX_WORK (32L << 20)

typedef struct wheap {
    int64_t *k; /* (length << 32) | node */
    size_t n, cap;
} wheap;

static int heap_push(wheap *h, int64_t len, int32_t node)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        int64_t *nk = realloc(h->k, cap * sizeof *nk);
        if (!nk)
            return -1;
        h->k = nk;
        h->cap = cap;
    }
    size_t i = h->n++;
    int64_t v = len << 32 | (uint32_t)node;
    while (i > 0 && h->k[(i - 1) / 2] > v) {
        h->k[i] = h->k[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->k[i] = v;
    return 0;
}

static int64_t heap_pop(wheap *h)
{
    int64_t top = h->k[0], v = h->k[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = l + 1, s = i;
        int64_t sv = v;
        if (l < h->n && h->k[l] < sv) {
            s = l;
            sv = h->k[l];
        }
        if (m < h->n && h->k[m] < sv)
            s = m;
        if (s == i)
            break;
        h->k[i] = h->k[s];
        i = s;
    }
    if (h->n)
        h->k[i] = v;
    return top;
}

/* A candidate text for node i from the witnesses final so far; 1 when
 * one was built (into *cand / *clen when shorter than the one held). */
static int try_build(gc_ctx *c, gr_work *work, int32_t i, uint8_t **cand, int32_t *clen,
                     int32_t *stopped_at, uint8_t *too_long)
{
    gr_wbuf w = {.work = work, .limit = WIT_MAX_BYTES};
    if (too_long[i])
        return 0;
    gr_wit_write(c->g, i, &w, 0);
    /* past WIT_MAX_BYTES from final parts: no witness, and no more tries
     * (each would write as much again) */
    too_long[i] = (uint8_t)w.over;
    if (work->stop && *stopped_at < 0)
        *stopped_at = i; /* the node whose build the stop cut short */
    int better = !w.oom && (clen[i] < 0 || (int32_t)w.n < clen[i]);
    if (better) {
        free(cand[i]);
        cand[i] = w.b;
        clen[i] = (int32_t)w.n;
        w.b = NULL;
    }
    free(w.b);
    return better;
}

/* Shortest witnesses by Knuth's generalisation of Dijkstra's algorithm:
 * a node's text is built only from the final texts of its children, and
 * nodes become final in the order of their lengths (a container is
 * longer than each part it holds, an alternative as long as its branch),
 * so each node is built at most once per child that becomes final --
 * O(edges) builds of at most WIT_MAX_BYTES each, with no recursion over
 * the graph (recursive schemas used to be unfolded to depth 200 here,
 * exponentially).  Builds that reach through a child to a grandchild
 * (distinct items of uniqueItems) are retried in passes at the end, each
 * making one more node final or ending the search. */
int gc_witness(gc_ctx *c)
{
    gr_node *N = c->g->nodes;
    int32_t n = c->g->n_nodes;
    int32_t *clen = malloc(((size_t)n + 1) * sizeof *clen), *par = NULL, *par_at = NULL;
    int32_t *stamp = malloc(((size_t)n + 1) * sizeof *stamp);
    uint8_t **cand = calloc((size_t)n + 1, sizeof *cand), *too_long = calloc((size_t)n + 1, 1);
    wheap h = {0};
    gr_work work;
    int32_t stopped_at = -1;
    int rc = SX_OK;
    gr_work_init(&work, &c->opts, WIT_MAX_WORK);
    if (!clen || !stamp || !cand || !too_long || gc_parents(c->g, &par_at, &par)) {
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        goto out;
    }
    for (int32_t i = 0; i < n; i++) {
        clen[i] = -1;
        stamp[i] = -1;
        N[i].wit = NULL;
        N[i].min_bytes = -1;
    }
    for (int32_t i = 0; i < n && !work.stop; i++)
        if (N[i].kind != GK_EMPTY && try_build(c, &work, i, cand, clen, &stopped_at, too_long) &&
            heap_push(&h, clen[i], i))
            goto oom;
    for (int pass = 0; !work.stop; pass++) {
        int made = 0;
        while (h.n && !work.stop) {
            int64_t top = heap_pop(&h);
            int32_t i = (int32_t)(top & 0xFFFFFFFF), l = (int32_t)(top >> 32);
            if (N[i].wit || clen[i] != l)
                continue; /* final already, or a stale entry */
            uint8_t *t = gc_alloc(c, (size_t)l + 1);
            if (!t)
                goto oom;
            if (l) /* an empty witness: regex mode with an empty match */
                memcpy(t, cand[i], (size_t)l);
            N[i].wit = t;
            N[i].min_bytes = l;
            free(cand[i]);
            cand[i] = NULL;
            made = 1;
            for (int32_t e = par_at[i]; e < par_at[i + 1]; e++) {
                int32_t p = par[e];
                if (N[p].wit || stamp[p] == i)
                    continue;
                stamp[p] = i;
                if (try_build(c, &work, p, cand, clen, &stopped_at, too_long) &&
                    heap_push(&h, clen[p], p))
                    goto oom;
            }
        }
        if (!made && pass > 0)
            break;
        /* the retry pass: nodes still without a witness, with everything
         * final so far */
        for (int32_t i = 0; i < n && !work.stop; i++)
            if (!N[i].wit && N[i].kind != GK_EMPTY &&
                try_build(c, &work, i, cand, clen, &stopped_at, too_long) &&
                heap_push(&h, clen[i], i))
                goto oom;
        if (!h.n)
            break;
    }
    if (work.stop) {
        const char *p = gc_node_ptr(c, stopped_at);
        rc = sx_err_setp(c->err, SX_ELIMIT, p, -1,
                         "compile stopped (%s) while finding shortest values, at %s",
                         gr_stop_text(work.stop), p[0] ? p : "the root");
    }
    goto out;
oom:
    rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
out:
    if (cand)
        for (int32_t i = 0; i < n; i++)
            free(cand[i]);
    free(cand);
    free(too_long);
    free(clen);
    free(stamp);
    free(par);
    free(par_at);
    free(h.k);
    return rc;
}

