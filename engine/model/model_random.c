/* Random-weight Qwen3 models in Hugging Face format, for tests and
 * benchmarks without real weights.
 *
 * Every weight is a function of (seed, tensor index, element index) alone
 * -- splitmix64 in counter mode, 16 bits per weight -- so the file is the
 * same whatever the thread count, and chunks can be filled in parallel
 * while the previous chunk is being written. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/model/model.h"
#include "engine/model/model_internal.h"

#define CHUNK      ((uint64_t)4 << 20) /* elements per chunk: 8 MiB of bf16 */
#define MAX_THREADS 16
#define GOLDEN      0x9E3779B97F4A7C15ull

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Weight value for each of the 65536 random levels of one tensor:
 * uniform on (center - a, center + a). */
static void make_lut(const sx_qwen3_config *c, const sx_qwen3_tensor *t, uint16_t *lut)
{
    float center = 0, a;
    if (t->kind == SX_QK_NORM) {
        /* near 1, but not 1, so a kernel that ignores the weight shows */
        center = 1.0f;
        a = 0.1f;
    } else if (t->kind == SX_QK_EMBED) {
        a = 0.04f * sqrtf(3.0f); /* std 0.04: tied logits get std ~1 at 0.6B */
    } else {
        /* std 1/sqrt(fan_in) keeps each projection's output at unit scale */
        a = sqrtf(3.0f / (float)(t->kind == SX_QK_LM_HEAD ? c->hidden : t->cols));
    }
    for (uint32_t u = 0; u < 65536; u++)
        lut[u] = sx_f32_to_bf16(center + a * (((float)u + 0.5f) / 32768.0f - 1.0f));
}

typedef struct fill_job {
    const uint16_t *lut;
    uint64_t        key, e0, n;
    uint16_t       *out;
} fill_job;

static void fill(const fill_job *j)
{
    uint64_t e = j->e0, end = j->e0 + j->n;
    uint16_t *o = j->out;
    while (e < end) {
        uint64_t r = mix64(j->key + ((e >> 2) + 1) * GOLDEN);
        for (unsigned lane = (unsigned)(e & 3); lane < 4 && e < end; lane++, e++)
            *o++ = j->lut[(r >> (16 * lane)) & 0xffff];
    }
}

static void *fill_main(void *arg)
{
    fill(arg);
    return NULL;
}

typedef struct gen_state {
    int        n_threads;
    pthread_t  th[MAX_THREADS];
    fill_job   job[MAX_THREADS];
    int        started;
} gen_state;

/* Splits [e0, e0+n) between the threads on multiples of 4 elements. */
static void fill_start(gen_state *g, const uint16_t *lut, uint64_t key, uint64_t e0, uint64_t n,
                       uint16_t *out)
{
    uint64_t per = ((n / (uint64_t)g->n_threads) + 3) & ~(uint64_t)3, at = 0;
    g->started = 0;
    for (int i = 0; i < g->n_threads && at < n; i++) {
        uint64_t k = i == g->n_threads - 1 || per > n - at ? n - at : per;
        g->job[i] = (fill_job){lut, key, e0 + at, k, out + at};
        if (pthread_create(&g->th[i], NULL, fill_main, &g->job[i]))
            fill(&g->job[i]); /* no thread: do it here */
        else
            g->started |= 1 << i;
        at += k;
    }
}

static void fill_join(gen_state *g)
{
    for (int i = 0; i < g->n_threads; i++)
        if (g->started & (1 << i))
            pthread_join(g->th[i], NULL);
    g->started = 0;
}

