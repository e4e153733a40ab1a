/* Graph shape and dependence properties of the Task Bench core:
 *  - the hash behind the random patterns is SipHash-2-4 (published test
 *    vectors) keyed as Task Bench keys it;
 *  - for every pattern and many sizes, dependences are ascending, unique,
 *    inside the points that ran at t-1, within tb_max_dependencies, and
 *    tb_reverse_dependencies is their exact inverse;
 *  - a short output array gets the first `cap` entries and the full count.
 * The dependence sets themselves are pinned by the tb_deps_* tests. */
#include "tb_core.h"
#include "tb_test.h"
#include "tb_core_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


static void test_siphash(void)
{
    /* Vectors of the SipHash reference implementation: key 00..0f,
     * message 00 01 02 ... of the given length (length 15 is the
     * paper's worked example). */
    static const struct {
        size_t len;
        uint64_t want;
    } vec[] = {
        {0, UINT64_C(0x726fdb47dd0e0e31)},  {1, UINT64_C(0x74f839c593dc67fd)},
        {7, UINT64_C(0xab0200f58b01d137)},  {8, UINT64_C(0x93f5f5799a932462)},
        {15, UINT64_C(0xa129ca6149be45e5)}, {16, UINT64_C(0x3f2acc7f57c29bdb)},
        {40, UINT64_C(0x0e3ea96b5304a7d0)},
    };
    unsigned char key[16], msg[64];
    for (int i = 0; i < 16; ++i)
        key[i] = (unsigned char)i;
    for (int i = 0; i < 64; ++i)
        msg[i] = (unsigned char)i;
    for (size_t i = 0; i < sizeof vec / sizeof vec[0]; ++i) {
        uint64_t got = tb_siphash24(msg, vec[i].len, key);
        CHECK(got == vec[i].want, "len %zu: got %016" PRIx64, vec[i].len, got);
    }

    /* Task Bench's draw for edge 1 -> 0 of graph 2, radix 3, set 1: the
     * five longs {2, 3, 1, 1, 0} hashed with key 1..15,0 give
     * 0x0a720908d8b35392, i.e. u = 0.0408... (random_nearest.txt). */
    const int64_t k5[5] = {2, 3, 1, 1, 0};
    double u = tb_random_uniform(k5, sizeof k5);
    CHECK(u == (double)UINT64_C(0x0a720908d8b35392) * 0x1p-64, "u = %.17g", u);
}

/* p in deps(t, c) for the point c of timestep t? */
static bool has_dep(const tb_graph_t *g, int64_t t, int64_t c, int64_t p, int64_t *buf,
                    size_t cap)
{
    size_t n = tb_dependencies(g, t, c, buf, cap);
    for (size_t i = 0; i < n && i < cap; ++i)
        if (buf[i] == p)
            return true;
    return false;
}

static bool has_rdep(const tb_graph_t *g, int64_t t, int64_t p, int64_t c, int64_t *buf,
                     size_t cap)
{
    size_t n = tb_reverse_dependencies(g, t, p, buf, cap);
    for (size_t i = 0; i < n && i < cap; ++i)
        if (buf[i] == c)
            return true;
    return false;
}

static long long edges_checked;

