#include "tools/strux/tool_common.h"
#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/sx_file.h"
#include "common/sx_numjson.h"
#include "engine/tokenizer/tokenizer.h"
#include "rpc/protocol.h"

int tool_load(const char *cmd, const char *tok_path, const char *model_dir, sx_tokenizer **tok,
              sx_vocab **vocab)
{
    char path[4096];
    sx_error err;
    sx_err_clear(&err);
    if (sx_tok_resolve_path(tok_path, model_dir, NULL, path, sizeof path, &err) ||
        sx_tok_load(path, tok, &err)) {
        fprintf(stderr, "strux %s: %s\n", cmd, err.msg);
        return 1;
    }
    /* Qwen3's logit rows; a model's config.json says so when one is loaded */
    if (sx_tok_vocab_size(*tok) == 151669 && sx_tok_n_rows(*tok) < 151936)
        sx_tok_set_n_rows(*tok, 151936);
    if (vocab && sx_tok_make_vocab(*tok, vocab, &err)) {
        fprintf(stderr, "strux %s: %s\n", cmd, err.msg);
        sx_tok_free(*tok);
        *tok = NULL;
        return 1;
    }
    return 0;
}

double tool_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int tool_is_random_model(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    int yes = cfg && (json_object_get(cfg, "strux_random_seed") ||
                     json_is_true(json_object_get(cfg, "strux_random")));
    json_decref(cfg);
    return yes;
}

json_t *tool_read_schema(const char *cmd, const char *path)
{
    sx_error err;
    sx_err_clear(&err);
    char *text = NULL;
    size_t len = 0;
    json_t *schema = NULL;
    sx_numtab t = {0};
    json_error_t je;
    if (sx_file_read(path, &text, &len, &err)) {
        fprintf(stderr, "strux %s: --schema: %s\n", cmd, err.msg);
    } else if (!(schema = sx_numjson_loadb(text, len, 0, &t, &je))) {
        fprintf(stderr, "strux %s: %s: line %d column %d: %s\n", cmd, path, je.line, je.column,
                je.text);
    } else if (sx_rpc_check_schema_numbers(schema, &t, "", &err)) {
        fprintf(stderr, "strux %s: %s: %s at %s\n", cmd, path, err.msg, err.pointer);
        json_decref(schema);
        schema = NULL;
    }
    sx_numtab_free(&t);
    free(text);
    return schema;
}
