/* CPU reference of the embedding gather (kernels/embed.cu). */
#include "kernels/sx_kernels.h"

#include <string.h>

#include "common/sx_bf16.h"

void sx_ref_embed_f32(const uint16_t *table, int vocab, int hidden, const int32_t *tokens, int n,
                      float *out)
{
    for (int i = 0; i < n; i++) {
        float *o = out + (size_t)i * hidden;
        int32_t t = tokens[i];
        if (t < 0 || t >= vocab) {
            memset(o, 0, (size_t)hidden * sizeof *o);
            continue;
        }
        const uint16_t *row = table + (size_t)t * hidden;
        for (int c = 0; c < hidden; c++)
            o[c] = sx_bf16_to_f32(row[c]);
    }
}

void sx_ref_embed_bf16(const uint16_t *table, int vocab, int hidden, const int32_t *tokens, int n,
                       uint16_t *out)
{
    for (int i = 0; i < n; i++) {
        uint16_t *o = out + (size_t)i * hidden;
        int32_t t = tokens[i];
        if (t < 0 || t >= vocab)
            memset(o, 0, (size_t)hidden * sizeof *o);
        else
            memcpy(o, table + (size_t)t * hidden, (size_t)hidden * sizeof *o);
    }
}
