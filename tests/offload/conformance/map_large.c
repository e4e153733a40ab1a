/*
 * map_large.c - large arrays mapped tofrom by chains of target nowait tasks.
 *
 * Three heap arrays of a few MiB (sizes not multiples of a page, and all
 * different) are updated by NSTEP rounds of `target nowait` tasks, each
 * mapping its own array `tofrom` (no enter data: every task copies the
 * whole array in and out) and a prefix of the next array `to`, ordered by
 * depend(inout:) on its own array and depend(in:) on the next one. In the
 * middle round a host task rewrites one array between two of its target
 * tasks. Then every array is read whole by a task mapping it `to` and
 * writing a second array mapped `from` of the same size (device memory of
 * the first round's sizes is reused), and a section of an array kept by
 * `target enter data` goes out and back with `always, tofrom`, then the
 * whole of it, read by the kernel, before the host changes it and reads the
 * device copy back. Every element is compared with a host reference.
 *
 * Why: copies this large are sent from the program's memory when the task
 * runs rather than captured when it is recorded, and freed device memory
 * of these sizes stays mapped on the workers for the next buffer. A task
 * that sends bytes before its predecessor wrote them back, after the host
 * task changed them, or that finds another buffer's data in reused device
 * memory changes a checked value: each update is an affine map of exact
 * unsigned arithmetic, different per round and array, mixing in the
 * neighbour's prefix and the element index.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offload_check.h"

#define NA 3
#define NSTEP 4
#define HOST_STEP 2     /* the round after which the host task runs */
#define PREFIX 20000    /* neighbour elements read (80 KB: a large copy) */

static const size_t len[NA] = {(1u << 20) + 777, (1u << 20) - 1001,
                               (3u << 18) + 13};

#pragma omp declare target
static unsigned mix(unsigned x, unsigned nb, size_t i, unsigned m, unsigned c) {
  return x * m + c + (nb ^ (unsigned)i);
}
#pragma omp end declare target

static unsigned mul(int t, int k) { return 2u * (unsigned)(t * NA + k) + 3u; }
static unsigned add(int t, int k) { return 0x9e3779b9u * (unsigned)(t + 1) + (unsigned)k; }

static void host_change(unsigned *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    x[i] = x[i] ^ (unsigned)(i * 2654435761u);
}

static void reference_step(unsigned *x, size_t n, const unsigned *nb, int t,
                           int k) {
  unsigned m = mul(t, k), c = add(t, k);
  for (size_t i = 0; i < n; i++)
    x[i] = mix(x[i], nb[i % PREFIX], i, m, c);
}

