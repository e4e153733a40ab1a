/* What the scheduler knows about the machine: per-kernel run times learnt
 * while the program runs (optionally kept across runs in OMPC_PERF_MODEL),
 * each executor's core count, and head <-> executor latency, bandwidth and
 * clock offset measured at start-up.  Also the end-of-run reports:
 * OMPC_STATS (with every rank's CPU time) and the gathering of OMPC_TRACE
 * events from every rank. */
#define _GNU_SOURCE
#include "tgt_graph.h"

#include "ompc_file.h"
#include "tgt_model_file.h"
#include "ompc_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int omp_get_max_threads(void) __attribute__((weak));

/* A learnt cost is the mean of the last few runs: kernels whose work
 * changes over time (adaptive codes) are followed, noise is damped. */
#define MODEL_WINDOW 8

typedef struct cost_cell {
    double mean;             /* seconds */
    uint32_t n;
} cost_cell_t;

/* Hop samples the model keeps (tgt_model_learn_hop). */
#define HOP_WINDOW 32
typedef struct hop_ring {
    uint32_t n, next;
    double v[HOP_WINDOW];
    double median;
} hop_ring_t;

/* The head's knowledge of the machine (tgt_graph.h's tgt_model_t).  mtx
 * guards what is learnt while the program runs; it is a leaf lock
 * (tgt_internal.h). */
struct tgt_model {
    pthread_mutex_t mtx;
    cost_cell_t *cells;      /* [kernel][executor] */
    /* [kernel][executor]: the kernel's time whole on that executor, as its
     * shares of split runs there showed (their teams' time over their part
     * of the work).  Not shared by executors alike: a busy or slow worker
     * must get smaller shares, and only its own shares show it. */
    cost_cell_t *share_cells;
    _Atomic bool *known;     /* [kernel]: some cell of its row has n > 0
                              * (set once, read without mtx) */
    int nk, ne;
    int64_t *cores;          /* per rank */
    double *lat, *ibw;       /* per executor */
    double hop;              /* learnt worker-to-worker hop, seconds */
    hop_ring_t fwd, lau;     /* samples: forwarded inputs, launch batches */
    uint64_t hop_samples;    /* forwarded inputs, for OMPC_STATS */
    uint64_t hop_launches;   /* launch batches, for OMPC_STATS */
    int64_t *offset;         /* per executor: its clock minus ours, ns */
    bool *same_clock;        /* per executor: shares our CLOCK_MONOTONIC */
    ev_fn_id_t fn_probe, fn_trace_prep, fn_trace_done, fn_cpu;
    tgt_wire_cpu_t *cpu;     /* per rank, OMPC_STATS (tgt_stats_gather) */
    bool *cpu_ok;            /* per rank: cpu[] was received */
    dm_stats_t base;         /* data moved by the calibration itself */
};

/* One per process: the public calls (tgt_graph.h) take no model. */
static tgt_model_t model = {.mtx = PTHREAD_MUTEX_INITIALIZER};

/* A hash of the running kernel's boot id (0 if unreadable).  Processes
 * under one kernel read the same CLOCK_MONOTONIC, so ranks that share a
 * host need no clock offset; a measured one is off by up to half a round
 * trip, enough to put a worker's events before their causes on a busy
 * node (docs/performance.md, "trace clocks"). */
static uint64_t boot_id_hash;
static pthread_once_t boot_once = PTHREAD_ONCE_INIT;

static void boot_hash_read(void)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return;
    char buf[64];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)buf[i];
        h *= 1099511628211ull;
    }
    boot_id_hash = n ? (h ? h : 1) : 0;
}

static uint64_t boot_hash(void)
{
    pthread_once(&boot_once, boot_hash_read);
    return boot_id_hash;
}

/* -------------------------------------------------- executor functions */
/* Result: {this rank's clock now, boot_hash()}. */
static ompc_status_t fn_probe(ev_exec_info_t *info)
{
    uint64_t r[2] = {ompc_now_ns(), boot_hash()};
    if (info->result_cap >= sizeof(r)) {
        memcpy(info->result, r, sizeof(r));
        info->result_size = sizeof(r);
    }
    return OMPC_OK;
}

/* The trace blob waits in registered memory until the head fetched it. */
static void *trace_blob;

