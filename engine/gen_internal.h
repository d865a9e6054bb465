/* Internals of sx_gen (engine/generate.h), shared by gen.c and gen_step.c. */
#ifndef SX_GEN_INTERNAL_H
#define SX_GEN_INTERNAL_H

#include <pthread.h>
#include "engine/generate.h"

/* GS_FORKWAIT: admitted (KV reserved, a batch slot) but waiting for its
 * leader's prefill to reach the fork point (fork_at); no engine sequence
 * yet. */
enum { GS_QUEUED, GS_FORKWAIT, GS_PREFILL, GS_DECODE, GS_DONE };

typedef struct gen_seq {
    int          handle;
    void        *user;
    int          state;
    int          cancelled;
    int32_t     *prompt;
    int          n_prompt, n_fed;     /* prompt tokens given to the engine so far */
    sx_gen_params p;
    sx_matcher  *m;                   /* NULL when unconstrained */
    sx_sampler  *s;
    int          kv;                  /* engine sequence, -1 before admission */
    int          n_cached;            /* prompt tokens forked from the prefix cache */
    int          cache_at;            /* > 0: store the prefix once prefilled this far */
    int64_t      reserve;             /* KV tokens reserved for this request */
    int64_t      held;                /* ... of which counted in g->kv_reserved now */
    /* the request whose KV this one will fork at fork_at: its fork_of
     * (n choices, fork_at = n_prompt - 1) or an in-flight request whose
     * prompt starts the same way (joined, gen_join); NULL once forked,
     * detached, or without one.  Never dangles: a leader's gen_finish lets
     * go of its followers. */
    struct gen_seq *leader;
    int          fork_at;
    int          joined;              /* leader came from gen_join */
    /* tokens chosen but not yet run through the model (sampled + forced) */
    int32_t     *feed;
    int          n_feed, cap_feed;
    int          n_completion, n_forced;
    sx_detok     detok;
    double       t_add, t_first;
    uint32_t    *mask;                /* mask for the next sample (grammar only) */
    sx_step_sample req;               /* the step's draw for this sequence */
    int          mask_rc;             /* sx_matcher_fill_mask's result */
    int          mask_ok;             /* mask filled for the current state */
    struct gen_spec *spec;            /* speculation state (gen_spec.c), NULL = off */
    /* free prefix (sx_gen_freepre, gen_free.c): fp is the phase; the matcher
     * is fm, and m points to it only while a document is being written */
    int          fp;                  /* GF_OFF, GF_FREE, ... */
    sx_gen_freepre fr;
    sx_matcher  *fm;
    uint32_t    *fmask;               /* the free phases' mask */
    int          n_free, n_docs;      /* free tokens so far, documents opened */
    int          n_think;             /* reasoning tokens so far (GF_THINK) */
    int          min_doc;             /* tokens of the shortest document, tail and close */
    int          tail;                /* tokens kept back from max_tokens for the close */
    struct gen_seq *next;             /* live list, in admission order */
} gen_seq;

/* A cached prompt prefix: an engine sequence holding exactly its KV. */
typedef struct gen_prefix {
    int32_t  *tokens;
    int       len, kv;
    uint64_t  used;
} gen_prefix;

#define GEN_PREFIXES SX_GEN_PREFIX_ENTRIES
/* a shorter shared prefix is not worth a fork (its prefill is a few
 * tokens), unless it covers the prefix the request named */
#define GEN_PREFIX_MIN 16

struct sx_gen {
    sx_backend         *e;
    const sx_tokenizer *tok;
    sx_gen_opts         o;
    sx_gen_cb           cb;
    void               *cb_ctx;
    int                 vocab_rows, mask_words;
    int32_t             eos[2];
    int64_t             kv_capacity, kv_reserved;
    int                 next_handle;
    gen_seq            *head;         /* queued and live requests, oldest first */
    gen_prefix          prefixes[GEN_PREFIXES];
    int                 n_prefixes;
    int64_t             prefix_tokens;  /* held by the entries */
    sx_gen_prefix_stats pstats;
    uint64_t            clock;
    /* per-step scratch */
    sx_step_item       *items;
    gen_seq           **item_seq;
    float              *logits;
    int                 cap_items;
    sx_bytes            piece;
    uint8_t            *cbuf;         /* shortest-completion bytes */
    sx_ids              cids;         /* ... and their tokens */
    int                 cap_rows;     /* logits rows allocated */
    sx_backend         *draft;        /* SX_SPEC_DRAFT's model, borrowed */
    float              *draft_logits; /* one row of it */
    int64_t             spec_drafted, spec_accepted;
    /* mask workers: fill masks while the forward pass runs */
    pthread_t          *workers;
    int                 n_workers;
    pthread_mutex_t     mu;
    pthread_cond_t      cv_work, cv_done;
    gen_seq           **mask_jobs;
    int                 n_jobs, next_job, jobs_done, generation, stop;
    /* STRUX_GEN_TRACE (a dev aid, gen_step.c): the posted masks' summed
     * fill time and when the last one ended, ms; under mu */
    double              mask_busy_ms, mask_end_ms;
};

