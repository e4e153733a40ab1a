/* The scheduler's C API: HEFT's upward ranks and schedule on the published
 * example, corner cases (no tasks, one worker, zero costs, pinning, ready
 * and avail, the comm model), validation errors, the checker rejecting bad
 * schedules, foreign policies, and concurrent calls from several threads. */
#include "sched_internal.h"
#include "sched_test.h"

#include <pthread.h>

/* -------------------------------------------- Topcuoglu et al. 2002 */
static const double topc_cost[10 * 3] = {
    14, 16, 9, 13, 19, 18, 11, 13, 19, 13, 8,  17, 12, 13, 10,
    13, 16, 9, 7,  15, 11, 5,  11, 14, 18, 12, 20, 21, 7,  16,
};
/* Paper numbering minus one. */
static const sched_edge_t topc_edges[] = {
    {0, 1, 18, 0}, {0, 2, 12, 0}, {0, 3, 9, 0},  {0, 4, 11, 0}, {0, 5, 14, 0},
    {1, 7, 19, 0}, {1, 8, 16, 0}, {2, 6, 23, 0}, {3, 7, 27, 0}, {3, 8, 23, 0},
    {4, 8, 13, 0}, {5, 7, 15, 0}, {6, 9, 17, 0}, {7, 9, 11, 0}, {8, 9, 13, 0},
};

static sched_graph_t topc_graph(void)
{
    return (sched_graph_t){.nworkers = 3,
                           .ntasks = 10,
                           .cost = topc_cost,
                           .nedges = 15,
                           .edges = topc_edges};
}

static void test_topcuoglu(void)
{
    sched_graph_t g = topc_graph();
    /* Table of the paper (its text rounds to two decimals). */
    static const double want_rank[10] = {108.0,
                                         77.0,
                                         80.0,
                                         80.0,
                                         69.0,
                                         63.333333333333,
                                         42.666666666667,
                                         35.666666666667,
                                         44.333333333333,
                                         14.666666666667};
    sched_prep_t prep;
    CHECK_OK(sched_prep_create(&g, NULL, &prep));
    double rank[10];
    sched_heft_ranks(&g, &prep, rank);
    for (int i = 0; i < 10; i++) {
        if (fabs(rank[i] - want_rank[i]) > 1e-9) {
            fprintf(stderr, "rank of n%d: %.12g, expected %.12g\n", i + 1, rank[i],
                    want_rank[i]);
            exit(1);
        }
    }
    /* n3 and n4 tie at 80, exactly (HEFT orders by P * rank, which has no
     * rounding here), so n3, the lower index, goes first as in the paper.
     * Either order gives the same schedule (scheduler/README.md and the
     * swapped graph below). */
    CHECK(rank[2] == rank[3]);
    sched_prep_free(&prep);

    int32_t worker[10];
    double start[10], finish[10];
    sched_result_t r = {worker, start, finish, 0};
    CHECK_OK(sched_run(sched_policy_find("heft"), &g, 0, &r));
    /* The published Gantt chart (Fig. 5(a)), P1..P3 = workers 0..2. */
    static const int32_t want_w[10] = {2, 0, 2, 1, 2, 1, 2, 0, 1, 1};
    static const double want_s[10] = {0, 27, 9, 18, 28, 26, 38, 57, 56, 73};
    for (int i = 0; i < 10; i++) {
        CHECK(worker[i] == want_w[i]);
        CHECK(start[i] == want_s[i]);
        CHECK(finish[i] == want_s[i] + topc_cost[i * 3 + want_w[i]]);
    }
    CHECK(r.makespan == 80.0);
    CHECK_VALID(&g, &r);

    /* The same graph with every edge reversed in input order and n3/n4
     * swapped in index order gives the same schedule. */
    double cost2[30];
    sched_edge_t edges2[15];
    memcpy(cost2, topc_cost, sizeof(cost2));
    memcpy(cost2 + 2 * 3, topc_cost + 3 * 3, 3 * sizeof(double));
    memcpy(cost2 + 3 * 3, topc_cost + 2 * 3, 3 * sizeof(double));
    for (int k = 0; k < 15; k++) {
        edges2[k] = topc_edges[14 - k];
        if (edges2[k].from == 2 || edges2[k].from == 3)
            edges2[k].from ^= 1;
        if (edges2[k].to == 2 || edges2[k].to == 3)
            edges2[k].to ^= 1;
    }
    sched_graph_t g2 = g;
    g2.cost = cost2;
    g2.edges = edges2;
    CHECK_OK(sched_run(&sched_policy_heft, &g2, 0, &r));
    CHECK(worker[2] == 1 && start[2] == 18 && worker[3] == 2 && start[3] == 9);
    CHECK(r.makespan == 80.0);
    printf("topcuoglu: ok\n");
}

