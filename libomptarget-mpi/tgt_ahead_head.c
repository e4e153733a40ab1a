/* Launch ahead, head side (tgt_ahead.c is the executors' side, tgt_wire.h
 * the messages between them): a kernel whose copies from the head all travel
 * inside its launch goes to its executor before its predecessors are
 * done, naming what it must wait for there and where each of its buffers'
 * data will come from (per-buffer plans, ahead_buf_t).  Launches are
 * planned per dispatching thread and sent in batches, one message per
 * executor; the executors report them done in batches too
 * (tgt_graph_ahead_done, on the gate thread). */
#define _GNU_SOURCE
#include "tgt_graph_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------- batched launches (state) */
/* A dispatching thread plans launches one node at a time but sends them
 * per executor: one message (and one reply) for everything it planned
 * while more nodes were ready.  Per launch, the message, its reply and the
 * progress passes they take cost the head more than the planning.  A
 * thread sends what it holds before anything that may block (a copy from
 * the head waits for commits other threads claimed), so a claim never
 * waits on the thread that holds it. */
#define LB_MAX_ITEMS 32
#define LB_MAX_BYTES (256 * 1024)

typedef struct lb_item {
    tgt_node_t *n;
    dm_buf_t **claimed;
    size_t nclaimed;
} lb_item_t;

/* The message of the batch being filled for one executor: each launch is
 * written into it once, as it is planned (its header goes in front when
 * the batch is sent, tgt_wire.h).  It was built in a block of its own per
 * launch, then copied into the batch: a malloc, a free and a copy per
 * task on the dispatching thread. */
typedef struct lb_open {
    int exec;
    unsigned char *buf;      /* NULL once sent (the batch owns it then) */
    size_t len, cap;
} lb_open_t;

static _Thread_local struct {
    lb_item_t v[LB_MAX_ITEMS];
    size_t n, bytes;
    lb_open_t open[LB_MAX_ITEMS]; /* one per executor with launches held */
    size_t nopen;
} LB;

/* ------------------------------------------ per-buffer plans, launches */
static ahead_buf_t *abuf_get(dm_buf_t *b, bool create)
{
    uintptr_t key = (uintptr_t)dm_buf_addr(b);
    ompc_tmap_node_t *t = graph_tmap_find(&tgt_g.abufs, key);
    if (t || !create)
        return t ? OMPC_TMAP_ENTRY(t, ahead_buf_t, node) : NULL;
    int P = dm_num_executors(tgt_rt->dm);
    ahead_buf_t *a = calloc(1, sizeof(*a) + (size_t)P * sizeof(uint64_t));
    if (!a)
        ompc_fatal("out of memory launching a kernel");
    a->node.key = key;
    a->wexec = -1;
    ompc_tmap_insert(&tgt_g.abufs, &a->node);
    return a;
}

static void abuf_use(tgt_node_t *n, ahead_buf_t *a)
{
    for (size_t i = 0; i < n->ahead.nabufs; i++)
        if (n->ahead.abufs[i] == a)
            return;
    n->ahead.abufs[n->ahead.nabufs++] = a;
    a->users++;
}

static bool in_list(dm_buf_t *const *v, size_t n, const dm_buf_t *b)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == b)
            return true;
    return false;
}

/* Buffers a launch lists on the stack (graph_ahead_launch); its commits,
 * afters and pulls too, so that a launch costs no allocation for them:
 * malloc and free were the head's largest cost per task after the lock
 * hand-offs. */
#define SCRATCH_BUFS 16

/* ------------------------------------------------- batched launches */
/* What a batch needs until its reply: the message and its nodes. */
typedef struct lb_sent {
    void *msg;
    int exec;
    uint64_t sent_ns;        /* head clock */
    tgt_wire_launch_reply_t reply; /* when the worker's gate took it */
    size_t n;
    tgt_node_t *nodes[];
} lb_sent_t;

/* A launched-ahead node is owed by its executor until it reports it done:
 * the event system's liveness check watches that rank meanwhile (nothing
 * else would: launches and completions are one-way). */
static void ahead_owed(const tgt_node_t *n, int delta)
{
    ev_peer_expect(tgt_rt->ev, dm_executor_rank(tgt_rt->dm, n->exec), delta);
}

