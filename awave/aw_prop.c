/*
 * aw_prop.c - device code of awave: wave propagation, one shot's RTM, and
 * the stacking kernels.  Everything here runs inside target regions, on a
 * worker: it touches no global variable (ompc treats every declare target
 * variable as written by every kernel) and prints through write(2).
 *
 * Scheme: p(n+1) = 2 p(n) - p(n-1) + (v dt / dx)^2 * L8 p(n), with L8 the
 * 8th-order 5+4-point-per-axis Laplacian (times dx^2), and Cerjan's sponge:
 * both time levels multiplied by g = exp(-(a (nb - i) / nb)^2) in the nb
 * points next to each edge.  The grid handed to the propagator is the model
 * padded by nb points on every side with the edge values.
 */
#include "awave.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma omp declare target

/* Second-derivative coefficients, 8th order (c0 for the centre point). */
#define AW_C0 (-205.0f / 72.0f)
#define AW_C1 (8.0f / 5.0f)
#define AW_C2 (-1.0f / 5.0f)
#define AW_C3 (8.0f / 315.0f)
#define AW_C4 (-1.0f / 560.0f)
#define AW_SPONGE_A 0.45f
/* Threads of the loops over the grid: --threads, else the worker's default. */
#define AW_NTH(c) ((c)->threads > 0 ? (int)(c)->threads : omp_get_max_threads())

struct aw_pad {
  int64_t nxp, nzp, nb, nz, threads;
  float *c2;   /* (v dt / dx)^2 on the padded grid */
  float *g;    /* sponge factor on the padded grid */
};

static void aw_say(const char *msg) {
  size_t n = strlen(msg);
  ssize_t w = write(2, msg, n);
  (void)w;
}

static float aw_ricker(float f0, float t) {
  float t0 = 1.2f / f0;
  float a = (float)M_PI * f0 * (t - t0);
  a *= a;
  return (1.0f - 2.0f * a) * expf(-a);
}

static int aw_pad_init(const struct aw_conf *c, const float *v, struct aw_pad *p) {
  p->nb = c->nb;
  p->threads = c->threads;
  p->nz = c->nz;
  p->nxp = c->nx + 2 * c->nb;
  p->nzp = c->nz + 2 * c->nb;
  size_t n = (size_t)(p->nxp * p->nzp);
  p->c2 = malloc(n * sizeof(float));
  p->g = malloc(n * sizeof(float));
  if (!p->c2 || !p->g) {
    free(p->c2);
    free(p->g);
    return -1;
  }
  float r = c->dt / c->dx;
#pragma omp parallel for num_threads(AW_NTH(c))
  for (int64_t ix = 0; ix < p->nxp; ix++) {
    int64_t jx = ix - c->nb;
    jx = jx < 0 ? 0 : (jx >= c->nx ? c->nx - 1 : jx);
    int64_t dxb = ix < c->nb ? c->nb - ix : (ix >= c->nb + c->nx ? ix - (c->nb + c->nx) + 1 : 0);
    for (int64_t iz = 0; iz < p->nzp; iz++) {
      int64_t jz = iz - c->nb;
      jz = jz < 0 ? 0 : (jz >= c->nz ? c->nz - 1 : jz);
      int64_t dzb = iz < c->nb ? c->nb - iz : (iz >= c->nb + c->nz ? iz - (c->nb + c->nz) + 1 : 0);
      float vv = v[jx * c->nz + jz] * r;
      float gx = c->nb > 0 ? AW_SPONGE_A * (float)dxb / (float)c->nb : 0.0f;
      float gz = c->nb > 0 ? AW_SPONGE_A * (float)dzb / (float)c->nb : 0.0f;
      p->c2[ix * p->nzp + iz] = vv * vv;
      p->g[ix * p->nzp + iz] = expf(-(gx * gx + gz * gz));
    }
  }
  return 0;
}

static void aw_pad_fini(struct aw_pad *p) {
  free(p->c2);
  free(p->g);
}

