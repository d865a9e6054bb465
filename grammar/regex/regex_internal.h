/* Internals of the regex compiler (grammar/regex_*.c); not for other modules.
 *
 * Pipeline:  pattern --parse--> AST (code-point sets)
 *   --alpha--> partition of the code points into classes
 *   --nfa-->   Thompson NFA whose edges are set ids
 *   --subset-> code-point DFA over the classes (sparse rows)
 *   --min-->   minimal code-point DFA without dead states
 *   --utf8-->  byte DFA (hash-consed continuation nodes: already minimal)
 *   --finish-> sx_re: byte classes, dense table, per-state metadata. */
#ifndef SX_REGEX_INTERNAL_H
#define SX_REGEX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"
#include "grammar/regex/regex.h"

#define SX_RX_MAX_CP 0x10FFFFu

/* ---- code-point sets (regex_cset.c) ------------------------------------ */

/* Ranges r[2i]..r[2i+1] inclusive.  "Normal" = sorted, disjoint, not
 * adjacent.  Owned by whoever holds the struct; free with sx_rx_cset_free. */
typedef struct sx_rx_cset {
    uint32_t *r;
    int32_t   n;   /* number of ranges */
    int32_t   cap; /* ranges allocated */
} sx_rx_cset;

int  sx_rx_cset_add(sx_rx_cset *s, uint32_t lo, uint32_t hi);
int  sx_rx_cset_add_set(sx_rx_cset *s, const sx_rx_cset *o);
void sx_rx_cset_normalize(sx_rx_cset *s);
/* Complement within [0, 0x10FFFF]; s must be normal. */
int  sx_rx_cset_negate(sx_rx_cset *s);
/* Removes U+D800..U+DFFF; s must be normal. */
int  sx_rx_cset_remove_surrogates(sx_rx_cset *s);
int  sx_rx_cset_equal(const sx_rx_cset *a, const sx_rx_cset *b);
int  sx_rx_cset_has(const sx_rx_cset *s, uint32_t cp);
void sx_rx_cset_free(sx_rx_cset *s);

/* The fixed sets of ECMA-262 (normal, surrogate-free). */
int sx_rx_cset_digit(sx_rx_cset *s); /* \d */
int sx_rx_cset_word(sx_rx_cset *s);  /* \w */
int sx_rx_cset_space(sx_rx_cset *s); /* \s */
int sx_rx_cset_dot(sx_rx_cset *s);   /* . */
int sx_rx_cset_any(sx_rx_cset *s);   /* every scalar value */

/* ---- Unicode properties (regex_unicode.c) ------------------------------ */

/* Adds the code points of \p{name} to out (not normalised).  Returns
 * SX_EUNSUPPORTED for scripts, other properties and unknown names (with a
 * reason in *why), SX_ENOMEM. */
int sx_rx_unicode_property(const char *name, size_t len, sx_rx_cset *out,
                           const char **why);

/* ---- AST (regex_parse.c, regex_ast.c) --------------------------------- */

enum { SX_RX_EMPTY, SX_RX_SET, SX_RX_CAT, SX_RX_ALT, SX_RX_REP, SX_RX_ASSERT };
enum { SX_RX_BOL, SX_RX_EOL, SX_RX_WB, SX_RX_NWB };

typedef struct sx_rx_node {
    uint8_t kind;
    uint8_t assert_kind;
    int32_t set;   /* SET: set id */
    int32_t min;   /* REP */
    int32_t max;   /* REP: -1 = unbounded */
    int32_t child; /* CAT/ALT: first child; REP: the body */
    int32_t last;  /* CAT/ALT: last child */
    int32_t next;  /* next sibling */
} sx_rx_node;

typedef struct sx_rx_ast {
    sx_rx_node *nodes;
    int32_t     n_nodes, cap_nodes;
    sx_rx_cset *sets; /* interned: normal and surrogate-free */
    int32_t     n_sets, cap_sets;
    int32_t    *set_hash; /* open addressing over set ids, -1 = empty */
    int32_t     set_hash_cap;
    int32_t     root;
    int         has_wb; /* \b or \B present */
} sx_rx_ast;

void    sx_rx_ast_init(sx_rx_ast *a);
void    sx_rx_ast_free(sx_rx_ast *a);
/* New node of kind; returns its id or -1 (ENOMEM). */
int32_t sx_rx_ast_node(sx_rx_ast *a, int kind);
/* Appends child to a CAT/ALT node. */
void    sx_rx_ast_append(sx_rx_ast *a, int32_t parent, int32_t child);
/* Interns *s (normalised and surrogate-stripped here); ownership of s's
 * buffer passes to the AST either way.  Returns the set id or -1. */
int32_t sx_rx_ast_set(sx_rx_ast *a, sx_rx_cset *s);
/* Estimated NFA states of node, saturating just above cap. */
uint64_t sx_rx_ast_size(const sx_rx_ast *a, int32_t node, uint64_t cap);

int sx_rx_parse(const char *pat, size_t len, sx_rx_ast *ast, sx_error *err);

