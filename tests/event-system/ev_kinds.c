/* Every event kind end to end, from rank 0 to every rank (itself included),
 * with data checks; error statuses for bad remote requests; exchange between
 * two workers proven not to pass through rank 0. */
#define _GNU_SOURCE
#include "ev_test.h"
#include "ev_internal.h"

#include <pthread.h>
#include <stdint.h>

static ev_fn_id_t fn_checksum, fn_echo, fn_stats, fn_fail, fn_tally, fn_tally_read,
    fn_hold, fn_credit;

/* Returns its arguments reversed, prefixed with the executing rank. */
static ompc_status_t do_echo(ev_exec_info_t *info)
{
    int me = ev_ctx_rank(info->ctx);
    const unsigned char *in = info->args;
    unsigned char *out = info->result;
    if (info->result_cap < info->args_size + sizeof(int))
        return OMPC_ERR_INVALID;
    memcpy(out, &me, sizeof(me));
    for (size_t i = 0; i < info->args_size; i++)
        out[sizeof(int) + i] = in[info->args_size - 1 - i];
    info->result_size = info->args_size + sizeof(int);
    return OMPC_OK;
}

static ompc_status_t do_stats(ev_exec_info_t *info)
{
    ev_stats_t s;
    ev_ctx_stats(info->ctx, &s);
    memcpy(info->result, &s, sizeof(s));
    info->result_size = sizeof(s);
    return OMPC_OK;
}

static ompc_status_t do_fail(ev_exec_info_t *info)
{
    (void)info;
    return OMPC_ERR_USER;
}

/* One-way posts from rank 0, tallied where they run: {sequence number,
 * checksum of the bytes after these two words}.  Runs inline on the gate
 * (or a thread holding the progress role), hence the lock. */
static pthread_mutex_t tally_mtx = PTHREAD_MUTEX_INITIALIZER;
static uint64_t tally_next, tally_bad;

static ompc_status_t do_tally(ev_exec_info_t *info)
{
    uint64_t w[2];
    if (info->args_size < sizeof(w))
        return OMPC_ERR_INVALID;
    memcpy(w, info->args, sizeof(w));
    const unsigned char *bytes = (const unsigned char *)info->args + sizeof(w);
    pthread_mutex_lock(&tally_mtx);
    if (w[0] != tally_next || w[1] != t_checksum(bytes, info->args_size - sizeof(w)))
        tally_bad++;
    tally_next++;
    pthread_mutex_unlock(&tally_mtx);
    return OMPC_OK;
}

/* {posts tallied, how many were out of order or corrupt}; resets both. */
static ompc_status_t do_tally_read(ev_exec_info_t *info)
{
    pthread_mutex_lock(&tally_mtx);
    uint64_t r[2] = {tally_next, tally_bad};
    tally_next = tally_bad = 0;
    pthread_mutex_unlock(&tally_mtx);
    memcpy(info->result, r, sizeof(r));
    info->result_size = sizeof(r);
    return OMPC_OK;
}

/* ev_post: every post runs once, in order, before a later execute from the
 * same origin; payloads past MPI's eager limit too (the gate finishes
 * those sends); bad requests are refused at the origin. */
