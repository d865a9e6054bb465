/* val_regex: ECMA-262 patterns (as JSON Schema's `pattern` and
 * `patternProperties` mean them) translated to PCRE2; this file holds the
 * structure (alternatives, groups, quantifiers, backreferences) and the
 * PCRE2 calls, val_regex_class.c the characters and classes.
 *
 * The translation re-parses the pattern and re-emits every construct in an
 * explicit form, so no PCRE2 extension can slip through and the ECMA
 * meaning is kept under PCRE2_UTF without PCRE2_UCP:
 *   \d \w \s and their negations, `.`, and character classes become explicit
 *   code point ranges (\d and \w are ASCII, \s is ECMA's Unicode white space
 *   plus line terminators, `.` excludes line terminators);
 *   `$` becomes \z (ECMA's `$` never matches before a final newline);
 *   every literal is written as \x{...} unless it is an ASCII letter/digit;
 *   named groups become plain groups and \k<name> a numbered reference;
 *   \u surrogate pairs combine into one code point (patterns match code
 *   points, as with ECMA's `u` flag).
 * Syntax follows the `u` flag, relaxed only where Annex B's reading is
 * unambiguous (a lone `{`, `}` or `]` is literal; `\` before punctuation is
 * that punctuation; `-` next to a class escape inside [...] is literal).
 * ECMA-262 that PCRE2 cannot match the same way is refused: backreferences
 * that depend on ECMA resetting a repeated group's captures on each
 * iteration, and variable-length lookbehind (PCRE2 10.42). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

#define RX_MAX_NEST 200
#define RX_MAX_REPEAT 65535u

/* ---- quantifiers ------------------------------------------------------------ */

/* Reads {n}, {n,} or {n,m} at r->i without consuming on failure. */
static int brace_quant(sxv_rx *r, unsigned long *mn, unsigned long *mx, int *ok)
{
    size_t j = r->i + 1;
    unsigned long a = 0, b;
    int nd = 0;
    *ok = 0;
    while (j < r->n && r->s[j] >= '0' && r->s[j] <= '9') {
        a = a * 10 + (unsigned long)(r->s[j] - '0');
        if (a > 100000000ul)
            a = 100000000ul; /* far above any count PCRE2 takes */
        j++;
        nd++;
    }
    if (!nd)
        return 0;
    b = a;
    if (j < r->n && r->s[j] == ',') {
        j++;
        int nd2 = 0;
        b = 0;
        while (j < r->n && r->s[j] >= '0' && r->s[j] <= '9') {
            b = b * 10 + (unsigned long)(r->s[j] - '0');
            if (b > 100000000ul)
                b = 100000000ul;
            j++;
            nd2++;
        }
        if (!nd2)
            b = (unsigned long)-1;
    }
    if (j >= r->n || r->s[j] != '}')
        return 0;
    *ok = 1;
    *mn = a;
    *mx = b;
    r->i = j + 1;
    return 0;
}

static int at_quantifier(sxv_rx *r)
{
    int c = sxv_rx_peek(r);
    if (c == '*' || c == '+' || c == '?')
        return 1;
    if (c == '{') {
        size_t save = r->i;
        unsigned long a, b;
        int ok;
        brace_quant(r, &a, &b, &ok);
        r->i = save;
        return ok;
    }
    return 0;
}

/* After an atom: an optional quantifier.  Groups first+1..gseen are the
 * capture groups inside the atom, `self` the atom's own group (0 if the
 * atom is no capture group), and backrefs[nb..] the references inside it.
 * ECMA-262 resets the captures of a repeated group at each iteration and
 * PCRE2 does not, so under a repeat count above one a reference to a group
 * nested inside the atom, or one inside the atom to any of its groups, is
 * refused rather than matched differently. */
/* `X+` on a single character or class is written `XX*`: the same language,
 * but PCRE2's DFA matcher keeps a count in every state of a `+` repeat, so
 * under an outer repeat (`^(\w+\s?)*$`) its states multiply with the
 * subject's length, while `X*` keeps one state per pattern position. */
