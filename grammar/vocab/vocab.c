#include "grammar/vocab/vocab.h"
#include "common/sx_text.h"

#include <stdlib.h>
#include <string.h>

/* Sorting token indices by their bytes puts every prefix before its
 * extensions, which is exactly the preorder of the trie. */
typedef struct vocab_key {
    const uint8_t *b;
    uint32_t len;
    int32_t id;
} vocab_key;

static int cmp_tokens(const void *pa, const void *pb)
{
    const vocab_key *a = pa, *b = pb;
    int c = memcmp(a->b, b->b, a->len < b->len ? a->len : b->len);
    if (c)
        return c;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Builds the preorder trie of the given tokens (sorted by bytes). */
static int build_trie(const vocab_key *order, int32_t n_order, sx_vocab_node **out_nodes,
                      uint32_t *out_n)
{
    size_t cap = 1;
    for (int32_t k = 0; k < n_order; k++)
        cap += order[k].len;
    sx_vocab_node *nodes = malloc(cap * sizeof *nodes);
    uint32_t stack_nodes[257];
    if (!nodes)
        return SX_ENOMEM;
    nodes[0] = (sx_vocab_node){.next = 0, .token = -1, .byte = 0, .depth = 0};
    uint32_t n = 1, depth = 0; /* stack_nodes[d] = open node at depth d */
    stack_nodes[0] = 0;
    const uint8_t *prev = NULL;
    uint32_t prev_len = 0;
    for (int32_t k = 0; k < n_order; k++) {
        int32_t t = order[k].id;
        const uint8_t *b = order[k].b;
        uint32_t len = order[k].len;
        uint32_t common = 0;
        while (common < len && common < prev_len && b[common] == prev[common])
            common++;
        /* close the nodes deeper than the shared prefix */
        while (depth > common) {
            nodes[stack_nodes[depth]].next = n;
            depth--;
        }
        if (common == len) {
            /* same bytes as an earlier token: keep the first id at this node */
            if (nodes[stack_nodes[depth]].token < 0)
                nodes[stack_nodes[depth]].token = t;
        } else {
            for (uint32_t d = common; d < len; d++) {
                nodes[n] = (sx_vocab_node){.next = 0, .token = -1, .byte = b[d],
                                           .depth = (uint8_t)(d + 1)};
                stack_nodes[++depth] = n++;
            }
            nodes[n - 1].token = t;
        }
        prev = b;
        prev_len = len;
    }
    while (depth > 0) {
        nodes[stack_nodes[depth]].next = n;
        depth--;
    }
    nodes[0].next = n;
    *out_nodes = nodes;
    *out_n = n;
    return SX_OK;
}

/* Code points of a plain token, or -1 if it is not plain (see vocab.h). */
static int plain_cp(const uint8_t *b, uint32_t len)
{
    int cp = 0;
    for (uint32_t i = 0; i < len;) {
        uint8_t c = b[i];
        uint32_t need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            if (c < 0x20 || c == '"' || c == '\\')
                return -1;
            need = 0;
        } else if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo = 0xA0;
            if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo = 0x90;
            if (c == 0xF4)
                hi = 0x8F;
        } else {
            return -1;
        }
        if (i + 1 + need > len)
            return -1;
        for (uint32_t k = 1; k <= need; k++) {
            uint8_t d = b[i + k];
            if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF))
                return -1;
        }
        i += 1 + need;
        cp++;
    }
    return cp;
}

/* How many characters (escapes count one) b starts if it is valid JSON
 * string content from a character boundary, else -1; it may stop
 * stopping inside an escape or a character?  The same rules as the
 * matcher's string frame: short escapes, \u with four hex digits (a
 * surrogate only as the high half of a pair, not in keys), UTF-8 without overlongs or surrogates, no control bytes.
 * key 1: an additional key spelled as it is hashed (short escapes but \/
 * only); key 2: an additional key with no automaton (escapes decoded,
 * \u included); key 3: key 1 and a canonical \u (sx_gr_esc: 00xx,
 * lowercase, a control character with no short escape).  *paired (may be
 * NULL) is set to 1 when a surrogate escape is read (even if b is then
 * refused). */
