/* Event-system engine: context lifetime, the gate thread (the single MPI
 * progress engine of a rank), handler threads, handles and liveness.
 *
 * Ownership rule that makes this lock-light: an op is, at any moment, owned
 * by exactly one of (a) the thread that created it and runs its first step,
 * (b) the gate thread (request table, wait list, arrival list), (c) the
 * handler queue or one handler thread.  Ops move between owners only through
 * the inbox (any -> gate) and the handler queue (gate -> handlers). */
#define _GNU_SOURCE
#include "ev_internal.h"
#include "ompc_cpu.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const kind_names[EV_K_COUNT] = {
    [0] = "invalid",
    [EV_K_ALLOC] = "alloc",
    [EV_K_FREE] = "free",
    [EV_K_SUBMIT] = "submit",
    [EV_K_RETRIEVE] = "retrieve",
    [EV_K_EXCHANGE] = "exchange",
    [EV_K_EXCH_SEND] = "exchange(send)",
    [EV_K_EXCH_RECV] = "exchange(recv)",
    [EV_K_EXCH_LOCAL] = "exchange(local)",
    [EV_K_EXECUTE] = "execute",
    [EV_K_SYNC] = "sync",
    [EV_K_EXIT] = "exit",
    [EV_K_PING] = "ping",
    [EV_K_PONG] = "pong",
};

const char *ev_kind_name(int kind)
{
    if (kind <= 0 || kind >= EV_K_COUNT)
        return "unknown";
    return kind_names[kind];
}

static void ev_mpi_abort_hook(int code)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) {
        /* Hydra drops output still in its pipes once a job is aborted; let
         * it forward the message that explains the abort first. */
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
}

/* ------------------------------------------------------------ tag space */
/* Event tag t = origin + size * seq: the origin is part of the tag, so an
 * exchange commanded by C cannot collide with events that its source rank A
 * originates itself towards the same target B on the same communicator. */
static int32_t tag_alloc(ev_ctx_t *ctx, int *comm_idx_p)
{
    pthread_mutex_lock(&ctx->tag_mtx);
    while (ctx->tags_in_use >= ctx->tag_seq_max) {
        /* Every tag is live: wait for completions (only possible with
         * millions of events in flight or a tiny MPI_TAG_UB). */
        pthread_mutex_unlock(&ctx->tag_mtx);
        sched_yield();
        pthread_mutex_lock(&ctx->tag_mtx);
    }
    int seq = ctx->tag_next;
    while (ctx->tag_busy[seq])
        seq = seq % ctx->tag_seq_max + 1;
    ctx->tag_busy[seq] = 1;
    ctx->tags_in_use++;
    ctx->tag_next = seq % ctx->tag_seq_max + 1;
    pthread_mutex_unlock(&ctx->tag_mtx);
    *comm_idx_p = seq % ctx->ncomms;
    return ctx->rank + ctx->size * seq;
}

static void tag_release(ev_ctx_t *ctx, int32_t tag)
{
    int seq = (tag - ctx->rank) / ctx->size;
    pthread_mutex_lock(&ctx->tag_mtx);
    OMPC_ASSERT(ctx->tag_busy[seq]);
    ctx->tag_busy[seq] = 0;
    ctx->tags_in_use--;
    pthread_mutex_unlock(&ctx->tag_mtx);
}

int32_t ev_debug_tag(ev_ctx_t *ctx)
{
    int ci;
    return tag_alloc(ctx, &ci);
}

/* ------------------------------------------------------------- requests */
void ev_op_isend(ev_ctx_t *ctx, ev_op_t *op, const void *buf, size_t len, int peer,
                 MPI_Comm comm, int mpitag, int cookie)
{
    OMPC_ASSERT(op->nnew < EV_OP_NEWREQ_MAX && len <= INT32_MAX);
    EV_CHECK_MPI(
        MPI_Isend(buf, (int)len, MPI_BYTE, peer, mpitag, comm, &op->newreq[op->nnew]),
        "MPI_Isend");
    op->newcookie[op->nnew++] = cookie;
    op->npending++;
    op->ncook[cookie]++;
    atomic_fetch_add_explicit(&ctx->st_bytes_sent, len, memory_order_relaxed);
    ev_bell_ring(ctx, peer);
    ompc_trace("--> %s tag %d to r%d mpitag %d (%zu B)", ev_kind_name(op->kind), op->tag,
               peer, mpitag, len);
}

void ev_op_irecv(ev_ctx_t *ctx, ev_op_t *op, void *buf, size_t len, int peer,
                 MPI_Comm comm, int mpitag, int cookie)
{
    (void)ctx;
    OMPC_ASSERT(op->nnew < EV_OP_NEWREQ_MAX && len <= INT32_MAX);
    EV_CHECK_MPI(
        MPI_Irecv(buf, (int)len, MPI_BYTE, peer, mpitag, comm, &op->newreq[op->nnew]),
        "MPI_Irecv");
    op->newcookie[op->nnew++] = cookie;
    op->npending++;
    op->ncook[cookie]++;
}

/* ev_debug_recv_budget's limit: true if the op may post one more chunk.
 * Only destination receives are limited: their steps wait for the whole
 * stream (ev_stream_done), and the gate re-steps them from its wait list
 * while nothing of theirs is in flight. */
