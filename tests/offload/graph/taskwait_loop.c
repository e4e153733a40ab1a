/*
 * taskwait_loop.c - a time-step loop with a taskwait in every step.
 *
 * Each step creates several target nowait tasks with dependences: updates
 * of A and B (kept on the device with target enter data), a task combining
 * them into C (also on the device), and a task that folds C into D, which
 * is not kept on the device (each task maps D itself). Then `taskwait`,
 * after which the host reads the step's results and changes the data for
 * the next step:
 *   - C reaches the host in turn by a `target update from nowait` task
 *     created before the taskwait, by a synchronous `target update from`
 *     after it, or by a synchronous target region copying C into a host
 *     array with map(from:);
 *   - the host changes D directly (the next step's task maps it again);
 *   - every other step the host changes B and sends it with
 *     `target update to` (synchronous, or nowait with a dependence).
 * The host compares every step's C and D with a reference computed step by
 * step. The loop runs twice: inside parallel + single (other threads help
 * with tasks) and on the initial thread alone.
 *
 * Why: a deferred-execution runtime runs the recorded target tasks when a
 * taskwait is reached. Each step's results must be complete at that point
 * and what the host changes after it must be what the next step reads.
 * The updates are data-dependent affine maps (graph_test.h), so a step
 * run late, twice, out of order or on stale data changes C and D.
 */
#include <stdio.h>

#include "graph_test.h"

#define N 1024
#define STEPS 24
#define W 200000 /* busy work per kernel (~0.25 ms) */

static unsigned A[N], B[N], C[N], D[N], Ch[N];
/* reference */
static unsigned rA[N], rB[N], rC[N], rD[N];

#pragma omp declare target
/* graph_test.h's update on this test's arrays */
static void step(unsigned *x, unsigned m, unsigned c, int w) {
  graph_step(x, N, m, c, w);
}

static void combine(unsigned *c, const unsigned *a, const unsigned *b,
                    unsigned t) {
  for (int i = 0; i < N; i++)
    c[i] = a[i] * 7u + (b[i] ^ t);
}

static void fold(unsigned *d, const unsigned *c, int w) {
  unsigned h = spin(c[0] ^ d[0], w);
  for (int i = 0; i < N; i++)
    d[i] = d[i] * 9u + c[i] + (h >> 28);
}
#pragma omp end declare target

static void init(void) {
  for (int i = 0; i < N; i++) {
    A[i] = rA[i] = (unsigned)i * 2654435761u;
    B[i] = rB[i] = (unsigned)i * 40503u + 17u;
    C[i] = rC[i] = 0u;
    D[i] = rD[i] = (unsigned)(N - i);
  }
}

static void ref_step(unsigned t) {
  step(rA, 3u + 2u * (t % 5u), t, W);
  step(rB, 5u, t ^ 7u, W);
  combine(rC, rA, rB, t);
  fold(rD, rC, W);
}

/* the loop; in_parallel: inside parallel + single, else on this thread */
static void run(int in_parallel, const char *where) {
  char lc[96], ld[96], la[96], lb[96], lf[96];
  snprintf(lc, sizeof lc, "%s: C seen by the host [step*N+i]", where);
  snprintf(ld, sizeof ld, "%s: D seen by the host [step*N+i]", where);
  snprintf(la, sizeof la, "%s: final A", where);
  snprintf(lb, sizeof lb, "%s: final B", where);
  snprintf(lf, sizeof lf, "%s: final C", where);
  init();
#pragma omp target enter data map(to : A, B, C)
#pragma omp parallel if (in_parallel) num_threads(4)
#pragma omp single
  {
    for (unsigned t = 0; t < STEPS; t++) {
#pragma omp target nowait depend(inout : A) firstprivate(t)
      step(A, 3u + 2u * (t % 5u), t, W);
#pragma omp target nowait depend(inout : B) firstprivate(t)
      step(B, 5u, t ^ 7u, W);
#pragma omp target nowait depend(in : A, B) depend(out : C) firstprivate(t)
      combine(C, A, B, t);
#pragma omp target nowait map(tofrom : D) depend(in : C) depend(inout : D)
      fold(D, C, W);
      if (t % 3 == 0) {
#pragma omp target update from(C) depend(inout : C) nowait
      }
#pragma omp taskwait
      const unsigned *seen = C;
      if (t % 3 == 1) {
#pragma omp target update from(C)
      } else if (t % 3 == 2) {
#pragma omp target map(from : Ch)
        {
          for (int i = 0; i < N; i++)
            Ch[i] = C[i];
        }
        seen = Ch;
      }

      ref_step(t);
      for (int i = 0; i < N; i++) {
        CHECK_AT(lc, (long)t * N + i, seen[i], rC[i]);
        CHECK_AT(ld, (long)t * N + i, D[i], rD[i]);
      }
      /* the host changes D and (every other step) B for the next step */
      for (int i = 0; i < N; i++) {
        D[i] ^= seen[i] >> 3;
        rD[i] ^= rC[i] >> 3;
      }
      if (t % 2 == 1) {
        for (int i = 0; i < N; i++) {
          B[i] = seen[i] + t * (unsigned)i;
          rB[i] = rC[i] + t * (unsigned)i;
        }
        if (t % 4 == 1) {
#pragma omp target update to(B)
        } else {
#pragma omp target update to(B) depend(inout : B) nowait
        }
      }
    }
#pragma omp taskwait
  }
#pragma omp target exit data map(from : A, B, C)
  for (int i = 0; i < N; i++) {
    CHECK_AT(la, i, A[i], rA[i]);
    CHECK_AT(lb, i, B[i], rB[i]);
    CHECK_AT(lf, i, C[i], rC[i]);
  }
}

int main(void) {
  run(1, "parallel + single");
  run(0, "initial thread only");
  return finish("taskwait_loop");
}
