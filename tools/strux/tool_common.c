#include "tools/strux/tool_common.h"
#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "engine/tokenizer/tokenizer.h"

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