static bool recv_budget_take(ev_ctx_t *ctx, const ev_op_t *op)
{
    if (op->role != EV_DEST || op->stream.send)
        return true;
    int64_t b = atomic_load_explicit(&ctx->dbg_recv_budget, memory_order_relaxed);
    while (b >= 0) {
        if (b == 0)
            return false;
        if (atomic_compare_exchange_weak_explicit(&ctx->dbg_recv_budget, &b, b - 1,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    }
    return true;
}

void ev_debug_recv_budget(ev_ctx_t *ctx, int64_t n)
{
    atomic_store(&ctx->dbg_recv_budget, n < 0 ? -1 : n);
    /* A held transfer waits on the gate's wait list: look at it now. */
    ev_bell_wake(ctx);
}

void ev_debug_recv_allow(ev_ctx_t *ctx, int64_t n)
{
    int64_t b = atomic_load(&ctx->dbg_recv_budget);
    while (b >= 0 && n > 0 &&
           !atomic_compare_exchange_weak(&ctx->dbg_recv_budget, &b, b + n))
        ;
    ev_bell_wake(ctx);
}

/* Keep up to `window` chunk requests of the op's stream in flight: a huge
 * transfer then never holds more than window*chunk bytes of the transport,
 * so small events interleave with it. */
void ev_stream_pump(ev_ctx_t *ctx, ev_op_t *op)
{
    ev_stream_t *s = &op->stream;
    MPI_Comm comm = ctx->comms[op->comm_idx];
    while (s->inflight < ctx->window && s->posted < s->size &&
           recv_budget_take(ctx, op)) {
        size_t len = s->size - s->posted;
        if (len > ctx->chunk)
            len = ctx->chunk;
        char *p = s->discard ? (char *)op->scratch : s->buf + s->posted;
        if (s->send) {
            ev_op_isend(ctx, op, p, len, s->peer, comm, s->mpitag, EV_RQ_CHUNK);
        } else {
            ev_op_irecv(ctx, op, p, len, s->peer, comm, s->mpitag, EV_RQ_CHUNK);
            atomic_fetch_add_explicit(&ctx->st_bytes_recv, len, memory_order_relaxed);
        }
        s->posted += len;
        s->inflight++;
        atomic_fetch_add_explicit(&ctx->chunks, 1, memory_order_relaxed);
        /* A discarding receive reuses one scratch chunk: one at a time. */
        if (s->discard)
            break;
    }
}

bool ev_stream_done(const ev_op_t *op)
{
    return op->stream.posted == op->stream.size && op->stream.inflight == 0;
}

/* Gate only: move the op's fresh requests into the request table. */
static void gate_register_reqs(ev_ctx_t *ctx, ev_op_t *op)
{
    if (ctx->nreqs + op->nnew > ctx->capreqs) {
        int cap = ctx->capreqs ? ctx->capreqs : 256;
        while (cap < ctx->nreqs + op->nnew)
            cap *= 2;
        MPI_Request *r = realloc(ctx->reqs, (size_t)cap * sizeof(*r));
        ev_op_t **o = realloc(ctx->req_owner, (size_t)cap * sizeof(*o));
        int *c = realloc(ctx->req_cookie, (size_t)cap * sizeof(*c));
        int *ix = realloc(ctx->tsome_idx, (size_t)cap * sizeof(*ix));
        if (!r || !o || !c || !ix)
            ompc_fatal("out of memory growing the request table to %d", cap);
        ctx->reqs = r;
        ctx->req_owner = o;
        ctx->req_cookie = c;
        ctx->tsome_idx = ix;
        ctx->capreqs = cap;
    }
    for (int i = 0; i < op->nnew; i++) {
        ctx->reqs[ctx->nreqs] = op->newreq[i];
        ctx->req_owner[ctx->nreqs] = op;
        ctx->req_cookie[ctx->nreqs] = op->newcookie[i];
        ctx->nreqs++;
    }
    op->nnew = 0;
}

static void live_add(ev_ctx_t *ctx, ev_op_t *op)
{
    op->live = true;
    op->lprev = NULL;
    op->lnext = ctx->live_head;
    if (ctx->live_head)
        ctx->live_head->lprev = op;
    ctx->live_head = op;
}

static void live_remove(ev_ctx_t *ctx, ev_op_t *op)
{
    if (!op->live)
        return;
    if (op->lprev)
        op->lprev->lnext = op->lnext;
    else
        ctx->live_head = op->lnext;
    if (op->lnext)
        op->lnext->lprev = op->lprev;
    op->live = false;
}

/* --------------------------------------------------------------- queues */
void ev_inbox_push(ev_ctx_t *ctx, ev_op_t *op)
{
    op->next = NULL;
    pthread_mutex_lock(&ctx->inbox_mtx);
    if (ctx->inbox_tail)
        ctx->inbox_tail->next = op;
    else
        ctx->inbox_head = op;
    ctx->inbox_tail = op;
    atomic_store(&ctx->inbox_nonempty, 1);
    pthread_mutex_unlock(&ctx->inbox_mtx);
    /* Pairs with gate_nap: it publishes gate_sleeping, then looks at
     * inbox_nonempty; one of the two sides sees the other (seq_cst).  No
     * wake-up when a thread holds the progress role: it drains the inbox on
     * its next pass (and wakes the gate when it stops spinning). */
    if (atomic_load(&ctx->gate_sleeping) && !atomic_load(&ctx->progress_active))
        ev_bell_wake(ctx);
}

bool ev_progress_hot(ev_ctx_t *ctx)
{
    uint64_t spin_ns = ctx->spin_us * 1000u;
    if (spin_ns == 0 ||
        (atomic_load(&ctx->gate_sleeping) && !atomic_load(&ctx->spinners)))
        return false;
    return ompc_now_ns() -
               atomic_load_explicit(&ctx->gate_busy_ns, memory_order_relaxed) <
           spin_ns / 4;
}

void ev_handler_push(ev_ctx_t *ctx, ev_op_t *op)
{
    op->next = NULL;
    op->in_handler = true;
    atomic_fetch_add(&ctx->handler_ops, 1);
    pthread_mutex_lock(&ctx->hq_mtx);
    if (ctx->hq_tail)
        ctx->hq_tail->next = op;
    else
        ctx->hq_head = op;
    ctx->hq_tail = op;
    atomic_store_explicit(&ctx->hq_peek, ctx->hq_head, memory_order_release);
    /* A hot handler will see the op without a wake-up system call. */
    if (atomic_load(&ctx->hot_handlers) == 0)
        pthread_cond_signal(&ctx->hq_cond);
    pthread_mutex_unlock(&ctx->hq_mtx);
}

/* ------------------------------------------------------------- handles */
/* The handle does not know its context; waiters need it for the condition
 * variable, so the handle stores it at creation. */
typedef struct ev_handle_ext {
    ev_handle_t h;
    ev_ctx_t *ctx;
} ev_handle_ext_t;

static ev_handle_t *handle_new(ev_ctx_t *ctx, int kind)
{
    ev_handle_ext_t *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->ctx = ctx;
    ev_handle_t *h = &x->h;
    atomic_init(&h->refs, 2); /* caller + op */
    atomic_init(&h->done, 0);
    h->kind = kind;
    return h;
}

void ev_handle_retain(ev_handle_t *h) { atomic_fetch_add(&h->refs, 1); }

void ev_handle_release(ev_handle_t *h)
{
    if (h && atomic_fetch_sub(&h->refs, 1) == 1)
        free(h);
}

void ev_handle_on_done(ev_handle_t *h, ev_done_fn_t fn, void *arg)
{
    h->cb = fn;
    h->cb_arg = arg;
    if (atomic_exchange(&h->cb_state, 1) == 2)
        fn(arg, h->status);
}

ompc_status_t ev_test(ev_handle_t *h)
{
    if (!atomic_load_explicit(&h->done, memory_order_acquire))
        return OMPC_INPROGRESS;
    return h->status;
}

static int progress_try(ev_ctx_t *ctx);

/* After the last progress, poll without yielding for this long: a reply
 * usually comes within microseconds, and a sched_yield system call in the
 * middle of that window delays noticing it.  Past it, yield between polls
 * so that other ranks sharing the core get it. */
#define EV_BUSY_POLL_NS 20000u

/* Progress passes a gate makes after a wake-up before it may sleep again. */
#define EV_WAKE_PASSES 3

/* While data chunks this rank sends or receives are in flight, its gate
 * keeps polling (yielding) for up to this long after the last progress: a
 * message over the transport's eager limit needs progress on both sides
 * to finish, and a nap on either added its length to the transfer. */
#define EV_CHUNK_POLL_NS 1000000u

/* A quiet gate that every message rings (a crowded node, ev_bell.c) naps
 * OMPC_POLL_MAX_US, then twice as long after each nap that nothing ended,
 * up to this (or OMPC_POLL_MAX_US if larger).  Such a nap ends only when a
 * ring was lost or came before MPI showed its message; doubling keeps that
 * delay within the time the gate had been idle, and saves the timer
 * wake-ups of an idle gate between messages milliseconds apart (each a
 * context switch and a progress pass; docs/performance.md, "wake-ups per
 * task").  Nor beyond the interval of liveness checks. */
#define EV_QUIET_NAP_MAX_US 16000u

/* Wait on a predicate: for up to OMPC_SPIN_US, take the progress role and
 * drive the engine ourselves (a reply usually comes within microseconds);
 * then sleep on the context's completion condition and leave progress to
 * the gate thread. */
static bool wait_until_deadline(ev_ctx_t *ctx, bool (*pred)(void *), void *arg,
                                uint64_t deadline, bool spin, bool holds);

static void wait_until(ev_ctx_t *ctx, bool (*pred)(void *), void *arg)
{
    wait_until_deadline(ctx, pred, arg, UINT64_MAX, true, true);
}

/* Returns pred's final value: false only if the deadline passed first.
 * holds: while the gate is held (ev_gate_hold), drive progress: the event
 * waited for may be what the work holding the gate waits on.  A waiter
 * whose predicate can wait for the gate's return (ev_ctx_serve: the exit
 * message) passes false, and is then neither woken by a hold nor polls
 * through it: on a worker whose gate runs short kernels, that wake-up and
 * the polls through each kernel were a large share of the rank's runtime
 * CPU (docs/performance.md, "wake-ups per task"). */
static bool wait_until_deadline(ev_ctx_t *ctx, bool (*pred)(void *), void *arg,
                                uint64_t deadline, bool spin, bool holds)
{
    uint64_t last = ompc_now_ns();
    uint64_t spin_ns = spin ? ctx->spin_us * 1000u : 0;
    bool spinning = false;
    while (!pred(arg)) {
        uint64_t now = ompc_now_ns();
        if (now >= deadline)
            break;
        if (holds && atomic_load_explicit(&ctx->gate_held, memory_order_acquire)) {
            /* The gate is in work that may wait for this very event (a
             * kernel's page fault on the gate thread): nobody else will
             * move it.  Poll, with short naps when nothing moves (the
             * kernel waiting on the gate uses no CPU meanwhile). */
            int p = progress_try(ctx);
            if (p > 0) {
                last = now;
            } else if (now - last >= EV_BUSY_POLL_NS) {
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL);
            } else {
                sched_yield();
            }
            continue;
        }
        if (now - last < spin_ns) {
            if (!spinning) {
                atomic_fetch_add(&ctx->spinners, 1);
                spinning = true;
            }
            int p = progress_try(ctx);
            if (p > 0)
                last = now;
            else if (now - last >= EV_BUSY_POLL_NS ||
                     atomic_load_explicit(&ctx->handler_ops, memory_order_relaxed))
                sched_yield();
            continue;
        }
        if (spinning) {
            /* Hand the progress role back: the gate may be deep in a nap
             * (it stays out of a spinner's way), and peers that heard from
             * us lately do not ring (ev_bell.c). */
            atomic_fetch_sub(&ctx->spinners, 1);
            spinning = false;
            if (atomic_load(&ctx->gate_sleeping))
                ev_bell_wake(ctx);
        }
        pthread_mutex_lock(&ctx->done_mtx);
        atomic_fetch_add(&ctx->done_waiters, 1);
        if (holds)
            atomic_fetch_add(&ctx->hold_waiters, 1);
        while (!pred(arg) && ompc_now_ns() < deadline &&
               !(holds && atomic_load(&ctx->gate_held))) {
            uint64_t left = deadline - ompc_now_ns();
            long step = left < 50000000u ? (long)left : 50000000L;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += step;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&ctx->done_cond, &ctx->done_mtx, &ts);
        }
        if (holds)
            atomic_fetch_sub(&ctx->hold_waiters, 1);
        atomic_fetch_sub(&ctx->done_waiters, 1);
        pthread_mutex_unlock(&ctx->done_mtx);
    }
    if (spinning)
        atomic_fetch_sub(&ctx->spinners, 1);
    return pred(arg);
}

static bool pred_handle_done(void *arg)
{
    return atomic_load_explicit(&((ev_handle_t *)arg)->done, memory_order_acquire);
}

ompc_status_t ev_wait(ev_handle_t *h)
{
    if (!h)
        return OMPC_ERR_INVALID;
    ev_ctx_t *ctx = ((ev_handle_ext_t *)h)->ctx;
    wait_until(ctx, pred_handle_done, h);
    return h->status;
}

static ompc_status_t wait_for(ev_handle_t *h, uint64_t timeout_ns, bool spin)
{
    if (!h)
        return OMPC_ERR_INVALID;
    ev_ctx_t *ctx = ((ev_handle_ext_t *)h)->ctx;
    uint64_t now = ompc_now_ns();
    uint64_t deadline = timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
    if (!wait_until_deadline(ctx, pred_handle_done, h, deadline, spin, true))
        return OMPC_INPROGRESS;
    return h->status;
}