static int content_rules(const uint8_t *b, uint32_t len, int key, int *in_esc, int *paired)
{
    enum { NORMAL, ESC, HEX, UTF8, PBS, PU, LOW } st = NORMAL;
    int digits = 0, pend = 0, lo = 0, hi = 0, first = 0, starts = 0, pair = 0;
    uint32_t uv = 0;
    if (paired)
        *paired = 0;
    for (uint32_t i = 0; i < len; i++) {
        int c = b[i];
        switch (st) {
        case NORMAL:
            if (c < 0x20 || c == '"')
                return -1;
            starts++;
            if (c == '\\') {
                st = ESC;
            } else if (c >= 0x80) {
                lo = 0x80;
                hi = 0xBF;
                if (c >= 0xC2 && c <= 0xDF) {
                    pend = 1;
                } else if (c >= 0xE0 && c <= 0xEF) {
                    pend = 2;
                    if (c == 0xE0)
                        lo = 0xA0;
                    if (c == 0xED)
                        hi = 0x9F;
                } else if (c >= 0xF0 && c <= 0xF4) {
                    pend = 3;
                    if (c == 0xF0)
                        lo = 0x90;
                    if (c == 0xF4)
                        hi = 0x8F;
                } else {
                    return -1;
                }
                st = UTF8;
            }
            break;
        case ESC:
            if (key == 2) {
                /* an additional key with no automaton: short escapes
                 * and \u, decoded (gr_feed.c, "escapes in keys") */
                if (c == 'u') {
                    st = HEX;
                    digits = 0;
                } else if (c && strchr("\"\\/bfnrt", c)) {
                    st = NORMAL;
                } else {
                    return -1;
                }
            } else if (key == 3 && c == 'u') {
                st = HEX;
                digits = 0;
                uv = 0;
            } else if (key) {
                /* additional keys: short escapes only, and no \/ (one
                 * spelling per key; see feed_key) */
                if (!c || !strchr("\"\\bfnrt", c))
                    return -1;
                st = NORMAL;
            } else if (c == 'u') {
                st = HEX;
                digits = 0;
            } else if (c && strchr("\"\\/bfnrt", c)) {
                st = NORMAL;
            } else {
                return -1;
            }
            break;
        case HEX: {
            int h = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                                     : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (h < 0)
                return -1;
            if (digits == 0)
                first = h;
            uv = uv * 16 + (uint32_t)h;
            if (key == 3 && ((c >= 'A' && c <= 'F') || (digits < 2 && h) || (digits == 2 && h > 1) ||
                             (digits == 3 && (uv == 8 || uv == 9 || uv == 10 || uv == 12 || uv == 13))))
                return -1;
            if (digits == 1 && first == 0xD && h >= 8) {
                if (paired)
                    *paired = 1;
                /* a low surrogate first, or any in a key, is refused; a
                 * high one in a string starts a pair (one character) */
                if (key || h >= 0xC)
                    return -1;
                pair = 1;
            }
            if (++digits == 4) {
                st = pair ? PBS : NORMAL;
                pair = 0;
                digits = 0;
            }
            break;
        }
        case PBS:
        case PU:
            if (c != (st == PBS ? '\\' : 'u'))
                return -1;
            st = st == PBS ? PU : LOW;
            break;
        case LOW: {
            int h = sx_hexval(c);
            if (h < 0 || (digits == 0 && h != 0xD) || (digits == 1 && h < 0xC))
                return -1;
            if (++digits == 4)
                st = NORMAL;
            break;
        }
        case UTF8:
            if (c < lo || c > hi)
                return -1;
            lo = 0x80;
            hi = 0xBF;
            if (--pend == 0)
                st = NORMAL;
            break;
        }
    }
    if (in_esc)
        *in_esc = st == ESC ? 1 : st == NORMAL ? 0 : -1;
    return starts;
}

