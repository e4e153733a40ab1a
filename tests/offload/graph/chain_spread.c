/*
 * chain_spread.c - one long dependent chain, then many independent tasks.
 *
 * Phase 1: one buffer is kept on the device (target enter data) and 40
 * target nowait tasks update it in place, each with depend(inout:) on it,
 * so they form one chain; taskwait; the buffer comes back with target
 * exit data.
 * Phase 2: 24 independent target nowait tasks, each mapping its own part
 * of an array (map(tofrom: part[i*M:M])) and doing ~30 ms of busy work;
 * taskwait.
 * Both phases check every element against a host reference (the busy
 * work's value is computed with spin_ref, graph_test.h, so the reference
 * is cheap).
 *
 * Why: both shapes must give correct results under any schedule. The
 * program prints nothing but its verdict; under ompc, OMPC_STATS=1 shows
 * where tasks ran: a scheduler like HEFT should keep the chain on one
 * worker (moving its buffer costs time and gains nothing) and spread the
 * independent tasks over all workers.
 */
#include <stdio.h>

#include "graph_test.h"

#define N 4096          /* chain buffer */
#define LEN 40          /* chain length */
#define WC 1000000      /* busy work per chain task (~1.3 ms) */
#define P 24            /* independent tasks */
#define M 1024          /* part per independent task */
#define WP 23000000     /* busy work per independent task (~30 ms) */

static unsigned buf[N], rbuf[N];
static unsigned part[P * M], rpart[P * M];

#pragma omp declare target
/* chain step s: x = x * m + s + f(all of x) */
static void chain_step(unsigned *x, unsigned s, unsigned hv) {
  for (int i = 0; i < N; i++)
    x[i] = x[i] * (3u + 2u * (s % 7u)) + s + (hv >> 24);
}

static unsigned digest(const unsigned *x, int n, unsigned seed) {
  unsigned h = seed;
  for (int i = 0; i < n; i++)
    h = h * 31u + x[i];
  return h;
}

/* independent task i on its own part */
static void work(unsigned *x, unsigned i, unsigned hv) {
  for (int j = 0; j < M; j++)
    x[j] = x[j] * 5u + i + (hv >> 20);
}
#pragma omp end declare target

int main(void) {
  for (int i = 0; i < N; i++)
    buf[i] = rbuf[i] = (unsigned)i * 2654435761u;
  for (int j = 0; j < P * M; j++)
    part[j] = rpart[j] = (unsigned)j * 40503u + 7u;

  for (unsigned s = 0; s < LEN; s++)
    chain_step(rbuf, s, spin_ref(digest(rbuf, N, s), WC));
  for (unsigned i = 0; i < P; i++)
    work(&rpart[i * M], i, spin_ref(digest(&rpart[i * M], M, i), WP));

#pragma omp parallel num_threads(4)
#pragma omp single
  {
    /* phase 1: one chain on a buffer kept on the device */
#pragma omp target enter data map(to : buf)
    for (unsigned s = 0; s < LEN; s++) {
#pragma omp target nowait depend(inout : buf) firstprivate(s)
      chain_step(buf, s, spin(digest(buf, N, s), WC));
    }
#pragma omp taskwait
#pragma omp target exit data map(from : buf)

    /* phase 2: independent tasks, each with its own part */
    for (unsigned i = 0; i < P; i++) {
#pragma omp target nowait map(tofrom : part[i * M : M]) firstprivate(i)
      work(&part[i * M], i, spin(digest(&part[i * M], M, i), WP));
    }
#pragma omp taskwait
  }

  for (int i = 0; i < N; i++)
    CHECK_AT("chain result", i, buf[i], rbuf[i]);
  for (int j = 0; j < P * M; j++)
    CHECK_AT("independent tasks' parts", j, part[j], rpart[j]);
  return finish("chain_spread");
}
