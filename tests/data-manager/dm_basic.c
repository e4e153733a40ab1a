/* Data manager over real ranks: snapshots reach the executor that acquires
 * a buffer; a buffer written on one executor is forwarded worker to worker
 * (exchange, counted in the stats) to the next one; partial host writes
 * patch the valid copy; reads come from a valid copy; freed addresses are
 * reused and released on every executor. */
#define _GNU_SOURCE
#include "../event-system/ev_test.h"
#include "ompc_dm.h"

static ev_fn_id_t fn_sum, fn_bump;

/* args {addr, size}: add 1 to every byte (a "kernel" writing the buffer). */
static ompc_status_t do_bump(ev_exec_info_t *info)
{
    uint64_t a[2];
    memcpy(a, info->args, sizeof(a));
    unsigned char *p = (unsigned char *)(uintptr_t)a[0];
    for (uint64_t i = 0; i < a[1]; i++)
        p[i]++;
    return OMPC_OK;
}

static uint64_t sum_on(ev_ctx_t *ev, dm_ctx_t *dm, int exec, dm_buf_t *b)
{
    uint64_t args[2] = {dm_buf_addr(b), dm_buf_size(b)}, c = 0;
    T_OK(T_RUN(ev_execute(ev, dm_executor_rank(dm, exec), fn_sum, args, sizeof(args), &c,
                          sizeof(c), HP)));
    return c;
}

static void bump_on(ev_ctx_t *ev, dm_ctx_t *dm, int exec, dm_buf_t *b)
{
    uint64_t args[2] = {dm_buf_addr(b), dm_buf_size(b)};
    T_OK(T_RUN(ev_execute(ev, dm_executor_rank(dm, exec), fn_bump, args, sizeof(args),
                          NULL, 0, HP)));
}

int main(void)
{
    ev_ctx_t *ev;
    dm_ctx_t *dm;
    T_OK(ev_ctx_create(&ev));
    T_OK(dm_ctx_create(ev, &dm));
    T_OK(ev_fn_register(ev, "sum", t_fn_checksum, 0, &fn_sum));
    T_OK(ev_fn_register(ev, "bump", do_bump, 0, &fn_bump));
    T_OK(ev_ctx_start(ev));
    if (ev_ctx_rank(ev) != 0) {
        T_OK(ev_ctx_serve(ev));
        dm_ctx_destroy(dm);
        ev_ctx_destroy(ev);
        return 0;
    }
    int ne = dm_num_executors(dm);
    size_t n = 3 * 1024 * 1024 + 5;
    unsigned char *host = malloc(n), *back = malloc(n);
    t_fill(host, n, 7);

    dm_buf_t *b;
    T_OK(dm_alloc(dm, n, &b));
    T_OK(dm_write(dm, b, 0, host, n));
    memset(host, 0, n); /* the snapshot must not see later host writes */
    t_fill(host, n, 7);
    T_OK(dm_acquire(dm, 0, &b, 1));
    T_CHECK(sum_on(ev, dm, 0, b) == t_checksum(host, n), "snapshot on executor 0");

    /* Executor 0 writes it; every other executor then gets it by exchange. */
    bump_on(ev, dm, 0, b);
    dm_written(dm, 0, &b, 1);
    for (size_t i = 0; i < n; i++)
        host[i]++;
    dm_stats_t s0, s1;
    dm_get_stats(dm, &s0);
    for (int e = 1; e < ne; e++) {
        T_OK(dm_acquire(dm, e, &b, 1));
        T_CHECK(sum_on(ev, dm, e, b) == t_checksum(host, n), "forwarded to %d", e);
    }
    dm_get_stats(dm, &s1);
    T_CHECK(s1.transfers_dev_to_dev - s0.transfers_dev_to_dev == (uint64_t)(ne - 1),
            "%d worker-to-worker transfers expected, saw %llu", ne - 1,
            (unsigned long long)(s1.transfers_dev_to_dev - s0.transfers_dev_to_dev));
    T_CHECK(s1.bytes_host_to_dev == s0.bytes_host_to_dev, "no host traffic");

    /* Partial host write patches one valid copy and invalidates the rest. */
    unsigned char patch[100];
    memset(patch, 0xab, sizeof(patch));
    T_OK(dm_write(dm, b, 1000, patch, sizeof(patch)));
    memcpy(host + 1000, patch, sizeof(patch));
    T_OK(dm_read(dm, b, 0, back, n));
    T_CHECK(memcmp(back, host, n) == 0, "read after partial write");
    int last = ne - 1;
    T_OK(dm_acquire(dm, last, &b, 1));
    T_CHECK(sum_on(ev, dm, last, b) == t_checksum(host, n), "patched copy on %d", last);

    /* Reads of a sub-range, and of a buffer never written. */
    memset(back, 0, 64);
    T_OK(dm_read(dm, b, 999, back, 64));
    T_CHECK(memcmp(back, host + 999, 64) == 0, "sub-range read");
    dm_buf_t *empty;
    T_OK(dm_alloc(dm, 4096, &empty));
    T_OK(dm_acquire(dm, 0, &empty, 1));
    size_t off = 0;
    T_CHECK(dm_buf_find(dm, dm_buf_addr(b) + 17, 10, &off) == b && off == 17,
            "find inside a buffer");
    T_CHECK(dm_buf_find(dm, dm_buf_addr(b) + n - 1, 2, NULL) == NULL,
            "find past the end");
    /* Several values at once, as a kernel's by-value arguments are: small
     * integers and NULL hold no buffer, a buffer's end still names it. */
    dm_addr_t vals[5] = {0, 7, dm_buf_addr(b) + 5, dm_buf_addr(empty) + 4096,
                         dm_buf_addr(b) + n + 1};
    dm_buf_t *found[5];
    dm_bufs_find(dm, vals, 5, found);
    T_CHECK(!found[0] && !found[1] && found[2] == b && found[3] == empty &&
                found[3] == dm_buf_find(dm, vals[3], 0, NULL) &&
                found[4] == dm_buf_find(dm, vals[4], 0, NULL),
            "find several values at once");

    /* Freed addresses are reused for the same size. */
    dm_addr_t old = dm_buf_addr(b);
    T_OK(dm_free(dm, b));
    T_OK(dm_alloc(dm, n, &b));
    T_CHECK(dm_buf_addr(b) == old, "address reuse");
    T_OK(dm_write(dm, b, 0, host, n));
    T_OK(dm_acquire(dm, last, &b, 1));
    T_CHECK(sum_on(ev, dm, last, b) == t_checksum(host, n), "after reuse");
    T_OK(dm_free(dm, b));
    T_OK(dm_free(dm, empty));

    T_OK(ev_ctx_shutdown(ev));
    dm_ctx_destroy(dm);
    ev_ctx_destroy(ev);
    free(host);
    free(back);
    printf("dm_basic: %d executors, all checks passed\n", ne);
    return 0;
}
