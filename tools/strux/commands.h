/* The subcommands of the `strux` tool.  Each lives in cmd_<name>.c and
 * returns the process exit status: 0 ok, 1 the work failed (bad input,
 * rejected instance), 2 usage error. */
#ifndef STRUX_COMMANDS_H
#define STRUX_COMMANDS_H

typedef struct strux_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
} strux_command;

int cmd_maskbench(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_fuzzgen(int argc, char **argv);
int cmd_fuzzschema(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_call(int argc, char **argv);
int cmd_extract(int argc, char **argv);


#endif
