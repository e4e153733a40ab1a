/* ompc event system: asynchronous remote operations between MPI ranks.
 *
 * Every rank runs a gate thread (receives event notifications and drives all
 * MPI progress with non-blocking calls) and a pool of handler threads (run the
 * CPU work of events, such as registered functions).  Any rank may originate
 * an event towards any rank; the origin gets a handle to wait on or poll.
 *
 * This layer knows nothing of OpenMP.  Remote memory is named by ev_addr_t,
 * an address in the destination process, valid only inside a region that
 * rank allocated with ev_alloc or exposed with ev_mem_register.
 *
 * Thread safety: every function may be called from any thread of the rank
 * that created the context, including from inside a registered function,
 * unless its comment says otherwise. */
#ifndef OMPC_EV_H
#define OMPC_EV_H

#include "ompc_common.h"
#include <mpi.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ev_ctx ev_ctx_t;
typedef struct ev_handle ev_handle_t;
typedef uint64_t ev_addr_t;
typedef int32_t ev_fn_id_t;

/* Largest argument block and result block of an execute event. */
#define EV_EXEC_MAX_ARGS (64 * 1024)
#define EV_EXEC_MAX_RESULT (64 * 1024)

/* Create the event system: initialises MPI as ev_mpi_start does,
 * duplicates the communicator pool, starts the gate and handler threads.
 * Collective over MPI_COMM_WORLD (or the options' world).  Call from the
 * main thread, then register functions, then call ev_ctx_start. */
ompc_status_t ev_ctx_create(ev_ctx_t **ctx_p);

/* Initialises MPI with MPI_THREAD_MULTIPLE unless it is initialised
 * already (a lower thread level is a fatal error that names the MPI
 * library).  For a caller that needs MPI before it creates a context (to
 * split the ranks); it then ends MPI itself with ev_mpi_finish after
 * ev_ctx_destroy, which leaves MPI running when the context did not start
 * it.  Main thread, before any context exists. */
ompc_status_t ev_mpi_start(void);
/* MPI_Finalize, if ev_mpi_start initialised MPI; else nothing. */
void ev_mpi_finish(void);

/* The first line of MPI_Get_library_version, for messages that name the
 * MPI library (callable before MPI_Init). */
void ev_mpi_library(char *buf, size_t cap);

/* What the caller knows of the ranks' roles. */
typedef struct ev_ctx_opts {
    /* A rank whose threads only coordinate while the others compute on
     * every CPU they may use (-1: none).  Where it shares its CPUs with
     * other ranks it counts as crowded (ev_node): its polling would take
     * a core from their work; so do the others where they share theirs. */
    int coordinator;
    /* The ranks of the context: a communicator the caller keeps alive
     * until ev_ctx_destroy returns, whose rank 0... are the context's
     * ranks (zero or MPI_COMM_NULL: MPI_COMM_WORLD).  Every message of the
     * context runs on duplicates of it; log lines and the liveness message
     * still name each rank by its rank in MPI_COMM_WORLD. */
    MPI_Comm world;
} ev_ctx_opts_t;

/* ev_ctx_create with options (NULL: the defaults, no coordinator). */
ompc_status_t ev_ctx_create_opts(ev_ctx_t **ctx_p, const ev_ctx_opts_t *opts);

/* Collective: after it returns on a rank, every rank has registered all its
 * functions, so events may flow.  Events started before it are refused
 * (OMPC_ERR_INVALID), and so are registrations after it. */
ompc_status_t ev_ctx_start(ev_ctx_t *ctx);

int ev_ctx_rank(const ev_ctx_t *ctx);
int ev_ctx_size(const ev_ctx_t *ctx);

/* The ranks on this rank's node whose CPU set is the same as this rank's:
 * they share those CPUs (ranks bound to disjoint sets do not count). */
typedef struct ev_node {
    int ncpus;        /* CPUs this rank may run on */
    int nsame;        /* ranks sharing them, this one included */
    const int *same;  /* their world ranks, ascending */
    bool crowded;     /* more sharing ranks than CPUs, a single CPU, or
                         a job with a coordinator and other ranks here */
} ev_node_t;
const ev_node_t *ev_node(const ev_ctx_t *ctx);

/* How long an idle thread polls before it sleeps (OMPC_SPIN_US, with auto
 * resolved: 0 on a crowded node). */
uint64_t ev_spin_us(const ev_ctx_t *ctx);

/* Worker side: block until some rank sends the exit event, serving events
 * meanwhile (they are served by the gate and handler threads whether or not
 * a thread sits here).  The thread waiting here does not drive progress
 * while the gate is held (ev_gate_hold): the exit can wait for the gate. */
ompc_status_t ev_ctx_serve(ev_ctx_t *ctx);

