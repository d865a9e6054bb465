/* sx_rpc: confidence per field (protocol.h).  A small scanner finds every
 * leaf value's byte span and JSON Pointer in the output text; the tokens
 * whose bytes overlap a span are the model's choices for that value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/protocol.h"

#define FC_MAX_DEPTH 1000

typedef struct fc_leaf {
    size_t start, end;
    char  *pointer;
} fc_leaf;

typedef struct fc_scan {
    const char *s;
    size_t      len, pos;
    fc_leaf    *leaves;
    size_t      n, cap;
    sx_bytes    ptr;     /* the pointer of the value being scanned */
    sx_error   *err;
} fc_scan;

static void ws(fc_scan *c)
{
    while (c->pos < c->len && (c->s[c->pos] == ' ' || c->s[c->pos] == '\t' ||
                               c->s[c->pos] == '\n' || c->s[c->pos] == '\r'))
        c->pos++;
}

static int bad(fc_scan *c, const char *what)
{
    return sx_err_set(c->err, SX_EFORMAT, "the output is not JSON: %s at byte %zu", what, c->pos);
}

static int leaf(fc_scan *c, size_t start)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        fc_leaf *v = realloc(c->leaves, cap * sizeof *v);
        if (!v)
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        c->leaves = v;
        c->cap = cap;
    }
    char *p = malloc(c->ptr.n + 1);
    if (!p)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    memcpy(p, c->ptr.v ? c->ptr.v : "", c->ptr.n);
    p[c->ptr.n] = 0;
    c->leaves[c->n++] = (fc_leaf){start, c->pos, p};
    return SX_OK;
}

/* Skips a string (c->pos at its quote). */
static int skip_string(fc_scan *c)
{
    c->pos++;
    while (c->pos < c->len && c->s[c->pos] != '"')
        c->pos += c->s[c->pos] == '\\' ? 2 : 1;
    if (c->pos >= c->len)
        return bad(c, "an unterminated string");
    c->pos++;
    return SX_OK;
}

/* Appends "/" and the key at [a, b) (a JSON string, quotes included),
 * decoded and escaped as RFC 6901 says (~ as ~0, / as ~1). */
static int push_key(fc_scan *c, size_t a, size_t b)
{
    json_t *k = json_loadb(c->s + a, b - a, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!json_is_string(k)) {
        json_decref(k);
        return bad(c, "a malformed key");
    }
    const char *t = json_string_value(k);
    size_t n = json_string_length(k);
    int rc = sx_bytes_append(&c->ptr, "/", 1);
    for (size_t i = 0; i < n && !rc; i++)
        rc = t[i] == '~'   ? sx_bytes_append(&c->ptr, "~0", 2)
             : t[i] == '/' ? sx_bytes_append(&c->ptr, "~1", 2)
                           : sx_bytes_append(&c->ptr, t + i, 1);
    json_decref(k);
    return rc ? sx_err_set(c->err, SX_ENOMEM, "out of memory") : SX_OK;
}

static int value(fc_scan *c, int depth)
{
    if (depth > FC_MAX_DEPTH)
        return sx_err_set(c->err, SX_ELIMIT, "the output nests deeper than %d levels",
                          FC_MAX_DEPTH);
    ws(c);
    if (c->pos >= c->len)
        return bad(c, "a missing value");
    size_t start = c->pos, base = c->ptr.n;
    char ch = c->s[c->pos];
    int rc;
    if (ch == '{' || ch == '[') {
        int obj = ch == '{';
        c->pos++;
        ws(c);
        if (c->pos < c->len && c->s[c->pos] == (obj ? '}' : ']')) {
            c->pos++;
            return leaf(c, start);   /* an empty container: a value of its own */
        }
        for (size_t i = 0;; i++) {
            if (obj) {
                ws(c);
                size_t a = c->pos;
                if (c->pos >= c->len || c->s[c->pos] != '"')
                    return bad(c, "a missing key");
                if ((rc = skip_string(c)) || (rc = push_key(c, a, c->pos)))
                    return rc;
                ws(c);
                if (c->pos >= c->len || c->s[c->pos] != ':')
                    return bad(c, "a missing ':'");
                c->pos++;
            } else {
                char idx[24];
                int k = snprintf(idx, sizeof idx, "/%zu", i);
                if (sx_bytes_append(&c->ptr, idx, (size_t)k))
                    return sx_err_set(c->err, SX_ENOMEM, "out of memory");
            }
            if ((rc = value(c, depth + 1)))
                return rc;
            c->ptr.n = base;
            ws(c);
            if (c->pos < c->len && c->s[c->pos] == ',') {
                c->pos++;
                continue;
            }
            if (c->pos < c->len && c->s[c->pos] == (obj ? '}' : ']')) {
                c->pos++;
                return SX_OK;
            }
            return bad(c, "a missing ',' or close");
        }
    }
    if (ch == '"') {
        if ((rc = skip_string(c)))
            return rc;
    } else {
        /* a number or a literal: up to the next delimiter */
        while (c->pos < c->len && !strchr(",]} \t\n\r", c->s[c->pos]))
            c->pos++;
    }
    return leaf(c, start);
}

