/* The per-sequence matcher: committed state, history for rollback, and the
 * token mask computed by walking the vocabulary trie. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/match/match.h"

#define GR_MAX_DEPTH 256
/* work steps per vocabulary-trie node a mask walks (gr_work reads the
 * clock each 1,024 steps; see fill) */
#define GR_MASK_STEP 8

typedef struct gr_hist {
    gr_set set;
    gr_mark mark; /* committed arena before this step's frames */
} gr_hist;

struct sx_matcher {
    const sx_grammar *g;
    gr_arena committed; /* frames of accepted bytes */
    gr_arena scratch;   /* frames of the mask walk, dropped after each mask */
    gr_set cur;
    gr_hist *hist;      /* hist[i] = state before step i */
    size_t n_hist, cap_hist;
    int finished;       /* an end-of-turn token was accepted */
    gr_set *walk;       /* GR_MAX_DEPTH + 1 sets for the trie walk */
    int8_t (*tags)[GR_MAX_THREADS]; /* the grouped walk's tags per set (walk_grouped) */
    gr_mark *marks;
    int walk_max;       /* the largest set a walk met (split_quotes) */
    double deadline_ms; /* the completion search's and the masks' stop */
    const volatile int *cancel; /* (sx_matcher_set_bounds) */
    gr_work mwork;      /* this mask's: a step per trie node walked */
};

static gr_ctx ctx_for(const sx_matcher *m, gr_arena *a)
{
    gr_ctx cx = {.g = m->g, .arena = a, .max_ws = m->g->opts.max_ws,
                 .max_stack = m->g->opts.max_stack,
                 .indent = m->g->opts.ws_mode == SX_WS_INDENTED ? m->g->opts.indent : 0};
    return cx;
}

int sx_matcher_new(const sx_grammar *g, sx_matcher **out, sx_error *err)
{
    sx_matcher *m = calloc(1, sizeof *m);
    if (!m)
        goto fail;
    m->g = g;
    m->deadline_ms = g->opts.deadline_ms;
    m->cancel = g->opts.cancel;
    m->walk = malloc((GR_MAX_DEPTH + 1) * sizeof *m->walk);
    m->marks = malloc((GR_MAX_DEPTH + 1) * sizeof *m->marks);
    m->tags = malloc((GR_MAX_DEPTH + 1) * sizeof *m->tags);
    if (!m->walk || !m->marks || !m->tags)
        goto fail;
    sx_matcher_reset(m);
    if (m->cur.n == 0)
        goto fail;
    *out = m;
    return SX_OK;
fail:
    sx_matcher_free(m);
    return sx_err_set(err, SX_ENOMEM, "matcher: out of memory");
}

void sx_matcher_free(sx_matcher *m)
{
    if (!m)
        return;
    gr_arena_free(&m->committed);
    gr_arena_free(&m->scratch);
    free(m->hist);
    free(m->walk);
    free(m->tags);
    free(m->marks);
    free(m);
}

void sx_matcher_reset(sx_matcher *m)
{
    gr_arena_free(&m->committed);
    m->n_hist = 0;
    m->finished = 0;
    gr_ctx cx = ctx_for(m, &m->committed);
    gr_start(&cx, &m->cur);
}

static int is_eos(const sx_vocab *v, int32_t t)
{
    for (int i = 0; i < v->n_eos; i++)
        if (v->eos[i] == t)
            return 1;
    return 0;
}

/* The const queries below use the matcher's scratch arena (mark, use,
 * reset): a matcher belongs to one thread at a time anyway. */
static gr_arena *scratch_of(const sx_matcher *m)
{
    return (gr_arena *)&m->scratch;
}

int sx_matcher_can_end(const sx_matcher *m)
{
    if (m->finished || m->cur.n == 0)
        return 0;
    gr_arena *a = scratch_of(m);
    gr_mark mk = gr_arena_mark(a);
    gr_ctx cx = ctx_for(m, a);
    int ok = gr_can_end(&cx, &m->cur);
    gr_arena_reset(a, mk);
    return ok;
}

int sx_matcher_is_complete(const sx_matcher *m)
{
    if (m->finished || m->cur.n == 0)
        return 0;
    for (int i = 0; i < m->cur.n; i++)
        if (!gr_is_done(m->cur.f[i]))
            return 0;
    return 1;
}

/* Walks a vocabulary trie from the current state, setting the bit of every
 * token whose bytes keep some interpretation alive. */
static void walk_from(sx_matcher *m, gr_ctx *cx, const gr_set *from, const sx_vocab_node *N,
                      uint32_t n, uint32_t *mask)
{
    gr_mark base = gr_arena_mark(&m->scratch);
    m->walk[0] = *from;
    m->marks[0] = base;
    uint32_t i = 1;
    while (i < n && !gr_work_spend(&m->mwork, GR_MASK_STEP)) {
        const sx_vocab_node *nd = &N[i];
        int d = nd->depth;
        gr_arena_reset(&m->scratch, m->marks[d - 1]);
        gr_feed_set(cx, &m->walk[d - 1], nd->byte, &m->walk[d]);
        if (m->walk[d].n == 0) {
            i = nd->next;
            continue;
        }
        if (nd->token >= 0)
            mask[nd->token >> 5] |= 1u << (nd->token & 31);
        if (m->walk[d].n > m->walk_max || m->walk[d].overflow)
            m->walk_max = m->walk[d].overflow ? GR_MAX_THREADS + 1 : m->walk[d].n;
        m->marks[d] = gr_arena_mark(&m->scratch);
        i++;
    }
    gr_arena_reset(&m->scratch, base);
}

static int group_alike(const sx_matcher *m, int same_depth, int *lead);

