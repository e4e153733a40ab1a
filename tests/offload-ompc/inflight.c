/* target nowait regions run asynchronously: no OpenMP thread waits for a
 * kernel, so the number of regions in flight is not capped by libomp's
 * hidden helper threads (8).  Each kernel sleeps and records when it ran;
 * the largest number of kernels running at one moment must exceed the
 * threshold given on the command line. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define K 40

#pragma omp declare target
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
#pragma omp end declare target

int main(int argc, char **argv)
{
    int threshold = argc > 1 ? atoi(argv[1]) : 8;
    double start[K], end[K];
#pragma omp parallel
#pragma omp single
    for (int k = 0; k < K; k++) {
#pragma omp target nowait map(from : start[k : 1], end[k : 1]) firstprivate(k)
        {
            start[k] = now_s();
            usleep(300000);
            end[k] = now_s();
        }
    }
    int most = 0;
    for (int k = 0; k < K; k++) {
        int n = 0;
        for (int j = 0; j < K; j++)
            n += start[j] <= start[k] && start[k] < end[j];
        if (n > most)
            most = n;
    }
    printf("inflight: at most %d of %d kernels ran at the same time (need > %d)\n",
           most, K, threshold);
    return most > threshold ? 0 : 1;
}
