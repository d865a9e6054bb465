/* The composed reference forward pass (tests/gpu/gpu_ref.h) and its bound.
 *
 * Why the bound is what it is.  The GPU engine and this reference round to
 * bf16 at the same places (GEMM inputs, the KV cache) and accumulate in f32;
 * they differ only in the order of f32 sums.  Take one logit,
 * z_t = sum_k x_k w_tk over k < K (K = hidden), x the LM head's bf16 input
 * and w_t the bf16 row of token t:
 *   - each product of two bf16 values (8-bit significands) is exact in f32
 *     (24 bits), so the only rounding is in the sum: any order gives
 *     |fl(z_t) - z_t| <= gamma_K * S_t, with S_t = sum_k |x_k w_tk| and
 *     gamma_K = K u / (1 - K u), u = 2^-24 (Higham, Accuracy and Stability,
 *     3.1); two orders differ by at most 2 gamma_K S_t;
 *   - x itself is the bf16 rounding of an f32 value that the two sides also
 *     summed in different orders (the final norm, the residual adds, the
 *     layers before); where that value lies near a rounding boundary the two
 *     sides round to neighbouring bf16 numbers, one ulp apart.  A bf16 ulp
 *     is at most 2^-7 |x_k| (8 significant bits), so if any subset of the K
 *     inputs moved by one ulp, z_t moves by at most 2^-7 S_t.
 * Hence bound_t = (2^-7 + 2 gamma_K) S_t, and two tokens a, b may swap
 * places only if |z_a - z_b| <= bound_a + bound_b.  Rounding flips further
 * up move x by less than an ulp per element unless they are amplified
 * (unit-gain random layers do that now and then); the tests print the
 * largest |gpu - ref| / bound seen so that this stays visible.  A wrong
 * position, block or weight moves logits by O(1), and a bug that reorders
 * the top candidates is caught in every row whose top two are further apart
 * than the bound (most rows: the tests print the share). */
#include "tests/gpu/gpu_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_bf16.h"

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

void gpu_ref_init(gpu_ref_model *r, const sx_model *m, int max_len)
{
    const sx_qwen3_config *c = &m->cfg;
    memset(r, 0, sizeof *r);
    max_len = (max_len + GPU_REF_BT - 1) / GPU_REF_BT * GPU_REF_BT;
    r->m = m;
    r->max_len = max_len;
    r->d.n_heads = c->n_heads;
    r->d.n_kv_heads = c->n_kv_heads;
    r->d.head_dim = c->head_dim;
    r->d.block_tokens = GPU_REF_BT;
    r->d.max_blocks = max_len / GPU_REF_BT;
    r->d.block_stride = (int64_t)c->n_kv_heads * GPU_REF_BT * c->head_dim;
    r->layer_elems = (size_t)(max_len / GPU_REF_BT) * r->d.block_stride;
    r->table = xcalloc((size_t)max_len / GPU_REF_BT, 4);
    for (int b = 0; b < max_len / GPU_REF_BT; b++)
        r->table[b] = b;
    r->cos_t = xcalloc((size_t)max_len * c->head_dim / 2, 4);
    r->sin_t = xcalloc((size_t)max_len * c->head_dim / 2, 4);
    sx_rope_table(c->rope_theta, c->head_dim, max_len, r->cos_t, r->sin_t);
}

void gpu_ref_fini(gpu_ref_model *r)
{
    free(r->table);
    free(r->cos_t);
    free(r->sin_t);
    memset(r, 0, sizeof *r);
}

void gpu_ref_seq_init(const gpu_ref_model *r, gpu_ref_seq *s)
{
    s->kc = xcalloc((size_t)r->m->cfg.n_layers * r->layer_elems, 2);
    s->vc = xcalloc((size_t)r->m->cfg.n_layers * r->layer_elems, 2);
    s->len = 0;
}

void gpu_ref_seq_fini(gpu_ref_seq *s)
{
    free(s->kc);
    free(s->vc);
    memset(s, 0, sizeof *s);
}

/* y[n][cols] (row stride ldy, at column col0) = x . w^T */
static void gemm_into(const uint16_t *x, const uint16_t *w, int n, int rows, int k, float *y,
                      int ldy, int col0)
{
    float *t = xcalloc((size_t)n * rows, 4);
    sx_ref_gemm(x, w, n, rows, k, t);
    for (int i = 0; i < n; i++)
        memcpy(y + (size_t)i * ldy + col0, t + (size_t)i * rows, (size_t)rows * 4);
    free(t);
}

/* bound_t = (2^-7 + 2 gamma_K) sum_k |x_k w_tk| (the comment at the top) */
static void lm_bound(const uint16_t *x, const uint16_t *w, int V, int K, float *bound)
{
    double u = ldexp(1.0, -24), gamma = K * u / (1 - K * u), f = ldexp(1.0, -7) + 2 * gamma;
    float *ax = xcalloc((size_t)K, 4);
    for (int k = 0; k < K; k++)
        ax[k] = fabsf(sx_bf16_to_f32(x[k]));
    for (int t = 0; t < V; t++) {
        const uint16_t *row = w + (size_t)t * K;
        double s = 0;
        for (int k = 0; k < K; k++)
            s += ax[k] * fabsf(sx_bf16_to_f32(row[k]));
        bound[t] = (float)(f * s);
    }
    free(ax);
}