/* ---- the grouped walk ----------------------------------------------------
 * Interpretations alike but for their parents (group_alike, same depth
 * too) take every byte alike until one pops the shared top: the walk
 * carries one frame per group -- tagged with the group, standing for
 * each member over its own parent -- and only where a byte pops past the
 * leader's parent does it feed that byte to each member's copy (rebase),
 * keeping what popped.  Returns 0, or -1 when the sets would hold more
 * interpretations than GR_MAX_THREADS (where the joint walk drops some,
 * only the joint walk is exact); bits already set are right either way. */
typedef struct wgroups {
    int lead[GR_MAX_THREADS];
    int size[GR_MAX_THREADS]; /* members, by leader index */
} wgroups;

/* r is b's descendant: b below it on its stack */
static int rooted(const gr_frame *r, const gr_frame *b)
{
    while (r && r->depth > b->depth)
        r = r->up;
    return r == b;
}

/* f, a descendant of b, as it stands over b2 instead (b2 at b's depth) */
static const gr_frame *rebase(gr_arena *a, const gr_frame *f, const gr_frame *b,
                              const gr_frame *b2)
{
    if (f == b)
        return b2;
    const gr_frame *up = rebase(a, f->up, b, b2);
    gr_frame *c = up ? gr_arena_alloc(a, sizeof *c) : NULL;
    if (!c)
        return NULL;
    *c = *f;
    c->up = up;
    return c;
}

/* Adds r (tag g) unless an equal frame of the same tag is there; counts
 * the interpretations the set stands for.  -1 past GR_MAX_THREADS. */
static int add_tagged(gr_set *out, int8_t *tags, int *count, const wgroups *G, const gr_frame *r,
                      int g)
{
    for (int i = 0; i < out->n; i++)
        if (tags[i] == g && gr_frames_equal(out->f[i], r))
            return 0;
    *count += g >= 0 ? G->size[g] : 1;
    if (out->n == GR_MAX_THREADS || *count > GR_MAX_THREADS)
        return -1;
    tags[out->n] = (int8_t)g;
    out->f[out->n++] = r;
    return 0;
}

static int step_grouped(sx_matcher *m, gr_ctx *cx, const wgroups *G, const gr_set *in,
                        const int8_t *tin, int c, gr_set *out, int8_t *tout)
{
    int count = 0;
    out->n = 0;
    out->overflow = in->overflow;
    for (int k = 0; k < in->n; k++) {
        const gr_frame *f = in->f[k];
        int g = tin[k];
        gr_set one = {.n = 1, .f = {f}}, res;
        const gr_frame *base = g >= 0 ? m->cur.f[g]->up : NULL;
        /* whether the top finishes on this byte, whatever the leader's
         * parent then makes of it (another member's may take it) */
        cx->watch = base;
        cx->watched = 0;
        gr_feed_set(cx, &one, c, &res);
        cx->watch = NULL;
        if (res.overflow)
            return -1;
        for (int i = 0; i < res.n; i++) {
            int keep = g >= 0 && rooted(res.f[i], base);
            if (add_tagged(out, tout, &count, G, res.f[i], keep ? g : -1))
                return -1;
        }
        if (g < 0 || !cx->watched)
            continue;
        /* the byte pops the top: each other member on its own */
        for (int j = g + 1; j < m->cur.n; j++) {
            if (G->lead[j] != g)
                continue;
            const gr_frame *bj = m->cur.f[j]->up;
            const gr_frame *fj = rebase(cx->arena, f, base, bj);
            if (!fj)
                return -1;
            gr_set oj = {.n = 1, .f = {fj}}, rj;
            gr_feed_set(cx, &oj, c, &rj);
            if (rj.overflow)
                return -1;
            for (int i = 0; i < rj.n; i++)
                if (!rooted(rj.f[i], bj) && add_tagged(out, tout, &count, G, rj.f[i], -1))
                    return -1;
        }
    }
    return 0;
}

static int walk_grouped(sx_matcher *m, gr_ctx *cx, const wgroups *G, const sx_vocab_node *N,
                        uint32_t n, uint32_t *mask)
{
    gr_mark base = gr_arena_mark(&m->scratch);
    gr_set *w = m->walk;
    w[0].n = 0;
    w[0].overflow = m->cur.overflow;
    for (int i = 0; i < m->cur.n; i++) {
        if (G->lead[i] != i)
            continue;
        m->tags[0][w[0].n] = (int8_t)(G->size[i] > 1 ? i : -1);
        w[0].f[w[0].n++] = m->cur.f[i];
    }
    m->marks[0] = base;
    int rc = 0;
    for (uint32_t i = 1; i < n && !gr_work_spend(&m->mwork, GR_MASK_STEP);) {
        const sx_vocab_node *nd = &N[i];
        int d = nd->depth;
        gr_arena_reset(&m->scratch, m->marks[d - 1]);
        if (step_grouped(m, cx, G, &w[d - 1], m->tags[d - 1], nd->byte, &w[d], m->tags[d])) {
            rc = -1;
            break;
        }
        if (w[d].n == 0) {
            i = nd->next;
            continue;
        }
        if (nd->token >= 0)
            mask[nd->token >> 5] |= 1u << (nd->token & 31);
        m->marks[d] = gr_arena_mark(&m->scratch);
        i++;
    }
    gr_arena_reset(&m->scratch, base);
    return rc;
}

static void walk(sx_matcher *m, gr_ctx *cx, const sx_vocab_node *N, uint32_t n, uint32_t *mask)
{
    wgroups G;
    if (m->cur.n > 1 && group_alike(m, 1, G.lead) < m->cur.n) {
        for (int i = 0; i < m->cur.n; i++)
            G.size[i] = 0;
        for (int i = 0; i < m->cur.n; i++)
            G.size[G.lead[i]]++;
        if (walk_grouped(m, cx, &G, N, n, mask) == 0)
            return;
    }
    walk_from(m, cx, &m->cur, N, n, mask);
}

