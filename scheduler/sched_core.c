/* Scheduler core: the policy table, graph validation, adjacency,
 * topological order and cycle reporting, and the schedule checker.  No
 * state outlives a call except the calling thread's last error. */
#include "sched_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Thread-local so that concurrent schedulers (one per flush point, or
 * tests running several) never see each other's reasons. */
static _Thread_local char sched_errmsg[512];
static _Thread_local int64_t sched_errtask = -1;

ompc_status_t sched_error(int64_t task, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sched_errmsg, sizeof(sched_errmsg), fmt, ap);
    va_end(ap);
    sched_errtask = task;
    return OMPC_ERR_INVALID;
}

const char *sched_last_error(void) { return sched_errmsg; }

int64_t sched_last_error_task(void) { return sched_errtask; }

/* ------------------------------------------------------------ policies */
static const sched_policy_t *const sched_policies[] = {
    &sched_policy_heft,
    &sched_policy_roundrobin,
    &sched_policy_random,
    &sched_policy_locality,
};
#define SCHED_NPOLICIES (sizeof(sched_policies) / sizeof(sched_policies[0]))

const sched_policy_t *sched_policy_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < SCHED_NPOLICIES; i++)
        if (strcmp(sched_policies[i]->name, name) == 0)
            return sched_policies[i];
    return NULL;
}

const sched_policy_t *sched_policy_at(size_t i)
{
    return i < SCHED_NPOLICIES ? sched_policies[i] : NULL;
}

/* ---------------------------------------------------------- validation */
static bool sched_nonneg(double x) { return isfinite(x) && x >= 0.0; }

