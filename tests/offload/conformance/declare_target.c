/*
 * declare_target.c - `declare target` variables and functions.
 *
 * Checks that declare target globals (a scalar and an array) have a
 * separate device copy that starts with the static initializer, is not
 * changed by host writes until `target update to`, keeps device writes
 * until `target update from` (whole array and a section), and is not
 * implicitly mapped by target regions that use it; and that declare
 * target functions (one in a begin/end block that reads a declare target
 * global, one named in `declare target to(...)` that calls another) can be
 * called from a target region, also inside a parallel loop, and give the
 * same results as on the host.
 *
 * Why: an MPI-backed device must ship and locate these globals in the
 * device image and keep them separate from the host's; a runtime that
 * aliases them to the host copy or re-sends host values implicitly fails
 * the "stale copy" checks below.
 */
#include <stdio.h>

#include "offload_check.h"

#define N 256

#pragma omp declare target
int g_scale = 5;
int g_arr[N];
int g_table[8] = {3, 1, 4, 1, 5, 9, 2, 6};

int scaled_plus_one(int x) { return x * g_scale + 1; }
#pragma omp end declare target

/* a function made available on the device with the list form */
int mix(int x, int y);
#pragma omp declare target to(mix)
int mix(int x, int y) { return scaled_plus_one(x) * 3 - y; }

static int out[N];

int main(void) {
  int r = 0;

  /* the device copy starts with the initializer; a host write alone does
   * not reach it */
  g_scale = 7;
#pragma omp target map(from : r)
  { r = g_scale; }
  CHECK("declare target scalar starts with its initializer", r, 5);
  int tsum = 0;
#pragma omp target map(from : tsum)
  {
    int acc = 0;
    for (int i = 0; i < 8; i++)
      acc += g_table[i] * (i + 1);
    tsum = acc;
  }
  CHECK("declare target array starts with its initializer", tsum,
        3 + 2 + 12 + 4 + 25 + 54 + 14 + 48);

#pragma omp target update to(g_scale)
#pragma omp target map(from : r)
  { r = g_scale; }
  CHECK("target update to(scalar)", r, 7);

  /* array: update to, modify on the device with a declare target
   * function inside a parallel loop, update from */
  for (int i = 0; i < N; i++)
    g_arr[i] = i;
#pragma omp target update to(g_arr)
  for (int i = 0; i < N; i++)
    g_arr[i] = -1; /* host only: the device keeps 0..N-1 */
#pragma omp target
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      g_arr[i] = scaled_plus_one(g_arr[i]);
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("no implicit copy back of a declare target array", i, g_arr[i],
             -1);
#pragma omp target update from(g_arr[10 : 20])
  for (int i = 0; i < N; i++)
    CHECK_AT("target update from(section) of declare target array", i,
             g_arr[i], (i >= 10 && i < 30) ? 7 * i + 1 : -1);
#pragma omp target update from(g_arr)
  for (int i = 0; i < N; i++)
    CHECK_AT("target update from(whole declare target array)", i, g_arr[i],
             7 * i + 1);

  /* section update to */
  for (int i = 0; i < N; i++)
    g_arr[i] = 1000 + i;
#pragma omp target update to(g_arr[100 : 50])
#pragma omp target map(from : out)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      out[i] = g_arr[i];
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("target update to(section) of declare target array", i, out[i],
             (i >= 100 && i < 150) ? 1000 + i : 7 * i + 1);

  /* device writes the scalar; the host sees it only after update from */
#pragma omp target
  { g_scale = 11; }
  CHECK("host copy of declare target scalar unchanged", g_scale, 7);
#pragma omp target update from(g_scale)
  CHECK("target update from(scalar)", g_scale, 11);

  /* declare target functions: device results equal host results */
#pragma omp target map(from : out)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      out[i] = mix(i, i % 7);
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("declare target function result", i, out[i], mix(i, i % 7));
  for (int i = 0; i < N; i++)
    CHECK_AT("declare target function value", i, out[i],
             (i * 11 + 1) * 3 - i % 7);

  /* different host and device values of g_scale give different results */
  g_scale = 2; /* host only */
  int dres = 0;
#pragma omp target map(from : dres)
  { dres = scaled_plus_one(10); }
  CHECK("function on device uses the device copy of the global", dres, 111);
  CHECK("function on host uses the host copy of the global",
        scaled_plus_one(10), 21);

  return finish("declare_target");
}
