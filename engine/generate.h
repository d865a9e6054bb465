/* sx_gen: constrained generation for many sequences at once.
 *
 * Public header of engine/ itself (generation: gen*.c), beside perplexity.h.
 * The engine's parts are subfolders, each with one contract header:
 * engine/tokenizer/ (tokenizer.h), engine/model/ (model.h), engine/cpu/
 * (engine.h), engine/sampler/ (sampler.h).  engine/ never includes rpc/
 * (tools/check_layout.py).
 *
 * An sx_gen drives one sx_backend (engine/backend.h): callers add requests (a prompt in token
 * ids, an optional compiled grammar, sampling params, a token budget) and
 * call sx_gen_step repeatedly.  Each step runs one batched forward pass over
 * every live sequence: new sequences are prefilled in chunks of at most
 * `prefill_chunk` tokens (so a long document never stalls the others'
 * decode), the others decode one token.  Per sequence, the grammar's
 * matcher fills a bitmask that the sampler applies before anything else;
 * tokens the grammar forces are appended without sampling; when the budget
 * left equals the grammar's shortest completion, the sequence is steered
 * to close its document so a tight max_tokens still yields valid output
 * (finish reason "length" only when even that cannot fit).
 *
 * Events (token pieces, completion) are reported through a callback from
 * inside sx_gen_step, on the caller's thread.
 *
 * Ownership: sx_gen borrows the engine, tokenizer and every grammar passed
 * to sx_gen_add (they must outlive the request); it owns matchers,
 * samplers and KV slots of its sequences and releases them when a request
 * finishes or is cancelled.  Not thread-safe: one driver thread. */
#ifndef SX_GENERATE_H
#define SX_GENERATE_H

#include <stdint.h>
#include <stddef.h>
#include "common/sx_error.h"
#include "engine/backend.h"
#include "engine/sampler/sampler.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/grammar.h"

typedef struct sx_gen sx_gen;

typedef struct sx_gen_opts {
    int prefill_chunk;   /* tokens per sequence per step while prefilling (default 256) */
    int max_batch;       /* sequences stepped together (default 32) */
    int mask_threads;    /* threads that fill grammar masks (default 1) */
    /* The prefix cache (sx_gen_params.prefix_len): KV of prompt prefixes
     * and whole prompts kept for later requests that start the same way,
     * in tokens: 0 = as much as the KV cache has room for (entries give
     * way to requests), -1 = off. */
    int64_t prefix_cache_tokens;
} sx_gen_opts;

/* The prefix cache keeps at most this many entries, each an engine
 * sequence: an engine for sx_gen wants max_batch + SX_GEN_PREFIX_ENTRIES
 * sequences (fewer only make entries give way to requests sooner). */
#define SX_GEN_PREFIX_ENTRIES 64

typedef struct sx_gen_params {
    const sx_grammar *grammar;  /* NULL = unconstrained */
    sx_sampling       sampling;
    int               max_tokens;  /* completion budget, > 0 */
    /* The first prefix_len prompt tokens are shared by many requests (a
     * system turn with its instructions and schema): their KV cache is
     * kept after the first such request.  Whole prompts are kept too, and
     * every request forks the cached prompt sharing the longest prefix with
     * its own (a document under another schema, a chat's earlier turns),
     * then prefills only the rest.  0 = none.  Outputs are the same either
     * way. */
    int               prefix_len;
    /* n choices of one request: the handle of an earlier request over the
     * same prompt (0 = none).  This one then prefills nothing but the last
     * prompt token: it forks that request's KV cache once it holds the rest
     * (so one prefill serves them all) and samples its own stream from
     * there.  When that request is gone, or ends before its prefill got
     * that far, this one prefills as usual; the output is the same. */
    int               fork_of;
    /* Speculative decoding (sx_gen_speculate): up to draft_k (1..16,
     * 0 = 4) tokens are drafted, then verified in one forward pass of
     * draft_k + 1 positions; the rejected tail of the KV cache is rolled
     * back.  Each position is chosen by the sampler exactly as without
     * speculation (same masks, same draw), and a draft token is kept only
     * when it equals that choice, so the output is the same token for
     * token, greedy or sampled (drafts are point masses: accepting d with
     * probability p(d) and resampling from p without d otherwise is the
     * standard accept/resample rule).  Only the speed changes. */
    int               speculate;   /* sx_gen_speculate */
    int               draft_k;
    /* Free text first, the grammar from a token on (sx_gen_freepre); NULL =
     * the grammar from the first token, as usual.  Copied by sx_gen_add. */
    const struct sx_gen_freepre *free;
    /* The request's deadline (CLOCK_MONOTONIC ms; 0 = none): the grammar's
     * masks stop there (sx_matcher_set_bounds) and the sequence finishes
     * with SX_FINISH_ERROR, error code SX_ELIMIT, "deadline" in its
     * message -- a mask can take seconds (grammar.h), and the caller's own
     * deadline check runs only between steps. */
    double            deadline_ms;
} sx_gen_params;

