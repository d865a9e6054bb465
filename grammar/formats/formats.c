/* Format regexes, written from the ABNF of the defining RFCs.  Fragments
 * are string literals pasted together by the preprocessor, so each regex is
 * a single static string. */
#include <stdio.h>
#include <string.h>

#include "grammar/formats/formats.h"

/* ---- RFC 3339 dates and times --------------------------------------------- */

/* Years 0001-9999: RFC 3339 allows 0000, but Python's datetime, pydantic and
 * jsonschema's format checker refuse it, and the validator follows them. */
#define YEAR "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"
#define FULL_DATE                                                                   \
    "(?:" YEAR "-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"                  \
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"                                        \
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"                                                 \
    /* Feb 29: the year is divisible by 4 but not by 100, or by 400 (not 0000) */   \
    "|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)" \
    "-02-29)"
#define SECFRAC "(?:\\.[0-9]+)?"
#define NUMOFFSET "[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]"
/* A leap second is only valid when the UTC time is 23:59:60; checking that
 * for every offset would need a table of 2,880 local times, so the leap
 * second is accepted only with offset Z, +00:00 or -00:00. */
#define FULL_TIME                                                                    \
    "(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]" SECFRAC "(?:[Zz]|" NUMOFFSET ")" \
    "|23:59:60" SECFRAC "(?:[Zz]|[+-]00:00))"

#define DUR_TIME "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
#define DURATION                                                           \
    "P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)" \
    "(?:" DUR_TIME ")?|" DUR_TIME "|[0-9]+W)"

/* ---- IP addresses ------------------------------------------------------------ */

#define DEC_OCTET "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
#define IPV4 DEC_OCTET "(?:\\." DEC_OCTET "){3}"
#define H16 "[0-9A-Fa-f]{1,4}"
#define LS32 "(?:" H16 ":" H16 "|" IPV4 ")"
/* RFC 3986 section 3.2.2, the textual forms of RFC 4291 */
#define IPV6                                            \
    "(?:(?:" H16 ":){6}" LS32                           \
    "|::(?:" H16 ":){5}" LS32                           \
    "|(?:" H16 ")?::(?:" H16 ":){4}" LS32               \
    "|(?:(?:" H16 ":){0,1}" H16 ")?::(?:" H16 ":){3}" LS32 \
    "|(?:(?:" H16 ":){0,2}" H16 ")?::(?:" H16 ":){2}" LS32 \
    "|(?:(?:" H16 ":){0,3}" H16 ")?::" H16 ":" LS32     \
    "|(?:(?:" H16 ":){0,4}" H16 ")?::" LS32             \
    "|(?:(?:" H16 ":){0,5}" H16 ")?::" H16              \
    "|(?:(?:" H16 ":){0,6}" H16 ")?::)"

/* ---- hostname ----------------------------------------------------------------- */

/* RFC 1123 labels (letters, digits, hyphens; 1-63 characters; no hyphen at
 * either end) without "--" in the third and fourth positions, which RFC 5891
 * reserves for A-labels (xn--...).  Validating an A-label needs Punycode
 * decoding and IDNA tables, so A-labels are rejected outright. */
#define LD "[A-Za-z0-9]"
#define LDH "[A-Za-z0-9-]"
#define LABEL                                                             \
    "(?:" LD "(?:" LDH "?" LD ")?"                                        \
    "|" LD LDH "(?:" LD LD "(?:" LDH "{0,58}" LD ")?"                     \
    "|" LD "-" LDH "{0,58}" LD "|-" LD "(?:" LDH "{0,58}" LD ")?))"
#define HOSTNAME LABEL "(?:\\." LABEL ")*"

/* ---- email: RFC 5321 Mailbox ------------------------------------------------- */

