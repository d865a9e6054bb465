/* Exact label probabilities for choices requests (see sx_rpc_score_labels
 * in server.h).  The prompt is run once; every label continues from a fork
 * of its cache, so the cost is the labels' own tokens, not the prompt's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/server.h"

/* Rows of logits computed per engine step, to bound scratch memory
 * (a Qwen3 row is 151,936 floats). */
#define SCORE_ROWS 32
/* Forks live at once. */
#define SCORE_FORKS 16

static double log_softmax_at(const float *row, int n, int32_t tok)
{
    if (tok < 0 || tok >= n)
        return -INFINITY;
    float mx = row[0];
    for (int i = 1; i < n; i++)
        mx = row[i] > mx ? row[i] : mx;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += exp((double)row[i] - mx);
    return (double)row[tok] - mx - log(sum);
}

int sx_rpc_score_labels(sx_backend *e, int vocab_valid, const int32_t *prompt, int n_prompt,
                        int base_in, int n_base, const sx_ids *labels, size_t n_labels, int chunk,
                        double *logp, sx_error *err)
{
    int base = base_in; /* ours from here on, whatever happens */
    const int rows = sx_backend_model(e)->cfg.vocab_rows;
    if (vocab_valid <= 0 || vocab_valid > rows)
        vocab_valid = rows;
    if (chunk <= 0)
        chunk = 256;
    int forks[SCORE_FORKS], n_forks = 0, rc;
    float *logits = NULL;
    sx_step_item *items = NULL;
    if (base < 0)
        n_base = 0;
    if (n_prompt <= 0 || n_base < 0 || n_base >= n_prompt) {
        rc = sx_err_set(err, SX_EINVAL, "score: empty prompt or cached part %d of %d", n_base,
                        n_prompt);
        goto fail;
    }
    for (size_t i = 0; i < n_labels; i++)
        if (labels[i].n == 0) {
            rc = sx_err_set(err, SX_EINVAL, "score: label %zu has no tokens", i);
            goto fail;
        }
    size_t max_len = 1;
    for (size_t i = 0; i < n_labels; i++)
        max_len = labels[i].n > max_len ? labels[i].n : max_len;
    size_t cap_rows = max_len > SCORE_ROWS ? max_len : SCORE_ROWS;
    logits = malloc(cap_rows * (size_t)rows * sizeof *logits);
    items = malloc(SCORE_FORKS * sizeof *items);
    if (!logits || !items) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    if (base < 0 && (rc = sx_backend_seq_new(e, &base, err)))
        goto fail;
    for (int off = n_base; off < n_prompt; off += chunk) {
        int n = n_prompt - off < chunk ? n_prompt - off : chunk;
        sx_step_item it = {.seq = base, .tokens = prompt + off, .n = n, .logits_all = 0};
        if ((rc = sx_backend_step(e, &it, 1, logits, err)))
            goto fail;
    }
    /* the first token of every label is predicted by the prompt's last row */
    for (size_t i = 0; i < n_labels; i++)
        logp[i] = log_softmax_at(logits, vocab_valid, labels[i].v[0]);
    /* the rest: feed tokens 0..n-2 of each label on a fork; row j predicts
     * token j+1 */
    size_t next = 0;
    while (next < n_labels) {
        size_t first = next, used = 0;
        int n_items = 0;
        while (next < n_labels && n_items < SCORE_FORKS) {
            size_t need = labels[next].n - 1;
            if (n_items > 0 && used + need > cap_rows)
                break;
            used += need;
            if (need > 0) {
                if ((rc = sx_backend_seq_fork(e, base, n_prompt, &forks[n_forks], err)))
                    goto fail;
                items[n_items++] = (sx_step_item){.seq = forks[n_forks], .tokens = labels[next].v,
                                                  .n = (int)need, .logits_all = 1};
                n_forks++;
            }
            next++;
        }
        if (n_items > 0 && (rc = sx_backend_step(e, items, n_items, logits, err)))
            goto fail;
        const float *row = logits;
        for (size_t i = first; i < next; i++)
            for (size_t t = 1; t < labels[i].n; t++, row += rows)
                logp[i] += log_softmax_at(row, vocab_valid, labels[i].v[t]);
        for (int k = 0; k < n_forks; k++)
            sx_backend_seq_free(e, forks[k]);
        n_forks = 0;
    }
    rc = SX_OK;
fail:
    for (int k = 0; k < n_forks; k++)
        sx_backend_seq_free(e, forks[k]);
    if (base >= 0)
        sx_backend_seq_free(e, base);
    free(logits);
    free(items);
    return rc;
}
