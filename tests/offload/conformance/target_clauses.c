/*
 * target_clauses.c - clauses of `target` whose meaning a recording runtime
 * could change without an error (docs/clauses.md lists every clause and
 * why the others are safe).
 *
 * Each case makes the order of events visible: a target task that falls
 * back to the host reads what a recorded predecessor copies back; a scalar
 * mapped tofrom by defaultmap is read after a taskwait; mutually exclusive
 * updates must all land; depobj and inoutset dependences order tasks whose
 * updates do not commute.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "offload_check.h"

/* A nowait target task whose region runs on the host (if(false), the host
 * device) after a recorded predecessor that copies its result back. */
static void host_fallback_after_device(void) {
  int x = 1, y = 0, z = 0, w = 0;
#pragma omp parallel
#pragma omp single
  {
#pragma omp target map(tofrom : x) nowait depend(out : x)
    x = 10;
#pragma omp target if (0) map(tofrom : x) map(from : y) nowait depend(in : x)
    y = x + 1;
#pragma omp target device(omp_get_initial_device()) map(tofrom : x) map(from : z) \
    nowait depend(in : x)
    z = x + 2;
#pragma omp target map(tofrom : x) nowait depend(inout : x)
    x *= 3;
#pragma omp target if (0) map(from : w) map(to : x) depend(in : x)
    w = x;
#pragma omp taskwait
  }
  CHECK("if(false) target after a device task", y, 11);
  CHECK("host-device target after a device task", z, 12);
  CHECK("synchronous if(false) target", w, 30);
  CHECK("device task's result", x, 30);
}

/* defaultmap(tofrom: scalar): the scalar comes back from a nowait task. */
static void defaultmap_scalar(void) {
  int s = 5;
  double d = 1.5;
#pragma omp parallel
#pragma omp single
  {
#pragma omp target defaultmap(tofrom : scalar) nowait depend(inout : s)
    {
      s = s * 7;
      d = d * 4;
    }
#pragma omp target defaultmap(tofrom : scalar) nowait depend(inout : s)
    s = s + 1;
#pragma omp taskwait
  }
  CHECK("defaultmap(tofrom: scalar) chain", s, 36);
  CHECK_D("defaultmap(tofrom: scalar) double", d, 6.0);
}

/* mutexinoutset: every update lands (they may run in any order, one at a
 * time); a later inout task sees all of them. */
static void mutexinoutset_updates(void) {
  long acc = 0;
#pragma omp parallel
#pragma omp single
  {
#pragma omp target enter data map(to : acc)
    for (int i = 0; i < 8; i++) {
#pragma omp target map(tofrom : acc) nowait depend(mutexinoutset : acc) firstprivate(i)
      acc += 1L << i;
    }
#pragma omp target map(tofrom : acc) nowait depend(inout : acc)
    acc *= 2;
#pragma omp target exit data map(from : acc) depend(in : acc)
  }
  CHECK("mutexinoutset updates then inout", acc, 2 * 255);
}

/* inoutset: a set of commuting updates on separate elements, ordered
 * after a writer and before a reader of the whole array. */
static void inoutset_updates(void) {
  int a[8];
  for (int i = 0; i < 8; i++)
    a[i] = i;
  int sum = 0;
#pragma omp parallel
#pragma omp single
  {
#pragma omp target enter data map(to : a)
#pragma omp target nowait depend(out : a)
    for (int i = 0; i < 8; i++)
      a[i] *= 10;
    for (int k = 0; k < 8; k++) {
#pragma omp target nowait depend(inoutset : a) firstprivate(k)
      a[k] += k;
    }
#pragma omp target map(from : sum) nowait depend(in : a)
    {
      sum = 0;
      for (int i = 0; i < 8; i++)
        sum += a[i];
    }
#pragma omp taskwait
#pragma omp target exit data map(release : a)
  }
  CHECK("inoutset between a writer and a reader", sum, 11 * 28);
}

/* depobj: dependences built once and used by target tasks. */
static void depobj_order(void) {
  int v = 1;
  omp_depend_t wr, rd;
#pragma omp depobj(wr) depend(inout : v)
#pragma omp depobj(rd) depend(in : v)
  int seen = 0;
#pragma omp parallel
#pragma omp single
  {
#pragma omp target enter data map(to : v)
#pragma omp target map(tofrom : v) nowait depend(depobj : wr)
    v = v * 5 + 1;
#pragma omp target map(tofrom : v) nowait depend(depobj : wr)
    v = v * 3;
#pragma omp target map(from : seen) map(tofrom : v) nowait depend(depobj : rd)
    seen = v;
#pragma omp taskwait
#pragma omp target exit data map(from : v)
  }
#pragma omp depobj(wr) destroy
#pragma omp depobj(rd) destroy
  CHECK("depobj inout chain read", seen, 18);
  CHECK("depobj inout chain back", v, 18);
}

/* has_device_addr, private, firstprivate arrays, lastprivate, allocate. */
static void data_clauses(void) {
  int buf[16];
  for (int i = 0; i < 16; i++)
    buf[i] = i;
  int got = 0, last = -1, priv = 42;
  int fp[4] = {1, 2, 3, 4};
#pragma omp target enter data map(to : buf)
#pragma omp target data use_device_addr(buf)
  {
#pragma omp target has_device_addr(buf) map(from : got)
    got = buf[3] + buf[15];
  }
#pragma omp target exit data map(release : buf)
  CHECK("has_device_addr", got, 18);

#pragma omp target private(priv) map(from : got)
  {
    priv = 7;
    got = priv;
  }
  CHECK("private value inside", got, 7);
  CHECK("private leaves the original", priv, 42);

#pragma omp target firstprivate(fp) map(from : got)
  {
    got = fp[0] * 1000 + fp[3];
    fp[0] = 9; /* the copy only */
  }
  CHECK("firstprivate array", got, 1004);
  CHECK("firstprivate array left alone", fp[0], 1);

#pragma omp target teams distribute parallel for lastprivate(last) map(tofrom : last)
  for (int i = 0; i < 100; i++)
    last = i * 2;
  CHECK("lastprivate on the combined construct", last, 198);

  long s = 0;
#pragma omp target map(tofrom : s) uses_allocators(omp_default_mem_alloc)
  {
    long *tmp = omp_alloc(64 * sizeof(long), omp_default_mem_alloc);
    for (int i = 0; i < 64; i++)
      tmp[i] = i;
    for (int i = 0; i < 64; i++)
      s += tmp[i];
    omp_free(tmp, omp_default_mem_alloc);
  }
  CHECK("uses_allocators and omp_alloc in a kernel", s, 63 * 64 / 2);
}

/* num_teams / thread_limit are upper bounds the kernel sees. */
static void launch_bounds(void) {
  int teams = 0, threads = 0;
#pragma omp target teams num_teams(2) thread_limit(2) map(from : teams, threads)
  {
    if (omp_get_team_num() == 0) {
      teams = omp_get_num_teams();
#pragma omp parallel
#pragma omp single
      threads = omp_get_num_threads();
    }
  }
  CHECK("num_teams(2) is an upper bound", teams >= 1 && teams <= 2, 1);
  CHECK("thread_limit(2) is an upper bound", threads >= 1 && threads <= 2, 1);
}

int main(void) {
  for (int rep = 0; rep < 2; rep++) {
    host_fallback_after_device();
    defaultmap_scalar();
    mutexinoutset_updates();
    inoutset_updates();
    depobj_order();
    data_clauses();
    launch_bounds();
  }
  return finish("target_clauses");
}
