/* ECMA-262 (Unicode mode) pattern -> AST.  Recursive descent over the
 * grammar of ECMA-262 section 22.2.1 with the Annex B leniencies that have a
 * single obvious meaning; everything else is an error with a byte offset. */
#include "common/sx_text.h"
#include <string.h>

#include "common/sx_utf8.h"
#include "grammar/regex/regex_internal.h"

/* Nesting of groups; deeper patterns are refused rather than risking the
 * C stack (the NFA builder recurses over the same depth). */
#define MAX_DEPTH 250
#define COUNT_CAP 1000000000

typedef struct parser {
    const uint8_t *p;
    size_t         len, pos;
    sx_rx_ast     *ast;
    sx_error      *err;
    int            depth;
    struct name {
        size_t off, len;
    } names[64];
    int n_names;
} parser;

static int at_end(const parser *ps) { return ps->pos >= ps->len; }
static int peek(const parser *ps) { return at_end(ps) ? -1 : ps->p[ps->pos]; }
static int peek_at(const parser *ps, size_t k)
{
    return ps->pos + k >= ps->len ? -1 : ps->p[ps->pos + k];
}

static int nomem(parser *ps)
{
    return sx_err_set(ps->err, SX_ENOMEM, "out of memory compiling regex");
}

/* Decodes one UTF-8 code point at pos (the pattern was validated first). */
static uint32_t take_cp(parser *ps)
{
    uint32_t c = 0;
    ps->pos += sx_utf8_decode(ps->p + ps->pos, ps->len - ps->pos, &c);
    return c;
}


static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Reads exactly n hex digits at pos into *v; 0 if they are not there. */
static int read_hex(parser *ps, int n, uint32_t *v)
{
    uint32_t x = 0;
    for (int i = 0; i < n; i++) {
        int h = sx_hexval(peek_at(ps, (size_t)i));
        if (h < 0)
            return 0;
        x = x * 16 + (uint32_t)h;
    }
    ps->pos += (size_t)n;
    *v = x;
    return 1;
}

/* A decimal count; values past COUNT_CAP saturate (they fail as too large
 * later, with SX_ELIMIT, not as a syntax error). */
static int read_count(parser *ps, int32_t *v)
{
    if (!is_digit(peek(ps)))
        return 0;
    int64_t x = 0;
    while (is_digit(peek(ps))) {
        x = x * 10 + (peek(ps) - '0');
        if (x > COUNT_CAP)
            x = COUNT_CAP;
        ps->pos++;
    }
    *v = (int32_t)x;
    return 1;
}

/* Whether a {n}, {n,} or {n,m} quantifier starts at pos; if so, and parse
 * is set, consumes it. */
static int brace_quantifier(parser *ps, int parse, int32_t *min, int32_t *max)
{
    size_t save = ps->pos;
    int32_t lo = 0, hi = 0;
    int ok = 0;
    if (peek(ps) == '{') {
        ps->pos++;
        if (read_count(ps, &lo)) {
            if (peek(ps) == '}') {
                hi = lo;
                ok = 1;
            } else if (peek(ps) == ',') {
                ps->pos++;
                if (peek(ps) == '}') {
                    hi = -1;
                    ok = 1;
                } else if (read_count(ps, &hi) && peek(ps) == '}') {
                    ok = 1;
                }
            }
        }
    }
    if (ok && parse) {
        ps->pos++;
        *min = lo;
        *max = hi;
    } else {
        ps->pos = save;
    }
    return ok;
}

static int quantifier_starts(parser *ps)
{
    int c = peek(ps);
    return c == '*' || c == '+' || c == '?' || (c == '{' && brace_quantifier(ps, 0, NULL, NULL));
}

static int32_t set_node(parser *ps, sx_rx_cset *s)
{
    int32_t id = sx_rx_ast_set(ps->ast, s);
    if (id < 0)
        return -1;
    int32_t n = sx_rx_ast_node(ps->ast, SX_RX_SET);
    if (n >= 0)
        ps->ast->nodes[n].set = id;
    return n;
}

