/* The Qwen3 forward pass over the paged KV cache.
 *
 * A step is validated and its cache blocks reserved before anything runs,
 * so a step either appends every item or nothing.  The rows of all items
 * then go through the layers together, at most SX_ENGINE_PASS_TOKENS rows
 * per pass: each weight matrix is streamed once per pass and serves every
 * row in it.  Each stage is one parallel-for over the pool: matrix stages
 * split output rows across threads, attention hands out (piece, kv head,
 * query rows) tasks from an atomic counter.  A fork/join costs little, but
 * a stage that runs on one thread makes the others wait, so the small
 * element-wise work rides along with a neighbour: attention tasks rotate
 * and cache their own q/k heads (pieces of <= 16 rows) and pack their own
 * output, each thread applies SwiGLU to the gate/up rows it computed, and a
 * norm of a few rows is done by the last thread to finish the stage before
 * (decode: 5 fork/joins per layer).  None of it changes an operation or
 * its order: the bits are those of separate stages. */
#include "engine/cpu/engine_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct pass {
    sx_engine     *e;
    const sx_seg  *segs;
    int            nseg, T, layer;
    /* matrix stage: y_i = in x W_i^T for up to three matrices; in is
     * packed (cpu_kernels.h) */
    const float   *mm_in;
    int            mm_ntok, mm_n, mm_acc;
    const sx_wmat *mm_w[3];
    float         *mm_y[3];
    long           mm_ldy[3];
    /* AWQ: the input's group sums for group mm_xs_group, computed once
     * for the stage (NULL: each thread computes its own) */
    const float   *mm_xs;
    int            mm_xs_group;
    /* gate and up split together, each thread's rows then through SwiGLU
     * into xout (the down projection's input) */
    int            mm_swiglu;
    float         *xout;
    /* norm stage: rows (all, or norm_rows[0..norm_n)) of x -> xin */
    const float   *norm_w;
    const int32_t *norm_rows;
    int            norm_n;
    /* a few rows: the norm is the tail of the stage before it (run by the
     * thread that finishes it last), not a stage of its own */
    int            norm_tail;
    atomic_int     arrived;
    /* attention; qk_in_att: each task first normalises, rotates and caches
     * its own rows and heads (every piece is one task per kv head) */
    int            n_tasks, qk_in_att;
    atomic_int     next_task;
    /* LM head: logits rows, and the panels a masked pass computes */
    int            n_lg, lm_n;
    float         *lg_out;
} pass;

/* tokens from which an AWQ stage's group sums are shared (below, each
 * thread sums its own: a dispatch costs more than a few tokens' sums) */
enum { AWQ_SHARED_SUMS = 4 };
/* rows up to which a norm runs on one thread as the tail of the stage
 * before it (more: a parallel stage of its own) */
enum { NORM_TAIL_ROWS = 8 };

static float *thr_scratch(sx_engine *e, int tid)
{
    return e->thr + (size_t)tid * e->thr_floats;
}

static void rows_of(int n, int tid, int nth, int *lo, int *hi)
{
    long a, b;
    sx_pool_range(n, nth, tid, 1, &a, &b);
    *lo = (int)a;
    *hi = (int)b;
}

static void stage_tail(pass *p, int tid, int nth);

static void stage_embed(void *arg, int tid, int nth)
{
    pass *p = arg;
    sx_engine *e = p->e;
    int H = e->cfg.hidden, half = e->cfg.head_dim / 2, lo, hi;
    rows_of(p->T, tid, nth, &lo, &hi);
    for (int t = lo; t < hi; t++) {
        const sx_seg *s = &p->segs[e->row_seg[t]];
        int i = t - s->row0;
        const uint16_t *src = e->m->embed + (size_t)s->tok[i] * H;
        float *x = e->x + (size_t)t * H;
        for (int j = 0; j < H; j++)
            x[j] = sx_bf16_to_f32(src[j]);
        sx_cpu_rope_angles(s->pos0 + i, e->inv_freq, half, e->cos_t + (size_t)t * half,
                           e->sin_t + (size_t)t * half);
    }
    stage_tail(p, tid, nth);
}

/* RMSNorm of rows [lo, hi) of the norm's rows of x, packed as the next
 * matrix stage's input */
static void norm_rows(pass *p, int tid, int lo, int hi)
{
    sx_engine *e = p->e;
    int H = e->cfg.hidden;
    float *tmp = thr_scratch(e, tid);
    for (int i = lo; i < hi; i++) {
        int r = p->norm_rows ? p->norm_rows[i] : i;
        e->kr->rmsnorm(tmp, e->x + (size_t)r * H, p->norm_w, H, e->cfg.rms_eps);
        sx_pack_x_row(tmp, i, p->norm_n, H, e->kr->tile, e->xin);
    }
}

static void stage_norm(void *arg, int tid, int nth)
{
    pass *p = arg;
    int lo, hi;
    rows_of(p->norm_n, tid, nth, &lo, &hi);
    norm_rows(p, tid, lo, hi);
}

