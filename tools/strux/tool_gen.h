/* One reply from a model on a chosen backend: what `strux chat --reply` and
 * `strux demo --model` share, so both run on --device cpu|cuda[:N] through
 * the engine interface (engine/backend.h) like `strux generate` does. */
#ifndef STRUX_TOOL_GEN_H
#define STRUX_TOOL_GEN_H

#include <jansson.h>

#include "engine/sampler/sampler.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/grammar.h"

typedef struct tool_gen_req {
    const char        *cmd;        /* "chat": messages read "strux chat: ..." */
    const char        *model_dir;
    const char        *device;     /* "cpu", "cuda" or "cuda:N" */
    int                n_threads;  /* CPU threads, 0 = all */
    const sx_chat_msg *msgs;       /* the conversation; an assistant turn is opened */
    size_t             n_msgs;
    const sx_grammar  *grammar;    /* NULL = free text */
    sx_sampling        sampling;
    int                max_tokens;
} tool_gen_req;

/* The reply: its text and token ids (freed by tool_gen_out_free), how it
 * ended (sx_finish) and the backend's one-line description. */
typedef struct tool_gen_out {
    sx_bytes text;
    sx_ids   ids;
    int      finish;
    char     backend[128];
} tool_gen_out;

/* Checks r->device (before any load), loads the model, opens the backend,
 * encodes the messages with tok's chat template and generates one reply.
 * Prints "strux CMD: ..." on failure.  0 on success, 1 on a failure at run
 * time, 2 on a malformed device, and 1 for a CUDA device in a build without
 * CUDA (the line says so). */
int  tool_gen_reply(const tool_gen_req *r, const sx_tokenizer *tok, tool_gen_out *out);
void tool_gen_out_free(tool_gen_out *out);

/* Re-checks text against schema with the independent validator and prints
 * its verdict ("validator: valid" or why not) to stderr; 1 when valid. */
int  tool_gen_validate(const json_t *schema, const sx_bytes *text);

#endif