static void post_case(ev_ctx_t *ctx, int rank)
{
    static const size_t sizes[] = {0, 8, 9000, 60000};
    enum { ROUNDS = 50 };
    static unsigned char buf[16 + 60000];
    uint64_t seq = 0;
    for (int k = 0; k < ROUNDS; k++)
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            size_t n = sizes[i];
            t_fill(buf + 16, n, seq * 31 + 7);
            uint64_t w[2] = {seq++, t_checksum(buf + 16, n)};
            memcpy(buf, w, sizeof(w));
            T_OK(ev_post(ctx, rank, fn_tally, buf, sizeof(w) + n));
        }
    uint64_t r[2];
    T_OK(T_RUN(ev_execute(ctx, rank, fn_tally_read, NULL, 0, r, sizeof(r), HP)));
    T_CHECK(r[0] == seq && r[1] == 0,
            "rank %d tallied %llu of %llu posts, %llu out "
            "of order or corrupt",
            rank, (unsigned long long)r[0], (unsigned long long)seq,
            (unsigned long long)r[1]);
    T_CHECK(ev_post(ctx, rank, fn_echo, NULL, 0) == OMPC_ERR_INVALID,
            "post of a function that runs on handler threads");
    T_CHECK(ev_post(ctx, rank, 999, NULL, 0) == OMPC_ERR_INVALID,
            "post of an unknown function");
    T_CHECK(ev_post(ctx, rank, fn_tally, buf, EV_EXEC_MAX_ARGS + 1) == OMPC_ERR_INVALID,
            "post larger than the limit");
    T_CHECK(ev_post(ctx, ev_ctx_size(ctx), fn_tally, buf, 16) == OMPC_ERR_INVALID,
            "post to a rank that does not exist");
}

static uint64_t remote_checksum(ev_ctx_t *ctx, int rank, ev_addr_t a, size_t n)
{
    uint64_t args[2] = {a, n}, sum = 0;
    ev_handle_t *h;
    T_OK(ev_execute(ctx, rank, fn_checksum, args, sizeof(args), &sum, sizeof(sum), &h));
    T_OK(ev_wait(h));
    T_CHECK(ev_handle_result_size(h) == sizeof(sum), "result size %zu",
            ev_handle_result_size(h));
    ev_handle_release(h);
    return sum;
}

static ev_stats_t remote_stats(ev_ctx_t *ctx, int rank)
{
    ev_stats_t s;
    T_OK(T_RUN(ev_execute(ctx, rank, fn_stats, NULL, 0, &s, sizeof(s), HP)));
    return s;
}

static ev_addr_t remote_alloc(ev_ctx_t *ctx, int rank, size_t n)
{
    ev_handle_t *h;
    T_OK(ev_alloc(ctx, rank, n, &h));
    T_OK(ev_wait(h));
    ev_addr_t a = ev_handle_addr(h);
    T_CHECK(a != 0 && a % 64 == 0, "alloc on rank %d returned %#llx", rank,
            (unsigned long long)a);
    ev_handle_release(h);
    return a;
}

/* submit, remote checksum, retrieve, compare: for one size on one rank. */
static void roundtrip(ev_ctx_t *ctx, int rank, size_t n, uint64_t seed)
{
    unsigned char *src = malloc(n ? n : 1), *back = malloc(n ? n : 1);
    t_fill(src, n, seed);
    memset(back, 0xee, n);
    ev_addr_t a = remote_alloc(ctx, rank, n);
    T_OK(T_RUN(ev_submit(ctx, rank, src, a, n, HP)));
    T_CHECK(remote_checksum(ctx, rank, a, n) == t_checksum(src, n),
            "checksum after submit of %zu B on rank %d", n, rank);
    T_OK(T_RUN(ev_retrieve(ctx, rank, a, back, n, HP)));
    size_t bad = t_verify(back, n, seed);
    T_CHECK(bad == n, "retrieve of %zu B from rank %d differs at byte %zu", n, rank, bad);
    /* A sub-range inside the allocation works too. */
    if (n > 16) {
        memset(back, 0, n);
        T_OK(T_RUN(ev_retrieve(ctx, rank, a + 7, back, n - 9, HP)));
        T_CHECK(memcmp(back, src + 7, n - 9) == 0, "sub-range retrieve");
    }
    T_OK(T_RUN(ev_free(ctx, rank, a, HP)));
    free(src);
    free(back);
}

