/* sx_rpc protocol: the request and response messages of strux's service
 * (docs/PROTOCOL.md is the user-facing description; keep the two in step).
 *
 * A request is one JSON object: an `id`, at most one constraint (`schema`,
 * `choices`, `regex` or `json_object: true`; none = free text), the input as
 * `messages` or as a `document` (+ optional `instruction` / `system`), and
 * sampling fields.  sx_rpc_req_parse checks every field -- type, range,
 * unknown names -- and reports the first problem with a JSON Pointer into
 * the request, so a client always learns which field was wrong.
 *
 * Responses are built here too: a success carries the parsed `output`, the
 * exact `text`, `finish_reason`, `usage`, `timing` and (choices) `scores`;
 * an error is {ok:false, id, error:{code, message, pointer}} with one of the
 * stable codes below.
 *
 * Ownership: a parsed sx_rpc_req keeps the parsed JSON document alive and
 * points into it; release everything with sx_rpc_req_free.  Builders return
 * malloc'd text the caller frees.  Every function is thread-safe (no shared
 * state). */
#ifndef SX_RPC_PROTOCOL_H
#define SX_RPC_PROTOCOL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/sampler/sampler.h"

/* Stable error codes (their names are the wire format). */
typedef enum sx_rpc_code {
    SX_RPC_OK = 0,
    SX_RPC_BAD_REQUEST,        /* malformed JSON, wrong type, unknown field, bad value */
    SX_RPC_SCHEMA_UNSUPPORTED, /* a valid schema (or regex) strux cannot enforce exactly */
    SX_RPC_SCHEMA_INVALID,     /* the schema or regex itself is malformed */
    SX_RPC_TOO_LARGE,          /* request, schema, prompt or max_tokens over a limit */
    SX_RPC_OVERLOADED,         /* queue full or server shutting down: retry later */
    SX_RPC_TIMEOUT,            /* the request's deadline passed */
    SX_RPC_INCOMPLETE,         /* max_tokens ran out before a valid document could close */
    SX_RPC_CANCELLED,          /* the client went away (logged; nobody to answer) */
    SX_RPC_INTERNAL,
    SX_RPC_CODE_COUNT
} sx_rpc_code;

/* "bad_request", ...; never NULL. */
const char *sx_rpc_code_name(int code);
/* HTTP status for a code: 400, 422, 422, 413, 503, 504, 422, 499, 500. */
int sx_rpc_http_status(int code);

/* Which step an sx_error came from, for sx_rpc_code_of. */
enum { SX_RPC_STAGE_PARSE, SX_RPC_STAGE_COMPILE, SX_RPC_STAGE_RUN };
/* Maps an sx_code met at a stage to the protocol code: SX_ELIMIT is
 * too_large everywhere; while compiling SX_EUNSUPPORTED is
 * schema_unsupported and other input errors schema_invalid; SX_ENOMEM and
 * SX_EINTERNAL are internal. */
int sx_rpc_code_of(int stage, int code);

typedef enum sx_rpc_mode {
    SX_RPC_TEXT = 0,       /* no constraint */
    SX_RPC_SCHEMA,
    SX_RPC_CHOICES,
    SX_RPC_REGEX,
    SX_RPC_JSON_OBJECT
} sx_rpc_mode;

/* "text", "schema", "choices", "regex", "json_object". */
const char *sx_rpc_mode_name(int mode);

/* `n`: choices per request, 1..SX_RPC_MAX_N.  Choice i samples with
 * seed + i; all share one prefill of the prompt (sx_gen_params.fork_of). */
#define SX_RPC_MAX_N 16

/* Beam search (num_beams > 0): engine/beam.h's search, transformers'
 * generate(num_beams, do_sample=False) semantics; n is then
 * num_return_sequences (1..num_beams, at most SX_RPC_MAX_N). */
#define SX_RPC_MAX_BEAMS 16

