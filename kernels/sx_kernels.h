/* sx_kernels: GPU kernels (kernels/ *.cu files) and their CPU references
 * (kernels/ *.c files).  Every GPU kernel has a reference here with the same
 * semantics, and tests/gpu compares the two (the llm.c habit).
 *
 * Launchers take a CUDA stream as `void *` so this header stays plain C;
 * they check launch errors and return 0 or an sx_code, printing file/line
 * of the failing CUDA call to stderr. */
#ifndef SX_KERNELS_H
#define SX_KERNELS_H

#include <stdint.h>

/* Grammar bitmask: ceil(n_vocab/32) uint32 words per row, bit t of word
 * t/32 set = token t allowed.  Disallowed logits become -INFINITY. */
void sx_ref_apply_mask(float *logits, const uint32_t *mask, int n_rows, int n_vocab);

/* GPU: the same on device pointers, asynchronously on `stream`. */
int sx_cuda_apply_mask(float *d_logits, const uint32_t *d_mask, int n_rows, int n_vocab,
                       void *stream);

/* 1 if a CUDA device is usable, else 0 (and *why gets a reason). */
int sx_cuda_available(const char **why);

#endif
