/* libFuzzer target for grammar/regex/regex.h: arbitrary bytes as a pattern, in
 * both modes, with small budgets.  Input: one control byte, then the
 * pattern.  Beyond "no crash, no leak, no hang" it checks the automaton's
 * invariants: every state live, accept <=> min_bytes == 0, min_cps <=
 * min_bytes, and the intersection with itself has the same minimal size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex.h"

#define CHECK(c)      \
    do {              \
        if (!(c))     \
            abort();  \
    } while (0)

static void check_dfa(const sx_re *re, const uint8_t *data, size_t size, int ctl)
{
    int32_t n = sx_re_n_states(re);
    CHECK((n == 0) == (sx_re_start(re) < 0));
    CHECK(sx_re_is_empty(re) == (n == 0));
    for (int32_t s = 0; s < n; s++) {
        int32_t mb = sx_re_min_bytes(re, s), mc = sx_re_min_cps(re, s);
        CHECK(mb >= 0);
        CHECK((mb == 0) == sx_re_is_accepting(re, s));
        CHECK(mc >= 0 && mc <= mb);
        /* some byte makes progress towards acceptance */
        if (mb > 0) {
            int found = 0;
            for (int b = 0; b < 256 && !found; b++) {
                int32_t t = sx_re_step(re, s, (uint8_t)b);
                found = t >= 0 && sx_re_min_bytes(re, t) == mb - 1;
            }
            CHECK(found);
        }
    }
    /* walk the input through the DFA */
    int32_t st = sx_re_start(re);
    for (size_t i = 0; i < size && st >= 0; i++)
        st = sx_re_step(re, st, data[i]);
    (void)sx_re_matches(re, (const char *)data, size);
    if (n > 0) {
        uint64_t bits[2];
        int32_t mc = sx_re_min_cps(re, sx_re_start(re));
        CHECK(sx_re_cp_lengths(re, sx_re_start(re), 40, bits) == SX_OK);
        CHECK(((bits[0] & 1) != 0) == sx_re_is_accepting(re, sx_re_start(re)));
        /* the shortest length is achievable, nothing shorter is */
        if (mc <= 40)
            CHECK((bits[0] >> mc) & 1);
        for (int32_t k = 0; k < mc && k <= 40; k++)
            CHECK(!((bits[0] >> k) & 1));
    }
    if (ctl & 1) {
        sx_re_limits lim;
        sx_re_limits_default(&lim);
        lim.max_states = 4000;
        lim.max_work = 400000;
        sx_re *self = NULL;
        if (sx_re_intersect(re, re, &lim, &self, NULL) == SX_OK)
            CHECK(sx_re_n_states(self) == n);
        sx_re_free(self);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int ctl = data[0];
    const char *pat = (const char *)data + 1;
    size_t len = size - 1;
    sx_re_limits lim = {.max_pattern = 2048, .max_nfa = 4000, .max_states = 2000, .max_work = 300000};
    for (int mode = 0; mode < 2; mode++) {
        sx_re *re = NULL;
        sx_error err;
        int rc = sx_re_compile(pat, len, (sx_re_mode)mode, &lim, &re, &err);
        if (rc == SX_OK) {
            CHECK(re != NULL);
            check_dfa(re, data + 1, len, ctl);
            sx_re_free(re);
        } else {
            CHECK(re == NULL);
            CHECK(err.code == rc);
            CHECK(rc == SX_EFORMAT || rc == SX_EUNSUPPORTED || rc == SX_ELIMIT || rc == SX_EUTF8);
            CHECK(err.offset >= -1 && err.offset <= (long)(len > 2048 ? 2048 : len));
        }
    }
    if (ctl & 2) {
        /* the input as a list of literals, one per line */
        const char *strs[64];
        size_t lens[64], n = 0, start = 0;
        for (size_t i = 0; i <= len && n < 64; i++) {
            if (i == len || pat[i] == '\n') {
                strs[n] = pat + start;
                lens[n++] = i - start;
                start = i + 1;
            }
        }
        sx_re *re = NULL;
        int rc = sx_re_from_literals(strs, lens, n, &lim, &re, NULL);
        if (rc == SX_OK) {
            for (size_t i = 0; i < n; i++)
                CHECK(sx_re_matches(re, strs[i], lens[i]));
            check_dfa(re, data + 1, len, 0);
        } else {
            CHECK(rc == SX_EUTF8 || rc == SX_ELIMIT);
        }
        sx_re_free(re);
    }
    return 0;
}
