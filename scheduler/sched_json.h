/* ompc-sched's input: a task graph written as JSON, read into a
 * sched_graph_t.  The format is in ompc-sched --help and scheduler/README.md.
 *
 * The reader keeps no state between calls and may be used from several
 * threads at once on different inputs.  Bad input never ends the process:
 * every function returns a status and a message. */
#ifndef OMPC_SCHED_JSON_H
#define OMPC_SCHED_JSON_H

#include "ompc_sched.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every cost, time and byte count read is in 0..SCHED_JSON_NUM_MAX (the
 * reason is in sched_json.c). */
#define SCHED_JSON_NUM_MAX 1e15
#define SCHED_JSON_NUM_MAX_STR "1e15"

/* A graph read from JSON and the task ids it was written with. */
typedef struct sched_json sched_json_t;

/* Reads the len bytes at text (no NUL needed; text must stay valid until
 * sched_json_free, error messages quote it).  name stands for the input in
 * messages.  On OMPC_OK *js_p is the graph.  Otherwise nothing is kept and
 * why (whysz bytes, truncated) holds "NAME:LINE:COL: what is wrong", or
 * "NAME: what is wrong" for the input as a whole:
 *   OMPC_ERR_INVALID  the input is not a valid graph;
 *   OMPC_ERR_NOMEM    out of memory. */
ompc_status_t sched_json_read(const char *name, const char *text, size_t len,
                              sched_json_t **js_p, char *why, size_t whysz);

/* sched_json_read with flags: SCHED_JSON_NO_FAST reads through jansson's
 * tree only, not the fast path first (for tests that compare the two). */
#define SCHED_JSON_NO_FAST 1u
ompc_status_t sched_json_read_flags(const char *name, const char *text, size_t len,
                                    unsigned flags, sched_json_t **js_p, char *why,
                                    size_t whysz);

/* The graph, valid until sched_json_free. */
const sched_graph_t *sched_json_graph(const sched_json_t *js);

/* The id the input gave the task at index (0..ntasks-1, input order). */
int64_t sched_json_task_id(const sched_json_t *js, int64_t index);

/* After a policy refused the graph with OMPC_ERR_INVALID: the message the
 * user should see, with the input position and the task ids of a cycle when
 * there is one, else the policy's own reason (sched_last_error). */
void sched_json_explain_invalid(sched_json_t *js, char *why, size_t whysz);

void sched_json_free(sched_json_t *js);

#ifdef __cplusplus
}
#endif

#endif
