/* val_json: JSON value equality and hashing as JSON Schema defines them
 * (numbers compare by value, so 1 == 1.0; object member order is
 * irrelevant), exact number comparison, and an exact decimal multipleOf. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

/* Compares an integer with a double exactly, without rounding the integer
 * to a double (which loses bits above 2^53). */
static int cmp_int_real(json_int_t i, double d)
{
    if (d >= 9223372036854775808.0)
        return -1;
    if (d < -9223372036854775808.0)
        return 1;
    double t = trunc(d);
    json_int_t ti = (json_int_t)t;
    if (i < ti)
        return -1;
    if (i > ti)
        return 1;
    double f = d - t;
    return f > 0 ? -1 : f < 0 ? 1 : 0;
}

/* Exact decimal comparisons on number text: -2 when neither has text (or
 * on an allocation failure), so the caller takes jansson's values. */
static int text_cmp(const sx_numtab *t, const json_t *a, const json_t *b)
{
    if (!sx_numtab_find(t, a, NULL) && !sx_numtab_find(t, b, NULL))
        return -2;
    sx_dec x, y;
    int r = -2;
    if (sx_dec_from_json(t, a, &x) == 0) {
        if (sx_dec_from_json(t, b, &y) == 0) {
            r = sx_dec_cmp(&x, &y);
            sx_dec_free(&y);
        }
        sx_dec_free(&x);
    }
    return r;
}

int sxv_num_cmp(const sx_numtab *t, const json_t *a, const json_t *b)
{
    int r = text_cmp(t, a, b);
    if (r != -2)
        return r;
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return x < y ? -1 : x > y;
    }
    if (json_is_integer(a))
        return cmp_int_real(json_integer_value(a), json_real_value(b));
    if (json_is_integer(b))
        return -cmp_int_real(json_integer_value(b), json_real_value(a));
    double x = json_real_value(a), y = json_real_value(b);
    return x < y ? -1 : x > y;
}

int sxv_num_is_integer(const sx_numtab *t, const json_t *a)
{
    sx_dec x;
    if (sx_numtab_find(t, a, NULL) && sx_dec_from_json(t, a, &x) == 0) {
        int r = sx_dec_is_integer(&x);
        sx_dec_free(&x);
        return r;
    }
    if (json_is_integer(a))
        return 1;
    if (!json_is_real(a))
        return 0;
    double d = json_real_value(a);
    return isfinite(d) && trunc(d) == d;
}

int sxv_json_equal(const sx_numtab *t, const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return sxv_num_cmp(t, a, b) == 0;
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b),
                       json_string_length(a));
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return 0;
        for (size_t i = 0; i < n; i++)
            if (!sxv_json_equal(t, json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        for (void *it = json_object_iter((json_t *)a); it;
             it = json_object_iter_next((json_t *)a, it)) {
            const char *k = json_object_iter_key(it);
            size_t kl = json_object_iter_key_len(it);
            json_t *bv = json_object_getn(b, k, kl);
            if (!bv || !sxv_json_equal(t, json_object_iter_value(it), bv))
                return 0;
        }
        return 1;
    }
    default:
        return 1; /* true, false, null */
    }
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t sxv_json_hash(const json_t *a)
{
    switch (json_typeof(a)) {
    case JSON_INTEGER:
        return mix((uint64_t)json_integer_value(a));
    case JSON_REAL: {
        double d = json_real_value(a);
        /* equal numbers must hash alike: integral reals hash as integers */
        if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
            trunc(d) == d)
            return mix((uint64_t)(json_int_t)d);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return mix(bits);
    }
    case JSON_STRING:
        return mix(hash_bytes(json_string_value(a), json_string_length(a)) ^
                   1);
    case JSON_ARRAY: {
        uint64_t h = 2;
        for (size_t i = 0; i < json_array_size(a); i++)
            h = mix(h * 31 + sxv_json_hash(json_array_get(a, i)));
        return h;
    }
    case JSON_OBJECT: {
        uint64_t h = 3;
        for (void *it = json_object_iter((json_t *)a); it;
             it = json_object_iter_next((json_t *)a, it)) {
            uint64_t kh = hash_bytes(json_object_iter_key(it),
                                     json_object_iter_key_len(it));
            h += mix(kh ^ mix(sxv_json_hash(json_object_iter_value(it))));
        }
        return mix(h);
    }
    case JSON_TRUE:
        return 5;
    case JSON_FALSE:
        return 6;
    default:
        return 7;
    }
}

