/*
 * dep_kinds.c - every kind of task dependence between target tasks.
 *
 * Phase 1 builds one graph of independent scenarios (disjoint data) with
 * no synchronisation until a final taskwait:
 *   basic     out -> two in readers -> inout (must wait for the readers)
 *             -> out -> a reader of two objects;
 *   mutex     four mutexinoutset tasks between an inout and an in; each
 *             adds its own amount to every element by reading the whole
 *             array, waiting, then writing it: any order gives the same
 *             sum, but two of them overlapping lose one addition;
 *   inoutset  four inoutset tasks writing disjoint quarters between an
 *             out and an in (once on data kept on the device, once with
 *             every task mapping its own section);
 *   sections  dependences on array sections a[b*M:M] (independent chains
 *             per block, then a reader naming all four sections, then
 *             writers that must wait for it);
 *   elements  dependences on distinct elements of one present array,
 *             each chain writing its own block;
 *   depobj    dependences stored with `depobj`, mixed with plain depend
 *             clauses on the same object, changed with `update(in)`, and
 *             two depend objects in one clause;
 *   data      target enter data / update from / update to / exit data
 *             nowait with depend, around a host task that reads and
 *             changes the host copy.
 * Phase 2 orders tasks with depend(inout/out: omp_all_memory), with a task
 * without depend clause running beside them. Phase 3 uses
 * `taskwait depend(...)` to wait for one chain while another is still
 * allowed to run, then lets the host change the data and continue.
 *
 * Why: a deferred-execution runtime rebuilds this task graph from the
 * dependences it is told about and runs it later, possibly elsewhere. Every
 * step is a data-dependent affine update (graph_test.h), so a missing edge,
 * an extra reordering, dependent tasks that overlap, stale data or a lost
 * write all change checked values.
 */
#include <omp.h>
#include <stdio.h>

#include "graph_test.h"

#define N 512
#define K 4          /* tasks in a mutexinoutset / inoutset set, blocks */
#define M (N / K)    /* block length */
#define W 300000     /* busy work of an ordinary step (~0.4 ms) */
#define WM 3000000   /* busy work of a mutexinoutset task (~4 ms) */
#define WS 10000000  /* busy work of a step of the slow chain in phase 3 (~13 ms) */

#pragma omp declare target
/* graph_test.h's update on n elements */
static void step(unsigned *x, int n, unsigned m, unsigned c, int w) {
  graph_step(x, n, m, c, w);
}

/* y = step(copy of x) */
static void derive(unsigned *y, const unsigned *x, int n, unsigned m,
                   unsigned c, int w) {
  for (int i = 0; i < n; i++)
    y[i] = x[i];
  step(y, n, m, c, w);
}

/* what mutexinoutset task k adds to element i */
static unsigned chunk(unsigned k, int i) {
  return (k + 1u) * 1000003u * (unsigned)(i + 1) + (k << 20);
}

/* x += chunk(k): read all of x, wait (its spin value goes to *hk), write
 * all of x. The flushes keep the compiler from fusing the read and the
 * write of an element: two tasks that overlap both read the old values. */
static void add_chunk(unsigned *x, unsigned k, int w, unsigned *hk) {
  unsigned t[N];
  for (int i = 0; i < N; i++)
    t[i] = x[i];
#pragma omp flush
  *hk = spin(k, w);
#pragma omp flush
  for (int i = 0; i < N; i++)
    x[i] = t[i] + chunk(k, i);
}
#pragma omp end declare target

/* ---- data (static storage: deferred tasks may outlive any call) ---- */
static unsigned bx[N], br1[N], br2[N];           /* basic */
static unsigned mm[N], mcopy[N], mh[K];          /* mutexinoutset */
static unsigned s1[N], s1fold[N], s2[N], s2fold[N]; /* inoutset */
static unsigned a[N], afold[M], e[N];            /* sections, elements */
static unsigned q[N], p[N], rq1[N], rq2[N], rpq[N]; /* depobj */
static unsigned hd[N], hdseen[N];                /* data directives */
static unsigned u[N], v[N], w[N], z[N], rv[N], nd[N]; /* omp_all_memory */
static unsigned x2[N], y2[N], x2seen[N], y2seen[N]; /* taskwait depend */

static omp_depend_t dq, dp;

