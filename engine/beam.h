/* sx_beam: beam search over one prompt, with or without a grammar.
 *
 * Public header of engine/ itself (gen_beam.c), beside generate.h.
 *
 * Semantics are those of Hugging Face transformers' (5.x) generate(
 * num_beams=B, do_sample=False, early_stopping=..., length_penalty=L,
 * num_return_sequences=R) for one prompt:
 *  - each step scores every running beam's next token by the beam's
 *    cumulative log-softmax plus the token's log-probability, and keeps the
 *    top K = max(2, 1 + n_eos) * B candidates over beams x vocabulary;
 *  - a candidate that ends (an EOS token, the max_tokens budget reached, or,
 *    under a grammar, a token after which the document is complete) is a
 *    finished hypothesis when it is among the first B of the K; its score is
 *    sum_logprobs / len^L, len = generated tokens including the last one;
 *    the B best finished hypotheses are kept;
 *  - the B best candidates that did not end run on;
 *  - the search stops when early_stopping is SX_BEAM_EARLY_TRUE and B
 *    hypotheses are finished, when no running beam can beat the worst of B
 *    finished ones (best running score / len^L, len = tokens generated so
 *    far, or max_tokens for SX_BEAM_EARLY_NEVER with L > 0), or when no
 *    candidate runs on;
 *  - the R best finished hypotheses are returned with their scores.
 * Scores are float32 as transformers keeps them.
 *
 * Under a grammar each beam has its own matcher.  The grammar masks the
 * log-probabilities after the log-softmax (a masking logits processor in
 * transformers' beam search sees log-softmaxed scores), so a score is the
 * sequence's log-probability under the model, never renormalised; only
 * allowed tokens become candidates (tokens the grammar forces are the only
 * candidate of their beam).  A beam whose document is complete ends there,
 * as at an EOS.  A hypothesis cut by max_tokens with an incomplete document
 * is not a finished one; they are returned only when fewer than R complete
 * ones were found.  Without a grammar a hypothesis cut by max_tokens is a
 * finished one, as in transformers, with finish SX_BEAM_LENGTH.
 *
 * Budget under a grammar (when `tok` is given), the invariant sx_gen keeps
 * for sampling: a candidate after which the document's shortest completion
 * no longer fits in the tokens left is dropped (neither runs on nor
 * finishes).  When no candidate runs on and fewer than R hypotheses are
 * finished, each running beam is closed with its shortest completion
 * (forced tokens, scored 0 as forced tokens are) and becomes a finished
 * hypothesis, so a tight max_tokens still returns complete documents.
 *
 * KV cache: the prompt is prefilled once; beams are forks of its engine
 * sequence (sx_backend_seq_fork shares full blocks), and when one beam has
 * several children the others fork it, so no beam ever copies the prompt.
 *
 * Ownership: borrows the engine and grammar for the call; the result's
 * arrays belong to the caller (sx_beam_result_free).  Uses up to 2B engine
 * sequences during a step and frees them all before returning. */
#ifndef SX_BEAM_H
#define SX_BEAM_H

#include <stdint.h>
#include "common/sx_error.h"
#include "engine/backend.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/grammar.h"

typedef enum sx_beam_early {
    SX_BEAM_EARLY_FALSE = 0,  /* early_stopping=False: stop by the heuristic */
    SX_BEAM_EARLY_TRUE  = 1,  /* early_stopping=True: stop once B are finished */
    SX_BEAM_EARLY_NEVER = 2   /* early_stopping="never" */
} sx_beam_early;

#define SX_BEAM_MAX 64   /* beams (and returned sequences) at most */

typedef struct sx_beam_params {
    int              num_beams;       /* B, 1..SX_BEAM_MAX */
    int              num_return;      /* R, 1..B (0 = 1) */
    float            length_penalty;  /* L (transformers' default is 1.0) */
    int              early_stopping;  /* sx_beam_early */
    int              max_tokens;      /* max_new_tokens, > 0 */
    const int32_t   *eos;             /* end tokens (n_eos of them; 0..8) */
    int              n_eos;
    const sx_grammar *grammar;        /* NULL = unconstrained */
    const sx_tokenizer *tok;          /* with a grammar: steers the budget (below); may be NULL */
    int              prefill_chunk;   /* prompt tokens per forward pass (0 = 512) */
    /* The request's deadline (CLOCK_MONOTONIC ms; 0 = none), as
     * sx_gen_params.deadline_ms: every beam's grammar masks stop there and
     * the search fails with SX_ELIMIT, "deadline" in its message. */
    double           deadline_ms;
} sx_beam_params;

enum { SX_BEAM_STOP = 1, SX_BEAM_LENGTH = 2 };

typedef struct sx_beam_seq {
    int32_t *ids;          /* generated tokens (EOS included when one ended it) */
    int      n;
    float    score;        /* sum_logprob / n^L */
    float    sum_logprob;
    int      finish;       /* SX_BEAM_STOP (EOS or complete document) or SX_BEAM_LENGTH (budget) */
} sx_beam_seq;

typedef struct sx_beam_result {
    sx_beam_seq *seqs;     /* best first */
    int          n;
    int          steps;    /* decode steps (forward passes after the prefill) */
    int64_t      tokens_run;  /* tokens through the model: prompt once + one per beam per step */
    int64_t      forks;    /* engine sequence forks (a beam with a second child) */
} sx_beam_result;

int  sx_beam_run(sx_backend *e, const int32_t *prompt, int n_prompt, const sx_beam_params *p,
                 sx_beam_result *out, sx_error *err);
void sx_beam_result_free(sx_beam_result *r);

#endif
