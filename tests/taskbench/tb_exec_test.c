/* tb_execute_point and the report:
 *  - whole graphs of every pattern and every kernel run with the right
 *    inputs (the core checks each one);
 *  - each kind of wrong input makes a forked child abort with a message
 *    that names the task and what was expected;
 *  - tb_app_report prints Task Bench's lines, with totals worked out by
 *    hand below. */
#define _POSIX_C_SOURCE 200809L
#include "tb_core.h"
#include "tb_test.h"
#include "tb_core_internal.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


/* argv from one string of space-separated words (no quoting needed). */
static int parse(tb_app_t *app, const char *line)
{
    char buf[512];
    char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "tb_exec_test %s", line);
    for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    return tb_app_parse(app, argc, argv);
}

/* Outputs of every task of one graph, [t][p], each output_bytes long. */
typedef struct outputs {
    const tb_graph_t *g;
    char *mem;
} outputs_t;

static char *out_at(const outputs_t *o, int64_t t, int64_t p)
{
    return o->mem + ((size_t)(t * o->g->max_width + p)) * o->g->output_bytes_per_task;
}

static void outputs_init(outputs_t *o, const tb_graph_t *g)
{
    o->g = g;
    o->mem = calloc((size_t)(g->timesteps * g->max_width), g->output_bytes_per_task);
    if (!o->mem)
        abort();
}

/* Run (t, p) with its true inputs. */
static void run_task(const outputs_t *o, int64_t t, int64_t p, char *scratch)
{
    const tb_graph_t *g = o->g;
    size_t cap = tb_max_dependencies(g) + 1;
    int64_t *deps = malloc(cap * sizeof *deps);
    const char **in = malloc(cap * sizeof *in);
    size_t *bytes = malloc(cap * sizeof *bytes);
    if (!deps || !in || !bytes)
        abort();
    size_t n = tb_dependencies(g, t, p, deps, cap);
    for (size_t i = 0; i < n; ++i) {
        in[i] = out_at(o, t - 1, deps[i]);
        bytes[i] = g->output_bytes_per_task;
    }
    tb_execute_point(g, t, p, out_at(o, t, p), g->output_bytes_per_task, in, bytes, n,
                     scratch, g->scratch_bytes_per_task);
    free(deps);
    free(in);
    free(bytes);
}

static void run_graph(const tb_graph_t *g)
{
    outputs_t o;
    outputs_init(&o, g);
    char *scratch = NULL;
    if (g->scratch_bytes_per_task > 0) {
        scratch = malloc(g->scratch_bytes_per_task);
        if (!scratch)
            abort();
        tb_prepare_scratch(scratch, g->scratch_bytes_per_task);
    }
    for (int64_t t = 0; t < g->timesteps; ++t) {
        int64_t off = tb_offset_at_timestep(g, t);
        for (int64_t p = off; p < off + tb_width_at_timestep(g, t); ++p)
            run_task(&o, t, p, scratch);
    }
    free(scratch);
    free(o.mem);
}

static void test_all_patterns_and_kernels(void)
{
    static const char *const graphs[] = {
        "-type trivial -steps 3 -width 4",
        "-type no_comm -steps 3 -width 4",
        "-type stencil_1d -steps 4 -width 5 -output 40",
        "-type stencil_1d_periodic -steps 4 -width 5",
        "-type dom -steps 6 -width 4",
        "-type tree -steps 5 -width 8",
        "-type fft -steps 6 -width 8 -output 17",
        "-type all_to_all -steps 3 -width 6",
        "-type nearest -steps 4 -width 7 -radix 4",
        "-type spread -steps 5 -width 8 -radix 3 -period 2",
        "-type random_nearest -steps 5 -width 8 -radix 5 -fraction 0.5",
        "-type random_spread -steps 5 -width 8 -radix 3 -period 2 -fraction 0.5",
        /* two graphs: each checks it gets its own graph's outputs */
        "-type stencil_1d -steps 3 -width 4 -and -type tree -steps 3 -width 4",
    };
    static const char *const kernels[] = {
        "-kernel empty",
        "-kernel busy_wait -iter 1000",
        "-kernel memory_bound -iter 20 -scratch 4096 -sample 8",
        "-kernel compute_bound -iter 50",
        "-kernel compute_bound2 -iter 50",
        "-kernel io_bound -iter 10",
        "-kernel load_imbalance -iter 50 -imbalance 1",
    };
    int runs = 0;
    for (size_t i = 0; i < sizeof graphs / sizeof *graphs; ++i)
        for (size_t k = 0; k < sizeof kernels / sizeof *kernels; ++k) {
            char line[512];
            snprintf(line, sizeof line, "%s %s", graphs[i], kernels[k]);
            tb_app_t app;
            if (parse(&app, line) != 0) {
                CHECK(0, "could not parse %s", line);
                continue;
            }
            for (int32_t g = 0; g < app.ngraphs; ++g)
                run_graph(&app.graphs[g]);
            tb_app_free(&app);
            runs++;
        }
    printf("ran %d graph/kernel combinations\n", runs);
    fflush(stdout);
}

