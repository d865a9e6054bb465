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
    sx_backend_seq_free(g->e, p->kv);
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
        if (hit && sx_backend_seq_fork(g->e, hit->kv, P, &s->kv, NULL) == SX_OK) {
            hit->used = ++g->clock;
            s->n_fed = s->n_cached = P;
            return SX_OK;
        }
        if (!hit)
            s->cache_at = P;
    }
    return sx_backend_seq_new(g->e, &s->kv, NULL);
}

/* Keeps engine sequence kv (holding exactly the prefix t[0..P)) as an
 * entry; it is freed instead when there is no room.  The entry or NULL. */
static gen_prefix *keep(sx_gen *g, const int32_t *t, int P, uint64_t h, int kv)
{
    if (g->n_prefixes == GEN_PREFIXES)
        gen_prefix_evict(g);
    int32_t *copy = malloc((size_t)P * sizeof *copy);
    /* only with room to spare: requests come first */
    if (!copy || g->kv_reserved + P > g->kv_capacity) {
        free(copy);
        sx_backend_seq_free(g->e, kv);
        return NULL;
    }
    memcpy(copy, t, (size_t)P * sizeof *copy);
    gen_prefix *p = &g->prefixes[g->n_prefixes++];
    *p = (gen_prefix){.tokens = copy, .len = P, .kv = kv, .hash = h, .used = ++g->clock};
    g->kv_reserved += P;
    return p;
}

void gen_prefix_store(sx_gen *g, gen_seq *s)
{
    int P = s->cache_at;
    s->cache_at = 0;
    uint64_t h = hash_tokens(s->prompt, P);
    int kv;
    if (find(g, s->prompt, P, h))
        return; /* another request stored it meanwhile */
    if (sx_backend_seq_fork(g->e, s->kv, P, &kv, NULL) == SX_OK)
        keep(g, s->prompt, P, h, kv);
}

int sx_gen_prefix_seq(sx_gen *g, const int32_t *prompt, int n_prompt, int P, int *seq,
                      sx_error *err)
{
    *seq = -1;
    if (P <= 0 || P >= n_prompt)
        return SX_OK;
    uint64_t h = hash_tokens(prompt, P);
    gen_prefix *hit = find(g, prompt, P, h);
    if (!hit) {
        int kv;
        if (sx_backend_seq_new(g->e, &kv, NULL))
            return SX_OK; /* no free sequence: the caller prefills itself */
        float *row = malloc((size_t)g->vocab_rows * sizeof *row);
        int rc = row ? SX_OK : sx_err_set(err, SX_ENOMEM, "out of memory");
        for (int off = 0; !rc && off < P; off += g->o.prefill_chunk) {
            int n = P - off < g->o.prefill_chunk ? P - off : g->o.prefill_chunk;
            sx_step_item it = {.seq = kv, .tokens = prompt + off, .n = n, .logits_all = 0};
            rc = sx_backend_step(g->e, &it, 1, row, err);
        }
        free(row);
        if (rc) {
            sx_backend_seq_free(g->e, kv);
            return rc;
        }
        if (!(hit = keep(g, prompt, P, h, kv)))
            return SX_OK;
    }
    hit->used = ++g->clock;
    return sx_backend_seq_fork(g->e, hit->kv, P, seq, err);
}
