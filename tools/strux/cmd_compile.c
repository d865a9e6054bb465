/* strux compile: compile a schema, report time and size or the error. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/tool_common.h"

int cmd_compile(int argc, char **argv)
{
    const char *schema_path = NULL, *tok_path = NULL;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    cli_opt opts[] = {
        {.name = "--schema", .kind = CLI_STR, .dst = &schema_path, .arg = "FILE",
         .help = "the JSON Schema (required)"},
        CLI_GRAMMAR_OPTS(&o),
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &tok_path, .arg = "PATH",
         .help = "tokenizer.json (default: from ../shared)"},
    };
    cli_spec spec = {
        .cmd = "compile", .usage = "--schema FILE [options]",
        .about = "Compiles a JSON Schema into strux's token-level grammar and prints the compile\n"
                 "time, the time to the first mask and the grammar's size.  A schema strux cannot\n"
                 "enforce exactly is an error naming the keyword and its JSON Pointer.\n",
        .after = "Exit status: 0 compiled, 1 not compiled (the error is printed), 2 usage.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    if (!schema_path)
        return cli_usage_error(&spec, "needs --schema FILE");
    json_t *schema = tool_read_schema("compile", schema_path);
    if (!schema)
        return 1;
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
