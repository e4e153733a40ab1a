/*
 * map_basic.c - basic data-mapping semantics of the target construct.
 *
 * Checks map(to), map(from), map(tofrom) and map(alloc) on scalars, whole
 * arrays and array sections a[lo:len] with lo > 0 (on global arrays and on
 * heap memory), firstprivate scalars and structs, and the implicit rules
 * for variables that appear in no clause (scalars are firstprivate,
 * arrays and structs are tofrom).
 *
 * Why: every other offloading feature is built on these transfers. When
 * the device is a separate address space (an MPI worker), a transfer that
 * is missing, goes the wrong way, or covers the wrong bytes is visible to
 * the host. Each case is arranged so that such a mistake changes a value
 * the host compares: e.g. for map(to) the host overwrites its copy after
 * the transfer and the device must still see the old value, and for a
 * section the host writes outside the section while it is mapped and the
 * copy-back must not clobber those elements.
 */
#include <stdio.h>
#include <stdlib.h>

#include "offload_check.h"

#define N 1000
#define LO 100
#define LEN 300

struct params {
  int a;
  double b;
  int v[4];
};

static int ga[N], gb[N], gc[N], gtmp[N];

static void test_scalars(void) {
  /* to: the device sees the host value, device writes do not come back */
  int s_to = 5, r = 0;
#pragma omp target map(to : s_to) map(from : r)
  {
    r = s_to * 2;
    s_to = 99;
  }
  CHECK("map(to) scalar value seen on device", r, 10);
  CHECK("map(to) scalar must not be copied back", s_to, 5);

  /* from: the value computed on the device arrives */
  int s_from = -7;
#pragma omp target map(from : s_from)
  { s_from = 42; }
  CHECK("map(from) scalar value from device", s_from, 42);

  /* tofrom: both directions */
  int s_tf = 10;
#pragma omp target map(tofrom : s_tf)
  { s_tf = s_tf * 3 + 1; }
  CHECK("map(tofrom) scalar round trip", s_tf, 31);

  /* to inside target data: a host write after the copy is not seen */
  int s_old = 8, seen = 0;
#pragma omp target data map(to : s_old)
  {
    s_old = 1234; /* host copy only */
#pragma omp target map(tofrom : s_old) map(from : seen)
    {
      seen = s_old;
      s_old = -1;
    }
  }
  CHECK("map(to) device keeps value copied at map time", seen, 8);
  CHECK("map(to) host copy not overwritten at region end", s_old, 1234);

  /* alloc: device storage only, nothing copied either way */
  int s_alloc = 3, got = 0;
#pragma omp target data map(alloc : s_alloc)
  {
#pragma omp target map(tofrom : s_alloc)
    { s_alloc = 11; }
#pragma omp target map(tofrom : s_alloc) map(from : got)
    { got = s_alloc * 2; }
  }
  CHECK("map(alloc) scalar keeps device value between regions", got, 22);
  CHECK("map(alloc) scalar must not be copied back", s_alloc, 3);
}

static void test_arrays(void) {
  for (int i = 0; i < N; i++) {
    ga[i] = i;
    gb[i] = -1;
  }
#pragma omp target map(to : ga) map(from : gb)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
      gb[i] = 2 * ga[i] + 1;
      ga[i] = -9;
    }
  }
  for (int i = 0; i < N; i++) {
    CHECK_AT("map(from) array computed on device", i, gb[i], 2 * i + 1);
    CHECK_AT("map(to) array must not be copied back", i, ga[i], i);
  }

  for (int i = 0; i < N; i++)
    gc[i] = 3 * i;
#pragma omp target map(tofrom : gc)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      gc[i] += i * i;
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("map(tofrom) array round trip", i, gc[i], 3 * i + i * i);

  /* to: host writes after the copy are invisible to the device */
  for (int i = 0; i < N; i++) {
    ga[i] = i;
    gb[i] = -1;
  }
