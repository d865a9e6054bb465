/* sx_re: ECMA-262 regular expressions compiled to a minimal DFA over UTF-8 bytes.
 *
 * Contract of grammar/regex/ (parser, NFA, subset construction, minimisation,
 * Unicode tables: regex_*.c); depends on common/ only.
 *
 * The token-level matcher walks a token trie byte by byte, so the automaton
 * is byte-level: one step is one table lookup.  Semantics are those of an
 * ECMA-262 RegExp in Unicode mode without flags (what JSON Schema `pattern`
 * and `format` use), evaluated over the code points of a string; the DFA
 * consumes their UTF-8 encoding and never accepts a byte string that is not
 * valid UTF-8 or that encodes a surrogate.
 *
 * Supported: literals and escapes (\n \t \r \f \v \0 \cX \xHH \uXXXX, surrogate
 * pairs as two \u escapes, \u{X...}, identity escapes of punctuation),
 * classes with ranges and negation, \d \D \w \W \s \S, `.`, \p{..} / \P{..}
 * for General_Category values (short or long names, optional gc= or
 * General_Category=) and Any / ASCII / Assigned, groups (capturing,
 * (?:..), (?<name>..)), alternation, greedy and lazy quantifiers, and the
 * assertions ^ $ \b \B.  Lookaround, backreferences, scripts and other
 * Unicode properties, and inline modifiers are refused with SX_EUNSUPPORTED
 * naming the construct and its byte offset; syntax errors are SX_EFORMAT
 * with the offset.  Annex B leniencies that have one obvious meaning are
 * accepted: a literal `{` `}` `]` where no quantifier/class can start, and
 * a class escape at a range end (`[\w-.]` means \w, '-' and '.').
 *
 * The automaton (DFA):
 *   - states are 0 .. sx_re_n_states()-1; the start state is sx_re_start();
 *   - -1 is the dead state: sx_re_step returns -1 when no continuation of
 *     the bytes read so far can be accepted;
 *   - every state can reach an accepting state (dead states are removed);
 *     so a state that is not -1 always has a valid completion;
 *   - the DFA is minimal; state numbering is breadth-first from the start.
 * The empty language is the DFA with 0 states and start -1.
 *
 * Thread safety: a compiled sx_re is immutable; any number of threads may
 * read it concurrently.  Compilation is reentrant. */
#ifndef SX_REGEX_H
#define SX_REGEX_H

#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"

typedef struct sx_re sx_re;

typedef enum sx_re_mode {
    /* JSON Schema `pattern`: the string is accepted if the regex matches
     * anywhere in it; ^ and $ anchor to the string's start and end. */
    SX_RE_SEARCH = 0,
    /* the whole string must match (format regexes, enums of keys). */
    SX_RE_FULL = 1
} sx_re_mode;

/* Budgets: exceeding any of them fails with SX_ELIMIT, never a hang.
 * A zero field means "use the default". */
typedef struct sx_re_limits {
    size_t   max_pattern; /* pattern bytes; default 16384 */
    size_t   max_nfa;     /* NFA states after expanding counted repetition;
                             default 100000 */
    size_t   max_states;  /* DFA states, both the code-point DFA and the final
                             byte DFA; default 20000 */
    uint64_t max_work;    /* abstract work units of the subset construction,
                             UTF-8 expansion and minimisation; default 8e6
                             (a few tens of milliseconds at most; the largest
                             MaskBench pattern needs 2e6) */
} sx_re_limits;

/* Fills *lim with the defaults. */
void sx_re_limits_default(sx_re_limits *lim);

/* Compiles pattern[0..len) (UTF-8; NULs allowed).  lim may be NULL.  On
 * success *out receives a new automaton the caller frees with sx_re_free;
 * on failure *out is NULL and err (may be NULL) says why, with err->offset
 * the byte offset in the pattern where that applies. */
int sx_re_compile(const char *pattern, size_t len, sx_re_mode mode,
                  const sx_re_limits *lim, sx_re **out, sx_error *err);

