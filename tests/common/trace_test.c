/* trace_test OUT.json DROP.json
 *
 * Plays two ranks in one process: "rank 1" records from several threads
 * (while the main thread serializes concurrently) and hands over its blob;
 * "rank 0" records and writes OUT.json with rank 1 shifted by a clock
 * offset.  DROP.json holds a rank that went over its event limit.  The
 * trace_json test then reads both files with Python's json module; the
 * counts and names below must agree with its script in CMakeLists.txt.
 *
 * Also checked here: corrupt blobs are refused (every truncation, byte
 * flips, duplicate ranks) without touching an existing file or leaving a
 * temporary one, and a flipped blob that is accepted still makes valid
 * JSON (trace_json reads OUT.json.flips); the recorder's off state, repeated init/fini with threads, and
 * arguments it cannot record.
 *
 * trace_test --bench [N] instead prints what recording N spans costs per
 * span, without and with arguments. */
#define _GNU_SOURCE
#include "ompc_trace.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "trace_test: %s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                              \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#define CHECK_ST(expr, want)                                                             \
    do {                                                                                 \
        ompc_status_t st_ = (expr);                                                      \
        if (st_ != (want)) {                                                             \
            fprintf(stderr, "trace_test: %s:%d: %s returned %s, not %s\n", __FILE__,     \
                    __LINE__, #expr, ompc_status_str(st_), ompc_status_str(want));       \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

enum {
    RANK1_THREADS = 4,
    RANK1_SPANS = 3000, /* per thread */
    RANK0_THREADS = 3,
    RANK0_SPANS = 500,
    DROP_THREADS = 4,
    DROP_SPANS = 500,
    DROP_LIMIT = 1000,
};
#define OFFSET_NS INT64_C(7000000000)
/* Quotes, a backslash, control characters, a byte that is not UTF-8 and an
 * accented letter: JSON must escape or replace each. */
#define ODD_NAME "we\"ird\\na\tme\x01\xff\xc3\xa9"
static const ompc_trace_arg_t span_args[] = {OMPC_TRACE_U64("bytes", 1024),
                                             OMPC_TRACE_U64("from", 2)};
#define SPAN_ARGS span_args, OMPC_TRACE_NARGS(span_args)
/* Every type, the extremes of the integers, doubles JSON cannot spell, and
 * a key and a value that need escaping; trace_json expects exactly these. */
static const ompc_trace_arg_t typed_args[] = {
    OMPC_TRACE_U64("u", UINT64_MAX), OMPC_TRACE_I64("i", INT64_MIN),
    OMPC_TRACE_I64("small", -1),     OMPC_TRACE_F64("f", -0.25),
    OMPC_TRACE_F64("big", 1e300),    OMPC_TRACE_F64("inf", INFINITY),
    OMPC_TRACE_F64("nan", NAN),      OMPC_TRACE_STR(ODD_NAME, ODD_NAME),
    OMPC_TRACE_STR("null", NULL),    OMPC_TRACE_U64(NULL, 7),
};
/* One more than an event keeps: k0 .. k16, of which k16 is not recorded. */
#define MANY_ARGS (OMPC_TRACE_ARGS_MAX + 1)

static uint64_t anchor_ns;
static _Atomic int workers_done;

typedef struct worker {
    pthread_t thread;
    int index;
    int spans;
    const char *name_fmt;
    bool extras; /* instants and a counter too */
    bool many;   /* and an instant with too many args (not in small blobs:
                  * the corruption tests flip every byte) */
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    char name[32];
    snprintf(name, sizeof(name), w->name_fmt, w->index);
    ompc_trace_thread_name(name);
    static const char *const names[3] = {ODD_NAME, "kernel_a", "kernel_b"};
    for (int i = 0; i < w->spans; i++) {
        /* A fresh copy each time: the recorder must not keep our pointer. */
        char kname[64];
        snprintf(kname, sizeof(kname), "%s", names[i % 3]);
        uint64_t t0 = ompc_trace_now_ns();
        if (i % 2 == 0)
            ompc_trace_span("kernel", kname, t0, t0 + 100 + (uint64_t)i, SPAN_ARGS);
        else
            ompc_trace_span("kernel", kname, t0, t0 + 100 + (uint64_t)i, NULL, 0);
    }
    if (w->extras) {
        const ompc_trace_arg_t tick[] = {OMPC_TRACE_STR("text", "not json {")};
        ompc_trace_instant("sched", "tick", tick, 1);
        ompc_trace_counter("queue depth", "tasks", 42.5);
        ompc_trace_instant("sched", "typed", typed_args, OMPC_TRACE_NARGS(typed_args));
    }
    if (w->many) {
        ompc_trace_arg_t many[MANY_ARGS];
        char keys[MANY_ARGS][8];
        for (unsigned k = 0; k < MANY_ARGS; k++) {
            snprintf(keys[k], sizeof(keys[k]), "k%u", k);
            many[k] = (ompc_trace_arg_t)OMPC_TRACE_U64(keys[k], k);
        }
        ompc_trace_instant("sched", "many", many, MANY_ARGS);
    }
    atomic_fetch_add(&workers_done, 1);
    return NULL;
}

static void workers_start(worker_t *w, int n, int spans, const char *name_fmt,
                          bool extras, bool many)
{
    for (int i = 0; i < n; i++) {
        w[i] = (worker_t){.index = i,
                          .spans = spans,
                          .name_fmt = name_fmt,
                          .extras = extras,
                          .many = many};
        CHECK(pthread_create(&w[i].thread, NULL, worker_main, &w[i]) == 0);
    }
}

static void workers_join(worker_t *w, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(pthread_join(w[i].thread, NULL) == 0);
}

static void check_counts(uint64_t events, uint64_t dropped)
{
    uint64_t e, d;
    ompc_trace_counts(&e, &d);
    if (e != events || d != dropped) {
        fprintf(stderr,
                "trace_test: %" PRIu64 " events and %" PRIu64 " dropped, "
                "expected %" PRIu64 " and %" PRIu64 "\n",
                e, d, events, dropped);
        exit(1);
    }
}

static char *read_file(const char *path, size_t *size_p)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    CHECK(p);
    size_t n;
    while ((n = fread(p + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            cap *= 2;
            p = realloc(p, cap);
            CHECK(p);
        }
    }
    fclose(f);
    *size_p = len;
    return p;
}

/* No "<path>.tmp.*" may be left next to path after a failed write. */
static void check_no_tmp(const char *path)
{
    char dir[4096], prefix[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    snprintf(prefix, sizeof(prefix), "%s.tmp.", base);
    if (slash)
        *slash = '\0';
    DIR *d = opendir(slash ? dir : ".");
    CHECK(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
            fprintf(stderr, "trace_test: temporary file %s left behind\n", de->d_name);
            exit(1);
        }
    }
    closedir(d);
}

/* Rank 1: threads record while the main thread keeps serializing; returns
 * the final blob. */
static void *record_rank1(size_t *size_p)
{
    ompc_trace_init(1, true);
    ompc_trace_span("test", "anchor", anchor_ns, anchor_ns + 1000, NULL, 0);
    worker_t w[RANK1_THREADS];
    atomic_store(&workers_done, 0);
    workers_start(w, RANK1_THREADS, RANK1_SPANS, "worker %d", true, true);
    /* Serializing must be safe while threads record, and snapshots only
     * grow. */
    uint64_t last = 0, last_events = 0;
    for (int round = 0; round < 3 || atomic_load(&workers_done) < RANK1_THREADS;
         round++) {
        void *blob;
        size_t size;
        int rank = -1;
        CHECK_ST(ompc_trace_serialize(&blob, &size), OMPC_OK);
        CHECK_ST(ompc_trace_blob_rank(blob, size, &rank), OMPC_OK);
        CHECK(rank == 1);
        CHECK(size >= last);
        last = size;
        free(blob);
        uint64_t events;
        ompc_trace_counts(&events, NULL);
        CHECK(events >= last_events);
        last_events = events;
    }
    workers_join(w, RANK1_THREADS);
    check_counts(1 + RANK1_THREADS * (RANK1_SPANS + 4), 0);
    void *blob;
    CHECK_ST(ompc_trace_serialize(&blob, size_p), OMPC_OK);
    ompc_trace_fini();
    return blob;
}

/* A small blob for the corruption tests: rank 2, two threads, every kind of
 * event. */
static void *record_small(size_t *size_p)
{
    ompc_trace_init(2, true);
    ompc_trace_span("test", "anchor", anchor_ns, anchor_ns + 1000, SPAN_ARGS);
    worker_t w[1];
    workers_start(w, 1, 3, "small %d", true, false);
    workers_join(w, 1);
    void *blob;
    CHECK_ST(ompc_trace_serialize(&blob, size_p), OMPC_OK);
    ompc_trace_fini();
    return blob;
}

static void corrupt_tests(const char *out_path, const void *good, size_t good_size)
{
    size_t before_size;
    char *before = read_file(out_path, &before_size);
    CHECK(before);

    size_t size;
    uint8_t *small = record_small(&size);
    int rank = -1;
    CHECK_ST(ompc_trace_blob_rank(small, size, &rank), OMPC_OK);
    CHECK(rank == 2);

    /* Every truncation, in a buffer of exactly that size so that ASan
     * catches a read past the end. */
    for (size_t len = 0; len < size; len++) {
        uint8_t *cut = malloc(len ? len : 1);
        CHECK(cut);
        memcpy(cut, small, len);
        CHECK_ST(ompc_trace_blob_rank(cut, len, NULL), OMPC_ERR_PROTOCOL);
        free(cut);
    }
    CHECK_ST(ompc_trace_blob_rank(NULL, 0, NULL), OMPC_ERR_PROTOCOL);

    /* Fields with a known place in the version 2 header. */
    static const struct {
        size_t at;
        uint8_t xor ;
    } fields[] = {
        {0, 0x20},  /* magic */
        {8, 0x03},  /* version */
        {15, 0x80}, /* rank made negative */
        {16, 0x01}, /* size */
        {40, 0xff}, /* string count */
        {44, 0x01}, /* thread count */
        {48, 0x01}, /* event count */
        {56, 0x01}, /* argument count */
    };
    uint8_t *bad = malloc(size);
    CHECK(bad);
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        memcpy(bad, small, size);
        bad[fields[i].at] ^= fields[i].xor ;
        CHECK_ST(ompc_trace_blob_rank(bad, size, NULL), OMPC_ERR_PROTOCOL);
    }

    /* Any flipped byte either still parses or is refused; whatever parses
     * must also write valid JSON (string bytes are escaped, numbers come
     * from checked types).  The writes go to a scratch file, and each one
     * is appended to OUT.json.flips, which trace_json parses. */
    char scratch[4096], flips_path[4096];
    snprintf(scratch, sizeof(scratch), "%s.scratch", out_path);
    snprintf(flips_path, sizeof(flips_path), "%s.flips", out_path);
    FILE *flips = fopen(flips_path, "wb");
    CHECK(flips);
    ompc_trace_init(0, true);
    static const uint8_t xors[] = {0x01, 0x80, 0xff};
    int parsed = 0, refused = 0;
    for (size_t at = 0; at < size; at++) {
        for (size_t k = 0; k < sizeof(xors); k++) {
            memcpy(bad, small, size);
            bad[at] ^= xors[k];
            ompc_status_t st = ompc_trace_blob_rank(bad, size, NULL);
            CHECK(st == OMPC_OK || st == OMPC_ERR_PROTOCOL);
            if (st != OMPC_OK) {
                refused++;
                continue;
            }
            parsed++;
            const void *blobs[1] = {bad};
            CHECK_ST(ompc_trace_write(scratch, blobs, &size, NULL, 1), OMPC_OK);
            size_t len;
            char *json = read_file(scratch, &len);
            CHECK(json && fwrite(json, 1, len, flips) == len);
            free(json);
        }
    }
    CHECK(parsed > 0 && refused > 0);
    CHECK(fclose(flips) == 0);
    CHECK(unlink(scratch) == 0);

    /* Random garbage, with and without a valid magic. */
    srand(12345);
    for (int round = 0; round < 2000; round++) {
        size_t len = (size_t)(rand() % 200);
        uint8_t *g = malloc(len ? len : 1);
        CHECK(g);
        for (size_t i = 0; i < len; i++)
            g[i] = (uint8_t)rand();
        if (round % 2 && len >= 8)
            memcpy(g, "OMPCTRCE", 8);
        CHECK_ST(ompc_trace_blob_rank(g, len, NULL), OMPC_ERR_PROTOCOL);
        free(g);
    }

    /* A refused write leaves the existing file alone and no temporary. */
    memcpy(bad, small, size);
    bad[48] ^= 1;
    const void *blobs[2] = {good, bad};
    size_t sizes[2] = {good_size, size};
    CHECK_ST(ompc_trace_write(out_path, blobs, sizes, NULL, 2), OMPC_ERR_PROTOCOL);
    /* Two blobs of one rank would merge two processes' tracks. */
    blobs[1] = good;
    sizes[1] = good_size;
    CHECK_ST(ompc_trace_write(out_path, blobs, sizes, NULL, 2), OMPC_ERR_PROTOCOL);
    /* Nor may a blob claim the writer's own rank. */
    ompc_trace_fini();
    ompc_trace_init(1, true);
    CHECK_ST(ompc_trace_write(out_path, blobs, sizes, NULL, 1), OMPC_ERR_PROTOCOL);
    /* An offset the writer cannot add without overflow. */
    int64_t huge = INT64_MAX;
    CHECK_ST(ompc_trace_write(out_path, blobs + 1, sizes, &huge, 1), OMPC_ERR_INVALID);
    /* A directory that does not exist: an I/O failure, reported. */
    CHECK_ST(ompc_trace_write("/nonexistent-ompc-dir/t.json", NULL, NULL, NULL, 0),
             OMPC_ERR_INVALID);
    ompc_trace_fini();

    size_t after_size;
    char *after = read_file(out_path, &after_size);
    CHECK(after && after_size == before_size && memcmp(before, after, before_size) == 0);
    check_no_tmp(out_path);
    free(after);
    free(before);
    free(bad);
    free(small);
}

static void drop_test(const char *drop_path)
{
    ompc_trace_init(3, true);
    ompc_trace_set_max_events(DROP_LIMIT);
    worker_t w[DROP_THREADS];
    workers_start(w, DROP_THREADS, DROP_SPANS, "dropper %d", false, false);
    workers_join(w, DROP_THREADS);
    /* The limit is on slots reserved a chunk at a time, so the part of a
     * chunk its thread never filled is not kept either: at most the limit
     * is kept, and every event is either kept or counted. */
    uint64_t kept, dropped;
    ompc_trace_counts(&kept, &dropped);
    CHECK(kept <= DROP_LIMIT && dropped > 0 &&
          kept + dropped == DROP_THREADS * DROP_SPANS);
    size_t size;
    void *blob;
    CHECK_ST(ompc_trace_serialize(&blob, &size), OMPC_OK);
    ompc_trace_fini();

    ompc_trace_init(0, true);
    ompc_trace_span("test", "anchor", anchor_ns, anchor_ns + 1000, NULL, 0);
    const void *blobs[1] = {blob};
    CHECK_ST(ompc_trace_write(drop_path, blobs, &size, NULL, 1), OMPC_OK);
    ompc_trace_fini();
    free(blob);
}

static void off_tests(void)
{
    /* Before any init and after init(.., false): no-ops, nothing to write. */
    ompc_trace_span("test", "ignored", 1, 2, NULL, 0);
    CHECK(!ompc_trace_on());
    check_counts(0, 0);
    ompc_trace_init(0, false);
    CHECK(!ompc_trace_on());
    ompc_trace_span("test", "ignored", 1, 2, SPAN_ARGS);
    ompc_trace_instant("test", "ignored", NULL, 0);
    ompc_trace_counter("ignored", "x", 1.0);
    check_counts(0, 0);
    void *blob;
    size_t size;
    CHECK_ST(ompc_trace_serialize(&blob, &size), OMPC_ERR_INVALID);
    CHECK_ST(ompc_trace_write("never.json", NULL, NULL, NULL, 0), OMPC_ERR_INVALID);
    ompc_trace_fini();
}

/* Threads come and go across generations; the main thread keeps its
 * thread-local buffer pointer from a generation fini has freed. */
static void cycle_tests(void)
{
    for (int cycle = 0; cycle < 20; cycle++) {
        ompc_trace_init(cycle, true);
        CHECK(ompc_trace_on());
        ompc_trace_span("test", "cycle", 1, 2, NULL, 0);
        worker_t w[2];
        workers_start(w, 2, 100, "cycler %d", false, false);
        workers_join(w, 2);
        /* NaN has no JSON form and is not recorded. */
        ompc_trace_counter("bad", "nan", 0.0 / 0.0);
        check_counts(1 + 2 * 100, 0);
        ompc_trace_fini();
        CHECK(!ompc_trace_on());
    }
}

/* Arguments the recorder refuses or ignores. */
static void args_tests(void)
{
    ompc_trace_init(4, true);
    /* An unknown type drops the whole event. */
    ompc_trace_arg_t bad[2] = {OMPC_TRACE_U64("ok", 1), OMPC_TRACE_U64("bad", 2)};
    bad[1].type = (ompc_trace_type_t)99;
    ompc_trace_span("test", "bad type", 1, 2, bad, 2);
    check_counts(0, 1);
    /* No array means no arguments, whatever the count says. */
    ompc_trace_span("test", "no array", 1, 2, NULL, 3);
    ompc_trace_instant("test", "no array", NULL, 3);
    check_counts(2, 1);
    ompc_trace_fini();
}

/* The calling thread's CPU time: other processes on a shared machine do
 * not count. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    CHECK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU ns per span for n spans recorded on one thread with the given args:
 * the best of several rounds, each into memory the previous round freed,
 * so that page faults count less. */
static double bench_spans(int n, const ompc_trace_arg_t *args, size_t nargs)
{
    double best = 0;
    for (int round = 0; round < 10; round++) {
        ompc_trace_init(0, true);
        uint64_t t0 = ompc_trace_now_ns(), c0 = thread_cpu_ns();
        for (int i = 0; i < n; i++)
            ompc_trace_span("transfer", "launch kernel_a", t0, t0 + (uint64_t)i, args,
                            nargs);
        double ns = (double)(thread_cpu_ns() - c0) / n;
        check_counts((uint64_t)n, 0);
        ompc_trace_fini();
        if (round == 0 || ns < best)
            best = ns;
    }
    return best;
}

/* The per-span cost of recording, as a tgt_graph.c transfer span (three
 * numbers) and a tgt_flush.c scheduling span (two numbers, a string). */
static int bench(int n)
{
    const ompc_trace_arg_t three[] = {OMPC_TRACE_U64("task", 123456),
                                      OMPC_TRACE_I64("executor", 3),
                                      OMPC_TRACE_U64("bytes", 1048576)};
    const ompc_trace_arg_t sched[] = {OMPC_TRACE_U64("tasks", 64),
                                      OMPC_TRACE_U64("held", 0),
                                      OMPC_TRACE_STR("policy", "heft")};
    if (n <= 0 || (uint64_t)n > OMPC_TRACE_MAX_EVENTS_DEFAULT) {
        fprintf(stderr, "trace_test: --bench N: N from 1 to %u\n",
                OMPC_TRACE_MAX_EVENTS_DEFAULT);
        return 2;
    }
    for (int rep = 0; rep < 3; rep++) {
        double none = bench_spans(n, NULL, 0);
        double nums = bench_spans(n, three, OMPC_TRACE_NARGS(three));
        double mixed = bench_spans(n, sched, OMPC_TRACE_NARGS(sched));
        printf("trace_bench: %d spans: %.1f ns/span no args, %.1f with 3 "
               "numbers, %.1f with 2 numbers and a string\n",
               n, none, nums, mixed);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--bench") == 0)
        return bench(argc >= 3 ? atoi(argv[2]) : 100000);
    if (argc != 3) {
        fprintf(stderr, "usage: %s OUT.json DROP.json | --bench [N]\n", argv[0]);
        return 2;
    }
    const char *out_path = argv[1], *drop_path = argv[2];
    if ((unlink(out_path) != 0 && errno != ENOENT) ||
        (unlink(drop_path) != 0 && errno != ENOENT)) {
        perror("unlink");
        return 1;
    }
    anchor_ns = ompc_trace_now_ns();

    off_tests();
    args_tests();
    /* Named before init: the name must still label the track. */
    ompc_trace_thread_name("main");

    size_t size1;
    void *blob1 = record_rank1(&size1);

    ompc_trace_init(0, true);
    ompc_trace_span("test", "anchor", anchor_ns, anchor_ns + 1000, NULL, 0);
    worker_t w[RANK0_THREADS];
    workers_start(w, RANK0_THREADS, RANK0_SPANS, "handler %d", false, false);
    workers_join(w, RANK0_THREADS);
    check_counts(1 + RANK0_THREADS * RANK0_SPANS, 0);
    const void *blobs[1] = {blob1};
    int64_t offset = OFFSET_NS;
    CHECK_ST(ompc_trace_write(out_path, blobs, &size1, &offset, 1), OMPC_OK);
    check_no_tmp(out_path);
    ompc_trace_fini();

    corrupt_tests(out_path, blob1, size1);
    drop_test(drop_path);
    cycle_tests();
    free(blob1);
    printf("trace_test: ok\n");
    return 0;
}
