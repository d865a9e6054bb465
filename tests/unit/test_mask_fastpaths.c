/* The mask fast paths against the reference walk (gr_fill_mask_reference)
 * on schemas made to exercise each one:
 *  - plain masks shared by automaton states the plain walk cannot tell
 *    apart (gr_strx_equiv.c): unanchored patterns, counted repetitions up
 *    to and at their bound, fixed lengths, key automata; the short
 *    tokens' part shared at their depth, the long tokens walked;
 *  - near a patterned string's maximum length, the short plain tokens
 *    from the automaton's mask and the others walked (lp_nodes), also
 *    below its minimum when the length sets are dense;
 *  - listed property names while a key is typed (gr_keymask.c): with and
 *    without additional keys, beside patternProperties/propertyNames, with
 *    names already used, required and maxProperties;
 *  - a bounded key language with keys already used, where no state ahead
 *    can run out of new keys within a token (gr_keyauto_none_all_seen);
 *  - inside string literals of enums and consts (gr_lits_plain).
 * The vocabulary has multi-byte plain tokens that span names, words and
 * word boundaries, so that one token can cross the points where states
 * part.  Every prefix of each document is checked byte by byte, then
 * seeded random walks through the mask. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/gr_internal.h"
#include "grammar/grammar.h"
#include "grammar/vocab/vocab.h"
#include "tests/unit/helpers/test_vocab.h"

static sx_vocab *V;

static const char *const multi[] = {
    "{\"", "\":", "\": ", "\",", "\", \"", "\"}", "},", "}}", "\"]", ", ", ": ", "true", "null",
    "12", "\\n", "al", "alp", "alpha", "alpine", "alps", "ha", "ine", "pha", "be", "beta", "ta",
    "x-", "x-a", "x-ab", "-a", "abc", "abcdef", "0123456789ab", "ab", "cd", "ef", "f0", "a ",
    " a", "a a", "a a a", "a a a a a", "word", "word ", " word", "aaaa", "aaaaaaaa", "  ", "\"alpha",
    "\"beta\":", "\"x-", "alpha\":", "gamma", "gam", "ma", "\xc3\xa9", "\xc3\xa9t\xc3\xa9",
    /* longer than SX_VOCAB_SHORT bytes: the long tokens' walk */
    "aaaaaaaaaaaaaaaaaaaa", "word word word word ", "a a a a a a a a", "a a a a a a a a a a a", "0123456789abcdef0123",
    NULL};

static int setup(void **state)
{
    (void)state;
    V = tv_vocab_with(multi);
    return V ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sx_vocab_free(V);
    return 0;
}

typedef struct mcase {
    const char *schema;
    const char *docs[4]; /* documents whose every prefix is checked */
} mcase;

