/* Reading one safetensors file: the header is untrusted input, so every
 * length, offset and shape is checked before any pointer into the data
 * section is formed. */
#include "engine/model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct sx_st_file {
    char                *path;
    const unsigned char *base;
    size_t               size;
    void                *map; /* non-NULL when sx_st_open mapped the file */
    size_t               n;
    sx_st_tensor        *t;
    char                *names; /* all tensor names, back to back */
};

/* indexed by SX_ST_*; I32 and F8_E4M3 carry quantised checkpoints (AWQ's
 * packed nibbles, FP8 weights), which only model_quant.c reads */
static const char *const dtype_names[SX_ST_NDTYPES] = {"BF16", "F16", "F32", "I32", "F8_E4M3"};
static const size_t dtype_sizes[SX_ST_NDTYPES] = {2, 2, 4, 4, 1};

const char *sx_st_dtype_name(int dtype)
{
    return dtype >= 0 && dtype < SX_ST_NDTYPES ? dtype_names[dtype] : "?";
}

size_t sx_st_dtype_size(int dtype)
{
    return dtype >= 0 && dtype < SX_ST_NDTYPES ? dtype_sizes[dtype] : 0;
}

void sx_st_shape_format(const int64_t *shape, int ndim, char *buf, size_t cap)
{
    size_t k = 0;
    if (!cap)
        return;
    buf[0] = 0;
    k += (size_t)snprintf(buf + k, cap - k, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < cap)
        snprintf(buf + k, cap - k, "]");
}

void sx_st_close(sx_st_file *f)
{
    if (!f)
        return;
    if (f->map)
        munmap(f->map, f->size);
    free(f->t);
    free(f->names);
    free(f->path);
    free(f);
}

const char *sx_st_path(const sx_st_file *f) { return f->path; }
size_t sx_st_count(const sx_st_file *f) { return f->n; }