static ompc_status_t fn_trace_prep(ev_exec_info_t *info)
{
    size_t size = 0;
    uint64_t out[2] = {0, 0};
    free(trace_blob);
    trace_blob = NULL;
    if (ompc_trace_serialize(&trace_blob, &size) == OMPC_OK && size > 0 &&
        ev_mem_register(info->ctx, trace_blob, size) == OMPC_OK) {
        out[0] = (uint64_t)(uintptr_t)trace_blob;
        out[1] = size;
    }
    if (info->result_cap < sizeof(out))
        return OMPC_ERR_INVALID;
    memcpy(info->result, out, sizeof(out));
    info->result_size = sizeof(out);
    return OMPC_OK;
}

static ompc_status_t fn_trace_done(ev_exec_info_t *info)
{
    if (trace_blob) {
        ev_mem_unregister(info->ctx, trace_blob);
        free(trace_blob);
        trace_blob = NULL;
    }
    return OMPC_OK;
}

_Static_assert(OMPC_CPU_NROLES ==
                   sizeof(((tgt_wire_cpu_t *)0)->role_ns) / sizeof(uint64_t),
               "the cpu reply carries one figure per thread role");

/* This rank's CPU figures (tgt_wire_cpu_t). */
static void cpu_here(tgt_wire_cpu_t *c_p)
{
    /* The kernels first: the process total, read after, covers them. */
    tgt_wire_cpu_t c = {.kernel_ns = atomic_load(&tgt_rt->kernel_ns),
                        .kernel_cpu_ns = atomic_load(&tgt_rt->kernel_cpu_ns),
                        .kernels = atomic_load(&tgt_rt->kernels_here)};
    ompc_cpu_sample_t s;
    ompc_cpu_sample(&s);
    c.user_ns = s.user_ns;
    c.sys_ns = s.sys_ns;
    c.vcsw = s.vcsw;
    c.ivcsw = s.ivcsw;
    memcpy(c.role_ns, s.role_ns, sizeof(c.role_ns));
    *c_p = c;
}

/* Result: tgt_wire_cpu_t.  Inline: it only reads clocks, and a handler
 * would count its own wake-up. */
static ompc_status_t fn_cpu(ev_exec_info_t *info)
{
    tgt_wire_cpu_t c;
    if (info->result_cap < sizeof(c))
        return OMPC_ERR_INVALID;
    cpu_here(&c);
    memcpy(info->result, &c, sizeof(c));
    info->result_size = sizeof(c);
    return OMPC_OK;
}

ompc_status_t tgt_model_fn_register(void)
{
    ompc_status_t st = ev_fn_register(tgt_rt->ev, "tgt.probe", fn_probe, EV_FN_INLINE,
                                      &model.fn_probe);
    if (st == OMPC_OK)
        st = ev_fn_register(tgt_rt->ev, "tgt.trace_prep", fn_trace_prep, 0,
                            &model.fn_trace_prep);
    if (st == OMPC_OK)
        st = ev_fn_register(tgt_rt->ev, "tgt.trace_done", fn_trace_done, 0,
                            &model.fn_trace_done);
    if (st == OMPC_OK)
        st = ev_fn_register(tgt_rt->ev, "tgt.cpu", fn_cpu, EV_FN_INLINE, &model.fn_cpu);
    return st;
}

void tgt_model_share_cores(void)
{
    int64_t mine = tgt_rt->kernel_threads;
    if (mine <= 0)
        mine = omp_get_max_threads ? omp_get_max_threads() : 1;
    model.cores = tgt_rt_allgather(&mine, sizeof(mine), "core counts");
}

static int64_t exec_cores(int e)
{
    int64_t c = model.cores[dm_executor_rank(tgt_rt->dm, e)];
    return c > 0 ? c : 1;
}

/* ----------------------------------------------------------- the model */
/* Set when the model file was unusable: it is then left alone at exit. */
static bool model_skip_save;

static void model_entry(void *arg, const tgt_model_entry_t *me)
{
    (void)arg;
    for (int k = 0; k < model.nk; k++) {
        if (strcmp(tgt_rt->kernels[k].name, me->kernel) != 0)
            continue;
        for (int e = 0; e < model.ne; e++)
            if (exec_cores(e) == me->cores) {
                cost_cell_t *c = &model.cells[(size_t)k * (size_t)model.ne + (size_t)e];
                c->mean = me->mean;
                c->n = (uint32_t)(me->runs < MODEL_WINDOW ? me->runs : MODEL_WINDOW);
            }
    }
}

