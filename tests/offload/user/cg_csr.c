/* A conjugate-gradient mini-app, shaped like user solvers: a CSR matrix
 * (1D Laplacian plus a diagonal shift) kept on the device with target enter
 * data, work vectors from omp_target_alloc used through is_device_ptr, the
 * solver's parameters in a firstprivate struct, dot products as target
 * reductions, a nowait/depend chain for the vector updates, and target
 * update to watch the residual.  Checked against the same CG on the host,
 * step by step, and against the known solution. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  int n;
  int nnz;
  int *rowptr;
  int *col;
  double *val;
} csr_t;

typedef struct {
  int n;
  double shift;
  double tol;
  int maxit;
} params_t;

static void spmv_host(const csr_t *A, const double *x, double *y)
{
  for (int i = 0; i < A->n; i++) {
    double s = 0.0;
    for (int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
      s += A->val[k] * x[A->col[k]];
    y[i] = s;
  }
}

static csr_t build(int n, double shift)
{
  csr_t A = {n, 0, malloc(sizeof(int) * (size_t)(n + 1)), malloc(sizeof(int) * 3 * (size_t)n),
             malloc(sizeof(double) * 3 * (size_t)n)};
  for (int i = 0; i < n; i++) {
    A.rowptr[i] = A.nnz;
    if (i > 0) {
      A.col[A.nnz] = i - 1;
      A.val[A.nnz++] = -1.0;
    }
    A.col[A.nnz] = i;
    A.val[A.nnz++] = 2.0 + shift;
    if (i + 1 < n) {
      A.col[A.nnz] = i + 1;
      A.val[A.nnz++] = -1.0;
    }
  }
  A.rowptr[n] = A.nnz;
  return A;
}

int main(int argc, char **argv)
{
  params_t prm = {argc > 1 ? atoi(argv[1]) : 20000, 0.05, 1e-10, 200};
  const int n = prm.n;
  int dev = omp_get_default_device();
  int host = omp_get_initial_device();
  csr_t A = build(n, prm.shift);
  int *rowptr = A.rowptr, *col = A.col;
  double *val = A.val;
  int nnz = A.nnz;

  /* x_true = sin-ish, b = A x_true */
  double *xt = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
  double *x = malloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; i++)
    xt[i] = 1.0 + 0.5 * sin(0.001 * i);
  spmv_host(&A, xt, b);
  for (int i = 0; i < n; i++)
    x[i] = 0.0;

#pragma omp target enter data map(to : rowptr[0 : n + 1], col[0 : nnz], val[0 : nnz], b[0 : n])  \
    map(alloc : x[0 : n])
  /* the host's x changes after the enter data: the device must not see it */
  for (int i = 0; i < n; i++)
    x[i] = 99.0;
#pragma omp target teams distribute parallel for map(present, alloc : x[0 : n])
  for (int i = 0; i < n; i++)
    x[i] = 0.0;

  double *r = omp_target_alloc(sizeof(double) * (size_t)n, dev);
  double *p = omp_target_alloc(sizeof(double) * (size_t)n, dev);
  double *q = omp_target_alloc(sizeof(double) * (size_t)n, dev);
  if (!r || !p || !q) {
    printf("FAIL omp_target_alloc\n");
    return 1;
  }

  /* r = b - A x = b; p = r */
#pragma omp target teams distribute parallel for is_device_ptr(r, p) map(present, alloc : b[0 : n])
  for (int i = 0; i < n; i++) {
    r[i] = b[i];
    p[i] = b[i];
  }
  double rr = 0.0;
