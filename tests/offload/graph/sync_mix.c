/*
 * sync_mix.c - synchronous target constructs among target nowait tasks.
 *
 *   sync-after   a synchronous `target depend(inout:)` after a nowait
 *                chain on the same data must wait for the chain; the
 *                host reads the result right after it returns; a
 *                synchronous `target depend(in:)` reads a nowait result;
 *   data region  `target data` enclosing nowait tasks on its (present)
 *                data, a taskwait, a synchronous `target update from`,
 *                a host change sent back with `target update to`, a
 *                synchronous target region, more nowait tasks, a taskwait;
 *                the data comes back at the end of the region;
 *   update-from  data kept with `target enter data`, nowait tasks, a
 *                taskwait, then a synchronous `target update from`;
 *   map-chain    a chain of target nowait tasks, each mapping the array
 *                itself (map(tofrom:), no enter data): each task's input
 *                is the host copy the previous task copied back. Readers
 *                with map(to:) and a writer with map(from:) that ignores
 *                the old contents are mixed in;
 *   enter-later  nowait tasks with map(tofrom:), a taskwait, then a
 *                synchronous `target enter data` must copy in their
 *                result; nowait tasks on the present data; taskwait;
 *                synchronous `target exit data`.
 *
 * Why: synchronous constructs are flush points of a deferred-execution
 * runtime: each must see every result it depends on, and its own result
 * must be visible as soon as it returns. A runtime that captured a task's
 * `to` data when the task was created rather than when it runs gets the
 * map-chain wrong. Updates are data-dependent affine maps (graph_test.h).
 */
#include <stdio.h>

#include "graph_test.h"

#define N 1024
#define W 100000 /* busy work per kernel (~0.13 ms) */
#define LEN 24   /* map-chain length */

#pragma omp declare target
/* graph_test.h's update on this test's arrays */
static void step(unsigned *x, unsigned m, unsigned c, int w) {
  graph_step(x, N, m, c, w);
}

/* y = y * m + x */
static void mix(unsigned *y, const unsigned *x, unsigned m) {
  for (int i = 0; i < N; i++)
    y[i] = y[i] * m + x[i];
}

static void copy(unsigned *dst, const unsigned *src) {
  for (int i = 0; i < N; i++)
    dst[i] = src[i];
}
#pragma omp end declare target

static unsigned sa[N], sb[N], sr[N], saseen[N];              /* sync-after */
static unsigned da[N], db[N], daseen[N];                     /* data region */
static unsigned uc[N], ucseen[N];                            /* update-from */
static unsigned x[N], acc[N], src[N];                        /* map-chain */
static unsigned w[N];                                        /* enter-later */

static void sync_after(void) {
#pragma omp target nowait map(tofrom : sa) depend(out : sa)
  step(sa, 3u, 1u, W);
#pragma omp target nowait map(tofrom : sa) depend(inout : sa)
  step(sa, 5u, 2u, W);
#pragma omp target map(tofrom : sa) depend(inout : sa)
  step(sa, 9u, 4u, W);
  copy(saseen, sa); /* the synchronous region's result is here now */
  /* a slow producer, and at once a synchronous reader */
#pragma omp target nowait map(tofrom : sb) depend(out : sb)
  step(sb, 7u, 3u, 20 * W);
#pragma omp target map(to : sb) map(from : sr) depend(in : sb)
  {
    copy(sr, sb);
    step(sr, 11u, 5u, W);
  }
#pragma omp target nowait map(tofrom : sa) depend(inout : sa)
  step(sa, 13u, 6u, W);
}

static void data_region(void) {
#pragma omp target data map(tofrom : da) map(to : db)
  {
    for (unsigned s = 0; s < 3; s++) {
#pragma omp target nowait depend(inout : da) firstprivate(s)
      step(da, 3u + 2u * s, s, W);
    }
#pragma omp target nowait depend(inout : db)
    step(db, 9u, 7u, W);
#pragma omp target nowait depend(in : db) depend(inout : da)
    mix(da, db, 11u);
#pragma omp taskwait
#pragma omp target update from(da)
    for (int i = 0; i < N; i++) {
      daseen[i] = da[i];
      da[i] = da[i] * 13u + (unsigned)i;
    }
#pragma omp target update to(da)
#pragma omp target
    step(da, 15u, 8u, W);
    for (unsigned s = 0; s < 2; s++) {
#pragma omp target nowait depend(inout : da) firstprivate(s)
      step(da, 17u + 2u * s, s, W);
    }
#pragma omp taskwait
  }
}

static void update_from(void) {
#pragma omp target enter data map(to : uc)
  for (unsigned s = 0; s < 4; s++) {
#pragma omp target nowait depend(inout : uc) firstprivate(s)
    step(uc, 3u + 4u * s, s + 1u, W);
  }
#pragma omp taskwait
#pragma omp target update from(uc)
  copy(ucseen, uc);
#pragma omp target nowait depend(inout : uc)
  step(uc, 21u, 9u, W);
#pragma omp taskwait
#pragma omp target exit data map(from : uc)
}

/* the kind of task at position s of the map-chain */
static int kind(unsigned s) {
  if (s == LEN / 2)
    return 2; /* writer with map(from:) only */
  return s % 4 == 3; /* 1: reader with map(to:), 0: map(tofrom:) update */
}