static void dup_atom(sxv_rx *r, size_t atom)
{
    size_t n = r->out->len - atom;
    char *t = r->out->oom ? NULL : malloc(n);
    if (!t) {
        r->out->oom = 1;
        return;
    }
    memcpy(t, r->out->p + atom, n);
    sxv_buf_add(r->out, t, n);
    free(t);
}

/* `atom` is where the quantified atom starts in the output when it is a
 * single character or class, NO_ATOM for a group. */
#define NO_ATOM ((size_t)-1)

static int quantifier(sxv_rx *r, unsigned first_group, size_t nb, unsigned self,
                      size_t atom)
{
    int c = sxv_rx_peek(r);
    unsigned long mn = 0, mx = 0;
    if (c == '*' || c == '+' || c == '?') {
        r->i++;
        if (c == '+' && atom != NO_ATOM && r->plus_star) {
            dup_atom(r, atom);
            sxv_buf_addc(r->out, '*');
        } else {
            sxv_buf_addc(r->out, (char)c);
        }
        mx = c == '?' ? 1 : (unsigned long)-1;
    } else if (c == '{') {
        int ok;
        brace_quant(r, &mn, &mx, &ok);
        if (!ok)
            return 0;
        if (mx != (unsigned long)-1 && mn > mx)
            return sxv_rx_error(r, SX_EFORMAT, "numbers out of order in {}");
        if (mn > RX_MAX_REPEAT ||
            (mx != (unsigned long)-1 && mx > RX_MAX_REPEAT))
            return sxv_rx_error(r, SX_EUNSUPPORTED, "repeat count above 65535");
        if (mx == (unsigned long)-1 && mn == 1 && atom != NO_ATOM &&
            r->plus_star) {
            dup_atom(r, atom);
            sxv_buf_addc(r->out, '*');
        } else if (mx == (unsigned long)-1)
            sxv_buf_addf(r->out, "{%lu,}", mn);
        else if (mx == mn)
            sxv_buf_addf(r->out, "{%lu}", mn);
        else
            sxv_buf_addf(r->out, "{%lu,%lu}", mn, mx);
    } else {
        return 0;
    }
    if (sxv_rx_peek(r) == '?') {
        r->i++;
        sxv_buf_addc(r->out, '?');
    }
    if (at_quantifier(r))
        return sxv_rx_error(r, SX_EFORMAT, "nothing to repeat");
    if (mx > 1) {
        for (unsigned g = first_group + 1; g <= r->gseen; g++)
            if (g != self)
                r->repeated[g] = 1;
        for (size_t k = nb; k < r->nbackrefs; k++)
            if (r->backrefs[k] > first_group && r->backrefs[k] <= r->gseen)
                return sxv_rx_error(r, SX_EUNSUPPORTED,
                                "backreference inside a repeated group to "
                                "one of its groups");
    }
    return 0;
}

/* ---- terms ------------------------------------------------------------------ */

static int disjunction(sxv_rx *r, unsigned depth);

static int add_backref(sxv_rx *r, unsigned g)
{
    if (r->nbackrefs == r->capbackrefs) {
        size_t cap = r->capbackrefs ? r->capbackrefs * 2 : 8;
        unsigned *nb = realloc(r->backrefs, cap * sizeof *nb);
        if (!nb)
            return sxv_rx_error(r, SX_ENOMEM, "out of memory");
        r->backrefs = nb;
        r->capbackrefs = cap;
    }
    r->backrefs[r->nbackrefs++] = g;
    sxv_buf_addf(r->out, "\\g{%u}", g);
    return 0;
}

static unsigned group_by_name(sxv_rx *r, const char *name, size_t n)
{
    for (unsigned g = 1; g <= r->ngroups; g++)
        if (r->names[g] && strlen(r->names[g]) == n &&
            !memcmp(r->names[g], name, n))
            return g;
    return 0;
}

