/* A stand-in for the CUDA runtime header, for tests/gpu/emu: the same names
 * and meanings for the subset strux uses, implemented on the CPU
 * (tests/gpu/emu/cuda_emu.cpp).  Device memory is host memory; streams run
 * their work at once, except while captured into a graph.  Kernels (C++
 * only) run block by block, each CUDA thread a fiber, with real barrier and
 * warp-shuffle semantics. */
#ifndef SX_EMU_CUDA_RUNTIME_H
#define SX_EMU_CUDA_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorNoDevice = 100,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorLaunchFailure = 719
} cudaError_t;

typedef struct sx_emu_stream *cudaStream_t;
typedef struct sx_emu_event *cudaEvent_t;
typedef struct sx_emu_graph *cudaGraph_t;
typedef struct sx_emu_graph_exec *cudaGraphExec_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

typedef enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
} cudaStreamCaptureMode;

typedef enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8
} cudaFuncAttribute;

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaHostAllocDefault 0x00
#define cudaHostRegisterDefault 0x00

typedef struct cudaDeviceProp {
    char   name[256];
    size_t totalGlobalMem;
    int    major, minor;
    int    multiProcessorCount;
} cudaDeviceProp;

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);

cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned flags);
cudaError_t cudaHostUnregister(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemset(void *p, int v, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x);

/* Emulator statistics, for tests: kernels run, graph launches. */
long sx_emu_kernels_run(void);
long sx_emu_graph_launches(void);

#ifdef __cplusplus
}

/* ---- device side (C++ only) ---------------------------------------------- */
#include <functional>
#include <math.h>
#include <string.h>
#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
typedef dim3 uint3;

const dim3 &sx_emu_thread_idx(void);
extern dim3 sx_emu_block_idx, sx_emu_block_dim, sx_emu_grid_dim;
#define threadIdx (sx_emu_thread_idx())
#define blockIdx (sx_emu_block_idx)
#define blockDim (sx_emu_block_dim)
#define gridDim (sx_emu_grid_dim)

void  sx_emu_launch_named(const char *name, dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                          std::function<void()> body);
void *sx_emu_dyn_smem(void);
template <typename F, typename... A>
static inline std::function<void()> sx_emu_bind(F f, A... a)
{
    return [=]() { f(a...); };
}

void __syncthreads(void);
void __syncwarp(unsigned mask = 0xffffffffu);
/* Each lane publishes 8 bytes and reads lane src's; src < 0 = its own. */
void sx_emu_exchange(const void *mine, size_t n, int (*src_of)(int lane, int arg, int width),
                     int arg, int width, void *out);
int  sx_emu_src_xor(int lane, int arg, int width);
int  sx_emu_src_idx(int lane, int arg, int width);
int  sx_emu_src_up(int lane, int arg, int width);
int  sx_emu_src_down(int lane, int arg, int width);
unsigned sx_emu_ballot(int pred);

template <typename T>
static inline T sx_emu_shfl(T v, int (*f)(int, int, int), int arg, int width)
{
    static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
    T out;
    sx_emu_exchange(&v, sizeof v, f, arg, width, &out);
    return out;
}
template <typename T>
static inline T __shfl_xor_sync(unsigned, T v, int m, int width = 32)
{
    return sx_emu_shfl(v, sx_emu_src_xor, m, width);
}
template <typename T>
static inline T __shfl_sync(unsigned, T v, int src, int width = 32)
{
    return sx_emu_shfl(v, sx_emu_src_idx, src, width);
}
template <typename T>
static inline T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32)
{
    return sx_emu_shfl(v, sx_emu_src_up, (int)d, width);
}
template <typename T>
static inline T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32)
{
    return sx_emu_shfl(v, sx_emu_src_down, (int)d, width);
}
static inline unsigned __ballot_sync(unsigned, int pred)
{
    return sx_emu_ballot(pred);
}

/* Fibers of a block never run at the same time, so atomics are plain. */
template <typename T>
static inline T atomicAdd(T *p, T v) { T o = *p; *p = o + v; return o; }
template <typename T>
static inline T atomicMin(T *p, T v) { T o = *p; *p = v < o ? v : o; return o; }
template <typename T>
static inline T atomicMax(T *p, T v) { T o = *p; *p = v > o ? v : o; return o; }
template <typename T>
static inline T atomicOr(T *p, T v) { T o = *p; *p = o | v; return o; }
template <typename T>
static inline T atomicAnd(T *p, T v) { T o = *p; *p = o & v; return o; }
template <typename T>
static inline T atomicExch(T *p, T v) { T o = *p; *p = v; return o; }
template <typename T>
static inline T atomicCAS(T *p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }

template <typename A, typename B>
static inline typename std::common_type<A, B>::type min(A a, B b)
{
    typedef typename std::common_type<A, B>::type C;
    return (C)a < (C)b ? (C)a : (C)b;
}
template <typename A, typename B>
static inline typename std::common_type<A, B>::type max(A a, B b)
{
    typedef typename std::common_type<A, B>::type C;
    return (C)a > (C)b ? (C)a : (C)b;
}

static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }

template <typename F>
static inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) { return cudaSuccess; }
#endif

#endif