typedef struct sx_rpc_limits {
    size_t max_request_bytes;  /* whole request body (default 4 MiB) */
    size_t max_schema_bytes;   /* schema as canonical JSON (default 256 KiB) */
    int    max_tokens;         /* cap on max_tokens (default 4096) */
    int    default_max_tokens; /* when the request has none (default 512) */
    int    max_choices;        /* labels (default 256) */
    size_t max_label_bytes;    /* one label (default 256) */
    int    max_messages;       /* default 256 */
    double max_timeout_s;      /* cap on timeout (default 600) */
} sx_rpc_limits;

void sx_rpc_limits_default(sx_rpc_limits *l);

/* A request's own layout of the output (`layout`): each part the request
 * sets replaces the server's (its --max-ws / --indent / --property-order).
 * Zeroed: the server's layout throughout. */
enum { SX_RPC_LAY_WS = 1, SX_RPC_LAY_MAXWS = 2, SX_RPC_LAY_INDENT = 4, SX_RPC_LAY_ORDER = 8 };
typedef struct sx_rpc_layout {
    int has;        /* SX_RPC_LAY_* bits: which parts below are set */
    int ws_mode;    /* an sx_gr_ws (grammar/grammar.h) */
    int max_ws;     /* 0..64 */
    int indent;     /* 1..16 */
    int prop_order; /* 0 or 1 */
} sx_rpc_layout;

typedef struct sx_rpc_req {
    json_t       *root;          /* the parsed request; everything below points into it */
    const json_t *id;            /* borrowed from root; NULL when absent */
    int           mode;          /* sx_rpc_mode */
    const json_t *schema;        /* SCHEMA: the schema (object or boolean) */
    const char  **choices;       /* CHOICES: labels (owned array, strings in root) */
    size_t        n_choices;
    const char   *regex;         /* REGEX: the pattern */
    size_t        regex_len;
    char         *key;           /* canonical constraint text (cache key), owned; "" for TEXT */
    size_t        key_len;
    sx_chat_msg  *msgs;          /* `messages` (owned array, strings in root), or NULL */
    size_t        n_msgs;
    const char   *document;      /* `document` form: the text, else NULL */
    size_t        document_len;
    const char   *instruction;   /* optional task sentence for the default prompt */
    const char   *system;        /* optional full system message (replaces the default) */
    sx_sampling   sampling;
    int           max_tokens;
    int           n;             /* choices to generate, 1..SX_RPC_MAX_N (1 for CHOICES) */
    int           speculate;     /* -1: the server's default; else sx_gen_speculate */
    int           num_beams;     /* 0 = no beam search, else 1..SX_RPC_MAX_BEAMS */
    float         length_penalty; /* beam search (default 1) */
    int           early_stopping; /* beam search: an sx_beam_early (default false) */
    int           logprobs;      /* 1: report per-token log-probs */
    int           field_confidence; /* 1: report confidence per field (sx_rpc_field_confidence) */
    int           top_logprobs;  /* 0..SX_SAMPLER_MAX_TOPN alternatives per token */
    int           scores;        /* CHOICES: compute label probabilities (default 1) */
    double        timeout_s;     /* 0 = the server's default */
    int           stream;        /* OpenAI route: answer with server-sent events */
    int           stream_usage;  /* OpenAI route: stream_options.include_usage */
    const char   *model;         /* OpenAI route: the `model` asked for (echoed) */
    const char   *prompt;        /* /v1/completions: the raw prompt (no chat template) */
    size_t        prompt_len;
    int           completion;    /* /v1/completions: answer as a text_completion */
    int           tool_call;     /* OpenAI route: the answer is a forced tool call (the
                                  * constraint is {"name", "arguments"} of the tools) */
    int           tool_auto;     /* OpenAI route, tool_choice "auto": free text or calls,
                                  * each call held to the constraint from its <tool_call> on */
    int           tool_none;     /* tools shown, tool_choice "none": <tool_call> never written */
    int           one_call;      /* parallel_tool_calls: false (at most one call) */
    int           thinking;      /* free reasoning in <think>...</think> before the answer */
    int           think_budget;  /* ... at most this many tokens of it (0 = max_tokens bounds it) */
    sx_rpc_layout layout;        /* `layout` (native) or `strux.layout` (OpenAI) */
    const char   *constraint_at; /* OpenAI route: JSON Pointer of the constraint's source
                                  * (static text; compile errors are rooted there), or NULL */
    json_t       *keep;          /* strings made while parsing (joined content parts) */
    int32_t      *bias_ids;      /* logit_bias (owned; sampling.bias_* point here) */
    float        *bias_vals;
} sx_rpc_req;

