/* strux generate --beams: the beam-search path of cmd_generate.c
 * (engine/beam.h), kept apart so the sampling path stays as it is. */
#ifndef STRUX_GEN_BEAM_CLI_H
#define STRUX_GEN_BEAM_CLI_H

#include <jansson.h>
#include "engine/beam.h"
#include "engine/tokenizer/tokenizer.h"

typedef struct gen_beam_cli_opts {
    int   beams, ret, early, max_tokens, print_ids;
    float length_penalty;
} gen_beam_cli_opts;

/* Parses --early-stopping's value (true, false, never) into an
 * sx_beam_early; -1 when it is none of them. */
int gen_beam_cli_early(const char *s);

/* Runs the search and prints every returned sequence (a header line with
 * its rank, score, sum of log-probabilities, length and finish, then the
 * text), each validated against schema when there is one; timings go to
 * stderr.  Returns the exit status: 0, or 1 when the search failed or a
 * sequence does not validate.  Borrows everything. */
int gen_beam_cli_run(sx_backend *eng, const sx_tokenizer *tok, const sx_grammar *g,
                     const json_t *schema, const int32_t *prompt, int n_prompt,
                     const gen_beam_cli_opts *o);

#endif
