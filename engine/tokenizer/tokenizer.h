/* sx_tok: the Qwen3 tokenizer -- byte-level BPE loaded from a Hugging Face
 * tokenizer.json, exact to Hugging Face `tokenizers`.
 *
 * Contract of engine/tokenizer/: BPE, pre-tokenizer, added tokens, decoding,
 * the chat template and the grammar vocabulary of a tokenizer; depends on
 * common/ and grammar/vocab/.
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
 * subsequence by U+FFFD (SX_TOK_REPLACEMENT, the Unicode/WHATWG "maximal
 * subpart" rule, as Python's errors="replace") before encoding.
 *
 * Supported files: model BPE over byte-level pieces (no dropout, no subword
 * prefix/suffix), normalizer NFC or none, pre-tokenizer ByteLevel or
 * Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)], decoder
 * ByteLevel, added tokens without lstrip/rstrip/single_word/normalized.
 * The post-processor is ignored: encode never adds BOS/EOS by itself.
 * Anything else is refused at load (SX_EUNSUPPORTED with the JSON Pointer)
 * rather than tokenized approximately.
 *
 * Exactness notes: Hugging Face splits with Oniguruma (Unicode 16 tables)
 * and normalises with an older Unicode table; PCRE2 10.42 and utf8proc 2.8
 * differ on a few hundred code points, so the pattern's \s, \p{L}, \p{N}
 * are widened and NFC is split around a few marks to match (see
 * tokenizer_pretok.c, tokenizer_text.c).  Every code point has been checked
 * in several contexts against tokenizers 0.23.
 *
 * Ownership and threads: sx_tok_load returns a tokenizer the caller frees with
 * sx_tok_free.  After loading, a tokenizer is logically immutable (only
 * internal caches change, lock-free, never the results) and every function
 * here except sx_tok_set_n_rows may be called on it from many threads at
 * once.  A Qwen3 tokenizer takes about 20 MiB (8 MiB of it a word cache). */
#ifndef SX_TOKENIZER_H
#define SX_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"
#include "grammar/vocab/vocab.h"

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

/* What SX_TOK_LOSSY (and streaming decode) put in place of invalid bytes. */
#define SX_TOK_REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD, UTF-8 */

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
/* The same from tokenizer.json's contents in memory (not kept after the
 * call).  Errors carry err->pointer and, for JSON syntax, err->offset. */
int sx_tok_load_mem(const char *json, size_t len, sx_tokenizer **out, sx_error *err);
void sx_tok_free(sx_tokenizer *tok); /* NULL is fine */

/* Appends the ids of text[0..len) to *out (Hugging Face's
 * encode(text, add_special_tokens=False)).  On error *out is unchanged. */
int sx_tok_encode(const sx_tokenizer *tok, const char *text, size_t len, unsigned flags,
                  sx_ids *out, sx_error *err);

/* Appends the raw bytes of the ids to *out (added tokens as their text).
 * The bytes may end mid-character or be invalid UTF-8 if the ids are.
 * An id outside [0, vocab size) is SX_EINVAL and leaves *out unchanged. */
int sx_tok_decode(const sx_tokenizer *tok, const int32_t *ids, size_t n, sx_bytes *out,
                  sx_error *err);

/* Streaming decode: feed ids one at a time; only complete UTF-8 sequences
 * are appended to *out, a token that ends mid-character is held back until
 * the next one completes it, and bytes that cannot become valid UTF-8 are
 * replaced by U+FFFD, so *out is always valid UTF-8.  sx_detok_finish
 * flushes what is left (an incomplete tail becomes U+FFFD) and resets the
 * state.  For ids whose sx_tok_decode is valid UTF-8 the concatenated
 * output equals it.  Zero-initialise the state; one state per stream. */
typedef struct sx_detok {
    unsigned char pending[8];
    int npending;
} sx_detok;
int sx_detok_push(const sx_tokenizer *tok, sx_detok *st, int32_t id, sx_bytes *out,
                  sx_error *err);
int sx_detok_finish(sx_detok *st, sx_bytes *out);

/* For the grammar engine. */
int32_t sx_tok_vocab_size(const sx_tokenizer *tok); /* ids known to the tokenizer: 151669 */
/* Model logit rows: the vocab size until sx_tok_set_n_rows is given
 * config.json's vocab_size (151936 for Qwen3); never below the vocab size
 * (a smaller value is raised to it).  Not thread-safe: set it before
 * sharing the tokenizer. */
