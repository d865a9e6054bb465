/* Quantised Qwen3 checkpoints: config.json's quantization_config, and the
 * matrices of AWQ and FP8 files.
 *
 * AWQ (AutoAWQ "gemm", what Qwen3-*-AWQ ship; layout in AutoAWQ's
 * awq/modules/linear/gemm.py and transformers' integrations/awq.py):
 *   X.qweight  I32 [in, out/8]       8 nibbles per int32, output features
 *                                    c*8 + (0,2,4,6,1,3,5,7)[i] in nibble i
 *   X.qzeros   I32 [in/group, out/8] the same packing
 *   X.scales   F16 [in/group, out]
 *   w[out j][in i] = (q - zero) * scale of group i / group_size.
 * They are kept 4-bit (sx_q4_matrix, transposed to [out][in]); the engine
 * repacks them into its q4 panels.
 *
 * FP8 (Qwen3-*-FP8, transformers' FineGrainedFP8 integration):
 *   X.weight           F8_E4M3 [out, in]
 *   X.weight_scale_inv F32 or BF16 [ceil(out/b0), ceil(in/b1)]
 *   w = e4m3(X.weight) * weight_scale_inv of its block (the "inverse" scale
 *   is the multiplier), dequantised to bf16 at load; --int8 and --q4 then
 *   quantise that as they do any bf16 checkpoint.
 *
 * The checkpoint files are untrusted: every dtype and shape is checked and a
 * mismatch prints expected vs got. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/model.h"
#include "engine/model/model_internal.h"

/* ---- quantization_config ---- */

static int qerr(sx_error *err, int code, const char *field, const char *fmt, const char *detail)
{
    char ptr[128];
    snprintf(ptr, sizeof ptr, "/quantization_config/%s", field);
    return sx_err_setp(err, code, ptr, -1, "config.json: quantization_config.%s %s%.60s", field,
                       fmt, detail ? detail : "");
}

static int want_int(const json_t *q, const char *key, int lo, int hi, int *out, sx_error *err)
{
    const json_t *v = json_object_get(q, key);
    char d[96];
    if (!v)
        return qerr(err, SX_EFORMAT, key, "is missing", NULL);
    if (!json_is_integer(v))
        return qerr(err, SX_EFORMAT, key, "is not an integer", NULL);
    if (json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(d, sizeof d, "%lld (supported: %d to %d)", (long long)json_integer_value(v), lo,
                 hi);
        return qerr(err, SX_EUNSUPPORTED, key, "is not supported: ", d);
    }
    *out = (int)json_integer_value(v);
    return SX_OK;
}

static int want_str(const json_t *q, const char *key, const char *want, int required,
                    sx_error *err)
{
    const json_t *v = json_object_get(q, key);
    char d[128];
    if (!v && !required)
        return SX_OK;
    if (!v)
        return qerr(err, SX_EFORMAT, key, "is missing", NULL);
    if (!json_is_string(v))
        return qerr(err, SX_EFORMAT, key, "is not a string", NULL);
    if (strcmp(json_string_value(v), want)) {
        snprintf(d, sizeof d, "\"%.40s\" (supported: \"%s\")", json_string_value(v), want);
        return qerr(err, SX_EUNSUPPORTED, key, "is not supported: ", d);
    }
    return SX_OK;
}

static int parse_skip(const json_t *q, sx_quant_config *c, sx_error *err)
{
    const json_t *v = json_object_get(q, "modules_to_not_convert");
    if (!v || json_is_null(v))
        return SX_OK;
    if (!json_is_array(v))
        return qerr(err, SX_EFORMAT, "modules_to_not_convert", "is not an array or null", NULL);
    if (json_array_size(v) > SX_QUANT_MAX_SKIP)
        return qerr(err, SX_ELIMIT, "modules_to_not_convert", "has too many entries (16 at most)",
                    NULL);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const char *s = json_string_value(json_array_get(v, i));
        if (!s || !s[0] || strlen(s) >= sizeof c->skip[0])
            return qerr(err, SX_EFORMAT, "modules_to_not_convert",
                        "has an entry that is not a non-empty string under 96 bytes", NULL);
        strcpy(c->skip[c->n_skip++], s);
    }
    return SX_OK;
}

/* every key of q must be one of `known` */
static int only_known(const json_t *q, const char *const *known, sx_error *err)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)q, k, v) {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++)
            ok = !strcmp(k, known[i]);
        if (!ok) {
            char ptr[160];
            snprintf(ptr, sizeof ptr, "/quantization_config/%.100s", k);
            return sx_err_setp(err, SX_EUNSUPPORTED, ptr, -1,
                               "config.json: quantization_config field \"%.60s\" is not "
                               "supported",
                               k);
        }
    }
    return SX_OK;
}

