/* Error checking for CUDA calls, with the file and line of the call. */
#ifndef SX_CUDA_CHECK_H
#define SX_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>

#include "common/sx_error.h"

#define SX_CUDA_TRY(call)                                                        \
    do {                                                                         \
        cudaError_t sx_e_ = (call);                                              \
        if (sx_e_ != cudaSuccess) {                                              \
            fprintf(stderr, "%s:%d: CUDA error %s: %s\n", __FILE__, __LINE__,    \
                    cudaGetErrorName(sx_e_), cudaGetErrorString(sx_e_));         \
            return SX_EINTERNAL;                                                 \
        }                                                                        \
    } while (0)

#endif
