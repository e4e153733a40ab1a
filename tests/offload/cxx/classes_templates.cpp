/*
 * classes_templates.cpp - C++ classes and templates in target regions.
 *
 * Checks: a function template holding a target region, instantiated for
 * int, float and double (one kernel per instantiation), on std::vector data
 * mapped through .data(); a class template's constructor, operator() and
 * const member functions called on the device copy of an object; a member
 * function whose target region uses members through `this` and a vector
 * member through .data(); objects with virtual functions built on the
 * device and called through base pointers; target data + target update on
 * vector data; a chain of `target nowait depend` tasks on vector data.
 *
 * Why: C++ makes one kernel per template instantiation, with mangled names,
 * and the device image carries constructors and vtables of its own.  A
 * runtime that confused two instantiations' entries, lost one, or left
 * `this` pointing at host memory gives wrong values below.  Every output
 * starts as a sentinel the kernels overwrite, and the host changes its
 * copies while data is mapped, so a lost or extra transfer shows.
 */
#include <cstdint>
#include <vector>

#include "offload_check.h"

#pragma omp declare target
template <typename T> class Poly {
public:
  Poly(T a, T b, T c) : a_(a), b_(b), c_(c) {}
  T operator()(T x) const { return (a_ * x + b_) * x + c_; }
  T lead() const { return a_; }
  Poly derivative() const { return Poly(T(0), T(2) * a_, b_); }

private:
  T a_, b_, c_;
};

struct Shape {
  virtual ~Shape() = default;
  virtual long area() const = 0;
  virtual long sides() const { return 0; }
};
struct Rect : Shape {
  long w, h;
  Rect(long w_, long h_) : w(w_), h(h_) {}
  long area() const override { return w * h; }
  long sides() const override { return 4; }
};
struct Tri : Shape {
  long b, h;
  Tri(long b_, long h_) : b(b_), h(h_) {}
  long area() const override { return b * h / 2; }
  long sides() const override { return 3; }
};

/* Builds objects of both classes on the device and sums through Shape*. */
long shapes_on_device(const long *dims, int n) {
  long s = 0;
  for (int i = 0; i < n; i++) {
    Rect r(dims[2 * i], dims[2 * i + 1]);
    Tri t(dims[2 * i + 1], dims[2 * i]);
    const Shape *all[2] = {&r, &t};
    for (const Shape *p : all)
      s += p->area() * 10 + p->sides();
  }
  return s;
}
#pragma omp end declare target

/* One kernel per T: y[i] = p(x[i]) + p'(x[i]) * lead. */
template <typename T>
void apply_poly(const Poly<T> &p, const std::vector<T> &x, std::vector<T> &y) {
  const T *xs = x.data();
  T *ys = y.data();
  size_t n = x.size();
#pragma omp target teams distribute parallel for map(to : xs[0 : n], p)      \
    map(tofrom : ys[0 : n])
  for (size_t i = 0; i < n; i++)
    ys[i] = p(xs[i]) + p.derivative()(xs[i]) * p.lead();
}

template <typename T> T host_poly(T a, T b, T c, T x) {
  return (a * x + b) * x + c + (T(2) * a * x + b) * a;
}

/* Integer-valued inputs: every result is exact in float and double too. */
template <typename T> void check_poly(const char *what, T a, T b, T c) {
  const size_t n = 301;
  std::vector<T> x(n), y(n, T(-12345));
  for (size_t i = 0; i < n; i++)
    x[i] = T((long)i - 150);
  apply_poly(Poly<T>(a, b, c), x, y);
  for (size_t i = 0; i < n; i++)
    CHECK_AT(what, (long)i, (long long)y[i], (long long)host_poly(a, b, c, x[i]));
}

/* A class whose member function offloads work on its own data. */
class Grid {
public:
  Grid(size_t n, int scale) : u_(n), scale_(scale) {
    for (size_t i = 0; i < n; i++)
      u_[i] = (int)(i * 7 % 13);
  }
  /* u[i] = scale * u[i] + offset_ + i; offset_ is read through `this`. */
  void step_on_device() {
    int *u = u_.data();
    size_t n = u_.size();
#pragma omp target map(tofrom : u[0 : n])
    for (size_t i = 0; i < n; i++)
      u[i] = scale_ * u[i] + offset_ + (int)i;
    offset_ += 1;
  }
  const std::vector<int> &values() const { return u_; }

private:
  std::vector<int> u_;
  int scale_;
  int offset_ = 100;
};

