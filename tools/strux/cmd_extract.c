/* strux extract: many documents -> JSON, in process, with the server's
 * prompt, continuous batching (sx_gen) and re-check. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sx_file.h"
#include "engine/cpu/engine.h"
#include "engine/generate.h"
#include "engine/model/model.h"
#include "grammar/vocab/vocab.h"
#include "rpc/protocol.h"
#include "grammar/grammar.h"
#include "grammar/validator/validator.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/extract_input.h"
#include "tools/strux/tool_common.h"

#define EX_MAX_SCHEMAS 64
#define EX_SHOW_FAILED 20

typedef struct ex_schema {
    const char *path;
    json_t     *schema;
    int         warm;    /* its system turn is in the generator's prefix cache */
    /* compiled once, as the server's compile cache does (same options) */
    sx_grammar   *grammar;
    sx_validator *validator;
} ex_schema;

typedef struct ex_ctx ex_ctx;

/* one document x schema in flight */
typedef struct ex_job {
    ex_ctx                *x;
    size_t                 row, schema;
    sx_rpc_req             req;
    sx_bytes               text;
    sx_rpc_tok_span       *spans;   /* --field-confidence: one per token */
    size_t                 n_spans, cap_spans;
} ex_job;

struct ex_ctx {
    ex_rows       rows;
    ex_schema     schemas[EX_MAX_SCHEMAS];
    size_t        n_schemas;
    const sx_vocab *vocab;
    sx_rpc_limits lim;
    const sx_tokenizer *tok;
    sx_gen       *gen;
    sx_backend   *eng;
    int64_t       kv_capacity;
    FILE         *out;
    /* rows are written in input order: a finished row's line waits in
     * `held` until every row before it is written (or skipped) */
    char        **held;        /* [total]: the line of row k, or NULL */
    unsigned char *ready;      /* [total]: row k finished or skipped */
    size_t        next_write;  /* the first row not yet written */
    char        **done_keys;   /* --resume: sorted "input\x1fschema" */
    size_t        n_done_keys;
    /* request template */
    int           max_tokens;
    double        temperature;
    unsigned long long seed;
    const char   *instruction;
    /* progress */
    size_t        total, next, inflight, max_inflight;
    size_t        n_ok, n_failed, n_skipped, n_finished;
    long long     prompt_tokens, cached_tokens, completion_tokens, forced_tokens;
    double        t_start, t_last_progress;
    int           quiet, write_error;
    int           field_conf;  /* --field-confidence */
    int           no_prefix_cache; /* --prefix-cache-gb 0 */
    double        review_below; /* --review-below P (0 = off) */
    size_t        n_review;
    sx_bytes      failures;    /* the first EX_SHOW_FAILED, one line each */
};