/* Parses and checks a request.  On error returns SX_EFORMAT / SX_EINVAL
 * (bad_request) or SX_ELIMIT (too_large) with err->pointer naming the field
 * and *out zeroed (nothing to free).  On success the caller frees *out with
 * sx_rpc_req_free. */
int  sx_rpc_req_parse(const char *buf, size_t len, const sx_rpc_limits *lim, sx_rpc_req *out,
                      sx_error *err);
/* The same from a JSON value (a new reference to it is kept). */
int  sx_rpc_req_from_json(json_t *root, const sx_rpc_limits *lim, sx_rpc_req *out,
                          sx_error *err);
void sx_rpc_req_free(sx_rpc_req *r);

/* Fills the constraint fields of r (mode, schema / choices / regex, key)
 * from a value already checked by the caller; used by sx_rpc_req_parse and
 * the OpenAI route.  `at` is the JSON Pointer for errors. */
int  sx_rpc_req_set_schema(sx_rpc_req *r, const json_t *schema, const sx_rpc_limits *lim,
                           const char *at, sx_error *err);

/* The same for labels (`choices`: distinct strings) and a regular
 * expression (a string), at the JSON Pointer `at`. */
int  sx_rpc_req_set_choices(sx_rpc_req *r, const json_t *v, const sx_rpc_limits *lim,
                            const char *at, sx_error *err);
int  sx_rpc_req_set_regex(sx_rpc_req *r, const json_t *v, const sx_rpc_limits *lim,
                          const char *at, sx_error *err);

/* `logit_bias` ({"TOKEN_ID": value in [-100, 100]}, OpenAI's form, at
 * most 1024 entries) and the OpenAI penalties presence_penalty /
 * frequency_penalty ([-2, 2]) from obj into r->sampling (see
 * engine/sampler/sampler.h for what they do); `at` is obj's JSON Pointer.
 * Call once mode, n and num_beams are known: they do not apply to labels
 * (whose scores are the model's own) nor to beam search.  Token ids are
 * checked against the vocabulary by the server. */
int  sx_rpc_req_set_penalties(sx_rpc_req *r, const json_t *obj, const char *at, sx_error *err);

/* `speculate`: "off", "ngram", "draft", or a boolean (true = the server's
 * default mode, false = off) into r->speculate.  Same output either way;
 * only the speed changes (engine/generate.h). */
int  sx_rpc_req_set_speculate(sx_rpc_req *r, const json_t *v, const char *at, sx_error *err);
/* `layout` (an object, at JSON Pointer `at`) into r->layout:
 *   "whitespace": "flexible" (a run of up to max_ws blanks between tokens),
 *                 "compact" (none) or "indent" (JSON.stringify(v, null, indent))
 *   "max_ws": 0..64 (flexible; alone it means flexible)
 *   "indent": 1..16 (alone it means "indent")
 *   "property_order": "schema" (members in `properties` order) or "any"
 * Unknown members and contradictions are errors naming the member.  Only
 * constrained requests take a layout (free text has none). */
int  sx_rpc_req_set_layout(sx_rpc_req *r, const json_t *v, const char *at, sx_error *err);
/* `field_confidence` (a boolean) into r->field_confidence, once the mode,
 * logprobs, beams and stream are parsed: refused for free text and regex
 * (their output is not JSON), with beam search (no per-token log-probs)
 * and with stream (the fields come with the whole answer). */
