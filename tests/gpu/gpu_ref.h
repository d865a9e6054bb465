/* The reference forward pass composed of the kernels' CPU references
 * (kernels/ *_ref.c), rounding to bf16 at exactly the places the GPU engine
 * does, and the error bound that arithmetic gives between the two.  Shared by
 * test_gpu_refengine.c (a scripted run beside the engine) and
 * test_gpu_engine.c (a greedy mismatch with the f32 CPU engine is re-judged
 * against it).  Test code: out of memory exits. */
#ifndef SX_GPU_REF_H
#define SX_GPU_REF_H

#include <stdint.h>

#include "engine/model/model.h"
#include "kernels/sx_kernels.h"

#define GPU_REF_BT 16

/* One sequence: a private cache of max_len positions, blocks 0, 1, 2, ... */
typedef struct gpu_ref_seq {
    uint16_t *kc, *vc; /* [layer][block][kv head][BT][head_dim] */
    int       len;
} gpu_ref_seq;

typedef struct gpu_ref_model {
    const sx_model *m;
    sx_attn_dims    d;
    int             max_len;
    int32_t        *table;
    float          *cos_t, *sin_t;
    size_t          layer_elems;
} gpu_ref_model;

/* m borrowed; sequences of up to max_len tokens. */
void gpu_ref_init(gpu_ref_model *r, const sx_model *m, int max_len);
void gpu_ref_fini(gpu_ref_model *r);
void gpu_ref_seq_init(const gpu_ref_model *r, gpu_ref_seq *s);
void gpu_ref_seq_fini(gpu_ref_seq *s);

/* Appends n tokens to s; writes the last token's logits (vocab_rows) and,
 * when bound is not NULL, the per-token bound of gpu_ref_bound below. */
void gpu_ref_forward(const gpu_ref_model *r, gpu_ref_seq *s, const int32_t *tok, int n,
                     float *logits, float *bound);

/* A fresh sequence over tok[0..n): the logits after its last token. */
void gpu_ref_logits(const gpu_ref_model *r, const int32_t *tok, int n, float *logits,
                    float *bound);

/* Judges a greedy pick against the reference: returns 1 when got's argmax
 * is the reference's, or when the reference's logits of the two tokens are
 * within bound[a] + bound[b] of each other (a tie the arithmetic allows);
 * *gap gets ref[best] - ref[got's best]. */
int gpu_ref_greedy_ok(const float *ref, const float *bound, const float *got, int V, int *ref_best,
                      int *got_best, double *gap);

/* The share of the reference rows' top two that are within their bound of
 * each other: how many rows the tie rule could excuse. */
int gpu_ref_is_near_tie(const float *ref, const float *bound, int V);

#endif
