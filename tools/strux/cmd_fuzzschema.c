/* strux fuzzschema: the schema fuzzer (grammar/fuzzgen/schemagen.h).
 *
 * Random schemas from the keywords strux supports, each compiled under a
 * time budget and sampled with fuzzgen's documents, judged by strux's
 * validator.  A failure is a compile slower than --compile-ms, a first
 * mask or a mean mask of a document slower than --mask-ms, a matcher
 * error, or a document that is not valid (or that the validator cannot
 * decide); each is written to --out-dir as a schema file, to be kept as a
 * regression case under tests/fixtures/schemagen/ once fixed.  Schemas
 * that strux declines (a compile error naming a keyword) are counted, not
 * failures.  --fixtures DIR runs every *.json there first. */
#include <glob.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/fuzzgen/fuzzgen.h"
#include "grammar/fuzzgen/schemagen.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/tool_common.h"

typedef struct fz {
    const sx_vocab *v;
    double compile_ms, mask_ms;
    int docs, verbose;
    const char *out_dir;
    long schemas, declined, compiled, documents, failures;
    double worst_compile, worst_mask;
} fz;

static void keep(fz *z, const json_t *schema, const char *label, const char *why)
{
    z->failures++;
    char *text = json_dumps(schema, JSON_COMPACT | JSON_SORT_KEYS);
    fprintf(stderr, "fuzzschema: FAIL %s: %s\n  %s\n", label, why, text ? text : "?");
    if (z->out_dir && text) {
        char path[1024];
        snprintf(path, sizeof path, "%s/fail-%s.json", z->out_dir, label);
        for (char *p = path + strlen(z->out_dir) + 1; *p; p++)
            if (*p == '/' || *p == ' ')
                *p = '_';
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%s\n", text);
            fclose(f);
        }
    }
    free(text);
}

/* Compiles, masks and samples one schema; failures are counted in z. */
static void run_schema(fz *z, const json_t *schema, const char *label, uint64_t seed)
{
    char why[700];
    sx_error err;
    sx_err_clear(&err);
    sx_grammar *g = NULL;
    sx_validator *val = NULL;
    sx_matcher *m = NULL;
    uint32_t *mask = NULL;
    sx_gr_opts go;
    sx_gr_opts_default(&go);
    /* the fuzzer itself never hangs: a compile past 5x its budget stops */
    go.deadline_ms = tool_now_us() / 1e3 + 5 * z->compile_ms;
    z->schemas++;
    double t0 = tool_now_us();
    int rc = sx_gr_compile_json(z->v, schema, &go, &g, &err);
    double t = (tool_now_us() - t0) / 1e3;
    if (t > z->worst_compile)
        z->worst_compile = t;
    if (t > z->compile_ms) {
        snprintf(why, sizeof why, "compile took %.0f ms (%s)", t, rc ? err.msg : "ok");
        keep(z, schema, label, why);
        goto out;
    }
    if (rc) {
        z->declined++;
        if (z->verbose)
            printf("%s: declined: %s\n", label, err.msg);
        goto out;
    }
    sx_val_opts vo = {0};
    if (sx_val_compile(schema, &vo, &val, &err)) {
        z->declined++;
        goto out;
    }
    z->compiled++;
    mask = calloc((size_t)z->v->mask_words, sizeof *mask);
    if (!mask || sx_matcher_new(g, &m, &err)) {
        keep(z, schema, label, "out of memory");
        goto out;
    }
    /* the compile's deadline stays with the grammar (grammar.h): the
     * documents are timed by the mask budget instead */
    sx_matcher_set_bounds(m, 0, NULL);
    t0 = tool_now_us();
    sx_matcher_fill_mask(m, mask);
    t = (tool_now_us() - t0) / 1e3;
    if (t > z->worst_mask)
        z->worst_mask = t;
    if (t > z->mask_ms) {
        snprintf(why, sizeof why, "first mask took %.1f ms", t);
        keep(z, schema, label, why);
        goto out;
    }
    sx_fg_opts fo;
    sx_fg_opts_default(&fo);
    fo.seed = seed;
    for (int i = 0; i < z->docs; i++) {
        char *doc = NULL;
        size_t len = 0;
        sx_fg_doc info;
        memset(&info, 0, sizeof info);
        t0 = tool_now_us();
        rc = sx_fg_sample(m, z->v, val, &fo, (uint64_t)i, &doc, &len, &info, &err);
        /* the mean of the document's masks (a mask per token, and the
         * completion search when it closed the document) */
        t = (tool_now_us() - t0) / 1e3 / (info.tokens + 1);
        z->documents++;
        if (t > z->worst_mask)
            z->worst_mask = t;
        if (rc)
            snprintf(why, sizeof why, "document %d: matcher error: %s", i, err.msg);
        else if (info.verdict != SX_FG_VALID)
            snprintf(why, sizeof why, "document %d %s: %s: %.300s", i,
                     sx_fg_verdict_name(info.verdict), info.why, doc ? doc : "");
        else if (t > z->mask_ms)
            snprintf(why, sizeof why, "document %d: masks took %.1f ms each", i, t);
        free(doc);
        if (rc || info.verdict != SX_FG_VALID || t > z->mask_ms) {
            keep(z, schema, label, why);
            break;
        }
    }
    if (z->verbose)
        printf("%s: ok\n", label);
out:
    free(mask);
    sx_matcher_free(m);
    sx_val_free(val);
    sx_gr_free(g);
}