int  sx_rpc_req_set_field_confidence(sx_rpc_req *r, const json_t *v, const char *at,
                                     sx_error *err);
/* Reads the beam-search options num_beams, length_penalty,
 * num_return_sequences (into r->n) and early_stopping from obj (the
 * request, or the OpenAI route's `strux` object; `at` is its JSON Pointer)
 * once sampling, n, logprobs and the mode are parsed; refuses them with
 * sampling, n > 1, logprobs or choices, and the others without num_beams. */
int  sx_rpc_req_set_beams(sx_rpc_req *r, const json_t *obj, const char *at, sx_error *err);

/* Checks a `messages` array (role system/user/assistant, content a
 * string) into r->msgs.  strict: other members of a message are errors.
 * !strict (the OpenAI route): `name` is accepted (not shown to the model,
 * as in Qwen3's template), `developer` is read as `system`, `tool` messages
 * (with tool_call_id) and an assistant's tool_calls render as Qwen3's
 * template renders them, a content may also be an array of
 * {"type":"text","text":...} parts, which are joined; other members are
 * errors unless null or empty.  Made text is kept alive in r. */
int  sx_rpc_req_set_messages(sx_rpc_req *r, const json_t *messages, const sx_rpc_limits *lim,
                             int strict, const char *at, sx_error *err);

/* The chat messages a request is run as.  `messages` requests give their
 * own; `document` requests get the default extraction prompt (see
 * docs/PROTOCOL.md): a system message -- `system` if given, else the
 * instruction (or the default one) followed by the constraint shown
 * compactly -- and the document as the user turn.  *msgs (owned array) and
 * *owned (text) are freed by the caller with free(); the message strings
 * point into r and *owned. */
int  sx_rpc_build_messages(const sx_rpc_req *r, sx_chat_msg **msgs, size_t *n, char **owned,
                           sx_error *err);

/* The prompt of r in token ids, as the server runs it: sx_rpc_build_messages
 * through Qwen3's chat template (assistant turn opened, thinking off).
 * *prefix_len receives the tokens of a leading system turn up to its
 * <|im_end|> (what requests with the same instructions and constraint
 * share, sx_gen_params.prefix_len), 0 when there is none.  out is cleared
 * first; the caller frees it (sx_ids_free) on success and on error. */
int  sx_rpc_prompt_encode(const sx_tokenizer *tok, const sx_rpc_req *r, sx_ids *out,
                          int *prefix_len, sx_error *err);

/* The default instruction of document requests, by mode. */
const char *sx_rpc_default_instruction(int mode);

/* One choice of a request with n > 1, for the response builders. */
typedef struct sx_rpc_choice {
    const char   *text;          /* exact text, NUL-terminated */
    size_t        text_len;
    const json_t *output;        /* parsed value (borrowed), NULL = JSON null */
    const char   *finish_reason;
    int           n_completion, n_forced;
    const json_t *logprobs;      /* borrowed, or NULL */
    const double *score;         /* beam search: the sequence's score, else NULL */
    const json_t *field_confidence; /* borrowed, or NULL */
    /* thinking / tool_choice "auto": the parts of text.  reasoning: inside
     * <think>...</think> (NULL = no thinking); content: the answer without
     * reasoning and calls (NULL = text itself).  With tool_choice "auto",
     * output is the array of calls [{"name", "arguments"}, ...]. */
    const char   *reasoning;
    size_t        reasoning_len;
    const char   *content;
    size_t        content_len;
} sx_rpc_choice;

/* The outcome of a finished generation, for sx_rpc_response_dump.  With
 * n > 1, `choices` holds every choice (choices[i] has index i), text /
 * output / finish_reason / logprobs are choice 0's and the token counts
 * are the request's: the prompt once, completion and forced tokens summed
 * over the choices. */