static int add_property(parser *ps, size_t esc_off, int negate, sx_rx_cset *out)
{
    /* at pos: '{' name '}' */
    if (peek(ps) != '{')
        return sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)esc_off,
                           "\\%c must be followed by {property}", negate ? 'P' : 'p');
    size_t start = ps->pos + 1, end = start;
    while (end < ps->len && ps->p[end] != '}')
        end++;
    if (end >= ps->len || end == start)
        return sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)esc_off,
                           "unterminated or empty \\%c{...}", negate ? 'P' : 'p');
    sx_rx_cset t = {0};
    const char *why = NULL;
    int rc = sx_rx_unicode_property((const char *)ps->p + start, end - start, &t, &why);
    if (rc == SX_EUNSUPPORTED) {
        sx_err_setp(ps->err, rc, NULL, (long)esc_off, "\\%c{%.*s} at offset %zu: %s",
                    negate ? 'P' : 'p', (int)(end - start), (const char *)ps->p + start,
                    esc_off, why);
        goto fail;
    }
    if (rc) {
        nomem(ps);
        goto fail;
    }
    sx_rx_cset_normalize(&t);
    if (negate && (rc = sx_rx_cset_negate(&t))) {
        nomem(ps);
        goto fail;
    }
    if ((rc = sx_rx_cset_add_set(out, &t))) {
        nomem(ps);
        goto fail;
    }
    sx_rx_cset_free(&t);
    ps->pos = end + 1;
    return SX_OK;
fail:
    sx_rx_cset_free(&t);
    return rc;
}

/* Adds a class escape (\d \D \w \W \s \S) to out. */
static int add_class_escape(int c, sx_rx_cset *out)
{
    sx_rx_cset t = {0};
    int rc;
    switch (c | 0x20) {
    case 'd': rc = sx_rx_cset_digit(&t); break;
    case 'w': rc = sx_rx_cset_word(&t); break;
    default: rc = sx_rx_cset_space(&t); break;
    }
    if (!rc && c >= 'A' && c <= 'Z')
        rc = sx_rx_cset_negate(&t);
    if (!rc)
        rc = sx_rx_cset_add_set(out, &t);
    sx_rx_cset_free(&t);
    return rc;
}

/* Parses the escape after a backslash (pos is just past it).  Either sets
 * *cp (returns 0) or adds a class to set (returns 1); < 0 on error with the
 * error already in ps->err (negated code). */
static int parse_escape(parser *ps, int in_class, uint32_t *cp, sx_rx_cset *set)
{
    size_t off = ps->pos - 1;
    if (at_end(ps)) {
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off, "\\ at end of pattern");
        return -SX_EFORMAT;
    }
    int c = peek(ps);
    uint32_t v;
    switch (c) {
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
        ps->pos++;
        if (add_class_escape(c, set))
            return -nomem(ps);
        return 1;
    case 'p': case 'P': {
        ps->pos++;
        int rc = add_property(ps, off, c == 'P', set);
        return rc ? -rc : 1;
    }
    case 'f': ps->pos++; *cp = 0x0C; return 0;
    case 'n': ps->pos++; *cp = 0x0A; return 0;
    case 'r': ps->pos++; *cp = 0x0D; return 0;
    case 't': ps->pos++; *cp = 0x09; return 0;
    case 'v': ps->pos++; *cp = 0x0B; return 0;
    case 'b':
        /* outside a class \b is an assertion, handled by the caller */
        ps->pos++;
        *cp = 0x08;
        return 0;
    case 'c':
        if (is_alpha(peek_at(ps, 1))) {
            *cp = (uint32_t)peek_at(ps, 1) % 32;
            ps->pos += 2;
            return 0;
        }
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off,
                    "\\c at offset %zu must be followed by an ASCII letter", off);
        return -SX_EFORMAT;
    case 'x':
        ps->pos++;
        if (read_hex(ps, 2, cp))
            return 0;
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off,
                    "\\x at offset %zu must be followed by two hex digits", off);
        return -SX_EFORMAT;
    case 'u':
        ps->pos++;
        if (peek(ps) == '{') {
            size_t q = ps->pos + 1;
            uint32_t x = 0;
            int nd = 0;
            while (q < ps->len && sx_hexval(ps->p[q]) >= 0) {
                x = x * 16 + (uint32_t)sx_hexval(ps->p[q]);
                if (x > SX_RX_MAX_CP)
                    break;
                q++;
                nd++;
            }
            if (nd > 0 && x <= SX_RX_MAX_CP && q < ps->len && ps->p[q] == '}') {
                ps->pos = q + 1;
                *cp = x;
                return 0;
            }
        } else if (read_hex(ps, 4, &v)) {
            /* a surrogate pair written as two escapes is one code point */
            if (v >= 0xD800 && v <= 0xDBFF && peek(ps) == '\\' && peek_at(ps, 1) == 'u') {
                size_t save = ps->pos;
                uint32_t lo;
                ps->pos += 2;
                if (read_hex(ps, 4, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                    *cp = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
                    return 0;
                }
                ps->pos = save;
            }
            *cp = v;
            return 0;
        }
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off,
                    "\\u at offset %zu must be followed by four hex digits or {hex}", off);
        return -SX_EFORMAT;
    case '0':
        if (!is_digit(peek_at(ps, 1))) {
            ps->pos++;
            *cp = 0;
            return 0;
        }
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off,
                    "octal escape at offset %zu is not allowed", off);
        return -SX_EFORMAT;
    case 'k':
        if (!in_class && peek_at(ps, 1) == '<') {
            sx_err_setp(ps->err, SX_EUNSUPPORTED, NULL, (long)off,
                        "named backreference \\k<...> at offset %zu is not supported", off);
            return -SX_EUNSUPPORTED;
        }
        break;
    case '-':
        ps->pos++;
        *cp = '-';
        return 0;
    default:
        break;
    }
    if (is_digit(c)) {
        if (!in_class) {
            sx_err_setp(ps->err, SX_EUNSUPPORTED, NULL, (long)off,
                        "backreference \\%c at offset %zu is not supported", c, off);
            return -SX_EUNSUPPORTED;
        }
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off,
                    "octal escape \\%c at offset %zu is not allowed", c, off);
        return -SX_EFORMAT;
    }
    if (is_alpha(c) || c == 'B') {
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off,
                    "invalid escape \\%c at offset %zu (not ECMA-262)", c, off);
        return -SX_EFORMAT;
    }
    /* identity escape: punctuation, space, or any non-ASCII character */
    *cp = take_cp(ps);
    return 0;
}

