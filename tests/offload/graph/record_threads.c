/*
 * record_threads.c - target nowait tasks recorded by several threads at
 * once, with dependences between tasks that different threads record.
 *
 *   wavefront   one thread creates a 2D wavefront in `single`: task (s, b)
 *               depends on its block's previous step and on the blocks
 *               either side (depend(in:) on b-1's step s, b+1's step s-1;
 *               depend(inout:) on b). The team's other threads take the
 *               tasks and record them, so a task's predecessors were
 *               recorded by other threads while it was being recorded;
 *   spawn       every thread of the team creates chains on blocks of its
 *               own, each task also reading a parameter block all threads
 *               name with depend(in:) (one readers list that four threads
 *               append to), then a barrier, then each thread mixes the
 *               next thread's results into its own (data written by tasks
 *               another thread recorded) and chains again;
 *   taskloop    taskloop iterations, on whichever threads take them, each
 *               create a dependent chain on their block reading the shared
 *               parameters;
 *   shared      every thread of the team opens a `target data map(to:)`
 *               region of one table at the same time, in rounds whose
 *               table differs, and chains on blocks of its own inside it,
 *               each task reading the table: the first thread to map it
 *               copies it to the device (a large copy, taken slowly), the
 *               others find it present and record at once. A task recorded
 *               before the copy its mapping relies on reads another table.
 *
 *   mixed       thread 0 chains tasks that each copy a large block (slow
 *               to record) while the others chain on blocks of their own
 *               with map(tofrom:) of the block itself, and host tasks
 *               that depend on them: tasks recorded meanwhile by the
 *               others, ahead of their turn, are complete for libomp, so
 *               the next copy of the block's host bytes and the host task
 *               must wait for them all the same.
 *
 * Why: the head records target tasks from any of its threads; recording
 * must keep every task's mapping-table changes, dependences and buffer
 * edges in one order (nodes enter the graph in the order their constructs
 * mapped), whichever threads record at the same time. Each kernel
 * is a data-dependent affine update (graph_test.h), so a task that runs
 * before a predecessor, twice, or not at all changes a checked value.
 */
#include <omp.h>
#include <stdio.h>

#include "graph_test.h"

#define M 64     /* elements per block */
#define NB 12    /* blocks */
#define S 24     /* wavefront steps */
#define NCH 8    /* spawn: chains (blocks), spread over the team */
#define LEN 12   /* spawn, taskloop: chain length */
#define W 2000   /* busy work per kernel */
#define NT 4     /* threads */
#define TM (256 * 1024) /* shared: table elements (a copy that takes a while) */

#pragma omp declare target
/* x = step(x) then x += l + r (either may be NULL) */
static void wave(unsigned *x, const unsigned *l, const unsigned *r, unsigned m,
                 unsigned c) {
  graph_step(x, M, m, c, W);
  for (int i = 0; i < M; i++)
    x[i] += (l ? l[i] * 3u : 0u) + (r ? r[i] * 5u : 0u);
}

/* x = x * m + c + p[i] + f(x) */
static void chain_step(unsigned *x, const unsigned *p, unsigned m,
                       unsigned c) {
  graph_step(x, M, m, c, W);
  for (int i = 0; i < M; i++)
    x[i] += p[i];
}

/* x = x * m + c + f(x), then x += 3 * t */
static void fold(unsigned *x, const unsigned *t, unsigned m, unsigned c) {
  graph_step(x, M, m, c, W / 4);
  for (int i = 0; i < M; i++)
    x[i] += t[i] * 3u + t[TM - 1 - i];
}

/* y = y * m + x */
static void mix(unsigned *y, const unsigned *x, unsigned m) {
  for (int i = 0; i < M; i++)
    y[i] = y[i] * m + x[i];
}
#pragma omp end declare target

static unsigned mulk(unsigned k, unsigned s) {
  return 3u + 2u * ((k * 7u + s) % 11u);
}

static unsigned wv[NB][M], Rwv[NB][M];
static unsigned par[M];
static unsigned ch[NCH][M], chseen[NCH][M], Rch[NCH][M];
static unsigned tl[NCH][M], Rtl[NCH][M];
static unsigned tab[TM];
static unsigned sh[NCH][M], Rsh[NCH][M];
static unsigned edge_l, edge_r;
static int team;

static void init(unsigned *x, unsigned *r, int n, unsigned seed) {
  for (int i = 0; i < n; i++)
    x[i] = r[i] = seed * 2654435761u + (unsigned)i * 40503u;
}

