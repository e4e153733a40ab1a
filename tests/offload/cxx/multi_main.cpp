/*
 * multi_main.cpp - a C++ program of two translation units (with
 * multi_lib.cpp), both with target regions.
 *
 * Checks: kernels here call declare target functions and read a declare
 * target table defined in multi_lib.cpp; a header template instantiated
 * here runs on the device; multi_lib.cpp's own target regions run on data
 * mapped here (target data around them) and change the shared table, which
 * this unit's kernels then see.
 *
 * Why: each unit's device code is compiled apart and the device image is
 * linked from both; an entry or symbol lost between the units shows as a
 * link error, a missing kernel or a wrong value.
 */
#include "multi_lib.h"

#include "offload_check.h"

int main() {
  const long n = 300;
  std::vector<long> v(n), w(n, -1);
  for (long i = 0; i < n; i++)
    v[i] = i - 100;
  long *pv = v.data(), *pw = w.data();

  /* this unit's kernel calling the other unit's functions and table */
#pragma omp target teams distribute parallel for map(to : pv[0 : n])         \
    map(from : pw[0 : n])
  for (long i = 0; i < n; i++)
    pw[i] = ml::clamp_to(ml::weight(pv[i]), 0L, 5000L) + ml::table[i % 16];
  for (long i = 0; i < n; i++) {
    long x = i - 100;
    long e = x * x + 3 - 2 * x;
    e = e > 5000 ? 5000 : e;
    static const long fib[16] = {1,  1,  2,   3,   5,   8,   13,  21,
                                 34, 55, 89, 144, 233, 377, 610, 987};
    CHECK_AT("kernel calling the other unit's functions", i, w[i], e + fib[i % 16]);
  }

  /* the other unit's kernels, inside a target data region of this unit:
   * nothing comes back before its end */
#pragma omp target data map(tofrom : pv[0 : n])
  {
    ml::transform_on_device(v);
    ml::transform_on_device(v);
    CHECK("other unit's kernel: no copy back inside target data", v[5], 5 - 100);
  }
  for (long i = 0; i < n; i++) {
    long x = i - 100;
    static const long fib[16] = {1,  1,  2,   3,   5,   8,   13,  21,
                                 34, 55, 89, 144, 233, 377, 610, 987};
    long once = x * x + 3 - 2 * x + fib[i % 16];
    CHECK_AT("other unit's kernel, twice", i, v[i],
             once * once + 3 - 2 * once + fib[i % 16]);
  }

  /* the table changed by the other unit's kernel, read by this unit's */
  ml::reset_table_on_device(7);
  long sum = -1;
#pragma omp target map(from : sum)
  {
    long s = 0;
    for (int i = 0; i < 16; i++)
      s += ml::table[i];
    sum = s;
  }
  CHECK("table written by the other unit's kernel", sum, 100 * 120 + 16 * 7);
  CHECK("host table before update from", ml::table[3], 3);
#pragma omp target update from(ml::table)
  CHECK("host table after update from", ml::table[3], 307);

  return finish("multi_tu");
}
