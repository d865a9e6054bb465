/* strux's side of the mask comparison against an independent engine
 * (bench/peers/mask_compare.py, dev-time): a line-oriented server on
 * stdin/stdout that compiles a schema, returns strux's full next-token
 * masks at chosen positions of a token sequence, and completes a token
 * prefix into a whole document (the witness the driver judges with Python
 * jsonschema).  Only grammar/grammar.h's public contract is used.
 *
 * Requests, one JSON object per line; every answer is one JSON line:
 *   {"op":"compile","schema":S,"ws":"compact"|"flexible","max_ws":N,"prop_order":0|1,
 *    "escapes":"canonical"|"any"}  (escapes: sx_gr_esc, default canonical)
 *        -> {"ok":1,"n_tokens":..,"mask_words":..} | {"ok":0,"error":"..."}
 *   {"op":"masks","tokens":[ids],"at":[positions]}
 *        -> {"ok":1,"accepted":A,"n":K} then K masks as raw bytes
 *           (mask_words little-endian uint32 each): the mask before
 *           tokens[p] for each p in "at" with p <= A, in the order given.
 *           A = how many tokens strux accepted (all of them, or the index
 *           of the first one it refused).
 *   {"op":"complete","tokens":[ids],"seed":N,"steps":M}
 *        -> {"ok":1,"doc":HEX} | {"ok":0,"error":"..."}: the bytes of the
 *           accepted tokens followed by a completion.  seed 0: the
 *           matcher's shortest completion; otherwise up to M random tokens
 *           drawn from strux's own masks (end-of-turn taken when allowed
 *           with probability 1/4), then the shortest completion from there.
 *
 * usage: bench_mask_peer [--tokenizer FILE]   (default
 *        $STRUX_SHARED/qwen3-tokenizer/tokenizer.json, else ../shared) */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sx_error.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/grammar.h"

