/* Every forward-pass kernel (kernels/ *.cu) against its CPU reference
 * (kernels/ *_ref.c), on random inputs at Qwen3 shapes -- the llm.c habit:
 * each comparison prints its maximum difference and the tolerance it is
 * held to.  Tolerances:
 *   - exact: embedding gather, residual written back by the fused norm;
 *   - bf16 outputs (norms, SwiGLU, K/V written to the cache): at most one
 *     bf16 step apart (sums run in another order on the GPU, so a value near
 *     a rounding boundary may land on the neighbour);
 *   - f32 q after norm + RoPE: 2e-5 * (1 + |ref|) (FMA contraction, order);
 *   - attention (bf16 out, values in [-1, 1]): |ref|/128 + 2e-4;
 *   - GEMM (f32 out): 1e-4 * sum_k |x_k w_k| (f32 accumulation in another
 *     order, tensor-core blocking).
 * Called from tests/gpu/test_gpu_main.c. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_bf16.h"
#include "kernels/sx_kernels.h"

void sx_gpu_test_kernels(int *passed, int *failed);

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

static uint64_t rs = 0x2545F4914F6CDD1Dull;

static double rnd01(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0;
}

static float rndf(float a)
{
    return (float)((rnd01() * 2.0 - 1.0) * a);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

static void *dev(size_t n)
{
    void *p = NULL;
    if (cudaMalloc(&p, n ? n : 1) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed\n", n);
        exit(2);
    }
    return p;
}

static void *dev_copy(const void *h, size_t n)
{
    void *p = dev(n);
    cudaMemcpy(p, h, n, cudaMemcpyHostToDevice);
    return p;
}

static void down(void *h, const void *d, size_t n)
{
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        e = cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e));
        exit(2);
    }
}

static int bf_steps(uint16_t a, uint16_t b)
{
    int ka = (a & 0x8000) ? -(int)(a & 0x7fff) : (int)a;
    int kb = (b & 0x8000) ? -(int)(b & 0x7fff) : (int)b;
    return abs(ka - kb);
}

/* Largest bf16-step distance over n values; also the largest |difference|. */
static int bf_compare(const uint16_t *got, const uint16_t *want, size_t n, double *maxdiff)
{
    int worst = 0;
    *maxdiff = 0;
    for (size_t i = 0; i < n; i++) {
        int s = bf_steps(got[i], want[i]);
        worst = s > worst ? s : worst;
        double d = fabs((double)sx_bf16_to_f32(got[i]) - sx_bf16_to_f32(want[i]));
        *maxdiff = d > *maxdiff || d != d ? d : *maxdiff;
    }
    return worst;
}

static void test_embed(void)
{
    const int V = 1000, H = 1024, N = 37;
    uint16_t *table = xmalloc((size_t)V * H * 2), *rb = xmalloc((size_t)N * H * 2),
             *gb = xmalloc((size_t)N * H * 2);
    float *rf = xmalloc((size_t)N * H * 4), *gf = xmalloc((size_t)N * H * 4);
    int32_t tok[37];
    for (size_t i = 0; i < (size_t)V * H; i++)
        table[i] = sx_f32_to_bf16(rndf(1.0f));
    for (int i = 0; i < N; i++)
        tok[i] = (int32_t)(rnd01() * V);
    tok[3] = -1;
    tok[9] = V;
    uint16_t *dt = dev_copy(table, (size_t)V * H * 2), *dob = dev((size_t)N * H * 2);
    int32_t *dk = dev_copy(tok, sizeof tok);
    float *dof = dev((size_t)N * H * 4);
    CHECK(sx_cuda_embed_f32(dt, V, H, dk, N, dof, NULL) == 0, "embed_f32 launch");
    CHECK(sx_cuda_embed_bf16(dt, V, H, dk, N, dob, NULL) == 0, "embed_bf16 launch");
    down(gf, dof, (size_t)N * H * 4);
    down(gb, dob, (size_t)N * H * 2);
    sx_ref_embed_f32(table, V, H, tok, N, rf);
    sx_ref_embed_bf16(table, V, H, tok, N, rb);
    int same_f = !memcmp(gf, rf, (size_t)N * H * 4), same_b = !memcmp(gb, rb, (size_t)N * H * 2);
    printf("  embed f32/bf16 [%d x %d]: %s (tolerance: exact)\n", N, H,
           same_f && same_b ? "identical" : "DIFFERENT");
    CHECK(same_f && same_b, "embedding gather differs from the reference");
    cudaFree(dt);
    cudaFree(dob);
    cudaFree(dk);
    cudaFree(dof);
    free(table);
    free(rb);
    free(gb);
    free(rf);
    free(gf);
}

