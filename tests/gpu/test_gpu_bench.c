/* GPU benchmarks of the CUDA engine on random-weight models of the real
 * shapes (performance depends on shapes, not values):
 *   - single-stream decode tokens/s: launch + GPU sampling (the serving
 *     path: only token ids come back), the same with a grammar-sized mask
 *     copied every step, and step() returning f32 logits to the host;
 *   - batched decode throughput at 8, 64 and 256 sequences (32-token
 *     prompts, greedy);
 *   - TTFT for a 1,000-token prompt (prefill + first sampled token), median
 *     of 5 after a warm-up.
 * Wall-clock times on the host, so launch and copy overheads count.
 * Prints a table; writes one JSON object per shape to `json` when given.
 * STRUX_BENCH_SMALL=1 shrinks every count (for trying the code under
 * tests/gpu/emu, where the numbers mean nothing).
 * Called from tests/gpu/test_gpu_main.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine/model/model.h"
#include "engine/cuda/engine_cuda.h"

int sx_gpu_bench(const char *dir, const char *shapes, FILE *json);

#define TOKENS 151669
#define MASK_WORDS ((151936 + 31) / 32) /* per row, for the Qwen3 vocabulary */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rs = 0x9E3779B97F4A7C15ull;

static int32_t rnd_tok(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (int32_t)((rs >> 11) % TOKENS);
}

typedef struct bench {
    sx_cuda_engine     *e;
    sx_cuda_sample_row *rows;
    int32_t            *tok;
    sx_error            err;
} bench;

/* Prefills n sequences with `len` random tokens each; their ids in seqs. */
static int prefill(bench *b, int n, int len, int *seqs)
{
    sx_step_item *items = calloc((size_t)n, sizeof *items);
    int32_t *toks = malloc((size_t)n * len * 4);
    int rc = items && toks ? 0 : SX_ENOMEM;
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = sx_cuda_engine_seq_new(b->e, &seqs[i], &b->err);
        for (int j = 0; j < len; j++)
            toks[(size_t)i * len + j] = rnd_tok();
        sx_step_item it = { seqs[i], toks + (size_t)i * len, len, 0, NULL, NULL };
        items[i] = it;
    }
    /* in slices of <= 256 items: the sampler's row limit */
    for (int i0 = 0; rc == 0 && i0 < n; i0 += 256) {
        int k = n - i0 < 256 ? n - i0 : 256;
        rc = sx_cuda_engine_launch(b->e, items + i0, k, &b->err);
        if (rc == 0)
            rc = sx_cuda_engine_sample(b->e, b->rows, k, NULL, TOKENS, b->tok + i0, NULL, &b->err);
    }
    free(items);
    free(toks);
    return rc;
}

/* `steps` greedy decode steps over n sequences; returns seconds. */
static double decode(bench *b, const int *seqs, int n, int steps, const uint32_t *mask_src)
{
    sx_step_item *items = calloc((size_t)n, sizeof *items);
    if (!items)
        return -1;
    double t0 = now();
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < n; i++) {
            sx_step_item it = { seqs[i], &b->tok[i], 1, 0, NULL, NULL };
            items[i] = it;
        }
        if (sx_cuda_engine_launch(b->e, items, n, &b->err)) {
            free(items);
            return -1;
        }
        uint32_t *mask = NULL;
        if (mask_src) { /* the CPU would fill this while the GPU runs */
            mask = sx_cuda_engine_mask_buffer(b->e, n);
            for (int i = 0; mask && i < n; i++)
                memcpy(mask + (size_t)i * MASK_WORDS, mask_src, MASK_WORDS * 4);
        }
        if (sx_cuda_engine_sample(b->e, b->rows, n, mask, TOKENS, b->tok, NULL, &b->err)) {
            free(items);
            return -1;
        }
    }
    free(items);
    return now() - t0;
}

