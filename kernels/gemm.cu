// bf16 GEMMs on cuBLAS (f32 accumulation), in the nn.Linear layout.
//
// cuBLAS is column-major.  A row-major [rows][cols] matrix is the same memory
// as a column-major [cols][rows] one, so y[m][n] = x[m][k] . w[n][k]^T is
// computed as the column-major y^T (n x m) = w^T^T (n x k) . x^T (k x m):
// A = w read transposed (op T, lda k), B = x as stored (op N, ldb k), ldc n.
#include <cublas_v2.h>
#include <stdlib.h>

#include "kernels/sx_cuda_util.cuh"
#include "kernels/sx_kernels.h"

#define SX_BLAS_TRY(call)                                                              \
    do {                                                                               \
        cublasStatus_t sx_s_ = (call);                                                 \
        if (sx_s_ != CUBLAS_STATUS_SUCCESS) {                                          \
            fprintf(stderr, "%s:%d: cuBLAS error %s\n", __FILE__, __LINE__,            \
                    cublasGetStatusString(sx_s_));                                     \
            return SX_EINTERNAL;                                                       \
        }                                                                              \
    } while (0)

// The handle with what cublasSetStream forgets: cuBLAS resets the workspace
// to its default pool on every stream change, and that pool may allocate,
// which a graph capture forbids.  So the stream is set only when it changes
// (never inside a capture in practice), and the workspace again after it.
typedef struct blas {
    cublasHandle_t h;
    void          *ws;
    size_t         ws_bytes;
    cudaStream_t   stream;
    int            stream_set;
} blas;

extern "C" int sx_cuda_blas_new(void *workspace, size_t workspace_bytes, void **out)
{
    *out = NULL;
    blas *b = (blas *)calloc(1, sizeof *b);
    if (!b)
        return SX_ENOMEM;
    cublasStatus_t s = cublasCreate(&b->h);
    if (s == CUBLAS_STATUS_SUCCESS && workspace)
        s = cublasSetWorkspace(b->h, workspace, workspace_bytes);
    if (s != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "%s:%d: cuBLAS error %s\n", __FILE__, __LINE__, cublasGetStatusString(s));
        if (b->h)
            cublasDestroy(b->h);
        free(b);
        return SX_EINTERNAL;
    }
    b->ws = workspace;
    b->ws_bytes = workspace_bytes;
    *out = b;
    return SX_OK;
}

extern "C" void sx_cuda_blas_free(void *p)
{
    blas *b = (blas *)p;
    if (!b)
        return;
    cublasDestroy(b->h);
    free(b);
}

extern "C" int sx_cuda_gemm(void *p, const uint16_t *x, const uint16_t *w, int m, int n, int k,
                            float *y, void *stream)
{
    blas *b = (blas *)p;
    if (!b || m < 0 || n <= 0 || k <= 0)
        return SX_EINVAL;
    if (m == 0)
        return SX_OK;
    const float one = 1.0f, zero = 0.0f;
    if (!b->stream_set || b->stream != (cudaStream_t)stream) {
        SX_BLAS_TRY(cublasSetStream(b->h, (cudaStream_t)stream));
        if (b->ws)
            SX_BLAS_TRY(cublasSetWorkspace(b->h, b->ws, b->ws_bytes));
        b->stream = (cudaStream_t)stream;
        b->stream_set = 1;
    }
    SX_BLAS_TRY(cublasGemmEx(b->h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, CUDA_R_16BF, k, x,
                             CUDA_R_16BF, k, &zero, y, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT));
    return SX_OK;
}
