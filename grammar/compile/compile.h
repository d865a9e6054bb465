/* The schema compiler's insides (grammar/compile/): JSON Schema -> the
 * compiled grammar of grammar/ir/ir.h, which it writes and the matcher
 * then only reads.
 *
 * Exports, to the compiler's files only: the compile context (gc_ctx) with
 * its error and JSON Pointer helpers (gr_compile.c), the schema walker
 * (gr_schema.c), the rewrites -- merge, if/then, not-forms, dependencies,
 * oneOf, patterns, finite sets, memo -- string and key automata
 * construction (gr_strx.c, gr_keyauto.c), the analysis, the uniqueItems
 * check and the witness pass (gr_analyse.c, gr_unique_check.c,
 * gr_witness.c).  Nothing here is the matcher's: the queries both sides
 * need are in ir/. */
#ifndef SX_GR_COMPILE_H
#define SX_GR_COMPILE_H

#include <jansson.h>

#include "grammar/ir/ir.h"

typedef struct gc_ref {
    struct gc_ref *next;
    const json_t *target; /* the schema a $ref points at */
    int32_t node;
    const char *text;     /* gr_memo.c: a copy's canonical text (NULL for $ref targets) */
    size_t len;
    uint64_t hash;        /* of text, or of target's address */
    struct gc_ref *hnext; /* gr_memo.c: the next older entry in its hash bucket */
} gc_ref;

typedef struct gc_ctx {
    sx_grammar *g;
    sx_gr_opts opts;
    sx_error *err;
    const json_t *root_schema;
    char ptr[256];   /* JSON Pointer of the schema being compiled */
    int depth;
    gc_ref *refs;    /* compiled $ref targets (allows recursion) */
    int32_t any_node;/* node for `true`, built on first use (0 = not yet) */
    int any_built;
    int draft4;      /* draft-04 or older: integers have no fraction part */
    int no_if;       /* before draft-07: if/then/else are unknown keywords */
    struct gc_addrs *addrs; /* gr_memo.c: the document's object addresses, or NULL */
    struct gc_ref_index *ref_index; /* gr_memo.c: c->refs by target and by text, or NULL */
    int memo_on;        /* copies are remembered (the second attempt) */
    int memo_wanted;    /* the nesting passed GC_MEMO_TRIGGER without memo_on */
    long n_compiles;    /* gc_schema calls so far (bounded by GC_MAX_COMPILES) */
    long more_pattern_states; /* gr_patterns.c: states of the intersections built */
    long name_states;   /* names_automaton: states of the allOf members' automata */
    int root_uneval;    /* gr_notforms.c: an unevaluated* keyword in the document:
                           0 not looked for yet, 1 none, 2 some */
    struct gc_strx_memo *strx_memo; /* gr_strx.c: string automata built so far, or NULL */
    char **node_ptr;    /* per node: the JSON Pointer compiled there (for errors
                           after the walk; freed when the compile ends) */
    int32_t cap_node_ptr;
    gr_work work;       /* the caller's deadline and cancel flag (sx_gr_opts) */
    long memo_bytes;    /* gr_memo.c: bytes of copies serialised so far */
    int finite_calls;   /* gr_finite.c: validators compiled for listed values */
} gc_ctx;

/* Internal keyword: more contains constraints ({contains, minContains,
 * maxContains} objects) gathered when allOf members each have their own. */
#define GC_MORE_CONTAINS "$strux:contains"
/* Internal keyword: more patterns a string must also match (a list of
 * strings), gathered when allOf members each have their own. */
#define GC_MORE_PATTERNS "$strux:patterns"