static void test_rmsnorm(int N, int D, int with_delta)
{
    size_t n = (size_t)N * D;
    float *res = xmalloc(n * 4), *delta = xmalloc(n * 4), *w = xmalloc((size_t)D * 4);
    float *res_got = xmalloc(n * 4);
    uint16_t *ref = xmalloc(n * 2), *got = xmalloc(n * 2), *rref = xmalloc(n * 2),
             *rgot = xmalloc(n * 2);
    int32_t *rows = xmalloc((size_t)N * 4);
    for (size_t i = 0; i < n; i++) {
        res[i] = rndf(4.0f);
        delta[i] = rndf(2.0f);
    }
    for (int i = 0; i < D; i++)
        w[i] = 1.0f + rndf(0.5f);
    for (int i = 0; i < N; i++)
        rows[i] = (int32_t)(rnd01() * N);
    float *dres = dev_copy(res, n * 4), *ddelta = dev_copy(delta, n * 4), *dw = dev_copy(w, D * 4);
    uint16_t *dout = dev(n * 2), *drout = dev(n * 2);
    int32_t *drows = dev_copy(rows, (size_t)N * 4);
    /* rows variant first, on the residual before the write-back */
    CHECK(sx_cuda_rmsnorm_rows(dres, with_delta ? ddelta : NULL, drows, N, dw, 1e-6f, D, drout,
                               NULL) == 0, "rmsnorm_rows launch");
    CHECK(sx_cuda_add_rmsnorm(dres, with_delta ? ddelta : NULL, dw, 1e-6f, N, D, dout, NULL) == 0,
          "add_rmsnorm launch");
    down(got, dout, n * 2);
    down(rgot, drout, n * 2);
    down(res_got, dres, n * 4);
    sx_ref_rmsnorm_rows(res, with_delta ? delta : NULL, rows, N, w, 1e-6f, D, rref);
    sx_ref_add_rmsnorm(res, with_delta ? delta : NULL, w, 1e-6f, N, D, ref);
    double md, mdr;
    int steps = bf_compare(got, ref, n, &md), rsteps = bf_compare(rgot, rref, n, &mdr);
    int res_same = !memcmp(res_got, res, n * 4);
    printf("  add_rmsnorm [%d x %d]%s: max diff %.3g (%d bf16 steps), rows variant %.3g (%d), "
           "residual %s (tolerance: 1 step, residual exact)\n",
           N, D, with_delta ? " +delta" : "", md, steps, mdr, rsteps,
           res_same ? "identical" : "DIFFERENT");
    CHECK(steps <= 1 && rsteps <= 1 && res_same, "rmsnorm [%d x %d] outside tolerance", N, D);
    cudaFree(dres);
    cudaFree(ddelta);
    cudaFree(dw);
    cudaFree(dout);
    cudaFree(drout);
    cudaFree(drows);
    free(res);
    free(delta);
    free(w);
    free(res_got);
    free(ref);
    free(got);
    free(rref);
    free(rgot);
    free(rows);
}

/* A paged cache: blocks of bt tokens, a stride a little above a block. */
static sx_attn_dims make_dims(int hq, int hkv, int hd, int bt, int max_blocks)
{
    sx_attn_dims d;
    memset(&d, 0, sizeof d);
    d.n_heads = hq;
    d.n_kv_heads = hkv;
    d.head_dim = hd;
    d.block_tokens = bt;
    d.max_blocks = max_blocks;
    d.block_stride = (int64_t)hkv * bt * hd + 64;
    return d;
}