#pragma omp target teams distribute parallel for is_device_ptr(r) reduction(+ : rr)
  for (int i = 0; i < n; i++)
    rr += r[i] * r[i];

  /* the host's CG, step for step */
  double *hr = malloc(sizeof(double) * (size_t)n), *hp = malloc(sizeof(double) * (size_t)n);
  double *hq = malloc(sizeof(double) * (size_t)n), *hx = calloc((size_t)n, sizeof(double));
  for (int i = 0; i < n; i++)
    hr[i] = hp[i] = b[i];
  double hrr = 0.0;
  for (int i = 0; i < n; i++)
    hrr += hr[i] * hr[i];

  int failures = 0, it;
  double rr0 = rr;
  for (it = 0; it < prm.maxit && rr > prm.tol * prm.tol * rr0; it++) {
    double pq = 0.0;
#pragma omp target teams distribute parallel for is_device_ptr(p, q)                              \
    map(present, alloc : rowptr[0 : n + 1], col[0 : nnz], val[0 : nnz]) firstprivate(prm)        \
    reduction(+ : pq)
    for (int i = 0; i < prm.n; i++) {
      double s = 0.0;
      for (int k = rowptr[i]; k < rowptr[i + 1]; k++)
        s += val[k] * p[col[k]];
      q[i] = s;
      pq += p[i] * s;
    }
    double alpha = rr / pq;
    /* x += alpha p and r -= alpha q as two tasks, then the new rr after r */
    double rr_new = 0.0;
#pragma omp target teams distribute parallel for nowait depend(inout : x[0]) is_device_ptr(p)    \
    map(present, alloc : x[0 : n]) firstprivate(alpha)
    for (int i = 0; i < n; i++)
      x[i] += alpha * p[i];
#pragma omp target teams distribute parallel for nowait depend(inout : r[0]) is_device_ptr(r, q) \
    firstprivate(alpha)
    for (int i = 0; i < n; i++)
      r[i] -= alpha * q[i];
#pragma omp target teams distribute parallel for nowait depend(in : r[0])                        \
    depend(out : rr_new) is_device_ptr(r) map(tofrom : rr_new) reduction(+ : rr_new)
    for (int i = 0; i < n; i++)
      rr_new += r[i] * r[i];
#pragma omp taskwait
    double beta = rr_new / rr;
#pragma omp target teams distribute parallel for is_device_ptr(p, r) firstprivate(beta)
    for (int i = 0; i < n; i++)
      p[i] = r[i] + beta * p[i];
    rr = rr_new;

    /* host reference */
    double hpq = 0.0;
    spmv_host(&A, hp, hq);
    for (int i = 0; i < n; i++)
      hpq += hp[i] * hq[i];
    double ha = hrr / hpq, hrr_new = 0.0;
    for (int i = 0; i < n; i++) {
      hx[i] += ha * hp[i];
      hr[i] -= ha * hq[i];
      hrr_new += hr[i] * hr[i];
    }
    double hb = hrr_new / hrr;
    for (int i = 0; i < n; i++)
      hp[i] = hr[i] + hb * hp[i];
    hrr = hrr_new;
    if (fabs(rr - hrr) > 1e-6 * hrr + 1e-300) {
      printf("FAIL iteration %d: rr %.17g host %.17g\n", it, rr, hrr);
      failures++;
      break;
    }
    if (it % 10 == 0) {
      /* look at x half way, as users print progress */
#pragma omp target update from(x[0 : n])
      double d = 0.0;
      for (int i = 0; i < n; i++)
        d = fmax(d, fabs(x[i] - hx[i]));
      if (d > 1e-8) {
        printf("FAIL iteration %d: x differs from the host's by %g\n", it, d);
        failures++;
      }
    }
  }
#pragma omp target exit data map(from : x[0 : n])                                                 \
    map(release : rowptr[0 : n + 1], col[0 : nnz], val[0 : nnz], b[0 : n])

  /* copy r back through the device memory routines */
  double *rback = malloc(sizeof(double) * (size_t)n);
  if (omp_target_memcpy(rback, r, sizeof(double) * (size_t)n, 0, 0, host, dev) != 0) {
    printf("FAIL omp_target_memcpy\n");
    failures++;
  }
  double err = 0.0, rdiff = 0.0;
  for (int i = 0; i < n; i++) {
    err = fmax(err, fabs(x[i] - xt[i]));
    rdiff = fmax(rdiff, fabs(rback[i] - hr[i]));
  }
  if (err > 1e-6 || rdiff > 1e-8 || it >= prm.maxit) {
    printf("FAIL solution: error %g, residual difference %g, %d iterations\n", err, rdiff, it);
    failures++;
  }
  if (omp_target_is_present(x, dev)) {
    printf("FAIL x still present after exit data\n");
    failures++;
  }
  omp_target_free(r, dev);
  omp_target_free(p, dev);
  omp_target_free(q, dev);
  if (failures)
    return 1;
  printf("PASS cg_csr: %d iterations, error %.2g\n", it, err);
  return 0;
}