static void init(unsigned *x, unsigned seed) {
  for (int i = 0; i < N; i++)
    x[i] = seed * 2654435761u + (unsigned)i * 40503u;
}

static void fold_blocks(unsigned *out, const unsigned *x) {
  for (int i = 0; i < M; i++) {
    unsigned f = 0;
    for (int b = 0; b < K; b++)
      f = f * 1000033u + x[b * M + i];
    out[i] = f;
  }
}

/* ---------------- phase 1 ---------------- */

static void basic(void) {
#pragma omp target nowait map(tofrom : bx) depend(out : bx)
  step(bx, N, 3u, 1u, W);
#pragma omp target nowait map(to : bx) map(from : br1) depend(in : bx)       \
    depend(out : br1)
  derive(br1, bx, N, 5u, 2u, W);
#pragma omp target nowait map(to : bx) map(from : br2) depend(in : bx)       \
    depend(out : br2)
  derive(br2, bx, N, 7u, 3u, W);
  /* write after the two reads */
#pragma omp target nowait map(tofrom : bx) depend(inout : bx)
  step(bx, N, 9u, 4u, W);
  /* write after write */
#pragma omp target nowait map(tofrom : bx) depend(out : bx)
  step(bx, N, 11u, 5u, W);
  /* reads bx, updates br1 */
#pragma omp target nowait map(to : bx) map(tofrom : br1) depend(in : bx)     \
    depend(inout : br1)
  {
    for (int i = 0; i < N; i++)
      br1[i] = br1[i] * 13u + bx[i];
  }
}

static void basic_ref(unsigned *x, unsigned *r1, unsigned *r2) {
  step(x, N, 3u, 1u, W);
  derive(r1, x, N, 5u, 2u, W);
  derive(r2, x, N, 7u, 3u, W);
  step(x, N, 9u, 4u, W);
  step(x, N, 11u, 5u, W);
  for (int i = 0; i < N; i++)
    r1[i] = r1[i] * 13u + x[i];
}

static void mutex(void) {
#pragma omp target enter data map(to : mm) depend(out : mm) nowait
#pragma omp target nowait map(tofrom : mm) depend(inout : mm)
  step(mm, N, 3u, 7u, W);
  for (unsigned k = 0; k < K; k++) {
#pragma omp target nowait map(tofrom : mm) map(from : mh[k : 1])            \
    depend(mutexinoutset : mm) firstprivate(k)
    add_chunk(mm, k, WM, &mh[k]);
  }
#pragma omp target nowait map(to : mm) map(from : mcopy) depend(in : mm)     \
    depend(out : mcopy)
  derive(mcopy, mm, N, 1u, 0u, 0);
#pragma omp target nowait map(tofrom : mm) depend(inout : mm)
  step(mm, N, 5u, 9u, W);
#pragma omp target exit data map(from : mm) depend(inout : mm) nowait
}

static void mutex_ref(unsigned *x, unsigned *copy) {
  step(x, N, 3u, 7u, W);
  for (unsigned k = 0; k < K; k++)
    for (int i = 0; i < N; i++)
      x[i] += chunk(k, i);
  derive(copy, x, N, 1u, 0u, 0);
  step(x, N, 5u, 9u, W);
}

static void inoutset(void) {
  /* s1 stays on the device; the set writes quarters of the present array */
#pragma omp target enter data map(to : s1) depend(out : s1) nowait
#pragma omp target nowait map(tofrom : s1) depend(out : s1)
  step(s1, N, 3u, 2u, W);
  for (int k = 0; k < K; k++) {
#pragma omp target nowait map(tofrom : s1) depend(inoutset : s1)            \
    firstprivate(k)
    step(&s1[k * M], M, 5u + 2u * (unsigned)k, (unsigned)k, W);
  }
#pragma omp target nowait map(to : s1) map(from : s1fold) depend(in : s1)   \
    depend(out : s1fold)
  fold_blocks(s1fold, s1);
#pragma omp target nowait map(tofrom : s1) depend(inout : s1)
  step(s1, N, 7u, 3u, W);
#pragma omp target exit data map(from : s1) depend(inout : s1) nowait

  /* s2 is not kept on the device: each task maps its own section */
#pragma omp target nowait map(tofrom : s2) depend(out : s2)
  step(s2, N, 3u, 4u, W);
  for (int k = 0; k < K; k++) {
#pragma omp target nowait map(tofrom : s2[k * M : M]) depend(inoutset : s2) \
    firstprivate(k)
    step(&s2[k * M], M, 9u + 2u * (unsigned)k, (unsigned)k + 1u, W);
  }
#pragma omp target nowait map(to : s2) map(from : s2fold) depend(in : s2)   \
    depend(out : s2fold)
  fold_blocks(s2fold, s2);
#pragma omp target nowait map(tofrom : s2) depend(inout : s2)
  step(s2, N, 11u, 5u, W);
}

