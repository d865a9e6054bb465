/* Service metrics in the Prometheus text format (GET /metrics). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/server_internal.h"

static const double ms_bounds[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
                                   30000, 60000};
static const double tpot_bounds[] = {0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

void rpc_metrics_init(rpc_metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->ttft = (rpc_hist){.bounds = ms_bounds, .n = N(ms_bounds)};
    m->total = (rpc_hist){.bounds = ms_bounds, .n = N(ms_bounds)};
    m->queue = (rpc_hist){.bounds = ms_bounds, .n = N(ms_bounds)};
    m->tpot = (rpc_hist){.bounds = tpot_bounds, .n = N(tpot_bounds)};
    m->batch = (rpc_hist){.bounds = batch_bounds, .n = N(batch_bounds)};
}

void rpc_metrics_destroy(rpc_metrics *m)
{
    pthread_mutex_destroy(&m->mu);
}

void rpc_hist_add(rpc_hist *h, double x)
{
    int i = 0;
    while (i < h->n && x > h->bounds[i])
        i++;
    h->counts[i]++;
    h->sum += x;
    h->count++;
}

void rpc_metrics_request(rpc_metrics *m, int via, int code, int n_prompt, int n_completion,
                         int n_forced, int n_prefilled, double queue_ms, double ttft_ms,
                         double tpot_ms, double total_ms)
{
    if (code < 0 || code >= SX_RPC_CODE_COUNT)
        code = SX_RPC_INTERNAL;
    pthread_mutex_lock(&m->mu);
    m->requests[via ? 1 : 0][code]++;
    m->tok_prompt += (uint64_t)(n_prompt > 0 ? n_prompt : 0);
    m->tok_completion += (uint64_t)(n_completion > 0 ? n_completion : 0);
    m->tok_forced += (uint64_t)(n_forced > 0 ? n_forced : 0);
    m->tok_prefilled += (uint64_t)(n_prefilled > 0 ? n_prefilled : 0);
    if (code == SX_RPC_OK) {
        rpc_hist_add(&m->queue, queue_ms);
        rpc_hist_add(&m->total, total_ms);
        if (n_completion > 0)
            rpc_hist_add(&m->ttft, ttft_ms);
        if (n_completion > 1)
            rpc_hist_add(&m->tpot, tpot_ms);
    }
    pthread_mutex_unlock(&m->mu);
}

void rpc_metrics_recheck_failure(rpc_metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->recheck_failures++;
    pthread_mutex_unlock(&m->mu);
}

void rpc_metrics_step(rpc_metrics *m, int batch, const sx_engine_lm_stats *lm)
{
    pthread_mutex_lock(&m->mu);
    m->steps++;
    if (lm)
        m->lm = *lm;
    rpc_hist_add(&m->batch, batch);
    pthread_mutex_unlock(&m->mu);
}

void rpc_metrics_spec(rpc_metrics *m, int64_t drafted, int64_t accepted)
{
    pthread_mutex_lock(&m->mu);
    m->spec_drafted = drafted;
    m->spec_accepted = accepted;
    pthread_mutex_unlock(&m->mu);
}

void rpc_metrics_prefix(rpc_metrics *m, const sx_gen_prefix_stats *st)
{
    pthread_mutex_lock(&m->mu);
    m->prefix = *st;
    pthread_mutex_unlock(&m->mu);
}

static int put(sx_bytes *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put(sx_bytes *out, const char *fmt, ...)
{
    char buf[512], *big = NULL;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    int rc = SX_EINTERNAL;
    if (n >= 0 && (size_t)n < sizeof buf) {
        rc = sx_bytes_append(out, buf, (size_t)n);
    } else if (n >= 0 && (big = malloc((size_t)n + 1))) {
        vsnprintf(big, (size_t)n + 1, fmt, ap2);
        rc = sx_bytes_append(out, big, (size_t)n);
        free(big);
    }
    va_end(ap2);
    return rc;
}

static int hist(sx_bytes *out, const char *name, const char *help, const rpc_hist *h)
{
    int rc = put(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < h->n && !rc; i++) {
        cum += h->counts[i];
        rc = put(out, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], (unsigned long long)cum);
    }
    if (!rc)
        rc = put(out, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
                 (unsigned long long)h->count, name, h->sum, name, (unsigned long long)h->count);
    return rc;
}

int rpc_metrics_render(rpc_metrics *m, const rpc_gauges *g, sx_bytes *out)
{
    static const char *const via[2] = {"nng", "http"};
    int rc;
    pthread_mutex_lock(&m->mu);
    rc = put(out, "# HELP strux_requests_total Requests answered, by transport and result code "
                  "(code=\"ok\" is success; the rest are errors).\n"
                  "# TYPE strux_requests_total counter\n");
    for (int v = 0; v < 2 && !rc; v++)
        for (int c = 0; c < SX_RPC_CODE_COUNT && !rc; c++)
            rc = put(out, "strux_requests_total{via=\"%s\",code=\"%s\"} %llu\n", via[v],
                     sx_rpc_code_name(c), (unsigned long long)m->requests[v][c]);
    if (!rc)
        rc = put(out,
                 "# HELP strux_tokens_total Tokens of answered requests: prompt (once per "
                 "request), completion and forced (of every choice), prefilled (prompt tokens "
                 "the model ran: less those from the prefix cache or forked between choices).\n"
                 "# TYPE strux_tokens_total counter\n"
                 "strux_tokens_total{kind=\"prompt\"} %llu\n"
                 "strux_tokens_total{kind=\"completion\"} %llu\n"
                 "strux_tokens_total{kind=\"forced\"} %llu\n"
                 "strux_tokens_total{kind=\"prefilled\"} %llu\n"
                 "# HELP strux_model_tokens_total Tokens the model ran, prompt and output "
                 "(the count of the engine).\n"
                 "# TYPE strux_model_tokens_total counter\n"
                 "strux_model_tokens_total %lld\n"
                 "# HELP strux_recheck_failures_total Outputs the validator's re-check refused, "
                 "answered with code internal.  Each one is a grammar bug, never noise: the log "
                 "names the request and the schema's hash.\n"
                 "# TYPE strux_recheck_failures_total counter\n"
                 "strux_recheck_failures_total %llu\n"
                 "# HELP strux_steps_total Generator steps run.\n"
                 "# TYPE strux_steps_total counter\n"
                 "strux_steps_total %llu\n"
                 "# HELP strux_lm_head_panels_total LM-head work under grammar masks, in 32-row "
                 "panels: what a dense head would read (kind=\"dense\") and what the sparse head "
                 "read (kind=\"read\").\n"
                 "# TYPE strux_lm_head_panels_total counter\n"
                 "strux_lm_head_panels_total{kind=\"dense\"} %lld\n"
                 "strux_lm_head_panels_total{kind=\"read\"} %lld\n",
                 (unsigned long long)m->tok_prompt, (unsigned long long)m->tok_completion,
                 (unsigned long long)m->tok_forced, (unsigned long long)m->tok_prefilled,
                 (long long)m->lm.tokens, (unsigned long long)m->recheck_failures,
                 (unsigned long long)m->steps,
                 (long long)m->lm.panels_dense, (long long)m->lm.panels_computed);
    if (!rc)
        rc = put(out,
                 "# HELP strux_mask_wait_seconds_total Masked steps whose forward pass overlapped "
                 "the grammar's mask threads (the CUDA backend): host time blocked on masks after "
                 "the launch (kind=\"host\"), GPU time idle waiting on them (kind=\"gpu_idle\") "
                 "and the passes' GPU time (kind=\"gpu_busy\").\n"
                 "# TYPE strux_mask_wait_seconds_total counter\n"
                 "strux_mask_wait_seconds_total{kind=\"host\"} %.6f\n"
                 "strux_mask_wait_seconds_total{kind=\"gpu_idle\"} %.6f\n"
                 "strux_mask_wait_seconds_total{kind=\"gpu_busy\"} %.6f\n"
                 "# HELP strux_masked_steps_total Those masked steps.\n"
                 "# TYPE strux_masked_steps_total counter\n"
                 "strux_masked_steps_total %lld\n",
                 m->lm.mask_wait_us / 1e6, m->lm.gpu_idle_us / 1e6, m->lm.gpu_busy_us / 1e6,
                 (long long)m->lm.mask_steps);
    if (!rc)
        rc = put(out,
                 "# HELP strux_spec_drafted_tokens_total Draft tokens proposed for verification "
                 "(speculative decoding).\n"
                 "# TYPE strux_spec_drafted_tokens_total counter\n"
                 "strux_spec_drafted_tokens_total %lld\n"
                 "# HELP strux_spec_accepted_tokens_total Draft tokens that were the model's own "
                 "choice.\n"
                 "# TYPE strux_spec_accepted_tokens_total counter\n"
                 "strux_spec_accepted_tokens_total %lld\n",
                 (long long)m->spec_drafted, (long long)m->spec_accepted);
    if (!rc)
        rc = put(out,
                 "# HELP strux_prefix_cache_lookups_total Requests that forked cached prompt KV "
                 "(hit) or found none worth forking (miss).\n"
                 "# TYPE strux_prefix_cache_lookups_total counter\n"
                 "strux_prefix_cache_lookups_total{result=\"hit\"} %lld\n"
                 "strux_prefix_cache_lookups_total{result=\"miss\"} %lld\n"
                 "# HELP strux_prefix_cache_evictions_total Cached prompts dropped for room.\n"
                 "# TYPE strux_prefix_cache_evictions_total counter\n"
                 "strux_prefix_cache_evictions_total %lld\n"
                 "# HELP strux_prefix_cache_joins_total Requests that forked the KV of a prompt "
                 "another request was still prefilling (counted among the hits too).\n"
                 "# TYPE strux_prefix_cache_joins_total counter\n"
                 "strux_prefix_cache_joins_total %lld\n"
                 "# HELP strux_prefix_cache_cached_tokens_total Prompt tokens taken from the "
                 "prefix cache instead of prefilled.\n"
                 "# TYPE strux_prefix_cache_cached_tokens_total counter\n"
                 "strux_prefix_cache_cached_tokens_total %lld\n"
                 "# HELP strux_prefix_cache_entries Cached prompts held.\n"
                 "# TYPE strux_prefix_cache_entries gauge\nstrux_prefix_cache_entries %lld\n"
                 "# HELP strux_prefix_cache_tokens Tokens the cached prompts hold.\n"
                 "# TYPE strux_prefix_cache_tokens gauge\nstrux_prefix_cache_tokens %lld\n",
                 (long long)m->prefix.hits, (long long)m->prefix.misses,
                 (long long)m->prefix.evictions, (long long)m->prefix.joins,
                 (long long)m->prefix.cached_tokens, (long long)m->prefix.entries, (long long)m->prefix.tokens);
    if (!rc)
        rc = hist(out, "strux_ttft_ms", "Time from receipt to the first output token, ms.",
                  &m->ttft);
    if (!rc)
        rc = hist(out, "strux_tpot_ms", "Mean time per output token after the first, ms.",
                  &m->tpot);
    if (!rc)
        rc = hist(out, "strux_request_ms", "Time from receipt to the answer, ms.", &m->total);
    if (!rc)
        rc = hist(out, "strux_queue_ms", "Time waiting before joining the batch, ms.", &m->queue);
    if (!rc)
        rc = hist(out, "strux_batch_size", "Requests live in the generator at each step.",
                  &m->batch);
    pthread_mutex_unlock(&m->mu);
    if (!rc)
        rc = put(out,
                 "# HELP strux_queue_depth Requests accepted and waiting to join the batch.\n"
                 "# TYPE strux_queue_depth gauge\nstrux_queue_depth %d\n"
                 "# HELP strux_running Requests in the generator.\n"
                 "# TYPE strux_running gauge\nstrux_running %d\n"
                 "# HELP strux_inflight Requests accepted and not yet answered.\n"
                 "# TYPE strux_inflight gauge\nstrux_inflight %d\n"
                 "# HELP strux_kv_capacity_tokens KV-cache capacity in tokens.\n"
                 "# TYPE strux_kv_capacity_tokens gauge\nstrux_kv_capacity_tokens %lld\n",
                 g->queued, g->running, g->inflight, (long long)g->kv_capacity);
    if (!rc)
        rc = put(out,
                 "# HELP strux_schema_cache_hits_total Compiled-schema cache hits.\n"
                 "# TYPE strux_schema_cache_hits_total counter\n"
                 "strux_schema_cache_hits_total %llu\n"
                 "# HELP strux_schema_cache_misses_total Compiled-schema cache misses (compiles).\n"
                 "# TYPE strux_schema_cache_misses_total counter\n"
                 "strux_schema_cache_misses_total %llu\n"
                 "# HELP strux_schema_cache_evictions_total Entries evicted for space.\n"
                 "# TYPE strux_schema_cache_evictions_total counter\n"
                 "strux_schema_cache_evictions_total %llu\n"
                 "# HELP strux_schema_compile_errors_total Constraints refused by the compiler.\n"
                 "# TYPE strux_schema_compile_errors_total counter\n"
                 "strux_schema_compile_errors_total %llu\n"
                 "# HELP strux_schema_cache_entries Compiled constraints held.\n"
                 "# TYPE strux_schema_cache_entries gauge\nstrux_schema_cache_entries %zu\n"
                 "# HELP strux_schema_cache_bytes Bytes charged to the cache.\n"
                 "# TYPE strux_schema_cache_bytes gauge\nstrux_schema_cache_bytes %zu\n",
                 (unsigned long long)g->cache.hits, (unsigned long long)g->cache.misses,
                 (unsigned long long)g->cache.evictions,
                 (unsigned long long)g->cache.compile_errors, g->cache.entries, g->cache.bytes);
    if (!rc)
        rc = put(out,
                 "# HELP strux_compiles_running Compiles running for a waiting request.\n"
                 "# TYPE strux_compiles_running gauge\nstrux_compiles_running %d\n"
                 "# HELP strux_compiles_abandoned Compiles still running whose requests gave "
                 "up.\n"
                 "# TYPE strux_compiles_abandoned gauge\nstrux_compiles_abandoned %d\n"
                 "# HELP strux_compiles_queued Compiles waiting for a compile thread.\n"
                 "# TYPE strux_compiles_queued gauge\nstrux_compiles_queued %d\n"
                 "# HELP strux_compiles_merged_total Requests that joined a compile already in "
                 "flight.\n"
                 "# TYPE strux_compiles_merged_total counter\nstrux_compiles_merged_total %llu\n"
                 "# HELP strux_compiles_gave_up_total Compiles stopped at a deadline or "
                 "cancelled.\n"
                 "# TYPE strux_compiles_gave_up_total counter\nstrux_compiles_gave_up_total "
                 "%llu\n"
                 "# HELP strux_compiles_refused_total New compiles refused while too many "
                 "abandoned ones ran.\n"
                 "# TYPE strux_compiles_refused_total counter\nstrux_compiles_refused_total "
                 "%llu\n",
                 g->cache.running - g->cache.abandoned, g->cache.abandoned, g->cache.queued,
                 (unsigned long long)g->cache.merged, (unsigned long long)g->cache.gave_up,
                 (unsigned long long)g->cache.refused);
    return rc;
}
