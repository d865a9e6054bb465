/* sx_tok_vocab: the grammar engine's per-tokenizer tables built from a
 * loaded tokenizer (raw token bytes, added tokens marked as non-text,
 * <|im_end|> and <|endoftext|> as the end-of-turn tokens). */
#ifndef SX_TOK_VOCAB_H
#define SX_TOK_VOCAB_H

#include "common/sx_error.h"
#include "engine/tokenizer.h"
#include "grammar/vocab.h"

/* The vocab copies what it needs; free it with sx_vocab_free. */
int sx_tok_make_vocab(const sx_tokenizer *tok, sx_vocab **out, sx_error *err);

#endif
