/* sx_beam_run on the random tiny Qwen3 (seed 1, the full 151,936-row
 * vocabulary):
 *  - transformers' beam search: the ids and sequence scores that
 *    tests/fixtures/beam_ref.json (tests/fixtures/gen_beam_fixtures.py)
 *    records for generate(num_beams, length_penalty, early_stopping,
 *    num_return_sequences) over several beams, penalties, prompt lengths and
 *    end-token sets, and settings where the three early_stopping rules give
 *    different answers;
 *  - under a grammar: every returned sequence is allowed token by token by
 *    a fresh matcher, ends in a complete document, and validates;
 *  - the prompt's KV cache is prefilled once and shared by the beams;
 *  - bad parameters are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/beam.h"
#include "engine/cpu/engine.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/grammar.h"
#include "grammar/validator/validator.h"
#include "tests/unit/helpers/sha256.h"

#define REF "tests/fixtures/beam_ref.json"

static sx_model *MODEL;
static sx_backend *ENG;
static sx_tokenizer *TOK;
static sx_vocab *VOC;
static json_t *DOC;
static char DIR_[256];
static char SHA[65];

static int setup(void **state)
{
    (void)state;
    sx_error err;
    json_error_t je;
    DOC = json_load_file(REF, 0, &je);
    if (!DOC) {
        fprintf(stderr, "%s: %s\n", REF, je.text);
        return -1;
    }
    const char *shared = getenv("STRUX_SHARED");
    char tp[1024];
    snprintf(tp, sizeof tp, "%s/qwen3-tokenizer/tokenizer.json", shared ? shared : "../shared");
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
    snprintf(DIR_, sizeof DIR_, "/tmp/strux_test_beam_%d", (int)getpid());
    char st[300];
    snprintf(st, sizeof st, "%s/model.safetensors", DIR_);
    if (sx_model_write_random(&cfg, 1, DIR_, NULL, &err) || th_sha256_file(st, SHA) ||
        sx_model_load(DIR_, &MODEL, &err)) {
        fprintf(stderr, "model: %s\n", err.msg);
        return -1;
    }
    sx_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = 2;
    eo.max_seqs = 16;
    eo.kv_tokens = 8192;
    if (sx_backend_open("cpu", MODEL, &eo, &ENG, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    sx_backend_close(ENG);
    sx_model_free(MODEL);
    sx_vocab_free(VOC);
    sx_tok_free(TOK);
    json_decref(DOC);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", DIR_);
    return system(cmd) == 0 ? 0 : -1;
}

static int32_t *jids(const json_t *a, int *n)
{
    *n = (int)json_array_size(a);
    int32_t *v = malloc(((size_t)*n + 1) * sizeof *v);
    assert_non_null(v);
    for (int i = 0; i < *n; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(a, (size_t)i));
    return v;
}

static int early_of(const json_t *j)
{
    if (json_is_string(j))
        return SX_BEAM_EARLY_NEVER;
    return json_is_true(j) ? SX_BEAM_EARLY_TRUE : SX_BEAM_EARLY_FALSE;
}

static void matches_transformers(void **state)
{
    (void)state;
    const char *want = json_string_value(json_object_get(json_object_get(DOC, "model"),
                                                         "safetensors_sha256"));
    if (!want || strcmp(want, SHA))
        fail_msg("the random-model writer changed (sha256 %s, fixture made from %s): "
                 "regenerate tests/fixtures/beam_ref.json", SHA, want ? want : "?");
    const json_t *cases = json_object_get(DOC, "cases");
    assert_true(json_array_size(cases) >= 30);
    int with_eos_end = 0, shorter = 0;
    for (size_t ci = 0; ci < json_array_size(cases); ci++) {
        const json_t *c = json_array_get(cases, ci);
        const char *name = json_string_value(json_object_get(c, "name"));
        int n_prompt, n_eos;
        int32_t *prompt = jids(json_object_get(c, "prompt"), &n_prompt);
        int32_t *eos = jids(json_object_get(c, "eos"), &n_eos);
        sx_beam_params p = {
            .num_beams = (int)json_integer_value(json_object_get(c, "num_beams")),
            .num_return = (int)json_integer_value(json_object_get(c, "num_return_sequences")),
            .length_penalty = (float)json_number_value(json_object_get(c, "length_penalty")),
            .early_stopping = early_of(json_object_get(c, "early_stopping")),
            .max_tokens = (int)json_integer_value(json_object_get(c, "max_new_tokens")),
            .eos = eos,
            .n_eos = n_eos,
        };
        sx_beam_result r;
        sx_error err;
        if (sx_beam_run(ENG, prompt, n_prompt, &p, &r, &err))
            fail_msg("%s: %s", name, err.msg);
        const json_t *seqs = json_object_get(c, "sequences"), *scores = json_object_get(c, "scores");
        if ((size_t)r.n != json_array_size(seqs))
            fail_msg("%s: %d sequences, transformers returned %zu", name, r.n, json_array_size(seqs));
        for (int i = 0; i < r.n; i++) {
            int n;
            int32_t *ids = jids(json_array_get(seqs, (size_t)i), &n);
            int same = n == r.seqs[i].n && !memcmp(ids, r.seqs[i].ids, (size_t)n * sizeof *ids);
            if (!same) {
                char got[512] = "", exp[512] = "";
                for (int k = 0; k < r.seqs[i].n && strlen(got) < 480; k++)
                    snprintf(got + strlen(got), sizeof got - strlen(got), " %d", (int)r.seqs[i].ids[k]);
                for (int k = 0; k < n && strlen(exp) < 480; k++)
                    snprintf(exp + strlen(exp), sizeof exp - strlen(exp), " %d", (int)ids[k]);
                fail_msg("%s: sequence %d is [%s ], transformers [%s ]", name, i, got, exp);
            }
            double s = json_number_value(json_array_get(scores, (size_t)i));
            if (fabs(r.seqs[i].score - s) > 1e-3 * fabs(s) + 1e-6)
                fail_msg("%s: sequence %d scores %.6f, transformers %.6f", name, i,
                         (double)r.seqs[i].score, s);
            for (int k = 0; k < n_eos; k++)
                with_eos_end += r.seqs[i].ids[n - 1] == eos[k];
            shorter += n < p.max_tokens;
            free(ids);
        }
        sx_beam_result_free(&r);
        free(prompt);
        free(eos);
    }
    /* the fixture exercises hypotheses that end early, not only budget cuts */
    assert_true(with_eos_end >= 10);
    assert_true(shorter >= 10);
}

