/* Flush points of the task graph (tgt_graph.h says what and why): the
 * pending nodes are placed on executors by the configured policy
 * (scheduler/ompc_sched.h) from the cost model's estimates, and those
 * whose predecessors allow it are queued for the dispatch threads.  Also
 * what a flush knows of the executors between flushes: when each is busy
 * until, and how many placed kernels it has not finished.
 *
 * The policy is chosen once, at start-up, from the scheduler's table; a
 * flush asks it only what it needs (sched_policy_t.needs), never which
 * one it is, so a new policy needs no change here. */
#include "tgt_graph_internal.h"

#include "ompc_sched.h"
#include "ompc_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void graph_policy_choose(void)
{
    const char *name = ompc_config_get()->scheduler;
    const sched_policy_t *chosen = NULL;
    /* The names in the table's order, for the message: "a, b or c". */
    char expected[256] = "";
    size_t len = 0, n = 0;
    while (sched_policy_at(n))
        n++;
    for (size_t i = 0; i < n; i++) {
        const sched_policy_t *p = sched_policy_at(i);
        if (!chosen && strcasecmp(name, p->name) == 0)
            chosen = p;
        int w = snprintf(expected + len, sizeof(expected) - len, "%s%s",
                         i == 0       ? ""
                         : i + 1 == n ? " or "
                                      : ", ",
                         p->name);
        if (w > 0 && (size_t)w < sizeof(expected) - len)
            len += (size_t)w;
    }
    if (!chosen)
        ompc_fatal_user("environment variable OMPC_SCHEDULER=\"%s\": expected %s", name,
                        expected);
    tgt_g.policy = chosen;
    tgt_g.stats.policy = chosen->name;
}

/* ----------------------------------------------------------- scheduling */
/* busy_until is an estimate, made when the work was placed.  An executor
 * whose placed kernels are all done is idle now whatever the estimate
 * said: a kernel that ran faster than its learnt mean (a first run, with
 * its thread start-up, weighs on the mean for MODEL_WINDOW runs) left it
 * in the future, and the next flush saw the executor that holds the data
 * as busy and moved the data to an idle one, every synchronous kernel a
 * flush of its own (tgt_g.mtx held for both). */
void graph_placed_add(tgt_node_t *n, int w)
{
    n->sched.placed_on = w;
    tgt_g.placed[w]++;
}

void graph_placed_drop(tgt_node_t *n)
{
    int w = n->sched.placed_on;
    if (w < 0)
        return;
    n->sched.placed_on = -1;
    if (--tgt_g.placed[w] == 0) {
        double now = graph_now();
        if (tgt_g.busy_until[w] > now)
            tgt_g.busy_until[w] = now;
    }
}

/* Bytes of buffers pred may write that succ uses. */
static double shared_bytes(const tgt_node_t *pred, const tgt_node_t *succ)
{
    double bytes = 0;
    for (size_t i = 0; i < pred->nwr; i++)
        for (size_t j = 0; j < succ->nbufs; j++)
            if (pred->wr[i] == succ->bufs[j])
                bytes += (double)dm_buf_size(succ->bufs[j]);
    for (size_t i = 0; i < pred->nops; i++)
        if (pred->ops[i].kind == OP_WRITE || pred->ops[i].kind == OP_DONE)
            for (size_t j = 0; j < succ->nbufs; j++)
                if (pred->ops[i].buf == succ->bufs[j])
                    bytes += (double)pred->ops[i].len;
    return bytes;
}

/* From the batch's link matrices (P x P, zero on the diagonal). */
static double comm_time(const double *lat, const double *ibw, int P, int from, int to,
                        double bytes)
{
    if (from == to || from < 0)
        return 0;
    return lat[from * P + to] + bytes * ibw[from * P + to];
}

static void edge_push(sched_edge_t **v, size_t *n, size_t *cap, sched_edge_t e)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *v = graph_xrealloc(*v, *cap * sizeof(**v), "scheduling");
    }
    (*v)[(*n)++] = e;
}

