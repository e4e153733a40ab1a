/* Private to event-system/: the context, operations (one half of an event on
 * one rank), the wire format, and debugging hooks used by the tests. */
#ifndef OMPC_EV_INTERNAL_H
#define OMPC_EV_INTERNAL_H

#include "ompc_ev.h"
#include "ompc_tmap.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>

/* ------------------------------------------------------------ wire format */
#define EV_MAGIC 0x4f4d5045u /* "OMPE" */
#define EV_NOTIFY_TAG 1      /* every notification, on the control comm */

typedef enum ev_kind {
    EV_K_ALLOC = 1,
    EV_K_FREE,
    EV_K_SUBMIT,
    EV_K_RETRIEVE,
    EV_K_EXCHANGE,      /* origin half at the commanding rank */
    EV_K_EXCH_SEND,     /* destination half at the source rank */
    EV_K_EXCH_RECV,     /* destination half at the target rank */
    EV_K_EXCH_LOCAL,    /* source and target are the same rank */
    EV_K_EXECUTE,
    EV_K_SYNC,
    EV_K_EXIT,
    EV_K_PING,          /* liveness probe, answered by the gate thread */
    EV_K_PONG,
    EV_K_COUNT
} ev_kind_t;

const char *ev_kind_name(int kind);

#define EV_F_INLINE 0x1u /* payload carries the data */
#define EV_F_ONEWAY 0x2u /* execute without a tag or a reply (ev_post) */
/* The sender's gate was polling when this left and stays at it for a while:
 * the receiver need not ring it for the next while (ev_bell.c). */
#define EV_F_HOT 0x4u

/* Notification: sent by the origin to the destination's gate thread. */
typedef struct ev_wire_hdr {
    uint32_t magic;
    uint16_t kind;
    uint16_t flags;
    int32_t origin;   /* must equal the MPI source */
    int32_t tag;      /* event tag, unique among the origin's live events */
    int32_t peer;     /* exchange: the other party */
    uint32_t payload; /* bytes following this header */
    uint64_t addr;
    uint64_t addr2;
    uint64_t size;
    uint64_t arg;
} ev_wire_hdr_t;

/* Reply (destination -> origin) and exchange data header (source ->
 * target); inline payload follows. */
typedef struct ev_wire_reply {
    int32_t status;
    uint32_t payload;
    uint64_t value;
} ev_wire_reply_t;

/* Each event tag t uses two MPI tags on its pool communicator: 2t for data
 * chunks (and the exchange data header), 2t+1 for replies.  Distinct
 * channels keep a reply from ever matching a receive posted for data when
 * two roles of one event share a pair of ranks. */
#define EV_MPITAG_DATA(t) (2 * (t))
#define EV_MPITAG_REPLY(t) (2 * (t) + 1)

/* ------------------------------------------------------------- operations */
typedef enum ev_role { EV_ORIGIN, EV_DEST } ev_role_t;

/* What a step function asks for next. */
#define EV_STEP_DONE 0        /* the op is finished */
#define EV_STEP_WAIT 1        /* waiting on MPI requests or on a condition */
#define EV_STEP_HANDLER 2     /* run the next step on a handler thread */

/* Request cookies: which counter a completed request decrements. */
enum { EV_RQ_MISC = 0, EV_RQ_CHUNK = 1, EV_RQ_REPLY = 2, EV_RQ_NCOOKIES };

#define EV_OP_NEWREQ_MAX 72 /* > window max (64) + a few control requests */

/* A chunked transfer belonging to one op. */
typedef struct ev_stream {
    char *buf;
    size_t size;
    size_t posted;   /* bytes covered by posted requests */
    int inflight;    /* chunk requests not yet complete */
    bool send;
    bool discard;    /* receive into scratch (bad destination: drain) */
    int peer;
    int mpitag;
} ev_stream_t;

typedef struct ev_op ev_op_t;
typedef int (*ev_step_fn_t)(ev_ctx_t *ctx, ev_op_t *op);