double gen_now_ms(void);
int    gen_masks_start(sx_gen *g);
void   gen_masks_stop(sx_gen *g);
/* Fills the masks of `jobs` on the workers (returns at once); gen_masks_wait
 * blocks until all are done. */
void   gen_masks_post(sx_gen *g, gen_seq **jobs, int n);
void   gen_masks_wait(sx_gen *g);
/* 1 when the posted masks are all filled (does not block) */
int    gen_masks_done(sx_gen *g);
int    gen_feed_push(gen_seq *s, int32_t tok);
void   gen_finish(sx_gen *g, gen_seq *s, int finish, const sx_error *error);
void   gen_reap(sx_gen *g);
/* The prefix cache (gen_prefix.c).  admit: a new engine sequence for s,
 * forked from a cached prefix when there is one (then s->n_fed and
 * s->n_cached are set, else s->cache_at); 0 or an engine error.  store:
 * called once s has prefilled at least s->cache_at tokens.  evict: drops the
 * least recently used prefix, 0 when none is left. */
int    gen_prefix_admit(sx_gen *g, gen_seq *s);
void   gen_prefix_store(sx_gen *g, gen_seq *s);
/* keeps s's whole prompt once prefilled (before its first decode) */
void   gen_prefix_store_prompt(sx_gen *g, gen_seq *s);
int    gen_prefix_evict(sx_gen *g);
/* tokens a[0..) and b[0..) share from the start */
int    gen_common(const int32_t *a, int na, const int32_t *b, int nb);
/* the longest prefix of t[0..n) that a cached entry holds */
int    gen_prefix_match(sx_gen *g, const int32_t *t, int n);
void   gen_prefix_free_all(sx_gen *g);
/* n choices (gen_fork.c).  forks: every admitted follower whose leader's
 * prefill has reached the fork point gets its engine sequence.  release:
 * the leader is finishing -- its followers fork now if they can, else
 * prefill on their own; called from gen_finish while its KV is still live. */
void   gen_forks(sx_gen *g);
/* Prefix sharing in flight: when the prompt of s (queued, about to be
 * admitted) shares at least GEN_PREFIX_MIN tokens with the prompt of a
 * request being prefilled or decoded -- more than any cached entry holds
 * -- s becomes its follower at that length (returns 1): it waits in
 * GS_FORKWAIT for that prefill to get there, instead of computing the same
 * KV beside it.  0: s goes on alone (also when the prefix cache is off). */
int    gen_join(sx_gen *g, gen_seq *s);
void   gen_fork_release(sx_gen *g, gen_seq *leader);

/* Phases of a free-prefix request (sx_gen_freepre). */
enum { GF_OFF = 0, GF_FREE, GF_DOC, GF_AFTER, GF_SEP, GF_THINK };
/* gen_free.c: set up s->fm, s->fmask, min_doc at sx_gen_add (s->m holds
 * the new matcher on entry and is NULL after); one sampling position of a
 * sequence in a free phase; the document of s is complete: close it, then
 * end or go back to free text. */
int    gen_free_init(sx_gen *g, gen_seq *s, sx_error *err);
int    gen_free_advance(sx_gen *g, gen_seq *s, float *row);
int    gen_doc_done(sx_gen *g, gen_seq *s);
/* shared with gen_step.c: report a token; append the grammar's forced text */
int    gen_emit(sx_gen *g, gen_seq *s, int32_t t, int forced, const sx_sample *smp);
int    gen_force(sx_gen *g, gen_seq *s);

/* One sampling position of s from its logits row: eos, matcher, budget,
 * emit, feed, forced tokens (gen_step.c). */
int    gen_advance(sx_gen *g, gen_seq *s, float *row);
/* The same with the token drawn by the backend in the step (sp). */
int    gen_advance_sampled(sx_gen *g, gen_seq *s, const sx_step_sample *sp);
/* Logits room for `rows` rows. */
int    gen_grow_rows(sx_gen *g, int rows);

/* Bytes of completion text looked at; a document whose shortest completion
 * is longer is steered only once it fits. */
#define GEN_CBUF (256 * 1024)
/* Tokens in the shortest completion of s's document from its matcher's
 * current state (left in g->cids), 0 when complete, -1 when none was found
 * within GEN_CBUF bytes or the text does not tokenize. */
int    gen_completion_tokens(sx_gen *g, gen_seq *s);
/* The same for any matcher m: the tokens of its shortest completion into
 * *out (cleared first; buf, cap bytes, is scratch), their count, 0 when
 * complete, -1 when unknown.  Beam search steers its budget with it. */
int    gen_matcher_completion(const sx_tokenizer *tok, const sx_matcher *m, uint8_t *buf,
                              size_t cap, sx_ids *out);

#endif
