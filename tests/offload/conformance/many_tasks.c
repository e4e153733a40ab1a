/*
 * many_tasks.c - thousands of small asynchronous target tasks.
 *
 * Checks that 4000 independent `target nowait` tasks, each mapping the
 * whole (already present) array with map(tofrom:) and writing only its
 * own element, all complete by taskwait and leave the host copy alone
 * until target exit data; that 2 x 2000 tasks chained pairwise with
 * depend on distinct elements run each pair in order; and that 1000
 * tasks each mapping its own single-element section of a not previously
 * mapped array (fresh allocation, copy in, copy out per task) all arrive.
 *
 * Why: a runtime that turns every target task into messages to a remote
 * process must cope with a large number of in-flight tasks, concurrent
 * reference-count updates on the same mapping and many small concurrent
 * mappings of neighbouring addresses, without losing or mixing up any.
 */
#include <stdio.h>

#include "offload_check.h"

#define NT 4000
#define NP 2000
#define NS 1000

static int a[NT];
static int b[NP];
static int c[NS];

int main(void) {
  for (int i = 0; i < NT; i++)
    a[i] = i;
  for (int i = 0; i < NP; i++)
    b[i] = i + 1;
  for (int i = 0; i < NS; i++)
    c[i] = 2 * i;

#pragma omp target enter data map(to : a, b)

#pragma omp parallel
#pragma omp single
  {
    /* 4000 independent tasks on one present mapping */
    for (int i = 0; i < NT; i++) {
#pragma omp target nowait map(tofrom : a) firstprivate(i)
      { a[i] = a[i] * 3 + 7; }
    }

    /* 2000 pairs ordered per element: (v * 5 + 1) then (v * v % 9973) */
    for (int i = 0; i < NP; i++) {
#pragma omp target nowait map(tofrom : b) firstprivate(i) depend(out : b[i])
      { b[i] = b[i] * 5 + 1; }
#pragma omp target nowait map(tofrom : b) firstprivate(i) depend(inout : b[i])
      { b[i] = b[i] * b[i] % 9973; }
    }

    /* 1000 tasks with their own one-element mapping each */
    for (int i = 0; i < NS; i++) {
#pragma omp target nowait map(tofrom : c[i : 1]) firstprivate(i)
      { c[i] = c[i] * c[i] + i; }
    }
#pragma omp taskwait
  }

  /* a and b are still mapped: nothing may have been copied back yet */
  for (int i = 0; i < NT; i++)
    CHECK_AT("no copy back before exit data", i, a[i], i);
  for (int i = 0; i < NP; i++)
    CHECK_AT("no copy back before exit data (pairs)", i, b[i], i + 1);

#pragma omp target exit data map(from : a, b)

  for (int i = 0; i < NT; i++)
    CHECK_AT("independent task result", i, a[i], 3 * i + 7);
  for (int i = 0; i < NP; i++) {
    int v = (i + 1) * 5 + 1;
    CHECK_AT("ordered pair result", i, b[i], v * v % 9973);
  }
  for (int i = 0; i < NS; i++)
    CHECK_AT("per-task one-element mapping", i, c[i], 4 * i * i + i);
  return finish("many_tasks");
}