int32_t sx_tok_n_rows(const sx_tokenizer *tok);
void sx_tok_set_n_rows(sx_tokenizer *tok, int32_t rows);
/* Raw bytes of a token (not the byte-level alias characters), followed by
 * a NUL not counted in *len; NULL for ids out of range or unused.  The
 * pointer lives as long as the tokenizer. */
const char *sx_tok_bytes(const sx_tokenizer *tok, int32_t id, size_t *len);
/* 1 for added tokens (special or not: <|im_end|>, <think>, ...). */
int sx_tok_is_added(const sx_tokenizer *tok, int32_t id);
/* 1 for added tokens marked "special" (<|im_end|>, not <think>). */
int sx_tok_is_special(const sx_tokenizer *tok, int32_t id);
/* Id of the token whose raw bytes (or added-token content) are exactly
 * text[0..len), else -1.  " the" finds the piece written "Ġthe". */
int32_t sx_tok_find(const sx_tokenizer *tok, const char *text, size_t len);
/* The piece as written in tokenizer.json (byte-level alias form for model
 * tokens, the content for added tokens); NULL for ids out of range. */
const char *sx_tok_piece(const sx_tokenizer *tok, int32_t id);

/* ==== Chat template (chat.c, chat_json.c) ==== */

/* sx_chat: Qwen3's chat template with thinking disabled.
 *
 * Renders messages the way Hugging Face transformers'
 * apply_chat_template(messages, add_generation_prompt=True,
 * enable_thinking=False) does with Qwen3's template (no tools): the
 * assistant turn is opened and pre-filled with "<think>\n\n</think>\n\n".
 *
 * Encoding: template structure (<|im_start|>, <|im_end|>, <think>,
 * </think>, and <tool_response> for tool messages) becomes added-token ids;
 * message contents are always plain text, so a message cannot inject special
 * tokens.  Plain stretches are joined with the template text around them
 * before tokenizing, which gives the ids Hugging Face produces for the
 * rendered string whenever contents hold no added-token text (where they
 * do, Hugging Face would turn that text into control tokens; this does not,
 * on purpose).  The rendered text is identical either way.
 *
 * Thread safety: all functions may run concurrently; sx_chat_encode only
 * reads the tokenizer. */

typedef struct sx_chat_msg {
    const char *role;    /* "system", "user", "assistant" or "tool" */
    const char *content; /* UTF-8, NUL-terminated */
} sx_chat_msg;

/* Appends the rendered prompt text to *out.  add_generation_prompt opens the
 * assistant turn (with the empty think block).  As in the template, a first
 * system message becomes the system turn and a later one a turn of its own;
 * an assistant message's "<think>...</think>" part is kept only after the
 * last user turn, and consecutive tool messages share one user turn.
 * No messages, an unknown role (the template would drop it silently) or
 * content that is not valid UTF-8 is SX_EINVAL / SX_EUTF8, and *out is left
 * unchanged. */
int sx_chat_render(const sx_chat_msg *msgs, size_t n, int add_generation_prompt, sx_bytes *out,
                   sx_error *err);

/* Appends the prompt's ids to *out (see the encoding note above); on
 * error *out is unchanged. */
int sx_chat_encode(const sx_tokenizer *tok, const sx_chat_msg *msgs, size_t n,
                   int add_generation_prompt, sx_ids *out, sx_error *err);

/* Parses a JSON array of {"role","content"} objects (or an object with a
 * "messages" array) into msgs that point into *owner; free with
 * sx_chat_msgs_free.  Content must be a string; "tool_calls" and
 * "reasoning_content" are SX_EUNSUPPORTED (the template would render them,
 * this code does not); other members are ignored.  Roles are checked when
 * rendering.  Errors carry a JSON Pointer to the offending member. */
int sx_chat_parse_json(const char *json, size_t len, sx_chat_msg **msgs, size_t *n, void **owner,
                       sx_error *err);
void sx_chat_msgs_free(sx_chat_msg *msgs, void *owner);

/* ==== The grammar vocabulary of a tokenizer (tok_vocab.c) ==== */

/* sx_tok_vocab: the grammar engine's per-tokenizer tables built from a
 * loaded tokenizer (raw token bytes, added tokens marked as non-text,
 * <|im_end|> and <|endoftext|> as the end-of-turn tokens). */

/* The vocab copies what it needs; free it with sx_vocab_free. */
int sx_tok_make_vocab(const sx_tokenizer *tok, sx_vocab **out, sx_error *err);

#endif
