/* Short completions at run time: a document is finished by closing each
 * open frame from the top down, using witnesses for the values still
 * required.  The generator uses this to close a document before
 * max_tokens runs out; callers verify the text by feeding it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/match/match.h"

/* ---- run time ------------------------------------------------------------ */

/* Exponent digits on the number frame f plus path[0..d): the search
 * tries at most two (exponents may have up to 9, all alive; the
 * fallback below writes longer ones). */
static int exp_digits(const gr_frame *f, const char *path, int d)
{
    int k = 0, seen_e = f->phase >= N_E;
    if (f->phase == N_EXP)
        k = (int)f->count;
    for (int i = 0; i < d; i++) {
        if (path[i] == 'e') {
            seen_e = 1;
            k = 0;
        } else if (seen_e && path[i] >= '0' && path[i] <= '9') {
            k++;
        }
    }
    return seen_e ? k : 0;
}

/* Numbers end on the next byte, and bounds decide which digits work: a
 * small iterative-deepening search over digits, run on a copy of the frame
 * under a fake root. */
static void finish_number(const sx_grammar *g, const gr_frame *f, gr_wbuf *w)
{
    static const char digits[] = "0123456789.e-"; /* digits first: shortest plain */
    gr_frame root, top = *f;
    memset(&root, 0, sizeof root);
    root.node = -1;
    root.phase = R_WAIT;
    top.up = &root;
    gr_arena a = {0};
    gr_ctx cx = {.g = g, .arena = &a, .max_ws = 0, .max_stack = g->opts.max_stack};
    gr_set cur;
    cur.n = 1;
    cur.overflow = 0;
    cur.f[0] = &top;
    char path[352]; /* greedy below: the digits up to a bound of 1e308 */
    int found = -1;
    for (int limit = 0; limit <= 20 && found < 0; limit++) {
        /* depth-first, digits in order; stack of (set, next digit) */
        gr_set stack[21];
        int next[21];
        int d = 0;
        stack[0] = cur;
        next[0] = 0;
        long budget = 20000;
        while (d >= 0 && budget-- > 0) {
            if (d == limit) {
                if (gr_can_end(&cx, &stack[d])) {
                    found = d;
                    break;
                }
                d--;
                continue;
            }
            if (next[d] >= (int)sizeof digits - 1) {
                d--;
                continue;
            }
            int c = digits[next[d]++];
            if (c >= '0' && c <= '9' && exp_digits(f, path, d) >= 2)
                continue; /* longer exponents: the fallback below */
            gr_feed_set(&cx, &stack[d], c, &stack[d + 1]);
            if (stack[d + 1].n == 0)
                continue;
            path[d] = (char)c;
            d++;
            next[d] = 0;
        }
    }
    /* Bounds far from 1 (minimum 1e300) need an exponent of three digits,
     * past what the search above reaches in its budget: a head that opens
     * an exponent, then its digits greedily, the largest that stays alive
     * first.  Aliveness is exact, so each step keeps a completion, and an
     * exponent has at most 9 digits, so this ends. */
    static const char *const heads[] = {"e", "e-", "1e", "1e-", ".1e", ".1e-", "-", ""};
    for (size_t h = 0; found < 0 && h < sizeof heads / sizeof *heads; h++) {
        gr_set s = cur, t;
        int d = 0;
        for (const char *p = heads[h]; *p && s.n; p++) {
            gr_feed_set(&cx, &s, *p, &t);
            s = t;
            path[d++] = *p;
        }
        while (s.n && d < (int)sizeof path) {
            if (gr_can_end(&cx, &s)) {
                found = d;
                break;
            }
            int c = '9';
            for (; c >= '0'; c--) {
                gr_feed_set(&cx, &s, c, &t);
                if (t.n)
                    break;
            }
            if (c < '0')
                break;
            s = t;
            path[d++] = (char)c;
        }
    }
    gr_arena_free(&a);
    if (found < 0)
        w->oom = 1;
    else
        gr_wput(w, path, (size_t)found);
}

/* Automaton x from st over the UTF-8 of cp. */
static int32_t u_step(const gr_strx *x, int32_t st, uint32_t cp)
{
    uint8_t u[6];
    int ul = gr_canon_char(cp, u);
    if (cp < 0x80) {
        u[0] = (uint8_t)cp;
        ul = 1;
    }
    for (int i = 0; i < ul && st >= 0; i++)
        st = gr_strx_step(x, st, u[i]);
    return st;
}

