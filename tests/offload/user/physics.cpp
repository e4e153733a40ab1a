#include "physics.hpp"
#include <cmath>

namespace phys {
#pragma omp declare target
double coupling = 0.25;

double potential(double x, double k) { return k * x * x + std::sin(x) * coupling; }

double relax(double u, double left, double right, double w)
{
  return (1.0 - w) * u + w * 0.5 * (left + right);
}
#pragma omp end declare target

void damp(double *u, std::size_t n, double factor)
{
#pragma omp target teams distribute parallel for map(tofrom : u[0 : n]) firstprivate(factor)
  for (std::size_t i = 0; i < n; ++i)
    u[i] *= factor;
}
} // namespace phys
