/* sx_error: the one error enum of strux, and errors as values.
 *
 * Every fallible function returns an int: 0 (SX_OK) on success, an sx_code
 * otherwise.  Functions that can say more take an optional `sx_error *err`
 * out-parameter (may be NULL) that receives a message, and where it applies
 * a JSON Pointer into the offending document and a byte offset.
 * An sx_error is a plain value: no heap, nothing to free. */
#ifndef SX_ERROR_H
#define SX_ERROR_H

#include <stddef.h>

typedef enum sx_code {
    SX_OK = 0,
    SX_ENOMEM,       /* allocation failed */
    SX_EINVAL,       /* bad argument from the caller */
    SX_EIO,          /* file missing or unreadable */
    SX_EFORMAT,      /* a file or message is malformed (corrupt tokenizer.json, bad JSON) */
    SX_EUTF8,        /* input text is not valid UTF-8 */
    SX_EUNSUPPORTED, /* valid input that strux cannot honour exactly (schema keyword, regex form) */
    SX_ELIMIT,       /* a size, depth or time budget was exceeded */
    SX_ENOTFOUND,    /* a named thing (token, $ref, file) does not exist */
    SX_EINTERNAL,    /* broken internal invariant */
    SX_ECODE_COUNT
} sx_code;

typedef struct sx_error {
    int  code;          /* an sx_code; SX_OK when nothing went wrong */
    long offset;        /* byte offset into the input, or -1 */
    char pointer[256];  /* JSON Pointer of the offending node, "" if none */
    char msg[512];      /* human-readable, one line, no trailing newline */
} sx_error;

/* Stable lower-case name of a code ("ok", "nomem", ...). Never NULL. */
const char *sx_strerror(int code);

/* Clears *err (if non-NULL) to SX_OK. */
void sx_err_clear(sx_error *err);

/* Fills *err (if non-NULL) with code and a printf-style message; returns code
 * so callers can write `return sx_err_set(err, SX_EIO, "...", ...);`. */
int sx_err_set(sx_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like sx_err_set, also recording a JSON Pointer and/or byte offset
 * (pointer may be NULL, offset may be -1). */
int sx_err_setp(sx_error *err, int code, const char *pointer, long offset,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Prepends "prefix: " to err->msg (context as an error travels up). */
void sx_err_prefix(sx_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
