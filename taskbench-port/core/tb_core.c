/* Task Bench's task-graph model in C (see tb_core.h and README.md next to
 * this file for the places where we deliberately differ from Task Bench).
 *
 * Back ends build this one file into their programs, device images
 * included, so everything a target region may call sits between
 * TB_DEVICE_BEGIN and TB_DEVICE_END, keeps no mutable global state and
 * uses libc only.  The command line, the report and -dump-deps are
 * host-only. */
#define _POSIX_C_SOURCE 200809L

#include "tb_core.h"
#include "tb_core_internal.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TB_DEVICE_BEGIN

/* ------------------------------------------------ deterministic random */

static inline uint64_t tb_rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

static inline uint64_t tb_load_le64(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i > 0; --i)
        v = (v << 8) | p[i - 1];
    return v;
}

static inline void tb_sip_round(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = tb_rotl(v[1], 13);
    v[1] ^= v[0];
    v[0] = tb_rotl(v[0], 32);
    v[2] += v[3];
    v[3] = tb_rotl(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = tb_rotl(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = tb_rotl(v[1], 17);
    v[1] ^= v[2];
    v[2] = tb_rotl(v[2], 32);
}

uint64_t tb_siphash24(const void *in, size_t len, const unsigned char key[16])
{
    const unsigned char *m = in;
    uint64_t k0 = tb_load_le64(key, 8), k1 = tb_load_le64(key + 8, 8);
    uint64_t v[4] = {k0 ^ UINT64_C(0x736f6d6570736575), k1 ^ UINT64_C(0x646f72616e646f6d),
                     k0 ^ UINT64_C(0x6c7967656e657261),
                     k1 ^ UINT64_C(0x7465646279746573)};
    size_t full = len - len % 8;
    for (size_t off = 0; off < full; off += 8) {
        uint64_t w = tb_load_le64(m + off, 8);
        v[3] ^= w;
        tb_sip_round(v);
        tb_sip_round(v);
        v[0] ^= w;
    }
    uint64_t last = ((uint64_t)len << 56) | tb_load_le64(m + full, len % 8);
    v[3] ^= last;
    tb_sip_round(v);
    tb_sip_round(v);
    v[0] ^= last;
    v[2] ^= 0xff;
    for (int i = 0; i < 4; ++i)
        tb_sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

double tb_random_uniform(const void *in, size_t len)
{
    /* Task Bench's key: bytes 1..15 and a zero (core_random.c). */
    const unsigned char key[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0};
    return (double)tb_siphash24(in, len, key) * 0x1p-64;
}

/* ------------------------------------------------------- graph shape */

static inline int64_t tb_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t tb_max(int64_t a, int64_t b) { return a > b ? a : b; }

int64_t tb_offset_at_timestep(const tb_graph_t *g, int64_t t)
{
    if (t < 0)
        return 0;
    if (g->dependence == TB_DEP_DOM)
        return tb_max(0, t + g->max_width - g->timesteps);
    return 0;
}

int64_t tb_width_at_timestep(const tb_graph_t *g, int64_t t)
{
    if (t < 0)
        return 0;
    switch (g->dependence) {
    case TB_DEP_DOM: return tb_min(g->max_width, tb_min(t + 1, g->timesteps - t));
    case TB_DEP_TREE: return tb_min(g->max_width, INT64_C(1) << tb_min(t, 62));
    default: return g->max_width;
    }
}

int64_t tb_max_dependence_sets(const tb_graph_t *g)
{
    switch (g->dependence) {
    case TB_DEP_FFT: {
        /* ceil(log2(width)) butterfly stages; Task Bench gets 0 for width
         * 1 and then divides by it, we keep one (self-only) stage. */
        int64_t stages = 0;
        while (stages < 62 && (INT64_C(1) << stages) < g->max_width)
            ++stages;
        return stages > 0 ? stages : 1;
    }
    case TB_DEP_SPREAD:
    case TB_DEP_RANDOM_NEAREST:
    case TB_DEP_RANDOM_SPREAD: return g->period > 0 ? g->period : 1;
    default: return 1;
    }
}

int64_t tb_timestep_period(const tb_graph_t *g) { return tb_max_dependence_sets(g); }

int64_t tb_dependence_set_at_timestep(const tb_graph_t *g, int64_t t)
{
    int64_t sets = tb_max_dependence_sets(g);
    switch (g->dependence) {
    case TB_DEP_FFT:
        /* Timestep 1 is the first to read anything, so it gets stage 0. */
        return (t + sets - 1) % sets;
    case TB_DEP_SPREAD:
    case TB_DEP_RANDOM_NEAREST:
    case TB_DEP_RANDOM_SPREAD: return t % sets;
    default: return 0;
    }
}

size_t tb_max_dependencies(const tb_graph_t *g)
{
    int64_t w = g->max_width, r = g->radix, n;
    switch (g->dependence) {
    case TB_DEP_TRIVIAL: n = 0; break;
    case TB_DEP_NO_COMM: n = 1; break;
    case TB_DEP_STENCIL_1D:
    case TB_DEP_STENCIL_1D_PERIODIC:
    case TB_DEP_FFT: n = 3; break;
    case TB_DEP_DOM:
    case TB_DEP_TREE: n = 2; break; /* a tree node has two children */
    case TB_DEP_ALL_TO_ALL: n = w; break;
    /* radix 0 still leaves random_nearest the window [p, p] (Task Bench's
     * (radix-1)/2 truncates to 0). */
    case TB_DEP_RANDOM_NEAREST: n = r > 0 ? r : 1; break;
    default: n = r; break;
    }
    return (size_t)tb_max(0, tb_min(n, w));
}

/* Dependences are produced in ascending order into an emitter, which keeps
 * those inside [lo, hi) (the points that run at the other timestep),
 * drops repeats, stores the first `cap`, counts the rest and, for the
 * report, how many fall in [local_lo, local_hi].  With `check` set each
 * point is instead handed to the input validation of tb_execute_point. */
struct tb_check;
typedef struct tb_emit {
    int64_t *out;
    size_t cap;
    size_t n;
    int64_t last;
    int64_t lo, hi;
    int64_t local_lo, local_hi;
    int64_t n_local;
    struct tb_check *check;
} tb_emit_t;

static void tb_check_input(struct tb_check *c, size_t idx, int64_t dep);

static void tb_emit_init(tb_emit_t *e, int64_t *out, size_t cap, int64_t lo, int64_t hi)
{
    e->out = out;
    e->cap = cap;
    e->n = 0;
    e->last = INT64_MIN;
    e->lo = lo;
    e->hi = hi;
    e->local_lo = 0;
    e->local_hi = -1;
    e->n_local = 0;
    e->check = NULL;
}

static void tb_emit_range(tb_emit_t *e, int64_t a, int64_t b)
{
    a = tb_max(a, e->lo);
    if (e->n > 0)
        a = tb_max(a, e->last + 1);
    b = tb_min(b, e->hi - 1);
    if (a > b)
        return;
    /* One by one while someone looks at the points, then arithmetic: the
     * report counts all_to_all graphs without walking every edge. */
    for (; a <= b && (e->n < e->cap || e->check); ++a) {
        if (e->check)
            tb_check_input(e->check, e->n, a);
        else
            e->out[e->n] = a;
        if (a >= e->local_lo && a <= e->local_hi)
            e->n_local++;
        e->n++;
        e->last = a;
    }
    if (a <= b) {
        e->n += (size_t)(b - a + 1);
        int64_t la = tb_max(a, e->local_lo), lb = tb_min(b, e->local_hi);
        if (la <= lb)
            e->n_local += lb - la + 1;
        e->last = b;
    }
}

static inline void tb_emit(tb_emit_t *e, int64_t v) { tb_emit_range(e, v, v); }

/* Whether random_nearest / random_spread keep the edge producer -> consumer
 * of dependence set dset.  The key layout is Task Bench's: five longs
 * {graph, radix, dset, producer, consumer}. */
static bool tb_random_edge(const tb_graph_t *g, int64_t dset, int64_t producer,
                           int64_t consumer)
{
    const int64_t key[5] = {g->graph_index, g->radix, dset, producer, consumer};
    return tb_random_uniform(key, sizeof key) < g->fraction_connected;
}

/* spread's i-th offset: i*width/radix, shifted by the dependence set for
 * all but the first so that successive timesteps reach different points. */
static inline int64_t tb_spread_offset(const tb_graph_t *g, int64_t dset, int64_t i)
{
    return i * g->max_width / g->radix + (i > 0 ? dset : 0);
}

static bool tb_spread_keep(const tb_graph_t *g, int64_t dset, int64_t i, int64_t producer,
                           int64_t consumer)
{
    if (g->dependence != TB_DEP_RANDOM_SPREAD || i == 0)
        return true;
    return tb_random_edge(g, dset, producer, consumer);
}

/* The points (p + sign*offset_i) mod width for i < radix, ascending.
 * sign +1 lists whom p reads, -1 who reads p.  Offsets never decrease, so
 * when they all stay below the width the candidates form two monotone
 * runs (wrapped and unwrapped) that only need concatenating; graphs that
 * tb_app_parse accepts always satisfy this (Task Bench's period bound).
 * Anything else falls back to picking the next larger candidate. */
static void tb_spread_emit(const tb_graph_t *g, int64_t dset, int64_t p, int sign,
                           tb_emit_t *e)
{
    int64_t r = g->radix, w = g->max_width;
    if (r <= 0 || w <= 0)
        return;
#define TB_SPREAD_VAL(i) ((((p + sign * tb_spread_offset(g, dset, (i))) % w) + w) % w)
#define TB_SPREAD_KEEP(i, v)                                                             \
    (sign > 0 ? tb_spread_keep(g, dset, (i), (v), p)                                     \
              : tb_spread_keep(g, dset, (i), p, (v)))
    int64_t top = tb_spread_offset(g, dset, r - 1);
    if (top >= 0 && top < w) {
        /* first index whose candidate wraps around */
        int64_t j = 0;
        if (sign > 0) {
            while (j < r && p + tb_spread_offset(g, dset, j) < w)
                ++j;
            for (int64_t i = j; i < r; ++i)
                if (TB_SPREAD_KEEP(i, TB_SPREAD_VAL(i)))
                    tb_emit(e, TB_SPREAD_VAL(i));
            for (int64_t i = 0; i < j; ++i)
                if (TB_SPREAD_KEEP(i, TB_SPREAD_VAL(i)))
                    tb_emit(e, TB_SPREAD_VAL(i));
        } else {
            while (j < r && p - tb_spread_offset(g, dset, j) >= 0)
                ++j;
            for (int64_t i = j - 1; i >= 0; --i)
                if (TB_SPREAD_KEEP(i, TB_SPREAD_VAL(i)))
                    tb_emit(e, TB_SPREAD_VAL(i));
            for (int64_t i = r - 1; i >= j; --i)
                if (TB_SPREAD_KEEP(i, TB_SPREAD_VAL(i)))
                    tb_emit(e, TB_SPREAD_VAL(i));
        }
        return;
    }
    int64_t prev = -1;
    for (;;) {
        int64_t next = INT64_MAX;
        for (int64_t i = 0; i < r; ++i) {
            int64_t v = TB_SPREAD_VAL(i);
            if (v > prev && v < next)
                next = v;
        }
        if (next == INT64_MAX)
            break;
        bool keep = false;
        for (int64_t i = 0; i < r && !keep; ++i)
            if (TB_SPREAD_VAL(i) == next)
                keep = TB_SPREAD_KEEP(i, next);
        if (keep)
            tb_emit(e, next);
        prev = next;
    }
#undef TB_SPREAD_VAL
#undef TB_SPREAD_KEEP
}

/* random_nearest: the nearest window, each edge but the one to itself kept
 * with probability fraction_connected.  sign as for tb_spread_emit. */
static void tb_random_nearest_emit(const tb_graph_t *g, int64_t dset, int64_t p, int sign,
                                   tb_emit_t *e)
{
    int64_t r = g->radix, w = g->max_width;
    int64_t below = sign > 0 ? r / 2 : (r - 1) / 2;
    int64_t above = sign > 0 ? (r - 1) / 2 : r / 2;
    int64_t last = tb_min(p + above, w - 1);
    for (int64_t i = tb_max(0, p - below); i <= last; ++i) {
        bool keep = (r > 0 && i == p) || (sign > 0 ? tb_random_edge(g, dset, i, p)
                                                   : tb_random_edge(g, dset, p, i));
        if (keep)
            tb_emit(e, i);
    }
}

/* The points p of one timestep reads (sign +1) or that read p (sign -1)
 * in the adjacent timestep whose dependence set is dset, before keeping
 * only the points that run there. */
static void tb_pattern_emit(const tb_graph_t *g, int64_t dset, int64_t p, int sign,
                            tb_emit_t *e)
{
    int64_t w = g->max_width;
    switch (g->dependence) {
    case TB_DEP_TRIVIAL: break;
    case TB_DEP_NO_COMM: tb_emit(e, p); break;
    case TB_DEP_STENCIL_1D: tb_emit_range(e, p - 1, p + 1); break;
    case TB_DEP_STENCIL_1D_PERIODIC:
        if (p == w - 1)
            tb_emit(e, 0);
        tb_emit_range(e, p - 1, p + 1);
        if (p == 0)
            tb_emit(e, w - 1);
        break;
    case TB_DEP_DOM:
        if (sign > 0)
            tb_emit_range(e, p - 1, p);
        else
            tb_emit_range(e, p, p + 1);
        break;
    case TB_DEP_TREE:
        if (sign > 0)
            tb_emit(e, p / 2);
        else if (p <= (INT64_MAX - 1) / 2)
            tb_emit_range(e, 2 * p, 2 * p + 1);
        break;
    case TB_DEP_FFT: {
        int64_t stride = INT64_C(1) << tb_min(dset, 62);
        tb_emit(e, p - stride);
        tb_emit(e, p);
        if (p <= INT64_MAX - stride)
            tb_emit(e, p + stride);
        break;
    }
    case TB_DEP_ALL_TO_ALL: tb_emit_range(e, 0, w - 1); break;
    case TB_DEP_NEAREST:
        if (g->radix > 0) {
            int64_t below = sign > 0 ? g->radix / 2 : (g->radix - 1) / 2;
            int64_t above = sign > 0 ? (g->radix - 1) / 2 : g->radix / 2;
            tb_emit_range(e, p - below, p + above);
        }
        break;
    case TB_DEP_SPREAD:
    case TB_DEP_RANDOM_SPREAD: tb_spread_emit(g, dset, p, sign, e); break;
    case TB_DEP_RANDOM_NEAREST: tb_random_nearest_emit(g, dset, p, sign, e); break;
    }
}

static bool tb_runs_at(const tb_graph_t *g, int64_t t, int64_t p)
{
    if (t < 0 || t >= g->timesteps)
        return false;
    int64_t off = tb_offset_at_timestep(g, t);
    return p >= off && p < off + tb_width_at_timestep(g, t);
}

/* Set e up for the inputs of point p of timestep t; false when there are
 * none to look for. */
static bool tb_deps_begin(const tb_graph_t *g, int64_t t, int64_t p, int64_t *out,
                          size_t cap, tb_emit_t *e)
{
    int64_t lo = tb_offset_at_timestep(g, t - 1);
    tb_emit_init(e, out, cap, lo, lo + tb_width_at_timestep(g, t - 1));
    return t >= 1 && tb_runs_at(g, t, p);
}

size_t tb_dependencies(const tb_graph_t *g, int64_t t, int64_t p, int64_t *out,
                       size_t cap)
{
    tb_emit_t e;
    if (tb_deps_begin(g, t, p, out, cap, &e))
        tb_pattern_emit(g, tb_dependence_set_at_timestep(g, t), p, +1, &e);
    return e.n;
}

size_t tb_reverse_dependencies(const tb_graph_t *g, int64_t t, int64_t p, int64_t *out,
                               size_t cap)
{
    if (!tb_runs_at(g, t, p) || t + 1 >= g->timesteps)
        return 0;
    tb_emit_t e;
    int64_t lo = tb_offset_at_timestep(g, t + 1);
    tb_emit_init(&e, out, cap, lo, lo + tb_width_at_timestep(g, t + 1));
    tb_pattern_emit(g, tb_dependence_set_at_timestep(g, t + 1), p, -1, &e);
    return e.n;
}

/* ------------------------------------------------------------ kernels */

int64_t tb_imbalance_iterations(const tb_graph_t *g, int64_t t, int64_t p)
{
    const int64_t key[3] = {g->graph_index, t, p};
    double u = tb_random_uniform(key, sizeof key);
    double x = (1 + (u - 0.5) * g->kernel.imbalance) * (double)g->kernel.iterations;
    if (x <= 0)
        return 0;
    /* round() half away from zero without libm: truncation is exact for
     * these magnitudes and x - t is exact (Sterbenz). */
    double whole = (double)(int64_t)x;
    return (int64_t)whole + (x - whole >= 0.5 ? 1 : 0);
}

/* Keep a kernel's result alive so that its loop cannot be deleted: an
 * empty asm that claims to read the value.  A store to a volatile local was
 * not enough: clang-19's OpenMP device compilation deleted it, and with it
 * the whole loop of busy_wait and compute_bound (device kernels took
 * microseconds whatever -iter said). */
#define TB_KEEP(value) __asm__ volatile("" : : "g"(value) : "memory")

static void tb_kernel_busy_wait(int64_t iterations)
{
    long long acc = 113;
    for (int64_t i = 0; i < iterations; ++i)
        acc = acc * 139 % 2147483647;
    TB_KEEP(acc);
}

/* 64 independent multiply-adds per iteration (2*64 FLOPs) and a product
 * over the 64 values at the end (64 FLOPs): Task Bench's compute_bound,
 * which it writes with AVX FMA intrinsics and we leave to the vectoriser. */
static void tb_kernel_compute(int64_t iterations)
{
    double a[64];
    for (int i = 0; i < 64; ++i)
        a[i] = 1.2345;
    for (int64_t it = 0; it < iterations; ++it)
        for (int i = 0; i < 64; ++i)
            a[i] = a[i] * a[i] + a[i];
    double prod = 1.0;
    for (int i = 0; i < 64; ++i)
        prod *= a[i];
    TB_KEEP(prod);
}

/* 32 multiply-accumulates per iteration (2*32 FLOPs). */
static void tb_kernel_compute2(int64_t iterations)
{
    double a[32], b[32], c[32];
    for (int i = 0; i < 32; ++i) {
        a[i] = 1.2345;
        b[i] = 1.010101;
        c[i] = 0;
    }
    for (int64_t it = 0; it < iterations; ++it)
        for (int i = 0; i < 32; ++i)
            c[i] = c[i] + a[i] * b[i];
    double sum = 0;
    for (int i = 0; i < 32; ++i)
        sum += c[i];
    TB_KEEP(sum);
}

/* Scratch is `samples` equal slices; iteration i of timestep t copies the
 * first half of slice (t*iterations + i) mod samples over its second half,
 * moving scratch/samples bytes (half read, half written).  Consecutive
 * slices are copied as one block, as Task Bench does. */
static void tb_kernel_memory(const tb_kernel_t *k, char *scratch, size_t scratch_bytes,
                             int64_t t)
{
    int64_t samples = k->samples;
    size_t slice = scratch_bytes / (size_t)samples;
    int64_t left = k->iterations;
    int64_t idx = (int64_t)(((uint64_t)t * (uint64_t)k->iterations) % (uint64_t)samples);
    while (left > 0) {
        int64_t run = tb_min(samples - idx, left);
        char *block = scratch + (size_t)idx * slice;
        size_t half = (size_t)run * slice / 2;
        memcpy(block + half, block, half);
        left -= run;
        idx = 0;
    }
}

/* Task Bench leaves io_bound unimplemented (an assertion); here the task
 * waits `iterations` microseconds off the CPU, as if blocked on I/O. */
static void tb_kernel_io(int64_t iterations)
{
    if (iterations <= 0)
        return;
    struct timespec ts = {(time_t)(iterations / 1000000),
                          (long)(iterations % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void tb_kernel_run(const tb_graph_t *g, int64_t t, int64_t p, char *scratch,
                          size_t scratch_bytes)
{
    const tb_kernel_t *k = &g->kernel;
    switch (k->type) {
    case TB_KERNEL_EMPTY: break;
    case TB_KERNEL_BUSY_WAIT: tb_kernel_busy_wait(k->iterations); break;
    case TB_KERNEL_MEMORY_BOUND: tb_kernel_memory(k, scratch, scratch_bytes, t); break;
    case TB_KERNEL_COMPUTE_BOUND: tb_kernel_compute(k->iterations); break;
    case TB_KERNEL_COMPUTE_BOUND2: tb_kernel_compute2(k->iterations); break;
    case TB_KERNEL_IO_BOUND: tb_kernel_io(k->iterations); break;
    case TB_KERNEL_LOAD_IMBALANCE:
        tb_kernel_compute(tb_imbalance_iterations(g, t, p));
        break;
    }
}

int64_t tb_flops_per_task(const tb_graph_t *g, int64_t t, int64_t p)
{
    switch (g->kernel.type) {
    case TB_KERNEL_COMPUTE_BOUND: return 2 * 64 * g->kernel.iterations + 64;
    case TB_KERNEL_COMPUTE_BOUND2: return 2 * 32 * g->kernel.iterations;
    case TB_KERNEL_LOAD_IMBALANCE: return 2 * 64 * tb_imbalance_iterations(g, t, p) + 64;
    default: return 0;
    }
}

int64_t tb_bytes_per_task(const tb_graph_t *g, int64_t t, int64_t p)
{
    (void)t;
    (void)p;
    if (g->kernel.type != TB_KERNEL_MEMORY_BOUND || g->kernel.samples <= 0)
        return 0;
    return (int64_t)g->scratch_bytes_per_task * g->kernel.iterations / g->kernel.samples;
}

/* -------------------------------------------------------- validation */

void tb_record_encode(int64_t graph, int64_t t, int64_t p,
                      unsigned char rec[TB_RECORD_BYTES])
{
    uint64_t w0 = ((uint64_t)graph << TB_GRAPH_SHIFT) | (uint64_t)t;
    uint64_t w1 = (uint64_t)p;
    memcpy(rec, &w0, sizeof w0);
    memcpy(rec + 8, &w1, sizeof w1);
}

/* Everything the input check needs while tb_pattern_emit walks the
 * dependences of the executing point. */
struct tb_check {
    const tb_graph_t *g;
    int64_t t, p;
    const char *const *inputs;
    const size_t *input_bytes;
    size_t ninputs;
};

static void tb_fail_header(const struct tb_check *c)
{
    fprintf(stderr,
            "tb_execute_point: task (graph %" PRId64 ", timestep %" PRId64
            ", point %" PRId64 "): ",
            c->g->graph_index, c->t, c->p);
}

static void tb_check_input(struct tb_check *c, size_t idx, int64_t dep)
{
    const tb_graph_t *g = c->g;
    int64_t prev = c->t - 1;
    if (idx >= c->ninputs) {
        tb_fail_header(c);
        fprintf(stderr,
                "got %zu inputs, but it depends on more points of timestep "
                "%" PRId64 " (input %zu would be point %" PRId64 ")\n",
                c->ninputs, prev, idx, dep);
        abort();
    }
    if (!c->inputs[idx]) {
        tb_fail_header(c);
        fprintf(stderr,
                "input %zu (the output of point %" PRId64 " of timestep "
                "%" PRId64 ") is NULL\n",
                idx, dep, prev);
        abort();
    }
    if (c->input_bytes[idx] != g->output_bytes_per_task) {
        tb_fail_header(c);
        fprintf(stderr,
                "input %zu (the output of point %" PRId64 " of timestep "
                "%" PRId64 ") has %zu bytes, expected %zu (-output)\n",
                idx, dep, prev, c->input_bytes[idx], g->output_bytes_per_task);
        abort();
    }
    unsigned char want[TB_RECORD_BYTES];
    tb_record_encode(g->graph_index, prev, dep, want);
    const unsigned char *in = (const unsigned char *)c->inputs[idx];
    size_t n = c->input_bytes[idx];
    for (size_t off = 0; off < n; off += TB_RECORD_BYTES) {
        size_t len = n - off < TB_RECORD_BYTES ? n - off : TB_RECORD_BYTES;
        if (memcmp(in + off, want, len) == 0)
            continue;
        unsigned char got[TB_RECORD_BYTES] = {0};
        memcpy(got, in + off, len);
        uint64_t w0, w1;
        memcpy(&w0, got, sizeof w0);
        memcpy(&w1, got + 8, sizeof w1);
        tb_fail_header(c);
        fprintf(stderr,
                "input %zu holds the wrong data at byte %zu: expected the "
                "output of (graph %" PRId64 ", timestep %" PRId64 ", point %" PRId64
                "), got (graph %" PRIu64 ", timestep "
                "%" PRIu64 ", point %" PRId64 ")\n",
                idx, off, g->graph_index, prev, dep, w0 >> TB_GRAPH_SHIFT,
                w0 & (((uint64_t)1 << TB_GRAPH_SHIFT) - 1), (int64_t)w1);
        abort();
    }
}

void tb_execute_point(const tb_graph_t *g, int64_t t, int64_t p, char *output,
                      size_t output_bytes, const char *const *inputs,
                      const size_t *input_bytes, size_t ninputs, char *scratch,
                      size_t scratch_bytes)
{
    struct tb_check c = {g, t, p, inputs, input_bytes, ninputs};
    if (!tb_runs_at(g, t, p)) {
        tb_fail_header(&c);
        fprintf(stderr,
                "no such task: timestep %" PRId64 " runs points [%" PRId64 ", %" PRId64
                ") of %" PRId64 " timesteps\n",
                t, tb_offset_at_timestep(g, t),
                tb_offset_at_timestep(g, t) + tb_width_at_timestep(g, t), g->timesteps);
        abort();
    }

    tb_emit_t e;
    if (tb_deps_begin(g, t, p, NULL, 0, &e)) {
        e.check = &c;
        tb_pattern_emit(g, tb_dependence_set_at_timestep(g, t), p, +1, &e);
    }
    if (e.n != ninputs) {
        tb_fail_header(&c);
        fprintf(stderr,
                "got %zu inputs, expected %zu (the points of timestep "
                "%" PRId64 " it depends on)\n",
                ninputs, e.n, t - 1);
        abort();
    }

    if (output_bytes != g->output_bytes_per_task || !output) {
        tb_fail_header(&c);
        fprintf(stderr, "output buffer of %zu bytes, expected %zu (-output)\n",
                output_bytes, g->output_bytes_per_task);
        abort();
    }
    unsigned char rec[TB_RECORD_BYTES];
    tb_record_encode(g->graph_index, t, p, rec);
    for (size_t off = 0; off < output_bytes; off += TB_RECORD_BYTES) {
        size_t len = output_bytes - off;
        memcpy(output + off, rec, len < TB_RECORD_BYTES ? len : TB_RECORD_BYTES);
    }

    if (scratch_bytes != g->scratch_bytes_per_task) {
        tb_fail_header(&c);
        fprintf(stderr, "scratch buffer of %zu bytes, expected %zu (-scratch)\n",
                scratch_bytes, g->scratch_bytes_per_task);
        abort();
    }
    if (scratch_bytes > 0) {
        uint64_t first = 0;
        if (scratch)
            memcpy(&first, scratch, sizeof first);
        if (first != TB_SCRATCH_MAGIC) {
            tb_fail_header(&c);
            fprintf(stderr, "scratch buffer was not prepared with "
                            "tb_prepare_scratch\n");
            abort();
        }
    }

    tb_kernel_run(g, t, p, scratch, scratch_bytes);
}

void tb_prepare_scratch(char *scratch, size_t scratch_bytes)
{
    const uint64_t magic = TB_SCRATCH_MAGIC;
    for (size_t off = 0; off + sizeof magic <= scratch_bytes; off += sizeof magic)
        memcpy(scratch + off, &magic, sizeof magic);
}

TB_DEVICE_END

/* ------------------------------------------ host-only: the kernels' ISA */

#if defined(__x86_64__) && (defined(__AVX2__) || defined(__FMA__))
/* Built with -mavx2 -mfma (OMPC_TASKBENCH_ISA in taskbench-port/
 * CMakeLists.txt): on a CPU without them the first kernel would die of
 * SIGILL, so say why before main runs.  The check itself has nothing to
 * vectorise and runs on any x86-64. */
__attribute__((constructor)) static void tb_isa_check(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return;
    fprintf(stderr, "taskbench: this program was built with -mavx2 -mfma for its kernels "
                    "but the CPU lacks AVX2 or FMA; rebuild with "
                    "-DOMPC_TASKBENCH_ISA=none\n");
    exit(2);
}
#endif

/* ----------------------------------------------------- host-only: names */

static const char *const tb_dep_names[] = {
    [TB_DEP_TRIVIAL] = "trivial",
    [TB_DEP_NO_COMM] = "no_comm",
    [TB_DEP_STENCIL_1D] = "stencil_1d",
    [TB_DEP_STENCIL_1D_PERIODIC] = "stencil_1d_periodic",
    [TB_DEP_DOM] = "dom",
    [TB_DEP_TREE] = "tree",
    [TB_DEP_FFT] = "fft",
    [TB_DEP_ALL_TO_ALL] = "all_to_all",
    [TB_DEP_NEAREST] = "nearest",
    [TB_DEP_SPREAD] = "spread",
    [TB_DEP_RANDOM_NEAREST] = "random_nearest",
    [TB_DEP_RANDOM_SPREAD] = "random_spread",
};
#define TB_NDEPS (sizeof tb_dep_names / sizeof tb_dep_names[0])

static const char *const tb_kernel_names[] = {
    [TB_KERNEL_EMPTY] = "empty",
    [TB_KERNEL_BUSY_WAIT] = "busy_wait",
    [TB_KERNEL_MEMORY_BOUND] = "memory_bound",
    [TB_KERNEL_COMPUTE_BOUND] = "compute_bound",
    [TB_KERNEL_COMPUTE_BOUND2] = "compute_bound2",
    [TB_KERNEL_IO_BOUND] = "io_bound",
    [TB_KERNEL_LOAD_IMBALANCE] = "load_imbalance",
};
#define TB_NKERNELS (sizeof tb_kernel_names / sizeof tb_kernel_names[0])

/* Kernels of Task Bench this port leaves out (they need BLAS or are later
 * additions); naming them gets a clearer message than "unknown". */
static const char *const tb_kernels_not_ported[] = {"compute_dgemm", "memory_daxpy",
                                                    "compute_and_mem", "dist_imbalance"};

const char *tb_dep_name(tb_dep_t d)
{
    return (size_t)d < TB_NDEPS ? tb_dep_names[d] : "?";
}

const char *tb_kernel_name(tb_kernel_type_t k)
{
    return (size_t)k < TB_NKERNELS ? tb_kernel_names[k] : "?";
}

/* ------------------------------------------------ host-only: arguments */

static bool tb_needs_period(tb_dep_t d)
{
    return d == TB_DEP_SPREAD || d == TB_DEP_RANDOM_NEAREST || d == TB_DEP_RANDOM_SPREAD;
}

static void tb_graph_defaults(tb_graph_t *g, int64_t index)
{
    memset(g, 0, sizeof *g);
    g->graph_index = index;
    g->timesteps = 4;
    g->max_width = 4;
    g->dependence = TB_DEP_TRIVIAL;
    g->radix = 3;
    g->period = -1; /* 3 or 0 once the pattern is known */
    g->fraction_connected = 0.25;
    g->kernel.type = TB_KERNEL_EMPTY;
    g->kernel.iterations = 0;
    g->kernel.samples = 16;
    g->kernel.imbalance = 0;
    g->output_bytes_per_task = TB_RECORD_BYTES;
    g->scratch_bytes_per_task = 0;
    g->nb_fields = 0; /* the number of timesteps unless -field */
}

static void tb_usage(const char *prog, FILE *f)
{
    fprintf(f, "%s: Task Bench (ompc port)\n", prog);
    fprintf(f, "\nGeneral options:\n");
    fprintf(f, "  %-18s show this help message and exit\n", "-h");
    fprintf(f, "  %-18s number of nodes to use for estimating transfer statistics\n",
            "-nodes [INT]");
    fprintf(f, "  %-18s worker threads per node (informational)\n", "-worker [INT]");
    fprintf(f, "  %-18s enable verbose output\n", "-v, -vv");
    fprintf(f, "  %-18s print every task's dependences and exit\n", "-dump-deps");
    fprintf(f, "\nOptions for configuring the task graph:\n");
    fprintf(f, "  %-18s height of task graph\n", "-steps [INT]");
    fprintf(f, "  %-18s width of task graph\n", "-width [INT]");
    fprintf(f, "  %-18s dependency pattern (see available list below)\n", "-type [DEP]");
    fprintf(f, "  %-18s radix of dependency pattern (nearest, spread, random)\n",
            "-radix [INT]");
    fprintf(f, "  %-18s period of dependency pattern (spread, random)\n",
            "-period [INT]");
    fprintf(f, "  %-18s fraction of connected dependencies (random)\n",
            "-fraction [FLOAT]");
    fprintf(f, "  %-18s start configuring next task graph\n", "-and");
    fprintf(f, "\nOptions for configuring kernels:\n");
    fprintf(f, "  %-18s kernel type (see available list below)\n", "-kernel [KERNEL]");
    fprintf(f, "  %-18s number of iterations\n", "-iter [INT]");
    fprintf(f, "  %-18s output bytes per task\n", "-output [INT]");
    fprintf(f, "  %-18s scratch bytes per task (memory_bound)\n", "-scratch [INT]");
    fprintf(f, "  %-18s number of samples (memory_bound)\n", "-sample [INT]");
    fprintf(f, "  %-18s amount of load imbalance (load_imbalance)\n",
            "-imbalance [FLOAT]");
    fprintf(f, "  %-18s number of fields (output buffers per point)\n", "-field [INT]");
    fprintf(f, "\nSupported dependency patterns:\n");
    for (size_t i = 0; i < TB_NDEPS; ++i)
        fprintf(f, "  %s\n", tb_dep_names[i]);
    fprintf(f, "\nSupported kernel types:\n");
    for (size_t i = 0; i < TB_NKERNELS; ++i)
        fprintf(f, "  %s\n", tb_kernel_names[i]);
}

static int tb_bad(const char *flag, const char *value, const char *why)
{
    fprintf(stderr, "error: Invalid flag \"%s %s\": %s\n", flag, value, why);
    return 2;
}

static int tb_parse_int(const char *flag, const char *s, int64_t min, int64_t max,
                        int64_t *v_p)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE)
        return tb_bad(flag, s, "expected an integer");
    if (v < min || v > max) {
        fprintf(stderr,
                "error: Invalid flag \"%s %s\": must be >= %" PRId64 " and <= %" PRId64
                "\n",
                flag, s, min, max);
        return 2;
    }
    *v_p = v;
    return 0;
}

static int tb_parse_real(const char *flag, const char *s, double min, double max,
                         double *v_p)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE)
        return tb_bad(flag, s, "expected a number");
    if (!(v >= min && v <= max)) {
        fprintf(stderr, "error: Invalid flag \"%s %s\": must be >= %g and <= %g\n", flag,
                s, min, max);
        return 2;
    }
    *v_p = v;
    return 0;
}

/* Task Bench's App::check, plus what this port needs to stay in range.
 * Each message names the flag to change. */
static int tb_graph_check(const tb_graph_t *g)
{
    const char *name = tb_dep_name(g->dependence);
    int64_t gi = g->graph_index;
    if (tb_needs_period(g->dependence) && g->period == 0) {
        fprintf(stderr,
                "error: graph %" PRId64 ": type \"%s\" requires a non-zero "
                "period (specify with -period)\n",
                gi, name);
        return 2;
    }
    if (!tb_needs_period(g->dependence) && g->period != 0) {
        fprintf(stderr,
                "error: graph %" PRId64 ": type \"%s\" does not support "
                "user-configurable period (-period)\n",
                gi, name);
        return 2;
    }
    /* Task Bench's bound: later dependence sets must not wrap around onto
     * earlier offsets (it also divides by the radix here, so -radix 0
     * crashes it; with no offsets there is nothing to bound). */
    if ((g->dependence == TB_DEP_SPREAD || g->dependence == TB_DEP_RANDOM_SPREAD) &&
        g->radix > 0) {
        int64_t spread = (g->max_width + g->radix - 1) / g->radix;
        if (g->period > spread) {
            fprintf(stderr,
                    "error: graph %" PRId64 ": type \"%s\" requires a period "
                    "that is at most %" PRId64 " (-period, -width, -radix)\n",
                    gi, name, spread);
            return 2;
        }
    }
    /* Slices under 16 bytes would copy over the scratch marker that
     * tb_execute_point checks (Task Bench then fails its assertion). */
    if (g->kernel.type == TB_KERNEL_MEMORY_BOUND &&
        (g->kernel.samples <= 0 ||
         g->scratch_bytes_per_task / (size_t)g->kernel.samples < 16)) {
        fprintf(stderr,
                "error: graph %" PRId64 ": kernel \"memory_bound\" needs "
                "-sample > 0 and -scratch >= 16 * -sample (got -scratch %zu "
                "-sample %d)\n",
                gi, g->scratch_bytes_per_task, (int)g->kernel.samples);
        return 2;
    }
    return 0;
}

int tb_app_parse_ex(tb_app_t *app, int argc, char **argv, unsigned flags)
{
    memset(app, 0, sizeof *app);
    int32_t cap = 4;
    app->graphs = malloc((size_t)cap * sizeof *app->graphs);
    if (!app->graphs) {
        fprintf(stderr, "error: out of memory parsing the command line\n");
        return 2;
    }
    tb_graph_t *g = &app->graphs[0];
    tb_graph_defaults(g, 0);
    app->ngraphs = 1;
    int rc = 0;

    /* Task Bench's flags are words after one dash (-steps 4): getopt_long_only,
     * returning non-options in place ("-" first, so that -and splits the
     * graphs where it stands) and leaving messages to this function (":"
     * and opterr). */
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"dump-deps", no_argument, NULL, 'D'},
        {"skip-graph-validation", no_argument, NULL, 'S'},
        {"and", no_argument, NULL, 'A'},
        {"nodes", required_argument, NULL, 'V'},
        {"worker", required_argument, NULL, 'V'},
        {"steps", required_argument, NULL, 'V'},
        {"width", required_argument, NULL, 'V'},
        {"type", required_argument, NULL, 'V'},
        {"radix", required_argument, NULL, 'V'},
        {"period", required_argument, NULL, 'V'},
        {"fraction", required_argument, NULL, 'V'},
        {"kernel", required_argument, NULL, 'V'},
        {"iter", required_argument, NULL, 'V'},
        {"output", required_argument, NULL, 'V'},
        {"scratch", required_argument, NULL, 'V'},
        {"sample", required_argument, NULL, 'V'},
        {"imbalance", required_argument, NULL, 'V'},
        {"field", required_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 0; /* glibc: start over, this may not be the first parse */
    while (rc == 0) {
        int at = optind > 0 ? optind : 1, li = -1;
        int c = getopt_long_only(argc, argv, "-:hv", longopts, &li);
        if (c == -1)
            break;
        /* Task Bench takes no abbreviation (-st for -steps): a long option
         * must be written out, else it is as unknown as any other word. */
        if (li >= 0 && c != ':') {
            const char *w = argv[at] + 1 + (argv[at][1] == '-');
            size_t n = strcspn(w, "=");
            if (n != strlen(longopts[li].name) || strncmp(w, longopts[li].name, n) != 0)
                c = '?';
        }
        const char *a = argv[at];
        char flag[32] = "";
        if (li >= 0)
            snprintf(flag, sizeof flag, "-%s", longopts[li].name);
        int64_t iv = 0;
        double dv = 0;
        if (c == 'h') {
            tb_usage(argc > 0 ? argv[0] : "task_bench", stdout);
            tb_app_free(app);
            exit(0);
        } else if (c == 'v') { /* -v, and -vv as two of them */
            app->verbose = true;
            continue;
        } else if (c == 'D') {
            app->dump_deps = true;
            continue;
        } else if (c == 'S') {
            continue; /* Task Bench's debug-build check; nothing to skip */
        } else if (c == 'A') {
            if (app->ngraphs >= TB_MAX_GRAPHS) {
                fprintf(stderr, "error: too many graphs (-and): at most %d\n",
                        TB_MAX_GRAPHS);
                rc = 2;
                break;
            }
            if (app->ngraphs == cap) {
                tb_graph_t *more = realloc(app->graphs, (size_t)cap * 2 * sizeof *more);
                if (!more) {
                    fprintf(stderr, "error: out of memory parsing -and\n");
                    rc = 2;
                    break;
                }
                app->graphs = more;
                cap *= 2;
            }
            g = &app->graphs[app->ngraphs];
            tb_graph_defaults(g, app->ngraphs);
            app->ngraphs++;
            continue;
        } else if (c == ':') {
            fprintf(stderr, "error: Flag \"%s\" requires an argument\n", a);
            rc = 2;
            break;
        } else if (c != 'V') {
            /* An unknown word (c == 1 for one without a dash), or an
             * unknown letter in a group of them (-vx: optopt). */
            if (flags & TB_PARSE_IGNORE_UNKNOWN)
                continue;
            if (c == '?' && optopt && li < 0)
                fprintf(stderr, "error: Unknown flag \"-%c\" (-h lists the flags)\n",
                        optopt);
            else
                fprintf(stderr, "error: Unknown flag \"%s\" (-h lists the flags)\n", a);
            rc = 2;
            break;
        }
        const char *v = optarg;
        a = flag;

        if (!strcmp(a, "-nodes")) {
            if ((rc = tb_parse_int(a, v, 1, INT32_MAX, &iv)) == 0)
                app->nodes = (int32_t)iv;
        } else if (!strcmp(a, "-worker")) {
            if ((rc = tb_parse_int(a, v, 1, INT32_MAX, &iv)) == 0)
                app->workers = (int32_t)iv;
        } else if (!strcmp(a, "-steps")) {
            if ((rc = tb_parse_int(a, v, 1, TB_MAX_TIMESTEPS - 1, &iv)) == 0)
                g->timesteps = iv;
        } else if (!strcmp(a, "-width")) {
            /* point indices and 2*point (tree) stay far from overflow */
            if ((rc = tb_parse_int(a, v, 1, INT64_C(1) << 40, &iv)) == 0)
                g->max_width = iv;
        } else if (!strcmp(a, "-radix")) {
            if ((rc = tb_parse_int(a, v, 0, INT64_C(1) << 40, &iv)) == 0)
                g->radix = iv;
        } else if (!strcmp(a, "-period")) {
            if ((rc = tb_parse_int(a, v, 0, INT64_C(1) << 40, &iv)) == 0)
                g->period = iv;
        } else if (!strcmp(a, "-iter")) {
            if ((rc = tb_parse_int(a, v, 0, INT64_C(1) << 53, &iv)) == 0)
                g->kernel.iterations = iv;
        } else if (!strcmp(a, "-output")) {
            if ((rc = tb_parse_int(a, v, TB_RECORD_BYTES, INT64_C(1) << 40, &iv)) == 0)
                g->output_bytes_per_task = (size_t)iv;
        } else if (!strcmp(a, "-scratch")) {
            if ((rc = tb_parse_int(a, v, 0, INT64_C(1) << 40, &iv)) == 0) {
                if (iv % 8 != 0)
                    rc = tb_bad(a, v, "must be a multiple of 8");
                else
                    g->scratch_bytes_per_task = (size_t)iv;
            }
        } else if (!strcmp(a, "-sample")) {
            if ((rc = tb_parse_int(a, v, 0, INT32_MAX, &iv)) == 0)
                g->kernel.samples = (int32_t)iv;
        } else if (!strcmp(a, "-field")) {
            if ((rc = tb_parse_int(a, v, 1, INT32_MAX, &iv)) == 0)
                g->nb_fields = (int32_t)iv;
        } else if (!strcmp(a, "-fraction")) {
            if ((rc = tb_parse_real(a, v, 0, 1, &dv)) == 0)
                g->fraction_connected = dv;
        } else if (!strcmp(a, "-imbalance")) {
            if ((rc = tb_parse_real(a, v, 0, 2, &dv)) == 0)
                g->kernel.imbalance = dv;
        } else if (!strcmp(a, "-type")) {
            size_t k = 0;
            while (k < TB_NDEPS && strcmp(v, tb_dep_names[k]) != 0)
                ++k;
            if (k == TB_NDEPS)
                rc = tb_bad(a, v, "unknown dependence type (-h lists them)");
            else
                g->dependence = (tb_dep_t)k;
        } else if (!strcmp(a, "-kernel")) {
            size_t k = 0;
            while (k < TB_NKERNELS && strcmp(v, tb_kernel_names[k]) != 0)
                ++k;
            bool later = false;
            for (size_t j = 0;
                 j < sizeof tb_kernels_not_ported / sizeof *tb_kernels_not_ported; ++j)
                later = later || !strcmp(v, tb_kernels_not_ported[j]);
            if (later)
                rc = tb_bad(a, v, "kernel not supported by this port");
            else if (k == TB_NKERNELS)
                rc = tb_bad(a, v, "unknown kernel (-h lists them)");
            else
                g->kernel.type = (tb_kernel_type_t)k;
        }
    }

    /* What follows "--" (getopt's end of the flags) is no flag either. */
    if (rc == 0 && optind < argc && !(flags & TB_PARSE_IGNORE_UNKNOWN)) {
        fprintf(stderr, "error: Unknown flag \"%s\" (-h lists the flags)\n",
                argv[optind]);
        rc = 2;
    }
    for (int32_t i = 0; i < app->ngraphs && rc == 0; ++i) {
        tb_graph_t *gi = &app->graphs[i];
        if (gi->period < 0)
            gi->period = tb_needs_period(gi->dependence) ? 3 : 0;
        if (gi->nb_fields == 0)
            gi->nb_fields = (int32_t)tb_min(gi->timesteps, INT32_MAX);
        rc = tb_graph_check(gi);
    }
    if (rc != 0) {
        tb_app_free(app);
        return rc;
    }
    return 0;
}

int tb_app_parse(tb_app_t *app, int argc, char **argv)
{
    return tb_app_parse_ex(app, argc, argv, 0);
}

void tb_app_free(tb_app_t *app)
{
    free(app->graphs);
    app->graphs = NULL;
    app->ngraphs = 0;
}

/* ------------------------------------------------- host-only: printing */

/* " a<sep>b<sep>c" (first separator a space), nothing when n is 0. */
static void tb_print_points(FILE *f, const int64_t *pts, size_t n, const char *sep)
{
    for (size_t k = 0; k < n; ++k)
        fprintf(f, "%s%" PRId64, k > 0 ? sep : " ", pts[k]);
}

void tb_app_dump_deps(const tb_app_t *app, FILE *f)
{
    for (int32_t gi = 0; gi < app->ngraphs; ++gi) {
        const tb_graph_t *g = &app->graphs[gi];
        size_t cap = tb_max_dependencies(g);
        int64_t *deps = malloc((cap > 0 ? cap : 1) * sizeof *deps);
        if (!deps) {
            fprintf(stderr, "tb_app_dump_deps: out of memory\n");
            abort();
        }
        if (gi > 0)
            fprintf(f, "graph %d\n", (int)gi);
        for (int64_t t = 1; t < g->timesteps; ++t) {
            int64_t off = tb_offset_at_timestep(g, t);
            int64_t w = tb_width_at_timestep(g, t);
            for (int64_t p = off; p < off + w; ++p) {
                size_t n = tb_dependencies(g, t, p, deps, cap);
                fprintf(f, "%" PRId64 " %" PRId64 ":", t, p);
                tb_print_points(f, deps, n < cap ? n : cap, ",");
                fputc('\n', f);
            }
        }
        free(deps);
    }
}

void tb_app_display(const tb_app_t *app, FILE *f)
{
    fprintf(f, "Running Task Benchmark\n");
    fprintf(f, "  Configuration:\n");
    for (int32_t gi = 0; gi < app->ngraphs; ++gi) {
        const tb_graph_t *g = &app->graphs[gi];
        fprintf(f, "    Task Graph %d:\n", (int)gi + 1);
        fprintf(f, "      Time Steps: %" PRId64 "\n", g->timesteps);
        fprintf(f, "      Max Width: %" PRId64 "\n", g->max_width);
        fprintf(f, "      Dependence Type: %s\n", tb_dep_name(g->dependence));
        fprintf(f, "      Radix: %" PRId64 "\n", g->radix);
        fprintf(f, "      Period: %" PRId64 "\n", g->period);
        fprintf(f, "      Fraction Connected: %f\n", g->fraction_connected);
        fprintf(f, "      Kernel:\n");
        fprintf(f, "        Type: %s\n", tb_kernel_name(g->kernel.type));
        fprintf(f, "        Iterations: %" PRId64 "\n", g->kernel.iterations);
        fprintf(f, "        Samples: %d\n", (int)g->kernel.samples);
        fprintf(f, "        Imbalance: %f\n", g->kernel.imbalance);
        fprintf(f, "      Output Bytes: %zu\n", g->output_bytes_per_task);
        fprintf(f, "      Scratch Bytes: %zu\n", g->scratch_bytes_per_task);
        if (!app->verbose)
            continue;
        size_t cap = tb_max_dependencies(g);
        int64_t *deps = malloc((cap > 0 ? cap : 1) * sizeof *deps);
        if (!deps) {
            fprintf(stderr, "tb_app_display: out of memory\n");
            abort();
        }
        for (int64_t t = 0; t < g->timesteps; ++t) {
            int64_t off = tb_offset_at_timestep(g, t);
            int64_t w = tb_width_at_timestep(g, t);
            fprintf(f,
                    "      Timestep %" PRId64 " (offset %" PRId64 ", width %" PRId64
                    ", last offset %" PRId64 ", last width %" PRId64 "):\n",
                    t, off, w, tb_offset_at_timestep(g, t - 1),
                    tb_width_at_timestep(g, t - 1));
            fprintf(f, "        Points:");
            for (int64_t p = off; p < off + w; ++p)
                fprintf(f, " %" PRId64, p);
            fprintf(f, "\n        Dependencies:\n");
            for (int64_t p = off; p < off + w; ++p) {
                size_t n = tb_dependencies(g, t, p, deps, cap);
                fprintf(f, "          Point %" PRId64 ":", p);
                tb_print_points(f, deps, n < cap ? n : cap, " ");
                fputc('\n', f);
            }
        }
        free(deps);
    }
}

void tb_app_report(const tb_app_t *app, double elapsed_seconds, FILE *f)
{
    long long tasks = 0, deps = 0, local = 0, nonlocal = 0, flops = 0, bytes = 0,
              local_bytes = 0, nonlocal_bytes = 0;
    int64_t nodes = app->nodes;
    for (int32_t gi = 0; gi < app->ngraphs; ++gi) {
        const tb_graph_t *g = &app->graphs[gi];
        long long g_local = 0, g_nonlocal = 0;
        for (int64_t t = 0; t < g->timesteps; ++t) {
            int64_t off = tb_offset_at_timestep(g, t);
            int64_t w = tb_width_at_timestep(g, t);
            tasks += w;
            for (int64_t p = off; p < off + w; ++p) {
                flops += tb_flops_per_task(g, t, p);
                bytes += tb_bytes_per_task(g, t, p);
                tb_emit_t e;
                if (!tb_deps_begin(g, t, p, NULL, 0, &e))
                    continue;
                /* Task Bench's estimate: points are split into `nodes`
                 * equal blocks, a dependence inside p's block is local. */
                if (nodes > 0) {
                    int64_t node = p * nodes / g->max_width;
                    e.local_lo = node * g->max_width / nodes;
                    e.local_hi = (node + 1) * g->max_width / nodes - 1;
                }
                tb_pattern_emit(g, tb_dependence_set_at_timestep(g, t), p, +1, &e);
                deps += (long long)e.n;
                if (nodes > 0) {
                    g_local += e.n_local;
                    g_nonlocal += (long long)e.n - e.n_local;
                }
            }
        }
        local += g_local;
        nonlocal += g_nonlocal;
        local_bytes += g_local * (long long)g->output_bytes_per_task;
        nonlocal_bytes += g_nonlocal * (long long)g->output_bytes_per_task;
    }

    fprintf(f, "Total Tasks %lld\n", tasks);
    fprintf(f, "Total Dependencies %lld\n", deps);
    if (nodes > 0) {
        fprintf(f, "  Local Dependencies %lld (estimated)\n", local);
        fprintf(f, "  Nonlocal Dependencies %lld (estimated)\n", nonlocal);
        fprintf(f, "  Number of Nodes (used for estimate) %" PRId64 "\n", nodes);
    } else {
        fprintf(f, "  Unable to estimate local/nonlocal dependencies\n");
    }
    fprintf(f, "Total FLOPs %lld\n", flops);
    fprintf(f, "Total Bytes %lld\n", bytes);
    fprintf(f, "Elapsed Time %e seconds\n", elapsed_seconds);
    fprintf(f, "FLOP/s %e\n", (double)flops / elapsed_seconds);
    fprintf(f, "B/s %e\n", (double)bytes / elapsed_seconds);
    fprintf(f, "Transfer (estimated):\n");
    if (nodes > 0) {
        fprintf(f, "  Local Bytes %lld\n", local_bytes);
        fprintf(f, "  Nonlocal Bytes %lld\n", nonlocal_bytes);
        fprintf(f, "  Local Bandwidth %e B/s\n", (double)local_bytes / elapsed_seconds);
        fprintf(f, "  Nonlocal Bandwidth %e B/s\n",
                (double)nonlocal_bytes / elapsed_seconds);
    } else {
        fprintf(f, "  Unable to estimate local/nonlocal transfer\n");
    }
}
