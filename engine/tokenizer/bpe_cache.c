/* A word cache for the BPE: pre-token bytes -> ids, shared by every thread
 * that encodes with one tokenizer.  Lossy and lock-free: a word may sit in
 * one of two slots chosen by its hash (two choices keep collisions rare at a
 * load near 1); each slot is a seqlock (odd sequence = being written), a
 * writer that finds the slot busy just skips, and a reader that sees the
 * sequence move discards what it read.  All fields are atomics accessed
 * relaxed, so there is no data race; only speed depends on what is cached,
 * never the ids. */
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"

int sx_wcache_init(sx_wcache *c, unsigned log2_slots)
{
    c->mask = ((size_t)1 << log2_slots) - 1;
    c->slots = calloc(c->mask + 1, sizeof *c->slots);
    return c->slots ? SX_OK : SX_ENOMEM;
}

void sx_wcache_fini(sx_wcache *c)
{
    free(c->slots);
    c->slots = NULL;
}

static uint64_t meta_of(uint64_t h, size_t n, size_t nids)
{
    return (h & 0xFFFFFFFFu) | ((uint64_t)n << 32) | ((uint64_t)nids << 40) | (1ull << 48);
}

static sx_wcache_slot *slot1(const sx_wcache *c, uint64_t h)
{
    return &c->slots[(h >> 32) & c->mask];
}

static sx_wcache_slot *slot2(const sx_wcache *c, uint64_t h)
{
    return &c->slots[((h >> 48) ^ (h >> 16)) & c->mask];
}

static int get(sx_wcache_slot *s, uint64_t h, const unsigned char *w, size_t n, int32_t *ids)
{
    uint64_t s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
    if ((s1 & 1) || n > SX_WC_MAXW)
        return -1;
    uint64_t meta = atomic_load_explicit(&s->meta, memory_order_relaxed);
    if ((meta & 0xFFFFFFFFFFull) != (meta_of(h, n, 0) & 0xFFFFFFFFFFull) || !(meta >> 48))
        return -1;
    size_t nids = (size_t)(meta >> 40) & 0xFF;
    if (nids == 0 || nids > SX_WC_MAXIDS)
        return -1;
    uint64_t word[SX_WC_MAXW / 8], buf[SX_WC_MAXIDS / 2];
    size_t nw = (n + 7) / 8;
    memset(word, 0, sizeof word);
    memcpy(word, w, n);
    for (size_t i = 0; i < nw; i++)
        if (atomic_load_explicit(&s->word[i], memory_order_relaxed) != word[i])
            return -1;
    for (size_t i = 0; i < (nids + 1) / 2; i++)
        buf[i] = atomic_load_explicit(&s->ids[i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != s1)
        return -1;
    memcpy(ids, buf, nids * sizeof *ids);
    return (int)nids;
}

int sx_wcache_get(const sx_wcache *c, uint64_t h, const unsigned char *w, size_t n, int32_t *ids)
{
    int k = get(slot1(c, h), h, w, n, ids);
    return k > 0 ? k : get(slot2(c, h), h, w, n, ids);
}

static int used(sx_wcache_slot *s)
{
    return (atomic_load_explicit(&s->meta, memory_order_relaxed) >> 48) != 0;
}

void sx_wcache_put(const sx_wcache *c, uint64_t h, const unsigned char *w, size_t n, const int32_t *ids,
                   size_t nids)
{
    /* the first slot if free, else the second if free, else either */
    sx_wcache_slot *s = slot1(c, h), *s2 = slot2(c, h);
    if (used(s) && (!used(s2) || (h & 1)))
        s = s2;
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    uint64_t word[SX_WC_MAXW / 8], buf[SX_WC_MAXIDS / 2];
    if (n > SX_WC_MAXW || nids == 0 || nids > SX_WC_MAXIDS || (seq & 1))
        return;
    if (!atomic_compare_exchange_strong_explicit(&s->seq, &seq, seq + 1, memory_order_relaxed,
                                                 memory_order_relaxed))
        return; /* another writer has it */
    atomic_thread_fence(memory_order_release);
    memset(word, 0, sizeof word);
    memcpy(word, w, n);
    memset(buf, 0, sizeof buf);
    memcpy(buf, ids, nids * sizeof *ids);
    atomic_store_explicit(&s->meta, meta_of(h, n, nids), memory_order_relaxed);
    for (size_t i = 0; i < SX_WC_MAXW / 8; i++)
        atomic_store_explicit(&s->word[i], word[i], memory_order_relaxed);
    for (size_t i = 0; i < SX_WC_MAXIDS / 2; i++)
        atomic_store_explicit(&s->ids[i], buf[i], memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}
