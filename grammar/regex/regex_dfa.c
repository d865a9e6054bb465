/* The public automaton: breadth-first numbering, byte equivalence classes,
 * the dense table, and the per-state facts the matcher asks for. */
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex_internal.h"

/* Refines the byte classes by one state's row: bytes stay together only if
 * they were together and go to the same place. */
static int refine_bytes(uint8_t *cls, const int32_t *target_of_byte)
{
    /* keys (old class, target) -> new class; at most 256 distinct */
    uint64_t key[512];
    int16_t val[512];
    uint8_t ncls[256];
    int next = 0;
    memset(val, -1, sizeof val);
    for (int b = 0; b < 256; b++) {
        uint64_t k = ((uint64_t)cls[b] << 32) | (uint32_t)target_of_byte[b];
        uint32_t j = (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 55) & 511;
        while (val[j] >= 0 && key[j] != k)
            j = (j + 1) & 511;
        if (val[j] < 0) {
            key[j] = k;
            val[j] = (int16_t)next++;
        }
        ncls[b] = (uint8_t)val[j];
    }
    memcpy(cls, ncls, 256);
    return next;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7FB5D329728EA185ull;
    x ^= x >> 27;
    x *= 0x81DADEF4BC2DD44Dull;
    x ^= x >> 33;
    return x;
}

/* Groups bytes by (continuation?, label column hash); returns the count. */
static int propose_classes(const sx_rx_sdfa *d, const int32_t *label_of, uint8_t *cls)
{
    uint64_t *lh = calloc((size_t)d->n_labels + 1, sizeof *lh);
    uint64_t h[256];
    if (!lh)
        return -1;
    for (int32_t s = 0; s < d->n; s++)
        for (int32_t t = d->row[s]; t < d->row[s + 1]; t++)
            lh[d->lab[t]] += mix64(((uint64_t)(uint32_t)s << 32 | (uint32_t)d->dst[t]) + 1);
    int nc = 0;
    int16_t slot[512];
    memset(slot, -1, sizeof slot);
    for (int b = 0; b < 256; b++) {
        h[b] = (label_of[b] >= 0 ? lh[label_of[b]] : 0) * 2 + (uint64_t)sx_rx_is_cont((uint32_t)b);
        uint32_t j = (uint32_t)(mix64(h[b]) & 511);
        while (slot[j] >= 0 && h[slot[j]] != h[b])
            j = (j + 1) & 511;
        if (slot[j] < 0) {
            slot[j] = (int16_t)b;
            cls[b] = (uint8_t)nc++;
        } else {
            cls[b] = cls[slot[j]];
        }
    }
    free(lh);
    return nc;
}

/* Whether every state sends all bytes of each class to one place (or none
 * of them anywhere), in O(transitions). */
static int classes_exact(const sx_rx_sdfa *d, const int32_t *label_of, const uint8_t *cls, int nc)
{
    int size[256], cnt[256], touched[256], nt;
    int32_t rec[256];
    int boff[257] = {0}, bytes[256];
    /* bytes of each label; labels past 255 cannot occur with 256 bytes */
    if (d->n_labels > 256)
        return 0;
    for (int c = 0; c < nc; c++)
        size[c] = cnt[c] = 0;
    for (int b = 0; b < 256; b++) {
        size[cls[b]]++;
        if (label_of[b] >= 0)
            boff[label_of[b] + 1]++;
    }
    for (int l = 0; l < 256; l++)
        boff[l + 1] += boff[l];
    {
        int fill[256];
        memcpy(fill, boff, sizeof fill);
        for (int b = 0; b < 256; b++)
            if (label_of[b] >= 0)
                bytes[fill[label_of[b]]++] = b;
    }
    for (int32_t s = 0; s < d->n; s++) {
        nt = 0;
        for (int32_t t = d->row[s]; t < d->row[s + 1]; t++) {
            int32_t l = d->lab[t];
            for (int i = boff[l]; i < boff[l + 1]; i++) {
                int c = cls[bytes[i]];
                if (cnt[c] == 0) {
                    touched[nt++] = c;
                    rec[c] = d->dst[t];
                } else if (rec[c] != d->dst[t]) {
                    return 0;
                }
                cnt[c]++;
            }
        }
        for (int i = 0; i < nt; i++) {
            if (cnt[touched[i]] != size[touched[i]])
                return 0;
            cnt[touched[i]] = 0;
        }
    }
    return 1;
}

