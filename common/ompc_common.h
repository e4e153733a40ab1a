/* ompc common layer: status codes, logging, and the one table of OMPC_*
 * configuration variables.  Every other layer depends on this one; this one
 * depends on nothing but libc and pthreads. */
#ifndef OMPC_COMMON_H
#define OMPC_COMMON_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One status type for the whole runtime: zero is success, positive means
 * "not finished yet", negative values are errors. */
typedef enum ompc_status {
    OMPC_OK = 0,
    OMPC_INPROGRESS = 1,
    OMPC_ERR_INVALID = -1,    /* bad argument from the caller */
    OMPC_ERR_NOMEM = -2,      /* allocation failed (local or remote) */
    OMPC_ERR_BAD_ADDR = -3,   /* remote address range not inside an allocation */
    OMPC_ERR_NO_FUNCTION = -4,/* execute of an unregistered function id */
    OMPC_ERR_MPI = -5,        /* an MPI call failed */
    OMPC_ERR_THREAD = -6,     /* a pthread call failed */
    OMPC_ERR_PROTOCOL = -7,   /* malformed or unexpected message */
    OMPC_ERR_TIMEOUT = -8,    /* a peer stopped responding */
    OMPC_ERR_SHUTDOWN = -9,   /* operation issued after shutdown started */
    OMPC_ERR_UNSUPPORTED = -10,
    OMPC_ERR_USER = -11,      /* user function reported failure */
} ompc_status_t;

const char *ompc_status_str(ompc_status_t st);

/* ---------------------------------------------------------------- logging */
typedef enum ompc_log_level {
    OMPC_LOG_ERROR = 0,
    OMPC_LOG_WARN,
    OMPC_LOG_INFO,
    OMPC_LOG_DEBUG,
    OMPC_LOG_TRACE, /* one line per MPI message: "-->" sent, "<--" received */
} ompc_log_level_t;

/* The rank shown in log lines; set once MPI is up (-1 before). */
void ompc_log_set_rank(int rank);
/* Name of the calling thread in log lines (copied, thread-local). */
void ompc_log_set_thread_name(const char *name);
int ompc_log_enabled(ompc_log_level_t level);
void ompc_log_emit(ompc_log_level_t level, const char *file, int line, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));

#define OMPC_LOG(lvl, ...)                                                               \
    do {                                                                                 \
        if (ompc_log_enabled(lvl))                                                       \
            ompc_log_emit(lvl, __FILE__, __LINE__, __VA_ARGS__);                         \
    } while (0)
#define ompc_error(...) OMPC_LOG(OMPC_LOG_ERROR, __VA_ARGS__)
#define ompc_warn(...) OMPC_LOG(OMPC_LOG_WARN, __VA_ARGS__)
#define ompc_info(...) OMPC_LOG(OMPC_LOG_INFO, __VA_ARGS__)
#define ompc_debug(...) OMPC_LOG(OMPC_LOG_DEBUG, __VA_ARGS__)
#define ompc_trace(...) OMPC_LOG(OMPC_LOG_TRACE, __VA_ARGS__)

/* Fatal errors end the whole job: the message is printed (always, whatever
 * the log level) and the registered abort hook runs (the event system
 * installs MPI_Abort on MPI_COMM_WORLD), falling back to abort(). */
typedef void (*ompc_abort_hook_t)(int code);
void ompc_set_abort_hook(ompc_abort_hook_t hook);
/* Runs in ompc_fatal before the abort hook: removes what this process
 * would otherwise leave behind (the job's other processes may be killed
 * without a chance to clean up).  Must not block or talk to other ranks. */
void ompc_set_fatal_cleanup(void (*cleanup)(void));
/* True once a fatal error started to end the job: exit handlers that would
 * talk to other ranks (MPI is being aborted) must not. */
bool ompc_aborting(void);
/* For an abort that printed its own message (the program's MPI_Abort):
 * from now on ompc_aborting() is true. */
void ompc_set_aborting(void);
_Noreturn void ompc_fatal_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define ompc_fatal(...) ompc_fatal_at(__FILE__, __LINE__, __VA_ARGS__)
/* For user mistakes: the message names the user's source location itself,
 * so the runtime's own file and line are left out. */