/* The rest of the \u spelling of cp, from the escape under way on f. */
static void write_u_rest(const gr_frame *f, uint32_t cp, gr_wbuf *w)
{
    char t[16];
    int n = gr_u_rest(f, cp, t);
    gr_wput(w, t, (size_t)n);
}

/* canon: SX_ESC_CANONICAL (a patterned string's \u spells a control
 * character with no short escape) */
static void finish_string(const gr_node *n, const gr_frame *f, int canon, gr_wbuf *w)
{
    int64_t count = f->count;
    int phase = f->phase;
    const gr_strx *x = n->u.str.x;
    int32_t st = (int32_t)f->pos;
    if (phase == S_START) {
        if (!n->u.str.raw)
            gr_wputs(w, "\"");
        phase = S_IN;
        st = x ? x->start : 0;
    }
    if (phase == S_ESC) {
        /* the first escape that keeps the string alive */
        static const char esc[] = "\"\\/bfnrt", dec[] = "\"\\/\b\f\n\r\t";
        int done = 0;
        for (int i = 0; i < 8 && !done; i++) {
            int32_t ns = x ? gr_strx_step(x, st, (uint8_t)dec[i]) : 0;
            if (ns >= 0 && (!x || gr_strx_len_ok(x, ns, count + 1, n->u.str.min_len,
                                                 n->u.str.max_len))) {
                gr_wput(w, &esc[i], 1);
                st = ns;
                done = 1;
            }
        }
        if (!done && x) {
            /* no short escape: a \u (gr_feed.c, esc_room) */
            int64_t cp = gr_strx_u_find(x, f, canon, n->u.str.min_len, n->u.str.max_len);
            if (cp >= 0) {
                write_u_rest(f, (uint32_t)cp, w);
                st = u_step(x, st, (uint32_t)cp);
                done = st >= 0;
            }
        }
        if (!done) {
            w->oom = 1;
            return;
        }
        count++;
        phase = S_IN;
    } else if (x && (phase == S_U || phase == S_LBS || phase == S_LU || phase == S_LOW)) {
        int64_t cp = gr_strx_u_find(x, f, canon, n->u.str.min_len, n->u.str.max_len);
        if (cp < 0) {
            w->oom = 1;
            return;
        }
        write_u_rest(f, (uint32_t)cp, w);
        st = u_step(x, st, (uint32_t)cp);
        count++;
        phase = S_IN;
    } else if (phase == S_U || phase == S_LBS || phase == S_LU || phase == S_LOW) {
        /* the \u under way with zeros; a high surrogate then takes the
         * first low one (gr_feed.c, S_LBS) */
        static const char *low[] = {"dc00", "c00", "00", "0"};
        int64_t v = f->val;
        if (phase == S_U)
            for (int k = f->aux; k < 4; k++, v *= 16)
                gr_wputs(w, "0");
        if (phase == S_U && v >= 0xD800 && v <= 0xDBFF)
            gr_wputs(w, "\\udc00");
        else if (phase == S_LBS)
            gr_wputs(w, "\\udc00");
        else if (phase == S_LU)
            gr_wputs(w, "udc00");
        else if (phase == S_LOW)
            gr_wputs(w, low[f->aux]);
        count++;
        phase = S_IN;
    } else if (f->aux && !x) {
        uint8_t b = f->u8lo;
        gr_wput(w, &b, 1);
        for (int k = 1; k < f->aux; k++)
            gr_wput(w, "\x80", 1);
    }
    if (x) {
        uint8_t tmp[4096];
        long l = gr_strx_complete(x, st, count, n->u.str.min_len, n->u.str.max_len,
                                  n->u.str.raw, tmp, sizeof tmp);
        if (l < 0) {
            w->oom = 1;
            return;
        }
        gr_wput(w, tmp, (size_t)l);
    } else {
        for (; count < n->u.str.min_len; count++)
            gr_wputs(w, "a");
    }
    if (!n->u.str.raw)
        gr_wputs(w, "\"");
}

/* Completes a key being typed with the shortest usable known key; returns
 * its index in props, or -1 when no known key fits (the key is then an
 * additional one). */
