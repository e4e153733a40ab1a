/* Private to the task graph's files: the node, the per-address and
 * per-buffer ordering state, and the graph's shared state (tgt_graph.h says
 * what the graph is).  The graph is five files, one job each, each calling
 * only those above it in this list:
 *
 *   tgt_graph.c       the state below and a node's life: references, lists,
 *                     queues, the live list, readiness
 *   tgt_flush.c       flush points place pending nodes (the scheduler glue)
 *   tgt_ahead_head.c  the head's half of launch-ahead (tgt_ahead.c is the
 *                     executors' half)
 *   tgt_dispatch.c    waiting, and the dispatch threads that run nodes;
 *                     the graph's start and end
 *   tgt_record.c      recording: a construct's plan of data ops made a
 *                     node, its dependence and buffer edges, host bytes
 *                     still to be written
 *
 * (tests/common/check_file_deps.py checks that no call cycle runs
 * through them.)
 *
 * Locks (their order is in tgt_internal.h): tgt_g.mtx guards the graph and
 * every node field not marked otherwise; tgt_g.sched_mtx lets one flush
 * place nodes at a time; tgt_g.ahead_mtx guards the per-buffer plans of
 * launch-ahead (ahead_buf_t). */
#ifndef OMPC_TGT_GRAPH_INTERNAL_H
#define OMPC_TGT_GRAPH_INTERNAL_H

#include "tgt_graph.h"

#include "ompc_sched.h"
#include "ompc_u64map.h"

#include <stdlib.h>

/* ------------------------------------------------------------------ ops */
typedef enum { OP_WRITE, OP_READ, OP_HOST_STORE, OP_FREE, OP_DONE } op_kind_t;

typedef struct tgt_op {
    op_kind_t kind;
    dm_buf_t *buf;
    size_t off, len;
    void *host;              /* READ: destination; HOST_STORE: the slot */
    void *data;              /* WRITE: owned snapshot, or the program's
                              * bytes if borrowed; HOST_STORE: value;
                              * READ: the bytes, once they came back with
                              * the kernel's reply (NULL: dm_read them) */
    bool back;               /* READ: asked for in the kernel's reply */
    bool borrowed;           /* WRITE: data is the program's (see BORROW_MIN) */
} tgt_op_t;

/* At most this many copies travel inside one kernel launch. */
#define INLINE_BUFS 16

/* ---------------------------------------------------------------- nodes */
typedef enum {
    N_RECORDING,             /* ops still being added */
    N_PENDING,               /* recorded, not scheduled yet */
    N_SCHEDULING,            /* a flush is placing it */
    N_WAITING,               /* placed, predecessors not done */
    N_READY,                 /* queued for a dispatch thread */
    N_RUNNING,
    N_DONE,
} node_state_t;

typedef struct node_list {
    tgt_node_t **v;
    size_t n, cap;
    bool inl;                /* v is storage inside the node: not freed */
} node_list_t;

/* Predecessors and successors a node holds inside itself before its lists
 * go to the heap: most nodes have a handful, and a block for each list was
 * two of the head's mallocs per task. */
#define NODE_INL_EDGES 4

