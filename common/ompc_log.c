/* Logging: one line per call, written with a single write(2) so that lines
 * from different threads and ranks do not interleave mid-line. */
#define _GNU_SOURCE
#include "ompc_common.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_rank = -1;
static _Thread_local char log_thread[16] = "main";
static _Atomic(ompc_abort_hook_t) abort_hook = NULL;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void ompc_log_set_rank(int rank) { atomic_store(&log_rank, rank); }

void ompc_log_set_thread_name(const char *name)
{
    snprintf(log_thread, sizeof(log_thread), "%s", name);
}

int ompc_log_enabled(ompc_log_level_t level)
{
    return (int64_t)level <= ompc_config_get()->log_level;
}

static void log_vemit(const char *level, const char *file, int line, const char *fmt,
                      va_list ap)
{
    char buf[1024];
    int n = snprintf(buf, sizeof(buf), "[ompc r%d %s] %s: ", atomic_load(&log_rank),
                     log_thread, level);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(buf)) {
        int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
        if (m > 0)
            n += m;
    }
    if ((size_t)n >= sizeof(buf) - 64)
        n = (int)sizeof(buf) - 64;
    if (file)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, " (%s:%d)",
                      strrchr(file, '/') ? strrchr(file, '/') + 1 : file, line);
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
}

void ompc_log_emit(ompc_log_level_t level, const char *file, int line, const char *fmt,
                   ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* Source positions only help at debug levels; user-facing messages stay
     * short. */
    log_vemit(level_names[level], level >= OMPC_LOG_DEBUG ? file : NULL, line, fmt, ap);
    va_end(ap);
}

void ompc_set_abort_hook(ompc_abort_hook_t hook) { atomic_store(&abort_hook, hook); }

static _Atomic bool aborting;
static void (*_Atomic fatal_cleanup)(void);

void ompc_set_fatal_cleanup(void (*cleanup)(void))
{
    atomic_store(&fatal_cleanup, cleanup);
}

bool ompc_aborting(void) { return atomic_load(&aborting); }
void ompc_set_aborting(void) { atomic_store(&aborting, true); }

_Noreturn void ompc_fatal_at(const char *file, int line, const char *fmt, ...)
{
    atomic_store(&aborting, true);
    va_list ap;
    va_start(ap, fmt);
    log_vemit("fatal", file, line, fmt, ap);
    va_end(ap);
    void (*cleanup)(void) = atomic_load(&fatal_cleanup);
    if (cleanup)
        cleanup();
    ompc_abort_hook_t hook = atomic_load(&abort_hook);
    if (hook)
        hook(3);
    abort();
}

uint64_t ompc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *ompc_status_str(ompc_status_t st)
{
    switch (st) {
    case OMPC_OK: return "ok";
    case OMPC_INPROGRESS: return "in progress";
    case OMPC_ERR_INVALID: return "invalid argument";
    case OMPC_ERR_NOMEM: return "out of memory";
    case OMPC_ERR_BAD_ADDR: return "address range outside any allocation";
    case OMPC_ERR_NO_FUNCTION: return "no such registered function";
    case OMPC_ERR_MPI: return "MPI error";
    case OMPC_ERR_THREAD: return "thread error";
    case OMPC_ERR_PROTOCOL: return "protocol error";
    case OMPC_ERR_TIMEOUT: return "peer timeout";
    case OMPC_ERR_SHUTDOWN: return "shut down";
    case OMPC_ERR_UNSUPPORTED: return "unsupported";
    case OMPC_ERR_USER: return "user function failed";
    }
    return "unknown status";
}
