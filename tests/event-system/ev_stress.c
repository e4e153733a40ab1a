/* Stress: 8 threads on rank 0 issue mixed events concurrently to every rank
 * (at least 10,000 in all), each verifying its payloads, so cross-talk
 * between events or a lost message shows up as a mismatch or a hang (which
 * the test timeout turns into a failure).  Some events are relayed: rank 0
 * asks a worker to originate a submit to another worker itself. */
#define _GNU_SOURCE
#include "ev_test.h"

#include <pthread.h>
#include <stdatomic.h>

#define NTHREADS 8

static ev_ctx_t *ctx;
static ev_fn_id_t fn_checksum, fn_relay;
static int iters = 150;
static _Atomic long events;

/* args {target rank, addr, size, seed}: this rank submits the pattern to the
 * target itself and waits (worker-originated events). */
static ompc_status_t do_relay(ev_exec_info_t *info)
{
    uint64_t a[4];
    memcpy(a, info->args, sizeof(a));
    size_t n = (size_t)a[2];
    unsigned char *buf = malloc(n);
    t_fill(buf, n, a[3]);
    ev_handle_t *h;
    ompc_status_t st = ev_submit(info->ctx, (int)a[0], buf, a[1], n, &h);
    if (st == OMPC_OK) {
        st = ev_wait(h);
        ev_handle_release(h);
    }
    free(buf);
    return st;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t pick_size(uint64_t *rng)
{
    switch (rng_next(rng) % 8) {
    case 0: return 1 + rng_next(rng) % 64;
    case 1:
    case 2: return 100 + rng_next(rng) % 4000;
    case 3:
    case 4: return 8000 + rng_next(rng) % 40000;
    case 5: return 100000 + rng_next(rng) % 200000;
    default: return 16 + rng_next(rng) % 2000;
    }
}

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    int n = ev_ctx_size(ctx);
    uint64_t rng = 0x1234567ull + (uint64_t)tid * 7919;
    for (int it = 0; it < iters; it++) {
        uint64_t seed = ((uint64_t)tid << 32) | (uint64_t)it;
        int ra = (int)(rng_next(&rng) % (uint64_t)n);
        int rb = (int)(rng_next(&rng) % (uint64_t)n);
        size_t sz = pick_size(&rng);
        unsigned char *src = malloc(sz), *back = malloc(sz);
        t_fill(src, sz, seed);
        ev_handle_t *h[2];
        T_OK(ev_alloc(ctx, ra, sz, &h[0]));
        T_OK(ev_alloc(ctx, rb, sz, &h[1]));
        T_OK(ev_wait_all(h, 2));
        ev_addr_t a = ev_handle_addr(h[0]), b = ev_handle_addr(h[1]);
        ev_handle_release(h[0]);
        ev_handle_release(h[1]);
        /* submit to A while B's buffer gets filled with garbage by a relay
         * or a plain submit, concurrently */
        unsigned char *junk = malloc(sz);
        memset(junk, 0x5a, sz);
        T_OK(ev_submit(ctx, ra, src, a, sz, &h[0]));
        if (it % 8 == 0 && n > 1) {
            uint64_t rargs[4] = {(uint64_t)rb, b, sz, seed ^ 0xfeed};
            int via = (rb + 1) % n;
            T_OK(ev_execute(ctx, via, fn_relay, rargs, sizeof(rargs), NULL, 0, &h[1]));
            events += 1; /* the relayed submit */
        } else {
            T_OK(ev_submit(ctx, rb, junk, b, sz, &h[1]));
        }
        T_OK(ev_wait_all(h, 2));
        ev_handle_release(h[0]);
        ev_handle_release(h[1]);
        free(junk);
        /* A -> B, then check B by checksum and by retrieve */
        T_OK(T_RUN(ev_exchange(ctx, ra, a, rb, b, sz, HP)));
        uint64_t args[2] = {b, sz}, sum = 0;
        T_OK(T_RUN(
            ev_execute(ctx, rb, fn_checksum, args, sizeof(args), &sum, sizeof(sum), HP)));
        T_CHECK(sum == t_checksum(src, sz),
                "thread %d iter %d: checksum on rank "
                "%d after exchange from %d (%zu B)",
                tid, it, rb, ra, sz);
        T_OK(T_RUN(ev_retrieve(ctx, rb, b, back, sz, HP)));
        size_t bad = t_verify(back, sz, seed);
        T_CHECK(bad == sz,
                "thread %d iter %d: retrieve of %zu B from rank %d "
                "differs at %zu",
                tid, it, sz, rb, bad);
        T_OK(ev_free(ctx, ra, a, &h[0]));
        T_OK(ev_free(ctx, rb, b, &h[1]));
        T_OK(ev_wait_all(h, 2));
        ev_handle_release(h[0]);
        ev_handle_release(h[1]);
        if (it % 50 == 49)
            T_OK(T_RUN(ev_sync(ctx, (int)(rng_next(&rng) % (uint64_t)n), HP)));
        events += 9;
        free(src);
        free(back);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iters = atoi(argv[1]);
    T_OK(ev_ctx_create(&ctx));
    T_OK(ev_fn_register(ctx, "checksum", t_fn_checksum, 0, &fn_checksum));
    T_OK(ev_fn_register(ctx, "relay", do_relay, 0, &fn_relay));
    T_OK(ev_ctx_start(ctx));
    if (ev_ctx_rank(ctx) != 0) {
        T_OK(ev_ctx_serve(ctx));
        ev_ctx_destroy(ctx);
        return 0;
    }
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        T_CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0,
                "pthread_create");
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    ev_stats_t s;
    ev_ctx_stats(ctx, &s);
    T_OK(ev_ctx_shutdown(ctx));
    ev_ctx_destroy(ctx);
    long total = atomic_load(&events);
    printf("ev_stress: %d threads, %ld events verified (%llu originated by "
           "rank 0)\n",
           NTHREADS, total, (unsigned long long)s.events_originated);
    if (iters >= 150 && total < 10000) {
        fprintf(stderr, "ev_stress: only %ld events\n", total);
        return 1;
    }
    return 0;
}
