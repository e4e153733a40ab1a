/*
 * map_pointer.c - pointers and device addresses.
 *
 * Checks pointer variables mapped as p[0:n] and p[lo:len]; a pointer into
 * a previously mapped region used in a later target region, both with no
 * map clause (the implicit zero-length section q[:0] must resolve to the
 * existing mapping) and with an explicit q[0:0]; is_device_ptr with memory
 * from omp_target_alloc; use_device_ptr and use_device_addr in target data
 * regions, where the device address obtained is used with
 * omp_target_memcpy and in a target region with is_device_ptr.
 *
 * Why: with a device in another address space every pointer used on the
 * device must be translated. Using the host address on the device, or the
 * device address on the host without these clauses, breaks the checks
 * (the host copy is changed while mapped, so reading the wrong copy is
 * visible).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "offload_check.h"

#define N 500
#define LO 60
#define LEN 200

static int dev, host;

static int *xmalloc_int(size_t n) {
  int *p = malloc(n * sizeof(int));
  if (!p) {
    fprintf(stderr, "FAIL %s:%d: malloc\n", __FILE__, __LINE__);
    exit(1);
  }
  return p;
}

static void test_pointer_sections(void) {
  int *p = xmalloc_int(N);
  for (int i = 0; i < N; i++)
    p[i] = i;
#pragma omp target map(tofrom : p[0 : N])
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      p[i] = 2 * p[i] + 1;
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("map(tofrom: p[0:n])", i, p[i], 2 * i + 1);

  for (int i = 0; i < N; i++)
    p[i] = i;
  int *q = xmalloc_int(N);
  for (int i = 0; i < N; i++)
    q[i] = -1;
#pragma omp target map(to : p[LO : LEN]) map(from : q[LO : LEN])
  {
#pragma omp parallel for
    for (int i = LO; i < LO + LEN; i++) {
      q[i] = p[i] * p[i];
      p[i] = 0;
    }
  }
  for (int i = 0; i < N; i++) {
    CHECK_AT("map(from: q[lo:len])", i, q[i],
             (i >= LO && i < LO + LEN) ? i * i : -1);
    CHECK_AT("map(to: p[lo:len]) not copied back", i, p[i], i);
  }
  free(p);
  free(q);
}

static void test_pointer_into_mapping(void) {
  int *p = xmalloc_int(N);
  for (int i = 0; i < N; i++)
    p[i] = i;
#pragma omp target enter data map(to : p[0 : N])

  /* q points into the mapped block; no map clause: implicit q[:0] */
  int *q = p + 10;
#pragma omp target
  {
#pragma omp parallel for
    for (int i = 0; i < 20; i++)
      q[i] = -(i + 1);
  }
  /* p itself, also implicitly */
#pragma omp target
  { p[0] = 555; }
  /* explicit zero-length section into the middle of the block */
  int *r = p + 300;
#pragma omp target map(tofrom : r[0 : 0])
  {
    for (int i = 0; i < 50; i++)
      r[i] = r[i] * 3;
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("no copy back while mapped", i, p[i], i);

#pragma omp target exit data map(from : p[0 : N])
  for (int i = 0; i < N; i++) {
    int exp = i;
    if (i == 0)
      exp = 555;
    else if (i >= 10 && i < 30)
      exp = -(i - 10 + 1);
    else if (i >= 300 && i < 350)
      exp = 3 * i;
    CHECK_AT("pointer into an existing mapping", i, p[i], exp);
  }
  free(p);
}

static void test_is_device_ptr(void) {
  int *d = omp_target_alloc(N * sizeof(int), dev);
  int *out = xmalloc_int(N);
  if (!d) {
    fprintf(stderr, "FAIL %s:%d: omp_target_alloc returned NULL\n", __FILE__,
            __LINE__);
    failures++;
    free(out);
    return;
  }
#pragma omp target is_device_ptr(d)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      d[i] = i * i;
  }
  for (int i = 0; i < N; i++)
    out[i] = -1;
