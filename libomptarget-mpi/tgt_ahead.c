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

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Batch: {count, mode}, then per launch {words} and the launch; mode:
 * the head's generation << 1 | whether it wants completions promptly.
 * Launch: {seq, lwm, ncommit, nafter, npull, klen}, then ncommit {address,
 * span}, nafter {seq}, npull {after, source address, address here, size,
 * source rank} (declare target variables live at different addresses on
 * different ranks), and the
 * kernel's launch message (tgt_kernel_run) padded to 8 bytes.  lwm: every
 * task up to it is done everywhere (the head heard so). */
#define L_HDR 6
/* Watch: {after, address, consumer's address, size, consumer seq,
 * consumer rank}; a message carries one launch batch's watches of one
 * peer. */
#define W_LEN 6
#define P_LEN 5
/* Arrive: {consumer seq, address, size, bytes follow (0/1), time served
 * (sender's clock, ns; 0: not timed), sender rank}, bytes. */
#define A_HDR 6
/* Data up to this size travels inside the arrive message. */
#define A_INLINE_MAX (32 * 1024)
/* Done: {seq, kernel ns, status, hop, hop rank} per task, several tasks per
 * message.  Completions wait to go together while more work launched here
 * is ready or waits for its inputs; with nothing more launched here they
 * go at once (the head may be waiting for them).  Each message costs the
 * head a wake-up of its gate and of a dispatch thread, a large share of
 * its CPU for short tasks (docs/performance.md, "launch, completion and
 * request batching").  How long they may wait depends on the head: while it may wait for one
 * (a thread waits for a task, or a task with work on the head waits for
 * its predecessors) at most D_MAX_AGE_NS and D_MAX of them; while nothing
 * there waits, D_RELAXED_AGE_NS and D_RELAXED_MAX.  Each launch batch says
 * which, and the head posts a change to "waiting" at once (fn_prompt).
 * A kernel's first completion here goes at once: HEFT holds tasks back
 * until it knows their kernel's cost. */
#define D_LEN TGT_DONE_WORDS
#define D_MAX 32
#define D_RELAXED_MAX 256
#define D_MAX_AGE_NS 500000u
#define D_RELAXED_AGE_NS 5000000u

typedef struct aw_task {
    uint64_t seq;
    int missing;             /* local tasks and arrivals still awaited */
    /* The slowest timed arrival: now minus the sender's serve time (two
     * clocks; the head corrects by their offsets) and who sent it. */
    uint64_t hop_raw;
    int hop_rank;
    char *kmsg;
    size_t klen;
    struct aw_task *rnext;   /* ready queue */
} aw_task_t;

/* Something waiting for a task of this executor to be done: a local task,
 * or a peer's watch (task NULL). */
typedef struct aw_wait {
    uint64_t seq;
    aw_task_t *task;
    uint64_t addr, daddr, size, cseq;
    int crank;
    struct aw_wait *next;
} aw_wait_t;

/* Per kernel, its runs here: the last one's time (0: none) tells how long
 * the next task should take (dq_due); runs and the longest decide whether
 * a task may run on the gate thread (fn_arrive): only a kernel that was
 * short every time, over enough runs, does, and one that ever ran long
 * there never does again. */
typedef struct kstat {
    uint64_t last_ns;
    uint64_t runs;
    uint64_t max_ns;
    bool gate_banned;
} kstat_t;
#define GATE_MIN_RUNS 4
#define GATE_BAN_NS 1000000u

