/* The head's entry points clang-19 emits for target regions and data
 * constructs.  Each construct goes down one way: its map arguments are
 * planned by tgt_map.c (the mapping table changes now, in libomp's order;
 * the data operations come back as a plan), then tgt_record.c records the
 * plan, the kernel and its launch message as one node of the task graph,
 * which runs it later. */
#define _GNU_SOURCE
#include "tgt_graph.h"
#include "tgt_split.h"
#include "ompc_trace.h"

#include <stdlib.h>
#include <string.h>

/* From libomp, which every OpenMP program loads; weak so that the library
 * links on its own. */
int omp_get_default_device(void) __attribute__((weak));

/* ompc exposes the whole cluster as device 0.  Returns true if the call
 * should go to the cluster, false for the host (initial device or
 * offloading disabled). */
static bool use_device(int64_t dev, const void *loc)
{
    if (!tgt_ready() || tgt_rt->offload == TGT_OFFLOAD_DISABLED)
        return false;
    if (dev == -1)
        dev = omp_get_default_device ? omp_get_default_device() : 0;
    if (dev == 0)
        return true;
    if (dev == 1) /* omp_get_initial_device() */
        return false;
    TGT_USER_ERROR(loc,
                   "device number %lld does not exist: ompc exposes the "
                   "cluster as device 0 (the host is device 1)",
                   (long long)dev);
}

/* Per-call scratch of launch_record up to this many entries lives on the
 * stack: a heap block per list per task was a malloc and a free on the
 * recording thread's path for every kernel. */
#define LAUNCH_STACK 32

/* The buffers a kernel may write, into wr (returns how many).  The rule
 * (docs/architecture.md, "Which data a kernel writes"): a buffer is read-only for a target
 * task only if the task's depend list names it, and names it only with
 * depend(in:).  Everything else the kernel can reach counts as written. */
static size_t tgt_written_bufs(const tgt_mapped_t *m, const tgt_dep_t *deps,
                               dm_buf_t *const *dep_bufs, int ndeps, dm_buf_t **wr)
{
    /* Per buffer of the kernel: named by an in dependence, by another one. */
    bool stack[2 * LAUNCH_STACK];
    bool *read = stack;
    if (m->nbufs > LAUNCH_STACK)
        read = malloc(m->nbufs * 2 * sizeof(bool));
    if (!read)
        ompc_fatal("out of memory classifying kernel buffers");
    memset(read, 0, (m->nbufs ? m->nbufs : 1) * 2 * sizeof(bool));
    bool *write = read + m->nbufs;
    for (int d = 0; d < ndeps; d++)
        for (size_t i = 0; dep_bufs[d] && i < m->nbufs; i++)
            if (m->bufs[i] == dep_bufs[d]) {
                if (deps[d].in_only)
                    read[i] = true;
                else
                    write[i] = true;
            }
    size_t n = 0;
    for (size_t i = 0; i < m->nbufs; i++)
        if (write[i] || !read[i])
            wr[n++] = m->bufs[i];
    if (read != stack)
        free(read);
    return n;
}

/* One kernel launch becomes a node of the task graph: the arguments are
 * mapped now (mapping-table bookkeeping in libomp's order), the unmapping
 * too, their data ops planned; recording the node captures the data, and
 * the node runs when the graph is flushed.  A
 * synchronous target region waits for its node; a `target nowait` task
 * returns at once, so libomp sees it complete and runs its successors,
 * which record in turn. */
