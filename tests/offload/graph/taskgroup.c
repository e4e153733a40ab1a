/*
 * taskgroup.c - taskgroups and barriers as the points where target work
 * must be complete.
 *
 *   taskgroup    a target nowait chain and a task without dependences in a
 *                taskgroup; the host reads the results right after it;
 *                a taskgroup whose last task is a `target update from
 *                nowait` of data kept on the device;
 *   nested       inside one taskgroup: host tasks that each create a
 *                target nowait chain (dependences among their own
 *                children) and return without waiting; a host task whose
 *                child host task creates a chain (two levels down); a
 *                host task that creates a chain, waits for it with
 *                taskwait and then uses the result on the host;
 *   taskloop     a taskloop (implicit taskgroup) whose iterations each
 *                create a target nowait task on their own block;
 *   threads      a parallel region in which every thread creates target
 *                nowait chains on its own data; an explicit barrier, after
 *                which each thread reads another thread's results on the
 *                host; a second barrier; more chains; the implicit barrier
 *                at the end of the region;
 *   single       target nowait tasks created in a single construct and
 *                completed by its implicit barrier only.
 *
 * Why: the end of a taskgroup waits for all descendant tasks, a barrier
 * for all tasks of the team. A deferred-execution runtime must run the
 * target tasks it has recorded, including those created by other threads
 * and by nested tasks, before these return. Updates are data-dependent
 * affine maps (graph_test.h), so an incomplete, reordered or lost task
 * changes checked values.
 */
#include <omp.h>
#include <stdio.h>

#include "graph_test.h"

#define M 256
#define W 100000  /* busy work per kernel (~0.13 ms) */
#define LEN 6     /* chain length */
#define NN 4      /* nested host tasks with a chain each */
#define NL 8      /* taskloop iterations */
#define NCH 8     /* chains in the parallel region */

#pragma omp declare target
/* graph_test.h's update on this test's arrays */
static void step(unsigned *x, unsigned m, unsigned c, int w) {
  graph_step(x, M, m, c, w);
}

/* y = y * m + x */
static void mix(unsigned *y, const unsigned *x, unsigned m) {
  for (int i = 0; i < M; i++)
    y[i] = y[i] * m + x[i];
}
#pragma omp end declare target

static void copy(unsigned *dst, const unsigned *src) {
  for (int i = 0; i < M; i++)
    dst[i] = src[i];
}

static unsigned mulk(unsigned k, unsigned s) { return 3u + 2u * ((k + s) % 6u); }

/* data */
static unsigned ga[M], gb[M], gaseen[M], gbseen[M], gc[M], gcseen[M];
static unsigned nest[NN][M], deep[M], tw[M], twseen[M];
static unsigned nestseen[NN][M], deepseen[M], twafter[M];
static unsigned tl[NL * M], tlseen[NL * M];
static unsigned pe[NCH][M], pseen[NCH][M];
static unsigned sg[M], sgseen[M];
/* references */
static unsigned Rga[M], Rgb[M], Rgc[M], Rgcseen[M], Rnest[NN][M], Rdeep[M],
    Rtw[M], Rtwseen[M], Rtl[NL * M], Rpe[NCH][M], Rpseen[NCH][M], Rsg[M];

static void init(unsigned *x, unsigned *r, int n, unsigned seed) {
  for (int i = 0; i < n; i++)
    x[i] = r[i] = seed * 2654435761u + (unsigned)i * 40503u;
}

static void taskgroups(void) {
#pragma omp taskgroup
  {
    for (unsigned s = 0; s < LEN; s++) {
#pragma omp target nowait map(tofrom : ga) depend(inout : ga) firstprivate(s)
      step(ga, mulk(0u, s), s, W);
    }
#pragma omp target nowait map(tofrom : gb)
    step(gb, 7u, 1u, 10 * W);
  }
  copy(gaseen, ga);
  copy(gbseen, gb);

#pragma omp target enter data map(to : gc)
#pragma omp taskgroup
  {
    for (unsigned s = 0; s < LEN; s++) {
#pragma omp target nowait depend(inout : gc) firstprivate(s)
      step(gc, mulk(1u, s), s, W);
    }
#pragma omp target update from(gc) depend(inout : gc) nowait
  }
  copy(gcseen, gc);
  for (int i = 0; i < M; i++)
    gc[i] ^= (unsigned)i << 3;
#pragma omp target update to(gc)
#pragma omp target
  step(gc, 9u, 2u, W);
#pragma omp target exit data map(from : gc)
}