/* Groups the interpretations alike but for their parents (the branches
 * of an anyOf or oneOf that reach one string): lead[i] is the first of
 * i's group.  Inside string content such interpretations take a token
 * without a quote alike -- it cannot end the string -- unless the
 * parent itself decides (an item that must differ from the earlier ones,
 * a literal of a uniqueItems array of literals): there the parents must
 * be alike too.  same_depth: also at one depth (the grouped walk, where
 * a top may open values and the stack bound counts).  Returns the number
 * of groups. */
static int group_alike(const sx_matcher *m, int same_depth, int *lead)
{
    int n_groups = 0;
    for (int i = 0; i < m->cur.n; i++) {
        const gr_frame *f = m->cur.f[i];
        int by_up = (f->flags & F_UITEM) || (f->node >= 0 && m->g->nodes[f->node].kind == GK_LITSET);
        lead[i] = i;
        for (int j = 0; j < i; j++) {
            const gr_frame *o = m->cur.f[j];
            if (lead[j] == j && f->up && o->up && gr_frame_top_equal(f, o) &&
                (!same_depth || f->depth == o->depth) &&
                (!by_up || f->up == o->up || (f->up && o->up && gr_frame_top_equal(f->up, o->up)))) {
                lead[i] = j;
                break;
            }
        }
        n_groups += lead[i] == i;
    }
    return n_groups;
}

/* A patterned string with length bounds before its first character. */
static int at_start(const gr_node *n, const gr_frame *f)
{
    const gr_strx *x = n->u.str.x;
    return x && !n->u.str.raw && f->count == 0 && (int32_t)f->pos == x->start &&
           (n->u.str.min_len > 0 || n->u.str.max_len >= 0);
}

/* Inside string content, a plain token (see vocab.h) only adds characters:
 * if every interpretation is in the middle of a string (or of an additional
 * object key, where any characters do), the plain tokens allowed are known
 * without a walk -- those that fit the room left, or for a patterned
 * string those that keep its automaton alive (cached per state) -- and only
 * the other tokens need the walk.  Returns 0, ORs the plain part into
 * mask and sets *lp to the trie the walk needs (below), or returns -1
 * when the fast path does not apply.
 *
 * Near the maximum length of a patterned string, the automaton's mask is
 * still exact for the plain tokens short enough that the shortest way to
 * accept fits after them: with lp_cp[k] of room to spare, those of at
 * most lp_cp[k] code points come from the mask and the walk takes the
 * trie of the others (lp_nodes[k]).  *lp = SX_VOCAB_N_LP: no such string,
 * the trie of the tokens that are not plain. */
