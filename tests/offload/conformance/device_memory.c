/*
 * device_memory.c - device memory routines of the OpenMP API.
 *
 * Checks omp_target_alloc/omp_target_free; omp_target_memcpy host->device,
 * device->device (same device, and across two devices when more than one
 * exists) and device->host, with non-zero offsets; omp_target_memcpy_rect
 * copying a 2-D sub-block host->device and back into another position;
 * omp_target_is_present before, during and after mapping (also for an
 * address inside a mapped block); omp_target_associate_ptr (device offset
 * 0 and non-zero) and omp_target_disassociate_ptr; omp_get_initial_device
 * as a valid device number for the copy routines (equal to
 * omp_get_num_devices() as OpenMP 5.1 specifies); omp_is_initial_device()
 * is 1 on the host and its value inside a target region is printed (to
 * stderr) but not checked, since it differs between runtimes.
 *
 * Why: these routines bypass the mapping machinery and talk to the device
 * memory directly; an offload runtime must implement each one against the
 * remote memory. Every transfer is checked by reading the data back
 * through a different path (memcpy vs. target region).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offload_check.h"

#define N 1024
#define HR 16
#define HC 20
#define DR 8
#define DC 10
#define BR 5
#define BC 7

static int dev, host, ndev;
static int h1[N], h2[N];

static int *dalloc(size_t n, int d) {
  int *p = omp_target_alloc(n * sizeof(int), d);
  if (!p) {
    fprintf(stderr, "FAIL %s:%d: omp_target_alloc(%zu) on device %d\n",
            __FILE__, __LINE__, n * sizeof(int), d);
    exit(1);
  }
  return p;
}

static void test_device_numbers(void) {
  CHECK("omp_get_num_devices() >= 1", ndev >= 1, 1);
  CHECK("omp_get_initial_device() == omp_get_num_devices()", host, ndev);
  CHECK("default device is a valid device number", dev >= 0 && dev < ndev,
        1);
  CHECK("omp_is_initial_device() on the host", omp_is_initial_device(), 1);
  int on_dev = -1;
#pragma omp target map(from : on_dev)
  { on_dev = omp_is_initial_device(); }
  fprintf(stderr,
          "INFO device_memory: omp_is_initial_device() in a target region "
          "= %d\n",
          on_dev);
  CHECK("omp_is_initial_device() on the host after a target region",
        omp_is_initial_device(), 1);
}

static void test_alloc_memcpy(void) {
  int *d1 = dalloc(N, dev);
  int *d2 = dalloc(N, dev);
  for (int i = 0; i < N; i++)
    h1[i] = 3 * i + 1;

  /* host -> device, then check from a target region */
  CHECK("memcpy host->device",
        omp_target_memcpy(d1, h1, N * sizeof(int), 0, 0, dev, host), 0);
  long long sum = 0;
#pragma omp target is_device_ptr(d1) map(tofrom : sum)
  {
    long long s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < N; i++)
      s += d1[i];
    sum = s;
  }
  CHECK("data copied host->device seen by a target region", sum,
        3LL * N * (N - 1) / 2 + N);

  /* device -> device on the same device, with offsets */
#pragma omp target is_device_ptr(d2)
  {
    for (int i = 0; i < N; i++)
      d2[i] = -1;
  }
  CHECK("memcpy device->device with offsets",
        omp_target_memcpy(d2, d1, 100 * sizeof(int), 50 * sizeof(int),
                          200 * sizeof(int), dev, dev),
        0);
  memset(h2, 0, sizeof(h2));
  CHECK("memcpy device->host",
        omp_target_memcpy(h2, d2, N * sizeof(int), 0, 0, host, dev), 0);
  for (int i = 0; i < N; i++)
    CHECK_AT("device->device copy with offsets", i, h2[i],
             (i >= 50 && i < 150) ? 3 * (i - 50 + 200) + 1 : -1);

  /* device -> host with a source and a destination offset */
  for (int i = 0; i < N; i++)
    h2[i] = 0;
  CHECK("memcpy device->host with offsets",
        omp_target_memcpy(h2, d1, 10 * sizeof(int), 5 * sizeof(int),
                          20 * sizeof(int), host, dev),
        0);
  for (int i = 0; i < N; i++)
    CHECK_AT("device->host copy with offsets", i, h2[i],
             (i >= 5 && i < 15) ? 3 * (i - 5 + 20) + 1 : 0);

  /* across two devices when there are two */
  if (ndev >= 2) {
    int other = (dev + 1) % ndev;
    int *d3 = dalloc(N, other);
    CHECK("memcpy device->other device",
          omp_target_memcpy(d3, d1, N * sizeof(int), 0, 0, other, dev), 0);
#pragma omp target device(other) is_device_ptr(d3)
    {
#pragma omp parallel for
      for (int i = 0; i < N; i++)
        d3[i] *= 2;
    }
    CHECK("memcpy other device->device",
          omp_target_memcpy(d2, d3, N * sizeof(int), 0, 0, dev, other), 0);
    CHECK("memcpy device->host",
          omp_target_memcpy(h2, d2, N * sizeof(int), 0, 0, host, dev), 0);
    for (int i = 0; i < N; i++)
      CHECK_AT("round trip through a second device", i, h2[i],
               2 * (3 * i + 1));
    omp_target_free(d3, other);
  }
  omp_target_free(d1, dev);
  omp_target_free(d2, dev);
  /* freeing NULL is allowed and does nothing */
  omp_target_free(NULL, dev);
}

