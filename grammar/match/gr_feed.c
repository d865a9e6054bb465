/* The byte-level program of the matcher: feeding one byte to a stack of
 * open values.  Every transition keeps the invariant that the document can
 * still be completed validly (soundness); a byte that would break it kills
 * that interpretation. */
#include "common/sx_text.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/match/match.h"

/* sentinel returned by feeds that finish the whole document */
static const gr_frame gr_end_frame = {.node = -2};

static int is_ws(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static gr_frame *clone(gr_ctx *cx, const gr_frame *f)
{
    gr_frame *n = gr_arena_alloc(cx->arena, sizeof *n);
    if (n)
        *n = *f;
    return n;
}

static void emit(gr_set *out, const gr_frame *f);

/* gr_hset_add's allocator: the frames' own arena, so a set lives and
 * goes with the frames that refer to it. */
static void *arena_alloc(void *arena, size_t n)
{
    return gr_arena_alloc(arena, n);
}

/* Whitespace between tokens of a container, up to the bound (so a model
 * can never loop on it). */
static void feed_ws(gr_ctx *cx, const gr_frame *f, gr_set *out)
{
    if (f->ws >= cx->max_ws)
        return;
    gr_frame *nf = clone(cx, f);
    if (nf) {
        nf->ws++;
        emit(out, nf);
    }
}

/* Hash lists (`ext`) built by different interpretations hold equal
 * content at different addresses: an item both branches of an anyOf
 * finished with one value.  Equal lists in the same order mean the same
 * state, so those interpretations merge instead of doubling. */
static int hlists_equal(const gr_vseen *a, const gr_vseen *b)
{
    for (; a != b; a = a->next, b = b->next)
        if (!a || !b || a->h != b->h)
            return 0;
    return 1;
}

int gr_frame_top_equal(const gr_frame *a, const gr_frame *b)
{
    return a->node == b->node && a->phase == b->phase && a->ws == b->ws && a->flags == b->flags &&
           a->aux == b->aux && a->u8lo == b->u8lo && a->u8hi == b->u8hi && a->lo == b->lo &&
           a->hi == b->hi && a->pos == b->pos && a->count == b->count && a->val == b->val &&
           a->seen == b->seen && a->kst == b->kst && a->vh == b->vh && a->ctag == b->ctag &&
           a->ord == b->ord && hlists_equal(a->ext, b->ext);
}

int gr_frames_equal(const gr_frame *a, const gr_frame *b)
{
    while (a != b) {
        if (!a || !b || !gr_frame_top_equal(a, b))
            return 0;
        a = a->up;
        b = b->up;
    }
    return 1;
}

static void emit(gr_set *out, const gr_frame *f)
{
    if (!f)
        return;
    for (int i = 0; i < out->n; i++)
        if (gr_frames_equal(out->f[i], f))
            return;
    if (out->n == GR_MAX_THREADS) {
        out->overflow = 1;
        return;
    }
    out->f[out->n++] = f;
}

static const gr_node *node_of(gr_ctx *cx, const gr_frame *f)
{
    return &cx->g->nodes[f->node];
}

static void feed(gr_ctx *cx, const gr_frame *f, int c, gr_set *out);

/* Opens value `node` under parent p and feeds it its first byte c; an
 * array item counts for the contains constraints in ctag. */
static void start_value(gr_ctx *cx, const gr_frame *p, int32_t node, int c, int ctag,
                        gr_set *out)
{
    const gr_node *n = &cx->g->nodes[node];
    if (n->kind == GK_EMPTY || c == GR_EOF)
        return;
    if (n->kind == GK_ALT) {
        for (uint32_t i = 0; i < n->u.alt.n; i++)
            start_value(cx, p, n->u.alt.alts[i], c, ctag, out);
        return;
    }
    if (p && p->depth + 1 >= cx->max_stack)
        return;
    gr_frame *f = gr_arena_alloc(cx->arena, sizeof *f);
    if (!f)
        return;
    memset(f, 0, sizeof *f);
    f->up = p;
    f->node = node;
    f->depth = (uint16_t)(p ? p->depth + 1 : 1);
    f->ctag = (uint8_t)ctag;
    if (p && p->node >= 0) {
        const gr_node *pn = &cx->g->nodes[p->node];
        if (pn->kind == GK_ARRAY && pn->u.arr.unique == GR_UNIQ_HASH)
            f->flags |= F_UH | F_UITEM;
        else if (p->flags & F_UH)
            f->flags |= F_UH;
    }
    if (n->kind == GK_LITSET) {
        f->lo = 0;
        f->hi = n->u.lit.n;
    }
    feed(cx, f, c, out);
}

/* contains: the matches counted for constraint i so far. */
static int64_t cont_count(const gr_frame *f, int i)
{
    return (int64_t)((uint64_t)f->val >> (16 * i) & 0xFFFF);
}

static int node_ok(const gr_ctx *cx, int32_t id)
{
    return id >= 0 && cx->g->nodes[id].kind != GK_EMPTY;
}

/* An item counting for the constraints in S may come next, and the array
 * can still be finished after it.  Several constraints have no maximum
 * and no maxItems (see contains_nodes), so any count can still grow. */
static int cont_tag_ok(const gr_ctx *cx, const gr_node *n, const gr_frame *f, int S)
{
    if (!node_ok(cx, n->u.arr.ctag_node[S]))
        return 0;
    if (n->u.arr.n_cont == 1)
        return gr_cont_feasible(n, f->count + 1, cont_count(f, 0) + S, node_ok(cx, n->u.arr.ctag_node[0]),
                                node_ok(cx, n->u.arr.ctag_node[1]));
    return 1;
}

static int cont_met(const gr_node *n, const gr_frame *f)
{
    for (int i = 0; i < n->u.arr.n_cont; i++)
        if (cont_count(f, i) < n->u.arr.cmin[i])
            return 0;
    return 1;
}

/* The value on top of f finished; hand control to its parent, then feed
 * the byte that ended it (numbers end on the next byte) if there is one. */
static void child_done(gr_ctx *cx, const gr_frame *child, int c, int has_c, gr_set *out)
{
    const gr_frame *p = child->up;
    uint64_t h = 0;
    if (p == cx->watch)
        cx->watched = 1;
    if (child->flags & F_UH)
        h = gr_frame_hash(cx->g, child);
    gr_frame *np = clone(cx, p);
    if (!np)
        return;
    np->ws = 0;
    if (p->node < 0) {
        np->phase = R_DONE;
    } else {
        const gr_node *pn = node_of(cx, p);
        if (pn->kind == GK_OBJECT) {
            np->phase = O_AFTER;
            if (p->flags & F_UH) /* val holds the key's hash */
                np->vh += gr_hash_member((uint64_t)p->val, h);
        } else { /* array */
            np->phase = A_AFTER;
            np->count++;
            if (pn->u.arr.lit_class) /* uniqueItems: the literal's value is used up */
                np->seen |= 1ull << pn->u.arr.lit_class[child->lo];
            if (p->flags & F_UH)
                np->vh = gr_hash_arr_step(np->vh, h);
            /* a count with no maximum stops at its minimum: beyond it
             * nothing depends on the number, and interpretations that
             * differ only there would multiply past GR_MAX_THREADS */
            for (int i = 0; i < pn->u.arr.n_cont; i++)
                if ((child->ctag >> i & 1) && cont_count(np, i) < 0xFFFF &&
                    (pn->u.arr.cmax[i] >= 0 || cont_count(np, i) < pn->u.arr.cmin[i]))
                    np->val += (int64_t)1 << (16 * i);
            if (pn->u.arr.unique == GR_UNIQ_HASH) {
                /* an item equal to an earlier one ends this interpretation */
                if (gr_vseen_has(p->ext, h))
                    return;
                gr_vseen *e = gr_arena_alloc(cx->arena, sizeof *e);
                if (!e)
                    return;
                const gr_vseen *prev = p->ext;
                e->next = prev;
                e->h = h;
                /* the set grows with the list while every node has one
                 * (a failed allocation leaves the list, still right) */
                e->idx = !prev || prev->idx
                             ? gr_hset_add(prev ? prev->idx : NULL, h, arena_alloc, cx->arena)
                             : NULL;
                np->ext = e;
            }
        }
    }
    if (has_c)
        feed(cx, np, c, out);
    else
        emit(out, np);
}

uint64_t gr_frame_hash(const sx_grammar *g, const gr_frame *f)
{
    const gr_node *n = &g->nodes[f->node];
    switch (n->kind) {
    case GK_LITSET:
        return n->u.lit.hash[f->lo];
    case GK_NUMBER:
        return gr_hash_num(gr_num_value(f));
    case GK_STRING:
        return gr_hash_str(f->vh);
    case GK_OBJECT:
        return gr_hash_obj(f->vh);
    case GK_ARRAY:
        return gr_hash_arr(f->vh, f->count);
    default:
        return 0;
    }
}

/* ---- literal sets ------------------------------------------------------- */

/* The classes an item of a uniqueItems array may still take, when f is
 * such an item (all classes allowed otherwise). */
static const uint8_t *unique_item(gr_ctx *cx, const gr_frame *f, uint64_t *used)
{
    const gr_frame *p = f->up;
    if (!p || p->node < 0)
        return NULL;
    const gr_node *pn = &cx->g->nodes[p->node];
    if (pn->kind != GK_ARRAY || !pn->u.arr.lit_class)
        return NULL;
    *used = p->seen;
    return pn->u.arr.lit_class;
}

static int any_unused(const uint8_t *cls, uint64_t used, uint32_t a, uint32_t b)
{
    for (uint32_t i = a; i < b; i++)
        if (!(used >> cls[i] & 1))
            return 1;
    return 0;
}

/* Some literal in [a, b) is not among the earlier items' values. */
static int any_new(const gr_node *n, const gr_vseen *seen, uint32_t a, uint32_t b)
{
    for (uint32_t i = a; i < b; i++)
        if (!gr_vseen_has(seen, n->u.lit.hash[i]))
            return 1;
    return 0;
}

/* SX_ESC_ANY (grammar.h): every spelling of a character is taken, each
 * decoded; else (SX_ESC_CANONICAL) keys and literals take only their
 * canonical spellings and patterned strings only the \u of a control
 * character with no short escape, so that forced text stays forced. */
static int esc_any(const gr_ctx *cx)
{
    return cx->g->opts.escapes == SX_ESC_ANY;
}

/* ---- escapes in string literals ------------------------------------------
 * As in keys (see "escapes in keys" below): the literals are canonical
 * JSON texts, and an escape inside a string literal is decoded, then its
 * character's canonical spelling narrows the range -- "a\u0062" is the
 * enum value "ab".  While an escape is read the frame holds F_KESC, aux 0
 * after the backslash, else 1 + the hex digits so far, their value in val;
 * range and position stay where the backslash was.  Surrogate pairs are
 * not taken (a character beyond the BMP is written raw).  SX_ESC_ANY
 * only: under SX_ESC_CANONICAL a literal is matched as its own bytes. */

/* Literal i may still be taken (uniqueItems: a value not used yet). */
static int lit_usable(const gr_node *n, uint32_t i, const uint8_t *cls, uint64_t used,
                      const gr_vseen *seen)
{
    return !(cls && (used >> cls[i] & 1)) && !(seen && gr_vseen_has(seen, n->u.lit.hash[i]));
}

/* Some usable literal in the frame's range has, at its position, a
 * character whose code point is within [clo, chi]. */
static int lit_live_cp(const gr_node *n, const gr_frame *f, const uint8_t *cls, uint64_t used,
                       const gr_vseen *seen, uint32_t clo, uint32_t chi)
{
    const gr_lit *L = n->u.lit.lits;
    for (uint32_t i = f->lo; i < f->hi; i++) {
        uint32_t cp;
        if (L[i].b[0] == '"' && gr_canon_cp(L[i].b, L[i].len, f->pos, &cp) && cp >= clo &&
            cp <= chi && lit_usable(n, i, cls, used, seen))
            return 1;
    }
    return 0;
}

static void feed_lit_esc(gr_ctx *cx, const gr_frame *f, int c, const uint8_t *cls, uint64_t used,
                         const gr_vseen *seen, gr_set *out)
{
    const gr_node *n = node_of(cx, f);
    const gr_lit *L = n->u.lit.lits;
    uint32_t cp;
    if (c == GR_EOF || c == 0)
        return;
    gr_frame *nf = clone(cx, f);
    if (!nf)
        return;
    if (f->aux == 0) {
        static const char esc[] = "\"\\/bfnrt", dec[] = "\"\\/\b\f\n\r\t";
        if (c == 'u') {
            nf->aux = 1;
            nf->val = 0;
            if (lit_live_cp(n, f, cls, used, seen, 0, 0xFFFF))
                emit(out, nf);
            return;
        }
        const char *e = strchr(esc, c);
        if (!e)
            return;
        cp = (uint8_t)dec[e - esc];
    } else {
        int h = sx_hexval(c);
        if (h < 0)
            return;
        uint32_t v = (uint32_t)f->val * 16 + (uint32_t)h;
        int digits = f->aux; /* with this one */
        if (digits == 2 && v >= 0xD8 && v <= 0xDF)
            return; /* a surrogate */
        if (digits < 4) {
            int shift = 4 * (4 - digits);
            nf->aux++;
            nf->val = v;
            if (lit_live_cp(n, f, cls, used, seen, v << shift, ((v + 1) << shift) - 1))
                emit(out, nf);
            return;
        }
        cp = v;
    }
    /* complete: narrow by the character's canonical spelling */
    uint8_t cb[6];
    int cl = gr_canon_char(cp, cb);
    uint32_t lo = f->lo, hi = f->hi, pos = f->pos;
    for (int k = 0; k < cl; k++) {
        uint32_t a = lo, b;
        if (a < hi && L[a].len == pos)
            a++;
        while (a < hi && L[a].b[pos] < cb[k])
            a++;
        b = a;
        while (b < hi && L[b].b[pos] == cb[k])
            b++;
        lo = a;
        hi = b;
        pos++;
    }
    int live = 0;
    for (uint32_t i = lo; i < hi && !live; i++)
        live = lit_usable(n, i, cls, used, seen);
    if (!live)
        return;
    nf->lo = lo;
    nf->hi = hi;
    nf->pos = pos;
    nf->aux = 0;
    nf->val = 0;
    nf->flags &= (uint8_t)~F_KESC;
    emit(out, nf);
}

static void feed_lit(gr_ctx *cx, const gr_frame *f, int c, gr_set *out)
{
    const gr_node *n = node_of(cx, f);
    const gr_lit *L = n->u.lit.lits;
    uint32_t lo = f->lo, hi = f->hi, pos = f->pos;
    uint64_t used = 0;
    const uint8_t *cls = unique_item(cx, f, &used);
    const gr_vseen *seen = (f->flags & F_UITEM) ? f->up->ext : NULL;
    if (f->flags & F_KESC) {
        feed_lit_esc(cx, f, c, cls, used, seen, out);
        return;
    }
    /* (SX_ESC_CANONICAL: the literal's own bytes, which are its canonical
     * spelling, escapes and all) */
    if (c == '\\' && esc_any(cx) && pos > 0 && lo < hi && L[lo].b[0] == '"' && L[lo].len > pos) {
        /* inside a string literal: decode the escape first */
        gr_frame *nf;
        if (lit_live_cp(n, f, cls, used, seen, 0, 0xFFFF) && (nf = clone(cx, f))) {
            nf->flags |= F_KESC;
            nf->aux = 0;
            emit(out, nf);
        }
        return;
    }
    /* literals equal to the bytes read so far sort first in the range */
    int complete = pos > 0 && L[lo].len == pos && !(cls && (used >> cls[lo] & 1)) &&
                   !(seen && gr_vseen_has(seen, n->u.lit.hash[lo]));
    if (c != GR_EOF) {
        uint32_t a = pos > 0 && L[lo].len == pos ? lo + 1 : lo, b;
        while (a < hi && L[a].b[pos] < c)
            a++;
        b = a;
        while (b < hi && L[b].b[pos] == c)
            b++;
        if (a < b && (!cls || any_unused(cls, used, a, b)) && (!seen || any_new(n, seen, a, b))) {
            gr_frame *nf = clone(cx, f);
            if (nf) {
                nf->lo = a;
                nf->hi = b;
                nf->pos = pos + 1;
                emit(out, nf);
            }
        }
    }
    if (complete)
        child_done(cx, f, c, 1, out);
}

/* ---- numbers (the value arithmetic is ir/gr_number.c) ---------------------- */

/* A listed value the number may not take (`not` of listed numbers). */
static int num_excluded(const gr_node *n, const gr_frame *f)
{
    if (!n->u.num.n_excl)
        return 0;
    uint64_t h = gr_hash_num(gr_num_value(f));
    for (uint32_t i = 0; i < n->u.num.n_excl; i++)
        if (n->u.num.excl[i] == h)
            return 1;
    return 0;
}

static void feed_num(gr_ctx *cx, const gr_frame *f, int c, gr_set *out)
{
    const gr_node *n = node_of(cx, f);
    int digit = c >= '0' && c <= '9';
    int ph = f->phase;
    int endable = ph == N_ZERO || ph == N_INT || ph == N_FRAC || ph == N_EXP;
    gr_frame tmp;
    if (c != GR_EOF && gr_num_step(n, f, c, &tmp)) {
        /* a value outside a finite remainder: some completion must be
         * neither excluded nor an earlier item */
        const gr_vseen *seen = (f->flags & F_UITEM) ? f->up->ext : NULL;
        int64_t n_seen = seen ? f->up->count : 0;
        if ((!n->u.num.n_excl && !n_seen) || gr_num_live(n, &tmp, seen, n_seen)) {
            gr_frame *nf = clone(cx, &tmp);
            if (nf)
                emit(out, nf);
        }
    }
    if (endable && !digit) {
        if (gr_num_ok(n, f, 1) && !num_excluded(n, f))
            child_done(cx, f, c, 1, out);
    }
}

/* ---- strings -------------------------------------------------------------- */


/* One more code point in a string: allowed only while the maximum holds. */
static int str_add_cp(const gr_node *n, gr_frame *nf)
{
    nf->count++;
    return n->u.str.max_len < 0 || nf->count <= n->u.str.max_len;
}

/* Steps a UTF-8 validator kept in (aux = continuation bytes left,
 * u8lo/u8hi = the range of the next byte).  Returns 0 on invalid input, 1 for
 * a byte inside a character, 2 when a character starts. */
static int utf8_step(gr_frame *nf, int c)
{
    if (nf->aux) {
        if (c < nf->u8lo || c > nf->u8hi)
            return 0;
        nf->aux--;
        nf->u8lo = 0x80;
        nf->u8hi = 0xBF;
        return 1;
    }
    if (c < 0x80)
        return 2;
    nf->u8lo = 0x80;
    nf->u8hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        nf->aux = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        nf->aux = 2;
        if (c == 0xE0)
            nf->u8lo = 0xA0;
        if (c == 0xED)
            nf->u8hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        nf->aux = 3;
        if (c == 0xF0)
            nf->u8lo = 0x90;
        if (c == 0xF4)
            nf->u8hi = 0x8F;
    } else {
        return 0;
    }
    return 2;
}