static char *pair_key(const char *input, const char *schema)
{
    size_t a = strlen(input), b = strlen(schema);
    char *k = malloc(a + b + 2);
    if (k) {
        memcpy(k, input, a);
        k[a] = '\x1f';
        memcpy(k + a + 1, schema, b + 1);
    }
    return k;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_done(const ex_ctx *x, const char *input, const char *schema)
{
    if (!x->n_done_keys)
        return 0;
    char *k = pair_key(input, schema);
    int hit = k && bsearch(&k, x->done_keys, x->n_done_keys, sizeof *x->done_keys, cmp_str);
    free(k);
    return hit;
}

/* --resume: the keys of the rows in path; a torn last line is cut off so
 * that appending starts on a fresh line.  A missing file is an empty one. */
static int load_done(ex_ctx *x, const char *path)
{
    if (!sx_file_exists(path))
        return 0;
    char *data;
    size_t len;
    sx_error err;
    sx_err_clear(&err);
    if (sx_file_read(path, &data, &len, &err)) {
        fprintf(stderr, "strux extract: --resume: %s\n", err.msg);
        return -1;
    }
    size_t keep = 0, line = 0;
    for (size_t p = 0; p < len;) {
        const char *nl = memchr(data + p, '\n', len - p);
        if (!nl)
            break;   /* torn: no newline after it */
        size_t e = (size_t)(nl - data);
        line++;
        json_error_t je;
        json_t *row = json_loadb(data + p, e - p, 0, &je);
        const char *in = json_string_value(json_object_get(row, "input"));
        const char *sc = json_string_value(json_object_get(row, "schema"));
        if (!in || !sc) {
            fprintf(stderr, "strux extract: --resume: %s line %zu is not a row of strux extract\n",
                    path, line);
            json_decref(row);
            free(data);
            return -1;
        }
        char **v = realloc(x->done_keys, (x->n_done_keys + 1) * sizeof *v);
        char *k = pair_key(in, sc);
        json_decref(row);
        if (!v || !k) {
            free(k);
            free(data);
            fprintf(stderr, "strux extract: out of memory\n");
            return -1;
        }
        x->done_keys = v;
        x->done_keys[x->n_done_keys++] = k;
        p = keep = e + 1;
    }
    free(data);
    qsort(x->done_keys, x->n_done_keys, sizeof *x->done_keys, cmp_str);
    if (keep < len) {
        fprintf(stderr, "strux extract: --resume: cutting a torn last line (%zu bytes) off %s\n",
                len - keep, path);
        if (truncate(path, (off_t)keep)) {
            perror("strux extract: --resume: truncate");
            return -1;
        }
    }
    return 0;
}

static void progress(ex_ctx *x, int final)
{
    double now = tool_now_us() / 1e6;
    if (x->quiet || (!final && now - x->t_last_progress < 1.0))
        return;
    x->t_last_progress = now;
    double el = now - x->t_start;
    double rate = el > 0 ? (double)x->n_finished / el : 0;
    size_t left = x->total - x->n_skipped - x->n_finished;
    fprintf(stderr, "strux extract: %zu/%zu rows (%zu failed), %.2f rows/s", x->n_finished,
            x->total - x->n_skipped, x->n_failed, rate);
    if (left && rate > 0)
        fprintf(stderr, ", ETA %.0f s", (double)left / rate);
    fprintf(stderr, "\n");
}

/* Takes row k's line (owned; NULL for a skipped row or one that could not
 * be written) and writes every row that is now next in input order. */
static void put_row(ex_ctx *x, size_t k, char *line)
{
    x->held[k] = line;
    x->ready[k] = 1;
    while (x->next_write < x->total && x->ready[x->next_write]) {
        char *l = x->held[x->next_write];
        if (l && (fputs(l, x->out) == EOF || fputc('\n', x->out) == EOF))
            x->write_error = 1;
        free(l);
        x->held[x->next_write++] = NULL;
    }
    if (fflush(x->out))
        x->write_error = 1;
}

/* Writes one row (in input order) and counts it.  `error` NULL = success
 * (output set). */
static void emit(ex_ctx *x, size_t row, size_t schema, const json_t *output, const char *finish,
                 const sx_gen_event *ev, const char *code, const char *message,
                 const char *pointer, const sx_bytes *text, json_t *fields)
{
    const ex_row *r = &x->rows.v[row];
    json_t *o = json_object();
    json_object_set_new(o, "input", json_string(r->key));
    json_object_set_new(o, "schema", json_string(x->schemas[schema].path));
    if (r->id)
        json_object_set(o, "id", r->id);
    json_object_set_new(o, "ok", json_boolean(!code));
    if (!code) {
        json_object_set(o, "output", output ? (json_t *)output : json_null());
        if (fields) {
            json_object_set(o, "field_confidence", fields);
            if (x->review_below > 0) {
                int review = sx_rpc_field_confidence_min(fields) < x->review_below;
                json_object_set_new(o, "review", json_boolean(review));
                x->n_review += review;
            }
        }
    } else {
        json_t *e = json_pack("{s:s, s:s}", "code", code, "message", message);
        if (pointer && *pointer)
            json_object_set_new(e, "pointer", json_string(pointer));
        json_object_set_new(o, "error", e);
        if (text && text->n)
            json_object_set_new(o, "text", json_stringn(text->v, text->n));
    }
    if (finish)
        json_object_set_new(o, "finish_reason", json_string(finish));
    if (ev) {
        json_object_set_new(o, "usage",
                            json_pack("{s:i, s:i, s:i, s:i}", "prompt_tokens", ev->n_prompt,
                                      "completion_tokens", ev->n_completion, "forced_tokens",
                                      ev->n_forced, "cached_tokens", ev->n_cached));
        x->prompt_tokens += ev->n_prompt;
        x->cached_tokens += ev->n_cached;
        x->completion_tokens += ev->n_completion;
        x->forced_tokens += ev->n_forced;
    }
    char *line = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!line)
        x->write_error = 1;
    put_row(x, row * x->n_schemas + schema, line);
    x->n_finished++;
    if (code) {
        x->n_failed++;
        if (x->n_failed <= EX_SHOW_FAILED) {
            char buf[1024];
            int n = snprintf(buf, sizeof buf, "  %s with %s: %s: %s%s%s\n", r->key,
                             x->schemas[schema].path, code, message,
                             pointer && *pointer ? " at " : "", pointer ? pointer : "");
            sx_bytes_append(&x->failures, buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
        }
    } else {
        x->n_ok++;
    }
    progress(x, 0);
}

static void job_free(ex_job *j)
{
    if (!j)
        return;
    sx_rpc_req_free(&j->req);
    sx_bytes_free(&j->text);
    free(j->spans);
    ex_row_drop_text(&j->x->rows.v[j->row]);
    free(j);
}

static const char *finish_name(int f)
{
    switch (f) {
    case SX_FINISH_STOP: return "stop";
    case SX_FINISH_LENGTH: return "length";
    case SX_FINISH_CANCELLED: return "cancelled";
    default: return "error";
    }
}

static int span_push(ex_job *j, size_t at, const sx_gen_event *ev)
{
    if (j->n_spans == j->cap_spans) {
        size_t cap = j->cap_spans ? j->cap_spans * 2 : 64;
        sx_rpc_tok_span *v = realloc(j->spans, cap * sizeof *v);
        if (!v)
            return -1;
        j->spans = v;
        j->cap_spans = cap;
    }
    j->spans[j->n_spans++] = (sx_rpc_tok_span){.start = at, .end = j->text.n,
                                               .logprob = ev->logprob, .forced = ev->forced};
    return 0;
}

static void on_event(const sx_gen_event *ev, void *ctx)
{
    ex_job *j = ev->user;
    ex_ctx *x = j->x;
    (void)ctx;
    size_t at = j->text.n;
    if (ev->piece_len)
        sx_bytes_append(&j->text, ev->piece, ev->piece_len);
    if (!ev->done) {
        if (x->field_conf && span_push(j, at, ev))
            x->write_error = 1;
        return;
    }
    x->inflight--;
    if (ev->finish == SX_FINISH_ERROR || ev->finish == SX_FINISH_CANCELLED) {
        emit(x, j->row, j->schema, NULL, finish_name(ev->finish), ev, "internal",
             ev->finish == SX_FINISH_ERROR ? ev->error.msg : "cancelled", NULL, &j->text, NULL);
        job_free(j);
        return;
    }
    /* the independent re-check: the validator, not the grammar, decides */
    json_t *output = NULL;
    sx_error err;
    sx_err_clear(&err);
    int rc = sx_rpc_check_output(&j->req, j->text.v ? j->text.v : "", j->text.n,
                                 j->x->schemas[j->schema].validator, &output,
                                 &err);
    if (!rc) {
        json_t *fields = NULL;
        if (x->field_conf &&
            sx_rpc_field_confidence(j->text.v, j->text.n, j->spans, j->n_spans, &fields, &err)) {
            /* the text validated, so only memory can fail here */
            fprintf(stderr, "strux extract: field confidence: %s\n", err.msg);
            x->write_error = 1;
        }
        emit(x, j->row, j->schema, output, finish_name(ev->finish), ev, NULL, NULL, NULL, NULL,
             fields);
        json_decref(fields);
    } else if (ev->finish == SX_FINISH_LENGTH) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "max_tokens (%d) ran out before the output could be closed validly",
                 j->req.max_tokens);
        emit(x, j->row, j->schema, NULL, "length", ev, "incomplete", msg, "/max_tokens", &j->text,
             NULL);
    } else {
        char msg[700];
        snprintf(msg, sizeof msg, "generated output failed the re-check: %s", err.msg);
        emit(x, j->row, j->schema, NULL, finish_name(ev->finish), ev, "internal", msg,
             err.pointer, &j->text, NULL);
    }
    json_decref(output);
    job_free(j);
}

