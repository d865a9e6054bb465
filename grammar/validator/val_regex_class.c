/* val_regex_class: the character-level half of the ECMA-262 to PCRE2
 * translation (see val_regex.c): code point sets written out as explicit
 * ranges (\d and \w are ASCII, \s is ECMA's white space and line
 * terminators), character escapes including \u surrogate pairs and \u{...},
 * Unicode property names (General_Category values and aliases, Script,
 * Script_Extensions, binary properties), and [...] classes. */
#include "common/sx_text.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

typedef struct range {
    unsigned long lo, hi;
} range;

typedef struct sxv_cset {
    range *r;
    size_t n, cap;
    sxv_buf props; /* \p{..}/\P{..} items PCRE2 evaluates itself */
    int oom;
} cset;

int sxv_rx_error(sxv_rx *r, int code, const char *what)
{
    if (!r->failed) {
        r->failed = code;
        sx_err_set(r->err, code, "pattern \"%.*s\": %s at offset %zu",
                   (int)(r->n > 120 ? 120 : r->n), r->s, what, r->i);
    }
    return -1;
}

/* ---- code point sets ------------------------------------------------------- */

static void cset_add(cset *c, unsigned long lo, unsigned long hi)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        range *nr = realloc(c->r, cap * sizeof *nr);
        if (!nr) {
            c->oom = 1;
            return;
        }
        c->r = nr;
        c->cap = cap;
    }
    c->r[c->n].lo = lo;
    c->r[c->n].hi = hi;
    c->n++;
}

static int range_cmp(const void *a, const void *b)
{
    const range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void cset_norm(cset *c)
{
    if (c->n < 2)
        return;
    qsort(c->r, c->n, sizeof *c->r, range_cmp);
    size_t k = 0;
    for (size_t i = 1; i < c->n; i++) {
        if (c->r[i].lo <= c->r[k].hi + 1) {
            if (c->r[i].hi > c->r[k].hi)
                c->r[k].hi = c->r[i].hi;
        } else {
            c->r[++k] = c->r[i];
        }
    }
    c->n = k + 1;
}

static const range ws_ranges[] = {
    {0x09, 0x0d}, {0x20, 0x20},     {0xa0, 0xa0},     {0x1680, 0x1680},
    {0x2000, 0x200a}, {0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f},
    {0x3000, 0x3000}, {0xfeff, 0xfeff},
};
static const range digit_ranges[] = {{0x30, 0x39}};
static const range word_ranges[] = {
    {0x30, 0x39}, {0x41, 0x5a}, {0x5f, 0x5f}, {0x61, 0x7a}};

static void cset_add_list(cset *c, const range *r, size_t n, int negate)
{
    if (!negate) {
        for (size_t i = 0; i < n; i++)
            cset_add(c, r[i].lo, r[i].hi);
        return;
    }
    unsigned long next = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].lo > next)
            cset_add(c, next, r[i].lo - 1);
        next = r[i].hi + 1;
    }
    if (next <= 0x10ffff)
        cset_add(c, next, 0x10ffff);
}

void sxv_rx_emit_cp(sxv_buf *o, unsigned long cp)
{
    if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
        (cp >= 'A' && cp <= 'Z'))
        sxv_buf_addc(o, (char)cp);
    else
        sxv_buf_addf(o, "\\x{%lx}", cp);
}

/* PCRE2 refuses surrogate code points even as range ends. */
static void emit_range(sxv_buf *o, unsigned long lo, unsigned long hi)
{
    if (lo >= 0xd800 && lo <= 0xdfff)
        lo = 0xe000;
    if (hi >= 0xd800 && hi <= 0xdfff)
        hi = 0xd7ff;
    if (lo > hi)
        return;
    sxv_rx_emit_cp(o, lo);
    if (hi != lo) {
        sxv_buf_addc(o, '-');
        sxv_rx_emit_cp(o, hi);
    }
}