ompc_status_t ev_wait_for(ev_handle_t *h, uint64_t timeout_ns)
{
    return wait_for(h, timeout_ns, true);
}

ompc_status_t ev_wait_sleeping(ev_handle_t *h, uint64_t timeout_ns)
{
    return wait_for(h, timeout_ns, false);
}

ompc_status_t ev_finish(ompc_status_t start_status, ev_handle_t *h)
{
    if (start_status != OMPC_OK)
        return start_status;
    ompc_status_t st = ev_wait(h);
    ev_handle_release(h);
    return st;
}

ompc_status_t ev_wait_all(ev_handle_t **hs, size_t n)
{
    ompc_status_t first = OMPC_OK;
    for (size_t i = 0; i < n; i++) {
        ompc_status_t st = ev_wait(hs[i]);
        if (st != OMPC_OK && first == OMPC_OK)
            first = st;
    }
    return first;
}

ev_addr_t ev_handle_addr(const ev_handle_t *h)
{
    return atomic_load_explicit(&((ev_handle_t *)h)->done, memory_order_acquire) ? h->addr
                                                                                 : 0;
}

size_t ev_handle_result_size(const ev_handle_t *h)
{
    return atomic_load_explicit(&((ev_handle_t *)h)->done, memory_order_acquire)
               ? h->result_size
               : 0;
}

static void wake_waiters(ev_ctx_t *ctx)
{
    if (atomic_load(&ctx->done_waiters) > 0) {
        pthread_mutex_lock(&ctx->done_mtx);
        pthread_cond_broadcast(&ctx->done_cond);
        pthread_mutex_unlock(&ctx->done_mtx);
    }
}

/* ---------------------------------------------------------- arrivals */
static void arrival_remove(ev_ctx_t *ctx, ev_op_t *op)
{
    if (op->aprev)
        op->aprev->anext = op->anext;
    else
        ctx->arr_head = op->anext;
    if (op->anext)
        op->anext->aprev = op->aprev;
    else
        ctx->arr_tail = op->aprev;
    op->aprev = op->anext = NULL;
}

bool ev_arrivals_before_done(ev_ctx_t *ctx, ev_op_t *op) { return ctx->arr_head == op; }

static ev_op_t **dest_bucket(ev_ctx_t *ctx, int32_t tag)
{
    return &ctx->dest_hash[(uint32_t)tag % EV_HASH_BUCKETS];
}

/* Gate only: the op's last step returned DONE. */
void ev_op_complete(ev_ctx_t *ctx, ev_op_t *op)
{
    if (op->role == EV_DEST && op->tag != 0) {
        ev_op_t **pp = dest_bucket(ctx, op->tag);
        while (*pp && *pp != op)
            pp = &(*pp)->hnext;
        if (*pp)
            *pp = op->hnext;
        arrival_remove(ctx, op);
        atomic_fetch_add_explicit(&ctx->st_served, 1, memory_order_relaxed);
    }
    live_remove(ctx, op);
    if (op->role == EV_ORIGIN && op->h) {
        ev_handle_t *h = op->h;
        h->status = op->status;
        atomic_store_explicit(&h->done, 1, memory_order_release);
        /* Exactly one of completion and registration calls the callback. */
        if (atomic_exchange(&h->cb_state, 2) == 1)
            h->cb(h->cb_arg, h->status);
        if (op->tag)
            tag_release(ctx, op->tag);
        ev_handle_release(h);
        atomic_fetch_sub(&ctx->origin_inflight, 1);
        wake_waiters(ctx);
    }
    ev_op_free(op);
}

/* ------------------------------------------------------------ stepping */
/* Gate only: run one step of an op the gate owns and file it by result. */
static void gate_step(ev_ctx_t *ctx, ev_op_t *op)
{
    int r = op->step(ctx, op);
    if (op->nnew)
        gate_register_reqs(ctx, op);
    if (r == EV_STEP_DONE) {
        OMPC_ASSERT(op->npending == 0);
        ev_op_complete(ctx, op);
    } else if (r == EV_STEP_HANDLER) {
        ev_handler_push(ctx, op);
    } else if (op->npending == 0 && !op->waitlisted) {
        /* Waiting on a condition, not on I/O (sync, exit). */
        op->waitlisted = true;
        op->next = ctx->waitlist;
        ctx->waitlist = op;
    }
}

static int gate_drain_inbox(ev_ctx_t *ctx)
{
    if (!atomic_load(&ctx->inbox_nonempty))
        return 0;
    pthread_mutex_lock(&ctx->inbox_mtx);
    ev_op_t *list = ctx->inbox_head;
    ctx->inbox_head = ctx->inbox_tail = NULL;
    atomic_store(&ctx->inbox_nonempty, 0);
    pthread_mutex_unlock(&ctx->inbox_mtx);
    int n = 0;
    while (list) {
        ev_op_t *op = list;
        list = op->next;
        op->next = NULL;
        n++;
        if (op->in_handler) {
            /* Back from a handler thread: continue on the gate. */
            op->in_handler = false;
            atomic_fetch_sub(&ctx->handler_ops, 1);
            gate_step(ctx, op);
            continue;
        }
        /* A new origin op whose first step ran in the caller's thread. */
        live_add(ctx, op);
        if (op->nnew)
            gate_register_reqs(ctx, op);
        if (op->npending == 0)
            gate_step(ctx, op);
    }
    return n;
}

/* Ops with a completed request in this pass, to step after compaction. */
static int gate_progress_requests(ev_ctx_t *ctx)
{
    if (ctx->nreqs == 0)
        return 0;
    int outcount = 0;
    EV_CHECK_MPI(MPI_Testsome(ctx->nreqs, ctx->reqs, &outcount, ctx->tsome_idx,
                              MPI_STATUSES_IGNORE),
                 "MPI_Testsome");
    if (outcount == MPI_UNDEFINED || outcount == 0)
        return 0;
    uint64_t now = ompc_now_ns();
    ev_op_t *ready = NULL;
    for (int k = 0; k < outcount; k++) {
        int i = ctx->tsome_idx[k];
        ev_op_t *op = ctx->req_owner[i];
        op->npending--;
        op->ncook[ctx->req_cookie[i]]--;
        if (ctx->req_cookie[i] == EV_RQ_CHUNK) {
            op->stream.inflight--;
            atomic_fetch_sub_explicit(&ctx->chunks, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&ctx->st_chunks_done, 1, memory_order_relaxed);
        }
        if (op->peer >= 0)
            ctx->last_heard[op->peer] = now;
        if (op->peer2 >= 0)
            ctx->last_heard[op->peer2] = now;
        ctx->req_owner[i] = NULL;
        if (!op->next && op != ready) {
            /* Not yet on the ready list (the list is NULL-terminated via a
             * sentinel trick: the tail points to itself). */
            op->next = ready ? ready : op;
            ready = op;
        }
    }
    int w = 0;
    for (int i = 0; i < ctx->nreqs; i++) {
        if (ctx->req_owner[i]) {
            ctx->reqs[w] = ctx->reqs[i];
            ctx->req_owner[w] = ctx->req_owner[i];
            ctx->req_cookie[w] = ctx->req_cookie[i];
            w++;
        }
    }
    ctx->nreqs = w;
    while (ready) {
        ev_op_t *op = ready;
        ready = (op->next == op) ? NULL : op->next;
        op->next = NULL;
        gate_step(ctx, op);
    }
    return outcount;
}

static int gate_run_waitlist(ev_ctx_t *ctx)
{
    ev_op_t *list = ctx->waitlist;
    ctx->waitlist = NULL;
    int n = 0;
    while (list) {
        ev_op_t *op = list;
        list = op->next;
        op->next = NULL;
        op->waitlisted = false;
        int before = op->state;
        gate_step(ctx, op);
        /* gate_step re-queues it if still waiting; count real changes. */
        if (!op->waitlisted || op->state != before)
            n++;
    }
    return n;
}

/* ------------------------------------------------------- notifications */
_Noreturn void ev_proto_fatal(ev_ctx_t *ctx, int src, const ev_wire_hdr_t *hdr,
                              const char *what)
{
    ompc_fatal("rank %d: protocol error in message from rank %d (event kind %s"
               " [%d], tag %d): %s",
               ctx->rank, src, hdr ? ev_kind_name(hdr->kind) : "?", hdr ? hdr->kind : -1,
               hdr ? hdr->tag : -1, what);
}

/* Ping and pong are fire-and-forget: done once the send completes. */
static int send_only_step(ev_ctx_t *ctx, ev_op_t *op)
{
    (void)ctx;
    return op->npending ? EV_STEP_WAIT : EV_STEP_DONE;
}

/* Gate only: send a ping or a pong (no tag, no reply, waits on nobody). */
static void gate_send_liveness(ev_ctx_t *ctx, int kind, int to)
{
    ev_op_t *op = ev_op_new(ctx, kind, EV_ORIGIN);
    ev_wire_hdr_t *h = calloc(1, sizeof(*h));
    if (!op || !h)
        ompc_fatal("out of memory sending a %s", ev_kind_name(kind));
    h->magic = EV_MAGIC;
    h->kind = (uint16_t)kind;
    h->origin = ctx->rank;
    op->msg = h;
    op->step = send_only_step;
    op->peer = -1;
    ev_op_isend(ctx, op, h, sizeof(*h), to, ctx->ctrl, EV_NOTIFY_TAG, EV_RQ_MISC);
    gate_register_reqs(ctx, op);
    /* Pushed at the head of the live list: a liveness walk in progress,
     * moving forward, skips it. */
    live_add(ctx, op);
}

