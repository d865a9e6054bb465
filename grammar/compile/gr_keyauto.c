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

#include "grammar/compile/gr_compile_internal.h"
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
    uint64_t h = 1469598103934665603ULL;
    for (int32_t i = 0; i < w; i++)
        h = (h ^ (uint32_t)t[i]) * 1099511628211ULL;
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

typedef struct seen_hash {
    const struct seen_hash *next;
    uint64_t h;
} seen_hash;

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

static uint32_t near_none; /* computed, too large: use fin_reach */

int gr_keyauto_none_all_seen(const sx_grammar *g, gr_strx *x, int32_t st, const void *seen)
{
    uint32_t n_seen = 0;
    for (const seen_hash *k = seen; k; k = k->next)
        n_seen++;
    if (!x->fin_count)
        return 0;
    _Atomic(uint32_t *) *slot = (_Atomic(uint32_t *) *)&x->fin_near;
    uint32_t *r = atomic_load_explicit(slot, memory_order_acquire);
    if (!r) {
        uint32_t *mine = near_min(x, gr_vocab_plain_depth(g->vocab));
        uint32_t *want = mine ? mine : &near_none, *expected = NULL;
        if (atomic_compare_exchange_strong_explicit(slot, &expected, want, memory_order_acq_rel,
                                                    memory_order_acquire)) {
            r = want;
        } else {
            free(mine);
            r = expected;
        }
    }
    if (r == &near_none)
        return x->fin_reach && x->fin_reach[st] > n_seen;
    return r[st] > n_seen;
}

void gr_keyauto_free_near(gr_strx *x)
{
    if (x->fin_near != &near_none)
        free(x->fin_near);
    x->fin_near = NULL;
}


static uint64_t fnv(uint64_t h, uint8_t b)
{
    return (h ^ b) * 1099511628211ULL;
}

/* Depth-first over the (few) completions: 1 if all are seen. */
static int all_seen_from(const gr_strx *x, const int32_t *close, int32_t st, uint64_t h,
                         const seen_hash *seen, int depth)
{
    if (depth > 64)
        return 0;
    if (close[st] >= 0) {
        int found = 0;
        for (const seen_hash *k = seen; k && !found; k = k->next)
            found = k->h == h;
        if (!found)
            return 0;
    }
    static const char dec[] = "\"\\\b\f\n\r\t", esc[] = "\"\\bfnrt";
    for (int b = 0; b < 256; b++) {
        int32_t t = x->next[(size_t)st * 256 + (size_t)b];
        if (t < 0)
            continue;
        const char *d = b ? strchr(dec, b) : NULL;
        uint64_t nh = d ? fnv(fnv(h, '\\'), (uint8_t)esc[d - dec]) : fnv(h, (uint8_t)b);
        if (!all_seen_from(x, close, t, nh, seen, depth + 1))
            return 0;
    }
    return 1;
}

/* Depth-first for a completion whose key is new; writes its escaped
 * bytes.  Returns the length or -1. */
/* The shortest key text from state st that closes (close[] >= 0) into a
 * key not seen yet: a breadth-first search over automaton states, each
 * state expanded at most once per seen key plus one (a seen key can block
 * only the one path that spells it), so "anything containing _meta" is
 * found in a few steps where a depth-first search would drown in the
 * first byte's subtree.  Content bytes that JSON must escape are written
 * escaped, and hashed as written, as the matcher hashes keys. */
long gr_keyauto_new_key(const gr_strx *x, const int32_t *close, int32_t st, uint64_t h,
                        const void *seen_v, uint8_t *out, size_t cap, int32_t *final)
{
    static const char dec[] = "\"\\\b\f\n\r\t", esc[] = "\"\\bfnrt";
    const seen_hash *seen = seen_v;
    uint32_t reps = 1;
    for (const seen_hash *k = seen; k; k = k->next)
        reps++;
    size_t max_nodes = (size_t)x->n_states * reps;
    if (st < 0 || max_nodes > (4u << 20))
        return -1;
    typedef struct bfs_node {
        int32_t state, parent;
        uint8_t byte;
    } bfs_node;
    bfs_node *q = malloc(max_nodes * sizeof *q);
    uint32_t *visits = calloc((size_t)x->n_states, sizeof *visits);
    long result = -1;
    size_t head = 0, tail = 0;
    if (!q || !visits)
        goto out;
    q[tail++] = (bfs_node){.state = st, .parent = -1};
    visits[st]++;
    while (head < tail) {
        size_t u = head++;
        if (close[q[u].state] >= 0) {
            /* spell the path, then check the key is a new one */
            uint8_t rev[1024];
            size_t n = 0;
            for (long at = (long)u; q[at].parent >= 0 && n < sizeof rev; at = q[at].parent)
                rev[n++] = q[at].byte;
            size_t len = 0;
            uint64_t kh = h;
            int fits = 1;
            for (size_t i = n; i-- > 0 && fits;) {
                uint8_t b = rev[i], e[8];
                const char *d = b ? strchr(dec, b) : NULL;
                size_t el;
                if (d) {
                    e[0] = '\\';
                    e[1] = (uint8_t)esc[d - dec];
                    el = 2;
                } else if (b < 0x20) {
                    snprintf((char *)e, sizeof e, "\\u%04x", b);
                    el = 6;
                } else {
                    e[0] = b;
                    el = 1;
                }
                if (len + el + 2 > cap) {
                    fits = 0;
                    break;
                }
                memcpy(out + len, e, el);
                for (size_t j = 0; j < el; j++)
                    kh = fnv(kh, e[j]);
                len += el;
            }
            int found = 0;
            for (const seen_hash *k = seen; k && !found; k = k->next)
                found = k->h == kh;
            if (fits && !found && n < sizeof rev) {
                *final = q[u].state;
                result = (long)len;
                goto out;
            }
        }
        for (int b = 0; b < 256; b++) {
            int32_t t = x->next[(size_t)q[u].state * 256 + (size_t)b];
            if (t < 0 || visits[t] >= reps || tail == max_nodes)
                continue;
            visits[t]++;
            q[tail++] = (bfs_node){.state = t, .parent = (int32_t)u, .byte = (uint8_t)b};
        }
    }
out:
    free(q);
    free(visits);
    return result;
}

int gr_keyauto_all_seen(const gr_strx *x, const int32_t *close, int32_t st, int in_escape,
                        uint64_t h, const void *seen)
{
    const seen_hash *sl = seen;
    uint32_t n_seen = 0;
    for (const seen_hash *k = sl; k; k = k->next)
        n_seen++;
    if (!x->fin_count)
        return 0;
    static const char dec[] = "\"\\\b\f\n\r\t", esc[] = "\"\\bfnrt";
    if (in_escape) {
        /* the backslash is in h already; each escape letter continues it */
        for (int i = 0; i < 7; i++) {
            int32_t t = x->next[(size_t)st * 256 + (uint8_t)dec[i]];
            if (t >= 0 && !gr_keyauto_all_seen(x, close, t, 0, fnv(h, (uint8_t)esc[i]), seen))
                return 0;
        }
        return 1;
    }
    if (x->fin_count[st] > n_seen)
        return 0; /* more completions than keys seen: one is new */
    return all_seen_from(x, close, st, h, sl, 0);
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
