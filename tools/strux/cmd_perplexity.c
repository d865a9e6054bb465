/* strux perplexity: sliding-window perplexity and bits per byte of a text
 * file under a Qwen3 model (engine/perplexity.h has the definitions). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sx_file.h"
#include "engine/cpu/engine.h"
#include "engine/model/model.h"
#include "engine/perplexity.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/tool_common.h"

#define MAX_TEXT ((size_t)1 << 30)

typedef struct progress_state {
    double t0;
    int    tty, last;
} progress_state;

static void on_progress(void *ctx, int64_t done, int64_t total)
{
    progress_state *p = ctx;
    int pct = (int)(100 * done / total);
    /* a terminal gets every percent, a log every tenth */
    if (pct == p->last || (!p->tty && pct / 10 == p->last / 10 && pct != 100))
        return;
    p->last = pct;
    double s = (tool_now_us() - p->t0) / 1e6;
    fprintf(stderr, "%sperplexity: %lld / %lld tokens scored (%3d%%, %.1f tokens/s)%s",
            p->tty ? "\r" : "", (long long)done, (long long)total, pct, s > 0 ? done / s : 0.0,
            p->tty && pct < 100 ? "" : "\n");
}

int cmd_perplexity(int argc, char **argv)
{
    const char *model_dir = NULL, *file = NULL, *tok_path = NULL;
    long window = 1024, stride = 512, max_tokens = 0, threads = 0;
    int int8 = 0, q4 = 0, bf16act = 0, kvbf16 = 0, kl = 0;
    const char *device = "cpu";
    static const char *const kl_to[] = {"bf16", NULL};
    int kl_which = 0;
    cli_opt opts[] = {
        {.name = "--model", .kind = CLI_STR, .dst = &model_dir, .arg = "DIR",
         .help = "Hugging Face Qwen3 directory (config.json, *.safetensors,\n"
                 "tokenizer.json)"},
        {.name = "--window", .kind = CLI_LONG, .dst = &window, .lo = 2, .hi = INT_MAX, .arg = "N",
         .help = "tokens per window (default 1024, at least 2)"},
        {.name = "--stride", .kind = CLI_LONG, .dst = &stride, .lo = 1, .hi = INT_MAX, .arg = "N",
         .help = "tokens between window starts, 1 .. window (default 512)"},
        {.name = "--max-tokens", .kind = CLI_LONG, .dst = &max_tokens, .lo = 2, .hi = INT_MAX,
         .arg = "N", .help = "score only the first N tokens of the file"},
        {.name = "--device", .kind = CLI_STR, .dst = &device, .arg = "D",
         .help = "cpu (default), cuda or cuda:N (a build with CUDA)"},
        {.name = "--threads", .kind = CLI_LONG, .dst = &threads, .lo = 0, .hi = INT_MAX, .arg = "N",
         .help = "CPU threads (default: all)"},
        {.name = "--int8", .kind = CLI_FLAG, .dst = &int8,
         .help = "quantise weights to int8 at start-up"},
        {.name = "--q4", .kind = CLI_FLAG, .dst = &q4,
         .help = "quantise weights to 4 bits (a scale per 32 values) at start-up\n"
                 "(an AWQ checkpoint stays 4-bit: these apply to lm_head only;\n"
                 "FP8 is dequantised to bf16, then quantised as asked)"},
        {.name = "--kl-to", .kind = CLI_ENUM, .dst = &kl_which, .choices = kl_to, .arg = "bf16",
         .help = "also run the bf16-weight model over the same windows and\n"
                 "print the mean KL divergence KL(bf16 || this) per scored\n"
                 "token, in nats, and how often both pick the same top token"},
        {.name = "--bf16-act", .kind = CLI_FLAG, .dst = &bf16act,
         .help = "round activations to bf16 in the windows' matrix products\n"
                 "(faster on AVX512-BF16 CPUs; measures what that costs)"},
        {.name = "--kv-bf16", .kind = CLI_FLAG, .dst = &kvbf16,
         .help = "keep the KV cache in bf16 (measures what that costs)"},
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &tok_path, .arg = "PATH",
         .help = "tokenizer.json (default: the model's, else ../shared's)"},
    };
    cli_spec spec = {
        .cmd = "perplexity", .usage = "--model DIR [--window 1024] [--stride 512] [options] FILE",
        .about = "Scores FILE (UTF-8 text, '-' for stdin; tokenized as plain text, so added-token\n"
                 "text such as <|im_end|> is ordinary characters) with a Qwen3 model (on the CPU "
                 "unless --device),\n"
                 "as in the Hugging Face perplexity guide: windows of --window tokens start every\n"
                 "--stride tokens; the first window scores all its tokens but the first, each later\n"
                 "window only the tokens past the previous window's end, so each token is scored\n"
                 "once with at least window - stride tokens of context.\n",
        .after = "Prints perplexity = exp(mean negative log-likelihood per scored token), bits per\n"
                 "byte = total negative log-likelihood in bits / UTF-8 bytes of the scored tokens,\n"
                 "the tokens scored, window, stride and time.  Progress goes to stderr.\n"
                 "Exit status: 0 ok, 1 the file or model could not be used, 2 usage.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 1,
    };
    int prc = cli_parse(&spec, argc, argv, &file, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    kl = cli_seen(&spec, "--kl-to") > 0;
    if (!model_dir || !file)
        return cli_usage_error(&spec, "--model DIR and a FILE are required");
    {
        sx_error derr;
        int drc = sx_backend_device_check(device, &derr);
        if (drc) {
            fprintf(stderr, "strux perplexity: %s\n", derr.msg);
            return drc == SX_EUNSUPPORTED ? 1 : 2;
        }
    }
    if (int8 && q4) {
        fprintf(stderr, "strux perplexity: give at most one of --int8, --q4\n");
        return 2;
    }
    if (stride > window) {
        fprintf(stderr,
                "strux perplexity: --stride (%ld) must not exceed --window (%ld): the tokens "
                "between windows would never be scored\n",
                stride, window);
        return 2;
    }

    int rc = 1;
    sx_error err;
    sx_err_clear(&err);
    char *text = NULL;
    size_t len = 0;
    sx_tokenizer *tok = NULL;
    sx_model *model = NULL;
    sx_backend *eng = NULL, *ref = NULL;
    sx_ids ids = {0};

    int frc = strcmp(file, "-") ? sx_file_read(file, &text, &len, &err)
                                : sx_stream_read(stdin, MAX_TEXT, &text, &len, &err);
    if (frc) {
        fprintf(stderr, "strux perplexity: %s\n", err.msg);
        goto done;
    }
    double t0 = tool_now_us();
    if (sx_model_load(model_dir, &model, &err)) {
        fprintf(stderr, "strux perplexity: %s\n", err.msg);
        goto done;
    }
    if (tool_load("perplexity", tok_path, model_dir, &tok, NULL))
        goto done;
    if (sx_tok_encode(tok, text, len, 0, &ids, &err)) {
        fprintf(stderr, "strux perplexity: %s: %s\n", file, err.msg);
        goto done;
    }
    if (max_tokens && ids.n > (size_t)max_tokens)
        ids.n = (size_t)max_tokens;
    if (ids.n < 2) {
        fprintf(stderr, "strux perplexity: %s has %zu token%s; perplexity needs at least 2\n",
                file, ids.n, ids.n == 1 ? "" : "s");
        goto done;
    }
    sx_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = (int)threads;
    eo.weight_mode = q4 ? SX_W_Q4 : int8 ? SX_W_INT8 : SX_W_BF16;
    eo.act_mode = bf16act ? SX_ACT_BF16 : SX_ACT_F32;
    eo.kv_mode = kvbf16 ? SX_KV_BF16 : SX_KV_F32;
    eo.max_seqs = 1;
    eo.block_tokens = 16;
    /* one window at a time, never its last token */
    eo.kv_tokens = (window + eo.block_tokens - 1) / eo.block_tokens * eo.block_tokens;
    if (sx_backend_open(device, model, &eo, &eng, &err)) {
        fprintf(stderr, "strux perplexity: %s\n", err.msg);
        goto done;
    }
    if (kl) {
        /* the reference: the same model and options with bf16 weights */
        sx_engine_opts ro = eo;
        ro.weight_mode = SX_W_BF16;
        if (sx_backend_open(device, model, &ro, &ref, &err)) {
            fprintf(stderr, "strux perplexity: reference engine: %s\n", err.msg);
            goto done;
        }
    }
    if (tool_is_random_model(model_dir))
        fprintf(stderr, "strux perplexity: NOTE: %s holds RANDOM weights (`strux model random`); "
                        "expect a perplexity near the vocabulary size.\n",
                model_dir);
    double t1 = tool_now_us();
    fprintf(stderr, "strux perplexity: loaded %s in %.2f s; %zu tokens\n", model_dir,
            (t1 - t0) / 1e6, ids.n);

    progress_state ps = {.t0 = t1, .tty = isatty(2), .last = -1};
    sx_ppl_opts po = {.window = (int)window, .stride = (int)stride, .progress = on_progress,
                      .ctx = &ps, .ref = ref};
    sx_ppl_result r;
    if (sx_ppl_run(eng, ids.v, ids.n, tok, &po, &r, &err)) {
        fprintf(stderr, "strux perplexity: %s\n", err.msg);
        goto done;
    }
    double secs = (tool_now_us() - t1) / 1e6;
    printf("perplexity:     %.4f\n", r.ppl);
    printf("bits_per_byte:  %.5f\n", r.bits_per_byte);
    printf("tokens_scored:  %lld\n", (long long)r.n_scored);
    printf("bytes_scored:   %lld\n", (long long)r.n_bytes);
    printf("window:         %ld\n", window);
    printf("stride:         %ld\n", stride);
    printf("windows:        %lld\n", (long long)r.n_windows);
    if (kl) {
        double n = (double)r.n_scored;
        printf("bf16_perplexity: %.4f\n", exp(r.ref_nll_sum / n));
        printf("bf16_bits_per_byte: %.5f\n",
               r.n_bytes ? r.ref_nll_sum / log(2.0) / (double)r.n_bytes : 0.0);
        printf("kl_to_bf16:     %.6g\n", r.kl_sum / n);
        printf("kl_to_bf16_max: %.6g\n", r.kl_max);
        printf("top1_same:      %.4f\n", (double)r.top1_same / n);
    }
    printf("weights:        %s\n", q4 ? "q4" : int8 ? "int8" : "bf16");
    const sx_engine *cpu = sx_engine_of_backend(eng);
    if (cpu)
        printf("activations:    %s in matrix products (path %s)\n", sx_engine_act_rounding(cpu),
               sx_engine_cpu_path(cpu));
    else
        printf("activations:    bf16 in matrix products (device %s)\n",
               sx_backend_describe(eng));
    printf("kv_cache:       %s\n", kvbf16 ? "bf16" : "f32");
    printf("time_s:         %.2f\n", secs);
    rc = 0;
done:
    sx_backend_close(eng);
    sx_backend_close(ref);
    sx_model_free(model);
    sx_tok_free(tok);
    sx_ids_free(&ids);
    free(text);
    return rc;
}
