/* Every policy on many random graphs (both checkers must accept each
 * schedule), plus the rules particular to each policy: round-robin's
 * turn order (kept across calls, none for data-only tasks), random's
 * determinism for a seed, locality keeping a chain together but not a tree
 * on one worker, HEFT spreading equal independent tasks, what each policy
 * declares it needs, bounded HEFT (valid; equal to full HEFT when its
 * candidates cover every worker) and cost_uniform graphs. */
#include "sched_test.h"

static void test_all_valid(void)
{
    static const int32_t workers[] = {1, 2, 3, 8, 32};
    static const int64_t sizes[] = {1, 10, 200, 1000};
    static const unsigned flag_sets[] = {
        0,
        ST_COMM_MODEL,
        ST_PINNED | ST_READY,
        ST_AVAIL | ST_COMM_MODEL,
        ST_ZERO | ST_PINNED,
        ST_COMM_MODEL | ST_PINNED | ST_READY | ST_AVAIL,
        ST_MSG | ST_PINNED | ST_AVAIL,
        ST_MSG | ST_COMM_MODEL | ST_READY,
    };
    int runs = 0;
    double sum_mk[4] = {0};
    uint64_t seed = 1;
    for (size_t a = 0; a < sizeof(workers) / sizeof(workers[0]); a++)
        for (size_t b = 0; b < sizeof(sizes) / sizeof(sizes[0]); b++)
            for (size_t c = 0; c < sizeof(flag_sets) / sizeof(flag_sets[0]); c++) {
                st_graph_t sg;
                st_graph_random(&sg, seed++, sizes[b], workers[a], 1 + sizes[b] / 20, 4,
                                flag_sets[c]);
                for (size_t k = 0; sched_policy_at(k); k++) {
                    CHECK_OK(sched_run(sched_policy_at(k), &sg.g, seed, &sg.r));
                    CHECK_VALID(&sg.g, &sg.r);
                    sum_mk[k] += sg.r.makespan;
                    runs++;
                }
                st_graph_free(&sg);
            }
    printf("all valid: %d schedules; summed makespans:", runs);
    for (size_t k = 0; sched_policy_at(k); k++)
        printf(" %s %.0f", sched_policy_at(k)->name, sum_mk[k]);
    printf("\n");
    /* Not a guarantee per graph, but over 160 graphs HEFT must win. */
    for (size_t k = 1; sched_policy_at(k); k++)
        CHECK(sum_mk[0] < sum_mk[k]);
}

static void test_random_seed(void)
{
    const sched_policy_t *rnd = sched_policy_find("random");
    CHECK(rnd);
    st_graph_t a, b;
    st_graph_random(&a, 5, 1000, 8, 20, 3, ST_PINNED);
    st_graph_random(&b, 5, 1000, 8, 20, 3, ST_PINNED);
    CHECK_OK(sched_run(rnd, &a.g, 1234, &a.r));
    CHECK_OK(sched_run(rnd, &b.g, 1234, &b.r));
    CHECK(memcmp(a.worker, b.worker, 1000 * sizeof(int32_t)) == 0);
    CHECK(memcmp(a.start, b.start, 1000 * sizeof(double)) == 0);
    CHECK(a.r.makespan == b.r.makespan);
    CHECK_OK(sched_run(rnd, &b.g, 1235, &b.r));
    CHECK(memcmp(a.worker, b.worker, 1000 * sizeof(int32_t)) != 0);
    CHECK_VALID(&b.g, &b.r);
    st_graph_free(&a);
    st_graph_free(&b);

    /* Roughly uniform: 8000 independent tasks on 8 workers. */
    enum { N = 8000, P = 8 };
    double *cost = calloc(N * P, sizeof(double));
    int32_t *w = malloc(N * sizeof(int32_t));
    double *s = malloc(N * sizeof(double)), *f = malloc(N * sizeof(double));
    CHECK(cost && w && s && f);
    for (int i = 0; i < N * P; i++)
        cost[i] = 1;
    sched_graph_t g = {.nworkers = P, .ntasks = N, .cost = cost};
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(rnd, &g, 42, &r));
    int count[P] = {0};
    for (int i = 0; i < N; i++)
        count[w[i]]++;
    for (int k = 0; k < P; k++)
        CHECK(count[k] > 850 && count[k] < 1150);
    free(cost);
    free(w);
    free(s);
    free(f);
    printf("random: deterministic per seed, uniform: ok\n");
}

