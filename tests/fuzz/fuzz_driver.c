/* fuzz_driver: a small deterministic fuzzer for CTest, linked with one
 * target (fuzz.h).
 *
 *   fuzz_TARGET [options] SEED...      seeds, then --count mutants of them
 *   fuzz_TARGET --run FILE...          each FILE once, as it is (reproduce)
 *
 * A SEED is a file or a directory (its regular files, by name).  Every seed
 * runs first as it is, then --count inputs each made from a seed by one to
 * four mutations: bit flips, byte changes, inserts and deletes, truncation,
 * a block copied elsewhere, the start of one seed spliced onto the end of
 * another, interesting tokens (1e308, nan, inf, -0, integer limits, a 400
 * digit number, the target's own dictionary) and a byte or token repeated
 * up to 2000 times (deep nesting).  All choices come from --seed, so a run
 * is the same every time: input #K of a failing run is input #K again.
 *
 * A failure is a crash (a signal, an AddressSanitizer or UBSan report), a
 * hang (--timeout), a call to exit inside the target, a wrong answer
 * (fuzz_fail) or, at the end, a leak (LeakSanitizer, when enabled).  The
 * driver names the input, writes it to --crash-dir and stops with status 1.
 *
 * Options:
 *   --count N      mutants to run (default 500)
 *   --seed S       seed of the mutations (default 1)
 *   --max-len B    longest input (default 65536)
 *   --timeout S    longest run of one input in seconds (default 10)
 *   --crash-dir D  where a failing input is written (default .)
 *   --only K       run only input K (a seed's index, or count + seeds ...)
 *   --quiet        silence the target's stderr (sanitizer reports and the
 *                  driver's messages still show)
 *   --leak-each    a leak check after every input (slow; names the input)
 *   --verbose      one line per input */
#define _GNU_SOURCE
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Sanitizer hooks, present only in sanitizer builds. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));
void __sanitizer_set_report_fd(void *fd) __attribute__((weak));
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

extern int fuzz_report_fd;

typedef struct buf {
    uint8_t *p;
    size_t len;
    char *name; /* the seed's path */
} buf_t;

/* ------------------------------------------------------------ the state */
/* What the failure handlers need, set before every input: they run in a
 * signal handler or a sanitizer's death callback, so they only write(2)
 * what was formatted beforehand. */
static struct {
    const char *target, *argv0;
    const uint8_t *data;
    size_t len;
    char what[512];       /* "input #K (...)" */
    char crash_path[4096];
    volatile sig_atomic_t in_input, reported;
    int report_fd, quiet_fd;
    unsigned timeout;
} F;

static void fz_write(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(F.report_fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* Async-signal-safe: names the input and writes it out, once. */
static void fz_report(const char *why)
{
    if (F.reported)
        return;
    F.reported = 1;
    if (F.quiet_fd >= 0)
        dup2(F.report_fd, 2);
    fz_write("fuzz: ");
    fz_write(F.target);
    fz_write(": ");
    fz_write(F.what);
    fz_write(" failed: ");
    fz_write(why);
    fz_write("\n");
    int fd = open(F.crash_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        size_t off = 0;
        while (off < F.len) {
            ssize_t w = write(fd, F.data + off, F.len - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        close(fd);
        fz_write("fuzz: the input is in ");
        fz_write(F.crash_path);
        fz_write("; reproduce with: ");
        fz_write(F.argv0);
        fz_write(" --run ");
        fz_write(F.crash_path);
        fz_write("\n");
    } else {
        fz_write("fuzz: cannot write the input to ");
        fz_write(F.crash_path);
        fz_write("\n");
    }
}

static void fz_death_callback(void)
{
    if (F.in_input)
        fz_report("a sanitizer report (above)");
}

static void fz_signal(int sig)
{
    if (sig == SIGALRM) {
        fz_report("it ran longer than --timeout (a hang?)");
        _exit(1);
    }
    if (F.in_input)
        fz_report(sig == SIGSEGV   ? "SIGSEGV"
                  : sig == SIGBUS  ? "SIGBUS"
                  : sig == SIGFPE  ? "SIGFPE"
                  : sig == SIGILL  ? "SIGILL"
                  : sig == SIGABRT ? "SIGABRT (an abort, or a wrong answer above)"
                                   : "a signal");
    signal(sig, SIG_DFL);
    raise(sig);
}

static void fz_atexit(void)
{
    if (F.in_input) {
        fz_report("the target called exit (bad input must give a status, not end "
                  "the process)");
        _exit(1);
    }
}

/* ------------------------------------------------------------ the seeds */
static void *fz_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "fuzz: out of memory\n");
        exit(1);
    }
    return q;
}

static bool fz_read_file(const char *path, size_t max_len, buf_t *b)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz: cannot open %s: %s\n", path, strerror(errno));
        return false;
    }
    b->p = NULL;
    b->len = 0;
    size_t cap = 0;
    for (;;) {
        if (b->len == cap) {
            cap = cap ? 2 * cap : 4096;
            b->p = fz_xrealloc(b->p, cap);
        }
        size_t got = fread(b->p + b->len, 1, cap - b->len, f);
        b->len += got;
        if (got == 0)
            break;
    }
    bool ok = !ferror(f);
    fclose(f);
    if (!ok) {
        fprintf(stderr, "fuzz: cannot read %s\n", path);
        free(b->p);
        return false;
    }
    if (b->len > max_len)
        b->len = max_len;
    b->name = strdup(path);
    return b->name != NULL;
}

