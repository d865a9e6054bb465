/* The key automaton of an object with patternProperties or propertyNames.
 *
 * An additional (not listed) key is a string whose decoded content must
 * satisfy propertyNames, must not be a listed property name (those are
 * matched by name), and decides its value schema: the patternProperties
 * it matches (all of them, merged), or additionalProperties when it
 * matches none.  One product automaton over the decoded bytes tracks all
 * of this at once -- UTF-8 validity, propertyNames, the listed names, and
 * every pattern -- so the matcher keeps a single state per key, and a
 * state is kept only if some key completing from it is acceptable. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/compile/compile.h"
#include "grammar/regex/regex.h"
#include "grammar/vocab/vocab.h"

#define KA_MAX_STATES 4096
#define KA_MAX_PATTERNS 16

typedef struct ka_comp {
    const sx_re *re;
    sx_re_table t;
} ka_comp;

/* UTF-8 validator as a component: 0 = at a character boundary, else
 * encodes (pending bytes, allowed range of the next byte). */
static int32_t utf8_next(int32_t s, uint8_t b)
{
    if (s == 0) {
        if (b < 0x80)
            return 0;
        if (b >= 0xC2 && b <= 0xDF)
            return 1 << 16 | 0x80 << 8 | 0xBF;
        if (b == 0xE0)
            return 2 << 16 | 0xA0 << 8 | 0xBF;
        if (b == 0xED)
            return 2 << 16 | 0x80 << 8 | 0x9F;
        if (b >= 0xE1 && b <= 0xEF)
            return 2 << 16 | 0x80 << 8 | 0xBF;
        if (b == 0xF0)
            return 3 << 16 | 0x90 << 8 | 0xBF;
        if (b == 0xF4)
            return 3 << 16 | 0x80 << 8 | 0x8F;
        if (b >= 0xF1 && b <= 0xF3)
            return 3 << 16 | 0x80 << 8 | 0xBF;
        return -1;
    }
    int pend = s >> 16, lo = s >> 8 & 0xff, hi = s & 0xff;
    if (b < lo || b > hi)
        return -1;
    return pend == 1 ? 0 : (pend - 1) << 16 | 0x80 << 8 | 0xBF;
}

/* Bytes a key's decoded content may hold: raw characters, and the
 * control characters that have a short escape. */
static int key_byte_ok(int b)
{
    return b >= 0x20 || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t';
}

typedef struct ka_map {
    int32_t *tuples; /* n * width */
    int32_t *slot;   /* hash slots -> state index, -1 empty */
    size_t cap_slots;
    int32_t n, cap, width;
} ka_map;

static uint64_t tuple_hash(const int32_t *t, int32_t w)
{
    uint64_t h = GR_FNV_BASIS;
    for (int32_t i = 0; i < w; i++)
        h = (h ^ (uint32_t)t[i]) * GR_FNV_PRIME;
    return h;
}

/* Index of tuple t, adding it if new; -1 when out of memory or budget. */
static int32_t ka_intern(ka_map *m, const int32_t *t, int *added)
{
    size_t mask = m->cap_slots - 1, i = (size_t)tuple_hash(t, m->width) & mask;
    *added = 0;
    for (;; i = (i + 1) & mask) {
        int32_t s = m->slot[i];
        if (s < 0)
            break;
        if (!memcmp(m->tuples + (size_t)s * (size_t)m->width, t, (size_t)m->width * sizeof *t))
            return s;
    }
    if (m->n >= KA_MAX_STATES * 2)
        return -1;
    if (m->n == m->cap) {
        int32_t cap = m->cap ? m->cap * 2 : 256;
        int32_t *nt = realloc(m->tuples, (size_t)cap * (size_t)m->width * sizeof *nt);
        if (!nt)
            return -1;
        m->tuples = nt;
        m->cap = cap;
    }
    memcpy(m->tuples + (size_t)m->n * (size_t)m->width, t, (size_t)m->width * sizeof *t);
    m->slot[i] = m->n;
    *added = 1;
    return m->n++;
}

