/* Model files: config.json parsing, the safetensors reader and writer, the
 * random-model writer and the loader -- good files load with every pointer
 * where it should be, and every kind of broken file is SX_EFORMAT with a
 * message naming what is wrong.
 *
 * Test models are written here tensor by tensor (names spelled out as in
 * Hugging Face checkpoints, values from a hash) so the loader is checked
 * against an independent description of the format, not its own table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sx_file.h"
#include "engine/model/model.h"

/* ---- helpers -------------------------------------------------------- */

static void mkdtemp_or_fail(char *tmpl)
{
    assert_non_null(mkdtemp(tmpl));
}

static void rm_rf(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

static void write_file(const char *dir, const char *name, const void *data, size_t n)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    write_file(dir, name, text, strlen(text));
}

static char *read_all(const char *dir, const char *name, size_t *n)
{
    char p[4096], *d = NULL;
    sx_error err;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(sx_file_read(p, &d, n, &err), SX_OK);
    return d;
}

static uint32_t hash32(uint32_t a, uint32_t b)
{
    uint64_t z = ((uint64_t)a << 32 | b) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(z ^ (z >> 31));
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Reference f32 -> bf16, by arithmetic rather than bit tricks: keep 8
 * significant bits with the FPU's round-half-to-even. */
static uint16_t ref_bf16(float f)
{
    if (isnan(f))
        return (uint16_t)(f32_bits(f) >> 16 | 0x40);
    if (isinf(f) || f == 0)
        return (uint16_t)(f32_bits(f) >> 16);
    double v;
    if (fabs(f) < ldexp(1, -126)) {
        v = nearbyint(ldexp(f, 133)) * ldexp(1, -133); /* bf16 subnormal spacing */
    } else {
        int e;
        double m = frexp(f, &e);
        v = ldexp(nearbyint(ldexp(m, 8)), e - 8);
    }
    float r = (float)v; /* exact, or inf past the largest bf16 */
    if (signbit(f) && r == 0)
        r = -0.0f;
    return (uint16_t)(f32_bits(r) >> 16);
}

/* Reference IEEE half -> float from the definition. */
static float ref_f16(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return (float)(s ? -v : v);
}

static float bf16_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

/* ---- building test models by hand ----------------------------------- */

/* A small config; vocab and sizes need not be Qwen3's for the loader. */
static sx_qwen3_config small_cfg(int tied)
{
    sx_qwen3_config c = {.vocab_rows = 100, .hidden = 16, .intermediate = 24, .n_layers = 2,
                         .n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .max_pos = 256,
                         .tied = tied, .rms_eps = 1e-6f, .rope_theta = 1000000.0};
    return c;
}

static void write_config(const char *dir, const sx_qwen3_config *c, const char *arch)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"architectures\": [\"%s\"], \"model_type\": \"qwen3\", \"vocab_size\": %d,"
             " \"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d,"
             " \"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d,"
             " \"max_position_embeddings\": %d, \"tie_word_embeddings\": %s,"
             " \"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000, \"rope_scaling\": null,"
             " \"hidden_act\": \"silu\", \"attention_bias\": false}",
             arch, c->vocab_rows, c->hidden, c->intermediate, c->n_layers, c->n_heads,
             c->n_kv_heads, c->head_dim, c->max_pos, c->tied ? "true" : "false");
    write_text(dir, "config.json", text);
}

enum { MAX_T = 64 };
typedef struct tspec {
    char    name[96];
    int     ndim, is_norm;
    int64_t rows, cols;
} tspec;

/* The Hugging Face tensor list of a Qwen3 checkpoint, written out here. */
static int hf_tensors(const sx_qwen3_config *c, int lm_head, tspec *t)
{
    int n = 0;
    int64_t h = c->hidden, q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
#define ADD(nm, r, cl)                                                                          \
    do {                                                                                        \
        snprintf(t[n].name, sizeof t[n].name, "%s", nm);                                        \
        t[n].rows = r;                                                                          \
        t[n].cols = cl;                                                                         \
        t[n].ndim = cl ? 2 : 1;                                                                 \
        t[n].is_norm = !cl;                                                                     \
        n++;                                                                                    \
    } while (0)
    ADD("model.embed_tokens.weight", c->vocab_rows, h);
    for (int l = 0; l < c->n_layers; l++) {
        char nm[96];
#define L(suffix, r, cl)                                                                        \
    snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix);                                   \
    ADD(nm, r, cl)
        L("input_layernorm.weight", h, 0);
        L("post_attention_layernorm.weight", h, 0);
        L("self_attn.q_proj.weight", q, h);
        L("self_attn.k_proj.weight", kv, h);
        L("self_attn.v_proj.weight", kv, h);
        L("self_attn.o_proj.weight", h, q);
        L("self_attn.q_norm.weight", c->head_dim, 0);
        L("self_attn.k_norm.weight", c->head_dim, 0);
        L("mlp.gate_proj.weight", c->intermediate, h);
        L("mlp.up_proj.weight", c->intermediate, h);
        L("mlp.down_proj.weight", h, c->intermediate);
#undef L
    }
    ADD("model.norm.weight", h, 0);
    if (lm_head)
        ADD("lm_head.weight", c->vocab_rows, h);
#undef ADD
    return n;
}

/* Element e of tensor named `name` as stored with dtype: random bit
 * patterns (finite, moderate) with every 4th an exact halfway case for
 * bf16 rounding; norms near 1. */
