#include "kernels/sx_kernels.h"

#include <math.h>

void sx_ref_apply_mask(float *logits, const uint32_t *mask, int n_rows, int n_vocab)
{
    int words = (n_vocab + 31) / 32;
    for (int r = 0; r < n_rows; r++)
        for (int t = 0; t < n_vocab; t++)
            if (!((mask[(long)r * words + t / 32] >> (t % 32)) & 1u))
                logits[(long)r * n_vocab + t] = -INFINITY;
}
