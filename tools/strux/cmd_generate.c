/* strux generate: one reply from a Qwen3 model, optionally constrained by a
 * JSON Schema (or labels, a regex, any JSON), with timings. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "common/sx_numjson.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/backend.h"
#include "engine/generate.h"
#include "engine/model/model.h"
#include "grammar/grammar.h"
#include "grammar/validator/validator.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/gen_beam_cli.h"
#include "tools/strux/tool_common.h"

/* --speculate MODE (dst: sx_gen_params) */
static int parse_speculate(void *dst, const char *val, char *why, size_t cap)
{
    if ((((sx_gen_params *)dst)->speculate = sx_gen_speculate_parse(val)) >= 0)
        return 0;
    snprintf(why, cap, "is not off, ngram or draft");
    return -1;
}

/* --early-stopping E (dst: gen_beam_cli_opts) */
static int parse_early(void *dst, const char *val, char *why, size_t cap)
{
    if ((((gen_beam_cli_opts *)dst)->early = gen_beam_cli_early(val)) >= 0)
        return 0;
    snprintf(why, cap, "is not true, false or never");
    return -1;
}

/* The draft model of --speculate draft: its own engine (same options, a
 * smaller KV cache) handed to gen. */
static int load_draft(const char *dir, const char *device, const sx_engine_opts *eo, sx_gen *gen,
                      sx_model **m, sx_backend **e)
{
    sx_error err;
    sx_engine_opts o = *eo;
    o.kv_tokens = 16384;
    if (sx_model_load(dir, m, &err) || sx_backend_open(device, *m, &o, e, &err) ||
        sx_gen_set_draft(gen, *e, &err)) {
        fprintf(stderr, "strux generate: --draft-model: %s\n", err.msg);
        return -1;
    }
    return 0;
}

typedef struct run_state {
    int     stream, top_logprobs;
    const sx_tokenizer *tok;
    sx_bytes logprobs;   /* one line per token, printed after the reply */
    sx_bytes text;
    sx_ids   ids;
    int      done, finish, n_prompt, n_completion, n_forced;
    double   ttft_ms, t_end;
    sx_error error;
} run_state;

