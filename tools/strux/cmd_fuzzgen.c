/* strux fuzzgen: the soundness harness (grammar/fuzzgen) over schema files.
 *
 * A schema file may be a plain JSON Schema, a MaskBench record (an object
 * with "schema" and "tests") or a JSON Schema Test Suite file (an array of
 * groups, each with a "schema"); every schema in it is run.  Schemas that
 * strux declines (compile error) are counted and skipped. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "grammar/fuzzgen/fuzzgen.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/tool_common.h"

typedef struct run_ctx {
    FILE       *out;
    const char *label;
    int         mode;
    int         show;
    long        shown;
    long        failures;
} run_ctx;

static int on_doc(void *vctx, uint64_t index, const char *doc, size_t len, const sx_fg_doc *info)
{
    run_ctx *c = vctx;
    int mode = c->mode == SX_FG_MIXED ? (int)(index % SX_FG_MIXED) : c->mode;
    if (info->verdict != SX_FG_VALID) {
        c->failures++;
        if (c->shown < c->show) {
            c->shown++;
            fprintf(stderr, "fuzzgen: %s document %llu (%s, %d tokens%s) %s: %s\n  %.*s\n",
                    c->label, (unsigned long long)index, sx_fg_mode_name(mode), info->tokens,
                    info->closed ? ", closed by the shortest completion" : "",
                    sx_fg_verdict_name(info->verdict), info->why, (int)(len > 2000 ? 2000 : len),
                    doc);
        }
    }
    if (c->out) {
        json_t *line = json_pack("{s:s, s:I, s:s, s:s, s:b}", "schema", c->label, "index",
                                 (json_int_t)index, "mode", sx_fg_mode_name(mode), "verdict",
                                 sx_fg_verdict_name(info->verdict), "closed", info->closed);
        json_t *d = line ? json_stringn(doc, len) : NULL;
        if (d)
            json_object_set_new(line, "doc", d);
        else if (line)
            json_object_set_new(line, "doc_invalid_utf8", json_true());
        if (line) {
            json_dumpf(line, c->out, JSON_COMPACT | JSON_ENSURE_ASCII);
            fputc('\n', c->out);
        }
        json_decref(line);
    }
    return 0;
}

typedef struct totals {
    long        schemas, declined, unreadable, harness_errors, failures;
    sx_fg_stats st;
} totals;

static int run_one(const sx_vocab *v, const json_t *schema, const char *label, const sx_gr_opts *go,
                   int draft7, const sx_fg_opts *fo, long count, double tlimit, run_ctx *rc0,
                   totals *tot)
{
    sx_error err;
    sx_err_clear(&err);
    sx_grammar *g = NULL;
    sx_validator *val = NULL;
    sx_val_opts vo = {0};
    vo.dialect = draft7 ? SX_VAL_DRAFT7 : SX_VAL_DIALECT_DEFAULT;
    tot->schemas++;
    if (sx_gr_compile_json(v, schema, go, &g, &err) || sx_val_compile(schema, &vo, &val, &err)) {
        tot->declined++;
        sx_gr_free(g);
        return 0;
    }
    run_ctx c = *rc0;
    c.label = label;
    c.failures = 0;
    sx_fg_stats st = {0};
    int rc = sx_fg_run(g, v, val, fo, count, tlimit, on_doc, &c, &st, &err);
    if (rc) {
        /* the matcher refused a token its mask allowed, or memory ran out:
         * a failure of this schema; the others still run */
        fprintf(stderr, "fuzzgen: %s: %s\n", label, err.msg);
        tot->harness_errors++;
        rc = 0;
    }
    if (c.failures)
        printf("%s: %ld of %ld documents refused\n", label, c.failures, st.docs);
    rc0->shown = c.shown;
    tot->failures += c.failures;
    tot->st.docs += st.docs;
    tot->st.closed += st.closed;
    tot->st.tokens += st.tokens;
    tot->st.seconds += st.seconds;
    for (int i = 0; i <= SX_FG_NO_VERDICT; i++)
        tot->st.by_verdict[i] += st.by_verdict[i];
    sx_gr_free(g);
    sx_val_free(val);
    return rc;
}

