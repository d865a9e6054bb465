/* sx_gen: request bookkeeping (add, cancel, admission, completion events).
 * The step itself is in gen_step.c. */
#include <stdlib.h>
#include <string.h>
#include "engine/gen_internal.h"
#include "engine/gen_spec_internal.h"

int gen_feed_push(gen_seq *s, int32_t tok)
{
    if (s->n_feed == s->cap_feed) {
        int cap = s->cap_feed ? 2 * s->cap_feed : 16;
        int32_t *v = realloc(s->feed, (size_t)cap * sizeof *v);
        if (!v)
            return SX_ENOMEM;
        s->feed = v;
        s->cap_feed = cap;
    }
    s->feed[s->n_feed++] = tok;
    return SX_OK;
}

static void seq_free(sx_gen *g, gen_seq *s)
{
    gen_spec_free(g, s);
    if (s->kv >= 0)
        sx_backend_seq_free(g->e, s->kv);
    g->kv_reserved -= s->held;
    sx_matcher_free(s->fm ? s->fm : s->m);
    free(s->fmask);
    sx_sampler_free(s->s);
    free(s->prompt);
    free(s->feed);
    free(s->mask);
    free(s);
}

int sx_gen_new(sx_backend *e, const sx_tokenizer *tok, const sx_gen_opts *opts, sx_gen_cb cb,
               void *cb_ctx, sx_gen **out, sx_error *err)
{
    *out = NULL;
    if (!e || !tok || !cb)
        return sx_err_set(err, SX_EINVAL, "sx_gen_new: engine, tokenizer and callback are required");
    sx_gen *g = calloc(1, sizeof *g);
    if (!g)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    g->e = e;
    g->tok = tok;
    g->cb = cb;
    g->cb_ctx = cb_ctx;
    g->o.prefill_chunk = 256;
    g->o.max_batch = 32;
    g->o.mask_threads = 1;
    if (opts) {
        if (opts->prefill_chunk > 0)
            g->o.prefill_chunk = opts->prefill_chunk;
        if (opts->max_batch > 0)
            g->o.max_batch = opts->max_batch;
        if (opts->mask_threads > 0)
            g->o.mask_threads = opts->mask_threads;
    }
    g->vocab_rows = sx_backend_model(e)->cfg.vocab_rows;
    g->mask_words = (g->vocab_rows + 31) / 32;
    g->eos[0] = sx_tok_find(tok, "<|im_end|>", 10);
    g->eos[1] = sx_tok_find(tok, "<|endoftext|>", 13);
    g->kv_capacity = sx_backend_free_tokens(e);
    g->o.prefix_cache_tokens = !opts || !opts->prefix_cache_tokens ? g->kv_capacity
                               : opts->prefix_cache_tokens < 0   ? 0
                                                                 : opts->prefix_cache_tokens;
    g->cbuf = malloc(GEN_CBUF);
    if (!g->cbuf) {
        sx_gen_free(g);
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    int rc = gen_masks_start(g);
    if (rc) {
        sx_gen_free(g);
        return sx_err_set(err, rc, "cannot start mask threads");
    }
    *out = g;
    return SX_OK;
}

void sx_gen_free(sx_gen *g)
{
    if (!g)
        return;
    if (g->workers)
        gen_masks_stop(g);
    while (g->head) {
        gen_seq *s = g->head;
        g->head = s->next;
        seq_free(g, s);
    }
    gen_prefix_free_all(g);
    free(g->items);
    free(g->item_seq);
    free(g->logits);
    free(g->draft_logits);
    sx_bytes_free(&g->piece);
    sx_ids_free(&g->cids);
    free(g->cbuf);
    free(g);
}

int sx_gen_add(sx_gen *g, const int32_t *prompt, int n_prompt, const sx_gen_params *p, void *user,
               int *handle, sx_error *err)
{
    int rc;
    gen_seq *s = NULL;
    if (n_prompt <= 0 || !prompt)
        return sx_err_set(err, SX_EINVAL, "the prompt is empty");
    if (p->prefix_len < 0)
        return sx_err_set(err, SX_EINVAL, "prefix_len must be >= 0");
    if (p->max_tokens <= 0)
        return sx_err_set(err, SX_EINVAL, "max_tokens must be positive (got %d)", p->max_tokens);
    if ((rc = sx_sampling_check(&p->sampling, err)) || (rc = gen_spec_check(g, p, err)))
        return rc;
    int64_t reserve = (int64_t)n_prompt + p->max_tokens + 32;
    if (reserve > g->kv_capacity)
        return sx_err_set(err, SX_ELIMIT,
                          "prompt (%d tokens) plus max_tokens (%d) exceed the KV cache (%lld tokens)",
                          n_prompt, p->max_tokens, (long long)g->kv_capacity);
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= g->vocab_rows)
            return sx_err_set(err, SX_EINVAL, "prompt token %d at %d is outside the vocabulary",
                              prompt[i], i);
    gen_seq *leader = NULL;
    for (gen_seq *l = g->head; p->fork_of > 0 && l; l = l->next)
        if (l->handle == p->fork_of && l->state != GS_DONE)
            leader = l->leader ? l->leader : l;
    if (leader && (leader->n_prompt != n_prompt ||
                   memcmp(leader->prompt, prompt, (size_t)n_prompt * sizeof *prompt)))
        return sx_err_set(err, SX_EINVAL, "fork_of %d names a request over another prompt",
                          p->fork_of);
    s = calloc(1, sizeof *s);
    if (!s)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    s->kv = -1;
    /* a one-token prompt has nothing to share */
    s->leader = n_prompt > 1 ? leader : NULL;
    s->fork_at = n_prompt - 1;
    s->p = *p;
    s->reserve = reserve;
    s->prompt = malloc((size_t)n_prompt * sizeof *s->prompt);
    if (!s->prompt) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    memcpy(s->prompt, prompt, (size_t)n_prompt * sizeof *prompt);
    s->n_prompt = n_prompt;
    if ((rc = sx_sampler_new(&p->sampling, g->vocab_rows, sx_tok_vocab_size(g->tok), &s->s, err)))
        goto fail;
    if (p->grammar) {
        if ((rc = sx_matcher_new(p->grammar, &s->m, err)))
            goto fail;
        if (p->deadline_ms > 0)
            sx_matcher_set_bounds(s->m, p->deadline_ms, NULL);
        s->mask = calloc((size_t)g->mask_words, sizeof *s->mask);
        if (!s->mask) {
            rc = sx_err_set(err, SX_ENOMEM, "out of memory");
            goto fail;
        }
        /* The budget guarantee starts here: the shortest document must fit. */
        int need = p->free ? 0 : gen_completion_tokens(g, s);
        if (need > p->max_tokens) {
            rc = sx_err_set(err, SX_ELIMIT,
                            "max_tokens %d is too small: the shortest valid output needs %d tokens",
                            p->max_tokens, need);
            goto fail;
        }
    }
    if (p->free && (rc = gen_free_init(g, s, err)))
        goto fail;
    if ((rc = gen_spec_new(g, s, err)))
        goto fail;
    s->handle = ++g->next_handle;
    s->user = user;
    s->state = GS_QUEUED;
    s->t_add = gen_now_ms();
    gen_seq **tail = &g->head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = s;
    if (handle)
        *handle = s->handle;
    return SX_OK;
fail:
    seq_free(g, s);
    return rc;
}

