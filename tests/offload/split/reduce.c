/* Reductions across teams in kernels split over workers, one kernel per
 * kind: +, *, min, max, &&, ||, &, |, ^ and a user-declared reduction,
 * each starting from a value that combined with itself is unchanged (the
 * shares' values are combined on the home with the compiler's combiner),
 * a sum starting from non-zero (runs unsplit), and two reductions beside
 * writes to other buffers.  Each kind's result
 * depends on every share's teams (the last iterations decide the logical
 * and bitwise ones), so a lost or doubled share changes it.  Prints one
 * RESULT line, which must equal stock LLVM's (compare_stock.sh). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct span {
    long lo, hi;
} span_t;

#pragma omp declare reduction(span : span_t : omp_out.lo = omp_in.lo < omp_out.lo       \
                                  ? omp_in.lo : omp_out.lo,                              \
                              omp_out.hi = omp_in.hi > omp_out.hi ? omp_in.hi : omp_out.hi) \
    initializer(omp_priv = (span_t){LONG_MAX, LONG_MIN})

#define N 200000
#define TEAMS 6

int main(void)
{
    int *v = malloc(N * sizeof(*v));
    if (!v)
        return 2;
    for (int i = 0; i < N; i++)
        v[i] = (int)(((long)i * 7919) % 100003) + 5;

    double sum = 0;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(+ : sum)   \
    map(to : v[0 : N]) map(tofrom : sum)
    for (int i = 0; i < N; i++)
        sum += v[i] % 7;

    long prod = 1;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(* : prod)  \
    map(tofrom : prod)
    for (int i = 0; i < N; i++)
        prod *= i % 5000 == 17 ? 2 + i / 100000 : 1;

    int mn = 1000000;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(min : mn)  \
    map(to : v[0 : N]) map(tofrom : mn)
    for (int i = 0; i < N; i++)
        mn = v[i] - (i == N - 2) * 100 < mn ? v[i] - (i == N - 2) * 100 : mn;

    double mx = -1;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(max : mx)  \
    map(to : v[0 : N]) map(tofrom : mx)
    for (int i = 0; i < N; i++)
        mx = v[i] + (i > N - 10) * 1e6 > mx ? v[i] + (i > N - 10) * 1e6 : mx;

    int land = 1;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(&& : land) \
    map(to : v[0 : N]) map(tofrom : land)
    for (int i = 0; i < N; i++)
        land = land && (v[i] > 0 && i != N - 4);

    int lor = 0;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(|| : lor)  \
    map(tofrom : lor)
    for (int i = 0; i < N; i++)
        lor = lor || i == N - 3;

    unsigned band = ~0u;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(& : band)  \
    map(tofrom : band)
    for (int i = 0; i < N; i++)
        band &= i == N - 5 ? 0xF0F0F0F0u : i == 7 ? 0xFFFF0FFFu : ~0u;

    unsigned bor = 0;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(| : bor)   \
    map(tofrom : bor)
    for (int i = 0; i < N; i++)
        bor |= i % 5000 == 4999 ? 1u << (i / 5000 % 32) : 0u;

    unsigned bx = 0;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(^ : bx)    \
    map(tofrom : bx)
    for (int i = 0; i < N; i++)
        bx ^= (unsigned)i * 2654435761u;

    span_t sp = {LONG_MAX, LONG_MIN};
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(span : sp) \
    map(to : v[0 : N]) map(tofrom : sp)
    for (int i = 0; i < N; i++) {
        long x = (long)v[i] * (i + 1);
        sp.lo = x < sp.lo ? x : sp.lo;
        sp.hi = x > sp.hi ? x : sp.hi;
    }

    long from5 = 5;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(+ : from5) \
    map(to : v[0 : N]) map(tofrom : from5)
    for (int i = 0; i < N; i++)
        from5 += v[i] % 11;

    /* A reduction beside writes the byte merge moves: a large array and
     * a small one written a slice per share. */
    int *out = malloc(N * sizeof(*out));
    long small[12] = {0};
    long both = 0;
    int big = -1;
    if (!out)
        return 2;
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(+ : both)  \
    map(to : v[0 : N]) map(from : out[0 : N]) map(tofrom : both)
    for (int i = 0; i < N; i++) {
        out[i] = 2 * v[i];
        both += v[i] % 13;
    }
#pragma omp target teams distribute parallel for num_teams(TEAMS) reduction(max : big) \
    map(to : v[0 : N]) map(tofrom : small)
    for (int i = 0; i < N; i++) {
        if (i % (N / 12) == 1)
            small[i / (N / 12)] = v[i] + i;
        big = v[i] % 1000 + (i == N - 1) * 5000 > big ? v[i] % 1000 + (i == N - 1) * 5000 : big;
    }
    long outsum = 0, smallsum = 0;
    for (int i = 0; i < N; i++)
        outsum += out[i] * (long)(i % 3 + 1);
    for (int i = 0; i < 12; i++)
        smallsum += small[i] * (i + 1);
    free(out);

    /* The same sums on the host: a wrong combination fails here too. */
    double hsum = 0;
    long hfrom5 = 5;
    for (int i = 0; i < N; i++) {
        hsum += v[i] % 7;
        hfrom5 += v[i] % 11;
    }
    printf("RESULT sum %.1f prod %ld min %d max %.1f and %d or %d band %#x bor %#x "
           "xor %#x span %ld..%ld from5 %ld both %ld out %ld big %d small %ld\n",
           sum, prod, mn, mx, land, lor, band, bor, bx, sp.lo, sp.hi, from5, both, outsum,
           big, smallsum);
    free(v);
    if (sum != hsum || from5 != hfrom5 || land != 0 || lor != 1) {
        fprintf(stderr, "reduce: wrong result (sum %.1f want %.1f, from5 %ld want %ld)\n",
                sum, hsum, from5, hfrom5);
        return 1;
    }
    return 0;
}
