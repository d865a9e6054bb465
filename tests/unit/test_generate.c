/* sx_gen end to end on a small random-weight Qwen3 (the real tokenizer and
 * the full 151,936-row vocabulary): constrained outputs always validate,
 * also with budgets tight enough to force early closing; batching does not
 * change greedy outputs; n choices share one prefill and each equals its
 * request run alone; cancellation, too-small budgets and the unconstrained
 * path behave. */
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
static sx_model *MODEL;
static sx_backend *ENG;
static char DIR_[256];

#define MAXR 16
typedef struct result {
    sx_bytes text;
    sx_ids ids;
    int done, finish, n_completion, n_forced, n_cached;
    sx_error error; /* the finishing event's (SX_FINISH_ERROR) */
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
    assert_int_equal(r->done, 0);
    r->done = 1;
    r->finish = ev->finish;
    r->n_completion = ev->n_completion;
    r->n_forced = ev->n_forced;
    r->n_cached = ev->n_cached;
    r->error = ev->error;
    if (ev->finish == SX_FINISH_ERROR)
        print_error("generation error: %s\n", ev->error.msg);
}

static void result_free(result *r)
{
    sx_bytes_free(&r->text);
    sx_ids_free(&r->ids);
    memset(r, 0, sizeof *r);
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
    snprintf(DIR_, sizeof DIR_, "/tmp/strux_test_generate_%d", (int)getpid());
    if (sx_model_write_random(&cfg, 7, DIR_, NULL, &err) || sx_model_load(DIR_, &MODEL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    sx_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = 2;
    eo.max_seqs = 16;
    eo.kv_tokens = 16384;
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
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", DIR_);
    return system(cmd) == 0 ? 0 : -1;
}

static void encode_prompt(const char *user, sx_ids *ids)
{
    sx_chat_msg m[2] = {{"system", "Reply with JSON."}, {"user", user}};
    assert_int_equal(sx_chat_encode(TOK, m, 2, 1, ids, NULL), 0);
}

/* Runs requests to completion on one sx_gen. */
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
    if (!inst) {
        print_error("not JSON: '%.*s' (%s)\n", (int)text->n, text->v ? text->v : "", je.text);
        return 0;
    }
    sx_validator *val;
    int valid = 0;
    sx_error err;
    assert_int_equal(sx_val_compile(schema, NULL, &val, &err), 0);
    assert_int_equal(sx_val_validate(val, inst, &valid, &err), 0);
    if (!valid)
        print_error("invalid: '%.*s': %s\n", (int)text->n, text->v, err.msg);
    sx_val_free(val);
    json_decref(inst);
    return valid;
}

static const char *SCHEMAS[] = {
    "schemas/invoice.json", "schemas/contact_card.json", "schemas/support_ticket.json",
    "schemas/sentiment_labels.json",
};

static const char *INLINE[] = {
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":12},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150}},\"required\":[\"name\",\"age\"],"
    "\"additionalProperties\":false}",
    "{\"type\":\"array\",\"items\":{\"enum\":[\"red\",\"green\",\"blue\"]},\"minItems\":2,\"maxItems\":4}",
    "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{4}$\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"date\"}}},"
    "\"required\":[\"id\",\"tags\"]}",
};

/* Every schema, several seeds, a roomy and a tight budget: all valid. */
static void constrained_outputs_validate(void **state)
{
    (void)state;
    int n_schemas = (int)(sizeof SCHEMAS / sizeof *SCHEMAS + sizeof INLINE / sizeof *INLINE);
    int checked = 0, tight_closed = 0;
    for (int k = 0; k < n_schemas; k++) {
        json_error_t je;
        json_t *schema = k < 4 ? json_load_file(SCHEMAS[k], 0, &je)
                               : json_loads(INLINE[k - 4], 0, &je);
        if (!schema)
            fail_msg("schema %d: %s", k, je.text);
        sx_grammar *gr;
        sx_gr_opts o;
        sx_gr_opts_default(&o);
        sx_error err;
        if (sx_gr_compile_json(VOC, schema, &o, &gr, &err))
            fail_msg("compile %d: %s", k, err.msg);
        /* the shortest document's length in tokens sets the tight budget */
        sx_matcher *m;
        assert_int_equal(sx_matcher_new(gr, &m, NULL), 0);
        uint8_t buf[65536];
        size_t cn = sx_matcher_shortest_completion(m, buf, sizeof buf);
        assert_true(cn != (size_t)-1);
        sx_ids cids = {0};
        assert_int_equal(sx_tok_encode(TOK, (const char *)buf, cn, 0, &cids, NULL), 0);
        int shortest = (int)cids.n;
        sx_ids_free(&cids);
        sx_matcher_free(m);

        result r[6];
        memset(r, 0, sizeof r);
        sx_gen *g;
        assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
        sx_ids p = {0};
        encode_prompt("Extract the record from: Jane Doe, 41, jane@example.com, order ABC-1234.", &p);
        for (int i = 0; i < 6; i++) {
            sx_gen_params gp;
            memset(&gp, 0, sizeof gp);
            sx_sampling_default(&gp.sampling);
            gp.sampling.temperature = 1.0f;
            gp.sampling.seed = (uint64_t)(100 * k + i);
            gp.grammar = gr;
            gp.max_tokens = i < 3 ? 200 : shortest + (i - 3);
            if (sx_gen_add(g, p.v, (int)p.n, &gp, &r[i], NULL, &err))
                fail_msg("add: %s", err.msg);
        }
        run_all(g);
        for (int i = 0; i < 6; i++) {
            assert_int_equal(r[i].done, 1);
            int budget = i < 3 ? 200 : shortest + (i - 3);
            assert_true(r[i].n_completion <= budget);
            if (r[i].finish == SX_FINISH_STOP) {
                assert_true(validates(schema, &r[i].text));
                checked++;
                if (i >= 3)
                    tight_closed++;
            } else {
                /* only a roomy budget may run out (the document was long) */
                assert_int_equal(r[i].finish, SX_FINISH_LENGTH);
                assert_true(i < 3);
            }
            result_free(&r[i]);
        }
        sx_ids_free(&p);
        sx_gen_free(g);
        sx_gr_free(gr);
        json_decref(schema);
    }
    /* every tight budget must have produced a complete, valid document */
    assert_int_equal(tight_closed, 3 * n_schemas);
    assert_true(checked >= 3 * n_schemas);
}

/* Greedy outputs of sequences run together equal those run alone. */
/* 1 if some prefix of ids (token boundaries) ends inside a UTF-8 character */
static int stops_inside_a_character(const sx_ids *ids)
{
    int need = 0, seen = 0;
    for (size_t i = 0; i < ids->n; i++) {
        size_t len;
        const unsigned char *b = (const unsigned char *)sx_tok_bytes(TOK, ids->v[i], &len);
        for (size_t j = 0; b && j < len; j++)
            need = (b[j] & 0xc0) == 0x80 ? need - 1
                 : b[j] >= 0xf0 ? 3 : b[j] >= 0xe0 ? 2 : b[j] >= 0xc0 ? 1 : 0;
        seen |= need > 0 && i + 1 < ids->n;
    }
    return seen;
}

/* Non-ASCII text under a tight budget: the model's tokens often stop
 * halfway through a character, so the shortest completion starts with
 * continuation bytes, which no text encoder takes; it must still be counted
 * and emitted (as byte tokens), and every document close in budget. */
static void tight_budget_inside_characters(void **state)
{
    (void)state;
    const char *src = "{\"type\":\"object\",\"properties\":{\"名前\":{\"type\":\"string\","
                      "\"pattern\":\"^[à-ÿ一-龥]{2,12}$\"},\"都市\":{\"enum\":[\"東京\",\"大阪\"]}},"
                      "\"required\":[\"名前\",\"都市\"],\"additionalProperties\":false}";
    json_error_t je;
    json_t *schema = json_loads(src, 0, &je);
    assert_non_null(schema);
    sx_grammar *gr;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    sx_error err;
    if (sx_gr_compile_json(VOC, schema, &o, &gr, &err))
        fail_msg("compile: %s", err.msg);
    sx_matcher *m;
    assert_int_equal(sx_matcher_new(gr, &m, NULL), 0);
    uint8_t buf[4096];
    size_t cn = sx_matcher_shortest_completion(m, buf, sizeof buf);
    assert_true(cn != (size_t)-1);
    sx_ids cids = {0};
    assert_int_equal(sx_tok_encode(TOK, (const char *)buf, cn, 0, &cids, NULL), 0);
    int shortest = (int)cids.n;
    sx_ids_free(&cids);
    sx_matcher_free(m);

    sx_ids p = {0};
    encode_prompt("名前と都市を書いてください。", &p);
    int inside = 0;
    for (int round = 0; round < 4; round++) {
        result r[MAXR];
        memset(r, 0, sizeof r);
        sx_gen *g;
        assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
        for (int i = 0; i < MAXR; i++) {
            sx_gen_params gp;
            memset(&gp, 0, sizeof gp);
            sx_sampling_default(&gp.sampling);
            gp.sampling.temperature = 1.0f;
            gp.sampling.seed = (uint64_t)(round * MAXR + i);
            gp.grammar = gr;
            gp.max_tokens = shortest + i % 8;
            if (sx_gen_add(g, p.v, (int)p.n, &gp, &r[i], NULL, &err))
                fail_msg("add: %s", err.msg);
        }
        run_all(g);
        for (int i = 0; i < MAXR; i++) {
            assert_int_equal(r[i].done, 1);
            if (r[i].finish != SX_FINISH_STOP)
                fail_msg("seed %d budget %d: finish %d after %d tokens", round * MAXR + i,
                         shortest + i % 8, r[i].finish, r[i].n_completion);
            assert_true(r[i].n_completion <= shortest + i % 8);
            assert_true(validates(schema, &r[i].text));
            inside += stops_inside_a_character(&r[i].ids);
            result_free(&r[i]);
        }
        sx_gen_free(g);
    }
    /* the case this test is for did happen */
    assert_true(inside > 0);
    sx_ids_free(&p);
    sx_gr_free(gr);
    json_decref(schema);
}

static void batching_is_invisible(void **state)
{
    (void)state;
    const char *users[4] = {"One.", "Two words here.", "A longer prompt with more tokens in it, to "
                            "give the batch sequences of different lengths.", "Four"};
    sx_ids p[4] = {{0}};
    result alone[4], together[4];
    memset(alone, 0, sizeof alone);
    memset(together, 0, sizeof together);
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.sampling.temperature = 0;
    gp.max_tokens = 12;
    for (int i = 0; i < 4; i++)
        encode_prompt(users[i], &p[i]);
    for (int i = 0; i < 4; i++) {
        sx_gen *g;
        assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
        assert_int_equal(sx_gen_add(g, p[i].v, (int)p[i].n, &gp, &alone[i], NULL, NULL), 0);
        run_all(g);
        sx_gen_free(g);
    }
    sx_gen_opts go = {.prefill_chunk = 7, .max_batch = 4, .mask_threads = 2};
    sx_gen *g;
    assert_int_equal(sx_gen_new(ENG, TOK, &go, on_event, NULL, &g, NULL), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(sx_gen_add(g, p[i].v, (int)p[i].n, &gp, &together[i], NULL, NULL), 0);
    run_all(g);
    sx_gen_free(g);
    /* continuous batching: each request joins while the earlier ones are
     * decoding (and the first leaves before the last joins) */
    result staggered[4];
    memset(staggered, 0, sizeof staggered);
    assert_int_equal(sx_gen_new(ENG, TOK, &go, on_event, NULL, &g, NULL), 0);
    int live = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sx_gen_add(g, p[i].v, (int)p[i].n, &gp, &staggered[i], NULL, NULL), 0);
        for (int k = 0; k < (i == 2 ? 14 : 4); k++) {
            assert_int_equal(sx_gen_step(g, &live, NULL), 0);
        }
        if (i == 0)
            assert_true(staggered[0].ids.n > 0 && !staggered[0].done);   /* mid-decode */
    }
    assert_true(staggered[0].done && !staggered[3].done);
    run_all(g);
    sx_gen_free(g);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(alone[i].done, 1);
        assert_int_equal(together[i].done, 1);
        assert_int_equal(staggered[i].done, 1);
        assert_true(alone[i].ids.n > 0);
        assert_true(alone[i].ids.n <= 12);
        assert_int_equal(alone[i].ids.n, together[i].ids.n);
        assert_memory_equal(alone[i].ids.v, together[i].ids.v, alone[i].ids.n * sizeof(int32_t));
        assert_int_equal(alone[i].ids.n, staggered[i].ids.n);
        assert_memory_equal(alone[i].ids.v, staggered[i].ids.v, alone[i].ids.n * sizeof(int32_t));
        result_free(&alone[i]);
        result_free(&together[i]);
        result_free(&staggered[i]);
        sx_ids_free(&p[i]);
    }
}

