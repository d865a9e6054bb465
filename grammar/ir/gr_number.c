/* Numbers as the grammar reads them, one character at a time: the value
 * read so far, whether some completion is valid, the state after one more
 * character.  Pure functions of a number node and a number frame; the
 * matcher feeds with them (match/gr_feed.c), and the value queries
 * (ir/gr_unique.c) and the compiler's analysis search completions with
 * them. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/ir/ir.h"

/* ---- numbers ------------------------------------------------------------ */

/* Exact value of what was read (mantissa digits and fraction digits) as
 * strtod would round the text. */
double gr_num_value(const gr_frame *f)
{
    char buf[64];
    long long e = -(long long)f->count;
    if (f->phase >= N_E) /* an exponent has started: count holds its digits */
        e = ((f->flags & F_ENEG) ? -(long long)f->kst : (long long)f->kst) - (long long)f->lo;
    if (f->val <= (1LL << 53) && e >= -22 && e <= 22) {
        /* both exact doubles: one IEEE operation rounds as strtod does */
        static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        double v = (double)f->val, x = e >= 0 ? v * p10[e] : v / p10[-e];
        return (f->flags & F_NEG) ? -x : x;
    }
    snprintf(buf, sizeof buf, "%s%llue%lld", (f->flags & F_NEG) ? "-" : "",
             (unsigned long long)f->val, e);
    return strtod(buf, NULL);
}

static int exp_ok(const gr_node *n, const gr_frame *f, int ending);

/* An exponent has at most GR_EXP_DIGITS digits, leading zeros included:
 * its value fits kst, and every finite non-zero double needs three
 * significant ones (1e308, 5e-324), so only exponents of a value past 10^9
 * -- values that are 0 or infinite anyway -- are refused. */
#define GR_EXP_DIGITS 9

static int in_bounds(const gr_node *n, double x)
{
    if (!isfinite(x))
        return 0; /* jansson refuses an overflowing real */
    if (n->u.num.has_min && (n->u.num.excl_min ? !(x > n->u.num.min) : !(x >= n->u.num.min)))
        return 0;
    if (n->u.num.has_max && (n->u.num.excl_max ? !(x < n->u.num.max) : !(x <= n->u.num.max)))
        return 0;
    return 1;
}

/* A bounded value read as the double x from digits m: inside the bounds,
 * and not below the normal doubles unless it is 0 (m = 0).  The server's
 * re-check compares the decimal text exactly: a value that underflows to
 * 0 or a subnormal would compare there unlike its double here. */
static int value_ok(const gr_node *n, uint64_t m, double x)
{
    return in_bounds(n, x) && (m == 0 || fabs(x) >= DBL_MIN);
}

/* Is the decimal +-m*10^e10 inside the bounds?  `approx` is its double
 * product; only when that lies within rounding distance of a bound does
 * the exact text decide, rounded as a parser (strtod) would round it. */
static int scaled_in_bounds(const gr_node *n, int neg, uint64_t m, long long e10, double approx)
{
    const double rel = 1e-12;
    /* near the ends of the doubles (underflow, overflow) and for powers
     * whose double is subnormal (few digits) the text decides */
    int near = m != 0 && (!(fabs(approx) >= 2 * DBL_MIN && fabs(approx) <= DBL_MAX / 2) || e10 < -290);
    if (n->u.num.has_min && fabs(approx - n->u.num.min) <= rel * fabs(n->u.num.min) + 1e-300)
        near = 1;
    if (n->u.num.has_max && fabs(approx - n->u.num.max) <= rel * fabs(n->u.num.max) + 1e-300)
        near = 1;
    if (!near)
        return in_bounds(n, approx);
    char buf[64];
    snprintf(buf, sizeof buf, "%s%llue%lld", neg ? "-" : "", (unsigned long long)m, e10);
    return value_ok(n, m, strtod(buf, NULL));
}

/* Integer nodes: some integer in [a, b] (a <= b) satisfies bounds and
 * multipleOf. */
static int int_range_ok(const gr_node *n, __int128 a, __int128 b)
{
    if (a < n->u.num.imin)
        a = n->u.num.imin;
    if (b > n->u.num.imax)
        b = n->u.num.imax;
    if (a > b)
        return 0;
    int64_t m = n->u.num.multiple;
    if (m <= 0)
        return 1;
    __int128 q = a / m;
    if (q * m < a)
        q++;
    return q * m <= b;
}

int gr_num_hashed(const gr_node *n, const gr_frame *f)
{
    return (f->flags & F_UH) || n->u.num.n_excl || n->u.num.scale;
}

static __int128 pow10_i(int k)
{
    __int128 p = 1;
    while (k-- > 0)
        p *= 10;
    return p;
}

/* Decimal multipleOf: the completions as integers x*10^scale, in ranges
 * (within the GR_HASH_DIGITS cap); some must be a multiple inside the
 * bounds.  Past `scale` fraction digits only zeros keep a multiple. */
static int scaled_ok(const gr_node *n, const gr_frame *f, int ending)
{
    int K = n->u.num.scale, neg = (f->flags & F_NEG) != 0;
    const __int128 cap = pow10_i(GR_HASH_DIGITS) - 1, v = f->val;
    __int128 lo[GR_HASH_DIGITS + 3], hi[GR_HASH_DIGITS + 3];
    int nr = 0;
    int frac = f->phase == N_DOT || f->phase == N_FRAC;
    int64_t cnt = frac ? f->count : 0;
    if (ending || (frac && cnt > K)) {
        __int128 x;
        if (cnt <= K) {
            x = v * pow10_i(K - (int)cnt);
        } else {
            __int128 p = pow10_i((int)(cnt - K));
            if (v % p)
                return 0;
            x = v / p;
        }
        lo[0] = hi[0] = neg ? -x : x;
        nr = 1;
    } else {
        switch (f->phase) {
        case N_START:
            lo[nr] = -cap;
            hi[nr++] = cap;
            break;
        case N_SIGN:
            lo[nr] = 0;
            hi[nr++] = cap;
            break;
        case N_ZERO:
            lo[nr] = 0;
            hi[nr++] = pow10_i(K) - 1;
            break;
        case N_INT:
            for (int j = 0; j <= GR_HASH_DIGITS; j++) {
                __int128 sc = pow10_i(j + K), a = v * sc;
                if (a > cap)
                    break;
                lo[nr] = a;
                hi[nr++] = a + sc - 1 > cap ? cap : a + sc - 1;
            }
            break;
        default: { /* N_DOT, N_FRAC with at most K fraction digits */
            __int128 sc = pow10_i(K - (int)cnt);
            lo[nr] = v * sc;
            hi[nr++] = v * sc + sc - 1;
            break;
        }
        }
        if (neg || f->phase == N_SIGN)
            for (int i = 0; i < nr; i++) {
                __int128 t = -hi[i];
                hi[i] = -lo[i];
                lo[i] = t;
            }
    }
    for (int i = 0; i < nr; i++)
        if (int_range_ok(n, lo[i], hi[i]))
            return 1;
    return 0;
}