static void exchange_case(ev_ctx_t *ctx, int ra, int rb, size_t n, uint64_t seed)
{
    unsigned char *src = malloc(n), *back = malloc(n);
    t_fill(src, n, seed);
    ev_addr_t a = remote_alloc(ctx, ra, n);
    ev_addr_t b = remote_alloc(ctx, rb, n);
    T_OK(T_RUN(ev_submit(ctx, ra, src, a, n, HP)));
    ev_stats_t me0, me1, sa0, sa1, sb0, sb1;
    ev_ctx_stats(ctx, &me0);
    sa0 = remote_stats(ctx, ra);
    sb0 = remote_stats(ctx, rb);
    ev_ctx_stats(ctx, &me0); /* after the stats calls themselves */
    T_OK(T_RUN(ev_exchange(ctx, ra, a, rb, b, n, HP)));
    ev_ctx_stats(ctx, &me1);
    sa1 = remote_stats(ctx, ra);
    sb1 = remote_stats(ctx, rb);
    if (ra != rb && ra != ev_ctx_rank(ctx) && rb != ev_ctx_rank(ctx)) {
        /* The commanding rank moved only control messages. */
        uint64_t moved = (me1.bytes_sent - me0.bytes_sent) +
                         (me1.bytes_received - me0.bytes_received);
        T_CHECK(moved < 1024,
                "rank 0 moved %llu B during a %zu B exchange "
                "between ranks %d and %d",
                (unsigned long long)moved, n, ra, rb);
        T_CHECK(sa1.bytes_sent - sa0.bytes_sent >= n,
                "source rank %d sent only "
                "%llu B",
                ra, (unsigned long long)(sa1.bytes_sent - sa0.bytes_sent));
        T_CHECK(sb1.bytes_received - sb0.bytes_received >= n || n <= 8192,
                "target rank %d received only %llu B", rb,
                (unsigned long long)(sb1.bytes_received - sb0.bytes_received));
    }
    memset(back, 0, n);
    T_OK(T_RUN(ev_retrieve(ctx, rb, b, back, n, HP)));
    size_t bad = t_verify(back, n, seed);
    T_CHECK(bad == n, "exchange %d->%d of %zu B differs at %zu", ra, rb, n, bad);
    T_OK(T_RUN(ev_free(ctx, ra, a, HP)));
    T_OK(T_RUN(ev_free(ctx, rb, b, HP)));
    free(src);
    free(back);
}

static void error_statuses(ev_ctx_t *ctx, int rank)
{
    unsigned char buf[64 * 1024];
    memset(buf, 1, sizeof(buf));
    ev_addr_t a = remote_alloc(ctx, rank, 100);
    /* Past the end of the allocation, inline and streamed. */
    T_CHECK(T_RUN(ev_submit(ctx, rank, buf, a + 50, 51, HP)) == OMPC_ERR_BAD_ADDR,
            "inline submit past the end");
    T_CHECK(T_RUN(ev_submit(ctx, rank, buf, a, sizeof(buf), HP)) == OMPC_ERR_BAD_ADDR,
            "streamed submit past the end");
    T_CHECK(T_RUN(ev_retrieve(ctx, rank, a + 1, buf, 100, HP)) == OMPC_ERR_BAD_ADDR,
            "retrieve past the end");
    T_CHECK(T_RUN(ev_retrieve(ctx, rank, 0x10, buf, 8, HP)) == OMPC_ERR_BAD_ADDR,
            "retrieve from an unmapped address");
    /* The region is still intact after the failed submits. */
    T_OK(T_RUN(ev_submit(ctx, rank, buf, a, 100, HP)));
    T_CHECK(remote_checksum(ctx, rank, a, 100) == t_checksum(buf, 100), "intact");
    T_CHECK(T_RUN(ev_execute(ctx, rank, 999, NULL, 0, NULL, 0, HP)) ==
                OMPC_ERR_NO_FUNCTION,
            "unknown function id");
    T_CHECK(T_RUN(ev_execute(ctx, rank, fn_fail, NULL, 0, NULL, 0, HP)) == OMPC_ERR_USER,
            "function status travels back");
    T_CHECK(T_RUN(ev_alloc(ctx, rank, (size_t)1 << 60, HP)) == OMPC_ERR_NOMEM,
            "huge alloc");
    T_OK(T_RUN(ev_free(ctx, rank, a, HP)));
    T_CHECK(T_RUN(ev_free(ctx, rank, a, HP)) == OMPC_ERR_BAD_ADDR, "double free");
    ev_handle_t *h = NULL;
    T_CHECK(ev_alloc(ctx, ev_ctx_size(ctx), 8, &h) == OMPC_ERR_INVALID && !h,
            "rank out of range is refused locally");
}

