/* sx_model: a Qwen3 dense model loaded from a Hugging Face directory
 * (config.json + model.safetensors or shards + model.safetensors.index.json).
 *
 * Contract of engine/model/: config.json, safetensors reading and writing,
 * loading, random models; depends on common/ only.
 *
 * The safetensors files are mmapped and every tensor's offset, dtype and shape
 * is checked against config.json; a mismatch is an error that prints expected
 * vs got.  Matrices are exposed as bf16 row-major [rows][cols] (rows = output
 * features, the Hugging Face nn.Linear layout): bf16 files are used in place
 * from the mapping; f16/f32 files are converted to bf16 once at load (owned
 * buffers).  Norm weights are always converted to f32 (owned).
 *
 * Quantised checkpoints (quantization_config in config.json,
 * model_quant.c): AWQ matrices stay 4-bit (sx_layer_weights.q4); FP8
 * matrices are dequantised to bf16 (owned) at load.  Embeddings, norms and
 * lm_head are never quantised and load as above.
 *
 * Ownership: sx_model_load returns a model the caller frees with
 * sx_model_free; all pointers inside stay valid until then.  A loaded model
 * is read-only and may be shared by any number of threads. */
#ifndef SX_MODEL_H
#define SX_MODEL_H

#include <stdint.h>
#include <stddef.h>
#include "common/sx_error.h"

typedef struct sx_qwen3_config {
    int    vocab_rows;    /* config "vocab_size" (151936 for Qwen3) */
    int    hidden;        /* "hidden_size" */
    int    intermediate;  /* "intermediate_size" */
    int    n_layers;      /* "num_hidden_layers" */
    int    n_heads;       /* "num_attention_heads" */
    int    n_kv_heads;    /* "num_key_value_heads" */
    int    head_dim;      /* "head_dim" (128 for Qwen3, independent of hidden) */
    int    max_pos;       /* "max_position_embeddings" */
    int    tied;          /* "tie_word_embeddings" */
    float  rms_eps;       /* "rms_norm_eps" */
    double rope_theta;    /* "rope_theta" */
} sx_qwen3_config;

/* quantization_config of config.json (model_quant.c).  SX_QUANT_NONE when
 * the key is absent or null. */
enum { SX_QUANT_NONE = 0, SX_QUANT_AWQ = 1, SX_QUANT_FP8 = 2 };
#define SX_QUANT_MAX_SKIP 16
typedef struct sx_quant_config {
    int  method;         /* SX_QUANT_* */
    int  group;          /* AWQ "group_size" (bits 4, zero_point, version gemm) */
    int  block[2];       /* FP8 "weight_block_size" [rows, cols] (fmt e4m3) */
    int  n_skip;         /* "modules_to_not_convert": names matched as substrings */
    char skip[SX_QUANT_MAX_SKIP][96];
} sx_quant_config;

/* Parses the quantization_config of a config.json text.  Every field is
 * checked: an unknown method, field or value is SX_EUNSUPPORTED (or
 * SX_EFORMAT for a wrong type) naming the field, never ignored. */
int sx_quant_config_parse(const char *json, size_t len, sx_quant_config *out, sx_error *err);

/* A 4-bit matrix as an AWQ checkpoint holds it, transposed to the model's
 * [rows = out][cols = in] orientation: q[r * cols/2 + i/2] holds k = i in
 * its low nibble when i is even, its high nibble when odd; for group
 * g = k / group, w = (q - zero[r * ng + g]) * f16(scale[r * ng + g]),
 * ng = cols / group.  All owned by the model. */
typedef struct sx_q4_matrix {
    const uint8_t  *q;
    const uint16_t *scale;  /* f16 */
    const uint8_t  *zero;   /* 0..15 */
    int             rows, cols, group;
} sx_q4_matrix;

/* the layer matrices in sx_layer_weights.q4 order */
enum { SX_MAT_Q, SX_MAT_K, SX_MAT_V, SX_MAT_O, SX_MAT_GATE, SX_MAT_UP, SX_MAT_DOWN, SX_MAT_COUNT };

/* Weights of one decoder layer.  Matrix shapes (rows x cols):
 *   wq [n_heads*head_dim x hidden]      wk, wv [n_kv_heads*head_dim x hidden]
 *   wo [hidden x n_heads*head_dim]
 *   w_gate, w_up [intermediate x hidden] w_down [hidden x intermediate]
 * Vectors (f32): attn_norm, mlp_norm [hidden]; q_norm, k_norm [head_dim]. */
typedef struct sx_layer_weights {
    const uint16_t *wq, *wk, *wv, *wo;
    const uint16_t *w_gate, *w_up, *w_down;
    const float    *attn_norm, *mlp_norm, *q_norm, *k_norm;
    /* AWQ checkpoints: q4[i].q is non-NULL where matrix i (SX_MAT_*) is
     * 4-bit, and its bf16 pointer above is NULL then */
    sx_q4_matrix    q4[SX_MAT_COUNT];
} sx_layer_weights;

