/* struxd: the strux server.  Loads a Qwen3 model, listens on nng
 * (tcp://, ipc://) and optionally HTTP, runs until SIGTERM/SIGINT, then
 * stops accepting, finishes what is in flight and exits 0. */
#include <errno.h>
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

#define MAX_LISTEN 16

static void usage(FILE *f)
{
    fprintf(f,
        "usage: struxd --model DIR [options]\n"
        "\n"
        "Serves schema-constrained generation with a Qwen3 model over nng REQ/REP\n"
        "(the protocol of docs/PROTOCOL.md) and, with --http, an OpenAI-compatible\n"
        "HTTP API. SIGTERM or SIGINT: stop accepting, finish in-flight requests, exit 0.\n"
        "\n"
        "model\n"
        "  --model DIR              Hugging Face Qwen3 directory (config.json, safetensors,\n"
        "                           tokenizer.json) -- required\n"
        "  --tokenizer FILE         tokenizer.json to use instead of DIR/tokenizer.json\n"
        "                           (default: DIR/tokenizer.json, else\n"
        "                           $STRUX_SHARED/qwen3-tokenizer/tokenizer.json)\n"
        "  --model-name NAME        name shown by /v1/models and in responses (default:\n"
        "                           the directory's last component)\n"
        "  --int8                   quantise weight matrices to int8 at start-up\n"
        "  --q4                     quantise weight matrices to 4 bits (a scale per 32\n"
        "                           values) at start-up: the fastest decode, the largest\n"
        "                           quality cost (docs/BENCHMARKS.md).  An AWQ\n"
        "                           checkpoint stays 4-bit (these apply to lm_head\n"
        "                           only); FP8 is dequantised to bf16 first\n"
        "  --bf16-act               round activations to bf16 in prefill-sized matrix\n"
        "                           products: faster prompts on AVX512-BF16 CPUs without\n"
        "                           AMX; logits change slightly (docs/BENCHMARKS.md)\n"
        "  --kv-bf16                keep the KV cache in bf16: half the memory per cached\n"
        "                           token (--kv-tokens can double in the same RAM) and\n"
        "                           less to read per decoded token; logits change slightly\n"
        "  --no-batch-invariant     let kernels depend on the batch's shape: faster long\n"
        "                           prompts (~10-20%% at 512 tokens), but a retried request\n"
        "                           may then differ at near-ties (docs/PROTOCOL.md); also\n"
        "                           STRUX_BATCH_INVARIANT=0\n"
        "speculative decoding (opt-in; same outputs, faster when drafts are right)\n"
        "  --speculate MODE         ngram (drafts copied from the prompt and the text so\n"
        "                           far) or draft (a draft model's tokens): the default of\n"
        "                           requests, which may say \"speculate\": \"off\"/false\n"
        "                           (default: off, and requests may not turn it on)\n"
        "  --draft-model DIR        the draft model of --speculate draft: a smaller Qwen3\n"
        "                           with the same tokenizer\n"
        "  --draft-k K              tokens drafted per step, verified in one pass (1..16, 4)\n"
        "network\n"
        "  --listen URL             nng address, repeatable: tcp://HOST:PORT or\n"
        "                           ipc:///PATH (default tcp://127.0.0.1:7400 when\n"
        "                           neither --listen nor --http is given)\n"
        "  --http HOST:PORT         also serve HTTP: /v1/chat/completions, /v1/strux,\n"
        "                           /v1/models, /health, /metrics (default: off)\n"
        "  --api-key-file FILE      HTTP routes but /health need \"Authorization: Bearer\n"
        "                           KEY\" with the key in FILE (trailing newline ignored)\n"
        "  --api-key KEY            the same with the key given here (visible in ps)\n"
        "engine and batching\n"
        "  --device D               cpu (default), cuda or cuda:N: the forward pass on\n"
        "                           GPU N (a build with CUDA: make cuda)\n"
        "  --threads N              CPU threads for the forward pass (default: all online CPUs)\n"
        "  --max-batch N            requests generating at once (default 32)\n"
        "  --kv-tokens N            KV-cache capacity in tokens over all requests\n"
        "                           (default 65536)\n"
        "  --prefill-chunk N        prompt tokens per request per step (default 256)\n"
        "  --prefix-cache-gb G      KV of earlier prompts kept for requests that start the\n"
        "                           same way (system turn, document, earlier chat turns),\n"
        "                           least recently used out first; within --kv-tokens and\n"
        "                           giving way to requests (default: as room allows; 0 = off)\n"
        "  --mask-threads N         threads filling grammar masks during the forward\n"
        "                           pass (default 1)\n"
        "requests and limits\n"
        "  --max-queue N            requests waiting to start; more are answered\n"
        "                           `overloaded` at once (default 1024)\n"
        "  --max-request-bytes N    largest request body (default 4194304)\n"
        "  --max-schema-bytes N     largest schema, as compact JSON (default 262144)\n"
        "  --max-tokens N           largest max_tokens a request may ask for (default 4096)\n"
        "  --default-max-tokens N   max_tokens when a request gives none (default 512)\n"
        "  --timeout S              deadline of a request that gives none, seconds\n"
        "                           (default 300; requests may ask up to 600)\n"
        "  --prep-threads N         threads that parse and tokenize (default 2)\n"
        "  --compile-threads N      schema compiles running at once, on their own threads:\n"
        "                           a slow compile never delays cached schemas (default 2)\n"
        "  --compile-timeout-ms N   longest a compile may run; a request whose compile is\n"
        "                           not done by then, or by its own deadline, is answered\n"
        "                           `timeout` (default 20000)\n"
        "  --max-abandoned-compiles N  compiles still running after their requests gave up\n"
        "                           past which new compiles are `overloaded` (default 4)\n"
        "  --cache-mb N             compiled-schema cache bound, MiB (default 64)\n"
        "  --max-ws N               longest whitespace run the grammar allows between\n"
        "                           JSON tokens (default 4; 0 = compact JSON)\n"
        "  --indent N               output laid out exactly as JSON.stringify(v, null, N)\n"
        "                           (N spaces per level, 1..16; replaces --max-ws)\n"
        "  --property-order         object members in the order `properties` lists them\n"
        "                           (optional ones may be left out; other keys last)\n"
        "  --quiet                  no per-request log lines\n"
        "  -h, --help               this text\n");
}