static void elem_bits(const char *name, int is_norm, int dtype, uint64_t e, unsigned char *out)
{
    uint32_t key = 0;
    for (const char *p = name; *p; p++)
        key = key * 131 + (unsigned char)*p;
    uint32_t r = hash32(key, (uint32_t)e);
    if (dtype == SX_ST_F32) {
        uint32_t u = is_norm ? f32_bits(1.0f + (float)(r % 2001 - 1000) / 10000.0f)
                             : (r & 0x80000000u) | ((uint32_t)(112 + r % 24) << 23) |
                                   (hash32(r, 7) & 0x7fffff);
        if (!is_norm && e % 4 == 0)
            u = (u & 0xffff0000u) | 0x8000u; /* halfway between two bf16 */
        memcpy(out, &u, 4);
    } else if (dtype == SX_ST_F16) {
        /* finite halves, subnormals included (exponent field 0..30) */
        uint16_t h = (uint16_t)((r & 0x8000) | ((r >> 16) % 31) << 10 | (r & 0x3ff));
        if (is_norm)
            h = (uint16_t)(0x3c00 + (r & 0x3f)); /* 1 + small */
        memcpy(out, &h, 2);
    } else {
        uint16_t h = (uint16_t)((r & 0x8000) | (uint32_t)(112 + r % 24) << 7 | (r >> 16 & 0x7f));
        if (is_norm)
            h = (uint16_t)(0x3f80 + (r & 0xf));
        memcpy(out, &h, 2);
    }
}

typedef struct mk_opts {
    int         mat_dtype, norm_dtype;
    int         lm_head;    /* write lm_head.weight */
    const char *skip;       /* leave this tensor out */
    const char *half_rows;  /* write this one with half the rows */
    const char *extra;      /* add a tensor of this name */
    int         first, end; /* tensor range [first, end) (for shards); end 0 = all */
} mk_opts;

static void mk_weights(const char *path, const sx_qwen3_config *c, const mk_opts *o)
{
    tspec t[MAX_T];
    sx_st_desc d[MAX_T];
    int n = hf_tensors(c, o->lm_head || !c->tied, t), k = 0;
    int end = o->end ? o->end : n;
    for (int i = o->first; i < end; i++) {
        if (o->skip && !strcmp(t[i].name, o->skip))
            continue;
        if (o->half_rows && !strcmp(t[i].name, o->half_rows))
            t[i].rows /= 2;
        d[k] = (sx_st_desc){t[i].name, t[i].is_norm ? o->norm_dtype : o->mat_dtype, t[i].ndim,
                            {t[i].rows, t[i].cols}};
        k++;
    }
    if (o->extra)
        d[k++] = (sx_st_desc){o->extra, SX_ST_F32, 1, {4}};
    sx_st_writer *w;
    sx_error err;
    assert_int_equal(sx_st_writer_open(path, d, (size_t)k, &w, &err), SX_OK);
    for (int i = 0; i < k; i++) {
        size_t es = sx_st_dtype_size(d[i].dtype);
        uint64_t count = (uint64_t)d[i].shape[0] * (uint64_t)(d[i].ndim == 2 ? d[i].shape[1] : 1);
        unsigned char *buf = malloc(count * es);
        assert_non_null(buf);
        for (uint64_t e = 0; e < count; e++)
            elem_bits(d[i].name, d[i].ndim == 1, d[i].dtype, e, buf + e * es);
        assert_int_equal(sx_st_writer_write(w, buf, count * es, &err), SX_OK);
        free(buf);
    }
    assert_int_equal(sx_st_writer_close(w, &err), SX_OK);
}

static void mk_model(const char *dir, const sx_qwen3_config *c, const mk_opts *o)
{
    char p[4096];
    write_config(dir, c, "Qwen3ForCausalLM");
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    mk_weights(p, c, o);
}

/* The loaded model's pointer for a Hugging Face name (the test's own map). */
static const void *model_ptr(const sx_model *m, const char *name, int *is_norm)
{
    int l;
    char rest[96];
    *is_norm = 0;
    if (!strcmp(name, "model.embed_tokens.weight"))
        return m->embed;
    if (!strcmp(name, "lm_head.weight"))
        return m->lm_head;
    *is_norm = 1;
    if (!strcmp(name, "model.norm.weight"))
        return m->final_norm;
    assert_int_equal(sscanf(name, "model.layers.%d.%95s", &l, rest), 2);
    const sx_layer_weights *w = &m->layers[l];
    static const char *const norms[] = {"input_layernorm.weight", "post_attention_layernorm.weight",
                                        "self_attn.q_norm.weight", "self_attn.k_norm.weight"};
    const void *np[] = {w->attn_norm, w->mlp_norm, w->q_norm, w->k_norm};
    for (int i = 0; i < 4; i++)
        if (!strcmp(rest, norms[i]))
            return np[i];
    *is_norm = 0;
    static const char *const mats[] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                       "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                                       "mlp.gate_proj.weight",    "mlp.up_proj.weight",
                                       "mlp.down_proj.weight"};
    const void *mp[] = {w->wq, w->wk, w->wv, w->wo, w->w_gate, w->w_up, w->w_down};
    for (int i = 0; i < 7; i++)
        if (!strcmp(rest, mats[i]))
            return mp[i];
    fail_msg("no such tensor %s", name);
    return NULL;
}

/* Every element of every tensor is what the file held, rounded to bf16
 * for matrices and exact f32 for norms. */
