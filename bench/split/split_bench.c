/* Loops split across workers: a STREAM-style triad and a 2D Jacobi
 * stencil as synchronous `target teams distribute parallel for` kernels
 * over data kept on the device, the same source for every runtime (ompc
 * with or without OMPC_SPLIT, LLVM's stock libomptarget).
 *
 *   split-bench triad N REPS      a = b + s*c over N doubles
 *   split-bench stencil N REPS    N x N grid, one step = two kernels
 *
 * The first pass is not timed.  Prints "<kernel> median_ms=<x> best_ms=<y>"
 * (per pass) and "checked <value>": the result is compared with the same
 * computation on the host. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int reps)
{
    qsort(t + 1, (size_t)(reps - 1), sizeof(double), cmp);
    printf("%s median_ms=%.3f best_ms=%.3f\n", what, 1e3 * t[1 + (reps - 1) / 2],
           1e3 * t[1]);
}

static int triad(long n, int reps)
{
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    double *c = malloc(n * sizeof(double)), *t = malloc(reps * sizeof(double));
    if (!a || !b || !c || !t)
        return 2;
    for (long i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = (double)(i % 100);
        c[i] = (double)(i % 7);
    }
    const double s = 0.5;
#pragma omp target data map(to : b[0 : n], c[0 : n]) map(from : a[0 : n])
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for
        for (long i = 0; i < n; i++)
            a[i] = b[i] + s * c[i] + (double)r;
        t[r] = omp_get_wtime() - t0;
    }
    for (long i = 0; i < n; i++)
        if (a[i] != (double)(i % 100) + s * (double)(i % 7) + (double)(reps - 1)) {
            fprintf(stderr, "triad: a[%ld] = %g\n", i, a[i]);
            return 1;
        }
    report("triad", t, reps);
    printf("checked %g\n", a[n - 1]);
    free(a);
    free(b);
    free(c);
    free(t);
    return 0;
}

static int stencil(long n, int reps)
{
    double *u = malloc(n * n * sizeof(double)), *v = malloc(n * n * sizeof(double));
    double *t = malloc(reps * sizeof(double));
    if (!u || !v || !t)
        return 2;
    for (long i = 0; i < n * n; i++)
        u[i] = v[i] = (i < n || i % n == 0) ? 1.0 : 0.0;
#pragma omp target data map(tofrom : u[0 : n * n]) map(to : v[0 : n * n])
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++)
                v[i * n + j] = 0.25 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] +
                                       u[i * n + j - 1] + u[i * n + j + 1]);
#pragma omp target teams distribute parallel for
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++)
                u[i * n + j] = v[i * n + j];
        t[r] = omp_get_wtime() - t0;
    }
    /* The same steps on the host. */
    double *hu = malloc(n * n * sizeof(double)), *hv = malloc(n * n * sizeof(double));
    if (!hu || !hv)
        return 2;
    for (long i = 0; i < n * n; i++)
        hu[i] = hv[i] = (i < n || i % n == 0) ? 1.0 : 0.0;
    for (int r = 0; r < reps; r++) {
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++)
                hv[i * n + j] = 0.25 * (hu[(i - 1) * n + j] + hu[(i + 1) * n + j] +
                                        hu[i * n + j - 1] + hu[i * n + j + 1]);
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++)
                hu[i * n + j] = hv[i * n + j];
    }
    double sum = 0.0;
    for (long i = 0; i < n * n; i++) {
        if (u[i] != hu[i]) {
            fprintf(stderr, "stencil: u[%ld] = %.17g, want %.17g\n", i, u[i], hu[i]);
            return 1;
        }
        sum += u[i];
    }
    report("stencil", t, reps);
    printf("checked %.6f\n", sum);
    free(u);
    free(v);
    free(hu);
    free(hv);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s triad|stencil N REPS\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    int reps = atoi(argv[3]);
    if (n < 3 || reps < 2)
        return 2;
    return !strcmp(argv[1], "triad") ? triad(n, reps) : stencil(n, reps);
}