static void exec_echo(ev_ctx_t *ctx, int rank)
{
    unsigned char args[1000], res[1100];
    t_fill(args, sizeof(args), 99);
    ev_handle_t *h;
    T_OK(ev_execute(ctx, rank, fn_echo, args, sizeof(args), res, sizeof(res), &h));
    T_OK(ev_wait(h));
    T_CHECK(ev_handle_result_size(h) == sizeof(args) + sizeof(int), "echo size");
    int who;
    memcpy(&who, res, sizeof(who));
    T_CHECK(who == rank, "echo ran on rank %d, not %d", who, rank);
    for (size_t i = 0; i < sizeof(args); i++)
        T_CHECK(res[sizeof(int) + i] == args[sizeof(args) - 1 - i], "echo byte %zu", i);
    ev_handle_release(h);
}

/* sync: everything that reached the rank before it is complete. */
static void sync_case(ev_ctx_t *ctx, int rank)
{
    enum { N = 32, SZ = 20000 };
    static unsigned char src[N][SZ];
    ev_addr_t a[N];
    ev_handle_t *h[N];
    for (int i = 0; i < N; i++) {
        a[i] = remote_alloc(ctx, rank, SZ);
        t_fill(src[i], SZ, 1000 + (uint64_t)i);
    }
    for (int i = 0; i < N; i++)
        T_OK(ev_submit(ctx, rank, src[i], a[i], SZ, &h[i]));
    T_OK(T_RUN(ev_sync(ctx, rank, HP)));
    /* Each submit completed on the remote side before the sync replied. */
    for (int i = 0; i < N; i++) {
        T_CHECK(remote_checksum(ctx, rank, a[i], SZ) == t_checksum(src[i], SZ),
                "submit %d visible after sync", i);
        T_OK(ev_wait(h[i]));
        ev_handle_release(h[i]);
        T_OK(T_RUN(ev_free(ctx, rank, a[i], HP)));
    }
}

/* Small events to a rank are served while a big transfer to it is still
 * open, instead of queueing behind it (in the gate, in a handler, or behind
 * its arrival).  Deterministic, whatever the machine's load: the receiving
 * rank holds the transfer open (ev_debug_recv_budget: it may post only the
 * chunks the test allows), so the transfer cannot finish before the small
 * events, and each small event lets exactly CREDIT more chunks in and
 * waits for them.  An engine that served the small events only after the
 * transfer would never serve them: the first one is then reported after
 * STARVED_S seconds. */
#define CREDIT 2      /* chunks each small event lets in */
#define SMALL 20      /* small events beside the held transfer */
#define STARVED_S 60  /* no sane engine under any load takes this long */

static _Atomic uint64_t hold_base; /* chunks completed on this rank when held */

/* args: int64 budget (< 0 lifts the hold).  Inline: on the gate. */
static ompc_status_t do_hold(ev_exec_info_t *info)
{
    int64_t n;
    if (info->args_size != sizeof(n))
        return OMPC_ERR_INVALID;
    memcpy(&n, info->args, sizeof(n));
    ev_stats_t s;
    ev_ctx_stats(info->ctx, &s);
    hold_base = s.chunks_completed;
    ev_debug_recv_budget(info->ctx, n);
    return OMPC_OK;
}

/* args: uint64 chunks wanted in all.  Lets CREDIT more chunks in, waits
 * (on a handler thread) until that many completed since the hold, and
 * returns the count: exactly the wanted number, as no more were allowed. */
