/* val_format_net: ipv4 (dotted quad, no leading zeros), ipv6 (RFC 4291
 * text forms, no zone id), email (RFC 5321 Mailbox) and idn-email (RFC
 * 6531: UTF-8 in the local part, U-labels in the domain).  Host names are
 * in val_format_idn.c. */
#include <string.h>

#include "grammar/validator/val_internal.h"

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int sxv_fmt_ipv4(const char *s, size_t n)
{
    size_t i = 0;
    for (int part = 0; part < 4; part++) {
        if (part) {
            if (i >= n || s[i] != '.')
                return 0;
            i++;
        }
        size_t k = i;
        int v = 0;
        while (i < n && is_digit(s[i]) && i - k < 3)
            v = v * 10 + (s[i++] - '0');
        if (i == k || v > 255 || (i - k > 1 && s[k] == '0'))
            return 0;
    }
    return i == n;
}

int sxv_fmt_ipv6(const char *s, size_t n)
{
    size_t i = 0;
    int groups = 0, dbl = 0;
    if (n >= 2 && s[0] == ':' && s[1] == ':') {
        dbl = 1;
        i = 2;
        if (i == n)
            return 1;
    } else if (n && s[0] == ':') {
        return 0;
    }
    for (;;) {
        size_t k = i;
        while (k < n && s[k] != ':')
            k++;
        if (k == i)
            return 0; /* empty group */
        if (memchr(s + i, '.', k - i)) {
            /* an embedded IPv4 address closes the address */
            if (k != n || !sxv_fmt_ipv4(s + i, k - i))
                return 0;
            groups += 2;
            i = k;
            break;
        }
        if (k - i > 4)
            return 0;
        for (size_t j = i; j < k; j++)
            if (!is_hex(s[j]))
                return 0;
        groups++;
        i = k;
        if (i == n)
            break;
        i++; /* ':' */
        if (i < n && s[i] == ':') {
            if (dbl)
                return 0;
            dbl = 1;
            i++;
            if (i == n)
                break;
        } else if (i == n) {
            return 0;
        }
        if (groups > 8)
            return 0;
    }
    return dbl ? groups <= 7 : groups == 8;
}

static int atext(unsigned char c)
{
    return is_alpha((char)c) || is_digit((char)c) ||
           (c && strchr("!#$%&'*+-/=?^_`{|}~", c));
}

/* RFC 5321 Dot-string / Quoted-string; idn admits any non-ASCII UTF-8. */
static int local_part(const char *s, size_t n, int idn)
{
    if (n == 0 || n > 64)
        return 0;
    if (s[0] == '"') {
        if (n < 2 || s[n - 1] != '"')
            return 0;
        for (size_t i = 1; i + 1 < n; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c == '\\') {
                i++;
                if (i + 1 >= n)
                    return 0;
                c = (unsigned char)s[i];
                if (c < 32 || c > 126)
                    return 0;
            } else if (c >= 0x80) {
                if (!idn)
                    return 0;
            } else if (c < 32 || c > 126 || c == '"') {
                return 0;
            }
        }
        return 1;
    }
    int prev_dot = 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '.') {
            if (prev_dot)
                return 0;
            prev_dot = 1;
        } else if (atext(c) || (idn && c >= 0x80)) {
            prev_dot = 0;
        } else {
            return 0;
        }
    }
    return !prev_dot;
}

static int address_literal(const char *s, size_t n)
{
    if (n >= 5 && !memcmp(s, "IPv6:", 5))
        return sxv_fmt_ipv6(s + 5, n - 5);
    return sxv_fmt_ipv4(s, n);
}

int sxv_fmt_email(const char *s, size_t n, int idn)
{
    /* RFC 5321 4.5.3.1.3: a path is at most 256 octets with its angle
     * brackets, so a mailbox is at most 254 */
    if ((idn && !sxv_utf8_valid(s, n)) || n > 254)
        return 0;
    /* the domain cannot hold '@', a quoted local part can: split last */
    size_t at = n;
    while (at > 0 && s[at - 1] != '@')
        at--;
    if (at == 0)
        return 0;
    at--;
    const char *d = s + at + 1;
    size_t dn = n - at - 1;
    if (!local_part(s, at, idn) || dn == 0)
        return 0;
    if (d[0] == '[')
        return dn >= 2 && d[dn - 1] == ']' && address_literal(d + 1, dn - 2);
    return idn ? sxv_fmt_idn_hostname(d, dn) : sxv_fmt_hostname(d, dn);
}
