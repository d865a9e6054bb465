/* val_kw_object: minProperties/maxProperties, required, dependentRequired
 * (and array-valued draft-07 dependencies), properties, patternProperties,
 * additionalProperties, propertyNames, dependentSchemas (and schema-valued
 * dependencies), and unevaluatedProperties.
 *
 * Members are visited in the object's own iteration order, and the index
 * of a member in that order is its slot in the annotation set. */
#include <string.h>

#include "grammar/validator/val_internal.h"

static const sxv_prop *find_prop(const sxv_node *n, const char *k, size_t kl)
{
    size_t lo = 0, hi = n->nprops;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const sxv_str *s = &n->props[mid].name;
        size_t m = s->n < kl ? s->n : kl;
        int r = memcmp(s->s, k, m);
        if (!r)
            r = s->n < kl ? -1 : s->n > kl;
        if (!r)
            return &n->props[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int member(sxv_ctx *c, const sxv_node *s, const char *k, size_t kl,
                  const json_t *v)
{
    if (sxv_path_push_key(c, k, kl))
        return SXV_ERROR;
    int r = sxv_eval(c, s, v, NULL);
    sxv_path_pop(c);
    return r;
}

static int names(sxv_ctx *c, const sxv_node *n, const char *k, size_t kl)
{
    json_t *name = json_stringn_nocheck(k, kl);
    if (!name)
        return sxv_hard(c, SX_ENOMEM, "out of memory");
    c->quiet++;
    int r = sxv_eval(c, n->prop_names, name, NULL);
    c->quiet--;
    json_decref(name);
    if (r == SXV_INVALID)
        return sxv_fail(c, n, "propertyNames",
                        "property name \"%.*s\" is not valid",
                        (int)(kl > 100 ? 100 : kl), k);
    return r;
}

int sxv_kw_object(sxv_ctx *c, const sxv_node *n, const json_t *x,
                  sxv_ann *ann)
{
    size_t size = json_object_size(x);
    if (size < n->min_props)
        return sxv_fail(c, n, "minProperties",
                        "object with %zu properties has fewer than %zu", size,
                        n->min_props);
    if (size > n->max_props)
        return sxv_fail(c, n, "maxProperties",
                        "object with %zu properties has more than %zu", size,
                        n->max_props);
    for (size_t i = 0; i < n->nrequired; i++)
        if (!json_object_getn(x, n->required[i].s, n->required[i].n))
            return sxv_fail(c, n, "required", "property \"%.*s\" is missing",
                            (int)(n->required[i].n > 100 ? 100
                                                         : n->required[i].n),
                            n->required[i].s);
    for (size_t i = 0; i < n->ndep_req; i++) {
        const sxv_dreq *d = &n->dep_req[i];
        if (!json_object_getn(x, d->name.s, d->name.n))
            continue;
        for (size_t j = 0; j < d->nreq; j++)
            if (!json_object_getn(x, d->req[j].s, d->req[j].n))
                return sxv_fail(c, n, d->kw,
                                "property \"%.*s\" is required by \"%.*s\"",
                                (int)(d->req[j].n > 100 ? 100 : d->req[j].n),
                                d->req[j].s,
                                (int)(d->name.n > 100 ? 100 : d->name.n),
                                d->name.s);
    }
    int r;
    if (n->nprops || n->npprops || n->addl || n->prop_names) {
        size_t i = 0;
        for (void *it = json_object_iter((json_t *)x); it;
             it = json_object_iter_next((json_t *)x, it), i++) {
            const char *k = json_object_iter_key(it);
            size_t kl = json_object_iter_key_len(it);
            const json_t *v = json_object_iter_value(it);
            int matched = 0;
            const sxv_prop *p = n->nprops ? find_prop(n, k, kl) : NULL;
            if (p) {
                if ((r = member(c, p->node, k, kl, v)) != SXV_VALID)
                    return r;
                matched = 1;
            }
            for (size_t j = 0; j < n->npprops; j++) {
                int m = sxv_match(c, n->pprops[j].re, k, kl);
                if (m < 0)
                    return sxv_hard(c, -m,
                                    "patternProperties /%.80s/ could not be "
                                    "matched: %s",
                                    n->pprops[j].src, sx_strerror(-m));
                if (!m)
                    continue;
                if ((r = member(c, n->pprops[j].node, k, kl, v)) != SXV_VALID)
                    return r;
                matched = 1;
            }
            if (!matched && n->addl) {
                if (n->addl->boolean == 0)
                    return sxv_fail(c, n, "additionalProperties",
                                    "property \"%.*s\" is not allowed",
                                    (int)(kl > 100 ? 100 : kl), k);
                if ((r = member(c, n->addl, k, kl, v)) != SXV_VALID)
                    return r;
                matched = 1;
            }
            if (matched && ann && i < ann->n)
                ann->seen[i] = 1;
            if (n->prop_names && (r = names(c, n, k, kl)) != SXV_VALID)
                return r;
        }
    }
    for (size_t i = 0; i < n->ndep_sch; i++) {
        const sxv_dsch *d = &n->dep_sch[i];
        if (json_object_getn(x, d->name.s, d->name.n) &&
            (r = sxv_eval(c, d->node, x, ann)) != SXV_VALID)
            return r;
    }
    return SXV_VALID;
}

int sxv_kw_object_uneval(sxv_ctx *c, const sxv_node *n, const json_t *x,
                         sxv_ann *ann)
{
    size_t i = 0;
    for (void *it = json_object_iter((json_t *)x); it;
         it = json_object_iter_next((json_t *)x, it), i++) {
        if (ann && i < ann->n && ann->seen[i])
            continue;
        const char *k = json_object_iter_key(it);
        size_t kl = json_object_iter_key_len(it);
        if (n->uneval_props->boolean == 0)
            return sxv_fail(c, n, "unevaluatedProperties",
                            "property \"%.*s\" is not evaluated by any keyword",
                            (int)(kl > 100 ? 100 : kl), k);
        int r = member(c, n->uneval_props, k, kl, json_object_iter_value(it));
        if (r != SXV_VALID)
            return r;
        if (ann && i < ann->n)
            ann->seen[i] = 1;
    }
    return SXV_VALID;
}
