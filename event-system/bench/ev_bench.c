/* ompc-ev-bench: the event system against raw MPI, measured in one run.
 *
 *   mpiexec -n 2 ompc-ev-bench [--quick]
 *
 * Rank 0 first measures raw MPI (ping-pong on a private communicator, before
 * any event-system thread exists), then the same traffic through events, and
 * prints each figure with its ratio to raw MPI.  Latency ratios are
 * event/raw (lower is better, target <= 3); bandwidth ratios event/raw
 * (higher is better, target >= 0.70 at 64 MiB). */
#define _GNU_SOURCE
#include "ompc_ev.h"

#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 5 /* each figure: best of REPS timed batches */

static int quick;

static ompc_status_t fn_empty(ev_exec_info_t *info)
{
    (void)info;
    return OMPC_OK;
}

static int iters_for(size_t size)
{
    int n = size <= 64 ? 20000 : size <= 65536 ? 2000 : 10;
    return quick ? (n / 10 > 2 ? n / 10 : 2) : n;
}

/* Raw MPI: rank 0 sends `size` bytes, rank 1 answers with `back` bytes.
 * Returns seconds per round trip (best batch). */
static double raw_pingpong(MPI_Comm comm, int me, char *buf, size_t size, size_t back,
                           int iters)
{
    double best = 1e30;
    for (int rep = 0; rep < REPS; rep++) {
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (me == 0) {
                MPI_Send(buf, (int)size, MPI_BYTE, 1, 0, comm);
                MPI_Recv(buf, (int)back, MPI_BYTE, 1, 0, comm, MPI_STATUS_IGNORE);
            } else if (me == 1) {
                MPI_Recv(buf, (int)size, MPI_BYTE, 0, 0, comm, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)back, MPI_BYTE, 0, 0, comm);
            }
        }
        double t = (MPI_Wtime() - t0) / iters;
        if (t < best)
            best = t;
    }
    return best;
}

typedef enum { OP_EXEC, OP_EXEC_INLINE, OP_SUBMIT, OP_RETRIEVE } op_t;

static double ev_measure(ev_ctx_t *ctx, op_t op, ev_fn_id_t fn, ev_fn_id_t fn_inl,
                         char *buf, ev_addr_t remote, size_t size, int iters)
{
    double best = 1e30;
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            ev_handle_t *h = NULL;
            ompc_status_t st = OMPC_ERR_INVALID;
            switch (op) {
            case OP_EXEC: st = ev_execute(ctx, 1, fn, NULL, 0, NULL, 0, &h); break;
            case OP_EXEC_INLINE:
                st = ev_execute(ctx, 1, fn_inl, NULL, 0, NULL, 0, &h);
                break;
            case OP_SUBMIT: st = ev_submit(ctx, 1, buf, remote, size, &h); break;
            case OP_RETRIEVE: st = ev_retrieve(ctx, 1, remote, buf, size, &h); break;
            }
            if (st == OMPC_OK)
                st = ev_wait(h);
            if (st != OMPC_OK) {
                fprintf(stderr, "ompc-ev-bench: event failed: %s\n", ompc_status_str(st));
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            ev_handle_release(h);
        }
        double t = (MPI_Wtime() - t0) / iters;
        if (t < best)
            best = t;
    }
    return best;
}

