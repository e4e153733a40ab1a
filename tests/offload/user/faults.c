/* Faults in a user program while target tasks are in flight (argv[1]):
 *   kernel-segv   a kernel dereferences a wild pointer it computed
 *   kernel-stack  a kernel recurses until its stack overflows
 *   head-abort    the host calls abort() with nowait tasks in flight
 *   head-segv     the host dereferences NULL with nowait tasks in flight
 *   head-exit     the host calls exit(3) with nowait tasks in flight
 *   ok            no fault: the chain's result is checked
 * Each fault must end the job with a line naming it, fast. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 100000
#define TASKS 8

#pragma omp declare target
static long deep(long n, volatile char *prev)
{
  volatile char pad[4096];
  pad[0] = (char)n;
  pad[4095] = prev ? prev[0] : 0;
  return n <= 0 ? pad[0] : deep(n - 1, pad) + pad[4095];
}
#pragma omp end declare target

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "ok";
  static double a[TASKS][N];
  long bad = strcmp(mode, "kernel-segv") == 0 ? 0x10 : 0;
  long depth = strcmp(mode, "kernel-stack") == 0 ? 1L << 40 : 4;

  for (int t = 0; t < TASKS; t++)
    for (int i = 0; i < N; i++)
      a[t][i] = t;
  /* head-exit: rounds of tasks, so that some are still being recorded
   * by the team's threads when the host exits. */
  int rounds = strcmp(mode, "head-exit") == 0 ? 16 : 1;
#pragma omp parallel
#pragma omp single
  {
    for (int t = 0; t < TASKS * rounds; t++) {
      double *row = a[t % TASKS];
#pragma omp target map(tofrom : row[0 : N]) depend(inout : a[t % TASKS][0]) nowait             \
    firstprivate(bad, depth)
      {
        for (int i = 0; i < N; i++)
          row[i] = row[i] * 2.0 + 1.0;
        if (bad && row[0] == 2.0 * 3 + 1.0) /* task 3 only */
          *(volatile double *)bad = 1.0;
        row[1] += (double)deep(depth, NULL) * 0.0;
      }
    }
    if (strcmp(mode, "head-abort") == 0) {
      fprintf(stderr, "faults: host aborts\n");
      abort();
    }
    if (strcmp(mode, "head-segv") == 0) {
      fprintf(stderr, "faults: host dereferences NULL\n");
      volatile int *volatile nowhere = NULL;
      *nowhere = 1;
    }
    if (strcmp(mode, "head-exit") == 0) {
      fprintf(stderr, "faults: host calls exit(3)\n");
      exit(3);
    }
  }
  for (int t = 0; t < TASKS; t++)
    for (int i = 0; i < N; i += 997)
      if (a[t][i] != 2.0 * t + 1.0) {
        printf("FAIL a[%d][%d] = %g\n", t, i, a[t][i]);
        return 1;
      }
  printf("PASS faults ok\n");
  return 0;
}