int cmd_fuzzschema(int argc, char **argv)
{
    const char *tok_path = NULL, *fixtures = NULL;
    unsigned long long seed = 1;
    long count = 1000000;
    double tlimit = 5;
    int size = 3;
    fz z = {.compile_ms = 1000, .mask_ms = 50, .docs = 12};
    cli_opt opts[] = {
        {.name = "--seed", .kind = CLI_U64, .dst = &seed, .arg = "N",
         .help = "run seed (default 1); schema i depends only on seed and i"},
        {.name = "--count", .kind = CLI_LONG, .dst = &count, .lo = 0, .hi = 1000000000L,
         .arg = "N", .help = "schemas (default 1000000: until --time-limit)"},
        {.name = "--time-limit", .kind = CLI_DOUBLE, .dst = &tlimit, .dlo = 0, .dhi = 1e9,
         .arg = "S", .help = "stop making schemas after S seconds (default 5)"},
        {.name = "--docs", .kind = CLI_INT, .dst = &z.docs, .lo = 0, .hi = 100000, .arg = "N",
         .help = "documents per schema (default 12)"},
        {.name = "--size", .kind = CLI_INT, .dst = &size, .lo = 1, .hi = 8, .arg = "N",
         .help = "schema size 1..8 (default 3)"},
        {.name = "--compile-ms", .kind = CLI_DOUBLE, .dst = &z.compile_ms, .dlo = 1e-3,
         .dhi = 1e9, .arg = "N", .help = "a slower compile is a failure (default 1000)"},
        {.name = "--mask-ms", .kind = CLI_DOUBLE, .dst = &z.mask_ms, .dlo = 1e-3, .dhi = 1e9,
         .arg = "N", .help = "a slower first mask or mean mask is a failure (default 50)"},
        {.name = "--fixtures", .kind = CLI_STR, .dst = &fixtures, .arg = "DIR",
         .help = "run every DIR/*.json (regression cases) first"},
        {.name = "--out-dir", .kind = CLI_STR, .dst = &z.out_dir, .arg = "DIR",
         .help = "write each failing schema there as fail-SEED-I.json"},
        {.name = "--verbose", .kind = CLI_FLAG, .dst = &z.verbose, .help = "a line per schema"},
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &tok_path, .arg = "PATH",
         .help = "tokenizer.json (default: ../shared/qwen3-tokenizer)"},
    };
    cli_spec spec = {
        .cmd = "fuzzschema", .usage = "[options]",
        .about = "Makes random schemas (recursion through $ref, oneOf/anyOf/allOf/not, optional-only\n"
                 "objects, patternProperties, patterns, formats, uniqueItems, contains, if/then/else,\n"
                 "dependent*, numbers with bounds and multipleOf), compiles each and samples\n"
                 "documents from its masks; every document must validate.  Exit status 1 on any\n"
                 "failure (slow compile or mask, refused document, matcher error).\n",
        .after = "Summary line:\n"
                 "  fuzzschema: S schemas (D declined, C compiled), N documents, F failures; slowest\n"
                 "  compile X ms, slowest mask Y ms, in T s\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = 0,
    };
    int prc = cli_parse(&spec, argc, argv, NULL, NULL);
    if (prc)
        return prc == CLI_EXIT_HELP ? 0 : 2;
    sx_tokenizer *tok = NULL;
    sx_vocab *v = NULL;
    if (tool_load("fuzzschema", tok_path, NULL, &tok, &v))
        return 1;
    z.v = v;
    int rc = 0;
    double start = tool_now_us();
    if (fixtures) {
        char pat[1024];
        glob_t gl;
        snprintf(pat, sizeof pat, "%s/*.json", fixtures);
        if (glob(pat, 0, NULL, &gl) == 0) {
            for (size_t i = 0; i < gl.gl_pathc; i++) {
                json_error_t je;
                json_t *s = json_load_file(gl.gl_pathv[i], 0, &je);
                if (!s) {
                    fprintf(stderr, "strux fuzzschema: %s: %s\n", gl.gl_pathv[i], je.text);
                    rc = 1;
                    continue;
                }
                const char *base = strrchr(gl.gl_pathv[i], '/');
                run_schema(&z, s, base ? base + 1 : gl.gl_pathv[i], seed);
                json_decref(s);
            }
            globfree(&gl);
        }
    }
    for (long i = 0; i < count; i++) {
        if (tlimit > 0 && (tool_now_us() - start) / 1e6 > tlimit)
            break;
        json_t *s = sx_sg_schema(seed, (uint64_t)i, size);
        if (!s) {
            fprintf(stderr, "strux fuzzschema: out of memory\n");
            rc = 1;
            break;
        }
        char label[64];
        snprintf(label, sizeof label, "%llu-%ld", seed, i);
        run_schema(&z, s, label, seed);
        json_decref(s);
    }
    printf("fuzzschema: %ld schemas (%ld declined, %ld compiled), %ld documents, %ld failures; "
           "slowest compile %.1f ms, slowest mask %.2f ms, in %.1f s\n",
           z.schemas, z.declined, z.compiled, z.documents, z.failures, z.worst_compile,
           z.worst_mask, (tool_now_us() - start) / 1e6);
    sx_vocab_free(v);
    sx_tok_free(tok);
    return rc || z.failures ? 1 : 0;
}