ompc_status_t sched_graph_validate(const sched_graph_t *g, const sched_result_t *r)
{
    if (!g)
        return sched_error(-1, "the graph is NULL");
    int32_t P = g->nworkers;
    int64_t n = g->ntasks;
    if (P < 1)
        return sched_error(-1, "nworkers = %d, expected at least 1", (int)P);
    if (n < 0)
        return sched_error(-1, "ntasks = %lld is negative", (long long)n);
    if (g->nedges < 0)
        return sched_error(-1, "nedges = %lld is negative", (long long)g->nedges);
    /* The cost matrix must be addressable; past that, malloc decides. */
    if ((uint64_t)n > SIZE_MAX / sizeof(double) / (uint64_t)P)
        return sched_error(-1, "ntasks * nworkers = %lld * %d is too large", (long long)n,
                           (int)P);
    if (n > 0 && !g->cost)
        return sched_error(-1, "cost is NULL with %lld tasks", (long long)n);
    if (g->nedges > 0 && !g->edges)
        return sched_error(-1, "edges is NULL with %lld edges", (long long)g->nedges);
    if (!g->comm_lat != !g->comm_inv_bw)
        return sched_error(-1,
                           "comm_lat and comm_inv_bw must be given together "
                           "(%s is NULL)",
                           g->comm_lat ? "comm_inv_bw" : "comm_lat");
    if (!sched_nonneg(g->comm_msg))
        return sched_error(-1, "comm_msg is %g, expected a finite value >= 0",
                           g->comm_msg);
    if (!sched_nonneg(g->stay))
        return sched_error(-1, "stay is %g, expected a finite value >= 0", g->stay);
    if (!sched_nonneg(g->refine) || (g->refine > 0.0 && g->refine < 1.0))
        return sched_error(-1, "refine is %g, expected 0 or a finite value >= 1",
                           g->refine);
    if (r && n > 0 && (!r->worker || !r->start || !r->finish))
        return sched_error(-1, "the result arrays must all be non-NULL");

    size_t uP = (size_t)P;
    for (int64_t i = 0; i < n; i++) {
        /* Uniform costs: one entry per task, reported as worker 0's. */
        const double *c = g->cost_uniform ? g->cost + i : g->cost + (size_t)i * uP;
        for (int32_t w = 0; w < (g->cost_uniform ? 1 : P); w++)
            if (!sched_nonneg(c[w]))
                return sched_error(i,
                                   "task %lld: cost on worker %d is %g, expected a "
                                   "finite value >= 0",
                                   (long long)i, (int)w, c[w]);
        if (g->dataonly && g->dataonly[i])
            for (int32_t w = 0; w < (g->cost_uniform ? 1 : P); w++)
                if (c[w] != 0.0)
                    return sched_error(i,
                                       "task %lld: data-only, but its cost on worker "
                                       "%d is %g, expected 0",
                                       (long long)i, (int)w, c[w]);
        if (g->pinned && (g->pinned[i] < -1 || g->pinned[i] >= P))
            return sched_error(i,
                               "task %lld: pinned to worker %d, but the workers "
                               "are 0..%d (or -1 for none)",
                               (long long)i, (int)g->pinned[i], (int)(P - 1));
        if (g->prefer && (g->prefer[i] < -1 || g->prefer[i] >= P))
            return sched_error(i,
                               "task %lld: prefers worker %d, but the workers "
                               "are 0..%d (or -1 for none)",
                               (long long)i, (int)g->prefer[i], (int)(P - 1));
        if (g->ready)
            for (int32_t w = 0; w < P; w++)
                if (!isfinite(g->ready[(size_t)i * uP + (size_t)w]))
                    return sched_error(i,
                                       "task %lld: ready time on worker %d is not "
                                       "finite",
                                       (long long)i, (int)w);
    }
    if (g->avail)
        for (int32_t w = 0; w < P; w++)
            if (!isfinite(g->avail[w]))
                return sched_error(-1, "avail[%d] is not finite", (int)w);
    for (int64_t k = 0; k < g->nedges; k++) {
        const sched_edge_t *e = &g->edges[k];
        if (e->from < 0 || e->from >= n)
            return sched_error(-1,
                               "edge %lld: from = %lld is out of range (ntasks = %lld)",
                               (long long)k, (long long)e->from, (long long)n);
        if (e->to < 0 || e->to >= n)
            return sched_error(-1, "edge %lld: to = %lld is out of range (ntasks = %lld)",
                               (long long)k, (long long)e->to, (long long)n);
        if (!sched_nonneg(e->cost))
            return sched_error(e->to,
                               "edge %lld (%lld -> %lld): cost is %g, expected a "
                               "finite value >= 0",
                               (long long)k, (long long)e->from, (long long)e->to,
                               e->cost);
        if (!sched_nonneg(e->bytes))
            return sched_error(e->to,
                               "edge %lld (%lld -> %lld): bytes is %g, expected a "
                               "finite value >= 0",
                               (long long)k, (long long)e->from, (long long)e->to,
                               e->bytes);
    }
    if (g->comm_lat) {
        /* The diagonal is never read: a worker talks to itself for free. */
        for (int32_t p = 0; p < P; p++)
            for (int32_t q = 0; q < P; q++) {
                size_t pq = (size_t)p * uP + (size_t)q;
                if (p == q)
                    continue;
                if (!sched_nonneg(g->comm_lat[pq]))
                    return sched_error(-1,
                                       "comm_lat[%d*P+%d] is %g, expected a finite "
                                       "value >= 0",
                                       (int)p, (int)q, g->comm_lat[pq]);
                if (!sched_nonneg(g->comm_inv_bw[pq]))
                    return sched_error(-1,
                                       "comm_inv_bw[%d*P+%d] is %g, expected a finite "
                                       "value >= 0",
                                       (int)p, (int)q, g->comm_inv_bw[pq]);
            }
    }
    return OMPC_OK;
}

/* ------------------------------------------------------------ adjacency */
/* calloc that also hands out a distinct pointer for empty graphs, so NULL
 * always means "out of memory". */
static void *sched_calloc(int64_t count, size_t size)
{
    return calloc(count > 0 ? (size_t)count : 1, size);
}

static void sched_adj_free(sched_adj_t *adj)
{
    free(adj->pred_off);
    free(adj->pred_edge);
    free(adj->pred_from);
    free(adj->succ_off);
    free(adj->succ_edge);
    free(adj->succ_to);
    memset(adj, 0, sizeof(*adj));
}

/* How many edges ahead a scatter over shuffled endpoints prefetches. */
#define SCHED_AHEAD 16

/* Counting sort of the edges by endpoint.  Filling bumps off[v] to the next
 * free slot of v's group, which leaves off[v] at the start of group v+1;
 * one shift restores the starts.  Scanning edges in input order keeps each
 * group in input order, which keeps every policy deterministic.  out (the
 * edge indices) may be NULL. */
