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
#include <time.h>

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
        sx_step_item ic = { sc, in, n, 0, NULL, NULL }, ig = { sg, in, n, 0, NULL, NULL };
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

/* Masks of about one token in eight, as a grammar's are (few allowed). */
static void fill_mask(uint32_t *m, int words, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 7;
    for (int w = 0; w < words; w++) {
        uint32_t a[3];
        for (int k = 0; k < 3; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            a[k] = (uint32_t)(x >> 32);
        }
        m[w] = a[0] & a[1] & a[2];
        if (w * 32 + 32 > VALID)
            m[w] &= w * 32 >= VALID ? 0u : (1u << (VALID - w * 32)) - 1u;
    }
}

/* The masked step and sample through the CUDA backend (engine/backend.h,
 * sx_step_sample): one step of BS sequences, each with its own sampler --
 * greedy; temperature 1 under a mask; top-k, repetition penalty and
 * no-repeat-n-gram under a mask; top-n log-probs (which the device cannot
 * give: the backend draws that one on the host) -- and one without a
 * request, whose logits must come back as they would without the others.
 * Each position compares
 *   dev   the backend's draw (the device sampler, kernels/sampler.cu);
 *   host  the CPU sampler on the logits the same step gives the CUDA
 *         backend without requests or masks (run again after a truncate);
 *   cpu   the CPU sampler on the CPU backend's logits.
 * dev = host wherever the device drew (the shared arithmetic, >= 97% as
 * above, all of them in practice); dev = cpu for greedy unless the CPU's
 * margin of its token over the GPU's is within 2 Delta, and for the two
 * plain temperature-1 rows (masked; top-n) unless u lies within
 * e^(2 Delta) - 1 of the boundary crossed (the bound of run_seed; masked
 * tokens weigh nothing on both sides); the top-k/penalty row's differences
 * are printed. */