/* Room for one more code point whose first byte is b (decoded) when the
 * string has an automaton: some escape/character must keep it alive. */
static int esc_room(const gr_ctx *cx, const gr_node *n, const gr_frame *f)
{
    const gr_strx *x = n->u.str.x;
    if (!x)
        return n->u.str.max_len < 0 || f->count < n->u.str.max_len;
    static const char dec[] = "\"\\/\b\f\n\r\t";
    for (int i = 0; i < 8; i++) {
        int32_t ns = gr_strx_step(x, (int32_t)f->pos, (uint8_t)dec[i]);
        if (ns >= 0 && gr_strx_len_ok(x, ns, f->count + 1, n->u.str.min_len, n->u.str.max_len))
            return 1;
    }
    /* else a \u (not in a hashed item, see feed_str) */
    if (f->flags & F_UH)
        return 0;
    gr_frame t = *f;
    t.phase = S_ESC;
    return gr_strx_u_find(x, &t, !esc_any(cx), n->u.str.min_len, n->u.str.max_len) >= 0;
}

/* A \u escape under way in a patterned string (frame nf, its digits so
 * far): some character it can still spell keeps the automaton alive; once
 * it is complete (phase S_IN, its code point in val), the automaton steps
 * over the character's UTF-8.  0 when the frame dies. */
