/* A kernel that ran short several times without faulting, then faults:
 * on a crowded one-slot worker the gate thread runs it by then (it runs
 * short ready kernels itself, "the gate runs the ready queue"), and the
 * fault's page must still come (the gate is what moves messages).  The
 * kernel follows a pointer stored in device data to an omp_target_alloc
 * block no clause names, only on its last runs. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define WARM 12 /* runs without a fault first */
#define RUNS 16

int main(void)
{
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    long *cell = omp_target_alloc(4096 * sizeof(long), dev);
    long **table = omp_target_alloc(sizeof(long *), dev);
    long init[4096];
    for (int i = 0; i < 4096; i++)
        init[i] = 1000 + i;
    if (!cell || !table ||
        omp_target_memcpy(cell, init, sizeof(init), 0, 0, dev, host) ||
        omp_target_memcpy(table, &cell, sizeof(cell), 0, 0, dev, host))
        return 2;
    long *accd = omp_target_alloc(sizeof(long), dev), acc = 0, want = 0;
    if (!accd || omp_target_memcpy(accd, &acc, sizeof(acc), 0, 0, dev, host))
        return 2;
    /* One graph: a chain the worker runs as its tasks arrive. */
    for (int r = 0; r < RUNS; r++) {
        int fault = r >= WARM;
        /* The runs that fault write too: the write-back must land. */
#pragma omp target is_device_ptr(table, accd) firstprivate(fault, r) \
    depend(inout : accd[0]) nowait
        {
            if (fault) {
                accd[0] += table[0][r];
                table[0][r] = -r;
            } else {
                accd[0] += 1;
            }
        }
        want += fault ? 1000 + r : 1;
    }
#pragma omp taskwait
    if (omp_target_memcpy(&acc, accd, sizeof(acc), 0, 0, host, dev))
        return 2;
    if (acc != want) {
        fprintf(stderr, "gate: acc %ld, want %ld\n", acc, want);
        return 1;
    }
    if (omp_target_memcpy(init, cell, sizeof(init), 0, 0, host, dev))
        return 2;
    for (int r = WARM; r < RUNS; r++)
        if (init[r] != -r) {
            fprintf(stderr, "gate: cell[%d] = %ld, want %d\n", r, init[r], -r);
            return 1;
        }
    omp_target_free(cell, dev);
    omp_target_free(table, dev);
    omp_target_free(accd, dev);
    printf("gate: ok\n");
    return 0;
}