static int finish_key(const gr_node *n, const gr_frame *f, int canon, gr_wbuf *w)
{
    const gr_prop *P = n->u.obj.props;
    int best = -1;
    /* inside an escape (gr_feed.c, "escapes in keys"): the names whose
     * next character the escape can still spell */
    int esc = (f->flags & F_KESC) != 0, digits = esc && f->aux ? f->aux - 1 : 0;
    uint32_t v = (uint32_t)f->u8hi << 8 | f->u8lo, shift = 4 * (4 - (uint32_t)digits), cp = 0;
    for (uint32_t i = f->lo; i < f->hi; i++) {
        if (esc && !(gr_canon_cp(P[i].key, P[i].key_len, f->pos, &cp) && cp < 0x10000 &&
                     (!f->aux || cp >> shift == v)))
            continue;
        /* (canonical: the name's own spelling has the escape) */
        if (esc && canon && (f->aux ? !gr_canon_ctl(cp) : P[i].key[f->pos] != '\\'))
            continue;
        if (P[i].node >= 0 && !gr_prop_seen(&P[i], f->seen, f->ext) &&
            (best < 0 || P[i].key_len < P[best].key_len) && gr_ord_ok(n, f->ord, &P[i]) &&
            gr_obj_feasible_add(n, f->seen, f->count, &P[i]))
            best = (int)i;
    }
    if (best >= 0) {
        uint32_t at = f->pos;
        if (esc) {
            /* the escape typed so far, finished: a short escape where the
             * name has one, else \u with the character's digits */
            int cl = gr_canon_cp(P[best].key, P[best].key_len, at, &cp);
            if (!f->aux && P[best].key[at] == '\\') {
                at++;
            } else {
                char hx[8];
                snprintf(hx, sizeof hx, "u%04x", (unsigned)cp);
                gr_wputs(w, hx + (f->aux ? f->aux : 0));
                at += (uint32_t)cl;
            }
        }
        gr_wput(w, P[best].key + at, P[best].key_len - at);
        gr_wputs(w, "\":");
    }
    return best;
}

