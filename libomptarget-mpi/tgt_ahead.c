/* Launch ahead, executor side: kernels that arrive before their inputs.
 *
 * The head sends a kernel to its executor as soon as every task it depends
 * on has been sent somewhere, not once they are done (tgt_ahead_head.c).  The
 * launch names what the kernel waits for: tasks of this executor (by
 * sequence number) and, for each input another executor produces or holds,
 * that executor and the task after which its copy is current.  The executor
 * asks each of those peers for the data (a watch); the peer answers as soon
 * as that task is done, worker to worker.  The head hears of each kernel
 * once, when it is done, and is off the critical path in between.
 *
 * Every message handler here runs on the gate thread (short, no waits); the
 * kernels run on this file's own threads. */
#define _GNU_SOURCE
#include "tgt_graph.h"
#include "ompc_trace.h"
#include "ompc_u64map.h"
#include "tgt_wire.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The messages (launch batches, watches, arrivals, completions, prompts)
 * are tgt_wire.h's.  Data up to this size travels inside the arrive
 * message; larger goes first as a transfer. */
#define FWD_INLINE_MAX (32 * 1024)
/* Completions wait to go together while more work launched here is ready
 * or waits for its inputs; with nothing more launched here they go at
 * once (the head may be waiting for them).  Each message costs the head a
 * wake-up of its gate and of a dispatch thread, a large share of its CPU
 * for short tasks (docs/performance.md, "launch, completion and request
 * batching").  How long they may wait depends on the head: while it may
 * wait for one (a thread waits for a task, or a task with work on the
 * head waits for its predecessors) at most D_MAX_AGE_NS and D_MAX of
 * them; while nothing there waits, D_RELAXED_AGE_NS and D_RELAXED_MAX.
 * Each launch batch says which, and the head posts a change to "waiting"
 * at once (fn_prompt).  A kernel's first completion here goes at once:
 * HEFT holds tasks back until it knows their kernel's cost. */
#define D_MAX 32
#define D_RELAXED_MAX 256
#define D_MAX_AGE_NS 500000u
#define D_RELAXED_AGE_NS 5000000u

typedef struct ahd_task {
    uint64_t seq;
    int missing;             /* local tasks and arrivals still awaited */
    /* The slowest timed arrival: now minus the sender's serve time (two
     * clocks; the head corrects by their offsets) and who sent it. */
    uint64_t hop_raw;
    int hop_rank;
    char *kmsg;
    size_t klen;
    struct ahd_task *rnext;   /* ready queue */
} ahd_task_t;

/* Something waiting for a task of this executor to be done: a local task,
 * or a peer's watch (task NULL). */
typedef struct ahd_wait {
    uint64_t seq;
    ahd_task_t *task;
    uint64_t addr, daddr, size, cseq;
    int crank;
    struct ahd_wait *next;
} ahd_wait_t;

/* Per kernel, its runs here: the last one's time (0: none) tells how long
 * the next task should take (dq_due); runs and the longest decide whether
 * a task may run on the gate thread (fn_arrive): only a kernel that was
 * short every time, over enough runs, does, and one that ever ran long
 * there never does again. */
typedef struct kstat {
    uint64_t last_ns;
    uint64_t runs;
    uint64_t max_ns;
    uint64_t long_runs; /* runs over GATE_BAN_NS */
    bool gate_banned;
} kstat_t;
#define GATE_MIN_RUNS 4
#define GATE_BAN_NS 1000000u
/* Where the gate runs the ready queue (gate_exec), a kernel's time is
 * judged by how often it runs long, not by its longest run, and a run on
 * the gate by its CPU time: on a crowded node a 0.1 ms kernel's wall time
 * passes 1 ms whenever it loses its CPU for a tick or two, and one such
 * run would keep its kernel off the gate for good.  A kernel may run
 * there while at most 1 in GATE_LONG_FRAC of its runs took over
 * GATE_BAN_NS, and one run there of over GATE_BAN_NS of CPU bans it. */
#define GATE_LONG_FRAC 8

typedef struct ahd_exec ahd_exec_t;

/* A kernel thread: its name's number and the state it serves. */
typedef struct ahd_thread {
    ahd_exec_t *x;
    int i;
    pthread_t th;
} ahd_thread_t;

/* Forwarded bytes that may not land yet (fn_arrive): a kernel running
 * here holds pages of their buffer through faults.  Landed by the gate's
 * work once they may (gate_work). */
typedef struct ahd_held {
    struct ahd_held *next;
    tgt_wire_arrive_t m;
    int origin;
    uint64_t now; /* when it arrived */
    unsigned char bytes[];
} ahd_held_t;

/* An executor's launch-ahead state: one per rank (ahd_exec, below).
 * mtx guards every field not atomic; it is a leaf lock (tgt_internal.h). */
struct ahd_exec {
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    ompc_u64map_t tasks;     /* seq -> ahd_task_t *, until it runs */
    ompc_u64map_t waits;     /* seq -> ahd_wait_t list (by next) waiting for it */
    ompc_u64map_t done;      /* finished tasks > lwm (keys only) */
    size_t done_prune_at;    /* drop what lwm covers at this many keys */
    uint64_t lwm;
    ahd_task_t *rq_head, *rq_tail;
    bool stop;
    int nthr;
    ahd_thread_t *thr;
    _Atomic int hot;         /* an engine thread polls the ready queue */
    _Atomic int gate_exec;   /* the gate runs ready short tasks (gate_work) */
    /* fn_arrive's task for the gate, run by gate_work after the pass */
    _Atomic(struct ahd_task *) gate_next;
    _Atomic int nready;
    _Atomic int running;     /* kernels running now */
    size_t nwaiting;         /* launched tasks waiting for inputs (tasks) */
    tgt_wire_done_t dq[D_RELAXED_MAX]; /* completions not sent yet */
    size_t dn;
    uint64_t dt0;            /* when the oldest of them was done */
    bool dq_gate;            /* the gate sends them when due (gate_work) */
    kstat_t *kstat;          /* per kernel */
    bool prompt;             /* the head may wait for a completion */
    uint64_t gen;            /* the head's generation prompt came with */
    _Atomic uint64_t watches, watch_msgs; /* data requests sent, messages */
    _Atomic uint64_t gate_runs;          /* tasks run on the gate thread */
    ompc_u64map_t patches;   /* seq -> ahd_patch_t list (fn_patch), oldest
                                first: applied when that task starts */
    ahd_held_t *held;        /* arrivals not landed yet (fn_arrive) */
    _Atomic size_t nheld;    /* of them; read without mtx by gate_work */
};

/* Bytes a task must see when it starts (fn_patch): written through page
 * faults, after its launch, by a task it is ordered after. */
typedef struct ahd_patch {
    struct ahd_patch *next;
    size_t len;
    unsigned char runs[];    /* the write-back runs of ompc_dm.h */
} ahd_patch_t;

/* The event system's handlers take no argument of ours: they and the
 * start and stop calls find the state here and pass it down. */
