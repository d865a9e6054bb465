// sx_cuda_engine set-up, teardown, sequences and information.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/engine_cuda_internal.h"

// A failed CUDA call inside new(): message with the call's line, then fail.
#define NEW_TRY(call)                                                                  \
    do {                                                                               \
        cudaError_t ce_ = (call);                                                      \
        if (ce_ != cudaSuccess) {                                                      \
            rc = sx_err_set(err, ce_ == cudaErrorMemoryAllocation ? SX_ENOMEM : SX_EINTERNAL, \
                            "cuda engine: %s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                            cudaGetErrorString(ce_));                                  \
            goto fail;                                                                 \
        }                                                                              \
    } while (0)

#define CUBLAS_WORKSPACE (32u << 20)

static int check_model(const sx_model *m, sx_error *err)
{
    const sx_qwen3_config *c = &m->cfg;
    if (c->vocab_rows <= 0 || c->hidden <= 0 || c->intermediate <= 0 || c->n_layers <= 0 ||
        c->n_heads <= 0 || c->n_kv_heads <= 0)
        return sx_err_set(err, SX_EINVAL, "cuda engine: model has a non-positive dimension");
    if (c->n_heads % c->n_kv_heads || c->n_heads / c->n_kv_heads > 8)
        return sx_err_set(err, SX_EUNSUPPORTED,
                          "cuda engine: %d heads over %d kv heads (groups of at most 8 supported)",
                          c->n_heads, c->n_kv_heads);
    if (c->head_dim != 64 && c->head_dim != 128 && c->head_dim != 256)
        return sx_err_set(err, SX_EUNSUPPORTED,
                          "cuda engine: head_dim %d (64, 128 or 256 supported)", c->head_dim);
    if ((int64_t)(c->n_heads + 2 * c->n_kv_heads) * c->head_dim > INT32_MAX / 8 ||
        (int64_t)c->intermediate * 2 > INT32_MAX / 8 || c->n_heads > 65535)
        return sx_err_set(err, SX_ELIMIT, "cuda engine: model dimensions too large");
    if (!m->embed || !m->lm_head || !m->final_norm || !m->layers)
        return sx_err_set(err, SX_EINVAL, "cuda engine: model is missing tensors");
    // AWQ matrices are 4-bit only (FP8 ones arrive dequantised to bf16)
    if (m->quant.method == SX_QUANT_AWQ)
        return sx_err_set(err, SX_EUNSUPPORTED,
                          "cuda engine: AWQ checkpoints are not supported on the GPU (run them "
                          "on the CPU engine, or use the bf16 or FP8 checkpoint)");
    for (int l = 0; l < c->n_layers; l++) {
        const sx_layer_weights *w = &m->layers[l];
        if (!w->wq || !w->wk || !w->wv || !w->wo || !w->w_gate || !w->w_up || !w->w_down ||
            !w->attn_norm || !w->mlp_norm || !w->q_norm || !w->k_norm)
            return sx_err_set(err, SX_EINVAL, "cuda engine: layer %d is missing tensors", l);
    }
    return SX_OK;
}

// cudaMalloc that adds to a byte count.
static cudaError_t dev_alloc(void **p, size_t bytes, int64_t *count)
{
    cudaError_t ce = cudaMalloc(p, bytes ? bytes : 1);
    if (ce == cudaSuccess)
        *count += (int64_t)bytes;
    return ce;
}

// Uploads parts[i] (rows[i] x cols bf16 each) one after another into *out.
static cudaError_t upload_rows(uint16_t **out, const uint16_t *const *parts, const int *rows,
                               int n, int cols, int64_t *count)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += (size_t)rows[i] * cols;
    cudaError_t ce = dev_alloc((void **)out, total * 2, count);
    size_t at = 0;
    for (int i = 0; ce == cudaSuccess && i < n; i++) {
        ce = cudaMemcpy(*out + at, parts[i], (size_t)rows[i] * cols * 2, cudaMemcpyHostToDevice);
        at += (size_t)rows[i] * cols;
    }
    return ce;
}

static cudaError_t upload_f32(float **out, const float *src, int n, int64_t *count)
{
    cudaError_t ce = dev_alloc((void **)out, (size_t)n * 4, count);
    if (ce == cudaSuccess)
        ce = cudaMemcpy(*out, src, (size_t)n * 4, cudaMemcpyHostToDevice);
    return ce;
}

static int upload_weights(sx_cuda_engine *e, sx_error *err)
{
    int rc = SX_OK;
    const sx_qwen3_config *c = &e->cfg;
    const sx_model *m = e->m;
    int64_t *wb = &e->info.weight_bytes;
    int qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim, H = c->hidden;
    int I = c->intermediate, D = c->head_dim;
    {
        const uint16_t *p[1] = { m->embed };
        int r[1] = { c->vocab_rows };
        NEW_TRY(upload_rows(&e->embed, p, r, 1, H, wb));
    }
    if (m->lm_head == m->embed) {
        e->lm_head = e->embed;
    } else {
        const uint16_t *p[1] = { m->lm_head };
        int r[1] = { c->vocab_rows };
        NEW_TRY(upload_rows(&e->lm_head, p, r, 1, H, wb));
    }
    NEW_TRY(upload_f32(&e->final_norm, m->final_norm, H, wb));
    for (int l = 0; l < c->n_layers; l++) {
        const sx_layer_weights *w = &m->layers[l];
        cu_layer *L = &e->layers[l];
        const uint16_t *pqkv[3] = { w->wq, w->wk, w->wv };
        int rqkv[3] = { qd, kvd, kvd };
        NEW_TRY(upload_rows(&L->wqkv, pqkv, rqkv, 3, H, wb));
        const uint16_t *po[1] = { w->wo };
        int ro[1] = { H };
        NEW_TRY(upload_rows(&L->wo, po, ro, 1, qd, wb));
        const uint16_t *pgu[2] = { w->w_gate, w->w_up };
        int rgu[2] = { I, I };
        NEW_TRY(upload_rows(&L->wgu, pgu, rgu, 2, H, wb));
        const uint16_t *pd[1] = { w->w_down };
        int rd[1] = { H };
        NEW_TRY(upload_rows(&L->wdown, pd, rd, 1, I, wb));
        NEW_TRY(upload_f32(&L->attn_norm, w->attn_norm, H, wb));
        NEW_TRY(upload_f32(&L->mlp_norm, w->mlp_norm, H, wb));
        NEW_TRY(upload_f32(&L->q_norm, w->q_norm, D, wb));
        NEW_TRY(upload_f32(&L->k_norm, w->k_norm, D, wb));
    }
fail:
    return rc;
}

int sx_cu_splits(const sx_cuda_engine *e, int n_items)
{
    if (n_items <= 0)
        return 1;
    int64_t want = (2 * (int64_t)e->info.sm_count + (int64_t)n_items * e->cfg.n_kv_heads - 1) /
                   ((int64_t)n_items * e->cfg.n_kv_heads);
    return want < 1 ? 1 : want > SX_ATTN_MAX_SPLITS ? SX_ATTN_MAX_SPLITS : (int)want;
}

// Activations, metadata and sampling buffers; their sizes do not depend on
// the KV cache, which takes what is left.
static int alloc_scratch(sx_cuda_engine *e, sx_error *err)
{
    int rc = SX_OK;
    const sx_qwen3_config *c = &e->cfg;
    int64_t *sb = &e->info.scratch_bytes;
    size_t T = (size_t)e->cap_t, H = (size_t)c->hidden, I = (size_t)c->intermediate;
    size_t qd = (size_t)c->n_heads * c->head_dim, kvd = (size_t)c->n_kv_heads * c->head_dim;
    size_t wide = H > qd ? H : qd;
    wide = wide > I ? wide : I;
    NEW_TRY(dev_alloc((void **)&e->x, T * H * 4, sb));
    NEW_TRY(dev_alloc((void **)&e->delta, T * H * 4, sb));
    NEW_TRY(dev_alloc((void **)&e->xin, T * wide * 2, sb));
    NEW_TRY(dev_alloc((void **)&e->qkv, T * (qd + 2 * kvd) * 4, sb));
    NEW_TRY(dev_alloc((void **)&e->q, T * qd * 4, sb));
    NEW_TRY(dev_alloc((void **)&e->gu, T * 2 * I * 4, sb));
    NEW_TRY(dev_alloc((void **)&e->logits, (size_t)e->cap_l * c->vocab_rows * 4, sb));
    {
        size_t wmax = 0;
        for (int n = 1; n <= e->max_dec; n++) {
            size_t b = sx_attn_decode_work_bytes(&e->dims, n, sx_cu_splits(e, n));
            wmax = b > wmax ? b : wmax;
        }
        NEW_TRY(dev_alloc((void **)&e->work, wmax, sb));
    }
    NEW_TRY(dev_alloc(&e->blas_ws, CUBLAS_WORKSPACE, sb));
    {
        size_t at = 0, sz[META_N] = { T, T, T, T, 4 * T, 4 * T };
        for (int i = 0; i < META_N; i++) {
            e->meta_off[i] = at;
            at += sz[i];
        }
        NEW_TRY(cudaHostAlloc((void **)&e->h_meta, at * 4, cudaHostAllocDefault));
        NEW_TRY(dev_alloc((void **)&e->d_meta, at * 4, sb));
    }
    e->mask_words = (c->vocab_rows + 31) / 32;
    {
        size_t L = (size_t)e->cap_l;
        NEW_TRY(cudaHostAlloc((void **)&e->h_mask, L * e->mask_words * 4, cudaHostAllocDefault));
        NEW_TRY(dev_alloc((void **)&e->d_mask, L * e->mask_words * 4, sb));
        NEW_TRY(cudaHostAlloc((void **)&e->h_args, L * sizeof *e->h_args, cudaHostAllocDefault));
        NEW_TRY(dev_alloc((void **)&e->d_args, L * sizeof *e->d_args, sb));
        NEW_TRY(cudaHostAlloc((void **)&e->h_tok, L * 4, cudaHostAllocDefault));
        NEW_TRY(dev_alloc((void **)&e->d_tok, L * 4, sb));
        NEW_TRY(cudaHostAlloc((void **)&e->h_lp, L * 4, cudaHostAllocDefault));
        NEW_TRY(dev_alloc((void **)&e->d_lp, L * 4, sb));
    }
fail:
    return rc;
}

static int alloc_cache(sx_cuda_engine *e, int64_t kv_tokens, int block_tokens, sx_error *err)
{
    int rc = SX_OK;
    const sx_qwen3_config *c = &e->cfg;
    e->blk = (int64_t)c->n_kv_heads * block_tokens * c->head_dim;
    e->block_stride = 2 * c->n_layers * e->blk;
    size_t block_bytes = (size_t)e->block_stride * 2, tbytes = 0;
    int64_t n_blocks, max_len;
    if (kv_tokens > 0) {
        n_blocks = (kv_tokens + block_tokens - 1) / block_tokens;
    } else {
        size_t fr = 0, total = 0;
        NEW_TRY(cudaMemGetInfo(&fr, &total));
        double avail = (double)fr - 512.0 * (1 << 20); // cuBLAS, graphs, the context
        n_blocks = avail > 0 ? (int64_t)(avail * 0.9 / (double)block_bytes) : 0;
        if (n_blocks < 1)
            return sx_err_set(err, SX_ENOMEM,
                              "cuda engine: no device memory left for the KV cache (%zu MiB free)",
                              fr >> 20);
    }
    if (n_blocks * block_tokens > INT32_MAX)
        n_blocks = INT32_MAX / block_tokens;
    {
        cudaError_t ce = cudaMalloc((void **)&e->kv, (size_t)n_blocks * block_bytes);
        if (ce != cudaSuccess)
            return sx_err_set(err, SX_ENOMEM,
                              "cuda engine: cannot allocate a KV cache of %lld tokens (%.1f GiB): %s",
                              (long long)(n_blocks * block_tokens),
                              (double)n_blocks * block_bytes / (1 << 30), cudaGetErrorString(ce));
    }
    e->info.kv_bytes = n_blocks * (int64_t)block_bytes;
    e->info.kv_tokens = n_blocks * block_tokens;
    max_len = c->max_pos > 0 ? c->max_pos : 32768;
    if (max_len > e->info.kv_tokens)
        max_len = e->info.kv_tokens;
    e->max_blocks = (int)((max_len + block_tokens - 1) / block_tokens);
    e->info.max_len = (int)max_len;
    if ((rc = sx_kvp_new((int32_t)n_blocks, block_tokens, e->info.max_seqs, e->max_blocks,
                         &e->kvp, err)))
        return rc;
    tbytes = (size_t)e->info.max_seqs * e->max_blocks * 4;
    NEW_TRY(cudaMalloc((void **)&e->d_tables, tbytes));
    NEW_TRY(cudaMemset(e->d_tables, 0, tbytes));
    // pinned, the table uploads are truly asynchronous; pageable still works
    e->tables_pinned = cudaHostRegister(sx_kvp_tables(e->kvp), tbytes, cudaHostRegisterDefault) ==
                       cudaSuccess;
    if (!e->tables_pinned)
        cudaGetLastError(); // clear the sticky-free error of the failed registration
    e->dims.n_heads = c->n_heads;
    e->dims.n_kv_heads = c->n_kv_heads;
    e->dims.head_dim = c->head_dim;
    e->dims.block_tokens = block_tokens;
    e->dims.max_blocks = e->max_blocks;
    e->dims.block_stride = e->block_stride;
fail:
    return rc;
}

static int upload_rope(sx_cuda_engine *e, sx_error *err)
{
    int rc = SX_OK;
    int half = e->cfg.head_dim / 2, n_pos = e->info.max_len;
    size_t n = (size_t)n_pos * half;
    float *c = (float *)malloc(n * 4), *s = (float *)malloc(n * 4);
    if (!c || !s) {
        rc = sx_err_set(err, SX_ENOMEM, "cuda engine: out of memory for rope tables");
        goto fail;
    }
    sx_rope_table(e->cfg.rope_theta, e->cfg.head_dim, n_pos, c, s);
    NEW_TRY(dev_alloc((void **)&e->rope_cos, n * 4, &e->info.scratch_bytes));
    NEW_TRY(dev_alloc((void **)&e->rope_sin, n * 4, &e->info.scratch_bytes));
    NEW_TRY(cudaMemcpy(e->rope_cos, c, n * 4, cudaMemcpyHostToDevice));
    NEW_TRY(cudaMemcpy(e->rope_sin, s, n * 4, cudaMemcpyHostToDevice));
fail:
    free(c);
    free(s);
    return rc;
}

int sx_cuda_engine_new(const sx_model *m, const sx_engine_opts *opts, sx_cuda_engine **out,
                       sx_error *err)
{
    int rc = SX_OK, n_dev = 0;
    sx_cuda_engine *e = NULL;
    cudaDeviceProp prop;
    if (!out)
        return sx_err_set(err, SX_EINVAL, "cuda engine: no output pointer");
    *out = NULL;
    if (!m)
        return sx_err_set(err, SX_EINVAL, "cuda engine: no model");
    {
        cudaError_t ce = cudaGetDeviceCount(&n_dev);
        if (ce != cudaSuccess || n_dev == 0) {
            if (ce != cudaSuccess)
                cudaGetLastError();
            return sx_err_set(err, SX_EUNSUPPORTED, "no CUDA device: %s",
                              ce != cudaSuccess ? cudaGetErrorString(ce) : "none found");
        }
    }
    if ((rc = check_model(m, err)))
        return rc;
    sx_engine_opts o;
    memset(&o, 0, sizeof o);
    if (opts)
        o = *opts;
    if (o.device < 0 || o.device >= n_dev)
        return sx_err_set(err, SX_EINVAL, "cuda engine: device %d: this machine has %d CUDA "
                          "device%s (0..%d)", o.device, n_dev, n_dev == 1 ? "" : "s", n_dev - 1);
    if (o.max_seqs < 0 || o.kv_tokens < 0 || o.block_tokens < 0)
        return sx_err_set(err, SX_EINVAL, "cuda engine: bad options (seqs %d, kv tokens %lld, "
                          "block %d)", o.max_seqs, (long long)o.kv_tokens, o.block_tokens);
    if (o.weight_mode != SX_W_BF16)
        return sx_err_set(err, SX_EUNSUPPORTED, "cuda engine: only bf16 weights (weight mode %d)",
                          o.weight_mode);
    if (o.max_seqs == 0)
        o.max_seqs = 64;
    if (o.block_tokens == 0)
        o.block_tokens = 16;
    if (o.block_tokens > 4096 || o.max_seqs > 1 << 16)
        return sx_err_set(err, SX_EINVAL, "cuda engine: block_tokens %d or max_seqs %d too large",
                          o.block_tokens, o.max_seqs);
    if (o.kv_tokens > 0 && o.kv_tokens < o.block_tokens)
        return sx_err_set(err, SX_EINVAL, "cuda engine: kv_tokens %lld is less than one block",
                          (long long)o.kv_tokens);

    e = (sx_cuda_engine *)calloc(1, sizeof *e);
    if (!e)
        return sx_err_set(err, SX_ENOMEM, "cuda engine: out of memory");
    e->m = m;
    e->cfg = m->cfg;
    e->info.max_seqs = o.max_seqs;
    e->info.block_tokens = o.block_tokens;
    e->graphs_on = 1;
    e->cap_t = SX_CUDA_PASS_TOKENS;
    e->max_dec = o.max_seqs < e->cap_t ? o.max_seqs : e->cap_t;
    e->max_bucket = 1;
    while (e->max_bucket < o.max_seqs && e->max_bucket < SX_CUDA_MAX_GRAPH_BATCH)
        e->max_bucket *= 2;
    if (e->max_dec < e->max_bucket)
        e->max_dec = e->max_bucket; // padded graph batches
    e->cap_l = e->max_bucket > 256 ? e->max_bucket : 256;
    e->scale = (float)(1.0 / sqrt((double)e->cfg.head_dim));
    e->dims.n_heads = e->cfg.n_heads;
    e->dims.n_kv_heads = e->cfg.n_kv_heads;
    e->dims.head_dim = e->cfg.head_dim;
    e->seen = (uint32_t *)calloc((size_t)o.max_seqs, sizeof *e->seen);
    e->layers = (cu_layer *)calloc((size_t)e->cfg.n_layers, sizeof *e->layers);
    if (!e->seen || !e->layers) {
        rc = sx_err_set(err, SX_ENOMEM, "cuda engine: out of memory");
        goto fail;
    }
    NEW_TRY(cudaSetDevice(o.device));
    NEW_TRY(cudaGetDeviceProperties(&prop, o.device));
    snprintf(e->info.device, sizeof e->info.device, "%.200s (sm_%d%d, %.0f GiB)", prop.name,
             prop.major, prop.minor, (double)prop.totalGlobalMem / (1 << 30));
    e->info.sm_count = prop.multiProcessorCount;
    NEW_TRY(cudaStreamCreateWithFlags(&e->st, cudaStreamNonBlocking));
    if ((rc = upload_weights(e, err)) || (rc = alloc_scratch(e, err)))
        goto fail;
    if ((rc = sx_cuda_blas_new(e->blas_ws, CUBLAS_WORKSPACE, &e->blas))) {
        rc = sx_err_set(err, SX_EINTERNAL, "cuda engine: cuBLAS initialisation failed");
        goto fail;
    }
    if ((rc = alloc_cache(e, o.kv_tokens, o.block_tokens, err)) || (rc = upload_rope(e, err)))
        goto fail;
    e->info.graphs = e->graphs_on;
    *out = e;
    return SX_OK;
fail:
    sx_cuda_engine_free(e);
    return rc;
}

void sx_cuda_engine_free(sx_cuda_engine *e)
{
    if (!e)
        return;
    if (e->st)
        cudaStreamSynchronize(e->st);
    for (int b = 0; b < SX_CUDA_N_BUCKETS; b++)
        if (e->graphs[b])
            cudaGraphExecDestroy(e->graphs[b]);
    sx_cuda_blas_free(e->blas);
    if (e->layers)
        for (int l = 0; l < e->cfg.n_layers; l++) {
            cu_layer *L = &e->layers[l];
            cudaFree(L->wqkv);
            cudaFree(L->wo);
            cudaFree(L->wgu);
            cudaFree(L->wdown);
            cudaFree(L->attn_norm);
            cudaFree(L->mlp_norm);
            cudaFree(L->q_norm);
            cudaFree(L->k_norm);
        }
    if (e->lm_head != e->embed)
        cudaFree(e->lm_head);
    cudaFree(e->embed);
    cudaFree(e->final_norm);
    cudaFree(e->rope_cos);
    cudaFree(e->rope_sin);
    cudaFree(e->kv);
    cudaFree(e->d_tables);
    if (e->tables_pinned)
        cudaHostUnregister(sx_kvp_tables(e->kvp));
    sx_kvp_free(e->kvp);
    cudaFree(e->x);
    cudaFree(e->delta);
    cudaFree(e->xin);
    cudaFree(e->qkv);
    cudaFree(e->q);
    cudaFree(e->gu);
    cudaFree(e->logits);
    cudaFree(e->work);
    cudaFree(e->blas_ws);
    cudaFree(e->d_meta);
    cudaFreeHost(e->h_meta);
    cudaFreeHost(e->h_mask);
    cudaFree(e->d_mask);
    cudaFreeHost(e->h_args);
    cudaFree(e->d_args);
    cudaFreeHost(e->h_hist);
    cudaFree(e->d_hist);
    cudaFreeHost(e->h_tok);
    cudaFree(e->d_tok);
    cudaFreeHost(e->h_lp);
    cudaFree(e->d_lp);
    if (e->st)
        cudaStreamDestroy(e->st);
    free(e->layers);
    free(e->seen);
    free(e);
}

int sx_cu_quiesce(sx_cuda_engine *e, sx_error *err)
{
    if (!e->pending)
        return SX_OK;
    cudaError_t ce = cudaStreamSynchronize(e->st);
    if (ce != cudaSuccess) {
        e->broken = 1;
        return sx_err_set(err, SX_EINTERNAL, "cuda engine: step failed on the GPU: %s",
                          cudaGetErrorString(ce));
    }
    return SX_OK;
}

int sx_cuda_engine_seq_new(sx_cuda_engine *e, int *seq, sx_error *err)
{
    if (!e || !seq)
        return sx_err_set(err, SX_EINVAL, "cuda engine: NULL argument");
    return sx_kvp_seq_new(e->kvp, seq, err);
}

int sx_cuda_engine_seq_fork(sx_cuda_engine *e, int src, int len, int *seq, sx_error *err)
{
    if (!e || !seq)
        return sx_err_set(err, SX_EINVAL, "cuda engine: NULL argument");
    int rc = sx_cu_quiesce(e, err); // the pending step may still read the tables
    return rc ? rc : sx_kvp_seq_fork(e->kvp, src, len, seq, err);
}

int sx_cuda_engine_seq_truncate(sx_cuda_engine *e, int seq, int len, sx_error *err)
{
    if (!e)
        return sx_err_set(err, SX_EINVAL, "cuda engine: NULL argument");
    int rc = sx_cu_quiesce(e, err);
    return rc ? rc : sx_kvp_seq_truncate(e->kvp, seq, len, err);
}

void sx_cuda_engine_seq_free(sx_cuda_engine *e, int seq)
{
    if (!e)
        return;
    sx_cu_quiesce(e, NULL);
    sx_kvp_seq_free(e->kvp, seq);
}

int sx_cuda_engine_seq_len(const sx_cuda_engine *e, int seq)
{
    return e ? sx_kvp_seq_len(e->kvp, seq) : -1;
}

int64_t sx_cuda_engine_free_tokens(const sx_cuda_engine *e)
{
    return e ? (int64_t)sx_kvp_free_blocks(e->kvp) * sx_kvp_block_tokens(e->kvp) : 0;
}

const sx_model *sx_cuda_engine_model(const sx_cuda_engine *e)
{
    return e ? e->m : NULL;
}

void sx_cuda_engine_info(const sx_cuda_engine *e, sx_cuda_info *out)
{
    if (e && out)
        *out = e->info;
}

void sx_cuda_engine_set_graphs(sx_cuda_engine *e, int on)
{
    if (!e)
        return;
    e->graphs_on = on != 0;
    e->info.graphs = e->graphs_on;
}
