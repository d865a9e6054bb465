/* Code-point DFA -> byte DFA.
 *
 * Each code-point state keeps its id and gets a 256-entry byte row; the
 * bytes after a lead byte go through intermediate states, one per distinct
 * "remaining continuation bytes -> target" function.  Intermediate rows are
 * hash-consed bottom-up, so two intermediate states with the same language
 * are the same state; with a minimal code-point DFA the byte DFA is then
 * minimal too (a code-point state never equals an intermediate one: their
 * strings start with different kinds of bytes).
 *
 * Overlong encodings, surrogates and values past U+10FFFF get no
 * transitions, so the DFA only accepts valid UTF-8. */
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex_internal.h"

typedef struct piece {
    uint32_t lo, hi;
    int32_t  target;
} piece;

typedef struct expander {
    const sx_rx_sdfa  *cp;
    const sx_rx_alpha *al;
    sx_error          *err;
    uint64_t          *work;
    uint64_t           max_work;
    int32_t            max_states;
    int                failed;

    piece  *pieces;
    int32_t n_pieces, cur;

    int32_t *rows; /* intermediate rows, 64 entries each */
    int32_t  n_rows, cap_rows;
    int32_t *table; /* hash over intermediate row indices */
    uint32_t table_cap;
    int32_t *chain_memo; /* [k - 1][target]: chain(target, k), -3 = not yet */
} expander;

static uint32_t row_hash(const int32_t *r)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 64; i++)
        h = (h ^ (uint32_t)r[i]) * 16777619u;
    return h ^ (h >> 13);
}

static int grow_table(expander *x)
{
    uint32_t nc = x->table_cap ? x->table_cap * 2 : 256;
    int32_t *t = malloc(nc * sizeof *t);
    if (!t)
        return SX_ENOMEM;
    for (uint32_t i = 0; i < nc; i++)
        t[i] = -1;
    for (int32_t i = 0; i < x->n_rows; i++) {
        uint32_t j = row_hash(x->rows + 64 * (size_t)i) & (nc - 1);
        while (t[j] >= 0)
            j = (j + 1) & (nc - 1);
        t[j] = i;
    }
    free(x->table);
    x->table = t;
    x->table_cap = nc;
    return SX_OK;
}

static int32_t fail(expander *x, int code)
{
    if (!x->failed) {
        x->failed = code;
        if (code == SX_ENOMEM)
            sx_err_set(x->err, code, "out of memory expanding the DFA to UTF-8");
    }
    return -2;
}

/* The state id of an intermediate row (created if new). */
static int32_t intern_row(expander *x, const int32_t *r)
{
    if (2 * ((uint32_t)x->n_rows + 1) > x->table_cap && grow_table(x))
        return fail(x, SX_ENOMEM);
    uint32_t mask = x->table_cap - 1, j = row_hash(r) & mask;
    *x->work += 64;
    for (; x->table[j] >= 0; j = (j + 1) & mask)
        if (memcmp(x->rows + 64 * (size_t)x->table[j], r, 64 * sizeof *r) == 0)
            return x->cp->n + x->table[j];
    if (x->cp->n + x->n_rows >= x->max_states) {
        sx_err_set(x->err, SX_ELIMIT, "regex needs more than %d DFA states (UTF-8 expansion)",
                   x->max_states);
        return fail(x, SX_ELIMIT);
    }
    if (*x->work > x->max_work) {
        sx_err_set(x->err, SX_ELIMIT, "regex work budget exceeded in the UTF-8 expansion");
        return fail(x, SX_ELIMIT);
    }
    if (x->n_rows == x->cap_rows) {
        int32_t nc = x->cap_rows ? x->cap_rows * 2 : 64;
        int32_t *nr = realloc(x->rows, (size_t)nc * 64 * sizeof *nr);
        if (!nr)
            return fail(x, SX_ENOMEM);
        x->rows = nr;
        x->cap_rows = nc;
    }
    memcpy(x->rows + 64 * (size_t)x->n_rows, r, 64 * sizeof *r);
    x->table[j] = x->n_rows;
    return x->cp->n + x->n_rows++;
}