static int plain_part(sx_matcher *m, uint32_t *mask, int *lp)
{
    const sx_vocab *v = m->g->vocab;
    *lp = SX_VOCAB_N_LP;
    for (int i = 0; i < m->cur.n; i++) {
        const gr_frame *f = m->cur.f[i];
        if (f->node < 0)
            return -1;
        const gr_node *n = &m->g->nodes[f->node];
        if (n->kind == GK_OBJECT && f->phase == O_KEY && !(f->flags & F_KESC) && !f->aux) {
            /* a key being typed: the listed names it may still become
             * (gr_key_names_plain) and, if it may be an additional key,
             * those; with a bounded key language the keys already used
             * matter, which only the walk sees -- unless every state
             * ahead has more completions than keys were used */
            if ((f->flags & F_KGEN) && n->u.obj.keyx && f->ext &&
                !n->u.obj.keyx->all_unbounded &&
                !gr_keyauto_none_all_seen(m->g, n->u.obj.keyx, f->kst, f->ext))
                return -1;
            continue;
        } else if (n->kind == GK_LITSET) {
            /* inside a string literal of an enum or const: the literals'
             * rest (gr_lits_plain), while every one of them still needs
             * its closing quote -- a complete one would hand the token on
             * to the enclosing value.  An item that must differ from the
             * earlier ones keeps the literals no earlier item was (see
             * feed_lit); literal classes (lit_class) only the walk sees. */
            const gr_lit *L = n->u.lit.lits;
            const gr_frame *up = f->up;
            if (f->pos == 0 || f->lo >= f->hi || L[f->lo].b[0] != '"' || L[f->lo].len == f->pos ||
                (f->flags & F_KESC) || /* an escape under way (gr_feed.c) */
                (up && up->node >= 0 && m->g->nodes[up->node].kind == GK_ARRAY &&
                 m->g->nodes[up->node].u.arr.lit_class))
                return -1;
            continue;
        } else if (n->kind == GK_STRING && f->phase == S_IN && !f->aux) {
            /* pattern and lengths together: the automaton's mask is exact
             * only while the bounds are far (any token, then the shortest
             * way to accept, still fits); near them the walk decides --
             * but for the first content, whose mask judges the lengths
             * token by token (gr_strx_start_mask, cached per node) */
            const gr_strx *x = n->u.str.x;
            int64_t mn = n->u.str.min_len, mx = n->u.str.max_len;
            if (at_start(n, f) && !(f->flags & F_UITEM))
                continue;
            /* below the minimum the lengths reachable ahead matter too,
             * unless every state reaches every length up to the maximum
             * from its shortest completion on (len_dense), or one
             * character more reaches the minimum: a plain token adds at
             * least one */
            int min_far = f->count + 1 >= mn || (mx < 0 && x && x->all_unbounded) ||
                          (mx >= 0 && x && x->lenbits && x->len_dense);
            /* the shortest completion of any state a token reaches */
            int32_t mu = x ? (x->mu ? x->mu[f->pos] : x->max_min_cps) : 0;
            if (x && (mn > 0 || mx >= 0) &&
                !((mx < 0 || f->count + v->max_plain_cp + mu <= mx) && min_far)) {
                if (mx < 0 || !min_far)
                    return -1;
                /* room to spare after a token of lp_cp[k]; none needed when
                 * every state ahead accepts (mu 0): the room decides */
                int k = SX_VOCAB_N_LP - 1;
                while (mu > 0 && k >= 0 && f->count + v->lp_cp[k] + mu > mx)
                    k--;
                if (k < 0)
                    return -1;
                if (mu > 0 && k < *lp)
                    *lp = k;
            }
            /* an item that must differ from earlier ones: exact only while
             * every state a token reaches has endless completions */
            if ((f->flags & F_UITEM) && f->up->count > 0 &&
                !(x ? mx < 0 && x->all_unbounded : mx < 0 || f->count + v->max_plain_cp < mx))
                return -1;
        } else {
            return -1;
        }
    }
    for (int i = 0; i < m->cur.n; i++) {
        const gr_frame *f = m->cur.f[i];
        const gr_node *n = &m->g->nodes[f->node];
        const uint32_t *pl;
        if (n->kind == GK_LITSET) {
            const gr_vseen *seen = (f->flags & F_UITEM) ? f->up->ext : NULL;
            if (!seen) {
                gr_lits_plain(v, n->u.lit.lits + f->lo, f->hi - f->lo, f->pos, mask);
                continue;
            }
            gr_mark mk = gr_arena_mark(&m->scratch);
            gr_lit *u = gr_arena_alloc(&m->scratch, (size_t)(f->hi - f->lo) * sizeof *u);
            if (!u)
                return -1;
            uint32_t k = 0;
            for (uint32_t j = f->lo; j < f->hi; j++)
                if (!gr_vseen_has(seen, n->u.lit.hash[j]))
                    u[k++] = n->u.lit.lits[j];
            gr_lits_plain(v, u, k, f->pos, mask);
            gr_arena_reset(&m->scratch, mk);
            continue;
        }
        if (n->kind == GK_STRING && n->u.str.x && at_start(n, f) && !(f->flags & F_UITEM)) {
            pl = gr_strx_start_mask(m->g, n);
            if (!pl)
                return -1;
        } else if (n->kind == GK_STRING && n->u.str.x) {
            pl = gr_strx_plain_mask(m->g, n->u.str.x, (int32_t)f->pos);
            if (!pl)
                return -1;
            const gr_strx *x = n->u.str.x;
            int64_t mx = n->u.str.max_len;
            int64_t mu = x->mu ? x->mu[f->pos] : x->max_min_cps;
            if (mx >= 0 && f->count + v->max_plain_cp + mu > mx) {
                /* near the bound: the plain tokens short enough (the
                 * longer ones are in the walk's trie, or do not fit) */
                int64_t L = mx - f->count - mu;
                if (*lp < SX_VOCAB_N_LP && v->lp_cp[*lp] < L)
                    L = v->lp_cp[*lp];
                const uint32_t *sh = v->plain_le + (size_t)L * (size_t)v->mask_words;
                for (int32_t w = 0; w < v->mask_words; w++)
                    mask[w] |= pl[w] & sh[w];
                continue;
            }
        } else if (n->kind == GK_OBJECT) {
            /* listed names by a walk along their bytes; additional keys:
             * any plain token, or what the key automaton takes (cached
             * per state) */
            if (!(f->flags & F_KGEN) || n->u.obj.keyx)
                if (gr_key_names_plain(m->g, &m->scratch, n, f, mask))
                    return -1;
            if (!(f->flags & F_KGEN))
                continue;
            pl = n->u.obj.keyx ? gr_strx_plain_mask(m->g, n->u.obj.keyx, f->kst)
                               : v->plain_le + (size_t)v->max_plain_cp * (size_t)v->mask_words;
            if (!pl)
                return -1;
        } else {
            int64_t room = n->kind == GK_STRING && n->u.str.max_len >= 0
                               ? n->u.str.max_len - f->count
                               : -1;
            int64_t L = room < 0 || room > v->max_plain_cp ? v->max_plain_cp : room;
            pl = v->plain_le + (size_t)L * (size_t)v->mask_words;
        }
        for (int32_t w = 0; w < v->mask_words; w++)
            mask[w] |= pl[w];
    }
    return 0;
}

/* An object key on frame f that may be any additional name (no key
 * automaton), typed at a character boundary: a token with no '"' keeps it
 * alive exactly when it is plain or valid key content (vocab.h,
 * key_free) -- as an additional name, since no listed name in its range
 * has a backslash ahead (the one spelling a listed name and an additional
 * key could not share). */
static int free_key(const gr_node *n, const gr_frame *f)
{
    if (n->kind != GK_OBJECT || f->phase != O_KEY || !(f->flags & F_KGEN) ||
        (f->flags & F_KESC) || f->aux || n->u.obj.keyx)
        return 0;
    for (uint32_t i = f->lo; i < f->hi; i++) {
        const gr_prop *p = &n->u.obj.props[i];
        if (p->key_len > f->pos && memchr(p->key + f->pos, '\\', p->key_len - f->pos))
            return 0;
    }
    return 1;
}

/* Every interpretation is inside a string with no automaton, at a
 * character boundary (see vocab.h, free_le), or in an additional object
 * key (free_key).  Returns the largest room in characters of the strings
 * (-1 unbounded, -3 when there are only keys; *keys = 1 when there are
 * keys), or -2 when that is not the case. */