static ahd_exec_t ahd_exec = {
    .mtx = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .prompt = true};

/* ----------------------------------------------------------- done set */
static bool done_has(const ahd_exec_t *x, uint64_t seq)
{
    return seq <= x->lwm || ompc_u64map_get(&x->done, seq, NULL);
}

static bool done_covered(uint64_t seq, uint64_t val, void *arg)
{
    (void)val;
    return seq <= *(const uint64_t *)arg;
}

static void done_add(ahd_exec_t *x, uint64_t seq)
{
    if (seq <= x->lwm)
        return;
    if (ompc_u64map_size(&x->done) >= x->done_prune_at) {
        /* Drop what the low-water mark covers once the set has doubled
         * since the last time: amortized O(1) per task. */
        ompc_u64map_remove_if(&x->done, done_covered, &x->lwm);
        x->done_prune_at = 2 * ompc_u64map_size(&x->done) + 32;
    }
    if (ompc_u64map_put(&x->done, seq, 0) != OMPC_OK)
        ompc_fatal("out of memory tracking finished tasks");
}

/* ------------------------------------------------------------ sending */
/* One-way: no reply to wait for or to wake a gate for.  A failure to
 * deliver ends the job (the event system names a dead peer), and a peer
 * that cannot act on the message ends it there, naming this rank. */
static void send_post(int rank, ev_fn_id_t fn, const void *args, size_t len,
                      const char *what)
{
    ompc_status_t st = ev_post(tgt_rt->ev, rank, fn, args, len);
    if (st != OMPC_OK)
        ompc_fatal("rank %d: cannot send %s to rank %d: %s", tgt_rt->rank, what, rank,
                   ompc_status_str(st));
}

static void send_arrive(int crank, uint64_t cseq, uint64_t addr, uint64_t daddr,
                        uint64_t size, bool bytes, uint64_t served_ns)
{
    tgt_wire_arrive_t h = {.cseq = cseq,
                           .daddr = daddr,
                           .size = size,
                           .has_bytes = bytes,
                           .served_ns = served_ns,
                           .rank = (uint64_t)tgt_rt->rank};
    size_t len = tgt_wire_arrive_size(&h);
    void *m = malloc(len);
    if (!m)
        ompc_fatal("out of memory forwarding data");
    tgt_wire_arrive_put(m, &h, (const void *)(uintptr_t)addr);
    send_post(crank, tgt_rt->fn_ahead_arrive, m, len, "forwarded data");
    free(m);
}

static void on_pushed(void *arg, ompc_status_t st)
{
    ahd_wait_t *w = arg;
    if (st != OMPC_OK)
        ompc_fatal("rank %d: forwarding %llu bytes to rank %d failed: %s", tgt_rt->rank,
                   (unsigned long long)w->size, w->crank, ompc_status_str(st));
    /* Not timed: the hop would include moving the bytes. */
    send_arrive(w->crank, w->cseq, w->addr, w->daddr, w->size, false, 0);
    free(w);
}

/* Answer a watch whose task is done (no lock held). */
static void serve(ahd_wait_t *w)
{
    /* The pages exist once the task that wrote them is done (a watch may
     * arrive before that task's launch, so this is checked only now). */
    if (w->size &&
        !ev_mem_contains(tgt_rt->ev, (const void *)(uintptr_t)w->addr, w->size))
        ompc_fatal("rank %d: asked to forward %llu bytes at %#llx to rank %d, "
                   "which this rank does not hold",
                   tgt_rt->rank, (unsigned long long)w->size, (unsigned long long)w->addr,
                   w->crank);
    /* The copy here stops being the only current one: read-only now, so
     * that a kernel's write into it through a pointer reaches the head. */
    if (w->size && w->crank != tgt_rt->rank)
        dm_exec_served(w->addr, w->size);
    if (w->size == 0 || w->size <= FWD_INLINE_MAX) {
        /* Timed from here: the data exists and the consumer asked for it,
         * so what follows is the hop alone (the head learns it, for HEFT). */
        send_arrive(w->crank, w->cseq, w->addr, w->daddr, w->size, w->size > 0,
                    ompc_now_ns());
        free(w);
        return;
    }
    /* Large: the data first, then the notice (two messages of one origin
     * on different tags have no order, so the notice waits for the data). */
    ev_handle_t *h;
    ompc_status_t st = ev_submit(tgt_rt->ev, w->crank, (const void *)(uintptr_t)w->addr,
                                 w->daddr, w->size, &h);
    if (st != OMPC_OK)
        ompc_fatal("rank %d: cannot forward data to rank %d: %s", tgt_rt->rank, w->crank,
                   ompc_status_str(st));
    ev_handle_on_done(h, on_pushed, w);
    ev_handle_release(h);
}

/* ------------------------------------------------------------ tables */
/* Set on the gate thread by gate_work (it runs after every pass): a task
 * the gate makes ready there it may run itself. */
static _Thread_local bool tl_on_gate;

static bool gate_may_run(const ahd_exec_t *x, const ahd_task_t *t);

/* x->mtx held.  A task the gate makes ready and runs itself (gate_work)
 * wakes no kernel thread: on a crowded node that wake-up costs tens of
 * microseconds of CPU, as much as a short kernel. */
static void make_ready(ahd_exec_t *x, ahd_task_t *t)
{
    t->rnext = NULL;
    if (x->rq_tail)
        x->rq_tail->rnext = t;
    else
        x->rq_head = t;
    x->rq_tail = t;
    atomic_fetch_add(&x->nready, 1);
    if (tl_on_gate && atomic_load_explicit(&x->gate_exec, memory_order_relaxed) &&
        gate_may_run(x, t))
        return;
    if (!atomic_load(&x->hot))
        pthread_cond_signal(&x->cv);
}

static ahd_task_t *task_find(ahd_exec_t *x, uint64_t seq)
{
    uint64_t v;
    return ompc_u64map_get(&x->tasks, seq, &v) ? (ahd_task_t *)(uintptr_t)v : NULL;
}

static void task_link(ahd_exec_t *x, ahd_task_t *t)
{
    OMPC_ASSERT(!task_find(x, t->seq));
    if (ompc_u64map_put(&x->tasks, t->seq, (uint64_t)(uintptr_t)t) != OMPC_OK)
        ompc_fatal("out of memory launching a kernel");
    x->nwaiting++;
}

static void task_unlink(ahd_exec_t *x, ahd_task_t *t)
{
    ompc_u64map_remove(&x->tasks, t->seq, NULL);
    x->nwaiting--;
}

static void wait_add(ahd_exec_t *x, ahd_wait_t *w)
{
    uint64_t head = 0;
    ompc_u64map_get(&x->waits, w->seq, &head);
    w->next = (ahd_wait_t *)(uintptr_t)head;
    if (ompc_u64map_put(&x->waits, w->seq, (uint64_t)(uintptr_t)w) != OMPC_OK)
        ompc_fatal("out of memory waiting for a task");
}