static ompc_status_t do_credit(ev_exec_info_t *info)
{
    uint64_t want;
    if (info->args_size != sizeof(want) || info->result_cap < sizeof(want))
        return OMPC_ERR_INVALID;
    memcpy(&want, info->args, sizeof(want));
    ev_debug_recv_allow(info->ctx, CREDIT);
    /* Half the origin's patience: a count short of the wanted one is then
     * reported as such, not as a starved event. */
    uint64_t deadline = ompc_now_ns() + (uint64_t)STARVED_S * 500000000u, got;
    for (;;) {
        ev_stats_t s;
        ev_ctx_stats(info->ctx, &s);
        got = s.chunks_completed - hold_base;
        if (got >= want || ompc_now_ns() > deadline)
            break;
        struct timespec ts = {0, 100 * 1000};
        nanosleep(&ts, NULL);
    }
    memcpy(info->result, &got, sizeof(got));
    info->result_size = sizeof(got);
    return OMPC_OK;
}

static void no_starvation(ev_ctx_t *ctx, int rank)
{
    const ompc_config_t *cfg = ompc_config_get();
    size_t chunk = (size_t)cfg->chunk_size;
    /* More chunks than the hold ever lets in, and more than inline. */
    size_t nchunks = CREDIT * (SMALL + 1) + 16;
    size_t big = chunk * nchunks;
    T_CHECK(big > (size_t)cfg->inline_max, "the held transfer travels inline");
    char *src = malloc(big);
    T_CHECK(src != NULL, "no memory for the %zu B transfer", big);
    t_fill(src, big, 4242);
    ev_addr_t a = remote_alloc(ctx, rank, big);
    int64_t n = CREDIT;
    T_OK(T_RUN(ev_execute(ctx, rank, fn_hold, &n, sizeof(n), NULL, 0, HP)));
    ev_handle_t *hb;
    T_OK(ev_submit(ctx, rank, src, a, big, &hb));
    for (uint64_t i = 1; i <= SMALL; i++) {
        uint64_t want = CREDIT * (i + 1), got = 0;
        ev_handle_t *h;
        T_OK(
            ev_execute(ctx, rank, fn_credit, &want, sizeof(want), &got, sizeof(got), &h));
        ompc_status_t st = ev_wait_for(h, (uint64_t)STARVED_S * 1000000000u);
        T_CHECK(st != OMPC_INPROGRESS,
                "small event %llu to rank %d starved: "
                "not served in %d s beside a %zu B submit held open after "
                "%llu of its %zu chunks",
                (unsigned long long)i, rank, STARVED_S, big,
                (unsigned long long)(want - CREDIT), nchunks);
        T_OK(st);
        ev_handle_release(h);
        T_CHECK(ev_test(hb) == OMPC_INPROGRESS,
                "the %zu B submit to rank %d "
                "completed with %llu of its %zu chunks let in: the transfer "
                "was not chunked",
                big, rank, (unsigned long long)want, nchunks);
        T_CHECK(got == want,
                "small event %llu: %llu chunks of the held "
                "transfer landed on rank %d, want exactly %llu",
                (unsigned long long)i, (unsigned long long)got, rank,
                (unsigned long long)want);
    }
    n = -1;
    T_OK(T_RUN(ev_execute(ctx, rank, fn_hold, &n, sizeof(n), NULL, 0, HP)));
    T_OK(ev_wait(hb));
    ev_handle_release(hb);
    T_CHECK(remote_checksum(ctx, rank, a, big) == t_checksum(src, big),
            "data of the submit held open on rank %d", rank);
    T_OK(T_RUN(ev_free(ctx, rank, a, HP)));
    free(src);
}

