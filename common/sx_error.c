#include "common/sx_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const sx_code_names[SX_ECODE_COUNT] = {
    [SX_OK] = "ok",
    [SX_ENOMEM] = "out of memory",
    [SX_EINVAL] = "invalid argument",
    [SX_EIO] = "i/o error",
    [SX_EFORMAT] = "malformed input",
    [SX_EUTF8] = "invalid utf-8",
    [SX_EUNSUPPORTED] = "unsupported",
    [SX_ELIMIT] = "limit exceeded",
    [SX_ENOTFOUND] = "not found",
    [SX_EINTERNAL] = "internal error",
};

const char *sx_strerror(int code)
{
    if (code < 0 || code >= SX_ECODE_COUNT)
        return "unknown error";
    return sx_code_names[code];
}

void sx_err_clear(sx_error *err)
{
    if (!err)
        return;
    err->code = SX_OK;
    err->offset = -1;
    err->pointer[0] = '\0';
    err->msg[0] = '\0';
}

static void sx_err_vfill(sx_error *err, int code, const char *pointer,
                         long offset, const char *fmt, va_list ap)
{
    err->code = code;
    err->offset = offset;
    snprintf(err->pointer, sizeof err->pointer, "%s", pointer ? pointer : "");
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int sx_err_set(sx_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        sx_err_vfill(err, code, NULL, -1, fmt, ap);
        va_end(ap);
    }
    return code;
}

int sx_err_setp(sx_error *err, int code, const char *pointer, long offset,
                const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        sx_err_vfill(err, code, pointer, offset, fmt, ap);
        va_end(ap);
    }
    return code;
}

void sx_err_prefix(sx_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char pre[256], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s: %s", pre, old);
}
