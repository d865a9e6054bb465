/* GPU sampler (kernels/sampler.cu) against its CPU reference, the engine's
 * sx_sampler (engine/sampler/sampler.h):
 *   - parity at the real size (151,936 rows): the same token for greedy,
 *     the same token for (nearly) every seeded draw, since both use the same
 *     uniforms and bit-identical weights; every GPU token inside the CPU's
 *     candidate set; log-probs equal;
 *   - a masked token never sampled over 10^6 draws;
 *   - the empirical distribution of 2x10^5 draws matches the CPU's draws and
 *     softmax(l/T) over the candidate set (chi-square).
 * Called from tests/gpu/test_gpu_main.c.  STRUX_GPU_QUICK=1 shrinks the
 * sizes (a few hundred draws each) for the CPU emulation of tests/gpu/emu. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sampler/sampler.h"
#include "engine/sampler/sampler_internal.h"
#include "kernels/sx_kernels.h"

void sx_gpu_test_sampler(int *passed, int *failed);

static int *g_pass, *g_fail;
static int g_quick;
#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (cond) {                                                              \
            (*g_pass)++;                                                         \
        } else {                                                                 \
            (*g_fail)++;                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                 \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

static uint64_t rs = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static double rnd01(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static double rnd_normal(void)
{
    double u = rnd01() + 1e-300, v = rnd01();
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static int mask_get(const uint32_t *m, int t)
{
    return (m[t / 32] >> (t % 32)) & 1;
}

/* Device buffers for one batch, reused across launches. */
typedef struct gpu_batch {
    float *logits;
    uint32_t *mask;
    sx_cuda_sample_args *args;
    int32_t *hist, *tokens;
    float *logprobs;
} gpu_batch;

static int batch_alloc(gpu_batch *b, int rows, int vocab, int hist_total)
{
    int words = (vocab + 31) / 32;
    memset(b, 0, sizeof *b);
    return cudaMalloc((void **)&b->logits, (size_t)rows * vocab * sizeof(float)) ||
           cudaMalloc((void **)&b->mask, (size_t)rows * words * sizeof(uint32_t)) ||
           cudaMalloc((void **)&b->args, (size_t)rows * sizeof(sx_cuda_sample_args)) ||
           cudaMalloc((void **)&b->hist, (size_t)(hist_total > 0 ? hist_total : 1) * sizeof(int32_t)) ||
           cudaMalloc((void **)&b->tokens, (size_t)rows * sizeof(int32_t)) ||
           cudaMalloc((void **)&b->logprobs, (size_t)rows * sizeof(float));
}

static void batch_free(gpu_batch *b)
{
    cudaFree(b->logits);
    cudaFree(b->mask);
    cudaFree(b->args);
    cudaFree(b->hist);
    cudaFree(b->tokens);
    cudaFree(b->logprobs);
}

/* Uploads, samples, downloads.  0 on success. */
static int gpu_run(gpu_batch *b, int rows, int vocab, const float *logits, const uint32_t *mask,
                   const sx_cuda_sample_args *args, const int32_t *hist, int hist_total,
                   int32_t *tokens, float *logprobs)
{
    int words = (vocab + 31) / 32;
    if (cudaMemcpy(b->logits, logits, (size_t)rows * vocab * sizeof(float), cudaMemcpyHostToDevice) ||
        (mask && cudaMemcpy(b->mask, mask, (size_t)rows * words * sizeof(uint32_t),
                            cudaMemcpyHostToDevice)) ||
        cudaMemcpy(b->args, args, (size_t)rows * sizeof *args, cudaMemcpyHostToDevice) ||
        (hist_total > 0 && cudaMemcpy(b->hist, hist, (size_t)hist_total * sizeof(int32_t),
                                      cudaMemcpyHostToDevice)))
        return -1;
    if (sx_cuda_sample(b->logits, mask ? b->mask : NULL, b->args, hist_total > 0 ? b->hist : NULL,
                       rows, vocab, b->tokens, b->logprobs, NULL))
        return -1;
    if (cudaDeviceSynchronize() ||
        cudaMemcpy(tokens, b->tokens, (size_t)rows * sizeof(int32_t), cudaMemcpyDeviceToHost) ||
        cudaMemcpy(logprobs, b->logprobs, (size_t)rows * sizeof(float), cudaMemcpyDeviceToHost))
        return -1;
    return 0;
}

