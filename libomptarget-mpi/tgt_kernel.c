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
/* args: {u32 kernel index, u32 nargs, u64 args[nargs]}.  The device image's
 * kernels take an implicit leading pointer (clang's dyn_ptr, unused on the
 * host target) and then one pointer-sized value per argument. */
int tgt_kernel_msg_index(const void *args, size_t args_size)
{
    uint32_t idx;
    if (args_size < 2 * sizeof(uint32_t))
        return -1;
    memcpy(&idx, args, sizeof(idx));
    return idx < (uint32_t)tgt_rt->nkernels ? (int)idx : -1;
}

ompc_status_t tgt_kernel_run(const void *args, size_t args_size, uint64_t *ns_p,
                             const char **back_p, uint64_t *nback_p)
{
    if (back_p) {
        *back_p = NULL;
        *nback_p = 0;
    }
    uint32_t hdr[2];
    *ns_p = 0;
    int idx = tgt_kernel_msg_index(args, args_size);
    if (idx < 0)
        return OMPC_ERR_INVALID;
    memcpy(hdr, args, sizeof(hdr));
    uint32_t n = hdr[1];
    size_t base = sizeof(hdr) + (size_t)n * sizeof(uint64_t);
    if (args_size < base)
        return OMPC_ERR_INVALID;
    /* Small copies into the kernel's fresh buffers may follow (tgt_dispatch.c,
     * inline_writes): {u64 count}, then {u64 address, u64 length, bytes
     * padded to 8} each.  The head committed their pages before sending. */
    if (args_size > base) {
        const char *p = (const char *)args + base, *end = (const char *)args + args_size;
        uint64_t count;
        if (end - p < 8)
            return OMPC_ERR_INVALID;
        memcpy(&count, p, 8);
        p += 8;
        for (uint64_t c = 0; c < count; c++) {
            uint64_t h2[2];
            if (end - p < 16)
                return OMPC_ERR_INVALID;
            memcpy(h2, p, sizeof(h2));
            uint64_t padded = tgt_pad8(h2[1]);
            if ((uint64_t)(end - p - 16) < padded)
                return OMPC_ERR_INVALID;
            memcpy((void *)(uintptr_t)h2[0], p + 16, h2[1]);
            p += 16 + padded;
        }
        /* Then, for a direct launch, the copies its reply brings back
         * (tgt_dispatch.c, read_backs): {u64 count}, {u64 address, u64
         * length} each. */
        if (p != end) {
            if (!back_p || end - p < 8)
                return OMPC_ERR_INVALID;
            memcpy(&count, p, 8);
            p += 8;
            if (count > (uint64_t)(end - p) / 16 || (uint64_t)(end - p) != 16 * count)
                return OMPC_ERR_INVALID;
            *back_p = p;
            *nback_p = count;
        }
    }
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
    memcpy(vals + 1, (const char *)args + sizeof(hdr), (size_t)n * sizeof(uint64_t));
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
        ompc_trace_span("kernel", k->name, t0, t1, NULL);
        /* The head learns kernel costs from this (HEFT). */
        *ns_p = t1 - t0;
    }
    free(vals);
    free(types);
    free(ptrs);
    return st;
}

/* Result: {kernel ns}, then the bytes of each read-back padded to 8. */
static ompc_status_t tgt_fn_kernel(ev_exec_info_t *info)
{
    uint64_t ns, nback;
    const char *back;
    ompc_status_t st = tgt_kernel_run(info->args, info->args_size, &ns, &back, &nback);
    if (st != OMPC_OK)
        return st;
    size_t need = sizeof(ns);
    for (uint64_t i = 0; i < nback; i++) {
        uint64_t h2[2];
        memcpy(h2, back + 16 * i, sizeof(h2));
        need += tgt_pad8(h2[1]);
    }
    if (info->result_cap < need)
        return nback ? OMPC_ERR_INVALID : OMPC_OK;
    char *r = info->result;
    memcpy(r, &ns, sizeof(ns));
    r += sizeof(ns);
    for (uint64_t i = 0; i < nback; i++) {
        uint64_t h2[2];
        memcpy(h2, back + 16 * i, sizeof(h2));
        memcpy(r, (const void *)(uintptr_t)h2[0], h2[1]);
        memset(r + h2[1], 0, tgt_pad8(h2[1]) - h2[1]);
        r += tgt_pad8(h2[1]);
    }
    info->result_size = need;
    return OMPC_OK;
}

ompc_status_t tgt_kernel_fn_register(void)
{
    return ev_fn_register(tgt_rt->ev, "tgt.kernel", tgt_fn_kernel, 0,
                          &tgt_rt->fn_kernel);
}
