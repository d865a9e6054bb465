// Sampling the launched step's logits on the GPU (kernels/sampler.cu): the
// masks and per-row arguments travel in pinned buffers, copied on the
// engine's stream right behind the forward pass, so the CPU fills masks
// while the GPU computes and only token ids come back.
#include <string.h>

#include "engine/cuda/engine_cuda_internal.h"

uint32_t *sx_cuda_engine_mask_buffer(sx_cuda_engine *e, int n_rows)
{
    if (!e || n_rows <= 0 || n_rows > e->cap_l)
        return NULL;
    return e->h_mask;
}

// Pinned history buffers big enough for n tokens.  Freeing device memory
// waits for the GPU, so the pending step finishes first; that is rare.
static int grow_hist(sx_cuda_engine *e, size_t n, sx_error *err)
{
    if (n <= e->hist_cap)
        return SX_OK;
    size_t cap = e->hist_cap ? e->hist_cap : 4096;
    while (cap < n)
        cap *= 2;
    cudaFreeHost(e->h_hist);
    cudaFree(e->d_hist);
    e->h_hist = NULL;
    e->d_hist = NULL;
    e->hist_cap = 0;
    if (cudaHostAlloc((void **)&e->h_hist, cap * 4, cudaHostAllocDefault) != cudaSuccess ||
        cudaMalloc((void **)&e->d_hist, cap * 4) != cudaSuccess) {
        cudaGetLastError();
        return sx_err_set(err, SX_ENOMEM, "cuda sample: cannot allocate a history of %zu tokens",
                          n);
    }
    e->hist_cap = cap;
    return SX_OK;
}

// Per-row arguments into the pinned buffers; rows with keep[r] set are not
// sampled for the caller (their logits go back instead) and get the
// cheapest arguments, greedy without history, whatever rows[r] holds.
static int fill_args(sx_cuda_engine *e, const sx_cuda_sample_row *rows, int n_rows,
                     int vocab_valid, const uint8_t *keep, size_t *hist_total, sx_error *err)
{
    size_t total = 0;
    for (int r = 0; r < n_rows; r++) {
        if (keep && keep[r])
            continue;
        const sx_cuda_sample_row *s = &rows[r];
        int rc = sx_sampling_check(&s->params, err);
        if (rc)
            return rc;
        if (s->params.top_n != 0)
            return sx_err_set(err, SX_EUNSUPPORTED, "cuda sample: row %d asks for top_n %d "
                              "log-probs (not on the GPU)", r, s->params.top_n);
        if (s->hist_len < 0 || (s->hist_len > 0 && !s->hist))
            return sx_err_set(err, SX_EINVAL, "cuda sample: row %d has a bad history", r);
        total += (size_t)s->hist_len;
    }
    int rc = grow_hist(e, total, err);
    if (rc)
        return rc;
    size_t at = 0;
    for (int r = 0; r < n_rows; r++) {
        sx_cuda_sample_args *a = &e->h_args[r];
        memset(a, 0, sizeof *a);
        a->top_p = 1.0f;
        a->repetition_penalty = 1.0f;
        a->vocab_valid = vocab_valid;
        a->hist_off = (int64_t)at;
        if (keep && keep[r])
            continue; // temperature 0: an argmax nobody reads
        const sx_cuda_sample_row *s = &rows[r];
        a->temperature = s->params.temperature;
        a->top_p = s->params.top_p;
        a->min_p = s->params.min_p;
        a->repetition_penalty = s->params.repetition_penalty;
        a->top_k = s->params.top_k;
        a->no_repeat_ngram = s->params.no_repeat_ngram;
        a->hist_len = s->hist_len;
        a->seed = s->params.seed;
        a->draw = s->draw;
        if (s->hist_len)
            memcpy(e->h_hist + at, s->hist, (size_t)s->hist_len * 4);
        at += (size_t)s->hist_len;
    }
    *hist_total = total;
    return SX_OK;
}

