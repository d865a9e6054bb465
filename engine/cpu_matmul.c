/* Run-time choice of the kernel table. */
#include "engine/cpu_kernels.h"

#include <stdlib.h>
#include <string.h>

static int cpu_has(int path)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (path == SX_CPU_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
    if (path == SX_CPU_AVX2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return path == SX_CPU_SCALAR;
}

const sx_cpu_kernels *sx_cpu_kernels_for(int path)
{
    if (path < 0 || path >= SX_CPU_PATHS || !cpu_has(path))
        return NULL;
    switch (path) {
    case SX_CPU_AVX512: return &sx_cpu_avx512_kernels;
    case SX_CPU_AVX2:   return &sx_cpu_avx2_kernels;
    default:            return &sx_cpu_scalar_kernels;
    }
}

int sx_cpu_kernels_select(const sx_cpu_kernels **out, sx_error *err)
{
    const char *want = getenv("STRUX_CPU");
    *out = NULL;
    if (want && *want) {
        static const char *const names[SX_CPU_PATHS] = { "scalar", "avx2", "avx512" };
        for (int p = 0; p < SX_CPU_PATHS; p++) {
            if (strcmp(want, names[p]) != 0)
                continue;
            *out = sx_cpu_kernels_for(p);
            if (!*out)
                return sx_err_set(err, SX_EUNSUPPORTED,
                                  "STRUX_CPU=%s: this CPU does not support it", want);
            return SX_OK;
        }
        return sx_err_set(err, SX_EINVAL, "STRUX_CPU=%s: expected avx512, avx2 or scalar", want);
    }
    for (int p = SX_CPU_PATHS - 1; p >= 0; p--)
        if ((*out = sx_cpu_kernels_for(p)) != NULL)
            return SX_OK;
    return sx_err_set(err, SX_EINTERNAL, "no CPU kernel path");
}
