/* A Qwen3-shaped model with random bf16 weights, built in memory for the
 * engine tests (not through the loader): tied embeddings, max_pos 4096,
 * RMSNorm eps 1e-6, RoPE theta 1e4; weights uniform in (-a, a) with
 * amplitudes that keep activations O(1), norm weights 1 +- 0.3.
 *
 * Ownership: tm_build returns a model the caller frees with tm_free. */
#ifndef TEST_MODEL_H
#define TEST_MODEL_H

#include <stdint.h>

#include "engine/model/model.h"

typedef struct tmodel {
    sx_model          m;
    sx_layer_weights *lw;    /* [m.cfg.n_layers], m.layers */
    void            **bufs;  /* every weight, freed by tm_free */
    int               nbufs;
} tmodel;

/* xorshift64: *state advanced and returned; tm_urand: the same step, as
 * a double uniform in [-1, 1) */
uint64_t tm_next(uint64_t *state);
double tm_urand(uint64_t *state);
/* The model of shape's vocab_rows, hidden, intermediate, n_layers,
 * n_heads, n_kv_heads and head_dim (its other fields are ignored), its
 * weights drawn from *rng, which is set to seed first and left where the
 * drawing ended.  NULL when out of memory. */
tmodel *tm_build(const sx_qwen3_config *shape, uint64_t seed, uint64_t *rng);
void tm_free(tmodel *t);

#endif
