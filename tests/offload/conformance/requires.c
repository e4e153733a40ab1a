/*
 * requires.c - the `requires` clauses a cluster device honours:
 * unified_address, dynamic_allocators and atomic_default_mem_order.
 *
 * unified_address: device addresses from omp_target_alloc are used in
 * regions without is_device_ptr (the implicit zero-length map passes
 * them through) and stay valid from one region to the next.
 * dynamic_allocators: regions allocate and free memory with omp_alloc
 * and the default allocator, also from a parallel loop.
 * atomic_default_mem_order(seq_cst): atomics without a memory order in a
 * parallel loop inside a region count exactly.
 *
 * Why: the runtime must accept these directives at start-up (a runtime
 * that refuses every requires directive stops here), and what they allow
 * must work on whichever worker runs the region.
 */
#include <omp.h>
#include <stdio.h>

#include "offload_check.h"

#pragma omp requires unified_address
#pragma omp requires dynamic_allocators
#pragma omp requires atomic_default_mem_order(seq_cst)

#define N 256

int main(void) {
  int dev = omp_get_default_device();

  /* unified_address: a device pointer used without is_device_ptr */
  int *d = omp_target_alloc(N * sizeof(int), dev);
  CHECK("omp_target_alloc succeeded", d != NULL, 1);
#pragma omp target
  {
    for (int i = 0; i < N; i++)
      d[i] = 3 * i;
  }
#pragma omp target
  {
    for (int i = 0; i < N; i++)
      d[i] += 1;
  }
  int h[N];
  omp_target_memcpy(h, d, N * sizeof(int), 0, 0, omp_get_initial_device(),
                    dev);
  for (int i = 0; i < N; i++)
    CHECK_AT("device pointer without is_device_ptr", i, h[i], 3 * i + 1);
  omp_target_free(d, dev);

  /* dynamic_allocators: omp_alloc inside regions */
  long sum = -1;
  int fails = -1;
#pragma omp target map(from : sum, fails)
  {
    int bad = 0;
    long *buf = omp_alloc(N * sizeof(long), omp_default_mem_alloc);
    if (!buf) {
      bad = 1;
    } else {
      for (int i = 0; i < N; i++)
        buf[i] = (long)i * i;
      long s = 0;
      for (int i = 0; i < N; i++)
        s += buf[i];
      sum = s;
      omp_free(buf, omp_default_mem_alloc);
    }
#pragma omp parallel for reduction(+ : bad)
    for (int i = 0; i < 64; i++) {
      int *p = omp_alloc((size_t)(i + 1) * sizeof(int), omp_default_mem_alloc);
      if (!p) {
        bad++;
        continue;
      }
      p[i] = i;
      bad += p[i] != i;
      omp_free(p, omp_default_mem_alloc);
    }
    fails = bad;
  }
  CHECK("omp_alloc in a region", sum, (long)(N - 1) * N * (2 * N - 1) / 6);
  CHECK("omp_alloc in a parallel loop in a region", fails, 0);

  /* atomic_default_mem_order(seq_cst): atomics without a clause */
  int count = 0, flag = 0;
#pragma omp target map(tofrom : count, flag)
  {
#pragma omp parallel for
    for (int i = 0; i < 10000; i++) {
#pragma omp atomic update
      count += 1 + (i & 1);
    }
#pragma omp atomic write
    flag = 42;
  }
  CHECK("atomic update count", count, 15000);
  CHECK("atomic write", flag, 42);

  return finish("requires");
}
