/*
 * ahead.c - tasks sent to workers before the tasks they depend on are done.
 *
 * With OMPC_AHEAD=1 (the default) a target task goes to its worker as soon
 * as its predecessors have been sent; the workers then wait for each other
 * and forward data among themselves.  This program checks the cases that
 * makes delicate, each against a host reference.  Kernels get device
 * pointers (omp_get_mapped_ptr, is_device_ptr) and name their data in
 * depend clauses, as Task Bench does:
 *  1. A periodic 3-point stencil over W device buffers, double buffered,
 *     for S steps: every task reads three buffers a neighbour may have
 *     written on another worker, and overwrites a buffer that the previous
 *     step's neighbours read (a write after read).  Run once with small
 *     buffers (forwarded inside messages) and once with buffers over 32 KiB
 *     (forwarded as transfers).
 *  2. The same stencil with a task that copies a result back to the host
 *     (map(from:), which waits for its predecessors the usual way) every few
 *     steps, and a target update from the host in the middle: tasks sent
 *     ahead and tasks that are not must agree on where the data is.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_test.h"

#define W 6
#define S 24

static unsigned step_val(unsigned l, unsigned c, unsigned r, int t, int p) {
  return l * 3u + c * 5u + r * 7u + (unsigned)(t * 131 + p);
}

#pragma omp declare target
static void stencil(unsigned *out, const unsigned *l, const unsigned *c,
                    const unsigned *r, int n, int t, int p) {
  for (int i = 0; i < n; i++)
    out[i] = l[i] * 3u + c[i] * 5u + r[i] * 7u + (unsigned)(t * 131 + p);
}
#pragma omp end declare target

/* Case 1 and 2: n unsigned per buffer; back: copy point 0 back every
 * `back` steps (0: never); upd: step at which the host rewrites point 1. */
static int run_stencil(int n, int back, int upd) {
  unsigned *buf[2][W], *dev[2][W], *ref[2][W];
  unsigned *seen = malloc((size_t)n * sizeof(unsigned));
  unsigned *rseen = malloc((size_t)n * sizeof(unsigned));
  for (int f = 0; f < 2; f++)
    for (int p = 0; p < W; p++) {
      buf[f][p] = malloc((size_t)n * sizeof(unsigned));
      ref[f][p] = malloc((size_t)n * sizeof(unsigned));
      for (int i = 0; i < n; i++)
        buf[f][p][i] = ref[f][p][i] = (unsigned)(f * 1000003 + p * 7919 + i);
      unsigned *h = buf[f][p];
#pragma omp target enter data map(to : h[0:n])
      dev[f][p] = omp_get_mapped_ptr(h, omp_get_default_device());
    }
  int bad = 0;
  for (int t = 1; t <= S; t++) {
    int cur = t % 2, prev = 1 - cur;
    for (int p = 0; p < W; p++) {
      int pl = (p + W - 1) % W, pr = (p + 1) % W;
      unsigned *o = dev[cur][p], *l = dev[prev][pl], *c = dev[prev][p],
               *r = dev[prev][pr];
#pragma omp target nowait is_device_ptr(o, l, c, r) firstprivate(n, t, p)      \
    depend(in : buf[prev][pl][0], buf[prev][p][0], buf[prev][pr][0])           \
    depend(out : buf[cur][p][0])
      stencil(o, l, c, r, n, t, p);
      for (int i = 0; i < n; i++)
        ref[cur][p][i] = step_val(ref[prev][(p + W - 1) % W][i],
                                  ref[prev][p][i], ref[prev][(p + 1) % W][i],
                                  t, p);
    }
    if (back && t % back == 0) {
      unsigned *o = dev[cur][0];
#pragma omp target nowait map(from : seen[0:n]) is_device_ptr(o)                \
    depend(in : buf[cur][0][0]) depend(out : seen[0]) firstprivate(n)
      for (int i = 0; i < n; i++)
        seen[i] = o[i];
#pragma omp taskwait
      memcpy(rseen, ref[cur][0], (size_t)n * sizeof(unsigned));
      if (memcmp(seen, rseen, (size_t)n * sizeof(unsigned)) != 0) {
        fprintf(stderr, "ahead: n=%d step %d: point 0 copied back is wrong\n",
                n, t);
        bad = 1;
      }
    }
    if (t == upd) {
      unsigned *h = buf[cur][1];
#pragma omp taskwait
      for (int i = 0; i < n; i++)
        h[i] = ref[cur][1][i] = (unsigned)(i * 17 + t);
#pragma omp target update to(h[0:n]) depend(inout : h[0]) nowait
    }
  }
#pragma omp taskwait
  for (int f = 0; f < 2; f++)
    for (int p = 0; p < W; p++) {
      unsigned *h = buf[f][p];
#pragma omp target exit data map(from : h[0:n])
      if (memcmp(h, ref[f][p], (size_t)n * sizeof(unsigned)) != 0) {
        fprintf(stderr, "ahead: n=%d back=%d: buffer %d/%d differs\n", n, back,
                f, p);
        bad = 1;
      }
      free(h);
      free(ref[f][p]);
    }
  free(seen);
  free(rseen);
  return bad;
}

