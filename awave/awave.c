/*
 * awave.c - 2D reverse-time migration of seismic shots on ompc.
 *
 * The head builds the models, maps them once (target enter data), and
 * records one `target nowait` task per shot (modelling + migration, with
 * parallel loops inside), then a chain of stacking tasks that add the shot
 * images in shot order (so the result does not depend on where or when the
 * shots ran), and a last task that applies the Laplacian filter.  Under
 * ompc the velocity models, named only by depend(in:), are read-only for
 * the shot tasks, and each shot writes its own buffers: the shots spread
 * over the workers.  See README.md.
 */
#include "awave.h"
#include "ompc_file.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct aw_opts {
  const char *model, *vel, *segy, *data, *write_data, *out;
  int64_t nx, nz, shots, nb, snap, smooth, mute_top, threads;
  float dx, dt, tmax, f0, vconst;
  double mem;         /* source-wavefield budget per shot (MB) */
  int64_t ckpt;       /* 0: checkpoint only if needed; -1: always, least memory;
                         M > 0: always, M snapshots per segment */
  double progress_s;  /* --progress interval (s); < 0: only if stderr is a tty */
  int direct;         /* AW_DIRECT_* */
  int check, png;
};

static void aw_usage(FILE *f) {
  fprintf(f,
          "usage: awave [options]\n"
          "  --model NAME     layered | marmousi (default) | constant\n"
          "  --vel FILE       raw float32 velocities (m/s), nx traces of nz samples\n"
          "                   (depth fastest); needs --nx --nz --dx\n"
          "  --segy FILE      SEG-Y velocity model (IBM or IEEE floats); needs --dx\n"
          "  --nx N --nz N    grid (default 300 x 150)\n"
          "  --dx M           grid spacing in metres, dz = dx (default 10)\n"
          "  --vconst V       velocity of --model constant (default 2000)\n"
          "  --shots N        shots, evenly spread along the surface (default 8)\n"
          "  --f0 HZ          Ricker peak frequency (default 12)\n"
          "  --tmax S         recording time (default 1.6)\n"
          "  --dt S           time step (default: 0.8 x the stability limit)\n"
          "  --nb N           absorbing sponge width in points (default 40)\n"
          "  --snap K         keep every K-th source snapshot (default: 4 per period of 2.5 f0,\n"
          "                   coarsened up to 2 per period to fit --mem)\n"
          "  --mem MB         memory budget of the source wavefield per shot (default 512);\n"
          "                   checkpointing when the snapshots do not fit\n"
          "  --checkpoint[=M] checkpoint even if the snapshots fit, M snapshots per\n"
          "                   segment (default: the least memory)\n"
          "  --direct WAY     mute (default): zero the direct wave and what arrives\n"
          "                   before its end; none: data already without it\n"
          "  --smooth R       migration model = slowness smoothed over +-R points (default 4)\n"
          "  --mute-top N     image rows zeroed below the surface (default 8)\n"
          "  --data FILE      observed data instead of modelling: raw float32,\n"
          "                   shots x nt x nx (receivers fastest)\n"
          "  --write-data FILE  save the modelled observed data in that layout\n"
          "  --out PREFIX     outputs PREFIX.bin, .json, .png, -vel.png (default awave)\n"
          "  --threads N      threads of each shot's grid loops (default: the OpenMP\n"
          "                   default of the worker; 1 when several shots share a worker)\n"
          "  --progress[=S]   progress within each shot, at most every S seconds (default\n"
          "                   2; on by default only when stderr is a terminal)\n"
          "  --no-png         skip the PNG files\n"
          "  --check          layered model: check the imaged interface depths\n");
}

static int aw_parse_num(const char *opt, const char *s, double lo, double *v_p) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo)) {
    fprintf(stderr, "awave: error: %s expects a number >= %g, got '%s'\n", opt, lo, s);
    return -1;
  }
  /* strtod takes "inf" and "nan"; neither means anything to a run. */
  if (!isfinite(v)) {
    fprintf(stderr, "awave: error: %s expects a finite number, got '%s'\n", opt, s);
    return -1;
  }
  *v_p = v;
  return 0;
}