/* The domain is a hostname (as the hostname format: labels of at most 63
 * characters, no A-labels) or an address literal; an IPv4 literal has no
 * leading zeros and an IPv6 one takes the RFC 4291 text forms, as the
 * validator reads them.  The length limits of RFC 5321 -- a local part of
 * at most 64 octets (EMAIL_WITHIN) and a mailbox of at most 254 (max_len),
 * which bounds the domain below 253 too -- are part of the format. */
#define ATEXT "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
#define LOCAL_PART                              \
    "(?:" ATEXT "+(?:\\." ATEXT "+)*"           \
    "|\"(?:[ !#-\\[\\]-~]|\\\\[ -~])*\")"
/* General-address-literal needs an IANA-registered tag: not accepted. */
#define ADDRESS_LITERAL "\\[(?:" IPV4 "|IPv6:" IPV6 ")\\]"
#define EMAIL LOCAL_PART "@(?:" HOSTNAME "|" ADDRESS_LITERAL ")"
/* the local part is everything before the last '@' (the domain holds none);
 * it is printable ASCII (LOCAL_PART), so its octets are its characters:
 * [ -~] rather than [^] spares the UTF-8 states of 64 counted characters */
#define EMAIL_WITHIN "[ -~]{1,64}@[^@]+"
/* every email: the local part, then the domain (which holds no '@') */
#define EMAIL_SHAPE LOCAL_PART "@[^@]*"

/* ---- URI: RFC 3986 --------------------------------------------------------------- */

#define PCT "%[0-9A-Fa-f]{2}"
#define PCHAR "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|" PCT ")"
#define SCHEME "[A-Za-z][A-Za-z0-9+.-]*"
#define USERINFO "(?:[A-Za-z0-9._~!$&'()*+,;=:-]|" PCT ")*"
#define IP_LITERAL "\\[(?:" IPV6 "|[Vv][0-9A-Fa-f]+\\.[A-Za-z0-9._~!$&'()*+,;=:-]+)\\]"
/* IPv4address is a subset of reg-name, so host needs only the two */
#define REG_NAME "(?:[A-Za-z0-9._~!$&'()*+,;=-]|" PCT ")*"
#define AUTHORITY "(?:" USERINFO "@)?(?:" IP_LITERAL "|" REG_NAME ")(?::[0-9]*)?"
#define PATH_ABEMPTY "(?:/" PCHAR "*)*"
#define PATH_ABSOLUTE "/(?:" PCHAR "+(?:/" PCHAR "*)*)?"
#define PATH_ROOTLESS PCHAR "+(?:/" PCHAR "*)*"
#define PATH_NOSCHEME "(?:[A-Za-z0-9._~!$&'()*+,;=@-]|" PCT ")+(?:/" PCHAR "*)*"
#define QUERY_FRAG "(?:\\?(?:" PCHAR "|[/?])*)?(?:#(?:" PCHAR "|[/?])*)?"
#define URI                                                                                \
    SCHEME ":(?://" AUTHORITY PATH_ABEMPTY "|" PATH_ABSOLUTE "|" PATH_ROOTLESS ")?" QUERY_FRAG
#define RELATIVE_REF \
    "(?://" AUTHORITY PATH_ABEMPTY "|" PATH_ABSOLUTE "|" PATH_NOSCHEME ")?" QUERY_FRAG