long gr_complete(const sx_grammar *g, const gr_frame *top, int variant, gr_work *work,
                 uint8_t *buf, size_t cap)
{
    const gr_node *N = g->nodes;
    gr_wbuf w = {.work = work, .limit = cap};
    const gr_frame *f = top;
    gr_frame tmp;
    int first = 1;
    uint64_t add_seen = 0; /* value class the finished literal item used */
    gr_vseen fin = {0};    /* the value of a scalar item just finished */
    int have_fin = 0;
    int last_tag = 0;      /* the contains constraints the finished item counts for */
    while (f && !w.oom) {
        if (f->node == -2)
            break;
        if (f->node == -1) {
            if (f->phase == R_WAIT && f->lo == 1)
                gr_wit(N, g->root, &w);
            break;
        }
        const gr_node *n = &N[f->node];
        if (!first) {
            /* a parent whose child just finished */
            tmp = *f;
            if (n->kind == GK_OBJECT) {
                tmp.phase = O_AFTER;
            } else if (n->kind == GK_ARRAY) {
                tmp.phase = A_AFTER;
                tmp.count++;
                tmp.seen |= add_seen;
                if (have_fin && n->u.arr.unique == GR_UNIQ_HASH) {
                    /* new items must differ from it too */
                    fin.next = tmp.ext;
                    tmp.ext = &fin;
                }
            }
            add_seen = 0;
            have_fin = 0;
            f = &tmp;
        }
        int first_frame = first;
        first = 0;
        switch (n->kind) {
        case GK_LITSET: {
            /* an item of a uniqueItems array takes a value not used yet */
            const gr_node *pn = f->up && f->up->node >= 0 ? &N[f->up->node] : NULL;
            const uint8_t *cls = pn && pn->kind == GK_ARRAY ? pn->u.arr.lit_class : NULL;
            const gr_vseen *hs = (f->flags & F_UITEM) ? f->up->ext : NULL;
            int best = -1;
            /* inside an escape (gr_feed.c, "escapes in string literals"):
             * the literals whose next character it can still spell */
            int esc = (f->flags & F_KESC) != 0;
            uint32_t shift = esc && f->aux ? 4 * (4 - (uint32_t)(f->aux - 1)) : 0, cp = 0;
            for (uint32_t k = f->lo; k < f->hi; k++) {
                const gr_lit *lk = &n->u.lit.lits[k];
                if (esc && !(gr_canon_cp(lk->b, lk->len, f->pos, &cp) && cp < 0x10000 &&
                             (!f->aux || cp >> shift == (uint32_t)f->val)))
                    continue;
                if ((!cls || !(f->up->seen >> cls[k] & 1)) &&
                    !(hs && gr_vseen_has(hs, n->u.lit.hash[k])) &&
                    (best < 0 || lk->len < n->u.lit.lits[best].len))
                    best = (int)k;
            }
            if (best < 0) {
                w.oom = 1;
                break;
            }
            uint32_t at = f->pos;
            const gr_lit *lb = &n->u.lit.lits[best];
            if (esc) {
                /* the escape typed so far, finished */
                int cl = gr_canon_cp(lb->b, lb->len, at, &cp);
                if (!f->aux && lb->b[at] == '\\') {
                    at++;
                } else {
                    char hx[8];
                    snprintf(hx, sizeof hx, "u%04x", (unsigned)cp);
                    gr_wputs(&w, hx + f->aux);
                    at += (uint32_t)cl;
                }
            }
            gr_wput(&w, lb->b + at, lb->len - at);
            if (cls)
                add_seen = 1ull << cls[best];
            if (hs || (f->flags & F_UITEM)) {
                fin.h = n->u.lit.hash[best];
                have_fin = 1;
            }
            break;
        }
        case GK_NUMBER:
            if ((f->flags & F_UITEM) || n->u.num.n_excl) {
                /* a value no earlier item has, none of the excluded */
                uint8_t t[64];
                int uitem = (f->flags & F_UITEM) != 0;
                long l = gr_num_new_completion(n, f, uitem ? f->up->ext : NULL,
                                               uitem ? variant : 0, t, sizeof t, &fin.h);
                /* too few ways to finish this value for the variant (a
                 * lone "0"): the outer values take the variant instead */
                if (l < 0 && uitem && variant > 0)
                    l = gr_num_new_completion(n, f, f->up->ext, 0, t, sizeof t, &fin.h);
                if (l < 0)
                    w.oom = 1;
                else
                    gr_wput(&w, t, (size_t)l);
                have_fin = uitem;
            } else if (f->phase == N_START) {
                gr_wit(N, f->node, &w);
            } else {
                finish_number(g, f, &w);
            }
            break;
        case GK_STRING:
            if ((f->flags & F_UITEM) && !n->u.str.raw) {
                uint8_t t[4096];
                long l = gr_str_new_completion(n, f, f->up->ext, variant, t, sizeof t, &fin.h);
                if (l < 0 && variant > 0)
                    l = gr_str_new_completion(n, f, f->up->ext, 0, t, sizeof t, &fin.h);
                have_fin = 1;
                if (l < 0) {
                    w.oom = 1;
                } else {
                    if (f->phase == S_START)
                        gr_wputs(&w, "\"");
                    gr_wput(&w, t, (size_t)l);
                    gr_wputs(&w, "\"");
                }
            } else {
                finish_string(n, f, g->opts.escapes != SX_ESC_ANY, &w);
            }
            break;
        case GK_OBJECT: {
            uint64_t seen = f->seen;
            int64_t count = f->count;
            int ph = f->phase;
            uint16_t ord = f->ord; /* property-order position */
            int32_t skip = -1; /* a hashed key just written */
            gr_vseen just = {0};   /* an invented key just finished */
            const void *keys = f->ext;
            size_t seg = w.n;
            if (ph == O_START) {
                gr_wit(N, f->node, &w);
                break;
            }
            if (ph == O_KEY) {
                int best = finish_key(n, f, g->opts.escapes != SX_ESC_ANY, &w);
                if (best < 0 && n->u.obj.keyx) {
                    int32_t vn = gr_wit_auto_key(n, f->kst, (f->flags & 4u) != 0, (uint64_t)f->val,
                                          f->ext, &w, &just.h);
                    if (vn < 0) {
                        w.oom = 1;
                    } else {
                        gr_wit(N, vn, &w);
                        /* keys invented below must differ from this one too */
                        just.next = f->ext;
                        keys = &just;
                    }
                    ord = GR_ORD_UNLISTED;
                } else if (best < 0) {
                    /* a new additional key: close it; more bytes make
                     * sure it spells neither a known key nor one the
                     * object already has (hashed as the matcher does) */
                    uint64_t h = (uint64_t)f->val;
                    if ((f->flags & F_KESC) && !f->aux) { /* after a backslash */
                        gr_wputs(&w, "n");
                        h = (h ^ 'n') * GR_FNV_PRIME;
                    } else if (f->flags & F_KESC) {
                        /* inside a \u: the digits left, zeros */
                        int digits = f->aux - 1;
                        uint32_t cp = ((uint32_t)f->u8hi << 8 | f->u8lo) << (4 * (4 - digits));
                        char hx[8];
                        uint8_t cb[6];
                        snprintf(hx, sizeof hx, "%04x", (unsigned)cp);
                        gr_wputs(&w, hx + digits);
                        h = gr_fnv_unfold(h, '\\');
                        int cl = gr_canon_char(cp, cb);
                        for (int k = 0; k < cl; k++)
                            h = gr_fnv(h, cb[k]);
                    } else if (f->aux) {
                        uint8_t b = f->u8lo;
                        gr_wput(&w, &b, 1);
                        h = (h ^ b) * GR_FNV_PRIME;
                        for (int k = 1; k < f->aux; k++) {
                            gr_wput(&w, "\x80", 1);
                            h = (h ^ 0x80) * GR_FNV_PRIME;
                        }
                    }
                    int more = f->lo < f->hi || gr_key_listed(f->ext, h);
                    for (int k = 0; more && k < 64; k++) {
                        gr_wputs(&w, "~");
                        h = (h ^ '~') * GR_FNV_PRIME;
                        more = gr_key_listed(f->ext, h);
                    }
                    gr_wputs(&w, "\":");
                    gr_wit(N, n->u.obj.additional, &w);
                    ord = GR_ORD_UNLISTED;
                } else {
                    gr_wit(N, n->u.obj.props[best].node, &w);
                    seen |= gr_prop_bit(&n->u.obj.props[best]);
                    skip = best;
                    if (n->u.obj.by_order)
                        ord = gr_ord_after(&n->u.obj.props[best]);
                }
                count++;
                ph = O_AFTER;
            } else if (ph == O_COLON || ph == O_VALUE) {
                if (ph == O_COLON)
                    gr_wputs(&w, ":");
                gr_wit(N, (int32_t)f->lo, &w);
                ph = O_AFTER;
            }
            /* indented layout: a run after '{' announces a member */
            if (ph == O_COMMA || (ph == O_OPEN && f->ws > 0 && g->opts.ws_mode == SX_WS_INDENTED)) {
                /* a member must follow the comma */
                size_t before = w.n;
                gr_wit_object_members(g, n, seen, count, 0, &w, 0, keys, skip, ord);
                if (w.n == before) {
                    /* nothing required: any usable optional key, else an
                     * invented additional one */
                    int done = 0;
                    for (uint32_t m = 0; m < n->u.obj.n && !done; m++) {
                        uint32_t k = n->u.obj.by_order ? n->u.obj.by_order[m] : m;
                        const gr_prop *p = &n->u.obj.props[k];
                        if (p->node >= 0 && !gr_prop_seen(p, seen, f->ext) &&
                            gr_ord_ok(n, ord, p) && gr_obj_feasible_add(n, seen, count, p)) {
                            gr_wputs(&w, "\"");
                            gr_wput(&w, p->key, p->key_len);
                            gr_wputs(&w, "\":");
                            gr_wit(N, p->node, &w);
                            done = 1;
                        }
                    }
                    if (!done && n->u.obj.keyx) {
                        gr_wputs(&w, "\"");
                        int32_t vn = gr_wit_auto_key(n, n->u.obj.keyx->start, 0, GR_FNV_BASIS, keys, &w, NULL);
                        if (vn < 0)
                            w.oom = 1;
                        else
                            gr_wit(N, vn, &w);
                    } else if (!done) {
                        /* a name neither present nor listed */
                        char key[32];
                        long next = 0;
                        size_t kl = gr_wit_fresh_key(n, keys, &next, key);
                        gr_wputs(&w, "\"");
                        gr_wput(&w, key, kl);
                        gr_wputs(&w, "\":");
                        gr_wit(N, n->u.obj.additional, &w);
                    }
                }
            } else {
                gr_wit_object_members(g, n, seen, count, ph != O_OPEN, &w, 0, keys, skip, ord);
            }
            if ((f->flags & F_UITEM) && variant > 0) {
                /* an item equal to an earlier one: more members make it new */
                int has = f->count > 0 || w.n > seg || f->phase == O_KEY;
                gr_wit_extra_members(g, n, variant, has, f->ext, &w, 0);
            }
            gr_wputs(&w, "}");
            break;
        }
        case GK_ARRAY: {
            int64_t count = f->count;
            if (f->phase == A_START) {
                gr_wit(N, f->node, &w);
                break;
            }
            int need_comma = f->phase == A_AFTER;
            /* an item must follow a comma, and in the indented layout a
             * run after '[' */
            int item_due = f->phase == A_COMMA ||
                           (f->phase == A_OPEN && f->ws > 0 && g->opts.ws_mode == SX_WS_INDENTED);
            if (n->u.arr.lit_class) {
                int64_t more = n->u.arr.min_items - count;
                if (item_due && more < 1)
                    more = 1; /* an item must follow the comma */
                gr_wit_unique_items(N, n, f->seen, more > 0 ? more : 0, f->phase == A_AFTER, &w);
                gr_wputs(&w, "]");
                break;
            }
            if (n->u.arr.n_cont && f->phase != A_START) {
            int64_t cnt[GR_MAX_CONTAINS];
            for (int i = 0; i < n->u.arr.n_cont; i++) {
                cnt[i] = (int64_t)((uint64_t)f->val >> (16 * i) & 0xFFFF);
                if (!first_frame && (last_tag >> i & 1))
                    cnt[i]++;
            }
            gr_wit_cont_fill(g, n, count, cnt, item_due, f->phase == A_AFTER, &w, 0);
            gr_wputs(&w, "]");
            break;
        }
        if (n->u.arr.unique == GR_UNIQ_HASH || ((f->flags & F_UITEM) && variant > 0)) {
                /* items that must be new; an item of an outer uniqueItems
                 * array that may equal an earlier one takes `variant`
                 * more */
                int64_t more = n->u.arr.min_items - count;
                if (item_due && more < 1)
                    more = 1; /* an item must follow the comma */
                if (more < 0)
                    more = 0;
                if ((f->flags & F_UITEM) && variant > 0)
                    more += variant;
                if (n->u.arr.unique == GR_UNIQ_HASH) {
                    gr_wit_new_items(g, n, count, more, f->ext, 0, need_comma, &w, 0);
                } else {
                    /* only the array as a whole must be new: its items
                     * may repeat (new ones would fail on [null] items),
                     * and each variant is a length of its own, so one of
                     * the 1 + count variants differs from every earlier
                     * item (the schema fuzzer's seed 20, schema 198) */
                    for (int64_t k = 0; k < more && !w.oom; k++, count++) {
                        int32_t it = count < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[count]
                                                                         : n->u.arr.items;
                        if (need_comma || k)
                            gr_wputs(&w, ",");
                        gr_wit(N, it, &w);
                    }
                }
                gr_wputs(&w, "]");
                break;
            }
            if (item_due) {
                int32_t it = count < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[count] : n->u.arr.items;
                gr_wit(N, it, &w);
                count++;
                need_comma = 1;
            }
            for (; count < n->u.arr.min_items && !w.oom; count++) {
                int32_t it = count < (int64_t)n->u.arr.n_prefix ? n->u.arr.prefix[count] : n->u.arr.items;
                if (need_comma)
                    gr_wputs(&w, ",");
                gr_wit(N, it, &w);
                need_comma = 1;
            }
            gr_wputs(&w, "]");
            break;
        }
        case GK_EMPTY:
        case GK_ALT:
            w.oom = 1;
            break;
        }
        last_tag = f->ctag;
        f = f->up;
    }
    long result = -1;
    if (!w.oom && w.n <= cap) {
        if (w.n)
            memcpy(buf, w.b, w.n);
        result = (long)w.n;
    }
    free(w.b);
    return result;
}
