/*
 * aw_png.c - awave's pictures, written with libpng (8-bit grayscale or RGB,
 * zlib-compressed with libpng's default filters).  The picture is the
 * nx x nz array with x across and depth down.
 */
#include "awave.h"
#include "ompc_file.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libpng's errors (a failed write among them) come here, then leave
 * through png_longjmp to aw_png_write's setjmp. */
struct aw_png_err {
  char msg[160];
};

static void aw_png_error(png_structp png, png_const_charp msg) {
  struct aw_png_err *e = png_get_error_ptr(png);
  snprintf(e->msg, sizeof(e->msg), "%s", msg);
  png_longjmp(png, 1);
}

static void aw_png_warning(png_structp png, png_const_charp msg) {
  (void)png;
  fprintf(stderr, "awave: warning: libpng: %s\n", msg);
}

/* rows: height rows of width * channels bytes. */
static int aw_png_write(const char *path, const unsigned char *rows, uint32_t width,
                        uint32_t height, int channels) {
  struct aw_png_err err = {"out of memory"};
  ompc_file_out_t o;
  FILE *f = ompc_file_replace_begin(&o, path) == OMPC_OK ? ompc_file_replace_stream(&o) : NULL;
  if (!f) {
    fprintf(stderr, "awave: error: %s\n", o.why);
    return -1;
  }
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, aw_png_error, aw_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    fclose(f);
    o.fd = -1; /* closed with the stream */
    ompc_file_replace_abort(&o);
    fprintf(stderr, "awave: error: cannot write %s: %s\n", path, err.msg);
    return -1;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, width, height, 8,
               channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  size_t stride = (size_t)width * (size_t)channels;
  for (uint32_t y = 0; y < height; y++)
    png_write_row(png, rows + (size_t)y * stride);
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  if (ompc_file_replace_commit_stream(&o, f) != OMPC_OK) {
    fprintf(stderr, "awave: error: %s\n", o.why);
    return -1;
  }
  return 0;
}

static float aw_png_scale(float v, float lo, float hi) {
  float t = hi > lo ? (v - lo) / (hi - lo) : 0.5f;
  return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
}

int aw_png_write_gray(const char *path, const float *a, int64_t nx, int64_t nz, float lo,
                      float hi) {
  size_t stride = (size_t)nx;
  unsigned char *rows = malloc(stride * (size_t)nz);
  if (!rows)
    return -1;
  for (int64_t iz = 0; iz < nz; iz++) {
    unsigned char *r = rows + (size_t)iz * stride;
    for (int64_t ix = 0; ix < nx; ix++)
      r[ix] = (unsigned char)(255.0f * aw_png_scale(a[ix * nz + iz], lo, hi) + 0.5f);
  }
  int rc = aw_png_write(path, rows, (uint32_t)nx, (uint32_t)nz, 1);
  free(rows);
  return rc;
}

/* Blue - cyan - yellow - red ramp for velocities. */
int aw_png_write_color(const char *path, const float *a, int64_t nx, int64_t nz, float lo,
                       float hi) {
  static const float ramp[5][3] = {{0.05f, 0.05f, 0.5f},
                                   {0.1f, 0.5f, 1.0f},
                                   {0.3f, 0.9f, 0.6f},
                                   {1.0f, 0.9f, 0.2f},
                                   {0.8f, 0.1f, 0.1f}};
  size_t stride = 3 * (size_t)nx;
  unsigned char *rows = malloc(stride * (size_t)nz);
  if (!rows)
    return -1;
  for (int64_t iz = 0; iz < nz; iz++) {
    unsigned char *r = rows + (size_t)iz * stride;
    for (int64_t ix = 0; ix < nx; ix++) {
      float t = 4.0f * aw_png_scale(a[ix * nz + iz], lo, hi);
      int k = t >= 4.0f ? 3 : (int)t;
      float w = t - (float)k;
      for (int ch = 0; ch < 3; ch++) {
        float c = (1.0f - w) * ramp[k][ch] + w * ramp[k + 1][ch];
        r[3 * ix + ch] = (unsigned char)(255.0f * c + 0.5f);
      }
    }
  }
  int rc = aw_png_write(path, rows, (uint32_t)nx, (uint32_t)nz, 3);
  free(rows);
  return rc;
}