static void check_values(const sx_model *m, const mk_opts *o)
{
    tspec t[MAX_T];
    int n = hf_tensors(&m->cfg, o->lm_head || !m->cfg.tied, t);
    for (int i = 0; i < n; i++) {
        int is_norm;
        const void *p = model_ptr(m, t[i].name, &is_norm);
        assert_non_null(p);
        assert_int_equal(is_norm, t[i].is_norm);
        int dt = is_norm ? o->norm_dtype : o->mat_dtype;
        uint64_t count = (uint64_t)t[i].rows * (uint64_t)(t[i].ndim == 2 ? t[i].cols : 1);
        for (uint64_t e = 0; e < count; e++) {
            unsigned char raw[4];
            elem_bits(t[i].name, is_norm, dt, e, raw);
            float want;
            uint16_t h;
            memcpy(&h, raw, 2);
            if (dt == SX_ST_F32)
                memcpy(&want, raw, 4);
            else
                want = dt == SX_ST_F16 ? ref_f16(h) : bf16_f32(h);
            if (is_norm) {
                float got = ((const float *)p)[e];
                if (memcmp(&got, &want, 4))
                    fail_msg("%s[%llu]: got %g want %g", t[i].name, (unsigned long long)e,
                             (double)got, (double)want);
            } else {
                uint16_t got = ((const uint16_t *)p)[e], w16 = ref_bf16(want);
                if (got != w16)
                    fail_msg("%s[%llu]: got bf16 %04x want %04x (from %.9g)", t[i].name,
                             (unsigned long long)e, got, w16, (double)want);
            }
        }
    }
}

static int load_fails(const char *dir, int code, const char *needle)
{
    sx_model *m = (sx_model *)1;
    sx_error err;
    sx_err_clear(&err);
    int rc = sx_model_load(dir, &m, &err);
    if (rc != code || m || !strstr(err.msg, needle)) {
        print_error("load: rc %d (want %d), msg \"%s\" (want \"%s\")\n", rc, code, err.msg, needle);
        sx_model_free(m == (sx_model *)1 ? NULL : m);
        return 0;
    }
    return 1;
}

static const char *shared_dir(void)
{
    const char *s = getenv("STRUX_SHARED");
    return s && *s ? s : "../shared";
}

/* ---- tests ------------------------------------------------------------ */