static void gate_handle_notification(ev_ctx_t *ctx, void *buf, size_t len, int src)
{
    ev_wire_hdr_t hdr;
    ctx->last_heard[src] = ompc_now_ns();
    if (len < sizeof(hdr)) {
        char what[96];
        snprintf(what, sizeof(what),
                 "notification of %zu bytes, shorter than "
                 "the %zu-byte header",
                 len, sizeof(hdr));
        ev_proto_fatal(ctx, src, NULL, what);
    }
    memcpy(&hdr, buf, sizeof(hdr));
    if (hdr.magic != EV_MAGIC)
        ev_proto_fatal(ctx, src, &hdr, "bad magic number (not an ompc message)");
    if (hdr.kind <= 0 || hdr.kind >= EV_K_COUNT || hdr.kind == EV_K_EXCHANGE)
        ev_proto_fatal(ctx, src, &hdr, "unknown event kind");
    if (hdr.origin != src)
        ev_proto_fatal(ctx, src, &hdr, "origin field does not match the sender");
    /* Only a sender whose gate polls will see our next message unrung: a
     * message sent by a kernel thread says nothing of its gate, which may
     * be deep in a nap. */
    if (hdr.flags & EV_F_HOT)
        ev_bell_heard(ctx, src);
    if ((size_t)hdr.payload != len - sizeof(hdr)) {
        char what[128];
        snprintf(what, sizeof(what),
                 "wrong message size: header announces %u "
                 "payload bytes, message carries %zu",
                 hdr.payload, len - sizeof(hdr));
        ev_proto_fatal(ctx, src, &hdr, what);
    }
    if (hdr.kind == EV_K_PING) {
        ompc_debug("ping from rank %d", src);
        gate_send_liveness(ctx, EV_K_PONG, src);
        free(buf);
        return;
    }
    if (hdr.kind == EV_K_PONG) {
        ompc_debug("pong from rank %d", src);
        free(buf);
        return;
    }
    if (hdr.kind == EV_K_EXECUTE && (hdr.flags & EV_F_ONEWAY)) {
        ev_dest_posted(ctx, &hdr, (char *)buf + sizeof(hdr), src);
        free(buf);
        return;
    }
    if (hdr.tag <= 0 || hdr.tag % ctx->size != src)
        ev_proto_fatal(ctx, src, &hdr, "event tag does not belong to the sender");
    ev_op_t **bucket = dest_bucket(ctx, hdr.tag);
    for (ev_op_t *o = *bucket; o; o = o->hnext) {
        if (o->tag == hdr.tag) {
            ompc_fatal("rank %d: tag collision: event kind %s tag %d from rank "
                       "%d arrived while event kind %s with the same tag from "
                       "the same origin is still in flight",
                       ctx->rank, ev_kind_name(hdr.kind), hdr.tag, src,
                       ev_kind_name(o->kind));
        }
    }
    ev_op_t *op = ev_op_new(ctx, hdr.kind, EV_DEST);
    if (!op)
        ompc_fatal("rank %d: out of memory receiving event %s tag %d", ctx->rank,
                   ev_kind_name(hdr.kind), hdr.tag);
    op->hdr = hdr;
    op->msg = buf;
    op->msg_len = len;
    op->tag = hdr.tag;
    op->origin = src;
    op->peer = src;
    op->comm_idx = ((hdr.tag - src) / ctx->size) % ctx->ncomms;
    op->t_start = ompc_now_ns();
    op->hnext = *bucket;
    *bucket = op;
    op->aprev = ctx->arr_tail;
    if (ctx->arr_tail)
        ctx->arr_tail->anext = op;
    else
        ctx->arr_head = op;
    ctx->arr_tail = op;
    ompc_trace("<-- %s tag %d from r%d (%zu B)", ev_kind_name(hdr.kind), hdr.tag, src,
               len);
    live_add(ctx, op);
    ev_dest_start(ctx, op); /* validates the kind-specific fields */
    gate_step(ctx, op);
}

static int gate_recv_notifications(ev_ctx_t *ctx)
{
    int n = 0;
    /* Bounded batch so that request progress is not starved by a flood. */
    for (int i = 0; i < 64; i++) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        EV_CHECK_MPI(
            MPI_Improbe(MPI_ANY_SOURCE, EV_NOTIFY_TAG, ctx->ctrl, &flag, &msg, &st),
            "MPI_Improbe");
        if (!flag)
            break;
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        void *buf = malloc(count > 0 ? (size_t)count : 1);
        if (!buf)
            ompc_fatal("rank %d: out of memory receiving a %d-byte notification",
                       ctx->rank, count);
        EV_CHECK_MPI(MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE),
                     "MPI_Mrecv");
        gate_handle_notification(ctx, buf, (size_t)count, st.MPI_SOURCE);
        n++;
    }
    return n;
}

/* ------------------------------------------------------------ liveness */
/* Ends the job: rank p said nothing for silent_ns while this rank waited
 * on it for `what`. */
static void peer_silent(ev_ctx_t *ctx, int p, uint64_t silent_ns, const char *what)
{
    const char *role = p == ctx->coordinator ? "the coordinator, " : "";
    ompc_fatal("rank %d: rank %d (%spid %lld on %s) stopped responding: no "
               "message for %.1f s while this rank waits for %s "
               "(OMPC_PEER_TIMEOUT=%.3g s; a stopped or hung process, or a "
               "lost node)",
               ctx->world_rank, ctx->ids[p].world_rank, role, ev_peer_pid(ctx, p),
               ev_peer_host(ctx, p), (double)silent_ns / 1e9, what,
               (double)ctx->cfg->peer_timeout_ms / 1e3);
}

/* One wait on peer p that began at `since`: ping p after half the timeout
 * without a sign of life.  True once the full timeout has passed
 * (*silent_p: for how long). */
static bool peer_overdue(ev_ctx_t *ctx, int p, uint64_t since, uint64_t now,
                         uint64_t timeout, uint64_t *silent_p)
{
    uint64_t ref = ctx->last_heard[p] > since ? ctx->last_heard[p] : since;
    uint64_t alive = atomic_load_explicit(&ctx->bell.alive[p], memory_order_relaxed);
    if (alive > ref)
        ref = alive;
    if (now <= ref)
        return false;
    if (now - ref > timeout) {
        *silent_p = now - ref;
        return true;
    }
    if (now - ref > timeout / 2 && now - ctx->last_ping[p] > timeout / 4) {
        ctx->last_ping[p] = now;
        ompc_debug("pinging rank %d (silent for %.2f s)", p, (double)(now - ref) / 1e9);
        /* Both ways: MPI (the bell may be off or lost) and datagram (MPI
         * may be stuck behind another peer). */
        gate_send_liveness(ctx, EV_K_PING, p);
        ev_bell_ping(ctx, p, false);
    }
    return false;
}

/* Whether this rank waits on p beyond its events (see ev_peer_expect), and
 * since when. */
static bool peer_owes(ev_ctx_t *ctx, int p, uint64_t *since_p)
{
    bool owed = atomic_load_explicit(&ctx->owed[p], memory_order_relaxed) > 0;
    uint64_t started = atomic_load_explicit(&ctx->started_ns, memory_order_relaxed);
    bool serves = p == ctx->coordinator && started &&
                  !atomic_load_explicit(&ctx->exit_received, memory_order_relaxed);
    if (owed)
        *since_p = atomic_load_explicit(&ctx->owed_since[p], memory_order_relaxed);
    if (serves && (!owed || started < *since_p))
        *since_p = started;
    return owed || serves;
}

/* Peers answer pings from their gate thread, which never waits, so a rank
 * busy in a long kernel still answers. */
static void gate_check_liveness(ev_ctx_t *ctx, uint64_t now)
{
    if (now < ctx->next_liveness_ns)
        return;
    uint64_t timeout = (uint64_t)ctx->cfg->peer_timeout_ms * 1000000ull;
    ctx->next_liveness_ns = now +
                            (timeout / 8 < 100000000ull ? timeout / 8 : 100000000ull);
    ev_bell_poll(ctx); /* peers' pings, when the gate has not napped */
    uint64_t silent = 0;
    for (ev_op_t *op = ctx->live_head; op; op = op->lnext) {
        if (op->in_handler)
            continue;
        int peers[2] = {op->peer, op->peer2};
        for (int k = 0; k < 2; k++) {
            int p = peers[k];
            if (p < 0 || p == ctx->rank)
                continue;
            if (op->role == EV_DEST && op->npending == 0)
                continue; /* waiting on local conditions only */
            if (peer_overdue(ctx, p, op->t_start, now, timeout, &silent)) {
                char what[96];
                snprintf(what, sizeof(what), "its reply to event kind %s tag %d",
                         ev_kind_name(op->kind), op->tag);
                peer_silent(ctx, p, silent, what);
            }
        }
    }
    for (int p = 0; p < ctx->size; p++) {
        uint64_t since = 0;
        if (p == ctx->rank || !peer_owes(ctx, p, &since))
            continue;
        if (!peer_overdue(ctx, p, since, now, timeout, &silent))
            continue;
        int owed = atomic_load_explicit(&ctx->owed[p], memory_order_relaxed);
        char what[512] = "";
        if (ctx->describe)
            ctx->describe(ctx->describe_arg, p, owed, what, sizeof(what));
        if (!what[0] && owed > 0)
            snprintf(what, sizeof(what), "%d thing(s) it owes", owed);
        else if (!what[0])
            snprintf(what, sizeof(what),
                     "its next request (this rank works for it only)");
        peer_silent(ctx, p, silent, what);
    }
}

