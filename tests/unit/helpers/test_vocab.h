/* A synthetic vocabulary for grammar tests: every single byte, a set of
 * multi-byte JSON-ish tokens, and an end-of-turn token. */
#ifndef TEST_VOCAB_H
#define TEST_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "grammar/vocab/vocab.h"

sx_vocab *tv_small_vocab(void);
/* Every single byte, the NULL-terminated multi-byte tokens given, and an
 * end-of-turn token (the last id). */
sx_vocab *tv_vocab_with(const char *const *multi);
int32_t tv_byte_token(const sx_vocab *v, uint8_t b);
const uint8_t *tv_token_bytes(const sx_vocab *v, int32_t t, size_t *len);

#endif