static void test_roundrobin(void)
{
    /* No edges: topological order is index order, so non-pinned tasks
     * take workers 0, 1, 2, 0, ... and pinned ones do not use a turn. */
    enum { N = 8, P = 3 };
    double cost[N * P];
    for (int i = 0; i < N * P; i++)
        cost[i] = 2;
    int32_t pinned[N] = {-1, -1, 2, -1, -1, 0, -1, -1};
    static const int32_t want[N] = {0, 1, 2, 2, 0, 0, 1, 2};
    int32_t w[N];
    double s[N], f[N];
    sched_graph_t g = {.nworkers = P, .ntasks = N, .cost = cost, .pinned = pinned};
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(sched_policy_find("roundrobin"), &g, 0, &r));
    CHECK_VALID(&g, &r);
    for (int i = 0; i < N; i++)
        CHECK(w[i] == want[i]);
    /* Worker 0 runs tasks 0, 4, 5 back to back: no insertion. */
    CHECK(s[0] == 0 && s[4] == 2 && s[5] == 4 && r.makespan == 6);
    printf("roundrobin: ok\n");
}

/* One graph placed a piece per call, as the runtime's flushes do: with a
 * kept state the turns continue where the last call left them, data-only
 * tasks take none, and a call that fails leaves the state as it was. */
static void test_roundrobin_kept(void)
{
    const sched_policy_t *rr = sched_policy_find("roundrobin");
    CHECK(rr);
    enum { N = 4, P = 3 };
    double cost[N * P];
    for (int i = 0; i < N * P; i++)
        cost[i] = 1;
    for (int w = 0; w < P; w++)
        cost[1 * P + w] = 0;
    bool dataonly[N] = {false, true, false, false};
    int32_t w[N];
    double s[N], f[N];
    sched_graph_t g = {.nworkers = P, .ntasks = N, .cost = cost, .dataonly = dataonly};
    sched_result_t r = {w, s, f, 0};
    sched_state_t st = {0};
    CHECK_OK(sched_run_kept(rr, &g, 0, &st, &r));
    CHECK_VALID(&g, &r);
    CHECK(w[0] == 0 && w[1] == 1 && w[2] == 1 && w[3] == 2 && st.turn == 3);
    CHECK_OK(sched_run_kept(rr, &g, 0, &st, &r));
    CHECK(w[0] == 0 && w[2] == 1 && w[3] == 2 && st.turn == 6);
    /* One task per call still goes round. */
    sched_graph_t one = {.nworkers = P, .ntasks = 1, .cost = cost};
    for (int k = 0; k < 2 * P; k++) {
        CHECK_OK(sched_run_kept(rr, &one, 0, &st, &r));
        CHECK(w[0] == k % P);
    }
    /* Without a state every call starts again at worker 0. */
    CHECK_OK(sched_run(rr, &one, 0, &r));
    CHECK(w[0] == 0);
    CHECK_OK(sched_run_kept(rr, &one, 0, NULL, &r));
    CHECK(w[0] == 0);
    /* A data-only task must cost nothing; the failed call keeps the turn. */
    cost[1 * P + 2] = 1;
    sched_state_t before = st;
    CHECK(sched_run_kept(rr, &g, 0, &st, &r) == OMPC_ERR_INVALID);
    CHECK(strstr(sched_last_error(), "task 1: data-only") != NULL);
    CHECK(st.turn == before.turn);
    printf("roundrobin kept across calls: ok\n");
}

/* The runtime asks each policy what it needs instead of knowing them by
 * name: HEFT measured costs, locality links priced alike. */
static void test_needs(void)
{
    CHECK(sched_policy_find("heft")->needs == SCHED_NEEDS_MEASURED_COSTS);
    CHECK(sched_policy_find("locality")->needs == SCHED_NEEDS_ALIKE_LINKS);
    CHECK(sched_policy_find("roundrobin")->needs == 0);
    CHECK(sched_policy_find("random")->needs == 0);
    printf("needs: ok\n");
}