void ev_peer_expect(ev_ctx_t *ctx, int rank, int n)
{
    if (rank < 0 || rank >= ctx->size || rank == ctx->rank || n == 0)
        return;
    int before = atomic_fetch_add_explicit(&ctx->owed[rank], n, memory_order_relaxed);
    if (before <= 0 && before + n > 0)
        atomic_store_explicit(&ctx->owed_since[rank], ompc_now_ns(),
                              memory_order_relaxed);
    OMPC_ASSERT(before + n >= 0);
}

void ev_set_peer_describe(ev_ctx_t *ctx, ev_peer_describe_fn_t fn, void *arg)
{
    ctx->describe = fn;
    ctx->describe_arg = arg;
}

void ev_set_gate_work(ev_ctx_t *ctx, ev_gate_work_fn_t fn, void *arg)
{
    /* The gate may be inside the work being replaced, or between reading
     * fn and arg: the old pair stays until it is out, so that no gate ever
     * calls a function with another's argument, or with one its owner is
     * about to free (the owner clears its work and then frees). */
    atomic_store(&ctx->gate_work, NULL);
    if (!pthread_equal(pthread_self(), ctx->gate))
        while (atomic_load(&ctx->gate_work_busy))
            sched_yield();
    atomic_store(&ctx->gate_work_arg, arg);
    atomic_store(&ctx->gate_work, fn);
}

void ev_gate_hold(ev_ctx_t *ctx, bool held)
{
    atomic_store(&ctx->gate_held, held ? 1 : 0); /* before hold_waiters is read */
    if (held && atomic_load(&ctx->hold_waiters) > 0) {
        /* Waiters asleep on the condition start driving progress now. */
        pthread_mutex_lock(&ctx->done_mtx);
        pthread_cond_broadcast(&ctx->done_cond);
        pthread_mutex_unlock(&ctx->done_mtx);
    }
}

void ev_gate_work_by(ev_ctx_t *ctx, uint64_t ns)
{
    if (ns == 0)
        ns = 1;
    uint64_t cur = atomic_load(&ctx->gate_work_by);
    while ((cur == 0 || ns < cur) &&
           !atomic_compare_exchange_weak(&ctx->gate_work_by, &cur, ns))
        ;
}

bool ev_chunks_in_flight(const ev_ctx_t *ctx)
{
    return atomic_load_explicit(&ctx->chunks, memory_order_relaxed) > 0;
}

long long ev_peer_pid(const ev_ctx_t *ctx, int rank)
{
    return rank >= 0 && rank < ctx->size ? (long long)ctx->ids[rank].pid : -1;
}

const char *ev_peer_host(const ev_ctx_t *ctx, int rank)
{
    return rank >= 0 && rank < ctx->size ? ctx->ids[rank].host : "?";
}

/* Collective: every rank's pid and host, for messages. */
static void peer_ids_exchange(ev_ctx_t *ctx)
{
    ev_peer_id_t mine;
    memset(&mine, 0, sizeof(mine));
    mine.pid = (int64_t)getpid();
    mine.world_rank = ctx->world_rank;
    if (gethostname(mine.host, sizeof(mine.host) - 1) != 0)
        snprintf(mine.host, sizeof(mine.host), "?");
    ctx->ids = calloc((size_t)ctx->size, sizeof(*ctx->ids));
    if (!ctx->ids)
        ompc_fatal("out of memory exchanging rank identities");
    EV_CHECK_MPI(MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, ctx->ids,
                               (int)sizeof(mine), MPI_BYTE, ctx->coll),
                 "MPI_Allgather");
    for (int r = 0; r < ctx->size; r++)
        ctx->ids[r].host[sizeof(ctx->ids[r].host) - 1] = '\0';
}

/* --------------------------------------------------------------- gate */
/* One pass of the engine; the caller holds progress_mtx. */
static int progress_pass(ev_ctx_t *ctx)
{
    int progress = gate_drain_inbox(ctx);
    progress += gate_recv_notifications(ctx);
    progress += gate_progress_requests(ctx);
    if (ctx->waitlist)
        progress += gate_run_waitlist(ctx);
    gate_check_liveness(ctx, ompc_now_ns());
    return progress;
}

/* A pass if the progress role is free: >0 progress made, 0 none, -1 busy. */
static int progress_try(ev_ctx_t *ctx)
{
    if (pthread_mutex_trylock(&ctx->progress_mtx) != 0)
        return -1;
    atomic_store_explicit(&ctx->progress_active, 1, memory_order_relaxed);
    int p = progress_pass(ctx);
    if (p > 0)
        atomic_store_explicit(&ctx->gate_busy_ns, ompc_now_ns(), memory_order_relaxed);
    atomic_store_explicit(&ctx->progress_active, 0, memory_order_relaxed);
    pthread_mutex_unlock(&ctx->progress_mtx);
    return p;
}

/* Sleep up to `us` microseconds, or until an op reaches the inbox or a
 * peer rings (ev_bell.c).  True if something woke us: activity is under
 * way, so the caller polls hot again instead of going back to long naps
 * (a reply to what woke us may follow within microseconds, and a peer that
 * just heard from us does not ring). */
static bool gate_nap(ev_ctx_t *ctx, uint64_t us)
{
    /* Not past the time the rank's work asked to run by (ev_gate_work_by):
     * a nap that ends there counts as a wake-up, and the next pass runs
     * the work. */
    uint64_t by = atomic_load(&ctx->gate_work_by);
    bool clamped = false;
    if (by) {
        uint64_t now = ompc_now_ns();
        if (by <= now) {
            atomic_compare_exchange_strong(&ctx->gate_work_by, &by, 0);
            return true;
        }
        uint64_t left = (by - now + 999u) / 1000u;
        if (left < us) {
            us = left;
            clamped = true;
        }
    }
    bool woken = true;
    atomic_store(&ctx->gate_sleeping, 1);
    if (!atomic_load(&ctx->inbox_nonempty))
        woken = ev_bell_wait(ctx, us);
    atomic_store(&ctx->gate_sleeping, 0);
    if (!woken && clamped) {
        atomic_compare_exchange_strong(&ctx->gate_work_by, &by, 0);
        woken = true;
    }
    return woken;
}

/* --------------------------------------------------------------- gate */
static void *gate_main(void *arg)
{
    ev_ctx_t *ctx = arg;
    ompc_log_set_thread_name("gate");
    pthread_setname_np(pthread_self(), "ompc-gate");
    ompc_cpu_thread_begin(OMPC_CPU_GATE);
    uint64_t spin_ns = ctx->spin_us * 1000u;
    uint64_t poll_max = (uint64_t)ctx->cfg->poll_max_us;
    uint64_t last_progress = ompc_now_ns();
    uint64_t sleep_us = 1;
    uint64_t quiet_max = poll_max > EV_QUIET_NAP_MAX_US ? poll_max : EV_QUIET_NAP_MAX_US;
    uint64_t live_us = (uint64_t)ctx->cfg->peer_timeout_ms * 1000u / 8u;
    if (quiet_max > live_us)
        quiet_max = live_us > poll_max ? live_us : poll_max; /* liveness checks */
    uint64_t quiet_us = poll_max; /* the next quiet nap (rung naps only) */
    int owed = 0; /* empty passes still owed to a wake-up */
    /* Our nap bit (ev_bell.c) is set: peers ring us. */
    bool flagged = true;
    for (;;) {
        if (atomic_load_explicit(&ctx->spinners, memory_order_relaxed) > 0 ||
            pthread_mutex_trylock(&ctx->progress_mtx) != 0) {
            /* A waiting thread drives progress: stay out of its way (do
             * not even grab the role between two of its events).  It wakes
             * us when it stops spinning.  It may stop before a message
             * whose ring we waived shows: poll again once we hold the
             * role. */
            if (ev_bell_nap_begin(ctx))
                owed = EV_WAKE_PASSES;
            flagged = true;
            if (gate_nap(ctx, sleep_us)) {
                sleep_us = 1;
                last_progress = ompc_now_ns();
            } else {
                sleep_us = sleep_us * 2 > poll_max ? poll_max : sleep_us * 2;
            }
            continue;
        }
        int progress = progress_pass(ctx);
        /* Nothing of ours in flight: only a new message, which rings, can
         * give us work. */
        bool quiet = ctx->nreqs == 0 && !ctx->waitlist && !ctx->arr_head &&
                     !atomic_load(&ctx->inbox_nonempty);
        pthread_mutex_unlock(&ctx->progress_mtx);
        /* The rank's own work for the gate (ev_set_gate_work), outside the
         * engine's lock: a thread waiting on an event may take the role
         * meanwhile. */
        atomic_store(&ctx->gate_work_busy, 1);
        ev_gate_work_fn_t work = atomic_load(&ctx->gate_work);
        if (work && work(atomic_load(&ctx->gate_work_arg)))
            progress++;
        atomic_store(&ctx->gate_work_busy, 0);
        bool done = !progress && quiet && atomic_load(&ctx->stopping) &&
                    atomic_load(&ctx->origin_inflight) == 0;
        if (done)
            break;
        uint64_t now = ompc_now_ns();
        if (progress) {
            if (flagged) {
                ev_bell_nap_end(ctx);
                flagged = false;
            }
            last_progress = now;
            atomic_store_explicit(&ctx->gate_busy_ns, now, memory_order_relaxed);
            sleep_us = 1;
            quiet_us = poll_max;
            owed = 0;
            continue;
        }
        if (owed > 0) {
            /* A ring may come before MPI shows its message (a probe that
             * finds nothing may only then pull it in): look again before
             * sleeping. */
            owed--;
            continue;
        }
        if (now - last_progress < spin_ns) {
            /* While a handler works for us, yield at once: on a full machine
             * the handler may need this very core. */
            if (now - last_progress >= EV_BUSY_POLL_NS ||
                atomic_load_explicit(&ctx->handler_ops, memory_order_relaxed))
                sched_yield();
            continue;
        }
        if (atomic_load_explicit(&ctx->chunks, memory_order_relaxed) > 0 &&
            now - last_progress < EV_CHUNK_POLL_NS) {
            /* Data moves between us and a peer, and a message over the
             * eager limit needs progress on both sides: a nap here stalls
             * the transfer (docs/performance.md, "polling while chunks are
             * in flight"); the transfer ends it soon. */
            sched_yield();
            continue;
        }
        /* Idle: MPI has no blocking wait that does not spin (MPICH polls in
         * MPI_Wait), so back off exponentially, and let local activity (an
         * op pushed to the inbox) wake us at once.  Where polling is off
         * (a crowded node) and every peer can ring us, a quiet gate sleeps
         * until rung: each short nap would cost the kernels a context
         * switch and a progress pass. */
        /* From here peers ring us; a message whose ring was left out may
         * have come after our last probe: look again first. */
        flagged = true;
        if (ev_bell_nap_begin(ctx)) {
            owed = EV_WAKE_PASSES;
            continue;
        }
        bool rung = quiet && spin_ns == 0 && ctx->bell.reachable;
        if (gate_nap(ctx, rung ? quiet_us : sleep_us)) {
            ev_bell_nap_end(ctx);
            flagged = false;
            sleep_us = 1;
            quiet_us = poll_max;
            owed = EV_WAKE_PASSES;
            last_progress = ompc_now_ns();
            continue;
        }
        if (rung)
            quiet_us = quiet_us * 2 > quiet_max ? quiet_max : quiet_us * 2;
        sleep_us *= 2;
        if (sleep_us > poll_max)
            sleep_us = poll_max;
    }
    (void)ev_bell_nap_begin(ctx);
    ompc_cpu_thread_end();
    return NULL;
}

