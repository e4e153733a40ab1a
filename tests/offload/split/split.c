/* Loops split across workers (docs/architecture.md, "Loops split across
 * workers"): `target teams distribute parallel for` kernels whose results
 * must equal a serial computation on the host, split or not.
 *
 * Mode (argv[1], else the environment variable SPLIT_MODE):
 *   stream   STREAM's copy, scale, add and triad, a kernel reading bytes
 *            another share wrote in the kernel before (the merged copy
 *            must be the one it gets), num_teams(7), dist_schedule(static,
 *            4096) and a 64-bit loop; team numbers are checked against the
 *            iterations each team ran
 *   stencil  a 2D Jacobi stencil, two kernels per step for 40 steps, data
 *            kept on the device in between (each share reads its
 *            neighbours' rows of the step before)
 *   sparse   every 64th element written: each share changes a thousand
 *            separate 8-byte ranges, which travel packed to the home
 *   outside  an atomic histogram: every share writes the same counters, so
 *            the kernel must run unsplit, twice, with the right counts
 *   auto     for OMPC_SPLIT=auto: a compute-bound kernel over a small array
 *            (the model predicts a gain: split) and a copy of 64 MiB
 *            (auto_copy: the moves, twins and first page faults cost more
 *            than the copy: whole), each run 12 times, the results checked
 *            every time
 *   sized    shares sized by measured speed: compute-bound kernels, one
 *            without num_teams (its shares differ in iterations) and one
 *            with num_teams(64) (in teams), each run 8 times, results and
 *            team numbers checked every time (run with one worker slowed,
 *            OMPC_TEST_SPLIT_SLOW)
 *   reduce   a sum across teams from 5: every share would count the 5, so
 *            the kernel runs unsplit, with the right sum (reduce.c has the
 *            reductions that split)
 *
 * SPLIT_TEAMS (environment) is the number of teams a kernel without
 * num_teams must see: the number of shares when split (1 otherwise, as
 * LLVM's host runtime makes). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                         \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            if (++fails > 20)                                                            \
                exit(1);                                                                 \
        }                                                                                \
    } while (0)

/* Team numbers per iteration: every team of nt present, in order, each a
 * contiguous block (the static distribute schedule). */
static void check_teams(const char *what, const int *t, const int *nt, long n, int want)
{
    CHECK(nt[0] >= 1, "%s: %d teams", what, nt[0]);
    if (want > 0)
        CHECK(nt[0] == want, "%s: %d teams, want %d", what, nt[0], want);
    CHECK(t[0] == 0, "%s: first iteration in team %d", what, t[0]);
    CHECK(t[n - 1] == nt[0] - 1 || n < nt[0], "%s: last iteration in team %d of %d", what,
          t[n - 1], nt[0]);
    for (long i = 1; i < n; i++) {
        if (nt[i] != nt[0] || t[i] < t[i - 1] || t[i] > t[i - 1] + 1) {
            CHECK(0, "%s: iteration %ld in team %d of %d after team %d", what, i, t[i],
                  nt[i], t[i - 1]);
            break;
        }
    }
}