static struct {
    pthread_mutex_t mtx;
    pthread_cond_t cv;
    ompc_u64map_t tasks;     /* seq -> aw_task_t *, until it runs */
    ompc_u64map_t waits;     /* seq -> aw_wait_t list (by next) waiting for it */
    ompc_u64map_t done;      /* finished tasks > lwm (keys only) */
    size_t done_prune_at;    /* drop what lwm covers at this many keys */
    uint64_t lwm;
    aw_task_t *rq_head, *rq_tail;
    bool stop;
    int nthr;
    pthread_t *thr;
    _Atomic int hot;         /* an engine thread polls the ready queue */
    _Atomic int nready;
    _Atomic int running;     /* kernels running now */
    size_t nwaiting;         /* launched tasks waiting for inputs (A.tasks) */
    uint64_t dq[D_RELAXED_MAX * D_LEN]; /* completions not sent yet */
    size_t dn;
    uint64_t dt0;            /* when the oldest of them was done */
    kstat_t *kstat;          /* per kernel */
    bool prompt;             /* the head may wait for a completion */
    uint64_t gen;            /* the head's generation prompt came with */
    _Atomic uint64_t watches, watch_msgs; /* data requests sent, messages */
} A = {.mtx = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
       .prompt = true};

/* ----------------------------------------------------------- done set */
static bool done_has(uint64_t seq)
{
    return seq <= A.lwm || ompc_u64map_get(&A.done, seq, NULL);
}

static bool done_covered(uint64_t seq, uint64_t val, void *arg)
{
    (void)val;
    return seq <= *(const uint64_t *)arg;
}

static void done_add(uint64_t seq)
{
    if (seq <= A.lwm)
        return;
    if (ompc_u64map_size(&A.done) >= A.done_prune_at) {
        /* Drop what the low-water mark covers once the set has doubled
         * since the last time: amortized O(1) per task. */
        ompc_u64map_remove_if(&A.done, done_covered, &A.lwm);
        A.done_prune_at = 2 * ompc_u64map_size(&A.done) + 32;
    }
    if (ompc_u64map_put(&A.done, seq, 0) != OMPC_OK)
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
    size_t len = A_HDR * 8 + (bytes ? size : 0);
    uint64_t *m = malloc(len);
    if (!m)
        ompc_fatal("out of memory forwarding data");
    m[0] = cseq;
    m[1] = daddr;
    m[2] = size;
    m[3] = bytes;
    m[4] = served_ns;
    m[5] = (uint64_t)tgt_rt->rank;
    if (bytes)
        memcpy(m + A_HDR, (const void *)(uintptr_t)addr, size);
    send_post(crank, tgt_rt->fn_ahead_arrive, m, len, "forwarded data");
    free(m);
}

static void on_pushed(void *arg, ompc_status_t st)
{
    aw_wait_t *w = arg;
    if (st != OMPC_OK)
        ompc_fatal("rank %d: forwarding %llu bytes to rank %d failed: %s", tgt_rt->rank,
                   (unsigned long long)w->size, w->crank, ompc_status_str(st));
    /* Not timed: the hop would include moving the bytes. */
    send_arrive(w->crank, w->cseq, w->addr, w->daddr, w->size, false, 0);
    free(w);
}