struct ev_op {
    ev_op_t *next;            /* inbox / handler queue / wait list link */
    ev_op_t *aprev, *anext;   /* arrival order of destination halves */
    ev_op_t *hnext;           /* tag hash chain (destination halves) */
    ev_op_t *lprev, *lnext;   /* gate's list of live ops (liveness scan) */
    bool live;
    ev_step_fn_t step;
    int kind;
    ev_role_t role;
    int state;
    int32_t tag;              /* event tag (0 for ping/pong) */
    int comm_idx;
    int origin;
    int peer;                 /* rank this op mainly talks to */
    int peer2;                /* second rank (exchange), or -1 */
    int npending;             /* requests registered or queued */
    int ncook[EV_RQ_NCOOKIES];/* outstanding requests per cookie */
    int nnew;
    MPI_Request newreq[EV_OP_NEWREQ_MAX];
    int newcookie[EV_OP_NEWREQ_MAX];
    ev_stream_t stream;
    ev_handle_t *h;
    ompc_status_t status;
    uint64_t t_start;
    bool waitlisted;          /* on the gate's condition wait list */
    bool in_handler;
    /* origin: request parameters */
    const void *src;
    void *dst;
    size_t size;
    /* buffers owned by the op */
    void *msg;                /* notification received / being sent */
    size_t msg_len;
    void *msg2;               /* second notification (exchange) */
    void *rbuf;               /* reply buffer(s) */
    size_t rbuf_cap;
    void *rbuf2;
    void *scratch;
    void *staged;             /* where a stream lands first (land stage hook) */
    void *sbuf;               /* outgoing reply */
    /* destination: decoded header */
    ev_wire_hdr_t hdr;
};

struct ev_handle {
    _Atomic int refs;
    _Atomic int done;
    ompc_status_t status;
    int kind;
    int32_t tag;
    ev_addr_t addr;
    size_t result_size;
    void *result;
    size_t result_cap;
    /* ev_handle_on_done: 0 none yet, 1 registered, 2 completed. */
    _Atomic int cb_state;
    ev_done_fn_t cb;
    void *cb_arg;
};

/* ------------------------------------------------------ region registry */
typedef struct ev_region {
    ompc_tmap_node_t node; /* key: base address */
    size_t size;
    bool owned;            /* allocated by ev_alloc: may be freed remotely */
} ev_region_t;

/* ------------------------------------------------------------ context */
#define EV_HASH_BUCKETS 4096
#define EV_MAX_FNS 1024

typedef struct ev_fn_entry {
    const char *name;
    ev_fn_t fn;
    unsigned flags;
} ev_fn_entry_t;


/* ------------------------------------------------------------- doorbells */
/* ev_bell.c: how an idle gate thread is woken (see there for why). */
typedef struct ev_bell_peer {
    int fd;                      /* socket to ring it through; -1: none */
    uint64_t quiet_ns;           /* ring it if silent (and unrung) this long */
    socklen_t len;
    struct sockaddr_storage addr;
} ev_bell_peer_t;

typedef struct ev_bell {
    int fd_wake;                 /* eventfd: this rank's own threads */
    int fd_local;                /* abstract AF_UNIX datagrams: same host */
    int fd_udp;                  /* UDP: other hosts (-1: none) */
    ev_bell_peer_t *peers;       /* per rank */
    _Atomic uint64_t *heard;     /* per rank: last notification or reply, ns */
    _Atomic uint64_t *rung;      /* per rank: last ring, ns */
    _Atomic uint64_t *alive;     /* per rank: last ping or pong by datagram, ns */
    uint64_t job;                /* this job's id, in every liveness datagram */
    bool reachable;              /* every peer can ring this rank */
    /* Nap words (OMPC_DOORBELL_AWAKE): one per rank of this host in
     * memory MPI shares between them; bit 0: the gate may sleep (peers
     * ring it), the rest: rings its peers left out.  The bit is changed
     * by its gate only; senders add to the count while the bit is clear.
     * See ev_bell.c. */
    MPI_Win nap_win;             /* MPI_WIN_NULL: none */
    _Atomic uint32_t **nap;      /* per rank: its word; NULL: other host or off */
    _Atomic uint32_t *my_nap;    /* this rank's word, or NULL */
    uint32_t nap_seen;           /* the count at the gate's last nap_begin */
    _Atomic uint64_t st_rung;    /* rings sent */
    _Atomic uint64_t st_awake;   /* rings left out: the peer's gate was awake */
} ev_bell_t;