int gr_num_digits(int64_t v)
{
    int d = 0;
    for (; v; v /= 10)
        d++;
    return d;
}

/* The open interval (a, b) meets [lo, hi] with room beyond rounding
 * error, so some decimal lies in both. */
static int interval_room(double a, double b, double lo, double hi)
{
    double L = a > lo ? a : lo, H = b < hi ? b : hi;
    /* the completions inside are not 0 (that is an endpoint): normal ones */
    if (a >= 0 && L < DBL_MIN)
        L = DBL_MIN;
    if (b <= 0 && H > -DBL_MIN)
        H = -DBL_MIN;
    double tol = 1e-9 * (fabs(L) + fabs(H) + 1e-300);
    if (isinf(L) || isinf(H))
        return L < H;
    return H - L > tol;
}

/* ---- numbers of any length -------------------------------------------------
 *
 * A number whose integer part reaches big_from(n) goes on as F_NBIG when
 * its verdict no longer needs the full value: its magnitude is then beyond
 * every bound the node may have (big_allowed requires bounds below
 * big_from in magnitude), so the bounds decide by the sign alone, and
 * multipleOf needs only the remainder, carried digit by digit in val
 * (x mod m for integers; for a decimal divisor P/10^K, the digits read so
 * far mod P, fraction digits past K only zeros).  Values whose equality
 * matters (enum exclusions, uniqueItems) keep the capped digits.  The state
 * stays one int64, so the work per byte is constant and the number may have
 * any length.  big_from keeps the exact values below it inside the caps of
 * the exact paths (18 digits; 15 for x*10^K), so no length is unreachable. */
static int64_t big_from(const gr_node *n)
{
    int k = n->u.num.scale ? GR_HASH_DIGITS - 1 - n->u.num.scale : GR_HASH_DIGITS;
    int64_t t = 10;
    while (k-- > 1)
        t *= 10;
    return t;
}

/* ---- bounds past big_from: exact magnitudes -------------------------------
 *
 * A bound a double holds is the decimal its shortest round-trip form writes
 * (the schema reader admits only such bounds: 1.2e22 is 12 * 10^21), so it
 * has at most 17 significant digits.  A big number compared with such a
 * bound needs only its first 18 significant digits (val: such a number goes
 * big at its 19th integer digit, not at big_from), whether any later
 * digit is non-zero (F_NSTICKY) and its count of integer digits (hi): two
 * numbers alike in those three compare alike with every such bound.  So a
 * node whose bounds reach big_from keeps those three on big numbers
 * (without multipleOf, which keeps the remainder in val instead) and
 * decides exactly, digit by digit, with the state still of constant size. */
typedef struct {
    uint64_t m;    /* 18 significant digits, in [10^17, 10^18) */
    int st;        /* some later digit is not 0 */
    long long ord; /* the value lies in [10^(ord-1), 10^ord) */
} big_mag;

static int big_bounds(const gr_node *n)
{
    if (!n->u.num.has_min && !n->u.num.has_max)
        return 0; /* the common case, asked at every digit */
    double t = (double)big_from(n);
    return (n->u.num.has_min && !(fabs(n->u.num.min) < t)) ||
           (n->u.num.has_max && !(fabs(n->u.num.max) < t));
}

/* v * 10^k (v > 0, below 10^19) as a magnitude. */
static big_mag mag_of(uint64_t v, long long k)
{
    big_mag r = {v, 0, k};
    int d = 0;
    for (uint64_t t = v; t; t /= 10)
        d++;
    r.ord = d + k;
    for (; d < 18; d++)
        r.m *= 10;
    if (d > 18) { /* 19 digits: one past the 18 kept */
        r.st = r.m % 10 != 0;
        r.m /= 10;
    }
    return r;
}

static int mag_cmp(const big_mag *a, const big_mag *b)
{
    if (a->ord != b->ord)
        return a->ord < b->ord ? -1 : 1;
    if (a->m != b->m)
        return a->m < b->m ? -1 : 1;
    return a->st == b->st ? 0 : a->st ? 1 : -1;
}

/* The limits the bounds put on |x| for a non-zero x of the given sign: 0
 * when no such x is in bounds at all. */
typedef struct {
    int has_l, exl, has_u, exu;
    big_mag l, u;
} mag_lims;

static int bound_mag(double b, big_mag *out)
{
    /* gr_decimal formats and reads back up to 17 times; a node's two
     * bounds are asked for at every digit, so the last few are kept (per
     * thread: matchers run on several) */
    static _Thread_local struct {
        double b;
        big_mag m;
        int ok;
    } memo[4];
    static _Thread_local unsigned next;
    for (int i = 0; i < 4; i++)
        if (memo[i].ok && memo[i].b == b) {
            *out = memo[i].m;
            return 0;
        }
    int64_t m;
    int e;
    if (gr_decimal(b, &m, &e) || m <= 0)
        return -1;
    *out = mag_of((uint64_t)m, e);
    unsigned k = next++ % 4;
    memo[k].b = b;
    memo[k].m = *out;
    memo[k].ok = 1;
    return 0;
}