/* Answer a watch whose task is done (no lock held). */
static void serve(aw_wait_t *w)
{
    /* The pages exist once the task that wrote them is done (a watch may
     * arrive before that task's launch, so this is checked only now). */
    if (w->size && !ev_mem_contains(tgt_rt->ev, (const void *)(uintptr_t)w->addr, w->size))
        ompc_fatal("rank %d: asked to forward %llu bytes at %#llx to rank %d, "
                   "which this rank does not hold", tgt_rt->rank,
                   (unsigned long long)w->size, (unsigned long long)w->addr, w->crank);
    if (w->size == 0 || w->size <= A_INLINE_MAX) {
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
        ompc_fatal("rank %d: cannot forward data to rank %d: %s", tgt_rt->rank,
                   w->crank, ompc_status_str(st));
    ev_handle_on_done(h, on_pushed, w);
    ev_handle_release(h);
}

/* ------------------------------------------------------------ tables */
static void make_ready(aw_task_t *t)
{
    t->rnext = NULL;
    if (A.rq_tail)
        A.rq_tail->rnext = t;
    else
        A.rq_head = t;
    A.rq_tail = t;
    atomic_fetch_add(&A.nready, 1);
    if (!atomic_load(&A.hot))
        pthread_cond_signal(&A.cv);
}

static aw_task_t *task_find(uint64_t seq)
{
    uint64_t v;
    return ompc_u64map_get(&A.tasks, seq, &v) ? (aw_task_t *)(uintptr_t)v : NULL;
}

static void task_link(aw_task_t *t)
{
    OMPC_ASSERT(!task_find(t->seq));
    if (ompc_u64map_put(&A.tasks, t->seq, (uint64_t)(uintptr_t)t) != OMPC_OK)
        ompc_fatal("out of memory launching a kernel");
    A.nwaiting++;
}

static void task_unlink(aw_task_t *t)
{
    ompc_u64map_remove(&A.tasks, t->seq, NULL);
    A.nwaiting--;
}

static void wait_add(aw_wait_t *w)
{
    uint64_t head = 0;
    ompc_u64map_get(&A.waits, w->seq, &head);
    w->next = (aw_wait_t *)(uintptr_t)head;
    if (ompc_u64map_put(&A.waits, w->seq, (uint64_t)(uintptr_t)w) != OMPC_OK)
        ompc_fatal("out of memory waiting for a task");
}

/* ----------------------------------------------------------- handlers */
static void task_done(aw_task_t *t, ompc_status_t st, uint64_t ns, bool on_gate);
static void run_task(aw_task_t *t, bool on_gate);
static bool gate_may_run(const aw_task_t *t);
static int task_kernel(const aw_task_t *t);

/* No kernel running or ready here: a message arriving now is waited for. */
static bool idle_now(void)
{
    return atomic_load(&A.running) == 0 && atomic_load(&A.nready) == 0;
}

/* Whether words m[0..words) are one well-formed launch. */
static bool launch_valid(const uint64_t *m, size_t words)
{
    if (words < L_HDR)
        return false;
    uint64_t nc = m[2], na = m[3], np = m[4], klen = m[5];
    return nc <= words && na <= words && np <= words && klen <= words * 8 &&
           L_HDR + 2 * nc + na + P_LEN * np + (klen + 7) / 8 == words;
}

/* The data requests of one launch batch, one message per peer: a batch
 * of a stencil's tasks asks the same neighbour again and again, and each
 * message costs that neighbour's gate a wake-up. */
typedef struct watch_out {
    int rank;
    size_t n, cap;       /* in watches */
    uint64_t *w;
} watch_out_t;

typedef struct watch_batch {
    watch_out_t *peer;
    size_t npeer, cap;
} watch_batch_t;

static void watch_add(watch_batch_t *b, int rank, const uint64_t *wm)
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
    o->w = tgt_grow(o->w, &o->cap, o->n, W_LEN * sizeof(*o->w), "launching a kernel");
    memcpy(o->w + o->n * W_LEN, wm, W_LEN * sizeof(*wm));
    o->n++;
}

/* A batch's pulls (P_LEN words each) fit in one message; its watches
 * (W_LEN words each) may not: at most this many go in one. */
#define W_PER_MSG (EV_EXEC_MAX_ARGS / (W_LEN * 8))

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

static void watch_send(watch_batch_t *b)
{
    size_t per = watches_per_msg();
    for (size_t i = 0; i < b->npeer; i++) {
        watch_out_t *o = &b->peer[i];
        for (size_t at = 0; at < o->n; at += per) {
            size_t k = o->n - at < per ? o->n - at : per;
            send_post(o->rank, tgt_rt->fn_ahead_watch, o->w + at * W_LEN,
                      k * W_LEN * 8, k == 1 ? "a data request" : "data requests");
            atomic_fetch_add_explicit(&A.watch_msgs, 1, memory_order_relaxed);
        }
        atomic_fetch_add_explicit(&A.watches, o->n, memory_order_relaxed);
        free(o->w);
    }
    free(b->peer);
}

