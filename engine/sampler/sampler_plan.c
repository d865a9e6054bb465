/* Steps 1-4 of the sampler (see engine/sampler/sampler.h): mask, penalties,
 * log-softmax statistics and the candidate set for top-k/top-p/min-p.
 *
 * Candidates are defined by rank: tokens ordered by logit, highest first,
 * ties by lowest id.  top-k keeps the first k ranks; top-p then keeps the
 * shortest rank prefix whose weight reaches top_p of the weight left after
 * top-k; min-p keeps tokens whose weight is at least min_p of the best
 * one's.  Weights are sx_weight (softmax numerators at the temperature).
 * The GPU kernel computes the same set (kernels/sampler.cu).
 *
 * Nothing is sorted: a threshold on the logit gathers a rank prefix that is
 * provably large enough (few tokens in practice), and radix selection finds
 * the cut points inside it. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sampler/sampler_internal.h"
#include "common/sx_sample_math.h"

static int test_and_set(uint32_t *bits, int32_t t)
{
    uint32_t b = 1u << (t & 31);
    int was = (bits[t >> 5] & b) != 0;
    bits[t >> 5] |= b;
    return was;
}

static void clear_bits(uint32_t *bits, const int32_t *ids, int n)
{
    for (int i = 0; i < n; i++)
        bits[ids[i] >> 5] = 0;
}

/* Step 2a: CTRL repetition penalty, once per distinct generated token. */
static void apply_repetition(sx_sampler *s, float *l)
{
    float rp = s->p.repetition_penalty;
    for (int i = 0; i < s->n_hist; i++) {
        int32_t t = s->hist[i];
        if (test_and_set(s->seen, t) || l[t] == -INFINITY)
            continue;
        float v = l[t] > 0 ? l[t] / rp : l[t] * rp;
        /* stay finite: an allowed token must not become masked */
        l[t] = v > FLT_MAX ? FLT_MAX : v < -FLT_MAX ? -FLT_MAX : v;
    }
    clear_bits(s->seen, s->hist, s->n_hist);
}

/* Step 2, logit_bias: added to allowed tokens only (a masked token stays
 * masked), kept finite so that an allowed token stays allowed. */
static void apply_bias(sx_sampler *s, float *l)
{
    for (int i = 0; i < s->p.n_bias; i++) {
        int32_t t = s->p.bias_ids[i];
        if (l[t] == -INFINITY)
            continue;
        float v = l[t] + s->p.bias_vals[i];
        l[t] = v > FLT_MAX ? FLT_MAX : v < -FLT_MAX ? -FLT_MAX : v;
    }
}

/* Step 2, OpenAI's penalties: each generated token's logit loses
 * frequency_penalty per occurrence and presence_penalty once. */
static void apply_presence_frequency(sx_sampler *s, float *l)
{
    float fp = s->p.frequency_penalty, pp = s->p.presence_penalty;
    for (int i = 0; i < s->n_hist; i++) {
        int32_t t = s->hist[i];
        if (l[t] == -INFINITY)
            continue;
        float v = l[t] - fp - (test_and_set(s->seen, t) ? 0.0f : pp);
        l[t] = v > FLT_MAX ? FLT_MAX : v < -FLT_MAX ? -FLT_MAX : v;
    }
    clear_bits(s->seen, s->hist, s->n_hist);
}

static int grow_bans(sx_sampler *s, int need)
{
    if (need <= s->cap_ban)
        return 0;
    int cap = s->cap_ban ? s->cap_ban * 2 : 64;
    while (cap < need)
        cap *= 2;
    int32_t *id = realloc(s->ban_id, (size_t)cap * sizeof *id);
    if (!id)
        return SX_ENOMEM;
    s->ban_id = id;
    float *v = realloc(s->ban_l, (size_t)cap * sizeof *v);
    if (!v)
        return SX_ENOMEM;
    s->ban_l = v;
    s->cap_ban = cap;
    return 0;
}

/* Step 2b: no-repeat-n-gram.  The last n-1 generated tokens followed by t
 * must not repeat an n-gram already generated; such t are set to -inf and
 * remembered (with their logits) so that they can be restored when they
 * were the only allowed tokens: the grammar outranks the n-gram rule. */
