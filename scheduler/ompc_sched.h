/* ompc scheduler: places a graph of tasks on workers.
 *
 * The caller describes the graph as plain arrays (tasks by index, edges in
 * any order, a cost per task and worker, optional pinning, optional
 * per-worker start constraints and an optional latency/bandwidth model) and
 * a policy fills in, for every task, the worker, the start and the finish
 * time.  Times are in whatever unit the costs use; 0 is "now", so no task
 * starts before 0.
 *
 * Policies are operation tables: HEFT (the default of the runtime's flush
 * points), round-robin, random and locality.  Each declares what it needs
 * from its caller beyond the graph (sched_policy_t.needs), and what it
 * keeps from one call to the next lives in a sched_state_t the caller owns.
 *
 * This layer knows nothing of OpenMP, MPI or clang.  Every function is
 * reentrant and may be called from any thread at the same time on different
 * results: there is no shared state apart from the calling thread's last
 * error message. */
#ifndef OMPC_SCHED_H
#define OMPC_SCHED_H

#include "ompc_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sched_edge {
    int64_t from, to; /* task indices 0..ntasks-1 */
    double cost;      /* communication time if from/to run on different
                       * workers and no comm model is given */
    double bytes;     /* bytes moved on this edge (used with the comm model) */
} sched_edge_t;

typedef struct sched_graph {
    int32_t nworkers;          /* P >= 1 */
    int64_t ntasks;
    const double *cost;        /* ntasks*P: cost[i*P+w] = run time of task i
                                * on worker w (finite, >= 0) */
    const int32_t *pinned;     /* NULL, or per task: the worker it must run
                                * on, or -1 */
    const double *ready;       /* NULL, or ntasks*P: earliest start of task i
                                * on worker w due to inputs from outside the
                                * graph */
    const double *avail;       /* NULL, or P: time at which each worker
                                * becomes free (work already running) */
    int64_t nedges;
    const sched_edge_t *edges;
    const double *comm_lat;    /* NULL, or P*P: latency p->q.  When given,
                                * an edge between different workers p != q
                                * costs comm_lat[p*P+q] +
                                * bytes*comm_inv_bw[p*P+q] and edge.cost is
                                * ignored */
    const double *comm_inv_bw; /* P*P seconds per byte; required with
                                * comm_lat, must be NULL without it */
    const int32_t *prefer;     /* NULL, or per task: a worker HEFT takes
                                * unless it finishes more than the task's
                                * cost later than the best, or -1.  NULL:
                                * HEFT works out its own for entry tasks
                                * (sched_entry_prefs) */
    const bool *dataonly;      /* NULL, or per task: true for a task that
                                * only moves data and occupies no worker
                                * (its cost must be 0 on every worker).
                                * Round-robin deals such a task no turn */
    double comm_msg;           /* >= 0, 0 = none: what each input from
                                * another worker costs its receiver beyond
                                * its latency and bytes (the CPU a message
                                * takes to send, wake for and handle).  A
                                * task's inputs are handled one after
                                * another, so it starts no earlier than
                                * the latest arrival plus comm_msg per
                                * edge into it from another worker: two
                                * inputs from afar cost more than one,
                                * where latencies alone take the max */
    double stay;               /* >= 0, 0 = off.  HEFT only: it also
                                * places with every task that has no
                                * preferred worker kept on the worker
                                * holding more than half of its inputs
                                * from inside the graph (by bytes with a
                                * comm model, else by edge cost; each 1
                                * if all weigh 0) unless it finishes more
                                * than stay times its cost later there
                                * than on the best, and returns that
                                * schedule if it moves fewer inputs
                                * between workers and is no longer.
                                * Greedy earliest finish gives a stencil
                                * one input from afar per task where
                                * column blocks need half as many */
    double refine;             /* 0 = off, else >= 1.  HEFT only: after
                                * placing, it moves each task (in start
                                * order) to the other worker holding most
                                * of its inputs from inside the graph
                                * (weighed as for stay) if that holds at
                                * least as much as its own: alone where
                                * that moves less input weight between
                                * workers, else in exchange for one of
                                * that worker's next tasks where that
                                * moves no more.
                                * A move is kept while the makespan, with
                                * every task started as early as its
                                * worker's order allows, stays within
                                * refine times HEFT's (1: no longer).
                                * Pinned tasks and tasks with a preferred
                                * worker stay.  The schedule is HEFT's if
                                * no move is kept */
    int32_t cost_uniform;      /* 0: cost as above.  1: identical workers,
                                * cost has ntasks entries and cost[i] is
                                * task i's run time on every worker, so
                                * that validation and HEFT's ranks cost
                                * O(ntasks), not O(ntasks*P) */
} sched_graph_t;

/* Arrays of ntasks entries, allocated by the caller. */
typedef struct sched_result {
    int32_t *worker;
    double *start, *finish;
    double makespan; /* max finish, 0 for an empty graph */
} sched_result_t;

