/* sx_tok_encode: UTF-8 check (or lossy repair) -> added tokens split out of
 * the raw text (special mode only) -> NFC per piece -> split regex -> BPE. */
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"

typedef struct enc {
    const sx_tokenizer *tok;
    sx_ids *out;
    sx_bpe_scratch scr;
    pcre2_match_data *md;
} enc;

static int on_word(void *ctx, const char *w, size_t n)
{
    enc *e = ctx;
    return sx_bpe_word(&e->tok->bpe, (const unsigned char *)w, n, &e->scr, e->out);
}

static int encode_plain(enc *e, const char *s, size_t len, int ascii)
{
    const sx_tokenizer *tok = e->tok;
    char *norm = NULL;
    int rc;
    if (len == 0)
        return SX_OK;
    if (tok->nfc && !ascii && !sx_nfc_quick(&tok->nfc_tab, s, len)) {
        size_t nlen;
        if ((rc = sx_nfc_apply(s, len, &norm, &nlen)))
            return rc;
        s = norm;
        len = nlen;
    }
    rc = tok->pre.re ? sx_pretok_run(&tok->pre, e->md, s, len, on_word, e) : on_word(e, s, len);
    free(norm);
    return rc;
}

int sx_tok_encode(const sx_tokenizer *tok, const char *text, size_t len, unsigned flags,
                  sx_ids *out, sx_error *err)
{
    enc e = {.tok = tok, .out = out};
    sx_bytes fixed = {0};
    size_t start = out->n;
    int ascii, rc = SX_OK;
    size_t bad = sx_utf8_check(text, len, &ascii);
    if (bad < len) {
        if (!(flags & SX_TOK_LOSSY))
            return sx_err_setp(err, SX_EUTF8, NULL, (long)bad,
                               "text is not valid UTF-8 at byte offset %zu", bad);
        if (sx_utf8_repair(text, len, &fixed)) {
            rc = SX_ENOMEM;
            goto fail;
        }
        text = fixed.v;
        len = fixed.n;
    }
    if (tok->pre.re && !(e.md = pcre2_match_data_create(1, NULL))) {
        rc = SX_ENOMEM;
        goto fail;
    }
    if ((flags & SX_TOK_SPECIAL) && tok->added.n) {
        size_t pos = 0;
        for (;;) {
            const sx_added_tok *t;
            size_t at = sx_added_next(&tok->added, text, len, pos, &t);
            if ((rc = encode_plain(&e, text + pos, at - pos, ascii)))
                goto fail;
            if (!t)
                break;
            if ((rc = sx_ids_push(out, t->id)))
                goto fail;
            pos = at + t->len;
        }
    } else if ((rc = encode_plain(&e, text, len, ascii))) {
        goto fail;
    }
    pcre2_match_data_free(e.md);
    sx_bpe_scratch_free(&e.scr);
    sx_bytes_free(&fixed);
    return SX_OK;
fail:
    out->n = start;
    pcre2_match_data_free(e.md);
    sx_bpe_scratch_free(&e.scr);
    sx_bytes_free(&fixed);
    if (rc == SX_ELIMIT)
        return sx_err_set(err, rc, "the pre-tokenizer regex hit a PCRE2 limit on this text");
    if (rc == SX_EUNSUPPORTED)
        return sx_err_set(err, rc, "the split regex produced a match the pre-tokenizer cannot use");
    return sx_err_set(err, rc, "out of memory while tokenizing");
}