static void human(size_t n, char *out, size_t cap)
{
    if (n >= (1u << 20))
        snprintf(out, cap, "%zu MiB", n >> 20);
    else if (n >= 1024)
        snprintf(out, cap, "%zu KiB", n >> 10);
    else
        snprintf(out, cap, "%zu B", n);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"quick", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0; /* one line below instead of getopt's */
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'q') {
            quick = 1;
        } else if (c == 'h') {
            printf("usage: mpiexec -n 2 %s [--quick]\n", argv[0]);
            return 0;
        } else {
            if (optopt)
                fprintf(stderr,
                        "ompc-ev-bench: unknown option -%c (usage: mpiexec -n 2 %s "
                        "[--quick])\n",
                        optopt, argv[0]);
            else
                fprintf(stderr,
                        "ompc-ev-bench: unknown option %s (usage: mpiexec -n 2 %s "
                        "[--quick])\n",
                        argv[optind - 1], argv[0]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr,
                "ompc-ev-bench: unexpected argument %s (usage: mpiexec -n 2 %s "
                "[--quick])\n",
                argv[optind], argv[0]);
        return 2;
    }
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2) {
        if (me == 0)
            fprintf(stderr, "ompc-ev-bench needs 2 ranks: mpiexec -n 2 %s\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    static const size_t sizes[] = {8, 64 * 1024, 64u << 20};
    enum { NS = 3 };
    size_t maxsz = sizes[NS - 1];
    char *buf = malloc(maxsz);
    memset(buf, 1, maxsz);

    /* ---- raw MPI baseline, before any event-system thread exists */
    MPI_Comm raw;
    MPI_Comm_dup(MPI_COMM_WORLD, &raw);
    double raw_rtt = raw_pingpong(raw, me, buf, 8, 8, iters_for(8));
    double raw_t[NS];
    for (int i = 0; i < NS; i++)
        raw_t[i] = raw_pingpong(raw, me, buf, sizes[i], 0, iters_for(sizes[i]));
    MPI_Comm_free(&raw);

    /* ---- the same traffic through the event system */
    ev_ctx_t *ctx;
    ev_fn_id_t fn, fn_inl;
    if (ev_ctx_create(&ctx) != OMPC_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    ev_fn_register(ctx, "empty", fn_empty, 0, &fn);
    ev_fn_register(ctx, "empty-inline", fn_empty, EV_FN_INLINE, &fn_inl);
    ev_ctx_start(ctx);
    if (me != 0) {
        ev_ctx_serve(ctx);
        ev_ctx_destroy(ctx);
        free(buf);
        MPI_Finalize();
        return 0;
    }
    ev_handle_t *h;
    ev_alloc(ctx, 1, maxsz, &h);
    ev_wait(h);
    ev_addr_t remote = ev_handle_addr(h);
    ev_handle_release(h);

    double ex = ev_measure(ctx, OP_EXEC, fn, fn_inl, buf, remote, 0, iters_for(8));
    double exi = ev_measure(ctx, OP_EXEC_INLINE, fn, fn_inl, buf, remote, 0,
                            iters_for(8));
    double sub[NS], ret[NS];
    for (int i = 0; i < NS; i++) {
        sub[i] = ev_measure(ctx, OP_SUBMIT, fn, fn_inl, buf, remote, sizes[i],
                            iters_for(sizes[i]));
        ret[i] = ev_measure(ctx, OP_RETRIEVE, fn, fn_inl, buf, remote, sizes[i],
                            iters_for(sizes[i]));
    }
    ev_free(ctx, 1, remote, &h);
    ev_wait(h);
    ev_handle_release(h);
    ev_ctx_shutdown(ctx);
    ev_ctx_destroy(ctx);

    printf("ompc-ev-bench: %d ranks, best of %d batches%s\n", np, REPS,
           quick ? " (quick)" : "");
    printf("%-34s %12s %12s %8s\n", "operation", "raw MPI", "event", "ratio");
    printf("%-34s %9.2f us %9.2f us %8.2f  (latency: event/raw, target <= 3)\n",
           "round trip, empty execute", raw_rtt * 1e6, ex * 1e6, ex / raw_rtt);
    printf("%-34s %9.2f us %9.2f us %8.2f\n", "round trip, empty inline execute",
           raw_rtt * 1e6, exi * 1e6, exi / raw_rtt);
    for (int i = 0; i < NS; i++) {
        char name[64], hs[16];
        human(sizes[i], hs, sizeof(hs));
        const char *what[2] = {"submit", "retrieve"};
        double t[2] = {sub[i], ret[i]};
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof(name), "%s %s", what[k], hs);
            if (sizes[i] <= 64) {
                printf("%-34s %9.2f us %9.2f us %8.2f  (latency: event/raw)\n", name,
                       raw_t[i] * 1e6, t[k] * 1e6, t[k] / raw_t[i]);
            } else {
                double rb = (double)sizes[i] / raw_t[i] / 1e9;
                double eb = (double)sizes[i] / t[k] / 1e9;
                printf("%-34s %8.2f GB/s %7.2f GB/s %8.2f  (bandwidth: event/raw%s)\n",
                       name, rb, eb, eb / rb,
                       sizes[i] >= (64u << 20) ? ", target >= 0.70" : "");
            }
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
