/* sx_rpc_cache: see schema_cache.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "rpc/schema_cache.h"

typedef struct entry {
    sx_rpc_compiled c;          /* first: holders see only this */
    uint64_t        hash;
    uint64_t        kind;       /* mode and layout (kind_of) */
    char           *key;
    size_t          key_len;
    int             refs;
    int             resident;   /* in the table and the LRU list */
    /* The grammar's cancel flag.  The grammar keeps the pointer (grammar.h:
     * a matcher made from it starts with it), so it lives as long as the
     * grammar, here, and is 0 once the compile is over. */
    volatile int    gr_cancel;
    struct entry   *prev, *next; /* LRU, most recent at head */
    struct entry   *hnext;       /* bucket chain */
} entry;

/* A compile in flight (see schema_cache.h).  It owns a copy of what it
 * compiles: its requests may be gone before it ends. */
enum { F_QUEUED, F_RUNNING };
typedef struct flight {
    struct sx_rpc_cache *c;
    uint64_t          hash;
    int               mode;
    uint64_t          kind;        /* mode and layout (kind_of) */
    sx_rpc_layout     layout;
    char             *key;
    size_t            key_len;
    json_t           *schema;      /* SCHEMA */
    char            **choices;     /* CHOICES */
    size_t            n_choices;
    char             *regex;       /* REGEX */
    size_t            regex_len;
    sx_rpc_cache_wait *waiters;
    int               n_waiters;
    int               state, abandoned;
    volatile int     *cancel;      /* the running compile's flag (its entry's), or NULL */
    double            t_queued, t_start, deadline_ms, cap_ms;
    struct flight    *next;        /* c->flights */
} flight;

struct sx_rpc_cache {
    const sx_vocab   *v;
    sx_gr_opts        opts;
    /* compiles in flight, oldest first; counts under mu */
    flight           *flights;
    int               threads, max_abandoned;
    double            max_ms;
    int               n_running, n_abandoned, n_threads, closing;
    pthread_cond_t    idle_cv;    /* n_threads fell */
    size_t            max_bytes, bytes;
    entry           **buckets;
    size_t            n_buckets, n_entries;
    entry            *head, *tail;
    sx_rpc_cache_stats st;
    pthread_mutex_t   mu;
};

/* What besides the constraint text tells compiles apart: the mode and the
 * request's own layout (a grammar for {"a":1} compact is not the one for
 * it indented).  Unset layout parts are 0, so requests that set none share
 * the server-layout entry. */
static uint64_t kind_of(const sx_rpc_req *r)
{
    const sx_rpc_layout *l = &r->layout;
    uint64_t k = (uint64_t)(unsigned)r->mode;
    if (l->has & SX_RPC_LAY_WS)
        k |= (uint64_t)(1 + (unsigned)l->ws_mode) << 8;
    if (l->has & SX_RPC_LAY_MAXWS)
        k |= (uint64_t)(1 + (unsigned)l->max_ws) << 12;
    if (l->has & SX_RPC_LAY_INDENT)
        k |= (uint64_t)(unsigned)l->indent << 20;
    if (l->has & SX_RPC_LAY_ORDER)
        k |= (uint64_t)(1 + (unsigned)l->prop_order) << 28;
    return k;
}

static uint64_t fnv1a(uint64_t kind, const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 64; i += 8)
        h = (h ^ ((kind >> i) & 0xff)) * 1099511628211ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ull;
    return h;
}

uint64_t sx_rpc_key_hash(const sx_rpc_req *r)
{
    return fnv1a(kind_of(r), r->key ? r->key : "", r->key ? r->key_len : 0);
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
    c->threads = 2;
    c->max_abandoned = 4;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->idle_cv, NULL);
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

void sx_rpc_cache_set_compile(sx_rpc_cache *c, int threads, double max_ms, int max_abandoned)
{
    pthread_mutex_lock(&c->mu);
    c->threads = threads > 0 ? threads : 2;
    c->max_ms = max_ms > 0 ? max_ms : 0;
    c->max_abandoned = max_abandoned > 0 ? max_abandoned : 4;
    pthread_mutex_unlock(&c->mu);
}