/* decodes ids (an ending end-of-turn token left out) into text */
static char *text_of(const sx_beam_seq *s, size_t *len)
{
    sx_bytes b = {0};
    for (int i = 0; i < s->n; i++) {
        size_t n;
        const char *piece = sx_tok_bytes(TOK, s->ids[i], &n);
        if (i == s->n - 1 && (s->ids[i] == sx_tok_find(TOK, "<|im_end|>", 10) ||
                              s->ids[i] == sx_tok_find(TOK, "<|endoftext|>", 13)))
            break;
        assert_non_null(piece);
        assert_int_equal(sx_bytes_append(&b, piece, n), 0);
    }
    assert_int_equal(sx_bytes_append(&b, "", 1), 0);
    *len = b.n - 1;
    return b.v;
}

/* Every schema, B = 2 and 4, every sequence checked token by token and
 * validated.  max_tokens < 0: tight budgets, -max_tokens tokens beyond each
 * schema's shortest document (at most); steer: pass the tokenizer. */
static int run_constrained(int max_tokens, int steer)
{
    static const char *schemas[] = {
        "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},"
        "\"n\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":99}},\"required\":[\"ok\",\"n\"],"
        "\"additionalProperties\":false}",
        "{\"enum\":[\"red\",\"green\",\"blue\",\"yellow\"]}",
        "{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":-9,\"maximum\":999},"
        "\"minItems\":1,\"maxItems\":3}",
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":6},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]},\"maxItems\":2}},"
        "\"required\":[\"name\",\"tags\"],\"additionalProperties\":false}",
        "{\"type\":\"string\",\"pattern\":\"^[0-9]{3}-[a-z]{2}$\"}",
    };
    int32_t eos[2] = {sx_tok_find(TOK, "<|im_end|>", 10), sx_tok_find(TOK, "<|endoftext|>", 13)};
    sx_ids prompt = {0};
    sx_chat_msg m[2] = {{"system", "Reply with JSON."}, {"user", "Give me one value."}};
    assert_int_equal(sx_chat_encode(TOK, m, 2, 1, &prompt, NULL), 0);
    int checked = 0;
    for (size_t si = 0; si < sizeof schemas / sizeof *schemas; si++) {
        sx_gr_opts o;
        sx_gr_opts_default(&o);
        o.ws_mode = SX_WS_COMPACT;
        sx_grammar *gr = NULL;
        sx_error err;
        if (sx_gr_compile_schema(VOC, schemas[si], strlen(schemas[si]), &o, &gr, &err))
            fail_msg("schema %zu: %s", si, err.msg);
        json_error_t je;
        json_t *schema = json_loads(schemas[si], 0, &je);
        sx_validator *val = NULL;
        assert_int_equal(sx_val_compile(schema, NULL, &val, &err), 0);
        for (int b = 2; b <= 4; b += 2) {
            int budget = max_tokens;
            if (budget < 0) {
                /* the shortest document's tokens, plus the slack */
                sx_matcher *m0 = NULL;
                uint8_t buf[4096];
                assert_int_equal(sx_matcher_new(gr, &m0, &err), 0);
                size_t nb = sx_matcher_shortest_completion(m0, buf, sizeof buf);
                sx_matcher_free(m0);
                assert_true(nb > 0 && nb < sizeof buf);
                sx_ids t0 = {0};
                assert_int_equal(sx_tok_encode(TOK, (const char *)buf, nb, 0, &t0, NULL), 0);
                budget = (int)t0.n + (-max_tokens - 1);
                sx_ids_free(&t0);
            }
            sx_beam_params p = {.num_beams = b, .num_return = b, .length_penalty = 1.0f,
                                .early_stopping = SX_BEAM_EARLY_TRUE, .max_tokens = budget,
                                .eos = eos, .n_eos = 2, .grammar = gr,
                                .tok = steer ? TOK : NULL};
            sx_beam_result r;
            if (sx_beam_run(ENG, prompt.v, (int)prompt.n, &p, &r, &err))
                fail_msg("schema %zu: %s", si, err.msg);
            assert_true(r.n >= 1);
            for (int i = 0; i < r.n; i++) {
                const sx_beam_seq *s = &r.seqs[i];
                if (i > 0)
                    assert_true(s->score <= r.seqs[i - 1].score);
                if (s->finish != SX_BEAM_STOP) {
                    size_t len;
                    char *t = text_of(s, &len);
                    if (!steer) {   /* what the budget rule exists for */
                        free(t);
                        sx_beam_result_free(&r);
                        sx_val_free(val);
                        json_decref(schema);
                        sx_gr_free(gr);
                        sx_ids_free(&prompt);
                        return -1;
                    }
                    fail_msg("schema %zu beams %d: sequence %d cut by the budget (%d tokens): %s",
                             si, b, i, budget, t);
                }
                assert_true(s->n <= budget);
                /* token by token allowed by a fresh matcher, complete at the end */
                sx_matcher *mt = NULL;
                assert_int_equal(sx_matcher_new(gr, &mt, &err), 0);
                int ended_by_eos = s->ids[s->n - 1] == eos[0] || s->ids[s->n - 1] == eos[1];
                for (int k = 0; k < s->n; k++) {
                    if (k == s->n - 1 && ended_by_eos)
                        assert_true(sx_matcher_can_end(mt));   /* EOS only where it may end */
                    if (sx_matcher_accept(mt, s->ids[k], &err))
                        fail_msg("schema %zu beam %d: token %d at %d refused: %s", si, i,
                                 (int)s->ids[k], k, err.msg);
                }
                /* a beam ends when its document is complete, not later (or,
                 * closed at the very end of the budget, where it may end) */
                if (!ended_by_eos)
                    assert_true(sx_matcher_is_complete(mt) ||
                                (s->n == budget && sx_matcher_can_end(mt)));
                sx_matcher_free(mt);
                size_t len;
                char *text = text_of(s, &len);
                json_t *inst = json_loadb(text, len, JSON_DECODE_ANY, &je);
                if (!inst)
                    fail_msg("schema %zu beam %d: not JSON: %s", si, i, text);
                int valid = 0;
                assert_int_equal(sx_val_validate(val, inst, &valid, &err), 0);
                if (!valid)
                    fail_msg("schema %zu beam %d: %s does not validate", si, i, text);
                json_decref(inst);
                free(text);
                checked++;
            }
            sx_beam_result_free(&r);
        }
        sx_val_free(val);
        json_decref(schema);
        sx_gr_free(gr);
    }
    sx_ids_free(&prompt);
    return checked;
}

