/* A hand-written matcher for the split regex of Qwen2/Qwen3 (and the same
 * pattern in other files), for ASCII text:
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * It tries the alternatives in order as the regex engine would, and gives up
 * (returns 0, and PCRE2 takes that one match) as soon as it would need to
 * classify a byte >= 0x80, so on mixed text it still handles the ASCII
 * stretches.  The test suite checks it against PCRE2 exhaustively on short
 * strings and on every fixture. */
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"

const char sx_pretok_qwen_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

enum { L = 1, N = 2, S = 4, NL = 8, O = 16, HI = 32 };

/* classes of bytes: letter, digit, white space (\r \n also NL), other */
static unsigned cls(unsigned char c)
{
    if (c >= 0x80)
        return HI;
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
        return L;
    if (c >= '0' && c <= '9')
        return N;
    if (c == '\r' || c == '\n')
        return S | NL;
    if (c == ' ' || c == '\t' || c == '\v' || c == '\f')
        return S;
    return O;
}

/* End of the run of bytes of class `want` from i, or 0 if a byte >= 0x80
 * would decide where it ends. */
static size_t run(const unsigned char *s, size_t len, size_t i, unsigned want)
{
    while (i < len) {
        unsigned c = cls(s[i]);
        if (c & HI)
            return 0;
        if (!(c & want))
            break;
        i++;
    }
    return i;
}

size_t sx_pretok_fast(const char *str, size_t len, size_t i)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = cls(s[i]), next = i + 1 < len ? cls(s[i + 1]) : 0;
    if (c & HI)
        return 0;
    /* (?i:'s|'t|'re|'ve|'m|'ll|'d): case folding reaches beyond ASCII
     * (U+017F folds to s), so any non-ASCII byte in reach defers */
    if (s[i] == '\'' && i + 1 < len) {
        if (next & HI)
            return 0;
        unsigned a = s[i + 1] | 0x20;
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return i + 2;
        if ((a == 'r' || a == 'v' || a == 'l') && i + 2 < len) {
            if (s[i + 2] >= 0x80)
                return 0;
            unsigned b = s[i + 2] | 0x20;
            if (((a == 'r' || a == 'v') && b == 'e') || (a == 'l' && b == 'l'))
                return i + 3;
        }
    }
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (c & L)
        return run(s, len, i + 1, L);
    if (!(c & (NL | N)) && i + 1 < len) {
        if (next & HI)
            return 0;
        if (next & L)
            return run(s, len, i + 2, L);
    }
    /* \p{N} */
    if (c & N)
        return i + 1;
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    size_t j = i;
    if (s[i] == ' ' && i + 1 < len && (next & (O | HI)))
        j = i + 1;
    if (cls(s[j]) & (O | HI)) {
        size_t e = run(s, len, j, O);
        if (!e)
            return 0;
        while (e < len && (s[e] == '\r' || s[e] == '\n'))
            e++;
        return e;
    }
    /* white space from here on: \s*[\r\n]+ | \s+(?!\S) | \s+ */
    size_t k = run(s, len, i, S);
    if (!k)
        return 0; /* U+0085, U+3000, ... could continue the run */
    for (size_t p = k; p > i; p--)
        if (s[p - 1] == '\r' || s[p - 1] == '\n')
            return p;
    if (k == len)
        return k;
    if (k - 1 > i)
        return k - 1;
    return k;
}