static void free_all(bench *b, const int *seqs, int n)
{
    for (int i = 0; i < n; i++)
        sx_cuda_engine_seq_free(b->e, seqs[i]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench_shape(const char *shape, const char *dir, FILE *json, int first)
{
    char mdir[1024], cfg_path[1100];
    snprintf(mdir, sizeof mdir, "%s/%s", dir, shape);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", mdir);
    sx_error err;
    sx_model *m = NULL;
    struct stat st;
    double t0 = now();
    if (stat(cfg_path, &st) != 0) {
        sx_qwen3_config cfg;
        if (sx_qwen3_shape(shape, &cfg, &err) || sx_model_write_random(&cfg, 99, mdir, NULL, &err)) {
            fprintf(stderr, "bench %s: %s\n", shape, err.msg);
            return -1;
        }
    }
    if (sx_model_load(mdir, &m, &err)) {
        fprintf(stderr, "bench %s: %s\n", shape, err.msg);
        return -1;
    }
    double t_model = now() - t0;
    bench b;
    memset(&b, 0, sizeof b);
    sx_engine_opts o;
    memset(&o, 0, sizeof o);
    o.max_seqs = 256;
    t0 = now();
    if (sx_cuda_engine_new(m, &o, &b.e, &b.err)) {
        fprintf(stderr, "bench %s: %s\n", shape, b.err.msg);
        sx_model_free(m);
        return -1;
    }
    double t_engine = now() - t0;
    sx_cuda_info info;
    sx_cuda_engine_info(b.e, &info);
    b.rows = calloc(256, sizeof *b.rows);
    b.tok = calloc(256, sizeof *b.tok);
    int seqs[256], rc = b.rows && b.tok ? 0 : -1;
    for (int i = 0; b.rows && i < 256; i++) {
        sx_sampling_default(&b.rows[i].params);
        b.rows[i].params.temperature = 0;
    }
    double single = 0, single_mask = 0, single_logits = 0, batch[3] = { 0 }, ttft = 0;
    int batches[3] = { 8, 64, 256 };
    const char *small_env = getenv("STRUX_BENCH_SMALL");
    int small = small_env && *small_env && strcmp(small_env, "0");
    int n_single = small ? 4 : 256, n_logits = small ? 2 : 64, n_batch = small ? 2 : 32;
    int prompt_len = small ? 100 : 1000;
    if (small) {
        batches[0] = 2;
        batches[1] = 3;
        batches[2] = 4;
    }
    uint32_t *mask = malloc(MASK_WORDS * 4);
    float *logits = malloc((size_t)m->cfg.vocab_rows * 4);
    rc = rc || !mask || !logits;
    if (rc == 0) {
        for (int i = 0; i < MASK_WORDS; i++)
            mask[i] = 0xfffffff7u; /* most tokens allowed: the copy is what costs */
        /* single stream */
        rc = prefill(&b, 1, 32, seqs);
        double t = rc ? -1 : decode(&b, seqs, 1, small ? 2 : 16, NULL); /* warm-up, graphs */
        t = t < 0 ? -1 : decode(&b, seqs, 1, n_single, NULL);
        single = t > 0 ? n_single / t : 0;
        t = t < 0 ? -1 : decode(&b, seqs, 1, n_single, mask);
        single_mask = t > 0 ? n_single / t : 0;
        if (t > 0) {
            double t1 = now();
            for (int s = 0; s < n_logits; s++) {
                sx_step_item it = { seqs[0], &b.tok[0], 1, 0, NULL, NULL };
                if (sx_cuda_engine_step(b.e, &it, 1, logits, &b.err)) {
                    t = -1;
                    break;
                }
            }
            single_logits = t > 0 ? n_logits / (now() - t1) : 0;
        }
        free_all(&b, seqs, 1);
        rc = t < 0;
    }
    for (int k = 0; rc == 0 && k < 3; k++) {
        int n = batches[k];
        rc = prefill(&b, n, 32, seqs);
        double t = rc ? -1 : decode(&b, seqs, n, small ? 1 : 4, NULL);
        t = t < 0 ? -1 : decode(&b, seqs, n, n_batch, NULL);
        batch[k] = t > 0 ? n * n_batch / t : 0;
        free_all(&b, seqs, n);
        rc = t < 0;
    }
    double ttfts[6];
    for (int r = 0; rc == 0 && r < 6; r++) {
        double t1 = now();
        rc = prefill(&b, 1, prompt_len, seqs);
        ttfts[r] = now() - t1;
        free_all(&b, seqs, 1);
    }
    if (rc == 0) {
        qsort(ttfts + 1, 5, sizeof ttfts[0], cmp_double); /* run 0 is the warm-up */
        ttft = ttfts[3];
    }
    if (rc)
        fprintf(stderr, "bench %s failed: %s\n", shape, b.err.msg);
    printf("| %-5s | %8.0f | %8.0f | %8.0f | %8.0f | %8.0f | %8.0f | %7.2f | %9lld |\n", shape,
           single, single_mask, single_logits, batch[0], batch[1], batch[2], ttft * 1e3,
           (long long)info.kv_tokens);
    printf("        (model ready in %.1f s, engine + upload in %.1f s; mask overhead %.1f%%)\n",
           t_model, t_engine, single > 0 ? 100.0 * (single / single_mask - 1) : 0.0);
    if (json)
        fprintf(json,
                "%s{\"shape\": \"%s\", \"device\": \"%s\", \"decode_tok_s\": %.1f, "
                "\"decode_masked_tok_s\": %.1f, \"decode_step_logits_tok_s\": %.1f, "
                "\"batch8_tok_s\": %.1f, \"batch64_tok_s\": %.1f, \"batch256_tok_s\": %.1f, "
                "\"ttft_ms\": %.2f, \"ttft_prompt_tokens\": %d, \"prefill_tok_s\": %.0f, "
                "\"kv_tokens\": %lld, "
                "\"weight_bytes\": %lld, \"ok\": %s}",
                first ? "" : ", ", shape, info.device, single, single_mask, single_logits, batch[0],
                batch[1], batch[2], ttft * 1e3, prompt_len, ttft > 0 ? prompt_len / ttft : 0,
                (long long)info.kv_tokens, (long long)info.weight_bytes, rc ? "false" : "true");
    free(mask);
    free(logits);
    free(b.rows);
    free(b.tok);
    sx_cuda_engine_free(b.e);
    sx_model_free(m);
    return rc;
}

int sx_gpu_bench(const char *dir, const char *shapes, FILE *json)
{
    static int first = 1; /* across calls: one JSON array */
    int rc = 0;
    printf("GPU benchmarks (tokens/s; TTFT in ms; greedy; wall clock):\n");
    printf("| shape | decode-1 | +mask    | +logits  | batch 8  | batch 64 | batch256 | TTFT 1k | KV tokens |\n");
    printf("|-------|----------|----------|----------|----------|----------|----------|---------|-----------|\n");
    char list[256];
    snprintf(list, sizeof list, "%s", shapes);
    for (char *sv = NULL, *s = strtok_r(list, ",", &sv); s; s = strtok_r(NULL, ",", &sv)) {
        rc |= bench_shape(s, dir, json, first) != 0;
        first = 0;
    }
    return rc;
}