static const mcase cases[] = {
    /* plain-mask sharing: search semantics (every state alive) */
    {"{\"type\":\"string\",\"pattern\":\"[0-9a-f]+\"}", {"\"0123456789abcdef0\"", "\"zz-f\""}},
    /* counted words: states part only near the bound, and at it */
    {"{\"type\":\"string\",\"pattern\":\"^(?:\\\\S+\\\\s+){0,3}\\\\S+$\"}",
     {"\"a a a a\"", "\"word word word word\"", "\"aaaaaaaa a\""}},
    {"{\"type\":\"string\",\"pattern\":\"^(?:\\\\S+\\\\s+){0,7}\\\\S+$\"}",
     {"\"a a a a a a a a\"", "\"a a a a a a a a a\""}},
    {"{\"type\":\"string\",\"pattern\":\"^[a-z]{12}$\"}", {"\"abcdefabcdef\""}},
    {"{\"type\":\"string\",\"pattern\":\"^(ab|cd)*ef$\"}", {"\"abcdabef\""}},
    /* near a maximum length: short plain tokens from the automaton's
     * mask, the longer ones walked (lp_nodes) */
    {"{\"type\":\"string\",\"pattern\":\"^(?:\\\\S+\\\\s+){0,5}\\\\S+$\",\"maxLength\":22}",
     {"\"a a a a a a\"", "\"word word aaaaaaaa\"", "\"aaaaaaaaaaaaaaaaaaaaaaaa\""}},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":\"[0-9a-f]+\","
     "\"minLength\":2,\"maxLength\":19}}",
     {"[\"0123456789abcdef012\", \"abcdef\"]", "[\"x\"]"}},
    /* below the minimum: dense length sets (every length from the
     * shortest completion on) and sets with gaps */
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":\"[0-9a-f]+\","
     "\"minLength\":12,\"maxLength\":12}}",
     {"[\"0123456789ab\", \"abcdefabcdef\"]"}},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":\"^(ab|cd)*$\","
     "\"minLength\":6,\"maxLength\":20}}",
     {"[\"abcdabcdab\", \"abcdef\"]"}},
    {"{\"type\":\"string\",\"pattern\":\"^((ab)*|x+)$\",\"minLength\":9,\"maxLength\":9}",
     {"\"xxxxxxxxx\"", "\"ab\""}},
    {"{\"type\":\"string\",\"pattern\":\"^(ab|cd)*(ef)?$\",\"maxLength\":17}",
     {"\"abcdabcdabcdabef\"", "\"abcdefabcdef\""}},
    /* listed names beside a key pattern, no other keys */
    {"{\"type\":\"object\",\"properties\":{\"alpha\":{\"type\":\"integer\"},\"alps\":{},"
     "\"alpine\":{\"type\":\"null\"},\"beta\":{}},\"patternProperties\":{\"^x-[a-z]+$\":{}},"
     "\"additionalProperties\":false}",
     {"{\"alpha\": 12, \"x-ab\": true, \"alps\": null}", "{\"alpine\": null, \"beta\": 1}"}},
    /* listed names only, one required, few properties */
    {"{\"type\":\"object\",\"properties\":{\"alpha\":{},\"alpine\":{},\"alps\":{},\"beta\":{},"
     "\"gamma\":{}},\"required\":[\"beta\"],\"maxProperties\":3,\"additionalProperties\":false}",
     {"{\"alpha\": 1, \"beta\": 2, \"gamma\": 3}", "{\"alpine\": 1, \"alps\": 2, \"beta\": 3}"}},
    /* listed names with any other key */
    {"{\"type\":\"object\",\"properties\":{\"alpha\":{\"type\":\"integer\"},\"alps\":{}},"
     "\"required\":[\"alpha\"]}",
     {"{\"alp\": 1, \"alpha\": 12, \"alpsx\": 2}"}},
    /* propertyNames: the key automaton and listed names together */
    {"{\"type\":\"object\",\"propertyNames\":{\"pattern\":\"^[a-z-]{2,6}$\"},"
     "\"properties\":{\"alpha\":{},\"alpine\":{}},\"maxProperties\":4}",
     {"{\"alpha\": 1, \"ab\": 2, \"alpine\": 3}"}},
    /* a bounded key language once keys are used: where every state ahead
     * has more completions than keys were used, the automaton's mask */
    {"{\"type\":\"object\",\"patternProperties\":{\"^ab\":{},\"^(cd|ef|cdef)$\":{}},"
     "\"additionalProperties\":false}",
     {"{\"cd\": 1, \"abcd\": 2, \"ababab\": 3, \"ef\": 4, \"cdef\": 5}",
      "{\"ab\": 1, \"abc\": 2, \"cd\": 3, \"cd\": 4}"}},
    /* string literals (enum, const) beside a free string and a pattern:
     * the literals' rest; a complete literal hands on to the object */
    {"{\"type\":\"object\",\"properties\":{\"k\":{\"enum\":[\"alpha\",\"alpine\",\"alps\",\"beta\",12]},"
     "\"j\":{\"anyOf\":[{\"enum\":[\"alpha\",\"gamma\"]},{\"type\":\"string\",\"maxLength\":7},"
     "{\"type\":\"string\",\"pattern\":\"^al\"}]},\"c\":{\"const\":\"word word\"}}}",
     {"{\"k\": \"alpha\", \"j\": \"alpine\", \"c\": \"word word\"}", "{\"j\": \"gamma\", \"k\": 12}",
      "{\"j\": \"alphabetical\", \"k\": \"alps\"}"}},
    /* literals as unique items: the walk decides */
    {"{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"enum\":[\"alpha\",\"alps\",\"beta\"]}}",
     {"[\"alpha\", \"alps\", \"beta\"]"}},
    /* a long bounded key: only its last states can run out of new keys
     * within a token's length (fin_near) */
    {"{\"type\":\"object\",\"patternProperties\":{\"^[a-z]{1,30}$\":{}},"
     "\"additionalProperties\":false}",
     {"{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": 1, \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": 2}", "{\"ab\": 1, \"abc\": 2, \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": 3}"}},
    /* overlapping oneOf branches: several interpretations in key names */
    {"{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"alpha\":{\"type\":\"integer\"}},"
     "\"required\":[\"alpha\"]},{\"type\":\"object\",\"properties\":{\"alpine\":{}},"
     "\"patternProperties\":{\"^al\":{\"type\":\"null\"}},\"required\":[\"alpine\"]}]}",
     {"{\"alpha\": 12}", "{\"alpine\": 1, \"alx\": null}"}},
    /* key pattern and names with a non-ASCII name */
    {"{\"type\":\"object\",\"properties\":{\"\xc3\xa9t\xc3\xa9\":{},\"et\":{}},"
     "\"patternProperties\":{\"^e\":{}},\"additionalProperties\":false}",
     {"{\"\xc3\xa9t\xc3\xa9\": 1, \"et\": 2, \"ex\": 3}"}},
};

