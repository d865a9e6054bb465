/* Quantised checkpoints (engine/model/model_quant.c, the AWQ panels in
 * engine/cpu/quant.c): the AWQ and FP8 fixtures of tests/fixtures/quant/
 * (written by tests/fixtures/gen_quant_fixtures.py in the published layouts)
 * load, and the engine's logits match what transformers computes from the
 * dequantised weights: every row of prompt + greedy continuation within a
 * tolerance, the argmax of every row, and greedy decoding token for token.
 *
 * FP8 is dequantised to the same bf16 values the reference runs, so it is
 * held to f32 rounding (as test_model_ref.c).  AWQ runs the q4 kernels, which
 * round the activations to int8 per 32 values, so its tolerance is that
 * rounding's (measured ~1e-2 here; the greedy gaps of the fixture are > 0.2).
 *
 * Also: the AWQ panels + zero correction against a plain f32 product of the
 * dequantised matrix on every CPU path; quantization_config errors naming
 * their field; dtype and shape errors printing expected vs got. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sx_file.h"
#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/engine.h"
#include "engine/model/model.h"

#define QDIR "tests/fixtures/quant"

typedef struct ref {
    json_t  *root;
    int32_t *ids;     /* prompt + greedy */
    int      n_prompt, n_greedy, n_rows, vocab;
} ref;

static void ref_load(const char *dir, ref *r)
{
    char path[256];
    json_error_t je;
    snprintf(path, sizeof path, "%s/ref.json", dir);
    r->root = json_load_file(path, 0, &je);
    if (!r->root)
        fail_msg("%s: %s", path, je.text);
    json_t *p = json_object_get(r->root, "prompt"), *g = json_object_get(r->root, "greedy");
    r->n_prompt = (int)json_array_size(p);
    r->n_greedy = (int)json_array_size(g);
    r->n_rows = r->n_prompt + r->n_greedy - 1;
    r->ids = malloc((size_t)(r->n_prompt + r->n_greedy) * sizeof *r->ids);
    assert_non_null(r->ids);
    for (int i = 0; i < r->n_prompt; i++)
        r->ids[i] = (int32_t)json_integer_value(json_array_get(p, (size_t)i));
    for (int i = 0; i < r->n_greedy; i++)
        r->ids[r->n_prompt + i] = (int32_t)json_integer_value(json_array_get(g, (size_t)i));
    r->vocab = (int)json_array_size(json_array_get(json_object_get(r->root, "logits"), 0));
}

static double ref_logit(const ref *r, int row, int id)
{
    return json_number_value(
        json_array_get(json_array_get(json_object_get(r->root, "logits"), (size_t)row), (size_t)id));
}

static double ref_gap(const ref *r, int row)
{
    return json_number_value(json_array_get(json_object_get(r->root, "gaps"), (size_t)row));
}

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b])
            b = i;
    return b;
}

/* prefill of prompt + greedy[:-1] (every row), then greedy decoding one token
 * at a time from the prompt; returns the largest |logit - ref|.  Argmax and
 * greedy ids are compared where the reference's top two are more than
 * gap_min apart. */
