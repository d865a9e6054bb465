/* sx_rpc_server: the scheduler thread, the only one that drives the
 * generator.  Between steps it drops expired or abandoned requests, cancels
 * running ones whose client left or whose deadline passed, and admits
 * queued requests while fewer than max_running are live; each step's
 * events are routed back to their requests, and a request's completion
 * becomes its response here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/server_internal.h"

/* ---- per-token output ------------------------------------------------------ */

/* A token's text for logprobs: its bytes, or with '?' for bytes that are
 * not UTF-8 on their own (a token may end mid-character). */
static json_t *token_text(const sx_tokenizer *tok, int32_t id)
{
    size_t len = 0;
    const char *b = sx_tok_bytes(tok, id, &len);
    if (!b)
        return json_string("");
    json_t *v = json_stringn(b, len);
    if (v)
        return v;
    char *c = malloc(len + 1);
    if (!c)
        return NULL;
    for (size_t i = 0; i < len; i++)
        c[i] = (unsigned char)b[i] < 0x80 ? b[i] : '?';
    v = json_stringn(c, len);
    free(c);
    return v;
}

static json_t *token_bytes(const sx_tokenizer *tok, int32_t id)
{
    size_t len = 0;
    const char *b = sx_tok_bytes(tok, id, &len);
    json_t *a = json_array();
    for (size_t i = 0; a && b && i < len; i++)
        json_array_append_new(a, json_integer((unsigned char)b[i]));
    return a;
}

static json_t *token_entry(const rpc_job *j, int32_t id, double logprob)
{
    const sx_tokenizer *tok = j->s->tok;
    if (j->api == API_OPENAI)
        return json_pack("{s:o, s:f, s:o}", "token", token_text(tok, id), "logprob", logprob,
                         "bytes", token_bytes(tok, id));
    return json_pack("{s:o, s:i, s:f}", "token", token_text(tok, id), "id", (int)id, "logprob",
                     logprob);
}

static void add_logprob(rpc_seq *q, const sx_gen_event *ev)
{
    rpc_job *j = q->job;
    if (!q->logprobs && !(q->logprobs = json_array()))
        return;
    json_t *e = token_entry(j, ev->token, ev->logprob);
    if (!e)
        return;
    if (j->api == API_NATIVE)
        json_object_set_new(e, "forced", json_boolean(ev->forced));
    json_t *top = json_array();
    if (top && ev->sample)
        for (int i = 0; i < ev->sample->n_top && i < j->req.top_logprobs; i++)
            json_array_append_new(top, token_entry(j, ev->sample->top_ids[i],
                                                   ev->sample->top_logprobs[i]));
    json_object_set_new(e, "top_logprobs", top ? top : json_array());
    json_array_append_new(q->logprobs, e);
}

/* The model name an OpenAI answer carries: the request's, echoed. */
static const char *model_of(const rpc_job *j)
{
    return j->req.model && *j->req.model ? j->req.model : j->s->o.model_name;
}

static void stream_piece(rpc_job *j, int index, const char *piece, size_t len)
{
    uint32_t bit = 1u << index;
    if (!j->stream || j->http_plain || (!len && (j->sent_role & bit)))
        return;
    char *chunk;
    size_t n;
    if (sx_rpc_openai_chunk_dump(j->cid, j->created, model_of(j), index, piece, len,
                                 !(j->sent_role & bit), NULL, NULL, &chunk, &n))
        return;
    j->sent_role |= bit;
    rpc_stream_write(j->stream, chunk, n);
    free(chunk);
}

/* A sequence's piece goes to every choice it answers: one, or all of them
 * when a greedy request runs one sequence for n equal choices. */
static void stream_seq(rpc_seq *q, const char *piece, size_t len)
{
    rpc_job *j = q->job;
    if (j->n_seq == j->req.n)
        stream_piece(j, q->index, piece, len);
    else
        for (int i = 0; i < j->req.n; i++)
            stream_piece(j, i, piece, len);
}

/* ---- completion --------------------------------------------------------------- */

static void call_text(const rpc_seq *q, size_t k, const char **p, size_t *n);
static int32_t tok_id(const rpc_job *j, const char *text);

/* Thinking: the reasoning and the answer's text (trimmed; a forced call's
 * tag left out).  0 when </think> never came. */
static int answer_part(const rpc_seq *q, const char **p, size_t *n, const char **r, size_t *rn)
{
    const rpc_job *j = q->job;
    const char *t = q->text.v ? q->text.v : "";
    if (q->phase == RPC_PH_THINK) {
        *r = t;
        *rn = q->text.n;
        *p = t + q->text.n;
        *n = 0;
        return 0;
    }
    size_t a = q->think_end + 8, b = q->text.n, ra = 0, rb = q->think_end;
    while (rb > ra && strchr(" \n\r\t", t[rb - 1]))
        rb--;
    *r = t;
    *rn = rb;
    while (a < b && strchr(" \n\r\t", t[a]))
        a++;
    if (j->req.tool_call && b - a >= 11 && !memcmp(t + a, "<tool_call>", 11))
        for (a += 11; a < b && strchr(" \n\r\t", t[a]);)
            a++;
    *p = t + a;
    *n = b - a;
    return 1;
}

/* The re-check of an answer with parts: thinking's answer, or each call of
 * tool_choice "auto" (output: the array of calls). */