/* io_bound sleeps -iter microseconds per task: 4 tasks of 5000 us. */
static void test_io_bound_waits(void)
{
    tb_app_t app;
    CHECK(parse(&app, "-steps 2 -width 2 -kernel io_bound -iter 5000") == 0, "parse");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    run_graph(&app.graphs[0]);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    CHECK(s >= 0.019, "4 tasks of 5 ms took %g s", s);
    tb_app_free(&app);
}

/* The memory kernel copies the first half of each slice over its second
 * half; with one slice and a pattern in the first half, one iteration
 * makes the halves equal. */
static void test_memory_kernel_moves_data(void)
{
    tb_app_t app;
    CHECK(parse(&app, "-steps 1 -width 1 -kernel memory_bound -iter 1 -scratch 64 "
                      "-sample 1") == 0,
          "parse");
    char scratch[64];
    tb_prepare_scratch(scratch, sizeof scratch);
    for (int i = 8; i < 32; ++i)
        scratch[i] = (char)i;
    char out[16];
    tb_execute_point(&app.graphs[0], 0, 0, out, sizeof out, NULL, NULL, 0, scratch,
                     sizeof scratch);
    CHECK(memcmp(scratch, scratch + 32, 32) == 0, "second half not copied");
    tb_app_free(&app);
}

/* ------------------------------------------------ wrong inputs abort */

typedef struct bad_case {
    const char *name;
    const char *graph;
    int64_t t, p;
    /* what to do to the true inputs before the call */
    void (*spoil)(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                  char **scratch, size_t *out_bytes);
    const char *expect; /* substring of the message */
} bad_case_t;

static void spoil_producer(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                           char **scratch, size_t *out_bytes)
{
    (void)bytes;
    (void)n;
    (void)scratch;
    (void)out_bytes;
    in[0] = out_at(o, 1, 2); /* point 2's output where point 1's belongs */
}

static void spoil_timestep(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                           char **scratch, size_t *out_bytes)
{
    (void)bytes;
    (void)n;
    (void)scratch;
    (void)out_bytes;
    in[1] = out_at(o, 0, 2); /* timestep 0's output, a step too old */
}

static void spoil_truncated(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                            char **scratch, size_t *out_bytes)
{
    (void)o;
    (void)in;
    (void)n;
    (void)scratch;
    (void)out_bytes;
    bytes[2] -= 1;
}

static void spoil_tail(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                       char **scratch, size_t *out_bytes)
{
    (void)in;
    (void)n;
    (void)scratch;
    (void)out_bytes;
    /* last byte of point 3's output at timestep 1 (40 bytes: records at
     * 0, 16 and a partial one at 32) */
    out_at(o, 1, 3)[bytes[2] - 1] ^= 0x40;
}

static void spoil_too_few(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                          char **scratch, size_t *out_bytes)
{
    (void)o;
    (void)in;
    (void)bytes;
    (void)scratch;
    (void)out_bytes;
    *n -= 1;
}

static void spoil_too_many(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                           char **scratch, size_t *out_bytes)
{
    (void)scratch;
    (void)out_bytes;
    in[*n] = out_at(o, 1, 0);
    bytes[*n] = bytes[0];
    *n += 1;
}

static void spoil_null(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                       char **scratch, size_t *out_bytes)
{
    (void)o;
    (void)bytes;
    (void)n;
    (void)scratch;
    (void)out_bytes;
    in[0] = NULL;
}