static int group(sxv_rx *r, unsigned depth)
{
    if (depth > RX_MAX_NEST)
        return sxv_rx_error(r, SX_EUNSUPPORTED, "groups nested too deeply");
    unsigned first = r->gseen, self = 0;
    size_t nb = r->nbackrefs;
    int quantifiable = 1;
    r->i++; /* '(' */
    if (sxv_rx_peek(r) == '?') {
        const char *p = r->s + r->i;
        size_t left = r->n - r->i;
        if (left >= 2 && (p[1] == '=' || p[1] == '!')) {
            sxv_buf_add(r->out, p - 1, 3);
            r->i += 2;
            quantifiable = 0;
        } else if (left >= 3 && p[1] == '<' && (p[2] == '=' || p[2] == '!')) {
            sxv_buf_add(r->out, p - 1, 4);
            r->i += 3;
            quantifiable = 0;
        } else if (left >= 2 && p[1] == ':') {
            sxv_buf_add(r->out, "(?:", 3);
            r->i += 2;
        } else if (left >= 2 && p[1] == '<') {
            const char *e = memchr(p + 2, '>', left - 2);
            if (!e)
                return sxv_rx_error(r, SX_EFORMAT, "unterminated group name");
            r->i = (size_t)(e - r->s) + 1;
            self = ++r->gseen;
            sxv_buf_addc(r->out, '(');
        } else {
            return sxv_rx_error(r, SX_EFORMAT, "invalid group");
        }
    } else {
        self = ++r->gseen;
        sxv_buf_addc(r->out, '(');
    }
    if (disjunction(r, depth + 1) < 0)
        return -1;
    if (sxv_rx_peek(r) != ')')
        return sxv_rx_error(r, SX_EFORMAT, "missing )");
    r->i++;
    sxv_buf_addc(r->out, ')');
    if (!quantifiable) {
        if (at_quantifier(r))
            return sxv_rx_error(r, SX_EFORMAT, "an assertion cannot be repeated");
        return 0;
    }
    return quantifier(r, first, nb, self, NO_ATOM);
}

