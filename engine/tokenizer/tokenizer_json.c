/* Loading tokenizer.json (jansson): checks that the file describes a
 * tokenizer this code reproduces exactly -- byte-level BPE, NFC or no
 * normaliser, a split regex then byte-level pre-tokenizer, byte-level
 * decoder -- and builds the lookup tables.  Anything else is refused with
 * the JSON Pointer of the field, never approximated. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"
#include "engine/tokenizer/tokenizer_internal.h"

/* GPT-2's split regex, which ByteLevel(use_regex=true) applies. */
static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

typedef struct loader {
    sx_tokenizer *tok;
    sx_bytes bytes, pieces; /* blobs being built */
    sx_error *err;
} loader;

static int oom(loader *L)
{
    return sx_err_set(L->err, SX_ENOMEM, "out of memory loading tokenizer.json");
}

/* Optional boolean member: absent or null -> dflt. */
static int get_bool(loader *L, json_t *obj, const char *key, int dflt, const char *ptr, int *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return SX_OK;
    }
    if (!json_is_boolean(v))
        return sx_err_setp(L->err, SX_EFORMAT, ptr, -1, "%s/%s must be true or false", ptr, key);
    *out = json_is_true(v);
    return SX_OK;
}

static const char *get_type(json_t *obj)
{
    return json_string_value(json_object_get(obj, "type"));
}

/* "" or null or absent */
static int empty_string(json_t *v)
{
    return !v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0);
}

static int check_model_options(loader *L, json_t *model)
{
    const char *type = get_type(model);
    json_t *v;
    if (!type)
        return sx_err_setp(L->err, SX_EFORMAT, "/model/type", -1, "model.type is missing");
    if (strcmp(type, "BPE"))
        return sx_err_setp(L->err, SX_EUNSUPPORTED, "/model/type", -1,
                           "model.type is \"%.40s\"; only byte-level BPE is supported", type);
    v = json_object_get(model, "dropout");
    if (v && !json_is_null(v))
        return sx_err_setp(L->err, SX_EUNSUPPORTED, "/model/dropout", -1,
                           "BPE dropout is not supported (encoding would not be deterministic)");
    if (!empty_string(json_object_get(model, "continuing_subword_prefix")))
        return sx_err_setp(L->err, SX_EUNSUPPORTED, "/model/continuing_subword_prefix", -1,
                           "a continuing_subword_prefix is not supported");
    if (!empty_string(json_object_get(model, "end_of_word_suffix")))
        return sx_err_setp(L->err, SX_EUNSUPPORTED, "/model/end_of_word_suffix", -1,
                           "an end_of_word_suffix is not supported");
    return get_bool(L, model, "ignore_merges", 0, "/model", &L->tok->bpe.ignore_merges);
}

static int check_normalizer(loader *L, json_t *root)
{
    json_t *n = json_object_get(root, "normalizer");
    const char *type;
    L->tok->nfc = 0;
    if (!n || json_is_null(n))
        return SX_OK;
    type = get_type(n);
    if (type && !strcmp(type, "NFC")) {
        L->tok->nfc = 1;
        return SX_OK;
    }
    if (type && !strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "normalizers"), *e;
        size_t i;
        if (!json_is_array(list))
            return sx_err_setp(L->err, SX_EFORMAT, "/normalizer/normalizers", -1,
                               "normalizer.normalizers must be an array");
        json_array_foreach(list, i, e) {
            const char *t = get_type(e);
            if (!t || strcmp(t, "NFC")) {
                char ptr[64];
                snprintf(ptr, sizeof ptr, "/normalizer/normalizers/%zu", i);
                return sx_err_setp(L->err, SX_EUNSUPPORTED, ptr, -1,
                                   "normalizer \"%.40s\" is not supported (only NFC)",
                                   t ? t : "?");
            }
            L->tok->nfc = 1;
        }
        return SX_OK;
    }
    return sx_err_setp(L->err, SX_EUNSUPPORTED, "/normalizer", -1,
                       "normalizer \"%.40s\" is not supported (only NFC)", type ? type : "?");
}