static int aw_opts_parse(int argc, char **argv, struct aw_opts *o) {
  static const struct option lo[] = {
      {"model", 1, 0, 'm'},  {"vel", 1, 0, 'v'},        {"segy", 1, 0, 'S'},
      {"nx", 1, 0, 'x'},     {"nz", 1, 0, 'z'},         {"dx", 1, 0, 'd'},
      {"vconst", 1, 0, 'c'}, {"shots", 1, 0, 's'},      {"f0", 1, 0, 'f'},
      {"tmax", 1, 0, 'T'},   {"dt", 1, 0, 't'},         {"nb", 1, 0, 'b'},
      {"snap", 1, 0, 'k'},   {"smooth", 1, 0, 'r'},     {"mute-top", 1, 0, 'u'},
      {"data", 1, 0, 'D'},   {"write-data", 1, 0, 'W'}, {"out", 1, 0, 'o'},
      {"no-png", 0, 0, 'P'}, {"check", 0, 0, 'C'},      {"threads", 1, 0, 'n'},
      {"mem", 1, 0, 'M'},    {"checkpoint", 2, 0, 'K'}, {"progress", 2, 0, 'p'},
      {"direct", 1, 0, 'R'}, {"help", 0, 0, 'h'},       {0, 0, 0, 0}};
  *o = (struct aw_opts){.model = "marmousi",
                        .out = "awave",
                        .nx = 300,
                        .nz = 150,
                        .shots = 8,
                        .nb = 40,
                        .smooth = 4,
                        .mute_top = 8,
                        .dx = 10.0f,
                        .tmax = 1.6f,
                        .f0 = 12.0f,
                        .vconst = 2000.0f,
                        .mem = 512.0,
                        .progress_s = -1.0,
                        .png = 1};
  int ch, li = 0;
  double v;
  char name[32];
  while ((ch = getopt_long(argc, argv, "", lo, &li)) != -1) {
    snprintf(name, sizeof name, "--%s", ch == '?' ? "?" : lo[li].name);
    switch (ch) {
    case 'm':
      o->model = optarg;
      break;
    case 'v':
      o->vel = optarg;
      o->model = "file";
      break;
    case 'S':
      o->segy = optarg;
      o->model = "segy";
      break;
    case 'D':
      o->data = optarg;
      break;
    case 'W':
      o->write_data = optarg;
      break;
    case 'o':
      o->out = optarg;
      break;
    case 'P':
      o->png = 0;
      break;
    case 'C':
      o->check = 1;
      break;
    case 'h':
      aw_usage(stdout);
      exit(0);
    case 'x':
    case 'z':
    case 's':
    case 'b':
    case 'k':
    case 'r':
    case 'u':
    case 'n':
      if (aw_parse_num(name, optarg, ch == 'x' || ch == 'z' || ch == 's' ? 1 : 0, &v))
        return -1;
      if (v != floor(v)) {
        fprintf(stderr, "awave: error: %s expects an integer, got '%s'\n", name, optarg);
        return -1;
      }
      if (v > (ch == 'n' ? AW_MAX_THREADS : AW_MAX_INT)) {
        fprintf(stderr, "awave: error: %s %s exceeds the limit of %lld%s\n", name, optarg,
                (long long)(ch == 'n' ? AW_MAX_THREADS : AW_MAX_INT),
                ch == 'n' ? " threads per shot" : "");
        return -1;
      }
      *(ch == 'x'   ? &o->nx
        : ch == 'z' ? &o->nz
        : ch == 's' ? &o->shots
        : ch == 'b' ? &o->nb
        : ch == 'k' ? &o->snap
        : ch == 'r' ? &o->smooth
        : ch == 'n' ? &o->threads
                    : &o->mute_top) = (int64_t)v;
      break;
    case 'd':
    case 'c':
    case 'f':
    case 'T':
    case 't':
      if (aw_parse_num(name, optarg, 0, &v))
        return -1;
      /* Checked as a float: 1e-50 or 1e50 would become 0 or infinity. */
      if (!((float)v > 0.0f) || !isfinite((float)v)) {
        fprintf(stderr,
                "awave: error: %s must be a positive number within float range, got "
                "'%s'\n",
                name, optarg);
        return -1;
      }
      *(ch == 'd'   ? &o->dx
        : ch == 'c' ? &o->vconst
        : ch == 'f' ? &o->f0
        : ch == 'T' ? &o->tmax
                    : &o->dt) = (float)v;
      break;
    case 'K':
      o->ckpt = -1;
      if (optarg) {
        if (aw_parse_num(name, optarg, 1, &v))
          return -1;
        if (v != floor(v)) {
          fprintf(stderr, "awave: error: %s expects an integer, got '%s'\n", name, optarg);
          return -1;
        }
        o->ckpt = (int64_t)v;
      }
      break;
    case 'p':
      o->progress_s = 2.0;
      if (optarg && aw_parse_num(name, optarg, 0, &o->progress_s))
        return -1;
      break;
    case 'R':
      if (!strcmp(optarg, "mute"))
        o->direct = AW_DIRECT_MUTE;
      else if (!strcmp(optarg, "none"))
        o->direct = AW_DIRECT_NONE;
      else {
        fprintf(stderr, "awave: error: --direct expects mute or none, got '%s'\n", optarg);
        return -1;
      }
      break;
    case 'M':
      if (aw_parse_num(name, optarg, 0, &v))
        return -1;
      if (v <= 0) {
        fprintf(stderr, "awave: error: %s must be positive, got '%s'\n", name, optarg);
        return -1;
      }
      o->mem = v;
      break;
    default:
      aw_usage(stderr);
      return -1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "awave: error: unexpected argument '%s'\n", argv[optind]);
    return -1;
  }
  return 0;
}

