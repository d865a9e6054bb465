/* The compiled grammar as data, and the pure queries on it that both the
 * compiler (grammar/compile/) and the matcher (grammar/match/) use.
 *
 * Exports: the node graph (gr_node, gr_strx, sx_grammar) with its owned
 * memory (gr_pool_alloc) and its publish-once caches (gr_once); the one
 * byte hash (FNV-1a) and the value hashes built on it; the bounded-work
 * budget (gr_work); the state of a partly written value (gr_frame, its
 * phases and flags) and the queries on it that need no parse stack --
 * numbers (ir/gr_number.c), uniqueness of strings and numbers
 * (ir/gr_unique.c); key sets that can still be completed (ir/gr_object.c);
 * string and key automata (ir/gr_strx_query.c, ir/gr_keyquery.c);
 * literals and their hashes (ir/gr_literal.c); distinct values
 * (ir/gr_distinct.c); writing values and witnesses (ir/gr_witness.c).
 *
 * The rule of the three parts: the compiler writes the compiled grammar,
 * the matcher only reads it (but for the gr_once caches); neither includes
 * or calls the other, and nothing here includes either
 * (tools/check_layout.py). */
#ifndef SX_GR_IR_H
#define SX_GR_IR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "grammar/grammar.h"

/* ---- nodes ------------------------------------------------------------ */

typedef enum gr_kind {
    GK_EMPTY,   /* no value satisfies it (false schema, contradictions) */
    GK_LITSET,  /* one of a sorted set of literal JSON texts */
    GK_NUMBER,
    GK_STRING,
    GK_OBJECT,
    GK_ARRAY,
    GK_ALT,     /* any of several nodes */
} gr_kind;

typedef struct gr_lit {
    const uint8_t *b;
    uint32_t len;
} gr_lit;

typedef struct gr_prop {
    const uint8_t *key; /* JSON-encoded key without quotes */
    uint32_t key_len;
    int32_t node;       /* value node */
    int32_t index;      /* bit in the seen set when < 64 (every key that a
                           key condition names); past 64, optional keys
                           whose presence the frame's key-hash list records */
    uint64_t hash;      /* gr_key_hash of key */
    uint16_t order;     /* position in `properties`; GR_ORD_UNLISTED for other names */
} gr_prop;

#define GR_ORD_UNLISTED 0xFFFF

/* FNV-1a, the one byte hash of the grammar: keys' spellings, strings'
 * content (value hashes below), automaton tables. */
#define GR_FNV_BASIS 1469598103934665603ULL
#define GR_FNV_PRIME 1099511628211ULL

static inline uint64_t gr_fnv(uint64_t h, uint8_t b)
{
    return (h ^ b) * GR_FNV_PRIME;
}

/* Hash of a key's spelling, as the matcher computes it byte by byte. */
static inline uint64_t gr_key_hash(const uint8_t *b, size_t n)
{
    uint64_t h = GR_FNV_BASIS;
    for (size_t i = 0; i < n; i++)
        h = gr_fnv(h, b[i]);
    return h;
}

static inline uint64_t gr_prop_bit(const gr_prop *p)
{
    return p->index < 64 ? 1ull << p->index : 0;
}

/* ---- publish-once caches -------------------------------------------------
 * A compiled grammar is immutable but for its caches: tables the matcher
 * computes on first use (plain-token masks per automaton state, classes of
 * states, ...) and shares with every thread matching the same grammar.  A
 * cache is a slot written at most once, from NULL to its value, by a
 * compare-and-swap: the first value published wins, and a thread that
 * loses frees its own copy and uses the winner's.  So a reader holding the
 * grammar as const may fill a slot, and this is the one place that casts
 * the const away.  GR_ONCE_NONE marks "computed: nothing to keep"; the
 * grammar frees whatever else a slot holds (gr_strx_free_caches). */
typedef struct gr_once {
    _Atomic(void *) p;
} gr_once;

extern char gr_once_none[1];
#define GR_ONCE_NONE ((void *)gr_once_none)

/* The slot's value: NULL when nothing is published yet. */
static inline void *gr_once_get(const gr_once *s)
{
    return atomic_load_explicit(&((gr_once *)s)->p, memory_order_acquire);
}

/* Publishes mine (NULL: GR_ONCE_NONE) unless a value is there already, in
 * which case mine is dropped (drop(mine), when mine is not NULL).  Returns
 * the value the slot holds now. */
static inline void *gr_once_publish(const gr_once *s, void *mine, void (*drop)(void *))
{
    void *want = mine ? mine : GR_ONCE_NONE, *expected = NULL;
    if (atomic_compare_exchange_strong_explicit(&((gr_once *)s)->p, &expected, want,
                                                memory_order_acq_rel, memory_order_acquire))
        return want;
    if (mine)
        drop(mine);
    return expected;
}

