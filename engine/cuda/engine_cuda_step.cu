// The GPU forward pass: a step is validated and its cache blocks reserved
// before anything runs (all or nothing, as on the CPU), then its rows go
// through the layers in passes of at most cap_t rows.  Decode-only steps of
// up to max_bucket sequences replay a CUDA graph captured once per bucket;
// the graph reads its inputs from fixed device addresses, refreshed by one
// small upload per step.
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/engine_cuda_internal.h"

// Inside forward(): a launcher has printed file/line; pass its code up.
#define FW(call)                                                                       \
    do {                                                                               \
        int rc_ = (call);                                                              \
        if (rc_)                                                                       \
            return rc_;                                                                \
    } while (0)

static int broken(sx_cuda_engine *e, int rc, sx_error *err, const char *what)
{
    e->broken = 1;
    return sx_err_set(err, rc == SX_EINVAL ? SX_EINTERNAL : rc,
                      "cuda engine: %s failed (see stderr); the engine is unusable", what);
}

static int32_t *meta(sx_cuda_engine *e, int which)
{
    return e->h_meta + e->meta_off[which];
}

// Enqueues one pass.  Logits rows go to host_out (chunked through the device
// buffer) or, when host_out is NULL, stay on the device from row lg_base.
static int forward(sx_cuda_engine *e, const cu_pass *p, float *host_out, int lg_base)
{
    const sx_qwen3_config *c = &e->cfg;
    cudaStream_t s = e->st;
    int H = c->hidden, I = c->intermediate, V = c->vocab_rows, T = p->T;
    int qd = c->n_heads * c->head_dim, nqkv = (c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    float eps = c->rms_eps;
    const int32_t *tok = e->d_meta + e->meta_off[META_TOK];
    const int32_t *pos = e->d_meta + e->meta_off[META_POS];
    const int32_t *slot = e->d_meta + e->meta_off[META_SLOT];
    const int32_t *lg = e->d_meta + e->meta_off[META_LG];
    const sx_attn_item *pf = (const sx_attn_item *)(e->d_meta + e->meta_off[META_PF]);
    const sx_attn_item *dc = (const sx_attn_item *)(e->d_meta + e->meta_off[META_DC]);

    FW(sx_cuda_embed_f32(e->embed, V, H, tok, T, e->x, s));
    for (int l = 0; l < c->n_layers; l++) {
        const cu_layer *L = &e->layers[l];
        uint16_t *kc = e->kv + 2 * l * e->blk, *vc = kc + e->blk;
        // the previous layer's MLP output joins the residual here
        FW(sx_cuda_add_rmsnorm(e->x, l ? e->delta : NULL, L->attn_norm, eps, T, H, e->xin, s));
        FW(sx_cuda_gemm(e->blas, e->xin, L->wqkv, T, nqkv, H, e->qkv, s));
        FW(sx_cuda_qk_rope_kv(&e->dims, e->qkv, T, pos, slot, L->q_norm, L->k_norm, eps,
                              e->rope_cos, e->rope_sin, e->q, kc, vc, s));
        if (p->n_pf)
            FW(sx_cuda_attn_prefill(&e->dims, e->q, kc, vc, e->d_tables, pf, p->n_pf, p->max_q,
                                    e->scale, e->xin, s));
        if (p->n_dc)
            FW(sx_cuda_attn_decode(&e->dims, e->q, kc, vc, e->d_tables, dc, p->n_dc, p->splits,
                                   e->work, e->scale, e->xin, s));
        FW(sx_cuda_gemm(e->blas, e->xin, L->wo, T, H, qd, e->delta, s));
        FW(sx_cuda_add_rmsnorm(e->x, e->delta, L->mlp_norm, eps, T, H, e->xin, s));
        FW(sx_cuda_gemm(e->blas, e->xin, L->wgu, T, 2 * I, H, e->gu, s));
        FW(sx_cuda_swiglu(e->gu, T, I, e->xin, s));
        FW(sx_cuda_gemm(e->blas, e->xin, L->wdown, T, H, I, e->delta, s));
    }
    if (p->R == 0)
        return SX_OK;
    FW(sx_cuda_rmsnorm_rows(e->x, e->delta, lg, p->R, e->final_norm, eps, H, e->xin, s));
    if (!host_out) {
        FW(sx_cuda_gemm(e->blas, e->xin, e->lm_head, p->R, V, H,
                        e->logits + (size_t)lg_base * V, s));
        return SX_OK;
    }
    for (int r0 = 0; r0 < p->R; r0 += e->cap_l) {
        int n = p->R - r0 < e->cap_l ? p->R - r0 : e->cap_l;
        FW(sx_cuda_gemm(e->blas, e->xin + (size_t)r0 * H, e->lm_head, n, V, H, e->logits, s));
        // pageable destination: returns once copied, so the buffer is free again
        SX_CUDA_TRY(cudaMemcpyAsync(host_out + (size_t)r0 * V, e->logits, (size_t)n * V * 4,
                                    cudaMemcpyDeviceToHost, s));
    }
    return SX_OK;
}

static int upload(sx_cuda_engine *e, int which, size_t n_ints)
{
    if (n_ints == 0)
        return SX_OK;
    SX_CUDA_TRY(cudaMemcpyAsync(e->d_meta + e->meta_off[which], meta(e, which), n_ints * 4,
                                cudaMemcpyHostToDevice, e->st));
    return SX_OK;
}

static int upload_pass(sx_cuda_engine *e, const cu_pass *p)
{
    FW(upload(e, META_TOK, p->T));
    FW(upload(e, META_POS, p->T));
    FW(upload(e, META_SLOT, p->T));
    FW(upload(e, META_LG, p->R));
    FW(upload(e, META_PF, 4 * (size_t)p->n_pf));
    FW(upload(e, META_DC, 4 * (size_t)p->n_dc));
    return SX_OK;
}

static int check_items(sx_cuda_engine *e, const sx_step_item *items, int n_items, int *r_total,
                       sx_error *err)
{
    if (++e->stamp == 0) {
        memset(e->seen, 0, (size_t)e->info.max_seqs * sizeof *e->seen);
        e->stamp = 1;
    }
    int64_t blocks = 0, rows = 0;
    for (int i = 0; i < n_items; i++) {
        const sx_step_item *it = &items[i];
        int len = sx_kvp_seq_len(e->kvp, it->seq);
        if (len < 0)
            return sx_err_set(err, SX_EINVAL, "step item %d: sequence %d is not live", i, it->seq);
        if (e->seen[it->seq] == e->stamp)
            return sx_err_set(err, SX_EINVAL, "step item %d: sequence %d appears twice", i,
                              it->seq);
        e->seen[it->seq] = e->stamp;
        if (it->n <= 0 || !it->tokens)
            return sx_err_set(err, SX_EINVAL, "step item %d: no tokens (n = %d)", i, it->n);
        if (it->allow)
            return sx_err_set(err, SX_EUNSUPPORTED, "step item %d: the CUDA engine takes masks "
                              "through sx_cuda_engine_mask_buffer, not step items", i);
        for (int j = 0; j < it->n; j++)
            if (it->tokens[j] < 0 || it->tokens[j] >= e->cfg.vocab_rows)
                return sx_err_set(err, SX_EINVAL, "step item %d: token %d is %d, outside 0..%d",
                                  i, j, (int)it->tokens[j], e->cfg.vocab_rows - 1);
        int64_t end = (int64_t)len + it->n;
        if (end > e->info.max_len)
            return sx_err_set(err, SX_ELIMIT, "step item %d: sequence %d would hold %lld tokens, "
                              "more than %d", i, it->seq, (long long)end, e->info.max_len);
        blocks += sx_kvp_blocks_needed(e->kvp, it->seq, it->n);
        rows += it->logits_all ? it->n : 1;
    }
    if (blocks > sx_kvp_free_blocks(e->kvp))
        return sx_err_set(err, SX_ELIMIT, "kv cache full: step needs %lld blocks, %d free",
                          (long long)blocks, (int)sx_kvp_free_blocks(e->kvp));
    if (rows > INT32_MAX / 2)
        return sx_err_set(err, SX_ELIMIT, "step: %lld logits rows", (long long)rows);
    *r_total = (int)rows;
    return SX_OK;
}

// Copy-on-write copies and block-table uploads for the step's sequences.
static int reserve(sx_cuda_engine *e, const sx_step_item *items, int n_items)
{
    size_t block_bytes = (size_t)e->block_stride * 2;
    int32_t *tables = sx_kvp_tables(e->kvp);
    for (int i = 0; i < n_items; i++) {
        int32_t src, dst;
        sx_kvp_prepare(e->kvp, items[i].seq, items[i].n, &src, &dst);
        if (src >= 0)
            SX_CUDA_TRY(cudaMemcpyAsync(e->kv + (size_t)dst * e->block_stride,
                                        e->kv + (size_t)src * e->block_stride, block_bytes,
                                        cudaMemcpyDeviceToDevice, e->st));
    }
    for (int i = 0; i < n_items; i++) {
        int lo, hi;
        size_t at = (size_t)items[i].seq * e->max_blocks;
        sx_kvp_take_dirty(e->kvp, items[i].seq, &lo, &hi);
        if (hi > lo)
            SX_CUDA_TRY(cudaMemcpyAsync(e->d_tables + at + lo, tables + at + lo,
                                        (size_t)(hi - lo) * 4, cudaMemcpyHostToDevice, e->st));
    }
    return SX_OK;
}

static int bucket_of(int n)
{
    int b = 0;
    while ((1 << b) < n)
        b++;
    return b;
}

// Records the decode pass of bucket b (nothing runs).  A failed capture turns
// graphs off for this engine rather than failing the step.
static void capture(sx_cuda_engine *e, int b)
{
    int B = 1 << b;
    cu_pass p = { B, B, 0, B, 0, sx_cu_splits(e, B) };
    cudaGraph_t g = NULL;
    cudaError_t ce = cudaStreamSynchronize(e->st); // capture an idle stream
    if (ce == cudaSuccess)
        ce = cudaStreamBeginCapture(e->st, cudaStreamCaptureModeThreadLocal);
    int rc = ce == cudaSuccess ? forward(e, &p, NULL, 0) : SX_EINTERNAL;
    if (ce == cudaSuccess)
        ce = cudaStreamEndCapture(e->st, &g);
    if (rc == SX_OK && ce == cudaSuccess)
        ce = cudaGraphInstantiate(&e->graphs[b], g, 0);
    if (g)
        cudaGraphDestroy(g);
    if (rc != SX_OK || ce != cudaSuccess) {
        fprintf(stderr, "cuda engine: capturing the decode graph for %d sequences failed (%s); "
                        "continuing without graphs\n",
                B, ce != cudaSuccess ? cudaGetErrorString(ce) : "launch error");
        cudaGetLastError();
        e->graphs[b] = NULL;
        e->graphs_on = 0;
        e->info.graphs = 0;
    }
}

// A decode-only step through the bucket's graph (captured after the bucket's
// first step, which runs directly and so also warms cuBLAS up).
static int run_graph(sx_cuda_engine *e, const sx_step_item *items, int n, float *host_out)
{
    int b = bucket_of(n), B = 1 << b;
    int32_t *tok = meta(e, META_TOK), *pos = meta(e, META_POS), *slot = meta(e, META_SLOT);
    int32_t *lg = meta(e, META_LG);
    sx_attn_item *dc = (sx_attn_item *)meta(e, META_DC);
    for (int i = 0; i < B; i++) {
        int live = i < n;
        int seq = live ? items[i].seq : 0, p = live ? sx_kvp_seq_len(e->kvp, seq) : 0;
        tok[i] = live ? items[i].tokens[0] : 0;
        pos[i] = p;
        slot[i] = live ? sx_kvp_slot(e->kvp, seq, p) : -1; // padding writes nothing
        lg[i] = i;
        sx_attn_item it = { i, 1, live ? p + 1 : 0, seq }; // n_ctx 0: zero output
        dc[i] = it;
    }
    cu_pass full = { B, B, 0, B, 0, sx_cu_splits(e, B) };
    FW(upload_pass(e, &full));
    if (e->graphs[b]) {
        SX_CUDA_TRY(cudaGraphLaunch(e->graphs[b], e->st));
        e->info.graph_steps++;
    } else {
        cu_pass p = { n, n, 0, n, 0, sx_cu_splits(e, n) };
        FW(forward(e, &p, NULL, 0));
        capture(e, b);
    }
    if (host_out)
        SX_CUDA_TRY(cudaMemcpyAsync(host_out, e->logits, (size_t)n * e->cfg.vocab_rows * 4,
                                    cudaMemcpyDeviceToHost, e->st));
    return SX_OK;
}

// The passes of a general step (prefill, decode or both).
static int run_passes(sx_cuda_engine *e, const sx_step_item *items, int n_items, float *host_out)
{
    size_t V = (size_t)e->cfg.vocab_rows;
    int item = 0, off = 0, lg_done = 0, first = 1;
    while (item < n_items) {
        if (!first) // the previous pass's uploads read h_meta: let them finish
            SX_CUDA_TRY(cudaStreamSynchronize(e->st));
        first = 0;
        int32_t *tok = meta(e, META_TOK), *pos = meta(e, META_POS), *slot = meta(e, META_SLOT);
        int32_t *lg = meta(e, META_LG);
        sx_attn_item *pf = (sx_attn_item *)meta(e, META_PF), *dc = (sx_attn_item *)meta(e, META_DC);
        cu_pass p = { 0, 0, 0, 0, 0, 1 };
        while (item < n_items && p.T < e->cap_t) {
            const sx_step_item *it = &items[item];
            int take = it->n - off < e->cap_t - p.T ? it->n - off : e->cap_t - p.T;
            int last = off + take == it->n;
            int pos0 = sx_kvp_seq_len(e->kvp, it->seq) + off;
            int lg_from = it->logits_all ? 0 : last ? take - 1 : take;
            for (int j = 0; j < take; j++) {
                int r = p.T + j;
                tok[r] = it->tokens[off + j];
                pos[r] = pos0 + j;
                slot[r] = sx_kvp_slot(e->kvp, it->seq, pos0 + j);
                if (j >= lg_from)
                    lg[p.R++] = r;
            }
            sx_attn_item ai = { p.T, take, pos0 + take, it->seq };
            if (take == 1) {
                dc[p.n_dc++] = ai;
            } else {
                pf[p.n_pf++] = ai;
                p.max_q = take > p.max_q ? take : p.max_q;
            }
            p.T += take;
            off += take;
            if (last) {
                item++;
                off = 0;
            }
        }
        p.splits = sx_cu_splits(e, p.n_dc);
        FW(upload_pass(e, &p));
        FW(forward(e, &p, host_out ? host_out + (size_t)lg_done * V : NULL, lg_done));
        lg_done += p.R;
    }
    return SX_OK;
}

static int run(sx_cuda_engine *e, const sx_step_item *items, int n_items, float *host_out,
               sx_error *err)
{
    int r_total = 0, rc;
    if (e->broken)
        return sx_err_set(err, SX_EINTERNAL, "cuda engine: unusable after an earlier GPU error");
    if (e->pending)
        return sx_err_set(err, SX_EINVAL, "cuda engine: a launched step awaits logits or sample");
    if ((rc = check_items(e, items, n_items, &r_total, err)))
        return rc;
    if (!host_out && r_total > e->cap_l)
        return sx_err_set(err, SX_EINVAL, "cuda engine: launch wants %d logits rows, at most %d",
                          r_total, e->cap_l);
    if ((rc = reserve(e, items, n_items)))
        return broken(e, rc, err, "reserving cache blocks");
    int decode = e->graphs_on && n_items <= e->max_bucket;
    for (int i = 0; decode && i < n_items; i++)
        decode = items[i].n == 1;
    rc = decode ? run_graph(e, items, n_items, host_out) : run_passes(e, items, n_items, host_out);
    if (rc)
        return broken(e, rc, err, "the forward pass");
    for (int i = 0; i < n_items; i++)
        sx_kvp_commit(e->kvp, items[i].seq, items[i].n);
    e->pending_r = r_total;
    return SX_OK;
}

int sx_cuda_engine_step(sx_cuda_engine *e, const sx_step_item *items, int n_items, float *logits,
                        sx_error *err)
{
    if (!e || n_items < 0 || (n_items > 0 && (!items || !logits)))
        return sx_err_set(err, SX_EINVAL, "cuda engine step: bad arguments");
    if (n_items == 0)
        return SX_OK;
    int rc = run(e, items, n_items, logits, err);
    if (rc)
        return rc;
    e->pending = 1;
    rc = sx_cu_quiesce(e, err);
    e->pending = 0;
    return rc;
}

int sx_cuda_engine_launch(sx_cuda_engine *e, const sx_step_item *items, int n_items,
                          sx_error *err)
{
    if (!e || n_items <= 0 || !items)
        return sx_err_set(err, SX_EINVAL, "cuda engine launch: bad arguments");
    int rc = run(e, items, n_items, NULL, err);
    if (rc == SX_OK)
        e->pending = 1;
    return rc;
}

// The rest of a launched step: masks (n_rows x mask_words words, or NULL) go
// to the device right behind the forward pass and a kernel sets the
// disallowed logits to -INFINITY there (kernels/mask_apply.cu, CPU reference
// sx_ref_apply_mask), then the rows come back.
static int finish(sx_cuda_engine *e, const uint32_t *masks, float *logits, sx_error *err)
{
    if (!e || !logits)
        return sx_err_set(err, SX_EINVAL, "cuda engine logits: bad arguments");
    if (!e->pending)
        return sx_err_set(err, SX_EINVAL, "cuda engine logits: no launched step");
    size_t words = (size_t)e->pending_r * e->mask_words;
    cudaError_t ce = cudaSuccess;
    if (masks) {
        if (masks != e->h_mask)
            memcpy(e->h_mask, masks, words * 4);
        ce = cudaMemcpyAsync(e->d_mask, e->h_mask, words * 4, cudaMemcpyHostToDevice, e->st);
        if (ce == cudaSuccess &&
            sx_cuda_apply_mask(e->logits, e->d_mask, e->pending_r, e->cfg.vocab_rows, e->st))
            ce = cudaErrorLaunchFailure;
    }
    if (ce == cudaSuccess)
        ce = cudaMemcpyAsync(logits, e->logits, (size_t)e->pending_r * e->cfg.vocab_rows * 4,
                             cudaMemcpyDeviceToHost, e->st);
    int rc = ce == cudaSuccess ? sx_cu_quiesce(e, err) : SX_EINTERNAL;
    e->pending = 0;
    if (ce != cudaSuccess) {
        e->broken = 1;
        return sx_err_set(err, SX_EINTERNAL, "cuda engine logits: %s", cudaGetErrorString(ce));
    }
    return rc;
}

int sx_cuda_engine_logits(sx_cuda_engine *e, float *logits, sx_error *err)
{
    return finish(e, NULL, logits, err);
}

int sx_cuda_engine_logits_masked(sx_cuda_engine *e, const uint32_t *masks, float *logits,
                                 sx_error *err)
{
    if (!masks)
        return sx_err_set(err, SX_EINVAL, "cuda engine logits: no masks");
    return finish(e, masks, logits, err);
}

void *sx_cuda_engine_stream(sx_cuda_engine *e)
{
    return e ? (void *)e->st : NULL;
}