static sx_sampling to_sampling(const sx_cuda_sample_args *a)
{
    sx_sampling p;
    sx_sampling_default(&p);
    p.temperature = a->temperature;
    p.top_k = a->top_k;
    p.top_p = a->top_p;
    p.min_p = a->min_p;
    p.repetition_penalty = a->repetition_penalty;
    p.no_repeat_ngram = a->no_repeat_ngram;
    p.seed = a->seed;
    return p;
}

/* The CPU reference for one row: token, log-prob and candidate set. */
static int cpu_row(const sx_cuda_sample_args *a, const float *logits, const uint32_t *mask,
                   const int32_t *hist, int rows, int valid, int32_t *tok, float *lp,
                   uint8_t *member)
{
    sx_sampling p = to_sampling(a);
    sx_sampler *s = NULL;
    sx_error e;
    sx_sample out;
    float *c = malloc((size_t)rows * sizeof *c);
    int rc = sx_sampler_new(&p, rows, valid, &s, &e);
    for (int i = 0; !rc && i < a->hist_len; i++)
        rc = sx_sampler_accept(s, hist[a->hist_off + i]);
    if (!rc) {
        memcpy(c, logits, (size_t)rows * sizeof *c);
        rc = sx_sampler_sample(s, c, mask, &out, &e);
    }
    if (!rc && member) {
        memcpy(c, logits, (size_t)rows * sizeof *c);
        rc = sx_sampler_support(s, c, mask, member, &e);
    }
    *tok = rc ? -1 : out.token;
    *lp = rc ? NAN : out.logprob;
    sx_sampler_free(s);
    free(c);
    return rc;
}

