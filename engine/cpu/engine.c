/* sx_engine set-up, teardown and sequence management. */
#include "engine/cpu/engine_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int check_model(const sx_model *m, sx_error *err)
{
    const sx_qwen3_config *c = &m->cfg;
    if (c->vocab_rows <= 0 || c->hidden <= 0 || c->intermediate <= 0 || c->n_layers <= 0 ||
        c->n_heads <= 0 || c->n_kv_heads <= 0 || c->head_dim <= 0)
        return sx_err_set(err, SX_EINVAL, "engine: model has a non-positive dimension");
    if (c->n_heads % c->n_kv_heads != 0)
        return sx_err_set(err, SX_EINVAL, "engine: %d heads do not split into %d kv groups",
                          c->n_heads, c->n_kv_heads);
    if (!(c->rope_theta > 0.0) || !isfinite(c->rope_theta) || !(c->rms_eps >= 0.0f) ||
        !isfinite(c->rms_eps))
        return sx_err_set(err, SX_EINVAL, "engine: rope_theta %g / rms_eps %g out of range",
                          c->rope_theta, (double)c->rms_eps);
    if (c->head_dim % 2 != 0)
        return sx_err_set(err, SX_EINVAL, "engine: head_dim %d is odd (RoPE pairs halves)",
                          c->head_dim);
    if ((int64_t)c->n_heads * c->head_dim > INT32_MAX / 4 || (int64_t)c->hidden > INT32_MAX / 4 ||
        (int64_t)c->intermediate > INT32_MAX / 4)
        return sx_err_set(err, SX_ELIMIT, "engine: model dimensions too large");
    if (!m->embed || !m->lm_head || !m->final_norm || !m->layers)
        return sx_err_set(err, SX_EINVAL, "engine: model is missing tensors");
    for (int l = 0; l < c->n_layers; l++) {
        const sx_layer_weights *w = &m->layers[l];
        const uint16_t *mat[SX_MAT_COUNT] = {w->wq, w->wk, w->wv, w->wo, w->w_gate, w->w_up,
                                             w->w_down};
        for (int i = 0; i < SX_MAT_COUNT; i++) {
            if (!mat[i] && !w->q4[i].q)
                return sx_err_set(err, SX_EINVAL, "engine: layer %d is missing tensors", l);
            /* the panels hold 32 k per scale; an AWQ group must be whole ones */
            if (w->q4[i].q && (w->q4[i].group % SX_Q4_GROUP || w->q4[i].group <= 0 ||
                               w->q4[i].cols % w->q4[i].group))
                return sx_err_set(err, SX_EUNSUPPORTED,
                                  "engine: AWQ group_size %d is not a multiple of %d dividing "
                                  "%d", w->q4[i].group, SX_Q4_GROUP, w->q4[i].cols);
        }
        if (!w->attn_norm || !w->mlp_norm || !w->q_norm || !w->k_norm)
            return sx_err_set(err, SX_EINVAL, "engine: layer %d is missing tensors", l);
    }
    return SX_OK;
}

static sx_wmat wmat(const uint16_t *w, int rows, int cols)
{
    sx_wmat m = { .src = w, .rows = rows, .cols = cols };
    return m;
}

/* a layer matrix: the bf16 one, or the checkpoint's 4-bit one */
static sx_wmat lmat(const sx_layer_weights *lw, int i, const uint16_t *w, int rows, int cols)
{
    sx_wmat m = wmat(w, rows, cols);
    if (lw->q4[i].q)
        m.awq = &lw->q4[i];
    return m;
}

/* AWQ matrices are q4 in every mode: the mode applies to the others */
static int wmode(const sx_engine *e, const sx_wmat *w)
{
    return w->awq ? SX_W_Q4 : e->mode;
}

/* Every matrix is repacked into panels (int8 and q4 modes: quantised
 * too), in parallel over panels. */
typedef struct pack_ctx {
    sx_wmat **mats;
    int       n, mode;
    long      total_panels;
    int       q8_layout;
} pack_ctx;

