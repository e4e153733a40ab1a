/* Kernel launches and the data-mapping entry points clang-19 emits. */
#define _GNU_SOURCE
#include "tgt_graph.h"
#include "ompc_trace.h"

#include <ffi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* From libomp, which every OpenMP program loads; weak so that the library
 * links on its own. */
int omp_get_default_device(void) __attribute__((weak));

/* ---------------------------------------------------------- executors */
/* The launch message is tgt_wire.h's.  The device image's kernels take an
 * implicit leading pointer (clang's dyn_ptr, unused on the host target)
 * and then one pointer-sized value per argument. */
int tgt_kernel_msg_index(const void *args, size_t args_size)
{
    uint32_t idx;
    if (!tgt_wire_kernel_peek(args, args_size, &idx))
        return -1;
    return idx < (uint32_t)tgt_rt->nkernels ? (int)idx : -1;
}

ompc_status_t tgt_kernel_run(const void *args, size_t args_size, uint64_t *ns_p,
                             tgt_wire_kernel_view_t *v_p)
{
    *ns_p = 0;
    int idx = tgt_kernel_msg_index(args, args_size);
    if (idx < 0)
        return OMPC_ERR_INVALID;
    tgt_wire_kernel_view_t v;
    const char *bad = tgt_wire_kernel_decode(args, args_size, &v);
    /* Read-backs come only with a direct launch, whose reply takes them. */
    if (!bad && v.has_backs && !v_p)
        bad = "read-backs in a launch without a reply";
    if (bad) {
        ompc_error("rank %d: refused a launch of kernel %s: %s", tgt_rt->rank,
                   tgt_rt->kernels[idx].name, bad);
        return OMPC_ERR_INVALID;
    }
    /* Small copies into the kernel's fresh buffers; the head committed
     * their pages before sending. */
    const unsigned char *cp = v.copies;
    for (uint64_t c = 0; c < v.ncopies; c++) {
        tgt_wire_span_t s;
        const void *bytes;
        cp = tgt_wire_copy_next(cp, &s, &bytes);
        memcpy((void *)(uintptr_t)s.addr, bytes, s.len);
    }
    if (v_p)
        *v_p = v;
    uint32_t n = v.nargs;
    const tgt_kernel_t *k = &tgt_rt->kernels[idx];
    uint64_t *vals = calloc((size_t)n + 1, sizeof(uint64_t));
    ffi_type **types = calloc((size_t)n + 1, sizeof(ffi_type *));
    void **ptrs = calloc((size_t)n + 1, sizeof(void *));
    if (!vals || !types || !ptrs) {
        free(vals);
        free(types);
        free(ptrs);
        return OMPC_ERR_NOMEM;
    }
    /* LLVM 19's host plugin passes ~0 as dyn_ptr (no launch environment). */
    vals[0] = ~(uint64_t)0;
    for (uint32_t i = 0; i < n; i++)
        vals[i + 1] = tgt_wire_kernel_arg(&v, i);
    /* A function pointer passed by value holds the head's address of the
     * function: the kernel calls this executor's device function. */
    for (uint32_t i = 1; tgt_rt->nindirect > 0 && i <= n; i++) {
        void *fn = tgt_indirect_find(vals[i]);
        if (fn)
            vals[i] = (uint64_t)(uintptr_t)fn;
    }
    for (uint32_t i = 0; i <= n; i++) {
        types[i] = &ffi_type_uint64;
        ptrs[i] = &vals[i];
    }
    ffi_cif cif;
    ompc_status_t st = OMPC_OK;
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, n + 1, &ffi_type_void, types) != FFI_OK) {
        st = OMPC_ERR_INVALID;
    } else {
        if (tgt_rt->info)
            fprintf(stderr, "[ompc info] r%d run %s (%u args)\n", tgt_rt->rank,
                    k->name, n);
        /* The handler thread's own ICV: parallel regions in the kernel use
         * this executor's cores. */
        if (tgt_rt->kernel_threads > 0 && omp_set_num_threads)
            omp_set_num_threads(tgt_rt->kernel_threads);
        static _Thread_local bool named;
        if (!named && ompc_trace_on()) {
            ompc_trace_thread_name("handler");
            named = true;
        }
        uint64_t t0 = ompc_now_ns();
        tgt_kernel_rec_start(k->name);
        tgt_in_kernel = true;
        ffi_call(&cif, FFI_FN(k->fn), NULL, ptrs);
        tgt_in_kernel = false;
        tgt_kernel_rec_end();
        uint64_t t1 = ompc_now_ns();
        ompc_trace_span("kernel", k->name, t0, t1, NULL, 0);
        /* The head learns kernel costs from this (HEFT). */
        *ns_p = t1 - t0;
    }
    free(vals);
    free(types);
    free(ptrs);
    return st;
}

