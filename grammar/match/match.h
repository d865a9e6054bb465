/* The matcher's insides (grammar/match/): run-time stacks of frames fed
 * one byte at a time, the per-state token masks of string and key
 * automata, completion of an open document, the reference mask walk.
 *
 * Exports, to the matcher's files and to white-box tests: the arena the
 * frames live in (gr_arena), the stack sets and feeding (gr_set, gr_ctx,
 * gr_feed_set; match/gr_feed.c), the plain-token masks
 * (match/gr_strx_mask.c, gr_strx_equiv.c, gr_strx_universal.c,
 * gr_keynear.c, gr_keymask.c), completions (match/gr_complete.c) and
 * gr_fill_mask_reference (match/gr_matcher.c).  It reads the compiled
 * grammar through grammar/ir/ir.h only: nothing of the compiler. */
#ifndef SX_GR_MATCH_H
#define SX_GR_MATCH_H

#include "grammar/ir/ir.h"

/* ---- arena ------------------------------------------------------------ */

typedef struct gr_arena_chunk gr_arena_chunk;
typedef struct gr_arena {
    gr_arena_chunk *head;
    size_t used;          /* bytes used in head */
    gr_arena_chunk *spare; /* one released chunk kept for reuse */
} gr_arena;
typedef struct gr_mark {
    gr_arena_chunk *chunk;
    size_t used;
} gr_mark;

void *gr_arena_alloc(gr_arena *a, size_t n);
gr_mark gr_arena_mark(const gr_arena *a);
void gr_arena_reset(gr_arena *a, gr_mark m);
void gr_arena_free(gr_arena *a);

#define GR_MAX_THREADS 64

/* gr_feed.c: the two frames are alike, their parents aside (`depth`
 * aside too: it only bounds the values they open). */
int gr_frame_top_equal(const gr_frame *a, const gr_frame *b);
/* gr_feed.c: the two stacks are alike, frame by frame (emit's test). */
int gr_frames_equal(const gr_frame *a, const gr_frame *b);

typedef struct gr_set {
    const gr_frame *f[GR_MAX_THREADS];
    int n;
    int overflow; /* more interpretations than fit: the later ones were
                     dropped (narrower, never looser: every kept one is a
                     live parse, so masks stay sound and never empty) */
} gr_set;

typedef struct gr_ctx {
    const sx_grammar *g;
    gr_arena *arena;
    int max_ws;
    int max_stack;
    int indent;   /* SX_WS_INDENTED: spaces per level; 0 = flexible whitespace */
    const gr_frame *watch; /* a value on top of this frame finishing sets */
    int watched;           /* watched (the grouped walk's pops), whatever the
                              frame then makes of it */
} gr_ctx;

/* The set of stacks at the start of a document. */
void gr_start(gr_ctx *cx, gr_set *out);
/* Feeds byte c (0..255, or GR_EOF to end the document) to every stack in
 * `in`; the surviving stacks go to `out` (deduplicated). */
void gr_feed_set(gr_ctx *cx, const gr_set *in, int c, gr_set *out);
/* 1 if feeding GR_EOF to some stack succeeds. */
int gr_can_end(gr_ctx *cx, const gr_set *in);
/* 1 if the stack is the finished root (nothing but the end may follow). */
int gr_is_done(const gr_frame *f);

/* gr_strx.c: a mask of the plain tokens that keep the string's automaton
 * alive from state st, computed on first use and shared (thread-safe). */
const uint32_t *gr_strx_plain_mask(const sx_grammar *g, const gr_strx *x, int32_t st);
/* The plain tokens allowed as the first content of string node n (with an
 * automaton and length bounds): alive, and with a completion whose length
 * fits.  Computed on first use and shared (thread-safe); NULL when out of
 * memory. */
const uint32_t *gr_strx_start_mask(const sx_grammar *g, const gr_node *n);
/* gr_strx_universal.c: 1 when no sequence of plain characters (vocab.h)
 * kills the automaton from st, 0 when one may (or the search gave up). */
int gr_strx_plain_universal(const gr_strx *x, int32_t st);
/* gr_strx_equiv.c: classes of states whose plain masks agree -- rep[s]
 * on all plain tokens (NULL: none known), rep_short[s] on those of at
 * most SX_VOCAB_SHORT bytes (NULL: no coarser than rep), with the short
 * tokens' masks cached per rep_short state.  Computed on first use and
 * shared (thread-safe); NULL when nothing is shared. */
const gr_equiv *gr_strx_equiv(const sx_grammar *g, const gr_strx *x);
/* gr_strx_equiv.c: one byte class per distinct column of the table into
 * col (n_classes entries); how many, or -1 when out of memory. */
int32_t gr_strx_columns(const gr_strx *x, int32_t *col);
/* gr_strx_equiv.c: the longest plain token in bytes (the deepest a walk
 * over plain tokens goes). */
int32_t gr_vocab_plain_depth(const sx_vocab *v);

/* 1 if no state that a plain token reaches from st can have every
 * completion among the keys in `seen` (so gr_keyauto_all_seen is 0 all
 * along the token). */
int gr_keyauto_none_all_seen(const sx_grammar *g, const gr_strx *x, int32_t st, const void *seen);

/* gr_feed.c: some listed property in props[lo, hi) may still be added to
 * the object on frame f (not seen, in order, feasible). */
int gr_obj_range_live(const gr_node *n, const gr_frame *f, uint32_t lo, uint32_t hi);
/* gr_keymask.c: ORs into mask the plain tokens (vocab.h) that an object
 * key on frame f (phase O_KEY, no escape or character pending) may take
 * because they continue a usable listed name of its range lo..hi. */
int gr_key_names_plain(const sx_grammar *g, gr_arena *scratch, const gr_node *n,
                       const gr_frame *f, uint32_t *mask);
/* gr_keymask.c: ORs into mask the plain tokens equal to a prefix of the
 * rest (from byte pos) of one of the n strings L, sorted and sharing
 * their first pos bytes. */
void gr_lits_plain(const sx_vocab *v, const gr_lit *L, uint32_t n, uint32_t pos, uint32_t *mask);

/* gr_feed.c: the value hash of a finished value on frame f. */
uint64_t gr_frame_hash(const sx_grammar *g, const gr_frame *f);

/* gr_matcher.c: the mask by a plain walk of the whole trie, with no fast
 * path -- the reference that tests hold the fast paths to. */
int gr_fill_mask_reference(sx_matcher *m, uint32_t *mask);

/* match/gr_complete.c: a short text that finishes the document from stack f
 * (not verified: callers feed it to check).  Returns its length, or -1 if
 * none was found within cap bytes.  variant > 0 asks for other texts where
 * an item must differ from earlier ones (more members, other values), so
 * that some variant up to the number of earlier items is new.  Each byte
 * written and each value tried spends a step of `work` (may be NULL), and
 * the text stops at cap bytes, so one call costs O(cap + the steps). */
long gr_complete(const sx_grammar *g, const gr_frame *f, int variant, gr_work *work,
                 uint8_t *buf, size_t cap);

#endif
