/* Batch invariance of the CPU forward pass: a sequence's logits row must be
 * bitwise the same whether its token runs alone, in a batch of decode rows
 * at any position, beside other sequences' prefill chunks, in any chunking
 * of its own prompt, with a masked (sparse) LM head or a dense one, and on
 * any thread count.  That is what lets a request retried on another
 * replica with the same id and seed come back with the same answer
 * (docs/PROTOCOL.md).  Checked per weight mode and per CPU path this
 * machine runs (STRUX_CPU).
 *
 * The model is built in memory with random bf16 weights; its shapes make
 * every kernel branch run: k above the kernels' k slices (intermediate
 * 600), head_dim 64 with two q heads per kv head, 16-token cache blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/engine.h"
#include "engine/cpu/cpu_kernels.h"
#include "tests/unit/helpers/test_model.h"

enum { VOCAB = 1000, HID = 160, INTER = 600, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HDIM = 64 };
enum { NSEQ = 6, MAXLEN = 72, MASK_WORDS = (VOCAB + 31) / 32 };

static uint64_t rng;
static uint64_t next_u64(void) { return tm_next(&rng); }
static int irand(int n) { return (int)(next_u64() % (uint64_t)n); }

static tmodel *tm_new(uint64_t seed)
{
    const sx_qwen3_config shape = {.vocab_rows = VOCAB, .hidden = HID, .intermediate = INTER,
                                   .n_layers = LAYERS, .n_heads = HEADS,
                                   .n_kv_heads = KV_HEADS, .head_dim = HDIM};
    tmodel *t = tm_build(&shape, seed, &rng);
    assert_non_null(t);
    return t;
}

/* The workload: NSEQ sequences of fixed tokens, prompt lengths from 1 to
 * 45 (several cache blocks, a block edge or two inside), then decode. */
typedef struct work {
    int32_t tok[NSEQ][MAXLEN];
    int     plen[NSEQ], len[NSEQ];
    uint32_t mask[NSEQ][MAXLEN][MASK_WORDS];   /* a random half of the panels */
    float  *ref;                                /* [NSEQ][MAXLEN][VOCAB] */
} work;

static const int PLEN[NSEQ] = { 1, 45, 17, 33, 5, 16 };

static void work_init(work *w, uint64_t seed)
{
    rng = seed;
    for (int s = 0; s < NSEQ; s++) {
        w->plen[s] = PLEN[s];
        w->len[s] = PLEN[s] + 20;
        for (int i = 0; i < w->len[s]; i++) {
            w->tok[s][i] = irand(VOCAB);
            for (int m = 0; m < MASK_WORDS; m++)
                w->mask[s][i][m] = irand(2) ? 0xffffffffu : 0;
            w->mask[s][i][w->tok[s][i] / 32] = 0xffffffffu;
        }
    }
}

/* One run: each step takes, for some sequences in some order, their next
 * n tokens (logits for every row); a single-token item may carry its mask.
 * The plan decides; every row's logits go to out[s][pos]. */
typedef struct plan {
    const char *name;
    int threads;
    /* fills items for step `step`; returns how many (0 = done) */
    int (*next)(const work *w, const int *done, int step, sx_step_item *items, int *masked);
} plan;

static int plan_alone_pick(const work *w, const int *done, int one_at_a_time, sx_step_item *it)
{
    for (int s = 0; s < NSEQ; s++) {
        if (done[s] == w->len[s])
            continue;
        it->seq = s;
        it->n = done[s] == 0 && !one_at_a_time ? w->plen[s] : 1;
        return 1;
    }
    return 0;
}

/* the reference: one sequence at a time, its prompt in one step, then one
 * token per step */
static int next_alone(const work *w, const int *done, int step, sx_step_item *items, int *masked)
{
    (void)step;
    masked[0] = 0;
    return plan_alone_pick(w, done, 0, items);
}

/* every token on its own (prompt chunks of one row) */
static int next_tokenwise(const work *w, const int *done, int step, sx_step_item *items,
                          int *masked)
{
    (void)step;
    masked[0] = 1;
    return plan_alone_pick(w, done, 1, items);
}

/* all sequences every step, in an order that rotates, whole prompts
 * first: decode batches of 2..6 rows beside prefill rows, masked heads */
static int next_batched(const work *w, const int *done, int step, sx_step_item *items,
                        int *masked)
{
    int n = 0;
    for (int j = 0; j < NSEQ; j++) {
        int s = (j + step) % NSEQ;
        if (done[s] == w->len[s])
            continue;
        items[n].seq = s;
        items[n].n = done[s] == 0 ? w->plen[s] : 1;
        masked[n] = (s + step) % 3 != 0;
        n++;
    }
    return n;
}

/* random subsets, orders and chunk sizes: prompts in pieces of 1..20
 * rows, decode rows beside them */
static int next_random(const work *w, const int *done, int step, sx_step_item *items,
                       int *masked)
{
    (void)step;
    int order[NSEQ], n = 0, left = 0;
    for (int s = 0; s < NSEQ; s++) {
        order[s] = s;
        left += done[s] < w->len[s];
    }
    if (!left)
        return 0;
    for (int s = NSEQ - 1; s > 0; s--) {
        int j = irand(s + 1), t = order[s];
        order[s] = order[j];
        order[j] = t;
    }
    while (n == 0)
        for (int j = 0; j < NSEQ; j++) {
            int s = order[j];
            if (done[s] == w->len[s] || irand(4) == 0)
                continue;
            int rest = w->len[s] - done[s], c = 1 + irand(20);
            items[n].seq = s;
            items[n].n = c < rest ? c : rest;
            masked[n] = irand(2);
            n++;
        }
    return n;
}

