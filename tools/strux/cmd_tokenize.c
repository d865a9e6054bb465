/* strux tokenize / strux detokenize: text <-> Qwen3 token ids on stdin. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "common/sx_utf8.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"

#define MAX_INPUT ((size_t)1 << 30)


static int load(const char *cmd, const char *path, const char *model, sx_tokenizer **tok)
{
    char buf[4096];
    sx_error err;
    if (sx_tok_resolve_path(path, model, NULL, buf, sizeof buf, &err) ||
        sx_tok_load(buf, tok, &err)) {
        fprintf(stderr, "strux %s: %s\n", cmd, err.msg);
        return 1;
    }
    return 0;
}

/* A piece as a quoted string: whole UTF-8 characters as they are. */
static void print_piece(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp;
        size_t len = sx_utf8_decode((const uint8_t *)s + i, n - i, &cp);
        int whole = len > 1;
        if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c == '\r')
            fputs("\\r", stdout);
        else if (c == '\\' || c == '"')
            printf("\\%c", c);
        else if (c >= 0x20 && c < 0x7F)
            putchar(c);
        else if (whole) {
            fwrite(s + i, 1, len, stdout);
            i += len;
            continue;
        } else
            printf("\\x%02x", c);
        i++;
    }
    fputs("\"\n", stdout);
}

int cmd_tokenize(int argc, char **argv)
{
    const char *path = NULL, *model = NULL;
    unsigned flags = 0;
    int pieces = 0, rc = 1;
    int special = 0, lossy = 0;
    cli_opt opts[] = {
        {.name = "--ids", .kind = CLI_SET, .dst = &pieces, .lo = 0,
         .help = "token ids, space separated on one line (the default)"},
        {.name = "--pieces", .kind = CLI_SET, .dst = &pieces, .lo = 1,
         .help = "pieces one per line as quoted strings with \\n \\t \\r \\\\ \\\" escapes\n"
                 "and \\xNN for bytes that are not whole UTF-8 characters"},
        {.name = "--special", .kind = CLI_FLAG, .dst = &special,
         .help = "recognise added tokens such as <|im_end|> in the text; without it\n"
                 "they are ordinary characters, as for any document or user text"},
        {.name = "--lossy", .kind = CLI_FLAG, .dst = &lossy,
         .help = "replace invalid UTF-8 with U+FFFD instead of failing"},
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &path, .arg = "PATH",
         .help = "tokenizer.json to use; else DIR/tokenizer.json from --model;\n"
                 "else $STRUX_SHARED (or ../shared)/qwen3-tokenizer/tokenizer.json"},
        {.name = "--model", .kind = CLI_STR, .dst = &model, .arg = "DIR",
         .help = "a model directory holding tokenizer.json"},
    };
    cli_spec spec = {
        .cmd = "tokenize", .usage = "[options] < text",
        .about = "Reads all of stdin as one UTF-8 text and prints its Qwen3 token ids, space\n"
                 "separated on one line (--ids, the default), or its pieces one per line\n"
                 "(--pieces).\n",
        .after = "Exit status: 0 ok, 1 bad input or tokenizer file, 2 usage.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    flags |= (special ? SX_TOK_SPECIAL : 0) | (lossy ? SX_TOK_LOSSY : 0);
    sx_tokenizer *tok = NULL;
    char *text = NULL;
    size_t len = 0;
    sx_ids ids = {0};
    sx_error err;
    if (load("tokenize", path, model, &tok))
        return 1;
    if (sx_stream_read(stdin, MAX_INPUT, &text, &len, &err)) {
        fprintf(stderr, "strux tokenize: stdin: %s\n", err.msg);
        goto done;
    }
    int erc = sx_tok_encode(tok, text, len, flags, &ids, &err);
    if (erc == SX_EUTF8) {
        fprintf(stderr,
                "strux tokenize: stdin is not valid UTF-8 (first bad byte at offset %ld); "
                "--lossy replaces invalid bytes with U+FFFD\n",
                err.offset);
        goto done;
    } else if (erc) {
        fprintf(stderr, "strux tokenize: %s\n", err.msg);
        goto done;
    }
    for (size_t i = 0; i < ids.n; i++) {
        if (pieces) {
            size_t n;
            const char *b = sx_tok_bytes(tok, ids.v[i], &n);
            print_piece(b, n);
        } else {
            printf(i ? " %d" : "%d", (int)ids.v[i]);
        }
    }
    if (!pieces)
        putchar('\n');
    rc = fflush(stdout) ? 1 : 0;
    if (rc)
        fprintf(stderr, "strux tokenize: writing stdout: %s\n", strerror(errno));
done:
    sx_ids_free(&ids);
    free(text);
    sx_tok_free(tok);
    return rc;
}

