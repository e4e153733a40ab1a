/*
 * teams_distribute.c - combined teams/distribute/parallel constructs.
 *
 * Checks `target teams distribute parallel for` with reduction(+:) on an
 * integer and on a double (exactly representable values, so the sum does
 * not depend on the order), with several reductions at once (+, max,
 * min), with num_teams/thread_limit clauses, and with collapse(2) (a 2-D
 * fill and a small matrix product); `target teams distribute` alone with
 * an inner parallel for; and `target parallel for` with and without a
 * reduction. Each loop covers an iteration count that does not divide
 * evenly among teams or threads.
 *
 * Why: these are the constructs real kernels use; the runtime must launch
 * the kernel with the requested teams/threads and combine reductions
 * across teams correctly, and every iteration must run exactly once (the
 * checks cover every element, and the sums would change if iterations were
 * skipped or duplicated).
 */
#include <stdio.h>

#include "offload_check.h"

#define N 100003
#define R 37
#define C 53
#define M 48

static int a[N], b[N];
static double x[N];
static int grid[R][C];
static long long ma[M][M], mb[M][M], mc[M][M];
static int hits[N];

static void test_reductions(void) {
  for (int i = 0; i < N; i++) {
    a[i] = (i % 97) - 48;
    b[i] = (i % 13) + 1;
    x[i] = (double)(i % 1000) * 0.5; /* exact in binary */
  }
  long long ref = 0;
  double xref = 0.0;
  int rmax = -1000000, rmin = 1000000;
  for (int i = 0; i < N; i++) {
    ref += (long long)a[i] * b[i];
    xref += x[i];
    int v = a[i] * b[i];
    if (v > rmax)
      rmax = v;
    if (v < rmin)
      rmin = v;
  }

  long long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum)           \
    map(to : a, b)
  for (int i = 0; i < N; i++)
    sum += (long long)a[i] * b[i];
  CHECK("teams distribute parallel for reduction(+) on long long", sum, ref);

  double xs = 0.0;
#pragma omp target teams distribute parallel for reduction(+ : xs) map(to : x)
  for (int i = 0; i < N; i++)
    xs += x[i];
  CHECK_D("teams distribute parallel for reduction(+) on double", xs, xref);

  /* several reductions at once, with an explicit number of teams;
   * the initial values of the reduction variables must be included */
  long long s2 = 1000;
  int mx = -2000000000, mn = 2000000000;
#pragma omp target teams distribute parallel for num_teams(2)                 \
    reduction(+ : s2) reduction(max : mx) reduction(min : mn) map(to : a, b)
  for (int i = 0; i < N; i++) {
    int v = a[i] * b[i];
    s2 += v;
    mx = v > mx ? v : mx;
    mn = v < mn ? v : mn;
  }
  CHECK("reduction(+) with initial value", s2, ref + 1000);
  CHECK("reduction(max)", mx, rmax);
  CHECK("reduction(min)", mn, rmin);

  /* every iteration exactly once, with a thread limit (num_teams and
   * thread_limit are not combined: on a 2-core host the stock host plugin
   * prints a libomp warning for that, although the result is right) */
  for (int i = 0; i < N; i++)
    hits[i] = 0;
#pragma omp target teams distribute parallel for thread_limit(4)              \
    map(tofrom : hits)
  for (int i = 0; i < N; i++)
    hits[i] += 1;
  for (int i = 0; i < N; i++)
    CHECK_AT("each iteration runs exactly once", i, hits[i], 1);
}

static void test_collapse(void) {
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++)
      grid[r][c] = -1;
#pragma omp target teams distribute parallel for collapse(2) map(from : grid)
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++)
      grid[r][c] = r * 1000 + c;
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++)
      CHECK_AT("collapse(2) fill", r * C + c, grid[r][c], r * 1000 + c);

  /* collapse(2) with a reduction */
  long long gs = 0;
#pragma omp target teams distribute parallel for collapse(2)                  \
    reduction(+ : gs) map(to : grid)
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++)
      gs += (long long)grid[r][c] * (c + 1);
  long long gref = 0;
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++)
      gref += (long long)(r * 1000 + c) * (c + 1);
  CHECK("collapse(2) with reduction(+)", gs, gref);

  /* matrix product, collapse(2) over the output */
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      ma[i][j] = (i + 2 * j) % 11 - 5;
      mb[i][j] = (3 * i + j) % 7 - 3;
      mc[i][j] = 0;
    }
#pragma omp target teams distribute parallel for collapse(2)                  \
    map(to : ma, mb) map(from : mc)
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      long long s = 0;
      for (int k = 0; k < M; k++)
        s += ma[i][k] * mb[k][j];
      mc[i][j] = s;
    }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      long long s = 0;
      for (int k = 0; k < M; k++)
        s += ma[i][k] * mb[k][j];
      CHECK_AT("collapse(2) matrix product", i * M + j, mc[i][j], s);
    }
}

static void test_distribute_and_parallel_for(void) {
  /* teams distribute over rows, parallel for inside each row */
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++)
      grid[r][c] = 0;
#pragma omp target teams distribute map(tofrom : grid)
  for (int r = 0; r < R; r++) {
#pragma omp parallel for
    for (int c = 0; c < C; c++)
      grid[r][c] += r - c;
  }
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++)
      CHECK_AT("teams distribute + inner parallel for", r * C + c,
               grid[r][c], r - c);

  /* target parallel for */
  for (int i = 0; i < N; i++)
    b[i] = 0;
#pragma omp target parallel for map(to : a) map(from : b)
  for (int i = 0; i < N; i++)
    b[i] = 2 * a[i] + i % 5;
  for (int i = 0; i < N; i++)
    CHECK_AT("target parallel for", i, b[i], 2 * ((i % 97) - 48) + i % 5);

  long long ps = 0;
#pragma omp target parallel for reduction(+ : ps) map(to : b)
  for (int i = 0; i < N; i++)
    ps += b[i];
  long long pref = 0;
  for (int i = 0; i < N; i++)
    pref += b[i];
  CHECK("target parallel for reduction(+)", ps, pref);

  int pmax = -1;
#pragma omp target parallel for num_threads(2) reduction(max : pmax)          \
    map(to : b)
  for (int i = 0; i < N; i++)
    pmax = b[i] > pmax ? b[i] : pmax;
  int rmax = -1;
  for (int i = 0; i < N; i++)
    rmax = b[i] > rmax ? b[i] : rmax;
  CHECK("target parallel for reduction(max)", pmax, rmax);
}

int main(void) {
  test_reductions();
  test_collapse();
  test_distribute_and_parallel_for();
  return finish("teams_distribute");
}
