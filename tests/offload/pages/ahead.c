/* Launch ahead and writes through page faults: a kernel writes a device
 * buffer only through a pointer stored in device data (no clause names
 * the buffer), and the next kernel in its depend chain names the buffer
 * (is_device_ptr) and reads it.  Launch-ahead plans where the reader's
 * copy comes from when it sends the reader, before the writer ran: the
 * reader must still see the writer's bytes, every round. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 2048 /* longs: four pages */
#define ROUNDS 24

int main(void)
{
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    long *buf = omp_target_alloc(N * sizeof(long), dev);
    long **tab = omp_target_alloc(sizeof(long *), dev);
    long *out = omp_target_alloc(ROUNDS * sizeof(long), dev);
    long *zero = calloc(N, sizeof(long));
    if (!buf || !tab || !out || !zero ||
        omp_target_memcpy(buf, zero, N * sizeof(long), 0, 0, dev, host) ||
        omp_target_memcpy(tab, &buf, sizeof(buf), 0, 0, dev, host) ||
        omp_target_memcpy(out, zero, ROUNDS * sizeof(long), 0, 0, dev, host))
        return 2;
    long token = 0;
    for (int r = 0; r < ROUNDS; r++) {
        /* Writes buf through tab only: its pages come by faults. */
#pragma omp target is_device_ptr(tab) firstprivate(r) depend(inout : token) nowait
        for (int i = 0; i < N; i += 97)
            tab[0][i] = 1000L * (r + 1) + i;
        /* Names buf: its copy is planned at launch. */
#pragma omp target is_device_ptr(buf, out) firstprivate(r) depend(inout : token) nowait
        {
            long s = 0;
            for (int i = 0; i < N; i += 97)
                s += buf[i] - 1000L * (r + 1) - i;
            out[r] = s;
        }
    }
#pragma omp taskwait
    long got[ROUNDS];
    if (omp_target_memcpy(got, out, sizeof(got), 0, 0, host, dev))
        return 2;
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++)
        if (got[r] != 0 && bad++ < 5)
            fprintf(stderr, "ahead: round %d read stale bytes (sum of differences %ld)\n",
                    r, got[r]);
    omp_target_free(buf, dev);
    omp_target_free(tab, dev);
    omp_target_free(out, dev);
    free(zero);
    if (bad)
        return 1;
    printf("ahead: ok\n");
    return 0;
}
