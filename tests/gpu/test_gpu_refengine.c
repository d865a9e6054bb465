/* The GPU engine against a reference forward pass composed of the kernels'
 * CPU references (kernels/ *_ref.c), on the tiny random model.  The
 * composition rounds to bf16 at exactly the places the GPU engine does, so
 * the two differ only by the kernels' own tolerances (reduction order): this
 * checks the engine's orchestration -- fused weights, pass metadata, paged
 * cache and block tables, prefill/decode kernel choice, graphs -- tightly,
 * where the comparison with the f32 CPU engine (test_gpu_engine.c) can only
 * be loose.  Tolerance: max |gpu - ref| <= 1e-2 * max |ref| per logits row,
 * and the same greedy token unless the reference's top two are within twice
 * that.  Why not tighter: a sum taken in another order flips a bf16 rounding
 * now and then (1 in ~3,000 attention outputs of the tiny model), and a flip
 * (2^-8 relative) is amplified by the next MLP; through two layers that
 * alone gives ~0.35% of max |logit| (measured under tests/gpu/emu, where the
 * GEMMs are bit-identical to the references and only such flips remain).
 * A wrong position, block or weight gives errors of order 1.
 * Called from tests/gpu/test_gpu_main.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/model/model.h"
#include "engine/cuda/engine_cuda.h"
#include "common/sx_bf16.h"
#include "kernels/sx_kernels.h"

void sx_gpu_test_refengine(int *passed, int *failed, const char *dir);

static int *g_pass, *g_fail;
#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (cond) {                                                              \
            (*g_pass)++;                                                         \
        } else {                                                                 \
            (*g_fail)++;                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                 \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

#define MAXLEN 256 /* positions the reference sequences can hold */
#define BT 16

/* One sequence of the reference: a private cache, blocks 0, 1, 2, ... */
typedef struct ref_seq {
    uint16_t *kc, *vc; /* [layer][block][kv head][BT][head_dim] */
    int       len;
} ref_seq;

typedef struct ref_model {
    const sx_model *m;
    sx_attn_dims    d;
    int32_t         table[MAXLEN / BT];
    float          *cos_t, *sin_t;
    size_t          layer_elems;
} ref_model;

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
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

/* Appends n tokens to s; writes the last token's logits. */
static void ref_forward(const ref_model *r, ref_seq *s, const int32_t *tok, int n, float *logits)
{
    const sx_qwen3_config *c = &r->m->cfg;
    int H = c->hidden, I = c->intermediate, D = c->head_dim;
    int qd = c->n_heads * D, kvd = c->n_kv_heads * D, nq = qd + 2 * kvd;
    int wide = H > qd ? H : qd;
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

static int argmax(const float *l, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b])
            b = i;
    return b;
}

static double worst_seen;

static void compare(const float *ref, const float *got, int V, const char *what)
{
    double mr = 0, md = 0;
    for (int i = 0; i < V; i++) {
        mr = fmax(mr, fabs(ref[i]));
        double d = fabs((double)ref[i] - got[i]);
        md = d > md || d != d ? d : md;
    }
    double rel = md / (mr + 1e-30);
    worst_seen = rel > worst_seen || rel != rel ? rel : worst_seen;
    CHECK(rel <= 1e-2, "%s: max |gpu - ref| %.4g = %.3g of max |ref| (tolerance 1e-2)", what, md,
          rel);
    int br = argmax(ref, V), bg = argmax(got, V);
    CHECK(br == bg || ref[br] - ref[bg] <= 2e-2 * mr, "%s: greedy %d (ref) vs %d (gpu)", what, br,
          bg);
}