/* ---------------------------------------------------------- corner cases */
static void test_empty(void)
{
    sched_graph_t g = {.nworkers = 4, .ntasks = 0};
    for (size_t k = 0; sched_policy_at(k); k++) {
        sched_result_t r = {NULL, NULL, NULL, -1.0};
        CHECK_OK(sched_run(sched_policy_at(k), &g, 1, &r));
        CHECK(r.makespan == 0.0);
        CHECK_OK(sched_check(&g, &r));
    }
    printf("empty: ok\n");
}

static void test_one_worker(void)
{
    /* A diamond given backwards (index order is reverse topological). */
    double cost[4] = {1, 2, 3, 4};
    sched_edge_t e[4] = {{3, 2, 5, 0}, {3, 1, 5, 0}, {2, 0, 5, 0}, {1, 0, 5, 0}};
    sched_graph_t g = {.nworkers = 1, .ntasks = 4, .cost = cost, .nedges = 4, .edges = e};
    int32_t w[4];
    double s[4], f[4];
    sched_result_t r = {w, s, f, 0};
    for (size_t k = 0; sched_policy_at(k); k++) {
        CHECK_OK(sched_run(sched_policy_at(k), &g, 7, &r));
        CHECK_VALID(&g, &r);
        CHECK(r.makespan == 10.0);
        CHECK(s[3] == 0.0 && f[0] == 10.0);
    }
    printf("one worker: ok\n");
}

/* Zero costs make ranks tie along edges; here every successor has a lower
 * index than its predecessor, so "rank, then index" alone would schedule
 * it first. */
static void test_zero_costs(void)
{
    enum { N = 6 };
    double cost[N * 2] = {0};
    sched_edge_t e[N - 1];
    for (int i = 0; i < N - 1; i++)
        e[i] = (sched_edge_t){i + 1, i, 0, 0};
    sched_graph_t g = {
        .nworkers = 2, .ntasks = N, .cost = cost, .nedges = N - 1, .edges = e};
    int32_t w[N];
    double s[N], f[N];
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
    CHECK_VALID(&g, &r);
    CHECK(r.makespan == 0.0);

    /* Random graphs with many zeros, every policy. */
    for (uint64_t seed = 1; seed <= 20; seed++) {
        st_graph_t sg;
        st_graph_random(&sg, seed, 300, 4, 6, 3,
                        ST_ZERO | (seed % 2 ? ST_COMM_MODEL : 0));
        for (size_t k = 0; sched_policy_at(k); k++) {
            CHECK_OK(sched_run(sched_policy_at(k), &sg.g, seed, &sg.r));
            CHECK_VALID(&sg.g, &sg.r);
        }
        st_graph_free(&sg);
    }
    printf("zero costs: ok\n");
}

static void test_pinned_ready_avail(void)
{
    /* Two equal independent tasks, two workers: task 1 pinned to worker 0,
     * worker 1 busy until 5, task 0's input reaches worker 0 at 3. */
    double cost[4] = {4, 4, 3, 4};
    int32_t pinned[2] = {-1, 0};
    double ready[4] = {3, 0, 0, 0};
    double avail[2] = {0, 5};
    sched_graph_t g = {.nworkers = 2,
                       .ntasks = 2,
                       .cost = cost,
                       .pinned = pinned,
                       .ready = ready,
                       .avail = avail};
    int32_t w[2];
    double s[2], f[2];
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
    CHECK_VALID(&g, &r);
    /* Ranks 4 and 3: task 0 first.  Worker 0 from 3 ends at 7, worker 1
     * from 5 ends at 9: task 0 on worker 0 [3, 7).  Task 1 must use worker
     * 0, where the gap [0, 3) holds it exactly. */
    CHECK(w[0] == 0 && s[0] == 3 && w[1] == 0 && s[1] == 0 && f[1] == 3);
    CHECK(r.makespan == 7);
    for (size_t k = 0; sched_policy_at(k); k++) {
        CHECK_OK(sched_run(sched_policy_at(k), &g, 3, &r));
        CHECK_VALID(&g, &r);
        CHECK(w[1] == 0);
    }
    printf("pinned/ready/avail: ok\n");
}

