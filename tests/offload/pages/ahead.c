/* Launch ahead and writes through page faults: a kernel writes mapped data
 * only through a pointer stored in device data (no clause names it), and
 * later kernels name that data.  Launch-ahead plans where a later task's
 * copy comes from when it sends the task, before the writer ran: the task
 * must still see the writer's bytes, and so must `target update from`.
 * argv[1] picks the case:
 *   chain:  rounds of a fault writer W and a task R after it that names
 *           the data, reads W's bytes and writes bytes of its own.  Each
 *           W is ordered after the previous R, a writer of the data whose
 *           completion may not have reached the head when W's write-back
 *           does: W's bytes must not be lost to it.  A last W ends the
 *           chain, and the host reads both kinds of writes back.
 *   copies: the data is read on two workers first (two valid copies),
 *           then written through faults on a third, and read by a task
 *           placed on the second (OMPC_SCHEDULER=roundrobin on 4 ranks):
 *           the head patches one copy and the reader's must get the bytes
 *           too.
 *   order:  the data is valid on one worker, a named writer on a second
 *           changes it, and a fault writer on a third, ordered after the
 *           named one, changes other bytes (roundrobin on 4 ranks): the
 *           write-back must land after the named writer's completion at
 *           the head, else that completion makes the second worker's copy,
 *           without the faulted bytes, the only valid one. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 2048 /* longs: four pages */
#define ROUNDS 24
#define STRIDE 97

static long h[N];
static int dev, host;

/* The expected value of h[i] after W of round r (i on the stride). */
static long wval(int r, int i) { return 1000L * (r + 1) + i; }

static int chain(void)
{
    long **tab = omp_target_alloc(sizeof(long *), dev);
    long *out = omp_target_alloc(ROUNDS * sizeof(long), dev);
    long zero[ROUNDS] = {0};
#pragma omp target enter data map(to : h)
    long *buf = omp_get_mapped_ptr(h, dev);
    if (!tab || !out || !buf ||
        omp_target_memcpy(tab, &buf, sizeof(buf), 0, 0, dev, host) ||
        omp_target_memcpy(out, zero, sizeof(zero), 0, 0, dev, host))
        return 2;
    long token = 0;
    for (int r = 0; r <= ROUNDS; r++) {
        /* Writes h through tab only: its pages come by faults. */
#pragma omp target is_device_ptr(tab) firstprivate(r) depend(inout : token) nowait
        for (int i = 0; i < N; i += STRIDE)
            tab[0][i] = 1000L * (r + 1) + i;
        if (r == ROUNDS)
            break;
        /* Names h (so its copy is planned at launch), reads W's bytes and
         * counts its own rounds in the word after each. */
#pragma omp target is_device_ptr(buf, out) firstprivate(r) depend(inout : token) nowait
        {
            long s = 0;
            for (int i = 0; i < N; i += STRIDE) {
                s += buf[i] - 1000L * (r + 1) - i;
                buf[i + 1] += 1;
            }
            out[r] = s;
        }
    }
#pragma omp taskwait
    long got[ROUNDS];
    if (omp_target_memcpy(got, out, sizeof(got), 0, 0, host, dev))
        return 2;
#pragma omp target update from(h)
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++)
        if (got[r] != 0 && bad++ < 5)
            fprintf(stderr, "chain: round %d read stale bytes (sum of differences %ld)\n",
                    r, got[r]);
    for (int i = 0; i < N; i += STRIDE) {
        if (h[i] != wval(ROUNDS, i) && bad++ < 5)
            fprintf(stderr, "chain: h[%d] = %ld after the last write, want %ld\n", i, h[i],
                    wval(ROUNDS, i));
        if (i + 1 < N && h[i + 1] != ROUNDS && bad++ < 5)
            fprintf(stderr, "chain: h[%d] = %ld, want %d (one per reader)\n", i + 1,
                    h[i + 1], ROUNDS);
    }
#pragma omp target exit data map(release : h)
    omp_target_free(tab, dev);
    omp_target_free(out, dev);
    if (bad)
        return 1;
    printf("chain: ok\n");
    return 0;
}

