/* sx_re_compile and friends: the pipeline of regex_internal.h end to end. */
#include <stdlib.h>
#include <string.h>

#include "common/sx_utf8.h"
#include "grammar/regex/regex_internal.h"

void sx_re_limits_default(sx_re_limits *lim)
{
    lim->max_pattern = 16384;
    lim->max_nfa = 100000;
    lim->max_states = 20000;
    lim->max_work = 8000000;
}

void sx_rx_limits(const sx_re_limits *in, sx_re_limits *out)
{
    sx_re_limits_default(out);
    if (!in)
        return;
    if (in->max_pattern)
        out->max_pattern = in->max_pattern;
    if (in->max_nfa)
        out->max_nfa = in->max_nfa;
    if (in->max_states)
        out->max_states = in->max_states > INT32_MAX / 2 ? INT32_MAX / 2 : in->max_states;
    if (in->max_work)
        out->max_work = in->max_work;
}

/* From a parsed AST to the automaton. */
static int compile_ast(sx_rx_ast *ast, sx_re_mode mode, const sx_re_limits *lim, sx_re **out,
                       sx_error *err)
{
    sx_rx_cset *sets = NULL, sigma = {0}, word = {0};
    sx_rx_alpha al = {0};
    sx_rx_nfa nfa = {0};
    sx_rx_sdfa cp = {0}, bytes = {0};
    uint64_t work = 0;
    int32_t label_of[256];
    int rc = SX_ENOMEM;

    /* the pattern's sets, then Sigma, then \w when \b is used */
    int32_t n = ast->n_sets;
    sets = malloc(((size_t)n + 2) * sizeof *sets);
    if (!sets || sx_rx_cset_any(&sigma) || (ast->has_wb && sx_rx_cset_word(&word)))
        goto oom;
    if (n)
        memcpy(sets, ast->sets, (size_t)n * sizeof *sets);
    int32_t sigma_id = n, word_id = -1;
    sets[n++] = sigma;
    if (ast->has_wb) {
        word_id = n;
        sets[n++] = word;
    }
    if ((rc = sx_rx_alpha_build(sets, n, word_id, &work, lim->max_work, &al, err)) ||
        (rc = sx_rx_nfa_build(ast, mode, sigma_id, lim->max_nfa, &nfa, err)) ||
        (rc = sx_rx_subset(&nfa, &al, lim, &work, &cp, err)) ||
        (rc = sx_rx_minimise(&cp, &work, lim->max_work, err)))
        goto fail;
    if (cp.n > 0 && (rc = sx_rx_utf8_expand(&cp, &al, lim, &work, &bytes, err)))
        goto fail;
    for (int b = 0; b < 256; b++)
        label_of[b] = b;
    rc = sx_rx_finish(&bytes, label_of, out, err);
    goto fail;
oom:
    rc = sx_err_set(err, SX_ENOMEM, "out of memory compiling regex");
fail:
    free(sets);
    sx_rx_cset_free(&sigma);
    sx_rx_cset_free(&word);
    sx_rx_alpha_free(&al);
    sx_rx_nfa_free(&nfa);
    sx_rx_sdfa_free(&cp);
    sx_rx_sdfa_free(&bytes);
    return rc;
}

int sx_re_compile(const char *pattern, size_t len, sx_re_mode mode,
                  const sx_re_limits *lim_in, sx_re **out, sx_error *err)
{
    sx_error local;
    sx_re_limits lim;
    sx_rx_ast ast;
    int rc;
    if (!err)
        err = &local;
    sx_err_clear(err);
    if (!out)
        return sx_err_set(err, SX_EINVAL, "sx_re_compile: out is NULL");
    *out = NULL;
    if (!pattern && len)
        return sx_err_set(err, SX_EINVAL, "sx_re_compile: pattern is NULL");
    if (mode != SX_RE_SEARCH && mode != SX_RE_FULL)
        return sx_err_set(err, SX_EINVAL, "sx_re_compile: bad mode %d", (int)mode);
    sx_rx_limits(lim_in, &lim);
    if (len > lim.max_pattern)
        return sx_err_setp(err, SX_ELIMIT, NULL, (long)lim.max_pattern,
                           "pattern is %zu bytes, more than the limit of %zu", len,
                           lim.max_pattern);
    int handled;
    rc = sx_rx_lookahead(pattern ? pattern : "", len, mode, lim_in, out, err, &handled);
    if (handled)
        return rc;
    sx_rx_ast_init(&ast);
    rc = sx_rx_parse(pattern ? pattern : "", len, &ast, err);
    if (!rc)
        rc = compile_ast(&ast, mode, &lim, out, err);
    sx_rx_ast_free(&ast);
    return rc;
}