/* Starts document x schema `k` (row-major: a document's schemas run
 * together); a row that cannot start is written as failed here. */
static int start(ex_ctx *x, size_t k)
{
    size_t row = k / x->n_schemas, sch = k % x->n_schemas;
    ex_row *r = &x->rows.v[row];
    if (is_done(x, r->key, x->schemas[sch].path)) {
        x->n_skipped++;
        put_row(x, k, NULL);
        return 0;
    }
    sx_error err;
    sx_err_clear(&err);
    if (r->error) {
        emit(x, row, sch, NULL, NULL, NULL, "bad_request", r->error, NULL, NULL, NULL);
        return 0;
    }
    if (ex_row_text(r, &err)) {
        emit(x, row, sch, NULL, NULL, NULL, "bad_request", err.msg, NULL, NULL, NULL);
        return 0;
    }
    ex_job *j = calloc(1, sizeof *j);
    if (!j) {
        fprintf(stderr, "strux extract: out of memory\n");
        return -1;
    }
    j->x = x;
    j->row = row;
    j->schema = sch;
    /* the request the server would get: the same parse, prompt and limits */
    json_t *body = json_pack("{s:O, s:i, s:f, s:I}", "schema", x->schemas[sch].schema,
                             "max_tokens", x->max_tokens, "temperature", x->temperature, "seed",
                             (json_int_t)x->seed);
    json_t *doc = json_stringn(r->text, r->text_len);
    if (!doc) {
        json_decref(body);
        emit(x, row, sch, NULL, NULL, NULL, "bad_request", "the document is not valid UTF-8",
             NULL, NULL, NULL);
        job_free(j);
        return 0;
    }
    json_object_set_new(body, "document", doc);
    if (x->instruction)
        json_object_set_new(body, "instruction", json_string(x->instruction));
    int prefix_len = 0, handle;
    sx_ids prompt = {0};
    const char *code = NULL;
    int rc = sx_rpc_req_from_json(body, &x->lim, &j->req, &err);
    json_decref(body);
    if (rc) {
        code = sx_rpc_code_name(sx_rpc_code_of(SX_RPC_STAGE_PARSE, rc));
        goto refused;
    }
    if ((rc = sx_rpc_prompt_encode(x->tok, &j->req, &prompt, &prefix_len, &err))) {
        code = sx_rpc_code_name(sx_rpc_code_of(SX_RPC_STAGE_PARSE, rc));
        goto refused;
    }
    if (!x->schemas[sch].warm && prefix_len > 0 && !x->no_prefix_cache) {
        /* Rows start a batch at a time, and the generator keeps a prefix
         * only once a request has prefilled it: without this the first
         * batch would prefill the schema's system turn once per row. */
        int seq;
        x->schemas[sch].warm = 1;
        if ((rc = sx_gen_prefix_seq(x->gen, prompt.v, (int)prompt.n, prefix_len, &seq, &err))) {
            code = "internal";
            goto refused;
        }
        if (seq >= 0)
            sx_backend_seq_free(x->eng, seq);
    }
    /* the generator reserves prompt + max_tokens (+ slack), as in the server */
    if ((int64_t)prompt.n + j->req.max_tokens + 32 > x->kv_capacity) {
        sx_err_set(&err, SX_ELIMIT, "the prompt (%zu tokens) plus max_tokens (%d) do not fit the "
                   "KV cache (%lld tokens, --kv-tokens)", prompt.n, j->req.max_tokens,
                   (long long)x->kv_capacity);
        code = "too_large";
        goto refused;
    }
    sx_gen_params p;
    memset(&p, 0, sizeof p);
    p.grammar = x->schemas[sch].grammar;
    p.sampling = j->req.sampling;
    p.max_tokens = j->req.max_tokens;
    p.prefix_len = prefix_len;
    rc = sx_gen_add(x->gen, prompt.v, (int)prompt.n, &p, j, &handle, &err);
    sx_ids_free(&prompt);
    if (rc) {
        /* the KV fit is checked above: a limit here is max_tokens below
         * the schema's shortest valid document */
        code = rc == SX_ELIMIT ? "incomplete" : "internal";
        if (rc == SX_ELIMIT)
            snprintf(err.pointer, sizeof err.pointer, "/max_tokens");
        goto refused;
    }
    x->inflight++;
    return 0;
refused:
    sx_ids_free(&prompt);
    emit(x, row, sch, NULL, NULL, NULL, code, err.msg, err.pointer, NULL, NULL);
    job_free(j);
    return 0;
}

