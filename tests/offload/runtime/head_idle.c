/*
 * head_idle.c - the head's OpenMP threads sleep while workers compute.
 *
 * A team of 4 threads on the head: one records a target task that keeps a
 * worker busy for 300 ms and waits for it; the other three wait at the
 * end of the single construct.  Two checks:
 *  - asleep: the three waiting threads are each seen asleep (state S in
 *    /proc/self/task/TID/stat) while the kernel runs.  The recording
 *    thread looks until they are, for as long as a loaded machine needs
 *    (SLEEP_LIMIT_S at most): a thread that waits passively gets there as
 *    soon as it gets a CPU, a spinning one never does, whatever the load.
 *  - CPU: the head process uses less than a quarter of the wait's wall
 *    time in CPU time.  Load only lowers that figure, so it cannot fail
 *    for a busy machine; it catches threads that spin for a while before
 *    they sleep (libomp's default KMP_BLOCKTIME of 200 ms), which the
 *    first check does not.
 *
 * Why: by default libomp keeps idle threads spinning after barriers and
 * task waits; on a node the head shares with workers that spinning takes
 * the cores the kernels run on (it halved Task Bench's throughput on two
 * cores).  The runtime makes the head's threads wait passively unless the
 * user set OMP_WAIT_POLICY, KMP_BLOCKTIME or KMP_LIBRARY, so the same
 * program run with OMP_WAIT_POLICY=active must fail (the test list runs
 * it that way and expects a failure line: the asleep check's, which does
 * not depend on how much CPU the spinning threads get).
 *
 * Usage: head_idle (meaningful with 2 or more ranks: with one rank the
 * head runs the kernel itself and the checks are skipped).
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define BUSY_NS 300000000LL
#define TEAM 4
#define SLEEP_LIMIT_S 5

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

/* The thread's scheduler state letter ('R' running or runnable, 'S'
 * asleep, ...), or '?' if unknown. */
static char thread_state(pid_t tid) {
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
  FILE *f = fopen(path, "r");
  if (!f)
    return '?';
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the name may hold spaces */
  return p && p[1] == ' ' ? p[2] : '?';
}

/* Whether every team thread but `self` was seen asleep at one look. */
static int others_asleep(const pid_t *tids, int n, pid_t self) {
  for (int i = 0; i < n; i++)
    if (tids[i] != self && thread_state(tids[i]) != 'S')
      return 0;
  return 1;
}

int main(void) {
  long rounds = 0;
  /* Warm-up: the first region starts libomp's threads and the workers'. */
#pragma omp target map(tofrom : rounds)
  rounds = 1;

  int multi = ranks() >= 2;
  pid_t tids[TEAM];
  int nteam = 0, asleep = 0;
  double wait_asleep = 0;
  double cpu0 = cpu_seconds();
  long long t0 = now_ns();
#pragma omp parallel num_threads(TEAM)
  {
    tids[omp_get_thread_num()] = gettid();
#pragma omp barrier
#pragma omp single
    {
      nteam = omp_get_num_threads();
#pragma omp target nowait map(tofrom : rounds)
      rounds = busy();
      if (multi) {
        long long t1 = now_ns(), limit = t1 + SLEEP_LIMIT_S * 1000000000LL;
        while (!(asleep = others_asleep(tids, nteam, gettid())) && now_ns() < limit) {
          struct timespec nap = {0, 1000000};
          nanosleep(&nap, NULL);
        }
        wait_asleep = (double)(now_ns() - t1) * 1e-9;
      }
#pragma omp taskwait
    }
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
  if (!multi) {
    printf("PASS head_idle (one rank: the head ran the kernel, nothing checked)\n");
    return 0;
  }
  printf("head: %d waiting threads %s after %.3f s; CPU %.3f s over %.3f s "
         "of wall time\n", nteam - 1, asleep ? "asleep" : "not all asleep",
         wait_asleep, cpu, wall);
  if (!asleep) {
    fprintf(stderr, "FAIL head_idle: head threads never slept: the %d waiting "
                    "team threads were not all asleep at any look in %d s\n",
            nteam - 1, SLEEP_LIMIT_S);
    return 1;
  }
  if (cpu > 0.25 * wall) {
    fprintf(stderr, "FAIL head_idle: head used %.3f s of CPU while waiting %.3f s "
                    "for a worker\n", cpu, wall);
    return 1;
  }
  printf("PASS head_idle\n");
  return 0;
}
