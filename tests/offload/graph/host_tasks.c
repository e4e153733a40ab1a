/*
 * host_tasks.c - host tasks inside graphs of target tasks.
 *
 * One graph, created inside parallel + single with no taskwait until the
 * end, holds:
 *   pipeline   8 rounds of: target kernel on data kept on the device ->
 *              `target update from nowait` -> host task that reads the
 *              host copy and changes it -> `target update to nowait`,
 *              all ordered by depend(inout) on the same array;
 *   mapped     a chain on data that is not kept on the device: target
 *              tasks with map(tofrom:) alternating with host tasks that
 *              read and change the host copy, a host reader and a target
 *              reader side by side, then a host writer that must wait for
 *              both;
 *   fan-in     three target chains and one host task that depends on all
 *              of them, whose result a target task then consumes;
 *   produced   a host task producing data that a target task reads with
 *              map(to:);
 *   unrelated  host tasks with no dependence on target work (a host-only
 *              dependence chain and tasks without depend clauses), created
 *              between the target tasks.
 *
 * Why: in a deferred-execution runtime target tasks may still be only
 * recorded when a host task that depends on them becomes ready, and the
 * host task must see their results (through the host copy a
 * `target update from` or a map(from:) wrote); target tasks after a host
 * task must see what it wrote. Host tasks that depend on nothing
 * target-related must run and finish normally meanwhile. Updates are
 * data-dependent affine maps (graph_test.h), so a stale, early or lost
 * value changes the checked results.
 */
#include <stdio.h>

#include "graph_test.h"

#define N 512
#define ROUNDS 8
#define NH 6       /* unrelated host tasks of each kind */
#define W 100000   /* busy work per kernel or host task (~0.13 ms) */

#pragma omp declare target
/* graph_test.h's update on this test's arrays */
static void step(unsigned *x, unsigned m, unsigned c, int w) {
  graph_step(x, N, m, c, w);
}

static void copy(unsigned *dst, const unsigned *src) {
  for (int i = 0; i < N; i++)
    dst[i] = src[i];
}
#pragma omp end declare target

/* pipeline */
static unsigned px[N], pseen[ROUNDS][N];
/* mapped */
static unsigned y[N], yseen[N], yread[N];
/* fan-in */
static unsigned a1[N], a2[N], a3[N], comb[N];
/* produced */
static unsigned g[N], gout[N];
/* unrelated */
static unsigned hz[N], free_out[NH];

/* host side of a data-dependent update, with w iterations of busy work */
static void host_change_w(unsigned *x, unsigned k, int w) {
  unsigned h = spin(x[0] ^ k, w);
  for (int i = 0; i < N; i++)
    x[i] = (x[i] ^ (k << 8)) * 5u + (unsigned)i + (h >> 28);
}

static void host_change(unsigned *x, unsigned k) { host_change_w(x, k, W); }

static void fold3(unsigned *out, const unsigned *p, const unsigned *q,
                  const unsigned *r) {
  for (int i = 0; i < N; i++)
    out[i] = p[i] * 3u + q[i] * 5u + r[i] * 7u;
}

static void run(void) {
#pragma omp target enter data map(to : px) depend(out : px) nowait
  /* produced: host task -> target reader */
#pragma omp task depend(out : g)
  {
    for (int i = 0; i < N; i++)
      g[i] = (unsigned)i * 7919u;
    host_change_w(g, 99u, 20 * W); /* slow: the reader must wait */
  }
#pragma omp target nowait map(to : g) map(from : gout) depend(in : g)        \
    depend(out : gout)
  {
    copy(gout, g);
    step(gout, 13u, 5u, W);
  }

  for (unsigned r = 0; r < ROUNDS; r++) {
    /* pipeline round r */
#pragma omp target nowait depend(inout : px) firstprivate(r)
    step(px, 3u + 2u * r, r, W);
#pragma omp target update from(px) depend(inout : px) nowait
#pragma omp task depend(inout : px) firstprivate(r)
    {
      copy(pseen[r], px);
      host_change(px, r);
    }
#pragma omp target update to(px) depend(inout : px) nowait

    /* unrelated host work in between: a host-only chain and free tasks */
    if (r < NH) {
#pragma omp task depend(inout : hz) firstprivate(r)
      host_change(hz, 100u + r);
#pragma omp task firstprivate(r)
      free_out[r] = spin(r, 20 * W);
    }

    /* the fan-in chains, one step each per round */
#pragma omp target nowait map(tofrom : a1) depend(inout : a1) firstprivate(r)
    step(a1, 7u, r, W);
#pragma omp target nowait map(tofrom : a2) depend(inout : a2) firstprivate(r)
    step(a2, 9u, r + 1u, W);
#pragma omp target nowait map(tofrom : a3) depend(inout : a3) firstprivate(r)
    step(a3, 11u, r + 2u, W);
  }
#pragma omp target exit data map(from : px) depend(inout : px) nowait

  /* mapped: target and host tasks on a host copy moved by map(tofrom:) */
#pragma omp target nowait map(tofrom : y) depend(inout : y)
  step(y, 3u, 1u, W);
#pragma omp task depend(inout : y)
  host_change(y, 1u);
#pragma omp target nowait map(tofrom : y) depend(inout : y)
  step(y, 5u, 2u, W);
#pragma omp task depend(in : y)
  copy(yseen, y);
#pragma omp target nowait map(to : y) map(from : yread) depend(in : y)       \
    depend(out : yread)
  {
    copy(yread, y);
    step(yread, 7u, 3u, W);
  }
#pragma omp task depend(inout : y)
  host_change(y, 2u);
#pragma omp target nowait map(tofrom : y) depend(inout : y)
  step(y, 9u, 4u, W);

  /* fan-in: a host task after three target chains, a target task after it */
#pragma omp task depend(in : a1, a2, a3) depend(out : comb)
  fold3(comb, a1, a2, a3);
#pragma omp target nowait map(to : comb) map(tofrom : a1) depend(in : comb)  \
    depend(inout : a1)
  {
    for (int i = 0; i < N; i++)
      a1[i] = a1[i] * 15u + comb[i];
  }
}

