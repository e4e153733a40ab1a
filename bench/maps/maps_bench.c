/* Target tasks that map large arrays tofrom: `chains` arrays of `mib` MiB,
 * each updated by a chain of `target nowait` tasks linked by
 * depend(inout:), every task mapping its whole array map(tofrom:) (no enter
 * data: the array goes to the device and back in every task).  The kernel
 * touches one element per 4 KiB page, so the time is the data's.  One task
 * per chain runs first, untimed (device pages are mapped once per worker).
 * Prints the time and the bandwidth of the timed tasks, both directions
 * counted, and checks every element.
 *   maps-bench mib tasks [chains]   (tasks over all chains; default 1 chain) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define STRIDE 1024 /* unsigned elements per 4 KiB page */

static void run_round(unsigned **a, int chains, size_t n, int tasks)
{
#pragma omp parallel
#pragma omp single
    for (int t = 0; t < tasks; t++) {
        unsigned *x = a[t % chains];
#pragma omp target nowait map(tofrom : x[0 : n]) depend(inout : x[0]) firstprivate(n)
        for (size_t i = 0; i < n; i += STRIDE)
            x[i] += 1u;
    }
}

int main(int argc, char **argv)
{
    long mib = argc > 1 ? atol(argv[1]) : 64;
    int tasks = argc > 2 ? atoi(argv[2]) : 16;
    int chains = argc > 3 ? atoi(argv[3]) : 1;
    if (mib < 1 || tasks < 1 || chains < 1) {
        fprintf(stderr, "usage: maps-bench mib tasks [chains]\n");
        return 2;
    }
    size_t n = (size_t)mib * 1024 * 1024 / sizeof(unsigned);
    unsigned **a = malloc((size_t)chains * sizeof(*a));
    if (!a)
        return 1;
    for (int c = 0; c < chains; c++) {
        a[c] = malloc(n * sizeof(unsigned));
        if (!a[c]) {
            fprintf(stderr, "maps-bench: cannot allocate %ld MiB\n", mib);
            return 1;
        }
        for (size_t i = 0; i < n; i++)
            a[c][i] = (unsigned)(i * 2654435761u) ^ (unsigned)c;
    }
    run_round(a, chains, n, chains); /* warm-up: one task per chain */
    double t0 = omp_get_wtime();
    run_round(a, chains, n, tasks);
    double t1 = omp_get_wtime();
    long bad = 0;
    for (int c = 0; c < chains; c++) {
        unsigned runs = 1u + (unsigned)(tasks / chains + (c < tasks % chains));
        for (size_t i = 0; i < n; i++) {
            unsigned want = ((unsigned)(i * 2654435761u) ^ (unsigned)c) +
                            (i % STRIDE == 0 ? runs : 0u);
            bad += a[c][i] != want;
        }
        free(a[c]);
    }
    free(a);
    double bytes = 2.0 * (double)tasks * (double)n * sizeof(unsigned);
    printf("maps_s=%.4f mib=%ld tasks=%d chains=%d gbs=%.3f %s\n", t1 - t0, mib, tasks,
           chains, bytes / (t1 - t0) / 1e9, bad ? "WRONG" : "ok");
    return bad ? 1 : 0;
}
