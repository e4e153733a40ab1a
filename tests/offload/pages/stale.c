/* No silent staleness between a worker's copies and writes elsewhere
 * (issue 22, item 2).  A chain of target tasks, each ordered after the one
 * before by depend on a token; under OMPC_SCHEDULER=roundrobin with two
 * workers the tasks alternate between them (A, B, A, B...).  argv[1]:
 *   named:   W (A) names buf and writes it; T (B) reads buf only through
 *            a pointer stored in device data (no clause names it): T's
 *            pages come by faults and must hold W's bytes, although with
 *            launch ahead W's completion may not have reached the head
 *            when T faults.
 *   held:    the same, and B holds an older copy of buf (the round's
 *            last task, on B, names buf): T on B must not read that
 *            copy's old bytes.
 *   unnamed: N (A) names buf; U (A, later) writes buf only through the
 *            pointer, into the copy A holds since N; R (B) names buf and
 *            must see U's bytes, and so must the host at the end.
 *   unnamed_big: the same with a buffer of 64 pages: a copy that big is
 *            protected when U starts (U's write faults), a small one is
 *            diffed at U's end (docs/architecture.md, "Writes into a
 *            worker's copy").
 * Every round writes new values: a lost, stale or reordered write changes
 * a checked sum. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 2048 /* longs: four pages (unnamed_big: sixteen times that) */
#define ROUNDS 16
#define STEP 61

static long val(int r, int i) { return 1000L * (r + 1) + i; }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "named";
    int held = !strcmp(mode, "held"), big = !strcmp(mode, "unnamed_big");
    int unnamed = big || !strcmp(mode, "unnamed");
    const int n = big ? 16 * N : N;
    if (!held && !unnamed && strcmp(mode, "named")) {
        fprintf(stderr, "stale: unknown mode %s\n", mode);
        return 2;
    }
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    long *buf = omp_target_alloc(n * sizeof(long), dev);
    long **tab = omp_target_alloc(sizeof(long *), dev);
    long *out = omp_target_alloc(ROUNDS * sizeof(long), dev);
    long *zero = calloc(n, sizeof(long));
    if (!buf || !tab || !out || !zero ||
        omp_target_memcpy(buf, zero, n * sizeof(long), 0, 0, dev, host) ||
        omp_target_memcpy(tab, &buf, sizeof(buf), 0, 0, dev, host) ||
        omp_target_memcpy(out, zero, ROUNDS * sizeof(long), 0, 0, dev, host))
        return 2;
    long token = 0;
    for (int r = 0; r < ROUNDS; r++) {
        if (!unnamed) {
            /* W, on A: names buf. */
#pragma omp target is_device_ptr(buf) firstprivate(r) depend(inout : token) nowait
            for (int i = 0; i < n; i += STEP)
                buf[i] = val(r, i);
            /* T, on B: buf only through tab. */
#pragma omp target is_device_ptr(tab, out) firstprivate(r) depend(inout : token) nowait
            {
                long s = 0;
                for (int i = 0; i < n; i += STEP)
                    s += tab[0][i] - val(r, i);
                out[r] = s;
            }
            if (held) {
                /* On A, then on B: the latter names buf, so B holds a copy
                 * of this round's bytes when the next round's W writes. */
#pragma omp target is_device_ptr(out) depend(inout : token) nowait
                out[0] += 0;
#pragma omp target is_device_ptr(buf, out) firstprivate(r) depend(inout : token) nowait
                out[r] += buf[STEP] - val(r, STEP);
            }
        } else {
            /* N, on A: names buf, writes every checked element. */
#pragma omp target is_device_ptr(buf) firstprivate(r) depend(inout : token) nowait
            for (int i = 0; i < n; i += STEP)
                buf[i] = val(r, i);
            /* On B: the order, and time for R's request for buf to reach
             * A before U runs there (A answers it once N is done, so R's
             * copy lacks U's bytes unless they reach the head). */
#pragma omp target is_device_ptr(out) depend(inout : token) nowait
            {
                usleep(20000); /* asleep: B's gate gets its core */
                out[0] += 0;
            }
            /* U, on A: through tab only, into A's copy. */
#pragma omp target is_device_ptr(tab) firstprivate(r) depend(inout : token) nowait
            for (int i = 0; i < n; i += STEP)
                tab[0][i] += 7;
            /* R, on B: names buf. */
#pragma omp target is_device_ptr(buf, out) firstprivate(r) depend(inout : token) nowait
            {
                long s = 0;
                for (int i = 0; i < n; i += STEP)
                    s += buf[i] - val(r, i) - 7;
                out[r] = s;
            }
        }
    }
#pragma omp taskwait
    long got[ROUNDS], *last = malloc(n * sizeof(long));
    if (!last || omp_target_memcpy(got, out, sizeof(got), 0, 0, host, dev) ||
        omp_target_memcpy(last, buf, n * sizeof(long), 0, 0, host, dev))
        return 2;
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++)
        if (got[r] != 0 && bad++ < 5)
            fprintf(stderr, "stale %s: round %d read old bytes (sum of differences %ld)\n",
                    mode, r, got[r]);
    long diff = 0;
    for (int i = 0; i < n; i += STEP)
        diff += last[i] - val(ROUNDS - 1, i) - (unnamed ? 7 : 0);
    if (diff != 0) {
        fprintf(stderr, "stale %s: the host read old bytes (sum of differences %ld)\n",
                mode, diff);
        bad++;
    }
    omp_target_free(buf, dev);
    omp_target_free(tab, dev);
    omp_target_free(out, dev);
    free(zero);
    free(last);
    if (bad)
        return 1;
    printf("stale %s: ok\n", mode);
    return 0;
}
