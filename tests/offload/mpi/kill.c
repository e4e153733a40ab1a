/* An MPI program whose application rank VICTIM (argv[1]) gets a target
 * region that kills its worker with SIGKILL at the second of three steps
 * (what the out-of-memory killer does).  The job must end non-zero with
 * the supervisor's line naming that rank of the job as a worker of
 * application rank VICTIM (expect_victim.sh). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int victim = argc > 1 ? atoi(argv[1]) : 1;
    int x = 0;
    for (int step = 0; step < 3; step++) {
#pragma omp target map(tofrom : x) firstprivate(rank, victim, step)
        {
            if (rank == victim && step == 1) {
                /* write(2): stdio's stderr does not resolve in the image. */
                char line[160];
                const char *r = getenv("PMI_RANK");
                int n = snprintf(line, sizeof(line),
                                 "failure_modes: rank %s (pid %d) kills itself "
                                 "with signal 9\n",
                                 r ? r : "?", (int)getpid());
                if (n > 0 && write(STDERR_FILENO, line, (size_t)n) == n)
                    kill(getpid(), SIGKILL);
            }
            x += step + 1;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    printf("FAIL: rank %d survived (x = %d)\n", rank, x);
    MPI_Finalize();
    return 1;
}
