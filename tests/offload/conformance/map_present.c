/*
 * map_present.c - the `present` map-type modifier (success path only).
 *
 * Checks that map(present, ...) on data that is already mapped succeeds
 * and binds to the existing device copy without a new transfer: whole
 * arrays, sub-sections of a mapped array, scalars and structs mapped with
 * target enter data, data mapped by an enclosing target data region,
 * `present` on target data / enter data / exit data, the `present`
 * motion modifier of target update, and a declare target variable.
 *
 * Why: `present` is how applications assert "this is already on the
 * device"; a runtime must resolve it against its mapping table (including
 * sub-ranges) instead of allocating or copying. The host changes its copy
 * after mapping, so a hidden re-copy would be detected. The error path
 * (data not present) aborts the program and is not tested here.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "offload_check.h"

#define N 400
#define LO 50
#define LEN 120

struct pt {
  int x, y;
  int w[8];
};

#pragma omp declare target
int g_counter = 10;
#pragma omp end declare target

static int a[N], out[N];

static void test_arrays(void) {
  for (int i = 0; i < N; i++)
    a[i] = i;
#pragma omp target enter data map(to : a)
  for (int i = 0; i < N; i++)
    a[i] = -1; /* host only */

  /* whole array, present + tofrom: no transfer because already mapped */
#pragma omp target map(present, tofrom : a) map(from : out)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
      out[i] = a[i];
      a[i] += 1;
    }
  }
  for (int i = 0; i < N; i++) {
    CHECK_AT("present binds to the existing device copy", i, out[i], i);
    CHECK_AT("present tofrom with count > 0 must not copy back", i, a[i], -1);
  }

  /* a sub-section of the mapped array */
  for (int i = 0; i < N; i++)
    out[i] = -2;
#pragma omp target map(present, to : a[LO : LEN]) map(from : out[LO : LEN])
  {
#pragma omp parallel for
    for (int i = LO; i < LO + LEN; i++)
      out[i] = a[i] * 2;
  }
  for (int i = 0; i < N; i++) {
    int exp = (i >= LO && i < LO + LEN) ? 2 * (i + 1) : -2;
    CHECK_AT("present on a sub-section of a mapped array", i, out[i], exp);
  }

  /* present on target data and nested target with present alloc */
#pragma omp target data map(present, tofrom : a)
  {
#pragma omp target map(present, alloc : a[0 : N])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        a[i] *= 2;
    }
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("present target data must not copy back (count > 0)", i, a[i],
             -1);

  /* target update with the present motion modifier */
#pragma omp target update from(present : a[0 : N])
  for (int i = 0; i < N; i++)
    CHECK_AT("update from(present:) brings the device data", i, a[i],
             2 * (i + 1));
  for (int i = 0; i < N; i++)
    a[i] = 3 * i;
#pragma omp target update to(present : a[LO : LEN])

  /* present on enter data (count 2) and exit data */
#pragma omp target enter data map(present, to : a)
#pragma omp target exit data map(present, release : a)
  CHECK("still present after enter/exit with present",
        omp_target_is_present(a, omp_get_default_device()) != 0, 1);
#pragma omp target exit data map(present, from : a)
  for (int i = 0; i < N; i++) {
    int exp = (i >= LO && i < LO + LEN) ? 3 * i : 2 * (i + 1);
    CHECK_AT("final copy back after present exit data", i, a[i], exp);
  }
  CHECK("not present after final exit",
        omp_target_is_present(a, omp_get_default_device()), 0);
}

static void test_scalars_structs(void) {
  int x = 3;
  struct pt s = {1, 2, {0, 1, 2, 3, 4, 5, 6, 7}};
#pragma omp target enter data map(to : x, s)
  x = 100;
  s.x = 100;
#pragma omp target map(present, tofrom : x, s)
  {
    x += 1;
    s.x += 10;
    s.y += 20;
    for (int i = 0; i < 8; i++)
      s.w[i] *= 3;
  }
  CHECK("present scalar: no copy back while mapped", x, 100);
  CHECK("present struct: no copy back while mapped", s.x, 100);
#pragma omp target exit data map(from : x, s)
  CHECK("present scalar used the device copy", x, 4);
  CHECK("present struct member x", s.x, 11);
  CHECK("present struct member y", s.y, 22);
  for (int i = 0; i < 8; i++)
    CHECK_AT("present struct array member", i, s.w[i], 3 * i);
}

static void test_enclosing_data(void) {
  int *h = malloc(N * sizeof(int));
  if (!h) {
    fprintf(stderr, "FAIL %s:%d: malloc\n", __FILE__, __LINE__);
    exit(1);
  }
  for (int i = 0; i < N; i++)
    h[i] = i + 1;
#pragma omp target data map(tofrom : h[0 : N])
  {
    for (int i = 0; i < N; i++)
      h[i] = 0; /* host only */
#pragma omp target map(present, from : h[0 : N])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        h[i] = h[i] * h[i];
    }
#pragma omp target map(present, tofrom : h[LO : LEN])
    {
      for (int i = LO; i < LO + LEN; i++)
        h[i] = -h[i];
    }
  }
  for (int i = 0; i < N; i++) {
    int sq = (i + 1) * (i + 1);
    int exp = (i >= LO && i < LO + LEN) ? -sq : sq;
    CHECK_AT("present inside enclosing target data", i, h[i], exp);
  }
  free(h);
}

static void test_declare_target(void) {
  int r = 0;
  g_counter = 500; /* host only; the device copy still holds 10 */
#pragma omp target map(present, tofrom : g_counter) map(from : r)
  {
    r = g_counter;
    g_counter += 5;
  }
  CHECK("declare target variable is present", r, 10);
  CHECK("declare target variable host copy unchanged", g_counter, 500);
#pragma omp target update from(present : g_counter)
  CHECK("declare target variable updated from device", g_counter, 15);
}

int main(void) {
  test_arrays();
  test_scalars_structs();
  test_enclosing_data();
  test_declare_target();
  return finish("map_present");
}