#pragma omp target data map(to : ga)
  {
    for (int i = 0; i < N; i++)
      ga[i] = -5;
#pragma omp target map(from : gb)
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        gb[i] = ga[i];
    }
  }
  for (int i = 0; i < N; i++) {
    CHECK_AT("device saw array value from map time", i, gb[i], i);
    CHECK_AT("map(to) array host copy untouched", i, ga[i], -5);
  }
}

static void test_sections(void) {
  for (int i = 0; i < N; i++) {
    ga[i] = i;
    gb[i] = -1;
  }
#pragma omp target map(to : ga[LO : LEN]) map(from : gb[LO : LEN])
  {
#pragma omp parallel for
    for (int i = LO; i < LO + LEN; i++)
      gb[i] = 3 * ga[i] + 1;
  }
  for (int i = 0; i < N; i++) {
    int exp = (i >= LO && i < LO + LEN) ? 3 * i + 1 : -1;
    CHECK_AT("map(from: b[lo:len]) section result", i, gb[i], exp);
  }

  /* tofrom section; the host writes outside the section while it is
   * mapped, the copy-back must only cover the section */
  for (int i = 0; i < N; i++)
    gc[i] = i;
#pragma omp target data map(tofrom : gc[LO : LEN])
  {
#pragma omp target map(tofrom : gc[LO : LEN])
    {
#pragma omp parallel for
      for (int i = LO; i < LO + LEN; i++)
        gc[i] = gc[i] * 10 + 1;
    }
    for (int i = 0; i < LO; i++)
      gc[i] = 777;
    for (int i = LO + LEN; i < N; i++)
      gc[i] = 888;
    /* a sub-section of the mapped section is present, no new transfer */
#pragma omp target map(tofrom : gc[LO + 10 : 20])
    {
      for (int i = LO + 10; i < LO + 30; i++)
        gc[i] += 5;
    }
  }
  for (int i = 0; i < N; i++) {
    int exp;
    if (i < LO)
      exp = 777;
    else if (i >= LO + LEN)
      exp = 888;
    else if (i >= LO + 10 && i < LO + 30)
      exp = i * 10 + 6;
    else
      exp = i * 10 + 1;
    CHECK_AT("map(tofrom: c[lo:len]) section round trip", i, gc[i], exp);
  }

  /* sections of heap memory */
  int *h = malloc(N * sizeof(int));
  if (!h) {
    fprintf(stderr, "FAIL %s:%d: malloc\n", __FILE__, __LINE__);
    exit(1);
  }
  for (int i = 0; i < N; i++)
    h[i] = -i;
#pragma omp target map(tofrom : h[LO : LEN])
  {
#pragma omp parallel for
    for (int i = LO; i < LO + LEN; i++)
      h[i] = h[i] * 2 - 1;
  }
  for (int i = 0; i < N; i++) {
    int exp = (i >= LO && i < LO + LEN) ? -2 * i - 1 : -i;
    CHECK_AT("map(tofrom: p[lo:len]) heap section", i, h[i], exp);
  }
  free(h);
}

static void test_alloc_arrays(void) {
  for (int i = 0; i < N; i++) {
    ga[i] = i;
    gb[i] = -1;
    gtmp[i] = -3;
  }
  /* gtmp only lives on the device; its initial contents are not used */
#pragma omp target data map(to : ga) map(alloc : gtmp) map(from : gb)
  {
#pragma omp target
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        gtmp[i] = ga[i] * ga[i];
    }
#pragma omp target
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        gb[i] = gtmp[i] + 1;
    }
  }
  for (int i = 0; i < N; i++) {
    CHECK_AT("map(alloc) array kept between regions", i, gb[i], i * i + 1);
    CHECK_AT("map(alloc) array must not be copied back", i, gtmp[i], -3);
  }

  /* alloc of a section with lo > 0 */
  for (int i = 0; i < N; i++)
    gb[i] = -1;
