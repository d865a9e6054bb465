/* strux chat: render a conversation with Qwen3's chat template. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/strux/commands.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: strux chat [--ids] [--no-generation-prompt] [--tokenizer PATH] [--model DIR]\n"
            "                  [FILE|-]\n\n"
            "Reads a conversation -- a JSON array of {\"role\", \"content\"} messages, or an\n"
            "object with such a \"messages\" array -- from FILE or stdin and prints the prompt\n"
            "Qwen3's chat template makes of it with thinking disabled: the assistant turn is\n"
            "opened and pre-filled with \"<think>\\n\\n</think>\\n\\n\".  Roles: system, user,\n"
            "assistant, tool.\n\n"
            "  --ids                   print the prompt's token ids (one line) instead; template\n"
            "                          markers become special tokens, message text never does\n"
            "  --no-generation-prompt  render the messages only, no opened assistant turn\n"
            "  --tokenizer, --model    as for `strux tokenize` (only needed with --ids)\n\n"
            "Exit status: 0 ok, 1 bad conversation or tokenizer file, 2 usage.\n");
}

int cmd_chat(int argc, char **argv)
{
    const char *path = NULL, *model = NULL, *file = NULL;
    int want_ids = 0, gen = 1, rc = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--ids")) {
            want_ids = 1;
        } else if (!strcmp(argv[i], "--no-generation-prompt")) {
            gen = 0;
        } else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
            model = argv[++i];
        } else if ((argv[i][0] != '-' || !strcmp(argv[i], "-")) && !file) {
            file = argv[i];
        } else {
            fprintf(stderr, "strux chat: unexpected argument '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
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
