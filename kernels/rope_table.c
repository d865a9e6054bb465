/* Rotary tables for the q/k RoPE kernels (kernels/qk_rope_kv.cu). */
#include "kernels/sx_kernels.h"

#include <math.h>

/* Hugging Face builds the angles in f32 (inv_freq, then position * inv_freq),
 * which at long contexts differs from the exact angle by ~1e-3 rad; the model
 * was trained with the f32 angles, so they are reproduced here the way the
 * CPU engine does (engine/cpu/cpu_ops.c: the power in double, rounded once), and
 * only the final cos/sin is taken in double. */
void sx_rope_table(double theta, int head_dim, int n_pos, float *cos_t, float *sin_t)
{
    int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        float expo = (float)(2 * i) / (float)head_dim;
        float inv = 1.0f / (float)pow((double)(float)theta, (double)expo);
        for (int p = 0; p < n_pos; p++) {
            float a = (float)p * inv;
            cos_t[(size_t)p * half + i] = (float)cos((double)a);
            sin_t[(size_t)p * half + i] = (float)sin((double)a);
        }
    }
}