int cmd_detokenize(int argc, char **argv)
{
    const char *path = NULL, *model = NULL;
    int rc = 1;
    cli_opt opts[] = {
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &path, .arg = "PATH",
         .help = "tokenizer.json (found as for `strux tokenize`)"},
        {.name = "--model", .kind = CLI_STR, .dst = &model, .arg = "DIR",
         .help = "a model directory holding tokenizer.json"},
    };
    cli_spec spec = {
        .cmd = "detokenize", .usage = "[--tokenizer PATH] [--model DIR] < ids",
        .about = "Reads token ids (decimal, separated by white space) from stdin and writes the\n"
                 "bytes they stand for to stdout, added tokens as their text.  The output is\n"
                 "exactly the tokens' bytes, so ids that split a character give partial UTF-8.\n",
        .after = "Exit status: 0 ok, 1 bad id or tokenizer file, 2 usage.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    sx_tokenizer *tok = NULL;
    char *text = NULL;
    size_t len = 0, count = 0;
    sx_ids ids = {0};
    sx_bytes out = {0};
    sx_error err;
    if (load("detokenize", path, model, &tok))
        return 1;
    if (sx_stream_read(stdin, MAX_INPUT, &text, &len, &err)) {
        fprintf(stderr, "strux detokenize: stdin: %s\n", err.msg);
        goto done;
    }
    for (char *p = text, *end = text + len; p < end;) {
        if (strchr(" \t\r\n\f\v", *p) && *p) {
            p++;
            continue;
        }
        char *w = p;
        while (p < end && *p && !strchr(" \t\r\n\f\v", *p))
            p++;
        if (p < end && !*p) { /* a NUL byte: binary input */
            fprintf(stderr, "strux detokenize: stdin holds a NUL byte at offset %zu; expected "
                            "decimal token ids\n", (size_t)(p - text));
            goto done;
        }
        int wl = (int)(p - w > 40 ? 40 : p - w);
        count++;
        long v = 0;
        int ok = p - w <= 10;
        for (char *q = w; ok && q < p; q++)
            ok = *q >= '0' && *q <= '9';
        if (ok) {
            errno = 0;
            v = strtol(w, NULL, 10);
            ok = errno == 0;
        }
        if (!ok) {
            fprintf(stderr, "strux detokenize: '%.*s' (item %zu) is not a token id (a decimal "
                            "number)\n", wl, w, count);
            goto done;
        }
        if (v >= sx_tok_vocab_size(tok) || !sx_tok_bytes(tok, (int32_t)v, NULL)) {
            fprintf(stderr, "strux detokenize: id %ld (item %zu) is out of range: this tokenizer "
                            "has ids 0..%d\n", v, count, (int)sx_tok_vocab_size(tok) - 1);
            goto done;
        }
        if (sx_ids_push(&ids, (int32_t)v)) {
            fprintf(stderr, "strux detokenize: out of memory\n");
            goto done;
        }
    }
    if (sx_tok_decode(tok, ids.v, ids.n, &out, &err)) {
        fprintf(stderr, "strux detokenize: %s\n", err.msg);
        goto done;
    }
    if (fwrite(out.v, 1, out.n, stdout) != out.n || fflush(stdout)) {
        fprintf(stderr, "strux detokenize: writing stdout: %s\n", strerror(errno));
        goto done;
    }
    rc = 0;
done:
    sx_bytes_free(&out);
    sx_ids_free(&ids);
    free(text);
    sx_tok_free(tok);
    return rc;
}
