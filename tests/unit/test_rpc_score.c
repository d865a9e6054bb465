/* rpc/score.c: label log-probabilities computed on forks of the prompt's
 * KV cache equal the straightforward computation -- each label run from
 * scratch after the prompt in a fresh sequence, every row's log-softmax
 * summed -- on a tiny random-weight Qwen3 written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/cpu/engine.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "rpc/server.h"

static char dir[256];
static sx_model *M;
static sx_backend *E;
static sx_tokenizer *TOK;

static int setup(void **state)
{
    const char *shared = getenv("STRUX_SHARED");
    char tok[4096];
    snprintf(tok, sizeof tok, "%s/qwen3-tokenizer/tokenizer.json", shared ? shared : "../shared");
    snprintf(dir, sizeof dir, "/tmp/strux-test-score-%d", (int)getpid());
    sx_qwen3_config c;
    sx_error e;
    if (sx_qwen3_shape("tiny", &c, &e) || sx_model_write_random(&c, 7, dir, NULL, &e) ||
        sx_model_load(dir, &M, &e) || sx_tok_load(tok, &TOK, &e)) {
        fprintf(stderr, "setup: %s\n", e.msg);
        return -1;
    }
    sx_tok_set_n_rows(TOK, M->cfg.vocab_rows);
    sx_engine_opts o = {.n_threads = 2, .max_seqs = 32, .kv_tokens = 4096, .block_tokens = 16};
    if (sx_backend_open("cpu", M, &o, &E, &e)) {
        fprintf(stderr, "engine: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    sx_backend_close(E);
    sx_model_free(M);
    sx_tok_free(TOK);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void encode(const char *text, sx_ids *ids)
{
    sx_error e;
    assert_int_equal(sx_tok_encode(TOK, text, strlen(text), 0, ids, &e), SX_OK);
}

/* log p(label | prompt) from scratch: one sequence, all rows. */
static double reference(const sx_ids *prompt, const sx_ids *label)
{
    int rows = M->cfg.vocab_rows, valid = sx_tok_vocab_size(TOK);
    size_t n = prompt->n + label->n;
    int32_t *all = malloc(n * sizeof *all);
    float *logits = malloc(n * (size_t)rows * sizeof *logits);
    memcpy(all, prompt->v, prompt->n * sizeof *all);
    memcpy(all + prompt->n, label->v, label->n * sizeof *all);
    int seq;
    sx_error e;
    assert_int_equal(sx_backend_seq_new(E, &seq, &e), SX_OK);
    sx_step_item it = {.seq = seq, .tokens = all, .n = (int)n, .logits_all = 1};
    assert_int_equal(sx_backend_step(E, &it, 1, logits, &e), SX_OK);
    double lp = 0;
    for (size_t t = 0; t < label->n; t++) {
        const float *row = logits + (prompt->n - 1 + t) * (size_t)rows;
        double mx = row[0], sum = 0;
        for (int i = 1; i < valid; i++)
            mx = row[i] > mx ? row[i] : mx;
        for (int i = 0; i < valid; i++)
            sum += exp(row[i] - mx);
        lp += row[label->v[t]] - mx - log(sum);
    }
    sx_backend_seq_free(E, seq);
    free(all);
    free(logits);
    return lp;
}

static void forks_equal_from_scratch(void **state)
{
    (void)state;
    sx_ids prompt = {0};
    encode("Classify this review: the soup was cold and the waiter rude.", &prompt);
    const char *texts[] = {"\"positive\"", "\"negative\"", "\"neutral\"",
                           "\"a label long enough to span several tokens of its own\""};
    enum { NL = 4 };
    sx_ids labels[NL] = {{0}};
    int32_t eot = sx_tok_find(TOK, "<|im_end|>", 10);
    for (int i = 0; i < NL; i++) {
        encode(texts[i], &labels[i]);
        sx_ids_push(&labels[i], eot);
    }
    int64_t before = sx_backend_free_tokens(E);
    double logp[NL];
    sx_error e;
    /* a small chunk makes the prompt prefill in several steps */
    assert_int_equal(sx_rpc_score_labels(E, sx_tok_vocab_size(TOK), prompt.v, (int)prompt.n, -1,
                                         0, labels, NL, 5, logp, &e),
                     SX_OK);
    /* every sequence it made is gone */
    assert_int_equal(sx_backend_free_tokens(E), before);
    for (int i = 0; i < NL; i++) {
        double want = reference(&prompt, &labels[i]);
        if (fabs(logp[i] - want) > 1e-3 * (1 + fabs(want)))
            fprintf(stderr, "label %d: %.6f vs %.6f\n", i, logp[i], want);
        assert_true(fabs(logp[i] - want) <= 1e-3 * (1 + fabs(want)));
        assert_true(logp[i] < 0);
    }
    /* from a sequence that already holds the prompt's first tokens (a
     * cached prefix): the same scores, and that sequence is freed too */
    int base;
    const int P = 7;
    float *row = malloc((size_t)sx_backend_model(E)->cfg.vocab_rows * sizeof *row);
    assert_int_equal(sx_backend_seq_new(E, &base, &e), SX_OK);
    sx_step_item it = {.seq = base, .tokens = prompt.v, .n = P, .logits_all = 0};
    assert_int_equal(sx_backend_step(E, &it, 1, row, &e), SX_OK);
    free(row);
    double logp2[NL];
    assert_int_equal(sx_rpc_score_labels(E, sx_tok_vocab_size(TOK), prompt.v, (int)prompt.n, base,
                                         P, labels, NL, 5, logp2, &e),
                     SX_OK);
    assert_int_equal(sx_backend_free_tokens(E), before);
    for (int i = 0; i < NL; i++)
        assert_true(fabs(logp2[i] - logp[i]) <= 1e-4 * (1 + fabs(logp[i])));
    /* a cached part as long as the prompt is refused, and the base freed */
    assert_int_equal(sx_backend_seq_new(E, &base, &e), SX_OK);
    assert_int_equal(sx_rpc_score_labels(E, sx_tok_vocab_size(TOK), prompt.v, (int)prompt.n, base,
                                         (int)prompt.n, labels, NL, 5, logp2, &e),
                     SX_EINVAL);
    assert_int_equal(sx_backend_free_tokens(E), before);
    for (int i = 0; i < NL; i++)
        sx_ids_free(&labels[i]);
    sx_ids_free(&prompt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forks_equal_from_scratch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