/* Parity at the real vocabulary size over many parameter mixes. */
static void test_parity_full(void)
{
    enum { MAX_ROWS = 96, V = 151936, VALID = 151669, H = 48 };
    const int ROWS = g_quick ? 24 : MAX_ROWS;
    const int words = (V + 31) / 32;
    float *lg = malloc((size_t)ROWS * V * sizeof *lg);
    uint32_t *mk = malloc((size_t)ROWS * words * sizeof *mk);
    sx_cuda_sample_args *args = calloc(ROWS, sizeof *args);
    int32_t *hist = malloc((size_t)ROWS * H * sizeof *hist), tok[MAX_ROWS];
    float lp[MAX_ROWS];
    uint8_t *member = malloc(V);
    gpu_batch b;
    if (!lg || !mk || !args || !hist || !member || batch_alloc(&b, ROWS, V, ROWS * H)) {
        CHECK(0, "sampler parity: allocation failed");
        return;
    }
    static const float temps[] = {0.0f, 0.7f, 1.0f, 1.3f};
    static const int ks[] = {0, 20, 50};
    static const float ps[] = {1.0f, 0.9f, 0.5f};
    for (int r = 0; r < ROWS; r++) {
        float *l = lg + (size_t)r * V;
        int ties = r % 5 == 4;
        for (int t = 0; t < V; t++) {
            double x = rnd_normal() * 2;
            l[t] = (float)(ties ? floor(x * 4) / 4 : x);
        }
        for (int i = 0; i < 40; i++)
            l[rnd() % VALID] += (float)(6 + 8 * rnd01());
        for (int t = VALID; t < V; t++)
            l[t] = 30; /* rows past the tokenizer: attractive and forbidden */
        for (int w = 0; w < words; w++) {
            uint32_t *m = mk + (size_t)r * words;
            m[w] = r % 3 == 0 ? 0xFFFFFFFFu : r % 3 == 1 ? (uint32_t)rnd() : ((rnd() % 16) ? 0 : (uint32_t)rnd());
        }
        mk[(size_t)r * words] |= 1;
        sx_cuda_sample_args *a = &args[r];
        a->temperature = temps[r % 4];
        a->top_k = ks[(r / 4) % 3];
        a->top_p = ps[(r / 12) % 3];
        a->min_p = r % 7 == 3 ? 0.05f : 0.0f;
        a->repetition_penalty = r % 2 ? 1.2f : 1.0f;
        a->no_repeat_ngram = r % 6 == 5 ? 3 : 0;
        a->vocab_valid = VALID;
        a->hist_len = H;
        a->hist_off = (int64_t)r * H;
        a->seed = 1000 + (uint64_t)r;
        a->draw = H; /* the CPU sampler's counter: tokens accepted so far */
        /* a history that repeats the trigram 0 1000 2000 and ends in
         * "0 1000", so that 2000 is banned under no-repeat-3-gram; those
         * tokens are made likely so that the penalties matter */
        for (int i = 0; i < H; i++)
            hist[r * H + i] = (i + 2) % 8 < 3 ? (int32_t)((i + 2) % 8) * 1000 : (int32_t)(rnd() % VALID);
        for (int t = 0; t <= 2000; t += 1000)
            l[t] += 8;
    }
    /* the CPU needs the unmodified rows: the GPU works on a copy */
    if (gpu_run(&b, ROWS, V, lg, mk, args, hist, ROWS * H, tok, lp)) {
        CHECK(0, "sampler parity: CUDA failure");
        goto done;
    }
    int same = 0, sampled = 0, greedy_same = 0, greedy = 0, outside = 0, masked = 0, lp_bad = 0;
    for (int r = 0; r < ROWS; r++) {
        int32_t ct;
        float cl;
        const uint32_t *m = mk + (size_t)r * words;
        if (cpu_row(&args[r], lg + (size_t)r * V, m, hist, V, VALID, &ct, &cl, member)) {
            CHECK(0, "sampler parity: CPU reference failed on row %d", r);
            continue;
        }
        if (tok[r] < 0 || tok[r] >= VALID || !mask_get(m, tok[r])) {
            masked++;
            continue;
        }
        outside += !member[tok[r]];
        if (args[r].temperature == 0.0f) {
            greedy++;
            greedy_same += tok[r] == ct;
        } else {
            sampled++;
            same += tok[r] == ct;
        }
        if (tok[r] == ct && !(fabsf(lp[r] - cl) <= 1e-4f * (1 + fabsf(cl))))
            lp_bad++;
    }
    printf("sampler parity: greedy %d/%d, seeded %d/%d same token as the CPU\n", greedy_same,
           greedy, same, sampled);
    CHECK(masked == 0, "sampler parity: %d masked tokens sampled", masked);
    CHECK(outside == 0, "sampler parity: %d tokens outside the CPU's candidate set", outside);
    CHECK(greedy_same == greedy, "sampler parity: greedy differs on %d rows", greedy - greedy_same);
    CHECK(same * 100 >= sampled * 97, "sampler parity: only %d of %d draws match", same, sampled);
    CHECK(lp_bad == 0, "sampler parity: %d log-probs differ", lp_bad);
done:
    batch_free(&b);
    free(lg);
    free(mk);
    free(args);
    free(hist);
    free(member);
}

