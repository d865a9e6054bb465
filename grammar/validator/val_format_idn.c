/* val_format_idn: hostname (RFC 1123 LDH labels; an "xn--" label must be a
 * canonical Punycode A-label of a valid U-label) and idn-hostname (IDNA
 * 2008: RFC 5890-5893), sharing one U-label check.
 *
 * Unicode data comes from PCRE2's tables (general category, script, bidi
 * class, White_Space, Default_Ignorable_Code_Point), compiled once per
 * process into immutable patterns.  What PCRE2 lacks is approximated, and
 * errs towards accepting:
 *   - RFC 5892 "Unstable" (cp != NFKC_Casefold(cp)) is taken as upper and
 *     title case letters plus the blocks made of compatibility characters;
 *   - Virama (canonical combining class 9) is a fixed list;
 *   - Joining_Type for the ZERO WIDTH NON-JOINER rule treats Arabic-script
 *     letters as dual-joining except a list of right-joining ones.
 * NFC of U-labels is not checked. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

/* ---- Punycode (RFC 3492) ---------------------------------------------------- */

enum { P_BASE = 36, P_TMIN = 1, P_TMAX = 26, P_SKEW = 38, P_DAMP = 700 };

static unsigned long adapt(unsigned long delta, unsigned long npoints,
                           int first)
{
    unsigned long k = 0;
    delta = first ? delta / P_DAMP : delta / 2;
    delta += delta / npoints;
    while (delta > ((P_BASE - P_TMIN) * P_TMAX) / 2) {
        delta /= P_BASE - P_TMIN;
        k += P_BASE;
    }
    return k + (P_BASE - P_TMIN + 1) * delta / (delta + P_SKEW);
}

static unsigned long clampt(unsigned long k, unsigned long bias)
{
    return k <= bias ? P_TMIN : k >= bias + P_TMAX ? P_TMAX : k - bias;
}

int sxv_punycode_decode(const char *s, size_t n, unsigned long *out,
                        size_t cap, size_t *outn)
{
    const unsigned long maxv = 0x7fffffffUL;
    unsigned long code = 128, i = 0, bias = 72;
    size_t b = 0, len = 0, in;
    for (size_t j = 0; j < n; j++)
        if (s[j] == '-')
            b = j;
    for (size_t j = 0; j < b; j++) {
        if ((unsigned char)s[j] >= 0x80 || len >= cap)
            return -1;
        out[len++] = (unsigned char)s[j];
    }
    for (in = b > 0 ? b + 1 : 0; in < n;) {
        unsigned long oldi = i, w = 1;
        for (unsigned long k = P_BASE;; k += P_BASE) {
            if (in >= n)
                return -1;
            char c = s[in++];
            unsigned long d;
            if (c >= 'a' && c <= 'z')
                d = (unsigned long)(c - 'a');
            else if (c >= 'A' && c <= 'Z')
                d = (unsigned long)(c - 'A');
            else if (c >= '0' && c <= '9')
                d = (unsigned long)(c - '0') + 26;
            else
                return -1;
            if (d > (maxv - i) / w)
                return -1;
            i += d * w;
            unsigned long t = clampt(k, bias);
            if (d < t)
                break;
            if (w > maxv / (P_BASE - t))
                return -1;
            w *= P_BASE - t;
        }
        bias = adapt(i - oldi, (unsigned long)len + 1, oldi == 0);
        if (i / (len + 1) > maxv - code)
            return -1;
        code += i / (len + 1);
        i %= len + 1;
        if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) ||
            len >= cap)
            return -1;
        memmove(out + i + 1, out + i, (len - i) * sizeof *out);
        out[i++] = code;
        len++;
    }
    *outn = len;
    return 0;
}