/* A shared prompt prefix is prefilled once: later requests fork its KV,
 * prefill only the rest, and answer exactly as without the cache. */
static void prefix_cache_is_invisible(void **state)
{
    (void)state;
    const char *users[3] = {"First document, fairly short.", "Second one.",
                            "A third document with quite a few more words in it than the others."};
    sx_ids p[3] = {{0}};
    int P = -1;
    for (int i = 0; i < 3; i++) {
        encode_prompt(users[i], &p[i]);
        /* the system turn: through its end-of-turn token */
        int32_t im_end = sx_tok_find(TOK, "<|im_end|>", 10);
        int k = 0;
        while (k < (int)p[i].n && p[i].v[k] != im_end)
            k++;
        assert_true(k < (int)p[i].n);
        assert_true(P < 0 || P == k + 1);
        P = k + 1;
    }
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.max_tokens = 10;
    result ref[3], got[3];
    memset(ref, 0, sizeof ref);
    memset(got, 0, sizeof got);
    sx_gen *g;
    for (int i = 0; i < 3; i++) { /* references: no cache */
        assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
        assert_int_equal(sx_gen_add(g, p[i].v, (int)p[i].n, &gp, &ref[i], NULL, NULL), 0);
        run_all(g);
        sx_gen_free(g);
    }
    /* prefill chunks shorter than the prefix: the cache must be filled at
     * exactly its end */
    sx_gen_opts go = {.prefill_chunk = 5, .max_batch = 4, .mask_threads = 1};
    assert_int_equal(sx_gen_new(ENG, TOK, &go, on_event, NULL, &g, NULL), 0);
    gp.prefix_len = P;
    assert_int_equal(sx_gen_add(g, p[0].v, (int)p[0].n, &gp, &got[0], NULL, NULL), 0);
    run_all(g);
    assert_int_equal(got[0].n_cached, 0);
    for (int i = 1; i < 3; i++)
        assert_int_equal(sx_gen_add(g, p[i].v, (int)p[i].n, &gp, &got[i], NULL, NULL), 0);
    run_all(g);
    for (int i = 0; i < 3; i++) {
        /* at least the system turn (whole prompts are kept too: the user
         * turn's opening tokens match as well) */
        if (i > 0)
            assert_true(got[i].n_cached >= P && got[i].n_cached < (int)p[i].n);
        assert_int_equal(got[i].ids.n, ref[i].ids.n);
        assert_memory_equal(got[i].ids.v, ref[i].ids.v, ref[i].ids.n * sizeof *ref[i].ids.v);
        result_free(&got[i]);
        result_free(&ref[i]);
    }
    /* the same prompt again: all but its last token come from the cache
     * (whole prompts are kept; the last is run for its logits), even with
     * a prefix as long as the prompt */
    gp.prefix_len = (int)p[1].n;
    assert_int_equal(sx_gen_add(g, p[1].v, (int)p[1].n, &gp, &got[0], NULL, NULL), 0);
    run_all(g);
    assert_int_equal(got[0].n_cached, (int)p[1].n - 1);
    result_free(&got[0]);
    gp.prefix_len = -1;
    assert_int_equal(sx_gen_add(g, p[1].v, (int)p[1].n, &gp, &got[0], NULL, NULL), SX_EINVAL);
    /* label scoring's way in: a sequence holding just the prefix */
    int seq;
    assert_int_equal(sx_gen_prefix_seq(g, p[2].v, (int)p[2].n, P, &seq, NULL), SX_OK);
    assert_true(seq >= 0);
    assert_int_equal(sx_backend_seq_len(ENG, seq), P);
    sx_backend_seq_free(ENG, seq);
    assert_int_equal(sx_gen_prefix_seq(g, p[2].v, (int)p[2].n, 0, &seq, NULL), SX_OK);
    assert_int_equal(seq, -1);
    sx_gen_free(g);
    for (int i = 0; i < 3; i++)
        sx_ids_free(&p[i]);
}

