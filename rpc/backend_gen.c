/* The real sx_rpc_backend: sx_gen over an sx_backend (engine/backend.h). */
#include <stdlib.h>
#include <string.h>

#include "rpc/server.h"

typedef struct gen_backend {
    sx_backend         *e;
    const sx_tokenizer *tok;
    sx_gen_opts         o;
    sx_gen             *g;
    int64_t             kv_capacity;
    sx_backend         *draft;
} gen_backend;

static int gb_bind(void *b, sx_gen_cb cb, void *cb_ctx, sx_error *err)
{
    gen_backend *gb = b;
    if (gb->g)
        return sx_err_set(err, SX_EINVAL, "backend already bound");
    int rc = sx_gen_new(gb->e, gb->tok, &gb->o, cb, cb_ctx, &gb->g, err);
    if (!rc && gb->draft && (rc = sx_gen_set_draft(gb->g, gb->draft, err))) {
        sx_gen_free(gb->g);
        gb->g = NULL;
    }
    return rc;
}

static void gb_spec_stats(void *b, int64_t *drafted, int64_t *accepted)
{
    gen_backend *gb = b;
    *drafted = *accepted = 0;
    if (gb->g)
        sx_gen_spec_stats(gb->g, drafted, accepted);
}

int sx_rpc_gen_backend_set_draft(sx_rpc_backend *b, sx_backend *draft, sx_error *err)
{
    gen_backend *gb = b->b;
    if (gb->g)
        return sx_err_set(err, SX_EINVAL, "the draft model is set before the server starts");
    gb->draft = draft;
    return SX_OK;
}

static void gb_prefix_stats(void *b, sx_gen_prefix_stats *out)
{
    gen_backend *gb = b;
    memset(out, 0, sizeof *out);
    if (gb->g)
        sx_gen_prefix_stats_get(gb->g, out);
}

static int gb_add(void *b, const int32_t *prompt, int n_prompt, const sx_gen_params *p,
                  void *user, int *handle, sx_error *err)
{
    return sx_gen_add(((gen_backend *)b)->g, prompt, n_prompt, p, user, handle, err);
}

static void gb_cancel(void *b, int handle)
{
    sx_gen_cancel(((gen_backend *)b)->g, handle);
}

static int gb_step(void *b, int *n_live, sx_error *err)
{
    return sx_gen_step(((gen_backend *)b)->g, n_live, err);
}

static int gb_score(void *b, const int32_t *prompt, int n_prompt, int prefix_len,
                    const sx_ids *labels, size_t n_labels, double *logp, sx_error *err)
{
    gen_backend *gb = b;
    /* the shared prefix from the generator's cache: only the rest is run */
    int base;
    int rc = sx_gen_prefix_seq(gb->g, prompt, n_prompt, prefix_len, &base, err);
    if (rc)
        return rc;
    return sx_rpc_score_labels(gb->e, sx_tok_vocab_size(gb->tok), prompt, n_prompt, base,
                               base >= 0 ? prefix_len : 0, labels, n_labels, gb->o.prefill_chunk,
                               logp, err);
}

static int gb_beam(void *b, const int32_t *prompt, int n_prompt, const sx_beam_params *p,
                   sx_beam_result *out, sx_error *err)
{
    gen_backend *gb = b;
    int32_t eos[2] = {sx_tok_find(gb->tok, "<|im_end|>", 10),
                      sx_tok_find(gb->tok, "<|endoftext|>", 13)};
    sx_beam_params q = *p;
    q.eos = eos;
    q.n_eos = 2;
    q.tok = gb->tok;
    q.prefill_chunk = gb->o.prefill_chunk;
    return sx_beam_run(gb->e, prompt, n_prompt, &q, out, err);
}

static int64_t gb_kv(void *b)
{
    return ((gen_backend *)b)->kv_capacity;
}

static void gb_free(void *b)
{
    gen_backend *gb = b;
    sx_gen_free(gb->g);
    free(gb);
}

static void gb_lm_stats(void *b, sx_engine_lm_stats *out)
{
    sx_backend_lm_stats_get(((gen_backend *)b)->e, out);
}

static const sx_rpc_backend_ops gen_ops = {
    .bind = gb_bind, .add = gb_add, .cancel = gb_cancel, .step = gb_step,
    .score = gb_score, .beam = gb_beam, .kv_capacity = gb_kv, .lm_stats = gb_lm_stats, .free = gb_free,
    .spec_stats = gb_spec_stats,
    .prefix_stats = gb_prefix_stats,
};

int sx_rpc_gen_backend_new(sx_backend *e, const sx_tokenizer *tok, const sx_gen_opts *opts,
                           sx_rpc_backend *out, sx_error *err)
{
    out->ops = NULL;
    out->b = NULL;
    gen_backend *gb = calloc(1, sizeof *gb);
    if (!gb)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    gb->e = e;
    gb->tok = tok;
    if (opts)
        gb->o = *opts;
    if (gb->o.prefill_chunk <= 0)
        gb->o.prefill_chunk = 256;
    gb->kv_capacity = sx_backend_free_tokens(e);
    out->ops = &gen_ops;
    out->b = gb;
    return SX_OK;
}

void sx_rpc_backend_free(sx_rpc_backend *b)
{
    if (b && b->ops) {
        b->ops->free(b->b);
        b->ops = NULL;
        b->b = NULL;
    }
}