static void test_locality_chain(void)
{
    enum { N = 50, P = 4 };
    double cost[N * P];
    sched_edge_t e[N - 1];
    uint64_t rs = 3;
    for (int i = 0; i < N * P; i++)
        cost[i] = st_uniform(&rs, 1, 10);
    cost[2] = 0.5; /* task 0 finishes first on worker 2 */
    for (int i = 0; i < N - 1; i++)
        e[i] = (sched_edge_t){N - 1 - i - 1, N - 1 - i, 1, 0};
    /* Edges run 0 -> 1 -> ... -> N-1, listed backwards. */
    sched_graph_t g = {
        .nworkers = P, .ntasks = N, .cost = cost, .nedges = N - 1, .edges = e};
    int32_t w[N];
    double s[N], f[N];
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(sched_policy_find("locality"), &g, 0, &r));
    CHECK_VALID(&g, &r);
    for (int i = 0; i < N; i++)
        CHECK(w[i] == 2);
    printf("locality: ok\n");
}

/* A binary tree of 15 equal tasks (cost 10, edges cost 1) on 2 workers:
 * every task's input is its parent's, so pulling in the least data alone
 * puts the whole tree on the root's worker (makespan 150).  Locality
 * leaves the data's worker once that one is backlogged by more than a
 * transfer and a run, which splits the tree about in half. */
static void test_locality_tree(void)
{
    enum { N = 15, P = 2 };
    double cost[N * P];
    sched_edge_t e[N - 1];
    for (int i = 0; i < N * P; i++)
        cost[i] = 10;
    for (int i = 1; i < N; i++)
        e[i - 1] = (sched_edge_t){(i - 1) / 2, i, 1, 0};
    sched_graph_t g = {
        .nworkers = P, .ntasks = N, .cost = cost, .nedges = N - 1, .edges = e};
    int32_t w[N];
    double s[N], f[N];
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(sched_policy_find("locality"), &g, 0, &r));
    CHECK_VALID(&g, &r);
    int count[P] = {0};
    for (int i = 0; i < N; i++)
        count[w[i]]++;
    CHECK(count[0] >= 5 && count[1] >= 5);
    CHECK(r.makespan <= 100);
    printf("locality tree: ok (%d/%d, makespan %g)\n", count[0], count[1], r.makespan);
}

static void test_heft_spread(void)
{
    enum { P = 5, K = 4, N = P * K };
    double cost[N * P];
    for (int i = 0; i < N * P; i++)
        cost[i] = 3;
    int32_t w[N];
    double s[N], f[N];
    sched_graph_t g = {.nworkers = P, .ntasks = N, .cost = cost};
    sched_result_t r = {w, s, f, 0};
    CHECK_OK(sched_run(sched_policy_find("heft"), &g, 0, &r));
    CHECK_VALID(&g, &r);
    int count[P] = {0};
    for (int i = 0; i < N; i++)
        count[w[i]]++;
    for (int k = 0; k < P; k++)
        CHECK(count[k] == K);
    CHECK(r.makespan == 3 * K);
    printf("heft spread: ok\n");
}

/* ------------------------------------------------------- bounded HEFT */
static void heft_with(const st_graph_t *sg, int32_t candidates, sched_result_t *r)
{
    sched_heft_policy_t hp;
    sched_heft_policy_init(&hp, candidates);
    CHECK_OK(sched_run(&hp.policy, &sg->g, 0, r));
}

/* Bounded schedules are valid, whatever k, graph flavour and size. */
static void test_heft_bounded_valid(void)
{
    static const int32_t workers[] = {3, 16, 100};
    static const int32_t ks[] = {1, 2, 5, 8};
    static const unsigned flags[] = {0,
                                     ST_COMM_MODEL | ST_PINNED | ST_AVAIL,
                                     ST_READY,
                                     ST_ZERO | ST_PINNED,
                                     ST_MSG | ST_READY,
                                     ST_MSG | ST_COMM_MODEL | ST_PINNED};
    uint64_t seed = 500;
    for (size_t a = 0; a < sizeof(workers) / sizeof(workers[0]); a++)
        for (size_t b = 0; b < sizeof(ks) / sizeof(ks[0]); b++)
            for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
                st_graph_t sg;
                st_graph_random(&sg, seed++, 400, workers[a], 20, 4, flags[f]);
                heft_with(&sg, ks[b], &sg.r);
                CHECK_VALID(&sg.g, &sg.r);
                st_graph_free(&sg);
            }
}

