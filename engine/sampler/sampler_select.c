/* Radix selection for top-k and top-p: four 8-bit digits of the logit key,
 * most significant first.  The first level reads the whole list, the next
 * ones only the bucket chosen so far, so the cost is one pass plus a
 * little, with no sort of the 151,936 logits. */
#include <string.h>

#include "engine/sampler/sampler_internal.h"

/* Keeps in idx the members of the previous subset whose digit at `shift`
 * is b (the first level reads keys directly: subset = everything). */
static int narrow(const uint32_t *keys, int n, int32_t *idx, int m, int first, int shift,
                  unsigned b)
{
    int out = 0;
    if (first) {
        for (int i = 0; i < n; i++)
            if ((keys[i] >> shift) == b)
                idx[out++] = i;
    } else {
        for (int j = 0; j < m; j++)
            if (((keys[idx[j]] >> shift) & 255u) == b)
                idx[out++] = idx[j];
    }
    return out;
}

uint32_t sx_select_count(const uint32_t *keys, int n, int k, int32_t *idx)
{
    uint32_t prefix = 0;
    int m = n;
    for (int shift = 24; shift >= 0; shift -= 8) {
        int first = shift == 24;
        int hist[256];
        memset(hist, 0, sizeof hist);
        if (first)
            for (int i = 0; i < n; i++)
                hist[keys[i] >> 24]++;
        else
            for (int j = 0; j < m; j++)
                hist[(keys[idx[j]] >> shift) & 255u]++;
        int b = 255;
        while (b > 0 && hist[b] < k) {
            k -= hist[b];
            b--;
        }
        prefix |= (uint32_t)b << shift;
        if (shift)
            m = narrow(keys, n, idx, m, first, shift, (unsigned)b);
    }
    return prefix;
}

uint32_t sx_select_mass(const uint32_t *keys, const float *w, int n, double target, int32_t *idx)
{
    uint32_t prefix = 0;
    int m = n;
    for (int shift = 24; shift >= 0; shift -= 8) {
        int first = shift == 24;
        double mass[256];
        int cnt[256];
        memset(mass, 0, sizeof mass);
        memset(cnt, 0, sizeof cnt);
        if (first) {
            for (int i = 0; i < n; i++) {
                mass[keys[i] >> 24] += w[i];
                cnt[keys[i] >> 24]++;
            }
        } else {
            for (int j = 0; j < m; j++) {
                unsigned d = (keys[idx[j]] >> shift) & 255u;
                mass[d] += w[idx[j]];
                cnt[d]++;
            }
        }
        int b = 255, lowest = -1;
        for (; b >= 0; b--) {
            if (!cnt[b])
                continue;
            lowest = b;
            if (mass[b] >= target)
                break;
            target -= mass[b];
        }
        if (b < 0)
            b = lowest; /* rounding: nothing reached the target; keep everything below */
        prefix |= (uint32_t)b << shift;
        if (shift)
            m = narrow(keys, n, idx, m, first, shift, (unsigned)b);
    }
    return prefix;
}
