/* sx_backend: dispatch over a backend's table of operations, and opening
 * a backend by its --device name. */
#include "engine/backend.h"
#include "engine/cpu/engine.h"

#include <stdlib.h>
#include <string.h>

struct sx_backend {
    const sx_backend_ops *ops;
    void                 *impl;
    int                   owns;
};

/* Defined in engine/cuda/ when libstrux_cuda.a is linked (the tools' link
 * line asks for it by name); NULL otherwise. */
#pragma weak sx_cuda_backend_open

int sx_backend_new(const sx_backend_ops *ops, void *impl, int owns, sx_backend **out,
                   sx_error *err)
{
    if (!ops || !impl || !out)
        return sx_err_set(err, SX_EINVAL, "backend: NULL argument");
    sx_backend *b = calloc(1, sizeof *b);
    if (!b)
        return sx_err_set(err, SX_ENOMEM, "backend: out of memory");
    b->ops = ops;
    b->impl = impl;
    b->owns = owns;
    *out = b;
    return SX_OK;
}

void *sx_backend_impl(const sx_backend *b, const sx_backend_ops *ops)
{
    return b && b->ops == ops ? b->impl : NULL;
}

void sx_backend_close(sx_backend *b)
{
    if (!b)
        return;
    if (b->owns)
        b->ops->close(b->impl);
    free(b);
}

int sx_backend_have_cuda(void)
{
    return sx_cuda_backend_open != NULL;
}

int sx_backend_parse_device(const char *device, int *cuda, int *ordinal, sx_error *err)
{
    *cuda = 0;
    *ordinal = 0;
    if (!device || !strcmp(device, "cpu"))
        return SX_OK;
    if (!strncmp(device, "cuda", 4) && (device[4] == '\0' || device[4] == ':')) {
        *cuda = 1;
        if (device[4] == ':') {
            char *end = NULL;
            long n = strtol(device + 5, &end, 10);
            if (end == device + 5 || *end || n < 0 || n > 1024)
                return sx_err_set(err, SX_EINVAL, "--device %s: want cuda:N with N a device "
                                  "number", device);
            *ordinal = (int)n;
        }
        return SX_OK;
    }
    return sx_err_set(err, SX_EINVAL, "--device %s: want cpu, cuda or cuda:N", device);
}

int sx_backend_device_check(const char *device, sx_error *err)
{
    int cuda, ordinal, rc;
    if ((rc = sx_backend_parse_device(device, &cuda, &ordinal, err)))
        return rc;
    if (cuda && !sx_backend_have_cuda())
        return sx_err_set(err, SX_EUNSUPPORTED, "--device %s: this binary was built without "
                          "CUDA (build it with `make cuda`, or `make emu` for the emulator)",
                          device);
    return SX_OK;
}

int sx_backend_open(const char *device, const sx_model *m, const sx_engine_opts *opts,
                    sx_backend **out, sx_error *err)
{
    int cuda, ordinal, rc;
    if (!m || !out)
        return sx_err_set(err, SX_EINVAL, "backend: NULL argument");
    if ((rc = sx_backend_device_check(device, err)) ||
        (rc = sx_backend_parse_device(device, &cuda, &ordinal, err)))
        return rc;
    if (cuda)
        return sx_cuda_backend_open(ordinal, m, opts, out, err);
    sx_engine *e = NULL;
    if ((rc = sx_engine_new(m, opts, &e, err)))
        return rc;
    if ((rc = sx_engine_backend(e, 1, out, err)))
        sx_engine_free(e);
    return rc;
}

int sx_backend_seq_new(sx_backend *b, int *seq, sx_error *err)
{
    return b->ops->seq_new(b->impl, seq, err);
}

int sx_backend_seq_fork(sx_backend *b, int src, int len, int *seq, sx_error *err)
{
    return b->ops->seq_fork(b->impl, src, len, seq, err);
}

int sx_backend_seq_truncate(sx_backend *b, int seq, int len, sx_error *err)
{
    return b->ops->seq_truncate(b->impl, seq, len, err);
}

void sx_backend_seq_free(sx_backend *b, int seq)
{
    b->ops->seq_free(b->impl, seq);
}

int sx_backend_seq_len(const sx_backend *b, int seq)
{
    return b->ops->seq_len(b->impl, seq);
}

int64_t sx_backend_free_tokens(const sx_backend *b)
{
    return b ? b->ops->free_tokens(b->impl) : 0;
}

/* The sample requests' shape, checked once for every backend. */
static int check_samples(const sx_step_item *items, int n_items, sx_error *err)
{
    for (int i = 0; i < n_items; i++) {
        const sx_step_sample *sp = items[i].sample;
        if (!sp)
            continue;
        if (items[i].logits_all || !sp->sampler)
            return sx_err_set(err, SX_EINVAL, "backend step: item %d asks to sample %s", i,
                              sp->sampler ? "with logits_all" : "without a sampler");
    }
    return SX_OK;
}

int sx_backend_step(sx_backend *b, const sx_step_item *items, int n_items, float *logits,
                    sx_error *err)
{
    int rc = check_samples(items, n_items, err);
    return rc ? rc : b->ops->step(b->impl, items, n_items, logits, NULL, NULL, err);
}

int sx_backend_step_masked(sx_backend *b, const sx_step_item *items, int n_items, float *logits,
                           sx_backend_ready_fn ready, void *ready_ctx, sx_error *err)
{
    int rc = check_samples(items, n_items, err);
    return rc ? rc : b->ops->step(b->impl, items, n_items, logits, ready, ready_ctx, err);
}

void sx_backend_sample_host(const sx_step_item *it, float *row)
{
    sx_step_sample *sp = it->sample;
    sx_err_clear(&sp->err);
    sp->on_device = 0;
    sp->rc = sx_sampler_sample(sp->sampler, row, it->allow, &sp->out, &sp->err);
    if (sp->rc)
        sp->out.token = -1;
}

const sx_model *sx_backend_model(const sx_backend *b)
{
    return b ? b->ops->model(b->impl) : NULL;
}

void sx_backend_lm_stats_get(const sx_backend *b, sx_engine_lm_stats *out)
{
    b->ops->lm_stats(b->impl, out);
}

void sx_backend_mem_get(const sx_backend *b, sx_backend_mem *out)
{
    memset(out, 0, sizeof *out);
    b->ops->mem(b->impl, out);
}

const char *sx_backend_name(const sx_backend *b)
{
    return b->ops->name;
}

const char *sx_backend_describe(const sx_backend *b)
{
    return b->ops->describe(b->impl);
}
