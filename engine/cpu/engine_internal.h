/* sx_engine internals shared by engine.c (set-up, sequences) and
 * engine_step.c (the forward pass). */
#ifndef SX_ENGINE_INTERNAL_H
#define SX_ENGINE_INTERNAL_H

#include <stdint.h>
#include "engine/cpu/engine.h"
#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/kv_cache_internal.h"
#include "engine/cpu/step_prof.h"
#include "engine/cpu/threadpool.h"

/* Rows of one forward pass; a longer step runs as several passes, each
 * streaming the weights once. */
#define SX_ENGINE_PASS_TOKENS 256
/* Query rows per attention task. */
#define SX_ENGINE_ATT_ROWS 16

/* One weight matrix in the engine's mode, packed into panels
 * (cpu_kernels.h): bf16, int8 + per-row scale, or q4 (scales inside the
 * panels).  The packed copies live in sx_engine.wmem / wscale (owned); src
 * is the model's row-major matrix. */
typedef struct sx_wmat {
    const uint16_t *src;
    const uint16_t *bf16;
    const int8_t   *q8;
    const float    *scale;
    const uint8_t  *q4;
    int             rows, cols;
    /* AWQ matrices (always q4, whatever the mode): the model's 4-bit copy,
     * and the zero correction (sx_pack_q4_awq) in sx_engine.wzb */
    const sx_q4_matrix *awq;
    const float    *zb;
} sx_wmat;

typedef struct sx_elayer {
    sx_wmat wq, wk, wv, wo, gate, up, down;
} sx_elayer;

/* A piece of one step item that falls inside one pass. */
typedef struct sx_seg {
    int            seq;
    int            pos0;     /* position of the first token */
    const int32_t *tok;
    int            n;
    int            row0;     /* first row in the pass */
    int            lg_from;  /* rows [lg_from, n) of this piece get logits */
    const uint32_t *allow;   /* mask of the piece's logits row, or NULL */
} sx_seg;

typedef struct sx_att_task {
    int seg, kvh, i0, i1;
} sx_att_task;

struct sx_engine {
    const sx_model        *m;
    sx_qwen3_config        cfg;
    const sx_cpu_kernels  *kr;
    sx_pool               *pool;
    int                    n_threads;
    int                    mode;        /* sx_weight_mode */
    /* the bf16 matrix kernel: kr's, or the bf16-activation one */
    void                 (*mm_bf16)(const uint16_t *wp, int k, const float *xp, int n_tok,
                                    float *y, long ldy, int r0, int r1, int accumulate);
    const char            *path_name;
    int                    att_dp;      /* prefill attention on bf16 dot products (SX_ACT_BF16) */
    int                    batch_variant; /* sx_engine_opts.batch_variant */
    sx_elayer             *layers;
    sx_wmat                lm_head;
    void                  *wmem;        /* packed weights (mmap) */
    size_t                 wmem_bytes;
    float                 *wscale;      /* int8 row scales */
    float                 *wzb;         /* AWQ zero corrections */
    sx_kv                  kv;
    float                 *inv_freq;    /* [head_dim/2] */
    float                  att_scale;
    int                    xin_dim;     /* widest matrix input */
    int                    dense_logits;

    /* scratch for one pass, grown to cap rows */
    int      cap;
    float   *x, *xin, *q, *k, *v, *att, *g, *u, *cos_t, *sin_t;   /* xin: packed */
    float   *xin2;                      /* packed: the down projection's input */
    int32_t *row_seg, *lg_rows;
    const uint32_t **lg_allow;          /* [cap] mask of each logits row or NULL */
    int32_t *lm_panels;                 /* LM-head panels a masked pass computes */
    float   *awq_xs;                    /* AWQ group sums of a stage's input */
    float   *thr;                       /* per-thread scratch */
    size_t   thr_floats;
    size_t   thr_kv_off;     /* floats into a thread's scratch: bf16 KV widening */
    /* per step */
    int          seg_cap, task_cap;
    sx_seg      *segs;
    sx_att_task *tasks;
    uint32_t    *seen;                  /* [max_seqs] step stamp, catches repeats */
    uint32_t     stamp;
    int        (*ready)(void *, int);   /* sx_engine_step_masked's callback, until */
    void        *ready_ctx;             /* the masks are known to be written */
    sx_engine_lm_stats lm_stats;
    sx_step_prof *prof;                 /* STRUX_STEP_PROFILE, else NULL */
};


#endif
