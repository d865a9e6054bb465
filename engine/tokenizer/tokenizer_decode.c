/* Ids -> bytes, all at once or streamed.  Streaming holds back a token's
 * trailing bytes while they are the start of an unfinished UTF-8 character,
 * and turns bytes that can never become valid into U+FFFD, so what it emits
 * is always valid UTF-8. */
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"

static const char replacement[] = "\xEF\xBF\xBD";

static int bad_id(const sx_tokenizer *tok, int32_t id, size_t pos, sx_error *err)
{
    return sx_err_set(err, SX_EINVAL, "token id %ld at position %zu is out of range (0..%ld)",
                      (long)id, pos, (long)tok->n_ids - 1);
}

int sx_tok_decode(const sx_tokenizer *tok, const int32_t *ids, size_t n, sx_bytes *out,
                  sx_error *err)
{
    size_t start = out->n;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *b = sx_tok_bytes(tok, ids[i], &len);
        if (!b) {
            out->n = start;
            if (out->v)
                out->v[start] = '\0';
            return bad_id(tok, ids[i], i, err);
        }
        if (sx_bytes_append(out, b, len))
            return sx_err_set(err, SX_ENOMEM, "out of memory decoding");
    }
    if (!out->v)
        return sx_bytes_append(out, "", 0);
    return SX_OK;
}

/* Emits the complete characters of s[0..n), lossy; returns how many bytes at
 * the end were left over as an unfinished character (at most 3). */
static int emit(const unsigned char *s, size_t n, size_t *used, sx_bytes *out)
{
    size_t i = 0, run = 0;
    while (i < n) {
        size_t seq, bad = sx_utf8_bad_len(s + i, n - i, &seq);
        if (!bad) {
            i += seq;
            continue;
        }
        if (seq == 0) /* cut short by the end: keep for the next token */
            break;
        if (sx_bytes_append(out, s + run, i - run) || sx_bytes_append(out, replacement, 3))
            return SX_ENOMEM;
        i += bad;
        run = i;
    }
    *used = i;
    return sx_bytes_append(out, s + run, i - run);
}

int sx_detok_push(const sx_tokenizer *tok, sx_detok *st, int32_t id, sx_bytes *out,
                  sx_error *err)
{
    size_t len, used, skip = 0;
    const unsigned char *b = (const unsigned char *)sx_tok_bytes(tok, id, &len);
    if (!b)
        return bad_id(tok, id, 0, err);
    if (st->npending < 0 || st->npending > 3)
        return sx_err_set(err, SX_EINVAL, "corrupt detokenizer state");
    if (st->npending) {
        /* the held-back character ends within the next 3 bytes: finish it
         * in a small buffer, then carry on in the token itself */
        unsigned char buf[8];
        size_t np = (size_t)st->npending, take = len < 3 ? len : 3;
        memcpy(buf, st->pending, np);
        memcpy(buf + np, b, take);
        size_t i = 0;
        while (i < np) {
            size_t seq, bad = sx_utf8_bad_len(buf + i, np + take - i, &seq);
            if (!bad) {
                if (sx_bytes_append(out, buf + i, seq))
                    return sx_err_set(err, SX_ENOMEM, "out of memory decoding");
                i += seq;
            } else if (seq == 0) {
                break; /* still unfinished after this whole (short) token */
            } else {
                if (sx_bytes_append(out, replacement, 3))
                    return sx_err_set(err, SX_ENOMEM, "out of memory decoding");
                i += bad;
            }
        }
        if (i < np) { /* the short token did not finish it: hold it all */
            memmove(st->pending, buf + i, np + len - i);
            st->npending = (int)(np + len - i);
            return SX_OK;
        }
        skip = i - np;
        st->npending = 0;
    }
    if (emit(b + skip, len - skip, &used, out))
        return sx_err_set(err, SX_ENOMEM, "out of memory decoding");
    st->npending = (int)(len - skip - used);
    memcpy(st->pending, b + skip + used, (size_t)st->npending);
    return SX_OK;
}

int sx_detok_finish(sx_detok *st, sx_bytes *out)
{
    int rc = SX_OK;
    if (st->npending > 0)
        rc = sx_bytes_append(out, replacement, 3);
    else if (!out->v)
        rc = sx_bytes_append(out, "", 0);
    st->npending = 0;
    return rc;
}
