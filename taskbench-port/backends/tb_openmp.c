/* Task Bench on OpenMP tasks, two back ends from one source:
 *
 *   TB_TARGET=1  ompc-taskbench: every task is a `target nowait` region
 *                (the OMPC programming model), built with ompcc and run
 *                with mpiexec -n 1+W; the cluster runs the kernels.
 *   TB_TARGET=0  omp-taskbench: every task is a host `task` (the
 *                single-node OpenMP baseline), built with clang -fopenmp.
 *
 * As in Task Bench's OpenMP port, one thread of a parallel region creates
 * every task: for each timestep, for each graph (-and), for each point
 * running at that timestep.  A task names the buffers it reads with
 * depend(in:) and the one it writes with depend(out:); the dependences are
 * the graph's edges, and the same names tell ompc which data to move to
 * the worker that runs the task (docs/architecture.md, "Which data a kernel writes").
 *
 * Output buffers: one per (graph, point, field), two fields, the task of
 * timestep t writing field t % 2.  Inputs only come from timestep t-1
 * (field (t-1) % 2), so a task's write can only clobber field (t-2) % 2,
 * whose readers are the tasks of timestep t-1: depend(out:) on the buffer
 * orders the write after them, since they name it with depend(in:).
 *
 * Scratch memory (-scratch): on the host, one buffer per thread, prepared
 * once (as Task Bench does).  In a target region a thread-private buffer
 * kept between kernels would have to be a device global, and ompc counts
 * every declare target variable as written by every kernel (which would
 * serialise the graph); a per-point device buffer would add dependences
 * the graph does not have and move scratch between workers.  So each
 * target task allocates and prepares its own scratch on the worker: always
 * correct, at the cost of preparing it once per task (nothing when
 * -scratch is 0, the default).
 *
 * Inputs of a target task: every output buffer is mapped once (`target
 * enter data`, poisoned so that a buffer nobody wrote fails validation)
 * and its device address taken with omp_get_mapped_ptr; so is the graph
 * descriptor.  A task gets the graph's, its inputs' (up to TB_ARG_INPUTS)
 * and its output's device addresses by value (is_device_ptr), and names
 * the host addresses in its depend clauses: ompc moves every mapped
 * buffer a depend clause names to the worker that runs the task,
 * read-only when only depend(in:) names it (the graph: once per worker),
 * and a device address means the same on every worker.  A task with more
 * inputs gets the graph and their addresses in a record mapped `to` (see
 * tb_task_rec_t): a buffer to allocate, copy and free per task, which
 * cost the head a third of its CPU per task when every task had one.  The
 * host build passes host addresses.
 *
 * TB_BREAK_DEPS (tb_backend.h) breaks one task on purpose; validation must
 * then fail the run. */
#include "tb_backend.h"

#include <omp.h>

#ifndef TB_TARGET
#define TB_TARGET 0
#endif

#pragma omp declare target(tb_execute_point, tb_prepare_scratch)

/* Inputs up to this count live on the task's stack. */
#define TB_STACK_INPUTS 32

/* The body of every task, host or device.  in[i] is the i-th dependence's
 * output (tb_dependencies order). */
#pragma omp declare target
static void tb_task_body(const tb_graph_t *g, int64_t t, int64_t p, char *out,
                         const char *const *in, size_t n, int brk, char *scratch)
{
    const char *in_stack[TB_STACK_INPUTS];
    size_t bytes_stack[TB_STACK_INPUTS];
    const char **ins = in_stack;
    size_t *bytes = bytes_stack;
    if (n > TB_STACK_INPUTS) {
        ins = malloc(n * sizeof(*ins));
        bytes = malloc(n * sizeof(*bytes));
        if (!ins || !bytes) {
            fprintf(stderr,
                    "out of memory for the inputs of graph %lld "
                    "timestep %lld point %lld\n",
                    (long long)g->graph_index, (long long)t, (long long)p);
            abort();
        }
    }
    for (size_t i = 0; i < n; i++) {
        ins[i] = in[i];
        bytes[i] = g->output_bytes_per_task;
    }
    if (brk == TB_BREAK_INPUT && n > 0)
        ins[0] = out; /* as if the dependence on input 0 were missing */
    tb_execute_point(g, t, p, out, g->output_bytes_per_task, ins, bytes, n, scratch,
                     g->scratch_bytes_per_task);
    if (brk == TB_BREAK_OUTPUT)
        for (size_t i = 0; i < g->output_bytes_per_task; i++)
            out[i] = (char)~out[i];
    if (ins != in_stack) {
        free(ins);
        free(bytes);
    }
}
#pragma omp end declare target