int gc_key_automaton(gc_ctx *c, const sx_re *names, const sx_re *known,
                     const sx_re *const *pats, const int32_t *pat_nodes, int n_pats,
                     int32_t additional, const json_t *const *pat_schemas, gr_strx **out_x,
                     int32_t **out_close)
{
    int rc = SX_OK;
    if (n_pats > KA_MAX_PATTERNS)
        return gc_unsupported(c, "patternProperties", "more than 16 patterns");
    ka_comp comp[KA_MAX_PATTERNS + 2];
    int nc = 0, has_names = names != NULL, has_known = known != NULL;
    if (names)
        comp[nc++].re = names;
    if (known)
        comp[nc++].re = known;
    for (int i = 0; i < n_pats; i++)
        comp[nc++].re = pats[i];
    for (int i = 0; i < nc; i++)
        sx_re_get_table(comp[i].re, &comp[i].t);
    int32_t width = 1 + nc;
    ka_map m = {.width = width, .cap_slots = 1u << 14};
    m.slot = malloc(m.cap_slots * sizeof *m.slot);
    int32_t *next = NULL, *close = NULL, *queue = NULL, tup[KA_MAX_PATTERNS + 3],
            ntup[KA_MAX_PATTERNS + 3];
    uint8_t *live = NULL;
    int32_t merged_mask[64], merged_node[64], n_merged = 0;
    if (!m.slot)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    for (size_t i = 0; i < m.cap_slots; i++)
        m.slot[i] = -1;
    tup[0] = 0;
    for (int i = 0; i < nc; i++)
        tup[1 + i] = comp[i].t.start;
    int added;
    ka_intern(&m, tup, &added);
    size_t cap_next = 0;
    /* breadth-first over every byte a key may hold */
    for (int32_t s = 0; s < m.n; s++) {
        if ((size_t)(s + 1) * 256 > cap_next) {
            size_t cap = cap_next ? cap_next * 2 : 256 * 256;
            int32_t *nn = realloc(next, cap * sizeof *nn);
            if (!nn) {
                rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
                goto out;
            }
            next = nn;
            cap_next = cap;
        }
        for (int b = 0; b < 256; b++) {
            const int32_t *t = m.tuples + (size_t)s * (size_t)width;
            int32_t u = key_byte_ok(b) ? utf8_next(t[0], (uint8_t)b) : -1;
            int dead = u < 0;
            ntup[0] = u;
            for (int i = 0; i < nc && !dead; i++) {
                int32_t cs = t[1 + i] < 0 ? -1 : sx_re_table_step(&comp[i].t, t[1 + i], (uint8_t)b);
                ntup[1 + i] = cs;
                /* names must stay alive; a dead pattern or known-name DFA
                 * only means "does not match" */
                if (has_names && i == 0 && cs < 0)
                    dead = 1;
            }
            if (dead) {
                next[(size_t)s * 256 + (size_t)b] = -1;
                continue;
            }
            int32_t id = ka_intern(&m, ntup, &added);
            if (id < 0) {
                rc = sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1,
                                 "patternProperties/propertyNames at %s need more than %d "
                                 "automaton states",
                                 c->ptr, KA_MAX_STATES * 2);
                goto out;
            }
            next[(size_t)s * 256 + (size_t)b] = id;
        }
    }
    /* what a key closed in each state gets as its value schema */
    close = malloc((size_t)m.n * sizeof *close);
    if (!close) {
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        goto out;
    }
    for (int32_t s = 0; s < m.n && !rc; s++) {
        const int32_t *t = m.tuples + (size_t)s * (size_t)width;
        close[s] = -1;
        if (t[0] != 0)
            continue;
        int k = 0;
        if (has_names && (t[1 + k] < 0 || !comp[k].t.accept[t[1 + k]]))
            continue;
        k += has_names;
        if (has_known && t[1 + k] >= 0 && comp[k].t.accept[t[1 + k]])
            continue; /* a listed name: matched by name, never here */
        k += has_known;
        uint32_t mm = 0;
        for (int i = 0; i < n_pats; i++)
            if (t[1 + k + i] >= 0 && comp[k + i].t.accept[t[1 + k + i]])
                mm |= 1u << i;
        if (!mm) {
            close[s] = additional;
        } else if (!(mm & (mm - 1))) {
            close[s] = pat_nodes[__builtin_ctz(mm)];
        } else {
            /* several patterns: all of them apply, merged once per set */
            int f = -1;
            for (int j = 0; j < n_merged; j++)
                if (merged_mask[j] == (int32_t)mm)
                    f = j;
            if (f < 0) {
                if (n_merged == 64) {
                    rc = gc_unsupported(c, "patternProperties", "too many overlapping patterns");
                    break;
                }
                json_t *all = json_array();
                for (int i = 0; i < n_pats; i++)
                    if (mm >> i & 1)
                        json_array_append(all, (json_t *)pat_schemas[i]);
                json_t *sch = json_pack("{s:o}", "allOf", all);
                rc = sch ? gc_schema(c, sch, &merged_node[n_merged])
                         : sx_err_set(c->err, SX_ENOMEM, "out of memory");
                json_decref(sch);
                merged_mask[n_merged] = (int32_t)mm;
                f = n_merged++;
            }
            close[s] = merged_node[f];
        }
    }
    if (rc)
        goto out;
    gr_strx *x = gc_alloc(c, sizeof *x);
    uint8_t *cls = gc_alloc(c, 256), *acc = gc_alloc(c, (size_t)m.n + 1);
    int32_t *tab = gc_alloc(c, (size_t)m.n * 256 * sizeof *tab);
    int32_t *cl = gc_alloc(c, (size_t)m.n * sizeof *cl);
    if (!x || !cls || !acc || !tab || !cl) {
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        goto out;
    }
    for (int b = 0; b < 256; b++)
        cls[b] = (uint8_t)b;
    memcpy(tab, next, (size_t)m.n * 256 * sizeof *tab);
    memcpy(cl, close, (size_t)m.n * sizeof *cl);
    x->n_states = m.n;
    x->n_classes = 256;
    x->start = 0;
    x->byte_class = cls;
    x->next = tab;
    x->accept = acc;
    x->plain_cache = gc_alloc(c, (size_t)m.n * sizeof *x->plain_cache);
    x->unbounded = gc_alloc(c, (size_t)m.n);
    x->fin_count = gc_alloc(c, (size_t)m.n * sizeof *x->fin_count);
    x->fin_reach = gc_alloc(c, (size_t)m.n * sizeof *x->fin_reach);
    if (!x->plain_cache || !x->unbounded || !x->fin_count || !x->fin_reach) {
        rc = sx_err_set(c->err, SX_ENOMEM, "out of memory");
        goto out;
    }
    *out_x = x;
    *out_close = cl;
    gr_keyauto_prune(x, cl, NULL, NULL);
