/* sx_gen_step: one batched forward pass, then a token per sequence.
 *
 * Budget invariant (grammar requests): after every accepted token the
 * shortest completion of the document fits in the tokens left.  A sampled
 * token that would break it is rolled back and the document is closed with
 * its shortest completion instead, so a tight max_tokens still ends in
 * valid output. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/sx_utf8.h"
#include "engine/gen_internal.h"
#include "engine/gen_spec_internal.h"

static int push_byte_tokens(const sx_tokenizer *tok, const uint8_t *b, size_t n, sx_ids *out)
{
    for (size_t i = 0; i < n; i++) {
        int32_t id = sx_tok_find(tok, (const char *)b + i, 1);
        if (id < 0 || sx_ids_push(out, id))
            return -1;
    }
    return 0;
}

/* Tokens for grammar text that may start or end inside a character: the
 * matcher stops wherever a token ended, so its completion can begin with
 * the continuation bytes of a character already half emitted, and forced
 * text can stop halfway through one.  Those bytes become byte tokens
 * (byte-level BPE has one per byte), the whole characters between them are
 * encoded as usual; a character cut at the end is left out when !tail.
 * Appends to *out; -1 if no byte token exists. */
static int encode_grammar_bytes(const sx_tokenizer *tok, const uint8_t *b, size_t n, int tail,
                                sx_ids *out)
{
    size_t lo = 0, hi = n;
    while (lo < n && lo < 3 && (b[lo] & 0xc0) == 0x80)
        lo++;
    /* the last character, if the text stops inside it */
    for (size_t i = hi; i > lo && hi - i < 4; i--) {
        int len = sx_utf8_lead_len(b[i - 1]);
        if ((b[i - 1] & 0xc0) == 0x80)
            continue;
        if (len > 1 && (size_t)len > n - (i - 1))
            hi = i - 1;
        break;
    }
    if (push_byte_tokens(tok, b, lo, out))
        return -1;
    if (hi > lo && sx_tok_encode(tok, (const char *)b + lo, hi - lo, 0, out, NULL))
        return -1;
    return tail ? push_byte_tokens(tok, b + hi, n - hi, out) : 0;
}

int gen_matcher_completion(const sx_tokenizer *tok, const sx_matcher *m, uint8_t *buf,
                           size_t cap, sx_ids *out)
{
    out->n = 0;
    if (sx_matcher_is_complete(m))
        return 0;
    size_t n = sx_matcher_shortest_completion(m, buf, cap);
    if (n == (size_t)-1)
        return -1;
    if (n == 0)
        return 0;
    if (encode_grammar_bytes(tok, buf, n, 1, out))
        return -1;
    return (int)out->n;
}

int gen_completion_tokens(sx_gen *g, gen_seq *s)
{
    return gen_matcher_completion(g->tok, s->m, g->cbuf, GEN_CBUF, &g->cids);
}

static int is_eos(const sx_gen *g, int32_t t)
{
    return t == g->eos[0] || t == g->eos[1];
}

/* Reports a token to the caller and counts it. */
int gen_emit(sx_gen *g, gen_seq *s, int32_t t, int forced, const sx_sample *smp)
{
    sx_gen_event ev;
    memset(&ev, 0, sizeof ev);
    ev.handle = s->handle;
    ev.user = s->user;
    ev.token = t;
    ev.forced = forced;
    ev.logprob = smp ? smp->logprob : 0.0f;
    ev.sample = smp;
    g->piece.n = 0;
    if (sx_detok_push(g->tok, &s->detok, t, &g->piece, NULL))
        return SX_EINTERNAL;
    ev.piece = g->piece.v ? g->piece.v : "";
    ev.piece_len = g->piece.n;
    s->n_completion++;
    if (forced)
        s->n_forced++;
    if (s->t_first == 0)
        s->t_first = gen_now_ms();
    sx_sampler_accept(s->s, t);
    g->cb(&ev, g->cb_ctx);
    return SX_OK;
}