/* ----------------------------------------------------------- handlers */
static void task_done(ahd_exec_t *x, ahd_task_t *t, ompc_status_t st, uint64_t ns,
                      bool on_gate, uint64_t gate_cpu_ns);
static void run_task(ahd_exec_t *x, ahd_task_t *t, bool on_gate);
static int task_kernel(const ahd_task_t *t);

/* No kernel running or ready here: a message arriving now is waited for. */
static bool idle_now(ahd_exec_t *x)
{
    return atomic_load(&x->running) == 0 && atomic_load(&x->nready) == 0;
}

/* The data requests of one launch batch, one message per peer: a batch
 * of a stencil's tasks asks the same neighbour again and again, and each
 * message costs that neighbour's gate a wake-up. */
typedef struct watch_out {
    int rank;
    size_t n, cap;       /* in watches */
    tgt_wire_watch_t *w;
} watch_out_t;

typedef struct watch_batch {
    watch_out_t *peer;
    size_t npeer, cap;
} watch_batch_t;

static void watch_add(watch_batch_t *b, int rank, const tgt_wire_watch_t *wm)
{
    watch_out_t *o = NULL;
    for (size_t i = 0; i < b->npeer && !o; i++)
        if (b->peer[i].rank == rank)
            o = &b->peer[i];
    if (!o) {
        b->peer = tgt_grow(b->peer, &b->cap, b->npeer, sizeof(*b->peer),
                           "launching a kernel");
        o = &b->peer[b->npeer++];
        *o = (watch_out_t){.rank = rank};
    }
    o->w = tgt_grow(o->w, &o->cap, o->n, sizeof(*o->w), "launching a kernel");
    o->w[o->n++] = *wm;
}

/* A batch's pulls fit in one message; its watches may not: at most this
 * many go in one. */
#define W_PER_MSG (EV_EXEC_MAX_ARGS / sizeof(tgt_wire_watch_t))

/* W_PER_MSG, or fewer under the test hook OMPC_TEST_WATCHES_PER_MSG (not
 * a setting): a batch with 1366 requests to one peer needs kernels with
 * dozens of inputs each, and the hook splits an ordinary stencil's. */
static size_t watches_per_msg(void)
{
    static _Atomic size_t per;
    size_t v = atomic_load_explicit(&per, memory_order_relaxed);
    if (!v) {
        const char *t = getenv("OMPC_TEST_WATCHES_PER_MSG");
        long n = t ? strtol(t, NULL, 10) : 0;
        v = n > 0 && (size_t)n < W_PER_MSG ? (size_t)n : W_PER_MSG;
        atomic_store_explicit(&per, v, memory_order_relaxed);
    }
    return v;
}

static void watch_send(ahd_exec_t *x, watch_batch_t *b)
{
    size_t per = watches_per_msg();
    for (size_t i = 0; i < b->npeer; i++) {
        watch_out_t *o = &b->peer[i];
        for (size_t at = 0; at < o->n; at += per) {
            size_t k = o->n - at < per ? o->n - at : per;
            send_post(o->rank, tgt_rt->fn_ahead_watch, o->w + at, k * sizeof(*o->w),
                      k == 1 ? "a data request" : "data requests");
            atomic_fetch_add_explicit(&x->watch_msgs, 1, memory_order_relaxed);
        }
        atomic_fetch_add_explicit(&x->watches, o->n, memory_order_relaxed);
        free(o->w);
    }
    free(b->peer);
}

/* One launch of a batch.  A launch this rank cannot take is reported as
 * its task's failure, so that the head names the kernel.  Its data
 * requests go to `wb`, sent once the whole batch is in the tables (an
 * answer may come back at once and must find its task). */
static void launch_one(ahd_exec_t *x, ev_exec_info_t *info,
                       const tgt_wire_launch_view_t *l, watch_batch_t *wb)
{
    const tgt_wire_launch_t *h = &l->h;
    ahd_task_t *t = calloc(1, sizeof(*t));
    char *k = malloc(h->klen ? h->klen : 1);
    if (!t || !k) {
        free(t);
        free(k);
        ompc_fatal("out of memory launching a kernel");
    }
    t->seq = h->seq;
    t->hop_rank = -1;
    for (uint64_t i = 0; i < h->nclose; i++) {
        tgt_wire_commit_t c = tgt_wire_close_get(l, i);
        dm_exec_close(h->seq, c.addr, c.span, c.epoch);
    }
    for (uint64_t i = 0; i < h->ncommit; i++) {
        tgt_wire_commit_t c = tgt_wire_commit_get(l, i);
        /* Mapped when data lands in it or when this task starts, never
         * before: a kernel running here meanwhile reaches it through
         * faults.  Whether data follows cannot be told from this launch:
         * the head repeats a commit still in flight in later launches,
         * and the launch that pulls the data (sent by another dispatching
         * thread) may come after one that only repeats the commit.
         * Mapped at once, such a copy showed a fault writer here zeros it
         * wrote into without faulting, and the pulled data then landed
         * over its bytes. */
        ompc_status_t st = dm_exec_commit_ahead(info->ctx, c.addr, c.span, c.epoch,
                                                h->seq, true);
        if (st != OMPC_OK) {
            free(k);
            task_done(x, t, st, 0, true, 0); /* fn_launch runs on the gate */
            return;
        }
    }
    memcpy(k, l->kmsg, h->klen);
    t->kmsg = k;
    t->klen = h->klen;
    t->missing = (int)h->npull + 1; /* +1: until this handler is done with it */
    pthread_mutex_lock(&x->mtx);
    if (h->lwm > x->lwm)
        x->lwm = h->lwm;
    task_link(x, t);
    for (uint64_t i = 0; i < h->nafter; i++) {
        uint64_t after = tgt_wire_after_get(l, i);
        if (done_has(x, after))
            continue;
        ahd_wait_t *w = calloc(1, sizeof(*w));
        if (!w)
            ompc_fatal("out of memory launching a kernel");
        w->seq = after;
        w->task = t;
        t->missing++;
        wait_add(x, w);
    }
    if (--t->missing == 0) {
        task_unlink(x, t);
        make_ready(x, t);
    }
    pthread_mutex_unlock(&x->mtx);
    /* Ask the peers: a pull, and who asks. */
    for (uint64_t i = 0; i < h->npull; i++) {
        tgt_wire_pull_t q = tgt_wire_pull_get(l, i);
        tgt_wire_watch_t wm = {.after = q.after,
                               .addr = q.src,
                               .daddr = q.dst,
                               .size = q.size,
                               .cseq = h->seq,
                               .crank = (uint64_t)tgt_rt->rank};
        watch_add(wb, (int)q.rank, &wm);
        /* Owed until it arrives (fn_arrive): the liveness check watches
         * the peer meanwhile. */
        ev_peer_expect(info->ctx, (int)q.rank, 1);
    }
}

static void dq_send(const tgt_wire_done_t *m, size_t n);
static size_t dq_take(ahd_exec_t *x, tgt_wire_done_t *out);