static void inoutset_ref(unsigned *x1, unsigned *f1, unsigned *x2r,
                         unsigned *f2) {
  step(x1, N, 3u, 2u, W);
  for (int k = 0; k < K; k++)
    step(&x1[k * M], M, 5u + 2u * (unsigned)k, (unsigned)k, W);
  fold_blocks(f1, x1);
  step(x1, N, 7u, 3u, W);

  step(x2r, N, 3u, 4u, W);
  for (int k = 0; k < K; k++)
    step(&x2r[k * M], M, 9u + 2u * (unsigned)k, (unsigned)k + 1u, W);
  fold_blocks(f2, x2r);
  step(x2r, N, 11u, 5u, W);
}

#define ROUNDS 3

static void sections(void) {
  /* chains per block, dependences on the sections themselves */
  for (int r = 0; r < ROUNDS; r++)
    for (int b = 0; b < K; b++) {
#pragma omp target nowait map(tofrom : a[b * M : M])                        \
    depend(inout : a[b * M : M]) firstprivate(b, r)
      step(&a[b * M], M, 3u + 2u * (unsigned)r, (unsigned)(b + 10 * r), W);
    }
#pragma omp target nowait map(to : a) map(from : afold)                      \
    depend(in : a[0 : M], a[M : M], a[2 * M : M], a[3 * M : M])              \
    depend(out : afold)
  fold_blocks(afold, a);
  for (int b = 0; b < K; b++) {
#pragma omp target nowait map(tofrom : a[b * M : M])                        \
    depend(inout : a[b * M : M]) firstprivate(b)
    step(&a[b * M], M, 13u, (unsigned)b, W);
  }

  /* chains per block of one present array, dependences on its elements */
#pragma omp target enter data map(to : e) depend(out : e[0], e[M], e[2 * M], \
                                                   e[3 * M]) nowait
  for (int r = 0; r < ROUNDS; r++)
    for (int b = 0; b < K; b++) {
#pragma omp target nowait map(tofrom : e) depend(inout : e[b * M])          \
    firstprivate(b, r)
      step(&e[b * M], M, 5u + 4u * (unsigned)r, (unsigned)(b * 3 + r), W);
    }
#pragma omp target exit data map(from : e)                                   \
    depend(inout : e[0], e[M], e[2 * M], e[3 * M]) nowait
}

static void sections_ref(unsigned *ar, unsigned *fr, unsigned *er) {
  for (int r = 0; r < ROUNDS; r++)
    for (int b = 0; b < K; b++)
      step(&ar[b * M], M, 3u + 2u * (unsigned)r, (unsigned)(b + 10 * r), W);
  fold_blocks(fr, ar);
  for (int b = 0; b < K; b++)
    step(&ar[b * M], M, 13u, (unsigned)b, W);
  for (int r = 0; r < ROUNDS; r++)
    for (int b = 0; b < K; b++)
      step(&er[b * M], M, 5u + 4u * (unsigned)r, (unsigned)(b * 3 + r), W);
}

