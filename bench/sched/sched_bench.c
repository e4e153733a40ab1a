/* Makespan of two task graphs under the current OMPC_SCHEDULER (the
 * ompc-sched-bench script runs this once per policy and prints ratios).
 *
 *   stencil: W columns x T steps; task (t, p) reads columns p-1, p, p+1 of
 *            step t-1 and writes column p of step t (double-buffered, one
 *            buffer of B bytes per column).  Placement decides how much data
 *            crosses workers.
 *   fan:     R rounds of one producer -> F consumers of three kinds (short,
 *            medium and long kernels, in a fixed mixed order) -> one
 *            reducer.  Placement decides load balance; HEFT learns the three
 *            kernels' costs in the first round.
 *
 * Work in a kernel is a wait of a known length (nanosleep) plus touching
 * the data: the machine running the benchmark may have fewer cores than
 * workers, and waiting keeps the comparison about placement, not about
 * processes fighting for cores.  Results are checked.
 *
 *   sched_bench [stencil|fan|both] [scale]   (scale multiplies work times) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#pragma omp declare target
static void work_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}
#pragma omp end declare target

#define W 7
#define T 12 /* steps */
#define B (1u << 18) /* doubles per column: 2 MiB */
#define SYNC 3       /* steps between taskwaits (a time loop's output) */

static double *col[2][W];

static double stencil(double scale)
{
    long us = (long)(10000 * scale);
    for (int s = 0; s < 2; s++)
        for (int p = 0; p < W; p++) {
            col[s][p] = malloc(B * sizeof(double));
            for (size_t i = 0; i < B; i++)
                col[s][p][i] = s == 0 ? p : 0;
        }
    double t0 = 0, el = 0;
#pragma omp parallel
#pragma omp single
    {
        for (int s = 0; s < 2; s++)
            for (int p = 0; p < W; p++) {
                double *c = col[s][p];
#pragma omp target enter data map(to : c[0 : B]) nowait depend(out : c[0])
            }
#pragma omp taskwait
        t0 = omp_get_wtime();
        for (int t = 1; t <= T; t++) {
            int in = (t - 1) & 1, out = t & 1;
            for (int p = 0; p < W; p++) {
                double *l = col[in][p > 0 ? p - 1 : p], *m = col[in][p];
                double *r = col[in][p < W - 1 ? p + 1 : p], *o = col[out][p];
#pragma omp target nowait map(alloc : l[0 : B], m[0 : B], r[0 : B], o[0 : B])            \
    depend(in : l[0], m[0], r[0]) depend(out : o[0])
                {
                    work_us(us);
                    for (size_t i = 0; i < B; i += 4096)
                        o[i] = (l[i] + m[i] + r[i]) / 3.0;
                    o[1] = m[1] + 1;
                }
            }
            if (t % SYNC == 0) {
#pragma omp taskwait
            }
        }
#pragma omp taskwait
        el = omp_get_wtime() - t0;
        for (int s = 0; s < 2; s++)
            for (int p = 0; p < W; p++) {
                double *c = col[s][p];
#pragma omp target exit data map(from : c[0 : B]) nowait depend(inout : c[0])
            }
    }
    int bad = 0;
    for (int p = 0; p < W; p++)
        bad += col[T & 1][p][1] != p + T;
    for (int s = 0; s < 2; s++)
        for (int p = 0; p < W; p++)
            free(col[s][p]);
    if (bad) {
        fprintf(stderr, "sched_bench: stencil results are wrong\n");
        exit(1);
    }
    return el;
}

#define F 9
#define R 4
#define FB (1u << 18) /* doubles per consumer output: 2 MiB */

static double fan(double scale)
{
    static double src[FB], sum[R];
    double *part[F];
    for (int f = 0; f < F; f++)
        part[f] = calloc(FB, sizeof(double));
    double *p0 = part[0], *p1 = part[1], *p2 = part[2], *p3 = part[3], *p4 = part[4],
           *p5 = part[5], *p6 = part[6], *p7 = part[7], *p8 = part[8];
    double t0 = 0, el = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp target enter data map(alloc : src) nowait depend(out : src)
        for (int f = 0; f < F; f++) {
            double *o = part[f];
#pragma omp target enter data map(alloc : o[0 : FB]) nowait depend(out : o[0])
        }
#pragma omp taskwait
        t0 = omp_get_wtime();
        for (int r = 0; r < R; r++) {
#pragma omp target nowait map(alloc : src) depend(out : src)
            {
                for (size_t i = 0; i < FB; i++)
                    src[i] = r + 1;
            }
            for (int f = 0; f < F; f++) {
                double *o = part[f];
                /* long, short, medium, long, ...: round-robin and random
                 * placement do not see the difference. */
                switch (f % 3) {
                case 0:
#pragma omp target nowait map(alloc : src, o[0 : FB]) depend(in : src) depend(out : o[0])
                {
                    work_us((long)(24000 * scale));
                    for (size_t i = 0; i < FB; i += 512)
                        o[i] = src[i] * 3;
                } break;
                case 1:
#pragma omp target nowait map(alloc : src, o[0 : FB]) depend(in : src) depend(out : o[0])
                {
                    work_us((long)(3000 * scale));
                    for (size_t i = 0; i < FB; i += 512)
                        o[i] = src[i] * 3;
                } break;
                default:
#pragma omp target nowait map(alloc : src, o[0 : FB]) depend(in : src) depend(out : o[0])
                {
                    work_us((long)(9000 * scale));
                    for (size_t i = 0; i < FB; i += 512)
                        o[i] = src[i] * 3;
                } break;
                }
            }
            double *s = &sum[r];
#pragma omp target nowait map(alloc : p0[0 : FB], p1[0 : FB], p2[0 : FB], p3[0 : FB],    \
                                  p4[0 : FB], p5[0 : FB], p6[0 : FB], p7[0 : FB],        \
                                  p8[0 : FB]) map(from : s[0 : 1]) depend(out : s[0])    \
    depend(in : p0[0], p1[0], p2[0], p3[0], p4[0], p5[0], p6[0], p7[0], p8[0])
            {
                *s = p0[0] + p1[0] + p2[0] + p3[0] + p4[0] + p5[0] + p6[0] + p7[0] +
                     p8[0];
            }
#pragma omp taskwait
        }
        el = omp_get_wtime() - t0;
#pragma omp target exit data map(release : src)
        for (int f = 0; f < F; f++) {
            double *o = part[f];
#pragma omp target exit data map(release : o[0 : FB])
        }
    }
    for (int f = 0; f < F; f++)
        free(part[f]);
    for (int r = 0; r < R; r++)
        if (sum[r] != 3.0 * F * (r + 1)) {
            fprintf(stderr, "sched_bench: fan results are wrong (round %d: %g)\n", r,
                    sum[r]);
            exit(1);
        }
    return el;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "both";
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    if (scale <= 0) {
        fprintf(stderr, "usage: sched_bench [stencil|fan|both] [scale > 0]\n");
        return 2;
    }
    if (!strcmp(which, "stencil") || !strcmp(which, "both"))
        printf("stencil_s=%.6f\n", stencil(scale));
    if (!strcmp(which, "fan") || !strcmp(which, "both"))
        printf("fan_s=%.6f\n", fan(scale));
    return 0;
}