/* Empties the slot, dropping its value (not GR_ONCE_NONE). */
static inline void gr_once_clear(gr_once *s, void (*drop)(void *))
{
    void *v = atomic_exchange_explicit(&s->p, NULL, memory_order_acq_rel);
    if (v && v != GR_ONCE_NONE)
        drop(v);
}

/* A string's pattern/format as a byte DFA over its decoded content, with
 * what the matcher needs to stay exact when lengths are bounded too. */
typedef struct gr_strx {
    struct sx_re *re;
    int32_t n_states, n_classes, start;
    const uint8_t *byte_class;
    const int32_t *next;
    const uint8_t *accept;
    const uint8_t *class_starts_cp; /* per class: its bytes start a code point */
    int32_t *max_cps;    /* per state: longest completion in code points, -1 = endless */
    uint64_t *lenbits;   /* per state: continuation lengths 0..len_k, or NULL */
    uint32_t len_words;  /* words per state in lenbits */
    int64_t len_k;
    int len_dense;       /* with lenbits: every state reaches every length from
                            its shortest completion up to len_k */
    uint8_t *unbounded;  /* per state: continuations can be arbitrarily long */
    gr_once *plain_cache; /* per state: mask of plain tokens that stay alive */
    gr_once plain_rep;   /* a gr_equiv: per state, the state whose plain mask
                            it shares (match/gr_strx_equiv.c), on first use */
    int all_unbounded;   /* every state has endless completions */
    int32_t max_min_cps; /* the most code points any state needs to accept */
    int32_t *mu;         /* per state: the most code points any state reachable
                            from it needs to accept (NULL: use max_min_cps) */
    uint32_t *fin_count; /* key automata: accepted completions per state,
                            UINT32_MAX when unbounded or too many to count */
    uint32_t *fin_reach; /* key automata: the least fin_count of any state
                            reachable from each state (0 = not known) */
    gr_once fin_near;    /* uint32_t per state: the same within the longest
                            plain token's bytes, on first use (match/gr_keynear.c) */
    const char *example; /* a format's plausible value the automaton accepts, or NULL:
                            the completion from the start when it is a shortest one */
} gr_strx;

static inline int32_t gr_strx_step(const gr_strx *x, int32_t st, uint8_t b)
{
    return x->next[(size_t)st * (size_t)x->n_classes + x->byte_class[b]];
}

#define GR_MAX_CONTAINS 3

typedef struct gr_node {
    gr_kind kind;
    int32_t min_bytes;   /* length of the shortest value; -1 = none */
    const uint8_t *wit;  /* a shortest value's text (for completions) */
    union {
        struct {
            gr_lit *lits; /* sorted by bytes, unique */
            uint32_t n;
            const uint64_t *hash; /* per literal: its value hash (gr_hash_*) */
        } lit;
        struct {
            int integer;       /* only integral values */
            int no_frac;       /* integers written without ".0" (draft-04) */
            int int_exp;       /* integers in any spelling of their value (1e2,
                                  1.5e1, 100e-2: SX_ESC_ANY, gr_number.c
                                  "integers in any spelling") */
            int has_min, has_max, excl_min, excl_max;
            double min, max;
            int64_t imin, imax; /* integer bounds (integer nodes) */
            int64_t multiple;   /* integer multipleOf, 0 = none; with scale, the
                                   multipleOf times 10^scale */
            int scale;          /* decimal multipleOf (0.01: scale 2, multiple 1):
                                   values x are checked as x*10^scale, an integer
                                   within [imin, imax], a multiple of `multiple` */
            const uint64_t *excl; /* `not` of listed numbers: their value hashes */
            uint32_t n_excl;
        } num;
        struct {
            int64_t min_len, max_len; /* code points; max -1 = unbounded */
            struct gr_strx *x;        /* pattern/format automaton, or NULL */
            int raw;                  /* the whole document is unquoted text (regex mode) */
            gr_once start_mask;       /* the plain tokens allowed first, with the
                                         lengths (gr_strx_start_mask), on first use */
        } str;
        struct {
            gr_prop *props;   /* sorted by key bytes */
            uint32_t n;
            uint64_t required;   /* bits by gr_prop.index */
            uint64_t *dep_req;   /* per index: bits required once that key is present, or NULL */
            int32_t additional;  /* node for other keys, -1 = none allowed */
            gr_strx *keyx;       /* key automaton (patternProperties/propertyNames) or NULL */
            int32_t *close_node; /* per keyx state: value node of a key closed there, or -1 */
            int64_t min_props, max_props; /* max -1 = unbounded */
            uint64_t forbid[4];  /* `not: {required}`: these keys may not all appear */
            int n_forbid;
            uint64_t *pres;      /* anyOf/oneOf of required lists: the key sets */
            int n_pres, pres_one;/* how many; 1 = exactly one set complete, 0 = at least one */
            /* property-order mode (sx_gr_opts.prop_order): members follow
             * `properties`, other keys after all of them.  ord_before[o]:
             * the bits of the listed keys placed before position o
             * (o = n_listed: all of them); by_order: prop indices listed
             * ones first, in their order.  NULL when the mode is off. */
            uint64_t *ord_before;
            uint16_t *by_order;
            uint16_t n_listed;
        } obj;
        struct {
            int32_t *prefix;
            uint32_t n_prefix;
            int32_t items;     /* node for items past the prefix, -1 = none allowed */
            int64_t min_items, max_items;
            /* uniqueItems over listed values: items is a literal set whose
             * literals fall in value classes (1 and 1.0 are one value);
             * the frame's `seen` holds the classes used */
            const uint8_t *lit_class; /* per literal of the items node, or NULL */
            int n_classes;
            /* uniqueItems over any other items: GR_UNIQ_HASH, the frame's
             * `ext` lists the value hashes of the finished items */
            int unique;
            const char *unique_ptr; /* JSON Pointer of the keyword, for errors */
            /* gr_can_grow, decided once at compile time (0 not yet, 1
             * being decided, 2 no, 3 yes): memoised so that recursive
             * item schemas cost one visit per node, not unbounded recursion */
            int8_t grows;
            /* contains (and more from allOf): an item counts for the
             * constraints of its tag S, being of node ctag_node[S] (the
             * items schema with contains i for i in S, and `not` contains j
             * for the j outside S that have a maximum); the frame's `val`
             * holds 16-bit counters, one per constraint */
            int n_cont;
            int64_t cmin[GR_MAX_CONTAINS], cmax[GR_MAX_CONTAINS]; /* max -1 = none */
            int32_t ctag_node[1 << GR_MAX_CONTAINS];
        } arr;
        struct {
            int32_t *alts;
            uint32_t n;
        } alt;
    } u;
} gr_node;