static void stream(int teams)
{
    const long n = 1000003; /* shares of unequal sizes */
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    double *c = malloc(n * sizeof(double)), *d = malloc(n * sizeof(double));
    int *t = malloc(n * sizeof(int)), *nt = malloc(n * sizeof(int));
    if (!a || !b || !c || !d || !t || !nt)
        exit(2);
    for (long i = 0; i < n; i++) {
        a[i] = (double)(i % 1000);
        b[i] = 0.5 * (double)(i % 77);
        c[i] = -1.0;
    }
    const double q = 3.0;
    /* copy */
#pragma omp target teams distribute parallel for map(to : a[0 : n]) map(from : c[0 : n])
    for (long i = 0; i < n; i++)
        c[i] = a[i];
    for (long i = 0; i < n; i++)
        if (c[i] != a[i]) {
            CHECK(0, "copy: c[%ld] = %g, want %g", i, c[i], a[i]);
            break;
        }
    /* scale */
#pragma omp target teams distribute parallel for map(to : c[0 : n]) map(from : b[0 : n])
    for (long i = 0; i < n; i++)
        b[i] = q * c[i];
    for (long i = 0; i < n; i++)
        if (b[i] != q * a[i]) {
            CHECK(0, "scale: b[%ld] = %g, want %g", i, b[i], q * a[i]);
            break;
        }
    /* add */
#pragma omp target teams distribute parallel for map(to : a[0 : n], b[0 : n])             \
    map(from : c[0 : n])
    for (long i = 0; i < n; i++)
        c[i] = a[i] + b[i];
    for (long i = 0; i < n; i++)
        if (c[i] != a[i] + b[i]) {
            CHECK(0, "add: c[%ld] = %g, want %g", i, c[i], a[i] + b[i]);
            break;
        }
    /* triad, with the team of each iteration */
    int ni = (int)n;
#pragma omp target teams distribute parallel for map(to : b[0 : ni], c[0 : ni])           \
    map(from : a[0 : ni], t[0 : ni], nt[0 : ni])
    for (int i = 0; i < ni; i++) {
        a[i] = b[i] + q * c[i];
        t[i] = omp_get_team_num();
        nt[i] = omp_get_num_teams();
    }
    for (long i = 0; i < n; i++)
        if (a[i] != b[i] + q * c[i]) {
            CHECK(0, "triad: a[%ld] = %g, want %g", i, a[i], b[i] + q * c[i]);
            break;
        }
    check_teams("triad", t, nt, n, teams);
    /* Data kept on the device: the second kernel reads the first one's
     * results from the other end of the array (another share's). */
    double *e = malloc(n * sizeof(double));
    if (!e)
        exit(2);
#pragma omp target data map(to : a[0 : n]) map(from : d[0 : n], e[0 : n])
    {
#pragma omp target teams distribute parallel for
        for (long i = 0; i < n; i++)
            d[i] = 2.0 * a[i] + 1.0;
#pragma omp target teams distribute parallel for
        for (long i = 0; i < n; i++)
            e[i] = d[i] + 0.25 * d[n - 1 - i] + (double)(i % 3);
    }
    for (long i = 0; i < n; i++) {
        double want = 2.0 * a[i] + 1.0 + 0.25 * (2.0 * a[n - 1 - i] + 1.0) + (double)(i % 3);
        if (d[i] != 2.0 * a[i] + 1.0 || e[i] != want) {
            CHECK(0, "kept data: d[%ld] = %g, e = %g, want %g", i, d[i], e[i], want);
            break;
        }
    }
    free(e);
    /* num_teams(7): seven teams, contiguous blocks of iterations. */
#pragma omp target teams distribute parallel for num_teams(7) map(from : t[0 : ni], nt[0 : ni])
    for (int i = 0; i < ni; i++) {
        t[i] = omp_get_team_num();
        nt[i] = omp_get_num_teams();
    }
    CHECK(nt[0] <= 7, "num_teams(7): %d teams", nt[0]);
    check_teams("num_teams(7)", t, nt, n, teams > 1 ? 7 : 0);
    /* dist_schedule(static, 4096): chunks of 4096 dealt to the teams in turn. */
#pragma omp target teams distribute parallel for dist_schedule(static, 4096)                \
    map(from : t[0 : ni], nt[0 : ni], c[0 : ni])
    for (int i = 0; i < ni; i++) {
        t[i] = omp_get_team_num();
        nt[i] = omp_get_num_teams();
        c[i] = (double)i * 0.5;
    }
    for (long i = 0; i < n; i++)
        if (t[i] != (int)((i / 4096) % nt[0]) || c[i] != (double)i * 0.5) {
            CHECK(0, "dist_schedule(static, 4096): iteration %ld in team %d of %d, c %g", i,
                  t[i], nt[0], c[i]);
            break;
        }
    if (teams > 0)
        CHECK(nt[0] == teams, "dist_schedule: %d teams, want %d", nt[0], teams);
    /* A 64-bit unsigned loop (the _8u entry point). */
    unsigned long un = (unsigned long)n;
#pragma omp target teams distribute parallel for map(from : c[0 : n])
    for (unsigned long i = 0; i < un; i++)
        c[i] = (double)(i * 3);
    for (long i = 0; i < n; i++)
        if (c[i] != (double)(i * 3)) {
            CHECK(0, "unsigned: c[%ld] = %g", i, c[i]);
            break;
        }
    free(a);
    free(b);
    free(c);
    free(d);
    free(t);
    free(nt);
}

#define NY 300
#define NX 257
#define STEPS 40

static void jacobi_host(double *u, double *v)
{
    for (int s = 0; s < STEPS; s++) {
        for (int i = 1; i < NY - 1; i++)
            for (int j = 1; j < NX - 1; j++)
                v[i * NX + j] = 0.25 * (u[(i - 1) * NX + j] + u[(i + 1) * NX + j] +
                                        u[i * NX + j - 1] + u[i * NX + j + 1]);
        for (int i = 1; i < NY - 1; i++)
            for (int j = 1; j < NX - 1; j++)
                u[i * NX + j] = v[i * NX + j];
    }
}