int main(void)
{
    ev_ctx_t *ctx;
    T_OK(ev_ctx_create(&ctx));
    T_OK(ev_fn_register(ctx, "checksum", t_fn_checksum, 0, &fn_checksum));
    T_OK(ev_fn_register(ctx, "echo", do_echo, 0, &fn_echo));
    T_OK(ev_fn_register(ctx, "stats", do_stats, EV_FN_INLINE, &fn_stats));
    T_OK(ev_fn_register(ctx, "fail", do_fail, 0, &fn_fail));
    T_OK(ev_fn_register(ctx, "tally", do_tally, EV_FN_INLINE, &fn_tally));
    T_OK(ev_fn_register(ctx, "tally_read", do_tally_read, EV_FN_INLINE, &fn_tally_read));
    T_OK(ev_fn_register(ctx, "hold", do_hold, EV_FN_INLINE, &fn_hold));
    T_OK(ev_fn_register(ctx, "credit", do_credit, 0, &fn_credit));
    int me = ev_ctx_rank(ctx), n = ev_ctx_size(ctx);
    {
        /* Events before the collective start are refused. */
        ev_handle_t *h0 = NULL;
        T_CHECK(ev_sync(ctx, 0, &h0) == OMPC_ERR_INVALID && !h0,
                "event before ev_ctx_start");
    }
    T_OK(ev_ctx_start(ctx));
    {
        ev_fn_id_t late;
        T_CHECK(ev_fn_register(ctx, "late", do_fail, 0, &late) == OMPC_ERR_INVALID,
                "registration after ev_ctx_start");
    }
    if (me != 0) {
        T_OK(ev_ctx_serve(ctx));
        ev_ctx_destroy(ctx);
        return 0;
    }
    static const size_t sizes[] = {1, 8, 8192, 8193, 100000, 9u << 20};
    for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            roundtrip(ctx, r, sizes[i], (uint64_t)(r * 100 + (int)i));
        exec_echo(ctx, r);
        error_statuses(ctx, r);
        sync_case(ctx, r);
        post_case(ctx, r);
    }
    no_starvation(ctx, n - 1);
    /* Exchanges between every ordered pair, the same rank included. */
    for (int ra = 0; ra < n; ra++)
        for (int rb = 0; rb < n; rb++) {
            exchange_case(ctx, ra, rb, 5000, (uint64_t)(ra * 10 + rb));
            exchange_case(ctx, ra, rb, (3u << 20) + 17, (uint64_t)(ra * 10 + rb + 7));
        }
    /* Exchange with a bad source address reports it; the target region is
     * left as it was. */
    if (n >= 3) {
        ev_addr_t b = remote_alloc(ctx, 2, 4096);
        T_CHECK(T_RUN(ev_exchange(ctx, 1, 0x40, 2, b, 4096, HP)) == OMPC_ERR_BAD_ADDR,
                "exchange from a bad source");
        T_CHECK(T_RUN(ev_exchange(ctx, 1, 0x40, 2, b, 1 << 20, HP)) == OMPC_ERR_BAD_ADDR,
                "streamed exchange from a bad source");
        ev_addr_t a = remote_alloc(ctx, 1, 1 << 20);
        T_CHECK(T_RUN(ev_exchange(ctx, 1, a, 2, b, 1 << 20, HP)) == OMPC_ERR_BAD_ADDR,
                "streamed exchange into a too-small target");
        T_OK(T_RUN(ev_free(ctx, 1, a, HP)));
        T_OK(T_RUN(ev_free(ctx, 2, b, HP)));
    }
    T_OK(ev_sync_all(ctx));
    ev_stats_t s;
    ev_ctx_stats(ctx, &s);
    T_OK(ev_ctx_shutdown(ctx));
    /* No event may start after shutdown. */
    ev_handle_t *h = NULL;
    T_CHECK(ev_sync(ctx, 0, &h) == OMPC_ERR_SHUTDOWN, "event after shutdown");
    ev_ctx_destroy(ctx);
    printf("ev_kinds: %d ranks, %llu events originated, all checks passed\n", n,
           (unsigned long long)s.events_originated);
    return 0;
}