static void test_prefer(void)
{
    /* Three equal independent tasks, all preferring worker 1: HEFT takes
     * the preference while it finishes at most 1.5 tasks later than the
     * best worker.  Task 0: worker 1 ties worker 0.  Task 1: worker 1 ends
     * at 20, worker 0 at 10: taken.  Task 2: worker 1 would end at 30,
     * worker 0 at 10, 30 > 10 + 15: worker 0. */
    double cost[6] = {10, 10, 10, 10, 10, 10};
    int32_t prefer[3] = {1, 1, 1};
    sched_graph_t g = {.nworkers = 2, .ntasks = 3, .cost = cost, .prefer = prefer};
    int32_t w[3];
    double s[3], f[3];
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
    CHECK_VALID(&g, &r);
    CHECK(w[0] == 1 && w[1] == 1 && w[2] == 0 && r.makespan == 20);
    /* A pin wins over a preference. */
    int32_t pinned[3] = {0, -1, -1};
    g.pinned = pinned;
    CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
    CHECK_VALID(&g, &r);
    CHECK(w[0] == 0);
    g.pinned = NULL;

    /* Without prefer, HEFT works them out itself: 4 entry tasks, each
     * feeding its own column and its neighbours' of a second step. */
    double c8[16];
    for (int i = 0; i < 16; i++)
        c8[i] = 10;
    sched_edge_t e[10];
    int64_t ne = 0;
    for (int64_t c = 0; c < 4; c++)
        for (int64_t d = c - 1; d <= c + 1; d++)
            if (d >= 0 && d < 4)
                e[ne++] = (sched_edge_t){d, 4 + c, 1, 0};
    sched_graph_t st = {.nworkers = 2, .ntasks = 8, .cost = c8, .nedges = ne, .edges = e};
    int32_t pref[8];
    CHECK_OK(sched_entry_prefs(&st, pref));
    CHECK(pref[0] == 0 && pref[1] == 0 && pref[2] == 1 && pref[3] == 1);
    for (int i = 4; i < 8; i++)
        CHECK(pref[i] == -1);
    /* Entry tasks that feed nothing in common get none. */
    st.nedges = 0;
    CHECK_OK(sched_entry_prefs(&st, pref));
    for (int i = 0; i < 8; i++)
        CHECK(pref[i] == -1);
    printf("prefer: ok\n");
}

static void test_comm_model(void)
{
    /* Worker 1 is fast but far: 0 -> 1 costs 10 + bytes / 1024. */
    double cost[4] = {1, 50, 20, 1};
    double lat[4] = {0, 10, 10, 0}, inv_bw[4] = {0, 1.0 / 1024, 1.0 / 1024, 0};
    sched_edge_t e[1] = {{0, 1, 999 /* ignored with the model */, 2048}};
    sched_graph_t g = {.nworkers = 2,
                       .ntasks = 2,
                       .cost = cost,
                       .nedges = 1,
                       .edges = e,
                       .comm_lat = lat,
                       .comm_inv_bw = inv_bw};
    int32_t w[2];
    double s[2], f[2];
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
    CHECK_VALID(&g, &r);
    /* Task 1: worker 0 ends at 1+20 = 21, worker 1 at 1+12+1 = 14. */
    CHECK(w[0] == 0 && w[1] == 1 && s[1] == 13 && r.makespan == 14);
    printf("comm model: ok\n");
}

/* comm_msg: a cost per input from another worker, summed where latencies
 * take the max.  A fork of two short tasks joined again is worth spreading
 * while messages cost only their latency, and kept on one worker once each
 * costs more than the parallelism gains; a 4-wide stencil on 2 workers
 * (each task reads its neighbours' last values) whose hops cost less than
 * a task is cut into column blocks, 2 transfers a step, once a message
 * costs as much as a task, where latencies alone give 6 a step; and
 * independent work still spreads. */
static size_t far_edges(const sched_graph_t *g, const int32_t *w)
{
    size_t n = 0;
    for (int64_t k = 0; k < g->nedges; k++)
        n += w[g->edges[k].from] != w[g->edges[k].to];
    return n;
}

