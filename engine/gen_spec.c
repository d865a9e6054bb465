/* Speculative decoding in sx_gen: per-request state, drafting under the
 * grammar, and the verify walk (the contract is in gen_spec_internal.h). */
#include <stdlib.h>
#include <string.h>
#include "engine/gen_spec_internal.h"

int sx_gen_speculate_parse(const char *name)
{
    if (!name)
        return -1;
    if (!strcmp(name, "off"))
        return SX_SPEC_OFF;
    if (!strcmp(name, "ngram"))
        return SX_SPEC_NGRAM;
    if (!strcmp(name, "draft"))
        return SX_SPEC_DRAFT;
    return -1;
}

int sx_gen_set_draft(sx_gen *g, sx_backend *draft, sx_error *err)
{
    if (draft && sx_backend_model(draft)->cfg.vocab_rows != g->vocab_rows)
        return sx_err_set(err, SX_EINVAL, "the draft model has %d vocabulary rows, the model %d",
                          sx_backend_model(draft)->cfg.vocab_rows, g->vocab_rows);
    for (gen_seq *s = g->head; s; s = s->next)
        if (s->spec && s->spec->dkv >= 0)
            return sx_err_set(err, SX_EINVAL, "the draft model is in use");
    if (draft && !g->draft_logits) {
        g->draft_logits = malloc((size_t)g->vocab_rows * sizeof *g->draft_logits);
        if (!g->draft_logits)
            return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    g->draft = draft;
    return SX_OK;
}

void sx_gen_spec_stats(const sx_gen *g, int64_t *drafted, int64_t *accepted)
{
    *drafted = g->spec_drafted;
    *accepted = g->spec_accepted;
}

int gen_spec_push(int32_t **v, int *n, int *cap, int32_t tok)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 64;
        int32_t *nv = realloc(*v, (size_t)c * sizeof *nv);
        if (!nv)
            return SX_ENOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = tok;
    return SX_OK;
}

int gen_spec_check(sx_gen *g, const sx_gen_params *p, sx_error *err)
{
    if (p->speculate < SX_SPEC_OFF || p->speculate > SX_SPEC_DRAFT)
        return sx_err_set(err, SX_EINVAL, "speculate must be off, ngram or draft");
    if (p->draft_k < 0 || p->draft_k > GEN_SPEC_MAXK)
        return sx_err_set(err, SX_EINVAL, "draft_k must be in 1..%d (got %d)", GEN_SPEC_MAXK,
                          p->draft_k);
    if (p->speculate == SX_SPEC_DRAFT && !g->draft)
        return sx_err_set(err, SX_EINVAL, "speculate \"draft\" needs a draft model");
    return SX_OK;
}