static int check_bytelevel(loader *L, json_t *bl, const char *ptr, int *use_regex)
{
    int aps = 0, rc;
    if ((rc = get_bool(L, bl, "add_prefix_space", 1, ptr, &aps)) ||
        (rc = get_bool(L, bl, "use_regex", 1, ptr, use_regex)))
        return rc;
    if (aps)
        return sx_err_setp(L->err, SX_EUNSUPPORTED, ptr, -1,
                           "ByteLevel add_prefix_space is not supported");
    return SX_OK;
}

static int check_split(loader *L, json_t *sp, const char *ptr, const char **pattern, size_t *plen)
{
    char p[96];
    json_t *pat = json_object_get(sp, "pattern");
    json_t *re = json_object_get(pat, "Regex");
    const char *beh = json_string_value(json_object_get(sp, "behavior"));
    int invert = 0, rc;
    snprintf(p, sizeof p, "%s/pattern/Regex", ptr);
    if (!json_is_string(re))
        return sx_err_setp(L->err, SX_EUNSUPPORTED, p, -1,
                           "the Split pre-tokenizer needs a pattern {\"Regex\": ...}");
    snprintf(p, sizeof p, "%s/behavior", ptr);
    if (!beh || strcmp(beh, "Isolated"))
        return sx_err_setp(L->err, SX_EUNSUPPORTED, p, -1,
                           "Split behavior \"%.40s\" is not supported (only Isolated)",
                           beh ? beh : "?");
    if ((rc = get_bool(L, sp, "invert", 0, ptr, &invert)))
        return rc;
    if (invert)
        return sx_err_setp(L->err, SX_EUNSUPPORTED, ptr, -1, "Split invert is not supported");
    *pattern = json_string_value(re);
    *plen = json_string_length(re);
    return SX_OK;
}

/* Accepts ByteLevel, or Sequence[Split(Regex, Isolated), ByteLevel]. */
static int load_pretokenizer(loader *L, json_t *root)
{
    json_t *pt = json_object_get(root, "pre_tokenizer");
    const char *type = get_type(pt), *pattern = NULL;
    size_t plen = 0;
    int use_regex = 0, rc;
    if (type && !strcmp(type, "ByteLevel")) {
        if ((rc = check_bytelevel(L, pt, "/pre_tokenizer", &use_regex)))
            return rc;
    } else if (type && !strcmp(type, "Sequence")) {
        json_t *list = json_object_get(pt, "pretokenizers");
        size_t n = json_array_size(list);
        const char *t0 = n ? get_type(json_array_get(list, 0)) : NULL;
        const char *tl = n ? get_type(json_array_get(list, n - 1)) : NULL;
        if (n < 1 || n > 2 || !tl || strcmp(tl, "ByteLevel") ||
            (n == 2 && (!t0 || strcmp(t0, "Split"))))
            return sx_err_setp(L->err, SX_EUNSUPPORTED, "/pre_tokenizer/pretokenizers", -1,
                               "pre-tokenizer sequence not supported (expected [Split, ByteLevel])");
        if (n == 2 && (rc = check_split(L, json_array_get(list, 0),
                                        "/pre_tokenizer/pretokenizers/0", &pattern, &plen)))
            return rc;
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/pre_tokenizer/pretokenizers/%zu", n - 1);
        if ((rc = check_bytelevel(L, json_array_get(list, n - 1), ptr, &use_regex)))
            return rc;
        if (pattern && use_regex)
            return sx_err_setp(L->err, SX_EUNSUPPORTED, ptr, -1,
                               "a Split followed by ByteLevel with use_regex is not supported");
    } else {
        return sx_err_setp(L->err, SX_EUNSUPPORTED, "/pre_tokenizer", -1,
                           "pre-tokenizer \"%.40s\" is not supported (expected byte-level)",
                           type ? type : "none");
    }
    if (use_regex) {
        pattern = gpt2_pattern;
        plen = sizeof gpt2_pattern - 1;
    }
    if (!pattern)
        return SX_OK; /* the whole text is one pre-token */
    rc = sx_pretok_compile(&L->tok->pre, pattern, plen, L->err);
    if (rc)
        sx_err_prefix(L->err, "tokenizer.json pre_tokenizer");
    return rc;
}

