/* sx_beam_run: beam search as transformers' _beam_search does it (see
 * engine/beam.h for the rules), over forks of one prefilled prompt. */
#include "engine/beam.h"
#include "engine/gen_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct beam {
    int          kv;      /* engine sequence: prompt + ids[0..n-1) (the last id is fed next step) */
    float        score;   /* cumulative log-probability */
    int32_t     *ids;
    int          n;
    sx_matcher  *m;       /* state after ids[0..n) (NULL without a grammar) */
} beam;

typedef struct cand {
    float   score;
    int     parent;
    int32_t tok;
    int     ends;         /* a stopping criterion hit (EOS, budget, complete document) */
    int     complete;     /* ... and the hypothesis is a finished one (not cut short) */
    int     stop;         /* ... by an EOS or a complete document, not the budget */
    int     dead;         /* the document could no longer close within the budget */
} cand;

typedef struct hyp {
    float    score, sum;
    int32_t *ids;
    int      n;
    int      finish;
} hyp;

typedef struct run {
    sx_backend       *e;
    const sx_beam_params *p;
    int               B, K, V, mask_words;
    beam              run[SX_BEAM_MAX], next[SX_BEAM_MAX];
    int               n_run;
    cand             *c;
    int               n_c;
    hyp               pool[SX_BEAM_MAX], cut[SX_BEAM_MAX];
    int               n_pool, n_cut;
    float            *logits;
    uint32_t         *mask;
    int64_t           forks;
    uint8_t          *cbuf;     /* shortest-completion scratch (budget steering) */
    sx_ids            cids;
} run;

static void beam_drop(sx_backend *e, beam *b)
{
    if (b->kv >= 0)
        sx_backend_seq_free(e, b->kv);
    sx_matcher_free(b->m);
    free(b->ids);
    memset(b, 0, sizeof *b);
    b->kv = -1;
}

static int is_eos(const sx_beam_params *p, int32_t t)
{
    for (int i = 0; i < p->n_eos; i++)
        if (p->eos[i] == t)
            return 1;
    return 0;
}

/* Inserts into a list sorted best first, after any equal score (what
 * torch.topk over [old, new] keeps on a tie: the earlier index); keeps at
 * most cap entries.  Returns the slot, or -1 when it did not make the cut. */
static int topk_slot(float *scores_at, int stride, int n, int cap, float s)
{
#define AT(i) (*(float *)((char *)scores_at + (size_t)(i) * (size_t)stride))
    if (n == cap && !(s > AT(n - 1)))
        return -1;
    int i = n < cap ? n : cap - 1;
    while (i > 0 && s > AT(i - 1))
        i--;
    return i;
#undef AT
}

static void cand_push(run *r, const cand *x)
{
    int at = topk_slot(&r->c[0].score, sizeof(cand), r->n_c, r->K, x->score);
    if (at < 0)
        return;
    int last = r->n_c < r->K ? r->n_c : r->K - 1;
    memmove(r->c + at + 1, r->c + at, (size_t)(last - at) * sizeof *r->c);
    r->c[at] = *x;
    if (r->n_c < r->K)
        r->n_c++;
}

/* Inserts ids (taken: freed when it does not make the cut) into a list. */
static void hyp_insert(hyp *list, int *n, int cap, int32_t *ids, int n_ids, float score, float sum,
                       int finish)
{
    int at = topk_slot(&list[0].score, sizeof(hyp), *n, cap, score);
    if (at < 0) {
        free(ids);
        return;
    }
    if (*n == cap)
        free(list[cap - 1].ids);
    int last = *n < cap ? *n : cap - 1;
    memmove(list + at + 1, list + at, (size_t)(last - at) * sizeof *list);
    list[at] = (hyp){score, sum, ids, n_ids, finish};
    if (*n < cap)
        (*n)++;
}

