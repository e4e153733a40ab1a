/* Scheduler internals shared by the policies and the tool; not installed. */
#ifndef OMPC_SCHED_INTERNAL_H
#define OMPC_SCHED_INTERNAL_H

#include "ompc_sched.h"

#include <stdbool.h>

/* Records the reason for an OMPC_ERR_INVALID in the calling thread's error
 * slot and returns OMPC_ERR_INVALID, so call sites read
 * `return sched_error(...)`. */
ompc_status_t sched_error(int64_t task, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Edges grouped by endpoint (compressed rows): the edges into task i are
 * edges[pred_edge[pred_off[i] .. pred_off[i+1]-1]], likewise out of i with
 * succ_*.  Each group keeps the input order of the edges.  pred_from[p]
 * and succ_to[s] repeat the other endpoint of the same edge, so that a
 * walk over the graph does not load edges[] (a cache miss per edge when
 * the edges come shuffled). */
typedef struct sched_adj {
    int64_t *pred_off, *pred_edge, *pred_from;
    int64_t *succ_off, *succ_edge, *succ_to;
} sched_adj_t;

/* What every policy needs before placing anything: the graph checked, its
 * adjacency, and a topological order (among tasks ready at the same time,
 * the lowest index first). */
typedef struct sched_prep {
    sched_adj_t adj;
    int64_t *topo;
} sched_prep_t;

/* Everything sched_run promises to check except cycles: sizes, indices,
 * costs, pinning, the comm model, and the result arrays (skipped when r is
 * NULL). */
ompc_status_t sched_graph_validate(const sched_graph_t *g, const sched_result_t *r);
/* sched_graph_validate, then adjacency and topological order (cycles are
 * OMPC_ERR_INVALID with the cycle in the message).  *prep is set up only
 * on success; release it with sched_prep_free. */
ompc_status_t sched_prep_create(const sched_graph_t *g, const sched_result_t *r,
                                sched_prep_t *prep);
/* sched_prep_create for a policy that needs neither predecessor lists
 * nor the tie rule (HEFT, and the checks that only want cycles found):
 * adj holds succ_off and succ_to only (the rest NULL), and topo is
 * breadth-first, which costs one counting sort of the edges less and lets
 * the order fetch ahead.  Errors, cycles included, as sched_prep_create. */
ompc_status_t sched_prep_succ(const sched_graph_t *g, const sched_result_t *r,
                              sched_prep_t *prep);
void sched_prep_free(sched_prep_t *prep);

/* Time to move edge e's data from worker p to worker q (0 when p == q). */
static inline double sched_comm(const sched_graph_t *g, const sched_edge_t *e, int32_t p,
                                int32_t q)
{
    if (p == q)
        return 0.0;
    if (g->comm_lat) {
        size_t pq = (size_t)p * (size_t)g->nworkers + (size_t)q;
        return g->comm_lat[pq] + e->bytes * g->comm_inv_bw[pq];
    }
    return e->cost;
}

/* Run time of task i on worker w, whichever form g->cost has. */
static inline double sched_cost(const sched_graph_t *g, int64_t i, int32_t w)
{
    if (g->cost_uniform)
        return g->cost[i];
    return g->cost[(size_t)i * (size_t)g->nworkers + (size_t)w];
}

/* Earliest time task i could start on worker w if w were idle: 0, ready,
 * avail, and every (already placed) predecessor's finish plus its
 * communication time into w. */
double sched_data_ready(const sched_graph_t *g, const sched_adj_t *adj,
                        const int32_t *worker, const double *finish, int64_t i,
                        int32_t w);

/* Sets r->makespan from r->finish. */
void sched_result_close(const sched_graph_t *g, sched_result_t *r);

/* A binary heap of task indices.  With key == NULL the smallest index comes
 * out first; otherwise the largest key, ties by smallest index.  Capacity
 * is fixed at creation (every task at most once). */
typedef struct sched_heap {
    int64_t *v;
    int64_t n;
    const double *key;
} sched_heap_t;

ompc_status_t sched_heap_init(sched_heap_t *h, int64_t capacity, const double *key);
void sched_heap_free(sched_heap_t *h);
void sched_heap_push(sched_heap_t *h, int64_t task);
int64_t sched_heap_pop(sched_heap_t *h); /* h->n must be > 0 */

/* The tasks of a cycle of g, if it has one: cycle[0] -> cycle[1] -> ... ->
 * cycle[*len_p-1] -> cycle[0], at most ntasks entries; *len_p = 0 when g is
 * acyclic.  For callers that name tasks their own way (the tool prints ids).
 * g must pass sched_graph_validate (r may be NULL there). */
ompc_status_t sched_cycle_find(const sched_graph_t *g, int64_t *cycle, int64_t *len_p);

/* HEFT's upward ranks (see sched_heft.c), exposed for tests: aborts if its
 * scratch (the renumbered graph) cannot be allocated. */
void sched_heft_ranks(const sched_graph_t *g, const sched_prep_t *prep, double *rank);

/* The run of every sched_heft_policy_t (built-in: it validates). */
ompc_status_t sched_heft_param_run(const sched_policy_t *self, const sched_graph_t *g,
                                   uint64_t seed, sched_state_t *state,
                                   sched_result_t *r);

extern const sched_policy_t sched_policy_heft;
extern const sched_policy_t sched_policy_roundrobin;
extern const sched_policy_t sched_policy_random;
extern const sched_policy_t sched_policy_locality;

#endif