static void reference(unsigned *rpx, unsigned (*rpseen)[N], unsigned *ry,
                      unsigned *ryseen, unsigned *ryread, unsigned *ra1,
                      unsigned *ra2, unsigned *ra3, unsigned *rcomb,
                      unsigned *rg, unsigned *rgout, unsigned *rhz,
                      unsigned *rfree) {
  for (int i = 0; i < N; i++)
    rg[i] = (unsigned)i * 7919u;
  host_change_w(rg, 99u, 20 * W);
  copy(rgout, rg);
  step(rgout, 13u, 5u, W);
  for (unsigned r = 0; r < ROUNDS; r++) {
    step(rpx, 3u + 2u * r, r, W);
    copy(rpseen[r], rpx);
    host_change(rpx, r);
    if (r < NH) {
      host_change(rhz, 100u + r);
      rfree[r] = spin(r, 20 * W);
    }
    step(ra1, 7u, r, W);
    step(ra2, 9u, r + 1u, W);
    step(ra3, 11u, r + 2u, W);
  }
  step(ry, 3u, 1u, W);
  host_change(ry, 1u);
  step(ry, 5u, 2u, W);
  copy(ryseen, ry);
  copy(ryread, ry);
  step(ryread, 7u, 3u, W);
  host_change(ry, 2u);
  step(ry, 9u, 4u, W);
  fold3(rcomb, ra1, ra2, ra3);
  for (int i = 0; i < N; i++)
    ra1[i] = ra1[i] * 15u + rcomb[i];
}

int main(void) {
  static unsigned rpx[N], rpseen[ROUNDS][N], ry[N], ryseen[N], ryread[N],
      ra1[N], ra2[N], ra3[N], rcomb[N], rg[N], rgout[N], rhz[N], rfree[NH];
  for (int i = 0; i < N; i++) {
    px[i] = rpx[i] = (unsigned)i * 2654435761u;
    y[i] = ry[i] = (unsigned)i * 40503u + 1u;
    a1[i] = ra1[i] = (unsigned)i + 11u;
    a2[i] = ra2[i] = (unsigned)i * 3u + 12u;
    a3[i] = ra3[i] = (unsigned)i * 5u + 13u;
    hz[i] = rhz[i] = (unsigned)(N - i);
  }
  reference(rpx, rpseen, ry, ryseen, ryread, ra1, ra2, ra3, rcomb, rg, rgout,
            rhz, rfree);

#pragma omp parallel num_threads(4)
#pragma omp single
  {
    run();
#pragma omp taskwait
  }

  for (int i = 0; i < N; i++) {
    for (int r = 0; r < ROUNDS; r++)
      CHECK_AT("pipeline: host task of round r saw [r*N+i]", r * N + i,
               pseen[r][i], rpseen[r][i]);
    CHECK_AT("pipeline: result", i, px[i], rpx[i]);
    CHECK_AT("mapped: result", i, y[i], ry[i]);
    CHECK_AT("mapped: host reader", i, yseen[i], ryseen[i]);
    CHECK_AT("mapped: target reader", i, yread[i], ryread[i]);
    CHECK_AT("fan-in: host task after three chains", i, comb[i], rcomb[i]);
    CHECK_AT("fan-in: target task after the host task", i, a1[i], ra1[i]);
    CHECK_AT("fan-in: chain 2", i, a2[i], ra2[i]);
    CHECK_AT("fan-in: chain 3", i, a3[i], ra3[i]);
    CHECK_AT("produced: host data read by a target task", i, gout[i],
             rgout[i]);
    CHECK_AT("unrelated: host-only chain", i, hz[i], rhz[i]);
  }
  for (int r = 0; r < NH; r++)
    CHECK_AT("unrelated: free host task", r, free_out[r], rfree[r]);
  return finish("host_tasks");
}