static int hyp_push(hyp *list, int *n, int cap, const beam *parent, int32_t tok, float score,
                    float sum, int finish)
{
    if (topk_slot(&list[0].score, sizeof(hyp), *n, cap, score) < 0)
        return SX_OK;
    int32_t *ids = malloc(((size_t)parent->n + 1) * sizeof *ids);
    if (!ids)
        return SX_ENOMEM;
    if (parent->n)   /* the prompt-only beam has no ids yet */
        memcpy(ids, parent->ids, (size_t)parent->n * sizeof *ids);
    ids[parent->n] = tok;
    hyp_insert(list, n, cap, ids, parent->n + 1, score, sum, finish);
    return SX_OK;
}

/* The candidates of one beam from its logits row: log-softmax, then the
 * grammar's mask (after it, as a masking logits processor would see it). */
static int expand(run *r, int b, const float *row, sx_error *err)
{
    beam *x = &r->run[b];
    int mrc = x->m ? sx_matcher_fill_mask(x->m, r->mask) : SX_OK;
    if (mrc == SX_ELIMIT)
        return sx_err_set(err, SX_ELIMIT,
                          "beam search: the deadline passed while the grammar filled a mask");
    if (mrc)
        return sx_err_set(err, SX_EINTERNAL, "beam search: the grammar's mask failed");
    float mx = -INFINITY;
    for (int t = 0; t < r->V; t++)
        if (row[t] > mx)
            mx = row[t];
    double sum = 0;
    for (int t = 0; t < r->V; t++)
        sum += expf(row[t] - mx);   /* f32 terms, f64 sum: within f32 rounding of torch */
    float lse = (float)(mx + log(sum));
    for (int t = 0; t < r->V; t++) {
        if (x->m && !(r->mask[t >> 5] >> (t & 31) & 1))
            continue;
        float s = x->score + (row[t] - lse);
        if (r->n_c == r->K && !(s > r->c[r->K - 1].score))
            continue;
        cand c = {s, b, t, 0, 0, 0, 0};
        cand_push(r, &c);
    }
    return SX_OK;
}

/* Which candidates end here, and whether as a finished hypothesis. */
static int classify(run *r, int gen_len, sx_error *err)
{
    const sx_beam_params *p = r->p;
    for (int k = 0; k < r->n_c; k++) {
        cand *c = &r->c[k];
        int complete = 0;
        if (is_eos(p, c->tok)) {
            c->ends = c->complete = c->stop = 1;
            continue;
        }
        sx_matcher *m = r->run[c->parent].m;
        if (m) {
            int rc = sx_matcher_accept(m, c->tok, err);
            if (rc)
                return rc;
            complete = sx_matcher_is_complete(m);
            if (!complete && r->cbuf) {
                int need = gen_matcher_completion(p->tok, m, r->cbuf, GEN_CBUF, &r->cids);
                c->dead = need >= 0 && need > p->max_tokens - (gen_len + 1);
            }
            sx_matcher_rollback(m, 1);
            if (c->dead)
                continue;
        }
        c->ends = complete || gen_len + 1 >= p->max_tokens;
        c->complete = complete || (c->ends && !m);
        c->stop = complete;
    }
    return SX_OK;
}

/* No candidate runs on and too few documents are finished: every running
 * beam (whose completion fits, by the budget rule) is closed with its
 * shortest completion and becomes a finished hypothesis. */
static int close_running(run *r, sx_error *err)
{
    const sx_beam_params *p = r->p;
    for (int b = 0; b < r->n_run; b++) {
        beam *x = &r->run[b];
        int need = gen_matcher_completion(p->tok, x->m, r->cbuf, GEN_CBUF, &r->cids);
        if (need < 0 || need > p->max_tokens - x->n)
            continue;
        int32_t *ids = malloc(((size_t)x->n + (size_t)need + 1) * sizeof *ids);
        if (!ids)
            return sx_err_set(err, SX_ENOMEM, "beam search: out of memory");
        if (x->n)
            memcpy(ids, x->ids, (size_t)x->n * sizeof *ids);
        for (int i = 0; i < need; i++) {
            int rc = sx_matcher_accept(x->m, r->cids.v[i], err);
            if (rc) {
                free(ids);
                return rc;
            }
            ids[x->n + i] = r->cids.v[i];
        }
        if (!sx_matcher_can_end(x->m)) {
            free(ids);
            return sx_err_set(err, SX_EINTERNAL, "beam search: a shortest completion left the document open");
        }
        int len = x->n + need;
        /* a document that could go on (trailing space) ends with an end
         * token, as a sampled one does, where the budget has room */
        if (!sx_matcher_is_complete(x->m) && p->n_eos > 0 && len < p->max_tokens)
            ids[len++] = p->eos[0];
        float div = (float)pow((double)len, (double)p->length_penalty);
        hyp_insert(r->pool, &r->n_pool, r->B, ids, len, x->score / div, x->score, SX_BEAM_STOP);
    }
    return SX_OK;
}

