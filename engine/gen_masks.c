/* Mask workers of sx_gen.  A step posts the sequences whose next mask is
 * needed, runs the forward pass on the calling thread (which has its own
 * pool), then waits here: the grammar's work hides behind the model's. */
#include <stdlib.h>
#include <time.h>
#include "engine/gen_internal.h"

double gen_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fill_one(gen_seq *s)
{
    s->mask_rc = sx_matcher_fill_mask(s->m, s->mask);
    s->mask_ok = s->mask_rc == SX_OK;
}

static void *worker(void *arg)
{
    sx_gen *g = arg;
    int seen = 0;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->stop && (g->generation == seen || g->next_job >= g->n_jobs))
            pthread_cond_wait(&g->cv_work, &g->mu);
        if (g->stop)
            break;
        seen = g->generation;
        while (g->next_job < g->n_jobs) {
            gen_seq *s = g->mask_jobs[g->next_job++];
            pthread_mutex_unlock(&g->mu);
            double t0 = gen_now_ms();
            fill_one(s);
            double t1 = gen_now_ms();
            pthread_mutex_lock(&g->mu);
            g->mask_busy_ms += t1 - t0;
            g->mask_end_ms = t1;
            if (++g->jobs_done == g->n_jobs)
                pthread_cond_broadcast(&g->cv_done);
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int gen_masks_start(sx_gen *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv_work, NULL);
    pthread_cond_init(&g->cv_done, NULL);
    g->workers = calloc((size_t)g->o.mask_threads, sizeof *g->workers);
    if (!g->workers)
        return SX_ENOMEM;
    for (int i = 0; i < g->o.mask_threads; i++) {
        if (pthread_create(&g->workers[i], NULL, worker, g) != 0)
            return SX_ENOMEM;
        g->n_workers++;
    }
    return SX_OK;
}

void gen_masks_stop(sx_gen *g)
{
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_broadcast(&g->cv_work);
    pthread_mutex_unlock(&g->mu);
    for (int i = 0; i < g->n_workers; i++)
        pthread_join(g->workers[i], NULL);
    free(g->workers);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv_work);
    pthread_cond_destroy(&g->cv_done);
}

void gen_masks_post(sx_gen *g, gen_seq **jobs, int n)
{
    pthread_mutex_lock(&g->mu);
    g->mask_jobs = jobs;
    g->n_jobs = n;
    g->next_job = 0;
    g->jobs_done = 0;
    g->mask_busy_ms = 0;
    g->mask_end_ms = 0;
    g->generation++;
    if (n > 0)
        pthread_cond_broadcast(&g->cv_work);
    pthread_mutex_unlock(&g->mu);
}

int gen_masks_done(sx_gen *g)
{
    pthread_mutex_lock(&g->mu);
    int done = g->jobs_done >= g->n_jobs;
    pthread_mutex_unlock(&g->mu);
    return done;
}

void gen_masks_wait(sx_gen *g)
{
    pthread_mutex_lock(&g->mu);
    while (g->jobs_done < g->n_jobs)
        pthread_cond_wait(&g->cv_done, &g->mu);
    g->n_jobs = 0;
    pthread_mutex_unlock(&g->mu);
}
