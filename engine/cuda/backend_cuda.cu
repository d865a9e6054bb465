// The CUDA engine behind the engine interface (engine/backend.h).
//
// A masked step runs as launch (the forward pass enqueued, returning at
// once) -> wait for the grammar's masks, which the CPU threads fill while
// the GPU runs -> the masks into pinned memory, one packed row per logits
// row (all ones for a row without a mask), copied to the device behind the
// forward pass -> a kernel sets the disallowed logits to -INFINITY there
// (kernels/mask_apply.cu) -> the logits come back.  Callers see the CPU
// engine's contract exactly and sample with the CPU sampler (the same draws
// for the same seeds).  The GPU computes every logit (no sparse LM head
// yet) and the device sampler (sx_cuda_engine_sample) is not on this path
// yet: that needs a sampling operation in the engine interface.
//
// The time the GPU waits on masks is measured per masked step: the host's
// time from the launch to the masks being ready, less the forward pass's
// GPU time (events around it), when positive.  Totals in the lm stats.
//
// The CUDA runtime's current device is per host thread, and the thread
// that opens a backend is not the one that steps it (struxd's scheduler),
// so every operation selects the backend's device first.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/cuda/engine_cuda.h"

typedef struct cuda_be {
    sx_cuda_engine    *e;
    int                device;
    sx_engine_lm_stats lm;
    sx_step_item      *plain;   // the items without masks, for launch
    int                cap;
    cudaEvent_t        ev[2];   // around the forward pass of a masked step
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
    if (b->ev[0])
        cudaEventDestroy(b->ev[0]);
    if (b->ev[1])
        cudaEventDestroy(b->ev[1]);
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

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// The packed mask rows of a masked step in the engine's pinned buffer.
static uint32_t *pack_masks(cuda_be *b, const sx_step_item *items, int n_items)
{
    const int words = (sx_cuda_engine_model(b->e)->cfg.vocab_rows + 31) / 32;
    uint32_t *hm = sx_cuda_engine_mask_buffer(b->e, n_items);
    if (!hm)
        return NULL;
    for (int i = 0; i < n_items; i++) {
        uint32_t *row = hm + (size_t)i * words;
        if (items[i].allow)
            memcpy(row, items[i].allow, (size_t)words * 4);
        else
            memset(row, 0xff, (size_t)words * 4);
    }
    return hm;
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
        for (int i = 0; i < n_items; i++)
            if (items[i].logits_all)
                return sx_err_set(err, SX_EINVAL, "cuda backend: a mask with logits_all");
        // the forward pass runs while the mask threads finish
        cudaStream_t st = (cudaStream_t)sx_cuda_engine_stream(b->e);
        int timed = b->ev[0] && cudaEventRecord(b->ev[0], st) == cudaSuccess;
        double t0 = now_us();
        if ((rc = sx_cuda_engine_launch(b->e, b->plain, n_items, err)))
            return rc;
        timed = timed && cudaEventRecord(b->ev[1], st) == cudaSuccess;
        double t1 = now_us();
        if (ready)
            ready(ready_ctx, 1);
        double t2 = now_us();
        uint32_t *hm = pack_masks(b, items, n_items);
        if (!hm) {
            sx_cuda_engine_logits(b->e, logits, err); // completes the launch
            return sx_err_set(err, SX_EINVAL, "cuda backend: %d masked rows, more than the "
                              "engine's mask buffer", n_items);
        }
        if ((rc = sx_cuda_engine_logits_masked(b->e, hm, logits, err)))
            return rc;
        float fwd_ms = 0;
        if (timed && cudaEventElapsedTime(&fwd_ms, b->ev[0], b->ev[1]) != cudaSuccess)
            fwd_ms = 0;
        double idle = (t2 - t0) - fwd_ms * 1e3;
        b->lm.mask_steps++;
        b->lm.mask_wait_us += (int64_t)(t2 - t1);
        b->lm.gpu_idle_us += idle > 0 ? (int64_t)idle : 0;
        b->lm.gpu_busy_us += (int64_t)(fwd_ms * 1e3);
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
    if (rc == SX_OK && (cudaEventCreate(&b->ev[0]) != cudaSuccess ||
                        cudaEventCreate(&b->ev[1]) != cudaSuccess)) {
        cudaGetLastError(); // timing is optional: without events no GPU-idle figure
        b->ev[0] = b->ev[1] = NULL;
    }
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