/* ------------------------------------------------------------ handlers */
static void *handler_main(void *arg)
{
    ev_ctx_t *ctx = arg;
    ompc_log_set_thread_name("handler");
    pthread_setname_np(pthread_self(), "ompc-handler");
    ompc_cpu_thread_begin(OMPC_CPU_HANDLER);
    uint64_t hot_until = 0;
    for (;;) {
        /* Stay hot (poll the queue, yielding) for a while after work: a
         * stream of short functions then costs no wake-up per call. */
        if (ompc_now_ns() < hot_until) {
            atomic_fetch_add(&ctx->hot_handlers, 1);
            while (!atomic_load_explicit(&ctx->hq_peek, memory_order_acquire) &&
                   ompc_now_ns() < hot_until && !atomic_load(&ctx->stopping))
                sched_yield();
            atomic_fetch_sub(&ctx->hot_handlers, 1);
        }
        pthread_mutex_lock(&ctx->hq_mtx);
        while (!ctx->hq_head && !atomic_load(&ctx->stopping))
            pthread_cond_wait(&ctx->hq_cond, &ctx->hq_mtx);
        ev_op_t *op = ctx->hq_head;
        if (!op) {
            pthread_mutex_unlock(&ctx->hq_mtx);
            break;
        }
        ctx->hq_head = op->next;
        if (!ctx->hq_head)
            ctx->hq_tail = NULL;
        atomic_store_explicit(&ctx->hq_peek, ctx->hq_head, memory_order_release);
        pthread_mutex_unlock(&ctx->hq_mtx);
        op->next = NULL;
        /* A handler step does the CPU work and may post the op's next
         * messages; the gate takes the op back to track their completion. */
        int r = op->step(ctx, op);
        OMPC_ASSERT(r == EV_STEP_WAIT);
        ev_inbox_push(ctx, op);
        hot_until = ompc_now_ns() + ctx->spin_us * 1000u;
    }
    ompc_cpu_thread_end();
    return NULL;
}

/* ------------------------------------------------------------- origins */
ompc_status_t ev_origin_check(ev_ctx_t *ctx, int kind)
{
    if (atomic_load(&ctx->shutdown))
        return OMPC_ERR_SHUTDOWN;
    if (!atomic_load(&ctx->started)) {
        ompc_error("rank %d: %s event before ev_ctx_start", ctx->rank,
                   ev_kind_name(kind));
        return OMPC_ERR_INVALID;
    }
    return OMPC_OK;
}

void ev_origin_post_sent(ev_ctx_t *ctx, ev_op_t *op)
{
    atomic_fetch_add_explicit(&ctx->st_originated, 1, memory_order_relaxed);
    /* Small messages usually leave at once (eager): then the gate never
     * hears of this op, and is not woken for it. */
    OMPC_ASSERT(op->nnew == 1);
    int done = 0;
    EV_CHECK_MPI(MPI_Test(&op->newreq[0], &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) {
        ev_op_free(op);
        return;
    }
    op->t_start = ompc_now_ns();
    ev_inbox_push(ctx, op);
}

ompc_status_t ev_origin_start(ev_ctx_t *ctx, ev_op_t *op, ev_handle_t **h_p)
{
    ompc_status_t st = ev_origin_check(ctx, op->kind);
    if (st != OMPC_OK) {
        ev_op_free(op);
        return st;
    }
    ev_handle_t *h = handle_new(ctx, op->kind);
    if (!h) {
        ev_op_free(op);
        return OMPC_ERR_NOMEM;
    }
    op->tag = tag_alloc(ctx, &op->comm_idx);
    op->origin = ctx->rank;
    op->h = h;
    h->tag = op->tag;
    op->t_start = ompc_now_ns();
    atomic_fetch_add(&ctx->origin_inflight, 1);
    atomic_fetch_add_explicit(&ctx->st_originated, 1, memory_order_relaxed);
    /* The first step (post the reply receive, send the notification) runs
     * here, so the message leaves without waiting for the gate thread. */
    int r = op->step(ctx, op);
    OMPC_ASSERT(r == EV_STEP_WAIT);
    ev_inbox_push(ctx, op);
    *h_p = h;
    return OMPC_OK;
}

ompc_status_t ev_debug_send_raw(ev_ctx_t *ctx, int rank, const void *bytes, size_t len)
{
    if (rank < 0 || rank >= ctx->size || len > INT32_MAX)
        return OMPC_ERR_INVALID;
    EV_CHECK_MPI(MPI_Send(bytes, (int)len, MPI_BYTE, rank, EV_NOTIFY_TAG, ctx->ctrl),
                 "MPI_Send");
    return OMPC_OK;
}

ompc_status_t ev_coll_bcast(ev_ctx_t *ctx, void *buf, size_t len, int root)
{
    if (len > INT32_MAX || root < 0 || root >= ctx->size)
        return OMPC_ERR_INVALID;
    EV_CHECK_MPI(MPI_Bcast(buf, (int)len, MPI_BYTE, root, ctx->coll), "MPI_Bcast");
    return OMPC_OK;
}

ompc_status_t ev_coll_max(ev_ctx_t *ctx, int64_t *value)
{
    int64_t in = *value;
    EV_CHECK_MPI(MPI_Allreduce(&in, value, 1, MPI_INT64_T, MPI_MAX, ctx->coll),
                 "MPI_Allreduce");
    return OMPC_OK;
}

ompc_status_t ev_coll_allgather(ev_ctx_t *ctx, const void *in, size_t len, void *out)
{
    if (len > INT32_MAX)
        return OMPC_ERR_INVALID;
    EV_CHECK_MPI(
        MPI_Allgather(in, (int)len, MPI_BYTE, out, (int)len, MPI_BYTE, ctx->coll),
        "MPI_Allgather");
    return OMPC_OK;
}

void ev_ctx_stats(const ev_ctx_t *ctx, ev_stats_t *stats_p)
{
    ev_ctx_t *c = (ev_ctx_t *)ctx;
    stats_p->events_originated = atomic_load(&c->st_originated);
    stats_p->events_served = atomic_load(&c->st_served);
    stats_p->bytes_sent = atomic_load(&c->st_bytes_sent);
    stats_p->bytes_received = atomic_load(&c->st_bytes_recv);
    stats_p->chunks_completed = atomic_load(&c->st_chunks_done);
}

/* ------------------------------------------------------------ lifecycle */
static int ctx_counter;

/* Which ranks share this rank's CPUs: those on the same node (MPI's shared
 * memory split) with the same affinity mask.  A launcher that binds ranks
 * to disjoint cores leaves each alone with its cores; plain `mpiexec -n 3`
 * on a 2-core box puts all three on both. */
static void node_detect(ev_ctx_t *ctx)
{
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
        CPU_SET(0, &mine);
    MPI_Comm local;
    EV_CHECK_MPI(MPI_Comm_split_type(ctx->coll, MPI_COMM_TYPE_SHARED, ctx->rank,
                                     MPI_INFO_NULL, &local),
                 "MPI_Comm_split_type");
    int n = 0;
    MPI_Comm_size(local, &n);
    cpu_set_t *sets = malloc((size_t)n * sizeof(cpu_set_t));
    int *ranks = malloc((size_t)n * sizeof(int));
    int *same = malloc((size_t)n * sizeof(int));
    if (!sets || !ranks || !same)
        ompc_fatal("out of memory detecting the node's ranks");
    EV_CHECK_MPI(MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, sets,
                               (int)sizeof(mine), MPI_BYTE, local),
                 "MPI_Allgather");
    EV_CHECK_MPI(MPI_Allgather(&ctx->rank, 1, MPI_INT, ranks, 1, MPI_INT, local),
                 "MPI_Allgather");
    MPI_Comm_free(&local);
    int k = 0;
    for (int i = 0; i < n; i++) /* ranks[] ascends: the split's key is the rank */
        if (CPU_EQUAL(&sets[i], &mine))
            same[k++] = ranks[i];
    free(sets);
    free(ranks);
    ctx->node.ncpus = CPU_COUNT(&mine) > 0 ? CPU_COUNT(&mine) : 1;
    ctx->node.nsame = k > 0 ? k : 1;
    ctx->node.same = same;
    /* More ranks than CPUs: some rank's threads always wait for a core.
     * (Two ranks on two CPUs poll happily: the event system's own round
     * trip stays at a few microseconds, where waking a sleeper costs far
     * more.)  A rank bound to one core (`--bind-to core`, Open MPI's
     * default for two ranks) is crowded by its own threads: a polling gate
     * holds the core while the thread it completed an event for waits to
     * run, and sched_yield does not hand the core over under EEVDF (Linux
     * 6.6+), so the waiter runs only at the next tick.  The coordinator
     * (the offloading head) beside ranks that size their kernel teams to
     * every CPU they share with it is crowded too: a polling gate there
     * takes a core from the kernels' team, and the team waits for the
     * thread that lost it.  What each case cost: docs/performance.md,
     * "crowded nodes". */
    bool beside = ctx->rank == ctx->coordinator && ctx->node.nsame > 1;
    /* The computing ranks of such a job are crowded by the same rule as soon
     * as they share their CPUs with any rank: a lone worker's share is the
     * whole set, and a `teams` kernel's team spans the set whatever the
     * share (libomp sizes it from the CPUs, not from nthreads-var), so a
     * polling gate or handler of any rank there takes a core from a team,
     * and the team waits for the thread that lost it. */
    bool shared = ctx->coordinator >= 0 && ctx->rank != ctx->coordinator &&
                  ctx->node.nsame > 1;
    ctx->node.crowded = ctx->node.ncpus < ctx->node.nsame || ctx->node.ncpus < 2 ||
                        beside || shared;
    /* Polling pays when a core would otherwise idle; on a crowded node it
     * takes the core from a kernel (or from the very rank whose message we
     * wait for), and the doorbell wakes a sleeper within microseconds. */
    int64_t spin = ctx->cfg->spin_us;
    ctx->spin_us = spin >= 0 ? (uint64_t)spin : ctx->node.crowded ? 0u : 200u;
    char how[64] = "waiting threads sleep at once";
    if (ctx->spin_us)
        snprintf(how, sizeof(how), "waiting threads poll for %llu us",
                 (unsigned long long)ctx->spin_us);
    ompc_info("rank %d: %d rank%s on %d CPU%s%s: %s%s", ctx->rank, ctx->node.nsame,
              ctx->node.nsame == 1 ? "" : "s", ctx->node.ncpus,
              ctx->node.ncpus == 1 ? "" : "s",
              beside   ? " (crowded: it coordinates beside ranks that compute there)"
              : shared ? " (crowded: kernel teams may take every CPU it shares)"
              : ctx->node.crowded ? " (crowded)"
                                  : "",
              how, spin >= 0 ? " (OMPC_SPIN_US)" : "");
}