/* the end of a stage that writes x: with norm_tail set, the last thread to
 * get here (all of x is then written: acq_rel orders the others' writes
 * before it) normalises the few rows for the next stage, saving it a
 * fork/join of its own */
static void stage_tail(pass *p, int tid, int nth)
{
    if (p->norm_tail &&
        atomic_fetch_add_explicit(&p->arrived, 1, memory_order_acq_rel) == nth - 1)
        norm_rows(p, tid, 0, p->norm_n);
}

/* rows [a, b) of y = in x w^T, a a multiple of SX_PANEL */
static void mm_rows(const pass *p, const sx_wmat *w, float *y, long ldy, int a, int b)
{
    if (w->q4) {
        p->e->kr->mm_q4(w->q4, w->cols, p->mm_in, p->mm_ntok, y, ldy, a, b, p->mm_acc);
        if (w->zb && p->mm_xs && w->awq->group == p->mm_xs_group)
            sx_q4_zero_apply(w->zb, w->rows, w->awq->group, w->cols, p->mm_xs, p->mm_ntok, y,
                             ldy, a, b);
        else if (w->zb)
            sx_q4_zero_correct(w->zb, w->rows, w->awq->group, w->cols, p->mm_in, p->mm_ntok,
                               p->e->kr->tile, y, ldy, a, b);
    }
    else if (w->q8)
        p->e->kr->mm_q8(w->q8, w->scale, w->cols, p->mm_in, p->mm_ntok, y, ldy, a, b, p->mm_acc);
    else
        p->e->mm_bf16(w->bf16, w->cols, p->mm_in, p->mm_ntok, y, ldy, a, b, p->mm_acc);
}

/* AWQ: the group sums of the stage's input, tokens split across threads */
static void stage_awq_sums(void *arg, int tid, int nth)
{
    pass *p = arg;
    int k = p->mm_w[0]->cols, nag = k / p->mm_xs_group, lo, hi;
    rows_of(p->mm_ntok, tid, nth, &lo, &hi);
    if (lo < hi)
        sx_q4_group_sums(p->mm_in, p->mm_ntok, p->e->kr->tile, k, p->mm_xs_group, lo, hi,
                         p->e->awq_xs + (size_t)lo * nag);
}

/* gate and up rows [lo, hi) of every token, then g = silu(g) * u on them
 * and those columns packed into xout */
static void mm_swiglu(pass *p, int tid, int nth)
{
    sx_engine *e = p->e;
    int I = p->mm_w[0]->rows;
    long lo, hi;
    sx_pool_range(I, nth, tid, SX_PANEL, &lo, &hi);
    if (lo >= hi)
        return;
    mm_rows(p, p->mm_w[0], p->mm_y[0], p->mm_ldy[0], (int)lo, (int)hi);
    mm_rows(p, p->mm_w[1], p->mm_y[1], p->mm_ldy[1], (int)lo, (int)hi);
    for (int t = 0; t < p->mm_ntok; t++) {
        float *g = p->mm_y[0] + (size_t)t * p->mm_ldy[0];
        e->kr->swiglu(g + lo, p->mm_y[1] + (size_t)t * p->mm_ldy[1] + lo, (int)(hi - lo));
        sx_pack_x_cols(g, t, p->mm_ntok, I, (int)lo, (int)hi, e->kr->tile, p->xout);
    }
}

static void stage_mm(void *arg, int tid, int nth)
{
    pass *p = arg;
    if (p->mm_swiglu) {
        mm_swiglu(p, tid, nth);
        stage_tail(p, tid, nth);
        return;
    }
    long total = 0;
    for (int i = 0; i < p->mm_n; i++)
        total += sx_pad_rows(p->mm_w[i]->rows);
    long lo, hi, base = 0;
    sx_pool_range(total, nth, tid, SX_PANEL, &lo, &hi);
    for (int i = 0; i < p->mm_n; i++) {
        const sx_wmat *w = p->mm_w[i];
        long a = lo > base ? lo - base : 0, b = hi - base < w->rows ? hi - base : w->rows;
        base += sx_pad_rows(w->rows);
        if (a < b)
            mm_rows(p, w, p->mm_y[i], p->mm_ldy[i], (int)a, (int)b);
    }
    stage_tail(p, tid, nth);
}

/* per-head q/k RMSNorm, RoPE, and the new keys/values into the cache:
 * rows [lo, hi), the q and k heads of kv heads [g0, g1) */
