// C++ habits around offloading: device buffers owned by RAII objects (a
// global one whose constructor maps data before main and whose destructor
// copies it back and frees device memory after main), and std::threads,
// not OpenMP threads, each running its own enter data / kernels /
// omp_target_alloc / exit data at once.  The destructor checks what it
// got back and ends the process with status 1 when wrong.
#include <cstdio>
#include <cstdlib>
#include <omp.h>
#include <thread>
#include <vector>

struct DeviceArray {
  double *host;
  double *scratch; // omp_target_alloc
  int n;
  double want5;
  explicit DeviceArray(int n_) : host(new double[n_]), n(n_), want5(5.0)
  {
    for (int i = 0; i < n; i++)
      host[i] = i;
    double *h = host;
#pragma omp target enter data map(to : h[0 : n_])
    scratch = static_cast<double *>(omp_target_alloc(sizeof(double) * n, omp_get_default_device()));
  }
  ~DeviceArray()
  {
    double *h = host;
    int m = n;
    // The host copy is stale until the exit data brings the device's back.
    h[5] = -1.0;
#pragma omp target exit data map(from : h[0 : m])
    omp_target_free(scratch, omp_get_default_device());
    bool ok = h[5] == want5;
    std::printf("%s raii: h[5] = %g, want %g\n", ok ? "PASS" : "FAIL", h[5], want5);
    std::fflush(stdout);
    delete[] host;
    if (!ok)
      std::_Exit(1);
  }
};

static DeviceArray global_array(100);
static constexpr int n = 20000;

int main()
{
  // The global's data was mapped before main: use it through scratch.
  double *h = global_array.host, *s = global_array.scratch;
#pragma omp target map(present, alloc : h[0 : 100]) is_device_ptr(s)
  for (int i = 0; i < 100; i++) {
    s[i] = h[i] * 3.0;
    h[i] = s[i] + 1.0;
  }
  global_array.want5 = 16.0;

  const int nthreads = 4;
  std::vector<std::vector<double>> data(nthreads, std::vector<double>(n, 1.0));
  std::vector<int> bad(nthreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; t++)
    threads.emplace_back([&data, &bad, t] {
      double *p = data[t].data();
#pragma omp target enter data map(to : p[0 : n])
      for (int it = 0; it < 10; it++) {
#pragma omp target teams distribute parallel for map(present, alloc : p[0 : n]) firstprivate(t)
        for (int i = 0; i < n; i++)
          p[i] += t + 1;
      }
      double *q = static_cast<double *>(omp_target_alloc(sizeof(double) * n, omp_get_default_device()));
#pragma omp target is_device_ptr(q) map(present, alloc : p[0 : n])
      for (int i = 0; i < n; i++)
        q[i] = p[i] * 2.0;
#pragma omp target is_device_ptr(q) map(present, alloc : p[0 : n])
      for (int i = 0; i < n; i++)
        p[i] = q[i] + i;
      omp_target_free(q, omp_get_default_device());
#pragma omp target exit data map(from : p[0 : n])
      for (int i = 0; i < n; i++)
        if (p[i] != 2.0 * (1.0 + 10.0 * (t + 1)) + i)
          bad[t]++;
    });
  for (auto &th : threads)
    th.join();
  int wrong = 0;
  for (int t = 0; t < nthreads; t++)
    wrong += bad[t];
  std::printf("%s threads: %d wrong values\n", wrong ? "FAIL" : "PASS", wrong);
  return wrong ? 1 : 0;
}