/* min_bytes, min_cps and unbounded from the dense table. */
static int metadata(sx_re *re)
{
    int32_t n = re->n_states, k = re->n_classes;
    size_t m = (size_t)n * (size_t)k;
    int rc = SX_ENOMEM;
    int32_t *roff = calloc((size_t)n + 2, sizeof *roff);
    int32_t *rsrc = malloc((m + 1) * sizeof *rsrc);
    int32_t *rcls = malloc((m + 1) * sizeof *rcls);
    int32_t *dq = malloc((2 * (size_t)n + 2) * sizeof *dq);
    int32_t *idx = malloc(((size_t)n + 1) * sizeof *idx);
    int32_t *low = malloc(((size_t)n + 1) * sizeof *low);
    int32_t *stk = malloc(((size_t)n + 1) * sizeof *stk);
    int32_t *cs = malloc(((size_t)n + 1) * sizeof *cs);
    int32_t *ce = malloc(((size_t)n + 1) * sizeof *ce);
    uint8_t *on = calloc((size_t)n + 1, 1);
    re->min_bytes = malloc(((size_t)n + 1) * sizeof *re->min_bytes);
    re->min_cps = malloc(((size_t)n + 1) * sizeof *re->min_cps);
    re->unbounded = calloc((size_t)n + 1, 1);
    if (!roff || !rsrc || !rcls || !dq || !idx || !low || !stk || !cs || !ce || !on ||
        !re->min_bytes || !re->min_cps || !re->unbounded)
        goto out;

    /* reverse edges */
    for (size_t e = 0; e < m; e++)
        if (re->next[e] >= 0)
            roff[re->next[e] + 1]++;
    for (int32_t s = 0; s < n; s++)
        roff[s + 1] += roff[s];
    for (int32_t s = 0; s < n; s++)
        for (int32_t c = 0; c < k; c++) {
            int32_t t = re->next[(size_t)s * k + c];
            if (t >= 0) {
                rsrc[roff[t]] = s;
                rcls[roff[t]] = c;
                roff[t]++;
            }
        }
    for (int32_t s = n; s > 0; s--)
        roff[s] = roff[s - 1];
    roff[0] = 0;

    /* fewest bytes: BFS backwards from the accepting states */
    int32_t qh = 0, qt = 0;
    for (int32_t s = 0; s < n; s++) {
        re->min_bytes[s] = re->accept[s] ? 0 : -1;
        if (re->accept[s])
            dq[qt++] = s;
    }
    while (qh < qt) {
        int32_t s = dq[qh++];
        for (int32_t e = roff[s]; e < roff[s + 1]; e++)
            if (re->min_bytes[rsrc[e]] < 0) {
                re->min_bytes[rsrc[e]] = re->min_bytes[s] + 1;
                dq[qt++] = rsrc[e];
            }
    }

    /* fewest code points: layered BFS where continuation bytes weigh 0;
     * each layer is closed under weight-0 edges before the next starts */
    qh = qt = 0;
    for (int32_t s = 0; s < n; s++) {
        re->min_cps[s] = re->accept[s] ? 0 : -1;
        if (re->accept[s])
            dq[qt++] = s;
    }
    for (int32_t layer = 0; qh < qt; layer++) {
        int32_t lo = qh;
        for (int32_t i = lo; i < qt; i++) {
            int32_t s = dq[i];
            for (int32_t e = roff[s]; e < roff[s + 1]; e++)
                if (!re->class_starts_cp[rcls[e]] && re->min_cps[rsrc[e]] < 0) {
                    re->min_cps[rsrc[e]] = layer;
                    dq[qt++] = rsrc[e];
                }
        }
        int32_t hi = qt;
        for (int32_t i = lo; i < hi; i++) {
            int32_t s = dq[i];
            for (int32_t e = roff[s]; e < roff[s + 1]; e++)
                if (re->class_starts_cp[rcls[e]] && re->min_cps[rsrc[e]] < 0) {
                    re->min_cps[rsrc[e]] = layer + 1;
                    dq[qt++] = rsrc[e];
                }
        }
        qh = hi;
    }

    /* unbounded: can reach a cycle.  Tarjan's SCCs, iteratively. */
    int32_t counter = 0, sp = 0, cd = 0;
    for (int32_t s = 0; s < n; s++)
        idx[s] = -1;
    memset(on, 0, (size_t)n);
    for (int32_t root = 0; root < n; root++) {
        if (idx[root] >= 0)
            continue;
        cs[cd] = root;
        ce[cd] = 0;
        cd++;
        idx[root] = low[root] = counter++;
        stk[sp++] = root;
        on[root] = 1;
        while (cd > 0) {
            int32_t v = cs[cd - 1];
            if (ce[cd - 1] < k) {
                int32_t w = re->next[(size_t)v * k + ce[cd - 1]++];
                if (w < 0)
                    continue;
                if (w == v) {
                    re->unbounded[v] = 1; /* self-loop */
                } else if (idx[w] < 0) {
                    idx[w] = low[w] = counter++;
                    stk[sp++] = w;
                    on[w] = 1;
                    cs[cd] = w;
                    ce[cd] = 0;
                    cd++;
                } else if (on[w] && idx[w] < low[v]) {
                    low[v] = idx[w];
                }
                continue;
            }
            cd--;
            if (cd > 0 && low[v] < low[cs[cd - 1]])
                low[cs[cd - 1]] = low[v];
            if (low[v] == idx[v]) {
                int32_t size = 0, top = sp;
                while (stk[--top] != v)
                    ;
                size = sp - top;
                for (int32_t i = top; i < sp; i++) {
                    on[stk[i]] = 0;
                    if (size > 1)
                        re->unbounded[stk[i]] = 1;
                }
                sp = top;
            }
        }
    }
    /* propagate backwards from the cyclic states */
    qh = qt = 0;
    for (int32_t s = 0; s < n; s++)
        if (re->unbounded[s])
            dq[qt++] = s;
    while (qh < qt) {
        int32_t s = dq[qh++];
        for (int32_t e = roff[s]; e < roff[s + 1]; e++)
            if (!re->unbounded[rsrc[e]]) {
                re->unbounded[rsrc[e]] = 1;
                dq[qt++] = rsrc[e];
            }
    }
    rc = SX_OK;
out:
    free(roff);
    free(rsrc);
    free(rcls);
    free(dq);
    free(idx);
    free(low);
    free(stk);
    free(cs);
    free(ce);
    free(on);
    return rc;
}

