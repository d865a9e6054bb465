/* strux model: write random-weight Qwen3 models, and size up a model
 * (parameters, KV cache, how many sequences fit in memory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/sx_file.h"
#include "engine/backend.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: strux model random --out DIR [--shape NAME] [--seed N] [--tokenizer PATH]\n"
            "                          [--no-tokenizer] [SHAPE OPTIONS]\n"
            "       strux model info DIR [--memory-gib G] [--device D [--kv-gb G] [--context N]]\n"
            "       strux model info --shape NAME [SHAPE OPTIONS] [--memory-gib G]\n\n"
            "random  writes a Hugging Face-format Qwen3 model with random bf16 weights into\n"
            "        DIR: config.json, model.safetensors and the Qwen3 tokenizer (tokenizer.json,\n"
            "        tokenizer_config.json).  The weights depend only on the shape and --seed\n"
            "        (default 0).  Shapes: tiny (2 layers, hidden 128, all Qwen3 features, full\n"
            "        151,936-row vocabulary; the default), 0.6b, 1.7b, 4b, 8b.  transformers'\n"
            "        AutoModelForCausalLM.from_pretrained(DIR) loads the result.\n"
            "info    loads and checks the model in DIR (or takes a named shape) and prints its\n"
            "        parameters, weight bytes, KV-cache bytes per token, and how many sequences\n"
            "        of 1k/4k/8k/32k tokens fit in the memory left after the weights.  The memory\n"
            "        is --memory-gib G (total, e.g. a GPU's), else this machine's available RAM.\n"
            "        --device cpu|cuda[:N] (with DIR) opens the model on that backend and prints\n"
            "        what it holds: its weight bytes, the KV pages of --kv-gb G (default: the\n"
            "        device's free memory; available RAM less the weights on the CPU) and how\n"
            "        many sequences of --context N tokens (default 4096) fit at once.\n\n"
            "shape options (change the chosen shape; the vocabulary stays 151,936 rows):\n"
            "  --hidden N  --intermediate N  --layers N  --heads N  --kv-heads N  --head-dim N\n"
            "  --no-tie (separate lm_head.weight)  --tie\n"
            "  --tokenizer PATH  tokenizer.json to copy (default: $STRUX_SHARED or ../shared\n"
            "                    /qwen3-tokenizer/tokenizer.json); --no-tokenizer copies none\n\n"
            "strux model random --help and strux model info --help list every option.\n"
            "Exit status: 0 ok, 1 the model could not be written or loaded, 2 usage.\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The shape options, shared by both subcommands: 0 (tied: -1) where not
 * given; applied over the chosen shape once the table is parsed. */
typedef struct shape_over {
    int hidden, intermediate, layers, heads, kv_heads, head_dim, tied;
} shape_over;

#define SHAPE_OPTS(o)                                                                            \
    {.kind = CLI_SECTION,                                                                        \
     .help = "shape options (change the chosen shape; the vocabulary stays 151,936 rows)"},      \
    {.name = "--hidden", .kind = CLI_INT, .dst = &(o)->hidden, .lo = 1, .hi = 1 << 20, .arg = "N", \
     .help = "hidden size"},                                                                     \
    {.name = "--intermediate", .kind = CLI_INT, .dst = &(o)->intermediate, .lo = 1,             \
     .hi = 1 << 20, .arg = "N", .help = "MLP intermediate size"},                                \
    {.name = "--layers", .kind = CLI_INT, .dst = &(o)->layers, .lo = 1, .hi = 1 << 20, .arg = "N", \
     .help = "decoder layers"},                                                                  \
    {.name = "--heads", .kind = CLI_INT, .dst = &(o)->heads, .lo = 1, .hi = 1 << 20, .arg = "N",   \
     .help = "query heads"},                                                                     \
    {.name = "--kv-heads", .kind = CLI_INT, .dst = &(o)->kv_heads, .lo = 1, .hi = 1 << 20,        \
     .arg = "N", .help = "key/value heads"},                                                     \
    {.name = "--head-dim", .kind = CLI_INT, .dst = &(o)->head_dim, .lo = 1, .hi = 1 << 20,        \
     .arg = "N", .help = "size of one head"},                                                    \
    {.name = "--no-tie", .kind = CLI_SET, .dst = &(o)->tied, .lo = 0,                            \
     .help = "a separate lm_head.weight"},                                                       \
    {.name = "--tie", .kind = CLI_SET, .dst = &(o)->tied, .lo = 1,                               \
     .help = "lm_head tied to the embedding"}

