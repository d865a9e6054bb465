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

#include "grammar/compile/compile.h"

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

/* ---- the index of c->refs ------------------------------------------------
 *
 * Chained buckets, newest entry first.  Entries leave c->refs only from its
 * top (gc_refs_cut), and the top entry is the newest of all, so it heads its
 * bucket: cutting unlinks bucket heads.  Lookups thus find what the walk of
 * c->refs found first, the newest live match. */
struct gc_ref_index {
    gc_ref **bucket;
    size_t cap, n;
};

static uint64_t target_hash(const json_t *t)
{
    uint64_t h = (uint64_t)(uintptr_t)t * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}

gc_ref *gc_refs_find_target(const gc_ctx *c, const json_t *target)
{
    const struct gc_ref_index *x = c->ref_index;
    if (!x) {
        for (gc_ref *r = c->refs; r; r = r->next)
            if (r->target == target)
                return r;
        return NULL;
    }
    uint64_t h = target_hash(target);
    for (gc_ref *r = x->bucket[h & (x->cap - 1)]; r; r = r->hnext)
        if (r->target == target)
            return r;
    return NULL;
}

static gc_ref *find_text(const gc_ctx *c, const char *t, size_t n, uint64_t h)
{
    const struct gc_ref_index *x = c->ref_index;
    gc_ref *r = x ? x->bucket[h & (x->cap - 1)] : c->refs;
    for (; r; r = x ? r->hnext : r->next)
        if (r->text && r->hash == h && r->len == n && !memcmp(r->text, t, n))
            return r;
    return NULL;
}

/* (Re)builds the buckets at cap from the whole of c->refs, oldest entries
 * first so that the newest head their buckets. */
static int index_build(gc_ctx *c, size_t cap)
{
    struct gc_ref_index *x = c->ref_index;
    size_t n = 0;
    for (gc_ref *r = c->refs; r; r = r->next)
        n++;
    gc_ref **b = calloc(cap, sizeof *b), **all = malloc((n + 1) * sizeof *all);
    if (!b || !all) {
        free(b);
        free(all);
        return -1;
    }
    n = 0;
    for (gc_ref *r = c->refs; r; r = r->next)
        all[n++] = r;
    x->n = n;
    while (n > 0) {
        gc_ref *r = all[--n];
        r->hnext = b[r->hash & (cap - 1)];
        b[r->hash & (cap - 1)] = r;
    }
    free(all);
    free(x->bucket);
    x->bucket = b;
    x->cap = cap;
    return 0;
}

static void index_drop(gc_ctx *c)
{
    if (c->ref_index) {
        free(c->ref_index->bucket);
        free(c->ref_index);
        c->ref_index = NULL;
    }
}

int gc_refs_push(gc_ctx *c, gc_ref *r)
{
    if (!r->text)
        r->hash = target_hash(r->target);
    r->next = c->refs;
    c->refs = r;
    struct gc_ref_index *x = c->ref_index;
    if (!x || x->n + 1 > x->cap) {
        if (!x && !(x = c->ref_index = calloc(1, sizeof *x)))
            return SX_ENOMEM;
        if (index_build(c, x->cap ? x->cap * 2 : 64)) {
            index_drop(c); /* lookups walk c->refs again */
            return SX_ENOMEM;
        }
        return SX_OK;
    }
    r->hnext = x->bucket[r->hash & (x->cap - 1)];
    x->bucket[r->hash & (x->cap - 1)] = r;
    x->n++;
    return SX_OK;
}

void gc_refs_cut(gc_ctx *c, gc_ref *old)
{
    struct gc_ref_index *x = c->ref_index;
    while (c->refs && c->refs != old) {
        gc_ref *r = c->refs;
        if (x) {
            x->bucket[r->hash & (x->cap - 1)] = r->hnext;
            x->n--;
        }
        c->refs = r->next;
    }
}

void gc_memo_free(gc_ctx *c)
{
    index_drop(c);
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
    if (!c->memo_on || c->depth < GC_MEMO_DEPTH || !json_is_object(s))
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
    /* bounded work: copies that grow with each level of a recursive
     * rewrite (oneOf of allOf of $ref to itself) are serialised here at
     * every level; past GC_MAX_MEMO_BYTES in all the schema is refused
     * rather than rewritten for seconds */
    c->memo_bytes += (long)n;
    if (c->memo_bytes > GC_MAX_MEMO_BYTES) {
        free(t);
        return sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1,
                           "schema needs more than %d MB of rewritten copies (at %s)",
                           GC_MAX_MEMO_BYTES >> 20, c->ptr[0] ? c->ptr : "the root");
    }
    uint64_t h = text_hash(t, n);
    const gc_ref *found = find_text(c, t, n, h);
    if (found) {
        free(t);
        *node = found->node;
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
        if (gc_refs_push(c, r))
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
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
