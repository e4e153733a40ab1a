/*
 * update_nowait.c - asynchronous data-movement directives.
 *
 * Checks `target enter data nowait`, `target update to/from nowait` and
 * `target exit data nowait`, each with depend clauses, ordered with
 * `target nowait` kernels and host tasks on the same dependence objects:
 * two independent pipelines (on arrays a and b) run concurrently, each
 * going enter -> kernel -> host task writing the host copy -> update to
 * -> kernel -> update from -> host task reading -> kernel -> exit data
 * (from), plus a pipeline that ends with exit data map(delete) and must
 * not copy back. Everything runs inside parallel + single and is finished
 * with taskwait.
 *
 * Why: these directives become tasks when nowait is given, so a runtime
 * has to defer the transfers and order them exactly by the dependences.
 * Each step is an affine update on unsigned integers that does not commute
 * with its neighbours, and host copies change between steps, so a missing,
 * early or late transfer gives a different final value.
 */
#include <stdio.h>

#include "offload_check.h"

#define N 4096

static unsigned a[N], b[N], c[N];
static unsigned snap_a[N], snap_b[N], host_seen_a[N];

/* one pipeline on array x (static storage, so the deferred tasks may
 * outlive this call); k makes the pipelines compute different values;
 * seen receives the host copy just before the update to, snap the host's
 * view after the update from */
static void pipeline(unsigned *x, unsigned k, unsigned *seen,
                     unsigned *snap) {
#pragma omp target enter data map(to : x[0 : N]) depend(out : x[0]) nowait
#pragma omp target nowait depend(inout : x[0])
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      x[i] = x[i] * 3u + k;
  }
#pragma omp task depend(inout : x[0])
  {
    /* the host copy is still the original: nothing came back yet */
    for (int i = 0; i < N; i++) {
      seen[i] = x[i];
      x[i] = x[i] + 1000u * k;
    }
  }
#pragma omp target update to(x[0 : N]) depend(inout : x[0]) nowait
#pragma omp target nowait depend(inout : x[0])
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      x[i] = x[i] * 5u + 7u;
  }
#pragma omp target update from(x[0 : N]) depend(inout : x[0]) nowait
#pragma omp task depend(in : x[0])
  {
    for (int i = 0; i < N; i++)
      snap[i] = x[i];
  }
#pragma omp target nowait depend(inout : x[0])
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      x[i] = x[i] * 7u + k;
  }
#pragma omp target exit data map(from : x[0 : N]) depend(inout : x[0]) nowait
}

static unsigned seen_b[N];

int main(void) {
  for (int i = 0; i < N; i++) {
    a[i] = (unsigned)i;
    b[i] = (unsigned)(N - i);
    c[i] = (unsigned)(2 * i);
  }

#pragma omp parallel num_threads(4)
#pragma omp single
  {
    pipeline(a, 1u, host_seen_a, snap_a);
    pipeline(b, 2u, seen_b, snap_b);

    /* delete at the end: the device result must not come back, but an
     * update from before it must */
#pragma omp target enter data map(to : c) depend(out : c[0]) nowait
#pragma omp target nowait depend(inout : c[0])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        c[i] = c[i] * 11u + 1u;
    }
#pragma omp target update from(c[0 : N / 2]) depend(inout : c[0]) nowait
#pragma omp target nowait depend(inout : c[0])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        c[i] = 0u;
    }
#pragma omp target exit data map(delete : c) depend(inout : c[0]) nowait
#pragma omp taskwait
  }

  for (int i = 0; i < N; i++) {
    unsigned v;
    /* pipeline a, k = 1 */
    CHECK_AT("a: host copy before update to", i, host_seen_a[i],
             (unsigned)i);
    v = ((unsigned)i + 1000u) * 5u + 7u;
    CHECK_AT("a: host view after update from", i, snap_a[i], v);
    CHECK_AT("a: result after exit data from", i, a[i], v * 7u + 1u);
    /* pipeline b, k = 2 */
    CHECK_AT("b: host copy before update to", i, seen_b[i],
             (unsigned)(N - i));
    v = ((unsigned)(N - i) + 2000u) * 5u + 7u;
    CHECK_AT("b: host view after update from", i, snap_b[i], v);
    CHECK_AT("b: result after exit data from", i, b[i], v * 7u + 2u);
    /* c */
    unsigned cexp = i < N / 2 ? (unsigned)(2 * i) * 11u + 1u
                              : (unsigned)(2 * i);
    CHECK_AT("c: update from of half, then exit data delete", i, c[i], cexp);
  }
  return finish("update_nowait");
}