void sx_rpc_cache_free(sx_rpc_cache *c)
{
    if (!c)
        return;
    sx_rpc_cache_quiesce(c, 0);
    pthread_mutex_lock(&c->mu);
    while (c->n_threads > 0)
        pthread_cond_wait(&c->idle_cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&c->idle_cv);
    for (entry *e = c->head, *n; e; e = n) {
        n = e->next;
        entry_free(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c->buckets);
    free(c);
}

static entry *find(sx_rpc_cache *c, uint64_t h, uint64_t kind, const char *key, size_t len)
{
    for (entry *e = c->buckets[h & (c->n_buckets - 1)]; e; e = e->hnext)
        if (e->hash == h && e->kind == kind && e->key_len == len && !memcmp(e->key, key, len))
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

static int compile(sx_rpc_cache *c, flight *f, entry *e, sx_error *err)
{
    /* The deadline travels as the cancel flag (sx_rpc_cache_tick), not as
     * deadline_ms: the grammar keeps both for the matchers made from it,
     * and a cached grammar serves requests long after this one's deadline. */
    sx_gr_opts o = c->opts;
    const sx_rpc_layout *l = &f->layout;
    if (l->has & SX_RPC_LAY_WS)
        o.ws_mode = l->ws_mode;
    if (l->has & SX_RPC_LAY_MAXWS)
        o.max_ws = l->max_ws;
    if (l->has & SX_RPC_LAY_INDENT)
        o.indent = l->indent;
    if (l->has & SX_RPC_LAY_ORDER)
        o.prop_order = l->prop_order;
    o.deadline_ms = 0;
    o.cancel = &e->gr_cancel;
    int rc = SX_OK;
    switch (f->mode) {
    case SX_RPC_SCHEMA:
        /* the validator first: it names malformed keywords most precisely,
         * and every output is re-checked with it anyway */
        if ((rc = sx_val_compile(f->schema, NULL, &e->c.validator, err)))
            return rc;
        return sx_gr_compile_json(c->v, f->schema, &o, &e->c.grammar, err);
    case SX_RPC_CHOICES:
        return sx_gr_compile_choices(c->v, (const char *const *)f->choices, f->n_choices, &o,
                                     &e->c.grammar, err);
    case SX_RPC_REGEX:
        return sx_gr_compile_regex(c->v, f->regex, f->regex_len, &o, &e->c.grammar, err);
    case SX_RPC_JSON_OBJECT:
        return sx_gr_compile_json_object(c->v, &o, &e->c.grammar, err);
    default:
        return sx_err_set(err, SX_EINVAL, "a free-text request has nothing to compile");
    }
}

static void flight_free(flight *f)
{
    if (!f)
        return;
    json_decref(f->schema);
    for (size_t i = 0; i < f->n_choices; i++)
        free(f->choices[i]);
    free(f->choices);
    free(f->regex);
    free(f->key);
    free(f);
}

/* A copy of what r asks to compile (r's request may be answered first). */
static flight *flight_new(sx_rpc_cache *c, const sx_rpc_req *r, uint64_t h)
{
    flight *f = calloc(1, sizeof *f);
    if (!f || !(f->key = malloc(r->key_len + 1)))
        goto fail;
    f->c = c;
    f->hash = h;
    f->mode = r->mode;
    f->kind = kind_of(r);
    f->layout = r->layout;
    memcpy(f->key, r->key ? r->key : "", r->key_len);
    f->key[r->key_len] = 0;
    f->key_len = r->key_len;
    if (r->mode == SX_RPC_SCHEMA && !(f->schema = json_deep_copy(r->schema)))
        goto fail;
    if (r->mode == SX_RPC_CHOICES) {
        if (!(f->choices = calloc(r->n_choices ? r->n_choices : 1, sizeof *f->choices)))
            goto fail;
        for (; f->n_choices < r->n_choices; f->n_choices++)
            if (!(f->choices[f->n_choices] = strdup(r->choices[f->n_choices])))
                goto fail;
    }
    if (r->mode == SX_RPC_REGEX) {
        if (!(f->regex = malloc(r->regex_len + 1)))
            goto fail;
        memcpy(f->regex, r->regex, r->regex_len);
        f->regex[r->regex_len] = 0;
        f->regex_len = r->regex_len;
    }
    return f;
fail:
    flight_free(f);
    return NULL;
}

static flight *flight_find(sx_rpc_cache *c, uint64_t h, uint64_t kind, const char *key,
                           size_t len)
{
    for (flight *f = c->flights; f; f = f->next)
        if (f->hash == h && f->kind == kind && f->key_len == len && !memcmp(f->key, key, len))
            return f;
    return NULL;
}

static void flight_unlink(sx_rpc_cache *c, flight *f)
{
    flight **p = &c->flights;
    while (*p != f)
        p = &(*p)->next;
    *p = f->next;
    f->next = NULL;
}

/* Under mu: the grammar's deadline for a run of f starting now -- the
 * latest of its waiters' (one without a deadline: none), capped. */
static void flight_arm(sx_rpc_cache *c, flight *f, double now)
{
    double d = -1;
    for (sx_rpc_cache_wait *w = f->waiters; w; w = w->next)
        if (w->deadline_ms <= 0)
            d = 0;
        else if (d != 0 && w->deadline_ms > d)
            d = w->deadline_ms;
    if (d < 0)
        d = 0;
    f->t_start = now;
    f->cap_ms = c->max_ms > 0 ? now + c->max_ms : 0;
    if (f->cap_ms > 0 && (d == 0 || d > f->cap_ms))
        d = f->cap_ms;
    f->deadline_ms = d;
}

/* Under mu: tells the compile running for f to stop (1) or go on (0). */
static void flight_signal(flight *f, int stop)
{
    if (f->cancel)
        *f->cancel = stop;
}

static void *flight_main(void *arg);

/* Under mu: starts queued flights while fewer than `threads` run for
 * someone (abandoned ones do not count). */
static void start_queued(sx_rpc_cache *c)
{
    for (flight *f = c->flights; f && c->n_running - c->n_abandoned < c->threads; f = f->next) {
        if (f->state != F_QUEUED)
            continue;
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        f->state = F_RUNNING;
        flight_arm(c, f, now_ms());
        int bad = pthread_create(&t, &a, flight_main, f);
        pthread_attr_destroy(&a);
        if (bad) {
            /* stays queued: tried again when a compile ends; its waiters'
             * deadlines bound the wait */
            f->state = F_QUEUED;
            break;
        }
        c->n_running++;
        c->n_threads++;
    }
}

/* Under mu: a compile's result joins the table (or the copy another
 * thread put there first is shared); refs references are handed out. */
static entry *insert(sx_rpc_cache *c, entry *n, int refs)
{
    entry *e = find(c, n->hash, n->kind, n->key, n->key_len);
    if (e) {
        e->refs += refs;
        lru_unlink(c, e);
        lru_push(c, e);
        entry_free(n);
        return e;
    }
    n->refs = refs;
    if (c->n_entries >= c->n_buckets)
        grow(c);
    n->hnext = c->buckets[n->hash & (c->n_buckets - 1)];
    c->buckets[n->hash & (c->n_buckets - 1)] = n;
    lru_push(c, n);
    n->resident = 1;
    c->n_entries++;
    c->bytes += n->c.bytes;
    /* the newest entry stays even when it alone is over the bound: the
     * request is using it, and it is evicted first thing next time */
    while (c->bytes > c->max_bytes && c->tail && c->tail != n)
        evict(c, c->tail);
    if (n->refs == 0)
        while (c->bytes > c->max_bytes && c->tail && c->tail->refs == 0)
            evict(c, c->tail);
    return n;
}

/* The grammar stopped at its deadline or on cancel (grammar.h): not a
 * property of the schema. */
static int gave_up(int rc, const sx_error *err)
{
    return rc == SX_ELIMIT && (strstr(err->msg, "deadline") || strstr(err->msg, "cancelled"));
}

static void *flight_main(void *arg)
{
    flight *f = arg;
    sx_rpc_cache *c = f->c;
    sx_error err;
    entry *n;
    int rc;
    for (;;) {
        sx_err_clear(&err);
        n = calloc(1, sizeof *n);
        if (n && !(n->key = malloc(f->key_len + 1))) {
            free(n);
            n = NULL;
        }
        pthread_mutex_lock(&c->mu);
        if (n) {
            f->cancel = &n->gr_cancel;
            n->gr_cancel = f->abandoned || c->closing ||
                           (f->deadline_ms > 0 && now_ms() >= f->deadline_ms);
        }
        pthread_mutex_unlock(&c->mu);
        if (!n) {
            rc = sx_err_set(&err, SX_ENOMEM, "out of memory");
        } else {
            memcpy(n->key, f->key, f->key_len + 1);
            n->key_len = f->key_len;
            n->hash = f->hash;
            n->c.mode = f->mode;
            n->kind = f->kind;
            double t0 = now_ms();
            rc = compile(c, f, n, &err);
            n->c.compile_ms = now_ms() - t0;
        }
        pthread_mutex_lock(&c->mu);
        f->cancel = NULL;
        if (n)
            n->gr_cancel = 0; /* for the matchers made from this grammar */
        double now = now_ms();
        /* Gave up while someone still waits: run again for them rather
         * than hand them a spurious error -- when it stopped early (the
         * cancel flag of an abandoned compile that a waiter took back), or
         * at a waiter's deadline while a later waiter's is not over; never
         * once the server's cap is reached, nor once every deadline is. */
        int again = 0;
        int at_deadline = f->deadline_ms > 0 && now >= f->deadline_ms - 1;
        if (rc && gave_up(rc, &err) && f->n_waiters > 0 && !c->closing &&
            !(at_deadline && f->cap_ms > 0 && f->deadline_ms >= f->cap_ms))
            for (sx_rpc_cache_wait *w = f->waiters; w; w = w->next)
                if (w->deadline_ms <= 0 || w->deadline_ms > now + 1)
                    again = 1;
        if (again) {
            flight_arm(c, f, now);
            pthread_mutex_unlock(&c->mu);
            if (n)
                entry_free(n);
            continue;
        }
        break;
    }
    /* done: out of the table; the waiters are answered outside the lock */
    flight_unlink(c, f);
    c->n_running--;
    if (f->abandoned)
        c->n_abandoned--;
    sx_rpc_cache_wait *ws = f->waiters;
    f->waiters = NULL;
    for (sx_rpc_cache_wait *w = ws; w; w = w->next)
        w->flight = NULL;
    entry *e = NULL;
    if (rc) {
        if (gave_up(rc, &err))
            c->st.gave_up++;
        else
            c->st.compile_errors++;
        if (n)
            entry_free(n);
    } else {
        n->c.bytes = sizeof *n + sx_gr_mem_bytes(n->c.grammar) + 2 * f->key_len +
                     (n->c.validator ? 8 * f->key_len : 0);
        e = insert(c, n, f->n_waiters);
    }
    start_queued(c);
    pthread_mutex_unlock(&c->mu);

    int how = !rc ? SX_RPC_CACHE_DONE : gave_up(rc, &err) ? SX_RPC_CACHE_GAVE_UP
                                                         : SX_RPC_CACHE_FAILED;
    for (sx_rpc_cache_wait *w = ws, *next; w; w = next) {
        next = w->next; /* w is its owner's once done is called */
        w->done(w, how, e ? &e->c : NULL, &err);
    }
    flight_free(f);
    pthread_mutex_lock(&c->mu);
    c->n_threads--;
    pthread_cond_broadcast(&c->idle_cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int sx_rpc_cache_lookup(sx_rpc_cache *c, const sx_rpc_req *r, sx_rpc_cache_wait *w,
                        const sx_rpc_compiled **out, int *how, sx_error *err)
{
    *out = NULL;
    *how = SX_RPC_CACHE_BUSY;
    const char *key = r->key ? r->key : "";
    uint64_t kind = kind_of(r);
    uint64_t h = fnv1a(kind, key, r->key_len);
    w->next = NULL;
    w->flight = NULL;

    pthread_mutex_lock(&c->mu);
    entry *e = find(c, h, kind, key, r->key_len);
    if (e) {
        e->refs++;
        lru_unlink(c, e);
        lru_push(c, e);
        c->st.hits++;
        pthread_mutex_unlock(&c->mu);
        *how = SX_RPC_CACHE_HIT;
        *out = &e->c;
        return SX_OK;
    }
    c->st.misses++;
    flight *f = flight_find(c, h, kind, key, r->key_len);
    if (f) {
        c->st.merged++;
        if (f->abandoned) {
            /* taken back: should it have seen the flag already, it gives
             * up and runs again for this waiter (flight_main) */
            f->abandoned = 0;
            flight_signal(f, 0);
            c->n_abandoned--;
        }
    } else {
        if (c->n_abandoned >= c->max_abandoned) {
            c->st.refused++;
            int k = c->n_abandoned;
            pthread_mutex_unlock(&c->mu);
            sx_err_set(err, SX_ELIMIT,
                       "%d compiles whose requests gave up are still running; new compiles "
                       "are refused until they end",
                       k);
            return SX_OK;
        }
        pthread_mutex_unlock(&c->mu);
        /* the copy is made outside the lock: schemas may be large */
        flight *nf = flight_new(c, r, h);
        if (!nf)
            return sx_err_set(err, SX_ENOMEM, "out of memory");
        pthread_mutex_lock(&c->mu);
        if ((f = flight_find(c, h, kind, key, r->key_len))) {
            flight_free(nf); /* another request started it meanwhile */
            c->st.merged++;
        } else {
            f = nf;
            f->state = F_QUEUED;
            f->t_queued = now_ms();
            flight **p = &c->flights;
            while (*p)
                p = &(*p)->next;
            *p = f;
        }
    }
    w->next = f->waiters;
    f->waiters = w;
    f->n_waiters++;
    w->flight = f;
    *how = SX_RPC_CACHE_WAIT;
    if (f->state == F_QUEUED)
        start_queued(c);
    pthread_mutex_unlock(&c->mu);
    return SX_OK;
}

int sx_rpc_cache_drop(sx_rpc_cache *c, sx_rpc_cache_wait *w)
{
    flight *gone = NULL;
    pthread_mutex_lock(&c->mu);
    flight *f = w->flight;
    if (!f) {
        pthread_mutex_unlock(&c->mu);
        return 0;
    }
    sx_rpc_cache_wait **p = &f->waiters;
    while (*p != w)
        p = &(*p)->next;
    *p = w->next;
    w->next = NULL;
    w->flight = NULL;
    if (--f->n_waiters == 0) {
        if (f->state == F_QUEUED) {
            flight_unlink(c, f); /* never started: nothing to run for */
            gone = f;
        } else {
            f->abandoned = 1;
            flight_signal(f, 1);
            c->n_abandoned++;
            start_queued(c); /* its slot serves the next compile */
        }
    }
    pthread_mutex_unlock(&c->mu);
    flight_free(gone);
    return 1;
}

void sx_rpc_cache_tick(sx_rpc_cache *c)
{
    double now = now_ms();
    pthread_mutex_lock(&c->mu);
    for (flight *f = c->flights; f; f = f->next)
        if (f->state == F_RUNNING && f->deadline_ms > 0 && now >= f->deadline_ms)
            flight_signal(f, 1);
    pthread_mutex_unlock(&c->mu);
}

int sx_rpc_cache_quiesce(sx_rpc_cache *c, double wait_ms)
{
    flight *dead = NULL;
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    for (flight **p = &c->flights; *p;) {
        flight *f = *p;
        if (f->state == F_QUEUED) {
            *p = f->next;
            f->next = dead;
            dead = f;
        } else {
            flight_signal(f, 1);
            p = &f->next;
        }
    }
    double end = now_ms() + wait_ms;
    while (c->n_threads > 0 && wait_ms > 0) {
        double left = end - now_ms();
        if (left <= 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = (long long)ts.tv_nsec + (long long)(left * 1e6);
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        pthread_cond_timedwait(&c->idle_cv, &c->mu, &ts);
    }
    int k = c->n_threads;
    pthread_mutex_unlock(&c->mu);
    while (dead) {
        flight *f = dead;
        dead = f->next;
        flight_free(f);
    }
    return k;
}

/* sx_rpc_cache_get waits on one of these. */
typedef struct sync_wait {
    sx_rpc_cache_wait       w;
    pthread_mutex_t         mu;
    pthread_cond_t          cv;
    int                     done, how;
    const sx_rpc_compiled  *e;
    sx_error                err;
} sync_wait;

static void sync_done(sx_rpc_cache_wait *w, int how, const sx_rpc_compiled *e,
                      const sx_error *err)
{
    sync_wait *sw = w->user;
    pthread_mutex_lock(&sw->mu);
    sw->how = how;
    sw->e = e;
    if (err)
        sw->err = *err;
    sw->done = 1;
    pthread_cond_signal(&sw->cv);
    pthread_mutex_unlock(&sw->mu);
}

int sx_rpc_cache_get(sx_rpc_cache *c, const sx_rpc_req *r, const sx_rpc_compiled **out,
                     int *hit, sx_error *err)
{
    *out = NULL;
    *hit = 0;
    sync_wait sw;
    memset(&sw, 0, sizeof sw);
    sw.w.done = sync_done;
    sw.w.user = &sw;
    int how, rc;
    sx_err_clear(&sw.err);
    if ((rc = sx_rpc_cache_lookup(c, r, &sw.w, out, &how, err)))
        return rc;
    if (how == SX_RPC_CACHE_HIT) {
        *hit = 1;
        return SX_OK;
    }
    if (how == SX_RPC_CACHE_BUSY)
        return SX_ELIMIT; /* err says why */
    pthread_mutex_init(&sw.mu, NULL);
    pthread_cond_init(&sw.cv, NULL);
    pthread_mutex_lock(&sw.mu);
    while (!sw.done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&sw.cv, &sw.mu, &ts) && !sw.done) {
            pthread_mutex_unlock(&sw.mu);
            sx_rpc_cache_tick(c); /* a cap (max_ms) is enforced here */
            pthread_mutex_lock(&sw.mu);
        }
    }
    pthread_mutex_unlock(&sw.mu);
    pthread_cond_destroy(&sw.cv);
    pthread_mutex_destroy(&sw.mu);
    if (sw.how == SX_RPC_CACHE_DONE) {
        *out = sw.e;
        return SX_OK;
    }
    if (err)
        *err = sw.err;
    return sw.err.code ? sw.err.code : SX_EINTERNAL;
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
    double now = now_ms();
    pthread_mutex_lock(&c->mu);
    *s = c->st;
    s->entries = c->n_entries;
    s->bytes = c->bytes;
    s->max_bytes = c->max_bytes;
    s->running = c->n_running;
    s->abandoned = c->n_abandoned;
    s->queued = 0;
    s->overdue_ms = s->queued_ms = 0;
    for (flight *f = c->flights; f; f = f->next)
        if (f->state == F_QUEUED) {
            s->queued++;
            if (now - f->t_queued > s->queued_ms)
                s->queued_ms = now - f->t_queued;
        } else if (f->deadline_ms > 0 && now - f->deadline_ms > s->overdue_ms) {
            s->overdue_ms = now - f->deadline_ms;
        }
    pthread_mutex_unlock(&c->mu);
}