/* Runs every schema the file holds. */
static int run_file(const sx_vocab *v, const char *path, const sx_gr_opts *go, int draft7,
                    const sx_fg_opts *fo, long count, double tlimit, run_ctx *c, totals *tot)
{
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!doc && strstr(je.text, "too big"))
        /* bounds past int64 (MaskBench has 2^63 written out): as reals */
        doc = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &je);
    if (!doc) {
        fprintf(stderr, "strux fuzzgen: %s: line %d: %s\n", path, je.line, je.text);
        tot->unreadable++;
        return 0;
    }
    int rc = 0;
    char label[1024];
    if (json_is_array(doc)) {
        size_t i;
        json_t *grp;
        json_array_foreach(doc, i, grp) {
            json_t *s = json_object_get(grp, "schema");
            if (!s)
                continue;
            snprintf(label, sizeof label, "%s#%zu", path, i);
            if ((rc = run_one(v, s, label, go, draft7, fo, count, tlimit, c, tot)))
                break;
        }
    } else {
        json_t *s = json_is_object(doc) && json_object_get(doc, "tests") &&
                            json_object_get(doc, "schema")
                        ? json_object_get(doc, "schema")
                        : doc;
        rc = run_one(v, s, path, go, draft7, fo, count, tlimit, c, tot);
    }
    json_decref(doc);
    return rc;
}

/* --mode M (dst: sx_fg_opts) */
static int parse_mode(void *dst, const char *val, char *why, size_t cap)
{
    if ((((sx_fg_opts *)dst)->mode = sx_fg_mode_parse(val)) >= 0)
        return 0;
    snprintf(why, cap, "is not a mode (uniform, long, deep, wide, edge or mixed)");
    return -1;
}

/* --shard K/N (dst: long[2]) */
static int parse_shard(void *dst, const char *val, char *why, size_t cap)
{
    long *kn = dst;
    char tail;
    if (sscanf(val, "%ld/%ld%c", &kn[0], &kn[1], &tail) == 2 && kn[1] >= 1 && kn[0] >= 0 &&
        kn[0] < kn[1])
        return 0;
    snprintf(why, cap, "is not K/N with 0 <= K < N");
    return -1;
}

