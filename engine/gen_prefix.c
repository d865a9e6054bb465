/* sx_gen's prefix cache: the KV of prompts that later requests may start
 * the same way (a system turn with the instructions and the schema, a
 * document asked under several schemas, earlier turns of a chat, few-shot
 * examples), kept as engine sequences.  A request forks the entry sharing
 * the longest prefix with its prompt -- any length: the engine shares the
 * full blocks and copies the partial one -- and prefills only the rest.
 *
 * Two things are kept: the prefix a request names (prefix_len: its system
 * turn) once prefilled, and every whole prompt once prefilled.  An entry
 * that is a prefix of a newer one is dropped (the newer one answers for
 * it), so entries are distinct branches of one tree of prompts, their
 * common blocks shared by the engine's reference counts.  At most
 * GEN_PREFIXES entries (each holds an engine sequence) and
 * opts.prefix_cache_tokens tokens; least recently used out first; they
 * count against the KV reservation like requests do, and give way to
 * requests when the cache is short.  A prefix still being prefilled by a
 * request in flight is shared too, by waiting for it (gen_join,
 * gen_fork.c). */
#include <stdlib.h>
#include <string.h>
#include "engine/gen_internal.h"

int gen_common(const int32_t *a, int na, const int32_t *b, int nb)
{
    int n = na < nb ? na : nb, i = 0;
    while (i + 16 <= n && !memcmp(a + i, b + i, 16 * sizeof *a))
        i += 16;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* The entry sharing the longest prefix with t[0..n); its length in *len. */
static gen_prefix *longest(sx_gen *g, const int32_t *t, int n, int *len)
{
    gen_prefix *best = NULL;
    *len = 0;
    for (int i = 0; i < g->n_prefixes; i++) {
        int c = gen_common(g->prefixes[i].tokens, g->prefixes[i].len, t, n);
        if (c > *len) {
            *len = c;
            best = &g->prefixes[i];
        }
    }
    return best;
}

int gen_prefix_match(sx_gen *g, const int32_t *t, int n)
{
    int L;
    longest(g, t, n, &L);
    return L;
}

static void drop(sx_gen *g, int i)
{
    gen_prefix *p = &g->prefixes[i];
    sx_backend_seq_free(g->e, p->kv);
    g->kv_reserved -= p->len;
    g->prefix_tokens -= p->len;
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
    g->pstats.evictions++;
    return 1;
}

void gen_prefix_free_all(sx_gen *g)
{
    while (g->n_prefixes)
        drop(g, 0);
}

int gen_prefix_admit(sx_gen *g, gen_seq *s)
{
    int P = s->p.prefix_len, L;
    s->kv = -1;
    s->n_cached = 0;
    s->cache_at = 0;
    /* at least the last prompt token is run: its logits are the first sample's */
    gen_prefix *hit = longest(g, s->prompt, s->n_prompt - 1, &L);
    if (hit && (L >= GEN_PREFIX_MIN || (P > 0 && L >= P)) &&
        sx_backend_seq_fork(g->e, hit->kv, L, &s->kv, NULL) == SX_OK) {
        hit->used = ++g->clock;
        s->n_fed = s->n_cached = L;
        g->pstats.hits++;
        g->pstats.cached_tokens += L;
    } else {
        L = 0;
        g->pstats.misses++;
    }
    if (P > L && P < s->n_prompt)
        s->cache_at = P;
    return s->kv >= 0 ? SX_OK : sx_backend_seq_new(g->e, &s->kv, NULL);
}

/* Keeps engine sequence kv (holding exactly t[0..P)) as an entry, in
 * place of the entries it extends; it is freed instead when there is no
 * room.  The entry or NULL. */
static gen_prefix *keep(sx_gen *g, const int32_t *t, int P, int kv)
{
    for (int i = 0; i < g->n_prefixes;)
        if (g->prefixes[i].len <= P &&
            gen_common(g->prefixes[i].tokens, g->prefixes[i].len, t, P) == g->prefixes[i].len)
            drop(g, i);   /* covered by the new one */
        else
            i++;
    if (P > g->o.prefix_cache_tokens) {
        sx_backend_seq_free(g->e, kv);
        return NULL;
    }
    while (g->n_prefixes && (g->n_prefixes == GEN_PREFIXES ||
                             g->prefix_tokens + P > g->o.prefix_cache_tokens))
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
    *p = (gen_prefix){.tokens = copy, .len = P, .kv = kv, .used = ++g->clock};
    g->kv_reserved += P;
    g->prefix_tokens += P;
    return p;
}

/* Keeps the first P tokens of s (prefilled that far) unless an entry
 * already holds them. */
static void store(sx_gen *g, gen_seq *s, int P)
{
    int L, kv;
    if (P <= 0 || g->o.prefix_cache_tokens <= 0)
        return;
    longest(g, s->prompt, P, &L);
    if (L == P)
        return; /* held already (another request stored it meanwhile) */
    if (sx_backend_seq_fork(g->e, s->kv, P, &kv, NULL) == SX_OK)
        keep(g, s->prompt, P, kv);
}

void gen_prefix_store(sx_gen *g, gen_seq *s)
{
    int P = s->cache_at;
    s->cache_at = 0;
    store(g, s, P);
}

void gen_prefix_store_prompt(sx_gen *g, gen_seq *s)
{
    if (s->n_prompt >= GEN_PREFIX_MIN)
        store(g, s, s->n_prompt);
}

int sx_gen_prefix_seq(sx_gen *g, const int32_t *prompt, int n_prompt, int P, int *seq,
                      sx_error *err)
{
    *seq = -1;
    if (P <= 0 || P >= n_prompt)
        return SX_OK;
    int L;
    gen_prefix *hit = longest(g, prompt, P, &L);
    if (L < P) {
        int kv;
        g->pstats.misses++;
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
        if (!(hit = keep(g, prompt, P, kv)))
            return SX_OK;
    } else {
        g->pstats.hits++;
        g->pstats.cached_tokens += P;
    }
    hit->used = ++g->clock;
    return sx_backend_seq_fork(g->e, hit->kv, P, seq, err);
}

void sx_gen_prefix_stats_get(const sx_gen *g, sx_gen_prefix_stats *out)
{
    *out = g->pstats;
    out->entries = g->n_prefixes;
    out->tokens = g->prefix_tokens;
}