out:
    free(m.slot);
    free(m.tuples);
    free(next);
    free(close);
    free(queue);
    free(live);
    return rc;
}

/* Completions per state: a state is finite when all its successors are
 * (a worklist over reverse edges); what stays infinite reaches a cycle. */
/* fin_reach[s]: the fewest completions of any state reachable from s (s
 * included).  Counts only fall along a transition (a successor's
 * completions extend the state's), so over a walk from s no state has
 * fewer; when that is more than the keys already in an object, no state
 * a token reaches can have all its keys used (gr_keyauto_all_seen).
 * Relaxed backwards over the reverse edges from every state; work
 * holds n + 1 entries, queued flags. */
static void reach_min(gr_strx *x, const int32_t *rstart, const int32_t *redge, int32_t *work,
                      uint8_t *queued)
{
    int32_t n = x->n_states;
    uint32_t *r = x->fin_reach;
    if (!r)
        return;
    size_t cap = (size_t)n + 1, head = 0, count = 0;
    for (int32_t s = 0; s < n; s++) {
        r[s] = x->fin_count[s];
        work[count++] = s;
        queued[s] = 1;
    }
    while (count) {
        int32_t s = work[head];
        head = (head + 1) % cap;
        count--;
        queued[s] = 0;
        for (int32_t k = rstart[s]; k < rstart[s + 1]; k++) {
            int32_t p = redge[k];
            if (r[s] < r[p]) {
                r[p] = r[s];
                if (!queued[p]) {
                    queued[p] = 1;
                    work[(head + count) % cap] = p;
                    count++;
                }
            }
        }
    }
}

