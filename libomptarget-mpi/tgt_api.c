/* OpenMP device memory routines for the cluster device (device 0). */
#define _GNU_SOURCE
#include "tgt_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int omp_get_num_devices(void)
{
    return tgt_ready() && tgt_rt->offload != TGT_OFFLOAD_DISABLED ? 1 : 0;
}

/* libomp's omp_get_num_devices looks this up in the offloading runtime. */
int __tgt_get_num_devices(void) { return omp_get_num_devices(); }

int omp_get_initial_device(void) { return omp_get_num_devices(); }

int omp_get_device_num(void) { return omp_get_initial_device(); }

static bool is_host(int dev) { return dev == omp_get_initial_device(); }

static bool is_cluster(int dev, const char *fn)
{
    if (dev == 0 && omp_get_num_devices() == 1) {
        /* Not counted (their many returns): parks a call made after the
         * shutdown began on another thread. */
        tgt_call_leave(tgt_call_enter());
        return true;
    }
    if (is_host(dev))
        return false;
    ompc_fatal("%s: device number %d does not exist (ompc exposes the cluster as "
               "device 0, the host is device %d)",
               fn, dev, omp_get_initial_device());
}

void *omp_target_alloc(size_t size, int dev)
{
    if (!is_cluster(dev, "omp_target_alloc"))
        return malloc(size);
    dm_buf_t *b;
    if (size == 0 || dm_alloc(tgt_rt->dm, size, &b) != OMPC_OK)
        return NULL;
    return (void *)(uintptr_t)dm_buf_addr(b);
}

void omp_target_free(void *ptr, int dev)
{
    if (!ptr)
        return;
    if (!is_cluster(dev, "omp_target_free")) {
        free(ptr);
        return;
    }
    tgt_graph_sync_all();
    size_t off = 0;
    dm_buf_t *b = dm_buf_find(tgt_rt->dm, (uintptr_t)ptr, 0, &off);
    if (!b || off != 0)
        ompc_fatal("omp_target_free(%p): not a pointer returned by "
                   "omp_target_alloc on device 0",
                   ptr);
    dm_free(tgt_rt->dm, b);
}

int omp_target_is_present(const void *ptr, int dev)
{
    if (!is_cluster(dev, "omp_target_is_present"))
        return 1;
    return tgt_map_dev_addr(ptr, 0, NULL) != 0;
}

void *omp_get_mapped_ptr(const void *ptr, int dev)
{
    if (!is_cluster(dev, "omp_get_mapped_ptr"))
        return (void *)ptr;
    return (void *)(uintptr_t)tgt_map_dev_addr(ptr, 0, NULL);
}

/* Copy between any two of host and device memory. */
static int copy_any(char *dst, int ddev, const char *src, int sdev, size_t len,
                    const char *fn)
{
    bool dd = is_cluster(ddev, fn), sd = is_cluster(sdev, fn);
    if (len == 0)
        return 0;
    if (!dd && !sd) {
        memmove(dst, src, len);
        return 0;
    }
    /* Device memory routines act at once: recorded target work goes first. */
    tgt_graph_sync_all();
    size_t doff = 0, soff = 0;
    dm_buf_t *db = dd ? dm_buf_find(tgt_rt->dm, (uintptr_t)dst, len, &doff) : NULL;
    dm_buf_t *sb = sd ? dm_buf_find(tgt_rt->dm, (uintptr_t)src, len, &soff) : NULL;
    if ((dd && !db) || (sd && !sb)) {
        ompc_error("%s: device range %p (%zu bytes) is not inside device memory", fn,
                   dd && !db ? (void *)dst : (void *)src, len);
        return -1;
    }
    ompc_status_t st;
    if (dd && sd)
        st = dm_copy(tgt_rt->dm, db, doff, sb, soff, len);
    else if (dd)
        st = dm_write(tgt_rt->dm, db, doff, src, len);
    else
        st = dm_read(tgt_rt->dm, sb, soff, dst, len);
    return st == OMPC_OK ? 0 : -1;
}

