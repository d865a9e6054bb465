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

/* f goes on without its leader: with its own engine sequence (and the
 * prefix cache) when it was already admitted, else as a queued request. */
static void detach(sx_gen *g, gen_seq *f)
{
    f->leader = NULL;
    if (f->state != GS_FORKWAIT)
        return;
    while (gen_prefix_admit(g, f) && gen_prefix_evict(g))
        ;
    if (f->kv >= 0) {
        f->state = GS_PREFILL;
        return;
    }
    /* no engine sequence free: wait in the queue, giving its room back */
    g->kv_reserved -= f->held;
    f->held = 0;
    f->state = GS_QUEUED;
}

static void fork_one(sx_gen *g, gen_seq *l, gen_seq *f)
{
    int at = l->n_prompt - 1, kv = -1, rc;
    while ((rc = sx_backend_seq_fork(g->e, l->kv, at, &kv, NULL)) && gen_prefix_evict(g))
        ; /* no free engine sequence: a cached prefix holds one */
    if (rc) {
        detach(g, f);
        return;
    }
    f->leader = NULL;
    f->kv = kv;
    f->n_fed = f->n_cached = at;
    f->cache_at = 0;
    f->state = GS_PREFILL;
}

static int can_fork(const gen_seq *l)
{
    return l->kv >= 0 && l->n_fed >= l->n_prompt - 1 &&
           (l->state == GS_PREFILL || l->state == GS_DECODE);
}

void gen_forks(sx_gen *g)
{
    for (gen_seq *s = g->head; s; s = s->next) {
        if (s->state != GS_FORKWAIT)
            continue;
        if (!s->leader)
            detach(g, s);
        else if (can_fork(s->leader))
            fork_one(g, s->leader, s);
    }
}

void gen_fork_release(sx_gen *g, gen_seq *l)
{
    for (gen_seq *s = g->head; s; s = s->next) {
        if (s->leader != l)
            continue;
        if (s->state == GS_FORKWAIT && can_fork(l))
            fork_one(g, l, s);
        else
            detach(g, s);
    }
}
