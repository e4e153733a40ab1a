/* Kernels with a parallel region on every worker, so that libomp starts
 * there (and registers itself in /dev/shm); with argv[1] == "abort" one
 * kernel aborts its worker.  shm_clean.sh checks what the job left. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTASKS 8

int main(int argc, char **argv)
{
    int die = argc > 1 && strcmp(argv[1], "abort") == 0;
    int team[NTASKS] = {0};
    for (int t = 0; t < NTASKS; t++) {
#pragma omp target nowait map(tofrom : team[t : 1]) firstprivate(t, die)
        {
#pragma omp parallel
            {
#pragma omp single
                team[t] = omp_get_num_threads();
            }
            if (die && t == NTASKS - 1)
                abort();
        }
    }
#pragma omp taskwait
    for (int t = 0; t < NTASKS; t++)
        if (team[t] < 1) {
            fprintf(stderr, "shm_clean: task %d did not run\n", t);
            return 1;
        }
    printf("shm_clean: %d tasks ran\n", NTASKS);
    return 0;
}
