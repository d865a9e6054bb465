/* tool_gen_reply: one reply through the engine interface (tool_gen.h). */
#include <stdio.h>
#include <string.h>

#include "common/sx_numjson.h"
#include "engine/backend.h"
#include "engine/generate.h"
#include "engine/model/model.h"
#include "grammar/validator/validator.h"
#include "tools/strux/tool_gen.h"

typedef struct gen_state {
    tool_gen_out *out;
    int           done;
    sx_error      error;
} gen_state;

static void on_event(const sx_gen_event *ev, void *ctx)
{
    gen_state *st = ev->user;
    (void)ctx;
    if (ev->piece_len)
        sx_bytes_append(&st->out->text, ev->piece, ev->piece_len);
    if (!ev->done) {
        sx_ids_push(&st->out->ids, ev->token);
        return;
    }
    st->done = 1;
    st->out->finish = ev->finish;
    st->error = ev->error;
}

int tool_gen_reply(const tool_gen_req *r, const sx_tokenizer *tok, tool_gen_out *out)
{
    sx_error err;
    sx_err_clear(&err);
    memset(out, 0, sizeof *out);
    int rc = sx_backend_device_check(r->device, &err);
    if (rc) {
        fprintf(stderr, "strux %s: %s\n", r->cmd, err.msg);
        return rc == SX_EUNSUPPORTED ? 1 : 2;
    }
    rc = 1;
    sx_model *model = NULL;
    sx_backend *be = NULL;
    sx_gen *gen = NULL;
    sx_ids pids = {0};
    gen_state st = {.out = out};
    sx_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.n_threads = r->n_threads;
    eo.max_seqs = 1;
    sx_gen_params gp;
    memset(&gp, 0, sizeof gp);
    gp.grammar = r->grammar;
    gp.sampling = r->sampling;
    gp.max_tokens = r->max_tokens;
    if (sx_model_load(r->model_dir, &model, &err) ||
        sx_backend_open(r->device, model, &eo, &be, &err) ||
        sx_gen_new(be, tok, NULL, on_event, NULL, &gen, &err) ||
        sx_chat_encode(tok, r->msgs, r->n_msgs, 1, &pids, &err))
        goto fail;
    snprintf(out->backend, sizeof out->backend, "%s (%s)", sx_backend_name(be),
             sx_backend_describe(be));
    if (sx_gen_add(gen, pids.v, (int)pids.n, &gp, &st, NULL, &err))
        goto fail;
    for (int live = 1; live > 0;)
        if (sx_gen_step(gen, &live, &err))
            goto fail;
    if (!st.done || out->finish == SX_FINISH_ERROR) {
        err = st.error;
        if (!st.done)
            sx_err_set(&err, SX_EINTERNAL, "the reply never finished");
        goto fail;
    }
    rc = 0;
fail:
    if (rc)
        fprintf(stderr, "strux %s: %s\n", r->cmd, err.msg);
    sx_gen_free(gen);
    sx_backend_close(be);
    sx_model_free(model);
    sx_ids_free(&pids);
    return rc;
}

void tool_gen_out_free(tool_gen_out *out)
{
    sx_bytes_free(&out->text);
    sx_ids_free(&out->ids);
}

int tool_gen_validate(const json_t *schema, const sx_bytes *text)
{
    const char *t = text->v ? text->v : "";
    json_error_t je;
    sx_error err;
    sx_err_clear(&err);
    sx_numtab nums = {0}; /* numbers of any length */
    json_t *inst = sx_numjson_loadb(t, text->n, 0, &nums, &je);
    sx_validator *val = NULL;
    int valid = 0;
    if (!inst)
        fprintf(stderr, "validator: the reply is not complete JSON (%s)\n", je.text);
    else if (sx_val_compile(schema, NULL, &val, &err) ||
             sx_val_validate_text(val, t, text->n, &valid, &err))
        fprintf(stderr, "validator: could not check: %s\n", err.msg);
    else
        fprintf(stderr, "validator: %s%s\n", valid ? "valid" : "INVALID: ", valid ? "" : err.msg);
    json_decref(inst);
    sx_numtab_free(&nums);
    sx_val_free(val);
    return valid;
}
