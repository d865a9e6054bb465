/* CPU forward-pass figures for sx_engine, bf16, int8 and q4 weights:
 *   - the machine's memory-read bandwidth (all threads reading a buffer far
 *     larger than the last-level cache) and f32 FMA peak (register-only);
 *   - single-stream decode tok/s and TPOT after a --decode-context token
 *     prompt (default 16), and that as a percentage of the bandwidth
 *     ceiling (bytes read per token -- the weights, plus the KV cache (f32,
 *     or bf16 with --kv bf16) at the mean context of the timed tokens --
 *     / bandwidth);
 *   - decode under a narrow grammar mask (128 tokens), alternated step by
 *     step with unmasked decode: what the sparse LM head saves;
 *   - batched decode at 1, 4 and 16 sequences (total tok/s, median step);
 *   - prefill tok/s and TTFT for one --prompt token prompt, and the
 *     prefill's matrix FLOP rate against the FMA peak;
 *   - int8's and q4's quality cost next to bf16 on one 128-token sequence:
 *     perplexity of it under each, mean KL divergence, top-1 agreement;
 *     the same for bf16act (bf16 weights, activations rounded to bf16 in
 *     products of 12+ tokens: the engine's opt-in fast prefill).
 * Medians throughout.  Performance depends on shapes, not values, so the
 * default model is random with Qwen3-0.6B's shapes (--random-0.6b); --model
 * DIR loads a Hugging Face directory instead.  --layers N keeps only the
 * first N layers (the figures then describe that shorter model, and say so).
 *
 * usage: bench_decode [--model DIR | --random-0.6b] [--layers N] [--threads N]
 *                     [--prompt N] [--decode N] [--decode-context N] [--kv f32|bf16]
 *                     [--modes bf16,int8,q4,bf16act] [--rounds N] [--bw-mib N]
 * --rounds N runs the listed modes N times in turn (alternated, so a busy
 * moment of a shared machine falls on every mode alike; take medians). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/sx_error.h"
#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/engine.h"
#include "engine/model/model.h"
#include "engine/cpu/threadpool.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
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

/* ---- machine figures ----------------------------------------------------- */

typedef struct bw_ctx {
    const sx_cpu_kernels *kr;
    const float *buf;
    long n;
    int prefetch;
    float sink[64];
} bw_ctx;

#if defined(__x86_64__)
#include <immintrin.h>
/* a pure read: four independent ORs of 64-byte loads, optionally with a
 * software prefetch 8 KiB ahead; the better of the two is the ceiling */
__attribute__((target("avx512f"))) static float read512(const float *p, long n, int pf)
{
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    for (long i = 0; i + 64 <= n; i += 64) {
        if (pf)
            _mm_prefetch((const char *)(p + i) + 8192, _MM_HINT_T0);
        a = _mm512_or_si512(a, _mm512_loadu_si512((const void *)(p + i)));
        b = _mm512_or_si512(b, _mm512_loadu_si512((const void *)(p + i + 16)));
        c = _mm512_or_si512(c, _mm512_loadu_si512((const void *)(p + i + 32)));
        d = _mm512_or_si512(d, _mm512_loadu_si512((const void *)(p + i + 48)));
    }
    a = _mm512_or_si512(_mm512_or_si512(a, b), _mm512_or_si512(c, d));
    return (float)_mm512_reduce_or_epi32(a);
}

/* read512 at 256 bits, for AVX2-only CPUs: the scalar fallback below is a
 * chain of dependent float adds, which measures the adder's latency
 * (~8.5 GB/s per thread on an AMD EPYC that reads 23 GB/s) and made every
 * decode look like 300% of its "ceiling" there */
__attribute__((target("avx2"))) static float read256(const float *p, long n, int pf)
{
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (long i = 0; i + 32 <= n; i += 32) {
        if (pf)
            _mm_prefetch((const char *)(p + i) + 8192, _MM_HINT_T0);
        a = _mm256_or_si256(a, _mm256_loadu_si256((const __m256i *)(p + i)));
        b = _mm256_or_si256(b, _mm256_loadu_si256((const __m256i *)(p + i + 8)));
        c = _mm256_or_si256(c, _mm256_loadu_si256((const __m256i *)(p + i + 16)));
        d = _mm256_or_si256(d, _mm256_loadu_si256((const __m256i *)(p + i + 24)));
    }
    a = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
    return (float)_mm256_extract_epi32(a, 0);
}
#endif

