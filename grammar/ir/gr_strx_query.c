/* Queries on a string automaton of the compiled grammar: whether a
 * continuation's length can still fit the bounds, and the shortest
 * completion from a state.  The compiler's analysis and witnesses and the
 * matcher's completion share them. */
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

static int escape_byte(uint8_t b, uint8_t *out)
{
    static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
    for (int i = 0; i < 7; i++)
        if (b == (uint8_t)from[i]) {
            out[0] = '\\';
            out[1] = (uint8_t)to[i];
            return 2;
        }
    if (b < 0x20)
        return 0; /* would need \u, which patterned strings refuse */
    out[0] = b;
    return 1;
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
        uint8_t tmp[2];
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
        uint8_t e[2];
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