/* A named prefix (the system turn) no longer cuts a prefill chunk in two:
 * a prompt within one chunk is prefilled in one pass -- its first token
 * comes out of the first step -- and a chunk that runs past the prefix
 * still leaves exactly the prefix in the cache (kept at its end by a fork
 * of the longer sequence), which the next request forks and answers from
 * exactly as without the cache. */
static void prefix_inside_a_chunk(void **state)
{
    (void)state;
    sx_ids p[2] = {{0}};
    encode_prompt("A document to extract from, with a few words.", &p[0]);
    encode_prompt("Another document entirely.", &p[1]);
    int32_t im_end = sx_tok_find(TOK, "<|im_end|>", 10);
    int P = 0;
    while (P < (int)p[0].n && p[0].v[P] != im_end)
        P++;
    P++; /* through the system turn's end-of-turn token */
    assert_true(P + 3 < (int)p[0].n && P + 3 < (int)p[1].n);
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.max_tokens = 10;
    result ref[2], got[2];
    memset(ref, 0, sizeof ref);
    memset(got, 0, sizeof got);
    sx_gen *g;
    for (int i = 0; i < 2; i++) { /* references: no cache */
        assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
        assert_int_equal(sx_gen_add(g, p[i].v, (int)p[i].n, &gp, &ref[i], NULL, NULL), 0);
        run_all(g);
        sx_gen_free(g);
    }
    gp.prefix_len = P;
    /* the whole prompt fits a chunk: one pass, then the first token */
    sx_gen_opts big = {.prefill_chunk = 512, .max_batch = 4, .mask_threads = 1};
    assert_int_equal(sx_gen_new(ENG, TOK, &big, on_event, NULL, &g, NULL), 0);
    assert_int_equal(sx_gen_add(g, p[0].v, (int)p[0].n, &gp, &got[0], NULL, NULL), 0);
    int live;
    assert_int_equal(sx_gen_step(g, &live, NULL), 0);
    assert_int_equal(got[0].ids.n, 1);
    run_all(g);
    assert_int_equal(got[0].ids.n, ref[0].ids.n);
    assert_memory_equal(got[0].ids.v, ref[0].ids.v, ref[0].ids.n * sizeof *ref[0].ids.v);
    sx_gen_free(g);
    result_free(&got[0]);
    /* a chunk that ends 3 tokens past the prefix, then the request goes
     * (its whole prompt is never kept): the prefix alone is cached */
    sx_gen_opts small = {.prefill_chunk = P + 3, .max_batch = 4, .mask_threads = 1};
    assert_int_equal(sx_gen_new(ENG, TOK, &small, on_event, NULL, &g, NULL), 0);
    int h;
    assert_int_equal(sx_gen_add(g, p[0].v, (int)p[0].n, &gp, &got[0], &h, NULL), 0);
    assert_int_equal(sx_gen_step(g, &live, NULL), 0);
    sx_gen_cancel(g, h);
    run_all(g);
    assert_int_equal(got[0].finish, SX_FINISH_CANCELLED);
    assert_int_equal(sx_gen_add(g, p[1].v, (int)p[1].n, &gp, &got[1], NULL, NULL), 0);
    run_all(g);
    assert_int_equal(got[1].n_cached, P);
    assert_int_equal(got[1].ids.n, ref[1].ids.n);
    assert_memory_equal(got[1].ids.v, ref[1].ids.v, ref[1].ids.n * sizeof *ref[1].ids.v);
    sx_gen_free(g);
    for (int i = 0; i < 2; i++) {
        result_free(&got[i]);
        result_free(&ref[i]);
        sx_ids_free(&p[i]);
    }
}

