/* sx_sampler: parameters, history, and step 5 (the draw).  Steps 1-4 are in
 * engine/sampler/sampler_plan.c.
 *
 * The draw walks the candidates in token id order, adding weights until
 * they pass u * total, with u = sx_rng_uniform(seed, number of accepted
 * tokens).  Id order (not rank order) is what the GPU kernel can follow
 * with a block-wide prefix sum, so both pick the same token from the same u. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sampler/sampler_internal.h"
#include "common/sx_sample_math.h"

#define NGRAM_MAX 1024

void sx_sampling_default(sx_sampling *s)
{
    memset(s, 0, sizeof *s);
    s->temperature = 1.0f;
    s->top_p = 1.0f;
    s->repetition_penalty = 1.0f;
}

int sx_sampling_check(const sx_sampling *s, sx_error *err)
{
    if (!s)
        return sx_err_set(err, SX_EINVAL, "sampling: no parameters");
    if (!(s->temperature >= 0.0f) || isinf(s->temperature))
        return sx_err_setp(err, SX_EINVAL, "/temperature", -1,
                           "temperature must be a finite number >= 0");
    if (s->top_k < 0)
        return sx_err_setp(err, SX_EINVAL, "/top_k", -1, "top_k must be >= 0 (0 = off)");
    if (!(s->top_p > 0.0f && s->top_p <= 1.0f))
        return sx_err_setp(err, SX_EINVAL, "/top_p", -1, "top_p must be in (0, 1] (1 = off)");
    if (!(s->min_p >= 0.0f && s->min_p <= 1.0f))
        return sx_err_setp(err, SX_EINVAL, "/min_p", -1, "min_p must be in [0, 1] (0 = off)");
    if (!(s->repetition_penalty > 0.0f) || isinf(s->repetition_penalty))
        return sx_err_setp(err, SX_EINVAL, "/repetition_penalty", -1,
                           "repetition_penalty must be a finite number > 0 (1 = off)");
    if (s->no_repeat_ngram < 0 || s->no_repeat_ngram > NGRAM_MAX)
        return sx_err_setp(err, SX_EINVAL, "/no_repeat_ngram", -1,
                           "no_repeat_ngram must be in [0, %d] (0 = off)", NGRAM_MAX);
    if (s->top_n < 0 || s->top_n > SX_SAMPLER_MAX_TOPN)
        return sx_err_setp(err, SX_EINVAL, "/top_n", -1, "top_n must be in [0, %d]",
                           SX_SAMPLER_MAX_TOPN);
    if (!(s->presence_penalty >= -2.0f && s->presence_penalty <= 2.0f))
        return sx_err_setp(err, SX_EINVAL, "/presence_penalty", -1,
                           "presence_penalty must be in [-2, 2] (0 = off)");
    if (!(s->frequency_penalty >= -2.0f && s->frequency_penalty <= 2.0f))
        return sx_err_setp(err, SX_EINVAL, "/frequency_penalty", -1,
                           "frequency_penalty must be in [-2, 2] (0 = off)");
    if (s->n_bias < 0 || (s->n_bias > 0 && (!s->bias_ids || !s->bias_vals)))
        return sx_err_setp(err, SX_EINVAL, "/logit_bias", -1, "logit_bias: no tokens or values");
    for (int i = 0; i < s->n_bias; i++)
        if (!(s->bias_vals[i] >= -100.0f && s->bias_vals[i] <= 100.0f) || s->bias_ids[i] < 0)
            return sx_err_setp(err, SX_EINVAL, "/logit_bias", -1,
                               "logit_bias: token %d: ids must be >= 0 and values in [-100, 100]",
                               (int)s->bias_ids[i]);
    return SX_OK;
}

int sx_sampler_new(const sx_sampling *params, int vocab_rows, int vocab_valid, sx_sampler **out,
                   sx_error *err)
{
    int rc;
    sx_sampler *s = NULL;
    if (!out)
        return sx_err_set(err, SX_EINVAL, "sampler: no output");
    *out = NULL;
    if ((rc = sx_sampling_check(params, err)))
        return rc;
    if (vocab_rows <= 0 || vocab_valid <= 0 || vocab_valid > vocab_rows)
        return sx_err_set(err, SX_EINVAL, "sampler: bad vocabulary size %d (valid %d)",
                          vocab_rows, vocab_valid);
    if (!(s = calloc(1, sizeof *s)))
        goto nomem;
    s->p = *params;
    s->rows = vocab_rows;
    s->valid = vocab_valid;
    if (params->n_bias > 0) {
        for (int i = 0; i < params->n_bias; i++)
            if (params->bias_ids[i] >= vocab_valid) {
                sx_sampler_free(s);
                return sx_err_setp(err, SX_EINVAL, "/logit_bias", -1,
                                   "logit_bias: token %d is not in the vocabulary (%d tokens)",
                                   (int)params->bias_ids[i], vocab_valid);
            }
        s->bias_id = malloc((size_t)params->n_bias * sizeof *s->bias_id);
        s->bias_v = malloc((size_t)params->n_bias * sizeof *s->bias_v);
        if (!s->bias_id || !s->bias_v)
            goto nomem;
        memcpy(s->bias_id, params->bias_ids, (size_t)params->n_bias * sizeof *s->bias_id);
        memcpy(s->bias_v, params->bias_vals, (size_t)params->n_bias * sizeof *s->bias_v);
        s->p.bias_ids = s->bias_id;
        s->p.bias_vals = s->bias_v;
    } else {
        s->p.bias_ids = NULL;
        s->p.bias_vals = NULL;
        s->p.n_bias = 0;
    }
    if (!(s->seen = calloc(((size_t)vocab_rows + 31) / 32, sizeof *s->seen)))
        goto nomem;
    *out = s;
    return SX_OK;
nomem:
    sx_sampler_free(s);
    return sx_err_set(err, SX_ENOMEM, "sampler: out of memory");
}

void sx_sampler_free(sx_sampler *s)
{
    if (!s)
        return;
    free(s->hist);
    free(s->seen);
    free(s->cid);
    free(s->cl);
    free(s->cw);
    free(s->ck);
    free(s->scratch);
    free(s->ban_id);
    free(s->ban_l);
    free(s->bias_id);
    free(s->bias_v);
    free(s);
}

int sx_sampler_accept(sx_sampler *s, int32_t token)
{
    if (!s || token < 0 || token >= s->rows)
        return SX_EINVAL;
    if (s->n_hist == s->cap_hist) {
        int cap = s->cap_hist ? s->cap_hist * 2 : 256;
        int32_t *h = realloc(s->hist, (size_t)cap * sizeof *h);
        if (!h)
            return SX_ENOMEM;
        s->hist = h;
        s->cap_hist = cap;
    }
    s->hist[s->n_hist++] = token;
    return SX_OK;
}

const sx_sampling *sx_sampler_params(const sx_sampler *s)
{
    return &s->p;
}

const int32_t *sx_sampler_history(const sx_sampler *s, int *n)
{
    *n = s->n_hist;
    return s->hist;
}

int sx_sampler_vocab_valid(const sx_sampler *s)
{
    return s->valid;
}

void sx_sampler_rollback(sx_sampler *s, int n)
{
    if (!s || n <= 0)
        return;
    s->n_hist = n >= s->n_hist ? 0 : s->n_hist - n;
}

/* Step 5 over every allowed token (no truncation).  Weights are summed in
 * blocks of 64 (vectorised), then the block that passes the target is
 * walked token by token. */