static void emit_set(sxv_rx *r, cset *c, int negate)
{
    cset_norm(c);
    if (c->n == 0 && c->props.len == 0) {
        sxv_buf_adds(r->out, negate ? "[\\x{0}-\\x{10ffff}]" : "(?!)");
        return;
    }
    sxv_buf_addc(r->out, '[');
    if (negate)
        sxv_buf_addc(r->out, '^');
    for (size_t i = 0; i < c->n; i++)
        emit_range(r->out, c->r[i].lo, c->r[i].hi);
    if (c->props.len)
        sxv_buf_add(r->out, c->props.p, c->props.len);
    sxv_buf_addc(r->out, ']');
}

static void cset_free(cset *c)
{
    free(c->r);
    sxv_buf_free(&c->props);
}

/* ---- lexing helpers -------------------------------------------------------- */

int sxv_rx_peek(const sxv_rx *r)
{
    return r->i < r->n ? (unsigned char)r->s[r->i] : -1;
}


static int is_syntax(int c)
{
    return c >= 0 && strchr("^$\\.*+?()[]{}|/", c) && c != 0;
}

int sxv_rx_is_alnum(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

static long read_hex(sxv_rx *r, int digits)
{
    long v = 0;
    for (int k = 0; k < digits; k++) {
        int h = sx_hexval(sxv_rx_peek(r));
        if (h < 0)
            return -1;
        v = v * 16 + h;
        r->i++;
    }
    return v;
}

/* \u escapes after the "u": HHHH (with surrogate pairing) or {H..}. */
static long read_u(sxv_rx *r)
{
    if (sxv_rx_peek(r) == '{') {
        r->i++;
        unsigned long v = 0;
        int nd = 0;
        while (sx_hexval(sxv_rx_peek(r)) >= 0) {
            v = v * 16 + (unsigned long)sx_hexval(sxv_rx_peek(r));
            if (v > 0x10ffff)
                return sxv_rx_error(r, SX_EFORMAT, "\\u{...} above U+10FFFF");
            r->i++;
            nd++;
        }
        if (!nd || sxv_rx_peek(r) != '}')
            return sxv_rx_error(r, SX_EFORMAT, "malformed \\u{...}");
        r->i++;
        if (v >= 0xd800 && v <= 0xdfff)
            return sxv_rx_error(r, SX_EUNSUPPORTED, "lone surrogate escape");
        return (long)v;
    }
    long v = read_hex(r, 4);
    if (v < 0)
        return sxv_rx_error(r, SX_EFORMAT, "malformed \\u escape");
    if (v >= 0xd800 && v <= 0xdbff && r->i + 6 <= r->n &&
        r->s[r->i] == '\\' && r->s[r->i + 1] == 'u') {
        size_t save = r->i;
        r->i += 2;
        long lo = read_hex(r, 4);
        if (lo >= 0xdc00 && lo <= 0xdfff)
            return 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
        r->i = save;
    }
    if (v >= 0xd800 && v <= 0xdfff)
        return sxv_rx_error(r, SX_EUNSUPPORTED, "lone surrogate escape");
    return v;
}

/* A CharacterEscape after the backslash (r->i at the escape letter);
 * returns the code point or -1. */
long sxv_rx_char_escape(sxv_rx *r, int in_class)
{
    int c = sxv_rx_peek(r);
    if (c < 0)
        return sxv_rx_error(r, SX_EFORMAT, "pattern ends with a backslash");
    r->i++;
    switch (c) {
    case 't': return 9;
    case 'n': return 10;
    case 'v': return 11;
    case 'f': return 12;
    case 'r': return 13;
    case 'c': {
        int l = sxv_rx_peek(r);
        if (!((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')))
            return sxv_rx_error(r, SX_EFORMAT, "\\c must be followed by a letter");
        r->i++;
        return l % 32;
    }
    case '0':
        if (sxv_rx_peek(r) >= '0' && sxv_rx_peek(r) <= '9')
            return sxv_rx_error(r, SX_EFORMAT, "octal escapes are not ECMA-262");
        return 0;
    case 'x': {
        long v = read_hex(r, 2);
        if (v < 0)
            return sxv_rx_error(r, SX_EFORMAT, "malformed \\x escape");
        return v;
    }
    case 'u':
        return read_u(r);
    case '-':
        return '-';
    case 'b':
        if (in_class)
            return 8;
        break;
    default:
        break;
    }
    if (c >= 0x80) {
        /* identity escape of a non-ASCII character */
        r->i--;
        size_t j = r->i;
        long cp = sxv_utf8_next(r->s, r->n, &j);
        if (cp < 0)
            return sxv_rx_error(r, SX_EFORMAT, "invalid UTF-8");
        r->i = j;
        return cp;
    }
    if (is_syntax(c) || (!sxv_rx_is_alnum(c) && c != 0))
        return c;
    r->i--;
    return sxv_rx_error(r, SX_EFORMAT, "invalid escape");
}

/* ---- \p{...} --------------------------------------------------------------- */

static const struct {
    const char *s, *l, *a;
} gc_names[] = {
    {"C", "Other", NULL},
    {"Cc", "Control", "cntrl"},
    {"Cf", "Format", NULL},
    {"Cn", "Unassigned", NULL},
    {"Co", "Private_Use", NULL},
    {"Cs", "Surrogate", NULL},
    {"L", "Letter", NULL},
    {"LC", "Cased_Letter", NULL},
    {"Ll", "Lowercase_Letter", NULL},
    {"Lm", "Modifier_Letter", NULL},
    {"Lo", "Other_Letter", NULL},
    {"Lt", "Titlecase_Letter", NULL},
    {"Lu", "Uppercase_Letter", NULL},
    {"M", "Mark", "Combining_Mark"},
    {"Mc", "Spacing_Mark", NULL},
    {"Me", "Enclosing_Mark", NULL},
    {"Mn", "Nonspacing_Mark", NULL},
    {"N", "Number", NULL},
    {"Nd", "Decimal_Number", "digit"},
    {"Nl", "Letter_Number", NULL},
    {"No", "Other_Number", NULL},
    {"P", "Punctuation", "punct"},
    {"Pc", "Connector_Punctuation", NULL},
    {"Pd", "Dash_Punctuation", NULL},
    {"Pe", "Close_Punctuation", NULL},
    {"Pf", "Final_Punctuation", NULL},
    {"Pi", "Initial_Punctuation", NULL},
    {"Po", "Other_Punctuation", NULL},
    {"Ps", "Open_Punctuation", NULL},
    {"S", "Symbol", NULL},
    {"Sc", "Currency_Symbol", NULL},
    {"Sk", "Modifier_Symbol", NULL},
    {"Sm", "Math_Symbol", NULL},
    {"So", "Other_Symbol", NULL},
    {"Z", "Separator", NULL},
    {"Zl", "Line_Separator", NULL},
    {"Zp", "Paragraph_Separator", NULL},
    {"Zs", "Space_Separator", NULL},
};

static const char *gc_lookup(const char *v, size_t n)
{
    for (size_t k = 0; k < sizeof gc_names / sizeof gc_names[0]; k++) {
        const char *c[3] = {gc_names[k].s, gc_names[k].l, gc_names[k].a};
        for (int j = 0; j < 3; j++)
            if (c[j] && strlen(c[j]) == n && !memcmp(c[j], v, n))
                return gc_names[k].s;
    }
    return NULL;
}

static int name_chars_ok(const char *v, size_t n)
{
    if (!n)
        return 0;
    for (size_t k = 0; k < n; k++)
        if (!sxv_rx_is_alnum((unsigned char)v[k]) && v[k] != '_')
            return 0;
    return 1;
}

/* Parses {...} after \p or \P.  Adds to set `c` when in a class; otherwise
 * emits a complete atom.  neg: \P. */
int sxv_rx_property(sxv_rx *r, int neg, cset *c)
{
    if (sxv_rx_peek(r) != '{')
        return sxv_rx_error(r, SX_EFORMAT, "\\p must be followed by {name}");
    size_t start = ++r->i;
    while (r->i < r->n && r->s[r->i] != '}')
        r->i++;
    if (r->i >= r->n)
        return sxv_rx_error(r, SX_EFORMAT, "unterminated \\p{");
    const char *name = r->s + start;
    size_t n = r->i - start;
    r->i++;
    const char *eq = memchr(name, '=', n);
    char item[96];
    item[0] = '\0';
    if (eq) {
        size_t kn = (size_t)(eq - name), vn = n - kn - 1;
        const char *val = eq + 1;
        if ((kn == 16 && !memcmp(name, "General_Category", 16)) ||
            (kn == 2 && !memcmp(name, "gc", 2))) {
            const char *g = gc_lookup(val, vn);
            if (!g)
                return sxv_rx_error(r, SX_EFORMAT, "unknown General_Category");
            snprintf(item, sizeof item, "\\%c{%s}", neg ? 'P' : 'p',
                     strcmp(g, "LC") ? g : "L&");
        } else if ((kn == 6 && !memcmp(name, "Script", 6)) ||
                   (kn == 2 && !memcmp(name, "sc", 2)) ||
                   (kn == 17 && !memcmp(name, "Script_Extensions", 17)) ||
                   (kn == 3 && !memcmp(name, "scx", 3))) {
            if (!name_chars_ok(val, vn) || vn > 60)
                return sxv_rx_error(r, SX_EFORMAT, "bad script name");
            snprintf(item, sizeof item, "\\%c{%s=%.*s}", neg ? 'P' : 'p',
                     (kn == 6 || kn == 2) ? "sc" : "scx", (int)vn, val);
        } else {
            return sxv_rx_error(r, SX_EFORMAT, "unknown property name");
        }
    } else {
        const char *g = gc_lookup(name, n);
        if (g) {
            snprintf(item, sizeof item, "\\%c{%s}", neg ? 'P' : 'p',
                     strcmp(g, "LC") ? g : "L&");
        } else if (n == 3 && !memcmp(name, "Any", 3)) {
            if (c) {
                if (!neg)
                    cset_add(c, 0, 0x10ffff);
            } else {
                sxv_buf_adds(r->out, neg ? "(?!)" : "[\\x{0}-\\x{10ffff}]");
            }
            return 0;
        } else if (n == 5 && !memcmp(name, "ASCII", 5)) {
            range a = {0, 0x7f};
            if (c) {
                cset_add_list(c, &a, 1, neg);
            } else {
                cset t = {0};
                cset_add_list(&t, &a, 1, neg);
                emit_set(r, &t, 0);
                int oom = t.oom;
                cset_free(&t);
                if (oom)
                    return sxv_rx_error(r, SX_ENOMEM, "out of memory");
            }
            return 0;
        } else if (n == 8 && !memcmp(name, "Assigned", 8)) {
            snprintf(item, sizeof item, "\\%c{Cn}", neg ? 'p' : 'P');
        } else {
            if (!name_chars_ok(name, n) || n > 60)
                return sxv_rx_error(r, SX_EFORMAT, "bad property name");
            /* a binary property; PCRE2 rejects names it does not know */
            snprintf(item, sizeof item, "\\%c{%.*s}", neg ? 'P' : 'p', (int)n,
                     name);
        }
    }
    if (c)
        sxv_buf_adds(&c->props, item);
    else
        sxv_buf_adds(r->out, item);
    return 0;
}

/* ---- character classes ----------------------------------------------------- */

/* One class atom.  Returns 1 with *cp for a single character, 0 when it was
 * a set escape (already added to c), -1 on error. */
static int class_atom(sxv_rx *r, cset *c, long *cp)
{
    int ch = sxv_rx_peek(r);
    if (ch != '\\') {
        size_t j = r->i;
        long v = sxv_utf8_next(r->s, r->n, &j);
        if (v < 0)
            return sxv_rx_error(r, SX_EFORMAT, "invalid UTF-8");
        r->i = j;
        *cp = v;
        return 1;
    }
    r->i++;
    int e = sxv_rx_peek(r);
    switch (e) {
    case 'd': case 'D':
        r->i++;
        cset_add_list(c, digit_ranges, 1, e == 'D');
        return 0;
    case 'w': case 'W':
        r->i++;
        cset_add_list(c, word_ranges, 4, e == 'W');
        return 0;
    case 's': case 'S':
        r->i++;
        cset_add_list(c, ws_ranges, sizeof ws_ranges / sizeof ws_ranges[0],
                      e == 'S');
        return 0;
    case 'p': case 'P':
        r->i++;
        return sxv_rx_property(r, e == 'P', c) < 0 ? -1 : 0;
    case 'B':
        return sxv_rx_error(r, SX_EFORMAT, "\\B inside a class");
    default:
        if (e >= '1' && e <= '9')
            return sxv_rx_error(r, SX_EFORMAT, "backreference inside a class");
        if (e == 'k')
            return sxv_rx_error(r, SX_EFORMAT, "\\k inside a class");
        break;
    }
    long v = sxv_rx_char_escape(r, 1);
    if (v < 0)
        return -1;
    *cp = v;
    return 1;
}

int sxv_rx_parse_class(sxv_rx *r)
{
    cset c = {0};
    int negate = 0, rc = 0;
    r->i++; /* '[' */
    if (sxv_rx_peek(r) == '^') {
        negate = 1;
        r->i++;
    }
    for (;;) {
        int ch = sxv_rx_peek(r);
        if (ch < 0) {
            rc = sxv_rx_error(r, SX_EFORMAT, "unterminated character class");
            break;
        }
        if (ch == ']') {
            r->i++;
            break;
        }
        long lo;
        int k = class_atom(r, &c, &lo);
        if (k < 0) {
            rc = -1;
            break;
        }
        if (sxv_rx_peek(r) == '-' && r->i + 1 < r->n && r->s[r->i + 1] != ']') {
            r->i++;
            long hi;
            int k2 = class_atom(r, &c, &hi);
            if (k2 < 0) {
                rc = -1;
                break;
            }
            if (k == 1 && k2 == 1) {
                if (hi < lo) {
                    rc = sxv_rx_error(r, SX_EFORMAT, "range out of order");
                    break;
                }
                cset_add(&c, (unsigned long)lo, (unsigned long)hi);
            } else {
                /* Annex B: a class escape at either end makes '-' literal */
                if (k == 1)
                    cset_add(&c, (unsigned long)lo, (unsigned long)lo);
                cset_add(&c, '-', '-');
                if (k2 == 1)
                    cset_add(&c, (unsigned long)hi, (unsigned long)hi);
            }
        } else if (k == 1) {
            cset_add(&c, (unsigned long)lo, (unsigned long)lo);
        }
    }
    if (!rc) {
        if (c.oom)
            rc = sxv_rx_error(r, SX_ENOMEM, "out of memory");
        else
            emit_set(r, &c, negate);
    }
    cset_free(&c);
    return rc;
}

/* \d \D \w \W \s \S outside a class (r->i past the letter). */
int sxv_rx_class_escape(sxv_rx *r, int e)
{
    cset cs = {0};
    int neg = e == 'D' || e == 'W' || e == 'S';
    if (e == 'd' || e == 'D')
        cset_add_list(&cs, digit_ranges, 1, neg);
    else if (e == 'w' || e == 'W')
        cset_add_list(&cs, word_ranges, 4, neg);
    else
        cset_add_list(&cs, ws_ranges, sizeof ws_ranges / sizeof ws_ranges[0],
                      neg);
    emit_set(r, &cs, 0);
    int oom = cs.oom;
    cset_free(&cs);
    return oom ? sxv_rx_error(r, SX_ENOMEM, "out of memory") : 0;
}
