/* strux chat: render a conversation with Qwen3's chat template, or (with
 * --reply) generate the assistant's answer to it on --device. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "engine/backend.h"
#include "engine/generate.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/tool_common.h"
#include "tools/strux/tool_gen.h"

/* --reply: the conversation's answer from the model in model_dir, under
 * schema_path's grammar when given; prints the text (and its ids). */
static int chat_reply(const char *model_dir, const char *schema_path, const sx_chat_msg *msgs,
                      size_t n, tool_gen_req *r, int print_ids)
{
    sx_tokenizer *tok = NULL;
    sx_vocab *v = NULL;
    sx_grammar *g = NULL;
    json_t *schema = NULL;
    tool_gen_out out;
    memset(&out, 0, sizeof out);
    sx_error err;
    sx_err_clear(&err);
    int rc = 1;
    if (schema_path) {
        if (!(schema = tool_read_schema("chat", schema_path)))
            return 1;
    }
    if (tool_load("chat", NULL, model_dir, &tok, schema ? &v : NULL))
        goto done;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    if (schema && sx_gr_compile_json(v, schema, &o, &g, &err)) {
        fprintf(stderr, "strux chat: %s: %s\n", schema_path, err.msg);
        goto done;
    }
    r->cmd = "chat";
    r->model_dir = model_dir;
    r->msgs = msgs;
    r->n_msgs = n;
    r->grammar = g;
    if ((rc = tool_gen_reply(r, tok, &out)))
        goto done;
    printf("%.*s\n", (int)out.text.n, out.text.v ? out.text.v : "");
    if (print_ids) {
        for (size_t i = 0; i < out.ids.n; i++)
            printf(i ? " %d" : "%d", (int)out.ids.v[i]);
        putchar('\n');
    }
    fprintf(stderr, "strux chat: %zu tokens on %s, finish %s\n", out.ids.n, out.backend,
            out.finish == SX_FINISH_STOP ? "stop" : "length");
    rc = schema && !tool_gen_validate(schema, &out.text);
done:
    tool_gen_out_free(&out);
    sx_gr_free(g);
    sx_vocab_free(v);
    sx_tok_free(tok);
    json_decref(schema);
    return rc;
}

