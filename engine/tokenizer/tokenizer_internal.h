/* Internal to the tokenizer's files (engine/tokenizer*.c, engine/bpe*.c).
 * Nothing outside engine/ includes this; the public API is tokenizer.h. */
#ifndef SX_TOKENIZER_INTERNAL_H
#define SX_TOKENIZER_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/sx_utf8.h"
#include "engine/tokenizer/tokenizer.h"

/* Ids above this are refused at load: no real vocabulary comes near it, and
 * it bounds what a corrupt file can make us allocate. */
#define SX_TOK_MAX_ID (1 << 21)

/* ---- byte-level alias tables (tokenizer_bytelevel.c) --------------------
 * GPT-2's byte-level BPE writes byte b as a printable code point alias[b]
 * (33..126, 161..172, 174..255 stand for themselves, the rest map to 256+). */
typedef struct sx_bytelevel {
    uint16_t alias[256]; /* byte -> code point */
    int16_t rev[324];    /* code point -> byte, -1 if not an alias */
} sx_bytelevel;
void sx_bl_init(sx_bytelevel *bl);
/* Converts an alias piece to raw bytes in out (capacity >= len); returns the
 * byte count, or -1 if the piece holds a character that is not an alias. */
long sx_bl_decode(const sx_bytelevel *bl, const char *piece, size_t len, char *out);

/* ---- hash maps and the BPE merge loop (bpe_map.c, bpe.c) ----------------- */
typedef struct sx_merge_slot {
    uint64_t key; /* (left << 32) | right; UINT64_MAX = empty */
    uint32_t rank;
    int32_t id; /* token the pair merges into */
} sx_merge_slot;

typedef struct sx_vocab_slot {
    uint32_t hash;
    int32_t id; /* -1 = empty */
} sx_vocab_slot;

/* Word cache (bpe_cache.c): pre-token bytes -> ids, shared between threads,
 * lock-free.  A slot is one seqlock over atomics (128 bytes). */
#define SX_WC_MAXW 48   /* longest word cached, bytes */
#define SX_WC_MAXIDS 16 /* most ids cached for a word */
typedef struct sx_wcache_slot {
    _Atomic uint64_t seq, meta;
    _Atomic uint64_t word[SX_WC_MAXW / 8];
    _Atomic uint64_t ids[SX_WC_MAXIDS / 2];
} sx_wcache_slot;
typedef struct sx_wcache {
    sx_wcache_slot *slots;
    size_t mask;
} sx_wcache;
int sx_wcache_init(sx_wcache *c, unsigned log2_slots);
void sx_wcache_fini(sx_wcache *c);
/* Copies the cached ids of w into ids (room for SX_WC_MAXIDS); returns
 * their count, or -1 on a miss. */
int sx_wcache_get(const sx_wcache *c, uint64_t h, const unsigned char *w, size_t n, int32_t *ids);
void sx_wcache_put(const sx_wcache *c, uint64_t h, const unsigned char *w, size_t n, const int32_t *ids,
                   size_t nids);

typedef struct sx_bpe {
    int32_t byte_id[256]; /* single-byte tokens */
    sx_merge_slot *merges;
    uint64_t merge_mask;
    unsigned merge_shift; /* 64 - log2(slots): hash uses the top bits */
    size_t n_merges;
    sx_vocab_slot *vocab; /* raw bytes of model tokens -> id */
    uint64_t vocab_mask;
    /* borrowed from the tokenizer: raw bytes of each id */
    const char *bytes;
    const uint32_t *off, *len;
    int32_t n_ids;
    /* Per id, whether encoding the token's own bytes gives back that single
     * token: 0 not known yet, 1 yes, 2 no.  Filled lazily by encoders; racing
     * writers store the same value, so the tokenizer stays logically
     * immutable and safe to share between threads. */
    _Atomic uint8_t *memo;
    int ignore_merges;
    /* Two different pairs merge into the same token: Hugging Face's
     * stale-entry check then depends on its heap order, so only the heap
     * merge loop (which mirrors it) may be used. */
    int ambiguous;
    uint8_t *produced; /* load-time only: ids some merge produces */
    sx_wcache cache;
} sx_bpe;

uint64_t sx_hash_bytes(const void *p, size_t n);
int sx_bpe_init(sx_bpe *b, int32_t n_ids, size_t n_vocab, size_t n_merges);
void sx_bpe_fini(sx_bpe *b);
/* Adds raw bytes -> id (bytes must already sit in b->bytes at off[id]);
 * returns SX_EFORMAT on a duplicate byte string. */
int sx_bpe_add_vocab(sx_bpe *b, int32_t id);
int32_t sx_bpe_find(const sx_bpe *b, const void *p, size_t n);
int32_t sx_bpe_find_h(const sx_bpe *b, const void *p, size_t n, uint64_t h); /* h: sx_hash_bytes */
/* Records merge (left, right) -> id with the given rank; a repeated pair
 * keeps the later rank, as Hugging Face does. */