static void stencil(void)
{
    double *u = calloc(NY * NX, sizeof(double)), *v = calloc(NY * NX, sizeof(double));
    double *ru = calloc(NY * NX, sizeof(double)), *rv = calloc(NY * NX, sizeof(double));
    if (!u || !v || !ru || !rv)
        exit(2);
    for (int i = 0; i < NY; i++)
        for (int j = 0; j < NX; j++) {
            double x = (i == 0 || j == 0) ? 100.0 + i - j : (i * 7 + j * 13) % 17;
            u[i * NX + j] = ru[i * NX + j] = x;
            v[i * NX + j] = rv[i * NX + j] = x;
        }
    jacobi_host(ru, rv);
#pragma omp target data map(tofrom : u[0 : NY * NX]) map(to : v[0 : NY * NX])
    for (int s = 0; s < STEPS; s++) {
#pragma omp target teams distribute parallel for collapse(2)
        for (int i = 1; i < NY - 1; i++)
            for (int j = 1; j < NX - 1; j++)
                v[i * NX + j] = 0.25 * (u[(i - 1) * NX + j] + u[(i + 1) * NX + j] +
                                        u[i * NX + j - 1] + u[i * NX + j + 1]);
#pragma omp target teams distribute parallel for
        for (int i = 1; i < NY - 1; i++)
            for (int j = 1; j < NX - 1; j++)
                u[i * NX + j] = v[i * NX + j];
    }
    for (int i = 0; i < NY * NX; i++)
        if (u[i] != ru[i]) {
            CHECK(0, "stencil: u[%d][%d] = %.17g, want %.17g", i / NX, i % NX, u[i], ru[i]);
            break;
        }
    free(u);
    free(v);
    free(ru);
    free(rv);
}

static void sparse(void)
{
    const int n = 150000;
    double *c = malloc(n * sizeof(double));
    if (!c)
        exit(2);
    for (int i = 0; i < n; i++)
        c[i] = -(double)i;
    for (int round = 0; round < 2; round++) {
#pragma omp target teams distribute parallel for map(tofrom : c[0 : n])
        for (int i = 0; i < n; i++)
            if (i % 64 == 0)
                c[i] = 2.0 * i + round;
        for (int i = 0; i < n; i++) {
            double want = i % 64 == 0 ? 2.0 * i + round : -(double)i;
            if (c[i] != want) {
                CHECK(0, "sparse round %d: c[%d] = %g, want %g", round, i, c[i], want);
                break;
            }
        }
    }
    free(c);
}

static void outside(void)
{
    const int n = 200000, bins = 8;
    int *c = malloc(n * sizeof(int));
    long hist[8];
    int nt = 0;
    for (int round = 0; round < 2; round++) {
        memset(hist, 0, sizeof(hist));
#pragma omp target teams distribute parallel for map(tofrom : hist[0 : bins], nt)        \
    map(from : c[0 : n])
        for (int i = 0; i < n; i++) {
            c[i] = 3 * i;
#pragma omp atomic
            hist[i % bins] += 1 + (i & 1);
            if (i == 0)
                nt = omp_get_num_teams();
        }
        for (int k = 0; k < bins; k++) {
            long want = (long)(n / bins) * (1 + (k & 1));
            CHECK(hist[k] == want, "outside round %d: hist[%d] = %ld, want %ld", round, k,
                  hist[k], want);
        }
        for (int i = 0; i < n; i++)
            if (c[i] != 3 * i) {
                CHECK(0, "outside round %d: c[%d] = %d", round, i, c[i]);
                break;
            }
        /* The merge would be unsound: the kernel ran unsplit. */
        CHECK(nt == 1, "outside round %d: ran as %d teams", round, nt);
    }
    free(c);
}

static void reduce(void)
{
    const int n = 300000;
    long s = 5;
#pragma omp target teams distribute parallel for reduction(+ : s) map(tofrom : s)
    for (int i = 0; i < n; i++)
        s += i % 1000;
    long want = 5;
    for (int i = 0; i < n; i++)
        want += i % 1000;
    CHECK(s == want, "reduce: %ld, want %ld", s, want);
}

/* A hash of x, steps long, the same on the host and the device. */
#pragma omp declare target
static long spin(long x, int steps)
{
    unsigned long h = (unsigned long)x;
    for (int k = 0; k < steps; k++)
        h = h * 6364136223846793005ul + 1442695040888963407ul + (unsigned long)(k & 7);
    return (long)(h >> 1);
}
#pragma omp end declare target