static int strx_u_step(const gr_ctx *cx, const gr_node *n, gr_frame *nf)
{
    const gr_strx *x = n->u.str.x;
    if (nf->phase != S_IN)
        return gr_strx_u_find(x, nf, !esc_any(cx), n->u.str.min_len, n->u.str.max_len) >= 0;
    uint8_t u[6];
    int ul = gr_canon_char((uint32_t)nf->val, u);
    if (nf->val < 0x80) {
        u[0] = (uint8_t)nf->val; /* the decoded byte, not its spelling */
        ul = 1;
    }
    int32_t st = (int32_t)nf->pos;
    for (int i = 0; i < ul && st >= 0; i++)
        st = gr_strx_step(x, st, u[i]);
    /* nf->count has the character already */
    if (st < 0 || !gr_strx_len_ok(x, st, nf->count, n->u.str.min_len, n->u.str.max_len))
        return 0;
    nf->pos = (uint32_t)st;
    return 1;
}

/* Regex mode: the document is the text itself, no quotes, no escapes;
 * it may end wherever the automaton accepts. */
static void feed_raw(gr_ctx *cx, const gr_frame *f, int c, gr_set *out)
{
    const gr_node *n = node_of(cx, f);
    const gr_strx *x = n->u.str.x;
    int32_t st = f->phase == S_START ? x->start : (int32_t)f->pos;
    if (c == GR_EOF) {
        if (x->accept[st] && f->count >= n->u.str.min_len)
            child_done(cx, f, c, 1, out);
        return;
    }
    int32_t ns = gr_strx_step(x, st, (uint8_t)c);
    if (ns < 0)
        return;
    gr_frame *nf = clone(cx, f);
    if (!nf)
        return;
    nf->phase = S_IN;
    nf->pos = (uint32_t)ns;
    if ((c & 0xC0) != 0x80)
        nf->count++;
    if (!gr_strx_len_ok(x, ns, nf->count, n->u.str.min_len, n->u.str.max_len))
        return;
    emit(out, nf);
}

