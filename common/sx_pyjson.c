/* JSON text exactly as Python's json.dumps(v, ensure_ascii=False) writes
 * it: MaskBench tokenizes instances in that spelling. */
#include "common/sx_pyjson.h"

#include "common/sx_numjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python's repr of a float, which is how MaskBench and most JSON writers
 * spell reals: shortest round-trip digits, exponent form outside
 * [1e-4, 1e16). */
void sx_py_float_repr(double d, char *buf, size_t cap)
{
    char tmp[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    /* tmp = d.ddde[+-]XX; split mantissa digits and exponent */
    char digits[32];
    int nd = 0, exp10;
    const char *p = tmp;
    int neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    digits[nd] = '\0';
    exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        digits[--nd] = '\0';
    size_t k = 0;
    if (neg)
        buf[k++] = '-';
    if (exp10 < -4 || exp10 >= 16) {
        buf[k++] = digits[0];
        if (nd > 1) {
            buf[k++] = '.';
            for (int i = 1; i < nd; i++)
                buf[k++] = digits[i];
        }
        snprintf(buf + k, cap - k, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
        return;
    }
    if (exp10 < 0) {
        buf[k++] = '0';
        buf[k++] = '.';
        for (int i = 0; i < -exp10 - 1; i++)
            buf[k++] = '0';
        for (int i = 0; i < nd; i++)
            buf[k++] = digits[i];
    } else {
        for (int i = 0; i <= exp10; i++)
            buf[k++] = i < nd ? digits[i] : '0';
        buf[k++] = '.';
        if (nd > exp10 + 1)
            for (int i = exp10 + 1; i < nd; i++)
                buf[k++] = digits[i];
        else
            buf[k++] = '0';
    }
    buf[k] = '\0';
}


typedef struct pj_buf {
    char *b;
    size_t n, cap;
    int oom;
    const sx_numtab *nums; /* integers beyond int64 written as read */
} pj_buf;

static void pj_put(pj_buf *w, const char *s, size_t n)
{
    if (w->oom || n == 0)
        return;
    if (w->n + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        while (cap < w->n + n + 1)
            cap *= 2;
        char *nb = realloc(w->b, cap);
        if (!nb) {
            w->oom = 1;
            return;
        }
        w->b = nb;
        w->cap = cap;
    }
    memcpy(w->b + w->n, s, n);
    w->n += n;
    w->b[w->n] = '\0';
}

static void pj_str(pj_buf *w, const char *s, size_t len)
{
    pj_put(w, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        switch (ch) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (ch < 0x20) {
                snprintf(u, sizeof u, "\\u%04x", ch);
                esc = u;
            }
        }
        if (esc) {
            pj_put(w, s + i - run, run);
            run = 0;
            pj_put(w, esc, strlen(esc));
        } else {
            run++;
        }
    }
    pj_put(w, s + len - run, run);
    pj_put(w, "\"", 1);
}

static int pj_value(pj_buf *w, const json_t *v, int depth)
{
    char buf[64];
    if (depth > 10000)
        return -1;
    switch (json_typeof(v)) {
    case JSON_NULL: pj_put(w, "null", 4); return 0;
    case JSON_TRUE: pj_put(w, "true", 4); return 0;
    case JSON_FALSE: pj_put(w, "false", 5); return 0;
    case JSON_INTEGER:
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        pj_put(w, buf, strlen(buf));
        return 0;
    case JSON_REAL: {
        /* Python reads an integer of any length exactly and writes its
         * digits back: so do we, from the text the reader kept */
        size_t tl = 0;
        const char *tx = w->nums ? sx_numtab_find(w->nums, v, &tl) : NULL;
        if (tx && tl && tl == strspn(tx, "-0123456789") && tl < 4096) {
            pj_put(w, tx, tl);
            return 0;
        }
        double d = json_real_value(v);
        if (isinf(d))
            snprintf(buf, sizeof buf, d > 0 ? "Infinity" : "-Infinity");
        else if (isnan(d))
            snprintf(buf, sizeof buf, "NaN");
        else
            sx_py_float_repr(d, buf, sizeof buf);
        pj_put(w, buf, strlen(buf));
        return 0;
    }
    case JSON_STRING:
        pj_str(w, json_string_value(v), json_string_length(v));
        return 0;
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        pj_put(w, "[", 1);
        json_array_foreach((json_t *)v, i, x) {
            if (i)
                pj_put(w, ", ", 2);
            if (pj_value(w, x, depth + 1))
                return -1;
        }
        pj_put(w, "]", 1);
        return 0;
    }
    case JSON_OBJECT: {
        const char *k;
        size_t klen;
        json_t *x;
        void *tmp;
        int first = 1;
        pj_put(w, "{", 1);
        json_object_keylen_foreach_safe((json_t *)v, tmp, k, klen, x) {
            if (!first)
                pj_put(w, ", ", 2);
            first = 0;
            pj_str(w, k, klen);
            pj_put(w, ": ", 2);
            if (pj_value(w, x, depth + 1))
                return -1;
        }
        pj_put(w, "}", 1);
        return 0;
    }
    }
    return -1;
}

char *sx_pyjson_dumps(const json_t *v, size_t *len)
{
    return sx_pyjson_dumps_nums(v, NULL, len);
}

char *sx_pyjson_dumps_nums(const json_t *v, const sx_numtab *nums, size_t *len)
{
    pj_buf w = {0};
    w.nums = nums;
    pj_put(&w, "", 0);
    if (pj_value(&w, v, 0) || w.oom) {
        free(w.b);
        return NULL;
    }
    if (!w.b) {
        w.b = calloc(1, 1);
        if (!w.b)
            return NULL;
    }
    if (len)
        *len = w.n;
    return w.b;
}
