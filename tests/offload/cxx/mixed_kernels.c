/*
 * mixed_kernels.c - the C half of mixed_main.cpp's program: a declare
 * target C function the C++ kernels call, and a C function with a target
 * region of its own that the C++ code calls.
 */
#include "mixed_kernels.h"

#pragma omp declare target
long c_mix(long x) { return 5 * x - 3; }
#pragma omp end declare target

void c_scale(long *v, long n, long k) {
#pragma omp target teams distribute parallel for map(tofrom : v[0 : n])
  for (long i = 0; i < n; i++)
    v[i] = c_mix(v[i]) * k;
}
