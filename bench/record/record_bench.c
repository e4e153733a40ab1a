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
 * and, with 1 thread, thread_cpu_ns=<c>: the CPU time of the one thread
 * that creates and records the tasks, per task (least of the rounds),
 * from the first task created to the end of the taskwait.  Unlike the
 * rate, it does not grow while the thread waits for a CPU, so it shows
 * the recording path's cost on a machine that is shared.
 * Checks that every task of `single`, `chains` and `loop` ran (counters
 * per slot and per chain, mapped once and copied back at the end) and
 * exits 1 otherwise.
 *
 *   record-bench-ompc [tasks [reps [maxthreads]]]   (default 20000, 5, 4)
 *
 * maxthreads 1 or 2 runs only the thread counts up to it (the 1-thread
 * recording path measured alone). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SLOTS 64
#define CHAIN 8
#define NT 3
#define NS 4

static const int threads[NT] = {1, 2, 4};

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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
    int maxt = argc > 3 ? atoi(argv[3]) : threads[NT - 1];
    int nt = 0;
    while (nt < NT && threads[nt] <= maxt)
        nt++;
    if (n < 16 || reps < 1 || nt == 0) {
        fprintf(stderr,
                "usage: record-bench-ompc [tasks >= 16 [reps >= 1 [maxthreads >= 1]]]\n");
        return 2;
    }
    long count[SLOTS] = {0};
    long nch = n / CHAIN;
    long *cc = calloc((size_t)nch, sizeof(long));
    if (!cc)
        return 2;
    double best[NS][NT] = {{0}};
    double cpu1[NS] = {0}; /* CPU s per task, 1 thread: least of the rounds */
    const long ntasks[NS] = {n, n, nch * CHAIN, nch * CHAIN};
#pragma omp target enter data map(to : count[0 : SLOTS], cc[0 : nch])
#pragma omp target /* warm-up: start-up costs not counted */
    {
    }
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < nt; i++)
            for (int s = 0; s < NS; s++) {
                int t = threads[i];
                double c0 = thread_cpu(), rate;
                switch (s) {
                case 0: rate = spawn(t, n); break;
                case 1: rate = single(t, n, count); break;
                case 2: rate = chains(t, n, cc); break;
                default: rate = loop(t, n, cc); break;
                }
                double c = (thread_cpu() - c0) / (double)ntasks[s];
                if (rate > best[s][i])
                    best[s][i] = rate;
                if (t == 1 && (cpu1[s] == 0 || c < cpu1[s]))
                    cpu1[s] = c;
            }
#pragma omp target exit data map(from : count[0 : SLOTS], cc[0 : nch])
    long total = 0;
    for (int s = 0; s < SLOTS; s++)
        total += count[s];
    if (total != n * reps * nt) /* single's tasks only */ {
        fprintf(stderr, "record-bench: %ld tasks counted, %ld created\n", total,
                n * reps * nt);
        return 1;
    }
    for (long c = 0; c < nch; c++)
        if (cc[c] != 2L * CHAIN * reps * nt) {
            fprintf(stderr, "record-bench: chain %ld counted %ld, created %ld\n", c,
                    cc[c], 2L * CHAIN * reps * nt);
            return 1;
        }
    free(cc);
    const char *name[NS] = {"spawn", "single", "chains", "loop"};
    for (int s = 0; s < NS; s++)
        for (int i = 0; i < nt; i++) {
            printf("shape=%s threads=%d tasks_per_s=%.0f vs_1=%.2f", name[s], threads[i],
                   best[s][i], best[s][i] / best[s][0]);
            if (threads[i] == 1)
                printf(" thread_cpu_ns=%.0f", cpu1[s] * 1e9);
            printf("\n");
        }
    return 0;
}