static void qk_rows(pass *p, int lo, int hi, int g0, int g1)
{
    sx_engine *e = p->e;
    const sx_qwen3_config *c = &e->cfg;
    const sx_layer_weights *lw = &e->m->layers[p->layer];
    int hd = c->head_dim, half = hd / 2, qd = c->n_heads * hd, kvd = c->n_kv_heads * hd;
    int bt = e->kv.block_tokens, G = c->n_heads / c->n_kv_heads;
    for (int t = lo; t < hi; t++) {
        const sx_seg *s = &p->segs[e->row_seg[t]];
        int pos = s->pos0 + (t - s->row0);
        const float *ct = e->cos_t + (size_t)t * half, *st = e->sin_t + (size_t)t * half;
        for (int h = g0 * G; h < g1 * G; h++) {
            float *q = e->q + (size_t)t * qd + (size_t)h * hd;
            e->kr->rmsnorm(q, q, lw->q_norm, hd, c->rms_eps);
            sx_cpu_rope(q, ct, st, hd);
        }
        int32_t blk = sx_kv_blocks(&e->kv, s->seq)[pos / bt];
        for (int g = g0; g < g1; g++) {
            float *k = e->k + (size_t)t * kvd + (size_t)g * hd;
            const float *v = e->v + (size_t)t * kvd + (size_t)g * hd;
            e->kr->rmsnorm(k, k, lw->k_norm, hd, c->rms_eps);
            sx_cpu_rope(k, ct, st, hd);
            /* keys transposed ([hd][bt]) so attention scores a block in one pass */
            void *blkp = sx_kv_k(&e->kv, blk, p->layer, g);
            if (e->kv.elem == 4) {
                float *kt = (float *)blkp + pos % bt;
                for (int d = 0; d < hd; d++)
                    kt[(size_t)d * bt] = k[d];
                memcpy((float *)blkp + (size_t)bt * hd + (size_t)(pos % bt) * hd, v,
                       (size_t)hd * sizeof *kt);
            } else {
                uint16_t *kt = (uint16_t *)blkp + pos % bt;
                uint16_t *vt = (uint16_t *)blkp + (size_t)bt * hd + (size_t)(pos % bt) * hd;
                for (int d = 0; d < hd; d++) {
                    kt[(size_t)d * bt] = sx_f32_to_bf16(k[d]);
                    vt[d] = sx_f32_to_bf16(v[d]);
                }
            }
        }
    }
}

static void stage_qk(void *arg, int tid, int nth)
{
    pass *p = arg;
    int lo, hi;
    rows_of(p->T, tid, nth, &lo, &hi);
    qk_rows(p, lo, hi, 0, p->e->cfg.n_kv_heads);
}

/* K^T and V of one cache block as f32: the cache's own memory, or for a
 * bf16 cache a widened copy in kvs (2 * block_tokens * head_dim floats of
 * the thread's scratch), which then stays in L1 for the whole block. */
static const float *block_f32(sx_engine *e, int32_t blk, int layer, int kvh, float *kvs)
{
    const void *b = sx_kv_k(&e->kv, blk, layer, kvh);
    if (e->kv.elem == 4)
        return b;
    e->kr->bf16_to_f32(kvs, b, 2 * (size_t)e->kv.block_tokens * e->cfg.head_dim);
    return kvs;
}

/* Causal attention of query rows [i0, i1) of one piece, for the q heads of
 * one kv head, over the cache with an online softmax: each cache block is
 * read once for all the rows and heads of the task (and stays in L1).  The
 * task's queries are copied together first, so every row that sees a
 * whole block takes it in one kernel call (which works on several queries
 * at once); rows on the diagonal block go one by one. */
static void att_task(pass *p, const sx_att_task *tk, float *scr, float *kvs)
{
    sx_engine *e = p->e;
    const sx_cpu_kernels *kr = e->kr;
    const sx_qwen3_config *c = &e->cfg;
    int hd = c->head_dim, G = c->n_heads / c->n_kv_heads, qd = c->n_heads * hd;
    int bt = e->kv.block_tokens, nr = tk->i1 - tk->i0;
    const sx_seg *s = &p->segs[tk->seg];
    const int32_t *blocks = sx_kv_blocks(&e->kv, s->seq);
    float *acc = scr, *mx = acc + (size_t)nr * G * hd, *l = mx + nr * G;
    float *qs = l + nr * G;
    memset(acc, 0, (size_t)nr * G * hd * sizeof *acc);
    for (int i = 0; i < nr * G; i++) {
        mx[i] = -INFINITY;
        l[i] = 0.0f;
    }
    for (int i = 0; i < nr; i++)
        memcpy(qs + (size_t)i * G * hd,
               e->q + ((size_t)s->row0 + tk->i0 + i) * qd + (size_t)tk->kvh * G * hd,
               (size_t)G * hd * sizeof *qs);
    int first = s->pos0 + tk->i0, last = s->pos0 + tk->i1 - 1;
    for (int b = 0; b <= last / bt; b++) {
        /* the next block's keys and values on their way while this one is
         * scored: blocks are scattered pages, and decode's weights stream
         * through the cache between two visits of a layer's block, so each
         * block otherwise starts with misses the hardware prefetcher
         * cannot foresee (perf on an AMD EPYC put most of att_block's
         * samples on its key loads; the gain is not yet measured apart) */
        if (b < last / bt) {
            const char *nx = sx_kv_k(&e->kv, blocks[b + 1], p->layer, tk->kvh);
            size_t nbytes = 2 * (size_t)bt * hd * e->kv.elem;
            for (size_t o = 0; o < nbytes; o += 64)
                __builtin_prefetch(nx + o);
        }
        const float *kt = block_f32(e, blocks[b], p->layer, tk->kvh, kvs);
        const float *V = kt + (size_t)bt * hd;
        int j0 = b * bt;
        /* rows [i0, nr) see the whole block; rows before, from its start */
        int i0 = j0 + bt - 1 - first;
        i0 = i0 < 0 ? 0 : i0 > nr ? nr : i0;
        for (int i = j0 - first > 0 ? j0 - first : 0; i < i0; i++) {
            int nj = first + i - j0 + 1;
            kr->att_block(qs + (size_t)i * G * hd, hd, G, kt, V, bt, nj, hd, e->att_scale,
                          mx + i * G, l + i * G, acc + (size_t)i * G * hd);
        }
        if (i0 < nr)
            kr->att_block(qs + (size_t)i0 * G * hd, hd, (nr - i0) * G, kt, V, bt, bt, hd,
                          e->att_scale, mx + i0 * G, l + i0 * G, acc + (size_t)i0 * G * hd);
    }
    for (int i = 0; i < nr; i++) {
        size_t t = (size_t)s->row0 + tk->i0 + i;
        for (int h = 0; h < G; h++) {
            float *dst = e->att + t * qd + (size_t)(tk->kvh * G + h) * hd;
            const float *a = acc + (size_t)(i * G + h) * hd;
            float inv = 1.0f / l[i * G + h];
            for (int d = 0; d < hd; d++)
                dst[d] = a[d] * inv;
        }
    }
}