struct sx_grammar {
    const sx_vocab *vocab;
    gr_node *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t root;
    sx_gr_opts opts;
    void *pool; /* owned allocations, freed with the grammar (linked list) */
    struct sx_re **res; /* owned automata */
    int n_res, cap_res;
    size_t pool_bytes;  /* bytes held in pool (for sx_gr_mem_bytes) */
};

enum { GR_UNIQ_NONE, GR_UNIQ_CLASS, GR_UNIQ_HASH };

/* ---- value hashes --------------------------------------------------------
 * A JSON value's hash as JSON Schema equality sees it: numbers by their
 * double (1 == 1.0), strings by their decoded content, objects by their
 * members in any order.  The matcher computes it byte by byte for the items
 * of uniqueItems arrays; equal values always hash alike, so a repeated item
 * is always caught, and a collision can only refuse a valid item. */
static inline uint64_t gr_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

#define GR_H_NULL 0x6e756c6c00000001ULL
#define GR_H_TRUE 0x7472756500000002ULL
#define GR_H_FALSE 0x66616c7300000003ULL

/* strings: from the FNV-1a hash of the decoded UTF-8 content */
static inline uint64_t gr_hash_str(uint64_t fnv)
{
    return gr_mix(fnv + 0x5354520000000004ULL);
}

static inline uint64_t gr_hash_num(double d)
{
    uint64_t b;
    if (d == 0)
        d = 0; /* -0 == 0 */
    memcpy(&b, &d, sizeof b);
    return gr_mix(b ^ 0x4e554d0000000005ULL);
}

/* objects: the sum of their members' hashes, keys by gr_key_hash */
static inline uint64_t gr_hash_member(uint64_t key, uint64_t value)
{
    return gr_mix(key ^ gr_mix(value + 0x4b45590000000006ULL));
}

static inline uint64_t gr_hash_obj(uint64_t sum)
{
    return gr_mix(sum + 0x4f424a0000000007ULL);
}

/* arrays: folded in order */
static inline uint64_t gr_hash_arr_step(uint64_t acc, uint64_t item)
{
    return gr_mix(acc + item) + 0x9e3779b97f4a7c15ULL;
}

static inline uint64_t gr_hash_arr(uint64_t acc, int64_t n)
{
    return gr_mix(acc ^ (uint64_t)n ^ 0x4152520000000008ULL);
}

/* The UTF-8 bytes of code point cp (no surrogates) into an FNV hash. */
static inline uint64_t gr_fnv_cp(uint64_t h, uint32_t cp)
{
    uint8_t b[4];
    int n = 0;
    if (cp < 0x80) {
        b[n++] = (uint8_t)cp;
    } else if (cp < 0x800) {
        b[n++] = (uint8_t)(0xC0 | cp >> 6);
        b[n++] = (uint8_t)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        b[n++] = (uint8_t)(0xE0 | cp >> 12);
        b[n++] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        b[n++] = (uint8_t)(0x80 | (cp & 0x3F));
    } else {
        b[n++] = (uint8_t)(0xF0 | cp >> 18);
        b[n++] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
        b[n++] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        b[n++] = (uint8_t)(0x80 | (cp & 0x3F));
    }
    for (int i = 0; i < n; i++)
        h = gr_fnv(h, b[i]);
    return h;
}