int sx_rx_finish(const sx_rx_sdfa *d, const int32_t *label_of, sx_re **out, sx_error *err)
{
    int rc = SX_ENOMEM;
    int32_t *order = NULL, *newid = NULL, *lrow = NULL, tob[256];
    sx_re *re = calloc(1, sizeof *re);
    *out = NULL;
    if (!re)
        goto fail;
    re->start = -1;
    re->n_classes = 1;
    if (d->n == 0 || d->start < 0) {
        re->class_starts_cp = calloc(1, 1);
        if (!re->class_starts_cp)
            goto fail;
        *out = re;
        return SX_OK;
    }
    int32_t n = d->n;
    order = malloc((size_t)n * sizeof *order);
    newid = malloc((size_t)n * sizeof *newid);
    lrow = malloc(((size_t)d->n_labels + 1) * sizeof *lrow);
    if (!order || !newid || !lrow)
        goto fail;

    /* breadth-first numbering from the start */
    for (int32_t s = 0; s < n; s++)
        newid[s] = -1;
    int32_t qh = 0, qt = 0;
    order[qt++] = d->start;
    newid[d->start] = 0;
    while (qh < qt) {
        int32_t s = order[qh++];
        for (int32_t t = d->row[s]; t < d->row[s + 1]; t++)
            if (newid[d->dst[t]] < 0) {
                newid[d->dst[t]] = qt;
                order[qt++] = d->dst[t];
            }
    }
    if (qt != n) {
        rc = sx_err_set(err, SX_EINTERNAL, "regex DFA has unreachable states");
        goto fail;
    }

    /* byte classes: bytes b and b' are equivalent when every state sends
     * them to the same place.  A hash of each byte's column (sum over states
     * of a mix of (state, target)) proposes the classes in O(transitions);
     * the proposal is then verified exactly, with per-state refinement as
     * the fallback should two columns ever collide.  Classes never mix bytes
     * that start a code point with continuation bytes. */
    uint8_t cls[256];
    int nc = propose_classes(d, label_of, cls);
    if (nc < 0)
        goto fail;
    if (!classes_exact(d, label_of, cls, nc)) {
        nc = 2;
        for (int b = 0; b < 256; b++)
            cls[b] = (uint8_t)sx_rx_is_cont((uint32_t)b);
        for (int32_t l = 0; l < d->n_labels; l++)
            lrow[l] = -1;
        for (int32_t s = 0; s < n; s++) {
            for (int32_t t = d->row[s]; t < d->row[s + 1]; t++)
                lrow[d->lab[t]] = d->dst[t];
            for (int b = 0; b < 256; b++)
                tob[b] = label_of[b] >= 0 ? lrow[label_of[b]] : -1;
            nc = refine_bytes(cls, tob);
            for (int32_t t = d->row[s]; t < d->row[s + 1]; t++)
                lrow[d->lab[t]] = -1;
        }
    }
    for (int32_t l = 0; l < d->n_labels; l++)
        lrow[l] = -1;
    int rep[256];
    for (int c = 0; c < nc; c++)
        rep[c] = -1;
    for (int b = 0; b < 256; b++) {
        re->byte_class[b] = cls[b];
        if (rep[cls[b]] < 0)
            rep[cls[b]] = b;
    }
    re->n_classes = nc;
    re->n_states = n;
    re->start = 0;
    re->next = malloc((size_t)n * (size_t)nc * sizeof *re->next);
    re->accept = malloc((size_t)n);
    re->class_starts_cp = malloc((size_t)nc);
    if (!re->next || !re->accept || !re->class_starts_cp)
        goto fail;
    for (int c = 0; c < nc; c++)
        re->class_starts_cp[c] = (uint8_t)!sx_rx_is_cont((uint32_t)rep[c]);
    for (int32_t i = 0; i < n; i++) {
        int32_t s = order[i];
        for (int32_t t = d->row[s]; t < d->row[s + 1]; t++)
            lrow[d->lab[t]] = d->dst[t];
        for (int c = 0; c < nc; c++) {
            int32_t l = label_of[rep[c]];
            int32_t t = l >= 0 ? lrow[l] : -1;
            re->next[(size_t)i * nc + c] = t >= 0 ? newid[t] : -1;
        }
        for (int32_t t = d->row[s]; t < d->row[s + 1]; t++)
            lrow[d->lab[t]] = -1;
        re->accept[i] = d->accept[s];
    }
    if (metadata(re))
        goto fail;
    free(order);
    free(newid);
    free(lrow);
    *out = re;
    return SX_OK;
fail:
    if (rc == SX_ENOMEM)
        sx_err_set(err, SX_ENOMEM, "out of memory building the DFA table");
    free(order);
    free(newid);
    free(lrow);
    sx_re_free(re);
    return rc;
}