static int check_mask(sx_matcher *m, uint32_t *mask, uint32_t *ref, int *n_allowed)
{
    assert_int_equal(sx_matcher_fill_mask(m, mask), 0);
    assert_int_equal(gr_fill_mask_reference(m, ref), 0);
    int na = 0;
    for (int32_t w = 0; w < V->mask_words; w++)
        na += __builtin_popcount(ref[w]);
    *n_allowed = na;
    return memcmp(mask, ref, (size_t)V->mask_words * sizeof *ref) == 0;
}

static void fast_masks_equal_reference(void **state)
{
    (void)state;
    uint32_t *mask = malloc((size_t)V->mask_words * sizeof *mask);
    uint32_t *ref = malloc((size_t)V->mask_words * sizeof *ref);
    int32_t *allowed = malloc((size_t)V->n_rows * sizeof *allowed);
    unsigned seed = 11;
    int checked = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        sx_grammar *g;
        sx_error err;
        json_error_t je;
        json_t *s = json_loads(cases[c].schema, 0, &je);
        assert_non_null(s);
        if (sx_gr_compile_json(V, s, NULL, &g, &err))
            fail_msg("case %zu: %s", c, err.msg);
        json_decref(s);
        /* every prefix of the documents, a byte at a time */
        for (int d = 0; d < 4 && cases[c].docs[d]; d++) {
            const char *doc = cases[c].docs[d];
            sx_matcher *m;
            assert_int_equal(sx_matcher_new(g, &m, NULL), 0);
            for (size_t i = 0;; i++) {
                int na;
                if (!check_mask(m, mask, ref, &na))
                    fail_msg("case %zu: fast mask differs after '%.*s'", c, (int)i, doc);
                checked++;
                if (!doc[i] || sx_matcher_accept_bytes(m, doc + i, 1, NULL))
                    break; /* an invalid document stops at its first bad byte */
            }
            sx_matcher_free(m);
        }
        /* random walks through the mask */
        for (int walk = 0; walk < 40; walk++) {
            sx_matcher *m;
            assert_int_equal(sx_matcher_new(g, &m, NULL), 0);
            for (int step = 0; step < 60; step++) {
                int na;
                if (!check_mask(m, mask, ref, &na))
                    fail_msg("case %zu: fast mask differs on walk %d step %d", c, walk, step);
                checked++;
                int k = 0;
                for (int32_t t = 0; t < V->n_rows; t++)
                    if (ref[t >> 5] >> (t & 31) & 1 && t != V->eos[0])
                        allowed[k++] = t;
                if (k == 0)
                    break;
                /* prefer multi-byte tokens: they cross state boundaries */
                int32_t t = allowed[rand_r(&seed) % (unsigned)k];
                if (t < 256 && rand_r(&seed) % 2)
                    t = allowed[rand_r(&seed) % (unsigned)k];
                assert_int_equal(sx_matcher_accept(m, t, NULL), 0);
            }
            sx_matcher_free(m);
        }
        sx_gr_free(g);
    }
    print_message("fast paths: %d masks equal to the reference\n", checked);
    free(mask);
    free(ref);
    free(allowed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fast_masks_equal_reference),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
