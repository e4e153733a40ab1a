/* The task graph's recording (tgt_graph.h says what and why): one call
 * per construct turns its plan of data ops (tgt_map.c) into a node's ops,
 * taking the host bytes it copies, and adds the node with its edges: from
 * depend lists by OpenMP's rules, and from buffers.  Also the host bytes
 * that nodes not done will still write, which later copies to the device
 * and host tasks wait for. */
#include "tgt_graph_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A copy to the device of at least this many bytes is not snapshotted
 * when the same kernel node copies those host bytes back (map(tofrom:)):
 * it is sent from the program's memory when the node runs.  No program
 * may touch those bytes meanwhile: whatever OpenMP orders after the task
 * waits for the node (it will write them), and anything else races with
 * that write anyway.  Smaller copies are snapshotted (cheap, and they may
 * travel inside the launch). */
#define BORROW_MIN (64 * 1024)

/* ------------------------------------------------------------------ ops */
static tgt_op_t *op_add(tgt_node_t *n, op_kind_t kind)
{
    if (n->nops == n->capops) {
        n->capops = n->capops ? 2 * n->capops : 8;
        n->ops = graph_xrealloc(n->ops, n->capops * sizeof(*n->ops),
                                "recording data ops");
    }
    tgt_op_t *op = &n->ops[n->nops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    if (!n->post)
        n->npre = n->nops;
    return op;
}

/* A node not done that will write host bytes in [b, e), referenced; NULL
 * if none.  tgt_g.mtx held. */
static tgt_node_t *host_write_pending(uintptr_t b, uintptr_t e)
{
    for (size_t i = 0; i < tgt_g.nhw; i++)
        if (tgt_g.hw[i].begin < e && b < tgt_g.hw[i].end &&
            tgt_g.hw[i].n->state != N_DONE) {
            graph_node_ref(tgt_g.hw[i].n);
            return tgt_g.hw[i].n;
        }
    return NULL;
}

static void op_snapshot(tgt_op_t *op, const void *src)
{
    op->data = malloc(op->len);
    if (!op->data)
        ompc_fatal("out of memory capturing %zu bytes for the device", op->len);
    memcpy(op->data, src, op->len);
    op->borrowed = false;
}

/* Recording ends: a borrowed copy stays borrowed only if a copy back of
 * this node covers its host bytes (BORROW_MIN). */
static void ops_settle_borrowed(tgt_node_t *n)
{
    for (size_t i = 0; i < n->npre; i++) {
        tgt_op_t *w = &n->ops[i];
        if (w->kind != OP_WRITE || !w->borrowed)
            continue;
        uintptr_t b = (uintptr_t)w->data, e = b + w->len;
        bool back = false;
        for (size_t j = n->npre; j < n->nops && !back; j++) {
            const tgt_op_t *r = &n->ops[j];
            back = r->kind == OP_READ && (uintptr_t)r->host <= b &&
                   e <= (uintptr_t)r->host + r->len;
        }
        if (!back)
            op_snapshot(w, w->data);
    }
}

/* The host bytes [src, src+len) as a WRITE of node n: taken now, as
 * OpenMP says (or lent, BORROW_MIN).  If a node recorded earlier will
 * still copy results into them, that node runs first (the classic
 * map(tofrom) chain without enter data), also one parked before this
 * construct's ticket.  No lock held. */
static void op_take_write(tgt_node_t *n, const tgt_plan_op_t *po, uint64_t ticket)
{
    for (;;) {
        pthread_mutex_lock(&tgt_g.mtx);
        if (tgt_g.nparked_hw > 0)
            graph_parked_wait(graph_parked_hw(
                (uintptr_t)po->src, (uintptr_t)po->src + po->len, false, ticket));
        tgt_node_t *w = host_write_pending((uintptr_t)po->src,
                                           (uintptr_t)po->src + po->len);
        pthread_mutex_unlock(&tgt_g.mtx);
        if (!w)
            break;
        graph_flush();
        graph_wait_node(w);
        pthread_mutex_lock(&tgt_g.mtx);
        graph_node_unref(w);
        pthread_mutex_unlock(&tgt_g.mtx);
    }
    tgt_op_t *op = op_add(n, OP_WRITE);
    op->buf = po->buf;
    op->off = po->off;
    op->len = po->len;
    if (po->len >= BORROW_MIN && n->k) {
        /* ops_settle_borrowed decides, once it knows the node's copies
         * back. */
        op->data = (void *)(uintptr_t)po->src;
        op->borrowed = true;
        return;
    }
    op_snapshot(op, po->src);
}

/* The plan's ops become n's, in order, those after the kernel after it. */
static void ops_from_plan(tgt_node_t *n, const tgt_plan_t *p)
{
    for (size_t i = 0; i < p->nops; i++) {
        const tgt_plan_op_t *po = &p->ops[i];
        if (i == p->npre)
            n->post = true;
        tgt_op_t *op;
        switch (po->kind) {
        case TGT_PLAN_WRITE: op_take_write(n, po, p->ticket); break;
        case TGT_PLAN_WRITE_VALUE:
            op = op_add(n, OP_WRITE);
            op->buf = po->buf;
            op->off = po->off;
            op->len = po->len;
            op_snapshot(op, &po->value);
            break;
        case TGT_PLAN_READ:
            op = op_add(n, OP_READ);
            op->buf = po->buf;
            op->off = po->off;
            op->len = po->len;
            op->host = po->host;
            break;
        case TGT_PLAN_HOST_STORE:
            op = op_add(n, OP_HOST_STORE);
            op->host = po->host;
            op->data = (void *)(uintptr_t)po->value;
            op->len = sizeof(void *);
            break;
        case TGT_PLAN_FREE:
            n->post = true; /* frees come after everything else of the node */
            op = op_add(n, OP_FREE);
            op->buf = po->buf;
            break;
        }
    }
    if (p->post)
        n->post = true;
}

static void edge(tgt_node_t *pred, tgt_node_t *succ)
{
    if (!pred || pred == succ || pred->state == N_DONE)
        return;
    if (pred->succs.n && pred->succs.v[pred->succs.n - 1] == succ)
        return;
    for (size_t i = 0; i < succ->preds.n; i++)
        if (succ->preds.v[i] == pred)
            return;
    graph_list_push(&pred->succs, succ);
    graph_node_ref(pred);
    graph_list_push(&succ->preds, pred);
    succ->npred_left++;
    if (!pred->ahead.launched)
        succ->nunsent++;
}

static void edges_from(const node_list_t *l, tgt_node_t *succ)
{
    for (size_t i = 0; i < l->n; i++)
        edge(l->v[i], succ);
}

static void list_set_one(node_list_t *l, tgt_node_t *n)
{
    graph_list_clear(l);
    graph_node_ref(n);
    graph_list_push(l, n);
}

/* The entry of map m for key, created zeroed (size bytes, the map node
 * first) if there is none. */
static void *tmap_obtain(ompc_tmap_t *m, uintptr_t key, size_t size)
{
    ompc_tmap_node_t *t = graph_tmap_find(m, key);
    if (t)
        return t;
    t = calloc(1, size);
    if (!t)
        ompc_fatal("out of memory tracking the task graph");
    t->key = key;
    ompc_tmap_insert(m, t);
    return t;
}

_Static_assert(offsetof(dep_state_t, node) == 0, "tmap_obtain needs the node first");
_Static_assert(offsetof(buf_state_t, node) == 0, "tmap_obtain needs the node first");

static dep_state_t *dep_get(uintptr_t addr)
{
    return tmap_obtain(&tgt_g.deps, addr, sizeof(dep_state_t));
}

/* OpenMP's dependence rules for one depend item of node n (tgt_g.mtx held). */
static void dep_record(tgt_node_t *n, const tgt_dep_t *dp)
{
    if (dp->type == TGT_DEP_ALL) {
        for (tgt_node_t *o = tgt_g.live_head; o; o = o->lnext)
            edge(o, n);
        if (tgt_g.last_all)
            graph_node_unref(tgt_g.last_all);
        graph_node_ref(n);
        tgt_g.last_all = n;
        return;
    }
    dep_state_t *d = dep_get(dp->addr);
    switch (dp->type) {
    case TGT_DEP_IN:
        edges_from(&d->writers, n);
        if (d->readers.n >= d->prune_at) {
            /* An address only ever read (a parameter block every task
             * names with depend(in:)) kept every reader, and with it every
             * node, until the next barrier: memory grew with the run.  A
             * reader that is done orders nothing; amortised as for
             * buffer users. */
            graph_list_prune(&d->readers);
            d->prune_at = d->readers.n < 32 ? 64 : 2 * d->readers.n;
        }
        graph_node_ref(n);
        graph_list_push(&d->readers, n);
        break;
    case TGT_DEP_INOUTSET:
        if (d->set && d->readers.n == 0) {
            edges_from(&d->set_preds, n);
            graph_node_ref(n);
            graph_list_push(&d->writers, n);
            break;
        }
        edges_from(&d->readers, n);
        edges_from(&d->writers, n);
        /* The group's members all wait for what the first one waits for. */
        node_list_t preds = {0};
        const node_list_t *src = d->readers.n ? &d->readers : &d->writers;
        for (size_t i = 0; i < src->n; i++) {
            graph_node_ref(src->v[i]);
            graph_list_push(&preds, src->v[i]);
        }
        graph_list_free(&d->set_preds);
        d->set_preds = preds;
        list_set_one(&d->writers, n);
        graph_list_clear(&d->readers);
        d->set = true;
        break;
    default: /* out, inout, mutexinoutset (run in record order: exclusive) */
        edges_from(&d->readers, n);
        edges_from(&d->writers, n);
        list_set_one(&d->writers, n);
        graph_list_clear(&d->readers);
        graph_list_free(&d->set_preds);
        d->set = false;
        break;
    }
}

static buf_state_t *bstate_get(dm_buf_t *b)
{
    return tmap_obtain(&tgt_g.bstate, (uintptr_t)dm_buf_addr(b), sizeof(buf_state_t));
}

static void bstate_drop(buf_state_t *s)
{
    ompc_tmap_erase(&tgt_g.bstate, s->node.key);
    graph_buf_state_free(&s->node, NULL);
}

/* Buffer edges: a node with data ops on a buffer comes after every earlier
 * user of it (a FREE after the last kernel, a READ after the writes, as
 * reference counts order them in OpenMP), and users come after it. */
static void buf_record(tgt_node_t *n)
{
    for (size_t i = 0; i < n->nops; i++) {
        if (!n->ops[i].buf)
            continue;
        buf_state_t *s = bstate_get(n->ops[i].buf);
        if (s->last_op == n)
            continue;
        edge(s->last_op, n);
        edges_from(&s->users, n);
        graph_list_clear(&s->users);
        graph_node_unref(s->last_op);
        graph_node_ref(n);
        s->last_op = n;
    }
    for (size_t i = 0; i < n->nbufs; i++) {
        buf_state_t *s = bstate_get(n->bufs[i]);
        if (s->last_op == n)
            continue;
        edge(s->last_op, n);
        if (s->users.n >= s->prune_at) {
            /* Amortised: the users of a buffer every task touches can all
             * still be running (a whole window of them), so a prune per
             * record would cost the window's length each time. */
            graph_list_prune(&s->users);
            s->prune_at = s->users.n < 32 ? 64 : 2 * s->users.n;
        }
        graph_node_ref(n);
        graph_list_push(&s->users, n);
    }
    /* A freed buffer's address may be handed out again: forget it. */
    for (size_t i = 0; i < n->nops; i++)
        if (n->ops[i].kind == OP_FREE) {
            ompc_tmap_node_t *t = graph_tmap_find(&tgt_g.bstate,
                                                  (uintptr_t)dm_buf_addr(n->ops[i].buf));
            if (t)
                bstate_drop(OMPC_TMAP_ENTRY(t, buf_state_t, node));
        }
}

/* The node enters the graph: its seq, edges, host writes and place in
 * the pending array (tgt_g.mtx held, its turn). */
static void node_insert(tgt_node_t *n, const tgt_dep_t *deps, int ndeps, bool wait)
{
    n->seq = ++tgt_g.seq;
    if (tgt_g.last_all)
        edge(tgt_g.last_all, n);
    for (int d = 0; d < ndeps; d++)
        dep_record(n, &deps[d]);
    buf_record(n);
    for (size_t i = 0; i < n->nops; i++) {
        tgt_op_t *op = &n->ops[i];
        if (op->kind != OP_READ && op->kind != OP_HOST_STORE)
            continue;
        if (tgt_g.nhw == tgt_g.caphw) {
            /* Entries of finished nodes go first. */
            size_t k = 0;
            for (size_t j = 0; j < tgt_g.nhw; j++) {
                if (tgt_g.hw[j].n->state == N_DONE)
                    graph_node_unref(tgt_g.hw[j].n);
                else
                    tgt_g.hw[k++] = tgt_g.hw[j];
            }
            tgt_g.nhw = k;
            if (tgt_g.nhw == tgt_g.caphw) {
                tgt_g.caphw = tgt_g.caphw ? 2 * tgt_g.caphw : 64;
                tgt_g.hw = graph_xrealloc(tgt_g.hw, tgt_g.caphw * sizeof(*tgt_g.hw),
                                          "task graph");
            }
        }
        graph_node_ref(n);
        tgt_g.hw[tgt_g.nhw++] = (host_write_t){(uintptr_t)op->host,
                                               (uintptr_t)op->host + op->len, n};
    }
    /* Ops on the head after its predecessors: their completions hold it
     * up (and, through it, its successors). */
    n->hostside = !graph_ahead_candidate(n);
    graph_live_append(n);
    n->state = N_PENDING;
    if (tgt_g.npend == tgt_g.cappend) {
        tgt_g.cappend = tgt_g.cappend ? 2 * tgt_g.cappend : 256;
        tgt_g.pend = graph_xrealloc(tgt_g.pend, tgt_g.cappend * sizeof(*tgt_g.pend),
                                    "task graph");
    }
    tgt_g.pend[tgt_g.npend++] = n;
    tgt_g.stats.nodes++;
    if (n->k)
        tgt_g.stats.kernels++;
    uint64_t mem = atomic_load(&tgt_g.stats.in_memory);
    if (mem > tgt_g.stats.in_memory_peak)
        tgt_g.stats.in_memory_peak = mem;
    if (wait) {
        graph_node_ref(n); /* its thread's, until it saw it run */
        graph_need_add(1); /* before its launch, which then says so */
    }
}

/* n, built before the constructs mapped before it are in the graph, waits
 * for them in tgt_g.parked with a copy of its depend list (the task's own
 * is gone once it returns); its thread goes on (tgt_g.mtx held). */
static void node_park(tgt_node_t *n, uint64_t ticket, const tgt_dep_t *deps, int ndeps,
                      bool wait)
{
    uint64_t ahead = ticket - tgt_g.rec_turn;
    if (ahead > tgt_g.capparked) {
        size_t cap = tgt_g.capparked ? 2 * tgt_g.capparked : 8;
        while (cap < ahead)
            cap *= 2;
        tgt_node_t **v = calloc(cap, sizeof(*v));
        if (!v)
            ompc_fatal("out of memory recording a target task");
        for (size_t i = 0; i < tgt_g.capparked; i++)
            if (tgt_g.parked[i])
                v[tgt_g.parked[i]->park.ticket & (cap - 1)] = tgt_g.parked[i];
        free(tgt_g.parked);
        tgt_g.parked = v;
        tgt_g.capparked = cap;
    }
    n->park.ticket = ticket;
    n->park.wait = wait;
    n->park.hw = false;
    for (size_t i = 0; i < n->nops; i++)
        n->park.hw |= n->ops[i].kind == OP_READ || n->ops[i].kind == OP_HOST_STORE;
    tgt_g.nparked_hw += n->park.hw;
    n->park.ndeps = ndeps;
    if (ndeps > 0) {
        n->park.deps = malloc((size_t)ndeps * sizeof(*deps));
        if (!n->park.deps)
            ompc_fatal("out of memory recording a target task");
        memcpy(n->park.deps, deps, (size_t)ndeps * sizeof(*deps));
    }
    tgt_g.parked[ticket & (tgt_g.capparked - 1)] = n;
    tgt_g.nparked++;
    if (ticket > tgt_g.park_max)
        tgt_g.park_max = ticket;
}

/* Nodes enter the graph in mapping order (ticket order): the constructs
 * mapped before this one are in it, their buffer edges and host writes
 * with them.  A node whose turn has not come is parked instead, and the
 * construct that enters the node before it enters it too: no recorder
 * waits for another one to build its node (tgt_g.mtx held). */
static void node_enter(tgt_node_t *n, uint64_t ticket, const tgt_dep_t *deps, int ndeps,
                       bool wait)
{
    if (tgt_g.rec_turn + 1 != ticket) {
        node_park(n, ticket, deps, ndeps, wait);
        return;
    }
    node_insert(n, deps, ndeps, wait);
    tgt_g.rec_turn = ticket;
    while (tgt_g.nparked > 0) {
        tgt_node_t **slot = &tgt_g.parked[(tgt_g.rec_turn + 1) & (tgt_g.capparked - 1)];
        tgt_node_t *m = *slot;
        if (!m)
            break;
        *slot = NULL;
        tgt_g.nparked--;
        tgt_g.nparked_hw -= m->park.hw;
        node_insert(m, m->park.deps, m->park.ndeps, m->park.wait);
        free(m->park.deps);
        m->park.deps = NULL;
        tgt_g.rec_turn++;
    }
    if (tgt_g.turn_waiters > 0)
        pthread_cond_broadcast(&tgt_g.cv_turn);
}

void tgt_rec_construct(const tgt_ident_t *loc, const tgt_kernel_t *k, tgt_plan_t *p,
                       tgt_mapped_t *m, dm_buf_t **wr, size_t nwr, bool wait)
{
    /* One block: the node, its buffers, those it may write, one slot per
     * buffer for each of launch-ahead's lists (tgt_ahead_head.c), and a
     * kernel's launch message (written here, once: it was a block of its
     * own, copied again into the launch ahead and into its batch). */
    size_t nb = m ? m->nbufs : 0, per = nb ? nb : 1;
    size_t msg_len = k && m ? tgt_wire_kernel_size((uint32_t)m->nkargs) : 0;
    size_t tail = per * sizeof(uint64_t) + (nb + nwr + 2 * per) * sizeof(void *) +
                  msg_len;
    tgt_node_t *n = graph_node_block(sizeof(*n) + tail);
    n->ahead.pulled_tag = (uint64_t *)n->tail;
    dm_buf_t **slot = (dm_buf_t **)(n->tail + per * sizeof(uint64_t));
    n->ahead.pulled = slot;
    n->ahead.abufs = (struct ahead_buf **)(slot + per);
    n->bufs = slot + 2 * per;
    n->wr = n->bufs + nb;
    if (msg_len) {
        n->msg = (char *)(n->wr + nwr);
        n->msg_len = msg_len;
        n->msg_inl = true;
        tgt_wire_kernel_put((unsigned char *)n->msg, (uint32_t)(k - tgt_rt->kernels),
                            (uint32_t)m->nkargs, m->kargs);
    }
    n->preds = (node_list_t){n->inl_preds, 0, NODE_INL_EDGES, true};
    n->succs = (node_list_t){n->inl_succs, 0, NODE_INL_EDGES, true};
    atomic_init(&n->refs, 1); /* the graph's; dropped when done */
    atomic_fetch_add(&tgt_g.stats.in_memory, 1);
    n->state = N_RECORDING;
    n->loc = loc;
    n->k = k;
    n->exec = -1;
    n->sched.placed_on = -1;
    ops_from_plan(n, p);
    if (m) {
        /* firstprivate copies live as long as the node */
        n->post = true;
        for (size_t i = 0; i < m->ntemps; i++) {
            tgt_op_t *op = op_add(n, OP_FREE);
            op->buf = m->temps[i];
        }
        m->ntemps = 0;
        if (nb)
            memcpy(n->bufs, m->bufs, nb * sizeof(*n->bufs));
        n->nbufs = nb;
        tgt_mapped_release(m, p);
    }
    if (nwr)
        memcpy(n->wr, wr, nwr * sizeof(*n->wr));
    n->nwr = nwr;
    ops_settle_borrowed(n);
    int ndeps;
    const tgt_dep_t *deps;
    tgt_ompt_current_deps(&ndeps, &deps);

    pthread_mutex_lock(&tgt_g.mtx);
    node_enter(n, p->ticket, deps, ndeps, wait);
    if (wait && tgt_g.nparked > 0) /* its thread waits for n: n must be in the graph */
        graph_parked_wait(p->ticket);
    size_t npend = tgt_g.npend;
    uint64_t nlive = tgt_g.nlive;
    pthread_mutex_unlock(&tgt_g.mtx);
    tgt_plan_end(p);

    int64_t window = ompc_config_get()->graph_window;
    if (wait) {
        graph_flush_keep(n);
        graph_wait_node(n);
        pthread_mutex_lock(&tgt_g.mtx);
        graph_need_add(-1);
        graph_node_unref(n);
        pthread_mutex_unlock(&tgt_g.mtx);
        return;
    }
    if ((int64_t)npend >= window)
        graph_run_window();
    if ((int64_t)nlive > 4 * window) {
        /* Back-pressure: a program that records much faster than the
         * cluster runs would otherwise hold its whole future in memory. */
        graph_run_window();
        pthread_mutex_lock(&tgt_g.mtx);
        tgt_g.room_waiters++;
        while ((int64_t)tgt_g.nlive > 2 * window)
            pthread_cond_wait(&tgt_g.cv_room, &tgt_g.mtx);
        tgt_g.room_waiters--;
        pthread_mutex_unlock(&tgt_g.mtx);
    }
}
