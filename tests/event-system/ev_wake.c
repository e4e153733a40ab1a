/* An event that reaches an idle rank is served at once, not after the
 * rank's gate thread wakes from its nap by itself.  Run with a huge
 * OMPC_POLL_MAX_US: after a quiet spell every gate naps for hundreds of
 * milliseconds, so only the doorbell (ev_bell.c) can make a round trip to
 * a worker and back fast.  With OMPC_DOORBELL=0 the same run takes about
 * half a nap per message and fails.
 *
 * Then a burst of round trips back to back: with OMPC_SPIN_US=0 (what a
 * crowded node gets) a gate goes back to a full nap right after each
 * message, so every one of them must be rung awake and found.
 *
 * With EV_WAKE_BOUND=1 the launcher binds each rank to one core: such a
 * rank must count as crowded (its polling gate would hold the core while
 * the thread it finished an event for waits for the next tick). */
#define _GNU_SOURCE
#include "ev_test.h"

#include <string.h>
#include <time.h>

#define ROUNDS 8
/* After QUIET_MS of quiet a gate that backs off is 76 ms into a nap of
 * 524 ms, and one that sleeps until rung (no polling) 600 ms into a nap of
 * OMPC_POLL_MAX_US: an unrung message waits over 400 ms either way. */
#define QUIET_MS 600
/* Round trips allowed (median after a quiet spell; 90th percentile of a
 * burst).  A rung gate answers in well under a millisecond on an idle
 * machine; the limit leaves room for a loaded one, whose run queues delay
 * each of the round trip's wake-ups, and stays a quarter of what an unrung
 * message costs. */
#define LIMIT_MS 100.0
#define BURST 200

static ompc_status_t do_nothing(ev_exec_info_t *info)
{
    (void)info;
    return OMPC_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    ev_ctx_t *ctx;
    ev_fn_id_t fn;
    if (!t_ctx_one_fn(&ctx, "nothing", do_nothing, EV_FN_INLINE, &fn))
        return 0;
    int n = ev_ctx_size(ctx);
    T_CHECK(n > 1, "ev_wake needs at least 2 ranks");
    const ev_node_t *node = ev_node(ctx);
    printf("ev_wake: %d ranks share %d CPUs (crowded %d), spin %llu us\n", node->nsame,
           node->ncpus, node->crowded, (unsigned long long)ev_spin_us(ctx));
    const char *bound = getenv("EV_WAKE_BOUND");
    if (bound && strcmp(bound, "1") == 0) {
        /* The launcher bound each rank to one core (--bind-to core): its
         * own threads crowd it, whoever else shares that core. */
        T_CHECK(node->ncpus == 1, "--bind-to core left this rank %d CPUs", node->ncpus);
        T_CHECK(node->crowded, "a rank bound to one core counts as crowded");
    } else {
        /* ctest starts every rank on this host, unbound: all share its
         * CPUs, and polling is off exactly when there are more ranks than
         * CPUs (or a single CPU). */
        T_CHECK(node->nsame == n && node->same[0] == 0 && node->same[n - 1] == n - 1,
                "every rank of the test shares this rank's CPUs");
        T_CHECK(node->crowded == (node->ncpus < n || node->ncpus < 2),
                "crowded means more ranks than CPUs, or one CPU");
    }
    const char *spin_env = getenv("OMPC_SPIN_US");
    if (!spin_env || !*spin_env)
        T_CHECK(ev_spin_us(ctx) == (node->crowded ? 0u : 200u),
                "OMPC_SPIN_US=auto polls only where CPUs are spare");
    double ms[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
        struct timespec quiet = {0, QUIET_MS * 1000L * 1000L};
        nanosleep(&quiet, NULL);
        int r = 1 + i % (n - 1);
        uint64_t t0 = ompc_now_ns();
        T_OK(T_RUN(ev_execute(ctx, r, fn, NULL, 0, NULL, 0, HP)));
        ms[i] = (double)(ompc_now_ns() - t0) / 1e6;
        printf("ev_wake: round %d to rank %d after %d ms quiet: %.3f ms\n", i, r,
               QUIET_MS, ms[i]);
    }
    qsort(ms, ROUNDS, sizeof(ms[0]), cmp_double);
    double median = ms[ROUNDS / 2];
    printf("ev_wake: median %.3f ms (limit %.0f ms)\n", median, LIMIT_MS);
    int bad = median > LIMIT_MS;
    if (bad)
        fprintf(stderr,
                "ev_wake: a round trip to an idle rank took %.1f ms "
                "(median): its gate was not woken\n",
                median);
    static double burst[BURST];
    for (int i = 0; i < BURST; i++) {
        uint64_t t0 = ompc_now_ns();
        T_OK(T_RUN(ev_execute(ctx, 1 + i % (n - 1), fn, NULL, 0, NULL, 0, HP)));
        burst[i] = (double)(ompc_now_ns() - t0) / 1e6;
    }
    qsort(burst, BURST, sizeof(burst[0]), cmp_double);
    printf("ev_wake: %d back-to-back round trips, median %.3f ms, 90th "
           "percentile %.3f ms (spin %llu us)\n",
           BURST, burst[BURST / 2], burst[BURST * 9 / 10],
           (unsigned long long)ev_spin_us(ctx));
    if (burst[BURST * 9 / 10] > LIMIT_MS) {
        fprintf(stderr,
                "ev_wake: back-to-back round trips took %.1f ms (90th "
                "percentile): gates slept through their messages\n",
                burst[BURST * 9 / 10]);
        bad = 1;
    }
    T_OK(ev_ctx_shutdown(ctx));
    ev_ctx_destroy(ctx);
    return bad;
}