int omp_target_memcpy(void *dst, const void *src, size_t length, size_t dst_offset,
                      size_t src_offset, int dst_device, int src_device)
{
    return copy_any((char *)dst + dst_offset, dst_device, (const char *)src + src_offset,
                    src_device, length, "omp_target_memcpy");
}

/* One dimension at a time; the innermost dimension is contiguous. */
static int copy_rect(char *dst, const char *src, size_t elem, int nd, const size_t *vol,
                     const size_t *doffs, const size_t *soffs, const size_t *ddims,
                     const size_t *sdims, int ddev, int sdev)
{
    if (nd == 1)
        return copy_any(dst + doffs[0] * elem, ddev, src + soffs[0] * elem, sdev,
                        vol[0] * elem, "omp_target_memcpy_rect");
    size_t dstride = elem, sstride = elem;
    for (int d = 1; d < nd; d++) {
        dstride *= ddims[d];
        sstride *= sdims[d];
    }
    for (size_t i = 0; i < vol[0]; i++) {
        int r = copy_rect(dst + (doffs[0] + i) * dstride, src + (soffs[0] + i) * sstride,
                          elem, nd - 1, vol + 1, doffs + 1, soffs + 1, ddims + 1,
                          sdims + 1, ddev, sdev);
        if (r)
            return r;
    }
    return 0;
}

int omp_target_memcpy_rect(void *dst, const void *src, size_t element_size, int num_dims,
                           const size_t *volume, const size_t *dst_offsets,
                           const size_t *src_offsets, const size_t *dst_dimensions,
                           const size_t *src_dimensions, int dst_device, int src_device)
{
    /* Both null: the query for the largest supported number of dimensions. */
    if (!dst && !src)
        return 64;
    if (num_dims < 1 || num_dims > 64 || !volume || !dst_offsets || !src_offsets ||
        !dst_dimensions || !src_dimensions)
        return -1;
    return copy_rect(dst, src, element_size, num_dims, volume, dst_offsets, src_offsets,
                     dst_dimensions, src_dimensions, dst_device, src_device);
}

int omp_target_memset(void *ptr, int value, size_t count, int dev)
{
    if (!is_cluster(dev, "omp_target_memset")) {
        memset(ptr, value, count);
        return 0;
    }
    char *tmp = malloc(count ? count : 1);
    if (!tmp)
        return -1;
    memset(tmp, value, count);
    int r = copy_any(ptr, dev, tmp, omp_get_initial_device(), count, "omp_target_memset");
    free(tmp);
    return r;
}

int omp_target_associate_ptr(const void *host_ptr, const void *device_ptr, size_t size,
                             size_t device_offset, int dev)
{
    if (!is_cluster(dev, "omp_target_associate_ptr"))
        return -1;
    uintptr_t daddr = (uintptr_t)device_ptr + device_offset;
    size_t off = 0;
    dm_buf_t *b = dm_buf_find(tgt_rt->dm, daddr, size, &off);
    if (!b)
        return -1;
    return tgt_map_associate(host_ptr, size, b, off) == OMPC_OK ? 0 : -1;
}

int omp_target_disassociate_ptr(const void *host_ptr, int dev)
{
    if (!is_cluster(dev, "omp_target_disassociate_ptr"))
        return -1;
    return tgt_map_disassociate(host_ptr) == OMPC_OK ? 0 : -1;
}

/* ------------------------------------------------- asynchronous copies */
/* The _async routines may run the copy at once, provided the dependences
 * in their depend objects are satisfied first: libomp's wait on those
 * dependences (as `taskwait depend`) gives that order. */
typedef struct kmp_depend_info kmp_depend_info_t;
void __kmpc_omp_wait_deps(void *loc, int gtid, int ndeps, kmp_depend_info_t *deps,
                          int nnoalias, kmp_depend_info_t *noalias) __attribute__((weak));

