#include "tools/strux/cli_opts.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const cli_gr_escapes[] = {"canonical", "any", NULL};

int cli_parse_long(const char *val, long lo, long hi, long *out, char *why, size_t why_cap)
{
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    /* strtol skips leading blanks; a value that starts with one is a typo */
    if (errno == ERANGE || end == val || *end || val[0] == ' ' || val[0] == '\t' || v < lo ||
        v > hi) {
        snprintf(why, why_cap, "is not an integer from %ld to %ld", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *val, double lo, double hi, double *out, char *why, size_t why_cap)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (errno == ERANGE || end == val || *end || val[0] == ' ' || val[0] == '\t' || !isfinite(v)) {
        snprintf(why, why_cap, "is not a number");
        return -1;
    }
    if ((lo != 0 || hi != 0) && (v < lo || v > hi)) {
        snprintf(why, why_cap, "is not a number from %g to %g", lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_u64(const char *val, unsigned long long *out, char *why, size_t why_cap)
{
    char *end;
    errno = 0;
    /* strtoull takes "-1" as 2^64-1: only digits are a count */
    unsigned long long v = strtoull(val, &end, 10);
    if (errno == ERANGE || end == val || *end || val[0] < '0' || val[0] > '9') {
        snprintf(why, why_cap, "is not an integer from 0 to 2^64-1");
        return -1;
    }
    *out = v;
    return 0;
}

int cli_gr_indent(void *dst, const char *val, char *why, size_t why_cap)
{
    sx_gr_opts *o = dst;
    long n;
    if (cli_parse_long(val, 1, 16, &n, why, why_cap))
        return -1;
    o->ws_mode = SX_WS_INDENTED;
    o->indent = (int)n;
    return 0;
}

/* "strux CMD", or the program's own name (struxd) */
static const char *prog_name(const cli_spec *s, char *buf, size_t cap)
{
    if (s->prog)
        return s->prog;
    snprintf(buf, cap, "strux %s", s->cmd);
    return buf;
}

int cli_usage_error(const cli_spec *s, const char *fmt, ...)
{
    char msg[512], prog[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *p = prog_name(s, prog, sizeof prog);
    fprintf(stderr, "%s: %s (see %s --help)\n", p, msg, p);
    return CLI_EXIT_USAGE;
}

int cli_seen(const cli_spec *s, const char *name)
{
    for (size_t k = 0; k < s->n_opts; k++)
        if (s->opts[k].name && !strcmp(s->opts[k].name, name))
            return s->opts[k].seen;
    return 0;
}

static int takes_value(const cli_opt *o)
{
    return o->kind != CLI_FLAG && o->kind != CLI_SET && o->kind != CLI_SECTION;
}

static void enum_list(const cli_opt *o, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t k = 0; o->choices[k] && at < cap; k++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", k ? ", " : "", o->choices[k]);
}

/* Stores VAL through o's destination; nonzero with `why` on a bad value. */
static int set_value(const cli_opt *o, const char *val, char *why, size_t cap)
{
    long n;
    double x;
    unsigned long long u;
    switch (o->kind) {
    case CLI_INT:
        if (cli_parse_long(val, o->lo, o->hi, &n, why, cap))
            return -1;
        *(int *)o->dst = (int)n;
        return 0;
    case CLI_LONG:
        if (cli_parse_long(val, o->lo, o->hi, &n, why, cap))
            return -1;
        *(long *)o->dst = n;
        return 0;
    case CLI_U64:
        if (cli_parse_u64(val, &u, why, cap))
            return -1;
        *(unsigned long long *)o->dst = u;
        return 0;
    case CLI_DOUBLE:
    case CLI_FLOAT:
        if (cli_parse_double(val, o->dlo, o->dhi, &x, why, cap))
            return -1;
        if (o->kind == CLI_DOUBLE)
            *(double *)o->dst = x;
        else
            *(float *)o->dst = (float)x;
        return 0;
    case CLI_STR:
        *(const char **)o->dst = val;
        return 0;
    case CLI_ENUM:
        for (int k = 0; o->choices[k]; k++)
            if (!strcmp(val, o->choices[k])) {
                *(int *)o->dst = k;
                return 0;
            }
        {
            char list[256];
            enum_list(o, list, sizeof list);
            snprintf(why, cap, "is not one of %s", list);
        }
        return -1;
    case CLI_FN:
        return o->fn(o->dst, val, why, cap);
    case CLI_LIST: {
        cli_list *l = o->dst;
        if (l->n >= l->cap) {
            snprintf(why, cap, "is one too many (at most %d)", l->cap);
            return -1;
        }
        l->v[l->n++] = val;
        return 0;
    }
    case CLI_FLAG:
    case CLI_SET:
    case CLI_SECTION:
        break;
    }
    return 0;
}

static cli_opt *find(cli_spec *s, const char *a, size_t len)
{
    for (size_t k = 0; k < s->n_opts; k++) {
        cli_opt *o = &s->opts[k];
        if (o->kind == CLI_SECTION)
            continue;
        if ((o->name && strlen(o->name) == len && !strncmp(o->name, a, len)) ||
            (o->alias && strlen(o->alias) == len && !strncmp(o->alias, a, len)))
            return o;
    }
    return NULL;
}

int cli_parse(cli_spec *s, int argc, char **argv, const char **pos, int *n_pos)
{
    int np = 0, opts_done = 0;
    for (size_t k = 0; k < s->n_opts; k++)
        s->opts[k].seen = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts_done || a[0] != '-' || !a[1]) {
            if (s->max_pos >= 0 && np >= s->max_pos)
                return cli_usage_error(s, "unexpected argument '%s'", a);
            pos[np++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            opts_done = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cli_help(stdout, s);
            return CLI_EXIT_HELP;
        }
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        cli_opt *o = find(s, a, len);
        if (!o)
            return cli_usage_error(s, "unknown option '%.*s'", (int)len, a);
        const char *name = o->name;
        if (!takes_value(o)) {
            if (eq)
                return cli_usage_error(s, "%s takes no value", name);
            if (o->dst)
                *(int *)o->dst = o->kind == CLI_SET ? (int)o->lo : 1;
            o->seen++;
            continue;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (!val) {
            if (i + 1 >= argc)
                return cli_usage_error(s, "%s needs a value", name);
            val = argv[++i];
        }
        char why[320];
        if (set_value(o, val, why, sizeof why))
            return cli_usage_error(s, "%s: \"%s\" %s", name, val, why);
        o->seen++;
    }
    if (n_pos)
        *n_pos = np;
    return CLI_OK;
}

void cli_help(FILE *f, const cli_spec *s)
{
    char prog[96];
    fprintf(f, "usage: %s %s\n", prog_name(s, prog, sizeof prog), s->usage);
    if (s->about)
        fprintf(f, "\n%s", s->about);
    /* a table that starts with a heading names its own groups */
    fprintf(f, s->n_opts && s->opts[0].kind == CLI_SECTION ? "\n" : "\noptions:\n");
    for (size_t k = 0; k < s->n_opts; k++) {
        const cli_opt *o = &s->opts[k];
        if (o->kind == CLI_SECTION) {
            fprintf(f, "%s\n", o->help);
            continue;
        }
        char left[96];
        int n = snprintf(left, sizeof left, "  %s%s%s%s%s", o->alias ? o->alias : "",
                         o->alias ? ", " : "", o->name, takes_value(o) ? " " : "",
                         takes_value(o) ? (o->arg ? o->arg : "VALUE") : "");
        /* the help column; a long left part gets a line of its own */
        if (n >= 26)
            fprintf(f, "%s\n%26s", left, "");
        else
            fprintf(f, "%-26s", left);
        for (const char *h = o->help ? o->help : ""; *h; h++) {
            fputc(*h, f);
            if (*h == '\n')
                fprintf(f, "%26s", "");
        }
        if (o->kind == CLI_ENUM) {
            char list[256];
            enum_list(o, list, sizeof list);
            fprintf(f, " (%s)", list);
        }
        fputc('\n', f);
    }
    fprintf(f, "%-26s%s\n", "  -h, --help", "this help");
    if (s->after)
        fprintf(f, "\n%s", s->after);
}