/* Result: tgt_wire_kernel_reply_t, then the bytes of each read-back
 * padded to 8. */
static ompc_status_t tgt_fn_kernel(ev_exec_info_t *info)
{
    tgt_wire_kernel_reply_t rep;
    tgt_wire_kernel_view_t v;
    ompc_status_t st = tgt_kernel_run(info->args, info->args_size, &rep.kernel_ns, &v);
    if (st != OMPC_OK)
        return st;
    size_t need = sizeof(rep);
    for (uint64_t i = 0; i < v.nbacks; i++)
        need += tgt_wire_pad8(tgt_wire_back_get(&v, i).len);
    if (info->result_cap < need)
        return v.nbacks ? OMPC_ERR_INVALID : OMPC_OK;
    char *r = info->result;
    memcpy(r, &rep, sizeof(rep));
    r += sizeof(rep);
    for (uint64_t i = 0; i < v.nbacks; i++) {
        tgt_wire_span_t b = tgt_wire_back_get(&v, i);
        memcpy(r, (const void *)(uintptr_t)b.addr, b.len);
        memset(r + b.len, 0, tgt_wire_pad8(b.len) - b.len);
        r += tgt_wire_pad8(b.len);
    }
    info->result_size = need;
    return OMPC_OK;
}

ompc_status_t tgt_kernel_fn_register(void)
{
    return ev_fn_register(tgt_rt->ev, "tgt.kernel", tgt_fn_kernel, 0,
                          &tgt_rt->fn_kernel);
}

/* ---------------------------------------------------------- devices */
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
    TGT_USER_ERROR(loc, "device number %lld does not exist: ompc exposes the "
                   "cluster as device 0 (the host is device 1)", (long long)dev);
}

/* The buffers a kernel may write, into wr (returns how many).  The rule
 * (docs/architecture.md, "Which data a kernel writes"): a buffer is read-only for a target
 * task only if the task's depend list names it, and names it only with
 * depend(in:).  Everything else the kernel can reach counts as written. */
static size_t tgt_written_bufs(const tgt_mapped_t *m, const tgt_dep_t *deps,
                               dm_buf_t *const *dep_bufs, int ndeps, dm_buf_t **wr)
{
    /* Per buffer of the kernel: named by an in dependence, by another one. */
    bool *read = calloc(m->nbufs ? m->nbufs : 1, 2 * sizeof(bool));
    if (!read)
        ompc_fatal("out of memory classifying kernel buffers");
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
    free(read);
    return n;
}

/* One kernel launch becomes a node of the task graph: the arguments are
 * mapped now (mapping-table bookkeeping in libomp's order, data captured),
 * the unmapping too, and the node runs when the graph is flushed.  A
 * synchronous target region waits for its node; a `target nowait` task
 * returns at once, so libomp sees it complete and runs its successors,
 * which record in turn. */
static void launch_record(tgt_ident_t *loc, const tgt_kernel_t *k,
                          const tgt_kernel_args_t *ka, bool wait)
{
    tgt_args_t a = {(int32_t)ka->num_args, ka->arg_base_ptrs, ka->arg_ptrs,
                    ka->arg_sizes, ka->arg_types, ka->arg_mappers, loc};
    void *red_space[a.n > 0 ? 2 * a.n : 1];
    tgt_taskred_redirect(&a, red_space);
    uint64_t t0 = ompc_trace_on() ? ompc_now_ns() : 0;
    tgt_node_t *n = tgt_rec_begin(loc, k);
    tgt_mapped_t m = {0};
    /* A kernel may touch any declare target variable, and through a link
     * variable's pointer the data it is attached to (tgt_data_begin adds
     * what the kernel's buffers point to), even when the region does not
     * name the variable (a declare target function uses it). */
    for (int g = 0; g < tgt_rt->nglobals; g++)
        tgt_mapped_add(&m, tgt_rt->globals[g].buf);
    tgt_data_begin(&a, &m);
    /* Mapped data its depend list names travels with it too: a kernel may
     * reach it through device pointers passed by value (the OMPC model:
     * dependences say which data a task uses). */
    int ndeps;
    const tgt_dep_t *deps;
    tgt_ompt_current_deps(&ndeps, &deps);
    dm_buf_t **dep_bufs = calloc(ndeps > 0 ? (size_t)ndeps : 1, sizeof(*dep_bufs));
    if (!dep_bufs)
        ompc_fatal("out of memory launching a kernel");
    for (int d = 0; d < ndeps; d++)
        if (deps[d].type != TGT_DEP_ALL &&
            tgt_map_dev_addr((const void *)deps[d].addr, 1, &dep_bufs[d]))
            tgt_mapped_add(&m, dep_bufs[d]);
    dm_buf_t **wr = malloc((m.nbufs ? m.nbufs : 1) * sizeof(*wr));
    if (!wr)
        ompc_fatal("out of memory launching a kernel");
    size_t nwr = tgt_written_bufs(&m, deps, dep_bufs, ndeps, wr);
    free(dep_bufs);
    size_t len = tgt_wire_kernel_size((uint32_t)m.nkargs);
    char *msg = malloc(len);
    if (!msg)
        ompc_fatal("out of memory launching a kernel");
    tgt_wire_kernel_put((unsigned char *)msg, (uint32_t)(k - tgt_rt->kernels),
                        (uint32_t)m.nkargs, m.kargs);
    tgt_rec_post();
    tgt_data_end(&a);
    tgt_rec_commit(n, &m, wr, nwr, msg, len, wait);
    tgt_mapped_free(&m);
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
        TGT_USER_ERROR(loc, "target region %p is not in the registered image",
                       host_id);
    if (ka->version < 2)
        TGT_USER_ERROR(loc, "kernel argument version %u is too old (clang-19 "
                       "emits 3)", ka->version);
    launch_record(loc, k, ka, !(ka->flags & TGT_KFLAG_NOWAIT));
    return 0;
}

