/* sx_gen's free prefix (sx_gen_freepre in generate.h): free text, then a
 * document of the grammar from a token on -- tool calls that open with
 * <tool_call>, an answer after </think>.
 *
 * Phases: GF_FREE (free text; the grammar's matcher waits in s->fm),
 * GF_DOC (s->m = s->fm: the usual constrained path of gen_step.c, with
 * s->tail tokens kept back for the close), GF_AFTER (a document closed:
 * end of turn, or sep when another may follow), GF_SEP (after sep: open
 * again, or end).  With fr.think, GF_THINK comes first: reasoning that
 * ends only with think_close (then think_tail), never with the answer or a
 * document.  The free phases sample under s->fmask, a mask of their own
 * that bans what the phase does not allow. */
#include <stdlib.h>
#include <string.h>
#include "engine/gen_internal.h"

static void mask_set(uint32_t *m, int32_t t, int on)
{
    if (t < 0)
        return;
    if (on)
        m[t >> 5] |= 1u << (t & 31);
    else
        m[t >> 5] &= ~(1u << (t & 31));
}

/* Tokens left once t more are written. */
static int left(const gen_seq *s)
{
    return s->p.max_tokens - s->n_completion;
}

/* 1 when a document may open now: one more allowed, and the shortest
 * one (open, tail, body, close) fits what is left. */
static int may_open(const gen_seq *s)
{
    if (!s->fm || s->fr.open < 0)
        return 0;
    if (s->fr.max_docs > 0 && s->n_docs >= s->fr.max_docs)
        return 0;
    return s->min_doc <= left(s);
}

int gen_free_init(sx_gen *g, gen_seq *s, sx_error *err)
{
    const sx_gen_freepre *f = s->p.free;
    if (f->n_open_tail < 0 || f->n_open_tail > SX_GEN_FREE_MAXTOK || f->n_close < 0 ||
        f->n_close > SX_GEN_FREE_MAXTOK || f->n_ban < 0 || f->n_ban > SX_GEN_FREE_MAXTOK ||
        f->budget < 0 || f->max_docs < 0 ||
        (f->think && (f->n_think_tail < 0 || f->n_think_tail > SX_GEN_FREE_MAXTOK ||
                      f->think_budget < 0)))
        return sx_err_set(err, SX_EINVAL, "free prefix: bad token counts");
    s->fr = *f;
    s->p.free = NULL; /* borrowed only for the call */
    s->p.speculate = SX_SPEC_OFF;
    const int32_t *lists[4] = {s->fr.open_tail, s->fr.close, s->fr.ban, s->fr.think_tail};
    const int ns[4] = {s->fr.n_open_tail, s->fr.n_close, s->fr.n_ban,
                       s->fr.think ? s->fr.n_think_tail : 0};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < ns[k]; i++)
            if (lists[k][i] < 0 || lists[k][i] >= g->vocab_rows)
                return sx_err_set(err, SX_EINVAL, "free prefix: token %d outside the vocabulary",
                                  lists[k][i]);
    if (s->fr.open >= g->vocab_rows || s->fr.sep >= g->vocab_rows)
        return sx_err_set(err, SX_EINVAL, "free prefix: open or sep outside the vocabulary");
    if (s->fr.think && (s->fr.think_close < 0 || s->fr.think_close >= g->vocab_rows))
        return sx_err_set(err, SX_EINVAL, "free prefix: think_close outside the vocabulary");
    if (s->fr.think && s->p.max_tokens < 1 + s->fr.n_think_tail)
        return sx_err_set(err, SX_ELIMIT,
                          "max_tokens %d is too small: closing the reasoning needs %d tokens",
                          s->p.max_tokens, 1 + s->fr.n_think_tail);
    s->fmask = malloc((size_t)g->mask_words * sizeof *s->fmask);
    if (!s->fmask)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    s->fp = s->fr.think ? GF_THINK : GF_FREE;
    s->fm = s->m;
    s->m = NULL;
    if (s->fm) {
        /* the shortest document from a fresh matcher (s->m borrows it) */
        s->m = s->fm;
        int body = gen_completion_tokens(g, s);
        s->m = NULL;
        if (body < 0)
            return sx_err_set(err, SX_ELIMIT, "the grammar's shortest document is unknown");
        s->min_doc = 1 + s->fr.n_open_tail + body + s->fr.n_close;
        if (s->fr.must_open && s->min_doc > s->p.max_tokens)
            return sx_err_set(err, SX_ELIMIT,
                              "max_tokens %d is too small: the shortest valid output needs %d "
                              "tokens", s->p.max_tokens, s->min_doc);
    } else if (s->fr.must_open) {
        return sx_err_set(err, SX_EINVAL, "free prefix: must_open needs a grammar");
    }
    return SX_OK;
}

/* Appends tokens the model does not choose. */
static int force_list(sx_gen *g, gen_seq *s, const int32_t *t, int n)
{
    for (int i = 0; i < n; i++) {
        int rc = gen_emit(g, s, t[i], 1, NULL);
        if (!rc)
            rc = gen_feed_push(s, t[i]);
        if (rc)
            return rc;
    }
    return SX_OK;
}

/* `open` was written (sampled, or forced when !smp): the tail, then the
 * grammar from its first state on. */
static int open_doc(sx_gen *g, gen_seq *s, const sx_sample *smp)
{
    int rc = gen_emit(g, s, s->fr.open, smp == NULL, smp);
    if (!rc)
        rc = gen_feed_push(s, s->fr.open);
    if (!rc)
        rc = force_list(g, s, s->fr.open_tail, s->fr.n_open_tail);
    if (rc)
        return rc;
    s->n_docs++;
    sx_matcher_reset(s->fm);
    s->m = s->fm;
    s->fp = GF_DOC;
    s->tail = s->fr.n_close;
    s->state = GS_DECODE;
    if ((rc = gen_force(g, s)))
        return rc;
    if (sx_matcher_is_complete(s->m))
        return gen_doc_done(g, s);
    return SX_OK;
}

