/* Idle ranks must not burn a core: with every rank idle for a while, each
 * process (all its threads: gate, handlers, main) may use only a small
 * fraction of one CPU.  On a 2-core machine with 4 ranks, spinning gates
 * would show up here as ~50% or more per process. */
#define _GNU_SOURCE
#include "ev_test.h"

#include <sys/resource.h>
#include <time.h>

#define IDLE_SECONDS 1.5
#define MAX_CPU_FRACTION 0.10

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Result: {this process's CPU seconds so far, its monotonic clock}. */
static ompc_status_t do_cpu(ev_exec_info_t *info)
{
    double c[2] = {cpu_seconds(), 1e-9 * (double)ompc_now_ns()};
    memcpy(info->result, c, sizeof(c));
    info->result_size = sizeof(c);
    return OMPC_OK;
}

int main(void)
{
    ev_ctx_t *ctx;
    ev_fn_id_t fn_cpu;
    if (!t_ctx_one_fn(&ctx, "cpu", do_cpu, EV_FN_INLINE, &fn_cpu))
        return 0;
    int n = ev_ctx_size(ctx);
    double(*before)[2] = calloc((size_t)n, sizeof(*before));
    double(*after)[2] = calloc((size_t)n, sizeof(*after));
    for (int r = 0; r < n; r++)
        T_OK(
            T_RUN(ev_execute(ctx, r, fn_cpu, NULL, 0, before[r], sizeof(before[r]), HP)));
    struct timespec ts = {(time_t)IDLE_SECONDS,
                          (long)((IDLE_SECONDS - (time_t)IDLE_SECONDS) * 1e9)};
    nanosleep(&ts, NULL);
    for (int r = 0; r < n; r++)
        T_OK(T_RUN(ev_execute(ctx, r, fn_cpu, NULL, 0, after[r], sizeof(after[r]), HP)));
    int bad = 0;
    for (int r = 0; r < n; r++) {
        /* Over the rank's own idle span, which a loaded machine stretches
         * past IDLE_SECONDS (the sleep and the round trips take longer):
         * CPU time spent there stays a fraction of the span. */
        double span = after[r][1] - before[r][1];
        double frac = (after[r][0] - before[r][0]) / span;
        printf("ev_idle: rank %d used %.1f%% of a CPU while idle for %.2f s\n", r,
               100 * frac, span);
        if (frac > MAX_CPU_FRACTION) {
            fprintf(stderr,
                    "ev_idle: rank %d burned %.0f%% of a CPU while idle "
                    "(limit %.0f%%)\n",
                    r, 100 * frac, 100 * MAX_CPU_FRACTION);
            bad = 1;
        }
    }
    T_OK(ev_ctx_shutdown(ctx));
    ev_ctx_destroy(ctx);
    free(before);
    free(after);
    return bad;
}