#pragma omp target is_device_ptr(d) map(from : out[0 : N])
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      out[i] = d[i] + 1;
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("is_device_ptr: device memory kept between regions", i, out[i],
             i * i + 1);
  CHECK("omp_target_memcpy device->host",
        omp_target_memcpy(out, d, N * sizeof(int), 0, 0, host, dev), 0);
  for (int i = 0; i < N; i++)
    CHECK_AT("is_device_ptr data read back with omp_target_memcpy", i, out[i],
             i * i);
  omp_target_free(d, dev);
  free(out);
}

static void test_use_device_ptr(void) {
  int *p = xmalloc_int(N);
  int *out = xmalloc_int(N);
  int *dp = NULL;
  for (int i = 0; i < N; i++)
    p[i] = i;
#pragma omp target data map(tofrom : p[0 : N])
  {
    for (int i = 0; i < N; i++)
      p[i] = -1; /* host only */
#pragma omp target data use_device_ptr(p)
    { dp = p; }
    CHECK("use_device_ptr gives a non-NULL address", dp != NULL, 1);
    /* the device address holds the data copied at map time */
    CHECK("omp_target_memcpy from use_device_ptr address",
          omp_target_memcpy(out, dp, N * sizeof(int), 0, 0, host, dev), 0);
    for (int i = 0; i < N; i++)
      CHECK_AT("use_device_ptr address holds the mapped data", i, out[i], i);
#pragma omp target is_device_ptr(dp)
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        dp[i] += 100;
    }
#pragma omp target update from(p[0 : N])
    for (int i = 0; i < N; i++)
      CHECK_AT("write through use_device_ptr address seen by the mapping", i,
               p[i], i + 100);
  }

  /* use_device_ptr on the construct that creates the mapping */
  for (int i = 0; i < N; i++)
    p[i] = 2 * i;
  int *dp2 = NULL;
#pragma omp target data map(to : p[0 : N]) use_device_ptr(p)
  {
    dp2 = p;
#pragma omp target is_device_ptr(dp2) map(from : out[0 : N])
    {
      for (int i = 0; i < N; i++)
        out[i] = dp2[i] * 3;
    }
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("use_device_ptr with map on the same construct", i, out[i],
             6 * i);
  free(p);
  free(out);
}

static void test_use_device_addr(void) {
  int arr[N];
  int out[N];
  int sx = 5, got = 0;
  int *da = NULL, *dsx = NULL;
  for (int i = 0; i < N; i++)
    arr[i] = i;
#pragma omp target data map(tofrom : arr, sx)
  {
    for (int i = 0; i < N; i++)
      arr[i] = -7; /* host only */
    sx = -7;
#pragma omp target data use_device_addr(arr, sx)
    {
      da = &arr[0];
      dsx = &sx;
    }
    CHECK("use_device_addr(array) non-NULL", da != NULL, 1);
    CHECK("use_device_addr(scalar) non-NULL", dsx != NULL, 1);
    CHECK("omp_target_memcpy from use_device_addr(array)",
          omp_target_memcpy(out, da, N * sizeof(int), 0, 0, host, dev), 0);
    for (int i = 0; i < N; i++)
      CHECK_AT("use_device_addr(array) addresses the device copy", i, out[i],
               i);
    CHECK("omp_target_memcpy from use_device_addr(scalar)",
          omp_target_memcpy(&got, dsx, sizeof(int), 0, 0, host, dev), 0);
    CHECK("use_device_addr(scalar) addresses the device copy", got, 5);

    /* write the device copy through the device address; the end of the
     * region copies it back */
    for (int i = 0; i < N; i++)
      out[i] = 3 * i;
    omp_target_memcpy(da, out, N * sizeof(int), 0, 0, dev, host);
    got = 77;
    omp_target_memcpy(dsx, &got, sizeof(int), 0, 0, dev, host);
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("data written via use_device_addr copied back", i, arr[i],
             3 * i);
  CHECK("scalar written via use_device_addr copied back", sx, 77);
}

int main(void) {
  dev = omp_get_default_device();
  host = omp_get_initial_device();
  test_pointer_sections();
  test_pointer_into_mapping();
  test_is_device_ptr();
  test_use_device_ptr();
  test_use_device_addr();
  return finish("map_pointer");
}