/* A rank's process, for messages. */
typedef struct ev_peer_id {
    int64_t pid;
    char host[56];
    int32_t world_rank; /* in MPI_COMM_WORLD */
    int32_t pad;
} ev_peer_id_t;

struct ev_ctx {
    int rank, size;
    int world_rank;          /* this rank in MPI_COMM_WORLD, for messages */
    MPI_Comm world;          /* the context's ranks (ev_ctx_opts_t) */
    bool mpi_owned;          /* we called MPI_Init_thread */
    int tag_seq_max;
    MPI_Comm ctrl;           /* notifications */
    MPI_Comm coll;           /* start-up collectives */
    MPI_Comm *comms;         /* pool for event data and replies */
    int ncomms;
    const ompc_config_t *cfg;
    uint64_t spin_us;        /* OMPC_SPIN_US resolved */
    int coordinator;         /* ev_ctx_opts_t.coordinator */
    ev_node_t node;
    size_t chunk;
    int window;
    size_t inline_max;

    /* threads */
    pthread_t gate;
    pthread_t *handlers;
    int nhandlers;
    _Atomic int stopping;    /* destroy in progress: threads exit when idle */
    _Atomic int shutdown;    /* no new events may start */
    _Atomic int started;     /* ev_ctx_start done: events may flow */

    /* inbox: ops handed to the gate (MPSC: any thread -> gate) */
    pthread_mutex_t inbox_mtx;
    ev_op_t *inbox_head, *inbox_tail;
    _Atomic int inbox_nonempty;
    _Atomic int gate_sleeping;   /* in ev_bell_wait: wake with ev_bell_wake */
    _Atomic uint64_t gate_busy_ns; /* the gate's last progress (EV_F_HOT) */
    /* ev_set_gate_work: the gate marks itself in gate_work_busy, then
     * reads fn, then arg; a setter clearing fn waits until the gate is out
     * of it before it changes arg (both sequentially consistent). */
    _Atomic(ev_gate_work_fn_t) gate_work;
    void *_Atomic gate_work_arg;
    _Atomic int gate_work_busy;
    /* ev_gate_hold: the gate is in long work of the rank (a kernel that
     * may take page faults); waiters drive progress themselves. */
    _Atomic int gate_held;
    /* ev_gate_work_by: the earliest time the gate's work must run again
     * (0: none); the gate clears it when it wakes for it. */
    _Atomic uint64_t gate_work_by;

    /* handler queue (MPMC: gate -> handlers) */
    pthread_mutex_t hq_mtx;
    pthread_cond_t hq_cond;
    ev_op_t *hq_head, *hq_tail;
    _Atomic int handler_ops;     /* ops queued for or running on handlers */
    _Atomic int hot_handlers;    /* handlers polling the queue, not asleep */
    _Atomic(ev_op_t *) hq_peek;  /* hq_head, readable without the lock */

    /* The progress role: whoever holds progress_mtx runs passes of the
     * engine (normally the gate thread; a thread waiting on an event takes
     * the role while it spins, which saves a thread hand-off per reply).
     * Everything below up to the origin tags is protected by it. */
    pthread_mutex_t progress_mtx;
    _Atomic int progress_active; /* a thread holds the role right now */
    _Atomic int spinners;        /* waiters polling in their spin phase */
    _Atomic int chunks;          /* data chunks in flight, sent or received */
    MPI_Request *reqs;
    ev_op_t **req_owner;
    int *req_cookie;
    int nreqs, capreqs;
    int *tsome_idx;
    ev_op_t *waitlist;            /* ops waiting on a condition, not I/O */
    ev_op_t *arr_head, *arr_tail; /* destination halves in arrival order */
    ev_op_t *dest_hash[EV_HASH_BUCKETS];
    uint64_t *last_heard;         /* per rank, ns */
    uint64_t *last_ping;
    uint64_t next_liveness_ns;
    /* ev_peer_expect: per rank, the open count (any thread) and when it
     * last rose from 0 (silence before that is not waiting). */
    _Atomic int *owed;
    _Atomic uint64_t *owed_since;
    _Atomic uint64_t started_ns;  /* ev_ctx_start, where the coordinator is watched */
    ev_peer_describe_fn_t describe;
    void *describe_arg;
    ev_peer_id_t *ids;            /* per rank, from start-up */
    ev_op_t *live_head;           /* every op the gate knows, for liveness */