static void taskgroups_ref(void) {
  for (unsigned s = 0; s < LEN; s++)
    step(Rga, mulk(0u, s), s, W);
  step(Rgb, 7u, 1u, 10 * W);
  for (unsigned s = 0; s < LEN; s++)
    step(Rgc, mulk(1u, s), s, W);
  copy(Rgcseen, Rgc);
  for (int i = 0; i < M; i++)
    Rgc[i] ^= (unsigned)i << 3;
  step(Rgc, 9u, 2u, W);
}

static void nested(void) {
#pragma omp taskgroup
  {
    for (unsigned k = 0; k < NN; k++) {
#pragma omp task firstprivate(k)
      {
        for (unsigned s = 0; s < LEN; s++) {
#pragma omp target nowait map(tofrom : nest[k][0 : M])                      \
    depend(inout : nest[k][0]) firstprivate(k, s)
          step(nest[k], mulk(k + 2u, s), s + k, W);
        }
      }
    }
#pragma omp task
    {
#pragma omp task
      {
        for (unsigned s = 0; s < LEN; s++) {
#pragma omp target nowait map(tofrom : deep) depend(inout : deep)           \
    firstprivate(s)
          step(deep, mulk(7u, s), s, W);
        }
      }
    }
#pragma omp task
    {
      for (unsigned s = 0; s < LEN; s++) {
#pragma omp target nowait map(tofrom : tw) depend(inout : tw) firstprivate(s)
        step(tw, mulk(8u, s), s, W);
      }
#pragma omp taskwait
      copy(twseen, tw);
      for (int i = 0; i < M; i++)
        tw[i] = tw[i] * 5u + 1u;
#pragma omp target nowait map(tofrom : tw) depend(inout : tw)
      step(tw, 11u, 3u, W);
    }
  }
  /* the taskgroup waited for all descendants */
  for (unsigned k = 0; k < NN; k++)
    copy(nestseen[k], nest[k]);
  copy(deepseen, deep);
  copy(twafter, tw);
}

static void nested_ref(void) {
  for (unsigned k = 0; k < NN; k++)
    for (unsigned s = 0; s < LEN; s++)
      step(Rnest[k], mulk(k + 2u, s), s + k, W);
  for (unsigned s = 0; s < LEN; s++)
    step(Rdeep, mulk(7u, s), s, W);
  for (unsigned s = 0; s < LEN; s++)
    step(Rtw, mulk(8u, s), s, W);
  copy(Rtwseen, Rtw);
  for (int i = 0; i < M; i++)
    Rtw[i] = Rtw[i] * 5u + 1u;
  step(Rtw, 11u, 3u, W);
}

static void taskloop(void) {
#pragma omp taskloop grainsize(1)
  for (int k = 0; k < NL; k++) {
#pragma omp target nowait map(tofrom : tl[k * M : M]) firstprivate(k)
    step(&tl[k * M], 13u, (unsigned)k, W);
  }
  /* the taskloop's implicit taskgroup waited for the target tasks */
  for (int k = 0; k < NL; k++)
    copy(&tlseen[k * M], &tl[k * M]);
}

static void taskloop_ref(void) {
  for (int k = 0; k < NL; k++)
    step(&Rtl[k * M], 13u, (unsigned)k, W);
}

/* chain c, steps [s0, s1), by whichever thread owns it */
static void chain_steps(unsigned c, unsigned s0, unsigned s1) {
  for (unsigned s = s0; s < s1; s++) {
#pragma omp target nowait map(tofrom : pe[c][0 : M]) depend(inout : pe[c][0]) \
    firstprivate(c, s)
    step(pe[c], mulk(c, s), s * 16u + c, W);
  }
}

