/*
 * namespace_math.cpp - declare target in namespaces, and <cmath> in kernels.
 *
 * Checks: declare target functions with the same name in two namespaces, in
 * a nested namespace, overloaded on the argument type, a function template
 * with an explicit specialisation, and a static member function; a declare
 * target variable in a namespace (its device copy moves only with `target
 * update`); <cmath> functions called in kernels (pow, sqrt, exp, log, sin,
 * cos, atan2, fmod, hypot, cbrt, and the float overloads) on inputs only
 * known at run time, compared with the host's results.
 *
 * Why: the device image resolves these functions by their mangled names,
 * and its link must find libm (clang++ links it, clang does not): a kernel
 * calling std::pow does not even link without it.  Two functions with the
 * same unqualified name must not be confused.
 */
#include <cmath>
#include <vector>

#include "offload_check.h"

/* relative comparison for library results (the device and the host may
 * round the last bit differently) */
#define CHECK_NEAR(what, idx, got, exp)                                        \
  do {                                                                         \
    double g_ = (got), e_ = (exp);                                             \
    if (!(std::fabs(g_ - e_) <= 1e-12 * std::fabs(e_) + 1e-300))               \
      fail_at_d(__FILE__, __LINE__, (what), g_, e_);                           \
    (void)(idx);                                                               \
  } while (0)

#pragma omp declare target
namespace lin {
long f(long x) { return 3 * x + 1; }
namespace inner {
long f(long x) { return x * x - 2; }
} // namespace inner
} // namespace lin

namespace quad {
long f(long x) { return lin::f(x) * lin::inner::f(x); }
double scale(double x) { return x * 0.5; }
long scale(long x) { return x * 4; }
template <typename T> T sign(T x) { return x < 0 ? T(-1) : T(1); }
template <> long sign<long>(long x) { return x < 0 ? -100 : 100; }
struct Tool {
  static long combine(long a, long b) { return a * 1000 + b; }
};
} // namespace quad

namespace cfg {
long factor = 7;
} // namespace cfg

namespace mathk {
double wave(double x) {
  return std::sin(x) * std::cos(0.5 * x) + std::exp(-x * x / 50.0);
}
double growth(double x) {
  return std::pow(x, 1.75) + std::sqrt(x) + std::log(1.0 + x) + std::cbrt(x);
}
float growthf(float x) { return std::pow(x, 0.5f) + std::sqrt(x + 1.0f); }
double geo(double x, double y) {
  return std::atan2(y, x) + std::hypot(x, y) + std::fmod(x * 7.0, 3.0);
}
} // namespace mathk
#pragma omp end declare target

int main(int argc, char **argv) {
  (void)argv;
  const int n = 500;

  /* same names in different namespaces, overloads, templates */
  std::vector<long> r(4 * n, -1);
  long *pr = r.data();
#pragma omp target map(from : pr[0 : 4 * n])
  for (int i = 0; i < n; i++) {
    long x = i - 250;
    pr[4 * i] = quad::Tool::combine(lin::f(x), lin::inner::f(x) % 1000);
    pr[4 * i + 1] = quad::f(x);
    pr[4 * i + 2] = quad::scale(x) + (long)quad::scale((double)x);
    pr[4 * i + 3] = quad::sign(x) + (long)quad::sign((double)x);
  }
  for (int i = 0; i < n; i++) {
    long x = i - 250;
    CHECK_AT("lin::f and lin::inner::f", i, r[4 * i],
             (3 * x + 1) * 1000 + (x * x - 2) % 1000);
    CHECK_AT("quad::f", i, r[4 * i + 1], (3 * x + 1) * (x * x - 2));
    CHECK_AT("overloads quad::scale", i, r[4 * i + 2], 4 * x + (long)(x * 0.5));
    CHECK_AT("specialised quad::sign", i, r[4 * i + 3],
             x < 0 ? -101 : 101);
  }

  /* a declare target variable in a namespace */
  cfg::factor = 11; /* host copy only */
  long got = -1;
#pragma omp target map(from : got)
  got = cfg::factor * 2;
  CHECK("cfg::factor starts with its initializer on the device", got, 14);
#pragma omp target update to(cfg::factor)
#pragma omp target map(from : got)
  {
    got = cfg::factor * 2;
    cfg::factor = 5;
  }
  CHECK("cfg::factor after update to", got, 22);
  CHECK("host cfg::factor before update from", cfg::factor, 11);
#pragma omp target update from(cfg::factor)
  CHECK("cfg::factor after update from", cfg::factor, 5);

  /* <cmath> on inputs the compiler cannot fold (argc is 1 when run) */
  std::vector<double> in(n), wave(n, -1.0), growth(n, -1.0), geo(n, -1.0);
  std::vector<float> inf(n), growthf(n, -1.0f);
  for (int i = 0; i < n; i++) {
    in[i] = 0.037 * (i + argc);
    inf[i] = 0.25f * (float)(i + argc);
  }
  const double *pin = in.data();
  const float *pinf = inf.data();
  double *pw = wave.data(), *pg = growth.data(), *pgeo = geo.data();
  float *pgf = growthf.data();
#pragma omp target teams distribute parallel for                             \
    map(to : pin[0 : n], pinf[0 : n])                                          \
    map(from : pw[0 : n], pg[0 : n], pgeo[0 : n], pgf[0 : n])
  for (int i = 0; i < n; i++) {
    pw[i] = mathk::wave(pin[i]);
    pg[i] = mathk::growth(pin[i]);
    pgeo[i] = mathk::geo(pin[i], 3.0 - pin[i]);
    pgf[i] = mathk::growthf(pinf[i]);
  }
  for (int i = 0; i < n; i++) {
    CHECK_NEAR("sin/cos/exp in a kernel", i, wave[i], mathk::wave(in[i]));
    CHECK_NEAR("pow/sqrt/log/cbrt in a kernel", i, growth[i],
               mathk::growth(in[i]));
    CHECK_NEAR("atan2/hypot/fmod in a kernel", i, geo[i],
               mathk::geo(in[i], 3.0 - in[i]));
    if (std::fabs(growthf[i] - mathk::growthf(inf[i])) >
        1e-5f * std::fabs(mathk::growthf(inf[i])))
      fail_at_d(__FILE__, __LINE__, "float pow/sqrt in a kernel", growthf[i],
                mathk::growthf(inf[i]));
  }

  return finish("namespace_math");
}
