/* sx_rpc: a tool call's arguments streamed as they are written.
 *
 * OpenAI streams a call as delta.tool_calls chunks: the first carries the
 * call's id, type and name (arguments ""), the later ones only `index` and
 * a fragment of the arguments' JSON text, which clients concatenate.  The
 * model writes the call as Qwen3 does, {"name": NAME, "arguments": ARGS},
 * one token at a time; this scanner reads that text as it grows and says
 * when the name is known and which bytes belong to ARGS.
 *
 * The grammar guarantees the call's shape, so the scanner only tracks
 * nesting and strings; it does not validate.  ARGS may come before the
 * name (a layout with free member order): the caller holds its bytes until
 * the name is known.  When the text is not what it expects, it gives up
 * (fallback): the caller then sends the call whole, once it is closed.
 * Plain data; no allocation but the caller's frag. */
#ifndef SX_RPC_TOOL_STREAM_H
#define SX_RPC_TOOL_STREAM_H

#include <stddef.h>

#include "engine/tokenizer/tokenizer.h"

#define SX_RPC_CALLSCAN_RAW 400 /* a name's or key's literal, escapes included */

typedef struct sx_rpc_callscan {
    int    state;         /* where in the outer object (tool_stream.c) */
    int    which;         /* the value being read: 0 other, 1 name, 2 arguments */
    int    vdepth;        /* nesting inside the value */
    int    in_str, esc;   /* inside a string of the value or key; after a backslash */
    char   raw[SX_RPC_CALLSCAN_RAW];
    size_t n_raw;         /* a key's or the name's literal so far */
    int    raw_over;      /* ... longer than raw holds */
    char   name[72];      /* the name, once read (have_name) */
    int    have_name;
    int    args_begun;    /* the arguments' first byte was seen */
    int    args_done;     /* ... and their last */
    int    fallback;      /* gave up: send the call whole at its close */
} sx_rpc_callscan;

/* A fresh scanner for one call's text (what follows its <tool_call>). */
void sx_rpc_callscan_init(sx_rpc_callscan *c);

/* Feeds the next n bytes of the call's text.  The bytes among them that
 * belong to the arguments' text are appended to *frag (the caller owns it;
 * SX_ENOMEM when that fails, SX_OK otherwise).  c->have_name turns 1 once
 * the name's value has been read. */
int sx_rpc_callscan_feed(sx_rpc_callscan *c, const char *p, size_t n, sx_bytes *frag);

#endif
