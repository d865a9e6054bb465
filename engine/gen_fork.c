/* sx_gen's n choices: requests over one prompt (sx_gen_params.fork_of)
 * share its prefill.  The leader runs as any request; each follower is
 * admitted beside it but holds no engine sequence until the leader's KV
 * covers all but the last prompt token, then forks it there and runs that
 * last token itself, so that it gets its own logits row to sample from
 * (one token of prefill per follower instead of the whole prompt).  The
 * fork is taken as soon as the leader's prefill gets that far -- the
 * engine forks any prefix of a live sequence, so the leader never waits --
 * or, at the latest, while the leader finishes.  A follower that cannot
 * fork (its leader ended first, or no engine sequence is free) prefills on
 * its own: sharing is a saving, never a condition. */
#include "engine/gen_internal.h"

static int join(sx_gen *g, gen_seq *s, const gen_seq *gone);

/* f goes on without its leader (gone): following another request in
 * flight when rejoin and one shares its prefix, else with its own engine
 * sequence (and the prefix cache) when it was already admitted, else as a
 * queued request. */
static void detach(sx_gen *g, gen_seq *f, const gen_seq *gone, int rejoin)
{
    f->leader = NULL;
    f->joined = 0;
    if (f->state != GS_FORKWAIT)
        return;
    /* the first of several followers let go prefills, the others follow it */
    if (rejoin && join(g, f, gone))
        return;
    while (gen_prefix_admit(g, f) && gen_prefix_evict(g))
        ;
    if (f->kv >= 0) {
        f->state = GS_PREFILL;
        return;
    }
    /* no engine sequence free: wait in the queue, giving its room back;
     * its own followers must not hold room waiting for it meanwhile */
    g->kv_reserved -= f->held;
    f->held = 0;
    f->state = GS_QUEUED;
    for (gen_seq *s = g->head; s; s = s->next)
        if (s->leader == f && s->state == GS_FORKWAIT)
            detach(g, s, f, 1);
}

static void fork_one(sx_gen *g, gen_seq *l, gen_seq *f)
{
    int at = f->fork_at, kv = -1, rc, P = f->p.prefix_len;
    while ((rc = sx_backend_seq_fork(g->e, l->kv, at, &kv, NULL)) && gen_prefix_evict(g))
        ; /* no free engine sequence: a cached prefix holds one */
    if (rc) { /* another fork would fail alike: go on alone or queue */
        detach(g, f, l, 0);
        return;
    }
    f->leader = NULL;
    f->kv = kv;
    f->n_fed = f->n_cached = at;
    /* a named prefix beyond the fork point is kept once prefilled, as
     * gen_prefix_admit would have arranged */
    f->cache_at = P > at && P < f->n_prompt ? P : 0;
    f->state = GS_PREFILL;
    if (f->joined) {
        f->joined = 0;
        g->pstats.hits++;
        g->pstats.joins++;
        g->pstats.cached_tokens += at;
    }
}

static int can_fork(const gen_seq *l, int at)
{
    return l->kv >= 0 && l->n_fed >= at && (l->state == GS_PREFILL || l->state == GS_DECODE);
}

/* 1 when d waits, directly or through others, for s */
static int follows(const gen_seq *d, const gen_seq *s)
{
    for (; d; d = d->leader)
        if (d == s)
            return 1;
    return 0;
}

/* How far d's KV is or will be when it starts prefilling: waiting for the
 * one further on is shorter. */
static int progress(const gen_seq *d)
{
    return d->state == GS_FORKWAIT ? d->fork_at : d->n_fed;
}

static int join(sx_gen *g, gen_seq *s, const gen_seq *gone)
{
    /* at least the last prompt token is run: its logits are the first sample's */
    int n = s->n_prompt - 1, L = 0;
    gen_seq *best = NULL;
    if (g->o.prefix_cache_tokens <= 0)
        return 0; /* prefix sharing is off */
    for (gen_seq *d = g->head; d; d = d->next) {
        /* a request that is itself waiting will prefill in its turn, so
         * it may be followed too -- unless that closes a loop of waits */
        int live = (d->kv >= 0 && (d->state == GS_PREFILL || d->state == GS_DECODE)) ||
                   (d->state == GS_FORKWAIT && d->leader);
        if (!live || d->cancelled || follows(d, s) || (gone && follows(d, gone)))
            continue;
        int c = gen_common(d->prompt, d->n_prompt, s->prompt, n);
        if (c > L || (c == L && best && progress(d) > progress(best))) {
            best = d;
            L = c;
        }
    }
    /* not worth a wait unless it saves more than the cache does */
    if (!best || L - gen_prefix_match(g, s->prompt, n) < GEN_PREFIX_MIN)
        return 0;
    s->leader = best;
    s->fork_at = L;
    s->joined = 1;
    return 1;
}

void gen_forks(sx_gen *g)
{
    for (gen_seq *s = g->head; s; s = s->next) {
        if (s->state != GS_FORKWAIT)
            continue;
        if (!s->leader)
            detach(g, s, NULL, 1);
        else if (can_fork(s->leader, s->fork_at))
            fork_one(g, s->leader, s);
    }
}

void gen_fork_release(sx_gen *g, gen_seq *l)
{
    for (gen_seq *s = g->head; s; s = s->next) {
        if (s->leader != l)
            continue;
        if (s->state == GS_FORKWAIT && can_fork(l, s->fork_at))
            fork_one(g, l, s);
        else
            detach(g, s, l, 1);
    }
}

int gen_join(sx_gen *g, gen_seq *s)
{
    return join(g, s, NULL);
}