static int aw_build_model(const struct aw_opts *o, struct aw_model *m) {
  if (!strcmp(o->model, "layered"))
    return aw_model_layered(o->nx, o->nz, o->dx, m);
  if (!strcmp(o->model, "marmousi"))
    return aw_model_marmousi(o->nx, o->nz, o->dx, m);
  if (!strcmp(o->model, "constant"))
    return aw_model_constant(o->nx, o->nz, o->dx, o->vconst, m);
  if (!strcmp(o->model, "file"))
    return aw_model_load_raw(o->vel, o->nx, o->nz, o->dx, m);
  if (!strcmp(o->model, "segy"))
    return aw_model_load_segy(o->segy, o->dx, m);
  fprintf(stderr, "awave: error: unknown --model '%s' (layered, marmousi or constant)\n", o->model);
  return -1;
}

/* Bytes of the source wavefield kept with a snapshot every k steps and m
 * snapshots per segment: one checkpoint (both time levels of the padded
 * grid) for each segment but the first, which starts from rest, plus the
 * m interior snapshots of one segment.  Stored snapshots are m = all. */
static double aw_store_bytes(const struct aw_conf *c, int64_t k, int64_t m) {
  int64_t ns = (c->nt + k - 1) / k, nseg = (ns + m - 1) / m;
  double npad = (double)(c->nx + 2 * c->nb) * (double)(c->nz + 2 * c->nb);
  return ((double)(nseg - 1) * 2.0 * npad + (double)m * (double)c->nx * (double)c->nz) *
         sizeof(float);
}

/* Forward steps run a second time: the backward pass recomputes every
 * segment but the last (kept by the first pass) from its checkpoint up to
 * its last snapshot. */
static int64_t aw_store_extra(const struct aw_conf *c, int64_t k, int64_t m) {
  int64_t ns = (c->nt + k - 1) / k, nseg = (ns + m - 1) / m;
  return (nseg - 1) * ((m - 1) * k + 1);
}

/* Snapshots per segment when checkpointing at interval k: --checkpoint=M
 * as given; plain --checkpoint the least memory (at least two segments);
 * automatic checkpointing the fewest extra steps within the budget, ties to
 * the lesser memory.  0 when nothing fits. */
static int64_t aw_store_seg(const struct aw_opts *o, const struct aw_conf *c, int64_t k,
                            double budget) {
  int64_t ns = (c->nt + k - 1) / k, best = 0;
  if (o->ckpt > 0) {
    int64_t m = o->ckpt < ns ? o->ckpt : ns;
    return aw_store_bytes(c, k, m) <= budget ? m : 0;
  }
  for (int64_t m = 1; m <= (o->ckpt < 0 && ns > 1 ? ns - 1 : ns); m++) {
    double b = aw_store_bytes(c, k, m), bb = best ? aw_store_bytes(c, k, best) : 0.0;
    int64_t e = aw_store_extra(c, k, m), eb = best ? aw_store_extra(c, k, best) : 0;
    if (o->ckpt == 0 && b > budget)
      continue;
    if (!best || (o->ckpt < 0 ? (b < bb || (b == bb && e < eb)) : (e < eb || (e == eb && b < bb))))
      best = m;
  }
  return best && aw_store_bytes(c, k, best) <= budget ? best : 0;
}

/* How the source wavefield is kept, under the --mem budget.  The interval
 * k starts at k0, 4 samples per period of fmax = 2.5 f0, and grows until the
 * stored snapshots fit, but never beyond the Nyquist interval
 * kmax = floor(1 / (2 fmax dt)) that the imaging condition needs (an
 * explicit --snap is the only k tried).  If the snapshots do not fit at
 * that k (or --checkpoint), checkpointing at the same k: its extra cost,
 * about one forward pass, barely depends on k or the segment length, and
 * keeping k keeps the snapshots' image bit for bit.  If nothing fits, the
 * run is refused with the least memory that would do. */
