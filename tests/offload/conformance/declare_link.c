/*
 * declare_link.c - `declare target link` variables.
 *
 * Checks that link variables (a scalar, an array, a struct) exist on the
 * device only while mapped and hold the mapped data: mapped explicitly on
 * a target region, implicitly by a region that names them, by `target
 * enter/exit data`, updated with `target update to/from`, and reached from
 * a `declare target` function called by regions that do not name them
 * (several `nowait` regions at once, then one that writes).
 *
 * Why: the device image holds only a pointer for each link variable; the
 * runtime must point it at the variable's device copy on whichever worker
 * runs the region.  A region that reaches the variable through a function
 * names no clause for it, so its data must travel with every region while
 * it is mapped.  Host and device copies are made to differ, so a missing
 * or extra transfer changes a checked value.
 */
#include <stdio.h>

#include "offload_check.h"

#define N 128

int lscale = 3;
double larr[N];
struct pair {
  int a, b;
} lpair = {1, 2};
#pragma omp declare target link(lscale, larr, lpair)

#pragma omp declare target
double get_scaled(int i) { return larr[i] * lscale; }
void put(int i, double v) { larr[i] = v; }
#pragma omp end declare target

int main(void) {
  int r = 0;
  for (int i = 0; i < N; i++)
    larr[i] = i;

  /* explicit map on a region: the device copy is the mapped data */
#pragma omp target map(tofrom : lscale, lpair) map(from : r)
  {
    r = lscale * 100 + lpair.a * 10 + lpair.b;
    lscale = 4;
    lpair.b = 9;
  }
  CHECK("link scalar and struct read on the device", r, 312);
  CHECK("link scalar copied back", lscale, 4);
  CHECK("link struct copied back", lpair.b, 9);

  /* implicit map: the region names the variables and no clause */
  lscale = 5;
#pragma omp target map(from : r)
  { r = lscale + (int)larr[N - 1]; }
  CHECK("link variables mapped implicitly", r, 5 + N - 1);

  /* enter data, then regions that reach the array only through
   * declare target functions */
#pragma omp target enter data map(to : larr, lscale)
  for (int i = 0; i < N; i++)
    larr[i] = -1; /* host copy only */
  double sums[8];
  for (int k = 0; k < 8; k++) {
#pragma omp target map(from : sums[k : 1]) nowait
    {
      double s = 0;
      for (int i = k; i < N; i += 8)
        s += get_scaled(i);
      sums[k] = s;
    }
  }
#pragma omp taskwait
  for (int k = 0; k < 8; k++) {
    double s = 0;
    for (int i = k; i < N; i += 8)
      s += (double)i * 5;
    CHECK_D("link array read through a function", sums[k], s);
  }
#pragma omp target
  {
    for (int i = 0; i < N; i++)
      put(i, get_scaled(i) + 1);
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("no copy back before exit data", i, (int)larr[i], -1);

  /* target update in both directions while mapped */
#pragma omp target update from(larr[0 : N / 2])
  for (int i = 0; i < N; i++)
    CHECK_AT("target update from(section) of a link array", i, (int)larr[i],
             i < N / 2 ? 5 * i + 1 : -1);
  lscale = 2;
#pragma omp target update to(lscale)
#pragma omp target
  {
    for (int i = 0; i < N; i++)
      put(i, get_scaled(i));
  }
#pragma omp target exit data map(from : larr) map(release : lscale)
  for (int i = 0; i < N; i++)
    CHECK_AT("link array after exit data", i, (int)larr[i], 2 * (5 * i + 1));

  return finish("declare_link");
}