static int parse_awq(const json_t *q, sx_quant_config *c, sx_error *err)
{
    static const char *const known[] = {"quant_method", "bits", "group_size", "zero_point",
                                        "version", "modules_to_not_convert", NULL};
    int bits, rc;
    if ((rc = only_known(q, known, err)) || (rc = want_int(q, "bits", 4, 4, &bits, err)) ||
        (rc = want_int(q, "group_size", 32, 1 << 16, &c->group, err)) ||
        (rc = want_str(q, "version", "gemm", 0, err)) || (rc = parse_skip(q, c, err)))
        return rc;
    /* the engine's q4 panels hold 32 k per scale: an AWQ group must be
     * whole panels' groups so each takes its AWQ scale unchanged */
    if (c->group % 32)
        return qerr(err, SX_EUNSUPPORTED, "group_size", "is not a multiple of 32", NULL);
    const json_t *zp = json_object_get(q, "zero_point");
    if (zp && !json_is_boolean(zp))
        return qerr(err, SX_EFORMAT, "zero_point", "is not a boolean", NULL);
    if (zp && !json_is_true(zp))
        return qerr(err, SX_EUNSUPPORTED, "zero_point", "false is not supported (true)", NULL);
    return SX_OK;
}

static int parse_fp8(const json_t *q, sx_quant_config *c, sx_error *err)
{
    static const char *const known[] = {"quant_method", "fmt", "weight_block_size",
                                        "activation_scheme", "modules_to_not_convert", NULL};
    int rc;
    if ((rc = only_known(q, known, err)) || (rc = want_str(q, "fmt", "e4m3", 0, err)) ||
        (rc = want_str(q, "activation_scheme", "dynamic", 0, err)) ||
        (rc = parse_skip(q, c, err)))
        return rc;
    const json_t *b = json_object_get(q, "weight_block_size");
    if (!b)
        return qerr(err, SX_EUNSUPPORTED, "weight_block_size",
                    "is missing (per-tensor FP8 is not supported)", NULL);
    if (!json_is_array(b) || json_array_size(b) != 2)
        return qerr(err, SX_EFORMAT, "weight_block_size", "is not an array of 2 integers", NULL);
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_array_get(b, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1 << 16)
            return qerr(err, SX_EFORMAT, "weight_block_size",
                        "holds a value that is not an integer from 1 to 65536", NULL);
        c->block[i] = (int)json_integer_value(v);
    }
    return SX_OK;
}

int sx_quant_config_parse(const char *json, size_t len, sx_quant_config *out, sx_error *err)
{
    json_error_t je;
    sx_quant_config c;
    int rc = SX_OK;
    memset(&c, 0, sizeof c);
    json_t *root = json_loadb(json, len, 0, &je);
    if (!root)
        return sx_err_setp(err, SX_EFORMAT, NULL, je.position,
                           "config.json: line %d column %d: %s", je.line, je.column, je.text);
    const json_t *q = json_is_object(root) ? json_object_get(root, "quantization_config") : NULL;
    if (!q || json_is_null(q))
        goto done;
    if (!json_is_object(q)) {
        rc = sx_err_setp(err, SX_EFORMAT, "/quantization_config", -1,
                         "config.json: quantization_config is not an object");
        goto done;
    }
    const json_t *m = json_object_get(q, "quant_method");
    const char *method = json_string_value(m);
    if (!method)
        rc = qerr(err, SX_EFORMAT, "quant_method", m ? "is not a string" : "is missing", NULL);
    else if (!strcmp(method, "awq")) {
        c.method = SX_QUANT_AWQ;
        rc = parse_awq(q, &c, err);
    } else if (!strcmp(method, "fp8")) {
        c.method = SX_QUANT_FP8;
        rc = parse_fp8(q, &c, err);
    } else {
        char d[96];
        snprintf(d, sizeof d, "\"%.40s\" (supported: \"awq\", \"fp8\")", method);
        rc = qerr(err, SX_EUNSUPPORTED, "quant_method", "is not supported: ", d);
    }
done:
    json_decref(root);
    if (!rc)
        *out = c;
    return rc;
}

/* ---- the matrices ---- */

int sx_quant_applies(const sx_quant_config *q, const sx_qwen3_tensor *s)
{
    if (q->method == SX_QUANT_NONE || s->kind != SX_QK_MATRIX)
        return 0;
    /* transformers: a module is left alone when any entry is a substring of
     * its name */
    for (int i = 0; i < q->n_skip; i++)
        if (strstr(s->name, q->skip[i]))
            return 0;
    return 1;
}

