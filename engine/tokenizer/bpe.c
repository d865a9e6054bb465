/* Byte-pair encoding of one pre-token, exact to Hugging Face `tokenizers`.
 *
 * Hugging Face merges with a min-heap of (rank, position) entries and skips
 * an entry when the pair now at its position no longer merges into the
 * entry's token.  sx_bpe_merge_heap mirrors that loop step for step.  When
 * every merged token comes from exactly one pair (true of trained
 * vocabularies; checked at load), the heap always pops the lowest-ranked,
 * leftmost pair among the current neighbours, so for short words a plain
 * scan for that pair (sx_bpe_merge_scan) gives the same result faster. */
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"

#define SCAN_MAX 64 /* longest pre-token merged by the scan loop */

struct sx_bpe_heap_item {
    uint32_t rank, pos;
    int32_t id;
};

static int reserve(sx_ids *out, size_t more)
{
    if (out->cap - out->n >= more)
        return SX_OK;
    size_t cap = out->cap ? out->cap : 64;
    while (cap - out->n < more)
        cap *= 2;
    int32_t *v = realloc(out->v, cap * sizeof *v);
    if (!v)
        return SX_ENOMEM;
    out->v = v;
    out->cap = cap;
    return SX_OK;
}

static int scratch_grow(sx_bpe_scratch *s, size_t n)
{
    if (s->cap >= n && s->heap_cap >= 3 * n)
        return SX_OK;
    size_t cap = s->cap < 256 ? 256 : s->cap;
    while (cap < n)
        cap *= 2;
    int32_t *sym = realloc(s->sym, cap * sizeof *sym);
    if (sym)
        s->sym = sym;
    int32_t *prev = realloc(s->prev, cap * sizeof *prev);
    if (prev)
        s->prev = prev;
    int32_t *next = realloc(s->next, cap * sizeof *next);
    if (next)
        s->next = next;
    uint32_t *size = realloc(s->size, cap * sizeof *size);
    if (size)
        s->size = size;
    struct sx_bpe_heap_item *heap = realloc(s->heap, 3 * cap * sizeof *heap);
    if (heap)
        s->heap = heap;
    if (!sym || !prev || !next || !size || !heap)
        return SX_ENOMEM;
    s->cap = cap;
    s->heap_cap = 3 * cap;
    return SX_OK;
}

