/* The head's libomp defaults: no hidden helper threads on every rank
 * count, passive waiting where the head does not also run the kernels (not
 * on one rank); and a chain of nowait kernels linked by depend(inout:)
 * still runs in order under them.  Prints the settings main sees, then
 * PASS (exit 0) or FAIL. */
#include <stdio.h>
#include <stdlib.h>

#define N 256
#define STEPS 2000

int main(void)
{
    const char *hh = getenv("LIBOMP_USE_HIDDEN_HELPER_TASK");
    const char *wait = getenv("OMP_WAIT_POLICY");
    printf("head defaults: LIBOMP_USE_HIDDEN_HELPER_TASK=%s OMP_WAIT_POLICY=%s\n",
           hh ? hh : "(unset)", wait ? wait : "(unset)");
    static long u[N];
    long want = 0;
#pragma omp target enter data map(to: u[0:N])
    for (long s = 0; s < STEPS; s++) {
        /* u = 2u + s mod a prime: a lost, repeated or reordered step
         * changes the result. */
#pragma omp target teams distribute parallel for map(tofrom: u[0:N]) \
        depend(inout: u[0]) nowait
        for (int i = 0; i < N; i++)
            u[i] = (2 * u[i] + s + i) % 1000003;
    }
#pragma omp taskwait
#pragma omp target exit data map(from: u[0:N])
    int bad = 0;
    for (int i = 0; i < N; i++) {
        want = 0;
        for (long s = 0; s < STEPS; s++)
            want = (2 * want + s + i) % 1000003;
        bad += u[i] != want;
    }
    printf("%s head_defaults: %d wrong element(s) after %d chained kernels\n",
           bad ? "FAIL" : "PASS", bad, STEPS);
    return bad != 0;
}
