#include "common/sx_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int sx_file_exists(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int sx_stream_read(FILE *f, size_t max, char **data, size_t *len, sx_error *err)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return sx_err_set(err, SX_ENOMEM, "out of memory reading input");
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                free(buf);
                return sx_err_set(err, SX_ELIMIT, "input larger than %zu bytes", max);
            }
            size_t ncap = cap * 2 > max ? max : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                return sx_err_set(err, SX_ENOMEM, "out of memory reading input");
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                free(buf);
                return sx_err_set(err, SX_EIO, "read error: %s", strerror(errno));
            }
            break;
        }
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return SX_OK;
}

int sx_file_read(const char *path, char **data, size_t *len, sx_error *err)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sx_err_set(err, SX_EIO, "cannot open %s: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return sx_err_set(err, SX_EIO, "%s is not a regular file", path);
    }
    int rc = sx_stream_read(f, (size_t)st.st_size + (1u << 20), data, len, err);
    fclose(f);
    if (rc)
        sx_err_prefix(err, "%s", path);
    return rc;
}