static void named_shapes_and_sizes(void **state)
{
    (void)state;
    sx_qwen3_config c;
    sx_error err;
    /* parameter counts of transformers' Qwen3ForCausalLM built with these shapes */
    static const struct {
        const char *name;
        long long   params;
        int         hidden, layers, heads, tied;
    } want[] = {
        {"0.6b", 596049920LL, 1024, 28, 16, 1},   {"1.7b", 1720574976LL, 2048, 28, 16, 1},
        {"4b", 4022468096LL, 2560, 36, 32, 1},    {"8b", 8190735360LL, 4096, 36, 32, 0},
        {"tiny", 20137088LL, 128, 2, 4, 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(sx_qwen3_shape(want[i].name, &c, &err), SX_OK);
        assert_int_equal(sx_qwen3_n_params(&c), want[i].params);
        assert_int_equal(c.hidden, want[i].hidden);
        assert_int_equal(c.n_layers, want[i].layers);
        assert_int_equal(c.n_heads, want[i].heads);
        assert_int_equal(c.tied, want[i].tied);
        assert_int_equal(c.vocab_rows, 151936);
        assert_int_equal(c.head_dim, 128);
        assert_int_equal(c.n_kv_heads, strcmp(want[i].name, "tiny") ? 8 : 2);
        assert_int_equal(sx_qwen3_config_check(&c, &err), SX_OK);
    }
    /* tiny keeps the Qwen3 oddities */
    assert_int_equal(sx_qwen3_shape("tiny", &c, &err), SX_OK);
    assert_true(c.head_dim != c.hidden / c.n_heads);
    assert_true(c.n_kv_heads < c.n_heads);
    /* 2 (k, v) x 28 layers x 8 kv heads x 128 x 2 bytes */
    assert_int_equal(sx_qwen3_shape("0.6b", &c, &err), SX_OK);
    assert_int_equal(sx_qwen3_kv_bytes_per_token(&c, 2), 114688);
    assert_int_equal(sx_qwen3_kv_bytes_per_token(&c, 4), 229376);
    assert_int_equal(sx_qwen3_shape("13b", &c, &err), SX_ENOTFOUND);
    assert_non_null(strstr(err.msg, "13b"));
}

static void config_parse(void **state)
{
    (void)state;
    sx_qwen3_config c;
    sx_error err;
    const char *ok = "{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":151936,"
                     "\"hidden_size\":1024,\"intermediate_size\":3072,\"num_hidden_layers\":28,"
                     "\"num_attention_heads\":16,\"num_key_value_heads\":8,\"head_dim\":128,"
                     "\"max_position_embeddings\":40960,\"rms_norm_eps\":1e-06,"
                     "\"rope_theta\":1000000,\"tie_word_embeddings\":true}";
    assert_int_equal(sx_qwen3_config_parse(ok, strlen(ok), &c, &err), SX_OK);
    sx_qwen3_config s;
    assert_int_equal(sx_qwen3_shape("0.6b", &s, &err), SX_OK);
    assert_memory_equal(&c, &s, sizeof c);

    /* transformers 5 writes rope_theta inside rope_parameters; head_dim,
     * kv heads and tying have Qwen3Config's defaults */
    const char *v5 = "{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":1000,"
                     "\"hidden_size\":256,\"intermediate_size\":512,\"num_hidden_layers\":2,"
                     "\"num_attention_heads\":4,\"max_position_embeddings\":512,"
                     "\"rms_norm_eps\":1e-5,\"rope_parameters\":{\"rope_type\":\"default\","
                     "\"rope_theta\":10000.0}}";
    assert_int_equal(sx_qwen3_config_parse(v5, strlen(v5), &c, &err), SX_OK);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.n_kv_heads, 4);
    assert_int_equal(c.tied, 0);
    assert_true(c.rope_theta == 10000.0);
    assert_true(c.rms_eps == 1e-5f);

    static const struct {
        const char *json;
        int         code;
        const char *needle;
    } bad[] = {
        {"{\"architectures\":[\"LlamaForCausalLM\"]}", SX_EFORMAT, "LlamaForCausalLM"},
        {"{\"vocab_size\":5}", SX_EFORMAT, "architecture"},
        {"{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10}", SX_EFORMAT,
         "\"hidden_size\""},
        {"{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":8,"
         "\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
         "\"max_position_embeddings\":8,\"rope_theta\":10000}",
         SX_EFORMAT, "\"rms_norm_eps\""},
        {"{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":\"8\"}",
         SX_EFORMAT, "\"hidden_size\" is not an integer"},
        {"{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":8,"
         "\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":3,"
         "\"num_key_value_heads\":2,\"max_position_embeddings\":8,\"rms_norm_eps\":1e-6,"
         "\"rope_theta\":10000}",
         SX_EFORMAT, "multiple"},
        {"{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":8,"
         "\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
         "\"max_position_embeddings\":8,\"rms_norm_eps\":1e-6,\"rope_theta\":10000,"
         "\"rope_scaling\":{\"rope_type\":\"yarn\",\"factor\":4}}",
         SX_EUNSUPPORTED, "yarn"},
        {"{\"architectures\":[\"Qwen3ForCausalLM\"],\"vocab_size\":10,\"hidden_size\":-8,"
         "\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
         "\"max_position_embeddings\":8,\"rms_norm_eps\":1e-6,\"rope_theta\":10000}",
         SX_EFORMAT, "hidden_size -8 is out of range"},
        {"{\"architectures\":", SX_EFORMAT, "config.json: line 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sx_err_clear(&err);
        int rc = sx_qwen3_config_parse(bad[i].json, strlen(bad[i].json), &c, &err);
        if (rc != bad[i].code || !strstr(err.msg, bad[i].needle))
            fail_msg("case %zu: rc %d msg \"%s\" (want %d \"%s\")", i, rc, err.msg, bad[i].code,
                     bad[i].needle);
    }
}

/* The random tiny model: config round trip, tokenizer copied, every
 * pointer set, tied lm_head, weights used in place from the file and
 * scaled as promised. */
static void random_tiny_model_loads(void **state)
{
    (void)state;
    char dir[] = "/tmp/strux-model-XXXXXX", tok[4096];
    mkdtemp_or_fail(dir);
    sx_qwen3_config c;
    sx_error err;
    sx_model *m = NULL;
    snprintf(tok, sizeof tok, "%s/qwen3-tokenizer/tokenizer.json", shared_dir());
    assert_int_equal(sx_qwen3_shape("tiny", &c, &err), SX_OK);
    assert_int_equal(sx_model_write_random(&c, 42, dir, tok, &err), SX_OK);

    size_t n1, n2;
    char *a = read_all(dir, "tokenizer.json", &n1);
    char *b = NULL;
    assert_int_equal(sx_file_read(tok, &b, &n2, &err), SX_OK);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a);
    free(b);

    assert_int_equal(sx_model_load(dir, &m, &err), SX_OK);
    assert_memory_equal(&m->cfg, &c, sizeof c);
    assert_string_equal(m->dir, dir);
    assert_ptr_equal(m->lm_head, m->embed);

    /* bf16 matrices come straight from the mapping: same bytes as the file */
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    sx_st_file *f;
    assert_int_equal(sx_st_open(path, &f, &err), SX_OK);
    assert_null(sx_st_find(f, "lm_head.weight")); /* tied: not written */
    const sx_st_tensor *t = sx_st_find(f, "model.layers.1.mlp.down_proj.weight");
    assert_non_null(t);
    assert_int_equal(t->dtype, SX_ST_BF16);
    assert_int_equal(t->shape[0], 128);
    assert_int_equal(t->shape[1], 384);
    assert_int_equal(t->offset % 2, 0);
    assert_memory_equal(m->layers[1].w_down, t->data, t->nbytes);
    assert_int_equal(sx_st_count(f), 2 + 11 * 2);

    /* scales: uniform, std 1/sqrt(fan_in) for projections, ~0.04 for the
     * embedding, 1 +- 0.1 for norms (and not all equal to 1) */
    double s = 0, s2 = 0;
    size_t nq = (size_t)c.n_heads * c.head_dim * c.hidden;
    for (size_t i = 0; i < nq; i++) {
        double v = bf16_f32(m->layers[0].wq[i]);
        s += v;
        s2 += v * v;
    }
    double sd = sqrt(s2 / nq - (s / nq) * (s / nq));
    assert_true(fabs(sd - 1 / sqrt(128.0)) < 0.05 / sqrt(128.0));
    s = s2 = 0;
    for (size_t i = 0; i < 1000000; i++) {
        double v = bf16_f32(m->embed[i]);
        s2 += v * v;
    }
    assert_true(fabs(sqrt(s2 / 1e6) - 0.04) < 0.002);
    int not_one = 0;
    for (int i = 0; i < c.head_dim; i++) {
        float v = m->layers[1].k_norm[i];
        assert_true(v > 0.89f && v < 1.11f);
        not_one += v != 1.0f;
    }
    assert_true(not_one > c.head_dim / 2);
    for (int l = 0; l < c.n_layers; l++) {
        const sx_layer_weights *w = &m->layers[l];
        assert_true(w->wq && w->wk && w->wv && w->wo && w->w_gate && w->w_up && w->w_down);
        assert_true(w->attn_norm && w->mlp_norm && w->q_norm && w->k_norm);
    }
    assert_non_null(m->final_norm);
    sx_st_close(f);
    sx_model_free(m);

    /* config.json parses back to the shape */
    sx_qwen3_config back;
    size_t n;
    char *text = read_all(dir, "config.json", &n);
    assert_int_equal(sx_qwen3_config_parse(text, n, &back, &err), SX_OK);
    assert_memory_equal(&back, &c, sizeof c);
    assert_non_null(strstr(text, "\"model_type\": \"qwen3\""));
    assert_non_null(strstr(text, "\"torch_dtype\": \"bfloat16\""));
    assert_non_null(strstr(text, "\"eos_token_id\": 151645"));
    free(text);
    rm_rf(dir);
}

