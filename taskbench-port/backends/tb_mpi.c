/* Task Bench by hand in MPI: the baseline (the best a programmer can do
 * with explicit messages).
 *
 * Rank r owns the contiguous block of points [W*r/R, W*(r+1)/R) of every
 * graph (W = -width, R = ranks; ranks past the width own nothing).  For
 * each timestep t, for all graphs together:
 *   1. post an Irecv for every output of timestep t-1 that a local point
 *      of t reads and another rank owns (once per source point);
 *   2. wait for them;
 *   3. wait for the Isends of timestep t-2, which sent the buffers that
 *      this step overwrites (two output buffers per point, by parity);
 *   4. run the local points of t (tb_execute_point validates the inputs);
 *   5. Isend each output to every other rank owning a reader at t+1
 *      (tb_reverse_dependencies), once per rank.
 * A message is matched by its source and a tag naming (graph, timestep,
 * point).  Each wait depends only on earlier steps of other ranks (the
 * Isends of t-1, the Irecvs of t-1), so no cycle of waits can form.
 *
 * Timing: from a barrier before the first timestep to the end of the last
 * one on each rank; rank 0 reports the maximum (MPI_Reduce).
 * TB_BREAK_DEPS (tb_backend.h) breaks one task on purpose. */
#include "tb_backend.h"

#include <mpi.h>

typedef struct {
    const tb_graph_t *g;
    int64_t lo, hi;        /* owned points */
    char **out[2];         /* out[f][p - lo]: output of the last step with parity f */
    char **recv;           /* recv[q]: copy of a remote point's output (or NULL) */
    int64_t *recv_step;    /* timestep whose output recv[q] is posted for */
    int64_t break_t, break_p;
    bool has_break;
} tb_local_t;

typedef struct {
    MPI_Request *req;
    size_t n, cap;
} tb_reqs_t;

static int nranks, rank;
static int64_t tag_period; /* timesteps before a tag repeats */