void sx_bpe_scratch_free(sx_bpe_scratch *s)
{
    free(s->sym);
    free(s->prev);
    free(s->next);
    free(s->size);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

static int heap_less(const struct sx_bpe_heap_item *a, const struct sx_bpe_heap_item *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(struct sx_bpe_heap_item *h, size_t *n, struct sx_bpe_heap_item it)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&it, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = it;
}

static struct sx_bpe_heap_item heap_pop(struct sx_bpe_heap_item *h, size_t *n)
{
    struct sx_bpe_heap_item top = h[0], last = h[--*n];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && heap_less(&h[c + 1], &h[c]))
            c++;
        if (!heap_less(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (m)
        h[i] = last;
    return top;
}

static void push_pair(const sx_bpe *b, sx_bpe_scratch *s, size_t *hn, int32_t pos)
{
    const sx_merge_slot *m = sx_bpe_merge(b, s->sym[pos], s->sym[s->next[pos]]);
    if (m)
        heap_push(s->heap, hn, (struct sx_bpe_heap_item){m->rank, (uint32_t)pos, m->id});
}

int sx_bpe_merge_heap(const sx_bpe *b, const unsigned char *w, size_t n, sx_bpe_scratch *s,
                      sx_ids *out)
{
    if (n == 0)
        return SX_OK;
    if (scratch_grow(s, n) || reserve(out, n))
        return SX_ENOMEM;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        s->sym[i] = b->byte_id[w[i]];
        s->prev[i] = (int32_t)i - 1;
        s->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
        s->size[i] = 1;
    }
    for (size_t i = 0; i + 1 < n; i++)
        push_pair(b, s, &hn, (int32_t)i);
    while (hn) {
        struct sx_bpe_heap_item top = heap_pop(s->heap, &hn);
        int32_t pos = (int32_t)top.pos;
        if (s->size[pos] == 0 || s->next[pos] < 0)
            continue;
        int32_t r = s->next[pos];
        const sx_merge_slot *m = sx_bpe_merge(b, s->sym[pos], s->sym[r]);
        if (!m || m->id != top.id)
            continue; /* stale entry */
        s->sym[pos] = top.id;
        s->size[pos] += s->size[r];
        s->size[r] = 0;
        s->next[pos] = s->next[r];
        if (s->next[r] >= 0)
            s->prev[s->next[r]] = pos;
        if (s->prev[pos] >= 0)
            push_pair(b, s, &hn, s->prev[pos]);
        if (s->next[pos] >= 0)
            push_pair(b, s, &hn, pos);
    }
    for (int32_t i = 0; i >= 0; i = s->next[i])
        out->v[out->n++] = s->sym[i];
    return SX_OK;
}

int sx_bpe_merge_scan(const sx_bpe *b, const unsigned char *w, size_t n, sx_bpe_scratch *s,
                      sx_ids *out)
{
    int32_t sym[SCAN_MAX], nid[SCAN_MAX];
    uint32_t rank[SCAN_MAX];
    if (n > SCAN_MAX)
        return sx_bpe_merge_heap(b, w, n, s, out);
    if (reserve(out, n))
        return SX_ENOMEM;
    for (size_t i = 0; i < n; i++)
        sym[i] = b->byte_id[w[i]];
    for (size_t i = 0; i + 1 < n; i++) {
        const sx_merge_slot *m = sx_bpe_merge(b, sym[i], sym[i + 1]);
        rank[i] = m ? m->rank : UINT32_MAX;
        nid[i] = m ? m->id : -1;
    }
    size_t m = n;
    while (m > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < m; i++)
            if (rank[i] < rank[best])
                best = i;
        if (rank[best] == UINT32_MAX)
            break;
        sym[best] = nid[best];
        /* drop symbol best+1 and the pair that started there */
        for (size_t i = best + 1; i + 1 < m; i++) {
            sym[i] = sym[i + 1];
            rank[i] = rank[i + 1];
            nid[i] = nid[i + 1];
        }
        m--;
        if (best + 1 < m) {
            const sx_merge_slot *ms = sx_bpe_merge(b, sym[best], sym[best + 1]);
            rank[best] = ms ? ms->rank : UINT32_MAX;
            nid[best] = ms ? ms->id : -1;
        }
        if (best > 0) {
            const sx_merge_slot *ms = sx_bpe_merge(b, sym[best - 1], sym[best]);
            rank[best - 1] = ms ? ms->rank : UINT32_MAX;
            nid[best - 1] = ms ? ms->id : -1;
        }
    }
    memcpy(out->v + out->n, sym, m * sizeof *sym);
    out->n += m;
    return SX_OK;
}

int sx_bpe_word(const sx_bpe *b, const unsigned char *w, size_t n, sx_bpe_scratch *s,
                sx_ids *out)
{
    int32_t cached[SX_WC_MAXIDS];
    if (n == 1) {
        if (reserve(out, 1))
            return SX_ENOMEM;
        out->v[out->n++] = b->byte_id[w[0]];
        return SX_OK;
    }
    uint64_t h = sx_hash_bytes(w, n);
    if (n <= SX_WC_MAXW) {
        int k = sx_wcache_get(&b->cache, h, w, n, cached);
        if (k > 0) {
            if (reserve(out, (size_t)k))
                return SX_ENOMEM;
            memcpy(out->v + out->n, cached, (size_t)k * sizeof *cached);
            out->n += (size_t)k;
            return SX_OK;
        }
    }
    int32_t t = sx_bpe_find_h(b, w, n, h);
    uint8_t memo = 0;
    size_t start = out->n;
    int rc = SX_OK;
    if (t >= 0)
        memo = b->ignore_merges ? 1 : atomic_load_explicit(&b->memo[t], memory_order_relaxed);
    if (memo == 1) {
        if (reserve(out, 1))
            return SX_ENOMEM;
        out->v[out->n++] = t;
    } else {
        rc = (b->ambiguous || n > SCAN_MAX) ? sx_bpe_merge_heap(b, w, n, s, out)
                                            : sx_bpe_merge_scan(b, w, n, s, out);
        if (rc == SX_OK && t >= 0 && memo == 0)
            atomic_store_explicit(&b->memo[t],
                                  (out->n == start + 1 && out->v[start] == t) ? 1 : 2,
                                  memory_order_relaxed);
    }
    if (rc == SX_OK && n <= SX_WC_MAXW)
        sx_wcache_put(&b->cache, h, w, n, out->v + start, out->n - start);
    return rc;
}