/* ---- alphabet partition (regex_alpha.c) ------------------------------- */

/* The valid code points split into classes such that each set is a union of
 * classes.  Elementary intervals are sorted and cover every scalar value. */
typedef struct sx_rx_alpha {
    int32_t   n_classes;
    int32_t   n_iv;
    uint32_t *iv_lo, *iv_hi;
    int32_t  *iv_class;
    int32_t   n_sets;
    int32_t  *set_start; /* n_sets + 1: classes of set i are */
    int32_t  *set_cls;   /*   set_cls[set_start[i] .. set_start[i+1]) */
    uint8_t  *class_word; /* n_classes: 1 if a \w class (when asked for) */
} sx_rx_alpha;

/* word_set: index of the \w set among sets, or -1. */
int  sx_rx_alpha_build(const sx_rx_cset *sets, int32_t n_sets, int32_t word_set,
                       uint64_t *work, uint64_t max_work, sx_rx_alpha *out,
                       sx_error *err);
void sx_rx_alpha_free(sx_rx_alpha *a);

/* ---- NFA (regex_nfa.c) ------------------------------------------------- */

enum { SX_RX_N_EPS, SX_RX_N_SET, SX_RX_N_ASSERT, SX_RX_N_MATCH };

typedef struct sx_rx_nfa {
    int32_t  n, cap;
    uint8_t *kind;
    int32_t *arg; /* SET: set id; ASSERT: SX_RX_BOL... */
    int32_t *out1, *out2;
    int32_t  start;
    int32_t  accept_all; /* SEARCH: the post-match loop (its language is
                            every string), else -1 */
    int      has_eol, has_wb;
} sx_rx_nfa;

/* sigma_set: id of the all-scalars set (used by SEARCH mode). */
int  sx_rx_nfa_build(const sx_rx_ast *ast, sx_re_mode mode, int32_t sigma_set,
                     size_t max_nfa, sx_rx_nfa *out, sx_error *err);
void sx_rx_nfa_free(sx_rx_nfa *n);

/* ---- sparse DFA, shared by the subset construction, minimisation,
 *      UTF-8 expansion and intersection ------------------------------------ */

typedef struct sx_rx_sdfa {
    int32_t  n;       /* states */
    int32_t  start;   /* -1 = empty language */
    int32_t  n_labels;
    uint8_t *accept;  /* n */
    int32_t *row;     /* n + 1: transitions of s are [row[s], row[s+1]) */
    int32_t *lab;     /* label of each transition (distinct within a row) */
    int32_t *dst;
    int32_t  n_trans, cap_trans;
} sx_rx_sdfa;

void sx_rx_sdfa_free(sx_rx_sdfa *d);

/* regex_subset.c: NFA -> code-point DFA (labels = classes). */
int sx_rx_subset(const sx_rx_nfa *nfa, const sx_rx_alpha *al,
                 const sx_re_limits *lim, uint64_t *work, sx_rx_sdfa *out,
                 sx_error *err);

/* regex_min.c: removes unreachable and dead states, then merges equivalent
 * states (Valmari-Lehtinen partition refinement, O(m log n)); in place. */
int sx_rx_minimise(sx_rx_sdfa *d, uint64_t *work, uint64_t max_work,
                   sx_error *err);

/* regex_utf8.c: minimal live code-point DFA -> minimal live byte DFA
 * (labels = bytes). */
int sx_rx_utf8_expand(const sx_rx_sdfa *cp, const sx_rx_alpha *al,
                      const sx_re_limits *lim, uint64_t *work, sx_rx_sdfa *out,
                      sx_error *err);

/* regex_dfa.c: builds the public automaton from a minimal live DFA whose
 * labels are mapped from bytes by label_of[256] (-1 = byte never used). */
int sx_rx_finish(const sx_rx_sdfa *d, const int32_t *label_of, sx_re **out,
                 sx_error *err);

/* The resolved limits (defaults filled in). */
void sx_rx_limits(const sx_re_limits *in, sx_re_limits *out);

/* Public struct, shared by regex_dfa.c and regex_api.c. */
struct sx_re {
    int32_t  n_states;
    int32_t  n_classes;
    int32_t  start;
    uint8_t  byte_class[256];
    int32_t *next;       /* n_states * n_classes */
    uint8_t *accept;
    uint8_t *class_starts_cp;
    int32_t *min_bytes;
    int32_t *min_cps;
    uint8_t *unbounded;
};

static inline int sx_rx_is_cont(uint32_t b) { return (b & 0xC0u) == 0x80u; }

/* regex_look.c: a search pattern that opens with ^(?!A) or ^(?=A), or ends
 * with (?=Y), compiled as the set operation it is (*handled = 1, the result
 * in *out as from sx_re_compile); *handled = 0 for any other pattern. */
int sx_rx_lookahead(const char *p, size_t len, sx_re_mode mode, const sx_re_limits *lim,
                    sx_re **out, sx_error *err, int *handled);

#endif