/* The properties of one graph; `label` names it in failures. */
static void check_graph(const tb_graph_t *g, const char *label)
{
    size_t cap = tb_max_dependencies(g);
    size_t bufcap = cap + 1;
    int64_t *d = calloc(bufcap, sizeof *d), *r = calloc(bufcap, sizeof *r);
    int64_t *tmp = calloc(bufcap, sizeof *tmp);
    if (!d || !r || !tmp)
        abort();
    long long fwd = 0, rev = 0;
    for (int64_t t = 0; t < g->timesteps; ++t) {
        int64_t off = tb_offset_at_timestep(g, t), w = tb_width_at_timestep(g, t);
        CHECK(off >= 0 && w >= 1 && off + w <= g->max_width,
              "%s: t=%" PRId64 " offset %" PRId64 " width %" PRId64, label, t, off, w);
        int64_t set = tb_dependence_set_at_timestep(g, t);
        CHECK(set >= 0 && set < tb_max_dependence_sets(g), "%s: set %" PRId64, label,
              set);
        int64_t poff = tb_offset_at_timestep(g, t - 1);
        int64_t pw = tb_width_at_timestep(g, t - 1);
        int64_t noff = tb_offset_at_timestep(g, t + 1);
        int64_t nw = t + 1 < g->timesteps ? tb_width_at_timestep(g, t + 1) : 0;
        for (int64_t p = 0; p < g->max_width; ++p) {
            bool runs = p >= off && p < off + w;
            size_t n = tb_dependencies(g, t, p, d, bufcap);
            size_t m = tb_reverse_dependencies(g, t, p, r, bufcap);
            if (!runs) {
                CHECK(n == 0 && m == 0, "%s: idle point t=%" PRId64 " p=%" PRId64, label,
                      t, p);
                continue;
            }
            CHECK(n <= cap && m <= cap,
                  "%s: t=%" PRId64 " p=%" PRId64 ": %zu deps, %zu rdeps, max %zu", label,
                  t, p, n, m, cap);
            CHECK(tb_dependencies(g, t, p, NULL, 0) == n, "%s: count", label);
            CHECK(tb_reverse_dependencies(g, t, p, NULL, 0) == m, "%s: rcount", label);
            if (t == 0)
                CHECK(n == 0, "%s: timestep 0 reads %zu points", label, n);
            fwd += (long long)n;
            rev += (long long)m;
            for (size_t i = 0; i < n && i < bufcap; ++i) {
                CHECK(d[i] >= poff && d[i] < poff + pw,
                      "%s: t=%" PRId64 " p=%" PRId64 " reads %" PRId64
                      " which did not run",
                      label, t, p, d[i]);
                CHECK(i == 0 || d[i] > d[i - 1], "%s: deps not ascending", label);
                CHECK(has_rdep(g, t - 1, d[i], p, tmp, bufcap),
                      "%s: t=%" PRId64 " p=%" PRId64 " reads %" PRId64
                      " but is not among its readers",
                      label, t, p, d[i]);
                edges_checked++;
            }
            for (size_t i = 0; i < m && i < bufcap; ++i) {
                CHECK(r[i] >= noff && r[i] < noff + nw,
                      "%s: reader %" PRId64 " does not run", label, r[i]);
                CHECK(i == 0 || r[i] > r[i - 1], "%s: rdeps not ascending", label);
                CHECK(has_dep(g, t + 1, r[i], p, tmp, bufcap),
                      "%s: t=%" PRId64 " p=%" PRId64 " lists reader %" PRId64
                      " that does not read it",
                      label, t, p, r[i]);
            }
        }
    }
    CHECK(fwd == rev, "%s: %lld edges forward, %lld backward", label, fwd, rev);
    free(d);
    free(r);
    free(tmp);
}

/* Every pattern through tb_app_parse, so the graphs are the ones a run
 * gets (defaults, Task Bench's checks); each twice, as graphs 0 and 1 of
 * an -and run, because the graph index changes the random draws. */
static void test_inverse_parsed(void)
{
    static const char *const types[] = {"trivial",
                                        "no_comm",
                                        "stencil_1d",
                                        "stencil_1d_periodic",
                                        "dom",
                                        "tree",
                                        "fft",
                                        "all_to_all",
                                        "nearest",
                                        "spread",
                                        "random_nearest",
                                        "random_spread"};
    static const char *const fractions[] = {"0", "0.3", "0.7", "1"};
    int graphs = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ++ti) {
        const char *type = types[ti];
        bool random = !strncmp(type, "random", 6);
        bool radixed = random || !strcmp(type, "nearest") || !strcmp(type, "spread");
        bool periodic = random || !strcmp(type, "spread");
        bool spread = !strcmp(type, "spread") || !strcmp(type, "random_spread");
        for (int w = 1; w <= 17; ++w)
            for (int steps = 1; steps <= 7; steps += 2)
                for (int radix = radixed ? 0 : 3; radix <= (radixed ? 6 : 3); ++radix)
                    for (int period = periodic ? 1 : 0; period <= (periodic ? 4 : 0);
                         ++period)
                        for (int fi = 0; fi < (random ? 4 : 1); ++fi) {
                            /* Task Bench's bound, which tb_app_parse enforces */
                            if (spread && radix > 0 && period > (w + radix - 1) / radix)
                                continue;
                            char sw[16], ss[16], sr[16], sp[16];
                            snprintf(sw, sizeof sw, "%d", w);
                            snprintf(ss, sizeof ss, "%d", steps);
                            snprintf(sr, sizeof sr, "%d", radix);
                            snprintf(sp, sizeof sp, "%d", period);
                            char *args[32];
                            int n = 0;
                            args[n++] = "tb_graph_test";
                            for (int copy = 0; copy < 2; ++copy) {
                                if (copy)
                                    args[n++] = "-and";
                                args[n++] = "-type";
                                args[n++] = (char *)type;
                                args[n++] = "-width";
                                args[n++] = sw;
                                args[n++] = "-steps";
                                args[n++] = ss;
                                args[n++] = "-radix";
                                args[n++] = sr;
                                args[n++] = "-fraction";
                                args[n++] = (char *)fractions[fi];
                                if (periodic) {
                                    args[n++] = "-period";
                                    args[n++] = sp;
                                }
                            }
                            tb_app_t app;
                            if (tb_app_parse(&app, n, args) != 0) {
                                CHECK(0, "%s w=%d radix=%d period=%d rejected", type, w,
                                      radix, period);
                                continue;
                            }
                            for (int32_t gi = 0; gi < app.ngraphs; ++gi) {
                                char label[128];
                                snprintf(
                                    label, sizeof label,
                                    "%s w=%d steps=%d radix=%d period=%d fraction=%s "
                                    "graph=%d",
                                    type, w, steps, radix, period, fractions[fi],
                                    (int)gi);
                                check_graph(&app.graphs[gi], label);
                                graphs++;
                            }
                            tb_app_free(&app);
                        }
    }
    printf("inverse: %d parsed graphs, %lld edges\n", graphs, edges_checked);
    CHECK(graphs > 3000, "only %d graphs checked", graphs);
}