void sx_gpu_test_refengine(int *passed, int *failed, const char *dir)
{
    g_pass = passed;
    g_fail = failed;
    char mdir[1024], cfg_path[1100];
    snprintf(mdir, sizeof mdir, "%s/tiny", dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", mdir);
    sx_error err;
    struct stat st;
    sx_model *m = NULL;
    sx_qwen3_config cfg;
    if (stat(cfg_path, &st) != 0 &&
        (sx_qwen3_shape("tiny", &cfg, &err) || sx_model_write_random(&cfg, 1234, mdir, NULL, &err))) {
        CHECK(0, "writing the tiny model: %s", err.msg);
        return;
    }
    if (sx_model_load(mdir, &m, &err)) {
        CHECK(0, "loading the tiny model: %s", err.msg);
        return;
    }
    printf("engine vs composed CPU references (bf16 at the same places), tiny model:\n");
    const sx_qwen3_config *c = &m->cfg;
    ref_model r;
    memset(&r, 0, sizeof r);
    r.m = m;
    r.d.n_heads = c->n_heads;
    r.d.n_kv_heads = c->n_kv_heads;
    r.d.head_dim = c->head_dim;
    r.d.block_tokens = BT;
    r.d.max_blocks = MAXLEN / BT;
    r.d.block_stride = (int64_t)c->n_kv_heads * BT * c->head_dim;
    r.layer_elems = (size_t)(MAXLEN / BT) * r.d.block_stride;
    for (int b = 0; b < MAXLEN / BT; b++)
        r.table[b] = b;
    r.cos_t = xcalloc((size_t)MAXLEN * c->head_dim / 2, 4);
    r.sin_t = xcalloc((size_t)MAXLEN * c->head_dim / 2, 4);
    sx_rope_table(c->rope_theta, c->head_dim, MAXLEN, r.cos_t, r.sin_t);

    int V = c->vocab_rows;
    float *ref = xcalloc((size_t)V, 4), *got = xcalloc((size_t)3 * V, 4);
    sx_engine_opts o;
    memset(&o, 0, sizeof o);
    o.max_seqs = 8;
    o.kv_tokens = 4096;
    sx_cuda_engine *e = NULL;
    if (sx_cuda_engine_new(m, &o, &e, &err)) {
        CHECK(0, "gpu engine: %s", err.msg);
        goto done;
    }
    {
        /* two sequences: prompts of 37 and 5 tokens in one step, then decode
         * both together (graph path), then a 20-token chunk on one while the
         * other decodes (mixed pass) */
        enum { NS = 2 };
        ref_seq rs[NS];
        int seq[NS], plen[NS] = { 37, 5 };
        int32_t prompt[NS][40], next[NS];
        sx_step_item items[NS];
        uint64_t x = 42;
        for (int s = 0; s < NS; s++) {
            rs[s].kc = xcalloc((size_t)c->n_layers * r.layer_elems, 2);
            rs[s].vc = xcalloc((size_t)c->n_layers * r.layer_elems, 2);
            rs[s].len = 0;
            CHECK(sx_cuda_engine_seq_new(e, &seq[s], &err) == 0, "seq_new");
            for (int i = 0; i < plen[s]; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                prompt[s][i] = (int32_t)((x >> 33) % 151669);
            }
            sx_step_item it = { seq[s], prompt[s], plen[s], 0, NULL };
            items[s] = it;
        }
        CHECK(sx_cuda_engine_step(e, items, NS, got, &err) == 0, "prefill: %s", err.msg);
        for (int s = 0; s < NS; s++) {
            ref_forward(&r, &rs[s], prompt[s], plen[s], ref);
            compare(ref, got + (size_t)s * V, V, "prefill");
            next[s] = argmax(ref, V);
        }
        for (int t = 0; t < 5; t++) {
            for (int s = 0; s < NS; s++) {
                sx_step_item it = { seq[s], &next[s], 1, 0, NULL };
                items[s] = it;
            }
            CHECK(sx_cuda_engine_step(e, items, NS, got, &err) == 0, "decode: %s", err.msg);
            for (int s = 0; s < NS; s++) {
                ref_forward(&r, &rs[s], &next[s], 1, ref);
                compare(ref, got + (size_t)s * V, V, "decode");
                next[s] = argmax(ref, V);
            }
        }
        int32_t chunk[20];
        for (int i = 0; i < 20; i++)
            chunk[i] = (int32_t)((i * 7919 + 11) % 151669);
        sx_step_item mixed[NS] = { { seq[0], chunk, 20, 0, NULL }, { seq[1], &next[1], 1, 0, NULL } };
        CHECK(sx_cuda_engine_step(e, mixed, NS, got, &err) == 0, "mixed: %s", err.msg);
        ref_forward(&r, &rs[0], chunk, 20, ref);
        compare(ref, got, V, "mixed pass, chunk");
        ref_forward(&r, &rs[1], &next[1], 1, ref);
        compare(ref, got + V, V, "mixed pass, decode");
        for (int s = 0; s < NS; s++) {
            free(rs[s].kc);
            free(rs[s].vc);
        }
    }
    printf("    max |gpu - ref| / max |ref| = %.3g (tolerance 1e-2)\n", worst_seen);
done:
    sx_cuda_engine_free(e);
    free(ref);
    free(got);
    free(r.cos_t);
    free(r.sin_t);
    sx_model_free(m);
}