void gpu_ref_forward(const gpu_ref_model *r, gpu_ref_seq *s, const int32_t *tok, int n,
                     float *logits, float *bound)
{
    const sx_qwen3_config *c = &r->m->cfg;
    int H = c->hidden, I = c->intermediate, D = c->head_dim;
    int qd = c->n_heads * D, kvd = c->n_kv_heads * D, nq = qd + 2 * kvd;
    int wide = H > qd ? H : qd;
    if (s->len + n > r->max_len) {
        fprintf(stderr, "gpu_ref: %d tokens past the reference's %d\n", s->len + n, r->max_len);
        exit(2);
    }
    wide = wide > I ? wide : I;
    float *x = xcalloc((size_t)n * H, 4), *delta = xcalloc((size_t)n * H, 4);
    float *qkv = xcalloc((size_t)n * nq, 4), *q = xcalloc((size_t)n * qd, 4);
    float *gu = xcalloc((size_t)n * 2 * I, 4);
    uint16_t *xin = xcalloc((size_t)n * wide, 2);
    int32_t *pos = xcalloc((size_t)n, 4), *slot = xcalloc((size_t)n, 4);
    for (int i = 0; i < n; i++) {
        pos[i] = s->len + i;
        slot[i] = pos[i]; /* table entry b is block b */
    }
    sx_attn_item item = { 0, n, s->len + n, 0 };
    float scale = (float)(1.0 / sqrt((double)D));
    sx_ref_embed_f32(r->m->embed, c->vocab_rows, H, tok, n, x);
    for (int l = 0; l < c->n_layers; l++) {
        const sx_layer_weights *w = &r->m->layers[l];
        uint16_t *kc = s->kc + l * r->layer_elems, *vc = s->vc + l * r->layer_elems;
        sx_ref_add_rmsnorm(x, l ? delta : NULL, w->attn_norm, c->rms_eps, n, H, xin);
        gemm_into(xin, w->wq, n, qd, H, qkv, nq, 0);
        gemm_into(xin, w->wk, n, kvd, H, qkv, nq, qd);
        gemm_into(xin, w->wv, n, kvd, H, qkv, nq, qd + kvd);
        sx_ref_qk_rope_kv(&r->d, qkv, n, pos, slot, w->q_norm, w->k_norm, c->rms_eps, r->cos_t,
                          r->sin_t, q, kc, vc);
        sx_ref_attn(&r->d, q, kc, vc, r->table, &item, 1, scale, xin);
        gemm_into(xin, w->wo, n, H, qd, delta, H, 0);
        sx_ref_add_rmsnorm(x, delta, w->mlp_norm, c->rms_eps, n, H, xin);
        gemm_into(xin, w->w_gate, n, I, H, gu, 2 * I, 0);
        gemm_into(xin, w->w_up, n, I, H, gu, 2 * I, I);
        sx_ref_swiglu(gu, n, I, xin);
        gemm_into(xin, w->w_down, n, H, I, delta, H, 0);
    }
    int32_t last = n - 1;
    sx_ref_rmsnorm_rows(x, delta, &last, 1, r->m->final_norm, c->rms_eps, H, xin);
    sx_ref_gemm(xin, r->m->lm_head, 1, c->vocab_rows, H, logits);
    if (bound)
        lm_bound(xin, r->m->lm_head, c->vocab_rows, H, bound);
    s->len += n;
    free(x);
    free(delta);
    free(qkv);
    free(q);
    free(gu);
    free(xin);
    free(pos);
    free(slot);
}

void gpu_ref_logits(const gpu_ref_model *r, const int32_t *tok, int n, float *logits,
                    float *bound)
{
    gpu_ref_seq s;
    gpu_ref_seq_init(r, &s);
    gpu_ref_forward(r, &s, tok, n, logits, bound);
    gpu_ref_seq_fini(&s);
}

static int argmax(const float *l, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b])
            b = i;
    return b;
}

int gpu_ref_greedy_ok(const float *ref, const float *bound, const float *got, int V, int *ref_best,
                      int *got_best, double *gap)
{
    int br = argmax(ref, V), bg = argmax(got, V);
    *ref_best = br;
    *got_best = bg;
    *gap = (double)ref[br] - ref[bg];
    return br == bg || *gap <= (double)bound[br] + bound[bg];
}

int gpu_ref_is_near_tie(const float *ref, const float *bound, int V)
{
    int a = argmax(ref, V), b = a ? 0 : 1;
    for (int i = 0; i < V; i++)
        if (i != a && ref[i] > ref[b])
            b = i;
    return (double)ref[a] - ref[b] <= (double)bound[a] + bound[b];
}
