/* How literal values are spelled in the grammar. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_pyjson.h"
#include "grammar/ir/ir.h"

char *gr_encode_string(const char *s, size_t len, size_t *out_len)
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

int gr_decimal(double d, int64_t *m, int *e)
{
    char buf[64];
    int p = 17;
    d = fabs(d);
    if (!isfinite(d))
        return -1;
    for (int q = 1; q <= 17; q++) {
        snprintf(buf, sizeof buf, "%.*e", q - 1, d);
        if (strtod(buf, NULL) == d) {
            p = q;
            break;
        }
    }
    snprintf(buf, sizeof buf, "%.*e", p - 1, d);
    int64_t v = 0;
    const char *s = buf;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            v = v * 10 + (*s - '0');
    int x = (*s == 'e' ? atoi(s + 1) : 0) - (p - 1);
    while (v && v % 10 == 0) {
        v /= 10;
        x++;
    }
    *m = v;
    *e = v ? x : 0;
    return 0;
}

uint64_t gr_json_hash(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_NULL:
        return GR_H_NULL;
    case JSON_TRUE:
        return GR_H_TRUE;
    case JSON_FALSE:
        return GR_H_FALSE;
    case JSON_INTEGER:
    case JSON_REAL:
        return gr_hash_num(json_number_value(v));
    case JSON_STRING: {
        const char *s = json_string_value(v);
        uint64_t h = GR_FNV_BASIS;
        for (size_t i = 0; i < json_string_length(v); i++)
            h = gr_fnv(h, (uint8_t)s[i]);
        return gr_hash_str(h);
    }
    case JSON_ARRAY: {
        uint64_t acc = 0;
        for (size_t i = 0; i < json_array_size(v); i++)
            acc = gr_hash_arr_step(acc, gr_json_hash(json_array_get(v, i)));
        return gr_hash_arr(acc, (int64_t)json_array_size(v));
    }
    case JSON_OBJECT: {
        uint64_t sum = 0;
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            size_t kl;
            char *e = gr_encode_string(k, strlen(k), &kl);
            uint64_t kh = e ? gr_key_hash((const uint8_t *)e, kl) : 0;
            free(e);
            sum += gr_hash_member(kh, gr_json_hash(x));
        }
        return gr_hash_obj(sum);
    }
    }
    return 0;
}

uint64_t gr_text_hash(const char *text, size_t len, int *ok)
{
    json_error_t je;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    uint64_t h = 0;
    *ok = 1;
    if (v) {
        h = gr_json_hash(v);
        json_decref(v);
    } else if (len && len < 64 && (text[0] == '-' || (text[0] >= '0' && text[0] <= '9'))) {
        /* an integer past jansson's range: by its double, as the matcher */
        char buf[64];
        memcpy(buf, text, len);
        buf[len] = '\0';
        h = gr_hash_num(strtod(buf, NULL));
    } else {
        *ok = 0;
    }
    return h;
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

int gr_spellings(const json_t *v, char **out, int *n, int cap)
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
        sx_py_float_repr(d, buf, sizeof buf);
        if ((rc = add(out, n, cap, buf, strlen(buf))))
            return rc;
        if (d == floor(d) && fabs(d) < 9e15) {
            snprintf(buf, sizeof buf, "%lld", (long long)d);
            return add(out, n, cap, buf, strlen(buf));
        }
        if (d == floor(d)) {
            /* an integral value past 2^53 (12000000000000000000000, read
             * as 1.2e22): its integer digits, those of the decimal the
             * schema wrote (the shortest that reads back as d; the schema
             * reader admits only numbers a double holds that way) -- the
             * validator compares the instance's text by value */
            int64_t m;
            int e;
            if (gr_decimal(d, &m, &e) || e < 0 || e > 400)
                return SX_OK;
            size_t k = (size_t)snprintf(buf, sizeof buf, "%s%lld", d < 0 ? "-" : "",
                                        (long long)m);
            char *t = malloc(k + (size_t)e + 1);
            if (!t)
                return SX_ENOMEM;
            memcpy(t, buf, k);
            memset(t + k, '0', (size_t)e);
            t[k + (size_t)e] = '\0';
            rc = add(out, n, cap, t, k + (size_t)e);
            free(t);
            return rc;
        }
        return SX_OK;
    }
    case JSON_STRING: {
        size_t len;
        char *e = gr_encode_string(json_string_value(v), json_string_length(v), &len);
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