/* Runs a plan; checks (or, for the reference, records) every row. */
static void run_plan(const tmodel *t, int mode, int kv, const plan *p, work *w, int record)
{
    sx_engine_opts o = { .n_threads = p->threads, .max_seqs = NSEQ, .kv_tokens = 1024,
                         .weight_mode = mode, .kv_mode = kv };
    sx_engine *e = NULL;
    sx_error err = { 0 };
    int rc = sx_engine_new(&t->m, &o, &e, &err);
    if (rc)
        fail_msg("sx_engine_new: %s", err.msg);
    for (int s = 0; s < NSEQ; s++) {
        int seq = -1;
        assert_int_equal(sx_engine_seq_new(e, &seq, &err), SX_OK);
        assert_int_equal(seq, s);
    }
    int done[NSEQ] = { 0 };
    sx_step_item items[NSEQ];
    int masked[NSEQ];
    float *lg = malloc((size_t)NSEQ * MAXLEN * VOCAB * sizeof *lg);
    assert_non_null(lg);
    long mismatches = 0;
    for (int step = 0;; step++) {
        memset(items, 0, sizeof items);
        int n = p->next(w, done, step, items, masked);
        if (n == 0)
            break;
        for (int i = 0; i < n; i++) {
            int s = items[i].seq;
            items[i].tokens = &w->tok[s][done[s]];
            items[i].logits_all = items[i].n > 1;
            items[i].allow = items[i].n == 1 && masked[i] ? w->mask[s][done[s]] : NULL;
        }
        rc = sx_engine_step(e, items, n, lg, &err);
        if (rc)
            fail_msg("%s step %d: %s", p->name, step, err.msg);
        const float *row = lg;
        for (int i = 0; i < n; i++) {
            int s = items[i].seq;
            for (int r = 0; r < items[i].n; r++, row += VOCAB) {
                int pos = done[s] + r;
                float *ref = w->ref + ((size_t)s * MAXLEN + pos) * VOCAB;
                if (record) {
                    memcpy(ref, row, VOCAB * sizeof *ref);
                    continue;
                }
                const uint32_t *a = items[i].allow;
                for (int v = 0; v < VOCAB; v++) {
                    if (a && !(a[v / 32] >> (v % 32) & 1))
                        continue;
                    if (memcmp(&ref[v], &row[v], sizeof *row) != 0) {
                        if (mismatches++ < 3)
                            print_error("%s: seq %d pos %d (item %d of %d, %d rows) token %d: "
                                        "%.9g vs %.9g alone\n", p->name, s, pos, i, n,
                                        items[i].n, v, row[v], ref[v]);
                        break;
                    }
                }
            }
            done[s] += items[i].n;
        }
    }
    free(lg);
    sx_engine_free(e);
    if (mismatches)
        fail_msg("%s (%s, mode %d, kv %d): %ld rows differ from the sequence run alone",
                 p->name, getenv("STRUX_CPU"), mode, kv, mismatches);
}

static void check_path_mode(const char *path, int mode, int kv)
{
    static const plan alone = { "alone", 1, next_alone };
    static const plan others[] = {
        { "token by token", 2, next_tokenwise },
        { "batched", 2, next_batched },
        { "random chunks", 2, next_random },
        { "random chunks, 3 threads", 3, next_random },
    };
    tmodel *t = tm_new(0x9e3779b97f4a7c15ull + (uint64_t)mode);
    work *w = calloc(1, sizeof *w);
    assert_non_null(w);
    w->ref = malloc((size_t)NSEQ * MAXLEN * VOCAB * sizeof *w->ref);
    assert_non_null(w->ref);
    work_init(w, 12345);
    setenv("STRUX_CPU", path, 1);
    run_plan(t, mode, kv, &alone, w, 1);
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        rng = 777 + i;
        run_plan(t, mode, kv, &others[i], w, 0);
    }
    unsetenv("STRUX_CPU");
    free(w->ref);
    free(w);
    tm_free(t);
}

static void check_path(const char *name, int path)
{
    if (!sx_cpu_kernels_for(path)) {   /* a cmocka skip, counted as one: not a pass */
        print_message("# skipped: no %s path on this CPU\n", name);
        skip();
    }
    print_message("# path %s\n", name);
    for (int mode = SX_W_BF16; mode <= SX_W_Q4; mode++)
        check_path_mode(name, mode, SX_KV_F32);
    /* a bf16 cache widens blocks to f32 before attention: the same sums */
    check_path_mode(name, SX_W_BF16, SX_KV_BF16);
}

static void test_scalar(void **st) { (void)st; check_path("scalar", SX_CPU_SCALAR); }
static void test_avx2(void **st) { (void)st; check_path("avx2", SX_CPU_AVX2); }
static void test_avx512(void **st) { (void)st; check_path("avx512", SX_CPU_AVX512); }
static void test_amx(void **st) { (void)st; check_path("amx", SX_CPU_AMX); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalar),
        cmocka_unit_test(test_avx2),
        cmocka_unit_test(test_avx512),
        cmocka_unit_test(test_amx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