static void test_comm_msg(void)
{
    /* 0 -> {1, 2} -> 3, every task 10, edges 2. */
    double cost[4] = {10, 10, 10, 10};
    sched_edge_t e[4] = {{0, 1, 2, 0}, {0, 2, 2, 0}, {1, 3, 2, 0}, {2, 3, 2, 0}};
    sched_graph_t g = {.nworkers = 2,
                       .ntasks = 4,
                       .cost = cost,
                       .nedges = 4,
                       .edges = e,
                       .cost_uniform = 1};
    int32_t w[4];
    double s[4], f[4];
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
    CHECK_VALID(&g, &r);
    /* Spread: the second branch on the other worker, 12..22, and the join
     * there at 22 (the first's data arrives at 20 + 2). */
    CHECK(w[1] != w[2] && r.makespan == 32);
    g.comm_msg = 10;
    CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
    CHECK_VALID(&g, &r);
    /* Apart, the branch would end at 32 and the join at 54: one worker, 40. */
    CHECK(w[0] == w[1] && w[1] == w[2] && w[2] == w[3] && r.makespan == 40);
    /* A schedule that ignores comm_msg is refused by both checkers. */
    int32_t w2[4] = {0, 0, 1, 0};
    double s2[4] = {0, 10, 12, 24}, f2[4] = {10, 20, 22, 34};
    sched_result_t bad = {w2, s2, f2, 34};
    CHECK(sched_check(&g, &bad) == OMPC_ERR_INVALID);
    CHECK(strstr(sched_last_error(), "comm_msg") != NULL);
    CHECK(st_check(&g, &bad) != NULL);
    g.comm_msg = 0;
    CHECK_OK(sched_check(&g, &bad));

    /* A 4-wide stencil, 40 steps, tasks 100, latency 20. */
    enum { W = 4, T = 40, N = W * T };
    static double scost[N];
    static sched_edge_t se[3 * N];
    static int32_t sw[N];
    static double ss[N], sf[N];
    int64_t m = 0;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < W; c++) {
            scost[t * W + c] = 100;
            for (int d = c - 1; t > 0 && d <= c + 1; d++)
                if (d >= 0 && d < W)
                    se[m++] = (sched_edge_t){(t - 1) * W + d, t * W + c, 20, 0};
        }
    sched_graph_t sg = {.nworkers = 2,
                        .ntasks = N,
                        .cost = scost,
                        .nedges = m,
                        .edges = se,
                        .cost_uniform = 1};
    sched_result_t sr = {sw, ss, sf, 0};
    CHECK_OK(sched_run(&sched_policy_heft, &sg, 0, &sr));
    CHECK_VALID(&sg, &sr);
    size_t far0 = far_edges(&sg, sw);
    double mk0 = sr.makespan;
    sg.comm_msg = 100;
    CHECK_OK(sched_run(&sched_policy_heft, &sg, 0, &sr));
    CHECK_VALID(&sg, &sr);
    size_t far1 = far_edges(&sg, sw);
    printf("comm_msg: stencil %dx%d: %zu transfers, makespan %g without; %zu, %g with\n",
           W, T, far0, mk0, far1, sr.makespan);
    /* Column blocks: 2 a step after the first, and no slower than 2
     * tasks a step with a hop and a message between steps. */
    CHECK(far1 <= 2 * (T - 1));
    CHECK(far1 < far0);
    CHECK(sr.makespan <= T * (2 * 100 + 20 + 100));

    /* 8 independent tasks of 100 after one entry: still spread 4 and 4. */
    double icost[9] = {1, 100, 100, 100, 100, 100, 100, 100, 100};
    sched_edge_t ie[8];
    for (int i = 0; i < 8; i++)
        ie[i] = (sched_edge_t){0, i + 1, 5, 0};
    sched_graph_t ig = {.nworkers = 2,
                        .ntasks = 9,
                        .cost = icost,
                        .nedges = 8,
                        .edges = ie,
                        .cost_uniform = 1,
                        .comm_msg = 20};
    int32_t iw[9];
    double is[9], ifin[9];
    sched_result_t ir = {iw, is, ifin, 0};
    CHECK_OK(sched_run(&sched_policy_heft, &ig, 0, &ir));
    CHECK_VALID(&ig, &ir);
    CHECK(ir.makespan <= 1 + 5 + 20 + 4 * 100);
    printf("comm model per message: ok\n");
}

/* stay: HEFT also places with each task kept on the worker holding most
 * of its inputs unless it finishes more than stay times its cost later
 * there, and keeps that schedule when it moves fewer inputs and is no
 * longer.  Task Bench's shapes, 4 wide, tasks 100, hops 20: on 2 workers
 * the stencil is cut into column blocks (2 transfers a step, where HEFT
 * alone takes about 6) in the same makespan; on 3 workers, where keeping
 * columns together would pile them on two, HEFT's own schedule stays;
 * fft and tree never get longer nor move more.  The bounded search with
 * every worker a candidate places as the full one. */
enum { SHAPE_W = 4, SHAPE_T = 40, SHAPE_N = SHAPE_W * SHAPE_T };

static int64_t shape_edges(char shape, sched_edge_t *e)
{
    int64_t m = 0;
    for (int t = 1; t < SHAPE_T; t++)
        for (int c = 0; c < SHAPE_W; c++) {
            int64_t to = (int64_t)t * SHAPE_W + c, base = (int64_t)(t - 1) * SHAPE_W;
            if (shape == 's') {
                for (int d = c - 1; d <= c + 1; d++)
                    if (d >= 0 && d < SHAPE_W)
                        e[m++] = (sched_edge_t){base + d, to, 20, 0};
            } else if (shape == 'f') {
                /* Task Bench's butterfly: strides 1, 2, 1, 2, ... */
                int stride = 1 << ((t - 1) % 2);
                for (int d = c - stride; d <= c + stride; d += stride)
                    if (d >= 0 && d < SHAPE_W)
                        e[m++] = (sched_edge_t){base + d, to, 20, 0};
            } else {
                /* Tree: point c of step t reads point c/2 of step t-1, of
                 * a tree 1, 2, then 4 wide. */
                int wide = t - 1 < 2 ? 1 << (t - 1) : SHAPE_W;
                if (c < 2 * wide)
                    e[m++] = (sched_edge_t){base + c / 2, to, 20, 0};
            }
        }
    return m;
}

