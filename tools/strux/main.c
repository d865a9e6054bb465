/* strux: the command-line tool.  `strux help` lists the subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nng/nng.h>

#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("strux %s\n", STRUX_VERSION);
    return 0;
}

static const strux_command commands[] = {
    {"compile", "compile a JSON Schema into a grammar; time, size, or the error", cmd_compile},
    {"check", "run an instance through the matcher (and the validator)", cmd_check},
    {"maskbench", "MaskBench: soundness and mask speed over schema files", cmd_maskbench},
    {"demo", "sample a schema-valid document with a random stand-in model", cmd_demo},
    {"fuzzgen", "soundness harness: sample many documents from masks, validate each", cmd_fuzzgen},
    {"fuzzschema", "schema fuzzer: random schemas, each compiled, masked and sampled", cmd_fuzzschema},
    {"tokenize", "text on stdin -> Qwen3 token ids (or pieces)", cmd_tokenize},
    {"detokenize", "token ids on stdin -> text", cmd_detokenize},
    {"chat", "render a conversation with Qwen3's chat template (text or ids)", cmd_chat},
    {"generate", "run Qwen3 on a prompt, optionally constrained by a schema", cmd_generate},
    {"extract", "documents -> JSON under one or more schemas, in process, batched", cmd_extract},
    {"perplexity", "sliding-window perplexity and bits per byte of a text file", cmd_perplexity},
    {"model", "write a random-weight Qwen3 model; parameters and memory of a model", cmd_model},
    {"call", "send requests to a struxd server (one, or a JSONL batch)", cmd_call},
    {"version", "print the version", cmd_version},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: strux COMMAND [options]   (strux COMMAND --help for details)\n\n"
               "strux turns documents and chats into JSON that is guaranteed to validate\n"
               "against a JSON Schema, by masking Qwen3's logits with a schema automaton.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    /* nng frees closed sockets on its own threads; finishing the library at
     * exit lets a leak checker see them freed (nng's own advice) */
    atexit(nng_fini);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        return cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "strux: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
