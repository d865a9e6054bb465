// The CUDA engine behind the engine interface (engine/backend.h).
//
// A masked step runs as launch (the forward pass enqueued, returning at
// once) -> wait for the grammar's masks, which the CPU threads fill while
// the GPU runs -> the masks into pinned memory, one packed row per logits
// row (all ones for a row without a mask), copied to the device behind the
// forward pass -> then either
//   - the rows with a sample request (sx_step_sample) are drawn on the
//     device by the masked sampler (kernels/sampler.cu: the mask, the
//     repetition penalty, no-repeat-n-gram, temperature, top-k, top-p,
//     min-p and the draw, the CPU sampler's arithmetic through
//     common/sx_sample_math.h), with each sequence's seed and the count of
//     its accepted tokens as the RNG index, so the same seed gives the CPU
//     sampler's draw on the same logits; only the token ids and their
//     log-probs come back; the other rows (no request, logits_all, or a
//     request the device cannot follow: top-n log-probs, logit_bias,
//     presence/frequency penalties) come back masked as logits first, and
//     those requests are drawn on the host by the CPU sampler;
//   - or, without requests the device can take, a kernel sets the
//     disallowed logits to -INFINITY (kernels/mask_apply.cu) and every row
//     comes back.
// A step without masks or device draws is the engine's synchronous step.
// STRUX_CUDA_SAMPLER=host in the environment sends every draw to the host
// sampler (for tests comparing the two on the same logits).  The GPU
// computes every logit (no sparse LM head yet).
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
    int                host_sampler; // STRUX_CUDA_SAMPLER=host: every draw on the host
    sx_engine_lm_stats lm;
    sx_step_item      *plain;   // the items without masks, for launch
    int                cap;
    // per logits row of a sampled step: device arguments, kept rows, draws
    sx_cuda_sample_row *rows;
    uint8_t            *keep;
    int32_t            *tok;
    float              *lp;
    int                 cap_rows;
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
    free(b->rows);
    free(b->keep);
    free(b->tok);
    free(b->lp);
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

// The packed mask rows of a masked step in the engine's pinned buffer, one
// per logits row: all ones for a row without a mask (and the rows of a
// logits_all item, which has none).
static uint32_t *pack_masks(cuda_be *b, const sx_step_item *items, int n_items, int n_rows)
{
    const int words = (sx_cuda_engine_model(b->e)->cfg.vocab_rows + 31) / 32;
    uint32_t *hm = sx_cuda_engine_mask_buffer(b->e, n_rows);
    if (!hm)
        return NULL;
    uint32_t *row = hm;
    for (int i = 0; i < n_items; i++) {
        int n = items[i].logits_all ? items[i].n : 1;
        for (int k = 0; k < n; k++, row += words) {
            if (items[i].allow)
                memcpy(row, items[i].allow, (size_t)words * 4);
            else
                memset(row, 0xff, (size_t)words * 4);
        }
    }
    return hm;
}

// A sample request the device sampler can answer as the CPU sampler would:
// what it lacks (top-n log-probs, logit_bias, presence and frequency
// penalties) stays on the host; valid0 is the vocabulary size every row of
// the kernel call shares.
static int device_can(const cuda_be *b, const sx_step_sample *sp, int valid0)
{
    const sx_sampling *p = sx_sampler_params(sp->sampler);
    return !b->host_sampler && p->top_n == 0 && p->n_bias == 0 && p->presence_penalty == 0.0f &&
           p->frequency_penalty == 0.0f && sx_sampler_vocab_valid(sp->sampler) == valid0;
}

static int grow(cuda_be *b, int n_items, int n_rows)
{
    if (n_items > b->cap) {
        sx_step_item *p = (sx_step_item *)realloc(b->plain, (size_t)n_items * sizeof *p);
        if (!p)
            return SX_ENOMEM;
        b->plain = p;
        b->cap = n_items;
    }
    if (n_rows > b->cap_rows) {
        sx_cuda_sample_row *r = (sx_cuda_sample_row *)realloc(b->rows, (size_t)n_rows * sizeof *r);
        if (r)
            b->rows = r;
        uint8_t *k = (uint8_t *)realloc(b->keep, (size_t)n_rows);
        if (k)
            b->keep = k;
        int32_t *t = (int32_t *)realloc(b->tok, (size_t)n_rows * 4);
        if (t)
            b->tok = t;
        float *l = (float *)realloc(b->lp, (size_t)n_rows * 4);
        if (l)
            b->lp = l;
        if (!r || !k || !t || !l)
            return SX_ENOMEM;
        b->cap_rows = n_rows;
    }
    return SX_OK;
}

