/* HEFT: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri and Wu, IEEE
 * TPDS 13(3), 2002), insertion-based.
 *
 * 1. Upward rank: rank(t) = wbar(t) + max over successors s of
 *    (cbar(t,s) + rank(s)), with wbar the mean cost over the workers t may
 *    run on and cbar the mean communication time over ordered worker pairs
 *    p != q.  rank(t) is the length of the critical path from t to the end.
 * 2. Tasks are taken by decreasing rank, each placed on the worker where it
 *    finishes first, possibly in an idle gap between tasks already there.
 *
 * Cost: O(E*P + N*P*(log S + G)) with S tasks per worker and G gaps tried
 * per worker (usually few: a gap before the data-ready time is skipped by
 * binary search), plus O(S) moves per insertion.
 *
 * One departure, for entry tasks that every worker would run equally well
 * (same cost everywhere, no input already placed): plain HEFT deals them
 * out by finish time alone, round-robin in index order, so neighbours that
 * feed the same successors land on different workers and every later step
 * pays for it (a 4-wide stencil on 2 workers gets 4 transfers a step
 * instead of 2).  Such tasks are ordered so that tasks sharing a successor
 * are adjacent (breadth-first over "shares a successor with"), the order
 * is cut into P runs of equal cost, and each task goes to its run's worker
 * unless that finishes more than 1.5 times the task's cost later than the
 * best. */
#include "sched_internal.h"

#include <stdlib.h>
#include <string.h>

/* A worker's timeline: busy intervals sorted by start.  They never
 * overlap, so the finishes are sorted too, which the binary search in
 * heft_slot_find relies on. */
typedef struct heft_slot {
    double start, finish;
} heft_slot_t;

/* Intervals per block of the timeline's summary. */
#define HEFT_BLOCK 16

/* last[] summarises the slots in blocks of HEFT_BLOCK: a search for a
 * time reads the summary (16 times smaller, so a few cache lines, often
 * in cache) and then one block, instead of a binary search over the whole
 * timeline, one miss per step.  The ready times of tasks placed late
 * (low rank) lie deep in the timelines: hundreds of intervals back at 10^6
 * tasks (docs/performance.md, "HEFT at scale, placement order"). */
typedef struct heft_timeline {
    heft_slot_t *slot;
    double *last; /* last[j]: slot[HEFT_BLOCK*j + HEFT_BLOCK-1].finish, full blocks */
    int64_t n, cap;
} heft_timeline_t;

/* heft_slot_find when tl's last interval ends after `ready` (so tl->n >
 * 0): the caller knows, and the search does not load that interval. */
static double heft_slot_search(const heft_timeline_t *tl, double ready, double c,
                               int64_t *pos_p)
{
    /* Skip every interval that ends by `ready`: none of the gaps between
     * them can hold a start >= ready followed by more work.  The first
     * block whose last interval ends after `ready` holds the first such
     * interval (the partial block at the end if no full one does: the
     * last interval ends after `ready`). */
    int64_t lo = 0, hi = tl->n / HEFT_BLOCK;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (tl->last[mid] > ready)
            hi = mid;
        else
            lo = mid + 1;
    }
    lo *= HEFT_BLOCK;
    hi = lo + HEFT_BLOCK < tl->n ? lo + HEFT_BLOCK - 1 : tl->n - 1;
    /* The block's lines all at once, not one per step of the search. */
    for (int64_t k = lo; k <= hi; k += 4)
        __builtin_prefetch(&tl->slot[k]);
    __builtin_prefetch(&tl->slot[hi]);
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (tl->slot[mid].finish > ready)
            hi = mid;
        else
            lo = mid + 1;
    }
    double t = ready;
    for (int64_t k = lo; k < tl->n; k++) {
        if (t + c <= tl->slot[k].start) {
            *pos_p = k;
            return t;
        }
        t = tl->slot[k].finish;
    }
    *pos_p = tl->n;
    return t;
}

/* Earliest start >= ready of a run of length c on tl; *pos_p is where the
 * interval goes in tl->slot. */
static double heft_slot_find(const heft_timeline_t *tl, double ready, double c,
                             int64_t *pos_p)
{
    /* Free from `ready` on (the common case on many workers): no search,
     * whose cache misses were most of the bounded mode's time. */
    if (tl->n == 0 || tl->slot[tl->n - 1].finish <= ready) {
        *pos_p = tl->n;
        return ready;
    }
    return heft_slot_search(tl, ready, c, pos_p);
}

static ompc_status_t heft_slot_insert(heft_timeline_t *tl, int64_t pos, double start,
                                      double finish)
{
    if (tl->n == tl->cap) {
        int64_t cap = tl->cap ? 2 * tl->cap : HEFT_BLOCK;
        heft_slot_t *s = realloc(tl->slot, (size_t)cap * sizeof(*s));
        if (!s)
            return OMPC_ERR_NOMEM;
        tl->slot = s;
        double *l = realloc(tl->last, (size_t)(cap / HEFT_BLOCK) * sizeof(*l));
        if (!l)
            return OMPC_ERR_NOMEM;
        tl->last = l;
        tl->cap = cap;
    }
    memmove(tl->slot + pos + 1, tl->slot + pos,
            (size_t)(tl->n - pos) * sizeof(*tl->slot));
    tl->slot[pos] = (heft_slot_t){start, finish};
    tl->n++;
    /* Every block from pos's on moved up by one (its lines are in cache
     * after the move). */
    for (int64_t j = pos / HEFT_BLOCK; j < tl->n / HEFT_BLOCK; j++)
        tl->last[j] = tl->slot[HEFT_BLOCK * j + HEFT_BLOCK - 1].finish;
    return OMPC_OK;
}

/* The graph as HEFT walks it, renumbered once: task u here is the u-th of
 * the topological order (prep->topo), so that a task's inputs and
 * successors, placed or ranked near it in time, sit near it in memory too.
 * The caller's task indices come shuffled, and in their numbering every
 * input's worker and every successor's count was a cache miss (most of the
 * bounded mode's time at 10^6 tasks; docs/performance.md, "HEFT at scale").
 * Each arc keeps what HEFT reads of its edge next to the other endpoint;
 * each group keeps the input order of the edges, so every maximum and
 * every tie comes out as in the caller's numbering. */
typedef struct heft_arc {
    int64_t v; /* the other endpoint, renumbered */
    double c;  /* edge.cost, or edge.bytes with a comm model */
} heft_arc_t;

typedef struct heft_graph {
    const int64_t *orig;           /* orig[u]: the caller's index of u (prep->topo) */
    int64_t *orig_owned;           /* orig when it is not prep->topo (heft_graph_seq) */
    int64_t *newof; /* newof[i]: u for the caller's i (heft_graph_build) */
    int64_t *in_off, *out_off; /* n + 1 each */
    heft_arc_t *in, *out; /* nedges each */
    double *cu; /* cost_uniform: cu[u] = cost[orig[u]]; else NULL */
} heft_graph_t;

static void heft_graph_free(heft_graph_t *hg)
{
    free(hg->orig_owned);
    free(hg->newof);
    free(hg->in_off);
    free(hg->out_off);
    free(hg->in);
    free(hg->out);
    free(hg->cu);
    memset(hg, 0, sizeof(*hg));
}

/* How many edges ahead heft_graph_build fetches the endpoints' numbers
 * (and tasks ahead heft_graph_seq fetches their inputs). */
#define HEFT_AHEAD 16

/* Counting sort of the edges by renumbered endpoint, edges in input order.
 * Only prep->topo is read (sched_prep_succ's is enough). */