static void pack_run(void *arg, int tid, int nth)
{
    pack_ctx *pc = arg;
    long lo, hi, base = 0;
    sx_pool_range(pc->total_panels, nth, tid, 1, &lo, &hi);
    for (int i = 0; i < pc->n; i++) {
        sx_wmat *w = pc->mats[i];
        long np = sx_pad_rows(w->rows) / SX_PANEL;
        long a = lo > base ? lo - base : 0, b = hi - base < np ? hi - base : np;
        base += np;
        if (a >= b)
            continue;
        int r0 = (int)(a * SX_PANEL), r1 = (int)(b * SX_PANEL);
        if (w->awq)
            sx_pack_q4_awq(w->awq->q, w->awq->scale, w->awq->zero, w->rows, w->cols,
                           w->awq->group, r0, r1, (uint8_t *)w->q4, (float *)w->zb);
        else if (pc->mode == SX_W_Q4)
            sx_pack_q4(w->src, w->rows, w->cols, r0, r1, (uint8_t *)w->q4);
        else if (pc->mode == SX_W_INT8)
            sx_pack_q8(w->src, w->rows, w->cols, r0, r1, pc->q8_layout, (int8_t *)w->q8,
                       (float *)w->scale);
        else
            sx_pack_bf16(w->src, w->rows, w->cols, r0, r1, (uint16_t *)w->bf16);
    }
}

