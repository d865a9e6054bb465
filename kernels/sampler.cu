// The masked sampler on the GPU: one block per sequence, following the CPU
// sampler (engine/sampler/sampler_plan.c, engine/sampler/sampler.c) step for step, with the
// same weights, keys and RNG (common/sx_sample_math.h), so that both pick
// the same token from the same row and (seed, draw).
//
// Candidates are a rank prefix (logit descending, id ascending) described by
// a key threshold theta and a quota q of the tokens whose key equals theta,
// taken in id order.  top-k and top-p find theta by bisection over the 32
// bits of the key, each step one block-wide count or weight sum; every sum
// runs in a fixed order (per-thread strided loops, then a fixed shuffle
// tree), so the kernel is deterministic run to run.  The draw is a prefix
// sum in token id order over contiguous per-thread chunks.
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "kernels/cuda_check.h"
#include "kernels/sx_cuda_util.cuh"

extern "C" {
#include "kernels/sx_kernels.h"
}

#include "common/sx_sample_math.h"

// threads per block (one block per sequence); a multiple of 32, at most
// 1024.  Overridable so that a CPU emulation can run the kernel with fewer.
#ifndef SX_SAMPLER_THREADS
#define SX_SAMPLER_THREADS 1024
#endif
#define NT SX_SAMPLER_THREADS
#define NW (NT / 32)

namespace {

struct Scratch {
    double d[NW + 1];
    long long i[NW + 1];
    float f[NW];
    int pick;
};

// Block-wide reductions; every thread gets the result.  The leading
// __syncthreads lets a caller reduce again right away.
__device__ double block_sum(double v, Scratch &sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    __syncthreads();
    if (lane == 0)
        sh.d[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < NW ? sh.d[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0)
            sh.d[NW] = v;
    }
    __syncthreads();
    return sh.d[NW];
}

__device__ long long block_sum(long long v, Scratch &sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    __syncthreads();
    if (lane == 0)
        sh.i[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < NW ? sh.i[lane] : 0;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0)
            sh.i[NW] = v;
    }
    __syncthreads();
    return sh.i[NW];
}

// op 0: max, 1: min
__device__ float block_minmax(float v, int op, Scratch &sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        float x = __shfl_down_sync(0xffffffffu, v, o);
        v = op ? fminf(v, x) : fmaxf(v, x);
    }
    __syncthreads();
    if (lane == 0)
        sh.f[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < NW ? sh.f[lane] : sh.f[0];
        for (int o = 16; o > 0; o >>= 1) {
            float x = __shfl_down_sync(0xffffffffu, v, o);
            v = op ? fminf(v, x) : fmaxf(v, x);
        }
        if (lane == 0)
            sh.f[0] = v;
    }
    __syncthreads();
    return sh.f[0];
}

// op 0: max, 1: min
__device__ long long block_minmax(long long v, int op, Scratch &sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        long long x = __shfl_down_sync(0xffffffffu, v, o);
        v = op ? min(v, x) : max(v, x);
    }
    __syncthreads();
    if (lane == 0)
        sh.i[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < NW ? sh.i[lane] : sh.i[0];
        for (int o = 16; o > 0; o >>= 1) {
            long long x = __shfl_down_sync(0xffffffffu, v, o);
            v = op ? min(v, x) : max(v, x);
        }
        if (lane == 0)
            sh.i[NW] = v;
    }
    __syncthreads();
    return sh.i[NW];
}

// Exclusive prefix sums over the threads in order; *total gets the sum.
__device__ long long block_exscan(long long v, Scratch &sh, long long *total)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    long long x = v;
    for (int o = 1; o < 32; o <<= 1) {
        long long y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o)
            x += y;
    }
    __syncthreads();
    if (lane == 31)
        sh.i[w] = x;
    __syncthreads();
    if (w == 0) {
        long long s = lane < NW ? sh.i[lane] : 0, incl = s;
        for (int o = 1; o < 32; o <<= 1) {
            long long y = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o)
                incl += y;
        }
        if (lane < NW)
            sh.i[lane] = incl - s;
        if (lane == NW - 1)
            sh.i[NW] = incl;
    }
    __syncthreads();
    *total = sh.i[NW];
    return sh.i[w] + x - v;
}

