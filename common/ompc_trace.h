/* Trace recorder: Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev)
 * with one process track per MPI rank and one thread track per runtime
 * thread.
 *
 * Each rank records into per-thread buffers; recording takes no lock.  At
 * shutdown the workers serialize their events into a blob that the runtime
 * ships to rank 0, and rank 0 writes one file with everyone's events, each
 * rank's clock shifted onto its own.
 *
 * Life cycle: ompc_trace_init and ompc_trace_fini must not run while another
 * thread records, serializes or writes (call them before the runtime's
 * threads start and after they are joined).  Everything else may be called
 * from any thread at any time in between. */
#ifndef OMPC_TRACE_H
#define OMPC_TRACE_H

#include "ompc_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Events kept per rank unless ompc_trace_set_max_events says otherwise;
 * later events are counted as dropped, and the file says how many. */
#define OMPC_TRACE_MAX_EVENTS_DEFAULT 4000000u
/* Longer names, categories, argument keys and string values are cut to this
 * many bytes. */
#define OMPC_TRACE_STR_MAX 4096u
/* Arguments kept per event; later ones in the array are not recorded. */
#define OMPC_TRACE_ARGS_MAX 16u

/* The type of an event argument's value. */
typedef enum ompc_trace_type {
    OMPC_TRACE_ARG_U64,
    OMPC_TRACE_ARG_I64,
    OMPC_TRACE_ARG_F64, /* written as null when not finite (JSON has no NaN) */
    OMPC_TRACE_ARG_STR, /* NULL is written as "" */
} ompc_trace_type_t;

/* One argument of a span or an instant: "key": value in the event's "args"
 * object.  Recording copies the key and a string value in binary form; only
 * the writer turns them into JSON, escaping keys and strings, so any bytes
 * are safe (a NULL key is written as ""). */
typedef struct ompc_trace_arg {
    const char *key;
    ompc_trace_type_t type;
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        const char *str;
    };
} ompc_trace_arg_t;

/* Initializers for the elements of an argument array, for example
 *     const ompc_trace_arg_t args[] = {OMPC_TRACE_U64("bytes", n),
 *                                      OMPC_TRACE_STR("policy", name)};
 *     ompc_trace_span("sched", "schedule", t0, t1, args,
 *                     OMPC_TRACE_NARGS(args)); */
#define OMPC_TRACE_U64(k, v)                                                             \
    {.key = (k), .type = OMPC_TRACE_ARG_U64, .u64 = (uint64_t)(v)}
#define OMPC_TRACE_I64(k, v) {.key = (k), .type = OMPC_TRACE_ARG_I64, .i64 = (int64_t)(v)}
#define OMPC_TRACE_F64(k, v) {.key = (k), .type = OMPC_TRACE_ARG_F64, .f64 = (double)(v)}
#define OMPC_TRACE_STR(k, v) {.key = (k), .type = OMPC_TRACE_ARG_STR, .str = (v)}
/* The element count of an argument array (an array, not a pointer). */
#define OMPC_TRACE_NARGS(a) (sizeof(a) / sizeof((a)[0]))

/* Start recording for this rank (enabled) or make every call a no-op.
 * Drops whatever an earlier init recorded; see the life-cycle rule above. */
void ompc_trace_init(int rank, bool enabled);
/* Whether recording is on.  Any thread; one relaxed atomic load. */
bool ompc_trace_on(void);
/* CLOCK_MONOTONIC in nanoseconds: the clock span times are taken on. */
uint64_t ompc_trace_now_ns(void);

/* Name the calling thread's track ("gate", "handler 1", "main").  Any
 * thread, any time, even before init: the name is remembered for the thread
 * and applies to every later init.  Unnamed tracks show as "thread T". */
void ompc_trace_thread_name(const char *name);

/* A complete event ("ph":"X") from t0_ns to t1_ns (t1_ns < t0_ns records a
 * zero duration) on the calling thread's track, with the nargs arguments at
 * args (args may be NULL when nargs is 0; an event without arguments has no
 * "args" in the file).  cat, name and the arguments are copied.  An
 * argument of an unknown type drops the event (counted as dropped).  Any
 * thread; no lock. */
void ompc_trace_span(const char *cat, const char *name, uint64_t t0_ns, uint64_t t1_ns,
                     const ompc_trace_arg_t *args, size_t nargs);
/* An instant event ("ph":"i", thread scope) at the current time. */
void ompc_trace_instant(const char *cat, const char *name, const ompc_trace_arg_t *args,
                        size_t nargs);
/* A counter sample ("ph":"C"): track `name`, series `series`, at the current
 * time.  Non-finite values are not recorded (JSON has no NaN). */
void ompc_trace_counter(const char *name, const char *series, double value);

/* Cap the events this rank keeps (default OMPC_TRACE_MAX_EVENTS_DEFAULT).
 * Threads reserve room a chunk (1024 events) at a time, so up to that many
 * per thread may go unused: at most the cap is kept, every other event is
 * counted as dropped.  Call after init, before recording; init restores the
 * default. */
void ompc_trace_set_max_events(uint64_t max_events);
/* Events recorded and dropped so far on this rank.  Any thread. */
void ompc_trace_counts(uint64_t *events_p, uint64_t *dropped_p);

/* Serialize this rank's events and thread names into a malloc'd blob (the
 * caller frees it); the recorder keeps its events.  Any thread; events
 * recorded meanwhile may or may not be included.  OMPC_ERR_INVALID when
 * recording is off. */
ompc_status_t ompc_trace_serialize(void **blob_p, size_t *size_p);
/* Check a blob from another rank and return the rank it carries.
 * OMPC_ERR_PROTOCOL when it is malformed (any byte pattern is safe). */
ompc_status_t ompc_trace_blob_rank(const void *blob, size_t size, int *rank_p);

/* Rank 0: write path with this rank's events plus nblobs blobs from other
 * ranks.  offsets_ns[i] is added to blob i's timestamps to put them on this
 * rank's clock (offsets_ns may be NULL: no shift).  The file appears
 * complete or not at all (written to a temporary name, then renamed).
 * OMPC_ERR_PROTOCOL for a malformed blob or two blobs of the same rank;
 * OMPC_ERR_INVALID for bad arguments, recording off, or a failed write (the
 * log says why).  Any thread. */
ompc_status_t ompc_trace_write(const char *path, const void *const *blobs,
                               const size_t *sizes, const int64_t *offsets_ns,
                               int nblobs);

/* Free everything recorded; recording is off until the next init. */
void ompc_trace_fini(void);

#ifdef __cplusplus
}
#endif
#endif