/* sx_gen_freepre: "free prefix, then constrained": the answer is free text (sampled
 * without a grammar) until the model writes the token `open` -- or the
 * free budget forces it -- then `open_tail` is appended (forced), then one
 * document of the grammar, then `close` (forced).  After a close the model
 * may end the answer or, while more documents are allowed, write `sep`
 * and then `open` again.  Two uses: tool calls (open <tool_call>, tail
 * "\n", close "\n" </tool_call>, sep "\n": free text or calls, each call's
 * JSON held to the grammar from its opening tag on) and thinking (open
 * </think>, tail "\n\n", must_open: free reasoning, then the answer).
 *
 * The budget: an `open` is allowed only while the shortest document with
 * its tail and close still fits max_tokens, so every document that opens
 * closes validly; with must_open it is forced when only that much is
 * left.  With grammar NULL nothing opens (free text with `open` banned).
 * Speculation is off for these requests (the output would be the same). */
#define SX_GEN_FREE_MAXTOK 8
typedef struct sx_gen_freepre {
    int32_t open;                            /* switches the grammar on */
    int32_t open_tail[SX_GEN_FREE_MAXTOK];   /* forced after open */
    int     n_open_tail;
    int32_t close[SX_GEN_FREE_MAXTOK];       /* forced after each document */
    int     n_close;
    int32_t sep;         /* between a close and the next open; -1 = one document only */
    int     max_docs;    /* documents at most; 0 = any number */
    int     budget;      /* free tokens before open is forced; 0 = only max_tokens bounds it */
    int     must_open;   /* the free text cannot end the answer (no end of turn in it) */
    int32_t ban[SX_GEN_FREE_MAXTOK];         /* never sampled in the free text */
    int     n_ban;
    /* A reasoning phase before the free text (thinking with tool calls in
     * free text): free text that can neither end the answer nor open a
     * document, closed by think_close -- written by the model, or forced
     * once think_budget reasoning tokens are spent (0 = no budget) or when
     * only the close, think_tail and the shortest document are left --
     * then think_tail (forced), then the free text as above.  think = 0:
     * none (the other think_* members are not read). */
    int     think;
    int32_t think_close;
    int32_t think_tail[SX_GEN_FREE_MAXTOK];
    int     n_think_tail;
    int     think_budget;
} sx_gen_freepre;

typedef enum sx_gen_speculate {
    SX_SPEC_OFF = 0,
    SX_SPEC_NGRAM,     /* prompt lookup: continue the latest earlier match of
                        * the last 1..4 tokens in the prompt and text so far */
    SX_SPEC_DRAFT      /* a smaller model with the same tokenizer drafts
                        * greedily under the grammar (sx_gen_set_draft) */
} sx_gen_speculate;

/* "off" / "ngram" / "draft" -> sx_gen_speculate; -1 when unknown. */
int  sx_gen_speculate_parse(const char *name);