const ev_node_t *ev_node(const ev_ctx_t *ctx) { return &ctx->node; }
uint64_t ev_spin_us(const ev_ctx_t *ctx) { return ctx->spin_us; }

void ev_mpi_library(char *buf, size_t cap)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[sizeof(lib) - 1] = '\0';
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    snprintf(buf, cap, "%s", lib);
}

ompc_status_t ev_ctx_create(ev_ctx_t **ctx_p) { return ev_ctx_create_opts(ctx_p, NULL); }

/* Whether ev_mpi_start initialised MPI (main thread only). */
static bool mpi_started_here;

ompc_status_t ev_mpi_start(void)
{
    int init = 0, provided = 0;
    MPI_Initialized(&init);
    if (!init) {
        /* Test hook, not a setting: OMPC_TEST_THREAD_LEVEL=single asks MPI
         * for no thread support, which is what an MPI built without it
         * grants, so that tests reach the refusal below from a real
         * program. */
        const char *test_level = getenv("OMPC_TEST_THREAD_LEVEL");
        int required = test_level && strcmp(test_level, "single") == 0
                           ? MPI_THREAD_SINGLE
                           : MPI_THREAD_MULTIPLE;
        /* PMPI_: libomptarget defines MPI_Init_thread for the program's
         * own call (tgt_mpi_apps.c), and lets ompc's own through. */
        if (PMPI_Init_thread(NULL, NULL, required, &provided) != MPI_SUCCESS) {
            ompc_error("MPI_Init_thread failed");
            return OMPC_ERR_MPI;
        }
        mpi_started_here = true;
    } else {
        MPI_Query_thread(&provided);
    }
    int world_rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    ompc_log_set_rank(world_rank);
    ompc_set_abort_hook(ev_mpi_abort_hook);
    if (provided < MPI_THREAD_MULTIPLE) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        ev_mpi_library(lib, sizeof(lib));
        ompc_fatal("the MPI library provides thread level %d, but ompc needs "
                   "MPI_THREAD_MULTIPLE (%d). Library: \"%s\". Use an MPI built "
                   "with thread-multiple support: Debian's mpich and openmpi "
                   "packages are; MPICH built from source needs configure "
                   "--enable-threads=multiple (its default); Open MPI has it "
                   "since 3.0. Load that MPI (module load / LD_LIBRARY_PATH) "
                   "and rebuild with it.",
                   provided, MPI_THREAD_MULTIPLE, lib);
    }
    return OMPC_OK;
}

void ev_mpi_finish(void)
{
    if (!mpi_started_here)
        return;
    mpi_started_here = false;
    PMPI_Finalize(); /* PMPI_: as PMPI_Init_thread above */
}

