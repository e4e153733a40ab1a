/*
 * multi_lib.cpp - the second translation unit of multi_main.cpp's program:
 * declare target functions and a declare target table called from the other
 * unit's kernels, and target regions of its own.
 */
#include "multi_lib.h"

namespace ml {
#pragma omp declare target
long table[16] = {1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987};
static long square_plus(long i) { return i * i + 3; }
long weight(long i) { return square_plus(i) - 2 * i; }
#pragma omp end declare target

void transform_on_device(std::vector<long> &v) {
  long *p = v.data();
  long n = (long)v.size();
#pragma omp target teams distribute parallel for map(tofrom : p[0 : n])
  for (long i = 0; i < n; i++)
    p[i] = weight(p[i]) + table[i % 16];
}

void reset_table_on_device(long base) {
#pragma omp target
  for (long i = 0; i < 16; i++)
    table[i] = 100 * i + base;
}
} // namespace ml