static void bw_read(void *arg, int tid, int nth)
{
    bw_ctx *c = arg;
    long lo, hi;
    sx_pool_range(c->n, nth, tid, 4096, &lo, &hi);
    float s = 0;
#if defined(__x86_64__)
    if (c->kr->path >= SX_CPU_AVX512) {
        c->sink[tid % 64] = read512(c->buf + lo, hi - lo, c->prefetch);
        return;
    }
    if (c->kr->path >= SX_CPU_AVX2) {
        c->sink[tid % 64] = read256(c->buf + lo, hi - lo, c->prefetch);
        return;
    }
#endif
    for (long i = lo; i < hi; i++)
        s += c->buf[i];
    c->sink[tid % 64] = s;
}

/* bytes per second read by all threads, best of several passes; *per_cpu
 * the same per second of CPU time given to each thread (what an unshared
 * machine would show: this one is shared, so both are printed) */
static double measure_bandwidth(sx_pool *pool, const sx_cpu_kernels *kr, size_t mib,
                                double *per_cpu)
{
    size_t n = mib << 18;   /* floats */
    /* huge pages where allowed, as the engine's weights get */
    float *buf = mmap(NULL, n * sizeof *buf, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    if (buf == MAP_FAILED)
        return 0;
    (void)madvise(buf, n * sizeof *buf, MADV_HUGEPAGE);
    for (size_t i = 0; i < n; i++)
        buf[i] = (float)(i & 7);
    bw_ctx c = { .kr = kr, .buf = buf, .n = (long)n };
    double best = 0, best_cpu = 0;
    for (int rep = 0; rep < 6; rep++) {
        c.prefetch = rep & 1;
        double t0 = now(), c0 = cpu_now();
        sx_pool_run(pool, bw_read, &c);
        double bytes = (double)n * sizeof *buf;
        double bw = bytes / (now() - t0), bwc = bytes / ((cpu_now() - c0) / sx_pool_size(pool));
        best = bw > best ? bw : best;
        best_cpu = bwc > best_cpu ? bwc : best_cpu;
    }
    munmap(buf, n * sizeof *buf);
    *per_cpu = best_cpu;
    return best;
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float fma_loop512(long iters)
{
    __m512 a[12], m = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        a[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            a[i] = _mm512_fmadd_ps(a[i], m, b);
    __m512 s = a[0];
    for (int i = 1; i < 12; i++)
        s = _mm512_add_ps(s, a[i]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float fma_loop256(long iters)
{
    __m256 a[12], m = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        a[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            a[i] = _mm256_fmadd_ps(a[i], m, b);
    __m256 s = a[0];
    for (int i = 1; i < 12; i++)
        s = _mm256_add_ps(s, a[i]);
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0];
}

/* AMX bf16: four independent C tiles, A and B loaded once; 16x16x32
 * multiply-adds per instruction (the CPU path already asked Linux for the
 * tile state). */
__attribute__((target("amx-tile,amx-bf16"))) static float amx_loop(long iters)
{
    struct {
        uint8_t  palette, start_row, reserved[14];
        uint16_t colsb[16];
        uint8_t  rows[16];
    } cfg;
    static _Alignas(64) uint16_t ab[16 * 32];
    _Alignas(64) float out[16 * 16];
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 6; i++) {
        cfg.colsb[i] = 64;
        cfg.rows[i] = 16;
    }
    _tile_loadconfig(&cfg);
    _tile_loadd(4, ab, 64);
    _tile_loadd(5, ab, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (long it = 0; it < iters; it++) {
        _tile_dpbf16ps(0, 4, 5);
        _tile_dpbf16ps(1, 4, 5);
        _tile_dpbf16ps(2, 4, 5);
        _tile_dpbf16ps(3, 4, 5);
    }
    _tile_stored(0, out, 64);
    _tile_release();
    return out[0];
}

/* AVX512-BF16: twelve independent accumulators, each vdpbf16ps 16 lanes x
 * 2 bf16 products -- the peak of a matrix multiply that rounds its
 * activations to bf16 (what oneDNN does on CPUs without AMX). */
__attribute__((target("avx512f,avx512bf16"))) static float dpbf16_loop(long iters)
{
    __m512 a[12];
    __m512bh m = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);
    for (int i = 0; i < 12; i++)
        a[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            a[i] = _mm512_dpbf16_ps(a[i], m, b);
    __m512 s = a[0];
    for (int i = 1; i < 12; i++)
        s = _mm512_add_ps(s, a[i]);
    return _mm512_reduce_add_ps(s);
}
#endif

/* pseudo-paths for the peak loops beyond the kernel paths */
enum { PEAK_AMX = SX_CPU_AMX + 1, PEAK_DPBF16 = SX_CPU_AMX + 2 };

typedef struct fma_ctx {
    int   path;
    long  iters;
    float sink[64];
} fma_ctx;

static void fma_run(void *arg, int tid, int nth)
{
    fma_ctx *c = arg;
    (void)nth;
#if defined(__x86_64__)
    c->sink[tid % 64] = c->path == PEAK_AMX      ? amx_loop(c->iters)
                        : c->path == PEAK_DPBF16 ? dpbf16_loop(c->iters)
                        : c->path >= SX_CPU_AVX512 ? fma_loop512(c->iters)
                                                   : fma_loop256(c->iters);
#endif
}

/* f32 FLOP/s of independent FMAs on every thread: the compute ceiling of
 * an f32-accumulating matrix multiply on this machine. */
static double measure_fma_peak(sx_pool *pool, int path, double *per_cpu)
{
    *per_cpu = 0;
    if (path == SX_CPU_SCALAR)
        return 0;
    /* PEAK_AMX asks for the AMX bf16 tile peak, PEAK_DPBF16 for vdpbf16ps */
    int amx = path == PEAK_AMX, dp = path == PEAK_DPBF16;
    fma_ctx c = { .path = path, .iters = amx ? 2000000 : 20000000 };
    int lanes = path >= SX_CPU_AVX512 ? 16 : 8;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now(), c0 = cpu_now();
        sx_pool_run(pool, fma_run, &c);
        double flops = (amx ? (double)c.iters * 4 * 16 * 16 * 32 * 2 : (double)c.iters * 12 * lanes * 2 * (dp ? 2 : 1)) *
                       sx_pool_size(pool);
        double f = flops / (now() - t0), fc = flops / ((cpu_now() - c0) / sx_pool_size(pool));
        best = f > best ? f : best;
        *per_cpu = fc > *per_cpu ? fc : *per_cpu;
    }
    return best;
}

/* ---- a random model with real shapes, in memory --------------------------- */

typedef struct rmodel {
    sx_model          m;
    uint16_t         *mats;
    float            *norms;
} rmodel;

static uint64_t rng = 0x243f6a8885a308d3ull;
static inline uint64_t xs(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void fill_bf16(uint16_t *w, size_t n, float amp)
{
    /* a 4096-entry table of bf16 values: filling 600M weights stays fast */
    static uint16_t tab[4096];
    for (int i = 0; i < 4096; i++)
        tab[i] = sx_f32_to_bf16(amp * ((float)(xs() >> 40) / (float)(1 << 24) * 2.0f - 1.0f));
    for (size_t i = 0; i < n; i++)
        w[i] = tab[(xs() >> 20) & 4095];
}

static int random_model(const sx_qwen3_config *cfg, rmodel *out)
{
    memset(out, 0, sizeof *out);
    sx_qwen3_config c = *cfg;
    size_t H = (size_t)c.hidden, I = (size_t)c.intermediate;
    size_t qd = (size_t)c.n_heads * c.head_dim, kvd = (size_t)c.n_kv_heads * c.head_dim;
    size_t per_layer = qd * H * 2 + kvd * H * 2 + I * H * 3;
    size_t total = (size_t)c.vocab_rows * H + per_layer * (size_t)c.n_layers;
    out->mats = malloc(total * sizeof *out->mats);
    out->norms = malloc(((size_t)c.n_layers * (2 * H + 2 * (size_t)c.head_dim) + H) * sizeof(float));
    out->m.layers = calloc((size_t)c.n_layers, sizeof *out->m.layers);
    if (!out->mats || !out->norms || !out->m.layers)
        return SX_ENOMEM;
    out->m.cfg = c;
    uint16_t *w = out->mats;
    float *nw = out->norms;
    out->m.embed = w;
    out->m.lm_head = w;
    fill_bf16(w, (size_t)c.vocab_rows * H, 0.1f);   /* tied: logits of a few nats */
    w += (size_t)c.vocab_rows * H;
    for (int l = 0; l < c.n_layers; l++) {
        sx_layer_weights *L = &out->m.layers[l];
        float ah = sqrtf(3.0f / (float)H), aq = sqrtf(3.0f / (float)qd), ai = sqrtf(3.0f / (float)I);
#define TAKE(field, rows, cols, amp) \
        do { L->field = w; fill_bf16(w, (rows) * (cols), amp); w += (rows) * (cols); } while (0)
        TAKE(wq, qd, H, ah);
        TAKE(wk, kvd, H, ah);
        TAKE(wv, kvd, H, ah);
        TAKE(wo, H, qd, aq);
        TAKE(w_gate, I, H, ah);
        TAKE(w_up, I, H, ah);
        TAKE(w_down, H, I, ai);
#undef TAKE
        float *n0 = nw;
        for (size_t i = 0; i < 2 * H + 2 * (size_t)c.head_dim; i++)
            nw[i] = 1.0f;
        L->attn_norm = n0;
        L->mlp_norm = n0 + H;
        L->q_norm = n0 + 2 * H;
        L->k_norm = n0 + 2 * H + c.head_dim;
        nw += 2 * H + 2 * (size_t)c.head_dim;
    }
    for (size_t i = 0; i < H; i++)
        nw[i] = 1.0f;
    out->m.final_norm = nw;
    snprintf(out->m.dir, sizeof out->m.dir, "(random)");
    return SX_OK;
}

static void random_model_free(rmodel *r)
{
    free(r->mats);
    free(r->norms);
    free(r->m.layers);
}

/* ---- engine figures --------------------------------------------------------- */

/* int8's quality cost: the same QUAL_TOKENS tokens through both modes, every
 * row's logits kept; perplexity of the sequence under each, mean KL(bf16 ||
 * int8) per position and how often the argmax agrees. */
enum { QUAL_TOKENS = 128 };
static float *qual_bf16;

static void log_softmax(const float *z, int n, double *out)
{
    double mx = z[0], s = 0;
    for (int i = 1; i < n; i++)
        mx = z[i] > mx ? z[i] : mx;
    for (int i = 0; i < n; i++)
        s += exp(z[i] - mx);
    double lse = mx + log(s);
    for (int i = 0; i < n; i++)
        out[i] = z[i] - lse;
}

static void quality(const char *name, const float *a, const float *b, const int32_t *tok, int V)
{
    double *la = malloc((size_t)V * sizeof *la), *lb = malloc((size_t)V * sizeof *lb);
    if (!la || !lb) {
        free(la);
        free(lb);
        return;
    }
    double nll_a = 0, nll_b = 0, kl = 0;
    int agree = 0, n = QUAL_TOKENS - 1;
    for (int t = 0; t < n; t++) {
        log_softmax(a + (size_t)t * V, V, la);
        log_softmax(b + (size_t)t * V, V, lb);
        nll_a -= la[tok[t + 1]];
        nll_b -= lb[tok[t + 1]];
        int ia = 0, ib = 0;
        for (int i = 0; i < V; i++) {
            kl += exp(la[i]) * (la[i] - lb[i]);
            ia = la[i] > la[ia] ? i : ia;
            ib = lb[i] > lb[ib] ? i : ib;
        }
        agree += ia == ib;
    }
    printf("%s quality (%d positions, random weights and tokens): ppl bf16 %.2f, ppl %s %.2f "
           "(%+.3f%%), mean KL(bf16||%s) %.2e nats, top-1 agreement %.1f%%\n", name, n,
           exp(nll_a / n), name, exp(nll_b / n), 100 * (exp(nll_b / n) / exp(nll_a / n) - 1), name, kl / n,
           100.0 * agree / n);
    free(la);
    free(lb);
}

static void rand_tokens(int32_t *t, int n, int vocab)
{
    for (int i = 0; i < n; i++)
        t[i] = (int32_t)(xs() % (uint64_t)vocab);
}

typedef struct machine {
    sx_pool              *pool;
    const sx_cpu_kernels *kr;
    size_t                bw_mib;
    double                bw;     /* best read bandwidth seen in this run */
    double                bw_cpu; /* the same per CPU second (measure_bandwidth) */
    double                peak;
    double                peak_cpu;
    double                amx_peak; /* bf16 tiles, when the path is AMX */
    double                amx_peak_cpu;
    double                dp_peak;  /* vdpbf16ps, when the CPU has AVX512-BF16 */
    double                dp_peak_cpu;
} machine;

/* bandwidth again, just before a decode measurement: the ceiling is the best
 * seen, so a busy moment cannot flatter the percentage */
static void remeasure(machine *mc)
{
    double bc, b = measure_bandwidth(mc->pool, mc->kr, mc->bw_mib, &bc);
    mc->bw = b > mc->bw ? b : mc->bw;
    mc->bw_cpu = bc > mc->bw_cpu ? bc : mc->bw_cpu;
}

/* tokens of context the single-stream decode starts from (--decode-context) */
static int g_dctx = 16;
static int g_kv_mode = SX_KV_F32;   /* --kv bf16 */

static int run_mode(const sx_model *m, int mode, int act, int threads, int prompt, int n_decode,
                    machine *mc, int layers_note)
{
    const sx_qwen3_config *c = &m->cfg;
    const char *name = mode == SX_W_Q4     ? "q4"
                     : mode == SX_W_INT8   ? "int8"
                     : act == SX_ACT_BF16 ? "bf16act"
                                           : "bf16";
    sx_error err;
    sx_engine *e = NULL;
    int rc;
    sx_engine_opts o = { .n_threads = threads, .max_seqs = 32,
                         .kv_tokens = 16 * 64 + (int64_t)prompt + g_dctx + 3 * n_decode + QUAL_TOKENS + 64,
                         .weight_mode = mode, .act_mode = act, .kv_mode = g_kv_mode };
    double t0 = now();
    if ((rc = sx_engine_new(m, &o, &e, &err))) {
        if (rc == SX_EUNSUPPORTED && act == SX_ACT_BF16) {
            printf("== %s: skipped (%s) ==\n", name, err.msg);
            return 0;
        }
        fprintf(stderr, "bench_decode: %s\n", err.msg);
        return 1;
    }
    double t_new = now() - t0;
    int V = c->vocab_rows;
    size_t H = (size_t)c->hidden, I = (size_t)c->intermediate;
    size_t qd = (size_t)c->n_heads * c->head_dim, kvd = (size_t)c->n_kv_heads * c->head_dim;
    double layer_w = (double)(qd * H * 2 + kvd * H * 2 + I * H * 3) * c->n_layers;
    double head_w = (double)V * H;
    double rows = (double)(qd + 2 * kvd + H + 3 * I) * c->n_layers + V;
    /* q4: 32 rows x SX_Q4_GROUP k per SX_Q4_GROUP_BYTES (scales included) */
    double bytes_tok = mode == SX_W_Q4 ? (layer_w + head_w) * SX_Q4_GROUP_BYTES /
                                             (SX_PANEL * SX_Q4_GROUP)
                     : mode == SX_W_INT8 ? layer_w + head_w + rows * 4
                                         : 2 * (layer_w + head_w);
    /* an AWQ checkpoint: its layers are q4 panels plus a 4-byte zero
     * correction per row and group in every mode; the mode is the head's */
    if (m->quant.method == SX_QUANT_AWQ) {
        double q4b = (double)SX_Q4_GROUP_BYTES / (SX_PANEL * SX_Q4_GROUP);
        double head_b = mode == SX_W_Q4 ? head_w * q4b
                        : mode == SX_W_INT8 ? head_w + (double)V * 4 : 2 * head_w;
        bytes_tok = layer_w * (q4b + 4.0 / m->quant.group) + head_b;
    }
    float *lg = malloc((size_t)16 * V * sizeof *lg);
    int ntok = (prompt > g_dctx ? prompt : g_dctx) + 2 * n_decode + 64;
    int32_t *tok = malloc((size_t)ntok * sizeof *tok);
    if (!lg || !tok) {
        rc = 1;
        goto done;
    }
    rand_tokens(tok, ntok, V);
    printf("== %s weights (%s, %d layers%s, %d threads%s; path %s) ==\n", name, m->dir,
           c->n_layers, layers_note ? ", cut with --layers" : "", threads,
           mode != SX_W_BF16 ? ", quantised at start-up"
           : act == SX_ACT_BF16 ? ", activations rounded to bf16 from 12 tokens" : "",
           sx_engine_cpu_path(e));
    if (mode != SX_W_BF16)
        printf("%s quantise_s: %.2f\n", name, t_new);
    /* every mode: the engine's start-up (repacking; an AWQ checkpoint's
     * 4-bit layers go into the q4 panels here) */
    printf("%s engine_new_s: %.2f\n", name, t_new);
    printf("%s weight_bytes_per_token: %.0f (%.1f MB)\n", name, bytes_tok, bytes_tok / 1e6);

    /* every row's logits of a fixed sequence, for the int8 quality figures */
    {
        float *q = malloc((size_t)QUAL_TOKENS * V * sizeof *q);
        int32_t qt[QUAL_TOKENS];
        uint64_t keep = rng;
        rng = 0x9e3779b97f4a7c15ull;
        rand_tokens(qt, QUAL_TOKENS, V);
        rng = keep;
        int s;
        if (q && sx_engine_seq_new(e, &s, NULL) == SX_OK) {
            sx_step_item it = { .seq = s, .tokens = qt, .n = QUAL_TOKENS, .logits_all = 1 };
            if (sx_engine_step(e, &it, 1, q, &err) == SX_OK) {
                if (mode == SX_W_BF16 && act == SX_ACT_F32) {
                    free(qual_bf16);
                    qual_bf16 = q;
                    q = NULL;
                } else if (qual_bf16) {
                    quality(name, qual_bf16, q, qt, V);
                }
            }
            sx_engine_seq_free(e, s);
        }
        free(q);
    }

    /* prefill / TTFT: a fresh sequence, the whole prompt in one step */
    double ttft[3], c0 = 0, w0 = 0;
    for (int r = 0; r < 4; r++) {
        if (r == 1) {
            c0 = cpu_now();
            w0 = now();
        }
        int s;
        sx_engine_seq_new(e, &s, NULL);
        sx_step_item it = { .seq = s, .tokens = tok, .n = prompt };
        double a = now();
        if ((rc = sx_engine_step(e, &it, 1, lg, &err)))
            goto fail;
        if (r > 0)   /* the first run warms pages and caches */
            ttft[r - 1] = now() - a;
        sx_engine_seq_free(e, s);
    }
    double cpu_prefill = (cpu_now() - c0) / threads / 3;
    double util = (cpu_now() - c0) / ((now() - w0) * threads);
    double tt = median(ttft, 3);
    double mm_flops = 2.0 * layer_w;   /* per prompt token; lm_head runs once */
    printf("%s prefill_tokens: %d\n", name, prompt);
    printf("%s ttft_ms_median: %.1f\n", name, tt * 1e3);
    printf("%s prefill_tok_s: %.1f (cpu share %.0f%%)\n", name, prompt / tt, 100 * util);
    printf("%s prefill_matmul_gflops: %.1f", name, mm_flops * prompt / tt / 1e9);
    if (mc->peak > 0)
        printf(" (%.0f%% of the %.0f GFLOP/s FMA peak; goal >= 50%%)",
               100 * mm_flops * prompt / tt / mc->peak, mc->peak / 1e9);
    if (mc->amx_peak > 0)
        /* each activation is two bf16 halves: two tile products per product */
        printf(" (%.0f%% of the %.0f GFLOP/s AMX bf16 peak, %.0f%% counting both halves)",
               100 * mm_flops * prompt / tt / mc->amx_peak, mc->amx_peak / 1e9,
               200 * mm_flops * prompt / tt / mc->amx_peak);
    if (mc->dp_peak > 0)
        printf(" (%.0f%% of the %.0f GFLOP/s AVX512-BF16 dot-product peak)",
               100 * mm_flops * prompt / tt / mc->dp_peak, mc->dp_peak / 1e9);
    printf("\n");
    if (mc->peak_cpu > 0)
        printf("%s prefill_pct_of_fma_peak_per_cpu_second: %.0f%% (%.1f tok/s per thread-CPU-s)\n",
               name, 100 * mm_flops * prompt / cpu_prefill / mc->peak_cpu, prompt / cpu_prefill);

    /* single-stream decode: TPOT over n_decode tokens after a g_dctx-token
     * prompt; attention then also reads the f32 KV cache of the context */
    {
        int s;
        sx_engine_seq_new(e, &s, NULL);
        sx_step_item it = { .seq = s, .tokens = tok, .n = g_dctx };
        if ((rc = sx_engine_step(e, &it, 1, lg, &err)))
            goto fail;
        double *tp = malloc((size_t)n_decode * sizeof *tp);
        if (!tp) {
            rc = 1;
            goto done;
        }
        remeasure(mc);
        c0 = cpu_now();
        w0 = now();
        for (int i = 0; i < n_decode; i++) {
            it.tokens = tok + g_dctx + i;
            it.n = 1;
            double a = now();
            if ((rc = sx_engine_step(e, &it, 1, lg, &err))) {
                free(tp);
                goto fail;
            }
            tp[i] = now() - a;
        }
        double cpu_per_tok = (cpu_now() - c0) / threads / n_decode;
        util = (cpu_now() - c0) / ((now() - w0) * threads);
        double tpot = median(tp, n_decode), best = tp[0];
        free(tp);
        sx_engine_seq_free(e, s);
        double kv_tok = 2.0 * (g_kv_mode == SX_KV_BF16 ? 2 : 4) * (double)kvd * c->n_layers;
        double dec_bytes = bytes_tok + kv_tok * (g_dctx + n_decode / 2.0);
        double ceil_tok = mc->bw / dec_bytes;
        printf("%s decode_context: %d tokens (%s KV cache, %.0f bytes per token of context; %.1f MB "
               "per decoded token read with the weights)\n", name, g_dctx,
               g_kv_mode == SX_KV_BF16 ? "bf16" : "f32", kv_tok, dec_bytes / 1e6);
        printf("%s tpot_ms_median: %.2f (best %.2f)\n", name, tpot * 1e3, best * 1e3);
        printf("%s decode_tok_s: %.2f (cpu share %.0f%%)\n", name, 1.0 / tpot, 100 * util);
        printf("%s memory_read_gb_s_best: %.2f\n", name, mc->bw / 1e9);
        printf("%s decode_ceiling_tok_s: %.2f\n", name, ceil_tok);
        printf("%s decode_pct_of_ceiling: %.1f%%\n", name, 100.0 / tpot / ceil_tok);
        /* per CPU second: contention on a shared machine cancels out */
        printf("%s decode_pct_of_ceiling_per_cpu_second: %.1f%% (%.2f tok/s per thread-CPU-s, "
               "read %.2f GB/s per thread-CPU-s)\n", name,
               100.0 * dec_bytes / cpu_per_tok / mc->bw_cpu, 1.0 / cpu_per_tok, mc->bw_cpu / 1e9);
    }

    /* decode under a narrow grammar mask (the 128 single-byte tokens: what a
     * number or a JSON structure position allows), steps alternating with
     * unmasked ones so the machine's drift cancels: the sparse LM head's
     * gain (the engine computes only the panels the mask touches) */
    {
        int s, words = (V + 31) / 32, panels = 0;
        uint32_t *mask = calloc((size_t)words, sizeof *mask);
        double *tm = malloc((size_t)n_decode * sizeof *tm), *tu = malloc((size_t)n_decode * sizeof *tu);
        if (!mask || !tm || !tu || sx_engine_seq_new(e, &s, NULL)) {
            free(mask);
            free(tm);
            free(tu);
            rc = 1;
            goto done;
        }
        for (int t = 0; t < 128 && t < V; t++)
            mask[t >> 5] |= 1u << (t & 31);
        for (int w = 0; w < words; w++)
            panels += mask[w] != 0;
        sx_step_item it = { .seq = s, .tokens = tok, .n = g_dctx };
        rc = sx_engine_step(e, &it, 1, lg, &err);
        for (int i = 0; i < 2 * n_decode && !rc; i++) {
            it = (sx_step_item){ .seq = s, .tokens = tok + g_dctx + i, .n = 1,
                                 .allow = i & 1 ? mask : NULL };
            double a = now();
            rc = sx_engine_step(e, &it, 1, lg, &err);
            (i & 1 ? tm : tu)[i / 2] = now() - a;
        }
        sx_engine_seq_free(e, s);
        if (!rc) {
            double um = median(tu, n_decode), mm = median(tm, n_decode);
            printf("%s masked_decode_tok_s: %.2f (a 128-token grammar mask: %d of %d LM-head "
                   "panels; unmasked steps in between %.2f tok/s; %.2fx)\n", name, 1.0 / mm,
                   panels, words, 1.0 / um, um / mm);
        }
        free(mask);
        free(tm);
        free(tu);
        if (rc)
            goto fail;
    }

    /* batched decode: B sequences of 16 prompt tokens, then 12 timed steps of
     * B items; tok/s = B / median step time */
    static const int Bs[] = { 1, 4, 16 };
    for (size_t bi = 0; bi < sizeof Bs / sizeof *Bs; bi++) {
        enum { STEPS = 12 };
        int B = Bs[bi], seq[16];
        double st_t[STEPS];
        sx_step_item it[16];
        for (int b = 0; b < B; b++) {
            sx_engine_seq_new(e, &seq[b], NULL);
            it[b] = (sx_step_item){ .seq = seq[b], .tokens = tok + b, .n = 16 };
        }
        if ((rc = sx_engine_step(e, it, B, lg, &err)))
            goto fail;
        for (int st = 0; st < STEPS; st++) {
            for (int b = 0; b < B; b++)
                it[b] = (sx_step_item){ .seq = seq[b], .tokens = tok + 16 + b + st, .n = 1 };
            double a = now();
            if ((rc = sx_engine_step(e, it, B, lg, &err)))
                goto fail;
            st_t[st] = now() - a;
        }
        printf("%s batched_decode_B%d_tok_s: %.2f\n", name, B, B / median(st_t, STEPS));
        for (int b = 0; b < B; b++)
            sx_engine_seq_free(e, seq[b]);
    }
    goto done;
fail:
    fprintf(stderr, "bench_decode: step: %s\n", err.msg);
done:
    free(lg);
    free(tok);
    sx_engine_free(e);
    return rc;
}

/* whether the comma-separated list names mode */
static int has_mode(const char *list, const char *mode)
{
    size_t n = strlen(mode);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, mode, n))
            return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *modes = "bf16,int8,bf16act";
    int layers = 0, threads = 0, prompt = 512, n_decode = 24, rounds = 1;
    size_t bw_mib = 2048;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--random-0.6b"))
            dir = NULL;
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc)
            layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc)
            prompt = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--decode") && i + 1 < argc)
            n_decode = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--decode-context") && i + 1 < argc)
            g_dctx = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kv") && i + 1 < argc && !strcmp(argv[i + 1], "bf16"))
            g_kv_mode = SX_KV_BF16, i++;
        else if (!strcmp(argv[i], "--kv") && i + 1 < argc && !strcmp(argv[i + 1], "f32"))
            g_kv_mode = SX_KV_F32, i++;
        else if (!strcmp(argv[i], "--modes") && i + 1 < argc)
            modes = argv[++i];
        else if (!strcmp(argv[i], "--bw-mib") && i + 1 < argc)
            bw_mib = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_decode [--model DIR | --random-0.6b] [--layers N] "
                            "[--threads N] [--prompt N] [--decode N] [--decode-context N] "
                            "[--kv f32|bf16] [--modes bf16,int8,q4,bf16act] [--rounds N] "
                            "[--bw-mib N]\n");
            return 2;
        }
    }
    if (prompt < 1 || n_decode < 1 || bw_mib < 1 || g_dctx < 1 || rounds < 1) {
        fprintf(stderr, "bench_decode: --prompt, --decode, --decode-context, --rounds and "
                        "--bw-mib must be positive\n");
        return 2;
    }
    sx_error err;
    machine mc = { .bw_mib = bw_mib };
    if (sx_cpu_kernels_select(&mc.kr, &err) || sx_pool_new(threads, &mc.pool, &err)) {
        fprintf(stderr, "bench_decode: %s\n", err.msg);
        return 1;
    }
    threads = sx_pool_size(mc.pool);
    printf("cpu_path: %s\nthreads: %d\n", mc.kr->name, threads);
    mc.bw = measure_bandwidth(mc.pool, mc.kr, bw_mib, &mc.bw_cpu);
    mc.peak = measure_fma_peak(mc.pool, mc.kr->path, &mc.peak_cpu);
    printf("memory_read_gb_s: %.2f (%zu MiB buffer, %d threads; %.2f per thread-CPU-second)\n",
           mc.bw / 1e9, bw_mib, threads, mc.bw_cpu / 1e9);
    if (mc.peak > 0)
        printf("fma_peak_gflops: %.1f (f32, %s, %d threads; %.1f per thread-CPU-second)\n",
               mc.peak / 1e9, mc.kr->name, threads, mc.peak_cpu / 1e9);
    if (mc.kr->path == SX_CPU_AMX) {
        mc.amx_peak = measure_fma_peak(mc.pool, PEAK_AMX, &mc.amx_peak_cpu);
        printf("amx_bf16_peak_gflops: %.1f (%d threads; %.1f per thread-CPU-second)\n",
               mc.amx_peak / 1e9, threads, mc.amx_peak_cpu / 1e9);
    }
