/* CPU reference of the fused residual add + RMSNorm (kernels/rmsnorm.cu). */
#include "kernels/sx_kernels.h"

#include <math.h>

#include "common/sx_bf16.h"

/* The add is stored into `sum` when the residual is written back (sum may
 * alias x) and recomputed, bit-identically, when it is not. */
static void norm_row(const float *x, const float *delta, float *sum, const float *w, float eps,
                     int dim, uint16_t *out)
{
    float ss = 0.0f;
    for (int c = 0; c < dim; c++) {
        float v = delta ? x[c] + delta[c] : x[c];
        if (sum)
            sum[c] = v;
        ss += v * v;
    }
    float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    for (int c = 0; c < dim; c++) {
        float v = sum ? sum[c] : delta ? x[c] + delta[c] : x[c];
        out[c] = sx_f32_to_bf16(v * inv * w[c]);
    }
}

void sx_ref_add_rmsnorm(float *res, const float *delta, const float *w, float eps, int n, int dim,
                        uint16_t *out)
{
    for (int r = 0; r < n; r++) {
        float *x = res + (size_t)r * dim;
        norm_row(x, delta ? delta + (size_t)r * dim : NULL, x, w, eps, dim, out + (size_t)r * dim);
    }
}

void sx_ref_rmsnorm_rows(const float *x, const float *delta, const int32_t *rows, int n_out,
                         const float *w, float eps, int dim, uint16_t *out)
{
    for (int i = 0; i < n_out; i++) {
        size_t r = (size_t)(rows ? rows[i] : i);
        norm_row(x + r * dim, delta ? delta + r * dim : NULL, NULL, w, eps, dim,
                 out + (size_t)i * dim);
    }
}
