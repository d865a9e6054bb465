/* Speculative decoding (engine/gen_spec*.c) on small random-weight Qwen3
 * models with the real tokenizer: the output is the same token for token
 * as plain decoding -- greedy and sampled, with and without a grammar, for
 * prompt lookup and for draft models (one equal to the target: every
 * draft accepted; one with other weights: most rejected, so the rollback
 * path runs), alone and batched with plain requests -- and every
 * constrained output validates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/tokenizer/tokenizer.h"
#include "engine/cpu/engine.h"
#include "engine/generate.h"
#include "engine/model/model.h"
#include "grammar/grammar.h"
#include "grammar/validator/validator.h"

static sx_tokenizer *TOK;
static sx_vocab *VOC;
static sx_model *MODEL, *OTHER;
static sx_backend *ENG, *SAME, *DIFF; /* target; drafts: same weights, other weights */
static char DIR_[256], DIR2[256];

typedef struct result {
    sx_bytes text;
    sx_ids ids;
    int done, finish;
    int code;      /* the error's code and message when finish is SX_FINISH_ERROR */
    char msg[256];
} result;

static void on_event(const sx_gen_event *ev, void *ctx)
{
    result *r = (result *)ev->user;
    (void)ctx;
    if (ev->piece_len)
        assert_int_equal(sx_bytes_append(&r->text, ev->piece, ev->piece_len), 0);
    if (!ev->done) {
        assert_int_equal(sx_ids_push(&r->ids, ev->token), 0);
        return;
    }
    r->done = 1;
    r->finish = ev->finish;
    if (ev->finish == SX_FINISH_ERROR) {
        r->code = ev->error.code;
        snprintf(r->msg, sizeof r->msg, "%s", ev->error.msg);
    }
}

static void result_free(result *r)
{
    sx_bytes_free(&r->text);
    sx_ids_free(&r->ids);
    memset(r, 0, sizeof *r);
}

