/*
 * hold_learn.c - HEFT places a kernel it has not seen run only after
 * measuring it, and learns what a worker-to-worker hop costs.
 *
 * Three columns of fine-grained target nowait tasks, each step reading its
 * own and its neighbours' previous values (a stencil: the first step is
 * the only one that does not depend on an unmeasured kernel, so under HEFT
 * the rest is held back until one has run).  Held-back work must still
 * run exactly once and in order, including when what waits for it is:
 *   - a synchronous target region (the recording thread runs it itself),
 *   - a host task with a depend clause,
 *   - a taskwait.
 * The values check the order; OMPC_STATS, read by the test, shows the
 * hold-backs (under heft) and the learnt hop (with forwarded inputs).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define W 3
#define STEPS 24

/* One buffer per (field, point): a task writes only its own, so tasks of
 * different points may run on different workers and forward values. */
static long *buf[2][W];

int main(void)
{
    long ref[2][W] = {{0}};
    for (int f = 0; f < 2; f++)
        for (int p = 0; p < W; p++) {
            long *b = buf[f][p] = malloc(sizeof(long));
            if (!b)
                return 2;
            *b = ref[f][p] = f == 0 ? p + 1 : 0;
#pragma omp target enter data map(to : b[0 : 1])
        }
    long sync_seen = -1, host_seen = -1;
#pragma omp parallel
#pragma omp single
    {
        for (int t = 1; t <= STEPS; t++) {
            int cur = t % 2, prev = 1 - cur;
            for (int p = 0; p < W; p++) {
                long *pl = buf[prev][p > 0 ? p - 1 : p], *pp = buf[prev][p];
                long *pr = buf[prev][p < W - 1 ? p + 1 : p], *po = buf[cur][p];
#pragma omp target nowait map(alloc : pl[0 : 1], pp[0 : 1], pr[0 : 1], po[0 : 1]) \
    firstprivate(t) depend(in : pl[0], pp[0], pr[0]) depend(out : po[0])
                po[0] = pl[0] + 2 * pp[0] + pr[0] + t;
            }
            if (t == STEPS / 2) {
                /* Synchronous: waits for held-back work of this step. */
                long *q = buf[cur][1], *h = buf[cur][2];
#pragma omp target map(from : sync_seen) map(alloc : q[0 : 1]) depend(in : q[0])
                sync_seen = q[0];
                /* A host task after held-back target tasks. */
#pragma omp target update from(h[0 : 1]) depend(inout : h[0]) nowait
#pragma omp task depend(in : h[0]) shared(host_seen) firstprivate(h)
                host_seen = h[0];
            }
        }
#pragma omp taskwait
    }
    for (int f = 0; f < 2; f++)
        for (int p = 0; p < W; p++) {
            long *b = buf[f][p];
#pragma omp target exit data map(from : b[0 : 1])
        }
    long want_sync = 0, want_host = 0;
    for (int t = 1; t <= STEPS; t++) {
        int cur = t % 2, prev = 1 - cur;
        for (int p = 0; p < W; p++) {
            int l = p > 0 ? p - 1 : p, r = p < W - 1 ? p + 1 : p;
            ref[cur][p] = ref[prev][l] + 2 * ref[prev][p] + ref[prev][r] + t;
        }
        if (t == STEPS / 2) {
            want_sync = ref[cur][1];
            want_host = ref[cur][2];
        }
    }
    int bad = (sync_seen != want_sync) + (host_seen != want_host);
    for (int p = 0; p < W; p++)
        bad += *buf[STEPS % 2][p] != ref[STEPS % 2][p];
    printf("hold_learn: sync %ld (want %ld), host %ld (want %ld), %d wrong\n",
           sync_seen, want_sync, host_seen, want_host, bad);
    return bad != 0;
}