static double check_model(const char *dir, int mode, double atol, double gap_min,
                          int check_greedy)
{
    sx_model *m = NULL;
    sx_engine *e = NULL;
    sx_error err;
    ref r;
    ref_load(dir, &r);
    if (sx_model_load(dir, &m, &err))
        fail_msg("%s: %s", dir, err.msg);
    assert_int_equal(m->cfg.vocab_rows, r.vocab);
    sx_engine_opts o = { .n_threads = 2, .max_seqs = 2, .kv_tokens = 256, .weight_mode = mode };
    if (sx_engine_new(m, &o, &e, &err))
        fail_msg("%s: %s", dir, err.msg);
    print_message("# path %s (%s, weight mode %d)\n", sx_engine_cpu_path(e), dir, mode);
    float *lg = malloc((size_t)r.n_rows * (size_t)r.vocab * sizeof *lg);
    assert_non_null(lg);
    int seq;
    assert_int_equal(sx_engine_seq_new(e, &seq, &err), 0);
    sx_step_item it = { .seq = seq, .tokens = r.ids, .n = r.n_rows, .logits_all = 1 };
    if (sx_engine_step(e, &it, 1, lg, &err))
        fail_msg("%s: %s", dir, err.msg);
    double worst = 0;
    for (int row = 0; row < r.n_rows; row++) {
        const float *l = lg + (size_t)row * r.vocab;
        for (int id = 0; id < r.vocab; id++) {
            double d = fabs(l[id] - ref_logit(&r, row, id));
            if (!(d <= worst))
                worst = d;
            if (!(d <= atol))
                fail_msg("%s mode %d: row %d id %d: %.5f, reference %.5f", dir, mode, row, id,
                         (double)l[id], ref_logit(&r, row, id));
        }
        if (ref_gap(&r, row) > gap_min && row >= r.n_prompt - 1)
            assert_int_equal(argmax(l, r.vocab), r.ids[row + 1]);
    }
    sx_engine_seq_free(e, seq);
    if (check_greedy) {
        assert_int_equal(sx_engine_seq_new(e, &seq, &err), 0);
        sx_step_item p = { .seq = seq, .tokens = r.ids, .n = r.n_prompt };
        assert_int_equal(sx_engine_step(e, &p, 1, lg, &err), 0);
        for (int i = 0; i < r.n_greedy; i++) {
            int32_t tok = argmax(lg, r.vocab);
            /* past a near tie of the reference, either choice is right and
             * the two continuations part */
            if (ref_gap(&r, r.n_prompt - 1 + i) <= gap_min) {
                print_message("  %s: greedy compared for %d steps (then a near tie)\n", dir, i);
                break;
            }
            if (tok != r.ids[r.n_prompt + i])
                fail_msg("%s mode %d: greedy step %d: %d, reference %d", dir, mode, i, tok,
                         r.ids[r.n_prompt + i]);
            sx_step_item d = { .seq = seq, .tokens = &tok, .n = 1 };
            assert_int_equal(sx_engine_step(e, &d, 1, lg, &err), 0);
        }
        sx_engine_seq_free(e, seq);
    }
    print_message("  %s weight mode %d: max |logit - reference| %.2e (tolerance %.1e)\n", dir,
                  mode, worst, atol);
    free(lg);
    free(r.ids);
    json_decref(r.root);
    sx_engine_free(e);
    sx_model_free(m);
    return worst;
}