static void launch_record(tgt_ident_t *loc, const tgt_kernel_t *k,
                          const tgt_kernel_args_t *ka, bool wait)
{
    tgt_args_t a = {(int32_t)ka->num_args, ka->arg_base_ptrs, ka->arg_ptrs, ka->arg_sizes,
                    ka->arg_types,         ka->arg_mappers,   loc};
    void *red_space[a.n > 0 ? 2 * a.n : 1];
    tgt_taskred_redirect(&a, red_space);
    uint64_t t0 = ompc_trace_on() ? ompc_now_ns() : 0;
    tgt_plan_t p;
    tgt_plan_begin(&p);
    tgt_mapped_t m;
    tgt_mapped_begin(&m, &p);
    /* A kernel may touch any declare target variable, and through a link
     * variable's pointer the data it is attached to (tgt_data_begin adds
     * what the kernel's buffers point to), even when the region does not
     * name the variable (a declare target function uses it). */
    for (int g = 0; g < tgt_rt->nglobals; g++)
        tgt_mapped_add(&m, tgt_rt->globals[g].buf);
    tgt_data_begin(&a, &m, &p);
    /* Mapped data its depend list names travels with it too: a kernel may
     * reach it through device pointers passed by value (the OMPC model:
     * dependences say which data a task uses). */
    int ndeps;
    const tgt_dep_t *deps;
    tgt_ompt_current_deps(&ndeps, &deps);
    dm_buf_t *dep_stack[LAUNCH_STACK];
    dm_buf_t **dep_bufs = dep_stack;
    if (ndeps > LAUNCH_STACK)
        dep_bufs = malloc((size_t)ndeps * sizeof(*dep_bufs));
    if (!dep_bufs)
        ompc_fatal("out of memory launching a kernel");
    if (ndeps > 0)
        tgt_map_dep_bufs(deps, ndeps, dep_bufs);
    for (int d = 0; d < ndeps; d++)
        if (dep_bufs[d])
            tgt_mapped_add(&m, dep_bufs[d]);
    dm_buf_t *wr_stack[LAUNCH_STACK];
    dm_buf_t **wr = m.nbufs <= LAUNCH_STACK ? wr_stack : malloc(m.nbufs * sizeof(*wr));
    if (!wr)
        ompc_fatal("out of memory launching a kernel");
    size_t nwr = tgt_written_bufs(&m, deps, dep_bufs, ndeps, wr);
    if (dep_bufs != dep_stack)
        free(dep_bufs);
    tgt_plan_post(&p);
    tgt_data_end(&a, &p);
    tgt_plan_mapped(&p);
    tgt_rec_construct(loc, k, &p, &m, wr, nwr, wait);
    if (wr != wr_stack)
        free(wr);
    if (t0 && !wait)
        ompc_trace_span("record", k->name, t0, ompc_now_ns(), NULL, 0);
}

int __tgt_target_kernel(tgt_ident_t *loc, int64_t device_id, int32_t num_teams,
                        int32_t thread_limit, void *host_id, tgt_kernel_args_t *ka)
{
    (void)num_teams;
    (void)thread_limit;
    if (!use_device(device_id, loc)) {
        if (tgt_ready() && tgt_rt->offload == TGT_OFFLOAD_MANDATORY)
            TGT_USER_ERROR(loc, "OMP_TARGET_OFFLOAD=mandatory but the target "
                                "region was sent to the host device");
        return 1; /* the compiled code runs the region on the host */
    }
    const tgt_kernel_t *k = tgt_kernel_find(host_id);
    if (!k)
        TGT_USER_ERROR(loc, "target region %p is not in the registered image", host_id);
    if (ka->version < 2)
        TGT_USER_ERROR(loc,
                       "kernel argument version %u is too old (clang-19 "
                       "emits 3)",
                       ka->version);
    tgt_split_note(k, num_teams);
    tgt_call_slot_t *slot = tgt_call_enter();
    launch_record(loc, k, ka, !(ka->flags & TGT_KFLAG_NOWAIT));
    tgt_call_leave(slot);
    return 0;
}

int __tgt_target_kernel_nowait(tgt_ident_t *loc, int64_t device_id, int32_t num_teams,
                               int32_t thread_limit, void *host_id, tgt_kernel_args_t *ka,
                               int32_t ndeps, void *deps, int32_t nnoalias, void *noalias)
{
    (void)ndeps;
    (void)deps;
    (void)nnoalias;
    (void)noalias;
    return __tgt_target_kernel(loc, device_id, num_teams, thread_limit, host_id, ka);
}

/* libomp asks whether the work behind a nowait target task is done.  A
 * recorded task is complete as far as libomp is concerned (the graph
 * orders the work), so there is never a handle to poll. */
void __tgt_target_nowait_query(void **handle)
{
    if (handle)
        *handle = NULL;
}

/* ------------------------------------------------- data entry points */
/* Data constructs become data-only nodes; `nowait` ones do not wait. */
static void data_record(tgt_args_t *a, int what, bool wait)
{
    tgt_plan_t p;
    tgt_plan_begin(&p);
    if (what == 0)
        tgt_data_begin(a, NULL, &p);
    else if (what == 1)
        tgt_data_end(a, &p);
    else
        tgt_data_update(a, &p);
    tgt_plan_mapped(&p);
    tgt_rec_construct(a->loc, NULL, &p, NULL, NULL, 0, wait);
}

