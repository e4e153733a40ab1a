/* An MPI program that offloads: a 1D heat equation split across the
 * application's ranks (NLOCAL cells each), a halo exchange with the
 * neighbours every step, each step's update as two target tasks (halves of
 * the local domain, nowait with dependences, so that HEFT may place them
 * on different workers and the halves' edges move between them), and an
 * MPI_Allreduce of the squared norm after every step.
 *
 * Prints the number of application ranks, the final norm and a checksum
 * over every step's norm (order-sensitive: a lost, repeated or reordered
 * step, or a halo from the wrong neighbour, changes it).  The same source
 * built with stock clang and plain MPI must print the same line
 * (tests/offload/mpi/compare_stock.sh).
 *
 *   halo [expected application ranks] [abort-rank]
 * abort-rank: that application rank calls MPI_Abort(MPI_COMM_WORLD, 7)
 * after the first step. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NLOCAL 4096
#define HALF (NLOCAL / 2)
#define STEPS 24

int main(int argc, char **argv)
{
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rank = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int expect = argc > 1 ? atoi(argv[1]) : size;
    int abort_rank = argc > 2 ? atoi(argv[2]) : -1;
    if (size != expect || provided != MPI_THREAD_FUNNELED) {
        printf("FAIL rank %d: %d ranks (expected %d), provided %d\n", rank, size, expect,
               provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* u[0] and u[NLOCAL + 1] are the halo cells. */
    double *u = malloc((NLOCAL + 2) * sizeof(double));
    double *v = malloc((NLOCAL + 2) * sizeof(double));
    for (int i = 0; i < NLOCAL + 2; i++) {
        long g = (long)rank * NLOCAL + i - 1;
        u[i] = sin(0.001 * (double)g) + 0.5 * (double)(rank + 1);
        v[i] = 0.0;
    }
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double checksum = 0.0, norm = 0.0;
#pragma omp target enter data map(to : u[0 : NLOCAL + 2], v[0 : NLOCAL + 2])
    for (int step = 0; step < STEPS; step++) {
        /* Halo exchange: the edge cells come back from the device, the
         * neighbours' edges go in. */
#pragma omp target update from(u[1 : 1])
#pragma omp target update from(u[NLOCAL : 1])
        MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 10 + step, &u[NLOCAL + 1], 1, MPI_DOUBLE,
                     right, 10 + step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[NLOCAL], 1, MPI_DOUBLE, right, 1000 + step, &u[0], 1, MPI_DOUBLE,
                     left, 1000 + step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (left == MPI_PROC_NULL)
            u[0] = 0.25 * step;
        if (right == MPI_PROC_NULL)
            u[NLOCAL + 1] = -0.5;
#pragma omp target update to(u[0 : 1])
#pragma omp target update to(u[NLOCAL + 1 : 1])
        double s = 1.0 + 0.01 * step;
        for (int h = 0; h < 2; h++) {
            int lo = 1 + h * HALF, hi = lo + HALF;
#pragma omp target nowait map(tofrom : u[0 : NLOCAL + 2], v[0 : NLOCAL + 2])          \
    depend(in : u[0 : NLOCAL + 2]) depend(out : v[lo : HALF]) firstprivate(lo, hi, s)
            for (int i = lo; i < hi; i++)
                v[i] = u[i] + 0.2 * s * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
#pragma omp taskwait
        /* The halves' results become the next u on the device. */
#pragma omp target map(tofrom : u[0 : NLOCAL + 2], v[0 : NLOCAL + 2])
        for (int i = 1; i <= NLOCAL; i++)
            u[i] = v[i];
        double local = 0.0;
#pragma omp target map(tofrom : local) map(to : u[0 : NLOCAL + 2])
        for (int i = 1; i <= NLOCAL; i++)
            local += u[i] * u[i];
        MPI_Allreduce(&local, &norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        norm = sqrt(norm);
        checksum = checksum * 1.0001 + norm * (double)(step + 1);
        if (step == 0 && rank == abort_rank) {
            fprintf(stderr, "rank %d aborts\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 7);
        }
    }
#pragma omp target exit data map(release : u[0 : NLOCAL + 2], v[0 : NLOCAL + 2])
    if (rank == 0)
        printf("RESULT ranks %d norm %.15e checksum %.15e\n", size, norm, checksum);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}