/* Head side (the one rank that owns the job's lifetime): wait for every
 * event this rank originated, flush all ranks (sync), then send exit to all
 * other ranks and wait for them to acknowledge. */
ompc_status_t ev_ctx_shutdown(ev_ctx_t *ctx);

/* Stop the threads, free the communicators, and finalise MPI if
 * ev_ctx_create initialised it.  Collective.  On a worker, call after
 * ev_ctx_serve returned; on the head, after ev_ctx_shutdown. */
void ev_ctx_destroy(ev_ctx_t *ctx);

/* ----------------------------------------------------- registered functions
 * A function runs on a handler thread of the destination rank.  It gets the
 * argument bytes and may write up to result_cap bytes of result.  Functions
 * must be registered on every rank in the same order (ids are indices),
 * between ev_ctx_create and ev_ctx_start.
 * A function that originates events must wait for them before it returns, so
 * that a flush (sync) of its rank covers them too. */
typedef struct ev_exec_info {
    ev_ctx_t *ctx;
    int origin;          /* rank that sent the execute event */
    const void *args;
    size_t args_size;
    void *result;        /* result buffer, result_cap bytes */
    size_t result_cap;
    size_t result_size;  /* set by the function; 0 by default */
} ev_exec_info_t;

typedef ompc_status_t (*ev_fn_t)(ev_exec_info_t *info);

/* EV_FN_INLINE marks a function short and non-blocking (no waits, no
 * locks held long): it runs on the gate thread itself, which saves a thread
 * hand-off (control-plane RPCs).  While it runs, this rank receives
 * nothing and answers no ping, so it must be bounded in time by what it
 * does, not by what it is given: user code may run here only when the
 * caller has measured it short (launch-ahead runs a kernel this way when
 * the kernel was short in every earlier run, tgt_ahead.c), and the caller
 * then owns the risk that it turns long (a peer takes this rank for
 * stopped after OMPC_PEER_TIMEOUT; docs/reliability.md). */
#define EV_FN_INLINE 0x1u

ompc_status_t ev_fn_register(ev_ctx_t *ctx, const char *name, ev_fn_t fn, unsigned flags,
                             ev_fn_id_t *id_p);

/* ------------------------------------------------------------------ memory */
/* Expose local memory so that remote submit/retrieve/exchange may target it.
 * Regions must not overlap an existing one. */
ompc_status_t ev_mem_register(ev_ctx_t *ctx, void *base, size_t size);
ompc_status_t ev_mem_unregister(ev_ctx_t *ctx, void *base);
/* Whether [base, base+size) lies inside one exposed region. */
bool ev_mem_contains(ev_ctx_t *ctx, const void *base, size_t size);
/* The exposed region holding addr: its start and size (false: none). */
bool ev_mem_find(ev_ctx_t *ctx, const void *addr, uintptr_t *base_p, size_t *size_p);
/* Called (gate thread) before a transfer lands in memory exposed with
 * ev_mem_register: size bytes at addr, and the bytes themselves when they
 * came with the message (else they stream in after the call).  It returns
 * true if it placed the bytes itself.  One per process (the data
 * manager's: a copy it keeps without access until its data lands). */
typedef bool (*ev_land_hook_fn_t)(uintptr_t addr, size_t size, const void *bytes);
void ev_set_land_hook(ev_land_hook_fn_t fn);
/* Called (gate thread) before a transfer of size bytes to addr lands, even
 * before its range is checked: false keeps it waiting (its event is tried
 * again on the gate's later passes, its bytes not received yet), true lets
 * it land (the hook may expose the range first).  It must not wait.  One
 * per process (the data manager's: data must not land where a running
 * kernel holds pages it got through faults). */
typedef bool (*ev_land_ready_fn_t)(uintptr_t addr, size_t size);
void ev_set_land_ready_hook(ev_land_ready_fn_t fn);
/* Called (gate thread) before size bytes stream to addr, in place of the
 * land hook: where they stream to, or NULL for addr itself.  Memory it
 * returns is handed back to the done hook once every byte arrived, before
 * the sender hears that they landed; the done hook puts them at addr.
 * One pair per process (the data manager's: a copy kept without access
 * until its data lands opens with all of it, never as it streams in). */
typedef void *(*ev_land_stage_fn_t)(uintptr_t addr, size_t size);
typedef void (*ev_land_done_fn_t)(uintptr_t addr, size_t size, void *staged);
void ev_set_land_stage_hooks(ev_land_stage_fn_t stage, ev_land_done_fn_t done);
/* Called (gate thread) before the source side of an exchange reads size
 * bytes at addr of memory exposed with ev_mem_register: a copy of them is
 * being made on another rank.  One per process (the data manager's: the
 * copy here stops being the only one, and turns read-only). */
typedef void (*ev_send_hook_fn_t)(uintptr_t addr, size_t size);
void ev_set_send_hook(ev_send_hook_fn_t fn);