typedef struct sx_rpc_result {
    const char   *text;          /* generated text (exact), NUL-terminated */
    size_t        text_len;
    const json_t *output;        /* parsed value (borrowed), NULL = JSON null */
    const char   *finish_reason; /* "stop", "length", ... */
    int           n_prompt, n_completion, n_forced;
    double        queue_ms, compile_ms, ttft_ms, tpot_ms, total_ms;
    const double *scores;        /* CHOICES with scores: per label, NULL otherwise */
    const json_t *logprobs;      /* array built by the server (borrowed) or NULL */
    int           cache_hit;     /* the constraint came from the compiled-schema cache */
    int           n_cached;      /* prompt tokens the prefix cache gave (not run) */
    const sx_rpc_choice *choices; /* n > 1 or beam search: n_choices entries; else NULL */
    int           n_choices;
    const json_t *field_confidence; /* choice 0's (borrowed), or NULL */
    const char   *reasoning;     /* choice 0's parts (sx_rpc_choice) */
    size_t        reasoning_len;
    const char   *content;
    size_t        content_len;
} sx_rpc_result;

/* Reads a request's JSON text (duplicate keys refused) into *root: numbers
 * jansson cannot hold are read too, and refused only where they stand --
 * a top-level integer beyond 64 bits (id, seed, ...), or a number whose
 * digits a double cannot hold exactly (a schema's const/enum/bounds) --
 * with the member's JSON Pointer.  See protocol_req.c. */
int sx_rpc_load_json(const char *buf, size_t len, json_t **root, sx_error *err);
/* Its number check alone, for a schema read with sx_numjson_loadb into
 * (schema, t) -- a schema file (strux check, compile): a number is refused,
 * with its JSON Pointer (`at` + the path inside schema), only where a
 * double cannot hold it exactly, as in a request's schema. */
struct sx_numtab;
int sx_rpc_check_schema_numbers(const json_t *schema, const struct sx_numtab *t, const char *at,
                                sx_error *err);

/* Turns finished text into the response's `output`: parses it as JSON for
 * schema / json_object / choices (the label string), wraps it as a string
 * for regex, null for text; then re-checks it: `validator` (schema mode, may
 * be NULL), an object (json_object), one of the labels (choices).  Returns
 * SX_OK with *output a new reference (NULL for text) or SX_EFORMAT when the
 * text is not a valid document (message says why). */
struct sx_validator;
int  sx_rpc_check_output(const sx_rpc_req *r, const char *text, size_t len,
                         const struct sx_validator *validator, json_t **output, sx_error *err);

/* The JSON of an output value v parsed from `text`, written compactly with
 * the numbers exactly as the model wrote them (digits, exponent and all);
 * malloc'd, or NULL.  Every route writes `output` with it. */
char *sx_rpc_output_json(const json_t *v, const char *text, size_t len);

/* o written (reals at SX_RPC_JSON_PRECISION), then each JSON string
 * marks[i] (present once) replaced by sx_rpc_output_json(vals[i], texts[i],
 * lens[i]); a NULL vals[i] is skipped.  Takes o; *out is malloc'd. */
int sx_rpc_dump_with_outputs(json_t *o, char (*marks)[80], const json_t *const *vals,
                             const char *const *texts, const size_t *lens, int n, char **out,
                             size_t *len);

/* Reals in responses are written with 15 significant digits (timings and
 * scores read as 0.059, not 0.058999999999999997), except inside `output`,
 * whose numbers carry every digit their double needs to round-trip (the
 * value the validator checked); `text` is always the exact generated text,
 * numbers included. */
#define SX_RPC_JSON_PRECISION JSON_REAL_PRECISION(15)

/* Serialises a success response; *out is malloc'd, NUL-terminated.  With
 * res->n_choices > 1 (or any choices, from a beam search) it adds
 * "choices": [{index, output, text, finish_reason, usage:
 * {completion_tokens, forced_tokens}, logprobs, score (beam search)}]. */