static int copies(void)
{
    long **tab = omp_target_alloc(sizeof(long *), dev);
    long *res = omp_target_alloc(sizeof(long), dev);
    if (!tab || !res)
        return 2;
    long s0 = 0, s1 = 0, s2 = 0, token = 0;
    int bad = 0;
    for (int round = 0; round < 6 && !bad; round++) {
        /* A buffer of a new size each round, so that no worker holds its
         * pages from an earlier round: the writer's worker then reaches it
         * only through faults.  Roundrobin moves the tasks one worker on
         * each round. */
        int n = N + 512 * round;
        long *hp = malloc(n * sizeof(long));
        if (!hp)
            return 2;
        for (int i = 0; i < n; i++)
            hp[i] = i;
#pragma omp target enter data map(to : hp[0 : n])
        long *buf = omp_get_mapped_ptr(hp, dev);
        if (!buf || omp_target_memcpy(tab, &buf, sizeof(buf), 0, 0, dev, host))
            return 2;
        /* Readers on two workers: a valid copy on each. */
#pragma omp target map(present, alloc : hp[0 : n]) map(tofrom : s0) depend(in : hp[0])   \
    nowait
        for (int i = 0; i < n; i++)
            s0 += hp[i];
#pragma omp target map(present, alloc : hp[0 : n]) map(tofrom : s1) depend(in : hp[0])   \
    nowait
        for (int i = 0; i < n; i++)
            s1 += hp[i];
#pragma omp taskwait
        /* The writer on the third, through faults only. */
#pragma omp target is_device_ptr(tab) firstprivate(round, n) depend(inout : token) nowait
        for (int i = 0; i < n; i += STRIDE)
            tab[0][i] = -1000L * (round + 1) - i;
        /* Nothing, on the first worker: the reader goes to the second. */
#pragma omp target nowait
        {
        }
        /* The reader, launched before the writer is done (nothing it does
         * waits for the host). */
#pragma omp target map(present, alloc : hp[0 : n]) is_device_ptr(res) depend(in : hp[0]) \
    depend(inout : token) firstprivate(round, n) nowait
        {
            long s = 0;
            for (int i = 0; i < n; i += STRIDE)
                s += hp[i] != -1000L * (round + 1) - i;
            res[0] = s;
        }
#pragma omp taskwait
        if (omp_target_memcpy(&s2, res, sizeof(s2), 0, 0, host, dev))
            return 2;
        if (s2 != 0) {
            fprintf(stderr, "copies: round %d: the reader missed %ld written words\n",
                    round, s2);
            bad = 1;
        }
#pragma omp target update from(hp[0 : n])
        for (int i = 0; i < n && !bad; i++) {
            long want = i % STRIDE ? i : -1000L * (round + 1) - i;
            if (hp[i] != want) {
                fprintf(stderr, "copies: round %d: h[%d] = %ld, want %ld\n", round, i,
                        hp[i], want);
                bad = 1;
            }
        }
#pragma omp target exit data map(release : hp[0 : n])
        free(hp);
    }
    omp_target_free(tab, dev);
    omp_target_free(res, dev);
    if (bad)
        return 1;
    printf("copies: ok\n");
    return 0;
}

static int order(void)
{
    long **tab = omp_target_alloc(sizeof(long *), dev);
    if (!tab)
        return 2;
    long token = 0;
    int bad = 0;
    for (int round = 0; round < 8 && !bad; round++) {
        /* A buffer of a new size each round: no worker holds its pages
         * from an earlier round. */
        int n = N + 512 * round;
        long *hp = malloc(n * sizeof(long));
        if (!hp)
            return 2;
        for (int i = 0; i < n; i++)
            hp[i] = i;
#pragma omp target enter data map(to : hp[0 : n])
        long *buf = omp_get_mapped_ptr(hp, dev);
        if (!buf || omp_target_memcpy(tab, &buf, sizeof(buf), 0, 0, dev, host))
            return 2;
        /* The valid copy on the first worker. */
#pragma omp target map(present, alloc : hp[0 : n]) firstprivate(n)
        for (int i = 1; i < n; i += STRIDE)
            hp[i] = -1;
        /* A named writer on the second, then the fault writer on the
         * third, ordered after it. */
#pragma omp target map(present, alloc : hp[0 : n]) firstprivate(n, round)               \
    depend(inout : token) nowait
        for (int i = 2; i < n; i += STRIDE)
            hp[i] = -2L * (round + 1);
#pragma omp target is_device_ptr(tab) firstprivate(n, round) depend(inout : token) nowait
        for (int i = 0; i < n; i += STRIDE)
            tab[0][i] = -1000L * (round + 1) - i;
        /* Work launched after it on each worker, in turn: the second
         * worker, with a task waiting for its input, holds the named
         * writer's completion a while (it goes with the next ones). */
        for (int k = 0; k < 3; k++) {
#pragma omp target depend(inout : token) nowait
            {
            }
        }
#pragma omp taskwait
#pragma omp target update from(hp[0 : n])
        for (int i = 0; i < n && !bad; i++) {
            long want = i % STRIDE == 0   ? -1000L * (round + 1) - i
                        : i % STRIDE == 1 ? -1
                        : i % STRIDE == 2 ? -2L * (round + 1)
                                          : i;
            if (hp[i] != want) {
                fprintf(stderr, "order: round %d: h[%d] = %ld, want %ld\n", round, i,
                        hp[i], want);
                bad = 1;
            }
        }
#pragma omp target exit data map(release : hp[0 : n])
        free(hp);
    }
    omp_target_free(tab, dev);
    if (bad)
        return 1;
    printf("order: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    dev = omp_get_default_device();
    host = omp_get_initial_device();
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "chain"))
        return chain();
    if (!strcmp(mode, "copies"))
        return copies();
    if (!strcmp(mode, "order"))
        return order();
    fprintf(stderr, "usage: %s chain|copies|order\n", argv[0]);
    return 2;
}
