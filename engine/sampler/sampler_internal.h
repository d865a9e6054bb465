/* Internals of sx_sampler shared by engine/sampler*.c and the unit tests.
 * Not a public interface: engine/sampler/sampler.h is. */
#ifndef SX_SAMPLER_INTERNAL_H
#define SX_SAMPLER_INTERNAL_H

#include <stdint.h>
#include "engine/sampler/sampler.h"

struct sx_sampler {
    sx_sampling p;
    int rows, valid;
    int32_t *hist;            /* accepted tokens, oldest first */
    int n_hist, cap_hist;
    uint32_t *seen;           /* one bit per row, all clear between calls */
    /* candidate list, in token id order; grown on demand */
    int32_t *cid;
    float *cl, *cw;           /* logit, sampling weight */
    uint32_t *ck;             /* sx_fkey of the logit */
    int32_t *scratch;         /* radix-select work space */
    int cap_c;
    /* tokens banned by no-repeat-n-gram in this call, with their logits */
    int32_t *ban_id;
    float *ban_l;
    int cap_ban;
    /* logit_bias, owned copies (p.bias_ids / p.bias_vals point here) */
    int32_t *bias_id;
    float *bias_v;
};

/* What step 1-3 left behind and the candidate set of step 4. */
typedef struct sx_plan {
    float m;                  /* max allowed logit */
    float lmin;               /* min allowed logit */
    int32_t argmax;           /* lowest id among the max */
    int n_allowed;
    double z1;                /* sum of exp(l - m) over allowed tokens */
    double lse;               /* log-sum-exp: logprob(t) = l_t - lse */
    double zt;                /* sum of sx_weight at the temperature, when needed */
    int full;                 /* 1: the candidates are every allowed token */
    int n;                    /* else: the candidates are cid[0..n) */
} sx_plan;

/* Steps 1-4 on `logits`: masks, penalties, statistics, top-n into *out
 * (when out != NULL), and for temperature > 0 the candidate set. */
int sx_sampler_plan(sx_sampler *s, float *logits, const uint32_t *mask, sx_plan *pl,
                    sx_sample *out, sx_error *err);

/* Writes member[t] = 1 for every token the sampler could return for this
 * row and 0 otherwise (for tests: the exact candidate set). */
int sx_sampler_support(sx_sampler *s, float *logits, const uint32_t *mask, uint8_t *member,
                       sx_error *err);

/* Whole-row passes (engine/sampler/sampler_rows.c), vectorised. */
/* Step 1: bit t of mask clear, t >= valid, or NaN -> -inf; +inf -> FLT_MAX. */
void sx_row_mask(float *l, const uint32_t *mask, int rows, int valid);
/* max and min of the finite logits and how many there are */
void sx_row_stats(const float *l, int rows, float *max, float *min, int *count);
/* sum of sx_weight(l[t], m, inv_t) over t < n */
double sx_row_mass(const float *l, int n, float m, float inv_t);
/* 1 if some l[t] >= thr */
int sx_row_any_ge(const float *l, int n, float thr);
/* how many l[t] >= thr */
int sx_row_count_ge(const float *l, int n, float thr);

/* How many logits, and how much weight, lie within th[k] (< 0) of the max:
 * the cheap estimate that sizes the candidate gathering. */
#define SX_PROFILE_K 6
typedef struct sx_profile {
    float th[SX_PROFILE_K]; /* in: l - m >= th[k] */
    int cnt[SX_PROFILE_K];
    float mass[SX_PROFILE_K];
} sx_profile;
/* sx_row_mass that also fills pf->cnt and pf->mass */
double sx_row_profile(const float *l, int n, float m, float inv_t, sx_profile *pf);

/* Radix selection over order-preserving keys (engine/sampler/sampler_select.c).
 * idx: scratch for n ints. */
/* The largest key θ with #{keys >= θ} >= k, for 1 <= k <= n. */
uint32_t sx_select_count(const uint32_t *keys, int n, int k, int32_t *idx);
/* The largest key θ with sum{w : key >= θ} >= target; the smallest key when
 * rounding leaves even the whole list short of target. */
uint32_t sx_select_mass(const uint32_t *keys, const float *w, int n, double target, int32_t *idx);

#endif
