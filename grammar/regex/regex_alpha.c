/* The alphabet of the code-point DFA: the coarsest partition of the scalar
 * values such that every set in the pattern is a union of classes.
 *
 * Every boundary of every set cuts the code-point line into elementary
 * intervals; an interval's signature is the list of sets containing it,
 * built by interning (signature, set) pairs set by set, so equal
 * signatures get equal ids exactly (no hashing of whole lists). */
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex_internal.h"

typedef struct pair_map {
    uint64_t *key; /* (old_sig + 1) << 32 | set, 0 = empty */
    int32_t  *val;
    uint32_t  cap, n;
} pair_map;

static int pm_grow(pair_map *m)
{
    uint32_t nc = m->cap ? m->cap * 2 : 256;
    uint64_t *k = calloc(nc, sizeof *k);
    int32_t *v = malloc(nc * sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return SX_ENOMEM;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->key[i])
            continue;
        uint32_t j = (uint32_t)((m->key[i] * 0x9E3779B97F4A7C15ull) >> 32) & (nc - 1);
        while (k[j])
            j = (j + 1) & (nc - 1);
        k[j] = m->key[i];
        v[j] = m->val[i];
    }
    free(m->key);
    free(m->val);
    m->key = k;
    m->val = v;
    m->cap = nc;
    return SX_OK;
}

/* Returns the id of (old, set), creating it as *next_id if new; -1 on ENOMEM. */
static int32_t pm_intern(pair_map *m, int32_t old, int32_t set, int32_t *next_id)
{
    if (2 * (m->n + 1) > m->cap && pm_grow(m))
        return -1;
    uint64_t key = ((uint64_t)(uint32_t)(old + 1) << 32) | (uint32_t)set;
    uint32_t j = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
    while (m->key[j]) {
        if (m->key[j] == key)
            return m->val[j];
        j = (j + 1) & (m->cap - 1);
    }
    m->key[j] = key;
    m->val[j] = (*next_id)++;
    m->n++;
    return m->val[j];
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* First elementary interval whose start is >= cp. */
static int32_t iv_find(const sx_rx_alpha *a, uint32_t cp)
{
    int32_t lo = 0, hi = a->n_iv;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (a->iv_lo[mid] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void sx_rx_alpha_free(sx_rx_alpha *a)
{
    free(a->iv_lo);
    free(a->iv_hi);
    free(a->iv_class);
    free(a->set_start);
    free(a->set_cls);
    free(a->class_word);
    memset(a, 0, sizeof *a);
}

int sx_rx_alpha_build(const sx_rx_cset *sets, int32_t n_sets, int32_t word_set,
                      uint64_t *work, uint64_t max_work, sx_rx_alpha *a,
                      sx_error *err)
{
    uint32_t *pts = NULL;
    int32_t *sig = NULL, *remap = NULL, *stamp = NULL;
    pair_map pm = {0};
    int rc = SX_ENOMEM;
    memset(a, 0, sizeof *a);

    size_t n_pts = 4;
    for (int32_t j = 0; j < n_sets; j++)
        n_pts += 2 * (size_t)sets[j].n;
    pts = malloc(n_pts * sizeof *pts);
    if (!pts)
        goto fail;
    size_t k = 0;
    pts[k++] = 0;
    pts[k++] = 0xD800;
    pts[k++] = 0xE000;
    pts[k++] = SX_RX_MAX_CP + 1;
    for (int32_t j = 0; j < n_sets; j++) {
        for (int32_t i = 0; i < sets[j].n; i++) {
            pts[k++] = sets[j].r[2 * i];
            pts[k++] = sets[j].r[2 * i + 1] + 1;
        }
    }
    qsort(pts, k, sizeof *pts, u32_cmp);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || pts[i] != pts[u - 1])
            pts[u++] = pts[i];
    *work += k;

    a->iv_lo = malloc(u * sizeof *a->iv_lo);
    a->iv_hi = malloc(u * sizeof *a->iv_hi);
    a->iv_class = malloc(u * sizeof *a->iv_class);
    sig = malloc(u * sizeof *sig);
    if (!a->iv_lo || !a->iv_hi || !a->iv_class || !sig)
        goto fail;
    for (size_t i = 0; i + 1 < u; i++) {
        if (pts[i] >= 0xD800 && pts[i] <= 0xDFFF)
            continue; /* the surrogate gap is outside the alphabet */
        a->iv_lo[a->n_iv] = pts[i];
        a->iv_hi[a->n_iv] = pts[i + 1] - 1;
        sig[a->n_iv] = -1;
        a->n_iv++;
    }

    int32_t next_sig = 0;
    uint64_t coverage = 0;
    for (int32_t j = 0; j < n_sets; j++) {
        for (int32_t i = 0; i < sets[j].n; i++) {
            uint32_t hi = sets[j].r[2 * i + 1];
            for (int32_t e = iv_find(a, sets[j].r[2 * i]); e < a->n_iv && a->iv_lo[e] <= hi; e++) {
                sig[e] = pm_intern(&pm, sig[e], j, &next_sig);
                if (sig[e] < 0)
                    goto fail;
                coverage++;
            }
        }
        if (*work + coverage > max_work) {
            rc = sx_err_set(err, SX_ELIMIT, "regex work budget exceeded building the alphabet");
            goto fail;
        }
    }
    *work += coverage;

    /* compact signature ids (-1 = in no set) into class ids */
    remap = malloc(((size_t)next_sig + 1) * sizeof *remap);
    if (!remap)
        goto fail;
    for (int32_t i = 0; i <= next_sig; i++)
        remap[i] = -1;
    for (int32_t e = 0; e < a->n_iv; e++) {
        int32_t *r = &remap[sig[e] + 1];
        if (*r < 0)
            *r = a->n_classes++;
        a->iv_class[e] = *r;
    }

    a->n_sets = n_sets;
    a->set_start = malloc(((size_t)n_sets + 1) * sizeof *a->set_start);
    a->set_cls = malloc((coverage + 1) * sizeof *a->set_cls);
    stamp = malloc(((size_t)a->n_classes + 1) * sizeof *stamp);
    a->class_word = calloc((size_t)a->n_classes + 1, 1);
    if (!a->set_start || !a->set_cls || !stamp || !a->class_word)
        goto fail;
    for (int32_t c = 0; c < a->n_classes; c++)
        stamp[c] = -1;
    int32_t w = 0;
    for (int32_t j = 0; j < n_sets; j++) {
        a->set_start[j] = w;
        for (int32_t i = 0; i < sets[j].n; i++) {
            uint32_t hi = sets[j].r[2 * i + 1];
            for (int32_t e = iv_find(a, sets[j].r[2 * i]); e < a->n_iv && a->iv_lo[e] <= hi; e++) {
                int32_t c = a->iv_class[e];
                if (stamp[c] != j) {
                    stamp[c] = j;
                    a->set_cls[w++] = c;
                }
            }
        }
        qsort(a->set_cls + a->set_start[j], (size_t)(w - a->set_start[j]), sizeof *a->set_cls,
              u32_cmp);
    }
    a->set_start[n_sets] = w;
    if (word_set >= 0)
        for (int32_t i = a->set_start[word_set]; i < a->set_start[word_set + 1]; i++)
            a->class_word[a->set_cls[i]] = 1;
    rc = SX_OK;
fail:
    if (rc == SX_ENOMEM)
        sx_err_set(err, SX_ENOMEM, "out of memory building the regex alphabet");
    if (rc)
        sx_rx_alpha_free(a);
    free(pts);
    free(sig);
    free(remap);
    free(stamp);
    free(pm.key);
    free(pm.val);
    return rc;
}