/* One time step: q holds p(n-1) on entry and p(n+1) on return. */
static void aw_step(const struct aw_pad *p, const float *restrict cur, float *restrict q) {
  const int64_t nzp = p->nzp;
#pragma omp parallel for num_threads(AW_NTH(p))
  for (int64_t ix = 4; ix < p->nxp - 4; ix++) {
    const float *a = cur + ix * nzp;
    float *o = q + ix * nzp;
    const float *c2 = p->c2 + ix * nzp;
    const float *g = p->g + ix * nzp;
    for (int64_t iz = 4; iz < nzp - 4; iz++) {
      float lap = 2.0f * AW_C0 * a[iz] +
                  AW_C1 * (a[iz - 1] + a[iz + 1] + a[iz - nzp] + a[iz + nzp]) +
                  AW_C2 * (a[iz - 2] + a[iz + 2] + a[iz - 2 * nzp] + a[iz + 2 * nzp]) +
                  AW_C3 * (a[iz - 3] + a[iz + 3] + a[iz - 3 * nzp] + a[iz + 3 * nzp]) +
                  AW_C4 * (a[iz - 4] + a[iz + 4] + a[iz - 4 * nzp] + a[iz + 4 * nzp]);
      o[iz] = g[iz] * (2.0f * a[iz] - g[iz] * o[iz] + c2[iz] * lap);
    }
  }
}

static int64_t aw_shot_ix(const struct aw_conf *c, int64_t ishot) {
  return (2 * ishot + 1) * c->nx / (2 * c->nshots);
}

/* The source wavefield kept for the imaging condition.  Snapshot js (the
 * interior after step js*k) belongs to segment js / m; seg holds the m
 * snapshots of segment cur.  Checkpoint slot j - 1 (j = 1..nseg-1) holds the
 * whole padded state entering step j*m*k, p(t-1) then p(t-2), sponge
 * included, because the recomputation must repeat the first pass bit for
 * bit.  Stored snapshots are the case nseg = 1: nothing is ever recomputed. */
struct aw_store {
  int64_t k, m, nseg, nsnap, cur;
  size_t npad, ni;
  float *ckpt, *seg;
  int64_t recomputed;   /* forward steps run a second time */
};

/* Progress within a shot: a line at each 10% of a phase's steps, but no
 * sooner than progress_s seconds after the shot's previous line, so that
 * short shots stay silent and long ones print every few seconds. */
struct aw_prog {
  const struct aw_conf *c;
  const char *phase;
  int64_t ishot, done, total, next;
  double tstart, tlast;
};

static void aw_prog_phase(struct aw_prog *g, const char *phase, int64_t total) {
  g->phase = phase;
  g->done = 0;
  g->total = total > 0 ? total : 1;
  g->next = (g->total + 9) / 10;
}

static void aw_prog_tick(struct aw_prog *g) {
  if (++g->done < g->next || !g->c->progress)
    return;
  int64_t pct = g->done * 100 / g->total;
  g->next = ((pct / 10 + 1) * g->total + 9) / 10;
  double now = omp_get_wtime();
  if (now - g->tlast < (double)g->c->progress_s || g->done >= g->total)
    return;
  char msg[128];
  snprintf(msg, sizeof msg, "awave: shot %lld/%lld: %s %lld%% (%lld/%lld steps), %.1f s\n",
           (long long)g->ishot + 1, (long long)g->c->nshots, g->phase, (long long)pct,
           (long long)g->done, (long long)g->total, now - g->tstart);
  aw_say(msg);
  g->tlast = now;
}

/* Forward steps it0..it1-1 of the shot at padded index src, from the state
 * entering step it0 (*a_p = p(it0-1), *b_p = p(it0-2)); on return *a_p is
 * the last state.  Records the surface data into d when d is not NULL.  With
 * a store, keeps the snapshots of segment st->cur and, when save is set, the
 * checkpoints of the segments that start in the range. */