static void tb_reqs_push(tb_reqs_t *r, MPI_Request q)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->req = realloc(r->req, r->cap * sizeof(*r->req));
        if (!r->req) {
            fprintf(stderr, "out of memory for MPI requests\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    r->req[r->n++] = q;
}

static void tb_reqs_wait(tb_reqs_t *r)
{
    if (r->n)
        MPI_Waitall((int)r->n, r->req, MPI_STATUSES_IGNORE);
    r->n = 0;
}

static int64_t block_lo(int64_t width, int r) { return width * r / nranks; }

static int owner(int64_t width, int64_t q)
{
    /* the largest r with block_lo(r) <= q */
    return (int)(((q + 1) * nranks + width - 1) / width - 1);
}

/* Tags repeat every tag_period timesteps; at most three timesteps' messages
 * are in flight between two ranks, and messages with one tag between one
 * pair are matched in order anyway. */
static int tag_of(const tb_app_t *app, int graph, int64_t t, int64_t q, int64_t width_all)
{
    int64_t k = (t % tag_period) * app->ngraphs + graph;
    return (int)(k * width_all + q);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    tb_app_t app;
    int rc = tb_app_parse(&app, argc, argv);
    if (rc != 0) {
        MPI_Finalize();
        return rc;
    }
    if (app.dump_deps) {
        if (rank == 0)
            tb_app_dump_deps(&app, stdout);
        tb_app_free(&app);
        MPI_Finalize();
        return 0;
    }
    if (app.nodes == 0)
        app.nodes = nranks; /* the report's local/nonlocal estimate */
    int brk = tb_break_mode();
    if (rank == 0) {
        tb_app_display(&app, stdout);
        tb_break_announce(&app, brk);
        fflush(stdout);
    }

    int64_t width_all = 1;
    size_t max_deps = 1, max_scratch = 0;
    for (int i = 0; i < app.ngraphs; i++) {
        if (app.graphs[i].max_width > width_all)
            width_all = app.graphs[i].max_width;
        if (tb_max_dependencies(&app.graphs[i]) > max_deps)
            max_deps = tb_max_dependencies(&app.graphs[i]);
        if (app.graphs[i].scratch_bytes_per_task > max_scratch)
            max_scratch = app.graphs[i].scratch_bytes_per_task;
    }
    int *tag_ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    int64_t tags = flag && tag_ub ? (int64_t)*tag_ub + 1 : 32768;
    tag_period = tags / (app.ngraphs * width_all);
    if (tag_period < 4) {
        if (rank == 0)
            fprintf(stderr,
                    "mpi-taskbench: %d graphs x width %lld need more "
                    "MPI tags than MPI_TAG_UB=%lld allows\n",
                    app.ngraphs, (long long)width_all, (long long)(tags - 1));
        MPI_Finalize();
        return 2;
    }

    /* Buffers of the points this rank owns, and for remote inputs. */
    tb_local_t *loc = tb_xmalloc(app.ngraphs * sizeof(*loc), "graphs");
    for (int i = 0; i < app.ngraphs; i++) {
        tb_local_t *L = &loc[i];
        const tb_graph_t *g = &app.graphs[i];
        L->g = g;
        L->lo = block_lo(g->max_width, rank);
        L->hi = block_lo(g->max_width, rank + 1);
        for (int f = 0; f < 2; f++) {
            L->out[f] = tb_xmalloc((L->hi - L->lo) * sizeof(char *), "buffers");
            for (int64_t p = L->lo; p < L->hi; p++) {
                char *b = tb_xmalloc(g->output_bytes_per_task, "buffers");
                memset(b, TB_POISON, g->output_bytes_per_task);
                L->out[f][p - L->lo] = b;
            }
        }
        L->recv = calloc(g->max_width, sizeof(char *));
        L->recv_step = tb_xmalloc(g->max_width * sizeof(int64_t), "buffers");
        if (!L->recv) {
            fprintf(stderr, "out of memory for receive buffers\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int64_t q = 0; q < g->max_width; q++)
            L->recv_step[q] = -1;
        L->has_break = tb_break_pick(g, brk, &L->break_t, &L->break_p);
    }
    char *scratch = NULL;
    if (max_scratch > 0) {
        scratch = tb_xmalloc(max_scratch, "scratch");
        tb_prepare_scratch(scratch, max_scratch);
    }
    int64_t *deps = tb_xmalloc(max_deps * sizeof(int64_t), "dependencies");
    const char **inputs = tb_xmalloc(max_deps * sizeof(char *), "inputs");
    size_t *input_bytes = tb_xmalloc(max_deps * sizeof(size_t), "inputs");
    int64_t *rdeps = tb_xmalloc(width_all * sizeof(int64_t), "dependencies");
    tb_reqs_t recvs = {0}, sends[2] = {{0}, {0}};
    int64_t steps = tb_max_steps(&app);

    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int64_t t = 0; t < steps; t++) {
        int cur = (int)(t % 2), prev = 1 - cur;
        /* 1. receives for the inputs of this step */
        for (int i = 0; i < app.ngraphs; i++) {
            tb_local_t *L = &loc[i];
            const tb_graph_t *g = L->g;
            if (t == 0 || t >= g->timesteps)
                continue;
            int64_t off = tb_offset_at_timestep(g, t);
            int64_t lo = L->lo > off ? L->lo : off;
            int64_t hi = off + tb_width_at_timestep(g, t);
            hi = L->hi < hi ? L->hi : hi;
            for (int64_t p = lo; p < hi; p++) {
                size_t n = tb_dependencies(g, t, p, deps, max_deps);
                for (size_t k = 0; k < n; k++) {
                    int64_t q = deps[k];
                    if ((q >= L->lo && q < L->hi) || L->recv_step[q] == t - 1)
                        continue;
                    if (!L->recv[q])
                        L->recv[q] = tb_xmalloc(g->output_bytes_per_task, "buffers");
                    L->recv_step[q] = t - 1;
                    MPI_Request r;
                    MPI_Irecv(L->recv[q], (int)g->output_bytes_per_task, MPI_BYTE,
                              owner(g->max_width, q),
                              tag_of(&app, i, t - 1, q, width_all), MPI_COMM_WORLD, &r);
                    tb_reqs_push(&recvs, r);
                }
            }
        }
        /* 2. inputs arrived; 3. the buffers of parity cur were sent */
        tb_reqs_wait(&recvs);
        tb_reqs_wait(&sends[cur]);
        for (int i = 0; i < app.ngraphs; i++) {
            tb_local_t *L = &loc[i];
            const tb_graph_t *g = L->g;
            if (t >= g->timesteps)
                continue;
            int64_t off = tb_offset_at_timestep(g, t);
            int64_t lo = L->lo > off ? L->lo : off;
            int64_t hi = off + tb_width_at_timestep(g, t);
            hi = L->hi < hi ? L->hi : hi;
            /* 4. run the local points */
            for (int64_t p = lo; p < hi; p++) {
                size_t n = t > 0 ? tb_dependencies(g, t, p, deps, max_deps) : 0;
                char *out = L->out[cur][p - L->lo];
                for (size_t k = 0; k < n; k++) {
                    int64_t q = deps[k];
                    inputs[k] = q >= L->lo && q < L->hi ? L->out[prev][q - L->lo]
                                                        : L->recv[q];
                    input_bytes[k] = g->output_bytes_per_task;
                }
                bool broken = L->has_break && L->break_t == t && L->break_p == p;
                if (broken && brk == TB_BREAK_INPUT && n > 0)
                    inputs[0] = out; /* as if a dependence were missing */
                tb_execute_point(g, t, p, out, g->output_bytes_per_task, inputs,
                                 input_bytes, n, scratch, g->scratch_bytes_per_task);
                if (broken && brk == TB_BREAK_OUTPUT)
                    for (size_t k = 0; k < g->output_bytes_per_task; k++)
                        out[k] = (char)~out[k];
            }
            /* 5. send the outputs to the ranks that read them at t+1 */
            for (int64_t p = lo; p < hi; p++) {
                size_t n = tb_reverse_dependencies(g, t, p, rdeps, width_all);
                int last = -1;
                for (size_t k = 0; k < n; k++) {
                    int dst = owner(g->max_width, rdeps[k]);
                    if (dst == rank || dst == last)
                        continue;
                    last = dst;
                    MPI_Request r;
                    MPI_Isend(L->out[cur][p - L->lo], (int)g->output_bytes_per_task,
                              MPI_BYTE, dst, tag_of(&app, i, t, p, width_all),
                              MPI_COMM_WORLD, &r);
                    tb_reqs_push(&sends[cur], r);
                }
            }
        }
    }
    tb_reqs_wait(&sends[0]);
    tb_reqs_wait(&sends[1]);
    double elapsed = MPI_Wtime() - start, max_elapsed = 0;
    MPI_Reduce(&elapsed, &max_elapsed, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        tb_app_report(&app, max_elapsed, stdout);
        fflush(stdout);
    }

    for (int i = 0; i < app.ngraphs; i++) {
        tb_local_t *L = &loc[i];
        for (int f = 0; f < 2; f++) {
            for (int64_t p = L->lo; p < L->hi; p++)
                free(L->out[f][p - L->lo]);
            free(L->out[f]);
        }
        for (int64_t q = 0; q < L->g->max_width; q++)
            free(L->recv[q]);
        free(L->recv);
        free(L->recv_step);
    }
    free(loc);
    free(scratch);
    free(deps);
    free(inputs);
    free(input_bytes);
    free(rdeps);
    free(recvs.req);
    free(sends[0].req);
    free(sends[1].req);
    tb_app_free(&app);
    MPI_Finalize();
    return 0;
}
