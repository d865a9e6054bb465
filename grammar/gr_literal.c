/* How literal values are spelled in the grammar. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_pyjson.h"
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
        sx_py_float_repr(d, buf, sizeof buf);
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
