/* Sliding-window perplexity; see perplexity.h for the window rules and the
 * definitions. */
#include <math.h>
#include <stdlib.h>

#include "engine/perplexity.h"

#define DEFAULT_CHUNK 64

/* One window: tokens [begin, end), scoring those from `first` on. */
typedef struct ppl_window {
    int64_t begin, end, first;
} ppl_window;

/* Walks the windows in order; returns 0 when there are no more.  *prev_end
 * carries the previous window's end between calls (start it at 0). */
static int next_window(int64_t n, int window, int stride, int64_t *begin, int64_t *prev_end,
                       ppl_window *w)
{
    if (*prev_end >= n)
        return 0;
    w->begin = *begin;
    w->end = *begin + window < n ? *begin + window : n;
    /* the window's own first token has no context, so it is never scored */
    w->first = *prev_end > w->begin + 1 ? *prev_end : w->begin + 1;
    *prev_end = w->end;
    *begin += stride;
    return 1;
}

static int check_args(int64_t n, int window, int stride, sx_error *err)
{
    if (window < 2)
        return sx_err_set(err, SX_EINVAL, "window must be at least 2 tokens (got %d)", window);
    if (stride < 1 || stride > window)
        return sx_err_set(err, SX_EINVAL, "stride must be between 1 and the window (%d); got %d",
                          window, stride);
    if (n < 2)
        return sx_err_set(err, SX_EINVAL, "perplexity needs at least 2 tokens (got %lld)",
                          (long long)n);
    return SX_OK;
}

int sx_ppl_plan(int64_t n, int window, int stride, int64_t *n_scored, int64_t *n_windows,
                sx_error *err)
{
    int rc = check_args(n, window, stride, err);
    if (rc)
        return rc;
    int64_t begin = 0, prev_end = 0, scored = 0, windows = 0;
    ppl_window w;
    while (next_window(n, window, stride, &begin, &prev_end, &w)) {
        scored += w.end - w.first;
        windows++;
    }
    *n_scored = scored;
    *n_windows = windows;
    return SX_OK;
}

/* -log softmax(row)[target], with the log-sum-exp taken around the row's
 * maximum so that no term overflows.  The terms are single precision (each
 * within ~1e-7 relative, far below what f32 logits carry) but summed in
 * double: 151,936 of them would lose the small ones in a float sum.  expf
 * rather than exp because this runs over every vocabulary row of every
 * scored token. */
static double row_nll(const float *row, int n, int target)
{
    float mx = row[0];
    for (int i = 1; i < n; i++)
        if (row[i] > mx)
            mx = row[i];
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += (double)expf(row[i] - mx);
    return log(sum) + (double)mx - (double)row[target];
}

/* KL(p || q) of the softmaxes of rows a (p) and b (q), as row_nll: f32
 * terms around each row's maximum, double sums. */
static double row_kl(const float *a, const float *b, int n)
{
    float ma = a[0], mb = b[0];
    for (int i = 1; i < n; i++) {
        ma = a[i] > ma ? a[i] : ma;
        mb = b[i] > mb ? b[i] : mb;
    }
    double sa = 0, sb = 0, cross = 0;
    for (int i = 0; i < n; i++) {
        double pa = (double)expf(a[i] - ma);
        sa += pa;
        sb += (double)expf(b[i] - mb);
        cross += pa * ((double)(a[i] - ma) - (double)(b[i] - mb));
    }
    /* sum p (log p - log q), log p = a - ma - log sa, log q = b - mb - log sb */
    double kl = cross / sa - log(sa) + log(sb);
    return kl > 0 ? kl : 0;   /* rounding can dip below the true 0 */
}

static int row_argmax(const float *row, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (row[i] > row[best])
            best = i;
    return best;
}

typedef struct ppl_run {
    sx_backend         *e;
    const int32_t      *ids;
    const sx_tokenizer *tok;
    int                 chunk, rows;
    float              *logits; /* chunk x rows */
    float              *ref_logits; /* chunk x rows, with opts->ref */
    const sx_ppl_opts  *opts;
    int64_t             total;
    sx_ppl_result       res;
} ppl_run;

/* Feeds the window's tokens but its last, in chunks; chunks that reach a
 * scored position's predecessor ask for every row. */
