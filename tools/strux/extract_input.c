/* The documents of `strux extract` (extract_input.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/strux/extract_input.h"

static ex_row *new_row(ex_rows *rows, sx_error *err)
{
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 64;
        ex_row *v = realloc(rows->v, cap * sizeof *v);
        if (!v) {
            sx_err_set(err, SX_ENOMEM, "out of memory");
            return NULL;
        }
        rows->v = v;
        rows->cap = cap;
    }
    ex_row *r = &rows->v[rows->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static char *keyf(const char *path, size_t n)
{
    size_t cap = strlen(path) + 24;
    char *k = malloc(cap);
    if (k)
        snprintf(k, cap, "%s:%zu", path, n);
    return k;
}

static int row_fail(ex_row *r, const char *fmt, const char *arg, sx_error *err)
{
    size_t cap = strlen(fmt) + (arg ? strlen(arg) : 0) + 1;
    if (!(r->error = malloc(cap)))
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    snprintf(r->error, cap, fmt, arg ? arg : "");
    return SX_OK;
}

int ex_rows_add_file(ex_rows *rows, const char *path, sx_error *err)
{
    ex_row *r = new_row(rows, err);
    if (!r)
        return SX_ENOMEM;
    r->key = strdup(path);
    r->path = strdup(path);
    if (!r->key || !r->path)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    return SX_OK;
}

int ex_row_text(ex_row *row, sx_error *err)
{
    if (row->text || !row->path)
        return SX_OK;
    int rc = sx_file_read(row->path, &row->text, &row->text_len, err);
    if (!rc && strlen(row->text) != row->text_len) {
        free(row->text);
        row->text = NULL;
        return sx_err_set(err, SX_EINVAL, "%s holds a NUL byte: not a text file", row->path);
    }
    return rc;
}

void ex_row_drop_text(ex_row *row)
{
    if (!row->path)
        return;
    free(row->text);
    row->text = NULL;
}

/* Fills a row from one parsed record (a JSON object). */
static int row_from_object(ex_row *r, const json_t *obj, const char *text_col, const char *id_col,
                           sx_error *err)
{
    if (!json_is_object(obj))
        return row_fail(r, "the row is not a JSON object", NULL, err);
    const json_t *t = json_object_get(obj, text_col);
    if (!json_is_string(t))
        return row_fail(r, t ? "column '%s' is not a string" : "the row has no column '%s'",
                        text_col, err);
    r->text_len = json_string_length(t);
    if (!(r->text = malloc(r->text_len + 1)))
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    memcpy(r->text, json_string_value(t), r->text_len + 1);
    if (id_col) {
        json_t *id = json_object_get(obj, id_col);
        r->id = id ? json_incref(id) : json_null();
    }
    return SX_OK;
}

static int add_jsonl(ex_rows *rows, const char *path, const char *data, size_t len,
                     const char *text_col, const char *id_col, sx_error *err)
{
    size_t line = 0;
    for (size_t p = 0; p < len;) {
        const char *nl = memchr(data + p, '\n', len - p);
        size_t e = nl ? (size_t)(nl - data) : len;
        line++;
        size_t b = p;
        p = e + 1;
        while (b < e && (data[b] == ' ' || data[b] == '\t' || data[b] == '\r'))
            b++;
        if (b == e)
            continue;   /* blank lines are not rows */
        ex_row *r = new_row(rows, err);
        if (!r || !(r->key = keyf(path, line)))
            return sx_err_set(err, SX_ENOMEM, "out of memory");
        json_error_t je;
        json_t *obj = json_loadb(data + b, e - b, 0, &je);
        int rc = obj ? row_from_object(r, obj, text_col, id_col, err)
                     : row_fail(r, "the line is not JSON: %s", je.text, err);
        json_decref(obj);
        if (rc)
            return rc;
    }
    return SX_OK;
}

/* One RFC 4180 record from data[*pos]: fields separated by commas, quoted
 * fields may hold commas, newlines and "" for a quote; a record ends at LF
 * or CRLF.  Fields are appended to `fields` as JSON strings. */