static int parse_long(const char *flag, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || x < lo || x > hi) {
        fprintf(stderr, "struxd: %s needs an integer in [%ld, %ld]\n", flag, lo, hi);
        return 1;
    }
    *out = x;
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
    int prop_order = 0, speculate = 0;
    long draft_k = 4;
    const char *draft_dir = NULL, *device = "cpu";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0, takes = 1;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--model")) {
            model_dir = v;
        } else if (!strcmp(a, "--tokenizer")) {
            tok_path = v;
        } else if (!strcmp(a, "--model-name")) {
            model_name = v;
        } else if (!strcmp(a, "--http")) {
            http = v;
        } else if (!strcmp(a, "--api-key")) {
            api_key = v;
        } else if (!strcmp(a, "--api-key-file")) {
            api_key_file = v;
        } else if (!strcmp(a, "--listen")) {
            if (n_listen == MAX_LISTEN) {
                fprintf(stderr, "struxd: at most %d --listen addresses\n", MAX_LISTEN);
                return 2;
            }
            if (v)
                listen[n_listen++] = v;
        } else if (!strcmp(a, "--speculate")) {
            if (v && (speculate = sx_gen_speculate_parse(v)) < 0) {
                fprintf(stderr, "struxd: --speculate takes off, ngram or draft\n");
                return 2;
            }
        } else if (!strcmp(a, "--draft-model")) {
            draft_dir = v;
        } else if (!strcmp(a, "--draft-k")) {
            bad = parse_long(a, v, 1, 16, &draft_k);
        } else if (!strcmp(a, "--device")) {
            device = v;
        } else if (!strcmp(a, "--threads")) {
            bad = parse_long(a, v, 0, 4096, &threads);
        } else if (!strcmp(a, "--max-batch")) {
            bad = parse_long(a, v, 1, 1024, &max_batch);
        } else if (!strcmp(a, "--kv-tokens")) {
            bad = parse_long(a, v, 256, 1L << 30, &kv_tokens);
        } else if (!strcmp(a, "--prefix-cache-gb")) {
            char *end;
            prefix_gb = strtod(v, &end);
            if (end == v || *end || !(prefix_gb >= 0) || prefix_gb > 1e6) {
                fprintf(stderr, "struxd: --prefix-cache-gb wants a size in GB >= 0 (got '%s')\n", v);
                bad = 1;
            }
        } else if (!strcmp(a, "--prefill-chunk")) {
            bad = parse_long(a, v, 1, 1 << 20, &prefill);
        } else if (!strcmp(a, "--mask-threads")) {
            bad = parse_long(a, v, 1, 256, &mask_threads);
        } else if (!strcmp(a, "--max-queue")) {
            bad = parse_long(a, v, 1, 1 << 20, &max_queue);
        } else if (!strcmp(a, "--max-request-bytes")) {
            bad = parse_long(a, v, 256, 1L << 30, &max_req);
        } else if (!strcmp(a, "--max-schema-bytes")) {
            bad = parse_long(a, v, 16, 1L << 30, &max_schema);
        } else if (!strcmp(a, "--max-tokens")) {
            bad = parse_long(a, v, 1, 1 << 24, &max_tokens);
        } else if (!strcmp(a, "--default-max-tokens")) {
            bad = parse_long(a, v, 1, 1 << 24, &def_tokens);
        } else if (!strcmp(a, "--timeout")) {
            bad = parse_long(a, v, 1, 86400, &timeout);
        } else if (!strcmp(a, "--prep-threads")) {
            bad = parse_long(a, v, 1, 256, &prep);
        } else if (!strcmp(a, "--compile-threads")) {
            bad = parse_long(a, v, 1, 256, &compile_threads);
        } else if (!strcmp(a, "--compile-timeout-ms")) {
            bad = parse_long(a, v, 1, 86400000L, &compile_ms);
        } else if (!strcmp(a, "--max-abandoned-compiles")) {
            bad = parse_long(a, v, 1, 256, &max_abandoned);
        } else if (!strcmp(a, "--cache-mb")) {
            bad = parse_long(a, v, 1, 1 << 20, &cache_mb);
        } else if (!strcmp(a, "--max-ws")) {
            bad = parse_long(a, v, 0, 64, &max_ws);
        } else if (!strcmp(a, "--indent")) {
            bad = parse_long(a, v, 1, 16, &indent);
        } else if (!strcmp(a, "--property-order")) {
            prop_order = 1;
            takes = 0;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
            takes = 0;
        } else if (!strcmp(a, "--int8")) {
            int8 = 1;
            takes = 0;
        } else if (!strcmp(a, "--q4")) {
            q4 = 1;
            takes = 0;
        } else if (!strcmp(a, "--bf16-act")) {
            bf16act = 1;
            takes = 0;
        } else if (!strcmp(a, "--no-batch-invariant")) {
            bvariant = 1;
            takes = 0;
        } else if (!strcmp(a, "--kv-bf16")) {
            kvbf16 = 1;
            takes = 0;
        } else {
            fprintf(stderr, "struxd: unknown option '%s' (see --help)\n", a);
            return 2;
        }
        if (bad)
            return 2;
        if (takes) {
            if (!v) {
                fprintf(stderr, "struxd: %s needs a value\n", a);
                return 2;
            }
            i++;
        }
    }
    if (!model_dir) {
        fprintf(stderr, "struxd: --model DIR is required (see --help)\n");
        return 2;
    }
    if ((speculate == SX_SPEC_DRAFT) != !!draft_dir) {
        fprintf(stderr, "struxd: --draft-model goes with --speculate draft\n");
        return 2;
    }
    if (int8 && q4) {
        fprintf(stderr, "struxd: give at most one of --int8, --q4\n");
        return 2;
    }
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

    if (api_key && api_key_file) {
        fprintf(stderr, "struxd: give --api-key or --api-key-file, not both\n");
        return 2;
    }
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