typedef struct sx_model {
    sx_qwen3_config   cfg;
    sx_quant_config   quant;      /* what the checkpoint was quantised with */
    const uint16_t   *embed;      /* [vocab_rows x hidden] bf16 */
    const uint16_t   *lm_head;    /* [vocab_rows x hidden]; == embed when tied */
    const float      *final_norm; /* [hidden] */
    sx_layer_weights *layers;     /* [n_layers] */
    char              dir[1024];  /* the directory it was loaded from */
    void             *priv;       /* mappings and converted buffers */
} sx_model;

/* Loads DIR/config.json and the safetensors weights.  Unknown architectures
 * (anything but "Qwen3ForCausalLM"), missing or extra-shaped tensors,
 * truncated files and unsupported dtypes are SX_EFORMAT with a message naming
 * the file and tensor.  *out is NULL on failure. */
int sx_model_load(const char *dir, sx_model **out, sx_error *err);

/* Parses a config.json text (for tests and `strux model info`). */
int sx_qwen3_config_parse(const char *json, size_t len, sx_qwen3_config *out,
                          sx_error *err);

/* Checks that every field is in range and consistent (heads a multiple of
 * kv heads, even head_dim, ...) so that no size overflows; SX_EFORMAT
 * naming the field otherwise.  sx_qwen3_config_parse already does this. */
int sx_qwen3_config_check(const sx_qwen3_config *cfg, sx_error *err);

/* Named shapes: "tiny", "0.6b", "1.7b", "4b", "8b".  "tiny" keeps every Qwen3
 * feature (GQA, q/k norms, head_dim != hidden/heads, tied embeddings) and the
 * full 151,936-row vocabulary.  SX_ENOTFOUND for an unknown name. */
int sx_qwen3_shape(const char *name, sx_qwen3_config *out, sx_error *err);

/* Parameter count, and KV-cache bytes per token for f32 (or bf16) cache. */
int64_t sx_qwen3_n_params(const sx_qwen3_config *cfg);
int64_t sx_qwen3_kv_bytes_per_token(const sx_qwen3_config *cfg, int elem_bytes);

/* Writes a Hugging Face-format Qwen3 model with random bf16 weights
 * (deterministic for a seed, scaled so activations stay sane) into DIR
 * (created if missing): config.json, model.safetensors, and a copy of
 * TOKENIZER_JSON as tokenizer.json (skipped when NULL). */
int sx_model_write_random(const sx_qwen3_config *cfg, uint64_t seed,
                          const char *dir, const char *tokenizer_json,
                          sx_error *err);

/* The same, calling progress(ctx, bytes_done, bytes_total) on the calling
 * thread as the weights are written (progress may be NULL).  Writing uses
 * all online CPUs; the bytes do not depend on how many. */
typedef void (*sx_progress_fn)(void *ctx, int64_t done, int64_t total);
int sx_model_write_random_ex(const sx_qwen3_config *cfg, uint64_t seed,
                             const char *dir, const char *tokenizer_json,
                             sx_progress_fn progress, void *ctx,
                             sx_error *err);

void sx_model_free(sx_model *m);

/* ==== safetensors files (st_index.c, st_read.c, st_write.c) ==== */

/* sx_st: safetensors files -- reading (mmap, every header field checked),
 * sharded sets (model.safetensors.index.json) and streaming writing.
 *
 * Format: an 8-byte little-endian header length N, N bytes of JSON
 * {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"?},
 * then the data section; offsets are relative to its start.  Only BF16, F16,
 * F32, I32 and F8_E4M3 are accepted; any other dtype is SX_EFORMAT naming
 * the tensor.  (The model loader takes I32 and F8_E4M3 only where a
 * quantised checkpoint puts them.)
 *
 * Ownership: an sx_st_file / sx_st_set owns its mapping and tensor table
 * (names and data pointers stay valid until sx_st_close / sx_st_set_close).
 * sx_st_parse borrows the caller's buffer, which must outlive the file.
 * A mapped file must not be truncated by anyone while open (reads past the
 * new end would fault); every check is against its size at open time.
 * A writer owns its file descriptor until sx_st_writer_close. */

enum { SX_ST_BF16 = 0, SX_ST_F16 = 1, SX_ST_F32 = 2, SX_ST_I32 = 3, SX_ST_F8_E4M3 = 4,
       SX_ST_NDTYPES = 5 };
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

/* "BF16", "F16", "F32", "I32", "F8_E4M3" (or "?"), and the element size (0 if unknown). */
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