static void test_qk_rope_kv(int hq, int hkv, int hd, int N)
{
    const int bt = 16, n_blocks = 64, n_pos = 4096;
    sx_attn_dims d = make_dims(hq, hkv, hd, bt, 8);
    size_t row = (size_t)(hq + 2 * hkv) * hd, cache = (size_t)n_blocks * d.block_stride;
    float *qkv = xmalloc(N * row * 4), *qn = xmalloc(hd * 4), *kn = xmalloc(hd * 4);
    float *rc = xmalloc((size_t)n_pos * hd / 2 * 4), *rsn = xmalloc((size_t)n_pos * hd / 2 * 4);
    float *qref = xmalloc((size_t)N * hq * hd * 4), *qgot = xmalloc((size_t)N * hq * hd * 4);
    uint16_t *kref = xmalloc(cache * 2), *vref = xmalloc(cache * 2), *kgot = xmalloc(cache * 2),
             *vgot = xmalloc(cache * 2);
    int32_t *pos = xmalloc(N * 4), *slot = xmalloc(N * 4);
    for (size_t i = 0; i < N * row; i++)
        qkv[i] = rndf(3.0f);
    for (int i = 0; i < hd; i++) {
        qn[i] = 1.0f + rndf(0.4f);
        kn[i] = 1.0f + rndf(0.4f);
    }
    for (int t = 0; t < N; t++) {
        pos[t] = (int32_t)(rnd01() * n_pos);
        slot[t] = t % 7 == 3 ? -1 : (int32_t)((t * 37) % (n_blocks * bt)); /* distinct */
    }
    for (size_t i = 0; i < cache; i++)
        kref[i] = vref[i] = 0x7fc1;
    sx_rope_table(1000000.0, hd, n_pos, rc, rsn);
    float *dqkv = dev_copy(qkv, N * row * 4), *dqn = dev_copy(qn, hd * 4), *dkn = dev_copy(kn, hd * 4);
    float *drc = dev_copy(rc, (size_t)n_pos * hd / 2 * 4), *drs = dev_copy(rsn, (size_t)n_pos * hd / 2 * 4);
    float *dq = dev((size_t)N * hq * hd * 4);
    uint16_t *dk = dev_copy(kref, cache * 2), *dv = dev_copy(vref, cache * 2);
    int32_t *dpos = dev_copy(pos, N * 4), *dslot = dev_copy(slot, N * 4);
    CHECK(sx_cuda_qk_rope_kv(&d, dqkv, N, dpos, dslot, dqn, dkn, 1e-6f, drc, drs, dq, dk, dv, NULL) == 0,
          "qk_rope_kv launch");
    down(qgot, dq, (size_t)N * hq * hd * 4);
    down(kgot, dk, cache * 2);
    down(vgot, dv, cache * 2);
    sx_ref_qk_rope_kv(&d, qkv, N, pos, slot, qn, kn, 1e-6f, rc, rsn, qref, kref, vref);
    double mq = 0, worst_rel = 0, mk, mv;
    for (size_t i = 0; i < (size_t)N * hq * hd; i++) {
        double diff = fabs((double)qgot[i] - qref[i]);
        mq = diff > mq || diff != diff ? diff : mq;
        double rel = diff / (1.0 + fabs(qref[i]));
        worst_rel = rel > worst_rel || rel != rel ? rel : worst_rel;
    }
    int ks = bf_compare(kgot, kref, cache, &mk), vs = bf_compare(vgot, vref, cache, &mv);
    printf("  qk_rope_kv [%d tok, %d+%d heads x %d]: q max diff %.3g (tolerance 2e-5*(1+|q|)), "
           "k %d bf16 steps, v %d steps (tolerance 1; untouched slots compared too)\n",
           N, hq, hkv, hd, mq, ks, vs);
    CHECK(worst_rel <= 2e-5 && ks <= 1 && vs <= 1, "qk_rope_kv outside tolerance");
    cudaFree(dqkv);
    cudaFree(dqn);
    cudaFree(dkn);
    cudaFree(drc);
    cudaFree(drs);
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dpos);
    cudaFree(dslot);
    free(qkv);
    free(qn);
    free(kn);
    free(rc);
    free(rsn);
    free(qref);
    free(qgot);
    free(kref);
    free(vref);
    free(kgot);
    free(vgot);
    free(pos);
    free(slot);
}

