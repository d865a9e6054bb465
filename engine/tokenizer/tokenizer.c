/* The tokenizer object: buffers, file resolution, accessors, freeing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "engine/tokenizer/tokenizer_internal.h"

int sx_ids_push(sx_ids *ids, int32_t id)
{
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 64;
        int32_t *v = realloc(ids->v, cap * sizeof *v);
        if (!v)
            return SX_ENOMEM;
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return SX_OK;
}

void sx_ids_free(sx_ids *ids)
{
    free(ids->v);
    memset(ids, 0, sizeof *ids);
}

int sx_bytes_append(sx_bytes *b, const void *data, size_t n)
{
    if (n >= ((size_t)-1) / 4 - b->n)
        return SX_ENOMEM;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *v = realloc(b->v, cap);
        if (!v)
            return SX_ENOMEM;
        b->v = v;
        b->cap = cap;
    }
    if (n)
        memcpy(b->v + b->n, data, n);
    b->n += n;
    b->v[b->n] = '\0';
    return SX_OK;
}

void sx_bytes_free(sx_bytes *b)
{
    free(b->v);
    memset(b, 0, sizeof *b);
}

static int put_path(char *out, size_t cap, sx_error *err, const char *a, const char *b)
{
    int n = snprintf(out, cap, "%s%s", a, b);
    if (n < 0 || (size_t)n >= cap)
        return sx_err_set(err, SX_ELIMIT, "tokenizer path longer than %zu bytes", cap);
    return SX_OK;
}

int sx_tok_resolve_path(const char *explicit_path, const char *model_dir, const char *shared_dir,
                        char *out, size_t out_cap, sx_error *err)
{
    char buf[4096];
    if (explicit_path)
        return put_path(out, out_cap, err, explicit_path, "");
    if (model_dir) {
        int n = snprintf(buf, sizeof buf, "%s/tokenizer.json", model_dir);
        if (n > 0 && (size_t)n < sizeof buf && sx_file_exists(buf))
            return put_path(out, out_cap, err, buf, "");
    }
    if (!shared_dir)
        shared_dir = getenv("STRUX_SHARED");
    if (!shared_dir || !*shared_dir)
        shared_dir = "../shared";
    return put_path(out, out_cap, err, shared_dir, "/qwen3-tokenizer/tokenizer.json");
}

void sx_tok_free(sx_tokenizer *tok)
{
    if (!tok)
        return;
    sx_bpe_fini(&tok->bpe);
    sx_added_fini(&tok->added);
    sx_pretok_fini(&tok->pre);
    free(tok->bytes);
    free(tok->off);
    free(tok->len);
    free(tok->pieces);
    free(tok->poff);
    free(tok->kind);
    free(tok);
}

int32_t sx_tok_vocab_size(const sx_tokenizer *tok)
{
    return tok->n_ids;
}

int32_t sx_tok_n_rows(const sx_tokenizer *tok)
{
    return tok->n_rows;
}

void sx_tok_set_n_rows(sx_tokenizer *tok, int32_t rows)
{
    /* rows below the tokenizer's ids would make real tokens unrepresentable */
    tok->n_rows = rows > tok->n_ids ? rows : tok->n_ids;
}

const char *sx_tok_bytes(const sx_tokenizer *tok, int32_t id, size_t *len)
{
    if (id < 0 || id >= tok->n_ids || tok->kind[id] == SX_KIND_NONE)
        return NULL;
    if (len)
        *len = tok->len[id];
    return tok->bytes + tok->off[id];
}

int sx_tok_is_added(const sx_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->n_ids && (tok->kind[id] & SX_KIND_ADDED) != 0;
}

int sx_tok_is_special(const sx_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->n_ids && (tok->kind[id] & SX_KIND_SPECIAL) != 0;
}

int32_t sx_tok_find(const sx_tokenizer *tok, const char *text, size_t len)
{
    for (size_t i = 0; i < tok->added.n; i++)
        if (tok->added.v[i].len == len && !memcmp(tok->added.v[i].text, text, len))
            return tok->added.v[i].id;
    return len ? sx_bpe_find(&tok->bpe, text, len) : -1;
}

const char *sx_tok_piece(const sx_tokenizer *tok, int32_t id)
{
    if (id < 0 || id >= tok->n_ids || tok->kind[id] == SX_KIND_NONE)
        return NULL;
    return tok->pieces + tok->poff[id];
}
