/* The head's parallel regions get a team of argv[1] threads.  On a node
 * the head shares with workers, OMPC_HEAD_THREADS=0 (the default) makes
 * it 1 unless OMP_NUM_THREADS is set: the workers split the cores for
 * their kernels, and a second head thread only takes turns with the first
 * on recording target tasks.  A target region still runs on a worker. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int want = argc > 1 ? atoi(argv[1]) : 0;
    int team = 0, on_host = -1;
#pragma omp parallel
#pragma omp single
    {
        team = omp_get_num_threads();
#pragma omp target map(from : on_host)
        on_host = omp_is_initial_device();
    }
    printf("head_team: team of %d on the head (want %d), target region on the "
           "initial device: %d\n", team, want, on_host);
    return team == want && on_host == 0 ? 0 : 1;
}
