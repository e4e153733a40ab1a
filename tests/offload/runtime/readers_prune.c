/* 20000 target nowait tasks that all name one parameter block with
 * depend(in:) and one of 8 accumulators with depend(inout:), with no
 * barrier until the end.  The values must be exact; under ompc,
 * OMPC_STATS' "at most N task nodes in memory" must stay far below the
 * task count (the test list checks N < 10000).
 *
 * Why: an address that is only ever read kept every reader in its
 * dependence state until the next barrier, and each reader kept its node:
 * memory grew with the length of the run (all 20000 nodes). */
#include <stdio.h>

#define TASKS 20000
#define CELLS 8

static double params[4] = {0.5, 1.0, 2.0, 4.0};
static double acc[CELLS];

int main(void)
{
#pragma omp target enter data map(to : params[0:4], acc[0:CELLS])
    for (int i = 0; i < TASKS; i++) {
        int c = i % CELLS;
#pragma omp target nowait map(to : params[0:4]) map(tofrom : acc[c:1])          \
    depend(in : params) depend(inout : acc[c])
        acc[c] += params[c % 4];
    }
#pragma omp taskwait
#pragma omp target exit data map(from : acc[0:CELLS]) map(delete : params[0:4])
    int bad = 0;
    for (int c = 0; c < CELLS; c++) {
        double want = (double)(TASKS / CELLS) * params[c % 4];
        if (acc[c] != want) {
            printf("readers_prune: acc[%d] = %g, want %g\n", c, acc[c], want);
            bad++;
        }
    }
    printf("readers_prune: %s\n", bad ? "FAIL" : "ok");
    return bad != 0;
}