/* One launch of a batch.  A launch this rank cannot take is reported as
 * its task's failure, so that the head names the kernel.  Its data
 * requests go to `wb`, sent once the whole batch is in the tables (an
 * answer may come back at once and must find its task). */
static void launch_one(ev_exec_info_t *info, const uint64_t *m, watch_batch_t *wb)
{
    uint64_t seq = m[0], lwm = m[1], nc = m[2], na = m[3], np = m[4], klen = m[5];
    const uint64_t *c = m + L_HDR, *a = c + 2 * nc, *p = a + na;
    aw_task_t *t = calloc(1, sizeof(*t));
    char *k = malloc(klen ? klen : 1);
    if (!t || !k) {
        free(t);
        free(k);
        ompc_fatal("out of memory launching a kernel");
    }
    t->seq = seq;
    t->hop_rank = -1;
    for (uint64_t i = 0; i < nc; i++) {
        ompc_status_t st = dm_exec_commit(info->ctx, c[2 * i], c[2 * i + 1]);
        if (st != OMPC_OK) {
            free(k);
            task_done(t, st, 0, true); /* fn_launch runs on the gate */
            return;
        }
    }
    memcpy(k, p + P_LEN * np, klen);
    t->kmsg = k;
    t->klen = klen;
    t->missing = (int)np + 1; /* +1: until this handler is done with it */
    pthread_mutex_lock(&A.mtx);
    if (lwm > A.lwm)
        A.lwm = lwm;
    task_link(t);
    for (uint64_t i = 0; i < na; i++) {
        if (done_has(a[i]))
            continue;
        aw_wait_t *w = calloc(1, sizeof(*w));
        if (!w)
            ompc_fatal("out of memory launching a kernel");
        w->seq = a[i];
        w->task = t;
        t->missing++;
        wait_add(w);
    }
    if (--t->missing == 0) {
        task_unlink(t);
        make_ready(t);
    }
    pthread_mutex_unlock(&A.mtx);
    /* Ask the peers: a pull's first four words, then who asks. */
    for (uint64_t i = 0; i < np; i++) {
        const uint64_t *q = p + P_LEN * i;
        uint64_t wm[W_LEN];
        memcpy(wm, q, 4 * 8);
        wm[4] = seq;
        wm[5] = (uint64_t)tgt_rt->rank;
        watch_add(wb, (int)q[4], wm);
        /* Owed until it arrives (fn_arrive): the liveness check watches
         * the peer meanwhile. */
        ev_peer_expect(info->ctx, (int)q[4], 1);
    }
}

static void dq_send(const uint64_t *m, size_t words);
static size_t dq_take(uint64_t *out);

/* A.mtx held: how many completions may wait, and how long. */
static size_t dq_max(void) { return A.prompt ? D_MAX : D_RELAXED_MAX; }
static uint64_t dq_max_age(void) { return A.prompt ? D_MAX_AGE_NS : D_RELAXED_AGE_NS; }

/* The head's wish, from a batch or a post of generation gen: a message of
 * an older generation came late (another communicator) and is ignored.
 * Asked for promptness, completions waiting go now (the gate does not
 * wait on A.cv, where they would go when due). */
static void set_prompt(uint64_t gen, bool prompt, const char *how)
{
    uint64_t out[D_RELAXED_MAX * D_LEN];
    size_t nout = 0;
    pthread_mutex_lock(&A.mtx);
    if (gen >= A.gen) {
        A.gen = gen;
        if (prompt && !A.prompt && tgt_rt->info)
            fprintf(stderr, "[ompc info] r%d: the head may wait for a task "
                    "(%s): completions go promptly\n", tgt_rt->rank, how);
        A.prompt = prompt;
        if (prompt && A.dn)
            nout = dq_take(out);
    }
    pthread_mutex_unlock(&A.mtx);
    dq_send(out, nout);
}

