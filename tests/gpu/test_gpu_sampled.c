/* Temperature-1 sampling on the GPU engine against the CPU backend, seed for
 * seed, on the tiny random model (group "sampled").
 *
 * Both backends see the same tokens (teacher forcing: every step feeds the
 * CPU backend's draw to both), so each position compares three draws made
 * with the same uniform u = sx_rng_uniform(seed, position):
 *   cpu   the CPU sampler (engine/sampler) on the CPU backend's logits;
 *   host  the same sampler on the GPU engine's logits (what
 *         `--device cuda` runs today: the logits come back to the host);
 *   dev   the device sampler (kernels/sampler.cu through
 *         sx_cuda_engine_sample) on the GPU engine's logits of the same
 *         step, launched again after a truncate.
 * host and dev share the arithmetic (common/sx_sample_math.h), so they
 * must agree wherever the logits are the same: at least 97% of draws, the
 * bound test_gpu_sampler.c holds the kernel to (a draw within float
 * rounding of a boundary in the cumulative weights may move).
 * cpu and host differ only through the logits: the GPU rounds GEMM inputs
 * and the cache to bf16.  With Delta = max |l_cpu - l_gpu| over the row, each
 * weight exp(l - max) moves by a factor within e^(+-2 Delta), so a boundary
 * F(j) of the cumulative distribution (token id order, the order of the
 * draw) moves by less than e^(2 Delta) - 1.  A differing draw is therefore
 * allowed only when u lies that close to the CPU's boundary that the GPU's
 * token crossed; the first differing position, u, the distance and the
 * bound are printed.
 * About 15 s of CPU under tests/gpu/emu.  Called from tests/gpu/test_gpu_main.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/sx_sample_math.h"
#include "engine/backend.h"
#include "engine/cuda/engine_cuda.h"
#include "engine/model/model.h"
#include "engine/sampler/sampler.h"

void sx_gpu_test_sampled(int *passed, int *failed, const char *dir);

static int *g_pass, *g_fail;
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

enum { PROMPT = 8, DRAWS = 16, VALID = 151669 };

/* The CPU's cumulative weight F(j) = sum_{i<j} w_i / W in double, w_i =
 * exp(l_i - max) over ids below VALID (temperature 1). */
static double cum_at(const float *l, int j)
{
    float mx = -INFINITY;
    for (int i = 0; i < VALID; i++)
        mx = l[i] > mx ? l[i] : mx;
    double below = 0, total = 0;
    for (int i = 0; i < VALID; i++) {
        double w = exp((double)l[i] - mx);
        total += w;
        if (i < j)
            below += w;
    }
    return below / total;
}

static int sample_row(const sx_sampling *p, const int32_t *hist, int n_hist, const float *row,
                      int V, float *scratch, int32_t *tok)
{
    sx_sampler *s = NULL;
    sx_sample out;
    sx_error err;
    int rc = sx_sampler_new(p, V, VALID, &s, &err);
    for (int i = 0; rc == 0 && i < n_hist; i++)
        rc = sx_sampler_accept(s, hist[i]);
    memcpy(scratch, row, (size_t)V * sizeof *scratch);
    if (rc == 0)
        rc = sx_sampler_sample(s, scratch, NULL, &out, &err);
    sx_sampler_free(s);
    *tok = out.token;
    return rc;
}