/* "model.layers.3.mlp.up_proj.weight" -> ".../up_proj.<suffix>" */
static void sibling(const char *name, const char *suffix, char *out, size_t cap)
{
    size_t n = strlen(name), w = strlen("weight");
    if (n >= w && !strcmp(name + n - w, "weight"))
        n -= w;
    snprintf(out, cap, "%.*s%s", (int)n, name, suffix);
}

/* finds NAME with DTYPE and shape [d0, d1], or says what differs */
static int find2(const sx_st_set *set, const char *name, int dtype, int dtype2, int64_t d0,
                 int64_t d1, const sx_st_tensor **out, sx_error *err)
{
    const sx_st_file *f = NULL;
    const sx_st_tensor *t = sx_st_set_find(set, name, &f);
    char w[64], g[160];
    if (!t)
        return sx_err_set(err, SX_EFORMAT, "%s: missing (a quantised checkpoint holds it)", name);
    if (t->dtype != dtype && t->dtype != dtype2)
        return sx_err_set(err, SX_EFORMAT, "%s: dtype expected %s%s%s got %s (%s)", name,
                          sx_st_dtype_name(dtype), dtype2 != dtype ? " or " : "",
                          dtype2 != dtype ? sx_st_dtype_name(dtype2) : "",
                          sx_st_dtype_name(t->dtype), sx_st_path(f));
    int64_t want[2] = {d0, d1};
    if (t->ndim != 2 || t->shape[0] != d0 || t->shape[1] != d1) {
        sx_st_shape_format(want, 2, w, sizeof w);
        sx_st_shape_format(t->shape, t->ndim, g, sizeof g);
        return sx_err_set(err, SX_EFORMAT, "%s: shape expected %s got %s (%s)", name, w, g,
                          sx_st_path(f));
    }
    *out = t;
    return SX_OK;
}

static uint32_t rd32(const unsigned char *p, size_t i)
{
    uint32_t v;
    memcpy(&v, p + 4 * i, 4);
    return v;
}

/* AutoAWQ's nibble order: feature j of a packed 8 sits in nibble awq_pos[j] */
static const int awq_pos[8] = {0, 4, 1, 5, 2, 6, 3, 7};

static int load_awq(sx_model *m, const sx_st_set *set, const sx_qwen3_tensor *s,
                    const sx_st_tensor **used, int *n_used, sx_error *err)
{
    int64_t rows = s->rows, cols = s->cols, G = m->quant.group;
    char nq[128], nz[128], ns[128];
    const sx_st_tensor *tq, *tz, *ts;
    int rc;
    if (rows % 8 || cols % G)
        return sx_err_set(err, SX_EFORMAT,
                          "%s: AWQ needs out features (%lld) a multiple of 8 and in features "
                          "(%lld) a multiple of group_size %lld",
                          s->name, (long long)rows, (long long)cols, (long long)G);
    sibling(s->name, "qweight", nq, sizeof nq);
    sibling(s->name, "qzeros", nz, sizeof nz);
    sibling(s->name, "scales", ns, sizeof ns);
    if ((rc = find2(set, nq, SX_ST_I32, SX_ST_I32, cols, rows / 8, &tq, err)) ||
        (rc = find2(set, nz, SX_ST_I32, SX_ST_I32, cols / G, rows / 8, &tz, err)) ||
        (rc = find2(set, ns, SX_ST_F16, SX_ST_F16, cols / G, rows, &ts, err)))
        return rc;
    used[(*n_used)++] = tq;
    used[(*n_used)++] = tz;
    used[(*n_used)++] = ts;
    size_t ng = (size_t)(cols / G);
    uint8_t *q = sx_model_own(m, (size_t)rows * (size_t)cols / 2);
    uint16_t *sc = sx_model_own(m, (size_t)rows * ng * sizeof *sc);
    uint8_t *z = sx_model_own(m, (size_t)rows * ng);
    if (!q || !sc || !z)
        return sx_err_set(err, SX_ENOMEM, "%s: out of memory unpacking AWQ", s->name);
    memset(q, 0, (size_t)rows * (size_t)cols / 2);
    size_t w8 = (size_t)rows / 8;
    for (size_t i = 0; i < (size_t)cols; i++)
        for (size_t c8 = 0; c8 < w8; c8++) {
            uint32_t v = rd32(tq->data, i * w8 + c8);
            for (int j = 0; j < 8; j++) {
                uint8_t nib = (uint8_t)(v >> (4 * awq_pos[j]) & 15u);
                q[(c8 * 8 + (size_t)j) * (size_t)cols / 2 + i / 2] |= (uint8_t)(nib << (4 * (i & 1)));
            }
        }
    for (size_t g = 0; g < ng; g++)
        for (size_t c8 = 0; c8 < w8; c8++) {
            uint32_t v = rd32(tz->data, g * w8 + c8);
            for (int j = 0; j < 8; j++) {
                size_t r = c8 * 8 + (size_t)j;
                z[r * ng + g] = (uint8_t)(v >> (4 * awq_pos[j]) & 15u);
                memcpy(&sc[r * ng + g], ts->data + 2 * (g * (size_t)rows + r), 2);
            }
        }
    sx_q4_matrix *dst = &m->layers[s->layer].q4[sx_quant_mat_index(s->slot)];
    dst->q = q;
    dst->scale = sc;
    dst->zero = z;
    dst->rows = (int)rows;
    dst->cols = (int)cols;
    dst->group = (int)G;
    return SX_OK;
}