static ompc_status_t fn_prompt(ev_exec_info_t *info)
{
    if (info->args_size != 8)
        return OMPC_ERR_INVALID;
    set_prompt(*(const uint64_t *)info->args, true, "it posted so");
    return OMPC_OK;
}

/* A batch: {count, mode}, then per launch {words} and the launch.  Checked
 * whole before any of it is taken, so a malformed batch is refused whole. */
static ompc_status_t fn_launch(ev_exec_info_t *info)
{
    uint64_t now = ompc_now_ns();
    /* The head learns the hop from when the batch got here (this rank's
     * clock), but only if this rank was idle: a busy one's gate waits for
     * a core behind the kernels (milliseconds on a crowded node), which
     * delays nothing that waits for it and would only teach HEFT to shun
     * transfers.  Asked before the batch makes its own tasks ready. */
    if (!idle_now())
        now = 0;
    const uint64_t *m = info->args;
    size_t words = info->args_size / 8;
    if (info->args_size % 8 || words < 2 || m[0] > words)
        return OMPC_ERR_INVALID;
    size_t at = 2;
    for (uint64_t i = 0; i < m[0]; i++) {
        if (at >= words || m[at] > words - at - 1 || !launch_valid(m + at + 1, m[at]))
            return OMPC_ERR_INVALID;
        at += 1 + m[at];
    }
    if (at != words)
        return OMPC_ERR_INVALID;
    set_prompt(m[1] >> 1, m[1] & 1, "its launch batch says so");
    at = 2;
    watch_batch_t wb = {0};
    for (uint64_t i = 0; i < m[0]; i++) {
        launch_one(info, m + at + 1, &wb);
        at += 1 + m[at];
    }
    watch_send(&wb);
    if (info->result_cap >= sizeof(now)) {
        memcpy(info->result, &now, sizeof(now));
        info->result_size = sizeof(now);
    }
    return OMPC_OK;
}

/* Data requests of one launch batch of a peer: W_LEN words each. */
static ompc_status_t fn_watch(ev_exec_info_t *info)
{
    if (info->args_size == 0 || info->args_size % (W_LEN * 8))
        return OMPC_ERR_INVALID;
    size_t n = info->args_size / (W_LEN * 8);
    const uint64_t *m = info->args;
    /* Watches whose task is done: served in order, unlocked. */
    aw_wait_t *ready = NULL, **tail = &ready;
    ompc_status_t st = OMPC_OK;
    pthread_mutex_lock(&A.mtx);
    for (size_t i = 0; i < n; i++, m += W_LEN) {
        aw_wait_t *w = calloc(1, sizeof(*w));
        if (!w) {
            st = OMPC_ERR_NOMEM;
            break;
        }
        *w = (aw_wait_t){.seq = m[0], .addr = m[1], .daddr = m[2], .size = m[3],
                         .cseq = m[4], .crank = (int)m[5]};
        if (done_has(w->seq)) {
            *tail = w;
            tail = &w->next;
        } else {
            wait_add(w);
        }
    }
    pthread_mutex_unlock(&A.mtx);
    while (ready) {
        aw_wait_t *w = ready;
        ready = w->next;
        serve(w);
    }
    return st;
}

