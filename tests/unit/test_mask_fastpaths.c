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
 *  - states no plain character can kill (gr_strx_universal.c): every
 *    plain token, checked against the vocabulary and random text;
 *  - inside string literals of enums and consts (gr_lits_plain), also as
 *    items that must differ from the earlier ones;
 *  - interpretations alike but for their parents (anyOf branches that
 *    reach one string through a $ref): tokens without a quote walked for
 *    one of each group, the closes of a group walked together;
 *  - in a string with no automaton or a key that may be any additional
 *    name: the tokens with no quote as blocks (free_le, key_free), those
 *    with one split at it (vocab.h, sq_*: content, then what follows the
 *    closing quote walked once), with lengths, names that such a token
 *    completes, keys already used, escapes before the quote, several
 *    interpretations, and a quote inside the rest.
 * A second test does the same on MaskBench schemas with the real Qwen3
 * vocabulary (../shared, STRUX_SHARED), the token positions of their
 * test documents.
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

#include "common/sx_pyjson.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar/match/match.h"
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
    /* quote tokens split at their first quote: content, then the rest */
    "ab\"", "alpha\"", "alpha\": ", "beta\": \"", "ab\": {\"", "\":\"", "\": {", "a\"}",
    "\\\"", "a\\\"", "\\\"\"", "\\n\"", "x\",", "a\", \"", "\xc3\xa9\"", "\\u00e9", "\\/", "a\\", "\"\"",
    "word\"]", "12\"", "\\\\\"", "ab\":\"cd\"", NULL};

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
    /* escape spellings (sx_gr_esc): free strings and additional keys take
     * their quote-free tokens as blocks (vocab.h key_free, key_free_any,
     * str_pair), which must match what the walk takes in each mode
     * ("any:" before a schema: compiled with SX_ESC_ANY) */
    {"any:{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}",
     {"{\"\\u0041\\u00e9\":\"\\ud83d\\ude00x\\u00E9\"}", "{\"a\\u0001\\/\":\"\\u001F\"}"}},
    {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}",
     {"{\"\\u0041\\u00e9\":\"\\ud83d\\ude00x\\u00E9\"}", "{\"a\\u0001\\n\":\"\\u001f\"}"}},
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
    /* one character short of the minimum: any plain token reaches it */
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":\"^(ab|cd|x)*$\",\"minLength\":2}}",
     {"[\"x\", \"abx\", \"xx\"]", "[\"abcd\", \"\"]"}},
    {"{\"type\":\"string\",\"pattern\":\"^(?:\\\\S+\\\\s+){0,3}\\\\S+$\",\"minLength\":1,\"maxLength\":30}",
     {"\"word word a\"", "\"\""}},
    /* two short: a one-character token may leave no long enough way */
    {"{\"type\":\"string\",\"pattern\":\"^(x|yy|abc|word)$\",\"minLength\":2}", {"\"yy\"", "\"abc\"", "\"x\""}},
    {"{\"type\":\"string\",\"pattern\":\"^(x|yy|abc|word)$\",\"minLength\":1}", {"\"word\"", "\"x\""}},
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
    /* free strings by the split: lengths, several interpretations */
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"minLength\":3,"
     "\"maxLength\":6},\"b\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"c\":{\"anyOf\":[{\"type\":\"string\",\"maxLength\":2},{\"type\":\"string\",\"minLength\":4}]}}}",
     {"{\"a\": \"alpha\", \"b\": [\"ab\", \"word\", \"\\\"\"], \"c\": \"ab\"}",
      "{\"c\": \"alpha\", \"a\": \"abc\\n\"}", "{\"b\": [\"\xc3\xa9\", \"12\"]}"}},
    /* additional keys by the split: listed names a token completes,
     * keys used, a name with a backslash, nested objects after the key */
    {"{\"type\":\"object\",\"properties\":{\"alpha\":{\"type\":\"integer\"},\"ab\":{\"type\":\"object\"},"
     "\"a\\\\\":{},\"beta\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":[\"string\",\"object\"]}}",
     {"{\"alpha\": 1, \"ab\": {\"ab\": \"cd\"}, \"abc\": \"x\", \"beta\": \"word\"}",
      "{\"a\\\\\": 1, \"x\": {}, \"\\\"\": \"\", \"\\n\": \"a\"}", "{\"word\": \"a\", \"word\": \"b\"}"}},
    /* a token that completes a listed name whose value takes what an
     * additional key's would not (the names decide) */
    {"{\"type\":\"object\",\"properties\":{\"alpha\":{\"type\":\"object\"},\"ab\":{\"type\":\"array\"}},"
     "\"additionalProperties\":{\"type\":\"string\"}}",
     {"{\"alpha\": {}, \"x\": \"a\", \"ab\": []}", "{\"ab\": {\"\": 1}}"}},
    /* more listed names than seen bits: keys recorded by their hashes */
    {"{\"type\":\"object\",\"properties\":{\"k00\":{},\"k01\":{},\"k02\":{},\"k03\":{},\"k04\":{},\"k05\":{},"
     "\"k06\":{},\"k07\":{},\"k08\":{},\"k09\":{},\"k10\":{},\"k11\":{},\"k12\":{},\"k13\":{},\"k14\":{},\"k15\":{},"
     "\"k16\":{},\"k17\":{},\"k18\":{},\"k19\":{},\"k20\":{},\"k21\":{},\"k22\":{},\"k23\":{},\"k24\":{},\"k25\":{},"
     "\"k26\":{},\"k27\":{},\"k28\":{},\"k29\":{},\"k30\":{},\"k31\":{},\"k32\":{},\"k33\":{},\"k34\":{},\"k35\":{},"
     "\"k36\":{},\"k37\":{},\"k38\":{},\"k39\":{},\"k40\":{},\"k41\":{},\"k42\":{},\"k43\":{},\"k44\":{},\"k45\":{},"
     "\"k46\":{},\"k47\":{},\"k48\":{},\"k49\":{},\"k50\":{},\"k51\":{},\"k52\":{},\"k53\":{},\"k54\":{},\"k55\":{},"
     "\"k56\":{},\"k57\":{},\"k58\":{},\"k59\":{},\"k60\":{},\"k61\":{},\"k62\":{},\"k63\":{},\"k64\":{},\"ab\":{},"
     "\"alpha\":{}}}",
     {"{\"ab\": 1, \"alpha\": 2, \"x\": 3, \"k64\": 4}", "{\"alpha\": 1, \"ab\": 2, \"ab\": 3}"}},
    /* unique items that a string or a literal may be (the literal's rest
     * without the literals earlier items were; both interpretations of
     * an item that finished as either merge) */
    {"{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"anyOf\":[{\"type\":\"string\","
     "\"minLength\":1},{\"enum\":[\"alpha\",\"alpine\",\"alps\",\"word word\"]}]}}",
     {"[\"alpha\", \"alpine\", \"alps\", \"alp\"]", "[\"word word\", \"alpha\", \"word word\"]",
      "[\"alpine\", \"alpha\", \"alpine\", \"alphabet\"]"}},
    {"{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"anyOf\":[{\"enum\":[\"alpha\",\"alpine\","
     "\"alps\",\"word word\"]},{\"type\":\"integer\"}]}}",
     {"[\"alpha\", 1, \"alps\", \"alpine\", \"word word\"]", "[\"alps\", \"alpha\", \"alpha\"]"}},
    /* branches of an anyOf that hold one string: alike interpretations,
     * grouped -- patterned (tokens without a quote for one of each
     * group), free (closes walked together), hashed inside unique items */
    {"{\"definitions\":{\"s\":{\"type\":\"string\",\"pattern\":\"^[a-z \\\\n]+$\"},\"t\":{\"type\":\"string\","
     "\"maxLength\":6},\"n\":{\"type\":\"integer\"}},\"anyOf\":[{\"type\":\"object\",\"properties\":"
     "{\"s\":{\"$ref\":\"#/definitions/s\"},\"t\":{\"$ref\":\"#/definitions/t\"},\"n\":{\"$ref\":\"#/definitions/n\"},"
     "\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]},"
     "{\"type\":\"object\",\"properties\":{\"s\":{\"$ref\":\"#/definitions/s\"},\"t\":{\"$ref\":\"#/definitions/t\"},"
     "\"n\":{\"$ref\":\"#/definitions/n\"},\"b\":{\"type\":\"null\"}},\"required\":[\"b\"]},"
     "{\"type\":\"object\",\"properties\":{\"s\":{\"$ref\":\"#/definitions/s\"},\"t\":{\"$ref\":\"#/definitions/t\"},"
     "\"n\":{\"$ref\":\"#/definitions/n\"},\"c\":{\"type\":\"array\"}},\"required\":[\"c\"]}]}",
     {"{\"s\": \"word word\\nab\", \"t\": \"alpha\", \"c\": [], \"n\": 12}", "{\"a\": 1, \"t\": \"ab\\\"\", \"s\": \"alps\", \"n\": 12}",
      "{\"c\": [], \"s\": \"word word\", \"t\": \"al\"}", "{\"b\": null, \"n\": 1}"}},
    {"{\"definitions\":{\"s\":{\"type\":\"string\",\"pattern\":\"^[a-z]\"}},\"type\":\"array\",\"uniqueItems\":true,"
     "\"items\":{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"s\":{\"$ref\":\"#/definitions/s\"},"
     "\"x\":{\"type\":\"integer\"}},\"required\":[\"x\"]},{\"type\":\"object\",\"properties\":"
     "{\"s\":{\"$ref\":\"#/definitions/s\"},\"y\":{}},\"required\":[\"y\"]}]}}",
     {"[{\"s\": \"alpha\", \"x\": 1}, {\"s\": \"alpha\", \"y\": 1}, {\"s\": \"alpha\", \"x\": 1}]"}},
    /* the branch that may close last: a value on a shared top finishes,
     * and only one member's parent takes the byte that ends it */
    {"{\"definitions\":{\"n\":{\"type\":\"integer\"}},\"anyOf\":[{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/definitions/n\"},\"m\":{\"$ref\":\"#/definitions/n\"}}},{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/definitions/n\"},\"m\":{\"$ref\":\"#/definitions/n\"}},\"required\":[\"x1\"]},{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/definitions/n\"},\"m\":{\"$ref\":\"#/definitions/n\"}},\"required\":[\"x2\"]}]}",
     {"{\"n\": 12}", "{\"m\": 1, \"n\": 3}"}},
    {"{\"definitions\":{\"n\":{\"type\":\"integer\"}},\"anyOf\":[{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/definitions/n\"},\"m\":{\"$ref\":\"#/definitions/n\"}},\"required\":[\"x0\"]},{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/definitions/n\"},\"m\":{\"$ref\":\"#/definitions/n\"}}},{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/definitions/n\"},\"m\":{\"$ref\":\"#/definitions/n\"}},\"required\":[\"x2\"]}]}",
     {"{\"n\": 12}", "{\"m\": 1, \"n\": 3}"}},
    {"{\"definitions\":{\"n\":{\"type\":\"integer\"}},\"anyOf\":[{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/definitions/n\"},\"m\":{\"$ref\":\"#/definitions/n\"}},\"required\":[\"x0\"]},{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/definitions/n\"},\"m\":{\"$ref\":\"#/definitions/n\"}},\"required\":[\"x1\"]},{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/definitions/n\"},\"m\":{\"$ref\":\"#/definitions/n\"}}}]}",
     {"{\"n\": 12}", "{\"m\": 1, \"n\": 3}"}},
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
    int same = memcmp(mask, ref, (size_t)V->mask_words * sizeof *ref) == 0;
    for (int32_t t = 0; !same && t < V->n_rows; t++)
        if ((mask[t >> 5] ^ ref[t >> 5]) >> (t & 31) & 1) {
            size_t len;
            const uint8_t *b = tv_token_bytes(V, t, &len);
            print_message("token %d '%.*s': fast %u, reference %u\n", t, (int)len, b,
                          mask[t >> 5] >> (t & 31) & 1, ref[t >> 5] >> (t & 31) & 1);
        }
    return same;
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
        int any = !strncmp(cases[c].schema, "any:", 4);
        json_t *s = json_loads(cases[c].schema + (any ? 4 : 0), 0, &je);
        assert_non_null(s);
        sx_gr_opts o;
        sx_gr_opts_default(&o);
        o.escapes = any ? SX_ESC_ANY : SX_ESC_CANONICAL;
        if (sx_gr_compile_json(V, s, &o, &g, &err))
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
            char dtext[2048];
            size_t dlen = 0;
            assert_int_equal(sx_matcher_new(g, &m, NULL), 0);
            for (int step = 0; step < 60; step++) {
                int na;
                if (!check_mask(m, mask, ref, &na))
                    fail_msg("case %zu: fast mask differs on walk %d step %d after '%.*s'", c, walk, step,
                             (int)dlen, dtext);
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
                size_t tl;
                const uint8_t *tb = tv_token_bytes(V, t, &tl);
                if (dlen + tl < sizeof dtext) {
                    memcpy(dtext + dlen, tb, tl);
                    dlen += tl;
                }
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

/* MaskBench schemas where the fast paths carry most masks: additional
 * keys beside many listed names (more than the seen bits), free strings,
 * key patterns, several interpretations. */
static const char *const mb_files[] = {
    "JsonSchemaStore---eslintrc.json", "Github_ultra---o80235.json", "Kubernetes---kb_47_Normalized.json",
    "Github_hard---o21819.json", "Github_ultra---o6352.json", "JsonSchemaStore---foundryvtt-template.json", NULL};

static void maskbench_masks_equal_reference(void **state)
{
    (void)state;
    const char *shared = getenv("STRUX_SHARED");
    char path[1024];
    sx_tokenizer *tok;
    sx_vocab *v;
    sx_error err;
    snprintf(path, sizeof path, "%s/qwen3-tokenizer/tokenizer.json", shared ? shared : "../shared");
    if (sx_tok_load(path, &tok, &err))
        fail_msg("cannot load %s: %s", path, err.msg);
    if (sx_tok_vocab_size(tok) == 151669 && sx_tok_n_rows(tok) < 151936)
        sx_tok_set_n_rows(tok, 151936);
    assert_int_equal(sx_tok_make_vocab(tok, &v, &err), SX_OK);
    uint32_t *mask = malloc((size_t)v->mask_words * sizeof *mask);
    uint32_t *ref = malloc((size_t)v->mask_words * sizeof *ref);
    long checked = 0;
    /* under the sanitizers (STRUX_LIGHT) a shorter prefix of each instance:
     * every reference mask walks the whole vocabulary trie */
    const size_t max_tok = getenv("STRUX_LIGHT") ? 48 : 160;
    for (int fi = 0; mb_files[fi]; fi++) {
        snprintf(path, sizeof path, "%s/maskbench/%s", shared ? shared : "../shared", mb_files[fi]);
        json_error_t je;
        json_t *doc = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!doc)
            fail_msg("cannot read %s: %s", path, je.text);
        sx_grammar *g;
        sx_matcher *m;
        sx_gr_opts o;
        sx_gr_opts_default(&o);
        if (sx_gr_compile_json(v, json_object_get(doc, "schema"), &o, &g, &err))
            fail_msg("%s: %s", mb_files[fi], err.msg);
        assert_int_equal(sx_matcher_new(g, &m, &err), SX_OK);
        size_t ti;
        json_t *t;
        json_array_foreach(json_object_get(doc, "tests"), ti, t) {
            if (ti >= 1)
                break; /* the reference walks the whole trie: a sample */
            size_t len;
            char *text = sx_pyjson_dumps(json_object_get(t, "data"), &len);
            sx_ids ids = {0};
            if (!text || sx_tok_encode(tok, text, len, 0, &ids, &err)) {
                free(text);
                continue;
            }
            sx_matcher_reset(m);
            for (size_t k = 0; k <= ids.n && k < max_tok; k++) {
                assert_int_equal(sx_matcher_fill_mask(m, mask), 0);
                assert_int_equal(gr_fill_mask_reference(m, ref), 0);
                if (memcmp(mask, ref, (size_t)v->mask_words * sizeof *ref))
                    fail_msg("%s test %zu: fast mask differs at token %zu", mb_files[fi], ti, k);
                checked++;
                int32_t want = k < ids.n ? ids.v[k] : v->eos[0];
                if (k == ids.n || !(ref[want >> 5] >> (want & 31) & 1) || sx_matcher_accept(m, want, NULL))
                    break;
            }
            free(text);
            sx_ids_free(&ids);
        }
        sx_matcher_free(m);
        sx_gr_free(g);
        json_decref(doc);
    }
    print_message("MaskBench: %ld masks equal to the reference\n", checked);
    assert_true(checked > (getenv("STRUX_LIGHT") ? 150 : 300));
    free(mask);
    free(ref);
    sx_vocab_free(v);
    sx_tok_free(tok);
}

/* One random plain character (vocab.h) as UTF-8 into b; its length. */
static int rand_plain_char(unsigned *seed, uint8_t *b)
{
    static const uint32_t edge[] = {0x20, 0x7E, 0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF,
                                    0xE000, 0xFFFF, 0x10000, 0x3FFFF, 0x40000, 0x10FFFF};
    uint32_t cp;
    do {
        switch (rand_r(seed) % 4) {
        case 0: cp = 0x20 + (uint32_t)rand_r(seed) % 0x60; break;
        case 1: cp = edge[(unsigned)rand_r(seed) % (sizeof edge / sizeof *edge)]; break;
        case 2: cp = 0x80 + (uint32_t)rand_r(seed) % 0xFF80; break;
        default: cp = 0x10000 + (uint32_t)rand_r(seed) % 0x100000; break;
        }
    } while (cp == '"' || cp == '\\' || (cp >= 0xD800 && cp <= 0xDFFF));
    if (cp < 0x80) {
        b[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (uint8_t)(0xC0 | cp >> 6);
        b[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | cp >> 12);
        b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (uint8_t)(0xF0 | cp >> 18);
    b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    b[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* gr_strx_plain_universal: a state it calls universal survives every
 * plain token of the vocabulary and random plain text; unanchored
 * patterns have such states, a closed character class none. */
static void universal_states_keep_every_plain_token(void **state)
{
    (void)state;
    static const struct {
        const char *pattern;
        int want; /* 1: the start is universal, 0: no state is, -1: either */
    } pats[] = {
        {"[0-9a-f]+", 1}, {"x", 1}, {"\\u00e9t", 1}, {"[0-9]{4}-[0-9]{2}", 1}, {"^[a-z]+$", 0},
        {"^[^/:]+$", 0}, {"^a", -1}, {"^(?:\\S+\\s+){0,3}\\S+$", 0}, {"^.*$", 0} /* . stops at U+2028 */, {"^[\\s\\S]*$", 1},
        {"^[^\\ud800-\\udbff]*$", -1}, {"^.{0,3}$", 0},
    };
    unsigned seed = 5;
    int universal = 0;
    for (size_t c = 0; c < sizeof pats / sizeof *pats; c++) {
        json_t *s = json_pack("{s:s, s:s}", "type", "string", "pattern", pats[c].pattern);
        sx_grammar *g;
        sx_error err;
        if (sx_gr_compile_json(V, s, NULL, &g, &err))
            fail_msg("pattern %s: %s", pats[c].pattern, err.msg);
        json_decref(s);
        const gr_strx *x = g->nodes[g->root].u.str.x;
        assert_non_null(x);
        int any = 0;
        for (int32_t st = 0; st < x->n_states; st++) {
            if (!gr_strx_plain_universal(x, st))
                continue;
            any++;
            for (int32_t t = 0; t < V->n_tokens; t++) {
                if (V->plain_cp[t] < 0)
                    continue;
                int32_t q = st;
                for (uint32_t k = 0; k < V->tok_len[t] && q >= 0; k++)
                    q = gr_strx_step(x, q, V->tok_bytes[t][k]);
                if (q < 0)
                    fail_msg("pattern %s state %d: universal, yet token %d dies", pats[c].pattern, st, t);
            }
            for (int r = 0; r < 200; r++) {
                int32_t q = st;
                for (int ch = 0; ch < 24 && q >= 0; ch++) {
                    uint8_t b[4];
                    int n = rand_plain_char(&seed, b);
                    for (int k = 0; k < n && q >= 0; k++)
                        q = gr_strx_step(x, q, b[k]);
                }
                if (q < 0)
                    fail_msg("pattern %s state %d: universal, yet random text dies", pats[c].pattern, st);
            }
        }
        if (pats[c].want == 1 && !gr_strx_plain_universal(x, x->start))
            fail_msg("pattern %s: the start should be universal", pats[c].pattern);
        if (pats[c].want == 0 && any)
            fail_msg("pattern %s: %d states called universal", pats[c].pattern, any);
        universal += any;
        sx_gr_free(g);
    }
    assert_true(universal > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(universal_states_keep_every_plain_token),
        cmocka_unit_test(fast_masks_equal_reference),
        cmocka_unit_test(maskbench_masks_equal_reference),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