/* Applies the given shape options to c; 1 if any was given. */
static int shape_apply(const shape_over *o, sx_qwen3_config *c)
{
    int changed = 0;
#define SHAPE_SET(f, v)  \
    if (v) {             \
        c->f = (v);      \
        changed = 1;     \
    }
    SHAPE_SET(hidden, o->hidden)
    SHAPE_SET(intermediate, o->intermediate)
    SHAPE_SET(n_layers, o->layers)
    SHAPE_SET(n_heads, o->heads)
    SHAPE_SET(n_kv_heads, o->kv_heads)
    SHAPE_SET(head_dim, o->head_dim)
#undef SHAPE_SET
    if (o->tied >= 0) {
        c->tied = o->tied;
        changed = 1;
    }
    return changed;
}

/* --memory-gib G (dst: double): a positive size */
static int opt_gib(void *dst, const char *val, char *why, size_t why_cap)
{
    double g;
    if (cli_parse_double(val, 0, 0, &g, why, why_cap) || !(g > 0 && g < 1e6)) {
        snprintf(why, why_cap, "is not a positive number below 1e6");
        return -1;
    }
    *(double *)dst = g;
    return 0;
}

typedef struct progress_state {
    const char *path;
    double      t0;
    int         last, tty;
} progress_state;

static void on_progress(void *ctx, int64_t done, int64_t total)
{
    progress_state *p = ctx;
    if (total < (64 << 20))
        return; /* small models are done before anyone could read it */
    int pct = (int)(100 * done / total);
    /* a terminal gets every percent; a log gets every tenth */
    if (pct == p->last || (!p->tty && pct / 10 == p->last / 10 && pct != 100))
        return;
    p->last = pct;
    double t = now_s() - p->t0;
    fprintf(stderr, "%swriting %s: %3d%% (%.0f / %.0f MB, %.0f MB/s)%s", p->tty ? "\r" : "",
            p->path, pct, done / 1e6, total / 1e6, t > 0 ? done / 1e6 / t : 0.0,
            p->tty && pct < 100 ? "" : "\n");
}