static int pack_weights(sx_engine *e, sx_error *err)
{
    int n = e->cfg.n_layers * 7 + 1;
    sx_wmat **mats = malloc((size_t)n * sizeof *mats);
    if (!mats)
        return sx_err_set(err, SX_ENOMEM, "engine: out of memory");
    int j = 0;
    for (int l = 0; l < e->cfg.n_layers; l++) {
        sx_elayer *L = &e->layers[l];
        mats[j++] = &L->wq; mats[j++] = &L->wk; mats[j++] = &L->wv; mats[j++] = &L->wo;
        mats[j++] = &L->gate; mats[j++] = &L->up; mats[j++] = &L->down;
    }
    mats[j++] = &e->lm_head;
    size_t bytes = 0, rows = 0, zbs = 0;
    long panels = 0;
    for (int i = 0; i < n; i++) {
        sx_wmat *w = mats[i];
        int md = wmode(e, w);
        bytes += md == SX_W_Q4     ? sx_pack_q4_size(w->rows, w->cols)
                 : md == SX_W_INT8 ? sx_pack_q8_size(w->rows, w->cols, e->kr->q8_layout)
                                   : sx_pack_bf16_size(w->rows, w->cols) * sizeof(uint16_t);
        bytes = (bytes + 63) & ~(size_t)63;
        rows += (size_t)sx_pad_rows(w->rows);
        panels += sx_pad_rows(w->rows) / SX_PANEL;
        if (w->awq)
            zbs += (size_t)sx_pad_rows(w->rows) * (size_t)(w->cols / w->awq->group);
    }
    /* 2 MiB pages where the kernel allows: decode streams every byte of this
     * once per token, and 4 KiB pages cost it a third of the bandwidth */
    e->wmem_bytes = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    e->wmem = mmap(NULL, e->wmem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (e->wmem == MAP_FAILED)
        e->wmem = NULL;
    else
        (void)madvise(e->wmem, e->wmem_bytes, MADV_HUGEPAGE);
    if (e->mode == SX_W_INT8)
        e->wscale = malloc(rows * sizeof(float));
    if (zbs)
        e->wzb = malloc(zbs * sizeof(float));
    if (!e->wmem || (e->mode == SX_W_INT8 && !e->wscale) || (zbs && !e->wzb)) {
        free(mats);
        return sx_err_set(err, SX_ENOMEM, "engine: cannot allocate %zu bytes of packed weights",
                          bytes);
    }
    size_t off = 0, ro = 0, zo = 0;
    for (int i = 0; i < n; i++) {
        sx_wmat *w = mats[i];
        int md = wmode(e, w);
        if (w->awq) {
            w->zb = e->wzb + zo;
            zo += (size_t)sx_pad_rows(w->rows) * (size_t)(w->cols / w->awq->group);
        }
        if (md == SX_W_Q4) {
            w->q4 = (uint8_t *)e->wmem + off;
            off += sx_pack_q4_size(w->rows, w->cols);
        } else if (md == SX_W_INT8) {
            w->q8 = (int8_t *)e->wmem + off;
            w->scale = e->wscale + ro;
            off += sx_pack_q8_size(w->rows, w->cols, e->kr->q8_layout);
        } else {
            w->bf16 = (uint16_t *)((char *)e->wmem + off);
            off += sx_pack_bf16_size(w->rows, w->cols) * sizeof(uint16_t);
        }
        off = (off + 63) & ~(size_t)63;
        ro += (size_t)sx_pad_rows(w->rows);
    }
    pack_ctx pc = { mats, n, e->mode, panels, e->kr->q8_layout };
    sx_pool_run(e->pool, pack_run, &pc);
    free(mats);
    return SX_OK;
}

int sx_engine_new(const sx_model *m, const sx_engine_opts *opts, sx_engine **out,
                  sx_error *err)
{
    int rc;
    sx_engine *e = NULL;
    if (!out)
        return sx_err_set(err, SX_EINVAL, "engine: no output pointer");
    *out = NULL;
    if (!m)
        return sx_err_set(err, SX_EINVAL, "engine: no model");
    if ((rc = check_model(m, err)))
        return rc;
    sx_engine_opts o = { 0 };
    if (opts)
        o = *opts;
    if (o.n_threads < 0 || o.max_seqs < 0 || o.kv_tokens < 0 || o.block_tokens < 0 ||
        (o.weight_mode != SX_W_BF16 && o.weight_mode != SX_W_INT8 && o.weight_mode != SX_W_Q4) ||
        (o.act_mode != SX_ACT_F32 && o.act_mode != SX_ACT_BF16) ||
        (o.kv_mode != SX_KV_F32 && o.kv_mode != SX_KV_BF16))
        return sx_err_set(err, SX_EINVAL, "engine: bad options (threads %d, seqs %d, "
                          "kv tokens %lld, block %d, weight mode %d, activation mode %d, "
                          "kv mode %d)", o.n_threads, o.max_seqs, (long long)o.kv_tokens,
                          o.block_tokens, o.weight_mode, o.act_mode, o.kv_mode);
    if (o.max_seqs == 0)
        o.max_seqs = 64;
    if (o.kv_tokens == 0)
        o.kv_tokens = 65536;
    if (o.block_tokens == 0)
        o.block_tokens = 16;
    if (o.block_tokens > 4096 || o.max_seqs > 1 << 20)
        return sx_err_set(err, SX_EINVAL, "engine: block_tokens %d or max_seqs %d too large",
                          o.block_tokens, o.max_seqs);
    if (o.kv_tokens < o.block_tokens)
        return sx_err_set(err, SX_EINVAL, "engine: kv_tokens %lld is less than one block",
                          (long long)o.kv_tokens);

    e = calloc(1, sizeof *e);
    if (!e)
        return sx_err_set(err, SX_ENOMEM, "engine: out of memory");
    e->m = m;
    e->cfg = m->cfg;
    e->mode = o.weight_mode;
    const sx_qwen3_config *c = &e->cfg;
    if ((rc = sx_cpu_kernels_select(&e->kr, err)))
        goto fail;
    e->mm_bf16 = e->kr->mm_bf16;
    e->path_name = e->kr->name;
    {
        const char *bi = getenv("STRUX_BATCH_INVARIANT");
        e->batch_variant = o.batch_variant || (bi && strcmp(bi, "0") == 0);
    }
#if defined(__x86_64__)
    if (e->batch_variant && e->kr->path == SX_CPU_AMX)
        e->mm_bf16 = sx_amx_mm_bf16_variant;
#endif
    /* AMX keeps its own bf16 tile products: f32-accurate and faster */
    if (o.act_mode == SX_ACT_BF16 && e->kr->path != SX_CPU_AMX) {
        if (e->kr->path != SX_CPU_AVX512 || !sx_dpbf16_usable()) {
            rc = sx_err_set(err, SX_EUNSUPPORTED, "engine: bf16 activations need AVX512-BF16, "
                            "which this CPU or path lacks (path %s)", e->kr->name);
            goto fail;
        }
        e->mm_bf16 = sx_dpbf16_mm_bf16;
        e->att_dp = 1;
        e->path_name = "avx512-bf16act";
    }
    if ((rc = sx_pool_new(o.n_threads, &e->pool, err)))
        goto fail;
    e->n_threads = sx_pool_size(e->pool);
    e->prof = sx_step_prof_new(e->n_threads);
    if ((rc = sx_kv_init(&e->kv, c->n_layers, c->n_kv_heads, c->head_dim, o.max_seqs,
                         o.kv_tokens, o.block_tokens, c->max_pos,
                         o.kv_mode == SX_KV_BF16 ? 2 : 4, err)))
        goto fail;
    e->layers = calloc((size_t)c->n_layers, sizeof *e->layers);
    e->inv_freq = malloc((size_t)(c->head_dim / 2 + 1) * sizeof(float));
    e->seen = calloc((size_t)o.max_seqs, sizeof *e->seen);
    int panels = (c->vocab_rows + SX_PANEL - 1) / SX_PANEL;
    e->lm_panels = malloc((size_t)panels * sizeof *e->lm_panels);
    e->dense_logits = o.dense_logits != 0;
    if (!e->layers || !e->inv_freq || !e->seen || !e->lm_panels) {
        rc = sx_err_set(err, SX_ENOMEM, "engine: out of memory");
        goto fail;
    }
    int qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim;
    for (int l = 0; l < c->n_layers; l++) {
        const sx_layer_weights *w = &m->layers[l];
        sx_elayer *L = &e->layers[l];
        L->wq = lmat(w, SX_MAT_Q, w->wq, qd, c->hidden);
        L->wk = lmat(w, SX_MAT_K, w->wk, kvd, c->hidden);
        L->wv = lmat(w, SX_MAT_V, w->wv, kvd, c->hidden);
        L->wo = lmat(w, SX_MAT_O, w->wo, c->hidden, qd);
        L->gate = lmat(w, SX_MAT_GATE, w->w_gate, c->intermediate, c->hidden);
        L->up = lmat(w, SX_MAT_UP, w->w_up, c->intermediate, c->hidden);
        L->down = lmat(w, SX_MAT_DOWN, w->w_down, c->hidden, c->intermediate);
    }
    e->lm_head = wmat(m->lm_head, c->vocab_rows, c->hidden);
    sx_cpu_rope_inv_freq(c->rope_theta, c->head_dim, e->inv_freq);
    e->att_scale = (float)(1.0 / sqrt((double)c->head_dim));
    e->xin_dim = c->hidden > qd ? c->hidden : qd;
    if (c->intermediate > e->xin_dim)
        e->xin_dim = c->intermediate;
    if ((rc = pack_weights(e, err)))
        goto fail;
    *out = e;
    return SX_OK;
fail:
    sx_engine_free(e);
    return rc;
}

void sx_engine_free(sx_engine *e)
{
    if (!e)
        return;
    if (e->prof) {
        sx_step_prof_print(e->prof, stderr);
        sx_step_prof_free(e->prof);
    }
    sx_pool_free(e->pool);
    sx_kv_destroy(&e->kv);
    free(e->layers);
    if (e->wmem)
        munmap(e->wmem, e->wmem_bytes);
    free(e->wscale);
    free(e->wzb);
    free(e->inv_freq);
    free(e->x);
    free(e->xin);
    free(e->xin2);
    free(e->awq_xs);
    free(e->q);
    free(e->k);
    free(e->v);
    free(e->att);
    free(e->g);
    free(e->u);
    free(e->cos_t);
    free(e->sin_t);
    free(e->lg_rows);
    free(e->lg_allow);
    free(e->lm_panels);
    free(e->row_seg);
    free(e->thr);
    free(e->segs);
    free(e->tasks);
    free(e->seen);
    free(e);
}

void sx_engine_lm_stats_get(const sx_engine *e, sx_engine_lm_stats *out)
{
    *out = e->lm_stats;
}

const sx_model *sx_engine_model(const sx_engine *e)
{
    return e ? e->m : NULL;
}

int sx_engine_seq_new(sx_engine *e, int *seq, sx_error *err)
{
    if (!e || !seq)
        return sx_err_set(err, SX_EINVAL, "engine: NULL argument");
    return sx_kv_seq_new(&e->kv, seq, err);
}

int sx_engine_seq_fork(sx_engine *e, int src, int len, int *seq, sx_error *err)
{
    if (!e || !seq)
        return sx_err_set(err, SX_EINVAL, "engine: NULL argument");
    return sx_kv_seq_fork(&e->kv, src, len, seq, err);
}

int sx_engine_seq_truncate(sx_engine *e, int seq, int len, sx_error *err)
{
    if (!e)
        return sx_err_set(err, SX_EINVAL, "engine: NULL argument");
    return sx_kv_seq_truncate(&e->kv, seq, len, err);
}

void sx_engine_seq_free(sx_engine *e, int seq)
{
    if (e)
        sx_kv_seq_free(&e->kv, seq);
}

int sx_engine_seq_len(const sx_engine *e, int seq)
{
    if (!e || !sx_kv_seq_live(&e->kv, seq))
        return -1;
    return sx_kv_len(&e->kv, seq);
}

const char *sx_engine_cpu_path(const sx_engine *e)
{
    return e->path_name;
}

const char *sx_engine_act_rounding(const sx_engine *e)
{
    if (e->mode == SX_W_Q4)
        return "int8 per 32 k";
    if (e->mode == SX_W_INT8)
        return e->kr->q8_layout == SX_Q8_QUADS  ? "int8 per 32 k"
               : e->kr->q8_layout == SX_Q8_VNNI ? "two int8 digits per 32 k"
                                                : "f32";
    return e->att_dp ? "bf16" : "f32";
}

int64_t sx_engine_free_tokens(const sx_engine *e)
{
    return e ? (int64_t)sx_kv_free_blocks(&e->kv) * e->kv.block_tokens : 0;
}