int sxv_punycode_encode(const unsigned long *cp, size_t n, char *out,
                        size_t cap, size_t *outn)
{
    unsigned long code = 128, delta = 0, bias = 72, h, b = 0;
    size_t o = 0;
    for (size_t j = 0; j < n; j++) {
        if (cp[j] < 0x80) {
            if (o >= cap)
                return -1;
            out[o++] = (char)cp[j];
            b++;
        }
    }
    h = b;
    if (b > 0) {
        if (o >= cap)
            return -1;
        out[o++] = '-';
    }
    while (h < n) {
        unsigned long m = 0x7fffffffUL;
        for (size_t j = 0; j < n; j++)
            if (cp[j] >= code && cp[j] < m)
                m = cp[j];
        if ((m - code) > (0x7fffffffUL - delta) / (h + 1))
            return -1;
        delta += (m - code) * (h + 1);
        code = m;
        for (size_t j = 0; j < n; j++) {
            if (cp[j] < code && ++delta == 0)
                return -1;
            if (cp[j] == code) {
                unsigned long q = delta;
                for (unsigned long k = P_BASE;; k += P_BASE) {
                    unsigned long t = clampt(k, bias);
                    if (q < t)
                        break;
                    unsigned long d = t + (q - t) % (P_BASE - t);
                    if (o >= cap)
                        return -1;
                    out[o++] = (char)(d < 26 ? 'a' + d : '0' + d - 26);
                    q = (q - t) / (P_BASE - t);
                }
                if (o >= cap)
                    return -1;
                out[o++] = (char)(q < 26 ? 'a' + q : '0' + q - 26);
                bias = adapt(delta, h + 1, h == b);
                delta = 0;
                h++;
            }
        }
        delta++;
        code++;
    }
    *outn = o;
    return 0;
}

/* ---- Unicode properties through PCRE2 ----------------------------------------- */

enum {
    U_LETTER_DIGIT, /* Ll Lu Lo Nd Lm Mn Mc */
    U_UPPER_TITLE,
    U_IGNORABLE,    /* White_Space, Default_Ignorable_Code_Point */
    U_UNASSIGNED,
    U_MARK,
    U_NONSPACING,   /* Mn Me Cf: transparent for joining */
    U_GREEK,
    U_HEBREW,
    U_HIRAGANA,
    U_KATAKANA,
    U_HAN,
    U_ARABIC_LETTER,
    U_JOINING_SCRIPT, /* letters of other joining scripts */
    U_BC_L, U_BC_R, U_BC_AL, U_BC_AN, U_BC_EN, U_BC_ES, U_BC_CS, U_BC_ET,
    U_BC_ON, U_BC_BN, U_BC_NSM,
    U_COUNT
};

static const char *const u_src[U_COUNT] = {
    [U_LETTER_DIGIT] = "[\\p{Ll}\\p{Lu}\\p{Lo}\\p{Nd}\\p{Lm}\\p{Mn}\\p{Mc}]",
    [U_UPPER_TITLE] = "[\\p{Lu}\\p{Lt}]",
    [U_IGNORABLE] = "[\\p{White_Space}\\p{Default_Ignorable_Code_Point}]",
    [U_UNASSIGNED] = "\\p{Cn}",
    [U_MARK] = "\\p{M}",
    [U_NONSPACING] = "[\\p{Mn}\\p{Me}\\p{Cf}]",
    [U_GREEK] = "\\p{sc=Greek}",
    [U_HEBREW] = "\\p{sc=Hebrew}",
    [U_HIRAGANA] = "\\p{sc=Hiragana}",
    [U_KATAKANA] = "\\p{sc=Katakana}",
    [U_HAN] = "\\p{sc=Han}",
    [U_ARABIC_LETTER] = "(?=\\p{sc=Arabic})\\p{L}",
    [U_JOINING_SCRIPT] =
        "(?=[\\p{sc=Syriac}\\p{sc=Nko}\\p{sc=Mongolian}\\p{sc=Mandaic}"
        "\\p{sc=Manichaean}\\p{sc=Psalter_Pahlavi}\\p{sc=Adlam}"
        "\\p{sc=Hanifi_Rohingya}\\p{sc=Sogdian}\\p{sc=Phags_Pa}])\\p{L}",
    [U_BC_L] = "\\p{bc=L}",
    [U_BC_R] = "\\p{bc=R}",
    [U_BC_AL] = "\\p{bc=AL}",
    [U_BC_AN] = "\\p{bc=AN}",
    [U_BC_EN] = "\\p{bc=EN}",
    [U_BC_ES] = "\\p{bc=ES}",
    [U_BC_CS] = "\\p{bc=CS}",
    [U_BC_ET] = "\\p{bc=ET}",
    [U_BC_ON] = "\\p{bc=ON}",
    [U_BC_BN] = "\\p{bc=BN}",
    [U_BC_NSM] = "\\p{bc=NSM}",
};

