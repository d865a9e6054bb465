/* Queries on a string automaton of the compiled grammar: whether a
 * continuation's length can still fit the bounds, and the shortest
 * completion from a state.  The compiler's analysis and witnesses and the
 * matcher's completion share them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/ir/ir.h"

/* Exists a continuation of k code points from state st with
 * count + k within [min_len, max_len]? */
int gr_strx_len_ok(const gr_strx *x, int32_t st, int64_t count, int64_t min_len, int64_t max_len)
{
    if (max_len >= 0 && count > max_len)
        return 0;
    int64_t lo = min_len - count;
    if (max_len < 0) {
        /* only a minimum: some completion at least lo long */
        if (lo <= 0 || x->unbounded[st])
            return 1;
        return x->max_cps && x->max_cps[st] >= lo;
    }
    if (!x->lenbits)
        return 1;
    int64_t hi = max_len - count;
    if (lo < 0)
        lo = 0;
    if (hi > x->len_k)
        hi = x->len_k;
    const uint64_t *b = x->lenbits + (size_t)st * x->len_words;
    for (int64_t k = lo; k <= hi; k++)
        if (b[k >> 6] >> (k & 63) & 1)
            return 1;
    return 0;
}

/* The JSON spelling of one content byte (at most 6 bytes: a control
 * character without a short escape takes \u00xx). */
static int escape_byte(uint8_t b, uint8_t *out)
{
    if (b >= 0x80) {
        out[0] = b;
        return 1;
    }
    return gr_canon_char(b, out);
}

/* The rest of a code point's UTF-8 after its lead byte, stepped from st:
 * acc holds its bits so far, rem continuation bytes are left.  The least
 * code point within [clo, chi] whose bytes x takes into a state where one
 * more code point keeps the length bounds, or -1.  A state that failed
 * for a whole block of continuations is not tried again for another, so
 * the work is at most 64 bytes per state per level. */
static int64_t cp_tail(const gr_strx *x, int32_t st, uint32_t acc, int rem, uint32_t clo,
                       uint32_t chi, int64_t count, int64_t mn, int64_t mx)
{
    if (rem == 0)
        return gr_strx_len_ok(x, st, count + 1, mn, mx) ? (int64_t)acc : -1;
    int32_t failed[64];
    int n_failed = 0;
    for (uint32_t b = 0x80; b <= 0xBF; b++) {
        uint32_t a2 = acc << 6 | (b & 0x3F);
        uint32_t lo = a2 << (6 * (rem - 1)), hi = lo + ((1u << (6 * (rem - 1))) - 1);
        if (hi < clo)
            continue;
        if (lo > chi)
            break;
        int32_t ns = gr_strx_step(x, st, (uint8_t)b);
        if (ns < 0)
            continue;
        int full = lo >= clo && hi <= chi, skip = 0;
        for (int i = 0; full && i < n_failed && !skip; i++)
            skip = failed[i] == ns;
        if (skip)
            continue;
        int64_t r = cp_tail(x, ns, a2, rem - 1, clo, chi, count, mn, mx);
        if (r >= 0)
            return r;
        if (full && n_failed < 64)
            failed[n_failed++] = ns;
    }
    return -1;
}

int64_t gr_strx_cp_find(const gr_strx *x, int32_t st, uint32_t clo, uint32_t chi, int64_t count,
                        int64_t min_len, int64_t max_len)
{
    static const uint32_t seg[5][3] = {{1, 0, 0x7F},          {2, 0x80, 0x7FF},
                                       {3, 0x800, 0xD7FF},    {3, 0xE000, 0xFFFF},
                                       {4, 0x10000, 0x10FFFF}};
    static const uint8_t lead[5] = {0, 0xC0, 0xE0, 0xE0, 0xF0};
    if (st < 0)
        return -1;
    for (int k = 0; k < 5; k++) {
        uint32_t a = clo > seg[k][1] ? clo : seg[k][1], b = chi < seg[k][2] ? chi : seg[k][2];
        if (a > b)
            continue;
        int L = (int)seg[k][0], shift = 6 * (L - 1);
        int32_t failed[64];
        int n_failed = 0;
        for (uint32_t v = a >> shift; v <= b >> shift; v++) {
            int32_t ns = gr_strx_step(x, st, (uint8_t)(lead[k] | v));
            if (ns < 0)
                continue;
            uint32_t lo = v << shift, hi = lo + ((1u << shift) - 1);
            int full = lo >= a && hi <= b, skip = 0;
            for (int i = 0; full && i < n_failed && !skip; i++)
                skip = failed[i] == ns;
            if (skip)
                continue;
            int64_t r = cp_tail(x, ns, v, L - 1, a, b, count, min_len, max_len);
            if (r >= 0)
                return r;
            if (full && n_failed < 64)
                failed[n_failed++] = ns;
        }
    }
    return -1;
}