static int check_decoder(loader *L, json_t *root)
{
    json_t *d = json_object_get(root, "decoder");
    const char *type = get_type(d);
    if (!type || strcmp(type, "ByteLevel"))
        return sx_err_setp(L->err, SX_EUNSUPPORTED, "/decoder", -1,
                           "decoder \"%.40s\" is not supported (expected ByteLevel)",
                           type ? type : "none");
    return SX_OK;
}

/* Checks an id member; updates *max_id. */
static int get_id(loader *L, json_t *v, const char *ptr, int32_t *id, int32_t *max_id)
{
    if (!json_is_integer(v))
        return sx_err_setp(L->err, SX_EFORMAT, ptr, -1, "token id at %s must be an integer", ptr);
    json_int_t x = json_integer_value(v);
    if (x < 0 || x >= SX_TOK_MAX_ID)
        return sx_err_setp(L->err, SX_EFORMAT, ptr, -1, "token id %lld at %s is out of range",
                           (long long)x, ptr);
    *id = (int32_t)x;
    if (*id > *max_id)
        *max_id = *id;
    return SX_OK;
}

/* First pass: the largest id, so the per-id arrays can be sized. */
static int scan_ids(loader *L, json_t *vocab, json_t *added, int32_t *max_id)
{
    const char *key;
    json_t *v, *a;
    size_t i;
    char ptr[64];
    int rc;
    json_object_foreach(vocab, key, v) {
        int32_t id;
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= SX_TOK_MAX_ID) {
            return sx_err_setp(L->err, SX_EFORMAT, "/model/vocab", -1,
                               "model.vocab: id of \"%.60s\" is not an integer in [0, %d)", key,
                               SX_TOK_MAX_ID);
        }
        id = (int32_t)json_integer_value(v);
        if (id > *max_id)
            *max_id = id;
    }
    json_array_foreach(added, i, a) {
        int32_t id;
        snprintf(ptr, sizeof ptr, "/added_tokens/%zu/id", i);
        if ((rc = get_id(L, json_object_get(a, "id"), ptr, &id, max_id)))
            return rc;
    }
    return SX_OK;
}

static int load_vocab(loader *L, json_t *vocab)
{
    sx_tokenizer *tok = L->tok;
    const char *key;
    json_t *v;
    char *tmp = NULL;
    size_t tmp_cap = 0;
    int rc = SX_OK;
    json_object_foreach(vocab, key, v) {
        int32_t id = (int32_t)json_integer_value(v);
        size_t klen = strlen(key);
        if (tok->kind[id] != SX_KIND_NONE) {
            rc = sx_err_setp(L->err, SX_EFORMAT, "/model/vocab", -1,
                             "model.vocab: id %d is used twice", (int)id);
            goto fail;
        }
        if (klen + 1 > tmp_cap) {
            free(tmp);
            tmp_cap = klen + 64;
            if (!(tmp = malloc(tmp_cap))) {
                rc = oom(L);
                goto fail;
            }
        }
        long n = sx_bl_decode(&tok->bl, key, klen, tmp);
        if (n < 0 || (n == 0 && klen > 0)) {
            rc = sx_err_setp(L->err, SX_EUNSUPPORTED, "/model/vocab", -1,
                             "model.vocab: \"%.60s\" is not a byte-level piece", key);
            goto fail;
        }
        if (n == 0) {
            rc = sx_err_setp(L->err, SX_EFORMAT, "/model/vocab", -1,
                             "model.vocab: the empty string is not a token");
            goto fail;
        }
        tok->kind[id] = SX_KIND_MODEL;
        tok->off[id] = (uint32_t)L->bytes.n;
        tok->len[id] = (uint32_t)n;
        tok->poff[id] = (uint32_t)L->pieces.n;
        if (sx_bytes_append(&L->bytes, tmp, (size_t)n) || sx_bytes_append(&L->bytes, "", 1) ||
            sx_bytes_append(&L->pieces, key, klen) || sx_bytes_append(&L->pieces, "", 1)) {
            rc = oom(L);
            goto fail;
        }
    }
fail:
    free(tmp);
    return rc;
}