/* Appends the shortest completion (already accepted into the matcher by
 * the caller's check or accepted here) and finishes. */
static int close_document(sx_gen *g, gen_seq *s)
{
    int n = gen_completion_tokens(g, s);
    if (n < 0 || n > s->p.max_tokens - s->tail - s->n_completion) {
        gen_finish(g, s, SX_FINISH_LENGTH, NULL);
        return SX_OK;
    }
    /* g->cids is overwritten by nothing below */
    for (int i = 0; i < n; i++) {
        int32_t t = g->cids.v[i];
        if (sx_matcher_accept(s->m, t, NULL))
            return SX_EINTERNAL;
        int rc = gen_emit(g, s, t, 1, NULL);
        if (rc)
            return rc;
    }
    return gen_doc_done(g, s);
}

/* After a token was accepted: 1 if the document still fits the budget. */
static int fits(sx_gen *g, gen_seq *s, int n_after)
{
    int c = gen_completion_tokens(g, s);
    if (c < 0)
        return 1; /* too long to know: nothing to steer yet */
    return c <= s->p.max_tokens - s->tail - n_after;
}

/* Appends the text every continuation must start with, as tokens the model
 * does not have to choose. */
int gen_force(sx_gen *g, gen_seq *s)
{
    uint8_t buf[512];
    size_t n = sx_matcher_forced_bytes(s->m, buf, sizeof buf);
    if (n == 0)
        return SX_OK;
    sx_ids ids = {0};
    /* a character the forced text stops inside is left to the model,
     * which may finish it with a longer token */
    if (encode_grammar_bytes(g->tok, buf, n, 0, &ids)) {
        sx_ids_free(&ids);
        return SX_OK; /* no tokens for it: let the model choose */
    }
    size_t ok = 0;
    while (ok < ids.n && s->n_completion + (int)ok < s->p.max_tokens - s->tail &&
           sx_matcher_accept(s->m, ids.v[ok], NULL) == 0)
        ok++;
    if (ok > 0 && !fits(g, s, s->n_completion + (int)ok)) {
        sx_matcher_rollback(s->m, ok);
        ok = 0;
    }
    int rc = SX_OK;
    for (size_t i = 0; i < ok && !rc; i++) {
        rc = gen_emit(g, s, ids.v[i], 1, NULL);
        if (!rc)
            rc = gen_feed_push(s, ids.v[i]);
    }
    sx_ids_free(&ids);
    return rc;
}

/* 1 (and s finished) when the grammar could not fill s's mask. */
static int mask_failed(sx_gen *g, gen_seq *s)
{
    sx_error err;
    if (!s->m || s->mask_ok)
        return 0;
    if (s->mask_rc == SX_ELIMIT)
        sx_err_set(&err, SX_ELIMIT, "the deadline passed while the grammar filled a mask");
    else
        sx_err_set(&err, SX_EINTERNAL, "the grammar could not fill a mask");
    gen_finish(g, s, SX_FINISH_ERROR, &err);
    return 1;
}

static int take(sx_gen *g, gen_seq *s, const sx_sample *smp);

/* Chooses the next token(s) of s from its logits row. */
int gen_advance(sx_gen *g, gen_seq *s, float *row)
{
    sx_error err;
    sx_err_clear(&err);
    sx_sample smp;
    if (s->fp != GF_OFF && s->fp != GF_DOC)
        return gen_free_advance(g, s, row);
    if (mask_failed(g, s))
        return SX_OK;
    if (sx_sampler_sample(s->s, row, s->m ? s->mask : NULL, &smp, &err)) {
        gen_finish(g, s, SX_FINISH_ERROR, &err);
        return SX_OK;
    }
    return take(g, s, &smp);
}

int gen_advance_sampled(sx_gen *g, gen_seq *s, const sx_step_sample *sp)
{
    if (mask_failed(g, s))
        return SX_OK;
    if (sp->rc) {
        gen_finish(g, s, SX_FINISH_ERROR, &sp->err);
        return SX_OK;
    }
    return take(g, s, &sp->out);
}