/* Place one batch of pending nodes (sched_mtx held, tgt_g.mtx not). */
static void schedule_batch(tgt_node_t **v, size_t n, uint64_t batch,
                           const tgt_node_t *mine)
{
    int P = dm_num_executors(tgt_rt->dm);
    const ompc_config_t *cfg = ompc_config_get();
    const sched_policy_t *pol = tgt_g.policy;
    size_t np = n * (size_t)P;
    double *cost = calloc(np, sizeof(double));
    double *ready = calloc(np, sizeof(double));
    double *avail = calloc((size_t)P, sizeof(double));
    double *lat = calloc((size_t)P * (size_t)P, sizeof(double));
    double *ibw = calloc((size_t)P * (size_t)P, sizeof(double));
    /* Per worker: its latency and inverse bandwidth, the bytes of a node's
     * buffers valid there, and the cost row of the last kernel priced.
     * The model and the data manager are read once per batch, or per
     * kernel or node, not per node and worker under their locks each time
     * (docs/performance.md, "the head's CPU per task, continued"). */
    double *latw = calloc((size_t)P, sizeof(double));
    double *ibww = calloc((size_t)P, sizeof(double));
    double *kcost = calloc((size_t)P, sizeof(double));
    size_t *validw = calloc((size_t)P, sizeof(size_t));
    const tgt_kernel_t *kcost_of = NULL;
    int32_t *worker = calloc(n, sizeof(int32_t));
    double *start = calloc(n, sizeof(double));
    double *finish = calloc(n, sizeof(double));
    bool *dataonly = calloc(n, sizeof(bool));
    size_t nedges = 0, capedges = 0;
    sched_edge_t *edges = NULL;
    if (!cost || !ready || !avail || !lat || !ibw || !worker || !start || !finish ||
        !dataonly || !latw || !ibww || !kcost || !validw)
        ompc_fatal("out of memory scheduling %zu tasks", n);
    for (int w = 0; w < P; w++) {
        latw[w] = tgt_model_lat(w);
        ibww[w] = tgt_model_inv_bw(w);
    }
    for (int p = 0; p < P; p++)
        for (int q = 0; q < P; q++)
            if (p != q) {
                lat[p * P + q] = 0.5 * (latw[p] + latw[q]);
                ibw[p * P + q] = 0.5 * (ibww[p] + ibww[q]);
            }
    double now = graph_now();
    pthread_mutex_lock(&tgt_g.mtx);
    for (int p = 0; p < P; p++)
        avail[p] = tgt_g.busy_until[p] > now ? tgt_g.busy_until[p] - now : 0;
    for (size_t i = 0; i < n; i++) {
        tgt_node_t *t = v[i];
        for (size_t j = 0; j < t->preds.n; j++) {
            tgt_node_t *p = t->preds.v[j];
            if (p->state == N_DONE)
                continue;
            /* Data-only nodes move data between head and device whichever
             * worker "runs" them: no worker-to-worker cost on their edges. */
            double bytes = p->k && t->k ? shared_bytes(p, t) : 0;
            if (p->sched.batch == batch) {
                edge_push(&edges, &nedges, &capedges,
                          (sched_edge_t){p->sched.idx, (int64_t)i, 0, bytes});
                continue;
            }
            double f = p->sched.est_finish > now ? p->sched.est_finish - now : 0;
            for (int w = 0; w < P; w++) {
                double r = f + comm_time(lat, ibw, P, p->exec, w, bytes);
                if (r > ready[i * (size_t)P + (size_t)w])
                    ready[i * (size_t)P + (size_t)w] = r;
            }
        }
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    /* A policy that compares workers by how much later their inputs
     * arrive, to follow the data, gets links priced alike: equal bytes to
     * move, equal arrival.  Priced with each link's own probe, bytes that
     * no worker holds (a map(to:) from the head) arrived later on the
     * worker whose probe was slower, and such a policy put every task of
     * an independent graph on the other (docs/performance.md, "the cost
     * model under load"). */
    double lat_all = 0, ibw_all = 0;
    bool alike = (pol->needs & SCHED_NEEDS_ALIKE_LINKS) != 0;
    for (int w = 0; alike && w < P; w++) {
        lat_all += latw[w] / P;
        ibw_all += ibww[w] / P;
    }
    for (size_t i = 0; i < n; i++) {
        tgt_node_t *t = v[i];
        double total = 0;
        dataonly[i] = !t->k;
        for (size_t j = 0; j < t->nbufs; j++)
            total += (double)dm_buf_size(t->bufs[j]);
        if (t->k && t->k != kcost_of) {
            for (int w = 0; w < P; w++)
                kcost[w] = tgt_model_cost(t->k, w);
            kcost_of = t->k;
        }
        if (t->nbufs && P > 1)
            dm_bytes_valid_each(tgt_rt->dm, t->bufs, t->nbufs, validw);
        for (int w = 0; w < P; w++) {
            cost[i * (size_t)P + (size_t)w] = t->k ? kcost[w] : 0;
            if (t->nbufs && P > 1) {
                /* Inputs from outside the batch that w does not hold yet. */
                double miss = total - (double)validw[w];
                if (miss > 0) {
                    double r = alike ? lat_all + miss * ibw_all
                                     : latw[w] + miss * ibww[w];
                    if (r > ready[i * (size_t)P + (size_t)w])
                        ready[i * (size_t)P + (size_t)w] = r;
                }
            }
        }
    }
    bool any_pref = false;
    for (size_t i = 0; i < n; i++)
        any_pref |= v[i]->sched.pref >= 0;
    int32_t *prefer = any_pref ? malloc(n * sizeof(int32_t)) : NULL;
    if (any_pref && !prefer)
        ompc_fatal("out of memory scheduling %zu tasks", n);
    for (size_t i = 0; prefer && i < n; i++)
        prefer[i] = v[i]->sched.pref;
    sched_graph_t g = {
        .nworkers = P,
        .ntasks = (int64_t)n,
        .cost = cost,
        .pinned = NULL,
        .ready = ready,
        .avail = avail,
        .nedges = (int64_t)nedges,
        .edges = edges,
        .comm_lat = lat,
        .comm_inv_bw = ibw,
        .prefer = prefer,
        .dataonly = dataonly,
        .stay = (double)cfg->sched_stay_pct / 100.0,
        /* Below 100 would allow a makespan shorter than HEFT's only. */
        .refine = cfg->sched_refine_pct <= 0    ? 0.0
                  : cfg->sched_refine_pct < 100 ? 1.0
                                                : (double)cfg->sched_refine_pct / 100.0,
    };
    sched_result_t r = {worker, start, finish, 0};
    /* The state carries over between flushes (round-robin's turn: a batch
     * is often one synchronous region); sched_mtx guards it. */
    ompc_status_t st = sched_run_kept(pol, &g, (uint64_t)cfg->sched_seed + batch,
                                      &tgt_g.sched_state, &r);
    free(prefer);
    if (st != OMPC_OK)
        ompc_fatal("scheduling %zu tasks failed: %s (%s)", n, ompc_status_str(st),
                   st == OMPC_ERR_INVALID ? sched_last_error() : "no memory");
    pthread_mutex_lock(&tgt_g.mtx);
    for (size_t i = 0; i < n; i++) {
        tgt_node_t *t = v[i];
        int w = worker[i];
        if (!t->k) {
            /* Data-only nodes go with the kernel that consumes their data
             * (enter data: the copy is pushed there) or else produced it. */
            w = -1;
            for (size_t j = 0; j < t->succs.n && w < 0; j++)
                if (t->succs.v[j]->k && t->succs.v[j]->sched.batch == batch)
                    w = worker[t->succs.v[j]->sched.idx];
            for (size_t j = 0; j < t->preds.n && w < 0; j++)
                if (t->preds.v[j]->k && t->preds.v[j]->exec >= 0)
                    w = t->preds.v[j]->exec;
        }
        t->exec = w;
        t->sched.est_finish = now + (t->k ? finish[i] : 0);
        if (t->k && w >= 0) {
            if (t->sched.est_finish > tgt_g.busy_until[w])
                tgt_g.busy_until[w] = t->sched.est_finish;
            graph_placed_add(t, w);
        }
        t->state = N_WAITING;
        if (graph_make_ready(t)) {
            /* One wake-up per ready node: waking every dispatch thread
             * costs more than the work on a busy node.  None for the
             * caller's own node (unless the head runs the kernels: help_once
             * starts none there), nor for a recorder that launches its
             * window itself. */
            if ((t != mine || tgt_rt->executor) && !graph_runs_ready)
                pthread_cond_signal(&tgt_g.cv_work);
        }
    }
    pthread_mutex_unlock(&tgt_g.mtx);
    free(latw);
    free(ibww);
    free(kcost);
    free(validw);
    free(cost);
    free(ready);
    free(avail);
    free(lat);
    free(ibw);
    free(worker);
    free(start);
    free(finish);
    free(dataonly);
    free(edges);
}

/* A policy that places by cost (SCHED_NEEDS_MEASURED_COSTS: HEFT) places a
 * kernel that has never run at OMPC_SCHED_DEFAULT_COST, which for a
 * fine-grained graph is off by orders of magnitude and spreads neighbours
 * over workers (every edge a transfer).  So a flush places only the nodes
 * that do not depend on an unmeasured kernel still to finish; the rest
 * wait in tgt_g.held and are placed, with a measured cost, once such a
 * kernel is done (node_done flushes again).  The first wave runs
 * meanwhile, so the cost is at most one kernel's latency on the first use
 * of each kernel; a saved model (OMPC_PERF_MODEL) removes even that.
 * Independent kernels (no edge to an unmeasured one) are placed at once,
 * on the default.
 *
 * Held nodes go to tgt_g.held in graph order and the placed ones close up at
 * the front of v; returns how many were held (tgt_g.mtx held; v in graph
 * order, so a node's predecessors in v come before it and are decided). */
static size_t hold_unmeasured(tgt_node_t **v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        tgt_node_t *t = v[i];
        t->sched.deferred = false;
        for (size_t j = 0; j < t->preds.n && !t->sched.deferred; j++) {
            tgt_node_t *p = t->preds.v[j];
            if (p->state == N_DONE)
                continue;
            if (p->sched.deferred) {
                t->sched.deferred = true;
            } else if (p->k && !tgt_model_known(p->k)) {
                p->sched.holds = true;
                t->sched.deferred = true;
            }
        }
        if (!t->sched.deferred) {
            v[k++] = t;
            continue;
        }
        if (!t->sched.was_held) {
            t->sched.was_held = true;
            tgt_g.stats.held++;
        }
        t->state = N_PENDING;
        graph_q_push(&tgt_g.held, t);
    }
    return n - k;
}