static int apply_ngram(sx_sampler *s, float *l, int *n_bans)
{
    int n = s->p.no_repeat_ngram, h = s->n_hist, nb = 0;
    *n_bans = 0;
    if (n <= 0 || h < n)
        return 0;
    const int32_t *tail = s->hist + h - (n - 1);
    for (int i = 0; i + n <= h; i++) {
        if (memcmp(s->hist + i, tail, (size_t)(n - 1) * sizeof *tail) != 0)
            continue;
        int32_t t = s->hist[i + n - 1];
        if (l[t] == -INFINITY || test_and_set(s->seen, t))
            continue;
        if (grow_bans(s, nb + 1)) {
            clear_bits(s->seen, s->ban_id, nb);
            clear_bits(s->seen, &t, 1);
            return SX_ENOMEM;
        }
        s->ban_id[nb] = t;
        s->ban_l[nb++] = l[t];
        l[t] = -INFINITY;
    }
    clear_bits(s->seen, s->ban_id, nb);
    *n_bans = nb;
    return 0;
}

/* Inserts (v, t) into the descending top-n list; ties keep the lower id
 * first because ids arrive in increasing order. */
static void topn_push(float *tv, int32_t *ti, int *cnt, int n, float v, int32_t t)
{
    int i = *cnt < n ? (*cnt)++ : n - 1;
    while (i > 0 && tv[i - 1] < v) {
        tv[i] = tv[i - 1];
        ti[i] = ti[i - 1];
        i--;
    }
    tv[i] = v;
    ti[i] = t;
}

/* The lowest id holding the max, and the top-n (ids in increasing order,
 * so ties keep the lower id first). */
static void stats(const float *l, int rows, int top_n, sx_plan *pl, sx_sample *out)
{
    sx_row_stats(l, rows, &pl->m, &pl->lmin, &pl->n_allowed);
    pl->argmax = -1;
    for (int c = 0; pl->n_allowed && pl->argmax < 0; c += 256) {
        int end = c + 256 < rows ? c + 256 : rows;
        if (sx_row_any_ge(l + c, end - c, pl->m))
            for (int t = c; t < end && pl->argmax < 0; t++)
                if (l[t] == pl->m)
                    pl->argmax = t;
    }
    if (!out)
        return;
    int nt = 0;
    for (int t = 0; t < rows && top_n > 0; t++) {
        float v = l[t];
        if (v != -INFINITY && (nt < top_n || v > out->top_logprobs[top_n - 1]))
            topn_push(out->top_logprobs, out->top_ids, &nt, top_n, v, t);
    }
    out->n_top = nt;
}

static int grow_cands(sx_sampler *s, int need)
{
    if (need <= s->cap_c)
        return 0;
    int cap = s->cap_c ? s->cap_c : 1024;
    while (cap < need)
        cap *= 2;
    if (cap > s->rows)
        cap = s->rows;
    void *p;
    if (!(p = realloc(s->cid, (size_t)cap * sizeof *s->cid)))
        return SX_ENOMEM;
    s->cid = p;
    if (!(p = realloc(s->cl, (size_t)cap * sizeof *s->cl)))
        return SX_ENOMEM;
    s->cl = p;
    if (!(p = realloc(s->cw, (size_t)cap * sizeof *s->cw)))
        return SX_ENOMEM;
    s->cw = p;
    if (!(p = realloc(s->ck, (size_t)cap * sizeof *s->ck)))
        return SX_ENOMEM;
    s->ck = p;
    if (!(p = realloc(s->scratch, (size_t)cap * sizeof *s->scratch)))
        return SX_ENOMEM;
    s->scratch = p;
    s->cap_c = cap;
    return 0;
}

/* Gathers, in id order, the allowed tokens with l - m >= lo; returns their
 * count in *n and their weight in *mass.  Chunks with nothing above a
 * slightly lower float threshold are skipped by a vectorised test. */