/* Emits a string frame; the item of a uniqueItems array must still be
 * completable into a value no earlier item has. */
static void emit_str(const gr_node *n, gr_frame *nf, gr_set *out)
{
    if ((nf->flags & F_UITEM) && nf->up->count > 0 &&
        !gr_str_live(n, nf, nf->up->ext, nf->up->count))
        return;
    emit(out, nf);
}

static void feed_str(gr_ctx *cx, const gr_frame *f, int c, gr_set *out)
{
    const gr_node *n = node_of(cx, f);
    const gr_strx *x = n->u.str.x;
    if (n->u.str.raw) {
        feed_raw(cx, f, c, out);
        return;
    }
    if (c == GR_EOF)
        return;
    gr_frame *nf;
    switch (f->phase) {
    case S_START:
        if (c != '"')
            return;
        nf = clone(cx, f);
        if (!nf)
            return;
        nf->phase = S_IN;
        if (x)
            nf->pos = (uint32_t)x->start;
        if (nf->flags & F_UH)
            nf->vh = GR_FNV_BASIS;
        emit_str(n, nf, out);
        return;
    case S_IN:
        if (f->aux == 0 && c == '"') {
            if (f->count >= n->u.str.min_len && (!x || x->accept[f->pos]))
                child_done(cx, f, 0, 0, out);
            return;
        }
        if (f->aux == 0 && c < 0x20)
            return;
        if (f->aux == 0 && c == '\\') {
            /* an escape is one more code point */
            if (!esc_room(cx, n, f))
                return;
            nf = clone(cx, f);
            if (!nf)
                return;
            nf->phase = S_ESC;
            emit_str(n, nf, out);
            return;
        }
        nf = clone(cx, f);
        if (!nf)
            return;
        switch (utf8_step(nf, c)) {
        case 0:
            return;
        case 2:
            if (!x && !str_add_cp(n, nf))
                return;
            if (x)
                nf->count++;
            break;
        }
        if (x) {
            int32_t ns = gr_strx_step(x, (int32_t)f->pos, (uint8_t)c);
            if (ns < 0 || !gr_strx_len_ok(x, ns, nf->count, n->u.str.min_len, n->u.str.max_len))
                return;
            nf->pos = (uint32_t)ns;
        }
        if (nf->flags & F_UH)
            nf->vh = gr_fnv(nf->vh, (uint8_t)c);
        emit_str(n, nf, out);
        return;
    case S_ESC: {
        static const char esc[] = "\"\\/bfnrt", dec[] = "\"\\/\b\f\n\r\t";
        const char *e = c ? strchr(esc, c) : NULL;
        if (!e && c != 'u')
            return;
        if (c == 'u' && x && (f->flags & F_UH))
            return; /* a hashed item (uniqueItems) takes no \u under a pattern */
        nf = clone(cx, f);
        if (!nf)
            return;
        if (c == 'u') {
            nf->phase = S_U;
            nf->aux = 0;
            nf->val = 0;
            if (x && !strx_u_step(cx, n, nf))
                return;
        } else {
            nf->phase = S_IN;
            nf->count++;
            if (x) {
                int32_t ns = gr_strx_step(x, (int32_t)f->pos, (uint8_t)dec[e - esc]);
                if (ns < 0 ||
                    !gr_strx_len_ok(x, ns, nf->count, n->u.str.min_len, n->u.str.max_len))
                    return;
                nf->pos = (uint32_t)ns;
            }
            if (nf->flags & F_UH)
                nf->vh = gr_fnv(nf->vh, (uint8_t)dec[e - esc]);
        }
        emit_str(n, nf, out);
        return;
    }
    case S_U: {
        int h = sx_hexval(c);
        if (h < 0)
            return;
        nf = clone(cx, f);
        if (!nf)
            return;
        nf->val = nf->val * 16 + h;
        nf->aux++;
        /* a lone surrogate is not a character (the validator's reader
         * refuses one): a high one must be followed by a low one, the pair
         * one character; a low one first is refused */
        if (nf->aux == 1 && nf->val == 0xD)
            nf->flags |= F_KESC;
        if (nf->aux == 2 && (nf->flags & F_KESC) && nf->val >= (esc_any(cx) ? 0xDC : 0xD8))
            return; /* (SX_ESC_CANONICAL: no pairs; beyond the BMP is raw) */
        if (x && !esc_any(cx) && !gr_canon_u_digit(c, nf->aux, (uint32_t)nf->val))
            return; /* a patterned string's canonical \u: a control character */
        if (nf->aux == 4) {
            nf->aux = 0;
            nf->flags &= (uint8_t)~F_KESC;
            if (nf->val >= 0xD800 && nf->val <= 0xDBFF) {
                nf->phase = S_LBS;
                if (x && !strx_u_step(cx, n, nf))
                    return;
                emit_str(n, nf, out);
                return;
            }
            nf->phase = S_IN;
            nf->count++; /* room was checked at the backslash */
            if (nf->flags & F_UH)
                nf->vh = gr_fnv_cp(nf->vh, (uint32_t)nf->val);
        }
        if (x && !strx_u_step(cx, n, nf))
            return;
        emit_str(n, nf, out);
        return;
    }
    case S_LBS:
    case S_LU:
        if (c != (f->phase == S_LBS ? '\\' : 'u'))
            return;
        nf = clone(cx, f);
        if (!nf)
            return;
        nf->phase = f->phase == S_LBS ? S_LU : S_LOW;
        if (nf->phase == S_LOW)
            nf->val <<= 16; /* the high half, then the low one's digits */
        emit_str(n, nf, out);
        return;
    case S_LOW: {
        /* the low half: DC00..DFFF */
        int h = sx_hexval(c);
        if (h < 0 || (f->aux == 0 && h != 0xD) || (f->aux == 1 && h < 0xC))
            return;
        nf = clone(cx, f);
        if (!nf)
            return;
        nf->val = (nf->val & ~(int64_t)0xFFFF) | ((nf->val & 0xFFFF) * 16 + h);
        if (++nf->aux == 4) {
            uint32_t hi = (uint32_t)(nf->val >> 16), lo = (uint32_t)(nf->val & 0xFFFF);
            nf->aux = 0;
            nf->phase = S_IN;
            nf->val = 0x10000 + ((int64_t)(hi - 0xD800) << 10) + (lo - 0xDC00);
            nf->count++; /* room was checked at the first backslash */
            if (nf->flags & F_UH)
                nf->vh = gr_fnv_cp(nf->vh, (uint32_t)nf->val);
        }
        if (x && !strx_u_step(cx, n, nf))
            return;
        emit_str(n, nf, out);
        return;
    }
    }
}

