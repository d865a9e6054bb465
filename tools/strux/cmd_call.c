/* strux call: a client for struxd -- one request from flags, or a JSONL
 * batch with N requests in flight and a progress bar. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/sx_file.h"
#include "common/sx_numjson.h"
#include "grammar/validator/validator.h"
#include "rpc/client.h"
#include "rpc/protocol.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"

static int load_text(const char *path, char **out, size_t *len)
{
    sx_error err;
    int rc = !strcmp(path, "-") ? sx_stream_read(stdin, (size_t)1 << 30, out, len, &err)
                                : sx_file_read(path, out, len, &err);
    if (rc)
        fprintf(stderr, "strux call: %s\n", err.msg);
    return rc;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- batch ------------------------------------------------------------------- */

typedef struct batch {
    sx_client   *client;
    char       **lines;
    size_t      *lens;
    size_t       n, next, done, written;
    char       **resp;      /* per line, until written */
    double      *ms;        /* per line latency */
    int         *ok;
    char        *ready;     /* answered (written in order once all before are) */
    long long    completion_tokens;
    int          wait_ms;
    FILE        *out;
    int          transport_errors;
    int          verify, verify_failures;
    json_t      *codes;     /* error code -> count */
    int          openai;    /* --openai-batch: lines[i] is the nng envelope, cids[i] its custom_id */
    char       **cids;
    pthread_mutex_t mu;
} batch;

/* --openai-batch: the batch output line of one answer (OpenAI's format):
 * the HTTP status its error code stands for, the body as answered. */
static char *openai_line(const batch *b, size_t i, const char *resp, size_t rlen, int *ok,
                         const char **code, long long *toks)
{
    json_t *body = resp ? json_loadb(resp, rlen, 0, NULL) : NULL;
    const json_t *err = json_object_get(body, "error");
    int status = 200;
    *code = NULL;
    if (err) {
        const char *c = json_string_value(json_object_get(err, "code"));
        status = 500;
        /* *code outlives body (freed below): the protocol's own static name */
        *code = "internal";
        for (int k = 0; c && k < SX_RPC_CODE_COUNT; k++)
            if (!strcmp(c, sx_rpc_code_name(k))) {
                status = sx_rpc_http_status(k);
                *code = sx_rpc_code_name(k);
            }
    }
    *ok = body && status == 200;
    char rid[64], bid[64];
    snprintf(bid, sizeof bid, "batch_req_%zu", i + 1);
    const char *cid = json_string_value(json_object_get(body, "id"));
    snprintf(rid, sizeof rid, "%s", cid ? cid : bid);
    *toks = json_integer_value(
        json_object_get(json_object_get(body, "usage"), "completion_tokens"));
    json_t *o = body ? json_pack("{s:s, s:s, s:{s:i, s:s, s:s}, s:n}", "id", bid, "custom_id",
                                 b->cids[i], "response", "status_code", status, "request_id", rid,
                                 "body", "\x01", "error")
                     : json_pack("{s:s, s:s, s:n, s:{s:s, s:s}}", "id", bid, "custom_id",
                                 b->cids[i], "response", "error", "code", "transport", "message",
                                 resp ? "the answer is not JSON" : "no answer");
    char *t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    json_decref(body);
    /* the body as the server wrote it (its numbers, its reals' digits) in
     * place of the placeholder */
    char *mark = t && body ? strstr(t, "\"\\u0001\"") : NULL;
    if (mark) {
        size_t pre = (size_t)(mark - t), post = strlen(mark + 8);
        char *full = malloc(pre + rlen + post + 1);
        if (full) {
            memcpy(full, t, pre);
            memcpy(full + pre, resp, rlen);
            memcpy(full + pre + rlen, mark + 8, post + 1);
        }
        free(t);
        t = full;
    }
    return t;
}

/* --openai-batch: checks every line before anything is sent (a malformed
 * one is named by its line number) and turns each into the nng envelope
 * of an OpenAI request (rpc/server_nng.c). */
