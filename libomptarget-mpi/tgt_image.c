/* The program's offload entries and device image: reading the entries
 * (kernels, declare target variables, indirect functions, requirements)
 * and refusing what this runtime does not handle, finding a kernel by its
 * host id, loading the device image on executors, and mapping declare
 * target variables on the head. */
#define _GNU_SOURCE
#include "tgt_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int kernel_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const tgt_kernel_t *)a)->host_id;
    uintptr_t y = (uintptr_t)((const tgt_kernel_t *)b)->host_id;
    return x < y ? -1 : x > y;
}

const tgt_kernel_t *tgt_kernel_find(const void *host_id)
{
    tgt_kernel_t key = {.host_id = host_id};
    return bsearch(&key, tgt_rt->kernels, (size_t)tgt_rt->nkernels, sizeof(tgt_kernel_t),
                   kernel_cmp);
}

/* ------------------------------------------------------ offload entries */

/* What the program may not do here, found before MPI is up: reported by
 * rank 0 alone once it is (report_refusal), so that one message explains
 * it.  The first refusal wins. */
static char refusal[1024];

static void refuse_later(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void refuse_later(const char *fmt, ...)
{
    if (refusal[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(refusal, sizeof(refusal), fmt, ap);
    va_end(ap);
}

/* Collective, after check_same_build: every rank read the same entries. */
void tgt_image_report_refusal(void)
{
    if (!refusal[0])
        return;
    if (tgt_rt->rank != 0)
        for (;;)
            pause(); /* rank 0 reports and aborts the job */
    ompc_fatal_user("%s", refusal);
}

const char *tgt_image_refusal(void) { return refusal[0] ? refusal : NULL; }

/* Requirements, from REGISTER_REQUIRES entries (one per translation unit
 * with a requires directive clang passes on) and __tgt_register_requires
 * (objects built by older compilers): one rule for both.  Clang 19 passes
 * on only unified_shared_memory (data 0x8); unified_address,
 * dynamic_allocators and atomic_default_mem_order stay in the compiler,
 * and it rejects reverse_offload. */
static int64_t requires_seen;

int64_t tgt_image_requires(void) { return requires_seen; }

void tgt_image_requires_note(int64_t flags, const char *where)
{
    requires_seen |= flags;
    int64_t known = TGT_REQ_NONE | TGT_REQ_REVERSE_OFFLOAD | TGT_REQ_UNIFIED_ADDRESS |
                    TGT_REQ_UNIFIED_SHARED_MEMORY | TGT_REQ_DYNAMIC_ALLOCATORS;
    if (flags & TGT_REQ_UNIFIED_SHARED_MEMORY)
        refuse_later("`#pragma omp requires unified_shared_memory` (%s) cannot be "
                     "honoured: an ompc device is a cluster of separate processes, "
                     "usually on separate nodes, and a kernel on a worker cannot "
                     "reach the host's memory through a host pointer that no map "
                     "clause names. Remove the directive and map the data the "
                     "target regions use (map clauses, target data)",
                     where);
    else if (flags & TGT_REQ_REVERSE_OFFLOAD)
        refuse_later("`#pragma omp requires reverse_offload` (%s) cannot be "
                     "honoured: ompc does not run `target device(ancestor: 1)` "
                     "regions (a worker cannot hand a region back to the head "
                     "while its kernel runs). Remove the directive and the "
                     "ancestor regions",
                     where);
    else if (flags & ~known)
        refuse_later("requirement flags %#llx (%s) include ones this runtime "
                     "does not know (LLVM 19 defines up to %#llx): the program "
                     "was built by another compiler than clang 19",
                     (unsigned long long)flags, where, (unsigned long long)known);
}

static void read_entry_requires(const tgt_offload_entry_t *e)
{
    char file[256], where[300];
    if (tgt_elf_symbol_file(e->name, file, sizeof(file)))
        snprintf(where, sizeof(where), "in %s", file);
    else
        snprintf(where, sizeof(where),
                 "source file unknown: no symbol table of "
                 "the executable names it");
    tgt_image_requires_note(e->data, where);
}

static const char *entry_name(const tgt_offload_entry_t *e)
{
    return e->name && e->name[0] ? e->name : "(no name)";
}

static void refuse_entry(const tgt_offload_entry_t *e, const char *why)
{
    refuse_later("offload entry %s (size %zu, flags %#x) is %s, which this "
                 "runtime does not handle. It handles target regions, declare "
                 "target variables (to, enter, link), indirect functions and "
                 "requires entries as clang 19 emits them; build every file "
                 "of the program with ompcc",
                 entry_name(e), e->size, (unsigned)e->flags, why);
}

/* Entries by their flags (TGT_ENTRY_*). */
void tgt_image_read_entries(const tgt_bin_desc_t *desc)
{
    size_t n = (size_t)(desc->host_entries_end - desc->host_entries_begin);
    tgt_rt->kernels = calloc(n ? n : 1, sizeof(tgt_kernel_t));
    tgt_rt->globals = calloc(n ? n : 1, sizeof(tgt_global_t));
    tgt_rt->indirect = calloc(n ? n : 1, sizeof(tgt_indirect_t));
    if (!tgt_rt->kernels || !tgt_rt->globals || !tgt_rt->indirect)
        ompc_fatal("out of memory reading offload entries");
    for (tgt_offload_entry_t *e = desc->host_entries_begin; e < desc->host_entries_end;
         e++) {
        int32_t f = e->flags;
        if (f == TGT_ENTRY_REGISTER_REQUIRES) {
            read_entry_requires(e);
        } else if (f == TGT_ENTRY_INDIRECT) {
            if (e->size != sizeof(void *) || !e->name || !e->name[0]) {
                refuse_entry(e, "an indirect function entry of an unexpected form");
                continue;
            }
            tgt_indirect_t *d = &tgt_rt->indirect[tgt_rt->nindirect++];
            d->host_addr = e->addr;
            d->name = e->name;
        } else if (f == TGT_ENTRY_LINK || (f == 0 && e->size > 0)) {
            /* A link entry is the variable's reference pointer (8 bytes,
             * null on the device): maps of the variable attach it to the
             * device copy (PTR_AND_OBJ), as for any mapped pointer. */
            if (!e->name || !e->name[0] ||
                (f == TGT_ENTRY_LINK && e->size != sizeof(void *))) {
                refuse_entry(e, "a declare target variable entry of an unexpected form");
                continue;
            }
            tgt_global_t *g = &tgt_rt->globals[tgt_rt->nglobals++];
            g->host_addr = e->addr;
            g->name = e->name;
            g->size = e->size;
        } else if (f == 0) {
            if (!e->name || !e->name[0]) {
                refuse_entry(e, "a target region entry without a name");
                continue;
            }
            tgt_kernel_t *k = &tgt_rt->kernels[tgt_rt->nkernels++];
            k->host_id = e->addr;
            k->name = e->name;
        } else if (f == TGT_ENTRY_CTOR || f == TGT_ENTRY_DTOR) {
            refuse_entry(e, "a device constructor or destructor kernel (emitted "
                            "by compilers older than LLVM 19, which run device "
                            "constructors from the image itself)");
        } else if (f & TGT_ENTRY_INDIRECT_VTABLE) {
            refuse_entry(e, "an indirect virtual table (emitted by compilers "
                            "newer than LLVM 19)");
        } else {
            refuse_entry(e, "of a kind LLVM 19 does not emit");
        }
    }
    qsort(tgt_rt->kernels, (size_t)tgt_rt->nkernels, sizeof(tgt_kernel_t), kernel_cmp);
}

/* A target region the host has and the device image lacks: the compiler
 * built it for the host only.  Names it by its function (demangled when
 * the program is C++ and so has the demangler) and line, and the one cause
 * seen in practice with clang 19 (docs/cxx.md). */
static void kernel_missing(const char *name)
{
    char where[512];
    tgt_kernel_where(name, where, sizeof(where));
    const char *p = strstr(where, "(_Z");
    const char *comma = p ? strstr(p, ", line ") : NULL;
    typedef char *demangle_fn(const char *, char *, size_t *, int *);
    demangle_fn *demangle = NULL;
    void *sym = p && comma ? dlsym(RTLD_DEFAULT, "__cxa_demangle") : NULL;
    memcpy(&demangle, &sym, sizeof(sym));
    if (demangle) {
        char mangled[sizeof(where)];
        snprintf(mangled, sizeof(mangled), "%.*s", (int)(comma - p - 1), p + 1);
        int status = -1;
        char *plain = demangle(mangled, NULL, NULL, &status);
        if (status == 0 && plain) {
            char line[64];
            snprintf(line, sizeof(line), "%s", comma);
            snprintf(where, sizeof(where), " (in %s%s", plain, line);
        }
        free(plain);
    }
    ompc_fatal_user("rank %d: the target region %s%s is missing from the device image: "
                    "the compiler built it for the host only.  clang 19 does this to a "
                    "target region in a template instantiated with a lambda made in a "
                    "function that has a target region holding a lambda of its own; "
                    "pass a named function object there, or move that other target "
                    "region to a function of its own",
                    tgt_rt->rank, name, where);
}

/* Executors: load the device image from our own binary, resolve kernels
 * and globals by name.  The image is an ELF shared object; dlopen wants a
 * file, so it goes through an anonymous memory file. */
void tgt_image_load(const tgt_bin_desc_t *desc)
{
    const tgt_device_image_t *img = &desc->images[0];
    size_t len = (size_t)((char *)img->image_end - (char *)img->image_start);
    if (len < SELFMAG || memcmp(img->image_start, ELFMAG, SELFMAG) != 0)
        ompc_fatal("rank %d: the device image is not an x86_64 ELF object; "
                   "compile with ompcc (-fopenmp-targets=x86_64-pc-linux-gnu)",
                   tgt_rt->rank);
    int fd = memfd_create("ompc-device-image", MFD_CLOEXEC);
    if (fd < 0)
        ompc_fatal("rank %d: memfd_create for the device image failed", tgt_rt->rank);
    for (size_t done = 0; done < len;) {
        ssize_t w = write(fd, (char *)img->image_start + done, len - done);
        if (w <= 0)
            ompc_fatal("rank %d: writing the device image failed", tgt_rt->rank);
        done += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    tgt_rt->image = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    close(fd);
    if (!tgt_rt->image)
        ompc_fatal("rank %d: cannot load the device image: %s", tgt_rt->rank, dlerror());
    for (int i = 0; i < tgt_rt->nkernels; i++) {
        tgt_kernel_t *k = &tgt_rt->kernels[i];
        k->fn = dlsym(tgt_rt->image, k->name);
        if (!k->fn)
            kernel_missing(k->name);
    }
    for (int i = 0; i < tgt_rt->nglobals; i++) {
        tgt_global_t *g = &tgt_rt->globals[i];
        g->dev_addr = dlsym(tgt_rt->image, g->name);
        if (!g->dev_addr)
            ompc_fatal("rank %d: declare target variable %s missing from the "
                       "device image",
                       tgt_rt->rank, g->name);
        if (ev_mem_register(tgt_rt->ev, g->dev_addr, g->size) != OMPC_OK)
            ompc_fatal("rank %d: cannot expose declare target variable %s", tgt_rt->rank,
                       g->name);
    }
    /* An indirect function's device symbol is a pointer to the device
     * function (its address in this process once the image is loaded). */
    for (int i = 0; i < tgt_rt->nindirect; i++) {
        tgt_indirect_t *f = &tgt_rt->indirect[i];
        void **slot = dlsym(tgt_rt->image, f->name);
        if (!slot || !*slot)
            ompc_fatal("rank %d: indirect function entry %s missing from the "
                       "device image",
                       tgt_rt->rank, f->name);
        f->dev_fn = *slot;
    }
}

/* Every rank learns each executor's address of each global. */
void tgt_image_share_globals(void)
{
    int n = tgt_rt->nglobals;
    if (n == 0)
        return;
    uint64_t *mine = calloc((size_t)n, sizeof(uint64_t));
    if (!mine)
        ompc_fatal("out of memory sharing declare target addresses");
    for (int i = 0; tgt_rt->executor && i < n; i++)
        mine[i] = (uint64_t)(uintptr_t)tgt_rt->globals[i].dev_addr;
    uint64_t *all = tgt_rt_allgather(mine, (size_t)n * sizeof(uint64_t),
                                     "declare target addresses");
    if (tgt_rt->rank == 0) {
        int ne = dm_num_executors(tgt_rt->dm);
        dm_addr_t *addrs = calloc((size_t)ne, sizeof(dm_addr_t));
        if (!addrs)
            ompc_fatal("out of memory sharing declare target addresses");
        for (int i = 0; i < n; i++) {
            for (int e = 0; e < ne; e++)
                addrs[e] =
                    all[(size_t)dm_executor_rank(tgt_rt->dm, e) * (size_t)n + (size_t)i];
            tgt_global_t *g = &tgt_rt->globals[i];
            if (dm_register_fixed(tgt_rt->dm, addrs, g->size, &g->buf) != OMPC_OK)
                ompc_fatal("cannot register declare target variable %s", g->name);
            tgt_map_add_global(g);
        }
        free(addrs);
    }
    free(mine);
    free(all);
}
