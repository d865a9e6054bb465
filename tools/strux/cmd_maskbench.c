/* strux maskbench: the MaskBench method over schema files.
 *
 * Each schema runs in its own forked process so that a crash or a timeout
 * is counted, not fatal; --threads runs that many at once.  The child
 * reports one JSON line on a pipe: its outcome and every mask time. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sx_file.h"
#include "common/sx_numjson.h"
#include "common/sx_pyjson.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/grammar.h"
#include "rpc/protocol.h"
#include "tools/strux/cli_opts.h"
#include "tools/strux/commands.h"
#include "tools/strux/tool_common.h"

typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec;

static void dpush(dvec *d, double x)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 1024;
        double *nv = realloc(d->v, cap * sizeof *nv);
        if (!nv)
            return;
        d->v = nv;
        d->cap = cap;
    }
    d->v[d->n++] = x;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const dvec *d, double p)
{
    if (!d->n)
        return 0;
    size_t i = (size_t)(p * (double)(d->n - 1) + 0.5);
    return d->v[i < d->n ? i : d->n - 1];
}

/* ---- the child: one schema file ----------------------------------------- */

static void run_schema(const char *file, const sx_tokenizer *tok, const sx_vocab *v,
                       const sx_gr_opts *o, FILE *out)
{
    json_error_t je;
    /* numbers keep their text: an integer past 64 bits in an instance is
     * tokenized with its digits, as Python's json.dumps writes it */
    sx_numtab nums = {0};
    char *ftext = NULL;
    size_t flen = 0;
    json_t *doc = NULL, *res = json_object();
    dvec tbm = {0};
    sx_grammar *g = NULL;
    sx_matcher *m = NULL;
    uint32_t *mask = malloc((size_t)v->mask_words * sizeof *mask);
    sx_error err;
    sx_err_clear(&err);
    long tokens = 0, valid_rejected = 0, invalid_accepted = 0, ntests = 0;
    long untokenizable = 0, inconsistent = 0;
    const char *status = "passing";
    json_object_set_new(res, "file", json_string(file));
    if (sx_file_read(file, &ftext, &flen, &err)) {
        status = "compile_error";
        json_object_set_new(res, "message", json_sprintf("cannot read: %s", err.msg));
        goto done;
    }
    if (!(doc = sx_numjson_loadb(ftext, flen, 0, &nums, &je))) {
        status = "compile_error";
        json_object_set_new(res, "message", json_sprintf("cannot read: %s", je.text));
        goto done;
    }
    if (sx_rpc_check_schema_numbers(json_object_get(doc, "schema"), &nums, "", &err)) {
        status = "compile_error";
        json_object_set_new(res, "message", json_sprintf("%s at %s", err.msg, err.pointer));
        goto done;
    }
    double t0 = tool_now_us();
    if (sx_gr_compile_json(v, json_object_get(doc, "schema"), o, &g, &err) ||
        sx_matcher_new(g, &m, &err)) {
        status = "compile_error";
        json_object_set_new(res, "message", json_string(err.msg));
        goto done;
    }
    sx_matcher_fill_mask(m, mask);
    json_object_set_new(res, "ttfm_us", json_real(tool_now_us() - t0));
    json_object_set_new(res, "grammar_bytes", json_integer((json_int_t)sx_gr_mem_bytes(g)));
    size_t ti;
    json_t *t;
    json_array_foreach(json_object_get(doc, "tests"), ti, t) {
        size_t len;
        char *text = sx_pyjson_dumps_nums(json_object_get(t, "data"), &nums, &len);
        sx_ids ids = {0};
        int valid = json_is_true(json_object_get(t, "valid")), accepted = 1;
        ntests++;
        if (!text || sx_tok_encode(tok, text, len, 0, &ids, &err)) {
            free(text);
            sx_ids_free(&ids);
            untokenizable++; /* unspellable data: in neither count, but reported */
            continue;
        }
        sx_matcher_reset(m);
        for (size_t k = 0; k <= ids.n; k++) {
            double a = tool_now_us();
            sx_matcher_fill_mask(m, mask);
            dpush(&tbm, tool_now_us() - a);
            int32_t want = k < ids.n ? ids.v[k] : v->eos[0];
            if (!(mask[want >> 5] >> (want & 31) & 1)) {
                accepted = 0;
                break;
            }
            if (k < ids.n && sx_matcher_accept(m, want, NULL)) {
                accepted = 0; /* the mask allowed it: a matcher inconsistency */
                inconsistent++;
                break;
            }
            tokens++;
        }
        if (valid && !accepted)
            valid_rejected++;
        if (!valid && accepted)
            invalid_accepted++;
        free(text);
        sx_ids_free(&ids);
    }
    if (invalid_accepted)
        status = "invalidation_error";
    else if (valid_rejected)
        status = "validation_error";
done:
    json_object_set_new(res, "status", json_string(status));
    json_object_set_new(res, "tests", json_integer(ntests));
    json_object_set_new(res, "tokens", json_integer(tokens));
    json_object_set_new(res, "valid_rejected", json_integer(valid_rejected));
    json_object_set_new(res, "invalid_accepted", json_integer(invalid_accepted));
    json_object_set_new(res, "untokenizable", json_integer(untokenizable));
    json_object_set_new(res, "inconsistent", json_integer(inconsistent));
    json_t *arr = json_array();
    for (size_t i = 0; i < tbm.n; i++)
        json_array_append_new(arr, json_real(tbm.v[i]));
    json_object_set_new(res, "tbm", arr);
    json_dumpf(res, out, JSON_COMPACT);
    fputc('\n', out);
    fflush(out);
    json_decref(res);
    json_decref(doc);
    sx_numtab_free(&nums);
    free(ftext);
    free(tbm.v);
    free(mask);
    sx_matcher_free(m);
    sx_gr_free(g);
}