static int check_parts(rpc_seq *q, const sx_validator *val, json_t **output, sx_error *err)
{
    rpc_job *j = q->job;
    *output = NULL;
    if (j->req.tool_auto) {
        json_t *a = json_array();
        if (!a)
            return sx_err_set(err, SX_ENOMEM, "out of memory");
        for (size_t k = 0; k < q->calls.n / (2 * sizeof(size_t)); k++) {
            const char *p;
            size_t n;
            json_t *v = NULL;
            call_text(q, k, &p, &n);
            int rc = sx_rpc_check_output(&j->req, p, n, val, &v, err);
            if (rc) {
                json_decref(a);
                return rc;
            }
            json_array_append_new(a, v);
        }
        *output = a;
        return SX_OK;
    }
    const char *p, *r;
    size_t n, rn;
    if (!answer_part(q, &p, &n, &r, &rn)) {
        if (j->req.mode == SX_RPC_TEXT)
            return SX_OK; /* all of it was reasoning */
        return sx_err_set(err, SX_EFORMAT, "the reasoning was never closed");
    }
    return sx_rpc_check_output(&j->req, p, n, val, output, err);
}

/* The sequence that answers choice i. */
static rpc_seq *seq_of(rpc_job *j, int i)
{
    return &j->seqs[j->n_seq == j->req.n ? i : 0];
}

static const char *finish_name(int finish)
{
    return finish == SX_FINISH_LENGTH ? "length" : "stop";
}

/* cs: room for req.n choices */
static void fill_result(rpc_job *j, sx_rpc_result *res, sx_rpc_choice *cs)
{
    memset(res, 0, sizeof *res);
    for (int i = 0; i < j->req.n; i++) {
        rpc_seq *q = seq_of(j, i);
        cs[i] = (sx_rpc_choice){q->text.v ? q->text.v : "", q->text.n, q->output,
                                finish_name(q->finish), q->n_completion, q->n_forced,
                                q->logprobs, j->beam_scores ? &j->beam_scores[i] : NULL,
                                q->fields, NULL, 0, NULL, 0};
        if (j->req.thinking)
            answer_part(q, &cs[i].content, &cs[i].content_len, &cs[i].reasoning,
                        &cs[i].reasoning_len);
        if (j->req.tool_auto) {
            /* the free text before the first call (after the reasoning),
             * trimmed */
            const char *t = q->text.v ? q->text.v : "";
            size_t a = 0, e = q->calls.n ? q->content_end : q->text.n;
            if (j->req.thinking)
                a = q->phase == RPC_PH_THINK ? e : q->think_end + 8;
            while (a < e && strchr(" \n\r\t", t[a]))
                a++;
            while (e > a && strchr(" \n\r\t", t[e - 1]))
                e--;
            cs[i].content = t + a;
            cs[i].content_len = e - a;
        }
        if (q->finish == SX_FINISH_STOP && q->output &&
            (j->req.tool_call || (j->req.tool_auto && json_array_size(q->output) > 0)))
            cs[i].finish_reason = "tool_calls";
    }
    res->reasoning = cs[0].reasoning;
    res->reasoning_len = cs[0].reasoning_len;
    res->content = cs[0].content;
    res->content_len = cs[0].content_len;
    res->text = cs[0].text;
    res->text_len = cs[0].text_len;
    res->output = cs[0].output;
    res->finish_reason = cs[0].finish_reason;
    res->logprobs = cs[0].logprobs;
    res->field_confidence = cs[0].field_confidence;
    res->n_prompt = j->n_prompt;
    res->n_completion = j->n_completion;
    res->n_forced = j->n_forced;
    res->queue_ms = j->queue_ms;
    res->compile_ms = j->compile_ms;
    res->ttft_ms = j->ttft_ms;
    res->tpot_ms = j->tpot_ms;
    res->total_ms = j->total_ms;
    res->scores = j->scores;
    res->cache_hit = j->cache_hit;
    /* the prompt as run once: the first sequence's prefix-cache hit (the
     * other choices' forks are not a cache) */
    res->n_cached = j->n_seq > 0 ? j->seqs[0].n_cached : 0;
    if (j->req.n > 1 || j->req.num_beams) {
        res->choices = cs;
        res->n_choices = j->req.n;
    }
}

/* The body of a successful answer, in the job's dialect. */
static int success_body(rpc_job *j, const sx_rpc_result *res, const sx_rpc_choice *cs,
                        char **body, size_t *len)
{
    if (j->api == API_NATIVE)
        return sx_rpc_response_dump(&j->req, res, body, len);
    if (!j->stream || j->http_plain)
        return sx_rpc_openai_response_dump(&j->req, j->cid, j->created, j->s->o.model_name, res,
                                           body, len);
    /* the stream's tail: each choice's finishing chunk (once every choice
     * passed its re-check), usage if asked, [DONE] */
    sx_bytes b = {0};
    char *c = NULL;
    size_t n = 0;
    int rc = SX_OK;
    for (int i = 0; i < j->req.n && !rc && j->req.tool_call; i++) {
        /* a forced call, whole, once it passed the re-check */
        if (seq_of(j, i)->c_opened)
            continue; /* streamed as written */
        json_t *call = cs[i].output ? sx_rpc_openai_tool_call(j->cid, i, 0, cs[i].output) : NULL;
        if (!call)
            continue;
        json_object_set_new(call, "index", json_integer(0));
        rc = sx_rpc_openai_delta_dump(j->cid, j->created, model_of(j), i,
                                      json_pack("{s:[o]}", "tool_calls", call),
                                      !(j->sent_role & (1u << i)), &c, &n);
        j->sent_role |= 1u << i;
        if (!rc)
            rc = sx_bytes_append(&b, c, n);
        free(c);
    }
    for (int i = 0; i < j->req.n && !rc; i++) {
        rc = sx_rpc_openai_chunk_dump(j->cid, j->created, model_of(j), i, NULL, 0,
                                      !(j->sent_role & (1u << i)), cs[i].finish_reason, NULL, &c,
                                      &n);
        if (!rc)
            rc = sx_bytes_append(&b, c, n);
        free(c);
    }
    if (!rc && j->req.stream_usage) {
        rc = sx_rpc_openai_chunk_dump(j->cid, j->created, model_of(j), 0, NULL, 0, 0, NULL,
                                      res, &c, &n);
        if (!rc)
            rc = sx_bytes_append(&b, c, n);
        free(c);
    }
    if (!rc)
        rc = sx_bytes_append(&b, "data: [DONE]\n\n", 14);
    if (rc) {
        sx_bytes_free(&b);
        return rc;
    }
    *body = b.v;
    *len = b.n;
    return SX_OK;
}

