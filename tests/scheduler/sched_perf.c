/* Scale: HEFT on a random layered DAG of 20,000 tasks and 256 workers
 * (defaults; `sched_perf N P` for others), through the public API, with the
 * schedule checked by both checkers.  Times are printed, never asserted:
 * a loaded machine or a sanitizer build must not fail the test. */
#include "sched_test.h"

static double now_s(void) { return 1e-9 * (double)ompc_now_ns(); }

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 20000;
    int32_t P = argc > 2 ? (int32_t)atoi(argv[2]) : 256;
    CHECK(n > 0 && P > 0);
    static const struct {
        const char *what;
        unsigned flags;
    } variants[] = {
        {"comm model, pinned, avail", ST_COMM_MODEL | ST_PINNED | ST_AVAIL},
        {"edge costs, ready", ST_READY},
    };
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        st_graph_t sg;
        st_graph_random(&sg, 2024 + v, n, P, n / 200 > 1 ? n / 200 : 1, 4,
                        variants[v].flags);
        printf("%lld tasks, %lld edges, %d workers (%s)\n", (long long)n,
               (long long)sg.g.nedges, (int)P, variants[v].what);
        for (size_t k = 0; sched_policy_at(k); k++) {
            double t0 = now_s();
            CHECK_OK(sched_run(sched_policy_at(k), &sg.g, 1, &sg.r));
            double t1 = now_s();
            CHECK_VALID(&sg.g, &sg.r);
            double t2 = now_s();
            printf("  %-10s makespan %10.1f  schedule %.3f s  check %.3f s\n",
                   sched_policy_at(k)->name, sg.r.makespan, t1 - t0, t2 - t1);
        }
        st_graph_free(&sg);
    }
    printf("sched_perf: ok\n");
    return 0;
}
