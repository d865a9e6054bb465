/* AST -> Thompson NFA whose consuming edges are labelled with set ids.
 *
 * Built backwards: each node is compiled knowing the state that follows it,
 * which makes concatenation and repetition copies need no patch lists. */
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex_internal.h"

typedef struct builder {
    const sx_rx_ast *ast;
    sx_rx_nfa       *nfa;
    size_t           max;
    sx_error        *err;
    int              failed;
} builder;

static int32_t new_state(builder *b, int kind, int32_t arg, int32_t out1, int32_t out2)
{
    sx_rx_nfa *n = b->nfa;
    if (b->failed)
        return -1;
    if ((size_t)n->n >= b->max) {
        b->failed = sx_err_set(b->err, SX_ELIMIT,
                               "regex needs more than %zu NFA states (counted repetition too large)",
                               b->max);
        return -1;
    }
    if (n->n == n->cap) {
        int32_t nc = n->cap ? n->cap * 2 : 64;
        uint8_t *k = realloc(n->kind, (size_t)nc);
        if (k)
            n->kind = k;
        int32_t *a = realloc(n->arg, (size_t)nc * sizeof *a);
        if (a)
            n->arg = a;
        int32_t *o1 = realloc(n->out1, (size_t)nc * sizeof *o1);
        if (o1)
            n->out1 = o1;
        int32_t *o2 = realloc(n->out2, (size_t)nc * sizeof *o2);
        if (o2)
            n->out2 = o2;
        if (!k || !a || !o1 || !o2) {
            b->failed = sx_err_set(b->err, SX_ENOMEM, "out of memory building the NFA");
            return -1;
        }
        n->cap = nc;
    }
    n->kind[n->n] = (uint8_t)kind;
    n->arg[n->n] = arg;
    n->out1[n->n] = out1;
    n->out2[n->n] = out2;
    return n->n++;
}

static int32_t build(builder *b, int32_t node, int32_t next)
{
    if (b->failed)
        return -1;
    const sx_rx_node *nd = &b->ast->nodes[node];
    switch (nd->kind) {
    case SX_RX_EMPTY:
        return next;
    case SX_RX_SET:
        return new_state(b, SX_RX_N_SET, nd->set, next, -1);
    case SX_RX_ASSERT:
        if (nd->assert_kind == SX_RX_EOL)
            b->nfa->has_eol = 1;
        if (nd->assert_kind == SX_RX_WB || nd->assert_kind == SX_RX_NWB)
            b->nfa->has_wb = 1;
        return new_state(b, SX_RX_N_ASSERT, nd->assert_kind, next, -1);
    case SX_RX_CAT: {
        /* children right to left, without recursion over the list */
        int32_t n = 0;
        for (int32_t c = nd->child; c >= 0; c = b->ast->nodes[c].next)
            n++;
        int32_t *kids = malloc((size_t)n * sizeof *kids);
        if (!kids) {
            b->failed = sx_err_set(b->err, SX_ENOMEM, "out of memory building the NFA");
            return -1;
        }
        n = 0;
        for (int32_t c = nd->child; c >= 0; c = b->ast->nodes[c].next)
            kids[n++] = c;
        int32_t cur = next;
        for (int32_t i = n - 1; i >= 0 && cur >= 0; i--)
            cur = build(b, kids[i], cur);
        free(kids);
        return cur;
    }
    case SX_RX_ALT: {
        int32_t acc = -1;
        /* a chain of two-way splits; order is irrelevant to the language */
        for (int32_t c = nd->child; c >= 0; c = b->ast->nodes[c].next) {
            int32_t e = build(b, c, next);
            if (e < 0)
                return -1;
            acc = acc < 0 ? e : new_state(b, SX_RX_N_EPS, -1, e, acc);
            if (acc < 0)
                return -1;
        }
        return acc;
    }
    case SX_RX_REP: {
        int32_t cur = next;
        if (nd->max < 0) {
            int32_t loop = new_state(b, SX_RX_N_EPS, -1, -1, next);
            if (loop < 0)
                return -1;
            int32_t body = build(b, nd->child, loop);
            if (body < 0)
                return -1;
            b->nfa->out1[loop] = body;
            cur = loop;
        } else {
            for (int32_t i = 0; i < nd->max - nd->min; i++) {
                int32_t body = build(b, nd->child, cur);
                if (body < 0)
                    return -1;
                cur = new_state(b, SX_RX_N_EPS, -1, body, next);
                if (cur < 0)
                    return -1;
            }
        }
        for (int32_t i = 0; i < nd->min; i++) {
            cur = build(b, nd->child, cur);
            if (cur < 0)
                return -1;
        }
        return cur;
    }
    }
    return -1;
}

void sx_rx_nfa_free(sx_rx_nfa *n)
{
    free(n->kind);
    free(n->arg);
    free(n->out1);
    free(n->out2);
    memset(n, 0, sizeof *n);
}

int sx_rx_nfa_build(const sx_rx_ast *ast, sx_re_mode mode, int32_t sigma_set,
                    size_t max_nfa, sx_rx_nfa *out, sx_error *err)
{
    memset(out, 0, sizeof *out);
    builder b = {.ast = ast, .nfa = out, .max = max_nfa, .err = err};
    uint64_t est = sx_rx_ast_size(ast, ast->root, max_nfa);
    if (est > max_nfa) {
        sx_err_set(err, SX_ELIMIT,
                   "regex needs more than %zu NFA states (counted repetition too large)", max_nfa);
        return SX_ELIMIT;
    }
    int32_t match = new_state(&b, SX_RX_N_MATCH, -1, -1, -1);
    int32_t tail = match;
    out->accept_all = -1;
    if (mode == SX_RE_SEARCH) {
        /* after a match, anything may follow */
        tail = new_state(&b, SX_RX_N_EPS, -1, -1, match);
        int32_t any = new_state(&b, SX_RX_N_SET, sigma_set, tail, -1);
        if (tail >= 0)
            out->out1[tail] = any;
        out->accept_all = tail;
    }
    int32_t entry = tail >= 0 ? build(&b, ast->root, tail) : -1;
    if (mode == SX_RE_SEARCH && entry >= 0) {
        /* ... and precede it */
        int32_t head = new_state(&b, SX_RX_N_EPS, -1, -1, entry);
        int32_t any = new_state(&b, SX_RX_N_SET, sigma_set, head, -1);
        if (head >= 0)
            out->out1[head] = any;
        entry = head;
    }
    if (b.failed || entry < 0) {
        int rc = b.failed ? b.failed : SX_EINTERNAL;
        sx_rx_nfa_free(out);
        return rc;
    }
    out->start = entry;
    return SX_OK;
}
