#include "common/sx_utf8.h"

#include <string.h>

size_t sx_utf8_bad_len(const unsigned char *s, size_t len, size_t *seq)
{
    unsigned c = s[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c < 0x80) {
        *seq = 1;
        return 0;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlongs */
        if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        *seq = 1;
        return 1;
    }
    for (size_t i = 1; i < need; i++) {
        if (i >= len) {
            *seq = 0; /* cut short by the end of the input */
            return i;
        }
        unsigned b = s[i];
        if (i == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) {
            *seq = 1;
            return i; /* the maximal subpart ends before this byte */
        }
    }
    *seq = need;
    return 0;
}

size_t sx_utf8_decode(const uint8_t *s, size_t len, uint32_t *cp)
{
    size_t n;
    if (!len || sx_utf8_bad_len(s, len, &n))
        return 0;
    /* the lead's payload bits: 7, 5, 4 or 3 */
    uint32_t c = s[0] & (n == 1 ? 0x7Fu : 0x7Fu >> n);
    for (size_t i = 1; i < n; i++)
        c = (c << 6) | (s[i] & 0x3Fu);
    *cp = c;
    return n;
}

size_t sx_utf8_encode(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return 0;
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF)
        return 0;
    out[0] = (uint8_t)(0xF0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

size_t sx_utf8_check(const char *str, size_t len, int *ascii)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    int all_ascii = 1;
    while (i < len) {
        /* eight ASCII bytes at a time: most text is mostly ASCII */
        if (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        all_ascii = 0;
        size_t seq;
        if (sx_utf8_bad_len(s + i, len - i, &seq))
            break;
        i += seq;
    }
    if (ascii)
        *ascii = all_ascii && i == len;
    return i;
}