static int mag_limits(const gr_node *n, int neg, mag_lims *L)
{
    memset(L, 0, sizeof *L);
    double mn = n->u.num.min, mx = n->u.num.max;
    if (!neg) {
        if (n->u.num.has_max && !(mx > 0))
            return 0;
        if (n->u.num.has_max && !bound_mag(mx, &L->u)) {
            L->has_u = 1;
            L->exu = n->u.num.excl_max;
        }
        if (n->u.num.has_min && mn > 0 && !bound_mag(mn, &L->l)) {
            L->has_l = 1;
            L->exl = n->u.num.excl_min;
        }
    } else {
        if (n->u.num.has_min && !(mn < 0))
            return 0;
        if (n->u.num.has_min && !bound_mag(mn, &L->u)) {
            L->has_u = 1;
            L->exu = n->u.num.excl_min;
        }
        if (n->u.num.has_max && mx < 0 && !bound_mag(mx, &L->l)) {
            L->has_l = 1;
            L->exl = n->u.num.excl_max;
        }
    }
    return 1;
}

static int mag_ok(const mag_lims *L, const big_mag *x)
{
    int c;
    if (L->has_l && ((c = mag_cmp(x, &L->l)) < 0 || (c == 0 && L->exl)))
        return 0;
    if (L->has_u && ((c = mag_cmp(x, &L->u)) > 0 || (c == 0 && L->exu)))
        return 0;
    return 1;
}

/* Some magnitude in [a, s) is within the limits.  For integers too: a and
 * s are integers ten or more apart (at least one more digit) and limits
 * past big_from are integers, so the half-open range of reals and the
 * integers in it meet the limits alike. */
static int mag_range_ok(const mag_lims *L, const big_mag *a, const big_mag *s)
{
    const big_mag *lo = a, *hi = s;
    int lo_in = 1, hi_in = 0;
    if (L->has_l && mag_cmp(&L->l, a) >= 0) {
        lo_in = !L->exl && (mag_cmp(&L->l, a) > 0 || lo_in);
        lo = &L->l;
    }
    if (L->has_u && mag_cmp(&L->u, s) <= 0) {
        hi_in = !L->exu && mag_cmp(&L->u, s) < 0;
        hi = &L->u;
    }
    int c = mag_cmp(lo, hi);
    return c < 0 || (c == 0 && lo_in && hi_in);
}

/* From the integer digits v (0 < v < 10^18, more to come), some completion
 * with at least 19 integer digits is in bounds: v followed by k more digits
 * lies in [v*10^k, (v+1)*10^k). */
static int big_reach(const gr_node *n, int neg, uint64_t v)
{
    mag_lims L;
    if (!mag_limits(n, neg, &L))
        return 0;
    int d = gr_num_digits((int64_t)v);
    long long k0 = 19 - d, k1 = k0;
    if (!L.has_u)
        return 1; /* enough digits pass any lower limit */
    if (L.u.ord - d + 1 > k1)
        k1 = L.u.ord - d + 1; /* past that, every completion is above u */
    for (long long k = k0; k <= k1; k++) {
        big_mag a = mag_of(v, k), b = mag_of(v + 1, k);
        if (mag_range_ok(&L, &a, &b))
            return 1;
    }
    return 0;
}

/* A big number under bounds past big_from (F_NBIG, val its first 18
 * digits): it may end here (ending), or some completion is in bounds. */
static int big_bounded_ok(const gr_node *n, const gr_frame *f, int ending)
{
    mag_lims L;
    if (!mag_limits(n, (f->flags & F_NEG) != 0, &L))
        return 0;
    big_mag x = {(uint64_t)f->val, (f->flags & F_NSTICKY) != 0, (long long)f->hi};
    if (ending)
        return mag_ok(&L, &x);
    if (f->phase != N_INT) {
        /* fraction digits: zeros keep the value ("X.0" after the point),
         * another digit raises it past these digits (integers take zeros
         * alone) */
        if (mag_ok(&L, &x))
            return 1;
        x.st = 1;
        return !n->u.num.integer && mag_ok(&L, &x);
    }
    /* k more integer digits, then (reals) a fraction */
    if (!L.has_u)
        return 1;
    for (long long k = 0; x.ord + k <= L.u.ord + 1; k++) {
        big_mag y = x;
        y.ord += k;
        if (mag_ok(&L, &y)) /* zeros (none when k = 0) keep the digits' summary */
            return 1;
        y.st = 1;
        if ((k > 0 || !n->u.num.integer) && mag_ok(&L, &y))
            return 1;
    }
    return 0;
}

static int big_allowed(const gr_node *n, const gr_frame *f)
{
    if ((f->flags & (F_UH | F_UITEM)) || n->u.num.n_excl)
        return 0;
    if (big_bounds(n)) /* exact magnitudes instead of a remainder */
        return n->u.num.multiple <= 0 && !n->u.num.scale;
    /* a big number is closed by digits that bring its remainder to 0: with
     * a multiple below 10^4 four digits always do, which the shortest
     * completion's search (20000 digit strings) finds; larger multiples
     * keep the capped digits */
    if (n->u.num.multiple > 9999)
        return 0;
    double t = (double)big_from(n);
    if (n->u.num.has_min && !(fabs(n->u.num.min) < t))
        return 0;
    if (n->u.num.has_max && !(fabs(n->u.num.max) < t))
        return 0;
    return (f->flags & F_NEG) ? !n->u.num.has_min : !n->u.num.has_max;
}

static int64_t mod_mul10(int64_t r, int k, int64_t m)
{
    __int128 x = r;
    while (k-- > 0)
        x = x * 10 % m;
    return (int64_t)x;
}

/* One more digit on a big number: 0 when it cannot be taken. */
static int big_digit(const gr_node *n, gr_frame *nf, int next, int d)
{
    int64_t m = n->u.num.multiple;
    if (big_bounds(n)) {
        if (d)
            nf->flags |= F_NSTICKY; /* val keeps the first 18 digits */
        return 1;
    }
    if (n->u.num.scale && next == N_FRAC && nf->count >= n->u.num.scale)
        return d == 0; /* past the divisor's decimals only zeros keep a multiple */
    if (m > 0)
        nf->val = (int64_t)(((__int128)nf->val * 10 + d) % m);
    return 1;
}