typedef struct attn_case {
    sx_attn_dims  d;
    int           n_blocks, rows, n_seqs, n_items;
    float        *q;
    uint16_t     *kc, *vc;
    int32_t      *tables;
    sx_attn_item *items;
} attn_case;

/* Random q and cache; sequence s owns a scrambled set of blocks. */
static void attn_setup(attn_case *c, int hq, int hkv, int hd, int bt, const int *n_q,
                       const int *n_ctx, int n_items)
{
    int max_ctx = 1;
    for (int i = 0; i < n_items; i++)
        max_ctx = n_ctx[i] > max_ctx ? n_ctx[i] : max_ctx;
    int max_blocks = (max_ctx + bt - 1) / bt;
    c->n_seqs = n_items;
    c->n_blocks = max_blocks * n_items + 3;
    c->d = make_dims(hq, hkv, hd, bt, max_blocks);
    c->n_items = n_items;
    c->rows = 0;
    for (int i = 0; i < n_items; i++)
        c->rows += n_q[i];
    size_t cache = (size_t)c->n_blocks * c->d.block_stride;
    c->q = xmalloc((size_t)c->rows * hq * hd * 4);
    c->kc = xmalloc(cache * 2);
    c->vc = xmalloc(cache * 2);
    c->tables = xmalloc((size_t)n_items * max_blocks * 4);
    c->items = xmalloc((size_t)n_items * sizeof *c->items);
    for (size_t i = 0; i < (size_t)c->rows * hq * hd; i++)
        c->q[i] = rndf(1.0f);
    for (size_t i = 0; i < cache; i++) {
        c->kc[i] = sx_f32_to_bf16(rndf(1.0f));
        c->vc[i] = sx_f32_to_bf16(rndf(1.0f));
    }
    int nb = max_blocks * n_items;
    for (int i = 0; i < nb; i++) /* a permutation of the first nb blocks */
        c->tables[i] = (int32_t)(((int64_t)i * 7919 + 13) % nb);
    int row = 0;
    for (int i = 0; i < n_items; i++) {
        sx_attn_item it = { row, n_q[i], n_ctx[i], i };
        c->items[i] = it;
        row += n_q[i];
    }
}

static void attn_free(attn_case *c)
{
    free(c->q);
    free(c->kc);
    free(c->vc);
    free(c->tables);
    free(c->items);
}