/* What a task reads besides its buffers: the graph and the addresses of
 * its inputs.  It must outlive the construct: a deferred task reads it when
 * it runs (ompc captures a `map(to:)` section when the target task is
 * recorded, which can be long after the creating thread has moved on), so
 * records come from an arena that lives until the end of the run.  The
 * graph travels here and not as firstprivate(struct): clang-19 passes a
 * firstprivate aggregate of a `target nowait` by the address of the
 * original variable, read when the task runs (seen with LLVM's own
 * libomptarget too), so a local struct would be stale by then. */
typedef struct {
    tb_graph_t g;
    const char *in[]; /* device (ompc) or host (omp) addresses */
} tb_task_rec_t;

typedef struct tb_arena_block {
    struct tb_arena_block *next;
    size_t used, cap;
    _Alignas(16) char mem[];
} tb_arena_block_t;

typedef struct {
    tb_arena_block_t *head;
} tb_arena_t;

static tb_task_rec_t *tb_arena_take(tb_arena_t *a, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    tb_arena_block_t *b = a->head;
    if (!b || b->cap - b->used < bytes) {
        size_t cap = bytes > (1u << 20) ? bytes : (1u << 20);
        b = tb_xmalloc(sizeof(*b) + cap, "task records");
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    tb_task_rec_t *r = (tb_task_rec_t *)(b->mem + b->used);
    b->used += bytes;
    return r;
}

static void tb_arena_free(tb_arena_t *a)
{
    while (a->head) {
        tb_arena_block_t *b = a->head;
        a->head = b->next;
        free(b);
    }
}

/* A graph's output buffers: host[f][p] (and, for ompc, their device
 * addresses dev[f][p]) for field f in {0, 1} and point p. */
#define TB_FIELDS 2
typedef struct {
    char **host[TB_FIELDS];
    char **dev[TB_FIELDS];
    tb_graph_t *ghost;       /* ompc: the graph, mapped once (read-only) */
    const tb_graph_t *gdev;  /* ... and its device address */
    bool has_break;
    int64_t break_t, break_p;
} tb_buffers_t;

static void tb_buffers_init(tb_buffers_t *b, const tb_graph_t *g, int brk)
{
    size_t w = (size_t)g->max_width, bytes = g->output_bytes_per_task;
    int dev = omp_get_default_device();
    b->ghost = tb_xmalloc(sizeof(*g), "graph");
    *b->ghost = *g;
    b->gdev = b->ghost;
#if TB_TARGET
    tb_graph_t *gh = b->ghost;
#pragma omp target enter data map(to : gh[0 : 1])
    b->gdev = omp_get_mapped_ptr(gh, dev);
    if (!b->gdev) {
        fprintf(stderr, "omp_get_mapped_ptr: graph %lld is not on device %d\n",
                (long long)g->graph_index, dev);
        exit(1);
    }
#endif
    for (int f = 0; f < TB_FIELDS; f++) {
        b->host[f] = tb_xmalloc(w * sizeof(char *), "buffer table");
        b->dev[f] = tb_xmalloc(w * sizeof(char *), "buffer table");
        for (size_t p = 0; p < w; p++) {
            char *h = tb_xmalloc(bytes, "output buffers");
            memset(h, TB_POISON, bytes);
            b->host[f][p] = h;
#if TB_TARGET
            /* Put once on the device, then name it by device address. */
#pragma omp target enter data map(to : h[0 : bytes])
            b->dev[f][p] = omp_get_mapped_ptr(h, dev);
            if (!b->dev[f][p]) {
                fprintf(stderr,
                        "omp_get_mapped_ptr: buffer of graph %lld "
                        "point %zu is not on device %d\n",
                        (long long)g->graph_index, p, dev);
                exit(1);
            }
#else
            (void)dev;
            b->dev[f][p] = h;
#endif
        }
    }
    b->has_break = tb_break_pick(g, brk, &b->break_t, &b->break_p);
}

static void tb_buffers_free(tb_buffers_t *b, const tb_graph_t *g)
{
    size_t w = (size_t)g->max_width, bytes = g->output_bytes_per_task;
    for (int f = 0; f < TB_FIELDS; f++) {
        for (size_t p = 0; p < w; p++) {
            char *h = b->host[f][p];
#if TB_TARGET
#pragma omp target exit data map(delete : h[0 : bytes])
#else
            (void)bytes;
#endif
            free(h);
        }
        free(b->host[f]);
        free(b->dev[f]);
    }
#if TB_TARGET
    tb_graph_t *gh = b->ghost;
#pragma omp target exit data map(delete : gh[0 : 1])
#endif
    free(b->ghost);
}

#if TB_TARGET
/* Inputs up to this count go to a target task by value (is_device_ptr):
 * every pattern of the METG table has at most 3.  A task with more gets
 * them in a record mapped `to` (tb_task_rec_t). */
#define TB_ARG_INPUTS 4

/* A target task's body on the worker: its own scratch (file comment). */
#pragma omp declare target
static void tb_target_body(const tb_graph_t *g, int64_t t, int64_t p, char *out,
                           const char *const *in, size_t n, int brk)
{
    size_t sb = g->scratch_bytes_per_task;
    char *scratch = NULL;
    if (sb > 0) {
        scratch = malloc(sb);
        if (!scratch) {
            fprintf(stderr, "out of memory for %zu scratch bytes\n", sb);
            abort();
        }
        tb_prepare_scratch(scratch, sb);
    }
    tb_task_body(g, t, p, out, in, n, brk, scratch);
    free(scratch);
}
#pragma omp end declare target
#endif

/* A task's record: the graph and the addresses its kernel reads its n
 * inputs at (device addresses; the host build's are the host's). */
static tb_task_rec_t *tb_rec_make(const tb_graph_t *g, const tb_buffers_t *b,
                                  tb_arena_t *arena, const int64_t *deps, size_t n,
                                  int prev, size_t *bytes)
{
    *bytes = sizeof(tb_task_rec_t) + n * sizeof(const char *);
    tb_task_rec_t *rec = tb_arena_take(arena, *bytes);
    rec->g = *g;
    for (size_t i = 0; i < n; i++)
        rec->in[i] = b->dev[prev][deps[i]];
    return rec;
}

/* Create the task of point p at timestep t of graph g. */
static void tb_create_task(const tb_graph_t *g, const tb_buffers_t *b, tb_arena_t *arena,
                           int64_t *deps, char **in_host, int64_t t, int64_t p,
                           char **thread_scratch)
{
    size_t n = 0;
    if (t > 0)
        n = tb_dependencies(g, t, p, deps, tb_max_dependencies(g));
    int cur = (int)(t % TB_FIELDS), prev = (int)((t + 1) % TB_FIELDS);
    for (size_t i = 0; i < n; i++)
        in_host[i] = b->host[prev][deps[i]]; /* named by depend(in:) */
    char *out_host = b->host[cur][p];
    char *out_dev = b->dev[cur][p];
    int brk = 0;
    if (b->has_break && b->break_t == t && b->break_p == p)
        brk = tb_break_mode();
#if TB_TARGET
    (void)thread_scratch;
    if (n <= TB_ARG_INPUTS) {
        /* The graph (mapped once, named with depend(in:) so that each
         * worker gets a copy) and the inputs by device address: nothing
         * to map per task. */
        char *in0 = n > 0 ? b->dev[prev][deps[0]] : NULL;
        char *in1 = n > 1 ? b->dev[prev][deps[1]] : NULL;
        char *in2 = n > 2 ? b->dev[prev][deps[2]] : NULL;
        char *in3 = n > 3 ? b->dev[prev][deps[3]] : NULL;
        const tb_graph_t *gd = b->gdev;
        const tb_graph_t *gh = b->ghost;
#pragma omp target nowait firstprivate(t, p, n, brk)                                     \
    is_device_ptr(out_dev, gd, in0, in1, in2, in3)                                       \
    depend(iterator(size_t j = 0 : n), in : *in_host[j]) depend(in : *gh)                \
    depend(out : *out_host)
        {
            const char *in[TB_ARG_INPUTS] = {in0, in1, in2, in3};
            tb_target_body(gd, t, p, out_dev, in, n, brk);
        }
        return;
    }
    size_t rec_bytes;
    char *rec_bytes_p = (char *)tb_rec_make(g, b, arena, deps, n, prev, &rec_bytes);
#pragma omp target nowait firstprivate(t, p, n, brk)                                     \
    map(to : rec_bytes_p[0 : rec_bytes]) is_device_ptr(out_dev)                          \
    depend(iterator(size_t j = 0 : n), in : *in_host[j]) depend(out : *out_host)
    {
        const tb_task_rec_t *r = (const tb_task_rec_t *)rec_bytes_p;
        tb_target_body(&r->g, t, p, out_dev, r->in, n, brk);
    }
#else
    (void)out_dev;
    size_t rec_bytes;
    tb_task_rec_t *rec = tb_rec_make(g, b, arena, deps, n, prev, &rec_bytes);
#pragma omp task firstprivate(t, p, n, brk, rec, out_host)                               \
    depend(iterator(size_t j = 0 : n), in : *in_host[j]) depend(out : *out_host)
    tb_task_body(&rec->g, t, p, out_host, rec->in, n, brk,
                 thread_scratch[omp_get_thread_num()]);
#endif
}

int main(int argc, char **argv)
{
    tb_app_t app;
    int rc = tb_app_parse(&app, argc, argv);
    if (rc != 0)
        return rc;
    if (app.dump_deps) {
        tb_app_dump_deps(&app, stdout);
        tb_app_free(&app);
        return 0;
    }
#if TB_TARGET
    /* The report's local/nonlocal estimate splits points over -nodes; by
     * default over the workers (ranks 1..N-1; one rank runs everything).
     * The program makes no MPI calls itself: the launcher's variables say
     * how many ranks there are. */
    if (app.nodes == 0) {
        const char *size = getenv("PMI_SIZE"); /* MPICH's launcher */
        if (!size)
            size = getenv("OMPI_COMM_WORLD_SIZE");
        int ranks = size ? atoi(size) : 1;
        app.nodes = ranks > 1 ? ranks - 1 : 1;
    }
#else
    /* -worker N sets the thread count; without it OMP_NUM_THREADS does. */
    if (app.workers > 0)
        omp_set_num_threads(app.workers);
    if (app.nodes == 0)
        app.nodes = 1;
#endif
    tb_app_display(&app, stdout);
    fflush(stdout);
    int brk = tb_break_mode();
    tb_break_announce(&app, brk);

    tb_buffers_t *bufs = tb_xmalloc(app.ngraphs * sizeof(*bufs), "graphs");
    size_t max_deps = 1, max_scratch = 0;
    for (int i = 0; i < app.ngraphs; i++) {
        tb_buffers_init(&bufs[i], &app.graphs[i], brk);
        if (tb_max_dependencies(&app.graphs[i]) > max_deps)
            max_deps = tb_max_dependencies(&app.graphs[i]);
        if (app.graphs[i].scratch_bytes_per_task > max_scratch)
            max_scratch = app.graphs[i].scratch_bytes_per_task;
    }

    /* Host tasks: one scratch buffer per thread, prepared once. */
    int nthreads = omp_get_max_threads();
    char **thread_scratch = tb_xmalloc(nthreads * sizeof(char *), "scratch");
    for (int i = 0; i < nthreads; i++) {
        thread_scratch[i] = NULL;
#if !TB_TARGET
        if (max_scratch > 0) {
            thread_scratch[i] = tb_xmalloc(max_scratch, "scratch");
            tb_prepare_scratch(thread_scratch[i], max_scratch);
        }
#endif
    }

    int64_t *deps = tb_xmalloc(max_deps * sizeof(int64_t), "dependencies");
    char **in_host = tb_xmalloc(max_deps * sizeof(char *), "dependencies");
    tb_arena_t arena = {NULL};
    int64_t steps = tb_max_steps(&app);
    double start = 0, stop = 0;

#pragma omp parallel
#pragma omp single
    {
        start = omp_get_wtime();
        for (int64_t t = 0; t < steps; t++) {
            for (int i = 0; i < app.ngraphs; i++) {
                const tb_graph_t *g = &app.graphs[i];
                if (t >= g->timesteps)
                    continue;
                int64_t lo = tb_offset_at_timestep(g, t);
                int64_t hi = lo + tb_width_at_timestep(g, t);
                for (int64_t p = lo; p < hi; p++)
                    tb_create_task(g, &bufs[i], &arena, deps, in_host, t, p,
                                   thread_scratch);
            }
        }
#pragma omp taskwait
        stop = omp_get_wtime();
    }

    tb_app_report(&app, stop - start, stdout);
    fflush(stdout);

    tb_arena_free(&arena);
    free(deps);
    free(in_host);
    for (int i = 0; i < nthreads; i++)
        free(thread_scratch[i]);
    free(thread_scratch);
    for (int i = 0; i < app.ngraphs; i++)
        tb_buffers_free(&bufs[i], &app.graphs[i]);
    free(bufs);
    tb_app_free(&app);
    return 0;
}