static void cancel_seqs(rpc_job *j)
{
    for (int i = 0; i < j->n_seq; i++)
        if (j->seqs[i].live)
            j->s->be->ops->cancel(j->s->be->b, j->seqs[i].handle);
}

/* The request's figures from its sequences: output tokens of every choice
 * (a greedy sequence counts once per choice it answers), the first token
 * of any, the mean time per token within a sequence. */
static void totals(rpc_job *j)
{
    double span = 0;
    int steps = 0;
    j->n_completion = j->n_forced = j->n_cached = j->n_prefilled = 0;
    j->t_first = 0;
    for (int i = 0; i < j->req.n; i++) {
        j->n_completion += seq_of(j, i)->n_completion;
        j->n_forced += seq_of(j, i)->n_forced;
    }
    for (int k = 0; k < j->n_seq; k++) {
        rpc_seq *q = &j->seqs[k];
        j->n_cached += q->n_cached;
        if (q->added)
            j->n_prefilled += (int)j->prompt.n - q->n_cached;
        if (q->t_first > 0 && (j->t_first == 0 || q->t_first < j->t_first))
            j->t_first = q->t_first;
        if (q->n_completion > 1) {
            span += q->t_last - q->t_first;
            steps += q->n_completion - 1;
        }
    }
    j->ttft_ms = j->t_first > 0 ? j->t_first - j->t_recv : 0;
    j->tpot_ms = steps ? span / steps : 0;
    j->total_ms = rpc_now_ms() - j->t_recv;
}

/* A finished sequence's text becomes its output, re-checked.  A failure
 * is kept in q->bad: the request fails once every choice is done, and the
 * error lists them all. */
static void check_seq(rpc_seq *q)
{
    rpc_job *j = q->job;
    sx_rpc_server *s = j->s;
    json_t *output = NULL;
    sx_error err;
    sx_err_clear(&err);
    int rc = j->req.thinking || j->req.tool_auto
                 ? check_parts(q, j->comp ? j->comp->validator : NULL, &output, &err)
                 : sx_rpc_check_output(&j->req, q->text.v ? q->text.v : "", q->text.n,
                                       j->comp ? j->comp->validator : NULL, &output, &err);
    if (!rc) {
        q->output = output;
        /* a valid document is JSON: only memory can fail here, and then
         * the answer goes without the fields rather than not at all */
        if (j->req.field_confidence)
            sx_rpc_field_confidence(q->text.v, q->text.n, (const sx_rpc_tok_span *)q->spans.v,
                                    q->spans.n / sizeof(sx_rpc_tok_span), &q->fields, &err);
        return;
    }
    /* OpenAI semantics: finish_reason "length" with whatever was made */
    if (q->finish == SX_FINISH_LENGTH && j->api == API_OPENAI)
        return;
    if (q->finish == SX_FINISH_LENGTH) {
        /* the budget ran out before a valid document could close */
        q->bad = SX_RPC_INCOMPLETE;
        snprintf(q->why, sizeof q->why,
                 "max_tokens (%d) ran out before the output could be closed validly",
                 j->req.max_tokens);
        snprintf(q->why_at, sizeof q->why_at, "/max_tokens");
        return;
    }
    /* the grammar's guarantee failed: never pass it off as success */
    q->bad = SX_RPC_INTERNAL;
    snprintf(q->why, sizeof q->why, "generated output failed the re-check: %s", err.msg);
    snprintf(q->why_at, sizeof q->why_at, "%s", err.pointer);
    rpc_metrics_recheck_failure(&s->metrics);
    if (s->o.log)
        fprintf(s->o.log, "struxd: BUG: req=%llu mode=%s schema=%016llx choice=%d %s\n",
                (unsigned long long)j->no, sx_rpc_mode_name(j->req.mode),
                (unsigned long long)sx_rpc_key_hash(&j->req), q->index, q->why);
}

/* What an error answer carries about the output made: n = 1, incomplete:
 * its text, finish_reason and usage (as before n existed); n > 1: the
 * usage and every choice -- its output when it passed the re-check, else
 * the error it met -- so that one bad choice does not hide the others. */
static json_t *error_extra(rpc_job *j, int code, const sx_rpc_choice *cs)
{
    if (j->req.n == 1)
        return code != SX_RPC_INCOMPLETE ? NULL
               : json_pack("{s:s%, s:s, s:{s:i, s:i, s:i}}", "text", cs[0].text,
                           cs[0].text_len, "finish_reason", cs[0].finish_reason, "usage",
                           "prompt_tokens", j->n_prompt, "completion_tokens", j->n_completion,
                           "forced_tokens", j->n_forced);
    json_t *a = json_array();
    json_t *o = json_pack("{s:{s:i, s:i, s:i}, s:o}", "usage", "prompt_tokens", j->n_prompt,
                          "completion_tokens", j->n_completion, "forced_tokens", j->n_forced,
                          "choices", a);
    for (int i = 0; o && i < j->req.n; i++) {
        rpc_seq *q = seq_of(j, i);
        json_t *c = json_pack("{s:i, s:s%, s:s, s:{s:i, s:i}}", "index", i, "text", cs[i].text,
                              cs[i].text_len, "finish_reason", cs[i].finish_reason, "usage",
                              "completion_tokens", cs[i].n_completion, "forced_tokens",
                              cs[i].n_forced);
        if (!c)
            continue; /* text cut mid-character: the choice's error still says why */
        if (q->bad)
            json_object_set_new(c, "error", json_pack("{s:s, s:s}", "code",
                                                      sx_rpc_code_name(q->bad), "message",
                                                      q->why));
        else
            json_object_set_new(c, "output", q->output ? json_deep_copy(q->output) : json_null());
        json_array_append_new(a, c);
    }
    return o;
}

