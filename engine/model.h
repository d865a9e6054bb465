/* sx_model: a Qwen3 dense model loaded from a Hugging Face directory
 * (config.json + model.safetensors or shards + model.safetensors.index.json).
 *
 * The safetensors files are mmapped and every tensor's offset, dtype and shape
 * is checked against config.json; a mismatch is an error that prints expected
 * vs got.  Matrices are exposed as bf16 row-major [rows][cols] (rows = output
 * features, the Hugging Face nn.Linear layout): bf16 files are used in place
 * from the mapping; f16/f32 files are converted to bf16 once at load (owned
 * buffers).  Norm weights are always converted to f32 (owned).
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

/* Weights of one decoder layer.  Matrix shapes (rows x cols):
 *   wq [n_heads*head_dim x hidden]      wk, wv [n_kv_heads*head_dim x hidden]
 *   wo [hidden x n_heads*head_dim]
 *   w_gate, w_up [intermediate x hidden] w_down [hidden x intermediate]
 * Vectors (f32): attn_norm, mlp_norm [hidden]; q_norm, k_norm [head_dim]. */
typedef struct sx_layer_weights {
    const uint16_t *wq, *wk, *wv, *wo;
    const uint16_t *w_gate, *w_up, *w_down;
    const float    *attn_norm, *mlp_norm, *q_norm, *k_norm;
} sx_layer_weights;

typedef struct sx_model {
    sx_qwen3_config   cfg;
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

#endif