/* A byte trie of the strings, minimised: the trie is already a DFA, so the
 * NFA and subset construction are skipped (much faster for large enums). */
int sx_re_from_literals(const char *const *strs, const size_t *lens, size_t n,
                        const sx_re_limits *lim_in, sx_re **out, sx_error *err)
{
    sx_error local;
    sx_re_limits lim;
    sx_rx_sdfa d = {0};
    int32_t *par = NULL, *table = NULL, *cnt = NULL, label_of[256];
    uint8_t *byt = NULL;
    uint32_t cap = 0;
    uint64_t work = 0;
    size_t total = 0;
    int rc = SX_ENOMEM;
    if (!err)
        err = &local;
    sx_err_clear(err);
    if (!out)
        return sx_err_set(err, SX_EINVAL, "sx_re_from_literals: out is NULL");
    *out = NULL;
    if (n && !strs)
        return sx_err_set(err, SX_EINVAL, "sx_re_from_literals: strs is NULL");
    sx_rx_limits(lim_in, &lim);
    for (size_t i = 0; i < n; i++) {
        if (!strs[i])
            return sx_err_set(err, SX_EINVAL, "sx_re_from_literals: string %zu is NULL", i);
        size_t l = lens ? lens[i] : strlen(strs[i]);
        size_t bad = sx_utf8_check(strs[i], l, NULL);
        if (bad < l)
            return sx_err_setp(err, SX_EUTF8, NULL, (long)bad,
                               "literal %zu is not valid UTF-8 at byte %zu", i, bad);
        total += l;
    }
    if (total > lim.max_nfa)
        return sx_err_set(err, SX_ELIMIT, "literals total %zu bytes, more than the limit %zu",
                          total, lim.max_nfa);
    for (int b = 0; b < 256; b++)
        label_of[b] = b;
    d.start = -1;
    if (n == 0)
        return sx_rx_finish(&d, label_of, out, err);

    /* trie nodes: parent and incoming byte; children found by hashing */
    size_t nmax = total + 1;
    cap = 64;
    while (cap < 2 * nmax)
        cap *= 2;
    par = malloc(nmax * sizeof *par);
    byt = malloc(nmax);
    d.accept = calloc(nmax, 1);
    table = malloc(cap * sizeof *table);
    if (!par || !byt || !d.accept || !table)
        goto oom;
    for (uint32_t i = 0; i < cap; i++)
        table[i] = -1;
    d.n = 1;
    par[0] = -1;
#define CHILD_HASH(p, b) ((uint32_t)((((uint64_t)(uint32_t)(p) << 8) | (b)) * 0x9E3779B97F4A7C15ull >> 32))
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s = (const uint8_t *)strs[i];
        size_t l = lens ? lens[i] : strlen(strs[i]);
        int32_t cur = 0;
        for (size_t k = 0; k < l; k++) {
            uint32_t j = CHILD_HASH(cur, s[k]) & (cap - 1);
            while (table[j] >= 0 && !(par[table[j]] == cur && byt[table[j]] == s[k]))
                j = (j + 1) & (cap - 1);
            if (table[j] < 0) {
                par[d.n] = cur;
                byt[d.n] = s[k];
                table[j] = d.n++;
            }
            cur = table[j];
        }
        d.accept[cur] = 1;
        work += l;
    }