/* The 64 MiB copy of auto_mode, in a function of its own so that its
 * kernel's name tells it apart in OMPC_INFO's lines. */
static void auto_copy(double *a, const double *b, long m, int r)
{
#pragma omp target teams distribute parallel for num_teams(8)
    for (long i = 0; i < m; i++)
        a[i] = b[i] + r;
}

static void auto_mode(void)
{
    const int n = 2048, steps = 100000;
    const long m = 4L << 20;
    long *x = malloc(n * sizeof(long));
    double *a = malloc(m * sizeof(double)), *b = malloc(m * sizeof(double));
    if (!x || !a || !b)
        exit(2);
    for (long i = 0; i < m; i++)
        b[i] = (double)(i % 1000);
#pragma omp target data map(alloc : x[0 : n]) map(to : b[0 : m]) map(alloc : a[0 : m])
    /* Rounds enough for auto to predict again after a split that did not
     * gain has made it wait (the back-off's first length, 8 launches). */
    for (int r = 0; r < 12; r++) {
#pragma omp target teams distribute parallel for num_teams(8)
        for (int i = 0; i < n; i++)
            x[i] = spin(i + r, steps);
        auto_copy(a, b, m, r);
#pragma omp target update from(x[0 : n], a[m - 3 : 3])
        for (int i = 0; i < n; i += 97)
            if (x[i] != spin(i + r, steps)) {
                CHECK(0, "auto round %d: x[%d] = %ld", r, i, x[i]);
                break;
            }
        CHECK(a[m - 1] == (double)((m - 1) % 1000) + r, "auto round %d: a[m-1] = %g", r,
              a[m - 1]);
    }
    free(x);
    free(a);
    free(b);
}

/* Shares sized by the workers' measured speeds: the same results and a
 * consistent league, whatever the sizes. */
static void sized(void)
{
    const int n = 4096, steps = 20000;
    long *x = malloc(n * sizeof(long)), *y = malloc(n * sizeof(long));
    int *t = malloc(n * sizeof(int)), *nt = malloc(n * sizeof(int));
    if (!x || !y || !t || !nt)
        exit(2);
#pragma omp target data map(alloc : x[0 : n], y[0 : n], t[0 : n], nt[0 : n])
    for (int r = 0; r < 8; r++) {
#pragma omp target teams distribute parallel for
        for (int i = 0; i < n; i++) {
            x[i] = spin(i + r, steps);
            t[i] = omp_get_team_num();
            nt[i] = omp_get_num_teams();
        }
#pragma omp target update from(x[0 : n], t[0 : n], nt[0 : n])
        check_teams("sized iterations", t, nt, n, 0);
        for (int i = 0; i < n; i += 31)
            if (x[i] != spin(i + r, steps)) {
                CHECK(0, "sized round %d: x[%d] = %ld", r, i, x[i]);
                break;
            }
#pragma omp target teams distribute parallel for num_teams(64)
        for (int i = 0; i < n; i++) {
            y[i] = spin(2 * i + r, steps);
            t[i] = omp_get_team_num();
            nt[i] = omp_get_num_teams();
        }
#pragma omp target update from(y[0 : n], t[0 : n], nt[0 : n])
        check_teams("sized teams", t, nt, n, 0);
        for (int i = 0; i < n; i += 31)
            if (y[i] != spin(2 * i + r, steps)) {
                CHECK(0, "sized round %d: y[%d] = %ld", r, i, y[i]);
                break;
            }
    }
    free(x);
    free(y);
    free(t);
    free(nt);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : getenv("SPLIT_MODE");
    const char *te = getenv("SPLIT_TEAMS");
    int teams = te ? atoi(te) : 0;
    if (!mode) {
        fprintf(stderr, "usage: %s stream|stencil|sparse|outside|reduce|auto|sized\n", argv[0]);
        return 2;
    }
    if (!strcmp(mode, "stream"))
        stream(teams);
    else if (!strcmp(mode, "stencil"))
        stencil();
    else if (!strcmp(mode, "sparse"))
        sparse();
    else if (!strcmp(mode, "outside"))
        outside();
    else if (!strcmp(mode, "reduce"))
        reduce();
    else if (!strcmp(mode, "auto"))
        auto_mode();
    else if (!strcmp(mode, "sized"))
        sized();
    else
        return 2;
    if (fails)
        return 1;
    printf("split %s: ok\n", mode);
    return 0;
}
