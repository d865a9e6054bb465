/* sx_gen's prefix cache for any shared prefix, on a small random-weight
 * Qwen3: a request whose prompt starts like an earlier one's (the same
 * document under another schema, a chat's next turn) forks the cached KV
 * and prefills only the rest -- n_cached is exactly the shared length --
 * and its answer equals the one computed without any cache, greedy and
 * sampled; the budget and least-recently-used eviction hold, and the
 * statistics count hits, misses, evictions and cached tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/cpu/engine.h"
#include "engine/generate.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/grammar.h"

static sx_tokenizer *TOK;
static sx_vocab *VOC;
static sx_model *MODEL;
static sx_backend *ENG;
static sx_grammar *GR;
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
    snprintf(DIR_, sizeof DIR_, "/tmp/strux_test_prefix_cache_%d", (int)getpid());
    if (sx_model_write_random(&cfg, 13, DIR_, NULL, &err) || sx_model_load(DIR_, &MODEL, &err))
        return -1;
    sx_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = 2;
    eo.max_seqs = 8 + 16;
    eo.kv_tokens = 8192;
    json_t *schema = json_loads("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
                                "\"maxLength\":8},\"n\":{\"type\":\"integer\"}},\"required\":"
                                "[\"name\",\"n\"],\"additionalProperties\":false}", 0, NULL);
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    int rc = sx_backend_open("cpu", MODEL, &eo, &ENG, &err) || sx_gr_compile_json(VOC, schema, &o, &GR, &err);
    json_decref(schema);
    return rc ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    sx_gr_free(GR);
    sx_backend_close(ENG);
    sx_model_free(MODEL);
    sx_vocab_free(VOC);
    sx_tok_free(TOK);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", DIR_);
    return system(cmd) == 0 ? 0 : -1;
}

typedef struct res {
    sx_ids ids;
    sx_bytes text;
    int done, finish, n_cached;
} res;

static void on_event(const sx_gen_event *ev, void *ctx)
{
    res *r = ev->user;
    (void)ctx;
    if (ev->piece_len)
        sx_bytes_append(&r->text, ev->piece, ev->piece_len);
    if (!ev->done) {
        sx_ids_push(&r->ids, ev->token);
        return;
    }
    r->done = 1;
    r->finish = ev->finish;
    r->n_cached = ev->n_cached;
}

static void res_free(res *r)
{
    sx_ids_free(&r->ids);
    sx_bytes_free(&r->text);
    memset(r, 0, sizeof *r);
}

static void prompt(const char *user, const char *reply, const char *next, sx_ids *out)
{
    sx_chat_msg m[4] = {{"system", "Reply with JSON."}, {"user", user}, {"assistant", reply},
                        {"user", next}};
    out->n = 0;
    assert_int_equal(sx_chat_encode(TOK, m, reply ? 4 : 2, 1, out, NULL), 0);
}

static sx_gen *gen_chunk(int64_t budget, int chunk)
{
    sx_gen *g;
    sx_error err;
    sx_gen_opts o = {.prefix_cache_tokens = budget, .prefill_chunk = chunk};
    assert_int_equal(sx_gen_new(ENG, TOK, &o, on_event, NULL, &g, &err), 0);
    return g;
}

static sx_gen *gen(int64_t budget)
{
    return gen_chunk(budget, 0);
}

static void params(float temperature, sx_gen_params *gp)
{
    memset(gp, 0, sizeof *gp);
    gp->grammar = GR;
    sx_sampling_default(&gp->sampling);
    gp->sampling.temperature = temperature;
    gp->sampling.seed = 5;
    gp->max_tokens = 40;
}

static void run(sx_gen *g, const sx_ids *p, float temperature, res *r)
{
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    gp.grammar = GR;
    sx_sampling_default(&gp.sampling);
    gp.sampling.temperature = temperature;
    gp.sampling.seed = 5;
    gp.max_tokens = 40;
    sx_error err;
    memset(r, 0, sizeof *r);
    assert_int_equal(sx_gen_add(g, p->v, (int)p->n, &gp, r, NULL, &err), 0);
    for (int live = 1, steps = 0; live > 0; steps++) {
        assert_int_equal(sx_gen_step(g, &live, &err), 0);
        assert_true(steps < 500);
    }
    assert_int_equal(r->finish, SX_FINISH_STOP);
}

static int shared_len(const sx_ids *a, const sx_ids *b)
{
    size_t i = 0;
    while (i < a->n && i < b->n && a->v[i] == b->v[i])
        i++;
    return (int)i;
}

/* the answer to p after `first` warmed the cache equals p's answer on a
 * generator without a cache; n_cached is what the prompts share */