static void test_memcpy_rect(void) {
  static int hsrc[HR][HC], hdst[HR][HC], dview[DR][DC];
  for (int r = 0; r < HR; r++)
    for (int c = 0; c < HC; c++) {
      hsrc[r][c] = r * 100 + c;
      hdst[r][c] = -1;
    }
  int *d = dalloc(DR * DC, dev);
  for (int r = 0; r < DR; r++)
    for (int c = 0; c < DC; c++)
      dview[r][c] = 0;
  omp_target_memcpy(d, dview, sizeof(dview), 0, 0, dev, host);

  /* copy the BR x BC block at (3,4) of hsrc to (1,2) of the device matrix */
  size_t vol[2] = {BR, BC};
  size_t d_off[2] = {1, 2}, s_off[2] = {3, 4};
  size_t d_dims[2] = {DR, DC}, s_dims[2] = {HR, HC};
  CHECK("memcpy_rect host->device",
        omp_target_memcpy_rect(d, hsrc, sizeof(int), 2, vol, d_off, s_off,
                               d_dims, s_dims, dev, host),
        0);
  CHECK("memcpy device->host of the whole device matrix",
        omp_target_memcpy(dview, d, sizeof(dview), 0, 0, host, dev), 0);
  for (int r = 0; r < DR; r++)
    for (int c = 0; c < DC; c++) {
      int in = r >= 1 && r < 1 + BR && c >= 2 && c < 2 + BC;
      int exp = in ? (r - 1 + 3) * 100 + (c - 2 + 4) : 0;
      CHECK_AT("memcpy_rect host->device block", r * DC + c, dview[r][c],
               exp);
    }

  /* the device sees the same layout */
  long long dsum = 0;
#pragma omp target is_device_ptr(d) map(tofrom : dsum)
  {
    long long s = 0;
    for (int r = 0; r < DR; r++)
      for (int c = 0; c < DC; c++)
        s += (long long)d[r * DC + c] * (r * DC + c + 1);
    dsum = s;
  }
  long long hsum = 0;
  for (int r = 0; r < DR; r++)
    for (int c = 0; c < DC; c++)
      hsum += (long long)dview[r][c] * (r * DC + c + 1);
  CHECK("device view of the copied block", dsum, hsum);

  /* copy the block back into position (6,9) of another host matrix */
  size_t back_d_off[2] = {6, 9};
  size_t back_s_off[2] = {1, 2};
  CHECK("memcpy_rect device->host",
        omp_target_memcpy_rect(hdst, d, sizeof(int), 2, vol, back_d_off,
                               back_s_off, s_dims, d_dims, host, dev),
        0);
  for (int r = 0; r < HR; r++)
    for (int c = 0; c < HC; c++) {
      int in = r >= 6 && r < 6 + BR && c >= 9 && c < 9 + BC;
      int exp = in ? (r - 6 + 3) * 100 + (c - 9 + 4) : -1;
      CHECK_AT("memcpy_rect device->host block", r * HC + c, hdst[r][c], exp);
    }
  omp_target_free(d, dev);
}