/* The same task on AVX-512 with the queries in vector lanes
 * (sx_avx512_att_qt): groups of 32 / G rows, every head of the kv head in
 * lanes, each cache block (the diagonal one too) in one call. */
static void att_task_lanes(pass *p, const sx_att_task *tk, float *scr, float *kvs)
{
    sx_engine *e = p->e;
    const sx_qwen3_config *c = &e->cfg;
    int hd = c->head_dim, G = c->n_heads / c->n_kv_heads, qd = c->n_heads * hd;
    int bt = e->kv.block_tokens, rpg = 32 / G;
    const sx_seg *s = &p->segs[tk->seg];
    const int32_t *blocks = sx_kv_blocks(&e->kv, s->seq);
    float *qt = scr, *acct = qt + (size_t)hd * 32, *m = acct + (size_t)hd * 32, *l = m + 32;
    float *kpad = l + 32;
    for (int g0 = tk->i0; g0 < tk->i1; g0 += rpg) {
        int nr = tk->i1 - g0 < rpg ? tk->i1 - g0 : rpg, nq = nr * G;
        memset(qt, 0, (size_t)hd * 32 * sizeof *qt);
        memset(acct, 0, (size_t)hd * 32 * sizeof *acct);
        for (int u = 0; u < 32; u++) {
            m[u] = -INFINITY;
            l[u] = 0.0f;
        }
        for (int i = 0; i < nr; i++)
            for (int h = 0; h < G; h++) {
                const float *q = e->q + ((size_t)s->row0 + g0 + i) * qd + (size_t)(tk->kvh * G + h) * hd;
                for (int d = 0; d < hd; d++)
                    qt[(size_t)d * 32 + i * G + h] = q[d];
            }
        int first = s->pos0 + g0, last = first + nr - 1;
        for (int b = 0; b <= last / bt; b++) {
            const float *kt = block_f32(e, blocks[b], p->layer, tk->kvh, kvs);
            int j0 = b * bt, nj = last - j0 + 1 < bt ? last - j0 + 1 : bt;
            (e->att_dp ? sx_avx512_att_qt_dp : sx_avx512_att_qt)(
                qt, kt, kt + (size_t)bt * hd, bt, nj, hd, e->att_scale, (j0 - first) * G, G, m, l,
                acct, kpad);
        }
        for (int u = 0; u < nq; u++) {
            size_t t = (size_t)s->row0 + g0 + u / G;
            float *dst = e->att + t * qd + (size_t)(tk->kvh * G + u % G) * hd;
            float inv = 1.0f / l[u];
            for (int d = 0; d < hd; d++)
                dst[d] = acct[(size_t)d * 32 + u] * inv;
        }
    }
}

static void stage_att(void *arg, int tid, int nth)
{
    pass *p = arg;
    sx_engine *e = p->e;
    float *scr = thr_scratch(e, tid) + e->cfg.hidden;
    float *kvs = thr_scratch(e, tid) + e->thr_kv_off;
    int G = e->cfg.n_heads / e->cfg.n_kv_heads;
    /* queries in lanes (prefill-sized tasks) sum in another order than
     * the key-vector kernel: not when batch-invariant, where a query's
     * kernel must not depend on how its prompt was split */
    int lanes = e->batch_variant && e->kr->path >= SX_CPU_AVX512 && G <= 32;
    for (;;) {
        int i = atomic_fetch_add_explicit(&p->next_task, 1, memory_order_relaxed);
        if (i >= p->n_tasks)
            break;
        const sx_att_task *tk = &e->tasks[i];
        int r0 = p->segs[tk->seg].row0 + tk->i0, r1 = p->segs[tk->seg].row0 + tk->i1;
        if (p->qk_in_att)
            qk_rows(p, r0, r1, tk->kvh, tk->kvh + 1);
        /* lanes cost the same for 2 queries as for 32: decode rows stay
         * on the key-vector kernel */
        if (lanes && (tk->i1 - tk->i0) * G >= 16)
            att_task_lanes(p, tk, scr, kvs);
        else
            att_task(p, tk, scr, kvs);
        /* the task's rows and heads, packed for the output projection */
        int qd = e->cfg.n_heads * e->cfg.head_dim, c0 = tk->kvh * G * e->cfg.head_dim;
        for (int t = r0; t < r1; t++)
            sx_pack_x_cols(e->att + (size_t)t * qd, t, p->T, qd, c0, c0 + G * e->cfg.head_dim,
                           e->kr->tile, e->xin);
    }
}