struct tgt_node {
    uint64_t seq;
    _Atomic int refs;
    node_state_t state;
    /* N_READY with its pins taken (node_start, tgt_g.mtx): its data is
     * on the way to its executor, its launch follows. */
    bool starting;
    const tgt_ident_t *loc;
    const tgt_kernel_t *k;   /* NULL: data-only node */
    /* What was recorded: written by the recording thread until the node
     * enters the graph, then by the thread that runs the node. */
    char *msg;               /* the kernel's launch message (graph_msg_set) */
    size_t msg_len;
    bool msg_inl;            /* msg lies in the node's block: not freed */
    dm_buf_t **bufs;         /* the kernel's buffers (made valid on exec) */
    size_t nbufs;
    dm_buf_t **wr;           /* the ones it may write */
    size_t nwr;
    tgt_op_t *ops;           /* ops[0, npre) before the kernel, the rest after */
    size_t nops, capops, npre;
    bool post;
    /* Edges and readiness. */
    node_list_t preds;       /* references held until this node is done */
    node_list_t succs;
    int npred_left;
    int nunsent;             /* preds neither done nor launched ahead */
    bool hostside;           /* runs head-side ops once its preds are done */
    int nwaiters;            /* threads in graph_wait_node on it */
    /* Running it (tgt_dispatch.c). */
    int exec;
    ompc_status_t kst;
    uint64_t kernel_ns;      /* measured on the executor */
    ev_handle_t *h;          /* a direct launch's kernel event */
    bool waited;             /* a thread waits on its kernel event */
    uint64_t *reply;         /* direct launch with read-backs: tgt.kernel's
                              * reply (tgt_wire.h); else NULL */
    size_t reply_len;
    bool inlined;            /* inline_writes ran */
    dm_buf_t *inl[INLINE_BUFS]; /* buffers whose data came with the launch */
    size_t ninline;
    /* Placement by a flush (tgt_flush.c). */
    struct {
        uint64_t batch;      /* flush that scheduled it (0: held back) */
        int64_t idx;         /* its index in that flush's batch */
        int32_t pref;        /* HEFT: worker from the whole flush's shape, or -1 */
        int placed_on;       /* executor whose tgt_g.placed counts it, or -1 */
        double est_finish;   /* seconds on the graph clock */
        bool deferred;       /* in tgt_g.held (see hold_unmeasured) */
        bool holds;          /* something was held back until it is done */
        bool was_held;       /* counted in stats.held */
    } sched;
    /* Launch-ahead (tgt_ahead_head.c).  pulled, pulled_tag and abufs are
     * written by the launching thread and read by the finishing one. */
    struct {
        bool launched;       /* sent before its predecessors were done */
        bool kdone;          /* its executor reported it done */
        bool sent;           /* the launching thread is done with it */
        dm_buf_t **pulled;   /* copies that arrive on exec for it */
        uint64_t *pulled_tag; /* the writer whose data each one brings */
        size_t npulled;
        struct ahead_buf **abufs; /* per-buffer plans it takes part in */
        size_t nabufs;
        ompc_tmap_node_t anode; /* tgt_g.ahead_nodes, key seq */
    } ahead;
    /* Built before its turn (tgt_record.c): its ticket, whether its
     * thread waits for it, and a copy of its depend list. */
    struct {
        uint64_t ticket;
        bool wait;
        bool hw;             /* it will write host bytes (READ, HOST_STORE) */
        tgt_dep_t *deps;
        int ndeps;
    } park;
    tgt_node_t *qnext;       /* pending / ready / finished / blocked queue */
    tgt_node_t *lprev, *lnext; /* live list (not done), in seq order */
    tgt_node_t *inl_preds[NODE_INL_EDGES], *inl_succs[NODE_INL_EDGES];
    /* bufs, wr and the ahead lists (pulled_tag, pulled, abufs: one slot
     * per buffer) live in this one block with the node (tgt_rec_construct
     * sizes it): never freed on their own. */
    _Alignas(uint64_t) unsigned char tail[];
};

/* ------------------------------------------------------ ordering state */
/* Per depend address: the last writer group and the readers since. */
typedef struct dep_state {
    ompc_tmap_node_t node;   /* key: address */
    node_list_t writers;     /* one out/inout node, or an inoutset group */
    bool set;                /* writers is an inoutset group */
    node_list_t set_preds;   /* what the group's members wait for */
    node_list_t readers;
    size_t prune_at;         /* readers.n that triggers the next prune */
} dep_state_t;

/* Per buffer: the last node with data ops on it and the users since. */
typedef struct buf_state {
    ompc_tmap_node_t node;   /* key: buffer device address */
    tgt_node_t *last_op;
    node_list_t users;
    size_t prune_at;         /* users.n that triggers the next prune */
} buf_state_t;

/* Per buffer used by launched-ahead nodes in flight: where its next data
 * comes from.  hold[x] is the node on executor x after which x has the
 * data (0: ask the data manager).  Guarded by tgt_g.ahead_mtx. */
typedef struct ahead_buf {
    ompc_tmap_node_t node;   /* key: buffer device address */
    int users;               /* launched-ahead nodes in flight using it */
    uint64_t wseq;           /* the launched-ahead writer in flight, or 0 */
    int wexec;
    uint64_t hold[];         /* per executor */
} ahead_buf_t;

/* Host bytes a node not yet done will write (READ and HOST_STORE ops). */
typedef struct host_write {
    uintptr_t begin, end;
    tgt_node_t *n;
} host_write_t;

/* A FIFO of nodes linked through qnext. */
typedef struct queue {
    tgt_node_t *head, *tail;
    size_t n;
} queue_t;

