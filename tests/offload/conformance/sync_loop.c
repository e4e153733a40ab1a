/*
 * sync_loop.c - a loop of synchronous kernels over arrays kept on the
 * device (the shape of STREAM): copy, scale, add, triad and a dot product,
 * PASSES times over three arrays mapped once with `target enter data`.
 *
 * The triad of the first HEAVY passes repeats its loop REPEAT times (the
 * same values each time): it runs far longer there than later, as a first
 * run with its thread start-up does, or a kernel whose work shrinks.  A
 * runtime that learns kernel costs then expects the light triads to take
 * long, and must still see that the worker holding the arrays is idle
 * once they are done: off_rt_sync_loop_keeps_data:np3 (tests/offload/runtime)
 * checks, under the default scheduler, that no byte moved between workers.
 *
 * Unsigned arithmetic (wraps, exact): a stale or misplaced array changes
 * the dot of its pass and the final arrays, compared with the host's.
 */
#include <stdlib.h>

#include "offload_check.h"

#define N 65536
#define PASSES 24
#define HEAVY 3
#define REPEAT 300

static unsigned a[N], b[N], c[N];
static unsigned ra[N], rb[N], rc[N];

static void k_copy(void) {
#pragma omp target teams distribute parallel for map(tofrom : a, c)
  for (int j = 0; j < N; j++)
    c[j] = a[j];
}

static void k_scale(void) {
#pragma omp target teams distribute parallel for map(tofrom : b, c)
  for (int j = 0; j < N; j++)
    b[j] = 3u * c[j];
}

static void k_add(void) {
#pragma omp target teams distribute parallel for map(tofrom : a, b, c)
  for (int j = 0; j < N; j++)
    c[j] = a[j] + b[j];
}

/* A triad whose work grows with repeat (a recurrence no compiler folds
 * into a closed form); repeat 1 is a = b + 3c. */
#pragma omp declare target
static unsigned triad(unsigned x, unsigned y, int repeat) {
  unsigned v = 0;
  for (int r = 0; r < repeat; r++)
    v = (v * 2654435761u + (unsigned)r) ^ (x + 3u * y);
  return v;
}
#pragma omp end declare target

static void k_triad(int repeat) {
#pragma omp target teams distribute parallel for map(tofrom : a, b, c)
  for (int j = 0; j < N; j++)
    a[j] = triad(b[j], c[j], repeat);
}

static unsigned long long k_dot(void) {
  unsigned long long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum)            \
    map(tofrom : a, b) map(tofrom : sum)
  for (int j = 0; j < N; j++)
    sum += (unsigned long long)a[j] * b[j];
  return sum;
}

int main(void) {
  for (int j = 0; j < N; j++) {
    ra[j] = a[j] = (unsigned)j * 2654435761u;
    rb[j] = b[j] = 2u * (unsigned)j + 1u;
    rc[j] = c[j] = 0;
  }
#pragma omp target enter data map(to : a, b, c)
  for (int p = 0; p < PASSES; p++) {
    int repeat = p < HEAVY ? REPEAT : 1;
    k_copy();
    k_scale();
    k_add();
    k_triad(repeat);
    unsigned long long dot = k_dot();
    unsigned long long want = 0;
    for (int j = 0; j < N; j++) {
      rc[j] = ra[j];
      rb[j] = 3u * rc[j];
      rc[j] = ra[j] + rb[j];
      ra[j] = triad(rb[j], rc[j], repeat);
      want += (unsigned long long)ra[j] * rb[j];
    }
    CHECK_AT("dot of pass", p, dot, want);
  }
#pragma omp target exit data map(from : a, b, c)
  for (int j = 0; j < N; j++) {
    CHECK_AT("a", j, a[j], ra[j]);
    CHECK_AT("b", j, b[j], rb[j]);
    CHECK_AT("c", j, c[j], rc[j]);
  }
  return finish("sync_loop");
}