static int term(sxv_rx *r, unsigned depth)
{
    int c = sxv_rx_peek(r);
    unsigned first = r->gseen;
    size_t at = r->out->len;
    switch (c) {
    case '^':
    case '$':
        r->i++;
        sxv_buf_adds(r->out, c == '^' ? "^" : "\\z");
        if (at_quantifier(r))
            return sxv_rx_error(r, SX_EFORMAT, "an assertion cannot be repeated");
        return 0;
    case '(':
        return group(r, depth);
    case ')':
        return sxv_rx_error(r, SX_EFORMAT, "unmatched )");
    case '[':
        if (sxv_rx_parse_class(r) < 0)
            return -1;
        return quantifier(r, first, r->nbackrefs, 0, at);
    case '.':
        r->i++;
        sxv_buf_adds(r->out, "[^\\x{a}\\x{d}\\x{2028}\\x{2029}]");
        return quantifier(r, first, r->nbackrefs, 0, at);
    case '*':
    case '+':
    case '?':
        return sxv_rx_error(r, SX_EFORMAT, "nothing to repeat");
    case '{':
        if (at_quantifier(r))
            return sxv_rx_error(r, SX_EFORMAT, "nothing to repeat");
        r->i++;
        sxv_rx_emit_cp(r->out, '{');
        return quantifier(r, first, r->nbackrefs, 0, at);
    case '\\': {
        r->i++;
        int e = sxv_rx_peek(r);
        if (e == 'b' || e == 'B') {
            r->i++;
            sxv_buf_addc(r->out, '\\');
            sxv_buf_addc(r->out, (char)e);
            if (at_quantifier(r))
                return sxv_rx_error(r, SX_EFORMAT,
                                "an assertion cannot be repeated");
            return 0;
        }
        if (e >= '1' && e <= '9') {
            unsigned long g = 0;
            while (sxv_rx_peek(r) >= '0' && sxv_rx_peek(r) <= '9') {
                g = g * 10 + (unsigned long)(sxv_rx_peek(r) - '0');
                if (g > 100000)
                    g = 100000;
                r->i++;
            }
            if (g > r->ngroups)
                return sxv_rx_error(r, SX_EFORMAT,
                                "backreference to a missing group");
            if (add_backref(r, (unsigned)g) < 0)
                return -1;
            return quantifier(r, first, r->nbackrefs, 0, at);
        }
        if (e == 'k') {
            r->i++;
            if (sxv_rx_peek(r) != '<')
                return sxv_rx_error(r, SX_EFORMAT, "\\k must name a group");
            const char *p = r->s + r->i + 1;
            const char *end = memchr(p, '>', r->n - r->i - 1);
            if (!end)
                return sxv_rx_error(r, SX_EFORMAT, "unterminated \\k<");
            unsigned g = group_by_name(r, p, (size_t)(end - p));
            if (!g)
                return sxv_rx_error(r, SX_EFORMAT, "\\k names no group");
            r->i = (size_t)(end - r->s) + 1;
            if (add_backref(r, g) < 0)
                return -1;
            return quantifier(r, first, r->nbackrefs, 0, at);
        }
        if (e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' ||
            e == 'S' || e == 'p' || e == 'P') {
            r->i++;
            int rc = e == 'p' || e == 'P'
                         ? sxv_rx_property(r, e == 'P', NULL)
                         : sxv_rx_class_escape(r, e);
            if (rc < 0)
                return -1;
            return quantifier(r, first, r->nbackrefs, 0, at);
        }
        long cp = sxv_rx_char_escape(r, 0);
        if (cp < 0)
            return -1;
        sxv_rx_emit_cp(r->out, (unsigned long)cp);
        return quantifier(r, first, r->nbackrefs, 0, at);
    }
    default: {
        size_t j = r->i;
        long cp = sxv_utf8_next(r->s, r->n, &j);
        if (cp < 0)
            return sxv_rx_error(r, SX_EFORMAT, "invalid UTF-8");
        r->i = j;
        sxv_rx_emit_cp(r->out, (unsigned long)cp);
        return quantifier(r, first, r->nbackrefs, 0, at);
    }
    }
}

static int disjunction(sxv_rx *r, unsigned depth)
{
    for (;;) {
        while (r->i < r->n && sxv_rx_peek(r) != '|' && sxv_rx_peek(r) != ')')
            if (term(r, depth) < 0)
                return -1;
        if (sxv_rx_peek(r) != '|')
            return 0;
        r->i++;
        sxv_buf_addc(r->out, '|');
    }
}

/* Counts capture groups and collects their names before parsing, since a
 * backreference may precede its group. */