static void set_tail(pass *p, int on)
{
    p->norm_tail = on;
    atomic_store_explicit(&p->arrived, 0, memory_order_relaxed);
}

/* one parallel-for of the pass over the engine's pool (timed as `stage`
 * under STRUX_STEP_PROFILE) */
static void dispatch(pass *p, int stage, sx_pool_fn fn)
{
    if (p->e->prof)
        sx_step_prof_run(p->e->prof, p->e->pool, stage, fn, p);
    else
        sx_pool_run(p->e->pool, fn, p);
}

static void run_mm(pass *p, int stage, const float *in, int ntok, int acc, int n,
                   const sx_wmat *w0, float *y0, long ld0, const sx_wmat *w1, float *y1,
                   long ld1, const sx_wmat *w2, float *y2, long ld2)
{
    p->mm_in = in;
    p->mm_ntok = ntok;
    p->mm_acc = acc;
    p->mm_n = n;
    p->mm_w[0] = w0; p->mm_y[0] = y0; p->mm_ldy[0] = ld0;
    p->mm_w[1] = w1; p->mm_y[1] = y1; p->mm_ldy[1] = ld1;
    p->mm_w[2] = w2; p->mm_y[2] = y2; p->mm_ldy[2] = ld2;
    /* AWQ: from a few tokens up, every thread would sum the same groups of
     * every token; they are summed once instead, split by token */
    p->mm_xs = NULL;
    for (int i = 0; i < n && !p->mm_xs; i++)
        if (p->mm_w[i]->zb && ntok >= AWQ_SHARED_SUMS) {
            p->mm_xs_group = p->mm_w[i]->awq->group;
            dispatch(p, SX_ST_AWQ_SUMS, stage_awq_sums);
            p->mm_xs = p->e->awq_xs;
        }
    dispatch(p, stage, stage_mm);
}

/* One grammar mask word covers one LM-head panel. */
_Static_assert(SX_PANEL == 32, "the sparse LM head maps a mask word to a panel");

/* The LM-head panels this pass needs, into e->lm_panels: the union over
 * its logits rows of the panels holding an allowed token.  -1 to compute
 * them all (a row without a mask, dense_logits, or masks touching more
 * than 15/16 of the panels). */
static int lm_plan(sx_engine *e, int n_lg)
{
    int panels = (e->cfg.vocab_rows + SX_PANEL - 1) / SX_PANEL;
    if (e->dense_logits)
        return -1;
    for (int r = 0; r < n_lg; r++)
        if (!e->lg_allow[r])
            return -1;
    int n = 0;
    for (int w = 0; w < panels; w++) {
        int need = 0;
        for (int r = 0; r < n_lg && !need; r++)
            need = e->lg_allow[r][w] != 0;
        if (need)
            e->lm_panels[n++] = w;
    }
    /* nearly all (a string's mask): the plain split is as good */
    return n > panels - panels / 16 ? -1 : n;
}

/* the listed panels, runs of neighbours in one kernel call */
static void stage_lm_sparse(void *arg, int tid, int nth)
{
    pass *p = arg;
    sx_engine *e = p->e;
    long lo, hi;
    sx_pool_range(p->lm_n, nth, tid, 1, &lo, &hi);
    for (long i = lo; i < hi;) {
        long j = i + 1;
        while (j < hi && e->lm_panels[j] == e->lm_panels[j - 1] + 1)
            j++;
        int a = e->lm_panels[i] * SX_PANEL, b = (e->lm_panels[j - 1] + 1) * SX_PANEL;
        if (b > e->cfg.vocab_rows)
            b = e->cfg.vocab_rows;
        mm_rows(p, &e->lm_head, p->lg_out, e->cfg.vocab_rows, a, b);
        i = j;
    }
}

/* -INFINITY for the tokens a masked row does not allow (which covers every
 * panel the sparse head skipped) */
static void stage_lm_mask(void *arg, int tid, int nth)
{
    pass *p = arg;
    sx_engine *e = p->e;
    int V = e->cfg.vocab_rows;
    long lo, hi;
    sx_pool_range((V + 31) / 32, nth, tid, 1, &lo, &hi);
    for (int r = 0; r < p->n_lg; r++) {
        const uint32_t *a = e->lg_allow[r];
        if (!a)
            continue;
        float *y = p->lg_out + (size_t)r * V;
        for (long w = lo; w < hi; w++) {
            uint32_t bits = a[w];
            if (bits == 0xffffffffu)
                continue;
            int t1 = (int)(w * 32 + 32 < V ? w * 32 + 32 : V);
            for (int t = (int)w * 32; t < t1; t++)
                if (!(bits >> (t & 31) & 1))
                    y[t] = -INFINITY;
        }
    }
}

