// A grid field owning its storage in a std::vector; the device sees .data().
#pragma once
#include "physics.hpp"
#include "stats.hpp"
#include <cstddef>
#include <vector>

template <typename T> class Field {
public:
  explicit Field(std::size_t n, T init) : data_(n, init) {}

  std::size_t size() const { return data_.size(); }
  T &operator[](std::size_t i) { return data_[i]; }
  const T &operator[](std::size_t i) const { return data_[i]; }

  // Keep the field on the device between steps, as solvers do.
  void to_device()
  {
    T *p = data_.data();
    std::size_t n = data_.size();
#pragma omp target enter data map(to : p[0 : n])
  }
  void from_device()
  {
    T *p = data_.data();
    std::size_t n = data_.size();
#pragma omp target exit data map(from : p[0 : n])
  }

  // Apply f(i, value) on the device to every point (data must be present).
  template <typename F> void apply(F f)
  {
    T *p = data_.data();
    std::size_t n = data_.size();
#pragma omp target teams distribute parallel for map(present, alloc : p[0 : n]) firstprivate(f)
    for (std::size_t i = 0; i < n; ++i)
      p[i] = f(i, p[i]);
  }

  // One Jacobi-like relaxation sweep with a scratch copy on the device.
  void relax_sweep(T w)
  {
    T *p = data_.data();
    std::size_t n = data_.size();
    std::vector<T> scratch(n);
    T *s = scratch.data();
#pragma omp target data map(present, alloc : p[0 : n]) map(alloc : s[0 : n])
    {
#pragma omp target teams distribute parallel for
      for (std::size_t i = 0; i < n; ++i)
        s[i] = p[i];
#pragma omp target teams distribute parallel for firstprivate(w)
      for (std::size_t i = 0; i < n; ++i) {
        T left = i > 0 ? s[i - 1] : s[i];
        T right = i + 1 < n ? s[i + 1] : s[i];
        p[i] = phys::relax(s[i], left, right, w);
      }
    }
  }

  Stats summary() const
  {
    const T *p = data_.data();
    std::size_t n = data_.size();
    Stats st{0.0, 1e300, -1e300, 0};
#pragma omp target teams distribute parallel for map(present, alloc : p[0 : n]) reduction(merge : st)
    for (std::size_t i = 0; i < n; ++i) {
      Stats one{double(p[i]), double(p[i]), double(p[i]), 1};
      st = stats_merge(st, one);
    }
    return st;
  }

  void refresh_host()
  {
    T *p = data_.data();
    std::size_t n = data_.size();
#pragma omp target update from(p[0 : n])
  }

private:
  std::vector<T> data_;
};