#if defined(__x86_64__)
    if (mc.kr->path >= SX_CPU_AVX512 && __builtin_cpu_supports("avx512bf16")) {
        mc.dp_peak = measure_fma_peak(mc.pool, PEAK_DPBF16, &mc.dp_peak_cpu);
        printf("avx512_bf16_dot_peak_gflops: %.1f (vdpbf16ps, %d threads; %.1f per thread-CPU-second)\n",
               mc.dp_peak / 1e9, threads, mc.dp_peak_cpu / 1e9);
    }
#endif

    sx_model *loaded = NULL;
    rmodel rm;
    const sx_model *m;
    memset(&rm, 0, sizeof rm);
    if (dir) {
        double a = now();
        if (sx_model_load(dir, &loaded, &err)) {
            fprintf(stderr, "bench_decode: %s\n", err.msg);
            sx_pool_free(mc.pool);
            return 1;
        }
        printf("model_load_s: %.2f\n", now() - a);
        m = loaded;
    } else {
        sx_qwen3_config c = { .vocab_rows = 151936, .hidden = 1024, .intermediate = 3072,
                              .n_layers = 28, .n_heads = 16, .n_kv_heads = 8, .head_dim = 128,
                              .max_pos = 40960, .tied = 1, .rms_eps = 1e-6f,
                              .rope_theta = 1000000.0 };
        if (layers > 0 && layers < c.n_layers)
            c.n_layers = layers;
        double a = now();
        if (random_model(&c, &rm)) {
            fprintf(stderr, "bench_decode: out of memory for the random model\n");
            random_model_free(&rm);
            sx_pool_free(mc.pool);
            return 1;
        }
        printf("random_model_build_s: %.2f\n", now() - a);
        m = &rm.m;
    }
    sx_model cut;
    int layers_note = 0;
    if (dir && layers > 0 && layers < m->cfg.n_layers) {
        cut = *m;
        cut.cfg.n_layers = layers;
        m = &cut;
        layers_note = 1;
    } else if (!dir && layers > 0 && layers < 28) {
        layers_note = 1;
    }
    int rc = 0;
    for (int r = 0; r < rounds; r++) {
        if (rounds > 1)
            printf("== round %d of %d ==\n", r + 1, rounds);
        if (has_mode(modes, "bf16"))
            rc |= run_mode(m, SX_W_BF16, SX_ACT_F32, threads, prompt, n_decode, &mc, layers_note);
        if (has_mode(modes, "int8"))
            rc |= run_mode(m, SX_W_INT8, SX_ACT_F32, threads, prompt, n_decode, &mc, layers_note);
        if (has_mode(modes, "q4"))
            rc |= run_mode(m, SX_W_Q4, SX_ACT_F32, threads, prompt, n_decode, &mc, layers_note);
        if (has_mode(modes, "bf16act"))
            rc |= run_mode(m, SX_W_BF16, SX_ACT_BF16, threads, prompt, n_decode, &mc, layers_note);
    }
    free(qual_bf16);
    sx_pool_free(mc.pool);
    sx_model_free(loaded);
    random_model_free(&rm);
    return rc;
}
