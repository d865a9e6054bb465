/* Shared setup for the strux subcommands: finding and loading the
 * tokenizer and the grammar vocabulary, timing. */
#ifndef STRUX_TOOL_COMMON_H
#define STRUX_TOOL_COMMON_H

#include <jansson.h>

#include "engine/tokenizer/tokenizer.h"
#include "grammar/vocab/vocab.h"

/* Loads the tokenizer (explicit path, model dir, or ../shared) and, if vocab
 * is non-NULL, the grammar vocabulary.  Prints "strux CMD: ..." on error. */
int tool_load(const char *cmd, const char *tok_path, const char *model_dir, sx_tokenizer **tok,
              sx_vocab **vocab);

/* 1 if DIR holds a random-weight stand-in written by `strux model random`
 * (config.json carries "strux_random_seed"). */
int tool_is_random_model(const char *dir);

/* Option values are parsed by the option tables of tools/strux/cli_opts.h. */

/* Reads the JSON Schema file at path as the server reads a request's
 * schema (sx_rpc_load_schema_json): numbers of any length are read, and
 * one whose digits a double cannot hold exactly is refused with its JSON
 * Pointer -- never cut, never "too big integer".  NULL after printing
 * "strux CMD: PATH: ..." (a file it cannot read: "strux CMD: --schema:
 * ..."); the caller owns the tree. */
json_t *tool_read_schema(const char *cmd, const char *path);

/* Monotonic clock in microseconds. */
double tool_now_us(void);

#endif