// The same for doubles, written into excl[tid] so that neighbouring threads
// see exactly the same boundary values (their ranges tile [0, total)).
__device__ void block_exscan(double v, Scratch &sh, double *excl)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    double x = v;
    for (int o = 1; o < 32; o <<= 1) {
        double y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o)
            x += y;
    }
    double before = __shfl_up_sync(0xffffffffu, x, 1);
    if (lane == 0)
        before = 0.0;
    __syncthreads();
    if (lane == 31)
        sh.d[w] = x;
    __syncthreads();
    if (w == 0) {
        double s = lane < NW ? sh.d[lane] : 0.0, incl = s;
        for (int o = 1; o < 32; o <<= 1) {
            double y = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o)
                incl += y;
        }
        double prev = __shfl_up_sync(0xffffffffu, incl, 1);
        if (lane < NW)
            sh.d[lane] = lane ? prev : 0.0;
        if (lane == NW - 1)
            sh.d[NW] = incl;
    }
    __syncthreads();
    excl[threadIdx.x] = sh.d[w] + before;
    if (threadIdx.x == 0)
        excl[NT] = sh.d[NW];
    __syncthreads();
}

__device__ __forceinline__ int bit_of(const uint32_t *bits, int t)
{
    return (bits[t >> 5] >> (t & 31)) & 1u;
}