static int64_t free_strings(const sx_matcher *m, int *keys)
{
    int64_t room = -3;
    *keys = 0;
    for (int i = 0; i < m->cur.n; i++) {
        const gr_frame *f = m->cur.f[i];
        if (f->node < 0)
            return -2;
        const gr_node *n = &m->g->nodes[f->node];
        if (free_key(n, f)) {
            *keys = 1;
            continue;
        }
        if (n->kind != GK_STRING || f->phase != S_IN || f->aux || n->u.str.x || n->u.str.raw)
            return -2;
        int64_t r = n->u.str.max_len < 0 ? -1 : n->u.str.max_len - f->count;
        if ((f->flags & F_UITEM) && f->up->count > 0 && r >= 0 &&
            r <= (int64_t)m->g->vocab->max_free_starts + 1)
            return -2; /* near the end an item may run out of new values */
        if (room == -3 || r == -1 || (room != -1 && r > room))
            room = r;
    }
    return room;
}

/* The quote tokens by their split (vocab.h, sq_*): every interpretation
 * is a free string or a free key (free_strings) whose value hash is not
 * tracked, so that the state after the closing quote does not depend on
 * the content before it.  For each group of interpretations alike but
 * for their parents (at most 8 groups), the states after the close are
 * reached once, the suffixes walked from them together, and a token
 * P '"' S allowed when S survives
 * and P is content that fits -- for a key, also a new key: where P makes
 * it a listed name in range, the name decides (a walk of the quote
 * tokens for the names alone), and one equal to an earlier key is
 * refused, as feed_key does by their hashes.  The
 * quote tokens that are not split are walked.  Only quote tokens are
 * set in mask.  Returns 0, or -1 (some quote tokens may be set already)
 * when the joint walk could have met more interpretations than a set
 * holds (GR_MAX_THREADS): there only the joint walk is exact. */
typedef struct hslot {
    uint64_t h;
    int32_t prop; /* kind 1: the listed name */
    int8_t kind;  /* 0 empty, 1 a listed name in range, 2 an earlier key */
} hslot;

static const hslot *hs_find(const hslot *t, uint32_t cap, uint64_t h)
{
    for (uint32_t i = (uint32_t)gr_mix(h) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!t[i].kind || t[i].h == h)
            return &t[i];
}

static void hs_put(hslot *t, uint32_t cap, uint64_t h, int kind, int32_t prop)
{
    hslot *s = (hslot *)hs_find(t, cap, h);
    if (!s->kind) {
        s->h = h;
        s->kind = (int8_t)kind;
        s->prop = prop;
    }
}

static int split_quotes(sx_matcher *m, gr_ctx *cx, uint32_t *mask)
{
    const sx_vocab *v = m->g->vocab;
    if (!v->sfx_nodes)
        return -1;
    /* a hashed value (uniqueItems) anywhere means the joint walk: decide
     * that before splitting the interpretations ahead of it for nothing */
    for (int i = 0; i < m->cur.n; i++)
        if (m->cur.f[i]->flags & F_UH)
            return -1;
    /* interpretations alike but for their parents (the branches of an
     * anyOf or oneOf that hold the same string) take a token's content
     * alike: one group, whose closes are walked together */
    int lead[GR_MAX_THREADS], n_groups = group_alike(m, 0, lead);
    if (n_groups > 8)
        return -1;
    int budget = 0;
    uint32_t *alive = gr_arena_alloc(&m->scratch, ((v->n_sfx + 31) / 32) * sizeof *alive);
    gr_frame *tmps = gr_arena_alloc(&m->scratch, (size_t)m->cur.n * sizeof *tmps);
    gr_frame *names = gr_arena_alloc(&m->scratch, (size_t)m->cur.n * sizeof *names);
    if (!alive || !tmps || !names)
        return -1;
    for (int i = 0; i < m->cur.n; i++) {
        if (lead[i] != i)
            continue;
        const gr_frame *f = m->cur.f[i];
        const gr_node *n = &m->g->nodes[f->node];
        int key = n->kind == GK_OBJECT;
        /* the group: grp its frames, z1 their closes, ns their listed
         * names alone */
        gr_set grp = {.n = 0}, z1 = {.n = 0}, ns = {.n = 0}, z;
        for (int j = i; j < m->cur.n; j++)
            if (lead[j] == i)
                grp.f[grp.n++] = m->cur.f[j];
        hslot *tab = NULL;
        uint32_t cap = 0;
        int64_t close_val = 0;
        if (key) {
            /* the close as an additional key, with a hash not yet used */
            close_val = 0x5bd1e9955bd1e995LL;
            while (gr_key_listed(f->ext, (uint64_t)close_val))
                close_val++;
            uint32_t cnt = 0;
            for (const gr_keyh *k = f->ext; k; k = k->next)
                cnt++;
            for (uint32_t j = f->lo; j < f->hi; j++)
                cnt++;
            cap = 16;
            while (cap < 2 * cnt)
                cap *= 2;
            tab = gr_arena_alloc(&m->scratch, cap * sizeof *tab);
            if (!tab)
                return -1;
            memset(tab, 0, cap * sizeof *tab);
            for (uint32_t j = f->lo; j < f->hi; j++) {
                const gr_prop *p = &n->u.obj.props[j];
                if (p->key_len >= f->pos && p->key_len - f->pos <= 255)
                    hs_put(tab, cap, p->hash, 1, (int32_t)j);
            }
            for (const gr_keyh *k = f->ext; k; k = k->next)
                hs_put(tab, cap, k->h, 2, -1);
        }
        for (int j = 0; j < grp.n; j++) {
            gr_frame *t = &tmps[z1.n];
            *t = *grp.f[j];
            if (key) {
                t->lo = t->hi = 0;
                t->val = close_val;
            } else if (t->count < n->u.str.min_len) {
                t->count = n->u.str.min_len;
            }
            z1.f[z1.n++] = t;
            if (key) {
                names[ns.n] = *grp.f[j];
                names[ns.n].flags &= (uint8_t)~F_KGEN;
                ns.f[ns.n] = &names[ns.n];
                ns.n++;
            }
        }
        gr_mark mk = gr_arena_mark(&m->scratch);
        gr_feed_set(cx, &z1, '"', &z);
        memset(alive, 0, ((v->n_sfx + 31) / 32) * sizeof *alive);
        m->walk_max = z.n;
        if (z.n) {
            alive[0] |= 1;
            walk_from(m, cx, &z, v->sfx_nodes, v->n_sfx_nodes, alive);
        }
        int wmax = m->walk_max;
        if (key && f->lo < f->hi) {
            /* a key that a token makes a listed name is that property
             * (or nothing): every quote token for the names alone */
            m->walk_max = ns.n;
            walk_from(m, cx, &ns, v->q_nodes, v->n_q_nodes, mask);
            budget += m->walk_max;
        }
        m->walk_max = grp.n;
        if (key)
            walk_from(m, cx, &grp, v->qk_nodes, v->n_qk_nodes, mask);
        else
            walk_from(m, cx, &grp, v->qs_nodes, v->n_qs_nodes, mask);
        budget += (wmax > m->walk_max ? wmax : m->walk_max);
        if (wmax > GR_MAX_THREADS || m->walk_max > GR_MAX_THREADS || budget > GR_MAX_THREADS)
            return -1;
        int64_t mn = key ? 0 : n->u.str.min_len, mx = key ? -1 : n->u.str.max_len;
        for (uint32_t w = 0; w < (v->n_sfx + 31) / 32; w++) {
            for (uint32_t bits = alive[w]; bits; bits &= bits - 1) {
                uint32_t id = w * 32 + (uint32_t)__builtin_ctz(bits);
                for (uint32_t e = v->sfx_first[id]; e < v->sfx_first[id + 1]; e++) {
                    int32_t t = v->sq_tok[e];
                    if (!key) {
                        int64_t c = v->sq_schars[e];
                        if (c >= 0 && f->count + c >= mn && (mx < 0 || f->count + c <= mx) &&
                            (m->g->opts.escapes == SX_ESC_ANY || !(v->str_pair[t >> 5] >> (t & 31) & 1)))
                            mask[t >> 5] |= 1u << (t & 31);
                        continue;
                    }
                    if (v->sq_kchars[e] < 0 || (mask[t >> 5] >> (t & 31) & 1))
                        continue;
                    uint64_t h = (uint64_t)f->val;
                    const uint8_t *b = v->tok_bytes[t];
                    for (uint32_t k = 0; k < v->sq_plen[e]; k++)
                        h = (h ^ b[k]) * GR_FNV_PRIME;
                    const hslot *s = hs_find(tab, cap, h);
                    if (s->kind == 2)
                        continue; /* an earlier key */
                    if (s->kind == 1) {
                        /* a listed name (the names' walk decided), or
                         * another key of the same hash */
                        const gr_prop *p = &n->u.obj.props[s->prop];
                        if (p->key_len == f->pos + v->sq_plen[e] &&
                            !memcmp(p->key + f->pos, b, v->sq_plen[e]))
                            continue;
                        if (gr_key_listed(f->ext, h))
                            continue;
                    }
                    mask[t >> 5] |= 1u << (t & 31);
                }
            }
        }
        gr_arena_reset(&m->scratch, mk);
    }
    return 0;
}

