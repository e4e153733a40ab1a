/* Fuzz target: ompc-sched's JSON graph reader (scheduler/sched_json.c),
 * then every policy on each graph it accepts.
 *
 * Wrong answers: a status other than OK, INVALID or NOMEM; an error
 * message that is empty, spans lines or does not name the input; an
 * accepted graph that a policy schedules infeasibly (sched_check) or with
 * a time that is not finite. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[640] = "";
    sched_json_t *js = NULL;
    ompc_status_t st = sched_json_read(NAME, (const char *)data, size, &js, why,
                                       sizeof(why));
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
