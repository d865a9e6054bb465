/* val_uri: RFC 3986 reference resolution for $id and $ref, and percent
 * decoding of fragments. */
#include "common/sx_text.h"
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

typedef struct uri_parts {
    const char *scheme, *auth, *path, *query, *frag;
    size_t nscheme, nauth, npath, nquery, nfrag;
    int has_scheme, has_auth, has_query, has_frag;
} uri_parts;

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static void uri_split(const char *s, uri_parts *u)
{
    memset(u, 0, sizeof *u);
    const char *p = s;
    if (is_alpha(*p)) {
        const char *q = p + 1;
        while (is_alpha(*q) || (*q >= '0' && *q <= '9') || *q == '+' ||
               *q == '-' || *q == '.')
            q++;
        if (*q == ':') {
            u->has_scheme = 1;
            u->scheme = p;
            u->nscheme = (size_t)(q - p);
            p = q + 1;
        }
    }
    if (p[0] == '/' && p[1] == '/') {
        p += 2;
        u->has_auth = 1;
        u->auth = p;
        while (*p && *p != '/' && *p != '?' && *p != '#')
            p++;
        u->nauth = (size_t)(p - u->auth);
    }
    u->path = p;
    while (*p && *p != '?' && *p != '#')
        p++;
    u->npath = (size_t)(p - u->path);
    if (*p == '?') {
        u->has_query = 1;
        u->query = ++p;
        while (*p && *p != '#')
            p++;
        u->nquery = (size_t)(p - u->query);
    }
    if (*p == '#') {
        u->has_frag = 1;
        u->frag = p + 1;
        u->nfrag = strlen(p + 1);
    }
}

static void drop_last_segment(sxv_buf *b, size_t start)
{
    if (b->oom)
        return;
    size_t k = b->len;
    while (k > start && b->p[k - 1] != '/')
        k--;
    if (k > start)
        k--;
    b->len = k;
    b->p[k] = '\0';
}

/* RFC 3986 5.2.4, appending the result to b. */
static void remove_dots(sxv_buf *b, const char *src, size_t n)
{
    char *in = malloc(n + 1);
    if (!in) {
        b->oom = 1;
        return;
    }
    memcpy(in, src, n);
    in[n] = '\0';
    size_t start = b->len, i = 0;
    while (i < n) {
        const char *p = in + i;
        size_t left = n - i;
        if (left >= 3 && !memcmp(p, "../", 3)) {
            i += 3;
        } else if (left >= 2 && !memcmp(p, "./", 2)) {
            i += 2;
        } else if (left >= 3 && !memcmp(p, "/./", 3)) {
            i += 2;
        } else if (left == 2 && !memcmp(p, "/.", 2)) {
            i = n - 1;
            in[i] = '/';
        } else if (left >= 4 && !memcmp(p, "/../", 4)) {
            i += 3;
            drop_last_segment(b, start);
        } else if (left == 3 && !memcmp(p, "/..", 3)) {
            i = n - 1;
            in[i] = '/';
            drop_last_segment(b, start);
        } else if ((left == 1 && p[0] == '.') ||
                   (left == 2 && !memcmp(p, "..", 2))) {
            i = n;
        } else {
            size_t k = p[0] == '/' ? 1 : 0;
            while (k < left && p[k] != '/')
                k++;
            sxv_buf_add(b, p, k);
            i += k;
        }
    }
    free(in);
}

int sxv_uri_resolve(const char *base, const char *ref, char **out)
{
    uri_parts B, R;
    sxv_buf b = {0};
    uri_split(base ? base : "", &B);
    uri_split(ref, &R);
    *out = NULL;

    if (R.has_scheme) {
        sxv_buf_add(&b, R.scheme, R.nscheme);
        sxv_buf_addc(&b, ':');
        if (R.has_auth) {
            sxv_buf_add(&b, "//", 2);
            sxv_buf_add(&b, R.auth, R.nauth);
        }
        remove_dots(&b, R.path, R.npath);
        if (R.has_query) {
            sxv_buf_addc(&b, '?');
            sxv_buf_add(&b, R.query, R.nquery);
        }
    } else {
        if (B.has_scheme) {
            sxv_buf_add(&b, B.scheme, B.nscheme);
            sxv_buf_addc(&b, ':');
        }
        if (R.has_auth) {
            sxv_buf_add(&b, "//", 2);
            sxv_buf_add(&b, R.auth, R.nauth);
            remove_dots(&b, R.path, R.npath);
            if (R.has_query) {
                sxv_buf_addc(&b, '?');
                sxv_buf_add(&b, R.query, R.nquery);
            }
        } else {
            if (B.has_auth) {
                sxv_buf_add(&b, "//", 2);
                sxv_buf_add(&b, B.auth, B.nauth);
            }
            if (R.npath == 0) {
                sxv_buf_add(&b, B.path, B.npath);
                if (R.has_query) {
                    sxv_buf_addc(&b, '?');
                    sxv_buf_add(&b, R.query, R.nquery);
                } else if (B.has_query) {
                    sxv_buf_addc(&b, '?');
                    sxv_buf_add(&b, B.query, B.nquery);
                }
            } else {
                if (R.path[0] == '/') {
                    remove_dots(&b, R.path, R.npath);
                } else {
                    sxv_buf m = {0};
                    if (B.has_auth && B.npath == 0) {
                        sxv_buf_addc(&m, '/');
                    } else {
                        size_t k = B.npath;
                        while (k > 0 && B.path[k - 1] != '/')
                            k--;
                        sxv_buf_add(&m, B.path, k);
                    }
                    sxv_buf_add(&m, R.path, R.npath);
                    if (m.oom)
                        b.oom = 1;
                    else
                        remove_dots(&b, m.p, m.len);
                    sxv_buf_free(&m);
                }
                if (R.has_query) {
                    sxv_buf_addc(&b, '?');
                    sxv_buf_add(&b, R.query, R.nquery);
                }
            }
        }
    }
    if (R.has_frag) {
        sxv_buf_addc(&b, '#');
        sxv_buf_add(&b, R.frag, R.nfrag);
    }
    sxv_buf_add(&b, "", 0); /* ensure a string even when empty */
    if (b.oom) {
        sxv_buf_free(&b);
        return SX_ENOMEM;
    }
    *out = b.p;
    return SX_OK;
}


int sxv_pct_decode(sxv_buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            sxv_buf_addc(b, s[i]);
            continue;
        }
        if (i + 2 >= n)
            return -1;
        int h = sx_hexval(s[i + 1]), l = sx_hexval(s[i + 2]);
        if (h < 0 || l < 0)
            return -1;
        sxv_buf_addc(b, (char)(h * 16 + l));
        i += 2;
    }
    return 0;
}