#undef CHILD_HASH
    /* rows: children grouped by parent */
    cnt = calloc((size_t)d.n + 1, sizeof *cnt);
    d.row = malloc(((size_t)d.n + 1) * sizeof *d.row);
    d.lab = malloc((size_t)d.n * sizeof *d.lab);
    d.dst = malloc((size_t)d.n * sizeof *d.dst);
    if (!cnt || !d.row || !d.lab || !d.dst)
        goto oom;
    for (int32_t v = 1; v < d.n; v++)
        cnt[par[v]]++;
    d.row[0] = 0;
    for (int32_t v = 0; v < d.n; v++)
        d.row[v + 1] = d.row[v] + cnt[v];
    for (int32_t v = 0; v < d.n; v++)
        cnt[v] = d.row[v];
    for (int32_t v = 1; v < d.n; v++) {
        d.lab[cnt[par[v]]] = byt[v];
        d.dst[cnt[par[v]]++] = v;
    }
    d.n_trans = d.cap_trans = d.n - 1;
    d.n_labels = 256;
    d.start = 0;
    if ((rc = sx_rx_minimise(&d, &work, lim.max_work, err)))
        goto fail;
    if ((size_t)d.n > lim.max_states) {
        rc = sx_err_set(err, SX_ELIMIT, "literals need more than %zu DFA states", lim.max_states);
        goto fail;
    }
    rc = sx_rx_finish(&d, label_of, out, err);
    goto fail;
oom:
    rc = sx_err_set(err, SX_ENOMEM, "out of memory compiling literals");
fail:
    free(par);
    free(byt);
    free(table);
    free(cnt);
    sx_rx_sdfa_free(&d);
    return rc;
}

/* Product automaton on combined byte classes, then prune + minimise. */
/* The product automaton of a and b: strings both accept, or (minus) a
 * accepts and b does not -- b's dead state is then a state of its own. */
