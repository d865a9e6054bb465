/* Speculative decoding on the CPU engine, beside plain decoding on the same
 * model and threads (medians throughout):
 *   - the cost of one verification pass of k+1 tokens against one decode
 *     step, at the same context (alternated, then rolled back);
 *   - tokens/s at controlled acceptance: the verify loop of sx_gen (one
 *     pass of the pending token and k drafts, greedy choice per position,
 *     KV rollback of the rejected tail) with drafts taken from the model's
 *     own greedy output, each draft token replaced by a wrong one with
 *     probability 1 - a, so a is the per-token acceptance; the drafts cost
 *     nothing here, as prompt lookup's nearly do.  Every choice is checked
 *     against plain greedy decoding;
 *   - the break-even acceptance: where (1 - a^(k+1)) / (1 - a) tokens per
 *     pass pay for the pass;
 *   - end to end through sx_gen (the real tokenizer): plain greedy, prompt
 *     lookup on a prompt whose text repeats, and a draft model equal to
 *     the target (every draft right, but each draft token costs a decode
 *     step of the draft model).
 * Performance depends on shapes, not values: run on a random model of
 * Qwen3-0.6B's shapes (`strux model random --shape 0.6b`).
 *
 * usage: bench_spec --model DIR [--threads N] [--k K] [--context N]
 *                   [--tokens N] [--rounds N] [--tokenizer FILE] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sx_error.h"
#include "engine/cpu/engine.h"
#include "engine/generate.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int32_t argmax(const float *row, int n)
{
    int32_t b = 0;
    for (int t = 1; t < n; t++)
        if (row[t] > row[b])
            b = t;
    return b;
}

static uint64_t rs = 88172645463325252ull;
static double uni(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0;
}

#define DIE(...) do { fprintf(stderr, "bench_spec: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static void step(sx_backend *e, int seq, const int32_t *t, int n, int all, float *logits)
{
    sx_error err;
    sx_step_item it = {seq, t, n, all, NULL, NULL};
    if (sx_backend_step(e, &it, 1, logits, &err))
        DIE("step: %s", err.msg);
}

static void truncate_to(sx_backend *e, int seq, int len)
{
    sx_error err;
    if (sx_backend_seq_truncate(e, seq, len, &err))
        DIE("truncate: %s", err.msg);
}

/* The verify loop at per-token acceptance a over the greedy sequence ref
 * (ref[0] follows the context); returns seconds, counts passes and
 * mismatches with plain greedy. */
static double controlled(sx_backend *e, int seq, int ctx, const int32_t *ref, int n, int k,
                         double a, int V, float *logits, int *passes, int *wrong)
{
    int32_t in[17];
    int pos = 0; /* ref[0..pos] chosen; ref[pos] pending (not in the KV) */
    *passes = *wrong = 0;
    double t0 = now();
    while (pos + 1 < n) {
        int nd = k < n - 1 - pos ? k : n - 1 - pos;
        in[0] = ref[pos];
        for (int j = 0; j < nd; j++) {
            int32_t good = ref[pos + 1 + j];
            in[1 + j] = uni() < a ? good : (good + 1) % V;
        }
        int base = ctx + pos;
        step(e, seq, in, 1 + nd, 1, logits);
        (*passes)++;
        int kept = 0, p0 = pos;
        for (int j = 0; j <= nd && p0 + 1 + j < n; j++) {
            int32_t c = argmax(logits + (size_t)j * (size_t)V, V);
            *wrong += c != ref[p0 + 1 + j];
            pos = p0 + 1 + j;
            if (j == nd || c != in[1 + j])
                break;
            kept++;
        }
        truncate_to(e, seq, base + 1 + kept);
    }
    double dt = now() - t0;
    truncate_to(e, seq, ctx);
    return dt;
}

/* ---- end to end through sx_gen ---------------------------------------------- */

typedef struct e2e {
    int n, done;
    double t_first, t_end;
    int32_t ids[4096];
} e2e;

static void on_event(const sx_gen_event *ev, void *ctx)
{
    e2e *r = ev->user;
    (void)ctx;
    if (!ev->done) {
        if (r->n == 0)
            r->t_first = now();
        if (r->n < 4096)
            r->ids[r->n] = ev->token;
        r->n++;
    } else {
        r->done = 1;
        r->t_end = now();
    }
}

