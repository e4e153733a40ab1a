/* Rounds of a chain of nowait kernels on one buffer, then a kernel that
 * writes x and a synchronous `target update from(x)` that waits for it.
 * x must be the round's value and every chain link must have run.
 *
 * Why: workers hold completions while more work is launched on them, up
 * to 5 ms when the head said nothing there waits.  With a small
 * OMPC_GRAPH_WINDOW (the test list sets 4) the chain goes out in batches
 * saying so; the update then makes the head wait for x's writer, and the
 * workers must switch back (OMPC_INFO: "completions go promptly"), told
 * by the next batch or, when none follows, by a post.  The longest update
 * is printed for the curious, not checked (timing). */
#include <omp.h>
#include <stdio.h>

#define ROUNDS 6
#define CHAIN 12
#define SPIN 200000L

static double x;
static double b[CHAIN];

int main(void)
{
    int bad = 0;
    double worst = 0;
#pragma omp target enter data map(to : x, b[0:CHAIN])
    for (int r = 0; r < ROUNDS; r++) {
        for (int j = 0; j < CHAIN; j++) {
#pragma omp target nowait map(alloc : b[0:CHAIN]) depend(inout : b) firstprivate(j)
            {
                double s = 0;
                for (long i = 0; i < SPIN; i++)
                    s += (double)i * 1e-9;
                b[j] += s > 0 ? 1.0 : 0.0;
            }
        }
#pragma omp target nowait map(alloc : x) depend(out : x) firstprivate(r)
        x = r + 1;
        double t0 = omp_get_wtime();
#pragma omp target update from(x) depend(in : x)
        double t = omp_get_wtime() - t0;
        if (t > worst)
            worst = t;
        if (x != r + 1) {
            printf("prompt_wait: round %d: x = %g, want %d\n", r, x, r + 1);
            bad++;
        }
    }
#pragma omp taskwait
#pragma omp target exit data map(from : b[0:CHAIN]) map(delete : x)
    for (int j = 0; j < CHAIN; j++)
        if (b[j] != ROUNDS) {
            printf("prompt_wait: b[%d] = %g, want %d\n", j, b[j], ROUNDS);
            bad++;
        }
    printf("prompt_wait: longest update %.3f ms\n", worst * 1e3);
    printf("prompt_wait: %s\n", bad ? "FAIL" : "ok");
    return bad != 0;
}
