/* The OMPT tool inside the runtime: libomp finds ompt_start_tool in this
 * library and reports every target task's depend list (the task body later
 * calls __tgt_* with no dependences, so OMPT is the only way to see them).
 * The list hangs off the task's ompt_data_t until the task completes.
 * Its callbacks drive the graph's flush points and task reductions; what
 * they learn about the current task is read through tgt_ompt_task.c. */
#define _GNU_SOURCE
#include "tgt_graph.h"
#include "tgt_ompt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ThreadSanitizer builds: libomp is not instrumented, so the order it
 * imposes between tasks (dependences, taskwait, barriers) is invisible to
 * TSan and data handed between tasks looks racy.  Like LLVM's Archer tool,
 * we annotate those edges from the OMPT callbacks we receive anyway. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TGT_TSAN 1
#endif
#endif
#ifdef TGT_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char tsan_task_done; /* released by every completed task */
#define TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define TSAN_ACQUIRE(p) ((void)(p))
#define TSAN_RELEASE(p) ((void)(p))
#endif

static struct tgt_task_deps kernel_mark = {.magic = TGT_KERNEL_MAGIC};
/* The mark of parallel regions outside kernels.  libomp hands parallel_begin
 * a stack copy of the region's data and the implicit tasks the team's copy,
 * so the value, not the address, links them (and is TSan's sync object). */
static struct tgt_task_deps host_mark = {.magic = TGT_KERNEL_MAGIC + 1};

/* The last task this thread created: libomp reports its dependences right
 * after creating it, on the same thread. */
static _Thread_local ompt_data_t *last_created;
static _Thread_local int last_flags;

static void on_task_create(ompt_data_t *encountering, const ompt_frame_t *frame,
                           ompt_data_t *new_task, int flags, int has_deps,
                           const void *codeptr)
{
    (void)encountering;
    (void)frame;
    (void)has_deps;
    (void)codeptr;
    if (new_task)
        new_task->ptr = NULL;
    /* What the creator did before creating the task happens before the
     * task runs (libomp's queues are invisible to TSan). */
    if (new_task)
        TSAN_RELEASE(new_task);
    last_created = new_task;
    last_flags = flags;
}

static uint8_t dep_type(const ompt_dependence_t *d)
{
    switch ((int)d->dependence_type) {
    case ompt_dependence_type_in: return TGT_DEP_IN;
    case ompt_dependence_type_inoutset: return TGT_DEP_INOUTSET;
    case ompt_dependence_type_out_all_memory:
    case ompt_dependence_type_inout_all_memory: return TGT_DEP_ALL;
    default: return TGT_DEP_OUT;
    }
}

static void on_dependences(ompt_data_t *task, const ompt_dependence_t *deps, int n)
{
    if (!task || n <= 0)
        return;
    tgt_task_deps_t *d = malloc(sizeof(*d) + (size_t)n * sizeof(tgt_dep_t));
    if (!d)
        return; /* without the list the task is treated conservatively */
    d->magic = TGT_DEPS_MAGIC;
    d->n = n;
    d->target = task == last_created && (last_flags & ompt_task_target);
    d->taskwait = task == last_created && (last_flags & ompt_task_taskwait);
    for (int i = 0; i < n; i++) {
        d->deps[i].addr = (uintptr_t)deps[i].variable.ptr;
        d->deps[i].in_only = deps[i].dependence_type == ompt_dependence_type_in;
        d->deps[i].type = dep_type(&deps[i]);
        /* libomp passes omp_all_memory as the largest address */
        if (d->deps[i].addr == UINTPTR_MAX)
            d->deps[i].type = TGT_DEP_ALL;
    }
    free(task->ptr);
    task->ptr = d;
}

