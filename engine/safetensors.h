/* sx_st: safetensors files -- reading (mmap, every header field checked),
 * sharded sets (model.safetensors.index.json) and streaming writing.
 *
 * Format: an 8-byte little-endian header length N, N bytes of JSON
 * {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"?},
 * then the data section; offsets are relative to its start.  Only BF16, F16
 * and F32 are accepted; any other dtype is SX_EFORMAT naming the tensor.
 *
 * Ownership: an sx_st_file / sx_st_set owns its mapping and tensor table
 * (names and data pointers stay valid until sx_st_close / sx_st_set_close).
 * sx_st_parse borrows the caller's buffer, which must outlive the file.
 * A mapped file must not be truncated by anyone while open (reads past the
 * new end would fault); every check is against its size at open time.
 * A writer owns its file descriptor until sx_st_writer_close. */
#ifndef SX_SAFETENSORS_H
#define SX_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"

enum { SX_ST_BF16 = 0, SX_ST_F16 = 1, SX_ST_F32 = 2 };
#define SX_ST_MAX_DIMS 8
#define SX_ST_MAX_HEADER 100000000u /* the reference implementation's limit */

typedef struct sx_st_tensor {
    const char          *name;
    int                  dtype;   /* SX_ST_* */
    int                  ndim;
    int64_t              shape[SX_ST_MAX_DIMS];
    uint64_t             offset;  /* from the start of the file */
    uint64_t             nbytes;  /* == product(shape) * dtype size */
    const unsigned char *data;    /* start of the file + offset */
} sx_st_tensor;

typedef struct sx_st_file sx_st_file;

/* "BF16", "F16", "F32" (or "?"), and the element size (0 if unknown). */
const char *sx_st_dtype_name(int dtype);
size_t      sx_st_dtype_size(int dtype);

/* "[a, b, c]" into buf (truncated to cap). */
void sx_st_shape_format(const int64_t *shape, int ndim, char *buf, size_t cap);

/* Maps and checks the file at path. */
int sx_st_open(const char *path, sx_st_file **out, sx_error *err);
/* Checks a whole file image already in memory; label names it in messages. */
int sx_st_parse(const void *buf, size_t size, const char *label, sx_st_file **out,
                sx_error *err);
void sx_st_close(sx_st_file *f); /* NULL is fine */

const char         *sx_st_path(const sx_st_file *f);
size_t              sx_st_count(const sx_st_file *f);
const sx_st_tensor *sx_st_at(const sx_st_file *f, size_t i);   /* sorted by name */
const sx_st_tensor *sx_st_find(const sx_st_file *f, const char *name); /* NULL if absent */

/* The weights of a model directory: DIR/model.safetensors if present (as
 * Hugging Face prefers), else the shards named by
 * DIR/model.safetensors.index.json, each opened once.  The index must list
 * every tensor of every shard, in the shard that holds it. */
typedef struct sx_st_set sx_st_set;
int  sx_st_set_open(const char *dir, sx_st_set **out, sx_error *err);
void sx_st_set_close(sx_st_set *s); /* NULL is fine */
size_t              sx_st_set_files(const sx_st_set *s);
const sx_st_file   *sx_st_set_file(const sx_st_set *s, size_t i);
size_t              sx_st_set_count(const sx_st_set *s); /* tensors in all shards */
/* The tensor and (if file is non-NULL) the shard that holds it; NULL if absent. */
const sx_st_tensor *sx_st_set_find(const sx_st_set *s, const char *name, const sx_st_file **file);

/* Writing: the tensors are declared up front (the header comes first), then
 * their bytes are streamed in declaration order, in pieces of any size.  The
 * file is written to PATH.tmp and renamed on a successful close; on any error
 * (or too few bytes) close removes it. */
typedef struct sx_st_desc {
    const char *name;
    int         dtype;
    int         ndim;
    int64_t     shape[SX_ST_MAX_DIMS];
} sx_st_desc;

typedef struct sx_st_writer sx_st_writer;
int sx_st_writer_open(const char *path, const sx_st_desc *t, size_t n, sx_st_writer **out,
                      sx_error *err);
int sx_st_writer_write(sx_st_writer *w, const void *data, size_t len, sx_error *err);
/* Total bytes of tensor data declared, and written so far. */
uint64_t sx_st_writer_total(const sx_st_writer *w);
uint64_t sx_st_writer_done(const sx_st_writer *w);
/* Finishes (or abandons, if not all bytes came) and frees w. */
int sx_st_writer_close(sx_st_writer *w, sx_error *err);

#endif
