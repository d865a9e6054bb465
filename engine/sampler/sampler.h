/* sx_sampler: turns one row of logits into a token, for one sequence.
 *
 * Contract of engine/sampler/; shares its arithmetic with the GPU sampler
 * through common/sx_sample_math.h.
 *
 * Order of operations (fixed, documented because results depend on it):
 *   1. the grammar bitmask: tokens whose bit is 0 get -inf (rows past the
 *      tokenizer's vocabulary are masked too when a mask is given);
 *   2. logit_bias (a value added to chosen tokens' logits; masked tokens
 *      stay masked, so the grammar outranks it), repetition penalty over the
 *      sequence's generated history (CTRL-style: positive logits divided,
 *      negative multiplied), OpenAI's presence and frequency penalties
 *      (subtracted once per distinct generated token, and once per
 *      occurrence), and no-repeat-n-gram;
 *   3. log-softmax -> the log-probs reported to callers (logprob, top-n);
 *   4. temperature (0 = greedy argmax), top-k, top-p, min-p;
 *   5. a draw from a counter-based RNG keyed by (seed, draw index), so a
 *      sequence is reproducible whatever else runs in the batch.
 * A masked token is never returned.  When every token is masked the call
 * fails with SX_EINTERNAL (the grammar guarantees this cannot happen).
 *
 * Ownership: sx_sampler_new returns a sampler freed with sx_sampler_free; it
 * keeps its own copy of the params and the history of accepted tokens. */
#ifndef SX_SAMPLER_H
#define SX_SAMPLER_H

#include <stdint.h>
#include "common/sx_error.h"

#define SX_SAMPLER_MAX_TOPN 20

typedef struct sx_sampling {
    float    temperature;         /* 0 = greedy; default 1 */
    int      top_k;               /* 0 = off */
    float    top_p;               /* 1 = off */
    float    min_p;               /* 0 = off */
    float    repetition_penalty;  /* 1 = off */
    int      no_repeat_ngram;     /* 0 = off */
    uint64_t seed;
    int      top_n;               /* 0..SX_SAMPLER_MAX_TOPN log-probs to report */
    float    presence_penalty;    /* 0 = off; finite, [-2, 2] as OpenAI */
    float    frequency_penalty;   /* 0 = off; finite, [-2, 2] as OpenAI */
    /* logit_bias: n_bias distinct token ids and the values added to their
     * logits (finite, [-100, 100]).  Borrowed: sx_sampler_new copies them,
     * so they need only outlive that call.  The GPU sampler
     * (sx_cuda_engine_sample) does not apply them nor the two penalties
     * above; the CUDA backend samples such rows on the host. */
    const int32_t *bias_ids;
    const float   *bias_vals;
    int            n_bias;
} sx_sampling;

/* Defaults above (temperature 1, everything else off, seed 0). */
void sx_sampling_default(sx_sampling *s);
/* SX_EINVAL with a message for out-of-range values (negative temperature,
 * top_p outside (0,1], ...). */
int  sx_sampling_check(const sx_sampling *s, sx_error *err);

typedef struct sx_sample {
    int32_t token;
    float   logprob;                          /* of `token`, see step 3 */
    int     n_top;
    int32_t top_ids[SX_SAMPLER_MAX_TOPN];
    float   top_logprobs[SX_SAMPLER_MAX_TOPN];
} sx_sample;

typedef struct sx_sampler sx_sampler;

int  sx_sampler_new(const sx_sampling *params, int vocab_rows, int vocab_valid,
                    sx_sampler **out, sx_error *err);
void sx_sampler_free(sx_sampler *s);

/* Samples from `logits` (modified in place: scratch).  mask: NULL or
 * ceil(vocab_rows/32) uint32 words, bit t set = token t allowed. */
int  sx_sampler_sample(sx_sampler *s, float *logits, const uint32_t *mask,
                       sx_sample *out, sx_error *err);

/* What a device sampler needs to draw as sx_sampler_sample would: the
 * params (the sampler's own copy), the accepted tokens, oldest first (*n
 * gets their count, which is also the next draw's RNG index) and the
 * vocabulary size below which tokens may be drawn.  Borrowed from s, valid
 * until its next accept, rollback or free. */
const sx_sampling *sx_sampler_params(const sx_sampler *s);
const int32_t     *sx_sampler_history(const sx_sampler *s, int *n);
int                sx_sampler_vocab_valid(const sx_sampler *s);

/* Records a token as generated (the penalties look at these).  Forced tokens
 * that the grammar emitted without sampling are recorded too. */
int  sx_sampler_accept(sx_sampler *s, int32_t token);
/* Forgets the last n accepted tokens (rollback). */
void sx_sampler_rollback(sx_sampler *s, int n);

/* Speculative sampling's accept/resample rule (sampler_spec.c), for a
 * draft token x drawn from the draft distribution q when the target's is
 * p (both over n tokens, each summing to 1): x is kept with probability
 * min(1, p(x)/q(x)) (u_accept decides), else a token is drawn from
 * max(0, p - q) renormalised (u_resample decides).  The token returned is
 * then distributed exactly as p.  q = NULL is a point mass at x (a
 * deterministic draft: prompt lookup, a greedy draft model): keep x with
 * probability p(x), else draw from p without x -- which is what drawing
 * from p and comparing with x does, the way sx_gen verifies drafts.
 * *accepted (optional) says whether x was kept. */
int32_t sx_spec_accept(const float *p, const float *q, int n, int32_t x, double u_accept,
                       double u_resample, int *accepted);

#endif
