/*
 * awave.h - shared definitions of awave, 2D reverse-time migration on ompc.
 *
 * Arrays are stored trace by trace: element (ix, iz) of an nx x nz grid is
 * a[ix * nz + iz], depth fastest (as SEG-Y traces and the raw files).
 */
#ifndef AWAVE_H
#define AWAVE_H

#include <stddef.h>
#include <stdint.h>

/* Floats appended to each shot's image buffer: run time of the shot (s),
 * then the times of its three phases. */
#define AW_SHOT_TRAILER 4

/* 8th-order stability limit of v*dt/dx in 2D with 2nd-order time stepping:
 * sqrt(4 / (2 * (205/72 + 2*(8/5 + 1/5 + 8/315 + 1/560)))). */
#define AW_CFL_LIMIT 0.554700
/* Bounds on the command line, so that a typo cannot start a run that
 * never ends or that libomp aborts: integer flags, --threads (per shot;
 * libomp aborts well before 100000), and time steps per shot. */
#define AW_MAX_INT 1000000000LL
#define AW_MAX_THREADS 1024LL
#define AW_MAX_STEPS 1000000LL
/* Velocities read from a file (m/s).  Sound in air is 343 m/s and the
 * fastest rocks about 8000 m/s, so a value outside this range means a file
 * in another byte order or format (a byte-swapped 1500.0f reads as
 * 1.3e-38).  Near zero it also breaks the migration model: the slowness
 * 1/v overflows float and the smoothed velocity comes out as 0. */
#define AW_VEL_MIN 1.0f
#define AW_VEL_MAX 1.0e6f

/* Direct-wave removal before migration (--direct).  Subtracting the
 * direct arrivals modelled in the near-surface velocity was tried: alone it
 * images refracted and post-critical energy that the mute removes, and
 * before the mute it changes nothing measurable, for one more propagation
 * per shot (awave/README.md). */
enum { AW_DIRECT_MUTE = 0, AW_DIRECT_NONE = 1 };

/* Everything a shot task needs besides the arrays; copied (firstprivate)
 * into each target task. */
struct aw_conf {
  int64_t nx, nz;     /* model grid (points) */
  float dx;           /* grid spacing (m), dz = dx */
  float dt;           /* time step (s) */
  int64_t nt;         /* time steps */
  float f0;           /* Ricker peak frequency (Hz) */
  int64_t nb;         /* sponge width (points) on every side */
  int64_t snap;       /* keep the source wavefield every snap-th step */
  int64_t seg;        /* snapshots held at a time: one checkpoint segment */
  int64_t nseg;       /* segments; 1 = all snapshots stored, no checkpoint */
  int64_t sz, rz;     /* source and receiver depth (grid index) */
  int64_t nshots;
  int64_t mute_top;   /* image rows zeroed below the surface */
  float v_surface;    /* velocity used by the direct-wave mute (m/s) */
  int64_t threads;    /* threads of each shot's loops (0: OpenMP default) */
  int have_data;      /* observed data given (1) or modelled (0) */
  int direct;         /* AW_DIRECT_* */
  int progress;       /* progress lines within each shot */
  float progress_s;   /* at least this many seconds between them */
};

/* Model-building and I/O (host code, aw_model.c / aw_png.c). */
struct aw_model {
  int64_t nx, nz;
  float dx;
  float *v;           /* nx * nz velocities (m/s) */
  int64_t ninterfaces;
  int64_t interface_iz[8]; /* layered model: first grid row of each layer */
};

int aw_model_layered(int64_t nx, int64_t nz, float dx, struct aw_model *m_p);
int aw_model_constant(int64_t nx, int64_t nz, float dx, float v, struct aw_model *m_p);
int aw_model_marmousi(int64_t nx, int64_t nz, float dx, struct aw_model *m_p);
int aw_model_load_raw(const char *path, int64_t nx, int64_t nz, float dx, struct aw_model *m_p);
int aw_model_load_segy(const char *path, float dx, struct aw_model *m_p);
int aw_model_smooth(const struct aw_model *m, int64_t radius, float **v_p);
void aw_model_free(struct aw_model *m);
void aw_model_range(const float *v, size_t n, float *vmin_p, float *vmax_p);

int aw_png_write_gray(const char *path, const float *a, int64_t nx, int64_t nz, float lo, float hi);
int aw_png_write_color(const char *path, const float *a, int64_t nx, int64_t nz, float lo,
                       float hi);

/* Device code (aw_prop.c, declare target). */
#pragma omp declare target
void aw_shot_migrate(const struct aw_conf *c, int64_t ishot, const float *vtrue, const float *vmig,
                     float *dobs, float *img);
void aw_image_add(int64_t n, const float *src, float *dst);
void aw_image_laplacian(const struct aw_conf *c, float *img);
#pragma omp end declare target

#endif
