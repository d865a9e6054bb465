/* Code-point sets as sorted range lists. */
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex_internal.h"

int sx_rx_cset_add(sx_rx_cset *s, uint32_t lo, uint32_t hi)
{
    if (lo > hi)
        return SX_OK;
    if (s->n == s->cap) {
        int32_t nc = s->cap ? s->cap * 2 : 4;
        uint32_t *nr = realloc(s->r, (size_t)nc * 2 * sizeof *nr);
        if (!nr)
            return SX_ENOMEM;
        s->r = nr;
        s->cap = nc;
    }
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
    return SX_OK;
}

int sx_rx_cset_add_set(sx_rx_cset *s, const sx_rx_cset *o)
{
    for (int32_t i = 0; i < o->n; i++) {
        int rc = sx_rx_cset_add(s, o->r[2 * i], o->r[2 * i + 1]);
        if (rc)
            return rc;
    }
    return SX_OK;
}

static int range_cmp(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

void sx_rx_cset_normalize(sx_rx_cset *s)
{
    if (s->n < 2)
        return;
    qsort(s->r, (size_t)s->n, 2 * sizeof *s->r, range_cmp);
    int32_t w = 0;
    for (int32_t i = 1; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        /* merge overlapping and adjacent ranges */
        if (lo <= s->r[2 * w + 1] || lo == s->r[2 * w + 1] + 1) {
            if (hi > s->r[2 * w + 1])
                s->r[2 * w + 1] = hi;
        } else {
            w++;
            s->r[2 * w] = lo;
            s->r[2 * w + 1] = hi;
        }
    }
    s->n = w + 1;
}

int sx_rx_cset_negate(sx_rx_cset *s)
{
    sx_rx_cset t = {0};
    uint32_t next = 0;
    int rc = SX_OK;
    for (int32_t i = 0; i < s->n && !rc; i++) {
        if (s->r[2 * i] > next)
            rc = sx_rx_cset_add(&t, next, s->r[2 * i] - 1);
        next = s->r[2 * i + 1] + 1;
    }
    if (!rc && next <= SX_RX_MAX_CP)
        rc = sx_rx_cset_add(&t, next, SX_RX_MAX_CP);
    if (rc) {
        sx_rx_cset_free(&t);
        return rc;
    }
    free(s->r);
    *s = t;
    return SX_OK;
}

int sx_rx_cset_remove_surrogates(sx_rx_cset *s)
{
    sx_rx_cset t = {0};
    int rc = SX_OK;
    for (int32_t i = 0; i < s->n && !rc; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        if (hi > SX_RX_MAX_CP)
            hi = SX_RX_MAX_CP;
        if (lo < 0xD800)
            rc = sx_rx_cset_add(&t, lo, hi < 0xD7FF ? hi : 0xD7FF);
        if (!rc && hi > 0xDFFF)
            rc = sx_rx_cset_add(&t, lo > 0xE000 ? lo : 0xE000, hi);
    }
    if (rc) {
        sx_rx_cset_free(&t);
        return rc;
    }
    free(s->r);
    *s = t;
    return SX_OK;
}

int sx_rx_cset_equal(const sx_rx_cset *a, const sx_rx_cset *b)
{
    return a->n == b->n &&
           (a->n == 0 || memcmp(a->r, b->r, (size_t)a->n * 2 * sizeof *a->r) == 0);
}

int sx_rx_cset_has(const sx_rx_cset *s, uint32_t cp)
{
    int32_t lo = 0, hi = s->n - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (cp < s->r[2 * mid])
            hi = mid - 1;
        else if (cp > s->r[2 * mid + 1])
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

void sx_rx_cset_free(sx_rx_cset *s)
{
    free(s->r);
    s->r = NULL;
    s->n = s->cap = 0;
}

static int add_list(sx_rx_cset *s, const uint32_t *r, size_t n)
{
    for (size_t i = 0; i < n; i += 2) {
        int rc = sx_rx_cset_add(s, r[i], r[i + 1]);
        if (rc)
            return rc;
    }
    sx_rx_cset_normalize(s);
    return SX_OK;
}

int sx_rx_cset_digit(sx_rx_cset *s)
{
    static const uint32_t r[] = {'0', '9'};
    return add_list(s, r, 2);
}

int sx_rx_cset_word(sx_rx_cset *s)
{
    static const uint32_t r[] = {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'};
    return add_list(s, r, 8);
}

/* ECMA-262 WhiteSpace (TAB VT FF SP NBSP ZWNBSP and Zs) plus LineTerminator
 * (LF CR LS PS).  Zs is fixed here rather than read from the Unicode tables
 * because ECMA pins it to these code points in practice and the set has not
 * changed since Unicode 4. */
int sx_rx_cset_space(sx_rx_cset *s)
{
    static const uint32_t r[] = {
        0x09,   0x0D,   0x20,   0x20,   0xA0,   0xA0,   0x1680, 0x1680,
        0x2000, 0x200A, 0x2028, 0x2029, 0x202F, 0x202F, 0x205F, 0x205F,
        0x3000, 0x3000, 0xFEFF, 0xFEFF,
    };
    return add_list(s, r, sizeof r / sizeof r[0]);
}

int sx_rx_cset_dot(sx_rx_cset *s)
{
    static const uint32_t r[] = {0, 0x09, 0x0B, 0x0C, 0x0E, 0x2027, 0x202A, 0xD7FF,
                                 0xE000, SX_RX_MAX_CP};
    return add_list(s, r, sizeof r / sizeof r[0]);
}

int sx_rx_cset_any(sx_rx_cset *s)
{
    static const uint32_t r[] = {0, 0xD7FF, 0xE000, SX_RX_MAX_CP};
    return add_list(s, r, 4);
}
