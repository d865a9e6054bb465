/* Queries on a key automaton of the compiled grammar: whether every key
 * completing from a state is already in the object, and a completion to a
 * key that is not.  The matcher's feeding and completion and the
 * compiler's witnesses share them. */
#include <stdlib.h>
#include <string.h>

#include "grammar/ir/ir.h"

/* Depth-first over the (few) completions: 1 if all are seen. */
static int all_seen_from(const gr_strx *x, const int32_t *close, int32_t st, uint64_t h,
                         const gr_keyh *seen, int depth)
{
    if (depth > 64)
        return 0;
    if (close[st] >= 0) {
        int found = 0;
        for (const gr_keyh *k = seen; k && !found; k = k->next)
            found = k->h == h;
        if (!found)
            return 0;
    }
    static const char dec[] = "\"\\\b\f\n\r\t", esc[] = "\"\\bfnrt";
    for (int b = 0; b < 256; b++) {
        int32_t t = x->next[(size_t)st * 256 + (size_t)b];
        if (t < 0)
            continue;
        const char *d = b ? strchr(dec, b) : NULL;
        uint64_t nh = d ? gr_fnv(gr_fnv(h, '\\'), (uint8_t)esc[d - dec]) : gr_fnv(h, (uint8_t)b);
        if (!all_seen_from(x, close, t, nh, seen, depth + 1))
            return 0;
    }
    return 1;
}

/* Depth-first for a completion whose key is new; writes its escaped
 * bytes.  Returns the length or -1. */
/* The shortest key text from state st that closes (close[] >= 0) into a
 * key not seen yet: a breadth-first search over automaton states, each
 * state expanded at most once per seen key plus one (a seen key can block
 * only the one path that spells it), so "anything containing _meta" is
 * found in a few steps where a depth-first search would drown in the
 * first byte's subtree.  Content bytes that JSON must escape are written
 * escaped, and hashed as written, as the matcher hashes keys. */
long gr_keyauto_new_key(const gr_strx *x, const int32_t *close, int32_t st, uint64_t h,
                        const void *seen_v, uint8_t *out, size_t cap, int32_t *final)
{
    static const char dec[] = "\"\\\b\f\n\r\t", esc[] = "\"\\bfnrt";
    const gr_keyh *seen = seen_v;
    uint32_t reps = 1;
    for (const gr_keyh *k = seen; k; k = k->next)
        reps++;
    size_t max_nodes = (size_t)x->n_states * reps;
    if (st < 0 || max_nodes > (4u << 20))
        return -1;
    typedef struct bfs_node {
        int32_t state, parent;
        uint8_t byte;
    } bfs_node;
    bfs_node *q = malloc(max_nodes * sizeof *q);
    uint32_t *visits = calloc((size_t)x->n_states, sizeof *visits);
    long result = -1;
    size_t head = 0, tail = 0;
    if (!q || !visits)
        goto out;
    q[tail++] = (bfs_node){.state = st, .parent = -1};
    visits[st]++;
    while (head < tail) {
        size_t u = head++;
        if (close[q[u].state] >= 0) {
            /* spell the path, then check the key is a new one */
            uint8_t rev[1024];
            size_t n = 0;
            for (long at = (long)u; q[at].parent >= 0 && n < sizeof rev; at = q[at].parent)
                rev[n++] = q[at].byte;
            size_t len = 0;
            uint64_t kh = h;
            int fits = 1;
            for (size_t i = n; i-- > 0 && fits;) {
                uint8_t b = rev[i], e[8];
                const char *d = b ? strchr(dec, b) : NULL;
                size_t el;
                if (d) {
                    e[0] = '\\';
                    e[1] = (uint8_t)esc[d - dec];
                    el = 2;
                } else if (b < 0x20) {
                    snprintf((char *)e, sizeof e, "\\u%04x", b);
                    el = 6;
                } else {
                    e[0] = b;
                    el = 1;
                }
                if (len + el + 2 > cap) {
                    fits = 0;
                    break;
                }
                memcpy(out + len, e, el);
                for (size_t j = 0; j < el; j++)
                    kh = gr_fnv(kh, e[j]);
                len += el;
            }
            int found = 0;
            for (const gr_keyh *k = seen; k && !found; k = k->next)
                found = k->h == kh;
            if (fits && !found && n < sizeof rev) {
                *final = q[u].state;
                result = (long)len;
                goto out;
            }
        }
        for (int b = 0; b < 256; b++) {
            int32_t t = x->next[(size_t)q[u].state * 256 + (size_t)b];
            if (t < 0 || visits[t] >= reps || tail == max_nodes)
                continue;
            visits[t]++;
            q[tail++] = (bfs_node){.state = t, .parent = (int32_t)u, .byte = (uint8_t)b};
        }
    }
out:
    free(q);
    free(visits);
    return result;
}

int gr_keyauto_all_seen(const gr_strx *x, const int32_t *close, int32_t st, int in_escape,
                        uint64_t h, const void *seen)
{
    const gr_keyh *sl = seen;
    uint32_t n_seen = 0;
    for (const gr_keyh *k = sl; k; k = k->next)
        n_seen++;
    if (!x->fin_count)
        return 0;
    static const char dec[] = "\"\\\b\f\n\r\t", esc[] = "\"\\bfnrt";
    if (in_escape) {
        /* the backslash is in h already; each escape letter continues it */
        for (int i = 0; i < 7; i++) {
            int32_t t = x->next[(size_t)st * 256 + (uint8_t)dec[i]];
            if (t >= 0 && !gr_keyauto_all_seen(x, close, t, 0, gr_fnv(h, (uint8_t)esc[i]), seen))
                return 0;
        }
        return 1;
    }
    if (x->fin_count[st] > n_seen)
        return 0; /* more completions than keys seen: one is new */
    return all_seen_from(x, close, st, h, sl, 0);
}

