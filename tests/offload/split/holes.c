/* A split loop whose writes leave thousands of holes (docs/architecture.md,
 * "Loops split across workers"): a Jacobi sweep with collapse(2) over the
 * interior of a grid whose field is linear in most places, so that most
 * values it writes equal those already there, and the changed bytes of a
 * share come as thousands of short ranges, more than one reply holds
 * (about 16 a row, 200 rows a share on 3 workers).
 * The results must equal the host's, split or not; run with OMPC_INFO,
 * the test also checks that the sweeps were split. */
#include <stdio.h>
#include <stdlib.h>

enum { NX = 600, NY = 384, STEPS = 6 };

static double init(int i, int j)
{
    /* Linear with integer values (a fixed point of the sweep, to the bit)
     * but for a bump every 24th column: a row's changes are short runs
     * with long unchanged gaps between them. */
    return (double)i + 2.0 * j + (j % 24 == 12 ? 1.0 : 0.0);
}

static void sweep_host(double *dst, const double *src)
{
    for (int i = 1; i < NX - 1; i++)
        for (int j = 1; j < NY - 1; j++)
            dst[i * NY + j] = 0.25 * (src[(i - 1) * NY + j] + src[(i + 1) * NY + j] +
                                      src[i * NY + j - 1] + src[i * NY + j + 1]);
}

int main(void)
{
    double *a = malloc(sizeof(double) * NX * NY), *b = malloc(sizeof(double) * NX * NY);
    double *ra = malloc(sizeof(double) * NX * NY), *rb = malloc(sizeof(double) * NX * NY);
    if (!a || !b || !ra || !rb)
        return 2;
    for (int i = 0; i < NX; i++)
        for (int j = 0; j < NY; j++)
            a[i * NY + j] = b[i * NY + j] = ra[i * NY + j] = rb[i * NY + j] = init(i, j);
#pragma omp target data map(tofrom : a[:NX * NY], b[:NX * NY])
    for (int s = 0; s < STEPS; s++) {
        double *src = s % 2 ? b : a, *dst = s % 2 ? a : b;
#pragma omp target teams distribute parallel for collapse(2)
        for (int i = 1; i < NX - 1; i++)
            for (int j = 1; j < NY - 1; j++)
                dst[i * NY + j] = 0.25 * (src[(i - 1) * NY + j] + src[(i + 1) * NY + j] +
                                          src[i * NY + j - 1] + src[i * NY + j + 1]);
    }
    for (int s = 0; s < STEPS; s++)
        sweep_host(s % 2 ? ra : rb, s % 2 ? rb : ra);
    long bad = 0;
    for (long k = 0; k < (long)NX * NY; k++)
        if (a[k] != ra[k] || b[k] != rb[k]) {
            if (++bad <= 5)
                fprintf(stderr, "FAIL: element %ld: %g %g, want %g %g\n", k, a[k], b[k],
                        ra[k], rb[k]);
        }
    printf("holes %s\n", bad ? "FAILED" : "OK");
    return bad != 0;
}