/* k continuation bytes of anything, then target. */
static int32_t chain(expander *x, int32_t target, int k)
{
    if (k == 0 || target < 0)
        return target;
    int32_t *memo = &x->chain_memo[(size_t)(k - 1) * (size_t)x->cp->n + (size_t)target];
    if (*memo != -3)
        return *memo;
    int32_t r[64];
    int32_t sub = chain(x, target, k - 1);
    if (sub < -1)
        return sub;
    for (int i = 0; i < 64; i++)
        r[i] = sub;
    int32_t id = intern_row(x, r);
    if (id >= 0)
        *memo = id;
    return id;
}

static void seek(expander *x, uint32_t cp)
{
    int32_t lo = 0, hi = x->n_pieces - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (x->pieces[mid].lo <= cp)
            lo = mid;
        else
            hi = mid - 1;
    }
    x->cur = lo;
}

/* State for the block of code points [lo, lo + 64^k) still needing k
 * continuation bytes; [vlo, vhi] is the range this encoding length may
 * carry (anything else would be overlong or too large). */
static int32_t block(expander *x, uint32_t lo, int k, uint32_t vlo, uint32_t vhi)
{
    uint32_t hi = lo + (1u << (6 * k)) - 1;
    if (hi < vlo || lo > vhi)
        return -1;
    if (lo >= vlo && hi <= vhi) {
        while (x->pieces[x->cur].hi < lo)
            x->cur++;
        if (x->pieces[x->cur].hi >= hi)
            return chain(x, x->pieces[x->cur].target, k);
    }
    int32_t r[64];
    int any = 0;
    for (uint32_t c = 0; c < 64; c++) {
        r[c] = block(x, lo + (c << (6 * (k - 1))), k - 1, vlo, vhi);
        if (r[c] < -1)
            return r[c];
        any |= r[c] >= 0;
    }
    return any ? intern_row(x, r) : -1;
}

/* pieces of state s: its target for every code point, in order */
static int build_pieces(expander *x, int32_t s, int32_t *tgt)
{
    const sx_rx_alpha *al = x->al;
    const sx_rx_sdfa *cp = x->cp;
    for (int32_t c = 0; c < al->n_classes; c++)
        tgt[c] = -1;
    for (int32_t t = cp->row[s]; t < cp->row[s + 1]; t++)
        tgt[cp->lab[t]] = cp->dst[t];
    x->n_pieces = 0;
    uint32_t next = 0;
    for (int32_t e = 0; e <= al->n_iv; e++) {
        uint32_t lo = e < al->n_iv ? al->iv_lo[e] : SX_RX_MAX_CP + 1;
        int32_t t;
        /* a gap (the surrogates) is dead */
        for (int pass = 0; pass < 2; pass++) {
            uint32_t plo, phi;
            if (pass == 0) {
                if (lo <= next)
                    continue;
                plo = next, phi = lo - 1, t = -1;
            } else {
                if (e == al->n_iv)
                    break;
                plo = lo, phi = al->iv_hi[e], t = tgt[al->iv_class[e]];
            }
            if (x->n_pieces > 0 && x->pieces[x->n_pieces - 1].target == t) {
                x->pieces[x->n_pieces - 1].hi = phi;
            } else {
                x->pieces[x->n_pieces].lo = plo;
                x->pieces[x->n_pieces].hi = phi;
                x->pieces[x->n_pieces].target = t;
                x->n_pieces++;
            }
        }
        if (e < al->n_iv)
            next = al->iv_hi[e] + 1;
    }
    *x->work += (uint64_t)al->n_iv;
    return SX_OK;
}