static const sx_format_info formats[] = {
    {"date", FULL_DATE, -1, NULL, NULL, "2000-01-01", NULL},
    {"time", FULL_TIME, -1,
     "a leap second (:60) is accepted only as 23:59:60 with offset Z, +00:00 or -00:00; "
     "other offsets' leap seconds (e.g. 15:59:60-08:00) are rejected", NULL, "00:00:00Z", NULL},
    {"date-time", FULL_DATE "[Tt]" FULL_TIME, -1,
     "as time: leap seconds only at 23:59:60 with a zero offset", NULL, "2000-01-01T00:00:00Z",
     NULL},
    {"duration", DURATION, -1, NULL, NULL, NULL, NULL},
    {"email", EMAIL, 254,
     "RFC 5321 General-address-literals ([tag:content], whose tag must be registered with "
     "IANA) are rejected, and, as for hostname, domain labels with \"--\" in positions 3-4 "
     "(A-labels)", EMAIL_WITHIN, NULL, EMAIL_SHAPE},
    {"hostname", HOSTNAME, 253,
     "A-labels (xn--...) and any label with \"--\" in positions 3-4 are rejected: "
     "validating Punycode and IDNA rules is beyond a regex", NULL, NULL, NULL},
    {"ipv4", IPV4, -1, NULL, NULL, NULL, NULL},
    {"ipv6", IPV6, -1, NULL, NULL, NULL, NULL},
    {"uuid", "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}", -1,
     NULL, NULL, NULL, NULL},
    {"uri", URI, -1, NULL, NULL, NULL, NULL},
    {"uri-reference", "(?:" URI "|" RELATIVE_REF ")", -1, NULL, NULL, NULL, NULL},
};

#define N_FORMATS ((int)(sizeof formats / sizeof formats[0]))

int sx_format_lookup(const char *name, const sx_format_info **info)
{
    for (int i = 0; name && i < N_FORMATS; i++) {
        if (strcmp(formats[i].name, name) == 0) {
            if (info)
                *info = &formats[i];
            return SX_OK;
        }
    }
    return SX_ENOTFOUND;
}

int sx_format_regex(const char *name, const char **regex_src)
{
    const sx_format_info *f;
    int rc = sx_format_lookup(name, &f);
    if (rc == SX_OK && regex_src)
        *regex_src = f->regex;
    return rc;
}

const sx_format_info *sx_format_at(int i)
{
    return i >= 0 && i < N_FORMATS ? &formats[i] : NULL;
}

int sx_format_automaton(const sx_format_info *f, const sx_re_limits *lim, sx_re **out,
                        sx_error *err)
{
    sx_re *re = NULL, *in = NULL;
    int rc = sx_re_compile(f->regex, strlen(f->regex), SX_RE_FULL, lim, &re, err);
    if (!rc && f->within) {
        rc = sx_re_compile(f->within, strlen(f->within), SX_RE_FULL, lim, &in, err);
        if (!rc && f->shape) {
            sx_re *sh = NULL, *pinned = NULL;
            rc = sx_re_compile(f->shape, strlen(f->shape), SX_RE_FULL, lim, &sh, err);
            if (!rc)
                rc = sx_re_intersect(sh, in, lim, &pinned, err);
            sx_re_free(sh);
            sx_re_free(in);
            in = pinned;
        }
        if (!rc) {
            sx_re *both = NULL;
            rc = sx_re_intersect(re, in, lim, &both, err);
            sx_re_free(re);
            re = both;
        }
    }
    sx_re_free(in);
    if (rc) {
        sx_re_free(re);
        re = NULL;
        sx_err_prefix(err, "format %s", f->name);
    }
    *out = re;
    return rc;
}

int sx_format_compile(const char *name, const sx_re_limits *lim, sx_re **out, sx_error *err)
{
    const sx_format_info *f;
    sx_re *re = NULL, *len = NULL;
    int rc;
    *out = NULL;
    if (sx_format_lookup(name, &f))
        return sx_err_set(err, SX_ENOTFOUND, "unknown format \"%s\"", name ? name : "(null)");
    rc = sx_format_automaton(f, lim, &re, err);
    if (rc || f->max_len < 0) {
        *out = re;
        return rc;
    }
    char bound[64];
    snprintf(bound, sizeof bound, "[^]{0,%d}", (int)f->max_len);
    rc = sx_re_compile(bound, strlen(bound), SX_RE_FULL, lim, &len, err);
    if (!rc)
        rc = sx_re_intersect(re, len, lim, out, err);
    if (rc)
        sx_err_prefix(err, "format %s", f->name);
    sx_re_free(re);
    sx_re_free(len);
    return rc;
}
