/* The pre-tokenizer: the split regex from tokenizer.json run through PCRE2
 * (UTF + UCP, JIT when available), each match and each gap between matches a
 * pre-token ("Isolated").
 *
 * Hugging Face runs the regex with Oniguruma, and the two disagree on a few
 * character classes, so the pattern is rewritten before compiling:
 *  - Oniguruma's \s is Unicode White_Space; PCRE2's also takes U+180E
 *    (Mongolian vowel separator, a format character since Unicode 6.3).
 *  - Oniguruma's Unicode tables are version 16, PCRE2 10.42's version 14:
 *    letters and digits added since (CJK extension H, Kaktovik numerals,
 *    ...) are added to \p{L} and \p{N} by hand.
 * The lists come from pre-tokenizing every code point in several contexts
 * with tokenizers 0.23 and with this code and keeping what differed.
 * Inside a character class only the positive forms can be widened; \S,
 * \P{L}, \P{N} there are left alone (no such class in Qwen's pattern). */
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"

#define WS_SET "\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}"
#define L_EXTRA                                                                                    \
    "\\x{1C89}-\\x{1C8A}\\x{A7CB}-\\x{A7CD}\\x{A7DA}-\\x{A7DC}"                                    \
    "\\x{105C0}-\\x{105F3}\\x{10D4A}-\\x{10D65}\\x{10D6F}-\\x{10D85}"                              \
    "\\x{10EC2}-\\x{10EC4}\\x{1123F}-\\x{11240}\\x{11380}-\\x{11389}"                              \
    "\\x{1138B}\\x{1138E}\\x{11390}-\\x{113B5}\\x{113B7}\\x{113D1}"                                \
    "\\x{113D3}\\x{11BC0}-\\x{11BE0}\\x{11F02}\\x{11F04}-\\x{11F10}"                               \
    "\\x{11F12}-\\x{11F33}\\x{1342F}\\x{13441}-\\x{13446}"                                         \
    "\\x{13460}-\\x{143FA}\\x{16100}-\\x{1611D}\\x{16D40}-\\x{16D6C}"                              \
    "\\x{18CFF}\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}"                                          \
    "\\x{1E030}-\\x{1E06D}\\x{1E4D0}-\\x{1E4EB}\\x{1E5D0}-\\x{1E5ED}"                              \
    "\\x{1E5F0}\\x{2B739}\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{323AF}"
#define N_EXTRA                                                                                    \
    "\\x{10D40}-\\x{10D49}\\x{116D0}-\\x{116E3}\\x{11BF0}-\\x{11BF9}"                              \
    "\\x{11F50}-\\x{11F59}\\x{16130}-\\x{16139}\\x{16D70}-\\x{16D79}"                              \
    "\\x{1CCF0}-\\x{1CCF9}\\x{1D2C0}-\\x{1D2D3}\\x{1E4F0}-\\x{1E4F9}"                              \
    "\\x{1E5F1}-\\x{1E5FA}"

static const struct {
    const char *esc;
    const char *outside; /* replacement outside a class */
    const char *inside;  /* spliced into a class, or NULL: keep as is */
} widen[] = {
    {"\\s", "[" WS_SET "]", WS_SET},
    {"\\S", "[^" WS_SET "]", NULL},
    {"\\p{L}", "[\\p{L}" L_EXTRA "]", "\\p{L}" L_EXTRA},
    {"\\P{L}", "[^\\p{L}" L_EXTRA "]", NULL},
    {"\\p{N}", "[\\p{N}" N_EXTRA "]", "\\p{N}" N_EXTRA},
    {"\\P{N}", "[^\\p{N}" N_EXTRA "]", NULL},
};

/* Length of the escape at p[0] = '\\' (\Q..\E, \x{..}, \p{..} whole). */
static size_t escape_len(const char *p, size_t len)
{
    if (len < 2)
        return len;
    if (p[1] == 'Q') {
        for (size_t j = 2; j + 1 < len; j++)
            if (p[j] == '\\' && p[j + 1] == 'E')
                return j + 2;
        return len;
    }
    if ((p[1] == 'p' || p[1] == 'P' || p[1] == 'x' || p[1] == 'o' || p[1] == 'g' ||
         p[1] == 'k' || p[1] == 'N') &&
        len > 2 && p[2] == '{') {
        const char *end = memchr(p + 3, '}', len - 3);
        return end ? (size_t)(end - p) + 1 : len;
    }
    return 2;
}