static int overlaps(const sx_rpc_tok_span *t, const fc_leaf *l)
{
    if (t->start == t->end)   /* a piece held back (part of a character): where it goes */
        return t->start >= l->start && t->start < l->end;
    return t->start < l->end && t->end > l->start;
}

int sx_rpc_field_confidence(const char *text, size_t len, const sx_rpc_tok_span *toks,
                            size_t n_toks, json_t **out, sx_error *err)
{
    fc_scan c = {.s = text, .len = len, .err = err};
    json_t *arr = NULL;
    *out = NULL;
    int rc = value(&c, 0);
    if (!rc) {
        ws(&c);
        if (c.pos != c.len)
            rc = bad(&c, "text after the value");
    }
    if (rc)
        goto done;
    if (!(arr = json_array())) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto done;
    }
    size_t t0 = 0;   /* leaves and tokens both run left to right */
    for (size_t i = 0; i < c.n; i++) {
        const fc_leaf *l = &c.leaves[i];
        while (t0 < n_toks && toks[t0].end <= l->start && toks[t0].start < l->start)
            t0++;
        double lp = 0, alt = 0;
        int n = 0;
        for (size_t t = t0; t < n_toks && toks[t].start <= l->end; t++) {
            if (!overlaps(&toks[t], l) || toks[t].forced)
                continue;
            if (!n)
                alt = 1.0 - exp((double)toks[t].logprob);
            lp += toks[t].logprob;
            n++;
        }
        json_t *f = json_pack("{s:s, s:f, s:f, s:i}", "pointer", l->pointer, "logprob", lp,
                              "alternatives", alt < 0 ? 0.0 : alt, "tokens", n);
        if (!f || json_array_append_new(arr, f)) {
            rc = sx_err_set(err, SX_ENOMEM, "out of memory");
            goto done;
        }
    }
    *out = arr;
    arr = NULL;
done:
    json_decref(arr);
    for (size_t i = 0; i < c.n; i++)
        free(c.leaves[i].pointer);
    free(c.leaves);
    sx_bytes_free(&c.ptr);
    return rc;
}

double sx_rpc_field_confidence_min(const json_t *fields)
{
    double m = 1;
    size_t i;
    const json_t *f;
    json_array_foreach(fields, i, f) {
        double p = exp(json_number_value(json_object_get(f, "logprob")));
        if (p < m)
            m = p;
    }
    return m;
}

int sx_rpc_req_set_field_confidence(sx_rpc_req *r, const json_t *v, const char *at,
                                    sx_error *err)
{
    r->field_confidence = 0;
    if (!v || json_is_false(v))
        return SX_OK;
    if (!json_is_true(v))
        return sx_err_setp(err, SX_EINVAL, at, -1, "field_confidence must be a boolean");
    if (r->mode == SX_RPC_TEXT || r->mode == SX_RPC_REGEX)
        return sx_err_setp(err, SX_EINVAL, at, -1,
                           "field_confidence needs JSON output: a schema, choices or json_object "
                           "(not %s)", sx_rpc_mode_name(r->mode));
    if (r->num_beams)
        return sx_err_setp(err, SX_EINVAL, at, -1,
                           "beam search has no per-token log-probs: no field_confidence");
    if (r->stream)
        return sx_err_setp(err, SX_EINVAL, at, -1,
                           "field_confidence comes with the whole answer: not with stream");
    r->field_confidence = 1;
    return SX_OK;
}
