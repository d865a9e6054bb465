/* sx_format: JSON Schema `format` values as full-match regexes.
 *
 * Contract of grammar/formats/ (format automata); depends on grammar/regex/
 * and common/.
 *
 * Each supported format has a regex in the dialect of grammar/regex/regex.h (to be
 * compiled with SX_RE_FULL) and, where the format also bounds the length in a
 * way a compact regex cannot express, a maximum length in code points.  A
 * string is valid iff the regex matches all of it and its length is within
 * the bound.  The regexes never accept an invalid value; where they reject a
 * valid one, `stricter` says which (the grammar may be stricter than the
 * format only where this is written down).
 *
 * Formats: date, time, date-time, duration, email, hostname, ipv4, ipv6,
 * uuid, uri, uri-reference.  All strings returned are static. */
#ifndef SX_FORMATS_H
#define SX_FORMATS_H

#include <stdint.h>

#include "common/sx_error.h"
#include "grammar/regex/regex.h"

typedef struct sx_format_info {
    const char *name;
    const char *regex;    /* full-match source */
    int32_t     max_len;  /* extra bound on the length in code points, or -1 */
    const char *stricter; /* valid values the regex rejects, or NULL if exact */
    /* a second full-match regex the value must match too, or NULL: limits
     * on a part of the value (email: the local part's 64 octets) that are
     * short to write as their own regex and long to write inside `regex`;
     * the format is regex AND within AND max_len */
    const char *within;
    /* a plausible value, used where a completion of the same length as the
     * shortest one is wanted ("2000-01-01" rather than "0001-01-01"), or NULL */
    const char *example;
    /* a full-match regex every value of `regex` matches, or NULL: intersected
     * with `within` first, it pins down where within's parts fall (email:
     * the local part ends at the last '@', which LOCAL_PART "@" [^@]* tells
     * while reading), so that within's product with `regex` does not carry
     * within's counter through the rest of the value (email: 12,962 product
     * states for the same 539-state result, 30-40 ms per schema) */
    const char *shape;
} sx_format_info;

/* *regex_src = the format's full-match regex.  SX_ENOTFOUND for a format
 * strux does not know (name may be NULL). */
int sx_format_regex(const char *name, const char **regex_src);

/* The full description; SX_ENOTFOUND for an unknown format. */
int sx_format_lookup(const char *name, const sx_format_info **info);

/* The i-th known format (i = 0, 1, ...), NULL past the end. */
const sx_format_info *sx_format_at(int i);

/* The format's automaton without its length bound: regex AND within.  The
 * caller frees *out with sx_re_free.  (max_len is applied as maxLength.) */
int sx_format_automaton(const sx_format_info *f, const sx_re_limits *lim, sx_re **out,
                        sx_error *err);

/* The exact automaton of the format: the regex and `within` intersected
 * with the length bound when there is one.  The caller frees *out with sx_re_free.  The
 * hostname automaton (labels <= 63 and total <= 253) is large; with default
 * limits this may fail with SX_ELIMIT, in which case apply max_len in the
 * matcher instead (as for maxLength). */
int sx_format_compile(const char *name, const sx_re_limits *lim, sx_re **out,
                      sx_error *err);

#endif