/* 10^6 draws over random rows and masks: never a masked token. */
static void test_never_masked(void)
{
    enum { V = 256, VALID = 250, H = 8 };
    const int ROWS = g_quick ? 256 : 8192, BATCHES = g_quick ? 2 : 123;
    const int words = V / 32;
    float *lg = malloc((size_t)ROWS * V * sizeof *lg);
    uint32_t *mk = malloc((size_t)ROWS * words * sizeof *mk);
    sx_cuda_sample_args *args = calloc(ROWS, sizeof *args);
    int32_t *hist = malloc((size_t)ROWS * H * sizeof *hist), *tok = malloc(ROWS * sizeof *tok);
    float *lp = malloc(ROWS * sizeof *lp);
    gpu_batch b;
    if (!lg || !mk || !args || !hist || !tok || !lp || batch_alloc(&b, ROWS, V, ROWS * H)) {
        CHECK(0, "never masked: allocation failed");
        return;
    }
    for (int r = 0; r < ROWS; r++) {
        uint32_t *m = mk + (size_t)r * words;
        float *l = lg + (size_t)r * V;
        for (int w = 0; w < words; w++)
            m[w] = (uint32_t)(rnd() & rnd());
        m[rnd() % (VALID / 32)] |= 1u << (rnd() % 32);
        m[words - 1] |= 0xFC000000u; /* rows 250.. "allowed": still never */
        for (int t = 0; t < V; t++)
            l[t] = (float)rnd_normal() * 2 + (mask_get(m, t) && t < VALID ? 0 : 25);
        for (int i = 0; i < H; i++)
            hist[r * H + i] = (int32_t)(rnd() % V);
        sx_cuda_sample_args *a = &args[r];
        a->temperature = (float)(0.3 + 2 * rnd01());
        a->top_k = r % 3 == 0 ? 5 : 0;
        a->top_p = r % 4 == 1 ? 0.8f : 1.0f;
        a->min_p = r % 5 == 2 ? 0.1f : 0.0f;
        a->repetition_penalty = r % 2 ? 1.3f : 1.0f;
        a->no_repeat_ngram = r % 7 == 0 ? 1 : 0; /* bans the history outright */
        a->vocab_valid = VALID;
        a->hist_len = H;
        a->hist_off = (int64_t)r * H;
        a->seed = (uint64_t)r * 7919;
    }
    long draws = 0, bad = 0;
    for (int k = 0; k < BATCHES; k++) {
        for (int r = 0; r < ROWS; r++)
            args[r].draw = (uint64_t)k;
        if (gpu_run(&b, ROWS, V, lg, mk, args, hist, ROWS * H, tok, lp)) {
            CHECK(0, "never masked: CUDA failure");
            break;
        }
        for (int r = 0; r < ROWS; r++, draws++)
            bad += tok[r] < 0 || tok[r] >= VALID || !mask_get(mk + (size_t)r * words, tok[r]);
    }
    printf("sampler: %ld GPU draws, %ld masked\n", draws, bad);
    CHECK(draws >= (g_quick ? 512 : 1000000) && bad == 0, "never masked: %ld of %ld draws masked",
          bad, draws);
    batch_free(&b);
    free(lg);
    free(mk);
    free(args);
    free(hist);
    free(tok);
    free(lp);
}

/* Pearson chi-square upper tail (Wilson-Hilferty), bins below 5 pooled. */
static double chi2_p(const long *obs, const double *prob, int k, long n)
{
    double stat = 0, pe = 0;
    long po = 0;
    int bins = 0;
    for (int i = 0; i < k; i++) {
        double e = prob[i] * (double)n;
        if (e < 5) {
            pe += e;
            po += obs[i];
            continue;
        }
        stat += (obs[i] - e) * (obs[i] - e) / e;
        bins++;
    }
    if (pe > 0) {
        stat += (po - pe) * (po - pe) / (pe < 1 ? 1 : pe);
        bins++;
    }
    if (bins < 2)
        return 1.0;
    double df = bins - 1, v = 2.0 / (9.0 * df);
    double z = (cbrt(stat / df) - (1.0 - v)) / sqrt(v);
    return 0.5 * erfc(z / sqrt(2.0));
}