static void spoil_nothing(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                          char **scratch, size_t *out_bytes)
{
    (void)o;
    (void)in;
    (void)bytes;
    (void)n;
    (void)scratch;
    (void)out_bytes;
}

static void spoil_scratch(const outputs_t *o, const char **in, size_t *bytes, size_t *n,
                          char **scratch, size_t *out_bytes)
{
    (void)o;
    (void)in;
    (void)bytes;
    (void)n;
    (void)out_bytes;
    memset(*scratch, 0, 8);
}

static void spoil_output_size(const outputs_t *o, const char **in, size_t *bytes,
                              size_t *n, char **scratch, size_t *out_bytes)
{
    (void)o;
    (void)in;
    (void)bytes;
    (void)n;
    (void)scratch;
    *out_bytes -= 8;
}

/* Task (t, p) of `graph`, run in a child after all earlier timesteps ran
 * correctly in the parent.  Returns the child's stderr. */
static char *run_bad_case(const bad_case_t *c, int *status_p)
{
    tb_app_t app;
    if (parse(&app, c->graph) != 0)
        abort();
    const tb_graph_t *g = &app.graphs[app.ngraphs - 1];
    outputs_t o;
    outputs_init(&o, g);
    char *scratch = NULL;
    if (g->scratch_bytes_per_task > 0) {
        scratch = malloc(g->scratch_bytes_per_task);
        if (!scratch)
            abort();
        tb_prepare_scratch(scratch, g->scratch_bytes_per_task);
    }
    for (int64_t t = 0; t < c->t; ++t) {
        int64_t off = tb_offset_at_timestep(g, t);
        for (int64_t p = off; p < off + tb_width_at_timestep(g, t); ++p)
            run_task(&o, t, p, scratch);
    }
    /* timestep 0 of the same graph under the next graph index, for the
     * wrong-graph case */
    tb_graph_t other = *g;
    other.graph_index = g->graph_index + 1;
    outputs_t o2;
    outputs_init(&o2, &other);
    for (int64_t p = 0; p < tb_width_at_timestep(&other, 0); ++p)
        run_task(&o2, 0, p, scratch);

    int pipefd[2];
    if (pipe(pipefd) != 0)
        abort();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        close(pipefd[0]);
        dup2(pipefd[1], 2);
        int64_t deps[16];
        const char *in[17];
        size_t bytes[17];
        size_t n = tb_dependencies(g, c->t, c->p, deps, 16);
        for (size_t i = 0; i < n; ++i) {
            in[i] = out_at(&o, c->t - 1, deps[i]);
            bytes[i] = g->output_bytes_per_task;
        }
        size_t out_bytes = g->output_bytes_per_task;
        if (!strcmp(c->name, "wrong_graph"))
            in[0] = out_at(&o2, c->t - 1, deps[0]);
        else
            c->spoil(&o, in, bytes, &n, &scratch, &out_bytes);
        char *out = malloc(g->output_bytes_per_task);
        tb_execute_point(g, c->t, c->p, out, out_bytes, in, bytes, n, scratch,
                         g->scratch_bytes_per_task);
        _exit(0);
    }
    close(pipefd[1]);
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    ssize_t got;
    while ((got = read(pipefd[0], text + len, cap - 1 - len)) > 0)
        len += (size_t)got;
    text[len] = '\0';
    close(pipefd[0]);
    waitpid(pid, status_p, 0);
    free(scratch);
    free(o.mem);
    free(o2.mem);
    tb_app_free(&app);
    return text;
}

