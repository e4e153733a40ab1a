/*
 * depend_data.c - data reached through device pointers, named by depend.
 *
 * Kernels get input buffers as device addresses inside a mapped array
 * (from omp_get_mapped_ptr) and their output through is_device_ptr; the
 * only thing that tells the runtime which data they use is their depend
 * list (with an iterator).  Under ompc, mapped data a target task's depend
 * list names travels to the worker that runs it, read-only when named only
 * by depend(in:), so the results must be right wherever tasks run.
 */
#include <omp.h>
#include <stdio.h>
#define N 1000
static int a[N], b[N], c[N];
int main(void) {
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = 2 * i; c[i] = 0; }
#pragma omp target enter data map(to: a, b, c)
  int dev = omp_get_default_device();
  int *da = omp_get_mapped_ptr(a, dev), *db = omp_get_mapped_ptr(b, dev), *dc = omp_get_mapped_ptr(c, dev);
#pragma omp parallel
#pragma omp single
  {
    for (int k = 0; k < 5; k++) {
      const int *ins[2] = {da, db};
      int *in_host[2] = {a, b};
      int n = 2;
#pragma omp target nowait map(to: ins[0:2]) is_device_ptr(dc) depend(iterator(j=0:n), in: *in_host[j]) depend(inout: c[0]) firstprivate(k)
      for (int i = 0; i < N; i++) dc[i] += ins[0][i] + ins[1][i] + k;
#pragma omp target nowait is_device_ptr(da) depend(inout: a[0]) depend(in: c[0])
      for (int i = 0; i < N; i++) da[i] += 1;
    }
#pragma omp taskwait
  }
#pragma omp target exit data map(from: a, c) map(release: b)
  long bad = 0; int ra[N], rc[N];
  for (int i = 0; i < N; i++) { ra[i] = i; rc[i] = 0; }
  for (int k = 0; k < 5; k++) { for (int i = 0; i < N; i++) rc[i] += ra[i] + 2 * i + k; for (int i = 0; i < N; i++) ra[i] += 1; }
  for (int i = 0; i < N; i++) bad += (a[i] != ra[i]) + (c[i] != rc[i]);
  printf("bad=%ld\n", bad);
  return bad != 0;
}
