/* ev_gate_work_by: a gate whose work asked to run again by some time wakes
 * then, though nothing rings the rank.  Run with OMPC_SPIN_US=0 and
 * OMPC_POLL_MAX_US of a second: an idle gate that every peer can ring
 * then naps a whole second at once, so a work that ran again within
 * LATE_NS of the time asked did so only because the nap was cut there.
 * (Launch ahead keeps the age limit of held completions this way, instead
 * of waking a kernel thread to keep it: docs/performance.md.) */
#define _GNU_SOURCE
#include "ev_test.h"

#include <stdatomic.h>

#define BY_NS 50000000ull    /* the work asks to run again 50 ms on */
#define LATE_NS 400000000ull /* a nap not cut would end after 1 s */

static ev_ctx_t *g_ctx;
static _Atomic int armed, state;
static _Atomic uint64_t t_asked, t_again;
static _Atomic uint64_t calls_before; /* calls between asking and the time */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Once armed: ask to run again BY_NS on, then note the first call at or
 * after that time.  Never claims progress: the gate may nap between. */
static bool work(void *arg)
{
    (void)arg;
    if (!atomic_load(&armed))
        return false;
    uint64_t now = now_ns();
    if (atomic_load(&state) == 0) {
        atomic_store(&t_asked, now);
        atomic_store(&state, 1);
        ev_gate_work_by(g_ctx, now + BY_NS);
    } else if (atomic_load(&state) == 1) {
        if (now >= atomic_load(&t_asked) + BY_NS) {
            atomic_store(&t_again, now);
            atomic_store(&state, 2);
        } else {
            atomic_fetch_add(&calls_before, 1);
        }
    }
    return false;
}

static ompc_status_t do_nothing(ev_exec_info_t *info)
{
    info->result_size = 0;
    return OMPC_OK;
}

int main(void)
{
    ev_fn_id_t fn;
    if (!t_ctx_one_fn(&g_ctx, "nothing", do_nothing, EV_FN_INLINE, &fn))
        return 0;
    T_CHECK(ev_spin_us(g_ctx) == 0, "run with OMPC_SPIN_US=0");
    ev_set_gate_work(g_ctx, work, NULL);
    /* Let the gate settle into its long nap, then wake it once with a
     * round trip: its passes after that run the work, which asks. */
    struct timespec settle = {0, 100000000};
    nanosleep(&settle, NULL);
    atomic_store(&armed, 1);
    T_OK(T_RUN(ev_execute(g_ctx, 1, fn, NULL, 0, NULL, 0, HP)));
    /* The work runs after the pass that completed the round trip, which
     * may be after this thread saw it complete. */
    uint64_t start = now_ns();
    while (atomic_load(&state) < 1 && now_ns() - start < 2000000000ull) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    T_CHECK(atomic_load(&state) >= 1, "the gate's passes after a round trip did not "
                                      "run its work");
    start = now_ns();
    while (atomic_load(&state) < 2 && now_ns() - start < 3000000000ull) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    T_CHECK(atomic_load(&state) == 2, "the work never ran again");
    uint64_t late = atomic_load(&t_again) - atomic_load(&t_asked);
    printf("ev_gate_work_by: asked for %.0f ms on, ran again %.1f ms on (%llu calls "
           "before)\n",
           BY_NS / 1e6, late / 1e6, (unsigned long long)atomic_load(&calls_before));
    T_CHECK(late < LATE_NS,
            "the work ran again %.1f ms after asking for %.0f ms: the gate napped on",
            late / 1e6, BY_NS / 1e6);
    ev_set_gate_work(g_ctx, NULL, NULL);
    T_OK(ev_ctx_shutdown(g_ctx));
    ev_ctx_destroy(g_ctx);
    return 0;
}