static int big_ok(const gr_node *n, const gr_frame *f, int ending)
{
    if (!big_allowed(n, f))
        return 0;
    if (big_bounds(n))
        return big_bounded_ok(n, f, ending);
    int64_t m = n->u.num.multiple;
    if (m <= 0 || f->phase >= N_E)
        return 1; /* no multipleOf, or an unbounded real's exponent */
    int K = n->u.num.scale, cnt = 0;
    if (K && (f->phase == N_DOT || f->phase == N_FRAC))
        cnt = f->count > K ? K : (int)f->count;
    if (!K || f->phase != N_INT || ending) {
        int left = K - cnt; /* fraction digits still to come, as zeros or more */
        int64_t x = mod_mul10(f->val, left, m);
        if (ending || !K)
            return ending ? x == 0 : 1;
        /* some t < 10^left makes x + t a multiple */
        int64_t need = (m - x) % m;
        __int128 room = 1;
        for (int i = 0; i < left && room <= need; i++)
            room *= 10;
        return need < room;
    }
    return 1; /* more integer digits can reach any remainder */
}

/* ---- integers in any spelling (SX_ESC_ANY) -----------------------------------
 *
 * JSON Schema's integers are the numbers whose value is an integer, however
 * written: 1e2, 1.0, 10E+1, 1.5e1, 0e5, -2.50e2, 100e-2.  A node with
 * int_exp (an integer node compiled for SX_ESC_ANY, without a hash, under
 * bounds below big_from in magnitude) reads such a number as its mantissa's
 * digits W (val: significant digits, at most 18), the fraction digits
 * already in W (cf, in lo) and the exponent E; the value is W * 10^(E - cf).
 * Fraction zeros wait in pos until a non-zero digit takes them into W, so
 * "1.000" of any length stays W = 1.  The value is an integer exactly when
 * E - cf >= -tz(W) (tz: trailing zeros), decided from the digits, and a
 * finite double (as reals: 10^308 and up is refused but for the sliver a
 * parser reads as finite).  So every value needs only s = E - cf in
 * [-18, 309]: an exponent of GR_EXP_DIGITS digits reaches all of it while
 * cf <= GR_XINT_FRAC, which bounds the fraction digits a mantissa may carry
 * before its last non-zero one (zeros after it are free).  Completions are
 * decided in constant work: before the exponent, the integers reachable are
 * y * 10^j for y a stripped extension of the digits (at most 18 of them)
 * and j >= 0 -- ranges of y against bounds and multipleOf per j, and for an
 * unbounded side one j (64) that dominates every other; after it, the
 * reachable exponents are at most GR_EXP_DIGITS + 1 ranges per sign, a
 * bounded side needs s <= 19, an unbounded one only the greatest s (the
 * value and its divisibility only grow with s). */
#define GR_XINT_FRAC 100000000LL

static int xint(const gr_node *n, const gr_frame *f)
{
    return n->u.num.int_exp && !gr_num_hashed(n, f) && !big_bounds(n);
}

static __int128 p10_128(int k)
{
    __int128 p = 1;
    while (k-- > 0)
        p *= 10;
    return p;
}

/* The magnitudes |X| >= 1 the bounds allow on one side: [A, B], B = -1
 * for no limit; 0 when there are none. */
static int xint_side(const gr_node *n, int neg, __int128 *A, __int128 *B)
{
    int lim = neg ? n->u.num.has_min : n->u.num.has_max;
    if (!neg) {
        *A = n->u.num.imin > 1 ? n->u.num.imin : 1;
        *B = n->u.num.imax;
    } else {
        *A = n->u.num.imax < -1 ? -(__int128)n->u.num.imax : 1;
        *B = -(__int128)n->u.num.imin;
    }
    if (!lim) {
        *B = -1;
        return 1;
    }
    return *B >= *A;
}

/* m / gcd(m, 10^j): what y must be a multiple of for y * 10^j to be one of
 * m (1 without a multipleOf). */
static int64_t xint_mdiv(int64_t m, long long j)
{
    if (m <= 0)
        return 1;
    for (; j > 0 && m % 10 == 0; j--)
        m /= 10;
    for (long long k = j; k > 0 && m % 2 == 0; k--)
        m /= 2;
    for (long long k = j; k > 0 && m % 5 == 0; k--)
        m /= 5;
    return m;
}

/* Some y in [a, b] is a multiple of m (>= 1) and, nz, not of 10: of two
 * consecutive multiples of an m that is not one of 10, one is not. */
static int xint_mult_in(__int128 a, __int128 b, int64_t m, int nz)
{
    if (a < 1)
        a = 1;
    if (a > b)
        return 0;
    __int128 q = (a + m - 1) / m * m;
    if (q > b)
        return 0;
    return !nz || q % 10 != 0 || (m % 10 != 0 && q + m <= b);
}

/* The value v * 10^s (v >= 1, s >= 0) on the sign's side is in bounds and
 * a multiple. */
static int xint_value_ok(const gr_node *n, int neg, uint64_t v, long long s)
{
    __int128 A, B;
    if (!xint_side(n, neg, &A, &B))
        return 0;
    if (gr_num_digits((int64_t)v) + s <= 36) {
        __int128 X = (__int128)v * p10_128((int)s);
        if (X < A || (B >= 0 && X > B))
            return 0;
    } else if (B >= 0) {
        return 0; /* past every int64 bound */
    }
    int64_t m = n->u.num.multiple;
    if (m <= 0)
        return 1;
    __int128 r = v % (uint64_t)m, b = 10 % m;
    for (long long e = s; e > 0; e >>= 1) { /* v * 10^s mod m */
        if (e & 1)
            r = r * b % m;
        b = b * b % m;
    }
    return r == 0;
}

static int tz_of(uint64_t v)
{
    int t = 0;
    for (; v && v % 10 == 0; v /= 10)
        t++;
    return t;
}

/* v * 10^s with d + s = 309 digits: finite as a parser reads it. */
static int xint_finite309(uint64_t v, long long s)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%llue%lld", (unsigned long long)v, s);
    return isfinite(strtod(buf, NULL));
}