/* With k >= P the candidates are every worker and the schedule is plain
 * HEFT's, to the bit; so is the automatic mode up to SCHED_HEFT_FULL_MAX
 * workers, and k = -1 at any count. */
static void test_heft_bounded_full(void)
{
    static const int32_t workers[] = {1, 2, 4, 7, 16};
    static const unsigned flags[] = {0,
                                     ST_COMM_MODEL | ST_PINNED | ST_AVAIL,
                                     ST_READY,
                                     ST_ZERO,
                                     ST_MSG | ST_AVAIL,
                                     ST_MSG | ST_COMM_MODEL | ST_PINNED | ST_READY};
    uint64_t seed = 900;
    for (size_t a = 0; a < sizeof(workers) / sizeof(workers[0]); a++)
        for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
            st_graph_t sg;
            int32_t P = workers[a];
            st_graph_random(&sg, seed++, 300, P, 12, 3, flags[f]);
            CHECK_OK(sched_run(sched_policy_find("heft"), &sg.g, 0, &sg.r));
            int32_t ks[] = {P, P + 3, 0, -1};
            for (size_t b = 0; b < sizeof(ks) / sizeof(ks[0]); b++) {
                int32_t w[300];
                double s[300], fin[300];
                sched_result_t r = {w, s, fin, 0};
                heft_with(&sg, ks[b], &r);
                CHECK(memcmp(w, sg.worker, sizeof(w)) == 0);
                CHECK(memcmp(s, sg.start, sizeof(s)) == 0);
                CHECK(memcmp(fin, sg.finish, sizeof(fin)) == 0);
                CHECK(r.makespan == sg.r.makespan);
            }
            st_graph_free(&sg);
        }
}

/* cost_uniform: one cost per task gives every policy the schedule of the
 * matrix with that cost in every column; a bad entry is refused. */
static void test_cost_uniform(void)
{
    st_graph_t sg;
    st_graph_random(&sg, 77, 500, 1, 25, 3, 0);
    enum { P = 6 };
    double *full = malloc(500 * P * sizeof(double));
    CHECK(full);
    for (int64_t i = 0; i < 500; i++)
        for (int w = 0; w < P; w++)
            full[i * P + w] = sg.cost[i];
    sched_graph_t gu = sg.g, gf = sg.g;
    gu.nworkers = gf.nworkers = P;
    gu.cost_uniform = 1;
    gf.cost = full;
    for (size_t k = 0; sched_policy_at(k); k++) {
        int32_t wu[500], wf[500];
        double su[500], sf[500], fu[500], ff[500];
        sched_result_t ru = {wu, su, fu, 0}, rf = {wf, sf, ff, 0};
        CHECK_OK(sched_run(sched_policy_at(k), &gu, 3, &ru));
        CHECK_OK(sched_run(sched_policy_at(k), &gf, 3, &rf));
        CHECK_VALID(&gu, &ru);
        CHECK(memcmp(wu, wf, sizeof(wu)) == 0 && memcmp(su, sf, sizeof(su)) == 0 &&
              memcmp(fu, ff, sizeof(fu)) == 0);
    }
    sg.cost[7] = -1.0;
    int32_t w[500];
    double s[500], f[500];
    sched_result_t r = {w, s, f, 0};
    CHECK(sched_run(sched_policy_find("heft"), &gu, 0, &r) == OMPC_ERR_INVALID);
    CHECK(strstr(sched_last_error(), "task 7: cost on worker 0 is -1"));
    free(full);
    st_graph_free(&sg);
}

int main(void)
{
    test_all_valid();
    test_random_seed();
    test_roundrobin();
    test_roundrobin_kept();
    test_needs();
    test_locality_chain();
    test_locality_tree();
    test_heft_spread();
    test_heft_bounded_valid();
    test_heft_bounded_full();
    test_cost_uniform();
    printf("sched_policies: all ok\n");
    return 0;
}