typedef enum sx_finish {
    SX_FINISH_NONE = 0,
    SX_FINISH_STOP,       /* end-of-turn token after a complete document */
    SX_FINISH_LENGTH,     /* max_tokens reached (document may be incomplete) */
    SX_FINISH_CANCELLED,
    SX_FINISH_ERROR
} sx_finish;

typedef struct sx_gen_event {
    int         handle;
    void       *user;
    int         done;          /* 1 on the last event of a request */
    /* a new token (done == 0) */
    int32_t     token;
    int         forced;        /* appended by the grammar, not sampled */
    float       logprob;
    const sx_sample *sample;   /* top-n when requested, NULL for forced tokens */
    const char *piece;         /* UTF-8 text this token completes (may be "") */
    size_t      piece_len;
    /* completion (done == 1) */
    int         finish;        /* sx_finish */
    sx_error    error;         /* when finish == SX_FINISH_ERROR */
    int         n_prompt, n_completion, n_forced;
    int         n_cached;      /* prompt tokens not prefilled: taken from the prefix
                                  cache or forked from the fork_of request */
    double      ttft_ms;       /* add -> first completion token */
} sx_gen_event;

typedef void (*sx_gen_cb)(const sx_gen_event *ev, void *ctx);

int  sx_gen_new(sx_backend *e, const sx_tokenizer *tok, const sx_gen_opts *opts,
                sx_gen_cb cb, void *cb_ctx, sx_gen **out, sx_error *err);
void sx_gen_free(sx_gen *g);   /* cancels what is live, without events */

/* Queues a request; it joins the running batch at the next step.  The prompt
 * is copied.  SX_ELIMIT when the prompt plus max_tokens can never fit the
 * KV cache; SX_EINVAL when fork_of names a live request over another
 * prompt. */
int  sx_gen_add(sx_gen *g, const int32_t *prompt, int n_prompt,
                const sx_gen_params *p, void *user, int *handle, sx_error *err);
/* Cancels a request; its final event (SX_FINISH_CANCELLED) fires at the next
 * step. */
void sx_gen_cancel(sx_gen *g, int handle);
/* A new engine sequence holding the first prefix_len tokens of prompt,
 * forked from the prefix cache; on a miss the prefix is prefilled here
 * (one or more engine steps) and kept for later requests.  The caller owns
 * *seq (sx_backend_seq_free).  *seq = -1 with SX_OK when there is nothing to
 * reuse (prefix_len outside 1..n_prompt-1, or no room to keep it). */
int  sx_gen_prefix_seq(sx_gen *g, const int32_t *prompt, int n_prompt, int prefix_len, int *seq,
                       sx_error *err);
/* The prefix cache since g was made: lookups that forked a cached prefix
 * (hits) or found none worth forking (misses), entries evicted, prompt
 * tokens taken from it; entries and tokens held now. */
typedef struct sx_gen_prefix_stats {
    int64_t hits, misses, evictions, cached_tokens;
    int64_t entries, tokens;
    /* of the hits, prefixes taken from a request still prefilling them
     * (requests that arrived together) rather than from an entry */
    int64_t joins;
} sx_gen_prefix_stats;
void sx_gen_prefix_stats_get(const sx_gen *g, sx_gen_prefix_stats *out);
/* The draft model of SX_SPEC_DRAFT requests: an engine over a smaller
 * Qwen3 with the same tokenizer (its own KV cache; sequences of it are made
 * and freed here).  Borrowed: it must outlive g.  NULL = none; requests
 * asking for a draft model are then refused (SX_EINVAL). */
int  sx_gen_set_draft(sx_gen *g, sx_backend *draft, sx_error *err);
/* Since g was made: draft tokens proposed and draft tokens accepted. */
void sx_gen_spec_stats(const sx_gen *g, int64_t *drafted, int64_t *accepted);
/* Runs one step.  *n_live receives the number of requests still running or
 * queued (0 = idle). */
int  sx_gen_step(sx_gen *g, int *n_live, sx_error *err);

#endif
