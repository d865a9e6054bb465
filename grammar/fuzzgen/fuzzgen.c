/* A random stand-in for the model, walking the grammar's masks; see
 * fuzzgen.h for what it proves. */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sx_numjson.h"
#include "grammar/fuzzgen/fuzzgen.h"

static const char *const mode_names[] = {"uniform", "long", "deep", "wide", "edge", "mixed"};

const char *sx_fg_mode_name(int mode)
{
    return mode >= 0 && mode <= SX_FG_MIXED ? mode_names[mode] : NULL;
}

int sx_fg_mode_parse(const char *name)
{
    for (int i = 0; name && i <= SX_FG_MIXED; i++)
        if (!strcmp(name, mode_names[i]))
            return i;
    return -1;
}

const char *sx_fg_verdict_name(int verdict)
{
    static const char *const names[] = {"valid", "invalid", "not-json",
                                        "stuck", "no-completion", "no-verdict"};
    return verdict >= 0 && verdict <= SX_FG_NO_VERDICT ? names[verdict] : "?";
}

void sx_fg_opts_default(sx_fg_opts *o)
{
    o->mode = SX_FG_MIXED;
    o->max_tokens = 64;
    o->seed = 1;
    o->threads = 1;
}

/* splitmix64: every document's stream depends on (seed, index) alone, so a
 * failing document is reproduced by its index. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t *s, uint64_t n)
{
    return n ? next_rand(s) % n : 0;
}

typedef struct walk {
    char  *buf;
    size_t n, cap;
} walk;

static int put(walk *w, const void *p, size_t n)
{
    if (w->n + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->n + n + 1)
            cap *= 2;
        char *b = realloc(w->buf, cap);
        if (!b)
            return SX_ENOMEM;
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->n, p, n);
    w->n += n;
    w->buf[w->n] = 0;
    return SX_OK;
}

static int is_eos(const sx_vocab *v, int32_t t)
{
    for (int i = 0; i < v->n_eos; i++)
        if (v->eos[i] == t)
            return 1;
    return 0;
}

/* Bit counting without relying on the POPCNT instruction, which the
 * portable build does not assume (the compiler's fallback is a slow call). */