/* ---------------------------------------------------------------- state */
typedef struct tgt_graph_state {
    /* Set once started; cleared under mtx at program end, when libomp's
     * worker threads may still report the end of their last barrier. */
    _Atomic bool active;
    pthread_mutex_t mtx;     /* everything below but the sched_ fields */
    pthread_cond_t cv_work;  /* dispatch threads: something to do */
    pthread_cond_t cv_done;  /* waiters: a node they wait for is done */
    /* Recorders held back (nlive too high) sleep on a condition of their
     * own: woken with the waiters on cv_done, they were woken at every
     * node done that was the oldest live one, a context switch per task
     * on the recording thread for as long as it was held back. */
    pthread_cond_t cv_room;
    int room_waiters;
    /* Nodes enter the graph in ticket order (tgt_plan_t, tgt_record.c):
     * the last ticket whose node is in; nodes built before their turn,
     * parked at parked[ticket % capparked] (all parked tickets lie in
     * (rec_turn, rec_turn + capparked]) until the one before them enters;
     * the highest ticket ever parked; threads waiting for a turn. */
    uint64_t rec_turn;
    tgt_node_t **parked;
    size_t nparked, capparked;
    size_t nparked_hw;       /* parked nodes that will write host bytes */
    uint64_t park_max;
    pthread_cond_t cv_turn;
    int turn_waiters;
    /* Threads in tgt_graph_sync_all, and a seq at or below each one's
     * target: the oldest live node passing it wakes them (UINT64_MAX when
     * there are none). */
    int sync_waiters;
    uint64_t sync_upto;
    /* Whether the head needs each completion promptly (graph_need_add):
     * threads waiting for a node, and live nodes that run on the head once
     * their predecessors are done.  Launch batches carry need > 0 and
     * need_gen, and a rise from 0 reaches the workers told otherwise at
     * once. */
    int need;
    uint64_t need_gen;
    bool *relaxed_sent;      /* per rank: its last batch said "not needed" */
    uint64_t seq;
    uint64_t nlive;
    tgt_node_t *live_head, *live_tail;
    /* Recorded, not placed yet, in record order: recorders append, a
     * flush takes the whole array.  (A queue linked through the nodes had
     * the flush chase one pointer per node, each a cache miss: the nodes
     * were recorded a window ago.) */
    tgt_node_t **pend;
    size_t npend, cappend;
    /* Queues.  held: flushes push and pop.  ready, finished: any thread
     * pushes (schedule, completion callbacks, node_done); dispatch threads,
     * helping waiters and recorders running their window pop.  blocked:
     * node_start pushes, node_done pops. */
    queue_t ready, finished, blocked;
    queue_t held;            /* held back by a flush: before pend */
    tgt_node_t *last_all;    /* latest omp_all_memory node */
    ompc_tmap_t deps;        /* dep_state_t by address */
    ompc_tmap_t bstate;      /* buf_state_t by buffer */
    host_write_t *hw;
    size_t nhw, caphw;
    double *busy_until;      /* per executor, graph clock */
    int64_t *placed;         /* per executor: kernels placed there, not done */
    uint64_t t0_ns;          /* graph clock origin */
    bool stop;
    pthread_t *threads;
    int nthreads;
    pthread_mutex_t sched_mtx; /* one flush places nodes at a time */
    uint64_t batches;        /* sched_mtx */
    const sched_policy_t *policy; /* OMPC_SCHEDULER, set by tgt_graph_init */
    sched_state_t sched_state; /* what the policy keeps between flushes
                                * (sched_mtx) */
    uint64_t ndone;          /* nodes done (pins may have been released) */
    _Atomic size_t nwork;    /* nodes in ready + finished (read unlocked) */
    _Atomic int hot;         /* dispatch threads spinning for work */
    /* Recording threads launching their window (graph_run_window): the
     * ready queue is theirs meanwhile, dispatch threads take only
     * finished nodes. */
    int runners;
    bool ahead;              /* OMPC_AHEAD and there are workers */
    /* Launched ahead, not reported done: by seq.  Ordered: the fault
     * write-back and fault source walks go through it in seq order. */
    ompc_tmap_t ahead_nodes;
    pthread_mutex_t ahead_mtx; /* abufs */
    ompc_tmap_t abufs;       /* ahead_buf_t by buffer */
    tgt_graph_stats_t stats;
} tgt_graph_state_t;

