/* sx_file: small file helpers shared by every module. */
#ifndef SX_FILE_H
#define SX_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "common/sx_error.h"

/* Reads the whole file at path into a fresh malloc'd buffer, NUL-terminated
 * (the NUL is not counted in *len).  The caller frees *data. */
int sx_file_read(const char *path, char **data, size_t *len, sx_error *err);

/* Reads all of a stream (stdin) the same way; refuses more than max bytes
 * with SX_ELIMIT. */
int sx_stream_read(FILE *f, size_t max, char **data, size_t *len, sx_error *err);

/* 1 if path names an existing regular file, else 0. */
int sx_file_exists(const char *path);

#endif