static void test_stay(void)
{
    static double cost[SHAPE_N];
    static sched_edge_t e[3 * SHAPE_N];
    static int32_t w[SHAPE_N], w2[SHAPE_N];
    static double s[SHAPE_N], f[SHAPE_N], s2[SHAPE_N], f2[SHAPE_N];
    for (int i = 0; i < SHAPE_N; i++)
        cost[i] = 100;
    for (int32_t P = 2; P <= 3; P++)
        for (const char *shape = "sft"; *shape; shape++) {
            int64_t m = shape_edges(*shape, e);
            sched_graph_t g = {.nworkers = P,
                               .ntasks = SHAPE_N,
                               .cost = cost,
                               .nedges = m,
                               .edges = e,
                               .cost_uniform = 1};
            sched_result_t r = {w, s, f, 0};
            CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
            CHECK_VALID(&g, &r);
            size_t far0 = far_edges(&g, w);
            double mk0 = r.makespan;
            g.stay = 1.0;
            CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
            CHECK_VALID(&g, &r);
            size_t far1 = far_edges(&g, w);
            printf("stay: %c on %d workers: %zu transfers, makespan %g without; %zu, %g "
                   "with\n",
                   *shape, (int)P, far0, mk0, far1, r.makespan);
            CHECK(r.makespan <= mk0 && far1 <= far0);
            if (*shape == 's' && P == 2)
                CHECK(far1 <= 2 * (SHAPE_T - 1) && far1 < far0);
            sched_heft_policy_t hp;
            sched_heft_policy_init(&hp, P);
            sched_result_t r2 = {w2, s2, f2, 0};
            CHECK_OK(sched_run(&hp.policy, &g, 0, &r2));
            CHECK(r2.makespan == r.makespan && memcmp(w, w2, sizeof(w)) == 0);
        }
    /* A negative or non-finite stay is refused. */
    sched_graph_t bad = {
        .nworkers = 2, .ntasks = 1, .cost = cost, .cost_uniform = 1, .stay = -1};
    sched_result_t r = {w, s, f, 0};
    CHECK(sched_run(&sched_policy_heft, &bad, 0, &r) == OMPC_ERR_INVALID);
    CHECK(strstr(sched_last_error(), "stay") != NULL);
    printf("stay: ok\n");
}

/* ------------------------------------------------------------ validation */
static int sentinel_untouched(const int32_t *w, int n)
{
    for (int i = 0; i < n; i++)
        if (w[i] != -77)
            return 0;
    return 1;
}

/* Every graph passed here has at most this many tasks. */
#define MAX_INVALID_TASKS 32

static void expect_invalid(const sched_graph_t *g, const char *needle, int64_t task)
{
    int32_t w[MAX_INVALID_TASKS];
    double s[MAX_INVALID_TASKS], f[MAX_INVALID_TASKS];
    CHECK(g->ntasks <= MAX_INVALID_TASKS);
    for (int i = 0; i < MAX_INVALID_TASKS; i++)
        w[i] = -77;
    sched_result_t r = {w, s, f, 0};
    for (size_t k = 0; sched_policy_at(k); k++) {
        ompc_status_t st = sched_run(sched_policy_at(k), g, 0, &r);
        if (st != OMPC_ERR_INVALID || !strstr(sched_last_error(), needle)) {
            fprintf(stderr, "%s: got %s \"%s\", expected OMPC_ERR_INVALID \"...%s...\"\n",
                    sched_policy_at(k)->name, ompc_status_str(st), sched_last_error(),
                    needle);
            exit(1);
        }
        CHECK(sched_last_error_task() == task);
        CHECK(sentinel_untouched(w, MAX_INVALID_TASKS));
    }
    CHECK(sched_check(g, &r) == OMPC_ERR_INVALID);
}