static int product(const sx_re *a, const sx_re *b, int minus, const sx_re_limits *lim_in,
                   sx_re **out, sx_error *err)
{
    sx_error local;
    sx_re_limits lim;
    sx_rx_sdfa d = {0};
    int32_t label_of[256], rep[256], n_labels = 0;
    int32_t *pa = NULL, *pb = NULL, *table = NULL;
    uint32_t tcap = 0;
    uint64_t work = 0;
    int rc = SX_ENOMEM;
    if (!err)
        err = &local;
    sx_err_clear(err);
    if (!out || !a || !b)
        return sx_err_set(err, SX_EINVAL, "sx_re_intersect: NULL argument");
    *out = NULL;
    sx_rx_limits(lim_in, &lim);
    d.start = -1;
    if (a->n_states == 0 || (b->n_states == 0 && !minus)) {
        for (int i = 0; i < 256; i++)
            label_of[i] = -1;
        return sx_rx_finish(&d, label_of, out, err);
    }
    /* labels: distinct (class in a, class in b) pairs */
    for (int x = 0; x < 256; x++) {
        label_of[x] = -1;
        for (int l = 0; l < n_labels; l++)
            if (a->byte_class[rep[l]] == a->byte_class[x] && b->byte_class[rep[l]] == b->byte_class[x]) {
                label_of[x] = l;
                break;
            }
        if (label_of[x] < 0) {
            rep[n_labels] = x;
            label_of[x] = n_labels++;
        }
    }
    d.n_labels = n_labels;
    int32_t cap = 0;
    tcap = 1024;
    table = malloc(tcap * sizeof *table);
    if (!table)
        goto oom;
    for (uint32_t i = 0; i < tcap; i++)
        table[i] = -1;
#define PAIR_HASH(x, y) ((uint32_t)((((uint64_t)(uint32_t)(x) << 32) | (uint32_t)(y)) * 0x9E3779B97F4A7C15ull >> 40))
    /* state 0 = (start, start) */
    cap = 64;
    pa = malloc((size_t)cap * sizeof *pa);
    pb = malloc((size_t)cap * sizeof *pb);
    d.accept = malloc((size_t)cap);
    d.row = malloc(((size_t)cap + 1) * sizeof *d.row);
    if (!pa || !pb || !d.accept || !d.row)
        goto oom;
    pa[0] = a->start;
    pb[0] = b->n_states ? b->start : -1;
    d.n = 1;
    table[PAIR_HASH(pa[0], pb[0]) & (tcap - 1)] = 0;
    for (int32_t s = 0; s < d.n; s++) {
        d.row[s] = d.n_trans;
        int b_acc = pb[s] >= 0 && b->accept[pb[s]];
        d.accept[s] = a->accept[pa[s]] && (minus ? !b_acc : b_acc);
        for (int32_t l = 0; l < n_labels; l++) {
            int32_t ta = a->next[(size_t)pa[s] * a->n_classes + a->byte_class[rep[l]]];
            int32_t tb = pb[s] < 0 ? -1
                                   : b->next[(size_t)pb[s] * b->n_classes + b->byte_class[rep[l]]];
            work++;
            if (ta < 0 || (tb < 0 && !minus))
                continue;
            uint32_t j = PAIR_HASH(ta, tb) & (tcap - 1);
            while (table[j] >= 0 && (pa[table[j]] != ta || pb[table[j]] != tb))
                j = (j + 1) & (tcap - 1);
            int32_t t = table[j];
            if (t < 0) {
                if ((size_t)d.n >= lim.max_states) {
                    rc = sx_err_set(err, SX_ELIMIT, "intersection needs more than %zu DFA states",
                                    lim.max_states);
                    goto fail;
                }
                if (d.n == cap) {
                    int32_t nc = cap * 2;
                    int32_t *na = realloc(pa, (size_t)nc * sizeof *na);
                    if (na)
                        pa = na;
                    int32_t *nb = realloc(pb, (size_t)nc * sizeof *nb);
                    if (nb)
                        pb = nb;
                    uint8_t *acc = realloc(d.accept, (size_t)nc);
                    if (acc)
                        d.accept = acc;
                    int32_t *row = realloc(d.row, ((size_t)nc + 1) * sizeof *row);
                    if (row)
                        d.row = row;
                    if (!na || !nb || !acc || !row)
                        goto oom;
                    cap = nc;
                }
                t = d.n++;
                pa[t] = ta;
                pb[t] = tb;
                table[j] = t;
                if (2 * (uint32_t)d.n > tcap) {
                    uint32_t nc = tcap * 2;
                    int32_t *nt = malloc(nc * sizeof *nt);
                    if (!nt)
                        goto oom;
                    for (uint32_t i = 0; i < nc; i++)
                        nt[i] = -1;
                    for (int32_t q = 0; q < d.n; q++) {
                        uint32_t k = PAIR_HASH(pa[q], pb[q]) & (nc - 1);
                        while (nt[k] >= 0)
                            k = (k + 1) & (nc - 1);
                        nt[k] = q;
                    }
                    free(table);
                    table = nt;
                    tcap = nc;
                }
            }
            if (d.n_trans == d.cap_trans) {
                int32_t nc = d.cap_trans ? d.cap_trans * 2 : 1024;
                int32_t *nl = realloc(d.lab, (size_t)nc * sizeof *nl);
                if (nl)
                    d.lab = nl;
                int32_t *nd = realloc(d.dst, (size_t)nc * sizeof *nd);
                if (nd)
                    d.dst = nd;
                if (!nl || !nd)
                    goto oom;
                d.cap_trans = nc;
            }
            d.lab[d.n_trans] = l;
            d.dst[d.n_trans] = t;
            d.n_trans++;
        }
        if (work > lim.max_work) {
            rc = sx_err_set(err, SX_ELIMIT, "regex work budget exceeded in the intersection");
            goto fail;
        }
    }
#undef PAIR_HASH
    d.row[d.n] = d.n_trans;
    d.start = 0;
    if ((rc = sx_rx_minimise(&d, &work, lim.max_work, err)))
        goto fail;
    rc = sx_rx_finish(&d, label_of, out, err);
    goto fail;
oom:
    rc = sx_err_set(err, SX_ENOMEM, "out of memory intersecting regexes");
fail:
    free(pa);
    free(pb);
    free(table);
    sx_rx_sdfa_free(&d);
    return rc;
}

int sx_re_intersect(const sx_re *a, const sx_re *b, const sx_re_limits *lim, sx_re **out,
                    sx_error *err)
{
    return product(a, b, 0, lim, out, err);
}

int sx_re_minus(const sx_re *a, const sx_re *b, const sx_re_limits *lim, sx_re **out,
                sx_error *err)
{
    return product(a, b, 1, lim, out, err);
}

size_t sx_re_mem_bytes(const sx_re *re)
{
    if (!re)
        return 0;
    size_t n = (size_t)re->n_states;
    return sizeof *re + n * (size_t)re->n_classes * sizeof(int32_t) + n * (1 + 2 * sizeof(int32_t) + 1) +
           (size_t)re->n_classes;
}