/* The tokens with no quote that free_strings' interpretations allow
 * (room and keys as it returned), written over mask; any: the grammar
 * takes every spelling (SX_ESC_ANY), else no surrogate pair. */
static void quote_free_blocks(const sx_vocab *v, int64_t room, int keys, int any, uint32_t *mask)
{
    if (room >= -1) {
        int64_t lp = room < 0 || room > v->max_plain_cp ? v->max_plain_cp : room;
        int64_t lf = room < 0 || room > v->max_free_starts ? v->max_free_starts : room;
        const uint32_t *pl = v->plain_le + (size_t)lp * (size_t)v->mask_words;
        const uint32_t *fl = v->free_le + (size_t)lf * (size_t)v->mask_words;
        for (int32_t w = 0; w < v->mask_words; w++)
            mask[w] = pl[w] | (fl[w] & (any ? ~0u : ~v->str_pair[w]));
    } else {
        memset(mask, 0, (size_t)v->mask_words * sizeof *mask);
    }
    if (keys) {
        const uint32_t *pl = v->plain_le + (size_t)v->max_plain_cp * (size_t)v->mask_words;
        for (int32_t w = 0; w < v->mask_words; w++)
            mask[w] |= pl[w] | (any ? v->key_free_any[w] : v->key_free[w]);
    }
}

/* A mask's work: one pass over the vocabulary trie per walk (a few
 * walks), each trie node a feed of one byte to at most GR_MAX_THREADS
 * interpretations.  That byte's cost is not bounded by a small constant
 * (a uniqueItems item checked every earlier item for its value until the
 * hashes went into a set, ir/gr_vseen.c: with 8,000 three-letter strings
 * before it one mask took 6 s, x86, 2026-12; now milliseconds).  Hence the
 * deadline: the walks poll the matcher's bounds (sx_matcher_set_bounds)
 * at every trie node, reading the clock each 128 of them (a node is 0.1
 * to 150 us: the read costs under 0.2%, the overrun stays below ~20 ms),
 * and a mask that runs past them is abandoned: nothing allowed,
 * SX_ELIMIT. */
static int fill_walks(sx_matcher *m, uint32_t *mask, int fast);

static int fill(sx_matcher *m, uint32_t *mask, int fast)
{
    sx_gr_opts bounds = {.deadline_ms = m->deadline_ms, .cancel = m->cancel};
    gr_work_init(&m->mwork, &bounds, LONG_MAX);
    int rc = gr_work_poll(&m->mwork) ? SX_ELIMIT : fill_walks(m, mask, fast);
    if (rc == SX_OK && m->mwork.stop)
        rc = SX_ELIMIT;
    if (rc)
        memset(mask, 0, (size_t)m->g->vocab->mask_words * sizeof *mask);
    return rc;
}