/* The first wave of a flush that holds nodes back is placed without its
 * successors, so the policy cannot see which of its tasks feed the same
 * ones (HEFT deals them out round-robin, sched_entry_prefs).  Work the
 * preferences out on the whole flush instead, every kernel at one cost:
 * the placed nodes are v[0..n-held), the held ones follow (tgt_g.mtx
 * held). */
static void shape_prefs(tgt_node_t **v, size_t n, uint64_t batch)
{
    int P = dm_num_executors(tgt_rt->dm);
    if (P < 2)
        return;
    double *cost = malloc(n * (size_t)P * sizeof(double));
    int32_t *pref = malloc(n * sizeof(int32_t));
    size_t nedges = 0, capedges = 0;
    sched_edge_t *edges = NULL;
    if (!cost || !pref)
        ompc_fatal("out of memory scheduling %zu tasks", n);
    for (size_t i = 0; i < n; i++) {
        v[i]->sched.idx = (int64_t)i;
        for (int w = 0; w < P; w++)
            cost[i * (size_t)P + (size_t)w] = v[i]->k ? 1.0 : 0.0;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < v[i]->preds.n; j++) {
            tgt_node_t *p = v[i]->preds.v[j];
            if (p->state != N_DONE && p->sched.batch == batch)
                edge_push(&edges, &nedges, &capedges,
                          (sched_edge_t){p->sched.idx, (int64_t)i, 0, 0});
        }
    sched_graph_t g = {.nworkers = P,
                       .ntasks = (int64_t)n,
                       .cost = cost,
                       .nedges = (int64_t)nedges,
                       .edges = edges};
    if (sched_entry_prefs(&g, pref) == OMPC_OK)
        for (size_t i = 0; i < n; i++)
            v[i]->sched.pref = pref[i];
    free(cost);
    free(pref);
    free(edges);
}

