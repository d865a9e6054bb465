#include "grammar/vocab.h"

#include <stdlib.h>
#include <string.h>

/* Sorting token indices by their bytes puts every prefix before its
 * extensions, which is exactly the preorder of the trie. */
typedef struct vocab_key {
    const uint8_t *b;
    uint32_t len;
    int32_t id;
} vocab_key;

static int cmp_tokens(const void *pa, const void *pb)
{
    const vocab_key *a = pa, *b = pb;
    int c = memcmp(a->b, b->b, a->len < b->len ? a->len : b->len);
    if (c)
        return c;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

int sx_vocab_new(int32_t n_tokens, int32_t n_rows, const uint8_t *const *bytes,
                 const uint32_t *lens, const uint8_t *special, const int32_t *eos, int n_eos,
                 sx_vocab **out, sx_error *err)
{
    sx_vocab *v = NULL;
    vocab_key *order = NULL;
    int32_t n_order = 0;
    uint32_t *stack_nodes = NULL;
    size_t pool_len = 0;
    int rc = SX_ENOMEM;

    if (n_tokens <= 0 || n_rows < n_tokens || n_eos < 0 || n_eos > 4)
        return sx_err_set(err, SX_EINVAL, "vocab: bad sizes (tokens %d, rows %d, eos %d)",
                          n_tokens, n_rows, n_eos);
    v = calloc(1, sizeof *v);
    if (!v)
        goto fail;
    v->n_tokens = n_tokens;
    v->n_rows = n_rows;
    v->mask_words = (n_rows + 31) / 32;
    v->n_eos = n_eos;
    for (int i = 0; i < n_eos; i++) {
        if (eos[i] < 0 || eos[i] >= n_tokens) {
            rc = sx_err_set(err, SX_EINVAL, "vocab: eos id %d out of range", eos[i]);
            goto fail;
        }
        v->eos[i] = eos[i];
    }
    for (int32_t i = 0; i < n_tokens; i++)
        pool_len += lens[i];
    v->pool = malloc(pool_len ? pool_len : 1);
    v->tok_bytes = calloc((size_t)n_tokens, sizeof *v->tok_bytes);
    v->tok_len = calloc((size_t)n_tokens, sizeof *v->tok_len);
    v->is_special = calloc((size_t)n_tokens, 1);
    order = malloc((size_t)n_tokens * sizeof *order);
    if (!v->pool || !v->tok_bytes || !v->tok_len || !v->is_special || !order)
        goto fail;
    size_t off = 0;
    for (int32_t i = 0; i < n_tokens; i++) {
        memcpy(v->pool + off, bytes[i], lens[i]);
        v->tok_bytes[i] = v->pool + off;
        v->tok_len[i] = lens[i];
        off += lens[i];
        v->is_special[i] = special ? special[i] != 0 : 0;
        if (lens[i] > v->max_token_len)
            v->max_token_len = lens[i];
        /* special tokens and empty ones never appear in the trie */
        if (!v->is_special[i] && lens[i] > 0)
            order[n_order++] = (vocab_key){v->tok_bytes[i], lens[i], i};
    }
    if (v->max_token_len > 255) {
        rc = sx_err_set(err, SX_ELIMIT, "vocab: a token of %u bytes (at most 255)", v->max_token_len);
        goto fail;
    }
    qsort(order, (size_t)n_order, sizeof *order, cmp_tokens);

    /* Upper bound on nodes: every byte of every token, plus the root. */
    size_t cap = 1;
    for (int32_t k = 0; k < n_order; k++)
        cap += order[k].len;
    v->nodes = malloc(cap * sizeof *v->nodes);
    stack_nodes = malloc(257 * sizeof *stack_nodes);
    if (!v->nodes || !stack_nodes)
        goto fail;
    v->nodes[0] = (sx_vocab_node){.next = 0, .token = -1, .byte = 0, .depth = 0};
    uint32_t n = 1, depth = 0; /* stack_nodes[d] = open node at depth d */
    stack_nodes[0] = 0;
    const uint8_t *prev = NULL;
    uint32_t prev_len = 0;
    for (int32_t k = 0; k < n_order; k++) {
        int32_t t = order[k].id;
        const uint8_t *b = order[k].b;
        uint32_t len = order[k].len;
        uint32_t common = 0;
        while (common < len && common < prev_len && b[common] == prev[common])
            common++;
        /* close the nodes deeper than the shared prefix */
        while (depth > common) {
            v->nodes[stack_nodes[depth]].next = n;
            depth--;
        }
        if (common == len) {
            /* same bytes as an earlier token: keep the first id at this node */
            if (v->nodes[stack_nodes[depth]].token < 0)
                v->nodes[stack_nodes[depth]].token = t;
        } else {
            for (uint32_t d = common; d < len; d++) {
                v->nodes[n] = (sx_vocab_node){.next = 0, .token = -1, .byte = b[d],
                                              .depth = (uint8_t)(d + 1)};
                stack_nodes[++depth] = n++;
            }
            v->nodes[n - 1].token = t;
        }
        prev = b;
        prev_len = len;
    }
    while (depth > 0) {
        v->nodes[stack_nodes[depth]].next = n;
        depth--;
    }
    v->nodes[0].next = n;
    v->n_nodes = n;
    free(order);
    free(stack_nodes);
    *out = v;
    return SX_OK;
fail:
    if (rc == SX_ENOMEM)
        sx_err_set(err, SX_ENOMEM, "vocab: out of memory");
    free(order);
    free(stack_nodes);
    sx_vocab_free(v);
    return rc;
}

void sx_vocab_free(sx_vocab *v)
{
    if (!v)
        return;
    free(v->nodes);
    free(v->tok_bytes);
    free(v->tok_len);
    free(v->is_special);
    free(v->pool);
    free(v);
}
