/*
 * aw_png.c - a minimal PNG writer: 8-bit grayscale or RGB, no filtering,
 * the zlib stream made of stored (uncompressed) deflate blocks, with the
 * CRC-32 of each chunk and the Adler-32 of the image data.  The picture is
 * the nx x nz array with x across and depth down.
 */
#include "awave.h"
#include "ompc_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct aw_png {
  FILE *f;
  uint32_t crc_table[256];
  uint32_t crc;
  int failed;
};

static void aw_png_crc_init(struct aw_png *p) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    p->crc_table[n] = c;
  }
}

static void aw_png_raw(struct aw_png *p, const void *buf, size_t n) {
  if (fwrite(buf, 1, n, p->f) != n)
    p->failed = 1;
}

/* Bytes that belong to the current chunk (type and data): CRC'd. */
static void aw_png_put(struct aw_png *p, const void *buf, size_t n) {
  const unsigned char *b = buf;
  for (size_t i = 0; i < n; i++)
    p->crc = p->crc_table[(p->crc ^ b[i]) & 0xff] ^ (p->crc >> 8);
  aw_png_raw(p, buf, n);
}

static void aw_png_be32(unsigned char *b, uint32_t v) {
  b[0] = (unsigned char)(v >> 24);
  b[1] = (unsigned char)(v >> 16);
  b[2] = (unsigned char)(v >> 8);
  b[3] = (unsigned char)v;
}

static void aw_png_chunk_begin(struct aw_png *p, const char *type, uint32_t len) {
  unsigned char b[4];
  aw_png_be32(b, len);
  aw_png_raw(p, b, 4);
  p->crc = 0xffffffffu;
  aw_png_put(p, type, 4);
}

static void aw_png_chunk_end(struct aw_png *p) {
  unsigned char b[4];
  aw_png_be32(b, p->crc ^ 0xffffffffu);
  aw_png_raw(p, b, 4);
}

/* rows: height rows of 1 + width * channels bytes (filter byte 0 first). */
static int aw_png_write(const char *path, const unsigned char *rows, uint32_t width,
                        uint32_t height, int channels) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  struct aw_png p = {0};
  size_t n = (size_t)height * (1 + (size_t)width * (size_t)channels);
  size_t nblocks = n / 65535 + 1;
  unsigned char b[13];
  ompc_file_out_t o;
  p.f = ompc_file_replace_begin(&o, path) == OMPC_OK ? ompc_file_replace_stream(&o) : NULL;
  if (!p.f) {
    fprintf(stderr, "awave: error: %s\n", o.why);
    return -1;
  }
  aw_png_crc_init(&p);
  aw_png_raw(&p, sig, 8);
  aw_png_be32(b, width);
  aw_png_be32(b + 4, height);
  b[8] = 8;                               /* bit depth */
  b[9] = channels == 3 ? 2 : 0;           /* colour type: RGB or gray */
  b[10] = b[11] = b[12] = 0;              /* deflate, filter 0, no interlace */
  aw_png_chunk_begin(&p, "IHDR", 13);
  aw_png_put(&p, b, 13);
  aw_png_chunk_end(&p);
  /* zlib: header, stored blocks (5-byte header each), Adler-32. */
  aw_png_chunk_begin(&p, "IDAT", (uint32_t)(2 + n + 5 * nblocks + 4));
  b[0] = 0x78;
  b[1] = 0x01;
  aw_png_put(&p, b, 2);
  uint32_t s1 = 1, s2 = 0;
  size_t off = 0;
  for (size_t k = 0; k < nblocks; k++) {
    size_t len = n - off < 65535 ? n - off : 65535;
    b[0] = k == nblocks - 1 ? 1 : 0;      /* BFINAL, BTYPE 00 */
    b[1] = (unsigned char)len;
    b[2] = (unsigned char)(len >> 8);
    b[3] = (unsigned char)~len;
    b[4] = (unsigned char)(~len >> 8);
    aw_png_put(&p, b, 5);
    aw_png_put(&p, rows + off, len);
    for (size_t i = 0; i < len; i++) {
      s1 = (s1 + rows[off + i]) % 65521;
      s2 = (s2 + s1) % 65521;
    }
    off += len;
  }
  aw_png_be32(b, s2 << 16 | s1);
  aw_png_put(&p, b, 4);
  aw_png_chunk_end(&p);
  aw_png_chunk_begin(&p, "IEND", 0);
  aw_png_chunk_end(&p);
  if (p.failed) {
    fclose(p.f);
    o.fd = -1; /* closed with the stream */
    ompc_file_replace_abort(&o);
    fprintf(stderr, "awave: error: cannot write %s\n", path);
    return -1;
  }
  if (ompc_file_replace_commit_stream(&o, p.f) != OMPC_OK) {
    fprintf(stderr, "awave: error: %s\n", o.why);
    return -1;
  }
  return 0;
}

static float aw_png_scale(float v, float lo, float hi) {
  float t = hi > lo ? (v - lo) / (hi - lo) : 0.5f;
  return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
}

int aw_png_write_gray(const char *path, const float *a, int64_t nx, int64_t nz,
                      float lo, float hi) {
  size_t stride = 1 + (size_t)nx;
  unsigned char *rows = malloc(stride * (size_t)nz);
  if (!rows)
    return -1;
  for (int64_t iz = 0; iz < nz; iz++) {
    unsigned char *r = rows + (size_t)iz * stride;
    r[0] = 0;
    for (int64_t ix = 0; ix < nx; ix++)
      r[1 + ix] = (unsigned char)(255.0f * aw_png_scale(a[ix * nz + iz], lo, hi) + 0.5f);
  }
  int rc = aw_png_write(path, rows, (uint32_t)nx, (uint32_t)nz, 1);
  free(rows);
  return rc;
}

/* Blue - cyan - yellow - red ramp for velocities. */
int aw_png_write_color(const char *path, const float *a, int64_t nx, int64_t nz,
                       float lo, float hi) {
  static const float ramp[5][3] = {{0.05f, 0.05f, 0.5f}, {0.1f, 0.5f, 1.0f},
                                   {0.3f, 0.9f, 0.6f}, {1.0f, 0.9f, 0.2f}, {0.8f, 0.1f, 0.1f}};
  size_t stride = 1 + 3 * (size_t)nx;
  unsigned char *rows = malloc(stride * (size_t)nz);
  if (!rows)
    return -1;
  for (int64_t iz = 0; iz < nz; iz++) {
    unsigned char *r = rows + (size_t)iz * stride;
    r[0] = 0;
    for (int64_t ix = 0; ix < nx; ix++) {
      float t = 4.0f * aw_png_scale(a[ix * nz + iz], lo, hi);
      int k = t >= 4.0f ? 3 : (int)t;
      float w = t - (float)k;
      for (int ch = 0; ch < 3; ch++) {
        float c = (1.0f - w) * ramp[k][ch] + w * ramp[k + 1][ch];
        r[1 + 3 * ix + ch] = (unsigned char)(255.0f * c + 0.5f);
      }
    }
  }
  int rc = aw_png_write(path, rows, (uint32_t)nx, (uint32_t)nz, 3);
  free(rows);
  return rc;
}
