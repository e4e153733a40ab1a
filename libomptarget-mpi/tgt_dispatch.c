/* Running the task graph (tgt_graph.h says what and why).  Dispatch
 * threads start ready nodes (copies to the device, then the kernel:
 * launched directly, or ahead through tgt_ahead_head.c) and finish those
 * whose kernel is over (copies back, successors made ready).  A thread
 * that waits for nodes (a synchronous construct, a flush point: barrier,
 * taskwait, a host task with dependences) does the same work meanwhile.
 * Also the graph's start and end. */
#define _GNU_SOURCE
#include "tgt_graph_internal.h"
#include "tgt_split.h"

#include "ompc_trace.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ data ops */
/* The node's kernel is done: the data manager gives back what it borrowed
 * before copies back overwrite it. */
static void ops_unborrow(tgt_node_t *n)
{
    for (size_t i = 0; i < n->npre; i++) {
        tgt_op_t *w = &n->ops[i];
        if (w->kind != OP_WRITE || !w->borrowed)
            continue;
        ompc_status_t st = dm_unborrow(tgt_rt->dm, w->buf);
        if (st != OMPC_OK)
            TGT_USER_ERROR(n->loc, "keeping data for the device failed: %s",
                           ompc_status_str(st));
    }
}

/* Runs ops[from, to) of n: copies, host stores, frees (the thread that
 * runs n, no graph lock held). */
static void run_ops(tgt_node_t *n, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        tgt_op_t *op = &n->ops[i];
        ompc_status_t st = OMPC_OK;
        switch (op->kind) {
        case OP_WRITE:
            if (op->borrowed) {
                if (op->off == 0 && op->len == dm_buf_size(op->buf))
                    st = dm_write_borrow(tgt_rt->dm, op->buf, op->data);
                else
                    st = dm_write(tgt_rt->dm, op->buf, op->off, op->data, op->len);
            } else if (op->off == 0 && op->len == dm_buf_size(op->buf)) {
                st = dm_write_adopt(tgt_rt->dm, op->buf, op->data);
            } else {
                st = dm_write(tgt_rt->dm, op->buf, op->off, op->data, op->len);
                free(op->data);
            }
            op->data = NULL;
            break;
        case OP_READ:
            if (op->data)
                memcpy(op->host, op->data, op->len);
            else
                st = dm_read(tgt_rt->dm, op->buf, op->off, op->host, op->len);
            break;
        case OP_HOST_STORE: *(void **)op->host = op->data; break;
        case OP_FREE: st = dm_free(tgt_rt->dm, op->buf); break;
        case OP_DONE: /* travelled inside the kernel's launch */ break;
        }
        if (st != OMPC_OK)
            TGT_USER_ERROR(n->loc, "moving data %s the device failed: %s",
                           op->kind == OP_WRITE ? "to" : "from", ompc_status_str(st));
    }
}

/* ------------------------------------------------------------- waiting */
static void node_start(tgt_node_t *n);
static void node_finish(tgt_node_t *n);

/* A waiting thread is a dispatch thread until its node is done: it runs
 * ready and finished nodes itself, and waits on its own node's kernel
 * event, which makes it the event system's progress engine meanwhile (no
 * hand-off through the dispatch threads for a synchronous region).
 * help_once is one step of that, tgt_g.mtx held (and held again on
 * return): run a finished or ready node, or wait on mine's kernel event
 * (mine may be NULL), or sleep until a node is done. */
static void help_once(tgt_node_t *mine)
{
    tgt_node_t *t;
    if (graph_lb_due()) {
        pthread_mutex_unlock(&tgt_g.mtx);
        graph_lb_flush();
    } else if ((t = graph_work_pop(&tgt_g.finished))) {
        pthread_mutex_unlock(&tgt_g.mtx);
        graph_takes_more = !tgt_rt->executor;
        node_finish(t);
        graph_takes_more = false;
    } else if (!tgt_rt->executor && (t = graph_work_pop(&tgt_g.ready))) {
        /* Where the head runs the kernels itself (one rank), a waiter does
         * not start them: it may be inside the program's own parallel
         * region, which a kernel's teams must not nest in.  Dispatch
         * threads run them. */
        pthread_mutex_unlock(&tgt_g.mtx);
        graph_takes_more = true;
        node_start(t);
        graph_takes_more = false;
    } else if (mine && mine->state == N_RUNNING && mine->h && !mine->waited) {
        ev_handle_t *h = mine->h;
        ev_handle_retain(h);
        mine->waited = true;
        pthread_mutex_unlock(&tgt_g.mtx);
        ev_wait(h);
        ev_handle_release(h);
    } else {
        pthread_cond_wait(&tgt_g.cv_done, &tgt_g.mtx);
        return;
    }
    pthread_mutex_lock(&tgt_g.mtx);
}

