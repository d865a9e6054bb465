/* strux chat: render a conversation with Qwen3's chat template. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"

int cmd_chat(int argc, char **argv)
{
    const char *path = NULL, *model = NULL, *file = NULL;
    int want_ids = 0, gen = 1, rc = 1;
    int no_gen = 0;
    cli_opt opts[] = {
        {.name = "--ids", .kind = CLI_FLAG, .dst = &want_ids,
         .help = "print the prompt's token ids (one line) instead; template\n"
                 "markers become special tokens, message text never does"},
        {.name = "--no-generation-prompt", .kind = CLI_FLAG, .dst = &no_gen,
         .help = "render the messages only, no opened assistant turn"},
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &path, .arg = "PATH",
         .help = "as for `strux tokenize` (only needed with --ids)"},
        {.name = "--model", .kind = CLI_STR, .dst = &model, .arg = "DIR",
         .help = "as for `strux tokenize` (only needed with --ids)"},
    };
    cli_spec spec = {
        .cmd = "chat", .usage = "[options] [FILE|-]",
        .about = "Reads a conversation -- a JSON array of {\"role\", \"content\"} messages, or an\n"
                 "object with such a \"messages\" array -- from FILE or stdin and prints the prompt\n"
                 "Qwen3's chat template makes of it with thinking disabled: the assistant turn is\n"
                 "opened and pre-filled with \"<think>\\n\\n</think>\\n\\n\".  Roles: system, user,\n"
                 "assistant, tool.\n",
        .after = "Exit status: 0 ok, 1 bad conversation or tokenizer file, 2 usage.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 1,
    };
    int prc = cli_parse(&spec, argc, argv, &file, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    gen = !no_gen;
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