static int write_weights(const sx_qwen3_config *c, uint64_t seed, const char *path,
                         sx_progress_fn progress, void *ctx, sx_error *err)
{
    int n = sx_qwen3_tensor_count(c, 0), rc = SX_OK;
    sx_qwen3_tensor *spec = calloc((size_t)n, sizeof *spec);
    sx_st_desc *desc = calloc((size_t)n, sizeof *desc);
    uint16_t *lut = malloc(65536 * sizeof *lut), *buf[2] = {NULL, NULL};
    sx_st_writer *w = NULL;
    gen_state g = {0};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    g.n_threads = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (int)cpus;
    buf[0] = malloc(CHUNK * 2);
    buf[1] = malloc(CHUNK * 2);
    if (!spec || !desc || !lut || !buf[0] || !buf[1]) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        sx_qwen3_tensor_at(c, i, &spec[i]);
        desc[i] = (sx_st_desc){spec[i].name, SX_ST_BF16, spec[i].ndim, {spec[i].rows, spec[i].cols}};
    }
    if ((rc = sx_st_writer_open(path, desc, (size_t)n, &w, err)))
        goto fail;
    int64_t total = (int64_t)sx_st_writer_total(w);
    uint64_t prev_n = 0;
    int cur = 0;
    for (int i = 0; i < n; i++) {
        uint64_t count = (uint64_t)spec[i].rows * (uint64_t)(spec[i].ndim == 2 ? spec[i].cols : 1);
        uint64_t key = mix64(seed ^ mix64((uint64_t)i + 1));
        make_lut(c, &spec[i], lut);
        for (uint64_t e0 = 0; e0 < count; e0 += CHUNK) {
            uint64_t k = count - e0 < CHUNK ? count - e0 : CHUNK;
            fill_start(&g, lut, key, e0, k, buf[cur]);
            /* write the previous chunk while this one is being filled */
            if (prev_n)
                rc = sx_st_writer_write(w, buf[!cur], prev_n * 2, err);
            fill_join(&g);
            if (rc)
                goto fail;
            if (progress && prev_n)
                progress(ctx, (int64_t)sx_st_writer_done(w), total);
            prev_n = k;
            cur = !cur;
        }
    }
    if (prev_n && (rc = sx_st_writer_write(w, buf[!cur], prev_n * 2, err)))
        goto fail;
    if (progress)
        progress(ctx, (int64_t)sx_st_writer_done(w), total);
    rc = sx_st_writer_close(w, err);
    w = NULL;
fail:
    sx_st_writer_close(w, NULL);
    free(buf[0]);
    free(buf[1]);
    free(lut);
    free(desc);
    free(spec);
    return rc;
}

/* Shortest decimal that reads back as the same float (or double). */
static void fmt_num(char *out, size_t cap, double v, int is_float)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, v);
        if (is_float ? strtof(out, NULL) == (float)v : strtod(out, NULL) == v)
            return;
    }
}

static int write_text(const char *path, const char *text, sx_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return sx_err_set(err, SX_EIO, "cannot create %s: %s", path, strerror(errno));
    int bad = fputs(text, f) < 0;
    bad |= fclose(f) != 0;
    return bad ? sx_err_set(err, SX_EIO, "writing %s failed", path) : SX_OK;
}

/* A config.json that transformers' AutoConfig reads as Qwen3; the fields
 * beyond the shape are those the released Qwen3 configs carry. */
static int write_config(const sx_qwen3_config *c, uint64_t seed, const char *path, sx_error *err)
{
    char eps[32], theta[32], text[2048];
    fmt_num(eps, sizeof eps, c->rms_eps, 1);
    fmt_num(theta, sizeof theta, c->rope_theta, 0);
    snprintf(text, sizeof text,
             "{\n"
             "  \"architectures\": [\"Qwen3ForCausalLM\"],\n"
             "  \"attention_bias\": false,\n"
             "  \"attention_dropout\": 0.0,\n"
             "  \"bos_token_id\": 151643,\n"
             "  \"dtype\": \"bfloat16\",\n"
             "  \"eos_token_id\": 151645,\n"
             "  \"head_dim\": %d,\n"
             "  \"hidden_act\": \"silu\",\n"
             "  \"hidden_size\": %d,\n"
             "  \"initializer_range\": 0.02,\n"
             "  \"intermediate_size\": %d,\n"
             "  \"max_position_embeddings\": %d,\n"
             "  \"max_window_layers\": %d,\n"
             "  \"model_type\": \"qwen3\",\n"
             "  \"num_attention_heads\": %d,\n"
             "  \"num_hidden_layers\": %d,\n"
             "  \"num_key_value_heads\": %d,\n"
             "  \"rms_norm_eps\": %s,\n"
             "  \"rope_scaling\": null,\n"
             "  \"rope_theta\": %s,\n"
             "  \"sliding_window\": null,\n"
             "  \"strux_random_seed\": %llu,\n"
             "  \"tie_word_embeddings\": %s,\n"
             "  \"torch_dtype\": \"bfloat16\",\n"
             "  \"use_cache\": true,\n"
             "  \"use_sliding_window\": false,\n"
             "  \"vocab_size\": %d\n"
             "}\n",
             c->head_dim, c->hidden, c->intermediate, c->max_pos, c->n_layers, c->n_heads,
             c->n_layers, c->n_kv_heads, eps, theta, (unsigned long long)seed,
             c->tied ? "true" : "false", c->vocab_rows);
    return write_text(path, text, err);
}

