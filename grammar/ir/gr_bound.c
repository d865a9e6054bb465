/* Bounded work: a step budget with the caller's deadline and cancel flag
 * (sx_gr_opts), shared by the compile's analyses and the run-time
 * completion search, so that no schema and no request pins a CPU. */
#include <time.h>

#include "grammar/ir/ir.h"

/* The clock is read once per this many steps: a step is a few hundred
 * nanoseconds at most, so a deadline is overrun by well under a
 * millisecond while the reads cost nothing measurable. */
#define GR_WORK_TICK 1024

double gr_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void gr_work_init(gr_work *w, const sx_gr_opts *o, long budget)
{
    w->left = budget;
    w->deadline_ms = o ? o->deadline_ms : 0;
    w->cancel = o ? o->cancel : NULL;
    w->tick = 0;
    w->stop = GR_STOP_NONE;
}

int gr_work_poll(gr_work *w)
{
    if (w->stop)
        return w->stop;
    w->tick = 0;
    if (w->cancel && *w->cancel)
        w->stop = GR_STOP_CANCEL;
    else if (w->deadline_ms > 0 && gr_now_ms() >= w->deadline_ms)
        w->stop = GR_STOP_DEADLINE;
    return w->stop;
}

int gr_work_spend(gr_work *w, long n)
{
    if (w->stop)
        return w->stop;
    w->left -= n;
    if (w->left < 0)
        return w->stop = GR_STOP_BUDGET;
    w->tick += (uint32_t)(n > 0 ? n : 1);
    if (w->tick >= GR_WORK_TICK)
        return gr_work_poll(w);
    return GR_STOP_NONE;
}

const char *gr_stop_text(int stop)
{
    switch (stop) {
    case GR_STOP_DEADLINE: return "deadline passed";
    case GR_STOP_CANCEL: return "cancelled";
    case GR_STOP_BUDGET: return "work budget exceeded";
    }
    return "";
}