int main() {
  check_poly<int>("Poly<int> kernel", 3, -2, 7);
  check_poly<float>("Poly<float> kernel", 2.0f, 5.0f, -1.0f);
  check_poly<double>("Poly<double> kernel", -4.0, 1.0, 11.0);

  /* member function with a target region, twice: the second run must see
   * the first one's results and the host's change to offset_ */
  Grid g(97, 3);
  std::vector<int> expect = g.values();
  for (int step = 0; step < 2; step++) {
    g.step_on_device();
    for (size_t i = 0; i < expect.size(); i++)
      expect[i] = 3 * expect[i] + 100 + step + (int)i;
  }
  for (size_t i = 0; i < expect.size(); i++)
    CHECK_AT("Grid::step_on_device", (long)i, g.values()[i], expect[i]);

  /* virtual calls on objects built on the device */
  std::vector<long> dims = {3, 4, 5, 6, 7, 8, 9, 10};
  const long *d = dims.data();
  long total = -1;
#pragma omp target map(to : d[0 : 8]) map(from : total)
  total = shapes_on_device(d, 4);
  long want = 0;
  for (int i = 0; i < 4; i++)
    want += dims[2 * i] * dims[2 * i + 1] * 10 + 4 +
            dims[2 * i + 1] * dims[2 * i] / 2 * 10 + 3;
  CHECK("virtual calls on device-built objects", total, want);

  /* target data + update on vector data: the host's own changes while the
   * data is mapped must not reach the device, the device's must not come
   * back before `update from` */
  const size_t n = 1000;
  std::vector<double> a(n), b(n, -1.0);
  for (size_t i = 0; i < n; i++)
    a[i] = (double)i;
  double *pa = a.data(), *pb = b.data();
#pragma omp target data map(to : pa[0 : n]) map(tofrom : pb[0 : n])
  {
    for (size_t i = 0; i < n; i++)
      pa[i] = -7.0; /* host only */
#pragma omp target
    for (size_t i = 0; i < n; i++)
      pb[i] = 2.0 * pa[i];
    for (size_t i = 0; i < n; i++)
      CHECK_AT("no copy back inside target data", (long)i, (long long)pb[i], -1);
#pragma omp target update from(pb[100 : 50])
    for (size_t i = 0; i < n; i++)
      CHECK_AT("update from(vector section)", (long)i, (long long)pb[i],
               (i >= 100 && i < 150) ? 2 * (long long)i : -1);
    for (size_t i = 0; i < n; i++)
      pa[i] = (double)(3 * i);
#pragma omp target update to(pa[0 : n])
#pragma omp target
    for (size_t i = 0; i < n; i++)
      pb[i] += pa[i];
  }
  for (size_t i = 0; i < n; i++)
    CHECK_AT("vector data after target data", (long)i, (long long)b[i],
             2 * (long long)i + 3 * (long long)i);

  /* a chain of nowait tasks on three vectors: each step is affine and does
   * not commute with the others, so a reordering changes the result */
  std::vector<int64_t> v1(n, 1), v2(n, 2), v3(n, 3);
  int64_t *p1 = v1.data(), *p2 = v2.data(), *p3 = v3.data();
#pragma omp target nowait depend(inout : p1[0]) map(tofrom : p1[0 : n])
  for (size_t i = 0; i < n; i++)
    p1[i] = p1[i] * 5 + (int64_t)i;
#pragma omp target nowait depend(in : p1[0]) depend(inout : p2[0])           \
    map(to : p1[0 : n]) map(tofrom : p2[0 : n])
  for (size_t i = 0; i < n; i++)
    p2[i] = p2[i] * 3 + p1[i];
#pragma omp target nowait depend(in : p2[0]) depend(inout : p3[0], p1[0])    \
    map(tofrom : p3[0 : n], p1[0 : n]) map(to : p2[0 : n])
  for (size_t i = 0; i < n; i++) {
    p3[i] = p3[i] * 7 - p2[i];
    p1[i] = p1[i] - 1;
  }
#pragma omp taskwait
  for (size_t i = 0; i < n; i++) {
    int64_t e1 = 5 + (int64_t)i;
    int64_t e2 = 6 + e1;
    CHECK_AT("nowait chain v1", (long)i, v1[i], e1 - 1);
    CHECK_AT("nowait chain v2", (long)i, v2[i], e2);
    CHECK_AT("nowait chain v3", (long)i, v3[i], 21 - e2);
  }

  return finish("classes_templates");
}