/* Runs prefill (splits == 0) or decode over the case and compares. */
static void attn_run(attn_case *c, int splits, const char *label)
{
    sx_attn_dims *d = &c->d;
    size_t cache = (size_t)c->n_blocks * d->block_stride, out = (size_t)c->rows * d->n_heads * d->head_dim;
    float *dq = dev_copy(c->q, out * 4);
    uint16_t *dk = dev_copy(c->kc, cache * 2), *dv = dev_copy(c->vc, cache * 2), *dout = dev(out * 2);
    int32_t *dt = dev_copy(c->tables, (size_t)c->n_seqs * d->max_blocks * 4);
    sx_attn_item *di = dev_copy(c->items, (size_t)c->n_items * sizeof *c->items);
    uint16_t *ref = xmalloc(out * 2), *got = xmalloc(out * 2);
    float scale = 1.0f / sqrtf((float)d->head_dim);
    int max_q = 0, rc;
    for (int i = 0; i < c->n_items; i++)
        max_q = c->items[i].n_q > max_q ? c->items[i].n_q : max_q;
    cudaMemset(dout, 0xff, out * 2); /* NaN: a row left unwritten fails */
    if (splits == 0) {
        rc = sx_cuda_attn_prefill(d, dq, dk, dv, dt, di, c->n_items, max_q, scale, dout, NULL);
    } else {
        size_t wb = sx_attn_decode_work_bytes(d, c->n_items, splits);
        float *work = dev(wb);
        cudaMemset(work, 0xff, wb); /* NaN: an unwritten partial that is read fails */
        rc = sx_cuda_attn_decode(d, dq, dk, dv, dt, di, c->n_items, splits, work, scale, dout, NULL);
        cudaDeviceSynchronize();
        cudaFree(work);
    }
    CHECK(rc == 0, "%s launch failed (%d)", label, rc);
    down(got, dout, out * 2);
    sx_ref_attn(d, c->q, c->kc, c->vc, c->tables, c->items, c->n_items, scale, ref);
    double md = 0;
    size_t bad = 0;
    for (size_t i = 0; i < out; i++) {
        double g = sx_bf16_to_f32(got[i]), r = sx_bf16_to_f32(ref[i]), diff = fabs(g - r);
        if (!(diff <= fabs(r) / 128 + 2e-4))
            bad++;
        md = diff > md || diff != diff ? diff : md;
    }
    printf("  %s [heads %d/%d x %d, block %d, %d items, %d rows]: max diff %.3g, %zu outside "
           "tolerance |ref|/128 + 2e-4\n",
           label, d->n_heads, d->n_kv_heads, d->head_dim, d->block_tokens, c->n_items, c->rows, md,
           bad);
    CHECK(bad == 0, "%s: %zu of %zu outputs outside tolerance", label, bad, out);
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dout);
    cudaFree(dt);
    cudaFree(di);
    free(ref);
    free(got);
}

