/* Compiled schemas remembered by content, so that recursion through
 * copies ends.
 *
 * A $ref to a schema of the document is compiled once and found again by
 * its address (compile_ref), which is what lets recursive schemas compile
 * to a cyclic grammar.  But allOf members, $refs with siblings, if/then
 * rewrites and the like are merged into fresh copies, and a recursive $ref
 * inside such a copy yields a new copy at every level: the compiler used
 * to unroll it until the nesting limit.  A copy's node depends only on its
 * content (the presence and forbidden-key conditions that also shape an
 * object node are excluded by the caller), so a copy equal to one being
 * compiled, or compiled before, gets that node.
 *
 * Only copies are remembered (schemas of the document itself are bounded
 * by the document, and serialising them would tax every compile), only
 * below GC_MEMO_DEPTH, and only in a second attempt: a compile runs
 * without this first and starts over with it when its nesting passes
 * GC_MEMO_TRIGGER, which schemas without such recursion seldom do. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gr_compile_internal.h"

struct gc_addrs {
    const void **slot;
    size_t cap, n;
    char **texts; /* the remembered serialisations, freed with the set */
    size_t n_texts, cap_texts;
};

static size_t addr_hash(const void *p, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 17) & (cap - 1);
}

static int addrs_put(struct gc_addrs *a, const void *p)
{
    if ((a->n + 1) * 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        const void **ns = calloc(cap, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t i = 0; i < a->cap; i++)
            if (a->slot[i]) {
                size_t j = addr_hash(a->slot[i], cap);
                while (ns[j])
                    j = (j + 1) & (cap - 1);
                ns[j] = a->slot[i];
            }
        free(a->slot);
        a->slot = ns;
        a->cap = cap;
    }
    size_t j = addr_hash(p, a->cap);
    while (a->slot[j]) {
        if (a->slot[j] == p)
            return 0;
        j = (j + 1) & (a->cap - 1);
    }
    a->slot[j] = p;
    a->n++;
    return 0;
}

static int addrs_has(const struct gc_addrs *a, const void *p)
{
    if (!a->cap)
        return 0;
    size_t j = addr_hash(p, a->cap);
    while (a->slot[j]) {
        if (a->slot[j] == p)
            return 1;
        j = (j + 1) & (a->cap - 1);
    }
    return 0;
}

/* Every object and array of the document (iteratively deep documents are
 * bounded by the JSON parser's own nesting limit). */
static int addrs_fill(struct gc_addrs *a, const json_t *v, int depth)
{
    if (depth > 4096)
        return 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        if (addrs_put(a, v))
            return -1;
        json_object_foreach((json_t *)v, k, x)
            if (addrs_fill(a, x, depth + 1))
                return -1;
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
            if (addrs_fill(a, x, depth + 1))
                return -1;
    }
    return 0;
}

void gc_memo_free(gc_ctx *c)
{
    if (c->addrs) {
        for (size_t i = 0; i < c->addrs->n_texts; i++)
            free(c->addrs->texts[i]);
        free(c->addrs->texts);
        free(c->addrs->slot);
        free(c->addrs);
        c->addrs = NULL;
    }
}

static uint64_t text_hash(const char *t, size_t n)
{
    uint64_t h = GR_FNV_BASIS;
    for (size_t i = 0; i < n; i++)
        h = gr_fnv(h, (uint8_t)t[i]);
    return h;
}

int gc_memo_enter(gc_ctx *c, const json_t *s, int32_t *node, gc_ref **entry)
{
    *entry = NULL;
    *node = -1;
    if (!c->memo_on || c->depth < GC_MEMO_DEPTH || c->pres || c->n_forbid || !json_is_object(s))
        return SX_OK;
    if (!c->addrs) {
        c->addrs = calloc(1, sizeof *c->addrs);
        if (!c->addrs || addrs_fill(c->addrs, c->root_schema, 0)) {
            gc_memo_free(c);
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        }
    }
    if (addrs_has(c->addrs, s))
        return SX_OK; /* the document's own schema: bounded, not remembered */
    char *t = json_dumps(s, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!t)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    size_t n = strlen(t);
    uint64_t h = text_hash(t, n);
    for (gc_ref *r = c->refs; r; r = r->next)
        if (r->text && r->hash == h && r->len == n && !memcmp(r->text, t, n)) {
            free(t);
            *node = r->node;
            return SX_OK;
        }
    struct gc_addrs *a = c->addrs;
    if (a->n_texts == a->cap_texts) {
        size_t cap = a->cap_texts ? a->cap_texts * 2 : 16;
        char **nt = realloc(a->texts, cap * sizeof *nt);
        if (!nt) {
            free(t);
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        }
        a->texts = nt;
        a->cap_texts = cap;
    }
    a->texts[a->n_texts++] = t; /* owned by the set from here */
    int32_t id;
    gc_ref *r = gc_alloc(c, sizeof *r);
    int rc = r ? gc_new_node(c, GK_ALT, &id) : sx_err_set(c->err, SX_ENOMEM, "out of memory");
    if (!rc) {
        r->text = t;
        r->len = n;
        r->hash = h;
        r->node = id;
        r->next = c->refs;
        c->refs = r;
        *entry = r;
    }
    return rc;
}

int gc_memo_done(gc_ctx *c, gc_ref *entry, int32_t inner)
{
    int32_t *alts = gc_alloc(c, sizeof *alts);
    if (!alts)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    alts[0] = inner;
    c->g->nodes[entry->node].u.alt.alts = alts;
    c->g->nodes[entry->node].u.alt.n = 1;
    return SX_OK;
}