/* ---- objects -------------------------------------------------------------- */

static int obj_can_close(const gr_node *n, const gr_frame *f)
{
    if (n->u.obj.n_pres && !gr_obj_pres_holds(n, f->seen))
        return 0;
    return (gr_obj_required(n, f->seen) & ~f->seen) == 0 && f->count >= n->u.obj.min_props;
}

/* Is some key in props[lo, hi) still usable? */
static int obj_range_live(const gr_node *n, const gr_frame *f, uint32_t lo, uint32_t hi)
{
    for (uint32_t i = lo; i < hi; i++) {
        const gr_prop *p = &n->u.obj.props[i];
        if (p->node >= 0 && !gr_prop_seen(p, f->seen, f->ext) && gr_ord_ok(n, f->ord, p) &&
            gr_obj_feasible_add(n, f->seen, f->count, p))
            return 1;
    }
    return 0;
}

int gr_obj_range_live(const gr_node *n, const gr_frame *f, uint32_t lo, uint32_t hi)
{
    return obj_range_live(n, f, lo, hi);
}

/* Can one more additional key be added (it must also be a new one)? */
static int obj_gen_ok(const gr_node *n, const gr_frame *f)
{
    /* an additional key puts every listed one behind (property order) */
    if (!gr_obj_has_gen(n) ||
        !gr_obj_feasible_blocked(n, f->seen, f->count + 1, gr_ord_blocked(n, GR_ORD_UNLISTED)))
        return 0;
    const gr_strx *kx = n->u.obj.keyx;
    return !(kx && f->ext &&
             gr_keyauto_all_seen(kx, n->u.obj.close_node, kx->start, 0,
                                 GR_FNV_BASIS, f->ext));
}

static void obj_begin_key(gr_ctx *cx, const gr_node *n, const gr_frame *f, gr_set *out)
{
    gr_frame *nf = clone(cx, f);
    if (!nf)
        return;
    nf->phase = O_KEY;
    nf->ws = 0;
    nf->lo = 0;
    nf->hi = n->u.obj.n;
    nf->pos = 0;
    nf->aux = 0;
    nf->flags &= (uint8_t)~(F_KESC | F_KGEN);
    if (obj_gen_ok(n, f))
        nf->flags |= F_KGEN;
    nf->kst = n->u.obj.keyx ? n->u.obj.keyx->start : 0;
    nf->val = (int64_t)GR_FNV_BASIS;
    if (!(nf->flags & F_KGEN) && !obj_range_live(n, nf, 0, nf->hi))
        return;
    emit(out, nf);
}

/* ---- escapes in keys ---------------------------------------------------------
 * A key is matched by its decoded name: the listed names are kept in their
 * canonical spelling (gr_encode_string), and an escape typed in a key is
 * decoded first, then its character's canonical spelling (gr_canon_char)
 * narrows the range of listed names and extends the key's hash.  So "a"
 * and "\u0061" are one key (duplicates and required keys are counted by
 * name), and any character can be spelled with \u, control characters
 * included.  While an escape is read the key frame holds F_KESC, with aux
 * 0 right after the backslash, else 1 + the hex digits of a \u read so
 * far, their value in u8hi:u8lo; the range and position stay where the
 * backslash was, and the hash holds the backslash (gr_fnv_unfold takes it
 * out again).  Not taken: surrogate pairs (a character beyond the BMP is
 * written raw) and \u in an additional key under a key automaton
 * (patterns over the names; short escapes only there).  That is
 * SX_ESC_ANY; under SX_ESC_CANONICAL (the default) a \u spells only a
 * control character with no short escape, lowercase, and \/ is refused:
 * each key then has its one canonical spelling, which for a listed name
 * is the name's own bytes. */

/* Some usable listed name in [lo, hi) has, at byte pos, a character
 * whose code point is within [clo, chi]. */
static int key_range_live_cp(const gr_node *n, const gr_frame *f, uint32_t lo, uint32_t hi,
                             uint32_t pos, uint32_t clo, uint32_t chi)
{
    for (uint32_t i = lo; i < hi; i++) {
        const gr_prop *p = &n->u.obj.props[i];
        uint32_t cp;
        if (gr_canon_cp(p->key, p->key_len, pos, &cp) && cp >= clo && cp <= chi &&
            obj_range_live(n, f, i, i + 1))
            return 1;
    }
    return 0;
}

/* key_range_live_cp over the frame's range for the characters an escape
 * may spell: any (SX_ESC_ANY), or (canonical) a \u's only, the control
 * characters with no short escape. */
static int key_live_u(const gr_ctx *cx, const gr_node *n, const gr_frame *f, uint32_t clo,
                      uint32_t chi)
{
    if (esc_any(cx))
        return key_range_live_cp(n, f, f->lo, f->hi, f->pos, clo, chi);
    for (int i = 0; i < 3; i++) {
        uint32_t a = clo > gr_canon_ctl_iv[i][0] ? clo : gr_canon_ctl_iv[i][0];
        uint32_t b = chi < gr_canon_ctl_iv[i][1] ? chi : gr_canon_ctl_iv[i][1];
        if (a <= b && key_range_live_cp(n, f, f->lo, f->hi, f->pos, a, b))
            return 1;
    }
    return 0;
}

/* Narrows the sorted range of listed names [*lo, *hi) at *pos by byte c. */
static void key_narrow(const gr_prop *P, uint32_t *lo, uint32_t *hi, uint32_t *pos, uint8_t c)
{
    uint32_t a = *lo, b, p = *pos;
    if (a < *hi && P[a].key_len == p)
        a++;
    while (a < *hi && P[a].key[p] < c)
        a++;
    b = a;
    while (b < *hi && P[b].key[p] == c)
        b++;
    *lo = a;
    *hi = b;
    *pos = p + 1;
}

