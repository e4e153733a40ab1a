/* Offloading overheads, the same source for every runtime:
 *   sync   - time per empty synchronous target region (one 8-byte tofrom)
 *   nowait - independent empty `target nowait` tasks per second
 *   par    - time per synchronous target region whose kernel is a
 *            `parallel for` over PAR_ITERS iterations on the device's cores
 *            (a fraction of a millisecond: where the runtime's own threads
 *            take cores from the kernel's team, this shows it)
 * Prints one line "sync_us=<t> nowait_per_s=<r> par_us=<p>" (best of 5
 * batches). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define PAR_ITERS 200000L

int main(int argc, char **argv)
{
    int nsync = argc > 1 ? atoi(argv[1]) : 2000;
    int ntasks = argc > 2 ? atoi(argv[2]) : 2000;
    int npar = argc > 3 ? atoi(argv[3]) : 200;
    double x = 0, best_sync = 1e30, best_rate = 0, best_par = 1e30;
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
        t0 = omp_get_wtime();
        for (int i = 0; i < npar; i++) {
            long r = 0;
#pragma omp target map(tofrom : r)
            {
#pragma omp parallel for reduction(+ : r) schedule(static)
                for (long j = 0; j < PAR_ITERS; j++)
                    r += (j * 7 + i) % 11;
            }
            long want = 0;
            for (long j = 0; j < 11; j++) /* PAR_ITERS is not a multiple of 11 */
                want += ((j * 7 + i) % 11) * ((PAR_ITERS - j + 10) / 11);
            if (r != want) {
                fprintf(stderr, "tgt-bench: parallel kernel %d returned %ld, not %ld\n",
                        i, r, want);
                return 1;
            }
        }
        t = npar > 0 ? (omp_get_wtime() - t0) / npar : 0;
        if (t < best_par)
            best_par = t;
    }
    if (x < 1)
        return 1;
    printf("sync_us=%.2f nowait_per_s=%.0f par_us=%.1f\n", best_sync * 1e6, best_rate,
           best_par * 1e6);
    return 0;
}
