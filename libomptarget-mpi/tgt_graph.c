/* The deferred task graph's core (tgt_graph.h says what the graph is,
 * tgt_graph_internal.h how its files divide the work): the graph's state,
 * and a node's life in it: references, lists and queues, the live list,
 * when a node may be dispatched and who is woken for it, and the nodes
 * recorded ahead of their turn (parked: tgt_record.c). */
#include "tgt_graph_internal.h"

#include "ompc_trace.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tgt_graph_state_t tgt_g = {.mtx = PTHREAD_MUTEX_INITIALIZER,
                           .cv_work = PTHREAD_COND_INITIALIZER,
                           .cv_done = PTHREAD_COND_INITIALIZER,
                           .cv_room = PTHREAD_COND_INITIALIZER,
                           .cv_turn = PTHREAD_COND_INITIALIZER,
                           .sync_upto = UINT64_MAX,
                           .sched_mtx = PTHREAD_MUTEX_INITIALIZER,
                           .ahead_mtx = PTHREAD_MUTEX_INITIALIZER};

/* ---------------------------------------------------- lists and queues */
ompc_tmap_node_t *graph_tmap_find(ompc_tmap_t *m, uintptr_t key)
{
    return ompc_tmap_find(m, key);
}

void *graph_xrealloc(void *p, size_t n, const char *what)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        ompc_fatal("out of memory: %s", what);
    return q;
}

void graph_list_push(node_list_t *l, tgt_node_t *n)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4;
        if (l->inl) { /* the node's own slots: copied out, never freed */
            tgt_node_t **v = graph_xrealloc(NULL, l->cap * sizeof(*l->v), "task graph");
            memcpy(v, l->v, l->n * sizeof(*l->v));
            l->v = v;
            l->inl = false;
        } else {
            l->v = graph_xrealloc(l->v, l->cap * sizeof(*l->v), "task graph");
        }
    }
    l->v[l->n++] = n;
}

/* ------------------------------------------------------- node blocks */
/* A node's block (the node, its lists and its launch message) is larger
 * than what malloc keeps per thread, so each one went through the shared
 * heap's bins, and the recording thread, which both allocates nodes and
 * frees most of them (the last reference is usually a buffer's users list,
 * pruned while recording), paid for that twice per task.  A thread that
 * has allocated a node keeps the blocks it frees (up to NODE_CACHE_MAX,
 * about as many as the graph holds at once) for its next ones; other
 * threads free theirs as usual.  Not under ASan, which should see every
 * node's use after free. */
#if defined(__SANITIZE_ADDRESS__)
#define NODE_CACHE_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NODE_CACHE_OFF 1
#endif
#endif
/* At most this many blocks kept per thread: a prune frees the nodes of a
 * whole window or more at once, and the recorder allocates them again one
 * by one; a few dozen blocks caught a few of each burst. */
#define NODE_CACHE_MAX 4096
#define NODE_ROUND 256 /* blocks sized in steps: nodes differ by a few slots */

#ifndef NODE_CACHE_OFF
/* A kept block starts with this. */
typedef struct node_free {
    struct node_free *next;
    size_t cap;
} node_free_t;

typedef struct node_cache {
    bool on; /* this thread allocates nodes */
    size_t n;
    node_free_t *head;
} node_cache_t;

static _Thread_local node_cache_t node_cache;
static pthread_key_t node_cache_key;
static pthread_once_t node_cache_once = PTHREAD_ONCE_INIT;

/* A thread that ends gives its blocks back. */
static void node_cache_drain(void *arg)
{
    node_cache_t *c = arg;
    while (c->head) {
        node_free_t *f = c->head;
        c->head = f->next;
        free(f);
    }
    c->n = 0;
    c->on = false;
}

static void node_cache_key_make(void)
{
    if (pthread_key_create(&node_cache_key, node_cache_drain) != 0)
        ompc_fatal("cannot create a thread key for node blocks");
}
#endif

