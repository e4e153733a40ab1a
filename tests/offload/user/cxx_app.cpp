// A C++17 user program in several files: a class template over std::vector
// whose .data() stays mapped across member functions, lambdas passed into and
// made inside target regions, declare target functions and a variable from a
// static library, and a declare reduction on a struct.  Every step is
// redone on the host and compared, so a lost or repeated step shows.
#include "field.hpp"
#include "physics.hpp"
#include <cmath>
#include <cstdio>
#include <numeric>

static int failures;

// A lambda made inside a target region.  (Not in main: clang 19 leaves
// Field::apply<main's lambda> out of the device image when main has a
// target region holding a lambda too; docs/cxx.md.)
static void bump(double *p, std::size_t n, int shift)
{
#pragma omp target teams distribute parallel for map(present, alloc : p[0 : n]) firstprivate(shift)
  for (std::size_t i = 0; i < n; ++i) {
    auto step = [shift](double v, std::size_t j) { return v + double((j + shift) % 5); };
    p[i] = step(p[i], i);
  }
}

static void expect_near(const char *what, double got, double want)
{
  if (std::fabs(got - want) > 1e-9 * (1.0 + std::fabs(want))) {
    std::printf("FAIL %s: got %.12g want %.12g\n", what, got, want);
    ++failures;
  }
}

int main()
{
  constexpr std::size_t n = 4096;
  const double k = 0.001;
  Field<double> f(n, 1.0);
  std::vector<double> ref(n, 1.0);

  f.to_device();
  // The host copy changes while the field is mapped: no kernel may see it.
  for (std::size_t i = 0; i < n; ++i)
    f[i] = -7.0;

  // A lambda made on the host, capturing by value.
  auto init = [k](std::size_t i, double) { return phys::potential(double(i) * 0.01, k); };
  f.apply(init);
  for (std::size_t i = 0; i < n; ++i)
    ref[i] = phys::potential(double(i) * 0.01, k);

  for (int sweep = 0; sweep < 3; ++sweep) {
    double w = 0.5 + 0.1 * sweep;
    f.relax_sweep(w);
    std::vector<double> s = ref;
    for (std::size_t i = 0; i < n; ++i) {
      double left = i > 0 ? s[i - 1] : s[i];
      double right = i + 1 < n ? s[i + 1] : s[i];
      ref[i] = phys::relax(s[i], left, right, w);
    }
  }

  bump(&f[0], n, 3);
  for (std::size_t i = 0; i < n; ++i)
    ref[i] += double((i + 3) % 5);

  Stats st = f.summary();
  Stats want{0.0, 1e300, -1e300, 0};
  for (double v : ref)
    want = stats_merge(want, Stats{v, v, v, 1});
  expect_near("stats.sum", st.sum, want.sum);
  expect_near("stats.lo", st.lo, want.lo);
  expect_near("stats.hi", st.hi, want.hi);
  if (st.count != long(n)) {
    std::printf("FAIL stats.count: got %ld want %zu\n", st.count, n);
    ++failures;
  }

  // The host copy is still the sentinel until an update.
  expect_near("host before update", f[17], -7.0);
  f.refresh_host();
  expect_near("host after update", f[17], ref[17]);
  f.from_device();
  double got = std::accumulate(&f[0], &f[0] + n, 0.0);
  expect_near("field after exit data", got, std::accumulate(ref.begin(), ref.end(), 0.0));

  // The library's own target region on an unmapped vector.
  std::vector<double> u(n);
  std::iota(u.begin(), u.end(), 1.0);
  phys::damp(u.data(), n, 0.5);
  expect_near("damp", std::accumulate(u.begin(), u.end(), 0.0), 0.5 * double(n) * double(n + 1) / 2.0);

  if (failures) {
    std::printf("FAIL cxx_app: %d checks\n", failures);
    return 1;
  }
  std::printf("PASS cxx_app\n");
  return 0;
}