static void aw_fwd_run(const struct aw_conf *c, const struct aw_pad *p, int64_t src, float **a_p,
                       float **b_p, int64_t it0, int64_t it1, float *d, struct aw_store *st,
                       int save, struct aw_prog *g) {
  float *a = *a_p, *b = *b_p;
  int64_t span = st ? st->m * st->k : 0;
  for (int64_t it = it0; it < it1; it++) {
    if (save && it > 0 && it % span == 0) {
      float *slot = st->ckpt + (size_t)(it / span - 1) * 2 * st->npad;
      memcpy(slot, a, st->npad * sizeof(float));
      memcpy(slot + st->npad, b, st->npad * sizeof(float));
    }
    aw_step(p, a, b);
    b[src] += p->c2[src] * aw_ricker(c->f0, (float)it * c->dt);
    float *t = a;
    a = b;
    b = t;
    if (d) {
      for (int64_t ir = 0; ir < c->nx; ir++)
        d[it * c->nx + ir] = a[(ir + c->nb) * p->nzp + c->rz + c->nb];
    }
    if (st && it % st->k == 0 && it / st->k / st->m == st->cur) {
      float *s = st->seg + (size_t)(it / st->k % st->m) * st->ni;
#pragma omp parallel for num_threads(AW_NTH(c))
      for (int64_t ix = 0; ix < c->nx; ix++)
        memcpy(s + ix * c->nz, a + (ix + c->nb) * p->nzp + c->nb, (size_t)c->nz * sizeof(float));
    }
    aw_prog_tick(g);
  }
  *a_p = a;
  *b_p = b;
}

/* Forward modelling of the shot in v from rest, over all nt steps: records
 * the data into d (nt x nx, receivers fastest) when d is not NULL, and fills
 * the store (last segment's snapshots, checkpoints) when st is not NULL. */
static int aw_forward(const struct aw_conf *c, const struct aw_pad *p, int64_t isx, float *d,
                      struct aw_store *st, struct aw_prog *g) {
  size_t n = (size_t)(p->nxp * p->nzp);
  float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
  if (!a || !b) {
    free(a);
    free(b);
    return -1;
  }
  int64_t src = (isx + c->nb) * p->nzp + c->sz + c->nb;
  if (st)
    st->cur = st->nseg - 1;
  aw_fwd_run(c, p, src, &a, &b, 0, c->nt, d, st, st != NULL, g);
  free(a);
  free(b);
  return 0;
}

/* Puts the snapshots of segment j into st->seg by running the source again
 * from the segment's checkpoint.  The backward pass visits the segments last
 * to first, so slot j - 1 is never needed again and serves as the working
 * pair; segment 0 starts from rest in slot 0, whose segment (1) is done. */
static void aw_store_load(const struct aw_conf *c, const struct aw_pad *p, int64_t isx,
                          struct aw_store *st, int64_t j, struct aw_prog *g) {
  float *a = st->ckpt + (size_t)(j > 0 ? j - 1 : 0) * 2 * st->npad, *b = a + st->npad;
  if (j == 0)
    memset(a, 0, 2 * st->npad * sizeof(float));
  int64_t last = (j + 1) * st->m < st->nsnap ? (j + 1) * st->m - 1 : st->nsnap - 1;
  int64_t it0 = j * st->m * st->k, it1 = last * st->k + 1;
  st->cur = j;
  aw_fwd_run(c, p, (isx + c->nb) * p->nzp + c->sz + c->nb, &a, &b, it0, it1, NULL, st, 0, g);
  st->recomputed += it1 - it0;
}

/* Removes the direct wave: zero before offset / v_surface + wavelet length,
 * then a half-cosine taper over half a period. */
static void aw_mute(const struct aw_conf *c, int64_t isx, float *d) {
  float tw = 2.4f / c->f0, taper = 0.5f / c->f0;
  for (int64_t ir = 0; ir < c->nx; ir++) {
    float off = fabsf((float)(ir - isx)) * c->dx;
    float t1 = off / c->v_surface + tw;
    for (int64_t it = 0; it < c->nt; it++) {
      float t = (float)it * c->dt, w;
      if (t < t1)
        w = 0.0f;
      else if (t < t1 + taper)
        w = 0.5f - 0.5f * cosf((float)M_PI * (t - t1) / taper);
      else
        break;
      d[it * c->nx + ir] *= w;
    }
  }
}

/* Time derivative (centred) of each trace.  With sources and receivers
 * along a line, the 2D wavefields behave as line sources and the
 * cross-correlation image comes out rotated by 90 degrees (one time
 * integration, 1/(i w)); differentiating the data restores a zero-phase
 * image, whose peak sits on the reflector. */
static void aw_differentiate(const struct aw_conf *c, float *d) {
  float s = 0.5f / c->dt;
  for (int64_t ir = 0; ir < c->nx; ir++) {
    float prev = 0.0f;
    for (int64_t it = 0; it < c->nt; it++) {
      float cur = d[it * c->nx + ir];
      float next = it + 1 < c->nt ? d[(it + 1) * c->nx + ir] : 0.0f;
      d[it * c->nx + ir] = s * (next - prev);
      prev = cur;
    }
  }
}

