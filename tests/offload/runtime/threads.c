/* Kernels get the executor's cores for their parallel regions: the team
 * size inside a target region must be argv[1] (the executor's share of the
 * machine's cores when OMP_NUM_THREADS is unset: executors on one host split
 * them; or OMP_NUM_THREADS). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int want = argc > 1 ? atoi(argv[1]) : 0;
    int team = 0, initial = -1;
#pragma omp target map(from : team, initial)
    {
        initial = omp_is_initial_device();
#pragma omp parallel
        {
#pragma omp single
            team = omp_get_num_threads();
        }
    }
    printf("threads: team of %d in a target region (want %d), initial device %d\n",
           team, want, initial);
    return team == want ? 0 : 1;
}
