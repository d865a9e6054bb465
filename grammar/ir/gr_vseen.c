/* The persistent hash set under a uniqueItems array's list of item hashes
 * (gr_vseen.idx): with it, "is this value new?" costs a few node reads
 * instead of a walk over every earlier item, which made a mask after N
 * items cost O(N x tokens). */
#include <string.h>

#include "grammar/ir/ir.h"

#define HS_BITS 5
#define HS_MASK 31u

static int popc(uint32_t x)
{
    return __builtin_popcount(x);
}

int gr_hset_has(const gr_hset *s, uint64_t h)
{
    for (unsigned shift = 0; s; shift += HS_BITS) {
        uint32_t bit = 1u << ((h >> shift) & HS_MASK);
        if (!(s->map & bit))
            return 0;
        int at = popc(s->map & (bit - 1));
        if (!(s->sub & bit))
            return s->e[at].h == h;
        s = s->e[at].c;
    }
    return 0;
}

static gr_hset *node_new(uint32_t map, uint32_t sub, void *(*alloc)(void *, size_t), void *ctx)
{
    gr_hset *n = alloc(ctx, sizeof *n + (size_t)popc(map) * sizeof n->e[0]);
    if (n) {
        n->map = map;
        n->sub = sub;
    }
    return n;
}

/* A node at level `shift` holding the two different hashes a and b. */
static const gr_hset *pair(uint64_t a, uint64_t b, unsigned shift,
                           void *(*alloc)(void *, size_t), void *ctx)
{
    uint32_t ia = (uint32_t)(a >> shift) & HS_MASK, ib = (uint32_t)(b >> shift) & HS_MASK;
    if (ia == ib) { /* same slot here: a child one level down (they differ
                       within 64 bits, so this ends by shift 60) */
        const gr_hset *c = pair(a, b, shift + HS_BITS, alloc, ctx);
        gr_hset *n = c ? node_new(1u << ia, 1u << ia, alloc, ctx) : NULL;
        if (n)
            n->e[0].c = c;
        return n;
    }
    gr_hset *n = node_new(1u << ia | 1u << ib, 0, alloc, ctx);
    if (n) {
        n->e[ia < ib ? 0 : 1].h = a;
        n->e[ia < ib ? 1 : 0].h = b;
    }
    return n;
}

static const gr_hset *add_at(const gr_hset *s, uint64_t h, unsigned shift,
                             void *(*alloc)(void *, size_t), void *ctx)
{
    uint32_t bit = 1u << ((h >> shift) & HS_MASK);
    int at = popc(s->map & (bit - 1)), used = popc(s->map);
    if (!(s->map & bit)) { /* a free slot: a copy with h in it */
        gr_hset *n = node_new(s->map | bit, s->sub, alloc, ctx);
        if (!n)
            return NULL;
        memcpy(n->e, s->e, (size_t)at * sizeof n->e[0]);
        n->e[at].h = h;
        memcpy(n->e + at + 1, s->e + at, (size_t)(used - at) * sizeof n->e[0]);
        return n;
    }
    const gr_hset *c;
    if (s->sub & bit)
        c = add_at(s->e[at].c, h, shift + HS_BITS, alloc, ctx);
    else if (s->e[at].h == h)
        return s; /* already there */
    else
        c = pair(s->e[at].h, h, shift + HS_BITS, alloc, ctx);
    if (!c)
        return NULL;
    if ((s->sub & bit) && c == s->e[at].c)
        return s; /* already there, further down */
    gr_hset *n = node_new(s->map, s->sub | bit, alloc, ctx);
    if (!n)
        return NULL;
    memcpy(n->e, s->e, (size_t)used * sizeof n->e[0]);
    n->e[at].c = c;
    return n;
}

const gr_hset *gr_hset_add(const gr_hset *s, uint64_t h, void *(*alloc)(void *ctx, size_t n),
                           void *ctx)
{
    if (!s) {
        gr_hset *n = node_new(1u << (h & HS_MASK), 0, alloc, ctx);
        if (n)
            n->e[0].h = h;
        return n;
    }
    return add_at(s, h, 0, alloc, ctx);
}
