/*
 * map_refcount.c - reference counting of mapped data.
 *
 * Checks that nested `target data` regions and `target enter/exit data`
 * keep one device copy per host object with a reference count: data is
 * copied to the device only when the count goes 0 -> 1 and copied back
 * (for from/tofrom) only when it drops to 0; the `always` modifier forces
 * a transfer regardless of the count; `release` decrements the count while
 * `delete` removes the mapping at once without copying back; and mapping
 * again after a delete allocates fresh storage filled from the host.
 *
 * Why: a runtime that copies on every map (or never) would still give the
 * right answer for simple programs but wrong ones for real codes that nest
 * data regions. Every step below changes the host copy while the data is
 * mapped, so an extra or missing transfer shows up as a wrong value.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "offload_check.h"

#define N 512

/* compare every element of an array against an expression of i */
#define CHECK_ARRAY(what, arr, expr)                                           \
  do {                                                                         \
    for (int i = 0; i < N; i++)                                                \
      CHECK_AT(what, i, (arr)[i], (expr));                                     \
  } while (0)

static int *a, *out;
static int dev;

static void fill(int *p, int base) {
  for (int i = 0; i < N; i++)
    p[i] = base + i;
}

/* enter data twice, exit data twice: copy in once, copy out once */
static void test_enter_exit(void) {
  fill(a, 0);
  CHECK("not present before enter data", omp_target_is_present(a, dev), 0);
#pragma omp target enter data map(to : a[0 : N])
  fill(a, 1000); /* host only; the count is now 1 */
#pragma omp target enter data map(to : a[0 : N])
  /* the second enter must not copy: the device still holds 0..N-1 */
#pragma omp target map(tofrom : a[0 : N]) map(from : out[0 : N])
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
      out[i] = a[i];
      a[i] = a[i] * 2;
    }
  }
  CHECK_ARRAY("second enter data must not copy to device", out, i);
  CHECK_ARRAY("tofrom with count > 1 must not copy back", a, 1000 + i);

#pragma omp target exit data map(from : a[0 : N])
  CHECK_ARRAY("exit data from with count 2->1 must not copy back", a,
              1000 + i);
  CHECK("still present after first exit data",
        omp_target_is_present(a, dev) != 0, 1);

#pragma omp target exit data map(from : a[0 : N])
  CHECK_ARRAY("exit data from with count 1->0 copies back", a, 2 * i);
  CHECK("not present after last exit data", omp_target_is_present(a, dev), 0);
}

/* nested structured target data regions */
static void test_nested_data(void) {
  fill(a, 0);
#pragma omp target data map(tofrom : a[0 : N])
  {
    fill(a, 5000); /* host only */
#pragma omp target data map(tofrom : a[0 : N])
    {
#pragma omp target map(tofrom : a[0 : N])
      {
#pragma omp parallel for
        for (int i = 0; i < N; i++)
          a[i] += 1;
      }
      CHECK_ARRAY("target inside nested data must not copy back", a,
                  5000 + i);
    }
    CHECK_ARRAY("end of inner target data must not copy back", a, 5000 + i);
#pragma omp target data map(to : a[0 : N])
    {
#pragma omp target
      {
#pragma omp parallel for
        for (int i = 0; i < N; i++)
          a[i] *= 3;
      }
    }
    CHECK_ARRAY("inner data map(to) with count > 0 must not copy", a,
                5000 + i);
  }
  CHECK_ARRAY("outer target data copies the device result back", a,
              3 * (i + 1));

  /* same with a scalar */
  int x = 1;
#pragma omp target data map(tofrom : x)
  {
    x = 2; /* host only */
#pragma omp target data map(tofrom : x)
    {
#pragma omp target map(tofrom : x)
      { x += 10; }
    }
    CHECK("scalar: inner regions must not copy back", x, 2);
  }
  CHECK("scalar: outer region copies back", x, 11);
}

/* the always modifier forces transfers while the count is > 0 */
static void test_always(void) {
  fill(a, 0);
#pragma omp target data map(to : a[0 : N])
  {
    fill(a, 100); /* host only */
#pragma omp target map(always, to : a[0 : N]) map(from : out[0 : N])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++) {
        out[i] = a[i];
        a[i] += 1;
      }
    }
    CHECK_ARRAY("map(always, to) copies although present", out, 100 + i);
    CHECK_ARRAY("map(always, to) does not copy back", a, 100 + i);