static void on_task_schedule(ompt_data_t *prior, ompt_task_status_t status,
                             ompt_data_t *next)
{
    bool done = status == ompt_task_complete || status == ompt_task_late_fulfill ||
                status == ompt_taskwait_complete;
    if (prior && done) {
        tgt_task_deps_t *d = prior->ptr;
        /* `taskwait depend(...)`: libomp saw the recorded target tasks
         * complete; they run now. */
        if (d && d->magic == TGT_DEPS_MAGIC && d->taskwait && !tgt_ompt_in_kernel() &&
            tgt_graph_active())
            tgt_graph_host_task(d->deps, d->n);
        if (d && d->magic == TGT_DEPS_MAGIC) {
            for (int i = 0; i < d->n; i++)
                TSAN_RELEASE(d->deps[i].addr);
            d->magic = 0;
            free(d);
            prior->ptr = NULL;
        }
#ifdef TGT_TSAN
        TSAN_RELEASE(&tsan_task_done);
#endif
    }
    if (next)
        TSAN_ACQUIRE(next);
    if (next && next->ptr) {
        tgt_task_deps_t *d = next->ptr;
        if (d->magic == TGT_DEPS_MAGIC) {
            /* A host task that depends on target work: that work runs
             * first (libomp saw it complete when it was recorded). */
            if (!tgt_ompt_in_kernel() && tgt_graph_active()) {
                if (d->target)
                    tgt_graph_target_task(d->deps, d->n);
                else
                    tgt_graph_host_task(d->deps, d->n);
            }
            for (int i = 0; i < d->n; i++)
                TSAN_ACQUIRE(d->deps[i].addr);
        }
    }
}

/* The end of a taskwait, taskgroup or barrier is a flush point: every
 * target task recorded before it has run when it returns. */
static void on_sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint,
                           ompt_data_t *parallel, ompt_data_t *task, const void *codeptr)
{
    (void)task;
    (void)codeptr;
    if (kind == ompt_sync_region_taskgroup) {
        if (endpoint == ompt_scope_begin)
            tgt_taskred_group_begin();
        else
            tgt_taskred_group_end();
    }
#ifdef TGT_TSAN
    /* What a thread did before a barrier happens before what every thread
     * of its team does after it.  The team's parallel data is the sync
     * object (a reused team address only adds order, never removes it). */
    void *team = parallel ? (void *)parallel : (void *)&tsan_task_done;
    if (endpoint == ompt_scope_begin)
        TSAN_RELEASE(team);
#else
    (void)parallel;
#endif
    if (endpoint != ompt_scope_end)
        return;
    if (!tgt_ompt_in_kernel() && tgt_graph_active())
        tgt_graph_sync_all();
#ifdef TGT_TSAN
    TSAN_ACQUIRE(team);
    TSAN_ACQUIRE(&tsan_task_done);
#endif
}

/* A taskgroup's wait ends after its last task completed and before libomp
 * folds its task reductions: target tasks that joined one contribute now. */
static void on_sync_region_wait(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint,
                                ompt_data_t *parallel, ompt_data_t *task,
                                const void *codeptr)
{
    (void)parallel;
    (void)task;
    (void)codeptr;
    if (kind == ompt_sync_region_taskgroup && endpoint == ompt_scope_end &&
        !tgt_ompt_in_kernel())
        tgt_taskred_group_wait_end();
}

static void on_parallel_begin(ompt_data_t *task, const ompt_frame_t *frame,
                              ompt_data_t *parallel, unsigned int requested, int flags,
                              const void *codeptr)
{
    (void)task;
    (void)frame;
    (void)requested;
    (void)flags;
    (void)codeptr;
    if (parallel) {
        parallel->ptr = tgt_ompt_in_kernel() ? &kernel_mark : &host_mark;
        /* What the encountering thread did happens before the region's
         * threads start on it (libomp's thread pool is invisible to TSan). */
        TSAN_RELEASE(parallel->ptr);
    }
}

/* Threads of a kernel's parallel region are inside the kernel too; the
 * join of a parallel region follows the end of its implicit tasks. */
