/*
 * nowait_deps.c - asynchronous target tasks ordered by dependences.
 *
 * Checks `target nowait depend(...)` chains (out -> inout -> in -> inout)
 * interleaved with host `task depend(...)` tasks on the same objects, a
 * fan-out (one producer, several target and host consumers with
 * depend(in), then a host writer that must wait for all readers), a
 * fan-in (several target producers into one target consumer that lists
 * all of them in depend(in)), a chain on data kept on the device with
 * target enter data whose host copy is only refreshed by target update
 * tasks in the same chain, and taskwait, all inside parallel + single.
 *
 * Why: an offload runtime that runs target tasks asynchronously has to
 * honour the same task dependence graph as host tasks. Every step is an
 * affine update (multiply and add, on unsigned integers so wrap-around is
 * defined) that does not commute with its neighbours, so any reordering
 * or overlap of dependent tasks changes the final numbers.
 */
#include <stdio.h>

#include "offload_check.h"

#define N 256
#define K 4
#define CHAIN 6

/* chain */
static unsigned x[N], snap[N];
/* fan-out / fan-in */
static unsigned in[N], src[N], dst[K][N], fan[N];
static unsigned long long hsum_seen;
/* device-resident chain */
static unsigned y[N], ysnap[N], ypre[N];

/* a little busy work so that tasks overlap in time when allowed to */
#pragma omp declare target
static unsigned spin(unsigned v) {
  for (int r = 0; r < 2000; r++)
    v = v * 1103515245u + 12345u;
  return v;
}
#pragma omp end declare target

static void run(void) {
#pragma omp parallel num_threads(4)
#pragma omp single
  {
    /* ---- chain: device, host, device, host reader, device ---- */
#pragma omp target nowait map(tofrom : x) depend(out : x[0])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        x[i] = x[i] * 3u + 1u;
    }
#pragma omp task depend(inout : x[0])
    {
      for (int i = 0; i < N; i++)
        x[i] = x[i] * 2u + 5u;
    }
#pragma omp target nowait map(tofrom : x) depend(inout : x[0])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        x[i] = x[i] * 7u - 3u;
    }
#pragma omp task depend(in : x[0])
    {
      for (int i = 0; i < N; i++)
        snap[i] = x[i];
    }
#pragma omp target nowait map(tofrom : x) depend(inout : x[0])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        x[i] = x[i] * 5u + 11u;
    }

    /* ---- fan-out ---- */
#pragma omp task depend(out : in[0])
    {
      for (int i = 0; i < N; i++)
        in[i] = (unsigned)(i * i) + 1u;
    }
#pragma omp target nowait map(to : in) map(from : src) depend(in : in[0])    \
    depend(out : src[0])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        src[i] = spin(in[i]) % 1000u * 3u + 2u;
    }
    for (int k = 0; k < K; k++) {
#pragma omp target nowait map(to : src) map(from : dst[k][0 : N])            \
    depend(in : src[0]) depend(out : dst[k][0])
      {
#pragma omp parallel for
        for (int i = 0; i < N; i++)
          dst[k][i] = spin(src[i]) % 1000u + src[i] * (unsigned)(k + 2) +
                      (unsigned)k;
      }
    }
#pragma omp task depend(in : src[0])
    {
      unsigned long long s = 0;
      for (int i = 0; i < N; i++)
        s += src[i];
      hsum_seen = s;
    }
    /* writer after the readers: must wait for all of them */
#pragma omp task depend(inout : src[0])
    {
      for (int i = 0; i < N; i++)
        src[i] = 0u;
    }

    /* ---- fan-in ---- */
#pragma omp target nowait map(to : dst) map(from : fan)                      \
    depend(in : dst[0][0], dst[1][0], dst[2][0], dst[3][0])                  \
    depend(out : fan[0])
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++) {
        unsigned acc = 0u;
        for (int k = 0; k < K; k++)
          acc = acc * 31u + dst[k][i] * (unsigned)(k + 1);
        fan[i] = acc;
      }
    }

    /* ---- chain on device-resident data, host tasks see it only via
     * target update tasks that are ordered by the same dependences ---- */
