/*
 * indirect.c - calls through function pointers to `declare target
 * indirect` functions inside target regions.
 *
 * Checks that a host function pointer reaches the device and calls the
 * function it names: passed as a captured scalar (implicitly), as an
 * explicit firstprivate, chosen per iteration from several inside a
 * parallel loop, read from a mapped array of pointers, read from a mapped
 * struct that also carries data, and in `target nowait` tasks that may run
 * on different devices or workers.  Both forms of the directive are used
 * (`begin declare target indirect` and `declare target to(...) indirect`).
 *
 * Why: the device code calls the pointer value it is given, which is a
 * host address; a runtime that does not turn it into the device function
 * (on every worker, each of which loads the device image at its own
 * address) jumps into the wrong place and crashes or computes garbage.
 * Every function computes something different, so a call that reaches the
 * wrong function changes a checked value.
 */
#include <stdio.h>

#include "offload_check.h"

#define N 96
#define NFN 4

#pragma omp begin declare target indirect
int add7(int x) { return x + 7; }
int square(int x) { return x * x; }
#pragma omp end declare target

int negate_twice(int x) { return -2 * x; }
int mix3(int x) { return (x ^ 0x55) + 3 * x; }
#pragma omp declare target to(negate_twice, mix3) indirect

typedef int (*fn_t)(int);

static int host_apply(int k, int x) {
  static const fn_t fns[NFN] = {add7, square, negate_twice, mix3};
  return fns[k](x);
}

struct ops {
  fn_t first, second;
  int bias;
};

int main(void) {
  static const fn_t fns_init[NFN] = {add7, square, negate_twice, mix3};
  fn_t table[NFN];
  for (int k = 0; k < NFN; k++)
    table[k] = fns_init[k];
  int out[N];

  /* captured pointer (implicitly mapped as a zero-length section) */
  fn_t f = mix3;
  int r = 0;
#pragma omp target map(from : r)
  { r = f(11); }
  CHECK("pointer captured by the region", r, mix3(11));

  /* explicit firstprivate, used in a parallel loop */
  fn_t g = square;
#pragma omp target firstprivate(g) map(from : out)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      out[i] = g(i - 40);
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("firstprivate function pointer", i, out[i], square(i - 40));

  /* each pointer in turn, as four separate launches */
  for (int k = 0; k < NFN; k++) {
    fn_t h = table[k];
#pragma omp target map(from : r)
    { r = h(k + 100); }
    CHECK_AT("pointer per launch", k, r, host_apply(k, k + 100));
  }

  /* a mapped array of pointers, one chosen per iteration */
#pragma omp target map(to : table[0 : NFN]) map(from : out)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++)
      out[i] = table[i % NFN](i);
  }
  for (int i = 0; i < N; i++)
    CHECK_AT("pointer read from a mapped array", i, out[i],
             host_apply(i % NFN, i));

  /* a mapped struct holding pointers and data, kept on the device by
   * target data and read by two regions */
  struct ops o = {negate_twice, add7, 5};
#pragma omp target data map(to : o)
  {
#pragma omp target map(from : out)
    {
      for (int i = 0; i < N; i++)
        out[i] = o.second(o.first(i)) + o.bias;
    }
    for (int i = 0; i < N; i++)
      CHECK_AT("pointers read from a mapped struct", i, out[i],
               add7(negate_twice(i)) + 5);
    o.first = square; /* host copy only: the device keeps negate_twice */
#pragma omp target map(from : r)
    { r = o.first(9); }
    CHECK("struct pointer keeps its device value", r, negate_twice(9));
#pragma omp target update to(o)
#pragma omp target map(from : r)
    { r = o.first(9); }
    CHECK("struct pointer after target update to", r, square(9));
  }

  /* independent tasks, spread over devices or workers */
  int res[2 * NFN] = {0};
  for (int t = 0; t < 2 * NFN; t++) {
    fn_t h = table[t % NFN];
#pragma omp target map(from : res[t : 1]) nowait
    {
      int acc = 0;
      for (int i = 0; i < 10; i++)
        acc += h(i + t);
      res[t] = acc;
    }
  }
#pragma omp taskwait
  for (int t = 0; t < 2 * NFN; t++) {
    int acc = 0;
    for (int i = 0; i < 10; i++)
      acc += host_apply(t % NFN, i + t);
    CHECK_AT("pointer in a nowait task", t, res[t], acc);
  }

  return finish("indirect");
}
