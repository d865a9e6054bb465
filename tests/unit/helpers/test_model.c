/* The random in-memory model of the engine tests (test_model.h). */
#include "tests/unit/helpers/test_model.h"

#include <math.h>
#include <stdlib.h>

#include "engine/cpu/cpu_kernels.h"

uint64_t tm_next(uint64_t *state)
{
    uint64_t r = *state;
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    return *state = r;
}

double tm_urand(uint64_t *state)
{
    return (double)(tm_next(state) >> 11) / (double)(1ull << 52) - 1.0;
}

static void *tm_alloc(tmodel *t, size_t bytes)
{
    void *p = malloc(bytes);
    if (p)
        t->bufs[t->nbufs++] = p;
    return p;
}

static const uint16_t *rand_mat(tmodel *t, uint64_t *rng, int rows, int cols, double amp)
{
    uint16_t *w = tm_alloc(t, (size_t)rows * cols * sizeof *w);
    for (long i = 0; w && i < (long)rows * cols; i++)
        w[i] = sx_f32_to_bf16((float)(tm_urand(rng) * amp));
    return w;
}

static const float *rand_norm(tmodel *t, uint64_t *rng, int n)
{
    float *w = tm_alloc(t, (size_t)n * sizeof *w);
    for (int i = 0; w && i < n; i++)
        w[i] = (float)(1.0 + 0.3 * tm_urand(rng));
    return w;
}

tmodel *tm_build(const sx_qwen3_config *shape, uint64_t seed, uint64_t *rng)
{
    int L = shape->n_layers;
    tmodel *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->lw = calloc((size_t)L, sizeof *t->lw);
    t->bufs = calloc((size_t)L * 11 + 2, sizeof *t->bufs);
    if (!t->lw || !t->bufs)
        goto fail;
    *rng = seed;
    sx_qwen3_config *c = &t->m.cfg;
    c->vocab_rows = shape->vocab_rows;
    c->hidden = shape->hidden;
    c->intermediate = shape->intermediate;
    c->n_layers = L;
    c->n_heads = shape->n_heads;
    c->n_kv_heads = shape->n_kv_heads;
    c->head_dim = shape->head_dim;
    c->max_pos = 4096;
    c->tied = 1;
    c->rms_eps = 1e-6f;
    c->rope_theta = 10000.0;
    int H = c->hidden, I = c->intermediate, qd = c->n_heads * c->head_dim;
    int kvd = c->n_kv_heads * c->head_dim;
    /* uniform(-a, a) has variance a^2/3 */
    double ah = sqrt(3.0 / H), aq = sqrt(3.0 / qd), ai = sqrt(3.0 / I);
    if (!(t->m.embed = rand_mat(t, rng, c->vocab_rows, H, 1.0)) ||
        !(t->m.final_norm = rand_norm(t, rng, H)))
        goto fail;
    t->m.lm_head = t->m.embed;
    for (int l = 0; l < L; l++) {
        sx_layer_weights *w = &t->lw[l];
        if (!(w->wq = rand_mat(t, rng, qd, H, ah)) || !(w->wk = rand_mat(t, rng, kvd, H, ah)) ||
            !(w->wv = rand_mat(t, rng, kvd, H, ah)) || !(w->wo = rand_mat(t, rng, H, qd, aq)) ||
            !(w->w_gate = rand_mat(t, rng, I, H, ah)) || !(w->w_up = rand_mat(t, rng, I, H, ah)) ||
            !(w->w_down = rand_mat(t, rng, H, I, ai)) || !(w->attn_norm = rand_norm(t, rng, H)) ||
            !(w->mlp_norm = rand_norm(t, rng, H)) ||
            !(w->q_norm = rand_norm(t, rng, c->head_dim)) ||
            !(w->k_norm = rand_norm(t, rng, c->head_dim)))
            goto fail;
    }
    t->m.layers = t->lw;
    return t;
fail:
    tm_free(t);
    return NULL;
}

void tm_free(tmodel *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nbufs; i++)
        free(t->bufs[i]);
    free(t->bufs);
    free(t->lw);
    free(t);
}
