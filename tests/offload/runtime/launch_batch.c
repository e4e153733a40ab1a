/*
 * launch_batch.c - the head sends the launches it plans while more tasks
 * are ready in one message per worker, and the result is the same as one
 * by one.
 *
 * Two phases on buffers no worker has touched yet (enter data alloc, so
 * the first launch that uses a buffer on a worker also commits its pages
 * there, and launches of one batch, or of batches sent by different
 * dispatch threads, may name the same uncommitted buffer):
 *   1. NB independent tasks, each filling its own buffer: a flush makes
 *      them all ready at once, so they go out in batches that mix workers;
 *   2. a stencil over those buffers (a task reads its neighbours' previous
 *      values), so launches in one batch wait for tasks of other batches
 *      and other workers.
 * The values check every task ran once, in order, on current inputs.
 * OMPC_STATS, read by the test, shows fewer messages than launches.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define NB 96
#define LEN 8
#define STEPS 12

static long *buf[2][NB];

int main(void)
{
    for (int f = 0; f < 2; f++)
        for (int p = 0; p < NB; p++) {
            long *b = buf[f][p] = malloc(LEN * sizeof(long));
            if (!b)
                return 2;
#pragma omp target enter data map(alloc : b[0 : LEN])
        }
    static long ref[2][NB][LEN];
#pragma omp parallel
#pragma omp single
    {
        /* Phase 1: independent. */
        for (int p = 0; p < NB; p++) {
            long *b = buf[0][p];
#pragma omp target nowait map(alloc : b[0 : LEN]) firstprivate(p) depend(out : b[0])
            for (int i = 0; i < LEN; i++)
                b[i] = 1000L * p + i;
        }
        /* Phase 2: a periodic stencil, field t%2 from field (t+1)%2. */
        for (int t = 1; t <= STEPS; t++) {
            int cur = t % 2, prev = 1 - cur;
            for (int p = 0; p < NB; p++) {
                long *l = buf[prev][(p + NB - 1) % NB], *c = buf[prev][p];
                long *r = buf[prev][(p + 1) % NB], *o = buf[cur][p];
#pragma omp target nowait map(alloc : l[0 : LEN], c[0 : LEN], r[0 : LEN], o[0 : LEN]) \
    firstprivate(t) depend(in : l[0], c[0], r[0]) depend(out : o[0])
                for (int i = 0; i < LEN; i++)
                    o[i] = (l[i] + c[i] + r[i]) % 1000003 + t;
            }
        }
#pragma omp taskwait
    }
    /* The same on the host. */
    for (int p = 0; p < NB; p++)
        for (int i = 0; i < LEN; i++)
            ref[0][p][i] = 1000L * p + i;
    for (int t = 1; t <= STEPS; t++) {
        int cur = t % 2, prev = 1 - cur;
        for (int p = 0; p < NB; p++)
            for (int i = 0; i < LEN; i++)
                ref[cur][p][i] = (ref[prev][(p + NB - 1) % NB][i] + ref[prev][p][i] +
                                  ref[prev][(p + 1) % NB][i]) % 1000003 + t;
    }
    int bad = 0;
    int last = STEPS % 2;
    for (int p = 0; p < NB; p++) {
        long *b = buf[last][p];
#pragma omp target exit data map(from : b[0 : LEN])
        for (int i = 0; i < LEN; i++)
            if (b[i] != ref[last][p][i] && bad++ < 5)
                fprintf(stderr, "buffer %d [%d]: %ld, expected %ld\n", p, i, b[i],
                        ref[last][p][i]);
        long *o = buf[1 - last][p];
#pragma omp target exit data map(delete : o[0 : LEN])
        free(b);
        free(o);
    }
    if (bad) {
        fprintf(stderr, "launch_batch: %d wrong values\n", bad);
        return 1;
    }
    printf("launch_batch: ok (%d tasks)\n", NB * (STEPS + 1));
    return 0;
}