static void model_warn(void *arg, const char *msg)
{
    (void)arg;
    ompc_warn("%s", msg);
}

static void model_load(const char *path)
{
    /* O_NONBLOCK: opening a FIFO without a writer must not hang start-up;
     * fstat then refuses anything but a regular file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno != ENOENT)
            ompc_warn("OMPC_PERF_MODEL=%s: cannot read it (%s); learning from "
                      "scratch",
                      path, strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        ompc_warn("OMPC_PERF_MODEL=%s: cannot examine it (%s); neither read "
                  "nor written",
                  path, strerror(errno));
        model_skip_save = true;
        close(fd);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        ompc_warn("OMPC_PERF_MODEL=%s is %s, not a regular file; neither read "
                  "nor written (set it to a file's path)",
                  path,
                  S_ISFIFO(st.st_mode)                         ? "a FIFO"
                  : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                  : S_ISDIR(st.st_mode)                        ? "a directory"
                                                               : "something else");
        model_skip_save = true;
        close(fd);
        return;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        ompc_warn("OMPC_PERF_MODEL=%s: cannot read it (%s); learning from "
                  "scratch",
                  path, strerror(errno));
        close(fd);
        return;
    }
    tgt_model_reader_t rd = {.entry = model_entry, .warn = model_warn};
    tgt_model_file_read(f, path, &rd);
    fclose(f);
}

static void model_save(const char *path)
{
    if (model_skip_save)
        return;
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) {
        ompc_warn("OMPC_PERF_MODEL=%s: cannot write it: %s", path, strerror(errno));
        return;
    }
    fprintf(f, "# ompc perf model 1: kernel\tcores\tmean seconds\truns\n");
    for (int k = 0; k < model.nk; k++) {
        /* One line per distinct core count: executors alike share it. */
        for (int e = 0; e < model.ne; e++) {
            bool seen = false;
            for (int p = 0; p < e; p++)
                seen |= exec_cores(p) == exec_cores(e);
            if (seen)
                continue;
            double sum = 0;
            uint64_t n = 0;
            for (int q = e; q < model.ne; q++) {
                cost_cell_t *c = &model.cells[(size_t)k * (size_t)model.ne + (size_t)q];
                if (exec_cores(q) == exec_cores(e) && c->n) {
                    sum += c->mean * c->n;
                    n += c->n;
                }
            }
            if (n)
                fprintf(f, "%s\t%lld\t%.9g\t%llu\n", tgt_rt->kernels[k].name,
                        (long long)exec_cores(e), sum / (double)n, (unsigned long long)n);
        }
    }
    if (fclose(f) != 0) {
        ompc_warn("OMPC_PERF_MODEL=%s: cannot write it: %s", path, strerror(errno));
        free(buf);
        return;
    }
    ompc_file_out_t o;
    if (ompc_file_replace_begin(&o, path) != OMPC_OK ||
        ompc_file_replace_commit(&o, ompc_file_write_all(o.fd, buf, size)) != OMPC_OK)
        ompc_warn("OMPC_PERF_MODEL: not saved: %s", o.why);
    free(buf);
}

double tgt_model_cost(const tgt_kernel_t *k, int e)
{
    int ki = (int)(k - tgt_rt->kernels);
    double def = (double)ompc_config_get()->default_cost_us * 1e-6;
    pthread_mutex_lock(&model.mtx);
    const cost_cell_t *row = &model.cells[(size_t)ki * (size_t)model.ne];
    /* Executors with as many cores share one estimate: the nodes of a
     * cluster are alike, and a worker whose first runs were slowed (a core
     * shared with the head, a noisy neighbour) must not be priced out for
     * good, since HEFT would then never run, nor measure, it again. */
    double v = 0, wsum = 0;
    for (int q = 0; q < model.ne; q++)
        if (row[q].n && exec_cores(q) == exec_cores(e)) {
            v += row[q].mean * (double)row[q].n;
            wsum += (double)row[q].n;
        }
    if (wsum > 0) {
        v /= wsum;
    } else {
        /* Seen elsewhere: scale by cores (kernels use parallel for over
         * the executor's cores).  Never seen: the default, as if measured
         * on the largest executor. */
        double sum = 0;
        int n = 0;
        int64_t maxc = 1;
        for (int q = 0; q < model.ne; q++) {
            if (exec_cores(q) > maxc)
                maxc = exec_cores(q);
            if (row[q].n) {
                sum += row[q].mean * (double)exec_cores(q) / (double)exec_cores(e);
                n++;
            }
        }
        v = n ? sum / n : def * (double)maxc / (double)exec_cores(e);
    }
    pthread_mutex_unlock(&model.mtx);
    return v;
}

