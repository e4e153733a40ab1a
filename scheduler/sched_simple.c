/* The cheap policies: round-robin, random and locality.  All three walk
 * the tasks in topological order (lowest index first among ready tasks)
 * and append each task to its worker's timeline: a task starts once its
 * data is ready and the worker's previous task is done (no gap filling).
 * Cost: O(N log N + E) for round-robin and random, O(N*P + E*P) for
 * locality.  Round-robin alone keeps state between calls: whose turn is
 * next. */
#include "sched_internal.h"

#include <stdlib.h>

typedef enum simple_kind {
    SIMPLE_ROUNDROBIN,
    SIMPLE_RANDOM,
    SIMPLE_LOCALITY,
} simple_kind_t;

/* splitmix64 (Steele, Lea and Flood, 2014): one 64-bit state, so a seed
 * fully determines the sequence on every platform. */
static uint64_t simple_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, bound): draws above the largest multiple of bound are
 * redrawn, so no worker is favoured. */
static int32_t simple_rng_below(uint64_t *state, int32_t bound)
{
    uint64_t b = (uint64_t)bound;
    uint64_t limit = UINT64_MAX - UINT64_MAX % b;
    uint64_t x;
    do
        x = simple_rng_next(state);
    while (x >= limit);
    return (int32_t)(x % b);
}

/* Locality: the worker that pulls in the least data (communication from
 * predecessors elsewhere, plus how much later outside inputs arrive there
 * than on the best-placed worker), among the workers that could start the
 * task no later than one run of it after the earliest of them could; ties
 * go to the earliest finish, then the lowest worker.
 *
 * Without that bound locality is absorbing: once a task's producers share
 * a worker, moving away always costs more data, so a tree (every task's
 * input is its parent's) ran entirely on the worker of its root.  With
 * it, a task leaves its data only when that worker is backlogged by more
 * than the transfer plus one run of the task. */
static int32_t simple_locality_pick(const sched_graph_t *g, const sched_prep_t *prep,
                                    const sched_result_t *r, const double *last,
                                    double *comm, double *start, int64_t i)
{
    int32_t P = g->nworkers;
    size_t uP = (size_t)g->nworkers;
    double min_ready = 0.0;
    if (g->ready) {
        min_ready = g->ready[(size_t)i * uP];
        for (int32_t w = 1; w < P; w++)
            if (g->ready[(size_t)i * uP + (size_t)w] < min_ready)
                min_ready = g->ready[(size_t)i * uP + (size_t)w];
    }
    int32_t first = 0;
    for (int32_t w = 0; w < P; w++) {
        comm[w] = g->ready ? g->ready[(size_t)i * uP + (size_t)w] - min_ready : 0.0;
        for (int64_t p = prep->adj.pred_off[i]; p < prep->adj.pred_off[i + 1]; p++) {
            const sched_edge_t *e = &g->edges[prep->adj.pred_edge[p]];
            comm[w] += sched_comm(g, e, r->worker[e->from], w);
        }
        double s = sched_data_ready(g, &prep->adj, r->worker, r->finish, i, w);
        start[w] = last[w] > s ? last[w] : s;
        if (start[w] < start[first])
            first = w;
    }
    double bound = start[first] + sched_cost(g, i, first);
    int32_t best = -1;
    double best_comm = 0.0, best_finish = 0.0;
    for (int32_t w = 0; w < P; w++) {
        if (start[w] > bound)
            continue;
        double f = start[w] + sched_cost(g, i, w);
        if (best < 0 || comm[w] < best_comm ||
            (comm[w] == best_comm && f < best_finish)) {
            best = w;
            best_comm = comm[w];
            best_finish = f;
        }
    }
    return best;
}

static ompc_status_t simple_run(const sched_graph_t *g, sched_result_t *r,
                                simple_kind_t kind, uint64_t seed, sched_state_t *state)
{
    sched_prep_t prep;
    ompc_status_t st = sched_prep_create(g, r, &prep);
    if (st != OMPC_OK)
        return st;
    int32_t P = g->nworkers;
    size_t uP = (size_t)P;
    /* When each worker's last task ends, then locality's per-worker
     * scratch; the only allocation, so once it is made nothing can fail
     * and r is written in place. */
    double *last = calloc(3 * uP, sizeof(double));
    if (!last) {
        sched_prep_free(&prep);
        return OMPC_ERR_NOMEM;
    }
    uint64_t rng = seed;
    for (int64_t k = 0; k < g->ntasks; k++) {
        int64_t i = prep.topo[k];
        int32_t w;
        if (g->pinned && g->pinned[i] >= 0) {
            w = g->pinned[i];
        } else if (kind == SIMPLE_ROUNDROBIN) {
            /* The turn carries over from the caller's last call: a caller
             * that places one graph a piece at a time (often one task per
             * call) still deals its tasks out evenly. */
            w = (int32_t)(state->turn % (uint64_t)P);
            if (!(g->dataonly && g->dataonly[i]))
                state->turn++;
        } else if (kind == SIMPLE_RANDOM) {
            w = simple_rng_below(&rng, P);
        } else {
            w = simple_locality_pick(g, &prep, r, last, last + uP, last + 2 * uP, i);
        }
        double s;
        if (kind == SIMPLE_LOCALITY && !(g->pinned && g->pinned[i] >= 0)) {
            s = last[2 * uP + (size_t)w]; /* the pick's start on w */
        } else {
            s = sched_data_ready(g, &prep.adj, r->worker, r->finish, i, w);
            if (last[w] > s)
                s = last[w];
        }
        r->worker[i] = w;
        r->start[i] = s;
        r->finish[i] = s + sched_cost(g, i, w);
        last[w] = r->finish[i];
    }
    sched_result_close(g, r);
    free(last);
    sched_prep_free(&prep);
    return OMPC_OK;
}

static ompc_status_t simple_roundrobin_run(const sched_policy_t *self,
                                           const sched_graph_t *g, uint64_t seed,
                                           sched_state_t *state, sched_result_t *r)
{
    (void)self;
    (void)seed;
    return simple_run(g, r, SIMPLE_ROUNDROBIN, 0, state);
}

static ompc_status_t simple_random_run(const sched_policy_t *self, const sched_graph_t *g,
                                       uint64_t seed, sched_state_t *state,
                                       sched_result_t *r)
{
    (void)self;
    return simple_run(g, r, SIMPLE_RANDOM, seed, state);
}

static ompc_status_t simple_locality_run(const sched_policy_t *self,
                                         const sched_graph_t *g, uint64_t seed,
                                         sched_state_t *state, sched_result_t *r)
{
    (void)self;
    (void)seed;
    return simple_run(g, r, SIMPLE_LOCALITY, 0, state);
}

const sched_policy_t sched_policy_roundrobin = {
    .name = "roundrobin",
    .needs = 0,
    .run = simple_roundrobin_run,
};

const sched_policy_t sched_policy_random = {
    .name = "random",
    .needs = 0,
    .run = simple_random_run,
};

const sched_policy_t sched_policy_locality = {
    .name = "locality",
    .needs = SCHED_NEEDS_ALIKE_LINKS,
    .run = simple_locality_run,
};
