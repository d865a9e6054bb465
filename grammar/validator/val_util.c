/* val_util: the validator's arena, string buffer, hash map and UTF-8
 * helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

/* ---- arena ---------------------------------------------------------------- */

struct sxv_block {
    sxv_block *next;
    size_t used, cap;
    max_align_t data[];
};

#define SXV_BLOCK 16384

void *sxv_alloc(sxv_arena *a, size_t n)
{
    const size_t al = sizeof(max_align_t);
    n = (n + al - 1) / al * al;
    if (n == 0)
        n = al;
    sxv_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > SXV_BLOCK ? n : SXV_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        /* a big request gets its own block behind the current one, so the
         * current block's free space is not wasted */
        if (a->head && n > SXV_BLOCK) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *sxv_strndup(sxv_arena *a, const char *s, size_t n)
{
    char *p = sxv_alloc(a, n + 1);
    if (p && n)
        memcpy(p, s, n);
    return p;
}

void sxv_arena_free(sxv_arena *a)
{
    sxv_block *b = a->head;
    while (b) {
        sxv_block *nx = b->next;
        free(b);
        b = nx;
    }
    a->head = NULL;
}

/* ---- buffer --------------------------------------------------------------- */

static int buf_grow(sxv_buf *b, size_t extra)
{
    if (b->oom)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) {
            b->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void sxv_buf_add(sxv_buf *b, const char *s, size_t n)
{
    if (buf_grow(b, n))
        return;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sxv_buf_adds(sxv_buf *b, const char *s)
{
    sxv_buf_add(b, s, strlen(s));
}

void sxv_buf_addc(sxv_buf *b, char c)
{
    sxv_buf_add(b, &c, 1);
}

void sxv_buf_addf(sxv_buf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        sxv_buf_add(b, tmp, (size_t)n);
        return;
    }
    if (buf_grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sxv_buf_ptrseg(sxv_buf *b, const char *seg, size_t n)
{
    sxv_buf_addc(b, '/');
    for (size_t i = 0; i < n; i++) {
        if (seg[i] == '~')
            sxv_buf_add(b, "~0", 2);
        else if (seg[i] == '/')
            sxv_buf_add(b, "~1", 2);
        else
            sxv_buf_addc(b, seg[i]);
    }
}

void sxv_buf_free(sxv_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

/* ---- hash map ------------------------------------------------------------- */

struct sxv_slot {
    char *key; /* NULL: empty */
    size_t klen;
    uint64_t hash;
    void *val;
};

static uint64_t hash_bytes(const void *k, size_t n)
{
    const unsigned char *p = k;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static sxv_slot *map_find(const sxv_map *m, const void *key, size_t klen,
                          uint64_t h)
{
    size_t mask = m->cap - 1, i = (size_t)h & mask;
    for (;;) {
        sxv_slot *s = &m->slots[i];
        if (!s->key)
            return s;
        if (s->hash == h && s->klen == klen && !memcmp(s->key, key, klen))
            return s;
        i = (i + 1) & mask;
    }
}

static int map_grow(sxv_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    sxv_slot *ns = calloc(cap, sizeof *ns);
    if (!ns)
        return -1;
    sxv_map nm = {ns, cap, m->n};
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            *map_find(&nm, m->slots[i].key, m->slots[i].klen,
                      m->slots[i].hash) = m->slots[i];
    free(m->slots);
    *m = nm;
    return 0;
}

int sxv_map_put(sxv_map *m, const void *key, size_t klen, void *val)
{
    if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m))
        return SX_ENOMEM;
    uint64_t h = hash_bytes(key, klen);
    sxv_slot *s = map_find(m, key, klen, h);
    if (s->key) {
        s->val = val;
        return SX_OK;
    }
    s->key = malloc(klen ? klen : 1);
    if (!s->key)
        return SX_ENOMEM;
    memcpy(s->key, key, klen);
    s->klen = klen;
    s->hash = h;
    s->val = val;
    m->n++;
    return SX_OK;
}

void *sxv_map_get(const sxv_map *m, const void *key, size_t klen)
{
    if (!m->cap)
        return NULL;
    sxv_slot *s = map_find(m, key, klen, hash_bytes(key, klen));
    return s->key ? s->val : NULL;
}

void sxv_map_free(sxv_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

/* ---- UTF-8 ---------------------------------------------------------------- */

long sxv_utf8_next(const char *s, size_t len, size_t *i)
{
    const unsigned char *p = (const unsigned char *)s + *i;
    size_t left = len - *i;
    if (!left)
        return -1;
    unsigned c = p[0];
    if (c < 0x80) {
        *i += 1;
        return (long)c;
    }
    size_t n;
    unsigned long cp, min;
    if ((c & 0xe0) == 0xc0) {
        n = 2;
        cp = c & 0x1f;
        min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        cp = c & 0x0f;
        min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        cp = c & 0x07;
        min = 0x10000;
    } else {
        return -1;
    }
    if (left < n)
        return -1;
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (p[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *i += n;
    return (long)cp;
}

size_t sxv_utf8_count(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80)
            n++;
    return n;
}

int sxv_utf8_valid(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len)
        if (sxv_utf8_next(s, len, &i) < 0)
            return 0;
    return 1;
}

void sxv_utf8_put(sxv_buf *b, unsigned long cp)
{
    char t[4];
    if (cp < 0x80) {
        t[0] = (char)cp;
        sxv_buf_add(b, t, 1);
    } else if (cp < 0x800) {
        t[0] = (char)(0xc0 | (cp >> 6));
        t[1] = (char)(0x80 | (cp & 0x3f));
        sxv_buf_add(b, t, 2);
    } else if (cp < 0x10000) {
        t[0] = (char)(0xe0 | (cp >> 12));
        t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[2] = (char)(0x80 | (cp & 0x3f));
        sxv_buf_add(b, t, 3);
    } else {
        t[0] = (char)(0xf0 | (cp >> 18));
        t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[3] = (char)(0x80 | (cp & 0x3f));
        sxv_buf_add(b, t, 4);
    }
}
