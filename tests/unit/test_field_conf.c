/* Confidence per field (sx_rpc_field_confidence): the scanner's pointers
 * and the attribution of tokens on hand-made text, and end to end on a
 * small random-weight Qwen3: the log-probability sx_gen reports for every
 * sampled token equals a masked log-softmax computed here from the
 * engine's logits (one fresh pass over prompt + output) and the grammar's
 * mask replayed with a fresh matcher; the fields built from those hand
 * values equal the ones built from the generator's, and name exactly the
 * output's leaf values (found independently, by walking jansson's parse). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/cpu/engine.h"
#include "engine/generate.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/grammar.h"
#include "rpc/protocol.h"

static sx_tokenizer *TOK;
static sx_vocab *VOC;
static sx_model *MODEL;
static sx_backend *ENG;
static char DIR_[256];

static int setup(void **state)
{
    (void)state;
    const char *shared = getenv("STRUX_SHARED");
    char tp[1024];
    snprintf(tp, sizeof tp, "%s/qwen3-tokenizer/tokenizer.json", shared ? shared : "../shared");
    sx_error err;
    sx_qwen3_config cfg;
    if (sx_tok_load(tp, &TOK, &err))
        return -1;
    sx_tok_set_n_rows(TOK, 151936);
    if (sx_tok_make_vocab(TOK, &VOC, &err) || sx_qwen3_shape("tiny", &cfg, &err))
        return -1;
    snprintf(DIR_, sizeof DIR_, "/tmp/strux_test_field_conf_%d", (int)getpid());
    if (sx_model_write_random(&cfg, 11, DIR_, NULL, &err) || sx_model_load(DIR_, &MODEL, &err))
        return -1;
    sx_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = 2;
    eo.max_seqs = 8;
    eo.kv_tokens = 8192;
    return sx_backend_open("cpu", MODEL, &eo, &ENG, &err) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    sx_backend_close(ENG);
    sx_model_free(MODEL);
    sx_vocab_free(VOC);
    sx_tok_free(TOK);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", DIR_);
    return system(cmd) == 0 ? 0 : -1;
}

static const json_t *field(const json_t *fields, const char *pointer)
{
    size_t i;
    const json_t *f;
    json_array_foreach(fields, i, f)
        if (!strcmp(json_string_value(json_object_get(f, "pointer")), pointer))
            return f;
    fail_msg("no field %s", pointer);
    return NULL;
}

static double num(const json_t *f, const char *k)
{
    return json_number_value(json_object_get(f, k));
}

/* Hand-made text and tokens: every rule of the attribution once. */
static void scanner_and_attribution(void **state)
{
    (void)state;
    /* {"a/b": "xy", "c~": [1, {}, [true]], "e": {"f": null}} */
    const char *t = "{\"a/b\": \"xy\", \"c~\": [1, {}, [true]], \"e\": {\"f\": null}}";
    size_t len = strlen(t);
    /* offsets: "xy" at 8..12; 1 at 21; {} at 24..26; true at 29..33; null at 48..52 */
    assert_memory_equal(t + 8, "\"xy\"", 4);
    assert_memory_equal(t + 21, "1", 1);
    assert_memory_equal(t + 24, "{}", 2);
    assert_memory_equal(t + 29, "true", 4);
    assert_memory_equal(t + 48, "null", 4);
    sx_rpc_tok_span toks[] = {
        {0, 7, -9.0f, 0},     /* {"a/b": (structure, no leaf) */
        {7, 9, -0.5f, 0},     /*  "     : xy's first token (a space and the quote) */
        {9, 10, -0.25f, 0},   /* x */
        {10, 10, -0.125f, 0}, /* held back: its bytes come with the next piece */
        {10, 13, -2.0f, 1},   /* y", forced: left out */
        {13, 21, -7.0f, 0},   /* "c~": [ */
        {21, 21, -0.75f, 1},  /* forced, empty */
        {21, 23, -1.5f, 0},   /* 1, */
        {23, 26, 0.0f, 0},    /*  {} with one allowed continuation: logprob 0 */
        {26, 29, -3.0f, 0},   /* , [ */
        {29, 33, -0.0625f, 1},/* true, forced only */
        {33, 48, -4.0f, 0},   /* ]], "e": {"f":  */
        {48, 50, -0.375f, 0}, /* nu */
        {50, 54, -0.5f, 0},   /* ll}} */
    };
    json_t *fields = NULL;
    sx_error err;
    assert_int_equal(sx_rpc_field_confidence(t, len, toks, sizeof toks / sizeof *toks, &fields,
                                             &err), 0);
    assert_int_equal(json_array_size(fields), 5);
    const char *order[] = {"/a~1b", "/c~0/0", "/c~0/1", "/c~0/2/0", "/e/f"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(fields, (size_t)i),
                                                              "pointer")), order[i]);
    const json_t *f = field(fields, "/a~1b");
    assert_float_equal(num(f, "logprob"), -0.5 - 0.25 - 0.125, 1e-9);
    assert_float_equal(num(f, "alternatives"), 1 - exp(-0.5), 1e-9);
    assert_int_equal(json_integer_value(json_object_get(f, "tokens")), 3);
    f = field(fields, "/c~0/0");
    assert_float_equal(num(f, "logprob"), -1.5, 1e-9);
    assert_float_equal(num(f, "alternatives"), 1 - exp(-1.5), 1e-9);
    f = field(fields, "/c~0/1");   /* an empty container is a value of its own */
    assert_float_equal(num(f, "logprob"), 0, 1e-12);
    assert_float_equal(num(f, "alternatives"), 0, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(f, "tokens")), 1);
    f = field(fields, "/c~0/2/0");  /* forced only */
    assert_float_equal(num(f, "logprob"), 0, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(f, "tokens")), 0);
    f = field(fields, "/e/f");
    assert_float_equal(num(f, "logprob"), -0.875, 1e-9);
    assert_float_equal(num(f, "alternatives"), 1 - exp(-0.375), 1e-9);
    assert_float_equal(sx_rpc_field_confidence_min(fields), exp(-1.5), 1e-9);
    json_decref(fields);

    /* a scalar document is one field at the root, "" */
    sx_rpc_tok_span one = {0, 4, -0.2f, 0};
    assert_int_equal(sx_rpc_field_confidence("\"ab\"", 4, &one, 1, &fields, &err), 0);
    assert_int_equal(json_array_size(fields), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(fields, 0), "pointer")),
                        "");
    json_decref(fields);
    /* a key with an escape is decoded before it is escaped as a pointer */
    assert_int_equal(sx_rpc_field_confidence("{\"\\u0041~/\":1}", 14, NULL, 0, &fields, &err), 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(fields, 0), "pointer")),
                        "/A~0~1");
    json_decref(fields);
    /* errors are values */
    assert_int_equal(sx_rpc_field_confidence("{\"a\":1", 6, NULL, 0, &fields, &err), SX_EFORMAT);
    assert_null(fields);
    assert_int_equal(sx_rpc_field_confidence("1 2", 3, NULL, 0, &fields, &err), SX_EFORMAT);
    char deep[2200];
    memset(deep, '[', 1100);
    memset(deep + 1100, ']', 1100);
    assert_int_equal(sx_rpc_field_confidence(deep, sizeof deep, NULL, 0, &fields, &err), SX_ELIMIT);
}