/* The schemas compile once, before the model loads: a bad one stops the
 * job at once rather than failing every row. */
static int load_schemas(ex_ctx *x)
{
    for (size_t i = 0; i < x->n_schemas; i++) {
        ex_schema *s = &x->schemas[i];
        sx_error err;
        sx_err_clear(&err);
        /* numbers of any length, as the server reads a request's schema */
        if (!(s->schema = tool_read_schema("extract", s->path)))
            return -1;
        /* the validator first, as in the server: it names malformed
         * keywords most precisely */
        sx_gr_opts o;
        sx_gr_opts_default(&o);
        int rc = sx_val_compile(s->schema, NULL, &s->validator, &err);
        if (!rc)
            rc = sx_gr_compile_json(x->vocab, s->schema, &o, &s->grammar, &err);
        if (rc) {
            fprintf(stderr, "strux extract: %s: cannot compile: %s%s%s\n", s->path, err.msg,
                    err.pointer[0] ? " at " : "", err.pointer);
            return -1;
        }
    }
    return 0;
}

/* --review-below P (dst: double) */
static int parse_probability(void *dst, const char *val, char *why, size_t cap)
{
    double p;
    if (!cli_parse_double(val, 0, 0, &p, why, cap) && p > 0 && p <= 1) {
        *(double *)dst = p;
        return 0;
    }
    snprintf(why, cap, "is not a probability in (0, 1]");
    return -1;
}