static int aw_store_plan(const struct aw_opts *o, struct aw_conf *c) {
  double bytes1 = (double)c->nx * (double)c->nz * sizeof(float);
  double budget = o->mem * 1048576.0;
  int64_t k0 = (int64_t)floorf(1.0f / (4.0f * 2.5f * c->f0 * c->dt));
  int64_t kmax = (int64_t)floorf(1.0f / (2.0f * 2.5f * c->f0 * c->dt));
  k0 = k0 < 1 ? 1 : k0;
  kmax = kmax < k0 ? k0 : kmax;
  if (o->snap > 0)
    k0 = kmax = o->snap;
  int64_t k = k0;
  while (k < kmax && (double)((c->nt + k - 1) / k) * bytes1 > budget)
    k++;
  int64_t ns = (c->nt + k - 1) / k;
  c->snap = k;
  if (o->ckpt == 0 && (double)ns * bytes1 <= budget) {
    c->seg = ns;
    c->nseg = 1;
    return 0;
  }
  int64_t m = aw_store_seg(o, c, k, budget);
  if (m) {
    c->seg = m;
    c->nseg = (ns + m - 1) / m;
    return 0;
  }
  int64_t mmin = ns;
  if (o->ckpt > 0) {
    fprintf(stderr,
            "awave: error: --checkpoint=%lld needs %.1f MB per shot, more than the --mem "
            "budget of %g MB\n",
            (long long)o->ckpt, aw_store_bytes(c, k, o->ckpt < ns ? o->ckpt : ns) / 1048576.0,
            o->mem);
    return -1;
  }
  for (int64_t j = 1; j < ns; j++)
    if (aw_store_bytes(c, k, j) < aw_store_bytes(c, k, mmin))
      mmin = j;
  double need = aw_store_bytes(c, k, mmin),
         npad = (double)(c->nx + 2 * c->nb) * (double)(c->nz + 2 * c->nb);
  fprintf(stderr,
          "awave: error: the source wavefield needs at least %.1f MB per shot even with "
          "checkpointing (%lld checkpoints of %.2f MB and %lld snapshots of %.3f MB, every %lld "
          "steps%s; storing all %lld snapshots would need %.1f MB), more than the --mem budget "
          "of %g MB; raise --mem to at least %.1f, or use a smaller grid (--nx, --nz, larger "
          "--dx) or fewer steps (--tmax, i.e. nt = %lld)\n",
          ceil(need / 1048576.0 * 10.0) / 10.0, (long long)((ns + mmin - 1) / mmin - 1),
          2.0 * npad * sizeof(float) / 1048576.0, (long long)mmin, bytes1 / 1048576.0, (long long)k,
          o->snap > 0 ? ", set by --snap" : ", the Nyquist limit of 2.5 f0", (long long)ns,
          (double)ns * bytes1 / 1048576.0, o->mem, ceil(need / 1048576.0 * 10.0) / 10.0,
          (long long)c->nt);
  return -1;
}

/* The default time step, rounded down to a multiple of 10 us, or to two
 * significant digits below 0.1 ms (a fast model or a fine grid), so that
 * it never rounds to zero. */
static float aw_round_dt(float dt) {
  float scale = 1e5f;
  if (dt < 1e-4f)
    scale = powf(10.0f, 1.0f - floorf(log10f(dt)));
  float r = floorf(dt * scale) / scale;
  return r > 0.0f && r <= dt ? r : dt;
}

/* Time step, CFL check, source-wavefield plan. */
static int aw_conf_init(const struct aw_opts *o, const struct aw_model *m, float vmin, float vmax,
                        struct aw_conf *c) {
  memset(c, 0, sizeof *c);
  c->nx = m->nx;
  c->nz = m->nz;
  c->dx = m->dx;
  c->f0 = o->f0;
  c->nb = o->nb;
  c->nshots = o->shots;
  c->sz = c->rz = 2;
  c->mute_top = o->mute_top;
  c->threads = o->threads;
  c->v_surface = m->v[c->rz];
  for (int64_t ix = 1; ix < m->nx; ix++)
    c->v_surface = fmaxf(c->v_surface, m->v[ix * m->nz + c->rz]);
  float limit_dt = (float)AW_CFL_LIMIT * c->dx / vmax;
  if (!(limit_dt > 0.0f) || !isfinite(limit_dt)) {
    fprintf(stderr,
            "awave: error: the stability limit 0.5547 dx/vmax = 0.5547*%g/%g is not a "
            "positive float; use a --dx and velocities of sensible magnitude\n",
            (double)c->dx, (double)vmax);
    return -1;
  }
  c->dt = o->dt > 0 ? o->dt : aw_round_dt(0.8f * limit_dt);
  if (!(c->dt > 0.0f)) {
    fprintf(stderr,
            "awave: error: the time step 0.8 x 0.5547 dx/vmax = %g s is zero in float "
            "(--dx %g, vmax %g m/s); use a larger --dx\n",
            0.8 * (double)limit_dt, (double)c->dx, (double)vmax);
    return -1;
  }
  float courant = vmax * c->dt / c->dx;
  if (courant > (float)AW_CFL_LIMIT) {
    fprintf(stderr,
            "awave: error: unstable parameters: vmax*dt/dx = %g*%g/%g = %.4f exceeds the "
            "CFL limit %.4f of the 8th-order 2D scheme; use --dt <= %.3g (or a larger --dx)\n",
            (double)vmax, (double)c->dt, (double)c->dx, (double)courant, AW_CFL_LIMIT,
            (double)limit_dt);
    return -1;
  }
  float ppw = vmin / (2.5f * c->f0 * c->dx);
  if (ppw < 3.0f)
    fprintf(stderr,
            "awave: warning: %.1f points per shortest wavelength (vmin %g m/s, fmax "
            "2.5*f0 = %g Hz, dx %g m): expect numerical dispersion; reduce --dx or --f0\n",
            (double)ppw, (double)vmin, 2.5 * (double)c->f0, (double)c->dx);
  double ntd = ceil((double)o->tmax / (double)c->dt);
  if (!(ntd <= (double)AW_MAX_STEPS)) {
    fprintf(stderr,
            "awave: error: --tmax %g s at dt %g s means %.3g time steps per shot, more "
            "than the limit of %lld; lower --tmax, or raise --dx (dt follows dx/vmax)%s\n",
            (double)o->tmax, (double)c->dt, ntd, (long long)AW_MAX_STEPS,
            o->dt > 0 ? " or --dt" : "");
    return -1;
  }
  c->nt = (int64_t)ntd;
  /* The Ricker wavelet peaks at 1.2 / f0: a recording that ends before
   * the peak, or a peak frequency the time step cannot sample (2.5 f0
   * above the Nyquist frequency 1 / (2 dt)), images nothing. */
  if (1.2 / (double)c->f0 >= (double)o->tmax) {
    fprintf(stderr,
            "awave: error: --f0 %g Hz puts the source peak at 1.2/f0 = %g s, not before "
            "--tmax %g s; raise --f0 or --tmax\n",
            (double)c->f0, 1.2 / (double)c->f0, (double)o->tmax);
    return -1;
  }
  if (2.5 * (double)c->f0 * (double)c->dt > 0.5) {
    fprintf(stderr,
            "awave: error: --f0 %g Hz: its band (2.5 f0 = %g Hz) is above the Nyquist "
            "frequency 1/(2 dt) = %g Hz of dt %g s; lower --f0\n",
            (double)c->f0, 2.5 * (double)c->f0, 0.5 / (double)c->dt, (double)c->dt);
    return -1;
  }
  if (c->mute_top >= c->nz) {
    fprintf(stderr, "awave: error: --mute-top %lld zeroes the whole image (nz = %lld)\n",
            (long long)c->mute_top, (long long)c->nz);
    return -1;
  }
  if (o->snap > c->nt) {
    fprintf(stderr, "awave: error: --snap %lld is more than the %lld time steps\n",
            (long long)o->snap, (long long)c->nt);
    return -1;
  }
  if (o->shots < 1 || o->shots > m->nx) {
    fprintf(stderr, "awave: error: --shots must be between 1 and nx = %lld\n", (long long)m->nx);
    return -1;
  }
  if (c->nb < 4) {
    fprintf(stderr, "awave: error: --nb must be at least 4 (the stencil's half width)\n");
    return -1;
  }
  c->direct = o->direct;
  /* Under mpiexec every rank's stderr is a pipe to the launcher, so the
   * terminal test only helps a run without mpiexec; --progress forces it. */
  c->progress = o->progress_s >= 0.0 || isatty(2);
  c->progress_s = o->progress_s >= 0.0 ? (float)o->progress_s : 2.0f;
  return aw_store_plan(o, c);
}

