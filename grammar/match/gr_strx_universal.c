/* States of a string automaton that every plain token keeps alive.
 *
 * A plain token (vocab.h) is one or more whole UTF-8 characters, none of
 * them '"', '\\' or a control character.  From a state that no sequence
 * of such characters can kill -- an unanchored pattern (search
 * semantics), a permissive key pattern such as [^/\\:]+ -- the plain mask
 * is every plain token, and the walk of the whole vocabulary trie that
 * would find that out (a few milliseconds, once per automaton) is not
 * needed.  The search runs over pairs (automaton state, UTF-8 decoder
 * state) reachable on plain characters, byte by byte, and fails at the
 * first byte that kills the automaton.  It gives up (answers no, which
 * only costs the walk) on automata with many states and after a bounded
 * number of pairs. */
#include <stdlib.h>

#include "grammar/match/match.h"

/* decoder states: between characters, then inside one (bytes still to
 * come, and the range the next one must lie in) */
enum { U_BOUND, U_1, U_2, U_3, U_E0, U_ED, U_F0, U_F4, U_N };

#define UNIV_MAX_STATES 4096
#define UNIV_MAX_PAIRS 1024

/* The decoder state after byte b in state u, or -1 when b cannot come
 * there in plain text. */
static int u_step(int u, int b)
{
    switch (u) {
    case U_BOUND:
        if (b < 0x80)
            return b < 0x20 || b == '"' || b == '\\' ? -1 : U_BOUND;
        if (b >= 0xC2 && b <= 0xDF)
            return U_1;
        if (b == 0xE0)
            return U_E0;
        if (b == 0xED)
            return U_ED;
        if (b >= 0xE1 && b <= 0xEF)
            return U_2;
        if (b == 0xF0)
            return U_F0;
        if (b >= 0xF1 && b <= 0xF3)
            return U_3;
        if (b == 0xF4)
            return U_F4;
        return -1;
    case U_1:
        return b >= 0x80 && b <= 0xBF ? U_BOUND : -1;
    case U_2:
        return b >= 0x80 && b <= 0xBF ? U_1 : -1;
    case U_3:
        return b >= 0x80 && b <= 0xBF ? U_2 : -1;
    case U_E0:
        return b >= 0xA0 && b <= 0xBF ? U_1 : -1;
    case U_ED:
        return b >= 0x80 && b <= 0x9F ? U_1 : -1;
    case U_F0:
        return b >= 0x90 && b <= 0xBF ? U_2 : -1;
    case U_F4:
        return b >= 0x80 && b <= 0x8F ? U_2 : -1;
    }
    return -1;
}

int gr_strx_plain_universal(const gr_strx *x, int32_t st)
{
    int32_t S = x->n_states;
    if (st < 0 || S > UNIV_MAX_STATES)
        return 0;
    /* (state, decoder state) pairs: visited marks, and a stack */
    uint8_t *seen = calloc((size_t)S * U_N, 1);
    int32_t *stack = malloc(UNIV_MAX_PAIRS * sizeof *stack);
    int ok = 0, top = 0, pairs = 1;
    if (!seen || !stack)
        goto out;
    seen[(size_t)st * U_N + U_BOUND] = 1;
    stack[top++] = st * U_N + U_BOUND;
    while (top > 0) {
        int32_t p = stack[--top], q = p / U_N, u = p % U_N;
        for (int b = 0; b < 256; b++) {
            int nu = u_step(u, b);
            if (nu < 0)
                continue;
            int32_t nq = gr_strx_step(x, q, (uint8_t)b);
            if (nq < 0)
                goto out; /* a plain character's byte kills it */
            size_t k = (size_t)nq * U_N + (size_t)nu;
            if (seen[k])
                continue;
            if (++pairs > UNIV_MAX_PAIRS)
                goto out;
            seen[k] = 1;
            stack[top++] = (int32_t)k;
        }
    }
    ok = 1;
out:
    free(seen);
    free(stack);
    return ok;
}