static ompc_status_t heft_graph_build(const sched_graph_t *g, const sched_prep_t *prep,
                                      heft_graph_t *hg)
{
    int64_t n = g->ntasks, m = g->nedges;
    memset(hg, 0, sizeof(*hg));
    hg->orig = prep->topo;
    int64_t *newof = hg->newof = malloc(((size_t)n + 1) * sizeof(int64_t));
    /* Both renumbered endpoints of each edge, read once (two misses an
     * edge), then streamed by the two passes that fill the groups. */
    int64_t *ends = malloc(((size_t)m + 1) * 2 * sizeof(int64_t));
    hg->in_off = calloc((size_t)n + 1, sizeof(int64_t));
    hg->out_off = calloc((size_t)n + 1, sizeof(int64_t));
    hg->in = malloc(((size_t)m + 1) * sizeof(heft_arc_t));
    hg->out = malloc(((size_t)m + 1) * sizeof(heft_arc_t));
    if (g->cost_uniform)
        hg->cu = malloc(((size_t)n + 1) * sizeof(double));
    if (!newof || !ends || !hg->in_off || !hg->out_off || !hg->in || !hg->out ||
        (g->cost_uniform && !hg->cu)) {
        free(ends);
        heft_graph_free(hg);
        return OMPC_ERR_NOMEM;
    }
    for (int64_t u = 0; u < n; u++)
        newof[prep->topo[u]] = u;
    if (hg->cu)
        for (int64_t u = 0; u < n; u++)
            hg->cu[u] = g->cost[prep->topo[u]];
    for (int64_t k = 0; k < m; k++) {
        /* newof[] of shuffled endpoints: a miss each, fetched ahead. */
        if (k + HEFT_AHEAD < m) {
            __builtin_prefetch(&newof[g->edges[k + HEFT_AHEAD].from]);
            __builtin_prefetch(&newof[g->edges[k + HEFT_AHEAD].to]);
        }
        int64_t a = newof[g->edges[k].from], b = newof[g->edges[k].to];
        ends[2 * k] = a;
        ends[2 * k + 1] = b;
        hg->out_off[a + 1]++;
        hg->in_off[b + 1]++;
    }
    for (int64_t u = 0; u < n; u++) {
        hg->out_off[u + 1] += hg->out_off[u];
        hg->in_off[u + 1] += hg->in_off[u];
    }
    /* Filling bumps off[u] to the start of group u+1; a shift restores it. */
    for (int64_t k = 0; k < m; k++) {
        const sched_edge_t *e = &g->edges[k];
        double c = g->comm_lat ? e->bytes : e->cost;
        int64_t a = ends[2 * k], b = ends[2 * k + 1];
        hg->out[hg->out_off[a]++] = (heft_arc_t){b, c};
        hg->in[hg->in_off[b]++] = (heft_arc_t){a, c};
    }
    for (int64_t u = n; u > 0; u--) {
        hg->out_off[u] = hg->out_off[u - 1];
        hg->in_off[u] = hg->in_off[u - 1];
    }
    hg->out_off[0] = hg->in_off[0] = 0;
    free(ends);
    return OMPC_OK;
}

/* Time of an arc's data from worker p to q: sched_comm with the arc's c. */
static inline double heft_comm(const sched_graph_t *g, double c, int32_t p, int32_t q)
{
    if (p == q)
        return 0.0;
    if (g->comm_lat) {
        size_t pq = (size_t)p * (size_t)g->nworkers + (size_t)q;
        return g->comm_lat[pq] + c * g->comm_inv_bw[pq];
    }
    return c;
}

/* P * rank of every renumbered task, for ordering.  Scaling by P (the
 * divisor of wbar) removes the only division when there is no comm model,
 * so with integral costs the scaled ranks are exact and equal ranks compare
 * equal: the tie rule (lower index first) then holds as written instead of
 * by rounding.  In the published example, rank(n3) and rank(n4) are both
 * 80, but computed as means they differ in the last bit. */