typedef struct run {
    sx_bytes text;
    sx_ids ids;
    sx_rpc_tok_span *spans;
    size_t n;
    int done, finish;
} run;

static void on_event(const sx_gen_event *ev, void *ctx)
{
    run *r = ev->user;
    (void)ctx;
    size_t at = r->text.n;
    if (ev->piece_len)
        assert_int_equal(sx_bytes_append(&r->text, ev->piece, ev->piece_len), 0);
    if (ev->done) {
        r->done = 1;
        r->finish = ev->finish;
        return;
    }
    assert_int_equal(sx_ids_push(&r->ids, ev->token), 0);
    r->spans = realloc(r->spans, (r->n + 1) * sizeof *r->spans);
    assert_non_null(r->spans);
    r->spans[r->n++] = (sx_rpc_tok_span){at, r->text.n, ev->logprob, ev->forced};
}

/* Leaf pointers of a parsed value, independently of the scanner. */
static void leaves(const json_t *v, char *ptr, size_t len, json_t *out)
{
    if (json_is_object(v) && json_object_size(v)) {
        const char *k;
        const json_t *c;
        json_object_foreach((json_t *)v, k, c) {
            size_t n = len;
            ptr[n++] = '/';
            for (const char *p = k; *p; p++) {
                if (*p == '~' || *p == '/') {
                    ptr[n++] = '~';
                    ptr[n++] = *p == '~' ? '0' : '1';
                } else {
                    ptr[n++] = *p;
                }
            }
            ptr[n] = 0;
            leaves(c, ptr, n, out);
        }
    } else if (json_is_array(v) && json_array_size(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            int n = snprintf(ptr + len, 64, "/%zu", i);
            leaves(json_array_get(v, i), ptr, len + (size_t)n, out);
        }
    } else {
        ptr[len] = 0;
        json_object_set_new(out, ptr, json_true());
    }
}

