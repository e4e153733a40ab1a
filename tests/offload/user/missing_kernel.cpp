// A target region clang 19 compiles for the host only: Box::apply
// instantiated with a lambda made in main, where main also has a target
// region holding a lambda.  Stock LLVM fails to load the kernel and
// crashes; ompc must stop at start-up naming the region and the cause.
#include <cstddef>
#include <cstdio>

template <typename T> struct Box {
  T *p;
  std::size_t n;
  template <typename F> void apply(F f)
  {
    T *q = p;
    std::size_t m = n;
#pragma omp target teams distribute parallel for map(tofrom : q[0 : m]) firstprivate(f)
    for (std::size_t i = 0; i < m; ++i)
      q[i] = f(i, q[i]);
  }
};

int main()
{
  double a[8] = {0};
  Box<double> b{a, 8};
  b.apply([](std::size_t i, double v) { return v + 0.5 * double(i); });
#pragma omp target map(tofrom : a[0 : 8])
  for (int i = 0; i < 8; i++) {
    auto bump = [](double v) { return v + 1.0; };
    a[i] = bump(a[i]);
  }
  std::printf("%s missing_kernel: a[3] = %g\n", a[3] == 2.5 ? "PASS" : "FAIL", a[3]);
  return a[3] == 2.5 ? 0 : 1;
}