static int32_t draw_full(const sx_sampler *s, const float *l, const sx_plan *pl, double u)
{
    enum { B = 64 };
    float T = s->p.temperature, m = pl->m, inv_t = 1.0f / T;
    double total = T == 1.0f ? pl->z1 : sx_row_mass(l, s->rows, m, inv_t);
    double target = u * total, c = 0;
    for (int b = 0; b < s->rows; b += B) {
        int n = s->rows - b < B ? s->rows - b : B;
        double bs = sx_row_mass(l + b, n, m, inv_t);
        if (c + bs <= target) {
            c += bs;
            continue;
        }
        for (int t = b; t < b + n; t++) {
            float w = sx_weight(l[t], m, inv_t);
            c += w;
            if (c > target)
                return t;
        }
    }
    /* rounding left the target at the very end: the last token with weight */
    for (int t = s->rows - 1; t > pl->argmax; t--)
        if (sx_weight(l[t], m, inv_t) > 0)
            return t;
    return pl->argmax;
}

/* Step 5 over the candidate list. */
static int32_t draw_list(const sx_sampler *s, const sx_plan *pl, double u)
{
    double total = 0, c = 0;
    for (int i = 0; i < pl->n; i++)
        total += s->cw[i];
    double target = u * total;
    int32_t last = pl->argmax;
    for (int i = 0; i < pl->n; i++) {
        c += s->cw[i];
        if (c > target)
            return s->cid[i];
        if (s->cw[i] > 0)
            last = s->cid[i];
    }
    return last;
}

int sx_sampler_sample(sx_sampler *s, float *logits, const uint32_t *mask, sx_sample *out,
                      sx_error *err)
{
    int rc;
    sx_plan pl;
    if (!s || !logits || !out)
        return sx_err_set(err, SX_EINVAL, "sampler: NULL argument");
    memset(out, 0, sizeof *out);
    out->token = -1;
    if ((rc = sx_sampler_plan(s, logits, mask, &pl, out, err)))
        return rc;
    int32_t t = pl.argmax;
    if (s->p.temperature > 0.0f) {
        double u = sx_rng_uniform(s->p.seed, (uint64_t)s->n_hist);
        t = pl.full ? draw_full(s, logits, &pl, u) : draw_list(s, &pl, u);
    }
    out->token = t;
    out->logprob = (float)((double)logits[t] - pl.lse);
    return SX_OK;
}

int sx_sampler_support(sx_sampler *s, float *logits, const uint32_t *mask, uint8_t *member,
                       sx_error *err)
{
    int rc;
    sx_plan pl;
    if ((rc = sx_sampler_plan(s, logits, mask, &pl, NULL, err)))
        return rc;
    memset(member, 0, (size_t)s->rows);
    if (s->p.temperature == 0.0f) {
        member[pl.argmax] = 1;
    } else if (pl.full) {
        for (int t = 0; t < s->rows; t++)
            member[t] = logits[t] != -INFINITY;
    } else {
        for (int i = 0; i < pl.n; i++)
            member[s->cid[i]] = 1;
    }
    return SX_OK;
}
