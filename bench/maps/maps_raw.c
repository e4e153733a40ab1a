/* Raw MPI beside maps-bench: rank 0 sends `mib` MiB to every other rank
 * and receives as much back from each, `rounds` times (the data of one
 * tofrom task per worker and round), after one untimed round.  Plain
 * blocking point-to-point on warm buffers; prints the bandwidth counted as
 * maps-bench counts it (both directions, all workers).
 *   mpiexec -n N maps-raw mib rounds */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "maps-raw: %s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* One round: rank 0 posts a send to and a receive from every worker. */
static void round_trip(char *buf, size_t n, int me, int size, MPI_Request *rq)
{
    if (me == 0) {
        int k = 0;
        for (int r = 1; r < size; r++) {
            check(MPI_Isend(buf + (size_t)(r - 1) * n, (int)n, MPI_BYTE, r, 0,
                            MPI_COMM_WORLD, &rq[k++]),
                  "MPI_Isend");
            check(MPI_Irecv(buf + (size_t)(size - 1 + r - 1) * n, (int)n, MPI_BYTE, r, 1,
                            MPI_COMM_WORLD, &rq[k++]),
                  "MPI_Irecv");
        }
        check(MPI_Waitall(k, rq, MPI_STATUSES_IGNORE), "MPI_Waitall");
    } else {
        check(MPI_Recv(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
        check(MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD), "MPI_Send");
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long mib = argc > 1 ? atol(argv[1]) : 64;
    int rounds = argc > 2 ? atoi(argv[2]) : 16;
    if (size < 2 || mib < 1 || mib > 1024 || rounds < 1) {
        if (me == 0)
            fprintf(stderr, "usage: mpiexec -n N (N >= 2) maps-raw mib rounds\n");
        MPI_Finalize();
        return 2;
    }
    size_t n = (size_t)mib * 1024 * 1024;
    /* rank 0: a send and a receive buffer per worker */
    size_t total = me == 0 ? 2 * (size_t)(size - 1) * n : n;
    char *buf = malloc(total);
    MPI_Request *rq = malloc(2 * (size_t)size * sizeof(*rq));
    if (!buf || !rq) {
        fprintf(stderr, "maps-raw: cannot allocate %zu bytes\n", total);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, me + 1, total);
    round_trip(buf, n, me, size, rq);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < rounds; i++)
        round_trip(buf, n, me, size, rq);
    double t1 = MPI_Wtime();
    if (me == 0) {
        double bytes = 2.0 * (double)rounds * (double)(size - 1) * (double)n;
        printf("raw_s=%.4f mib=%ld rounds=%d workers=%d gbs=%.3f ok\n", t1 - t0, mib,
               rounds, size - 1, bytes / (t1 - t0) / 1e9);
    }
    free(buf);
    free(rq);
    MPI_Finalize();
    return 0;
}