/* Some s in [sa, sb] makes v * 10^s (v >= 1) a valid integer. */
static int xint_shift_ok(const gr_node *n, int neg, uint64_t v, long long sa, long long sb)
{
    int tz = tz_of(v), d = gr_num_digits((int64_t)v);
    for (long long s = sa < -tz ? -tz : sa; s <= sb && s < 0; s++) {
        uint64_t w = v;
        for (long long k = s; k < 0; k++)
            w /= 10;
        if (xint_value_ok(n, neg, w, 0))
            return 1;
    }
    long long top = 309 - d;
    if (sb < top)
        top = sb;
    else if (!xint_finite309(v, top))
        top--;
    long long lo = sa < 0 ? 0 : sa;
    if (lo > top)
        return 0;
    __int128 A, B;
    if (!xint_side(n, neg, &A, &B))
        return 0;
    if (B < 0) /* unbounded: the value and its divisibility grow with s */
        return xint_value_ok(n, neg, v, top);
    for (long long s = lo; s <= top && s <= 19; s++)
        if (xint_value_ok(n, neg, v, s))
            return 1;
    return 0;
}

/* Ending here: the value is a valid integer (N_INT, N_ZERO and a fraction
 * of zeros end as plain integers, below). */
static int xint_end_exp(const gr_node *n, const gr_frame *f)
{
    if (f->val == 0)
        return int_range_ok(n, 0, 0);
    long long s = ((f->flags & F_ENEG) ? -(long long)f->kst : (long long)f->kst) - (long long)f->lo;
    return xint_shift_ok(n, (f->flags & F_NEG) != 0, (uint64_t)f->val, s, s);
}

/* After the exponent mark: some exponent the digits so far grow into
 * (exp_ok's ranges) gives a valid integer. */
static int xint_exp_ok(const gr_node *n, const gr_frame *f)
{
    if (f->val == 0)
        return int_range_ok(n, 0, 0);
    int neg = (f->flags & F_NEG) != 0;
    int sgn_lo = (f->flags & F_ENEG) ? -1 : 1, sgn_hi = sgn_lo;
    if (f->phase == N_E) {
        sgn_lo = -1;
        sgn_hi = 1;
    }
    int have = f->phase == N_EXP ? (int)f->count : 0;
    long long cf = (long long)f->lo;
    for (int sg = sgn_lo; sg <= sgn_hi; sg += 2) {
        long long p = 1;
        for (int more = 0; have + more <= GR_EXP_DIGITS; more++, p *= 10) {
            if (have == 0 && more < GR_EXP_DIGITS)
                continue; /* no digit yet: the widest range holds the others */
            long long e_lo = (long long)f->kst * p, e_hi = e_lo + p - 1;
            long long sa = sg > 0 ? e_lo - cf : -e_hi - cf;
            long long sb = sg > 0 ? e_hi - cf : -e_lo - cf;
            if (xint_shift_ok(n, neg, (uint64_t)f->val, sa, sb))
                return 1;
        }
    }
    return 0;
}

/* Before the exponent (N_START to N_FRAC): some completion with an
 * exponent is a valid integer.  The mantissas reachable are v itself and
 * the extensions of W0 = v * 10^pending by k >= 1 more digits (18 in all);
 * their values y * 10^j, y stripped of trailing zeros. */
static int xint_pre_ok(const gr_node *n, const gr_frame *f)
{
    int ph = f->phase;
    uint64_t v = ph <= N_SIGN ? 0 : (uint64_t)f->val;
    if (v == 0 && int_range_ok(n, 0, 0))
        return 1; /* 0, 0e5, 0.00 */
    long long z = (ph == N_DOT || ph == N_FRAC) ? (long long)f->pos : 0;
    long long cf = (ph == N_DOT || ph == N_FRAC) ? (long long)f->lo : 0;
    /* ranges [r0[i], r1[i]] of y, not multiples of 10 */
    __int128 r0[19], r1[19];
    int nr = 0;
    uint64_t ys = 0; /* v stripped */
    if (v == 0) {
        if (z + 1 + cf <= GR_XINT_FRAC) {
            r0[nr] = 1;
            r1[nr++] = p10_128(18) - 1;
        }
    } else {
        ys = v;
        while (ys % 10 == 0)
            ys /= 10;
        int dw = gr_num_digits((int64_t)v) + (int)(z > 18 ? 18 : z);
        for (int k = 1; dw + k <= 18 && cf + z + k <= GR_XINT_FRAC; k++) {
            __int128 w0 = (__int128)v * p10_128((int)z) * p10_128(k);
            r0[nr] = w0;
            r1[nr++] = w0 + p10_128(k) - 1;
        }
    }
    int negfix = (f->flags & F_NEG) || ph == N_SIGN;
    int s0 = ph == N_START ? 0 : negfix, s1 = ph == N_START ? 1 : negfix;
    for (int neg = s0; neg <= s1; neg++) {
        __int128 A, B;
        if (!xint_side(n, neg, &A, &B))
            continue;
        int j0 = B < 0 ? 64 : 0, j1 = B < 0 ? 64 : 18;
        for (int j = j0; j <= j1; j++) {
            __int128 pj = j <= 36 ? p10_128(j) : 0;
            __int128 lo = pj ? (A + pj - 1) / pj : 1, hi = B < 0 ? p10_128(18) : B / pj;
            if (lo > hi)
                break; /* j only grows the values */
            int64_t mj = xint_mdiv(n->u.num.multiple, j);
            if (ys && (__int128)ys >= lo && (__int128)ys <= hi && (__int128)ys % mj == 0)
                return 1;
            for (int i = 0; i < nr; i++) {
                __int128 a = r0[i] > lo ? r0[i] : lo, b = r1[i] < hi ? r1[i] : hi;
                if (xint_mult_in(a, b, mj, 1))
                    return 1;
            }
        }
    }
    return 0;
}

/* The text read so far, with the exponent read so far, is a finite double.
 * Exact for mantissas held in val; for longer ones (F_INEXACT: the first
 * 18 significant digits; F_NBIG: none) the integer digits (hi) bound the
 * magnitude, and a value within a factor 10 of DBL_MAX is refused (a
 * sliver of valid numbers, never an infinite one). */
