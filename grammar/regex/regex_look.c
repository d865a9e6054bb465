/* Lookaheads in the two places where they are set operations.
 *
 *   ^(?!A)R   strings that ^R finds and ^(?:A) does not: a difference
 *   ^(?=A)R   strings that both find: an intersection
 *   X(?=Y)    at the very end of a search pattern: X(?:Y) (a match of X
 *             followed by one of Y is a match of XY, and back)
 *
 * Only in search mode, only when the pattern has no `|` at its top level
 * (a lookahead would bind to one alternative only), and only when nothing
 * quantifies the lookahead.  Every other lookahead stays the parser's
 * refusal.  The intersection and difference are exact DFA operations, so
 * the language is exactly ECMA-262's (without the m flag `^` is the start
 * of the input). */
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex_internal.h"

/* The end of the class that starts at p[i] == '[' (index of its ']'), or
 * len when it does not close.  In ECMA-262 a ']' right after '[' or '[^'
 * closes the class ([] is empty, [^] is any character). */
static size_t class_end(const char *p, size_t len, size_t i)
{
    i++;
    if (i < len && p[i] == '^')
        i++;
    for (; i < len; i++) {
        if (p[i] == '\\')
            i++;
        else if (p[i] == ']')
            return i;
    }
    return len;
}

/* Scans p: *bar = 1 if a `|` stands at the top level; *last_open = the
 * index of the '(' of the top-level group that ends at the last byte (or
 * len).  -1 when the brackets do not balance. */
static int scan(const char *p, size_t len, int *bar, size_t *last_open)
{
    int depth = 0;
    size_t open = len;
    *bar = 0;
    *last_open = len;
    for (size_t i = 0; i < len; i++) {
        char ch = p[i];
        if (ch == '\\') {
            i++;
        } else if (ch == '[') {
            i = class_end(p, len, i);
            if (i == len)
                return -1;
        } else if (ch == '(') {
            if (depth == 0)
                open = i;
            depth++;
        } else if (ch == ')') {
            if (--depth < 0)
                return -1;
            if (depth == 0 && i == len - 1)
                *last_open = open;
        } else if (ch == '|' && depth == 0) {
            *bar = 1;
        }
    }
    return depth == 0 ? 0 : -1;
}

/* The index of the ')' that closes the group opened at p[open]. */
static size_t group_end(const char *p, size_t len, size_t open)
{
    int depth = 0;
    for (size_t i = open; i < len; i++) {
        char ch = p[i];
        if (ch == '\\') {
            i++;
        } else if (ch == '[') {
            i = class_end(p, len, i);
        } else if (ch == '(') {
            depth++;
        } else if (ch == ')' && --depth == 0) {
            return i;
        }
    }
    return len;
}

static char *concat3(const char *a, const char *b, size_t bn, const char *c, size_t *n)
{
    size_t an = strlen(a), cn = strlen(c);
    char *s = malloc(an + bn + cn + 1);
    if (!s)
        return NULL;
    memcpy(s, a, an);
    memcpy(s + an, b, bn);
    memcpy(s + an + bn, c, cn);
    s[an + bn + cn] = '\0';
    *n = an + bn + cn;
    return s;
}

/* ^(?!A1)(?=A2)...R (p[0] is '^', a lookahead opens at p[1]): ^R, then
 * less or within ^(?:Ai) from the last lookahead to the first.  The
 * lookaheads in a row are taken in one loop, not one recursion each: a
 * pattern of thousands of them would overflow the stack.  One that is
 * quantified ends the row (the rest goes to the parser, which refuses
 * it); *handled stays 0 when the first is. */
static int leading(const char *p, size_t len, const sx_re_limits *lim, sx_re **out,
                   sx_error *err, int *handled)
{
    size_t n = 0, pos = 1, *open = NULL, *close = NULL;
    while (pos + 3 < len && p[pos] == '(' && p[pos + 1] == '?' &&
           (p[pos + 2] == '!' || p[pos + 2] == '=')) {
        size_t cl = group_end(p, len, pos);
        if (cl >= len)
            break;
        char q = cl + 1 < len ? p[cl + 1] : '\0';
        if (q == '*' || q == '+' || q == '?' || q == '{')
            break;
        if (!open) {
            open = malloc((len / 4 + 1) * sizeof *open); /* a lookahead takes >= 4 bytes */
            close = malloc((len / 4 + 1) * sizeof *close);
            *handled = 1;
            if (!open || !close) {
                free(open);
                free(close);
                return sx_err_set(err, SX_ENOMEM, "out of memory");
            }
        }
        open[n] = pos;
        close[n++] = cl;
        pos = cl + 1;
    }
    if (!n)
        return SX_OK;
    size_t rn;
    char *rest = concat3("^", p + pos, len - pos, "", &rn);
    sx_re *r = NULL;
    int rc = rest ? sx_re_compile(rest, rn, SX_RE_SEARCH, lim, &r, err)
                  : sx_err_set(err, SX_ENOMEM, "out of memory");
    free(rest);
    while (!rc && n-- > 0) {
        size_t an;
        char *look = concat3("^(?:", p + open[n] + 3, close[n] - open[n] - 3, ")", &an);
        sx_re *a = NULL, *both = NULL;
        rc = look ? sx_re_compile(look, an, SX_RE_SEARCH, lim, &a, err)
                  : sx_err_set(err, SX_ENOMEM, "out of memory");
        if (!rc)
            rc = p[open[n] + 2] == '!' ? sx_re_minus(r, a, lim, &both, err)
                                       : sx_re_intersect(r, a, lim, &both, err);
        free(look);
        sx_re_free(a);
        sx_re_free(r);
        r = both;
    }
    free(open);
    free(close);
    if (rc) {
        sx_re_free(r);
        return rc;
    }
    *out = r;
    return SX_OK;
}

int sx_rx_lookahead(const char *p, size_t len, sx_re_mode mode, const sx_re_limits *lim,
                    sx_re **out, sx_error *err, int *handled)
{
    *handled = 0;
    int bar;
    size_t last_open;
    if (mode != SX_RE_SEARCH || len < 5 || scan(p, len, &bar, &last_open) || bar)
        return SX_OK;
    int lead = p[0] == '^' && p[1] == '(' && p[2] == '?' && (p[3] == '!' || p[3] == '=');
    if (lead)
        return leading(p, len, lim, out, err, handled);
    if (last_open < len && last_open + 3 < len && p[last_open + 1] == '?' &&
        p[last_open + 2] == '=') {
        size_t n = len;
        char *x = malloc(len + 1);
        *handled = 1;
        if (!x)
            return sx_err_set(err, SX_ENOMEM, "out of memory");
        memcpy(x, p, len);
        x[len] = '\0';
        x[last_open + 2] = ':'; /* (?=Y) at the end is (?:Y) */
        int rc = sx_re_compile(x, n, SX_RE_SEARCH, lim, out, err);
        free(x);
        return rc;
    }
    return SX_OK;
}
