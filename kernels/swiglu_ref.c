/* CPU reference of SwiGLU (kernels/swiglu.cu). */
#include "kernels/sx_kernels.h"

#include <math.h>

#include "common/sx_bf16.h"

void sx_ref_swiglu(const float *gate_up, int n, int inter, uint16_t *out)
{
    for (int t = 0; t < n; t++) {
        const float *g = gate_up + (size_t)t * 2 * inter, *u = g + inter;
        for (int j = 0; j < inter; j++)
            out[(size_t)t * inter + j] = sx_f32_to_bf16(g[j] / (1.0f + expf(-g[j])) * u[j]);
    }
}