static int free_content(const uint8_t *b, uint32_t len)
{
    return content_rules(b, len, 0, NULL, NULL);
}

typedef struct sq_ent {
    const uint8_t *s; /* S */
    uint32_t slen;
    int32_t tok;
    int16_t sch, kch;
    uint8_t plen;
} sq_ent;

static int cmp_sq(const void *pa, const void *pb)
{
    const sq_ent *a = pa, *b = pb;
    int c = memcmp(a->s, b->s, a->slen < b->slen ? a->slen : b->slen);
    if (c)
        return c;
    if (a->slen != b->slen)
        return a->slen < b->slen ? -1 : 1;
    return a->tok < b->tok ? -1 : a->tok > b->tok;
}

/* The split of the quote tokens among order[0..n) (sorted): see vocab.h,
 * sq_* and sfx_nodes. */
static int build_split(sx_vocab *v, const vocab_key *order, int32_t n)
{
    sq_ent *e = malloc((size_t)(n ? n : 1) * sizeof *e);
    vocab_key *ws = malloc((size_t)(n ? n : 1) * sizeof *ws), *wk = malloc((size_t)(n ? n : 1) * sizeof *wk);
    vocab_key *sf = malloc((size_t)(n ? n : 1) * sizeof *sf);
    int32_t ne = 0, nws = 0, nwk = 0, nsf = 0;
    int rc = SX_ENOMEM;
    if (!e || !ws || !wk || !sf)
        goto done;
    for (int32_t k = 0; k < n; k++) {
        const uint8_t *b = order[k].b, *q = memchr(b, '"', order[k].len);
        /* the trie keeps the first of tokens with the same bytes */
        if (!q || (k > 0 && order[k - 1].len == order[k].len && !memcmp(order[k - 1].b, b, order[k].len)))
            continue;
        uint32_t plen = (uint32_t)(q - b), slen = order[k].len - plen - 1;
        int es, ek;
        int sch = content_rules(b, plen, 0, &es, NULL), kch = content_rules(b, plen, 1, &ek, NULL);
        int s_quote = memchr(q + 1, '"', slen) != NULL;
        if (sch >= 0 && es == 1)
            ws[nws++] = order[k];
        if (kch >= 0 && (ek == 1 || (ek == 0 && s_quote)))
            wk[nwk++] = order[k];
        if (sch < 0 || es != 0)
            sch = -1;
        if (kch < 0 || ek != 0 || s_quote)
            kch = -1;
        if (sch < 0 && kch < 0)
            continue;
        e[ne++] = (sq_ent){q + 1, slen, order[k].id, (int16_t)(sch > 32767 ? 32767 : sch),
                           (int16_t)(kch > 32767 ? 32767 : kch), (uint8_t)plen};
    }
    qsort(e, (size_t)ne, sizeof *e, cmp_sq);
    v->sq_tok = malloc((size_t)(ne ? ne : 1) * sizeof *v->sq_tok);
    v->sq_schars = malloc((size_t)(ne ? ne : 1) * sizeof *v->sq_schars);
    v->sq_kchars = malloc((size_t)(ne ? ne : 1) * sizeof *v->sq_kchars);
    v->sq_plen = malloc((size_t)(ne ? ne : 1));
    v->sfx_first = malloc((size_t)(ne + 2) * sizeof *v->sfx_first);
    if (!v->sq_tok || !v->sq_schars || !v->sq_kchars || !v->sq_plen || !v->sfx_first)
        goto done;
    uint32_t id = 0;
    v->sfx_first[0] = 0;
    for (int32_t i = 0; i < ne; i++) {
        int same = i > 0 && e[i].slen == e[i - 1].slen && !memcmp(e[i].s, e[i - 1].s, e[i].slen);
        if (!same && e[i].slen > 0) {
            /* a new suffix (the empty one, id 0, sorts first) */
            id++;
            v->sfx_first[id] = (uint32_t)i;
            sf[nsf++] = (vocab_key){e[i].s, e[i].slen, (int32_t)id};
        }
        v->sq_tok[i] = e[i].tok;
        v->sq_schars[i] = e[i].sch;
        v->sq_kchars[i] = e[i].kch;
        v->sq_plen[i] = e[i].plen;
    }
    v->n_sfx = id + 1;
    v->sfx_first[id + 1] = (uint32_t)ne;
    v->n_sq = (uint32_t)ne;
    if ((rc = build_trie(sf, nsf, &v->sfx_nodes, &v->n_sfx_nodes)) ||
        (rc = build_trie(ws, nws, &v->qs_nodes, &v->n_qs_nodes)) ||
        (rc = build_trie(wk, nwk, &v->qk_nodes, &v->n_qk_nodes)))
        goto done;
    rc = SX_OK;
done:
    free(e);
    free(ws);
    free(wk);
    free(sf);
    return rc;
}

