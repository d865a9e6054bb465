/* sx_ppl: sliding-window perplexity of a token sequence under an sx_backend.
 *
 * Public header of engine/ itself (perplexity.c), beside generate.h.
 *
 * Windows follow the Hugging Face perplexity guide: window k covers tokens
 * [k*stride, min(k*stride + window, n)) and the last window is the first
 * that reaches token n.  The first window scores every token but its first
 * (which has no context); each later window scores only the tokens past the
 * previous window's end, each predicted from the tokens before it in that
 * window.  So every token but the first is scored exactly once, with
 * between window - stride and window - 1 tokens of context.
 *
 * Each window is a fresh engine sequence fed in chunks of at most `chunk`
 * tokens; rows are requested (logits_all) only for the chunks that hold
 * positions whose prediction is scored, so memory stays at chunk x
 * vocab_rows floats however long the text.  A window's last token is never
 * fed: its row would predict a token outside the window.
 *
 * Definitions (all sums in double precision from the engine's f32 logits):
 *   nll(t)         = -log softmax(row of position t-1)[id t], in nats
 *   perplexity     = exp(nll_sum / n_scored)
 *   bits per byte  = nll_sum / ln 2 / n_bytes, where n_bytes is the total
 *                    length of the scored tokens' raw bytes (sx_tok_bytes:
 *                    for a plain-text encoding, the UTF-8 bytes of the text
 *                    those tokens came from; the unscored first token's bytes
 *                    are not counted).  Unlike perplexity it does not depend
 *                    on how finely the tokenizer cuts the text.
 *
 * With a reference engine (opts.ref: the same model in another weight
 * mode, e.g. bf16 beside int8 or q4) every window runs through both, and
 * each scored position also gives
 *   KL(ref || e)   = sum_v p_ref(v) (log p_ref(v) - log p_e(v)), in nats,
 *                    the softmaxes of the two engines' rows,
 * and whether the two rows' largest logits are the same token; the
 * reference's own nll_sum comes back too, so one run gives both
 * perplexities over the same windows.
 *
 * Ownership: nothing is kept after sx_ppl_run returns; the engines must have
 * no other user while it runs (each adds and frees one sequence per window). */
#ifndef SX_PERPLEXITY_H
#define SX_PERPLEXITY_H

#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"
#include "engine/backend.h"
#include "engine/tokenizer/tokenizer.h"

/* Called on the calling thread after each chunk with the tokens scored so
 * far and the total to score. */
typedef void (*sx_ppl_progress_fn)(void *ctx, int64_t scored, int64_t total);

typedef struct sx_ppl_opts {
    int                window;   /* tokens per window, >= 2 */
    int                stride;   /* 1 .. window */
    int                chunk;    /* tokens per engine step; 0 = 64 */
    sx_ppl_progress_fn progress; /* may be NULL */
    void              *ctx;
    sx_backend        *ref;      /* may be NULL: the KL reference (borrowed) */
} sx_ppl_opts;

typedef struct sx_ppl_result {
    double  nll_sum;       /* nats */
    int64_t n_scored;
    int64_t n_bytes;       /* 0 when no tokenizer was given */
    int64_t n_windows;
    double  ppl;
    double  bits_per_byte; /* 0 when n_bytes is 0 */
    /* with opts.ref only (else 0) */
    double  ref_nll_sum;   /* the reference's nats over the same tokens */
    double  kl_sum;        /* sum over scored tokens of KL(ref || e), nats */
    double  kl_max;        /* the largest of them */
    int64_t top1_same;     /* scored tokens whose argmax agrees */
} sx_ppl_result;

/* How many tokens a run over n tokens scores and how many windows it takes,
 * without running anything.  SX_EINVAL for a bad window/stride or n < 2. */
int sx_ppl_plan(int64_t n, int window, int stride, int64_t *n_scored, int64_t *n_windows,
                sx_error *err);

/* Runs the model over ids[0..n).  tok (may be NULL) only supplies the byte
 * lengths for bits per byte.  SX_EINVAL for n < 2, a bad window/stride, or
 * an id outside the model's rows (err->offset = its index); SX_ELIMIT when a
 * window does not fit the engine's KV cache or the model's max positions.
 * *out is written only on success. */
int sx_ppl_run(sx_backend *e, const int32_t *ids, size_t n, const sx_tokenizer *tok,
               const sx_ppl_opts *opts, sx_ppl_result *out, sx_error *err);

#endif