static void test_awq_matches_reference(void **state)
{
    (void)state;
    sx_model *m = NULL;
    sx_error err;
    if (sx_model_load(QDIR "/awq", &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m->quant.method, SX_QUANT_AWQ);
    assert_int_equal(m->quant.group, 64);
    /* kept 4-bit: no bf16 copy of any layer matrix */
    for (int l = 0; l < m->cfg.n_layers; l++) {
        assert_null(m->layers[l].wq);
        assert_null(m->layers[l].w_down);
        for (int i = 0; i < SX_MAT_COUNT; i++)
            assert_non_null(m->layers[l].q4[i].q);
    }
    assert_int_equal(m->layers[0].q4[SX_MAT_DOWN].cols, m->cfg.intermediate);
    /* the unpacking (AWQ's nibble order, transposition, zeros, scales) is
     * exact: weights the fixture recorded, dequantised here */
    ref r;
    ref_load(QDIR "/awq", &r);
    json_t *pr = json_object_get(r.root, "probes");
    assert_true(json_array_size(pr) >= 8 * SX_MAT_COUNT);
    static const char *const mats[SX_MAT_COUNT] = {"q_proj", "k_proj", "v_proj", "o_proj",
                                                   "gate_proj", "up_proj", "down_proj"};
    for (size_t i = 0; i < json_array_size(pr); i++) {
        json_t *p = json_array_get(pr, i);
        const char *name = json_string_value(json_array_get(p, 0));
        int layer = atoi(name + strlen("model.layers.")), mi = -1;
        for (int k = 0; k < SX_MAT_COUNT; k++)
            if (strstr(name, mats[k]))
                mi = k;
        assert_true(mi >= 0 && layer >= 0 && layer < m->cfg.n_layers);
        const sx_q4_matrix *q = &m->layers[layer].q4[mi];
        int row = (int)json_integer_value(json_array_get(p, 1));
        int col = (int)json_integer_value(json_array_get(p, 2));
        int ng = q->cols / q->group, g = col / q->group;
        int nib = q->q[(size_t)row * (q->cols / 2) + col / 2] >> (4 * (col & 1)) & 15;
        double w = (nib - q->zero[row * ng + g]) * (double)sx_f16_to_f32(q->scale[row * ng + g]);
        if (w != json_number_value(json_array_get(p, 3)))
            fail_msg("%s [%d, %d]: %.8g, reference %.8g", name, row, col, w,
                     json_number_value(json_array_get(p, 3)));
    }
    free(r.ids);
    json_decref(r.root);
    sx_model_free(m);
    /* the layer matrices are the checkpoint's 4 bits in every mode; only
     * the lm_head follows it */
    /* the random fixture's logits reach +-23: int8 activations move them
     * by up to ~0.5 (2%), their differences much less: argmax and greedy
     * ids are held where the reference's top two are 0.2 apart (every
     * greedy step of the fixture) */
    check_model(QDIR "/awq", SX_W_BF16, 0.8, 0.2, 1);
    /* --q4 quantises the lm_head too: 1.74 measured on avx2 and scalar
     * (2026-12-07; "~2.0" was noted on the AMX machine when the fixture
     * was made).  Every path quantises q4 activations the same way
     * (sx_q4_quant_x) and sums integers exactly, so only f32 summation
     * order differs between paths; 2.5 is 1.4x the measured error and
     * 1.25x the older note (was 3.0) */
    check_model(QDIR "/awq", SX_W_Q4, 2.5, 6.0, 0);
}

static void test_fp8_matches_reference(void **state)
{
    (void)state;
    sx_model *m = NULL;
    sx_error err;
    if (sx_model_load(QDIR "/fp8", &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m->quant.method, SX_QUANT_FP8);
    assert_int_equal(m->quant.block[0], 128);
    assert_int_equal(m->quant.n_skip, 1);
    assert_non_null(m->layers[1].w_gate);
    assert_null(m->layers[1].q4[SX_MAT_GATE].q);
    sx_model_free(m);
    check_model(QDIR "/fp8", SX_W_BF16, 2e-3, 4e-3, 1);
    /* --int8 quantises the dequantised weights further, and on the AVX2
     * and scalar paths rounds the activations to int8 per 32 k (0.54
     * measured on logits of +-20 with f32 activations, 0.68 with int8
     * ones); --q4 from bf16 has its own tests */
    check_model(QDIR "/fp8", SX_W_INT8, 1.0, 2.0, 0);
}

/* AWQ panels + zero correction vs the dequantised matrix in f64, on every
 * path the CPU has (the kernels are the q4 ones; what is new is the
 * repacking and the correction) */
static void test_awq_panels_every_path(void **state)
{
    (void)state;
    enum { R = 72, K = 256, G = 128, NT = 5 };
    uint8_t *q = calloc(R * K / 2, 1), z[R * (K / G)];
    uint16_t sc[R * (K / G)];
    float x[NT * K];
    srand(7);
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++)
            q[(r * K + k) / 2] |= (uint8_t)((rand() % 16) << (4 * (k & 1)));
    for (int i = 0; i < R * (K / G); i++) {
        z[i] = (uint8_t)(rand() % 16);
        sc[i] = sx_f32_to_f16(0.001f + (float)(rand() % 1000) * 1e-5f);
    }
    for (int i = 0; i < NT * K; i++)
        x[i] = (float)(rand() % 2001 - 1000) / 500.0f;
    for (int path = 0; path < SX_CPU_PATHS; path++) {
        const sx_cpu_kernels *kr = sx_cpu_kernels_for(path);
        if (!kr)
            continue;
        uint8_t *wp = malloc(sx_pack_q4_size(R, K));
        float *zb = malloc((size_t)sx_pad_rows(R) * (K / G) * sizeof *zb);
        float *xp = malloc(sx_xpack_size(NT, K) * sizeof *xp);
        float y[NT * R];
        assert_true(wp && zb && xp);
        sx_pack_q4_awq(q, sc, z, R, K, G, 0, sx_pad_rows(R), wp, zb);
        for (int t = 0; t < NT; t++)
            sx_pack_x_row(x + t * K, t, NT, K, kr->tile, xp);
        /* in two row ranges, as the engine's threads split a matrix */
        kr->mm_q4(wp, K, xp, NT, y, R, 0, SX_PANEL, 0);
        sx_q4_zero_correct(zb, R, G, K, xp, NT, kr->tile, y, R, 0, SX_PANEL);
        kr->mm_q4(wp, K, xp, NT, y, R, SX_PANEL, R, 0);
        sx_q4_zero_correct(zb, R, G, K, xp, NT, kr->tile, y, R, SX_PANEL, R);
        double worst = 0;
        for (int t = 0; t < NT; t++)
            for (int r = 0; r < R; r++) {
                double want = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    int g = k / G, qv = q[(r * K + k) / 2] >> (4 * (k & 1)) & 15;
                    double w = (qv - z[r * (K / G) + g]) * (double)sx_f16_to_f32(sc[r * (K / G) + g]);
                    want += w * x[t * K + k];
                    mag += fabs(w * x[t * K + k]);
                }
                /* int8 activations: each term off by at most |w| * max|x| / 254 */
                double d = fabs(y[t * R + r] - want);
                if (d / (mag + 1e-9) > worst)
                    worst = d / (mag + 1e-9);
                if (!(d <= 0.01 * mag + 1e-4))
                    fail_msg("path %s token %d row %d: %.6f, reference %.6f", kr->name, t, r,
                             (double)y[t * R + r], want);
            }
        print_message("  path %s: worst |y - ref| / sum|w x| = %.2e\n", kr->name, worst);
        /* the engine's shared form: group sums of tokens [1, NT) and [0, 1)
         * computed apart, then applied to two row ranges -- the same bits */
        float y2[NT * R], xs[NT * (K / G)];
        kr->mm_q4(wp, K, xp, NT, y2, R, 0, R, 0);
        sx_q4_group_sums(xp, NT, kr->tile, K, G, 1, NT, xs + K / G);
        sx_q4_group_sums(xp, NT, kr->tile, K, G, 0, 1, xs);
        sx_q4_zero_apply(zb, R, G, K, xs, NT, y2, R, 0, SX_PANEL);
        sx_q4_zero_apply(zb, R, G, K, xs, NT, y2, R, SX_PANEL, R);
        assert_memory_equal(y, y2, sizeof y);
        free(wp);
        free(zb);
        free(xp);
    }
    free(q);
}

