/* struxd: the strux server.  Loads a Qwen3 model, listens on nng
 * (tcp://, ipc://) and optionally HTTP, runs until SIGTERM/SIGINT, then
 * stops accepting, finishes what is in flight and exits 0. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <nng/nng.h>

#include <jansson.h>

#include "common/sx_file.h"
#include "engine/backend.h"
#include "engine/cpu/engine.h"
#include "engine/generate.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "rpc/server.h"
#include "tools/strux/cli_opts.h"

#define MAX_LISTEN 16

/* --speculate MODE (dst: int, an SX_SPEC_* value) */
static int opt_speculate(void *dst, const char *val, char *why, size_t why_cap)
{
    int m = sx_gen_speculate_parse(val);
    if (m < 0) {
        snprintf(why, why_cap, "is not one of off, ngram, draft");
        return -1;
    }
    *(int *)dst = m;
    return 0;
}

/* `strux model random` marks its models; real weights never carry this. */
static int is_random_model(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/STRUX_RANDOM_MODEL", dir);
    if (sx_file_exists(path))
        return 1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    int yes = cfg && (json_is_true(json_object_get(cfg, "strux_random")) ||
                      json_object_get(cfg, "strux_random_seed") != NULL);
    json_decref(cfg);
    return yes;
}

int main(int argc, char **argv)
{
    /* nng frees closed sockets on its own threads; finishing the library at
     * exit lets a leak checker see them freed (nng's own advice) */
    atexit(nng_fini);
    const char *model_dir = NULL, *tok_path = NULL, *model_name = NULL, *http = NULL;
    const char *api_key = NULL, *api_key_file = NULL;
    char *key_buf = NULL; /* --api-key-file's text */
    const char *listen[MAX_LISTEN];
    int n_listen = 0, quiet = 0, int8 = 0, q4 = 0, bf16act = 0, kvbf16 = 0, bvariant = 0;
    long threads = 0, max_batch = 32, kv_tokens = 65536, prefill = 256, mask_threads = 1;
    double prefix_gb = -1;   /* -1: as room allows */
    long max_queue = 1024, max_req = 4 << 20, max_schema = 256 << 10, max_tokens = 4096;
    long def_tokens = 512, timeout = 300, prep = 2, cache_mb = 64, max_ws = -1, indent = 0;
    long compile_threads = 2, compile_ms = 20000, max_abandoned = 4;
    int prop_order = 0, speculate = 0, version = 0;
    long draft_k = 4;
    const char *draft_dir = NULL, *device = "cpu";
    cli_list listens = {.v = listen, .cap = MAX_LISTEN};
    cli_opt opts[] = {
        {.kind = CLI_SECTION, .help = "model"},
        {.name = "--model", .kind = CLI_STR, .dst = &model_dir, .arg = "DIR",
         .help = "Hugging Face Qwen3 directory (config.json, safetensors,\ntokenizer.json) -- required"},
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &tok_path, .arg = "FILE",
         .help = "tokenizer.json to use instead of DIR/tokenizer.json\n(default: DIR/tokenizer.json, else\n"
                 "$STRUX_SHARED/qwen3-tokenizer/tokenizer.json)"},
        {.name = "--model-name", .kind = CLI_STR, .dst = &model_name, .arg = "NAME",
         .help = "name shown by /v1/models and in responses (default:\nthe directory's last component)"},
        {.name = "--int8", .kind = CLI_FLAG, .dst = &int8,
         .help = "quantise weight matrices to int8 at start-up"},
        {.name = "--q4", .kind = CLI_FLAG, .dst = &q4,
         .help = "quantise weight matrices to 4 bits (a scale per 32\nvalues) at start-up: the fastest "
                 "decode, the largest\nquality cost (docs/BENCHMARKS.md).  An AWQ\ncheckpoint stays "
                 "4-bit (these apply to lm_head\nonly); FP8 is dequantised to bf16 first"},
        {.name = "--bf16-act", .kind = CLI_FLAG, .dst = &bf16act,
         .help = "round activations to bf16 in prefill-sized matrix\nproducts: faster prompts on "
                 "AVX512-BF16 CPUs without\nAMX; logits change slightly (docs/BENCHMARKS.md)"},
        {.name = "--kv-bf16", .kind = CLI_FLAG, .dst = &kvbf16,
         .help = "keep the KV cache in bf16: half the memory per cached\ntoken (--kv-tokens can "
                 "double in the same RAM) and\nless to read per decoded token; logits change slightly"},
        {.name = "--no-batch-invariant", .kind = CLI_FLAG, .dst = &bvariant,
         .help = "let kernels depend on the batch's shape: faster long\nprompts (~10-20% at 512 "
                 "tokens), but a retried request\nmay then differ at near-ties (docs/PROTOCOL.md); "
                 "also\nSTRUX_BATCH_INVARIANT=0"},
        {.kind = CLI_SECTION, .help = "speculative decoding (opt-in; same outputs, faster when drafts are right)"},
        {.name = "--speculate", .kind = CLI_FN, .dst = &speculate, .fn = opt_speculate, .arg = "MODE",
         .help = "ngram (drafts copied from the prompt and the text so\nfar) or draft (a draft model's "
                 "tokens): the default of\nrequests, which may say \"speculate\": \"off\"/false\n"
                 "(default: off, and requests may not turn it on)"},
        {.name = "--draft-model", .kind = CLI_STR, .dst = &draft_dir, .arg = "DIR",
         .help = "the draft model of --speculate draft: a smaller Qwen3\nwith the same tokenizer"},
        {.name = "--draft-k", .kind = CLI_LONG, .dst = &draft_k, .lo = 1, .hi = 16, .arg = "K",
         .help = "tokens drafted per step, verified in one pass (1..16, 4)"},
        {.kind = CLI_SECTION, .help = "network"},
        {.name = "--listen", .kind = CLI_LIST, .dst = &listens, .arg = "URL",
         .help = "nng address, repeatable (at most 16): tcp://HOST:PORT\nor ipc:///PATH (default "
                 "tcp://127.0.0.1:7400 when\nneither --listen nor --http is given)"},
        {.name = "--http", .kind = CLI_STR, .dst = &http, .arg = "HOST:PORT",
         .help = "also serve HTTP: /v1/chat/completions, /v1/strux,\n/v1/models, /health, /metrics "
                 "(default: off)"},
        {.name = "--api-key-file", .kind = CLI_STR, .dst = &api_key_file, .arg = "FILE",
         .help = "HTTP routes but /health need \"Authorization: Bearer\nKEY\" with the key in FILE "
                 "(trailing newline ignored)"},
        {.name = "--api-key", .kind = CLI_STR, .dst = &api_key, .arg = "KEY",
         .help = "the same with the key given here (visible in ps)"},
        {.kind = CLI_SECTION, .help = "engine and batching"},
        {.name = "--device", .kind = CLI_STR, .dst = &device, .arg = "D",
         .help = "cpu (default), cuda or cuda:N: the forward pass on\nGPU N (a build with CUDA: make cuda)"},
        {.name = "--threads", .kind = CLI_LONG, .dst = &threads, .lo = 0, .hi = 4096, .arg = "N",
         .help = "CPU threads for the forward pass (default: all online CPUs)"},
        {.name = "--max-batch", .kind = CLI_LONG, .dst = &max_batch, .lo = 1, .hi = 1024, .arg = "N",
         .help = "requests generating at once (1..1024, default 32)"},
        {.name = "--kv-tokens", .kind = CLI_LONG, .dst = &kv_tokens, .lo = 256, .hi = 1L << 30, .arg = "N",
         .help = "KV-cache capacity in tokens over all requests\n(default 65536)"},
        {.name = "--prefill-chunk", .kind = CLI_LONG, .dst = &prefill, .lo = 1, .hi = 1 << 20, .arg = "N",
         .help = "prompt tokens per request per step (default 256)"},
        {.name = "--prefix-cache-gb", .kind = CLI_DOUBLE, .dst = &prefix_gb, .dlo = 0, .dhi = 1e6,
         .arg = "G",
         .help = "KV of earlier prompts kept for requests that start the\nsame way (system turn, "
                 "document, earlier chat turns),\nleast recently used out first; within --kv-tokens "
                 "and\ngiving way to requests (default: as room allows; 0 = off)"},
        {.name = "--mask-threads", .kind = CLI_LONG, .dst = &mask_threads, .lo = 1, .hi = 256, .arg = "N",
         .help = "threads filling grammar masks during the forward\npass (default 1)"},
        {.kind = CLI_SECTION, .help = "requests and limits"},
        {.name = "--max-queue", .kind = CLI_LONG, .dst = &max_queue, .lo = 1, .hi = 1 << 20, .arg = "N",
         .help = "requests waiting to start; more are answered\n`overloaded` at once (default 1024)"},
        {.name = "--max-request-bytes", .kind = CLI_LONG, .dst = &max_req, .lo = 256, .hi = 1L << 30,
         .arg = "N", .help = "largest request body (default 4194304)"},
        {.name = "--max-schema-bytes", .kind = CLI_LONG, .dst = &max_schema, .lo = 16, .hi = 1L << 30,
         .arg = "N", .help = "largest schema, as compact JSON (default 262144)"},
        {.name = "--max-tokens", .kind = CLI_LONG, .dst = &max_tokens, .lo = 1, .hi = 1 << 24, .arg = "N",
         .help = "largest max_tokens a request may ask for (default 4096)"},
        {.name = "--default-max-tokens", .kind = CLI_LONG, .dst = &def_tokens, .lo = 1, .hi = 1 << 24,
         .arg = "N", .help = "max_tokens when a request gives none (default 512)"},
        {.name = "--timeout", .kind = CLI_LONG, .dst = &timeout, .lo = 1, .hi = 86400, .arg = "S",
         .help = "deadline of a request that gives none, seconds\n(default 300; requests may ask up to 600)"},
        {.name = "--prep-threads", .kind = CLI_LONG, .dst = &prep, .lo = 1, .hi = 256, .arg = "N",
         .help = "threads that parse and tokenize (default 2)"},
        {.name = "--compile-threads", .kind = CLI_LONG, .dst = &compile_threads, .lo = 1, .hi = 256,
         .arg = "N",
         .help = "schema compiles running at once, on their own threads:\na slow compile never delays "
                 "cached schemas (default 2)"},
        {.name = "--compile-timeout-ms", .kind = CLI_LONG, .dst = &compile_ms, .lo = 1, .hi = 86400000L,
         .arg = "N",
         .help = "longest a compile may run; a request whose compile is\nnot done by then, or by its "
                 "own deadline, is answered\n`timeout` (default 20000)"},
        {.name = "--max-abandoned-compiles", .kind = CLI_LONG, .dst = &max_abandoned, .lo = 1, .hi = 256,
         .arg = "N",
         .help = "compiles still running after their requests gave up\npast which new compiles are "
                 "`overloaded` (default 4)"},
        {.name = "--cache-mb", .kind = CLI_LONG, .dst = &cache_mb, .lo = 1, .hi = 1 << 20, .arg = "N",
         .help = "compiled-schema cache bound, MiB (default 64)"},
        {.name = "--max-ws", .kind = CLI_LONG, .dst = &max_ws, .lo = 0, .hi = 64, .arg = "N",
         .help = "longest whitespace run the grammar allows between\nJSON tokens (0..64, default 4; "
                 "0 = compact JSON)"},
        {.name = "--indent", .kind = CLI_LONG, .dst = &indent, .lo = 1, .hi = 16, .arg = "N",
         .help = "output laid out exactly as JSON.stringify(v, null, N)\n(N spaces per level, 1..16; "
                 "replaces --max-ws)"},
        {.name = "--property-order", .kind = CLI_FLAG, .dst = &prop_order,
         .help = "object members in the order `properties` lists them\n(optional ones may be left out; "
                 "other keys last)"},
        {.name = "--quiet", .kind = CLI_FLAG, .dst = &quiet, .help = "no per-request log lines"},
        {.name = "--version", .kind = CLI_FLAG, .dst = &version, .help = "print the version and exit"},
    };
    cli_spec spec = {
        .prog = "struxd", .usage = "--model DIR [options]",
        .about = "Serves schema-constrained generation with a Qwen3 model over nng REQ/REP\n"
                 "(the protocol of docs/PROTOCOL.md) and, with --http, an OpenAI-compatible\n"
                 "HTTP API. SIGTERM or SIGINT: stop accepting, finish in-flight requests, exit 0.\n",
        .after = "exit status: 0 after SIGTERM/SIGINT, 1 when the model, tokenizer, device or\n"
                 "listeners cannot be set up, 2 on a usage error\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    n_listen = listens.n;
    if (version) {
        printf("struxd %s\n", STRUX_VERSION);
        return 0;
    }
    if (!model_dir)
        return cli_usage_error(&spec, "--model DIR is required");
    if ((speculate == SX_SPEC_DRAFT) != !!draft_dir)
        return cli_usage_error(&spec, "--draft-model goes with --speculate draft");
    if (int8 && q4)
        return cli_usage_error(&spec, "give at most one of --int8, --q4");
    {
        /* before the model loads: a binary without CUDA says so at once */
        sx_error derr;
        int drc = device ? sx_backend_device_check(device, &derr) : SX_OK;
        if (drc) {
            fprintf(stderr, "struxd: %s\n", derr.msg);
            return drc == SX_EUNSUPPORTED ? 1 : 2;
        }
    }
    if (def_tokens > max_tokens)
        def_tokens = max_tokens;
    if (!n_listen && !http)
        listen[n_listen++] = "tcp://127.0.0.1:7400";

    if (api_key && api_key_file)
        return cli_usage_error(&spec, "give --api-key or --api-key-file, not both");
    if (api_key_file) {
        sx_error kerr;
        size_t klen = 0;
        if (sx_file_read(api_key_file, &key_buf, &klen, &kerr)) {
            fprintf(stderr, "struxd: --api-key-file: %s\n", kerr.msg);
            return 2;
        }
        while (klen && (key_buf[klen - 1] == '\n' || key_buf[klen - 1] == '\r' ||
                        key_buf[klen - 1] == ' '))
            klen--;
        key_buf[klen] = 0;
        api_key = key_buf;
    }
    if (api_key && (!*api_key || strlen(api_key) > 4096 || strpbrk(api_key, " \t\r\n"))) {
        fprintf(stderr, "struxd: the API key must be 1..4096 characters without spaces\n");
        free(key_buf);
        return 2;
    }

    /* Signals are taken synchronously by the main thread; every other
     * thread (nng's, ours) inherits the block. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int status = 1;
    sx_error err;
    sx_err_clear(&err);
    sx_model *model = NULL;
    sx_tokenizer *tok = NULL;
    sx_vocab *vocab = NULL;
    sx_backend *engine = NULL, *dengine = NULL;
    sx_model *dmodel = NULL;
    sx_rpc_backend be = {0};
    sx_rpc_server *srv = NULL;
    char path[4096];

    if (sx_model_load(model_dir, &model, &err)) {
        fprintf(stderr, "struxd: cannot load the model: %s\n", err.msg);
        goto done;
    }
    if (sx_tok_resolve_path(tok_path, model_dir, NULL, path, sizeof path, &err) ||
        sx_tok_load(path, &tok, &err)) {
        fprintf(stderr, "struxd: cannot load the tokenizer: %s\n", err.msg);
        goto done;
    }
    sx_tok_set_n_rows(tok, model->cfg.vocab_rows);
    if (sx_tok_make_vocab(tok, &vocab, &err)) {
        fprintf(stderr, "struxd: %s\n", err.msg);
        goto done;
    }
    sx_engine_opts eo = {.n_threads = (int)threads,
                         /* + label scoring's forks and the cached prompt prefixes */
                         .max_seqs = (int)max_batch + 17 + SX_GEN_PREFIX_ENTRIES,
                         .kv_tokens = kv_tokens,
                         .block_tokens = 16,
                         .weight_mode = q4 ? SX_W_Q4 : int8 ? SX_W_INT8 : SX_W_BF16,
                         .act_mode = bf16act ? SX_ACT_BF16 : SX_ACT_F32,
                         .kv_mode = kvbf16 ? SX_KV_BF16 : SX_KV_F32,
                         .batch_variant = bvariant};
    if (sx_backend_open(device, model, &eo, &engine, &err)) {
        fprintf(stderr, "struxd: cannot start the engine: %s\n", err.msg);
        goto done;
    }
    sx_gen_opts go = {.prefill_chunk = (int)prefill, .max_batch = (int)max_batch,
                      .mask_threads = (int)mask_threads};
    if (prefix_gb >= 0) {
        /* K and V of every layer per token */
        double per_token = 2.0 * model->cfg.n_layers * model->cfg.n_kv_heads *
                           model->cfg.head_dim * (kvbf16 ? 2 : 4);
        double t = prefix_gb * 1e9 / per_token;
        go.prefix_cache_tokens = t < 1 ? -1 : (int64_t)t;
    }
    if (sx_rpc_gen_backend_new(engine, tok, &go, &be, &err)) {
        fprintf(stderr, "struxd: %s\n", err.msg);
        goto done;
    }
    if (draft_dir) {
        /* the draft model: its own engine and cache, same options */
        sx_engine_opts deo = eo;
        deo.max_seqs = (int)max_batch + 1;
        if (sx_model_load(draft_dir, &dmodel, &err) || sx_backend_open(device, dmodel, &deo, &dengine, &err) ||
            sx_rpc_gen_backend_set_draft(&be, dengine, &err)) {
            fprintf(stderr, "struxd: --draft-model: %s\n", err.msg);
            goto done;
        }
    }
    if (!model_name) {
        const char *slash = strrchr(model_dir, '/');
        model_name = slash && slash[1] ? slash + 1 : model_dir;
    }
    sx_rpc_server_opts so;
    sx_rpc_server_opts_default(&so);
    so.listen = listen;
    so.n_listen = n_listen;
    so.http = http;
    so.model_name = model_name;
    so.api_key = api_key;
    so.limits.max_request_bytes = (size_t)max_req;
    so.limits.max_schema_bytes = (size_t)max_schema;
    so.limits.max_tokens = (int)max_tokens;
    so.limits.default_max_tokens = (int)def_tokens;
    so.max_queue = (int)max_queue;
    so.max_running = (int)max_batch;
    so.prep_threads = (int)prep;
    so.compile_threads = (int)compile_threads;
    so.compile_timeout_ms = (double)compile_ms;
    so.max_abandoned_compiles = (int)max_abandoned;
    so.cache_bytes = (size_t)cache_mb << 20;
    so.default_timeout_s = (double)timeout;
    if (max_ws >= 0)
        so.gr.max_ws = (int)max_ws;
    if (indent > 0) {
        so.gr.ws_mode = SX_WS_INDENTED;
        so.gr.indent = (int)indent;
    }
    so.gr.prop_order = prop_order;
    so.log = quiet ? NULL : stderr;
    so.speculate = speculate;
    so.draft_k = (int)draft_k;
    if (sx_rpc_server_new(&so, tok, vocab, &be, &srv, &err) ||
        sx_rpc_server_start(srv, &err)) {
        fprintf(stderr, "struxd: %s\n", err.msg);
        goto done;
    }

    const sx_qwen3_config *c = &model->cfg;
    fprintf(stderr,
            "struxd: model %s (Qwen3: %d layers, hidden %d, %.2fB parameters%s) | KV cache "
            "%lld tokens (%s) | %s %s | max batch %ld, queue %ld, max_tokens %ld\n",
            model_dir, c->n_layers, c->hidden, (double)sx_qwen3_n_params(c) / 1e9,
            model->quant.method == SX_QUANT_AWQ ? (q4 ? ", AWQ 4-bit, q4" : ", AWQ 4-bit")
            : model->quant.method == SX_QUANT_FP8 ? (q4 ? ", FP8, q4" : int8 ? ", FP8, int8" : ", FP8")
            : q4 ? ", q4" : int8 ? ", int8" : "", (long long)sx_backend_free_tokens(engine), kvbf16 ? "bf16" : "f32",
            sx_engine_of_backend(engine) ? "CPU kernels" : "CUDA device",
            sx_backend_describe(engine), max_batch, max_queue, max_tokens);
    if (is_random_model(model_dir))
        fprintf(stderr, "struxd: WARNING: %s holds RANDOM weights (a stand-in written by "
                        "`strux model random`); outputs are schema-valid but meaningless\n",
                model_dir);
    fprintf(stderr, "struxd: listening on");
    for (int i = 0; i < n_listen; i++) {
        /* tcp addresses with the port bound (port 0 picks a free one) */
        int port = sx_rpc_server_listen_port(srv, i);
        const char *colon = strrchr(listen[i], ':');
        if (port > 0 && colon)
            fprintf(stderr, " %.*s:%d", (int)(colon - listen[i]), listen[i], port);
        else
            fprintf(stderr, " %s", listen[i]);
    }
    if (http) {
        const char *colon = strrchr(http, ':');
        fprintf(stderr, " http://%.*s:%d", colon ? (int)(colon - http) : (int)strlen(http), http,
                sx_rpc_server_http_port(srv));
    }
    fprintf(stderr, "\nstruxd: ready\n");

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "struxd: %s: finishing in-flight requests\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    sx_rpc_server_drain(srv);
    /* drain cancelled the compiles still running; one that does not stop
     * (a grammar that ignores the flag) must not hold the exit: the process
     * ends without freeing what that compile still reads */
    int left = sx_rpc_server_compiles_left(srv, 2000);
    if (left > 0) {
        fprintf(stderr, "struxd: %d compile%s did not stop when cancelled; exiting without "
                        "cleanup\nstruxd: stopped\n", left, left == 1 ? "" : "s");
        fflush(NULL);
        _exit(0);
    }
    fprintf(stderr, "struxd: stopped\n");
    status = 0;
done:
    sx_rpc_server_free(srv);
    sx_rpc_backend_free(&be);
    sx_backend_close(engine);
    sx_backend_close(dengine);
    sx_model_free(dmodel);
    sx_vocab_free(vocab);
    sx_tok_free(tok);
    sx_model_free(model);
    free(key_buf);
    return status;
}