static pcre2_code *u_re[U_COUNT];
static pthread_once_t u_once = PTHREAD_ONCE_INIT;

static void u_init(void)
{
    for (int k = 0; k < U_COUNT; k++) {
        int ec;
        PCRE2_SIZE eo;
        u_re[k] = pcre2_compile((PCRE2_SPTR)u_src[k], PCRE2_ZERO_TERMINATED,
                                PCRE2_UTF | PCRE2_ANCHORED, &ec, &eo, NULL);
    }
}

/* 1 if code point cp has property k; unknown (PCRE2 without the table)
 * counts as not having it. */
static int u_has(int k, unsigned long cp, pcre2_match_data *md)
{
    if (!u_re[k] || !md)
        return 0;
    sxv_buf b = {0};
    char tmp[8];
    b.p = tmp;
    b.cap = sizeof tmp;
    sxv_utf8_put(&b, cp);
    return pcre2_match(u_re[k], (PCRE2_SPTR)tmp, b.len, 0, 0, md, NULL) >= 0;
}

/* ---- RFC 5892 ------------------------------------------------------------------ */

enum { PV_DISALLOWED, PV_PVALID, PV_CONTEXTJ, PV_CONTEXTO };

static int in_list(unsigned long cp, const unsigned long *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (l[i] == cp)
            return 1;
    return 0;
}

static const unsigned long viramas[] = {
    0x094D, 0x09CD, 0x0A4D, 0x0ACD, 0x0B4D, 0x0BCD, 0x0C4D, 0x0CCD,
    0x0D3B, 0x0D3C, 0x0D4D, 0x0DCA, 0x0E3A, 0x0EBA, 0x0F84, 0x1039,
    0x103A, 0x1714, 0x1715, 0x1734, 0x17D2, 0x1A60, 0x1B44, 0x1BAA,
    0x1BAB, 0x1BF2, 0x1BF3, 0x2D7F, 0xA806, 0xA82C, 0xA8C4, 0xA953,
    0xA9C0, 0xAAF6, 0xABED, 0x10A3F, 0x11046, 0x11070, 0x1107F, 0x110B9,
    0x11133, 0x11134, 0x111C0, 0x11235, 0x112EA, 0x1134D, 0x11442, 0x114C2,
    0x115BF, 0x1163F, 0x116B6, 0x1172B, 0x11839, 0x1193D, 0x1193E, 0x119E0,
    0x11A34, 0x11A47, 0x11A99, 0x11C3F, 0x11D44, 0x11D45, 0x11D97, 0x11F41,
    0x11F42,
};

/* Arabic letters that join only to the right (Joining_Type R) or not at
 * all (U); the rest of the Arabic letters are dual-joining. */
static int arabic_right_or_none(unsigned long c)
{
    return c == 0x0621 || (c >= 0x0622 && c <= 0x0625) || c == 0x0627 ||
           c == 0x0629 || (c >= 0x062F && c <= 0x0632) || c == 0x0648 ||
           (c >= 0x0671 && c <= 0x0677) || (c >= 0x0688 && c <= 0x0699) ||
           c == 0x06C0 || (c >= 0x06C3 && c <= 0x06CB) || c == 0x06CD ||
           c == 0x06CF || c == 0x06D2 || c == 0x06D3 || c == 0x06D5 ||
           c == 0x06EE || c == 0x06EF || (c >= 0x0759 && c <= 0x075B) ||
           c == 0x076B || c == 0x076C || c == 0x0771 || c == 0x0773 ||
           c == 0x0774 || c == 0x0778 || c == 0x0779;
}

/* Blocks whose characters are (nearly all) compatibility characters, which
 * NFKC maps elsewhere: unstable under RFC 5892's rule B. */