int sx_rx_utf8_expand(const sx_rx_sdfa *cp, const sx_rx_alpha *al,
                      const sx_re_limits *lim, uint64_t *work, sx_rx_sdfa *out,
                      sx_error *err)
{
    expander x = {.cp = cp, .al = al, .err = err, .work = work, .max_work = lim->max_work,
                  .max_states = (int32_t)lim->max_states};
    int32_t *tgt = NULL, *cp_off = NULL, *cp_lab = NULL, *cp_dst = NULL;
    size_t cp_n = 0, cp_cap = 0;
    int rc = SX_ENOMEM;
    memset(out, 0, sizeof *out);
    out->start = -1;

    x.pieces = malloc(((size_t)al->n_iv * 2 + 2) * sizeof *x.pieces);
    tgt = malloc(((size_t)al->n_classes + 1) * sizeof *tgt);
    cp_off = malloc(((size_t)cp->n + 1) * sizeof *cp_off);
    x.chain_memo = malloc(3 * ((size_t)cp->n + 1) * sizeof *x.chain_memo);
    if (!x.pieces || !tgt || !cp_off || !x.chain_memo)
        goto fail;
    for (size_t i = 0; i < 3 * ((size_t)cp->n + 1); i++)
        x.chain_memo[i] = -3;
    if (cp->n > x.max_states) {
        rc = sx_err_set(err, SX_ELIMIT, "regex needs more than %d DFA states", x.max_states);
        goto fail;
    }

    for (int32_t s = 0; s < cp->n; s++) {
        int32_t row[256];
        build_pieces(&x, s, tgt);
        x.cur = 0;
        for (int b = 0; b < 0x80; b++) {
            while (x.pieces[x.cur].hi < (uint32_t)b)
                x.cur++;
            row[b] = x.pieces[x.cur].target;
        }
        for (int b = 0x80; b < 0x100; b++) {
            if (b == 0xC0)
                seek(&x, 0);
            else if (b == 0xE0)
                seek(&x, 0);
            else if (b == 0xF0)
                seek(&x, 0);
            if (b < 0xC0 || b > 0xF7)
                row[b] = -1;
            else if (b < 0xE0)
                row[b] = block(&x, (uint32_t)(b & 0x1F) << 6, 1, 0x80, 0x7FF);
            else if (b < 0xF0)
                row[b] = block(&x, (uint32_t)(b & 0x0F) << 12, 2, 0x800, 0xFFFF);
            else
                row[b] = block(&x, (uint32_t)(b & 0x07) << 18, 3, 0x10000, SX_RX_MAX_CP);
            if (row[b] < -1) {
                rc = x.failed;
                goto fail;
            }
        }
        cp_off[s] = (int32_t)cp_n;
        for (int b = 0; b < 256; b++) {
            if (row[b] < 0)
                continue;
            if (cp_n == cp_cap) {
                size_t nc = cp_cap ? cp_cap * 2 : 1024;
                int32_t *l = realloc(cp_lab, nc * sizeof *l);
                if (l)
                    cp_lab = l;
                int32_t *d = realloc(cp_dst, nc * sizeof *d);
                if (d)
                    cp_dst = d;
                if (!l || !d)
                    goto fail;
                cp_cap = nc;
            }
            cp_lab[cp_n] = b;
            cp_dst[cp_n] = row[b];
            cp_n++;
        }
    }

    /* assemble the sparse byte DFA */
    int32_t n = cp->n + x.n_rows;
    size_t nt = cp_n;
    for (int32_t i = 0; i < 64 * x.n_rows; i++)
        nt += x.rows[i] >= 0;
    out->n = n;
    out->n_labels = 256;
    out->start = cp->start;
    out->accept = calloc((size_t)n + 1, 1);
    out->row = malloc(((size_t)n + 1) * sizeof *out->row);
    out->lab = malloc((nt + 1) * sizeof *out->lab);
    out->dst = malloc((nt + 1) * sizeof *out->dst);
    if (!out->accept || !out->row || !out->lab || !out->dst)
        goto fail;
    out->n_trans = out->cap_trans = (int32_t)nt;
    memcpy(out->accept, cp->accept, (size_t)cp->n);
    if (cp_n) {
        memcpy(out->lab, cp_lab, cp_n * sizeof *cp_lab);
        memcpy(out->dst, cp_dst, cp_n * sizeof *cp_dst);
    }
    memcpy(out->row, cp_off, (size_t)cp->n * sizeof *cp_off);
    size_t w = cp_n;
    for (int32_t i = 0; i < x.n_rows; i++) {
        out->row[cp->n + i] = (int32_t)w;
        for (int c = 0; c < 64; c++) {
            int32_t t = x.rows[64 * (size_t)i + c];
            if (t >= 0) {
                out->lab[w] = 0x80 + c;
                out->dst[w] = t;
                w++;
            }
        }
    }
    out->row[n] = (int32_t)w;
    rc = SX_OK;
fail:
    if (rc == SX_ENOMEM)
        sx_err_set(err, SX_ENOMEM, "out of memory expanding the DFA to UTF-8");
    if (rc)
        sx_rx_sdfa_free(out);
    free(x.pieces);
    free(x.rows);
    free(x.table);
    free(x.chain_memo);
    free(tgt);
    free(cp_off);
    free(cp_lab);
    free(cp_dst);
    return rc;
}