/* x->mtx held: how many completions may wait, and how long. */
static size_t dq_max(const ahd_exec_t *x) { return x->prompt ? D_MAX : D_RELAXED_MAX; }
static uint64_t dq_max_age(const ahd_exec_t *x)
{
    return x->prompt ? D_MAX_AGE_NS : D_RELAXED_AGE_NS;
}

/* The head's wish, from a batch or a post of generation gen: a message of
 * an older generation came late (another communicator) and is ignored.
 * Asked for promptness, completions waiting go now (the gate does not
 * wait on x->cv, where they would go when due). */
static void set_prompt(ahd_exec_t *x, uint64_t gen, bool prompt, const char *how)
{
    tgt_wire_done_t out[D_RELAXED_MAX];
    size_t nout = 0;
    pthread_mutex_lock(&x->mtx);
    if (gen >= x->gen) {
        x->gen = gen;
        if (prompt && !x->prompt && tgt_rt->info)
            fprintf(stderr,
                    "[ompc info] r%d: the head may wait for a task "
                    "(%s): completions go promptly\n",
                    tgt_rt->rank, how);
        x->prompt = prompt;
        if (prompt && x->dn)
            nout = dq_take(x, out);
    }
    pthread_mutex_unlock(&x->mtx);
    dq_send(out, nout);
}

/* A message that does not decode (tgt_wire.h says why) is refused whole;
 * the event system then ends the job or fails the sender's event. */
static ompc_status_t refuse_from(int origin, const char *what, const char *why)
{
    ompc_error("rank %d: refused %s from rank %d: %s", tgt_rt->rank, what, origin, why);
    return OMPC_ERR_INVALID;
}

static ompc_status_t refuse(const ev_exec_info_t *info, const char *what, const char *why)
{
    return refuse_from(info->origin, what, why);
}

static ompc_status_t fn_prompt(ev_exec_info_t *info)
{
    tgt_wire_prompt_t p;
    const char *bad = tgt_wire_prompt_open(info->args, info->args_size, &p);
    if (bad)
        return refuse(info, "a prompt", bad);
    set_prompt(&ahd_exec, p.gen, true, "it posted so");
    return OMPC_OK;
}

/* Bytes for a task launched here (tgt_wire_patch_t), kept until it
 * starts: the head answers a write-back only once they are kept, and the
 * task cannot start before the writer's completion, which comes after
 * that answer.  For a task already done here they would come too late:
 * refused, and the head ends the job. */
static ompc_status_t fn_patch(ev_exec_info_t *info)
{
    ahd_exec_t *x = &ahd_exec;
    tgt_wire_patch_t h;
    const unsigned char *runs;
    size_t len;
    const char *bad = tgt_wire_patch_open(info->args, info->args_size, &h, &runs, &len);
    if (bad)
        return refuse(info, "bytes written through page faults", bad);
    ahd_patch_t *p = malloc(sizeof(*p) + len);
    if (!p)
        return OMPC_ERR_NOMEM;
    p->next = NULL;
    p->len = len;
    memcpy(p->runs, runs, len);
    pthread_mutex_lock(&x->mtx);
    bool late = done_has(x, h.seq);
    uint64_t v = 0;
    if (!late && ompc_u64map_get(&x->patches, h.seq, &v)) {
        ahd_patch_t *q = (ahd_patch_t *)(uintptr_t)v;
        while (q->next)
            q = q->next;
        q->next = p;
    } else if (!late &&
               ompc_u64map_put(&x->patches, h.seq, (uint64_t)(uintptr_t)p) != OMPC_OK) {
        late = true;
    }
    pthread_mutex_unlock(&x->mtx);
    if (late) {
        free(p);
        return refuse(info, "bytes written through page faults",
                      "for a task already done here");
    }
    return OMPC_OK;
}

/* Applies the bytes kept for task seq (fn_patch), oldest first, after its
 * inputs landed and before its kernel runs. */
static void patches_apply(ahd_exec_t *x, uint64_t seq)
{
    uint64_t v = 0;
    pthread_mutex_lock(&x->mtx);
    bool any = ompc_u64map_size(&x->patches) > 0 &&
               ompc_u64map_remove(&x->patches, seq, &v);
    pthread_mutex_unlock(&x->mtx);
    if (!any)
        return;
    for (ahd_patch_t *p = (ahd_patch_t *)(uintptr_t)v, *pn; p; p = pn) {
        pn = p->next;
        for (size_t at = 0; at < p->len;) {
            uint64_t addr, rl;
            memcpy(&addr, p->runs + at, 8);
            memcpy(&rl, p->runs + at + 8, 8);
            if (!ev_mem_contains(tgt_rt->ev, (const void *)(uintptr_t)addr, rl))
                ompc_fatal("rank %d: bytes written through page faults at %#llx are "
                           "for task %llu, which does not hold that buffer here",
                           tgt_rt->rank, (unsigned long long)addr,
                           (unsigned long long)seq);
            dm_exec_store((void *)(uintptr_t)addr, p->runs + at + 16, rl);
            at += 16 + ((rl + 7) & ~(uint64_t)7);
        }
        free(p);
    }
}

/* A batch of launches, checked whole before any of it is taken. */
static ompc_status_t fn_launch(ev_exec_info_t *info)
{
    ahd_exec_t *x = &ahd_exec;
    tgt_wire_launch_reply_t rep = {ompc_now_ns()};
    /* The head learns the hop from when the batch got here (this rank's
     * clock), but only if this rank was idle: a busy one's gate waits for
     * a core behind the kernels (milliseconds on a crowded node), which
     * delays nothing that waits for it and would only teach HEFT to shun
     * transfers.  Asked before the batch makes its own tasks ready. */
    if (!idle_now(x))
        rep.arrived_ns = 0;
    tgt_wire_batch_reader_t r;
    const char *bad = tgt_wire_batch_open(info->args, info->args_size, &r);
    if (bad)
        return refuse(info, "a launch batch", bad);
    set_prompt(x, r.gen, r.prompt, "its launch batch says so");
    watch_batch_t wb = {0};
    tgt_wire_launch_view_t l;
    while (tgt_wire_batch_next(&r, &l))
        launch_one(x, info, &l, &wb);
    watch_send(x, &wb);
    if (info->result_cap >= sizeof(rep)) {
        memcpy(info->result, &rep, sizeof(rep));
        info->result_size = sizeof(rep);
    }
    return OMPC_OK;
}

