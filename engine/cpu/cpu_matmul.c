/* Run-time choice of the kernel table. */
#include "engine/cpu/cpu_kernels.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* AMX: the CPU has AMX-TILE, AMX-BF16, AVX512-BF16 and AVX512-VNNI (every
 * AMX CPU has the last two), and Linux lets this
 * process use the tile data state (asked once; the answer is per process). */
static int amx_usable(void)
{
#if defined(__x86_64__) && defined(SYS_arch_prctl)
    static int state = -1; /* every thread that races here computes the same */
    int st = __atomic_load_n(&state, __ATOMIC_RELAXED);
    if (st < 0) {
        unsigned a, b, c, d, ok = 0;
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 22 & 1) && (d >> 24 & 1) &&
            (c >> 11 & 1)) {
            unsigned a1, b1, c1, d1;
            if (__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 >> 5 & 1))
                /* ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA */
                ok = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
        }
        st = (int)ok;
        __atomic_store_n(&state, st, __ATOMIC_RELAXED);
    }
    return st;
#else
    return 0;
#endif
}

static int cpu_has(int path)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (path == SX_CPU_AMX)
        return cpu_has(SX_CPU_AVX512) && amx_usable();
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
    case SX_CPU_AMX:    return &sx_cpu_amx_kernels;
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
        static const char *const names[SX_CPU_PATHS] = { "scalar", "avx2", "avx512", "amx" };
        for (int p = 0; p < SX_CPU_PATHS; p++) {
            if (strcmp(want, names[p]) != 0)
                continue;
            *out = sx_cpu_kernels_for(p);
            if (!*out)
                return sx_err_set(err, SX_EUNSUPPORTED,
                                  "STRUX_CPU=%s: this CPU does not support it", want);
            return SX_OK;
        }
        return sx_err_set(err, SX_EINVAL, "STRUX_CPU=%s: expected amx, avx512, avx2 or scalar", want);
    }
    for (int p = SX_CPU_PATHS - 1; p >= 0; p--)
        if ((*out = sx_cpu_kernels_for(p)) != NULL)
            return SX_OK;
    return sx_err_set(err, SX_EINTERNAL, "no CPU kernel path");
}