static int gather(sx_sampler *s, const float *l, float m, double lo, float inv_t, int *n,
                  double *mass)
{
    enum { CHUNK = 256 };
    int k = 0;
    double z = 0;
    float thr = lo == -INFINITY ? -INFINITY : nextafterf((float)((double)m + lo), -INFINITY);
    for (int c = 0; c < s->rows; c += CHUNK) {
        int end = c + CHUNK < s->rows ? c + CHUNK : s->rows;
        if (!sx_row_any_ge(l + c, end - c, thr))
            continue;
        for (int t = c; t < end; t++) {
            float v = l[t];
            if (v == -INFINITY || (double)v - (double)m < lo)
                continue;
            if (k == s->cap_c && grow_cands(s, k + 1))
                return SX_ENOMEM;
            float w = sx_weight(v, m, inv_t);
            s->cid[k] = t;
            s->cl[k] = v;
            s->cw[k] = w;
            s->ck[k] = sx_fkey(v);
            z += w;
            k++;
        }
    }
    *n = k;
    *mass = z;
    return 0;
}

/* Keeps the list members with key > theta, the first q with key == theta,
 * and (minp > 0) weight >= minp.  Returns the new length. */
static int keep(sx_sampler *s, int n, uint32_t theta, long q, float minp)
{
    int k = 0;
    long ties = 0;
    for (int i = 0; i < n; i++) {
        uint32_t key = s->ck[i];
        if (key < theta || (key == theta && ties++ >= q) || s->cw[i] < minp)
            continue;
        s->cid[k] = s->cid[i];
        s->cl[k] = s->cl[i];
        s->cw[k] = s->cw[i];
        s->ck[k] = s->ck[i];
        k++;
    }
    return k;
}

/* The rank-prefix cut for top-p: theta and how many of its ties to keep so
 * that the kept weight first reaches `target`. */
static void cut_mass(sx_sampler *s, int n, double target, uint32_t *theta, long *q)
{
    uint32_t th = sx_select_mass(s->ck, s->cw, n, target, s->scratch);
    double above = 0;
    long ties = 0;
    float wt = 0;
    for (int i = 0; i < n; i++) {
        if (s->ck[i] > th) {
            above += s->cw[i];
        } else if (s->ck[i] == th) {
            ties++;
            wt = s->cw[i];
        }
    }
    long need = wt > 0 ? (long)ceil((target - above) / wt) : 1;
    *theta = th;
    *q = need < 1 ? 1 : need > ties ? ties : need;
}

/* Where to start gathering: the closest profile band that, by the
 * profile's estimate, already holds enough (the exact check follows).  For
 * top-k a band far too wide is narrowed by bisection with counting passes,
 * which cost much less than gathering and selecting 60,000 tokens. */