/* Rewrites pattern into *out (NUL-terminated). */
static int rewrite(const char *p, size_t len, sx_bytes *out)
{
    int in_class = 0;
    size_t i = 0;
    while (i < len) {
        size_t n = 1;
        const char *rep = NULL;
        if (p[i] == '\\') {
            n = escape_len(p + i, len - i);
            for (size_t k = 0; k < sizeof widen / sizeof widen[0]; k++)
                if (strlen(widen[k].esc) == n && !memcmp(widen[k].esc, p + i, n))
                    rep = in_class ? widen[k].inside : widen[k].outside;
        } else if (p[i] == '[' && !in_class) {
            in_class = 1;
            if (i + n < len && p[i + n] == '^')
                n++;
            if (i + n < len && p[i + n] == ']') /* a leading ] is literal */
                n++;
        } else if (p[i] == '[' && i + 1 < len && p[i + 1] == ':') { /* [:alpha:] */
            for (size_t j = i + 2; j + 1 < len; j++)
                if (p[j] == ':' && p[j + 1] == ']') {
                    n = j + 2 - i;
                    break;
                }
        } else if (p[i] == ']' && in_class) {
            in_class = 0;
        }
        if (rep ? sx_bytes_append(out, rep, strlen(rep)) : sx_bytes_append(out, p + i, n))
            return SX_ENOMEM;
        i += n;
    }
    return sx_bytes_append(out, "", 0);
}

int sx_pretok_compile(sx_pretok *p, const char *pattern, size_t len, sx_error *err)
{
    sx_bytes pat = {0};
    int ec;
    PCRE2_SIZE eo;
    if (rewrite(pattern, len, &pat))
        return sx_err_set(err, SX_ENOMEM, "out of memory compiling the split regex");
    p->re = pcre2_compile((PCRE2_SPTR)pat.v, pat.n, PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C,
                          &ec, &eo, NULL);
    sx_bytes_free(&pat);
    if (!p->re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return sx_err_setp(err, SX_EFORMAT, NULL, (long)eo, "split regex does not compile: %s",
                           (const char *)msg);
    }
    p->jit = pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE) == 0;
    p->fast = len == strlen(sx_pretok_qwen_pattern) && !memcmp(pattern, sx_pretok_qwen_pattern, len);
    return SX_OK;
}

void sx_pretok_fini(sx_pretok *p)
{
    pcre2_code_free(p->re);
    p->re = NULL;
}

int sx_pretok_run(const sx_pretok *p, pcre2_match_data *md, const char *s, size_t len,
                  sx_pretok_fn fn, void *ctx)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t pos = 0, at = 0;
    int rc;
    while (at < len) {
        size_t e = p->fast ? sx_pretok_fast(s, len, at) : 0;
        if (e > at) {
            if ((rc = fn(ctx, s + at, e - at)))
                return rc;
            pos = at = e;
            continue;
        }
        int m = p->jit ? pcre2_jit_match(p->re, (PCRE2_SPTR)s, len, at, 0, md, NULL)
                       : pcre2_match(p->re, (PCRE2_SPTR)s, len, at, PCRE2_NO_UTF_CHECK, md, NULL);
        if (m == PCRE2_ERROR_NOMATCH)
            break;
        if (m < 0)
            return SX_ELIMIT;
        size_t ms = ov[0], me = ov[1];
        if (ms < pos || me < ms || me > len)
            return SX_EUNSUPPORTED; /* \K games: not a plain split */
        if (me == ms) { /* an empty match cuts nothing; step over one character */
            at = ms + 1;
            while (at < len && ((unsigned char)s[at] & 0xC0) == 0x80)
                at++;
            continue;
        }
        if (ms > pos && (rc = fn(ctx, s + pos, ms - pos)))
            return rc;
        if ((rc = fn(ctx, s + ms, me - ms)))
            return rc;
        pos = at = me;
    }
    if (pos < len && (rc = fn(ctx, s + pos, len - pos)))
        return rc;
    return SX_OK;
}