const sx_st_tensor *sx_st_at(const sx_st_file *f, size_t i)
{
    return i < f->n ? &f->t[i] : NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const sx_st_tensor *)a)->name, ((const sx_st_tensor *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const sx_st_tensor *x = *(const sx_st_tensor *const *)a, *y = *(const sx_st_tensor *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

const sx_st_tensor *sx_st_find(const sx_st_file *f, const char *name)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, f->t[mid].name);
        if (!c)
            return &f->t[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static int int_value(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* Fills t from one header entry; data_size is the length of the data
 * section, data_start its offset in the file. */
static int parse_entry(const char *label, const char *name, const json_t *v, uint64_t data_start,
                       uint64_t data_size, sx_st_tensor *t, sx_error *err)
{
    if (!json_is_object(v))
        return sx_err_set(err, SX_EFORMAT, "%s: tensor %s: header entry is not an object", label,
                          name);
    const json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
                 *off = json_object_get(v, "data_offsets");
    if (!json_is_string(dt))
        return sx_err_set(err, SX_EFORMAT, "%s: tensor %s: \"dtype\" missing or not a string",
                          label, name);
    const char *d = json_string_value(dt);
    t->dtype = -1;
    for (int i = 0; i < SX_ST_NDTYPES; i++)
        if (!strcmp(d, dtype_names[i]))
            t->dtype = i;
    if (t->dtype < 0)
        return sx_err_set(err, SX_EFORMAT,
                          "%s: tensor %s: dtype %.40s is not supported (BF16, F16, F32, I32 or "
                          "F8_E4M3)",
                          label, name, d);
    if (!json_is_array(sh) || json_array_size(sh) > SX_ST_MAX_DIMS)
        return sx_err_set(err, SX_EFORMAT,
                          "%s: tensor %s: \"shape\" missing, not an array or over %d dimensions",
                          label, name, SX_ST_MAX_DIMS);
    t->ndim = (int)json_array_size(sh);
    uint64_t elems = 1;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t dim;
        if (int_value(json_array_get(sh, (size_t)i), &dim) || dim > INT64_MAX)
            return sx_err_set(err, SX_EFORMAT,
                              "%s: tensor %s: shape[%d] is not a non-negative integer", label,
                              name, i);
        t->shape[i] = (int64_t)dim;
        if (__builtin_mul_overflow(elems, dim, &elems))
            return sx_err_set(err, SX_EFORMAT, "%s: tensor %s: shape overflows", label, name);
    }
    uint64_t begin, end, need;
    if (!json_is_array(off) || json_array_size(off) != 2 ||
        int_value(json_array_get(off, 0), &begin) || int_value(json_array_get(off, 1), &end) ||
        begin > end)
        return sx_err_set(err, SX_EFORMAT,
                          "%s: tensor %s: \"data_offsets\" must be [begin, end] with "
                          "0 <= begin <= end",
                          label, name);
    if (end > data_size)
        return sx_err_set(err, SX_EFORMAT,
                          "%s: tensor %s: data_offsets [%llu, %llu] run past the data section "
                          "(%llu bytes; file truncated?)",
                          label, name, (unsigned long long)begin, (unsigned long long)end,
                          (unsigned long long)data_size);
    char shape[160];
    sx_st_shape_format(t->shape, t->ndim, shape, sizeof shape);
    if (__builtin_mul_overflow(elems, (uint64_t)dtype_sizes[t->dtype], &need) ||
        need != end - begin)
        return sx_err_set(err, SX_EFORMAT,
                          "%s: tensor %s: shape %s of %s needs %llu bytes but data_offsets "
                          "[%llu, %llu] span %llu",
                          label, name, shape, d, (unsigned long long)elems * dtype_sizes[t->dtype],
                          (unsigned long long)begin, (unsigned long long)end,
                          (unsigned long long)(end - begin));
    t->offset = data_start + begin;
    t->nbytes = need;
    return SX_OK;
}

static int check_metadata(const char *label, const json_t *v, sx_error *err)
{
    const char *k;
    const json_t *x;
    if (!json_is_object(v))
        return sx_err_set(err, SX_EFORMAT, "%s: \"__metadata__\" is not an object", label);
    json_object_foreach((json_t *)v, k, x)
        if (!json_is_string(x))
            return sx_err_set(err, SX_EFORMAT, "%s: __metadata__ value \"%.60s\" is not a string",
                              label, k);
    return SX_OK;
}

/* Tensors must not share bytes: a writer bug or a crafted file could
 * otherwise alias two weights. */
static int check_overlap(const char *label, sx_st_file *f, sx_error *err)
{
    int rc = SX_OK;
    const sx_st_tensor **order = malloc((f->n ? f->n : 1) * sizeof *order);
    if (!order)
        return sx_err_set(err, SX_ENOMEM, "%s: out of memory", label);
    size_t m = 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->t[i].nbytes)
            order[m++] = &f->t[i];
    qsort(order, m, sizeof *order, by_offset);
    for (size_t i = 1; i < m; i++)
        if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes) {
            rc = sx_err_set(err, SX_EFORMAT, "%s: tensors %s and %s overlap in the data section",
                            label, order[i - 1]->name, order[i]->name);
            break;
        }
    free(order);
    return rc;
}

int sx_st_parse(const void *buf, size_t size, const char *label, sx_st_file **out, sx_error *err)
{
    const unsigned char *p = buf;
    json_t *root = NULL;
    sx_st_file *f = NULL;
    int rc;
    *out = NULL;
    if (!label)
        label = "<memory>";
    if (size < 8)
        return sx_err_set(err, SX_EFORMAT,
                          "%s: %zu bytes is too short for a safetensors file (truncated?)", label,
                          size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | p[i];
    if (hlen < 2 || hlen > SX_ST_MAX_HEADER)
        return sx_err_setp(err, SX_EFORMAT, NULL, 0,
                           "%s: header length %llu is out of range (2 to %u)", label,
                           (unsigned long long)hlen, SX_ST_MAX_HEADER);
    if (hlen > size - 8)
        return sx_err_setp(err, SX_EFORMAT, NULL, 0,
                           "%s: header length %llu is more than the %zu bytes that follow it "
                           "(truncated?)",
                           label, (unsigned long long)hlen, size - 8);
    if (p[8] != '{')
        return sx_err_setp(err, SX_EFORMAT, NULL, 8, "%s: header does not start with '{'", label);
    json_error_t je;
    root = json_loadb((const char *)p + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return sx_err_setp(err, SX_EFORMAT, NULL, 8 + je.position, "%s: header JSON: %s", label,
                           je.text);
    if (!json_is_object(root)) {
        rc = sx_err_set(err, SX_EFORMAT, "%s: header is not a JSON object", label);
        goto fail;
    }
    f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(label)))
        goto nomem;
    f->base = p;
    f->size = size;
    size_t names_len = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__")) {
            f->n++;
            names_len += strlen(key) + 1;
        }
    }
    f->t = calloc(f->n ? f->n : 1, sizeof *f->t);
    f->names = malloc(names_len ? names_len : 1);
    if (!f->t || !f->names)
        goto nomem;
    size_t i = 0;
    char *np = f->names;
    uint64_t data_start = 8 + hlen;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "__metadata__")) {
            if ((rc = check_metadata(label, v, err)))
                goto fail;
            continue;
        }
        size_t kl = strlen(key) + 1;
        memcpy(np, key, kl);
        f->t[i].name = np;
        np += kl;
        if ((rc = parse_entry(label, key, v, data_start, size - data_start, &f->t[i], err)))
            goto fail;
        f->t[i].data = p + f->t[i].offset;
        i++;
    }
    if ((rc = check_overlap(label, f, err)))
        goto fail;
    qsort(f->t, f->n, sizeof *f->t, by_name);
    json_decref(root);
    *out = f;
    return SX_OK;
nomem:
    rc = sx_err_set(err, SX_ENOMEM, "%s: out of memory reading the header", label);
fail:
    json_decref(root);
    sx_st_close(f);
    return rc;
}

int sx_st_open(const char *path, sx_st_file **out, sx_error *err)
{
    struct stat st;
    void *map = NULL;
    unsigned char small[8];
    int rc;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sx_err_set(err, SX_EIO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return sx_err_set(err, SX_EIO, "%s: not a regular file", path);
    }
    size_t size = (size_t)st.st_size;
    if (size < sizeof small) {
        /* too short to map usefully; let the parser say what is wrong */
        ssize_t got = read(fd, small, size);
        close(fd);
        return sx_st_parse(small, got > 0 ? (size_t)got : 0, path, out, err);
    }
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return sx_err_set(err, SX_EIO, "cannot map %s: %s", path, strerror(errno));
    if ((rc = sx_st_parse(map, size, path, out, err))) {
        munmap(map, size);
        return rc;
    }
    (*out)->map = map;
    return SX_OK;
}
