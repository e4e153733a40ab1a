/* Reader of the OMPC_PERF_MODEL file (format in tgt_model_file.h). */
#define _GNU_SOURCE
#include "tgt_model_file.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool mf_parse_ll(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static void mf_bad_line(const tgt_model_reader_t *rd, const char *path, int64_t lineno,
                        int64_t *nbad, const char *fmt, const char *field)
{
    if (++*nbad > TGT_MODEL_WARN_MAX)
        return;
    char what[160], msg[TGT_MODEL_LINE_MAX + 512];
    snprintf(what, sizeof(what), fmt, field);
    snprintf(msg, sizeof(msg),
             "OMPC_PERF_MODEL=%s:%lld: %s; line ignored (the file "
             "is rewritten at exit without it)",
             path, (long long)lineno, what);
    rd->warn(rd->arg, msg);
}

/* The next line of f without its newline into line (TGT_MODEL_LINE_MAX
 * bytes, NUL-terminated).  *len_p is its length, or more than
 * TGT_MODEL_LINE_MAX - 1 when it was cut (the rest is consumed); *nul_p
 * tells whether it holds a NUL byte.  False at the end of the input. */
static bool mf_getline(FILE *f, char *line, size_t *len_p, bool *nul_p)
{
    size_t len = 0;
    bool nul = false;
    int c;
    while ((c = getc(f)) != EOF && c != '\n') {
        if (len < TGT_MODEL_LINE_MAX - 1)
            line[len] = (char)c;
        nul |= c == '\0';
        if (len < TGT_MODEL_LINE_MAX)
            len++;
    }
    if (c == EOF && len == 0)
        return false;
    line[len < TGT_MODEL_LINE_MAX ? len : TGT_MODEL_LINE_MAX - 1] = '\0';
    *len_p = len;
    *nul_p = nul;
    return true;
}

int64_t tgt_model_file_read(FILE *f, const char *path, const tgt_model_reader_t *rd)
{
    char line[TGT_MODEL_LINE_MAX];
    int64_t lineno = 0, nbad = 0;
    size_t len;
    bool nul;
    while (mf_getline(f, line, &len, &nul)) {
        lineno++;
        if (len >= TGT_MODEL_LINE_MAX) {
            mf_bad_line(rd, path, lineno, &nbad, "line longer than %s bytes", "4095");
            continue;
        }
        /* strtok and strtod would stop at it and read a different line. */
        if (nul) {
            mf_bad_line(rd, path, lineno, &nbad, "line holds a NUL byte%s", "");
            continue;
        }
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *save = NULL;
        char *name = strtok_r(line, "\t", &save);
        char *cores_s = strtok_r(NULL, "\t", &save);
        char *mean_s = strtok_r(NULL, "\t", &save);
        char *n_s = strtok_r(NULL, "\t", &save);
        if (!name || !cores_s || !mean_s || !n_s || strtok_r(NULL, "\t", &save)) {
            mf_bad_line(rd, path, lineno, &nbad, "malformed line (%s)",
                        "expected kernel, cores, mean seconds, runs");
            continue;
        }
        long long cores, n;
        if (!mf_parse_ll(cores_s, 1, TGT_MODEL_CORES_MAX, &cores)) {
            mf_bad_line(rd, path, lineno, &nbad, "cores '%s' is not in 1..1048576",
                        cores_s);
            continue;
        }
        if (!mf_parse_ll(n_s, 1, LLONG_MAX, &n)) {
            mf_bad_line(rd, path, lineno, &nbad, "runs '%s' is not a positive integer",
                        n_s);
            continue;
        }
        char *end;
        double mean = strtod(mean_s, &end);
        if (end == mean_s || *end || !isfinite(mean) || mean < 0 ||
            mean > TGT_MODEL_MEAN_MAX) {
            mf_bad_line(rd, path, lineno, &nbad,
                        "mean '%s' is not a number of "
                        "seconds in 0..1e6",
                        mean_s);
            continue;
        }
        tgt_model_entry_t e = {.kernel = name, .cores = cores, .mean = mean, .runs = n};
        rd->entry(rd->arg, &e);
    }
    if (ferror(f)) {
        char msg[TGT_MODEL_LINE_MAX + 128];
        snprintf(msg, sizeof(msg),
                 "OMPC_PERF_MODEL=%s: cannot read it after line %lld "
                 "(%s); the rest is ignored",
                 path, (long long)lineno, strerror(errno));
        rd->warn(rd->arg, msg);
    }
    if (nbad > TGT_MODEL_WARN_MAX) {
        char msg[TGT_MODEL_LINE_MAX + 128];
        snprintf(msg, sizeof(msg), "OMPC_PERF_MODEL=%s: %lld more bad lines ignored",
                 path, (long long)(nbad - TGT_MODEL_WARN_MAX));
        rd->warn(rd->arg, msg);
    }
    return nbad;
}
