/* One option table per `strux` subcommand: the table says each option's
 * spellings, the kind of value it takes (checked strictly: the whole
 * string, within a range), where the value goes and its line of help.
 * cli_parse walks argv against it and prints one-line usage errors;
 * cli_help writes --help from the same table, so the two cannot drift.
 *
 * Spellings every table accepts: "--name VALUE", "--name=VALUE", "-h" /
 * "--help", and "--" to end the options (what follows is positional).
 * The grammar options (CLI_GRAMMAR_OPTS) are one shared set, so every
 * command that compiles a schema spells them the same way. */
#ifndef STRUX_CLI_OPTS_H
#define STRUX_CLI_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "grammar/grammar.h"

typedef enum cli_kind {
    CLI_SECTION, /* no option: `help` is a heading in --help */
    CLI_FLAG,    /* no value: *(int *)dst = 1 */
    CLI_SET,     /* no value: *(int *)dst = lo (one of several flags naming a mode) */
    CLI_INT,     /* *(int *)dst, an integer in [lo, hi] */
    CLI_LONG,    /* *(long *)dst, an integer in [lo, hi] */
    CLI_U64,     /* *(unsigned long long *)dst, 0 .. 2^64-1 */
    CLI_DOUBLE,  /* *(double *)dst, a finite number in [dlo, dhi] (both 0: any) */
    CLI_FLOAT,   /* *(float *)dst, as CLI_DOUBLE */
    CLI_STR,     /* *(const char **)dst = the argument (not copied) */
    CLI_ENUM,    /* *(int *)dst = index of the value in `choices` */
    CLI_FN,      /* fn(dst, value, why): a value of its own kind */
    CLI_LIST,    /* repeatable: appended to *(cli_list *)dst (at most its cap) */
} cli_kind;

/* The values of a repeatable option, in order; v (cap entries) is the
 * caller's. */
typedef struct cli_list {
    const char **v;
    int n, cap;
} cli_list;

/* A CLI_FN parser: 0 and the value stored through dst, or nonzero with
 * `why` (the rest of "--opt: "VALUE" ...", e.g. "is not K/N") filled. */
typedef int (*cli_fn)(void *dst, const char *val, char *why, size_t why_cap);

typedef struct cli_opt {
    const char *name;  /* "--max-ws"; NULL for a CLI_SECTION */
    const char *alias; /* another spelling ("-n") or NULL */
    cli_kind kind;
    void *dst;
    long lo, hi;                 /* CLI_INT, CLI_LONG */
    double dlo, dhi;             /* CLI_DOUBLE, CLI_FLOAT */
    const char *const *choices;  /* CLI_ENUM: NULL-terminated */
    cli_fn fn;                   /* CLI_FN */
    const char *arg;             /* the value's name in --help ("N", "FILE") */
    const char *help;            /* one line (may hold '\n' for more) */
    int seen;                    /* written by cli_parse: times given */
} cli_opt;

typedef struct cli_spec {
    const char *cmd;     /* "check": messages say "strux check: ..." */
    const char *prog;    /* another program's name ("struxd") said instead of "strux CMD", or NULL */
    const char *usage;   /* after "usage: strux CMD " (may hold '\n') */
    const char *about;   /* paragraphs between the usage line and the options, or NULL */
    const char *after;   /* text after the options (exit status ...), or NULL */
    cli_opt *opts;
    size_t n_opts;
    int max_pos;         /* positional arguments accepted; -1: any number */
} cli_spec;

enum { CLI_OK = 0, CLI_EXIT_HELP = 1, CLI_EXIT_USAGE = 2 };

/* Parses argv[1..argc-1] against s->opts.  Positional arguments go to
 * pos[] in order (pos must hold argc entries; may be NULL when max_pos is
 * 0) and their count to *n_pos.  Returns CLI_OK; CLI_EXIT_HELP after
 * writing --help to stdout (the command exits 0); CLI_EXIT_USAGE after one
 * line "strux CMD: ... (see strux CMD --help)" on stderr (exit 2). */
int cli_parse(cli_spec *s, int argc, char **argv, const char **pos, int *n_pos);

/* Writes the usage line, s->about, every option of the table with its help,
 * and s->after. */
void cli_help(FILE *f, const cli_spec *s);

/* One usage error in the shared format, for checks made after parsing
 * (options that do not combine, ...): prints "strux CMD: MSG (see strux
 * CMD --help)" and returns CLI_EXIT_USAGE. */
int cli_usage_error(const cli_spec *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Times the option named `name` was given (0 if not in the table). */
int cli_seen(const cli_spec *s, const char *name);

/* The strict number parsers behind the table, for values inside other
 * values: 0 and *out, or nonzero with `why` filled as for cli_fn. */
int cli_parse_long(const char *val, long lo, long hi, long *out, char *why, size_t why_cap);
int cli_parse_double(const char *val, double lo, double hi, double *out, char *why, size_t why_cap);
int cli_parse_u64(const char *val, unsigned long long *out, char *why, size_t why_cap);

/* --indent N: the JSON.stringify(v, null, N) layout (dst: sx_gr_opts). */
int cli_gr_indent(void *dst, const char *val, char *why, size_t why_cap);

/* The grammar options, shared by every command that compiles a schema
 * (dst: an sx_gr_opts the caller set up with sx_gr_opts_default). */
/* --escapes: the sx_gr_esc values by name, in their order */
extern const char *const cli_gr_escapes[];

#define CLI_GRAMMAR_OPTS(o)                                                                     \
    {.name = "--max-ws", .kind = CLI_INT, .dst = &(o)->max_ws, .lo = 0, .hi = 64, .arg = "N",  \
     .help = "longest whitespace run between JSON tokens (0..64, default 4; 0 = none)"},        \
    {.name = "--indent", .kind = CLI_FN, .dst = (o), .fn = cli_gr_indent, .arg = "N",          \
     .help = "the JSON.stringify(v, null, N) layout instead (N in 1..16)"},                     \
    {.name = "--escapes", .kind = CLI_ENUM, .dst = &(o)->escapes, .choices = cli_gr_escapes,   \
     .arg = "MODE",                                                                             \
     .help = "spellings of characters in strings: canonical only (default but for check) or "  \
             "any \\u escape and pair"},                                                        \
    {.name = "--property-order", .kind = CLI_FLAG, .dst = &(o)->prop_order,                    \
     .help = "object members in the order `properties` lists them"},                            \
    {.name = "--draft7", .kind = CLI_FLAG, .dst = &(o)->draft7,                                \
     .help = "draft-07 items/additionalItems (default: per $schema, else 2020-12)"}

/* what `strux --version` and `struxd --version` print */
#define STRUX_VERSION "0.1.0"

#define CLI_N(tab) (sizeof(tab) / sizeof *(tab))

#endif