int cmd_fuzzgen(int argc, char **argv)
{
    const char *tok_path = NULL, *list = NULL, *out_path = NULL;
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    cli_list schemas = {.v = files, .cap = argc};
    int n_files = 0, draft7 = 0, rc = 2;
    long count = 1000, show = 5, shard[2] = {0, 1};
    double tlimit = 0;
    unsigned long long seed = 1;
    sx_fg_opts fo;
    sx_fg_opts_default(&fo);
    sx_gr_opts go;
    sx_gr_opts_default(&go);
    if (!files)
        return 1;
    seed = fo.seed;
    cli_opt opts[] = {
        {.name = "--schema", .kind = CLI_LIST, .dst = &schemas, .arg = "FILE",
         .help = "a schema, a MaskBench record or a JSON Schema Test Suite file\n"
                 "(every group's schema); repeatable"},
        {.name = "--schemas", .kind = CLI_STR, .dst = &list, .arg = "LIST",
         .help = "a file naming schema files, one per line"},
        {.name = "--count", .kind = CLI_LONG, .dst = &count, .lo = 1, .hi = 1000000000L,
         .arg = "N", .help = "documents per schema (default 1000)"},
        {.name = "--mode", .kind = CLI_FN, .dst = &fo, .fn = parse_mode, .arg = "M",
         .help = "uniform | long | deep | wide | edge | mixed (default mixed:\n"
                 "document i takes the i-th mode in turn)"},
        {.name = "--max-tokens", .kind = CLI_INT, .dst = &fo.max_tokens, .lo = 0, .hi = 1000000,
         .arg = "N", .help = "token budget per document (default 64); at the budget the\n"
                             "grammar's shortest completion closes the document"},
        {.name = "--seed", .kind = CLI_U64, .dst = &seed, .arg = "N",
         .help = "(default 1); document i depends only on seed and i"},
        CLI_GRAMMAR_OPTS(&go),
        {.name = "--time-limit", .kind = CLI_DOUBLE, .dst = &tlimit, .dlo = 0, .dhi = 1e9,
         .arg = "S", .help = "stop a schema's documents after S seconds (default none)"},
        {.name = "--threads", .kind = CLI_INT, .dst = &fo.threads, .lo = 1, .hi = 64, .arg = "N",
         .help = "sample each schema's documents on N threads (default 1)"},
        {.name = "--shard", .kind = CLI_FN, .dst = shard, .fn = parse_shard, .arg = "K/N",
         .help = "only the schemas whose position in the list is K modulo N"},
        {.name = "--out", .kind = CLI_STR, .dst = &out_path, .arg = "FILE",
         .help = "every document as a JSON line {\"schema\",\"index\",\"mode\",\n"
                 "\"verdict\",\"doc\"} (for tools/oracle_jsonschema.py)"},
        {.name = "--show", .kind = CLI_LONG, .dst = &show, .lo = 0, .hi = 1000000, .arg = "N",
         .help = "print the first N refused documents (default 5)"},
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &tok_path, .arg = "PATH",
         .help = "tokenizer.json (default: ../shared/qwen3-tokenizer)"},
    };
    cli_spec spec = {
        .cmd = "fuzzgen", .usage = "(--schema FILE ... | --schemas LIST) [options]",
        .about = "Samples documents from each schema's grammar with a random stand-in for the model\n"
                 "(no weights) and checks every one with strux's independent validator.  A document\n"
                 "the validator refuses is a soundness bug: the exit status is then 1.\n"
                 "--draft7 reads schemas without $schema as draft-07 (grammar and validator).\n",
        .after = "Prints a line per schema with failures, and a summary line:\n"
                 "  fuzzgen: S schemas (D declined), N documents: V valid, I invalid, ... in T s "
                 "(R docs/s)\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc) {
        rc = prc == CLI_EXIT_HELP ? 0 : 2;
        goto done;
    }
    n_files = schemas.n;
    draft7 = go.draft7;
    fo.seed = seed;
    long shard_k = shard[0], shard_n = shard[1];
    if (!n_files && !list) {
        rc = cli_usage_error(&spec, "needs --schema FILE or --schemas LIST");
        goto done;
    }
    rc = 1;
    char *list_text = NULL;
    size_t list_len = 0;
    sx_error err;
    if (list && sx_file_read(list, &list_text, &list_len, &err)) {
        fprintf(stderr, "strux fuzzgen: %s\n", err.msg);
        goto done;
    }
    sx_tokenizer *tok = NULL;
    sx_vocab *v = NULL;
    FILE *out = NULL;
    if (tool_load("fuzzgen", tok_path, NULL, &tok, &v)) {
        free(list_text);
        goto done;
    }
    if (out_path && !(out = fopen(out_path, "w"))) {
        perror(out_path);
        goto cleanup;
    }
    run_ctx c = {.out = out, .mode = fo.mode, .show = (int)show};
    totals tot = {0};
    long pos = 0;
    int failed = 0;
    for (int i = 0; i < n_files && !failed; i++, pos++)
        if (pos % shard_n == shard_k)
            failed = run_file(v, files[i], &go, draft7, &fo, count, tlimit, &c, &tot);
    for (char *line = list_text, *next; line && *line && !failed; line = next, pos++) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        if (!*line || pos % shard_n != shard_k)
            continue;
        failed = run_file(v, line, &go, draft7, &fo, count, tlimit, &c, &tot);
    }
    const sx_fg_stats *s = &tot.st;
    printf("fuzzgen: %ld schemas (%ld declined), %ld documents: %ld valid, %ld invalid, "
           "%ld not-json, %ld stuck, %ld no-completion, %ld no-verdict; %ld closed by the "
           "shortest completion, %ld tokens, in %.1f s (%.0f docs/s)\n",
           tot.schemas, tot.declined, s->docs, s->by_verdict[SX_FG_VALID],
           s->by_verdict[SX_FG_INVALID], s->by_verdict[SX_FG_NOT_JSON],
           s->by_verdict[SX_FG_STUCK], s->by_verdict[SX_FG_NO_COMPLETION],
           s->by_verdict[SX_FG_NO_VERDICT], s->closed, s->tokens, s->seconds,
           s->seconds > 0 ? (double)s->docs / s->seconds : 0.0);
    if (tot.unreadable)
        printf("fuzzgen: %ld schema files could not be read\n", tot.unreadable);
    if (tot.harness_errors)
        printf("fuzzgen: %ld schemas stopped by a matcher error (see above)\n", tot.harness_errors);
    rc = failed || tot.failures || tot.unreadable || tot.harness_errors ? 1 : 0;
cleanup:
    if (out && fclose(out)) {
        perror(out_path);
        rc = 1;
    }
    free(list_text);
    sx_vocab_free(v);
    sx_tok_free(tok);
done:
    free(files);
    return rc;
}