static int cmd_random(int argc, char **argv)
{
    const char *shape = "tiny", *out = NULL, *tok = NULL;
    int no_tok = 0, changed = 0;
    long seed = 0;
    shape_over so = {.tied = -1};
    sx_qwen3_config c;
    sx_error err;
    cli_opt opts[] = {
        {.name = "--shape", .kind = CLI_STR, .dst = &shape, .arg = "NAME",
         .help = "tiny (2 layers, hidden 128, all Qwen3 features, full\n151,936-row vocabulary; the "
                 "default), 0.6b, 1.7b, 4b, 8b"},
        {.name = "--seed", .kind = CLI_LONG, .dst = &seed, .lo = 0, .hi = 0x7fffffffL, .arg = "N",
         .help = "the weights depend only on the shape and this (default 0)"},
        {.name = "--out", .kind = CLI_STR, .dst = &out, .arg = "DIR", .help = "where to write -- required"},
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &tok, .arg = "PATH",
         .help = "tokenizer.json to copy (default: $STRUX_SHARED or ../shared\n"
                 "/qwen3-tokenizer/tokenizer.json)"},
        {.name = "--no-tokenizer", .kind = CLI_FLAG, .dst = &no_tok, .help = "copy no tokenizer"},
        SHAPE_OPTS(&so),
    };
    cli_spec spec = {
        .cmd = "model random", .usage = "--out DIR [--shape NAME] [--seed N] [options]",
        .about = "Writes a Hugging Face-format Qwen3 model with random bf16 weights into DIR:\n"
                 "config.json, model.safetensors and the Qwen3 tokenizer (tokenizer.json,\n"
                 "tokenizer_config.json).  transformers' AutoModelForCausalLM.from_pretrained(DIR)\n"
                 "loads the result.\n",
        .after = "exit status: 0 ok, 1 the model could not be written, 2 usage\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    if (!out)
        return cli_usage_error(&spec, "--out DIR is required");
    if (sx_qwen3_shape(shape, &c, &err)) {
        fprintf(stderr, "strux model random: %s\n", err.msg);
        return 2;
    }
    changed = shape_apply(&so, &c);
    char tok_path[4096];
    if (!no_tok) {
        if (sx_tok_resolve_path(tok, NULL, NULL, tok_path, sizeof tok_path, &err)) {
            fprintf(stderr, "strux model random: %s\n", err.msg);
            return 1;
        }
        if (!sx_file_exists(tok_path)) {
            fprintf(stderr, "strux model random: no tokenizer at %s (--tokenizer PATH or "
                            "--no-tokenizer)\n", tok_path);
            return 1;
        }
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    progress_state ps = {path, now_s(), -1, isatty(2)};
    int rc = sx_model_write_random_ex(&c, (uint64_t)seed, out, no_tok ? NULL : tok_path,
                                      on_progress, &ps, &err);
    if (rc) {
        fprintf(stderr, "strux model random: %s\n", err.msg);
        return rc == SX_EINVAL ? 2 : 1;
    }
    double t = now_s() - ps.t0;
    int64_t bytes = 2 * sx_qwen3_n_params(&c);
    printf("wrote %s: shape %s%s, seed %ld, %lld parameters, %lld bytes of bf16 weights in "
           "%.2f s (%.0f MB/s)\n",
           out, shape, changed ? " (changed)" : "", seed, (long long)sx_qwen3_n_params(&c),
           (long long)bytes, t, t > 0 ? bytes / 1e6 / t : 0.0);
    return 0;
}

/* MemAvailable from /proc/meminfo, in bytes; 0 if unknown. */
static double available_ram(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}

static void print_info(const sx_qwen3_config *c, double budget, const char *budget_from)
{
    int64_t params = sx_qwen3_n_params(c), wbytes = 2 * params;
    int64_t kv16 = sx_qwen3_kv_bytes_per_token(c, 2), kv32 = sx_qwen3_kv_bytes_per_token(c, 4);
    printf("shape:        hidden %d, intermediate %d, layers %d, heads %d (kv %d), head_dim %d, "
           "vocab %d, %s\n",
           c->hidden, c->intermediate, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim,
           c->vocab_rows, c->tied ? "tied embeddings" : "separate lm_head");
    printf("parameters:   %lld (%.3f B)\n", (long long)params, params / 1e9);
    printf("weights:      %lld bytes as bf16 (%.2f GiB)\n", (long long)wbytes, wbytes / GIB);
    printf("kv per token: %lld bytes bf16, %lld bytes f32\n", (long long)kv16, (long long)kv32);
    double kv_budget = budget - (double)wbytes;
    if (kv_budget < 0)
        kv_budget = 0;
    printf("memory:       %.2f GiB (%s) - weights = %.2f GiB for the KV cache\n", budget / GIB,
           budget_from, kv_budget / GIB);
    printf("concurrent sequences at full context:\n");
    printf("  %-8s %12s %12s\n", "context", "bf16 cache", "f32 cache");
    static const int ctx[] = {1024, 4096, 8192, 32768};
    for (size_t i = 0; i < sizeof ctx / sizeof ctx[0]; i++)
        printf("  %-8d %12lld %12lld\n", ctx[i], (long long)(kv_budget / ((double)kv16 * ctx[i])),
               (long long)(kv_budget / ((double)kv32 * ctx[i])));
    printf("(f32 cache: the default; bf16 cache: --kv-bf16 on strux generate, strux perplexity and "
           "struxd)\n");
}

/* --device: what the backend holds once the model is open on it; the KV
 * pool is --kv-gb (kv_gb > 0) or, at 0, what the backend takes by itself
 * (CUDA: the device's free memory) or available RAM less the weights
 * (CPU).  0, or 1 when the backend does not open (printed). */
static int print_device(const sx_model *m, const char *device, double kv_gb, long context)
{
    sx_error err;
    sx_err_clear(&err);
    int cuda = 0, ordinal = 0;
    if (sx_backend_parse_device(device, &cuda, &ordinal, &err))
        return 1;
    /* the CUDA cache is bf16, the CPU's f32 (its default) */
    int64_t per_tok = sx_qwen3_kv_bytes_per_token(&m->cfg, cuda ? 2 : 4);
    double budget = kv_gb > 0 ? kv_gb * GIB
                  : cuda ? 0 : 0.9 * (available_ram() - 2.0 * (double)sx_qwen3_n_params(&m->cfg));
    sx_engine_opts o;
    memset(&o, 0, sizeof o);
    o.n_threads = 1;
    if (budget > 0)
        o.kv_tokens = (int64_t)(budget / (double)per_tok) < ((int64_t)1 << 30)
                          ? (int64_t)(budget / (double)per_tok) : (int64_t)1 << 30;
    if (o.kv_tokens > 0 && o.kv_tokens < 16)
        o.kv_tokens = 16;
    sx_backend *b = NULL;
    if (sx_backend_open(device, m, &o, &b, &err)) {
        fprintf(stderr, "strux model info: %s\n", err.msg);
        return 1;
    }
    sx_backend_mem mem;
    memset(&mem, 0, sizeof mem);
    sx_backend_mem_get(b, &mem);
    int bt = mem.block_tokens > 0 ? mem.block_tokens : 1;
    int64_t pages = mem.kv_tokens / bt, per_seq = (context + bt - 1) / bt;
    int64_t fit = per_seq > 0 ? pages / per_seq : 0;
    printf("device:       %s (%s)\n", sx_backend_name(b), sx_backend_describe(b));
    printf("  weights:    %lld bytes (%.2f GiB) as the backend holds them\n",
           (long long)mem.weight_bytes, mem.weight_bytes / GIB);
    printf("  kv cache:   %lld bytes (%.2f GiB, %s): %lld pages of %d tokens, %lld tokens, "
           "%lld bytes per token\n", (long long)mem.kv_bytes, mem.kv_bytes / GIB,
           kv_gb > 0 ? "--kv-gb" : cuda ? "the device's free memory" : "available RAM",
           (long long)pages, bt, (long long)mem.kv_tokens, (long long)per_tok);
    printf("  sequences:  %lld of %ld tokens fit at once (%lld pages each); this engine holds "
           "up to %d live\n", (long long)fit, context, (long long)per_seq, mem.max_seqs);
    sx_backend_close(b);
    return 0;
}

/* What the files hold: shards, and tensors and bytes by dtype. */
static void print_files(const char *dir)
{
    sx_st_set *set;
    sx_error err;
    if (sx_st_set_open(dir, &set, &err))
        return; /* the load just succeeded; nothing new to say */
    long long count[SX_ST_NDTYPES] = {0}, bytes[SX_ST_NDTYPES] = {0};
    for (size_t i = 0; i < sx_st_set_files(set); i++) {
        const sx_st_file *f = sx_st_set_file(set, i);
        for (size_t k = 0; k < sx_st_count(f); k++) {
            const sx_st_tensor *t = sx_st_at(f, k);
            count[t->dtype]++;
            bytes[t->dtype] += (long long)t->nbytes;
        }
    }
    printf("files:        %zu safetensors file%s;", sx_st_set_files(set),
           sx_st_set_files(set) == 1 ? "" : "s");
    for (int d = 0; d < SX_ST_NDTYPES; d++)
        if (count[d])
            printf(" %lld %s tensors (%lld bytes)", count[d], sx_st_dtype_name(d), bytes[d]);
    printf("\n");
    sx_st_set_close(set);
}

static int cmd_info(int argc, char **argv)
{
    const char *dir = NULL, *shape = NULL, *device = NULL;
    double gib = 0, kv_gb = 0;
    long context = 4096;
    int changed = 0, n_pos = 0;
    shape_over so = {.tied = -1};
    sx_qwen3_config c;
    sx_error err;
    memset(&c, 0, sizeof c);
    cli_opt opts[] = {
        {.name = "--shape", .kind = CLI_STR, .dst = &shape, .arg = "NAME",
         .help = "a named shape instead of DIR: tiny, 0.6b, 1.7b, 4b, 8b"},
        {.name = "--memory-gib", .kind = CLI_FN, .dst = &gib, .fn = opt_gib, .arg = "G",
         .help = "the memory to plan for, total (e.g. a GPU's; default:\nthis machine's available RAM)"},
        {.name = "--device", .kind = CLI_STR, .dst = &device, .arg = "D",
         .help = "cpu|cuda[:N] (with DIR): open the model on that backend\nand print what it holds: "
                 "its weight bytes, the KV pages\nof --kv-gb and how many sequences of --context fit"},
        {.name = "--kv-gb", .kind = CLI_FN, .dst = &kv_gb, .fn = opt_gib, .arg = "G",
         .help = "the KV pool of --device (default: the device's free\nmemory; available RAM less "
                 "the weights on the CPU)"},
        {.name = "--context", .kind = CLI_LONG, .dst = &context, .lo = 1, .hi = 1L << 24, .arg = "N",
         .help = "the sequence length --device counts (default 4096)"},
        SHAPE_OPTS(&so),
    };
    cli_spec spec = {
        .cmd = "model info", .usage = "(DIR [--device D [--kv-gb G] [--context N]] | --shape NAME [shape options])\n"
                                      "       [--memory-gib G]",
        .about = "Loads and checks the model in DIR (or takes a named shape) and prints its\n"
                 "parameters, weight bytes, KV-cache bytes per token, and how many sequences\n"
                 "of 1k/4k/8k/32k tokens fit in the memory left after the weights.\n",
        .after = "exit status: 0 ok, 1 the model could not be loaded, 2 usage\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 1,
    };
    const char *pos[1];
    int prc = cli_parse(&spec, argc, argv, pos, &n_pos);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    dir = n_pos ? pos[0] : NULL;
    if (!dir == !shape)
        return cli_usage_error(&spec, "give a model DIR or --shape NAME");
    if (shape) {
        if (sx_qwen3_shape(shape, &c, &err)) {
            fprintf(stderr, "strux model info: %s\n", err.msg);
            return 2;
        }
        changed = shape_apply(&so, &c);
    } else if (shape_apply(&so, &c)) {
        return cli_usage_error(&spec, "the shape options go with --shape NAME, not a DIR");
    }
    if (device || kv_gb > 0) {
        sx_error derr;
        sx_err_clear(&derr);
        int drc = device ? sx_backend_device_check(device, &derr) : SX_EINVAL;
        if (drc || !dir) {
            fprintf(stderr, "strux model info: %s\n",
                    drc == SX_EINVAL && !device ? "--kv-gb goes with --device"
                    : drc ? derr.msg : "--device needs a model DIR (the backend loads it)");
            return drc == SX_EUNSUPPORTED ? 1 : 2;
        }
    }
    double budget = gib > 0 ? gib * GIB : available_ram();
    const char *from = gib > 0 ? "--memory-gib" : "available RAM";
    if (shape) {
        if (sx_qwen3_config_check(&c, &err)) {
            fprintf(stderr, "strux model info: %s\n", err.msg);
            return 2;
        }
        printf("model:        shape %s%s\n", shape, changed ? " (changed)" : "");
        print_info(&c, budget, from);
        return 0;
    }
    sx_model *m = NULL;
    double t0 = now_s();
    if (sx_model_load(dir, &m, &err)) {
        fprintf(stderr, "strux model info: %s\n", err.msg);
        return 1;
    }
    double t = now_s() - t0;
    printf("model:        %s (loaded and checked in %.3f s)\n", dir, t);
    print_files(dir);
    if (m->quant.method == SX_QUANT_AWQ)
        printf("quantised:    AWQ, 4 bits, group %d (layer matrices stay 4-bit; the weights line "
               "below counts bf16)\n", m->quant.group);
    else if (m->quant.method == SX_QUANT_FP8)
        printf("quantised:    FP8 e4m3, blocks %d x %d (dequantised to bf16 at start-up)\n",
               m->quant.block[0], m->quant.block[1]);
    print_info(&m->cfg, budget, from);
    int rc = device ? print_device(m, device, kv_gb, context) : 0;
    sx_model_free(m);
    return rc;
}

int cmd_model(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
                      !strcmp(argv[1], "help"))) {
        usage(stdout);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "strux model: needs a subcommand, random or info (see strux model --help)\n");
        return 2;
    }
    if (!strcmp(argv[1], "random"))
        return cmd_random(argc - 1, argv + 1);
    if (!strcmp(argv[1], "info"))
        return cmd_info(argc - 1, argv + 1);
    fprintf(stderr, "strux model: unknown subcommand '%s': random or info (see strux model --help)\n",
            argv[1]);
    return 2;
}
