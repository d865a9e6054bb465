/* sx_rpc_cache: see schema_cache.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpc/schema_cache.h"

typedef struct entry {
    sx_rpc_compiled c;          /* first: holders see only this */
    uint64_t        hash;
    char           *key;
    size_t          key_len;
    int             refs;
    int             resident;   /* in the table and the LRU list */
    struct entry   *prev, *next; /* LRU, most recent at head */
    struct entry   *hnext;       /* bucket chain */
} entry;

struct sx_rpc_cache {
    const sx_vocab   *v;
    sx_gr_opts        opts;
    size_t            max_bytes, bytes;
    entry           **buckets;
    size_t            n_buckets, n_entries;
    entry            *head, *tail;
    sx_rpc_cache_stats st;
    pthread_mutex_t   mu;
};

static uint64_t fnv1a(int mode, const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    h = (h ^ (uint64_t)(unsigned)mode) * 1099511628211ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ull;
    return h;
}

uint64_t sx_rpc_key_hash(const sx_rpc_req *r)
{
    return fnv1a(r->mode, r->key ? r->key : "", r->key ? r->key_len : 0);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int sx_rpc_cache_new(const sx_vocab *v, const sx_gr_opts *opts, size_t max_bytes,
                     sx_rpc_cache **out, sx_error *err)
{
    *out = NULL;
    sx_rpc_cache *c = calloc(1, sizeof *c);
    if (!c)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    c->n_buckets = 64;
    c->buckets = calloc(c->n_buckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    c->v = v;
    if (opts)
        c->opts = *opts;
    else
        sx_gr_opts_default(&c->opts);
    c->max_bytes = max_bytes;
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return SX_OK;
}

static void entry_free(entry *e)
{
    sx_gr_free(e->c.grammar);
    sx_val_free(e->c.validator);
    free(e->key);
    free(e);
}

void sx_rpc_cache_free(sx_rpc_cache *c)
{
    if (!c)
        return;
    for (entry *e = c->head, *n; e; e = n) {
        n = e->next;
        entry_free(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c->buckets);
    free(c);
}

static entry *find(sx_rpc_cache *c, uint64_t h, int mode, const char *key, size_t len)
{
    for (entry *e = c->buckets[h & (c->n_buckets - 1)]; e; e = e->hnext)
        if (e->hash == h && e->c.mode == mode && e->key_len == len && !memcmp(e->key, key, len))
            return e;
    return NULL;
}

static void lru_unlink(sx_rpc_cache *c, entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push(sx_rpc_cache *c, entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

static void grow(sx_rpc_cache *c)
{
    size_t n = c->n_buckets * 2;
    entry **b = calloc(n, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < c->n_buckets; i++)
        for (entry *e = c->buckets[i], *next; e; e = next) {
            next = e->hnext;
            e->hnext = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    free(c->buckets);
    c->buckets = b;
    c->n_buckets = n;
}

static void evict(sx_rpc_cache *c, entry *e)
{
    entry **p = &c->buckets[e->hash & (c->n_buckets - 1)];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    lru_unlink(c, e);
    e->resident = 0;
    c->bytes -= e->c.bytes;
    c->n_entries--;
    c->st.evictions++;
    if (e->refs == 0)
        entry_free(e);
    else
        c->st.pinned_evicted++;
}

static int compile(sx_rpc_cache *c, const sx_rpc_req *r, entry *e, sx_error *err)
{
    int rc = SX_OK;
    switch (r->mode) {
    case SX_RPC_SCHEMA:
        /* the validator first: it names malformed keywords most precisely,
         * and every output is re-checked with it anyway */
        if ((rc = sx_val_compile(r->schema, NULL, &e->c.validator, err)))
            return rc;
        return sx_gr_compile_json(c->v, r->schema, &c->opts, &e->c.grammar, err);
    case SX_RPC_CHOICES:
        return sx_gr_compile_choices(c->v, r->choices, r->n_choices, &c->opts, &e->c.grammar,
                                     err);
    case SX_RPC_REGEX:
        return sx_gr_compile_regex(c->v, r->regex, r->regex_len, &c->opts, &e->c.grammar, err);
    case SX_RPC_JSON_OBJECT:
        return sx_gr_compile_json_object(c->v, &c->opts, &e->c.grammar, err);
    default:
        return sx_err_set(err, SX_EINVAL, "a free-text request has nothing to compile");
    }
}

int sx_rpc_cache_get(sx_rpc_cache *c, const sx_rpc_req *r, const sx_rpc_compiled **out,
                     int *hit, sx_error *err)
{
    *out = NULL;
    *hit = 0;
    const char *key = r->key ? r->key : "";
    uint64_t h = fnv1a(r->mode, key, r->key_len);

    pthread_mutex_lock(&c->mu);
    entry *e = find(c, h, r->mode, key, r->key_len);
    if (e) {
        e->refs++;
        lru_unlink(c, e);
        lru_push(c, e);
        c->st.hits++;
        pthread_mutex_unlock(&c->mu);
        *hit = 1;
        *out = &e->c;
        return SX_OK;
    }
    c->st.misses++;
    pthread_mutex_unlock(&c->mu);

    entry *n = calloc(1, sizeof *n);
    if (!n || !(n->key = malloc(r->key_len + 1))) {
        free(n);
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    memcpy(n->key, key, r->key_len);
    n->key[r->key_len] = 0;
    n->key_len = r->key_len;
    n->hash = h;
    n->c.mode = r->mode;
    double t0 = now_ms();
    int rc = compile(c, r, n, err);
    n->c.compile_ms = now_ms() - t0;
    if (rc) {
        entry_free(n);
        pthread_mutex_lock(&c->mu);
        c->st.compile_errors++;
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    n->c.bytes = sizeof *n + sx_gr_mem_bytes(n->c.grammar) + 2 * r->key_len +
                 (n->c.validator ? 8 * r->key_len : 0);
    n->refs = 1;

    pthread_mutex_lock(&c->mu);
    e = find(c, h, r->mode, key, r->key_len);
    if (e) {
        /* another thread got there first; share its copy */
        e->refs++;
        lru_unlink(c, e);
        lru_push(c, e);
        pthread_mutex_unlock(&c->mu);
        entry_free(n);
        *out = &e->c;
        return SX_OK;
    }
    if (c->n_entries >= c->n_buckets)
        grow(c);
    n->hnext = c->buckets[h & (c->n_buckets - 1)];
    c->buckets[h & (c->n_buckets - 1)] = n;
    lru_push(c, n);
    n->resident = 1;
    c->n_entries++;
    c->bytes += n->c.bytes;
    /* the newest entry stays even when it alone is over the bound: the
     * request is using it, and it is evicted first thing next time */
    while (c->bytes > c->max_bytes && c->tail && c->tail != n)
        evict(c, c->tail);
    pthread_mutex_unlock(&c->mu);
    *out = &n->c;
    return SX_OK;
}

void sx_rpc_cache_release(sx_rpc_cache *c, const sx_rpc_compiled *ce)
{
    if (!ce)
        return;
    entry *e = (entry *)ce;
    pthread_mutex_lock(&c->mu);
    int gone = --e->refs == 0 && !e->resident;
    if (gone)
        c->st.pinned_evicted--;
    /* an over-sized newest entry leaves once nobody uses it */
    while (c->bytes > c->max_bytes && c->tail && c->tail->refs == 0)
        evict(c, c->tail);
    pthread_mutex_unlock(&c->mu);
    if (gone)
        entry_free(e);
}

void sx_rpc_cache_stats_get(sx_rpc_cache *c, sx_rpc_cache_stats *s)
{
    pthread_mutex_lock(&c->mu);
    *s = c->st;
    s->entries = c->n_entries;
    s->bytes = c->bytes;
    s->max_bytes = c->max_bytes;
    pthread_mutex_unlock(&c->mu);
}
