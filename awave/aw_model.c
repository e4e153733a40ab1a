/*
 * aw_model.c - velocity models of awave (host code): the layered and
 * constant test models, a procedural Marmousi-like model, raw float32 and
 * SEG-Y files, and the smoothing that gives the migration model.
 */
#include "awave.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int aw_model_alloc(int64_t nx, int64_t nz, float dx, struct aw_model *m) {
  memset(m, 0, sizeof *m);
  if (nx < 16 || nz < 16) {
    fprintf(stderr,
            "awave: error: the grid must be at least 16 x 16 points (got --nx %lld --nz %lld)\n",
            (long long)nx, (long long)nz);
    return -1;
  }
  if (!(dx > 0.0f)) {
    fprintf(stderr, "awave: error: --dx must be positive (got %g)\n", (double)dx);
    return -1;
  }
  m->nx = nx;
  m->nz = nz;
  m->dx = dx;
  m->v = malloc((size_t)(nx * nz) * sizeof(float));
  if (!m->v) {
    fprintf(stderr, "awave: error: out of memory for a %lld x %lld model\n", (long long)nx,
            (long long)nz);
    return -1;
  }
  return 0;
}

void aw_model_free(struct aw_model *m) {
  free(m->v);
  m->v = NULL;
}

/* Three interfaces, at 30%, 55% and 80% of the depth. */
int aw_model_layered(int64_t nx, int64_t nz, float dx, struct aw_model *m_p) {
  static const float vel[4] = {2000.0f, 2500.0f, 3000.0f, 3500.0f};
  static const float frac[3] = {0.30f, 0.55f, 0.80f};
  struct aw_model m;
  if (aw_model_alloc(nx, nz, dx, &m))
    return -1;
  m.ninterfaces = 3;
  for (int k = 0; k < 3; k++)
    m.interface_iz[k] = (int64_t)lroundf(frac[k] * (float)nz);
  for (int64_t ix = 0; ix < nx; ix++)
    for (int64_t iz = 0; iz < nz; iz++) {
      int layer = 0;
      while (layer < 3 && iz >= m.interface_iz[layer])
        layer++;
      m.v[ix * nz + iz] = vel[layer];
    }
  *m_p = m;
  return 0;
}

int aw_model_constant(int64_t nx, int64_t nz, float dx, float v, struct aw_model *m_p) {
  struct aw_model m;
  if (aw_model_alloc(nx, nz, dx, &m))
    return -1;
  for (size_t i = 0; i < (size_t)(nx * nz); i++)
    m.v[i] = v;
  *m_p = m;
  return 0;
}

/* Marmousi-like: a water layer, then folded sedimentary layers (velocity
 * increasing with depth, one slow layer), offset by three dipping normal
 * faults, and a high-velocity salt-like body.  All positions are fractions
 * of the model size, so any grid gives the same geology. */
int aw_model_marmousi(int64_t nx, int64_t nz, float dx, struct aw_model *m_p) {
  enum { NL = 9, NF = 3 };
  static const float top[NL] = {0.08f, 0.16f, 0.25f, 0.33f, 0.42f, 0.52f, 0.62f, 0.74f, 0.86f};
  static const float vel[NL] = {1700.f, 1900.f, 2150.f, 1950.f, 2500.f,
                                2800.f, 3100.f, 3400.f, 3800.f};
  static const float fx[NF] = {0.22f, 0.47f, 0.70f};     /* fault at the surface */
  static const float fdip[NF] = {0.45f, 0.55f, 0.40f};   /* horizontal run per depth */
  static const float fthrow[NF] = {0.035f, 0.05f, 0.03f}; /* of the depth */
  struct aw_model m;
  if (aw_model_alloc(nx, nz, dx, &m))
    return -1;
  float lx = (float)nx, lz = (float)nz;
  for (int64_t ix = 0; ix < nx; ix++) {
    float x = (float)ix / lx;
    for (int64_t iz = 0; iz < nz; iz++) {
      float z = (float)iz / lz, zs = z;
      for (int f = 0; f < NF; f++)
        if (x > fx[f] + fdip[f] * z)
          zs -= fthrow[f];
      /* Folds grow with depth: an anticline and a shorter ripple. */
      float fold = (0.04f * sinf(2.0f * (float)M_PI * (x * 1.3f + 0.1f)) +
                    0.012f * sinf(2.0f * (float)M_PI * x * 5.0f)) *
                   z;
      int layer = -1;
      for (int l = 0; l < NL; l++)
        if (zs > top[l] + fold)
          layer = l;
      float v = layer < 0 ? 1500.0f : vel[layer] + 300.0f * (zs - top[layer]);
      if (z < top[0])
        v = 1500.0f; /* water */
      /* Salt: a rounded body with a lumpy top. */
      float sx = (x - 0.60f) / 0.13f, sz = (z - 0.60f) / 0.11f;
      float lump = 1.0f + 0.15f * sinf(7.0f * sx);
      if (sx * sx + sz * sz * lump < 1.0f && z > 0.5f)
        v = 4400.0f;
      m.v[ix * nz + iz] = v;
    }
  }
  *m_p = m;
  return 0;
}