/* tgt_g.mtx held: a waiter leaves; work queued while it helped, which it may
 * have woken nobody for, goes to the dispatch threads. */
static void stop_helping(void)
{
    if (atomic_load_explicit(&tgt_g.nwork, memory_order_relaxed))
        pthread_cond_broadcast(&tgt_g.cv_work);
}

void graph_wait_node(tgt_node_t *n)
{
    pthread_mutex_lock(&tgt_g.mtx);
    n->nwaiters++;
    graph_need_add(1);
    while (n->state != N_DONE)
        help_once(n);
    stop_helping();
    graph_need_add(-1);
    n->nwaiters--;
    pthread_mutex_unlock(&tgt_g.mtx);
    graph_lb_flush(); /* launches planned while helping must not wait for us */
}

void tgt_graph_sync_all(void)
{
    if (!tgt_g.active)
        return;
    pthread_mutex_lock(&tgt_g.mtx);
    if (tgt_g.nparked > 0)
        graph_parked_wait(UINT64_MAX);
    uint64_t target = tgt_g.seq;
    bool idle = !tgt_g.live_head || tgt_g.live_head->seq > target;
    pthread_mutex_unlock(&tgt_g.mtx);
    if (idle)
        return;
    graph_flush();
    pthread_mutex_lock(&tgt_g.mtx);
    if (tgt_g.sync_waiters++ == 0 || target < tgt_g.sync_upto)
        tgt_g.sync_upto = target;
    while (tgt_g.live_head && tgt_g.live_head->seq <= target)
        help_once(NULL);
    /* The lowest target stays while others wait (theirs are unknown
     * here): at worst they are woken early and sleep again. */
    if (--tgt_g.sync_waiters == 0)
        tgt_g.sync_upto = UINT64_MAX;
    stop_helping();
    if (graph_lb_held()) {
        /* Planned while helping, for nodes after the target. */
        pthread_mutex_unlock(&tgt_g.mtx);
        graph_lb_flush();
        pthread_mutex_lock(&tgt_g.mtx);
    }
    /* Quiescent: forget finished nodes kept only for ordering (unless the
     * graph was torn down meanwhile). */
    if (!tgt_g.live_head && tgt_g.active) {
        ompc_tmap_drain(&tgt_g.deps, graph_dep_state_free, NULL);
        ompc_tmap_drain(&tgt_g.bstate, graph_buf_state_free, NULL);
        for (size_t j = 0; j < tgt_g.nhw; j++)
            graph_node_unref(tgt_g.hw[j].n);
        tgt_g.nhw = 0;
        graph_node_unref(tgt_g.last_all);
        tgt_g.last_all = NULL;
    }
    pthread_mutex_unlock(&tgt_g.mtx);
}

/* Runs the nodes in `wait` (referenced; the list is freed). */
static void wait_nodes(node_list_t *wait)
{
    if (wait->n) {
        pthread_mutex_lock(&tgt_g.mtx);
        graph_need_add(1); /* before the launches the flush sends */
        pthread_mutex_unlock(&tgt_g.mtx);
        graph_flush();
        for (size_t j = 0; j < wait->n; j++)
            graph_wait_node(wait->v[j]);
        pthread_mutex_lock(&tgt_g.mtx);
        graph_need_add(-1);
        pthread_mutex_unlock(&tgt_g.mtx);
    }
    pthread_mutex_lock(&tgt_g.mtx);
    graph_list_free(wait);
    pthread_mutex_unlock(&tgt_g.mtx);
}