static void wavefront(void) {
#pragma omp target enter data map(to : wv)
#pragma omp parallel num_threads(NT)
#pragma omp single
  {
    team = omp_get_num_threads();
    for (unsigned s = 0; s < S; s++)
      for (unsigned b = 0; b < NB; b++) {
        unsigned *l = b > 0 ? wv[b - 1] : NULL;
        unsigned *r = b + 1 < NB ? wv[b + 1] : NULL;
        /* a block at the edge depends on a spare address instead */
        unsigned *dl = l ? l : &edge_l, *dr = r ? r : &edge_r;
#pragma omp target nowait map(present, alloc : wv) firstprivate(s, b)          \
    depend(in : dl[0], dr[0]) depend(inout : wv[b][0])
        wave(wv[b], b > 0 ? wv[b - 1] : NULL, b + 1 < NB ? wv[b + 1] : NULL,
             mulk(b, s), s * 64u + b);
      }
  }
#pragma omp target exit data map(from : wv)
}

static void wavefront_ref(void) {
  for (unsigned s = 0; s < S; s++)
    for (unsigned b = 0; b < NB; b++)
      wave(Rwv[b], b > 0 ? Rwv[b - 1] : NULL, b + 1 < NB ? Rwv[b + 1] : NULL,
           mulk(b, s), s * 64u + b);
}

static void chain(unsigned (*x)[M], unsigned c, unsigned s0, unsigned s1,
                  unsigned salt) {
  for (unsigned s = s0; s < s1; s++) {
#pragma omp target nowait map(tofrom : x[c][0 : M]) map(to : par)              \
    depend(in : par) depend(inout : x[c][0]) firstprivate(c, s)
    chain_step(x[c], par, mulk(c + salt, s), s * 16u + c);
  }
}

static void spawn(void) {
#pragma omp target enter data map(to : ch)
#pragma omp parallel num_threads(NT)
  {
    unsigned t = (unsigned)omp_get_thread_num();
    unsigned nt = (unsigned)omp_get_num_threads();
    for (unsigned c = t; c < NCH; c += nt)
      chain(ch, c, 0u, LEN, 0u);
#pragma omp barrier
    /* every chain is done: the next chain's results, by another thread's
     * tasks, come back to the host and go into this one */
    for (unsigned c = t; c < NCH; c += nt) {
      unsigned n = (c + 1u) % NCH;
#pragma omp target update from(ch[n][0 : M])
      for (int i = 0; i < M; i++)
        chseen[c][i] = ch[n][i];
    }
#pragma omp barrier
    for (unsigned c = t; c < NCH; c += nt) {
#pragma omp target nowait map(to : chseen[c][0 : M]) depend(inout : ch[c][0])  \
    firstprivate(c)
      mix(ch[c], chseen[c], 7u);
      chain(ch, c, LEN, 2u * LEN, 0u);
    }
  }
#pragma omp target exit data map(from : ch)
}

static void spawn_ref(void) {
  for (unsigned c = 0; c < NCH; c++)
    for (unsigned s = 0; s < LEN; s++)
      chain_step(Rch[c], par, mulk(c, s), s * 16u + c);
  unsigned seen[NCH][M];
  for (unsigned c = 0; c < NCH; c++)
    for (int i = 0; i < M; i++)
      seen[c][i] = Rch[(c + 1u) % NCH][i];
  for (unsigned c = 0; c < NCH; c++) {
    mix(Rch[c], seen[c], 7u);
    for (unsigned s = LEN; s < 2u * LEN; s++)
      chain_step(Rch[c], par, mulk(c, s), s * 16u + c);
  }
}

static void taskloop(void) {
#pragma omp parallel num_threads(NT)
#pragma omp single
#pragma omp taskloop grainsize(1)
  for (unsigned c = 0; c < NCH; c++) {
    chain(tl, c, 0u, LEN, 5u);
#pragma omp taskwait
  }
}

static void taskloop_ref(void) {
  for (unsigned c = 0; c < NCH; c++)
    for (unsigned s = 0; s < LEN; s++)
      chain_step(Rtl[c], par, mulk(c + 5u, s), s * 16u + c);
}

#define ROUNDS 6 /* shared: tables */
#define SLEN 3   /* shared: tasks per block and round */

static void table(unsigned r) {
  for (int i = 0; i < TM; i++)
    tab[i] = r * 977u + (unsigned)i * 13u + 1u;
}