/* ------------------------------------------------------------------ events
 * Each call starts one event and returns at once with a handle (the caller
 * owns one reference and must ev_handle_release it).  Any local buffer passed
 * in must stay valid and untouched until the event completes.  A negative
 * return means the event was not started and *h_p is unchanged. */

/* Allocate size bytes (64-byte aligned) on rank; ev_handle_addr gives it. */
ompc_status_t ev_alloc(ev_ctx_t *ctx, int rank, size_t size, ev_handle_t **h_p);
/* Free a region that ev_alloc returned on rank. */
ompc_status_t ev_free(ev_ctx_t *ctx, int rank, ev_addr_t addr, ev_handle_t **h_p);
/* Copy size bytes from local src to dst on rank. */
ompc_status_t ev_submit(ev_ctx_t *ctx, int rank, const void *src, ev_addr_t dst,
                        size_t size, ev_handle_t **h_p);
/* Copy size bytes from src on rank to local dst. */
ompc_status_t ev_retrieve(ev_ctx_t *ctx, int rank, ev_addr_t src, void *dst, size_t size,
                          ev_handle_t **h_p);
/* Copy size bytes from src on src_rank to dst on dst_rank.  The data moves
 * directly between the two ranks; the calling rank only sends commands. */
ompc_status_t ev_exchange(ev_ctx_t *ctx, int src_rank, ev_addr_t src, int dst_rank,
                          ev_addr_t dst, size_t size, ev_handle_t **h_p);
/* Run function fn on rank with a copy of args; up to result_cap bytes of its
 * result land in result (local), ev_handle_result_size says how many. */
ompc_status_t ev_execute(ev_ctx_t *ctx, int rank, ev_fn_id_t fn, const void *args,
                         size_t args_size, void *result, size_t result_cap,
                         ev_handle_t **h_p);
/* One-way execute: run the EV_FN_INLINE function fn on rank with a copy of
 * args (copied before return), with no reply and no handle.  The message
 * leaves from the calling thread; the gate only finishes the send when
 * MPI did not complete it at once.  For high-rate notifications between
 * ranks (a reply would double the messages and wake both gates again).
 * A function that fails on rank ends the job there, naming this rank;
 * posts from one rank to another run in the order they were posted,
 * before any later event from the same origin. */
ompc_status_t ev_post(ev_ctx_t *ctx, int rank, ev_fn_id_t fn, const void *args,
                      size_t args_size);
/* Completes once every event that reached rank before this one has
 * completed there. */
ompc_status_t ev_sync(ev_ctx_t *ctx, int rank, ev_handle_t **h_p);
/* ev_sync on every rank (including this one) and wait for all of them. */
ompc_status_t ev_sync_all(ev_ctx_t *ctx);

/* ------------------------------------------------------------------ handles */
/* Block until the event completes; returns its final status (OMPC_OK or the
 * error the destination reported).  A peer that stops responding is detected
 * by the gate thread (OMPC_PEER_TIMEOUT) and ends the job with a message. */
ompc_status_t ev_wait(ev_handle_t *h);
/* Like ev_wait, but gives up after timeout_ns: OMPC_INPROGRESS then. */
ompc_status_t ev_wait_for(ev_handle_t *h, uint64_t timeout_ns);
/* Like ev_wait_for, but sleeps at once instead of polling first (leaves
 * progress to the gate thread): for pollers that are many and patient. */
ompc_status_t ev_wait_sleeping(ev_handle_t *h, uint64_t timeout_ns);
/* OMPC_INPROGRESS while running, else the final status.  Never blocks. */
ompc_status_t ev_test(ev_handle_t *h);
/* Call fn(arg, status) once the event completes (at once, in the caller, if
 * it has).  fn runs on whichever thread drives progress at that moment: it
 * must be short and must not wait for events.  One callback per handle. */
typedef void (*ev_done_fn_t)(void *arg, ompc_status_t status);
void ev_handle_on_done(ev_handle_t *h, ev_done_fn_t fn, void *arg);
/* For a call that starts one event and is waited on at once:
 *   ompc_status_t st = ev_finish(ev_submit(ctx, r, src, dst, n, &h), h);
 * waits for the event, releases h, and returns its status; if starting
 * failed (h was not set), returns that error. */
ompc_status_t ev_finish(ompc_status_t start_status, ev_handle_t *h);
/* Wait for n handles, returning the first error (all are waited for). */
ompc_status_t ev_wait_all(ev_handle_t **hs, size_t n);
/* Remote address produced by ev_alloc (0 before completion). */
ev_addr_t ev_handle_addr(const ev_handle_t *h);
/* Bytes of result written by an execute event. */
size_t ev_handle_result_size(const ev_handle_t *h);
void ev_handle_release(ev_handle_t *h);
/* Take one more reference (each reference is released once). */
void ev_handle_retain(ev_handle_t *h);