int  sx_rpc_response_dump(const sx_rpc_req *r, const sx_rpc_result *res, char **out, size_t *len);
/* Serialises {ok:false, id, error:{code, message, pointer}}; id may be NULL
 * (JSON null) and pointer NULL or "" (omitted).  `extra` (may be NULL) is an
 * object whose members are copied in (text, usage of an incomplete run). */
int  sx_rpc_error_dump(const json_t *id, int code, const char *message, const char *pointer,
                       const json_t *extra, char **out, size_t *len);

/* ---- the OpenAI dialect (POST /v1/chat/completions) ------------------------
 * Request: model, messages (content strings or text parts), response_format
 * {"type":"text"|"json_object"}, {"type":"json_schema","json_schema":
 * {"name","schema","strict","description"}}, {"type":"regex","regex":P} or
 * {"type":"choice","choice":[labels]}; vLLM's guided_json, guided_regex,
 * guided_choice and structured_outputs {json|regex|choice} (at most one
 * constraint in all); max_tokens or max_completion_tokens, temperature
 * (default 1), top_p, seed, stream, stream_options.include_usage, logprobs,
 * top_logprobs, n (1..16), stop (with a constraint: never cuts the
 * document, see docs/PROTOCOL.md), logit_bias, presence_penalty,
 * frequency_penalty (sx_rpc_req_set_penalties); extensions top_k, min_p,
 * repetition_penalty, timeout, speculate and `strux` {num_beams, ...}.
 * Nothing is ignored: an unknown member anywhere (strux's included) is
 * bad_request naming it; tools + tool_choice as in sx_rpc_openai_tools;
 * members strux knows but does not act on (functions, best_of,
 * reasoning_effort, guided_grammar, ...) are refused naming them, unless
 * they carry the value that asks for nothing; a short allow-list of
 * members with no effect on the answer (user, metadata, store, service_tier,
 * ...; docs/PROTOCOL.md) is accepted.  Errors as in sx_rpc_req_parse;
 * schema errors point into the constraint's source (r->constraint_at). */
int  sx_rpc_openai_parse(const char *buf, size_t len, const sx_rpc_limits *lim, sx_rpc_req *out,
                         sx_error *err);
/* `tools` and `tool_choice` of an OpenAI request (protocol_tools.c), once
 * its messages and constraint are parsed: renders the tools into the system
 * turn as Qwen3's chat template does (r->msgs[0]; a system message is added
 * when there is none) and, for tool_choice "required" or a named function,
 * sets the constraint to a call of one of them ({"name": NAME, "arguments":
 * <that tool's parameters>}, anyOf over the tools) with r->tool_call = 1.
 * The server then opens the answer with "<tool_call>\n".  tool_choice
 * "auto" (the default with tools): the same constraint with r->tool_auto =
 * 1 -- the model writes free text or calls, each call constrained from its
 * <tool_call> on (engine/generate.h, sx_gen_freepre); "none": r->tool_none
 * (the tools are shown, <tool_call> is never written);
 * parallel_tool_calls: false sets r->one_call. */
int  sx_rpc_openai_tools(sx_rpc_req *r, const json_t *root, const sx_rpc_limits *lim,
                         sx_error *err);
/* An assistant turn's tool_calls (OpenAI's [{"id","type":"function",
 * "function":{"name","arguments"}}]) appended to its content as Qwen3's
 * chat template writes them ("<tool_call>\n{\"name\": ..., \"arguments\":
 * ...}\n</tool_call>", arguments as sent when a string); *out is kept
 * alive in r.  `at` is the JSON Pointer of the array. */
int  sx_rpc_render_tool_calls(sx_rpc_req *r, const char *content, const json_t *calls,
                              const char *at, const char **out, sx_error *err);
/* POST /v1/completions: the same members as chat completions, but a raw
 * `prompt` (a string, or an array holding one string; tokenized as text,
 * added tokens such as <|im_start|> recognised, no chat template) instead
 * of messages and tools; `echo`, `suffix`, `logprobs` and `stream` are
 * refused (not yet).  r->completion = 1. */