static int replay(const sx_beam_params *p, const beam *parent, int32_t tok, sx_matcher **out,
                  sx_error *err)
{
    int rc = sx_matcher_new(p->grammar, out, err);
    if (!rc && p->deadline_ms > 0)
        sx_matcher_set_bounds(*out, p->deadline_ms, NULL);
    for (int i = 0; !rc && i < parent->n; i++)
        rc = sx_matcher_accept(*out, parent->ids[i], err);
    if (!rc)
        rc = sx_matcher_accept(*out, tok, err);
    return rc;
}

/* The running beams of the next step: the first B candidates that did not
 * end.  A parent's last child takes its engine sequence and matcher; the
 * ones before fork the sequence (full blocks shared) and replay the
 * matcher from the parent's tokens (a matcher has no copy). */
static int advance(run *r, sx_error *err)
{
    int n_next = 0, children[SX_BEAM_MAX] = {0}, rc = SX_OK;
    const cand *pick[SX_BEAM_MAX];
    for (int k = 0; k < r->n_c && n_next < r->B; k++)
        if (!r->c[k].ends && !r->c[k].dead) {
            pick[n_next++] = &r->c[k];
            children[r->c[k].parent]++;
        }
    for (int b = 0; b < r->n_run; b++)
        if (!children[b])
            beam_drop(r->e, &r->run[b]);   /* frees its KV before the forks need room */
    int taken[SX_BEAM_MAX] = {0};
    for (int j = 0; j < n_next; j++) {
        r->next[j] = (beam){.kv = -1};
        beam *par = &r->run[pick[j]->parent], *nb = &r->next[j];
        nb->score = pick[j]->score;
        nb->ids = malloc(((size_t)par->n + 1) * sizeof *nb->ids);
        if (!nb->ids) {
            rc = sx_err_set(err, SX_ENOMEM, "beam search: out of memory");
            n_next = j + 1;
            goto fail;
        }
        if (par->n)
            memcpy(nb->ids, par->ids, (size_t)par->n * sizeof *nb->ids);
        nb->ids[par->n] = pick[j]->tok;
        nb->n = par->n + 1;
        if (--children[pick[j]->parent] == 0 && !taken[pick[j]->parent]) {
            /* last child: takes what the parent holds */
            nb->kv = par->kv;
            nb->m = par->m;
            par->kv = -1;
            par->m = NULL;
            taken[pick[j]->parent] = 1;
            if (nb->m && (rc = sx_matcher_accept(nb->m, pick[j]->tok, err))) {
                n_next = j + 1;
                goto fail;
            }
        } else {
            if ((rc = sx_backend_seq_fork(r->e, par->kv, sx_backend_seq_len(r->e, par->kv), &nb->kv, err)) ||
                (r->p->grammar && (rc = replay(r->p, par, pick[j]->tok, &nb->m, err)))) {
                n_next = j + 1;
                goto fail;
            }
            r->forks++;
        }
    }
    for (int b = 0; b < r->n_run; b++)
        beam_drop(r->e, &r->run[b]);
    memcpy(r->run, r->next, (size_t)n_next * sizeof *r->run);
    r->n_run = n_next;
    return SX_OK;
fail:
    for (int j = 0; j < n_next; j++)
        beam_drop(r->e, &r->next[j]);
    return rc;
}

