/* Qwen3 config.json, the named shapes, sizes, and the tensor table. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "engine/model/model.h"
#include "engine/model/model_internal.h"

#define QWEN3_VOCAB 151936

int sx_qwen3_config_check(const sx_qwen3_config *c, sx_error *err)
{
    static const struct {
        const char *name;
        size_t      off;
        int         lo, hi;
    } f[] = {
        {"vocab_size", offsetof(sx_qwen3_config, vocab_rows), 1, 1 << 22},
        {"hidden_size", offsetof(sx_qwen3_config, hidden), 1, 1 << 16},
        {"intermediate_size", offsetof(sx_qwen3_config, intermediate), 1, 1 << 18},
        {"num_hidden_layers", offsetof(sx_qwen3_config, n_layers), 1, 1024},
        {"num_attention_heads", offsetof(sx_qwen3_config, n_heads), 1, 1024},
        {"num_key_value_heads", offsetof(sx_qwen3_config, n_kv_heads), 1, 1024},
        {"head_dim", offsetof(sx_qwen3_config, head_dim), 2, 1024},
        {"max_position_embeddings", offsetof(sx_qwen3_config, max_pos), 1, 1 << 24},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        int v;
        memcpy(&v, (const char *)c + f[i].off, sizeof v);
        if (v < f[i].lo || v > f[i].hi)
            return sx_err_setp(err, SX_EFORMAT, NULL, -1, "%s %d is out of range (%d to %d)",
                               f[i].name, v, f[i].lo, f[i].hi);
    }
    if (c->n_heads % c->n_kv_heads)
        return sx_err_set(err, SX_EFORMAT,
                          "num_attention_heads %d is not a multiple of num_key_value_heads %d",
                          c->n_heads, c->n_kv_heads);
    if (c->head_dim % 2)
        return sx_err_set(err, SX_EFORMAT, "head_dim %d is odd (RoPE rotates pairs)", c->head_dim);
    if (!(c->rms_eps > 0 && c->rms_eps < 1))
        return sx_err_set(err, SX_EFORMAT, "rms_norm_eps %g is out of range (0 to 1)",
                          (double)c->rms_eps);
    if (!(c->rope_theta > 1 && c->rope_theta < 1e12))
        return sx_err_set(err, SX_EFORMAT, "rope_theta %g is out of range (1 to 1e12)",
                          c->rope_theta);
    if (c->tied != 0 && c->tied != 1)
        return sx_err_set(err, SX_EFORMAT, "tie_word_embeddings must be 0 or 1");
    return SX_OK;
}

static int get_int(const json_t *root, const char *key, int *out, sx_error *err)
{
    const json_t *v = json_object_get(root, key);
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/%s", key);
    if (!v)
        return sx_err_setp(err, SX_EFORMAT, ptr, -1, "config.json has no \"%s\"", key);
    if (!json_is_integer(v) || json_integer_value(v) < -(1LL << 30) ||
        json_integer_value(v) > (1LL << 30))
        return sx_err_setp(err, SX_EFORMAT, ptr, -1, "config.json \"%s\" is not an integer", key);
    *out = (int)json_integer_value(v);
    return SX_OK;
}

static int get_num(const json_t *obj, const char *key, const char *ptr, double *out,
                   sx_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return sx_err_setp(err, SX_EFORMAT, ptr, -1, "config.json has no \"%s\"", key);
    if (!json_is_number(v))
        return sx_err_setp(err, SX_EFORMAT, ptr, -1, "config.json \"%s\" is not a number", key);
    *out = json_number_value(v);
    return SX_OK;
}

/* RoPE: rope_theta at the top (transformers 4) or in rope_parameters
 * (transformers 5); any scaling other than the default is not Qwen3 as
 * shipped and would change the numbers, so it is refused. */
static int get_rope(const json_t *root, double *theta, sx_error *err)
{
    const json_t *rp = json_object_get(root, "rope_parameters");
    const json_t *rs = json_object_get(root, "rope_scaling");
    const json_t *objs[2] = {rp, rs};
    for (int i = 0; i < 2; i++) {
        if (!objs[i] || json_is_null(objs[i]))
            continue;
        if (!json_is_object(objs[i]))
            return sx_err_setp(err, SX_EFORMAT, i ? "/rope_scaling" : "/rope_parameters", -1,
                               "config.json \"%s\" is not an object",
                               i ? "rope_scaling" : "rope_parameters");
        const char *type = json_string_value(json_object_get(objs[i], "rope_type"));
        if (!type)
            type = json_string_value(json_object_get(objs[i], "type"));
        if (type && strcmp(type, "default"))
            return sx_err_setp(err, SX_EUNSUPPORTED, i ? "/rope_scaling" : "/rope_parameters",
                               -1, "config.json: RoPE type \"%.40s\" is not supported (default only)",
                               type);
    }
    if (json_object_get(root, "rope_theta"))
        return get_num(root, "rope_theta", "/rope_theta", theta, err);
    if (json_is_object(rp) && json_object_get(rp, "rope_theta"))
        return get_num(rp, "rope_theta", "/rope_parameters/rope_theta", theta, err);
    return sx_err_setp(err, SX_EFORMAT, "/rope_theta", -1, "config.json has no \"rope_theta\"");
}

