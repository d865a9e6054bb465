/* strux generate --beams (see gen_beam_cli.h). */
#include "common/sx_numjson.h"
#include "tools/strux/gen_beam_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/validator.h"
#include "tools/strux/tool_common.h"

int gen_beam_cli_early(const char *s)
{
    if (!strcmp(s, "true"))
        return SX_BEAM_EARLY_TRUE;
    if (!strcmp(s, "false"))
        return SX_BEAM_EARLY_FALSE;
    if (!strcmp(s, "never"))
        return SX_BEAM_EARLY_NEVER;
    return -1;
}

static const char *early_name(int e)
{
    return e == SX_BEAM_EARLY_TRUE ? "true" : e == SX_BEAM_EARLY_NEVER ? "never" : "false";
}

/* 1 when the text does not validate (or cannot be checked) */
static int check(const json_t *schema, const sx_bytes *text)
{
    json_error_t je;
    sx_error err;
    sx_err_clear(&err);
    sx_numtab nums = {0}; /* numbers of any length */
    json_t *inst = sx_numjson_loadb(text->v ? text->v : "", text->n, 0, &nums, &je);
    sx_validator *val = NULL;
    int valid = 0;
    if (!inst)
        fprintf(stderr, "validator: the sequence is not complete JSON (%s)\n", je.text);
    else if (sx_val_compile(schema, NULL, &val, &err) || sx_val_validate_text(val, text->v ? text->v : "", text->n, &valid, &err))
        fprintf(stderr, "validator: could not check: %s\n", err.msg);
    else
        fprintf(stderr, "validator: %s%s\n", valid ? "valid" : "INVALID: ", valid ? "" : err.msg);
    json_decref(inst);
    sx_numtab_free(&nums);
    sx_val_free(val);
    return !valid;
}

int gen_beam_cli_run(sx_backend *eng, const sx_tokenizer *tok, const sx_grammar *g,
                     const json_t *schema, const int32_t *prompt, int n_prompt,
                     const gen_beam_cli_opts *o)
{
    int32_t eos[2] = {sx_tok_find(tok, "<|im_end|>", 10), sx_tok_find(tok, "<|endoftext|>", 13)};
    sx_beam_params p = {.num_beams = o->beams, .num_return = o->ret,
                        .length_penalty = o->length_penalty, .early_stopping = o->early,
                        .max_tokens = o->max_tokens, .eos = eos, .n_eos = 2, .grammar = g,
                        .tok = tok};
    sx_beam_result r;
    sx_error err;
    sx_err_clear(&err);
    double t0 = tool_now_us();
    if (sx_beam_run(eng, prompt, n_prompt, &p, &r, &err)) {
        fprintf(stderr, "strux generate: beam search: %s\n", err.msg);
        return 1;
    }
    double ms = (tool_now_us() - t0) / 1e3;
    int rc = r.n > 0 ? 0 : 1;
    if (!r.n)
        fprintf(stderr, "strux generate: beam search found no sequence\n");
    for (int i = 0; i < r.n; i++) {
        const sx_beam_seq *s = &r.seqs[i];
        int n = s->n;
        if (n > 0 && (s->ids[n - 1] == eos[0] || s->ids[n - 1] == eos[1]))
            n--;   /* the end token is not part of the text */
        sx_bytes text = {0};
        if (sx_tok_decode(tok, s->ids, (size_t)n, &text, &err)) {
            fprintf(stderr, "strux generate: %s\n", err.msg);
            rc = 1;
            continue;
        }
        printf("--- beam %d (score %.6f, logprob %.6f, %d tokens, finish %s)\n", i,
               (double)s->score, (double)s->sum_logprob, s->n,
               s->finish == SX_BEAM_STOP ? "stop" : "length");
        fwrite(text.v ? text.v : "", 1, text.n, stdout);
        printf("\n");
        if (o->print_ids) {
            for (int k = 0; k < s->n; k++)
                printf(k ? " %d" : "%d", s->ids[k]);
            printf("\n");
        }
        fflush(stdout);
        if (schema) {
            fprintf(stderr, "beam %d: ", i);
            rc |= check(schema, &text);
        }
        sx_bytes_free(&text);
    }
    int64_t gen = (int64_t)r.tokens_run - n_prompt;
    fprintf(stderr, "beam search: %d beams, length_penalty %g, early_stopping %s; prompt %d tokens, "
            "%d steps; the model ran %lld tokens (prompt once, %lld for the beams; %lld forks)\n",
            o->beams, (double)o->length_penalty, early_name(o->early), n_prompt, r.steps,
            (long long)r.tokens_run, (long long)gen, (long long)r.forks);
    fprintf(stderr, "total %.1f ms; %.1f beam tokens/s\n", ms, gen > 0 ? gen / (ms / 1e3) : 0.0);
    sx_beam_result_free(&r);
    return rc;
}