static void sched_adj_group(const sched_graph_t *g, int64_t *off, int64_t *out,
                            int64_t *other, bool by_to)
{
    int64_t n = g->ntasks, m = g->nedges;
    /* With shuffled endpoints every off[] touched is a cache miss: the
     * counter of an edge SCHED_AHEAD further on is fetched meanwhile. */
    for (int64_t k = 0; k < m; k++) {
        if (k + SCHED_AHEAD < m)
            __builtin_prefetch(&off[(by_to ? g->edges[k + SCHED_AHEAD].to
                                           : g->edges[k + SCHED_AHEAD].from) +
                                    1],
                               1);
        off[(by_to ? g->edges[k].to : g->edges[k].from) + 1]++;
    }
    for (int64_t i = 0; i < n; i++)
        off[i + 1] += off[i];
    for (int64_t k = 0; k < m; k++) {
        if (k + SCHED_AHEAD < m)
            __builtin_prefetch(&off[by_to ? g->edges[k + SCHED_AHEAD].to
                                          : g->edges[k + SCHED_AHEAD].from],
                               1);
        const sched_edge_t *e = &g->edges[k];
        int64_t slot = off[by_to ? e->to : e->from]++;
        if (out)
            out[slot] = k;
        other[slot] = by_to ? e->from : e->to;
    }
    for (int64_t i = n; i > 0; i--)
        off[i] = off[i - 1];
    off[0] = 0;
}

static ompc_status_t sched_adj_build(const sched_graph_t *g, sched_adj_t *adj)
{
    memset(adj, 0, sizeof(*adj));
    adj->pred_off = sched_calloc(g->ntasks + 1, sizeof(int64_t));
    adj->succ_off = sched_calloc(g->ntasks + 1, sizeof(int64_t));
    adj->pred_edge = sched_calloc(g->nedges, sizeof(int64_t));
    adj->succ_edge = sched_calloc(g->nedges, sizeof(int64_t));
    adj->pred_from = sched_calloc(g->nedges, sizeof(int64_t));
    adj->succ_to = sched_calloc(g->nedges, sizeof(int64_t));
    if (!adj->pred_off || !adj->succ_off || !adj->pred_edge || !adj->succ_edge ||
        !adj->pred_from || !adj->succ_to) {
        sched_adj_free(adj);
        return OMPC_ERR_NOMEM;
    }
    sched_adj_group(g, adj->pred_off, adj->pred_edge, adj->pred_from, true);
    sched_adj_group(g, adj->succ_off, adj->succ_edge, adj->succ_to, false);
    return OMPC_OK;
}

/* ----------------------------------------------------------------- heap */
ompc_status_t sched_heap_init(sched_heap_t *h, int64_t capacity, const double *key)
{
    h->v = sched_calloc(capacity, sizeof(int64_t));
    h->n = 0;
    h->key = key;
    return h->v ? OMPC_OK : OMPC_ERR_NOMEM;
}

void sched_heap_free(sched_heap_t *h)
{
    free(h->v);
    h->v = NULL;
    h->n = 0;
}

static bool sched_heap_before(const sched_heap_t *h, int64_t a, int64_t b)
{
    if (h->key && h->key[a] != h->key[b])
        return h->key[a] > h->key[b];
    return a < b;
}

void sched_heap_push(sched_heap_t *h, int64_t task)
{
    int64_t k = h->n++;
    while (k > 0) {
        int64_t parent = (k - 1) / 2;
        if (!sched_heap_before(h, task, h->v[parent]))
            break;
        h->v[k] = h->v[parent];
        k = parent;
    }
    h->v[k] = task;
}

int64_t sched_heap_pop(sched_heap_t *h)
{
    OMPC_ASSERT(h->n > 0);
    int64_t top = h->v[0];
    int64_t last = h->v[--h->n];
    int64_t k = 0;
    for (;;) {
        int64_t c = 2 * k + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && sched_heap_before(h, h->v[c + 1], h->v[c]))
            c++;
        if (!sched_heap_before(h, h->v[c], last))
            break;
        h->v[k] = h->v[c];
        k = c;
    }
    if (h->n > 0)
        h->v[k] = last;
    return top;
}