static int load_added(loader *L, json_t *added)
{
    sx_tokenizer *tok = L->tok;
    json_t *a;
    size_t i;
    char ptr[64];
    int rc;
    json_array_foreach(added, i, a) {
        int32_t id = (int32_t)json_integer_value(json_object_get(a, "id"));
        json_t *c = json_object_get(a, "content");
        int special = 0, single_word = 0, lstrip = 0, rstrip = 0, normalized = 0;
        snprintf(ptr, sizeof ptr, "/added_tokens/%zu", i);
        if (!json_is_object(a))
            return sx_err_setp(L->err, SX_EFORMAT, ptr, -1, "added token %zu is not an object", i);
        if (!json_is_string(c) || json_string_length(c) == 0)
            return sx_err_setp(L->err, SX_EFORMAT, ptr, -1,
                               "added token %zu has no content string", i);
        if ((rc = get_bool(L, a, "special", 0, ptr, &special)) ||
            (rc = get_bool(L, a, "single_word", 0, ptr, &single_word)) ||
            (rc = get_bool(L, a, "lstrip", 0, ptr, &lstrip)) ||
            (rc = get_bool(L, a, "rstrip", 0, ptr, &rstrip)) ||
            (rc = get_bool(L, a, "normalized", !special, ptr, &normalized)))
            return rc;
        if (single_word || lstrip || rstrip || normalized)
            return sx_err_setp(L->err, SX_EUNSUPPORTED, ptr, -1,
                               "added token \"%.40s\": single_word/lstrip/rstrip/normalized "
                               "are not supported",
                               json_string_value(c));
        const char *text = json_string_value(c);
        size_t len = json_string_length(c);
        if (tok->kind[id] & SX_KIND_ADDED)
            return sx_err_setp(L->err, SX_EFORMAT, ptr, -1, "added token id %d is used twice",
                               (int)id);
        if (tok->kind[id] == SX_KIND_MODEL) {
            /* an added token already in the model vocabulary keeps its id;
             * only allowed where piece, bytes and content all agree */
            if (tok->len[id] != len || memcmp(tok->bytes + tok->off[id], text, len) ||
                strcmp(tok->pieces + tok->poff[id], text))
                return sx_err_setp(L->err, SX_EFORMAT, ptr, -1,
                                   "added token \"%.40s\" reuses id %d of another token", text,
                                   (int)id);
            tok->kind[id] |= SX_KIND_ADDED | (special ? SX_KIND_SPECIAL : 0);
            continue;
        }
        if (memchr(text, 0, len))
            return sx_err_setp(L->err, SX_EFORMAT, ptr, -1, "added token %zu contains NUL", i);
        tok->kind[id] = SX_KIND_ADDED | (special ? SX_KIND_SPECIAL : 0);
        tok->off[id] = (uint32_t)L->bytes.n;
        tok->len[id] = (uint32_t)len;
        tok->poff[id] = (uint32_t)L->pieces.n;
        if (sx_bytes_append(&L->bytes, text, len) || sx_bytes_append(&L->bytes, "", 1) ||
            sx_bytes_append(&L->pieces, text, len) || sx_bytes_append(&L->pieces, "", 1))
            return oom(L);
    }
    return SX_OK;
}