static int copy_file(const char *from, const char *to, sx_error *err)
{
    char buf[1 << 16];
    int rc = SX_OK;
    struct stat a, b;
    /* copying a file onto itself would truncate it first */
    if (!stat(from, &a) && !stat(to, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return SX_OK;
    FILE *in = fopen(from, "rb"), *out = NULL;
    if (!in)
        return sx_err_set(err, SX_EIO, "cannot open %s: %s", from, strerror(errno));
    if (!(out = fopen(to, "wb"))) {
        rc = sx_err_set(err, SX_EIO, "cannot create %s: %s", to, strerror(errno));
        goto fail;
    }
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, k, out) != k) {
            rc = sx_err_set(err, SX_EIO, "writing %s failed", to);
            goto fail;
        }
    if (ferror(in))
        rc = sx_err_set(err, SX_EIO, "reading %s failed", from);
fail:
    if (out && fclose(out) && !rc)
        rc = sx_err_set(err, SX_EIO, "writing %s failed", to);
    fclose(in);
    return rc;
}

/* tokenizer.json, and tokenizer_config.json from beside it when present,
 * so that transformers' AutoTokenizer also loads from the directory. */
static int copy_tokenizer(const char *tok, const char *dir, sx_error *err)
{
    char to[4096], from[4096];
    int rc;
    snprintf(to, sizeof to, "%s/tokenizer.json", dir);
    if ((rc = copy_file(tok, to, err)))
        return rc;
    const char *slash = strrchr(tok, '/');
    int dl = slash ? (int)(slash - tok) : 1;
    snprintf(from, sizeof from, "%.*s/tokenizer_config.json", dl, slash ? tok : ".");
    snprintf(to, sizeof to, "%s/tokenizer_config.json", dir);
    struct stat st;
    if (stat(from, &st) == 0 && S_ISREG(st.st_mode))
        return copy_file(from, to, err);
    return SX_OK;
}

static int make_dirs(const char *dir, sx_error *err)
{
    char p[4096];
    size_t n = strlen(dir);
    if (!n || n >= sizeof p)
        return sx_err_set(err, SX_EINVAL, "bad output directory '%.200s'", dir);
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++)
        if (p[i] == '/' || p[i] == 0) {
            char saved = p[i];
            p[i] = 0;
            if (mkdir(p, 0755) && errno != EEXIST)
                return sx_err_set(err, SX_EIO, "cannot create %s: %s", p, strerror(errno));
            p[i] = saved;
        }
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return sx_err_set(err, SX_EIO, "%s is not a directory", dir);
    return SX_OK;
}

int sx_model_write_random_ex(const sx_qwen3_config *cfg, uint64_t seed, const char *dir,
                             const char *tokenizer_json, sx_progress_fn progress, void *ctx,
                             sx_error *err)
{
    char path[4096];
    int rc;
    if (!cfg || !dir)
        return sx_err_set(err, SX_EINVAL, "no config or directory");
    if ((rc = sx_qwen3_config_check(cfg, err))) {
        /* here the shape is the caller's argument, not a file */
        sx_err_prefix(err, "model shape");
        if (err)
            err->code = SX_EINVAL;
        return SX_EINVAL;
    }
    if (strlen(dir) > sizeof path - 64)
        return sx_err_set(err, SX_EINVAL, "output directory path too long");
    if ((rc = make_dirs(dir, err)))
        return rc;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((rc = write_config(cfg, seed, path, err)))
        return rc;
    if (tokenizer_json && (rc = copy_tokenizer(tokenizer_json, dir, err)))
        return rc;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    return write_weights(cfg, seed, path, progress, ctx, err);
}

int sx_model_write_random(const sx_qwen3_config *cfg, uint64_t seed, const char *dir,
                          const char *tokenizer_json, sx_error *err)
{
    return sx_model_write_random_ex(cfg, seed, dir, tokenizer_json, NULL, NULL, err);
}