ompc_status_t ev_ctx_create_opts(ev_ctx_t **ctx_p, const ev_ctx_opts_t *opts)
{
    const ompc_config_t *cfg = ompc_config_get();
    int init = 0;
    MPI_Initialized(&init);
    ompc_status_t mst = ev_mpi_start();
    if (mst != OMPC_OK)
        return mst;
    /* A context that started MPI ends it; one that found it running (the
     * caller's ev_mpi_start, or the application) leaves it running. */
    bool owned = !init;
    if (owned)
        mpi_started_here = false;
    ev_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return OMPC_ERR_NOMEM;
    ctx->cfg = cfg;
    ctx->coordinator = opts ? opts->coordinator : -1;
    ctx->mpi_owned = owned;
    ctx->world = opts && opts->world != (MPI_Comm)0 && opts->world != MPI_COMM_NULL
                     ? opts->world
                     : MPI_COMM_WORLD;
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx->world_rank);
    MPI_Comm_rank(ctx->world, &ctx->rank);
    MPI_Comm_size(ctx->world, &ctx->size);
    if (cfg->print_config && ctx->world_rank == 0 && ctx_counter++ == 0)
        ompc_config_print();
    int *tag_ub = NULL, flag = 0;
    MPI_Comm_get_attr(ctx->world, MPI_TAG_UB, &tag_ub, &flag);
    int ub = flag ? *tag_ub : 32767;
    ctx->tag_seq_max = ((ub - 1) / 2 - (ctx->size - 1)) / ctx->size;
    if (ctx->tag_seq_max > (1 << 22))
        ctx->tag_seq_max = 1 << 22; /* bounds the busy map to 4 MiB */
    if (ctx->tag_seq_max < 16)
        ompc_fatal("MPI_TAG_UB %d is too small for %d ranks", ub, ctx->size);
    ctx->tag_busy = calloc((size_t)ctx->tag_seq_max + 1, 1);
    ctx->tag_next = 1;
    ctx->ncomms = (int)cfg->num_comms;
    ctx->chunk = (size_t)cfg->chunk_size;
    ctx->window = (int)cfg->chunk_window;
    atomic_init(&ctx->dbg_recv_budget, -1);
    ctx->inline_max = (size_t)cfg->inline_max;
    ctx->comms = calloc((size_t)ctx->ncomms, sizeof(MPI_Comm));
    ctx->last_heard = calloc((size_t)ctx->size, sizeof(uint64_t));
    ctx->last_ping = calloc((size_t)ctx->size, sizeof(uint64_t));
    ctx->owed = calloc((size_t)ctx->size, sizeof(*ctx->owed));
    ctx->owed_since = calloc((size_t)ctx->size, sizeof(*ctx->owed_since));
    ctx->nhandlers = (int)cfg->num_handlers;
    ctx->handlers = calloc((size_t)ctx->nhandlers, sizeof(pthread_t));
    if (!ctx->tag_busy || !ctx->comms || !ctx->last_heard || !ctx->last_ping ||
        !ctx->owed || !ctx->owed_since || !ctx->handlers)
        ompc_fatal("out of memory creating the event context");
    EV_CHECK_MPI(MPI_Comm_dup(ctx->world, &ctx->ctrl), "MPI_Comm_dup");
    EV_CHECK_MPI(MPI_Comm_dup(ctx->world, &ctx->coll), "MPI_Comm_dup");
    for (int i = 0; i < ctx->ncomms; i++)
        EV_CHECK_MPI(MPI_Comm_dup(ctx->world, &ctx->comms[i]), "MPI_Comm_dup");
    /* Errors inside MPI must reach us as return codes so that messages name
     * the event; EV_CHECK_MPI turns them into fatal errors. */
    MPI_Comm_set_errhandler(ctx->ctrl, MPI_ERRORS_RETURN);
    for (int i = 0; i < ctx->ncomms; i++)
        MPI_Comm_set_errhandler(ctx->comms[i], MPI_ERRORS_RETURN);
    pthread_mutex_init(&ctx->inbox_mtx, NULL);
    pthread_mutex_init(&ctx->progress_mtx, NULL);
    pthread_mutex_init(&ctx->hq_mtx, NULL);
    pthread_cond_init(&ctx->hq_cond, NULL);
    pthread_mutex_init(&ctx->tag_mtx, NULL);
    pthread_mutex_init(&ctx->done_mtx, NULL);
    pthread_cond_init(&ctx->done_cond, NULL);
    pthread_mutex_init(&ctx->fn_mtx, NULL);
    pthread_mutex_init(&ctx->reg_mtx, NULL);
    node_detect(ctx);
    peer_ids_exchange(ctx);
    ompc_status_t bst = ev_bell_init(ctx);
    if (bst != OMPC_OK)
        ompc_fatal("cannot set up the gate's wake-up descriptors: %s",
                   ompc_status_str(bst));
    if (pthread_create(&ctx->gate, NULL, gate_main, ctx) != 0)
        ompc_fatal("cannot start the gate thread");
    for (int i = 0; i < ctx->nhandlers; i++)
        if (pthread_create(&ctx->handlers[i], NULL, handler_main, ctx) != 0)
            ompc_fatal("cannot start handler thread %d", i);
    ompc_debug("event system up: %d ranks, %d comms, %d handlers", ctx->size, ctx->ncomms,
               ctx->nhandlers);
    *ctx_p = ctx;
    return OMPC_OK;
}

ompc_status_t ev_ctx_start(ev_ctx_t *ctx)
{
    if (atomic_load(&ctx->started))
        return OMPC_ERR_INVALID;
    /* Registrations close before the barrier.  Origination opens before it
     * too: a handler may originate events while this thread still sits in
     * the barrier, which is safe, because the event it serves came from a
     * rank that left the barrier, so every rank had registered.  Only the
     * application's own threads must wait for this call to return. */
    atomic_store(&ctx->started, 1);
    EV_CHECK_MPI(MPI_Barrier(ctx->ctrl), "MPI_Barrier");
    /* After the barrier: the coordinator is up (and the gate reads this
     * only when it is not 0). */
    if (ctx->coordinator >= 0 && ctx->coordinator != ctx->rank)
        atomic_store_explicit(&ctx->started_ns, ompc_now_ns(), memory_order_relaxed);
    return OMPC_OK;
}

int ev_ctx_rank(const ev_ctx_t *ctx) { return ctx->rank; }
int ev_ctx_size(const ev_ctx_t *ctx) { return ctx->size; }

static bool pred_exit(void *arg)
{
    return atomic_load(&((ev_ctx_t *)arg)->exit_received) != 0;
}

void ev_signal_exit(ev_ctx_t *ctx)
{
    atomic_store(&ctx->exit_received, 1);
    pthread_mutex_lock(&ctx->done_mtx);
    pthread_cond_broadcast(&ctx->done_cond);
    pthread_mutex_unlock(&ctx->done_mtx);
}

ompc_status_t ev_ctx_serve(ev_ctx_t *ctx)
{
    /* The exit message can wait for a held gate's return. */
    wait_until_deadline(ctx, pred_exit, ctx, UINT64_MAX, true, false);
    return OMPC_OK;
}

static bool pred_no_origin(void *arg)
{
    return atomic_load(&((ev_ctx_t *)arg)->origin_inflight) == 0;
}

ompc_status_t ev_ctx_shutdown(ev_ctx_t *ctx)
{
    wait_until(ctx, pred_no_origin, ctx);
    ompc_status_t st = ev_sync_all(ctx);
    if (st != OMPC_OK)
        return st;
    ev_handle_t **hs = calloc((size_t)ctx->size, sizeof(*hs));
    if (!hs)
        return OMPC_ERR_NOMEM;
    int n = 0;
    for (int r = 0; r < ctx->size; r++) {
        if (r == ctx->rank)
            continue;
        st = ev_start_control(ctx, EV_K_EXIT, r, &hs[n]);
        if (st != OMPC_OK)
            return st;
        n++;
    }
    st = ev_wait_all(hs, (size_t)n);
    for (int i = 0; i < n; i++)
        ev_handle_release(hs[i]);
    free(hs);
    atomic_store(&ctx->shutdown, 1);
    return st;
}

/* The last barrier of the event system, after the gate thread (and with
 * it every liveness check) has ended: a rank that stops now (a hung node
 * between its exit reply and this barrier) would hold every other rank in
 * MPI_Barrier for ever.  So wait in a non-blocking barrier, asleep between
 * tests, for at most OMPC_PEER_TIMEOUT: every rank left its last wait on
 * the others before coming here, so a live one comes within moments. */
static void final_barrier(ev_ctx_t *ctx)
{
    MPI_Request req;
    EV_CHECK_MPI(MPI_Ibarrier(ctx->ctrl, &req), "MPI_Ibarrier");
    const uint64_t t0 = ompc_now_ns();
    const uint64_t limit_ns = (uint64_t)ctx->cfg->peer_timeout_ms * 1000000u;
    long nap_us = 20;
    for (;;) {
        int done = 0;
        EV_CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done)
            return;
        uint64_t waited = ompc_now_ns() - t0;
        if (waited >= limit_ns)
            ompc_fatal("rank %d: not every rank reached the event system's last "
                       "barrier within %.1f s (OMPC_PEER_TIMEOUT) of this one, "
                       "while the job ends: a rank stopped or hangs after its last "
                       "exchange with the others",
                       ctx->rank, (double)waited * 1e-9);
        struct timespec ts = {0, nap_us * 1000};
        nanosleep(&ts, NULL);
        nap_us = nap_us < 20000 ? nap_us * 2 : 20000;
    }
}

void ev_ctx_destroy(ev_ctx_t *ctx)
{
    if (!ctx)
        return;
    atomic_store(&ctx->shutdown, 1);
    atomic_store(&ctx->stopping, 1);
    ev_bell_wake(ctx);
    pthread_join(ctx->gate, NULL);
    pthread_mutex_lock(&ctx->hq_mtx);
    pthread_cond_broadcast(&ctx->hq_cond);
    pthread_mutex_unlock(&ctx->hq_mtx);
    for (int i = 0; i < ctx->nhandlers; i++)
        pthread_join(ctx->handlers[i], NULL);
    final_barrier(ctx);
    for (int i = 0; i < ctx->ncomms; i++)
        MPI_Comm_free(&ctx->comms[i]);
    MPI_Comm_free(&ctx->ctrl);
    MPI_Comm_free(&ctx->coll);
    ev_region_destroy_all(ctx);
    uint64_t rung = atomic_load(&ctx->bell.st_rung),
             awake = atomic_load(&ctx->bell.st_awake);
    if (ctx->cfg->stats && rung + awake)
        fprintf(stderr,
                "[ompc stats] rank %d: %llu doorbells rung, %llu left out (the peer's "
                "gate was awake)\n",
                ctx->rank, (unsigned long long)rung, (unsigned long long)awake);
    ev_bell_fini(ctx);
    pthread_mutex_destroy(&ctx->inbox_mtx);
    pthread_mutex_destroy(&ctx->progress_mtx);
    pthread_mutex_destroy(&ctx->hq_mtx);
    pthread_cond_destroy(&ctx->hq_cond);
    pthread_mutex_destroy(&ctx->tag_mtx);
    pthread_mutex_destroy(&ctx->done_mtx);
    pthread_cond_destroy(&ctx->done_cond);
    pthread_mutex_destroy(&ctx->fn_mtx);
    pthread_mutex_destroy(&ctx->reg_mtx);
    bool fin = ctx->mpi_owned;
    free(ctx->reqs);
    free(ctx->req_owner);
    free(ctx->req_cookie);
    free(ctx->tsome_idx);
    free(ctx->tag_busy);
    free(ctx->comms);
    free(ctx->last_heard);
    free(ctx->last_ping);
    free((void *)ctx->owed);
    free((void *)ctx->owed_since);
    free(ctx->ids);
    free(ctx->handlers);
    free((int *)ctx->node.same);
    free(ctx);
    if (fin)
        PMPI_Finalize(); /* PMPI_: as PMPI_Init_thread above */
}