/* Every sequence of j is done: answer. */
static void job_done(rpc_job *j)
{
    char msg[512];
    totals(j);
    if (j->fail_code == SX_RPC_CANCELLED) {
        pthread_mutex_lock(&j->s->mu);
        int why = j->cancel;
        pthread_mutex_unlock(&j->s->mu);
        j->finish = "cancelled";
        if (why == CANCEL_DEADLINE) {
            snprintf(msg, sizeof msg, "the deadline of %.3g s passed after %d output tokens",
                     (j->deadline - j->t_recv) / 1e3, j->n_completion);
            rpc_fail(j, SX_RPC_TIMEOUT, msg, NULL, NULL);
        } else {
            rpc_fail(j, SX_RPC_CANCELLED, "the client went away", NULL, NULL);
        }
        return;
    }
    if (j->fail_code) {
        j->finish = "error";
        rpc_fail(j, j->fail_code, j->fail_msg, NULL, NULL);
        return;
    }
    sx_rpc_choice cs[SX_RPC_MAX_N];
    sx_rpc_result res;
    fill_result(j, &res, cs);
    j->finish = cs[0].finish_reason;
    /* an output the re-check refused outranks a budget that ran out */
    rpc_seq *bad = NULL;
    for (int k = 0; k < j->n_seq; k++) {
        rpc_seq *q = &j->seqs[k];
        if (q->bad && (!bad || (q->bad == SX_RPC_INTERNAL && bad->bad != SX_RPC_INTERNAL)))
            bad = q;
    }
    if (bad) {
        if (j->n_seq > 1)
            snprintf(msg, sizeof msg, "choice %d: %s", bad->index, bad->why);
        else
            snprintf(msg, sizeof msg, "%s", bad->why);
        json_t *extra = error_extra(j, bad->bad, cs);
        rpc_fail(j, bad->bad, msg, bad->why_at, extra);
        json_decref(extra);
        return;
    }
    char *body = NULL;
    size_t len = 0;
    if (success_body(j, &res, cs, &body, &len)) {
        rpc_fail(j, SX_RPC_INTERNAL, "out of memory", NULL, NULL);
        return;
    }
    rpc_answer(j, SX_RPC_OK, body, len, j->finish);
    free(body);
}

static void seq_done(rpc_seq *q, const sx_gen_event *ev)
{
    rpc_job *j = q->job;
    q->live = 0;
    q->finish = ev->finish;
    q->n_completion = ev->n_completion;
    q->n_forced = ev->n_forced;
    q->n_cached = ev->n_cached;
    j->n_prompt = ev->n_prompt;
    if (ev->finish == SX_FINISH_STOP || ev->finish == SX_FINISH_LENGTH) {
        check_seq(q);
    } else if (ev->finish == SX_FINISH_CANCELLED) {
        if (!j->fail_code)
            j->fail_code = SX_RPC_CANCELLED;
    } else {
        /* the request fails: its other choices need not run on.  A mask
         * stopped at the request's deadline (sx_gen_params) is a timeout,
         * as the deadline check between steps would have said. */
        j->fail_code = ev->error.code == SX_ELIMIT && strstr(ev->error.msg, "deadline")
                           ? SX_RPC_TIMEOUT
                           : SX_RPC_INTERNAL;
        snprintf(j->fail_msg, sizeof j->fail_msg, "%s",
                 ev->error.msg[0] ? ev->error.msg : "generation failed");
        cancel_seqs(j);
    }
    if (++j->n_done == j->n_seq)
        job_done(j);
}

static int32_t tok_id(const rpc_job *j, const char *text)
{
    return sx_tok_find(j->s->tok, text, strlen(text));
}

/* A streamed chunk with its own delta, to every choice q answers. */
static void stream_delta(rpc_seq *q, json_t *delta)
{
    rpc_job *j = q->job;
    for (int i = 0; i < j->req.n; i++) {
        if (j->n_seq == j->req.n && i != q->index)
            continue;
        uint32_t bit = 1u << i;
        char *chunk;
        size_t n;
        if (sx_rpc_openai_delta_dump(j->cid, j->created, model_of(j), i, json_deep_copy(delta),
                                     !(j->sent_role & bit), &chunk, &n))
            continue;
        j->sent_role |= bit;
        rpc_stream_write(j->stream, chunk, n);
        free(chunk);
    }
    json_decref(delta);
}

static int is_space_only(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\n' && p[i] != '\r' && p[i] != '\t')
            return 0;
    return 1;
}

/* The text of call k (pairs in q->calls), trimmed. */
static void call_text(const rpc_seq *q, size_t k, const char **p, size_t *n)
{
    const size_t *v = (const size_t *)q->calls.v;
    size_t a = v[2 * k], b = v[2 * k + 1];
    while (a < b && strchr(" \n\r\t", q->text.v[a]))
        a++;
    while (b > a && strchr(" \n\r\t", q->text.v[b - 1]))
        b--;
    *p = q->text.v + a;
    *n = b - a;
}

/* A call's first chunk, once its name is read: per choice (the ids name
 * the choice), {"index", "id", "type", "function": {"name", "arguments":
 * ""}}, as OpenAI opens a streamed call. */