int cmd_chat(int argc, char **argv)
{
    const char *path = NULL, *model = NULL, *file = NULL;
    int want_ids = 0, gen = 1, rc = 1;
    int no_gen = 0, reply = 0, print_ids = 0;
    const char *schema_path = NULL;
    unsigned long long seed_arg = 0;
    tool_gen_req req;
    memset(&req, 0, sizeof req);
    req.device = "cpu";
    req.max_tokens = 256;
    sx_sampling_default(&req.sampling);
    req.sampling.temperature = 0;
    cli_opt opts[] = {
        {.name = "--ids", .kind = CLI_FLAG, .dst = &want_ids,
         .help = "print the prompt's token ids (one line) instead; template\n"
                 "markers become special tokens, message text never does"},
        {.name = "--no-generation-prompt", .kind = CLI_FLAG, .dst = &no_gen,
         .help = "render the messages only, no opened assistant turn"},
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &path, .arg = "PATH",
         .help = "as for `strux tokenize` (only needed with --ids)"},
        {.name = "--model", .kind = CLI_STR, .dst = &model, .arg = "DIR",
         .help = "as for `strux tokenize` (needed with --ids or --reply)"},
        {.kind = CLI_SECTION, .help = "the answer (--reply):"},
        {.name = "--reply", .kind = CLI_FLAG, .dst = &reply,
         .help = "generate the assistant's answer with the --model DIR\n"
                 "instead of printing the prompt"},
        {.name = "--device", .kind = CLI_STR, .dst = &req.device, .arg = "D",
         .help = "cpu (default), cuda or cuda:N (a build with CUDA)"},
        {.name = "--threads", .kind = CLI_INT, .dst = &req.n_threads, .lo = 0, .hi = 1024,
         .arg = "N", .help = "CPU threads (default: all)"},
        {.name = "--schema", .kind = CLI_STR, .dst = &schema_path, .arg = "FILE",
         .help = "JSON Schema the answer must validate against"},
        {.name = "--max-tokens", .kind = CLI_INT, .dst = &req.max_tokens, .lo = 1,
         .hi = 1 << 24, .arg = "N", .help = "completion budget (default 256)"},
        {.name = "--temperature", .kind = CLI_FLOAT, .dst = &req.sampling.temperature,
         .arg = "T", .help = "0 = greedy (default 0)"},
        {.name = "--seed", .kind = CLI_U64, .dst = &seed_arg, .arg = "N",
         .help = "sampling seed (default 0)"},
        {.name = "--print-ids", .kind = CLI_FLAG, .dst = &print_ids,
         .help = "also print the answer's token ids on one line"},
    };
    cli_spec spec = {
        .cmd = "chat", .usage = "[options] [FILE|-]",
        .about = "Reads a conversation -- a JSON array of {\"role\", \"content\"} messages, or an\n"
                 "object with such a \"messages\" array -- from FILE or stdin and prints the prompt\n"
                 "Qwen3's chat template makes of it with thinking disabled: the assistant turn is\n"
                 "opened and pre-filled with \"<think>\\n\\n</think>\\n\\n\".  Roles: system, user,\n"
                 "assistant, tool.\n",
        .after = "Exit status: 0 ok, 1 bad conversation or tokenizer file (with --reply: a\n"
                 "failed run or an answer that does not validate), 2 usage.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 1,
    };
    int prc = cli_parse(&spec, argc, argv, &file, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    gen = !no_gen;
    req.sampling.seed = seed_arg;
    if (reply && (want_ids || no_gen || path || !model))
        return cli_usage_error(&spec, "--reply needs --model DIR, and takes no --ids, "
                                      "--no-generation-prompt or --tokenizer");
    if (!reply && (cli_seen(&spec, "--device") || schema_path || print_ids ||
                   cli_seen(&spec, "--temperature")))
        return cli_usage_error(&spec, "--device, --schema, --temperature and --print-ids "
                                      "go with --reply");
    if (reply) {
        sx_error serr;
        sx_err_clear(&serr);
        if (sx_sampling_check(&req.sampling, &serr))
            return cli_usage_error(&spec, "%s", serr.msg);
        /* a typo in --device should not cost reading the conversation */
        int drc = sx_backend_device_check(req.device, &serr);
        if (drc) {
            fprintf(stderr, "strux chat: %s\n", serr.msg);
            return drc == SX_EUNSUPPORTED ? 1 : 2;
        }
    }
    const char *name = file && strcmp(file, "-") ? file : "stdin";
    char *json = NULL, tpath[4096];
    size_t len = 0, n = 0;
    sx_chat_msg *msgs = NULL;
    void *owner = NULL;
    sx_tokenizer *tok = NULL;
    sx_bytes text = {0};
    sx_ids ids = {0};
    sx_error err;
    int r = file && strcmp(file, "-") ? sx_file_read(file, &json, &len, &err)
                                      : sx_stream_read(stdin, (size_t)1 << 30, &json, &len, &err);
    if (r) {
        fprintf(stderr, "strux chat: %s\n", err.msg);
        goto done;
    }
    if (sx_chat_parse_json(json, len, &msgs, &n, &owner, &err)) {
        fprintf(stderr, "strux chat: %s: %s%s%s\n", name, err.msg, err.pointer[0] ? " at " : "",
                err.pointer);
        goto done;
    }
    if (reply) {
        rc = chat_reply(model, schema_path, msgs, n, &req, print_ids);
        goto done;
    }
    if (want_ids) {
        if (sx_tok_resolve_path(path, model, NULL, tpath, sizeof tpath, &err) ||
            sx_tok_load(tpath, &tok, &err)) {
            fprintf(stderr, "strux chat: %s\n", err.msg);
            goto done;
        }
        if (sx_chat_encode(tok, msgs, n, gen, &ids, &err)) {
            fprintf(stderr, "strux chat: %s: %s\n", name, err.msg);
            goto done;
        }
        for (size_t i = 0; i < ids.n; i++)
            printf(i ? " %d" : "%d", (int)ids.v[i]);
        putchar('\n');
    } else {
        if (sx_chat_render(msgs, n, gen, &text, &err)) {
            fprintf(stderr, "strux chat: %s: %s\n", name, err.msg);
            goto done;
        }
        fwrite(text.v, 1, text.n, stdout);
    }
    if (fflush(stdout)) {
        fprintf(stderr, "strux chat: writing stdout: %s\n", strerror(errno));
        goto done;
    }
    rc = 0;
done:
    sx_bytes_free(&text);
    sx_ids_free(&ids);
    sx_chat_msgs_free(msgs, owner);
    sx_tok_free(tok);
    free(json);
    return rc;
}