/* ---- the parent ----------------------------------------------------------- */

typedef struct slot {
    pid_t pid;
    int fd;
    int file;
    double start;
    char *buf;
    size_t n, cap;
} slot;

typedef struct tally {
    long schemas, passing, compile_error, validation_error, invalidation_error, crash, timeout;
    long tokens, instances, untokenizable, inconsistent, inconsistent_schemas;
    dvec ttfm, tbm;
    FILE *out;
} tally;

static void record(tally *t, const char *file, const char *status, json_t *r)
{
    t->schemas++;
    if (!strcmp(status, "passing"))
        t->passing++;
    else if (!strcmp(status, "compile_error"))
        t->compile_error++;
    else if (!strcmp(status, "validation_error"))
        t->validation_error++;
    else if (!strcmp(status, "invalidation_error"))
        t->invalidation_error++;
    else if (!strcmp(status, "crash"))
        t->crash++;
    else
        t->timeout++;
    if (r) {
        t->tokens += (long)json_integer_value(json_object_get(r, "tokens"));
        t->instances += (long)json_integer_value(json_object_get(r, "tests"));
        t->untokenizable += (long)json_integer_value(json_object_get(r, "untokenizable"));
        long inc = (long)json_integer_value(json_object_get(r, "inconsistent"));
        t->inconsistent += inc;
        t->inconsistent_schemas += inc > 0;
        json_t *tt = json_object_get(r, "ttfm_us");
        if (tt)
            dpush(&t->ttfm, json_real_value(tt));
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(r, "tbm"), i, x)
            dpush(&t->tbm, json_real_value(x));
    }
    if (t->out) {
        json_t *line = r ? json_deep_copy(r) : json_object();
        double mx = 0, sum = 0;
        size_t i, n = 0;
        json_t *x;
        json_array_foreach(json_object_get(line, "tbm"), i, x) {
            double d = json_real_value(x);
            sum += d;
            n++;
            if (d > mx)
                mx = d;
        }
        if (n) {
            json_object_set_new(line, "tbm_avg_us", json_real(sum / (double)n));
            json_object_set_new(line, "tbm_max_us", json_real(mx));
        }
        json_object_del(line, "tbm");
        json_object_set_new(line, "file", json_string(file));
        json_object_set_new(line, "status", json_string(status));
        json_dumpf(line, t->out, JSON_COMPACT);
        fputc('\n', t->out);
        json_decref(line);
    }
}

