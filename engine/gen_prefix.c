/* sx_gen's prefix cache: the KV of prompt prefixes that many requests share
 * (a system turn with the instructions and the schema), kept as engine
 * sequences and forked by later requests, which share its full blocks and
 * prefill only the rest of their prompt.  A handful of entries, least
 * recently used out first; they count against the KV reservation like
 * requests do, and give way to requests when the cache is short. */
#include <stdlib.h>
#include <string.h>
#include "engine/gen_internal.h"

static uint64_t hash_tokens(const int32_t *t, int n)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < n; i++) {
        h ^= (uint32_t)t[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static gen_prefix *find(sx_gen *g, const int32_t *t, int n, uint64_t h)
{
    for (int i = 0; i < g->n_prefixes; i++) {
        gen_prefix *p = &g->prefixes[i];
        if (p->len == n && p->hash == h && !memcmp(p->tokens, t, (size_t)n * sizeof *t))
            return p;
    }
    return NULL;
}

static void drop(sx_gen *g, int i)
{
    gen_prefix *p = &g->prefixes[i];
    sx_engine_seq_free(g->e, p->kv);
    g->kv_reserved -= p->len;
    free(p->tokens);
    g->prefixes[i] = g->prefixes[--g->n_prefixes];
}

int gen_prefix_evict(sx_gen *g)
{
    if (g->n_prefixes == 0)
        return 0;
    int lru = 0;
    for (int i = 1; i < g->n_prefixes; i++)
        if (g->prefixes[i].used < g->prefixes[lru].used)
            lru = i;
    drop(g, lru);
    return 1;
}

void gen_prefix_free_all(sx_gen *g)
{
    while (g->n_prefixes)
        drop(g, 0);
}

int gen_prefix_admit(sx_gen *g, gen_seq *s)
{
    int P = s->p.prefix_len;
    s->kv = -1;
    s->n_cached = 0;
    s->cache_at = 0;
    if (P > 0 && P < s->n_prompt) {
        gen_prefix *hit = find(g, s->prompt, P, hash_tokens(s->prompt, P));
        if (hit && sx_engine_seq_fork(g->e, hit->kv, P, &s->kv, NULL) == SX_OK) {
            hit->used = ++g->clock;
            s->n_fed = s->n_cached = P;
            return SX_OK;
        }
        if (!hit)
            s->cache_at = P;
    }
    return sx_engine_seq_new(g->e, &s->kv, NULL);
}

void gen_prefix_store(sx_gen *g, gen_seq *s)
{
    int P = s->cache_at;
    s->cache_at = 0;
    uint64_t h = hash_tokens(s->prompt, P);
    if (find(g, s->prompt, P, h))
        return; /* another request stored it meanwhile */
    if (g->n_prefixes == GEN_PREFIXES)
        gen_prefix_evict(g);
    /* only with room to spare: requests come first */
    if (g->kv_reserved + P > g->kv_capacity)
        return;
    int32_t *t = malloc((size_t)P * sizeof *t);
    int kv;
    if (!t || sx_engine_seq_fork(g->e, s->kv, P, &kv, NULL)) {
        free(t);
        return;
    }
    memcpy(t, s->prompt, (size_t)P * sizeof *t);
    gen_prefix *p = &g->prefixes[g->n_prefixes++];
    *p = (gen_prefix){.tokens = t, .len = P, .kv = kv, .hash = h, .used = ++g->clock};
    g->kv_reserved += P;
}