#define ompc_fatal_user(...) ompc_fatal_at(NULL, 0, __VA_ARGS__)

/* Internal invariants: compiled out with -DOMPC_NDEBUG. */
#ifdef OMPC_NDEBUG
#define OMPC_ASSERT(cond)                                                                \
    do {                                                                                 \
        (void)sizeof(cond);                                                              \
    } while (0)
#else
#define OMPC_ASSERT(cond)                                                                \
    do {                                                                                 \
        if (!(cond))                                                                     \
            ompc_fatal("internal invariant failed: %s", #cond);                          \
    } while (0)
#endif

/* ---------------------------------------------------------- configuration */
/* All OMPC_* environment variables, read once from one table. */
#define OMPC_WORKERS_NONE (-1) /* OMPC_WORKERS_PER_RANK=none: not an MPI program */
#define OMPC_WORKERS_NODE                                                                \
    (-2) /* OMPC_WORKERS_PER_RANK=node: one application rank per node */
typedef struct ompc_config {
    int64_t workers_per_rank; /* OMPC_WORKERS_NONE, OMPC_WORKERS_NODE or >= 0 */
    int64_t num_comms;
    int64_t num_handlers;
    int64_t chunk_size;
    int64_t chunk_window;
    int64_t inline_max;
    int64_t spin_us;         /* -1: auto (ev_spin_us says what it became) */
    int64_t poll_max_us;
    int64_t doorbell;
    int64_t doorbell_awake;  /* 0/1: no ring to a same-host peer whose gate is awake */
    int64_t peer_timeout_ms;
    int64_t device_va;
    int64_t device_keep;     /* bytes of freed buffers kept per executor */
    int64_t page_faults;     /* 0/1: fetch device pages on demand */
    int64_t fault_block;     /* bytes fetched per fault */
    int64_t info;
    int64_t supervise;       /* 0/1 */
    const char *scheduler;   /* a policy name, checked where the policy is
                              * looked up (the scheduler's table) */
    int64_t sched_seed;
    int64_t default_cost_us;
    int64_t sched_stay_pct;  /* HEFT's sched_graph_t.stay, in percent */
    int64_t sched_refine_pct; /* HEFT's sched_graph_t.refine, in percent */
    int64_t graph_window;
    int64_t dispatch_threads;
    int64_t head_threads;
    int64_t ahead;           /* 0/1 */
    int64_t split;           /* 0: off; -1: auto; N: over N executors */
    int64_t split_keep;      /* 0/1 */
    int64_t gate_run_us;
    const char *perf_model;  /* "" when unset */
    const char *trace;       /* "" when unset */
    int64_t stats;
    int64_t log_level;
    int64_t print_config;
} ompc_config_t;

/* Parsed on first call (thread-safe); invalid values are fatal errors that
 * name the variable. */
const ompc_config_t *ompc_config_get(void);

typedef struct ompc_config_var {
    const char *name;
    const char *default_value;
    const char *help;
} ompc_config_var_t;

/* The parser behind ompc_config_get, for tests: reads every variable
 * through lookup (NULL: unset; getenv in the runtime) into *config_p (its
 * strings point into what lookup returned).  OMPC_ERR_INVALID for a bad
 * value, with why (whysz bytes) saying 'environment variable NAME="value":
 * reason'; never exits.  Reentrant. */
ompc_status_t ompc_config_parse(const char *(*lookup)(const char *name, void *arg),
                                void *arg, ompc_config_t *config_p, char *why,
                                size_t whysz);
/* The number of variables and the name of each (0..count-1), without
 * reading the environment. */
size_t ompc_config_count(void);
const char *ompc_config_name(size_t index);

/* The table itself, for printing (OMPC_PRINT_CONFIG, the README check). */
const ompc_config_var_t *ompc_config_table(size_t *count_p);
/* Print "NAME=value (default)" for every variable to stderr. */
void ompc_config_print(void);

/* Monotonic clock in nanoseconds. */
uint64_t ompc_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
