/* Fuzz target: arbitrary bytes as a whole safetensors file.  Parsing must
 * either fail with a message and leave nothing, or give a table whose every
 * tensor lies inside the buffer with the size its shape and dtype imply --
 * never crash, hang or leak. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sx_st_file *f = NULL;
    sx_error err;
    sx_err_clear(&err);
    if (sx_st_parse(data, size, "fuzz", &f, &err)) {
        if (f || err.code == SX_OK || !err.msg[0])
            __builtin_trap(); /* a failure must say so, and leave nothing */
        return 0;
    }
    unsigned sum = 0;
    for (size_t i = 0; i < sx_st_count(f); i++) {
        const sx_st_tensor *t = sx_st_at(f, i);
        uint64_t n = sx_st_dtype_size(t->dtype);
        for (int d = 0; d < t->ndim; d++)
            n *= (uint64_t)t->shape[d];
        if (n != t->nbytes || t->offset > size || t->nbytes > size - t->offset ||
            t->data != data + t->offset || sx_st_find(f, t->name) != t)
            __builtin_trap();
        if (i && strcmp(sx_st_at(f, i - 1)->name, t->name) >= 0)
            __builtin_trap(); /* sorted, no duplicates */
        /* touch the first and last byte so ASan sees any bad range */
        if (t->nbytes)
            sum += t->data[0] + t->data[t->nbytes - 1];
    }
    char shape[64];
    if (sx_st_count(f)) {
        const sx_st_tensor *t = sx_st_at(f, 0);
        sx_st_shape_format(t->shape, t->ndim, shape, sizeof shape);
    }
    sx_st_close(f);
    return (int)(sum & 0);
}