static ompc_status_t fn_arrive(ev_exec_info_t *info)
{
    const uint64_t *m = info->args;
    if (info->args_size < A_HDR * 8 ||
        info->args_size != A_HDR * 8 + (m[3] ? m[2] : 0))
        return OMPC_ERR_INVALID;
    uint64_t now = ompc_now_ns();
    ev_peer_expect(info->ctx, info->origin, -1);
    if (m[3])
        memcpy((void *)(uintptr_t)m[1], m + A_HDR, m[2]);
    pthread_mutex_lock(&A.mtx);
    aw_task_t *t = task_find(m[0]);
    /* Timed only if this rank waits for nothing else (see fn_launch). */
    if (t && m[4] && (int)m[5] != tgt_rt->rank && idle_now() &&
        (t->hop_rank < 0 || now - m[4] > t->hop_raw)) {
        t->hop_raw = now - m[4];
        t->hop_rank = (int)m[5];
    }
    /* A short task whose last input this is runs here, on the gate, when
     * this rank has nothing else to run: handing it to a kernel thread
     * costs a wake-up, a large part of a worker-to-worker hop on a VM
     * (docs/performance.md, "short tasks on the gate thread").  The gate
     * must not stop receiving for long (transfers, pings): only a kernel
     * that was short every time, over a few runs, comes here, and one
     * that runs long here once never does again. */
    bool inline_run = false;
    if (t && --t->missing == 0) {
        task_unlink(t);
        if (gate_may_run(t) && !A.rq_head && atomic_load(&A.running) == 0) {
            atomic_fetch_add(&A.running, 1);
            inline_run = true;
        } else {
            make_ready(t);
        }
    }
    pthread_mutex_unlock(&A.mtx);
    if (inline_run) {
        if (tgt_rt->info)
            fprintf(stderr, "[ompc info] r%d runs task %llu on its gate: its last input "
                    "arrived, it is short and nothing else runs here\n", tgt_rt->rank,
                    (unsigned long long)t->seq);
        run_task(t, true);
        return OMPC_OK;
    }
    return t ? OMPC_OK : OMPC_ERR_INVALID;
}

static ompc_status_t fn_done(ev_exec_info_t *info)
{
    if (info->args_size == 0 || info->args_size % (D_LEN * 8))
        return OMPC_ERR_INVALID;
    tgt_graph_ahead_done(info->args, info->args_size / (D_LEN * 8), info->origin);
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
        return snprintf(buf, cap, "%d input(s) it forwards to kernels waiting "
                        "here%s", owed, rank == 0 ? ", and its next launch" : "");
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
    return st;
}

/* ------------------------------------------------------------- engine */
static int task_kernel(const aw_task_t *t)
{
    return t->kmsg ? tgt_kernel_msg_index(t->kmsg, t->klen) : -1;
}

/* A.mtx held: how long a task should take (its kernel's last run here),
 * or D_MAX_AGE_NS when it never ran here. */
static uint64_t task_expect_ns(const aw_task_t *t)
{
    int k = task_kernel(t);
    return A.kstat && k >= 0 && A.kstat[k].last_ns ? A.kstat[k].last_ns : dq_max_age();
}

/* A.mtx held: whether a task may run on the gate thread (fn_arrive). */
static bool gate_may_run(const aw_task_t *t)
{
    int k = task_kernel(t);
    return A.kstat && k >= 0 && !A.kstat[k].gate_banned &&
           A.kstat[k].runs >= GATE_MIN_RUNS &&
           A.kstat[k].max_ns < (uint64_t)ompc_config_get()->gate_run_us * 1000u;
}

/* A.mtx held: move the completions waiting into out (D_RELAXED_MAX * D_LEN words);
 * returns how many words. */
static size_t dq_take(uint64_t *out)
{
    size_t w = A.dn * D_LEN;
    memcpy(out, A.dq, w * 8);
    A.dn = 0;
    return w;
}

static void dq_send(const uint64_t *m, size_t words)
{
    if (words)
        send_post(0, tgt_rt->fn_ahead_done, m, words * 8, "kernel completions");
}

/* A.mtx held: send the waiting completions now rather than with the next
 * ones?  Yes when they are many or old, when nothing more launched here is
 * ready or waiting for inputs, or when the next task would make them old
 * before it is done. */
static bool dq_due(uint64_t now)
{
    if (!A.dn)
        return false;
    if (A.dn >= dq_max() || now - A.dt0 >= dq_max_age())
        return true;
    if (!A.rq_head)
        return A.nwaiting == 0;
    return now - A.dt0 + task_expect_ns(A.rq_head) >= dq_max_age();
}

/* on_gate: called on the gate thread, which does not wait on A.cv (where
 * held completions are sent once due), so they are sent now; and a kernel
 * that ran long there may not run there again. */
