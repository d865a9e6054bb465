/* sx_vocab: the per-tokenizer tables of the grammar engine, built once and
 * shared read-only by every grammar, matcher and thread.
 *
 * Contract of grammar/vocab/ (the token trie); depends on common/ only.
 *
 * Tokens are given as raw byte strings (not byte-level alias text).  The
 * vocabulary is laid out as a trie in preorder: node i has one byte, the
 * token id that ends there (or -1) and `next`, the index just past its
 * subtree, so a mask walk is a linear scan that skips a whole subtree when
 * a byte is rejected.
 *
 * Ownership: sx_vocab_new copies what it needs; free with sx_vocab_free. */
#ifndef SX_VOCAB_H
#define SX_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "common/sx_error.h"

typedef struct sx_vocab_node {
    uint32_t next;   /* index just past this node's subtree */
    int32_t token;   /* token whose bytes end here, or -1 */
    uint8_t byte;    /* the byte on the edge into this node */
    uint8_t depth;   /* 1 for children of the root */
    uint16_t _pad;
} sx_vocab_node;

#define SX_VOCAB_N_LP 3
#define SX_VOCAB_SHORT 16

typedef struct sx_vocab {
    int32_t n_tokens;      /* ids the tokenizer knows (151669 for Qwen3) */
    int32_t n_rows;        /* model logit rows (151936); ids >= n_tokens never allowed */
    int32_t mask_words;    /* ceil(n_rows / 32) */
    int32_t n_eos;         /* end-of-document tokens allowed only when complete */
    int32_t eos[4];
    sx_vocab_node *nodes;  /* nodes[0] is the root; preorder */
    uint32_t n_nodes;
    const uint8_t **tok_bytes; /* per token: its raw bytes (into an owned pool) */
    uint32_t *tok_len;
    uint8_t *is_special;   /* per token: 1 = never produced by grammar text (added tokens) */
    uint8_t *pool;
    uint32_t max_token_len;

    /* String-content fast path.  A "plain" token is one or more complete
     * UTF-8 characters none of which is '"', '\\' or a control character:
     * inside a JSON string it only adds characters, so whether it is allowed
     * depends on nothing but the room left.  plain_le[L] (mask_words words
     * each, L = 0..max_plain_cp) holds the plain tokens of at most L code
     * points; the other tokens live in their own trie (np_nodes). */
    uint32_t *plain_le;
    int32_t max_plain_cp;
    int32_t max_plain_bytes; /* the longest plain token's length in bytes */
    int16_t *plain_cp;     /* per token: code points if plain, else -1 */
    sx_vocab_node *np_nodes;
    uint32_t n_np_nodes;
    /* Near a string's maximum length the automaton's plain mask is exact
     * only for the plain tokens of a few code points: lp_nodes[k] holds
     * the tokens that are not plain or are plain with more than lp_cp[k]
     * code points (lp_cp ascending), the rest of the walk there. */
    /* The plain tokens longer than SX_VOCAB_SHORT bytes, as a trie: a
     * string automaton's plain mask is the short tokens' part (shared by
     * states alike to that depth) plus a walk of this small trie. */
    sx_vocab_node *long_nodes;
    uint32_t n_long_nodes;
    sx_vocab_node *lp_nodes[SX_VOCAB_N_LP];
    uint32_t n_lp_nodes[SX_VOCAB_N_LP];
    int32_t lp_cp[SX_VOCAB_N_LP];

    /* Inside a string with no automaton and no maximum length, a token that
     * holds no '"' is allowed exactly when its bytes are valid string
     * content (escapes, UTF-8 that may stop mid-character): free_str marks
     * those (beyond the plain ones) by how many characters they start (a
     * maximum length allows a token exactly when that count fits), and only
     * tokens holding a '"' need a walk, over their own trie (q_nodes). */
    uint32_t *free_le;     /* free_le[L]: such tokens that start at most L characters */
    int32_t max_free_starts;
    sx_vocab_node *q_nodes;
    uint32_t n_q_nodes;
    /* The non-plain tokens with no '"' (np_nodes without q_nodes): inside
     * string content they cannot end the string, so interpretations alike
     * but for their parents take them alike. */
    sx_vocab_node *nq_nodes;
    uint32_t n_nq_nodes;
    /* The same for an object key that may be any additional name (no key
     * automaton; escapes decoded, no surrogates), so key_free marks
     * the non-plain tokens with no '"' whose bytes are valid key content
     * from a character boundary (they may stop inside an escape or a
     * character), spelled canonically (sx_gr_esc: short escapes but \/,
     * \u00xx lowercase for the other control characters); key_free_any
     * the same for SX_ESC_ANY (any escape). */
    uint32_t *key_free;
    uint32_t *key_free_any;
    /* The tokens whose bytes, read as string content from a character
     * boundary up to their first '"', hold a surrogate escape (a pair's
     * high half): free_le and the split quote tokens count them as
     * content, which only SX_ESC_ANY takes. */
    uint32_t *str_pair;

    /* The tokens holding a '"' split at their first one, P '"' S.  In a
     * string with no automaton (or an additional key) at a character
     * boundary, P is content and the quote closes the value: the state
     * after it does not depend on P, so the tokens are decided by whether
     * P is valid content of a fitting length and S may follow that state
     * -- S walked once over the trie of the distinct suffixes, not once
     * per P.  sq_* lists the tokens whose P ends outside an escape, sorted
     * by S: sq_tok, sq_schars (characters P starts as string content, -1
     * if invalid), sq_kchars (the same as additional-key content; -1 also
     * when S holds a '"', which could reach the keys used), sq_plen (bytes
     * of P).  sfx_nodes: the trie of the distinct non-empty S, whose node
     * `token` is the suffix's id (1..); entries of suffix id k are
     * sq_*[sfx_first[k] .. sfx_first[k + 1]), id 0 the empty S.  The other
     * quote tokens (P ends inside an escape, so the quote is content) are
     * walked: qs_nodes for strings, qk_nodes (also those whose S holds a
     * '"') for keys. */
    sx_vocab_node *sfx_nodes;
    uint32_t n_sfx_nodes;
    uint32_t n_sfx;        /* distinct suffixes, the empty one included */
    uint32_t *sfx_first;   /* n_sfx + 1 */
    int32_t *sq_tok;
    int16_t *sq_schars, *sq_kchars;
    uint8_t *sq_plen;
    uint32_t n_sq;
    sx_vocab_node *qs_nodes, *qk_nodes;
    uint32_t n_qs_nodes, n_qk_nodes;
} sx_vocab;

/* bytes[i]/lens[i] for i < n_tokens are the raw bytes of token i;
 * special[i] != 0 marks tokens (added/control tokens) that the grammar
 * never allows as text; eos lists up to 4 end-of-turn ids. */
int sx_vocab_new(int32_t n_tokens, int32_t n_rows, const uint8_t *const *bytes,
                 const uint32_t *lens, const uint8_t *special, const int32_t *eos, int n_eos,
                 sx_vocab **out, sx_error *err);
void sx_vocab_free(sx_vocab *v);

#endif