static int exp_finite(const gr_frame *f)
{
    long long e = (f->flags & F_ENEG) ? -(long long)f->kst : (long long)f->kst;
    if (!(f->flags & (F_INEXACT | F_NBIG))) {
        /* val * 10^(e - lo) lies in [10^(k-1), 10^k): only k = 309 needs
         * the parser's rounding */
        if (f->val == 0)
            return 1;
        long long k = gr_num_digits(f->val) + e - (long long)f->lo;
        if (k != 309)
            return k < 309;
        return isfinite(gr_num_value(f));
    }
    return (long long)f->hi + e <= 308; /* value < 10^(hi + e) */
}

/* The digits read so far (A, any point, an exponent still to come) lead
 * to the decimal +-M * 10^E: A's digits begin M's, padded with zeros
 * (every mantissa of at most 18 digits is then reachable, the exponent
 * placing the point). */
static int dec_reachable(const gr_frame *f, int neg, uint64_t M)
{
    if (f->flags & (F_INEXACT | F_NBIG))
        return 0;
    if (f->phase == N_START)
        return 1;
    if (neg != ((f->flags & F_NEG) || f->phase == N_SIGN))
        return 0;
    uint64_t A = f->phase == N_SIGN ? 0 : (uint64_t)f->val;
    if (A == 0)
        return 1; /* "0.", "0.00": any digits follow */
    int dA = gr_num_digits((int64_t)A), dM = gr_num_digits((int64_t)M);
    for (; dM > dA; dM--)
        M /= 10;
    for (; dA > dM; dA--) {
        if (A % 10)
            return 0;
        A /= 10;
    }
    return A == M;
}

/* Some value at a bound or just past it (one more digit, 5) is valid and
 * reachable from f, for a real that takes an exponent. */
static int bound_reach(const gr_node *n, const gr_frame *f)
{
    for (int k = 0; k < 2; k++) {
        if (!(k ? n->u.num.has_max : n->u.num.has_min))
            continue;
        double b = k ? n->u.num.max : n->u.num.min;
        int64_t m;
        int e;
        if (gr_decimal(b, &m, &e) || m <= 0)
            continue;
        int neg = b < 0;
        uint64_t c[3] = {(uint64_t)m, (uint64_t)m * 10 + 5, (uint64_t)m * 10 - 5};
        long long ce[3] = {e, (long long)e - 1, (long long)e - 1};
        for (int i = 0; i < 3; i++) {
            char buf[64];
            snprintf(buf, sizeof buf, "%s%llue%lld", neg ? "-" : "", (unsigned long long)c[i], ce[i]);
            if (dec_reachable(f, neg, c[i]) && value_ok(n, c[i], strtod(buf, NULL)))
                return 1;
        }
    }
    return 0;
}

/* Can the number on f still be completed into a valid value?  `ending`
 * asks instead whether the number may end right here.  Completions have
 * at most `cap` significant digits; only reals that are not hashed take an
 * exponent. */
int gr_num_ok(const gr_node *n, const gr_frame *f, int ending)
{
    int neg = (f->flags & F_NEG) != 0;
    int cap = gr_num_hashed(n, f) ? GR_HASH_DIGITS : 18;
    if (!(f->flags & F_NBIG) && xint(n, f)) {
        if (f->phase >= N_E)
            return ending ? f->phase == N_EXP && xint_end_exp(n, f) : xint_exp_ok(n, f);
        if ((f->phase == N_DOT || f->phase == N_FRAC) && f->lo)
            return !ending && xint_pre_ok(n, f); /* a fraction that is not zeros */
        if (!ending && f->phase != N_INT)
            return xint_pre_ok(n, f);
        if (!ending && xint_pre_ok(n, f))
            return 1;
        /* else the plain spellings (more digits, big ones included) below */
    }
    if (f->phase >= N_E && !n->u.num.has_min && !n->u.num.has_max) {
        /* an unbounded real's exponent (big mantissas included) keeps the
         * value finite: more digits of a negative exponent only shrink it,
         * of a positive one only grow it */
        if (ending)
            return f->phase == N_EXP && exp_finite(f);
        if (f->phase == N_E || (f->flags & F_ENEG))
            return 1;
        return exp_finite(f);
    }
    if (f->flags & F_NBIG)
        return big_ok(n, f, ending);
    if (!ending && big_bounds(n) && big_allowed(n, f)) {
        /* more digits make it big: is some big completion in bounds? */
        if (f->phase == N_INT && big_reach(n, neg, (uint64_t)f->val))
            return 1;
        /* before the first digit: either sign at N_START, minus at N_SIGN */
        for (uint64_t v = 1; f->phase <= N_SIGN && v <= 9; v++)
            for (int sg = f->phase == N_SIGN; sg <= 1; sg++)
                if (big_reach(n, sg, v))
                    return 1;
    } else if (!ending && f->phase == N_INT && big_allowed(n, f)) {
        return 1; /* more digits make it big, and a big one can end */
    }
    if (n->u.num.scale)
        return scaled_ok(n, f, ending);
    if (n->u.num.integer) {
        __int128 v = (__int128)f->val * (neg ? -1 : 1);
        int closed = f->phase == N_ZERO || f->phase == N_DOT || f->phase == N_FRAC;
        if (ending || closed)
            return int_range_ok(n, v, v);
        /* N_START/N_SIGN/N_INT: more digits may follow: v*10^k + [0, 10^k),
         * up to the digits feed_num lets an integer have */
        __int128 most = 1;
        for (int k = 0; k < cap; k++)
            most *= 10;
        most--;
        if (f->phase == N_START)
            return int_range_ok(n, -most, most);
        if (f->phase == N_SIGN)
            return int_range_ok(n, -most, 0);
        __int128 scale = 1;
        for (int k = 0; k <= cap + 1; k++) {
            __int128 lo = (__int128)f->val * scale, hi = lo + scale - 1;
            if (lo > most)
                break;
            if (hi > most)
                hi = most;
            int ok = neg ? int_range_ok(n, -hi, -lo) : int_range_ok(n, lo, hi);
            if (ok)
                return 1;
            scale *= 10;
        }
        return 0;
    }
    if (!n->u.num.has_min && !n->u.num.has_max)
        return 1;
    if (f->phase >= N_E)
        return exp_ok(n, f, ending);
    if (ending)
        return value_ok(n, f->val, gr_num_value(f));
    if (f->phase != N_START && f->phase != N_SIGN && value_ok(n, f->val, gr_num_value(f)))
        return 1; /* the value read so far (or "x." plus a zero) */
    /* Every completion lies in some [A*10^j, B*10^j) for j in [jlo, jhi]:
     * the digits so far, more integer digits while the cap allows, any
     * fraction, and for reals that are not hashed any exponent.  A is the
     * digits read so far, itself reachable exactly. */
    int exp = !gr_num_hashed(n, f);
    uint64_t A = f->val;
    long long e10 = 0, jlo = exp ? -1000000000LL : 0, jhi = exp ? 1000000000LL : 0;
    double B;
    int either = 0;
    switch (f->phase) {
    case N_START:
    case N_SIGN:
        either = f->phase == N_START;
        A = 0;
        B = pow(10.0, cap);
        break;
    case N_ZERO:
        B = 1;
        break;
    case N_INT:
        B = (double)A + 1;
        jhi += cap - gr_num_digits(f->val);
        break;
    default: /* N_DOT, N_FRAC: more fraction digits */
        e10 = -(long long)f->count;
        B = (double)A + 1;
        break;
    }
    /* no digit can follow: the completions are the endpoints alone */
    if (f->val >= (exp ? 100000000000000000LL : 100000000000000LL) ||
        (!exp && (f->phase == N_DOT || f->phase == N_FRAC) && f->count >= GR_HASH_FRAC))
        B = (double)A;
    double lo = n->u.num.has_min ? n->u.num.min : -INFINITY;
    double hi = n->u.num.has_max ? n->u.num.max : INFINITY;
    for (int s = 0; s <= either; s++) {
        int sg = either ? s : neg || f->phase == N_SIGN;
        /* 0 (A = 0) is one value; every other completion is a normal
         * double (value_ok), so a side whose bounds leave it only 0 ends
         * here */
        if (A == 0 && scaled_in_bounds(n, sg, 0, 0, 0.0))
            return 1;
        if (sg ? !(lo < -DBL_MIN) : !(hi > DBL_MIN))
            continue;
        /* only the powers where [A, B) * 10^x can meet the bounds: past
         * 10^310 every value is infinite, and the logarithms narrow that
         * (to normal doubles, and to the bounds) */
        long long xa = jlo + e10 < -360 ? -360 : jlo + e10, xb = jhi + e10 > 310 ? 310 : jhi + e10;
        double near_lo = sg ? (hi < 0 ? -hi : DBL_MIN) : (lo > 0 ? lo : DBL_MIN);
        double near_hi = sg ? -lo : hi;
        if (B > 0 && floor(log10(near_lo) - log10(B)) - 1 > xa)
            xa = (long long)(floor(log10(near_lo) - log10(B)) - 1);
        if (isfinite(near_hi) && A > 0 && ceil(log10(near_hi) - log10((double)A)) + 1 < xb)
            xb = (long long)(ceil(log10(near_hi) - log10((double)A)) + 1);
        for (long long x = xa; x <= xb; x++) {
            long long j = x - e10;
            double sc = pow(10.0, (double)x);
            double a = A ? (double)A * sc : 0, b = B ? B * sc : 0; /* not 0 * inf */
            if (sg ? interval_room(-b, -a, lo, hi) : interval_room(a, b, lo, hi))
                return 1;
            if (scaled_in_bounds(n, sg, A, j + e10, sg ? -a : a))
                return 1;
        }
    }
    /* interval_room's tolerance (relative 1e-9) misses bounds closer than
     * that (1.2345678901234e22 to 1.2345678901235e22): the values at and
     * just past each bound, when the digits so far lead to them */
    return exp && bound_reach(n, f);
}