/* FNV-1a step undone: the hash before byte b was folded into h (the
 * prime is odd, so the step is a bijection).  A key's running hash takes
 * a backslash when it is read; a \u escape that turns out to spell a
 * character written raw takes it back out. */
static inline uint64_t gr_fnv_unfold(uint64_t h, uint8_t b)
{
    uint64_t inv = GR_FNV_PRIME; /* Newton: inv = prime^-1 mod 2^64 */
    for (int i = 0; i < 5; i++)
        inv *= 2 - GR_FNV_PRIME * inv;
    return (h * inv) ^ b;
}

/* The canonical spelling (gr_encode_string's) of the character cp (no
 * surrogates) as key or literal content: short escapes for the quote,
 * the backslash and \b\f\n\r\t, \u00xx for other control characters,
 * raw UTF-8 otherwise.  Writes at most 6 bytes; returns their count. */
static inline int gr_canon_char(uint32_t cp, uint8_t out[6])
{
    static const char hex[] = "0123456789abcdef";
    switch (cp) {
    case '"': out[0] = '\\'; out[1] = '"'; return 2;
    case '\\': out[0] = '\\'; out[1] = '\\'; return 2;
    case '\b': out[0] = '\\'; out[1] = 'b'; return 2;
    case '\f': out[0] = '\\'; out[1] = 'f'; return 2;
    case '\n': out[0] = '\\'; out[1] = 'n'; return 2;
    case '\r': out[0] = '\\'; out[1] = 'r'; return 2;
    case '\t': out[0] = '\\'; out[1] = 't'; return 2;
    default: break;
    }
    if (cp < 0x20) {
        memcpy(out, "\\u00", 4);
        out[4] = (uint8_t)hex[cp >> 4];
        out[5] = (uint8_t)hex[cp & 15];
        return 6;
    }
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* SX_ESC_CANONICAL (grammar.h): cp is one of the characters whose
 * canonical spelling is a \u escape -- a control character with no short
 * escape.  As intervals: [0, 7], [0xB, 0xB], [0xE, 0x1F]. */
static inline int gr_canon_ctl(uint32_t cp)
{
    return cp < 0x20 && cp != '\b' && cp != '\t' && cp != '\n' && cp != '\f' && cp != '\r';
}
static const uint32_t gr_canon_ctl_iv[3][2] = {{0, 7}, {0xB, 0xB}, {0xE, 0x1F}};

/* SX_ESC_CANONICAL: the digits-th hex digit c of a \u (the value of the
 * digits so far, with c, in v) keeps it a prefix of the canonical
 * spelling (lowercase) of some gr_canon_ctl character; at the fourth
 * digit, it is one. */
static inline int gr_canon_u_digit(int c, int digits, uint32_t v)
{
    if (c >= 'A' && c <= 'F')
        return 0;
    uint32_t lo = v << (4 * (4 - digits)), hi = lo + ((1u << (4 * (4 - digits))) - 1);
    for (int i = 0; i < 3; i++)
        if (lo <= gr_canon_ctl_iv[i][1] && hi >= gr_canon_ctl_iv[i][0])
            return 1;
    return 0;
}

/* The character a canonical spelling (a key's, or a string literal's
 * with its quotes) holds at byte pos: its code point into *cp and the
 * bytes it spans, or 0 at the end, at a closing quote or inside a
 * character. */
static inline int gr_canon_cp(const uint8_t *k, uint32_t len, uint32_t pos, uint32_t *cp)
{
    if (pos >= len || k[pos] == '"' || (k[pos] & 0xC0) == 0x80)
        return 0; /* the end, or not at a character's start */
    uint8_t c = k[pos];
    if (c == '\\') {
        if (pos + 1 >= len)
            return 0;
        switch (k[pos + 1]) {
        case 'b': *cp = '\b'; return 2;
        case 'f': *cp = '\f'; return 2;
        case 'n': *cp = '\n'; return 2;
        case 'r': *cp = '\r'; return 2;
        case 't': *cp = '\t'; return 2;
        case 'u': {
            uint32_t v = 0;
            if (pos + 6 > len)
                return 0;
            for (int i = 2; i < 6; i++) {
                uint8_t h = k[pos + (uint32_t)i];
                v = v * 16 + (uint32_t)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
            }
            *cp = v;
            return 6;
        }
        default: *cp = k[pos + 1]; return 2;
        }
    }
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (pos + (uint32_t)n > len)
        return 0;
    uint32_t v = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
    for (int i = 1; i < n; i++)
        v = v << 6 | (k[pos + (uint32_t)i] & 0x3F);
    *cp = v;
    return n;
}

/* A persistent set of 64-bit hashes (ir/gr_vseen.c): a hash trie, five
 * bits of the hash per level (at most 13 levels: two different hashes
 * differ in some five bits), so a lookup reads at most 13 nodes whatever
 * the set's size.  A node is never changed once made: adding copies the
 * nodes on one path (at most 13, each of at most 32 entries) and shares
 * the rest, so every earlier set stays valid as long as its memory -- an
 * arena that only grows past it, as the matcher's frames -- does. */
typedef struct gr_hset {
    uint32_t map; /* slots in use (bit i = slot i) */
    uint32_t sub; /* of those, the slots holding a child node; the others
                     hold one hash */
    union {
        uint64_t h;
        const struct gr_hset *c;
    } e[];        /* the used slots, in slot order */
} gr_hset;

/* 1 if h is in the set s (NULL = the empty set). */
int gr_hset_has(const gr_hset *s, uint64_t h);
/* The set s plus h (which s must not hold), its new nodes from
 * alloc(ctx, bytes); NULL when alloc fails (s is unchanged either way). */
const gr_hset *gr_hset_add(const gr_hset *s, uint64_t h, void *(*alloc)(void *ctx, size_t n),
                           void *ctx);

/* The value hashes of finished items (a uniqueItems array's `ext`), newest
 * first.  A node may carry idx, a set holding its own hash and every hash
 * after it on the list (gr_feed's nodes do, so a membership test costs
 * O(1) expected, not the list's length); nodes built elsewhere (on a
 * stack, for a moment) leave it NULL and are tested one by one until the
 * first node that has one.  Equal hashes mean an equal value: values are
 * never compared. */
typedef struct gr_vseen {
    const struct gr_vseen *next;
    uint64_t h;
    const gr_hset *idx; /* h and all of next's hashes, or NULL */
} gr_vseen;

static inline int gr_vseen_has(const gr_vseen *s, uint64_t h)
{
    for (; s; s = s->next) {
        if (s->idx)
            return gr_hset_has(s->idx, h);
        if (s->h == h)
            return 1;
    }
    return 0;
}

/* ---- bounded work (ir/gr_bound.c) ------------------------------------------
 * A step budget plus the caller's deadline and cancel flag (sx_gr_opts).
 * Every search over the grammar whose length is not fixed by its input
 * spends steps here and stops once told to; the clock is read every 1,024
 * steps, so a stop is seen within about a millisecond. */
enum { GR_STOP_NONE, GR_STOP_DEADLINE, GR_STOP_CANCEL, GR_STOP_BUDGET };
typedef struct gr_work {
    long left;                  /* steps left */
    double deadline_ms;         /* CLOCK_MONOTONIC ms; 0 = none */
    const volatile int *cancel; /* nonzero = stop; may be NULL */
    uint32_t tick;              /* steps since the clock was read */
    int stop;                   /* a GR_STOP_*, sticky */
} gr_work;

double gr_now_ms(void);
void gr_work_init(gr_work *w, const sx_gr_opts *o, long budget);
/* Spends n steps: the GR_STOP_* reason once the work must stop, else 0. */
int gr_work_spend(gr_work *w, long n);
/* Reads the deadline and the cancel flag now (the reason, or 0). */
int gr_work_poll(gr_work *w);
/* "deadline passed", "cancelled", "work budget exceeded" */
const char *gr_stop_text(int stop);

/* ---- partly written values (frames) -------------------------------------------------- */

/* One open value.  Frames are immutable once built: a step copies the top
 * frame and links it to the shared parent, so alternatives share tails. */
typedef struct gr_frame gr_frame;
struct gr_frame {
    const gr_frame *up;
    int32_t node;   /* -1 for the document root */
    uint8_t phase;
    uint8_t ws;     /* whitespace run so far */
    uint8_t flags;
    uint8_t aux;    /* utf-8 bytes pending in a string; hex digits in \u */
    uint16_t depth; /* nesting of this value */
    uint8_t u8lo, u8hi; /* range of the next UTF-8 continuation byte */
    int32_t kst;    /* object key: state of the key automaton */
    uint32_t lo, hi;/* literal range (LITSET, object keys); a number: lo the
                       fraction digits before an exponent, hi the integer
                       digits (saturating) */
    uint32_t pos;   /* bytes matched into the literals; an integer in any
                       spelling: fraction zeros not yet in val */
    uint16_t ord;   /* object, property-order mode: the position after the
                       last listed key written; GR_ORD_UNLISTED after any
                       other key */
    uint8_t ctag;   /* an array item: the contains constraints it counts for
                       (a bit per gr_node.u.arr.cont entry) */
    int64_t count;  /* code points, items, properties, digits */
    int64_t val;    /* integer value read so far, or a key hash */
    uint64_t seen;  /* properties seen (bit per gr_prop.index) */
    const void *ext;/* per-kind extra state (seen additional keys; the
                       items of a uniqueItems array) */
    uint64_t vh;    /* value hash so far (F_UH): FNV of a string's content,
                       sum of an object's members, fold of an array's items */
};

/* phases of each kind of frame */
enum { R_WAIT, R_DONE };
enum { N_START, N_SIGN, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
/* strings: S_U reads a \u's hex digits (aux of them, value in val); a
 * high surrogate then waits for its low half: S_LBS its backslash, S_LU
 * its 'u', S_LOW its digits (val = high << 16 | low so far) */
enum { S_START, S_IN, S_ESC, S_U, S_LBS, S_LU, S_LOW };
enum { O_START, O_OPEN, O_KEY, O_COLON, O_VALUE, O_INVAL, O_AFTER, O_COMMA };
enum { A_START, A_OPEN, A_INVAL, A_AFTER, A_COMMA };

/* frame flags */
#define F_NEG 1u      /* number: leading minus */
#define F_INEXACT 2u  /* number: more significant digits than tracked */
#define F_KESC 4u     /* object key: inside an escape */
#define F_NBIG 4u     /* number (F_KESC's bit, on key and string frames): more integer
                         digits than val holds; val is then the digits read
                         modulo the node's multiple (0 without one) -- see
                         gr_feed.c, "numbers of any length" */
#define F_KGEN 8u     /* object key: may still be an additional (unknown) key */
#define F_NSTICKY 8u  /* number (F_KGEN's bit), big under bounds past big_from:
                         a digit past the 18 in val is not 0 (gr_number.c) */
#define F_ENEG 16u    /* number: minus sign after the exponent mark */
#define F_UH 32u      /* the value's hash is tracked (inside a uniqueItems item) */
#define F_UITEM 64u   /* an item of a GR_UNIQ_HASH array: it must differ from
                         the earlier items, so liveness counts them */
/* numbers whose value is hashed: at most this many significant digits (so
 * distinct decimals are distinct doubles), no exponent.  Other numbers may
 * have an exponent of at most two digits; from the exponent mark on, a
 * number frame keeps its fraction digit count in `lo` and the exponent's
 * digits in `kst` (`count` counts them). */
#define GR_HASH_DIGITS 15
#define GR_HASH_FRAC 200

#define GR_EOF 256

/* A string automaton's classes of states whose plain masks agree -- rep[s] on all plain tokens (NULL: none known), rep_short[s] on those of at
 * most SX_VOCAB_SHORT bytes (NULL: no coarser than rep), with the short
 * tokens' masks cached per rep_short state.  Computed on first use and
 * shared (thread-safe); NULL when nothing is shared. */
typedef struct gr_equiv {
    int32_t *rep;
    int32_t *rep_short;
    gr_once *short_cache;
    int32_t n_states;
} gr_equiv;
/* ir/gr_grammar.c: frees a gr_equiv (a gr_once drop function). */
void gr_equiv_drop(void *e);

/* Some continuation of k code points from state st keeps count + k within
 * [min_len, max_len] (max -1 = unbounded)? */
int gr_strx_len_ok(const gr_strx *x, int32_t st, int64_t count, int64_t min_len, int64_t max_len);
/* The shortest JSON-escaped content from (st, count) to an accepting
 * state within the bounds, written to buf (no closing quote); its length,
 * or -1 if none fits in cap or the search budget. */
long gr_strx_complete(const gr_strx *x, int32_t st, int64_t count, int64_t min_len,
                      int64_t max_len, int raw, uint8_t *buf, size_t cap);

/* ir/gr_strx_query.c: \u escapes in patterned strings.  The least code
 * point within [clo, chi] (surrogates aside) whose UTF-8 automaton x
 * takes from state st into a state where count + 1 code points can still
 * meet the bounds; -1 if none.  gr_strx_u_find: the same for the
 * characters a \u escape under way on string frame f (phase S_ESC, S_U,
 * S_LBS, S_LU or S_LOW; f->pos the state before the escape) can still
 * spell, a pair's high half standing for the supplementary code points
 * it starts; canon 1 (SX_ESC_CANONICAL): only the control characters
 * with no short escape (gr_canon_ctl), which are all a canonical \u
 * spells. */
int64_t gr_strx_cp_find(const gr_strx *x, int32_t st, uint32_t clo, uint32_t chi, int64_t count,
                        int64_t min_len, int64_t max_len);
int64_t gr_strx_u_find(const gr_strx *x, const gr_frame *f, int canon, int64_t min_len,
                       int64_t max_len);
/* The code points a \u escape under way on string frame f (phases as
 * above) can still spell, as up to 3 ascending intervals r[i][0..1]
 * (surrogates aside, pairs as their code points); their count. */
int gr_u_ranges(const gr_frame *f, uint32_t r[3][2]);
/* The rest of the spelling of cp from the escape under way on f (after
 * the bytes typed so far): at most 12 bytes into out, their count. */
int gr_u_rest(const gr_frame *f, uint32_t cp, char out[16]);

/* 1 if every key that can complete from key-automaton state st (with a
 * pending backslash if in_escape) is among the keys already seen, whose
 * hashes are in `seen` (a key_hash list) -- then that state is a dead end.
 * h is the running hash of the key's spelling so far. */
int gr_keyauto_all_seen(const gr_strx *x, const int32_t *close, int32_t st, int in_escape,
                        uint64_t h, const void *seen);

/* A completion from state st to a key not in `seen` (escaped bytes into
 * out, *final = the state reached); its length, or -1 if none was found
 * within the search budget. */
long gr_keyauto_new_key(const gr_strx *x, const int32_t *close, int32_t st, uint64_t h,
                        const void *seen, uint8_t *out, size_t cap, int32_t *final);

/* An object frame's key-hash list (its `ext`): the keys already in the
 * object that no seen bit records.  The same list type as an array's
 * item hashes, so that frames can compare either by content. */
typedef gr_vseen gr_keyh;

/* ir/gr_object.c: 1 if hash h is on a frame's key-hash list (its `ext`). */
int gr_key_listed(const void *list, uint64_t h);

/* The property is already in the object (seen bits, key-hash list). */
static inline int gr_prop_seen(const gr_prop *p, uint64_t seen, const void *keys)
{
    uint64_t b = gr_prop_bit(p);
    return b ? (seen & b) != 0 : gr_key_listed(keys, p->hash);
}

/* ir/gr_object.c: with keys `seen` (count of them), can the object still be
 * completed validly? */
int gr_obj_feasible(const gr_node *n, uint64_t seen, int64_t count);
/* Property-order mode: the keys an object at position `ord` can no longer
 * take, the position after writing p, and whether p may come now. */
uint64_t gr_ord_blocked(const gr_node *n, uint16_t ord);
uint16_t gr_ord_after(const gr_prop *p);
int gr_ord_ok(const gr_node *n, uint16_t ord, const gr_prop *p);
/* gr_obj_feasible once the key p is added in property-order mode. */
int gr_obj_feasible_add(const gr_node *n, uint64_t seen, int64_t count, const gr_prop *p);
/* The keys required once `seen` are present (required, dependencies). */
uint64_t gr_obj_required(const gr_node *n, uint64_t seen);
/* gr_obj_feasible with the keys `blocked` no longer allowed (property order). */
int gr_obj_feasible_blocked(const gr_node *n, uint64_t seen, int64_t count, uint64_t blocked);
/* The object's anyOf/oneOf-of-required condition holds for keys `seen`. */
int gr_obj_pres_holds(const gr_node *n, uint64_t seen);
/* The keys the shortest way to meet the presence condition ends with,
 * from `seen` (what the lists ask, closed under what keys require in turn,
 * allowed and feasible); seen itself when it holds already, 0 when no way. */
uint64_t gr_obj_pres_complete(const gr_node *n, uint64_t seen, int64_t count);

/* Does the object accept keys beyond its listed properties at all? */
static inline int gr_obj_has_gen(const gr_node *n)
{
    return n->u.obj.keyx ? n->u.obj.keyx->start >= 0 : n->u.obj.additional >= 0;
}

/* ir/gr_object.c: an array with one contains constraint, `count` items of
 * which `cnt` match: can it still be finished, given whether items that
 * do not match (ok0) and that match (ok1) exist at all? */
int gr_cont_feasible(const gr_node *n, int64_t count, int64_t cnt, int ok0, int ok1);

/* ir/gr_number.c: numbers.  The value read so far; whether it is hashed (so
 * capped at GR_HASH_DIGITS, no exponent); whether some completion is valid
 * (or, `ending`, the number may end here); the frame after byte c (0 when
 * c cannot continue it); significant digits of v. */
double gr_num_value(const gr_frame *f);
int gr_num_hashed(const gr_node *n, const gr_frame *f);
int gr_num_ok(const gr_node *n, const gr_frame *f, int ending);
int gr_num_step(const gr_node *n, const gr_frame *f, int c, gr_frame *nf);
int gr_num_digits(int64_t v);

/* ir/gr_unique.c: liveness of a value that must differ from the values whose
 * hashes are listed (the earlier items of a uniqueItems array, n_seen of
 * them) -- and, for numbers, from the node's excluded values: 1 if some
 * completion of the value on frame f hashes to none of them. */
int gr_str_live(const gr_node *n, const gr_frame *f, const gr_vseen *seen, int64_t n_seen);
int gr_num_live(const gr_node *n, const gr_frame *f, const gr_vseen *seen, int64_t n_seen);
/* The text (string content without the closing quote, or number
 * characters) that finishes the value on f into the `skip`-th new value
 * (not blocked as above); its length or -1, and *hash its value hash. */
long gr_str_new_completion(const gr_node *n, const gr_frame *f, const gr_vseen *seen,
                           int64_t skip, uint8_t *out, size_t cap, uint64_t *hash);
long gr_num_new_completion(const gr_node *n, const gr_frame *f, const gr_vseen *seen,
                           int64_t skip, uint8_t *out, size_t cap, uint64_t *hash);
/* 1 if some value of node (a fresh item) is not among seen. */
int gr_item_start_live(const sx_grammar *g, int32_t node, const gr_vseen *seen, int64_t n_seen);

/* ---- writing values (ir/gr_witness.c) ----------------------------------
 * A growing text that stops on the first failure (oom), on the work
 * budget (work) or at limit bytes (over); the writers below append to it
 * from the compiled grammar alone.  gr_wit: node's witness (shortest
 * value); gr_wit_write: the same computed from the children (the
 * compiler's witness pass); the rest write the members or items a
 * completion needs: an additional key by the key automaton, items of a
 * uniqueItems array that differ, members meeting the key conditions,
 * contains counts, fresh keys not yet in the object. */
typedef struct gr_wbuf {
    uint8_t *b;
    size_t n, cap;
    int oom;        /* failed: out of memory, a part without a value, or a stop */
    gr_work *work;  /* spends a step per byte written (NULL: unbounded) */
    size_t limit;   /* the most bytes (0: no limit) */
    int over;       /* failed for the limit */
} gr_wbuf;

void gr_wput(gr_wbuf *w, const void *p, size_t n);
void gr_wputs(gr_wbuf *w, const char *s);
int gr_wit(const gr_node *N, int32_t node, gr_wbuf *w);
int32_t gr_wit_auto_key(const gr_node *n, int32_t st, int in_escape, uint64_t h,
                        const void *seen, gr_wbuf *w, uint64_t *key_hash);
void gr_wit_unique_items(const gr_node *N, const gr_node *arr, uint64_t used, int64_t n,
                         int need_comma, gr_wbuf *w);
size_t gr_wit_fresh_key(const gr_node *n, const void *seen_keys, long *next, char key[32]);
void gr_wit_object_members(const sx_grammar *g, const gr_node *n, uint64_t seen, int64_t count,
                           int need_comma, gr_wbuf *w, int depth,
                           const void *seen_keys, int32_t skip, uint16_t ord);
void gr_wit_cont_fill(const sx_grammar *g, const gr_node *n, int64_t count, const int64_t *cnt,
                      int must_one, int need_comma, gr_wbuf *w, int depth);
void gr_wit_extra_members(const sx_grammar *g, const gr_node *n, int64_t k, int need_comma,
                          const gr_vseen *keys, gr_wbuf *w, int depth);
void gr_wit_new_items(const sx_grammar *g, const gr_node *arr, int64_t at, int64_t n,
                      const gr_vseen *seen, int64_t from, int need_comma, gr_wbuf *w, int depth);
void gr_wit_write(const sx_grammar *g, int32_t i, gr_wbuf *w, int depth);

/* ---- the grammar's memory (ir/gr_grammar.c) ----------------------------- */

/* Zeroed bytes owned by the grammar, freed with it; NULL when out of memory. */
void *gr_pool_alloc(sx_grammar *g, size_t n);
/* Frees every cache the matcher filled and the automata the grammar holds. */
void gr_strx_free_caches(sx_grammar *g);

/* ---- literals and distinct values (ir/) ---------------------------------- */

/* ir/gr_literal.c: the JSON spellings a value may be written with, as the
 * grammar accepts them (one canonical spelling for strings, the integer
 * and float spellings for integral numbers).  Appends malloc'd texts. */
int gr_spellings(const json_t *v, char **out, int *n, int cap);
/* Canonical JSON string body (no quotes) of UTF-8 text; malloc'd. */
char *gr_encode_string(const char *s, size_t len, size_t *out_len);

/* ir/gr_literal.c: |d| as m * 10^e from its shortest round-trip decimal
 * form (m without trailing zeros; the form the validator reads numbers
 * in); -1 when d is not finite. */
int gr_decimal(double d, int64_t *m, int *e);

/* ir/gr_literal.c: the value hash (above) of a JSON value, and of a
 * JSON text (*ok = 0 when it does not parse). */
uint64_t gr_json_hash(const json_t *v);
uint64_t gr_text_hash(const char *text, size_t len, int *ok);

/* ir/gr_distinct.c: a lower bound on the number of distinct values of node (GR_LIVE_BIG
 * for as many as could ever matter; counting may stop once `need` are
 * found), or -1 when the node is not of a kind whose items are kept
 * distinct. */
#define GR_LIVE_BIG ((int64_t)1 << 40)
int64_t gr_distinct_values(const sx_grammar *g, int32_t node, int depth, int64_t need);
/* Composite items whose value can always still change: an object that
 * takes more additional keys, an array that takes more items. */
int gr_can_grow(const sx_grammar *g, int32_t node);

#endif