static int openai_prepare(batch *b, const char *path, const size_t *lineno)
{
    static const char *const line_m[] = {"custom_id", "method", "url", "body", NULL};
    b->cids = calloc(b->n + 1, sizeof *b->cids);
    char **env = calloc(b->n + 1, sizeof *env);
    size_t *lens = calloc(b->n + 1, sizeof *lens);
    json_t *seen = json_object();
    const char *why = NULL;
    char whybuf[256];
    size_t i = 0;
    if (!b->cids || !env || !lens || !seen) {
        why = "out of memory";
        goto fail;
    }
    for (; i < b->n; i++) {
        json_error_t je;
        json_t *l = json_loadb(b->lines[i], b->lens[i], JSON_REJECT_DUPLICATES, &je);
        const json_t *cid = json_object_get(l, "custom_id"), *m = json_object_get(l, "method");
        const json_t *url = json_object_get(l, "url"), *body = json_object_get(l, "body");
        const char *k;
        json_t *v;
        why = NULL;
        if (!l) {
            snprintf(whybuf, sizeof whybuf, "not JSON: %s", je.text);
            why = whybuf;
        } else if (!json_is_object(l)) {
            why = "a line must be an object {\"custom_id\", \"method\", \"url\", \"body\"}";
        }
        json_object_foreach(json_is_object(l) ? l : NULL, k, v) {
            int known = 0;
            for (int q = 0; line_m[q]; q++)
                known |= !strcmp(k, line_m[q]);
            if (!known && !why) {
                snprintf(whybuf, sizeof whybuf, "unknown member \"%.60s\"", k);
                why = whybuf;
            }
        }
        if (!why && (!json_is_string(cid) || !json_string_length(cid)))
            why = "custom_id must be a non-empty string";
        else if (!why && json_object_get(seen, json_string_value(cid)))
            why = "custom_id repeats an earlier line's";
        else if (!why && (!json_is_string(m) || strcmp(json_string_value(m), "POST")))
            why = "method must be \"POST\"";
        else if (!why && (!json_is_string(url) ||
                          (strcmp(json_string_value(url), "/v1/chat/completions") &&
                           strcmp(json_string_value(url), "/v1/completions"))))
            why = "url must be \"/v1/chat/completions\" or \"/v1/completions\"";
        else if (!why && !json_is_object(body))
            why = "body must be an object (the request)";
        else if (!why && json_is_true(json_object_get(body, "stream")))
            why = "body.stream: a batch answers each request whole";
        if (why) {
            json_decref(l);
            goto fail;
        }
        char *bt = json_dumps(body, JSON_COMPACT);
        json_t *e = bt ? json_pack("{s:O, s:s}", "openai", url, "body", bt) : NULL;
        free(bt);
        /* "openai" first: the server recognises the envelope by it */
        env[i] = e ? json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(e);
        b->cids[i] = strdup(json_string_value(cid));
        json_object_set_new(seen, json_string_value(cid), json_true());
        json_decref(l);
        if (!env[i] || !b->cids[i]) {
            why = "out of memory";
            goto fail;
        }
        lens[i] = strlen(env[i]);
    }
    json_decref(seen);
    b->lines = env;
    b->lens = lens;
    return 0;
fail:
    fprintf(stderr, "strux call: %s:%zu: %s\n", path, i < b->n ? lineno[i] : 0, why);
    for (size_t q = 0; env && q < b->n; q++)
        free(env[q]);
    free(env);
    free(lens);
    json_decref(seen);
    return 1;
}

static char *transport_line(const char *req, size_t len, const char *msg)
{
    json_t *r = json_loadb(req, len, JSON_ALLOW_NUL, NULL);
    const json_t *id = json_object_get(r, "id");
    json_t *o = json_pack("{s:b, s:O, s:{s:s, s:s}}", "ok", 0, "id", id ? id : json_null(), "error",
                          "code", "transport", "message", msg);
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    json_decref(r);
    return t;
}

/* One output against its request: the schema (compiled once into *v),
 * one of the labels, or an object.  Returns 1 when it holds. */
static int verify_one(const json_t *r, sx_validator **v, const json_t *out, char *why, size_t cap)
{
    const json_t *schema = json_object_get(r, "schema"), *choices = json_object_get(r, "choices");
    if (schema) {
        sx_error e;
        int valid = 0;
        sx_err_clear(&e);
        if (!out || (!*v && sx_val_compile(schema, NULL, v, &e)) ||
            sx_val_validate(*v, out, &valid, &e) || !valid) {
            snprintf(why, cap, "%s", out ? e.msg : "no output");
            return 0;
        }
    } else if (choices) {
        size_t i;
        const json_t *l;
        int good = 0;
        json_array_foreach(choices, i, l) good |= json_equal(l, out);
        if (!good)
            snprintf(why, cap, "output is not one of the labels");
        return good;
    } else if (json_is_true(json_object_get(r, "json_object")) && !json_is_object(out)) {
        snprintf(why, cap, "output is not an object");
        return 0;
    }
    return 1;
}

/* The client's own check of a successful answer against its request: the
 * server already re-checked it, this makes the guarantee checkable from
 * outside.  With n choices or beams every choice's output is checked, not
 * only the top-level one.  Returns 1 when every output holds. */
