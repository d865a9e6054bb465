/* How literal values are spelled in the grammar. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/gr_compile_internal.h"

char *gc_encode_string(const char *s, size_t len, size_t *out_len)
{
    char *o = malloc(len * 6 + 1);
    size_t k = 0;
    if (!o)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '"': o[k++] = '\\'; o[k++] = '"'; break;
        case '\\': o[k++] = '\\'; o[k++] = '\\'; break;
        case '\n': o[k++] = '\\'; o[k++] = 'n'; break;
        case '\r': o[k++] = '\\'; o[k++] = 'r'; break;
        case '\t': o[k++] = '\\'; o[k++] = 't'; break;
        case '\b': o[k++] = '\\'; o[k++] = 'b'; break;
        case '\f': o[k++] = '\\'; o[k++] = 'f'; break;
        default:
            if (ch < 0x20)
                k += (size_t)sprintf(o + k, "\\u%04x", ch);
            else
                o[k++] = (char)ch;
        }
    }
    o[k] = '\0';
    *out_len = k;
    return o;
}

/* Python's repr of a float, which is how MaskBench and most JSON writers
 * spell reals: shortest round-trip digits, exponent form outside
 * [1e-4, 1e16). */
static void py_float_repr(double d, char *buf, size_t cap)
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

static int add(char **out, int *n, int cap, const char *s, size_t len)
{
    if (*n >= cap)
        return SX_ELIMIT;
    char *d = malloc(len + 1);
    if (!d)
        return SX_ENOMEM;
    memcpy(d, s, len);
    d[len] = '\0';
    out[(*n)++] = d;
    return SX_OK;
}

int gc_spellings(const json_t *v, char **out, int *n, int cap)
{
    char buf[80];
    switch (json_typeof(v)) {
    case JSON_NULL:
        return add(out, n, cap, "null", 4);
    case JSON_TRUE:
        return add(out, n, cap, "true", 4);
    case JSON_FALSE:
        return add(out, n, cap, "false", 5);
    case JSON_INTEGER: {
        int rc;
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        if ((rc = add(out, n, cap, buf, strlen(buf))))
            return rc;
        strcat(buf, ".0");
        return add(out, n, cap, buf, strlen(buf));
    }
    case JSON_REAL: {
        double d = json_real_value(v);
        int rc;
        if (!isfinite(d))
            return SX_EINVAL;
        py_float_repr(d, buf, sizeof buf);
        if ((rc = add(out, n, cap, buf, strlen(buf))))
            return rc;
        if (d == floor(d) && fabs(d) < 9e15) {
            snprintf(buf, sizeof buf, "%lld", (long long)d);
            return add(out, n, cap, buf, strlen(buf));
        }
        return SX_OK;
    }
    case JSON_STRING: {
        size_t len;
        char *e = gc_encode_string(json_string_value(v), json_string_length(v), &len);
        if (!e)
            return SX_ENOMEM;
        char *q = malloc(len + 3);
        if (!q) {
            free(e);
            return SX_ENOMEM;
        }
        q[0] = '"';
        memcpy(q + 1, e, len);
        q[len + 1] = '"';
        q[len + 2] = '\0';
        free(e);
        int rc = add(out, n, cap, q, len + 2);
        free(q);
        return rc;
    }
    default:
        return SX_EINVAL;
    }
}