void tgt_graph_host_task(const tgt_dep_t *deps, int nd)
{
    if (!tgt_g.active || nd <= 0)
        return;
    node_list_t wait = {0};
    bool all = false;
    pthread_mutex_lock(&tgt_g.mtx);
    if (tgt_g.nparked > 0)
        graph_parked_wait(graph_parked_dep(deps, nd));
    for (int i = 0; i < nd; i++) {
        if (deps[i].type == TGT_DEP_ALL) {
            all = true;
            break;
        }
        ompc_tmap_node_t *t = graph_tmap_find(&tgt_g.deps, deps[i].addr);
        if (!t)
            continue;
        dep_state_t *d = OMPC_TMAP_ENTRY(t, dep_state_t, node);
        for (size_t j = 0; j < d->writers.n; j++)
            if (d->writers.v[j]->state != N_DONE) {
                graph_node_ref(d->writers.v[j]);
                graph_list_push(&wait, d->writers.v[j]);
            }
        if (deps[i].type != TGT_DEP_IN)
            for (size_t j = 0; j < d->readers.n; j++)
                if (d->readers.v[j]->state != N_DONE) {
                    graph_node_ref(d->readers.v[j]);
                    graph_list_push(&wait, d->readers.v[j]);
                }
    }
    if (tgt_g.last_all && tgt_g.last_all->state != N_DONE) {
        graph_node_ref(tgt_g.last_all);
        graph_list_push(&wait, tgt_g.last_all);
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    if (all) {
        graph_list_free(&wait);
        tgt_graph_sync_all();
        return;
    }
    wait_nodes(&wait);
}

void tgt_graph_target_task(const tgt_dep_t *deps, int nd)
{
    if (!tgt_g.active || nd <= 0)
        return;
    node_list_t wait = {0};
    pthread_mutex_lock(&tgt_g.mtx);
    for (int i = 0; tgt_g.nparked_hw > 0 && i < nd; i++)
        graph_parked_wait(graph_parked_hw(deps[i].addr, deps[i].addr + 1,
                                          deps[i].type == TGT_DEP_ALL, UINT64_MAX));
    for (int i = 0; i < nd; i++) {
        uintptr_t b = deps[i].addr, e = b + 1;
        for (size_t j = 0; j < tgt_g.nhw; j++)
            if ((deps[i].type == TGT_DEP_ALL ||
                 (tgt_g.hw[j].begin < e && b < tgt_g.hw[j].end)) &&
                tgt_g.hw[j].n->state != N_DONE) {
                graph_node_ref(tgt_g.hw[j].n);
                graph_list_push(&wait, tgt_g.hw[j].n);
            }
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    wait_nodes(&wait);
}

/* ------------------------------------------------------------- dispatch */
static void node_done(tgt_node_t *n)
{
    pthread_mutex_lock(&tgt_g.mtx);
    n->state = N_DONE;
    tgt_g.ndone++;
    /* Waiters sleep on cv_done for a node of their own, or for the oldest
     * live node to pass their target (a barrier waits for every node up to
     * a point): only those are woken.  Waking them for every node, or at
     * every change of the oldest live node, cost the head a context switch
     * per task, and work for them to help with goes to the dispatch
     * threads anyway. */
    bool was_head = tgt_g.live_head == n;
    graph_live_remove(n);
    graph_placed_drop(n);
    bool wake = n->nwaiters > 0 ||
                (was_head && tgt_g.sync_waiters > 0 &&
                 (!tgt_g.live_head || tgt_g.live_head->seq > tgt_g.sync_upto));
    /* Held-back recorders wait for nlive to fall to twice the window. */
    bool room = tgt_g.room_waiters > 0 &&
                (int64_t)tgt_g.nlive <= 2 * ompc_config_get()->graph_window;
    size_t woken = 0;
    for (size_t i = 0; i < n->succs.n; i++) {
        tgt_node_t *s = n->succs.v[i];
        --s->npred_left;
        if (!n->ahead.launched)
            --s->nunsent;
        if (graph_make_ready(s)) {
            woken++;
        } else if (s->ahead.kdone && s->ahead.sent && s->npred_left == 0) {
            /* Its executor finished it before we heard of a predecessor:
             * its results are taken in now, in graph order. */
            graph_work_push(&tgt_g.finished, s);
            woken++;
        }
    }
    /* Pins may have been released: blocked nodes try again. */
    tgt_node_t *b;
    while ((b = graph_q_pop(&tgt_g.blocked))) {
        graph_work_push(&tgt_g.ready, b);
        woken++;
    }
    if (n->k && n->exec >= 0)
        tgt_g.stats.tasks_per_exec[n->exec]++;
    graph_list_clear(&n->preds);
    if (wake)
        pthread_cond_broadcast(&tgt_g.cv_done);
    if (room)
        pthread_cond_broadcast(&tgt_g.cv_room);
    graph_wake_dispatchers(woken);
    /* What waited for this kernel's cost can be placed now. */
    bool reflush = n->sched.holds && tgt_g.held.n > 0;
    graph_node_unref(n);
    pthread_mutex_unlock(&tgt_g.mtx);
    if (reflush)
        graph_flush();
}

static void on_kernel_done(void *arg, ompc_status_t st)
{
    tgt_node_t *n = arg;
    pthread_mutex_lock(&tgt_g.mtx);
    n->kst = st;
    graph_push_finished(n);
    pthread_mutex_unlock(&tgt_g.mtx);
}

static size_t ops_bytes(const tgt_node_t *n, size_t from, size_t to)
{
    size_t b = 0;
    for (size_t i = from; i < to; i++)
        if (n->ops[i].kind == OP_WRITE || n->ops[i].kind == OP_READ)
            b += n->ops[i].len;
    return b;
}

/* Small copies into buffers that have no data yet (a `map(to:)` of this
 * region, a firstprivate copy) travel inside the kernel's launch message
 * instead of as transfers of their own: one round trip per region fewer.
 * Only a copy that fills its buffer and is the node's only op on it
 * qualifies (nothing to merge with, no other copy to order against). */
#define INLINE_WRITE_MAX 4096
#define INLINE_TOTAL_MAX (32 * 1024)

static void inline_writes(tgt_node_t *n)
{
    size_t total = 0, count = 0, pick[INLINE_BUFS];
    for (size_t i = 0; i < n->npre && count < INLINE_BUFS; i++) {
        tgt_op_t *op = &n->ops[i];
        if (op->kind != OP_WRITE || op->off != 0 || op->len > INLINE_WRITE_MAX ||
            op->len != dm_buf_size(op->buf) ||
            total + sizeof(tgt_wire_span_t) + op->len > INLINE_TOTAL_MAX)
            continue;
        bool alone = true;
        for (size_t j = 0; j < n->nops && alone; j++)
            alone = j == i || n->ops[j].buf != op->buf || n->ops[j].kind == OP_FREE;
        if (!alone || dm_buf_has_data(tgt_rt->dm, op->buf))
            continue;
        total += tgt_wire_copy_size(op->len);
        pick[count++] = i;
    }
    if (!count)
        return;
    /* Flushes read op kinds of nodes not done (edge costs). */
    pthread_mutex_lock(&tgt_g.mtx);
    for (size_t c = 0; c < count; c++) {
        n->ops[pick[c]].kind = OP_DONE;
        n->ops[pick[c]].host = &n->ops[pick[c]]; /* marks it for the message */
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    /* The launch, then its block of copies (tgt_wire.h). */
    size_t len = n->msg_len + tgt_wire_count_size() + total;
    char *msg = malloc(len);
    if (!msg)
        ompc_fatal("out of memory launching a kernel");
    memcpy(msg, n->msg, n->msg_len);
    unsigned char *p = tgt_wire_count_put((unsigned char *)msg + n->msg_len, count);
    n->ninline = 0;
    for (size_t i = 0; i < n->npre; i++) {
        tgt_op_t *op = &n->ops[i];
        if (op->kind != OP_DONE || op->host != op)
            continue;
        p = tgt_wire_copy_put(p, dm_buf_addr(op->buf), op->data, op->len);
        free(op->data);
        op->data = NULL;
        op->host = NULL;
        n->inl[n->ninline++] = op->buf;
    }
    graph_msg_set(n, msg, len);
}

/* Small copies back to the host after a directly launched kernel (a
 * reduction's result, a scalar mapped from) come with the kernel's reply
 * instead of as retrieves of their own: one round trip per region fewer.
 * Only buffers of the kernel qualify, which are valid on its executor
 * while it runs and which no other node writes before this one is done.
 * Appended to the launch: an empty block of inline copies when there was
 * none, then the block of read-backs (tgt_wire.h). */
#define READ_BACK_MAX 4096
#define READ_BACK_TOTAL_MAX (32 * 1024)

static void read_backs(tgt_node_t *n, int e)
{
    size_t total = 0, count = 0;
    for (size_t i = n->npre; i < n->nops; i++) {
        tgt_op_t *op = &n->ops[i];
        op->back = false;
        if (op->kind != OP_READ || op->len > READ_BACK_MAX ||
            total + tgt_wire_pad8(op->len) > READ_BACK_TOTAL_MAX)
            continue;
        bool mine = false;
        for (size_t j = 0; j < n->nbufs && !mine; j++)
            mine = n->bufs[j] == op->buf;
        if (!mine)
            continue;
        op->back = true;
        total += tgt_wire_pad8(op->len);
        count++;
    }
    if (!count)
        return;
    size_t len = n->msg_len + (n->ninline ? 1 : 2) * tgt_wire_count_size() +
                 count * sizeof(tgt_wire_span_t);
    char *msg = malloc(len);
    n->reply_len = sizeof(tgt_wire_kernel_reply_t) + total;
    n->reply = malloc(n->reply_len);
    if (!msg || !n->reply)
        ompc_fatal("out of memory launching a kernel");
    memcpy(msg, n->msg, n->msg_len);
    unsigned char *p = (unsigned char *)msg + n->msg_len;
    if (!n->ninline)
        p = tgt_wire_count_put(p, 0);
    p = tgt_wire_count_put(p, count);
    for (size_t i = n->npre; i < n->nops; i++) {
        tgt_op_t *op = &n->ops[i];
        if (op->back)
            p = tgt_wire_back_put(p, dm_buf_addr_on(op->buf, e) + op->off, op->len);
    }
    graph_msg_set(n, msg, len);
}

static void node_start(tgt_node_t *n)
{
    uint64_t t0 = ompc_now_ns();
    if (!n->k) {
        graph_lb_flush(); /* what follows may wait for claims this thread holds */
        run_ops(n, 0, n->nops);
        /* Enter data: push the copy to the worker that will use it. */
        if (n->exec >= 0 && dm_num_executors(tgt_rt->dm) > 1) {
            dm_buf_t **w = malloc((n->nops ? n->nops : 1) * sizeof(*w));
            size_t k = 0;
            for (size_t i = 0; w && i < n->nops; i++)
                if (n->ops[i].kind == OP_WRITE)
                    w[k++] = n->ops[i].buf;
            if (k)
                dm_acquire(tgt_rt->dm, n->exec, w, k);
            free(w);
        }
        graph_span("data", n, "data", t0, ops_bytes(n, 0, n->nops));
        node_done(n);
        return;
    }
    int e = n->exec >= 0 ? n->exec : 0;
    /* One hold of tgt_g.mtx for the pin and the placement (it was three per
     * task, each a hand-off with the recording thread).  A pin is only
     * tried here, never waited for (lock order: tgt_internal.h).  A node
     * that finishes unpins before it takes tgt_g.mtx to retry the blocked
     * queue, so a node pushed there below cannot miss that retry. */
    pthread_mutex_lock(&tgt_g.mtx);
    bool early = n->npred_left > 0;
    if (n->nwr) {
        /* Kernels that may write one buffer share an executor (they may
         * write different parts of it at the same time). */
        int pe = dm_pin_executor(tgt_rt->dm, n->wr, n->nwr);
        /* Sent ahead, a kernel often meets the pin of the writer before it
         * (the same buffer, a step earlier), which will be done before it
         * runs: moving it there would undo the schedule (a stencil lost an
         * eighth of its placements so).  It waits for a predecessor to be
         * done instead and tries again; once none is left, the pin wins. */
        bool defer = pe >= 0 && pe != e && early;
        if (pe >= 0 && pe != e && !defer)
            tgt_g.stats.pin_moves++;
        if (pe >= 0)
            e = pe;
        if (defer || !dm_try_pin(tgt_rt->dm, e, n->wr, n->nwr)) {
            /* Retried when a node finishes; a node sent ahead of its
             * predecessors waits for them instead. */
            if (n->npred_left > 0)
                n->state = N_WAITING;
            else
                graph_q_push(&tgt_g.blocked, n);
            pthread_mutex_unlock(&tgt_g.mtx);
            return;
        }
    }
    if (n->sched.placed_on != e) {
        graph_placed_drop(n);
        graph_placed_add(n, e);
    }
    n->exec = e; /* flushes read where running nodes are */
    n->starting = n->nwr > 0;
    pthread_mutex_unlock(&tgt_g.mtx);
    if (!n->inlined) {
        inline_writes(n);
        n->inlined = true;
    }
    /* A kernel split over executors is launched directly (tgt_split.h). */
    bool split = tgt_split_wanted(n->k);
    bool ahead = !split && graph_ahead_candidate(n);
    for (size_t i = 0; ahead && i < n->npre; i++)
        ahead = n->ops[i].kind == OP_DONE;
    if (ahead) {
        graph_ahead_launch(n, e, t0);
        return;
    }
    pthread_mutex_lock(&tgt_g.mtx);
    if (n->npred_left > 0) {
        /* Sent early, but a copy from the host could not go with the
         * launch: wait for the predecessors after all. */
        n->state = N_WAITING;
        n->starting = false;
        pthread_mutex_unlock(&tgt_g.mtx);
        if (n->nwr)
            dm_unpin(tgt_rt->dm, n->wr, n->nwr);
        return;
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    graph_lb_flush();
    run_ops(n, 0, n->npre);
    /* A split moves the data to its shares itself (it may keep them in
     * place: tgt_split.h). */
    ompc_status_t st = split ? OMPC_OK : dm_acquire(tgt_rt->dm, e, n->bufs, n->nbufs);
    if (st != OMPC_OK)
        TGT_USER_ERROR(n->loc, "moving the region's data to executor %d failed: %s", e,
                       ompc_status_str(st));
    if (!split)
        graph_close_stale(n, e); /* copies there it must not read */
    graph_span("transfer", n, "in", t0, ops_bytes(n, 0, n->npre));
    if (tgt_rt->info)
        fprintf(stderr, "[ompc info] r0 task %llu (%s) -> executor %d (rank %d)\n",
                (unsigned long long)n->seq, n->k->name, e,
                dm_executor_rank(tgt_rt->dm, e));
    pthread_mutex_lock(&tgt_g.mtx);
    n->state = N_RUNNING;
    pthread_mutex_unlock(&tgt_g.mtx);
    uint64_t split_ns = 0;
    if (split && tgt_split_exec(n->loc, n->k, e, n->msg, n->msg_len, n->bufs, n->nbufs,
                                n->wr, n->nwr, &split_ns)) {
        graph_msg_set(n, NULL, 0); /* the message may lie in the node's block */
        n->kernel_ns = split_ns;
        n->kst = OMPC_OK;
        node_finish(n);
        return;
    }
    if (split) {
        st = dm_acquire(tgt_rt->dm, e, n->bufs, n->nbufs);
        if (st != OMPC_OK)
            TGT_USER_ERROR(n->loc, "moving the region's data to executor %d failed: %s",
                           e, ompc_status_str(st));
    }
    if (dm_executor_rank(tgt_rt->dm, e) == tgt_rt->rank) {
        /* This rank executes (a one-rank job): the kernel runs here, on this
         * dispatch thread, not through an event to itself (a hand-off to
         * the gate and a handler thread and back per kernel). */
        uint64_t ns = 0;
        ompc_status_t kst = tgt_kernel_run(n->msg, n->msg_len, &ns, NULL);
        graph_msg_set(n, NULL, 0);
        n->kernel_ns = ns;
        n->kst = kst;
        node_finish(n);
        return;
    }
    read_backs(n, e);
    ev_handle_t *h = NULL;
    st = ev_execute(tgt_rt->ev, dm_executor_rank(tgt_rt->dm, e), tgt_rt->fn_kernel,
                    n->msg, n->msg_len, n->reply ? (void *)n->reply : &n->kernel_ns,
                    n->reply ? n->reply_len : sizeof(tgt_wire_kernel_reply_t), &h);
    graph_msg_set(n, NULL, 0);
    if (st != OMPC_OK)
        TGT_USER_ERROR(n->loc, "cannot launch kernel %s: %s", n->k->name,
                       ompc_status_str(st));
    pthread_mutex_lock(&tgt_g.mtx);
    n->h = h;
    pthread_mutex_unlock(&tgt_g.mtx);
    ev_handle_on_done(h, on_kernel_done, n);
}

static void node_finish(tgt_node_t *n)
{
    uint64_t t0 = ompc_now_ns();
    if (n->ahead.launched) {
        graph_ahead_finish(n);
        run_ops(n, n->npre, n->nops);
        if (n->nops > n->npre)
            graph_span("transfer", n, "out", t0, ops_bytes(n, n->npre, n->nops));
        node_done(n);
        return;
    }
    pthread_mutex_lock(&tgt_g.mtx);
    ev_handle_t *h = n->h;
    n->h = NULL;
    pthread_mutex_unlock(&tgt_g.mtx);
    bool measured = true; /* run here, without an event */
    if (h) {
        size_t got = ev_handle_result_size(h);
        ev_handle_release(h);
        measured = got == (n->reply ? n->reply_len : sizeof(tgt_wire_kernel_reply_t));
    }
    if (n->reply && measured) {
        tgt_wire_kernel_reply_t rep;
        memcpy(&rep, n->reply, sizeof(rep));
        n->kernel_ns = rep.kernel_ns;
        const char *p = (const char *)n->reply + sizeof(rep);
        size_t bytes = 0;
        for (size_t i = n->npre; i < n->nops; i++) {
            tgt_op_t *op = &n->ops[i];
            if (op->kind != OP_READ || !op->back)
                continue;
            op->data = (void *)p;
            p += tgt_wire_pad8(op->len);
            bytes += op->len;
        }
        dm_count_read(tgt_rt->dm, bytes);
    }
    if (n->kst != OMPC_OK)
        TGT_USER_ERROR(n->loc, "kernel %s failed on executor %d: %s", n->k->name, n->exec,
                       ompc_status_str(n->kst));
    atomic_fetch_add(&tgt_rt->kernels_run, 1);
    if (measured)
        tgt_model_learn(n->k, n->exec, (double)n->kernel_ns * 1e-9);
    dm_written_by(tgt_rt->dm, n->exec, n->wr, n->nwr, n->seq);
    /* Data that came with the launch lives on the executor only. */
    if (n->ninline)
        dm_written_by(tgt_rt->dm, n->exec, n->inl, n->ninline, n->seq);
    /* What a split kernel left unchanged stays valid on its helpers. */
    tgt_split_after(n->wr, n->nwr, n->seq);
    if (n->nwr)
        dm_unpin(tgt_rt->dm, n->wr, n->nwr);
    ops_unborrow(n);
    run_ops(n, n->npre, n->nops);
    if (n->nops > n->npre)
        graph_span("transfer", n, "out", t0, ops_bytes(n, n->npre, n->nops));
    node_done(n);
}

static void *dispatch_main(void *arg)
{
    char name[32];
    snprintf(name, sizeof(name), "dispatch %d", (int)(intptr_t)arg);
    ompc_log_set_thread_name(name);
    ompc_trace_thread_name(name);
    ompc_cpu_thread_begin(OMPC_CPU_DISPATCH);
    /* Where the head runs the kernels itself (one rank), their teams take
     * every CPU and a thread spinning for work took one from them. */
    uint64_t spin_ns = tgt_rt->executor ? 0 : ev_spin_us(tgt_rt->ev) * 1000u;
    uint64_t hot_until = 0;
    graph_takes_more = true;
    pthread_mutex_lock(&tgt_g.mtx);
    for (;;) {
        tgt_node_t *n;
        if (graph_lb_due()) {
            pthread_mutex_unlock(&tgt_g.mtx);
            graph_lb_flush();
            n = NULL;
        } else if ((n = graph_work_pop(&tgt_g.finished))) {
            pthread_mutex_unlock(&tgt_g.mtx);
            node_finish(n);
        } else if (!tgt_g.runners && (n = graph_work_pop(&tgt_g.ready))) {
            pthread_mutex_unlock(&tgt_g.mtx);
            node_start(n);
        } else if (tgt_g.stop) {
            break;
        } else if (ompc_now_ns() < hot_until &&
                   atomic_compare_exchange_strong(&tgt_g.hot, &(int){0}, 1)) {
            /* Work tends to come in bursts (a kernel finishes, its
             * successors become ready): one thread keeps looking for a
             * while instead of paying a wake-up per node. */
            pthread_mutex_unlock(&tgt_g.mtx);
            while (!atomic_load_explicit(&tgt_g.nwork, memory_order_acquire) &&
                   ompc_now_ns() < hot_until)
                sched_yield();
            atomic_fetch_sub(&tgt_g.hot, 1);
            hot_until = 0;
        } else {
            hot_until = 0;
            pthread_cond_wait(&tgt_g.cv_work, &tgt_g.mtx);
            continue;
        }
        pthread_mutex_lock(&tgt_g.mtx);
        if (n)
            hot_until = ompc_now_ns() + spin_ns;
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    ompc_cpu_thread_end();
    return NULL;
}

/* The recording thread launches its own window: the flush's first wave
 * and whatever each launch makes ready after it are planned and sent
 * here, while the nodes are still in this thread's cache.  Handed to the
 * dispatch threads, every node was a wake-up or a queue hand-off and its
 * lines moved to another core (docs/performance.md, "the recorder
 * launches its window").  Only what launches ahead is taken: the rest may
 * wait for transfers, which the program's thread should not. */
void graph_run_window(void)
{
    int64_t split = ompc_config_get()->split;
    if (tgt_rt->executor || !tgt_g.ahead || split >= 2 || split == -1) {
        /* Kernels run on the head (a waiter must not start them, see
         * help_once), nothing launches ahead, or a kernel may be split
         * (tgt_split_wanted decides once per launch, in node_start). */
        graph_flush();
        return;
    }
    graph_runs_ready = true;
    pthread_mutex_lock(&tgt_g.mtx);
    tgt_g.runners++;
    pthread_mutex_unlock(&tgt_g.mtx);
    graph_flush();
    queue_t left = {0};
    tgt_node_t *n;
    pthread_mutex_lock(&tgt_g.mtx);
    while ((n = graph_work_pop(&tgt_g.ready))) {
        bool small = graph_ahead_candidate(n);
        for (size_t i = 0; small && i < n->npre; i++)
            small = n->ops[i].kind == OP_DONE || n->ops[i].len <= INLINE_WRITE_MAX;
        if (!small) {
            graph_q_push(&left, n);
            continue;
        }
        pthread_mutex_unlock(&tgt_g.mtx);
        node_start(n);
        if (graph_lb_full())
            graph_lb_flush();
        pthread_mutex_lock(&tgt_g.mtx);
    }
    graph_runs_ready = false;
    tgt_g.runners--;
    while ((n = graph_q_pop(&left)))
        graph_work_push(&tgt_g.ready, n);
    graph_wake_dispatchers(tgt_g.ready.n);
    pthread_mutex_unlock(&tgt_g.mtx);
    graph_lb_flush();
}

void tgt_graph_init(void)
{
    graph_policy_choose();
    const dm_fault_write_hooks_t fw = {graph_ahead_fault_write_order,
                                       graph_ahead_fault_write_done};
    dm_set_fault_write_hooks(tgt_rt->dm, &fw);
    dm_set_fault_source(tgt_rt->dm, graph_ahead_fault_source);
    int ne = dm_num_executors(tgt_rt->dm);
    tgt_g.t0_ns = ompc_now_ns();
    tgt_g.busy_until = calloc((size_t)ne, sizeof(double));
    tgt_g.placed = calloc((size_t)ne, sizeof(int64_t));
    tgt_g.stats.tasks_per_exec = calloc((size_t)ne, sizeof(uint64_t));
    if (!tgt_g.busy_until || !tgt_g.placed || !tgt_g.stats.tasks_per_exec)
        ompc_fatal("out of memory starting the task graph");
    int nt = (int)ompc_config_get()->dispatch_threads;
    if (nt <= 0)
        nt = ne < 2 ? 2 : ne > 16 ? 16 : ne;
    tgt_g.threads = calloc((size_t)nt, sizeof(pthread_t));
    if (!tgt_g.threads)
        ompc_fatal("out of memory starting the task graph");
    for (int i = 0; i < nt; i++) {
        int rc = pthread_create(&tgt_g.threads[i], NULL, dispatch_main,
                                (void *)(intptr_t)i);
        if (rc != 0)
            ompc_fatal("cannot start dispatch thread: %s", strerror(rc));
        tgt_g.nthreads++;
    }
    tgt_g.ahead = ompc_config_get()->ahead && tgt_rt->size > 1;
    tgt_g.relaxed_sent = calloc((size_t)tgt_rt->size, sizeof(bool));
    if (!tgt_g.relaxed_sent)
        ompc_fatal("out of memory starting the task graph");
    tgt_g.active = true;
}

void tgt_graph_fini(void)
{
    if (!tgt_g.active)
        return;
    tgt_graph_sync_all();
    pthread_mutex_lock(&tgt_g.mtx);
    tgt_g.stop = true;
    pthread_cond_broadcast(&tgt_g.cv_work);
    pthread_mutex_unlock(&tgt_g.mtx);
    for (int i = 0; i < tgt_g.nthreads; i++)
        pthread_join(tgt_g.threads[i], NULL);
    pthread_mutex_lock(&tgt_g.mtx);
    tgt_g.active = false;
    free(tgt_g.threads);
    tgt_g.threads = NULL;
    tgt_g.nthreads = 0;
    for (size_t j = 0; j < tgt_g.nhw; j++)
        graph_node_unref(tgt_g.hw[j].n);
    tgt_g.nhw = tgt_g.caphw = 0;
    free(tgt_g.hw);
    tgt_g.hw = NULL;
    free(tgt_g.busy_until);
    free(tgt_g.placed);
    tgt_g.placed = NULL;
    free(tgt_g.relaxed_sent);
    tgt_g.relaxed_sent = NULL;
    tgt_g.busy_until = NULL;
    pthread_mutex_unlock(&tgt_g.mtx);
}
