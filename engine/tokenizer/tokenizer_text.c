/* Text checks before tokenizing: UTF-8 validation (with the offset of the
 * first bad byte), lossy repair to U+FFFD, and NFC through utf8proc with a
 * quick check that skips it for text NFC cannot change. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "engine/tokenizer/tokenizer_internal.h"

int sx_utf8_repair(const char *str, size_t len, sx_bytes *out)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, run = 0;
    while (i < len) {
        size_t seq, bad = sx_utf8_bad_len(s + i, len - i, &seq);
        if (!bad) {
            i += seq;
            continue;
        }
        if (sx_bytes_append(out, s + run, i - run) || sx_bytes_append(out, "\xEF\xBF\xBD", 3))
            return SX_ENOMEM;
        i += bad;
        run = i;
    }
    return sx_bytes_append(out, s + run, len - run);
}

static void set_bit(uint8_t *t, unsigned cp)
{
    t[cp >> 3] |= (uint8_t)(1u << (cp & 7));
}

/* A starter (ccc 0) that no canonical composition takes as its second
 * character and that NFC maps to itself cannot change under NFC whatever
 * surrounds it.  Composition seconds are all marks or Hangul jamo. */
static int plausibly_inert(const utf8proc_property_t *p, unsigned cp)
{
    if (p->combining_class != 0)
        return 0;
    if (p->category == UTF8PROC_CATEGORY_MN || p->category == UTF8PROC_CATEGORY_MC ||
        p->category == UTF8PROC_CATEGORY_ME)
        return 0;
    if ((cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0xA960 && cp <= 0xA97F) ||
        (cp >= 0xD7B0 && cp <= 0xD7FF))
        return 0;
    return 1;
}

static int canonical_decomp(const utf8proc_property_t *p)
{
    return p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0;
}

void sx_nfc_init(sx_nfc *t)
{
    memset(t->inert, 0, sizeof t->inert);
    for (unsigned cp = 0; cp < 0x10000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        const utf8proc_property_t *p = utf8proc_get_property((utf8proc_int32_t)cp);
        if (!plausibly_inert(p, cp))
            continue;
        if (canonical_decomp(p) || (cp >= 0xAC00 && cp <= 0xD7A3)) {
            /* decomposes: inert only if it composes straight back */
            utf8proc_uint8_t in[4], *outp = NULL;
            utf8proc_ssize_t n = utf8proc_encode_char((utf8proc_int32_t)cp, in);
            utf8proc_ssize_t m =
                utf8proc_map(in, n, &outp, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            int same = m == n && !memcmp(in, outp, (size_t)n);
            free(outp);
            if (!same)
                continue;
        }
        set_bit(t->inert, cp);
    }
}

int sx_nfc_quick(const sx_nfc *t, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = sx_utf8_decode(s + i, len - i, &cp);
        if (!n)
            return 0; /* not UTF-8 (callers check first): let the full pass judge it */
        i += n;
        if (cp >= 0x10000) {
            const utf8proc_property_t *p = utf8proc_get_property((utf8proc_int32_t)cp);
            if (!plausibly_inert(p, cp) || canonical_decomp(p))
                return 0;
            continue;
        }
        if (!(t->inert[cp >> 3] & (1u << (cp & 7))))
            return 0;
    }
    return 1;
}

/* Combining marks to which Hugging Face's normaliser (the
 * unicode-normalization-alignments crate, Unicode data older than
 * utf8proc's) gives combining class 0: there they act as starters that
 * nothing composes with, so NFC runs separately on each side of them.
 * Found by normalising every code point in several contexts with tokenizers
 * 0.23 and utf8proc 2.8 and keeping the ones that differ. */
static const struct {
    uint32_t lo, hi;
} hf_starters[] = {
    {0x7FD, 0x7FD},     {0x898, 0x89F},     {0x8CA, 0x8D3},     {0x9FE, 0x9FE},
    {0xC3C, 0xC3C},     {0xD3B, 0xD3C},     {0xEBA, 0xEBA},     {0x1715, 0x1715},
    {0x1ABF, 0x1ACE},   {0x1DF6, 0x1DFA},   {0xA82C, 0xA82C},   {0x10D24, 0x10D27},
    {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF}, {0x10F46, 0x10F50}, {0x10F82, 0x10F85},
    {0x11070, 0x11070}, {0x1133B, 0x1133B}, {0x1145E, 0x1145E}, {0x11839, 0x1183A},
    {0x1193D, 0x1193E}, {0x11943, 0x11943}, {0x119E0, 0x119E0}, {0x11A34, 0x11A34},
    {0x11A47, 0x11A47}, {0x11A99, 0x11A99}, {0x11D42, 0x11D42}, {0x11D44, 0x11D45},
    {0x11D97, 0x11D97}, {0x11F41, 0x11F42}, {0x16FF0, 0x16FF1}, {0x1E08F, 0x1E08F},
    {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF},
};

static int hf_starter(uint32_t cp)
{
    size_t lo = 0, hi = sizeof hf_starters / sizeof hf_starters[0];
    if (cp < 0x7FD)
        return 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < hf_starters[mid].lo)
            hi = mid;
        else if (cp > hf_starters[mid].hi)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

static int nfc_piece(const char *s, size_t len, sx_bytes *out)
{
    utf8proc_uint8_t *dst = NULL;
    if (len == 0)
        return SX_OK;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &dst,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    int rc = n < 0 ? (n == UTF8PROC_ERROR_NOMEM ? SX_ENOMEM : SX_EUTF8)
                   : sx_bytes_append(out, dst, (size_t)n);
    free(dst);
    return rc;
}

int sx_nfc_apply(const char *s, size_t len, char **out, size_t *out_len)
{
    sx_bytes b = {0};
    size_t i = 0, piece = 0;
    int rc = SX_OK;
    while (i < len) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)(len - i), &cp);
        if (n <= 0) {
            rc = SX_EUTF8;
            goto fail;
        }
        if (hf_starter((uint32_t)cp)) {
            if ((rc = nfc_piece(s + piece, i - piece, &b)) ||
                (rc = sx_bytes_append(&b, s + i, (size_t)n)))
                goto fail;
            piece = i + (size_t)n;
        }
        i += (size_t)n;
    }
    if ((rc = nfc_piece(s + piece, len - piece, &b)) || (rc = sx_bytes_append(&b, "", 0)))
        goto fail;
    *out = b.v;
    *out_len = b.n;
    return SX_OK;
fail:
    sx_bytes_free(&b);
    return rc;
}