static void random_is_deterministic(void **state)
{
    (void)state;
    char d1[] = "/tmp/strux-model-XXXXXX", d2[] = "/tmp/strux-model-XXXXXX",
         d3[] = "/tmp/strux-model-XXXXXX";
    mkdtemp_or_fail(d1);
    mkdtemp_or_fail(d2);
    mkdtemp_or_fail(d3);
    sx_qwen3_config c;
    sx_error err;
    assert_int_equal(sx_qwen3_shape("tiny", &c, &err), SX_OK);
    c.tied = 0; /* exercise lm_head too */
    assert_int_equal(sx_model_write_random(&c, 7, d1, NULL, &err), SX_OK);
    assert_int_equal(sx_model_write_random(&c, 7, d2, NULL, &err), SX_OK);
    assert_int_equal(sx_model_write_random(&c, 8, d3, NULL, &err), SX_OK);
    size_t n1, n2, n3;
    char *a = read_all(d1, "model.safetensors", &n1), *b = read_all(d2, "model.safetensors", &n2),
         *x = read_all(d3, "model.safetensors", &n3);
    assert_int_equal(n1, n2);
    assert_int_equal(n1, n3);
    assert_memory_equal(a, b, n1);
    assert_true(memcmp(a, x, n1) != 0);
    free(a);
    free(b);
    free(x);
    sx_model *m = NULL;
    assert_int_equal(sx_model_load(d1, &m, &err), SX_OK);
    assert_ptr_not_equal(m->lm_head, m->embed);
    assert_true(memcmp(m->lm_head, m->embed, 4096) != 0);
    sx_model_free(m);
    /* a bad shape is refused before anything is written */
    c.n_kv_heads = 3;
    assert_int_equal(sx_model_write_random(&c, 7, d1, NULL, &err), SX_EINVAL);
    assert_non_null(strstr(err.msg, "num_key_value_heads"));
    rm_rf(d1);
    rm_rf(d2);
    rm_rf(d3);
}

/* bf16, f16 and f32 files give the same kind of model: matrices rounded to
 * bf16 (nearest, ties to even), norms exact in f32. */
static void dtypes_convert(void **state)
{
    (void)state;
    static const int dts[][2] = {{SX_ST_BF16, SX_ST_BF16}, {SX_ST_F32, SX_ST_F32},
                                 {SX_ST_F16, SX_ST_F16},   {SX_ST_F32, SX_ST_BF16},
                                 {SX_ST_BF16, SX_ST_F16}};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        char dir[] = "/tmp/strux-model-XXXXXX";
        mkdtemp_or_fail(dir);
        sx_qwen3_config c = small_cfg(k % 2);
        mk_opts o = {.mat_dtype = dts[k][0], .norm_dtype = dts[k][1]};
        mk_model(dir, &c, &o);
        sx_model *m = NULL;
        sx_error err;
        assert_int_equal(sx_model_load(dir, &m, &err), SX_OK);
        check_values(m, &o);
        if (c.tied)
            assert_ptr_equal(m->lm_head, m->embed);
        sx_model_free(m);
        rm_rf(dir);
    }
}

/* The rounding rule itself on the cases that matter. */
static void f32_rounding_edges(void **state)
{
    (void)state;
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3f808000, 0x3f80}, /* 1 + 2^-8: halfway, to even (down) */
        {0x3f818000, 0x3f82}, /* 1 + 3*2^-8: halfway, to even (up) */
        {0x3f808001, 0x3f81}, /* just over halfway: up */
        {0x3f807fff, 0x3f80}, /* just under: down */
        {0x7f7fffff, 0x7f80}, /* largest float rounds to inf */
        {0xff7fffff, 0xff80},
        {0x80000000, 0x8000}, /* -0 */
        {0x00000001, 0x0000}, /* smallest subnormal to +0 */
        {0x00008000, 0x0000}, /* subnormal halfway, to even */
        {0x00018000, 0x0002},
        {0x7f800000, 0x7f80}, /* inf */
        {0x7f800001, 0x7fc0}, /* signalling NaN stays NaN */
        {0xffc00000, 0xffc0},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    for (int i = 0; i < N; i++)
        assert_int_equal(ref_bf16(bits_f32(cases[i].in)), cases[i].out);
    /* the same through the loader: a 1-layer model whose embedding starts
     * with these values */
    char dir[] = "/tmp/strux-model-XXXXXX", path[4200];
    mkdtemp_or_fail(dir);
    sx_qwen3_config c = small_cfg(1);
    c.n_layers = 1;
    write_config(dir, &c, "Qwen3ForCausalLM");
    tspec t[MAX_T];
    int n = hf_tensors(&c, 0, t);
    sx_st_desc d[MAX_T];
    for (int i = 0; i < n; i++)
        d[i] = (sx_st_desc){t[i].name, SX_ST_F32, t[i].ndim, {t[i].rows, t[i].cols}};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    sx_st_writer *w;
    sx_error err;
    assert_int_equal(sx_st_writer_open(path, d, (size_t)n, &w, &err), SX_OK);
    for (int i = 0; i < n; i++) {
        size_t count = (size_t)t[i].rows * (size_t)(t[i].ndim == 2 ? t[i].cols : 1);
        uint32_t *buf = calloc(count, 4);
        for (size_t e = 0; e < count; e++)
            buf[e] = i == 0 && e < N ? cases[e].in : f32_bits(1.0f);
        assert_int_equal(sx_st_writer_write(w, buf, count * 4, &err), SX_OK);
        free(buf);
    }
    assert_int_equal(sx_st_writer_close(w, &err), SX_OK);
    sx_model *m = NULL;
    assert_int_equal(sx_model_load(dir, &m, &err), SX_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(m->embed[i], cases[i].out);
    sx_model_free(m);
    rm_rf(dir);
}