static int verify_output(const char *req, size_t len, const json_t *resp, char *why, size_t cap)
{
    json_t *r = json_loadb(req, len, JSON_ALLOW_NUL, NULL);
    sx_validator *v = NULL;
    int good = verify_one(r, &v, json_object_get(resp, "output"), why, cap);
    const json_t *cs = json_object_get(resp, "choices"), *c;
    size_t i;
    if (json_is_array(cs))
        json_array_foreach(cs, i, c) {
            if (!good)
                break;
            char w[512];
            if (!verify_one(r, &v, json_object_get(c, "output"), w, sizeof w)) {
                snprintf(why, cap, "choice %zu: %s", i, w);
                good = 0;
            }
        }
    sx_val_free(v);
    json_decref(r);
    return good;
}

static void *batch_worker(void *arg)
{
    batch *b = arg;
    for (;;) {
        pthread_mutex_lock(&b->mu);
        size_t i = b->next++;
        pthread_mutex_unlock(&b->mu);
        if (i >= b->n)
            return NULL;
        sx_error err;
        char *resp = NULL;
        size_t rlen = 0;
        double t0 = now_ms();
        int rc = sx_client_call(b->client, b->lines[i], b->lens[i], b->wait_ms, &resp, &rlen, &err);
        double ms = now_ms() - t0;
        int ok = 0;
        long long toks = 0;
        const char *code = "transport";
        json_t *v = NULL;
        sx_numtab nums = {0}; /* outputs may hold integers beyond 64 bits */
        if (b->openai) {
            char *line = openai_line(b, i, rc ? NULL : resp, rlen, &ok, &code, &toks);
            if (rc)
                code = "transport";
            free(resp);
            resp = line;
        } else if (rc) {
            resp = transport_line(b->lines[i], b->lens[i], err.msg);
        } else if ((v = sx_numjson_loadb(resp, rlen, 0, &nums, NULL))) {
            ok = json_is_true(json_object_get(v, "ok"));
            char why[600];
            if (ok && b->verify && !verify_output(b->lines[i], b->lens[i], v, why, sizeof why)) {
                fprintf(stderr, "strux call: line %zu: VERIFY FAILED: %s\n", i + 1, why);
                pthread_mutex_lock(&b->mu);
                b->verify_failures++;
                pthread_mutex_unlock(&b->mu);
            }
            toks = json_integer_value(
                json_object_get(json_object_get(v, "usage"), "completion_tokens"));
            code = json_string_value(json_object_get(json_object_get(v, "error"), "code"));
        }
        pthread_mutex_lock(&b->mu);
        b->resp[i] = resp;
        b->ms[i] = ms;
        b->ok[i] = ok;
        b->completion_tokens += toks;
        b->transport_errors += rc != 0;
        if (!ok) {
            const char *k = code ? code : "unknown";
            json_t *c = json_object_get(b->codes, k);
            json_object_set_new(b->codes, k, json_integer(c ? json_integer_value(c) + 1 : 1));
        }
        json_decref(v);
        sx_numtab_free(&nums);
        /* responses go out in input order, each line whole and flushed, so a
         * batch that stops leaves a prefix --resume can continue from */
        b->ready[i] = 1;
        size_t written_before = b->written;
        while (b->written < b->n && b->ready[b->written]) {
            if (b->resp[b->written])
                fputs(b->resp[b->written], b->out);
            else
                fputs("{\"ok\":false,\"id\":null,\"error\":{\"code\":\"transport\","
                      "\"message\":\"out of memory\"}}", b->out);
            fputc('\n', b->out);
            free(b->resp[b->written]);
            b->resp[b->written] = NULL;
            b->written++;
        }
        if (b->written > written_before)
            fflush(b->out);
        b->done++;
        pthread_mutex_unlock(&b->mu);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void progress(batch *b, double t0, int final)
{
    pthread_mutex_lock(&b->mu);
    size_t done = b->done, okn = 0;
    for (size_t i = 0; i < b->n; i++)
        okn += b->ok[i];
    pthread_mutex_unlock(&b->mu);
    double secs = (now_ms() - t0) / 1e3;
    int width = 30, fill = b->n ? (int)(width * done / b->n) : width;
    fprintf(stderr, "\r[%.*s%*s] %zu/%zu  ok %zu  errors %zu  %.1f req/s%s", fill,
            "##############################", width - fill, "", done, b->n, okn, done - okn,
            secs > 0 ? (double)done / secs : 0.0, final ? "\n" : "  ");
    fflush(stderr);
}

/* --resume: how many of the batch's lines OUT already answers.  Keeps the
 * complete lines that parse, belong to this input (the ids agree) and are
 * not transport failures -- those are sent again -- and cuts the file after
 * them, so a partial last line is dropped.  Returns -1 when OUT is not this
 * batch's output. */
static long resume_point(const char *out_path, char **lines, size_t *lens, size_t n,
                         const char *key)
{
    char *text = NULL;
    size_t len = 0;
    sx_error err;
    FILE *probe = fopen(out_path, "r");
    if (!probe)
        return 0; /* nothing written yet: start from the top */
    fclose(probe);
    if (sx_file_read(out_path, &text, &len, &err)) {
        fprintf(stderr, "strux call: %s\n", err.msg);
        return -1;
    }
    size_t k = 0, keep = 0;
    long result = 0;
    for (char *p = text, *end; p < text + len; p = end + 1) {
        end = memchr(p, '\n', (size_t)(text + len - p));
        if (!end)
            break; /* the partial last line of a batch that was stopped */
        json_t *a = json_loadb(p, (size_t)(end - p), 0, NULL);
        const char *code =
            json_string_value(json_object_get(json_object_get(a, "error"), "code"));
        if (!json_is_object(a) || (code && !strcmp(code, "transport"))) {
            json_decref(a);
            break;
        }
        if (k >= n) {
            fprintf(stderr, "strux call: --resume: %s has more answers than the input has "
                            "requests\n", out_path);
            json_decref(a);
            result = -1;
            goto done;
        }
        json_t *q = json_loadb(lines[k], lens[k], 0, NULL);
        const json_t *qid = json_object_get(q, key), *aid = json_object_get(a, key);
        int same = !qid || (aid && json_equal(qid, aid));
        json_decref(q);
        json_decref(a);
        if (!same) {
            fprintf(stderr, "strux call: --resume: line %zu of %s answers another request "
                            "than line %zu of the input (%ss differ)\n", k + 1, out_path, k + 1,
                    key);
            result = -1;
            goto done;
        }
        k++;
        keep = (size_t)(end - text) + 1;
    }
    if (keep < len && truncate(out_path, (off_t)keep)) {
        fprintf(stderr, "strux call: --resume: cannot cut %s\n", out_path);
        result = -1;
        goto done;
    }
    result = (long)k;
done:
    free(text);
    return result;
}

static int run_batch(const sx_client_opts *copts, const char *in_path, const char *out_path,
                     int conc, int wait_ms, int show_progress, int verify, int resume, int openai)
{
    size_t *lineno = NULL, at_line = 0;
    char *text = NULL;
    size_t len = 0;
    if (load_text(in_path, &text, &len))
        return 1;
    batch b;
    memset(&b, 0, sizeof b);
    pthread_mutex_init(&b.mu, NULL);
    b.wait_ms = wait_ms;
    b.verify = verify;
    b.codes = json_object();
    size_t cap = 0;
    for (char *p = text, *end; p < text + len; p = end + 1) {
        end = memchr(p, '\n', (size_t)(text + len - p));
        if (!end)
            end = text + len;
        size_t n = (size_t)(end - p);
        size_t k = 0;
        at_line++;
        while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r'))
            k++;
        if (k == n)
            continue;
        if (b.n == cap) {
            cap = cap ? 2 * cap : 256;
            b.lines = realloc(b.lines, cap * sizeof *b.lines);
            b.lens = realloc(b.lens, cap * sizeof *b.lens);
            lineno = realloc(lineno, cap * sizeof *lineno);
        }
        b.lines[b.n] = p;
        b.lens[b.n] = n;
        lineno[b.n] = at_line;
        b.n++;
    }
    int status = 1;
    sx_error err;
    pthread_t *th = NULL;
    char **raw_lines = NULL;
    size_t *raw_lens = NULL;
    b.openai = openai;
    if (openai) {
        raw_lines = b.lines;
        raw_lens = b.lens;
        if (openai_prepare(&b, in_path, lineno)) {
            b.lines = raw_lines;
            b.lens = raw_lens;
            raw_lines = NULL;
            raw_lens = NULL;
        }
    }
    char **all_lines = b.lines;
    size_t *all_lens = b.lens, skipped = 0, n_all = b.n;
    if (openai && !raw_lines)
        goto done; /* a malformed line, named */
    if (resume) {
        long k = resume_point(out_path, openai ? raw_lines : b.lines, openai ? raw_lens : b.lens,
                              b.n, openai ? "custom_id" : "id");
        if (k < 0)
            goto done;
        skipped = (size_t)k;
        b.lines += skipped;
        b.lens += skipped;
        if (b.cids)
            b.cids += skipped;
        b.n -= skipped;
        fprintf(stderr, "strux call: --resume: %zu lines already answered, %zu to send\n",
                skipped, b.n);
    }
    b.resp = calloc(b.n + 1, sizeof *b.resp);
    b.ms = calloc(b.n + 1, sizeof *b.ms);
    b.ok = calloc(b.n + 1, sizeof *b.ok);
    b.ready = calloc(b.n + 1, 1);
    th = calloc((size_t)conc, sizeof *th);
    if (!b.resp || !b.ms || !b.ok || !b.ready || !th || (b.n + skipped && !all_lines)) {
        fprintf(stderr, "strux call: out of memory\n");
        goto done;
    }
    if (!(b.out = fopen(out_path, resume ? "a" : "w"))) {
        fprintf(stderr, "strux call: cannot write %s\n", out_path);
        goto done;
    }
    if (sx_client_open_opts(copts, &b.client, &err)) {
        fprintf(stderr, "strux call: %s\n", err.msg);
        goto done;
    }
    double t0 = now_ms();
    int started = 0;
    for (; started < conc; started++)
        if (pthread_create(&th[started], NULL, batch_worker, &b))
            break;
    if (!started) {
        fprintf(stderr, "strux call: cannot start threads\n");
        goto done;
    }
    for (;;) {
        pthread_mutex_lock(&b.mu);
        int all = b.done >= b.n;
        pthread_mutex_unlock(&b.mu);
        if (all)
            break;
        if (show_progress)
            progress(&b, t0, 0);
        usleep(200000);
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    double secs = (now_ms() - t0) / 1e3;
    if (show_progress)
        progress(&b, t0, 1);
    size_t okn = 0;
    for (size_t i = 0; i < b.n; i++)
        okn += b.ok[i];
    qsort(b.ms, b.n, sizeof *b.ms, cmp_double);
    double p50 = b.n ? b.ms[(b.n - 1) / 2] : 0, p99 = b.n ? b.ms[(size_t)((double)(b.n - 1) * 0.99)] : 0;
    fprintf(stderr,
            "strux call: %zu requests in %.2f s (%.2f req/s), ok %zu, errors %zu, latency p50 "
            "%.1f ms p99 %.1f ms, %lld completion tokens (%.1f tok/s), concurrency %d",
            b.n, secs, secs > 0 ? (double)b.n / secs : 0.0, okn, b.n - okn, p50, p99,
            b.completion_tokens, secs > 0 ? (double)b.completion_tokens / secs : 0.0, conc);
    if (json_object_size(b.codes)) {
        char *c = json_dumps(b.codes, JSON_COMPACT);
        fprintf(stderr, ", errors by code %s", c ? c : "?");
        free(c);
    }
    if (verify)
        fprintf(stderr, ", verified %zu outputs: %d failed", okn, b.verify_failures);
    sx_client_stats st;
    sx_client_get_stats(b.client, &st);
    fprintf(stderr, ", replicas %d of %d connected, retries %lld, overloaded retries %lld",
            st.connected, copts->n_addrs, st.retries, st.overloaded);
    if (skipped)
        fprintf(stderr, ", resumed after %zu answered lines", skipped);
    fputc('\n', stderr);
    status = b.transport_errors || b.verify_failures ? 1 : 0;
done:
    if (b.out && fclose(b.out)) {
        fprintf(stderr, "strux call: error writing %s\n", out_path);
        status = 1;
    }
    sx_client_close(b.client);
    for (size_t i = 0; b.resp && i < b.n; i++)
        free(b.resp[i]);
    free(b.resp);
    free(b.ms);
    free(b.ok);
    free(b.ready);
    if (openai && raw_lines) {
        for (size_t i = 0; i < n_all; i++)
            free(all_lines[i]);
        free(all_lines);
        free(all_lens);
        all_lines = raw_lines;
        all_lens = raw_lens;
    }
    if (b.cids) {
        b.cids -= skipped;
        for (size_t i = 0; i < n_all; i++)
            free(b.cids[i]);
        free(b.cids);
    }
    free(all_lines);
    free(all_lens);
    free(lineno);
    free(th);
    json_decref(b.codes);
    pthread_mutex_destroy(&b.mu);
    free(text);
    return status;
}

/* ---- one request -------------------------------------------------------------- */

static json_t *split_labels(const char *s)
{
    json_t *a = json_array();
    const char *p = s;
    while (a) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        json_t *l = json_stringn(p, n);
        if (!l || json_array_append_new(a, l)) {
            json_decref(a);
            return NULL;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return a;
}

enum { MAX_ADDRS = 256 };

/* --addr-file: one address a line; blank lines and '#' comments skipped.
 * The addresses point into *text, which the caller frees. */
static int read_addr_file(const char *path, char **text, const char **addrs, int *n)
{
    size_t len;
    if (load_text(path, text, &len))
        return 1;
    for (char *p = *text, *end; p && *p; p = end) {
        end = strchr(p, '\n');
        if (end)
            *end++ = 0;
        char *hash = strchr(p, '#');
        if (hash)
            *hash = 0;
        p += strspn(p, " \t\r");
        size_t k = strlen(p);
        while (k && strchr(" \t\r", p[k - 1]))
            p[--k] = 0;
        if (!k)
            continue;
        if (*n >= MAX_ADDRS) {
            fprintf(stderr, "strux call: more than %d addresses\n", MAX_ADDRS);
            return 1;
        }
        addrs[(*n)++] = p;
    }
    return 0;
}

int cmd_call(int argc, char **argv)
{
    const char *addrs[MAX_ADDRS], *addr_file = NULL;
    int n_addrs = 0, retries = 3, resume = 0;
    double overload_wait = 60;
    char *addr_text = NULL;
    const char *schema = NULL, *choices = NULL, *regex = NULL, *doc = NULL;
    const char *msgs = NULL, *instruction = NULL, *sys = NULL, *id = NULL, *batch_in = NULL;
    const char *batch_out = NULL;
    int want_object = 0, output_only = 0, conc = 8, progress_bar = 1, verify = 0, openai_batch = 0;
    long max_tokens = 0, seed = -1, logprobs = -1;
    double temperature = -1, timeout = 0;
    int no_progress = 0;
    const char *openai_in = NULL;
    cli_list addr_list = {.v = addrs, .cap = MAX_ADDRS};
    cli_opt opts[] = {
        {.kind = CLI_SECTION, .help = "replicas:"},
        {.name = "--addr", .kind = CLI_LIST, .dst = &addr_list, .arg = "ADDR",
         .help = "a server, tcp://HOST:PORT or ipc:///PATH; repeat it for several\n"
                 "replicas of one service: requests are spread over the connected\n"
                 "ones, and one that goes away is re-dialled in the background"},
        {.name = "--addr-file", .kind = CLI_STR, .dst = &addr_file, .arg = "FILE",
         .help = "more addresses, one per line ('#' starts a comment)"},
        {.name = "--retries", .kind = CLI_INT, .dst = &retries, .lo = 0, .hi = 100, .arg = "N",
         .help = "how often one request is sent again when its replica's\n"
                 "connection closes before the answer (it died or restarted) or\n"
                 "no answer comes in time (0..100, default 3). The same bytes go again --\n"
                 "same id, same seed, so the same answer -- to another replica;\n"
                 "nng itself never resends. Each request gets exactly one answer."},
        {.name = "--overload-wait", .kind = CLI_DOUBLE, .dst = &overload_wait, .dlo = 0,
         .dhi = 86400, .arg = "S",
         .help = "an `overloaded` answer (queue full, or the replica is draining\n"
                 "after SIGTERM) is not a failure: the request is sent again after\n"
                 "a short backoff (20 ms, doubling to 1 s) for up to S seconds\n"
                 "(default 60; 0 returns `overloaded` as the answer)"},
        {.kind = CLI_SECTION,
         .help = "one request (printed response on stdout; exit 0 when ok, 1 when not):"},
        {.name = "--schema", .kind = CLI_STR, .dst = &schema, .arg = "FILE",
         .help = "JSON Schema the output must validate against"},
        {.name = "--choices", .kind = CLI_STR, .dst = &choices, .arg = "A,B,C",
         .help = "labels to classify into (output is one of them, plus scores)"},
        {.name = "--regex", .kind = CLI_STR, .dst = &regex, .arg = "RE",
         .help = "the output is text matching RE"},
        {.name = "--json-object", .kind = CLI_FLAG, .dst = &want_object,
         .help = "any JSON object"},
        {.name = "--document", .kind = CLI_STR, .dst = &doc, .arg = "FILE",
         .help = "text to extract from ('-' = stdin); strux builds the prompt"},
        {.name = "--messages", .kind = CLI_STR, .dst = &msgs, .arg = "FILE",
         .help = "a JSON array of {role, content} messages instead"},
        {.name = "--instruction", .kind = CLI_STR, .dst = &instruction, .arg = "TEXT",
         .help = "replaces the default task sentence of document requests"},
        {.name = "--system", .kind = CLI_STR, .dst = &sys, .arg = "TEXT",
         .help = "replaces the whole default system message"},
        {.name = "--max-tokens", .kind = CLI_LONG, .dst = &max_tokens, .lo = 0, .hi = 1L << 30,
         .arg = "N", .help = "completion budget (server default otherwise)"},
        {.name = "--temperature", .kind = CLI_DOUBLE, .dst = &temperature, .dlo = 0, .dhi = 1e6,
         .arg = "T", .help = "sampling temperature (default 0: greedy)"},
        {.name = "--seed", .kind = CLI_LONG, .dst = &seed, .lo = 0, .hi = LONG_MAX, .arg = "N",
         .help = "sampling seed"},
        {.name = "--logprobs", .kind = CLI_LONG, .dst = &logprobs, .lo = 0, .hi = 1000000,
         .arg = "N", .help = "per-token log-probs with N alternatives"},
        {.name = "--id", .kind = CLI_STR, .dst = &id, .arg = "ID", .help = "request id echoed back"},
        {.name = "--output", .kind = CLI_FLAG, .dst = &output_only,
         .help = "print only the output value, not the whole response"},
        {.kind = CLI_SECTION, .help = "batch:"},
        {.name = "--batch", .kind = CLI_STR, .dst = &batch_in, .arg = "IN.jsonl",
         .help = "one request object per line (as in docs/PROTOCOL.md)"},
        {.name = "--out", .kind = CLI_STR, .dst = &batch_out, .arg = "OUT.jsonl",
         .help = "one response per line, in input order, each exactly once\n"
                 "(written as soon as every line before it is answered)"},
        {.name = "--resume", .kind = CLI_FLAG, .dst = &resume,
         .help = "OUT.jsonl holds the answers of a batch that stopped: keep its\n"
                 "complete lines (checked against the input's ids), drop a\n"
                 "partial last line, and send only the lines not yet answered"},
        {.name = "--openai-batch", .kind = CLI_STR, .dst = &openai_in, .arg = "IN.jsonl",
         .help = "OpenAI's batch input instead of --batch: lines {\"custom_id\",\n"
                 "\"method\": \"POST\", \"url\": \"/v1/chat/completions\" or\n"
                 "\"/v1/completions\", \"body\": {...}}; OUT gets OpenAI's batch output\n"
                 "lines {\"id\", \"custom_id\", \"response\": {\"status_code\",\n"
                 "\"request_id\", \"body\"}, \"error\"}; a malformed line is named and\n"
                 "nothing is sent (exit 1); --resume matches lines by custom_id"},
        {.name = "--concurrency", .kind = CLI_INT, .dst = &conc, .lo = 1, .hi = 4096, .arg = "N",
         .help = "requests in flight (1..4096, default 8)"},
        {.name = "--no-progress", .kind = CLI_FLAG, .dst = &no_progress,
         .help = "no progress bar (it is drawn only on a terminal anyway)"},
        {.name = "--verify", .kind = CLI_FLAG, .dst = &verify,
         .help = "re-check every successful output on the client side with\n"
                 "strux's validator against its request (schema, choices,\n"
                 "json_object); failures are counted and make the exit 1"},
        {.kind = CLI_SECTION, .help = "both:"},
        {.name = "--timeout", .kind = CLI_DOUBLE, .dst = &timeout, .dlo = 0, .dhi = 1e8,
         .arg = "S", .help = "request deadline sent to the server, seconds; the client\n"
                             "waits that long plus 5 s per attempt (default: server's\n"
                             "deadline, client waits up to 600 s per attempt)"},
    };
    cli_spec spec = {
        .cmd = "call",
        .usage = "--addr ADDR [--addr ADDR2 ...] (--schema FILE | --choices A,B,C |\n"
                 "                  --regex RE | --json-object) (--document FILE | --messages FILE) "
                 "[options]\n"
                 "       strux call --addr ADDR [...] --batch IN.jsonl --out OUT.jsonl "
                 "[--concurrency N]\n"
                 "                  [--resume]\n"
                 "       strux call --addr ADDR [...] --openai-batch IN.jsonl --out OUT.jsonl "
                 "[--resume]",
        .about = "Sends requests to struxd replicas (nng REQ/REP; docs/PROTOCOL.md).\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    n_addrs = addr_list.n;
    progress_bar = !no_progress;
    if (openai_in) {
        if (batch_in)
            return cli_usage_error(&spec, "--batch and --openai-batch exclude each other");
        batch_in = openai_in;
        openai_batch = 1;
    }
    if (addr_file && read_addr_file(addr_file, &addr_text, addrs, &n_addrs)) {
        free(addr_text);
        return 2;
    }
    if (!n_addrs) {
        free(addr_text);
        return cli_usage_error(&spec, "needs --addr or --addr-file");
    }
    sx_client_opts copts;
    sx_client_opts_init(&copts);
    copts.addrs = addrs;
    copts.n_addrs = n_addrs;
    copts.retries = retries;
    copts.overload_wait_ms = (int)(overload_wait * 1000);
    int wait_ms = timeout > 0 ? (int)(timeout * 1000) + 5000 : 600000;
    if (batch_in || batch_out || resume) {
        int rc;
        if (openai_batch && verify) {
            fprintf(stderr, "strux call: --verify applies to --batch (an OpenAI batch's answers "
                            "are re-checked by the server)\n");
            rc = 2;
        } else if (!batch_in || !batch_out || conc < 1 || conc > 4096) {
            fprintf(stderr, "strux call: --batch needs --out and --concurrency in 1..4096 "
                            "(--resume needs --batch)\n");
            rc = 2;
        } else {
            rc = run_batch(&copts, batch_in, batch_out, conc, wait_ms, progress_bar && isatty(2),
                           verify, resume, openai_batch);
        }
        free(addr_text);
        return rc;
    }
    int n_constraints = !!schema + !!choices + !!regex + want_object;
    if (n_constraints > 1 || !!doc + !!msgs != 1) {
        fprintf(stderr, "strux call: give at most one of --schema/--choices/--regex/--json-object "
                        "and exactly one of --document/--messages\n");
        return 2;
    }
    int status = 1;
    char *text = NULL;
    size_t len = 0;
    json_t *req = json_object(), *resp = NULL;
    sx_client *c = NULL;
    sx_error err;
    if (!req)
        goto done;
    if (id)
        json_object_set_new(req, "id", json_string(id));
    if (schema) {
        json_error_t je;
        json_t *s = json_load_file(schema, JSON_DECODE_ANY, &je);
        if (!s) {
            fprintf(stderr, "strux call: %s: line %d: %s\n", schema, je.line, je.text);
            goto done;
        }
        json_object_set_new(req, "schema", s);
    }
    if (choices)
        json_object_set_new(req, "choices", split_labels(choices));
    if (regex)
        json_object_set_new(req, "regex", json_string(regex));
    if (want_object)
        json_object_set_new(req, "json_object", json_true());
    if (doc) {
        if (load_text(doc, &text, &len))
            goto done;
        json_t *d = json_stringn(text, len);
        if (!d) {
            fprintf(stderr, "strux call: %s is not UTF-8 text\n", doc);
            goto done;
        }
        json_object_set_new(req, "document", d);
    } else {
        json_error_t je;
        json_t *m = json_load_file(msgs, 0, &je);
        if (!m) {
            fprintf(stderr, "strux call: %s: line %d: %s\n", msgs, je.line, je.text);
            goto done;
        }
        if (json_is_object(m)) {
            json_t *inner = json_incref(json_object_get(m, "messages"));
            json_decref(m);
            m = inner;
        }
        json_object_set_new(req, "messages", m ? m : json_null());
    }
    if (instruction)
        json_object_set_new(req, "instruction", json_string(instruction));
    if (sys)
        json_object_set_new(req, "system", json_string(sys));
    if (max_tokens > 0)
        json_object_set_new(req, "max_tokens", json_integer(max_tokens));
    if (seed >= 0)
        json_object_set_new(req, "seed", json_integer(seed));
    if (logprobs >= 0)
        json_object_set_new(req, "logprobs", json_integer(logprobs));
    if (temperature >= 0)
        json_object_set_new(req, "temperature", json_real(temperature));
    if (timeout > 0)
        json_object_set_new(req, "timeout", json_real(timeout));
    if (sx_client_open_opts(&copts, &c, &err) || sx_client_call_json(c, req, wait_ms, &resp, &err)) {
        fprintf(stderr, "strux call: %s\n", err.msg);
        goto done;
    }
    json_t *shown = output_only ? json_object_get(resp, "output") : resp;
    char *t = json_dumps(shown ? shown : json_null(),
                         JSON_ENCODE_ANY | (output_only ? JSON_INDENT(2) : JSON_COMPACT));
    if (t)
        puts(t);
    free(t);
    if (json_is_true(json_object_get(resp, "ok"))) {
        status = 0;
    } else if (output_only) {
        json_t *e = json_object_get(resp, "error");
        fprintf(stderr, "strux call: %s: %s%s%s\n",
                json_string_value(json_object_get(e, "code")),
                json_string_value(json_object_get(e, "message")),
                json_object_get(e, "pointer") ? " at " : "",
                json_object_get(e, "pointer") ? json_string_value(json_object_get(e, "pointer"))
                                              : "");
    }
done:
    sx_client_close(c);
    free(addr_text);
    json_decref(req);
    json_decref(resp);
    free(text);
    return status;
}