int cmd_extract(int argc, char **argv)
{
    const char *model_dir = NULL, *out_path = NULL, *input = NULL, *format = NULL;
    const char *text_col = "text", *id_col = NULL;
    size_t n_files = 0;
    int resume = 0, int8 = 0, q4 = 0, kvbf16 = 0;
    long batch = 32, threads = 0, kv_tokens = 65536, max_tokens = 512;
    double prefix_gb = -1;   /* -1: as room allows */
    ex_ctx x;
    memset(&x, 0, sizeof x);
    x.temperature = 0;
    const char *schema_paths[EX_MAX_SCHEMAS];
    cli_list schema_list = {.v = schema_paths, .cap = EX_MAX_SCHEMAS};
    cli_opt opts[] = {
        {.kind = CLI_SECTION, .help = "input (one of):\n"
                                      "  FILE ...                text files, one document each "
                                      "(the key is the path)"},
        {.name = "--input", .kind = CLI_STR, .dst = &input, .arg = "TABLE",
         .help = "a JSONL file (one object per line) or a CSV file with a\n"
                 "header row; the key of row N is TABLE:N (JSONL: line N;\n"
                 "CSV: record N after the header)"},
        {.name = "--format", .kind = CLI_STR, .dst = &format, .arg = "F",
         .help = "jsonl or csv (default: csv for *.csv, else jsonl)"},
        {.name = "--text-column", .kind = CLI_STR, .dst = &text_col, .arg = "NAME",
         .help = "the column holding the document (default text)"},
        {.name = "--id-column", .kind = CLI_STR, .dst = &id_col, .arg = "NAME",
         .help = "a column copied to each output row as \"id\""},
        {.kind = CLI_SECTION, .help = "schemas and model:"},
        {.name = "--model", .kind = CLI_STR, .dst = &model_dir, .arg = "DIR",
         .help = "Hugging Face Qwen3 directory (`strux model random`\n"
                 "writes a stand-in whose outputs mean nothing)"},
        {.name = "--schema", .kind = CLI_LIST, .dst = &schema_list, .arg = "FILE",
         .help = "a JSON Schema; repeat it to run several (at most 64): one\n"
                 "output row per document and schema"},
        {.name = "--instruction", .kind = CLI_STR, .dst = &x.instruction, .arg = "TEXT",
         .help = "the task sentence of the prompt (default: the server's)"},
        {.kind = CLI_SECTION, .help = "output:"},
        {.name = "--out", .kind = CLI_STR, .dst = &out_path, .arg = "FILE",
         .help = "JSONL, one row per document and schema, in input order\n"
                 "(each document's rows in --schema order; a row is held\n"
                 "back until those before it are written; with --resume\n"
                 "the new rows follow the kept ones); '-' writes stdout.\n"
                 "A row: {\"input\", \"schema\",\n"
                 "\"ok\": true, \"output\", \"finish_reason\", \"usage\"} or\n"
                 "{\"input\", \"schema\", \"ok\": false, \"error\": {\"code\",\n"
                 "\"message\", \"pointer\"}} (and \"id\" with --id-column)"},
        {.name = "--resume", .kind = CLI_FLAG, .dst = &resume,
         .help = "keep the rows already in --out (ok or failed, keyed by\n"
                 "input and schema) and run only the others; a torn last\n"
                 "line (an interrupted run) is cut off first"},
        {.name = "--field-confidence", .kind = CLI_FLAG, .dst = &x.field_conf,
         .help = "add \"field_confidence\": per leaf value of the output, its\n"
                 "JSON Pointer, the summed log-probability of the tokens\n"
                 "the model chose for it under the schema's mask (forced\n"
                 "tokens left out) and the mass of the alternatives to its\n"
                 "first token (docs/PROTOCOL.md: what it does not mean)"},
        {.name = "--review-below", .kind = CLI_FN, .dst = &x.review_below,
         .fn = parse_probability, .arg = "P",
         .help = "with field confidence, \"review\": true on rows where any\n"
                 "field's probability exp(logprob) is below P (0 < P <= 1)"},
        {.name = "--quiet", .kind = CLI_FLAG, .dst = &x.quiet, .help = "no progress lines"},
        {.kind = CLI_SECTION, .help = "generation:"},
        {.name = "--max-tokens", .kind = CLI_LONG, .dst = &max_tokens, .lo = 1, .hi = 1 << 20,
         .arg = "N", .help = "completion budget per row (default 512); a document that\n"
                             "cannot close validly within it fails (\"incomplete\")"},
        {.name = "--temperature", .kind = CLI_DOUBLE, .dst = &x.temperature, .arg = "T",
         .help = "0 = greedy (default 0)"},
        {.name = "--seed", .kind = CLI_U64, .dst = &x.seed, .arg = "N",
         .help = "sampling seed (default 0)"},
        {.name = "--batch", .kind = CLI_LONG, .dst = &batch, .lo = 1, .hi = 1024, .arg = "N",
         .help = "documents decoded together (default 32)"},
        {.name = "--threads", .kind = CLI_LONG, .dst = &threads, .lo = 0, .hi = 1024, .arg = "N",
         .help = "CPU threads (default: all)"},
        {.name = "--kv-tokens", .kind = CLI_LONG, .dst = &kv_tokens, .lo = 256, .hi = 1L << 30,
         .arg = "N", .help = "KV-cache capacity in tokens (default 65536)"},
        {.name = "--prefix-cache-gb", .kind = CLI_DOUBLE, .dst = &prefix_gb, .dlo = 0, .dhi = 1e9,
         .arg = "G", .help = "KV of earlier prompts kept for rows that start the same\n"
                             "way, least recently used out first (default: as room\n"
                             "allows within --kv-tokens; 0 = off)"},
        {.name = "--int8", .kind = CLI_FLAG, .dst = &int8,
         .help = "quantise weights to int8 at start-up (see strux generate --help)"},
        {.name = "--q4", .kind = CLI_FLAG, .dst = &q4,
         .help = "quantise weights to 4 bits at start-up (see strux generate --help)"},
        {.name = "--kv-bf16", .kind = CLI_FLAG, .dst = &kvbf16,
         .help = "keep the KV cache in bf16"},
    };
    cli_spec spec = {
        .cmd = "extract",
        .usage = "--model DIR --schema FILE [--schema FILE ...]\n"
                 "                     (FILE.txt ... | --input TABLE [--text-column NAME])\n"
                 "                     --out OUT.jsonl [options]",
        .about = "Turns every document into JSON that validates against each schema, in this\n"
                 "process (no server): the prompt struxd builds for `document` requests\n"
                 "(docs/PROTOCOL.md), greedy decoding by default, every schema compiled once,\n"
                 "documents run together with continuous batching (a finished one makes room\n"
                 "for the next at once), the shared system turn of each schema prefilled once.\n"
                 "Each output is re-checked by strux's independent validator before it is\n"
                 "written.\n",
        .after = "Progress (rows done, rate, ETA) goes to stderr every second, and a summary at\n"
                 "the end.  Exit status 0 when every row succeeded, 1 when any failed (they are\n"
                 "listed) or the job could not run, 2 on usage errors.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = -1,
    };
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int np = 0, prc = files ? cli_parse(&spec, argc, argv, files, &np) : CLI_EXIT_USAGE;
    if (prc) {
        free(files);
        return prc == CLI_EXIT_HELP ? 0 : 2;
    }
    n_files = (size_t)np;
    for (int k = 0; k < schema_list.n; k++)
        x.schemas[x.n_schemas++].path = schema_paths[k];
    if (cli_seen(&spec, "--review-below"))
        x.field_conf = 1;
    if (!model_dir || !out_path || !x.n_schemas || (!n_files == !input)) {
        free(files);
        return cli_usage_error(&spec, "--model, --out, at least one --schema and either text "
                                      "files or --input are required");
    }
    if (!format)
        format = input && strlen(input) >= 4 && !strcmp(input + strlen(input) - 4, ".csv")
                     ? "csv" : "jsonl";
    if (strcmp(format, "csv") && strcmp(format, "jsonl")) {
        free(files);
        return cli_usage_error(&spec, "--format: \"%s\" is not jsonl or csv", format);
    }
    if (int8 && q4) {
        free(files);
        return cli_usage_error(&spec, "give at most one of --int8, --q4");
    }
    int to_stdout = !strcmp(out_path, "-");
    if (resume && to_stdout) {
        free(files);
        return cli_usage_error(&spec, "--resume reads the rows already written: give --out FILE");
    }
    x.max_tokens = (int)max_tokens;
    sx_rpc_limits_default(&x.lim);
    x.lim.max_tokens = (int)max_tokens;          /* the caller's budget is the cap */
    x.lim.max_request_bytes = (size_t)1 << 30;

    int rc = 1;
    sx_error err;
    sx_err_clear(&err);
    sx_model *model = NULL;
    sx_engine *cpu = NULL;
    sx_backend *eng = NULL;
    sx_tokenizer *tok = NULL;
    sx_vocab *vocab = NULL;

    for (size_t i = 0; i < n_files; i++)
        if (ex_rows_add_file(&x.rows, files[i], &err))
            goto fail_err;
    if (input && ex_rows_add_table(&x.rows, input, format, text_col, id_col, &err))
        goto fail_err;
    if (tool_load("extract", NULL, model_dir, &tok, &vocab))
        goto done;
    x.tok = tok;
    x.vocab = vocab;
    if (load_schemas(&x))
        goto done;
    if (resume && load_done(&x, out_path))
        goto done;
    x.out = to_stdout ? stdout : fopen(out_path, resume ? "a" : "w");
    if (!x.out) {
        fprintf(stderr, "strux extract: cannot write %s: ", out_path);
        perror(NULL);
        goto done;
    }
    double t0 = tool_now_us();
    if (sx_model_load(model_dir, &model, &err))
        goto fail_err;
    sx_engine_opts eo = {.n_threads = (int)threads,
                         /* + the cached system turns of the schemas */
                         .max_seqs = (int)batch + 17 + SX_GEN_PREFIX_ENTRIES,
                         .kv_tokens = kv_tokens,
                         .block_tokens = 16,
                         .weight_mode = q4 ? SX_W_Q4 : int8 ? SX_W_INT8 : SX_W_BF16,
                         .kv_mode = kvbf16 ? SX_KV_BF16 : SX_KV_F32};
    sx_gen_opts go = {.max_batch = (int)batch};
    if (prefix_gb >= 0) {
        /* K and V of every layer per token */
        double per_token = 2.0 * model->cfg.n_layers * model->cfg.n_kv_heads *
                           model->cfg.head_dim * (kvbf16 ? 2 : 4);
        double t = prefix_gb * 1e9 / per_token;
        go.prefix_cache_tokens = t < 1 ? -1 : (int64_t)t;
        x.no_prefix_cache = t < 1;
    }
    if (sx_engine_new(model, &eo, &cpu, &err) || sx_engine_backend(cpu, 1, &eng, &err) ||
        (cpu = NULL, sx_gen_new(eng, tok, &go, on_event, &x, &x.gen, &err)))
        goto fail_err;
    x.eng = eng;
    x.kv_capacity = sx_backend_free_tokens(eng);
    if (tool_is_random_model(model_dir))
        fprintf(stderr, "strux extract: NOTE: %s holds RANDOM weights (a stand-in written by "
                        "`strux model random`): the outputs validate against the schemas but "
                        "are meaningless, they say nothing about the documents.\n", model_dir);
    x.total = x.rows.n * x.n_schemas;
    x.held = calloc(x.total ? x.total : 1, sizeof *x.held);
    x.ready = calloc(x.total ? x.total : 1, 1);
    if (!x.held || !x.ready) {
        fprintf(stderr, "strux extract: out of memory\n");
        goto done;
    }
    fprintf(stderr, "strux extract: loaded %s in %.2f s (cpu path %s); %zu documents x %zu "
                    "schemas = %zu rows%s\n", model_dir, (tool_now_us() - t0) / 1e6,
            sx_engine_cpu_path(sx_engine_of_backend(eng)), x.rows.n, x.n_schemas, x.total,
            x.n_done_keys ? " (--resume: rows already written are skipped)" : "");
    /* a full batch decoding and as many again queued to prefill, so that a
     * finished row is replaced at the next step */
    x.max_inflight = (size_t)batch * 2;
    x.t_start = x.t_last_progress = tool_now_us() / 1e6;
    for (;;) {
        while (x.inflight < x.max_inflight && x.next < x.total)
            if (start(&x, x.next++))
                goto done;
        if (!x.inflight && x.next >= x.total)
            break;
        int live;
        if (sx_gen_step(x.gen, &live, &err))
            goto fail_err;
    }
    progress(&x, 1);
    double el = tool_now_us() / 1e6 - x.t_start;
    fprintf(stderr, "strux extract: %zu rows in %.1f s (%.2f rows/s): %zu ok, %zu failed",
            x.n_finished, el, el > 0 ? (double)x.n_finished / el : 0.0, x.n_ok, x.n_failed);
    if (x.n_skipped)
        fprintf(stderr, ", %zu skipped (already in %s)", x.n_skipped, out_path);
    if (x.review_below > 0)
        fprintf(stderr, ", %zu to review (a field below %g)", x.n_review, x.review_below);
    fprintf(stderr, "; prompt %lld tokens (%lld from the prefix cache), completion %lld tokens "
                    "(%lld forced by the grammar)\n", x.prompt_tokens, x.cached_tokens,
            x.completion_tokens, x.forced_tokens);
    if (x.n_failed) {
        fprintf(stderr, "strux extract: failed rows%s:\n",
                x.n_failed > EX_SHOW_FAILED ? " (the first " "20" ")" : "");
        fwrite(x.failures.v, 1, x.failures.n, stderr);
    }
    if (x.write_error) {
        fprintf(stderr, "strux extract: writing %s failed: the output is incomplete\n", out_path);
        goto done;
    }
    rc = x.n_failed ? 1 : 0;
    goto done;
fail_err:
    fprintf(stderr, "strux extract: %s\n", err.msg);
done:
    sx_gen_free(x.gen);   /* cancels what is live, without events */
    sx_backend_close(eng);
    sx_engine_free(cpu);
    sx_model_free(model);
    if (x.out && !to_stdout && fclose(x.out) && !rc) {
        perror("strux extract: closing the output");
        rc = 1;
    }
    for (size_t i = 0; i < x.n_schemas; i++) {
        json_decref(x.schemas[i].schema);
        sx_gr_free(x.schemas[i].grammar);
        sx_val_free(x.schemas[i].validator);
    }
    sx_vocab_free(vocab);
    sx_tok_free(tok);
    for (size_t i = 0; i < x.n_done_keys; i++)
        free(x.done_keys[i]);
    free(x.done_keys);
    for (size_t i = 0; x.held && i < x.total; i++)
        free(x.held[i]);
    free(x.held);
    free(x.ready);
    sx_bytes_free(&x.failures);
    ex_rows_free(&x.rows);
    free(files);
    return rc;
}