/* The byte after a backslash, or a hex digit of a \u, in a key. */
static void feed_key_esc(gr_ctx *cx, const gr_node *n, const gr_frame *f, int c, gr_set *out)
{
    const gr_strx *kx = n->u.obj.keyx;
    int gen = (f->flags & F_KGEN) != 0, known;
    uint32_t cp;
    if (c == GR_EOF || c == 0)
        return;
    gr_frame *nf = clone(cx, f);
    if (!nf)
        return;
    if (f->aux == 0) {
        static const char esc[] = "\"\\/bfnrt", dec[] = "\"\\/\b\f\n\r\t";
        if (c == 'u') {
            if (kx)
                gen = 0;
            nf->aux = 1;
            nf->u8lo = nf->u8hi = 0;
            known = key_live_u(cx, n, f, 0, 0xFFFF);
            goto emit_partial;
        }
        const char *e = strchr(esc, c);
        if (!e || (c == '/' && !esc_any(cx)))
            return; /* (canonical: '/' is written raw) */
        cp = (uint8_t)dec[e - esc];
    } else {
        int h = sx_hexval(c);
        if (h < 0)
            return;
        uint32_t v = ((uint32_t)f->u8hi << 8 | f->u8lo) * 16 + (uint32_t)h;
        int digits = f->aux; /* with this one */
        if (digits == 2 && v >= 0xD8 && v <= 0xDF)
            return; /* a surrogate */
        if (!esc_any(cx) && !gr_canon_u_digit(c, digits, v))
            return; /* canonical: \u00xx for a control character only */
        if (digits < 4) {
            int shift = 4 * (4 - digits);
            nf->aux++;
            nf->u8hi = (uint8_t)(v >> 8);
            nf->u8lo = (uint8_t)v;
            known = key_live_u(cx, n, f, v << shift, ((v + 1) << shift) - 1);
            goto emit_partial;
        }
        cp = v;
    }
    /* the escape is complete: its character, canonically spelled */
    uint8_t cb[6];
    int cl = gr_canon_char(cp, cb);
    uint32_t lo = f->lo, hi = f->hi, pos = f->pos;
    uint64_t kh = gr_fnv_unfold((uint64_t)f->val, '\\');
    for (int i = 0; i < cl; i++) {
        key_narrow(n->u.obj.props, &lo, &hi, &pos, cb[i]);
        kh = gr_fnv(kh, cb[i]);
    }
    nf->lo = lo;
    nf->hi = hi;
    nf->pos = pos;
    nf->val = (int64_t)kh;
    nf->aux = 0;
    nf->u8lo = nf->u8hi = 0;
    nf->flags &= (uint8_t)~F_KESC;
    known = lo < hi && obj_range_live(n, nf, lo, hi);
    if (gen && kx) {
        /* the decoded character through the key automaton (\u is not
         * taken there, so it is one byte) */
        int32_t ns = gr_strx_step(kx, f->kst, (uint8_t)cp);
        if (ns < 0 || cp >= 0x80)
            gen = 0;
        else
            nf->kst = ns;
        if (gen && f->ext &&
            gr_keyauto_all_seen(kx, n->u.obj.close_node, nf->kst, 0, kh, f->ext))
            gen = 0;
    }
    if (!gen)
        nf->flags &= (uint8_t)~F_KGEN;
    if (!known && !gen)
        return;
    emit(out, nf);
    return;
emit_partial:
    /* mid-\u: an additional name (no automaton) takes any character */
    if (!gen)
        nf->flags &= (uint8_t)~F_KGEN;
    if (!known && !gen)
        return;
    emit(out, nf);
}

/* A backslash in a key, at a character boundary: the escape is decoded
 * before it narrows the listed names (feed_key_esc). */
static void feed_key_backslash(gr_ctx *cx, const gr_node *n, const gr_frame *f, gr_set *out)
{
    const gr_strx *kx = n->u.obj.keyx;
    int gen = (f->flags & F_KGEN) != 0;
    gr_frame *nf = clone(cx, f);
    if (!nf)
        return;
    nf->flags |= F_KESC;
    nf->val = (int64_t)gr_fnv((uint64_t)f->val, '\\');
    /* (canonical: a listed name has a backslash here) */
    int known = esc_any(cx) ? key_range_live_cp(n, f, f->lo, f->hi, f->pos, 0, 0xFFFF)
                            : key_range_live_cp(n, f, f->lo, f->hi, f->pos, 0, 0x1F) ||
                                  key_range_live_cp(n, f, f->lo, f->hi, f->pos, '"', '"') ||
                                  key_range_live_cp(n, f, f->lo, f->hi, f->pos, '\\', '\\');
    if (gen && kx) {
        /* some short escape must keep the key automaton alive, and lead
         * to a key not in the object yet */
        static const char dec2[] = "\"\\\b\f\n\r\t";
        int any = 0;
        for (int i = 0; i < 7; i++)
            any |= gr_strx_step(kx, f->kst, (uint8_t)dec2[i]) >= 0;
        gen = any && !(f->ext && gr_keyauto_all_seen(kx, n->u.obj.close_node, f->kst, 1,
                                                      (uint64_t)nf->val, f->ext));
    }
    if (!gen)
        nf->flags &= (uint8_t)~F_KGEN;
    if (!known && !gen)
        return;
    emit(out, nf);
}

