/*
 * multi_lib.h - the interface between multi_main.cpp and multi_lib.cpp.
 *
 * multi_lib.cpp defines the declare target functions and the declare
 * target table; multi_main.cpp calls them from its own target regions, so
 * the device image links the two translation units' device code together.
 */
#ifndef MULTI_LIB_H
#define MULTI_LIB_H

#include <vector>

namespace ml {
#pragma omp declare target
/* defined in multi_lib.cpp */
long weight(long i);
extern long table[16];
/* a template the header defines: instantiated in multi_main.cpp */
template <typename T> T clamp_to(T v, T lo, T hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}
#pragma omp end declare target

/* a host function whose target region is in multi_lib.cpp: v[i] =
 * weight(v[i]) + table[i % 16] */
void transform_on_device(std::vector<long> &v);
/* table[i] = 100 * i + base on the device only (target update from
 * brings it back) */
void reset_table_on_device(long base);
} // namespace ml

#endif