void sx_gen_cancel(sx_gen *g, int handle)
{
    for (gen_seq *s = g->head; s; s = s->next)
        if (s->handle == handle)
            s->cancelled = 1;
}

void gen_finish(sx_gen *g, gen_seq *s, int finish, const sx_error *error)
{
    sx_gen_event ev;
    memset(&ev, 0, sizeof ev);
    ev.handle = s->handle;
    ev.user = s->user;
    ev.done = 1;
    ev.finish = finish;
    if (error)
        ev.error = *error;
    ev.n_prompt = s->n_prompt;
    ev.n_completion = s->n_completion;
    ev.n_forced = s->n_forced;
    ev.n_cached = s->n_cached;
    ev.ttft_ms = s->t_first > 0 ? s->t_first - s->t_add : 0;
    /* flush a held-back partial character into the last piece */
    g->piece.n = 0;
    sx_detok_finish(&s->detok, &g->piece);
    ev.piece = g->piece.v ? g->piece.v : "";
    ev.piece_len = g->piece.n;
    ev.token = -1;
    gen_fork_release(g, s);
    s->leader = NULL;
    s->state = GS_DONE;
    g->cb(&ev, g->cb_ctx);
}

/* Removes finished requests from the list and releases them. */
void gen_reap(sx_gen *g)
{
    gen_seq **pp = &g->head;
    while (*pp) {
        gen_seq *s = *pp;
        if (s->state == GS_DONE) {
            *pp = s->next;
            seq_free(g, s);
        } else {
            pp = &s->next;
        }
    }
}