static void check_against_hand(const char *schema_text, float temperature, uint64_t seed)
{
    sx_error err;
    json_t *schema = json_loads(schema_text, 0, NULL);
    assert_non_null(schema);
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    sx_grammar *gr = NULL;
    assert_int_equal(sx_gr_compile_json(VOC, schema, &o, &gr, &err), 0);
    sx_chat_msg m[2] = {{"system", "Reply with JSON."}, {"user", "Ada Lovelace, 36, ~/ happy."}};
    sx_ids prompt = {0};
    assert_int_equal(sx_chat_encode(TOK, m, 2, 1, &prompt, &err), 0);

    sx_gen *g = NULL;
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, &err), 0);
    sx_gen_params p;
    memset(&p, 0, sizeof p);
    p.grammar = gr;
    sx_sampling_default(&p.sampling);
    p.sampling.temperature = temperature;
    p.sampling.seed = seed;
    p.max_tokens = 96;
    run r;
    memset(&r, 0, sizeof r);
    assert_int_equal(sx_gen_add(g, prompt.v, (int)prompt.n, &p, &r, NULL, &err), 0);
    for (int live = 1, steps = 0; live > 0; steps++) {
        assert_int_equal(sx_gen_step(g, &live, &err), 0);
        assert_true(steps < 1000);
    }
    sx_gen_free(g);
    assert_int_equal(r.finish, SX_FINISH_STOP);
    assert_int_equal(r.ids.n, r.n);

    /* by hand: one pass over prompt + output with every position's logits */
    int V = MODEL->cfg.vocab_rows;
    size_t total = prompt.n + r.ids.n;
    int32_t *all = malloc(total * sizeof *all);
    float *logits = malloc(total * (size_t)V * sizeof *logits);
    uint32_t *mask = malloc((size_t)(V + 31) / 32 * sizeof *mask);
    assert_true(all && logits && mask);
    memcpy(all, prompt.v, prompt.n * sizeof *all);
    memcpy(all + prompt.n, r.ids.v, r.ids.n * sizeof *all);
    int seq;
    assert_int_equal(sx_backend_seq_new(ENG, &seq, &err), 0);
    sx_step_item it = {.seq = seq, .tokens = all, .n = (int)total, .logits_all = 1};
    assert_int_equal(sx_backend_step(ENG, &it, 1, logits, &err), 0);
    sx_backend_seq_free(ENG, seq);

    sx_matcher *mt = NULL;
    assert_int_equal(sx_matcher_new(gr, &mt, &err), 0);
    sx_rpc_tok_span *hand = malloc(r.n * sizeof *hand);
    int n_sampled = 0;
    double worst = 0;
    for (size_t i = 0; i < r.n; i++) {
        hand[i] = r.spans[i];
        if (!r.spans[i].forced) {
            /* the token after position prompt.n - 1 + i: log-softmax over
             * the tokens the grammar allows there, in double */
            const float *row = logits + (prompt.n - 1 + i) * (size_t)V;
            memset(mask, 0, (size_t)(V + 31) / 32 * sizeof *mask);
            assert_int_equal(sx_matcher_fill_mask(mt, mask), 0);
            int32_t tok = r.ids.v[i];
            assert_true(mask[tok / 32] >> (tok % 32) & 1);
            double mx = -INFINITY, z = 0;
            for (int t = 0; t < V; t++)
                if (mask[t / 32] >> (t % 32) & 1 && row[t] > mx)
                    mx = row[t];
            for (int t = 0; t < V; t++)
                if (mask[t / 32] >> (t % 32) & 1)
                    z += exp((double)row[t] - mx);
            double lp = (double)row[tok] - mx - log(z);
            double d = fabs(lp - (double)r.spans[i].logprob);
            if (d > worst)
                worst = d;
            hand[i].logprob = (float)lp;
            n_sampled++;
        }
        assert_int_equal(sx_matcher_accept(mt, r.ids.v[i], &err), 0);
    }
    print_message("%d sampled tokens of %zu: masked log-probs within %.2g of the hand ones\n",
                  n_sampled, r.n, worst);
    assert_true(n_sampled > 0);
    /* the batched decode and one long prefill round differently: a float's
     * worth of log-prob, no more */
    assert_true(worst < 1e-4);

    json_t *from_gen = NULL, *from_hand = NULL;
    assert_int_equal(sx_rpc_field_confidence(r.text.v, r.text.n, r.spans, r.n, &from_gen, &err), 0);
    assert_int_equal(sx_rpc_field_confidence(r.text.v, r.text.n, hand, r.n, &from_hand, &err), 0);
    json_t *inst = json_loadb(r.text.v, r.text.n, JSON_DECODE_ANY, NULL);
    assert_non_null(inst);
    json_t *want = json_object();
    char ptr[4096];
    leaves(inst, ptr, 0, want);
    assert_int_equal(json_array_size(from_gen), json_object_size(want));
    int tokens = 0;
    for (size_t i = 0; i < json_array_size(from_gen); i++) {
        const json_t *a = json_array_get(from_gen, i), *b = json_array_get(from_hand, i);
        const char *pa = json_string_value(json_object_get(a, "pointer"));
        assert_non_null(json_object_get(want, pa));
        assert_string_equal(pa, json_string_value(json_object_get(b, "pointer")));
        assert_float_equal(num(a, "logprob"), num(b, "logprob"), 1e-3);
        assert_float_equal(num(a, "alternatives"), num(b, "alternatives"), 1e-4);
        assert_true(num(a, "logprob") <= 0 && num(a, "alternatives") >= 0 &&
                    num(a, "alternatives") <= 1);
        tokens += (int)json_integer_value(json_object_get(a, "tokens"));
    }
    assert_true(tokens <= n_sampled + (int)json_array_size(from_gen));
    json_decref(want);
    json_decref(inst);
    json_decref(from_gen);
    json_decref(from_hand);
    sx_matcher_free(mt);
    free(hand);
    free(all);
    free(logits);
    free(mask);
    free(r.spans);
    sx_bytes_free(&r.text);
    sx_ids_free(&r.ids);
    sx_ids_free(&prompt);
    sx_gr_free(gr);
    json_decref(schema);
}

static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":10},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150},"
    "\"mood\":{\"enum\":[\"happy\",\"sad\",\"neutral\"]},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"maxItems\":3},"
    "\"a~/b\":{\"type\":\"number\"}},"
    "\"required\":[\"name\",\"age\",\"mood\",\"tags\",\"a~/b\"],\"additionalProperties\":false}";

static void greedy_matches_hand(void **state)
{
    (void)state;
    check_against_hand(SCHEMA, 0, 0);
}

static void sampled_matches_hand(void **state)
{
    (void)state;
    /* sampled tokens are not the most likely: the log-probs vary more */
    check_against_hand(SCHEMA, 1.0f, 3);
    check_against_hand(SCHEMA, 1.0f, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scanner_and_attribution),
        cmocka_unit_test(greedy_matches_hand),
        cmocka_unit_test(sampled_matches_hand),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
