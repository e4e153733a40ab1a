/* Kernel launches and the data-mapping entry points clang-19 emits. */
#define _GNU_SOURCE
#include "tgt_internal.h"

#include <ffi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* From libomp, which every OpenMP program loads; weak so that the library
 * links on its own. */
int omp_get_default_device(void) __attribute__((weak));
void omp_set_num_threads(int n) __attribute__((weak));

/* ---------------------------------------------------------- executors */
/* args: {u32 kernel index, u32 nargs, u64 args[nargs]}.  The device image's
 * kernels take an implicit leading pointer (clang's dyn_ptr, unused on the
 * host target) and then one pointer-sized value per argument. */
static ompc_status_t tgt_fn_kernel(ev_exec_info_t *info)
{
    uint32_t hdr[2];
    if (info->args_size < sizeof(hdr))
        return OMPC_ERR_INVALID;
    memcpy(hdr, info->args, sizeof(hdr));
    uint32_t idx = hdr[0], n = hdr[1];
    if (idx >= (uint32_t)tgt_rt->nkernels ||
        info->args_size != sizeof(hdr) + (size_t)n * sizeof(uint64_t))
        return OMPC_ERR_INVALID;
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
    memcpy(vals + 1, (const char *)info->args + sizeof(hdr), (size_t)n * sizeof(uint64_t));
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
        ffi_call(&cif, FFI_FN(k->fn), NULL, ptrs);
    }
    free(vals);
    free(types);
    free(ptrs);
    return st;
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

/* Choose the executor (until the HEFT scheduler replaces this).  With
 * OMPC_SCHEDULER=roundrobin, the next one in turn.  Otherwise the one
 * that already holds the most bytes of the region's buffers; among equals
 * the one with the fewest kernels in flight, and among those the one used
 * last, whose threads are still awake (an idle executor backs off and
 * answers later). */
static int place(const tgt_mapped_t *m)
{
    int ne = dm_num_executors(tgt_rt->dm);
    if (ompc_config_get()->scheduler == OMPC_SCHED_ROUNDROBIN)
        return (int)(atomic_fetch_add(&tgt_rt->rr, 1) % (unsigned)ne);
    int last = atomic_load(&tgt_rt->last_exec);
    int best = -1;
    size_t best_bytes = 0;
    int best_load = 0;
    for (int k = 0; k < ne; k++) {
        int e = (last + k) % ne; /* `last` first: it wins ties */
        size_t b = m->nbufs ? dm_bytes_valid_on(tgt_rt->dm, e, m->bufs, m->nbufs) : 0;
        int load = atomic_load(&tgt_rt->inflight[e]);
        if (best < 0 || b > best_bytes || (b == best_bytes && load < best_load)) {
            best = e;
            best_bytes = b;
            best_load = load;
        }
    }
    return best;
}

/* The buffers a kernel may write, into wr (returns how many).  The rule
 * (README, "Which data a kernel writes"): a buffer is read-only for a target
 * task only if the task's depend list names it, and names it only with
 * depend(in:).  Everything else the kernel can reach counts as written. */
static size_t tgt_written_bufs(const tgt_mapped_t *m, dm_buf_t **wr)
{
    int ndeps;
    const tgt_dep_t *deps;
    tgt_ompt_current_deps(&ndeps, &deps);
    /* Per buffer of the kernel: named by an in dependence, by another one. */
    bool *read = calloc(m->nbufs ? m->nbufs : 1, 2 * sizeof(bool));
    if (!read)
        ompc_fatal("out of memory classifying kernel buffers");
    bool *write = read + m->nbufs;
    for (int d = 0; d < ndeps; d++) {
        dm_buf_t *b = NULL;
        tgt_map_dev_addr((const void *)deps[d].addr, 1, &b);
        for (size_t i = 0; b && i < m->nbufs; i++)
            if (m->bufs[i] == b) {
                if (deps[d].in_only)
                    read[i] = true;
                else
                    write[i] = true;
            }
    }
    size_t n = 0;
    for (size_t i = 0; i < m->nbufs; i++)
        if (write[i] || !read[i])
            wr[n++] = m->bufs[i];
    free(read);
    return n;
}

/* One kernel launch.  Synchronous targets run prepare, start and finish
 * in a row; a `target nowait` inside a task with a task team returns after
 * prepare/start and leaves the launch in libomp's async handle, which libomp
 * polls through __tgt_target_nowait_query until finish has run.  The
 * argument arrays are copied: they live on the task's stack frame, which is
 * gone by then. */
