/* ompc-heft-scale: HEFT with every worker against the bounded candidate
 * set (sched_heft_policy_t), on the scheduler tests' random layered graphs
 * (tests/scheduler/sched_test.h).  No MPI, no runtime.
 *
 *   ompc-heft-scale quality [K]
 *       makespan bounded/full and both times, at sizes where full HEFT
 *       runs in seconds, for three flavours of graph;
 *   ompc-heft-scale scale [N P K]
 *       bounded HEFT on N tasks x P workers with identical workers
 *       (cost_uniform; default 1,000,000 x 1024), round-robin on the
 *       same graph (what any policy pays to read it), and full HEFT on
 *       N/50 of the tasks, whose time is scaled up by 50 (its cost grows
 *       linearly in N at fixed P and layer width).
 *   ompc-heft-scale once N P K
 *       bounded HEFT alone on the `scale` graph, once, for a profiler:
 *       its CPU seconds and the makespan with every digit (a changed
 *       schedule shows in the last digits);
 *   ompc-heft-scale json N P FILE
 *       writes the graph `scale` uses (N tasks, P identical workers) as
 *       ompc-sched's JSON input, costs with 10 significant digits, to
 *       time the tool end to end.
 *
 * Every schedule is checked by sched_check and by the tests' own checker.
 * Times are the scheduling thread's CPU seconds (the wall clock of a
 * shared machine says more about the neighbours). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "sched_test.h"

#include "ompc_common.h"

#include <time.h>

static double now_s(void) { return 1e-9 * (double)ompc_now_ns(); }

/* CPU time of this thread: the machine this runs on is often shared, and
 * the scheduler is one thread, so its CPU time is the figure that
 * transfers. */
