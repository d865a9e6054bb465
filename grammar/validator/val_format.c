/* val_format: the `format` table and the formats without a network flavour:
 * RFC 3339 date, time, date-time and duration (appendix A), uuid (RFC
 * 9562 text form, any version and variant), JSON Pointer (RFC 6901),
 * relative JSON Pointer, and regex (ECMA-262, checked by the same parser
 * `pattern` uses).  Every check is on the exact string: no trimming, ASCII
 * digits only. */
#include <string.h>

#include "grammar/validator/val_internal.h"

enum {
    F_DATE = 1,
    F_TIME,
    F_DATE_TIME,
    F_DURATION,
    F_EMAIL,
    F_IDN_EMAIL,
    F_HOSTNAME,
    F_IDN_HOSTNAME,
    F_IPV4,
    F_IPV6,
    F_UUID,
    F_URI,
    F_URI_REFERENCE,
    F_IRI,
    F_IRI_REFERENCE,
    F_URI_TEMPLATE,
    F_JSON_POINTER,
    F_REL_JSON_POINTER,
    F_REGEX,
    F_COUNT
};

static const char *const format_names[F_COUNT] = {
    [F_DATE] = "date",
    [F_TIME] = "time",
    [F_DATE_TIME] = "date-time",
    [F_DURATION] = "duration",
    [F_EMAIL] = "email",
    [F_IDN_EMAIL] = "idn-email",
    [F_HOSTNAME] = "hostname",
    [F_IDN_HOSTNAME] = "idn-hostname",
    [F_IPV4] = "ipv4",
    [F_IPV6] = "ipv6",
    [F_UUID] = "uuid",
    [F_URI] = "uri",
    [F_URI_REFERENCE] = "uri-reference",
    [F_IRI] = "iri",
    [F_IRI_REFERENCE] = "iri-reference",
    [F_URI_TEMPLATE] = "uri-template",
    [F_JSON_POINTER] = "json-pointer",
    [F_REL_JSON_POINTER] = "relative-json-pointer",
    [F_REGEX] = "regex",
};

int sxv_format_id(const char *name)
{
    for (int i = 1; i < F_COUNT; i++)
        if (!strcmp(name, format_names[i]))
            return i;
    return 0;
}

const char *sxv_format_name(int id)
{
    return id > 0 && id < F_COUNT ? format_names[id] : "?";
}

static int digits(const char *s, size_t n, int *v)
{
    int x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return 1;
}

int sxv_fmt_date(const char *s, size_t n)
{
    static const int mdays[12] = {31, 29, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
    int y, m, d;
    if (n != 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4, &y) ||
        !digits(s + 5, 2, &m) || !digits(s + 8, 2, &d))
        return 0;
    /* RFC 3339 allows year 0000, but Python's datetime, pydantic and
     * jsonschema's format checker refuse it (year 1 is their first); a
     * document strux produces must pass the validators users run next */
    if (y == 0 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
        return 0;
    if (m == 2 && d == 29) {
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        if (!leap)
            return 0;
    }
    return 1;
}

int sxv_fmt_time(const char *s, size_t n)
{
    int h, mi, se;
    if (n < 9 || s[2] != ':' || s[5] != ':' || !digits(s, 2, &h) ||
        !digits(s + 3, 2, &mi) || !digits(s + 6, 2, &se))
        return 0;
    if (h > 23 || mi > 59 || se > 60)
        return 0;
    size_t i = 8;
    if (i < n && s[i] == '.') {
        size_t k = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == k)
            return 0;
    }
    if (i >= n)
        return 0; /* the offset is required */
    int off = 0;
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n) {
        off = 0;
    } else if (s[i] == '+' || s[i] == '-') {
        int oh, om;
        if (n - i != 6 || s[i + 3] != ':' || !digits(s + i + 1, 2, &oh) ||
            !digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
            return 0;
        off = (oh * 60 + om) * (s[i] == '+' ? 1 : -1);
    } else {
        return 0;
    }
    if (se == 60) {
        /* a leap second exists only at 23:59:60 UTC */
        int utc = ((h * 60 + mi - off) % 1440 + 1440) % 1440;
        if (utc != 23 * 60 + 59)
            return 0;
    }
    return 1;
}

int sxv_fmt_date_time(const char *s, size_t n)
{
    return n > 11 && (s[10] == 'T' || s[10] == 't') && sxv_fmt_date(s, 10) &&
           sxv_fmt_time(s + 11, n - 11);
}

