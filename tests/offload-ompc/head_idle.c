/*
 * head_idle.c - the head's OpenMP threads sleep while workers compute.
 *
 * A team of 4 threads on the head: one records a target task that keeps a
 * worker busy for 300 ms and waits for it; the other three wait at the
 * end of the single construct.  The head process must use less than a
 * quarter of that wall time in CPU time.
 *
 * Why: by default libomp keeps idle threads spinning after barriers and
 * task waits; on a node the head shares with workers that spinning takes
 * the cores the kernels run on (it halved Task Bench's throughput on two
 * cores).  The runtime makes the head's threads wait passively unless the
 * user set OMP_WAIT_POLICY, KMP_BLOCKTIME or KMP_LIBRARY, so the same
 * program run with OMP_WAIT_POLICY=active must exceed the limit (the test
 * list runs it that way and expects the failure line).
 *
 * Usage: head_idle (meaningful with 2 or more ranks: with one rank the
 * head runs the kernel itself and the check is skipped).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define BUSY_NS 300000000LL

#pragma omp declare target
static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spin for BUSY_NS on the worker; returns the number of rounds. */
static long busy(void) {
  long rounds = 0;
  long long end = now_ns() + BUSY_NS;
  while (now_ns() < end)
    rounds++;
  return rounds;
}
#pragma omp end declare target

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static int ranks(void) {
  const char *s = getenv("PMI_SIZE");
  if (!s)
    s = getenv("OMPI_COMM_WORLD_SIZE");
  return s ? atoi(s) : 1;
}

int main(void) {
  long rounds = 0;
  /* Warm-up: the first region starts libomp's threads and the workers'. */
#pragma omp target map(tofrom : rounds)
  rounds = 1;

  double cpu0 = cpu_seconds();
  long long t0 = now_ns();
#pragma omp parallel num_threads(4)
#pragma omp single
  {
#pragma omp target nowait map(tofrom : rounds)
    rounds = busy();
#pragma omp taskwait
  }
  double wall = (double)(now_ns() - t0) * 1e-9;
  double cpu = cpu_seconds() - cpu0;

  if (rounds <= 1) {
    fprintf(stderr, "FAIL head_idle: the kernel did not run (rounds %ld)\n", rounds);
    return 1;
  }
  if (wall < BUSY_NS * 1e-9) {
    fprintf(stderr, "FAIL head_idle: taskwait returned after %.3f s, before the "
                    "%.3f s kernel could finish\n", wall, BUSY_NS * 1e-9);
    return 1;
  }
  if (ranks() < 2) {
    printf("PASS head_idle (one rank: the head ran the kernel, CPU not checked)\n");
    return 0;
  }
  printf("head CPU %.3f s over %.3f s of wall time\n", cpu, wall);
  if (cpu > 0.25 * wall) {
    fprintf(stderr, "FAIL head_idle: head used %.3f s of CPU while waiting %.3f s "
                    "for a worker\n", cpu, wall);
    return 1;
  }
  printf("PASS head_idle\n");
  return 0;
}
