// The CPU emulation of the CUDA runtime and cuBLAS subset behind
// tests/gpu/emu/include.  Purpose: run strux's kernels and GPU engine,
// unchanged, on a machine without a GPU, with CUDA's semantics where bugs
// hide: barriers (__syncthreads, __syncwarp), warp shuffles, launch limits,
// uninitialised device memory (filled with NaN bytes), graph capture (work
// recorded, not run, and replayed with the arguments of capture time) and
// cuBLAS's column-major GEMM.
//
// A block runs as blockDim fibers (ucontext, or on x86-64 a switch of the
// callee-saved registers, below) on one OS thread; a fiber runs
// until it reaches a barrier or ends, then the scheduler releases barriers
// whose participants have all arrived.  Fiber order between barriers is
// forward, reversed or shuffled (SX_EMU_ORDER=fwd|rev|rand) so that a
// missing barrier shows up as a difference between runs.  A barrier that can
// never be released (divergent __syncthreads, a shuffle with exited lanes)
// aborts with the kernel's name.
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include <functional>
#include <map>
#include <random>
#include <vector>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "common/sx_bf16.h"

// ---- state -----------------------------------------------------------------

struct sx_emu_stream {
    bool                               capturing;
    std::vector<std::function<void()>> captured;
};
struct sx_emu_event {
    double t;
};
struct sx_emu_graph {
    std::vector<std::function<void()>> work;
};
struct sx_emu_graph_exec {
    std::vector<std::function<void()>> work;
};
struct sx_emu_blas {
    cudaStream_t stream;
    bool         own_workspace; /* cleared by cublasSetStream, as in cuBLAS */
};

static sx_emu_stream           g_default_stream;
static cudaError_t             g_last = cudaSuccess;
static std::map<void *, size_t> g_dev;
static long                    g_kernels, g_graph_launches;
static int                     g_capturing; /* streams in capture: no allocation, no sync copy */

static sx_emu_stream *stream_of(cudaStream_t s)
{
    return s ? s : &g_default_stream;
}

static cudaError_t set_err(cudaError_t e)
{
    if (e != cudaSuccess)
        g_last = e;
    return e;
}

// Runs now, or records into the capturing stream's graph.
static cudaError_t submit(cudaStream_t s, std::function<void()> fn)
{
    sx_emu_stream *st = stream_of(s);
    if (st->capturing)
        st->captured.push_back(fn);
    else
        fn();
    return cudaSuccess;
}

// ---- fibers and blocks -------------------------------------------------------

enum { F_RUN, F_WAIT_BLOCK, F_WAIT_WARP, F_DONE };

#if defined(__x86_64__) && !defined(SX_EMU_UCONTEXT)
// The fiber switch: saves what the SysV ABI has a call preserve (rbx, rbp,
// r12-r15, MXCSR and the x87 control word) on the old stack, stores its
// stack pointer in *save_sp and resumes the stack at load_sp.  swapcontext
// also saves and restores the signal mask, a system call on every switch,
// which was most of the emulator's time (a barrier switches every thread
// of the block twice).  -DSX_EMU_UCONTEXT builds the ucontext version.
#define SX_EMU_FAST_SWITCH 1
extern "C" void sx_emu_fswitch(void **save_sp, void *load_sp);
asm(".text\n"
    ".globl sx_emu_fswitch\n"
    ".type sx_emu_fswitch, @function\n"
    "sx_emu_fswitch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    subq $8, %rsp\n"
    "    stmxcsr (%rsp)\n"
    "    fnstcw 4(%rsp)\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    ldmxcsr (%rsp)\n"
    "    fldcw 4(%rsp)\n"
    "    addq $8, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size sx_emu_fswitch, .-sx_emu_fswitch\n");
#else
#define SX_EMU_FAST_SWITCH 0
#endif

struct fiber {
#if SX_EMU_FAST_SWITCH
    void      *sp;   // the saved stack pointer while switched out
#else
    ucontext_t ctx;
#endif
    int        state;
    dim3       tid;
    int        lane, warp;
};

#define STACK_BYTES (256u << 10)
#define MAX_THREADS 1024

#if SX_EMU_FAST_SWITCH
static void                        *g_sched_sp;
#else
static ucontext_t                   g_sched;
#endif
static fiber                        g_fibers[MAX_THREADS];
static char                        *g_stacks;
static int                          g_nthreads;
static fiber                       *g_cur;
static const std::function<void()> *g_body;
static const char                  *g_kernel;
static unsigned char                g_slots[MAX_THREADS / 32][32][8];
static std::vector<unsigned char>   g_dyn;
static std::mt19937                 g_rng(12345);