static uint32_t ones(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    return (((x + (x >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
}

/* cum[w] = set bits in mask[0..w); returns the total (cum has words + 1 entries). */
static uint32_t count_bits_soft(const uint32_t *mask, int words, uint32_t *cum)
{
    uint32_t c = 0;
    for (int w = 0; w < words; w++) {
        cum[w] = c;
        c += mask[w] ? ones(mask[w]) : 0;
    }
    cum[words] = c;
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* the same with the POPCNT instruction, where the CPU has it */
__attribute__((target("popcnt"))) static uint32_t count_bits_popcnt(const uint32_t *mask,
                                                                   int words, uint32_t *cum)
{
    uint32_t c = 0;
    for (int w = 0; w < words; w++) {
        cum[w] = c;
        c += (uint32_t)__builtin_popcount(mask[w]);
    }
    cum[words] = c;
    return c;
}

static uint32_t count_bits(const uint32_t *mask, int words, uint32_t *cum)
{
    return __builtin_cpu_supports("popcnt") ? count_bits_popcnt(mask, words, cum)
                                            : count_bits_soft(mask, words, cum);
}
#else
#define count_bits count_bits_soft
#endif

/* The k-th set bit of the mask (k < cum[words]). */
static int32_t kth_bit(const uint32_t *mask, const uint32_t *cum, int words, uint32_t k)
{
    int lo = 0, hi = words; /* cum[lo] <= k < cum[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (cum[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    uint32_t x = mask[lo];
    for (k -= cum[lo]; k; k--)
        x &= x - 1;
    return lo * 32 + __builtin_ctz(x);
}

/* How much a biased mode likes a token: higher is better. */
static int score(const sx_vocab *v, int mode, int32_t t)
{
    const uint8_t *b = v->tok_bytes[t];
    int n = (int)v->tok_len[t], s = 0;
    switch (mode) {
    case SX_FG_LONG:
        s = n;
        for (int i = 0; i < n; i++)
            if (b[i] == '"' || b[i] == '}' || b[i] == ']' || b[i] == ',')
                s -= 64;
        return s;
    case SX_FG_DEEP:
        for (int i = 0; i < n; i++)
            s += b[i] == '{' || b[i] == '[' ? 16 : b[i] == '}' || b[i] == ']' ? -16 : 0;
        return s;
    case SX_FG_WIDE:
        for (int i = 0; i < n; i++)
            s += b[i] == ',' ? 16 : b[i] == '"' ? 4 : b[i] == '}' || b[i] == ']' ? -16 : 0;
        return s;
    default:
        return 0;
    }
}

/* Up to k allowed tokens found by drawing token ids uniformly and trying
 * them (accept, then roll back); the one the mode likes best, or -1 when
 * none turned up within the tries.  The first allowed draw is uniform over
 * the allowed tokens, as a pick from the full mask is, at a fraction of the
 * cost where much is allowed (free strings, keys); where little is, the
 * caller falls back to the mask.  The matcher is left unchanged. */
static int32_t pick_by_trying(sx_matcher *m, const sx_vocab *v, uint64_t *rs, int mode, int k)
{
    int32_t best = -1;
    int best_score = 0, found = 0;
    for (int tries = 0; tries < 48 && found < k; tries++) {
        int32_t t = (int32_t)below(rs, (uint64_t)v->n_tokens);
        if (v->is_special[t] || v->tok_len[t] == 0 || is_eos(v, t))
            continue;
        if (sx_matcher_accept(m, t, NULL))
            continue;
        sx_matcher_rollback(m, 1);
        found++;
        int s = score(v, mode, t);
        if (best < 0 || s > best_score) {
            best = t;
            best_score = s;
        }
    }
    return best;
}

/* Parses as the server's re-check does (rpc/protocol_resp.c): numbers of
 * any length read, duplicate keys refused. */
static json_t *load_doc(const char *text, size_t len, json_error_t *je)
{
    sx_numtab t = {0};
    json_t *j = sx_numjson_loadb(text, len, SX_NUMJSON_REJECT_DUPLICATES, &t, je);
    sx_numtab_free(&t);
    return j;
}

static void judge(const sx_validator *val, const char *text, size_t len, sx_fg_doc *info)
{
    json_error_t je;
    json_t *j = load_doc(text, len, &je);
    if (!j) {
        info->verdict = SX_FG_NOT_JSON;
        snprintf(info->why, sizeof info->why, "not JSON at byte %d: %s", je.position, je.text);
        return;
    }
    int valid = 0;
    sx_error why;
    sx_err_clear(&why);
    /* on the text, as the server does: numbers judged on their digits */
    if (sx_val_validate_text(val, text, len, &valid, &why)) {
        info->verdict = SX_FG_NO_VERDICT;
        snprintf(info->why, sizeof info->why, "%s", why.msg);
    } else if (!valid) {
        info->verdict = SX_FG_INVALID;
        snprintf(info->why, sizeof info->why, "%s", why.msg);
    } else {
        info->verdict = SX_FG_VALID;
    }
    json_decref(j);
}

/* Feeds the shortest completion: 0 when the document is then complete,
 * -1 when it could not be closed (info->why says how), SX_ENOMEM. */
static int close_doc(sx_matcher *m, walk *w, sx_fg_doc *info)
{
    enum { CAP = 1 << 16 };
    uint8_t *comp = malloc(CAP);
    sx_error err;
    int rc = -1;
    if (!comp)
        return SX_ENOMEM;
    size_t n = sx_matcher_shortest_completion(m, comp, CAP);
    if (n == (size_t)-1) {
        snprintf(info->why, sizeof info->why, "no shortest completion within %d bytes", CAP);
    } else if (sx_matcher_accept_bytes(m, comp, n, &err)) {
        snprintf(info->why, sizeof info->why, "the matcher refused its own completion: %s",
                 err.msg);
    } else if (!sx_matcher_can_end(m)) {
        snprintf(info->why, sizeof info->why, "the shortest completion left the document open");
    } else {
        rc = put(w, comp, n);
        info->closed = 1;
    }
    free(comp);
    return rc;
}

int sx_fg_sample(sx_matcher *m, const sx_vocab *v, const sx_validator *val, const sx_fg_opts *o,
                 uint64_t index, char **doc, size_t *len, sx_fg_doc *info, sx_error *err)
{
    uint64_t rs = o->seed * 0x2545f4914f6cdd1dull ^ (index + 1) * 0x9e3779b97f4a7c15ull;
    int mode = o->mode == SX_FG_MIXED ? (int)(index % SX_FG_MIXED) : o->mode;
    int budget = o->max_tokens >= 0 ? o->max_tokens : 64;
    walk w = {0};
    uint32_t *mask = malloc((size_t)v->mask_words * 2 * sizeof *mask + sizeof *mask);
    uint32_t *cum = mask ? mask + v->mask_words : NULL;
    int rc = SX_OK;
    memset(info, 0, sizeof *info);
    *doc = NULL;
    *len = 0;
    if (!mask || put(&w, "", 0)) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    if (mode == SX_FG_EDGE)
        budget = (int)below(&rs, (uint64_t)budget / 4 + 1);
    /* how often to take end-of-turn when it is allowed: often for plain
     * walks, rarely for the modes that want big documents */
    unsigned end_odds = mode == SX_FG_UNIFORM ? 4 : 24;
    sx_matcher_reset(m);
    for (;;) {
        if (info->tokens >= budget) {
            int c = close_doc(m, &w, info);
            if (c == SX_ENOMEM) {
                rc = sx_err_set(err, SX_ENOMEM, "out of memory");
                goto fail;
            }
            if (c)
                info->verdict = SX_FG_NO_COMPLETION;
            break;
        }
        int biased = mode != SX_FG_UNIFORM && mode != SX_FG_EDGE;
        int32_t pick = -1;
        /* the masks themselves are what the sampler uses: one step in four
         * (and the first) goes through them; the rest draw and try */
        if (info->tokens > 0 && below(&rs, 4) != 0) {
            if (sx_matcher_can_end(m) && below(&rs, end_odds) == 0)
                break;
            pick = pick_by_trying(m, v, &rs, mode, biased ? 8 : 1);
        }
        if (pick < 0) {
            sx_matcher_fill_mask(m, mask);
            int can_end = 0;
            for (int i = 0; i < v->n_eos; i++) {
                int32_t e = v->eos[i];
                if (mask[e >> 5] >> (e & 31) & 1) {
                    can_end = 1;
                    mask[e >> 5] &= ~(1u << (e & 31));
                }
            }
            uint32_t na = count_bits(mask, v->mask_words, cum);
            if (can_end && (na == 0 || below(&rs, end_odds) == 0))
                break;
            if (na == 0) {
                info->verdict = SX_FG_STUCK;
                snprintf(info->why, sizeof info->why, "empty mask after %d tokens", info->tokens);
                break;
            }
            pick = kth_bit(mask, cum, v->mask_words, (uint32_t)below(&rs, na));
            /* a small tournament: cheap, and still every allowed token can win */
            for (int k = 0; biased && k < 7; k++) {
                int32_t t = kth_bit(mask, cum, v->mask_words, (uint32_t)below(&rs, na));
                if (score(v, mode, t) > score(v, mode, pick))
                    pick = t;
            }
        }
        if (pick < 0 || is_eos(v, pick)) {
            rc = sx_err_set(err, SX_EINTERNAL, "fuzzgen: no text token at the chosen mask bit");
            goto fail;
        }
        if (sx_matcher_accept(m, pick, err)) {
            sx_err_prefix(err, "fuzzgen: the matcher refused token %d that its mask allowed", pick);
            rc = SX_EINTERNAL;
            goto fail;
        }
        if (put(&w, v->tok_bytes[pick], v->tok_len[pick])) {
            rc = sx_err_set(err, SX_ENOMEM, "out of memory");
            goto fail;
        }
        info->tokens++;
    }
    if (info->verdict == SX_FG_VALID)
        judge(val, w.buf, w.n, info);
    *doc = w.buf;
    *len = w.n;
    free(mask);
    return SX_OK;
fail:
    free(w.buf);
    free(mask);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct fg_shared {
    const sx_grammar   *g;
    const sx_vocab     *v;
    const sx_validator *val;
    const sx_fg_opts   *o;
    long                count;
    double              t0, time_limit_s;
    sx_fg_doc_fn        each;
    void               *ctx;
    pthread_mutex_t     mu;
    sx_fg_stats        *st;
    int                 stop, rc;
    sx_error            err;
} fg_shared;

typedef struct fg_worker {
    fg_shared *sh;
    int        t, n;
} fg_worker;

static void *worker(void *arg)
{
    fg_worker *w = arg;
    fg_shared *sh = w->sh;
    sx_matcher *m = NULL;
    sx_error err;
    sx_err_clear(&err);
    int rc = sx_matcher_new(sh->g, &m, &err);
    for (long i = w->t; !rc && i < sh->count; i += w->n) {
        char *doc;
        size_t len;
        sx_fg_doc info;
        if ((rc = sx_fg_sample(m, sh->v, sh->val, sh->o, (uint64_t)i, &doc, &len, &info, &err)))
            break;
        pthread_mutex_lock(&sh->mu);
        int stop = sh->stop;
        if (!stop) {
            sh->st->docs++;
            sh->st->by_verdict[info.verdict]++;
            sh->st->closed += info.closed;
            sh->st->tokens += info.tokens;
            if (sh->each && sh->each(sh->ctx, (uint64_t)i, doc, len, &info))
                stop = sh->stop = 1;
            if (sh->time_limit_s > 0 && now_s() - sh->t0 > sh->time_limit_s)
                stop = sh->stop = 1;
        }
        pthread_mutex_unlock(&sh->mu);
        free(doc);
        if (stop)
            break;
    }
    if (rc) {
        pthread_mutex_lock(&sh->mu);
        if (!sh->rc) {
            sh->rc = rc;
            sh->err = err;
        }
        sh->stop = 1;
        pthread_mutex_unlock(&sh->mu);
    }
    sx_matcher_free(m);
    return NULL;
}

int sx_fg_run(const sx_grammar *g, const sx_vocab *v, const sx_validator *val,
              const sx_fg_opts *o, long count, double time_limit_s, sx_fg_doc_fn each, void *ctx,
              sx_fg_stats *st, sx_error *err)
{
    enum { MAX_THREADS = 64 };
    int n = o->threads < 1 ? 1 : o->threads > MAX_THREADS ? MAX_THREADS : o->threads;
    if (n > count)
        n = count > 0 ? (int)count : 1;
    fg_shared sh = {.g = g, .v = v, .val = val, .o = o, .count = count, .t0 = now_s(),
                    .time_limit_s = time_limit_s, .each = each, .ctx = ctx, .st = st};
    fg_worker w[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started = 0;
    sx_err_clear(&sh.err);
    pthread_mutex_init(&sh.mu, NULL);
    for (int t = 0; t < n; t++) {
        w[t] = (fg_worker){.sh = &sh, .t = t, .n = n};
        /* the first worker runs on this thread; a thread that cannot start
         * leaves its share undone, so say so */
        if (t > 0 && pthread_create(&tid[t], NULL, worker, &w[t])) {
            sh.rc = sx_err_set(&sh.err, SX_ENOMEM, "fuzzgen: cannot start thread %d", t);
            sh.stop = 1;
            break;
        }
        started = t + 1;
    }
    worker(&w[0]);
    for (int t = 1; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&sh.mu);
    st->seconds += now_s() - sh.t0;
    if (sh.rc && err)
        *err = sh.err;
    return sh.rc;
}