static void constrained(void **state)
{
    (void)state;
    assert_true(run_constrained(40, 1) >= 10);
}

/* Tight budgets: the shortest document's length and a little more.  Each
 * beam keeps its document closable, so every sequence returned is a
 * complete, valid document; without the rule some are cut. */
static void tight_budgets(void **state)
{
    (void)state;
    for (int slack = 1; slack <= 4; slack += 3)
        assert_true(run_constrained(-slack, 1) >= 10);
    int cut = 0;
    for (int slack = 1; slack <= 4 && !cut; slack += 3)
        cut = run_constrained(-slack, 0) < 0;
    assert_true(cut);
}

/* One prefill for all beams: the model runs the prompt once, then one token
 * per beam per step; the beams' KV blocks are forks, all freed at the end. */
static void shares_the_prompt(void **state)
{
    (void)state;
    enum { P = 300, B = 4, M = 6 };
    int32_t prompt[P];
    for (int i = 0; i < P; i++)
        prompt[i] = (int32_t)((i * 7919 + 13) % 150000);
    int64_t free0 = sx_backend_free_tokens(ENG);
    sx_beam_params p = {.num_beams = B, .num_return = B, .length_penalty = 1.0f,
                        .early_stopping = SX_BEAM_EARLY_NEVER, .max_tokens = M};
    sx_beam_result r;
    sx_error err;
    assert_int_equal(sx_beam_run(ENG, prompt, P, &p, &r, &err), 0);
    assert_int_equal(r.n, B);
    for (int i = 0; i < B; i++)
        assert_int_equal(r.seqs[i].n, M);
    assert_int_equal(r.steps, M - 1);
    assert_true(r.tokens_run <= P + (int64_t)B * (M - 1));
    assert_true(r.forks >= B - 1);
    assert_int_equal(sx_backend_free_tokens(ENG), free0);
    sx_beam_result_free(&r);
}