static int prefill(run *r, const int32_t *prompt, int n_prompt, sx_error *err)
{
    int chunk = r->p->prefill_chunk > 0 ? r->p->prefill_chunk : 512, rc;
    if ((rc = sx_backend_seq_new(r->e, &r->run[0].kv, err)))
        return rc;
    r->n_run = 1;
    for (int at = 0; at < n_prompt; at += chunk) {
        int n = n_prompt - at < chunk ? n_prompt - at : chunk;
        sx_step_item it = {.seq = r->run[0].kv, .tokens = prompt + at, .n = n};
        if ((rc = sx_backend_step(r->e, &it, 1, r->logits, err)))
            return rc;
    }
    if (r->p->grammar) {
        if ((rc = sx_matcher_new(r->p->grammar, &r->run[0].m, err)))
            return rc;
        if (r->p->deadline_ms > 0)
            sx_matcher_set_bounds(r->run[0].m, r->p->deadline_ms, NULL);
    }
    return SX_OK;
}

static int decode(run *r, sx_error *err)
{
    sx_step_item items[SX_BEAM_MAX];
    for (int b = 0; b < r->n_run; b++)
        items[b] = (sx_step_item){.seq = r->run[b].kv, .tokens = &r->run[b].ids[r->run[b].n - 1], .n = 1};
    return sx_backend_step(r->e, items, r->n_run, r->logits, err);
}

static int check(const sx_backend *e, const int32_t *prompt, int n_prompt, const sx_beam_params *p,
                 sx_error *err)
{
    if (p->num_beams < 1 || p->num_beams > SX_BEAM_MAX)
        return sx_err_set(err, SX_EINVAL, "num_beams must be 1..%d", SX_BEAM_MAX);
    if (p->num_return < 0 || p->num_return > p->num_beams)
        return sx_err_set(err, SX_EINVAL, "num_return_sequences must be 1..num_beams (%d)", p->num_beams);
    if (p->max_tokens < 1)
        return sx_err_set(err, SX_EINVAL, "beam search needs max_tokens > 0");
    if (p->n_eos < 0 || p->n_eos > 8)
        return sx_err_set(err, SX_EINVAL, "beam search takes 0..8 end tokens");
    if (p->early_stopping < SX_BEAM_EARLY_FALSE || p->early_stopping > SX_BEAM_EARLY_NEVER)
        return sx_err_set(err, SX_EINVAL, "early_stopping must be true, false or never");
    if (!isfinite(p->length_penalty))
        return sx_err_set(err, SX_EINVAL, "length_penalty must be finite");
    if (n_prompt < 1)
        return sx_err_set(err, SX_EINVAL, "beam search needs a prompt");
    int V = sx_backend_model(e)->cfg.vocab_rows;
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= V)
            return sx_err_set(err, SX_EINVAL, "prompt token %d out of range", (int)prompt[i]);
    return SX_OK;
}