    /* origin tags in use (any thread allocates, gate frees) */
    pthread_mutex_t tag_mtx;
    uint8_t *tag_busy;            /* indexed by seq */
    int tag_next;
    int tags_in_use;

    /* completion wakeups */
    pthread_mutex_t done_mtx;
    pthread_cond_t done_cond;
    _Atomic int done_waiters;
    _Atomic int hold_waiters;    /* of them, those woken by ev_gate_hold */
    _Atomic long origin_inflight;
    _Atomic int exit_received;

    /* registered functions: append-only, lock-free readers */
    pthread_mutex_t fn_mtx;
    ev_fn_entry_t fns[EV_MAX_FNS];
    _Atomic int nfns;

    /* memory regions */
    pthread_mutex_t reg_mtx;
    ompc_tmap_t regions;

    /* statistics */
    _Atomic uint64_t st_originated, st_served, st_bytes_sent, st_bytes_recv;
    _Atomic uint64_t st_chunks_done;

    /* ev_debug_recv_budget: receive chunks destination halves may still
     * post (-1: no limit, the default; any thread sets it, the progress
     * role takes from it). */
    _Atomic int64_t dbg_recv_budget;

    ev_bell_t bell;
};

/* ev_region.c */
ompc_status_t ev_region_insert(ev_ctx_t *ctx, uintptr_t base, size_t size, bool owned);
/* Remove the region starting exactly at base; owned_only refuses regions
 * exposed with ev_mem_register. */
ompc_status_t ev_region_remove(ev_ctx_t *ctx, uintptr_t base, bool owned_only);
bool ev_region_contains(ev_ctx_t *ctx, uintptr_t addr, size_t size);
void ev_region_destroy_all(ev_ctx_t *ctx);

/* ev_proto.c: per-kind steps */
void ev_dest_start(ev_ctx_t *ctx, ev_op_t *op);
/* A one-way execute (EV_F_ONEWAY) received by the gate: run it at once. */
void ev_dest_posted(ev_ctx_t *ctx, const ev_wire_hdr_t *h, const void *args, int src);
/* OMPC_OK if an origin event may start now. */
ompc_status_t ev_origin_check(ev_ctx_t *ctx, int kind);
/* ev_post's op after its notification was posted: done, or the gate's. */
void ev_origin_post_sent(ev_ctx_t *ctx, ev_op_t *op);
ev_op_t *ev_op_new(ev_ctx_t *ctx, int kind, ev_role_t role);
void ev_op_free(ev_op_t *op);

/* ev_core.c: services for the protocol code */
void ev_op_isend(ev_ctx_t *ctx, ev_op_t *op, const void *buf, size_t len, int peer,
                 MPI_Comm comm, int mpitag, int cookie);
void ev_op_irecv(ev_ctx_t *ctx, ev_op_t *op, void *buf, size_t len, int peer,
                 MPI_Comm comm, int mpitag, int cookie);
void ev_stream_pump(ev_ctx_t *ctx, ev_op_t *op);
bool ev_stream_done(const ev_op_t *op);
void ev_inbox_push(ev_ctx_t *ctx, ev_op_t *op);
/* Some thread of this rank polls MPI and will for at least 3/4 of the spin
 * window more (messages it sends carry EV_F_HOT). */