/* Some x in [xa, xb] puts +-m * 10^x inside the bounds.  The value is
 * monotone in x, so the bound it crosses first (the minimum for a positive
 * m, the maximum for a negative one, and the least normal double) holds
 * from some least x on, and only that x can hold the other bound too.  Its
 * logarithm finds that x to within one step -- the double arithmetic and
 * the parser's rounding differ by ulps, a decade apart -- and
 * scaled_in_bounds (the text where it is near a bound) decides x-1, x,
 * x+1: constant work for any range. */
static int exp_range_ok(const gr_node *n, int neg, uint64_t m, long long xa, long long xb)
{
    if (m == 0)
        return in_bounds(n, neg ? -0.0 : 0.0);
    /* m < 10^19: past 10^310 every value is infinite, below 10^-345 it
     * underflows */
    xa = xa < -345 ? -345 : xa > 310 ? 310 : xa;
    xb = xb < -345 ? -345 : xb > 310 ? 310 : xb;
    double L = DBL_MIN; /* the least magnitude the first bound allows */
    if (!neg && n->u.num.has_min && n->u.num.min > L)
        L = n->u.num.min;
    if (neg && n->u.num.has_max && -n->u.num.max > L)
        L = -n->u.num.max;
    double xl = ceil(log10(L) - log10((double)m));
    long long a = xl < (double)xa ? xa : xl > (double)xb ? xb : (long long)xl;
    double sgn = neg ? -1.0 : 1.0, dm = (double)m;
    for (long long x = a - 1; x <= a + 1; x++)
        if (x >= xa && x <= xb && scaled_in_bounds(n, neg, m, x, sgn * dm * pow(10.0, (double)x)))
            return 1;
    return 0;
}

/* After the exponent mark: some exponent the digits so far can grow into
 * (GR_EXP_DIGITS digits at most) puts the value inside the bounds.  The
 * reachable exponents are the one read so far and, per further digit
 * count, a range: at most GR_EXP_DIGITS + 1 ranges per sign, each a
 * binary search. */
