/* Error paths, one per mode (argv[1]).  Each mode makes the job fail; the
 * CTest wrapper checks for a non-zero exit, the expected message, and no
 * hang.  If the runtime missed the fault, rank 0 exits 0 after a while and
 * the test fails. */
#define _GNU_SOURCE
#include "ev_internal.h"
#include "ev_test.h"

#include <signal.h>
#include <unistd.h>

static ompc_status_t do_stop(ev_exec_info_t *info)
{
    (void)info;
    raise(SIGSTOP); /* a hung node: every thread of this rank stops */
    return OMPC_OK;
}

static int describe(void *arg, int rank, int owed, char *buf, size_t cap)
{
    (void)arg;
    if (owed == 0)
        return 0; /* the event system's own words */
    return snprintf(buf, cap, "%d test answer(s) from rank %d", owed, rank);
}

static ompc_status_t do_die(ev_exec_info_t *info)
{
    (void)info;
    kill(getpid(), SIGKILL);
    return OMPC_OK;
}

static ompc_status_t do_refuse(ev_exec_info_t *info)
{
    (void)info;
    return OMPC_ERR_USER;
}

static ev_wire_hdr_t raw_hdr(ev_ctx_t *ctx, int kind)
{
    ev_wire_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.magic = EV_MAGIC;
    h.kind = (uint16_t)kind;
    h.origin = ev_ctx_rank(ctx);
    h.tag = ev_debug_tag(ctx);
    return h;
}

int main(int argc, char **argv)
{
    T_CHECK(argc == 2, "usage: ev_faults MODE");
    const char *mode = argv[1];
    if (strcmp(mode, "thread-single") == 0) {
        /* The application initialised MPI without thread support: the
         * event system must refuse by name, not misbehave later. */
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
        if (provided >= MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "MPI granted more than asked; cannot test\n");
            MPI_Finalize();
            return 0; /* exit 0 makes the test fail: not checked */
        }
    }
    ev_ctx_t *ctx;
    ev_fn_id_t fn_stop, fn_stop_inline, fn_die, fn_refuse;
    /* coordinator-hang: rank 0 coordinates, and stops once all started. */
    bool coord = strcmp(mode, "coordinator-hang") == 0;
    T_OK(ev_ctx_create_opts(&ctx, &(ev_ctx_opts_t){.coordinator = coord ? 0 : -1}));
    ev_set_peer_describe(ctx, describe, NULL);
    T_OK(ev_fn_register(ctx, "stop", do_stop, 0, &fn_stop));
    T_OK(ev_fn_register(ctx, "stop-inline", do_stop, EV_FN_INLINE, &fn_stop_inline));
    T_OK(ev_fn_register(ctx, "die", do_die, 0, &fn_die));
    T_OK(ev_fn_register(ctx, "refuse", do_refuse, EV_FN_INLINE, &fn_refuse));
    T_OK(ev_ctx_start(ctx));
    if (ev_ctx_rank(ctx) != 0) {
        T_OK(ev_ctx_serve(ctx));
        if (strcmp(mode, "exit-hang") == 0 && ev_ctx_rank(ctx) == 1)
            raise(SIGSTOP); /* a node hung after the exit exchange */
        ev_ctx_destroy(ctx);
        return 0;
    }
    if (strcmp(mode, "unknown-kind") == 0) {
        ev_wire_hdr_t h = raw_hdr(ctx, 77);
        T_OK(ev_debug_send_raw(ctx, 1, &h, sizeof(h)));
    } else if (strcmp(mode, "wrong-size") == 0) {
        char msg[sizeof(ev_wire_hdr_t) + 10];
        ev_wire_hdr_t h = raw_hdr(ctx, EV_K_SUBMIT);
        h.flags = EV_F_INLINE;
        h.size = 100;
        h.payload = 100; /* but only 10 bytes follow */
        memcpy(msg, &h, sizeof(h));
        memset(msg + sizeof(h), 0, 10);
        T_OK(ev_debug_send_raw(ctx, 1, msg, sizeof(msg)));
    } else if (strcmp(mode, "short-message") == 0) {
        T_OK(ev_debug_send_raw(ctx, 1, "OMPE", 5));
    } else if (strcmp(mode, "tag-collision") == 0) {
        /* A streamed submit stays in flight waiting for its data; a second
         * notification with the same tag must be refused. */
        ev_wire_hdr_t h = raw_hdr(ctx, EV_K_SUBMIT);
        h.size = 1 << 20;
        h.addr = 0x1000;
        T_OK(ev_debug_send_raw(ctx, 1, &h, sizeof(h)));
        T_OK(ev_debug_send_raw(ctx, 1, &h, sizeof(h)));
    } else if (strcmp(mode, "peer-hang") == 0) {
        ev_handle_t *h;
        T_OK(ev_execute(ctx, 1, fn_stop, NULL, 0, NULL, 0, &h));
        ev_wait(h); /* must not return: the gate ends the job */
    } else if (strcmp(mode, "owed-hang") == 0) {
        /* Something owed without a reply (a one-way answer): the peer
         * stops before sending it. */
        ev_peer_expect(ctx, 1, 1);
        T_OK(ev_post(ctx, 1, fn_stop_inline, NULL, 0));
    } else if (coord) {
        raise(SIGSTOP); /* the others only serve it: they must notice */
    } else if (strcmp(mode, "post-refused") == 0) {
        /* No reply comes back for a post: the destination ends the job. */
        T_OK(ev_post(ctx, 1, fn_refuse, "x", 1));
    } else if (strcmp(mode, "post-raw-tagged") == 0) {
        /* A one-way execute must carry neither a tag nor a result. */
        ev_wire_hdr_t h = raw_hdr(ctx, EV_K_EXECUTE);
        h.flags = EV_F_ONEWAY;
        h.arg = (uint64_t)fn_refuse;
        T_OK(ev_debug_send_raw(ctx, 1, &h, sizeof(h)));
    } else if (strcmp(mode, "exit-hang") == 0) {
        /* Rank 1 stops between its exit reply and the last barrier. */
        T_OK(ev_ctx_shutdown(ctx));
        ev_ctx_destroy(ctx); /* must not return: the barrier ends the job */
    } else if (strcmp(mode, "peer-dies") == 0) {
        ev_handle_t *h;
        T_OK(ev_execute(ctx, 1, fn_die, NULL, 0, NULL, 0, &h));
        ev_wait(h);
    } else {
        T_CHECK(0, "unknown mode %s", mode);
    }
    /* The fault should have ended the job by now. */
    sleep(20);
    fprintf(stderr, "ev_faults %s: the fault went unnoticed\n", mode);
    T_OK(ev_ctx_shutdown(ctx));
    ev_ctx_destroy(ctx);
    return 0;
}