bool ev_progress_hot(ev_ctx_t *ctx);
void ev_handler_push(ev_ctx_t *ctx, ev_op_t *op);
void ev_op_complete(ev_ctx_t *ctx, ev_op_t *op);
/* Start a sync or exit event (no parameters besides the rank). */
ompc_status_t ev_start_control(ev_ctx_t *ctx, int kind, int rank, ev_handle_t **h_p);
ompc_status_t ev_origin_start(ev_ctx_t *ctx, ev_op_t *op, ev_handle_t **h_p);
const ev_fn_entry_t *ev_fn_lookup(ev_ctx_t *ctx, int64_t id);
void ev_signal_exit(ev_ctx_t *ctx);
_Noreturn void ev_proto_fatal(ev_ctx_t *ctx, int src, const ev_wire_hdr_t *hdr,
                              const char *what);
bool ev_arrivals_before_done(ev_ctx_t *ctx, ev_op_t *op);

/* Send raw bytes as a notification to rank: tests use it to inject
 * malformed messages.  Blocks until sent. */
ompc_status_t ev_debug_send_raw(ev_ctx_t *ctx, int rank, const void *bytes, size_t len);
/* Allocate an event tag as a real event would (tests build headers). */
int32_t ev_debug_tag(ev_ctx_t *ctx);
/* Tests: from now on, the transfers this rank receives as a destination
 * (submit, the target of an exchange) post at most n more data chunks
 * between them; n < 0 lifts the limit.  Such a transfer then stays open,
 * its notification handled and its other chunks unposted, for as long as
 * the test wants, so that what happens beside it does not depend on how
 * fast it would have finished.  ev_debug_recv_allow lets n more in under
 * a limit (none: no effect).  Any thread may call them. */
void ev_debug_recv_budget(ev_ctx_t *ctx, int64_t n);
void ev_debug_recv_allow(ev_ctx_t *ctx, int64_t n);

#define EV_CHECK_MPI(call, what)                                                         \
    do {                                                                                 \
        int ev_rc_ = (call);                                                             \
        if (ev_rc_ != MPI_SUCCESS) {                                                     \
            char ev_msg_[MPI_MAX_ERROR_STRING];                                          \
            int ev_len_ = 0;                                                             \
            MPI_Error_string(ev_rc_, ev_msg_, &ev_len_);                                 \
            ompc_fatal("MPI call failed: %s: %s", what, ev_msg_);                        \
        }                                                                                \
    } while (0)

/* Doorbells (ev_bell.c).  init is collective over ctx->coll (before the
 * threads start); ring and heard may be called by any thread; wait by the
 * gate thread only; wake by any thread. */
ompc_status_t ev_bell_init(ev_ctx_t *ctx);
void ev_bell_fini(ev_ctx_t *ctx);
void ev_bell_ring(ev_ctx_t *ctx, int peer);
/* Gate thread only: publish that the gate may sleep (nap_begin: true if a
 * peer left out a ring since the last call, and the gate must then poll
 * EV_WAKE_PASSES more times before it sleeps) or that it is awake and
 * will poll again before it sleeps (nap_end).  No-ops without nap words. */
bool ev_bell_nap_begin(ev_ctx_t *ctx);
void ev_bell_nap_end(ev_ctx_t *ctx);
void ev_bell_heard(ev_ctx_t *ctx, int peer);
void ev_bell_wake(ev_ctx_t *ctx);
/* true: woken (a ring or ev_bell_wake), not timed out */
bool ev_bell_wait(ev_ctx_t *ctx, uint64_t us);
/* Liveness by datagram, beside MPI: a rank whose MPI sends are stuck
 * behind a stopped peer (MPICH's shared-memory cells are the sender's,
 * and a stopped receiver never returns them) still answers here, so it is
 * not taken for the stopped one.  ev_bell_ping: false if peer has no bell.
 * ev_bell_poll: answers pings waiting in the sockets (never blocks). */
bool ev_bell_ping(ev_ctx_t *ctx, int peer, bool pong);
void ev_bell_poll(ev_ctx_t *ctx);

#endif