static int merge_part(loader *L, const char *s, size_t n, char *tmp, size_t i, int32_t *id)
{
    long m = sx_bl_decode(&L->tok->bl, s, n, tmp);
    *id = m > 0 ? sx_bpe_find(&L->tok->bpe, tmp, (size_t)m) : -1;
    if (*id < 0) {
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/model/merges/%zu", i);
        return sx_err_setp(L->err, SX_EFORMAT, ptr, -1,
                           "merge %zu: \"%.*s\" is not in the vocabulary", i, (int)(n > 60 ? 60 : n),
                           s);
    }
    return SX_OK;
}

static int load_merges(loader *L, json_t *merges)
{
    sx_tokenizer *tok = L->tok;
    sx_bpe *b = &tok->bpe;
    json_t *m;
    size_t i;
    char tmp[1024];
    int rc;
    json_array_foreach(merges, i, m) {
        const char *a = NULL, *c = NULL;
        size_t an = 0, cn = 0;
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/model/merges/%zu", i);
        if (json_is_string(m)) {
            const char *s = json_string_value(m), *sp = strchr(s, ' ');
            size_t n = json_string_length(m);
            if (sp && !memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s))) {
                a = s;
                an = (size_t)(sp - s);
                c = sp + 1;
                cn = n - an - 1;
            }
        } else if (json_is_array(m) && json_array_size(m) == 2 &&
                   json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
            a = json_string_value(json_array_get(m, 0));
            an = json_string_length(json_array_get(m, 0));
            c = json_string_value(json_array_get(m, 1));
            cn = json_string_length(json_array_get(m, 1));
        }
        if (!a || !an || !cn)
            return sx_err_setp(L->err, SX_EFORMAT, ptr, -1,
                               "merge %zu is not \"left right\" or [left, right]", i);
        if (an > 500 || cn > 500)
            return sx_err_setp(L->err, SX_EFORMAT, ptr, -1, "merge %zu is too long", i);
        int32_t l, r, id;
        if ((rc = merge_part(L, a, an, tmp, i, &l)) || (rc = merge_part(L, c, cn, tmp, i, &r)))
            return rc;
        memcpy(tmp, tok->bytes + tok->off[l], tok->len[l]);
        memcpy(tmp + tok->len[l], tok->bytes + tok->off[r], tok->len[r]);
        id = sx_bpe_find(b, tmp, tok->len[l] + tok->len[r]);
        if (id < 0)
            return sx_err_setp(L->err, SX_EFORMAT, ptr, -1,
                               "merge %zu: \"%.60s%.60s\" is not in the vocabulary", i,
                               tok->pieces + tok->poff[l], tok->pieces + tok->poff[r]);
        sx_bpe_add_merge(b, l, r, id, (uint32_t)i);
    }
    return SX_OK;
}

