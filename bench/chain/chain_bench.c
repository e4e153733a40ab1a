/* A time-stepping loop as applications write it: a chain of `target
 * nowait` kernels over the same small arrays, each depending on the
 * previous one through depend(inout:), with the arrays mapped in every step
 * (present already: only their reference counts move).  Prints the
 * chain's wall time and checks the result against the same steps on the
 * host.
 *   chain-bench [steps [elements]]   (default 10000 steps, 512 elements) */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 10000;
    long n = argc > 2 ? atol(argv[2]) : 512;
    if (steps < 1 || n < 1) {
        fprintf(stderr, "usage: chain-bench [steps [elements]]\n");
        return 2;
    }
    double *u = malloc((size_t)n * sizeof(double));
    double *f = malloc((size_t)n * sizeof(double));
    double *want = malloc((size_t)n * sizeof(double));
    if (!u || !f || !want)
        return 1;
    for (long i = 0; i < n; i++) {
        u[i] = want[i] = (double)(i % 7);
        f[i] = 1.0 / (double)(i + 1);
    }
    const double dt = 0.25;
#pragma omp target enter data map(to : u[0 : n], f[0 : n])
    double t0 = omp_get_wtime();
    for (long s = 0; s < steps; s++) {
        /* step s: u = u + dt * (f - u), with s in the arithmetic so that a
         * lost or repeated step changes the result. */
        double k = dt * (double)(s % 3 + 1) / 3.0;
#pragma omp target teams distribute parallel for map(tofrom : u[0 : n])                  \
    map(to : f[0 : n]) firstprivate(k) depend(inout : u[0]) nowait
        for (long i = 0; i < n; i++)
            u[i] += k * (f[i] - u[i]);
    }
#pragma omp taskwait
    double t1 = omp_get_wtime();
#pragma omp target exit data map(from : u[0 : n]) map(release : f[0 : n])
    for (long s = 0; s < steps; s++) {
        double k = dt * (double)(s % 3 + 1) / 3.0;
        for (long i = 0; i < n; i++)
            want[i] += k * (f[i] - want[i]);
    }
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += fabs(u[i] - want[i]) > 1e-12 * (1.0 + fabs(want[i]));
    printf("chain_s=%.4f steps=%ld elements=%ld us_per_kernel=%.2f %s\n", t1 - t0, steps,
           n, 1e6 * (t1 - t0) / (double)steps, bad ? "WRONG" : "ok");
    free(u);
    free(f);
    free(want);
    return bad ? 1 : 0;
}
