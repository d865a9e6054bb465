/* strux demo: what the grammar guarantees.
 *
 * Without --model it stands in for the model with a uniformly random
 * "model": at every step it samples among the tokens the schema's mask
 * allows (leaning towards closing the document after a while).  With
 * --model DIR the model samples the document (temperature 1 by default) on
 * --device, through the engine interface.  Either way the output is
 * re-checked with the independent validator. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_numjson.h"
#include "engine/backend.h"
#include "grammar/grammar.h"
#include "grammar/validator/validator.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/tool_common.h"
#include "tools/strux/tool_gen.h"

int cmd_demo(int argc, char **argv)
{
    const char *schema_path = NULL, *tok_path = NULL, *model_dir = NULL;
    const char *prompt = "Write one JSON document that matches the schema.";
    tool_gen_req req;
    memset(&req, 0, sizeof req);
    req.device = "cpu";
    sx_sampling_default(&req.sampling); /* temperature 1 */
    unsigned seed = 1;
    int max_tokens = 200;
    unsigned long long seed_arg = 1;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    o.max_ws = 0; /* compact unless asked: the sampled document is easier to read */
    cli_opt opts[] = {
        {.name = "--schema", .kind = CLI_STR, .dst = &schema_path, .arg = "FILE",
         .help = "the JSON Schema (required)"},
        {.name = "--seed", .kind = CLI_U64, .dst = &seed_arg, .arg = "N",
         .help = "random stand-in's seed (default 1; taken modulo 2^32)"},
        {.name = "--max-tokens", .kind = CLI_INT, .dst = &max_tokens, .lo = 1, .hi = 1 << 24,
         .arg = "N", .help = "close the document before N tokens (default 200)"},
        CLI_GRAMMAR_OPTS(&o),
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &tok_path, .arg = "PATH",
         .help = "tokenizer.json (default: from ../shared)"},
        {.kind = CLI_SECTION, .help = "a real model instead of the stand-in:"},
        {.name = "--model", .kind = CLI_STR, .dst = &model_dir, .arg = "DIR",
         .help = "Qwen3 directory (its tokenizer too); the model samples\n"
                 "the document with --seed"},
        {.name = "--device", .kind = CLI_STR, .dst = &req.device, .arg = "D",
         .help = "cpu (default), cuda or cuda:N (a build with CUDA)"},
        {.name = "--temperature", .kind = CLI_FLOAT, .dst = &req.sampling.temperature,
         .arg = "T", .help = "0 = greedy (default 1)"},
        {.name = "--prompt", .kind = CLI_STR, .dst = &prompt, .arg = "TEXT",
         .help = "the user turn (default: asks for a document)"},
        {.name = "--threads", .kind = CLI_INT, .dst = &req.n_threads, .lo = 0, .hi = 1024,
         .arg = "N", .help = "CPU threads (default: all)"},
    };
    cli_spec spec = {
        .cmd = "demo", .usage = "--schema FILE [options]",
        .about = "Samples a document token by token from the schema's masks with a uniformly\n"
                 "random stand-in for the model (no weights are involved), closes it before\n"
                 "--max-tokens (default 200) using the grammar's shortest completion, prints it\n"
                 "and the validator's verdict, and the mask times.  --max-ws defaults to 0 here.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    seed = (unsigned)seed_arg;
    req.sampling.seed = seed_arg;
    if (!schema_path)
        return cli_usage_error(&spec, "needs --schema FILE");
    if (!model_dir && (cli_seen(&spec, "--device") || cli_seen(&spec, "--temperature") ||
                       cli_seen(&spec, "--prompt")))
        return cli_usage_error(&spec, "--device, --temperature and --prompt go with --model");
    if (model_dir) {
        sx_error serr;
        sx_err_clear(&serr);
        if (sx_sampling_check(&req.sampling, &serr))
            return cli_usage_error(&spec, "%s", serr.msg);
        int drc = sx_backend_device_check(req.device, &serr); /* before any load */
        if (drc) {
            fprintf(stderr, "strux demo: %s\n", serr.msg);
            return drc == SX_EUNSUPPORTED ? 1 : 2;
        }
    }
    json_t *schema = tool_read_schema("demo", schema_path);
    if (!schema)
        return 1;
    sx_tokenizer *tok;
    sx_vocab *v;
    if (tool_load("demo", tok_path, model_dir, &tok, &v)) {
        json_decref(schema);
        return 1;
    }
    sx_error err;
    sx_err_clear(&err);
    sx_grammar *g = NULL;
    sx_matcher *m = NULL;
    int rc = 1;
    uint32_t *mask = malloc((size_t)v->mask_words * sizeof *mask);
    int32_t *allowed = malloc((size_t)v->n_rows * sizeof *allowed);
    sx_bytes out = {0};
    tool_gen_out gout;
    memset(&gout, 0, sizeof gout);
    double mask_us = 0;
    int steps = 0;
    if (sx_gr_compile_json(v, schema, &o, &g, &err) || sx_matcher_new(g, &m, &err)) {
        fprintf(stderr, "strux demo: %s: %s\n", schema_path, err.msg);
        goto done;
    }
    if (model_dir) {
        sx_chat_msg msg = {"user", prompt};
        req.cmd = "demo";
        req.model_dir = model_dir;
        req.msgs = &msg;
        req.n_msgs = 1;
        req.grammar = g;
        req.max_tokens = max_tokens;
        if (tool_gen_reply(&req, tok, &gout))
            goto done;
        sx_bytes_append(&out, gout.text.v ? gout.text.v : "", gout.text.n);
        fprintf(stderr, "%zu tokens sampled by %s on %s (seed %llu, temperature %g)\n",
                gout.ids.n, model_dir, gout.backend, seed_arg, (double)req.sampling.temperature);
        goto check;
    }
    for (;;) {
        double t0 = tool_now_us();
        sx_matcher_fill_mask(m, mask);
        mask_us += tool_now_us() - t0;
        steps++;
        int na = 0, can_end = 0;
        for (int32_t t = 0; t < v->n_rows; t++)
            if (mask[t >> 5] >> (t & 31) & 1) {
                if (t == v->eos[0] || (v->n_eos > 1 && t == v->eos[1]))
                    can_end = 1;
                else
                    allowed[na++] = t;
            }
        if (can_end && (na == 0 || rand_r(&seed) % 3 == 0 || steps > max_tokens / 2))
            break;
        if (na == 0) {
            fprintf(stderr, "strux demo: internal error: empty mask\n");
            goto done;
        }
        int32_t pick = allowed[rand_r(&seed) % (unsigned)na];
        uint8_t comp[4096];
        size_t cn = sx_matcher_shortest_completion(m, comp, sizeof comp);
        if (steps > max_tokens / 2 && cn != (size_t)-1 && cn > 0) {
            /* budget running out: close the document with the shortest text */
            if (sx_matcher_accept_bytes(m, comp, cn, &err)) {
                fprintf(stderr, "strux demo: completion refused: %s\n", err.msg);
                goto done;
            }
            sx_bytes_append(&out, comp, cn);
            continue;
        }
        size_t tl;
        const char *tb = sx_tok_bytes(tok, pick, &tl);
        if (sx_matcher_accept(m, pick, &err)) {
            fprintf(stderr, "strux demo: internal error: %s\n", err.msg);
            goto done;
        }
        sx_bytes_append(&out, tb, tl);
    }
check:
    printf("%.*s\n", (int)out.n, out.v ? out.v : "");
    sx_numtab nums = {0}; /* numbers of any length */
    json_error_t je;
    json_t *inst = sx_numjson_loadb(out.v ? out.v : "", out.n, 0, &nums, &je);
    sx_validator *val = NULL;
    int valid = 0;
    if (inst && !sx_val_compile(schema, NULL, &val, &err) && !sx_val_validate_text(val, out.v ? out.v : "", out.n, &valid, &err))
        fprintf(stderr, "validator: %s%s%s\n", valid ? "valid" : "INVALID: ", valid ? "" : err.msg, "");
    else
        fprintf(stderr, "validator: could not check: %s\n", inst ? err.msg : je.text);
    if (!model_dir)
        fprintf(stderr, "%d masks, %.1f us per mask on average\n", steps, mask_us / steps);
    json_decref(inst);
    sx_numtab_free(&nums);
    sx_val_free(val);
    rc = valid ? 0 : 1;
done:
    tool_gen_out_free(&gout);
    sx_bytes_free(&out);
    free(mask);
    free(allowed);
    sx_matcher_free(m);
    sx_gr_free(g);
    sx_vocab_free(v);
    sx_tok_free(tok);
    json_decref(schema);
    return rc;
}