/* One row drawn 2x10^5 times with consecutive counters, on both sides. */
static void test_distribution(void)
{
    enum { V = 1024 };
    const int ROWS = g_quick ? 256 : 8192, BATCHES = g_quick ? 2 : 25;
    float *row = malloc(V * sizeof *row), *lg = malloc((size_t)ROWS * V * sizeof *lg), *lp = malloc(ROWS * sizeof *lp);
    float *c = malloc(V * sizeof *c);
    sx_cuda_sample_args *args = calloc(ROWS, sizeof *args);
    int32_t *tok = malloc(ROWS * sizeof *tok);
    long *gpu_n = calloc(V, sizeof *gpu_n), *cpu_n = calloc(V, sizeof *cpu_n);
    double *prob = calloc(V, sizeof *prob);
    uint8_t *member = malloc(V);
    gpu_batch b;
    if (!row || !lg || !lp || !c || !args || !tok || !gpu_n || !cpu_n || !prob || !member ||
        batch_alloc(&b, ROWS, V, 0)) {
        CHECK(0, "distribution: allocation failed");
        return;
    }
    for (int t = 0; t < V; t++)
        row[t] = (float)(floor(rnd_normal() * 6) / 4);
    for (int r = 0; r < ROWS; r++)
        memcpy(lg + (size_t)r * V, row, V * sizeof *row);
    sx_cuda_sample_args base = {0};
    base.temperature = 0.8f;
    base.top_p = 0.95f;
    base.top_k = 100;
    base.min_p = 0.0f;
    base.repetition_penalty = 1.0f;
    base.vocab_valid = V;
    base.seed = 4242;
    sx_sampling p = to_sampling(&base);
    sx_sampler *s = NULL;
    sx_error e;
    sx_sample out;
    if (sx_sampler_new(&p, V, V, &s, &e)) {
        CHECK(0, "distribution: %s", e.msg);
        return;
    }
    memcpy(c, row, V * sizeof *c);
    sx_sampler_support(s, c, NULL, member, &e);
    long n = 0, differ = 0;
    for (int k = 0; k < BATCHES; k++) {
        for (int r = 0; r < ROWS; r++) {
            args[r] = base;
            args[r].draw = (uint64_t)k * ROWS + (uint64_t)r;
        }
        if (gpu_run(&b, ROWS, V, lg, NULL, args, NULL, 0, tok, lp)) {
            CHECK(0, "distribution: CUDA failure");
            break;
        }
        for (int r = 0; r < ROWS; r++, n++) {
            /* the CPU's counter is the number of accepted tokens: n */
            memcpy(c, row, V * sizeof *c);
            if (sx_sampler_sample(s, c, NULL, &out, &e) || sx_sampler_accept(s, out.token))
                break;
            cpu_n[out.token]++;
            if (tok[r] >= 0 && tok[r] < V)
                gpu_n[tok[r]]++;
            differ += tok[r] != out.token;
        }
    }
    double z = 0, m = -INFINITY;
    for (int t = 0; t < V; t++)
        m = row[t] > m ? row[t] : m;
    for (int t = 0; t < V; t++)
        z += (prob[t] = member[t] ? exp((row[t] - m) / base.temperature) : 0);
    for (int t = 0; t < V; t++)
        prob[t] /= z;
    double pg = chi2_p(gpu_n, prob, V, n), pc = chi2_p(cpu_n, prob, V, n);
    printf("sampler distribution: %ld draws, %ld differ from the CPU, chi-square p GPU %.4f CPU %.4f\n",
           n, differ, pg, pc);
    CHECK(differ * 1000 <= n, "distribution: %ld of %ld draws differ from the CPU", differ, n);
    CHECK(pg > 1e-3, "distribution: GPU draws fail chi-square (p = %g)", pg);
    long outside = 0;
    for (int t = 0; t < V; t++)
        outside += member[t] ? 0 : gpu_n[t];
    CHECK(outside == 0, "distribution: %ld GPU draws outside the candidate set", outside);
    sx_sampler_free(s);
    batch_free(&b);
    free(row);
    free(lg);
    free(lp);
    free(c);
    free(args);
    free(tok);
    free(gpu_n);
    free(cpu_n);
    free(prob);
    free(member);
}

/* Every token masked: -1 and NaN, like the CPU's SX_EINTERNAL. */
static void test_all_masked(void)
{
    enum { V = 100 };
    float lg[V];
    uint32_t mk[4] = {0, 0, 0, 0};
    sx_cuda_sample_args a = {0};
    int32_t tok;
    float lp;
    gpu_batch b;
    for (int t = 0; t < V; t++)
        lg[t] = 1;
    a.temperature = 1;
    a.top_p = 1;
    a.repetition_penalty = 1;
    if (batch_alloc(&b, 1, V, 0)) {
        CHECK(0, "all masked: allocation failed");
        return;
    }
    int rc = gpu_run(&b, 1, V, lg, mk, &a, NULL, 0, &tok, &lp);
    CHECK(rc == 0 && tok == -1 && isnan(lp), "all masked: got token %d", tok);
    CHECK(sx_cuda_sample(b.logits, NULL, b.args, NULL, 0, V, b.tokens, b.logprobs, NULL) ==
              SX_EINVAL,
          "sx_cuda_sample accepts 0 rows");
    batch_free(&b);
}

void sx_gpu_test_sampler(int *passed, int *failed)
{
    g_pass = passed;
    g_fail = failed;
    g_quick = getenv("STRUX_GPU_QUICK") && atoi(getenv("STRUX_GPU_QUICK")) > 0;
    test_all_masked();
    test_parity_full();
    test_never_masked();
    test_distribution();
}