int gr_u_ranges(const gr_frame *f, uint32_t r[3][2])
{
    uint64_t ulo = 0, uhi = 0xFFFF;
    int n = 0;
    if (f->phase == S_U) {
        int sh = 4 * (4 - f->aux);
        ulo = (uint64_t)f->val << sh;
        uhi = ulo + ((uint64_t)1 << sh) - 1;
    } else if (f->phase == S_LBS || f->phase == S_LU) {
        ulo = uhi = (uint64_t)f->val;
    } else if (f->phase == S_LOW) {
        uint64_t hs = (uint64_t)f->val >> 16, lp = (uint64_t)f->val & 0xFFFF;
        int sh = 4 * (4 - f->aux);
        uint64_t llo = lp << sh, lhi = llo + ((uint64_t)1 << sh) - 1;
        if (llo < 0xDC00)
            llo = 0xDC00;
        if (lhi > 0xDFFF)
            lhi = 0xDFFF;
        if (llo > lhi || hs < 0xD800 || hs > 0xDBFF)
            return 0;
        uint32_t base = 0x10000 + (uint32_t)((hs - 0xD800) << 10);
        r[0][0] = base + (uint32_t)(llo - 0xDC00);
        r[0][1] = base + (uint32_t)(lhi - 0xDC00);
        return 1;
    }
    if (ulo <= 0xD7FF) {
        r[n][0] = (uint32_t)ulo;
        r[n++][1] = (uint32_t)(uhi < 0xD7FF ? uhi : 0xD7FF);
    }
    if (uhi >= 0xE000) {
        r[n][0] = (uint32_t)(ulo > 0xE000 ? ulo : 0xE000);
        r[n++][1] = (uint32_t)uhi;
    }
    uint64_t hlo = ulo > 0xD800 ? ulo : 0xD800, hhi = uhi < 0xDBFF ? uhi : 0xDBFF;
    if (hlo <= hhi) {
        r[n][0] = 0x10000 + (uint32_t)((hlo - 0xD800) << 10);
        r[n++][1] = 0x10000 + (uint32_t)((hhi - 0xD800) << 10) + 0x3FF;
    }
    return n;
}

int gr_u_rest(const gr_frame *f, uint32_t cp, char out[16])
{
    uint32_t u1 = cp, u2 = 0;
    char t[16];
    if (cp >= 0x10000) {
        u1 = 0xD800 + ((cp - 0x10000) >> 10);
        u2 = 0xDC00 + ((cp - 0x10000) & 0x3FF);
    }
    if (f->phase == S_ESC || f->phase == S_U) {
        snprintf(t, sizeof t, "u%04x", (unsigned)u1);
        int n = snprintf(out, 16, "%s", t + (f->phase == S_U ? 1 + f->aux : 0));
        if (u2)
            n += snprintf(out + n, (size_t)(16 - n), "\\u%04x", (unsigned)u2);
        return n;
    }
    snprintf(t, sizeof t, "\\u%04x", (unsigned)u2);
    return snprintf(out, 16, "%s", t + (f->phase == S_LBS ? 0 : f->phase == S_LU ? 1 : 2 + f->aux));
}

int64_t gr_strx_u_find(const gr_strx *x, const gr_frame *f, int canon, int64_t min_len,
                       int64_t max_len)
{
    int32_t st = (int32_t)f->pos;
    int64_t count = f->count, r = -1;
    uint64_t ulo = 0, uhi = 0xFFFF;
    if (f->phase == S_U) {
        int sh = 4 * (4 - f->aux);
        ulo = (uint64_t)f->val << sh;
        uhi = ulo + ((uint64_t)1 << sh) - 1;
    }
    if (canon) {
        /* canonical \u: a control character with no short escape */
        if (f->phase != S_ESC && f->phase != S_U)
            return -1;
        for (int i = 0; i < 3 && r < 0; i++) {
            uint64_t a = ulo > gr_canon_ctl_iv[i][0] ? ulo : gr_canon_ctl_iv[i][0];
            uint64_t b = uhi < gr_canon_ctl_iv[i][1] ? uhi : gr_canon_ctl_iv[i][1];
            if (a <= b)
                r = gr_strx_cp_find(x, st, (uint32_t)a, (uint32_t)b, count, min_len, max_len);
        }
        return r;
    }
    if (f->phase == S_LBS || f->phase == S_LU) {
        ulo = uhi = (uint64_t)f->val;
    } else if (f->phase == S_LOW) {
        uint64_t hs = (uint64_t)f->val >> 16, lp = (uint64_t)f->val & 0xFFFF;
        int sh = 4 * (4 - f->aux);
        uint64_t llo = lp << sh, lhi = llo + ((uint64_t)1 << sh) - 1;
        if (llo < 0xDC00)
            llo = 0xDC00;
        if (lhi > 0xDFFF)
            lhi = 0xDFFF;
        if (llo > lhi || hs < 0xD800 || hs > 0xDBFF)
            return -1;
        uint32_t base = 0x10000 + (uint32_t)((hs - 0xD800) << 10);
        return gr_strx_cp_find(x, st, base + (uint32_t)(llo - 0xDC00),
                               base + (uint32_t)(lhi - 0xDC00), count, min_len, max_len);
    }
    /* the BMP outside the surrogates, then the pairs whose high half fits */
    if (ulo <= 0xD7FF)
        r = gr_strx_cp_find(x, st, (uint32_t)ulo, (uint32_t)(uhi < 0xD7FF ? uhi : 0xD7FF), count,
                            min_len, max_len);
    if (r < 0 && uhi >= 0xE000)
        r = gr_strx_cp_find(x, st, (uint32_t)(ulo > 0xE000 ? ulo : 0xE000), (uint32_t)uhi, count,
                            min_len, max_len);
    uint64_t hlo = ulo > 0xD800 ? ulo : 0xD800, hhi = uhi < 0xDBFF ? uhi : 0xDBFF;
    if (r < 0 && hlo <= hhi)
        r = gr_strx_cp_find(x, st, 0x10000 + (uint32_t)((hlo - 0xD800) << 10),
                            0x10000 + (uint32_t)((hhi - 0xD800) << 10) + 0x3FF, count, min_len,
                            max_len);
    return r;
}