/* Case 3: rounds of one writer and R readers of buffer x; each reader
 * copies x into its own buffer, which nothing later reads on the device,
 * so the next round's writer is ordered after the readers by a write
 * after read alone (no data flows from them to it). */
#define ROUNDS 40
#define R 5
#define XN 512
static int run_war(void) {
  static unsigned x[XN], y[ROUNDS][R][XN];
  int dv = omp_get_default_device();
  static unsigned *dy[ROUNDS][R];
#pragma omp target enter data map(alloc : x[0:XN])
  unsigned *dx = omp_get_mapped_ptr(x, dv);
  for (int k = 0; k < ROUNDS; k++)
    for (int j = 0; j < R; j++) {
      unsigned *h = y[k][j];
#pragma omp target enter data map(alloc : h[0:XN])
      dy[k][j] = omp_get_mapped_ptr(h, dv);
    }
  for (int k = 0; k < ROUNDS; k++) {
#pragma omp target nowait is_device_ptr(dx) firstprivate(k) depend(out : x[0])
    for (int i = 0; i < XN; i++)
      dx[i] = (unsigned)(k * 100003 + i);
    for (int j = 0; j < R; j++) {
      unsigned *o = dy[k][j];
#pragma omp target nowait is_device_ptr(dx, o) depend(in : x[0])               \
    depend(out : y[k][j][0])
      for (int i = 0; i < XN; i++)
        o[i] = dx[i];
    }
  }
#pragma omp taskwait
  for (int k = 0; k < ROUNDS; k++)
    for (int j = 0; j < R; j++) {
      unsigned *h = y[k][j];
#pragma omp target exit data map(from : h[0:XN])
    }
#pragma omp target exit data map(delete : x[0:XN])
  int bad = 0;
  for (int k = 0; k < ROUNDS; k++)
    for (int j = 0; j < R; j++)
      for (int i = 0; i < XN; i++)
        if (y[k][j][i] != (unsigned)(k * 100003 + i)) {
          if (!bad)
            fprintf(stderr, "ahead: round %d reader %d saw %u at %d, expected %u\n",
                    k, j, y[k][j][i], i, (unsigned)(k * 100003 + i));
          bad = 1;
        }
  return bad;
}

int main(void) {
  int bad = 0;
  bad |= run_stencil(64, 0, 0);         /* forwarded inside messages */
  bad |= run_stencil(16 * 1024, 0, 0);  /* 64 KiB: forwarded as transfers */
  bad |= run_stencil(256, 5, 11);       /* with copies back and an update */
  bad |= run_war();
  CHECK("runs that differ from the host's reference", bad, 0);
  return finish("graph_ahead");
}