static int fill_walks(sx_matcher *m, uint32_t *mask, int fast)
{
    const sx_vocab *v = m->g->vocab;
    memset(mask, 0, (size_t)v->mask_words * sizeof *mask);
    if (m->finished || m->cur.n == 0)
        return SX_OK;
    gr_ctx cx = ctx_for(m, &m->scratch);
    int keys = 0;
    int64_t room = fast ? free_strings(m, &keys) : -2;
    int trie;
    if (room >= -1 || room == -3) {
        /* plain and other quote-free content as blocks, by the room left;
         * the tokens that hold a quote by their split, else walked */
        quote_free_blocks(v, room, keys, m->g->opts.escapes == SX_ESC_ANY, mask);
        gr_mark qm = gr_arena_mark(&m->scratch);
        int split = split_quotes(m, &cx, mask);
        gr_arena_reset(&m->scratch, qm);
        if (split) {
            /* the blocks hold no quote token: start those again */
            quote_free_blocks(v, room, keys, m->g->opts.escapes == SX_ESC_ANY, mask);
            walk(m, &cx, v->q_nodes, v->n_q_nodes, mask);
        }
    } else if (fast && plain_part(m, mask, &trie) == 0) {
        int lead[GR_MAX_THREADS];
        if (trie < SX_VOCAB_N_LP) {
            walk(m, &cx, v->lp_nodes[trie], v->n_lp_nodes[trie], mask);
        } else if (m->cur.n > 1 && group_alike(m, 0, lead) < m->cur.n) {
            /* the tokens with no quote for one of each group, those with
             * one for all (their close reaches the parents) */
            gr_set one = {.n = 0};
            for (int i = 0; i < m->cur.n; i++)
                if (lead[i] == i)
                    one.f[one.n++] = m->cur.f[i];
            walk_from(m, &cx, &one, v->nq_nodes, v->n_nq_nodes, mask);
            walk(m, &cx, v->q_nodes, v->n_q_nodes, mask);
        } else {
            walk(m, &cx, v->np_nodes, v->n_np_nodes, mask);
        }
    } else {
        memset(mask, 0, (size_t)v->mask_words * sizeof *mask);
        if (fast)
            walk(m, &cx, v->nodes, v->n_nodes, mask);
        else /* the reference: every interpretation on its own */
            walk_from(m, &cx, &m->cur, v->nodes, v->n_nodes, mask);
    }
    gr_mark base = gr_arena_mark(&m->scratch);
    if (gr_can_end(&cx, &m->cur))
        for (int k = 0; k < v->n_eos; k++)
            mask[v->eos[k] >> 5] |= 1u << (v->eos[k] & 31);
    gr_arena_reset(&m->scratch, base);
    return SX_OK;
}

int sx_matcher_fill_mask(sx_matcher *m, uint32_t *mask)
{
    return fill(m, mask, 1);
}

int gr_fill_mask_reference(sx_matcher *m, uint32_t *mask)
{
    return fill(m, mask, 0);
}

static int push_hist(sx_matcher *m)
{
    if (m->n_hist == m->cap_hist) {
        size_t cap = m->cap_hist ? m->cap_hist * 2 : 64;
        gr_hist *h = realloc(m->hist, cap * sizeof *h);
        if (!h)
            return SX_ENOMEM;
        m->hist = h;
        m->cap_hist = cap;
    }
    m->hist[m->n_hist].set = m->cur;
    m->hist[m->n_hist].mark = gr_arena_mark(&m->committed);
    m->n_hist++;
    return SX_OK;
}

int sx_matcher_accept_bytes(sx_matcher *m, const void *bytes, size_t n, sx_error *err)
{
    const uint8_t *b = bytes;
    if (m->finished)
        return sx_err_set(err, SX_EINVAL, "matcher: document already finished");
    if (push_hist(m))
        return sx_err_set(err, SX_ENOMEM, "matcher: out of memory");
    gr_ctx cx = ctx_for(m, &m->committed);
    gr_set a = m->cur, nb;
    for (size_t i = 0; i < n; i++) {
        gr_feed_set(&cx, &a, b[i], &nb);
        if (nb.n == 0) {
            m->n_hist--;
            gr_arena_reset(&m->committed, m->hist[m->n_hist].mark);
            return sx_err_setp(err, SX_EINVAL, NULL, (long)i,
                               "matcher: byte %zu (0x%02x) is not allowed here", i, b[i]);
        }
        a = nb;
    }
    m->cur = a;
    return SX_OK;
}

int sx_matcher_accept(sx_matcher *m, int32_t token, sx_error *err)
{
    const sx_vocab *v = m->g->vocab;
    if (token < 0 || token >= v->n_tokens)
        return sx_err_set(err, SX_EINVAL, "matcher: token %d out of range", token);
    if (m->finished)
        return sx_err_set(err, SX_EINVAL, "matcher: document already finished");
    if (is_eos(v, token)) {
        if (!sx_matcher_can_end(m))
            return sx_err_set(err, SX_EINVAL, "matcher: end of turn before the document is complete");
        if (push_hist(m))
            return sx_err_set(err, SX_ENOMEM, "matcher: out of memory");
        m->finished = 1;
        return SX_OK;
    }
    if (v->is_special[token] || v->tok_len[token] == 0)
        return sx_err_set(err, SX_EINVAL, "matcher: special token %d is not document text", token);
    return sx_matcher_accept_bytes(m, v->tok_bytes[token], v->tok_len[token], err);
}

int sx_matcher_rollback(sx_matcher *m, size_t n)
{
    if (n > m->n_hist)
        return SX_EINVAL;
    if (n == 0)
        return SX_OK;
    m->n_hist -= n;
    m->cur = m->hist[m->n_hist].set;
    gr_arena_reset(&m->committed, m->hist[m->n_hist].mark);
    m->finished = 0;
    return SX_OK;
}

