/* sx_numjson: see sx_numjson.h. */
#include "common/sx_numjson.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_utf8.h"

#define NJ_MAX_DEPTH 2048

typedef struct nj {
    const char *s;
    size_t n, i;
    sx_numtab *tab;
    json_error_t *je;
    int failed;
    int no_dups;
} nj;

static void nj_fail(nj *p, const char *what)
{
    if (p->failed)
        return;
    p->failed = 1;
    int line = 1, col = 0;
    for (size_t k = 0; k < p->i && k < p->n; k++) {
        if (p->s[k] == '\n') {
            line++;
            col = 0;
        } else {
            col++;
        }
    }
    memset(p->je, 0, sizeof *p->je);
    p->je->line = line;
    p->je->column = col + 1;
    p->je->position = (int)p->i;
    snprintf(p->je->text, sizeof p->je->text, "%s", what);
}

static void skip_ws(nj *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' ||
                           p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static int tab_add(sx_numtab *t, const json_t *num, const char *s, size_t n)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        sx_numtext *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = cap;
    }
    char *c = malloc(n + 1);
    if (!c)
        return -1;
    memcpy(c, s, n);
    c[n] = '\0';
    t->v[t->n].num = json_incref((json_t *)num); /* no reuse of its address */
    t->v[t->n].text = c;
    t->v[t->n].len = n;
    t->n++;
    return 0;
}

/* JSON's number grammar; returns the length, 0 if none. */
static size_t number_len(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return 0;
    if (i < n && s[i] == '.') {
        size_t j = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == j)
            return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t j = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == j)
            return 0;
    }
    return i;
}

static json_t *read_number(nj *p)
{
    const char *s = p->s + p->i;
    size_t len = number_len(s, p->n - p->i);
    if (!len) {
        nj_fail(p, "invalid number");
        return NULL;
    }
    char small[64], *buf = len < sizeof small ? small : malloc(len + 1);
    if (!buf) {
        nj_fail(p, "out of memory");
        return NULL;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    int integer = !memchr(buf, '.', len) && !memchr(buf, 'e', len) && !memchr(buf, 'E', len);
    json_t *v = NULL;
    int keep = 1;
    if (integer) {
        errno = 0;
        long long x = strtoll(buf, NULL, 10);
        if (errno != ERANGE) {
            v = json_integer((json_int_t)x);
            keep = len == 2 && buf[0] == '-' && buf[1] == '0'; /* "-0": as written */
        }
    }
    if (!v) {
        double d = strtod(buf, NULL); /* +-HUGE_VAL or 0 past a double's range */
        if (isinf(d))
            d = d > 0 ? 1.7976931348623157e308 : -1.7976931348623157e308;
        v = json_real(d);
    }
    if (buf != small)
        free(buf);
    if (!v || (keep && tab_add(p->tab, v, s, len))) {
        json_decref(v);
        nj_fail(p, "out of memory");
        return NULL;
    }
    p->i += len;
    return v;
}

/* cp is a scalar value: a lone surrogate was refused before */
static void put_utf8(char *o, size_t *k, unsigned long cp)
{
    *k += sx_utf8_encode((uint32_t)cp, (uint8_t *)o + *k);
}

static long hex4(const char *s, size_t left)
{
    if (left < 4)
        return -1;
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int c = s[k], d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A string's content, unescaped, in a new buffer (*len bytes). */
static char *read_string(nj *p, size_t *len)
{
    p->i++; /* '"' */
    size_t start = p->i;
    while (p->i < p->n && p->s[p->i] != '"') {
        if (p->s[p->i] == '\\')
            p->i++;
        else if ((unsigned char)p->s[p->i] < 0x20) {
            nj_fail(p, "control character in a string");
            return NULL;
        }
        p->i++;
    }
    if (p->i >= p->n) {
        nj_fail(p, "unterminated string");
        return NULL;
    }
    size_t end = p->i;
    char *o = malloc(end - start + 1);
    if (!o) {
        nj_fail(p, "out of memory");
        return NULL;
    }
    size_t k = 0;
    for (size_t i = start; i < end; i++) {
        char c = p->s[i];
        if (c != '\\') {
            o[k++] = c;
            continue;
        }
        c = p->s[++i];
        const char *esc = strchr("\"\\/bfnrt", c);
        if (esc && c) {
            static const char to[] = "\"\\/\b\f\n\r\t";
            o[k++] = to[esc - "\"\\/bfnrt"];
            continue;
        }
        long u = c == 'u' ? hex4(p->s + i + 1, end - i - 1) : -1;
        if (u < 0) {
            p->i = i;
            nj_fail(p, "invalid escape");
            free(o);
            return NULL;
        }
        i += 4;
        if (u >= 0xD800 && u <= 0xDBFF) {
            long lo = i + 2 < end && p->s[i + 1] == '\\' && p->s[i + 2] == 'u'
                          ? hex4(p->s + i + 3, end - i - 3)
                          : -1;
            if (lo < 0xDC00 || lo > 0xDFFF) {
                p->i = i;
                nj_fail(p, "invalid \\u surrogate pair");
                free(o);
                return NULL;
            }
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        } else if (u >= 0xDC00 && u <= 0xDFFF) {
            p->i = i;
            nj_fail(p, "lone \\u surrogate");
            free(o);
            return NULL;
        }
        put_utf8(o, &k, (unsigned long)u);
    }
    p->i = end + 1;
    *len = k;
    return o;
}

static json_t *read_value(nj *p, int depth);

static json_t *read_container(nj *p, int depth)
{
    int obj = p->s[p->i] == '{';
    json_t *c = obj ? json_object() : json_array();
    if (!c) {
        nj_fail(p, "out of memory");
        return NULL;
    }
    p->i++;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) {
        p->i++;
        return c;
    }
    for (;;) {
        char *key = NULL;
        size_t klen = 0;
        skip_ws(p);
        if (obj) {
            if (p->i >= p->n || p->s[p->i] != '"') {
                nj_fail(p, "string or '}' expected");
                goto fail;
            }
            if (!(key = read_string(p, &klen)))
                goto fail;
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') {
                free(key);
                nj_fail(p, "':' expected");
                goto fail;
            }
            p->i++;
        }
        if (obj && p->no_dups && json_object_getn(c, key, klen)) {
            free(key);
            nj_fail(p, "duplicate object key");
            goto fail;
        }
        json_t *v = read_value(p, depth + 1);
        if (!v) {
            free(key);
            goto fail;
        }
        int rc = obj ? json_object_setn_new(c, key, klen, v) : json_array_append_new(c, v);
        free(key);
        if (rc) {
            nj_fail(p, obj ? "invalid UTF-8 in an object key" : "out of memory");
            goto fail;
        }
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) {
            p->i++;
            return c;
        }
        nj_fail(p, obj ? "',' or '}' expected" : "',' or ']' expected");
        goto fail;
    }
