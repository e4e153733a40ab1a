/*
 * task_reduction.c - target tasks that join task reductions.
 *
 * Every contribution has its own weight (a power of two, or a distinct
 * prime factor for products), so a lost, repeated or stale contribution
 * changes the checked value.  Target tasks and host tasks add to the same
 * items; the device kernels also read data mapped separately, so a kernel
 * that ran on the wrong input shows too.
 *
 * Each target construct joins one reduction: with two in_reduction items
 * clang 19 compiles the target task's body to `unreachable` (it crashes on
 * LLVM's own runtime too).  A combined construct's `reduction` with nowait
 * hangs on LLVM's runtime, so that case is in tests/offload/runtime.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "offload_check.h"

#define NT 6 /* target tasks per group */

/* taskgroup task_reduction, target tasks with and without nowait, host
 * tasks beside them. */
static void group_sum(int nowait_targets) {
  long sum = 0;
  double dsum = 0.25;
#pragma omp parallel
#pragma omp single
  {
#pragma omp taskgroup task_reduction(+ : sum) task_reduction(+ : dsum)
    {
      for (int i = 0; i < NT; i++) {
        if (nowait_targets) {
#pragma omp target in_reduction(+ : sum) nowait firstprivate(i)
          sum += 1L << i;
#pragma omp target in_reduction(+ : dsum) nowait firstprivate(i)
          dsum += 0.5 * (double)(1 << i);
        } else {
#pragma omp target in_reduction(+ : sum) firstprivate(i)
          sum += 1L << i;
#pragma omp target in_reduction(+ : dsum) firstprivate(i)
          dsum += 0.5 * (double)(1 << i);
        }
#pragma omp task in_reduction(+ : sum) firstprivate(i)
        sum += 1L << (NT + i);
      }
    }
  }
  CHECK(nowait_targets ? "taskgroup sum, target nowait" : "taskgroup sum, target",
        sum, (1L << (2 * NT)) - 1);
  CHECK_D("taskgroup double sum", dsum, 0.25 + 0.5 * (double)((1 << NT) - 1));
}

/* A product and a maximum; the original's value takes part. */
static void group_prod_max(void) {
  static const long primes[NT] = {2, 3, 5, 7, 11, 13};
  long prod = 17, mx = -5;
#pragma omp parallel
#pragma omp single
#pragma omp taskgroup task_reduction(* : prod) task_reduction(max : mx)
  {
    for (int i = 0; i < NT; i++) {
      long p = primes[i];
#pragma omp target in_reduction(* : prod) nowait firstprivate(p)
      prod *= p;
#pragma omp target in_reduction(max : mx) nowait firstprivate(i)
      mx = mx > 10 * i ? mx : 10 * i;
    }
  }
  CHECK("taskgroup product", prod, 17L * 2 * 3 * 5 * 7 * 11 * 13);
  CHECK("taskgroup max", mx, 10 * (NT - 1));
}

/* Nested groups: the inner group's tasks join both reductions; the outer
 * one ends after the inner, and both see every contribution. */
static void nested_groups(void) {
  long a = 0, b = 0;
#pragma omp parallel
#pragma omp single
#pragma omp taskgroup task_reduction(+ : a)
  {
#pragma omp target in_reduction(+ : a) nowait
    a += 1000;
#pragma omp taskgroup task_reduction(+ : b)
    {
      for (int i = 0; i < NT; i++) {
#pragma omp target in_reduction(+ : a) nowait firstprivate(i)
        a += 1L << i;
#pragma omp target in_reduction(+ : b) nowait firstprivate(i)
        b += 1L << (NT - 1 - i);
      }
    }
    CHECK("inner group's sum at its end", b, (1L << NT) - 1);
#pragma omp task in_reduction(+ : a)
    a += 5000;
  }
  CHECK("outer group's sum", a, 6000 + (1L << NT) - 1);
}

/* A kernel that also reads mapped data and depends on a producer. */
static void with_data(void) {
  int v[64];
  for (int k = 0; k < 64; k++)
    v[k] = k;
  long sum = 0;
#pragma omp parallel
#pragma omp single
  {
#pragma omp target enter data map(to : v)
#pragma omp target nowait depend(out : v)
    for (int k = 0; k < 64; k++)
      v[k] *= 3;
#pragma omp taskgroup task_reduction(+ : sum)
    {
      for (int i = 0; i < 4; i++) {
#pragma omp target in_reduction(+ : sum) nowait depend(in : v) firstprivate(i)
        for (int k = 16 * i; k < 16 * i + 16; k++)
          sum += v[k];
      }
    }
#pragma omp target exit data map(from : v)
  }
  CHECK("sum over device data", sum, 3L * 63 * 64 / 2);
  CHECK("device data back", v[63], 189);
}

/* taskloop reduction: each generated task runs a target region that
 * joins the taskloop's reduction. */
static void taskloop_sum(void) {
  long sum = 0;
#pragma omp parallel
#pragma omp single
#pragma omp taskloop reduction(+ : sum) num_tasks(4)
  for (int i = 0; i < 8; i++) {
#pragma omp target in_reduction(+ : sum) firstprivate(i)
    sum += 1L << i;
  }
  CHECK("taskloop reduction", sum, 255);
}

/* parallel reduction(task, +: x): target tasks of every thread join it. */
static void parallel_task_modifier(void) {
  long x = 0;
  int nthreads = 0;
#pragma omp parallel reduction(task, + : x)
  {
#pragma omp single
    nthreads = omp_get_num_threads();
    int t = omp_get_thread_num();
#pragma omp target in_reduction(+ : x) nowait firstprivate(t)
    x += 100 + t;
#pragma omp task in_reduction(+ : x) firstprivate(t)
    x += 1;
  }
  long exp = 0;
  for (int t = 0; t < nthreads; t++)
    exp += 101 + t;
  CHECK("parallel reduction(task)", x, exp);
}

/* reduction on the combined construct. */
static void combined_reduction(void) {
  long s = 7;
#pragma omp target teams distribute parallel for reduction(+ : s)
  for (int i = 0; i < 1000; i++)
    s += i;
  CHECK("target teams distribute parallel for reduction", s, 7 + 999L * 1000 / 2);
}

int main(int argc, char **argv) {
  /* argv[1], if given: run only that case (for bisecting). */
  int only = argc > 1 ? atoi(argv[1]) : -1;
  for (int rep = 0; rep < 3; rep++) {
    if (only < 0 || only == 0) group_sum(1);
    if (only < 0 || only == 1) group_sum(0);
    if (only < 0 || only == 2) group_prod_max();
    if (only < 0 || only == 3) nested_groups();
    if (only < 0 || only == 4) with_data();
    if (only < 0 || only == 5) taskloop_sum();
    if (only < 0 || only == 6) parallel_task_modifier();
    if (only < 0 || only == 7) combined_reduction();
  }
  return finish("task_reduction");
}
