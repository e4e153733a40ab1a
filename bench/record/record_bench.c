/* Recording throughput against the number of head threads that record
 * (issue 21, item 4): empty `target nowait` kernels, so that what is
 * measured is the head's cost per task (record, schedule, launch), not the
 * workers'.  Two shapes, for T = 1, 2, 4 threads in the same run:
 *
 *   spawn   every thread of a `parallel num_threads(T)` creates n/T
 *           independent tasks and waits for them (taskwait); T threads
 *           create and record at once
 *   single  one thread creates n tasks in `single`, in chains of 8 linked
 *           by depend(inout:) on 64 slots, and the team's T threads take
 *           and record them (libomp's task stealing)
 *   chains  every thread creates chains of 8 of its own (depend(inout:)
 *           on one counter per chain) and waits for them
 *   loop    `single` + `taskloop grainsize(1)` over the chains: each
 *           taskloop task, on whichever thread takes it, creates a chain
 *
 * Each point is the best of --reps rounds, the thread counts alternated
 * inside a round.  Prints per shape and thread count a line
 *   shape=<s> threads=<T> tasks_per_s=<r> vs_1=<r / rate with 1 thread>
 * Checks that every task of `single`, `chains` and `loop` ran (counters
 * per slot and per chain, mapped once and copied back at the end) and
 * exits 1 otherwise.
 *
 *   record-bench-ompc [tasks [reps]]   (default 20000, 5) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 64
#define CHAIN 8
#define NT 3
#define NS 4

static const int threads[NT] = {1, 2, 4};

static double spawn(int t, long n)
{
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(t)
    {
        long mine = n / t + (omp_get_thread_num() < n % t);
        for (long i = 0; i < mine; i++) {
#pragma omp target nowait
            {
            }
        }
#pragma omp taskwait
    }
    return n / (omp_get_wtime() - t0);
}

static double single(int t, long n, long *count)
{
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(t)
#pragma omp single
    {
        for (long i = 0; i < n; i++) {
            long s = (i / CHAIN) % SLOTS;
#pragma omp target nowait depend(inout : count[s])
            count[s]++; /* count is mapped (enter data): no copy per task */
        }
#pragma omp taskwait
    }
    return n / (omp_get_wtime() - t0);
}

/* chains of CHAIN tasks, chain c on its own counter cc[c] */
static double chains(int t, long n, long *cc)
{
    long nch = n / CHAIN;
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(t)
    {
        for (long c = omp_get_thread_num(); c < nch; c += t)
            for (int j = 0; j < CHAIN; j++) {
#pragma omp target nowait depend(inout : cc[c])
                cc[c]++; /* cc is mapped (enter data) */
            }
#pragma omp taskwait
    }
    return nch * CHAIN / (omp_get_wtime() - t0);
}

static double loop(int t, long n, long *cc)
{
    unsigned long nch = (unsigned long)n / CHAIN;
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(t)
#pragma omp single
#pragma omp taskloop grainsize(1)
    for (unsigned long c = 0; c < nch; c++)
        for (int j = 0; j < CHAIN; j++) {
#pragma omp target nowait depend(inout : cc[c])
            cc[c]++;
        }
    return (double)nch * CHAIN / (omp_get_wtime() - t0);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 16 || reps < 1) {
        fprintf(stderr, "usage: record-bench-ompc [tasks >= 16 [reps >= 1]]\n");
        return 2;
    }
    long count[SLOTS] = {0};
    long nch = n / CHAIN;
    long *cc = calloc((size_t)nch, sizeof(long));
    if (!cc)
        return 2;
    double best[NS][NT] = {{0}};
#pragma omp target enter data map(to : count[0 : SLOTS], cc[0 : nch])
#pragma omp target /* warm-up: start-up costs not counted */
    {
    }
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < NT; i++) {
            double r[NS] = {spawn(threads[i], n), single(threads[i], n, count),
                            chains(threads[i], n, cc), loop(threads[i], n, cc)};
            for (int s = 0; s < NS; s++)
                if (r[s] > best[s][i])
                    best[s][i] = r[s];
        }
#pragma omp target exit data map(from : count[0 : SLOTS], cc[0 : nch])
    long total = 0;
    for (int s = 0; s < SLOTS; s++)
        total += count[s];
    if (total != n * reps * NT) /* single's tasks only */ {
        fprintf(stderr, "record-bench: %ld tasks counted, %ld created\n", total,
                n * reps * NT);
        return 1;
    }
    for (long c = 0; c < nch; c++)
        if (cc[c] != 2L * CHAIN * reps * NT) {
            fprintf(stderr, "record-bench: chain %ld counted %ld, created %ld\n", c,
                    cc[c], 2L * CHAIN * reps * NT);
            return 1;
        }
    free(cc);
    const char *name[NS] = {"spawn", "single", "chains", "loop"};
    for (int s = 0; s < NS; s++)
        for (int i = 0; i < NT; i++)
            printf("shape=%s threads=%d tasks_per_s=%.0f vs_1=%.2f\n", name[s],
                   threads[i], best[s][i], best[s][i] / best[s][0]);
    return 0;
}