static void stream_call_open(rpc_seq *q, int k)
{
    rpc_job *j = q->job;
    for (int i = 0; i < j->req.n; i++) {
        if (j->n_seq == j->req.n && i != q->index)
            continue;
        char id[96], *chunk;
        size_t cn;
        sx_rpc_openai_call_id(j->cid, i, k, id, sizeof id);
        json_t *d = json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "tool_calls", "index", k,
                              "id", id, "type", "function", "function", "name", q->cscan.name,
                              "arguments", "");
        if (!d || sx_rpc_openai_delta_dump(j->cid, j->created, model_of(j), i, d,
                                           !(j->sent_role & (1u << i)), &chunk, &cn))
            continue;
        j->sent_role |= 1u << i;
        rpc_stream_write(j->stream, chunk, cn);
        free(chunk);
    }
}

/* Streams what a token adds to call k's text: the call's first chunk once
 * the name is read, then each fragment of its arguments as written
 * (tool_stream.h).  A call the scanner gave up on goes whole at its
 * close, as before. */
static void stream_call_piece(rpc_seq *q, int k, const char *piece, size_t len)
{
    sx_bytes *pend = &q->c_pending;
    if (sx_rpc_callscan_feed(&q->cscan, piece, len, pend))
        q->cscan.fallback = 1; /* memory: sent whole at the close, if at all */
    if (q->cscan.fallback)
        return;
    /* arguments written before the name wait for it (a layout with free
     * member order; Qwen3 itself writes the name first) */
    if (!q->c_opened && q->cscan.have_name) {
        stream_call_open(q, k);
        q->c_opened = 1;
    }
    if (q->c_opened && pend->n) {
        /* pieces end on whole characters (the detokenizer holds a partial
         * one back), so the fragment is UTF-8 */
        json_t *d = json_pack("{s:[{s:i, s:{s:o}}]}", "tool_calls", "index", k, "function",
                              "arguments", json_stringn_nocheck(pend->v, pend->n));
        if (d)
            stream_delta(q, d);
        pend->n = 0;
    }
}

/* Thinking and free-text tool calls: a token's place in the answer.
 * Returns 1 when its piece is not content (not streamed as such). */
static int track_parts(rpc_seq *q, const sx_gen_event *ev, size_t at)
{
    rpc_job *j = q->job;
    int streams = j->stream && !j->http_plain;
    if (q->phase == RPC_PH_THINK) {
        if (ev->token == tok_id(j, "</think>")) {
            q->think_end = at;
            /* tool_choice "auto": free text where calls may open */
            q->phase = j->req.tool_auto ? RPC_PH_FREE : RPC_PH_ANSWER;
        } else if (streams && ev->piece_len) {
            stream_delta(q, json_pack("{s:s%}", "reasoning_content", ev->piece, ev->piece_len));
        }
        return 1;
    }
    if (j->req.tool_call) { /* a forced call: its arguments stream as written */
        if (streams)
            stream_call_piece(q, 0, ev->piece, ev->piece_len);
        return 1;
    }
    if (j->req.thinking && at == q->think_end + 8 && is_space_only(ev->piece, ev->piece_len))
        return 1; /* the blank line after </think> */
    if (!j->req.tool_auto)
        return 0;
    if (q->phase == RPC_PH_FREE && ev->token == tok_id(j, "<tool_call>")) {
        if (q->calls.n == 0)
            q->content_end = at;
        q->call_start = q->text.n;
        q->phase = RPC_PH_CALL;
        sx_rpc_callscan_init(&q->cscan);
        q->c_opened = 0;
        q->c_pending.n = 0;
        return 1;
    }
    if (q->phase == RPC_PH_CALL) {
        if (ev->token != tok_id(j, "</tool_call>")) {
            if (streams)
                stream_call_piece(q, (int)(q->calls.n / (2 * sizeof(size_t))), ev->piece,
                                  ev->piece_len);
            return 1;
        }
        size_t pair[2] = {q->call_start, at};
        sx_bytes_append(&q->calls, pair, sizeof pair); /* memory: the re-check fails it */
        q->phase = RPC_PH_FREE;
        if (streams && !q->c_opened) {
            /* not streamed as written: the call whole */
            const char *p;
            size_t n;
            size_t k = q->calls.n / sizeof pair - 1;
            call_text(q, k, &p, &n);
            json_t *v = json_loadb(p, n, 0, NULL);
            /* per choice: a greedy sequence answering n choices gives each
             * the call ids its unstreamed answer would have */
            for (int i = 0; v && i < j->req.n; i++) {
                if (j->n_seq == j->req.n && i != q->index)
                    continue;
                json_t *c = sx_rpc_openai_tool_call(j->cid, i, (int)k, v);
                char *chunk;
                size_t cn;
                if (!c)
                    continue;
                json_object_set_new(c, "index", json_integer((json_int_t)k));
                if (sx_rpc_openai_delta_dump(j->cid, j->created, model_of(j), i,
                                             json_pack("{s:[o]}", "tool_calls", c),
                                             !(j->sent_role & (1u << i)), &chunk, &cn))
                    continue;
                j->sent_role |= 1u << i;
                rpc_stream_write(j->stream, chunk, cn);
                free(chunk);
            }
            json_decref(v);
            q->n_calls_sent = (int)k + 1;
        }
        return 1;
    }
    /* free text after a call is the separator between calls */
    return q->calls.n > 0;
}

static void on_event(const sx_gen_event *ev, void *ctx)
{
    (void)ctx;
    rpc_seq *q = ev->user;
    size_t at = q->text.n;
    if (ev->piece_len && sx_bytes_append(&q->text, ev->piece, ev->piece_len)) {
        /* out of memory: the text is incomplete; the re-check will say so */
    }
    rpc_job *jj = q->job;
    if (!ev->done && (jj->req.thinking || jj->req.tool_auto || jj->req.tool_call) &&
        track_parts(q, ev, at)) {
        double now = rpc_now_ms();
        if (!q->n_events++)
            q->t_first = now;
        q->t_last = now;
        if (jj->req.logprobs)
            add_logprob(q, ev);
        return;
    }
    if (!ev->done) {
        double now = rpc_now_ms();
        if (!q->n_events++)
            q->t_first = now;
        q->t_last = now;
        if (q->job->req.logprobs)
            add_logprob(q, ev);
        if (q->job->req.field_confidence) {
            sx_rpc_tok_span sp = {at, q->text.n, ev->logprob, ev->forced};
            sx_bytes_append(&q->spans, &sp, sizeof sp);   /* memory: fewer fields, no error */
        }
        stream_seq(q, ev->piece, ev->piece_len);
        return;
    }
    if (ev->piece_len)
        stream_seq(q, ev->piece, ev->piece_len);
    seq_done(q, ev);
}