void *graph_node_block(size_t size)
{
#ifndef NODE_CACHE_OFF
    node_cache_t *c = &node_cache;
    if (!c->on) {
        pthread_once(&node_cache_once, node_cache_key_make);
        c->on = pthread_setspecific(node_cache_key, c) == 0;
    }
    node_free_t *f = c->head;
    if (f) {
        c->head = f->next;
        c->n--;
        if (f->cap >= size) {
            memset(f, 0, size);
            return f;
        }
        free(f); /* a smaller node's: it would stay on top */
    }
    size = (size + NODE_ROUND - 1) / NODE_ROUND * NODE_ROUND;
#endif
    void *b = calloc(1, size);
    if (!b)
        ompc_fatal("out of memory recording a target task");
    return b;
}

static void node_block_free(void *b)
{
#ifndef NODE_CACHE_OFF
    node_cache_t *c = &node_cache;
    if (c->on && c->n < NODE_CACHE_MAX) {
        node_free_t *f = b;
        f->cap = malloc_usable_size(b);
        f->next = c->head;
        c->head = f;
        c->n++;
        return;
    }
#endif
    free(b);
}

void graph_node_ref(tgt_node_t *n) { atomic_fetch_add(&n->refs, 1); }

void graph_node_unref(tgt_node_t *n)
{
    if (!n || atomic_fetch_sub(&n->refs, 1) != 1)
        return;
    for (size_t i = 0; i < n->nops; i++)
        if (n->ops[i].kind == OP_WRITE && !n->ops[i].borrowed)
            free(n->ops[i].data);
    free(n->ops);
    if (!n->preds.inl)
        free(n->preds.v);
    if (!n->succs.inl)
        free(n->succs.v);
    graph_msg_set(n, NULL, 0);
    free(n->reply);
    node_block_free(n); /* with bufs, wr and the ahead lists (tail) */
    atomic_fetch_sub(&tgt_g.stats.in_memory, 1);
}

/* Drop a list's references (caller holds tgt_g.mtx or owns the list). */
void graph_list_clear(node_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        graph_node_unref(l->v[i]);
    l->n = 0;
}

void graph_list_free(node_list_t *l)
{
    graph_list_clear(l);
    if (!l->inl)
        free(l->v);
    l->v = NULL;
    l->cap = 0;
    l->inl = false;
}

/* Keep only nodes not done (they alone can still order anything). */
void graph_list_prune(node_list_t *l)
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i]->state == N_DONE)
            graph_node_unref(l->v[i]);
        else
            l->v[k++] = l->v[i];
    }
    l->n = k;
}

/* The ready and finished queues, counted for threads that spin. */
void graph_work_push(queue_t *q, tgt_node_t *n)
{
    graph_q_push(q, n);
    atomic_fetch_add_explicit(&tgt_g.nwork, 1, memory_order_release);
}

tgt_node_t *graph_work_pop(queue_t *q)
{
    tgt_node_t *n = graph_q_pop(q);
    if (n)
        atomic_fetch_sub_explicit(&tgt_g.nwork, 1, memory_order_relaxed);
    return n;
}

void graph_q_push(queue_t *q, tgt_node_t *n)
{
    n->qnext = NULL;
    if (q->tail)
        q->tail->qnext = n;
    else
        q->head = n;
    q->tail = n;
    q->n++;
}

tgt_node_t *graph_q_pop(queue_t *q)
{
    tgt_node_t *n = q->head;
    if (n) {
        q->head = n->qnext;
        if (!q->head)
            q->tail = NULL;
        q->n--;
    }
    return n;
}

double graph_now(void) { return (double)(ompc_now_ns() - tgt_g.t0_ns) * 1e-9; }

bool tgt_graph_active(void) { return tgt_g.active; }

const tgt_graph_stats_t *tgt_graph_stats(void) { return &tgt_g.stats; }

/* Set on a thread that takes queued work after the node it runs (dispatch
 * threads, helping waiters): it need not wake another for the first.  A
 * waiter that stops helping hands what is left over (stop_helping). */
