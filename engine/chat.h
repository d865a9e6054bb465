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
#ifndef SX_CHAT_H
#define SX_CHAT_H

#include <stddef.h>

#include "common/sx_error.h"
#include "engine/tokenizer.h"

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

#endif