/* The rest of a sampling position once smp is drawn: eos, matcher, budget,
 * emit, feed, forced tokens. */
static int take(sx_gen *g, gen_seq *s, const sx_sample *smp)
{
    sx_error err;
    sx_err_clear(&err);
    int32_t t = smp->token;
    if (is_eos(g, t)) {
        if (s->m && sx_matcher_accept(s->m, t, &err)) {
            gen_finish(g, s, SX_FINISH_ERROR, &err);
            return SX_OK;
        }
        if (s->m)
            return gen_doc_done(g, s); /* the document ended where it could */
        gen_finish(g, s, SX_FINISH_STOP, NULL);
        return SX_OK;
    }
    if (s->m) {
        if (sx_matcher_accept(s->m, t, &err)) {
            gen_finish(g, s, SX_FINISH_ERROR, &err);
            return SX_OK;
        }
        if (!fits(g, s, s->n_completion + 1)) {
            sx_matcher_rollback(s->m, 1);
            return close_document(g, s);
        }
    }
    int rc = gen_emit(g, s, t, 0, smp);
    if (rc)
        return rc;
    if ((rc = gen_feed_push(s, t)))
        return rc;
    if (s->m) {
        if (sx_matcher_is_complete(s->m))
            return gen_doc_done(g, s);
        if ((rc = gen_force(g, s)))
            return rc;
        if (sx_matcher_is_complete(s->m))
            return gen_doc_done(g, s);
    }
    if (s->n_completion >= s->p.max_tokens - s->tail) {
        /* With a grammar this only happens when can_end holds (the budget
         * invariant) or the completion was too long to know. */
        int ok = !s->m || sx_matcher_can_end(s->m);
        if (ok && s->m)
            return gen_doc_done(g, s);
        gen_finish(g, s, SX_FINISH_LENGTH, NULL);
        return SX_OK;
    }
    s->state = GS_DECODE;
    return SX_OK;
}

static int grow(sx_gen *g, int n)
{
    if (n <= g->cap_items)
        return SX_OK;
    int cap = n < 16 ? 16 : n;
    sx_step_item *it = realloc(g->items, (size_t)cap * sizeof *it);
    if (!it)
        return SX_ENOMEM;
    g->items = it;
    gen_seq **is = realloc(g->item_seq, (size_t)cap * sizeof *is);
    if (!is)
        return SX_ENOMEM;
    g->item_seq = is;
    g->cap_items = cap;
    return gen_grow_rows(g, cap);
}

int gen_grow_rows(sx_gen *g, int rows)
{
    if (rows <= g->cap_rows)
        return SX_OK;
    float *lg = realloc(g->logits, (size_t)rows * (size_t)g->vocab_rows * sizeof *lg);
    if (!lg)
        return SX_ENOMEM;
    g->logits = lg;
    g->cap_rows = rows;
    return SX_OK;
}

static void admit(sx_gen *g, int *n_running)
{
    for (gen_seq *s = g->head; s && *n_running < g->o.max_batch; s = s->next) {
        if (s->state != GS_QUEUED || s->cancelled)
            continue;
        if (s->leader && s->leader->state == GS_QUEUED)
            continue; /* its leader was cancelled before it ran: let go next step */
        /* cached prefixes give way to requests */
        while (g->kv_reserved + s->reserve > g->kv_capacity && gen_prefix_evict(g))
            ;
        if (g->kv_reserved + s->reserve > g->kv_capacity)
            break; /* keep arrival order: wait for room */
        if (s->leader || gen_join(g, s)) {
            /* its engine sequence comes from the leader's (gen_forks) */
            s->held = s->reserve;
            g->kv_reserved += s->held;
            s->state = GS_FORKWAIT;
            (*n_running)++;
            continue;
        }
        while (gen_prefix_admit(g, s) && gen_prefix_evict(g))
            ; /* no free engine sequence: a cached prefix holds one */
        if (s->kv < 0)
            break;
        s->held = s->reserve;
        g->kv_reserved += s->held;
        s->state = GS_PREFILL;
        (*n_running)++;
    }
}

