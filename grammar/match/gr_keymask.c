/* The plain tokens that continue one of a sorted set of byte strings --
 * listed property names while an object key is typed, literals (enum,
 * const) inside a string literal.
 *
 * In an object key, a byte keeps the frame alive when the range of
 * listed names with the prefix typed so far still holds a usable one
 * (feed_key's `known`) or when the key may still be an additional one
 * (`gen`).  Both only shrink as bytes come, so a plain token (no quote,
 * backslash or control character: it cannot end the key) is allowed by a
 * listed name exactly when the rest of some usable name in the range
 * starts with the token's bytes.  Those tokens are found by walking the
 * vocabulary trie along the names' remaining bytes -- a few nodes per
 * name -- instead of the whole trie with the matcher fed at every node.
 * Inside a string literal the same holds for a literal set whose
 * literals all still need their closing quote (see gr_lits_plain). */
#include "grammar/match/match.h"
#include "grammar/vocab/vocab.h"

typedef struct names {
    const sx_vocab *v;
    const gr_lit *u; /* the strings, sorted, sharing their first k0 bytes */
    uint32_t *mask;
} names;

/* First index in [a, b) whose name's byte at k is >= c (names in [a, b)
 * all reach past k and are sorted, so their byte k is sorted too). */
static uint32_t lower(const names *s, uint32_t a, uint32_t b, uint32_t k, int c)
{
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (s->u[mid].b[k] < c)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* Trie node i spells the bytes k0..k-1 of every name in u[a, b). */
static void descend(const names *s, uint32_t i, uint32_t a, uint32_t b, uint32_t k)
{
    const sx_vocab_node *N = s->v->nodes;
    /* names that end here go first (a prefix sorts before its extensions) */
    while (a < b && s->u[a].len == k)
        a++;
    if (a == b)
        return;
    for (uint32_t j = i + 1; j < N[i].next; j = N[j].next) {
        int c = N[j].byte;
        uint32_t x = lower(s, a, b, k, c), y = lower(s, x, b, k, c + 1);
        if (x == y)
            continue;
        int32_t t = N[j].token;
        if (t >= 0 && s->v->plain_cp[t] >= 0)
            s->mask[t >> 5] |= 1u << (t & 31);
        descend(s, j, x, y, k + 1);
    }
}

void gr_lits_plain(const sx_vocab *v, const gr_lit *L, uint32_t n, uint32_t pos, uint32_t *mask)
{
    names s = {.v = v, .u = L, .mask = mask};
    descend(&s, 0, 0, n, pos);
}

int gr_key_names_plain(const sx_grammar *g, gr_arena *scratch, const gr_node *n,
                       const gr_frame *f, uint32_t *mask)
{
    uint32_t lo = f->lo, hi = f->hi;
    if (lo >= hi)
        return SX_OK;
    gr_mark mk = gr_arena_mark(scratch);
    gr_lit *u = gr_arena_alloc(scratch, (size_t)(hi - lo) * sizeof *u);
    uint32_t k = 0;
    if (!u)
        return SX_ENOMEM;
    for (uint32_t i = lo; i < hi; i++) {
        const gr_prop *p = &n->u.obj.props[i];
        if (p->key_len > f->pos && gr_obj_range_live(n, f, i, i + 1))
            u[k++] = (gr_lit){p->key, p->key_len};
    }
    gr_lits_plain(g->vocab, u, k, f->pos, mask);
    gr_arena_reset(scratch, mk);
    return SX_OK;
}