/* Runs `n` choices of one request on a fresh sx_gen: choice i samples with
 * seed + i; choices 1.. fork choice 0's KV (fork_of).  Returns the tokens
 * the engine ran. */
static int64_t run_choices(const sx_gen_opts *go, const sx_ids *p, sx_gen_params gp, int n,
                           result *r, int cancel_leader)
{
    sx_engine_lm_stats a, b;
    sx_backend_lm_stats_get(ENG, &a);
    sx_gen *g;
    sx_error err;
    assert_int_equal(sx_gen_new(ENG, TOK, go, on_event, NULL, &g, NULL), 0);
    uint64_t seed = gp.sampling.seed;
    int h0 = 0;
    for (int i = 0; i < n; i++) {
        gp.sampling.seed = seed + (uint64_t)i;
        gp.fork_of = h0;
        int h;
        if (sx_gen_add(g, p->v, (int)p->n, &gp, &r[i], &h, &err))
            fail_msg("add: %s", err.msg);
        if (i == 0)
            h0 = h;
    }
    if (cancel_leader) {
        /* the leader goes mid-prefill: its followers wait for a fork point
         * it never reaches, and must prefill on their own */
        int live;
        assert_int_equal(sx_gen_step(g, &live, NULL), 0);
        sx_gen_cancel(g, h0);
    }
    run_all(g);
    sx_gen_free(g);
    sx_backend_lm_stats_get(ENG, &b);
    return b.tokens - a.tokens;
}

