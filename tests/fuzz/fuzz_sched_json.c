/* Fuzz target: ompc-sched's JSON graph reader (scheduler/sched_json.c),
 * then every policy on each graph it accepts.
 *
 * Wrong answers: a status other than OK, INVALID or NOMEM; an error
 * message that is empty, spans lines or does not name the input; an
 * accepted graph that a policy schedules infeasibly (sched_check) or with
 * a time that is not finite; the reader's fast path and its jansson path
 * (SCHED_JSON_NO_FAST) disagreeing on the status, the message or the
 * graph. */
#include "fuzz.h"

#include "sched_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *const fuzz_dict[] = {
    "\"workers\"",
    "\"tasks\"",
    "\"edges\"",
    "\"id\"",
    "\"cost\"",
    "\"ready\"",
    "\"pinned\"",
    "\"from\"",
    "\"to\"",
    "\"bytes\"",
    "\"avail\"",
    "\"comm_lat\"",
    "\"comm_inv_bw\"",
    "1e15",
    "1e16",
    "1000000000000001",
    "[]",
    "{}",
    "[0]",
    "{\"id\": 0, \"cost\": [1]}",
    "\"\\ud83d\\ude00\"",
    NULL,
};

#define NAME "fuzz.json"

static void check_why(ompc_status_t st, const char *why)
{
    if (st != OMPC_ERR_INVALID && st != OMPC_ERR_NOMEM)
        fuzz_fail("status %d (%s) is not OK, INVALID or NOMEM", (int)st,
                  ompc_status_str(st));
    if (strncmp(why, NAME ":", strlen(NAME ":")) != 0 || !why[strlen(NAME ":")])
        fuzz_fail("the message does not name the input or is empty: \"%s\"", why);
    if (strchr(why, '\n'))
        fuzz_fail("the message spans lines: \"%s\"", why);
}

/* Whether arrays a and b of n elements of size sz are both NULL or equal
 * bit for bit (-0.0 and 0.0 differ: they print differently). */
static bool same(const void *a, const void *b, size_t n, size_t sz)
{
    if (!a || !b)
        return !a && !b;
    return n == 0 || memcmp(a, b, n * sz) == 0;
}

/* The fast path must give what jansson's path gives, message or graph. */
static void compare_paths(const uint8_t *data, size_t size, ompc_status_t st,
                          const char *why, const sched_json_t *js)
{
    char why2[640] = "";
    sched_json_t *js2 = NULL;
    ompc_status_t st2 = sched_json_read_flags(
        NAME, (const char *)data, size, SCHED_JSON_NO_FAST, &js2, why2, sizeof(why2));
    if (st2 != st)
        fuzz_fail("fast path %s, jansson path %s (%s)", ompc_status_str(st),
                  ompc_status_str(st2), why2);
    if (st != OMPC_OK) {
        if (st == OMPC_ERR_INVALID && strcmp(why, why2) != 0)
            fuzz_fail("fast path \"%s\", jansson path \"%s\"", why, why2);
        return;
    }
    const sched_graph_t *a = sched_json_graph(js), *b = sched_json_graph(js2);
    size_t n = (size_t)a->ntasks, P = (size_t)a->nworkers;
    if (a->nworkers != b->nworkers || a->ntasks != b->ntasks || a->nedges != b->nedges ||
        a->cost_uniform != b->cost_uniform)
        fuzz_fail("fast and jansson paths read different sizes");
    bool ok = same(a->cost, b->cost, a->cost_uniform ? n : n * P, sizeof(double)) &&
              same(a->ready, b->ready, n * P, sizeof(double)) &&
              same(a->pinned, b->pinned, n, sizeof(int32_t)) &&
              same(a->avail, b->avail, P, sizeof(double)) &&
              same(a->comm_lat, b->comm_lat, P * P, sizeof(double)) &&
              same(a->comm_inv_bw, b->comm_inv_bw, P * P, sizeof(double)) &&
              same(a->edges, b->edges, (size_t)a->nedges, sizeof(sched_edge_t));
    for (size_t i = 0; i < n && ok; i++)
        ok = sched_json_task_id(js, (int64_t)i) == sched_json_task_id(js2, (int64_t)i);
    if (!ok)
        fuzz_fail("fast and jansson paths read different graphs");
    sched_json_free(js2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[640] = "";
    sched_json_t *js = NULL;
    ompc_status_t st = sched_json_read(NAME, (const char *)data, size, &js, why,
                                       sizeof(why));
    compare_paths(data, size, st, why, js);
    if (st != OMPC_OK) {
        check_why(st, why);
        return 0;
    }
    const sched_graph_t *g = sched_json_graph(js);
    size_t n = g->ntasks > 0 ? (size_t)g->ntasks : 1;
    int32_t *worker = calloc(n, sizeof(*worker));
    double *start = calloc(n, sizeof(*start)), *finish = calloc(n, sizeof(*finish));
    if (!worker || !start || !finish)
        fuzz_fail("out of memory for %zu tasks", n);
    for (size_t p = 0; sched_policy_at(p); p++) {
        const sched_policy_t *pol = sched_policy_at(p);
        sched_result_t r = {.worker = worker, .start = start, .finish = finish};
        st = sched_run(pol, g, 7, &r);
        if (st == OMPC_ERR_INVALID) {
            /* A cycle, or a graph the reader let through that the library
             * refuses: the reader and library disagree only on cycles. */
            sched_json_explain_invalid(js, why, sizeof(why));
            check_why(st, why);
            if (!strstr(why, "cycle"))
                fuzz_fail("%s refused a graph the reader accepted: %s", pol->name, why);
            continue;
        }
        /* Scratch memory is per worker: "workers": 2147483647 with no
         * tasks is a valid graph that no machine has the memory for. */
        if (st == OMPC_ERR_NOMEM)
            continue;
        if (st != OMPC_OK)
            fuzz_fail("%s returned %s", pol->name, ompc_status_str(st));
        if (!isfinite(r.makespan))
            fuzz_fail("%s: makespan %g", pol->name, r.makespan);
        if (sched_check(g, &r) != OMPC_OK)
            fuzz_fail("%s made an infeasible schedule: %s", pol->name,
                      sched_last_error());
    }
    free(finish);
    free(start);
    free(worker);
    sched_json_free(js);
    return 0;
}