/* e4m3 "fn" (no infinities; S.1111.111 is NaN): bias 7, subnormals at 2^-6 */
static float e4m3_to_f32(uint8_t b)
{
    int e = b >> 3 & 15, man = b & 7;
    float v = e ? ldexpf((float)(8 + man), e - 10) : ldexpf((float)man, -9);
    return b & 0x80 ? -v : v;
}

static int load_fp8(sx_model *m, const sx_st_set *set, const sx_qwen3_tensor *s,
                    const uint16_t **slot, const sx_st_tensor **used, int *n_used, sx_error *err)
{
    int64_t rows = s->rows, cols = s->cols, b0 = m->quant.block[0], b1 = m->quant.block[1];
    int64_t nb0 = (rows + b0 - 1) / b0, nb1 = (cols + b1 - 1) / b1;
    char ns[128];
    const sx_st_tensor *tw, *ts;
    int rc;
    sibling(s->name, "weight_scale_inv", ns, sizeof ns);
    if ((rc = find2(set, s->name, SX_ST_F8_E4M3, SX_ST_F8_E4M3, rows, cols, &tw, err)) ||
        (rc = find2(set, ns, SX_ST_F32, SX_ST_BF16, nb0, nb1, &ts, err)))
        return rc;
    used[(*n_used)++] = tw;
    used[(*n_used)++] = ts;
    uint16_t *w = sx_model_own(m, (size_t)rows * (size_t)cols * sizeof *w);
    if (!w)
        return sx_err_set(err, SX_ENOMEM, "%s: out of memory dequantising FP8", s->name);
    float lut[256], *bs = malloc((size_t)(nb0 * nb1) * sizeof *bs);
    if (!bs)
        return sx_err_set(err, SX_ENOMEM, "%s: out of memory dequantising FP8", s->name);
    for (int i = 0; i < 256; i++)
        lut[i] = e4m3_to_f32((uint8_t)i);
    for (int64_t bi = 0; bi < nb0 * nb1; bi++) {
        uint16_t h;
        if (ts->dtype == SX_ST_F32)
            memcpy(&bs[bi], ts->data + 4 * bi, 4);
        else {
            memcpy(&h, ts->data + 2 * bi, 2);
            bs[bi] = sx_bf16_to_f32(h);
        }
        if (!isfinite(bs[bi])) {
            free(bs);
            return sx_err_set(err, SX_EFORMAT, "%s: block scale %lld is not finite", ns,
                              (long long)bi);
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        const float *br = bs + (r / b0) * nb1;
        for (int64_t c = 0; c < cols; c++) {
            uint8_t b = tw->data[r * cols + c];
            if ((b & 0x7f) == 0x7f) {
                free(bs);
                return sx_err_set(err, SX_EFORMAT, "%s: NaN at [%lld, %lld]", s->name,
                                  (long long)r, (long long)c);
            }
            w[r * cols + c] = sx_f32_to_bf16(lut[b] * br[c / b1]);
        }
    }
    free(bs);
    *slot = w;
    return SX_OK;
}

int sx_quant_load_matrix(sx_model *m, const sx_st_set *set, const sx_qwen3_tensor *s,
                         const uint16_t **slot, const sx_st_tensor **used, int *n_used,
                         sx_error *err)
{
    if (m->quant.method == SX_QUANT_AWQ)
        return load_awq(m, set, s, used, n_used, err);
    return load_fp8(m, set, s, slot, used, n_used, err);
}