void *gc_alloc(gc_ctx *c, size_t n); /* zeroed, freed with the grammar */
int gc_new_node(gc_ctx *c, gr_kind kind, int32_t *id);
size_t gc_ptr_push(gc_ctx *c, const char *seg);
size_t gc_ptr_pushi(gc_ctx *c, size_t i);
void gc_ptr_pop(gc_ctx *c, size_t old);
int gc_unsupported(gc_ctx *c, const char *kw, const char *why);
int gc_invalid(gc_ctx *c, const char *kw, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* keywords.c: 1 for keywords that constrain values (not annotations, not
 * unknown keywords, which JSON Schema ignores); keywords.h has the table. */
int gc_is_assertion(const char *kw);
/* gr_schema.c: 1 if s is one of the strings of the NULL-terminated list l. */
int gc_in_list(const char *const *l, const char *s);

/* gr_schema.c: compile one (sub)schema to a node. */
int gc_schema(gc_ctx *c, const json_t *schema, int32_t *node);
/* Resolves a $ref string against the root document; NULL if not found. */
const json_t *gc_resolve_ref(gc_ctx *c, const char *ref);

/* gr_patterns.c: adds pattern p (a string) or the patterns of list p to
 * dst's GC_MORE_PATTERNS, leaving out those dst already has. */
int gc_more_patterns(gc_ctx *c, json_t *dst, const json_t *p);
/* gr_patterns.c: the strings that fail one of s's GC_MORE_PATTERNS, less
 * also_minus (may be NULL), as *out (kept with the grammar); *out stays
 * NULL without more patterns. */
int gc_more_patterns_minus(gc_ctx *c, const json_t *s, const struct sx_re *also_minus,
                           const struct sx_re **out);
/* gr_patterns.c: v (changed in place) with every internal keyword written
 * as the allOf members it stands for, for the validator; -1 on failure. */
int gc_externalise(json_t *v, int depth);
/* gr_patterns.c: 1 if an object anywhere in v has a key that starts with
 * prefix (or v nests deeper than 256, where nothing is ruled out).  With
 * "$strux:": v holds an internal keyword, which the validator would not
 * know (gr_finite.c then leaves v to the ordinary path). */
int gc_has_key_prefix(const json_t *v, const char *prefix);

/* gr_memo.c: copies of schemas (merged, rewritten) remembered by content
 * below this nesting depth, so that recursion through copies ends. */
#define GC_MEMO_DEPTH 2
/* Remembering costs a serialisation per copy, so a compile starts without
 * it and starts over with it when the nesting first passes this depth
 * (recursion through copies; deeper schemas without it are rare). */
#define GC_MEMO_TRIGGER 32
/* A bound on the work of one compile: products of anyOf/if branches can
 * ask for seconds (the slowest schema compiled before the bound took
 * 5,752 subschema compilations, 0.1 s). */
#define GC_MAX_COMPILES 12000
/* The same for strings with several patterns (gr_patterns.c): MaskBench's
 * allOf-of-anyOf puzzles need up to 1,711 states (30 ms); one that needs
 * 24,760 compiles for 1.5 s. */
#define GC_MAX_PATTERN_STATES 5000
/* The same for the name schemas an allOf of propertyNames intersects
 * (names_automaton keeps every one): 1,000 maxLength members asked for
 * 500,000 states, 230 MB and 6.5 s. */
#define GC_MAX_NAME_STATES 20000
/* gr_finite.c: the most subschemas decided by the validator (each a
 * validator of the whole document) in one compile. */
#define GC_MAX_FINITE_CALLS 256
/* The same for the copies gc_memo_enter serialises (bytes in all): a
 * recursive rewrite whose copies grow at each level asked for 8 MB and
 * 1.7 s (found by the schema fuzzer); MaskBench's largest that compiles
 * needs 67 KB (a 1,500-schema sample), and the one past 2 MB (prometheus,
 * 13 MB) was refused after 9.5 s anyway. */
#define GC_MAX_MEMO_BYTES (2 << 20)
/* If s is a copy already compiled (or being compiled), *node gets its node;
 * else, when s is to be remembered, *entry gets a reserved entry whose node
 * gc_memo_done fills with the compiled one (the caller cuts c->refs back,
 * gc_refs_cut, if the compile fails).  *node -1 and *entry NULL: compile s as usual.
 * Not called for a schema compiled under a presence condition (its node is
 * not the schema's alone). */
int gc_memo_enter(gc_ctx *c, const json_t *s, int32_t *node, gc_ref **entry);
/* gr_memo.c: c->refs, the compiled $ref targets and remembered copies, is a
 * stack that failed attempts cut back; these keep a hash index beside it so
 * that finding an entry does not walk the whole list (which made compiles
 * with many refs and copies quadratic).  The newest live entry for target,
 * or NULL. */
gc_ref *gc_refs_find_target(const gc_ctx *c, const json_t *target);
/* Pushes r (target or text/len/hash set) onto c->refs; SX_ENOMEM only when
 * the index cannot grow (r is pushed either way: lookups then walk). */
int gc_refs_push(gc_ctx *c, gc_ref *r);
/* Cuts c->refs back to old, an entry below the top (or NULL). */
void gc_refs_cut(gc_ctx *c, gc_ref *old);
int gc_memo_done(gc_ctx *c, gc_ref *entry, int32_t inner);
/* Frees what gc_memo_enter built outside the grammar (finish calls it). */
void gc_memo_free(gc_ctx *c);

/* gr_merge.c: JSON Schema's equality of two values: numbers by value
 * (1 == 1.0), containers member by member (json_equal tells 1 from 1.0). */
int gc_value_equal(const json_t *a, const json_t *b);
/* gr_merge.c: a copy of a (sub)schema to change: new objects and arrays,
 * scalars shared (never changed in place); NULL when v is NULL or out of
 * memory.  Use it instead of json_deep_copy. */
json_t *gc_copy(const json_t *v);
/* gr_merge.c: m (taken) as one more member of s's allOf, which it creates
 * when s has none: 0, -1 out of memory, 1 when s's allOf is not an array
 * (m is then dropped). */
int gc_add_allof(json_t *s, json_t *m);
/* gr_merge.c: merges schema object src into dst (allOf) exactly, or fails
 * naming the keyword that cannot be merged. */
int gc_merge(gc_ctx *c, json_t *dst, const json_t *src);
/* A copy of src (in *out, NULL when nothing changes) whose
 * unevaluatedProperties/Items are written as its own additionalProperties /
 * items, for when src joins other schemas as one member of a conjunction. */
int gc_localise_unevaluated(gc_ctx *c, const json_t *src, json_t **out);

/* gr_unique_check.c: after analysis, every GR_UNIQ_HASH array's items are
 * of a kind the matcher keeps distinct exactly, and minItems distinct
 * values exist; else SX_EUNSUPPORTED naming the keyword. */
int gc_unique_check(gc_ctx *c);
/* gr_finite.c: when s admits only values from a finite list (an enum or
 * const in s or in an allOf conjunct, also through $ref) and asserts more
 * than type/enum/const, the validator decides every listed value against
 * all of s: *texts gets the accepted scalar spellings (JSON texts as
 * strings) and *values the accepted objects and arrays, both new arrays.
 * Both stay NULL when s is not such a schema or the validator cannot
 * decide it; the caller then compiles s the ordinary way. */
int gc_finite_values(gc_ctx *c, const json_t *s, json_t **texts, json_t **values);
/* 1 if an integral number occurs anywhere in v. */
int gc_has_integral(const json_t *v);

/* gr_deps.c: s with its schema dependencies (dependentSchemas, or
 * `dependencies` with schema values) written as anyOf branches, one per
 * set of dependency keys present (*out new); *out NULL when s has none. */
int gc_rewrite_dependencies(gc_ctx *c, const json_t *s, json_t **out);

/* gr_ifthen.c: s with its if/then/else written as one more allOf member,
 * anyOf [allOf [if, then], allOf [not if, else]] with the negation of a
 * property test pushed down to the properties (*out new); *out NULL when
 * s has no `if`.  parent: the schema whose allOf holds s, or NULL. */
int gc_rewrite_if(gc_ctx *c, const json_t *s, const json_t *parent, json_t **out);
/* gr_ifthen.c: s with a `not` of a property test (or of anyOf, or a $ref
 * to one) written as an allOf member that tests keys one by one (*out
 * new; NULL when there is nothing to rewrite). */
int gc_rewrite_not(gc_ctx *c, const json_t *s, const json_t *parent, json_t **out);

/* gr_oneof.c: a test that no value of types ta (in a) and tb (in b)
 * satisfies both schemas (ta/tb -1: all the types the schema admits); 0
 * when it cannot tell. */
typedef int (*gc_disjoint_fn)(gc_ctx *c, const json_t *a, const json_t *b, int ta, int tb);
/* gr_oneof.c: oneOf s (branches br[0..n), $refs inlined, admitting types
 * bt[i] within s's own; eff[i]: br[i] with s's other keywords and its
 * allOf merged in, for the disjointness tests) written as an anyOf that is exactly it, one type
 * at a time: a type whose branches are pairwise disjoint goes to them, a
 * type that two branches admit wholesale goes to none; objects may be
 * narrowed (docs/ORACLE.md) -- never looser than oneOf.  *out new; NULL
 * when some type has overlapping branches this cannot decide. */
int gc_oneof_by_type(gc_ctx *c, const json_t *s, json_t *const *br, json_t *const *eff,
                     const int *bt, size_t n, gc_disjoint_fn disjoint, json_t **out);
/* gr_notforms.c: s with a `not` of key-name tests (not propertyNames,
 * and anyOf/allOf/not of them) written as positive allOf members (*out
 * new; NULL when s has no such `not`). */
int gc_rewrite_not_forms(gc_ctx *c, const json_t *s, json_t **out);

/* gr_strx.c: the automaton of a string's pattern and/or format (either may
 * be NULL), less the strings in excl (a JSON array whose string members a
 * `not` leaves out; may be NULL); *out stays NULL when none applies.  The
 * same request again in one compile gets the same automaton (*out is then
 * shared between nodes, owned by the grammar). */
int gc_string_automaton(gc_ctx *c, const char *pattern, size_t plen, const char *format,
                        const json_t *excl, const struct sx_re *minus_re, int64_t min_len,
                        int64_t max_len, gr_strx **out);
/* gr_strx.c: forgets the automata gc_string_automaton remembered for this
 * compile (they stay with the grammar; a repeated request shares one). */
void gc_strx_memo_free(gc_ctx *c);
/* gr_strx.c: re less the strings in excl, in *out (a new automaton the
 * caller owns; re itself is left alone). */
int gc_minus_strings(gc_ctx *c, const struct sx_re *re, const json_t *excl, struct sx_re **out);

/* Keeps an automaton alive as long as the grammar (freed with it). */
int gc_keep_re(gc_ctx *c, struct sx_re *re);

/* gr_keyauto.c: the product automaton over additional keys (see there). */
int gc_key_automaton(gc_ctx *c, const struct sx_re *names, const struct sx_re *known,
                     const struct sx_re *const *pats, const int32_t *pat_nodes, int n_pats,
                     int32_t additional, const json_t *const *pat_schemas, gr_strx **out_x,
                     int32_t **out_close);

/* gr_strx.c: a whole-document regex (full match) as an automaton. */
int gc_regex_automaton(gc_ctx *c, const char *pattern, size_t len, gr_strx **out);

/* gr_compile.c: the JSON Pointer node i was compiled at ("" unknown). */
const char *gc_node_ptr(const gc_ctx *c, int32_t i);
/* gr_compile.c: SX_ELIMIT naming the pointer once the caller's deadline
 * has passed or its cancel flag is set (checked per subschema). */
int gc_check_stop(gc_ctx *c);
/* gr_analyse.c: the parents of every node (the nodes whose values are
 * built from it), as lists: parents of i are par[at[i] .. at[i + 1]),
 * with repeats; both malloc'd.  -1 when out of memory. */
int gc_parents(const sx_grammar *g, int32_t **at, int32_t **par);
/* gr_analyse.c: emptiness fixpoint, pruning of impossible branches, and
 * the check that alternatives never loop without consuming input. */
int gc_analyse(gc_ctx *c);
/* gr_witness.c: a shortest value text for every node. */
int gc_witness(gc_ctx *c);

/* compile/gr_keyauto.c: drop key-automaton states that cannot close into a usable
 * value (value_ok(ctx, node) != 0), so live means completable. */
void gr_keyauto_prune(gr_strx *x, int32_t *close, int (*value_ok)(void *, int32_t), void *ctx);

#endif