static void threads(void) {
#pragma omp parallel num_threads(4)
  {
    unsigned t = (unsigned)omp_get_thread_num();
    unsigned nt = (unsigned)omp_get_num_threads();
    for (unsigned c = t; c < NCH; c += nt)
      chain_steps(c, 0u, LEN);
#pragma omp barrier
    /* every chain is complete: read the next chain's host copy */
    for (unsigned c = t; c < NCH; c += nt)
      copy(pseen[c], pe[(c + 1u) % NCH]);
#pragma omp barrier
    for (unsigned c = t; c < NCH; c += nt) {
#pragma omp target nowait map(tofrom : pe[c][0 : M]) map(to : pseen[c][0 : M]) \
    depend(inout : pe[c][0]) firstprivate(c)
      mix(pe[c], pseen[c], 3u);
      chain_steps(c, LEN, 2u * LEN);
    }
  }
}

static void threads_ref(void) {
  for (unsigned c = 0; c < NCH; c++)
    for (unsigned s = 0; s < LEN; s++)
      step(Rpe[c], mulk(c, s), s * 16u + c, W);
  for (unsigned c = 0; c < NCH; c++)
    copy(Rpseen[c], Rpe[(c + 1u) % NCH]);
  for (unsigned c = 0; c < NCH; c++) {
    mix(Rpe[c], Rpseen[c], 3u);
    for (unsigned s = LEN; s < 2u * LEN; s++)
      step(Rpe[c], mulk(c, s), s * 16u + c, W);
  }
}

static void single_barrier(void) {
#pragma omp parallel num_threads(4)
  {
#pragma omp single
    {
      for (unsigned s = 0; s < LEN; s++) {
#pragma omp target nowait map(tofrom : sg) depend(inout : sg) firstprivate(s)
        step(sg, mulk(9u, s), s, W);
      }
    }
    /* implicit barrier of single: the chain is complete */
#pragma omp masked
    copy(sgseen, sg);
  }
}

static void single_ref(void) {
  for (unsigned s = 0; s < LEN; s++)
    step(Rsg, mulk(9u, s), s, W);
}

int main(void) {
  init(ga, Rga, M, 1u);
  init(gb, Rgb, M, 2u);
  init(gc, Rgc, M, 3u);
  for (unsigned k = 0; k < NN; k++)
    init(nest[k], Rnest[k], M, 10u + k);
  init(deep, Rdeep, M, 4u);
  init(tw, Rtw, M, 5u);
  init(tl, Rtl, NL * M, 6u);
  for (unsigned c = 0; c < NCH; c++)
    init(pe[c], Rpe[c], M, 20u + c);
  init(sg, Rsg, M, 7u);
  taskgroups_ref();
  nested_ref();
  taskloop_ref();
  threads_ref();
  single_ref();

#pragma omp parallel num_threads(4)
#pragma omp single
  {
    taskgroups();
    nested();
    taskloop();
  }
  threads();
  single_barrier();

  for (int i = 0; i < M; i++) {
    CHECK_AT("taskgroup: chain, read after the taskgroup", i, gaseen[i],
             Rga[i]);
    CHECK_AT("taskgroup: task without dependences", i, gbseen[i], Rgb[i]);
    CHECK_AT("taskgroup: update from as its last task", i, gcseen[i],
             Rgcseen[i]);
    CHECK_AT("taskgroup: present data after the host change", i, gc[i],
             Rgc[i]);
    for (unsigned k = 0; k < NN; k++)
      CHECK_AT("nested: chain of host task k [k*M+i]", k * M + i,
               nestseen[k][i], Rnest[k][i]);
    CHECK_AT("nested: chain two levels down", i, deepseen[i], Rdeep[i]);
    CHECK_AT("nested: host after taskwait inside a task", i, twseen[i],
             Rtwseen[i]);
    CHECK_AT("nested: chain after taskwait inside a task", i, twafter[i],
             Rtw[i]);
    for (unsigned c = 0; c < NCH; c++) {
      CHECK_AT("threads: host read after the barrier [c*M+i]", c * M + i,
               pseen[c][i], Rpseen[c][i]);
      CHECK_AT("threads: chains [c*M+i]", c * M + i, pe[c][i], Rpe[c][i]);
    }
    CHECK_AT("single: read after its implicit barrier", i, sgseen[i],
             Rsg[i]);
  }
  for (int j = 0; j < NL * M; j++)
    CHECK_AT("taskloop: blocks", j, tlseen[j], Rtl[j]);
  return finish("taskgroup");
}