static int compat_block(unsigned long c)
{
    return (c >= 0x2070 && c <= 0x209F) || (c >= 0x2150 && c <= 0x218F) ||
           (c >= 0x2460 && c <= 0x24FF) || (c >= 0x2F00 && c <= 0x2FDF) ||
           (c >= 0x3131 && c <= 0x318E) || (c >= 0x3200 && c <= 0x33FF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFB00 && c <= 0xFB4F) ||
           (c >= 0xFB50 && c <= 0xFDFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
           (c >= 0xFE70 && c <= 0xFEFF) || (c >= 0xFF00 && c <= 0xFFEF) ||
           (c >= 0x1D400 && c <= 0x1D7FF) ||
           (c >= 0x1F100 && c <= 0x1F2FF) || (c >= 0x2F800 && c <= 0x2FA1F) ||
           (c >= 0x02B0 && c <= 0x02B8) || c == 0x00AA || c == 0x00BA ||
           (c >= 0x1D2C && c <= 0x1D6A) || c == 0x017F || c == 0x0149;
}

static int derived(unsigned long c, pcre2_match_data *md)
{
    static const unsigned long pvalid_x[] = {0x00DF, 0x03C2, 0x06FD,
                                             0x06FE, 0x0F0B, 0x3007};
    static const unsigned long disallowed_x[] = {
        0x0640, 0x07FA, 0x302E, 0x302F, 0x3031, 0x3032,
        0x3033, 0x3034, 0x3035, 0x303B};
    if (in_list(c, pvalid_x, sizeof pvalid_x / sizeof *pvalid_x))
        return PV_PVALID;
    if (c == 0x00B7 || c == 0x0375 || c == 0x05F3 || c == 0x05F4 ||
        c == 0x30FB || (c >= 0x0660 && c <= 0x0669) ||
        (c >= 0x06F0 && c <= 0x06F9))
        return PV_CONTEXTO;
    if (in_list(c, disallowed_x, sizeof disallowed_x / sizeof *disallowed_x))
        return PV_DISALLOWED;
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')
        return PV_PVALID;
    if (c == 0x200C || c == 0x200D)
        return PV_CONTEXTJ;
    if ((c >= 0xFDD0 && c <= 0xFDEF) || (c & 0xFFFE) == 0xFFFE)
        return PV_DISALLOWED;
    if (u_has(U_UNASSIGNED, c, md) || u_has(U_UPPER_TITLE, c, md) ||
        compat_block(c) || u_has(U_IGNORABLE, c, md))
        return PV_DISALLOWED;
    if ((c >= 0x20D0 && c <= 0x20FF) || (c >= 0x1D100 && c <= 0x1D24F))
        return PV_DISALLOWED; /* IgnorableBlocks */
    if ((c >= 0x1100 && c <= 0x11FF) || (c >= 0xA960 && c <= 0xA97F) ||
        (c >= 0xD7B0 && c <= 0xD7FF))
        return PV_DISALLOWED; /* OldHangulJamo */
    return u_has(U_LETTER_DIGIT, c, md) ? PV_PVALID : PV_DISALLOWED;
}

/* Joining type for the ZWNJ rule: 'T', 'D', 'R' or 'U'. */
static char joining(unsigned long c, pcre2_match_data *md)
{
    if (c != 0x200C && c != 0x200D && u_has(U_NONSPACING, c, md))
        return 'T';
    if (u_has(U_ARABIC_LETTER, c, md))
        return arabic_right_or_none(c) ? (c == 0x0621 ? 'U' : 'R') : 'D';
    if (u_has(U_JOINING_SCRIPT, c, md))
        return 'D';
    return 'U';
}

static int context_ok(const unsigned long *cp, size_t n, size_t i,
                      pcre2_match_data *md)
{
    unsigned long c = cp[i];
    if (c == 0x200C || c == 0x200D) {
        if (i > 0 && in_list(cp[i - 1], viramas, sizeof viramas / sizeof *viramas))
            return 1;
        if (c == 0x200D)
            return 0;
        size_t j = i;
        char t = 'T';
        while (j > 0 && (t = joining(cp[j - 1], md)) == 'T')
            j--;
        if (j == 0 || !(t == 'L' || t == 'D'))
            return 0;
        j = i + 1;
        t = 'T';
        while (j < n && (t = joining(cp[j], md)) == 'T')
            j++;
        return j < n && (t == 'R' || t == 'D');
    }
    if (c == 0x00B7)
        return i > 0 && i + 1 < n && cp[i - 1] == 'l' && cp[i + 1] == 'l';
    if (c == 0x0375)
        return i + 1 < n && u_has(U_GREEK, cp[i + 1], md);
    if (c == 0x05F3 || c == 0x05F4)
        return i > 0 && u_has(U_HEBREW, cp[i - 1], md);
    if (c == 0x30FB) {
        for (size_t j = 0; j < n; j++)
            if (cp[j] != 0x30FB &&
                (u_has(U_HIRAGANA, cp[j], md) || u_has(U_KATAKANA, cp[j], md) ||
                 u_has(U_HAN, cp[j], md)))
                return 1;
        return 0;
    }
    if (c >= 0x0660 && c <= 0x0669) {
        for (size_t j = 0; j < n; j++)
            if (cp[j] >= 0x06F0 && cp[j] <= 0x06F9)
                return 0;
        return 1;
    }
    if (c >= 0x06F0 && c <= 0x06F9) {
        for (size_t j = 0; j < n; j++)
            if (cp[j] >= 0x0660 && cp[j] <= 0x0669)
                return 0;
        return 1;
    }
    return 0;
}

static int label_with(const unsigned long *cp, size_t n, int *rtl,
                      pcre2_match_data *md)
{
    if (n == 0 || cp[0] == '-' || cp[n - 1] == '-')
        return 0;
    if (n >= 4 && cp[2] == '-' && cp[3] == '-')
        return 0;
    if (u_has(U_MARK, cp[0], md))
        return 0;
    for (size_t i = 0; i < n; i++) {
        int d = derived(cp[i], md);
        if (d == PV_DISALLOWED)
            return 0;
        if ((d == PV_CONTEXTJ || d == PV_CONTEXTO) &&
            !context_ok(cp, n, i, md))
            return 0;
    }
    if (rtl) {
        *rtl = 0;
        for (size_t i = 0; i < n; i++)
            if (u_has(U_BC_R, cp[i], md) || u_has(U_BC_AL, cp[i], md) ||
                u_has(U_BC_AN, cp[i], md))
                *rtl = 1;
    }
    return 1;
}

/* RFC 5893 section 2, for one label of a domain that has an RTL label. */
static int bidi_with(const unsigned long *cp, size_t n, pcre2_match_data *md)
{
    if (!n)
        return 0;
    int first_rtl;
    if (u_has(U_BC_R, cp[0], md) || u_has(U_BC_AL, cp[0], md))
        first_rtl = 1;
    else if (u_has(U_BC_L, cp[0], md))
        first_rtl = 0;
    else
        return 0;
    int has_en = 0, has_an = 0;
    size_t last = n;
    while (last > 0 && u_has(U_BC_NSM, cp[last - 1], md))
        last--;
    if (last == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned long c = cp[i];
        int en = u_has(U_BC_EN, c, md), an = u_has(U_BC_AN, c, md);
        int neutral = u_has(U_BC_ES, c, md) || u_has(U_BC_CS, c, md) ||
                      u_has(U_BC_ET, c, md) || u_has(U_BC_ON, c, md) ||
                      u_has(U_BC_BN, c, md) || u_has(U_BC_NSM, c, md);
        has_en |= en;
        has_an |= an;
        if (first_rtl) {
            if (!(u_has(U_BC_R, c, md) || u_has(U_BC_AL, c, md) || an || en ||
                  neutral))
                return 0;
        } else {
            if (!(u_has(U_BC_L, c, md) || en || neutral))
                return 0;
        }
    }
    unsigned long e = cp[last - 1];
    if (first_rtl)
        return (u_has(U_BC_R, e, md) || u_has(U_BC_AL, e, md) ||
                u_has(U_BC_EN, e, md) || u_has(U_BC_AN, e, md)) &&
               !(has_en && has_an);
    return u_has(U_BC_L, e, md) || u_has(U_BC_EN, e, md);
}

/* ---- whole names -------------------------------------------------------------- */

#define MAX_LABELS 128

typedef struct label {
    unsigned long cp[64];
    size_t n;
} label;

static int is_ldh(unsigned long c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-';
}

/* Checks one label given as code points; fills *lab with its U-label form
 * and adds its A-label length to *total. */
static int one_label(const unsigned long *cp, size_t n, int idn, label *lab,
                     size_t *total, int *rtl, pcre2_match_data *md)
{
    int ascii = 1;
    for (size_t i = 0; i < n; i++)
        if (cp[i] >= 0x80)
            ascii = 0;
    *rtl = 0;
    if (!idn && !ascii)
        return 0;
    if (n == 0)
        return 0;
    if (ascii) {
        if (n > 63 || cp[0] == '-' || cp[n - 1] == '-')
            return 0;
        for (size_t i = 0; i < n; i++)
            if (!is_ldh(cp[i]))
                return 0;
        *total += n;
        int xn = n >= 4 && (cp[0] | 0x20) == 'x' && (cp[1] | 0x20) == 'n' &&
                 cp[2] == '-' && cp[3] == '-';
        if (!xn) {
            memcpy(lab->cp, cp, n * sizeof *cp);
            lab->n = n;
            return 1;
        }
        char a[64];
        for (size_t i = 4; i < n; i++)
            a[i - 4] = (char)cp[i];
        if (sxv_punycode_decode(a, n - 4, lab->cp, 64, &lab->n))
            return 0;
        int any = 0;
        for (size_t i = 0; i < lab->n; i++)
            if (lab->cp[i] >= 0x80)
                any = 1;
        if (!any)
            return 0;
        char enc[64];
        size_t ne;
        if (sxv_punycode_encode(lab->cp, lab->n, enc, sizeof enc, &ne) ||
            ne != n - 4)
            return 0;
        for (size_t i = 0; i < ne; i++) {
            char c = a[i];
            if (c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            if (enc[i] != c)
                return 0;
        }
        return label_with(lab->cp, lab->n, rtl, md);
    }
    if (n > 63)
        return 0;
    memcpy(lab->cp, cp, n * sizeof *cp);
    lab->n = n;
    char enc[64];
    size_t ne;
    if (sxv_punycode_encode(cp, n, enc, sizeof enc - 4, &ne) || ne + 4 > 63)
        return 0;
    *total += ne + 4;
    return label_with(cp, n, rtl, md);
}

static int is_sep(unsigned long c, int idn)
{
    return c == '.' || (idn && (c == 0x3002 || c == 0xFF0E || c == 0xFF61));
}

static int host_name(const char *s, size_t n, int idn)
{
    if (n == 0 || !sxv_utf8_valid(s, n))
        return 0;
    pthread_once(&u_once, u_init);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    label *labs = malloc(MAX_LABELS * sizeof *labs);
    unsigned long *cur = malloc(256 * sizeof *cur);
    int ok = md && labs && cur;
    size_t nl = 0, ncur = 0, total = 0, i = 0;
    int any_rtl = 0;
    while (ok) {
        long c = i < n ? sxv_utf8_next(s, n, &i) : -1;
        if (c < 0 || is_sep((unsigned long)c, idn)) {
            int rtl;
            if (nl == MAX_LABELS ||
                !one_label(cur, ncur, idn, &labs[nl], &total, &rtl, md)) {
                ok = 0;
                break;
            }
            any_rtl |= rtl;
            nl++;
            ncur = 0;
            if (c < 0)
                break;
            total++; /* the dot */
            if (i == n) {
                ok = 0; /* trailing separator */
                break;
            }
            continue;
        }
        if (ncur == 256) {
            ok = 0;
            break;
        }
        cur[ncur++] = (unsigned long)c;
    }
    if (ok && total > 253)
        ok = 0;
    if (ok && any_rtl)
        for (size_t k = 0; k < nl && ok; k++)
            ok = bidi_with(labs[k].cp, labs[k].n, md);
    pcre2_match_data_free(md);
    free(labs);
    free(cur);
    return ok;
}

int sxv_fmt_hostname(const char *s, size_t n)
{
    return host_name(s, n, 0);
}

int sxv_fmt_idn_hostname(const char *s, size_t n)
{
    return host_name(s, n, 1);
}