static void task_done(aw_task_t *t, ompc_status_t st, uint64_t ns, bool on_gate)
{
    bool banned_now = false;
    aw_wait_t *served = NULL;
    uint64_t out[D_RELAXED_MAX * D_LEN];
    size_t nout = 0;
    uint64_t now = ompc_now_ns();
    pthread_mutex_lock(&A.mtx);
    done_add(t->seq);
    uint64_t head = 0;
    ompc_u64map_remove(&A.waits, t->seq, &head);
    for (aw_wait_t *w = (aw_wait_t *)(uintptr_t)head, *wn; w; w = wn) {
        wn = w->next;
        if (w->task) {
            if (--w->task->missing == 0) {
                task_unlink(w->task);
                make_ready(w->task);
            }
            free(w);
        } else {
            w->next = served;
            served = w;
        }
    }
    int k = task_kernel(t);
    uint64_t runs = 0;
    if (A.kstat && k >= 0 && st == OMPC_OK) {
        kstat_t *ks = &A.kstat[k];
        ks->last_ns = ns ? ns : 1;
        runs = ++ks->runs;
        if (ns > ks->max_ns)
            ks->max_ns = ns;
        if (on_gate && ns > GATE_BAN_NS && !ks->gate_banned)
            banned_now = ks->gate_banned = true;
    }
    if (A.dn == D_RELAXED_MAX)
        nout = dq_take(out);
    if (!A.dn)
        A.dt0 = now;
    uint64_t *d = A.dq + A.dn++ * D_LEN;
    d[0] = t->seq;
    d[1] = ns;
    d[2] = (uint64_t)(int64_t)st;
    d[3] = t->hop_raw;
    d[4] = (uint64_t)(int64_t)t->hop_rank;
    /* A kernel's first run (HEFT waits for its cost) and a failure (the
     * head ends the job naming it) go at once. */
    if (!nout && (on_gate || runs == 1 || st != OMPC_OK || dq_due(now)))
        nout = dq_take(out);
    pthread_mutex_unlock(&A.mtx);
    if (banned_now)
        ompc_info("rank %d: a kernel short in %llu runs took %.3f ms on the gate "
                  "thread; it runs on kernel threads from now on", tgt_rt->rank,
                  (unsigned long long)runs - 1, (double)ns * 1e-6);
    while (served) {
        aw_wait_t *w = served;
        served = w->next;
        serve(w);
    }
    dq_send(out, nout);
    free(t->kmsg);
    free(t);
}

/* Run a ready task counted in A.running (taken under A.mtx by the
 * caller, so that no other thread starts one past the slots meanwhile). */
static void run_task(aw_task_t *t, bool on_gate)
{
    uint64_t ns = 0;
    ompc_status_t st = tgt_kernel_run(t->kmsg, t->klen, &ns, NULL, NULL);
    atomic_fetch_sub(&A.running, 1);
    task_done(t, st, ns, on_gate);
}