/* omp_depend_t is a pointer to libomp's dependence record. */
static void wait_depobjs(int n, void **depobjs)
{
    if (n <= 0 || !depobjs || !__kmpc_omp_wait_deps || !__kmpc_global_thread_num)
        return;
    int gtid = __kmpc_global_thread_num(NULL);
    for (int i = 0; i < n; i++)
        __kmpc_omp_wait_deps(NULL, gtid, 1, (kmp_depend_info_t *)depobjs[i], 0, NULL);
}

int omp_target_memcpy_async(void *dst, const void *src, size_t length, size_t dst_offset,
                            size_t src_offset, int dst_device, int src_device,
                            int depobj_count, void **depobj_list)
{
    wait_depobjs(depobj_count, depobj_list);
    return omp_target_memcpy(dst, src, length, dst_offset, src_offset, dst_device,
                             src_device);
}

int omp_target_memcpy_rect_async(void *dst, const void *src, size_t element_size,
                                 int num_dims, const size_t *volume,
                                 const size_t *dst_offsets, const size_t *src_offsets,
                                 const size_t *dst_dimensions,
                                 const size_t *src_dimensions, int dst_device,
                                 int src_device, int depobj_count, void **depobj_list)
{
    wait_depobjs(depobj_count, depobj_list);
    return omp_target_memcpy_rect(dst, src, element_size, num_dims, volume, dst_offsets,
                                  src_offsets, dst_dimensions, src_dimensions, dst_device,
                                  src_device);
}

void *omp_target_memset_async(void *ptr, int value, size_t count, int dev,
                              int depobj_count, void **depobj_list)
{
    wait_depobjs(depobj_count, depobj_list);
    omp_target_memset(ptr, value, count, dev);
    return ptr;
}

/* libomp's allocators look these up for target memory spaces. */
void *llvm_omp_target_alloc_device(size_t size, int dev)
{
    return omp_target_alloc(size, dev);
}
void *llvm_omp_target_alloc_host(size_t size, int dev)
{
    (void)dev;
    return malloc(size);
}
void *llvm_omp_target_alloc_shared(size_t size, int dev)
{
    (void)dev;
    return malloc(size);
}
void llvm_omp_target_free_device(void *ptr, int dev) { omp_target_free(ptr, dev); }
void llvm_omp_target_free_host(void *ptr, int dev)
{
    (void)dev;
    free(ptr);
}
void llvm_omp_target_free_shared(void *ptr, int dev)
{
    (void)dev;
    free(ptr);
}

/* ---------------------------------------------------------- diagnostics */
void ompx_dump_mapping_tables(void)
{
    if (tgt_ready())
        tgt_map_dump();
}

int __tgt_print_device_info(int64_t dev)
{
    if (dev != 0 || !tgt_ready())
        return 0;
    printf("ompc device 0: a cluster of %d executor rank(s) (MPI ranks %s), "
           "%d kernel(s) registered\n",
           dm_num_executors(tgt_rt->dm), tgt_rt->size > 1 ? "1.." : "0",
           tgt_rt->nkernels);
    return 1;
}

/* The interop construct has no meaning for a cluster of CPUs. */
#define TGT_NO_INTEROP(name)                                                             \
    void name(tgt_ident_t *loc, int32_t gtid, void **interop, int32_t a, int32_t b,      \
              int32_t c, void *d, int32_t e)                                             \
    {                                                                                    \
        (void)gtid;                                                                      \
        (void)interop;                                                                   \
        (void)a;                                                                         \
        (void)b;                                                                         \
        (void)c;                                                                         \
        (void)d;                                                                         \
        (void)e;                                                                         \
        TGT_USER_ERROR(loc, "the interop construct is not supported by ompc");           \
    }
TGT_NO_INTEROP(__tgt_interop_init)
TGT_NO_INTEROP(__tgt_interop_use)
TGT_NO_INTEROP(__tgt_interop_destroy)
