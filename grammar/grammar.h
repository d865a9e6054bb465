/* sx_gr / sx_matcher: JSON Schema -> token-level automaton that masks logits.
 *
 * Contract of grammar/: the schema compiler and the matcher (gr_*.c).  The
 * parts that stand alone are subfolders with contracts of their own:
 * grammar/regex/, grammar/formats/, grammar/validator/, grammar/vocab/.
 * grammar/ depends on common/, jansson and PCRE2 only, never on engine/, rpc/
 * or kernels/ (tools/check_layout.py checks it).
 *
 * A schema compiles into an sx_grammar: a graph of typed nodes (object,
 * array, string, number, literal set) that a matcher runs as a program
 * over bytes, with its own small state per open value (properties seen,
 * item count, code points in a string, the integer read so far).  The
 * matcher keeps every live interpretation at once (anyOf, type unions), as
 * persistent stacks that share their tails.
 *
 * Soundness: every node is checked for satisfiability when compiled, and a
 * byte is accepted only if some valid completion exists after it; so a
 * token is allowed only if the document can still be finished validly.
 * What cannot be enforced exactly is a compile error (SX_EUNSUPPORTED) that
 * names the keyword and its JSON Pointer -- never a looser grammar.
 *
 * Threads and ownership: an sx_vocab (grammar/vocab/vocab.h) is built once per
 * tokenizer and must outlive the grammars compiled against it.  A compiled
 * grammar is immutable and shared read-only by any number of matchers on
 * any threads; it must outlive them.  A matcher belongs to one sequence and
 * one thread at a time. */
#ifndef SX_GRAMMAR_H
#define SX_GRAMMAR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"
#include "grammar/vocab/vocab.h"

typedef struct sx_grammar sx_grammar;
typedef struct sx_matcher sx_matcher;

/* Where whitespace may appear in the document (never before or after the
 * top-level value). */
typedef enum sx_gr_ws {
    /* any run of up to max_ws bytes of ' ', '\t', '\n', '\r' between the
     * tokens inside objects and arrays (max_ws 0: none) */
    SX_WS_FLEXIBLE = 0,
    /* no whitespace at all: {"a":1,"b":[1,2]} (max_ws is not used) */
    SX_WS_COMPACT = 1,
    /* exactly the layout of JavaScript's JSON.stringify(value, null, indent):
     * a newline and `indent` spaces per nesting level before every member
     * and item, the closing bracket on its own line one level out, a
     * single space after each colon, and empty objects and arrays written
     * {} and [] (indent spaces per level, 1..16, default 2; values nest
     * at most 254/indent deep). */
    SX_WS_INDENTED = 2,
} sx_gr_ws;

/* How a character may be spelled inside strings, keys and literals -- a
 * layout choice, like whitespace: the document's value is the same. */
typedef enum sx_gr_esc {
    /* the canonical JSON spelling only (default; for generation): raw
     * UTF-8 for every character that may appear raw, the short escapes
     * \" \\ \b \f \n \r \t, and \u00xx (lowercase) for the other control
     * characters -- so a listed key or an enum/const value has one
     * spelling and is forced text.  Strings with no pattern or format
     * also take \/ and \u for any character of the BMP, as they always
     * have; no surrogate pairs anywhere. */
    SX_ESC_CANONICAL = 0,
    /* every spelling JSON allows (for checking a document someone wrote):
     * \u, upper- or lowercase, for any character, surrogate pairs for
     * those beyond the BMP, \/ -- in keys, literals and patterned strings
     * alike, each decoded before it is matched.  Numbers too: an
     * integer may then be written as any number whose value is one
     * (1e2, 1.5e1, 100e-2, 0.0e5), as JSON Schema counts it; canonical
     * integers take no exponent and no fraction digit but zeros. */
    SX_ESC_ANY = 1,
} sx_gr_esc;

typedef struct sx_gr_opts {
    int max_ws;          /* SX_WS_FLEXIBLE: longest whitespace run between JSON tokens; 0 = none */
    int ws_mode;         /* an sx_gr_ws, default SX_WS_FLEXIBLE */
    int indent;          /* SX_WS_INDENTED: spaces per nesting level (default 2) */
    /* 1: object members follow the order in which `properties` lists them
     * (optional ones may be left out; required ones may not, so they cannot
     * be skipped over), and keys that `properties` does not list (other
     * required names, patternProperties, additionalProperties) come after
     * all of the listed ones.  0 (default): members in any order.
     * An object with more than 64 names is refused in this mode. */
    int prop_order;
    int escapes;         /* an sx_gr_esc, default SX_ESC_CANONICAL */
    int draft7;          /* 1: draft-07 array items/additionalItems; else per $schema, 2020-12 */
    int max_nodes;       /* compile budget: grammar nodes (default 100000) */
    int max_depth;       /* nesting of schema subschemas while compiling (default 256) */
    int max_stack;       /* nesting of JSON values at run time (default 128) */
    /* Bounded work (the caller's request deadline and disconnects).  A
     * compile, and any shortest-completion search it or a matcher made
     * from it runs, gives up with SX_ELIMIT ("deadline" / "cancelled" in
     * the message) once deadline_ms (CLOCK_MONOTONIC, milliseconds; 0 =
     * none) has passed or *cancel (may be NULL; not owned) is nonzero.
     * Neither changes the grammar compiled, but both are kept in it: a
     * matcher made from it starts with them (sx_matcher_new), so *cancel
     * must outlive the compile and every such matcher -- or a grammar
     * shared beyond the request it was compiled for (a cache) gives each
     * of its matchers the bounds of its own request with
     * sx_matcher_set_bounds.  The compile also has a work budget of its
     * own: a schema whose grammar would need more is refused (SX_ELIMIT
     * naming the keyword's JSON Pointer), never compiled for minutes. */
    double deadline_ms;
    const volatile int *cancel;
} sx_gr_opts;