static int fz_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends path (a file, or a directory's regular files by name). */
static bool fz_add_seed(const char *path, size_t max_len, buf_t **seeds, size_t *n)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        *seeds = fz_xrealloc(*seeds, (*n + 1) * sizeof(**seeds));
        if (!fz_read_file(path, max_len, &(*seeds)[*n]))
            return false;
        (*n)++;
        return true;
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
        return false;
    }
    char **names = NULL;
    size_t nn = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *full;
        if (asprintf(&full, "%s/%s", path, de->d_name) < 0)
            return false;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            names = fz_xrealloc(names, (nn + 1) * sizeof(*names));
            names[nn++] = full;
        } else {
            free(full);
        }
    }
    closedir(d);
    qsort(names, nn, sizeof(*names), fz_name_cmp);
    bool ok = true;
    for (size_t i = 0; i < nn; i++) {
        ok = ok && fz_add_seed(names[i], max_len, seeds, n);
        free(names[i]);
    }
    free(names);
    return ok;
}

/* ------------------------------------------------------------ mutations */
static uint64_t fz_rng_state;

/* splitmix64: small, fast, and the same everywhere. */
static uint64_t fz_rand(void)
{
    uint64_t z = (fz_rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t fz_below(size_t n) { return n ? (size_t)(fz_rand() % n) : 0; }

static const char *const fz_tokens[] = {
    "0",
    "-0",
    "1",
    "-1",
    "0.0",
    "-0.0",
    "1e308",
    "-1e308",
    "1e309",
    "1e-308",
    "4.9e-324",
    "1e-400",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "127",
    "128",
    "255",
    "256",
    "32767",
    "32768",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "0x10",
    "1e",
    "1.",
    ".5",
    "+1",
    "00",
    "1e+",
    " ",
    "\t",
    "\n",
    "\r",
    "\"",
    "\\",
    "\\u0000",
    "\\ud800",
    "\\udc00",
    "\\uffff",
    "\xc3\xa9",
    "\xff",
    "\xf4\x90\x80\x80",
    "\0",
    "#",
    ",",
    ":",
    "{",
    "}",
    "[",
    "]",
    "true",
    "false",
    "null",
    "K",
    "M",
    "G",
    "T",
};
#define FZ_NTOKENS (sizeof(fz_tokens) / sizeof(fz_tokens[0]))

static const char *fz_token(size_t *len_p)
{
    size_t ndict = 0;
    while (fuzz_dict[ndict])
        ndict++;
    size_t k = fz_below(FZ_NTOKENS + ndict);
    const char *t = k < FZ_NTOKENS ? fz_tokens[k] : fuzz_dict[k - FZ_NTOKENS];
    /* The "\0" token is one NUL byte. */
    *len_p = t[0] ? strlen(t) : 1;
    return t;
}

typedef struct work {
    uint8_t *p;
    size_t len, cap; /* cap = --max-len */
} work_t;

/* Inserts n bytes at `at` (cut at the cap). */
static void fz_insert(work_t *w, size_t at, const uint8_t *src, size_t n)
{
    if (at > w->len)
        at = w->len;
    if (n > w->cap - w->len)
        n = w->cap - w->len;
    memmove(w->p + at + n, w->p + at, w->len - at);
    memcpy(w->p + at, src, n);
    w->len += n;
}

static void fz_erase(work_t *w, size_t at, size_t n)
{
    if (at >= w->len)
        return;
    if (n > w->len - at)
        n = w->len - at;
    memmove(w->p + at, w->p + at + n, w->len - at - n);
    w->len -= n;
}

static void fz_mutate_once(work_t *w, const buf_t *seeds, size_t nseeds)
{
    static const uint8_t special[] = {0,   0xff, 0x7f, 0x80, '\n', '"', '\\', '\t',
                                      '0', '9',  '-',  '.',  'e',  ' ', '{',  '['};
    uint8_t tmp[4];
    switch (fz_below(10)) {
    case 0: /* flip a bit */
        if (w->len)
            w->p[fz_below(w->len)] ^= (uint8_t)(1u << fz_below(8));
        break;
    case 1: /* change a byte */
        if (w->len)
            w->p[fz_below(w->len)] = fz_below(2) ? (uint8_t)fz_rand()
                                                 : special[fz_below(sizeof(special))];
        break;
    case 2: { /* insert 1-4 bytes */
        size_t n = 1 + fz_below(4);
        for (size_t i = 0; i < n; i++)
            tmp[i] = fz_below(2) ? (uint8_t)fz_rand()
                                 : special[fz_below(sizeof(special))];
        fz_insert(w, fz_below(w->len + 1), tmp, n);
        break;
    }
    case 3: /* delete a short run */
        fz_erase(w, fz_below(w->len), 1 + fz_below(fz_below(2) ? 4 : 64));
        break;
    case 4: /* truncate */ w->len = fz_below(w->len + 1); break;
    case 5: { /* copy a block elsewhere */
        if (!w->len)
            break;
        size_t from = fz_below(w->len), n = 1 + fz_below(w->len - from);
        if (n > 4096)
            n = 4096;
        uint8_t *blk = fz_xrealloc(NULL, n);
        memcpy(blk, w->p + from, n);
        fz_insert(w, fz_below(w->len + 1), blk, n);
        free(blk);
        break;
    }
    case 6: { /* this input's start, another seed's end */
        const buf_t *o = &seeds[fz_below(nseeds)];
        size_t cut = fz_below(w->len + 1), from = fz_below(o->len + 1);
        w->len = cut;
        fz_insert(w, cut, o->p + from, o->len - from);
        break;
    }
    case 7: { /* an interesting token */
        size_t n;
        const char *t = fz_token(&n);
        size_t at = fz_below(w->len + 1);
        if (fz_below(2) && w->len) /* in place of a few bytes */
            fz_erase(w, at, 1 + fz_below(8));
        fz_insert(w, at, (const uint8_t *)t, n);
        break;
    }
    case 8: { /* a number replaced by a token or a 400-digit number */
        if (!w->len)
            break;
        size_t at = fz_below(w->len);
        while (at < w->len && !(w->p[at] >= '0' && w->p[at] <= '9'))
            at++;
        size_t end = at;
        while (end < w->len && ((w->p[end] >= '0' && w->p[end] <= '9') ||
                                w->p[end] == '.' || w->p[end] == 'e' || w->p[end] == '-'))
            end++;
        fz_erase(w, at, end - at);
        if (fz_below(4) == 0) {
            uint8_t digits[400];
            memset(digits, '9', sizeof(digits));
            fz_insert(w, at, digits, sizeof(digits));
        } else {
            size_t n;
            const char *t = fz_token(&n);
            fz_insert(w, at, (const uint8_t *)t, n);
        }
        break;
    }
    default: { /* a byte or token repeated: deep nesting, long runs */
        size_t n = 1, reps = 1 + fz_below(fz_below(2) ? 16 : 2000);
        const char *t = fz_below(2) ? fz_token(&n) : "[";
        if (t[0] == '[')
            n = 1;
        if (fz_below(3) == 0)
            t = "{\"a\":", n = 5;
        size_t at = fz_below(w->len + 1);
        for (size_t r = 0; r < reps && w->len < w->cap; r++)
            fz_insert(w, at, (const uint8_t *)t, n);
        break;
    }
    }
}

/* ------------------------------------------------------------- running */
static double fz_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double fz_longest;
static char fz_longest_what[512];

static void fz_run(const uint8_t *data, size_t len, bool verbose, bool leak_each)
{
    F.data = data;
    F.len = len;
    if (verbose) {
        fprintf(stderr, "fuzz: %s: %s, %zu bytes\n", F.target, F.what, len);
        fflush(stderr);
    }
    /* The target sees a private copy of exactly len bytes, so that a read
     * past the end is an AddressSanitizer report. */
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) {
        fprintf(stderr, "fuzz: out of memory\n");
        exit(1);
    }
    memcpy(copy, data, len);
    if (F.quiet_fd >= 0)
        dup2(F.quiet_fd, 2);
    double t0 = fz_now();
    alarm(F.timeout);
    F.in_input = 1;
    LLVMFuzzerTestOneInput(copy, len);
    F.in_input = 0;
    alarm(0);
    double dt = fz_now() - t0;
    if (F.quiet_fd >= 0)
        dup2(F.report_fd, 2);
    free(copy);
    if (dt > fz_longest) {
        fz_longest = dt;
        snprintf(fz_longest_what, sizeof(fz_longest_what), "%s", F.what);
    }
    if (leak_each && __lsan_do_recoverable_leak_check &&
        __lsan_do_recoverable_leak_check()) {
        F.in_input = 1;
        fz_report("it leaked memory (the LeakSanitizer report above)");
        exit(1);
    }
}

static void fz_usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--count N] [--seed S] [--max-len B] [--timeout S] "
            "[--crash-dir D] [--only K] [--quiet] [--leak-each] [--verbose] SEED...\n"
            "       %s --run FILE...\n(see tests/fuzz/README.md)\n",
            argv0, argv0);
    exit(2);
}