// The enqueue half; any failure here is a CUDA error.  The kept rows are
// copied out, masked, before the sampler uses the device rows as scratch.
static int enqueue(sx_cuda_engine *e, int n_rows, int masked, size_t hist_total,
                   const uint8_t *keep, float *logits)
{
    cudaStream_t s = e->st;
    const size_t V = (size_t)e->cfg.vocab_rows;
    SX_CUDA_TRY(cudaMemcpyAsync(e->d_args, e->h_args, (size_t)n_rows * sizeof *e->h_args,
                                cudaMemcpyHostToDevice, s));
    if (hist_total)
        SX_CUDA_TRY(cudaMemcpyAsync(e->d_hist, e->h_hist, hist_total * 4, cudaMemcpyHostToDevice,
                                    s));
    if (masked)
        SX_CUDA_TRY(cudaMemcpyAsync(e->d_mask, e->h_mask, (size_t)n_rows * e->mask_words * 4,
                                    cudaMemcpyHostToDevice, s));
    if (keep) {
        if (masked && sx_cuda_apply_mask(e->logits, e->d_mask, n_rows, e->cfg.vocab_rows, s))
            return SX_EINTERNAL;
        for (int r = 0; r < n_rows;) { // runs of kept rows, one copy each
            if (!keep[r]) {
                r++;
                continue;
            }
            int r1 = r;
            while (r1 < n_rows && keep[r1])
                r1++;
            SX_CUDA_TRY(cudaMemcpyAsync(logits + (size_t)r * V, e->logits + (size_t)r * V,
                                        (size_t)(r1 - r) * V * 4, cudaMemcpyDeviceToHost, s));
            r = r1;
        }
    }
    int rc = sx_cuda_sample(e->logits, masked ? e->d_mask : NULL, e->d_args,
                            hist_total ? e->d_hist : NULL, n_rows, e->cfg.vocab_rows, e->d_tok,
                            e->d_lp, s);
    if (rc)
        return rc;
    SX_CUDA_TRY(cudaMemcpyAsync(e->h_tok, e->d_tok, (size_t)n_rows * 4, cudaMemcpyDeviceToHost, s));
    SX_CUDA_TRY(cudaMemcpyAsync(e->h_lp, e->d_lp, (size_t)n_rows * 4, cudaMemcpyDeviceToHost, s));
    SX_CUDA_TRY(cudaStreamSynchronize(s));
    return SX_OK;
}

int sx_cuda_engine_sample_keep(sx_cuda_engine *e, const sx_cuda_sample_row *rows, int n_rows,
                               const uint32_t *masks, int vocab_valid, const uint8_t *keep,
                               float *logits, int32_t *tokens, float *logprobs, sx_error *err)
{
    if (!e || !rows || !tokens || n_rows <= 0 || (keep && !logits))
        return sx_err_set(err, SX_EINVAL, "cuda sample: bad arguments");
    if (!e->pending)
        return sx_err_set(err, SX_EINVAL, "cuda sample: no launched step");
    if (n_rows != e->pending_r)
        return sx_err_set(err, SX_EINVAL, "cuda sample: %d rows for a step with %d logits rows",
                          n_rows, e->pending_r);
    size_t hist_total = 0;
    int rc = fill_args(e, rows, n_rows, vocab_valid, keep, &hist_total, err);
    if (rc)
        return rc; // still pending: the caller may fix the rows and retry
    if (masks && masks != e->h_mask)
        memcpy(e->h_mask, masks, (size_t)n_rows * e->mask_words * 4);
    rc = enqueue(e, n_rows, masks != NULL, hist_total, keep, logits);
    e->pending = 0;
    if (rc) {
        e->broken = 1;
        return sx_err_set(err, SX_EINTERNAL, "cuda sample: GPU error (see stderr)");
    }
    for (int r = 0; r < n_rows; r++) {
        if (keep && keep[r])
            continue;
        tokens[r] = e->h_tok[r];
        if (logprobs)
            logprobs[r] = e->h_lp[r];
    }
    return SX_OK;
}

int sx_cuda_engine_sample(sx_cuda_engine *e, const sx_cuda_sample_row *rows, int n_rows,
                          const uint32_t *masks, int vocab_valid, int32_t *tokens,
                          float *logprobs, sx_error *err)
{
    int rc = sx_cuda_engine_sample_keep(e, rows, n_rows, masks, vocab_valid, NULL, NULL, tokens,
                                        logprobs, err);
    for (int r = 0; rc == SX_OK && r < n_rows; r++)
        if (tokens[r] < 0)
            return sx_err_set(err, SX_EINTERNAL, "cuda sample: row %d has every token masked", r);
    return rc;
}