static int new_engine(sx_model *m, sx_backend **e)
{
    sx_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = 2;
    eo.max_seqs = 16;
    eo.kv_tokens = 16384;
    sx_error err;
    if (sx_backend_open("cpu", m, &eo, e, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

static int setup(void **state)
{
    (void)state;
    const char *shared = getenv("STRUX_SHARED");
    char tp[1024];
    snprintf(tp, sizeof tp, "%s/qwen3-tokenizer/tokenizer.json", shared ? shared : "../shared");
    sx_error err;
    if (sx_tok_load(tp, &TOK, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    sx_tok_set_n_rows(TOK, 151936);
    if (sx_tok_make_vocab(TOK, &VOC, &err))
        return -1;
    sx_qwen3_config cfg;
    if (sx_qwen3_shape("tiny", &cfg, &err))
        return -1;
    snprintf(DIR_, sizeof DIR_, "/tmp/strux_test_spec_%d", (int)getpid());
    snprintf(DIR2, sizeof DIR2, "/tmp/strux_test_spec_draft_%d", (int)getpid());
    if (sx_model_write_random(&cfg, 7, DIR_, NULL, &err) || sx_model_load(DIR_, &MODEL, &err) ||
        sx_model_write_random(&cfg, 8, DIR2, NULL, &err) || sx_model_load(DIR2, &OTHER, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return new_engine(MODEL, &ENG) || new_engine(MODEL, &SAME) || new_engine(OTHER, &DIFF);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    sx_backend_close(ENG);
    sx_backend_close(SAME);
    sx_backend_close(DIFF);
    sx_model_free(MODEL);
    sx_model_free(OTHER);
    sx_vocab_free(VOC);
    sx_tok_free(TOK);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", DIR_, DIR2);
    return system(cmd) == 0 ? 0 : -1;
}

static void encode_prompt(const char *user, sx_ids *ids)
{
    sx_chat_msg m[2] = {{"system", "Reply with JSON."}, {"user", user}};
    assert_int_equal(sx_chat_encode(TOK, m, 2, 1, ids, NULL), 0);
}

static void run_all(sx_gen *g)
{
    int live = 1, steps = 0;
    sx_error err;
    while (live > 0) {
        if (sx_gen_step(g, &live, &err))
            fail_msg("sx_gen_step: %s", err.msg);
        assert_true(++steps < 5000);
    }
}

static int validates(const json_t *schema, const sx_bytes *text)
{
    json_error_t je;
    json_t *inst = json_loadb(text->v ? text->v : "", text->n, JSON_DECODE_ANY, &je);
    if (!inst)
        return 0;
    sx_validator *val;
    int valid = 0;
    assert_int_equal(sx_val_compile(schema, NULL, &val, NULL), 0);
    assert_int_equal(sx_val_validate(val, inst, &valid, NULL), 0);
    sx_val_free(val);
    json_decref(inst);
    return valid;
}

static const char *SCHEMAS[] = {
    "schemas/invoice.json", "schemas/contact_card.json", "schemas/support_ticket.json",
    "schemas/sentiment_labels.json",
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":12},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150}},\"required\":[\"name\",\"age\"],"
    "\"additionalProperties\":false}",
    "{\"type\":\"array\",\"items\":{\"enum\":[\"red\",\"green\",\"blue\"]},\"minItems\":2,\"maxItems\":6}",
    NULL, /* unconstrained */
};
#define N_SCHEMAS ((int)(sizeof SCHEMAS / sizeof *SCHEMAS))

/* Repetitive prompts give prompt lookup something to find. */
static const char *PROMPTS[] = {
    "Extract the record from: Jane Doe, 41, jane@example.com, order ABC-1234. Jane Doe, 41.",
    "red green blue red green blue red green blue, and again: red green blue",
    "Ticket: printer on floor 3 is jammed again; printer on floor 3 is jammed again.",
};
#define N_PROMPTS ((int)(sizeof PROMPTS / sizeof *PROMPTS))

typedef struct variant {
    int spec, k;
    sx_backend *draft;
    float temperature;
} variant;

/* Runs (schema, prompt) under each variant in one sx_gen each and returns
 * its result; variant 0 is the plain reference. */
static void run_one(const sx_grammar *gr, const sx_ids *p, const variant *v, int max_tokens,
                    uint64_t seed, result *r, int64_t *drafted, int64_t *accepted)
{
    sx_gen *g;
    sx_error err;
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
    if (v->draft && sx_gen_set_draft(g, v->draft, &err))
        fail_msg("set_draft: %s", err.msg);
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.sampling.temperature = v->temperature;
    gp.sampling.seed = seed;
    gp.grammar = gr;
    gp.max_tokens = max_tokens;
    gp.speculate = v->spec;
    gp.draft_k = v->k;
    if (sx_gen_add(g, p->v, (int)p->n, &gp, r, NULL, &err))
        fail_msg("add: %s", err.msg);
    run_all(g);
    assert_int_equal(r->done, 1);
    int64_t d, a;
    sx_gen_spec_stats(g, &d, &a);
    *drafted += d;
    *accepted += a;
    sx_gen_free(g);
}

static sx_grammar *compile(const char *src, json_t **schema)
{
    json_error_t je;
    *schema = NULL;
    if (!src)
        return NULL;
    *schema = src[0] == '{' ? json_loads(src, 0, &je) : json_load_file(src, 0, &je);
    if (!*schema)
        fail_msg("schema %s: %s", src, je.text);
    sx_grammar *gr;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    sx_error err;
    if (sx_gr_compile_json(VOC, *schema, &o, &gr, &err))
        fail_msg("compile: %s", err.msg);
    return gr;
}

static void check_identity(float temperature, int stride)
{
    const variant vs[] = {
        {SX_SPEC_OFF, 0, NULL, temperature},  {SX_SPEC_NGRAM, 4, NULL, temperature},
        {SX_SPEC_NGRAM, 2, NULL, temperature}, {SX_SPEC_DRAFT, 4, SAME, temperature},
        {SX_SPEC_DRAFT, 3, DIFF, temperature},
    };
    int nv = (int)(sizeof vs / sizeof *vs);
    int64_t drafted[8] = {0}, accepted[8] = {0};
    int compared = 0;
    for (int k = 0; k < N_SCHEMAS; k++) {
        json_t *schema;
        sx_grammar *gr = compile(SCHEMAS[k], &schema);
        for (int pi = 0; pi < N_PROMPTS; pi++) {
            /* pairs are spread when time is short; each schema still runs */
            if ((k + pi) % (getenv("STRUX_LIGHT") ? 2 * stride : stride))
                continue;
            sx_ids p = {0};
            encode_prompt(PROMPTS[pi], &p);
            int budget = gr ? 48 : 20;
            result ref;
            memset(&ref, 0, sizeof ref);
            run_one(gr, &p, &vs[0], budget, (uint64_t)(7 * k + pi), &ref, &drafted[0],
                    &accepted[0]);
            if (gr && ref.finish == SX_FINISH_STOP)
                assert_true(validates(schema, &ref.text));
            for (int vi = 1; vi < nv; vi++) {
                result r;
                memset(&r, 0, sizeof r);
                run_one(gr, &p, &vs[vi], budget, (uint64_t)(7 * k + pi), &r, &drafted[vi],
                        &accepted[vi]);
                if (r.ids.n != ref.ids.n ||
                    memcmp(r.ids.v, ref.ids.v, ref.ids.n * sizeof *ref.ids.v) ||
                    r.finish != ref.finish)
                    fail_msg("schema %d prompt %d variant %d (T=%.1f): '%.*s' != plain '%.*s'", k,
                             pi, vi, (double)temperature, (int)r.text.n, r.text.v,
                             (int)ref.text.n, ref.text.v);
                compared++;
                result_free(&r);
            }
            result_free(&ref);
            sx_ids_free(&p);
        }
        sx_gr_free(gr);
        json_decref(schema);
    }
    print_message("T=%.1f: %d runs equal to plain decoding; accepted/drafted:", (double)temperature,
                  compared);
    for (int vi = 1; vi < nv; vi++)
        print_message(" %lld/%lld", (long long)accepted[vi], (long long)drafted[vi]);
    print_message("\n");
    for (int vi = 1; vi < nv; vi++)
        assert_true(drafted[vi] > 0); /* speculation did happen */
    /* a draft equal to the target is always right when greedy */
    if (temperature == 0.0f)
        assert_true(accepted[3] * 10 >= drafted[3] * 9);
    /* other weights are mostly wrong: rejections (and rollbacks) happened */
    assert_true(accepted[4] < drafted[4]);
}

static void greedy_is_identical(void **state)
{
    (void)state;
    check_identity(0.0f, 1);
}

static void sampling_is_identical(void **state)
{
    (void)state;
    check_identity(0.9f, 3);
}

/* Speculating and plain requests batched together, one sx_gen: each output
 * equals its request run alone without speculation. */
static void batched_with_plain(void **state)
{
    (void)state;
    json_t *schema;
    sx_grammar *gr = compile(SCHEMAS[1], &schema);
    sx_ids p[3] = {{0}};
    for (int i = 0; i < 3; i++)
        encode_prompt(PROMPTS[i], &p[i]);
    result alone[6], together[6];
    memset(alone, 0, sizeof alone);
    memset(together, 0, sizeof together);
    int64_t d = 0, a = 0;
    variant plain = {SX_SPEC_OFF, 0, NULL, 0.7f};
    for (int i = 0; i < 6; i++)
        run_one(i % 2 ? gr : NULL, &p[i % 3], &plain, 40, (uint64_t)i, &alone[i], &d, &a);
    sx_gen *g;
    sx_error err;
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
    assert_int_equal(sx_gen_set_draft(g, DIFF, NULL), 0);
    for (int i = 0; i < 6; i++) {
        sx_gen_params gp;
        memset(&gp, 0, sizeof gp);
        sx_sampling_default(&gp.sampling);
        gp.sampling.temperature = 0.7f;
        gp.sampling.seed = (uint64_t)i;
        gp.grammar = i % 2 ? gr : NULL;
        gp.max_tokens = 40;
        gp.speculate = i % 3;   /* off, ngram, draft */
        gp.draft_k = 1 + i;
        if (sx_gen_add(g, p[i % 3].v, (int)p[i % 3].n, &gp, &together[i], NULL, &err))
            fail_msg("add: %s", err.msg);
    }
    run_all(g);
    sx_gen_spec_stats(g, &d, &a);
    assert_true(d > 0);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(together[i].ids.n, alone[i].ids.n);
        assert_memory_equal(together[i].ids.v, alone[i].ids.v, alone[i].ids.n * sizeof(int32_t));
        if (i % 2 && together[i].finish == SX_FINISH_STOP)
            assert_true(validates(schema, &together[i].text));
        result_free(&alone[i]);
        result_free(&together[i]);
    }
    sx_gen_free(g);
    for (int i = 0; i < 3; i++)
        sx_ids_free(&p[i]);
    sx_gr_free(gr);
    json_decref(schema);
}

/* The request's mask deadline holds while drafting too: passed before the
 * first step, each speculative mode finishes with SX_ELIMIT naming the
 * deadline and no token, beside a request without one that runs. */
static void mask_deadline(void **state)
{
    (void)state;
    json_t *schema;
    sx_grammar *gr = compile(SCHEMAS[1], &schema);
    sx_ids p = {0};
    encode_prompt(PROMPTS[0], &p);
    for (int spec = SX_SPEC_NGRAM; spec <= SX_SPEC_DRAFT; spec++) {
        sx_gen *g;
        assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
        assert_int_equal(sx_gen_set_draft(g, SAME, NULL), 0);
        result r[2];
        memset(r, 0, sizeof r);
        for (int i = 0; i < 2; i++) {
            sx_gen_params gp;
            memset(&gp, 0, sizeof gp);
            sx_sampling_default(&gp.sampling);
            gp.grammar = gr;
            gp.max_tokens = 12;
            gp.speculate = spec;
            gp.draft_k = 4;
            if (i) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                gp.deadline_ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6 - 1;
            }
            assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, &r[i], NULL, NULL), 0);
        }
        run_all(g);
        assert_int_not_equal(r[0].finish, SX_FINISH_ERROR);
        assert_int_equal(r[1].finish, SX_FINISH_ERROR);
        assert_int_equal(r[1].code, SX_ELIMIT);
        assert_non_null(strstr(r[1].msg, "deadline"));
        assert_int_equal(r[1].ids.n, 0);
        result_free(&r[0]);
        result_free(&r[1]);
        sx_gen_free(g);
    }
    sx_ids_free(&p);
    sx_gr_free(gr);
    json_decref(schema);
}

/* Bad params are refused with a message. */
static void params_are_checked(void **state)
{
    (void)state;
    sx_gen *g;
    sx_error err;
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
    sx_ids p = {0};
    encode_prompt("x", &p);
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.max_tokens = 8;
    gp.speculate = SX_SPEC_DRAFT; /* no draft model set */
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, NULL, NULL, &err), SX_EINVAL);
    gp.speculate = SX_SPEC_NGRAM;
    gp.draft_k = 17;
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, NULL, NULL, &err), SX_EINVAL);
    gp.speculate = 9;
    gp.draft_k = 4;
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, NULL, NULL, &err), SX_EINVAL);
    assert_int_equal(sx_gen_speculate_parse("ngram"), SX_SPEC_NGRAM);
    assert_int_equal(sx_gen_speculate_parse("draft"), SX_SPEC_DRAFT);
    assert_int_equal(sx_gen_speculate_parse("off"), SX_SPEC_OFF);
    assert_int_equal(sx_gen_speculate_parse("medusa"), -1);
    sx_ids_free(&p);
    sx_gen_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(params_are_checked),
        cmocka_unit_test(greedy_is_identical),
        cmocka_unit_test(sampling_is_identical),
        cmocka_unit_test(batched_with_plain),
        cmocka_unit_test(mask_deadline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
