/* Fuzz target: arbitrary bytes as a config.json, through the
 * quantization_config parser (engine/model/model_quant.c) and the Qwen3
 * config parser beside it.  Either succeeds with values in their documented
 * ranges, or fails with a message -- never crashes, hangs or leaks. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sx_quant_config q;
    sx_qwen3_config c;
    sx_error err;
    sx_err_clear(&err);
    if (sx_quant_config_parse((const char *)data, size, &q, &err)) {
        if (err.code == SX_OK || !err.msg[0])
            __builtin_trap();
    } else {
        if (q.method < SX_QUANT_NONE || q.method > SX_QUANT_FP8 || q.n_skip < 0 ||
            q.n_skip > SX_QUANT_MAX_SKIP)
            __builtin_trap();
        if (q.method == SX_QUANT_AWQ && (q.group < 32 || q.group % 32))
            __builtin_trap();
        if (q.method == SX_QUANT_FP8 && (q.block[0] < 1 || q.block[1] < 1))
            __builtin_trap();
        for (int i = 0; i < q.n_skip; i++)
            if (!q.skip[i][0] || strlen(q.skip[i]) >= sizeof q.skip[i])
                __builtin_trap();
    }
    sx_err_clear(&err);
    (void)sx_qwen3_config_parse((const char *)data, size, &c, &err);
    return 0;
}