/* ---- admission ------------------------------------------------------------- */

static int score(rpc_job *j, sx_error *err)
{
    sx_rpc_server *s = j->s;
    size_t n = j->req.n_choices;
    double *logp = calloc(n, sizeof *logp);
    j->scores = calloc(n, sizeof *j->scores);
    if (!logp || !j->scores) {
        free(logp);
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    }
    int rc = s->be->ops->score(s->be->b, j->prompt.v, (int)j->prompt.n, j->prefix_len, j->labels,
                               n, logp, err);
    if (!rc) {
        double mx = -INFINITY, sum = 0;
        for (size_t i = 0; i < n; i++)
            mx = logp[i] > mx ? logp[i] : mx;
        for (size_t i = 0; i < n; i++)
            sum += j->scores[i] = isfinite(logp[i]) ? exp(logp[i] - mx) : 0;
        for (size_t i = 0; i < n; i++)
            j->scores[i] = sum > 0 ? j->scores[i] / sum : 1.0 / (double)n;
    }
    free(logp);
    return rc;
}

/* Greedy classification without a stream: the answer is the top label,
 * as the generator would have written it (its tokens were scored). */
static void answer_label(rpc_job *j, size_t best)
{
    rpc_seq *q = &j->seqs[0];
    json_t *str = json_string(j->req.choices[best]);
    char *text = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
    json_decref(str);
    q->text.n = 0;
    if (!text || sx_bytes_append(&q->text, text, strlen(text))) {
        free(text);
        rpc_fail(j, SX_RPC_INTERNAL, "out of memory", NULL, NULL);
        return;
    }
    free(text);
    q->t_first = q->t_last = rpc_now_ms();
    sx_gen_event ev;
    memset(&ev, 0, sizeof ev);
    ev.done = 1;
    ev.finish = SX_FINISH_STOP;
    ev.n_prompt = (int)j->prompt.n;
    ev.n_completion = (int)j->labels[best].n - 1; /* without the end of turn */
    seq_done(q, &ev);
}

/* Beam search runs to the end here, between two generator steps (the
 * running requests wait for it); each returned sequence then finishes as a
 * choice would, re-check included. */
static void admit_beams(sx_rpc_server *s, rpc_job *j)
{
    sx_error err;
    sx_err_clear(&err);
    if (!s->be->ops->beam) {
        rpc_fail(j, SX_RPC_BAD_REQUEST, "this server's backend has no beam search", "/num_beams",
                 NULL);
        return;
    }
    sx_beam_params p = {.num_beams = j->req.num_beams, .num_return = j->req.n,
                        .length_penalty = j->req.length_penalty,
                        .early_stopping = j->req.early_stopping, .max_tokens = j->req.max_tokens,
                        .grammar = j->comp ? j->comp->grammar : NULL,
                        .deadline_ms = j->deadline}; /* a mask stops there */
    sx_beam_result r;
    int rc = s->be->ops->beam(s->be->b, j->prompt.v, (int)j->prompt.n, &p, &r, &err);
    if (rc) {
        /* a mask stopped at the request's deadline is a timeout; other
         * limits (KV memory) are overload */
        int code = rc != SX_ELIMIT            ? SX_RPC_INTERNAL
                   : strstr(err.msg, "deadline") ? SX_RPC_TIMEOUT
                                                 : SX_RPC_OVERLOADED;
        rpc_fail(j, code, err.msg, NULL, NULL);
        return;
    }
    if (r.n == 0 || !(j->beam_scores = calloc((size_t)r.n, sizeof *j->beam_scores))) {
        rpc_fail(j, r.n ? SX_RPC_INTERNAL : SX_RPC_INCOMPLETE,
                 r.n ? "out of memory" : "beam search found no sequence", NULL, NULL);
        sx_beam_result_free(&r);
        return;
    }
    /* fewer sequences than asked when the search finished fewer */
    int n = r.n;
    j->req.n = j->n_seq = n;
    int32_t eos[2] = {sx_tok_find(s->tok, "<|im_end|>", 10), sx_tok_find(s->tok, "<|endoftext|>", 13)};
    sx_gen_event ev[SX_RPC_MAX_N];
    for (int k = 0; k < n; k++) {
        const sx_beam_seq *b = &r.seqs[k];
        rpc_seq *q = &j->seqs[k];
        int len = b->n - (b->n > 0 && (b->ids[b->n - 1] == eos[0] || b->ids[b->n - 1] == eos[1]));
        if (sx_tok_decode(s->tok, b->ids, (size_t)len, &q->text, &err)) {
            /* the re-check will refuse the empty text */
        }
        j->beam_scores[k] = b->score;
        q->t_first = q->t_last = rpc_now_ms();
        memset(&ev[k], 0, sizeof ev[k]);
        ev[k].done = 1;
        ev[k].finish = b->finish == SX_BEAM_STOP ? SX_FINISH_STOP : SX_FINISH_LENGTH;
        ev[k].n_prompt = (int)j->prompt.n;
        ev[k].n_completion = len;
    }
    sx_beam_result_free(&r);
    /* the last seq_done answers the request (j is not touched after it) */
    for (int k = 0; k < n; k++)
        seq_done(&j->seqs[k], &ev[k]);
}