fail:
    json_decref(c);
    return NULL;
}

static json_t *read_value(nj *p, int depth)
{
    if (depth > NJ_MAX_DEPTH) {
        nj_fail(p, "maximum parsing depth reached");
        return NULL;
    }
    skip_ws(p);
    if (p->i >= p->n) {
        nj_fail(p, "unexpected end of input");
        return NULL;
    }
    char c = p->s[p->i];
    if (c == '{' || c == '[')
        return read_container(p, depth);
    if (c == '"') {
        size_t len;
        char *t = read_string(p, &len);
        if (!t)
            return NULL;
        json_t *v = json_stringn(t, len);
        free(t);
        if (!v)
            nj_fail(p, "invalid UTF-8 in a string");
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return read_number(p);
    static const struct { const char *w; size_t n; } lit[] = {
        {"true", 4}, {"false", 5}, {"null", 4}};
    for (int k = 0; k < 3; k++)
        if (p->n - p->i >= lit[k].n && !memcmp(p->s + p->i, lit[k].w, lit[k].n)) {
            p->i += lit[k].n;
            return k == 0 ? json_true() : k == 1 ? json_false() : json_null();
        }
    nj_fail(p, "invalid token");
    return NULL;
}

static int by_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const sx_numtext *)a)->num;
    uintptr_t y = (uintptr_t)((const sx_numtext *)b)->num;
    return x < y ? -1 : x > y;
}

