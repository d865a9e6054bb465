/* Loading a Qwen3 model directory: config.json, then every expected tensor
 * found, shape-checked and exposed (bf16 in place, others converted). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "engine/model/model.h"
#include "engine/model/model_internal.h"

typedef struct model_priv {
    sx_st_set *set;
    void     **owned;
    size_t     n_owned, cap_owned;
} model_priv;

static void *own(model_priv *p, size_t bytes);

void *sx_model_own(sx_model *m, size_t bytes)
{
    return own(m->priv, bytes);
}

static void *own(model_priv *p, size_t bytes)
{
    if (p->n_owned == p->cap_owned) {
        size_t cap = p->cap_owned ? 2 * p->cap_owned : 64;
        void **o = realloc(p->owned, cap * sizeof *o);
        if (!o)
            return NULL;
        p->owned = o;
        p->cap_owned = cap;
    }
    void *b = malloc(bytes ? bytes : 1);
    if (b)
        p->owned[p->n_owned++] = b;
    return b;
}

void sx_model_free(sx_model *m)
{
    if (!m)
        return;
    model_priv *p = m->priv;
    if (p) {
        for (size_t i = 0; i < p->n_owned; i++)
            free(p->owned[i]);
        free(p->owned);
        sx_st_set_close(p->set);
        free(p);
    }
    free(m->layers);
    free(m);
}

static float elem_f32(const sx_st_tensor *t, size_t i)
{
    if (t->dtype == SX_ST_F32) {
        float f;
        memcpy(&f, t->data + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, t->data + 2 * i, 2);
    return t->dtype == SX_ST_BF16 ? sx_bf16_to_f32(h) : sx_f16_to_f32(h);
}

/* bf16 matrices are used in place when aligned (they are, from any
 * writer that pads the header to 8 bytes); anything else is converted. */
static int load_matrix(model_priv *p, const sx_st_tensor *t, const uint16_t **out, sx_error *err)
{
    size_t n = (size_t)(t->nbytes / sx_st_dtype_size(t->dtype));
    if (t->dtype == SX_ST_BF16 && (uintptr_t)t->data % 2 == 0) {
        *out = (const uint16_t *)(const void *)t->data;
        return SX_OK;
    }
    uint16_t *b = own(p, n * sizeof *b);
    if (!b)
        return sx_err_set(err, SX_ENOMEM, "%s: out of memory converting to bf16", t->name);
    if (t->dtype == SX_ST_BF16)
        memcpy(b, t->data, n * 2);
    else
        for (size_t i = 0; i < n; i++)
            b[i] = sx_f32_to_bf16(elem_f32(t, i));
    *out = b;
    return SX_OK;
}

static int load_vector(model_priv *p, const sx_st_tensor *t, const float **out, sx_error *err)
{
    size_t n = (size_t)(t->nbytes / sx_st_dtype_size(t->dtype));
    float *b = own(p, n * sizeof *b);
    if (!b)
        return sx_err_set(err, SX_ENOMEM, "%s: out of memory", t->name);
    for (size_t i = 0; i < n; i++)
        b[i] = elem_f32(t, i);
    *out = b;
    return SX_OK;
}

static const uint16_t **matrix_slot(sx_model *m, const sx_qwen3_tensor *s)
{
    sx_layer_weights *l = s->layer >= 0 ? &m->layers[s->layer] : NULL;
    if (s->kind == SX_QK_EMBED)
        return &m->embed;
    if (s->kind == SX_QK_LM_HEAD)
        return &m->lm_head;
    switch (s->slot) {
    case SX_QL_Q: return &l->wq;
    case SX_QL_K: return &l->wk;
    case SX_QL_V: return &l->wv;
    case SX_QL_O: return &l->wo;
    case SX_QL_GATE: return &l->w_gate;
    case SX_QL_UP: return &l->w_up;
    default: return &l->w_down;
    }
}

static const float **vector_slot(sx_model *m, const sx_qwen3_tensor *s)
{
    sx_layer_weights *l = s->layer >= 0 ? &m->layers[s->layer] : NULL;
    if (!l)
        return &m->final_norm;
    switch (s->slot) {
    case SX_QL_ATTN_NORM: return &l->attn_norm;
    case SX_QL_MLP_NORM: return &l->mlp_norm;
    case SX_QL_Q_NORM: return &l->q_norm;
    default: return &l->k_norm;
    }
}

static int check_shape(const sx_qwen3_tensor *s, const sx_st_tensor *t, const sx_st_file *f,
                       sx_error *err)
{
    int64_t want[2] = {s->rows, s->cols};
    int ok = t->ndim == s->ndim && t->shape[0] == want[0] && (s->ndim == 1 || t->shape[1] == want[1]);
    if (ok)
        return SX_OK;
    char w[64], g[160];
    sx_st_shape_format(want, s->ndim, w, sizeof w);
    sx_st_shape_format(t->shape, t->ndim, g, sizeof g);
    return sx_err_set(err, SX_EFORMAT, "%s: shape expected %s got %s (%s)", s->name, w, g,
                      sx_st_path(f));
}

static int by_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;
    return x < y ? -1 : x > y;
}

/* Names the first tensor in the files that is not among the `used` ones
 * (every expected tensor was found, so the rest are unexpected). */