static void depobjs(void) {
#pragma omp depobj(dq) depend(inout : q)
#pragma omp depobj(dp) depend(inout : p)
#pragma omp target nowait map(tofrom : q) depend(depobj : dq)
  step(q, N, 3u, 1u, W);
  /* the same object named directly */
#pragma omp target nowait map(tofrom : q) depend(inout : q)
  step(q, N, 5u, 2u, W);
#pragma omp target nowait map(tofrom : q) depend(depobj : dq)
  step(q, N, 7u, 3u, W);
#pragma omp target nowait map(tofrom : p) depend(depobj : dp)
  step(p, N, 9u, 4u, W);
  /* both objects become read dependences */
#pragma omp depobj(dq) update(in)
#pragma omp depobj(dp) update(in)
#pragma omp target nowait map(to : q) map(from : rq1) depend(depobj : dq)    \
    depend(out : rq1)
  derive(rq1, q, N, 11u, 5u, W);
#pragma omp target nowait map(to : q) map(from : rq2) depend(depobj : dq)    \
    depend(out : rq2)
  derive(rq2, q, N, 13u, 6u, W);
  /* two depend objects in one clause: a reader of p and q */
#pragma omp target nowait map(to : p, q) map(from : rpq)                     \
    depend(depobj : dp, dq) depend(out : rpq)
  {
    for (int i = 0; i < N; i++)
      rpq[i] = p[i] * 3u + q[i];
  }
  /* writers after the readers */
#pragma omp target nowait map(tofrom : q) depend(out : q)
  step(q, N, 15u, 7u, W);
#pragma omp target nowait map(tofrom : p) depend(inout : p)
  step(p, N, 17u, 8u, W);
}

static void depobjs_ref(unsigned *qr, unsigned *pr, unsigned *r1,
                        unsigned *r2, unsigned *rpqr) {
  step(qr, N, 3u, 1u, W);
  step(qr, N, 5u, 2u, W);
  step(qr, N, 7u, 3u, W);
  step(pr, N, 9u, 4u, W);
  derive(r1, qr, N, 11u, 5u, W);
  derive(r2, qr, N, 13u, 6u, W);
  for (int i = 0; i < N; i++)
    rpqr[i] = pr[i] * 3u + qr[i];
  step(qr, N, 15u, 7u, W);
  step(pr, N, 17u, 8u, W);
}

static void data_directives(void) {
#pragma omp target enter data map(to : hd) depend(out : hd) nowait
#pragma omp target nowait depend(inout : hd)
  step(hd, N, 3u, 5u, W);
#pragma omp target update from(hd) depend(inout : hd) nowait
#pragma omp task depend(inout : hd)
  {
    for (int i = 0; i < N; i++) {
      hdseen[i] = hd[i];
      hd[i] = hd[i] * 5u + 7u;
    }
  }
#pragma omp target update to(hd) depend(inout : hd) nowait
#pragma omp target nowait depend(inout : hd)
  step(hd, N, 9u, 2u, W);
#pragma omp target exit data map(from : hd) depend(inout : hd) nowait
}

static void data_ref(unsigned *x, unsigned *seen) {
  step(x, N, 3u, 5u, W);
  for (int i = 0; i < N; i++) {
    seen[i] = x[i];
    x[i] = x[i] * 5u + 7u;
  }
  step(x, N, 9u, 2u, W);
}

/* ---------------- phase 2: omp_all_memory ---------------- */

static void all_memory(void) {
#pragma omp target nowait map(tofrom : u) depend(inout : u)
  step(u, N, 3u, 1u, W);
#pragma omp target nowait map(tofrom : v) depend(inout : v)
  step(v, N, 5u, 2u, W);
#pragma omp target nowait map(tofrom : w) depend(out : w)
  step(w, N, 7u, 3u, W);
  /* not ordered with anything: no depend clause */
#pragma omp target nowait map(tofrom : nd)
  step(nd, N, 9u, 4u, W);
  /* after all three, before everything that follows */
#pragma omp target nowait map(tofrom : u, v, w) map(from : z)                \
    depend(inout : omp_all_memory)
  {
    for (int i = 0; i < N; i++)
      z[i] = u[i] ^ (v[i] * 3u) ^ (w[i] * 5u);
    step(u, N, 11u, 5u, W);
    step(v, N, 13u, 6u, 0);
  }
#pragma omp target nowait map(tofrom : u) depend(inout : u)
  step(u, N, 15u, 7u, W);
#pragma omp target nowait map(tofrom : z) depend(inout : z)
  step(z, N, 17u, 8u, W);
#pragma omp target nowait map(tofrom : u, v, w, z) depend(out : omp_all_memory)
  {
    for (int i = 0; i < N; i++)
      w[i] = w[i] * 19u + u[i] + v[i] * 3u + z[i] * 5u;
  }
#pragma omp target nowait map(to : v) map(from : rv) depend(in : v)          \
    depend(out : rv)
  derive(rv, v, N, 21u, 9u, W);
#pragma omp target nowait map(tofrom : v) depend(inout : v)
  step(v, N, 23u, 10u, W);
}