int gen_doc_done(sx_gen *g, gen_seq *s)
{
    if (s->fp != GF_DOC) {
        gen_finish(g, s, SX_FINISH_STOP, NULL);
        return SX_OK;
    }
    s->m = NULL;
    s->tail = 0;
    int rc = force_list(g, s, s->fr.close, s->fr.n_close);
    if (rc)
        return rc;
    /* one document only, or no room for another: the answer is whole */
    if (s->fr.sep < 0 || !may_open(s) || left(s) < 1) {
        gen_finish(g, s, SX_FINISH_STOP, NULL);
        return SX_OK;
    }
    s->fp = GF_AFTER;
    s->state = GS_DECODE;
    return SX_OK;
}

/* Reasoning: the tokens kept for its close, its tail and, when it fits
 * at all, the shortest document, so that a call can still follow. */
static int think_reserve(const gen_seq *s)
{
    int r = 1 + s->fr.n_think_tail;
    if (s->fm && s->fr.open >= 0 && r + s->min_doc <= s->p.max_tokens)
        r += s->min_doc;
    return r;
}

/* The reasoning ends: think_close (sampled, or forced when !smp), its
 * tail, then the free text. */
static int close_think(sx_gen *g, gen_seq *s, const sx_sample *smp)
{
    int rc = gen_emit(g, s, s->fr.think_close, smp == NULL, smp);
    if (!rc)
        rc = gen_feed_push(s, s->fr.think_close);
    if (!rc)
        rc = force_list(g, s, s->fr.think_tail, s->fr.n_think_tail);
    if (rc)
        return rc;
    s->fp = GF_FREE;
    if (left(s) < 1) {
        /* nothing left for an answer (init made sure the close fit) */
        gen_finish(g, s, SX_FINISH_LENGTH, NULL);
        return SX_OK;
    }
    s->state = GS_DECODE;
    return SX_OK;
}

/* The mask of the current free phase. */
static void fill_free_mask(sx_gen *g, gen_seq *s)
{
    uint32_t *m = s->fmask;
    int open = may_open(s);
    if (s->fp == GF_THINK) {
        memset(m, 0xff, (size_t)g->mask_words * sizeof *m);
        for (int i = 0; i < s->fr.n_ban; i++)
            mask_set(m, s->fr.ban[i], 0);
        mask_set(m, s->fr.open, 0);
        mask_set(m, g->eos[0], 0);
        mask_set(m, g->eos[1], 0);
        mask_set(m, s->fr.think_close, 1);
        return;
    }
    if (s->fp == GF_FREE) {
        memset(m, 0xff, (size_t)g->mask_words * sizeof *m);
        for (int i = 0; i < s->fr.n_ban; i++)
            mask_set(m, s->fr.ban[i], 0);
        mask_set(m, s->fr.open, open);
        if (s->fr.must_open) {
            mask_set(m, g->eos[0], 0);
            mask_set(m, g->eos[1], 0);
        }
        return;
    }
    memset(m, 0, (size_t)g->mask_words * sizeof *m);
    mask_set(m, g->eos[0], 1);
    if (s->fp == GF_AFTER)
        mask_set(m, s->fr.sep, open && left(s) >= 1 + s->min_doc);
    else
        mask_set(m, s->fr.open, open);
}

int gen_free_advance(sx_gen *g, gen_seq *s, float *row)
{
    sx_error err;
    sx_err_clear(&err);
    int rc;
    /* reasoning before free text: its budget, or the room kept for what
     * follows, closes it now */
    if (s->fp == GF_THINK && ((s->fr.think_budget > 0 && s->n_think >= s->fr.think_budget) ||
                              left(s) <= think_reserve(s)))
        return close_think(g, s, NULL);
    /* thinking: the budget, or what the answer needs, closes it now */
    if (s->fp == GF_FREE && s->fr.must_open &&
        ((s->fr.budget > 0 && s->n_free >= s->fr.budget) || left(s) <= s->min_doc))
        return open_doc(g, s, NULL);
    fill_free_mask(g, s);
    sx_sample smp;
    if (sx_sampler_sample(s->s, row, s->fmask, &smp, &err)) {
        gen_finish(g, s, SX_FINISH_ERROR, &err);
        return SX_OK;
    }
    int32_t t = smp.token;
    if (t == g->eos[0] || t == g->eos[1]) {
        gen_finish(g, s, SX_FINISH_STOP, NULL);
        return SX_OK;
    }
    if (s->fp == GF_THINK && t == s->fr.think_close)
        return close_think(g, s, &smp);
    if (t == s->fr.open && s->fp != GF_AFTER)
        return open_doc(g, s, &smp);
    if ((rc = gen_emit(g, s, t, 0, &smp)) || (rc = gen_feed_push(s, t)))
        return rc;
    if (s->fp == GF_FREE)
        s->n_free++;
    else if (s->fp == GF_THINK)
        s->n_think++;
    else if (s->fp == GF_AFTER)
        s->fp = GF_SEP;
    if (s->n_completion >= s->p.max_tokens) {
        /* free text cut by the budget; after a document the answer is whole */
        gen_finish(g, s, s->fp == GF_FREE || s->fp == GF_THINK ? SX_FINISH_LENGTH
                                                               : SX_FINISH_STOP, NULL);
        return SX_OK;
    }
    s->state = GS_DECODE;
    return SX_OK;
}
