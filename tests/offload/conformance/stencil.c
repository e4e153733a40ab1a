/*
 * stencil.c - blocked 1-D Jacobi-style stencil driven by target tasks.
 *
 * The domain of B*BS points is split into B blocks. Each block has two
 * device-resident buffers (ping-pong) created with target enter data. For
 * each of T time steps, block b is updated by one `target nowait` task
 * with depend(in:) on blocks b-1, b, b+1 of the current buffer and
 * depend(out:) on block b of the next buffer, and its kernel runs a
 * `parallel for`. Two constant ghost blocks at the ends make every block
 * have two neighbours. Only the final buffer is copied back, and the
 * result is compared bit for bit with a sequential host computation.
 *
 * Why: this is the dependence pattern of a typical task-based solver:
 * read-after-write between neighbours across steps and write-after-read
 * on the reused buffers, with data staying on the device. The update
 * uses unsigned integer arithmetic (wraps, exact) with weights that are
 * not symmetric, so using a stale, premature or wrong neighbour block
 * changes the result.
 */
#include <stdio.h>

#include "offload_check.h"

#define B 8
#define BS 512
#define T 40

/* the point update: asymmetric weights, exact unsigned arithmetic */
#pragma omp declare target
static unsigned point(unsigned left, unsigned self, unsigned right,
                      unsigned step) {
  return 2u * left + 3u * self + 5u * right + step;
}
#pragma omp end declare target

/* blk[p][b] is block b of buffer p; ghosts are all-zero and never written */
static unsigned blk[2][B][BS];
static unsigned ghost_l[BS], ghost_r[BS];
static unsigned ref[2][B * BS + 2];

int main(void) {
  for (int b = 0; b < B; b++)
    for (int i = 0; i < BS; i++) {
      blk[0][b][i] = (unsigned)((b * BS + i) * 7 % 101);
      blk[1][b][i] = 0xdeadbeefu; /* never read before written */
    }
  for (int i = 0; i < BS; i++)
    ghost_l[i] = ghost_r[i] = 0u;

  /* sequential reference with zero boundary values */
  for (int g = 0; g < B * BS + 2; g++)
    ref[0][g] = ref[1][g] = 0u;
  for (int g = 0; g < B * BS; g++)
    ref[0][g + 1] = blk[0][g / BS][g % BS];
  for (int t = 0; t < T; t++) {
    unsigned *cur = ref[t % 2], *nxt = ref[(t + 1) % 2];
    for (int g = 1; g <= B * BS; g++)
      nxt[g] = point(cur[g - 1], cur[g], cur[g + 1], (unsigned)t);
  }

  /* device-resident buffers */
  for (int b = 0; b < B; b++) {
#pragma omp target enter data map(to : blk[0][b][0 : BS])
#pragma omp target enter data map(alloc : blk[1][b][0 : BS])
  }
#pragma omp target enter data map(to : ghost_l, ghost_r)

#pragma omp parallel
#pragma omp single
  {
    for (int t = 0; t < T; t++) {
      int p = t % 2, q = 1 - p;
      for (int b = 0; b < B; b++) {
        unsigned *L = b > 0 ? blk[p][b - 1] : ghost_l;
        unsigned *C = blk[p][b];
        unsigned *R = b < B - 1 ? blk[p][b + 1] : ghost_r;
        unsigned *O = blk[q][b];
        unsigned step = (unsigned)t;
#pragma omp target nowait map(to : L[0 : BS], C[0 : BS], R[0 : BS])        \
    map(from : O[0 : BS]) firstprivate(step)                                 \
    depend(in : L[0], C[0], R[0]) depend(out : O[0])
        {
#pragma omp parallel for
          for (int i = 0; i < BS; i++) {
            unsigned left = i > 0 ? C[i - 1] : L[BS - 1];
            unsigned right = i < BS - 1 ? C[i + 1] : R[0];
            O[i] = point(left, C[i], right, step);
          }
        }
      }
    }
#pragma omp taskwait
  }

  /* nothing is copied back until exit data */
  for (int b = 0; b < B; b++)
    for (int i = 0; i < BS; i++)
      CHECK_AT("no copy back while resident", b * BS + i, blk[0][b][i],
               (unsigned)((b * BS + i) * 7 % 101));

  int fin = T % 2;
  for (int b = 0; b < B; b++) {
#pragma omp target exit data map(from : blk[fin][b][0 : BS])
#pragma omp target exit data map(delete : blk[1 - fin][b][0 : BS])
  }
#pragma omp target exit data map(delete : ghost_l, ghost_r)

  for (int b = 0; b < B; b++)
    for (int i = 0; i < BS; i++)
      CHECK_AT("stencil result", b * BS + i, blk[fin][b][i],
               ref[T % 2][b * BS + i + 1]);
  return finish("stencil");
}
