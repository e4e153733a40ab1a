/*
 * lambdas_members.cpp - lambdas and member functions inside target regions.
 *
 * Checks: lambdas defined inside a target region (plain, generic, capturing
 * device locals by reference, passed to a declare target function
 * template); a lambda defined on the host that captures scalars and a
 * small array by value, called inside the region (its closure is a
 * firstprivate copy); member functions (const and not, static, operators)
 * called on objects mapped to the device, whose changes come back with
 * `from`; an array of objects with operators in a std::vector mapped
 * through .data().
 *
 * Lambdas made on the host that capture by reference, capture a pointer,
 * or capture `this`, called on the device, are refused by ompc (see
 * ../errors/lambda_capture.cpp); LLVM's runtime runs them.
 *
 * Why: closures and objects are copied to the device as bytes; a runtime
 * that lost the closure copy, or did not bring an object mapped `tofrom`
 * back, changes the values checked here.  Outputs start as sentinels.
 */
#include <algorithm>
#include <vector>

#include "offload_check.h"

#pragma omp declare target
/* Applies f to 0..n-1: the lambda's type is a template argument. */
template <typename F> void for_n(int n, F f) {
  for (int i = 0; i < n; i++)
    f(i);
}

struct Vec3 {
  long x, y, z;
  Vec3 operator+(const Vec3 &o) const { return {x + o.x, y + o.y, z + o.z}; }
  Vec3 operator*(long s) const { return {x * s, y * s, z * s}; }
  long dot(const Vec3 &o) const { return x * o.x + y * o.y + z * o.z; }
  static Vec3 axis(int k) { return {k == 0, k == 1, k == 2}; }
};

class Counter {
public:
  void add(long v) {
    sum_ += v;
    n_++;
  }
  long sum() const { return sum_; }
  long count() const { return n_; }
  long weighted(long w) const { return sum_ * w + n_; }

private:
  long sum_ = 0;
  long n_ = 0;
};
#pragma omp end declare target

int main() {
  const int n = 200;

  /* lambdas defined inside the region */
  std::vector<long> out(n, -1);
  long *o = out.data();
#pragma omp target map(tofrom : o[0 : n])
  {
    auto sq = [](long v) { return v * v; };
    auto twice = [](auto v) { return v + v; }; /* generic */
    long acc = 0;
    auto bump = [&acc](long v) { acc += v; };    /* device local by ref */
    for_n(n, [&](int i) {
      o[i] = sq(i) + twice(i) + (long)twice(0.5 * i);
      bump(i);
    });
    o[0] = acc;
  }
  CHECK("lambda by reference to a device local", out[0], (long)n * (n - 1) / 2);
  for (int i = 1; i < n; i++)
    CHECK_AT("lambdas inside the region", i, out[i], (long)i * i + 2L * i + i);

  /* a host lambda capturing values (scalars and an array) */
  int k = 3;
  long off = 1000;
  int coef[4] = {2, 3, 5, 7};
  auto affine = [k, off, coef](int i) { return k * i * coef[i % 4] + off; };
  k = -50; /* after the capture: the closure keeps 3 */
  std::fill(out.begin(), out.end(), -1);
#pragma omp target map(from : o[0 : n])
  for (int i = 0; i < n; i++)
    o[i] = affine(i);
  for (int i = 0; i < n; i++)
    CHECK_AT("host lambda capturing by value", i, out[i],
             3L * i * coef[i % 4] + 1000);

  /* member functions on a mapped object; its state comes back */
  Counter c;
  c.add(5); /* host state the device copy starts from */
  long w = -1;
#pragma omp target map(tofrom : c) map(from : w)
  {
    for (int i = 1; i <= 10; i++)
      c.add(i);
    w = c.weighted(3);
  }
  CHECK("member function result on the device", w, (5 + 55) * 3 + 11);
  CHECK("object state back from the device (sum)", c.sum(), 60);
  CHECK("object state back from the device (count)", c.count(), 11);

  /* map(to:) an object: device changes stay on the device */
  Counter d;
  d.add(9);
  long seen = -1;
#pragma omp target map(to : d) map(from : seen)
  {
    d.add(1);
    seen = d.sum();
  }
  CHECK("device copy of a map(to) object", seen, 10);
  CHECK("host object after map(to)", d.sum(), 9);

  /* operators and a static member on objects in a vector */
  std::vector<Vec3> pts(n);
  for (int i = 0; i < n; i++)
    pts[i] = {i, 2L * i, -i};
  std::vector<long> dots(n, -1);
  Vec3 *pp = pts.data();
  long *pd = dots.data();
#pragma omp target teams distribute parallel for map(tofrom : pp[0 : n])     \
    map(from : pd[0 : n])
  for (int i = 0; i < n; i++) {
    Vec3 v = pp[i] * 3 + Vec3::axis(i % 3);
    pd[i] = v.dot(Vec3{1, 10, 100});
    pp[i] = v;
  }
  for (int i = 0; i < n; i++) {
    long ex = 3L * i + (i % 3 == 0), ey = 6L * i + (i % 3 == 1),
         ez = -3L * i + (i % 3 == 2);
    CHECK_AT("Vec3 operators (dot)", i, dots[i], ex + 10 * ey + 100 * ez);
    CHECK_AT("Vec3 operators (x back)", i, pts[i].x, ex);
    CHECK_AT("Vec3 operators (z back)", i, pts[i].z, ez);
  }

  return finish("lambdas_members");
}