static int run_window(ppl_run *r, const ppl_window *w, sx_error *err)
{
    int seq = -1, rseq = -1;
    sx_backend *ref = r->opts->ref;
    int rc = sx_backend_seq_new(r->e, &seq, err);
    if (rc)
        return rc;
    if (ref && (rc = sx_backend_seq_new(ref, &rseq, err))) {
        sx_backend_seq_free(r->e, seq);
        return rc;
    }
    /* row of local position j predicts token begin+j+1 */
    int64_t feed = w->end - 1 - w->begin, row0 = w->first - 1 - w->begin;
    for (int64_t c0 = 0; c0 < feed;) {
        int64_t c1 = c0 + r->chunk < feed ? c0 + r->chunk : feed;
        /* stop a context-only chunk where the scored rows begin, so that
         * every chunk is either all context or all rows */
        if (c0 < row0 && c1 > row0)
            c1 = row0;
        sx_step_item it = {
            .seq = seq,
            .tokens = r->ids + w->begin + c0,
            .n = (int)(c1 - c0),
            .logits_all = c0 >= row0,
        };
        if ((rc = sx_backend_step(r->e, &it, 1, r->logits, err)))
            goto fail;
        if (ref) {
            it.seq = rseq;
            if ((rc = sx_backend_step(ref, &it, 1, r->ref_logits, err))) {
                sx_err_prefix(err, "reference engine");
                goto fail;
            }
        }
        if (it.logits_all) {
            for (int64_t j = c0; j < c1; j++) {
                int32_t t = r->ids[w->begin + j + 1];
                const float *row = r->logits + (size_t)(j - c0) * (size_t)r->rows;
                r->res.nll_sum += row_nll(row, r->rows, t);
                r->res.n_scored++;
                if (ref) {
                    const float *rrow = r->ref_logits + (size_t)(j - c0) * (size_t)r->rows;
                    double kl = row_kl(rrow, row, r->rows);
                    r->res.ref_nll_sum += row_nll(rrow, r->rows, t);
                    r->res.kl_sum += kl;
                    r->res.kl_max = kl > r->res.kl_max ? kl : r->res.kl_max;
                    r->res.top1_same += row_argmax(rrow, r->rows) == row_argmax(row, r->rows);
                }
                if (r->tok) {
                    size_t len = 0;
                    if (sx_tok_bytes(r->tok, t, &len))
                        r->res.n_bytes += (int64_t)len;
                }
            }
            if (r->opts->progress)
                r->opts->progress(r->opts->ctx, r->res.n_scored, r->total);
        }
        c0 = c1;
    }
fail:
    sx_backend_seq_free(r->e, seq);
    if (ref)
        sx_backend_seq_free(ref, rseq);
    return rc;
}

int sx_ppl_run(sx_backend *e, const int32_t *ids, size_t n, const sx_tokenizer *tok,
               const sx_ppl_opts *opts, sx_ppl_result *out, sx_error *err)
{
    if (!e || !opts || !out || (!ids && n))
        return sx_err_set(err, SX_EINVAL, "sx_ppl_run: missing argument");
    const sx_qwen3_config *cfg = &sx_backend_model(e)->cfg;
    int64_t n_windows = 0;
    ppl_run r = {.e = e, .ids = ids, .tok = tok, .opts = opts, .rows = cfg->vocab_rows};
    int rc = sx_ppl_plan((int64_t)n, opts->window, opts->stride, &r.total, &n_windows, err);
    if (rc)
        return rc;
    if (opts->window > cfg->max_pos)
        return sx_err_set(err, SX_ELIMIT, "window %d is longer than the model's %d positions",
                          opts->window, cfg->max_pos);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= cfg->vocab_rows)
            return sx_err_setp(err, SX_EINVAL, NULL, (long)i,
                               "token %zu is %d, outside the model's %d rows", i, (int)ids[i],
                               cfg->vocab_rows);
    r.chunk = opts->chunk > 0 ? opts->chunk : DEFAULT_CHUNK;
    if (r.chunk > opts->window)
        r.chunk = opts->window;
    if (opts->ref && sx_backend_model(opts->ref)->cfg.vocab_rows != r.rows)
        return sx_err_set(err, SX_EINVAL, "perplexity: the reference engine's model has %d rows, "
                          "not %d", sx_backend_model(opts->ref)->cfg.vocab_rows, r.rows);
    r.logits = malloc((size_t)r.chunk * (size_t)r.rows * sizeof *r.logits);
    if (opts->ref)
        r.ref_logits = malloc((size_t)r.chunk * (size_t)r.rows * sizeof *r.ref_logits);
    if (!r.logits || (opts->ref && !r.ref_logits)) {
        free(r.logits);
        free(r.ref_logits);
        return sx_err_set(err, SX_ENOMEM, "perplexity: no memory for %d logit rows", r.chunk);
    }

    int64_t begin = 0, prev_end = 0;
    ppl_window w;
    while (next_window((int64_t)n, opts->window, opts->stride, &begin, &prev_end, &w)) {
        if ((rc = run_window(&r, &w, err))) {
            sx_err_prefix(err, "window at token %lld", (long long)w.begin);
            goto fail;
        }
        r.res.n_windows++;
    }
    if (r.res.n_scored != r.total) {
        rc = sx_err_set(err, SX_EINTERNAL, "perplexity scored %lld tokens, planned %lld",
                        (long long)r.res.n_scored, (long long)r.total);
        goto fail;
    }
    r.res.ppl = exp(r.res.nll_sum / (double)r.res.n_scored);
    r.res.bits_per_byte = r.res.n_bytes ? r.res.nll_sum / log(2.0) / (double)r.res.n_bytes : 0;
    *out = r.res;
fail:
    free(r.logits);
    free(r.ref_logits);
    return rc;
}