int sxv_json_depth_ok(const json_t *a, unsigned limit)
{
    if (json_is_array(a) || json_is_object(a)) {
        if (limit == 0)
            return 0;
        if (json_is_array(a)) {
            for (size_t i = 0; i < json_array_size(a); i++)
                if (!sxv_json_depth_ok(json_array_get(a, i), limit - 1))
                    return 0;
        } else {
            for (void *it = json_object_iter((json_t *)a); it;
                 it = json_object_iter_next((json_t *)a, it))
                if (!sxv_json_depth_ok(json_object_iter_value(it), limit - 1))
                    return 0;
        }
    }
    return 1;
}

/* ---- decimal view of numbers ------------------------------------------------
 * A double is taken at its shortest round-trip decimal form, the form strux
 * itself prints and the one a schema author wrote in nearly every case; on
 * that form multipleOf is exact: 0.0075 is a multiple of 0.0001, 0.3 of
 * 0.1, and 1e308 of 0.5. */

typedef struct dec {
    uint64_t m; /* no trailing decimal zeros unless 0 */
    int e;      /* value = m * 10^e */
} dec;

static int shortest(double d, char *buf, size_t cap)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*e", p - 1, d);
        if (strtod(buf, NULL) == d)
            return p;
    }
    return 17;
}

static void dec_norm(dec *d)
{
    if (d->m == 0) {
        d->e = 0;
        return;
    }
    while (d->m % 10 == 0) {
        d->m /= 10;
        d->e++;
    }
}

static void to_dec(const json_t *x, dec *d)
{
    if (json_is_integer(x)) {
        json_int_t v = json_integer_value(x);
        d->m = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
        d->e = 0;
        dec_norm(d);
        return;
    }
    char buf[64];
    int p = shortest(fabs(json_real_value(x)), buf, sizeof buf);
    /* buf is "D.DDDDe+XX" (or "De+XX" when p == 1) */
    uint64_t m = 0;
    const char *s = buf;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            m = m * 10 + (uint64_t)(*s - '0');
    int e = *s == 'e' ? atoi(s + 1) : 0;
    d->m = m;
    d->e = e - (p - 1);
    dec_norm(d);
}

int sxv_num_multiple_of(const sx_numtab *t, const json_t *x, const json_t *m)
{
    if (sx_numtab_find(t, x, NULL) || sx_numtab_find(t, m, NULL)) {
        sx_dec X, M;
        int r = -1;
        if (sx_dec_from_json(t, x, &X) == 0) {
            if (sx_dec_from_json(t, m, &M) == 0) {
                r = sx_dec_multiple_of(&X, &M);
                sx_dec_free(&M);
            }
            sx_dec_free(&X);
        }
        if (r >= 0)
            return r;
    }
    if (json_is_integer(x) && json_is_integer(m)) {
        json_int_t a = json_integer_value(x), b = json_integer_value(m);
        return b > 0 && a % b == 0;
    }
    if (json_is_real(x) && !isfinite(json_real_value(x)))
        return 0;
    dec X, M;
    to_dec(x, &X);
    to_dec(m, &M);
    if (X.m == 0)
        return 1;
    if (M.m == 0)
        return 0;
    int k = X.e - M.e;
    if (k >= 0) {
        /* X * 10^k mod M, with every product below 2^64 since M < 2^60 */
        if (M.m >= (1ull << 59)) {
            /* huge integer divisor: fall back to 128-bit steps */
            unsigned __int128 r = X.m % M.m;
            for (int i = 0; i < k && r; i++)
                r = (r * 10) % M.m;
            return r == 0;
        }
        uint64_t r = X.m % M.m;
        for (int i = 0; i < k && r; i++)
            r = (r * 10) % M.m;
        return r == 0;
    }
    /* X must be divisible by M * 10^-k */
    uint64_t d = M.m;
    for (int i = 0; i < -k; i++) {
        if (d > X.m / 10)
            return 0; /* divisor exceeds X, which is non-zero */
        d *= 10;
    }
    return X.m % d == 0;
}

void sxv_num_str(const sx_numtab *t, const json_t *a, char *out, size_t cap)
{
    size_t len;
    const char *txt = sx_numtab_find(t, a, &len);
    if (txt) {
        snprintf(out, cap, "%.*s%s", (int)(len + 4 > cap ? cap - 4 : len), txt,
                 len + 4 > cap ? "..." : "");
        return;
    }
    if (json_is_integer(a)) {
        snprintf(out, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(a));
        return;
    }
    double d = json_real_value(a);
    char buf[64];
    int p = shortest(d, buf, sizeof buf);
    snprintf(out, cap, "%.*g", p, d);
}