static double cpu_s(void)
{
    struct timespec ts;
    CHECK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs HEFT with `candidates` on sg through sched_run, checks the
 * schedule, returns the CPU seconds of the sched_run call. */
static double run(st_graph_t *sg, int32_t candidates)
{
    sched_heft_policy_t hp;
    sched_heft_policy_init(&hp, candidates);
    double t0 = cpu_s();
    CHECK_OK(sched_run(&hp.policy, &sg->g, 0, &sg->r));
    double t = cpu_s() - t0;
    CHECK_VALID(&sg->g, &sg->r);
    return t;
}

static void quality(int32_t k)
{
    static const struct {
        int64_t n;
        int32_t P;
    } sizes[] = {{2000, 16}, {2000, 64}, {20000, 64}, {20000, 256}, {20000, 1024}};
    static const struct {
        const char *what;
        unsigned flags;
    } kinds[] = {
        {"edge costs", 0},
        {"comm model, pinned, avail", ST_COMM_MODEL | ST_PINNED | ST_AVAIL},
        {"edge costs, ready", ST_READY},
    };
    printf("%7s %5s  %-26s %10s %10s %7s %8s %8s\n", "tasks", "P", "graph", "full",
           "bounded", "ratio", "full s", "bound s");
    double worst = 0.0;
    for (size_t a = 0; a < sizeof(sizes) / sizeof(sizes[0]); a++)
        for (size_t b = 0; b < sizeof(kinds) / sizeof(kinds[0]); b++) {
            st_graph_t sg;
            int64_t n = sizes[a].n;
            st_graph_random(&sg, 7 + a * 3 + b, n, sizes[a].P, n / 200 > 1 ? n / 200 : 1,
                            4, kinds[b].flags);
            double tf = run(&sg, -1), mf = sg.r.makespan;
            double tb = run(&sg, k), mb = sg.r.makespan;
            double ratio = mb / mf;
            worst = ratio > worst ? ratio : worst;
            printf("%7lld %5d  %-26s %10.1f %10.1f %7.4f %8.3f %8.3f\n", (long long)n,
                   (int)sizes[a].P, kinds[b].what, mf, mb, ratio, tf, tb);
            st_graph_free(&sg);
        }
    printf("worst makespan ratio bounded/full (k = %d): %.4f\n", (int)k, worst);
}

/* The tests' graph shape with identical workers: generated for one
 * worker (one cost per task) and widened. */
static void uniform_graph(st_graph_t *sg, uint64_t seed, int64_t n, int32_t P)
{
    st_graph_random(sg, seed, n, 1, n / 200 > 1 ? n / 200 : 1, 4, 0);
    sg->g.nworkers = P;
    sg->g.cost_uniform = 1;
}

static void scale(int64_t n, int32_t P, int32_t k)
{
    st_graph_t sg;
    double t0 = now_s();
    uniform_graph(&sg, 11, n, P);
    printf("%lld tasks, %lld edges, %d identical workers (made in %.2f s)\n",
           (long long)n, (long long)sg.g.nedges, (int)P, now_s() - t0);
    double tb = run(&sg, k);
    printf("  bounded (k = %d): %.3f s CPU, makespan %.1f\n", (int)k, tb, sg.r.makespan);
    /* The floor under any policy: validation, adjacency and topological
     * order, then one worker each in turn. */
    double t1 = cpu_s();
    CHECK_OK(sched_run(sched_policy_find("roundrobin"), &sg.g, 0, &sg.r));
    printf("  roundrobin: %.3f s CPU\n", cpu_s() - t1);
    st_graph_free(&sg);
    int64_t small = n / 50 > 1 ? n / 50 : 1;
    uniform_graph(&sg, 11, small, P);
    double tbs = run(&sg, k), mbs = sg.r.makespan;
    double tfs = run(&sg, -1), mfs = sg.r.makespan;
    printf("  on %lld tasks: full %.3f s (x%.0f = %.1f s), bounded %.3f s; makespan "
           "bounded/full %.4f\n",
           (long long)small, tfs, (double)n / (double)small,
           tfs * (double)n / (double)small, tbs, mbs / mfs);
    st_graph_free(&sg);
}

static void once(int64_t n, int32_t P, int32_t k)
{
    st_graph_t sg;
    uniform_graph(&sg, 11, n, P);
    double t = run(&sg, k);
    printf("bounded (k = %d): %.3f s CPU, makespan %.17g\n", (int)k, t, sg.r.makespan);
    st_graph_free(&sg);
}

static void write_json(int64_t n, int32_t P, const char *path)
{
    st_graph_t sg;
    uniform_graph(&sg, 11, n, P);
    FILE *f = fopen(path, "w");
    CHECK(f);
    fprintf(f, "{\"workers\": %d,\n \"tasks\": [\n", (int)P);
    for (int64_t i = 0; i < n; i++)
        fprintf(f, "  {\"id\": %lld, \"cost\": %.10g}%s\n", (long long)i, sg.g.cost[i],
                i + 1 < n ? "," : "");
    fprintf(f, " ],\n \"edges\": [\n");
    for (int64_t k = 0; k < sg.g.nedges; k++) {
        const sched_edge_t *e = &sg.g.edges[k];
        fprintf(f, "  {\"from\": %lld, \"to\": %lld, \"cost\": %.10g}%s\n",
                (long long)e->from, (long long)e->to, e->cost,
                k + 1 < sg.g.nedges ? "," : "");
    }
    fprintf(f, " ]}\n");
    CHECK(fclose(f) == 0);
    printf("%lld tasks, %lld edges, %d workers: %s\n", (long long)n,
           (long long)sg.g.nedges, (int)P, path);
    st_graph_free(&sg);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "quality";
    if (strcmp(mode, "quality") == 0) {
        quality(argc > 2 ? (int32_t)atoi(argv[2]) : SCHED_HEFT_CANDIDATES);
    } else if (strcmp(mode, "scale") == 0) {
        int64_t n = argc > 2 ? atoll(argv[2]) : 1000000;
        int32_t P = argc > 3 ? (int32_t)atoi(argv[3]) : 1024;
        int32_t k = argc > 4 ? (int32_t)atoi(argv[4]) : SCHED_HEFT_CANDIDATES;
        CHECK(n > 0 && P > 0);
        scale(n, P, k);
    } else if (strcmp(mode, "once") == 0 && argc == 5) {
        int64_t n = atoll(argv[2]);
        int32_t P = (int32_t)atoi(argv[3]);
        CHECK(n > 0 && P > 0);
        once(n, P, (int32_t)atoi(argv[4]));
    } else if (strcmp(mode, "json") == 0 && argc == 5) {
        int64_t n = atoll(argv[2]);
        int32_t P = (int32_t)atoi(argv[3]);
        CHECK(n > 0 && P > 0);
        write_json(n, P, argv[4]);
    } else {
        fprintf(stderr,
                "usage: ompc-heft-scale quality [K] | scale [N P K] | once N P K | "
                "json N P FILE\n");
        return 2;
    }
    return 0;
}
