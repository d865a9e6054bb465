/* val_format_uri: uri and uri-reference (RFC 3986 grammar), iri and
 * iri-reference (RFC 3987: ucschar everywhere, iprivate in the query) and
 * uri-template (RFC 6570, level 4 syntax). */
#include <string.h>

#include "grammar/validator/val_internal.h"

enum {
    C_UNRESERVED = 1,
    C_SUBDELIM = 2,
    C_COLON = 4,
    C_AT = 8,
    C_SLASH = 16,
    C_QUESTION = 32,
};

#define C_PCHAR (C_UNRESERVED | C_SUBDELIM | C_COLON | C_AT)

static int cls(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
        c == '~')
        return C_UNRESERVED;
    if (c && strchr("!$&'()*+,;=", c))
        return C_SUBDELIM;
    if (c == ':')
        return C_COLON;
    if (c == '@')
        return C_AT;
    if (c == '/')
        return C_SLASH;
    if (c == '?')
        return C_QUESTION;
    return 0;
}

static int ucschar(unsigned long c)
{
    return (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xf900 && c <= 0xfdcf) ||
           (c >= 0xfdf0 && c <= 0xffef) ||
           (c >= 0x10000 && c <= 0xefffd && (c & 0xfffe) != 0xfffe);
}

static int iprivate(unsigned long c)
{
    return (c >= 0xe000 && c <= 0xf8ff) ||
           (c >= 0xf0000 && c <= 0x10fffd && (c & 0xfffe) != 0xfffe);
}

static int hexd(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
           (c >= 'A' && c <= 'F');
}

/* Checks s[0..n): every character in `allow`, a %HH escape, or (iri) an
 * allowed non-ASCII code point. */
static int chars_ok(const char *s, size_t n, int allow, int iri, int priv)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n || !hexd(s[i + 1]) || !hexd(s[i + 2]))
                return 0;
            i += 3;
        } else if (c >= 0x80) {
            if (!iri)
                return 0;
            long cp = sxv_utf8_next(s, n, &i);
            if (cp < 0 || !(ucschar((unsigned long)cp) ||
                            (priv && iprivate((unsigned long)cp))))
                return 0;
        } else {
            if (!(cls(c) & allow))
                return 0;
            i++;
        }
    }
    return 1;
}

static int ip_literal(const char *s, size_t n)
{
    if (n && (s[0] == 'v' || s[0] == 'V')) {
        size_t i = 1;
        while (i < n && hexd(s[i]))
            i++;
        if (i == 1 || i >= n || s[i] != '.' || i + 1 >= n)
            return 0;
        return chars_ok(s + i + 1, n - i - 1,
                        C_UNRESERVED | C_SUBDELIM | C_COLON, 0, 0);
    }
    return sxv_fmt_ipv6(s, n);
}

