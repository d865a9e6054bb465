/* strux check: one instance through the matcher and the validator. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "grammar/grammar.h"
#include "grammar/validator/validator.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/tool_common.h"

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The layout the text looks written in: the spaces that start its first
 * indented line (JSON.stringify(v, null, N) puts N there), 0 if none. */
static int looks_indented(const char *text, size_t len)
{
    const char *nl = memchr(text, '\n', len);
    if (!nl)
        return 0;
    size_t k = 0;
    while (nl + 1 + k < text + len && nl[1 + k] == ' ')
        k++;
    return k >= 1 && k <= 16 ? (int)k : 0;
}

/* The matcher refused at byte `at`: when that byte is whitespace between
 * JSON tokens, prints a line naming the layout rule that refused it and the
 * option that would accept the text, so a pretty-printed instance is not
 * taken for a schema violation. */
static void ws_hint(const char *text, size_t len, size_t at, const sx_gr_opts *o)
{
    if (at >= len || !is_ws(text[at]))
        return;
    int in_str = 0;
    for (size_t i = 0; i < at; i++) {
        if (in_str && text[i] == '\\')
            i++;
        else if (text[i] == '"')
            in_str = !in_str;
    }
    if (in_str)
        return;
    size_t b = at, e = at;
    while (b > 0 && is_ws(text[b - 1]))
        b--;
    while (e < len && is_ws(text[e]))
        e++;
    size_t run = e - b, longest = 0, cur = 0;
    /* --max-ws must cover the longest run anywhere in the text, not just this one */
    in_str = 0;
    for (size_t i = 0; i < len; i++) {
        if (in_str && text[i] == '\\') {
            i++;
        } else if (text[i] == '"') {
            in_str = !in_str;
        } else if (!in_str && is_ws(text[i])) {
            if (++cur > longest)
                longest = cur;
            continue;
        }
        cur = 0;
    }
    int k = looks_indented(text, len);
    char use[96];
    if (k && !(o->ws_mode == SX_WS_INDENTED && o->indent == k))
        snprintf(use, sizeof use, "--indent %d%s", k, longest <= 64 ? " or --max-ws " : "");
    else
        use[0] = '\0';
    if (longest <= 64)
        snprintf(use + strlen(use), sizeof use - strlen(use), "%s%zu",
                 use[0] ? "" : "--max-ws ", longest);
    else if (!use[0])
        return; /* no layout accepts it: the refusal is the rule, nothing to suggest */
    if (o->ws_mode == SX_WS_INDENTED)
        printf("layout:    whitespace run of %zu at byte %zu is not the --indent %d layout "
               "(JSON.stringify(v, null, %d)); use %s\n", run, b, o->indent, o->indent, use);
    else if (o->ws_mode == SX_WS_COMPACT || (size_t)o->max_ws < run)
        printf("layout:    whitespace run of %zu > --max-ws %d at byte %zu; use %s\n", run,
               o->ws_mode == SX_WS_COMPACT ? 0 : o->max_ws, b, use);
}

