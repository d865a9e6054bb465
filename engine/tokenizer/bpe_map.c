/* The BPE lookup tables: merge pair -> (rank, merged id), and a token's raw
 * bytes -> id.  Open addressing with linear probing, sized at load time to a
 * load factor under 0.6, never resized. */
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"

uint64_t sx_hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0x243F6A8885A308D3ull ^ (n * 0x9E3779B97F4A7C15ull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0x94D049BB133111EBull;
    }
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

static unsigned log2_slots(size_t n)
{
    unsigned b = 4;
    while (((size_t)1 << b) < n + n / 2 + 1)
        b++;
    return b;
}

int sx_bpe_init(sx_bpe *b, int32_t n_ids, size_t n_vocab, size_t n_merges)
{
    unsigned vb = log2_slots(n_vocab), mb = log2_slots(n_merges);
    size_t vn = (size_t)1 << vb, mn = (size_t)1 << mb;
    for (int i = 0; i < 256; i++)
        b->byte_id[i] = -1;
    b->vocab = malloc(vn * sizeof *b->vocab);
    b->merges = malloc(mn * sizeof *b->merges);
    b->memo = calloc((size_t)n_ids + 1, sizeof *b->memo);
    b->produced = calloc((size_t)n_ids + 1, 1);
    /* about half a slot per vocabulary entry: 2^16 slots (8 MiB) for Qwen */
    unsigned cb = vb > 12 ? vb - 2 : 10;
    if (!b->vocab || !b->merges || !b->memo || !b->produced ||
        sx_wcache_init(&b->cache, cb > 16 ? 16 : cb))
        return SX_ENOMEM;
    for (size_t i = 0; i < vn; i++)
        b->vocab[i] = (sx_vocab_slot){0, -1};
    for (size_t i = 0; i < mn; i++)
        b->merges[i].key = UINT64_MAX;
    b->vocab_mask = vn - 1;
    b->merge_mask = mn - 1;
    b->merge_shift = 64 - mb;
    b->n_ids = n_ids;
    return SX_OK;
}

void sx_bpe_fini(sx_bpe *b)
{
    free(b->vocab);
    free(b->merges);
    free((void *)b->memo);
    free(b->produced);
    sx_wcache_fini(&b->cache);
    memset(b, 0, sizeof *b);
}

int32_t sx_bpe_find(const sx_bpe *b, const void *p, size_t n)
{
    return sx_bpe_find_h(b, p, n, sx_hash_bytes(p, n));
}

int32_t sx_bpe_find_h(const sx_bpe *b, const void *p, size_t n, uint64_t h)
{
    uint32_t h32 = (uint32_t)h;
    for (uint64_t i = h >> 32;; i++) {
        const sx_vocab_slot *s = &b->vocab[i & b->vocab_mask];
        if (s->id < 0)
            return -1;
        if (s->hash == h32 && b->len[s->id] == n && !memcmp(b->bytes + b->off[s->id], p, n))
            return s->id;
    }
}

int sx_bpe_add_vocab(sx_bpe *b, int32_t id)
{
    const char *p = b->bytes + b->off[id];
    size_t n = b->len[id];
    uint64_t h = sx_hash_bytes(p, n);
    for (uint64_t i = h >> 32;; i++) {
        sx_vocab_slot *s = &b->vocab[i & b->vocab_mask];
        if (s->id < 0) {
            s->hash = (uint32_t)h;
            s->id = id;
            return SX_OK;
        }
        if (s->hash == (uint32_t)h && b->len[s->id] == n && !memcmp(b->bytes + b->off[s->id], p, n))
            return SX_EFORMAT;
    }
}

void sx_bpe_add_merge(sx_bpe *b, int32_t left, int32_t right, int32_t id, uint32_t rank)
{
    uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    for (uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> b->merge_shift;; i++) {
        sx_merge_slot *s = &b->merges[i & b->merge_mask];
        if (s->key == key) {
            /* the pair again: the later line wins, and if it names another
             * token two ids come from this pair */
            if (s->id != id)
                b->ambiguous = 1;
            s->rank = rank;
            s->id = id;
            return;
        }
        if (s->key == UINT64_MAX) {
            s->key = key;
            s->rank = rank;
            s->id = id;
            b->n_merges++;
            if (b->produced[id])
                b->ambiguous = 1;
            b->produced[id] = 1;
            return;
        }
    }
}
