/* The single table of OMPC_* environment variables.  Adding a variable means
 * adding a field to ompc_config_t and a row here; the README table is
 * checked against this table by a test (tests/common/config_doc). */
#define _GNU_SOURCE
#include "ompc_common.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* CFG_NAME: a non-empty word whose values another layer owns (the
 * scheduler's policies); that layer checks it where it looks it up. */
typedef enum { CFG_INT, CFG_BYTES, CFG_LEVEL, CFG_BOOL, CFG_NAME, CFG_STR } cfg_kind_t;

typedef struct cfg_row {
    ompc_config_var_t var;
    cfg_kind_t kind;
    size_t offset;
    int64_t min, max;
} cfg_row_t;

#define ROW(n, def, help, k, field, lo, hi)                                              \
    {{n, def, help}, k, offsetof(ompc_config_t, field), lo, hi}

static const cfg_row_t rows[] = {
    ROW("OMPC_WORKERS_PER_RANK", "none",
        "for MPI programs (they call MPI_Init): the workers each application "
        "rank gets, taken from the launcher's ranks in order (N ranks make "
        "N/(1+W) application ranks); node: the lowest rank of each node is an "
        "application rank and the node's other ranks its workers; none: the "
        "program is not an MPI program (rank 0 runs main, the others are its "
        "workers), and one that calls MPI_Init runs on one rank only "
        "(docs/mpi.md)",
        CFG_INT, workers_per_rank, 0, 1 << 20),
    ROW("OMPC_NUM_COMMS", "8",
        "communicators in the event pool; events pick one round-robin by tag", CFG_INT,
        num_comms, 1, 1024),
    ROW("OMPC_NUM_HANDLERS", "2",
        "handler threads per rank that run event work (execute functions)", CFG_INT,
        num_handlers, 1, 256),
    ROW("OMPC_CHUNK_SIZE", "1M",
        "transfers larger than this are split into chunks of this size", CFG_BYTES,
        chunk_size, 4096, (int64_t)1 << 30),
    ROW("OMPC_CHUNK_WINDOW", "16", "chunks of one transfer in flight at once", CFG_INT,
        chunk_window, 1, 64),
    ROW("OMPC_INLINE_MAX", "8K",
        "payloads up to this size travel inside the event notification", CFG_BYTES,
        inline_max, 0, (int64_t)1 << 20),
    ROW("OMPC_SPIN_US", "auto",
        "microseconds a thread polls without progress before backing off; "
        "auto: 200, or 0 on a node with more ranks than CPUs, for a rank "
        "bound to one CPU, and for the head where it shares its CPUs with "
        "workers (there a polling thread takes the core a kernel, another "
        "rank or its own rank's next thread needs); at most 10000: polling "
        "saves a wake-up of tens of microseconds, and longer only takes a "
        "core from kernels and other ranks",
        CFG_INT, spin_us, -1, 10000),
    ROW("OMPC_POLL_MAX_US", "500",
        "longest sleep between polls of an idle gate thread (microseconds, "
        "at most 1000000; with OMPC_DOORBELL=0 at most 10000, since every "
        "message may then wait out one such sleep)",
        CFG_INT, poll_max_us, 1, 1000000),
    ROW("OMPC_DOORBELL", "1",
        "1 wakes an idle rank's gate thread at once when an event reaches it "
        "(a datagram on a local socket, or UDP to another host); 0 leaves it "
        "to the gate's next poll (up to OMPC_POLL_MAX_US later)",
        CFG_BOOL, doorbell, 0, 1),
    ROW("OMPC_DOORBELL_AWAKE", "1",
        "1 leaves out the ring to a peer on the same host whose gate thread "
        "is awake (it publishes that in shared memory and polls once more "
        "before it sleeps), so a message to a busy rank costs no system "
        "call; 0 rings for every message to a rank that does not poll",
        CFG_BOOL, doorbell_awake, 0, 1),
    ROW("OMPC_PEER_TIMEOUT", "60",
        "seconds without any sign of life from a peer we wait on before the "
        "job is aborted (fractions allowed, e.g. 0.5; from 0.1 to 1e9: a "
        "healthy peer answers a ping from a gate thread that may be napping "
        "or waiting for a CPU)",
        CFG_INT, peer_timeout_ms, 100, 1000000000000),
    ROW("OMPC_DEVICE_VA", "64G",
        "virtual address range reserved on every rank for device memory "
        "(only touched pages use memory)",
        CFG_BYTES, device_va, (int64_t)1 << 30, (int64_t)1 << 46),
    ROW("OMPC_DEVICE_KEEP", "1G",
        "bytes of freed device buffers above 1 MiB each executor keeps "
        "mapped for the next buffer of the same size (a loop that maps and "
        "unmaps large arrays then skips the page faults); 0 gives their "
        "memory back at once",
        CFG_BYTES, device_keep, 0, (int64_t)1 << 46),
    ROW("OMPC_PAGE_FAULTS", "1",
        "1 lets a kernel on a worker reach device memory no clause names: "
        "a page it does not hold is fetched on demand from the valid copy "
        "of its buffer (docs/architecture.md); 0 ends the job at such an "
        "access, naming the kernel",
        CFG_BOOL, page_faults, 0, 1),
    ROW("OMPC_FAULT_BLOCK", "64K",
        "bytes fetched per page fault, from the faulting page on, within its "
        "buffer (rounded up to whole pages; from 4K to 64M)",
        CFG_BYTES, fault_block, 4096, (int64_t)1 << 26),
    ROW("OMPC_INFO", "0",
        "1 prints, per rank, what the offloading runtime maps, moves and runs", CFG_BOOL,
        info, 0, 1),
    ROW("OMPC_SUPERVISE", "1",
        "1 runs each rank started by a launcher under a small supervisor "
        "process that names the rank when a signal kills it (SIGKILL from "
        "the out-of-memory killer or the batch system cannot be caught)",
        CFG_BOOL, supervise, 0, 1),
    ROW("OMPC_SCHEDULER", "heft",
        "how the task graph is placed on workers at each flush: heft "
        "(earliest finish time from learnt costs), roundrobin, random, or "
        "locality (the worker already holding the most input data)",
        CFG_NAME, scheduler, 0, 0),
    ROW("OMPC_SCHED_SEED", "1", "seed of OMPC_SCHEDULER=random", CFG_INT, sched_seed, 0,
        INT64_MAX),
    ROW("OMPC_SCHED_DEFAULT_COST", "1000",
        "microseconds HEFT assumes for a kernel it has not seen run yet", CFG_INT,
        default_cost_us, 0, 1000000000),
    ROW("OMPC_SCHED_STAY", "0",
        "percent of a task's cost by which HEFT may let it finish later to "
        "keep it on the worker holding most of its inputs; HEFT then places "
        "each flush twice and keeps the schedule that moves fewer inputs "
        "unless it is longer (0: off; an experiment, see docs/performance.md)",
        CFG_INT, sched_stay_pct, 0, 10000),
    ROW("OMPC_SCHED_REFINE", "0",
        "after HEFT places a flush, move tasks (alone or two in exchange) to "
        "the worker holding most of their inputs where that moves fewer inputs "
        "and the flush's makespan stays within this percent of HEFT's (0: off; "
        "100: no longer, and so is 1-99; an experiment, see "
        "docs/performance.md)",
        CFG_INT, sched_refine_pct, 0, 10000),
    ROW("OMPC_GRAPH_WINDOW", "256",
        "recorded target tasks that force a flush (scheduling and dispatch) "
        "without waiting for a barrier",
        CFG_INT, graph_window, 1, 100000000),
    ROW("OMPC_DISPATCH_THREADS", "0",
        "head threads that move data and launch scheduled tasks (0: one per "
        "worker, at least 2, at most 16)",
        CFG_INT, dispatch_threads, 0, 256),
    ROW("OMPC_HEAD_THREADS", "0",
        "OpenMP threads of the head's parallel regions (0: 1 when the head "
        "shares its CPUs with workers and OMP_NUM_THREADS is unset, else "
        "the OpenMP default); at most 2 per CPU the head may run on: libomp "
        "cannot start many more there, and target tasks gain nothing from them",
        CFG_INT, head_threads, 0, 1024),
    ROW("OMPC_AHEAD", "1",
        "1 sends each target task to its worker as soon as the tasks it "
        "depends on have been sent (workers then wait for each other and "
        "move the data between themselves); 0 sends it once they are done",
        CFG_BOOL, ahead, 0, 1),
    ROW("OMPC_SPLIT", "off",
        "off runs every target region on one worker; N runs each `target teams "
        "distribute` loop over N workers at once, each running a contiguous "
        "share of the teams sized by its worker's measured speed, their writes merged "
        "and a reduction across teams "
        "combined with the compiler's combiner (a loop that writes outside its "
        "share runs unsplit, and OMPC_INFO says why); auto splits a loop over "
        "as many workers as the cost model predicts fastest, once its time is "
        "known, and runs it whole for a while after a split that did not gain",
        CFG_INT, split, 0, 4096),
    ROW("OMPC_SPLIT_KEEP", "1",
        "1 leaves what each share of a split loop wrote on its worker (the "
        "next split over the same workers fetches only the pages of other "
        "shares its kernel touches, and any other reader gathers the "
        "shares); 0 moves every share's writes to one worker after each "
        "split",
        CFG_BOOL, split_keep, 0, 1),
    ROW("OMPC_GATE_RUN_US", "50",
        "a worker's gate thread runs a task itself, when its last input "
        "arrives and nothing else runs there, if its kernel took less than "
        "this in every one of at least 4 runs (0: never); one run over 1 ms "
        "there bans the kernel from the gate. A crowded worker with one "
        "kernel slot runs every ready task on its gate whose kernel ran over "
        "1 ms in under 1 of 8 of its runs (at least 4), which saves a thread "
        "wake-up per task (0 turns this off too); one run there over 1 ms of "
        "CPU bans the kernel",
        CFG_INT, gate_run_us, 0, 1000000),
    ROW("OMPC_PERF_MODEL", "",
        "file of learnt kernel costs: loaded at start-up if it exists, "
        "saved at exit (empty: learn from scratch, save nothing)",
        CFG_STR, perf_model, 0, 0),
    ROW("OMPC_TRACE", "",
        "write a Chrome/Perfetto trace of the run to this file (rank 0 "
        "gathers every rank's events at exit)",
        CFG_STR, trace, 0, 0),
    ROW("OMPC_STATS", "0",
        "1 prints at exit: start-up, scheduling and shutdown overheads as "
        "fractions of wall time, tasks per worker, bytes moved, each rank's CPU time",
        CFG_BOOL, stats, 0, 1),
    ROW("OMPC_LOG_LEVEL", "warn",
        "error, warn, info, debug or trace (trace logs every MPI message)", CFG_LEVEL,
        log_level, 0, 4),
    ROW("OMPC_PRINT_CONFIG", "0", "1 prints the effective configuration at start-up",
        CFG_BOOL, print_config, 0, 1),
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static ompc_config_t config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* Writes the message of a bad value to why; returns OMPC_ERR_INVALID. */
static ompc_status_t cfg_bad(const char *name, const char *value, const char *reason,
                             char *why, size_t whysz)
{
    snprintf(why, whysz, "environment variable %s=\"%s\": %s", name, value, reason);
    return OMPC_ERR_INVALID;
}

static ompc_status_t cfg_parse(const cfg_row_t *row, const char *s, int64_t *v_p,
                               char *why, size_t whysz)
{
    if (row->kind == CFG_LEVEL) {
        static const char *const names[] = {"error", "warn", "info", "debug", "trace"};
        for (int i = 0; i < 5; i++)
            if (strcasecmp(s, names[i]) == 0) {
                *v_p = i;
                return OMPC_OK;
            }
        return cfg_bad(row->var.name, s, "expected error, warn, info, debug or trace",
                       why, whysz);
    }
    if (row->offset == offsetof(ompc_config_t, spin_us) && strcasecmp(s, "auto") == 0) {
        *v_p = -1;
        return OMPC_OK;
    }
    if (row->offset == offsetof(ompc_config_t, workers_per_rank)) {
        if (strcasecmp(s, "none") == 0 || strcasecmp(s, "node") == 0) {
            *v_p = strcasecmp(s, "none") == 0 ? OMPC_WORKERS_NONE : OMPC_WORKERS_NODE;
            return OMPC_OK;
        }
        char *end;
        errno = 0;
        long long w = strtoll(s, &end, 10);
        if (errno || end == s || *end || w < row->min || w > row->max) {
            char reason[96];
            snprintf(reason, sizeof(reason),
                     "expected none, node or an integer in [0, %lld]",
                     (long long)row->max);
            return cfg_bad(row->var.name, s, reason, why, whysz);
        }
        *v_p = w;
        return OMPC_OK;
    }
    if (row->offset == offsetof(ompc_config_t, split) &&
        (strcasecmp(s, "off") == 0 || strcasecmp(s, "auto") == 0)) {
        *v_p = strcasecmp(s, "off") == 0 ? 0 : -1;
        return OMPC_OK;
    }
    if (row->offset == offsetof(ompc_config_t, peer_timeout_ms)) {
        char *end;
        errno = 0;
        double secs = strtod(s, &end);
        if (errno || end == s || *end)
            return cfg_bad(row->var.name, s, "expected a number of seconds", why, whysz);
        /* Written so that NaN fails it too. */
        if (!(secs >= (double)row->min / 1e3 && secs <= (double)row->max / 1e3))
            return cfg_bad(row->var.name, s, "out of range [0.1, 1e9] seconds", why,
                           whysz);
        *v_p = (int64_t)(secs * 1000.0 + 0.5);
        return OMPC_OK;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s)
        return cfg_bad(row->var.name, s, "expected an integer", why, whysz);
    if (row->kind == CFG_BYTES && *end) {
        long long mult = 1;
        switch (*end) {
        case 'k':
        case 'K': mult = 1ll << 10; break;
        case 'm':
        case 'M': mult = 1ll << 20; break;
        case 'g':
        case 'G': mult = 1ll << 30; break;
        case 't':
        case 'T': mult = 1ll << 40; break;
        default:
            return cfg_bad(row->var.name, s,
                           "expected a size such as 4096, 64K, 4M or 1T", why, whysz);
        }
        end++;
        if (v > LLONG_MAX / mult)
            return cfg_bad(row->var.name, s, "size too large", why, whysz);
        /* No size is negative: below what the product can hold it is only
         * out of range, and must not wrap around into the range. */
        v = v < LLONG_MIN / mult ? LLONG_MIN : v * mult;
    }
    if (*end)
        return cfg_bad(row->var.name, s, "trailing characters", why, whysz);
    if (v < row->min || v > row->max) {
        char reason[128];
        if (row->offset == offsetof(ompc_config_t, spin_us))
            snprintf(reason, sizeof(reason), "expected auto or an integer in [0, %lld]",
                     (long long)row->max);
        else if (row->offset == offsetof(ompc_config_t, workers_per_rank))
            snprintf(reason, sizeof(reason),
                     "expected none, node or an integer in [0, %lld]",
                     (long long)row->max);
        else
            snprintf(reason, sizeof(reason), "out of range [%lld, %lld]",
                     (long long)row->min, (long long)row->max);
        return cfg_bad(row->var.name, s, reason, why, whysz);
    }
    *v_p = v;
    return OMPC_OK;
}

static ompc_config_var_t vars[NROWS];

ompc_status_t ompc_config_parse(const char *(*lookup)(const char *name, void *arg),
                                void *arg, ompc_config_t *config_p, char *why,
                                size_t whysz)
{
    ompc_config_t c;
    memset(&c, 0, sizeof(c));
    for (size_t i = 0; i < NROWS; i++) {
        const char *env = lookup(rows[i].var.name, arg);
        /* An empty string is a path's documented "none"; for a number it is
         * more likely a script's unset variable than a wish for the default. */
        if (env && !*env && rows[i].kind != CFG_STR) {
            char reason[160];
            snprintf(reason, sizeof(reason),
                     "empty value (unset the variable for "
                     "the default, %s)",
                     rows[i].var.default_value);
            return cfg_bad(rows[i].var.name, env, reason, why, whysz);
        }
        const char *s = env ? env : rows[i].var.default_value;
        if (rows[i].kind == CFG_STR || rows[i].kind == CFG_NAME) {
            const char *str = s;
            memcpy((char *)&c + rows[i].offset, &str, sizeof(str));
            continue;
        }
        int64_t v;
        ompc_status_t st = cfg_parse(&rows[i], s, &v, why, whysz);
        if (st != OMPC_OK)
            return st;
        memcpy((char *)&c + rows[i].offset, &v, sizeof(v));
    }
    if (!c.doorbell && c.poll_max_us > 10000) {
        char value[32];
        snprintf(value, sizeof(value), "%lld", (long long)c.poll_max_us);
        return cfg_bad("OMPC_POLL_MAX_US", value,
                       "out of range [1, 10000] with OMPC_DOORBELL=0 (every message "
                       "may wait out one sleep)",
                       why, whysz);
    }
    *config_p = c;
    return OMPC_OK;
}

static const char *cfg_getenv(const char *name, void *arg)
{
    (void)arg;
    return getenv(name);
}

static void cfg_load(void)
{
    for (size_t i = 0; i < NROWS; i++)
        vars[i] = rows[i].var;
    /* Config errors cannot use ompc_fatal: it reads the log level, which is
     * what is being parsed. */
    char why[512];
    if (ompc_config_parse(cfg_getenv, NULL, &config, why, sizeof(why)) != OMPC_OK) {
        fprintf(stderr, "[ompc] fatal: %s\n", why);
        exit(2);
    }
}

size_t ompc_config_count(void) { return NROWS; }

const char *ompc_config_name(size_t index)
{
    return index < NROWS ? rows[index].var.name : NULL;
}

const ompc_config_t *ompc_config_get(void)
{
    pthread_once(&config_once, cfg_load);
    return &config;
}

const ompc_config_var_t *ompc_config_table(size_t *count_p)
{
    ompc_config_get();
    *count_p = NROWS;
    return vars;
}

void ompc_config_print(void)
{
    const ompc_config_t *c = ompc_config_get();
    for (size_t i = 0; i < NROWS; i++) {
        if (rows[i].kind == CFG_STR) {
            const char *str;
            memcpy(&str, (const char *)c + rows[i].offset, sizeof(str));
            fprintf(stderr, "[ompc] %s=\"%s\" (default \"%s\")\n", rows[i].var.name, str,
                    rows[i].var.default_value);
            continue;
        }
        if (rows[i].kind == CFG_NAME) {
            const char *str;
            memcpy(&str, (const char *)c + rows[i].offset, sizeof(str));
            fprintf(stderr, "[ompc] %s=%s (default %s)\n", rows[i].var.name, str,
                    rows[i].var.default_value);
            continue;
        }
        int64_t v;
        memcpy(&v, (const char *)c + rows[i].offset, sizeof(v));
        if (rows[i].offset == offsetof(ompc_config_t, workers_per_rank) && v < 0) {
            fprintf(stderr, "[ompc] %s=%s (default %s)\n", rows[i].var.name,
                    v == OMPC_WORKERS_NODE ? "node" : "none", rows[i].var.default_value);
            continue;
        }
        fprintf(stderr, "[ompc] %s=%lld%s (default %s)\n", rows[i].var.name, (long long)v,
                rows[i].kind == CFG_LEVEL                                    ? " (level)"
                : rows[i].offset == offsetof(ompc_config_t, peer_timeout_ms) ? " ms"
                                                                             : "",
                rows[i].var.default_value);
    }
}