static void assert_same_ids(const result *x, const result *y)
{
    assert_int_equal(x->ids.n, y->ids.n);
    assert_memory_equal(x->ids.v, y->ids.v, x->ids.n * sizeof *x->ids.v);
}

/* n choices share one prefill: the followers fork the leader's KV and run
 * only the last prompt token, yet each choice is token for token the
 * request run alone with its seed -- whether the leader's prefill takes
 * several steps, the batch has no room for every choice at once, or the
 * leader is cancelled before the fork point (then one of them prefills and
 * the others follow it). */
static void forked_choices(void **state)
{
    (void)state;
    enum { N = 4 };
    const char *schema = INLINE[0];
    sx_grammar *gr;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    assert_int_equal(sx_gr_compile_schema(VOC, schema, strlen(schema), &o, &gr, NULL), 0);
    json_t *js = json_loads(schema, 0, NULL);
    sx_ids p = {0};
    encode_prompt("Make up a person: a name and an age.", &p);
    int np = (int)p.n;
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.sampling.temperature = 1.0f;
    gp.sampling.seed = 40;
    gp.grammar = gr;
    gp.max_tokens = 24;

    result ref[N], got[N];
    memset(ref, 0, sizeof ref);
    int64_t alone = 0;
    for (int i = 0; i < N; i++) { /* each choice as its own request */
        sx_gen_params one = gp;
        one.sampling.seed = gp.sampling.seed + (uint64_t)i;
        alone += run_choices(NULL, &p, one, 1, &ref[i], 0);
        assert_int_equal(ref[i].finish, SX_FINISH_STOP);
        assert_true(validates(js, &ref[i].text));
    }
    int distinct = 0;
    for (int i = 1; i < N; i++)
        distinct += ref[i].ids.n != ref[0].ids.n ||
                    memcmp(ref[i].ids.v, ref[0].ids.v, ref[0].ids.n * sizeof *ref[0].ids.v);
    assert_true(distinct > 0); /* the seeds make different choices */

    const sx_gen_opts cases[3] = {
        {.prefill_chunk = 256, .max_batch = 8, .mask_threads = 1},
        {.prefill_chunk = 7, .max_batch = 8, .mask_threads = 2}, /* followers wait for the fork */
        {.prefill_chunk = 7, .max_batch = 2, .mask_threads = 1}, /* ... or for room */
    };
    for (int c = 0; c < 3; c++) {
        memset(got, 0, sizeof got);
        int64_t ran = run_choices(&cases[c], &p, gp, N, got, 0);
        for (int i = 0; i < N; i++) {
            assert_int_equal(got[i].done, 1);
            assert_same_ids(&got[i], &ref[i]);
            if (c < 2) /* every follower forked: it prefilled one token */
                assert_int_equal(got[i].n_cached, i ? np - 1 : 0);
            result_free(&got[i]);
        }
        /* the engine's own count: the prompt ran once, plus one token per
         * follower, instead of N times (outputs are equal, so is decode) */
        if (c < 2) {
            print_message("n=%d, prompt %d tokens: the engine ran %lld tokens alone, %lld forked\n",
                          N, np, (long long)alone, (long long)ran);
            assert_int_equal(alone - ran, (int64_t)(N - 1) * (np - 1));
        } else {
            assert_true(ran <= alone);
        }
    }
    memset(got, 0, sizeof got);
    run_choices(&cases[1], &p, gp, N, got, 1);
    assert_int_equal(got[0].finish, SX_FINISH_CANCELLED);
    for (int i = 1; i < N; i++) {
        /* the first one let go prefills, the others follow it */
        assert_int_equal(got[i].n_cached, i == 1 ? 0 : np - 1);
        assert_same_ids(&got[i], &ref[i]);
    }
    for (int i = 0; i < N; i++) {
        result_free(&got[i]);
        result_free(&ref[i]);
    }
    /* greedy: every fork writes the same document as the leader */
    gp.sampling.temperature = 0;
    memset(got, 0, sizeof got);
    run_choices(&cases[1], &p, gp, 3, got, 0);
    for (int i = 1; i < 3; i++)
        assert_same_ids(&got[i], &got[0]);
    for (int i = 0; i < 3; i++)
        result_free(&got[i]);
    /* fork_of must name a request over the same prompt */
    sx_gen *g;
    sx_ids q = {0};
    encode_prompt("Another prompt.", &q);
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
    int h;
    gp.fork_of = 0;
    assert_int_equal(sx_gen_add(g, p.v, np, &gp, &got[0], &h, NULL), 0);
    gp.fork_of = h;
    assert_int_equal(sx_gen_add(g, q.v, (int)q.n, &gp, &got[1], NULL, NULL), SX_EINVAL);
    sx_gen_free(g);
    result_free(&got[0]);
    sx_ids_free(&q);
    sx_ids_free(&p);
    json_decref(js);
    sx_gr_free(gr);
}