dim3 sx_emu_block_idx, sx_emu_block_dim, sx_emu_grid_dim;

const dim3 &sx_emu_thread_idx(void)
{
    return g_cur->tid;
}

void *sx_emu_dyn_smem(void)
{
    return g_dyn.data();
}

static void fatal(const char *what)
{
    fprintf(stderr, "cuda emu: kernel %s, block (%u,%u,%u): %s\n", g_kernel, sx_emu_block_idx.x,
            sx_emu_block_idx.y, sx_emu_block_idx.z, what);
    abort();
}

static void yield(int state)
{
    fiber *f = g_cur;
    f->state = state;
#if SX_EMU_FAST_SWITCH
    sx_emu_fswitch(&f->sp, g_sched_sp);
#else
    swapcontext(&f->ctx, &g_sched);
#endif
}

static void fiber_main(void)
{
    (*g_body)();
    yield(F_DONE);
}

void __syncthreads(void)
{
    yield(F_WAIT_BLOCK);
}

void __syncwarp(unsigned mask)
{
    (void)mask;
    yield(F_WAIT_WARP);
}

int sx_emu_src_xor(int lane, int arg, int width)
{
    int s = lane ^ arg;
    return s / width == lane / width ? s : lane;
}

int sx_emu_src_idx(int lane, int arg, int width)
{
    return lane / width * width + ((arg % width) + width) % width;
}

int sx_emu_src_up(int lane, int arg, int width)
{
    return lane % width >= arg ? lane - arg : lane;
}

int sx_emu_src_down(int lane, int arg, int width)
{
    return lane % width + arg < width ? lane + arg : lane;
}

static int warp_size(int warp)
{
    int n = g_nthreads - warp * 32;
    return n < 32 ? n : 32;
}

void sx_emu_exchange(const void *mine, size_t n, int (*src_of)(int, int, int), int arg, int width,
                     void *out)
{
    fiber *f = g_cur;
    if (width <= 0 || width > 32 || (width & (width - 1)))
        fatal("shuffle width is not a power of two <= 32");
    memcpy(g_slots[f->warp][f->lane], mine, n);
    yield(F_WAIT_WARP);
    int src = src_of(f->lane, arg, width);
    if (src < 0 || src >= warp_size(f->warp))
        src = f->lane;
    memcpy(out, g_slots[f->warp][src], n);
    yield(F_WAIT_WARP);
}

unsigned sx_emu_ballot(int pred)
{
    fiber *f = g_cur;
    g_slots[f->warp][f->lane][0] = pred != 0;
    yield(F_WAIT_WARP);
    unsigned m = 0;
    for (int l = 0; l < warp_size(f->warp); l++)
        m |= (unsigned)g_slots[f->warp][l][0] << l;
    yield(F_WAIT_WARP);
    return m;
}

static int order_mode(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *o = getenv("SX_EMU_ORDER");
        mode = !o || !strcmp(o, "fwd") ? 0 : !strcmp(o, "rev") ? 1 : 2;
    }
    return mode;
}