static void finish_slot(tally *t, slot *s, const char **files, int timed_out)
{
    int st = 0;
    if (timed_out)
        kill(s->pid, SIGKILL);
    waitpid(s->pid, &st, 0);
    close(s->fd);
    json_t *r = NULL;
    const char *status;
    if (timed_out) {
        status = "timeout";
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !s->n) {
        status = "crash";
    } else {
        r = json_loadb(s->buf, s->n, 0, NULL);
        status = r ? json_string_value(json_object_get(r, "status")) : "crash";
        if (!status)
            status = "crash";
    }
    record(t, files[s->file], status, r);
    json_decref(r);
    free(s->buf);
    memset(s, 0, sizeof *s);
    s->pid = -1;
}

int cmd_maskbench(int argc, char **argv)
{
    int threads = 1, quiet = 0;
    long timeout_ms = 60000;
    const char *out_path = NULL, *tok_path = NULL;
    sx_gr_opts o;
    sx_gr_opts_default(&o);
    cli_opt opts[] = {
        {.name = "--threads", .kind = CLI_INT, .dst = &threads, .lo = 1, .hi = 256, .arg = "N",
         .help = "schemas run in parallel, each in its own process (default 1)"},
        {.name = "--timeout-ms", .kind = CLI_LONG, .dst = &timeout_ms, .lo = 1, .hi = 86400000L,
         .arg = "N", .help = "per schema, compile and all instances (default 60000)"},
        {.name = "--out", .kind = CLI_STR, .dst = &out_path, .arg = "FILE",
         .help = "one JSON line per schema with its outcome"},
        CLI_GRAMMAR_OPTS(&o),
        {.name = "--tokenizer", .kind = CLI_STR, .dst = &tok_path, .arg = "PATH",
         .help = "tokenizer.json (default: from ../shared)"},
        {.name = "--quiet", .kind = CLI_FLAG, .dst = &quiet, .help = "no progress on stderr"},
    };
    cli_spec spec = {
        .cmd = "maskbench", .usage = "[options] FILE...",
        .about = "Runs MaskBench schema files the published way: compile each schema (time to\n"
                    "first mask, TTFM = compile + first mask), then for every test instance, its\n"
                    "data written as Python's json.dumps(ensure_ascii=False) and tokenized with the\n"
                    "Qwen3 tokenizer, compute the full token mask before every token (time between\n"
                    "masks, TBM), check the token is allowed and accept it; at the end the\n"
                    "end-of-turn token must be allowed.  A schema passes when every valid instance\n"
                    "is accepted and every invalid one rejected; accepting an invalid instance is an\n"
                    "invalidation error (unsound), rejecting a valid one a validation error.\n"
                    "An instance the tokenizer cannot encode is left out of both and counted as\n"
                    "untokenizable; a token the mask allowed but the matcher then refused is a\n"
                    "matcher inconsistency (a bug, whichever way the instance was meant to go).\n"
                    "Both are counted in the summary and per schema.\n",
        .after = "The last line on stdout is the summary: {\"schemas\",\"passing\",\"compile_error\",\n"
                    "\"validation_error\",\"invalidation_error\",\"crash\",\"timeout\",\"tokens\",\n"
                    "\"instances\",\"untokenizable\",\"inconsistent\",\"inconsistent_schemas\",\n"
                    "\"ttfm_us\":{p50,p90,p99,max},\"tbm_us\":{avg,p50,p90,p99,p999,max}}.\n",
        .opts = opts, .n_opts = CLI_N(opts), .max_pos = -1,
    };
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int nfiles = 0, prc = files ? cli_parse(&spec, argc, argv, files, &nfiles) : 1;
    if (prc || !nfiles) {
        free(files);
        return prc == CLI_EXIT_HELP ? 0 : prc ? 2 : cli_usage_error(&spec, "needs FILE...");
    }
    sx_tokenizer *tok;
    sx_vocab *v;
    if (tool_load("maskbench", tok_path, NULL, &tok, &v)) {
        free(files);
        return 1;
    }
    tally t = {0};
    if (out_path && !(t.out = fopen(out_path, "w"))) {
        fprintf(stderr, "strux maskbench: cannot write %s: %s\n", out_path, strerror(errno));
        return 1;
    }
    slot *slots = calloc((size_t)threads, sizeof *slots);
    struct pollfd *pfd = calloc((size_t)threads, sizeof *pfd);
    for (int i = 0; i < threads; i++)
        slots[i].pid = -1;
    int next = 0, active = 0, last_pct = -1;
    fflush(stdout);
    while (next < nfiles || active) {
        for (int i = 0; i < threads && next < nfiles; i++) {
            if (slots[i].pid >= 0)
                continue;
            int p[2];
            if (pipe(p)) {
                perror("strux maskbench: pipe");
                return 1;
            }
            pid_t pid = fork();
            if (pid == 0) {
                close(p[0]);
                FILE *w = fdopen(p[1], "w");
                run_schema(files[next], tok, v, &o, w);
                fclose(w);
                _exit(0);
            }
            close(p[1]);
            if (pid < 0) {
                perror("strux maskbench: fork");
                close(p[0]);
                return 1;
            }
            slots[i] = (slot){.pid = pid, .fd = p[0], .file = next++, .start = tool_now_us()};
            active++;
        }
        int np = 0, map[256];
        for (int i = 0; i < threads; i++)
            if (slots[i].pid >= 0) {
                pfd[np].fd = slots[i].fd;
                pfd[np].events = POLLIN;
                map[np++] = i;
            }
        poll(pfd, (nfds_t)np, 50);
        for (int k = 0; k < np; k++) {
            slot *s = &slots[map[k]];
            if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)) {
                if (s->n + 65536 > s->cap) {
                    s->cap = (s->cap ? s->cap * 2 : 65536) + 65536;
                    s->buf = realloc(s->buf, s->cap);
                }
                ssize_t r = read(s->fd, s->buf + s->n, s->cap - s->n);
                if (r > 0) {
                    s->n += (size_t)r;
                    continue;
                }
                finish_slot(&t, s, files, 0);
                active--;
            } else if (tool_now_us() - s->start > (double)timeout_ms * 1000.0) {
                finish_slot(&t, s, files, 1);
                active--;
            }
        }
        int pc = (int)(100L * t.schemas / nfiles);
        if (!quiet && pc / 5 != last_pct / 5) {
            fprintf(stderr, "maskbench: %ld/%d schemas, %ld passing, %ld crash, %ld timeout\n",
                    t.schemas, nfiles, t.passing, t.crash, t.timeout);
            last_pct = pc;
        }
    }
    if (t.ttfm.n) /* no sample at all when nothing compiled (qsort wants an array) */
        qsort(t.ttfm.v, t.ttfm.n, sizeof(double), cmp_d);
    if (t.tbm.n)
        qsort(t.tbm.v, t.tbm.n, sizeof(double), cmp_d);
    double sum = 0;
    for (size_t i = 0; i < t.tbm.n; i++)
        sum += t.tbm.v[i];
    printf("{\"schemas\":%ld,\"passing\":%ld,\"compile_error\":%ld,\"validation_error\":%ld,"
           "\"invalidation_error\":%ld,\"crash\":%ld,\"timeout\":%ld,\"tokens\":%ld,"
           "\"instances\":%ld,\"untokenizable\":%ld,\"inconsistent\":%ld,"
           "\"inconsistent_schemas\":%ld,"
           "\"ttfm_us\":{\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"max\":%.1f},"
           "\"tbm_us\":{\"avg\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,"
           "\"max\":%.1f}}\n",
           t.schemas, t.passing, t.compile_error, t.validation_error, t.invalidation_error,
           t.crash, t.timeout, t.tokens, t.instances, t.untokenizable, t.inconsistent,
           t.inconsistent_schemas, pct(&t.ttfm, .5), pct(&t.ttfm, .9), pct(&t.ttfm, .99),
           t.ttfm.n ? t.ttfm.v[t.ttfm.n - 1] : 0, t.tbm.n ? sum / (double)t.tbm.n : 0,
           pct(&t.tbm, .5), pct(&t.tbm, .9), pct(&t.tbm, .99), pct(&t.tbm, .999),
           t.tbm.n ? t.tbm.v[t.tbm.n - 1] : 0);
    if (t.out)
        fclose(t.out);
    free(t.ttfm.v);
    free(t.tbm.v);
    free(slots);
    free(pfd);
    free(files);
    sx_vocab_free(v);
    sx_tok_free(tok);
    return 0;
}