void sx_re_free(sx_re *re)
{
    if (!re)
        return;
    free(re->next);
    free(re->accept);
    free(re->class_starts_cp);
    free(re->min_bytes);
    free(re->min_cps);
    free(re->unbounded);
    free(re);
}

int32_t sx_re_start(const sx_re *re) { return re->start; }
int32_t sx_re_n_states(const sx_re *re) { return re->n_states; }
int sx_re_is_empty(const sx_re *re) { return re->n_states == 0; }

int32_t sx_re_step(const sx_re *re, int32_t state, uint8_t byte)
{
    if (state < 0 || state >= re->n_states)
        return -1;
    return re->next[(size_t)state * (size_t)re->n_classes + re->byte_class[byte]];
}

int sx_re_is_accepting(const sx_re *re, int32_t state)
{
    return state >= 0 && state < re->n_states && re->accept[state];
}

int sx_re_matches(const sx_re *re, const char *s, size_t len)
{
    int32_t st = re->start;
    for (size_t i = 0; i < len && st >= 0; i++)
        st = re->next[(size_t)st * (size_t)re->n_classes + re->byte_class[(uint8_t)s[i]]];
    return sx_re_is_accepting(re, st);
}

int32_t sx_re_min_bytes(const sx_re *re, int32_t state)
{
    return state >= 0 && state < re->n_states ? re->min_bytes[state] : -1;
}