static int build(loader *L, json_t *root)
{
    sx_tokenizer *tok = L->tok;
    json_t *model, *vocab, *merges, *added;
    int32_t max_id = -1;
    int rc;
    if (!json_is_object(root))
        return sx_err_set(L->err, SX_EFORMAT, "tokenizer.json is not a JSON object");
    model = json_object_get(root, "model");
    if (!json_is_object(model))
        return sx_err_setp(L->err, SX_EFORMAT, "/model", -1, "tokenizer.json has no model object");
    if ((rc = check_model_options(L, model)))
        return rc;
    vocab = json_object_get(model, "vocab");
    merges = json_object_get(model, "merges");
    added = json_object_get(root, "added_tokens");
    if (!json_is_object(vocab))
        return sx_err_setp(L->err, SX_EFORMAT, "/model/vocab", -1, "model.vocab must be an object");
    if (!json_is_array(merges))
        return sx_err_setp(L->err, SX_EFORMAT, "/model/merges", -1, "model.merges must be an array");
    if (added && !json_is_null(added) && !json_is_array(added))
        return sx_err_setp(L->err, SX_EFORMAT, "/added_tokens", -1, "added_tokens must be an array");
    if (json_array_size(merges) >= SX_TOK_MAX_ID)
        return sx_err_setp(L->err, SX_ELIMIT, "/model/merges", -1, "too many merges");
    if ((rc = scan_ids(L, vocab, added, &max_id)))
        return rc;
    if (max_id < 0)
        return sx_err_setp(L->err, SX_EFORMAT, "/model/vocab", -1, "the vocabulary is empty");
    tok->n_ids = tok->n_rows = max_id + 1;
    size_t n = (size_t)tok->n_ids;
    tok->off = calloc(n, sizeof *tok->off);
    tok->len = calloc(n, sizeof *tok->len);
    tok->poff = calloc(n, sizeof *tok->poff);
    tok->kind = calloc(n, 1);
    if (!tok->off || !tok->len || !tok->poff || !tok->kind)
        return oom(L);
    sx_bl_init(&tok->bl);
    if ((rc = load_vocab(L, vocab)) || (rc = load_added(L, added)))
        return rc;
    /* the blobs are final now: hand them over and point the tables at them */
    tok->bytes = L->bytes.v;
    tok->pieces = L->pieces.v;
    L->bytes = (sx_bytes){0};
    L->pieces = (sx_bytes){0};
    if (sx_bpe_init(&tok->bpe, tok->n_ids, json_object_size(vocab), json_array_size(merges)))
        return oom(L);
    tok->bpe.bytes = tok->bytes;
    tok->bpe.off = tok->off;
    tok->bpe.len = tok->len;
    for (int32_t id = 0; id < tok->n_ids; id++)
        if (tok->kind[id] & SX_KIND_MODEL)
            if (sx_bpe_add_vocab(&tok->bpe, id))
                return sx_err_setp(L->err, SX_EFORMAT, "/model/vocab", -1,
                                   "model.vocab: two pieces stand for the same bytes");
    for (int c = 0; c < 256; c++) {
        unsigned char byte = (unsigned char)c;
        tok->bpe.byte_id[c] = sx_bpe_find(&tok->bpe, &byte, 1);
        if (tok->bpe.byte_id[c] < 0)
            return sx_err_setp(L->err, SX_EUNSUPPORTED, "/model/vocab", -1,
                               "model.vocab has no token for byte 0x%02X", c);
    }
    if ((rc = load_merges(L, merges)))
        return rc;
    free(tok->bpe.produced);
    tok->bpe.produced = NULL;
    if ((rc = sx_added_build(&tok->added, tok, L->err)) || (rc = check_normalizer(L, root)) ||
        (rc = load_pretokenizer(L, root)) || (rc = check_decoder(L, root)))
        return rc;
    if (tok->nfc)
        sx_nfc_init(&tok->nfc_tab);
    return SX_OK;
}

int sx_tok_load_mem(const char *json, size_t len, sx_tokenizer **out, sx_error *err)
{
    loader L = {.err = err};
    json_error_t je;
    json_t *root = NULL;
    int rc;
    *out = NULL;
    sx_err_clear(err);
    if (len > (1u << 30))
        return sx_err_set(err, SX_ELIMIT, "tokenizer.json is larger than 1 GiB");
    root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return sx_err_setp(err, SX_EFORMAT, NULL, (long)je.position,
                           "tokenizer.json is not valid JSON (line %d, column %d): %s", je.line,
                           je.column, je.text);
    if (!(L.tok = calloc(1, sizeof *L.tok))) {
        rc = oom(&L);
        goto fail;
    }
    if ((rc = build(&L, root)))
        goto fail;
    json_decref(root);
    *out = L.tok;
    return SX_OK;
fail:
    json_decref(root);
    sx_bytes_free(&L.bytes);
    sx_bytes_free(&L.pieces);
    sx_tok_free(L.tok);
    return rc;
}

int sx_tok_load(const char *path, sx_tokenizer **out, sx_error *err)
{
    char *data = NULL;
    size_t len = 0;
    int rc;
    *out = NULL;
    if ((rc = sx_file_read(path, &data, &len, err)))
        return rc;
    rc = sx_tok_load_mem(data, len, out, err);
    free(data);
    if (rc)
        sx_err_prefix(err, "%s", path);
    return rc;
}
