/* The GPU engine against a reference forward pass composed of the kernels'
 * CPU references (kernels/ *_ref.c), on the tiny random model.  The
 * composition rounds to bf16 at exactly the places the GPU engine does, so
 * the two differ only by the kernels' own tolerances (reduction order): this
 * checks the engine's orchestration -- fused weights, pass metadata, paged
 * cache and block tables, prefill/decode kernel choice, graphs -- tightly,
 * where the comparison with the f32 CPU engine (test_gpu_engine.c) can only
 * be loose.  Tolerance: max |gpu - ref| <= 1e-2 * max |ref| per logits row,
 * and the same greedy token unless the two picks' reference logits are
 * within the bound the arithmetic allows (tests/gpu/gpu_ref.c derives it:
 * one bf16 ulp on the LM head's inputs plus f32 summation order).  Why the
 * logit tolerance is not tighter: a sum taken in another order flips a bf16 rounding
 * now and then (1 in ~3,000 attention outputs of the tiny model), and a flip
 * (2^-8 relative) is amplified by the next MLP; through two layers that
 * alone gives ~0.35% of max |logit| (measured under tests/gpu/emu, where the
 * GEMMs are bit-identical to the references and only such flips remain).
 * A wrong position, block or weight gives errors of order 1.
 * Called from tests/gpu/test_gpu_main.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/model/model.h"
#include "engine/cuda/engine_cuda.h"
#include "tests/gpu/gpu_ref.h"

void sx_gpu_test_refengine(int *passed, int *failed, const char *dir);

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

#define MAXLEN 256 /* positions the reference sequences can hold */

static int argmax(const float *l, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b])
            b = i;
    return b;
}

static double worst_seen;

static double worst_bound; /* largest |gpu - ref| / bound over all logits */
static int rows_seen, near_ties;

static void compare(const float *ref, const float *bound, const float *got, int V,
                    const char *what)
{
    double mr = 0, md = 0;
    for (int i = 0; i < V; i++) {
        mr = fmax(mr, fabs(ref[i]));
        double d = fabs((double)ref[i] - got[i]);
        md = d > md || d != d ? d : md;
        double q = d / ((double)bound[i] + 1e-30);
        worst_bound = q > worst_bound || q != q ? q : worst_bound;
    }
    double rel = md / (mr + 1e-30);
    worst_seen = rel > worst_seen || rel != rel ? rel : worst_seen;
    CHECK(rel <= 1e-2, "%s: max |gpu - ref| %.4g = %.3g of max |ref| (tolerance 1e-2)", what, md,
          rel);
    int br, bg;
    double gap;
    rows_seen++;
    near_ties += gpu_ref_is_near_tie(ref, bound, V);
    CHECK(gpu_ref_greedy_ok(ref, bound, got, V, &br, &bg, &gap),
          "%s: greedy %d (ref) vs %d (gpu), ref gap %.4g over the bound %.4g + %.4g", what, br, bg,
          gap, bound[br], bound[bg]);
}

void sx_gpu_test_refengine(int *passed, int *failed, const char *dir)
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
    if (stat(cfg_path, &st) != 0 &&
        (sx_qwen3_shape("tiny", &cfg, &err) || sx_model_write_random(&cfg, 1234, mdir, NULL, &err))) {
        CHECK(0, "writing the tiny model: %s", err.msg);
        return;
    }
    if (sx_model_load(mdir, &m, &err)) {
        CHECK(0, "loading the tiny model: %s", err.msg);
        return;
    }
    printf("engine vs composed CPU references (bf16 at the same places), tiny model:\n");
    const sx_qwen3_config *c = &m->cfg;
    gpu_ref_model r;
    gpu_ref_init(&r, m, MAXLEN);
    int V = c->vocab_rows;
    float *ref = calloc((size_t)V, 4), *bound = calloc((size_t)V, 4);
    float *got = calloc((size_t)3 * V, 4);
    sx_engine_opts o;
    memset(&o, 0, sizeof o);
    o.max_seqs = 8;
    o.kv_tokens = 4096;
    sx_cuda_engine *e = NULL;
    if (!ref || !bound || !got) {
        CHECK(0, "out of memory");
        goto done;
    }
    if (sx_cuda_engine_new(m, &o, &e, &err)) {
        CHECK(0, "gpu engine: %s", err.msg);
        goto done;
    }
    {
        /* two sequences: prompts of 37 and 5 tokens in one step, then decode
         * both together (graph path), then a 20-token chunk on one while the
         * other decodes (mixed pass) */
        enum { NS = 2 };
        gpu_ref_seq rs[NS];
        int seq[NS], plen[NS] = { 37, 5 };
        int32_t prompt[NS][40], next[NS];
        sx_step_item items[NS];
        uint64_t x = 42;
        for (int s = 0; s < NS; s++) {
            gpu_ref_seq_init(&r, &rs[s]);
            CHECK(sx_cuda_engine_seq_new(e, &seq[s], &err) == 0, "seq_new");
            for (int i = 0; i < plen[s]; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                prompt[s][i] = (int32_t)((x >> 33) % 151669);
            }
            sx_step_item it = { seq[s], prompt[s], plen[s], 0, NULL, NULL };
            items[s] = it;
        }
        CHECK(sx_cuda_engine_step(e, items, NS, got, &err) == 0, "prefill: %s", err.msg);
        for (int s = 0; s < NS; s++) {
            gpu_ref_forward(&r, &rs[s], prompt[s], plen[s], ref, bound);
            compare(ref, bound, got + (size_t)s * V, V, "prefill");
            next[s] = argmax(ref, V);
        }
        for (int t = 0; t < 5; t++) {
            for (int s = 0; s < NS; s++) {
                sx_step_item it = { seq[s], &next[s], 1, 0, NULL, NULL };
                items[s] = it;
            }
            CHECK(sx_cuda_engine_step(e, items, NS, got, &err) == 0, "decode: %s", err.msg);
            for (int s = 0; s < NS; s++) {
                gpu_ref_forward(&r, &rs[s], &next[s], 1, ref, bound);
                compare(ref, bound, got + (size_t)s * V, V, "decode");
                next[s] = argmax(ref, V);
            }
        }
        int32_t chunk[20];
        for (int i = 0; i < 20; i++)
            chunk[i] = (int32_t)((i * 7919 + 11) % 151669);
        sx_step_item mixed[NS] = { { seq[0], chunk, 20, 0, NULL, NULL }, { seq[1], &next[1], 1, 0, NULL, NULL } };
        CHECK(sx_cuda_engine_step(e, mixed, NS, got, &err) == 0, "mixed: %s", err.msg);
        gpu_ref_forward(&r, &rs[0], chunk, 20, ref, bound);
        compare(ref, bound, got, V, "mixed pass, chunk");
        gpu_ref_forward(&r, &rs[1], &next[1], 1, ref, bound);
        compare(ref, bound, got + V, V, "mixed pass, decode");
        for (int s = 0; s < NS; s++) {
            gpu_ref_seq_fini(&rs[s]);
        }
    }
    printf("    max |gpu - ref| / max |ref| = %.3g (tolerance 1e-2); max |gpu - ref| / bound = "
           "%.3g; greedy: %d rows, top two within the bound in %d\n", worst_seen, worst_bound,
           rows_seen, near_ties);
done:
    sx_cuda_engine_free(e);
    free(ref);
    free(got);
    free(bound);
    gpu_ref_fini(&r);
    sx_model_free(m);
}