/* The head's one task graph. */
extern tgt_graph_state_t tgt_g;

/* ------------------------------------------- shared by the graph's files
 * "tgt_g.mtx held": the caller holds it, and still does on return.  "No
 * graph lock held": the caller holds none of tgt_g's locks (it may hold
 * plan_mtx and map_mtx, which come before them). */

/* Parked nodes (tgt_record.c parks them), tgt_g.mtx held: returns
 * (having waited for them) once the nodes parked now with tickets up to
 * `below` are in the graph.  A target task whose node is parked is complete as far as
 * libomp knows: whatever reads the graph on behalf of tasks that follow
 * it (flush points, host tasks, copies of host bytes) calls this first.
 * With tgt_g.nparked 0 (always, while one thread records) there is
 * nothing to wait for: callers skip these calls then. */
void graph_parked_wait(uint64_t below);
/* The highest ticket parked now, below `below`, whose node will write host
 * bytes in [b, e) (anywhere: all), or whose depend list shares an address
 * with deps[0..nd) (or either names omp_all_memory); 0 if none, else
 * what to pass graph_parked_wait (tgt_g.mtx held). */
uint64_t graph_parked_hw(uintptr_t b, uintptr_t e, bool all, uint64_t below);
uint64_t graph_parked_dep(const tgt_dep_t *deps, int nd);

/* The core: the state above and a node's life. */
/* n's launch message becomes msg (a heap block n now owns, or NULL); the
 * one before is freed unless it lay in n's block.  n's recorder or
 * runner. */
static inline void graph_msg_set(tgt_node_t *n, char *msg, size_t len)
{
    if (!n->msg_inl)
        free(n->msg);
    n->msg_inl = false;
    n->msg = msg;
    n->msg_len = len;
}
/* The entry of m with exactly this key, or NULL. */
ompc_tmap_node_t *graph_tmap_find(ompc_tmap_t *m, uintptr_t key);
/* realloc that never returns NULL: out of memory is fatal, naming what. */
void *graph_xrealloc(void *p, size_t n, const char *what);
/* Appends n to l (takes no reference: a list that holds them takes one). */
void graph_list_push(node_list_t *l, tgt_node_t *n);
/* A zeroed block of size bytes for a node (graph_node_unref frees it). */
void *graph_node_block(size_t size);
void graph_node_ref(tgt_node_t *n);
/* Drops one reference (n may be NULL); the last frees the node.  Any thread. */
void graph_node_unref(tgt_node_t *n);
/* Drop a list's references; graph_list_free also frees its array
 * (tgt_g.mtx held or the caller owns the list). */
void graph_list_clear(node_list_t *l);
void graph_list_free(node_list_t *l);
/* Keeps only the nodes not done (tgt_g.mtx held). */
void graph_list_prune(node_list_t *l);
/* FIFO push and pop (tgt_g.mtx held).  work_ ones are for ready and
 * finished, whose total tgt_g.nwork spinning threads read unlocked. */
void graph_q_push(queue_t *q, tgt_node_t *n);
tgt_node_t *graph_q_pop(queue_t *q);
void graph_work_push(queue_t *q, tgt_node_t *n);
tgt_node_t *graph_work_pop(queue_t *q);
/* Seconds since tgt_graph_init: the clock of est_finish and busy_until. */
double graph_now(void);
/* tmap drain callbacks freeing a dep_state_t, a buf_state_t (tgt_g.mtx held). */
void graph_dep_state_free(ompc_tmap_node_t *t, void *arg);
void graph_buf_state_free(ompc_tmap_node_t *t, void *arg);
/* The head's need of prompt completions goes up or down by d (tgt_g.mtx
 * held); a rise from none is posted to the workers at once. */
void graph_need_add(int d);
/* The live list (nodes not done, in seq order) gains or loses n (tgt_g.mtx
 * held). */
void graph_live_append(tgt_node_t *n);
void graph_live_remove(tgt_node_t *n);
/* This thread takes queued work after the node it runs (dispatch threads,
 * helping waiters): it need not wake another for the first. */
extern _Thread_local bool graph_takes_more;
/* This thread runs the nodes that its flush and its launches make ready
 * (the recording thread with its window, graph_run_window): it wakes no
 * dispatch thread for them, and wakes them for what it leaves. */