static int report_unexpected(const sx_model *m, const sx_st_tensor **used, int n_used,
                             sx_error *err)
{
    const sx_st_set *set = ((const model_priv *)m->priv)->set;
    qsort(used, (size_t)n_used, sizeof *used, by_ptr);
    for (size_t fi = 0; fi < sx_st_set_files(set); fi++) {
        const sx_st_file *f = sx_st_set_file(set, fi);
        for (size_t k = 0; k < sx_st_count(f); k++) {
            const sx_st_tensor *t = sx_st_at(f, k);
            if (!bsearch(&t, used, (size_t)n_used, sizeof *used, by_ptr))
                return sx_err_set(err, SX_EFORMAT,
                                  "%s: unexpected tensor %.200s (config.json: %d layers, no biases)",
                                  sx_st_path(f), t->name, m->cfg.n_layers);
        }
    }
    return sx_err_set(err, SX_EINTERNAL, "tensor count mismatch");
}

static int check_plain_dtype(const sx_st_tensor *t, const sx_st_file *f, sx_error *err)
{
    if (t->dtype == SX_ST_BF16 || t->dtype == SX_ST_F16 || t->dtype == SX_ST_F32)
        return SX_OK;
    return sx_err_set(err, SX_EFORMAT,
                      "%s: dtype expected BF16, F16 or F32 got %s (%s; a quantised checkpoint "
                      "needs its quantization_config in config.json)",
                      t->name, sx_st_dtype_name(t->dtype), sx_st_path(f));
}

static int load_tensors(sx_model *m, sx_error *err)
{
    model_priv *p = m->priv;
    int has_lm = sx_st_set_find(p->set, "lm_head.weight", NULL) != NULL;
    int n = sx_qwen3_tensor_count(&m->cfg, has_lm), rc = SX_OK, n_used = 0;
    /* a quantised matrix is up to 3 tensors */
    const sx_st_tensor **used = malloc((size_t)n * 3 * sizeof *used);
    if (!used)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    for (int i = 0; i < n && !rc; i++) {
        sx_qwen3_tensor s;
        const sx_st_file *f = NULL;
        sx_qwen3_tensor_at(&m->cfg, i, &s);
        if (sx_quant_applies(&m->quant, &s)) {
            rc = sx_quant_load_matrix(m, p->set, &s, matrix_slot(m, &s), used, &n_used, err);
            continue;
        }
        const sx_st_tensor *t = used[n_used++] = sx_st_set_find(p->set, s.name, &f);
        char qw[128];
        snprintf(qw, sizeof qw, "%.*sqweight", (int)strlen(s.name) - 6, s.name);
        if (!t && s.kind == SX_QK_MATRIX && sx_st_set_find(p->set, qw, NULL))
            rc = sx_err_set(err, SX_EFORMAT,
                            "%s: missing, but %s is there: an AWQ checkpoint whose config.json "
                            "lacks its quantization_config",
                            s.name, qw);
        else if (!t && sx_st_set_files(p->set) == 1)
            rc = sx_err_set(err, SX_EFORMAT, "%s: missing from %s", s.name,
                            sx_st_path(sx_st_set_file(p->set, 0)));
        else if (!t)
            rc = sx_err_set(err, SX_EFORMAT, "%s: missing from the %zu shards in %s", s.name,
                            sx_st_set_files(p->set), m->dir);
        else if (!(rc = check_plain_dtype(t, f, err)) && !(rc = check_shape(&s, t, f, err)))
            rc = s.kind == SX_QK_NORM ? load_vector(p, t, vector_slot(m, &s), err)
                                      : load_matrix(p, t, matrix_slot(m, &s), err);
    }
    if (!rc && sx_st_set_count(p->set) != (size_t)n_used)
        rc = report_unexpected(m, used, n_used, err);
    free(used);
    if (!rc && !has_lm)
        m->lm_head = m->embed;
    return rc;
}

int sx_model_load(const char *dir, sx_model **out, sx_error *err)
{
    char path[4096], *text = NULL;
    size_t len = 0;
    int rc;
    *out = NULL;
    sx_model *m = calloc(1, sizeof *m);
    model_priv *p = calloc(1, sizeof *p);
    if (!m || !p) {
        free(m);
        free(p);
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    m->priv = p;
    if (strlen(dir) >= sizeof m->dir ||
        (size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path) {
        rc = sx_err_set(err, SX_EINVAL, "model directory path too long");
        goto fail;
    }
    strcpy(m->dir, dir);
    if ((rc = sx_file_read(path, &text, &len, err)))
        goto fail;
    if ((rc = sx_qwen3_config_parse(text, len, &m->cfg, err)) ||
        (rc = sx_quant_config_parse(text, len, &m->quant, err))) {
        sx_err_prefix(err, "%s", dir);
        goto fail;
    }
    if ((rc = sx_st_set_open(dir, &p->set, err)))
        goto fail;
    if (!(m->layers = calloc((size_t)m->cfg.n_layers, sizeof *m->layers))) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = load_tensors(m, err)))
        goto fail;
    free(text);
    *out = m;
    return SX_OK;
fail:
    free(text);
    sx_model_free(m);
    return rc;
}