/* Splits the non-plain tokens in order[0..n) for the free-string path:
 * marks free_str, and builds the tries of those that hold a '"' and of
 * the others. */
static int build_free(sx_vocab *v, const vocab_key *order, int32_t n)
{
    vocab_key *q = calloc((size_t)(n ? n : 1), sizeof *q);
    vocab_key *nq = calloc((size_t)(n ? n : 1), sizeof *nq);
    int *starts = malloc((size_t)(n ? n : 1) * sizeof *starts);
    int32_t n_q = 0, n_nq = 0, maxs = 0;
    if (!q || !nq || !starts) {
        free(q);
        free(nq);
        free(starts);
        return SX_ENOMEM;
    }
    for (int32_t k = 0; k < n; k++) {
        starts[k] = memchr(order[k].b, '"', order[k].len) ? -1 : free_content(order[k].b, order[k].len);
        if (starts[k] > maxs)
            maxs = starts[k];
    }
    v->max_free_starts = maxs;
    v->free_le = calloc((size_t)(maxs + 1) * (size_t)v->mask_words, sizeof *v->free_le);
    v->key_free = calloc((size_t)v->mask_words, sizeof *v->key_free);
    v->key_free_any = calloc((size_t)v->mask_words, sizeof *v->key_free_any);
    v->str_pair = calloc((size_t)v->mask_words, sizeof *v->str_pair);
    if (!v->free_le || !v->key_free || !v->key_free_any || !v->str_pair) {
        free(q);
        free(nq);
        free(starts);
        return SX_ENOMEM;
    }
    for (int32_t k = 0; k < n; k++) {
        int32_t t = order[k].id;
        if (memchr(order[k].b, '"', order[k].len))
            q[n_q++] = order[k];
        else
            nq[n_nq++] = order[k];
        if (!memchr(order[k].b, '"', order[k].len) && starts[k] >= 0)
            v->free_le[(size_t)starts[k] * (size_t)v->mask_words + (size_t)(t >> 5)] |= 1u << (t & 31);
        int first = !(k > 0 && order[k - 1].len == order[k].len &&
                      !memcmp(order[k - 1].b, order[k].b, order[k].len));
        if (!memchr(order[k].b, '"', order[k].len) && first &&
            content_rules(order[k].b, order[k].len, 2, NULL, NULL) >= 0)
            v->key_free_any[t >> 5] |= 1u << (t & 31);
        if (!memchr(order[k].b, '"', order[k].len) && first &&
            content_rules(order[k].b, order[k].len, 3, NULL, NULL) >= 0)
            v->key_free[t >> 5] |= 1u << (t & 31);
        const uint8_t *qq = memchr(order[k].b, '"', order[k].len);
        int paired;
        content_rules(order[k].b, qq ? (uint32_t)(qq - order[k].b) : order[k].len, 0, NULL, &paired);
        if (paired)
            v->str_pair[t >> 5] |= 1u << (t & 31);
    }
    for (int32_t L = 1; L <= maxs; L++)
        for (int32_t w = 0; w < v->mask_words; w++)
            v->free_le[(size_t)L * (size_t)v->mask_words + (size_t)w] |=
                v->free_le[(size_t)(L - 1) * (size_t)v->mask_words + (size_t)w];
    free(starts);
    int rc = build_trie(q, n_q, &v->q_nodes, &v->n_q_nodes);
    if (rc == SX_OK)
        rc = build_trie(nq, n_nq, &v->nq_nodes, &v->n_nq_nodes);
    free(q);
    free(nq);
    return rc;
}

