/* Shared setup for the strux subcommands: finding and loading the
 * tokenizer and the grammar vocabulary, timing. */
#ifndef STRUX_TOOL_COMMON_H
#define STRUX_TOOL_COMMON_H

#include "engine/tokenizer/tokenizer.h"
#include "grammar/vocab/vocab.h"

/* Loads the tokenizer (explicit path, model dir, or ../shared) and, if vocab
 * is non-NULL, the grammar vocabulary.  Prints "strux CMD: ..." on error. */
int tool_load(const char *cmd, const char *tok_path, const char *model_dir, sx_tokenizer **tok,
              sx_vocab **vocab);

/* 1 if DIR holds a random-weight stand-in written by `strux model random`
 * (config.json carries "strux_random_seed"). */
int tool_is_random_model(const char *dir);

/* Strict option values: the whole string must parse and lie in [lo, hi];
 * otherwise "strux CMD: OPT wants ... (got 'S')" goes to stderr and the
 * result is -1 (a usage error). */
int tool_parse_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int tool_parse_double(const char *cmd, const char *opt, const char *s, double *out);
int tool_parse_u64(const char *cmd, const char *opt, const char *s, unsigned long long *out);

/* Monotonic clock in microseconds. */
double tool_now_us(void);

#endif