/* The batch was delivered (or refused): its bytes are free. */
static void on_launch_done(void *arg, ompc_status_t st)
{
    lb_sent_t *s = arg;
    pthread_mutex_lock(&tgt_g.mtx);
    for (size_t i = 0; i < s->n; i++) {
        tgt_node_t *n = s->nodes[i];
        if (st != OMPC_OK && !n->ahead.kdone) {
            /* The executor refused it: no completion will come. */
            if (ompc_tmap_erase(&tgt_g.ahead_nodes, n->seq))
                ahead_owed(n, -1);
            n->kst = st;
            n->ahead.kdone = true;
            if (n->npred_left == 0)
                graph_push_finished(n);
        }
        graph_node_unref(n);
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    if (st == OMPC_OK && s->reply.arrived_ns) {
        /* A message's way to a busy worker's gate, from the first wave on
         * (forwarded inputs come later): what HEFT's next flush should
         * expect of a hop rather than the idle probe's microsecond. */
        int64_t hop = (int64_t)s->reply.arrived_ns - tgt_model_clock_offset(s->exec) -
                      (int64_t)s->sent_ns;
        if (hop > 0)
            tgt_model_learn_hop((double)hop * 1e-9, true);
    }
    free(s->msg);
    free(s);
}

/* Send the launches v[0..k) to executor e, one message (a launch batch,
 * tgt_wire.h). */
static lb_open_t *lb_open_find(int e)
{
    for (size_t i = 0; i < LB.nopen; i++)
        if (LB.open[i].exec == e)
            return &LB.open[i];
    return NULL;
}

/* A batch is posted one way (ev_post: no reply, and no wake-up of either
 * gate for one) unless a waiter needs its event (it carries commits this
 * thread claimed: transfers into those buffers wait for it) or it is this
 * thread's LB_REPLY_EVERY-th: that one's reply says when it reached its
 * executor, the hop HEFT learns (on_launch_done).  A reply per batch was
 * a second message per batch and a wake-up of the head's gate for it.
 * A batch its executor refuses ends the job there either way. */
#define LB_REPLY_EVERY 16
static _Thread_local unsigned lb_batches;

static void lb_send(int e, lb_item_t *v, size_t k)
{
    dm_ctx_t *dm = tgt_rt->dm;
    lb_open_t *o = lb_open_find(e);
    OMPC_ASSERT(o && o->buf);
    size_t len = o->len;
    void *m = o->buf;
    *o = LB.open[--LB.nopen];
    bool claims = false;
    for (size_t i = 0; i < k; i++)
        claims |= v[i].nclaimed > 0;
    bool reply = claims || lb_batches++ % LB_REPLY_EVERY == 0;
    lb_sent_t *s = NULL;
    if (reply) {
        s = malloc(sizeof(*s) + k * sizeof(tgt_node_t *));
        if (!s)
            ompc_fatal("out of memory launching %zu kernels", k);
        s->msg = m;
        s->exec = e;
        s->reply.arrived_ns = 0;
        s->n = k;
        for (size_t i = 0; i < k; i++)
            s->nodes[i] = v[i].n;
    }
    int rank = dm_executor_rank(dm, e);
    pthread_mutex_lock(&tgt_g.mtx);
    bool needed = tgt_g.need > 0;
    tgt_wire_batch_begin(m, k, tgt_g.need_gen, needed);
    if (tgt_g.relaxed_sent)
        tgt_g.relaxed_sent[rank] = !needed;
    pthread_mutex_unlock(&tgt_g.mtx);
    ev_handle_t *h = NULL;
    ompc_status_t st;
    if (reply) {
        s->sent_ns = ompc_now_ns();
        st = ev_execute(tgt_rt->ev, rank, tgt_rt->fn_ahead_launch, m, len, &s->reply,
                        sizeof(s->reply), &h);
    } else {
        st = ev_post(tgt_rt->ev, rank, tgt_rt->fn_ahead_launch, m, len);
        free(m); /* posted: copied */
    }
    for (size_t i = 0; i < k; i++) {
        if (v[i].nclaimed) /* no claim: nothing for a waiter to see */
            dm_commit_claimed(dm, e, v[i].claimed, v[i].nclaimed,
                              st == OMPC_OK ? h : NULL);
        free(v[i].claimed);
    }
    if (st != OMPC_OK)
        TGT_USER_ERROR(v[0].n->loc, "cannot launch kernel %s: %s", v[0].n->k->name,
                       ompc_status_str(st));
    /* A finish (which may free the buffers just claimed) waits for this. */
    pthread_mutex_lock(&tgt_g.mtx);
    tgt_g.stats.launch_msgs++;
    tgt_g.stats.launches += k;
    for (size_t i = 0; i < k; i++) {
        tgt_node_t *n = v[i].n;
        n->ahead.sent = true;
        if (n->ahead.kdone && n->npred_left == 0)
            graph_push_finished(n);
        if (!reply)
            graph_node_unref(n); /* graph_ahead_launch took it for the reply */
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    if (reply) {
        ev_handle_on_done(h, on_launch_done, s);
        ev_handle_release(h);
    }
}

/* Send every launch this thread holds, one message per executor. */
void graph_lb_flush(void)
{
    size_t n = LB.n;
    if (!n)
        return;
    LB.n = 0;
    LB.bytes = 0;
    lb_item_t v[LB_MAX_ITEMS], rest[LB_MAX_ITEMS];
    memcpy(v, LB.v, n * sizeof(*v));
    while (n) {
        /* Those for the first one's executor, in planning order. */
        int e = v[0].n->exec;
        size_t k = 0, r = 0;
        for (size_t i = 0; i < n; i++) {
            if (v[i].n->exec == e)
                v[k++] = v[i];
            else
                rest[r++] = v[i];
        }
        lb_send(e, v, k);
        memcpy(v, rest, r * sizeof(*v));
        n = r;
    }
}

/* tgt_g.mtx held: whether this thread should send what it holds now rather
 * than plan another ready node first (with nothing ready it always should,
 * so no loop sleeps or exits holding launches). */
bool graph_lb_due(void)
{
    return LB.n && (tgt_g.ready.n == 0 || tgt_g.runners || tgt_g.finished.n ||
                    LB.n == LB_MAX_ITEMS || LB.bytes >= LB_MAX_BYTES);
}

bool graph_lb_held(void) { return LB.n > 0; }

bool graph_lb_full(void) { return LB.n == LB_MAX_ITEMS || LB.bytes >= LB_MAX_BYTES; }

/* Holds n's launch of launch_len bytes for its executor's batch; returns
 * where the caller writes the launch (before anything else touches this
 * thread's batches). */
static unsigned char *lb_add(tgt_node_t *n, dm_buf_t **claimed, size_t nclaimed,
                             size_t launch_len)
{
    if (LB.n == LB_MAX_ITEMS)
        graph_lb_flush();
    lb_open_t *o = lb_open_find(n->exec);
    if (!o) {
        o = &LB.open[LB.nopen++];
        *o = (lb_open_t){.exec = n->exec, .len = sizeof(tgt_wire_batch_t)};
    }
    size_t item = tgt_wire_batch_item_size(launch_len);
    if (o->len + item > o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 8192;
        while (cap < o->len + item)
            cap *= 2;
        o->buf = graph_xrealloc(o->buf, cap, "launching kernels");
        o->cap = cap;
    }
    unsigned char *p = tgt_wire_count_put(o->buf + o->len, launch_len / sizeof(uint64_t));
    o->len += item;
    LB.v[LB.n++] = (lb_item_t){n, claimed, nclaimed};
    LB.bytes += item;
    return p;
}

/* ------------------------------------------- launching and finishing */
typedef enum { ORD_NO, ORD_YES, ORD_UNKNOWN } ord_t;
static ord_t ordered_after(const tgt_node_t *n, uint64_t seq);

/* Whether executor e's copy of a buffer is stale for node n about to be
 * launched there (dm_stale_take's judge; tgt_g.mtx and ahead_mtx held). */
typedef struct stale_judge {
    const tgt_node_t *n;
    int e;
} stale_judge_t;

static dm_stale_t stale_judge(dm_buf_t *b, void *arg)
{
    const stale_judge_t *j = arg;
    const tgt_node_t *n = j->n;
    /* Named: the launch brings the current copy, or keeps the one there. */
    if (in_list(n->bufs, n->nbufs, b) || in_list(n->inl, n->ninline, b))
        return DM_STALE_CURRENT;
    const ahead_buf_t *a = abuf_get(b, false);
    if (!a)
        return DM_STALE_UNKNOWN;
    /* A task there since the last writer's launch holds the copy: it is
     * or will be that writer's (or the writer runs there). */
    if (a->hold[j->e])
        return DM_STALE_CURRENT;
    if (!a->wseq)
        return DM_STALE_UNKNOWN;
    /* A writer in flight elsewhere: stale for n only if n follows it
     * (before, tasks ordered before the writer may still read the copy
     * there; a task beside the writer races with it). */
    return ordered_after(n, a->wseq) == ORD_YES ? DM_STALE_YES : DM_STALE_LATER;
}

/* Send kernel node n to executor e now, naming what it must wait for
 * there: its predecessors still running (on e: their sequence numbers; on
 * another executor: a request to that executor), and for each buffer the
 * executor to fetch it from once the task that writes it is done. */
void graph_ahead_launch(tgt_node_t *n, int e, uint64_t t0)
{
    dm_ctx_t *dm = tgt_rt->dm;
    int rank = dm_executor_rank(dm, e);
    /* Pieces a split kernel left on its workers go home first: the pulls
     * below read one copy of each buffer. */
    ompc_status_t gst = dm_gather(dm, n->bufs, n->nbufs);
    if (gst != OMPC_OK)
        TGT_USER_ERROR(n->loc, "gathering the region's data failed: %s",
                       ompc_status_str(gst));
    /* Data only the head holds (from target enter data or update) goes
     * first, the usual way; no task in flight changes it. */
    /* Buffer lists on the stack for the usual handful of buffers. */
    size_t nb = n->nbufs + n->ninline;
    dm_buf_t *stack[3 * SCRATCH_BUFS];
    dm_buf_t **scratch = nb <= SCRATCH_BUFS ? stack : malloc(3 * nb * sizeof(*scratch));
    if (!scratch)
        ompc_fatal("out of memory launching a kernel");
    dm_buf_t **head = scratch, **all = scratch + nb, **claimed = scratch + 2 * nb;
    size_t nhead = 0;
    pthread_mutex_lock(&tgt_g.ahead_mtx);
    for (size_t i = 0; i < n->nbufs; i++) {
        ahead_buf_t *a = abuf_get(n->bufs[i], false);
        if (a && (a->wseq || a->hold[e]))
            continue;
        bool head_only;
        uint64_t tag;
        dm_source_for(dm, n->bufs[i], e, &head_only, &tag);
        if (head_only)
            head[nhead++] = n->bufs[i];
    }
    pthread_mutex_unlock(&tgt_g.ahead_mtx);
    if (nhead) {
        graph_lb_flush(); /* it may wait for claims this thread holds */
        ompc_status_t st = dm_acquire(dm, e, head, nhead);
        if (st != OMPC_OK)
            TGT_USER_ERROR(n->loc, "moving the region's data to executor %d failed: %s",
                           e, ompc_status_str(st));
    }

    /* pulled_tag, pulled and abufs have a slot per buffer in the node's
     * own block (tgt_rec_construct). */
    if (n->nbufs)
        memcpy(all, n->bufs, n->nbufs * sizeof(*all));
    memcpy(all + n->nbufs, n->inl, n->ninline * sizeof(*all));

    pthread_mutex_lock(&tgt_g.mtx);
    /* The launch's lists: at most one commit per buffer, one after and one
     * pull per buffer and per predecessor. */
    size_t lcap = n->nbufs + n->preds.n;
    tgt_wire_commit_t commit_stk[SCRATCH_BUFS], *commits = commit_stk;
    uint64_t after_stk[2 * SCRATCH_BUFS], *after = after_stk;
    tgt_wire_pull_t pull_stk[2 * SCRATCH_BUFS], *pulls = pull_stk;
    void *lists = NULL;
    if (nb > SCRATCH_BUFS || lcap > 2 * SCRATCH_BUFS) {
        lists = malloc(nb * sizeof(*commits) + lcap * (sizeof(*pulls) + sizeof(*after)));
        if (!lists)
            ompc_fatal("out of memory launching a kernel");
        pulls = lists;
        commits = (tgt_wire_commit_t *)(pulls + lcap);
        after = (uint64_t *)(commits + nb);
    }
    tgt_wire_launch_t h = {.seq = n->seq, .klen = n->msg_len};
    h.lwm = tgt_g.live_head ? tgt_g.live_head->seq - 1 : tgt_g.seq;
    pthread_mutex_lock(&tgt_g.ahead_mtx);
    size_t nclaimed;
    h.ncommit = dm_commit_claim(dm, e, all, nb, claimed, &nclaimed);
    for (size_t i = 0; i < h.ncommit; i++)
        commits[i] = (tgt_wire_commit_t){dm_buf_addr(claimed[i]), dm_buf_span(claimed[i]),
                                         dm_buf_commit_epoch(dm, claimed[i], e)};
    for (size_t i = 0; i < n->nbufs; i++) {
        dm_buf_t *b = n->bufs[i];
        ahead_buf_t *a = abuf_get(b, false);
        /* Where the data comes from: a task on e, the writer in flight
         * (once it is done), or a worker holding it now. */
        int src = -1;
        uint64_t wait = 0, tag = 0;
        bool head_only;
        if (a && a->hold[e]) {
            after[h.nafter++] = a->hold[e];
        } else if (a && a->wseq) {
            src = a->wexec;
            wait = tag = a->wseq;
        } else {
            src = dm_source_for(dm, b, e, &head_only, &tag);
        }
        if (src >= 0) {
            int srank = dm_executor_rank(dm, src);
            dm_served_from(dm, b, src); /* read-only there once served */
            pulls[h.npull++] = (tgt_wire_pull_t){wait, dm_buf_addr_on(b, src),
                                                 dm_buf_addr_on(b, e), dm_buf_size(b),
                                                 (uint64_t)srank};
            if (!a)
                a = abuf_get(b, true);
            a->hold[e] = n->seq;
            n->ahead.pulled[n->ahead.npulled] = b;
            n->ahead.pulled_tag[n->ahead.npulled++] = tag;
            dm_count_forward(dm, dm_buf_size(b));
            if (tgt_rt->info)
                fprintf(stderr,
                        "[ompc info] r0 move: device %#lx (%zu B) rank %d "
                        "-> rank %d\n",
                        (unsigned long)dm_buf_addr(b), dm_buf_size(b), srank, rank);
        }
        if (in_list(n->wr, n->nwr, b)) {
            if (!a)
                a = abuf_get(b, true);
            /* Every other copy becomes stale for the tasks after n. */
            dm_stale_note(dm, b, e);
            memset(a->hold, 0, (size_t)dm_num_executors(dm) * sizeof(uint64_t));
            a->wseq = n->seq;
            a->wexec = e;
            a->hold[e] = n->seq;
        }
        if (a)
            abuf_use(n, a);
    }
    /* Copies e holds that n must not read: closed when n starts there. */
    dm_stale_copy_t *closes = NULL;
    stale_judge_t sj = {n, e};
    h.nclose = dm_stale_take(dm, e, stale_judge, &sj, &closes);
    pthread_mutex_unlock(&tgt_g.ahead_mtx);
    /* Copies e served to other workers turn read-only there when a task
     * that does not name them starts: the buffers n names, and those it
     * may write open when it starts (its completion makes them the only
     * current ones). */
    h.nclose = dm_names_take(dm, e, n->bufs, n->nbufs, n->wr, n->nwr, &closes, h.nclose);
    /* Predecessors still running that no transfer above waits for (an
     * order without data: a depend on a host variable, or a reader that
     * must be done before this task overwrites what it read). */
    for (size_t i = 0; i < n->preds.n; i++) {
        tgt_node_t *p = n->preds.v[i];
        if (p->state == N_DONE || !p->ahead.launched)
            continue;
        int prank = dm_executor_rank(dm, p->exec);
        bool covered = false;
        for (size_t j = 0; j < h.nafter && !covered; j++)
            covered = p->exec == e && after[j] == p->seq;
        for (size_t j = 0; j < h.npull && !covered; j++)
            covered = pulls[j].after == p->seq && (int)pulls[j].rank == prank;
        if (covered)
            continue;
        if (p->exec == e)
            after[h.nafter++] = p->seq;
        else
            pulls[h.npull++] = (tgt_wire_pull_t){.after = p->seq,
                                                 .rank = (uint64_t)prank};
    }
    /* Successors may go as soon as this one has. */
    n->ahead.launched = true;
    n->state = N_RUNNING;
    n->ahead.anode.key = n->seq;
    ompc_tmap_insert(&tgt_g.ahead_nodes, &n->ahead.anode);
    ahead_owed(n, 1);
    size_t woken = 0;
    for (size_t i = 0; i < n->succs.n; i++) {
        --n->succs.v[i]->nunsent;
        woken += graph_make_ready(n->succs.v[i]);
    }
    if (!graph_runs_ready)
        graph_wake_dispatchers(woken);
    graph_node_ref(n); /* lb_send's, or on_launch_done's */
    pthread_mutex_unlock(&tgt_g.mtx);
    /* The batch keeps the claims until its reply. */
    dm_buf_t **kept = NULL;
    if (nclaimed) {
        kept = malloc(nclaimed * sizeof(*kept));
        if (!kept)
            ompc_fatal("out of memory launching a kernel");
        memcpy(kept, claimed, nclaimed * sizeof(*kept));
    }
    if (scratch != stack)
        free(scratch);

    if (tgt_rt->info)
        fprintf(stderr, "[ompc info] r0 task %llu (%s) -> executor %d (rank %d)\n",
                (unsigned long long)n->seq, n->k->name, e, rank);
    graph_span("transfer", n, "launch", t0, 0);
    /* Written once, into its executor's batch.  From here on n may finish
     * on another thread as soon as its batch is sent (by this thread, not
     * before the next launch or flush): only the reference taken above
     * keeps it. */
    _Static_assert(sizeof(dm_stale_copy_t) == sizeof(tgt_wire_commit_t),
                   "a close travels as {address, span, epoch}");
    tgt_wire_launch_put(lb_add(n, kept, nclaimed, tgt_wire_launch_size(&h)), &h, commits,
                        after, pulls, (const tgt_wire_commit_t *)closes, n->msg);
    free(closes);
    free(lists);
    graph_msg_set(n, NULL, 0);
}

void graph_close_stale(tgt_node_t *n, int e)
{
    dm_ctx_t *dm = tgt_rt->dm;
    dm_stale_copy_t *closes = NULL;
    stale_judge_t sj = {n, e};
    pthread_mutex_lock(&tgt_g.mtx);
    pthread_mutex_lock(&tgt_g.ahead_mtx);
    size_t nc = dm_stale_take(dm, e, stale_judge, &sj, &closes);
    pthread_mutex_unlock(&tgt_g.ahead_mtx);
    pthread_mutex_unlock(&tgt_g.mtx);
    nc = dm_open_take(dm, e, n->wr, n->nwr, &closes, nc);
    ompc_status_t st = nc ? dm_close_now(dm, e, closes, nc) : OMPC_OK;
    free(closes);
    if (st != OMPC_OK)
        TGT_USER_ERROR(n->loc, "closing stale device copies on executor %d failed: %s", e,
                       ompc_status_str(st));
}

void graph_ahead_finish(tgt_node_t *n)
{
    dm_ctx_t *dm = tgt_rt->dm;
    if (n->kst != OMPC_OK)
        TGT_USER_ERROR(n->loc, "kernel %s failed on executor %d: %s", n->k->name, n->exec,
                       ompc_status_str(n->kst));
    atomic_fetch_add(&tgt_rt->kernels_run, 1);
    tgt_model_learn(n->k, n->exec, (double)n->kernel_ns * 1e-9);
    dm_written_by(dm, n->exec, n->wr, n->nwr, n->seq);
    if (n->ninline)
        dm_written_by(dm, n->exec, n->inl, n->ninline, n->seq);
    for (size_t i = 0; i < n->ahead.npulled; i++)
        dm_valid_if(dm, n->exec, n->ahead.pulled[i], n->ahead.pulled_tag[i]);
    pthread_mutex_lock(&tgt_g.ahead_mtx);
    for (size_t i = 0; i < n->ahead.nabufs; i++) {
        ahead_buf_t *a = n->ahead.abufs[i];
        if (a->wseq == n->seq)
            a->wseq = 0;
        if (a->hold[n->exec] == n->seq)
            a->hold[n->exec] = 0;
        if (--a->users == 0) {
            ompc_tmap_erase(&tgt_g.abufs, a->node.key);
            free(a);
        }
    }
    n->ahead.nabufs = 0;
    pthread_mutex_unlock(&tgt_g.ahead_mtx);
    if (n->nwr)
        dm_unpin(dm, n->wr, n->nwr);
}

/* Whether n may write the buffer at addr (its launch counts it so). */
static bool writes_buf(const tgt_node_t *n, uint64_t addr)
{
    for (size_t i = 0; i < n->nwr; i++)
        if (dm_buf_addr(n->wr[i]) == addr)
            return true;
    for (size_t i = 0; i < n->ninline; i++)
        if (dm_buf_addr(n->inl[i]) == addr)
            return true;
    return false;
}

/* A walk's stack of nodes: starts in the caller's array of 64 (stk_v),
 * moves to the heap when it fills.  Pushes p; false when out of memory. */
typedef struct {
    const tgt_node_t **v, *stk_v[64];
    size_t n, cap;
} walk_stack_t;
static void walk_init(walk_stack_t *w)
{
    w->v = w->stk_v;
    w->n = 0;
    w->cap = 64;
}
static bool walk_push(walk_stack_t *w, const tgt_node_t *p)
{
    if (w->n == w->cap) {
        const tgt_node_t **g = malloc(2 * w->cap * sizeof(*g));
        if (!g)
            return false;
        memcpy(g, w->v, w->n * sizeof(*g));
        if (w->v != w->stk_v)
            free(w->v);
        w->v = g;
        w->cap *= 2;
    }
    w->v[w->n++] = p;
    return true;
}
static void walk_free(walk_stack_t *w)
{
    if (w->v != w->stk_v)
        free(w->v);
}

/* Whether in-flight node n is ordered after the node numbered seq (not
 * done), tgt_g.mtx held.  Every node on a path between them is in flight
 * too (none is done while seq is not), so their preds are held.  Past
 * VISIT_MAX nodes the answer is ORD_UNKNOWN, which callers stop on by
 * name: either wrong answer could lose a write. */
#define VISIT_MAX 4096
static ord_t ordered_after(const tgt_node_t *n, uint64_t seq)
{
    if (n->seq <= seq)
        return ORD_NO;
    walk_stack_t w;
    walk_init(&w);
    size_t visited = 0;
    ord_t found = ORD_NO;
    walk_push(&w, n);
    while (w.n > 0 && found == ORD_NO) {
        const tgt_node_t *m = w.v[--w.n];
        if (++visited > VISIT_MAX) {
            found = ORD_UNKNOWN;
            break;
        }
        for (size_t i = 0; i < m->preds.n && found == ORD_NO; i++) {
            const tgt_node_t *p = m->preds.v[i];
            if (p->seq == seq)
                found = ORD_YES;
            else if (p->seq > seq && p->state != N_DONE && !walk_push(&w, p))
                found = ORD_UNKNOWN;
        }
    }
    walk_free(&w);
    return found;
}

/* How the job names a node in messages. */
static void node_name(const tgt_node_t *n, char *buf, size_t cap)
{
    if (n && n->loc)
        tgt_loc(n->loc, buf, cap);
    else
        snprintf(buf, cap, "%s", n && n->k ? n->k->name : "?");
}

/* tgt_g.mtx held: ordered_after, stopping the job when it cannot tell. */
static bool must_order(const tgt_node_t *n, uint64_t seq, const tgt_node_t *w)
{
    ord_t o = ordered_after(n, seq);
    if (o != ORD_UNKNOWN)
        return o == ORD_YES;
    char ln[256], lw[256];
    node_name(n, ln, sizeof(ln));
    node_name(w, lw, sizeof(lw));
    pthread_mutex_unlock(&tgt_g.mtx);
    ompc_fatal("the target task at %s wrote device memory through page faults, and "
               "whether the task at %s is ordered after it cannot be told among more "
               "than %d tasks in flight: its copy could miss the write",
               lw, ln, VISIT_MAX);
}

/* The write-back of a task launched ahead (seq, on exec), before it
 * patches buffer buf_addr (dm_fault_write_hooks_t.order).  A writer of the
 * buffer ordered before the task may be done on its executor but not yet
 * taken in here: its completion would make its own copy, without these
 * bytes, the only valid one.  The write-back waits for it (all such
 * writers and everything before them are done on their executors, so
 * only their completions are missing: every worker is asked for its held
 * ones at once).  A writer of the buffer on another executor that is
 * ordered neither way runs at the same time: the two writes cannot be
 * merged, and the job stops naming it, as without launch ahead.
 * Writers ordered after the task get the bytes (graph_ahead_fault_write_
 * done).  A task that names the buffer for writing wrote its own copy
 * (read-only there because its opening was missed): true, and nothing
 * waits; its completion makes that copy, bytes and all, the only valid
 * one. */
bool graph_ahead_fault_write_order(int exec, uint64_t seq, uint64_t buf_addr, size_t size)
{
    const ompc_config_t *cfg = ompc_config_get();
    uint64_t deadline = ompc_now_ns() + (uint64_t)cfg->peer_timeout_ms * 1000000u;
    bool needing = false;
    pthread_mutex_lock(&tgt_g.mtx);
    ompc_tmap_node_t *t = graph_tmap_find(&tgt_g.ahead_nodes, (uintptr_t)seq);
    const tgt_node_t *w = t ? OMPC_TMAP_ENTRY(t, tgt_node_t, ahead.anode) : NULL;
    if (w && w->k && writes_buf(w, buf_addr)) {
        pthread_mutex_unlock(&tgt_g.mtx);
        return true;
    }
    while (w) {
        tgt_node_t *before = NULL;
        const tgt_node_t *clash = NULL;
        for (tgt_node_t *n = tgt_g.live_head; n && !before && !clash; n = n->lnext) {
            /* A writer being started counts as running: its data may
             * already be on its executor, without these bytes. */
            bool live = n->state == N_RUNNING || (n->state == N_READY && n->starting);
            if (n == w || !live || !n->k || !writes_buf(n, buf_addr))
                continue;
            bool order = n->seq < seq ? must_order(w, n->seq, w) : must_order(n, seq, w);
            if (order && n->seq < seq)
                before = n;
            else if (!order && n->exec != exec)
                clash = n;
        }
        if (clash) {
            char lw[256], lc[256];
            node_name(w, lw, sizeof(lw));
            node_name(clash, lc, sizeof(lc));
            int crank = dm_executor_rank(tgt_rt->dm, clash->exec);
            pthread_mutex_unlock(&tgt_g.mtx);
            ompc_fatal_user("a kernel on rank %d wrote device buffer %#llx (%zu bytes) "
                            "through page faults while a kernel running at the same "
                            "time on rank %d names that buffer and may write it: the "
                            "two writes cannot be merged; order the two target tasks "
                            "with depend, or name the buffer in both (the target tasks "
                            "at %s and %s)",
                            dm_executor_rank(tgt_rt->dm, exec),
                            (unsigned long long)buf_addr, size, crank, lw, lc);
        }
        if (!before)
            break;
        if (!needing) {
            /* Completions held on the workers go at once. */
            needing = true;
            graph_need_add(1);
            tgt_wire_prompt_t pr = {tgt_g.need_gen};
            for (int r = 1; r < tgt_rt->size; r++) {
                ompc_status_t st = ev_post(tgt_rt->ev, r, tgt_rt->fn_ahead_prompt, &pr,
                                           sizeof(pr));
                if (st != OMPC_OK)
                    ompc_fatal("cannot ask rank %d for prompt completions: %s", r,
                               ompc_status_str(st));
            }
        }
        if (tgt_rt->info)
            fprintf(stderr,
                    "[ompc info] r0 task %llu (bytes written through page faults) "
                    "waits for task %llu on rank %d, which may write the buffer "
                    "before it\n",
                    (unsigned long long)seq, (unsigned long long)before->seq,
                    dm_executor_rank(tgt_rt->dm, before->exec));
        graph_node_ref(before);
        before->nwaiters++;
        uint64_t now = ompc_now_ns();
        if (now >= deadline) {
            char lw[256], lb[256];
            node_name(w, lw, sizeof(lw));
            node_name(before, lb, sizeof(lb));
            pthread_mutex_unlock(&tgt_g.mtx);
            ompc_fatal("the write through page faults of the target task at %s waited "
                       "%.1f s for the completion of the task at %s on rank %d, which "
                       "wrote the same buffer before it (OMPC_PEER_TIMEOUT)",
                       lw, (double)cfg->peer_timeout_ms * 1e-3, lb,
                       dm_executor_rank(tgt_rt->dm, before->exec));
        }
        /* cv_done runs on the realtime clock; a bounded nap re-checks. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (before->state != N_DONE &&
               pthread_cond_timedwait(&tgt_g.cv_done, &tgt_g.mtx, &ts) == 0)
            ;
        before->nwaiters--;
        graph_node_unref(before);
    }
    if (needing)
        graph_need_add(-1);
    pthread_mutex_unlock(&tgt_g.mtx);
    return false;
}

/* A patch on its way to one task's executor. */
typedef struct fw_patch {
    int rank;
    unsigned char *msg;      /* tgt_wire_patch_t, then runs */
    size_t len, cap;
} fw_patch_t;

/* Appends a run (ompc_dm.h's format) to a patch. */
static void patch_add(fw_patch_t *p, const unsigned char *run, size_t run_len)
{
    if (p->len + run_len > p->cap) {
        size_t nc = 2 * (p->len + run_len);
        p->msg = graph_xrealloc(p->msg, nc, "sending a write on");
        p->cap = nc;
    }
    memcpy(p->msg + p->len, run, run_len);
    p->len += run_len;
}

/* tgt_g.mtx held: whether in-flight r's copy of buffer b comes from a
 * writer of b ordered between the fault writer w (seq) and r, which got
 * the bytes itself (its own copy then has them, and writes of its own
 * after them that the bytes must not undo). */
static bool copy_after_write(const tgt_node_t *r, uint64_t baddr, const tgt_node_t *w)
{
    for (ompc_tmap_node_t *t = ompc_tmap_ceil(&tgt_g.ahead_nodes, w->seq + 1);
         t && t->key < r->seq; t = ompc_tmap_ceil(&tgt_g.ahead_nodes, t->key + 1)) {
        const tgt_node_t *n = OMPC_TMAP_ENTRY(t, tgt_node_t, ahead.anode);
        if (n->k && writes_buf(n, baddr) && must_order(n, w->seq, w) &&
            must_order(r, n->seq, w))
            return true;
    }
    return false;
}

/* The write-back of a task launched ahead (seq, on exec) is applied here
 * (dm_fault_write_hooks_t.done): its runs go on to the tasks launched
 * before it that are ordered after it and name a buffer it patched.
 * Their copies were planned before the write (from a holder, or from a
 * writer before it), and may arrive before or after it: each such task's
 * executor keeps the runs and applies them when the task starts, once
 * its inputs are all there.  That is before the task runs: it runs only
 * after the writer is done on its executor, which is after this returns
 * (the write-back precedes the writer's completion).  A task whose copy
 * comes from a writer ordered between (which got the runs) does not get
 * them again: they would undo that writer's own writes.  Plans of later
 * launches that point at a copy older than the write (a holder not
 * ordered after the writer) are forgotten, so those ask the data manager,
 * whose bookkeeping has the write now. */
void graph_ahead_fault_write_done(int exec, uint64_t seq, const void *runs, size_t len)
{
    (void)exec;
    dm_ctx_t *dm = tgt_rt->dm;
    fw_patch_t *out = NULL;
    size_t nout = 0, capout = 0;
    /* The buffers the runs patched, each once. */
    dm_buf_t *bv_stk[16], **bv = bv_stk;
    size_t nbv = 0, capbv = 16;
    const unsigned char *p = runs, *end = p + len;
    while (p + 16 <= end) {
        uint64_t addr, rl;
        memcpy(&addr, p, 8);
        memcpy(&rl, p + 8, 8);
        p += 16 + ((rl + 7) & ~(uint64_t)7);
        dm_buf_t *b = addr ? dm_buf_find(dm, addr, 1, NULL) : NULL;
        if (!b || in_list(bv, nbv, b))
            continue;
        if (nbv == capbv) {
            dm_buf_t **g = malloc(2 * capbv * sizeof(*g));
            if (!g)
                ompc_fatal("out of memory sending a write on");
            memcpy(g, bv, nbv * sizeof(*g));
            if (bv != bv_stk)
                free(bv);
            bv = g;
            capbv *= 2;
        }
        bv[nbv++] = b;
    }
    pthread_mutex_lock(&tgt_g.mtx);
    ompc_tmap_node_t *wt = graph_tmap_find(&tgt_g.ahead_nodes, (uintptr_t)seq);
    const tgt_node_t *w = wt ? OMPC_TMAP_ENTRY(wt, tgt_node_t, ahead.anode) : NULL;
    for (ompc_tmap_node_t *t = w ? ompc_tmap_ceil(&tgt_g.ahead_nodes, seq + 1) : NULL; t;
         t = ompc_tmap_ceil(&tgt_g.ahead_nodes, t->key + 1)) {
        const tgt_node_t *r = OMPC_TMAP_ENTRY(t, tgt_node_t, ahead.anode);
        if (!r->k)
            continue;
        fw_patch_t *pt = NULL;
        int order = -1; /* not asked yet */
        for (size_t i = 0; i < r->nbufs; i++) {
            dm_buf_t *b = r->bufs[i];
            /* A copy that came with the launch is the program's newer
             * data. */
            if (!in_list(bv, nbv, b) || in_list(r->inl, r->ninline, b))
                continue;
            if (order < 0)
                order = must_order(r, seq, w);
            if (!order)
                break;
            uint64_t ba = dm_buf_addr(b), bend = ba + dm_buf_size(b);
            if (copy_after_write(r, ba, w))
                continue;
            if (!pt) {
                out = tgt_grow(out, &capout, nout, sizeof(*out), "sending a write on");
                pt = &out[nout++];
                *pt = (fw_patch_t){.rank = dm_executor_rank(dm, r->exec)};
                tgt_wire_patch_t h = {.seq = r->seq};
                patch_add(pt, (const unsigned char *)&h, sizeof(h));
            }
            for (const unsigned char *q = runs; q + 16 <= end;) {
                uint64_t addr, rl;
                memcpy(&addr, q, 8);
                memcpy(&rl, q + 8, 8);
                size_t run_len = 16 + ((rl + 7) & ~(uint64_t)7);
                if (addr >= ba && addr < bend)
                    patch_add(pt, q, run_len);
                q += run_len;
            }
        }
    }
    /* Copies planned for later launches that predate the write. */
    pthread_mutex_lock(&tgt_g.ahead_mtx);
    int P = dm_num_executors(dm);
    for (size_t i = 0; i < nbv && w; i++) {
        ahead_buf_t *a = abuf_get(bv[i], false);
        for (int x = 0; a && x < P; x++) {
            if (!a->hold[x])
                continue;
            ompc_tmap_node_t *h = graph_tmap_find(&tgt_g.ahead_nodes,
                                                  (uintptr_t)a->hold[x]);
            if (!h || !must_order(OMPC_TMAP_ENTRY(h, tgt_node_t, ahead.anode), seq, w))
                a->hold[x] = 0;
        }
    }
    pthread_mutex_unlock(&tgt_g.ahead_mtx);
    pthread_mutex_unlock(&tgt_g.mtx);
    if (bv != bv_stk)
        free(bv);
    /* Delivered before the writer's write-back is answered. */
    ev_handle_t *hs_stk[8], **hs = nout <= 8 ? hs_stk : malloc(nout * sizeof(*hs));
    if (!hs)
        ompc_fatal("out of memory sending a write on");
    for (size_t i = 0; i < nout; i++) {
        if (tgt_rt->info) {
            tgt_wire_patch_t ph;
            memcpy(&ph, out[i].msg, sizeof(ph));
            fprintf(stderr,
                    "[ompc info] r0 task %llu (bytes written through page faults) -> "
                    "task %llu on rank %d, launched before them\n",
                    (unsigned long long)seq, (unsigned long long)ph.seq, out[i].rank);
        }
        ompc_status_t st = ev_execute(tgt_rt->ev, out[i].rank, tgt_rt->fn_ahead_patch,
                                      out[i].msg, out[i].len, NULL, 0, &hs[i]);
        if (st != OMPC_OK)
            ompc_fatal("cannot send a write through page faults on to rank %d: %s",
                       out[i].rank, ompc_status_str(st));
    }
    ompc_status_t st = ev_wait_all(hs, nout);
    if (st != OMPC_OK)
        ompc_fatal("sending a write through page faults on to the tasks after it: %s",
                   ompc_status_str(st));
    for (size_t i = 0; i < nout; i++) {
        ev_handle_release(hs[i]);
        free(out[i].msg);
    }
    if (hs != hs_stk)
        free(hs);
    free(out);
}

/* tgt_g.mtx held: the latest writer of buf_addr among the ancestors of n
 * that are not done here (their writes are not in the data manager's
 * bookkeeping yet), or NULL.  As ordered_after, every node on the way is
 * in flight, so its preds are held; past VISIT_MAX nodes, the latest
 * found so far. */
static const tgt_node_t *last_writer_before(const tgt_node_t *n, uint64_t buf_addr)
{
    walk_stack_t w;
    walk_init(&w);
    const tgt_node_t *best = NULL;
    size_t visited = 0;
    walk_push(&w, n);
    while (w.n > 0 && ++visited <= VISIT_MAX) {
        const tgt_node_t *m = w.v[--w.n];
        for (size_t i = 0; i < m->preds.n; i++) {
            const tgt_node_t *p = m->preds.v[i];
            /* A pred's seq is below its successor's: nothing behind one
             * at or below best can be later. */
            if (p->state == N_DONE || (best && p->seq <= best->seq))
                continue;
            if (p->k && p->ahead.launched && writes_buf(p, buf_addr) &&
                (!best || p->seq > best->seq))
                best = p;
            if (!walk_push(&w, p))
                break;
        }
    }
    walk_free(&w);
    return best;
}

/* A task launched ahead starts once the tasks it follows are done on
 * their executors, which may be before the head has their completions
 * (they come in batches): a fault of it must read a buffer where its last
 * writer among them left it, not where the bookkeeping, which learns of
 * that writer only at its completion, says.  Writers of one buffer that
 * may run at once share an executor, so the latest such writer's
 * executor holds all their bytes.  Runs on the head for each fault. */
int graph_ahead_fault_source(int exec, const uint64_t *seqs, size_t n, uint64_t buf_addr)
{
    int src = -1;
    uint64_t best = 0;
    pthread_mutex_lock(&tgt_g.mtx);
    for (size_t i = 0; i < n; i++) {
        ompc_tmap_node_t *t = ompc_tmap_ceil(&tgt_g.ahead_nodes, seqs[i]);
        if (!t || t->key != seqs[i])
            continue;
        const tgt_node_t *node = OMPC_TMAP_ENTRY(t, tgt_node_t, ahead.anode);
        if (node->exec != exec)
            continue;
        const tgt_node_t *w = last_writer_before(node, buf_addr);
        if (w && w->seq > best) {
            best = w->seq;
            src = w->exec;
        }
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    return src;
}

int tgt_graph_describe_owed(int rank, int owed, char *buf, size_t cap)
{
    /* The gate calls this as it ends the job; a thread stuck holding the
     * lock must not stop the message. */
    bool locked = false;
    for (int i = 0; i < 100 && !locked; i++) {
        locked = pthread_mutex_trylock(&tgt_g.mtx) == 0;
        if (!locked)
            usleep(1000);
    }
    if (!locked)
        return snprintf(buf, cap, "%d kernel(s) launched there", owed);
    const tgt_node_t *oldest = NULL;
    for (ompc_tmap_node_t *t = ompc_tmap_ceil(&tgt_g.ahead_nodes, 0); t && !oldest;
         t = ompc_tmap_ceil(&tgt_g.ahead_nodes, t->key + 1)) {
        const tgt_node_t *n = OMPC_TMAP_ENTRY(t, tgt_node_t, ahead.anode);
        if (n->exec >= 0 && dm_executor_rank(tgt_rt->dm, n->exec) == rank)
            oldest = n;
    }
    char where[256] = "";
    if (oldest && oldest->loc)
        tgt_loc(oldest->loc, where, sizeof(where));
    else if (oldest)
        snprintf(where, sizeof(where), "%s", oldest->k->name);
    int len = snprintf(buf, cap, "%d kernel(s) launched there to finish%s%s%s", owed,
                       oldest ? " (the oldest: " : "", where, oldest ? ")" : "");
    pthread_mutex_unlock(&tgt_g.mtx);
    return len;
}

/* The hop a consumer measured, on the head's clock: its arrival time minus
 * the producer's serve time, each rank's clock corrected by its offset. */
static void learn_hop(int exec, uint64_t hop_raw, int hop_rank)
{
    dm_ctx_t *dm = tgt_rt->dm;
    int p = -1;
    for (int e = 0; e < dm_num_executors(dm) && p < 0; e++)
        if (dm_executor_rank(dm, e) == hop_rank)
            p = e;
    if (p < 0 || exec < 0 || p == exec)
        return;
    int64_t hop = (int64_t)hop_raw - tgt_model_clock_offset(exec) +
                  tgt_model_clock_offset(p);
    if (hop > 0)
        tgt_model_learn_hop((double)hop * 1e-9, false);
}

/* tgt_g.mtx held.  Returns 1 if a dispatch thread should be woken for it. */
static size_t ahead_done_one(uint64_t seq, uint64_t kernel_ns, ompc_status_t st,
                             uint64_t hop_raw, int hop_rank, int from)
{
    ompc_tmap_node_t *t = ompc_tmap_erase(&tgt_g.ahead_nodes, (uintptr_t)seq);
    if (!t) {
        ompc_error("an executor reported task %llu done, which is not running",
                   (unsigned long long)seq);
        return 0;
    }
    tgt_node_t *n = OMPC_TMAP_ENTRY(t, tgt_node_t, ahead.anode);
    if (n->exec < 0 || dm_executor_rank(tgt_rt->dm, n->exec) != from) {
        ompc_tmap_insert(&tgt_g.ahead_nodes, t);
        ompc_error("rank %d reported task %llu done, which runs elsewhere", from,
                   (unsigned long long)seq);
        return 0;
    }
    ahead_owed(n, -1);
    if (hop_rank >= 0)
        learn_hop(n->exec, hop_raw, hop_rank);
    n->kernel_ns = kernel_ns;
    n->kst = st;
    n->ahead.kdone = true;
    tgt_g.stats.completions++;
    return n->npred_left == 0 && n->ahead.sent && graph_push_finished_quiet(n);
}

void tgt_graph_ahead_done(const void *m, size_t n, int from)
{
    pthread_mutex_lock(&tgt_g.mtx);
    tgt_g.stats.done_msgs++;
    /* One wake-up for the batch, not a signal per task (each was a system
     * call while a dispatch thread slept, on the gate thread). */
    size_t woken = 0;
    for (size_t i = 0; i < n; i++) {
        tgt_wire_done_t d = tgt_wire_done_get(m, i);
        woken += ahead_done_one(d.seq, d.kernel_ns, (ompc_status_t)d.status, d.hop_raw,
                                (int)d.hop_rank, from);
    }
    graph_wake_dispatchers(woken);
    pthread_mutex_unlock(&tgt_g.mtx);
}