void sx_gr_opts_default(sx_gr_opts *o);

/* Compile a JSON Schema given as text or as a parsed jansson value. */
int sx_gr_compile_schema(const sx_vocab *v, const char *schema, size_t len, const sx_gr_opts *o,
                         sx_grammar **out, sx_error *err);
int sx_gr_compile_json(const sx_vocab *v, const json_t *schema, const sx_gr_opts *o,
                       sx_grammar **out, sx_error *err);
/* Any JSON value whose top level is an object (json_object mode). */
int sx_gr_compile_json_object(const sx_vocab *v, const sx_gr_opts *o, sx_grammar **out,
                              sx_error *err);
/* One of n labels, emitted as a JSON string. */
int sx_gr_compile_choices(const sx_vocab *v, const char *const *labels, size_t n,
                          const sx_gr_opts *o, sx_grammar **out, sx_error *err);
/* Regex mode: the document is raw text (not JSON) that the ECMA-262
 * pattern matches in full. */
int sx_gr_compile_regex(const sx_vocab *v, const char *pattern, size_t len, const sx_gr_opts *o,
                        sx_grammar **out, sx_error *err);
void sx_gr_free(sx_grammar *g);

/* Number of grammar nodes (a size figure for `strux compile`). */
int sx_gr_n_nodes(const sx_grammar *g);
/* Memory the compiled grammar holds, in bytes (automata included; the
 * per-state token-mask caches filled at run time are not). */
size_t sx_gr_mem_bytes(const sx_grammar *g);

int sx_matcher_new(const sx_grammar *g, sx_matcher **out, sx_error *err);
void sx_matcher_free(sx_matcher *m);
/* Back to the start of the document. */
void sx_matcher_reset(sx_matcher *m);

/* Writes the next-token bitmask: v->mask_words uint32 words, bit t set =
 * token t allowed.  End-of-turn tokens are allowed exactly when the
 * document may end here; nothing is allowed after the matcher failed.
 * Returns SX_ELIMIT, with nothing allowed, once the matcher's deadline has
 * passed or its cancel flag is set (sx_matcher_set_bounds): a mask's work
 * grows with the values a uniqueItems item must differ from, and is
 * checked against the bounds about every 1,024 vocabulary-trie nodes. */
int sx_matcher_fill_mask(sx_matcher *m, uint32_t *mask);

/* Advances by one token.  A token the mask would not allow is SX_EINVAL and
 * leaves the matcher unchanged.  Accepting an end-of-turn token marks the
 * matcher finished. */
int sx_matcher_accept(sx_matcher *m, int32_t token, sx_error *err);
/* Advances by raw bytes (for tests and forced text). */
int sx_matcher_accept_bytes(sx_matcher *m, const void *bytes, size_t n, sx_error *err);
/* Undoes the last n accepted tokens/byte-chunks. */
int sx_matcher_rollback(sx_matcher *m, size_t n);

/* 1 if the document may end here (end-of-turn would be allowed). */
int sx_matcher_can_end(const sx_matcher *m);
/* 1 if the document is complete and nothing but end-of-turn may follow. */
int sx_matcher_is_complete(const sx_matcher *m);
/* Bytes that every continuation must start with (forced text); writes up to
 * cap bytes and returns how many. */
size_t sx_matcher_forced_bytes(const sx_matcher *m, uint8_t *buf, size_t cap);
/* A short byte string that completes the document from here, built from
 * the shortest value of every node still required and verified by feeding
 * it (at most cap bytes written); returns its length, or (size_t)-1 if none
 * was found within cap. */
size_t sx_matcher_shortest_completion(const sx_matcher *m, uint8_t *buf, size_t cap);
/* The search above takes bounded work (polynomial in the schema, the
 * stack and cap) and gives up, returning (size_t)-1, once deadline_ms
 * (CLOCK_MONOTONIC ms, 0 = none) has passed or *cancel (may be NULL; not
 * owned; must outlive the matcher or the next call) is nonzero; so does
 * sx_matcher_fill_mask (SX_ELIMIT).  A new matcher takes the grammar's
 * (sx_gr_opts); this replaces them. */
void sx_matcher_set_bounds(sx_matcher *m, double deadline_ms, const volatile int *cancel);

#endif
