/* The documents of `strux extract`: text files, or the rows of a JSONL or
 * CSV file with a text column.
 *
 * Every row has a key that names it in the output and for --resume: the
 * file's path for a text file, "PATH:N" for row N (1-based) of a JSONL file
 * (its line number) or of a CSV file (its record number, header excluded:
 * a quoted field may span lines).  A row that cannot run (a JSONL line that
 * is not an object, a missing or non-string text column) keeps its key and
 * an error, so that it is reported as a failed row rather than stopping the
 * job.
 *
 * Ownership: ex_rows owns every string and JSON value in it; free with
 * ex_rows_free. */
#ifndef STRUX_EXTRACT_INPUT_H
#define STRUX_EXTRACT_INPUT_H

#include <jansson.h>
#include <stddef.h>

#include "common/sx_error.h"

typedef struct ex_row {
    char   *key;
    char   *path;      /* a text file read when the row runs (ex_row_text), else NULL */
    char   *text;      /* the document (NUL-terminated), or NULL */
    size_t  text_len;
    json_t *id;        /* the --id-column value, or NULL */
    char   *error;     /* why the row cannot run, or NULL */
} ex_row;

typedef struct ex_rows {
    ex_row *v;
    size_t  n, cap;
} ex_rows;

/* A text file, read when the row runs. */
int  ex_rows_add_file(ex_rows *rows, const char *path, sx_error *err);
/* Every row of a JSONL ("jsonl") or CSV ("csv") file; text_col names the
 * document's column, id_col (may be NULL) a column copied to the output.
 * Errors are about the file as a whole (unreadable, a CSV without the
 * column in its header, an unterminated quote). */
int  ex_rows_add_table(ex_rows *rows, const char *path, const char *format, const char *text_col,
                       const char *id_col, sx_error *err);
/* Reads a file row's text (once); SX_OK at once for table rows. */
int  ex_row_text(ex_row *row, sx_error *err);
/* Drops a row's text after it ran (files are read again if needed). */
void ex_row_drop_text(ex_row *row);
void ex_rows_free(ex_rows *rows);

#endif