extern _Thread_local bool graph_runs_ready;
/* n may be launched before its predecessors are done: a kernel whose only
 * ops are copies that travel with the launch, and frees after it (its ops
 * must not change meanwhile: tgt_g.mtx held, or n's recorder or runner). */
bool graph_ahead_candidate(const tgt_node_t *n);
/* Queues a waiting node that may be dispatched now; true if it was
 * (tgt_g.mtx held; the caller wakes a dispatch thread for it). */
bool graph_make_ready(tgt_node_t *n);
/* Wakes dispatch threads for `woken` nodes queued (tgt_g.mtx held). */
void graph_wake_dispatchers(size_t woken);
/* A node whose kernel is over goes to be finished, by a thread waiting
 * for it if there is one (tgt_g.mtx held). */
void graph_push_finished(tgt_node_t *n);
/* The same, but wakes no dispatch thread: returns true if one should be
 * (the caller wakes them once for a batch: graph_wake_dispatchers). */
bool graph_push_finished_quiet(tgt_node_t *n);
/* An OMPC_TRACE span of n from t0 until now.  Any thread, no lock. */
void graph_span(const char *cat, const tgt_node_t *n, const char *what, uint64_t t0,
                size_t bytes);

/* Flushes (tgt_flush.c). */
/* Looks OMPC_SCHEDULER up in the scheduler's table (any case) into
 * tgt_g.policy; an unknown name stops the job, naming the known ones.
 * Once, from tgt_graph_init, before any flush. */
void graph_policy_choose(void);
/* Places every pending and held node and queues those ready; does not wait.
 * mine: a node the caller will wait for and run itself, or NULL.  No graph
 * lock held. */
void graph_flush_keep(tgt_node_t *mine);
#define graph_flush() graph_flush_keep(NULL)
/* n counts, or stops counting, among the kernels placed on an executor
 * (tgt_g.mtx held). */
void graph_placed_add(tgt_node_t *n, int w);
void graph_placed_drop(tgt_node_t *n);

/* Launch-ahead, the head's half (tgt_ahead_head.c).  Launches are planned
 * per thread and sent in batches, one message per executor. */
/* Sends every launch this thread planned.  No graph lock held. */
void graph_lb_flush(void);
/* This thread should send its planned launches before planning another
 * (tgt_g.mtx held). */
bool graph_lb_due(void);
/* This thread holds planned launches.  No lock. */
bool graph_lb_held(void);
/* This thread's batches are full: send them before planning more.  No
 * lock. */
bool graph_lb_full(void);
/* Plans the launch of n, pinned and placed on executor e, an ahead
 * candidate whose copies all travel inside the launch (t0: when its start
 * began).  No graph lock held. */
void graph_ahead_launch(tgt_node_t *n, int e, uint64_t t0);
/* Takes in the report of launched-ahead n's executor (data now there, the
 * cost model, the per-buffer plans); the caller then runs n's ops after
 * the kernel and ends it.  No graph lock held. */
void graph_ahead_finish(tgt_node_t *n);
/* Before a direct launch of n on e: close the copies there it must not
 * read (tgt_ahead_head.c, the same judgement as a launch ahead). */
void graph_close_stale(tgt_node_t *n, int e);
/* dm_set_fault_write_hooks: a write-back of a task launched ahead waits
 * for the writers of the buffer ordered before the task (order: true if
 * the task names the buffer for writing, and the runs are dropped), then
 * goes on to the tasks launched before it that must see it (done).  Any
 * head thread but the gate, no lock held. */
bool graph_ahead_fault_write_order(int exec, uint64_t seq, uint64_t buf_addr,
                                   size_t size);
void graph_ahead_fault_write_done(int exec, uint64_t seq, const void *runs, size_t len);
/* dm_set_fault_source: where a fault of a task launched ahead reads a
 * buffer whose last writer it follows is done but not finished here. */
int graph_ahead_fault_source(int exec, const uint64_t *seqs, size_t n, uint64_t buf_addr);

/* Dispatch (tgt_dispatch.c). */
/* Returns once n is done, running queued work meanwhile.  The caller holds
 * a reference on n and no graph lock. */
void graph_wait_node(tgt_node_t *n);
/* The recording thread's flush of a full window: places the pending
 * nodes, then launches ahead itself those the flush and its own launches
 * make ready, and sends them; the rest (data to move first, a split, a
 * blocked pin) goes to the dispatch threads.  No graph lock held. */
void graph_run_window(void);

#endif