/* The request's mask deadline (sx_beam_params.deadline_ms) holds for every
 * beam's matcher: passed before the search, it fails with SX_ELIMIT naming
 * the deadline; without one the same search runs. */
static void mask_deadline(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}";
    sx_grammar *gr = NULL;
    sx_error err;
    assert_int_equal(sx_gr_compile_schema(VOC, schema, strlen(schema), NULL, &gr, &err), 0);
    int32_t prompt[4] = {785, 1156, 315, 264};
    int32_t eos[2] = {sx_tok_find(TOK, "<|im_end|>", 10), sx_tok_find(TOK, "<|endoftext|>", 13)};
    sx_beam_params p = {.num_beams = 2, .num_return = 2, .length_penalty = 1.0f,
                        .early_stopping = SX_BEAM_EARLY_TRUE, .max_tokens = 4,
                        .eos = eos, .n_eos = 2, .grammar = gr};
    sx_beam_result r;
    assert_int_equal(sx_beam_run(ENG, prompt, 4, &p, &r, &err), 0);
    sx_beam_result_free(&r);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    p.deadline_ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6 - 1;
    int64_t free0 = sx_backend_free_tokens(ENG);
    assert_int_equal(sx_beam_run(ENG, prompt, 4, &p, &r, &err), SX_ELIMIT);
    assert_non_null(strstr(err.msg, "deadline"));
    assert_int_equal(sx_backend_free_tokens(ENG), free0); /* its sequences are freed */
    sx_gr_free(gr);
}

static void refuses_bad_params(void **state)
{
    (void)state;
    int32_t prompt[2] = {1, 2};
    sx_beam_result r;
    sx_error err;
    sx_beam_params p = {.num_beams = 2, .num_return = 3, .max_tokens = 4};
    assert_int_equal(sx_beam_run(ENG, prompt, 2, &p, &r, &err), SX_EINVAL);
    p.num_return = 1;
    p.num_beams = 0;
    assert_int_equal(sx_beam_run(ENG, prompt, 2, &p, &r, &err), SX_EINVAL);
    p.num_beams = 2;
    p.max_tokens = 0;
    assert_int_equal(sx_beam_run(ENG, prompt, 2, &p, &r, &err), SX_EINVAL);
    p.max_tokens = 4;
    p.early_stopping = 3;
    assert_int_equal(sx_beam_run(ENG, prompt, 2, &p, &r, &err), SX_EINVAL);
    p.early_stopping = 0;
    prompt[1] = 200000;
    assert_int_equal(sx_beam_run(ENG, prompt, 2, &p, &r, &err), SX_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_transformers),
        cmocka_unit_test(constrained),
        cmocka_unit_test(tight_budgets),
        cmocka_unit_test(shares_the_prompt),
        cmocka_unit_test(refuses_bad_params),
        cmocka_unit_test(mask_deadline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
