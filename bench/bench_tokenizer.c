/* Tokenizer encode throughput, one thread, on the texts of
 * tests/fixtures/tokenizer_cases.jsonl -- the same inputs and protocol as
 * bench/peers/tokenizer_peer.py (Hugging Face `tokenizers`): added tokens
 * recognised (SX_TOK_SPECIAL), one call per text, one warm-up pass, then
 * --runs timed passes.  Prints one JSON line:
 *   {"bench":"tokenizer_encode","mb_per_s_median":..,"runs":[..],"bytes":..,
 *    "texts":..,"tokens":..,"threads":1,"plain_mb_per_s_median":..,"load_ms":..}
 * (plain_...: the same without added tokens, as documents are tokenized;
 * load_ms: one sx_tok_load of tokenizer.json.)
 * MB/s is UTF-8 input bytes / 1e6 / wall seconds.
 *
 * usage: bench_tokenizer [--cases FILE] [--tokenizer FILE] [--runs N] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sx_error.h"
#include "engine/tokenizer/tokenizer.h"

typedef struct text {
    char *s;
    size_t n;
} text;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int read_texts(const char *path, text **out, size_t *n, size_t *bytes)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0, cnt = 0, alloc = 0;
    ssize_t len;
    text *v = NULL;
    if (!f) {
        fprintf(stderr, "bench_tokenizer: cannot open %s\n", path);
        return 1;
    }
    *bytes = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        json_error_t je;
        json_t *o = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &je);
        json_t *t = json_object_get(o, "text");
        if (!json_is_string(t)) {
            fprintf(stderr, "bench_tokenizer: %s line %zu: no text\n", path, cnt + 1);
            json_decref(o);
            continue;
        }
        if (cnt == alloc) {
            alloc = alloc ? alloc * 2 : 1024;
            v = realloc(v, alloc * sizeof *v);
        }
        v[cnt].n = json_string_length(t);
        v[cnt].s = malloc(v[cnt].n + 1);
        memcpy(v[cnt].s, json_string_value(t), v[cnt].n + 1);
        *bytes += v[cnt].n;
        cnt++;
        json_decref(o);
    }
    free(line);
    fclose(f);
    *out = v;
    *n = cnt;
    return cnt ? 0 : 1;
}

/* One pass over every text; returns seconds, or -1 on an encode error. */
static double pass(const sx_tokenizer *tok, const text *t, size_t n, unsigned flags, size_t *tokens)
{
    sx_ids ids = {0};
    sx_error err;
    double t0 = now();
    *tokens = 0;
    for (size_t i = 0; i < n; i++) {
        ids.n = 0;
        if (sx_tok_encode(tok, t[i].s, t[i].n, flags, &ids, &err)) {
            fprintf(stderr, "bench_tokenizer: text %zu: %s\n", i, err.msg);
            sx_ids_free(&ids);
            return -1;
        }
        *tokens += ids.n;
    }
    double dt = now() - t0;
    sx_ids_free(&ids);
    return dt;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    const char *cases = "tests/fixtures/tokenizer_cases.jsonl", *tpath = NULL;
    char path[4096];
    int runs = 5, rc = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cases") && i + 1 < argc)
            cases = argv[++i];
        else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc)
            tpath = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_tokenizer [--cases FILE] [--tokenizer FILE] [--runs N]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 100)
        runs = 5;
    sx_error err;
    sx_tokenizer *tok = NULL;
    text *t = NULL;
    size_t n = 0, bytes = 0, tokens = 0, tokens2 = 0;
    double mbs[100], plain[100];
    if (sx_tok_resolve_path(tpath, NULL, NULL, path, sizeof path, &err)) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        return 1;
    }
    double t0 = now();
    if (sx_tok_load(path, &tok, &err)) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        return 1;
    }
    double load_ms = (now() - t0) * 1e3;
    if (read_texts(cases, &t, &n, &bytes))
        goto done;
    if (pass(tok, t, n, SX_TOK_SPECIAL, &tokens) < 0) /* warm-up */
        goto done;
    for (int r = 0; r < runs; r++) {
        double s = pass(tok, t, n, SX_TOK_SPECIAL, &tokens2);
        if (s < 0)
            goto done;
        mbs[r] = (double)bytes / 1e6 / s;
    }
    for (int r = 0; r < runs; r++) {
        double s = pass(tok, t, n, 0, &tokens2);
        if (s < 0)
            goto done;
        plain[r] = (double)bytes / 1e6 / s;
    }
    double sorted[100], sorted_plain[100];
    memcpy(sorted, mbs, sizeof mbs);
    memcpy(sorted_plain, plain, sizeof plain);
    printf("{\"bench\":\"tokenizer_encode\",\"mb_per_s_median\":%.3f,\"runs\":[",
           median(sorted, runs));
    for (int r = 0; r < runs; r++)
        printf("%s%.3f", r ? "," : "", mbs[r]);
    printf("],\"bytes\":%zu,\"texts\":%zu,\"tokens\":%zu,\"threads\":1,"
           "\"plain_mb_per_s_median\":%.3f,\"load_ms\":%.1f}\n",
           bytes, n, tokens, median(sorted_plain, runs), load_ms);
    rc = 0;
done:
    for (size_t i = 0; i < n; i++)
        free(t[i].s);
    free(t);
    sx_tok_free(tok);
    return rc;
}
