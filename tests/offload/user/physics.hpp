// Physics kernels of the user C++ app, built into a static library.
#pragma once
#include <cstddef>

namespace phys {
#pragma omp declare target
double potential(double x, double k);
double relax(double u, double left, double right, double w);
extern double coupling;
#pragma omp end declare target

// Runs a target region of its own, from inside the library.
void damp(double *u, std::size_t n, double factor);
} // namespace phys