#define DATA_FN(name, op)                                                                \
    void name(tgt_ident_t *loc, int64_t device_id, int32_t n, void **base, void **begin, \
              int64_t *sizes, int64_t *types, void **names, void **mappers)              \
    {                                                                                    \
        (void)names;                                                                     \
        if (!use_device(device_id, loc))                                                 \
            return;                                                                      \
        tgt_args_t a = {n, base, begin, sizes, types, mappers, loc};                     \
        tgt_call_slot_t *slot = tgt_call_enter();                                        \
        data_record(&a, op, !tgt_ompt_in_deferred_target_task());                        \
        tgt_call_leave(slot);                                                            \
    }                                                                                    \
    void name##_nowait(tgt_ident_t *loc, int64_t device_id, int32_t n, void **base,      \
                       void **begin, int64_t *sizes, int64_t *types, void **names,       \
                       void **mappers, int32_t ndeps, void *deps, int32_t nnoalias,      \
                       void *noalias)                                                    \
    {                                                                                    \
        (void)ndeps;                                                                     \
        (void)deps;                                                                      \
        (void)nnoalias;                                                                  \
        (void)noalias;                                                                   \
        (void)names;                                                                     \
        if (!use_device(device_id, loc))                                                 \
            return;                                                                      \
        tgt_args_t a = {n, base, begin, sizes, types, mappers, loc};                     \
        tgt_call_slot_t *slot = tgt_call_enter();                                        \
        data_record(&a, op, false);                                                      \
        tgt_call_leave(slot);                                                            \
    }

DATA_FN(__tgt_target_data_begin_mapper, 0)
DATA_FN(__tgt_target_data_end_mapper, 1)
DATA_FN(__tgt_target_data_update_mapper, 2)

/* clang names the nowait variants ..._nowait_mapper. */
void __tgt_target_data_begin_nowait_mapper(tgt_ident_t *loc, int64_t d, int32_t n,
                                           void **b, void **p, int64_t *s, int64_t *t,
                                           void **nm, void **mp, int32_t nd, void *dl,
                                           int32_t nna, void *nal)
{
    __tgt_target_data_begin_mapper_nowait(loc, d, n, b, p, s, t, nm, mp, nd, dl, nna,
                                          nal);
}
void __tgt_target_data_end_nowait_mapper(tgt_ident_t *loc, int64_t d, int32_t n, void **b,
                                         void **p, int64_t *s, int64_t *t, void **nm,
                                         void **mp, int32_t nd, void *dl, int32_t nna,
                                         void *nal)
{
    __tgt_target_data_end_mapper_nowait(loc, d, n, b, p, s, t, nm, mp, nd, dl, nna, nal);
}
void __tgt_target_data_update_nowait_mapper(tgt_ident_t *loc, int64_t d, int32_t n,
                                            void **b, void **p, int64_t *s, int64_t *t,
                                            void **nm, void **mp, int32_t nd, void *dl,
                                            int32_t nna, void *nal)
{
    __tgt_target_data_update_mapper_nowait(loc, d, n, b, p, s, t, nm, mp, nd, dl, nna,
                                           nal);
}

/* Pre-mapper entry points (older compilers). */
void __tgt_target_data_begin(int64_t d, int32_t n, void **b, void **p, int64_t *s,
                             int64_t *t)
{
    __tgt_target_data_begin_mapper(NULL, d, n, b, p, s, t, NULL, NULL);
}
void __tgt_target_data_end(int64_t d, int32_t n, void **b, void **p, int64_t *s,
                           int64_t *t)
{
    __tgt_target_data_end_mapper(NULL, d, n, b, p, s, t, NULL, NULL);
}
void __tgt_target_data_update(int64_t d, int32_t n, void **b, void **p, int64_t *s,
                              int64_t *t)
{
    __tgt_target_data_update_mapper(NULL, d, n, b, p, s, t, NULL, NULL);
}

void __kmpc_push_target_tripcount_mapper(tgt_ident_t *loc, int64_t d, uint64_t n)
{
    (void)loc;
    (void)d;
    (void)n;
}
void __kmpc_push_target_tripcount(int64_t d, uint64_t n)
{
    (void)d;
    (void)n;
}
void __tgt_set_info_flag(uint32_t flags) { (void)flags; }