static void reuse_case(const sx_ids *first, const sx_ids *p, float temperature)
{
    res a, warm, b;
    sx_gen *cold = gen(-1);
    run(cold, p, temperature, &a);
    assert_int_equal(a.n_cached, 0);
    sx_gen_free(cold);

    sx_gen *g = gen(0);
    run(g, first, temperature, &warm);
    run(g, p, temperature, &b);
    int want = shared_len(first, p);
    if (want > (int)p->n - 1)
        want = (int)p->n - 1;
    print_message("prompt %zu tokens, %d shared, %d from the cache\n", p->n, want, b.n_cached);
    assert_true(want >= 16);
    assert_int_equal(b.n_cached, want);
    assert_int_equal(a.ids.n, b.ids.n);
    assert_memory_equal(a.ids.v, b.ids.v, a.ids.n * sizeof *a.ids.v);
    sx_gen_prefix_stats st;
    sx_gen_prefix_stats_get(g, &st);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.cached_tokens, want);
    assert_true(st.entries >= 1 && st.tokens >= (int64_t)p->n);
    sx_gen_free(g);
    res_free(&a);
    res_free(&warm);
    res_free(&b);
}

static const char *DOC =
    "Invoice 2041 from Lindqvist Maskin AB to Ada Lovelace, 12 Marylebone Road, London. "
    "Three gear wheels at 120.00 EUR each, one difference engine crank at 80.50 EUR; "
    "total 440.50 EUR, due within thirty days.";

static void same_document_other_question(void **state)
{
    (void)state;
    char u1[1024], u2[1024];
    snprintf(u1, sizeof u1, "%s\n\nGive the customer's name.", DOC);
    snprintf(u2, sizeof u2, "%s\n\nGive the invoice number.", DOC);
    sx_ids p1 = {0}, p2 = {0};
    prompt(u1, NULL, NULL, &p1);
    prompt(u2, NULL, NULL, &p2);
    reuse_case(&p1, &p2, 0);
    reuse_case(&p1, &p2, 1.0f);
    sx_ids_free(&p1);
    sx_ids_free(&p2);
}

static void next_chat_turn(void **state)
{
    (void)state;
    sx_ids p1 = {0}, p2 = {0};
    prompt(DOC, NULL, NULL, &p1);
    prompt(DOC, "{\"name\":\"Ada\",\"n\":2041}", "And the total?", &p2);
    reuse_case(&p1, &p2, 0);
    /* the same prompt again: all but its last token */
    reuse_case(&p2, &p2, 0);
    sx_ids_free(&p1);
    sx_ids_free(&p2);
}

static void budget_and_eviction(void **state)
{
    (void)state;
    sx_ids p1 = {0}, p2 = {0}, p3 = {0};
    char u[1024];
    prompt(DOC, NULL, NULL, &p1);
    snprintf(u, sizeof u, "A different document: %s", DOC);
    prompt(u, NULL, NULL, &p2);
    snprintf(u, sizeof u, "%s\n\nOnce more.", DOC);
    prompt(u, NULL, NULL, &p3);
    res r;
    /* room for one prompt: the second evicts the first, so the third finds
     * only what it shares with the second (less than a block) */
    sx_gen *g = gen((int64_t)p1.n + 8);
    run(g, &p1, 0, &r);
    res_free(&r);
    run(g, &p2, 0, &r);
    res_free(&r);
    run(g, &p3, 0, &r);
    assert_int_equal(r.n_cached, 0);
    res_free(&r);
    sx_gen_prefix_stats st;
    sx_gen_prefix_stats_get(g, &st);
    assert_true(st.evictions >= 2);
    assert_int_equal(st.hits, 0);
    assert_int_equal(st.entries, 1);
    assert_true(st.tokens <= (int64_t)p1.n + 8);
    sx_gen_free(g);
    /* a budget below one prompt keeps nothing */
    g = gen(8);
    run(g, &p1, 0, &r);
    res_free(&r);
    run(g, &p3, 0, &r);
    assert_int_equal(r.n_cached, 0);
    res_free(&r);
    sx_gen_prefix_stats_get(g, &st);
    assert_int_equal(st.entries, 0);
    sx_gen_free(g);
    /* a big enough one keeps the first: the third shares the document */
    g = gen(0);
    run(g, &p1, 0, &r);
    res_free(&r);
    run(g, &p2, 0, &r);
    res_free(&r);
    run(g, &p3, 0, &r);
    assert_int_equal(r.n_cached, shared_len(&p1, &p3));
    res_free(&r);
    sx_gen_free(g);
    sx_ids_free(&p1);
    sx_ids_free(&p2);
    sx_ids_free(&p3);
}