static int is_true(const json_t *root, const char *key)
{
    return json_is_true(json_object_get(root, key));
}

static int parse_root(const json_t *root, sx_qwen3_config *c, sx_error *err)
{
    int rc;
    if (!json_is_object(root))
        return sx_err_set(err, SX_EFORMAT, "config.json is not a JSON object");
    const json_t *arch = json_object_get(root, "architectures");
    int qwen3 = 0;
    for (size_t i = 0; json_is_array(arch) && i < json_array_size(arch); i++) {
        const char *a = json_string_value(json_array_get(arch, i));
        qwen3 |= a && !strcmp(a, "Qwen3ForCausalLM");
    }
    if (!qwen3) {
        const char *first = json_string_value(json_array_get(arch, 0));
        return sx_err_setp(err, SX_EFORMAT, "/architectures", -1,
                           "config.json: architecture %s%.60s%s is not Qwen3ForCausalLM",
                           first ? "\"" : "", first ? first : "(none)", first ? "\"" : "");
    }
    if ((rc = get_int(root, "vocab_size", &c->vocab_rows, err)) ||
        (rc = get_int(root, "hidden_size", &c->hidden, err)) ||
        (rc = get_int(root, "intermediate_size", &c->intermediate, err)) ||
        (rc = get_int(root, "num_hidden_layers", &c->n_layers, err)) ||
        (rc = get_int(root, "num_attention_heads", &c->n_heads, err)) ||
        (rc = get_int(root, "max_position_embeddings", &c->max_pos, err)))
        return rc;
    /* Hugging Face's Qwen3Config: kv heads default to the q heads, head_dim
     * to 128 (not hidden/heads), untied */
    const json_t *kv = json_object_get(root, "num_key_value_heads");
    c->n_kv_heads = c->n_heads;
    if (kv && !json_is_null(kv) && (rc = get_int(root, "num_key_value_heads", &c->n_kv_heads, err)))
        return rc;
    c->head_dim = 128;
    if (json_object_get(root, "head_dim") && (rc = get_int(root, "head_dim", &c->head_dim, err)))
        return rc;
    const json_t *tie = json_object_get(root, "tie_word_embeddings");
    if (tie && !json_is_boolean(tie))
        return sx_err_setp(err, SX_EFORMAT, "/tie_word_embeddings", -1,
                           "config.json \"tie_word_embeddings\" is not a boolean");
    c->tied = json_is_true(tie);
    double eps;
    if ((rc = get_num(root, "rms_norm_eps", "/rms_norm_eps", &eps, err)) ||
        (rc = get_rope(root, &c->rope_theta, err)))
        return rc;
    c->rms_eps = (float)eps;
    if (is_true(root, "attention_bias"))
        return sx_err_setp(err, SX_EUNSUPPORTED, "/attention_bias", -1,
                           "config.json: attention_bias is not supported (Qwen3 has none)");
    if (is_true(root, "use_sliding_window"))
        return sx_err_setp(err, SX_EUNSUPPORTED, "/use_sliding_window", -1,
                           "config.json: use_sliding_window is not supported");
    const char *act = json_string_value(json_object_get(root, "hidden_act"));
    if (act && strcmp(act, "silu"))
        return sx_err_setp(err, SX_EUNSUPPORTED, "/hidden_act", -1,
                           "config.json: hidden_act \"%.40s\" is not supported (silu)", act);
    if ((rc = sx_qwen3_config_check(c, err)))
        sx_err_prefix(err, "config.json");
    return rc;
}

int sx_qwen3_config_parse(const char *json, size_t len, sx_qwen3_config *out, sx_error *err)
{
    json_error_t je;
    sx_qwen3_config c;
    memset(&c, 0, sizeof c);
    json_t *root = json_loadb(json, len, 0, &je);
    if (!root)
        return sx_err_setp(err, SX_EFORMAT, NULL, je.position,
                           "config.json: line %d column %d: %s", je.line, je.column, je.text);
    int rc = parse_root(root, &c, err);
    json_decref(root);
    if (!rc)
        *out = c;
    return rc;
}

