/* sx_numjson: a JSON reader that keeps the text of numbers, and exact
 * decimal arithmetic on that text.
 *
 * jansson holds integers as int64 and reals as doubles: an integer beyond
 * 64 bits is refused ("too big integer") and a real's decimal digits are
 * rounded.  JSON numbers have any length and JSON Schema compares them by
 * value, so a reader that must judge numbers exactly uses this one: it
 * builds the same jansson tree (objects, arrays, strings as jansson would),
 * but every real and every integer outside int64 becomes a json_real (its
 * nearest double, so code that only looks at types still works) whose
 * original text is kept in a table beside the tree.  The table is looked up
 * by the json_t pointer, so it holds exactly the numbers this reader made:
 * no ordering assumption, duplicates and all.
 *
 * Decimals are read from that text, or from a jansson number (an integer
 * exactly; a real as the shortest decimal that reads back as the same
 * double -- what its author most likely wrote): sign, digit string,
 * exponent, compared and divided exactly for any length and any exponent
 * (1e400, 1.0e-400, -0).
 *
 * Ownership: the caller owns the tree (json_decref) and the table
 * (sx_numtab_free); the table holds a reference to each of its numbers, so
 * none is freed (and its address reused) while the table lives -- a number
 * dropped from the tree by a duplicate key included. */
#ifndef SX_NUMJSON_H
#define SX_NUMJSON_H

#include <jansson.h>
#include <stddef.h>

typedef struct sx_numtext {
    const json_t *num;
    char *text;
    size_t len;
} sx_numtext;

typedef struct sx_numtab {
    sx_numtext *v; /* sorted by num after sx_numjson_loadb */
    size_t n, cap;
} sx_numtab;

/* Parses text[0..len) (any JSON value at the top, \u0000 allowed in
 * strings, nesting up to 2048).  Returns the tree, or NULL with je filled
 * as jansson would (text, line, column, position); flags: 0 (a later
 * duplicate key wins, as in jansson) or SX_NUMJSON_REJECT_DUPLICATES.  tab
 * receives the
 * numbers' text; it must be zeroed before the call. */
#define SX_NUMJSON_REJECT_DUPLICATES 1 /* a key twice in an object is an error */
json_t *sx_numjson_loadb(const char *text, size_t len, int flags, sx_numtab *tab,
                         json_error_t *je);

/* The original text of a number this reader made, else NULL. */
const char *sx_numtab_find(const sx_numtab *tab, const json_t *num, size_t *len);

void sx_numtab_free(sx_numtab *tab);

/* v written compactly (no spaces; members in their order), every number
 * that has text in t written as that text -- the digits as they were read
 * -- and everything else as jansson writes it.  malloc'd, or NULL. */
char *sx_numjson_dumps(const json_t *v, const sx_numtab *t);

/* A decimal: (-1)^neg * d[0..nd) * 10^e, digits without leading or
 * trailing zeros (nd == 0: zero; -0 is zero).  Release with sx_dec_free. */
typedef struct sx_dec {
    int neg;
    char *d; /* buf, or the heap for long numbers: sx_dec_free */
    size_t nd;
    long long e;
    char buf[40];
} sx_dec;

/* Reads a JSON number's text: 0, or -1 when it is not one (or no memory). */
int sx_dec_parse(const char *s, size_t n, sx_dec *out);
/* A jansson number (or one from tab when it is there): 0, or -1. */
int sx_dec_from_json(const sx_numtab *tab, const json_t *x, sx_dec *out);
void sx_dec_free(sx_dec *d);
int sx_dec_cmp(const sx_dec *a, const sx_dec *b); /* -1, 0, 1 */
int sx_dec_is_integer(const sx_dec *a);
/* 1 if x is an integer multiple of m (m > 0), 0 if not; -1 when m has more
 * than 36 significant digits (beyond the 128-bit remainder). */
int sx_dec_multiple_of(const sx_dec *x, const sx_dec *m);

#endif