/* Data requests of one launch batch of a peer. */
static ompc_status_t fn_watch(ev_exec_info_t *info)
{
    ahd_exec_t *x = &ahd_exec;
    size_t n;
    const char *bad = tgt_wire_watches_open(info->args, info->args_size, &n);
    if (bad)
        return refuse(info, "data requests", bad);
    /* Watches whose task is done: served in order, unlocked. */
    ahd_wait_t *ready = NULL, **tail = &ready;
    ompc_status_t st = OMPC_OK;
    pthread_mutex_lock(&x->mtx);
    for (size_t i = 0; i < n; i++) {
        tgt_wire_watch_t m = tgt_wire_watch_get(info->args, i);
        ahd_wait_t *w = calloc(1, sizeof(*w));
        if (!w) {
            st = OMPC_ERR_NOMEM;
            break;
        }
        *w = (ahd_wait_t){.seq = m.after,
                          .addr = m.addr,
                          .daddr = m.daddr,
                          .size = m.size,
                          .cseq = m.cseq,
                          .crank = (int)m.crank};
        if (done_has(x, w->seq)) {
            *tail = w;
            tail = &w->next;
        } else {
            wait_add(x, w);
        }
    }
    pthread_mutex_unlock(&x->mtx);
    while (ready) {
        ahd_wait_t *w = ready;
        ready = w->next;
        serve(w);
    }
    return st;
}

static ompc_status_t arrive_take(ahd_exec_t *x, const tgt_wire_arrive_t *mp,
                                 const void *bytes, int origin, uint64_t now);

/* How often the gate asks again whether kept arrivals may land: they wait
 * for kernels to end, so a wake-up a little late costs little. */
#define HELD_RETRY_NS 200000u

static ompc_status_t fn_arrive(ev_exec_info_t *info)
{
    ahd_exec_t *x = &ahd_exec;
    tgt_wire_arrive_t m;
    const void *bytes;
    const char *bad = tgt_wire_arrive_open(info->args, info->args_size, &m, &bytes);
    if (bad)
        return refuse(info, "forwarded data", bad);
    uint64_t now = ompc_now_ns();
    ev_peer_expect(info->ctx, info->origin, -1);
    if (bytes && !dm_exec_land_ready(m.daddr, m.size)) {
        /* Kept: the task counts this input once its bytes landed
         * (gate_work). */
        ahd_held_t *k = malloc(sizeof(*k) + m.size);
        if (!k)
            return OMPC_ERR_NOMEM;
        k->next = NULL;
        k->m = m;
        k->origin = info->origin;
        k->now = now;
        memcpy(k->bytes, bytes, m.size);
        pthread_mutex_lock(&x->mtx);
        ahd_held_t **tail = &x->held;
        while (*tail)
            tail = &(*tail)->next;
        *tail = k;
        atomic_fetch_add(&x->nheld, 1);
        pthread_mutex_unlock(&x->mtx);
        ev_gate_work_by(info->ctx, now + HELD_RETRY_NS);
        return OMPC_OK;
    }
    return arrive_take(x, &m, bytes, info->origin, now);
}

/* Forwarded data for task m->cseq is here (bytes: in the message, not
 * landed yet): it lands, and the task counts it. */
static ompc_status_t arrive_take(ahd_exec_t *x, const tgt_wire_arrive_t *mp,
                                 const void *bytes, int origin, uint64_t now)
{
    tgt_wire_arrive_t m = *mp;
    if (bytes && !dm_exec_land(m.daddr, m.size, bytes))
        memcpy((void *)(uintptr_t)m.daddr, bytes, m.size);
    pthread_mutex_lock(&x->mtx);
    ahd_task_t *t = task_find(x, m.cseq);
    /* Timed only if this rank waits for nothing else (see fn_launch). */
    if (t && m.served_ns && (int)m.rank != tgt_rt->rank && idle_now(x) &&
        (t->hop_rank < 0 || now - m.served_ns > t->hop_raw)) {
        t->hop_raw = now - m.served_ns;
        t->hop_rank = (int)m.rank;
    }
    /* A short task whose last input this is runs here, on the gate, when
     * this rank has nothing else to run: handing it to a kernel thread
     * costs a wake-up, a large part of a worker-to-worker hop on a VM
     * (docs/performance.md, "short tasks on the gate thread").  The gate
     * must not stop receiving for long (transfers, pings): only a kernel
     * that was short every time, over a few runs, comes here, and one
     * that runs long here once never does again.
     * The gate runs it right after this pass (gate_work), not here: here
     * it holds the engine's progress role, and a page fault of the kernel
     * needs messages moved by a waiting thread (ev_gate_hold). */
    if (t && --t->missing == 0) {
        task_unlink(x, t);
        if (tl_on_gate && !atomic_load_explicit(&x->gate_exec, memory_order_relaxed) &&
            gate_may_run(x, t) && !x->rq_head && atomic_load(&x->running) == 0 &&
            !atomic_load(&x->gate_next)) {
            atomic_fetch_add(&x->running, 1);
            atomic_store(&x->gate_next, t);
        } else {
            make_ready(x, t);
        }
    }
    pthread_mutex_unlock(&x->mtx);
    return t ? OMPC_OK
             : refuse_from(origin, "forwarded data", "for a task not launched here");
}

/* Gate thread: the arrivals kept by fn_arrive that may land now.  Taken
 * off the list to be asked (x->mtx is a leaf lock; the data manager's
 * answer takes its own). */
static bool held_land(ahd_exec_t *x)
{
    pthread_mutex_lock(&x->mtx);
    ahd_held_t *list = x->held, *keep = NULL, **kt = &keep;
    x->held = NULL;
    atomic_store(&x->nheld, 0);
    pthread_mutex_unlock(&x->mtx);
    bool did = false;
    size_t nkeep = 0;
    for (ahd_held_t *k = list, *kn; k; k = kn) {
        kn = k->next;
        k->next = NULL;
        if (!dm_exec_land_ready(k->m.daddr, k->m.size)) {
            *kt = k;
            kt = &k->next;
            nkeep++;
            continue;
        }
        if (arrive_take(x, &k->m, k->bytes, k->origin, k->now) != OMPC_OK)
            ompc_fatal("rank %d: forwarded data from rank %d is for a task not launched "
                       "here",
                       tgt_rt->rank, k->origin);
        free(k);
        did = true;
    }
    if (keep) {
        pthread_mutex_lock(&x->mtx);
        *kt = x->held; /* kept first, then what came meanwhile */
        x->held = keep;
        atomic_fetch_add(&x->nheld, nkeep);
        pthread_mutex_unlock(&x->mtx);
        ev_gate_work_by(tgt_rt->ev, ompc_now_ns() + HELD_RETRY_NS);
    }
    return did;
}

static ompc_status_t fn_done(ev_exec_info_t *info)
{
    size_t n;
    const char *bad = tgt_wire_dones_open(info->args, info->args_size, &n);
    if (bad)
        return refuse(info, "kernel completions", bad);
    tgt_graph_ahead_done(info->args, n, info->origin);
    return OMPC_OK;
}

/* What this rank waits for from `rank`, for the event system's message
 * when that rank falls silent. */
static int describe_owed(void *arg, int rank, int owed, char *buf, size_t cap)
{
    (void)arg;
    if (tgt_rt->rank == 0)
        return tgt_graph_describe_owed(rank, owed, buf, cap);
    if (owed > 0)
        return snprintf(buf, cap,
                        "%d input(s) it forwards to kernels waiting "
                        "here%s",
                        owed, rank == 0 ? ", and its next launch" : "");
    return snprintf(buf, cap, "its next launch (a worker works for the head only)");
}