static void expect_qerr(const char *qc, const char *field)
{
    char json[1024];
    sx_quant_config c;
    sx_error err;
    snprintf(json, sizeof json, "{\"quantization_config\": %s}", qc);
    int rc = sx_quant_config_parse(json, strlen(json), &c, &err);
    if (!rc)
        fail_msg("accepted: %s", qc);
    if (!strstr(err.msg, field))
        fail_msg("%s: message \"%s\" does not name %s", qc, err.msg, field);
}

static void test_quant_config_errors(void **state)
{
    (void)state;
    sx_quant_config c;
    sx_error err;
    const char *none = "{\"hidden_size\": 1}";
    assert_int_equal(sx_quant_config_parse(none, strlen(none), &c, &err), 0);
    assert_int_equal(c.method, SX_QUANT_NONE);
    const char *awq = "{\"quantization_config\": {\"bits\": 4, \"group_size\": 128, "
                      "\"modules_to_not_convert\": null, \"quant_method\": \"awq\", "
                      "\"version\": \"gemm\", \"zero_point\": true}}";
    assert_int_equal(sx_quant_config_parse(awq, strlen(awq), &c, &err), 0);
    assert_int_equal(c.method, SX_QUANT_AWQ);
    assert_int_equal(c.group, 128);
    const char *fp8 = "{\"quantization_config\": {\"activation_scheme\": \"dynamic\", "
                      "\"modules_to_not_convert\": [\"lm_head\"], \"fmt\": \"e4m3\", "
                      "\"quant_method\": \"fp8\", \"weight_block_size\": [128, 64]}}";
    assert_int_equal(sx_quant_config_parse(fp8, strlen(fp8), &c, &err), 0);
    assert_int_equal(c.method, SX_QUANT_FP8);
    assert_int_equal(c.block[1], 64);
    assert_string_equal(c.skip[0], "lm_head");

#define AWQ(x) "{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 128" x "}"
    expect_qerr("{\"quant_method\": \"gptq\", \"bits\": 4}", "quant_method");
    expect_qerr("{\"bits\": 4}", "quant_method");
    expect_qerr("[1]", "quantization_config");
    expect_qerr("{\"quant_method\": \"awq\", \"bits\": 8, \"group_size\": 128}", "bits");
    expect_qerr("{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 100}", "group_size");
    expect_qerr("{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": -1}", "group_size");
    expect_qerr("{\"quant_method\": \"awq\", \"bits\": 4}", "group_size");
    expect_qerr(AWQ(", \"zero_point\": false"), "zero_point");
    expect_qerr(AWQ(", \"version\": \"gemv\""), "version");
    expect_qerr(AWQ(", \"backend\": \"autoawq\""), "backend");
    expect_qerr(AWQ(", \"modules_to_not_convert\": 5"), "modules_to_not_convert");
    expect_qerr(AWQ(", \"modules_to_not_convert\": [\"\"]"), "modules_to_not_convert");
#define FP8(x) "{\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]" x "}"
    expect_qerr(FP8(", \"fmt\": \"e5m2\""), "fmt");
    expect_qerr(FP8(", \"activation_scheme\": \"static\""), "activation_scheme");
    expect_qerr(FP8(", \"bits\": 8"), "bits");
    expect_qerr("{\"quant_method\": \"fp8\"}", "weight_block_size");
    expect_qerr("{\"quant_method\": \"fp8\", \"weight_block_size\": [128]}", "weight_block_size");
    expect_qerr("{\"quant_method\": \"fp8\", \"weight_block_size\": [0, 128]}",
                "weight_block_size");
}

