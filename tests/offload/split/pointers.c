/* A split loop that reaches device memory no clause names (docs/
 * architecture.md, "Loops split across workers"): XSBench's shape, a table
 * of omp_target_alloc blocks behind a device array of pointers, looked up
 * by a `target teams distribute parallel for` with reductions.
 *
 * Mode (argv[1]):
 *   read   the split kernel reads the blocks through pointers (pages come
 *          on demand on every share), writes only a mapped array and sums
 *          across teams; a
 *          plain target region then changes the blocks through the same
 *          pointers, and the next split must see the new bytes; 6 rounds,
 *          every result checked against the host
 *   write  the split kernel writes through the pointers: shares' writes
 *          into unnamed pages cannot be merged, so the job stops by name
 *          (where the kernel is split at all) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NB = 12, BLOCK = 3000, N = 40000, ROUNDS = 6 };

static double host_val(int b, int k, int round)
{
    return (double)((b * 7919 + k * 31) % 1000) * 0.001 + round;
}

static double lookup(double *const *tab, int i)
{
    int b = i % NB, k = (i * 17) % BLOCK;
    return tab[b][k] + tab[(b + 5) % NB][(k + 1) % BLOCK];
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "read";
    int write = !strcmp(mode, "write");
    if (!write && strcmp(mode, "read")) {
        fprintf(stderr, "usage: %s read|write\n", argv[0]);
        return 2;
    }
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    double *hb[NB], *db[NB];
    for (int b = 0; b < NB; b++) {
        hb[b] = malloc(BLOCK * sizeof(double));
        db[b] = omp_target_alloc(BLOCK * sizeof(double), dev);
        if (!hb[b] || !db[b])
            return 2;
        for (int k = 0; k < BLOCK; k++)
            hb[b][k] = host_val(b, k, 0);
        omp_target_memcpy(db[b], hb[b], BLOCK * sizeof(double), 0, 0, dev, host);
    }
    double **dtab = omp_target_alloc(NB * sizeof(double *), dev);
    omp_target_memcpy(dtab, db, sizeof(db), 0, 0, dev, host);
    double *out = malloc(N * sizeof(double));
    int fails = 0;
    for (int round = 0; round < ROUNDS; round++) {
        double sum = 0;
        if (write) {
#pragma omp target teams distribute parallel for is_device_ptr(dtab)
            for (int i = 0; i < NB * BLOCK; i++)
                dtab[i / BLOCK][i % BLOCK] += 1.0;
            printf("write: not split, ran on one executor\n");
            return 0;
        }
#pragma omp target teams distribute parallel for is_device_ptr(dtab) map(from : out[:N])     \
    reduction(+ : sum)
        for (int i = 0; i < N; i++) {
            double v = lookup(dtab, i);
            out[i] = v;
            sum += v;
        }
        double rs = 0;
        for (int i = 0; i < N; i++) {
            double v = lookup(hb, i);
            if (out[i] != v && ++fails <= 5)
                fprintf(stderr, "FAIL round %d: out[%d] = %g, want %g\n", round, i, out[i], v);
            rs += v;
        }
        /* Sums in another order: equal to a few ulps of N terms. */
        if ((sum - rs > 1e-9 * rs || rs - sum > 1e-9 * rs) && ++fails <= 5)
            fprintf(stderr, "FAIL round %d: sum %.17g, want %.17g\n", round, sum, rs);
        /* The next round's values, written through the same pointers by a
         * kernel that is not split. */
#pragma omp target is_device_ptr(dtab)
        for (int b = 0; b < NB; b++)
            for (int k = 0; k < BLOCK; k++)
                dtab[b][k] += 1.0;
        for (int b = 0; b < NB; b++)
            for (int k = 0; k < BLOCK; k++)
                hb[b][k] += 1.0;
    }
    for (int b = 0; b < NB; b++)
        omp_target_free(db[b], dev);
    omp_target_free(dtab, dev);
    printf("%s %s\n", mode, fails ? "FAILED" : "OK");
    return fails != 0;
}
