/*
 * window.c - a task graph much larger than the runtime's window.
 *
 * 40 chains of 50 dependent target nowait tasks (2000 kernels) plus the
 * data directives around them, created without any taskwait, barrier,
 * host task or transfer to the host until the end:
 *   - every chain keeps its row on the device: it is entered and finally
 *     copied back by `target enter/exit data nowait` tasks in the same
 *     dependence chain, so nothing but the window forces a flush before
 *     the exit data tasks;
 *   - every tenth step a task of chain k also reads chain k+1's row
 *     (depend(in:) plus map(to:) of the present row), an edge between
 *     chains that usually crosses a window boundary, and the reader must
 *     also finish before chain k+1 writes its row again;
 *   - creation order alternates per block of ten steps between
 *     chain-major (ten tasks of one chain in a row) and step-major (one
 *     task of each chain in turn), so windows hold long pieces of one
 *     chain as well as single tasks of many chains;
 *   - at the end 40 more target tasks, chained through one result
 *     array, fold all rows into it (each waits for one chain's exit data
 *     and maps the row again), and a host task that depends on every
 *     chain through a depend iterator folds the host copies.
 * The host reference runs the same updates in creation order, which the
 * dependences make the only possible outcome.
 *
 * Why: a deferred-execution runtime flushes the recorded graph when it
 * holds more than OMPC_GRAPH_WINDOW tasks (the test is also run with
 * OMPC_GRAPH_WINDOW=16). Dependences from tasks of a new window to tasks
 * of earlier windows, including ones still running, must hold, and
 * nothing may be dropped or run twice at the boundaries. Every update is a
 * data-dependent affine map (graph_test.h), so any of these changes rows.
 */
#include <stdio.h>
#include <stdlib.h>

#include "graph_test.h"

#define NC 40    /* chains */
#define LEN 50   /* tasks per chain */
#define BLOCK 10 /* steps per creation block */
#define M 64     /* row length */
#define W 4000   /* busy work per kernel (~5 us) */

/* every chain's row is its own allocation, hence its own mapping. (A
 * reader of a neighbour maps two rows in one construct: OpenMP allows that
 * for two sections of one array only while both are present.) */
static unsigned *row[NC], total[M], hosttotal[M];
static unsigned rc[NC][M], rtotal[M];

#pragma omp declare target
/* x = x * m + k + nb (nb may be 0: no neighbour) + f(all of x) */
static void advance(unsigned *x, const unsigned *nb, unsigned m, unsigned k,
                    int w) {
  unsigned h = k;
  for (int i = 0; i < M; i++)
    h = h * 31u + x[i];
  h = spin(h, w);
  for (int i = 0; i < M; i++)
    x[i] = x[i] * m + k + (nb ? nb[i] * 3u : 0u) + (h >> 26);
}
#pragma omp end declare target

static unsigned mul(int k, int s) { return 3u + 2u * (unsigned)((k + s) % 7); }
static int reads_next(int s) { return s % BLOCK == 5; }

static void create_task(int k, int s) {
  unsigned m = mul(k, s), add = (unsigned)(k * LEN + s);
  unsigned *x = row[k], *nb = row[(k + 1) % NC];
  if (reads_next(s)) {
    /* both rows are present */
#pragma omp target nowait map(tofrom : x[0 : M]) map(to : nb[0 : M])        \
    depend(inout : x[0]) depend(in : nb[0]) firstprivate(m, add)
    advance(x, nb, m, add, W);
  } else {
#pragma omp target nowait map(tofrom : x[0 : M]) depend(inout : x[0])        \
    firstprivate(m, add)
    advance(x, 0, m, add, W);
  }
}

static void ref_task(int k, int s) {
  int k2 = (k + 1) % NC;
  advance(rc[k], reads_next(s) ? rc[k2] : 0, mul(k, s),
          (unsigned)(k * LEN + s), W);
}

/* creation order: block by block; within a block, chain-major or
 * step-major in turn; f is create_task or ref_task */
static void all_steps(void (*f)(int, int)) {
  for (int b = 0; b < LEN / BLOCK; b++) {
    if (b % 2 == 0) {
      for (int k = 0; k < NC; k++)
        for (int s = b * BLOCK; s < (b + 1) * BLOCK; s++)
          f(k, s);
    } else {
      for (int s = b * BLOCK; s < (b + 1) * BLOCK; s++)
        for (int k = 0; k < NC; k++)
          f(k, s);
    }
  }
}

#pragma omp declare target
/* one step of the fold of all rows */
static void fold_row(unsigned *out, const unsigned *x) {
  for (int i = 0; i < M; i++)
    out[i] = out[i] * 1000003u + x[i];
}
#pragma omp end declare target

int main(void) {
  for (int k = 0; k < NC; k++) {
    row[k] = malloc(M * sizeof(unsigned));
    for (int i = 0; i < M; i++)
      row[k][i] = rc[k][i] = (unsigned)(k * M + i) * 2654435761u;
  }
  all_steps(ref_task);
  for (int k = 0; k < NC; k++)
    fold_row(rtotal, rc[k]);

#pragma omp parallel num_threads(4)
#pragma omp single
  {
    for (int k = 0; k < NC; k++) {
      unsigned *x = row[k];
#pragma omp target enter data map(to : x[0 : M]) depend(out : x[0]) nowait
    }
    all_steps(create_task);
    for (int k = 0; k < NC; k++) {
      unsigned *x = row[k];
#pragma omp target exit data map(from : x[0 : M]) depend(inout : x[0]) nowait
    }
    /* a fold of all rows on the device, chained through total */
    for (int k = 0; k < NC; k++) {
      unsigned *x = row[k];
#pragma omp target nowait map(to : x[0 : M]) map(tofrom : total)            \
    depend(in : x[0]) depend(inout : total)
      fold_row(total, x);
    }
    /* one host task after every chain (a depend iterator) */
#pragma omp task depend(iterator(j = 0 : NC), in : row[j][0])
    {
      for (int k = 0; k < NC; k++)
        fold_row(hosttotal, row[k]);
    }
#pragma omp taskwait
  }

  for (int k = 0; k < NC; k++)
    for (int i = 0; i < M; i++)
      CHECK_AT("row of chain k [k*M+i]", k * M + i, row[k][i], rc[k][i]);
  for (int i = 0; i < M; i++) {
    CHECK_AT("fold of all rows on the device", i, total[i], rtotal[i]);
    CHECK_AT("fold of all rows by a host task", i, hosttotal[i], rtotal[i]);
  }
  for (int k = 0; k < NC; k++)
    free(row[k]);
  return finish("window");
}