static int csv_record(const char *data, size_t len, size_t *pos, json_t *fields, sx_error *err)
{
    size_t p = *pos;
    sx_bytes f = {0};
    int rc = SX_OK;
    for (;;) {
        f.n = 0;
        sx_bytes_append(&f, "", 0);
        if (p < len && data[p] == '"') {
            p++;
            for (;;) {
                if (p >= len) {
                    rc = sx_err_set(err, SX_EFORMAT, "a quoted field is not closed");
                    goto done;
                }
                if (data[p] == '"') {
                    if (p + 1 < len && data[p + 1] == '"') {
                        sx_bytes_append(&f, "\"", 1);
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                sx_bytes_append(&f, data + p, 1);
                p++;
            }
            if (p < len && data[p] != ',' && data[p] != '\n' && data[p] != '\r') {
                rc = sx_err_set(err, SX_EFORMAT, "text after a closing quote");
                goto done;
            }
        } else {
            size_t b = p;
            while (p < len && data[p] != ',' && data[p] != '\n' && data[p] != '\r')
                p++;
            sx_bytes_append(&f, data + b, p - b);
        }
        json_t *s = json_stringn(f.v ? f.v : "", f.n);
        if (!s) {
            rc = sx_err_set(err, SX_EFORMAT, "a field is not valid UTF-8 (or holds a NUL)");
            goto done;
        }
        json_array_append_new(fields, s);
        if (p < len && data[p] == ',') {
            p++;
            continue;
        }
        if (p < len && data[p] == '\r')
            p++;
        if (p < len && data[p] == '\n')
            p++;
        break;
    }
done:
    *pos = p;
    sx_bytes_free(&f);
    return rc;
}

static int add_csv(ex_rows *rows, const char *path, const char *data, size_t len,
                   const char *text_col, const char *id_col, sx_error *err)
{
    size_t p = 0;
    json_t *header = json_array(), *fields = NULL, *obj = NULL;
    int rc;
    if (len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3))
        p = 3;   /* a byte-order mark, as spreadsheets write */
    if ((rc = csv_record(data, len, &p, header, err))) {
        sx_err_set(err, rc, "%s: header: %s", path, err->msg);
        goto done;
    }
    int have_text = 0;
    for (size_t i = 0; i < json_array_size(header); i++)
        have_text |= !strcmp(json_string_value(json_array_get(header, i)), text_col);
    if (!have_text) {
        rc = sx_err_set(err, SX_EINVAL, "%s: the header has no column '%s' (--text-column)", path,
                        text_col);
        goto done;
    }
    for (size_t n = 1; p < len; n++) {
        size_t start = p;
        fields = json_array();
        if ((rc = csv_record(data, len, &p, fields, err))) {
            sx_err_set(err, rc, "%s: record %zu: %s", path, n, err->msg);
            goto done;
        }
        /* an empty last line (or blank lines) is no record */
        if (json_array_size(fields) == 1 && p - start <= 2 &&
            !json_string_length(json_array_get(fields, 0))) {
            json_decref(fields);
            fields = NULL;
            n--;
            continue;
        }
        obj = json_object();
        for (size_t i = 0; i < json_array_size(header) && i < json_array_size(fields); i++)
            json_object_set(obj, json_string_value(json_array_get(header, i)),
                            json_array_get(fields, i));
        ex_row *r = new_row(rows, err);
        if (!r || !(r->key = keyf(path, n))) {
            rc = sx_err_set(err, SX_ENOMEM, "out of memory");
            goto done;
        }
        if (json_array_size(fields) != json_array_size(header))
            rc = row_fail(r, "the record's field count differs from the header's", NULL, err);
        else
            rc = row_from_object(r, obj, text_col, id_col, err);
        json_decref(obj);
        json_decref(fields);
        obj = fields = NULL;
        if (rc)
            goto done;
    }
done:
    json_decref(header);
    json_decref(fields);
    json_decref(obj);
    return rc;
}

int ex_rows_add_table(ex_rows *rows, const char *path, const char *format, const char *text_col,
                      const char *id_col, sx_error *err)
{
    char *data;
    size_t len;
    int rc = sx_file_read(path, &data, &len, err);
    if (rc)
        return rc;
    if (!strcmp(format, "csv"))
        rc = add_csv(rows, path, data, len, text_col, id_col, err);
    else
        rc = add_jsonl(rows, path, data, len, text_col, id_col, err);
    free(data);
    return rc;
}

void ex_rows_free(ex_rows *rows)
{
    for (size_t i = 0; i < rows->n; i++) {
        free(rows->v[i].key);
        free(rows->v[i].path);
        free(rows->v[i].text);
        free(rows->v[i].error);
        json_decref(rows->v[i].id);
    }
    free(rows->v);
    memset(rows, 0, sizeof *rows);
}