_Thread_local bool graph_takes_more;
_Thread_local bool graph_runs_ready;

/* ------------------------------------------------------ ordering state */
void graph_buf_state_free(ompc_tmap_node_t *t, void *arg)
{
    (void)arg;
    buf_state_t *s = OMPC_TMAP_ENTRY(t, buf_state_t, node);
    graph_node_unref(s->last_op);
    graph_list_free(&s->users);
    free(s);
}

void graph_dep_state_free(ompc_tmap_node_t *t, void *arg)
{
    (void)arg;
    dep_state_t *d = OMPC_TMAP_ENTRY(t, dep_state_t, node);
    graph_list_free(&d->writers);
    graph_list_free(&d->readers);
    graph_list_free(&d->set_preds);
    free(d);
}

/* ----------------------------------------------------------- live nodes */
/* tgt_g.mtx held: the head's need of prompt completions goes up or down by
 * d.  Workers hold completions while more work launched there is under
 * way; how long depends on whether the head may be waiting for one
 * (tgt_ahead.c).  A rise from none is posted to every worker whose last
 * batch said "not needed"; the generation orders that post against
 * batches on other communicators. */
void graph_need_add(int d)
{
    int old = tgt_g.need;
    tgt_g.need += d;
    OMPC_ASSERT(tgt_g.need >= 0);
    if ((old > 0) == (tgt_g.need > 0))
        return;
    tgt_g.need_gen++;
    if (tgt_g.need == 0 || !tgt_g.relaxed_sent)
        return;
    for (int r = 1; r < tgt_rt->size; r++) {
        if (!tgt_g.relaxed_sent[r])
            continue;
        tgt_g.relaxed_sent[r] = false;
        tgt_wire_prompt_t p = {tgt_g.need_gen};
        ompc_status_t st = ev_post(tgt_rt->ev, r, tgt_rt->fn_ahead_prompt, &p, sizeof(p));
        if (st != OMPC_OK)
            ompc_fatal("cannot ask rank %d for prompt completions: %s", r,
                       ompc_status_str(st));
    }
}

void graph_live_append(tgt_node_t *n)
{
    n->lprev = tgt_g.live_tail;
    n->lnext = NULL;
    if (tgt_g.live_tail)
        tgt_g.live_tail->lnext = n;
    else
        tgt_g.live_head = n;
    tgt_g.live_tail = n;
    tgt_g.nlive++;
    if (n->hostside)
        graph_need_add(1);
}

void graph_live_remove(tgt_node_t *n)
{
    if (n->lprev)
        n->lprev->lnext = n->lnext;
    else
        tgt_g.live_head = n->lnext;
    if (n->lnext)
        n->lnext->lprev = n->lprev;
    else
        tgt_g.live_tail = n->lprev;
    tgt_g.nlive--;
    if (n->hostside)
        graph_need_add(-1);
}

/* ------------------------------------------------------------ readiness */
/* A kernel whose only data ops are small copies that travel with the
 * launch and frees after it can go to its executor before its
 * predecessors are done: nothing of it runs on the head before or after
 * the kernel that a predecessor could still change. */
bool graph_ahead_candidate(const tgt_node_t *n)
{
    if (!tgt_g.ahead || !n->k)
        return false;
    for (size_t i = 0; i < n->nops; i++) {
        op_kind_t k = n->ops[i].kind;
        if (i < n->npre ? k != OP_WRITE && k != OP_DONE : k != OP_FREE)
            return false;
    }
    return true;
}

/* tgt_g.mtx held: whether a waiting node may be dispatched now. */
static bool can_start(const tgt_node_t *n)
{
    return n->npred_left == 0 || (n->nunsent == 0 && graph_ahead_candidate(n));
}

/* tgt_g.mtx held: queue a waiting node that may be dispatched now; true if
 * it was. */
bool graph_make_ready(tgt_node_t *n)
{
    if (n->state != N_WAITING || !can_start(n))
        return false;
    n->state = N_READY;
    graph_work_push(&tgt_g.ready, n);
    return true;
}