/* Back-propagates d and applies the imaging condition against the source
 * snapshots of st, recomputing each segment from its checkpoint when the
 * backward pass reaches it: img = sum_t S R / (sum_t S^2 + eps max),
 * eps = 1e-3. */
static int aw_backward(const struct aw_conf *c, const struct aw_pad *p, int64_t isx, const float *d,
                       struct aw_store *st, float *img, struct aw_prog *g) {
  size_t n = (size_t)(p->nxp * p->nzp), ni = (size_t)(c->nx * c->nz);
  float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
  float *illum = calloc(ni, sizeof(float));
  if (!a || !b || !illum) {
    free(a);
    free(b);
    free(illum);
    return -1;
  }
  memset(img, 0, ni * sizeof(float));
  for (int64_t it = c->nt - 1; it >= 0; it--) {
    aw_step(p, a, b);
    for (int64_t ir = 0; ir < c->nx; ir++) {
      int64_t k = (ir + c->nb) * p->nzp + c->rz + c->nb;
      b[k] += p->c2[k] * d[it * c->nx + ir];
    }
    float *t = a;
    a = b;
    b = t;
    aw_prog_tick(g);
    if (it % st->k == 0) {
      int64_t js = it / st->k;
      if (js / st->m != st->cur)
        aw_store_load(c, p, isx, st, js / st->m, g);
      const float *s = st->seg + (size_t)(js % st->m) * ni;
#pragma omp parallel for num_threads(AW_NTH(c))
      for (int64_t ix = 0; ix < c->nx; ix++) {
        const float *r = a + (ix + c->nb) * p->nzp + c->nb;
        for (int64_t iz = 0; iz < c->nz; iz++) {
          float sv = s[ix * c->nz + iz];
          img[ix * c->nz + iz] += sv * r[iz];
          illum[ix * c->nz + iz] += sv * sv;
        }
      }
    }
  }
  float imax = 0.0f;
  for (size_t i = 0; i < ni; i++)
    imax = illum[i] > imax ? illum[i] : imax;
  float eps = 1e-3f * imax + 1e-30f;
#pragma omp parallel for num_threads(AW_NTH(c))
  for (size_t i = 0; i < ni; i++)
    img[i] /= illum[i] + eps;
  free(a);
  free(b);
  free(illum);
  return 0;
}

/* One shot: observed data (given in dobs, or modelled in vtrue into dobs),
 * then on a copy: direct-wave mute (unless --direct none), time derivative,
 * source wavefield in vmig (kept as planned in c: snapshots, checkpoints),
 * back-propagation and imaging.  img gets nx*nz values and AW_SHOT_TRAILER timings; a failed
 * allocation leaves a negative time. */