/* Parses runs of <digits><unit> where units must follow `order` without
 * gaps ("YMD": a year may be followed by a month, a month by a day).
 * Returns the number of elements, or -1. */
static int dur_part(const char *s, size_t n, size_t *i, const char *order)
{
    int count = 0;
    const char *last = NULL;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
        size_t k = *i;
        while (k < n && s[k] >= '0' && s[k] <= '9')
            k++;
        if (k >= n)
            return -1;
        const char *u = strchr(order, s[k]);
        if (!u || s[k] == '\0')
            return -1;
        if (last && u != last + 1)
            return -1;
        last = u;
        count++;
        *i = k + 1;
    }
    return count;
}

int sxv_fmt_duration(const char *s, size_t n)
{
    if (n < 3 || s[0] != 'P')
        return 0;
    size_t i = 1;
    /* weeks stand alone */
    size_t k = i;
    while (k < n && s[k] >= '0' && s[k] <= '9')
        k++;
    if (k > i && k + 1 == n && s[k] == 'W')
        return 1;
    int nd = dur_part(s, n, &i, "YMD");
    if (nd < 0)
        return 0;
    int nt = 0;
    if (i < n && s[i] == 'T') {
        i++;
        nt = dur_part(s, n, &i, "HMS");
        if (nt <= 0)
            return 0;
    }
    return i == n && nd + nt > 0;
}

static int hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
           (c >= 'A' && c <= 'F');
}

static int fmt_uuid(const char *s, size_t n)
{
    if (n != 36)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return 0;
        } else if (!hex(s[i])) {
            return 0;
        }
    }
    return 1;
}

static int fmt_json_pointer(const char *s, size_t n)
{
    if (n && s[0] != '/')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '~' && (i + 1 >= n || (s[i + 1] != '0' && s[i + 1] != '1')))
            return 0;
    return 1;
}

static int fmt_rel_json_pointer(const char *s, size_t n)
{
    size_t i = 0;
    if (!n || s[0] < '0' || s[0] > '9')
        return 0;
    if (s[0] == '0') {
        i = 1;
    } else {
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i == n)
        return 1;
    if (s[i] == '#')
        return i + 1 == n;
    return fmt_json_pointer(s + i, n - i);
}

static int fmt_regex(const char *s, size_t n)
{
    sxv_buf b = {0};
    int rc = sxv_regex_translate(s, n, &b, NULL);
    sxv_buf_free(&b);
    /* ECMA-262 that PCRE2 merely cannot run is still a valid regex */
    return rc == SX_OK || rc == SX_EUNSUPPORTED;
}

int sxv_format_check(int id, const char *s, size_t n)
{
    switch (id) {
    case F_DATE: return sxv_fmt_date(s, n);
    case F_TIME: return sxv_fmt_time(s, n);
    case F_DATE_TIME: return sxv_fmt_date_time(s, n);
    case F_DURATION: return sxv_fmt_duration(s, n);
    case F_EMAIL: return sxv_fmt_email(s, n, 0);
    case F_IDN_EMAIL: return sxv_fmt_email(s, n, 1);
    case F_HOSTNAME: return sxv_fmt_hostname(s, n);
    case F_IDN_HOSTNAME: return sxv_fmt_idn_hostname(s, n);
    case F_IPV4: return sxv_fmt_ipv4(s, n);
    case F_IPV6: return sxv_fmt_ipv6(s, n);
    case F_UUID: return fmt_uuid(s, n);
    case F_URI: return sxv_fmt_uri(s, n, 0, 0);
    case F_URI_REFERENCE: return sxv_fmt_uri(s, n, 0, 1);
    case F_IRI: return sxv_fmt_uri(s, n, 1, 0);
    case F_IRI_REFERENCE: return sxv_fmt_uri(s, n, 1, 1);
    case F_URI_TEMPLATE: return sxv_fmt_uri_template(s, n);
    case F_JSON_POINTER: return fmt_json_pointer(s, n);
    case F_REL_JSON_POINTER: return fmt_rel_json_pointer(s, n);
    case F_REGEX: return fmt_regex(s, n);
    default: return 1;
    }
}

int sx_val_format_check(const char *format, const char *s, size_t len,
                        int *ok)
{
    int id = format ? sxv_format_id(format) : 0;
    if (!ok || !s)
        return SX_EINVAL;
    *ok = 1;
    if (!id)
        return SX_ENOTFOUND;
    *ok = sxv_format_check(id, s, len);
    return SX_OK;
}