__global__ void __launch_bounds__(NT)
    sample_kernel(float *logits, const uint32_t *mask, const sx_cuda_sample_args *args,
                  const int32_t *hist, int V, int32_t *tokens, float *logprobs)
{
    SX_DYN_SMEM(double, dyn);
    __shared__ Scratch sh;
    const int tid = threadIdx.x, row = blockIdx.x, words = (V + 31) / 32;
    double *excl = dyn;                               // NT + 1
    uint32_t *seen = (uint32_t *)(dyn + NT + 1);      // words
    uint32_t *ban = seen + words;                     // words
    const sx_cuda_sample_args a = args[row];
    float *l = logits + (size_t)row * V;
    const uint32_t *mk = mask ? mask + (size_t)row * words : nullptr;
    const int32_t *h = hist ? hist + a.hist_off : nullptr;
    const int hl = h && a.hist_len > 0 ? a.hist_len : 0;
    const int valid = a.vocab_valid > 0 && a.vocab_valid < V ? a.vocab_valid : V;

    // 1. the mask; NaN counts as masked, +inf becomes FLT_MAX
    for (int t = tid; t < V; t += NT) {
        float v = l[t];
        if ((sx_f2u(v) & 0x7FFFFFFFu) > 0x7F800000u)
            v = -INFINITY;
        else if (v == INFINITY)
            v = FLT_MAX;
        if (t >= valid || (mk && !bit_of(mk, t)))
            v = -INFINITY;
        l[t] = v;
    }
    for (int w = tid; w < 2 * words; w += NT)
        seen[w] = 0;
    __syncthreads();

    // 2a. repetition penalty, once per distinct generated token
    const float rp = a.repetition_penalty;
    if (rp != 1.0f && rp > 0.0f) {
        for (int i = tid; i < hl; i += NT) {
            int t = h[i];
            if (t < 0 || t >= V)
                continue;
            uint32_t b = 1u << (t & 31);
            if (atomicOr(&seen[t >> 5], b) & b)
                continue;
            float v = l[t];
            if (v == -INFINITY)
                continue;
            v = v > 0 ? v / rp : v * rp;
            l[t] = v > FLT_MAX ? FLT_MAX : v < -FLT_MAX ? -FLT_MAX : v;
        }
    }
    // 2b. no-repeat-n-gram: the tokens that would repeat an n-gram
    const int n = a.no_repeat_ngram;
    if (n > 0 && hl >= n) {
        for (int i = tid; i + n <= hl; i += NT) {
            bool match = true;
            for (int j = 0; j < n - 1 && match; j++)
                match = h[i + j] == h[hl - n + 1 + j];
            int t = h[i + n - 1];
            if (match && t >= 0 && t < V)
                atomicOr(&ban[t >> 5], 1u << (t & 31));
        }
    }
    __syncthreads();

    // 3. statistics with and without the n-gram bans (the grammar outranks
    // the n-gram rule: when the bans leave nothing, they are dropped)
    float mx_b = -INFINITY, mx_n = -INFINITY;
    long long c_b = 0, c_n = 0;
    for (int t = tid; t < V; t += NT) {
        float v = l[t];
        if (v == -INFINITY)
            continue;
        c_n++;
        mx_n = fmaxf(mx_n, v);
        if (!bit_of(ban, t)) {
            c_b++;
            mx_b = fmaxf(mx_b, v);
        }
    }
    const long long cnt_n = block_sum(c_n, sh), cnt_b = block_sum(c_b, sh);
    if (cnt_n == 0) {
        if (tid == 0) {
            tokens[row] = -1;
            logprobs[row] = NAN;
        }
        return;
    }
    const bool use_bans = cnt_b > 0;
    const long long cnt = use_bans ? cnt_b : cnt_n;
    const float m = block_minmax(use_bans ? mx_b : mx_n, 0, sh);
#define ALLOWED(t, v) ((v) != -INFINITY && !(use_bans && bit_of(ban, (t))))

    long long am = LLONG_MAX;
    for (int t = tid; t < V && am == LLONG_MAX; t += NT)
        if (ALLOWED(t, l[t]) && l[t] == m)
            am = t;
    am = block_minmax(am, 1, sh);

    double s = 0;
    for (int t = tid; t < V; t += NT) {
        float v = l[t];
        if (ALLOWED(t, v))
            s += sx_weight(v, m, 1.0f);
    }
    const double lse = (double)m + log(block_sum(s, sh));

    int tok = (int)am;
    const float T = a.temperature;
    if (T > 0.0f) {
        // 4. the candidates: keys >= theta, the first q ties at theta
        const float inv_t = 1.0f / T;
        const bool topk = a.top_k > 0 && a.top_k < cnt;
        const bool topp = a.top_p < 1.0f;
        const bool minp = a.min_p > 0.0f;
        uint32_t theta = 0, thk = 0;
        long long q = LLONG_MAX, qk = LLONG_MAX;
        if (topk) {
            for (int b = 31; b >= 0; b--) {
                uint32_t cand = thk | (1u << b);
                long long c = 0;
                for (int t = tid; t < V; t += NT) {
                    float v = l[t];
                    c += ALLOWED(t, v) && sx_fkey(v) >= cand;
                }
                if (block_sum(c, sh) >= a.top_k)
                    thk = cand;
            }
            long long c = 0;
            for (int t = tid; t < V; t += NT) {
                float v = l[t];
                c += ALLOWED(t, v) && sx_fkey(v) > thk;
            }
            qk = a.top_k - block_sum(c, sh);
            theta = thk;
            q = qk;
        }
        if (topp) {
            // the weight top-p is a fraction of: what top-k left, or all
            double z = 0;
            for (int t = tid; t < V; t += NT) {
                float v = l[t];
                if (ALLOWED(t, v) && (!topk || sx_fkey(v) > thk))
                    z += sx_weight(v, m, inv_t);
            }
            double zref = block_sum(z, sh);
            if (topk)
                zref += (double)qk * (double)sx_weight(sx_kfloat(thk), m, inv_t);
            const double target = (double)a.top_p * zref;
            uint32_t thp = 0;
            for (int b = 31; b >= 0; b--) {
                uint32_t cand = thp | (1u << b);
                double mass = zref;
                if (!topk || cand > thk) {
                    double w = 0;
                    for (int t = tid; t < V; t += NT) {
                        float v = l[t];
                        if (ALLOWED(t, v) && sx_fkey(v) >= cand)
                            w += sx_weight(v, m, inv_t);
                    }
                    mass = block_sum(w, sh);
                }
                if (mass >= target)
                    thp = cand;
            }
            double ab = 0;
            long long ties = 0;
            for (int t = tid; t < V; t += NT) {
                float v = l[t];
                if (!ALLOWED(t, v))
                    continue;
                uint32_t k = sx_fkey(v);
                if (k > thp)
                    ab += sx_weight(v, m, inv_t);
                ties += k == thp;
            }
            const double above = block_sum(ab, sh);
            long long cap = block_sum(ties, sh);
            if (topk && thp == thk)
                cap = qk;
            const float wt = sx_weight(sx_kfloat(thp), m, inv_t);
            long long need = wt > 0 ? (long long)ceil((target - above) / (double)wt) : 1;
            theta = thp;
            q = need < 1 ? 1 : need > cap ? cap : need;
        }

        // 5. the draw, in token id order over contiguous chunks
        const int chunk = (V + NT - 1) / NT;
        const int t0 = min(V, tid * chunk), t1 = min(V, t0 + chunk);
        long long my_ties = 0, all_ties;
        for (int t = t0; t < t1; t++) {
            float v = l[t];
            my_ties += ALLOWED(t, v) && sx_fkey(v) == theta;
        }
        const long long tie_base = block_exscan(my_ties, sh, &all_ties);
#define MEMBER(t, v, w, ti)                                                                \
    (ALLOWED(t, v) && sx_fkey(v) >= theta && (sx_fkey(v) > theta || (ti)++ < q) &&          \
     (!minp || (w) >= a.min_p))
        double my = 0;
        long long ti = tie_base;
        for (int t = t0; t < t1; t++) {
            float v = l[t], w = sx_weight(v, m, inv_t);
            if (MEMBER(t, v, w, ti))
                my += w;
        }
        block_exscan(my, sh, excl);
        const double total = excl[NT];
        const double target = sx_rng_uniform(a.seed, a.draw) * total;
        if (tid == 0)
            sh.pick = INT_MAX;
        __syncthreads();
        if (my > 0 && excl[tid] <= target && target < (tid + 1 < NT ? excl[tid + 1] : total)) {
            double c = excl[tid];
            int found = -1, last = -1;
            ti = tie_base;
            for (int t = t0; t < t1 && found < 0; t++) {
                float v = l[t], w = sx_weight(v, m, inv_t);
                if (!MEMBER(t, v, w, ti))
                    continue;
                c += w;
                if (c > target)
                    found = t;
                else if (w > 0)
                    last = t;
            }
            atomicMin(&sh.pick, found >= 0 ? found : last);
        }
        __syncthreads();
        tok = sh.pick;
        if (tok == INT_MAX || tok < 0) {
            // rounding left the target at the very end: the last member
            // with weight, as the CPU does
            long long hi = -1;
            ti = tie_base;
            for (int t = t0; t < t1; t++) {
                float v = l[t], w = sx_weight(v, m, inv_t);
                if (MEMBER(t, v, w, ti) && w > 0)
                    hi = t;
            }
            hi = block_minmax(hi, 0, sh);
            tok = hi >= 0 ? (int)hi : (int)am;
        }
#undef MEMBER
    }
#undef ALLOWED
    if (tid == 0) {
        tokens[row] = tok;
        logprobs[row] = (float)((double)l[tok] - lse);
    }
}

} // namespace

extern "C" int sx_cuda_sample(float *d_logits, const uint32_t *d_mask,
                              const sx_cuda_sample_args *d_args, const int32_t *d_hist,
                              int n_rows, int n_vocab, int32_t *d_tokens, float *d_logprobs,
                              void *stream)
{
    if (n_rows <= 0 || n_vocab <= 0 || !d_logits || !d_args || !d_tokens || !d_logprobs)
        return SX_EINVAL;
    size_t words = ((size_t)n_vocab + 31) / 32;
    size_t smem = (NT + 1) * sizeof(double) + 2 * words * sizeof(uint32_t);
    if (smem > 48 * 1024)
        SX_CUDA_TRY(cudaFuncSetAttribute(sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem));
    SX_LAUNCH(sample_kernel, n_rows, NT, smem, stream, d_logits, d_mask, d_args, d_hist, n_vocab,
              d_tokens, d_logprobs);
    SX_LAUNCH_CHECK();
    return SX_OK;
}