static void budget_and_cancel(void **state)
{
    (void)state;
    sx_grammar *gr;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"const\":\"a long constant "
                         "value that takes many tokens to write out in full\"}},\"required\":[\"a\"],"
                         "\"additionalProperties\":false}";
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    o.max_ws = 0; /* compact: the whole document is forced text */
    assert_int_equal(sx_gr_compile_schema(VOC, schema, strlen(schema), &o, &gr, NULL), 0);
    sx_gen *g;
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
    sx_ids p = {0};
    encode_prompt("x", &p);
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.grammar = gr;
    gp.max_tokens = 3;
    sx_error err;
    result r[2];
    memset(r, 0, sizeof r);
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, &r[0], NULL, &err), SX_ELIMIT);
    assert_non_null(strstr(err.msg, "too small"));
    /* the whole document is forced: every token is the grammar's */
    gp.max_tokens = 64;
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, &r[0], NULL, &err), 0);
    int h;
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, &r[1], &h, &err), 0);
    sx_gen_cancel(g, h);
    run_all(g);
    assert_int_equal(r[0].finish, SX_FINISH_STOP);
    assert_int_equal(r[0].text.n, strlen("{\"a\":\"a long constant value that takes many tokens to "
                                         "write out in full\"}"));
    assert_true(r[0].n_forced >= r[0].n_completion - 2);
    assert_int_equal(r[1].finish, SX_FINISH_CANCELLED);
    assert_int_equal(r[1].n_completion, 0);
    /* bad requests */
    gp.max_tokens = 0;
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, &r[0], NULL, &err), SX_EINVAL);
    gp.max_tokens = 10;
    int32_t bad = 200000;
    assert_int_equal(sx_gen_add(g, &bad, 1, &gp, &r[0], NULL, &err), SX_EINVAL);
    gp.max_tokens = 1 << 30;
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, &r[0], NULL, &err), SX_ELIMIT);
    result_free(&r[0]);
    result_free(&r[1]);
    sx_ids_free(&p);
    sx_gen_free(g);
    sx_gr_free(gr);
}

static void choices_and_unconstrained(void **state)
{
    (void)state;
    const char *labels[] = {"positive", "negative", "neutral"};
    sx_grammar *gr;
    assert_int_equal(sx_gr_compile_choices(VOC, labels, 3, NULL, &gr, NULL), 0);
    sx_gen *g;
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
    sx_ids p = {0};
    encode_prompt("Great product!", &p);
    result r[5];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 4; i++) {
        sx_gen_params gp;
        memset(&gp, 0, sizeof gp);
        sx_sampling_default(&gp.sampling);
        gp.sampling.seed = (uint64_t)i;
        gp.grammar = gr;
        gp.max_tokens = 16;
        assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, &r[i], NULL, NULL), 0);
    }
    sx_gen_params gu;
    memset(&gu, 0, sizeof gu);
    sx_sampling_default(&gu.sampling);
    gu.max_tokens = 9;
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gu, &r[4], NULL, NULL), 0);
    run_all(g);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r[i].finish, SX_FINISH_STOP);
        int hit = 0;
        for (int k = 0; k < 3; k++) { /* a label comes back as a JSON string */
            char q[32];
            snprintf(q, sizeof q, "\"%s\"", labels[k]);
            hit |= r[i].text.n == strlen(q) && !memcmp(r[i].text.v, q, r[i].text.n);
        }
        if (!hit)
            fail_msg("not a label: '%.*s'", (int)r[i].text.n, r[i].text.v);
        result_free(&r[i]);
    }
    assert_true(r[4].n_completion <= 9);
    assert_true(r[4].finish == SX_FINISH_LENGTH || r[4].finish == SX_FINISH_STOP);
    result_free(&r[4]);
    sx_ids_free(&p);
    sx_gen_free(g);
    sx_gr_free(gr);
}


/* Free text, then the grammar from a token on (sx_gen_freepre).  Tool
 * calls: <tool_call> biased so that the model opens calls; every call
 * that opens closes, and its JSON validates, at any budget (a call opens
 * only while its shortest form fits).  Thinking: the reasoning ends by the
 * model, the budget or max_tokens, and the answer after it validates.
 * Without a grammar the opening token is never written. */
static int32_t tid(const char *s)
{
    int32_t t = sx_tok_find(TOK, s, strlen(s));
    assert_true(t >= 0);
    return t;
}