static void run_block(void)
{
    int n = g_nthreads;
    static int order[MAX_THREADS];
    for (int i = 0; i < n; i++) {
        fiber *f = &g_fibers[i];
        unsigned bx = sx_emu_block_dim.x, by = sx_emu_block_dim.y;
        f->tid = dim3(i % bx, (i / bx) % by, i / (bx * by));
        f->lane = i % 32;
        f->warp = i / 32;
        f->state = F_RUN;
#if SX_EMU_FAST_SWITCH
        // the stack as sx_emu_fswitch leaves it, returning into fiber_main
        // with the alignment of a call (rsp + 8 a multiple of 16)
        uintptr_t top = (uintptr_t)(g_stacks + (size_t)(i + 1) * STACK_BYTES) & ~(uintptr_t)15;
        void **sp = (void **)top;
        *--sp = NULL;                        // fiber_main never returns
        *--sp = (void *)fiber_main;
        for (int r = 0; r < 6; r++)
            *--sp = NULL;                    // rbp rbx r12-r15
        --sp;
        uint32_t mx;
        uint16_t cw;
        __asm__ volatile("stmxcsr %0" : "=m"(mx));
        __asm__ volatile("fnstcw %0" : "=m"(cw));
        memcpy((char *)sp, &mx, 4);
        memcpy((char *)sp + 4, &cw, 2);
        f->sp = sp;
#else
        getcontext(&f->ctx);
        f->ctx.uc_stack.ss_sp = g_stacks + (size_t)i * STACK_BYTES;
        f->ctx.uc_stack.ss_size = STACK_BYTES;
        f->ctx.uc_link = NULL;
        makecontext(&f->ctx, fiber_main, 0);
#endif
        order[i] = i;
    }
    memset(g_dyn.data(), 0xff, g_dyn.size()); // shared memory starts as garbage (NaN)
    for (;;) {
        int mode = order_mode();
        if (mode == 1)
            for (int i = 0; i < n; i++)
                order[i] = n - 1 - i;
        else if (mode == 2)
            std::shuffle(order, order + n, g_rng);
        int ran = 0;
        for (int k = 0; k < n; k++) {
            fiber *f = &g_fibers[order[k]];
            if (f->state != F_RUN)
                continue;
            g_cur = f;
#if SX_EMU_FAST_SWITCH
            sx_emu_fswitch(&g_sched_sp, f->sp);
#else
            swapcontext(&g_sched, &f->ctx);
#endif
            ran = 1;
        }
        int done = 0, wait_block = 0, released = 0;
        for (int i = 0; i < n; i++) {
            done += g_fibers[i].state == F_DONE;
            wait_block += g_fibers[i].state == F_WAIT_BLOCK;
        }
        if (done == n)
            break;
        for (int w = 0; w * 32 < n; w++) {
            int lo = w * 32, hi = lo + warp_size(w), ww = 0, wd = 0;
            for (int i = lo; i < hi; i++) {
                ww += g_fibers[i].state == F_WAIT_WARP;
                wd += g_fibers[i].state == F_DONE;
            }
            if (ww == 0 || ww + wd != hi - lo)
                continue;
            if (wd)
                fatal("warp-synchronous call (__syncwarp / shuffle) with exited lanes");
            for (int i = lo; i < hi; i++)
                g_fibers[i].state = F_RUN;
            released = 1;
        }
        if (!released && wait_block + done == n) {
            for (int i = 0; i < n; i++)
                if (g_fibers[i].state == F_WAIT_BLOCK)
                    g_fibers[i].state = F_RUN;
            released = 1;
        }
        if (!released && !ran)
            fatal("deadlock: threads wait at different barriers (divergent __syncthreads?)");
    }
}

static void launch_now(const char *name, dim3 grid, dim3 block, size_t smem,
                       const std::function<void()> &body)
{
    g_kernels++;
    if (!g_stacks) {
        g_stacks = (char *)mmap(NULL, (size_t)MAX_THREADS * STACK_BYTES, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (g_stacks == MAP_FAILED)
            abort();
    }
    g_kernel = name;
    g_body = &body;
    g_nthreads = (int)(block.x * block.y * block.z);
    g_dyn.assign(smem ? smem : 16, 0xff);
    sx_emu_block_dim = block;
    sx_emu_grid_dim = grid;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                sx_emu_block_idx = dim3(x, y, z);
                run_block();
            }
}

void sx_emu_launch_named(const char *name, dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                         std::function<void()> body)
{
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (grid.x < 1 || grid.x > 0x7fffffffu || grid.y < 1 || grid.y > 65535 || grid.z < 1 ||
        grid.z > 65535 || threads < 1 || threads > MAX_THREADS || block.z > 64 ||
        smem > 227u * 1024) {
        fprintf(stderr, "cuda emu: bad launch of %s: grid (%u,%u,%u) block (%u,%u,%u) smem %zu\n",
                name, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem);
        set_err(cudaErrorInvalidConfiguration);
        return;
    }
    submit(s, [=]() { launch_now(name, grid, block, smem, body); });
}

// ---- runtime -------------------------------------------------------------------

extern "C" {

long sx_emu_kernels_run(void)
{
    return g_kernels;
}

long sx_emu_graph_launches(void)
{
    return g_graph_launches;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    const char *none = getenv("SX_EMU_NO_DEVICE");
    if (none && *none && strcmp(none, "0")) {
        *n = 0;
        return set_err(cudaErrorNoDevice);
    }
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev)
{
    return dev == 0 ? cudaSuccess : set_err(cudaErrorInvalidValue);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "strux CPU emulator");
    p->totalGlobalMem = (size_t)4 << 30;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 8; // few SMs: decode splits vary with the batch
    return dev == 0 ? cudaSuccess : set_err(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
    *f = (size_t)1 << 30;
    *t = (size_t)4 << 30;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = g_last;
    g_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return g_last;
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorStreamCaptureInvalidated: return "operation not permitted when stream is capturing";
    default: return "unknown error";
    }
}

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    default: return "cudaErrorUnknown";
    }
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    if (g_capturing)
        return set_err(cudaErrorStreamCaptureInvalidated);
    size_t n = (bytes + 255) & ~(size_t)255;
    *p = aligned_alloc(256, n ? n : 256);
    if (!*p)
        return set_err(cudaErrorMemoryAllocation);
    memset(*p, 0xff, n); // device memory is not zeroed: make stale reads NaN
    g_dev[*p] = bytes;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    if (!g_dev.erase(p))
        return set_err(cudaErrorInvalidValue);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    *p = malloc(bytes ? bytes : 1);
    return *p ? cudaSuccess : set_err(cudaErrorMemoryAllocation);
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    return cudaMallocHost(p, bytes);
}

cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned flags)
{
    (void)p;
    (void)bytes;
    (void)flags;
    return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p)
{
    (void)p;
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    (void)kind;
    if (g_capturing)
        return set_err(cudaErrorStreamCaptureInvalidated);
    memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s)
{
    (void)kind;
    return submit(s, [=]() { memmove(dst, src, bytes); });
}

cudaError_t cudaMemset(void *p, int v, size_t bytes)
{
    memset(p, v, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s)
{
    return submit(s, [=]() { memset(p, v, bytes); });
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    *s = new sx_emu_stream();
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    return cudaStreamCreate(s);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    return stream_of(s)->capturing ? set_err(cudaErrorStreamCaptureInvalidated) : cudaSuccess;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = new sx_emu_event();
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    return submit(s, [=]() { e->t = now_ms(); });
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    (void)e;
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    *ms = (float)(b->t - a->t);
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode)
{
    (void)mode;
    sx_emu_stream *st = stream_of(s);
    if (st->capturing)
        return set_err(cudaErrorInvalidValue);
    st->capturing = true;
    st->captured.clear();
    g_capturing++;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    sx_emu_stream *st = stream_of(s);
    if (!st->capturing)
        return set_err(cudaErrorInvalidValue);
    st->capturing = false;
    g_capturing--;
    *g = new sx_emu_graph();
    (*g)->work.swap(st->captured);
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags)
{
    (void)flags;
    *x = new sx_emu_graph_exec();
    (*x)->work = g->work;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s)
{
    if (stream_of(s)->capturing)
        return set_err(cudaErrorInvalidValue);
    g_graph_launches++;
    for (auto &w : x->work)
        w();
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    delete g;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
    delete x;
    return cudaSuccess;
}

// ---- cuBLAS ----------------------------------------------------------------------

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    *h = new sx_emu_blas();
    (*h)->stream = NULL;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    h->stream = s;
    h->own_workspace = false; /* cuBLAS: "unconditionally resets the workspace" */
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes)
{
    if ((uintptr_t)ws % 256 || bytes < 4096)
        return CUBLAS_STATUS_INVALID_VALUE;
    h->own_workspace = true;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : s == CUBLAS_STATUS_INVALID_VALUE
                                                                    ? "CUBLAS_STATUS_INVALID_VALUE"
                                                                    : "CUBLAS_STATUS_NOT_SUPPORTED";
}

static float load(cudaDataType_t t, const void *p, size_t i)
{
    return t == CUDA_R_32F ? ((const float *)p)[i] : sx_bf16_to_f32(((const uint16_t *)p)[i]);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType_t at,
                            int lda, const void *B, cudaDataType_t bt, int ldb, const void *beta,
                            void *C, cudaDataType_t ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
    (void)algo;
    if (m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? m : k) ||
        ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m || lda < 1 || ldb < 1 || ldc < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (compute != CUBLAS_COMPUTE_32F || at != bt || (at != CUDA_R_16BF && at != CUDA_R_32F) ||
        (ct != CUDA_R_32F && ct != CUDA_R_16BF))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    /* the default workspace pool may allocate: not inside a capture */
    if (stream_of(h->stream)->capturing && !h->own_workspace)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    float al = *(const float *)alpha, be = *(const float *)beta;
    submit(h->stream, [=]() {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                float acc = 0.0f;
                for (int l = 0; l < k; l++) {
                    size_t ai = ta == CUBLAS_OP_N ? (size_t)i + (size_t)l * lda
                                                  : (size_t)l + (size_t)i * lda;
                    size_t bi = tb == CUBLAS_OP_N ? (size_t)l + (size_t)j * ldb
                                                  : (size_t)j + (size_t)l * ldb;
                    acc += load(at, A, ai) * load(bt, B, bi);
                }
                size_t ci = (size_t)i + (size_t)j * ldc;
                float v = be != 0.0f ? al * acc + be * load(ct, C, ci) : al * acc;
                if (ct == CUDA_R_32F)
                    ((float *)C)[ci] = v;
                else
                    ((uint16_t *)C)[ci] = sx_f32_to_bf16(v);
            }
    });
    return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
