/* The mask fast paths against the reference walk (gr_fill_mask_reference)
 * over MaskBench schemas, the real Qwen3 vocabulary: for every Nth schema
 * file given (sorted as given) that compiles, every test instance, written
 * as Python's json.dumps writes it and tokenized, has the full token mask
 * computed before each of its tokens both ways (sx_matcher_fill_mask, the
 * product's, and the reference's joint walk of the whole trie); the two
 * must be equal bit for bit.  The instance's token is then accepted while
 * the mask allows it, as strux maskbench does.  This is the "fast-vs-
 * reference check" whose counts docs/BENCHMARKS.md publishes;
 * tests/unit/test_mask_fastpaths.c runs a small sample of it in CI.
 *
 * Prints one line per mismatch (file, instance, token position, number of
 * tokens on which the masks differ) and a closing JSON line:
 *   {"bench":"mask_ref","every":N,"files":..,"compiled":..,"instances":..,
 *    "untokenizable":..,"masks":..,"mismatches":..,"mismatch_schemas":..,
 *    "fast_s":..,"reference_s":..}
 * Exit 0 when no mask differs, 1 when one does, 2 on bad arguments.
 *
 * usage: bench_mask_ref [--every N] [--offset K] [--max-tokens N]
 *                       [--tokenizer FILE] FILE...
 * e.g.   build/bench_mask_ref --every 20 ../shared/maskbench/[every .json file] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sx_error.h"
#include "common/sx_pyjson.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/match/match.h"
#include "grammar/grammar.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct tally {
    long files, compiled, instances, untokenizable, masks, mismatches, mismatch_schemas;
    double fast_s, ref_s;
} tally;

/* One schema file: every instance, every token position (up to max_tokens
 * per instance when > 0).  Adds to t; returns the mismatches found. */
static long run_file(const char *path, const sx_tokenizer *tok, const sx_vocab *v, long max_tokens,
                     uint32_t *mask, uint32_t *ref, tally *t)
{
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    sx_grammar *g = NULL;
    sx_matcher *m = NULL;
    sx_error err;
    sx_gr_opts o;
    long bad = 0;
    sx_gr_opts_default(&o);
    t->files++;
    if (!doc || sx_gr_compile_json(v, json_object_get(doc, "schema"), &o, &g, &err) ||
        sx_matcher_new(g, &m, &err))
        goto done; /* declined: nothing to compare */
    t->compiled++;
    size_t ti;
    json_t *tc;
    json_array_foreach(json_object_get(doc, "tests"), ti, tc) {
        size_t len;
        char *text = sx_pyjson_dumps(json_object_get(tc, "data"), &len);
        sx_ids ids = {0};
        t->instances++;
        if (!text || sx_tok_encode(tok, text, len, 0, &ids, &err)) {
            t->untokenizable++;
            free(text);
            sx_ids_free(&ids);
            continue;
        }
        sx_matcher_reset(m);
        for (size_t k = 0; k <= ids.n && (max_tokens <= 0 || (long)k < max_tokens); k++) {
            double a = now();
            int rc = sx_matcher_fill_mask(m, mask);
            double b = now();
            int rr = gr_fill_mask_reference(m, ref);
            t->ref_s += now() - b;
            t->fast_s += b - a;
            t->masks++;
            if (rc || rr || memcmp(mask, ref, (size_t)v->mask_words * sizeof *ref)) {
                long diff = 0;
                for (int w = 0; w < v->mask_words; w++)
                    diff += __builtin_popcount(mask[w] ^ ref[w]);
                printf("MISMATCH %s instance %zu token %zu: %ld tokens differ (fill %d, "
                       "reference %d)\n", path, ti, k, diff, rc, rr);
                bad++;
                break; /* the states part here: later masks would repeat it */
            }
            int32_t want = k < ids.n ? ids.v[k] : v->eos[0];
            if (k == ids.n || !(ref[want >> 5] >> (want & 31) & 1) ||
                sx_matcher_accept(m, want, NULL))
                break;
        }
        free(text);
        sx_ids_free(&ids);
    }
done:
    t->mismatches += bad;
    t->mismatch_schemas += bad > 0;
    sx_matcher_free(m);
    sx_gr_free(g);
    json_decref(doc);
    return bad;
}

int main(int argc, char **argv)
{
    long every = 1, offset = 0, max_tokens = 0;
    const char *tok_path = NULL;
    int first = argc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--every") && i + 1 < argc) {
            every = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--offset") && i + 1 < argc) {
            offset = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--max-tokens") && i + 1 < argc) {
            max_tokens = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) {
            tok_path = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "bench_mask_ref: unknown option %s\n", argv[i]);
            return 2;
        } else {
            first = i;
            break;
        }
    }
    if (first >= argc || every < 1 || offset < 0) {
        fprintf(stderr, "usage: bench_mask_ref [--every N] [--offset K] [--max-tokens N] "
                        "[--tokenizer FILE] FILE...\n");
        return 2;
    }
    char def[1024];
    if (!tok_path) {
        const char *s = getenv("STRUX_SHARED");
        snprintf(def, sizeof def, "%s/qwen3-tokenizer/tokenizer.json", s && *s ? s : "../shared");
        tok_path = def;
    }
    sx_tokenizer *tok = NULL;
    sx_vocab *v = NULL;
    sx_error err;
    if (sx_tok_load(tok_path, &tok, &err)) {
        fprintf(stderr, "bench_mask_ref: %s\n", err.msg);
        return 1;
    }
    /* the model's 151,936 rows, as the product's vocabulary has them */
    if (sx_tok_vocab_size(tok) == 151669 && sx_tok_n_rows(tok) < 151936)
        sx_tok_set_n_rows(tok, 151936);
    if (sx_tok_make_vocab(tok, &v, &err)) {
        fprintf(stderr, "bench_mask_ref: %s\n", err.msg);
        sx_tok_free(tok);
        return 1;
    }
    uint32_t *mask = malloc((size_t)v->mask_words * sizeof *mask);
    uint32_t *ref = malloc((size_t)v->mask_words * sizeof *ref);
    if (!mask || !ref) {
        fprintf(stderr, "bench_mask_ref: out of memory\n");
        return 1;
    }
    tally t = {0};
    for (int i = first + (int)offset; i < argc; i += (int)every)
        run_file(argv[i], tok, v, max_tokens, mask, ref, &t);
    printf("{\"bench\":\"mask_ref\",\"every\":%ld,\"offset\":%ld,\"files\":%ld,\"compiled\":%ld,"
           "\"instances\":%ld,\"untokenizable\":%ld,\"masks\":%ld,\"mismatches\":%ld,"
           "\"mismatch_schemas\":%ld,\"fast_s\":%.2f,\"reference_s\":%.2f}\n",
           every, offset, t.files, t.compiled, t.instances, t.untokenizable, t.masks,
           t.mismatches, t.mismatch_schemas, t.fast_s, t.ref_s);
    free(mask);
    free(ref);
    sx_vocab_free(v);
    sx_tok_free(tok);
    return t.mismatches ? 1 : 0;
}
