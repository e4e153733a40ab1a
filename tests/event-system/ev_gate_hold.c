/* A worker whose gate is held (ev_gate_hold) by long gate work when the
 * head shuts down: the thread in ev_ctx_serve leaves progress to the gate
 * and is not woken by the hold, so the head's sync and exit are received
 * only once the hold is over, and ev_ctx_serve returns after it.  (A serve
 * thread that polled through holds cost a worker a wake-up and several
 * progress passes per kernel run on its gate; docs/performance.md.) */
#define _GNU_SOURCE
#include "ev_test.h"

#include <stdatomic.h>

#define HOLD_NS 300000000ull

static ev_ctx_t *g_ctx;
static ev_fn_id_t fn_arm, fn_held;
static _Atomic int armed, hold_begun, hold_ended;
static _Atomic int told_held; /* head: rank 1 said its gate is held */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Once armed: hold the gate for HOLD_NS, as a long kernel run on the gate
 * would, without any waiter of this rank needing progress meanwhile. */
static bool hold_work(void *arg)
{
    (void)arg;
    if (!atomic_load(&armed) || atomic_load(&hold_begun))
        return false;
    atomic_store(&hold_begun, 1);
    ev_gate_hold(g_ctx, true);
    /* The head shuts down only now: nothing of that reaches this rank's
     * MPI progress before the hold's end unless some thread polls. */
    ompc_status_t st = ev_post(g_ctx, 0, fn_held, NULL, 0);
    T_CHECK(st == OMPC_OK, "ev_post to the head: %s", ompc_status_str(st));
    uint64_t end = now_ns() + HOLD_NS;
    while (now_ns() < end) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&hold_ended, 1);
    ev_gate_hold(g_ctx, false);
    return true;
}

/* Inline, on the gate: the hold starts right after this pass. */
static ompc_status_t do_arm(ev_exec_info_t *info)
{
    atomic_store(&armed, 1);
    info->result_size = 0;
    return OMPC_OK;
}

static ompc_status_t do_held(ev_exec_info_t *info)
{
    atomic_store(&told_held, 1);
    info->result_size = 0;
    return OMPC_OK;
}

int main(void)
{
    T_OK(ev_ctx_create(&g_ctx));
    T_OK(ev_fn_register(g_ctx, "arm", do_arm, EV_FN_INLINE, &fn_arm));
    T_OK(ev_fn_register(g_ctx, "held", do_held, EV_FN_INLINE, &fn_held));
    T_OK(ev_ctx_start(g_ctx));
    int rank = ev_ctx_rank(g_ctx);
    if (rank != 0) {
        if (rank == 1)
            ev_set_gate_work(g_ctx, hold_work, NULL);
        T_OK(ev_ctx_serve(g_ctx));
        if (rank == 1) {
            T_CHECK(atomic_load(&hold_begun),
                    "the head's arm event never reached the gate");
            T_CHECK(atomic_load(&hold_ended),
                    "ev_ctx_serve returned while the gate was held: the exit was "
                    "received by a thread other than the gate during the hold");
            ev_set_gate_work(g_ctx, NULL, NULL);
        }
        ev_ctx_destroy(g_ctx);
        return 0;
    }
    T_OK(T_RUN(ev_execute(g_ctx, 1, fn_arm, NULL, 0, NULL, 0, HP)));
    uint64_t t0 = now_ns();
    while (!atomic_load(&told_held)) {
        T_CHECK(now_ns() - t0 < 60000000000ull, "rank 1 never said its gate is held");
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    /* Rank 1's gate is held (or was): its sync and exit wait for the
     * hold's end. */
    t0 = now_ns();
    T_OK(ev_ctx_shutdown(g_ctx));
    printf("ev_gate_hold: shutdown took %.0f ms beside a %.0f ms hold\n",
           (double)(now_ns() - t0) / 1e6, (double)HOLD_NS / 1e6);
    ev_ctx_destroy(g_ctx);
    return 0;
}
