/* The runtime's state (tgt_rt) and the small helpers every file of
 * libomptarget-mpi/ uses: source locations, user-error messages, growing
 * arrays.  It calls no other file of the library, so that all of them may
 * call it. */
#define _GNU_SOURCE
#include "tgt_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

tgt_rt_t *tgt_rt;

bool tgt_ready(void) { return tgt_rt != NULL; }

/* This thread's calls in progress, and whether it is the one shutting
 * down (its own calls pass). */
static _Thread_local int64_t call_depth;
static _Thread_local bool closing_self;

void tgt_call_enter(void)
{
    /* Counted first, checked second; tgt_calls_close marks first and counts
     * second: one of the two sees the other. */
    atomic_fetch_add(&tgt_rt->calls_inside, 1);
    call_depth++;
    if (!atomic_load(&tgt_rt->closing) || closing_self || call_depth > 1)
        return;
    atomic_fetch_sub(&tgt_rt->calls_inside, 1);
    call_depth--;
    for (;;)
        pause();
}

void tgt_call_leave(void)
{
    call_depth--;
    atomic_fetch_sub(&tgt_rt->calls_inside, 1);
}

void tgt_calls_close(void)
{
    closing_self = true;
    atomic_store(&tgt_rt->closing, true);
    double limit_s = (double)ompc_config_get()->peer_timeout_ms / 1000.0;
    uint64_t t0 = ompc_now_ns();
    long nap_us = 50;
    while (atomic_load(&tgt_rt->calls_inside) > call_depth) {
        if ((double)(ompc_now_ns() - t0) > limit_s * 1e9) {
            ompc_warn("the program ends while %lld offloading call(s) on other "
                      "threads have not returned for %.0f s (OMPC_PEER_TIMEOUT); "
                      "shutting down anyway",
                      (long long)(atomic_load(&tgt_rt->calls_inside) - call_depth),
                      limit_s);
            return;
        }
        struct timespec ts = {0, nap_us * 1000};
        nanosleep(&ts, NULL);
        nap_us = nap_us < 5000 ? nap_us * 2 : 5000;
    }
}

const char *tgt_fmt_(const char *fmt, ...)
{
    static _Thread_local char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return buf;
}

const char *tgt_loc(const void *ident, char *buf, size_t cap)
{
    const tgt_ident_t *id = ident;
    if (!id || !id->psource || strncmp(id->psource, ";unknown", 8) == 0) {
        snprintf(buf, cap, "unknown location (compile with -g for one)");
        return buf;
    }
    /* ";file;function;line;column;;" */
    char file[160] = "", func[96] = "";
    int line = 0, col = 0;
    if (sscanf(id->psource, ";%159[^;];%95[^;];%d;%d", file, func, &line, &col) >= 3)
        snprintf(buf, cap, "%s:%d:%d (in %s)", file, line, col, func);
    else
        snprintf(buf, cap, "%s", id->psource);
    return buf;
}

void *tgt_rt_allgather(const void *mine, size_t len, const char *what)
{
    void *all = calloc((size_t)tgt_rt->size, len);
    if (!all)
        ompc_fatal("out of memory exchanging %s", what);
    if (ev_coll_allgather(tgt_rt->ev, mine, len, all) != OMPC_OK)
        ompc_fatal("cannot exchange %s at start-up", what);
    return all;
}

void *tgt_grow(void *arr, size_t *cap, size_t n, size_t elem, const char *what)
{
    if (n < *cap)
        return arr;
    size_t c = *cap ? 2 * *cap : 16;
    void *na = realloc(arr, c * elem);
    if (!na)
        ompc_fatal("out of memory: %s", what);
    *cap = c;
    return na;
}
