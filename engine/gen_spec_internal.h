/* Speculative decoding inside sx_gen (gen_spec.c: state, drafting under the
 * grammar and the verify loop; gen_spec_draft.c: the drafters).
 *
 * A step of a speculating sequence feeds its pending tokens followed by
 * up to k draft tokens, asks for a logits row at every position, and then
 * walks the rows with gen_advance as plain decoding would: position j is
 * chosen from row j with the mask of the matcher's state there; the walk
 * goes on while the choice equals draft token j (its KV is then already
 * right) and stops at the first difference, a forced token, or the end.
 * The KV cache is then truncated to what was kept. */
#ifndef SX_GEN_SPEC_INTERNAL_H
#define SX_GEN_SPEC_INTERNAL_H

#include "engine/gen_internal.h"

#define GEN_SPEC_MAXK 16

typedef struct gen_spec {
    int       mode, k;
    /* the sequence's tokens so far: prompt, then every emitted token up to
     * the pending feed (appended when drafting) */
    int32_t  *ctx;
    int       n_ctx, cap_ctx;
    int32_t   draft[GEN_SPEC_MAXK];
    int       nd;          /* drafts in this step's item */
    int       n0;          /* pending feed tokens before them */
    int       base;        /* KV length before the step */
    uint32_t *masks;       /* (k + 1) masks: one per verified position */
    /* SX_SPEC_DRAFT: the draft engine's sequence and the tokens it holds */
    int       dkv;
    int32_t  *dtok;
    int       n_dtok, cap_dtok;
} gen_spec;

/* sx_gen_add's checks of the speculation params. */
int  gen_spec_check(sx_gen *g, const sx_gen_params *p, sx_error *err);
/* Speculation state for a new request when it asks for it. */
int  gen_spec_new(sx_gen *g, gen_seq *s, sx_error *err);
void gen_spec_free(sx_gen *g, gen_seq *s);
/* Appends drafts to s's decode item `it` (tokens = s->feed); leaves it as
 * a plain item when nothing could be drafted. */
int  gen_spec_prepare(sx_gen *g, gen_seq *s, sx_step_item *it);
/* After the step: rows = it->n logits rows of s's item. */
int  gen_spec_verify(sx_gen *g, gen_seq *s, float *rows);

/* Drafters (gen_spec_draft.c).  ngram: up to `max` tokens continuing
 * sp->ctx, the grammar cuts them afterwards.  model: the draft model's
 * greedy token after sp->ctx + sp->draft[0..sp->nd), chosen within the
 * mask of that position (sp->masks[nd], filled by the caller) when there
 * is a grammar.  Both return the number of tokens written, 0 on any
 * trouble (then nothing is drafted this step). */
int  gen_spec_draft_ngram(const gen_spec *sp, int max, int32_t *out);
int  gen_spec_draft_model(sx_gen *g, gen_spec *sp, int32_t *out);
int  gen_spec_push(int32_t **v, int *n, int *cap, int32_t tok);

#endif