/* Runs prompts p[0..n) submitted together on g; each answer must equal
 * want[i] (computed alone, without a cache).  cancel_first: the first
 * request is cancelled after its first step, in the middle of its prefill. */
static void together(sx_gen *g, const sx_ids *p, int n, const res *want, int cancel_first,
                     res *r)
{
    sx_gen_params gp;
    sx_error err;
    int h0 = 0;
    params(0, &gp);
    for (int i = 0; i < n; i++) {
        memset(&r[i], 0, sizeof r[i]);
        assert_int_equal(sx_gen_add(g, p[i].v, (int)p[i].n, &gp, &r[i], i ? NULL : &h0, &err), 0);
    }
    for (int live = 1, steps = 0; live > 0; steps++) {
        assert_int_equal(sx_gen_step(g, &live, &err), 0);
        if (cancel_first && steps == 0)
            sx_gen_cancel(g, h0);
        assert_true(steps < 2000);
    }
    for (int i = cancel_first; i < n; i++) {
        assert_int_equal(r[i].finish, SX_FINISH_STOP);
        assert_int_equal(r[i].ids.n, want[i].ids.n);
        assert_memory_equal(r[i].ids.v, want[i].ids.v, want[i].ids.n * sizeof *want[i].ids.v);
    }
}

/* Requests that arrive together with the same document: the later ones
 * wait for the first one's prefill to get past what they share and fork
 * its KV there, instead of each prefilling the document (the cache holds a
 * prefix only once it is prefilled).  Their answers equal the ones
 * computed one by one without a cache; the shared tokens are computed
 * once.  A leader cancelled halfway lets its followers prefill alone. */
static void arriving_together(void **state)
{
    (void)state;
    enum { N = 4 };
    const char *q[N] = {"Give the customer's name.", "Give the invoice number.",
                        "Give the total.", "Give the due date."};
    sx_ids p[N] = {{0}};
    res want[N], r[N];
    char u[1024];
    for (int i = 0; i < N; i++) {
        snprintf(u, sizeof u, "%s\n\n%s", DOC, q[i]);
        prompt(u, NULL, NULL, &p[i]);
    }
    int shared = shared_len(&p[0], &p[1]);
    for (int i = 2; i < N; i++)
        assert_int_equal(shared_len(&p[0], &p[i]), shared);
    assert_true(shared >= 16);
    sx_gen *cold = gen(-1);
    for (int i = 0; i < N; i++)
        run(cold, &p[i], 0, &want[i]);
    sx_gen_free(cold);

    /* chunks of 256 (one step prefills the document) and of 7 (the fork
     * point falls inside a chunk and a KV block, many steps in) */
    int chunks[2] = {0, 7};
    for (int c = 0; c < 2; c++) {
        sx_gen *g = gen_chunk(0, chunks[c]);
        together(g, p, N, want, 0, r);
        sx_gen_prefix_stats st;
        sx_gen_prefix_stats_get(g, &st);
        int64_t computed = 0;
        for (int i = 0; i < N; i++) {
            assert_int_equal(r[i].n_cached, i ? shared : 0);
            computed += (int64_t)p[i].n - r[i].n_cached;
        }
        print_message("chunk %d: %d prompts together, %d shared, %lld prompt tokens computed\n",
                      chunks[c], N, shared, (long long)computed);
        assert_int_equal(st.joins, N - 1);
        assert_int_equal(st.hits, N - 1);
        assert_int_equal(st.misses, 1);
        assert_int_equal(st.cached_tokens, (int64_t)(N - 1) * shared);
        for (int i = 0; i < N; i++)
            res_free(&r[i]);
        sx_gen_free(g);
    }

    /* the leader cancelled after its first chunk of 7: the others do not
     * wait for ever; one of them prefills, the rest follow it */
    sx_gen *g = gen_chunk(0, 7);
    together(g, p, N, want, 1, r);
    assert_int_equal(r[0].finish, SX_FINISH_CANCELLED);
    sx_gen_prefix_stats st;
    sx_gen_prefix_stats_get(g, &st);
    assert_int_equal(r[1].n_cached, 0);
    for (int i = 2; i < N; i++)
        assert_int_equal(r[i].n_cached, shared);
    assert_int_equal(st.joins, N - 2);
    for (int i = 0; i < N; i++)
        res_free(&r[i]);
    sx_gen_free(g);
    for (int i = 0; i < N; i++) {
        res_free(&want[i]);
        sx_ids_free(&p[i]);
    }
}

/* A request may follow one that is itself waiting: the second and third
 * prompts share the document with the first and a second document with
 * each other, so the second follows the first up to the end of the
 * document and the third follows the second up to the end of the second
 * document -- whether or not the first is cancelled on the way. */
