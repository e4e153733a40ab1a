/* Fuzz targets: awave's velocity-model readers (awave/aw_model.c), built
 * twice: FUZZ_AWAVE_SEGY reads the input as a SEG-Y file
 * (aw_model_load_segy), otherwise as a raw float32 file
 * (aw_model_load_raw) whose grid comes from the input's first bytes:
 *   byte 0: nz (0 means 16); byte 1: odd = nx is byte 1 itself, even = nx
 *   makes the file size right; byte 2: picks --dx (including 0, negative,
 *   NaN and infinity); the rest: the file.
 * The readers only take paths, so the input goes to a file in a private
 * temporary directory.
 *
 * Wrong answers: a model accepted with a grid under 16 x 16, a velocity
 * that is not positive and finite, or one whose smoothed migration model
 * (aw_model_smooth, as awave computes it) is not positive and finite. */
#define _GNU_SOURCE
#include "fuzz.h"

#pragma clang diagnostic ignored "-Wsource-uses-openmp"
#include "awave.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FUZZ_AWAVE_SEGY
const char *const fuzz_dict[] = {
    "\x00\x01",         "\x00\x05",         "\x00\x03",
    "\x00\x10",         "\x7f\xff\xff\xff", "\x80\x00\x00\x00",
    "\x7f\x80\x00\x00", "\x00\x00\x00\x01", NULL};
#else
const char *const fuzz_dict[] = {"\x7f\x80\x00\x00", "\x00\x00\x80\x7f",
                                 "\x01\x00\x00\x00", "\x00\x00\x00\x80", NULL};
#endif

static char dir[4096], file[4200];

static void cleanup(void)
{
    unlink(file);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/ompc-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        fuzz_fail("cannot create a temporary directory under %s", tmp ? tmp : "/tmp");
    snprintf(file, sizeof(file), "%s/model", dir);
    atexit(cleanup);
    return 0;
}

static void write_file(const uint8_t *data, size_t size)
{
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        fuzz_fail("cannot create %s", file);
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0)
            fuzz_fail("cannot write %s", file);
        off += (size_t)w;
    }
    close(fd);
}

static int positive_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(v[i] > 0.0f) || !isfinite(v[i]))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0])
        LLVMFuzzerInitialize(NULL, NULL);
    struct aw_model m;
    int rc;
#ifdef FUZZ_AWAVE_SEGY
    write_file(data, size);
    rc = aw_model_load_segy(file, 10.0f, &m);
#else
    static const float dxs[] = {10.0f,  10.0f, 10.0f,    10.0f,  0.5f, 0.0f,
                                -10.0f, NAN,   INFINITY, 1e-30f, 1e30f};
    if (size < 3)
        return 0;
    int64_t nz = data[0] ? data[0] : 16, nx;
    size_t body = size - 3;
    if (data[1] & 1)
        nx = data[1];
    else
        nx = (int64_t)(body / 4) / nz;
    float dx = dxs[data[2] % (sizeof(dxs) / sizeof(dxs[0]))];
    write_file(data + 3, body);
    rc = aw_model_load_raw(file, nx, nz, dx, &m);
#endif
    if (rc != 0)
        return 0;
    if (m.nx < 16 || m.nz < 16 || !(m.dx > 0.0f) || !isfinite(m.dx))
        fuzz_fail("accepted a %lld x %lld grid with dx %g", (long long)m.nx,
                  (long long)m.nz, (double)m.dx);
    size_t n = (size_t)(m.nx * m.nz);
    if (!positive_finite(m.v, n))
        fuzz_fail("accepted a velocity that is not positive and finite");
    float *vs;
    if (aw_model_smooth(&m, 2, &vs) != 0)
        fuzz_fail("aw_model_smooth failed on %zu samples", n);
    if (!positive_finite(vs, n))
        fuzz_fail("the smoothed migration model of an accepted file has a velocity "
                  "that is not positive and finite");
    float lo, hi;
    aw_model_range(vs, n, &lo, &hi);
    free(vs);
    aw_model_free(&m);
    return 0;
}