static int64_t cps_of_n(const uint8_t *s, size_t n)
{
    int64_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (s[i] & 0xC0) != 0x80;
    return k;
}

static int64_t cps_of(const char *s)
{
    return cps_of_n((const uint8_t *)s, strlen(s));
}

long gr_strx_complete(const gr_strx *x, int32_t st, int64_t count, int64_t min_len,
                      int64_t max_len, int raw, uint8_t *buf, size_t cap)
{
    int64_t C = max_len >= 0 ? max_len : (min_len > count ? min_len : count);
    if (st < 0 || count > C || x->n_states <= 0)
        return -1;
    size_t width = (size_t)(C + 1), nn = (size_t)x->n_states * width;
    if (nn > (4u << 20))
        return -1;
    int32_t *par = malloc(nn * sizeof *par), *queue = malloc(nn * sizeof *queue);
    uint8_t *via = malloc(nn), rep[256];
    long result = -1;
    int ncls = 0;
    if (!par || !queue || !via)
        goto out;
    /* one writable byte per class */
    int16_t cls_byte[256];
    for (int i = 0; i < 256; i++)
        cls_byte[i] = -1;
    for (int b = raw ? 0 : 0x20; b < 0x100 + (raw ? 0 : 0x20); b++) {
        int bb = b & 0xff;
        uint8_t tmp[6];
        if (!raw && !escape_byte((uint8_t)bb, tmp))
            continue;
        int cl = x->byte_class[bb];
        if (cls_byte[cl] < 0) {
            cls_byte[cl] = (int16_t)bb;
            rep[ncls++] = (uint8_t)bb;
        }
    }
    for (size_t i = 0; i < nn; i++)
        par[i] = -2;
    size_t head = 0, tail = 0, start = (size_t)st * width + (size_t)count;
    par[start] = -1;
    queue[tail++] = (int32_t)start;
    long goal = -1;
    while (head < tail) {
        size_t cur = (size_t)queue[head++];
        int32_t s = (int32_t)(cur / width);
        int64_t k = (int64_t)(cur % width);
        if (x->accept[s] && k >= min_len) {
            goal = (long)cur;
            break;
        }
        for (int r = 0; r < ncls; r++) {
            uint8_t b = rep[r];
            int32_t ns = gr_strx_step(x, s, b);
            if (ns < 0)
                continue;
            int64_t nk = k + ((b & 0xC0) != 0x80);
            if (nk > C) {
                if (max_len >= 0)
                    continue;
                nk = C;
            }
            size_t id = (size_t)ns * width + (size_t)nk;
            if (par[id] != -2)
                continue;
            par[id] = (int32_t)cur;
            via[id] = b;
            queue[tail++] = (int32_t)id;
        }
    }
    if (goal < 0)
        goto out;
    /* walk back, then write forwards with escapes */
    size_t len = 0, n = 0;
    for (long at = goal; par[at] >= 0; at = par[at])
        n++;
    int raw_text = raw;
    uint8_t *bytes = malloc(n ? n : 1);
    if (!bytes)
        goto out;
    size_t i = n;
    for (long at = goal; par[at] >= 0; at = par[at])
        bytes[--i] = via[at];
    /* from the start, a format's plausible value of the same length (its
     * code points, hence the length bounds, are those of the shortest) */
    if (x->example && st == x->start && count == 0 && strlen(x->example) == n &&
        cps_of(x->example) == cps_of_n(bytes, n))
        memcpy(bytes, x->example, n);
    for (i = 0; i < n; i++) {
        uint8_t e[6];
        int el = raw_text ? (e[0] = bytes[i], 1) : escape_byte(bytes[i], e);
        if (len + (size_t)el > cap) {
            free(bytes);
            goto out;
        }
        memcpy(buf + len, e, (size_t)el);
        len += (size_t)el;
    }
    free(bytes);
    result = (long)len;
out:
    free(par);
    free(queue);
    free(via);
    return result;
}