static void test_is_present(void) {
  for (int i = 0; i < N; i++)
    h1[i] = i;
  CHECK("is_present before mapping", omp_target_is_present(h1, dev), 0);
#pragma omp target enter data map(to : h1)
  CHECK("is_present after enter data", omp_target_is_present(h1, dev) != 0,
        1);
  CHECK("is_present for an address inside the mapped block",
        omp_target_is_present(&h1[N / 2], dev) != 0, 1);
  CHECK("host data is present on the host device",
        omp_target_is_present(h1, host) != 0, 1);
#pragma omp target exit data map(delete : h1)
  CHECK("is_present after exit data", omp_target_is_present(h1, dev), 0);
#pragma omp target data map(to : h2[0 : 16])
  {
    CHECK("is_present inside target data",
          omp_target_is_present(h2, dev) != 0, 1);
    CHECK("is_present just past the mapped section",
          omp_target_is_present(&h2[16], dev), 0);
  }
  CHECK("is_present after target data", omp_target_is_present(h2, dev), 0);
}

static void test_associate(void) {
  int *d = dalloc(N, dev);
  for (int i = 0; i < N; i++)
    h2[i] = 50 + i;
  omp_target_memcpy(d, h2, N * sizeof(int), 0, 0, dev, host);
  for (int i = 0; i < N; i++)
    h1[i] = i;

  CHECK("associate_ptr returns 0",
        omp_target_associate_ptr(h1, d, N * sizeof(int), 0, dev), 0);
  CHECK("is_present after associate", omp_target_is_present(h1, dev) != 0, 1);

  /* the mapping uses d; an associated mapping has an infinite reference
   * count, so neither direction is transferred by map clauses */
#pragma omp target map(tofrom : h1) map(from : h2)
  {
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
      h2[i] = h1[i];
      h1[i] = 2 * h1[i];
    }
  }
  for (int i = 0; i < N; i++) {
    CHECK_AT("target region sees the associated device memory", i, h2[i],
             50 + i);
    CHECK_AT("associated data not copied back by map", i, h1[i], i);
  }
#pragma omp target update from(h1)
  for (int i = 0; i < N; i++)
    CHECK_AT("target update from an associated pointer", i, h1[i],
             2 * (50 + i));
  for (int i = 0; i < N; i++)
    h1[i] = 7;
#pragma omp target update to(h1)
  CHECK("memcpy device->host",
        omp_target_memcpy(h2, d, N * sizeof(int), 0, 0, host, dev), 0);
  for (int i = 0; i < N; i++)
    CHECK_AT("target update to writes the associated memory", i, h2[i], 7);

  CHECK("disassociate_ptr returns 0", omp_target_disassociate_ptr(h1, dev),
        0);
  CHECK("not present after disassociate", omp_target_is_present(h1, dev), 0);

  /* association with a device offset: host block -> d + 100 ints */
  static int small[64];
  for (int i = 0; i < 64; i++)
    small[i] = i;
  CHECK("associate_ptr with offset returns 0",
        omp_target_associate_ptr(small, d, sizeof(small), 100 * sizeof(int),
                                 dev),
        0);
#pragma omp target map(tofrom : small)
  {
    for (int i = 0; i < 64; i++)
      small[i] = -i - 1;
  }
  CHECK("memcpy device->host",
        omp_target_memcpy(h2, d, N * sizeof(int), 0, 0, host, dev), 0);
  for (int i = 0; i < N; i++)
    CHECK_AT("associate_ptr device offset honoured", i, h2[i],
             (i >= 100 && i < 164) ? -(i - 100) - 1 : 7);
  for (int i = 0; i < 64; i++)
    CHECK_AT("associated (offset) data not copied back by map", i, small[i],
             i);
  CHECK("disassociate_ptr (offset) returns 0",
        omp_target_disassociate_ptr(small, dev), 0);
  CHECK("not present after disassociate (offset)",
        omp_target_is_present(small, dev), 0);

  /* after disassociation a normal map allocates and copies again */
  for (int i = 0; i < 64; i++)
    small[i] = 1000 + i;
#pragma omp target map(tofrom : small)
  {
    for (int i = 0; i < 64; i++)
      small[i] += 1;
  }
  for (int i = 0; i < 64; i++)
    CHECK_AT("normal mapping after disassociate", i, small[i], 1001 + i);
  omp_target_free(d, dev);
}

int main(void) {
  ndev = omp_get_num_devices();
  dev = omp_get_default_device();
  host = omp_get_initial_device();
  test_device_numbers();
  test_alloc_memcpy();
  test_memcpy_rect();
  test_is_present();
  test_associate();
  return finish("device_memory");
}