json_t *sx_numjson_loadb(const char *text, size_t len, int flags, sx_numtab *tab,
                         json_error_t *je)
{
    json_error_t dummy;
    nj p = {.s = text ? text : "", .n = text ? len : 0, .tab = tab, .je = je ? je : &dummy,
            .no_dups = (flags & SX_NUMJSON_REJECT_DUPLICATES) != 0};
    json_t *v = read_value(&p, 0);
    if (v) {
        skip_ws(&p);
        if (p.i < p.n) {
            nj_fail(&p, "end of file expected");
            json_decref(v);
            v = NULL;
        }
    }
    if (!v) {
        sx_numtab_free(tab);
        return NULL;
    }
    if (tab->n > 1)
        qsort(tab->v, tab->n, sizeof *tab->v, by_ptr);
    return v;
}

const char *sx_numtab_find(const sx_numtab *tab, const json_t *num, size_t *len)
{
    if (!tab || !tab->n)
        return NULL;
    sx_numtext key = {.num = num};
    const sx_numtext *e = bsearch(&key, tab->v, tab->n, sizeof *tab->v, by_ptr);
    if (!e)
        return NULL;
    if (len)
        *len = e->len;
    return e->text;
}

void sx_numtab_free(sx_numtab *tab)
{
    if (!tab)
        return;
    for (size_t i = 0; i < tab->n; i++) {
        free(tab->v[i].text);
        json_decref((json_t *)tab->v[i].num);
    }
    free(tab->v);
    memset(tab, 0, sizeof *tab);
}

/* ---- decimals ------------------------------------------------------------ */

static int dec_set(sx_dec *out, int neg, const char *ip, size_t ni, const char *fp, size_t nf,
                   long long ex)
{
    /* value = (ip fp as one integer) * 10^(ex - nf) */
    long long e = ex - (long long)nf;
    while (nf && fp[nf - 1] == '0') { /* trailing fraction zeros */
        nf--;
        e++;
    }
    if (!nf)
        while (ni && ip[ni - 1] == '0') { /* then trailing integer zeros */
            ni--;
            e++;
        }
    while (ni && *ip == '0') { /* leading zeros change nothing */
        ip++;
        ni--;
    }
    if (!ni)
        while (nf && *fp == '0') {
            fp++;
            nf--;
        }
    size_t nz = nf, nd = ni + nf;
    out->neg = nd ? neg : 0;
    out->nd = nd;
    out->e = nd ? e : 0;
    out->d = nd < sizeof out->buf ? out->buf : malloc(nd);
    if (!out->d)
        return -1;
    memcpy(out->d, ip, ni);
    memcpy(out->d + ni, fp, nz);
    return 0;
}

void sx_dec_free(sx_dec *d)
{
    if (d->d && d->d != d->buf)
        free(d->d);
    d->d = NULL;
}

int sx_dec_parse(const char *s, size_t n, sx_dec *out)
{
    out->d = NULL;
    if (!n || number_len(s, n) != n)
        return -1;
    size_t i = 0;
    int neg = s[0] == '-';
    i += (size_t)neg;
    const char *ip = s + i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    size_t ni = (size_t)(s + i - ip);
    const char *fp = s + i;
    size_t nf = 0;
    if (i < n && s[i] == '.') {
        fp = s + ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        nf = (size_t)(s + i - fp);
    }
    long long ex = 0;
    if (i < n) { /* exponent, saturated far beyond any digit count */
        int eneg = 0;
        i++;
        if (s[i] == '+' || s[i] == '-')
            eneg = s[i++] == '-';
        for (; i < n; i++)
            if (ex < 1000000000000000LL)
                ex = ex * 10 + (s[i] - '0');
        if (eneg)
            ex = -ex;
    }
    return dec_set(out, neg, ip, ni, fp, nf, ex);
}

/* The shortest %.*e form of d that reads back as d. */
static int shortest_e(double d, char *buf, size_t cap)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*e", p - 1, d);
        if (strtod(buf, NULL) == d)
            return p;
    }
    return 17;
}

int sx_dec_from_json(const sx_numtab *tab, const json_t *x, sx_dec *out)
{
    char buf[64];
    size_t len;
    out->d = NULL;
    const char *t = sx_numtab_find(tab, x, &len);
    if (t)
        return sx_dec_parse(t, len, out);
    if (json_is_integer(x)) {
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(x));
        return sx_dec_parse(buf, strlen(buf), out);
    }
    if (!json_is_real(x) || !isfinite(json_real_value(x)))
        return -1;
    shortest_e(json_real_value(x), buf, sizeof buf);
    return sx_dec_parse(buf, strlen(buf), out);
}