int gen_spec_new(sx_gen *g, gen_seq *s, sx_error *err)
{
    if (s->p.speculate == SX_SPEC_OFF)
        return SX_OK;
    gen_spec *sp = calloc(1, sizeof *sp);
    if (!sp)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    s->spec = sp;
    sp->mode = s->p.speculate;
    sp->k = s->p.draft_k > 0 ? s->p.draft_k : 4;
    sp->dkv = -1;
    if (s->m) {
        sp->masks = malloc((size_t)(sp->k + 1) * (size_t)g->mask_words * sizeof *sp->masks);
        if (!sp->masks)
            return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    for (int i = 0; i < s->n_prompt; i++)
        if (gen_spec_push(&sp->ctx, &sp->n_ctx, &sp->cap_ctx, s->prompt[i]))
            return sx_err_set(err, SX_ENOMEM, "out of memory");
    return SX_OK;
}

void gen_spec_free(sx_gen *g, gen_seq *s)
{
    gen_spec *sp = s->spec;
    if (!sp)
        return;
    if (sp->dkv >= 0 && g->draft)
        sx_backend_seq_free(g->draft, sp->dkv);
    free(sp->ctx);
    free(sp->masks);
    free(sp->dtok);
    free(sp);
    s->spec = NULL;
}

static int allowed(const uint32_t *mask, int32_t t)
{
    return (mask[t >> 5] >> (t & 31)) & 1u;
}

int gen_spec_prepare(sx_gen *g, gen_seq *s, sx_step_item *it)
{
    gen_spec *sp = s->spec;
    int rc;
    sp->nd = 0;
    for (int i = 0; i < s->n_feed; i++)
        if ((rc = gen_spec_push(&sp->ctx, &sp->n_ctx, &sp->cap_ctx, s->feed[i])))
            return rc;
    /* the position after the drafts needs room in the budget too */
    int max = s->p.max_tokens - s->n_completion - 1;
    if (max > sp->k)
        max = sp->k;
    if (max <= 0 || s->n_feed == 0)
        return SX_OK;
    int32_t prop[GEN_SPEC_MAXK];
    int nprop = max;
    if (sp->mode == SX_SPEC_NGRAM && (nprop = gen_spec_draft_ngram(sp, max, prop)) == 0)
        return SX_OK;
    size_t mw = (size_t)g->mask_words;
    int in_matcher = 0, nd = 0;
    for (int j = 0; j < nprop; j++) {
        uint32_t *mask = s->m ? sp->masks + (size_t)j * mw : NULL;
        if (mask && sx_matcher_fill_mask(s->m, mask))
            break;
        int32_t t;
        if (sp->mode == SX_SPEC_NGRAM) {
            t = prop[j];
        } else {
            /* the draft model continues ctx + drafts so far, one token */
            sp->nd = nd;
            if (gen_spec_draft_model(g, sp, &t) != 1)
                break;
        }
        if (t == g->eos[0] || t == g->eos[1])
            break;
        if (mask) {
            if (!allowed(mask, t) || sx_matcher_accept(s->m, t, NULL))
                break;
            in_matcher++;
        }
        sp->draft[nd++] = t;
        if (s->m) {
            uint8_t fb[8];
            if (sx_matcher_is_complete(s->m) || sx_matcher_forced_bytes(s->m, fb, sizeof fb) > 0)
                break; /* what follows is not the model's choice */
        }
    }
    /* the mask of the position after the last draft */
    if (nd > 0 && s->m && sx_matcher_fill_mask(s->m, sp->masks + (size_t)nd * mw))
        nd = 0;
    if (in_matcher && sx_matcher_rollback(s->m, (size_t)in_matcher))
        return SX_EINTERNAL;
    sp->nd = nd;
    if (nd == 0)
        return SX_OK;
    sp->n0 = s->n_feed;
    sp->base = sx_backend_seq_len(g->e, s->kv);
    for (int j = 0; j < nd; j++)
        if ((rc = gen_feed_push(s, sp->draft[j])))
            return rc;
    s->n_feed = sp->n0; /* the drafts sit past the feed, not in it */
    *it = (sx_step_item){s->kv, s->feed, sp->n0 + nd, 1, NULL, NULL};
    return SX_OK;
}

int gen_spec_verify(sx_gen *g, gen_seq *s, float *rows)
{
    gen_spec *sp = s->spec;
    size_t V = (size_t)g->vocab_rows, mw = (size_t)g->mask_words;
    int rc, kept = 0, hit = 0;
    s->n_feed = 0;
    for (int j = 0; j <= sp->nd; j++) {
        if (s->m) {
            memcpy(s->mask, sp->masks + (size_t)j * mw, mw * sizeof *s->mask);
            s->mask_ok = 1;
        }
        if ((rc = gen_advance(g, s, rows + (size_t)(sp->n0 - 1 + j) * V)))
            return rc;
        if (s->state == GS_DONE || j == sp->nd || s->n_feed == 0 || s->feed[0] != sp->draft[j])
            break;
        /* the choice is draft j, whose KV is in place: keep it */
        hit++;
        kept++;
        if ((rc = gen_spec_push(&sp->ctx, &sp->n_ctx, &sp->cap_ctx, sp->draft[j])))
            return rc;
        memmove(s->feed, s->feed + 1, (size_t)(s->n_feed - 1) * sizeof *s->feed);
        s->n_feed--;
        if (s->n_feed > 0)
            break; /* forced tokens follow: they go in next step */
    }
    g->spec_drafted += sp->nd;
    g->spec_accepted += hit;
    if (s->state == GS_DONE)
        return SX_OK;
    sx_error err;
    if (sx_backend_seq_truncate(g->e, s->kv, sp->base + sp->n0 + kept, &err))
        return SX_EINTERNAL;
    return SX_OK;
}