int  sx_rpc_openai_completion_parse(const char *buf, size_t len, const sx_rpc_limits *lim,
                                    sx_rpc_req *out, sx_error *err);
/* Where a compile error's pointer is rooted in an OpenAI request. */
#define SX_RPC_OPENAI_SCHEMA_AT "/response_format/json_schema/schema"

/* chat.completion object.  cid: "chatcmpl-..."; model: echoed name.  One
 * entry in `choices` per choice (res->choices when n_choices > 1).  For
 * r->completion, a text_completion ("cmpl-..." id, choices[].text). */
int  sx_rpc_openai_response_dump(const sx_rpc_req *r, const char *cid, long created,
                                 const char *model, const sx_rpc_result *res, char **out,
                                 size_t *len);
/* One chat.completion.chunk as an SSE event ("data: {...}\n\n") for the
 * choice `index`.  role_first adds the assistant role to the delta;
 * finish_reason NULL for content chunks; usage (may be NULL) makes the
 * usage-only last chunk. */
int  sx_rpc_openai_chunk_dump(const char *cid, long created, const char *model, int index,
                              const char *content, size_t content_len, int role_first,
                              const char *finish_reason, const sx_rpc_result *usage, char **out,
                              size_t *len);
/* The same with the delta given (taken): {"reasoning_content": ...} or
 * {"tool_calls": [...]}. */
int  sx_rpc_openai_delta_dump(const char *cid, long created, const char *model, int index,
                              json_t *delta, int role_first, char **out, size_t *len);
/* The id of call k of choice i in an answer: the same streamed or not. */
void sx_rpc_openai_call_id(const char *cid, int i, int k, char *out, size_t cap);
/* One tool call {"id","type","function":{"name","arguments"}} from a
 * call's value {"name", "arguments"} (arguments written as JSON text);
 * NULL when it has no name (or memory). */
json_t *sx_rpc_openai_tool_call(const char *cid, int i, int k, const json_t *call);

/* {"error":{"message","type","param","code"}}. */
int  sx_rpc_openai_error_dump(int code, const char *message, const char *pointer, char **out,
                              size_t *len);

/* ---- confidence per field (rpc/field_conf.c) --------------------------------
 * For every leaf value of a JSON output (string, number, true/false/null,
 * and an empty object or array) its JSON Pointer and what the model chose
 * for it: `logprob`, the summed log-probability of the sampled tokens that
 * wrote any of its bytes (a string's quotes included), each under the
 * grammar's mask (log-softmax over the allowed tokens only); tokens the
 * grammar forced (one continuation) are left out: the model chose nothing
 * there.  `alternatives`: 1 - p of the first sampled token of the value,
 * the mass the model put on other allowed continuations at the value's
 * first decision; `tokens`: the sampled tokens counted.  A value written by
 * forced tokens only has logprob 0, alternatives 0, tokens 0.  docs/
 * PROTOCOL.md says what this does and does not mean. */
typedef struct sx_rpc_tok_span {
    size_t start, end;   /* the bytes of the output text this token's piece wrote */
    float  logprob;      /* under the mask; ignored when forced */
    int    forced;
} sx_rpc_tok_span;

/* text: the output (complete JSON); toks in the order generated (pieces
 * concatenated give text).  *out: a new JSON array of {"pointer",
 * "logprob", "alternatives", "tokens"} in document order.  SX_EFORMAT when
 * text is not one JSON value, SX_ELIMIT past 1000 levels of nesting. */
int  sx_rpc_field_confidence(const char *text, size_t len, const sx_rpc_tok_span *toks,
                             size_t n_toks, json_t **out, sx_error *err);
/* The lowest exp(logprob) over the fields of a field_confidence array (1
 * when it has none): what --review-below compares. */
double sx_rpc_field_confidence_min(const json_t *fields);

#endif
