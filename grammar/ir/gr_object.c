/* Objects and arrays: which key sets can still be completed validly
 * (required keys, dependencies, presence conditions, property order,
 * min/maxProperties) and whether a contains constraint can still be met.
 * Pure functions of a node and the keys or items so far; the matcher
 * checks every key against them, the compiler's analysis and the
 * witnesses choose members with them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/ir/ir.h"

static int popcount64(uint64_t x)
{
    return __builtin_popcountll(x);
}

uint64_t gr_obj_required(const gr_node *n, uint64_t seen)
{
    uint64_t r = n->u.obj.required;
    if (n->u.obj.dep_req)
        for (uint32_t i = 0; i < n->u.obj.n; i++) {
            int idx = n->u.obj.props[i].index;
            if (idx < 64 && (seen >> idx & 1))
                r |= n->u.obj.dep_req[idx];
        }
    return r;
}

/* Required keys once `seen` are present, dependencies followed through. */
static uint64_t obj_required_closure(const gr_node *n, uint64_t seen)
{
    uint64_t all = seen | gr_obj_required(n, seen);
    for (int i = 0; i < 64; i++) {
        uint64_t next = all | gr_obj_required(n, all);
        if (next == all)
            break;
        all = next;
    }
    return all;
}

static int obj_feasible_base(const gr_node *n, uint64_t seen, int64_t count, uint64_t blocked);

/* Keys of props that may appear at all (their value schema is not empty). */
static uint64_t obj_allowed(const gr_node *n)
{
    uint64_t a = 0;
    for (uint32_t i = 0; i < n->u.obj.n; i++)
        if (n->u.obj.props[i].node >= 0)
            a |= gr_prop_bit(&n->u.obj.props[i]);
    return a;
}

int gr_obj_pres_holds(const gr_node *n, uint64_t seen)
{
    int complete = 0;
    for (int i = 0; i < n->u.obj.n_pres; i++)
        complete += (seen & n->u.obj.pres[i]) == n->u.obj.pres[i];
    return n->u.obj.pres_one ? complete == 1 : complete >= 1;
}

/* The presence condition can still be met from `seen`: some list i whose
 * completion (with what it requires in turn) is allowed, feasible, and for
 * oneOf completes no other list.  Adding keys only completes more lists,
 * so the smallest completion is the one to test.  Returns that completed
 * key set (a superset of seen), or 0 when no list can be completed. */
static uint64_t obj_pres_pick(const gr_node *n, uint64_t seen, int64_t count, uint64_t blocked)
{
    uint64_t allowed = obj_allowed(n) & ~(blocked & ~seen);
    for (int i = 0; i < n->u.obj.n_pres; i++) {
        uint64_t S = seen | n->u.obj.pres[i];
        for (int k = 0; k < 64; k++) {
            uint64_t nx = S | gr_obj_required(n, S);
            if (nx == S)
                break;
            S = nx;
        }
        if (S & ~allowed & ~seen)
            continue;
        if (!gr_obj_pres_holds(n, S))
            continue;
        if (obj_feasible_base(n, S, count + __builtin_popcountll(S & ~seen), blocked))
            return S ? S : ~0ull;
    }
    return 0;
}

static int obj_pres_feasible(const gr_node *n, uint64_t seen, int64_t count, uint64_t blocked)
{
    return obj_pres_pick(n, seen, count, blocked) != 0;
}

uint64_t gr_obj_pres_complete(const gr_node *n, uint64_t seen, int64_t count)
{
    uint64_t S = obj_pres_pick(n, seen, count, 0);
    return S == ~0ull ? 0 : S;
}

/* After a key is added (seen, count): can the object still be closed?
 * `blocked`: keys it can no longer take (property-order mode). */
int gr_obj_feasible_blocked(const gr_node *n, uint64_t seen, int64_t count, uint64_t blocked)
{
    if (n->u.obj.n_pres && !obj_pres_feasible(n, seen, count, blocked))
        return 0;
    return obj_feasible_base(n, seen, count, blocked);
}

static int obj_feasible(const gr_node *n, uint64_t seen, int64_t count)
{
    return gr_obj_feasible_blocked(n, seen, count, 0);
}