static void *engine_main(void *arg)
{
    char name[32];
    snprintf(name, sizeof(name), "kernels %d", (int)(intptr_t)arg);
    ompc_log_set_thread_name(name);
    ompc_trace_thread_name(name);
    uint64_t spin_ns = ev_spin_us(tgt_rt->ev) * 1000u;
    uint64_t hot_until = 0;
    uint64_t out[D_RELAXED_MAX * D_LEN];
    pthread_mutex_lock(&A.mtx);
    for (;;) {
        aw_task_t *t = A.rq_head;
        if (dq_due(ompc_now_ns())) {
            /* Completions held go before a task that would make them
             * old, or when nothing more is launched here. */
            size_t nout = dq_take(out);
            pthread_mutex_unlock(&A.mtx);
            dq_send(out, nout);
            pthread_mutex_lock(&A.mtx);
            continue;
        }
        if (t) {
            A.rq_head = t->rnext;
            if (!A.rq_head)
                A.rq_tail = NULL;
            else
                pthread_cond_signal(&A.cv); /* more ready: wake a peer thread */
            atomic_fetch_sub(&A.nready, 1);
            atomic_fetch_add(&A.running, 1);
            pthread_mutex_unlock(&A.mtx);
            run_task(t, false);
            hot_until = ompc_now_ns() + spin_ns;
            pthread_mutex_lock(&A.mtx);
        } else if (A.stop) {
            break;
        } else if (ompc_now_ns() < hot_until &&
                   atomic_compare_exchange_strong(&A.hot, &(int){0}, 1)) {
            /* A finished kernel's successor often arrives within
             * microseconds: one thread keeps looking for a while.  (Making
             * it the rank's progress engine instead, so that the thread
             * that receives a task's last input runs it, measured slower
             * on 2 cores: a progress pass costs far more than a yield.) */
            pthread_mutex_unlock(&A.mtx);
            while (!atomic_load(&A.nready) && ompc_now_ns() < hot_until)
                sched_yield();
            atomic_store(&A.hot, 0);
            hot_until = 0;
            pthread_mutex_lock(&A.mtx);
        } else if (A.dn) {
            /* Completions held while inputs are awaited: they go when
             * due, or when their age is up. */
            hot_until = 0;
            uint64_t due = A.dt0 + dq_max_age();
            struct timespec ts = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
            pthread_cond_clockwait(&A.cv, &A.mtx, CLOCK_MONOTONIC, &ts);
        } else {
            hot_until = 0;
            pthread_cond_wait(&A.cv, &A.mtx);
        }
    }
    pthread_mutex_unlock(&A.mtx);
    return NULL;
}

void tgt_ahead_start(void)
{
    int n = tgt_rt->kernel_slots;
    if (n < 1)
        n = 1;
    A.thr = calloc((size_t)n, sizeof(pthread_t));
    A.kstat = calloc(tgt_rt->nkernels ? (size_t)tgt_rt->nkernels : 1, sizeof(kstat_t));
    if (!A.thr || !A.kstat)
        ompc_fatal("out of memory starting kernel threads");
    for (int i = 0; i < n; i++) {
        int rc = pthread_create(&A.thr[i], NULL, engine_main, (void *)(intptr_t)i);
        if (rc != 0)
            ompc_fatal("cannot start a kernel thread: %s", strerror(rc));
        A.nthr++;
    }
}

void tgt_ahead_stop(void)
{
    pthread_mutex_lock(&A.mtx);
    A.stop = true;
    pthread_cond_broadcast(&A.cv);
    pthread_mutex_unlock(&A.mtx);
    for (int i = 0; i < A.nthr; i++)
        pthread_join(A.thr[i], NULL);
    free(A.thr);
    A.thr = NULL;
    A.nthr = 0;
    uint64_t nw = atomic_load(&A.watches), nm = atomic_load(&A.watch_msgs);
    if (ompc_config_get()->stats && nw)
        fprintf(stderr, "[ompc stats] rank %d: %llu data requests to other workers "
                "in %llu messages\n", tgt_rt->rank, (unsigned long long)nw,
                (unsigned long long)nm);
    size_t pos = 0;
    uint64_t v;
    while (ompc_u64map_next(&A.waits, &pos, NULL, &v)) {
        for (aw_wait_t *w = (aw_wait_t *)(uintptr_t)v, *wn; w; w = wn) {
            wn = w->next;
            free(w);
        }
    }
    pos = 0;
    while (ompc_u64map_next(&A.tasks, &pos, NULL, &v)) {
        aw_task_t *t = (aw_task_t *)(uintptr_t)v;
        free(t->kmsg);
        free(t);
    }
    ompc_u64map_fini(&A.waits);
    ompc_u64map_fini(&A.tasks);
    ompc_u64map_fini(&A.done);
    A.done_prune_at = 0;
    free(A.kstat);
    A.kstat = NULL;
}