static int prescan(sxv_rx *r)
{
    unsigned n = 0;
    int in_class = 0;
    for (size_t i = 0; i < r->n; i++) {
        char c = r->s[i];
        if (c == '\\') {
            i++;
            continue;
        }
        if (in_class) {
            if (c == ']')
                in_class = 0;
            continue;
        }
        if (c == '[') {
            in_class = 1;
        } else if (c == '(') {
            if (i + 1 < r->n && r->s[i + 1] == '?') {
                if (i + 2 < r->n && r->s[i + 2] == '<' && i + 3 < r->n &&
                    r->s[i + 3] != '=' && r->s[i + 3] != '!')
                    n++;
            } else {
                n++;
            }
        }
    }
    r->ngroups = n;
    r->names = calloc(n + 1, sizeof *r->names);
    r->repeated = calloc(n + 1, 1);
    if (!r->names || !r->repeated)
        return sxv_rx_error(r, SX_ENOMEM, "out of memory");
    /* second pass for the names, numbering groups in order */
    unsigned g = 0;
    in_class = 0;
    for (size_t i = 0; i < r->n; i++) {
        char c = r->s[i];
        if (c == '\\') {
            i++;
            continue;
        }
        if (in_class) {
            if (c == ']')
                in_class = 0;
            continue;
        }
        if (c == '[') {
            in_class = 1;
        } else if (c == '(') {
            if (i + 1 < r->n && r->s[i + 1] == '?') {
                if (i + 2 < r->n && r->s[i + 2] == '<' && i + 3 < r->n &&
                    r->s[i + 3] != '=' && r->s[i + 3] != '!') {
                    g++;
                    const char *p = r->s + i + 3;
                    const char *e = memchr(p, '>', r->n - (i + 3));
                    if (!e)
                        continue; /* the parser reports it */
                    size_t len = (size_t)(e - p);
                    size_t pos = 0;
                    int ok = len > 0;
                    while (ok && pos < len) {
                        long cp = sxv_utf8_next(p, len, &pos);
                        if (cp < 0 || !(cp == '$' || cp == '_' || cp >= 0x80 ||
                                        sxv_rx_is_alnum((int)cp)) ||
                            (pos <= 1 && cp >= '0' && cp <= '9'))
                            ok = 0;
                    }
                    if (!ok) {
                        r->i = i;
                        return sxv_rx_error(r, SX_EFORMAT, "invalid group name");
                    }
                    if (group_by_name(r, p, len)) {
                        r->i = i;
                        return sxv_rx_error(r, SX_EFORMAT, "duplicate group name");
                    }
                    r->names[g] = malloc(len + 1);
                    if (!r->names[g])
                        return sxv_rx_error(r, SX_ENOMEM, "out of memory");
                    memcpy(r->names[g], p, len);
                    r->names[g][len] = '\0';
                }
            } else {
                g++;
            }
        }
    }
    return 0;
}

static int translate(const char *src, size_t len, sxv_buf *out, sx_error *err,
                     int plus_star)
{
    sxv_rx r = {0};
    r.plus_star = plus_star;
    r.s = src;
    r.n = len;
    r.out = out;
    r.err = err;
    if (prescan(&r) == 0 && disjunction(&r, 0) == 0) {
        if (r.i < r.n)
            sxv_rx_error(&r, SX_EFORMAT, "unmatched )");
        for (size_t k = 0; !r.failed && k < r.nbackrefs; k++)
            if (r.repeated[r.backrefs[k]])
                sxv_rx_error(&r, SX_EUNSUPPORTED,
                         "backreference to a group inside a repeated group");
        if (!r.failed && out->oom)
            sxv_rx_error(&r, SX_ENOMEM, "out of memory");
    }
    if (r.names)
        for (unsigned g = 0; g <= r.ngroups; g++)
            free(r.names[g]);
    free(r.names);
    free(r.repeated);
    free(r.backrefs);
    return r.failed ? r.failed : SX_OK;
}

int sxv_regex_translate(const char *src, size_t len, sxv_buf *out,
                        sx_error *err)
{
    return translate(src, len, out, err, 0);
}

/* Patterns without backreferences are compiled in a search form,
 * `(?s:.)*?(?:P)` anchored at the start, and matched by pcre2_dfa_match:
 * the DFA matcher runs every path of the pattern side by side, so one pass
 * over the subject holding at most one state per pattern position decides
 * the search, with work linear in the subject (times the pattern's size)
 * and no backtracking limit to run into.  The leading `(?s:.)*?` turns the
 * unanchored search into that single pass instead of one run per start
 * position; `^` still means offset 0 and lookbehinds see the real text, so
 * the verdict is the same as an unanchored pcre2_match.  Only
 * backreferences, which the DFA matcher cannot run, keep the backtracking
 * matcher and its limits. */
