/* Helpers for the scheduler tests: a checker written apart from the
 * library's sched_check (so each catches the other's mistakes), random
 * layered graphs, and a CHECK macro that names the failing line. */
#ifndef SCHED_TEST_H
#define SCHED_TEST_H

#include "ompc_sched.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);     \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#define CHECK_OK(expr)                                                                   \
    do {                                                                                 \
        ompc_status_t st_ = (expr);                                                      \
        if (st_ != OMPC_OK) {                                                            \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr,    \
                    ompc_status_str(st_), sched_last_error());                           \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* xorshift64*: the tests' own generator, unrelated to the random policy's. */
static inline uint64_t st_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static inline double st_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(st_rand(s) >> 11) / 9007199254740992.0;
}

/* ------------------------------------------------------------- checker */
typedef struct st_busy {
    int32_t w;
    double s, f;
    int64_t i;
} st_busy_t;

static int st_busy_cmp(const void *pa, const void *pb)
{
    const st_busy_t *a = pa, *b = pb;
    if (a->w != b->w)
        return a->w - b->w;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    return a->f < b->f ? -1 : a->f > b->f;
}

static inline bool st_close(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* Returns NULL if r is a valid schedule of g, else a static description of
 * the first problem found. */
static const char *st_check(const sched_graph_t *g, const sched_result_t *r)
{
    static char why[256];
    int32_t P = g->nworkers;
    double maxf = 0.0;
    for (int64_t i = 0; i < g->ntasks; i++) {
        int32_t w = r->worker[i];
        if (w < 0 || w >= P) {
            snprintf(why, sizeof(why), "task %lld on worker %d", (long long)i, w);
            return why;
        }
        if (g->pinned && g->pinned[i] >= 0 && g->pinned[i] != w) {
            snprintf(why, sizeof(why), "task %lld not on its pinned worker",
                     (long long)i);
            return why;
        }
        double lb = 0.0;
        if (g->ready)
            lb = fmax(lb, g->ready[i * P + w]);
        if (g->avail)
            lb = fmax(lb, g->avail[w]);
        if (r->start[i] < lb - 1e-9 * fmax(1.0, lb)) {
            snprintf(why, sizeof(why), "task %lld starts at %g before %g (ready/avail)",
                     (long long)i, r->start[i], lb);
            return why;
        }
        double c = g->cost_uniform ? g->cost[i] : g->cost[i * P + w];
        if (!st_close(r->finish[i], r->start[i] + c)) {
            snprintf(why, sizeof(why), "task %lld: finish != start + cost", (long long)i);
            return why;
        }
        maxf = fmax(maxf, r->finish[i]);
    }
    for (int64_t k = 0; k < g->nedges; k++) {
        const sched_edge_t *e = &g->edges[k];
        int32_t p = r->worker[e->from], q = r->worker[e->to];
        double comm = 0.0;
        if (p != q)
            comm = g->comm_lat
                       ? g->comm_lat[p * P + q] + e->bytes * g->comm_inv_bw[p * P + q]
                       : e->cost;
        double need = r->finish[e->from] + comm;
        if (r->start[e->to] < need - 1e-9 * fmax(1.0, need)) {
            snprintf(why, sizeof(why),
                     "task %lld starts at %g, its input from %lld "
                     "arrives at %g",
                     (long long)e->to, r->start[e->to], (long long)e->from, need);
            return why;
        }
    }
    /* comm_msg: each input from another worker delays the start once
     * more, after the last arrival (counted here the slow way). */
    for (int64_t i = 0; g->comm_msg > 0.0 && i < g->ntasks; i++) {
        double last = 0.0;
        int64_t nfar = 0;
        for (int64_t k = 0; k < g->nedges; k++) {
            const sched_edge_t *e = &g->edges[k];
            if (e->to != i)
                continue;
            int32_t p = r->worker[e->from], q = r->worker[i];
            double comm = 0.0;
            if (p != q) {
                comm = g->comm_lat
                           ? g->comm_lat[p * P + q] + e->bytes * g->comm_inv_bw[p * P + q]
                           : e->cost;
                nfar++;
            }
            last = fmax(last, r->finish[e->from] + comm);
        }
        double need = last + g->comm_msg * (double)nfar;
        if (nfar && r->start[i] < need - 1e-9 * fmax(1.0, need)) {
            snprintf(why, sizeof(why),
                     "task %lld starts at %g, before its %lld inputs from afar "
                     "are handled at %g",
                     (long long)i, r->start[i], (long long)nfar, need);
            return why;
        }
    }
    if (!st_close(r->makespan, maxf)) {
        snprintf(why, sizeof(why), "makespan %g, latest finish %g", r->makespan, maxf);
        return why;
    }
    st_busy_t *b = malloc(((size_t)g->ntasks + 1) * sizeof(*b));
    CHECK(b);
    for (int64_t i = 0; i < g->ntasks; i++)
        b[i] = (st_busy_t){r->worker[i], r->start[i], r->finish[i], i};
    qsort(b, (size_t)g->ntasks, sizeof(*b), st_busy_cmp);
    const char *res = NULL;
    for (int64_t k = 1; k < g->ntasks && !res; k++)
        if (b[k].w == b[k - 1].w && b[k].s < b[k - 1].f - 1e-9 * fmax(1.0, b[k - 1].f)) {
            snprintf(why, sizeof(why), "tasks %lld and %lld overlap on worker %d",
                     (long long)b[k - 1].i, (long long)b[k].i, b[k].w);
            res = why;
        }
    free(b);
    return res;
}

/* Both checkers must accept r. */
#define CHECK_VALID(g, r)                                                                \
    do {                                                                                 \
        const char *why_ = st_check((g), (r));                                           \
        if (why_) {                                                                      \
            fprintf(stderr, "%s:%d: invalid schedule: %s\n", __FILE__, __LINE__, why_);  \
            exit(1);                                                                     \
        }                                                                                \
        CHECK_OK(sched_check((g), (r)));                                                 \
    } while (0)

/* ---------------------------------------------------------- random DAGs */
enum {
    ST_COMM_MODEL = 1, /* latency/bandwidth matrices instead of edge costs */
    ST_PINNED = 2,     /* about 5% of the tasks pinned */
    ST_READY = 4,      /* per-task ready times */
    ST_AVAIL = 8,      /* per-worker availability */
    ST_ZERO = 16,      /* many zero task and edge costs */
    ST_MSG = 32,       /* a cost per input from another worker (comm_msg) */
};

typedef struct st_graph {
    sched_graph_t g;
    double *cost, *ready, *avail, *lat, *inv_bw;
    int32_t *pinned;
    sched_edge_t *edges;
    int32_t *worker;
    double *start, *finish;
    sched_result_t r;
} st_graph_t;

/* A layered DAG: tasks in `layers` layers of about equal size, each task
 * with 1..maxpreds predecessors in the layers before (mostly the previous
 * one).  Task indices are shuffled, so index order is not topological. */
static void st_graph_random(st_graph_t *sg, uint64_t seed, int64_t n, int32_t P,
                            int64_t layers, int maxpreds, unsigned flags)
{
    memset(sg, 0, sizeof(*sg));
    uint64_t s = seed * 2 + 1;
    size_t uP = (size_t)P;
    sg->cost = malloc(((size_t)n + 1) * uP * sizeof(double));
    int64_t *perm = malloc(((size_t)n + 1) * sizeof(int64_t));
    sg->edges = malloc(((size_t)n * (size_t)maxpreds + 1) * sizeof(sched_edge_t));
    sg->worker = malloc(((size_t)n + 1) * sizeof(int32_t));
    sg->start = malloc(((size_t)n + 1) * sizeof(double));
    sg->finish = malloc(((size_t)n + 1) * sizeof(double));
    CHECK(sg->cost && perm && sg->edges && sg->worker && sg->start && sg->finish);
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(st_rand(&s) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int64_t i = 0; i < n; i++) {
        /* Heterogeneous: a per-task base times a per-worker factor. */
        double base = st_uniform(&s, 1.0, 100.0);
        for (int32_t w = 0; w < P; w++) {
            double c = base * (0.5 + (double)((w * 7 + i) % 5) * 0.25) *
                       st_uniform(&s, 0.9, 1.1);
            if ((flags & ST_ZERO) && st_rand(&s) % 3 == 0)
                c = 0.0;
            sg->cost[(size_t)i * uP + (size_t)w] = c;
        }
    }
    int64_t per_layer = layers > 0 ? (n + layers - 1) / layers : n;
    if (per_layer < 1)
        per_layer = 1;
    int64_t m = 0;
    for (int64_t pos = per_layer; pos < n; pos++) {
        int64_t layer = pos / per_layer;
        int np = 1 + (int)(st_rand(&s) % (uint64_t)maxpreds);
        for (int k = 0; k < np; k++) {
            /* 80% from the previous layer, else from any earlier one. */
            int64_t lo = st_rand(&s) % 5 ? (layer - 1) * per_layer : 0;
            int64_t hi = layer * per_layer;
            int64_t from = lo + (int64_t)(st_rand(&s) % (uint64_t)(hi - lo));
            double c = (flags & ST_ZERO) && st_rand(&s) % 2 ? 0.0
                                                            : st_uniform(&s, 0.0, 50.0);
            sg->edges[m++] = (sched_edge_t){perm[from], perm[pos], c,
                                            st_uniform(&s, 0.0, 1e6)};
        }
    }
    /* Edges in no particular order either. */
    for (int64_t k = m - 1; k > 0; k--) {
        int64_t j = (int64_t)(st_rand(&s) % (uint64_t)(k + 1));
        sched_edge_t t = sg->edges[k];
        sg->edges[k] = sg->edges[j];
        sg->edges[j] = t;
    }
    if (flags & ST_COMM_MODEL) {
        sg->lat = malloc(uP * uP * sizeof(double));
        sg->inv_bw = malloc(uP * uP * sizeof(double));
        CHECK(sg->lat && sg->inv_bw);
        for (size_t k = 0; k < uP * uP; k++) {
            sg->lat[k] = st_uniform(&s, 1.0, 5.0);
            sg->inv_bw[k] = st_uniform(&s, 1e-6, 1e-5);
        }
    }
    if (flags & ST_PINNED) {
        sg->pinned = malloc(((size_t)n + 1) * sizeof(int32_t));
        CHECK(sg->pinned);
        for (int64_t i = 0; i < n; i++)
            sg->pinned[i] = st_rand(&s) % 20 == 0 ? (int32_t)(st_rand(&s) % uP) : -1;
    }
    if (flags & ST_READY) {
        sg->ready = malloc(((size_t)n + 1) * uP * sizeof(double));
        CHECK(sg->ready);
        for (size_t k = 0; k < (size_t)n * uP; k++)
            sg->ready[k] = st_rand(&s) % 4 == 0 ? st_uniform(&s, 0.0, 200.0) : 0.0;
    }
    if (flags & ST_AVAIL) {
        sg->avail = malloc(uP * sizeof(double));
        CHECK(sg->avail);
        for (size_t w = 0; w < uP; w++)
            sg->avail[w] = st_uniform(&s, 0.0, 100.0);
    }
    double msg = (flags & ST_MSG) ? st_uniform(&s, 1.0, 20.0) : 0.0;
    free(perm);
    sg->g = (sched_graph_t){
        .nworkers = P,
        .ntasks = n,
        .cost = sg->cost,
        .pinned = sg->pinned,
        .ready = sg->ready,
        .avail = sg->avail,
        .nedges = m,
        .edges = sg->edges,
        .comm_lat = sg->lat,
        .comm_inv_bw = sg->inv_bw,
        .comm_msg = msg,
    };
    sg->r = (sched_result_t){
        .worker = sg->worker, .start = sg->start, .finish = sg->finish};
}

static void st_graph_free(st_graph_t *sg)
{
    free(sg->cost);
    free(sg->ready);
    free(sg->avail);
    free(sg->lat);
    free(sg->inv_bw);
    free(sg->pinned);
    free(sg->edges);
    free(sg->worker);
    free(sg->start);
    free(sg->finish);
}

#endif
