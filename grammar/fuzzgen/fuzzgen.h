/* sx_fg: the guarantee tested from the generating side.
 *
 * Contract of grammar/fuzzgen/; uses grammar/ (the matcher), grammar/vocab/
 * and grammar/validator/ (the independent verdict), nothing else.
 *
 * MaskBench shows the grammar accepts valid instances and rejects invalid
 * ones; it cannot show that everything the grammar lets a sampler write is
 * valid.  This walks the masks with a random chooser standing in for the
 * model -- uniform over the allowed tokens, or biased to drive strings and
 * numbers long, nest deep, take every optional member and item, or stop at
 * a tiny budget so that the shortest completion closes the document -- and
 * has the validator judge every document.  Any document it refuses is a
 * soundness bug of the grammar (or of the validator): never noise.
 *
 * A document ends when the chooser picks end-of-turn (allowed only where
 * the document may end), or when its token budget is spent: then the
 * matcher's shortest completion is fed as bytes, as the generator does when
 * it closes a document at max_tokens.
 *
 * Documents are parsed as the server's re-check parses them: duplicate keys
 * refused, \u0000 allowed, integers beyond int64 read as reals.
 *
 * Threads and ownership: sx_fg_run uses one matcher of its own; the grammar,
 * validator and vocabulary are only read, so runs on one grammar may go on
 * in several threads.  Nothing returned needs freeing except the document
 * buffer of sx_fg_sample (malloc'd, the caller frees it). */
#ifndef SX_FUZZGEN_H
#define SX_FUZZGEN_H

#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"
#include "grammar/grammar.h"
#include "grammar/validator/validator.h"
#include "grammar/vocab/vocab.h"

typedef enum sx_fg_mode {
    SX_FG_UNIFORM = 0, /* uniform over the allowed tokens; ends early now and then */
    SX_FG_LONG,        /* long tokens that keep a string or number open */
    SX_FG_DEEP,        /* tokens that open objects and arrays */
    SX_FG_WIDE,        /* tokens that add members and items (every optional branch) */
    SX_FG_EDGE,        /* a budget of 0..max_tokens/4 tokens, then the shortest completion */
    SX_FG_MIXED,       /* document i uses mode i % SX_FG_MIXED */
} sx_fg_mode;

/* "uniform", "long", ...; NULL for an unknown mode.  sx_fg_mode_parse
 * returns -1 for an unknown name. */
const char *sx_fg_mode_name(int mode);
int sx_fg_mode_parse(const char *name);

typedef struct sx_fg_opts {
    int      mode;       /* an sx_fg_mode (default SX_FG_MIXED) */
    int      max_tokens; /* budget of one document (default 64; 0: the shortest completion alone) */
    uint64_t seed;       /* document i of a run is a function of (seed, i) only */
    int      threads;    /* sx_fg_run: documents spread over this many threads (default 1) */
} sx_fg_opts;

void sx_fg_opts_default(sx_fg_opts *o);

/* What became of one document. */
typedef enum sx_fg_verdict {
    SX_FG_VALID = 0,
    SX_FG_INVALID,       /* the validator refused it: a soundness bug */
    SX_FG_NOT_JSON,      /* the grammar let through text that is not JSON (or has duplicate keys) */
    SX_FG_STUCK,         /* an empty mask before the document could end */
    SX_FG_NO_COMPLETION, /* no shortest completion, or one that did not complete */
    SX_FG_NO_VERDICT,    /* the validator could not decide (nesting, regex budget) */
} sx_fg_verdict;

const char *sx_fg_verdict_name(int verdict);

typedef struct sx_fg_doc {
    int  verdict;   /* an sx_fg_verdict */
    int  tokens;    /* tokens chosen from masks */
    int  closed;    /* 1 when the shortest completion ended it */
    char why[512];  /* the validator's (or parser's) reason when not valid */
} sx_fg_doc;

/* Samples document `index` of a run with the matcher m (reset first) and
 * judges it with val.  *doc (malloc'd, NUL-terminated, *len bytes without the
 * NUL) is the text.  A non-zero return is a failure of the harness itself
 * (out of memory, a matcher that refused an allowed token). */
int sx_fg_sample(sx_matcher *m, const sx_vocab *v, const sx_validator *val, const sx_fg_opts *o,
                 uint64_t index, char **doc, size_t *len, sx_fg_doc *info, sx_error *err);

typedef struct sx_fg_stats {
    long   docs;
    long   by_verdict[SX_FG_NO_VERDICT + 1];
    long   closed;  /* documents ended by the shortest completion */
    long   tokens;
    double seconds;
} sx_fg_stats;

/* Called for every document (when non-NULL); a non-zero return stops the
 * run.  doc is valid only during the call.  With several threads the calls
 * never overlap (they hold the run's lock) but come in no fixed order. */
typedef int (*sx_fg_doc_fn)(void *ctx, uint64_t index, const char *doc, size_t len,
                            const sx_fg_doc *info);

/* Samples documents 0..count-1 and adds them up in *st (which the caller
 * zeroes); thread t of o->threads takes documents t, t + threads, ... with a
 * matcher of its own.  Stops early after time_limit_s seconds when that is
 * > 0.  st->seconds is wall time. */
int sx_fg_run(const sx_grammar *g, const sx_vocab *v, const sx_validator *val,
              const sx_fg_opts *o, long count, double time_limit_s, sx_fg_doc_fn each, void *ctx,
              sx_fg_stats *st, sx_error *err);

#endif