/* ------------------------------------------------ order and cycles */
/* Kahn's algorithm, lowest ready index first.  Returns how many tasks got
 * an order; fewer than ntasks means a cycle, and then indeg[i] > 0 marks
 * exactly the tasks left out (each one still waits on a left-out
 * predecessor). */
static int64_t sched_kahn(const sched_graph_t *g, const sched_adj_t *adj,
                          sched_heap_t *heap, int64_t *indeg, int64_t *order)
{
    int64_t n = g->ntasks, k = 0;
    for (int64_t i = 0; i < n; i++) {
        indeg[i] = adj->pred_off[i + 1] - adj->pred_off[i];
        if (indeg[i] == 0)
            sched_heap_push(heap, i);
    }
    while (heap->n > 0) {
        int64_t u = sched_heap_pop(heap);
        order[k++] = u;
        /* The successors' counts are a cache miss each (shuffled indices):
         * fetch them all before the first decrement can stall. */
        int64_t s0 = adj->succ_off[u], s1 = adj->succ_off[u + 1];
        for (int64_t s = s0; s < s1; s++)
            __builtin_prefetch(&indeg[adj->succ_to[s]], 1);
        /* Likely the next task (unless a successor of u takes its place). */
        if (heap->n > 0)
            __builtin_prefetch(&adj->succ_off[heap->v[0]]);
        for (int64_t s = s0; s < s1; s++) {
            int64_t v = adj->succ_to[s];
            if (--indeg[v] == 0)
                sched_heap_push(heap, v);
        }
    }
    return k;
}

/* Reverses v[lo..hi-1]. */
static void sched_reverse(int64_t *v, int64_t lo, int64_t hi)
{
    for (hi--; lo < hi; lo++, hi--) {
        int64_t t = v[lo];
        v[lo] = v[hi];
        v[hi] = t;
    }
}

/* After an incomplete sched_kahn: from the lowest left-out task, keep
 * stepping to a left-out predecessor (one always exists) until a task
 * repeats; the steps since its first visit are a cycle, walked backwards.
 * seen and path hold ntasks entries.  Returns the cycle's length, with
 * path[0..len-1] in edge direction. */
static int64_t sched_cycle_walk(const sched_graph_t *g, const sched_adj_t *adj,
                                const int64_t *indeg, int64_t *seen, int64_t *path)
{
    int64_t n = g->ntasks, u = 0, steps = 0;
    while (u < n && indeg[u] == 0)
        u++;
    OMPC_ASSERT(u < n);
    for (int64_t i = 0; i < n; i++)
        seen[i] = -1;
    while (seen[u] < 0) {
        seen[u] = steps;
        path[steps++] = u;
        int64_t next = -1;
        for (int64_t p = adj->pred_off[u]; p < adj->pred_off[u + 1] && next < 0; p++) {
            int64_t j = adj->pred_from[p];
            if (indeg[j] > 0)
                next = j;
        }
        OMPC_ASSERT(next >= 0);
        u = next;
    }
    /* path[seen[u]..steps-1] runs against the edges: move it to the front
     * and reverse it.  Then rotate it to start at its lowest index, so the
     * message does not depend on where the walk entered the cycle. */
    int64_t first = seen[u], len = steps - first;
    memmove(path, path + first, (size_t)len * sizeof(int64_t));
    sched_reverse(path, 0, len);
    int64_t low = 0;
    for (int64_t a = 1; a < len; a++)
        if (path[a] < path[low])
            low = a;
    sched_reverse(path, 0, low);
    sched_reverse(path, low, len);
    sched_reverse(path, 0, len);
    return len;
}

ompc_status_t sched_cycle_find(const sched_graph_t *g, int64_t *cycle, int64_t *len_p)
{
    ompc_status_t st = sched_graph_validate(g, NULL);
    if (st != OMPC_OK)
        return st;
    sched_adj_t adj;
    sched_heap_t heap = {0};
    int64_t *indeg = NULL, *seen = NULL, *order = NULL;
    st = sched_adj_build(g, &adj);
    if (st != OMPC_OK)
        return st;
    st = sched_heap_init(&heap, g->ntasks, NULL);
    if (st != OMPC_OK)
        goto err_adj;
    indeg = sched_calloc(g->ntasks, sizeof(int64_t));
    seen = sched_calloc(g->ntasks, sizeof(int64_t));
    order = sched_calloc(g->ntasks, sizeof(int64_t));
    if (!indeg || !seen || !order) {
        st = OMPC_ERR_NOMEM;
        goto err_arrays;
    }
    int64_t len = 0;
    if (sched_kahn(g, &adj, &heap, indeg, order) < g->ntasks)
        len = sched_cycle_walk(g, &adj, indeg, seen, cycle);
    *len_p = len;
err_arrays:
    free(order);
    free(seen);
    free(indeg);
    sched_heap_free(&heap);
err_adj:
    sched_adj_free(&adj);
    return st;
}