int sx_beam_run(sx_backend *e, const int32_t *prompt, int n_prompt, const sx_beam_params *p,
                sx_beam_result *out, sx_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = check(e, prompt, n_prompt, p, err);
    if (rc)
        return rc;
    run *r = calloc(1, sizeof *r);
    if (!r)
        return sx_err_set(err, SX_ENOMEM, "beam search: out of memory");
    r->e = e;
    r->p = p;
    r->B = p->num_beams;
    r->K = (1 + p->n_eos > 2 ? 1 + p->n_eos : 2) * r->B;
    r->V = sx_backend_model(e)->cfg.vocab_rows;
    r->mask_words = (r->V + 31) / 32;
    for (int b = 0; b < SX_BEAM_MAX; b++)
        r->run[b].kv = r->next[b].kv = -1;
    sx_engine_lm_stats st0, st1;
    sx_backend_lm_stats_get(e, &st0);
    r->c = malloc((size_t)r->K * sizeof *r->c);
    r->logits = malloc((size_t)r->B * (size_t)r->V * sizeof *r->logits);
    r->mask = malloc((size_t)r->mask_words * sizeof *r->mask);
    if (p->grammar && p->tok && !(r->cbuf = malloc(GEN_CBUF))) {
        rc = sx_err_set(err, SX_ENOMEM, "beam search: out of memory");
        goto fail;
    }
    if (!r->c || !r->logits || !r->mask) {
        rc = sx_err_set(err, SX_ENOMEM, "beam search: out of memory");
        goto fail;
    }
    if ((rc = prefill(r, prompt, n_prompt, err)))
        goto fail;
    const float L = p->length_penalty;
    int unsatisfied = 1;   /* transformers' is_early_stop_heuristic_unsatisfied */
    for (int gen = 0;; gen++) {
        if (gen > 0) {
            if ((rc = decode(r, err)))
                goto fail;
            out->steps++;
        }
        r->n_c = 0;
        for (int b = 0; b < r->n_run; b++)
            if ((rc = expand(r, b, r->logits + (size_t)b * (size_t)r->V, err)))
                goto fail;
        if ((rc = classify(r, gen, err)))
            goto fail;
        /* finished hypotheses: only the first B candidates may finish */
        float div = (float)pow((double)gen + 1, (double)L);
        int full = r->n_pool == r->B && p->early_stopping == SX_BEAM_EARLY_TRUE;
        for (int k = 0; k < r->n_c && k < r->B && !full; k++) {
            const cand *c = &r->c[k];
            if (!c->ends)
                continue;
            if (c->complete)
                rc = hyp_push(r->pool, &r->n_pool, r->B, &r->run[c->parent], c->tok, c->score / div,
                              c->score, c->stop ? SX_BEAM_STOP : SX_BEAM_LENGTH);
            else
                rc = hyp_push(r->cut, &r->n_cut, r->B, &r->run[c->parent], c->tok, c->score / div,
                              c->score, SX_BEAM_LENGTH);
            if (rc) {
                sx_err_set(err, rc, "beam search: out of memory");
                goto fail;
            }
        }
        if (r->cbuf && r->n_pool < (p->num_return ? p->num_return : 1)) {
            int live = 0;
            for (int k = 0; k < r->n_c && !live; k++)
                live = !r->c[k].ends && !r->c[k].dead;
            if (!live && (rc = close_running(r, err)))
                goto fail;
        }
        if ((rc = advance(r, err)))
            goto fail;
        int len = gen + 1;
        if (unsatisfied && r->n_run > 0) {
            int best_len = p->early_stopping == SX_BEAM_EARLY_NEVER && L > 0 ? p->max_tokens : len;
            float best = r->run[0].score / (float)pow((double)best_len, (double)L);
            float worst = r->n_pool == r->B ? r->pool[r->B - 1].score : -1.0e9f;
            unsatisfied = best > worst;
        }
        if (!unsatisfied || r->n_run == 0 ||
            (p->early_stopping == SX_BEAM_EARLY_TRUE && r->n_pool == r->B))
            break;
    }
    int R = p->num_return ? p->num_return : 1;
    out->seqs = calloc((size_t)R, sizeof *out->seqs);
    if (!out->seqs) {
        rc = sx_err_set(err, SX_ENOMEM, "beam search: out of memory");
        goto fail;
    }
    for (int i = 0; i < r->n_pool && out->n < R; i++, out->n++) {
        hyp *h = &r->pool[i];
        out->seqs[out->n] = (sx_beam_seq){h->ids, h->n, h->score, h->sum, h->finish};
        h->ids = NULL;
    }
    for (int i = 0; i < r->n_cut && out->n < R; i++, out->n++) {
        hyp *h = &r->cut[i];
        out->seqs[out->n] = (sx_beam_seq){h->ids, h->n, h->score, h->sum, h->finish};
        h->ids = NULL;
    }
    out->forks = r->forks;
    sx_backend_lm_stats_get(e, &st1);
    out->tokens_run = st1.tokens - st0.tokens;
    rc = SX_OK;
    goto done;
fail:
    sx_beam_result_free(out);
done:
    for (int b = 0; b < r->n_run; b++)
        beam_drop(e, &r->run[b]);
    for (int i = 0; i < r->n_pool; i++)
        free(r->pool[i].ids);
    for (int i = 0; i < r->n_cut; i++)
        free(r->cut[i].ids);
    free(r->c);
    free(r->logits);
    free(r->mask);
    free(r->cbuf);
    sx_ids_free(&r->cids);
    free(r);
    return rc;
}

void sx_beam_result_free(sx_beam_result *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++)
        free(r->seqs[i].ids);
    free(r->seqs);
    memset(r, 0, sizeof *r);
}