int main(void) {
  unsigned *a[NA], *ref[NA], *out[NA];
  for (int k = 0; k < NA; k++) {
    a[k] = malloc(len[k] * sizeof(unsigned));
    ref[k] = malloc(len[k] * sizeof(unsigned));
    out[k] = malloc(len[k] * sizeof(unsigned));
    if (!a[k] || !ref[k] || !out[k]) {
      fprintf(stderr, "FAIL map_large: out of host memory\n");
      return 1;
    }
    for (size_t i = 0; i < len[k]; i++)
      a[k][i] = ref[k][i] = (unsigned)(i * 31u + (size_t)k * 1000003u);
    for (size_t i = 0; i < len[k]; i++)
      out[k][i] = 0xdeadbeefu;
  }

  /* host reference, in the order the tasks are created: task (t, k) reads
   * the next array as the tasks created before it left it */
  for (int t = 0; t < NSTEP; t++) {
    for (int k = 0; k < NA; k++)
      reference_step(ref[k], len[k], ref[(k + 1) % NA], t, k);
    if (t == HOST_STEP)
      host_change(ref[1], len[1]);
  }

#pragma omp parallel
#pragma omp single
  {
    for (int t = 0; t < NSTEP; t++) {
      for (int k = 0; k < NA; k++) {
        unsigned *x = a[k], *nb = a[(k + 1) % NA];
        size_t n = len[k];
        unsigned m = mul(t, k), c = add(t, k);
#pragma omp target nowait map(tofrom : x[0 : n]) map(to : nb[0 : PREFIX])     \
    depend(inout : x[0]) depend(in : nb[0]) firstprivate(m, c, n)
        {
#pragma omp parallel for
          for (size_t i = 0; i < n; i++)
            x[i] = mix(x[i], nb[i % PREFIX], i, m, c);
        }
      }
      if (t == HOST_STEP) {
        unsigned *x = a[1];
#pragma omp task depend(inout : x[0])
        host_change(x, len[1]);
      }
    }
#pragma omp taskwait

    /* read whole arrays into fresh ones of the same sizes */
    for (int k = 0; k < NA; k++) {
      unsigned *x = a[k], *y = out[k];
      size_t n = len[k];
#pragma omp target nowait map(to : x[0 : n]) map(from : y[0 : n])               \
    depend(in : x[0]) depend(out : y[0]) firstprivate(n)
      {
#pragma omp parallel for
        for (size_t i = 0; i < n; i++)
          y[i] = x[n - 1 - i] + 1u;
      }
    }
#pragma omp taskwait
  }

  for (int k = 0; k < NA; k++) {
    size_t bad = 0;
    for (size_t i = 0; i < len[k]; i++) {
      if (a[k][i] != ref[k][i] && bad++ < 3)
        CHECK_AT("array after the tofrom chains", (long)i, a[k][i], ref[k][i]);
      if (out[k][i] != ref[k][len[k] - 1 - i] + 1u && bad++ < 3)
        CHECK_AT("array read back whole", (long)i, out[k][i],
                 ref[k][len[k] - 1 - i] + 1u);
    }
    CHECK("wrong elements in array", bad, 0);
  }

  /* a section of a resident array, out and back with always */
  unsigned *r = a[0];
  size_t n0 = len[0], lo = 4099, sec = 300000;
#pragma omp target enter data map(to : r[0 : n0])
  for (size_t i = lo; i < lo + sec; i++) {
    r[i] = (unsigned)i * 7u;
    ref[0][i] = (unsigned)i * 7u * 5u + 1u;
  }
#pragma omp target map(always, tofrom : r[lo : sec]) firstprivate(lo, sec)
  {
#pragma omp parallel for
    for (size_t i = lo; i < lo + sec; i++)
      r[i] = r[i] * 5u + 1u;
  }
  memset(r, 0, n0 * sizeof(unsigned)); /* the device copy keeps the rest */
#pragma omp target exit data map(from : r[0 : n0])
  size_t bad = 0;
  for (size_t i = 0; i < n0; i++)
    if (r[i] != ref[0][i] && bad++ < 3)
      CHECK_AT("resident array after a section went out and back", (long)i,
               r[i], ref[0][i]);
  CHECK("wrong elements in the resident array", bad, 0);

  /* the whole resident array out and back with always, read but not
   * written by the kernel: what comes back later is the device copy, not
   * what the host wrote after the task */
  unsigned sum = 0, want = 0;
#pragma omp target enter data map(to : r[0 : n0])
  for (size_t i = 0; i < n0; i++) {
    r[i] = (unsigned)i * 3u + 11u;
    want += r[i] ^ (unsigned)i;
  }
#pragma omp parallel
#pragma omp single
  {
#pragma omp target nowait map(always, tofrom : r[0 : n0]) map(tofrom : sum)     \
    depend(in : r[0]) firstprivate(n0)
    {
      unsigned s = 0;
      for (size_t i = 0; i < n0; i++)
        s += r[i] ^ (unsigned)i;
      sum = s;
    }
#pragma omp taskwait
  }
  CHECK("sum of the resident array", sum, want);
  for (size_t i = 0; i < n0; i++)
    r[i] = 0xabababu;
#pragma omp target exit data map(from : r[0 : n0])
  bad = 0;
  for (size_t i = 0; i < n0; i++)
    if (r[i] != (unsigned)i * 3u + 11u && bad++ < 3)
      CHECK_AT("resident array read back after the host changed it", (long)i,
               r[i], (unsigned)i * 3u + 11u);
  CHECK("wrong elements in the resident array read back", bad, 0);

  for (int k = 0; k < NA; k++) {
    free(a[k]);
    free(ref[k]);
    free(out[k]);
  }
  return finish("map_large");
}