void sched_prep_free(sched_prep_t *prep)
{
    sched_adj_free(&prep->adj);
    free(prep->topo);
    prep->topo = NULL;
}

/* The message names up to this many tasks of a cycle. */
#define SCHED_CYCLE_SHOWN 8

static ompc_status_t sched_cycle_error(const int64_t *cycle, int64_t len)
{
    char buf[400];
    size_t used = 0;
    /* a == len closes the loop on cycle[0]. */
    for (int64_t a = 0; a <= len && used < sizeof(buf); a++) {
        int w;
        if (a >= SCHED_CYCLE_SHOWN && a < len) {
            if (a > SCHED_CYCLE_SHOWN)
                continue;
            w = snprintf(buf + used, sizeof(buf) - used, " -> ...");
        } else {
            w = snprintf(buf + used, sizeof(buf) - used, "%s%lld", a ? " -> " : "",
                         (long long)cycle[a % len]);
        }
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return sched_error(cycle[0], "the edges form a cycle: %s (%lld task%s)", buf,
                       (long long)len, len == 1 ? "" : "s");
}

ompc_status_t sched_prep_create(const sched_graph_t *g, const sched_result_t *r,
                                sched_prep_t *prep)
{
    ompc_status_t st = sched_graph_validate(g, r);
    if (st != OMPC_OK)
        return st;
    sched_heap_t heap = {0};
    int64_t *indeg = NULL, *seen = NULL;
    st = sched_adj_build(g, &prep->adj);
    if (st != OMPC_OK)
        return st;
    prep->topo = sched_calloc(g->ntasks, sizeof(int64_t));
    indeg = sched_calloc(g->ntasks, sizeof(int64_t));
    if (!prep->topo || !indeg || sched_heap_init(&heap, g->ntasks, NULL) != OMPC_OK) {
        st = OMPC_ERR_NOMEM;
        goto err;
    }
    int64_t k = sched_kahn(g, &prep->adj, &heap, indeg, prep->topo);
    if (k < g->ntasks) {
        /* The unordered tail of topo has room for the cycle. */
        seen = sched_calloc(g->ntasks, sizeof(int64_t));
        if (!seen) {
            st = OMPC_ERR_NOMEM;
            goto err;
        }
        int64_t *cycle = prep->topo + k;
        int64_t len = sched_cycle_walk(g, &prep->adj, indeg, seen, cycle);
        st = sched_cycle_error(cycle, len);
        goto err;
    }
    sched_heap_free(&heap);
    free(indeg);
    return OMPC_OK;
err:
    free(seen);
    free(indeg);
    sched_heap_free(&heap);
    sched_prep_free(prep);
    return st;
}

/* How many tasks ahead of the one being ordered sched_prep_succ's
 * breadth-first Kahn fetches what it will read: successor offsets this far
 * ahead, successor lists half as far, their counts a quarter. */
#define SCHED_QAHEAD 16

/* Kahn's algorithm, first ready first (a FIFO in order itself): the tasks
 * to come are known long before their turn, so their successors' lists and
 * counts (a cache miss each on shuffled indices) are fetched ahead in
 * three stages instead of one miss after another.  Returns how many tasks
 * got an order; indeg as sched_kahn leaves it. */
static int64_t sched_kahn_fifo(const sched_graph_t *g, const sched_adj_t *adj,
                               int64_t *indeg, int64_t *order)
{
    int64_t n = g->ntasks, tail = 0;
    for (int64_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            order[tail++] = i;
    for (int64_t head = 0; head < tail; head++) {
        if (head + SCHED_QAHEAD < tail)
            __builtin_prefetch(&adj->succ_off[order[head + SCHED_QAHEAD]]);
        if (head + SCHED_QAHEAD / 2 < tail)
            __builtin_prefetch(
                &adj->succ_to[adj->succ_off[order[head + SCHED_QAHEAD / 2]]]);
        if (head + SCHED_QAHEAD / 4 < tail) {
            int64_t a = order[head + SCHED_QAHEAD / 4];
            for (int64_t s = adj->succ_off[a]; s < adj->succ_off[a + 1]; s++)
                __builtin_prefetch(&indeg[adj->succ_to[s]], 1);
        }
        int64_t u = order[head];
        for (int64_t s = adj->succ_off[u]; s < adj->succ_off[u + 1]; s++)
            if (--indeg[adj->succ_to[s]] == 0)
                order[tail++] = adj->succ_to[s];
    }
    return tail;
}

ompc_status_t sched_prep_succ(const sched_graph_t *g, const sched_result_t *r,
                              sched_prep_t *prep)
{
    ompc_status_t st = sched_graph_validate(g, r);
    if (st != OMPC_OK)
        return st;
    int64_t n = g->ntasks, m = g->nedges;
    memset(prep, 0, sizeof(*prep));
    int64_t *indeg = sched_calloc(n, sizeof(int64_t)), *seen = NULL;
    prep->adj.succ_off = sched_calloc(n + 1, sizeof(int64_t));
    prep->adj.succ_to = sched_calloc(m, sizeof(int64_t));
    prep->topo = sched_calloc(n, sizeof(int64_t));
    if (!indeg || !prep->adj.succ_off || !prep->adj.succ_to || !prep->topo) {
        st = OMPC_ERR_NOMEM;
        goto err;
    }
    /* Both counts in one pass over the edges, fetched ahead as in
     * sched_adj_group; then the successor lists. */
    for (int64_t k = 0; k < m; k++) {
        if (k + SCHED_AHEAD < m) {
            __builtin_prefetch(&prep->adj.succ_off[g->edges[k + SCHED_AHEAD].from + 1],
                               1);
            __builtin_prefetch(&indeg[g->edges[k + SCHED_AHEAD].to], 1);
        }
        prep->adj.succ_off[g->edges[k].from + 1]++;
        indeg[g->edges[k].to]++;
    }
    int64_t *off = prep->adj.succ_off;
    for (int64_t i = 0; i < n; i++)
        off[i + 1] += off[i];
    for (int64_t k = 0; k < m; k++) {
        if (k + SCHED_AHEAD < m)
            __builtin_prefetch(&off[g->edges[k + SCHED_AHEAD].from], 1);
        prep->adj.succ_to[off[g->edges[k].from]++] = g->edges[k].to;
    }
    for (int64_t i = n; i > 0; i--)
        off[i] = off[i - 1];
    off[0] = 0;
    int64_t k = sched_kahn_fifo(g, &prep->adj, indeg, prep->topo);
    if (k < n) {
        /* A cycle: the walk needs the predecessors, built only now. */
        prep->adj.pred_off = sched_calloc(n + 1, sizeof(int64_t));
        prep->adj.pred_from = sched_calloc(m, sizeof(int64_t));
        seen = sched_calloc(n, sizeof(int64_t));
        if (!prep->adj.pred_off || !prep->adj.pred_from || !seen) {
            st = OMPC_ERR_NOMEM;
            goto err;
        }
        sched_adj_group(g, prep->adj.pred_off, NULL, prep->adj.pred_from, true);
        int64_t *cycle = prep->topo + k;
        st = sched_cycle_error(cycle,
                               sched_cycle_walk(g, &prep->adj, indeg, seen, cycle));
        goto err;
    }
    free(indeg);
    return OMPC_OK;
err:
    free(seen);
    free(indeg);
    sched_prep_free(prep);
    return st;
}

/* -------------------------------------------------------- shared helpers */
double sched_data_ready(const sched_graph_t *g, const sched_adj_t *adj,
                        const int32_t *worker, const double *finish, int64_t i, int32_t w)
{
    double t = 0.0;
    size_t uP = (size_t)g->nworkers;
    if (g->ready && g->ready[(size_t)i * uP + (size_t)w] > t)
        t = g->ready[(size_t)i * uP + (size_t)w];
    if (g->avail && g->avail[w] > t)
        t = g->avail[w];
    int64_t nfar = 0;
    for (int64_t p = adj->pred_off[i]; p < adj->pred_off[i + 1]; p++) {
        const sched_edge_t *e = &g->edges[adj->pred_edge[p]];
        double f = finish[e->from] + sched_comm(g, e, worker[e->from], w);
        if (f > t)
            t = f;
        nfar += worker[e->from] != w;
    }
    if (g->comm_msg > 0.0)
        t += g->comm_msg * (double)nfar;
    return t;
}

void sched_result_close(const sched_graph_t *g, sched_result_t *r)
{
    double m = 0.0;
    for (int64_t i = 0; i < g->ntasks; i++)
        if (r->finish[i] > m)
            m = r->finish[i];
    r->makespan = m;
}

ompc_status_t sched_run(const sched_policy_t *p, const sched_graph_t *g, uint64_t seed,
                        sched_result_t *r)
{
    return sched_run_kept(p, g, seed, NULL, r);
}

ompc_status_t sched_run_kept(const sched_policy_t *p, const sched_graph_t *g,
                             uint64_t seed, sched_state_t *state, sched_result_t *r)
{
    if (!p || !p->run)
        return sched_error(-1, "no policy (NULL, or NULL run)");
    /* An empty graph has one schedule, whatever the policy: none of them
     * should size per-worker state for it (a billion workers is valid
     * input; docs/performance.md, "HEFT with no task on a billion workers"). */
    if (g && g->ntasks == 0) {
        ompc_status_t st = sched_graph_validate(g, r);
        if (st == OMPC_OK && r)
            r->makespan = 0.0;
        return st;
    }
    /* Built-in policies validate on their own; only a foreign one needs
     * the check done here. */
    bool builtin = p->run == sched_heft_param_run;
    for (size_t i = 0; i < SCHED_NPOLICIES; i++)
        builtin = builtin || p == sched_policies[i];
    if (!builtin) {
        sched_prep_t prep;
        ompc_status_t st = sched_prep_succ(g, r, &prep);
        if (st != OMPC_OK)
            return st;
        sched_prep_free(&prep);
    }
    /* A policy that fails leaves its state alone: run works on a copy. */
    sched_state_t kept = state ? *state : (sched_state_t){0};
    ompc_status_t st = p->run(p, g, seed, &kept, r);
    if (st == OMPC_OK && state)
        *state = kept;
    return st;
}

/* -------------------------------------------------------------- checker */
/* a < b by more than rounding: the schedule times are sums of the same
 * terms the checker adds up, but possibly in another order. */
static bool sched_lt(double a, double b)
{
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return a < b - 1e-9 * (m > 1.0 ? m : 1.0);
}

typedef struct sched_busy {
    int32_t worker;
    int64_t task;
    double start, finish;
} sched_busy_t;

static int sched_busy_cmp(const void *pa, const void *pb)
{
    const sched_busy_t *a = pa, *b = pb;
    if (a->worker != b->worker)
        return a->worker < b->worker ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->finish != b->finish)
        return a->finish < b->finish ? -1 : 1;
    return (a->task > b->task) - (a->task < b->task);
}

ompc_status_t sched_check(const sched_graph_t *g, const sched_result_t *r)
{
    if (!r)
        return sched_error(-1, "the result is NULL");
    sched_prep_t prep;
    ompc_status_t st = sched_prep_succ(g, r, &prep);
    if (st != OMPC_OK)
        return st;
    sched_prep_free(&prep);

    int32_t P = g->nworkers;
    size_t uP = (size_t)P;
    double maxf = 0.0;
    for (int64_t i = 0; i < g->ntasks; i++) {
        int32_t w = r->worker[i];
        double s = r->start[i], f = r->finish[i];
        if (w < 0 || w >= P)
            return sched_error(i, "task %lld: worker %d is not one of 0..%d",
                               (long long)i, (int)w, (int)(P - 1));
        if (g->pinned && g->pinned[i] >= 0 && g->pinned[i] != w)
            return sched_error(i, "task %lld: runs on worker %d but is pinned to %d",
                               (long long)i, (int)w, (int)g->pinned[i]);
        if (!isfinite(s) || !isfinite(f))
            return sched_error(i, "task %lld: start %g / finish %g not finite",
                               (long long)i, s, f);
        double c = sched_cost(g, i, w);
        if (sched_lt(f, s + c) || sched_lt(s + c, f))
            return sched_error(i, "task %lld: finish %g != start %g + cost %g",
                               (long long)i, f, s, c);
        if (sched_lt(s, 0.0))
            return sched_error(i, "task %lld: starts at %g, before 0", (long long)i, s);
        if (g->ready && sched_lt(s, g->ready[(size_t)i * uP + (size_t)w]))
            return sched_error(i,
                               "task %lld: starts at %g on worker %d, before its "
                               "ready time %g",
                               (long long)i, s, (int)w,
                               g->ready[(size_t)i * uP + (size_t)w]);
        if (g->avail && sched_lt(s, g->avail[w]))
            return sched_error(i,
                               "task %lld: starts at %g on worker %d, before the "
                               "worker is available at %g",
                               (long long)i, s, (int)w, g->avail[w]);
        if (f > maxf)
            maxf = f;
    }
    for (int64_t k = 0; k < g->nedges; k++) {
        const sched_edge_t *e = &g->edges[k];
        double comm = sched_comm(g, e, r->worker[e->from], r->worker[e->to]);
        if (sched_lt(r->start[e->to], r->finish[e->from] + comm))
            return sched_error(e->to,
                               "task %lld: starts at %g on worker %d, before "
                               "predecessor %lld (worker %d) finishes at %g "
                               "plus communication %g",
                               (long long)e->to, r->start[e->to], (int)r->worker[e->to],
                               (long long)e->from, (int)r->worker[e->from],
                               r->finish[e->from], comm);
    }
    if (g->comm_msg > 0.0 && g->nedges > 0) {
        /* The latest arrival plus comm_msg per input from afar, per task:
         * the same terms, in the same order, as sched_data_ready. */
        double *need = sched_calloc(g->ntasks, sizeof(double));
        int64_t *nfar = sched_calloc(g->ntasks, sizeof(int64_t));
        if (!need || !nfar) {
            free(need);
            free(nfar);
            return OMPC_ERR_NOMEM;
        }
        for (int64_t k = 0; k < g->nedges; k++) {
            const sched_edge_t *e = &g->edges[k];
            int32_t p = r->worker[e->from], q = r->worker[e->to];
            double f = r->finish[e->from] + sched_comm(g, e, p, q);
            if (f > need[e->to])
                need[e->to] = f;
            nfar[e->to] += p != q;
        }
        int64_t bad = -1;
        for (int64_t i = 0; i < g->ntasks && bad < 0; i++)
            if (nfar[i] && sched_lt(r->start[i], need[i] + g->comm_msg * (double)nfar[i]))
                bad = i;
        if (bad >= 0)
            st = sched_error(bad,
                             "task %lld: starts at %g on worker %d, before its last "
                             "input at %g plus comm_msg %g for each of its %lld "
                             "inputs from other workers",
                             (long long)bad, r->start[bad], (int)r->worker[bad],
                             need[bad], g->comm_msg, (long long)nfar[bad]);
        free(need);
        free(nfar);
        if (st != OMPC_OK)
            return st;
    }
    if (sched_lt(r->makespan, maxf) || sched_lt(maxf, r->makespan))
        return sched_error(-1, "makespan %g != the latest finish %g", r->makespan, maxf);

    sched_busy_t *busy = sched_calloc(g->ntasks, sizeof(*busy));
    if (!busy)
        return OMPC_ERR_NOMEM;
    for (int64_t i = 0; i < g->ntasks; i++)
        busy[i] = (sched_busy_t){r->worker[i], i, r->start[i], r->finish[i]};
    qsort(busy, (size_t)g->ntasks, sizeof(*busy), sched_busy_cmp);
    st = OMPC_OK;
    for (int64_t k = 1; k < g->ntasks && st == OMPC_OK; k++) {
        const sched_busy_t *a = &busy[k - 1], *b = &busy[k];
        if (a->worker == b->worker && sched_lt(b->start, a->finish))
            st = sched_error(b->task,
                             "tasks %lld [%g, %g) and %lld [%g, %g) overlap on "
                             "worker %d",
                             (long long)a->task, a->start, a->finish, (long long)b->task,
                             b->start, b->finish, (int)a->worker);
    }
    free(busy);
    return st;
}