static void tied_with_and_without_lm_head(void **state)
{
    (void)state;
    char dir[] = "/tmp/strux-model-XXXXXX";
    mkdtemp_or_fail(dir);
    sx_qwen3_config c = small_cfg(1);
    sx_model *m = NULL;
    sx_error err;
    /* tied and lm_head.weight shipped: it is used */
    mk_opts o = {.mat_dtype = SX_ST_BF16, .norm_dtype = SX_ST_BF16, .lm_head = 1};
    mk_model(dir, &c, &o);
    assert_int_equal(sx_model_load(dir, &m, &err), SX_OK);
    assert_ptr_not_equal(m->lm_head, m->embed);
    check_values(m, &o);
    sx_model_free(m);
    /* untied and lm_head.weight missing: an error naming it */
    c.tied = 0;
    o.skip = "lm_head.weight";
    mk_model(dir, &c, &o);
    assert_true(load_fails(dir, SX_EFORMAT, "lm_head.weight: missing from"));
    rm_rf(dir);
}

static void broken_models(void **state)
{
    (void)state;
    char dir[] = "/tmp/strux-model-XXXXXX", path[4200];
    mkdtemp_or_fail(dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    sx_qwen3_config c = small_cfg(1);
    mk_opts good = {.mat_dtype = SX_ST_BF16, .norm_dtype = SX_ST_F32};

    /* no directory, no weights */
    assert_true(load_fails("/nonexistent/strux-model", SX_EIO, "/nonexistent/strux-model"));
    write_config(dir, &c, "Qwen3ForCausalLM");
    assert_true(load_fails(dir, SX_EIO, "no model.safetensors"));

    /* wrong shape: expected vs got */
    mk_opts o = good;
    o.half_rows = "model.layers.1.self_attn.k_proj.weight";
    mk_model(dir, &c, &o);
    assert_true(load_fails(dir, SX_EFORMAT,
                           "model.layers.1.self_attn.k_proj.weight: shape expected [16, 16] got [8, 16]"));
    o = good;
    o.half_rows = "model.layers.0.self_attn.q_norm.weight";
    mk_model(dir, &c, &o);
    assert_true(load_fails(dir, SX_EFORMAT, "q_norm.weight: shape expected [8] got [4]"));

    /* missing and unexpected tensors */
    o = good;
    o.skip = "model.layers.1.mlp.up_proj.weight";
    mk_model(dir, &c, &o);
    assert_true(load_fails(dir, SX_EFORMAT, "model.layers.1.mlp.up_proj.weight: missing from"));
    o = good;
    o.extra = "model.layers.2.mlp.up_proj.weight";
    mk_model(dir, &c, &o);
    assert_true(load_fails(dir, SX_EFORMAT, "unexpected tensor model.layers.2.mlp.up_proj.weight"));
    o = good;
    o.extra = "model.layers.0.self_attn.q_proj.bias";
    mk_model(dir, &c, &o);
    assert_true(load_fails(dir, SX_EFORMAT, "unexpected tensor model.layers.0.self_attn.q_proj.bias"));

    /* unknown architecture */
    mk_model(dir, &c, &good);
    write_config(dir, &c, "Qwen2ForCausalLM");
    assert_true(load_fails(dir, SX_EFORMAT, "Qwen2ForCausalLM"));
    write_config(dir, &c, "Qwen3ForCausalLM");

    /* truncated: the last tensor runs past the end */
    size_t n;
    char *bytes = read_all(dir, "model.safetensors", &n);
    write_file(dir, "model.safetensors", bytes, n - 10);
    assert_true(load_fails(dir, SX_EFORMAT, "truncated"));
    assert_true(load_fails(dir, SX_EFORMAT, path)); /* the file is named */
    /* header length beyond the file */
    char *copy = malloc(n);
    memcpy(copy, bytes, n);
    memcpy(copy, "\xff\xff\x00\x00\x00\x00\x00\x00", 8);
    write_file(dir, "model.safetensors", copy, n);
    assert_true(load_fails(dir, SX_EFORMAT, "header length 65535 is more than"));
    memcpy(copy, "\x00\x00\x00\x00\x01\x00\x00\x00", 8);
    write_file(dir, "model.safetensors", copy, n);
    assert_true(load_fails(dir, SX_EFORMAT, "out of range"));
    /* a dtype the loader does not take, named with the file and tensor */
    memcpy(copy, bytes, n);
    char *dt = strstr(copy + 8, "\"BF16\"");
    assert_non_null(dt);
    memcpy(dt, "\"I16\" ", 6);
    write_file(dir, "model.safetensors", copy, n);
    assert_true(load_fails(dir, SX_EFORMAT, "dtype I16 is not supported"));
    assert_true(load_fails(dir, SX_EFORMAT, "model.embed_tokens.weight"));
    /* an empty file */
    write_file(dir, "model.safetensors", "", 0);
    assert_true(load_fails(dir, SX_EFORMAT, "too short"));
    free(copy);
    free(bytes);
    rm_rf(dir);
}

/* Hand-made headers through the parser: every check has its message. */
static void parse_headers(void **state)
{
    (void)state;
    static const struct {
        const char *header;
        size_t      data;  /* bytes of data section */
        const char *needle; /* NULL: must parse */
    } cases[] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 16, NULL},
        {"{\"__metadata__\":{\"format\":\"pt\"},\"s\":{\"dtype\":\"BF16\",\"shape\":[],"
         "\"data_offsets\":[0,2]},\"z\":{\"dtype\":\"F16\",\"shape\":[0,5],\"data_offsets\":[2,2]}}",
         2, NULL},
        {"{}", 0, NULL},
        {"{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "dtype F64"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 16,
         "shape [2, 2] of F32 needs 16 bytes but data_offsets [0, 12] span 12"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, "overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[4,20]}}", 16, "run past"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,4]}}", 16, "begin <= end"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", 16, "shape[0]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4.0],\"data_offsets\":[0,16]}}", 16, "shape[0]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
         "\"data_offsets\":[0,16]}}", 16, "overflows"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4]}}", 16, "data_offsets"},
        {"{\"a\":{\"shape\":[4],\"data_offsets\":[0,16]}}", 16, "dtype"},
        {"{\"a\":[1,2]}", 0, "not an object"},
        {"{\"__metadata__\":{\"x\":1}}", 0, "not a string"},
        {"{\"a\":1,\"a\":2}", 0, "header JSON"},
        {"[1]", 0, "start with '{'"},
        {"{\"a\":", 0, "header JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t hl = strlen(cases[i].header), n = 8 + hl + cases[i].data;
        unsigned char *buf = calloc(1, n);
        for (int b = 0; b < 8; b++)
            buf[b] = (unsigned char)((uint64_t)hl >> (8 * b));
        memcpy(buf + 8, cases[i].header, hl);
        sx_st_file *f = NULL;
        sx_error err;
        sx_err_clear(&err);
        int rc = sx_st_parse(buf, n, "mem", &f, &err);
        if (!cases[i].needle) {
            if (rc)
                fail_msg("case %zu: %s", i, err.msg);
            sx_st_close(f);
        } else if (rc != SX_EFORMAT || f || !strstr(err.msg, cases[i].needle) ||
                   strncmp(err.msg, "mem: ", 5)) {
            fail_msg("case %zu: rc %d msg \"%s\" (want \"%s\")", i, rc, err.msg, cases[i].needle);
        }
        free(buf);
    }
    /* lookups and shapes of a good one */
    const char *h = "{\"b\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[16,22]},"
                    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}   ";
    size_t hl = strlen(h);
    unsigned char buf[256] = {(unsigned char)hl};
    memcpy(buf + 8, h, hl);
    sx_st_file *f;
    sx_error err;
    assert_int_equal(sx_st_parse(buf, 8 + hl + 22, "mem", &f, &err), SX_OK);
    assert_int_equal(sx_st_count(f), 2);
    assert_string_equal(sx_st_at(f, 0)->name, "a");
    const sx_st_tensor *b = sx_st_find(f, "b");
    assert_non_null(b);
    assert_int_equal(b->dtype, SX_ST_F16);
    assert_int_equal(b->offset, 8 + hl + 16);
    assert_ptr_equal(b->data, buf + 8 + hl + 16);
    assert_int_equal(b->nbytes, 6);
    assert_null(sx_st_find(f, "c"));
    sx_st_close(f);
    /* too short for a length */
    assert_int_equal(sx_st_parse(buf, 7, "mem", &f, &err), SX_EFORMAT);
    assert_null(f);
}

