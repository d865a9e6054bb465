// The CUDA engine behind the engine interface (engine/backend.h).
//
// A masked step runs as launch (the forward pass enqueued, returning at
// once) -> wait for the grammar's masks, which the CPU threads fill while
// the GPU runs -> copy the logits back -> set the rows' disallowed tokens to
// -INFINITY on the host, so callers see the CPU engine's contract exactly
// and sample with the CPU sampler (the same draws for the same seeds).
// The GPU computes every logit (no sparse LM head yet) and the device
// sampler (sx_cuda_engine_sample) is not on this path yet.
//
// The CUDA runtime's current device is per host thread, and the thread
// that opens a backend is not the one that steps it (struxd's scheduler),
// so every operation selects the backend's device first.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/engine_cuda.h"

typedef struct cuda_be {
    sx_cuda_engine    *e;
    int                device;
    sx_engine_lm_stats lm;
    sx_step_item      *plain;   // the items without masks, for launch
    int                cap;
    char               desc[300];
} cuda_be;

static void bind(const cuda_be *b)
{
    (void)cudaSetDevice(b->device);
}

static void cu_close(void *impl)
{
    cuda_be *b = (cuda_be *)impl;
    bind(b);
    sx_cuda_engine_free(b->e);
    free(b->plain);
    free(b);
}

static int cu_seq_new(void *impl, int *seq, sx_error *err)
{
    cuda_be *b = (cuda_be *)impl;
    bind(b);
    return sx_cuda_engine_seq_new(b->e, seq, err);
}

static int cu_seq_fork(void *impl, int src, int len, int *seq, sx_error *err)
{
    cuda_be *b = (cuda_be *)impl;
    bind(b);
    return sx_cuda_engine_seq_fork(b->e, src, len, seq, err);
}

static int cu_seq_truncate(void *impl, int seq, int len, sx_error *err)
{
    cuda_be *b = (cuda_be *)impl;
    bind(b);
    return sx_cuda_engine_seq_truncate(b->e, seq, len, err);
}

static void cu_seq_free(void *impl, int seq)
{
    cuda_be *b = (cuda_be *)impl;
    bind(b);
    sx_cuda_engine_seq_free(b->e, seq);
}

static int cu_seq_len(const void *impl, int seq)
{
    const cuda_be *b = (const cuda_be *)impl;
    return sx_cuda_engine_seq_len(b->e, seq);
}

static int64_t cu_free_tokens(const void *impl)
{
    const cuda_be *b = (const cuda_be *)impl;
    return sx_cuda_engine_free_tokens(b->e);
}

static void apply_mask(float *row, const uint32_t *allow, int vocab_rows)
{
    for (int t = 0; t < vocab_rows; t++)
        if (!((allow[t >> 5] >> (t & 31)) & 1u))
            row[t] = -INFINITY;
}

static int cu_step(void *impl, const sx_step_item *items, int n_items, float *logits,
                   sx_backend_ready_fn ready, void *ready_ctx, sx_error *err)
{
    cuda_be *b = (cuda_be *)impl;
    bind(b);
    int masked = 0, rc;
    for (int i = 0; i < n_items; i++)
        masked |= items[i].allow != NULL;
    if (!masked) {
        rc = sx_cuda_engine_step(b->e, items, n_items, logits, err);
    } else {
        if (n_items > b->cap) {
            sx_step_item *p = (sx_step_item *)realloc(b->plain, (size_t)n_items * sizeof *p);
            if (!p)
                return sx_err_set(err, SX_ENOMEM, "cuda backend: out of memory");
            b->plain = p;
            b->cap = n_items;
        }
        for (int i = 0; i < n_items; i++) {
            b->plain[i] = items[i];
            b->plain[i].allow = NULL;
        }
        // the forward pass runs while the mask threads finish
        if ((rc = sx_cuda_engine_launch(b->e, b->plain, n_items, err)))
            return rc;
        if (ready)
            ready(ready_ctx, 1);
        if ((rc = sx_cuda_engine_logits(b->e, logits, err)))
            return rc;
        const int V = sx_cuda_engine_model(b->e)->cfg.vocab_rows;
        size_t r = 0;
        for (int i = 0; i < n_items; i++) {
            if (items[i].allow && !items[i].logits_all)
                apply_mask(logits + r * (size_t)V, items[i].allow, V);
            r += items[i].logits_all ? (size_t)items[i].n : 1;
        }
    }
    if (rc == SX_OK)
        for (int i = 0; i < n_items; i++)
            b->lm.tokens += items[i].n;
    return rc;
}

static const sx_model *cu_model(const void *impl)
{
    return sx_cuda_engine_model(((const cuda_be *)impl)->e);
}

static void cu_lm_stats(const void *impl, sx_engine_lm_stats *out)
{
    *out = ((const cuda_be *)impl)->lm;
}

static void cu_mem(const void *impl, sx_backend_mem *out)
{
    const cuda_be *b = (const cuda_be *)impl;
    sx_cuda_info in;
    sx_cuda_engine_info(b->e, &in);
    out->weight_bytes = in.weight_bytes;
    out->kv_bytes = in.kv_bytes;
    out->kv_tokens = in.kv_tokens;
    out->kv_free_tokens = sx_cuda_engine_free_tokens(b->e);
    out->max_seqs = in.max_seqs;
    out->block_tokens = in.block_tokens;
}

static const char *cu_describe(const void *impl)
{
    return ((const cuda_be *)impl)->desc;
}

static sx_backend_ops make_ops(void)
{
    sx_backend_ops o;
    memset(&o, 0, sizeof o);
    o.name = "cuda";
    o.close = cu_close;
    o.seq_new = cu_seq_new;
    o.seq_fork = cu_seq_fork;
    o.seq_truncate = cu_seq_truncate;
    o.seq_free = cu_seq_free;
    o.seq_len = cu_seq_len;
    o.free_tokens = cu_free_tokens;
    o.step = cu_step;
    o.model = cu_model;
    o.lm_stats = cu_lm_stats;
    o.mem = cu_mem;
    o.describe = cu_describe;
    return o;
}

static const sx_backend_ops cuda_ops = make_ops();

extern "C" int sx_cuda_backend_open(int ordinal, const sx_model *m, const sx_engine_opts *opts,
                                    sx_backend **out, sx_error *err)
{
    sx_engine_opts o;
    memset(&o, 0, sizeof o);
    if (opts)
        o = *opts;
    o.device = ordinal;
    cuda_be *b = (cuda_be *)calloc(1, sizeof *b);
    if (!b)
        return sx_err_set(err, SX_ENOMEM, "cuda backend: out of memory");
    b->device = ordinal;
    int rc = sx_cuda_engine_new(m, &o, &b->e, err);
    if (rc == SX_OK) {
        sx_cuda_info in;
        sx_cuda_engine_info(b->e, &in);
        snprintf(b->desc, sizeof b->desc, "cuda:%d %s", ordinal, in.device);
        rc = sx_backend_new(&cuda_ops, b, 1, out, err);
    }
    if (rc) {
        if (b->e)
            sx_cuda_engine_free(b->e);
        free(b);
    }
    return rc;
}