static pcre2_code *compile_pcre2(const char *p, size_t n, uint32_t extra,
                                 int *ec, PCRE2_SIZE *eo)
{
    return pcre2_compile((PCRE2_SPTR)(p ? p : ""), n,
                         PCRE2_UTF | PCRE2_MATCH_UNSET_BACKREF |
                             PCRE2_NEVER_BACKSLASH_C | extra,
                         ec, eo, NULL);
}

int sxv_regex_compile(const char *src, size_t len, pcre2_code **out,
                      sx_error *err)
{
    sxv_buf b = {0};
    *out = NULL;
    int rc = translate(src, len, &b, err, 0);
    if (rc) {
        sxv_buf_free(&b);
        return rc;
    }
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = compile_pcre2(b.p, b.len, 0, &ec, &eo);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        rc = sx_err_set(err, SX_EUNSUPPORTED,
                        "pattern \"%.*s\": PCRE2 cannot match it: %s",
                        (int)(len > 120 ? 120 : len), src, (const char *)msg);
        sxv_buf_free(&b);
        return rc;
    }
    uint32_t backrefs = 0;
    pcre2_pattern_info(re, PCRE2_INFO_BACKREFMAX, &backrefs);
    /* the search form with `X+` as `XX*` first; a pattern that grows past
     * PCRE2's size limit that way keeps `X+` */
    for (int plus_star = 1; !backrefs && plus_star >= 0; plus_star--) {
        sxv_buf d = {0};
        sxv_buf_adds(&d, "(?s:.)*?(?:");
        if (translate(src, len, &d, NULL, plus_star) != SX_OK) {
            sxv_buf_free(&d);
            continue;
        }
        sxv_buf_addc(&d, ')');
        pcre2_code *dre =
            d.oom ? NULL
                  : compile_pcre2(d.p, d.len,
                                  PCRE2_ANCHORED | PCRE2_NO_AUTO_POSSESS, &ec,
                                  &eo);
        sxv_buf_free(&d);
        if (dre) {
            pcre2_code_free(re);
            sxv_buf_free(&b);
            *out = dre;
            return SX_OK;
        }
    }
    sxv_buf_free(&b);
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* interpreter if no JIT */
    *out = re;
    return SX_OK;
}

/* The DFA matcher's workspace holds its active states; a pattern with
 * many positions alive at once gets a larger one. */
static int dfa_search(const pcre2_code *re, const char *s, size_t len,
                      pcre2_match_data *md, pcre2_match_context *mc)
{
    int small[1000];
    int *ws = small;
    size_t n = sizeof small / sizeof small[0];
    int rc;
    for (;;) {
        rc = pcre2_dfa_match(re, (PCRE2_SPTR)s, len, 0, PCRE2_DFA_SHORTEST, md,
                             mc, ws, n);
        if (rc != PCRE2_ERROR_DFA_WSSIZE || n >= (1u << 22))
            break;
        n *= 4;
        int *nw = ws == small ? malloc(n * sizeof *nw)
                              : realloc(ws, n * sizeof *nw);
        if (!nw) {
            rc = PCRE2_ERROR_NOMEMORY;
            break;
        }
        ws = nw;
    }
    if (ws != small)
        free(ws);
    return rc;
}

int sxv_regex_search(const pcre2_code *re, const char *s, size_t len,
                     pcre2_match_data *md, pcre2_match_context *mc)
{
    uint32_t opts = 0;
    pcre2_pattern_info(re, PCRE2_INFO_ARGOPTIONS, &opts);
    int rc = opts & PCRE2_ANCHORED ? dfa_search(re, s, len, md, mc)
                                   : pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0,
                                                 md, mc);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
        rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT ||
        rc == PCRE2_ERROR_DFA_WSSIZE)
        return -SX_ELIMIT;
    if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21)
        return -SX_EUTF8;
    if (rc == PCRE2_ERROR_NOMEMORY)
        return -SX_ENOMEM;
    return -SX_EINTERNAL;
}