uint64_t gr_ord_blocked(const gr_node *n, uint16_t ord)
{
    if (!n->u.obj.ord_before)
        return 0;
    return n->u.obj.ord_before[ord > n->u.obj.n_listed ? n->u.obj.n_listed : ord];
}

uint16_t gr_ord_after(const gr_prop *p)
{
    return p->order == GR_ORD_UNLISTED ? GR_ORD_UNLISTED : (uint16_t)(p->order + 1);
}

int gr_ord_ok(const gr_node *n, uint16_t ord, const gr_prop *p)
{
    /* a listed key not before the position; other keys at any time (all
     * listed ones are then behind) */
    return !n->u.obj.ord_before || p->order == GR_ORD_UNLISTED ||
           (ord != GR_ORD_UNLISTED && p->order >= ord);
}

int gr_obj_feasible_add(const gr_node *n, uint64_t seen, int64_t count, const gr_prop *p)
{
    return gr_obj_feasible_blocked(n, seen | gr_prop_bit(p), count + 1,
                          gr_ord_blocked(n, gr_ord_after(p)));
}

static int obj_feasible_base(const gr_node *n, uint64_t seen, int64_t count, uint64_t blocked)
{
    blocked &= ~seen;
    if (blocked && (obj_required_closure(n, seen) & blocked))
        return 0; /* a required key that can no longer come */
    if (n->u.obj.n_forbid) {
        uint64_t will = obj_required_closure(n, seen);
        for (int i = 0; i < n->u.obj.n_forbid; i++)
            if ((will & n->u.obj.forbid[i]) == n->u.obj.forbid[i])
                return 0;
    }
    /* the keys still to come, dependencies followed through (a key
     * that requires another that requires a third counts all three
     * against maxProperties; the schema fuzzer found objects that took
     * an additional key and then could never close) */
    uint64_t missing = obj_required_closure(n, seen) & ~seen;
    int64_t need = count + popcount64(missing);
    if (n->u.obj.max_props >= 0 && need > n->u.obj.max_props)
        return 0;
    if (count < n->u.obj.min_props) {
        /* enough optional keys left to reach the minimum? */
        int64_t unseen = 0, hashed = 0;
        for (uint32_t i = 0; i < n->u.obj.n; i++) {
            uint64_t b = gr_prop_bit(&n->u.obj.props[i]);
            hashed += !b;
            unseen += b && !(seen & b) && !(blocked & b);
        }
        /* without additional keys every key counted is a listed one, so
         * the hashed keys present are the count less the bits */
        if (hashed)
            unseen += hashed - (count - popcount64(seen));
        if (!gr_obj_has_gen(n) && count + unseen < n->u.obj.min_props)
            return 0;
        if (n->u.obj.max_props >= 0 && n->u.obj.max_props < n->u.obj.min_props)
            return 0;
    }
    return 1;
}

int gr_obj_feasible(const gr_node *n, uint64_t seen, int64_t count)
{
    return obj_feasible(n, seen, count);
}


int gr_cont_feasible(const gr_node *n, int64_t count, int64_t cnt, int ok0, int ok1)
{
    int64_t mn = n->u.arr.cmin[0], mx = n->u.arr.cmax[0];
    int64_t slots = n->u.arr.max_items < 0 ? INT64_MAX : n->u.arr.max_items - count;
    int64_t room = mx < 0 ? INT64_MAX : mx - cnt;
    int64_t need = mn > cnt ? mn - cnt : 0;
    int64_t extra = n->u.arr.min_items - count - need;
    if (extra < 0)
        extra = 0;
    if (room < 0 || need > room || need > slots || extra > slots - need)
        return 0;
    if (need > 0 && !ok1)
        return 0;
    /* the other items required: not matching, else matching within room */
    if (extra > 0 && !ok0 && (!ok1 || extra > room - need))
        return 0;
    return 1;
}




static int key_hash_seen(const gr_keyh *k, uint64_t h)
{
    for (; k; k = k->next)
        if (k->h == h)
            return 1;
    return 0;
}

int gr_key_listed(const void *list, uint64_t h)
{
    return key_hash_seen(list, h);
}