static int32_t parse_class(parser *ps)
{
    size_t open = ps->pos++;
    sx_rx_cset set = {0};
    int neg = 0;
    if (peek(ps) == '^') {
        neg = 1;
        ps->pos++;
    }
    for (;;) {
        if (at_end(ps)) {
            sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)open,
                        "character class opened at offset %zu is not closed", open);
            goto fail;
        }
        if (peek(ps) == ']') {
            ps->pos++;
            break;
        }
        /* first atom */
        uint32_t c1 = 0, c2 = 0;
        size_t off1 = ps->pos;
        int k1, k2;
        if (peek(ps) == '\\') {
            ps->pos++;
            if (peek(ps) == 'B') {
                sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off1,
                            "\\B at offset %zu is not allowed in a class", off1);
                goto fail;
            }
            k1 = parse_escape(ps, 1, &c1, &set);
            if (k1 < 0)
                goto fail;
        } else {
            c1 = take_cp(ps);
            k1 = 0;
        }
        if (peek(ps) == '-' && peek_at(ps, 1) != ']' && peek_at(ps, 1) != -1) {
            ps->pos++;
            if (peek(ps) == '\\') {
                ps->pos++;
                if (peek(ps) == 'B') {
                    sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)ps->pos - 1,
                                "\\B at offset %zu is not allowed in a class", ps->pos - 1);
                    goto fail;
                }
                k2 = parse_escape(ps, 1, &c2, &set);
                if (k2 < 0)
                    goto fail;
            } else {
                c2 = take_cp(ps);
                k2 = 0;
            }
            if (k1 == 0 && k2 == 0) {
                if (c1 > c2) {
                    sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off1,
                                "range out of order in character class at offset %zu", off1);
                    goto fail;
                }
                if (sx_rx_cset_add(&set, c1, c2))
                    goto oom;
            } else {
                /* Annex B: a class escape at a range end makes the '-' literal */
                if ((k1 == 0 && sx_rx_cset_add(&set, c1, c1)) ||
                    (k2 == 0 && sx_rx_cset_add(&set, c2, c2)) ||
                    sx_rx_cset_add(&set, '-', '-'))
                    goto oom;
            }
        } else if (k1 == 0 && sx_rx_cset_add(&set, c1, c1)) {
            goto oom;
        }
    }
    sx_rx_cset_normalize(&set);
    if (neg && sx_rx_cset_negate(&set))
        goto oom;
    int32_t n = set_node(ps, &set);
    if (n < 0)
        nomem(ps);
    return n;
oom:
    nomem(ps);
fail:
    sx_rx_cset_free(&set);
    return -1;
}

static int32_t parse_disjunction(parser *ps);

