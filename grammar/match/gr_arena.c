/* A bump allocator with marks: the mask walk allocates frames per trie
 * depth and drops them all by resetting to the depth's mark. */
#include <stdlib.h>

#include "grammar/match/match.h"

#define GR_CHUNK (64u * 1024u)

struct gr_arena_chunk {
    gr_arena_chunk *prev;
    size_t cap;
    _Alignas(16) unsigned char data[];
};

void *gr_arena_alloc(gr_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->used + n > a->head->cap) {
        size_t cap = n > GR_CHUNK ? n : GR_CHUNK;
        gr_arena_chunk *c;
        /* walks cross the same chunk boundary back and forth: reuse */
        if (a->spare && a->spare->cap >= cap) {
            c = a->spare;
            a->spare = NULL;
            cap = c->cap;
        } else {
            c = malloc(sizeof *c + cap);
            if (!c)
                return NULL;
        }
        c->prev = a->head;
        c->cap = cap;
        a->head = c;
        a->used = 0;
    }
    void *p = a->head->data + a->used;
    a->used += n;
    return p;
}

gr_mark gr_arena_mark(const gr_arena *a)
{
    return (gr_mark){a->head, a->used};
}

void gr_arena_reset(gr_arena *a, gr_mark m)
{
    while (a->head != m.chunk) {
        gr_arena_chunk *p = a->head->prev;
        if (!a->spare) {
            a->spare = a->head;
        } else {
            free(a->head);
        }
        a->head = p;
    }
    a->used = m.used;
}

void gr_arena_free(gr_arena *a)
{
    gr_arena_reset(a, (gr_mark){NULL, 0});
    free(a->spare);
    a->spare = NULL;
}