#pragma omp target enter data map(to : y) depend(out : y[0]) nowait
    for (int s = 0; s < CHAIN; s++) {
#pragma omp target nowait depend(inout : y[0])
      {
#pragma omp parallel for
        for (int i = 0; i < N; i++)
          y[i] = y[i] * (unsigned)(2 * s + 3) + (unsigned)s;
      }
      if (s == CHAIN / 2) {
        /* nothing has been copied back yet: the host copy is unchanged */
#pragma omp task depend(in : y[0])
        {
          for (int i = 0; i < N; i++)
            ypre[i] = y[i];
        }
#pragma omp target update from(y) depend(inout : y[0]) nowait
#pragma omp task depend(inout : y[0])
        {
          for (int i = 0; i < N; i++) {
            ysnap[i] = y[i];
            y[i] = y[i] ^ 0x5a5au;
          }
        }
#pragma omp target update to(y) depend(inout : y[0]) nowait
      }
    }
#pragma omp taskwait
    /* after taskwait everything above is complete */
#pragma omp target exit data map(from : y)
  }
}

int main(void) {
  static unsigned rx[N], rsnap[N], rsrc[N], rdst[K][N], rfan[N], ry[N],
      rysnap[N];
  for (int i = 0; i < N; i++) {
    x[i] = (unsigned)i;
    y[i] = (unsigned)(3 * i + 1);
  }

  /* sequential reference */
  for (int i = 0; i < N; i++) {
    unsigned v = (unsigned)i;
    v = v * 3u + 1u;
    v = v * 2u + 5u;
    v = v * 7u - 3u;
    rsnap[i] = v;
    v = v * 5u + 11u;
    rx[i] = v;
    rsrc[i] = spin((unsigned)(i * i) + 1u) % 1000u * 3u + 2u;
  }
  unsigned long long rhsum = 0;
  for (int i = 0; i < N; i++)
    rhsum += rsrc[i];
  for (int k = 0; k < K; k++)
    for (int i = 0; i < N; i++)
      rdst[k][i] = spin(rsrc[i]) % 1000u + rsrc[i] * (unsigned)(k + 2) +
                   (unsigned)k;
  for (int i = 0; i < N; i++) {
    unsigned acc = 0u;
    for (int k = 0; k < K; k++)
      acc = acc * 31u + rdst[k][i] * (unsigned)(k + 1);
    rfan[i] = acc;
  }
  for (int i = 0; i < N; i++) {
    unsigned v = (unsigned)(3 * i + 1);
    for (int s = 0; s < CHAIN; s++) {
      v = v * (unsigned)(2 * s + 3) + (unsigned)s;
      if (s == CHAIN / 2) {
        rysnap[i] = v;
        v ^= 0x5a5au;
      }
    }
    ry[i] = v;
  }

  run();

  for (int i = 0; i < N; i++) {
    CHECK_AT("chain result", i, x[i], rx[i]);
    CHECK_AT("host reader in the middle of the chain", i, snap[i], rsnap[i]);
    CHECK_AT("writer after readers ran last", i, src[i], 0);
    for (int k = 0; k < K; k++)
      CHECK_AT("fan-out consumer", k * N + i, dst[k][i], rdst[k][i]);
    CHECK_AT("fan-in consumer", i, fan[i], rfan[i]);
    CHECK_AT("device-resident chain result", i, y[i], ry[i]);
    CHECK_AT("device-resident chain snapshot", i, ysnap[i], rysnap[i]);
    CHECK_AT("host copy unchanged before target update from", i, ypre[i],
             3 * i + 1);
  }
  CHECK("host consumer of the fan-out", hsum_seen, rhsum);
  return finish("nowait_deps");
}