static double first_lo(const sx_sampling *p, const float *l, int rows, float m,
                       const sx_profile *pf, int topk, int topp, double target)
{
    int k = 0;
    while (k < SX_PROFILE_K &&
           !(topk ? pf->cnt[k] >= p->top_k : topp && (double)pf->mass[k] >= target * (1 + 1e-4)))
        k++;
    if (k == SX_PROFILE_K)
        return pf->th[SX_PROFILE_K - 1] * 2.0;
    double lo = pf->th[k], hi = k ? pf->th[k - 1] : 0.0;
    int cnt = pf->cnt[k], enough = 4 * p->top_k + 256;
    for (int it = 0; topk && cnt > enough && it < 12; it++) {
        double mid = (lo + hi) / 2;
        int c = sx_row_count_ge(l, rows, (float)((double)m + mid));
        if (c >= p->top_k) {
            lo = mid;
            cnt = c;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Step 4 for temperature > 0.  The gathered list must be a rank prefix that
 * holds every candidate and, for top-p after top-k, all of the top-k
 * weight; the threshold widens until it does.  Then top-k and top-p cut
 * it by radix selection and min-p filters it. */
static int candidates(sx_sampler *s, const float *l, sx_plan *pl, const sx_profile *pf)
{
    const sx_sampling *p = &s->p;
    float T = p->temperature, m = pl->m, inv_t = 1.0f / T;
    int topk = p->top_k > 0 && p->top_k < pl->n_allowed;
    int topp = p->top_p < 1.0f;
    int minp = p->min_p > 0.0f;

    double zt = pl->zt; /* total weight: the reference of top-p without top-k */
    double target_all = (double)p->top_p * zt;
    /* the min-p bound, with a margin for sx_expneg's rounding */
    double lo_minp = minp ? (double)T * (log((double)p->min_p) - 1e-3) : -INFINITY;
    double lo = topk || topp ? first_lo(p, l, s->rows, m, pf, topk, topp, target_all) : -INFINITY;
    if (minp && (!topp || !topk) && lo_minp > lo)
        lo = lo_minp;
    double span = (double)pl->lmin - (double)m;
    int n = 0, rc;
    for (int grown = 0;; grown++) {
        /* after a few widenings (odd rows, tiny temperatures) take all */
        int complete = lo <= span || grown == 3;
        if (complete)
            lo = -INFINITY;
        double mass;
        if ((rc = gather(s, l, m, lo, inv_t, &n, &mass)))
            return rc;
        if (complete)
            break;
        int has_k = topk && n >= p->top_k;
        int zref_ok = !topp || !topk || has_k;
        int covers = has_k || (topp && !topk && mass >= target_all) || (minp && lo <= lo_minp);
        if (zref_ok && covers)
            break;
        lo *= 4;
    }

    if (topk && n > p->top_k) {
        uint32_t th = sx_select_count(s->ck, n, p->top_k, s->scratch);
        long above = 0;
        for (int i = 0; i < n; i++)
            above += s->ck[i] > th;
        n = keep(s, n, th, p->top_k - above, 0.0f);
    }
    if (topp) {
        double target = target_all, have = 0;
        for (int i = 0; i < n; i++)
            have += s->cw[i];
        if (topk)
            target = (double)p->top_p * have;
        if (have >= target) {
            uint32_t th;
            long q;
            cut_mass(s, n, target, &th, &q);
            n = keep(s, n, th, q, 0.0f);
        }
    }
    if (minp)
        n = keep(s, n, 0, 0x7fffffffL, p->min_p);
    pl->n = n;
    return 0;
}

int sx_sampler_plan(sx_sampler *s, float *logits, const uint32_t *mask, sx_plan *pl,
                    sx_sample *out, sx_error *err)
{
    const sx_sampling *p = &s->p;
    int rc, n_bans = 0;
    memset(pl, 0, sizeof *pl);
    sx_row_mask(logits, mask, s->rows, s->valid);
    if (p->n_bias > 0)
        apply_bias(s, logits);
    if (p->repetition_penalty != 1.0f)
        apply_repetition(s, logits);
    if (p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f)
        apply_presence_frequency(s, logits);
    if ((rc = apply_ngram(s, logits, &n_bans)))
        return sx_err_set(err, rc, "sampler: out of memory");
    stats(logits, s->rows, p->top_n, pl, out);
    if (pl->n_allowed == 0 && n_bans > 0) {
        for (int i = 0; i < n_bans; i++)
            logits[s->ban_id[i]] = s->ban_l[i];
        stats(logits, s->rows, p->top_n, pl, out);
    }
    if (pl->n_allowed == 0)
        return sx_err_set(err, SX_EINTERNAL, "sampler: every token is masked");

    float T = p->temperature;
    int topk = p->top_k > 0 && p->top_k < pl->n_allowed;
    int topp = p->top_p < 1.0f;
    pl->full = !topk && !topp && !(p->min_p > 0.0f);
    /* The log-softmax sum, and when it helps the profile that sizes the
     * candidate gathering (its counts do not depend on the temperature,
     * its weights are those of temperature 1). */
    sx_profile pf;
    for (int k = 0; k < SX_PROFILE_K; k++)
        pf.th[k] = -T * (float)(1 << k);
    int profiled = T > 0.0f && (topk || (topp && T == 1.0f));
    pl->z1 = profiled ? sx_row_profile(logits, s->rows, pl->m, 1.0f, &pf)
                      : sx_row_mass(logits, s->rows, pl->m, 1.0f);
    pl->lse = (double)pl->m + log(pl->z1);
    if (out)
        for (int i = 0; i < out->n_top; i++)
            out->top_logprobs[i] = (float)((double)out->top_logprobs[i] - pl->lse);
    if (T == 0.0f || pl->full)
        return 0;
    pl->zt = pl->z1;
    if (topp && !topk && T != 1.0f)
        pl->zt = sx_row_profile(logits, s->rows, pl->m, 1.0f / T, &pf);
    if ((rc = candidates(s, logits, pl, &pf)))
        return sx_err_set(err, rc, "sampler: out of memory");
    return 0;
}
