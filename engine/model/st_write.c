/* Writing a safetensors file as a stream: header first, then the tensor
 * bytes as the caller produces them, so a model of many GB never has to be
 * held in memory.  A file only appears under its name once complete. */
#include "engine/model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sx_st_writer {
    int      fd;
    int      failed;
    uint64_t total, done;
    char    *path, *tmp;
};

uint64_t sx_st_writer_total(const sx_st_writer *w) { return w->total; }
uint64_t sx_st_writer_done(const sx_st_writer *w) { return w->done; }

static int write_all(sx_st_writer *w, const void *data, size_t len, sx_error *err)
{
    const char *p = data;
    while (len) {
        ssize_t k = write(w->fd, p, len > (1u << 30) ? (1u << 30) : len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->failed = 1;
            return sx_err_set(err, SX_EIO, "writing %s: %s", w->tmp,
                              k < 0 ? strerror(errno) : "short write");
        }
        p += k;
        len -= (size_t)k;
    }
    return SX_OK;
}

/* The JSON header, padded with spaces to a multiple of 8 bytes so the data
 * section (and every bf16/f32 tensor in it) stays aligned. */
static int make_header(const sx_st_desc *t, size_t n, char **out, size_t *out_len,
                       uint64_t *total, sx_error *err)
{
    json_t *root = json_object(), *meta = json_object();
    char *text = NULL;
    int rc = SX_OK;
    uint64_t off = 0;
    if (!root || !meta || json_object_set_new(meta, "format", json_string("pt")) ||
        json_object_set(root, "__metadata__", meta))
        goto nomem;
    for (size_t i = 0; i < n; i++) {
        size_t es = sx_st_dtype_size(t[i].dtype);
        if (!t[i].name || !es || t[i].ndim < 0 || t[i].ndim > SX_ST_MAX_DIMS ||
            !strcmp(t[i].name, "__metadata__") || json_object_get(root, t[i].name)) {
            rc = sx_err_set(err, SX_EINVAL, "tensor %zu (%.100s): bad or duplicate descriptor", i,
                            t[i].name ? t[i].name : "(null)");
            goto fail;
        }
        uint64_t bytes = es;
        json_t *shape = json_array(), *e = json_object();
        if (!shape || !e) {
            json_decref(shape);
            json_decref(e);
            goto nomem;
        }
        for (int d = 0; d < t[i].ndim; d++) {
            if (t[i].shape[d] < 0 ||
                __builtin_mul_overflow(bytes, (uint64_t)t[i].shape[d], &bytes)) {
                json_decref(shape);
                json_decref(e);
                rc = sx_err_set(err, SX_EINVAL, "tensor %s: bad shape", t[i].name);
                goto fail;
            }
            json_array_append_new(shape, json_integer(t[i].shape[d]));
        }
        json_t *offs = json_pack("[II]", (json_int_t)off, (json_int_t)(off + bytes));
        if (!offs || json_object_set_new(e, "dtype", json_string(sx_st_dtype_name(t[i].dtype))) ||
            json_object_set_new(e, "shape", shape) || json_object_set_new(e, "data_offsets", offs) ||
            json_object_set_new(root, t[i].name, e))
            goto nomem;
        off += bytes;
    }
    text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!text)
        goto nomem;
    size_t len = strlen(text), padded = (len + 7) & ~(size_t)7;
    char *p = realloc(text, padded + 1);
    if (!p)
        goto nomem;
    text = p;
    memset(text + len, ' ', padded - len);
    text[padded] = 0;
    *out = text;
    *out_len = padded;
    *total = off;
    text = NULL;
    goto fail;
nomem:
    rc = sx_err_set(err, SX_ENOMEM, "out of memory building a safetensors header");
fail:
    free(text);
    json_decref(meta);
    json_decref(root);
    return rc;
}

int sx_st_writer_open(const char *path, const sx_st_desc *t, size_t n, sx_st_writer **out,
                      sx_error *err)
{
    char *header = NULL;
    size_t hlen = 0;
    int rc;
    *out = NULL;
    sx_st_writer *w = calloc(1, sizeof *w);
    if (!w)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    w->fd = -1;
    size_t pl = strlen(path);
    if (!(w->path = strdup(path)) || !(w->tmp = malloc(pl + 5))) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    memcpy(w->tmp, path, pl);
    memcpy(w->tmp + pl, ".tmp", 5);
    if ((rc = make_header(t, n, &header, &hlen, &w->total, err)))
        goto fail;
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        rc = sx_err_set(err, SX_EIO, "cannot create %s: %s", w->tmp, strerror(errno));
        goto fail;
    }
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    if ((rc = write_all(w, le, 8, err)) || (rc = write_all(w, header, hlen, err)))
        goto fail;
    free(header);
    *out = w;
    return SX_OK;
fail:
    free(header);
    w->failed = 1;
    sx_st_writer_close(w, NULL);
    return rc;
}

int sx_st_writer_write(sx_st_writer *w, const void *data, size_t len, sx_error *err)
{
    if (w->failed)
        return sx_err_set(err, SX_EIO, "%s: an earlier write failed", w->tmp);
    if (len > w->total - w->done) {
        w->failed = 1;
        return sx_err_set(err, SX_EINVAL, "%s: %zu bytes more than the %llu declared", w->path,
                          len - (size_t)(w->total - w->done), (unsigned long long)w->total);
    }
    int rc = write_all(w, data, len, err);
    if (!rc)
        w->done += len;
    return rc;
}

int sx_st_writer_close(sx_st_writer *w, sx_error *err)
{
    int rc = SX_OK;
    if (!w)
        return SX_OK;
    if (!w->failed && w->done != w->total)
        rc = sx_err_set(err, SX_EINVAL, "%s: %llu of %llu data bytes written", w->path,
                        (unsigned long long)w->done, (unsigned long long)w->total);
    if (w->fd >= 0 && close(w->fd) && !rc && !w->failed)
        rc = sx_err_set(err, SX_EIO, "closing %s: %s", w->tmp, strerror(errno));
    if (!rc && !w->failed && rename(w->tmp, w->path))
        rc = sx_err_set(err, SX_EIO, "renaming %s: %s", w->tmp, strerror(errno));
    if ((rc || w->failed) && w->tmp && w->fd >= 0)
        unlink(w->tmp);
    if (!rc && w->failed)
        rc = sx_err_set(err, SX_EIO, "%s: not written (an earlier error)", w->path);
    free(w->path);
    free(w->tmp);
    free(w);
    return rc;
}