ompc_status_t tgt_ahead_fn_register(void)
{
    ev_ctx_t *ev = tgt_rt->ev;
    ev_set_peer_describe(ev, describe_owed, NULL);
    ompc_status_t st = ev_fn_register(ev, "tgt.ahead.launch", fn_launch, EV_FN_INLINE,
                                      &tgt_rt->fn_ahead_launch);
    if (st == OMPC_OK)
        st = ev_fn_register(ev, "tgt.ahead.watch", fn_watch, EV_FN_INLINE,
                            &tgt_rt->fn_ahead_watch);
    if (st == OMPC_OK)
        st = ev_fn_register(ev, "tgt.ahead.arrive", fn_arrive, EV_FN_INLINE,
                            &tgt_rt->fn_ahead_arrive);
    if (st == OMPC_OK)
        st = ev_fn_register(ev, "tgt.ahead.done", fn_done, EV_FN_INLINE,
                            &tgt_rt->fn_ahead_done);
    if (st == OMPC_OK)
        st = ev_fn_register(ev, "tgt.ahead.prompt", fn_prompt, EV_FN_INLINE,
                            &tgt_rt->fn_ahead_prompt);
    if (st == OMPC_OK)
        st = ev_fn_register(ev, "tgt.ahead.patch", fn_patch, EV_FN_INLINE,
                            &tgt_rt->fn_ahead_patch);
    return st;
}

/* ------------------------------------------------------------- engine */
static int task_kernel(const ahd_task_t *t)
{
    return t->kmsg ? tgt_kernel_msg_index(t->kmsg, t->klen) : -1;
}

/* x->mtx held: how long a task should take (its kernel's last run here),
 * or D_MAX_AGE_NS when it never ran here. */
static uint64_t task_expect_ns(const ahd_exec_t *x, const ahd_task_t *t)
{
    int k = task_kernel(t);
    return x->kstat && k >= 0 && x->kstat[k].last_ns ? x->kstat[k].last_ns
                                                     : dq_max_age(x);
}

/* x->mtx held: whether a task may run on the gate thread (fn_arrive,
 * gate_work).  Where the gate runs the ready queue (gate_exec) a kernel
 * of up to GATE_BAN_NS may run there (GATE_LONG_FRAC): the rank has one
 * kernel slot, so nothing else could run meanwhile anyway. */
static bool gate_may_run(const ahd_exec_t *x, const ahd_task_t *t)
{
    int k = task_kernel(t);
    if (!x->kstat || k < 0)
        return false;
    const kstat_t *ks = &x->kstat[k];
    if (ks->gate_banned || ks->runs < GATE_MIN_RUNS)
        return false;
    if (atomic_load_explicit(&x->gate_exec, memory_order_relaxed))
        return ks->long_runs * GATE_LONG_FRAC < ks->runs;
    return ks->max_ns < (uint64_t)ompc_config_get()->gate_run_us * 1000u;
}

/* x->mtx held: move the completions waiting into out (D_RELAXED_MAX of
 * them); returns how many. */
static size_t dq_take(ahd_exec_t *x, tgt_wire_done_t *out)
{
    size_t n = x->dn;
    memcpy(out, x->dq, n * sizeof(*out));
    x->dn = 0;
    x->dq_gate = false;
    return n;
}

static void dq_send(const tgt_wire_done_t *m, size_t n)
{
    if (n)
        send_post(0, tgt_rt->fn_ahead_done, m, n * sizeof(*m), "kernel completions");
}

/* x->mtx held: send the waiting completions now rather than with the next
 * ones?  Yes when they are many or old, when nothing more launched here is
 * running, ready or waiting for inputs, or when the next task would make
 * them old before it is done.  (A task running elsewhere, on the gate or
 * another kernel thread, sends them with its own when it is done.) */
static bool dq_due(const ahd_exec_t *x, uint64_t now)
{
    if (!x->dn)
        return false;
    if (x->dn >= dq_max(x) || now - x->dt0 >= dq_max_age(x))
        return true;
    if (!x->rq_head)
        return x->nwaiting == 0 && atomic_load(&x->running) == 0;
    return now - x->dt0 + task_expect_ns(x, x->rq_head) >= dq_max_age(x);
}

/* on_gate: called on the gate thread, which does not wait on x->cv (where
 * held completions are sent once due), so they are sent now unless the
 * gate runs the ready queue; and a kernel that ran long there may not run
 * there again (gate_cpu_ns: the run's CPU time where the gate runs the
 * ready queue, else its wall time ns is judged). */
static void task_done(ahd_exec_t *x, ahd_task_t *t, ompc_status_t st, uint64_t ns,
                      bool on_gate, uint64_t gate_cpu_ns)
{
    bool banned_now = false;
    ahd_wait_t *served = NULL;
    tgt_wire_done_t out[D_RELAXED_MAX];
    size_t nout = 0;
    uint64_t now = ompc_now_ns();
    pthread_mutex_lock(&x->mtx);
    done_add(x, t->seq);
    uint64_t head = 0;
    ompc_u64map_remove(&x->waits, t->seq, &head);
    for (ahd_wait_t *w = (ahd_wait_t *)(uintptr_t)head, *wn; w; w = wn) {
        wn = w->next;
        if (w->task) {
            if (--w->task->missing == 0) {
                task_unlink(x, w->task);
                make_ready(x, w->task);
            }
            free(w);
        } else {
            w->next = served;
            served = w;
        }
    }
    int k = task_kernel(t);
    uint64_t runs = 0;
    if (x->kstat && k >= 0 && st == OMPC_OK) {
        kstat_t *ks = &x->kstat[k];
        ks->last_ns = ns ? ns : 1;
        runs = ++ks->runs;
        if (ns > ks->max_ns)
            ks->max_ns = ns;
        if (ns > GATE_BAN_NS)
            ks->long_runs++;
        uint64_t judged = atomic_load_explicit(&x->gate_exec, memory_order_relaxed)
                              ? gate_cpu_ns
                              : ns;
        if (on_gate && judged > GATE_BAN_NS && !ks->gate_banned)
            banned_now = ks->gate_banned = true;
    }
    if (x->dn == D_RELAXED_MAX)
        nout = dq_take(x, out);
    if (!x->dn)
        x->dt0 = now;
    x->dq[x->dn++] = (tgt_wire_done_t){.seq = t->seq,
                                       .kernel_ns = ns,
                                       .status = st,
                                       .hop_raw = t->hop_raw,
                                       .hop_rank = t->hop_rank};
    /* A kernel's first run (HEFT waits for its cost) and a failure (the
     * head ends the job naming it) go at once.  Where the gate runs the
     * ready queue it sends them when due (gate_work), and naps no longer
     * than the oldest one's age limit (ev_gate_work_by): waking a kernel
     * thread to keep that time cost two wake-ups per completion message
     * (docs/performance.md, "system calls per task").  Those a kernel
     * thread holds, it sends itself when due (engine_main). */
    bool gate_exec = atomic_load_explicit(&x->gate_exec, memory_order_relaxed);
    if (!nout &&
        ((on_gate && !gate_exec) || runs == 1 || st != OMPC_OK || dq_due(x, now)))
        nout = dq_take(x, out);
    else if (!nout && on_gate && x->dn == 1) {
        x->dq_gate = true;
        ev_gate_work_by(tgt_rt->ev, x->dt0 + dq_max_age(x));
    }
    pthread_mutex_unlock(&x->mtx);
    if (banned_now)
        ompc_info("rank %d: a kernel short in %llu runs took %.3f ms on the gate "
                  "thread; it runs on kernel threads from now on",
                  tgt_rt->rank, (unsigned long long)runs - 1,
                  (double)(gate_cpu_ns ? gate_cpu_ns : ns) * 1e-6);
    while (served) {
        ahd_wait_t *w = served;
        served = w->next;
        serve(w);
    }
    dq_send(out, nout);
    free(t->kmsg);
    free(t);
}