static void lm_head(pass *p, int n_lg, float *lg_out)
{
    sx_engine *e = p->e;
    int masked = 0;
    for (int r = 0; r < n_lg && !masked; r++)
        masked = e->lg_allow[r] != NULL;
    /* masks still being filled: compute every logit rather than wait */
    int late = masked && e->ready && !e->ready(e->ready_ctx, 0);
    if (masked && !late)
        e->ready = NULL;
    int n = masked && !late ? lm_plan(e, n_lg) : -1;
    p->n_lg = n_lg;
    p->lg_out = lg_out;
    if (n < 0) {
        run_mm(p, SX_ST_LM, e->xin, n_lg, 0, 1, &e->lm_head, lg_out, e->cfg.vocab_rows, NULL,
               NULL, 0, NULL, NULL, 0);
    } else {
        p->mm_in = e->xin;
        p->mm_ntok = n_lg;
        p->mm_acc = 0;
        p->mm_xs = NULL;
        p->lm_n = n;
        dispatch(p, SX_ST_LM, stage_lm_sparse);
    }
    if (late) {
        e->ready(e->ready_ctx, 1);
        e->ready = NULL;
    }
    if (masked) {
        dispatch(p, SX_ST_LM_MASK, stage_lm_mask);
        int64_t panels = (e->cfg.vocab_rows + SX_PANEL - 1) / SX_PANEL;
        e->lm_stats.heads++;
        e->lm_stats.panels_dense += panels;
        e->lm_stats.panels_computed += n < 0 ? panels : n;
    }
}

static void build_tasks(sx_engine *e, pass *p)
{
    int n = 0, QB = SX_ENGINE_ATT_ROWS;
    for (int si = 0; si < p->nseg; si++) {
        const sx_seg *s = &p->segs[si];
        /* later rows see more keys: hand them out first */
        for (int i1 = s->n; i1 > 0; i1 -= QB) {
            int i0 = i1 - QB > 0 ? i1 - QB : 0;
            for (int g = 0; g < e->cfg.n_kv_heads; g++) {
                sx_att_task *t = &e->tasks[n++];
                t->seg = si;
                t->kvh = g;
                t->i0 = i0;
                t->i1 = i1;
            }
        }
    }
    p->n_tasks = n;
}

static void forward_pass(sx_engine *e, const sx_seg *segs, int nseg, float *lg_out)
{
    const sx_qwen3_config *c = &e->cfg;
    int H = c->hidden, I = c->intermediate, qd = c->n_heads * c->head_dim;
    int kvd = c->n_kv_heads * c->head_dim;
    pass p;
    memset(&p, 0, sizeof p);
    p.e = e;
    p.segs = segs;
    p.nseg = nseg;
    int T = 0, n_lg = 0;
    for (int si = 0; si < nseg; si++) {
        for (int i = 0; i < segs[si].n; i++) {
            e->row_seg[T + i] = si;
            if (i >= segs[si].lg_from) {
                e->lg_allow[n_lg] = segs[si].allow;
                e->lg_rows[n_lg++] = T + i;
            }
        }
        T += segs[si].n;
    }
    p.T = T;
    if (e->prof)
        sx_step_prof_pass(e->prof, T, 0);
    build_tasks(e, &p);
    /* decode and small batches: each norm is the tail of the stage before */
    int tail = T <= NORM_TAIL_ROWS;
    p.qk_in_att = 1;
    for (int si = 0; si < nseg; si++)
        p.qk_in_att &= segs[si].n <= SX_ENGINE_ATT_ROWS;
    p.xout = e->xin2;
    p.norm_rows = NULL;
    p.norm_n = T;
    p.norm_w = e->m->layers[0].attn_norm;
    set_tail(&p, tail);
    dispatch(&p, SX_ST_EMBED, stage_embed);
    for (int l = 0; l < c->n_layers; l++) {
        const sx_elayer *L = &e->layers[l];
        const sx_layer_weights *lw = &e->m->layers[l];
        p.layer = l;
        if (!tail) {
            set_tail(&p, 0);
            p.norm_w = lw->attn_norm;
            dispatch(&p, SX_ST_NORM, stage_norm);
        }
        set_tail(&p, 0);
        run_mm(&p, SX_ST_MM_QKV, e->xin, T, 0, 3, &L->wq, e->q, qd, &L->wk, e->k, kvd, &L->wv,
               e->v, kvd);
        if (!p.qk_in_att)
            dispatch(&p, SX_ST_QK, stage_qk);
        atomic_store(&p.next_task, 0);
        dispatch(&p, SX_ST_ATT, stage_att);
        p.norm_w = lw->mlp_norm;
        set_tail(&p, tail);
        run_mm(&p, SX_ST_MM_O, e->xin, T, 1, 1, &L->wo, e->x, H, NULL, NULL, 0, NULL, NULL, 0);
        set_tail(&p, 0);
        if (!tail)
            dispatch(&p, SX_ST_NORM, stage_norm);
        p.mm_swiglu = 1;
        run_mm(&p, SX_ST_MM_GATEUP, e->xin, T, 0, 2, &L->gate, e->g, I, &L->up, e->u, I, NULL,
               NULL, 0);
        p.mm_swiglu = 0;
        /* the next norm: the next layer's, or the logits rows' */
        if (l + 1 < c->n_layers) {
            p.norm_w = e->m->layers[l + 1].attn_norm;
            set_tail(&p, tail);
        } else if (n_lg > 0) {
            p.norm_w = e->m->final_norm;
            p.norm_rows = e->lg_rows;
            p.norm_n = n_lg;
            set_tail(&p, n_lg <= NORM_TAIL_ROWS);
        }
        run_mm(&p, SX_ST_MM_DOWN, e->xin2, T, 1, 1, &L->down, e->x, H, NULL, NULL, 0, NULL, NULL,
               0);
    }
    if (n_lg > 0) {
        if (!p.norm_tail)
            dispatch(&p, SX_ST_NORM, stage_norm);
        set_tail(&p, 0);
        lm_head(&p, n_lg, lg_out);
    }
    if (e->prof)
        sx_step_prof_pass(e->prof, T, 1);
}

