/* CPU reference of the bf16 GEMM that kernels/gemm.cu runs on cuBLAS. */
#include "kernels/sx_kernels.h"

#include "common/sx_bf16.h"

void sx_ref_gemm(const uint16_t *x, const uint16_t *w, int m, int n, int k, float *y)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            const uint16_t *a = x + (size_t)i * k, *b = w + (size_t)j * k;
            float s = 0.0f;
            for (int c = 0; c < k; c++)
                s += sx_bf16_to_f32(a[c]) * sx_bf16_to_f32(b[c]);
            y[(size_t)i * n + j] = s;
        }
}