static void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                             ompt_data_t *task, unsigned int team_size,
                             unsigned int thread_num, int flags)
{
    (void)team_size;
    (void)thread_num;
    (void)flags;
    if (endpoint == ompt_scope_begin) {
        if (parallel && (parallel->ptr == &kernel_mark || parallel->ptr == &host_mark))
            TSAN_ACQUIRE(parallel->ptr);
        bool k = parallel && parallel->ptr == &kernel_mark;
        if (task)
            task->ptr = k ? &kernel_mark : NULL;
        if (k)
            tgt_kernel_par_depth++;
        return;
    }
    if (task && task->ptr == &kernel_mark) {
        tgt_kernel_par_depth--;
        task->ptr = NULL;
    }
#ifdef TGT_TSAN
    TSAN_RELEASE(&tsan_task_done);
#endif
}

#ifdef TGT_TSAN
static void on_parallel_end(ompt_data_t *parallel, ompt_data_t *task, int flags,
                            const void *codeptr)
{
    (void)parallel;
    (void)task;
    (void)flags;
    (void)codeptr;
    TSAN_ACQUIRE(&tsan_task_done);
}
#endif

static int tool_initialize(ompt_function_lookup_t lookup, int initial_device,
                           ompt_data_t *tool_data)
{
    (void)initial_device;
    (void)tool_data;
    ompt_set_callback_t set_callback = (ompt_set_callback_t)lookup("ompt_set_callback");
    ompt_get_task_info_t get_task_info = (ompt_get_task_info_t)lookup(
        "ompt_get_task_info");
    if (!set_callback || !get_task_info)
        return 0;
    tgt_ompt_task_init(get_task_info);
    set_callback(ompt_callback_task_create, (ompt_callback_t)on_task_create);
    set_callback(ompt_callback_dependences, (ompt_callback_t)on_dependences);
    set_callback(ompt_callback_task_schedule, (ompt_callback_t)on_task_schedule);
    set_callback(ompt_callback_sync_region, (ompt_callback_t)on_sync_region);
    set_callback(ompt_callback_sync_region_wait, (ompt_callback_t)on_sync_region_wait);
    set_callback(ompt_callback_parallel_begin, (ompt_callback_t)on_parallel_begin);
    set_callback(ompt_callback_implicit_task, (ompt_callback_t)on_implicit_task);
#ifdef TGT_TSAN
    set_callback(ompt_callback_parallel_end, (ompt_callback_t)on_parallel_end);
#endif
    return 1;
}

static void tool_finalize(ompt_data_t *tool_data) { (void)tool_data; }

/* libomp finds a tool by calling ompt_start_tool, which it defines itself
 * (weak) and binds to its own copy; that copy looks for the next definition
 * after libomp.  ompcc links this library ahead of libomp (so that its
 * stand-ins for libomp's entry points win), where that search misses it.
 * OMP_TOOL_LIBRARIES, which libomp reads at its first construct, names it
 * instead; a tool the user named still loads after it. */
__attribute__((constructor)) static void ompt_make_discoverable(void)
{
    Dl_info self;
    if (!dladdr((void *)ompt_make_discoverable, &self) || !self.dli_fname)
        return;
    const char *user = getenv("OMP_TOOL_LIBRARIES");
    if (user && strstr(user, self.dli_fname))
        return;
    size_t len = strlen(self.dli_fname) + (user ? strlen(user) + 1 : 0) + 1;
    char *v = malloc(len);
    if (!v)
        return;
    snprintf(v, len, "%s%s%s", self.dli_fname, user && *user ? ":" : "",
             user ? user : "");
    setenv("OMP_TOOL_LIBRARIES", v, 1);
    free(v);
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                          const char *runtime_version)
{
    (void)omp_version;
    (void)runtime_version;
    static ompt_start_tool_result_t result = {tool_initialize, tool_finalize, {0}};
    return &result;
}