static void free_prefix(void **state)
{
    (void)state;
    json_error_t je;
    json_t *schema = json_loads(INLINE[0], 0, &je);
    assert_non_null(schema);
    sx_grammar *gr;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    assert_int_equal(sx_gr_compile_json(VOC, schema, &o, &gr, NULL), 0);
    int32_t open = tid("<tool_call>"), close = tid("</tool_call>"), nl = tid("\n");
    int32_t think_end = tid("</think>"), nn = tid("\n\n");
    sx_gen_freepre calls = {.open = open, .open_tail = {nl}, .n_open_tail = 1,
                            .close = {nl, close}, .n_close = 2, .sep = nl, .ban = {close},
                            .n_ban = 1};
    sx_gen_freepre think = {.open = think_end, .open_tail = {nn}, .n_open_tail = 1, .sep = -1,
                            .max_docs = 1, .budget = 5, .must_open = 1};
    float up = 100.0f, nl_up = 20.0f;
    int32_t bias_ids[2] = {open, nl};
    float bias_vals[2] = {up, nl_up};
    sx_gen *g;
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
    sx_ids p = {0};
    encode_prompt("Call a tool.", &p);
    enum { N = 12 };
    result r[N];
    memset(r, 0, sizeof r);
    int budgets[N] = {80, 60, 40, 30, 25, 20, 60, 40, 30, 20, 14, 40};
    for (int i = 0; i < N; i++) {
        sx_gen_params gp;
        memset(&gp, 0, sizeof gp);
        sx_sampling_default(&gp.sampling);
        gp.sampling.temperature = i % 3 == 2 ? 0.0f : 1.0f;
        gp.sampling.seed = (uint64_t)(50 + i);
        gp.max_tokens = budgets[i];
        if (i < 6) { /* calls */
            gp.grammar = gr;
            gp.free = &calls;
            gp.sampling.bias_ids = bias_ids;
            gp.sampling.bias_vals = bias_vals;
            gp.sampling.n_bias = i % 2 ? 1 : 2;
        } else if (i < 11) { /* thinking */
            gp.grammar = gr;
            gp.free = &think;
        } else { /* no grammar: the tag is never written */
            gp.free = &calls;
            gp.sampling.bias_ids = bias_ids;
            gp.sampling.bias_vals = bias_vals;
            gp.sampling.n_bias = 1;
        }
        sx_error err;
        if (sx_gen_add(g, p.v, (int)p.n, &gp, &r[i], NULL, &err))
            fail_msg("add %d: %s", i, err.msg);
    }
    run_all(g);
    int n_calls = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].done, 1);
        assert_true(r[i].n_completion <= budgets[i]);
        if (i >= 11) {
            for (size_t k = 0; k < r[i].ids.n; k++)
                assert_true(r[i].ids.v[k] != open);
            continue;
        }
        int32_t o_tok = i < 6 ? open : think_end;
        for (size_t k = 0; k < r[i].ids.n; k++) {
            if (r[i].ids.v[k] != o_tok)
                continue;
            /* the document: after the tail, up to the close (or the end) */
            size_t a = k + 2, b = a;
            while (b < r[i].ids.n && (i >= 6 || r[i].ids.v[b] != close))
                b++;
            if (i < 6) {
                assert_true(b < r[i].ids.n); /* every call closes */
                assert_int_equal(r[i].ids.v[k + 1], nl);
                assert_int_equal(r[i].ids.v[b - 1], nl);
                b--;
                n_calls++;
            } else {
                assert_int_equal(r[i].ids.v[k + 1], nn);
                assert_true(k <= 5); /* the budget: at most 5 tokens of reasoning */
            }
            sx_bytes t = {0};
            assert_int_equal(sx_tok_decode(TOK, r[i].ids.v + a, b - a, &t, NULL), 0);
            assert_true(validates(schema, &t));
            sx_bytes_free(&t);
        }
        if (i >= 6) /* thinking always ends in its answer */
            assert_int_equal(r[i].finish, SX_FINISH_STOP);
    }
    assert_true(n_calls >= 6);
    for (int i = 0; i < N; i++)
        result_free(&r[i]);
    sx_ids_free(&p);
    sx_gen_free(g);
    sx_gr_free(gr);
    json_decref(schema);
}

/* A reasoning phase before free-text calls (sx_gen_freepre.think, thinking
 * with tool_choice "auto"): the reasoning never ends the answer nor opens a
 * call, and ends with </think> "\n\n" -- written, or forced by the budget
 * or by the room a call needs -- exactly once; then calls (biased open)
 * that close and validate, at every max_tokens down to the close alone. */
