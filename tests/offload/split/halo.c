/* Shares kept where they were written (docs/architecture.md, "Loops split
 * across workers"): a 2D stencil over many time steps, each step two split
 * kernels that read their neighbours' rows of the step before, with
 * readers of every other kind in between (a `target update from` of part
 * of the grid, a `target` region without teams, a partial `target update
 * to`), and a kernel whose shares read rows half the grid away, beyond
 * their neighbours, then one that writes outside its share (undone, run
 * whole).  Then fresh buffers of the grids' size take their device memory
 * (kept for the next buffer of the same size), where the guards of the
 * last splits left pages protected: one written whole by a split kernel
 * without data coming (map(from:)), one by a region without teams.
 * Built with ompcc and with stock clang-19, the RESULT
 * line must be the same (compare_stock.sh); a lost, stale or misplaced
 * piece changes the checksums. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NY 260
#define NX 131
#define STEPS 30

static double u[NY * NX], v[NY * NX], w[NY * NX], x[NY * NX];

/* A checksum that sees every bit of every value and its place. */
static uint64_t digest(const double *a, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        uint64_t x;
        memcpy(&x, &a[i], sizeof(x));
        h = (h ^ x ^ (uint64_t)i) * 1099511628211ull;
    }
    return h;
}

int main(void)
{
    for (int i = 0; i < NY; i++)
        for (int j = 0; j < NX; j++)
            u[i * NX + j] = v[i * NX + j] = (i == 0 || j == 0) ? 50.0 + i - j : (i * 5 + j * 11) % 23;
    uint64_t mid = 0, single = 0;
    double probe = 0;
#pragma omp target data map(tofrom : u) map(tofrom : v)
    {
        for (int s = 0; s < STEPS; s++) {
#pragma omp target teams distribute parallel for num_teams(8)
            for (int i = 1; i < NY - 1; i++)
                for (int j = 1; j < NX - 1; j++)
                    v[i * NX + j] = 0.25 * (u[(i - 1) * NX + j] + u[(i + 1) * NX + j] +
                                            u[i * NX + j - 1] + u[i * NX + j + 1]) +
                                    0.001 * s;
#pragma omp target teams distribute parallel for num_teams(8)
            for (int i = 1; i < NY - 1; i++)
                for (int j = 1; j < NX - 1; j++)
                    u[i * NX + j] = 0.25 * (v[(i - 1) * NX + j] + v[(i + 1) * NX + j] +
                                            v[i * NX + j - 1] + v[i * NX + j + 1]);
            if (s == 9) {
                /* Part of the grid to the host, from every share's rows. */
#pragma omp target update from(u[(NY / 4) * NX : (NY / 2) * NX])
                mid = digest(&u[(NY / 4) * NX], (NY / 2) * NX);
            }
            if (s == 14) {
                /* A region without teams reads and writes the spread grid. */
#pragma omp target map(tofrom : probe)
                {
                    probe = u[3 * NX + 7] + u[(NY - 3) * NX + 9] + v[(NY / 2) * NX + 5];
                    u[(NY / 2) * NX + 1] += probe;
                }
            }
            if (s == 19) {
                /* Part of the grid from the host: row 1 and row NY-2. */
                for (int j = 0; j < NX; j++) {
                    u[1 * NX + j] = 1.0 + j;
                    u[(NY - 2) * NX + j] = 2.0 - j;
                }
#pragma omp target update to(u[1 * NX : NX])
#pragma omp target update to(u[(NY - 2) * NX : NX])
            }
        }
        /* Reads half the grid away (beyond every neighbour), twice, from
         * grids the steps above left spread over the shares. */
        for (int r = 0; r < 2; r++) {
#pragma omp target teams distribute parallel for num_teams(8)
            for (int i = 0; i < NY; i++)
                for (int j = 0; j < NX; j++)
                    v[i * NX + j] = u[((i + NY / 2) % NY) * NX + (NX - 1 - j)] - 0.5 * u[i * NX + j];
#pragma omp target teams distribute parallel for num_teams(8)
            for (int i = 0; i < NY; i++)
                for (int j = 0; j < NX; j++)
                    u[i * NX + j] = v[((i + NY / 3) % NY) * NX + j] + 0.125 * v[i * NX + j];
        }
        /* Every team also writes v[0]: two shares change one byte, so the
         * split is undone, every copy put back and the pieces gathered
         * home, where the kernel runs whole. */
#pragma omp target teams distribute parallel for num_teams(8)
        for (int i = 0; i < NY; i++) {
            for (int j = 1; j < NX; j++)
                v[i * NX + j] = 0.5 * u[((i + 1) % NY) * NX + j] + v[i * NX + j];
            v[0] = 3.25;
        }
    }
    for (int r = 0; r < 2; r++) {
#pragma omp target teams distribute parallel for num_teams(8) map(from : w)
        for (int i = 0; i < NY * NX; i++)
            w[i] = 0.5 * i + r;
#pragma omp target map(from : x)
        for (int i = 0; i < NY * NX; i++)
            x[i] = 2.0 * i - r;
    }
    single = digest(u, NY * NX);
    printf("RESULT u %016llx v %016llx mid %016llx probe %.17g w %016llx x %016llx\n",
           (unsigned long long)single, (unsigned long long)digest(v, NY * NX),
           (unsigned long long)mid, probe, (unsigned long long)digest(w, NY * NX),
           (unsigned long long)digest(x, NY * NX));
    return 0;
}