/* The DFA accepting exactly the n given strings (full match; each must be
 * valid UTF-8 without surrogates, else SX_EUTF8 with err->offset the byte
 * offset within that string and the string's index in the message).  lens
 * may be NULL for NUL-terminated strings.  n == 0 gives the empty language.
 * The caller frees *out with sx_re_free. */
int sx_re_from_literals(const char *const *strs, const size_t *lens, size_t n,
                        const sx_re_limits *lim, sx_re **out, sx_error *err);

/* The DFA for the intersection of a and b (strings both accept), minimal and
 * without dead states.  Neither input is modified or consumed; the caller
 * frees *out.  Fails with SX_ELIMIT past lim->max_states / max_work. */
int sx_re_intersect(const sx_re *a, const sx_re *b, const sx_re_limits *lim,
                    sx_re **out, sx_error *err);

/* The DFA for the difference a \ b (strings a accepts and b does not),
 * minimal and without dead states; as sx_re_intersect otherwise.  With a
 * = any string and b a set of literals this is "none of these strings". */
int sx_re_minus(const sx_re *a, const sx_re *b, const sx_re_limits *lim, sx_re **out,
                sx_error *err);

/* Bytes the automaton holds. */
size_t sx_re_mem_bytes(const sx_re *re);

/* Frees re (NULL is allowed). */
void sx_re_free(sx_re *re);

/* Start state, or -1 when the language is empty. */
int32_t sx_re_start(const sx_re *re);

/* Number of states. */
int32_t sx_re_n_states(const sx_re *re);

/* 1 if no string is accepted. */
int sx_re_is_empty(const sx_re *re);

/* Next state after `byte`, -1 when dead.  A state < 0 stays -1. */
int32_t sx_re_step(const sx_re *re, int32_t state, uint8_t byte);

/* 1 if state accepts (the bytes read so far are a match), else 0. */
int sx_re_is_accepting(const sx_re *re, int32_t state);

/* Runs the whole string through the DFA: 1 if it is accepted. */
int sx_re_matches(const sx_re *re, const char *s, size_t len);

/* Fewest bytes / code points that lead from state to acceptance (0 for an
 * accepting state); -1 for an invalid state.  Code points are counted as the
 * bytes that start one (not 10xxxxxx), so from a state in the middle of a
 * multi-byte character the pending continuation bytes count 0. */
int32_t sx_re_min_bytes(const sx_re *re, int32_t state);
int32_t sx_re_min_cps(const sx_re *re, int32_t state);

/* 1 if accepted continuations from state can be arbitrarily long (a cycle is
 * reachable), 0 if they are bounded, -1 for an invalid state. */
int sx_re_is_unbounded(const sx_re *re, int32_t state);

/* Achievable code-point lengths: sets bit k of bits (bits[k/64] >> k%64) iff
 * some continuation of exactly k code points (counted as in sx_re_min_cps)
 * leads from state to acceptance, for k = 0 .. max_len.  bits must hold
 * max_len/64 + 1 words; they are all written.  Cost is about
 * max_len x (states) x (classes) in the worst case.  SX_EINVAL for an
 * invalid state, SX_ENOMEM. */
int sx_re_cp_lengths(const sx_re *re, int32_t state, uint32_t max_len,
                     uint64_t *bits);

/* A read-only view of the transition table, for matchers that inline the
 * step.  The pointers stay valid while re lives.
 *   next state = next[state * n_classes + byte_class[byte]]   (-1 = dead)
 * class_starts_cp[c] is 1 when the bytes of class c start a code point. */
typedef struct sx_re_table {
    int32_t        n_states;
    int32_t        n_classes;
    int32_t        start;
    const uint8_t *byte_class;      /* 256 entries */
    const int32_t *next;            /* n_states * n_classes */
    const uint8_t *accept;          /* n_states */
    const uint8_t *class_starts_cp; /* n_classes */
} sx_re_table;

void sx_re_get_table(const sx_re *re, sx_re_table *t);

static inline int32_t sx_re_table_step(const sx_re_table *t, int32_t state,
                                       uint8_t byte)
{
    return state < 0 ? -1
                     : t->next[(size_t)state * (size_t)t->n_classes + t->byte_class[byte]];
}

#endif