void aw_shot_migrate(const struct aw_conf *c, int64_t ishot, const float *vtrue, const float *vmig,
                     float *dobs, float *img) {
  char msg[256];
  double t0 = omp_get_wtime(), t1, t2;
  int64_t isx = aw_shot_ix(c, ishot);
  size_t ni = (size_t)(c->nx * c->nz), nd = (size_t)(c->nt * c->nx);
  struct aw_pad p = {0};
  struct aw_store st = {.k = c->snap,
                        .m = c->seg,
                        .nseg = c->nseg,
                        .nsnap = (c->nt + c->snap - 1) / c->snap,
                        .ni = ni,
                        .npad = (size_t)((c->nx + 2 * c->nb) * (c->nz + 2 * c->nb))};
  struct aw_prog g = {.c = c, .ishot = ishot, .tstart = t0, .tlast = t0};
  size_t store_bytes = ((size_t)(st.nseg - 1) * 2 * st.npad + (size_t)st.m * ni) * sizeof(float);
  float *d = malloc(nd * sizeof(float));
  float *trailer = img + ni;
  trailer[0] = -1.0f;
  st.seg = malloc((size_t)st.m * ni * sizeof(float));
  st.ckpt = st.nseg > 1 ? malloc((size_t)(st.nseg - 1) * 2 * st.npad * sizeof(float)) : NULL;
  if (!d || !st.seg || (st.nseg > 1 && !st.ckpt))
    goto err_alloc;
  if (!c->have_data) {
    if (aw_pad_init(c, vtrue, &p))
      goto err_alloc;
    aw_prog_phase(&g, "data", c->nt);
    int rc = aw_forward(c, &p, isx, dobs, NULL, &g);
    aw_pad_fini(&p);
    if (rc)
      goto err_alloc;
  }
  memcpy(d, dobs, nd * sizeof(float));
  if (c->direct == AW_DIRECT_MUTE)
    aw_mute(c, isx, d);
  aw_differentiate(c, d);
  t1 = omp_get_wtime();
  if (aw_pad_init(c, vmig, &p))
    goto err_alloc;
  aw_prog_phase(&g, "source", c->nt);
  if (aw_forward(c, &p, isx, NULL, &st, &g))
    goto err_pad;
  t2 = omp_get_wtime();
  aw_prog_phase(&g, "migration", c->nt + (st.nseg - 1) * ((st.m - 1) * st.k + 1));
  if (aw_backward(c, &p, isx, d, &st, img, &g))
    goto err_pad;
  aw_pad_fini(&p);
  double t3 = omp_get_wtime();
  trailer[0] = (float)(t3 - t0);
  trailer[1] = (float)(t1 - t0);
  trailer[2] = (float)(t2 - t1);
  trailer[3] = (float)(t3 - t2);
  /* One write per line: shots that share a worker print concurrently. */
  char how[96];
  if (st.nseg > 1)
    snprintf(how, sizeof how, "%lld snapshots from %lld checkpoint%s, %lld steps recomputed",
             (long long)st.nsnap, (long long)st.nseg - 1, st.nseg > 2 ? "s" : "",
             (long long)st.recomputed);
  else
    snprintf(how, sizeof how, "%lld snapshots", (long long)st.nsnap);
  snprintf(msg, sizeof msg,
           "awave: shot %lld/%lld (x = %.0f m) done in %.2f s (data %.2f s, source %.2f s, "
           "migration %.2f s, %s)\n",
           (long long)ishot + 1, (long long)c->nshots, (double)((float)isx * c->dx), t3 - t0,
           t1 - t0, t2 - t1, t3 - t2, how);
  aw_say(msg);
  free(d);
  free(st.seg);
  free(st.ckpt);
  return;
err_pad:
  aw_pad_fini(&p);
err_alloc:
  snprintf(msg, sizeof msg, "awave: shot %lld: out of memory (%zu MB of source wavefield)\n",
           (long long)ishot + 1, store_bytes >> 20);
  aw_say(msg);
  memset(img, 0, ni * sizeof(float));
  trailer[0] = -1.0f;
  free(d);
  free(st.seg);
  free(st.ckpt);
}

void aw_image_add(int64_t n, const float *src, float *dst) {
  for (int64_t i = 0; i < n; i++)
    dst[i] += src[i];
}

/* Laplacian filter (5-point, d2/dx2 + d2/dz2) of the stacked image,
 * which removes the smooth backscattering artefacts of RTM; the outer
 * rows and columns and the top mute_top rows are zeroed (edge effects,
 * source and receiver artefacts).  With the derivative taken on the data a
 * velocity increase images as a positive peak. */
void aw_image_laplacian(const struct aw_conf *c, float *img) {
  int64_t nx = c->nx, nz = c->nz;
  float *t = malloc((size_t)(nx * nz) * sizeof(float));
  if (!t) {
    aw_say("awave: out of memory in the Laplacian filter\n");
    return;
  }
  memcpy(t, img, (size_t)(nx * nz) * sizeof(float));
#pragma omp parallel for num_threads(AW_NTH(c))
  for (int64_t ix = 0; ix < nx; ix++) {
    for (int64_t iz = 0; iz < nz; iz++) {
      float *o = img + ix * nz + iz;
      if (ix == 0 || ix == nx - 1 || iz < c->mute_top || iz == 0 || iz == nz - 1) {
        *o = 0.0f;
        continue;
      }
      const float *a = t + ix * nz + iz;
      *o = a[-nz] + a[nz] + a[-1] + a[1] - 4.0f * a[0];
    }
  }
  free(t);
}

#pragma omp end declare target