#pragma omp target data map(alloc : gtmp[LO : LEN]) map(from : gb[LO : LEN])
  {
#pragma omp target map(tofrom : gtmp[LO : LEN])
    {
      for (int i = LO; i < LO + LEN; i++)
        gtmp[i] = 2 * i;
    }
#pragma omp target map(tofrom : gtmp[LO : LEN], gb[LO : LEN])
    {
      for (int i = LO; i < LO + LEN; i++)
        gb[i] = gtmp[i] + 7;
    }
  }
  for (int i = 0; i < N; i++) {
    int exp = (i >= LO && i < LO + LEN) ? 2 * i + 7 : -1;
    CHECK_AT("map(alloc: a[lo:len]) section", i, gb[i], exp);
    CHECK_AT("map(alloc) section host copy untouched", i, gtmp[i], -3);
  }
}

static void test_firstprivate(void) {
  int fp = 3, r = 0;
  double fd = 1.5, rd = 0.0;
#pragma omp target firstprivate(fp, fd) map(from : r, rd)
  {
    fp += 10;
    fd *= 2.0;
    r = fp;
    rd = fd;
  }
  CHECK("firstprivate int private copy", r, 13);
  CHECK_D("firstprivate double private copy", rd, 3.0);
  CHECK("firstprivate int host unchanged", fp, 3);
  CHECK_D("firstprivate double host unchanged", fd, 1.5);

  /* firstprivate value read by every thread of a parallel loop */
  int scale = 4;
  for (int i = 0; i < N; i++)
    gb[i] = -1;
#pragma omp target firstprivate(scale) map(from : gb)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      gb[i] = i * scale;
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("firstprivate scalar in parallel for", i, gb[i], 4 * i);

  struct params p = {4, 2.5, {1, 2, 3, 4}};
  int sum = 0;
  double db = 0.0;
#pragma omp target firstprivate(p) map(from : sum, db)
  {
    sum = p.a + p.v[0] + p.v[1] + p.v[2] + p.v[3];
    db = p.b * 2.0;
    p.a = -1;
    p.b = 0.0;
    p.v[2] = 100;
  }
  CHECK("firstprivate struct members on device", sum, 14);
  CHECK_D("firstprivate struct double member", db, 5.0);
  CHECK("firstprivate struct host member a unchanged", p.a, 4);
  CHECK_D("firstprivate struct host member b unchanged", p.b, 2.5);
  CHECK("firstprivate struct host member v[2] unchanged", p.v[2], 3);
}

static void test_implicit(void) {
  /* a scalar in no clause is firstprivate: read works, writes are lost */
  int k = 7, r = 0;
  double kd = 0.25, rd = 0.0;
#pragma omp target map(from : r, rd)
  {
    r = k + 1;
    rd = kd * 4.0;
    k = 100;
    kd = 9.0;
  }
  CHECK("implicit firstprivate scalar read", r, 8);
  CHECK_D("implicit firstprivate double read", rd, 1.0);
  CHECK("implicit firstprivate scalar not copied back", k, 7);
  CHECK_D("implicit firstprivate double not copied back", kd, 0.25);

  /* an array in no clause is tofrom */
  int arr[64];
  for (int i = 0; i < 64; i++)
    arr[i] = i;
#pragma omp target
  {
#pragma omp parallel for
    for (int i = 0; i < 64; i++)
      arr[i] = arr[i] * 2 + 1;
  }
  for (int i = 0; i < 64; i++)
    CHECK_AT("implicit tofrom local array", i, arr[i], 2 * i + 1);

  for (int i = 0; i < N; i++)
    gc[i] = i;
#pragma omp target
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      gc[i] = gc[i] - 3;
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("implicit tofrom global array", i, gc[i], i - 3);

  /* a struct in no clause is tofrom as well */
  struct params q = {1, 0.5, {0, 0, 0, 0}};
#pragma omp target
  {
    q.a += 5;
    q.b *= 4.0;
    q.v[3] = 9;
  }
  CHECK("implicit tofrom struct member a", q.a, 6);
  CHECK_D("implicit tofrom struct member b", q.b, 2.0);
  CHECK("implicit tofrom struct member v[3]", q.v[3], 9);
}

int main(void) {
  test_scalars();
  test_arrays();
  test_sections();
  test_alloc_arrays();
  test_firstprivate();
  test_implicit();
  return finish("map_basic");
}