static int grow(void *pp, size_t n, size_t elem)
{
    void **p = pp;
    void *q = realloc(*p, n * elem);
    if (!q)
        return SX_ENOMEM;
    *p = q;
    return SX_OK;
}

/* grows the pass scratch to `rows` rows (before anything is appended, so a
 * failure leaves the cache as it was) */
static int step_scratch(sx_engine *e, int rows, int n_items, sx_error *err)
{
    const sx_qwen3_config *c = &e->cfg;
    int QB = SX_ENGINE_ATT_ROWS, G = c->n_heads / c->n_kv_heads;
    if (!e->thr) {
        /* norm row; attention: accumulators, max and sum, the queries;
         * or, queries in lanes, their 32-lane versions and a key block */
        size_t f1 = 2 * (size_t)QB * G * c->head_dim + 2 * (size_t)QB * G + (size_t)e->kv.block_tokens;
        size_t f2 = 80 * (size_t)c->head_dim + 64;
        size_t f = (size_t)c->hidden + (f1 > f2 ? f1 : f2);
        /* then a bf16 cache's widened block, on a cache line of its own */
        e->thr_kv_off = (f + 15) & ~(size_t)15;
        if (e->kv.elem == 2)
            f = e->thr_kv_off + 2 * (size_t)e->kv.block_tokens * c->head_dim;
        e->thr_floats = (f + 15) & ~(size_t)15;   /* whole cache lines per thread */
        e->thr = aligned_alloc(64, e->thr_floats * sizeof(float) * (size_t)e->n_threads);
        if (!e->thr)
            goto nomem;
    }
    if (rows > e->cap) {
        size_t r = (size_t)rows, half = (size_t)c->head_dim / 2;
        size_t qd = (size_t)c->n_heads * c->head_dim, kvd = (size_t)c->n_kv_heads * c->head_dim;
        if (grow(&e->x, r * c->hidden, sizeof(float)) ||
            grow(&e->xin, sx_xpack_size(rows, e->xin_dim), sizeof(float)) ||
            grow(&e->xin2, sx_xpack_size(rows, c->intermediate), sizeof(float)) ||
            grow(&e->q, r * qd, sizeof(float)) || grow(&e->k, r * kvd, sizeof(float)) ||
            grow(&e->v, r * kvd, sizeof(float)) || grow(&e->att, r * qd, sizeof(float)) ||
            grow(&e->g, r * c->intermediate, sizeof(float)) ||
            grow(&e->u, r * c->intermediate, sizeof(float)) ||
            grow(&e->cos_t, r * half + 1, sizeof(float)) ||
            grow(&e->sin_t, r * half + 1, sizeof(float)) ||
            grow(&e->row_seg, r, sizeof(int32_t)) || grow(&e->lg_rows, r, sizeof(int32_t)) ||
            grow(&e->lg_allow, r, sizeof *e->lg_allow) ||
            (e->wzb && grow(&e->awq_xs, r * (size_t)(e->xin_dim / SX_Q4_GROUP), sizeof(float))))
            goto nomem;
        e->cap = rows;
    }
    int segs = n_items < e->cap ? n_items : e->cap;
    if (segs > e->seg_cap) {
        if (grow(&e->segs, (size_t)segs, sizeof *e->segs))
            goto nomem;
        e->seg_cap = segs;
    }
    int tasks = (e->cap / QB + e->seg_cap) * c->n_kv_heads;
    if (tasks > e->task_cap) {
        if (grow(&e->tasks, (size_t)tasks, sizeof *e->tasks))
            goto nomem;
        e->task_cap = tasks;
    }
    return SX_OK;
nomem:
    return sx_err_set(err, SX_ENOMEM, "engine: out of memory for step scratch (%d rows)",
                      rows);
}

