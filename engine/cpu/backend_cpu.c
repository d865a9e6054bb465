/* The CPU engine behind the engine interface (engine/backend.h): each
 * operation is the sx_engine_* call of the same name. */
#include "engine/cpu/engine_internal.h"

static void cpu_close(void *impl)
{
    sx_engine_free(impl);
}

static int cpu_seq_new(void *impl, int *seq, sx_error *err)
{
    return sx_engine_seq_new(impl, seq, err);
}

static int cpu_seq_fork(void *impl, int src, int len, int *seq, sx_error *err)
{
    return sx_engine_seq_fork(impl, src, len, seq, err);
}

static int cpu_seq_truncate(void *impl, int seq, int len, sx_error *err)
{
    return sx_engine_seq_truncate(impl, seq, len, err);
}

static void cpu_seq_free(void *impl, int seq)
{
    sx_engine_seq_free(impl, seq);
}

static int cpu_seq_len(const void *impl, int seq)
{
    return sx_engine_seq_len(impl, seq);
}

static int64_t cpu_free_tokens(const void *impl)
{
    return sx_engine_free_tokens(impl);
}

/* a step without a ready callback is sx_engine_step, so both entry points
 * keep their exact behaviour behind the table */
static int cpu_step(void *impl, const sx_step_item *items, int n_items, float *logits,
                    sx_backend_ready_fn ready, void *ready_ctx, sx_error *err)
{
    const sx_engine *e = impl;
    int rc = ready ? sx_engine_step_masked(impl, items, n_items, logits, ready, ready_ctx, err)
                   : sx_engine_step(impl, items, n_items, logits, err);
    if (rc)
        return rc;
    /* the sample requests: today's sampler on the rows just written */
    size_t r = 0, V = (size_t)e->m->cfg.vocab_rows;
    for (int i = 0; i < n_items; i++) {
        if (items[i].sample)
            sx_backend_sample_host(&items[i], logits + r * V);
        r += items[i].logits_all ? (size_t)items[i].n : 1;
    }
    return SX_OK;
}

static const sx_model *cpu_model(const void *impl)
{
    return sx_engine_model(impl);
}

static void cpu_lm_stats(const void *impl, sx_engine_lm_stats *out)
{
    sx_engine_lm_stats_get(impl, out);
}

static void cpu_mem(const void *impl, sx_backend_mem *out)
{
    const sx_engine *e = impl;
    out->weight_bytes = (int64_t)e->wmem_bytes;
    out->kv_bytes = (int64_t)e->kv.pool_bytes;
    out->kv_tokens = (int64_t)e->kv.n_blocks * e->kv.block_tokens;
    out->kv_free_tokens = sx_engine_free_tokens(e);
    out->max_seqs = e->kv.max_seqs;
    out->block_tokens = e->kv.block_tokens;
}

static const char *cpu_describe(const void *impl)
{
    return sx_engine_cpu_path(impl);
}

static const sx_backend_ops cpu_ops = {
    .name = "cpu",
    .close = cpu_close,
    .seq_new = cpu_seq_new,
    .seq_fork = cpu_seq_fork,
    .seq_truncate = cpu_seq_truncate,
    .seq_free = cpu_seq_free,
    .seq_len = cpu_seq_len,
    .free_tokens = cpu_free_tokens,
    .step = cpu_step,
    .model = cpu_model,
    .lm_stats = cpu_lm_stats,
    .mem = cpu_mem,
    .describe = cpu_describe,
};

int sx_engine_backend(sx_engine *e, int owns, sx_backend **out, sx_error *err)
{
    return sx_backend_new(&cpu_ops, e, owns, out, err);
}

sx_engine *sx_engine_of_backend(const sx_backend *b)
{
    return sx_backend_impl(b, &cpu_ops);
}