/* Compares |a| and |b|. */
static int cmp_abs(const sx_dec *a, const sx_dec *b)
{
    if (!a->nd || !b->nd)
        return (a->nd != 0) - (b->nd != 0);
    /* magnitude: the position of the leading digit, nd + e */
    long long ma = (long long)a->nd + a->e, mb = (long long)b->nd + b->e;
    if (ma != mb)
        return ma < mb ? -1 : 1;
    size_t n = a->nd > b->nd ? a->nd : b->nd;
    for (size_t i = 0; i < n; i++) {
        char x = i < a->nd ? a->d[i] : '0', y = i < b->nd ? b->d[i] : '0';
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

int sx_dec_cmp(const sx_dec *a, const sx_dec *b)
{
    int sa = a->nd ? (a->neg ? -1 : 1) : 0, sb = b->nd ? (b->neg ? -1 : 1) : 0;
    if (sa != sb)
        return sa < sb ? -1 : 1;
    int c = cmp_abs(a, b);
    return sa < 0 ? -c : c;
}

int sx_dec_is_integer(const sx_dec *a)
{
    return !a->nd || a->e >= 0;
}

/* a * b mod m without overflow (m below 2^127) */
static unsigned __int128 mulmod(unsigned __int128 a, unsigned __int128 b, unsigned __int128 m)
{
    unsigned __int128 r = 0;
    a %= m;
    while (b) {
        if (b & 1) {
            r += a;
            if (r >= m)
                r -= m;
        }
        a <<= 1;
        if (a >= m)
            a -= m;
        b >>= 1;
    }
    return r;
}

int sx_dec_multiple_of(const sx_dec *x, const sx_dec *m)
{
    if (!m->nd || m->neg)
        return 0;
    if (!x->nd)
        return 1;
    if (m->nd > 36)
        return -1;
    unsigned __int128 M = 0;
    for (size_t i = 0; i < m->nd; i++)
        M = M * 10 + (unsigned)(m->d[i] - '0');
    /* x/m = X * 10^(ex - em) / M; with ex < em it is X / (M * 10^k), which
     * needs 10 | X -- impossible, X has no trailing zero */
    if (x->e < m->e)
        return 0;
    unsigned __int128 r = 0;
    for (size_t i = 0; i < x->nd; i++)
        r = (r * 10 + (unsigned)(x->d[i] - '0')) % M;
    /* times 10^(ex - em) mod M by squaring */
    unsigned long long k = (unsigned long long)(x->e - m->e);
    unsigned __int128 b = 10 % M;
    while (k && r) {
        if (k & 1)
            r = mulmod(r, b, M);
        b = mulmod(b, b, M);
        k >>= 1;
    }
    return r == 0;
}

/* ---- writing ------------------------------------------------------------- */

typedef struct nbuf {
    char *p;
    size_t n, cap;
    int oom;
} nbuf;

static void nb_add(nbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void nb_json(nbuf *b, const json_t *v)
{
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    if (!t) {
        b->oom = 1;
        return;
    }
    nb_add(b, t, strlen(t));
    free(t);
}

static void write_value(nbuf *b, const json_t *v, const sx_numtab *t)
{
    size_t len;
    const char *txt;
    if (json_is_object(v)) {
        const char *k;
        size_t kl;
        json_t *x;
        int first = 1;
        nb_add(b, "{", 1);
        json_object_keylen_foreach((json_t *)v, k, kl, x) {
            if (!first)
                nb_add(b, ",", 1);
            first = 0;
            json_t *ks = json_stringn_nocheck(k, kl);
            if (!ks) {
                b->oom = 1;
                return;
            }
            nb_json(b, ks);
            json_decref(ks);
            nb_add(b, ":", 1);
            write_value(b, x, t);
        }
        nb_add(b, "}", 1);
    } else if (json_is_array(v)) {
        nb_add(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                nb_add(b, ",", 1);
            write_value(b, json_array_get(v, i), t);
        }
        nb_add(b, "]", 1);
    } else if ((txt = sx_numtab_find(t, v, &len))) {
        nb_add(b, txt, len);
    } else {
        nb_json(b, v);
    }
}

char *sx_numjson_dumps(const json_t *v, const sx_numtab *t)
{
    nbuf b = {0};
    write_value(&b, v, t);
    if (b.oom || !b.p) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