static void shared(void) {
#pragma omp target enter data map(to : sh)
  for (unsigned r = 0; r < ROUNDS; r++) {
    table(r); /* the previous round's regions are closed: the barrier below */
#pragma omp parallel num_threads(NT)
    {
      unsigned t = (unsigned)omp_get_thread_num();
      unsigned nt = (unsigned)omp_get_num_threads();
#pragma omp target data map(to : tab)
      {
        for (unsigned s = 0; s < SLEN; s++)
          for (unsigned c = t; c < NCH; c += nt) {
#pragma omp target nowait map(present, alloc : tab, sh)                        \
    depend(inout : sh[c][0]) firstprivate(c, s, r)
            fold(sh[c], tab, mulk(c, r * SLEN + s), r * 64u + s * 8u + c);
          }
#pragma omp taskwait
      }
    }
  }
#pragma omp target exit data map(from : sh)
}

static void shared_ref(void) {
  for (unsigned r = 0; r < ROUNDS; r++) {
    table(r);
    for (unsigned s = 0; s < SLEN; s++)
      for (unsigned c = 0; c < NCH; c++)
        fold(Rsh[c], tab, mulk(c, r * SLEN + s), r * 64u + s * 8u + c);
  }
}

#define MK 12 /* mixed: steps */
static unsigned mx[NT][M], Rmx[NT][M];

static void mixed(void) {
#pragma omp parallel num_threads(NT)
  {
    unsigned t = (unsigned)omp_get_thread_num();
    for (unsigned k = 0; k < MK; k++) {
      if (t == 0) {
#pragma omp target nowait map(to : tab) map(tofrom : mx[0][0 : M])             \
    depend(inout : mx[0][0]) firstprivate(k)
        fold(mx[0], tab, mulk(0u, k), k);
      } else {
#pragma omp target nowait map(tofrom : mx[t][0 : M]) depend(inout : mx[t][0])  \
    firstprivate(t, k)
        chain_step(mx[t], par, mulk(t, k), k * 8u + t);
      }
      if (k % 3 == 2) {
#pragma omp task depend(inout : mx[t][0]) firstprivate(t, k)
        for (int i = 0; i < M; i++)
          mx[t][i] ^= k * 0x9e3779b9u + (unsigned)i;
      }
    }
#pragma omp taskwait
  }
}

static void mixed_ref(void) {
  for (unsigned t = 0; t < NT; t++)
    for (unsigned k = 0; k < MK; k++) {
      if (t == 0)
        fold(Rmx[0], tab, mulk(0u, k), k);
      else
        chain_step(Rmx[t], par, mulk(t, k), k * 8u + t);
      if (k % 3 == 2)
        for (int i = 0; i < M; i++)
          Rmx[t][i] ^= k * 0x9e3779b9u + (unsigned)i;
    }
}

int main(void) {
  for (int i = 0; i < M; i++)
    par[i] = (unsigned)i * 2246822519u + 7u;
  for (int b = 0; b < NB; b++)
    init(wv[b], Rwv[b], M, 100u + (unsigned)b);
  for (int c = 0; c < NCH; c++) {
    init(ch[c], Rch[c], M, 200u + (unsigned)c);
    init(tl[c], Rtl[c], M, 300u + (unsigned)c);
    init(sh[c], Rsh[c], M, 400u + (unsigned)c);
  }

  wavefront();
  wavefront_ref();
  for (int b = 0; b < NB; b++)
    for (int i = 0; i < M; i++)
      CHECK_AT("wavefront block", b * M + i, wv[b][i], Rwv[b][i]);

  spawn();
  spawn_ref();
  for (int c = 0; c < NCH; c++)
    for (int i = 0; i < M; i++)
      CHECK_AT("spawn chain", c * M + i, ch[c][i], Rch[c][i]);

  taskloop();
  taskloop_ref();
  for (int c = 0; c < NCH; c++)
    for (int i = 0; i < M; i++)
      CHECK_AT("taskloop chain", c * M + i, tl[c][i], Rtl[c][i]);

  shared();
  shared_ref();
  for (int c = 0; c < NCH; c++)
    for (int i = 0; i < M; i++)
      CHECK_AT("shared table chain", c * M + i, sh[c][i], Rsh[c][i]);

  for (unsigned t = 0; t < NT; t++)
    init(mx[t], Rmx[t], M, 500u + t);
  table(ROUNDS);
  mixed();
  mixed_ref();
  for (int t = 0; t < NT; t++)
    for (int i = 0; i < M; i++)
      CHECK_AT("mixed chain", t * M + i, mx[t][i], Rmx[t][i]);

  /* the team really had several threads to record with */
  CHECK("threads in the team", team, NT);
  return finish("record_threads");
}
