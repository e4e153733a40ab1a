/* Offloading overheads, the same source for every runtime:
 *   sync   - time per empty synchronous target region (one 8-byte tofrom)
 *   nowait - independent empty `target nowait` tasks per second
 * Prints one line "sync_us=<t> nowait_per_s=<r>" (best of 5 batches). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int nsync = argc > 1 ? atoi(argv[1]) : 2000;
    int ntasks = argc > 2 ? atoi(argv[2]) : 2000;
    double x = 0, best_sync = 1e30, best_rate = 0;
#pragma omp target map(tofrom : x) /* warm-up: start-up costs not counted */
    x += 1;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = omp_get_wtime();
        for (int i = 0; i < nsync; i++) {
#pragma omp target map(tofrom : x)
            x += 1;
        }
        double t = (omp_get_wtime() - t0) / nsync;
        if (t < best_sync)
            best_sync = t;
        t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
        {
            for (int i = 0; i < ntasks; i++) {
#pragma omp target nowait
                {
                }
            }
#pragma omp taskwait
        }
        double rate = ntasks / (omp_get_wtime() - t0);
        if (rate > best_rate)
            best_rate = rate;
    }
    if (x < 1)
        return 1;
    printf("sync_us=%.2f nowait_per_s=%.0f\n", best_sync * 1e6, best_rate);
    return 0;
}