static int aw_check_velocities(const char *path, const float *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(v[i] >= AW_VEL_MIN && v[i] <= AW_VEL_MAX)) { /* NaN fails it too */
      fprintf(stderr,
              "awave: error: %s: velocity %g at sample %zu is not within %g..%g m/s "
              "(wrong byte order or format?)\n",
              path, (double)v[i], i, (double)AW_VEL_MIN, (double)AW_VEL_MAX);
      return -1;
    }
  return 0;
}

int aw_model_load_raw(const char *path, int64_t nx, int64_t nz, float dx, struct aw_model *m_p) {
  struct aw_model m;
  struct stat st;
  if (nx <= 0 || nz <= 0) {
    fprintf(stderr, "awave: error: --vel %s needs --nx and --nz (the grid of the file)\n", path);
    return -1;
  }
  if (stat(path, &st) != 0) {
    fprintf(stderr, "awave: error: cannot open velocity file %s: %s\n", path, strerror(errno));
    return -1;
  }
  int64_t want = nx * nz * (int64_t)sizeof(float);
  if ((int64_t)st.st_size != want) {
    fprintf(stderr,
            "awave: error: velocity file %s has %lld bytes, but --nx %lld --nz %lld "
            "means %lld x %lld x 4 = %lld bytes\n",
            path, (long long)st.st_size, (long long)nx, (long long)nz, (long long)nx, (long long)nz,
            (long long)want);
    return -1;
  }
  if (aw_model_alloc(nx, nz, dx, &m))
    return -1;
  FILE *f = fopen(path, "rb");
  if (!f || fread(m.v, sizeof(float), (size_t)(nx * nz), f) != (size_t)(nx * nz)) {
    fprintf(stderr, "awave: error: cannot read velocity file %s: %s\n", path, strerror(errno));
    if (f)
      fclose(f);
    aw_model_free(&m);
    return -1;
  }
  fclose(f);
  if (aw_check_velocities(path, m.v, (size_t)(nx * nz))) {
    aw_model_free(&m);
    return -1;
  }
  *m_p = m;
  return 0;
}