int32_t sx_re_min_cps(const sx_re *re, int32_t state)
{
    return state >= 0 && state < re->n_states ? re->min_cps[state] : -1;
}

int sx_re_is_unbounded(const sx_re *re, int32_t state)
{
    return state >= 0 && state < re->n_states ? re->unbounded[state] : -1;
}

void sx_re_get_table(const sx_re *re, sx_re_table *t)
{
    t->n_states = re->n_states;
    t->n_classes = re->n_classes;
    t->start = re->start;
    t->byte_class = re->byte_class;
    t->next = re->next;
    t->accept = re->accept;
    t->class_starts_cp = re->class_starts_cp;
}

/* Sets of states as bit vectors; F_k = states reachable with exactly k
 * code-point-starting bytes, closed under continuation bytes (which cannot
 * cycle in a live DFA accepting only valid UTF-8, at most 3 in a row). */
int sx_re_cp_lengths(const sx_re *re, int32_t state, uint32_t max_len, uint64_t *bits)
{
    size_t words = (size_t)max_len / 64 + 1;
    memset(bits, 0, words * sizeof *bits);
    if (state < 0 || state >= re->n_states)
        return SX_EINVAL;
    int32_t n = re->n_states, k = re->n_classes;
    size_t sw = ((size_t)n + 63) / 64;
    uint64_t *in = calloc(sw, sizeof *in), *nx = calloc(sw, sizeof *nx);
    int32_t *cur = malloc((size_t)n * sizeof *cur), *nxt = malloc((size_t)n * sizeof *nxt);
    if (!in || !nx || !cur || !nxt) {
        free(in);
        free(nx);
        free(cur);
        free(nxt);
        return SX_ENOMEM;
    }
    int32_t nc = 0, nn;
    cur[nc++] = state;
    in[state / 64] |= 1ull << (state % 64);
    for (uint32_t len = 0; nc > 0; len++) {
        /* close under continuation bytes (the list grows while we scan) */
        for (int32_t i = 0; i < nc; i++) {
            int32_t s = cur[i];
            for (int32_t c = 0; c < k; c++) {
                int32_t t = re->next[(size_t)s * k + c];
                if (t >= 0 && !re->class_starts_cp[c] && !(in[t / 64] >> (t % 64) & 1)) {
                    in[t / 64] |= 1ull << (t % 64);
                    cur[nc++] = t;
                }
            }
        }
        for (int32_t i = 0; i < nc; i++)
            if (re->accept[cur[i]]) {
                bits[len / 64] |= 1ull << (len % 64);
                break;
            }
        if (len == max_len)
            break;
        nn = 0;
        for (int32_t i = 0; i < nc; i++) {
            int32_t s = cur[i];
            for (int32_t c = 0; c < k; c++) {
                int32_t t = re->next[(size_t)s * k + c];
                if (t >= 0 && re->class_starts_cp[c] && !(nx[t / 64] >> (t % 64) & 1)) {
                    nx[t / 64] |= 1ull << (t % 64);
                    nxt[nn++] = t;
                }
            }
        }
        for (int32_t i = 0; i < nc; i++)
            in[cur[i] / 64] = 0;
        /* swap: nx becomes the membership of the new list */
        uint64_t *tb = in;
        in = nx;
        nx = tb;
        int32_t *tl = cur;
        cur = nxt;
        nxt = tl;
        nc = nn;
    }
    free(in);
    free(nx);
    free(cur);
    free(nxt);
    return SX_OK;
}
