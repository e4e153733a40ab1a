/*
 * mixed_main.cpp - a program of one C++ and one C translation unit
 * (mixed_kernels.c), built with ompcc as one command line and through
 * CMake.
 *
 * Checks: a C++ kernel calls the C unit's declare target function; the C
 * unit's target region runs on std::vector data; the C++ standard library
 * is linked (std::vector, std::string) though the driver is ompcc.
 *
 * Why: ompcc keeps clang-19 as the driver for a C and C++ command line (so
 * the .c file stays C) and must still link what clang++ links; the device
 * image is linked from both units.
 */
#include <string>
#include <vector>

#include "mixed_kernels.h"
#include "offload_check.h"

int main() {
  const long n = 400;
  std::vector<long> v(n), w(n, -1);
  for (long i = 0; i < n; i++)
    v[i] = i * 3 - 200;
  long *pv = v.data(), *pw = w.data();
#pragma omp target map(to : pv[0 : n]) map(from : pw[0 : n])
  for (long i = 0; i < n; i++)
    pw[i] = c_mix(pv[i]) + i;
  for (long i = 0; i < n; i++)
    CHECK_AT("C++ kernel calling a C declare target function", i, w[i],
             5 * (i * 3 - 200) - 3 + i);

  c_scale(pv, n, -2);
  for (long i = 0; i < n; i++)
    CHECK_AT("C target region on vector data", i, v[i],
             (5 * (i * 3 - 200) - 3) * -2);

  std::string topic = "mixed_";
  topic += "c_cxx";
  return finish(topic.c_str());
}