int sx_qwen3_shape(const char *name, sx_qwen3_config *out, sx_error *err)
{
    static const struct {
        const char *name;
        int         hidden, inter, layers, heads, kv, head_dim, tied;
    } s[] = {
        /* tiny: GQA 4:2, head_dim 128 != 128/4, q/k norms, tied, full vocab */
        {"tiny", 128, 384, 2, 4, 2, 128, 1},
        {"0.6b", 1024, 3072, 28, 16, 8, 128, 1},
        {"1.7b", 2048, 6144, 28, 16, 8, 128, 1},
        {"4b", 2560, 9728, 36, 32, 8, 128, 1},
        {"8b", 4096, 12288, 36, 32, 8, 128, 0},
    };
    for (size_t i = 0; name && i < sizeof s / sizeof s[0]; i++)
        if (!strcmp(name, s[i].name)) {
            memset(out, 0, sizeof *out);
            out->vocab_rows = QWEN3_VOCAB;
            out->hidden = s[i].hidden;
            out->intermediate = s[i].inter;
            out->n_layers = s[i].layers;
            out->n_heads = s[i].heads;
            out->n_kv_heads = s[i].kv;
            out->head_dim = s[i].head_dim;
            out->max_pos = 40960;
            out->tied = s[i].tied;
            out->rms_eps = 1e-6f;
            out->rope_theta = 1000000.0;
            return SX_OK;
        }
    return sx_err_set(err, SX_ENOTFOUND, "unknown model shape '%.40s' (tiny, 0.6b, 1.7b, 4b, 8b)",
                      name ? name : "(null)");
}

int sx_qwen3_tensor_count(const sx_qwen3_config *c, int with_lm_head)
{
    return 2 + SX_QL_COUNT * c->n_layers + (with_lm_head || !c->tied);
}

void sx_qwen3_tensor_at(const sx_qwen3_config *c, int i, sx_qwen3_tensor *t)
{
    static const char *const names[SX_QL_COUNT] = {
        "input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
        "self_attn.o_proj", "self_attn.q_norm", "self_attn.k_norm", "post_attention_layernorm",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
    int64_t h = c->hidden, q = (int64_t)c->n_heads * c->head_dim,
            kv = (int64_t)c->n_kv_heads * c->head_dim, in = c->intermediate;
    memset(t, 0, sizeof *t);
    t->layer = -1;
    t->ndim = 2;
    if (i == 0) {
        strcpy(t->name, "model.embed_tokens.weight");
        t->kind = SX_QK_EMBED;
        t->rows = c->vocab_rows;
        t->cols = h;
        return;
    }
    int li = i - 1;
    if (li >= SX_QL_COUNT * c->n_layers) {
        if (li == SX_QL_COUNT * c->n_layers) {
            strcpy(t->name, "model.norm.weight");
            t->kind = SX_QK_NORM;
            t->ndim = 1;
            t->rows = h;
        } else {
            strcpy(t->name, "lm_head.weight");
            t->kind = SX_QK_LM_HEAD;
            t->rows = c->vocab_rows;
            t->cols = h;
        }
        return;
    }
    t->layer = li / SX_QL_COUNT;
    t->slot = li % SX_QL_COUNT;
    snprintf(t->name, sizeof t->name, "model.layers.%d.%s.weight", t->layer, names[t->slot]);
    static const int is_norm[SX_QL_COUNT] = {[SX_QL_ATTN_NORM] = 1, [SX_QL_Q_NORM] = 1,
                                             [SX_QL_K_NORM] = 1, [SX_QL_MLP_NORM] = 1};
    t->kind = is_norm[t->slot] ? SX_QK_NORM : SX_QK_MATRIX;
    t->ndim = is_norm[t->slot] ? 1 : 2;
    switch (t->slot) {
    case SX_QL_ATTN_NORM: case SX_QL_MLP_NORM: t->rows = h; break;
    case SX_QL_Q_NORM: case SX_QL_K_NORM: t->rows = c->head_dim; break;
    case SX_QL_Q: t->rows = q; t->cols = h; break;
    case SX_QL_K: case SX_QL_V: t->rows = kv; t->cols = h; break;
    case SX_QL_O: t->rows = h; t->cols = q; break;
    case SX_QL_GATE: case SX_QL_UP: t->rows = in; t->cols = h; break;
    case SX_QL_DOWN: t->rows = h; t->cols = in; break;
    }
}

int64_t sx_qwen3_n_params(const sx_qwen3_config *c)
{
    int64_t n = 0;
    int count = sx_qwen3_tensor_count(c, 0);
    for (int i = 0; i < count; i++) {
        sx_qwen3_tensor t;
        sx_qwen3_tensor_at(c, i, &t);
        n += t.rows * (t.ndim == 2 ? t.cols : 1);
    }
    return n;
}

int64_t sx_qwen3_kv_bytes_per_token(const sx_qwen3_config *c, int elem_bytes)
{
    return 2 * (int64_t)c->n_layers * c->n_kv_heads * c->head_dim * elem_bytes;
}
