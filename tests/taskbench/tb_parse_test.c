/* tb_app_parse: Task Bench's defaults, per-graph flags after -and, the
 * flags that apply to the whole run, and the display block.  Bad flags
 * are tested through tb-deps (tb_bad_flag_* in CMakeLists.txt). */
#define _POSIX_C_SOURCE 200809L
#include "tb_core.h"
#include "tb_test.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


static int parse_ex(tb_app_t *app, const char *line, unsigned flags)
{
    static char buf[1024];
    char *argv[128];
    int argc = 0;
    snprintf(buf, sizeof buf, "tb_parse_test %s", line);
    for (char *tok = strtok(buf, " "); tok && argc < 127; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    return tb_app_parse_ex(app, argc, argv, flags);
}

/* Task Bench's default_graph(): 4 steps, width 4, trivial, radix 3,
 * period 0 (3 for the patterns that need one), fraction 0.25, empty
 * kernel, 0 iterations, 16 samples, no imbalance, 16 output bytes, no
 * scratch, and as many fields as timesteps.  The fields a graph under
 * test does not set itself: */
static void check_defaults(const tb_graph_t *g, int64_t index, const char *what)
{
    CHECK(g->graph_index == index, "%s: index %" PRId64, what, g->graph_index);
    CHECK(g->max_width == 4, "%s: width %" PRId64, what, g->max_width);
    CHECK(g->radix == 3, "%s: radix %" PRId64, what, g->radix);
    CHECK(g->fraction_connected == 0.25, "%s: fraction %g", what, g->fraction_connected);
    CHECK(g->kernel.samples == 16 && g->kernel.imbalance == 0, "%s: kernel parameters",
          what);
    CHECK(g->output_bytes_per_task == 16 && g->scratch_bytes_per_task == 0, "%s: bytes",
          what);
}

static void test_defaults(void)
{
    tb_app_t app;
    CHECK(parse_ex(&app, "", 0) == 0, "no flags");
    CHECK(app.ngraphs == 1, "%d graphs", (int)app.ngraphs);
    const tb_graph_t *g = &app.graphs[0];
    check_defaults(g, 0, "default graph");
    CHECK(g->timesteps == 4 && g->dependence == TB_DEP_TRIVIAL && g->period == 0 &&
              g->kernel.type == TB_KERNEL_EMPTY && g->kernel.iterations == 0 &&
              g->nb_fields == 4,
          "steps %" PRId64 " period %" PRId64 " fields %d", g->timesteps, g->period,
          (int)g->nb_fields);
    CHECK(app.nodes == 0 && app.workers == 0 && !app.verbose && !app.dump_deps,
          "app defaults");
    tb_app_free(&app);
}

static void test_and(void)
{
    tb_app_t app;
    /* Flags before an -and belong to that graph only; the next starts
     * from the defaults again.  -nodes, -worker, -v and -dump-deps apply to
     * the run wherever they appear. */
    int rc = parse_ex(&app,
                      "-steps 5 -type spread -width 8 -nodes 3 -output 40 "
                      "-and -type random_nearest -radix 5 -fraction 0.5 -v "
                      "-and -kernel compute_bound -iter 7 -worker 2 -field 3 "
                      "-and -type random_spread -period 1 -kernel memory_bound "
                      "-scratch 4096 -sample 8 -dump-deps",
                      0);
    CHECK(rc == 0, "parse");
    CHECK(app.ngraphs == 4, "%d graphs", (int)app.ngraphs);
    CHECK(app.nodes == 3 && app.workers == 2 && app.verbose && app.dump_deps,
          "run flags");
    const tb_graph_t *g = app.graphs;
    CHECK(g[0].graph_index == 0 && g[0].timesteps == 5 && g[0].max_width == 8 &&
              g[0].dependence == TB_DEP_SPREAD && g[0].period == 3 &&
              g[0].output_bytes_per_task == 40 && g[0].nb_fields == 5,
          "graph 0");
    /* nothing of graph 0 carries over: width, steps, output are defaults */
    CHECK(g[1].graph_index == 1 && g[1].timesteps == 4 && g[1].max_width == 4 &&
              g[1].dependence == TB_DEP_RANDOM_NEAREST && g[1].radix == 5 &&
              g[1].fraction_connected == 0.5 && g[1].period == 3 &&
              g[1].output_bytes_per_task == 16,
          "graph 1");
    check_defaults(&g[2], 2, "graph 2");
    CHECK(g[2].dependence == TB_DEP_TRIVIAL && g[2].period == 0 &&
              g[2].kernel.type == TB_KERNEL_COMPUTE_BOUND &&
              g[2].kernel.iterations == 7 && g[2].nb_fields == 3,
          "graph 2");
    CHECK(g[3].graph_index == 3 && g[3].dependence == TB_DEP_RANDOM_SPREAD &&
              g[3].period == 1 && g[3].kernel.type == TB_KERNEL_MEMORY_BOUND &&
              g[3].scratch_bytes_per_task == 4096 && g[3].kernel.samples == 8,
          "graph 3");
    tb_app_free(&app);
}

static void test_ignore_unknown(void)
{
    tb_app_t app;
    CHECK(parse_ex(&app, "-ll:cpu 4 -steps 2 -core 3", TB_PARSE_IGNORE_UNKNOWN) == 0,
          "unknown flags ignored on request");
    CHECK(app.graphs[0].timesteps == 2, "steps");
    tb_app_free(&app);
    /* getopt would take -n for -nodes: flags are whole words only. */
    CHECK(parse_ex(&app, "-n 4 -steps 3", TB_PARSE_IGNORE_UNKNOWN) == 0, "-n ignored");
    CHECK(app.nodes == 0 && app.graphs[0].timesteps == 3, "-n taken as -nodes");
    tb_app_free(&app);
    fprintf(stderr, "(an \"Unknown flag\" error is expected next)\n");
    CHECK(parse_ex(&app, "-ll:cpu 4", 0) == 2, "unknown flags rejected");
    CHECK(app.graphs == NULL && app.ngraphs == 0, "nothing left to free");
}

static void test_display(void)
{
    tb_app_t app;
    CHECK(parse_ex(&app, "-type stencil_1d -steps 2 -width 3 -v -and -type tree", 0) == 0,
          "parse");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tb_app_display(&app, f);
    fclose(f);
    static const char *const want[] = {
        "Running Task Benchmark\n  Configuration:\n    Task Graph 1:\n"
        "      Time Steps: 2\n      Max Width: 3\n"
        "      Dependence Type: stencil_1d\n      Radix: 3\n      Period: 0\n"
        "      Fraction Connected: 0.250000\n      Kernel:\n"
        "        Type: empty\n        Iterations: 0\n        Samples: 16\n"
        "        Imbalance: 0.000000\n      Output Bytes: 16\n"
        "      Scratch Bytes: 0\n",
        "      Timestep 1 (offset 0, width 3, last offset 0, last width 3):\n"
        "        Points: 0 1 2\n        Dependencies:\n"
        "          Point 0: 0 1\n          Point 1: 0 1 2\n"
        "          Point 2: 1 2\n",
        "    Task Graph 2:\n",
        "      Dependence Type: tree\n",
        ("      Timestep 0 (offset 0, width 1, last offset 0, last width 0):\n"
         "        Points: 0\n        Dependencies:\n          Point 0:\n"),
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; ++i)
        CHECK(strstr(text, want[i]) != NULL, "display lacks:\n%s\nin:\n%s", want[i],
              text);
    free(text);
    tb_app_free(&app);
}

int main(void)
{
    test_defaults();
    test_and();
    test_ignore_unknown();
    test_display();
    return tb_test_verdict("tb_parse_test");
}
