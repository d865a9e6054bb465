/* The accept/resample rule of speculative sampling (sampler.h). */
#include "engine/sampler/sampler.h"

/* The residual weight of token t: what p has beyond q there. */
static double residual(const float *p, const float *q, int32_t x, int32_t t)
{
    double r = (double)p[t] - (q ? (double)q[t] : (t == x ? 1.0 : 0.0));
    return r > 0 ? r : 0;
}

int32_t sx_spec_accept(const float *p, const float *q, int n, int32_t x, double u_accept,
                       double u_resample, int *accepted)
{
    double px = p[x], qx = q ? (double)q[x] : 1.0;
    if (accepted)
        *accepted = 0;
    if (qx > 0 && u_accept * qx < px) {
        if (accepted)
            *accepted = 1;
        return x;
    }
    double total = 0;
    for (int32_t t = 0; t < n; t++)
        total += residual(p, q, x, t);
    if (total <= 0)
        return x; /* p == q: rejection has probability 0 */
    double target = u_resample * total, c = 0;
    int32_t last = x;
    for (int32_t t = 0; t < n; t++) {
        double r = residual(p, q, x, t);
        if (r <= 0)
            continue;
        c += r;
        last = t;
        if (c > target)
            return t;
    }
    return last; /* rounding left target past the sum */
}