static void test_validation(void)
{
    double cost[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    sched_edge_t e[4] = {{0, 1, 1, 0}, {1, 2, 1, 0}, {2, 3, 1, 0}, {3, 1, 1, 0}};
    sched_graph_t g = {.nworkers = 2, .ntasks = 4, .cost = cost, .nedges = 3, .edges = e};

    sched_graph_t b = g;
    b.nedges = 4;
    expect_invalid(&b, "the edges form a cycle: 1 -> 2 -> 3 -> 1 (3 tasks)", 1);
    sched_edge_t self[1] = {{2, 2, 0, 0}};
    b = g;
    b.edges = self;
    b.nedges = 1;
    expect_invalid(&b, "cycle: 2 -> 2 (1 task)", 2);

    /* A long cycle is shortened in the message, from its lowest task. */
    enum { L = 20 };
    double lcost[L];
    sched_edge_t ring[L];
    for (int i = 0; i < L; i++) {
        lcost[i] = 1;
        ring[i] = (sched_edge_t){(i + 1) % L, i, 1, 0};
    }
    sched_graph_t lg = {
        .nworkers = 1, .ntasks = L, .cost = lcost, .nedges = L, .edges = ring};
    expect_invalid(&lg,
                   "cycle: 0 -> 19 -> 18 -> 17 -> 16 -> 15 -> 14 -> 13 -> ... -> 0 "
                   "(20 tasks)",
                   0);

    sched_edge_t bad[1] = {{0, 4, 1, 0}};
    b = g;
    b.edges = bad;
    b.nedges = 1;
    expect_invalid(&b, "edge 0: to = 4 is out of range (ntasks = 4)", -1);
    bad[0] = (sched_edge_t){-1, 2, 1, 0};
    expect_invalid(&b, "edge 0: from = -1 is out of range", -1);
    bad[0] = (sched_edge_t){0, 2, -1, 0};
    expect_invalid(&b, "edge 0 (0 -> 2): cost is -1", 2);

    double neg[8] = {1, 1, 1, 1, 1, -2, 1, 1};
    b = g;
    b.cost = neg;
    expect_invalid(&b, "task 2: cost on worker 1 is -2", 2);
    neg[5] = NAN;
    expect_invalid(&b, "task 2: cost on worker 1 is nan", 2);

    int32_t pin[4] = {-1, 2, -1, -1};
    b = g;
    b.pinned = pin;
    expect_invalid(&b, "task 1: pinned to worker 2, but the workers are 0..1", 1);
    b = g;
    b.prefer = pin;
    expect_invalid(&b, "task 1: prefers worker 2, but the workers are 0..1", 1);

    b = g;
    b.nworkers = 0;
    expect_invalid(&b, "nworkers = 0", -1);
    double lat[4] = {0};
    b = g;
    b.comm_lat = lat;
    expect_invalid(&b, "comm_lat and comm_inv_bw must be given together", -1);
    b = g;
    b.comm_msg = -1;
    expect_invalid(&b, "comm_msg is -1, expected a finite value >= 0", -1);
    b = g;
    b.cost = NULL;
    expect_invalid(&b, "cost is NULL", -1);

    /* A NULL result array is refused too. */
    sched_result_t nr = {NULL, NULL, NULL, 0};
    CHECK(sched_run(&sched_policy_heft, &g, 0, &nr) == OMPC_ERR_INVALID);
    CHECK(sched_run(NULL, &g, 0, &nr) == OMPC_ERR_INVALID);
    CHECK(sched_policy_find("fifo") == NULL && sched_policy_find(NULL) == NULL);
    CHECK(sched_policy_find("heft") == &sched_policy_heft);
    printf("validation: ok\n");
}

/* The checker must reject each kind of broken schedule. */
static void test_checker(void)
{
    sched_graph_t g = topc_graph();
    int32_t w[10];
    double s[10], f[10];
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
    int32_t w0[10];
    double s0[10], f0[10];
    memcpy(w0, w, sizeof(w));
    memcpy(s0, s, sizeof(s));
    memcpy(f0, f, sizeof(f));
#define RESTORE()                                                                        \
    do {                                                                                 \
        memcpy(w, w0, sizeof(w));                                                        \
        memcpy(s, s0, sizeof(s));                                                        \
        memcpy(f, f0, sizeof(f));                                                        \
        r.makespan = 80;                                                                 \
    } while (0)
#define REJECT(needle)                                                                   \
    do {                                                                                 \
        CHECK(sched_check(&g, &r) == OMPC_ERR_INVALID);                                  \
        CHECK(strstr(sched_last_error(), needle));                                       \
        CHECK(st_check(&g, &r) != NULL);                                                 \
        RESTORE();                                                                       \
    } while (0)
    CHECK_OK(sched_check(&g, &r));
    /* n10 one unit early: its input from n8 arrives at 62 + 11 = 73. */
    s[9] -= 1;
    f[9] -= 1;
    r.makespan = 79;
    REJECT("before predecessor 7 (worker 0) finishes at 62 plus communication 11");
    /* n7 moved into n5's interval on P3. */
    s[6] = 30;
    f[6] = 41;
    REJECT("overlap on worker 2");
    f[3] += 1;
    REJECT("finish 27 != start 18 + cost 8");
    r.makespan = 81;
    REJECT("makespan 81");
    w[0] = 3;
    REJECT("worker 3 is not one of 0..2");
    /* n2 on P2 keeps its times: wrong cost now. */
    w[1] = 1;
    REJECT("!= start");
#undef REJECT
#undef RESTORE
    /* Pinning and avail are checked too. */
    int32_t pin[10] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, 2};
    g.pinned = pin;
    CHECK(sched_check(&g, &r) == OMPC_ERR_INVALID);
    CHECK(strstr(sched_last_error(), "task 9: runs on worker 1 but is pinned to 2"));
    g.pinned = NULL;
    double avail[3] = {0, 0, 1};
    g.avail = avail;
    CHECK(sched_check(&g, &r) == OMPC_ERR_INVALID);
    CHECK(strstr(sched_last_error(), "before the worker is available at 1"));
    printf("checker: ok\n");
}

/* ------------------------------------------------------ foreign policies */
static int foreign_calls;