#define PEER_COMPILE_MS 30000.0 /* a schema that compiles longer is declined */
#define PEER_COMPLETE_MS 10000.0
#define PEER_DOC_CAP (1u << 20)

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void reply(json_t *r)
{
    json_dumpf(r, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    fflush(stdout);
    json_decref(r);
}

static void reply_error(const char *msg)
{
    reply(json_pack("{s:i,s:s}", "ok", 0, "error", msg));
}

/* Feeds tokens[0..] until one is refused; returns how many were taken. */
static size_t feed(sx_matcher *m, const json_t *tokens)
{
    size_t i;
    json_t *t;
    sx_matcher_reset(m);
    json_array_foreach(tokens, i, t) {
        if (sx_matcher_accept(m, (int32_t)json_integer_value(t), NULL))
            return i;
    }
    return json_array_size(tokens);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void op_masks(sx_matcher *m, const sx_vocab *v, const json_t *req, uint32_t *mask)
{
    const json_t *tokens = json_object_get(req, "tokens"), *at = json_object_get(req, "at");
    size_t n = json_array_size(tokens), accepted = n, k = 0, i;
    json_t *p;
    /* first pass: how far strux goes, so the header can say how many masks follow */
    accepted = feed(m, tokens);
    json_array_foreach(at, i, p) {
        if ((size_t)json_integer_value(p) <= accepted)
            k++;
    }
    reply(json_pack("{s:i,s:I,s:I}", "ok", 1, "accepted", (json_int_t)accepted, "n",
                    (json_int_t)k));
    /* positions in the order given; replayed from the start each time they go back */
    size_t pos = 0;
    sx_matcher_reset(m);
    json_array_foreach(at, i, p) {
        size_t want = (size_t)json_integer_value(p);
        if (want > accepted)
            continue;
        if (want < pos) {
            sx_matcher_reset(m);
            pos = 0;
        }
        while (pos < want) {
            sx_matcher_accept(m, (int32_t)json_integer_value(json_array_get(tokens, pos)), NULL);
            pos++;
        }
        sx_matcher_fill_mask(m, mask);
        fwrite(mask, sizeof *mask, (size_t)v->mask_words, stdout);
    }
    fflush(stdout);
}

static int allowed(const uint32_t *mask, int32_t t)
{
    return mask[t >> 5] >> (t & 31) & 1;
}

static void op_complete(sx_matcher *m, const sx_vocab *v, const json_t *req, uint32_t *mask,
                        uint8_t *buf)
{
    const json_t *tokens = json_object_get(req, "tokens");
    uint64_t seed = (uint64_t)json_integer_value(json_object_get(req, "seed"));
    long steps = (long)json_integer_value(json_object_get(req, "steps"));
    size_t n = json_array_size(tokens), len = 0;
    if (feed(m, tokens) != n) {
        reply_error("strux refuses the prefix");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        int32_t t = (int32_t)json_integer_value(json_array_get(tokens, i));
        if (len + v->tok_len[t] > PEER_DOC_CAP) {
            reply_error("prefix too long");
            return;
        }
        memcpy(buf + len, v->tok_bytes[t], v->tok_len[t]);
        len += v->tok_len[t];
    }
    int ended = 0;
    if (seed) {
        uint64_t s = seed * 0x9E3779B97F4A7C15ull | 1;
        int32_t *cand = malloc((size_t)v->n_tokens * sizeof *cand);
        for (long step = 0; step < steps && !ended && cand; step++) {
            sx_matcher_fill_mask(m, mask);
            int can_end = 0;
            size_t nc = 0;
            for (int e = 0; e < v->n_eos; e++)
                can_end |= allowed(mask, v->eos[e]);
            if (can_end && rng_next(&s) % 4 == 0) {
                ended = 1;
                break;
            }
            for (int32_t t = 0; t < v->n_tokens; t++)
                if (allowed(mask, t) && !v->is_special[t])
                    cand[nc++] = t;
            if (!nc)
                break; /* only end-of-turn is left: the shortest completion is empty */
            int32_t t = cand[rng_next(&s) % nc];
            if (len + v->tok_len[t] > PEER_DOC_CAP || sx_matcher_accept(m, t, NULL))
                break;
            memcpy(buf + len, v->tok_bytes[t], v->tok_len[t]);
            len += v->tok_len[t];
        }
        free(cand);
    }
    if (!ended) {
        sx_matcher_set_bounds(m, now_ms() + PEER_COMPLETE_MS, NULL);
        size_t c = sx_matcher_shortest_completion(m, buf + len, PEER_DOC_CAP - len);
        sx_matcher_set_bounds(m, 0, NULL);
        if (c == (size_t)-1) {
            reply_error("no shortest completion");
            return;
        }
        len += c;
    }
    char *hex = malloc(2 * len + 1);
    for (size_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", buf[i]);
    hex[2 * len] = 0;
    reply(json_pack("{s:i,s:s}", "ok", 1, "doc", hex));
    free(hex);
}

int main(int argc, char **argv)
{
    const char *tok_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) {
            tok_path = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_mask_peer [--tokenizer FILE]\n");
            return 2;
        }
    }
    char def[1024];
    if (!tok_path) {
        const char *s = getenv("STRUX_SHARED");
        snprintf(def, sizeof def, "%s/qwen3-tokenizer/tokenizer.json", s && *s ? s : "../shared");
        tok_path = def;
    }
    sx_tokenizer *tok = NULL;
    sx_vocab *v = NULL;
    sx_error err;
    if (sx_tok_load(tok_path, &tok, &err)) {
        fprintf(stderr, "bench_mask_peer: %s\n", err.msg);
        return 1;
    }
    if (sx_tok_vocab_size(tok) == 151669 && sx_tok_n_rows(tok) < 151936)
        sx_tok_set_n_rows(tok, 151936);
    if (sx_tok_make_vocab(tok, &v, &err)) {
        fprintf(stderr, "bench_mask_peer: %s\n", err.msg);
        sx_tok_free(tok);
        return 1;
    }
    uint32_t *mask = malloc((size_t)v->mask_words * sizeof *mask);
    uint8_t *buf = malloc(PEER_DOC_CAP);
    sx_grammar *g = NULL;
    sx_matcher *m = NULL;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        json_error_t je;
        json_t *req = json_loads(line, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        const char *op = json_string_value(json_object_get(req, "op"));
        if (!op) {
            reply_error("bad request");
        } else if (!strcmp(op, "compile")) {
            sx_matcher_free(m);
            sx_gr_free(g);
            m = NULL;
            g = NULL;
            sx_gr_opts o;
            sx_gr_opts_default(&o);
            const char *ws = json_string_value(json_object_get(req, "ws"));
            if (ws && !strcmp(ws, "compact"))
                o.ws_mode = SX_WS_COMPACT;
            o.prop_order = json_is_true(json_object_get(req, "prop_order")) ||
                           json_integer_value(json_object_get(req, "prop_order")) != 0;
            const char *esc = json_string_value(json_object_get(req, "escapes"));
            if (esc && !strcmp(esc, "any"))
                o.escapes = SX_ESC_ANY;
            if (json_object_get(req, "max_ws"))
                o.max_ws = (int)json_integer_value(json_object_get(req, "max_ws"));
            o.deadline_ms = now_ms() + PEER_COMPILE_MS;
            sx_err_clear(&err);
            if (sx_gr_compile_json(v, json_object_get(req, "schema"), &o, &g, &err) ||
                sx_matcher_new(g, &m, &err)) {
                sx_gr_free(g);
                g = NULL;
                reply_error(err.msg);
            } else {
                sx_matcher_set_bounds(m, 0, NULL);
                reply(json_pack("{s:i,s:i,s:i}", "ok", 1, "n_tokens", v->n_tokens, "mask_words",
                                v->mask_words));
            }
        } else if (!m) {
            reply_error("no schema compiled");
        } else if (!strcmp(op, "masks")) {
            op_masks(m, v, req, mask);
        } else if (!strcmp(op, "complete")) {
            op_complete(m, v, req, mask, buf);
        } else {
            reply_error("unknown op");
        }
        json_decref(req);
    }
    free(line);
    sx_matcher_free(m);
    sx_gr_free(g);
    free(mask);
    free(buf);
    sx_vocab_free(v);
    sx_tok_free(tok);
    return 0;
}