static void test_wrong_inputs_abort(void)
{
    /* stencil_1d, width 4, 40-byte outputs: task (2, 2) reads points
     * 1, 2, 3 of timestep 1 (inputs 0, 1, 2). */
    const char *st = "-type stencil_1d -steps 3 -width 4 -output 40";
    static bad_case_t cases[] = {
        {"wrong_producer", NULL, 2, 2, spoil_producer,
         "task (graph 0, timestep 2, point 2): input 0 holds the wrong data at "
         "byte 0: expected the output of (graph 0, timestep 1, point 1), got "
         "(graph 0, timestep 1, point 2)"},
        {"wrong_timestep", NULL, 2, 2, spoil_timestep,
         "input 1 holds the wrong data at byte 0: expected the output of (graph "
         "0, timestep 1, point 2), got (graph 0, timestep 0, point 2)"},
        {"truncated", NULL, 2, 2, spoil_truncated,
         "input 2 (the output of point 3 of timestep 1) has 39 bytes, expected "
         "40 (-output)"},
        {"corrupt_tail", NULL, 2, 2, spoil_tail,
         "input 2 holds the wrong data at byte 32"},
        {"wrong_graph", NULL, 1, 1, NULL,
         "input 0 holds the wrong data at byte 0: expected the output of (graph "
         "0, timestep 0, point 0), got (graph 1, timestep 0, point 0)"},
        {"too_few", NULL, 2, 2, spoil_too_few,
         "got 2 inputs, but it depends on more points of timestep 1"},
        {"too_many", NULL, 2, 0, spoil_too_many,
         "got 3 inputs, expected 2 (the points of timestep 1 it depends on)"},
        {"null_input", NULL, 2, 2, spoil_null,
         "input 0 (the output of point 1 of "
         "timestep 1) is NULL"},
        {"no_such_task", "-type dom -steps 5 -width 4", 2, 0, spoil_nothing,
         "task (graph 0, timestep 2, point 0): no such task: timestep 2 runs "
         "points [1, 4)"},
        {"scratch_unprepared",
         "-type no_comm -steps 2 -width 2 -kernel memory_bound -iter 1 -scratch 64 "
         "-sample 4",
         1, 1, spoil_scratch, "scratch buffer was not prepared"},
        {"output_size", NULL, 1, 1, spoil_output_size,
         "output buffer of 32 bytes, expected 40 (-output)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        bad_case_t c = cases[i];
        if (!c.graph)
            c.graph = st;
        int status = 0;
        char *text = run_bad_case(&c, &status);
        bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
        CHECK(aborted, "%s: child did not abort (status %d), stderr: %s", c.name, status,
              text);
        CHECK(strstr(text, c.expect) != NULL, "%s: message lacks \"%s\"; got: %s", c.name,
              c.expect, text);
        free(text);
    }

    /* and the same machinery with nothing spoilt exits cleanly */
    bad_case_t ok = {"correct", st, 2, 2, spoil_nothing, ""};
    int status = 0;
    char *text = run_bad_case(&ok, &status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && text[0] == '\0',
          "correct inputs: status %d, stderr: %s", status, text);
    free(text);
}

/* ------------------------------------------------------------ report */

static char *report(const char *line, double seconds)
{
    tb_app_t app;
    if (parse(&app, line) != 0) {
        CHECK(0, "could not parse %s", line);
        return strdup("");
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    tb_app_report(&app, seconds, f);
    fclose(f);
    tb_app_free(&app);
    return text;
}

static void expect_report(const char *line, double seconds, const char *want)
{
    char *got = report(line, seconds);
    CHECK(strcmp(got, want) == 0, "report of \"%s\":\n--- got\n%s--- want\n%s", line, got,
          want);
    free(got);
}

static void test_report(void)
{
    /* stencil_1d, width 4, 3 steps, 2 nodes, compute_bound -iter 10.
     * Tasks 3*4 = 12.  Timesteps 1 and 2 read {0,1} {0,1,2} {1,2,3} {2,3}:
     * 10 dependences each, 20 in all.  Nodes own points {0,1} and {2,3}:
     * per timestep p0 2 local, p1 2 local + 1 remote (2), p2 2 local + 1
     * remote (1), p3 2 local: 8 local, 2 nonlocal; 16 and 4 overall.
     * FLOPs per task 2*64*10 + 64 = 1344, 12 tasks: 16128.  Transfer:
     * 16*16 = 256 local bytes, 4*16 = 64 nonlocal.  Elapsed 2 s. */
    expect_report("-type stencil_1d -steps 3 -width 4 -kernel compute_bound "
                  "-iter 10 -nodes 2",
                  2.0,
                  "Total Tasks 12\n"
                  "Total Dependencies 20\n"
                  "  Local Dependencies 16 (estimated)\n"
                  "  Nonlocal Dependencies 4 (estimated)\n"
                  "  Number of Nodes (used for estimate) 2\n"
                  "Total FLOPs 16128\n"
                  "Total Bytes 0\n"
                  "Elapsed Time 2.000000e+00 seconds\n"
                  "FLOP/s 8.064000e+03\n"
                  "B/s 0.000000e+00\n"
                  "Transfer (estimated):\n"
                  "  Local Bytes 256\n"
                  "  Nonlocal Bytes 64\n"
                  "  Local Bandwidth 1.280000e+02 B/s\n"
                  "  Nonlocal Bandwidth 3.200000e+01 B/s\n");

    /* memory_bound: scratch*iter/samples = 1024*6/4 = 1536 bytes per task,
     * 2*3 = 6 tasks: 9216 bytes; no_comm reads 1 point per task of
     * timestep 1: 3 dependences.  Without -nodes no estimate. */
    expect_report("-type no_comm -steps 2 -width 3 -kernel memory_bound -iter 6 "
                  "-scratch 1024 -sample 4",
                  0.5,
                  "Total Tasks 6\n"
                  "Total Dependencies 3\n"
                  "  Unable to estimate local/nonlocal dependencies\n"
                  "Total FLOPs 0\n"
                  "Total Bytes 9216\n"
                  "Elapsed Time 5.000000e-01 seconds\n"
                  "FLOP/s 0.000000e+00\n"
                  "B/s 1.843200e+04\n"
                  "Transfer (estimated):\n"
                  "  Unable to estimate local/nonlocal transfer\n");

    /* compute_bound2: 2*32*5 = 320 FLOPs a task, 4 tasks: 1280.  Then a
     * second graph (-and) adds its own: dom, 5 steps, width 4 runs
     * 1+2+3+2+1 = 9 tasks with 11 dependences (tests/taskbench/expected/
     * dom.txt), busy_wait counts no FLOPs; tree, 5 steps, width 8:
     * 1+2+4+8+8 = 23 tasks, every task after the root reads its parent:
     * 22 dependences; load_imbalance with no imbalance is compute_bound:
     * 23*(2*64*100 + 64) = 295872.  Totals: 36 tasks, 33 dependences,
     * 297152 FLOPs. */
    expect_report("-steps 2 -width 2 -kernel compute_bound2 -iter 5 "
                  "-and -type dom -steps 5 -width 4 -kernel busy_wait -iter 9 "
                  "-and -type tree -steps 5 -width 8 -kernel load_imbalance "
                  "-iter 100",
                  1.0,
                  "Total Tasks 36\n"
                  "Total Dependencies 33\n"
                  "  Unable to estimate local/nonlocal dependencies\n"
                  "Total FLOPs 297152\n"
                  "Total Bytes 0\n"
                  "Elapsed Time 1.000000e+00 seconds\n"
                  "FLOP/s 2.971520e+05\n"
                  "B/s 0.000000e+00\n"
                  "Transfer (estimated):\n"
                  "  Unable to estimate local/nonlocal transfer\n");

    /* With imbalance each task draws round((1 + (u - 1/2)*imbalance)*iter)
     * iterations, u from Task Bench's hash of {graph, t, p}; imbalance 1
     * keeps them within [iter/2, 3*iter/2]. */
    tb_app_t app;
    CHECK(parse(&app, "-steps 4 -width 5 -kernel load_imbalance -iter 100 "
                      "-imbalance 1") == 0,
          "parse");
    const tb_graph_t *g = &app.graphs[0];
    long long flops = 0;
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t t = 0; t < 4; ++t)
        for (int64_t p = 0; p < 5; ++p) {
            int64_t it = tb_imbalance_iterations(g, t, p);
            lo = it < lo ? it : lo;
            hi = it > hi ? it : hi;
            CHECK(tb_flops_per_task(g, t, p) == 2 * 64 * it + 64, "flops");
            flops += 2 * 64 * it + 64;
        }
    CHECK(lo >= 50 && hi <= 150 && lo < hi, "iterations in [%" PRId64 ", %" PRId64 "]",
          lo, hi);
    char want[64];
    snprintf(want, sizeof want, "Total FLOPs %lld\n", flops);
    char *got = report("-steps 4 -width 5 -kernel load_imbalance -iter 100 "
                       "-imbalance 1",
                       1.0);
    CHECK(strstr(got, want) != NULL, "want %s in:\n%s", want, got);
    free(got);
    tb_app_free(&app);
}

int main(void)
{
    test_all_patterns_and_kernels();
    test_io_bound_waits();
    test_memory_kernel_moves_data();
    test_wrong_inputs_abort();
    test_report();
    return tb_test_verdict("tb_exec_test");
}