static ompc_status_t foreign_run(const sched_policy_t *self, const sched_graph_t *g,
                                 uint64_t seed, sched_state_t *state, sched_result_t *r)
{
    (void)self;
    (void)seed;
    (void)state;
    foreign_calls++;
    /* Everything on worker 0, one after the other, in index order (the
     * graph below is given topologically). */
    double t = 0;
    for (int64_t i = 0; i < g->ntasks; i++) {
        r->worker[i] = 0;
        r->start[i] = t;
        t += g->cost[i * g->nworkers];
        r->finish[i] = t;
    }
    r->makespan = t;
    return OMPC_OK;
}

static void test_foreign_policy(void)
{
    static const sched_policy_t serial = {"serial", 0, foreign_run};
    sched_graph_t g = topc_graph();
    int32_t w[10];
    double s[10], f[10];
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(&serial, &g, 0, &r));
    CHECK(foreign_calls == 1);
    CHECK_VALID(&g, &r);
    sched_edge_t cyc[16];
    memcpy(cyc, topc_edges, sizeof(topc_edges));
    cyc[15] = (sched_edge_t){9, 0, 1, 0};
    g.edges = cyc;
    g.nedges = 16;
    CHECK(sched_run(&serial, &g, 0, &r) == OMPC_ERR_INVALID);
    CHECK(foreign_calls == 1); /* never called on an invalid graph */
    printf("foreign policy: ok\n");
}

/* ----------------------------------------------------------- threads */
typedef struct thread_arg {
    const sched_graph_t *g;
    const sched_result_t *want;
    int index;
    int failures;
} thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *a = p;
    int64_t n = a->g->ntasks;
    int32_t *w = malloc((size_t)n * sizeof(int32_t));
    double *s = malloc((size_t)n * sizeof(double));
    double *f = malloc((size_t)n * sizeof(double));
    CHECK(w && s && f);
    sched_result_t r = {w, s, f, 0};
    /* Odd threads also fail on purpose: their error must stay theirs. */
    sched_graph_t bad = *a->g;
    bad.nworkers = 0;
    for (int it = 0; it < 20; it++) {
        if (sched_run(&sched_policy_heft, a->g, 0, &r) != OMPC_OK ||
            memcmp(w, a->want->worker, (size_t)n * sizeof(int32_t)) != 0 ||
            memcmp(s, a->want->start, (size_t)n * sizeof(double)) != 0)
            a->failures++;
        if (a->index % 2) {
            if (sched_run(&sched_policy_heft, &bad, 0, &r) != OMPC_ERR_INVALID ||
                !strstr(sched_last_error(), "nworkers = 0"))
                a->failures++;
        } else if (sched_last_error()[0] != '\0') {
            a->failures++;
        }
    }
    free(w);
    free(s);
    free(f);
    return NULL;
}

static void test_threads(void)
{
    st_graph_t sg;
    st_graph_random(&sg, 99, 2000, 16, 20, 4, ST_COMM_MODEL | ST_PINNED);
    CHECK_OK(sched_run(&sched_policy_heft, &sg.g, 0, &sg.r));
    CHECK_VALID(&sg.g, &sg.r);
    enum { T = 4 };
    pthread_t th[T];
    thread_arg_t args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (thread_arg_t){&sg.g, &sg.r, i, 0};
        CHECK(pthread_create(&th[i], NULL, thread_main, &args[i]) == 0);
    }
    for (int i = 0; i < T; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK(args[i].failures == 0);
    }
    st_graph_free(&sg);
    printf("threads: ok\n");
}

/* Inputs moved between workers, weighed as HEFT's refine does. */
static double far_weight(const sched_graph_t *g, const int32_t *w)
{
    double far = 0.0;
    for (int64_t k = 0; k < g->nedges; k++)
        if (w[g->edges[k].from] != w[g->edges[k].to])
            far += 1.0 + (g->comm_lat ? g->edges[k].bytes : g->edges[k].cost);
    return far;
}

/* refine: after HEFT, single tasks move to the worker holding most of
 * their inputs where that moves fewer inputs and the makespan stays within
 * refine times HEFT's.  Task Bench's shapes (tasks 100, hops 20): never
 * longer than allowed nor more inputs moved, the stencil on 2 workers
 * with fewer transfers; the bounded search with every worker a candidate
 * refines as the full one; random graphs with every constraint the
 * checkers know stay valid. */