void sx_bpe_add_merge(sx_bpe *b, int32_t left, int32_t right, int32_t id, uint32_t rank);
static inline const sx_merge_slot *sx_bpe_merge(const sx_bpe *b, int32_t l, int32_t r)
{
    uint64_t key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
    uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> b->merge_shift;
    for (;;) {
        const sx_merge_slot *s = &b->merges[i & b->merge_mask];
        if (s->key == key)
            return s;
        if (s->key == UINT64_MAX)
            return NULL;
        i++;
    }
}

/* Scratch for the merge loop, owned by one encode call. */
typedef struct sx_bpe_scratch {
    int32_t *sym;
    int32_t *prev, *next;
    uint32_t *size;
    struct sx_bpe_heap_item *heap;
    size_t cap, heap_cap;
} sx_bpe_scratch;
void sx_bpe_scratch_free(sx_bpe_scratch *s);

/* Appends the ids of one pre-token (raw bytes) to out. */
int sx_bpe_word(const sx_bpe *b, const unsigned char *w, size_t n, sx_bpe_scratch *s,
                sx_ids *out);
/* The two merge loops, exposed for the test that proves them equal. */
int sx_bpe_merge_heap(const sx_bpe *b, const unsigned char *w, size_t n, sx_bpe_scratch *s,
                      sx_ids *out);
int sx_bpe_merge_scan(const sx_bpe *b, const unsigned char *w, size_t n, sx_bpe_scratch *s,
                      sx_ids *out);

/* ---- added tokens (tokenizer_added.c) ------------------------------------ */
typedef struct sx_added_tok {
    int32_t id;
    uint32_t len;
    const char *text; /* points into the tokenizer's byte blob */
} sx_added_tok;

typedef struct sx_added {
    sx_added_tok *v; /* sorted by first byte, then longest first */
    size_t n;
    uint16_t first[257]; /* v[first[c] .. first[c+1]) start with byte c */
} sx_added;
/* Builds the index from the tokenizer's added ids. */
int sx_added_build(sx_added *a, const sx_tokenizer *tok, sx_error *err);
void sx_added_fini(sx_added *a);
/* Leftmost-longest match in text[from..len): returns its start (or len when
 * there is none) and sets *tok_out. */
size_t sx_added_next(const sx_added *a, const char *text, size_t len, size_t from,
                     const sx_added_tok **tok_out);

/* ---- text: UTF-8 checks, lossy repair, NFC (tokenizer_text.c) ------------ */
/* sx_utf8_check and sx_utf8_bad_len: common/sx_utf8.h */
/* Copies s to *out replacing each maximal invalid subpart with U+FFFD. */
int sx_utf8_repair(const char *s, size_t len, sx_bytes *out);

typedef struct sx_nfc {
    uint8_t inert[0x10000 / 8]; /* BMP code points that NFC never touches */
} sx_nfc;
void sx_nfc_init(sx_nfc *t);
/* 1 if the valid UTF-8 text is certainly already NFC (quick check). */
int sx_nfc_quick(const sx_nfc *t, const char *s, size_t len);
/* NFC of valid UTF-8: *out is a fresh malloc'd buffer (caller frees). */
int sx_nfc_apply(const char *s, size_t len, char **out, size_t *out_len);

/* ---- pre-tokenizer (tokenizer_pretok.c) ----------------------------------- */
typedef struct sx_pretok {
    pcre2_code *re;
    int jit;
    int fast; /* the pattern is Qwen's: sx_pretok_fast may take matches */
} sx_pretok;
extern const char sx_pretok_qwen_pattern[];
/* End of the match of Qwen's split regex at s[i] when ASCII alone decides
 * it, else 0 (ask PCRE2).  tokenizer_pretok_fast.c */
size_t sx_pretok_fast(const char *s, size_t len, size_t i);
/* Compiles the split regex from tokenizer.json (after rewriting \s and \S
 * to Oniguruma's White_Space set, see the .c file). */
int sx_pretok_compile(sx_pretok *p, const char *pattern, size_t len, sx_error *err);
void sx_pretok_fini(sx_pretok *p);
/* Calls fn for each pre-token of s[0..len) in order (matches and the gaps
 * between them, "Isolated" behaviour). */
typedef int (*sx_pretok_fn)(void *ctx, const char *w, size_t n);
int sx_pretok_run(const sx_pretok *p, pcre2_match_data *md, const char *s, size_t len,
                  sx_pretok_fn fn, void *ctx);

/* ---- the tokenizer ---------------------------------------------------------- */
enum { SX_KIND_NONE = 0, SX_KIND_MODEL = 1, SX_KIND_ADDED = 2, SX_KIND_SPECIAL = 4 };

struct sx_tokenizer {
    int32_t n_ids;  /* max id + 1 */
    int32_t n_rows; /* model logit rows, >= n_ids */
    char *bytes;    /* raw bytes of every id, each NUL-terminated */
    uint32_t *off, *len;
    char *pieces; /* as written in the file, NUL-terminated */
    uint32_t *poff;
    uint8_t *kind; /* SX_KIND_* per id */
    int nfc;       /* normalizer is NFC (else none) */
    sx_bytelevel bl;
    sx_bpe bpe;
    sx_added added;
    sx_pretok pre;
    sx_nfc nfc_tab;
};

#endif
