/* Private to libomptarget-mpi/: the deferred task graph (docs/architecture.md,
 * "Deferred execution").
 *
 * Every target region and every target data operation becomes a node when
 * its OpenMP task runs.  Mapping-table bookkeeping (reference counts, which
 * buffer backs which host range) happens at once, at record time, in the
 * order libomp runs the tasks; what touches data is recorded as ops of the
 * node and runs when the node runs:
 *   - WRITE: host bytes into a device buffer (captured at record time);
 *   - READ: device bytes back into host memory;
 *   - HOST_STORE: a pointer value restored in host memory (attached
 *     pointers after a READ);
 *   - FREE: a device buffer whose last reference went away.
 * Edges come from depend lists (OpenMP's rules) and from buffers: a node
 * with ops on a buffer is ordered after every earlier node using it, and
 * later users are ordered after it.  Nodes run at flush points, scheduled
 * by the configured policy (HEFT by default) over everything recorded. */
#ifndef OMPC_TGT_GRAPH_H
#define OMPC_TGT_GRAPH_H

#include "tgt_internal.h"

typedef struct tgt_node tgt_node_t;

/* Head, once, after ev_ctx_start: dispatch threads, link calibration. */
void tgt_graph_init(void);
/* Head, at program end: runs everything, stops the dispatch threads. */
void tgt_graph_fini(void);
bool tgt_graph_active(void);

/* Recording, on the thread running the construct's task, once its plan p
 * is mapped (tgt_plan_mapped): one call makes the construct a node, for
 * kernel k (NULL: a data-only node), with p's data ops (the host bytes
 * they copy are taken now) and, for a kernel, m's buffers and firstprivate
 * copies (m is emptied, its arrays go back to the thread's spares:
 * tgt_mapped_release), the buffers it may write (wr[0..nwr), copied); a
 * kernel's launch message is written once, into the node's own block,
 * from k and m's arguments.  All that runs outside any lock, on as many
 * threads as record at once; the node then enters the graph when p's
 * ticket comes up (mapping order), and p is ended (tgt_plan_end);
 * wait=true returns only once the node has run (synchronous
 * constructs). */
void tgt_rec_construct(const tgt_ident_t *loc, const tgt_kernel_t *k, tgt_plan_t *p,
                       tgt_mapped_t *m, dm_buf_t **wr, size_t nwr, bool wait);

/* Flush points. */
void tgt_graph_sync_all(void);           /* barrier, taskwait, taskgroup, APIs */
/* A host task with these dependences is about to run: the target work it
 * depends on runs first. */
void tgt_graph_host_task(const tgt_dep_t *deps, int n);
/* A target task with these dependences is about to run: recorded nodes
 * that will still write host bytes its depend list names run first, since
 * its body may run on the host (`if(false)`, the host device) and read
 * them; offloaded, its own copies to the device would wait for them too. */
void tgt_graph_target_task(const tgt_dep_t *deps, int n);

/* Task reductions joined by deferred target tasks (tgt_taskred.c), driven
 * by the OMPT taskgroup callbacks of the thread that opens the group. */
void tgt_taskred_group_begin(void);
void tgt_taskred_group_wait_end(void); /* flushes and folds the group's copies */
void tgt_taskred_group_end(void);
/* A kernel launch of a target task that joined task reductions: maps the
 * task's own copies in place of the variables (a's pointer arrays are
 * copied into space, 2 * a->n entries).  False (a untouched) otherwise. */
bool tgt_taskred_redirect(tgt_args_t *a, void **space);

/* Launch ahead (tgt_ahead.c): executors that wait for each other. */
ompc_status_t tgt_ahead_fn_register(void); /* every rank, before start */
void tgt_ahead_start(void);                /* executors, after start */
void tgt_ahead_stop(void);                 /* executors, after serving */
/* Head, gate thread: executor rank `from` finished n launched-ahead
 * tasks, m a checked "tgt.ahead.done" message of n tgt_wire_done_t. */
void tgt_graph_ahead_done(const void *m, size_t n, int from);
/* Head, for the liveness message (ev_peer_describe_fn_t): the kernels
 * launched ahead to `rank` and not reported done. */
int tgt_graph_describe_owed(int rank, int owed, char *buf, size_t cap);

/* Cost model and statistics (tgt_model.c). */
typedef struct tgt_model tgt_model_t;
void tgt_model_init(void);                       /* head, after start */
double tgt_model_cost(const tgt_kernel_t *k, int exec);   /* seconds */
bool tgt_model_known(const tgt_kernel_t *k);     /* measured on some executor */
void tgt_model_learn(const tgt_kernel_t *k, int exec, double seconds);
/* A share of split kernel k ran part (0..1] of its work on exec in
 * seconds (its teams only). */
void tgt_model_learn_share(const tgt_kernel_t *k, int exec, double part, double seconds);
/* Kernel k's runs per second on exec: from its shares there once a split
 * ran on it, else from tgt_model_cost (split shares are sized by it). */
double tgt_model_speed(const tgt_kernel_t *k, int exec);
double tgt_model_lat(int exec);                  /* seconds, head <-> exec */
/* A hop measured in a running graph: a forwarded input (serve -> arrival
 * at the consumer's gate) or a batch of launches (sent -> arrival at the
 * worker's gate, launch=true; there from the first wave on).  Under load it
 * is far above the idle probe, and HEFT must know. */
void tgt_model_learn_hop(double seconds, bool launch);
double tgt_model_inv_bw(int exec);               /* seconds per byte */
int64_t tgt_model_clock_offset(int exec);        /* exec clock - head clock, ns */
void tgt_model_fini(void);                       /* saves OMPC_PERF_MODEL */
/* Registered on every rank before ev_ctx_start. */
ompc_status_t tgt_model_fn_register(void);
/* Collective, before ev_ctx_start: every rank's core count. */
void tgt_model_share_cores(void);

/* Head, at exit: OMPC_TRACE gathering and the OMPC_STATS report. */
void tgt_trace_gather(void);
/* Head, while the ranks still serve: every worker's CPU figures. */
void tgt_stats_gather(void);
void tgt_stats_print(uint64_t t_shutdown0, uint64_t t_end);

/* Statistics the graph keeps for OMPC_STATS. */
typedef struct tgt_graph_stats {
    const char *policy;                  /* OMPC_SCHEDULER's policy, by name */
    uint64_t nodes, kernels, flushes;
    uint64_t held;                       /* nodes held back for a cost */
    uint64_t pin_moves;                  /* kernels run off their placement:
                                          * a buffer they write was pinned
                                          * to another executor */
    uint64_t launches, launch_msgs;      /* launched ahead, in messages */
    uint64_t completions, done_msgs;     /* reported done, in messages */
    uint64_t sched_ns;
    _Atomic uint64_t in_memory;          /* task nodes allocated now */
    uint64_t in_memory_peak;             /* the most at once (tgt_g.mtx) */
    uint64_t *tasks_per_exec;            /* kernels per executor */
} tgt_graph_stats_t;
const tgt_graph_stats_t *tgt_graph_stats(void);

#endif