bool tgt_model_known(const tgt_kernel_t *k)
{
    int ki = (int)(k - tgt_rt->kernels);
    /* Once known, always known (a cell's count only grows): every flush
     * asks this of every predecessor it places, so the answer yes takes no
     * lock. */
    if (atomic_load_explicit(&model.known[ki], memory_order_relaxed))
        return true;
    bool known = false;
    pthread_mutex_lock(&model.mtx);
    for (int e = 0; e < model.ne && !known; e++)
        known = model.cells[(size_t)ki * (size_t)model.ne + (size_t)e].n > 0;
    if (known)
        atomic_store_explicit(&model.known[ki], true, memory_order_relaxed);
    pthread_mutex_unlock(&model.mtx);
    return known;
}

/* model.mtx held: x joins the running mean of kernel k's cell for
 * executor e in table cells (the last MODEL_WINDOW samples weigh most). */
static void cell_add(cost_cell_t *cells, const tgt_kernel_t *k, int e, double x)
{
    size_t ki = (size_t)(k - tgt_rt->kernels);
    cost_cell_t *c = &cells[ki * (size_t)model.ne + (size_t)e];
    if (c->n < MODEL_WINDOW)
        c->n++;
    c->mean += (x - c->mean) / c->n;
}

void tgt_model_learn(const tgt_kernel_t *k, int e, double seconds)
{
    pthread_mutex_lock(&model.mtx);
    cell_add(model.cells, k, e, seconds);
    pthread_mutex_unlock(&model.mtx);
}

void tgt_model_learn_share(const tgt_kernel_t *k, int e, double part, double seconds)
{
    if (!model.share_cells || part <= 0 || seconds <= 0)
        return;
    pthread_mutex_lock(&model.mtx);
    cell_add(model.share_cells, k, e, seconds / part);
    pthread_mutex_unlock(&model.mtx);
}

double tgt_model_speed(const tgt_kernel_t *k, int e)
{
    double v = 0;
    if (model.share_cells) {
        int ki = (int)(k - tgt_rt->kernels);
        pthread_mutex_lock(&model.mtx);
        const cost_cell_t *c =
            &model.share_cells[(size_t)ki * (size_t)model.ne + (size_t)e];
        v = c->n ? c->mean : 0;
        pthread_mutex_unlock(&model.mtx);
    }
    if (v <= 0)
        v = tgt_model_cost(k, e);
    return v > 0 ? 1 / v : 1e9;
}

/* The probe's latency is measured with every rank idle; in a running graph
 * a hop also waits for the peer's gate and kernel threads to get a core,
 * which under load costs several times the probe (docs/performance.md,
 * "the cost model under load").  Once hops were measured, the slower of
 * the two counts. */
double tgt_model_lat(int e)
{
    if (!model.lat)
        return 0;
    pthread_mutex_lock(&model.mtx);
    double v = model.lat[e];
    if ((model.fwd.n || model.lau.n) && model.hop > v)
        v = model.hop;
    pthread_mutex_unlock(&model.mtx);
    return v;
}

/* The median of the last HOP_WINDOW samples: a hop's cost changes with the
 * load, and slow outliers must not swing placement.  (A mean did: on a
 * crowded node a consumer's gate now and then waits milliseconds for a
 * core, and a few such samples priced a hop far above its median and
 * piled tasks on one worker; docs/performance.md, "the cost model under
 * load".) */
