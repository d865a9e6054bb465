/* strux compile: compile a schema, report time and size or the error. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "tools/strux/commands.h"
#include "tools/strux/tool_common.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: strux compile --schema FILE [--max-ws N | --indent N] [--property-order]\n"
               "                      [--tokenizer PATH]\n\n"
               "Compiles a JSON Schema into strux's token-level grammar and prints the compile\n"
               "time, the time to the first mask and the grammar's size.  A schema strux cannot\n"
               "enforce exactly is an error naming the keyword and its JSON Pointer.\n"
               "Exit status: 0 compiled, 1 not compiled (the error is printed), 2 usage.\n");
}

int cmd_compile(int argc, char **argv)
{
    const char *schema_path = NULL, *tok_path = NULL;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--schema") && i + 1 < argc) {
            schema_path = argv[++i];
        } else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) {
            tok_path = argv[++i];
        } else if (!strcmp(argv[i], "--max-ws") && i + 1 < argc) {
            o.max_ws = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--property-order")) {
            o.prop_order = 1;
        } else if (!strcmp(argv[i], "--indent") && i + 1 < argc) {
            /* the JSON.stringify(v, null, N) layout */
            o.ws_mode = SX_WS_INDENTED;
            o.indent = atoi(argv[++i]);
            if (o.indent < 1 || o.indent > 16) {
                fprintf(stderr, "strux compile: --indent must be 1..16\n");
                return 2;
            }
        } else {
            fprintf(stderr, "strux compile: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!schema_path) {
        usage(stderr);
        return 2;
    }
    json_error_t je;
    json_t *schema = json_load_file(schema_path, JSON_DECODE_ANY, &je);
    if (!schema) {
        fprintf(stderr, "strux compile: %s: line %d column %d: %s\n", schema_path, je.line,
                je.column, je.text);
        return 1;
    }
    sx_tokenizer *tok;
    sx_vocab *v;
    double t0 = tool_now_us();
    if (tool_load("compile", tok_path, NULL, &tok, &v)) {
        json_decref(schema);
        return 1;
    }
    double t1 = tool_now_us();
    sx_grammar *g = NULL;
    sx_matcher *m = NULL;
    sx_error err;
    sx_err_clear(&err);
    int rc = sx_gr_compile_json(v, schema, &o, &g, &err);
    double t2 = tool_now_us();
    if (rc) {
        fprintf(stderr, "strux compile: %s: %s\n", schema_path, err.msg);
        if (err.pointer[0])
            fprintf(stderr, "  at JSON Pointer: %s\n", err.pointer);
    } else {
        uint32_t *mask = malloc((size_t)v->mask_words * sizeof *mask);
        rc = sx_matcher_new(g, &m, &err);
        if (!rc && mask) {
            sx_matcher_fill_mask(m, mask);
            double t3 = tool_now_us();
            long allowed = 0;
            for (int32_t w = 0; w < v->mask_words; w++)
                allowed += __builtin_popcount(mask[w]);
            printf("compiled %s\n  compile: %.0f us\n  first mask: %.0f us (%ld tokens allowed)\n"
                   "  grammar: %d nodes, %.1f KiB\n  tokenizer + vocabulary load: %.0f ms (once per "
                   "process)\n",
                   schema_path, t2 - t1, t3 - t2, allowed, sx_gr_n_nodes(g),
                   (double)sx_gr_mem_bytes(g) / 1024.0, (t1 - t0) / 1000);
        }
        free(mask);
    }
    sx_matcher_free(m);
    sx_gr_free(g);
    sx_vocab_free(v);
    sx_tok_free(tok);
    json_decref(schema);
    return rc ? 1 : 0;
}