static void all_memory_ref(unsigned *ur, unsigned *vr, unsigned *wr,
                           unsigned *zr, unsigned *rvr, unsigned *ndr) {
  step(ur, N, 3u, 1u, W);
  step(vr, N, 5u, 2u, W);
  step(wr, N, 7u, 3u, W);
  step(ndr, N, 9u, 4u, W);
  for (int i = 0; i < N; i++)
    zr[i] = ur[i] ^ (vr[i] * 3u) ^ (wr[i] * 5u);
  step(ur, N, 11u, 5u, W);
  step(vr, N, 13u, 6u, 0);
  step(ur, N, 15u, 7u, W);
  step(zr, N, 17u, 8u, W);
  for (int i = 0; i < N; i++)
    wr[i] = wr[i] * 19u + ur[i] + vr[i] * 3u + zr[i] * 5u;
  derive(rvr, vr, N, 21u, 9u, W);
  step(vr, N, 23u, 10u, W);
}

/* ---------------- phase 3: taskwait depend ---------------- */

static void taskwait_depend(void) {
  /* a slow chain on y2 and a quick one on x2 */
  for (unsigned s = 0; s < 3; s++) {
#pragma omp target nowait map(tofrom : y2) depend(inout : y2) firstprivate(s)
    step(y2, N, 3u + 2u * s, s, WS);
  }
  for (unsigned s = 0; s < 3; s++) {
#pragma omp target nowait map(tofrom : x2) depend(inout : x2) firstprivate(s)
    step(x2, N, 9u + 2u * s, s, W);
  }
  /* waits for the x2 chain only (its maps copied x2 back) */
#pragma omp taskwait depend(in : x2)
  for (int i = 0; i < N; i++) {
    x2seen[i] = x2[i];
    x2[i] = x2[i] * 7u + (unsigned)i;
  }
#pragma omp target nowait map(tofrom : x2) depend(inout : x2)
  step(x2, N, 15u, 3u, W);
#pragma omp taskwait depend(in : y2)
  for (int i = 0; i < N; i++)
    y2seen[i] = y2[i];
#pragma omp target nowait map(tofrom : y2) depend(inout : y2)
  step(y2, N, 17u, 4u, W);
}

static void taskwait_depend_ref(unsigned *xr, unsigned *yr, unsigned *xs,
                                unsigned *ys) {
  for (unsigned s = 0; s < 3; s++)
    step(yr, N, 3u + 2u * s, s, WS);
  for (unsigned s = 0; s < 3; s++)
    step(xr, N, 9u + 2u * s, s, W);
  for (int i = 0; i < N; i++) {
    xs[i] = xr[i];
    xr[i] = xr[i] * 7u + (unsigned)i;
  }
  step(xr, N, 15u, 3u, W);
  for (int i = 0; i < N; i++)
    ys[i] = yr[i];
  step(yr, N, 17u, 4u, W);
}

/* ---------------- main ---------------- */

#define CHECK_ARR(what, got, ref, n)                                           \
  do {                                                                         \
    for (int i_ = 0; i_ < (n); i_++)                                           \
      CHECK_AT(what, i_, (got)[i_], (ref)[i_]);                                \
  } while (0)