/* What a policy keeps from one call to the next, for a caller that places
 * one graph in several calls (the runtime: one per flush).  The caller owns
 * it; all zero is a fresh start.  A policy changes it only on success. */
typedef struct sched_state {
    uint64_t turn; /* round-robin: the worker whose turn is next, modulo P */
} sched_state_t;

/* What a policy needs from its caller beyond a valid graph: bits of
 * sched_policy_t.needs.  A caller that cannot give one may still run the
 * policy; it only places worse. */
typedef enum sched_needs {
    /* Places by task cost, and a guessed cost misplaces a task and, through
     * the edges, its successors: a caller that learns costs as tasks run
     * should hold back the tasks that depend on a task whose cost is still
     * a guess, and place them once it has been measured. */
    SCHED_NEEDS_MEASURED_COSTS = 1u << 0,
    /* Compares workers by when a task's inputs reach them: the caller
     * should price inputs from outside the graph (ready) with one link
     * cost for every worker, so that a link whose probe came out slower
     * does not read as a worker holding less of the data. */
    SCHED_NEEDS_ALIKE_LINKS = 1u << 1,
} sched_needs_t;

typedef struct sched_policy {
    const char *name; /* "heft", "roundrobin", "random", "locality" */
    unsigned needs;   /* sched_needs_t bits */
    /* Fills every entry of r.  Built-in policies validate g themselves, so
     * calling run directly is as safe as sched_run.  seed only matters to
     * "random"; state is never NULL. */
    ompc_status_t (*run)(const struct sched_policy *self, const sched_graph_t *g,
                         uint64_t seed, sched_state_t *state, sched_result_t *r);
} sched_policy_t;

/* HEFT with its one parameter, for callers that set it (the table
 * sched_policy_find("heft") returns is candidates = 0):
 *   candidates = 0   automatic: every worker while there are at most
 *                    SCHED_HEFT_FULL_MAX of them, else the bounded set
 *                    with SCHED_HEFT_CANDIDATES;
 *   candidates < 0   every worker (plain HEFT, O(P) per task);
 *   candidates = k   per task only the workers holding its inputs, its
 *                    preferred worker, the k whose timelines end first and
 *                    k/4 more drawn at random (O(k log P) per task).  With
 *                    k >= P that covers every worker and the schedule is
 *                    plain HEFT's.
 * Run it with sched_run(&p.policy, ...); p must outlive the call. */
#define SCHED_HEFT_FULL_MAX 64
#define SCHED_HEFT_CANDIDATES 32
typedef struct sched_heft_policy {
    sched_policy_t policy;
    int32_t candidates;
} sched_heft_policy_t;
void sched_heft_policy_init(sched_heft_policy_t *p, int32_t candidates);

/* The built-in policy called name, or NULL. */
const sched_policy_t *sched_policy_find(const char *name);
/* The i-th built-in policy (0 is HEFT), NULL past the last: for listings. */
const sched_policy_t *sched_policy_at(size_t i);

/* Validates g (OMPC_ERR_INVALID on an index out of range, a negative or
 * non-finite cost, a cycle, a pinned worker out of range, ...; see
 * sched_last_error) and runs p on it.  OMPC_ERR_NOMEM when scratch memory
 * is short.  On failure r's contents are left as they were. */
ompc_status_t sched_run(const sched_policy_t *p, const sched_graph_t *g, uint64_t seed,
                        sched_result_t *r);
/* sched_run continuing from *state (NULL: a fresh one, as sched_run), which
 * is updated on success and left as it was on failure.  Reentrant as long
 * as no two calls share a state. */
ompc_status_t sched_run_kept(const sched_policy_t *p, const sched_graph_t *g,
                             uint64_t seed, sched_state_t *state, sched_result_t *r);

/* For the entry tasks of g that every worker would run equally well (not
 * pinned, one cost and one ready time for all workers), a worker each, so
 * that tasks sharing a successor go together: ordered breadth-first over
 * "shares a successor with", cut into nworkers runs of equal cost.  -1 for
 * every other task, and for all of them unless some two such tasks share a
 * successor.  pref has ntasks entries.  g is not validated. */
ompc_status_t sched_entry_prefs(const sched_graph_t *g, int32_t *pref);

/* OMPC_OK if r is a feasible schedule of g: every task on an allowed worker,
 * finish = start + cost, start after 0, avail, ready and every predecessor's
 * finish plus the communication time (and then comm_msg per input from
 * another worker), no two tasks overlapping on a worker,
 * makespan = max finish.  Comparisons allow a relative error of 1e-9.
 * OMPC_ERR_INVALID otherwise (or if g itself is invalid), with the first
 * violation in sched_last_error. */
ompc_status_t sched_check(const sched_graph_t *g, const sched_result_t *r);

/* Why the calling thread's last sched_* call returned OMPC_ERR_INVALID
 * (tasks and edges named by index), "" if none did yet.  Thread-local. */
const char *sched_last_error(void);
/* The task index that message is about (for a cycle: a task on it), or -1. */
int64_t sched_last_error_task(void);

#ifdef __cplusplus
}
#endif
#endif