static int masks_ready(void *g, int wait)
{
    if (!wait)
        return gen_masks_done(g);
    gen_masks_wait(g);
    return 1;
}

/* STRUX_GEN_TRACE=FILE (a dev aid for finding where a server's time goes):
 * one line per step appended to FILE -- when it began, its phases (before
 * the pass, the pass, waiting for masks, sampling), the rows it ran, the
 * masks' fill time and the LM-head panels read. */
static FILE *trace_file;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;

static void trace_open(void)
{
    const char *p = getenv("STRUX_GEN_TRACE");
    if (p && *p && (trace_file = fopen(p, "a")))
        fprintf(trace_file, "# t0_ms pre_ms fwd_ms maskwait_ms post_ms dec_rows dec_tokens "
                            "pf_rows pf_tokens masks mask_busy_ms mask_end_ms panels_dense "
                            "panels_read cpu_ms\n");
}

typedef struct step_trace {
    double t0, t_fwd, t_fwd1, t_mw, cpu0;
    int dec_rows, dec_tok, pf_rows, pf_tok, masks;
    sx_engine_lm_stats lm;
} step_trace;

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void trace_step(sx_gen *g, const step_trace *t)
{
    sx_engine_lm_stats lm;
    sx_backend_lm_stats_get(g->e, &lm);
    double t1 = gen_now_ms();
    fprintf(trace_file, "%.3f %.3f %.3f %.3f %.3f %d %d %d %d %d %.3f %.3f %lld %lld %.3f\n", t->t0,
            t->t_fwd - t->t0, t->t_fwd1 - t->t_fwd, t->t_mw - t->t_fwd1, t1 - t->t_mw,
            t->dec_rows, t->dec_tok, t->pf_rows, t->pf_tok, t->masks, g->mask_busy_ms,
            g->mask_end_ms > 0 ? g->mask_end_ms - t->t_fwd : 0.0,
            (long long)(lm.panels_dense - t->lm.panels_dense),
            (long long)(lm.panels_computed - t->lm.panels_computed), cpu_ms() - t->cpu0);
    fflush(trace_file);
}