static void count_completions(gr_strx *x, const int32_t *close)
{
    int32_t n = x->n_states;
    const int32_t *tab = x->next;
    if (!x->fin_count)
        return;
    if (x->fin_reach) /* 0 = unknown until computed below */
        memset(x->fin_reach, 0, (size_t)n * sizeof *x->fin_reach);
    uint32_t *pend = calloc((size_t)n, sizeof *pend);
    int32_t *rstart = calloc((size_t)n + 1, sizeof *rstart), *redge = NULL, *work = NULL;
    uint8_t *fin = calloc((size_t)n, 1);
    size_t ne = 0;
    if (!pend || !rstart || !fin)
        goto out;
    for (int32_t s = 0; s < n; s++)
        for (int b = 0; b < 256; b++) {
            int32_t t = tab[(size_t)s * 256 + (size_t)b];
            if (t >= 0) {
                pend[s]++;
                rstart[t + 1]++;
                ne++;
            }
        }
    for (int32_t s = 0; s < n; s++)
        rstart[s + 1] += rstart[s];
    redge = malloc((ne ? ne : 1) * sizeof *redge);
    work = malloc(((size_t)n + 1) * sizeof *work);
    int32_t *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!redge || !work || !fill) {
        free(fill);
        goto out;
    }
    for (int32_t s = 0; s < n; s++)
        for (int b = 0; b < 256; b++) {
            int32_t t = tab[(size_t)s * 256 + (size_t)b];
            if (t >= 0)
                redge[rstart[t] + fill[t]++] = s;
        }
    free(fill);
    int32_t head = 0, tail = 0;
    for (int32_t s = 0; s < n; s++)
        if (pend[s] == 0)
            work[tail++] = s;
    while (head < tail) {
        int32_t s = work[head++];
        uint64_t cnt = close[s] >= 0;
        for (int b = 0; b < 256 && cnt < UINT32_MAX; b++) {
            int32_t t = tab[(size_t)s * 256 + (size_t)b];
            if (t >= 0)
                cnt += x->fin_count[t];
        }
        x->fin_count[s] = cnt >= UINT32_MAX ? UINT32_MAX : (uint32_t)cnt;
        fin[s] = 1;
        for (int32_t k = rstart[s]; k < rstart[s + 1]; k++)
            if (--pend[redge[k]] == 0)
                work[tail++] = redge[k];
    }
    x->all_unbounded = 1;
    for (int32_t s = 0; s < n; s++) {
        if (!fin[s])
            x->fin_count[s] = UINT32_MAX;
        x->unbounded[s] = !fin[s];
        x->all_unbounded &= !fin[s];
    }
    reach_min(x, rstart, redge, work, fin);
out:
    free(pend);
    free(rstart);
    free(redge);
    free(work);
    free(fin);
}

/* Keeps only states from which a key can be closed into a usable value
 * (value_ok(node) says whether a node admits a value; NULL = any node
 * >= 0): transitions into other states become -1, so "alive" in the
 * matcher means "completable". */
void gr_keyauto_prune(gr_strx *x, int32_t *close, int (*value_ok)(void *, int32_t), void *ctx)
{
    int32_t n = x->n_states;
    int32_t *tab = (int32_t *)x->next;
    uint8_t *acc = (uint8_t *)x->accept, *live = calloc((size_t)n + 1, 1);
    if (!live)
        return; /* keeps the table as it is: still sound for a later prune */
    for (int32_t s = 0; s < n; s++) {
        if (close[s] >= 0 && value_ok && !value_ok(ctx, close[s]))
            close[s] = -1;
        acc[s] = close[s] >= 0;
        live[s] = acc[s];
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int32_t s = 0; s < n; s++) {
            if (live[s])
                continue;
            for (int b = 0; b < 256; b++) {
                int32_t t = tab[(size_t)s * 256 + (size_t)b];
                if (t >= 0 && live[t]) {
                    live[s] = 1;
                    changed = 1;
                    break;
                }
            }
        }
    }
    for (int32_t s = 0; s < n; s++)
        for (int b = 0; b < 256; b++) {
            int32_t *t = &tab[(size_t)s * 256 + (size_t)b];
            if (*t >= 0 && !live[*t])
                *t = -1;
        }
    if (x->start >= 0 && !live[x->start])
        x->start = -1;
    free(live);
    count_completions(x, close);
}