enum { BS = 5, BSTEPS = 4 };
static void run_backend(sx_backend *cpu, sx_backend *gb, int V)
{
    sx_error err;
    const int words = (V + 31) / 32;
    int sc[BS], sg[BS], ok = 1;
    for (int i = 0; i < BS; i++)
        sc[i] = sg[i] = -1;
    int32_t toks[BS][PROMPT + BSTEPS];
    sx_sampling p[BS];
    sx_sampler *smp[BS] = { 0 };
    sx_step_sample req[BS];
    sx_step_item ic[BS], ig[BS];
    uint32_t *mask = malloc((size_t)BS * words * 4);
    float *lc = malloc((size_t)BS * V * 4), *lg = malloc((size_t)BS * V * 4),
          *lr = malloc((size_t)BS * V * 4), *scratch = malloc((size_t)V * 4);
    int dev = 0, dev_equal = 0, host_drawn = 0, cpu_equal = 0, cpu_within = 0, cpu_other = 0;
    int diff01 = 0;
    if (!mask || !lc || !lg || !lr || !scratch) {
        CHECK(0, "backend sampling: out of memory");
        goto done;
    }
    for (int i = 0; i < BS; i++) {
        uint64_t x = (uint64_t)(i + 11) * 0x9E3779B97F4A7C15ull;
        for (int k = 0; k < PROMPT; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            toks[i][k] = (int32_t)((x >> 33) % VALID);
        }
        sx_sampling_default(&p[i]);
        p[i].seed = 40 + (uint64_t)i;
    }
    p[0].temperature = 0;
    p[2].top_k = 50;
    p[2].repetition_penalty = 1.2f;
    p[2].no_repeat_ngram = 2;
    p[3].top_n = 2;
    for (int i = 0; i < BS; i++)
        if (sx_sampler_new(&p[i], V, VALID, &smp[i], &err) ||
            sx_backend_seq_new(cpu, &sc[i], &err) || sx_backend_seq_new(gb, &sg[i], &err)) {
            CHECK(0, "backend sampling: set-up: %s", err.msg);
            goto done;
        }
    for (int k = 0; k < BSTEPS && ok; k++) {
        const int at = k ? PROMPT + k - 1 : 0, n = k ? 1 : PROMPT;
        for (int i = 0; i < BS; i++) {
            uint32_t *mi = i == 1 || i == 2 ? mask + (size_t)i * words : NULL;
            if (mi)
                fill_mask(mi, words, (uint64_t)(k * BS + i));
            memset(&req[i], 0, sizeof req[i]);
            req[i].sampler = smp[i];
            ic[i] = (sx_step_item){ .seq = sc[i], .tokens = toks[i] + at, .n = n, .allow = mi };
            ig[i] = ic[i];
            ig[i].seq = sg[i];
            ig[i].sample = i < BS - 1 ? &req[i] : NULL;
        }
        if (sx_backend_step(cpu, ic, BS, lc, &err) || sx_backend_step(gb, ig, BS, lg, &err)) {
            CHECK(0, "backend sampling: step %d: %s", k, err.msg);
            break;
        }
        for (int i = 0; i < BS; i++) {
            /* without masks: the host sampler applies them as the device's
             * did (and the emulator skips a costly masking kernel) */
            ig[i].sample = NULL;
            ig[i].allow = NULL;
            if (sx_backend_seq_truncate(gb, sg[i], at, &err))
                ok = 0;
        }
        if (!ok || sx_backend_step(gb, ig, BS, lr, &err)) {
            CHECK(0, "backend sampling: step %d again: %s", k, err.msg);
            break;
        }
        CHECK(!memcmp(lg + (size_t)(BS - 1) * V, lr + (size_t)(BS - 1) * V, (size_t)V * 4),
              "backend sampling: step %d: the row without a request is not the logits of the "
              "same step without requests", k);
        for (int i = 0; i < BS - 1; i++) {
            sx_sample hs, cs;
            memcpy(scratch, lr + (size_t)i * V, (size_t)V * 4);
            int rh = sx_sampler_sample(smp[i], scratch, ic[i].allow, &hs, &err);
            memcpy(scratch, lc + (size_t)i * V, (size_t)V * 4);
            int rcp = sx_sampler_sample(smp[i], scratch, ic[i].allow, &cs, &err);
            if (rh || rcp || req[i].rc) {
                CHECK(0, "backend sampling: step %d row %d: sampler failed (%s)", k, i,
                      req[i].rc ? req[i].err.msg : err.msg);
                ok = 0;
                break;
            }
            int32_t td = req[i].out.token, th = hs.token, tc = cs.token;
            CHECK(req[i].on_device == (i != 3), "backend sampling: row %d drawn on the %s", i,
                  req[i].on_device ? "device" : "host");
            if (req[i].on_device) {
                dev++;
                dev_equal += td == th;
                if (td != th)
                    printf("    step %d row %d: device %d, host sampler %d on the same "
                           "logits\n", k, i, td, th);
                CHECK(td != th || fabsf(req[i].out.logprob - hs.logprob) <= 1e-3f,
                      "backend sampling: step %d row %d: log-prob %.6f on the device, %.6f on "
                      "the host", k, i, req[i].out.logprob, hs.logprob);
            } else {
                host_drawn++;
                CHECK(td == th && req[i].out.n_top == 2,
                      "backend sampling: step %d row %d: the host-drawn request is %d (%d top), "
                      "the host sampler's %d", k, i, td, req[i].out.n_top, th);
            }
            if (tc == td) {
                cpu_equal++;
            } else if (i != 2) {
                diff01++;
                double delta = 0;
                const float *a = lc + (size_t)i * V, *g = lr + (size_t)i * V;
                for (int t = 0; t < VALID; t++)
                    if (isfinite(a[t]) && isfinite(g[t]) && (!ic[i].allow ||
                                                             ic[i].allow[t >> 5] >> (t & 31) & 1))
                        delta = fmax(delta, fabs((double)a[t] - g[t]));
                double dist, bound;
                if (i == 0) { /* greedy: the CPU's margin of tc over td */
                    dist = (double)a[tc] - a[td];
                    bound = 2 * delta;
                } else {
                    double u = sx_rng_uniform(p[i].seed, (uint64_t)k);
                    dist = td > tc ? cum_at(a, td) - u : u - cum_at(a, td + 1);
                    bound = exp(2 * delta) - 1;
                }
                cpu_within += dist <= bound;
                printf("    step %d row %d: cpu %d, cuda %d: %.2e from the CPU's boundary, bound "
                       "%.2e (Delta %.4f)\n", k, i, tc, td, dist, bound, delta);
            } else {
                cpu_other++;
                printf("    step %d row %d (top-k, penalties): cpu %d, cuda %d\n", k, i, tc, td);
            }
        }
        for (int i = 0; ok && i < BS; i++) {
            /* everyone goes on with the CPU's draw (row BS-1: greedy on it) */
            int32_t next;
            if (i < BS - 1) {
                memcpy(scratch, lc + (size_t)i * V, (size_t)V * 4);
                sx_sample cs;
                sx_sampler_sample(smp[i], scratch, ic[i].allow, &cs, NULL);
                next = cs.token;
                sx_sampler_accept(smp[i], next);
            } else {
                next = 0;
                for (int t = 1; t < VALID; t++)
                    next = lc[(size_t)i * V + t] > lc[(size_t)i * V + next] ? t : next;
            }
            toks[i][PROMPT + k] = next;
        }
    }
    printf("    backend: %d device draws, %d equal to the host sampler's on the same logits; "
           "%d host-drawn (top-n); vs the CPU backend: %d equal, %d differ within the bound, "
           "%d differ in the top-k/penalty row\n", dev, dev_equal, host_drawn, cpu_equal,
           cpu_within, cpu_other);
    CHECK(ok && dev == 3 * BSTEPS && host_drawn == BSTEPS, "backend sampling: %d device draws, "
          "%d host draws", dev, host_drawn);
    CHECK(dev_equal * 100 >= dev * 97, "backend sampling: the device agrees with the host "
          "sampler in only %d of %d draws", dev_equal, dev);
    CHECK(cpu_within == diff01, "backend sampling: %d greedy or plain temperature-1 draws differ from "
          "the CPU backend's beyond the logits' bound", diff01 - cpu_within);
done:
    for (int i = 0; i < BS; i++) {
        if (sc[i] >= 0)
            sx_backend_seq_free(cpu, sc[i]);
        if (sg[i] >= 0)
            sx_backend_seq_free(gb, sg[i]);
        sx_sampler_free(smp[i]);
    }
    free(mask);
    free(lc);
    free(lg);
    free(lr);
    free(scratch);
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
    sx_backend *gb = NULL;
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
    /* the backend needs room for BS sequences beside the engine above */
    sx_cuda_engine_free(gpu);
    gpu = NULL;
    sx_backend_close(cpu);
    cpu = NULL;
    o.max_seqs = BS;
    o.kv_tokens = 2048;
    if (sx_backend_open("cpu", m, &o, &cpu, &err) || sx_cuda_backend_open(0, m, &o, &gb, &err)) {
        CHECK(0, "sampled: opening the backends: %s", err.msg);
        goto done;
    }
    printf("the masked step and sample through the CUDA backend, tiny model:\n");
    clock_t c0 = clock();
    printf("    (the engine's draws above: %.1f s of CPU)\n", (double)c0 / CLOCKS_PER_SEC);
    run_backend(cpu, gb, V);
    printf("    (%.1f s of CPU)\n", (double)(clock() - c0) / CLOCKS_PER_SEC);
done:
    sx_backend_close(gb);
    sx_cuda_engine_free(gpu);
    sx_backend_close(cpu);
    free(lc);
    free(lg);
    free(scratch);
    sx_model_free(m);
}