static void map_chain(void) {
  for (unsigned s = 0; s < LEN; s++) {
    if (kind(s) == 0) {
#pragma omp target nowait map(tofrom : x) depend(inout : x) firstprivate(s)
      step(x, 3u + 2u * (s % 9u), s, W);
    } else if (kind(s) == 1) {
#pragma omp target nowait map(to : x) map(tofrom : acc) depend(in : x)       \
    depend(inout : acc)
      mix(acc, x, 3u);
    } else {
#pragma omp target nowait map(from : x) map(to : src) depend(out : x)        \
    depend(in : src)
      {
        copy(x, src);
        step(x, 5u, 99u, W);
      }
    }
  }
}

static void enter_later(void) {
  for (unsigned s = 0; s < 3; s++) {
#pragma omp target nowait map(tofrom : w) depend(inout : w) firstprivate(s)
    step(w, 3u + 2u * s, s, W);
  }
#pragma omp taskwait
#pragma omp target enter data map(to : w)
  for (unsigned s = 0; s < 3; s++) {
#pragma omp target nowait depend(inout : w) firstprivate(s)
    step(w, 9u + 2u * s, s, W);
  }
#pragma omp taskwait
#pragma omp target exit data map(from : w)
}

int main(void) {
  static unsigned Rsa[N], Rsb[N], Rsr[N], Rsaseen[N], Rda[N], Rdb[N],
      Rdaseen[N], Ruc[N], Rucseen[N], Rx[N], Racc[N], Rw[N];
  for (int i = 0; i < N; i++) {
    sa[i] = Rsa[i] = (unsigned)i * 2654435761u;
    sb[i] = Rsb[i] = (unsigned)i * 40503u;
    da[i] = Rda[i] = (unsigned)i + 5u;
    db[i] = Rdb[i] = (unsigned)i * 7u + 1u;
    uc[i] = Ruc[i] = (unsigned)(N - i);
    x[i] = Rx[i] = (unsigned)i * 31u;
    acc[i] = Racc[i] = 1u;
    src[i] = (unsigned)i * 977u;
    w[i] = Rw[i] = (unsigned)i ^ 0x5555u;
  }

  /* references */
  step(Rsa, 3u, 1u, W);
  step(Rsa, 5u, 2u, W);
  step(Rsa, 9u, 4u, W);
  copy(Rsaseen, Rsa);
  step(Rsb, 7u, 3u, 20 * W);
  copy(Rsr, Rsb);
  step(Rsr, 11u, 5u, W);
  step(Rsa, 13u, 6u, W);

  for (unsigned s = 0; s < 3; s++)
    step(Rda, 3u + 2u * s, s, W);
  step(Rdb, 9u, 7u, W);
  mix(Rda, Rdb, 11u);
  for (int i = 0; i < N; i++) {
    Rdaseen[i] = Rda[i];
    Rda[i] = Rda[i] * 13u + (unsigned)i;
  }
  step(Rda, 15u, 8u, W);
  for (unsigned s = 0; s < 2; s++)
    step(Rda, 17u + 2u * s, s, W);

  for (unsigned s = 0; s < 4; s++)
    step(Ruc, 3u + 4u * s, s + 1u, W);
  copy(Rucseen, Ruc);
  step(Ruc, 21u, 9u, W);

  for (unsigned s = 0; s < LEN; s++) {
    if (kind(s) == 0) {
      step(Rx, 3u + 2u * (s % 9u), s, W);
    } else if (kind(s) == 1) {
      mix(Racc, Rx, 3u);
    } else {
      copy(Rx, src);
      step(Rx, 5u, 99u, W);
    }
  }

  for (unsigned s = 0; s < 3; s++)
    step(Rw, 3u + 2u * s, s, W);
  for (unsigned s = 0; s < 3; s++)
    step(Rw, 9u + 2u * s, s, W);

#pragma omp parallel num_threads(4)
#pragma omp single
  {
    /* sync-after and map-chain tasks are in flight together */
    map_chain();
    sync_after();
#pragma omp taskwait
    data_region();
    update_from();
    enter_later();
  }

  for (int i = 0; i < N; i++) {
    CHECK_AT("sync-after: result", i, sa[i], Rsa[i]);
    CHECK_AT("sync-after: host after the synchronous region", i, saseen[i],
             Rsaseen[i]);
    CHECK_AT("sync-after: synchronous reader", i, sr[i], Rsr[i]);
    CHECK_AT("sync-after: nowait producer", i, sb[i], Rsb[i]);
    CHECK_AT("data region: result at its end", i, da[i], Rda[i]);
    CHECK_AT("data region: host after update from", i, daseen[i],
             Rdaseen[i]);
    CHECK_AT("update-from: host after update from", i, ucseen[i],
             Rucseen[i]);
    CHECK_AT("update-from: result", i, uc[i], Ruc[i]);
    CHECK_AT("map-chain: result", i, x[i], Rx[i]);
    CHECK_AT("map-chain: readers", i, acc[i], Racc[i]);
    CHECK_AT("enter-later: result", i, w[i], Rw[i]);
  }
  return finish("sync_mix");
}