static uint32_t aw_be32(const unsigned char *b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static float aw_ibm_to_float(uint32_t u) {
  /* IBM System/360: sign, base-16 exponent biased by 64, 24-bit fraction. */
  if ((u & 0x7fffffffu) == 0)
    return 0.0f;
  double frac = (double)(u & 0x00ffffffu) / 16777216.0;
  int e = (int)((u >> 24) & 0x7f) - 64;
  double v = ldexp(frac, 4 * e);
  return (float)((u & 0x80000000u) ? -v : v);
}

/* SEG-Y rev 0/1 subset: 3200-byte text header, 400-byte binary header
 * (sample count at byte 3221, format at 3225: 1 = IBM float, 5 = IEEE),
 * no extended text headers, fixed-length traces of 240 + 4 ns bytes, big
 * endian.  Each trace is one column of the model (samples = depth). */
int aw_model_load_segy(const char *path, float dx, struct aw_model *m_p) {
  unsigned char bh[3600];
  struct aw_model m;
  struct stat st;
  FILE *f = fopen(path, "rb");
  if (!f || fstat(fileno(f), &st) != 0) {
    fprintf(stderr, "awave: error: cannot open SEG-Y file %s: %s\n", path, strerror(errno));
    if (f)
      fclose(f);
    return -1;
  }
  if (fread(bh, 1, sizeof bh, f) != sizeof bh) {
    fprintf(stderr, "awave: error: %s is shorter than a SEG-Y header (3600 bytes)\n", path);
    fclose(f);
    return -1;
  }
  int64_t ns = (int64_t)bh[3220] << 8 | bh[3221];
  int fmt = bh[3224] << 8 | bh[3225];
  int ext = bh[3504] << 8 | bh[3505];
  if (fmt != 1 && fmt != 5) {
    fprintf(stderr,
            "awave: error: %s: SEG-Y sample format %d not supported (only 1 = IBM float, "
            "5 = IEEE float)\n",
            path, fmt);
    fclose(f);
    return -1;
  }
  if (ext != 0 || ns <= 0) {
    fprintf(stderr,
            "awave: error: %s: unsupported SEG-Y (%lld samples per trace, %d extended "
            "headers)\n",
            path, (long long)ns, ext);
    fclose(f);
    return -1;
  }
  int64_t tb = 240 + 4 * ns, body = (int64_t)st.st_size - 3600;
  if (body <= 0 || body % tb != 0) {
    fprintf(stderr,
            "awave: error: %s: %lld bytes after the headers are not a whole number of "
            "%lld-byte traces (%lld samples)\n",
            path, (long long)body, (long long)tb, (long long)ns);
    fclose(f);
    return -1;
  }
  int64_t nx = body / tb;
  if (aw_model_alloc(nx, ns, dx, &m)) {
    fclose(f);
    return -1;
  }
  unsigned char *tr = malloc((size_t)tb);
  for (int64_t ix = 0; tr && ix < nx; ix++) {
    if (fread(tr, 1, (size_t)tb, f) != (size_t)tb)
      break;
    for (int64_t iz = 0; iz < ns; iz++) {
      uint32_t u = aw_be32(tr + 240 + 4 * iz);
      float v;
      if (fmt == 1)
        v = aw_ibm_to_float(u);
      else
        memcpy(&v, &u, sizeof v);
      m.v[ix * ns + iz] = v;
    }
    if (ix == nx - 1) {
      free(tr);
      tr = NULL;
      fclose(f);
      f = NULL;
    }
  }
  if (f) {
    fprintf(stderr, "awave: error: cannot read the traces of %s\n", path);
    free(tr);
    fclose(f);
    aw_model_free(&m);
    return -1;
  }
  if (aw_check_velocities(path, m.v, (size_t)(nx * ns))) {
    aw_model_free(&m);
    return -1;
  }
  *m_p = m;
  return 0;
}

/* Migration model: slowness smoothed by two passes of a (2r+1)^2 box
 * filter (close to a Gaussian), back to velocity. */
int aw_model_smooth(const struct aw_model *m, int64_t radius, float **v_p) {
  int64_t nx = m->nx, nz = m->nz;
  size_t n = (size_t)(nx * nz);
  float *s = malloc(n * sizeof(float)), *t = malloc(n * sizeof(float));
  if (!s || !t) {
    free(s);
    free(t);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    s[i] = 1.0f / m->v[i];
  for (int pass = 0; pass < 2 * (radius > 0); pass++) {
    for (int64_t ix = 0; ix < nx; ix++) /* along z */
      for (int64_t iz = 0; iz < nz; iz++) {
        double sum = 0.0;
        for (int64_t k = -radius; k <= radius; k++) {
          int64_t j = iz + k < 0 ? 0 : (iz + k >= nz ? nz - 1 : iz + k);
          sum += s[ix * nz + j];
        }
        t[ix * nz + iz] = (float)(sum / (double)(2 * radius + 1));
      }
    for (int64_t ix = 0; ix < nx; ix++) /* along x */
      for (int64_t iz = 0; iz < nz; iz++) {
        double sum = 0.0;
        for (int64_t k = -radius; k <= radius; k++) {
          int64_t j = ix + k < 0 ? 0 : (ix + k >= nx ? nx - 1 : ix + k);
          sum += t[j * nz + iz];
        }
        s[ix * nz + iz] = (float)(sum / (double)(2 * radius + 1));
      }
  }
  for (size_t i = 0; i < n; i++)
    s[i] = 1.0f / s[i];
  free(t);
  *v_p = s;
  return 0;
}

void aw_model_range(const float *v, size_t n, float *vmin_p, float *vmax_p) {
  float lo = v[0], hi = v[0];
  for (size_t i = 1; i < n; i++) {
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
  *vmin_p = lo;
  *vmax_p = hi;
}