/* ------------------------------------------------------------- liveness
 * The gate ends the job when a peer this rank waits on sends nothing for
 * OMPC_PEER_TIMEOUT (it pings the peer after half of it; a live peer's
 * gate answers even while its kernels run).  A rank waits on a peer while
 *  - an event of its own awaits the peer's reply (automatic);
 *  - it declared, with ev_peer_expect, that something is owed to it from
 *    there without a reply to any event: a one-way post, data pushed to it;
 *  - the peer is the coordinator (ev_ctx_opts_t) and this rank is not: from
 *    ev_ctx_start until the coordinator's exit event, since such a rank
 *    only works for the coordinator and would otherwise outlive it.
 * The message names both ranks, the silent one's pid and host, and what
 * was waited for. */
/* n (> 0) more, or -n fewer, things owed to this rank by rank.  Any
 * thread; cheap (one atomic).  Ignored for this rank itself. */
void ev_peer_expect(ev_ctx_t *ctx, int rank, int n);
/* Describes, for the message, what this rank waits for from rank (`owed`:
 * the count ev_peer_expect left open there).  Called on the gate thread
 * just before it ends the job: it must not wait for events, and should
 * not block on locks that a stuck thread may hold (trylock).  Returns the
 * length written (snprintf's rules). */
typedef int (*ev_peer_describe_fn_t)(void *arg, int rank, int owed, char *buf,
                                     size_t cap);
/* Before ev_ctx_start. */
void ev_set_peer_describe(ev_ctx_t *ctx, ev_peer_describe_fn_t fn, void *arg);
/* Work the gate thread does between its progress passes: fn(arg) runs on
 * the gate after each pass, with no lock of the event system held, and
 * returns true if it did something (the gate then polls again before it
 * may nap).  It must be short or bounded, and must not wait for events
 * (the gate would wait for itself).  A rank that makes such work ready
 * from another thread must wake the gate itself (it may be asleep).  Any
 * thread; NULL removes it.  From another thread than the gate it returns
 * once the gate is out of the work it replaces, so that the owner may
 * free that work's argument. */
typedef bool (*ev_gate_work_fn_t)(void *arg);
void ev_set_gate_work(ev_ctx_t *ctx, ev_gate_work_fn_t fn, void *arg);
/* The gate's work must run again by about ns (ompc_now_ns's clock), even if
 * nothing rings the rank meanwhile: a napping gate wakes then (the
 * earliest of all such times asked since it last woke for one).  Any
 * thread; an atomic minimum, no system call (a gate already asleep sees
 * it at its next wake-up: call it from the gate's own work, or ring). */
void ev_gate_work_by(ev_ctx_t *ctx, uint64_t ns);
/* From the gate's work only, around work that may itself wait for events
 * through other threads (a kernel whose page faults another thread
 * serves): while held, every thread that waits on an event drives
 * progress itself instead of sleeping until the gate does, and so may the
 * gate thread's own waits inside that work (ev_ctx_serve's thread
 * excepted).  Costs one atomic store each way (and a wake-up of sleeping
 * waiters on events when held). */
void ev_gate_hold(ev_ctx_t *ctx, bool held);
/* True while data chunks this rank sends or receives are in flight: both
 * sides must progress them, so gate work should not hold the gate then.
 * Any thread; one atomic load. */
bool ev_chunks_in_flight(const ev_ctx_t *ctx);
/* The process behind rank, for messages: its pid and host name. */
long long ev_peer_pid(const ev_ctx_t *ctx, int rank);
const char *ev_peer_host(const ev_ctx_t *ctx, int rank);

/* ------------------------------------------------------------ collectives
 * For start-up agreement between ranks (not for the data path): every rank
 * calls them in the same order from its main thread.  They run on their own
 * communicator, so they never match event traffic. */
ompc_status_t ev_coll_bcast(ev_ctx_t *ctx, void *buf, size_t len, int root);
/* *value becomes the maximum of all ranks' values. */
ompc_status_t ev_coll_max(ev_ctx_t *ctx, int64_t *value);
/* Every rank contributes len bytes; out (size * len bytes, rank order) is
 * filled on every rank. */
ompc_status_t ev_coll_allgather(ev_ctx_t *ctx, const void *in, size_t len, void *out);

/* ----------------------------------------------------------- statistics */
typedef struct ev_stats {
    uint64_t events_originated;
    uint64_t events_served;
    uint64_t bytes_sent;      /* payload bytes this rank sent */
    uint64_t bytes_received;  /* payload bytes this rank received */
    uint64_t chunks_completed;/* data chunks of chunked transfers that
                                 completed here, sent or received */
} ev_stats_t;
void ev_ctx_stats(const ev_ctx_t *ctx, ev_stats_t *stats_p);

#ifdef __cplusplus
}
#endif
#endif
