/* Added tokens (<|im_end|>, <think>, ...): found in the raw text before
 * normalisation, leftmost first and longest at a position, as Hugging Face's
 * Aho-Corasick (LeftmostLongest) split does.  A vocabulary has a few dozen
 * of them, so a first-byte index and memcmp are enough. */
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"

static int by_first_then_longest(const void *a, const void *b)
{
    const sx_added_tok *x = a, *y = b;
    unsigned cx = (unsigned char)x->text[0], cy = (unsigned char)y->text[0];
    if (cx != cy)
        return cx < cy ? -1 : 1;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int sx_added_build(sx_added *a, const sx_tokenizer *tok, sx_error *err)
{
    size_t n = 0;
    for (int32_t id = 0; id < tok->n_ids; id++)
        if ((tok->kind[id] & SX_KIND_ADDED) && tok->len[id] > 0)
            n++;
    if (n > 60000)
        return sx_err_set(err, SX_ELIMIT, "tokenizer.json: %zu added tokens (at most 60000)", n);
    a->v = calloc(n ? n : 1, sizeof *a->v);
    if (!a->v)
        return sx_err_set(err, SX_ENOMEM, "out of memory loading added tokens");
    a->n = 0;
    for (int32_t id = 0; id < tok->n_ids; id++)
        if ((tok->kind[id] & SX_KIND_ADDED) && tok->len[id] > 0)
            a->v[a->n++] = (sx_added_tok){id, tok->len[id], tok->bytes + tok->off[id]};
    qsort(a->v, a->n, sizeof *a->v, by_first_then_longest);
    size_t k = 0;
    for (unsigned c = 0; c <= 256; c++) {
        while (k < a->n && (unsigned char)a->v[k].text[0] < c)
            k++;
        a->first[c] = (uint16_t)k;
    }
    return SX_OK;
}

void sx_added_fini(sx_added *a)
{
    free(a->v);
    memset(a, 0, sizeof *a);
}

size_t sx_added_next(const sx_added *a, const char *text, size_t len, size_t from,
                     const sx_added_tok **tok_out)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = from; i < len; i++) {
        unsigned c = s[i];
        for (size_t k = a->first[c]; k < a->first[c + 1]; k++) {
            const sx_added_tok *t = &a->v[k];
            if (t->len <= len - i && !memcmp(text + i, t->text, t->len)) {
                *tok_out = t;
                return i;
            }
        }
    }
    *tok_out = NULL;
    return len;
}
