/* Rounds of a chain of nowait kernels on one buffer, then a kernel that
 * writes x and a synchronous `target update from(x)` that waits for it.
 * x must be the round's value and every chain link must have run.
 *
 * Why: workers hold completions while more work is launched on them, up
 * to 5 ms when the head said nothing there waits.  With OMPC_GRAPH_WINDOW
 * at 4 (the test list sets it) a round's 12 kernels go out in batches
 * saying so, during recording; a pause lets them all leave.  The update
 * then makes the head wait for x's writer with no launch left to carry
 * the news, so the head must post it (OMPC_INFO on a worker: "it posted
 * so ... completions go promptly"), or x's completion could wait out the
 * chain behind it.  The longest update is printed for the curious, not
 * checked (timing). */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#define ROUNDS 6
#define CHAIN 11 /* + x's writer: 12 kernels, 3 windows of 4 */
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
        /* Every launch of the round leaves first.  Nothing a program
         * can see says when they have, so this waits long enough for a
         * loaded machine's dispatch threads; the worker's line is needed
         * from one round of the six only. */
        usleep(200000);
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