size_t sx_matcher_forced_bytes(const sx_matcher *m, uint8_t *buf, size_t cap)
{
    if (m->finished || m->cur.n == 0)
        return 0;
    gr_arena *ar = scratch_of(m);
    gr_mark mk = gr_arena_mark(ar);
    gr_ctx cx = ctx_for(m, ar);
    gr_set a = m->cur, nb, only;
    size_t k = 0;
    while (k < cap) {
        int count = 0, which = -1;
        if (gr_can_end(&cx, &a))
            break;
        for (int c = 0; c < 256 && count < 2; c++) {
            gr_feed_set(&cx, &a, c, &nb);
            if (nb.n) {
                count++;
                which = c;
                only = nb;
            }
        }
        if (count != 1)
            break;
        buf[k++] = (uint8_t)which;
        a = only;
    }
    gr_arena_reset(ar, mk);
    return k;
}

/* Indented layout: completions are built compact, then fed with their
 * whitespace put in: before a byte the matcher refuses, the one run (a
 * space, or a newline and spaces) after which it is accepted.  The text
 * goes to out (at most cap bytes), the state reached to *end; returns the
 * length, or -1. */
static long indent_text(gr_ctx *cx, gr_set s, const uint8_t *in, long n, uint8_t *out,
                        size_t cap, gr_set *end)
{
    size_t k = 0;
    gr_set nb, t, t2;
    for (long i = 0; i < n; i++) {
        gr_feed_set(cx, &s, in[i], &nb);
        /* refused: the run before it -- spaces alone (after a colon, or
         * the rest of a run already started), else a newline and spaces */
        for (int lead = 0; !nb.n && lead < 2; lead++) {
            size_t start = k;
            t = s;
            if (lead) {
                gr_feed_set(cx, &s, '\n', &t);
                if (t.n && k < cap)
                    out[k++] = '\n';
            }
            while (t.n && k < cap) {
                gr_feed_set(cx, &t, in[i], &nb);
                if (nb.n)
                    break;
                gr_feed_set(cx, &t, ' ', &t2);
                t = t2;
                out[k++] = ' ';
            }
            if (!nb.n)
                k = start;
        }
        if (!nb.n || k >= cap)
            return -1;
        out[k++] = in[i];
        s = nb;
    }
    *end = s;
    return (long)k;
}

/* Each interpretation proposes the text that closes its open values with
 * the shortest witnesses; the shortest proposal that the matcher really
 * accepts wins. */
void sx_matcher_set_bounds(sx_matcher *m, double deadline_ms, const volatile int *cancel)
{
    m->deadline_ms = deadline_ms;
    m->cancel = cancel;
}

/* The completion search's work: each interpretation (at most
 * GR_MAX_THREADS) tries at most 64 variants, each a text of at most cap
 * bytes built from stored witnesses and fed back once -- O(64 x 64 x cap
 * x stack depth) at worst; the step budget bounds it tighter, and the
 * deadline and cancel flag stop it sooner. */
#define GR_COMPLETE_WORK (32L << 20)

size_t sx_matcher_shortest_completion(const sx_matcher *m, uint8_t *buf, size_t cap)
{
    if (m->finished || m->cur.n == 0)
        return (size_t)-1;
    sx_gr_opts bounds = {.deadline_ms = m->deadline_ms, .cancel = m->cancel};
    gr_work work;
    gr_work_init(&work, &bounds, GR_COMPLETE_WORK);
    if (gr_work_poll(&work))
        return (size_t)-1;
    uint8_t *tmp = malloc(cap ? cap : 1);
    uint8_t *lay = m->g->opts.ws_mode == SX_WS_INDENTED ? malloc(cap ? cap : 1) : NULL;
    size_t best = (size_t)-1;
    gr_arena *ar = scratch_of(m);
    gr_mark mk = gr_arena_mark(ar);
    gr_ctx cx = ctx_for(m, ar);
    for (int i = 0; tmp && i < m->cur.n && !work.stop; i++) {
        /* items that must differ from earlier ones: a variant per earlier
         * item is enough for one to be new */
        int variants = 0;
        for (const gr_frame *f = m->cur.f[i]; f && f->node >= 0; f = f->up) {
            const gr_node *n = &m->g->nodes[f->node];
            if (n->kind == GK_ARRAY && n->u.arr.unique == GR_UNIQ_HASH)
                variants += 1 + (f->count > 63 ? 63 : (int)f->count) +
                            (n->u.arr.min_items > 63 ? 63 : (int)n->u.arr.min_items);
        }
        if (variants > 63)
            variants = 63;
        for (int v = 0; v <= variants && !work.stop; v++) {
            long n = gr_complete(m->g, m->cur.f[i], v, &work, tmp, cap);
            if (n < 0 || (best != (size_t)-1 && (size_t)n >= best))
                continue;
            gr_set s = m->cur, nb;
            const uint8_t *text = tmp;
            if (lay) {
                if (!(lay && (n = indent_text(&cx, m->cur, tmp, n, lay, cap, &s)) >= 0)) {
                    gr_arena_reset(ar, mk);
                    continue;
                }
                text = lay;
            } else {
                long k = 0;
                for (; k < n && s.n && !gr_work_spend(&work, s.n); k++) {
                    gr_feed_set(&cx, &s, tmp[k], &nb);
                    s = nb;
                }
                if (k < n)
                    s.n = 0; /* stopped part way: not verified, not offered */
            }
            int ok = s.n && gr_can_end(&cx, &s) && (best == (size_t)-1 || (size_t)n < best);
            gr_arena_reset(ar, mk);
            if (ok) {
                memcpy(buf, text, (size_t)n);
                best = (size_t)n;
                break;
            }
        }
    }
    free(tmp);
    free(lay);
    return best;
}