static int32_t parse_group(parser *ps)
{
    size_t open = ps->pos;
    if (peek_at(ps, 1) == '?') {
        int c2 = peek_at(ps, 2), c3 = peek_at(ps, 3);
        if (c2 == '=' || c2 == '!') {
            sx_err_setp(ps->err, SX_EUNSUPPORTED, NULL, (long)open,
                        "lookahead (?%c at offset %zu is not supported", c2, open);
            return -1;
        }
        if (c2 == '<' && (c3 == '=' || c3 == '!')) {
            sx_err_setp(ps->err, SX_EUNSUPPORTED, NULL, (long)open,
                        "lookbehind (?<%c at offset %zu is not supported", c3, open);
            return -1;
        }
        if (c2 == ':') {
            ps->pos += 3;
        } else if (c2 == '<') {
            size_t s = ps->pos + 3, e = s;
            while (e < ps->len && ps->p[e] != '>') {
                int ch = ps->p[e];
                int ok = is_alpha(ch) || ch == '_' || ch == '$' || ch >= 0x80 ||
                         (e > s && is_digit(ch));
                if (!ok)
                    break;
                e++;
            }
            if (e == s || e >= ps->len || ps->p[e] != '>') {
                sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)open,
                            "invalid group name at offset %zu", open);
                return -1;
            }
            for (int i = 0; i < ps->n_names; i++) {
                if (ps->names[i].len == e - s && memcmp(ps->p + ps->names[i].off, ps->p + s, e - s) == 0) {
                    sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)open,
                                "duplicate group name '%.*s' at offset %zu", (int)(e - s),
                                (const char *)ps->p + s, open);
                    return -1;
                }
            }
            if (ps->n_names < (int)(sizeof ps->names / sizeof ps->names[0])) {
                ps->names[ps->n_names].off = s;
                ps->names[ps->n_names].len = e - s;
                ps->n_names++;
            }
            ps->pos = e + 1;
        } else if (is_alpha(c2) || c2 == '-') {
            sx_err_setp(ps->err, SX_EUNSUPPORTED, NULL, (long)open,
                        "inline modifier group (?%c at offset %zu is not supported", c2, open);
            return -1;
        } else {
            sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)open,
                        "invalid group (? at offset %zu", open);
            return -1;
        }
    } else {
        ps->pos++;
    }
    if (++ps->depth > MAX_DEPTH) {
        sx_err_setp(ps->err, SX_ELIMIT, NULL, (long)open,
                    "groups nested deeper than %d at offset %zu", MAX_DEPTH, open);
        return -1;
    }
    int32_t n = parse_disjunction(ps);
    ps->depth--;
    if (n < 0)
        return -1;
    if (peek(ps) != ')') {
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)open,
                    "group opened at offset %zu is not closed", open);
        return -1;
    }
    ps->pos++;
    return n;
}

static int32_t literal_node(parser *ps, uint32_t cp)
{
    sx_rx_cset s = {0};
    if (sx_rx_cset_add(&s, cp, cp)) {
        nomem(ps);
        return -1;
    }
    int32_t n = set_node(ps, &s);
    if (n < 0)
        nomem(ps);
    return n;
}

static int32_t assert_node(parser *ps, int kind)
{
    int32_t n = sx_rx_ast_node(ps->ast, SX_RX_ASSERT);
    if (n < 0)
        return nomem(ps), -1;
    ps->ast->nodes[n].assert_kind = (uint8_t)kind;
    if (kind == SX_RX_WB || kind == SX_RX_NWB)
        ps->ast->has_wb = 1;
    if (quantifier_starts(ps)) {
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)ps->pos,
                    "nothing to repeat at offset %zu (quantified assertion)", ps->pos);
        return -1;
    }
    return n;
}

