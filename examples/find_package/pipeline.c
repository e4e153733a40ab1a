/*
 * pipeline.c - a small OpenMP offloading program built against an installed
 * ompc with find_package(ompc) (CMakeLists.txt beside it).
 *
 * Three target tasks form a diamond through their depend clauses: one
 * produces a, two consumers derive b and c from it (they may run on two
 * different workers, with a forwarded from the producer's worker), and a
 * last task reduces b and c.  The head prints the ompc version, the number
 * of workers (ompc.h) and whether the sum matches the host's.
 *
 *   mpiexec -n 3 ./pipeline    # rank 0 runs main, ranks 1-2 the target tasks
 */
#include <ompc.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define N 100000

static int64_t a[N], b[N], c[N];

int main(void)
{
    int64_t sum = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp target nowait map(from : a) depend(out : a)
        for (int64_t i = 0; i < N; i++)
            a[i] = i;
#pragma omp target nowait map(to : a) map(from : b) depend(in : a) depend(out : b)
        for (int64_t i = 0; i < N; i++)
            b[i] = 3 * a[i] + 1;
#pragma omp target nowait map(to : a) map(from : c) depend(in : a) depend(out : c)
        for (int64_t i = 0; i < N; i++)
            c[i] = a[i] * a[i] % 7;
#pragma omp target nowait map(to : b, c) map(tofrom : sum) depend(in : b, c)             \
    depend(out : sum)
        for (int64_t i = 0; i < N; i++)
            sum += b[i] - c[i];
#pragma omp taskwait
    }

    int64_t expect = 0;
    for (int64_t i = 0; i < N; i++)
        expect += (3 * i + 1) - i * i % 7;
    int ok = sum == expect && a[N - 1] == N - 1;
    printf("ompc %s: rank %d, workers=%d\n", ompc_version(), ompc_get_rank(),
           ompc_get_num_workers());
    printf("sum=%" PRId64 " expected=%" PRId64 " result=%s\n", sum, expect,
           ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