static int aw_read_data(const char *path, const struct aw_conf *c, float **d_p) {
  struct stat st;
  int64_t want = c->nshots * c->nt * c->nx * (int64_t)sizeof(float);
  if (stat(path, &st) != 0) {
    fprintf(stderr, "awave: error: cannot open shot-gather file %s: %s\n", path, strerror(errno));
    return -1;
  }
  if ((int64_t)st.st_size != want) {
    fprintf(stderr,
            "awave: error: shot-gather file %s has %lld bytes, expected shots x nt x nx x 4 "
            "= %lld x %lld x %lld x 4 = %lld\n",
            path, (long long)st.st_size, (long long)c->nshots, (long long)c->nt, (long long)c->nx,
            (long long)want);
    return -1;
  }
  float *d = malloc((size_t)want);
  FILE *f = fopen(path, "rb");
  if (!d || !f || fread(d, 1, (size_t)want, f) != (size_t)want) {
    fprintf(stderr, "awave: error: cannot read %s\n", path);
    free(d);
    if (f)
      fclose(f);
    return -1;
  }
  fclose(f);
  *d_p = d;
  return 0;
}

/* Outputs go through ompc_file.h: a temporary renamed over the path, a
 * device or FIFO written in place, a symlink kept (rules there). */
static int aw_write_file(const char *path, const void *buf, size_t n) {
  ompc_file_out_t o;
  if (ompc_file_replace_begin(&o, path) != OMPC_OK ||
      ompc_file_replace_commit(&o, ompc_file_write_all(o.fd, buf, n)) != OMPC_OK) {
    fprintf(stderr, "awave: error: %s\n", o.why);
    return -1;
  }
  return 0;
}

/* Mean |image| over the central half of the columns, per depth. */
static void aw_depth_profile(const float *img, int64_t nx, int64_t nz, double *prof) {
  int64_t x0 = nx / 4, x1 = nx - nx / 4;
  for (int64_t iz = 0; iz < nz; iz++) {
    double s = 0.0;
    for (int64_t ix = x0; ix < x1; ix++)
      s += fabs((double)img[ix * nz + iz]);
    prof[iz] = s / (double)(x1 - x0);
  }
}

/* Each interface's window runs halfway to its neighbours (from the top
 * mute down to the last row); the profile's maximum in the window must lie
 * within two points of the interface. */