/* copies fixture DIR to a temp dir with one header entry's "dtype" or
 * "shape" replaced by the JSON text VAL (the data bytes kept), and
 * config.json's quantization_config replaced by the JSON text QC ("DELETE"
 * removes it) */
static const char *mutate_shape; /* also set "shape" (once) */

static void mutate(const char *dir, const char *tensor, const char *key, const char *val,
                   const char *qc, char *out)
{
    char path[512], *buf = NULL, *cfg = NULL;
    size_t len, clen;
    sx_error err;
    strcpy(out, "/tmp/strux-test-quant.XXXXXX");
    assert_non_null(mkdtemp(out));
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_int_equal(sx_file_read(path, &buf, &len, &err), 0);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | (unsigned char)buf[i];
    json_t *h = json_loadb(buf + 8, (size_t)hl, 0, NULL);
    assert_non_null(h);
    if (tensor) {
        json_t *e = json_object_get(h, tensor);
        assert_non_null(e);
        json_object_set_new(e, key, json_loads(val, JSON_DECODE_ANY, NULL));
        if (mutate_shape)
            json_object_set_new(e, "shape", json_loads(mutate_shape, 0, NULL));
        mutate_shape = NULL;
    }
    char *hs = json_dumps(h, JSON_COMPACT);
    size_t nh = strlen(hs), pad = (8 - nh % 8) % 8;
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t nl = nh + pad;
    for (int i = 0; i < 8; i++)
        fputc((int)(nl >> (8 * i) & 0xff), f);
    fwrite(hs, 1, nh, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    fwrite(buf + 8 + hl, 1, len - 8 - hl, f);
    fclose(f);
    free(hs);
    json_decref(h);
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(sx_file_read(path, &cfg, &clen, &err), 0);
    json_t *c = json_loadb(cfg, clen, 0, NULL);
    assert_non_null(c);
    if (qc && !strcmp(qc, "DELETE"))
        json_object_del(c, "quantization_config");
    else if (qc)
        json_object_set_new(c, "quantization_config", json_loads(qc, 0, NULL));
    snprintf(path, sizeof path, "%s/config.json", out);
    assert_int_equal(json_dump_file(c, path, 0), 0);
    json_decref(c);
    free(cfg);
    free(buf);
}

static void expect_load_error(const char *dir, const char *tensor, const char *key,
                              const char *val, const char *qc, const char *want1,
                              const char *want2)
{
    char tmp[64], path[128];
    sx_model *m = NULL;
    sx_error err;
    mutate(dir, tensor, key, val, qc, tmp);
    int rc = sx_model_load(tmp, &m, &err);
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", tmp);
    unlink(path);
    rmdir(tmp);
    if (!rc) {
        sx_model_free(m);
        fail_msg("loaded despite %s %s = %s", tensor ? tensor : "config", key ? key : "", val);
    }
    assert_null(m);
    if (!strstr(err.msg, want1) || (want2 && !strstr(err.msg, want2)))
        fail_msg("message \"%s\" lacks \"%s\" / \"%s\"", err.msg, want1, want2 ? want2 : "");
}

static void test_bad_tensors(void **state)
{
    (void)state;
    const char *L = "model.layers.1.mlp.down_proj.";
    char t[128];
    /* AWQ: dtype of scales (same bytes), shapes (same bytes, other dims) */
    snprintf(t, sizeof t, "%sscales", L);
    expect_load_error(QDIR "/awq", t, "dtype", "\"BF16\"", NULL, "expected F16 got BF16",
                      "down_proj.scales");
    snprintf(t, sizeof t, "%sqzeros", L);
    expect_load_error(QDIR "/awq", t, "shape", "[16, 4]", NULL, "expected [4, 16]", "got [16, 4]");
    snprintf(t, sizeof t, "%sqweight", L);
    expect_load_error(QDIR "/awq", t, "shape", "[128, 32]", NULL, "expected [256, 16]",
                      "got [128, 32]");
    /* the config and the files disagree */
    expect_load_error(QDIR "/awq", NULL, NULL, "",
                      "{\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]}",
                      "q_proj.weight: missing", NULL);
    expect_load_error(QDIR "/awq", NULL, NULL, "", "DELETE", "qweight", "quantization_config");
    /* FP8: scales' shape, block size, bad config, a plain tensor of a
     * quantised dtype */
    snprintf(t, sizeof t, "%sweight_scale_inv", L);
    expect_load_error(QDIR "/fp8", t, "shape", "[2, 1]", NULL, "expected [1, 2]", "got [2, 1]");
    expect_load_error(QDIR "/fp8", NULL, NULL, "",
                      "{\"quant_method\": \"fp8\", \"weight_block_size\": [64, 128]}",
                      "weight_scale_inv: shape expected", NULL);
    expect_load_error(QDIR "/fp8", NULL, NULL, "",
                      "{\"quant_method\": \"awq\", \"bits\": 5, \"group_size\": 64}",
                      "quantization_config.bits", NULL);
    snprintf(t, sizeof t, "%sweight", L);
    expect_load_error(QDIR "/fp8", t, "dtype", "\"I8\"", NULL, "I8", "not supported");
    mutate_shape = "[264, 64]";   /* the same bytes as I32 */
    expect_load_error(QDIR "/fp8", "lm_head.weight", "dtype", "\"I32\"", NULL,
                      "lm_head.weight: dtype expected BF16, F16 or F32 got I32", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quant_config_errors),
        cmocka_unit_test(test_awq_panels_every_path),
        cmocka_unit_test(test_bad_tensors),
        cmocka_unit_test(test_awq_matches_reference),
        cmocka_unit_test(test_fp8_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