typedef enum { LAUNCH_PIN, LAUNCH_RUNNING } launch_stage_t;

typedef struct tgt_launch {
    launch_stage_t stage;
    const tgt_ident_t *loc;
    const tgt_kernel_t *k;
    tgt_args_t a;
    void **arrays;           /* storage behind a's arrays */
    tgt_mapped_t m;
    dm_buf_t **wr;
    size_t nwr;
    int exec;
    ev_handle_t *h;
    char *msg;
    size_t msg_len;
    int queries;             /* how often libomp asked */
} tgt_launch_t;

/* libomp entry points for asynchronous target tasks (weak: see above). */
int __kmpc_global_thread_num(void *loc) __attribute__((weak));
int __kmpc_omp_has_task_team(int gtid) __attribute__((weak));
void **__kmpc_omp_get_target_async_handle_ptr(int gtid) __attribute__((weak));

static void launch_free(tgt_launch_t *L)
{
    free(L->wr);
    free(L->msg);
    free(L->arrays);
    free(L);
}

/* Copy clang's argument arrays (n entries each) into memory the launch owns. */
static void launch_copy_args(tgt_launch_t *L, const tgt_kernel_args_t *ka)
{
    size_t n = ka->num_args;
    L->arrays = malloc((n ? n : 1) * 5 * sizeof(void *));
    if (!L->arrays)
        ompc_fatal("out of memory launching a kernel");
    void **base = L->arrays, **begin = base + n, **mappers = begin + n;
    int64_t *sizes = (int64_t *)(mappers + n), *types = sizes + n;
    if (n) {
        memcpy(base, ka->arg_base_ptrs, n * sizeof(void *));
        memcpy(begin, ka->arg_ptrs, n * sizeof(void *));
        memcpy(sizes, ka->arg_sizes, n * sizeof(int64_t));
        memcpy(types, ka->arg_types, n * sizeof(int64_t));
    }
    if (n && ka->arg_mappers)
        memcpy(mappers, ka->arg_mappers, n * sizeof(void *));
    else
        memset(mappers, 0, n * sizeof(void *));
    L->a = (tgt_args_t){(int32_t)n, base, begin, sizes, types, mappers, L->loc};
}

/* Map the arguments and decide which buffers the kernel writes. */
static void launch_prepare(tgt_launch_t *L)
{
    tgt_data_begin(&L->a, &L->m);
    /* A kernel may touch any declare target variable. */
    for (int g = 0; g < tgt_rt->nglobals; g++)
        tgt_mapped_add(&L->m, tgt_rt->globals[g].buf);
    L->wr = malloc((L->m.nbufs ? L->m.nbufs : 1) * sizeof(*L->wr));
    if (!L->wr)
        ompc_fatal("out of memory launching a kernel");
    L->nwr = tgt_written_bufs(&L->m, L->wr);
    size_t len = 2 * sizeof(uint32_t) + L->m.nkargs * sizeof(uint64_t);
    L->msg = malloc(len);
    if (!L->msg)
        ompc_fatal("out of memory launching a kernel");
    uint32_t hdr[2] = {(uint32_t)(L->k - tgt_rt->kernels), (uint32_t)L->m.nkargs};
    memcpy(L->msg, hdr, sizeof(hdr));
    if (L->m.nkargs)
        memcpy(L->msg + sizeof(hdr), L->m.kargs, L->m.nkargs * sizeof(uint64_t));
    L->msg_len = len;
}

/* Pin the written buffers to an executor: kernels that may write the same
 * buffer run on the same executor.  False if that would mean waiting. */
static bool launch_try_pin(tgt_launch_t *L, bool may_wait)
{
    int exec = dm_pin_executor(tgt_rt->dm, L->wr, L->nwr);
    if (exec < 0)
        exec = place(&L->m);
    if (may_wait)
        dm_pin(tgt_rt->dm, exec, L->wr, L->nwr);
    else if (!dm_try_pin(tgt_rt->dm, exec, L->wr, L->nwr))
        return false;
    L->exec = exec;
    atomic_fetch_add(&tgt_rt->inflight[exec], 1);
    atomic_store(&tgt_rt->last_exec, exec);
    return true;
}