static int aw_check_layered(const struct aw_model *m, const struct aw_conf *c, const float *img) {
  int64_t nz = m->nz, k = m->ninterfaces;
  double *prof = malloc((size_t)nz * sizeof(double));
  int bad = 0;
  if (!prof || k == 0) {
    fprintf(stderr, "awave: error: --check needs --model layered\n");
    free(prof);
    return -1;
  }
  aw_depth_profile(img, m->nx, nz, prof);
  for (int64_t j = 0; j < k; j++) {
    int64_t t = m->interface_iz[j];
    int64_t lo = j == 0 ? c->mute_top : (m->interface_iz[j - 1] + t) / 2;
    int64_t hi = j == k - 1 ? nz - 1 : (t + m->interface_iz[j + 1]) / 2;
    int64_t best = lo;
    for (int64_t iz = lo; iz < hi; iz++)
      if (prof[iz] > prof[best])
        best = iz;
    int ok = llabs(best - t) <= 2;
    bad |= !ok;
    printf("interface %lld: true depth %lld (%.0f m), imaged at %lld (window %lld..%lld, "
           "peak %.3e): %s\n",
           (long long)j + 1, (long long)t, (double)((float)t * m->dx), (long long)best,
           (long long)lo, (long long)hi - 1, prof[best], ok ? "ok" : "WRONG");
  }
  printf("layered check: %s\n", bad ? "FAIL" : "PASS");
  free(prof);
  return bad ? -1 : 0;
}

static int aw_float_cmp(const void *x, const void *y) {
  float a = *(const float *)x, b = *(const float *)y;
  return (a > b) - (a < b);
}

static int aw_write_outputs(const struct aw_opts *o, const struct aw_conf *c,
                            const struct aw_model *m, const float *img, const float *times) {
  size_t ni = (size_t)(c->nx * c->nz), len = strlen(o->out) + 16;
  char *path = malloc(len);
  int rc = -1;
  if (!path)
    return -1;
  snprintf(path, len, "%s.bin", o->out);
  if (aw_write_file(path, img, ni * sizeof(float)))
    goto out;
  snprintf(path, len, "%s.json", o->out);
  ompc_file_out_t fo;
  FILE *f = ompc_file_replace_begin(&fo, path) == OMPC_OK ? ompc_file_replace_stream(&fo) : NULL;
  if (!f) {
    fprintf(stderr, "awave: error: %s\n", fo.why);
    goto out;
  }
  fprintf(f,
          "{\"nx\": %lld, \"nz\": %lld, \"dx\": %g, \"dz\": %g, \"shots\": %lld, "
          "\"format\": \"float32, nx traces of nz samples, depth fastest\", "
          "\"model\": \"%s\", \"dt\": %g, \"nt\": %lld, \"f0\": %g, \"snap\": %lld, "
          "\"checkpoint_segments\": %lld, \"direct\": \"%s\", \"shot_seconds\": [",
          (long long)c->nx, (long long)c->nz, (double)c->dx, (double)c->dx, (long long)c->nshots,
          o->model, (double)c->dt, (long long)c->nt, (double)c->f0, (long long)c->snap,
          (long long)(c->nseg > 1 ? c->nseg : 0), c->direct == AW_DIRECT_MUTE ? "mute" : "none");
  for (int64_t s = 0; s < c->nshots; s++)
    fprintf(f, "%s%.3f", s ? ", " : "", (double)times[s]);
  fprintf(f, "]}\n");
  if (ompc_file_replace_commit_stream(&fo, f) != OMPC_OK) {
    fprintf(stderr, "awave: error: %s\n", fo.why);
    goto out;
  }
  if (o->png) {
    /* Image: symmetric clip at the 99th percentile of |image|. */
    float *a = malloc(ni * sizeof(float));
    if (!a)
      goto out;
    size_t cnt = 0;
    for (size_t i = 0; i < ni; i++)
      if (img[i] != 0.0f)
        a[cnt++] = fabsf(img[i]);
    float clip = 1.0f;
    if (cnt > 0) {
      qsort(a, cnt, sizeof(float), aw_float_cmp);
      clip = a[(size_t)(0.99 * (double)(cnt - 1))];
    }
    free(a);
    snprintf(path, len, "%s.png", o->out);
    if (aw_png_write_gray(path, img, c->nx, c->nz, -clip, clip))
      goto out;
    float vmin, vmax;
    aw_model_range(m->v, ni, &vmin, &vmax);
    snprintf(path, len, "%s-vel.png", o->out);
    if (aw_png_write_color(path, m->v, c->nx, c->nz, vmin, vmax))
      goto out;
  }
  rc = 0;
out:
  free(path);
  return rc;
}

static double aw_phys_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? (double)pages * (double)size : 0.0;
}

/* Before any large allocation: the grid alone (model, migration model and
 * their mapped copies) must fit this node's memory. */