/* Free text before the constraint (engine/generate.h, sx_gen_freepre):
 * tool_choice "auto" (free text or calls, each from its <tool_call> on),
 * "none" (<tool_call> never written), thinking (free reasoning, then the
 * answer from </think> on).  0 when the request has none. */
static int free_prefix(const rpc_job *j, sx_gen_freepre *f)
{
    const sx_rpc_req *r = &j->req;
    memset(f, 0, sizeof *f);
    int32_t nl = tok_id(j, "\n"), open = tok_id(j, "<tool_call>"),
            close = tok_id(j, "</tool_call>");
    f->sep = -1;
    if (r->tool_auto || (r->tool_none && r->mode == SX_RPC_TEXT)) {
        f->open = open;
        f->open_tail[f->n_open_tail++] = nl;
        f->close[f->n_close++] = nl;
        f->close[f->n_close++] = close;
        f->sep = nl;
        f->max_docs = r->one_call ? 1 : 0;
        f->ban[f->n_ban++] = close;
        if (r->tool_none)
            f->ban[f->n_ban++] = open;
        if (r->thinking) {
            /* the reasoning first, closed by the model, the budget, or the
             * room a call needs; then free text or calls as above */
            f->think = 1;
            f->think_close = tok_id(j, "</think>");
            f->think_tail[f->n_think_tail++] = tok_id(j, "\n\n");
            f->think_budget = r->think_budget;
            f->ban[f->n_ban++] = f->think_close;
        }
        return 1;
    }
    if (r->thinking && (r->mode != SX_RPC_TEXT || r->tool_call)) {
        f->open = tok_id(j, "</think>");
        f->open_tail[f->n_open_tail++] = tok_id(j, "\n\n");
        if (r->tool_call) {
            f->open_tail[f->n_open_tail++] = open;
            f->open_tail[f->n_open_tail++] = nl;
        }
        f->max_docs = 1;
        f->budget = r->think_budget;
        f->must_open = 1;
        return 1;
    }
    return 0;
}

static void admit(sx_rpc_server *s, rpc_job *j)
{
    sx_error err;
    sx_err_clear(&err);
    j->t_admit = rpc_now_ms();
    j->queue_ms = (j->t_prep0 - j->t_recv) + (j->t_admit - j->t_prep1);
    if (j->api == API_OPENAI)
        snprintf(j->cid, sizeof j->cid, "chatcmpl-strux-%llu", (unsigned long long)j->no);
    /* greedy choices would all be the same document: it is made once */
    int n_seq = j->req.sampling.temperature == 0 && !j->req.num_beams ? 1 : j->req.n;
    if (!(j->seqs = calloc((size_t)n_seq, sizeof *j->seqs))) {
        rpc_fail(j, SX_RPC_INTERNAL, "out of memory", NULL, NULL);
        return;
    }
    j->n_seq = n_seq;
    for (int k = 0; k < n_seq; k++)
        j->seqs[k] = (rpc_seq){.job = j, .index = k, .handle = -1,
                               .phase = j->req.thinking ? RPC_PH_THINK : RPC_PH_FREE};
    int rc;
    if (j->labels && (rc = score(j, &err))) {
        rpc_fail(j, rc == SX_ELIMIT ? SX_RPC_OVERLOADED : SX_RPC_INTERNAL, err.msg, NULL, NULL);
        return;
    }
    if (j->req.num_beams) {
        admit_beams(s, j);
        return;
    }
    sx_gen_params p;
    memset(&p, 0, sizeof p);
    p.grammar = j->comp ? j->comp->grammar : NULL;
    /* Greedy classification answers the most probable label: a label-by-
     * label greedy walk can part from it (a likely first token that only
     * unlikely labels continue), so the output is held to the top score. */
    if (j->scores && j->req.sampling.temperature == 0) {
        size_t best = 0;
        for (size_t i = 1; i < j->req.n_choices; i++)
            if (j->scores[i] > j->scores[best])
                best = i;
        if (!j->stream && !j->req.logprobs) {
            /* nothing left to generate: the grammar would force exactly
             * these tokens, which the scoring already ran */
            answer_label(j, best);
            return;
        }
        if (sx_gr_compile_choices(s->v, &j->req.choices[best], 1, &s->o.gr, &j->best_only,
                                  &err) == 0)
            p.grammar = j->best_only;
    }
    p.sampling = j->req.sampling;
    p.max_tokens = j->req.max_tokens;
    p.prefix_len = j->prefix_len;
    p.deadline_ms = j->deadline; /* a mask stops there (a step is not) */
    /* speculation is opt-in per server; a request may turn it off or pick
     * a mode the server runs */
    p.speculate = j->req.speculate < 0 ? s->o.speculate : j->req.speculate;
    p.draft_k = s->o.draft_k;
    sx_gen_freepre fp;
    if (free_prefix(j, &fp)) {
        p.free = &fp;
        p.speculate = SX_SPEC_OFF; /* the same output; drafts do not know the phases */
    }
    if (p.speculate != SX_SPEC_OFF && s->o.speculate == SX_SPEC_OFF) {
        rpc_fail(j, SX_RPC_BAD_REQUEST, "this server runs without speculative decoding "
                 "(struxd --speculate)", "/speculate", NULL);
        return;
    }
    for (int k = 0; k < n_seq; k++) {
        /* choice k's own stream; the others fork choice 0's prefill */
        p.sampling.seed = j->req.sampling.seed + (uint64_t)k;
        p.fork_of = k ? j->seqs[0].handle : 0;
        rc = s->be->ops->add(s->be->b, j->prompt.v, (int)j->prompt.n, &p, &j->seqs[k],
                             &j->seqs[k].handle, &err);
        if (rc && k == 0) {
            /* the KV fit was checked at prep, so a limit here is the
             * budget: max_tokens below the shortest valid document */
            int code = rc == SX_ELIMIT   ? SX_RPC_INCOMPLETE
                       : rc == SX_EINVAL ? SX_RPC_BAD_REQUEST
                                         : SX_RPC_INTERNAL;
            rpc_fail(j, code, err.msg, rc == SX_ELIMIT ? "/max_tokens" : NULL, NULL);
            return;
        }
        if (rc) {
            /* what choice 0 passed cannot fail but for memory: the ones
             * added are called off and answer for the request */
            j->fail_code = SX_RPC_INTERNAL;
            snprintf(j->fail_msg, sizeof j->fail_msg, "%s", err.msg);
            j->n_seq = k;
            cancel_seqs(j);
            break;
        }
        j->seqs[k].live = j->seqs[k].added = 1;
    }
    j->running = 1;
}