int main(void) {
  static unsigned *all[] = {bx, br1, br2, mm, s1, s2, a, e, q, p,
                            hd, u, v, w, nd, x2, y2};
  for (unsigned k = 0; k < sizeof all / sizeof all[0]; k++)
    init(all[k], k + 1u);

  /* references, computed before the device touches anything */
  static unsigned Rbx[N], Rbr1[N], Rbr2[N], Rmm[N], Rmcopy[N], Rs1[N],
      Rs1f[N], Rs2[N], Rs2f[N], Ra[N], Rafold[M], Re[N], Rq[N], Rp[N],
      Rrq1[N], Rrq2[N], Rrpq[N], Rhd[N], Rhdseen[N], Ru[N], Rv[N], Rw[N],
      Rz[N], Rrv[N], Rnd[N], Rx2[N], Ry2[N], Rx2s[N], Ry2s[N];
  static unsigned *src[] = {bx, mm, s1, s2, a, e, q, p, hd, u, v, w, nd, x2, y2};
  static unsigned *dst[] = {Rbx, Rmm, Rs1, Rs2, Ra, Re, Rq, Rp,
                            Rhd, Ru, Rv, Rw, Rnd, Rx2, Ry2};
  for (unsigned k = 0; k < sizeof src / sizeof src[0]; k++)
    for (int i = 0; i < N; i++)
      dst[k][i] = src[k][i];
  for (int i = 0; i < N; i++) {
    Rbr1[i] = br1[i];
    Rbr2[i] = br2[i];
  }
  basic_ref(Rbx, Rbr1, Rbr2);
  mutex_ref(Rmm, Rmcopy);
  inoutset_ref(Rs1, Rs1f, Rs2, Rs2f);
  sections_ref(Ra, Rafold, Re);
  depobjs_ref(Rq, Rp, Rrq1, Rrq2, Rrpq);
  data_ref(Rhd, Rhdseen);
  all_memory_ref(Ru, Rv, Rw, Rz, Rrv, Rnd);
  taskwait_depend_ref(Rx2, Ry2, Rx2s, Ry2s);
  unsigned Rmh[K];
  for (unsigned k = 0; k < K; k++)
    Rmh[k] = spin(k, WM);

#pragma omp parallel num_threads(4)
#pragma omp single
  {
    basic();
    mutex();
    inoutset();
    sections();
    depobjs();
    data_directives();
#pragma omp taskwait
#pragma omp depobj(dq) destroy
#pragma omp depobj(dp) destroy
  }

#pragma omp parallel num_threads(4)
#pragma omp single
  {
    all_memory();
#pragma omp taskwait
  }

#pragma omp parallel num_threads(4)
#pragma omp single
  {
    taskwait_depend();
#pragma omp taskwait
  }

  CHECK_ARR("basic: inout/out chain", bx, Rbx, N);
  CHECK_ARR("basic: first reader, then updated", br1, Rbr1, N);
  CHECK_ARR("basic: second reader", br2, Rbr2, N);
  CHECK_ARR("mutexinoutset: result", mm, Rmm, N);
  CHECK_ARR("mutexinoutset: reader after the set", mcopy, Rmcopy, N);
  CHECK_ARR("mutexinoutset: busy-work values", mh, Rmh, K);
  CHECK_ARR("inoutset on present data: result", s1, Rs1, N);
  CHECK_ARR("inoutset on present data: reader after the set", s1fold, Rs1f,
            M);
  CHECK_ARR("inoutset on sections: result", s2, Rs2, N);
  CHECK_ARR("inoutset on sections: reader after the set", s2fold, Rs2f, M);
  CHECK_ARR("section dependences: result", a, Ra, N);
  CHECK_ARR("section dependences: reader of all sections", afold, Rafold, M);
  CHECK_ARR("element dependences: result", e, Re, N);
  CHECK_ARR("depobj: q", q, Rq, N);
  CHECK_ARR("depobj: p", p, Rp, N);
  CHECK_ARR("depobj: first reader", rq1, Rrq1, N);
  CHECK_ARR("depobj: second reader", rq2, Rrq2, N);
  CHECK_ARR("depobj: reader of two depend objects", rpq, Rrpq, N);
  CHECK_ARR("data directives: result", hd, Rhd, N);
  CHECK_ARR("data directives: host task after update from", hdseen, Rhdseen,
            N);
  CHECK_ARR("omp_all_memory: u", u, Ru, N);
  CHECK_ARR("omp_all_memory: v", v, Rv, N);
  CHECK_ARR("omp_all_memory: w", w, Rw, N);
  CHECK_ARR("omp_all_memory: z", z, Rz, N);
  CHECK_ARR("omp_all_memory: reader after out all memory", rv, Rrv, N);
  CHECK_ARR("task without depend beside omp_all_memory", nd, Rnd, N);
  CHECK_ARR("taskwait depend: host saw x2 after its chain", x2seen, Rx2s, N);
  CHECK_ARR("taskwait depend: x2", x2, Rx2, N);
  CHECK_ARR("taskwait depend: host saw y2 after its chain", y2seen, Ry2s, N);
  CHECK_ARR("taskwait depend: y2", y2, Ry2, N);
  return finish("dep_kinds");
}