/* Schedule and dispatch everything recorded so far; does not wait. */
/* mine: a node the calling thread will run itself (it waits for it), so
 * no dispatch thread is woken for it (unless the head runs the kernels
 * itself, see help_once). */
void graph_flush_keep(tgt_node_t *mine)
{
    pthread_mutex_lock(&tgt_g.sched_mtx);
    pthread_mutex_lock(&tgt_g.mtx);
    size_t n = tgt_g.held.n + tgt_g.npend;
    if (n == 0) {
        pthread_mutex_unlock(&tgt_g.mtx);
        pthread_mutex_unlock(&tgt_g.sched_mtx);
        return;
    }
    uint64_t batch = ++tgt_g.batches;
    tgt_node_t **v;
    if (tgt_g.held.n == 0) {
        /* The recorders' array becomes the batch; they start another. */
        v = tgt_g.pend;
        tgt_g.pend = NULL;
        tgt_g.cappend = 0;
    } else {
        /* Held-back nodes were recorded first: graph order is kept. */
        v = malloc(n * sizeof(*v));
        if (!v)
            ompc_fatal("out of memory scheduling %zu tasks", n);
        size_t h = 0;
        while (tgt_g.held.n)
            v[h++] = graph_q_pop(&tgt_g.held);
        if (tgt_g.npend) /* none recorded since: pend may be NULL */
            memcpy(v + h, tgt_g.pend, tgt_g.npend * sizeof(*v));
    }
    tgt_g.npend = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 8 < n)
            __builtin_prefetch(v[i + 8], 1);
        tgt_node_t *t = v[i];
        t->state = N_SCHEDULING;
        t->sched.batch = batch;
        t->sched.pref = -1;
    }
    size_t nheld = 0;
    if (tgt_g.policy->needs & SCHED_NEEDS_MEASURED_COSTS) {
        nheld = hold_unmeasured(v, n);
        if (nheld)
            shape_prefs(v, n, batch);
        /* Held nodes are not in this batch: a node placed now must not
         * take one for a batch member (schedule_batch indexes the batch's
         * results by sched_idx). */
        for (size_t i = n - nheld; i < n; i++)
            v[i]->sched.batch = 0;
    }
    for (size_t i = 0; i < n - nheld; i++)
        v[i]->sched.idx = (int64_t)i;
    pthread_mutex_unlock(&tgt_g.mtx);
    uint64_t t0 = ompc_now_ns();
    if (n > nheld)
        schedule_batch(v, n - nheld, batch, mine);
    uint64_t t1 = ompc_now_ns();
    tgt_g.stats.sched_ns += t1 - t0;
    tgt_g.stats.flushes++;
    if (ompc_trace_on()) {
        const ompc_trace_arg_t args[] = {OMPC_TRACE_U64("tasks", n - nheld),
                                         OMPC_TRACE_U64("held", nheld),
                                         OMPC_TRACE_STR("policy", tgt_g.policy->name)};
        ompc_trace_span("sched", "schedule", t0, t1, args, OMPC_TRACE_NARGS(args));
    }
    free(v);
    pthread_mutex_unlock(&tgt_g.sched_mtx);
}