static void feed_key(gr_ctx *cx, const gr_node *n, const gr_frame *f, int c, gr_set *out)
{
    const gr_prop *P = n->u.obj.props;
    uint32_t lo = f->lo, hi = f->hi, pos = f->pos;
    if (f->flags & F_KESC) {
        feed_key_esc(cx, n, f, c, out);
        return;
    }
    if (c == '\\' && f->aux == 0) {
        feed_key_backslash(cx, n, f, out);
        return;
    }
    if (c == '"' && !(f->flags & F_KESC) && f->aux == 0) {
        /* end of the key: a known property if one matches exactly */
        if (lo < hi && P[lo].key_len == pos) {
            uint64_t bit = gr_prop_bit(&P[lo]);
            if (P[lo].node < 0 || gr_prop_seen(&P[lo], f->seen, f->ext) ||
                !gr_ord_ok(n, f->ord, &P[lo]) || !gr_obj_feasible_add(n, f->seen, f->count, &P[lo]))
                return;
            gr_frame *nf = clone(cx, f);
            if (!nf)
                return;
            if (!bit) {
                gr_keyh *kh = gr_arena_alloc(cx->arena, sizeof *kh);
                if (!kh)
                    return;
                kh->next = f->ext;
                kh->h = P[lo].hash;
                kh->idx = NULL;
                nf->ext = kh;
            }
            nf->seen |= bit;
            nf->count++;
            if (n->u.obj.ord_before)
                nf->ord = gr_ord_after(&P[lo]);
            nf->lo = (uint32_t)P[lo].node;
            nf->phase = O_COLON;
            if (f->flags & F_UH)
                nf->val = (int64_t)P[lo].hash; /* the member's key, for the value hash */
            emit(out, nf);
            return;
        }
        if (!(f->flags & F_KGEN))
            return;
        uint64_t h = (uint64_t)f->val;
        if (gr_key_listed(f->ext, h))
            return;
        gr_keyh *kh = gr_arena_alloc(cx->arena, sizeof *kh);
        gr_frame *nf = clone(cx, f);
        if (!kh || !nf)
            return;
        int32_t value = n->u.obj.keyx ? n->u.obj.close_node[f->kst] : n->u.obj.additional;
        if (value < 0)
            return;
        kh->next = f->ext;
        kh->h = h;
        kh->idx = NULL;
        nf->ext = kh;
        nf->count++;
        if (n->u.obj.ord_before)
            nf->ord = GR_ORD_UNLISTED;
        nf->lo = (uint32_t)value;
        nf->phase = O_COLON;
        emit(out, nf);
        return;
    }
    gr_frame *nf = clone(cx, f);
    if (!nf)
        return;
    /* known keys: narrow the sorted range on this byte */
    uint32_t a = lo, b;
    if (a < hi && P[a].key_len == pos)
        a++;
    while (a < hi && P[a].key[pos] < c)
        a++;
    b = a;
    while (b < hi && P[b].key[pos] == c)
        b++;
    nf->lo = a;
    nf->hi = b;
    nf->pos = pos + 1;
    int known = a < b && obj_range_live(n, f, a, b);
    /* additional keys: short escapes only (no \u), so that every key has
     * exactly one spelling and an escaped spelling can never alias a known
     * property or an earlier key */
    int gen = (f->flags & F_KGEN) != 0;
    if (gen) {
        /* (escapes are decoded by feed_key_esc) */
        const gr_strx *kx = n->u.obj.keyx;
        int decoded = -1; /* the content byte this input byte stands for */
        if (nf->aux) {
            int r = utf8_step(nf, c);
            if (r != 1)
                gen = 0;
            decoded = c;
        } else if (c < 0x20 || c == GR_EOF) {
            gen = 0;
        } else if (utf8_step(nf, c) == 0) {
            gen = 0;
        } else {
            decoded = c;
        }
        nf->val = (int64_t)(((uint64_t)nf->val ^ (uint64_t)c) * GR_FNV_PRIME);
        if (gen && kx && decoded >= 0) {
            int32_t ns = gr_strx_step(kx, f->kst, (uint8_t)decoded);
            if (ns < 0)
                gen = 0;
            else
                nf->kst = ns;
        }
        /* a bounded key language can run out of new keys: every key
         * completing from here may already be in the object */
        if (gen && kx && f->ext &&
            gr_keyauto_all_seen(kx, n->u.obj.close_node, nf->kst, 0, (uint64_t)nf->val, f->ext))
            gen = 0;
    }
    if (!gen)
        nf->flags &= (uint8_t)~(F_KGEN | F_KESC);
    /* the range stays lexical even when no key in it is usable, so that a
     * generic key can never spell a known (seen or forbidden) property */
    if (!known && !gen)
        return;
    emit(out, nf);
}

/* ---- indented layout ------------------------------------------------------ */

/* The whitespace run an indented document has before the next token of a
 * container in this phase: -1 none, 0 a single space (after a colon), else
 * the length of a newline and its indentation.  `closing`: the run before
 * the closing bracket (one level out). */
static int obj_phase(const gr_ctx *cx, const gr_frame *f)
{
    if (cx->g->nodes[f->node].kind == GK_OBJECT)
        return f->phase;
    return f->phase == A_OPEN ? O_OPEN : f->phase == A_AFTER ? O_AFTER : O_COMMA;
}

static int indent_run(const gr_ctx *cx, const gr_frame *f, int closing)
{
    int d = f->depth;
    switch (obj_phase(cx, f)) {
    case O_VALUE:
        return 0;
    case O_COLON:
        return -1;
    case O_AFTER:
        return 1 + cx->indent * (d - 1);
    case O_OPEN:
        return closing ? -1 : 1 + cx->indent * d;
    default: /* O_COMMA */
        return 1 + cx->indent * d;
    }
}

/* Token c may come after the whitespace read so far. */
static int indent_ok(const gr_ctx *cx, const gr_frame *f, int c)
{
    switch (obj_phase(cx, f)) {
    case O_VALUE:
        return f->ws == 1;
    case O_COLON:
        return f->ws == 0;
    case O_OPEN:
        return (c == '}' || c == ']') ? f->ws == 0 : f->ws == indent_run(cx, f, 0);
    case O_AFTER:
        return c == ',' ? f->ws == 0 : f->ws == indent_run(cx, f, 1);
    default:
        return f->ws == indent_run(cx, f, 0);
    }
}

/* A whitespace byte of the indented layout; `ok`: what the run leads to
 * (a member, an item, the close) is possible at all. */
static void indent_ws(gr_ctx *cx, const gr_frame *f, int c, int ok, gr_set *out)
{
    int run = indent_run(cx, f, 0);
    if (!ok || run < 0)
        return;
    if (run == 0 ? (f->ws != 0 || c != ' ')
                 : f->ws == 0 ? c != '\n' : (c != ' ' || f->ws >= run))
        return;
    gr_frame *nf = clone(cx, f);
    if (nf) {
        nf->ws++;
        emit(out, nf);
    }
}

static int obj_gen_ok(const gr_node *n, const gr_frame *f);

/* What a run of whitespace leads to in an indented object is possible:
 * after '{' a member, after a value the close. */
static int obj_run_ok(const gr_ctx *cx, const gr_node *n, const gr_frame *f)
{
    (void)cx;
    if (f->phase == O_AFTER)
        return obj_can_close(n, f);
    if (f->phase == O_OPEN)
        return obj_gen_ok(n, f) || obj_range_live(n, f, 0, n->u.obj.n);
    return 1;
}

static void feed_obj(gr_ctx *cx, const gr_frame *f, int c, gr_set *out)
{
    const gr_node *n = node_of(cx, f);
    if (c == GR_EOF)
        return;
    if (f->phase == O_KEY) {
        feed_key(cx, n, f, c, out);
        return;
    }
    if (f->phase != O_START && f->phase != O_INVAL && is_ws(c)) {
        if (cx->indent)
            indent_ws(cx, f, c, obj_run_ok(cx, n, f), out);
        else
            feed_ws(cx, f, out);
        return;
    }
    if (cx->indent && f->phase != O_START && f->phase != O_INVAL && !indent_ok(cx, f, c))
        return;
    gr_frame *nf;
    switch (f->phase) {
    case O_START:
        if (c != '{')
            return;
        if (!gr_obj_feasible(n, 0, 0))
            return;
        nf = clone(cx, f);
        if (!nf)
            return;
        nf->phase = O_OPEN;
        emit(out, nf);
        return;
    case O_OPEN:
    case O_AFTER:
        if (c == '}') {
            if (obj_can_close(n, f))
                child_done(cx, f, 0, 0, out);
            return;
        }
        if (f->phase == O_OPEN && c == '"') {
            obj_begin_key(cx, n, f, out);
            return;
        }
        if (f->phase == O_AFTER && c == ',') {
            /* another key must be possible */
            int gen = obj_gen_ok(n, f);
            if (!gen && !obj_range_live(n, f, 0, n->u.obj.n))
                return;
            nf = clone(cx, f);
            if (!nf)
                return;
            nf->phase = O_COMMA;
            nf->ws = 0;
            emit(out, nf);
        }
        return;
    case O_COMMA:
        if (c == '"')
            obj_begin_key(cx, n, f, out);
        return;
    case O_COLON:
        if (c != ':')
            return;
        nf = clone(cx, f);
        if (!nf)
            return;
        nf->phase = O_VALUE;
        nf->ws = 0;
        emit(out, nf);
        return;
    case O_VALUE:
        nf = clone(cx, f);
        if (!nf)
            return;
        nf->phase = O_INVAL;
        nf->ws = 0;
        start_value(cx, nf, (int32_t)f->lo, c, 0, out);
        return;
    }
}

