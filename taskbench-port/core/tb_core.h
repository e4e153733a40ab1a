/* Task Bench's task-graph model (Slaughter et al., SC'20), in C: the
 * public interface every back end (ompc, host OpenMP, MPI) uses.
 *
 * A graph has `timesteps` rows of up to `max_width` points; point p of
 * timestep t depends on a set of points of timestep t-1 given by the
 * dependence pattern.  Every task writes `output_bytes_per_task` bytes
 * that encode which task produced them, and checks the outputs it reads,
 * so a wrong dependence or stale data fails the run (Task Bench's
 * validation).
 *
 * Functions marked DEVICE are compiled into OpenMP device images too
 * (declare target): target regions call them.  All functions are
 * thread-safe (they only read the graph). */
#ifndef TB_CORE_H
#define TB_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tb_dep {
    TB_DEP_TRIVIAL,
    TB_DEP_NO_COMM,
    TB_DEP_STENCIL_1D,
    TB_DEP_STENCIL_1D_PERIODIC,
    TB_DEP_DOM,
    TB_DEP_TREE,
    TB_DEP_FFT,
    TB_DEP_ALL_TO_ALL,
    TB_DEP_NEAREST,
    TB_DEP_SPREAD,
    TB_DEP_RANDOM_NEAREST,
    TB_DEP_RANDOM_SPREAD,
} tb_dep_t;

typedef enum tb_kernel_type {
    TB_KERNEL_EMPTY,
    TB_KERNEL_BUSY_WAIT,
    TB_KERNEL_MEMORY_BOUND,
    TB_KERNEL_COMPUTE_BOUND,
    TB_KERNEL_COMPUTE_BOUND2,
    TB_KERNEL_IO_BOUND,
    TB_KERNEL_LOAD_IMBALANCE,
} tb_kernel_type_t;

typedef struct tb_kernel {
    tb_kernel_type_t type;
    int64_t iterations;      /* -iter */
    int32_t samples;         /* -sample */
    double imbalance;        /* -imbalance, 0..1 */
} tb_kernel_t;

typedef struct tb_graph {
    int64_t graph_index;     /* 0 for the first graph of -and */
    int64_t timesteps;       /* -steps */
    int64_t max_width;       /* -width */
    tb_dep_t dependence;     /* -type */
    int64_t radix;           /* -radix */
    int64_t period;          /* -period */
    double fraction_connected; /* -fraction */
    tb_kernel_t kernel;
    size_t output_bytes_per_task; /* -output, >= 16 */
    size_t scratch_bytes_per_task; /* -scratch */
    int32_t nb_fields;       /* output buffers a point cycles through */
} tb_graph_t;

/* ------------------------------------------------- graph shape (DEVICE) */
int64_t tb_offset_at_timestep(const tb_graph_t *g, int64_t t);
int64_t tb_width_at_timestep(const tb_graph_t *g, int64_t t);
/* Task Bench's dependence sets: patterns whose dependences change with
 * the timestep cycle through max_dependence_sets() sets. */
int64_t tb_max_dependence_sets(const tb_graph_t *g);
int64_t tb_dependence_set_at_timestep(const tb_graph_t *g, int64_t t);
/* Points of timestep t-1 that point p of timestep t (t >= 1, p running at
 * t) depends on, ascending, only points that run at t-1.  Writes up to
 * cap entries to out and returns the total count. */
size_t tb_dependencies(const tb_graph_t *g, int64_t t, int64_t p, int64_t *out,
                       size_t cap);
/* Points of timestep t+1 that read point p of timestep t, ascending. */
size_t tb_reverse_dependencies(const tb_graph_t *g, int64_t t, int64_t p, int64_t *out,
                               size_t cap);
/* Largest number of dependences any point can have (sizing arrays).
 * Bounds the results of tb_reverse_dependencies too. */
size_t tb_max_dependencies(const tb_graph_t *g);
/* Timesteps after which the dependences repeat (Task Bench's
 * timestep_period(); equals tb_max_dependence_sets). */
int64_t tb_timestep_period(const tb_graph_t *g);
/* Work of the task (t, p) as Task Bench's report counts it. */
int64_t tb_flops_per_task(const tb_graph_t *g, int64_t t, int64_t p);
int64_t tb_bytes_per_task(const tb_graph_t *g, int64_t t, int64_t p);

/* ------------------------------------------------------ tasks (DEVICE) */
/* Run point p of timestep t: check every input (inputs[i] is the output
 * of the i-th point tb_dependencies returns, input_bytes[i] its size),
 * run the kernel on scratch, write this task's output.  A wrong input is
 * reported on stderr naming the graph, timestep, point and what was
 * expected, and the process aborts (the run fails loudly). */
void tb_execute_point(const tb_graph_t *g, int64_t t, int64_t p, char *output,
                      size_t output_bytes, const char *const *inputs,
                      const size_t *input_bytes, size_t ninputs, char *scratch,
                      size_t scratch_bytes);
/* Scratch memory must be prepared once before first use. */
void tb_prepare_scratch(char *scratch, size_t scratch_bytes);

/* --------------------------------------------------- the command line */
typedef struct tb_app {
    tb_graph_t *graphs;
    int32_t ngraphs;
    int32_t nodes;           /* -nodes (ranks the back end reports) */
    int32_t workers;         /* -worker (threads per node); informational */
    bool verbose;            /* -v */
    bool dump_deps;          /* -dump-deps */
} tb_app_t;

/* Parse Task Bench's flags (-steps, -width, -type, -radix, -period,
 * -fraction, -kernel, -iter, -scratch, -imbalance, -sample, -output,
 * -and, -nodes, -worker, -v, -dump-deps, -h).  Returns 0, or prints a
 * message naming the bad flag and returns 2. */
int tb_app_parse(tb_app_t *app, int argc, char **argv);
/* -h prints the flags and exits 0, as Task Bench does.  Unknown flags are
 * errors unless TB_PARSE_IGNORE_UNKNOWN: back ends that take flags of
 * their own pass it (Task Bench itself ignores whatever it does not know). */
#define TB_PARSE_IGNORE_UNKNOWN 1u
int tb_app_parse_ex(tb_app_t *app, int argc, char **argv, unsigned flags);
void tb_app_free(tb_app_t *app);
/* Task Bench's "Running Task Benchmark" configuration block; with -v also
 * each timestep's points and dependences. */
void tb_app_display(const tb_app_t *app, FILE *f);
const char *tb_dep_name(tb_dep_t d);
const char *tb_kernel_name(tb_kernel_type_t k);
/* -dump-deps output (format in core/README.md). */
void tb_app_dump_deps(const tb_app_t *app, FILE *f);
/* The summary lines Task Bench prints: total tasks, dependencies, FLOPs,
 * bytes, elapsed time, FLOP/s, B/s. */
void tb_app_report(const tb_app_t *app, double elapsed_seconds, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
