/* Helpers shared by the event-system tests: checks that abort the whole job
 * with a message naming the rank and line, and a deterministic payload. */
#ifndef OMPC_EV_TEST_H
#define OMPC_EV_TEST_H

#include "ompc_ev.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Hydra drops output still in flight when a job aborts: pause first. */
static inline void t_abort(void)
{
    fflush(stderr);
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define T_CHECK(cond, ...)                                                               \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            int r_;                                                                      \
            MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                          \
            fprintf(stderr, "[test r%d] FAILED %s:%d: %s: ", r_, __FILE__, __LINE__,     \
                    #cond);                                                              \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            t_abort();                                                                   \
        }                                                                                \
    } while (0)

#define T_OK(expr)                                                                       \
    do {                                                                                 \
        ompc_status_t st_ = (expr);                                                      \
        T_CHECK(st_ == OMPC_OK, "%s returned %d (%s)", #expr, (int)st_,                  \
                ompc_status_str(st_));                                                   \
    } while (0)

/* Start an event and wait for it; evaluates to the event's final status. */
#define T_RUN(call_with_hp)                                                              \
    ({                                                                                   \
        ev_handle_t *h_ = NULL;                                                          \
        ompc_status_t s_ = (call_with_hp);                                               \
        if (s_ == OMPC_OK) {                                                             \
            s_ = ev_wait(h_);                                                            \
            ev_handle_release(h_);                                                       \
        }                                                                                \
        s_;                                                                              \
    })
#define HP (&h_)

/* A context with one registered function, started.  Workers serve until
 * the head's exit and return false (their main then returns 0); the head
 * gets true and the context. */
static inline bool t_ctx_one_fn(ev_ctx_t **ctx_p, const char *name, ev_fn_t fn,
                                unsigned flags, ev_fn_id_t *id_p)
{
    T_OK(ev_ctx_create(ctx_p));
    T_OK(ev_fn_register(*ctx_p, name, fn, flags, id_p));
    T_OK(ev_ctx_start(*ctx_p));
    if (ev_ctx_rank(*ctx_p) == 0)
        return true;
    T_OK(ev_ctx_serve(*ctx_p));
    ev_ctx_destroy(*ctx_p);
    return false;
}

/* Byte i of the pattern for (seed): any misplaced, stale or foreign byte
 * shows up as a mismatch. */
static inline unsigned char t_pattern(uint64_t seed, size_t i)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    return (unsigned char)x;
}

static inline void t_fill(void *buf, size_t n, uint64_t seed)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        p[i] = t_pattern(seed, i);
}

/* Index of the first byte that differs from the pattern, or n. */
static inline size_t t_verify(const void *buf, size_t n, uint64_t seed)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        if (p[i] != t_pattern(seed, i))
            return i;
    return n;
}

static inline uint64_t t_checksum(const void *buf, size_t n)
{
    const unsigned char *p = buf;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* A registered function for tests: args {addr, size}; result the checksum
 * of that memory on the executing rank. */
static inline ompc_status_t t_fn_checksum(ev_exec_info_t *info)
{
    uint64_t a[2];
    if (info->args_size != sizeof(a) || info->result_cap < sizeof(uint64_t))
        return OMPC_ERR_INVALID;
    memcpy(a, info->args, sizeof(a));
    uint64_t c = t_checksum((const void *)(uintptr_t)a[0], (size_t)a[1]);
    memcpy(info->result, &c, sizeof(c));
    info->result_size = sizeof(c);
    return OMPC_OK;
}

#endif