#pragma omp target map(always, from : a[0 : N])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        a[i] *= 2;
    }
    CHECK_ARRAY("map(always, from) copies back although present", a,
                2 * (101 + i));

    fill(a, -N); /* host only */
#pragma omp target map(always, tofrom : a[0 : N])
    {
      for (int i = 0; i < N; i++)
        a[i] = -a[i];
    }
    CHECK_ARRAY("map(always, tofrom) both directions", a, N - i);
    fill(a, 7000);
  }
  CHECK_ARRAY("outer map(to) never copies back", a, 7000 + i);

  /* exit data with always copies back even when the count stays > 0 */
  fill(a, 0);
#pragma omp target enter data map(to : a[0 : N])
#pragma omp target enter data map(to : a[0 : N])
#pragma omp target map(tofrom : a[0 : N])
  {
    for (int i = 0; i < N; i++)
      a[i] += 40;
  }
#pragma omp target exit data map(always, from : a[0 : N])
  CHECK_ARRAY("exit data map(always, from) with count 2->1", a, 40 + i);
  CHECK("present after exit data always from (count 1)",
        omp_target_is_present(a, dev) != 0, 1);
#pragma omp target exit data map(delete : a[0 : N])
  CHECK("not present after delete", omp_target_is_present(a, dev), 0);
}

/* release decrements, delete removes; neither copies back */
static void test_release_delete(void) {
  fill(a, 0);
#pragma omp target enter data map(to : a[0 : N])
#pragma omp target enter data map(to : a[0 : N])
#pragma omp target enter data map(to : a[0 : N])
#pragma omp target map(tofrom : a[0 : N])
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      a[i] = -a[i] - 1;
  }
#pragma omp target exit data map(release : a[0 : N])
  CHECK("present after release (count 3->2)",
        omp_target_is_present(a, dev) != 0, 1);
  CHECK_ARRAY("release does not copy back", a, i);

  /* the device copy still holds the modified data */
#pragma omp target map(from : out[0 : N])
  {
    for (int i = 0; i < N; i++)
      out[i] = a[i];
  }
  CHECK_ARRAY("device copy survives release", out, -i - 1);

#pragma omp target exit data map(delete : a[0 : N])
  CHECK("delete removes the mapping although the count was 2",
        omp_target_is_present(a, dev), 0);
  CHECK_ARRAY("delete does not copy back", a, i);

  /* release that drops the count to zero also removes without copying */
#pragma omp target enter data map(to : a[0 : N])
#pragma omp target
  {
    for (int i = 0; i < N; i++)
      a[i] = 123;
  }
#pragma omp target exit data map(release : a[0 : N])
  CHECK("release 1->0 removes the mapping", omp_target_is_present(a, dev), 0);
  CHECK_ARRAY("release 1->0 does not copy back", a, i);
}

/* mapping again after delete must use fresh data from the host */
static void test_remap_after_delete(void) {
  fill(a, 0);
#pragma omp target enter data map(to : a[0 : N])
#pragma omp target
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      a[i] += 7;
  }
#pragma omp target exit data map(delete : a[0 : N])
  fill(a, 300);
#pragma omp target enter data map(to : a[0 : N])
#pragma omp target map(from : out[0 : N])
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      out[i] = a[i];
  }
  CHECK_ARRAY("re-map after delete copies the current host data", out,
              300 + i);
#pragma omp target exit data map(from : a[0 : N])
  CHECK_ARRAY("re-mapped data copied back", a, 300 + i);

  /* the same through structured regions */
  fill(a, 0);
#pragma omp target data map(to : a[0 : N])
  {
#pragma omp target
    {
      for (int i = 0; i < N; i++)
        a[i] = -1;
    }
  }
  fill(a, 50);
#pragma omp target data map(tofrom : a[0 : N])
  {
#pragma omp target
    {
      for (int i = 0; i < N; i++)
        a[i] += 1;
    }
  }
  CHECK_ARRAY("second target data region sees fresh host data", a, 51 + i);
}

int main(void) {
  dev = omp_get_default_device();
  a = malloc(N * sizeof(int));
  out = malloc(N * sizeof(int));
  if (!a || !out) {
    fprintf(stderr, "FAIL %s:%d: malloc\n", __FILE__, __LINE__);
    return 1;
  }
  test_enter_exit();
  test_nested_data();
  test_always();
  test_release_delete();
  test_remap_after_delete();
  free(a);
  free(out);
  return finish("map_refcount");
}