static void test_attention(void)
{
    /* prefill: fresh prompts, chunks after cached context, a single query,
     * padding (n_ctx 0), a 33-query tile edge */
    {
        int n_q[6] = { 70, 5, 1, 33, 3, 17 }, n_ctx[6] = { 70, 300, 45, 33, 0, 17 };
        attn_case c;
        attn_setup(&c, 16, 8, 128, 16, n_q, n_ctx, 6);
        attn_run(&c, 0, "attn_prefill");
        attn_free(&c);
    }
    {
        int n_q[3] = { 40, 9, 2 }, n_ctx[3] = { 40, 100, 7 };
        attn_case c;
        attn_setup(&c, 32, 8, 64, 8, n_q, n_ctx, 3); /* GQA 4, head_dim 64 */
        attn_run(&c, 0, "attn_prefill");
        attn_free(&c);
        attn_setup(&c, 4, 4, 256, 32, n_q, n_ctx, 3); /* no GQA, head_dim 256 */
        attn_run(&c, 0, "attn_prefill");
        attn_free(&c);
    }
    /* decode: lengths from 1 to 2000, several split counts, a padding row */
    int n_q[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, n_ctx[8] = { 1, 2, 17, 100, 513, 2000, 0, 64 };
    int splits[4] = { 1, 3, 17, SX_ATTN_MAX_SPLITS };
    for (int s = 0; s < 4; s++) {
        attn_case c;
        char label[64];
        attn_setup(&c, 16, 8, 128, 16, n_q, n_ctx, 8);
        snprintf(label, sizeof label, "attn_decode splits=%d", splits[s]);
        attn_run(&c, splits[s], label);
        attn_free(&c);
    }
    {
        attn_case c;
        attn_setup(&c, 64, 8, 256, 16, n_q, n_ctx, 8); /* GQA 8, head_dim 256 */
        attn_run(&c, 5, "attn_decode splits=5");
        attn_free(&c);
        attn_setup(&c, 8, 8, 64, 4, n_q, n_ctx, 8);
        attn_run(&c, 2, "attn_decode splits=2");
        attn_free(&c);
    }
}

static void test_swiglu(int N, int I)
{
    size_t n = (size_t)N * I;
    float *gu = xmalloc(2 * n * 4);
    uint16_t *ref = xmalloc(n * 2), *got = xmalloc(n * 2);
    for (size_t i = 0; i < 2 * n; i++)
        gu[i] = rndf(8.0f);
    float *dgu = dev_copy(gu, 2 * n * 4);
    uint16_t *dout = dev(n * 2);
    CHECK(sx_cuda_swiglu(dgu, N, I, dout, NULL) == 0, "swiglu launch");
    down(got, dout, n * 2);
    sx_ref_swiglu(gu, N, I, ref);
    double md;
    int steps = bf_compare(got, ref, n, &md);
    printf("  swiglu [%d x %d]: max diff %.3g (%d bf16 steps, tolerance 1)\n", N, I, md, steps);
    CHECK(steps <= 1, "swiglu outside tolerance");
    cudaFree(dgu);
    cudaFree(dout);
    free(gu);
    free(ref);
    free(got);
}

static void test_gemm(void *blas, int M, int N, int K)
{
    uint16_t *x = xmalloc((size_t)M * K * 2), *w = xmalloc((size_t)N * K * 2);
    float *ref = xmalloc((size_t)M * N * 4), *got = xmalloc((size_t)M * N * 4);
    for (size_t i = 0; i < (size_t)M * K; i++)
        x[i] = sx_f32_to_bf16(rndf(2.0f));
    for (size_t i = 0; i < (size_t)N * K; i++)
        w[i] = sx_f32_to_bf16(rndf(0.1f));
    uint16_t *dx = dev_copy(x, (size_t)M * K * 2), *dw = dev_copy(w, (size_t)N * K * 2);
    float *dy = dev((size_t)M * N * 4);
    CHECK(sx_cuda_gemm(blas, dx, dw, M, N, K, dy, NULL) == 0, "gemm launch");
    down(got, dy, (size_t)M * N * 4);
    sx_ref_gemm(x, w, M, N, K, ref);
    double worst = 0, md = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double mag = 0;
            const uint16_t *a = x + (size_t)i * K, *b = w + (size_t)j * K;
            for (int k = 0; k < K; k++)
                mag += fabs((double)sx_bf16_to_f32(a[k]) * sx_bf16_to_f32(b[k]));
            double diff = fabs((double)got[(size_t)i * N + j] - ref[(size_t)i * N + j]);
            double rel = diff / (mag + 1e-30);
            worst = rel > worst || rel != rel ? rel : worst;
            md = diff > md || diff != diff ? diff : md;
        }
    printf("  gemm cuBLAS [%d x %d x %d]: max diff %.3g, max diff / sum|x w| %.3g "
           "(tolerance 1e-4)\n", M, N, K, md, worst);
    CHECK(worst <= 1e-4, "gemm [%d x %d x %d] outside tolerance", M, N, K);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    free(x);
    free(w);
    free(ref);
    free(got);
}

void sx_gpu_test_kernels(int *passed, int *failed)
{
    g_pass = passed;
    g_fail = failed;
    printf("kernels vs CPU references:\n");
    test_embed();
    test_rmsnorm(19, 1024, 1);
    test_rmsnorm(3, 2048, 0);
    test_rmsnorm(5, 128, 1);
    test_qk_rope_kv(16, 8, 128, 41);
    test_qk_rope_kv(8, 2, 64, 9);
    test_qk_rope_kv(4, 4, 256, 5);
    test_attention();
    test_swiglu(33, 3072);
    test_swiglu(2, 384);
    void *blas = NULL;
    CHECK(sx_cuda_blas_new(NULL, 0, &blas) == 0, "cuBLAS handle");
    if (blas) {
        test_gemm(blas, 1, 3072, 1024);      /* decode: a gate/up row */
        test_gemm(blas, 7, 4096, 1024);      /* small batch, fused q/k/v */
        test_gemm(blas, 300, 1024, 3072);    /* prefill: down projection */
        test_gemm(blas, 2, 151936, 1024);    /* the LM head */
        sx_cuda_blas_free(blas);
    }
}
