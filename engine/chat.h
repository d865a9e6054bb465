/* sx_chat: Qwen3's chat template with thinking disabled.
 *
 * Renders messages the way Hugging Face transformers'
 * apply_chat_template(messages, add_generation_prompt=True,
 * enable_thinking=False) does with Qwen3's template (no tools): the
 * assistant turn is opened and pre-filled with "<think>\n\n</think>\n\n".
 *
 * Encoding: template structure (<|im_start|>, <|im_end|>, <think>,
 * </think>) becomes special ids; message contents are always plain text, so
 * a message cannot inject special tokens.  Plain stretches are joined with
 * the template text around them before tokenizing, which gives the ids
 * Hugging Face produces for the rendered string whenever contents hold no
 * special-token text. */
#ifndef SX_CHAT_H
#define SX_CHAT_H

#include <stddef.h>

#include "common/sx_error.h"
#include "engine/tokenizer.h"

typedef struct sx_chat_msg {
    const char *role;    /* "system", "user" or "assistant" */
    const char *content; /* UTF-8, NUL-terminated */
} sx_chat_msg;

/* Appends the rendered prompt text to *out.  add_generation_prompt opens the
 * assistant turn (with the empty think block).  Unknown roles, or a system
 * message anywhere but first, are SX_EINVAL. */
int sx_chat_render(const sx_chat_msg *msgs, size_t n, int add_generation_prompt, sx_bytes *out,
                   sx_error *err);

/* Appends the prompt's ids to *out (see the encoding note above). */
int sx_chat_encode(const sx_tokenizer *tok, const sx_chat_msg *msgs, size_t n,
                   int add_generation_prompt, sx_ids *out, sx_error *err);

/* Parses a JSON array of {"role","content"} objects (or an object with a
 * "messages" array) into msgs that point into *owner; free with
 * sx_chat_msgs_free. */
int sx_chat_parse_json(const char *json, size_t len, sx_chat_msg **msgs, size_t *n, void **owner,
                       sx_error *err);
void sx_chat_msgs_free(sx_chat_msg *msgs, void *owner);

#endif