/* Run a ready task counted in x->running (taken under x->mtx by the
 * caller, so that no other thread starts one past the slots meanwhile). */
static void run_task(ahd_exec_t *x, ahd_task_t *t, bool on_gate)
{
    uint64_t ns = 0, cpu_ns = 0;
    /* A run on the gate, where it runs the ready queue, is judged by its
     * CPU time (task_done).  A thread's CPU clock is a system call (2 us
     * on a VM, docs/performance.md, "system calls per task"): OMPC_STATS
     * reads it around the kernel anyway (tgt_kernel_cpu_ns); else it is
     * read here before, and after only when the wall time passes
     * GATE_BAN_NS, since the CPU time cannot exceed the wall time. */
    bool cpu = on_gate && atomic_load_explicit(&x->gate_exec, memory_order_relaxed);
    bool own_clock = cpu && !tgt_rt->stats;
    struct timespec c0 = {0}, c1 = {0};
    if (on_gate)
        atomic_fetch_add_explicit(&x->gate_runs, 1, memory_order_relaxed);
    if (own_clock)
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    /* A kernel on the gate may take a page fault, whose page the service
     * thread fetches with messages the gate would move: while it runs,
     * threads waiting on events move them themselves (ev_gate_hold), the
     * service thread and this thread's own write-back included.  The
     * alternative, keeping every kernel off the gate while a fault is
     * possible, would keep all of them off it (any unnamed device page
     * may fault), and lose the gate's CPU gain for programs that never
     * fault; the hold costs them two atomic stores per run. */
    if (on_gate)
        ev_gate_hold(tgt_rt->ev, true);
    dm_exec_task_commits(t->seq);
    patches_apply(x, t->seq);
    tgt_kernel_seq = t->seq;
    ompc_status_t st = tgt_kernel_run(t->kmsg, t->klen, &ns, NULL);
    tgt_kernel_seq = 0;
    if (on_gate)
        ev_gate_hold(tgt_rt->ev, false);
    if (cpu && tgt_kernel_cpu_ns != UINT64_MAX)
        cpu_ns = tgt_kernel_cpu_ns;
    else if (own_clock && ns > GATE_BAN_NS &&
             clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1) == 0)
        cpu_ns = (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000LL +
                            (c1.tv_nsec - c0.tv_nsec));
    else if (cpu)
        cpu_ns = ns;
    if (tgt_kernel_faulted) {
        /* Served, but slowly: while a kernel on the gate waits for a page
         * this rank receives only what its waiting threads poll for.  A
         * kernel seen faulting stays off the gate. */
        if (on_gate && tgt_rt->info)
            fprintf(stderr,
                    "[ompc info] r%d task %llu faulted on the gate thread: its pages "
                    "came all the same; its kernel runs on kernel threads from now "
                    "on\n",
                    tgt_rt->rank, (unsigned long long)t->seq);
        int k = task_kernel(t);
        pthread_mutex_lock(&x->mtx);
        if (x->kstat && k >= 0)
            x->kstat[k].gate_banned = true;
        pthread_mutex_unlock(&x->mtx);
    }
    atomic_fetch_sub(&x->running, 1);
    task_done(x, t, st, ns, on_gate, cpu_ns);
}

/* The gate's own work (ev_set_gate_work), where it runs the ready queue
 * (gate_exec): held completions that are due, then one ready task that
 * may run there while no kernel runs.  On a crowded node with one kernel
 * slot per worker, a task whose last input arrives would otherwise cost
 * two wake-ups, the gate's for the message and a kernel thread's for the
 * task (tens of microseconds of CPU each on a virtual CPU); now it costs
 * the gate's alone, and so does a local successor the gate makes ready
 * (docs/performance.md, "the gate runs the ready queue"). */
static bool gate_work(void *arg)
{
    ahd_exec_t *x = arg;
    tl_on_gate = true;
    if (atomic_load_explicit(&x->nheld, memory_order_relaxed) && held_land(x))
        return true;
    ahd_task_t *next = atomic_load_explicit(&x->gate_next, memory_order_relaxed)
                           ? atomic_exchange(&x->gate_next, NULL)
                           : NULL;
    if (next) { /* counted in x->running by fn_arrive */
        if (tgt_rt->info)
            fprintf(stderr,
                    "[ompc info] r%d runs task %llu on its gate: its last input "
                    "arrived, it is short and nothing else runs here\n",
                    tgt_rt->rank, (unsigned long long)next->seq);
        run_task(x, next, true);
        return true;
    }
    if (!atomic_load_explicit(&x->gate_exec, memory_order_relaxed))
        return false;
    tgt_wire_done_t out[D_RELAXED_MAX];
    size_t nout = 0;
    ahd_task_t *t = NULL;
    pthread_mutex_lock(&x->mtx);
    if (!x->stop) {
        if (dq_due(x, ompc_now_ns()))
            nout = dq_take(x, out);
        else if (x->dq_gate)
            ev_gate_work_by(tgt_rt->ev, x->dt0 + dq_max_age(x)); /* may have shrunk */
        /* A task queued here woke no kernel thread (make_ready); one the
         * gate does not run after all goes to a kernel thread: its kernel
         * ran long since it was queued, or a transfer of this rank is in
         * flight, which the gate keeps moving. */
        bool idle = x->rq_head && atomic_load(&x->running) == 0;
        if (idle && (!gate_may_run(x, x->rq_head) || ev_chunks_in_flight(tgt_rt->ev))) {
            pthread_cond_signal(&x->cv);
        } else if (idle) {
            t = x->rq_head;
            x->rq_head = t->rnext;
            if (!x->rq_head)
                x->rq_tail = NULL;
            atomic_fetch_sub(&x->nready, 1);
            atomic_fetch_add(&x->running, 1);
        }
    }
    pthread_mutex_unlock(&x->mtx);
    dq_send(out, nout);
    if (t) {
        if (tgt_rt->info)
            fprintf(stderr,
                    "[ompc info] r%d runs task %llu on its gate: it is ready, its "
                    "kernel is mostly short and nothing else runs here\n",
                    tgt_rt->rank, (unsigned long long)t->seq);
        run_task(x, t, true);
    }
    return t || nout;
}

