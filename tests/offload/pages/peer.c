/* Faults served worker to worker (issue 22, item 1): a page whose valid
 * copy is on another worker comes from that worker, not through the head.
 * A chain of target tasks ordered by depend on a token; under
 * OMPC_SCHEDULER=roundrobin with two workers they alternate (A, B, A, B),
 * two per round, so W is always on A and R always on B.  Each round:
 *   W (A) names buf and writes every element with this round's values;
 *     first it checks that the previous round's writes of R (through
 *     faults, on B) reached its copy;
 *   on odd rounds the host waits and then patches one element (the
 *     head patches A's copy, the valid one);
 *   R (B) reaches buf only through a pointer stored in device data: its
 *     pages come by faults, from A's copy, and must hold W's bytes and
 *     the host's (on even rounds W's completion may not have reached the
 *     head yet: the copy is the one of the writer R follows).  It sums
 *     the differences from the expected values and writes every 7th
 *     element through the pointer.
 * buf spans three fault blocks of 64 KiB, the last one partly past its
 * end.  A stale, lost or misplaced byte changes a checked sum.  With
 * OMPC_STATS=1 the head counts the faults read straight from A. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 20000 /* longs: 160000 bytes, 39 pages and a bit */
#define ROUNDS 12
#define HOST_AT 5 /* not a multiple of 7: R never writes it */

static long val(int r, int i) { return 100000L * (r + 1) + i; }

/* What R must read at i in round r. */
static long want(int r, int i) { return (r % 2 && i == HOST_AT) ? -r : val(r, i); }

int main(void)
{
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    long *buf = omp_target_alloc(N * sizeof(long), dev);
    long **tab = omp_target_alloc(sizeof(long *), dev);
    long *out = omp_target_alloc(2 * ROUNDS * sizeof(long), dev);
    long *zero = calloc(2 * ROUNDS, sizeof(long));
    if (!buf || !tab || !out || !zero ||
        omp_target_memcpy(tab, &buf, sizeof(buf), 0, 0, dev, host) ||
        omp_target_memcpy(out, zero, 2 * ROUNDS * sizeof(long), 0, 0, dev, host))
        return 2;
    long token = 0;
    for (int r = 0; r < ROUNDS; r++) {
        /* W, on A. */
#pragma omp target is_device_ptr(buf, out) firstprivate(r) depend(inout : token) nowait
        {
            long s = 0;
            for (int i = 0; r > 0 && i < N; i += 7)
                s += buf[i] - want(r - 1, i) - 1;
            out[ROUNDS + r] = s;
            for (int i = 0; i < N; i++)
                buf[i] = val(r, i);
        }
        if (r % 2) {
#pragma omp taskwait
            long v = -r;
            if (omp_target_memcpy(buf, &v, sizeof(v), HOST_AT * sizeof(long), 0, dev,
                                  host))
                return 2;
        }
        /* R, on B: buf only through tab. */
#pragma omp target is_device_ptr(tab, out) firstprivate(r) depend(inout : token) nowait
        {
            long *p = tab[0], s = 0;
            for (int i = 0; i < N; i++)
                s += p[i] - want(r, i);
            for (int i = 0; i < N; i += 7)
                p[i] += 1;
            out[r] = s;
        }
    }
#pragma omp taskwait
    long got[2 * ROUNDS], *last = malloc(N * sizeof(long));
    if (!last || omp_target_memcpy(got, out, sizeof(got), 0, 0, host, dev) ||
        omp_target_memcpy(last, buf, N * sizeof(long), 0, 0, host, dev))
        return 2;
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        if (got[r] != 0 && bad++ < 5)
            fprintf(stderr, "peer: round %d: the reader read wrong bytes (sum %ld)\n", r,
                    got[r]);
        if (got[ROUNDS + r] != 0 && bad++ < 5)
            fprintf(stderr, "peer: round %d: the writer lacks the reader's writes (sum %ld)\n",
                    r, got[ROUNDS + r]);
    }
    long diff = 0;
    for (int i = 0; i < N; i++)
        diff += last[i] - want(ROUNDS - 1, i) - (i % 7 == 0);
    if (diff != 0) {
        fprintf(stderr, "peer: the host read wrong bytes (sum of differences %ld)\n", diff);
        bad++;
    }
    omp_target_free(buf, dev);
    omp_target_free(tab, dev);
    omp_target_free(out, dev);
    free(zero);
    free(last);
    if (bad)
        return 1;
    printf("peer: ok\n");
    return 0;
}