int __tgt_target_kernel_nowait(tgt_ident_t *loc, int64_t device_id,
                               int32_t num_teams, int32_t thread_limit,
                               void *host_id, tgt_kernel_args_t *ka,
                               int32_t ndeps, void *deps, int32_t nnoalias,
                               void *noalias)
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
    tgt_node_t *n = tgt_rec_begin(a->loc, NULL);
    if (what == 0)
        tgt_data_begin(a, NULL);
    else if (what == 1)
        tgt_data_end(a);
    else
        tgt_data_update(a);
    tgt_rec_commit(n, NULL, NULL, 0, NULL, 0, wait);
}

#define DATA_FN(name, op)                                                     \
    void name(tgt_ident_t *loc, int64_t device_id, int32_t n, void **base,   \
              void **begin, int64_t *sizes, int64_t *types, void **names,    \
              void **mappers)                                                 \
    {                                                                         \
        (void)names;                                                          \
        if (!use_device(device_id, loc))                                      \
            return;                                                           \
        tgt_args_t a = {n, base, begin, sizes, types, mappers, loc};          \
        data_record(&a, op, !tgt_ompt_in_deferred_target_task());             \
    }                                                                         \
    void name##_nowait(tgt_ident_t *loc, int64_t device_id, int32_t n,       \
                       void **base, void **begin, int64_t *sizes,             \
                       int64_t *types, void **names, void **mappers,          \
                       int32_t ndeps, void *deps, int32_t nnoalias,           \
                       void *noalias)                                         \
    {                                                                         \
        (void)ndeps;                                                          \
        (void)deps;                                                           \
        (void)nnoalias;                                                       \
        (void)noalias;                                                        \
        (void)names;                                                          \
        if (!use_device(device_id, loc))                                      \
            return;                                                           \
        tgt_args_t a = {n, base, begin, sizes, types, mappers, loc};          \
        data_record(&a, op, false);                                           \
    }

DATA_FN(__tgt_target_data_begin_mapper, 0)
DATA_FN(__tgt_target_data_end_mapper, 1)
DATA_FN(__tgt_target_data_update_mapper, 2)

/* clang names the nowait variants ..._nowait_mapper. */
void __tgt_target_data_begin_nowait_mapper(tgt_ident_t *loc, int64_t d, int32_t n,
    void **b, void **p, int64_t *s, int64_t *t, void **nm, void **mp, int32_t nd,
    void *dl, int32_t nna, void *nal)
{
    __tgt_target_data_begin_mapper_nowait(loc, d, n, b, p, s, t, nm, mp, nd, dl, nna, nal);
}
void __tgt_target_data_end_nowait_mapper(tgt_ident_t *loc, int64_t d, int32_t n,
    void **b, void **p, int64_t *s, int64_t *t, void **nm, void **mp, int32_t nd,
    void *dl, int32_t nna, void *nal)
{
    __tgt_target_data_end_mapper_nowait(loc, d, n, b, p, s, t, nm, mp, nd, dl, nna, nal);
}
void __tgt_target_data_update_nowait_mapper(tgt_ident_t *loc, int64_t d, int32_t n,
    void **b, void **p, int64_t *s, int64_t *t, void **nm, void **mp, int32_t nd,
    void *dl, int32_t nna, void *nal)
{
    __tgt_target_data_update_mapper_nowait(loc, d, n, b, p, s, t, nm, mp, nd, dl, nna, nal);
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