/* tgt_g.mtx held: one wake-up per node queued, all threads for several. */
void graph_wake_dispatchers(size_t woken)
{
    if (graph_takes_more && woken > 0)
        woken--;
    if (woken == 1)
        pthread_cond_signal(&tgt_g.cv_work);
    else if (woken > 1)
        pthread_cond_broadcast(&tgt_g.cv_work);
}

/* tgt_g.mtx held: a node whose kernel is over goes to be finished; a thread
 * waiting for it takes it itself (it may have seen its kernel event
 * complete before this ran, and sleeps on cv_done then; or it waits for a
 * node launched ahead, whose completion the gate thread brings here):
 * one wake-up, not a dispatch thread's and then the waiter's. */
bool graph_push_finished_quiet(tgt_node_t *n)
{
    graph_work_push(&tgt_g.finished, n);
    if (n->waited || n->nwaiters > 0) {
        pthread_cond_broadcast(&tgt_g.cv_done);
        return false;
    }
    return true;
}

void graph_push_finished(tgt_node_t *n)
{
    if (graph_push_finished_quiet(n))
        pthread_cond_signal(&tgt_g.cv_work);
}

void graph_span(const char *cat, const tgt_node_t *n, const char *what, uint64_t t0,
                size_t bytes)
{
    if (!ompc_trace_on())
        return;
    char name[160];
    snprintf(name, sizeof(name), "%s %s", what, n->k ? n->k->name : "data");
    const ompc_trace_arg_t args[] = {OMPC_TRACE_U64("task", n->seq),
                                     OMPC_TRACE_I64("executor", n->exec),
                                     OMPC_TRACE_U64("bytes", bytes)};
    ompc_trace_span(cat, name, t0, ompc_now_ns(), args, OMPC_TRACE_NARGS(args));
}

/* ------------------------------------------------------- parked nodes */
/* Nodes recorded ahead of their turn (tgt_record.c parks them). */
uint64_t graph_parked_hw(uintptr_t b, uintptr_t e, bool all, uint64_t below)
{
    uint64_t t = 0;
    for (size_t i = 0; tgt_g.nparked_hw > 0 && i < tgt_g.capparked; i++) {
        const tgt_node_t *m = tgt_g.parked[i];
        if (!m || !m->park.hw || m->park.ticket >= below || m->park.ticket <= t)
            continue;
        for (size_t j = 0; j < m->nops; j++) {
            const tgt_op_t *op = &m->ops[j];
            if ((op->kind == OP_READ || op->kind == OP_HOST_STORE) &&
                (all || ((uintptr_t)op->host < e && b < (uintptr_t)op->host + op->len))) {
                t = m->park.ticket;
                break;
            }
        }
    }
    return t;
}

uint64_t graph_parked_dep(const tgt_dep_t *deps, int nd)
{
    uint64_t t = 0;
    for (size_t i = 0; tgt_g.nparked > 0 && i < tgt_g.capparked; i++) {
        const tgt_node_t *m = tgt_g.parked[i];
        if (!m || m->park.ticket <= t)
            continue;
        for (int a = 0; a < m->park.ndeps && t != m->park.ticket; a++)
            for (int d = 0; d < nd; d++)
                if (deps[d].type == TGT_DEP_ALL || m->park.deps[a].type == TGT_DEP_ALL ||
                    deps[d].addr == m->park.deps[a].addr) {
                    t = m->park.ticket;
                    break;
                }
    }
    return t;
}

void graph_parked_wait(uint64_t below)
{
    uint64_t upto = tgt_g.park_max < below ? tgt_g.park_max : below;
    if (tgt_g.rec_turn >= upto)
        return;
    tgt_g.turn_waiters++;
    while (tgt_g.rec_turn < upto)
        pthread_cond_wait(&tgt_g.cv_turn, &tgt_g.mtx);
    tgt_g.turn_waiters--;
}