/* Two shards and an index, as transformers writes big models. */
static void sharded_model(void **state)
{
    (void)state;
    char dir[] = "/tmp/strux-model-XXXXXX", p[4200];
    mkdtemp_or_fail(dir);
    sx_qwen3_config c = small_cfg(0);
    write_config(dir, &c, "Qwen3ForCausalLM");
    tspec t[MAX_T];
    int n = hf_tensors(&c, 1, t), half = n / 2;
    mk_opts o = {.mat_dtype = SX_ST_BF16, .norm_dtype = SX_ST_BF16, .first = 0, .end = half};
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", dir);
    mk_weights(p, &c, &o);
    o.first = half;
    o.end = n;
    o.mat_dtype = SX_ST_F16; /* shards may differ in dtype */
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    mk_weights(p, &c, &o);

    char *idx = malloc(1 << 16);
    size_t k = (size_t)sprintf(idx, "{\"metadata\":{\"total_size\":0},\"weight_map\":{");
    for (int i = 0; i < n; i++)
        k += (size_t)sprintf(idx + k, "%s\"%s\":\"model-0000%d-of-00002.safetensors\"", i ? "," : "",
                             t[i].name, i < half ? 1 : 2);
    sprintf(idx + k, "}}");
    write_text(dir, "model.safetensors.index.json", idx);

    sx_model *m = NULL;
    sx_error err;
    assert_int_equal(sx_model_load(dir, &m, &err), SX_OK);
    /* check each half against its own dtype */
    int is_norm;
    const uint16_t *e = model_ptr(m, "model.embed_tokens.weight", &is_norm);
    unsigned char raw[4];
    elem_bits("model.embed_tokens.weight", 0, SX_ST_BF16, 5, raw);
    assert_memory_equal(&e[5], raw, 2);
    const uint16_t *lm = m->lm_head; /* in shard 2, f16 */
    uint16_t h;
    elem_bits("lm_head.weight", 0, SX_ST_F16, 9, raw);
    memcpy(&h, raw, 2);
    assert_int_equal(lm[9], ref_bf16(ref_f16(h)));
    sx_model_free(m);

    /* the index puts a tensor in the wrong shard */
    char *wrong = strdup(idx);
    char *at = strstr(wrong, "\"model.embed_tokens.weight\":\"model-00001");
    assert_non_null(at);
    at[strlen("\"model.embed_tokens.weight\":\"model-0000")] = '2';
    write_text(dir, "model.safetensors.index.json", wrong);
    assert_true(load_fails(dir, SX_EFORMAT, "model.embed_tokens.weight is not listed"));
    /* a shard that is not there */
    strcpy(wrong, idx);
    at = strstr(wrong, "model-00002-of-00002");
    memcpy(at, "model-00003", 11);
    write_text(dir, "model.safetensors.index.json", wrong);
    assert_true(load_fails(dir, SX_EIO, "model-00003-of-00002.safetensors"));
    /* a shard name that leaves the directory */
    write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\":{\"model.norm.weight\":\"../x.safetensors\"}}");
    assert_true(load_fails(dir, SX_EFORMAT, "not a file name"));
    write_text(dir, "model.safetensors.index.json", "{\"weight_map\":{}}");
    assert_true(load_fails(dir, SX_EFORMAT, "weight_map"));
    /* a tensor missing from the index and the shards */
    strcpy(wrong, idx);
    write_text(dir, "model.safetensors.index.json", wrong);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    o.skip = t[n - 1].name;
    mk_weights(p, &c, &o);
    at = strstr(wrong, ",\"lm_head.weight\"");
    assert_non_null(at);
    strcpy(at, "}}");
    write_text(dir, "model.safetensors.index.json", wrong);
    assert_true(load_fails(dir, SX_EFORMAT, "lm_head.weight: missing from the 2 shards"));
    free(wrong);
    free(idx);
    rm_rf(dir);
}