static void following_a_follower(void **state)
{
    (void)state;
    enum { N = 3 };
    const char *other = "Meeting notes, 3 March: the board approved the budget for the new "
                        "workshop in Uppsala; Lindqvist to order two lathes before April.";
    sx_ids p[N] = {{0}};
    res want[N], r[N];
    char u[2048];
    snprintf(u, sizeof u, "%s\n\nGive the customer's name.", DOC);
    prompt(u, NULL, NULL, &p[0]);
    snprintf(u, sizeof u, "%s\n\nAlso: %s\n\nGive the total.", DOC, other);
    prompt(u, NULL, NULL, &p[1]);
    snprintf(u, sizeof u, "%s\n\nAlso: %s\n\nGive the date.", DOC, other);
    prompt(u, NULL, NULL, &p[2]);
    int s01 = shared_len(&p[0], &p[1]), s12 = shared_len(&p[1], &p[2]);
    assert_true(s01 >= 16 && s12 >= s01 + 16);
    sx_gen *cold = gen(-1);
    for (int i = 0; i < N; i++)
        run(cold, &p[i], 0, &want[i]);
    sx_gen_free(cold);
    for (int cancel = 0; cancel < 2; cancel++) {
        /* with the prefix cache off nothing is shared */
        sx_gen *g = gen_chunk(-1, 7);
        together(g, p, N, want, cancel, r);
        for (int i = cancel; i < N; i++)
            assert_int_equal(r[i].n_cached, 0);
        for (int i = 0; i < N; i++)
            res_free(&r[i]);
        sx_gen_free(g);
        g = gen_chunk(0, 7);
        together(g, p, N, want, cancel, r);
        if (!cancel)
            assert_int_equal(r[0].n_cached, 0);
        assert_int_equal(r[1].n_cached, cancel ? 0 : s01);
        assert_int_equal(r[2].n_cached, s12);
        sx_gen_prefix_stats st;
        sx_gen_prefix_stats_get(g, &st);
        assert_int_equal(st.joins, cancel ? 1 : 2);
        for (int i = 0; i < N; i++)
            res_free(&r[i]);
        sx_gen_free(g);
    }
    for (int i = 0; i < N; i++) {
        res_free(&want[i]);
        sx_ids_free(&p[i]);
    }
}

/* Too few engine sequences for every request: a follower let go by its
 * cancelled leader finds none free and goes back to the queue, and its
 * own follower must not keep waiting for it there (holding the room it
 * needs); one whose fork fails queues too.  Every request still ends with
 * the answer it has alone. */
static void followers_out_of_sequences(void **state)
{
    (void)state;
    enum { N = 4 };
    const char *other = "Meeting notes, 3 March: the board approved the budget for the new "
                        "workshop in Uppsala; Lindqvist to order two lathes before April.";
    sx_ids p[N] = {{0}};
    res want[N], r[N];
    char u[2048];
    snprintf(u, sizeof u, "%s\n\nGive the customer's name.", DOC);
    prompt(u, NULL, NULL, &p[0]);
    prompt("Something else entirely: what is the capital of Sweden?", NULL, NULL, &p[1]);
    snprintf(u, sizeof u, "%s\n\nAlso: %s\n\nGive the total.", DOC, other);
    prompt(u, NULL, NULL, &p[2]);
    snprintf(u, sizeof u, "%s\n\nAlso: %s\n\nGive the date.", DOC, other);
    prompt(u, NULL, NULL, &p[3]);
    sx_gen *cold = gen(-1);
    for (int i = 0; i < N; i++)
        run(cold, &p[i], 0, &want[i]);
    sx_gen_free(cold);
    sx_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = 2;
    eo.max_seqs = 2;
    eo.kv_tokens = 4096;
    sx_backend *e;
    sx_error err;
    assert_int_equal(sx_backend_open("cpu", MODEL, &eo, &e, &err), 0);
    sx_gen *g;
    sx_gen_opts o = {.prefill_chunk = 7};
    assert_int_equal(sx_gen_new(e, TOK, &o, on_event, NULL, &g, &err), 0);
    together(g, p, N, want, 1, r);
    assert_int_equal(r[0].finish, SX_FINISH_CANCELLED);
    sx_gen_free(g);
    sx_backend_close(e);
    for (int i = 0; i < N; i++) {
        res_free(&r[i]);
        res_free(&want[i]);
        sx_ids_free(&p[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_document_other_question),
        cmocka_unit_test(next_chat_turn),
        cmocka_unit_test(budget_and_eviction),
        cmocka_unit_test(arriving_together),
        cmocka_unit_test(following_a_follower),
        cmocka_unit_test(followers_out_of_sequences),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
