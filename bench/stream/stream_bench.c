/* STREAM-style memory bandwidth of synchronous kernels over arrays kept on
 * the device, the same source for every runtime.
 *
 *   stream-bench [N [REPS]]     N doubles per array (default 1M: 8 MB),
 *                               REPS passes (default 30)
 *
 * The three arrays are mapped once with `target enter data`; each pass runs
 * copy (c = a), scale (b = s*c), add (c = a + b), triad (a = b + s*c) and
 * dot (sum a*b), each a synchronous `target teams distribute parallel for`.
 * Bytes counted per kernel are STREAM's: 2 arrays for copy, scale and dot,
 * 3 for add and triad.  The first pass is not timed (it may move the
 * arrays to the device and measure the kernels).
 *
 * Every value is checked: the arrays stay uniform, so each pass's dot is
 * known exactly (up to rounding) from the scalar recurrence, and the final
 * arrays are read back and compared element by element.
 *
 * Prints one line per kernel: "<name> best_gbs=<x> median_gbs=<y>" (GB/s
 * = 1e9 bytes), then "checked dot=<value> reps=<n>".  With STREAM_MARK set,
 * each pass writes "stream-mark pass <k>" to stderr before its kernels, so a
 * runtime's per-task log can be cut into passes. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKERNELS 5
static const char *const names[NKERNELS] = {"copy", "scale", "add", "triad", "dot"};
static const int arrays_moved[NKERNELS] = {2, 2, 3, 3, 2};
/* STREAM's 3 makes the values grow 15-fold per pass (overflow after ~130
 * passes); with 0.4 they shrink 4% per pass, fine for any useful REPS. */
static const double scalar = 0.4;

/* One function per kernel: its name is part of the offload entry's name,
 * so a runtime's log says which kernel ran where. */
static void stream_copy(double *a, double *c, long n)
{
#pragma omp target teams distribute parallel for map(tofrom : a[0 : n], c[0 : n])
    for (long j = 0; j < n; j++)
        c[j] = a[j];
}

static void stream_scale(double *b, double *c, long n)
{
#pragma omp target teams distribute parallel for map(tofrom : b[0 : n], c[0 : n])
    for (long j = 0; j < n; j++)
        b[j] = scalar * c[j];
}

static void stream_add(double *a, double *b, double *c, long n)
{
#pragma omp target teams distribute parallel for map(tofrom : a[0 : n], b[0 : n],        \
                                                         c[0 : n])
    for (long j = 0; j < n; j++)
        c[j] = a[j] + b[j];
}

static void stream_triad(double *a, double *b, double *c, long n)
{
#pragma omp target teams distribute parallel for map(tofrom : a[0 : n], b[0 : n],        \
                                                         c[0 : n])
    for (long j = 0; j < n; j++)
        a[j] = b[j] + scalar * c[j];
}

static double stream_dot(double *a, double *b, long n)
{
    double sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum)                      \
    map(tofrom : a[0 : n], b[0 : n]) map(tofrom : sum)
    for (long j = 0; j < n; j++)
        sum += a[j] * b[j];
    return sum;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Elements go through the same operations as the host's recurrence; the
 * dot adds N rounded terms in an order the runtime chooses. */
static int check_close(const char *what, double got, double want, double tol, int pass)
{
    if (fabs(got - want) <= tol * fabs(want))
        return 0;
    fprintf(stderr, "stream-bench: pass %d: %s is %.17g, expected %.17g\n", pass, what,
            got, want);
    return 1;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1L << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 30;
    if (n < 1 || reps < 2) {
        fprintf(stderr, "usage: stream-bench [N >= 1 [REPS >= 2]]\n");
        return 2;
    }
    int mark = getenv("STREAM_MARK") != NULL;
    double *a = malloc((size_t)n * sizeof(double));
    double *b = malloc((size_t)n * sizeof(double));
    double *c = malloc((size_t)n * sizeof(double));
    double *times = malloc((size_t)NKERNELS * (size_t)reps * sizeof(double));
    if (!a || !b || !c || !times) {
        fprintf(stderr, "stream-bench: out of memory for %ld doubles\n", n);
        return 1;
    }
    for (long j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
    /* The value every element of each array holds, followed on the host. */
    double av = 1.0, bv = 2.0, cv = 0.0, dot = 0;
    int bad = 0;
#pragma omp target enter data map(to : a[0 : n], b[0 : n], c[0 : n])
    for (int k = 0; k < reps && !bad; k++) {
        if (mark)
            fprintf(stderr, "stream-mark pass %d\n", k);
        double t[NKERNELS + 1];
        t[0] = omp_get_wtime();
        stream_copy(a, c, n);
        t[1] = omp_get_wtime();
        stream_scale(b, c, n);
        t[2] = omp_get_wtime();
        stream_add(a, b, c, n);
        t[3] = omp_get_wtime();
        stream_triad(a, b, c, n);
        t[4] = omp_get_wtime();
        dot = stream_dot(a, b, n);
        t[5] = omp_get_wtime();
        for (int i = 0; i < NKERNELS; i++)
            times[(size_t)i * (size_t)reps + (size_t)k] = t[i + 1] - t[i];
        cv = av;
        bv = scalar * cv;
        cv = av + bv;
        av = bv + scalar * cv;
        bad |= check_close("dot", dot, (double)n * av * bv, 1e-9, k);
    }
#pragma omp target exit data map(from : a[0 : n], b[0 : n], c[0 : n])
    for (long j = 0; j < n && !bad; j++) {
        bad |= check_close("a[j]", a[j], av, 1e-12, reps);
        bad |= check_close("b[j]", b[j], bv, 1e-12, reps);
        bad |= check_close("c[j]", c[j], cv, 1e-12, reps);
        if (bad)
            fprintf(stderr, "stream-bench: (element %ld)\n", j);
    }
    if (bad)
        return 1;
    for (int i = 0; i < NKERNELS; i++) {
        double *row = times + (size_t)i * (size_t)reps + 1; /* pass 0 untimed */
        qsort(row, (size_t)reps - 1, sizeof(double), cmp_double);
        double bytes = (double)arrays_moved[i] * (double)n * sizeof(double);
        double med = (reps - 1) % 2
                         ? row[(reps - 1) / 2]
                         : 0.5 * (row[(reps - 1) / 2 - 1] + row[(reps - 1) / 2]);
        printf("%s best_gbs=%.3f median_gbs=%.3f\n", names[i], bytes / row[0] * 1e-9,
               bytes / med * 1e-9);
    }
    printf("checked dot=%.6e reps=%d\n", dot, reps);
    free(a);
    free(b);
    free(c);
    free(times);
    return 0;
}