static void free_prefix_think_calls(void **state)
{
    (void)state;
    json_error_t je;
    json_t *schema = json_loads(INLINE[0], 0, &je);
    assert_non_null(schema);
    sx_grammar *gr;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    assert_int_equal(sx_gr_compile_json(VOC, schema, &o, &gr, NULL), 0);
    int32_t open = tid("<tool_call>"), close = tid("</tool_call>"), nl = tid("\n");
    int32_t think_end = tid("</think>"), nn = tid("\n\n");
    sx_gen_freepre f = {.open = open, .open_tail = {nl}, .n_open_tail = 1, .close = {nl, close},
                        .n_close = 2, .sep = nl, .ban = {close, think_end}, .n_ban = 2,
                        .think = 1, .think_close = think_end, .think_tail = {nn},
                        .n_think_tail = 1};
    int32_t bias_ids[1] = {open};
    float bias_vals[1] = {100.0f};
    sx_gen *g;
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
    sx_ids p = {0};
    encode_prompt("Think, then call a tool.", &p);
    enum { N = 8 };
    result r[N];
    memset(r, 0, sizeof r);
    int budgets[N] = {80, 50, 30, 2, 60, 40, 25, 3};
    int think_budget[N] = {0, 0, 0, 0, 4, 1, 7, 0};
    sx_gen_freepre fs[N];
    for (int i = 0; i < N; i++) {
        sx_gen_params gp;
        memset(&gp, 0, sizeof gp);
        sx_sampling_default(&gp.sampling);
        gp.sampling.temperature = i % 2 ? 0.0f : 1.0f;
        gp.sampling.seed = (uint64_t)(70 + i);
        gp.max_tokens = budgets[i];
        gp.grammar = gr;
        fs[i] = f;
        fs[i].think_budget = think_budget[i];
        gp.free = &fs[i];
        gp.sampling.bias_ids = bias_ids;
        gp.sampling.bias_vals = bias_vals;
        gp.sampling.n_bias = 1;
        sx_error err;
        if (sx_gen_add(g, p.v, (int)p.n, &gp, &r[i], NULL, &err))
            fail_msg("add %d: %s", i, err.msg);
    }
    run_all(g);
    int n_calls = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].done, 1);
        assert_true(r[i].n_completion <= budgets[i]);
        size_t k0 = 0, n_close = 0;
        for (size_t k = 0; k < r[i].ids.n; k++)
            if (r[i].ids.v[k] == think_end) {
                n_close++;
                k0 = k;
            }
        assert_int_equal(n_close, 1); /* the reasoning always closes, once */
        assert_true(k0 + 1 < r[i].ids.n);
        assert_int_equal(r[i].ids.v[k0 + 1], nn);
        for (size_t k = 0; k < k0; k++)
            assert_true(r[i].ids.v[k] != open); /* no call inside the reasoning */
        if (think_budget[i])
            assert_true(k0 <= (size_t)think_budget[i]);
        for (size_t k = k0 + 2; k < r[i].ids.n; k++) {
            if (r[i].ids.v[k] != open)
                continue;
            size_t a = k + 2, b = a;
            while (b < r[i].ids.n && r[i].ids.v[b] != close)
                b++;
            assert_true(b < r[i].ids.n); /* every call closes */
            sx_bytes t = {0};
            assert_int_equal(sx_tok_decode(TOK, r[i].ids.v + a, b - 1 - a, &t, NULL), 0);
            assert_true(validates(schema, &t));
            sx_bytes_free(&t);
            n_calls++;
        }
    }
    assert_true(n_calls >= 5); /* room for a call was kept wherever one fits */
    for (int i = 0; i < N; i++)
        result_free(&r[i]);
    sx_ids_free(&p);
    sx_gen_free(g);
    sx_gr_free(gr);
    json_decref(schema);
}

/* The request's deadline reaches the grammar's masks (sx_gen_params): a
 * sequence whose deadline has passed finishes with SX_ELIMIT "deadline"
 * at its next mask, the one without a deadline runs to its end. */
static void mask_deadline(void **state)
{
    (void)state;
    sx_grammar *gr;
    const char *schema = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}";
    assert_int_equal(sx_gr_compile_schema(VOC, schema, strlen(schema), NULL, &gr, NULL), 0);
    sx_gen *g;
    assert_int_equal(sx_gen_new(ENG, TOK, NULL, on_event, NULL, &g, NULL), 0);
    sx_ids p = {0};
    encode_prompt("x", &p);
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.grammar = gr;
    gp.max_tokens = 8;
    result r[2];
    memset(r, 0, sizeof r);
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, &r[0], NULL, NULL), 0);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    gp.deadline_ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6 - 1;
    assert_int_equal(sx_gen_add(g, p.v, (int)p.n, &gp, &r[1], NULL, NULL), 0);
    run_all(g);
    assert_int_not_equal(r[0].finish, SX_FINISH_ERROR);
    assert_int_equal(r[1].finish, SX_FINISH_ERROR);
    assert_int_equal(r[1].error.code, SX_ELIMIT);
    assert_non_null(strstr(r[1].error.msg, "deadline"));
    assert_int_equal(r[1].n_completion, 0);
    result_free(&r[0]);
    result_free(&r[1]);
    sx_ids_free(&p);
    sx_gen_free(g);
    sx_gr_free(gr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(constrained_outputs_validate),
        cmocka_unit_test(tight_budget_inside_characters),
        cmocka_unit_test(batching_is_invisible),
        cmocka_unit_test(prefix_cache_is_invisible),
        cmocka_unit_test(prefix_inside_a_chunk),
        cmocka_unit_test(forked_choices),
        cmocka_unit_test(budget_and_cancel),
        cmocka_unit_test(mask_deadline),
        cmocka_unit_test(choices_and_unconstrained),
        cmocka_unit_test(free_prefix),
        cmocka_unit_test(free_prefix_think_calls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