static void writer_contract(void **state)
{
    (void)state;
    char dir[] = "/tmp/strux-model-XXXXXX", p[4200];
    mkdtemp_or_fail(dir);
    snprintf(p, sizeof p, "%s/w.safetensors", dir);
    sx_st_desc d[2] = {{"x", SX_ST_F32, 1, {3}}, {"y", SX_ST_BF16, 2, {2, 1}}};
    sx_st_writer *w;
    sx_error err;
    float xs[3] = {1, 2, 3};
    uint16_t ys[2] = {0x3f80, 0x4000};
    /* too few bytes: error, and no file left behind */
    assert_int_equal(sx_st_writer_open(p, d, 2, &w, &err), SX_OK);
    assert_int_equal(sx_st_writer_total(w), 16);
    assert_int_equal(sx_st_writer_write(w, xs, 12, &err), SX_OK);
    assert_int_equal(sx_st_writer_close(w, &err), SX_EINVAL);
    assert_false(sx_file_exists(p));
    /* too many */
    assert_int_equal(sx_st_writer_open(p, d, 2, &w, &err), SX_OK);
    assert_int_equal(sx_st_writer_write(w, xs, 12, &err), SX_OK);
    assert_int_equal(sx_st_writer_write(w, xs, 12, &err), SX_EINVAL);
    assert_int_not_equal(sx_st_writer_close(w, &err), SX_OK);
    assert_false(sx_file_exists(p));
    /* duplicate names and unknown dtypes are refused up front */
    sx_st_desc dup[2] = {{"x", SX_ST_F32, 1, {3}}, {"x", SX_ST_F32, 1, {3}}};
    assert_int_equal(sx_st_writer_open(p, dup, 2, &w, &err), SX_EINVAL);
    sx_st_desc bad = {"x", 7, 1, {3}};
    assert_int_equal(sx_st_writer_open(p, &bad, 1, &w, &err), SX_EINVAL);
    /* exactly right: reads back, data aligned to 8 */
    assert_int_equal(sx_st_writer_open(p, d, 2, &w, &err), SX_OK);
    assert_int_equal(sx_st_writer_write(w, xs, 12, &err), SX_OK);
    assert_int_equal(sx_st_writer_write(w, ys, 4, &err), SX_OK);
    assert_int_equal(sx_st_writer_close(w, &err), SX_OK);
    sx_st_file *f;
    assert_int_equal(sx_st_open(p, &f, &err), SX_OK);
    const sx_st_tensor *x = sx_st_find(f, "x"), *y = sx_st_find(f, "y");
    assert_true(x && y);
    assert_int_equal(x->offset % 8, 0);
    assert_memory_equal(x->data, xs, 12);
    assert_memory_equal(y->data, ys, 4);
    assert_int_equal(y->shape[0], 2);
    assert_int_equal(y->shape[1], 1);
    sx_st_close(f);
    unlink(p);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(named_shapes_and_sizes),
        cmocka_unit_test(config_parse),
        cmocka_unit_test(random_tiny_model_loads),
        cmocka_unit_test(random_is_deterministic),
        cmocka_unit_test(dtypes_convert),
        cmocka_unit_test(f32_rounding_edges),
        cmocka_unit_test(tied_with_and_without_lm_head),
        cmocka_unit_test(broken_models),
        cmocka_unit_test(parse_headers),
        cmocka_unit_test(sharded_model),
        cmocka_unit_test(writer_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