static int aw_grid_check(const struct aw_opts *o) {
  double phys = aw_phys_bytes(), need = 4.0 * (double)o->nx * (double)o->nz * sizeof(float);
  if (strcmp(o->model, "segy") && phys > 0.0 && need > phys) {
    fprintf(stderr,
            "awave: error: --nx %lld --nz %lld needs at least %.3g GB for the models, more "
            "than this node's %.3g GB of memory\n",
            (long long)o->nx, (long long)o->nz, need / 1e9, phys / 1e9);
    return -1;
  }
  return 0;
}

/* Memory of the whole run if it were all on this node (one rank): the
 * head's models, images and shot gathers, plus one shot's working set
 * (padded grids, illumination, gather, source wavefield store). */
static int aw_mem_check(const struct aw_opts *o, const struct aw_conf *c) {
  double ni = (double)c->nx * (double)c->nz, nd = (double)c->nt * (double)c->nx;
  double npad = (double)(c->nx + 2 * c->nb) * (double)(c->nz + 2 * c->nb);
  double head = ((3.0 + (double)c->nshots) * ni + (double)c->nshots * nd) * sizeof(float);
  double shot = (4.0 * npad + ni + nd) * sizeof(float) + aw_store_bytes(c, c->snap, c->seg);
  double phys = aw_phys_bytes();
  if (phys > 0.0 && head + shot > phys) {
    fprintf(stderr,
            "awave: error: the run needs about %.3g GB (%.3g GB of models, images and "
            "shot gathers for --shots %lld x nt %lld x nx %lld, plus %.3g GB per running shot, "
            "--nb %lld), more than this node's %.3g GB of memory; lower --shots, --tmax, --nx, "
            "--nz or --nb\n",
            (head + shot) / 1e9, head / 1e9, (long long)o->shots, (long long)c->nt,
            (long long)c->nx, shot / 1e9, (long long)c->nb, phys / 1e9);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct aw_opts o;
  struct aw_model m = {0};
  struct aw_conf c;
  float *vmig = NULL, *dall = NULL, *final = NULL, **imgs = NULL, **dobs = NULL;
  int rc = 1;
  if (aw_opts_parse(argc, argv, &o))
    return 2;
  if (aw_grid_check(&o) || aw_build_model(&o, &m))
    return 1;
  if (o.smooth > (m.nx > m.nz ? m.nx : m.nz)) {
    fprintf(stderr, "awave: error: --smooth %lld is wider than the grid (%lld x %lld)\n",
            (long long)o.smooth, (long long)m.nx, (long long)m.nz);
    goto err_model;
  }
  if (aw_model_smooth(&m, o.smooth, &vmig)) {
    fprintf(stderr, "awave: error: out of memory\n");
    goto err_model;
  }
  size_t ni = (size_t)(m.nx * m.nz);
  float vmin, vmax, vmin2, vmax2;
  aw_model_range(m.v, ni, &vmin, &vmax);
  aw_model_range(vmig, ni, &vmin2, &vmax2);
  if (aw_conf_init(&o, &m, fminf(vmin, vmin2), fmaxf(vmax, vmax2), &c) || aw_mem_check(&o, &c))
    goto err_vmig;
  size_t nd = (size_t)(c.nt * c.nx);
  if (o.data) {
    c.have_data = 1;
    if (aw_read_data(o.data, &c, &dall))
      goto err_vmig;
  } else {
    dall = calloc((size_t)c.nshots * nd, sizeof(float));
  }
  final = calloc(ni, sizeof(float));
  imgs = calloc((size_t)c.nshots, sizeof(float *));
  dobs = calloc((size_t)c.nshots, sizeof(float *));
  if (!dall || !final || !imgs || !dobs)
    goto err_alloc;
  for (int64_t s = 0; s < c.nshots; s++) {
    imgs[s] = calloc(ni + AW_SHOT_TRAILER, sizeof(float));
    dobs[s] = dall + (size_t)s * nd;
    if (!imgs[s])
      goto err_alloc;
  }
  int64_t nsnap = (c.nt + c.snap - 1) / c.snap;
  fprintf(stderr,
          "awave: model %s %lld x %lld, dx %g m, v %g..%g m/s; %lld shots, f0 %g Hz, "
          "dt %g s x %lld steps (v dt/dx %.3f, limit %.3f), sponge %lld, direct wave %s\n",
          o.model, (long long)c.nx, (long long)c.nz, (double)c.dx, (double)vmin, (double)vmax,
          (long long)c.nshots, (double)c.f0, (double)c.dt, (long long)c.nt,
          (double)(vmax2 > vmax ? vmax2 : vmax) * c.dt / c.dx, AW_CFL_LIMIT, (long long)c.nb,
          c.direct == AW_DIRECT_MUTE ? "muted" : "kept");
  if (c.nseg == 1) {
    fprintf(stderr,
            "awave: source wavefield: stored snapshots, snapshot every %lld steps (%lld, "
            "%.1f MB per shot, budget --mem %g MB), no extra forward steps\n",
            (long long)c.snap, (long long)nsnap, aw_store_bytes(&c, c.snap, c.seg) / 1048576.0,
            o.mem);
  } else {
    int64_t extra = aw_store_extra(&c, c.snap, c.seg);
    fprintf(stderr,
            "awave: source wavefield: checkpointing, snapshot every %lld steps (%lld) in "
            "%lld segments of %lld; %lld checkpoint%s + %lld snapshots = %.1f MB per shot (budget "
            "--mem %g MB, all snapshots %.1f MB), %lld extra forward steps per shot (+%.0f%% of "
            "the %lld source steps)\n",
            (long long)c.snap, (long long)nsnap, (long long)c.nseg, (long long)c.seg,
            (long long)c.nseg - 1, c.nseg > 2 ? "s" : "", (long long)c.seg,
            aw_store_bytes(&c, c.snap, c.seg) / 1048576.0, o.mem,
            aw_store_bytes(&c, c.snap, nsnap) / 1048576.0, (long long)extra,
            100.0 * (double)extra / (double)c.nt, (long long)c.nt);
  }
  if (o.data)
    fprintf(stderr, "awave: observed data read from %s\n", o.data);

  double t0 = omp_get_wtime();
  float *vt = m.v, *fin = final;
#pragma omp target enter data map(to : vt[0 : ni], vmig[0 : ni]) map(to : fin[0 : ni])
  for (int64_t s = 0; s < c.nshots; s++) {
    float *img = imgs[s], *d = dobs[s];
#pragma omp target enter data map(alloc : img[0 : ni + AW_SHOT_TRAILER]) map(to : d[0 : nd])
  }
#pragma omp parallel
#pragma omp single
  {
    for (int64_t s = 0; s < c.nshots; s++) {
      float *img = imgs[s], *d = dobs[s];
#pragma omp target nowait firstprivate(c, s) map(to : vt[0 : ni], vmig[0 : ni])                    \
    map(alloc : img[0 : ni + AW_SHOT_TRAILER], d[0 : nd]) depend(in : vt[0], vmig[0])              \
    depend(out : img[0]) depend(inout : d[0])
      aw_shot_migrate(&c, s, vt, vmig, d, img);
    }
    /* Stack in shot order: a chain on the final image, so the sum is the
     * same on any number of workers. */
    for (int64_t s = 0; s < c.nshots; s++) {
      float *img = imgs[s];
#pragma omp target nowait map(alloc : img[0 : ni], fin[0 : ni]) depend(in : img[0])                \
    depend(inout : fin[0])
      aw_image_add((int64_t)ni, img, fin);
    }
#pragma omp target nowait firstprivate(c) map(alloc : fin[0 : ni]) depend(inout : fin[0])
    aw_image_laplacian(&c, fin);
#pragma omp taskwait
  }
#pragma omp target exit data map(from : fin[0 : ni]) map(release : vt[0 : ni], vmig[0 : ni])
  for (int64_t s = 0; s < c.nshots; s++) {
    float *img = imgs[s], *d = dobs[s];
    if (o.write_data) {
#pragma omp target exit data map(from : img[ni : AW_SHOT_TRAILER], d[0 : nd])
#pragma omp target exit data map(release : img[0 : ni + AW_SHOT_TRAILER])
    } else {
#pragma omp target exit data map(from : img[ni : AW_SHOT_TRAILER])
#pragma omp target exit data map(release : img[0 : ni + AW_SHOT_TRAILER], d[0 : nd])
    }
  }
  double wall = omp_get_wtime() - t0;

  float *times = malloc((size_t)c.nshots * sizeof(float));
  if (!times)
    goto err_alloc;
  int failed = 0;
  double sum = 0.0;
  for (int64_t s = 0; s < c.nshots; s++) {
    times[s] = imgs[s][ni];
    failed |= times[s] < 0.0f;
    sum += times[s];
  }
  double e = 0.0;
  for (size_t i = 0; i < ni; i++)
    e += (double) final[i] * final[i];
  printf("shots %lld, wall %.3f s, mean %.3f s per shot, image rms %.6e\n", (long long)c.nshots,
         wall, sum / (double)c.nshots, sqrt(e / (double)ni));
  if (failed) {
    fprintf(stderr, "awave: error: at least one shot failed (see above)\n");
    goto err_times;
  }
  if (o.write_data && aw_write_file(o.write_data, dall, (size_t)c.nshots * nd * sizeof(float)))
    goto err_times;
  if (aw_write_outputs(&o, &c, &m, final, times))
    goto err_times;
  fprintf(stderr, "awave: wrote %s.bin, %s.json%s\n", o.out, o.out,
          o.png ? ", .png, -vel.png" : "");
  rc = 0;
  if (o.check && aw_check_layered(&m, &c, final))
    rc = 1;
err_times:
  free(times);
err_alloc:
  if (rc && !final)
    fprintf(stderr, "awave: error: out of memory\n");
  for (int64_t s = 0; imgs && s < c.nshots; s++)
    free(imgs[s]);
  free(imgs);
  free(dobs);
  free(final);
  free(dall);
err_vmig:
  free(vmig);
err_model:
  aw_model_free(&m);
  return rc;
}