static int cmp_double(const void *a, const void *b);
static void hop_ring_add(hop_ring_t *r, double seconds)
{
    double tmp[HOP_WINDOW];
    r->v[r->next] = seconds;
    r->next = (r->next + 1) % HOP_WINDOW;
    if (r->n < HOP_WINDOW)
        r->n++;
    memcpy(tmp, r->v, r->n * sizeof(double));
    qsort(tmp, r->n, sizeof(double), cmp_double);
    r->median = tmp[r->n / 2];
}

/* Forwarded inputs are what HEFT prices: one worker's output reaching
 * another that waits for it.  A launch batch (head to worker) stands in
 * only until a few of those were seen: it also carries the head's own
 * delays, milliseconds for half of them on a crowded node. */
#define HOP_MIN_FORWARDED 8
void tgt_model_learn_hop(double seconds, bool launch)
{
    pthread_mutex_lock(&model.mtx);
    hop_ring_add(launch ? &model.lau : &model.fwd, seconds);
    model.hop = model.fwd.n >= HOP_MIN_FORWARDED || !model.lau.n ? model.fwd.median
                                                                 : model.lau.median;
    if (launch)
        model.hop_launches++;
    else
        model.hop_samples++;
    pthread_mutex_unlock(&model.mtx);
}
double tgt_model_inv_bw(int e) { return model.ibw ? model.ibw[e] : 0; }
int64_t tgt_model_clock_offset(int e) { return model.offset ? model.offset[e] : 0; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Round trips of a tiny execute give latency and clock offset (from the
 * fastest one); pushing a 1 MiB buffer to the executor gives bandwidth. */
static void calibrate(int e)
{
    int rank = dm_executor_rank(tgt_rt->dm, e);
    if (rank == 0) {
        model.lat[e] = 0;
        model.ibw[e] = 1.0 / 10e9;
        return;
    }
    uint64_t best = UINT64_MAX;
    uint64_t remote[2] = {0, 0}; /* the last reply: {clock, boot_hash()} */
    for (int i = 0; i < 8; i++) {
        uint64_t t0 = ompc_now_ns();
        ev_handle_t *h = NULL;
        ompc_status_t st = ev_finish(ev_execute(tgt_rt->ev, rank, model.fn_probe, NULL, 0,
                                                remote, sizeof(remote), &h),
                                     h);
        uint64_t t1 = ompc_now_ns();
        if (st != OMPC_OK)
            ompc_fatal("probing rank %d failed: %s", rank, ompc_status_str(st));
        if (t1 - t0 < best) {
            best = t1 - t0;
            model.offset[e] = (int64_t)remote[0] - (int64_t)(t0 + (t1 - t0) / 2);
        }
    }
    model.same_clock[e] = remote[1] != 0 && remote[1] == boot_hash();
    if (model.same_clock[e])
        model.offset[e] = 0;
    model.lat[e] = (double)best * 0.5e-9;
    const size_t bytes = 1 << 20;
    char *src = calloc(1, bytes);
    dm_buf_t *b = NULL;
    if (!src || dm_alloc(tgt_rt->dm, bytes, &b) != OMPC_OK)
        ompc_fatal("out of memory calibrating the network");
    double tbest = 1e30;
    for (int i = 0; i < 3; i++) {
        dm_write(tgt_rt->dm, b, 0, src, bytes);
        uint64_t t0 = ompc_now_ns();
        dm_acquire(tgt_rt->dm, e, &b, 1);
        double t = (double)(ompc_now_ns() - t0) * 1e-9;
        if (t < tbest)
            tbest = t;
    }
    dm_free(tgt_rt->dm, b);
    free(src);
    double t = tbest - 2 * model.lat[e];
    if (t < 1e-7)
        t = 1e-7;
    model.ibw[e] = t / (double)bytes;
}

void tgt_model_init(void)
{
    model.nk = tgt_rt->nkernels;
    model.ne = dm_num_executors(tgt_rt->dm);
    model.cells = calloc((size_t)(model.nk ? model.nk : 1) * (size_t)model.ne,
                         sizeof(cost_cell_t));
    model.share_cells = calloc((size_t)(model.nk ? model.nk : 1) * (size_t)model.ne,
                               sizeof(cost_cell_t));
    model.known = calloc((size_t)(model.nk ? model.nk : 1), sizeof(*model.known));
    model.lat = calloc((size_t)model.ne, sizeof(double));
    model.ibw = calloc((size_t)model.ne, sizeof(double));
    model.offset = calloc((size_t)model.ne, sizeof(int64_t));
    model.same_clock = calloc((size_t)model.ne, sizeof(bool));
    if (!model.cells || !model.share_cells || !model.known || !model.lat || !model.ibw ||
        !model.offset || !model.same_clock)
        ompc_fatal("out of memory starting the cost model");
    for (int e = 0; e < model.ne; e++)
        calibrate(e);
    /* One probe per link on a busy node measures noise more than the
     * network (identical links measured several times apart:
     * docs/performance.md, "the cost model under load"), and HEFT then
     * shuns a worker for nothing: every link gets the median.  The links of one cluster are alike; heterogeneity the
     * model needs is in the workers' cores. */
    if (model.ne > 2) {
        double *tmp = malloc((size_t)model.ne * sizeof(double));
        if (!tmp)
            ompc_fatal("out of memory starting the cost model");
        double med[2];
        for (int k = 0; k < 2; k++) {
            memcpy(tmp, k ? model.ibw : model.lat, (size_t)model.ne * sizeof(double));
            qsort(tmp, (size_t)model.ne, sizeof(double), cmp_double);
            med[k] = tmp[model.ne / 2];
        }
        free(tmp);
        for (int e = 0; e < model.ne; e++)
            if (dm_executor_rank(tgt_rt->dm, e) != 0) {
                model.lat[e] = med[0];
                model.ibw[e] = med[1];
            }
    }
    dm_get_stats(tgt_rt->dm, &model.base);
    const char *path = ompc_config_get()->perf_model;
    if (path && *path)
        model_load(path);
    if (tgt_rt->info)
        for (int e = 0; e < model.ne; e++)
            fprintf(stderr,
                    "[ompc info] executor %d (rank %d): %lld cores, "
                    "latency %.1f us, bandwidth %.2f GB/s, clock %s%+.1f us\n",
                    e, dm_executor_rank(tgt_rt->dm, e), (long long)exec_cores(e),
                    model.lat[e] * 1e6, model.ibw[e] > 0 ? 1e-9 / model.ibw[e] : 0.0,
                    model.same_clock[e] ? "shared with the head " : "offset ",
                    (double)model.offset[e] * 1e-3);
}

void tgt_model_fini(void)
{
    const char *path = ompc_config_get()->perf_model;
    if (path && *path && model.cells)
        model_save(path);
}

/* ---------------------------------------------------------------- trace */
/* Head, before shutdown: fetch every other rank's events and write one
 * file on the head's clock. */
void tgt_trace_gather(void)
{
    char own[4096];
    const char *path = tgt_mpi_apps_path(ompc_config_get()->trace, own, sizeof(own));
    if (!path || !*path || !ompc_trace_on())
        return;
    int n = 0;
    void **blobs = calloc((size_t)tgt_rt->size, sizeof(void *));
    size_t *sizes = calloc((size_t)tgt_rt->size, sizeof(size_t));
    int64_t *offs = calloc((size_t)tgt_rt->size, sizeof(int64_t));
    if (!blobs || !sizes || !offs)
        ompc_fatal("out of memory gathering the trace");
    for (int e = 0; e < model.ne; e++) {
        int rank = dm_executor_rank(tgt_rt->dm, e);
        if (rank == 0)
            continue;
        uint64_t where[2] = {0, 0};
        ev_handle_t *h = NULL;
        ompc_status_t st = ev_finish(ev_execute(tgt_rt->ev, rank, model.fn_trace_prep,
                                                NULL, 0, where, sizeof(where), &h),
                                     h);
        if (st != OMPC_OK || where[1] == 0)
            continue;
        void *blob = malloc(where[1]);
        if (!blob)
            ompc_fatal("out of memory gathering the trace");
        h = NULL;
        st = ev_finish(ev_retrieve(tgt_rt->ev, rank, where[0], blob, where[1], &h), h);
        h = NULL;
        ev_finish(ev_execute(tgt_rt->ev, rank, model.fn_trace_done, NULL, 0, NULL, 0, &h),
                  h);
        if (st != OMPC_OK) {
            free(blob);
            ompc_warn("trace of rank %d lost: %s", rank, ompc_status_str(st));
            continue;
        }
        blobs[n] = blob;
        sizes[n] = where[1];
        offs[n] = -model.offset[e];
        n++;
    }
    ompc_status_t st = ompc_trace_write(path, (const void *const *)blobs, sizes, offs, n);
    /* OMPC_ERR_INVALID was reported by the writer, naming the cause. */
    if (st != OMPC_OK && st != OMPC_ERR_INVALID)
        ompc_warn("OMPC_TRACE=%s: cannot write the trace: %s", path, ompc_status_str(st));
    for (int i = 0; i < n; i++)
        free(blobs[i]);
    free(blobs);
    free(sizes);
    free(offs);
}

/* ---------------------------------------------------------------- stats */
void tgt_stats_gather(void)
{
    model.cpu = calloc((size_t)tgt_rt->size, sizeof(tgt_wire_cpu_t));
    model.cpu_ok = calloc((size_t)tgt_rt->size, sizeof(bool));
    if (!model.cpu || !model.cpu_ok) {
        ompc_warn("OMPC_STATS: out of memory; the workers' CPU times are left out");
        return;
    }
    for (int rank = 1; rank < tgt_rt->size; rank++) {
        ev_handle_t *h = NULL;
        ompc_status_t st = ev_finish(ev_execute(tgt_rt->ev, rank, model.fn_cpu, NULL, 0,
                                                &model.cpu[rank], sizeof(tgt_wire_cpu_t),
                                                &h),
                                     h);
        model.cpu_ok[rank] = st == OMPC_OK;
        if (st != OMPC_OK)
            ompc_warn("OMPC_STATS: CPU time of rank %d lost: %s", rank,
                      ompc_status_str(st));
    }
}

/* One rank's CPU line: with its kernels' run time and CPU time, and the
 * rest of its CPU, the runtime's share. */
static void cpu_print(int rank, const tgt_wire_cpu_t *c)
{
    char roles[256];
    size_t n = 0;
    uint64_t named = 0;
    for (int r = 0; r < OMPC_CPU_NROLES; r++) {
        n += (size_t)snprintf(roles + n, sizeof(roles) - n, "%s %.6f s, ",
                              ompc_cpu_role_names[r], (double)c->role_ns[r] * 1e-9);
        named += c->role_ns[r];
    }
    uint64_t total = c->user_ns + c->sys_ns;
    fprintf(stderr,
            "[ompc stats] cpu rank %d (%s): user %.6f s, system %.6f s, context "
            "switches %llu voluntary %llu involuntary; kernels %llu in %.6f s "
            "(CPU %.6f s), runtime %.6f s; threads: %sother %.6f s\n",
            rank, rank == 0 ? "head" : "worker", (double)c->user_ns * 1e-9,
            (double)c->sys_ns * 1e-9, (unsigned long long)c->vcsw,
            (unsigned long long)c->ivcsw, (unsigned long long)c->kernels,
            (double)c->kernel_ns * 1e-9, (double)c->kernel_cpu_ns * 1e-9,
            total > c->kernel_cpu_ns ? (double)(total - c->kernel_cpu_ns) * 1e-9 : 0.0,
            roles, total > named ? (double)(total - named) * 1e-9 : 0.0);
}

void tgt_stats_print(uint64_t t_shutdown0, uint64_t t_end)
{
    const tgt_graph_stats_t *g = tgt_graph_stats();
    double wall = (double)(t_end - tgt_rt->t_start_ns) * 1e-9;
    double startup = (double)(tgt_rt->t_ready_ns - tgt_rt->t_start_ns) * 1e-9;
    double sched = (double)g->sched_ns * 1e-9;
    double shutdown = (double)(t_end - t_shutdown0) * 1e-9;
    if (wall <= 0)
        wall = 1e-9;
    fprintf(stderr,
            "[ompc stats] wall %.6f s: start-up %.6f s (%.2f%%), "
            "scheduling %.6f s (%.2f%%), shutdown %.6f s (%.2f%%)\n",
            wall, startup, 100 * startup / wall, sched, 100 * sched / wall, shutdown,
            100 * shutdown / wall);
    fprintf(stderr,
            "[ompc stats] policy %s: %llu tasks (%llu kernels) in %llu "
            "flushes, %llu held back until a kernel's cost was measured\n",
            g->policy, (unsigned long long)g->nodes, (unsigned long long)g->kernels,
            (unsigned long long)g->flushes, (unsigned long long)g->held);
    fprintf(stderr,
            "[ompc stats] at most %llu task nodes in memory at once (done "
            "ones stay while a later task may still need ordering after them)\n",
            (unsigned long long)g->in_memory_peak);
    fprintf(stderr,
            "[ompc stats] %llu kernels ran away from their placement: another "
            "executor was writing a buffer they write\n",
            (unsigned long long)g->pin_moves);
    if (g->launch_msgs)
        fprintf(stderr,
                "[ompc stats] %llu kernels launched ahead in %llu messages, "
                "%llu completions in %llu messages\n",
                (unsigned long long)g->launches, (unsigned long long)g->launch_msgs,
                (unsigned long long)g->completions, (unsigned long long)g->done_msgs);
    for (int e = 0; e < model.ne; e++)
        fprintf(stderr, "[ompc stats] worker %d (rank %d, %lld cores): %llu tasks\n", e,
                dm_executor_rank(tgt_rt->dm, e), (long long)exec_cores(e),
                (unsigned long long)g->tasks_per_exec[e]);
    /* Device pages on demand: only when some kernel faulted, so that a
     * program that maps all it uses reads as before. */
    for (int e = 0; e < dm_num_executors(tgt_rt->dm); e++) {
        dm_page_stats_t ps;
        dm_page_stats_of(tgt_rt->dm, e, &ps);
        if (ps.faults)
            fprintf(stderr,
                    "[ompc stats] worker %d (rank %d): %llu page faults fetched %llu "
                    "bytes on demand (%llu faults, %llu bytes straight from another "
                    "worker), %llu bytes written back (a map clause would move them "
                    "with the kernel)\n",
                    e, dm_executor_rank(tgt_rt->dm, e), (unsigned long long)ps.faults,
                    (unsigned long long)ps.bytes_fetched,
                    (unsigned long long)ps.peer_faults,
                    (unsigned long long)ps.bytes_from_peers,
                    (unsigned long long)ps.bytes_written_back);
        if (ps.served_writes)
            fprintf(stderr,
                    "[ompc stats] worker %d (rank %d): %llu write-backs of %llu bytes "
                    "from copies served to other workers (written through pointers "
                    "by kernels that do not name them)\n",
                    e, dm_executor_rank(tgt_rt->dm, e),
                    (unsigned long long)ps.served_writes,
                    (unsigned long long)ps.bytes_from_served);
    }
    pthread_mutex_lock(&model.mtx);
    double hop = model.hop;
    uint64_t hops = model.hop_samples, hopl = model.hop_launches;
    pthread_mutex_unlock(&model.mtx);
    if (hops || hopl)
        fprintf(
            stderr,
            "[ompc stats] worker-to-worker hop %.1f us (learnt from %llu "
            "forwarded inputs and %llu launch batches; the idle probe said %.1f us)\n",
            hop * 1e6, (unsigned long long)hops, (unsigned long long)hopl,
            model.ne ? model.lat[0] * 1e6 : 0.0);
    dm_stats_t s;
    dm_get_stats(tgt_rt->dm, &s);
    fprintf(
        stderr,
        "[ompc stats] bytes head->worker %llu, worker->head %llu, "
        "worker->worker %llu in %llu transfers\n",
        (unsigned long long)(s.bytes_host_to_dev - model.base.bytes_host_to_dev),
        (unsigned long long)(s.bytes_dev_to_host - model.base.bytes_dev_to_host),
        (unsigned long long)(s.bytes_dev_to_dev - model.base.bytes_dev_to_dev),
        (unsigned long long)(s.transfers_dev_to_dev - model.base.transfers_dev_to_dev));
    tgt_wire_cpu_t head;
    cpu_here(&head);
    cpu_print(0, &head);
    for (int rank = 1; model.cpu && rank < tgt_rt->size; rank++)
        if (model.cpu_ok[rank])
            cpu_print(rank, &model.cpu[rank]);
    free(model.cpu);
    free(model.cpu_ok);
    model.cpu = NULL;
    model.cpu_ok = NULL;
}