static int exp_ok(const gr_node *n, const gr_frame *f, int ending)
{
    if (ending)
        return f->phase == N_EXP && value_ok(n, f->val, gr_num_value(f));
    int neg = (f->flags & F_NEG) != 0;
    long long base = -(long long)f->lo;
    int sgn_lo = (f->flags & F_ENEG) ? -1 : 1, sgn_hi = sgn_lo;
    if (f->phase == N_E) {
        sgn_lo = -1; /* no sign yet: either */
        sgn_hi = 1;
    }
    int have = f->phase == N_EXP ? (int)f->count : 0;
    int edge = 0;
    for (int sg = sgn_lo; sg <= sgn_hi; sg += 2) {
        long long p = 1;
        for (int more = 0; have + more <= GR_EXP_DIGITS; more++, p *= 10) {
            if (have == 0 && more < GR_EXP_DIGITS)
                continue; /* no digit yet: the widest range holds the others */
            long long e_lo = (long long)f->kst * p, e_hi = e_lo + p - 1;
            long long xa = sg > 0 ? base + e_lo : base - e_hi;
            long long xb = sg > 0 ? base + e_hi : base - e_lo;
            if (xa >= 310 || xb <= -345) { /* all infinite, or all underflow */
                if (edge & (xa >= 310 ? 1 : 2))
                    continue; /* that one was tried */
                edge |= xa >= 310 ? 1 : 2;
            }
            if (exp_range_ok(n, neg, f->val, xa, xb))
                return 1;
        }
    }
    return 0;
}

/* The number frame after byte c (a digit, sign, point or exponent
 * character): 1 and *nf when c continues the number validly, else 0. */
int gr_num_step(const gr_node *n, const gr_frame *f, int c, gr_frame *nf)
{
    int digit = c >= '0' && c <= '9';
    int ph = f->phase, next = -1;
    int hashed = gr_num_hashed(n, f);
    int bounded = n->u.num.has_min || n->u.num.has_max || n->u.num.integer || hashed;
    /* integers and hashed values are read digit by digit; bounded reals
     * take an exponent too (exp_ok) */
    int big = (f->flags & F_NBIG) != 0;
    int xi = !big && xint(n, f); /* an integer in any spelling */
    int no_exp = (n->u.num.integer || hashed) && !xi;
    if (big && (n->u.num.has_min || n->u.num.has_max))
        no_exp = 1; /* an exponent could bring it back within the bounds */
    switch (ph) {
    case N_START:
        if (c == '-')
            next = N_SIGN;
        /* fallthrough */
    case N_SIGN:
        if (c == '0')
            next = N_ZERO;
        else if (digit && c != '0')
            next = N_INT;
        break;
    case N_ZERO:
    case N_INT:
        if (digit && ph == N_INT)
            next = N_INT;
        else if (c == '.' && !n->u.num.no_frac &&
                 !(n->u.num.integer && (big || (!xi && f->val > 9007199254740992LL))) &&
                 !(bounded && !big &&
                   f->val >= (hashed ? 100000000000000LL : 100000000000000000LL)))
            next = N_DOT; /* past 2^53 a parser reads "N.0" as a rounded double */
        else if ((c == 'e' || c == 'E') && !no_exp)
            next = N_E;
        break;
    case N_DOT:
    case N_FRAC:
        if (digit && (xi || !(n->u.num.integer && c != '0')))
            next = N_FRAC;
        else if ((c == 'e' || c == 'E') && ph == N_FRAC && !no_exp)
            next = N_E;
        break;
    case N_E:
        if (c == '+' || c == '-')
            next = N_ESIGN;
        else if (digit)
            next = N_EXP;
        break;
    case N_ESIGN:
    case N_EXP:
        if (digit)
            next = N_EXP;
        break;
    }
    if (next < 0)
        return 0;
    *nf = *f;
    nf->phase = (uint8_t)next;
    if (c == '-' && ph == N_START)
        nf->flags |= F_NEG;
    if (c == '-' && ph == N_E)
        nf->flags |= F_ENEG;
    if (digit && next == N_EXP) {
        /* GR_EXP_DIGITS at most, leading zeros included; whether the
         * value stays finite (jansson refuses overflowing reals) is
         * gr_num_ok's */
        if (++nf->count > GR_EXP_DIGITS)
            return 0;
        nf->kst = nf->kst * 10 + (c - '0');
    } else if (digit && next == N_FRAC && xi) {
        /* zeros wait in pos; a non-zero digit takes them into val (18
         * significant digits, GR_XINT_FRAC fraction digits) */
        nf->count++;
        if (c == '0') {
            if (nf->pos < UINT32_MAX)
                nf->pos++;
        } else {
            long long z = nf->pos;
            if ((long long)nf->lo + z + 1 > GR_XINT_FRAC ||
                (nf->val && gr_num_digits(nf->val) + z + 1 > 18))
                return 0;
            nf->val = (int64_t)((__int128)nf->val * p10_128((int)(nf->val ? z + 1 : 0)) + (c - '0'));
            nf->lo += (uint32_t)(z + 1);
            nf->pos = 0;
        }
    } else if (digit && !(next == N_FRAC && n->u.num.integer)) {
        if (next == N_INT && nf->hi < UINT32_MAX)
            nf->hi++; /* integer digits: the magnitude of long mantissas */
        int64_t top = hashed ? 100000000000000LL : 100000000000000000LL;
        if (big) {
            if (!big_digit(n, nf, next, c - '0'))
                return 0;
        } else if (next == N_INT &&
                   nf->val >= (big_bounds(n) ? 100000000000000000LL : big_from(n) / 10) &&
                   big_allowed(n, nf)) {
            /* the integer part reaches big_from: on as a big number */
            nf->flags |= F_NBIG;
            if (!big_bounds(n))
                nf->val = n->u.num.multiple > 0 ? nf->val % n->u.num.multiple : 0;
            big_digit(n, nf, next, c - '0');
        } else if (nf->val >= top) {
            /* past 18 significant digits: integers leave the int64
             * range, bounded numbers lose exactness -- refuse both;
             * unbounded reals keep going as long as they are fractions */
            if (bounded || next == N_INT)
                return 0;
            nf->flags |= F_INEXACT;
        } else {
            nf->val = nf->val * 10 + (c - '0');
        }
        if (next == N_FRAC && ++nf->count > GR_HASH_FRAC && hashed)
            return 0;
    } else if (next == N_E) {
        /* from here count holds exponent digits, lo the fraction digits */
        nf->lo = (uint32_t)(ph == N_FRAC ? (xi ? f->lo : f->count) : 0);
        nf->count = 0;
        nf->kst = 0;
        nf->pos = 0;
    } else if (next == N_DOT && xi) {
        nf->lo = 0; /* fraction digits in val */
        nf->pos = 0;
    }
    return gr_num_ok(n, nf, 0);
}