/* ---- arrays --------------------------------------------------------------- */

static int32_t arr_item(const gr_node *n, int64_t i)
{
    if (i < (int64_t)n->u.arr.n_prefix)
        return n->u.arr.prefix[i];
    return n->u.arr.items;
}

static int arr_can_close(const gr_node *n, const gr_frame *f)
{
    return f->count >= n->u.arr.min_items && cont_met(n, f);
}

/* Another item may start: allowed at all, and for uniqueItems and
 * contains still completable. */
static int arr_item_ok(const gr_ctx *cx, const gr_node *n, const gr_frame *f)
{
    int32_t it = arr_item(n, f->count);
    if (it < 0 || cx->g->nodes[it].kind == GK_EMPTY ||
        (n->u.arr.max_items >= 0 && f->count >= n->u.arr.max_items))
        return 0;
    /* uniqueItems: some value no earlier item has must be left */
    if (n->u.arr.unique == GR_UNIQ_HASH && !gr_item_start_live(cx->g, it, f->ext, f->count))
        return 0;
    if (n->u.arr.n_cont) {
        for (int S = 0; S < (1 << n->u.arr.n_cont); S++)
            if (cont_tag_ok(cx, n, f, S))
                return 1;
        return 0;
    }
    return 1;
}

static void feed_arr(gr_ctx *cx, const gr_frame *f, int c, gr_set *out)
{
    const gr_node *n = node_of(cx, f);
    if (c == GR_EOF)
        return;
    if (f->phase != A_START && f->phase != A_INVAL && is_ws(c)) {
        if (cx->indent)
            indent_ws(cx, f, c,
                      f->phase == A_AFTER ? arr_can_close(n, f) : arr_item_ok(cx, n, f), out);
        else
            feed_ws(cx, f, out);
        return;
    }
    if (cx->indent && f->phase != A_START && f->phase != A_INVAL && !indent_ok(cx, f, c))
        return;
    gr_frame *nf;
    switch (f->phase) {
    case A_START:
        if (c != '[')
            return;
        nf = clone(cx, f);
        if (!nf)
            return;
        nf->phase = A_OPEN;
        emit(out, nf);
        return;
    case A_OPEN:
    case A_AFTER:
        if (c == ']') {
            if (arr_can_close(n, f))
                child_done(cx, f, 0, 0, out);
            return;
        }
        if (f->phase == A_AFTER) {
            if (c != ',' || !arr_item_ok(cx, n, f))
                return;
            nf = clone(cx, f);
            if (!nf)
                return;
            nf->phase = A_COMMA;
            nf->ws = 0;
            emit(out, nf);
            return;
        }
        /* first item */
        /* fallthrough */
    case A_COMMA: {
        int32_t it = arr_item(n, f->count);
        if (it < 0 || (n->u.arr.max_items >= 0 && f->count >= n->u.arr.max_items))
            return;
        nf = clone(cx, f);
        if (!nf)
            return;
        nf->phase = A_INVAL;
        nf->ws = 0;
        if (n->u.arr.n_cont) {
            for (int S = 0; S < (1 << n->u.arr.n_cont); S++)
                if (cont_tag_ok(cx, n, f, S))
                    start_value(cx, nf, n->u.arr.ctag_node[S], c, S, out);
            return;
        }
        start_value(cx, nf, it, c, 0, out);
        return;
    }
    }
}

/* ---- dispatch ----------------------------------------------------------- */

static void feed(gr_ctx *cx, const gr_frame *f, int c, gr_set *out)
{
    if (f->node == -2)
        return;
    if (f->node < 0) { /* document root */
        if (f->phase == R_DONE && c == GR_EOF)
            emit(out, &gr_end_frame);
        return;
    }
    switch (node_of(cx, f)->kind) {
    case GK_LITSET:
        feed_lit(cx, f, c, out);
        return;
    case GK_NUMBER:
        feed_num(cx, f, c, out);
        return;
    case GK_STRING:
        feed_str(cx, f, c, out);
        return;
    case GK_OBJECT:
        feed_obj(cx, f, c, out);
        return;
    case GK_ARRAY:
        feed_arr(cx, f, c, out);
        return;
    case GK_EMPTY:
    case GK_ALT:
        return; /* never on a stack */
    }
}

void gr_feed_set(gr_ctx *cx, const gr_set *in, int c, gr_set *out)
{
    out->n = 0;
    out->overflow = in->overflow;
    for (int i = 0; i < in->n; i++) {
        const gr_frame *f = in->f[i];
        /* an empty document: only regex mode can accept one */
        if (f->node < 0 && f->phase == R_WAIT && f->lo == 1 && c == GR_EOF) {
            const gr_node *rn = &cx->g->nodes[cx->g->root];
            if (rn->kind == GK_STRING && rn->u.str.raw && rn->u.str.x->start >= 0 &&
                rn->u.str.x->accept[rn->u.str.x->start] && rn->u.str.min_len == 0)
                emit(out, &gr_end_frame);
            continue;
        }
        /* the root frame waiting for its first byte starts the value */
        if (f->node < 0 && f->phase == R_WAIT && f->lo == 1) {
            gr_frame *nf = clone(cx, f);
            if (!nf)
                continue;
            nf->lo = 0;
            start_value(cx, nf, cx->g->root, c, 0, out);
            continue;
        }
        feed(cx, f, c, out);
    }
}

void gr_start(gr_ctx *cx, gr_set *out)
{
    gr_frame *r = gr_arena_alloc(cx->arena, sizeof *r);
    out->n = 0;
    out->overflow = 0;
    if (!r)
        return;
    memset(r, 0, sizeof *r);
    r->node = -1;
    r->phase = R_WAIT;
    r->lo = 1; /* marks "value not started yet" */
    out->f[out->n++] = r;
}

int gr_can_end(gr_ctx *cx, const gr_set *in)
{
    gr_set tmp;
    gr_mark mk = gr_arena_mark(cx->arena);
    gr_feed_set(cx, in, GR_EOF, &tmp);
    int ok = tmp.n > 0;
    gr_arena_reset(cx->arena, mk);
    return ok;
}

int gr_is_done(const gr_frame *f)
{
    return f->node == -1 && f->phase == R_DONE;
}
