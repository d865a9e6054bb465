/* Elementwise parts of the Qwen3 layer, written to round like the f32
 * reference (no fused multiply-adds in RoPE: the reference rounds each
 * product). */
#include "engine/cpu/cpu_kernels.h"

#include <math.h>
#include <string.h>

void sx_cpu_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float var = (float)(ss / n);
    float inv = (float)(1.0 / sqrt((double)(var + eps)));
    for (int i = 0; i < n; i++)
        y[i] = w[i] * (x[i] * inv);
}

void sx_cpu_rope_inv_freq(double theta, int head_dim, float *inv_freq)
{
    float base = (float)theta;
    for (int i = 0; i < head_dim / 2; i++) {
        float e = (float)(2 * i) / (float)head_dim;
        float p = (float)pow((double)base, (double)e);
        inv_freq[i] = 1.0f / p;
    }
}

void sx_cpu_rope_angles(int pos, const float *inv_freq, int half, float *cos_t, float *sin_t)
{
    for (int i = 0; i < half; i++) {
        float a = (float)pos * inv_freq[i];
        cos_t[i] = (float)cos((double)a);
        sin_t[i] = (float)sin((double)a);
    }
}

void sx_cpu_rope(float *v, const float *cos_t, const float *sin_t, int head_dim)
{
    int h = head_dim / 2;
    for (int i = 0; i < h; i++) {
        float a = v[i], b = v[i + h];
        float ac = a * cos_t[i], bs = b * sin_t[i];
        float bc = b * cos_t[i], as = a * sin_t[i];
        v[i] = ac - bs;
        v[i + h] = bc + as;
    }
}

void sx_cpu_swiglu(const sx_cpu_kernels *k, float *g, const float *u, int n)
{
    float t[256];
    for (int i0 = 0; i0 < n; i0 += 256) {
        int m = n - i0 < 256 ? n - i0 : 256;
        for (int i = 0; i < m; i++)
            t[i] = -g[i0 + i];
        k->exp(t, t, m);
        for (int i = 0; i < m; i++)
            g[i0 + i] = g[i0 + i] / (1.0f + t[i]) * u[i0 + i];
    }
}

void sx_cpu_bf16_to_f32(float *y, const uint16_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = sx_bf16_to_f32(x[i]);
}
