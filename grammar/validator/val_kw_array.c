/* val_kw_array: minItems/maxItems, uniqueItems, prefixItems/items (and the
 * draft-07 items array with additionalItems), contains with
 * minContains/maxContains, and unevaluatedItems. */
#include <stdlib.h>

#include "grammar/validator/val_internal.h"

typedef struct hashed {
    uint64_t h;
    size_t i;
} hashed;

static int hashed_cmp(const void *a, const void *b)
{
    const hashed *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Finds two equal items: all pairs for short arrays, else equal-hash runs
 * of the items sorted by hash.  Returns 1 with *i < *j, 0, or -1 (OOM). */
static int find_duplicate(const sx_numtab *t, const json_t *x, size_t *i, size_t *j)
{
    size_t n = json_array_size(x);
    if (n <= 16) {
        for (size_t a = 0; a < n; a++)
            for (size_t b = a + 1; b < n; b++)
                if (sxv_json_equal(t, json_array_get(x, a), json_array_get(x, b))) {
                    *i = a;
                    *j = b;
                    return 1;
                }
        return 0;
    }
    hashed *h = malloc(n * sizeof *h);
    if (!h)
        return -1;
    for (size_t a = 0; a < n; a++) {
        h[a].h = sxv_json_hash(json_array_get(x, a));
        h[a].i = a;
    }
    qsort(h, n, sizeof *h, hashed_cmp);
    int found = 0;
    for (size_t a = 0; a < n && !found; a++)
        for (size_t b = a + 1; b < n && h[b].h == h[a].h && !found; b++)
            if (sxv_json_equal(t, json_array_get(x, h[a].i),
                               json_array_get(x, h[b].i))) {
                *i = h[a].i < h[b].i ? h[a].i : h[b].i;
                *j = h[a].i < h[b].i ? h[b].i : h[a].i;
                found = 1;
            }
    free(h);
    return found;
}

static int item(sxv_ctx *c, const sxv_node *s, const json_t *x, size_t i)
{
    if (sxv_path_push_index(c, i))
        return SXV_ERROR;
    int r = sxv_eval(c, s, json_array_get(x, i), NULL);
    sxv_path_pop(c);
    return r;
}

int sxv_kw_array(sxv_ctx *c, const sxv_node *n, const json_t *x,
                 sxv_ann *ann)
{
    size_t len = json_array_size(x);
    if (len < n->min_items)
        return sxv_fail(c, n, "minItems", "array of length %zu is shorter "
                                          "than %zu", len, n->min_items);
    if (len > n->max_items)
        return sxv_fail(c, n, "maxItems", "array of length %zu is longer "
                                          "than %zu", len, n->max_items);
    if (n->unique) {
        size_t i = 0, j = 0;
        int d = find_duplicate(c->nums, x, &i, &j);
        if (d < 0)
            return sxv_hard(c, SX_ENOMEM, "out of memory");
        if (d)
            return sxv_fail(c, n, "uniqueItems", "items %zu and %zu are equal",
                            i, j);
    }
    int r;
    size_t np = n->nprefix < len ? n->nprefix : len;
    for (size_t i = 0; i < np; i++) {
        if ((r = item(c, n->prefix[i], x, i)) != SXV_VALID)
            return r;
        if (ann)
            ann->seen[i] = 1;
    }
    if (n->items && len > np) {
        if (n->items->boolean == 0)
            return sxv_fail(c, n, n->items_kw,
                            "array of %zu items allows at most %zu", len, np);
        for (size_t i = np; i < len; i++) {
            if ((r = item(c, n->items, x, i)) != SXV_VALID)
                return r;
            if (ann)
                ann->seen[i] = 1;
        }
    }
    if (n->contains) {
        size_t hits = 0;
        c->quiet++;
        for (size_t i = 0; i < len; i++) {
            r = item(c, n->contains, x, i);
            if (r == SXV_ERROR) {
                c->quiet--;
                return r;
            }
            if (r == SXV_VALID) {
                hits++;
                if (ann)
                    ann->seen[i] = 1;
                else if (hits >= n->min_contains &&
                         n->max_contains == (size_t)-1)
                    break; /* the verdict is settled */
            }
        }
        c->quiet--;
        if (hits < n->min_contains)
            return sxv_fail(c, n, n->min_contains == 1 ? "contains"
                                                       : "minContains",
                            "%zu items match \"contains\", at least %zu "
                            "required", hits, n->min_contains);
        if (hits > n->max_contains)
            return sxv_fail(c, n, "maxContains",
                            "%zu items match \"contains\", at most %zu "
                            "allowed", hits, n->max_contains);
    }
    return SXV_VALID;
}

int sxv_kw_array_uneval(sxv_ctx *c, const sxv_node *n, const json_t *x,
                        sxv_ann *ann)
{
    size_t len = json_array_size(x);
    for (size_t i = 0; i < len; i++) {
        if (ann && i < ann->n && ann->seen[i])
            continue;
        if (n->uneval_items->boolean == 0)
            return sxv_fail(c, n, "unevaluatedItems",
                            "item %zu is not evaluated by any keyword", i);
        int r = item(c, n->uneval_items, x, i);
        if (r != SXV_VALID)
            return r;
        if (ann && i < ann->n)
            ann->seen[i] = 1;
    }
    return SXV_VALID;
}