/* The tries of lp_nodes (vocab.h): every token of order[] (sorted) but
 * the plain ones of at most lp_cp[k] code points. */
static int build_long(sx_vocab *v, const vocab_key *order, int32_t n_order)
{
    static const int32_t cps[SX_VOCAB_N_LP] = {6, 10, 16};
    vocab_key *keep = malloc((size_t)(n_order ? n_order : 1) * sizeof *keep);
    int rc = SX_OK;
    if (!keep)
        return SX_ENOMEM;
    for (int k = 0; k < SX_VOCAB_N_LP && !rc; k++) {
        int32_t m = 0;
        for (int32_t i = 0; i < n_order; i++) {
            int c = plain_cp(order[i].b, order[i].len);
            if (c < 0 || c > cps[k])
                keep[m++] = order[i];
        }
        v->lp_cp[k] = cps[k];
        rc = build_trie(keep, m, &v->lp_nodes[k], &v->n_lp_nodes[k]);
    }
    if (!rc) {
        int32_t m = 0;
        for (int32_t i = 0; i < n_order; i++)
            if (order[i].len > SX_VOCAB_SHORT && plain_cp(order[i].b, order[i].len) >= 0)
                keep[m++] = order[i];
        rc = build_trie(keep, m, &v->long_nodes, &v->n_long_nodes);
    }
    free(keep);
    return rc;
}

/* Fills plain_le and leaves in order[] only the tokens that are not plain. */
static int build_plain(sx_vocab *v, vocab_key *order, int32_t *n_order)
{
    int32_t m = 0, maxcp = 0, maxb = 0;
    int *cps = malloc((size_t)*n_order * sizeof *cps);
    if (!cps)
        return SX_ENOMEM;
    for (int32_t k = 0; k < *n_order; k++) {
        cps[k] = plain_cp(order[k].b, order[k].len);
        if (cps[k] > maxcp)
            maxcp = cps[k];
        if (cps[k] >= 0 && (int32_t)order[k].len > maxb)
            maxb = (int32_t)order[k].len;
    }
    v->max_plain_cp = maxcp;
    v->max_plain_bytes = maxb;
    v->plain_le = calloc((size_t)(maxcp + 1) * (size_t)v->mask_words, sizeof *v->plain_le);
    v->plain_cp = malloc((size_t)v->n_tokens * sizeof *v->plain_cp);
    if (!v->plain_le || !v->plain_cp) {
        free(cps);
        return SX_ENOMEM;
    }
    for (int32_t t = 0; t < v->n_tokens; t++)
        v->plain_cp[t] = -1;
    for (int32_t k = 0; k < *n_order; k++) {
        if (cps[k] < 0) {
            order[m++] = order[k];
            continue;
        }
        int32_t t = order[k].id;
        v->plain_cp[t] = (int16_t)(cps[k] > 32767 ? 32767 : cps[k]);
        v->plain_le[(size_t)cps[k] * (size_t)v->mask_words + (size_t)(t >> 5)] |= 1u << (t & 31);
    }
    /* cumulative: plain_le[L] |= plain_le[L-1] */
    for (int32_t L = 1; L <= maxcp; L++)
        for (int32_t w = 0; w < v->mask_words; w++)
            v->plain_le[(size_t)L * (size_t)v->mask_words + (size_t)w] |=
                v->plain_le[(size_t)(L - 1) * (size_t)v->mask_words + (size_t)w];
    *n_order = m;
    free(cps);
    return SX_OK;
}

