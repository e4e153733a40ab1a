/* An OpenMP offloading program that also uses MPI itself (argv[1]):
 *   init         MPI_Init, then a kernel.
 *   init-thread  MPI_Init_thread with MPI_THREAD_MULTIPLE, then a kernel.
 *   finalize     skips MPI_Init when MPI_Initialized says MPI is up, but
 *                calls MPI_Finalize at the end.
 *   initialized  (also without an argument) only asks MPI_Initialized
 *                (true: ompc started MPI), then runs a kernel.
 * On one rank, or with OMPC_WORKERS_PER_RANK set, each passes; on several
 * ranks without it, the MPI calls are refused by name (docs/mpi.md).
 * The kernel's result is printed, so that a run that got past a refusal
 * shows it. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int offload(void)
{
    int x = 0;
#pragma omp target map(tofrom: x)
    x = 42;
    printf("kernel result %d\n", x);
    return x == 42;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "initialized";
    int ok = 0, inited = 0, provided = -1;
    if (strcmp(mode, "init") == 0) {
        MPI_Init(&argc, &argv);
        ok = offload();
    } else if (strcmp(mode, "init-thread") == 0) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        ok = offload() && provided == MPI_THREAD_MULTIPLE;
    } else if (strcmp(mode, "finalize") == 0 || strcmp(mode, "initialized") == 0) {
        MPI_Initialized(&inited);
        if (!inited)
            MPI_Init(&argc, &argv);
        ok = offload();
        if (strcmp(mode, "finalize") == 0)
            MPI_Finalize();
    } else {
        fprintf(stderr, "usage: mpi_program init|init-thread|finalize|initialized\n");
        return 2;
    }
    printf("%s %s (MPI_Initialized before: %d)\n", ok ? "PASS" : "FAIL", mode, inited);
    return ok ? 0 : 1;
}
