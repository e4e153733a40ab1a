/* Executors: running a kernel launch message (the kernel's arguments
 * through libffi, the copies that travel with it, the reply); the head
 * builds and sends them (tgt_launch.c, tgt_dispatch.c). */
#define _GNU_SOURCE
#include "tgt_graph.h"
#include "ompc_trace.h"

#include <ffi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------- executors */
_Thread_local bool tgt_kernel_faulted;
_Thread_local bool tgt_kernel_fault_wrote;
_Thread_local uint64_t tgt_kernel_cpu_ns = UINT64_MAX;
_Thread_local uint64_t tgt_kernel_seq;
void (*tgt_kernel_before)(void);

/* OMPC_INFO's name of the kernel behind a page fault: the last one started
 * on this rank (the fault service cannot tell which of several running
 * kernels' threads faulted). */
static void kernel_namer(char *buf, size_t cap)
{
    const char *name = atomic_load(&tgt_kernel_rec->running);
    char where[160];
    tgt_kernel_where(name, where, sizeof(where));
    snprintf(buf, cap, "%s%s", name ? name : "?", where);
}
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
    tgt_kernel_cpu_ns = UINT64_MAX;
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
        dm_exec_store((void *)(uintptr_t)s.addr, bytes, s.len);
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
            fprintf(stderr, "[ompc info] r%d run %s (%u args)\n", tgt_rt->rank, k->name,
                    n);
        /* The handler thread's own ICV: parallel regions in the kernel use
         * this executor's cores. */
        if (tgt_rt->kernel_threads > 0 && omp_set_num_threads)
            omp_set_num_threads(tgt_rt->kernel_threads);
        static _Thread_local bool named;
        if (!named && ompc_trace_on()) {
            ompc_trace_thread_name("handler");
            named = true;
        }
        /* OMPC_STATS only: a thread's CPU clock is a system call, whose
         * cost per kernel shows in the launch rate of empty kernels. */
        struct timespec c0, c1;
        if (tgt_rt->stats)
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        uint64_t t0 = ompc_now_ns();
        tgt_kernel_rec_start(k->name);
        uint64_t pages = dm_pages_task_begin(tgt_rt->dm, tgt_kernel_seq);
        if (tgt_kernel_before)
            tgt_kernel_before(); /* a split share twins its buffers */
        tgt_in_kernel = true;
        ffi_call(&cif, FFI_FN(k->fn), NULL, ptrs);
        tgt_in_kernel = false;
        /* Bytes the kernel wrote in pages it got through faults go back
         * before anyone hears that it is done. */
        st = dm_pages_task_end(tgt_rt->dm, pages, tgt_kernel_seq, &tgt_kernel_faulted,
                               &tgt_kernel_fault_wrote);
        if (st != OMPC_OK)
            ompc_error("rank %d: kernel %s wrote device pages that cannot be "
                       "written back: %s",
                       tgt_rt->rank, k->name, ompc_status_str(st));
        tgt_kernel_rec_end();
        uint64_t t1 = ompc_now_ns();
        ompc_trace_span("kernel", k->name, t0, t1, NULL, 0);
        /* The head learns kernel costs from this (HEFT). */
        *ns_p = t1 - t0;
        if (tgt_rt->stats) {
            /* The CPU the kernel took on this thread; the rest of the
             * rank's CPU is the runtime's (or the kernel's own teams'). */
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
            int64_t cpu_ns = (int64_t)(c1.tv_sec - c0.tv_sec) * 1000000000 +
                             (c1.tv_nsec - c0.tv_nsec);
            tgt_kernel_cpu_ns = cpu_ns > 0 ? (uint64_t)cpu_ns : 0;
            atomic_fetch_add_explicit(&tgt_rt->kernel_ns, t1 - t0, memory_order_relaxed);
            atomic_fetch_add_explicit(&tgt_rt->kernel_cpu_ns, tgt_kernel_cpu_ns,
                                      memory_order_relaxed);
            atomic_fetch_add_explicit(&tgt_rt->kernels_here, 1, memory_order_relaxed);
        }
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
    dm_pages_set_namer(tgt_rt->dm, kernel_namer);
    return ev_fn_register(tgt_rt->ev, "tgt.kernel", tgt_fn_kernel, 0, &tgt_rt->fn_kernel);
}