/* One seed: DRAWS positions after a PROMPT-token prompt. */
static void run_seed(sx_backend *cpu, sx_cuda_engine *gpu, int V, uint64_t seed, float *lc,
                     float *lg, float *scratch)
{
    sx_error err;
    int sc = -1, sg = -1;
    int32_t toks[PROMPT + DRAWS];
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < PROMPT; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (int32_t)((x >> 33) % VALID);
    }
    sx_sampling p;
    sx_sampling_default(&p); /* temperature 1, nothing else */
    p.seed = seed;
    int equal = 0, dev_equal = 0, within = 0, first = -1;
    double worst_ratio = 0;
    if (sx_backend_seq_new(cpu, &sc, &err) || sx_cuda_engine_seq_new(gpu, &sg, &err)) {
        CHECK(0, "sampled: seq_new: %s", err.msg);
        goto done;
    }
    for (int k = 0; k < DRAWS; k++) {
        /* the step's input: the prompt, then the previous draw */
        const int32_t *in = k ? &toks[PROMPT + k - 1] : toks;
        int n = k ? 1 : PROMPT;
        sx_step_item ic = { sc, in, n, 0, NULL }, ig = { sg, in, n, 0, NULL };
        if (sx_backend_step(cpu, &ic, 1, lc, &err) || sx_cuda_engine_step(gpu, &ig, 1, lg, &err)) {
            CHECK(0, "sampled: step %d: %s", k, err.msg);
            goto done;
        }
        const int32_t *hist = toks + PROMPT;
        int32_t tc, th, td;
        if (sample_row(&p, hist, k, lc, V, scratch, &tc) ||
            sample_row(&p, hist, k, lg, V, scratch, &th)) {
            CHECK(0, "sampled: the CPU sampler failed at %d", k);
            goto done;
        }
        /* the same step again, sampled on the device */
        int len = sx_cuda_engine_seq_len(gpu, sg);
        sx_cuda_sample_row row = { p, hist, k, (uint64_t)k };
        if (sx_cuda_engine_seq_truncate(gpu, sg, len - n, &err) ||
            sx_cuda_engine_launch(gpu, &ig, 1, &err) ||
            sx_cuda_engine_sample(gpu, &row, 1, NULL, VALID, &td, NULL, &err)) {
            CHECK(0, "sampled: device sample at %d: %s", k, err.msg);
            goto done;
        }
        dev_equal += td == th;
        if (tc == th) {
            equal++;
        } else {
            double delta = 0;
            for (int i = 0; i < VALID; i++) {
                double d = fabs((double)lc[i] - lg[i]);
                delta = d > delta ? d : delta;
            }
            double u = sx_rng_uniform(seed, (uint64_t)k);
            /* the CPU boundary the GPU's token crossed: the start of th's
             * interval when it lies above tc, the end of th's when below */
            double dist = th > tc ? cum_at(lc, th) - u : u - cum_at(lc, th + 1);
            double bound = exp(2 * delta) - 1;
            within += dist <= bound;
            worst_ratio = dist / bound > worst_ratio ? dist / bound : worst_ratio;
            if (first < 0) {
                first = k;
                printf("    seed %llu: first difference at position %d: cpu %d, cuda %d; u %.6f "
                       "is %.2e from the CPU's boundary, bound e^(2 Delta)-1 = %.2e "
                       "(Delta %.4f)\n", (unsigned long long)seed, k, tc, th, u, dist, bound,
                       delta);
            }
        }
        toks[PROMPT + k] = tc; /* both go on with the CPU's draw */
    }
    printf("    seed %llu: %d draws: %d equal to the CPU backend's, %d differ within the bound "
           "(worst %.2f of it); device sampler = host sampler on the GPU's logits in %d\n",
           (unsigned long long)seed, DRAWS, equal, within, worst_ratio, dev_equal);
    CHECK(equal + within == DRAWS, "sampled seed %llu: %d draws differ beyond the logits' bound",
          (unsigned long long)seed, DRAWS - equal - within);
    CHECK(dev_equal * 100 >= DRAWS * 97, "sampled seed %llu: the device sampler agrees with the "
          "host's in only %d of %d draws", (unsigned long long)seed, dev_equal, DRAWS);
done:
    if (sc >= 0)
        sx_backend_seq_free(cpu, sc);
    if (sg >= 0)
        sx_cuda_engine_seq_free(gpu, sg);
}

void sx_gpu_test_sampled(int *passed, int *failed, const char *dir)
{
    g_pass = passed;
    g_fail = failed;
    char mdir[1024], cfg_path[1100];
    snprintf(mdir, sizeof mdir, "%s/tiny", dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", mdir);
    sx_error err;
    struct stat st;
    sx_model *m = NULL;
    sx_qwen3_config cfg;
    sx_backend *cpu = NULL;
    sx_cuda_engine *gpu = NULL;
    float *lc = NULL, *lg = NULL, *scratch = NULL;
    if (stat(cfg_path, &st) != 0 &&
        (sx_qwen3_shape("tiny", &cfg, &err) || sx_model_write_random(&cfg, 1234, mdir, NULL, &err))) {
        CHECK(0, "writing the tiny model: %s", err.msg);
        return;
    }
    if (sx_model_load(mdir, &m, &err)) {
        CHECK(0, "loading the tiny model: %s", err.msg);
        return;
    }
    printf("temperature-1 draws, GPU engine vs CPU backend, tiny model:\n");
    int V = m->cfg.vocab_rows;
    lc = malloc((size_t)V * 4);
    lg = malloc((size_t)V * 4);
    scratch = malloc((size_t)V * 4);
    sx_engine_opts o;
    memset(&o, 0, sizeof o);
    o.n_threads = 2;
    o.max_seqs = 2;
    o.kv_tokens = 1024;
    if (!lc || !lg || !scratch) {
        CHECK(0, "out of memory");
        goto done;
    }
    if (sx_backend_open("cpu", m, &o, &cpu, &err) || sx_cuda_engine_new(m, &o, &gpu, &err)) {
        CHECK(0, "sampled: opening the engines: %s", err.msg);
        goto done;
    }
    for (uint64_t seed = 1; seed <= 2; seed++)
        run_seed(cpu, gpu, V, seed, lc, lg, scratch);
done:
    sx_cuda_engine_free(gpu);
    sx_backend_close(cpu);
    free(lc);
    free(lg);
    free(scratch);
    sx_model_free(m);
}