static int check_items(sx_engine *e, const sx_step_item *items, int n_items, int64_t *total,
                       sx_error *err)
{
    sx_kv *kv = &e->kv;
    if (++e->stamp == 0) {
        memset(e->seen, 0, (size_t)kv->max_seqs * sizeof *e->seen);
        e->stamp = 1;
    }
    int64_t rows = 0, blocks = 0;
    for (int i = 0; i < n_items; i++) {
        const sx_step_item *it = &items[i];
        if (!sx_kv_seq_live(kv, it->seq))
            return sx_err_set(err, SX_EINVAL, "step item %d: sequence %d is not live", i, it->seq);
        if (e->seen[it->seq] == e->stamp)
            return sx_err_set(err, SX_EINVAL, "step item %d: sequence %d appears twice", i,
                              it->seq);
        e->seen[it->seq] = e->stamp;
        if (it->n <= 0 || !it->tokens)
            return sx_err_set(err, SX_EINVAL, "step item %d: no tokens (n = %d)", i, it->n);
        if (it->allow && it->logits_all)
            return sx_err_set(err, SX_EINVAL, "step item %d: a mask applies to the last row only, "
                              "not with logits_all", i);
        for (int j = 0; j < it->n; j++)
            if (it->tokens[j] < 0 || it->tokens[j] >= e->cfg.vocab_rows)
                return sx_err_set(err, SX_EINVAL, "step item %d: token %d is %d, outside 0..%d",
                                  i, j, (int)it->tokens[j], e->cfg.vocab_rows - 1);
        int64_t end = (int64_t)sx_kv_len(kv, it->seq) + it->n;
        int64_t limit = (int64_t)kv->max_blocks_per_seq * kv->block_tokens;
        if (e->cfg.max_pos > 0 && e->cfg.max_pos < limit)
            limit = e->cfg.max_pos;
        if (end > limit)
            return sx_err_set(err, SX_ELIMIT, "step item %d: sequence %d would hold %lld tokens, "
                              "more than %lld", i, it->seq, (long long)end, (long long)limit);
        rows += it->n;
        /* a partial block shared by two items of this step counts a copy for
         * each though the last writer needs none: at worst the step is
         * refused one block early */
        blocks += sx_kv_blocks_needed(kv, it->seq, it->n);
    }
    if (blocks > sx_kv_free_blocks(kv))
        return sx_err_set(err, SX_ELIMIT, "kv cache full: step needs %lld blocks, %d free",
                          (long long)blocks, (int)sx_kv_free_blocks(kv));
    *total = rows;
    return SX_OK;
}

int sx_engine_step(sx_engine *e, const sx_step_item *items, int n_items, float *logits,
                   sx_error *err)
{
    return sx_engine_step_masked(e, items, n_items, logits, NULL, NULL, err);
}

int sx_engine_step_masked(sx_engine *e, const sx_step_item *items, int n_items, float *logits,
                          int (*ready)(void *ctx, int wait), void *ready_ctx, sx_error *err)
{
    if (!e || n_items < 0 || (n_items > 0 && (!items || !logits)))
        return sx_err_set(err, SX_EINVAL, "engine step: bad arguments");
    if (n_items == 0)
        return SX_OK;
    int64_t total = 0;
    int rc = check_items(e, items, n_items, &total, err);
    if (rc)
        return rc;
    int rows = total < SX_ENGINE_PASS_TOKENS ? (int)total : SX_ENGINE_PASS_TOKENS;
    if ((rc = step_scratch(e, rows, n_items, err)))
        return rc;
    for (int i = 0; i < n_items; i++)
        sx_kv_prepare(&e->kv, items[i].seq, items[i].n);
    e->ready = ready;
    e->ready_ctx = ready_ctx;

    size_t V = (size_t)e->cfg.vocab_rows, out_row = 0;
    int item = 0, off = 0;
    while (item < n_items) {
        int T = 0, nseg = 0, n_lg = 0;
        while (item < n_items && T < e->cap) {
            const sx_step_item *it = &items[item];
            int take = it->n - off < e->cap - T ? it->n - off : e->cap - T;
            sx_seg *s = &e->segs[nseg++];
            s->seq = it->seq;
            s->pos0 = sx_kv_len(&e->kv, it->seq) + off;
            s->tok = it->tokens + off;
            s->n = take;
            s->row0 = T;
            if (it->logits_all)
                s->lg_from = 0;
            else
                s->lg_from = off + take == it->n ? take - 1 : take;
            s->allow = !it->logits_all && off + take == it->n ? it->allow : NULL;
            n_lg += take - s->lg_from;
            T += take;
            off += take;
            if (off == it->n) {
                item++;
                off = 0;
            }
        }
        forward_pass(e, e->segs, nseg, logits + out_row * V);
        out_row += (size_t)n_lg;
    }
    e->ready = NULL;
    for (int i = 0; i < n_items; i++)
        sx_kv_commit(&e->kv, items[i].seq, items[i].n);
    e->lm_stats.tokens += total;
    return SX_OK;
}