static void *engine_main(void *arg)
{
    ahd_thread_t *self = arg;
    ahd_exec_t *x = self->x;
    char name[32];
    snprintf(name, sizeof(name), "kernels %d", self->i);
    ompc_log_set_thread_name(name);
    ompc_trace_thread_name(name);
    ompc_cpu_thread_begin(OMPC_CPU_KERNELS);
    uint64_t spin_ns = ev_spin_us(tgt_rt->ev) * 1000u;
    uint64_t hot_until = 0;
    tgt_wire_done_t out[D_RELAXED_MAX];
    pthread_mutex_lock(&x->mtx);
    for (;;) {
        ahd_task_t *t = x->rq_head;
        if (dq_due(x, ompc_now_ns())) {
            /* Completions held go before a task that would make them
             * old, or when nothing more is launched here. */
            size_t nout = dq_take(x, out);
            pthread_mutex_unlock(&x->mtx);
            dq_send(out, nout);
            pthread_mutex_lock(&x->mtx);
            continue;
        }
        if (t) {
            x->rq_head = t->rnext;
            if (!x->rq_head)
                x->rq_tail = NULL;
            else
                pthread_cond_signal(&x->cv); /* more ready: wake a peer thread */
            atomic_fetch_sub(&x->nready, 1);
            atomic_fetch_add(&x->running, 1);
            pthread_mutex_unlock(&x->mtx);
            run_task(x, t, false);
            hot_until = ompc_now_ns() + spin_ns;
            pthread_mutex_lock(&x->mtx);
        } else if (x->stop) {
            break;
        } else if (ompc_now_ns() < hot_until &&
                   atomic_compare_exchange_strong(&x->hot, &(int){0}, 1)) {
            /* A finished kernel's successor often arrives within
             * microseconds: one thread keeps looking for a while.  (Making
             * it the rank's progress engine instead, so that the thread
             * that receives a task's last input runs it, measured slower
             * on 2 cores: a progress pass costs far more than a yield.) */
            pthread_mutex_unlock(&x->mtx);
            while (!atomic_load(&x->nready) && ompc_now_ns() < hot_until)
                sched_yield();
            atomic_store(&x->hot, 0);
            hot_until = 0;
            pthread_mutex_lock(&x->mtx);
        } else if (x->dn && !x->dq_gate) {
            /* Completions held while inputs are awaited: they go when
             * due, or when their age is up (unless the gate keeps that
             * time, dq_gate). */
            hot_until = 0;
            uint64_t due = x->dt0 + dq_max_age(x);
            struct timespec ts = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
            pthread_cond_clockwait(&x->cv, &x->mtx, CLOCK_MONOTONIC, &ts);
        } else {
            hot_until = 0;
            pthread_cond_wait(&x->cv, &x->mtx);
        }
    }
    pthread_mutex_unlock(&x->mtx);
    ompc_cpu_thread_end();
    return NULL;
}

void tgt_ahead_start(void)
{
    ahd_exec_t *x = &ahd_exec;
    int n = tgt_rt->kernel_slots;
    if (n < 1)
        n = 1;
    x->thr = calloc((size_t)n, sizeof(*x->thr));
    x->kstat = calloc(tgt_rt->nkernels ? (size_t)tgt_rt->nkernels : 1, sizeof(kstat_t));
    if (!x->thr || !x->kstat)
        ompc_fatal("out of memory starting kernel threads");
    for (int i = 0; i < n; i++) {
        x->thr[i] = (ahd_thread_t){.x = x, .i = i};
        int rc = pthread_create(&x->thr[i].th, NULL, engine_main, &x->thr[i]);
        if (rc != 0)
            ompc_fatal("cannot start a kernel thread: %s", strerror(rc));
        x->nthr++;
    }
    /* One kernel slot and no polling (a crowded node): the gate runs short
     * ready tasks itself (gate_work).  With more slots a kernel thread may
     * be free while the gate runs one, and a polling rank's kernel thread
     * is awake anyway. */
    bool gate_exec = n == 1 && ev_spin_us(tgt_rt->ev) == 0 &&
                     ompc_config_get()->gate_run_us > 0;
    atomic_store(&x->gate_exec, gate_exec);
    if (gate_exec)
        ompc_info("rank %d: one kernel slot on a crowded node: the gate thread runs "
                  "ready kernels that mostly take under %.0f ms itself",
                  tgt_rt->rank, GATE_BAN_NS * 1e-6);
    ev_set_gate_work(tgt_rt->ev, gate_work, x);
}

void tgt_ahead_stop(void)
{
    ahd_exec_t *x = &ahd_exec;
    ev_set_gate_work(tgt_rt->ev, NULL, NULL);
    pthread_mutex_lock(&x->mtx);
    x->stop = true;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mtx);
    for (int i = 0; i < x->nthr; i++)
        pthread_join(x->thr[i].th, NULL);
    free(x->thr);
    x->thr = NULL;
    x->nthr = 0;
    uint64_t nw = atomic_load(&x->watches), nm = atomic_load(&x->watch_msgs);
    if (ompc_config_get()->stats && nw)
        fprintf(stderr,
                "[ompc stats] rank %d: %llu data requests to other workers "
                "in %llu messages\n",
                tgt_rt->rank, (unsigned long long)nw, (unsigned long long)nm);
    uint64_t ng = atomic_load(&x->gate_runs);
    if (ompc_config_get()->stats && ng)
        fprintf(stderr, "[ompc stats] rank %d: %llu kernels ran on the gate thread\n",
                tgt_rt->rank, (unsigned long long)ng);
    size_t pos = 0;
    uint64_t v;
    while (ompc_u64map_next(&x->waits, &pos, NULL, &v)) {
        for (ahd_wait_t *w = (ahd_wait_t *)(uintptr_t)v, *wn; w; w = wn) {
            wn = w->next;
            free(w);
        }
    }
    pos = 0;
    while (ompc_u64map_next(&x->tasks, &pos, NULL, &v)) {
        ahd_task_t *t = (ahd_task_t *)(uintptr_t)v;
        free(t->kmsg);
        free(t);
    }
    pos = 0;
    while (ompc_u64map_next(&x->patches, &pos, NULL, &v)) {
        for (ahd_patch_t *p = (ahd_patch_t *)(uintptr_t)v, *pn; p; p = pn) {
            pn = p->next;
            free(p);
        }
    }
    ompc_u64map_fini(&x->patches);
    for (ahd_held_t *k = x->held, *kn; k; k = kn) {
        kn = k->next;
        free(k);
    }
    x->held = NULL;
    ompc_u64map_fini(&x->waits);
    ompc_u64map_fini(&x->tasks);
    ompc_u64map_fini(&x->done);
    x->done_prune_at = 0;
    free(x->kstat);
    x->kstat = NULL;
}