static void appendf(sx_bytes *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void appendf(sx_bytes *b, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        sx_bytes_append(b, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* "logprob <i> <id> <piece> <logprob>  top: id piece lp, ..." with pieces
 * as written in tokenizer.json (byte-level aliases: always printable) */
static void log_token(run_state *st, const sx_gen_event *ev)
{
    const char *pc = sx_tok_piece(st->tok, ev->token);
    appendf(&st->logprobs, "logprob %zu %d %s ", st->ids.n - 1, ev->token, pc ? pc : "?");
    if (ev->forced || !ev->sample) {
        appendf(&st->logprobs, "forced\n");
        return;
    }
    appendf(&st->logprobs, "%.4f  top:", ev->sample->logprob);
    for (int i = 0; i < ev->sample->n_top; i++) {
        const char *tp = sx_tok_piece(st->tok, ev->sample->top_ids[i]);
        appendf(&st->logprobs, "%s %d %s %.4f", i ? "," : "", ev->sample->top_ids[i],
                tp ? tp : "?", ev->sample->top_logprobs[i]);
    }
    appendf(&st->logprobs, "\n");
}

static void on_event(const sx_gen_event *ev, void *ctx)
{
    run_state *st = ev->user;
    if (ev->piece_len) {
        sx_bytes_append(&st->text, ev->piece, ev->piece_len);
        if (st->stream) {
            fwrite(ev->piece, 1, ev->piece_len, stdout);
            fflush(stdout);
        }
    }
    if (!ev->done) {
        sx_ids_push(&st->ids, ev->token);
        if (st->top_logprobs)
            log_token(st, ev);
        return;
    }
    st->done = 1;
    st->finish = ev->finish;
    st->error = ev->error;
    st->n_prompt = ev->n_prompt;
    st->n_completion = ev->n_completion;
    st->n_forced = ev->n_forced;
    st->ttft_ms = ev->ttft_ms;
    st->t_end = tool_now_us() / 1e3;
}

/* replies per run with --n */
#define GEN_MAX_N 16

static const char *finish_name(int f)
{
    switch (f) {
    case SX_FINISH_STOP: return "stop";
    case SX_FINISH_LENGTH: return "length";
    case SX_FINISH_CANCELLED: return "cancelled";
    case SX_FINISH_ERROR: return "error";
    default: return "none";
    }
}

/* Builds the grammar for the chosen constraint; *g stays NULL without one. */
static int make_grammar(const sx_vocab *v, const char *schema_path, const char *choices,
                        const char *regex, int json_object, int compact, json_t **schema,
                        sx_grammar **g)
{
    sx_error err;
    sx_err_clear(&err);
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    if (compact)
        o.max_ws = 0;
    int rc = 0;
    if (schema_path) {
        if (!(*schema = tool_read_schema("generate", schema_path)))
            return 1;
        rc = sx_gr_compile_json(v, *schema, &o, g, &err);
    } else if (choices) {
        char *copy = strdup(choices);
        const char *labels[256];
        size_t n = 0;
        for (char *save = NULL, *p = strtok_r(copy, ",", &save); p && n < 256;
             p = strtok_r(NULL, ",", &save))
            labels[n++] = p;
        rc = sx_gr_compile_choices(v, labels, n, &o, g, &err);
        free(copy);
    } else if (regex) {
        rc = sx_gr_compile_regex(v, regex, strlen(regex), &o, g, &err);
    } else if (json_object) {
        rc = sx_gr_compile_json_object(v, &o, g, &err);
    }
    if (rc) {
        fprintf(stderr, "strux generate: cannot compile the constraint: %s%s%s\n", err.msg,
                err.pointer[0] ? " at " : "", err.pointer);
        return 1;
    }
    return 0;
}

/* Prints reply k (with a header when there are several) and its figures;
 * 1 when it failed or, under a schema, does not validate. */
static int report(run_state *st, int k, int n, uint64_t seed, int stream, int print_ids,
                  int top_logprobs, const json_t *schema, double t_start)
{
    if (n > 1)
        printf("--- reply %d (seed %llu)\n", k, (unsigned long long)seed);
    if (!stream)
        fwrite(st->text.v ? st->text.v : "", 1, st->text.n, stdout);
    printf("\n");
    if (print_ids) {
        for (size_t i = 0; i < st->ids.n; i++)
            printf(i ? " %d" : "%d", st->ids.v[i]);
        printf("\n");
    }
    if (top_logprobs && st->logprobs.n)
        fwrite(st->logprobs.v, 1, st->logprobs.n, stdout);
    fflush(stdout);
    double total = st->t_end - t_start;
    double decode_ms = total - st->ttft_ms;
    if (n > 1)
        fprintf(stderr, "reply %d: ", k);
    fprintf(stderr, "finish: %s; prompt %d tokens, completion %d tokens (%d forced by the grammar)\n",
            finish_name(st->finish), st->n_prompt, st->n_completion, st->n_forced);
    fprintf(stderr, "TTFT %.1f ms; prefill %.1f tokens/s; decode %.1f tokens/s; total %.1f ms\n",
            st->ttft_ms, st->ttft_ms > 0 ? st->n_prompt / (st->ttft_ms / 1e3) : 0.0,
            decode_ms > 0 && st->n_completion > 1 ? (st->n_completion - 1) / (decode_ms / 1e3)
                                                  : 0.0,
            total);
    if (st->finish == SX_FINISH_ERROR) {
        fprintf(stderr, "strux generate: %s\n", st->error.msg);
        return 1;
    }
    if (!schema)
        return 0;
    json_error_t je;
    sx_error err;
    sx_err_clear(&err);
    sx_numtab nums = {0}; /* numbers of any length */
    json_t *inst = sx_numjson_loadb(st->text.v ? st->text.v : "", st->text.n, 0, &nums, &je);
    sx_validator *val = NULL;
    int valid = 0;
    if (!inst)
        fprintf(stderr, "validator: the reply is not complete JSON (%s)\n", je.text);
    else if (sx_val_compile(schema, NULL, &val, &err) || sx_val_validate_text(val, st->text.v ? st->text.v : "", st->text.n, &valid, &err))
        fprintf(stderr, "validator: could not check: %s\n", err.msg);
    else
        fprintf(stderr, "validator: %s%s\n", valid ? "valid" : "INVALID: ", valid ? "" : err.msg);
    json_decref(inst);
    sx_numtab_free(&nums);
    sx_val_free(val);
    return !valid;
}

int cmd_generate(int argc, char **argv)
{
    const char *model_dir = NULL, *prompt = NULL, *prompt_file = NULL, *system = NULL;
    const char *schema_path = NULL, *choices = NULL, *regex = NULL;
    int json_object = 0, compact = 0, stream = 0, print_ids = 0, threads = 0, int8 = 0, bf16act = 0;
    int kvbf16 = 0, dense = 0, q4 = 0;
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    sx_sampling_default(&gp.sampling);
    gp.sampling.temperature = 0;
    gp.max_tokens = 256;
    int top_logprobs = 0, n_replies = 1, sampling_set = 0;
    const char *draft_dir = NULL, *device = "cpu";
    gen_beam_cli_opts bo = {.ret = 1, .length_penalty = 1.0f, .early = SX_BEAM_EARLY_FALSE};
    unsigned long long seed_arg = gp.sampling.seed;
    cli_opt opts[] = {
        {.kind = CLI_SECTION, .help = "input:"},
        {.name = "--model", .kind = CLI_STR, .dst = &model_dir, .arg = "DIR",
         .help = "Hugging Face Qwen3 directory (config.json, *.safetensors,\n"
                 "tokenizer.json); `strux model random` writes a stand-in"},
        {.name = "--prompt", .kind = CLI_STR, .dst = &prompt, .arg = "TEXT",
         .help = "the user turn (or --prompt-file FILE)"},
        {.name = "--prompt-file", .kind = CLI_STR, .dst = &prompt_file, .arg = "FILE",
         .help = "the user turn, read from FILE"},
        {.name = "--system", .kind = CLI_STR, .dst = &system, .arg = "TEXT", .help = "a system turn"},
        {.kind = CLI_SECTION, .help = "constraint (at most one):"},
        {.name = "--schema", .kind = CLI_STR, .dst = &schema_path, .arg = "FILE",
         .help = "JSON Schema the reply must validate against"},
        {.name = "--choices", .kind = CLI_STR, .dst = &choices, .arg = "a,b,c",
         .help = "the reply is exactly one of these labels"},
        {.name = "--regex", .kind = CLI_STR, .dst = &regex, .arg = "RE",
         .help = "the reply matches this regular expression"},
        {.name = "--json-object", .kind = CLI_FLAG, .dst = &json_object,
         .help = "the reply is any JSON object"},
        {.name = "--compact", .kind = CLI_FLAG, .dst = &compact,
         .help = "no whitespace between JSON tokens (default: up to 4)"},
        {.kind = CLI_SECTION, .help = "sampling:"},
        {.name = "--max-tokens", .kind = CLI_INT, .dst = &gp.max_tokens, .lo = 1, .hi = 1 << 24,
         .arg = "N", .help = "completion budget (default 256)"},
        {.name = "--temperature", .kind = CLI_FLOAT, .dst = &gp.sampling.temperature, .arg = "T",
         .help = "0 = greedy (default 0)"},
        {.name = "--top-p", .kind = CLI_FLOAT, .dst = &gp.sampling.top_p, .arg = "P",
         .help = "nucleus: the smallest set of probability >= P, in (0, 1]"},
        {.name = "--top-k", .kind = CLI_INT, .dst = &gp.sampling.top_k, .lo = 0, .hi = 1 << 30,
         .arg = "K", .help = "keep the K most likely tokens (0 = off)"},
        {.name = "--min-p", .kind = CLI_FLOAT, .dst = &gp.sampling.min_p, .arg = "M",
         .help = "drop tokens below M x the top probability, in [0, 1)"},
        {.name = "--repetition-penalty", .kind = CLI_FLOAT,
         .dst = &gp.sampling.repetition_penalty, .arg = "R",
         .help = "> 1 makes tokens already in the context less likely"},
        {.name = "--no-repeat-ngram", .kind = CLI_INT, .dst = &gp.sampling.no_repeat_ngram,
         .lo = 0, .hi = 64, .arg = "N", .help = "never repeat an N-gram of the reply (0 = off)"},
        {.name = "--seed", .kind = CLI_U64, .dst = &seed_arg, .arg = "N",
         .help = "sampling seed (default 0): same seed, same reply"},
        {.name = "--n", .kind = CLI_INT, .dst = &n_replies, .lo = 1, .hi = GEN_MAX_N, .arg = "N",
         .help = "N replies (1..16) from one prefill of the prompt: reply i\n"
                 "samples with seed + i, so it equals --seed (seed + i) alone"},
        {.kind = CLI_SECTION, .help = "speculative decoding (same reply, faster when drafts are right):"},
        {.name = "--speculate", .kind = CLI_FN, .dst = &gp, .fn = parse_speculate, .arg = "MODE",
         .help = "off (default), ngram (drafts copied from the prompt and\n"
                 "the reply so far) or draft (a draft model's greedy tokens)"},
        {.name = "--draft-k", .kind = CLI_INT, .dst = &gp.draft_k, .lo = 1, .hi = 16, .arg = "K",
         .help = "tokens drafted per step, verified in one pass (1..16, 4)"},
        {.name = "--draft-model", .kind = CLI_STR, .dst = &draft_dir, .arg = "DIR",
         .help = "the draft model: a smaller Qwen3 with the same tokenizer"},
        {.kind = CLI_SECTION,
         .help = "beam search (Hugging Face generate(num_beams=B, do_sample=False) semantics):"},
        {.name = "--beams", .kind = CLI_INT, .dst = &bo.beams, .lo = 1, .hi = SX_BEAM_MAX,
         .arg = "B", .help = "B beams (1..64) over one prefill; with a grammar each beam\n"
                             "has its own matcher and every sequence validates; not\n"
                             "with sampling options, --n, --stream or --top-logprobs"},
        {.name = "--length-penalty", .kind = CLI_FLOAT, .dst = &bo.length_penalty, .arg = "L",
         .help = "a finished sequence scores sum_logprob / length^L (default 1)"},
        {.name = "--return", .kind = CLI_INT, .dst = &bo.ret, .lo = 1, .hi = SX_BEAM_MAX,
         .arg = "N", .help = "print the N (1..B) best sequences (default 1)"},
        {.name = "--early-stopping", .kind = CLI_FN, .dst = &bo, .fn = parse_early, .arg = "E",
         .help = "true (stop once B are finished), false (default: stop\n"
                 "when no running beam can do better) or never"},
        {.kind = CLI_SECTION, .help = "output:"},
        {.name = "--stream", .kind = CLI_FLAG, .dst = &stream,
         .help = "print tokens as they are generated (default: at the end)"},
        {.name = "--print-ids", .kind = CLI_FLAG, .dst = &print_ids,
         .help = "also print the generated token ids on one line"},
        {.name = "--top-logprobs", .kind = CLI_INT, .dst = &top_logprobs, .lo = 0,
         .hi = SX_SAMPLER_MAX_TOPN, .arg = "N",
         .help = "after the reply, a line per token: its index, id, piece,\n"
                 "log-prob (or 'forced') and the N (<= 20) most likely"},
        {.kind = CLI_SECTION, .help = "engine:"},
        {.name = "--device", .kind = CLI_STR, .dst = &device, .arg = "D",
         .help = "cpu (default), cuda or cuda:N (a build with CUDA)"},
        {.name = "--threads", .kind = CLI_INT, .dst = &threads, .lo = 0, .hi = 1024, .arg = "N",
         .help = "CPU threads (default: all)"},
        {.name = "--int8", .kind = CLI_FLAG, .dst = &int8,
         .help = "quantise weights to int8 at start-up"},
        {.name = "--q4", .kind = CLI_FLAG, .dst = &q4,
         .help = "quantise weights to 4 bits (a scale per 32 values) at\n"
                 "start-up: the fastest decode, the largest quality cost\n"
                 "(docs/BENCHMARKS.md)\n"
                 "Quantised checkpoints load as their config.json says:\n"
                 "AWQ stays 4-bit (these flags then apply to lm_head only),\n"
                 "FP8 becomes bf16, or int8 / q4 with these flags"},
        {.name = "--bf16-act", .kind = CLI_FLAG, .dst = &bf16act,
         .help = "round activations to bf16 in prefill-sized matrix\n"
                 "products and in prefill attention: faster prefill on\n"
                 "AVX512-BF16 CPUs without AMX,\n"
                 "logits change slightly (docs/BENCHMARKS.md)"},
        {.name = "--kv-bf16", .kind = CLI_FLAG, .dst = &kvbf16,
         .help = "keep the KV cache in bf16: half its memory and less to\n"
                 "read per decoded token; logits change slightly"},
        {.name = "--dense-logits", .kind = CLI_FLAG, .dst = &dense,
         .help = "compute every logit even where the grammar allows only a\n"
                 "few tokens (by default the LM head skips the rest); same\n"
                 "reply, slower: for comparisons"},
    };
    cli_spec spec = {
        .cmd = "generate", .usage = "--model DIR --prompt TEXT [options]",
        .about = "Runs Qwen3 (thinking disabled) on the CPU and streams the assistant's reply.\n"
                 "With --schema the reply is constrained token by token to JSON that validates\n"
                 "against the schema, and is closed in time when --max-tokens is tight.\n",
        .after = "Timings (TTFT, prefill and decode tokens/s) go to stderr, and with a grammar how\n"
                 "much of the LM head its masks let the engine skip.  Exit status 0 when\n"
                 "a reply was produced (and validates, with --schema), 1 otherwise, 2 on usage.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    gp.sampling.seed = seed_arg;
    /* what beam search refuses (--temperature 0 is greedy: not sampling) */
    sampling_set = cli_seen(&spec, "--top-p") || cli_seen(&spec, "--top-k") ||
                   cli_seen(&spec, "--min-p") || cli_seen(&spec, "--repetition-penalty") ||
                   cli_seen(&spec, "--no-repeat-ngram") ||
                   (cli_seen(&spec, "--temperature") && gp.sampling.temperature > 0);
    if (!model_dir || (!prompt && !prompt_file) || (prompt && prompt_file)) {
        return cli_usage_error(&spec, "--model and one of --prompt/--prompt-file are required");
    }
    if (!!schema_path + !!choices + !!regex + json_object > 1) {
        fprintf(stderr, "strux generate: give at most one of --schema, --choices, --regex, --json-object\n");
        return 2;
    }
    if (int8 && q4) {
        fprintf(stderr, "strux generate: give at most one of --int8, --q4\n");
        return 2;
    }
    if (n_replies > 1 && stream) {
        fprintf(stderr, "strux generate: --stream prints one reply; drop it with --n\n");
        return 2;
    }
    if ((gp.speculate == SX_SPEC_DRAFT) != !!draft_dir) {
        fprintf(stderr, "strux generate: --draft-model goes with --speculate draft\n");
        return 2;
    }
    if (bo.beams && gp.speculate != SX_SPEC_OFF) {
        fprintf(stderr, "strux generate: --beams and --speculate do not combine: beam search "
                        "scores every beam each step; drop --speculate\n");
        return 2;
    }
    if (bo.beams && (sampling_set || n_replies > 1 || stream || top_logprobs)) {
        fprintf(stderr, "strux generate: --beams is a deterministic search: it does not sample "
                        "(drop --temperature/--top-p/--top-k/--min-p/--repetition-penalty/"
                        "--no-repeat-ngram) and takes no --n, --stream or --top-logprobs\n");
        return 2;
    }
    if (bo.ret > (bo.beams ? bo.beams : 1)) {
        fprintf(stderr, "strux generate: --return N needs --beams B with N <= B\n");
        return 2;
    }
    gp.sampling.top_n = top_logprobs;
    int rc;
    {
        /* before the model loads: a typo should not cost the load */
        sx_error cerr;
        sx_err_clear(&cerr);
        if (sx_sampling_check(&gp.sampling, &cerr)) {
            fprintf(stderr, "strux generate: %s\n", cerr.msg);
            return 2;
        }
        if ((rc = sx_backend_device_check(device, &cerr))) {
            fprintf(stderr, "strux generate: %s\n", cerr.msg);
            return rc == SX_EUNSUPPORTED ? 1 : 2;
        }
    }

    rc = 1;
    sx_error err;
    sx_err_clear(&err);
    sx_model *model = NULL;
    sx_backend *eng = NULL, *deng = NULL;
    sx_model *dmodel = NULL;
    sx_gen *gen = NULL;
    sx_tokenizer *tok = NULL;
    sx_vocab *v = NULL;
    sx_grammar *g = NULL;
    json_t *schema = NULL;
    char *prompt_buf = NULL;
    sx_ids pids = {0};
    run_state sts[GEN_MAX_N];
    memset(sts, 0, sizeof sts);
    for (int k = 0; k < n_replies; k++) {
        sts[k].stream = stream;
        sts[k].top_logprobs = top_logprobs;
    }

    if (prompt_file) {
        size_t plen;
        if (sx_file_read(prompt_file, &prompt_buf, &plen, &err)) {
            fprintf(stderr, "strux generate: --prompt-file: %s\n", err.msg);
            goto done;
        }
        if (strlen(prompt_buf) != plen) {
            fprintf(stderr, "strux generate: --prompt-file: %s holds a NUL byte\n", prompt_file);
            goto done;
        }
        prompt = prompt_buf;
    }
    double t0 = tool_now_us();
    if (sx_model_load(model_dir, &model, &err)) {
        fprintf(stderr, "strux generate: %s\n", err.msg);
        goto done;
    }
    if (tool_load("generate", NULL, model_dir, &tok, (schema_path || choices || regex || json_object) ? &v : NULL))
        goto done;
    if (v && make_grammar(v, schema_path, choices, regex, json_object, compact, &schema, &g))
        goto done;
    gp.grammar = g;
    sx_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = threads;
    eo.weight_mode = q4 ? SX_W_Q4 : int8 ? SX_W_INT8 : SX_W_BF16;
    eo.act_mode = bf16act ? SX_ACT_BF16 : SX_ACT_F32;
    eo.kv_mode = kvbf16 ? SX_KV_BF16 : SX_KV_F32;
    eo.dense_logits = dense;
    eo.max_seqs = bo.beams ? 2 * bo.beams : n_replies;   /* beams: old and new during a step */
    if (sx_backend_open(device, model, &eo, &eng, &err) ||
        sx_gen_new(eng, tok, NULL, on_event, NULL, &gen, &err)) {
        fprintf(stderr, "strux generate: %s\n", err.msg);
        goto done;
    }
    if (draft_dir && load_draft(draft_dir, device, &eo, gen, &dmodel, &deng))
        goto done;
    for (int k = 0; k < n_replies; k++)
        sts[k].tok = tok;
    if (tool_is_random_model(model_dir))
        fprintf(stderr, "strux generate: NOTE: %s holds RANDOM weights (a stand-in generated by "
                        "`strux model random`), so the text is noise; the grammar still holds.\n",
                model_dir);
    fprintf(stderr, "strux generate: loaded %s in %.2f s (weights %s, %s path %s)\n", model_dir,
            (tool_now_us() - t0) / 1e6,
            model->quant.method == SX_QUANT_AWQ
                ? (q4 ? "AWQ 4-bit, lm_head q4" : int8 ? "AWQ 4-bit, lm_head int8" : "AWQ 4-bit")
            : model->quant.method == SX_QUANT_FP8
                ? (q4 ? "FP8 as q4" : int8 ? "FP8 as int8" : "FP8 as bf16")
                : (q4 ? "q4" : int8 ? "int8" : "bf16"),
            sx_backend_name(eng), sx_backend_describe(eng));

    sx_chat_msg msgs[2];
    size_t nm = 0;
    if (system)
        msgs[nm++] = (sx_chat_msg){"system", system};
    msgs[nm++] = (sx_chat_msg){"user", prompt};
    if (sx_chat_encode(tok, msgs, nm, 1, &pids, &err)) {
        fprintf(stderr, "strux generate: prompt: %s\n", err.msg);
        goto done;
    }
    if (bo.beams) {
        bo.max_tokens = gp.max_tokens;
        bo.print_ids = print_ids;
        rc = gen_beam_cli_run(eng, tok, g, schema, pids.v, (int)pids.n, &bo);
        goto done;
    }
    double t_start = tool_now_us() / 1e3;
    uint64_t seed = gp.sampling.seed;
    int h0 = 0;
    for (int k = 0; k < n_replies; k++) {
        /* reply k: its own sampler stream, the prompt's prefill shared */
        gp.sampling.seed = seed + (uint64_t)k;
        gp.fork_of = h0;
        if (sx_gen_add(gen, pids.v, (int)pids.n, &gp, &sts[k], k ? NULL : &h0, &err)) {
            fprintf(stderr, "strux generate: %s\n", err.msg);
            goto done;
        }
    }
    int live = 1;
    while (live > 0)
        if (sx_gen_step(gen, &live, &err)) {
            fprintf(stderr, "strux generate: %s\n", err.msg);
            goto done;
        }
    rc = 0;
    for (int k = 0; k < n_replies; k++)
        if (report(&sts[k], k, n_replies, seed + (uint64_t)k, stream, print_ids, top_logprobs,
                   schema, t_start))
            rc = 1;
    sx_engine_lm_stats ls;
    sx_backend_lm_stats_get(eng, &ls);
    if (n_replies > 1)
        fprintf(stderr, "%d replies: the model ran %lld tokens for a prompt of %zu\n", n_replies,
                (long long)ls.tokens, pids.n);
    if (gp.speculate) {
        int64_t sd, sa;
        sx_gen_spec_stats(gen, &sd, &sa);
        fprintf(stderr, "speculation: %lld of %lld drafted tokens accepted (%.1f%%)\n",
                (long long)sa, (long long)sd, sd ? 100.0 * (double)sa / (double)sd : 0.0);
    }
    if (ls.dev_samples + ls.host_samples > 0)
        fprintf(stderr, "draws: %lld on the device, %lld on the host\n",
                (long long)ls.dev_samples, (long long)ls.host_samples);
    if (ls.heads > 0)
        fprintf(stderr, "LM head under grammar masks: %lld of %lld panels read (%.1f%%) in %lld "
                "steps%s\n", (long long)ls.panels_computed, (long long)ls.panels_dense,
                100.0 * (double)ls.panels_computed / (double)ls.panels_dense, (long long)ls.heads,
                dense ? " (--dense-logits)" : "");
done:
    sx_gen_free(gen);
    sx_backend_close(eng);
    sx_model_free(model);
    sx_backend_close(deng);
    sx_model_free(dmodel);
    sx_gr_free(g);
    sx_vocab_free(v);
    sx_tok_free(tok);
    json_decref(schema);
    sx_ids_free(&pids);
    for (int k = 0; k < n_replies; k++) {
        sx_ids_free(&sts[k].ids);
        sx_bytes_free(&sts[k].text);
        sx_bytes_free(&sts[k].logprobs);
    }
    free(prompt_buf);
    return rc;
}
