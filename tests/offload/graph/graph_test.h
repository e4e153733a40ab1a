/*
 * graph_test.h - helpers shared by the deferred-execution tests.
 *
 * Results are checked and reported with the conformance suite's helpers
 * (CHECK, CHECK_AT, finish: ../conformance/offload_check.h). On top of them
 * this header gives every test the same busy work:
 *
 *   spin(v, n)  iterates a 32-bit linear congruential generator n times
 *               from v. Kernels fold a few bits of its value into their
 *               results, so the compiler cannot drop the loop, and the
 *               host reference computes the same value. It is the delay
 *               that lets independent tasks overlap and widens the
 *               window in which two dependent tasks that wrongly overlap
 *               would see each other's half-written data.
 *
 *   spin_ref(v, n)  the same value computed on the host in O(log n) steps
 *               (the n-fold composition of the affine map, by repeated
 *               squaring), for references of long busy work.
 *
 * All arithmetic is on unsigned integers (wrap-around is defined) and
 * every update is an affine map v -> v * m + c with m odd and different
 * per step: two such maps with different constants do not commute, so
 * running dependent steps in another order, twice, or not at all changes
 * the value.
 */
#ifndef GRAPH_TEST_H
#define GRAPH_TEST_H

#include "../conformance/offload_check.h"

#pragma omp declare target
static unsigned spin(unsigned v, int n) {
  for (int r = 0; r < n; r++)
    v = v * 1664525u + 1013904223u;
  return v;
}

/* The update the tests chain: x = x * m + c + f(all of x).  It reads every
 * element, works w steps, then writes, so overlapping dependent steps see
 * each other's half-written data. */
__attribute__((unused)) static void graph_step(unsigned *x, int n, unsigned m,
                                               unsigned c, int w) {
  unsigned h = c;
  for (int i = 0; i < n; i++)
    h = h * 31u + x[i];
  h = spin(h, w);
  for (int i = 0; i < n; i++)
    x[i] = x[i] * m + c + (h >> 24);
}
#pragma omp end declare target

__attribute__((unused)) static unsigned spin_ref(unsigned v, long n) {
  /* f(v) = a * v + c; g accumulates f^n, p is f^(2^k) */
  unsigned pa = 1664525u, pc = 1013904223u, ga = 1u, gc = 0u;
  for (; n > 0; n >>= 1) {
    if (n & 1) { /* g = p o g */
      gc = pa * gc + pc;
      ga = pa * ga;
    }
    pc = pa * pc + pc; /* p = p o p */
    pa = pa * pa;
  }
  return ga * v + gc;
}

#endif /* GRAPH_TEST_H */