static void test_refine(void)
{
    static double cost[SHAPE_N];
    static sched_edge_t e[3 * SHAPE_N];
    static int32_t w[SHAPE_N], w2[SHAPE_N];
    static double s[SHAPE_N], f[SHAPE_N], s2[SHAPE_N], f2[SHAPE_N];
    for (int i = 0; i < SHAPE_N; i++)
        cost[i] = 100;
    for (int32_t P = 2; P <= 3; P++)
        for (const char *shape = "sft"; *shape; shape++) {
            int64_t m = shape_edges(*shape, e);
            sched_graph_t g = {.nworkers = P,
                               .ntasks = SHAPE_N,
                               .cost = cost,
                               .nedges = m,
                               .edges = e,
                               .cost_uniform = 1};
            sched_result_t r = {w, s, f, 0};
            CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
            size_t far0 = far_edges(&g, w);
            double mk0 = r.makespan;
            for (double refine = 1.0; refine <= 1.21; refine += 0.1) {
                g.refine = refine;
                CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
                CHECK_VALID(&g, &r);
                size_t far1 = far_edges(&g, w);
                printf("refine %.1f: %c on %d workers: %zu transfers, makespan %g "
                       "without; %zu, %g with\n",
                       refine, *shape, (int)P, far0, mk0, far1, r.makespan);
                CHECK(r.makespan <= mk0 * refine && far1 <= far0);
                if (*shape == 's' && P == 2)
                    CHECK(far1 < far0);
                sched_heft_policy_t hp;
                sched_heft_policy_init(&hp, P);
                sched_result_t r2 = {w2, s2, f2, 0};
                CHECK_OK(sched_run(&hp.policy, &g, 0, &r2));
                CHECK(r2.makespan == r.makespan && memcmp(w, w2, sizeof(w)) == 0);
            }
        }
    /* Hops as long as a task (a comm model, 16 bytes an input): HEFT
     * alternates the stencil's steps 0101, 1010, where every task holds as
     * many inputs on either worker; even exchanges reach column blocks,
     * through schedules longer on the way than at the end. */
    {
        int64_t m = shape_edges('s', e);
        for (int64_t k = 0; k < m; k++)
            e[k] = (sched_edge_t){e[k].from, e[k].to, 0, 16};
        double lat[4] = {0, 100, 100, 0}, ibw[4] = {0, 1e-3, 1e-3, 0};
        sched_graph_t g = {.nworkers = 2,
                           .ntasks = SHAPE_N,
                           .cost = cost,
                           .nedges = m,
                           .edges = e,
                           .comm_lat = lat,
                           .comm_inv_bw = ibw,
                           .cost_uniform = 1};
        sched_result_t r = {w, s, f, 0};
        CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
        size_t far0 = far_edges(&g, w);
        double mk0 = r.makespan;
        g.refine = 1.25;
        CHECK_OK(sched_run(&sched_policy_heft, &g, 0, &r));
        CHECK_VALID(&g, &r);
        size_t far1 = far_edges(&g, w);
        printf("refine 1.25: s, hops of a task: %zu transfers, makespan %g without; "
               "%zu, %g with\n",
               far0, mk0, far1, r.makespan);
        CHECK(far1 <= 2 * SHAPE_T && far1 < far0 && r.makespan <= mk0 * 1.25);
    }
    /* Random graphs with every constraint: valid, no longer than allowed,
     * pinned tasks where pinned, and off (0) is HEFT's schedule. */
    for (uint64_t seed = 1; seed <= 64; seed++) {
        unsigned flags = (unsigned)seed & 63u;
        int32_t P = 2 + (int32_t)(seed % 4);
        st_graph_t sg;
        st_graph_random(&sg, seed, 200, P, 10, 3, flags);
        CHECK_OK(sched_run(&sched_policy_heft, &sg.g, 0, &sg.r));
        double mk0 = sg.r.makespan;
        double far0 = far_weight(&sg.g, sg.worker);
        sg.g.refine = 1.0 + (double)(seed % 3) * 0.1;
        CHECK_OK(sched_run(&sched_policy_heft, &sg.g, 0, &sg.r));
        CHECK_VALID(&sg.g, &sg.r);
        CHECK(sg.r.makespan <= mk0 * sg.g.refine);
        CHECK(far_weight(&sg.g, sg.worker) <= far0);
        st_graph_free(&sg);
    }
    /* Below 1 (but not 0), negative or not finite: refused. */
    double bads[3] = {0.5, -1, INFINITY};
    for (int k = 0; k < 3; k++) {
        sched_graph_t bad = {.nworkers = 2,
                             .ntasks = 1,
                             .cost = cost,
                             .cost_uniform = 1,
                             .refine = bads[k]};
        sched_result_t r = {w, s, f, 0};
        CHECK(sched_run(&sched_policy_heft, &bad, 0, &r) == OMPC_ERR_INVALID);
        CHECK(strstr(sched_last_error(), "refine") != NULL);
    }
    printf("refine: ok\n");
}

int main(void)
{
    test_topcuoglu();
    test_empty();
    test_one_worker();
    test_zero_costs();
    test_pinned_ready_avail();
    test_prefer();
    test_comm_model();
    test_comm_msg();
    test_stay();
    test_refine();
    test_validation();
    test_checker();
    test_foreign_policy();
    test_threads();
    printf("sched_api: all ok\n");
    return 0;
}
