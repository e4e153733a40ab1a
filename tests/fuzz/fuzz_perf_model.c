/* Fuzz target: the OMPC_PERF_MODEL file reader
 * (libomptarget-mpi/tgt_model_file.c), on the input as a file (fmemopen).
 *
 * Wrong answers: an accepted line whose values are outside the documented
 * ranges or whose kernel name is empty or holds a tab; more warnings than
 * TGT_MODEL_WARN_MAX + 2; a warning that does not name the file. */
#define _GNU_SOURCE
#include "fuzz.h"

#include "tgt_model_file.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const fuzz_dict[] = {
    "\t",
    "__omp_offloading_10303_2b1e2f_main_l10",
    "# ompc perf model 1",
    "1048576",
    "1048577",
    "1e6",
    "1000000.0000001",
    "0.000001",
    "\n#",
    NULL,
};

#define PATH "fuzz.tsv"

typedef struct seen {
    int64_t entries, warnings;
} seen_t;

static void on_entry(void *arg, const tgt_model_entry_t *e)
{
    seen_t *s = arg;
    s->entries++;
    if (!e->kernel || !e->kernel[0] || strchr(e->kernel, '\t') || strchr(e->kernel, '\n'))
        fuzz_fail("entry with a bad kernel name");
    if (e->cores < 1 || e->cores > TGT_MODEL_CORES_MAX)
        fuzz_fail("entry with %lld cores", (long long)e->cores);
    if (!isfinite(e->mean) || e->mean < 0 || e->mean > TGT_MODEL_MEAN_MAX)
        fuzz_fail("entry with mean %g", e->mean);
    if (e->runs < 1)
        fuzz_fail("entry with %lld runs", (long long)e->runs);
}

static void on_warn(void *arg, const char *msg)
{
    seen_t *s = arg;
    s->warnings++;
    if (strncmp(msg, "OMPC_PERF_MODEL=" PATH, strlen("OMPC_PERF_MODEL=" PATH)) != 0)
        fuzz_fail("warning does not name the file: %s", msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* fmemopen refuses an empty buffer on some C libraries. */
    static char empty[1];
    FILE *f = size ? fmemopen((void *)data, size, "r") : fmemopen(empty, 1, "r");
    if (!f)
        fuzz_fail("fmemopen failed");
    if (!size)
        getc(f);
    seen_t s = {0, 0};
    tgt_model_reader_t rd = {.entry = on_entry, .warn = on_warn, .arg = &s};
    int64_t nbad = tgt_model_file_read(f, PATH, &rd);
    fclose(f);
    if (nbad < 0 || s.warnings > TGT_MODEL_WARN_MAX + 2 || s.warnings > nbad + 1 ||
        (nbad > 0 && s.warnings == 0))
        fuzz_fail("%lld bad lines but %lld warnings", (long long)nbad,
                  (long long)s.warnings);
    return 0;
}