/* spread periods beyond Task Bench's bound (ceil(width/radix)) can only
 * be built by hand; the core must still list sorted, inverse sets. */
static void test_inverse_unbounded_spread(void)
{
    int graphs = 0;
    for (int dep = 0; dep < 2; ++dep)
        for (int64_t w = 1; w <= 9; ++w)
            for (int64_t radix = 1; radix <= 12; ++radix)
                for (int64_t period = 1; period <= 12; ++period) {
                    tb_graph_t g;
                    memset(&g, 0, sizeof g);
                    g.graph_index = 5;
                    g.timesteps = period + 2;
                    g.max_width = w;
                    g.dependence = dep ? TB_DEP_RANDOM_SPREAD : TB_DEP_SPREAD;
                    g.radix = radix;
                    g.period = period;
                    g.fraction_connected = 0.5;
                    g.output_bytes_per_task = 16;
                    char label[96];
                    snprintf(label, sizeof label,
                             "hand-built %s w=%" PRId64 " radix=%" PRId64
                             " period=%" PRId64,
                             tb_dep_name(g.dependence), w, radix, period);
                    check_graph(&g, label);
                    graphs++;
                }
    printf("inverse: %d hand-built spread graphs\n", graphs);
}

static void test_short_output_array(void)
{
    tb_app_t app;
    char *argv[] = {"t", "-type", "all_to_all", "-width", "10", "-steps", "2"};
    CHECK(tb_app_parse(&app, 7, argv) == 0, "parse");
    int64_t buf[5] = {-1, -1, -1, -1, -1};
    size_t n = tb_dependencies(&app.graphs[0], 1, 4, buf, 3);
    CHECK(n == 10, "count %zu", n);
    CHECK(buf[0] == 0 && buf[1] == 1 && buf[2] == 2 && buf[3] == -1 && buf[4] == -1,
          "wrote %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64, buf[0], buf[1], buf[2],
          buf[3]);
    CHECK(tb_max_dependencies(&app.graphs[0]) == 10, "max");
    tb_app_free(&app);
}

static void test_shapes(void)
{
    /* Task Bench's dependence-set counts: fft has ceil(log2 width) sets,
     * spread and the random ones `period`, the rest one. */
    tb_graph_t g;
    memset(&g, 0, sizeof g);
    g.timesteps = 10;
    g.max_width = 9;
    g.dependence = TB_DEP_FFT;
    CHECK(tb_max_dependence_sets(&g) == 4, "fft width 9: %" PRId64,
          tb_max_dependence_sets(&g));
    g.max_width = 8;
    CHECK(tb_max_dependence_sets(&g) == 3, "fft width 8");
    CHECK(tb_dependence_set_at_timestep(&g, 0) == 2 &&
              tb_dependence_set_at_timestep(&g, 1) == 0 &&
              tb_dependence_set_at_timestep(&g, 3) == 2,
          "fft sets");
    g.max_width = 1; /* Task Bench divides by zero here; we keep one set */
    CHECK(tb_max_dependence_sets(&g) == 1, "fft width 1");
    g.dependence = TB_DEP_SPREAD;
    g.period = 5;
    CHECK(tb_max_dependence_sets(&g) == 5 && tb_timestep_period(&g) == 5 &&
              tb_dependence_set_at_timestep(&g, 7) == 2,
          "spread sets");
    g.dependence = TB_DEP_TREE;
    g.max_width = 1000;
    g.timesteps = 100;
    CHECK(tb_width_at_timestep(&g, 0) == 1 && tb_width_at_timestep(&g, 9) == 512 &&
              tb_width_at_timestep(&g, 10) == 1000 &&
              tb_width_at_timestep(&g, 99) == 1000,
          "tree widths");
    g.dependence = TB_DEP_DOM;
    g.max_width = 3;
    g.timesteps = 6;
    /* offset max(0, t+3-6), width min(3, t+1, 6-t) */
    static const int64_t off[6] = {0, 0, 0, 0, 1, 2}, wid[6] = {1, 2, 3, 3, 2, 1};
    for (int t = 0; t < 6; ++t)
        CHECK(tb_offset_at_timestep(&g, t) == off[t] &&
                  tb_width_at_timestep(&g, t) == wid[t],
              "dom t=%d", t);
}

int main(void)
{
    test_siphash();
    test_shapes();
    test_short_output_array();
    test_inverse_parsed();
    test_inverse_unbounded_spread();
    return tb_test_verdict("tb_graph_test");
}