int sx_vocab_new(int32_t n_tokens, int32_t n_rows, const uint8_t *const *bytes,
                 const uint32_t *lens, const uint8_t *special, const int32_t *eos, int n_eos,
                 sx_vocab **out, sx_error *err)
{
    sx_vocab *v = NULL;
    vocab_key *order = NULL;
    int32_t n_order = 0;
    size_t pool_len = 0;
    int rc = SX_ENOMEM;

    if (n_tokens <= 0 || n_rows < n_tokens || n_eos < 0 || n_eos > 4)
        return sx_err_set(err, SX_EINVAL, "vocab: bad sizes (tokens %d, rows %d, eos %d)",
                          n_tokens, n_rows, n_eos);
    v = calloc(1, sizeof *v);
    if (!v)
        goto fail;
    v->n_tokens = n_tokens;
    v->n_rows = n_rows;
    v->mask_words = (n_rows + 31) / 32;
    v->n_eos = n_eos;
    for (int i = 0; i < n_eos; i++) {
        if (eos[i] < 0 || eos[i] >= n_tokens) {
            rc = sx_err_set(err, SX_EINVAL, "vocab: eos id %d out of range", eos[i]);
            goto fail;
        }
        v->eos[i] = eos[i];
    }
    for (int32_t i = 0; i < n_tokens; i++)
        pool_len += lens[i];
    v->pool = malloc(pool_len ? pool_len : 1);
    v->tok_bytes = calloc((size_t)n_tokens, sizeof *v->tok_bytes);
    v->tok_len = calloc((size_t)n_tokens, sizeof *v->tok_len);
    v->is_special = calloc((size_t)n_tokens, 1);
    order = malloc((size_t)n_tokens * sizeof *order);
    if (!v->pool || !v->tok_bytes || !v->tok_len || !v->is_special || !order)
        goto fail;
    size_t off = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        memcpy(v->pool + off, bytes[i], lens[i]);
        v->tok_bytes[i] = v->pool + off;
        v->tok_len[i] = lens[i];
        off += lens[i];
        v->is_special[i] = special ? special[i] != 0 : 0;
        if (lens[i] > v->max_token_len)
            v->max_token_len = lens[i];
        /* special tokens and empty ones never appear in the trie */
        if (!v->is_special[i] && lens[i] > 0)
            order[n_order++] = (vocab_key){v->tok_bytes[i], lens[i], i};
    }
    if (v->max_token_len > 255) {
        rc = sx_err_set(err, SX_ELIMIT, "vocab: a token of %u bytes (at most 255)", v->max_token_len);
        goto fail;
    }
    qsort(order, (size_t)n_order, sizeof *order, cmp_tokens);
    if ((rc = build_trie(order, n_order, &v->nodes, &v->n_nodes)) ||
        (rc = build_long(v, order, n_order)) ||
        (rc = build_plain(v, order, &n_order)) ||
        (rc = build_trie(order, n_order, &v->np_nodes, &v->n_np_nodes)) ||
        (rc = build_free(v, order, n_order)) ||
        (rc = build_split(v, order, n_order)))
        goto fail;
    free(order);
    *out = v;
    return SX_OK;
fail:
    if (rc == SX_ENOMEM)
        sx_err_set(err, SX_ENOMEM, "vocab: out of memory");
    free(order);
    sx_vocab_free(v);
    return rc;
}

void sx_vocab_free(sx_vocab *v)
{
    if (!v)
        return;
    free(v->nodes);
    free(v->np_nodes);
    free(v->long_nodes);
    for (int k = 0; k < SX_VOCAB_N_LP; k++)
        free(v->lp_nodes[k]);
    free(v->q_nodes);
    free(v->nq_nodes);
    free(v->free_le);
    free(v->key_free);
    free(v->key_free_any);
    free(v->str_pair);
    free(v->sfx_nodes);
    free(v->sfx_first);
    free(v->sq_tok);
    free(v->sq_schars);
    free(v->sq_kchars);
    free(v->sq_plen);
    free(v->qs_nodes);
    free(v->qk_nodes);
    free(v->plain_le);
    free(v->plain_cp);
    free(v->tok_bytes);
    free(v->tok_len);
    free(v->is_special);
    free(v->pool);
    free(v);
}
