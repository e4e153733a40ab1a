/* ev_set_gate_work from another thread while the gate runs the work: the
 * gate must never call the work with an argument other than its own, nor
 * after the setter has removed it and freed the argument (what a rank does
 * at shutdown).  The work keeps the gate polling, so that it is inside the
 * work, or between reading the function and its argument, whenever the
 * main thread replaces it. */
#define _GNU_SOURCE
#include "ev_test.h"

#include <stdatomic.h>

#define ROUNDS 20000
#define MAGIC 0x6761746577726bULL

typedef struct work_arg {
    _Atomic uint64_t magic;
    _Atomic uint64_t calls;
} work_arg_t;

static _Atomic uint64_t total_calls;

static bool work(void *p)
{
    work_arg_t *a = p;
    if (!a || atomic_load(&a->magic) != MAGIC) {
        fprintf(stderr, "ev_gate_work: the gate ran its work with %s\n",
                a ? "an argument its owner removed" : "no argument");
        abort();
    }
    atomic_fetch_add(&a->calls, 1);
    atomic_fetch_add(&total_calls, 1);
    return true; /* poll again at once: stay in or near the work */
}

static work_arg_t *new_arg(void)
{
    work_arg_t *a = malloc(sizeof(*a));
    T_CHECK(a, "out of memory");
    atomic_store(&a->magic, MAGIC);
    atomic_store(&a->calls, 0);
    return a;
}

/* What free may do to the bytes; the gate must no longer read them. */
static void retire(work_arg_t *a)
{
    atomic_store(&a->magic, 0);
    free(a);
}

static ompc_status_t do_nothing(ev_exec_info_t *info)
{
    info->result_size = 0;
    return OMPC_OK;
}

int main(void)
{
    ev_ctx_t *ctx;
    ev_fn_id_t fn;
    if (!t_ctx_one_fn(&ctx, "nothing", do_nothing, EV_FN_INLINE, &fn))
        return 0;
    /* The gate runs the first work once woken (a round trip wakes it);
     * while it has work that did something it polls without napping, so
     * from then on it stays in or near the work being replaced. */
    work_arg_t *a = new_arg();
    ev_set_gate_work(ctx, work, a);
    for (int i = 0; atomic_load(&a->calls) == 0; i++) {
        T_CHECK(i < 10000, "the gate never ran its work");
        T_OK(T_RUN(ev_execute(ctx, ev_ctx_size(ctx) - 1, fn, NULL, 0, NULL, 0, HP)));
    }
    for (int i = 0; i < ROUNDS; i++) {
        work_arg_t *b = new_arg();
        ev_set_gate_work(ctx, work, b);
        retire(a); /* the gate must be out of the old work now */
        a = b;
    }
    ev_set_gate_work(ctx, NULL, NULL);
    retire(a);
    uint64_t calls = atomic_load(&total_calls);
    printf("ev_gate_work: %d replacements, the gate ran the work %llu times\n", ROUNDS,
           (unsigned long long)calls);
    T_OK(ev_ctx_shutdown(ctx));
    ev_ctx_destroy(ctx);
    return 0;
}
