/* The sampler's passes over a whole row of logits (151,936 of them for
 * Qwen3), written so that gcc -O2 vectorises them: fixed-width inner loops
 * over independent lanes, selects through bit masks instead of branches.
 * On x86-64 gcc also builds an AVX2 clone of each, picked at load time;
 * the lanes and their order are the same in both, so are the results. */
#include <math.h>
#include <string.h>

#include "engine/sampler/sampler_internal.h"
#include "common/sx_sample_math.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define SX_HOT __attribute__((target_clones("avx2", "default")))
#else
#define SX_HOT
#endif

static const uint32_t lane_bit[32] = {
    1u << 0,  1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,
    1u << 8,  1u << 9,  1u << 10, 1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15,
    1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 20, 1u << 21, 1u << 22, 1u << 23,
    1u << 24, 1u << 25, 1u << 26, 1u << 27, 1u << 28, 1u << 29, 1u << 30, 1u << 31};

/* One mask word over 32 logits: NaN counts as masked, +inf becomes FLT_MAX
 * so that the softmax stays defined, masked logits become -inf. */
static inline void mask_word(float *restrict l, uint32_t bits)
{
    for (int j = 0; j < 32; j++) {
        uint32_t u = sx_f2u(l[j]);
        uint32_t keep = 0u - (uint32_t)((bits & lane_bit[j]) != 0);
        keep &= 0u - (uint32_t)((u & 0x7FFFFFFFu) <= 0x7F800000u);
        u = u == 0x7F800000u ? 0x7F7FFFFFu : u;
        l[j] = sx_u2f((u & keep) | (0xFF800000u & ~keep));
    }
}

SX_HOT void sx_row_mask(float *restrict l, const uint32_t *restrict mask, int rows, int valid)
{
    int words = (rows + 31) / 32;
    for (int w = 0; w < words; w++) {
        uint32_t bits = mask ? mask[w] : 0xFFFFFFFFu;
        int base = w * 32;
        if (valid - base < 32)
            bits &= valid <= base ? 0u : (1u << (valid - base)) - 1u;
        if (rows - base >= 32) {
            mask_word(l + base, bits);
            continue;
        }
        float tail[32] = {0};
        memcpy(tail, l + base, (size_t)(rows - base) * sizeof *l);
        mask_word(tail, bits);
        memcpy(l + base, tail, (size_t)(rows - base) * sizeof *l);
    }
}

SX_HOT void sx_row_stats(const float *l, int rows, float *max, float *min, int *count)
{
    float mx[8], mn[8];
    int c[8];
    for (int j = 0; j < 8; j++) {
        mx[j] = -INFINITY;
        mn[j] = INFINITY;
        c[j] = 0;
    }
    int t = 0;
    for (; t + 8 <= rows; t += 8)
        for (int j = 0; j < 8; j++) {
            float v = l[t + j];
            int a = v != -INFINITY;
            float vm = a ? v : INFINITY;
            mx[j] = v > mx[j] ? v : mx[j];
            mn[j] = vm < mn[j] ? vm : mn[j];
            c[j] += a;
        }
    for (; t < rows; t++) {
        float v = l[t];
        int a = v != -INFINITY;
        mx[0] = v > mx[0] ? v : mx[0];
        mn[0] = a && v < mn[0] ? v : mn[0];
        c[0] += a;
    }
    float m = -INFINITY, lo = INFINITY;
    int cnt = 0;
    for (int j = 0; j < 8; j++) {
        m = mx[j] > m ? mx[j] : m;
        lo = mn[j] < lo ? mn[j] : lo;
        cnt += c[j];
    }
    *max = m;
    *min = lo;
    *count = cnt;
}

SX_HOT double sx_row_mass(const float *l, int n, float m, float inv_t)
{
    double acc[8] = {0};
    int t = 0;
    for (; t + 8 <= n; t += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += sx_weight(l[t + j], m, inv_t);
    double z = 0;
    for (; t < n; t++)
        z += sx_weight(l[t], m, inv_t);
    for (int j = 0; j < 8; j++)
        z += acc[j];
    return z;
}

SX_HOT double sx_row_profile(const float *l, int n, float m, float inv_t, sx_profile *pf)
{
    enum { K = SX_PROFILE_K };
    double acc[8] = {0};
    int c[K][8];
    float ms[K][8];
    memset(c, 0, sizeof c);
    memset(ms, 0, sizeof ms);
    int t = 0;
    for (; t + 8 <= n; t += 8)
        for (int j = 0; j < 8; j++) {
            float d = SX_FSUB(l[t + j], m);
            float w = sx_expneg(SX_FMUL(d, inv_t));
            acc[j] += w;
            for (int k = 0; k < K; k++) {
                uint32_t in = 0u - (uint32_t)(d >= pf->th[k]);
                c[k][j] -= (int)in;
                ms[k][j] += sx_u2f(sx_f2u(w) & in);
            }
        }
    double z = 0;
    for (; t < n; t++) {
        float d = SX_FSUB(l[t], m);
        float w = sx_expneg(SX_FMUL(d, inv_t));
        z += w;
        for (int k = 0; k < K; k++)
            if (d >= pf->th[k]) {
                c[k][0]++;
                ms[k][0] += w;
            }
    }
    for (int j = 0; j < 8; j++)
        z += acc[j];
    for (int k = 0; k < K; k++) {
        pf->cnt[k] = 0;
        pf->mass[k] = 0;
        for (int j = 0; j < 8; j++) {
            pf->cnt[k] += c[k][j];
            pf->mass[k] += ms[k][j];
        }
    }
    return z;
}

SX_HOT int sx_row_any_ge(const float *l, int n, float thr)
{
    int any[16] = {0};
    int t = 0;
    for (; t + 16 <= n; t += 16)
        for (int j = 0; j < 16; j++)
            any[j] |= l[t + j] >= thr;
    for (; t < n; t++)
        any[0] |= l[t] >= thr;
    int r = 0;
    for (int j = 0; j < 16; j++)
        r |= any[j];
    return r;
}

SX_HOT int sx_row_count_ge(const float *l, int n, float thr)
{
    int c[16] = {0};
    int t = 0;
    for (; t + 16 <= n; t += 16)
        for (int j = 0; j < 16; j++)
            c[j] += l[t + j] >= thr;
    for (; t < n; t++)
        c[0] += l[t] >= thr;
    int r = 0;
    for (int j = 0; j < 16; j++)
        r += c[j];
    return r;
}