/* decode tokens/s after the first token */
static double run_gen(sx_backend *e, sx_backend *draft, const sx_tokenizer *tok, const sx_ids *p,
                      int spec, int k, int max_tokens, e2e *r, int64_t *drafted, int64_t *acc)
{
    sx_gen *g;
    sx_error err;
    if (sx_gen_new(e, tok, NULL, on_event, NULL, &g, &err))
        DIE("%s", err.msg);
    if (draft && sx_gen_set_draft(g, draft, &err))
        DIE("%s", err.msg);
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.sampling.temperature = 0;
    gp.max_tokens = max_tokens;
    gp.speculate = spec;
    gp.draft_k = k;
    memset(r, 0, sizeof *r);
    if (sx_gen_add(g, p->v, (int)p->n, &gp, r, NULL, &err))
        DIE("%s", err.msg);
    int live = 1;
    while (live)
        if (sx_gen_step(g, &live, &err))
            DIE("%s", err.msg);
    sx_gen_spec_stats(g, drafted, acc);
    sx_gen_free(g);
    return (r->n - 1) / (r->t_end - r->t_first);
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *tok_path = NULL;
    int threads = 0, k = 4, ctx = 128, n_tok = 64, rounds = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            DIE("%s needs a value", a);
        if (!strcmp(a, "--model")) dir = v;
        else if (!strcmp(a, "--tokenizer")) tok_path = v;
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--k")) k = atoi(v);
        else if (!strcmp(a, "--context")) ctx = atoi(v);
        else if (!strcmp(a, "--tokens")) n_tok = atoi(v);
        else if (!strcmp(a, "--rounds")) rounds = atoi(v);
        else DIE("unknown option %s", a);
        i++;
    }
    if (!dir || k < 1 || k > 16 || ctx < 1 || n_tok < 8 || rounds < 1)
        DIE("usage: bench_spec --model DIR [--threads N] [--k 1..16] [--context N] [--tokens N] "
            "[--rounds N] [--tokenizer FILE]");
    sx_error err;
    sx_model *m;
    sx_backend *e, *de;
    if (sx_model_load(dir, &m, &err))
        DIE("%s", err.msg);
    sx_engine_opts o = {.n_threads = threads, .max_seqs = 8, .kv_tokens = 16384};
    if (sx_backend_open("cpu", m, &o, &e, &err))
        DIE("%s", err.msg);
    int V = m->cfg.vocab_rows;
    float *logits = malloc((size_t)(k + 1) * (size_t)V * sizeof *logits);
    int32_t *prompt = malloc((size_t)ctx * sizeof *prompt), *ref = malloc((size_t)n_tok * sizeof *ref);
    if (!logits || !prompt || !ref)
        DIE("out of memory");
    for (int i = 0; i < ctx; i++)
        prompt[i] = (int32_t)(uni() * 151000);
    printf("model: %s (%d layers, hidden %d)\nthreads: %d, cpu path %s\nk: %d, context %d, "
           "%d tokens, %d rounds\n", dir, m->cfg.n_layers, m->cfg.hidden, threads,
           sx_backend_describe(e), k, ctx, n_tok, rounds);

    int seq;
    if (sx_backend_seq_new(e, &seq, &err))
        DIE("%s", err.msg);
    step(e, seq, prompt, ctx, 0, logits);
    int32_t first = argmax(logits, V);

    /* 1. one decode step against one verify pass of k + 1, alternated */
    int reps = 8 * rounds;
    double *td = malloc((size_t)reps * sizeof *td), *tv = malloc((size_t)reps * sizeof *tv);
    int32_t in[17];
    for (int i = 0; i <= k; i++)
        in[i] = (int32_t)(uni() * 151000);
    in[0] = first;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        step(e, seq, in, 1, 0, logits);
        td[r] = now() - t0;
        truncate_to(e, seq, ctx);
        t0 = now();
        step(e, seq, in, k + 1, 1, logits);
        tv[r] = now() - t0;
        truncate_to(e, seq, ctx);
    }
    double t1 = median(td, reps), tk = median(tv, reps), ratio = tk / t1;
    printf("decode step: %.2f ms median; verify pass of %d tokens: %.2f ms median; ratio %.2fx\n",
           t1 * 1e3, k + 1, tk * 1e3, ratio);
    /* break-even: expected tokens per pass (1 - a^(k+1)) / (1 - a) = ratio */
    double lo = 0, hi = 1;
    for (int it = 0; it < 60; it++) {
        double a = 0.5 * (lo + hi), tp = 0, p = 1;
        for (int j = 0; j <= k; j++, p *= a)
            tp += p;
        if (tp < ratio)
            lo = a;
        else
            hi = a;
    }
    printf("break-even per-token acceptance (free drafts): %.3f\n", lo);

    /* 2. the reference: plain greedy decoding, timed */
    double *tp = malloc((size_t)rounds * sizeof *tp);
    for (int r = 0; r < rounds; r++) {
        int32_t t = first;
        double t0 = now();
        for (int i = 0; i < n_tok; i++) {
            ref[i] = t;
            step(e, seq, &t, 1, 0, logits);
            t = argmax(logits, V);
        }
        tp[r] = (n_tok - 1) / (now() - t0);
        truncate_to(e, seq, ctx);
    }
    double plain = median(tp, rounds);
    printf("plain decode: %.2f tokens/s median\n", plain);

    /* 3. controlled acceptance */
    static const double accs[] = {1.0, 0.9, 0.8, 0.6, 0.4, 0.2, 0.0};
    for (size_t ai = 0; ai < sizeof accs / sizeof *accs; ai++) {
        double *ts = malloc((size_t)rounds * sizeof *ts);
        int passes = 0, wrong = 0;
        for (int r = 0; r < rounds; r++) {
            double dt = controlled(e, seq, ctx, ref, n_tok, k, accs[ai], V, logits, &passes, &wrong);
            ts[r] = (n_tok - 1) / dt;
            if (wrong)
                DIE("acceptance %.1f: %d choices differ from plain greedy decoding", accs[ai], wrong);
        }
        double tps = median(ts, rounds);
        printf("acceptance %.1f: %.2f tokens/s median, %.2fx plain, %.2f tokens per pass; "
               "choices equal to plain greedy\n", accs[ai], tps, tps / plain,
               (double)(n_tok - 1) / passes);
        free(ts);
    }
    sx_backend_seq_free(e, seq);

    /* 4. end to end through sx_gen */
    char path[4096];
    sx_tokenizer *tok;
    if (sx_tok_resolve_path(tok_path, dir, getenv("STRUX_SHARED"), path, sizeof path, &err) ||
        sx_tok_load(path, &tok, &err))
        DIE("%s", err.msg);
    sx_tok_set_n_rows(tok, V);
    if (sx_backend_open("cpu", m, &o, &de, &err))
        DIE("%s", err.msg);
    const char *doc = "Order 4471 ships to Jane Doe, 12 Harbour Street, Leith, Edinburgh EH6 6LX; "
                      "order 4471 ships to Jane Doe, 12 Harbour Street, Leith, Edinburgh EH6 6LX; "
                      "order 4471 ships to Jane Doe, 12 Harbour Street, Leith, Edinburgh EH6 6LX.";
    sx_chat_msg msgs[1] = {{"user", doc}};
    sx_ids p = {0};
    if (sx_chat_encode(tok, msgs, 1, 1, &p, &err))
        DIE("%s", err.msg);
    static const char *const names[3] = {"plain", "prompt lookup (ngram)", "draft model = target"};
    double *te[3];
    int64_t dr[3] = {0}, ac[3] = {0};
    e2e *res = malloc(3 * sizeof *res);
    for (int v = 0; v < 3; v++)
        te[v] = malloc((size_t)rounds * sizeof *te[v]);
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < 3; v++) {
            int64_t d, a;
            te[v][r] = run_gen(e, v == 2 ? de : NULL, tok, &p, v, k, n_tok, &res[v], &d, &a);
            dr[v] += d;
            ac[v] += a;
        }
    double base = median(te[0], rounds);
    for (int v = 0; v < 3; v++) {
        int same = res[v].n == res[0].n && !memcmp(res[v].ids, res[0].ids,
                                                     (size_t)res[0].n * sizeof(int32_t));
        double tps = median(te[v], rounds);
        printf("sx_gen %s: %.2f tokens/s median, %.2fx plain", names[v], tps, tps / base);
        if (v)
            printf(", %lld of %lld drafts accepted (%.0f%%)", (long long)ac[v], (long long)dr[v],
                   dr[v] ? 100.0 * (double)ac[v] / (double)dr[v] : 0.0);
        printf("%s\n", v ? (same ? ", output equal to plain" : ", OUTPUT DIFFERS") : "");
        if (!same)
            return 1;
        free(te[v]);
    }
    sx_ids_free(&p);
    free(res);
    sx_tok_free(tok);
    sx_backend_close(de);
    sx_backend_close(e);
    sx_model_free(m);
    free(logits), free(prompt), free(ref), free(td), free(tv), free(tp);
    return 0;
}
