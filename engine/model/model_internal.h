/* Internal to the model files (model_config.c, model_load.c,
 * model_random.c): the Qwen3 tensor table and number conversions. */
#ifndef SX_MODEL_INTERNAL_H
#define SX_MODEL_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "common/sx_bf16.h"
#include "engine/model/model.h"

enum { SX_QK_EMBED, SX_QK_LM_HEAD, SX_QK_MATRIX, SX_QK_NORM };

/* The tensors of one decoder layer, in file order. */
enum {
    SX_QL_ATTN_NORM, SX_QL_Q, SX_QL_K, SX_QL_V, SX_QL_O, SX_QL_Q_NORM, SX_QL_K_NORM,
    SX_QL_MLP_NORM, SX_QL_GATE, SX_QL_UP, SX_QL_DOWN, SX_QL_COUNT
};

typedef struct sx_qwen3_tensor {
    char    name[96];
    int     kind;   /* SX_QK_* */
    int     layer;  /* -1 outside the layers */
    int     slot;   /* SX_QL_* inside a layer */
    int     ndim;   /* 2 for matrices, 1 for norms */
    int64_t rows;   /* shape[0] */
    int64_t cols;   /* shape[1] (fan-in) for matrices, 0 for norms */
} sx_qwen3_tensor;

/* The expected tensors: embed, the layers, final norm, and lm_head when
 * with_lm_head (always when the model is not tied). */
int  sx_qwen3_tensor_count(const sx_qwen3_config *cfg, int with_lm_head);
void sx_qwen3_tensor_at(const sx_qwen3_config *cfg, int i, sx_qwen3_tensor *out);

/* model_load.c: a buffer of `bytes` the model owns (freed with it); NULL
 * when out of memory. */
void *sx_model_own(sx_model *m, size_t bytes);

/* model_quant.c: whether tensor s is stored quantised under q (a layer
 * matrix not named by modules_to_not_convert), and loading such a matrix:
 * AWQ into m->layers[].q4, FP8 dequantised into a bf16 buffer put in *slot.
 * The checkpoint tensors it read are appended to used[*n_used] (3 at most). */
int sx_quant_applies(const sx_quant_config *q, const sx_qwen3_tensor *s);
int sx_quant_load_matrix(sx_model *m, const sx_st_set *set, const sx_qwen3_tensor *s,
                         const uint16_t **slot, const sx_st_tensor **used, int *n_used,
                         sx_error *err);

/* SX_QL_* of a layer matrix -> SX_MAT_* */
static inline int sx_quant_mat_index(int slot)
{
    switch (slot) {
    case SX_QL_Q: return SX_MAT_Q;
    case SX_QL_K: return SX_MAT_K;
    case SX_QL_V: return SX_MAT_V;
    case SX_QL_O: return SX_MAT_O;
    case SX_QL_GATE: return SX_MAT_GATE;
    case SX_QL_UP: return SX_MAT_UP;
    default: return SX_MAT_DOWN;
    }
}

/* sx_f32_to_bf16, sx_bf16_to_f32: common/sx_bf16.h */

/* IEEE half to float, exactly (subnormals, inf, NaN included). */
static inline float sx_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0x1f)
        u = sign | 0x7f800000u | (man << 13);
    else if (exp)
        u = sign | ((exp + 112) << 23) | (man << 13);
    else if (!man)
        u = sign;
    else {
        /* subnormal: normalise the mantissa */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#endif
