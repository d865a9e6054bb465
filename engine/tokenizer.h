/* sx_tok: the Qwen3 tokenizer -- byte-level BPE loaded from a Hugging Face
 * tokenizer.json, exact to Hugging Face `tokenizers`.
 *
 * Pipeline of sx_tok_encode: (special mode only) split out added tokens ->
 * NFC (utf8proc) -> pre-tokenizer split regex from the file (PCRE2, UTF+UCP)
 * -> byte-level alias -> BPE by merge rank -> ids.
 *
 * Plain text (the default) never produces added/special tokens: a document
 * containing the characters "<|im_end|>" is tokenized as those characters,
 * so user text cannot end a turn or inject a role.  Only the chat template
 * asks for SX_TOK_SPECIAL.
 *
 * Invalid UTF-8 input is an error (SX_EUTF8, err->offset = first bad byte)
 * unless SX_TOK_LOSSY is given, which replaces each maximal invalid
 * subsequence by U+FFFD before encoding.
 *
 * Ownership and threads: sx_tok_load returns a tokenizer the caller frees with
 * sx_tok_free.  After loading, a tokenizer is immutable and every function
 * here may be called on it from many threads at once. */
#ifndef SX_TOKENIZER_H
#define SX_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"

typedef struct sx_tokenizer sx_tokenizer;

/* A growable array of token ids, owned by the caller: zero-initialise it,
 * pass it to functions that append, release with sx_ids_free. */
typedef struct sx_ids {
    int32_t *v;
    size_t n, cap;
} sx_ids;
int sx_ids_push(sx_ids *ids, int32_t id);
void sx_ids_free(sx_ids *ids);

/* A growable byte buffer with the same conventions (always NUL-terminated
 * after a successful append, the NUL not counted in n). */
typedef struct sx_bytes {
    char *v;
    size_t n, cap;
} sx_bytes;
int sx_bytes_append(sx_bytes *b, const void *data, size_t n);
void sx_bytes_free(sx_bytes *b);

enum {
    SX_TOK_SPECIAL = 1u << 0, /* recognise added tokens in the text */
    SX_TOK_LOSSY = 1u << 1,   /* invalid UTF-8 -> U+FFFD instead of SX_EUTF8 */
};

/* Chooses the tokenizer file: explicit_path if non-NULL, else
 * <model_dir>/tokenizer.json if model_dir is non-NULL and it exists, else
 * <shared_dir>/qwen3-tokenizer/tokenizer.json where shared_dir is the
 * argument, or $STRUX_SHARED, or "../shared".  Writes the path to out. */
int sx_tok_resolve_path(const char *explicit_path, const char *model_dir, const char *shared_dir,
                        char *out, size_t out_cap, sx_error *err);

/* Loads tokenizer.json.  Corrupt or unsupported files (not BPE, unknown
 * pre-tokenizer, bad merges) give SX_EFORMAT / SX_EUNSUPPORTED naming what
 * is wrong. */
int sx_tok_load(const char *path, sx_tokenizer **out, sx_error *err);
void sx_tok_free(sx_tokenizer *tok);

/* Appends the ids of text[0..len) to *out. */
int sx_tok_encode(const sx_tokenizer *tok, const char *text, size_t len, unsigned flags,
                  sx_ids *out, sx_error *err);

/* Appends the raw bytes of the ids to *out (special tokens as their text).
 * An id outside [0, vocab size) is SX_EINVAL. */
int sx_tok_decode(const sx_tokenizer *tok, const int32_t *ids, size_t n, sx_bytes *out,
                  sx_error *err);

/* Streaming decode: feed ids one at a time; only complete UTF-8 sequences
 * are appended to *out, a token that ends mid-character is held back until
 * the next one completes it.  sx_detok_finish flushes what is left (an
 * incomplete tail becomes U+FFFD).  Zero-initialise the state. */
typedef struct sx_detok {
    unsigned char pending[8];
    int npending;
} sx_detok;
int sx_detok_push(const sx_tokenizer *tok, sx_detok *st, int32_t id, sx_bytes *out,
                  sx_error *err);
int sx_detok_finish(sx_detok *st, sx_bytes *out);

/* For the grammar engine. */
int32_t sx_tok_vocab_size(const sx_tokenizer *tok); /* ids known to the tokenizer: 151669 */
int32_t sx_tok_n_rows(const sx_tokenizer *tok);     /* model logit rows: 151936 for Qwen3 */
void sx_tok_set_n_rows(sx_tokenizer *tok, int32_t rows); /* from config.json's vocab_size */
/* Raw bytes of a token (not the byte-level alias characters); NULL for ids
 * out of range.  The pointer lives as long as the tokenizer. */
const char *sx_tok_bytes(const sx_tokenizer *tok, int32_t id, size_t *len);
/* 1 for added tokens (special or not: <|im_end|>, <think>, ...). */
int sx_tok_is_added(const sx_tokenizer *tok, int32_t id);
/* Id of an exact vocabulary piece or added-token content, else -1. */
int32_t sx_tok_find(const sx_tokenizer *tok, const char *text, size_t len);
/* The piece as written in tokenizer.json (byte-level alias form). */
const char *sx_tok_piece(const sx_tokenizer *tok, int32_t id);

#endif