/* Every running job gets a final event from the generator, except when the
 * generator itself broke: then they are answered here and never stepped
 * again. */
static void fail_running(sx_rpc_server *s, const char *why)
{
    for (;;) {
        pthread_mutex_lock(&s->mu);
        rpc_job *j = s->jobs;
        while (j && !(j->stage == STAGE_RUN && j->running))
            j = j->next;
        if (j)
            j->running = 0;
        pthread_mutex_unlock(&s->mu);
        if (!j)
            return;
        rpc_fail(j, SX_RPC_INTERNAL, why, NULL, NULL);
    }
}

void *rpc_sched_main(void *arg)
{
    sx_rpc_server *s = arg;
    int cap = s->o.max_running + 1, n_fail = 0;
    rpc_job **adm = calloc((size_t)cap, sizeof *adm);
    rpc_job **cancel = calloc((size_t)cap, sizeof *cancel);
    if (!adm || !cancel) {
        free(adm);
        free(cancel);
        pthread_mutex_lock(&s->mu);
        s->broken = 1;
        pthread_mutex_unlock(&s->mu);
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    for (;;) {
        double now = rpc_now_ms();
        /* queued requests that expired or whose client left */
        rpc_job *dead = NULL, **pp = &s->run_head, *last = NULL;
        while (*pp) {
            rpc_job *j = *pp;
            if (j->cancel || now > j->deadline) {
                *pp = j->qnext;
                j->qnext = dead;
                dead = j;
            } else {
                last = j;
                pp = &j->qnext;
            }
        }
        s->run_tail = last;
        /* running requests to cancel */
        int n_cancel = 0;
        for (rpc_job *j = s->jobs; j && n_cancel < cap; j = j->next)
            if (j->stage == STAGE_RUN && j->running && !j->cancel_sent &&
                (j->cancel || now > j->deadline)) {
                j->cancel_sent = 1;
                if (!j->cancel)
                    j->cancel = CANCEL_DEADLINE;
                cancel[n_cancel++] = j;
            }
        /* admission */
        int n_adm = 0;
        while (s->run_head && s->n_running < s->o.max_running && !s->broken) {
            rpc_job *j = s->run_head;
            s->run_head = j->qnext;
            if (!s->run_head)
                s->run_tail = NULL;
            j->qnext = NULL;
            j->stage = STAGE_RUN;
            s->n_waiting--;
            s->n_running++;
            adm[n_adm++] = j;
        }
        int live = s->n_running;
        if (!dead && !n_cancel && !n_adm && (!live || s->broken)) {
            if (s->stop && !s->n_inflight)
                break;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 50 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&s->sched_cv, &s->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&s->mu);

        while (dead) {
            rpc_job *j = dead;
            dead = j->qnext;
            if (j->cancel)
                rpc_fail(j, SX_RPC_CANCELLED, "the client went away", NULL, NULL);
            else
                rpc_fail(j, SX_RPC_TIMEOUT, "the deadline passed while the request was queued",
                         NULL, NULL);
        }
        for (int i = 0; i < n_cancel; i++)
            cancel_seqs(cancel[i]);
        for (int i = 0; i < n_adm; i++)
            admit(s, adm[i]);
        pthread_mutex_lock(&s->mu);
        live = s->n_running;
        s->step_t0 = live > 0 ? rpc_now_ms() : 0; /* /health: a step that never ends */
        pthread_mutex_unlock(&s->mu);
        if (live > 0) {
            int n_live = 0;
            sx_error err;
            sx_err_clear(&err);
            int rc = s->be->ops->step(s->be->b, &n_live, &err);
            if (rc) {
                if (s->o.log)
                    fprintf(s->o.log, "struxd: generator step failed: %s\n", err.msg);
                if (++n_fail >= 3) {
                    pthread_mutex_lock(&s->mu);
                    s->broken = 1;
                    pthread_mutex_unlock(&s->mu);
                    fail_running(s, "the generator failed");
                }
            } else {
                n_fail = 0;
                sx_engine_lm_stats lm;
                int has_lm = s->be->ops->lm_stats != NULL;
                if (has_lm)
                    s->be->ops->lm_stats(s->be->b, &lm);
                rpc_metrics_step(&s->metrics, n_live, has_lm ? &lm : NULL);
                if (s->be->ops->spec_stats) {
                    int64_t sd, sa;
                    s->be->ops->spec_stats(s->be->b, &sd, &sa);
                    rpc_metrics_spec(&s->metrics, sd, sa);
                }
                if (s->be->ops->prefix_stats) {
                    sx_gen_prefix_stats ps;
                    s->be->ops->prefix_stats(s->be->b, &ps);
                    rpc_metrics_prefix(&s->metrics, &ps);
                }
            }
        }
        pthread_mutex_lock(&s->mu);
        s->step_t0 = 0;
    }
    pthread_mutex_unlock(&s->mu);
    free(adm);
    free(cancel);
    return NULL;
}

int rpc_sched_bind(sx_rpc_server *s, sx_error *err)
{
    return s->be->ops->bind(s->be->b, on_event, s, err);
}