int sx_gen_step(sx_gen *g, int *n_live, sx_error *err)
{
    int rc, n_running = 0, n = 0, n_jobs = 0;
    step_trace tr;
    pthread_once(&trace_once, trace_open);
    if (trace_file) {
        memset(&tr, 0, sizeof tr);
        tr.t0 = gen_now_ms();
        tr.cpu0 = cpu_ms();
        sx_backend_lm_stats_get(g->e, &tr.lm);
    }
    for (gen_seq *s = g->head; s; s = s->next) {
        if (s->cancelled && s->state != GS_DONE)
            gen_finish(g, s, SX_FINISH_CANCELLED, NULL);
        else if (s->state == GS_FORKWAIT || s->state == GS_PREFILL || s->state == GS_DECODE)
            n_running++;
    }
    gen_reap(g);
    admit(g, &n_running);
    gen_forks(g);
    if ((rc = grow(g, n_running)))
        return sx_err_set(err, rc, "out of memory");
    for (gen_seq *s = g->head; s; s = s->next) {
        if (s->state == GS_PREFILL) {
            int chunk = s->n_prompt - s->n_fed;
            if (chunk > g->o.prefill_chunk)
                chunk = g->o.prefill_chunk;
            g->items[n] = (sx_step_item){s->kv, s->prompt + s->n_fed, chunk, 0, NULL, NULL};
        } else if (s->state == GS_DECODE) {
            g->items[n] = (sx_step_item){s->kv, s->feed, s->n_feed, 0, NULL, NULL};
            /* drafts ride behind the feed, with a logits row per position */
            if (s->spec && (rc = gen_spec_prepare(g, s, &g->items[n])))
                return sx_err_set(err, rc, "speculative drafting failed");
        } else {
            continue;
        }
        g->item_seq[n++] = s;
    }
    if (n == 0) {
        *n_live = 0;
        for (gen_seq *s = g->head; s; s = s->next)
            (*n_live)++;
        if (*n_live)
            return sx_err_set(err, SX_ELIMIT, "queued requests do not fit the KV cache");
        return SX_OK;
    }
    /* masks for every sequence that samples after this step, filled while
     * the model runs; the engine waits for them before its LM head, which
     * then computes only the logits the masks allow */
    gen_seq **mj = calloc((size_t)n, sizeof *mj);
    if (!mj)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        gen_seq *s = g->item_seq[i];
        s->mask_ok = 0;
        int samples = s->state == GS_DECODE || s->n_fed + g->items[i].n == s->n_prompt;
        if (samples && s->m && !g->items[i].logits_all) {
            mj[n_jobs++] = s;
            g->items[i].allow = s->mask;
        }
        /* the draw where the logits are (on a GPU only the token comes
         * back); the free phases sample under their own mask on the host */
        if (samples && !g->items[i].logits_all && (s->fp == GF_OFF || s->fp == GF_DOC)) {
            s->req.sampler = s->s;
            g->items[i].sample = &s->req;
        }
    }
    int n_rows = 0;
    for (int i = 0; i < n; i++)
        n_rows += g->items[i].logits_all ? g->items[i].n : 1;
    if ((rc = gen_grow_rows(g, n_rows))) {
        free(mj);
        return sx_err_set(err, rc, "out of memory");
    }
    if (trace_file) {
        for (int i = 0; i < n; i++) {
            int pf = g->item_seq[i]->state == GS_PREFILL;
            *(pf ? &tr.pf_rows : &tr.dec_rows) += 1;
            *(pf ? &tr.pf_tok : &tr.dec_tok) += g->items[i].n;
        }
        tr.masks = n_jobs;
        tr.t_fwd = gen_now_ms();
    }
    gen_masks_post(g, mj, n_jobs);
    sx_error serr;
    rc = sx_backend_step_masked(g->e, g->items, n, g->logits, masks_ready, g, &serr);
    if (trace_file)
        tr.t_fwd1 = gen_now_ms();
    gen_masks_wait(g);
    if (trace_file)
        tr.t_mw = gen_now_ms();
    free(mj);
    if (rc) {
        for (int i = 0; i < n; i++)
            gen_finish(g, g->item_seq[i], SX_FINISH_ERROR, &serr);
        gen_reap(g);
        return sx_err_set(err, rc, "forward step failed: %s", serr.msg);
    }
    size_t r0 = 0;
    for (int i = 0; i < n; i++) {
        gen_seq *s = g->item_seq[i];
        float *row = g->logits + r0 * (size_t)g->vocab_rows;
        r0 += g->items[i].logits_all ? (size_t)g->items[i].n : 1;
        if (g->items[i].logits_all) {
            if ((rc = gen_spec_verify(g, s, row)))
                return sx_err_set(err, rc, "generation failed");
            continue;
        }
        if (s->state == GS_PREFILL) {
            s->n_fed += g->items[i].n;
            /* the chunk need not stop at the prefix to cache: the engine
             * forks any prefix of a sequence, and an extra pass for the
             * rest of a chunk costs about a decode step's weight reads */
            if (s->cache_at && s->n_fed >= s->cache_at)
                gen_prefix_store(g, s);
            if (s->n_fed < s->n_prompt)
                continue;
            gen_prefix_store_prompt(g, s);
        } else {
            s->n_feed = 0;
        }
        rc = g->items[i].sample ? gen_advance_sampled(g, s, g->items[i].sample)
                                : gen_advance(g, s, row);
        if (rc)
            return sx_err_set(err, rc, "generation failed");
    }
    gen_reap(g);
    *n_live = 0;
    for (gen_seq *s = g->head; s; s = s->next)
        (*n_live)++;
    if (trace_file)
        trace_step(g, &tr);
    return SX_OK;
}