static unsigned long long fz_arg_num(const char *argv0, const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!s[0] || s[0] == '-' || *end || errno) {
        fprintf(stderr, "fuzz: %s expects a non-negative integer, got '%s'\n", opt, s);
        fz_usage(argv0);
    }
    return v;
}

int main(int argc, char **argv)
{
    unsigned long long count = 500, seed = 1, max_len = 65536, only = ~0ull;
    const char *crash_dir = ".";
    bool run_only = false, quiet = false, leak_each = false, verbose = false;
    buf_t *seeds = NULL;
    size_t nseeds = 0;

    const char *slash = strrchr(argv[0], '/');
    F.target = slash ? slash + 1 : argv[0];
    F.argv0 = argv[0];
    F.timeout = 10;
    F.quiet_fd = -1;
    F.report_fd = 2;

    int a = 1;
    for (; a < argc && argv[a][0] == '-' && argv[a][1] == '-'; a++) {
        const char *o = argv[a];
        bool has_val = a + 1 < argc;
        if (strcmp(o, "--") == 0) {
            a++;
            break;
        } else if (strcmp(o, "--run") == 0) {
            run_only = true;
        } else if (strcmp(o, "--quiet") == 0) {
            quiet = true;
        } else if (strcmp(o, "--leak-each") == 0) {
            leak_each = true;
        } else if (strcmp(o, "--verbose") == 0) {
            verbose = true;
        } else if (!has_val) {
            fz_usage(argv[0]);
        } else if (strcmp(o, "--count") == 0) {
            count = fz_arg_num(argv[0], o, argv[++a]);
        } else if (strcmp(o, "--seed") == 0) {
            seed = fz_arg_num(argv[0], o, argv[++a]);
        } else if (strcmp(o, "--max-len") == 0) {
            max_len = fz_arg_num(argv[0], o, argv[++a]);
        } else if (strcmp(o, "--timeout") == 0) {
            F.timeout = (unsigned)fz_arg_num(argv[0], o, argv[++a]);
        } else if (strcmp(o, "--only") == 0) {
            only = fz_arg_num(argv[0], o, argv[++a]);
        } else if (strcmp(o, "--crash-dir") == 0) {
            crash_dir = argv[++a];
        } else {
            fz_usage(argv[0]);
        }
    }
    if (a >= argc || max_len == 0 || max_len > (1ull << 30))
        fz_usage(argv[0]);
    for (; a < argc; a++)
        if (!fz_add_seed(argv[a], run_only ? SIZE_MAX : (size_t)max_len, &seeds, &nseeds))
            return 2;
    if (nseeds == 0) {
        fprintf(stderr, "fuzz: no seeds\n");
        return 2;
    }

    if (quiet) {
        F.report_fd = dup(2);
        F.quiet_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (F.report_fd < 0 || F.quiet_fd < 0) {
            fprintf(stderr, "fuzz: cannot silence stderr: %s\n", strerror(errno));
            return 2;
        }
        fcntl(F.report_fd, F_SETFD, FD_CLOEXEC);
        fuzz_report_fd = F.report_fd;
        if (__sanitizer_set_report_fd)
            __sanitizer_set_report_fd((void *)(intptr_t)F.report_fd);
    }
    /* Sanitizer builds report crashes themselves, then call back. */
    if (__sanitizer_set_death_callback) {
        __sanitizer_set_death_callback(fz_death_callback);
    } else {
        signal(SIGSEGV, fz_signal);
        signal(SIGBUS, fz_signal);
        signal(SIGFPE, fz_signal);
        signal(SIGILL, fz_signal);
    }
    signal(SIGABRT, fz_signal);
    signal(SIGALRM, fz_signal);
    atexit(fz_atexit);
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);

    double t0 = fz_now();
    size_t ran = 0;
    for (size_t i = 0; i < nseeds; i++) {
        if (only != ~0ull && only != i)
            continue;
        snprintf(F.what, sizeof(F.what), "input #%zu (the file %s)", i, seeds[i].name);
        snprintf(F.crash_path, sizeof(F.crash_path), "%s/crash-%s-%zu", crash_dir,
                 F.target, i);
        fz_run(seeds[i].p, seeds[i].len, verbose, leak_each);
        ran++;
    }
    if (!run_only) {
        work_t w = {.p = fz_xrealloc(NULL, (size_t)max_len), .cap = (size_t)max_len};
        fz_rng_state = seed;
        for (unsigned long long k = 0; k < count; k++) {
            size_t from = fz_below(nseeds), nmut = 1 + fz_below(4);
            w.len = seeds[from].len;
            memcpy(w.p, seeds[from].p, w.len);
            for (size_t m = 0; m < nmut; m++)
                fz_mutate_once(&w, seeds, nseeds);
            unsigned long long index = nseeds + k;
            if (only != ~0ull && only != index)
                continue;
            snprintf(F.what, sizeof(F.what),
                     "input #%llu (mutant %llu of %s, --seed %llu)", index, k,
                     seeds[from].name, seed);
            snprintf(F.crash_path, sizeof(F.crash_path), "%s/crash-%s-%llu", crash_dir,
                     F.target, index);
            fz_run(w.p, w.len, verbose, leak_each);
            ran++;
        }
        free(w.p);
    }
    double dt = fz_now() - t0;
    if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check()) {
        fprintf(stderr,
                "fuzz: %s: memory leaked (report above); run again with "
                "--leak-each to name the input\n",
                F.target);
        _exit(1); /* not the same report again at exit */
    }
    fprintf(stderr,
            "fuzz: %s: %zu inputs (%zu seeds) passed in %.2f s; longest %.1f ms "
            "(%s)\n",
            F.target, ran, nseeds, dt, fz_longest * 1e3, fz_longest_what);
    for (size_t i = 0; i < nseeds; i++) {
        free(seeds[i].p);
        free(seeds[i].name);
    }
    free(seeds);
    return 0;
}
