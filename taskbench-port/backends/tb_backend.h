/* Helpers shared by the Task Bench back ends (tb_openmp.c, tb_mpi.c).
 *
 * TB_BREAK_DEPS: a deliberate fault, to prove that validation is on.
 *   1  the first task of timestep 1 that has inputs (graph 0) is given its
 *      own, not yet written output buffer instead of its first input: the
 *      effect of a missing dependence (stale data);
 *   2  the first task of timestep 0 whose output is read later (graph 0)
 *      corrupts its output after computing it.
 * Either way the core's validation must end the run with an error. */
#ifndef TB_BACKEND_H
#define TB_BACKEND_H

#include "../core/tb_core.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TB_BREAK_NONE = 0, TB_BREAK_INPUT = 1, TB_BREAK_OUTPUT = 2 };

/* Fill byte of output buffers before the first write: never a valid
 * task output, so reading a buffer nobody wrote fails validation. */
#define TB_POISON 0xEE

static inline int tb_break_mode(void)
{
    const char *s = getenv("TB_BREAK_DEPS");
    if (!s || !*s || !strcmp(s, "0"))
        return TB_BREAK_NONE;
    if (!strcmp(s, "1"))
        return TB_BREAK_INPUT;
    if (!strcmp(s, "2"))
        return TB_BREAK_OUTPUT;
    fprintf(stderr, "TB_BREAK_DEPS=%s: expected 0, 1 or 2\n", s);
    exit(2);
}

/* The task TB_BREAK_DEPS=mode breaks in graph g: true with *t, *p set, or
 * false when the graph has no such task (then nothing is broken). */
static inline bool tb_break_pick(const tb_graph_t *g, int mode, int64_t *t, int64_t *p)
{
    if (mode == TB_BREAK_NONE || g->graph_index != 0)
        return false;
    int64_t step = mode == TB_BREAK_INPUT ? 1 : 0;
    if (step >= g->timesteps || g->timesteps < 2)
        return false;
    int64_t lo = tb_offset_at_timestep(g, step);
    int64_t hi = lo + tb_width_at_timestep(g, step);
    for (int64_t q = lo; q < hi; q++) {
        size_t n = mode == TB_BREAK_INPUT ? tb_dependencies(g, step, q, NULL, 0)
                                          : tb_reverse_dependencies(g, step, q, NULL, 0);
        if (n > 0) {
            *t = step;
            *p = q;
            return true;
        }
    }
    return false;
}

/* Announce the fault on stderr so a log shows why the run failed. */
static inline void tb_break_announce(const tb_app_t *app, int mode)
{
    int64_t t, p;
    if (mode != TB_BREAK_NONE && app->ngraphs > 0 &&
        tb_break_pick(&app->graphs[0], mode, &t, &p))
        fprintf(stderr,
                "TB_BREAK_DEPS=%d: breaking graph 0 timestep %lld "
                "point %lld on purpose (%s)\n",
                mode, (long long)t, (long long)p,
                mode == TB_BREAK_INPUT ? "stale input" : "corrupt output");
}

static inline int64_t tb_max_steps(const tb_app_t *app)
{
    int64_t m = 0;
    for (int i = 0; i < app->ngraphs; i++)
        if (app->graphs[i].timesteps > m)
            m = app->graphs[i].timesteps;
    return m;
}

static inline void *tb_xmalloc(size_t n, const char *what)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory allocating %zu bytes for %s\n", n, what);
        exit(1);
    }
    return p;
}

#endif