int cmd_check(int argc, char **argv)
{
    const char *schema_path = NULL, *inst_path = NULL, *tok_path = NULL;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    /* a document someone wrote may spell a character any way JSON allows
     * (--escapes canonical: as generation writes it) */
    o.escapes = SX_ESC_ANY;
    cli_opt opts[] = {
        {.name = "--schema", .kind = CLI_STR, .dst = &schema_path, .arg = "FILE",
         .help = "the JSON Schema (required)"},
        CLI_GRAMMAR_OPTS(&o),
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &tok_path, .arg = "PATH",
         .help = "tokenizer.json (default: from ../shared)"},
    };
    cli_spec spec = {
        .cmd = "check", .usage = "--schema FILE [options] INSTANCE.json",
        .about = "Tokenizes the instance text as it is and feeds it token by token to the\n"
                 "schema's matcher (a full mask before every token), then validates it with the\n"
                 "independent validator.  Says whether each accepts it and, if the matcher\n"
                 "refused, at which token and byte; a refusal at whitespace names the layout\n"
                 "rule (--max-ws, --indent) and the option that accepts the text.\n",
        .after = "Exit status: 0 both accept, 1 either rejects or an error, 2 usage.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 1,
    };
    int np = 0, prc = cli_parse(&spec, argc, argv, &inst_path, &np);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    if (!schema_path || !inst_path)
        return cli_usage_error(&spec, "needs --schema FILE and INSTANCE.json");
    sx_error err;
    sx_err_clear(&err);
    char *text = NULL;
    size_t len = 0;
    json_t *schema = tool_read_schema("check", schema_path);
    if (!schema)
        return 1;
    if (sx_file_read(inst_path, &text, &len, &err)) {
        fprintf(stderr, "strux check: %s\n", err.msg);
        json_decref(schema);
        return 1;
    }
    /* a trailing newline from an editor is not part of the document */
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        text[--len] = '\0';
    sx_tokenizer *tok;
    sx_vocab *v;
    if (tool_load("check", tok_path, NULL, &tok, &v)) {
        free(text);
        json_decref(schema);
        return 1;
    }
    int matcher_ok = 0, validator_ok = 0, rc;
    sx_grammar *g = NULL;
    sx_matcher *m = NULL;
    sx_ids ids = {0};
    uint32_t *mask = malloc((size_t)v->mask_words * sizeof *mask);
    if ((rc = sx_gr_compile_json(v, schema, &o, &g, &err)) || (rc = sx_matcher_new(g, &m, &err))) {
        printf("matcher:   schema not compiled: %s\n", err.msg);
    } else if ((rc = sx_tok_encode(tok, text, len, 0, &ids, &err))) {
        printf("matcher:   instance not tokenized: %s\n", err.msg);
    } else {
        size_t k, at = 0;
        for (k = 0; k <= ids.n; k++) {
            sx_matcher_fill_mask(m, mask);
            int32_t want = k < ids.n ? ids.v[k] : v->eos[0];
            if (!(mask[want >> 5] >> (want & 31) & 1))
                break;
            if (k < ids.n) {
                sx_matcher_accept(m, want, NULL);
                at += v->tok_len[want];
            }
        }
        matcher_ok = k > ids.n;
        if (matcher_ok) {
            printf("matcher:   accepts (%zu tokens)\n", ids.n);
        } else if (k == ids.n) {
            printf("matcher:   rejects: the document is incomplete at the end (byte %zu)\n", at);
        } else {
            size_t tl;
            const char *tb = sx_tok_bytes(tok, ids.v[k], &tl);
            printf("matcher:   rejects token %zu of %zu (id %d, '%.*s') at byte %zu: ...%.*s<here>\n",
                   k, ids.n, ids.v[k], (int)tl, tb ? tb : "", at, (int)(at < 40 ? at : 40),
                   text + (at < 40 ? 0 : at - 40));
            ws_hint(text, len, at, &o);
        }
    }
    /* the instance as text: its numbers are judged on their digits */
    sx_validator *val = NULL;
    int vrc;
    if (sx_val_compile(schema, NULL, &val, &err)) {
        printf("validator: schema not compiled: %s\n", err.msg);
    } else if ((vrc = sx_val_validate_text(val, text, len, &validator_ok, &err))) {
        printf("validator: %s%s\n", vrc == SX_EFORMAT ? "not JSON: " : "error: ", err.msg);
    } else if (validator_ok) {
        printf("validator: accepts\n");
    } else {
        printf("validator: rejects: %s%s%s\n", err.msg, err.pointer[0] ? " at " : "", err.pointer);
    }
    sx_val_free(val);
    free(mask);
    sx_ids_free(&ids);
    sx_matcher_free(m);
    sx_gr_free(g);
    sx_vocab_free(v);
    sx_tok_free(tok);
    free(text);
    json_decref(schema);
    return matcher_ok && validator_ok ? 0 : 1;
}