/* Bring the data to the executor and send the kernel. */
static void launch_start(tgt_launch_t *L)
{
    ompc_status_t st = dm_acquire(tgt_rt->dm, L->exec, L->m.bufs, L->m.nbufs);
    if (st != OMPC_OK)
        TGT_USER_ERROR(L->loc, "moving the region's data to executor %d failed: %s",
                       L->exec, ompc_status_str(st));
    st = ev_execute(tgt_rt->ev, dm_executor_rank(tgt_rt->dm, L->exec),
                    tgt_rt->fn_kernel, L->msg, L->msg_len, NULL, 0, &L->h);
    if (st != OMPC_OK)
        TGT_USER_ERROR(L->loc, "cannot launch kernel %s: %s", L->k->name,
                       ompc_status_str(st));
    L->stage = LAUNCH_RUNNING;
}

/* The kernel is done: record where the data now lives, unmap. */
static void launch_finish(tgt_launch_t *L, ompc_status_t st)
{
    ev_handle_release(L->h);
    if (st != OMPC_OK)
        TGT_USER_ERROR(L->loc, "kernel %s failed on executor %d: %s", L->k->name,
                       L->exec, ompc_status_str(st));
    atomic_fetch_add(&tgt_rt->kernels_run, 1);
    atomic_fetch_sub(&tgt_rt->inflight[L->exec], 1);
    dm_written(tgt_rt->dm, L->exec, L->wr, L->nwr);
    dm_unpin(tgt_rt->dm, L->wr, L->nwr);
    tgt_mapped_free(&L->m);
    tgt_data_end(&L->a);
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
    tgt_launch_t *L = calloc(1, sizeof(*L));
    if (!L)
        ompc_fatal("out of memory launching a kernel");
    L->loc = loc;
    L->k = k;
    launch_copy_args(L, ka);
    launch_prepare(L);

    void **handle = NULL;
    if ((ka->flags & TGT_KFLAG_NOWAIT) && __kmpc_global_thread_num &&
        __kmpc_omp_has_task_team && __kmpc_omp_get_target_async_handle_ptr) {
        int gtid = __kmpc_global_thread_num(NULL);
        if (gtid >= 0 && __kmpc_omp_has_task_team(gtid))
            handle = __kmpc_omp_get_target_async_handle_ptr(gtid);
    }
    if (handle) {
        /* Asynchronous: no thread waits for the kernel.  Pinning must not
         * block here either (the kernels we would wait for complete through
         * the same hidden helper threads); retried from the query. */
        L->stage = LAUNCH_PIN;
        if (launch_try_pin(L, false))
            launch_start(L);
        *handle = L;
        return 0;
    }
    launch_try_pin(L, true);
    launch_start(L);
    launch_finish(L, ev_wait(L->h));
    launch_free(L);
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

/* libomp asks whether the work behind a nowait target task is done; *handle
 * becomes NULL when it is.  A short wait here keeps the hidden helper
 * threads from spinning on re-queued tasks. */
void __tgt_target_nowait_query(void **handle)
{
    if (!handle || !*handle)
        return;
    tgt_launch_t *L = *handle;
    if (L->stage == LAUNCH_PIN) {
        if (!launch_try_pin(L, false)) {
            struct timespec ts = {0, 50 * 1000};
            nanosleep(&ts, NULL);
            return;
        }
        launch_start(L);
    }
    /* The first queries only look (the helper thread may have launches to
     * start); later ones sleep, longer and longer, and leave progress to
     * the gate thread, so that many helpers polling many long kernels do
     * not spin. */
    ompc_status_t st;
    int q = L->queries++;
    if (q < 4)
        st = ev_test(L->h);
    else
        st = ev_wait_sleeping(L->h, (uint64_t)50000 << (q - 4 < 5 ? q - 4 : 5));
    if (st == OMPC_INPROGRESS)
        return;
    launch_finish(L, st);
    launch_free(L);
    *handle = NULL;
}

/* ------------------------------------------------- data entry points */
#define DATA_FN(name, op)                                                     \
    void name(tgt_ident_t *loc, int64_t device_id, int32_t n, void **base,   \
              void **begin, int64_t *sizes, int64_t *types, void **names,    \
              void **mappers)                                                 \
    {                                                                         \
        (void)names;                                                          \
        if (!use_device(device_id, loc))                                      \
            return;                                                           \
        tgt_args_t a = {n, base, begin, sizes, types, mappers, loc};          \
        op;                                                                   \
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
        name(loc, device_id, n, base, begin, sizes, types, names, mappers);   \
    }

DATA_FN(__tgt_target_data_begin_mapper, tgt_data_begin(&a, NULL))
DATA_FN(__tgt_target_data_end_mapper, tgt_data_end(&a))
DATA_FN(__tgt_target_data_update_mapper, tgt_data_update(&a))

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