// The device's half of a sampled step, after launch and masks: the rows
// the device draws get their arguments from the sequences' samplers (the
// RNG index is the count of accepted tokens, as on the CPU), the others
// come back as logits; then the host-sampled requests.
static int finish_sampled(cuda_be *b, const sx_step_item *items, int n_items, int n_rows,
                          const uint32_t *hm, int valid0, float *logits, sx_error *err)
{
    const size_t V = (size_t)sx_cuda_engine_model(b->e)->cfg.vocab_rows;
    int any_keep = 0;
    for (int i = 0, r = 0; i < n_items; i++) {
        const sx_step_sample *sp = items[i].sample;
        int n = items[i].logits_all ? items[i].n : 1;
        for (int k = 0; k < n; k++, r++) {
            b->keep[r] = !(sp && device_can(b, sp, valid0));
            any_keep |= b->keep[r];
            if (b->keep[r])
                continue;
            sx_cuda_sample_row *a = &b->rows[r];
            a->params = *sx_sampler_params(sp->sampler);
            a->hist = sx_sampler_history(sp->sampler, &a->hist_len);
            a->draw = (uint64_t)a->hist_len;
        }
    }
    int rc = sx_cuda_engine_sample_keep(b->e, b->rows, n_rows, hm, valid0,
                                        any_keep ? b->keep : NULL, logits, b->tok, b->lp, err);
    if (rc)
        return rc;
    for (int i = 0, r = 0; i < n_items; r += items[i].logits_all ? items[i].n : 1, i++) {
        sx_step_sample *sp = items[i].sample;
        if (!sp)
            continue;
        if (b->keep[r]) {
            sx_backend_sample_host(&items[i], logits + (size_t)r * V);
            b->lm.host_samples++;
            continue;
        }
        memset(&sp->out, 0, sizeof sp->out);
        sx_err_clear(&sp->err);
        sp->on_device = 1;
        sp->out.token = b->tok[r];
        sp->out.logprob = b->lp[r];
        sp->rc = SX_OK;
        if (b->tok[r] < 0)
            sp->rc = sx_err_set(&sp->err, SX_EINTERNAL, "cuda sample: every token of the row "
                                "is masked");
        b->lm.dev_samples++;
    }
    return SX_OK;
}

// A step without a mask and without a draw for the device: the engine's
// synchronous step (any number of rows), then the host's draws.
static int step_logits(cuda_be *b, const sx_step_item *items, int n_items, float *logits,
                       sx_error *err)
{
    int rc = sx_cuda_engine_step(b->e, items, n_items, logits, err);
    const size_t V = (size_t)sx_cuda_engine_model(b->e)->cfg.vocab_rows;
    for (int i = 0, r = 0; rc == SX_OK && i < n_items; r += items[i].logits_all ? items[i].n : 1,
             i++)
        if (items[i].sample) {
            sx_backend_sample_host(&items[i], logits + (size_t)r * V);
            b->lm.host_samples++;
        }
    return rc;
}

static int cu_step(void *impl, const sx_step_item *items, int n_items, float *logits,
                   sx_backend_ready_fn ready, void *ready_ctx, sx_error *err)
{
    cuda_be *b = (cuda_be *)impl;
    bind(b);
    int masked = 0, n_dev = 0, n_rows = 0, valid0 = 0, rc;
    for (int i = 0; i < n_items; i++) {
        masked |= items[i].allow != NULL;
        n_rows += items[i].logits_all ? items[i].n : 1;
        if (items[i].allow && items[i].logits_all)
            return sx_err_set(err, SX_EINVAL, "cuda backend: a mask with logits_all");
        if (items[i].sample) {
            if (!valid0)
                valid0 = sx_sampler_vocab_valid(items[i].sample->sampler);
            n_dev += device_can(b, items[i].sample, valid0);
        }
    }
    // a launch keeps its logits on the device, at most the engine's rows
    if (n_dev && !sx_cuda_engine_mask_buffer(b->e, n_rows))
        n_dev = 0;
    if (!masked && !n_dev) {
        rc = step_logits(b, items, n_items, logits, err);
        goto done;
    }
    if ((rc = grow(b, n_items, n_rows)))
        return sx_err_set(err, rc, "cuda backend: out of memory");
    for (int i = 0; i < n_items; i++) {
        b->plain[i] = items[i];
        b->plain[i].allow = NULL;
        b->plain[i].sample = NULL;
    }
    {
        // the forward pass runs while the mask threads finish
        cudaStream_t st = (cudaStream_t)sx_cuda_engine_stream(b->e);
        int timed = masked && b->ev[0] && cudaEventRecord(b->ev[0], st) == cudaSuccess;
        double t0 = now_us();
        if ((rc = sx_cuda_engine_launch(b->e, b->plain, n_items, err)))
            return rc;
        timed = timed && cudaEventRecord(b->ev[1], st) == cudaSuccess;
        double t1 = now_us();
        if (ready)
            ready(ready_ctx, 1);
        double t2 = now_us();
        uint32_t *hm = masked ? pack_masks(b, items, n_items, n_rows) : NULL;
        if (masked && !hm) {
            sx_cuda_engine_logits(b->e, logits, err); // completes the launch
            return sx_err_set(err, SX_EINVAL, "cuda backend: %d masked rows, more than the "
                              "engine's mask buffer", n_rows);
        }
        if (n_dev) {
            if ((rc = finish_sampled(b, items, n_items, n_rows, hm, valid0, logits, err))) {
                sx_error e2;
                sx_cuda_engine_logits(b->e, logits, &e2); // completes it when still pending
                return rc;
            }
        } else if ((rc = sx_cuda_engine_logits_masked(b->e, hm, logits, err))) {
            return rc;
        } else {
            const size_t V = (size_t)sx_cuda_engine_model(b->e)->cfg.vocab_rows;
            for (int i = 0, r = 0; i < n_items; r += items[i].logits_all ? items[i].n : 1, i++)
                if (items[i].sample) {
                    sx_backend_sample_host(&items[i], logits + (size_t)r * V);
                    b->lm.host_samples++;
                }
        }
        if (masked) {
            float fwd_ms = 0;
            if (timed && cudaEventElapsedTime(&fwd_ms, b->ev[0], b->ev[1]) != cudaSuccess)
                fwd_ms = 0;
            double idle = (t2 - t0) - fwd_ms * 1e3;
            b->lm.mask_steps++;
            b->lm.mask_wait_us += (int64_t)(t2 - t1);
            b->lm.gpu_idle_us += idle > 0 ? (int64_t)idle : 0;
            b->lm.gpu_busy_us += (int64_t)(fwd_ms * 1e3);
        }
    }
done:
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
    const char *smp = getenv("STRUX_CUDA_SAMPLER");
    b->host_sampler = smp && !strcmp(smp, "host");
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