static int authority(const char *s, size_t n, int iri)
{
    const char *at = memchr(s, '@', n);
    if (at) {
        if (!chars_ok(s, (size_t)(at - s), C_UNRESERVED | C_SUBDELIM | C_COLON,
                      iri, 0))
            return 0;
        n -= (size_t)(at - s) + 1;
        s = at + 1;
    }
    size_t hn;
    if (n && s[0] == '[') {
        const char *e = memchr(s, ']', n);
        if (!e || !ip_literal(s + 1, (size_t)(e - s) - 1))
            return 0;
        hn = (size_t)(e - s) + 1;
    } else {
        hn = 0;
        while (hn < n && s[hn] != ':')
            hn++;
        if (!chars_ok(s, hn, C_UNRESERVED | C_SUBDELIM, iri, 0))
            return 0;
    }
    if (hn == n)
        return 1;
    if (s[hn] != ':')
        return 0;
    for (size_t i = hn + 1; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

int sxv_fmt_uri(const char *s, size_t n, int iri, int ref)
{
    size_t i = 0, k;
    int scheme = 0;
    if (iri && !sxv_utf8_valid(s, n))
        return 0;
    if (n && ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) {
        k = 1;
        while (k < n && ((s[k] >= 'a' && s[k] <= 'z') ||
                         (s[k] >= 'A' && s[k] <= 'Z') ||
                         (s[k] >= '0' && s[k] <= '9') || s[k] == '+' ||
                         s[k] == '-' || s[k] == '.'))
            k++;
        if (k < n && s[k] == ':') {
            scheme = 1;
            i = k + 1;
        }
    }
    if (!scheme && !ref)
        return 0;
    /* hier-part / relative-part */
    k = i;
    while (k < n && s[k] != '?' && s[k] != '#')
        k++;
    const char *p = s + i;
    size_t pn = k - i;
    if (pn >= 2 && p[0] == '/' && p[1] == '/') {
        size_t a = 2;
        while (a < pn && p[a] != '/')
            a++;
        if (!authority(p + 2, a - 2, iri))
            return 0;
        p += a;
        pn -= a;
    } else if (!scheme) {
        /* path-noscheme: no ':' in the first segment */
        size_t f = 0;
        while (f < pn && p[f] != '/')
            f++;
        if (memchr(p, ':', f))
            return 0;
    }
    if (!chars_ok(p, pn, C_PCHAR | C_SLASH, iri, 0))
        return 0;
    i = k;
    if (i < n && s[i] == '?') {
        k = ++i;
        while (k < n && s[k] != '#')
            k++;
        if (!chars_ok(s + i, k - i, C_PCHAR | C_SLASH | C_QUESTION, iri, 1))
            return 0;
        i = k;
    }
    if (i < n && s[i] == '#') {
        i++;
        if (!chars_ok(s + i, n - i, C_PCHAR | C_SLASH | C_QUESTION, iri, 0))
            return 0;
    }
    return 1;
}

/* ---- RFC 6570 -------------------------------------------------------------- */

static int varchar(const char *s, size_t n, size_t *i)
{
    char c = s[*i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || c == '_') {
        (*i)++;
        return 1;
    }
    if (c == '%' && *i + 2 < n && hexd(s[*i + 1]) && hexd(s[*i + 2])) {
        *i += 3;
        return 1;
    }
    return 0;
}

static int expression(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && strchr("+#./;?&", s[i]) && s[i])
        i++;
    for (;;) {
        /* varname = varchar *( ["."] varchar ) */
        if (i >= n || !varchar(s, n, &i))
            return 0;
        while (i < n) {
            if (s[i] == '.') {
                i++;
                if (i >= n || !varchar(s, n, &i))
                    return 0;
            } else if (!varchar(s, n, &i)) {
                break;
            }
        }
        if (i < n && s[i] == ':') {
            size_t k = ++i;
            while (i < n && s[i] >= '0' && s[i] <= '9')
                i++;
            if (i == k || i - k > 4 || s[k] == '0')
                return 0;
        } else if (i < n && s[i] == '*') {
            i++;
        }
        if (i == n)
            return 1;
        if (s[i] != ',')
            return 0;
        i++;
    }
}

int sxv_fmt_uri_template(const char *s, size_t n)
{
    size_t i = 0;
    if (!sxv_utf8_valid(s, n))
        return 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == '{') {
            const char *e = memchr(s + i, '}', n - i);
            if (!e || !expression(s + i + 1, (size_t)(e - s) - i - 1))
                return 0;
            i = (size_t)(e - s) + 1;
        } else if (c == '%') {
            if (i + 2 >= n || !hexd(s[i + 1]) || !hexd(s[i + 2]))
                return 0;
            i += 3;
        } else if (c >= 0x80) {
            long cp = sxv_utf8_next(s, n, &i);
            if (cp < 0 ||
                !(ucschar((unsigned long)cp) || iprivate((unsigned long)cp)))
                return 0;
        } else {
            /* literals: printable ASCII except space " % < > \ ^ ` { | } */
            if (c <= 0x20 || c >= 0x7f || strchr("\"<>\\^`{|}", c))
                return 0;
            i++;
        }
    }
    return 1;
}