static int32_t parse_term(parser *ps)
{
    size_t off = ps->pos;
    int c = peek(ps);
    int32_t atom = -1;
    switch (c) {
    case '^':
        ps->pos++;
        return assert_node(ps, SX_RX_BOL);
    case '$':
        ps->pos++;
        return assert_node(ps, SX_RX_EOL);
    case '\\':
        if (peek_at(ps, 1) == 'b' || peek_at(ps, 1) == 'B') {
            ps->pos += 2;
            return assert_node(ps, c == '\\' && ps->p[ps->pos - 1] == 'b' ? SX_RX_WB : SX_RX_NWB);
        }
        {
            sx_rx_cset s = {0};
            uint32_t cp = 0;
            ps->pos++;
            int k = parse_escape(ps, 0, &cp, &s);
            if (k < 0) {
                sx_rx_cset_free(&s);
                return -1;
            }
            if (k == 1) {
                atom = set_node(ps, &s);
                if (atom < 0)
                    return nomem(ps), -1;
            } else {
                sx_rx_cset_free(&s);
                atom = literal_node(ps, cp);
            }
        }
        break;
    case '(':
        atom = parse_group(ps);
        break;
    case '[':
        atom = parse_class(ps);
        break;
    case '.': {
        sx_rx_cset s = {0};
        ps->pos++;
        if (sx_rx_cset_dot(&s)) {
            sx_rx_cset_free(&s);
            return nomem(ps), -1;
        }
        atom = set_node(ps, &s);
        if (atom < 0)
            nomem(ps);
        break;
    }
    case '*':
    case '+':
    case '?':
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off, "nothing to repeat at offset %zu", off);
        return -1;
    case '{':
        if (brace_quantifier(ps, 0, NULL, NULL)) {
            sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)off, "nothing to repeat at offset %zu", off);
            return -1;
        }
        ps->pos++;
        atom = literal_node(ps, '{');
        break;
    default:
        atom = literal_node(ps, take_cp(ps));
        break;
    }
    if (atom < 0)
        return -1;

    int32_t min, max;
    size_t qoff = ps->pos;
    c = peek(ps);
    if (c == '*') {
        min = 0, max = -1, ps->pos++;
    } else if (c == '+') {
        min = 1, max = -1, ps->pos++;
    } else if (c == '?') {
        min = 0, max = 1, ps->pos++;
    } else if (!(c == '{' && brace_quantifier(ps, 1, &min, &max))) {
        return atom;
    }
    if (max >= 0 && min > max) {
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)qoff,
                    "numbers out of order in quantifier at offset %zu", qoff);
        return -1;
    }
    if (peek(ps) == '?')
        ps->pos++; /* lazy: same language */
    if (quantifier_starts(ps)) {
        sx_err_setp(ps->err, SX_EFORMAT, NULL, (long)ps->pos,
                    "nothing to repeat at offset %zu", ps->pos);
        return -1;
    }
    int32_t rep = sx_rx_ast_node(ps->ast, SX_RX_REP);
    if (rep < 0)
        return nomem(ps), -1;
    ps->ast->nodes[rep].child = atom;
    ps->ast->nodes[rep].min = min;
    ps->ast->nodes[rep].max = max;
    return rep;
}

static int32_t parse_alternative(parser *ps)
{
    int32_t cat = -1, only = -1;
    int n = 0;
    while (!at_end(ps) && peek(ps) != '|' && peek(ps) != ')') {
        int32_t t = parse_term(ps);
        if (t < 0)
            return -1;
        if (n == 0) {
            only = t;
        } else {
            if (n == 1) {
                cat = sx_rx_ast_node(ps->ast, SX_RX_CAT);
                if (cat < 0)
                    return nomem(ps), -1;
                sx_rx_ast_append(ps->ast, cat, only);
            }
            sx_rx_ast_append(ps->ast, cat, t);
        }
        n++;
    }
    if (n == 0) {
        int32_t e = sx_rx_ast_node(ps->ast, SX_RX_EMPTY);
        if (e < 0)
            nomem(ps);
        return e;
    }
    return n == 1 ? only : cat;
}

static int32_t parse_disjunction(parser *ps)
{
    int32_t first = parse_alternative(ps);
    if (first < 0 || peek(ps) != '|')
        return first;
    int32_t alt = sx_rx_ast_node(ps->ast, SX_RX_ALT);
    if (alt < 0)
        return nomem(ps), -1;
    sx_rx_ast_append(ps->ast, alt, first);
    while (peek(ps) == '|') {
        ps->pos++;
        int32_t a = parse_alternative(ps);
        if (a < 0)
            return -1;
        sx_rx_ast_append(ps->ast, alt, a);
    }
    return alt;
}

int sx_rx_parse(const char *pat, size_t len, sx_rx_ast *ast, sx_error *err)
{
    size_t bad = sx_utf8_check(pat, len, NULL);
    if (bad < len)
        return sx_err_setp(err, SX_EUTF8, NULL, (long)bad,
                           "pattern is not valid UTF-8 at offset %zu", bad);
    parser ps = {.p = (const uint8_t *)pat, .len = len, .ast = ast, .err = err};
    int32_t root = parse_disjunction(&ps);
    if (root < 0)
        return err && err->code ? err->code : SX_ENOMEM;
    if (!at_end(&ps))
        return sx_err_setp(err, SX_EFORMAT, NULL, (long)ps.pos,
                           "unmatched ) at offset %zu", ps.pos);
    ast->root = root;
    return SX_OK;
}