static void heft_scaled_ranks(const sched_graph_t *g, const heft_graph_t *hg,
                              int32_t sample, double *rank)
{
    int32_t P = g->nworkers;
    size_t uP = (size_t)P;
    double fP = (double)P;
    /* With the comm model, the mean of lat + bytes*inv_bw over the pairs is
     * mean(lat) + bytes*mean(inv_bw): two means computed once. */
    double mean_lat = 0.0, mean_inv_bw = 0.0;
    if (g->comm_lat && P > 1) {
        for (int32_t p = 0; p < P; p++)
            for (int32_t q = 0; q < P; q++)
                if (p != q) {
                    mean_lat += g->comm_lat[(size_t)p * uP + (size_t)q];
                    mean_inv_bw += g->comm_inv_bw[(size_t)p * uP + (size_t)q];
                }
        double pairs = fP * (double)(P - 1);
        mean_lat /= pairs;
        mean_inv_bw /= pairs;
    }
    /* Reverse topological order: every successor is ranked first. */
    for (int64_t u = g->ntasks - 1; u >= 0; u--) {
        int64_t i = hg->orig[u];
        double wsum;
        if (hg->cu) {
            wsum = fP * hg->cu[u];
        } else if (g->pinned && g->pinned[i] >= 0) {
            wsum = fP * g->cost[(size_t)i * uP + (size_t)g->pinned[i]];
        } else if (sample < P) {
            /* sample workers spread evenly over 0..P-1, scaled up to P. */
            const double *c = g->cost + (size_t)i * uP;
            wsum = 0.0;
            for (int32_t j = 0; j < sample; j++)
                wsum += c[(int64_t)j * P / sample];
            wsum *= fP / (double)sample;
        } else {
            const double *c = g->cost + (size_t)i * uP;
            wsum = 0.0;
            for (int32_t w = 0; w < P; w++)
                wsum += c[w];
        }
        double tail = 0.0;
        for (int64_t s = hg->out_off[u]; s < hg->out_off[u + 1]; s++) {
            const heft_arc_t *a = &hg->out[s];
            double cbar = P == 1        ? 0.0
                          : g->comm_lat ? mean_lat + a->c * mean_inv_bw
                                        : a->c;
            if (fP * cbar + rank[a->v] > tail)
                tail = fP * cbar + rank[a->v];
        }
        rank[u] = wsum + tail;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Whether entry task i (hg's u) would run as well on any worker: not pinned, the
 * same cost and the same outside-input time on each. */
static bool heft_entry_free(const sched_graph_t *g, const heft_graph_t *hg, int64_t u,
                            int64_t i)
{
    size_t uP = (size_t)g->nworkers;
    if (hg->in_off[u + 1] != hg->in_off[u] || (g->pinned && g->pinned[i] >= 0))
        return false;
    if (g->cost_uniform && !g->ready)
        return true;
    for (int32_t w = 1; w < g->nworkers; w++) {
        if (sched_cost(g, i, w) != sched_cost(g, i, 0))
            return false;
        if (g->ready && g->ready[(size_t)i * uP + (size_t)w] != g->ready[(size_t)i * uP])
            return false;
    }
    return true;
}

/* pref[i]: the worker a free entry task should go to (see the top of the
 * file), -1 for every other task.  Left all -1 unless some two free entry
 * tasks share a successor. */
static ompc_status_t heft_entry_prefs(const sched_graph_t *g, const heft_graph_t *hg,
                                      int32_t *pref)
{
    int64_t n = g->ntasks;
    int32_t P = g->nworkers;
    for (int64_t i = 0; i < n; i++)
        pref[i] = -1;
    if (P < 2)
        return OMPC_OK;
    /* mark[i]: 1 free entry task, 2 queued; 0 otherwise. */
    uint8_t *mark = calloc((size_t)n + 1, 1);
    int64_t *order = malloc(((size_t)n + 1) * sizeof(int64_t));
    int64_t *nb = malloc(((size_t)n + 1) * sizeof(int64_t));
    if (!mark || !order || !nb) {
        free(mark);
        free(order);
        free(nb);
        return OMPC_ERR_NOMEM;
    }
    int64_t nfree = 0;
    for (int64_t u = 0; u < n; u++)
        if (heft_entry_free(g, hg, u, hg->orig[u])) {
            mark[hg->orig[u]] = 1;
            nfree++;
        }
    int64_t len = 0;
    bool linked = false;
    double total = 0.0;
    for (int64_t root = 0; root < n && nfree >= 2; root++) {
        if (mark[root] != 1)
            continue;
        int64_t head = len;
        order[len++] = root;
        mark[root] = 2;
        while (head < len) {
            int64_t i = order[head++];
            total += sched_cost(g, i, 0);
            /* Free entry tasks sharing a successor with i, by index. */
            int64_t k = 0;
            int64_t ui = hg->newof[i];
            for (int64_t s = hg->out_off[ui]; s < hg->out_off[ui + 1]; s++) {
                int64_t v = hg->out[s].v;
                for (int64_t p = hg->in_off[v]; p < hg->in_off[v + 1]; p++) {
                    int64_t u = hg->orig[hg->in[p].v];
                    if (mark[u] == 1) {
                        mark[u] = 2;
                        nb[k++] = u;
                    }
                }
            }
            linked |= k > 0;
            qsort(nb, (size_t)k, sizeof(int64_t), cmp_i64);
            for (int64_t j = 0; j < k; j++)
                order[len++] = nb[j];
        }
    }
    if (linked && total > 0.0) {
        double before = 0.0;
        for (int64_t k = 0; k < len; k++) {
            double c = sched_cost(g, order[k], 0);
            int32_t w = (int32_t)((before + 0.5 * c) / total * (double)P);
            pref[order[k]] = w < P ? w : P - 1;
            before += c;
        }
    }
    free(mark);
    free(order);
    free(nb);
    return OMPC_OK;
}

ompc_status_t sched_entry_prefs(const sched_graph_t *g, int32_t *pref)
{
    sched_prep_t prep;
    heft_graph_t hg;
    ompc_status_t st = sched_prep_succ(g, NULL, &prep);
    if (st != OMPC_OK)
        return st;
    st = heft_graph_build(g, &prep, &hg);
    if (st == OMPC_OK) {
        st = heft_entry_prefs(g, &hg, pref);
        heft_graph_free(&hg);
    }
    sched_prep_free(&prep);
    return st;
}

void sched_heft_ranks(const sched_graph_t *g, const sched_prep_t *prep, double *rank)
{
    heft_graph_t hg;
    double *scaled = malloc(((size_t)g->ntasks + 1) * sizeof(double));
    OMPC_ASSERT(scaled && heft_graph_build(g, prep, &hg) == OMPC_OK);
    heft_scaled_ranks(g, &hg, g->nworkers, scaled);
    for (int64_t u = 0; u < g->ntasks; u++)
        rank[hg.orig[u]] = scaled[u] / (double)g->nworkers;
    heft_graph_free(&hg);
    free(scaled);
}

/* What a task's successors read of it once it is placed, in one record:
 * one cache miss per input where separate arrays cost two. */
typedef struct heft_done {
    double finish;
    int32_t worker;
} heft_done_t;

_Static_assert(64 % sizeof(heft_done_t) == 0,
               "a task's state must not straddle two cache lines");

/* n elements of size sz on cache-line boundaries (sz divides 64), zeroed. */
static void *heft_lines_alloc(int64_t n, size_t sz)
{
    size_t bytes = ((size_t)n + 1) * sz;
    bytes = (bytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

/* ------------------------------------------------- bounded candidates */
/* The bounded mode's ranks average the cost over this many workers spread
 * evenly, not all P: the ranks then cost O(N + E), and an order of tasks
 * needs only the mean's rough size. */
#define HEFT_RANK_SAMPLE 64

/* Workers by when their timelines end (the last interval's finish, or
 * avail), earliest first, ties to the lower worker.  Gaps are ignored:
 * this only picks whom to try.  The k first form the set `near`, the
 * others a binary heap `rest` that knows where each worker sits.  A
 * placement only ever moves one worker's end later, so the set changes
 * by at most one swap with the heap's top, O(log P), and each task reads
 * the k it needs straight from `near` instead of searching for them. */
typedef struct heft_wheap {
    int32_t *v; /* the heap of the workers not in near */
    int32_t *pos; /* pos[w]: w's index in v, or -1 - (w's index in near) */
    double *end; /* end[w]: the key */
    int32_t n;
} heft_wheap_t;

static bool heft_wheap_before(const heft_wheap_t *h, int32_t a, int32_t b)
{
    return h->end[a] < h->end[b] || (h->end[a] == h->end[b] && a < b);
}

/* Restores the heap below index k after v[k]'s key grew. */
static void heft_wheap_down(heft_wheap_t *h, int32_t k)
{
    int32_t w = h->v[k];
    for (;;) {
        int32_t c = 2 * k + 1;
        if (c >= h->n || c < 0)
            break;
        if (c + 1 < h->n && heft_wheap_before(h, h->v[c + 1], h->v[c]))
            c++;
        if (!heft_wheap_before(h, h->v[c], w))
            break;
        h->v[k] = h->v[c];
        h->pos[h->v[k]] = k;
        k = c;
    }
    h->v[k] = w;
    h->pos[w] = k;
}

/* splitmix64: the random candidates, a pure function of task and draw so
 * that a schedule does not depend on anything but the graph. */
static uint64_t heft_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Scratch of the bounded mode, all per worker. */
typedef struct heft_bounded {
    heft_wheap_t heap;
    int32_t *near; /* the nnear workers whose timelines end first, any order */
    int32_t nnear;
    int64_t *stamp; /* stamp[w] = task + 1 once w is a candidate of task */
    int32_t *cand;
    double *cand_t; /* cand_t[j]: data-ready time of task on cand[j] */
    int32_t ncand;
    int32_t nin; /* cand[0..nin-1]: the workers of the task's inputs */
} heft_bounded_t;

static void heft_cand_add(heft_bounded_t *b, int64_t task, int32_t w)
{
    if (b->stamp[w] != task + 1) {
        b->stamp[w] = task + 1;
        b->cand[b->ncand++] = w;
    }
}

/* Task u's candidates into b->cand (u renumbered, i the caller's index):
 * the workers of its inputs, its preferred worker, the k whose timelines
 * end first and k/4 at random. */
static void heft_cand_collect(heft_bounded_t *b, const sched_graph_t *g,
                              const heft_graph_t *hg, const heft_done_t *done,
                              int32_t pref, int32_t k, int64_t u, int64_t i)
{
    int32_t P = g->nworkers;
    b->ncand = 0;
    for (int64_t p = hg->in_off[u]; p < hg->in_off[u + 1]; p++)
        heft_cand_add(b, u, done[hg->in[p].v].worker);
    b->nin = b->ncand;
    if (pref >= 0)
        heft_cand_add(b, u, pref);
    for (int32_t j = 0; j < b->nnear; j++)
        heft_cand_add(b, u, b->near[j]);
    if (k < P)
        for (int32_t j = 0; j < k / 4; j++)
            heft_cand_add(
                b, u, (int32_t)(heft_mix((uint64_t)i * 64 + (uint64_t)j) % (uint64_t)P));
}

/* The worker holding more than half of renumbered task u's inputs by
 * weight (g->stay), or -1.  wsum has P entries, all zero, and is left so. */
static int32_t heft_inputs_home(const heft_graph_t *hg, const heft_done_t *done,
                                int64_t u, double *wsum)
{
    int64_t lo = hg->in_off[u], hi = hg->in_off[u + 1];
    if (lo == hi)
        return -1;
    double total = 0.0;
    for (int64_t p = lo; p < hi; p++)
        total += hg->in[p].c;
    /* Ordering-only inputs (no bytes, no cost) count one each. */
    bool count = !(total > 0.0);
    if (count)
        total = (double)(hi - lo);
    int32_t home = -1;
    for (int64_t p = lo; p < hi; p++) {
        int32_t w = done[hg->in[p].v].worker;
        wsum[w] += count ? 1.0 : hg->in[p].c;
        if (2.0 * wsum[w] > total)
            home = w;
    }
    for (int64_t p = lo; p < hi; p++)
        wsum[done[hg->in[p].v].worker] = 0.0;
    return home;
}

/* Earliest time renumbered task u (the caller's i) could start on worker w
 * if w were idle: sched_data_ready's terms in its order. */
static double heft_data_ready(const sched_graph_t *g, const heft_graph_t *hg,
                              const heft_done_t *done, int64_t u, int64_t i, int32_t w)
{
    double t = 0.0;
    size_t uP = (size_t)g->nworkers;
    if (g->ready && g->ready[(size_t)i * uP + (size_t)w] > t)
        t = g->ready[(size_t)i * uP + (size_t)w];
    if (g->avail && g->avail[w] > t)
        t = g->avail[w];
    int64_t nfar = 0;
    for (int64_t p = hg->in_off[u]; p < hg->in_off[u + 1]; p++) {
        const heft_arc_t *a = &hg->in[p];
        double f = done[a->v].finish + heft_comm(g, a->c, done[a->v].worker, w);
        if (f > t)
            t = f;
        nfar += done[a->v].worker != w;
    }
    if (g->comm_msg > 0.0)
        t += g->comm_msg * (double)nfar;
    return t;
}

/* Orders workers for heft_bounded_init (qsort has no context argument). */
typedef struct heft_wend {
    double end;
    int32_t w;
} heft_wend_t;

static int heft_wend_cmp(const void *pa, const void *pb)
{
    const heft_wend_t *a = pa, *b = pb;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return (a->w > b->w) - (a->w < b->w);
}

static ompc_status_t heft_bounded_init(heft_bounded_t *b, const sched_graph_t *g,
                                       int32_t k)
{
    int32_t P = g->nworkers;
    size_t uP = (size_t)P;
    int32_t m = k < P ? k : P;
    memset(b, 0, sizeof(*b));
    b->heap.v = malloc(uP * sizeof(int32_t));
    b->heap.pos = malloc(uP * sizeof(int32_t));
    b->heap.end = malloc(uP * sizeof(double));
    b->stamp = calloc(uP, sizeof(int64_t));
    b->cand = malloc(uP * sizeof(int32_t));
    b->cand_t = malloc(uP * sizeof(double));
    b->near = malloc(uP * sizeof(int32_t));
    heft_wend_t *order = malloc(uP * sizeof(*order));
    if (!b->heap.v || !b->heap.pos || !b->heap.end || !b->stamp || !b->cand ||
        !b->cand_t || !b->near || !order) {
        free(order);
        return OMPC_ERR_NOMEM;
    }
    for (int32_t w = 0; w < P; w++) {
        b->heap.end[w] = g->avail && g->avail[w] > 0.0 ? g->avail[w] : 0.0;
        order[w] = (heft_wend_t){b->heap.end[w], w};
    }
    qsort(order, uP, sizeof(*order), heft_wend_cmp);
    b->nnear = m;
    for (int32_t j = 0; j < m; j++) {
        b->near[j] = order[j].w;
        b->heap.pos[order[j].w] = -1 - j;
    }
    /* Sorted is already a heap. */
    b->heap.n = P - m;
    for (int32_t j = m; j < P; j++) {
        b->heap.v[j - m] = order[j].w;
        b->heap.pos[order[j].w] = j - m;
    }
    free(order);
    return OMPC_OK;
}

/* Worker w's timeline now ends at e, later than before. */
static void heft_bounded_grow(heft_bounded_t *b, int32_t w, double e)
{
    heft_wheap_t *h = &b->heap;
    h->end[w] = e;
    if (h->pos[w] >= 0) {
        heft_wheap_down(h, h->pos[w]);
        return;
    }
    /* In near: it stays unless the heap's first now comes before it. */
    if (h->n == 0 || !heft_wheap_before(h, h->v[0], w))
        return;
    int32_t j = -1 - h->pos[w], x = h->v[0];
    b->near[j] = x;
    h->pos[x] = -1 - j;
    h->v[0] = w;
    h->pos[w] = 0;
    heft_wheap_down(h, 0);
}

static void heft_bounded_free(heft_bounded_t *b)
{
    free(b->heap.v);
    free(b->heap.pos);
    free(b->heap.end);
    free(b->stamp);
    free(b->cand);
    free(b->cand_t);
    free(b->near);
}

/* --------------------------------------------------- the placement order */
/* HEFT places next the highest-ranked task whose inputs are all placed,
 * ties to the lower index of the caller's numbering.  Which task that is
 * never depends on where the earlier ones went, so the whole order is
 * worked out first and the tasks renumbered in it (heft_graph_seq): the
 * placement then walks its tasks in memory order, reads each input's
 * record a little behind it (most inputs were placed shortly before), and
 * keeps no count of unplaced inputs and no heap (docs/performance.md,
 * "HEFT at scale, placement order"). */

/* Whether hg's task a comes before b: higher rank, ties to the lower
 * caller's index. */
static inline bool heft_first(const heft_graph_t *hg, const double *rank, int64_t a,
                              int64_t b)
{
    if (rank[a] != rank[b])
        return rank[a] > rank[b];
    return hg->orig[a] < hg->orig[b];
}

/* Whether every edge goes from a task that comes first to one that comes
 * later.  Then the order is the sort of all tasks: the first unplaced
 * task of the sort has all its inputs placed, and no task ready then
 * comes before it.  Ranks fall along an edge whenever its source or the
 * edge costs something; zero costs (or rounding) can make a successor tie
 * with its input and, having the lower index, come first. */
static bool heft_order_falls(const heft_graph_t *hg, int64_t n, const double *rank)
{
    for (int64_t u = 0; u < n; u++)
        for (int64_t s = hg->out_off[u]; s < hg->out_off[u + 1]; s++)
            if (!heft_first(hg, rank, u, hg->out[s].v))
                return false;
    return true;
}

typedef struct heft_key {
    uint64_t key;
    int64_t u;
} heft_key_t;

static int heft_key_cmp(const void *pa, const void *pb)
{
    const heft_key_t *a = pa, *b = pb;
    return (a->key > b->key) - (a->key < b->key);
}

/* Radix sort digits: 6 passes of 11 bits cover a 64-bit key with 2048
 * buckets, few enough that each bucket's next slot stays in cache. */
#define HEFT_RADIX_BITS 11
#define HEFT_RADIX_PASSES 6

/* Below this many tasks a comparison sort orders them: the radix sort's
 * bucket counts are a zeroed block of HEFT_RADIX_PASSES << HEFT_RADIX_BITS
 * entries whatever the size, which a flush of a few hundred nodes (the
 * head's window) paid for every time. */
#define HEFT_SORT_SMALL 2048

typedef struct heft_key3 {
    uint64_t key;
    int64_t orig, u;
} heft_key3_t;

static int heft_key3_cmp(const void *pa, const void *pb)
{
    const heft_key3_t *a = pa, *b = pb;
    if (a->key != b->key)
        return (a->key > b->key) - (a->key < b->key);
    if (a->orig != b->orig)
        return (a->orig > b->orig) - (a->orig < b->orig);
    return (a->u > b->u) - (a->u < b->u);
}

/* The ascending key of a rank: descending rank (+0 and -0 alike). */
static uint64_t heft_rank_key(double r)
{
    uint64_t bits = 0;
    if (r != 0.0)
        memcpy(&bits, &r, sizeof(bits));
    return ~bits;
}

/* seq = hg's tasks in heft_first order, by a stable radix sort on the
 * ranks' bits (the bits of a non-negative double order as the values do)
 * and the caller's index among equal ranks; a comparison sort on the same
 * keys below HEFT_SORT_SMALL tasks. */
static ompc_status_t heft_order_sort(const heft_graph_t *hg, int64_t n,
                                     const double *rank, int64_t *seq)
{
    if (n < HEFT_SORT_SMALL) {
        heft_key3_t *k = malloc(((size_t)n + 1) * sizeof(*k));
        if (!k)
            return OMPC_ERR_NOMEM;
        for (int64_t u = 0; u < n; u++)
            k[u] = (heft_key3_t){heft_rank_key(rank[u]), hg->orig[u], u};
        qsort(k, (size_t)n, sizeof(*k), heft_key3_cmp);
        for (int64_t j = 0; j < n; j++)
            seq[j] = k[j].u;
        free(k);
        return OMPC_OK;
    }
    enum { B = 1 << HEFT_RADIX_BITS };
    heft_key_t *a = malloc(((size_t)n + 1) * sizeof(*a));
    heft_key_t *b = malloc(((size_t)n + 1) * sizeof(*b));
    int64_t(*count)[B] = calloc(HEFT_RADIX_PASSES, sizeof(*count));
    if (!a || !b || !count) {
        free(a);
        free(b);
        free(count);
        return OMPC_ERR_NOMEM;
    }
    for (int64_t u = 0; u < n; u++) {
        a[u] = (heft_key_t){heft_rank_key(rank[u]), u};
        for (int d = 0; d < HEFT_RADIX_PASSES; d++)
            count[d][(a[u].key >> (d * HEFT_RADIX_BITS)) & (B - 1)]++;
    }
    for (int d = 0; d < HEFT_RADIX_PASSES; d++) {
        int shift = d * HEFT_RADIX_BITS;
        /* A digit all keys share moves nothing. */
        if (count[d][(a[0].key >> shift) & (B - 1)] == n)
            continue;
        int64_t sum = 0;
        for (int x = 0; x < B; x++) {
            int64_t c = count[d][x];
            count[d][x] = sum;
            sum += c;
        }
        for (int64_t j = 0; j < n; j++)
            b[count[d][(a[j].key >> shift) & (B - 1)]++] = a[j];
        heft_key_t *t = a;
        a = b;
        b = t;
    }
    for (int64_t j = 0; j < n;) {
        int64_t e = j + 1;
        while (e < n && a[e].key == a[j].key)
            e++;
        if (e - j > 1) {
            for (int64_t x = j; x < e; x++)
                a[x].key = (uint64_t)hg->orig[a[x].u];
            qsort(a + j, (size_t)(e - j), sizeof(*a), heft_key_cmp);
        }
        for (; j < e; j++)
            seq[j] = a[j].u;
    }
    free(a);
    free(b);
    free(count);
    return OMPC_OK;
}

/* The tasks whose inputs are all placed, highest rank first, ties to the
 * lower index of the caller's numbering.  Keys live in the heap entries:
 * a sift then reads no rank[] or orig[] of tasks far away in memory. */
typedef struct heft_ready {
    double key;
    int64_t tie, u;
} heft_ready_t;

static bool heft_ready_before(const heft_ready_t *a, const heft_ready_t *b)
{
    if (a->key != b->key)
        return a->key > b->key;
    return a->tie < b->tie;
}

static void heft_ready_push(heft_ready_t *h, int64_t *n_p, heft_ready_t x)
{
    int64_t k = (*n_p)++;
    while (k > 0 && heft_ready_before(&x, &h[(k - 1) / 2])) {
        h[k] = h[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h[k] = x;
}

static int64_t heft_ready_pop(heft_ready_t *h, int64_t *n_p)
{
    int64_t top = h[0].u, n = --*n_p, k = 0;
    heft_ready_t last = h[n];
    for (;;) {
        int64_t c = 2 * k + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heft_ready_before(&h[c + 1], &h[c]))
            c++;
        if (!heft_ready_before(&h[c], &last))
            break;
        h[k] = h[c];
        k = c;
    }
    if (n > 0)
        h[k] = last;
    return top;
}

/* seq = hg's tasks in placement order when ranks do not fall along every
 * edge: Kahn's algorithm with the ready tasks in a heap. */
static ompc_status_t heft_order_heap(const heft_graph_t *hg, int64_t n,
                                     const double *rank, int64_t *seq)
{
    int64_t *waiting = malloc(((size_t)n + 1) * sizeof(int64_t));
    heft_ready_t *heap = malloc(((size_t)n + 1) * sizeof(heft_ready_t));
    if (!waiting || !heap) {
        free(waiting);
        free(heap);
        return OMPC_ERR_NOMEM;
    }
    int64_t nheap = 0, q = 0;
    for (int64_t u = 0; u < n; u++) {
        waiting[u] = hg->in_off[u + 1] - hg->in_off[u];
        if (waiting[u] == 0)
            heft_ready_push(heap, &nheap, (heft_ready_t){rank[u], hg->orig[u], u});
    }
    while (nheap > 0) {
        int64_t u = heft_ready_pop(heap, &nheap);
        seq[q++] = u;
        for (int64_t s = hg->out_off[u]; s < hg->out_off[u + 1]; s++) {
            int64_t v = hg->out[s].v;
            if (--waiting[v] == 0)
                heft_ready_push(heap, &nheap, (heft_ready_t){rank[v], hg->orig[v], v});
        }
    }
    OMPC_ASSERT(q == n); /* hg is acyclic: prep->topo ordered it */
    free(waiting);
    free(heap);
    return OMPC_OK;
}

/* pg = hg renumbered in the placement order: pg's task q is hg's seq[q].
 * Only what the placement reads: inputs (each group in hg's order), the
 * caller's indices and uniform costs; pref (caller's numbering) comes
 * out as pref_q[q]. */
static ompc_status_t heft_graph_seq(const heft_graph_t *hg, int64_t n, const int64_t *seq,
                                    const int32_t *pref, heft_graph_t *pg,
                                    int32_t *pref_q)
{
    int64_t m = hg->in_off[n];
    memset(pg, 0, sizeof(*pg));
    int64_t *pos = malloc(((size_t)n + 1) * sizeof(int64_t));
    pg->orig_owned = malloc(((size_t)n + 1) * sizeof(int64_t));
    pg->in_off = malloc(((size_t)n + 1) * sizeof(int64_t));
    pg->in = malloc(((size_t)m + 1) * sizeof(heft_arc_t));
    if (hg->cu)
        pg->cu = malloc(((size_t)n + 1) * sizeof(double));
    if (!pos || !pg->orig_owned || !pg->in_off || !pg->in || (hg->cu && !pg->cu)) {
        free(pos);
        heft_graph_free(pg);
        return OMPC_ERR_NOMEM;
    }
    pg->orig = pg->orig_owned;
    for (int64_t q = 0; q < n; q++)
        pos[seq[q]] = q;
    int64_t e = 0;
    for (int64_t q = 0; q < n; q++) {
        /* hg's groups come in no useful order: fetch ahead as in
         * sched_prep_succ's Kahn, offsets, then arcs, then their pos[]. */
        if (q + HEFT_AHEAD < n)
            __builtin_prefetch(&hg->in_off[seq[q + HEFT_AHEAD]]);
        if (q + HEFT_AHEAD / 2 < n)
            __builtin_prefetch(&hg->in[hg->in_off[seq[q + HEFT_AHEAD / 2]]]);
        if (q + HEFT_AHEAD / 4 < n) {
            int64_t a = seq[q + HEFT_AHEAD / 4];
            for (int64_t p = hg->in_off[a]; p < hg->in_off[a + 1]; p++)
                __builtin_prefetch(&pos[hg->in[p].v]);
        }
        int64_t u = seq[q];
        pg->in_off[q] = e;
        pg->orig_owned[q] = hg->orig[u];
        pref_q[q] = -1;
        if (hg->cu)
            pg->cu[q] = hg->cu[u];
        for (int64_t p = hg->in_off[u]; p < hg->in_off[u + 1]; p++)
            pg->in[e++] = (heft_arc_t){pos[hg->in[p].v], hg->in[p].c};
    }
    pg->in_off[n] = e;
    /* Few tasks have a preferred worker, unless the caller gave them:
     * scattered from the caller's order, not gathered with a miss each. */
    for (int64_t i = 0; i < n; i++)
        if (pref[i] >= 0)
            pref_q[pos[hg->newof[i]]] = pref[i];
    free(pos);
    return OMPC_OK;
}

/* ----------------------------------------------------------- placement */
/* candidates as in sched_heft_policy_t. */
static ompc_status_t heft_place(const sched_graph_t *g, int32_t candidates,
                                sched_result_t *r)
{
    sched_prep_t prep;
    ompc_status_t st = sched_prep_succ(g, r, &prep);
    if (st != OMPC_OK)
        return st;

    int64_t n = g->ntasks;
    int32_t P = g->nworkers;
    size_t uP = (size_t)P;
    /* The scratch below is per worker: with no task to place, do not
     * build it (a billion workers is valid input; docs/performance.md,
     * "HEFT with no task on a billion workers"). */
    if (n == 0) {
        sched_result_close(g, r);
        sched_prep_free(&prep);
        return OMPC_OK;
    }
    /* k: workers tried per task beyond inputs and preference; 0 = all. */
    int32_t k = candidates;
    if (candidates < 0)
        k = 0;
    else if (candidates == 0)
        k = P <= SCHED_HEFT_FULL_MAX ? 0 : SCHED_HEFT_CANDIDATES;
    int32_t sample = k > 0 && k < P && HEFT_RANK_SAMPLE < P ? HEFT_RANK_SAMPLE : P;
    /* The schedule is built aside, renumbered (heft_graph_t), and copied
     * into r at the end, so r is untouched if a timeline cannot grow. */
    heft_graph_t hg = {0}, pg = {0};
    double *rank = calloc((size_t)n + 1, sizeof(double));
    int64_t *seq = malloc(((size_t)n + 1) * sizeof(int64_t));
    double *start = calloc((size_t)n + 1, sizeof(double));
    heft_done_t *done = heft_lines_alloc(n, sizeof(heft_done_t));
    double *dready = calloc(uP, sizeof(double));
    /* Inputs already on each worker (comm_msg), zero between tasks. */
    int64_t *nnear = g->comm_msg > 0.0 ? calloc(uP, sizeof(int64_t)) : NULL;
    /* Input weight per worker (stay), zero between tasks. */
    double *wsum = g->stay > 0.0 ? calloc(uP, sizeof(double)) : NULL;
    int32_t *pref = calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *pref_q = calloc((size_t)n + 1, sizeof(int32_t));
    heft_timeline_t *tl = calloc(uP, sizeof(*tl));
    heft_bounded_t bd = {0};
    if (!rank || !seq || !start || !done || !dready || !pref || !pref_q || !tl ||
        (g->comm_msg > 0.0 && !nnear) || (g->stay > 0.0 && !wsum) ||
        (k > 0 && heft_bounded_init(&bd, g, k) != OMPC_OK) ||
        heft_graph_build(g, &prep, &hg) != OMPC_OK) {
        st = OMPC_ERR_NOMEM;
        goto out;
    }
    heft_scaled_ranks(g, &hg, sample, rank);
    if (g->prefer)
        memcpy(pref, g->prefer, (size_t)n * sizeof(*pref));
    else if ((st = heft_entry_prefs(g, &hg, pref)) != OMPC_OK)
        goto out;
    st = heft_order_falls(&hg, n, rank) ? heft_order_sort(&hg, n, rank, seq)
                                        : heft_order_heap(&hg, n, rank, seq);
    if (st != OMPC_OK || (st = heft_graph_seq(&hg, n, seq, pref, &pg, pref_q)) != OMPC_OK)
        goto out;
    /* What is left is in placement order. */
    heft_graph_free(&hg);
    free(rank);
    rank = NULL;

    for (int64_t u = 0; u < n; u++) {
        int64_t i = pg.orig[u];
        int32_t best = -1, pw = pref_q[u];
        int64_t best_pos = 0, pref_pos = 0;
        double best_start = 0.0, best_finish = 0.0, pref_start = 0.0;
        bool pref_seen = false;
        bool pinned = g->pinned && g->pinned[i] >= 0;
        /* How much later than the best the preferred worker may finish:
         * a caller's or entry preference up to one task's cost (and half
         * another: inputs that reach the workers microseconds apart must
         * not tip it); the inputs' worker up to stay times it. */
        double slack = 1.5;
        if (pw < 0 && wsum && !pinned) {
            pw = heft_inputs_home(&pg, done, u, wsum);
            slack = g->stay;
        }
        if (k > 0) {
            /* Bounded: the candidates only, each with its own data-ready
             * time (the same terms in the same order as below, so with
             * every worker a candidate the choice is the same). */
            if (pinned) {
                bd.ncand = 0;
                heft_cand_add(&bd, u, g->pinned[i]);
            } else {
                heft_cand_collect(&bd, g, &pg, done, pw, k, u, i);
            }
            /* Two passes, same choice: first the candidates free from
             * their data-ready time t on (no search), then the others,
             * whose gap search is skipped when even a start at t cannot
             * beat the best so far (s >= t, so s + c >= t + c). */
            /* Without a comm model every input reaches a worker that
             * holds none of the inputs at finish + edge cost: their
             * maximum is computed once (max is exact in any order, so t
             * is the same number).  The workers of the inputs come first
             * in cand and take the full loop. */
            int32_t nin = 0;
            double remote = 0.0;
            if (!g->comm_lat && !pinned) {
                for (int64_t p = pg.in_off[u]; p < pg.in_off[u + 1]; p++) {
                    const heft_arc_t *a = &pg.in[p];
                    if (done[a->v].finish + a->c > remote)
                        remote = done[a->v].finish + a->c;
                }
                nin = bd.nin;
            } else {
                nin = bd.ncand;
            }
            for (int32_t j = 0; j < bd.ncand; j++) {
                int32_t w = bd.cand[j];
                double cw = pg.cu ? pg.cu[u] : sched_cost(g, i, w);
                double t;
                if (j < nin) {
                    t = heft_data_ready(g, &pg, done, u, i, w);
                } else {
                    t = 0.0;
                    if (g->ready && g->ready[(size_t)i * uP + (size_t)w] > t)
                        t = g->ready[(size_t)i * uP + (size_t)w];
                    if (g->avail && g->avail[w] > t)
                        t = g->avail[w];
                    if (remote > t)
                        t = remote;
                    /* None of the inputs is on w: all come from afar. */
                    if (g->comm_msg > 0.0)
                        t += g->comm_msg * (double)(pg.in_off[u + 1] - pg.in_off[u]);
                }
                bd.cand_t[j] = t;
                /* end[w] is in cache, the timeline's last slot often not. */
                if (bd.heap.end[w] > t)
                    continue;
                if (w == pw) {
                    pref_seen = true;
                    pref_pos = tl[w].n;
                    pref_start = t;
                }
                if (best < 0 || t + cw < best_finish ||
                    (t + cw == best_finish && w < best)) {
                    best = w;
                    best_pos = tl[w].n;
                    best_start = t;
                    best_finish = t + cw;
                }
            }
            for (int32_t j = 0; j < bd.ncand; j++) {
                int32_t w = bd.cand[j];
                double t = bd.cand_t[j];
                if (bd.heap.end[w] <= t)
                    continue;
                double cw = pg.cu ? pg.cu[u] : sched_cost(g, i, w);
                if (w != pw && best >= 0 &&
                    (t + cw > best_finish || (t + cw == best_finish && w > best)))
                    continue;
                /* end[w] > t >= avail[w]: the last interval ends after t. */
                int64_t pos;
                double s = heft_slot_search(&tl[w], t, cw, &pos);
                if (w == pw) {
                    pref_seen = true;
                    pref_pos = pos;
                    pref_start = s;
                }
                if (best < 0 || s + cw < best_finish ||
                    (s + cw == best_finish && w < best)) {
                    best = w;
                    best_pos = pos;
                    best_start = s;
                    best_finish = s + cw;
                }
            }
        } else {
            int32_t lo = 0, hi = P;
            if (pinned) {
                lo = g->pinned[i];
                hi = lo + 1;
            }
            /* Data-ready time on every candidate worker: predecessors in
             * the outer loop, so the comm model's row lat[p*P + .]
             * streams. */
            for (int32_t w = lo; w < hi; w++) {
                double t = 0.0;
                if (g->ready && g->ready[(size_t)i * uP + (size_t)w] > t)
                    t = g->ready[(size_t)i * uP + (size_t)w];
                if (g->avail && g->avail[w] > t)
                    t = g->avail[w];
                dready[w] = t;
            }
            for (int64_t p = pg.in_off[u]; p < pg.in_off[u + 1]; p++) {
                const heft_arc_t *a = &pg.in[p];
                double f = done[a->v].finish;
                int32_t wf = done[a->v].worker;
                for (int32_t w = lo; w < hi; w++) {
                    double t = f + heft_comm(g, a->c, wf, w);
                    if (t > dready[w])
                        dready[w] = t;
                }
                if (g->comm_msg > 0.0 && wf >= lo && wf < hi)
                    nnear[wf]++;
            }
            if (g->comm_msg > 0.0) {
                /* Every input not on w came from afar (the bounded search
                 * above adds the same product the same way). */
                int64_t nin = pg.in_off[u + 1] - pg.in_off[u];
                for (int32_t w = lo; w < hi; w++) {
                    dready[w] += g->comm_msg * (double)(nin - nnear[w]);
                    nnear[w] = 0;
                }
            }
            for (int32_t w = lo; w < hi; w++) {
                double cw = pg.cu ? pg.cu[u] : sched_cost(g, i, w);
                int64_t pos;
                double s = heft_slot_find(&tl[w], dready[w], cw, &pos);
                if (w == pw) {
                    pref_seen = true;
                    pref_pos = pos;
                    pref_start = s;
                }
                /* Strictly earlier only: ties stay on the lowest worker. */
                if (best < 0 || s + cw < best_finish) {
                    best = w;
                    best_pos = pos;
                    best_start = s;
                    best_finish = s + cw;
                }
            }
        }
        if (pref_seen && pw != best) {
            double cp = pg.cu ? pg.cu[u] : sched_cost(g, i, pw);
            if (pref_start + cp <= best_finish + slack * cp) {
                best = pw;
                best_pos = pref_pos;
                best_start = pref_start;
                best_finish = pref_start + cp;
            }
        }
        st = heft_slot_insert(&tl[best], best_pos, best_start, best_finish);
        if (st != OMPC_OK)
            goto out;
        if (k > 0 && best_finish > bd.heap.end[best])
            heft_bounded_grow(&bd, best, best_finish);
        done[u] = (heft_done_t){.finish = best_finish, .worker = best};
        start[u] = best_start;
    }

    for (int64_t u = 0; u < n; u++) {
        int64_t i = pg.orig[u];
        r->worker[i] = done[u].worker;
        r->start[i] = start[u];
        r->finish[i] = done[u].finish;
    }
    sched_result_close(g, r);
    st = OMPC_OK;
out:
    if (tl)
        for (int32_t w = 0; w < P; w++) {
            free(tl[w].slot);
            free(tl[w].last);
        }
    heft_bounded_free(&bd);
    heft_graph_free(&pg);
    heft_graph_free(&hg);
    free(tl);
    free(pref_q);
    free(pref);
    free(dready);
    free(nnear);
    free(wsum);
    free(done);
    free(start);
    free(seq);
    free(rank);
    sched_prep_free(&prep);
    return st;
}

/* Inputs that r places on another worker than their task, by weight as
 * heft_inputs_home counts them (bytes with a comm model, else cost). */
static double heft_far_weight(const sched_graph_t *g, const sched_result_t *r)
{
    double far = 0.0;
    for (int64_t k = 0; k < g->nedges; k++) {
        const sched_edge_t *e = &g->edges[k];
        if (r->worker[e->from] != r->worker[e->to])
            far += 1.0 + (g->comm_lat ? e->bytes : e->cost);
    }
    return far;
}

/* heft_place, and with g->stay also HEFT with the stay rule: the schedule
 * that moves fewer inputs between workers, unless it is the longer one.
 * Kept by the makespan rather than trusted: keeping tasks with their
 * inputs cuts a stencil's transfers in half on two workers, where the
 * idle worker's gain is illusory, but where the graph is wider than the
 * workers are many and not a multiple of them (4 columns on 3 workers),
 * it piles the columns on two of them (docs/performance.md, "tasks kept
 * with their inputs"). */
static ompc_status_t heft_place_stay(const sched_graph_t *g, int32_t candidates,
                                     sched_result_t *r)
{
    if (!(g->stay > 0.0) || g->ntasks == 0)
        return heft_place(g, candidates, r);
    sched_graph_t plain = *g;
    plain.stay = 0.0;
    size_t n = (size_t)g->ntasks;
    sched_result_t s = {malloc(n * sizeof(int32_t)), malloc(n * sizeof(double)),
                        malloc(n * sizeof(double)), 0.0};
    ompc_status_t st = OMPC_ERR_NOMEM;
    if (!s.worker || !s.start || !s.finish)
        goto out;
    if ((st = heft_place(g, candidates, &s)) != OMPC_OK ||
        (st = heft_place(&plain, candidates, r)) != OMPC_OK)
        goto out;
    if (s.makespan <= r->makespan * (1.0 + 1e-9) &&
        heft_far_weight(g, &s) < heft_far_weight(g, r)) {
        memcpy(r->worker, s.worker, n * sizeof(int32_t));
        memcpy(r->start, s.start, n * sizeof(double));
        memcpy(r->finish, s.finish, n * sizeof(double));
        r->makespan = s.makespan;
    }
out:
    free(s.worker);
    free(s.start);
    free(s.finish);
    return st;
}

/* ------------------------------------------------------------- refine */
/* Tasks re-timed per task of the graph, at most, by the refinement.  A
 * move re-times the tasks after it until the schedule is the same again,
 * which on a stencil is every later task: unbounded, a flush of n tasks
 * would cost O(n^2) of them. */
#define HEFT_REFINE_SCAN 512
/* How far past a task the refinement looks for one to exchange it with,
 * in positions. */
#define HEFT_REFINE_SWAP 16

/* Pinned tasks and tasks with a preferred worker are not moved. */
static inline bool heft_refine_stays(const sched_graph_t *g, int64_t i)
{
    return (g->pinned && g->pinned[i] >= 0) || (g->prefer && g->prefer[i] >= 0);
}

typedef struct heft_skey {
    double start;
    int64_t topo, task;
} heft_skey_t;

static int heft_start_cmp(const void *pa, const void *pb)
{
    const heft_skey_t *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->topo > b->topo) - (a->topo < b->topo);
}

/* The refinement's state.  c*: the schedule kept so far; t*: the trial,
 * equal to c* outside the positions it re-timed.  Each worker's tasks run
 * in position order, each as early as its inputs and the worker allow. */
typedef struct heft_refine {
    const sched_graph_t *g;
    const sched_adj_t *adj;
    int64_t n;
    int64_t *ord; /* position -> task: by start, then topo */
    int32_t *cw, *tw;
    double *cs, *cf, *ts, *tf;
    double *sufmax; /* latest kept finish from a position on */
    double *pend; /* kept worker ends before the trial's task */
    double *tend, *cend; /* during a trial: worker ends, both ways */
    uint64_t *tver; /* the trial tend and cend[w] belong to */
    uint64_t *chg; /* the trial that re-timed or moved a task */
    double *wsum; /* input weight per worker, zero between */
} heft_refine_t;

static void heft_refine_free(heft_refine_t *R)
{
    free(R->ord);
    free(R->cw);
    free(R->tw);
    free(R->cs);
    free(R->cf);
    free(R->ts);
    free(R->tf);
    free(R->sufmax);
    free(R->pend);
    free(R->tend);
    free(R->cend);
    free(R->tver);
    free(R->chg);
    free(R->wsum);
}

static inline double heft_edge_weight(const sched_graph_t *g, const sched_edge_t *e)
{
    return 1.0 + (g->comm_lat ? e->bytes : e->cost);
}

/* Worker x's ends enter trial k at their kept value. */
static inline void heft_refine_touch(heft_refine_t *R, int32_t x, uint64_t k)
{
    if (R->tver[x] != k) {
        R->tver[x] = k;
        R->tend[x] = R->cend[x] = R->pend[x];
    }
}

/* The worker holding most of task u's input weight if it holds more than
 * u's own worker, else -1. */
static int32_t heft_refine_home(heft_refine_t *R, int64_t u)
{
    const sched_graph_t *g = R->g;
    const sched_adj_t *adj = R->adj;
    int32_t a = R->cw[u], h = -1;
    for (int64_t p = adj->pred_off[u]; p < adj->pred_off[u + 1]; p++) {
        const sched_edge_t *e = &g->edges[adj->pred_edge[p]];
        R->wsum[R->cw[e->from]] += heft_edge_weight(g, e);
    }
    for (int64_t p = adj->pred_off[u]; p < adj->pred_off[u + 1]; p++) {
        int32_t x = R->cw[adj->pred_from[p]];
        if (x != a &&
            (h < 0 || R->wsum[x] > R->wsum[h] || (R->wsum[x] == R->wsum[h] && x < h)))
            h = x;
    }
    if (h >= 0 && R->wsum[h] < R->wsum[a])
        h = -1;
    for (int64_t p = adj->pred_off[u]; p < adj->pred_off[u + 1]; p++)
        R->wsum[R->cw[adj->pred_from[p]]] = 0.0;
    return h;
}

/* Where x runs if u moves to h and v (if >= 0) to b. */
static inline int32_t heft_refine_at(const heft_refine_t *R, int64_t x, int64_t u,
                                     int32_t h, int64_t v, int32_t b)
{
    return x == u ? h : x == v ? b : R->cw[x];
}

/* How the weight of inputs moved between workers changes if u moves to h
 * and v (if >= 0) to b: the edges of u, then those of v not to u. */
static double heft_refine_delta(const heft_refine_t *R, int64_t u, int32_t h, int64_t v,
                                int32_t b)
{
    const sched_graph_t *g = R->g;
    const sched_adj_t *adj = R->adj;
    double d = 0.0;
    for (int k = 0; k < 2; k++) {
        int64_t x = k ? v : u;
        if (x < 0)
            break;
        int32_t now = R->cw[x], then = k ? b : h;
        for (int64_t p = adj->pred_off[x]; p < adj->pred_off[x + 1]; p++) {
            int64_t y = adj->pred_from[p];
            if (k && y == u)
                continue;
            const sched_edge_t *e = &g->edges[adj->pred_edge[p]];
            d += heft_edge_weight(g, e) *
                 ((heft_refine_at(R, y, u, h, v, b) != then) - (R->cw[y] != now));
        }
        for (int64_t p = adj->succ_off[x]; p < adj->succ_off[x + 1]; p++) {
            int64_t y = adj->succ_to[p];
            if (k && y == u)
                continue;
            const sched_edge_t *e = &g->edges[adj->succ_edge[p]];
            d += heft_edge_weight(g, e) *
                 ((heft_refine_at(R, y, u, h, v, b) != then) - (R->cw[y] != now));
        }
    }
    return d;
}

/* Trial k: the task at position q0 (u) moved to worker h, and v (if >= 0,
 * at position qv, later in the order) to u's worker, the tasks after u
 * re-timed until the schedule is the kept one again (not before v).  Keeps it if the makespan stays within
 * bound.  *scanned grows by the tasks re-timed. */
static bool heft_refine_try(heft_refine_t *R, int64_t q0, int32_t h, int64_t v,
                            int64_t qv, uint64_t k, double pmax, double bound,
                            int64_t *scanned)
{
    const sched_graph_t *g = R->g;
    int64_t n = R->n, u = R->ord[q0], q;
    int32_t a = R->cw[u];
    double tmax = 0.0;
    int64_t pending = 0, ndiff = 0;
    bool same = false, over = false;
    R->tw[u] = h;
    if (v >= 0)
        R->tw[v] = a;
    for (q = q0; q < n; q++) {
        int64_t i = R->ord[q];
        int32_t w = R->tw[i], c = R->cw[i];
        double t = sched_data_ready(g, R->adj, R->tw, R->tf, i, w);
        heft_refine_touch(R, w, k);
        heft_refine_touch(R, c, k);
        int64_t before = (R->tend[w] != R->cend[w]) +
                         (c != w && R->tend[c] != R->cend[c]);
        double s = t > R->tend[w] ? t : R->tend[w];
        double f = s + sched_cost(g, i, w);
        R->ts[i] = s;
        R->tf[i] = f;
        R->tend[w] = f;
        R->cend[c] = R->cf[i];
        ndiff += (R->tend[w] != R->cend[w]) + (c != w && R->tend[c] != R->cend[c]) -
                 before;
        for (int64_t p = R->adj->pred_off[i]; p < R->adj->pred_off[i + 1]; p++)
            pending -= R->chg[R->adj->pred_from[p]] == k;
        if (i == u || i == v || f != R->cf[i]) {
            R->chg[i] = k;
            pending += R->adj->succ_off[i + 1] - R->adj->succ_off[i];
        }
        if (f > tmax)
            tmax = f;
        ++*scanned;
        if (tmax > bound) {
            over = true;
            break;
        }
        if (pending == 0 && ndiff == 0 && q >= qv) {
            /* From here on every task starts as it did. */
            same = true;
            break;
        }
    }
    int64_t qe = q < n ? q : n - 1;
    double mk = pmax > tmax ? pmax : tmax;
    if (same && qe + 1 < n && R->sufmax[qe + 1] > mk)
        mk = R->sufmax[qe + 1];
    bool keep = !over && mk <= bound;
    for (int64_t j = q0; j <= qe; j++) {
        int64_t i = R->ord[j];
        if (keep) {
            R->cs[i] = R->ts[i];
            R->cf[i] = R->tf[i];
        } else {
            R->ts[i] = R->cs[i];
            R->tf[i] = R->cf[i];
        }
    }
    if (keep) {
        R->cw[u] = h;
        if (v >= 0)
            R->cw[v] = a;
        for (int64_t j = qe; j >= q0; j--) {
            double f = R->cf[R->ord[j]];
            R->sufmax[j] = j + 1 < n && R->sufmax[j + 1] > f ? R->sufmax[j + 1] : f;
        }
    } else {
        R->tw[u] = a;
        if (v >= 0)
            R->tw[v] = h;
    }
    return keep;
}

/* g->refine after HEFT placed r (see ompc_sched.h).  r is left as it was
 * unless a move is kept; short of memory, HEFT's schedule stands (the
 * refinement only improves a valid schedule). */
static void heft_refine(const sched_graph_t *g, sched_result_t *r)
{
    int64_t n = g->ntasks;
    int32_t P = g->nworkers;
    if (!(g->refine > 0.0) || n == 0 || g->nedges == 0)
        return;
    sched_prep_t prep;
    if (sched_prep_create(g, r, &prep) != OMPC_OK)
        return;
    size_t un = (size_t)n + 1, uP = (size_t)P;
    heft_refine_t R = {.g = g, .adj = &prep.adj, .n = n};
    heft_skey_t *key = malloc(un * sizeof(*key));
    R.ord = malloc(un * sizeof(int64_t));
    R.cw = malloc(un * sizeof(int32_t));
    R.tw = malloc(un * sizeof(int32_t));
    R.cs = malloc(un * sizeof(double));
    R.cf = malloc(un * sizeof(double));
    R.ts = malloc(un * sizeof(double));
    R.tf = malloc(un * sizeof(double));
    R.sufmax = malloc(un * sizeof(double));
    R.chg = calloc(un, sizeof(uint64_t));
    R.pend = calloc(uP, sizeof(double));
    R.tend = calloc(uP, sizeof(double));
    R.cend = calloc(uP, sizeof(double));
    R.tver = calloc(uP, sizeof(uint64_t));
    R.wsum = calloc(uP, sizeof(double));
    if (!key || !R.ord || !R.cw || !R.tw || !R.cs || !R.cf || !R.ts || !R.tf ||
        !R.sufmax || !R.chg || !R.pend || !R.tend || !R.cend || !R.tver || !R.wsum)
        goto out;
    /* Start order is a topological order (a task starts after its inputs
     * finish) up to ties of tasks that take no time: topo breaks those. */
    for (int64_t j = 0; j < n; j++)
        key[prep.topo[j]].topo = j;
    for (int64_t i = 0; i < n; i++) {
        key[i].start = r->start[i];
        key[i].task = i;
    }
    qsort(key, (size_t)n, sizeof(*key), heft_start_cmp);
    for (int64_t j = 0; j < n; j++)
        R.ord[j] = key[j].task;
    /* HEFT's own schedule in this form: no task starts later than in r
     * (by induction over the order), so it is within bound. */
    memcpy(R.tw, r->worker, (size_t)n * sizeof(int32_t));
    for (int64_t j = 0; j < n; j++) {
        int64_t i = R.ord[j];
        int32_t w = R.tw[i];
        double t = sched_data_ready(g, &prep.adj, R.tw, R.tf, i, w);
        double s = t > R.pend[w] ? t : R.pend[w];
        R.ts[i] = s;
        R.tf[i] = R.pend[w] = s + sched_cost(g, i, w);
    }
    memcpy(R.cw, R.tw, (size_t)n * sizeof(int32_t));
    memcpy(R.cs, R.ts, (size_t)n * sizeof(double));
    memcpy(R.cf, R.tf, (size_t)n * sizeof(double));
    for (int64_t j = n - 1; j >= 0; j--) {
        double f = R.cf[R.ord[j]];
        R.sufmax[j] = j + 1 < n && R.sufmax[j + 1] > f ? R.sufmax[j + 1] : f;
    }
    memset(R.pend, 0, uP * sizeof(double));

    double bound = r->makespan * g->refine, pmax = 0.0;
    int64_t scanned = 0, budget = n * HEFT_REFINE_SCAN;
    uint64_t trial = 0;
    bool moved = false;
    for (int64_t q0 = 0; q0 < n; q0++) {
        int64_t u = R.ord[q0];
        int32_t h = heft_refine_stays(g, u) || scanned >= budget
                        ? -1
                        : heft_refine_home(&R, u);
        bool kept = false;
        if (h >= 0 && heft_refine_delta(&R, u, h, -1, 0) < 0.0)
            kept = heft_refine_try(&R, q0, h, -1, q0, ++trial, pmax, bound, &scanned);
        if (h >= 0 && !kept) {
            /* Alone it made the schedule longer: with one of h's next tasks
             * in exchange, the loads stay as they were (a stencil's
             * alternation 0101 becomes column blocks 0011 one such swap a
             * step). */
            int64_t best = -1, qbest = q0;
            double bd = 0.0;
            int32_t a = R.cw[u];
            for (int64_t j = q0 + 1; j < n && j <= q0 + HEFT_REFINE_SWAP; j++) {
                int64_t v = R.ord[j];
                if (R.cw[v] != h || heft_refine_stays(g, v))
                    continue;
                double d = heft_refine_delta(&R, u, h, v, a);
                if (d < bd || (best < 0 && d <= 0.0)) {
                    bd = d;
                    best = v;
                    qbest = j;
                }
            }
            if (best >= 0)
                kept = heft_refine_try(&R, q0, h, best, qbest, ++trial, pmax, bound,
                                       &scanned);
        }
        moved |= kept;
        int32_t w = R.cw[u];
        R.pend[w] = R.cf[u];
        if (R.cf[u] > pmax)
            pmax = R.cf[u];
    }
    if (moved) {
        memcpy(r->worker, R.cw, (size_t)n * sizeof(int32_t));
        memcpy(r->start, R.cs, (size_t)n * sizeof(double));
        memcpy(r->finish, R.cf, (size_t)n * sizeof(double));
        sched_result_close(g, r);
    }
out:
    free(key);
    heft_refine_free(&R);
    sched_prep_free(&prep);
}

static ompc_status_t heft_run(const sched_policy_t *self, const sched_graph_t *g,
                              uint64_t seed, sched_state_t *state, sched_result_t *r)
{
    (void)self;
    (void)seed;
    (void)state;
    ompc_status_t st = heft_place_stay(g, 0, r);
    if (st == OMPC_OK)
        heft_refine(g, r);
    return st;
}

/* self is the first member of a sched_heft_policy_t: only
 * sched_heft_policy_init hands out this function. */
ompc_status_t sched_heft_param_run(const sched_policy_t *self, const sched_graph_t *g,
                                   uint64_t seed, sched_state_t *state, sched_result_t *r)
{
    (void)seed;
    (void)state;
    const sched_heft_policy_t *hp = (const sched_heft_policy_t *)self;
    ompc_status_t st = heft_place_stay(g, hp->candidates, r);
    if (st == OMPC_OK)
        heft_refine(g, r);
    return st;
}

void sched_heft_policy_init(sched_heft_policy_t *p, int32_t candidates)
{
    p->policy = (sched_policy_t){
        .name = "heft", .needs = SCHED_NEEDS_MEASURED_COSTS, .run = sched_heft_param_run};
    p->candidates = candidates;
}

const sched_policy_t sched_policy_heft = {
    .name = "heft",
    .needs = SCHED_NEEDS_MEASURED_COSTS,
    .run = heft_run,
};
