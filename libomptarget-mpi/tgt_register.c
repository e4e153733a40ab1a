/* Registration of the program's offloading image: the process split
 * (rank 0 returns to run main, the other ranks serve events and never
 * return), loading the device image on executors, and shutdown. */
#define _GNU_SOURCE
#include "tgt_graph.h"
#include "ompc_trace.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <hwloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

tgt_rt_t *tgt_rt;
static pthread_mutex_t register_mtx = PTHREAD_MUTEX_INITIALIZER;
static int registrations;

bool tgt_ready(void) { return tgt_rt != NULL; }

const char *tgt_fmt_(const char *fmt, ...)
{
    static _Thread_local char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return buf;
}

const char *tgt_loc(const void *ident, char *buf, size_t cap)
{
    const tgt_ident_t *id = ident;
    if (!id || !id->psource || strncmp(id->psource, ";unknown", 8) == 0) {
        snprintf(buf, cap, "unknown location (compile with -g for one)");
        return buf;
    }
    /* ";file;function;line;column;;" */
    char file[160] = "", func[96] = "";
    int line = 0, col = 0;
    if (sscanf(id->psource, ";%159[^;];%95[^;];%d;%d", file, func, &line, &col) >= 3)
        snprintf(buf, cap, "%s:%d:%d (in %s)", file, line, col, func);
    else
        snprintf(buf, cap, "%s", id->psource);
    return buf;
}

static int kernel_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const tgt_kernel_t *)a)->host_id;
    uintptr_t y = (uintptr_t)((const tgt_kernel_t *)b)->host_id;
    return x < y ? -1 : x > y;
}

const tgt_kernel_t *tgt_kernel_find(const void *host_id)
{
    tgt_kernel_t key = {.host_id = host_id};
    return bsearch(&key, tgt_rt->kernels, (size_t)tgt_rt->nkernels,
                   sizeof(tgt_kernel_t), kernel_cmp);
}

static tgt_offload_t parse_offload_env(void)
{
    const char *v = getenv("OMP_TARGET_OFFLOAD");
    if (!v || !*v || strcasecmp(v, "default") == 0)
        return TGT_OFFLOAD_DEFAULT;
    if (strcasecmp(v, "mandatory") == 0)
        return TGT_OFFLOAD_MANDATORY;
    if (strcasecmp(v, "disabled") == 0)
        return TGT_OFFLOAD_DISABLED;
    ompc_fatal("OMP_TARGET_OFFLOAD=\"%s\": expected mandatory, disabled or default", v);
}

/* Executors: load the device image from our own binary, resolve kernels
 * and globals by name.  The image is an ELF shared object; dlopen wants a
 * file, so it goes through an anonymous memory file. */
static void load_image(const tgt_bin_desc_t *desc)
{
    const tgt_device_image_t *img = &desc->images[0];
    size_t len = (size_t)((char *)img->image_end - (char *)img->image_start);
    if (len < 4 || memcmp(img->image_start, "\x7f" "ELF", 4) != 0)
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
        ompc_fatal("rank %d: cannot load the device image: %s", tgt_rt->rank,
                   dlerror());
    for (int i = 0; i < tgt_rt->nkernels; i++) {
        tgt_kernel_t *k = &tgt_rt->kernels[i];
        k->fn = dlsym(tgt_rt->image, k->name);
        if (!k->fn)
            ompc_fatal("rank %d: kernel %s missing from the device image",
                       tgt_rt->rank, k->name);
    }
    for (int i = 0; i < tgt_rt->nglobals; i++) {
        tgt_global_t *g = &tgt_rt->globals[i];
        g->dev_addr = dlsym(tgt_rt->image, g->name);
        if (!g->dev_addr)
            ompc_fatal("rank %d: declare target variable %s missing from the "
                       "device image", tgt_rt->rank, g->name);
        if (ev_mem_register(tgt_rt->ev, g->dev_addr, g->size) != OMPC_OK)
            ompc_fatal("rank %d: cannot expose declare target variable %s",
                       tgt_rt->rank, g->name);
    }
    /* An indirect function's device symbol is a pointer to the device
     * function (its address in this process once the image is loaded). */
    for (int i = 0; i < tgt_rt->nindirect; i++) {
        tgt_indirect_t *f = &tgt_rt->indirect[i];
        void **slot = dlsym(tgt_rt->image, f->name);
        if (!slot || !*slot)
            ompc_fatal("rank %d: indirect function entry %s missing from the "
                       "device image", tgt_rt->rank, f->name);
        f->dev_fn = *slot;
    }
}

/* Executors: kernels get this process's share of the cores it may run on
 * (hwloc counts the cores of our CPU set; executors on the same node with
 * the same set split them, the head does not count), unless the user set
 * OMP_NUM_THREADS.  At most that many kernels run at once, so that tasks
 * without parallel regions do not crowd out each other either. */
static void choose_kernel_threads(void)
{
    int cores = 0;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) == 0) {
        if (hwloc_topology_load(topo) == 0) {
            hwloc_bitmap_t set = hwloc_bitmap_alloc();
            if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0)
                cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set,
                                                              HWLOC_OBJ_CORE);
            hwloc_bitmap_free(set);
        }
        hwloc_topology_destroy(topo);
    }
    const ev_node_t *node = ev_node(tgt_rt->ev);
    int sharing = 0;
    for (int i = 0; i < node->nsame; i++)
        sharing += node->same[i] != 0 || tgt_rt->size == 1;
    int share = cores > 0 ? cores / (sharing > 0 ? sharing : 1) : 0;
    if (cores > 0 && share < 1)
        share = 1;
    int slots = share > 0 ? share : 1;
    int64_t handlers = ompc_config_get()->num_handlers;
    tgt_rt->kernel_slots = handlers < slots ? (int)handlers : slots;
    const char *env = getenv("OMP_NUM_THREADS");
    if (!(env && *env) && share > 0)
        tgt_rt->kernel_threads = share; /* else libomp honours it */
}

/* Every rank learns each executor's address of each global. */
static void share_globals(void)
{
    int n = tgt_rt->nglobals;
    if (n == 0)
        return;
    uint64_t *mine = calloc((size_t)n, sizeof(uint64_t));
    uint64_t *all = calloc((size_t)n * (size_t)tgt_rt->size, sizeof(uint64_t));
    if (!mine || !all)
        ompc_fatal("out of memory sharing declare target addresses");
    for (int i = 0; tgt_rt->executor && i < n; i++)
        mine[i] = (uint64_t)(uintptr_t)tgt_rt->globals[i].dev_addr;
    ev_coll_allgather(tgt_rt->ev, mine, (size_t)n * sizeof(uint64_t), all);
    if (tgt_rt->rank == 0) {
        int ne = dm_num_executors(tgt_rt->dm);
        dm_addr_t *addrs = calloc((size_t)ne, sizeof(dm_addr_t));
        for (int i = 0; i < n; i++) {
            for (int e = 0; e < ne; e++)
                addrs[e] = all[(size_t)dm_executor_rank(tgt_rt->dm, e) * (size_t)n + (size_t)i];
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
static void report_refusal(void)
{
    if (!refusal[0])
        return;
    if (tgt_rt->rank != 0)
        for (;;)
            pause(); /* rank 0 reports and aborts the job */
    ompc_fatal_user("%s", refusal);
}

typedef struct {
    uintptr_t addr;
    uintptr_t bias;          /* load bias of the object holding addr */
    char path[512];
    bool found;
} obj_query_t;

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    obj_query_t *q = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || q->addr < lo || q->addr >= lo + ph->p_memsz)
            continue;
        q->bias = info->dlpi_addr;
        snprintf(q->path, sizeof(q->path), "%s",
                 info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name
                                                       : "/proc/self/exe");
        q->found = true;
        return 1;
    }
    return 0;
}

/* The source file that defined the local symbol at addr (an entry's name
 * string: each translation unit has its own), from the STT_FILE symbol
 * that precedes it in the ELF symbol table; false when the file has no
 * symbol table (stripped) or does not say. */
static bool symbol_source_file(const void *addr, char *buf, size_t cap)
{
    obj_query_t q = {.addr = (uintptr_t)addr};
    dl_iterate_phdr(find_object, &q);
    if (!q.found)
        return false;
    int fd = open(q.path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(ElfW(Ehdr)))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return false;
    size_t len = (size_t)st.st_size;
    const unsigned char *img = map;
    const ElfW(Ehdr) *eh = map;
    bool found = false;
    uintptr_t want = q.addr - q.bias;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
        eh->e_shoff > len || (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > len - eh->e_shoff)
        goto out;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(img + eh->e_shoff);
    for (int s = 0; s < eh->e_shnum && !found; s++) {
        if (sh[s].sh_type != SHT_SYMTAB || sh[s].sh_link >= eh->e_shnum)
            continue;
        const ElfW(Shdr) *strs = &sh[sh[s].sh_link];
        if (sh[s].sh_offset > len || sh[s].sh_size > len - sh[s].sh_offset ||
            strs->sh_offset > len || strs->sh_size > len - strs->sh_offset)
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(img + sh[s].sh_offset);
        size_t nsym = sh[s].sh_size / sizeof(ElfW(Sym));
        const char *names = (const char *)img + strs->sh_offset;
        const char *file = NULL;
        for (size_t i = 0; i < nsym; i++) {
            if (sym[i].st_name >= strs->sh_size)
                continue;
            int type = ELF64_ST_TYPE(sym[i].st_info);
            const char *name = names + sym[i].st_name;
            if (type == STT_FILE) {
                file = memchr(name, '\0', strs->sh_size - sym[i].st_name) ? name : NULL;
            } else if (ELF64_ST_BIND(sym[i].st_info) == STB_LOCAL &&
                       type == STT_OBJECT && sym[i].st_value == want) {
                if (file && *file) {
                    snprintf(buf, cap, "%s", file);
                    found = true;
                }
                break;
            }
        }
    }
out:
    munmap(map, len);
    return found;
}

/* Requirements, from REGISTER_REQUIRES entries (one per translation unit
 * with a requires directive clang passes on) and __tgt_register_requires
 * (objects built by older compilers): one rule for both.  Clang 19 passes
 * on only unified_shared_memory (data 0x8); unified_address,
 * dynamic_allocators and atomic_default_mem_order stay in the compiler,
 * and it rejects reverse_offload. */
static int64_t requires_seen;

static void requires_note(int64_t flags, const char *where)
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
                     "target regions use (map clauses, target data)", where);
    else if (flags & TGT_REQ_REVERSE_OFFLOAD)
        refuse_later("`#pragma omp requires reverse_offload` (%s) cannot be "
                     "honoured: ompc does not run `target device(ancestor: 1)` "
                     "regions (a worker cannot hand a region back to the head "
                     "while its kernel runs). Remove the directive and the "
                     "ancestor regions", where);
    else if (flags & ~known)
        refuse_later("requirement flags %#llx (%s) include ones this runtime "
                     "does not know (LLVM 19 defines up to %#llx): the program "
                     "was built by another compiler than clang 19",
                     (unsigned long long)flags, where, (unsigned long long)known);
}

static void read_entry_requires(const tgt_offload_entry_t *e)
{
    char file[256], where[300];
    if (symbol_source_file(e->name, file, sizeof(file)))
        snprintf(where, sizeof(where), "in %s", file);
    else
        snprintf(where, sizeof(where), "source file unknown: no symbol table of "
                 "the executable names it");
    requires_note(e->data, where);
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
                 "of the program with ompcc", entry_name(e), e->size,
                 (unsigned)e->flags, why);
}

/* Entries by their flags (TGT_ENTRY_*). */
static void read_entries(const tgt_bin_desc_t *desc)
{
    size_t n = (size_t)(desc->host_entries_end - desc->host_entries_begin);
    tgt_rt->kernels = calloc(n ? n : 1, sizeof(tgt_kernel_t));
    tgt_rt->globals = calloc(n ? n : 1, sizeof(tgt_global_t));
    tgt_rt->indirect = calloc(n ? n : 1, sizeof(tgt_indirect_t));
    if (!tgt_rt->kernels || !tgt_rt->globals || !tgt_rt->indirect)
        ompc_fatal("out of memory reading offload entries");
    for (tgt_offload_entry_t *e = desc->host_entries_begin; e < desc->host_entries_end; e++) {
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

/* ---------------------------------------------------- indirect functions */

static int indirect_cmp(const void *a, const void *b)
{
    uint64_t x = ((const tgt_indirect_t *)a)->head_addr;
    uint64_t y = ((const tgt_indirect_t *)b)->head_addr;
    return x < y ? -1 : x > y;
}

void *tgt_indirect_find(uint64_t v)
{
    if (tgt_rt->nindirect == 0)
        return NULL;
    tgt_indirect_t key = {.head_addr = v};
    const tgt_indirect_t *f = bsearch(&key, tgt_rt->indirect, (size_t)tgt_rt->nindirect,
                                      sizeof(tgt_indirect_t), indirect_cmp);
    return f ? f->dev_fn : NULL;
}

/* "name (line N)" of the source function of an indirect entry, whose
 * name is __omp_offloading_<device>_<file>_<function>_l<line>. */
static const char *indirect_label(const char *entry, char *buf, size_t cap)
{
    static const char prefix[] = "__omp_offloading_";
    const char *p = entry, *l = strrchr(entry, '_');
    if (strncmp(p, prefix, sizeof(prefix) - 1) == 0) {
        p += sizeof(prefix) - 1;
        for (int field = 0; field < 2 && p; field++) {
            p = strchr(p, '_');
            p = p ? p + 1 : NULL;
        }
    } else {
        p = NULL;
    }
    if (!p || !l || l <= p || l[1] != 'l')
        snprintf(buf, cap, "%s", entry);
    else
        snprintf(buf, cap, "%.*s (line %s)", (int)(l - p), p, l + 2);
    return buf;
}

/* `jmp *0(%rip)` followed by the 8-byte target: clobbers no register. */
#define TGT_JUMP_LEN 14

static void jump_write(unsigned char *at, void *target)
{
    static const unsigned char op[6] = {0xff, 0x25, 0, 0, 0, 0};
    uint64_t t = (uint64_t)(uintptr_t)target;
    memcpy(at, op, sizeof(op));
    memcpy(at + sizeof(op), &t, sizeof(t));
}

/* Workers: the head's address of each indirect function jumps to this
 * worker's device function.  Clang 19 compiles a call through a function
 * pointer on the x86_64 device as a plain indirect call (no lookup in a
 * table, unlike the GPU targets that call __llvm_omp_indirect_call_lookup
 * themselves), so a head address a kernel reads from mapped data must be
 * callable here.  Where the head and this worker load the executable at
 * different addresses (ASLR), the head's addresses are free here and get
 * pages of jumps; where at the same one (non-PIE, ASLR off), they hold
 * this worker's host copy of the function, which workers never run, and
 * its first bytes are replaced. */
static void place_jumps(void)
{
    tgt_indirect_t *v = tgt_rt->indirect;
    int n = tgt_rt->nindirect;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    bool in_place = v[0].head_addr == (uint64_t)(uintptr_t)v[0].host_addr;
    uintptr_t *pages = NULL;
    size_t npages = 0, cap = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && v[i].head_addr == v[i - 1].head_addr)
            continue; /* two names for one host function (folded code) */
        uintptr_t at = (uintptr_t)v[i].head_addr;
        if (in_place != (at == (uintptr_t)v[i].host_addr))
            ompc_fatal("indirect function %s: the head's address moved by a "
                       "different amount than the others", v[i].name);
        for (uintptr_t p = at & ~(pg - 1); p < at + TGT_JUMP_LEN; p += pg) {
            if (npages > 0 && pages[npages - 1] == p)
                continue;
            if (in_place) {
                if (mprotect((void *)p, pg, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
                    ompc_fatal("rank %d: cannot make the code page of indirect "
                               "function %s writable (%s): the worker must redirect "
                               "it to the device function", tgt_rt->rank, v[i].name,
                               strerror(errno));
            } else {
                void *m = mmap((void *)p, pg, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
                if (m != (void *)p) {
                    if (m != MAP_FAILED)
                        munmap(m, pg);
                    char l[160];
                    ompc_fatal_user("rank %d: the head's address of indirect function "
                                    "%s (%#lx) is in use on this worker, which needs it "
                                    "to jump to the device function. Start every rank "
                                    "with the same address layout: `mpiexec -n N "
                                    "setarch -R ./app`", tgt_rt->rank,
                                    indirect_label(v[i].name, l, sizeof(l)),
                                    (unsigned long)at);
                }
            }
            pages = tgt_grow(pages, &cap, npages, sizeof(*pages), "indirect function pages");
            pages[npages++] = p;
        }
        jump_write((unsigned char *)at, v[i].dev_fn);
    }
    for (size_t i = 0; i < npages; i++)
        if (mprotect((void *)pages[i], pg, PROT_READ | PROT_EXEC) != 0)
            ompc_fatal("rank %d: cannot make the jumps to indirect functions "
                       "executable (%s)", tgt_rt->rank, strerror(errno));
    __builtin___clear_cache((char *)pages[0], (char *)pages[npages - 1] + pg);
    free(pages);
}

/* Collective, with workers: each indirect function needs TGT_JUMP_LEN
 * bytes at the head's address (place_jumps).  Rank 0 names the first two
 * that are closer and ends the job. */
static void check_jump_room(void)
{
    const tgt_indirect_t *v = tgt_rt->indirect;
    for (int i = 0; i + 1 < tgt_rt->nindirect; i++) {
        uint64_t gap = v[i + 1].head_addr - v[i].head_addr;
        if (gap == 0 || gap >= TGT_JUMP_LEN)
            continue;
        if (tgt_rt->rank != 0)
            for (;;)
                pause(); /* rank 0 reports and aborts the job */
        char a[160], b[160];
        ompc_fatal_user("the indirect functions %s and %s are %llu bytes apart "
                        "in the executable; ompc needs %d bytes at each to reach "
                        "the device function from a worker. Compile with "
                        "-falign-functions=16 (the default at -O1 and above, "
                        "not at -Os/-Oz)", indirect_label(v[i].name, a, sizeof(a)),
                        indirect_label(v[i + 1].name, b, sizeof(b)),
                        (unsigned long long)gap, TGT_JUMP_LEN);
    }
}

/* Collective: executors learn the head's address of each indirect
 * function (ASLR places the executable differently in every process). */
static void share_indirect(void)
{
    int n = tgt_rt->nindirect;
    if (n == 0)
        return;
    uint64_t *mine = calloc((size_t)n, sizeof(uint64_t));
    uint64_t *all = calloc((size_t)n * (size_t)tgt_rt->size, sizeof(uint64_t));
    if (!mine || !all)
        ompc_fatal("out of memory sharing indirect function addresses");
    for (int i = 0; i < n; i++)
        mine[i] = (uint64_t)(uintptr_t)tgt_rt->indirect[i].host_addr;
    if (ev_coll_allgather(tgt_rt->ev, mine, (size_t)n * sizeof(uint64_t), all) != OMPC_OK)
        ompc_fatal("cannot share indirect function addresses at start-up");
    for (int i = 0; i < n; i++)
        tgt_rt->indirect[i].head_addr = all[i]; /* rank 0's row */
    free(mine);
    free(all);
    qsort(tgt_rt->indirect, (size_t)n, sizeof(tgt_indirect_t), indirect_cmp);
    if (tgt_rt->size == 1)
        return; /* the head's addresses are its own: no jumps */
    check_jump_room();
    if (tgt_rt->executor)
        place_jumps();
}

/* ------------------------------------------------------ start-up checks */

/* FNV-1a, 64 bits: enough to tell two builds apart, not a security hash. */
static uint64_t hash_bytes(uint64_t h, const void *bytes, size_t len)
{
    const unsigned char *b = bytes;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* What identifies a build of the program: the offload entries' names,
 * sizes and flags, and the device image's bytes.  Host addresses are left
 * out: they move with ASLR. */
static uint64_t build_hash(const tgt_bin_desc_t *desc)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (tgt_offload_entry_t *e = desc->host_entries_begin; e < desc->host_entries_end; e++) {
        uint64_t size = e->size;
        int32_t flags = e->flags;
        if (e->name)
            h = hash_bytes(h, e->name, strlen(e->name) + 1);
        h = hash_bytes(h, &size, sizeof(size));
        h = hash_bytes(h, &flags, sizeof(flags));
    }
    for (int i = 0; i < desc->num_images; i++) {
        const tgt_device_image_t *img = &desc->images[i];
        h = hash_bytes(h, img->image_start,
                       (size_t)((char *)img->image_end - (char *)img->image_start));
    }
    return h;
}

/* One rank's identity, exchanged at start-up. */
typedef struct rank_id {
    uint64_t build;
    int64_t pid;
    int64_t supervisor_pid; /* the pid the launcher started; 0: not supervised */
    char host[40];
    char exe[112]; /* the tail of the path when it is longer */
} rank_id_t;

static void rank_id_fill(const tgt_bin_desc_t *desc, int64_t supervisor_pid,
                         rank_id_t *id)
{
    memset(id, 0, sizeof(*id));
    id->build = build_hash(desc);
    id->pid = (int64_t)getpid();
    id->supervisor_pid = supervisor_pid;
    if (gethostname(id->host, sizeof(id->host) - 1) != 0)
        snprintf(id->host, sizeof(id->host), "?");
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) {
        snprintf(id->exe, sizeof(id->exe), "?");
        return;
    }
    path[n] = '\0';
    size_t skip = (size_t)n >= sizeof(id->exe) ? (size_t)n - (sizeof(id->exe) - 1) : 0;
    snprintf(id->exe, sizeof(id->exe), "%s", path + skip);
}

/* Collective, before any other use of the ranks: every rank must run the
 * same build, or kernels, globals and collectives would not match.  Rank 0
 * names the ranks that differ and ends the job; the others wait for its
 * abort so that one message explains it.  Returns every rank's identity
 * (the caller frees it). */
static rank_id_t *check_same_build(const tgt_bin_desc_t *desc,
                                   int64_t supervisor_pid)
{
    rank_id_t mine;
    rank_id_fill(desc, supervisor_pid, &mine);
    rank_id_t *all = calloc((size_t)tgt_rt->size, sizeof(rank_id_t));
    if (!all)
        ompc_fatal("out of memory exchanging rank identities");
    if (ev_coll_allgather(tgt_rt->ev, &mine, sizeof(mine), all) != OMPC_OK)
        ompc_fatal("cannot exchange rank identities at start-up");
    bool same = true;
    for (int r = 1; r < tgt_rt->size; r++)
        same = same && all[r].build == all[0].build;
    if (same)
        return all;
    if (tgt_rt->rank != 0)
        for (;;)
            pause(); /* rank 0 reports and aborts the job */
    char list[640] = "";
    size_t len = 0;
    int groups = 0;
    for (int r = 1; r < tgt_rt->size && len < sizeof(list) - 1; r++) {
        if (all[r].build == all[0].build)
            continue;
        int last = r;
        while (last + 1 < tgt_rt->size && all[last + 1].build == all[r].build)
            last++;
        if (groups++ == 3) {
            snprintf(list + len, sizeof(list) - len, "; and more");
            break;
        }
        int w = last > r
            ? snprintf(list + len, sizeof(list) - len, "%sranks %d-%d run %s (build %016llx)",
                       groups > 1 ? "; " : "", r, last, all[r].exe,
                       (unsigned long long)all[r].build)
            : snprintf(list + len, sizeof(list) - len, "%srank %d runs %s (build %016llx)",
                       groups > 1 ? "; " : "", r, all[r].exe,
                       (unsigned long long)all[r].build);
        if (w > 0)
            len += (size_t)w;
        r = last;
    }
    ompc_fatal_user("ranks run different builds of the program: rank 0 runs %s "
                    "(build %016llx), but %s. Every rank must run the same "
                    "executable: build it once and launch that file on every "
                    "node (a stale copy on one node's disk does this too)",
                    all[0].exe, (unsigned long long)all[0].build, list);
}

/* Launched without mpiexec/srun: MPI made a singleton job of one rank. */
static bool launched_alone(void)
{
    int64_t rank, size;
    return !tgt_launcher_rank(&rank, &size);
}

/* SIGTERM is what SLURM sends at a time limit or on scancel (SIGKILL
 * follows): say which rank got it before dying of it, so that the
 * launcher's report of the signal has a rank attached.  Installed only
 * where the program left the default action. */
static char sigterm_msg[256];
static size_t sigterm_len;

/* A rank that dies of a signal or MPI_Abort skips libomp's exit handler,
 * and so does a worker's _exit. */
static void kmp_forget_self(void) { tgt_kmp_forget(getpid()); }

static void on_sigterm(int sig)
{
    ssize_t w = write(STDERR_FILENO, sigterm_msg, sigterm_len);
    (void)w;
    /* Hydra drops output still in its pipes once it cleans up the job. */
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kmp_forget_self();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void watch_sigterm(const rank_id_t *me)
{
    struct sigaction old;
    if (sigaction(SIGTERM, NULL, &old) != 0 || old.sa_handler != SIG_DFL)
        return;
    int n = snprintf(sigterm_msg, sizeof(sigterm_msg),
                     "[ompc r%d] fatal: rank %d (pid %lld on %s) received SIGTERM "
                     "(sent by the batch system at a time limit or on scancel, or "
                     "by a user); the job ends\n", tgt_rt->rank, tgt_rt->rank,
                     (long long)me->pid, me->host);
    if (n <= 0)
        return;
    sigterm_len = (size_t)n < sizeof(sigterm_msg) ? (size_t)n : sizeof(sigterm_msg) - 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

/* OMPC_INFO: where each rank runs, so that a launcher's report of a dead
 * PID (Hydra names the PID and host, not the rank) maps to a rank.  Under
 * a supervisor the launcher's PID is the supervisor's; the rank's own PID
 * is the one the OOM killer's `dmesg` line names and a debugger attaches
 * to. */
static void print_ranks(const rank_id_t *all)
{
    char line[900];
    size_t len = 0;
    for (int r = 0; r < tgt_rt->size && len < sizeof(line) - 1; r++) {
        char sup[48] = "";
        if (all[r].supervisor_pid)
            snprintf(sup, sizeof(sup), " (supervisor pid %lld)",
                     (long long)all[r].supervisor_pid);
        int w = snprintf(line + len, sizeof(line) - len, "%s%d=pid %lld@%s%s",
                         r ? ", " : "", r, (long long)all[r].pid, all[r].host, sup);
        if (w > 0)
            len += (size_t)w;
    }
    fprintf(stderr, "[ompc info] ranks: %s\n", line);
}

/* `srun -n 3 ./app` without a PMI plugin (SLURM's default MpiDefault=none)
 * starts three singleton MPI jobs: each would run main on its own, every
 * region on itself, and exit 0, looking like success three times over. */
/* Every target task's depend list reaches the runtime through its OMPT
 * tool only (the task body calls it with none); with the tool switched
 * off, dependences and task reductions would be ignored without a word. */
static void refuse_tool_disabled(void)
{
    const char *t = getenv("OMP_TOOL");
    if (t && strcasecmp(t, "disabled") == 0)
        ompc_fatal_user("OMP_TOOL=disabled switches off the OpenMP tool interface, "
                        "through which ompc learns every target task's "
                        "dependences: unset OMP_TOOL (a tool of your own can "
                        "still load through OMP_TOOL_LIBRARIES, after ompc's)");
}

static void refuse_srun_without_pmi(void)
{
    const char *n = getenv("SLURM_STEP_NUM_TASKS");
    if (tgt_rt->size != 1 || !n || atoll(n) <= 1)
        return;
    ompc_fatal("srun started %s tasks, but MPI sees this one as a job of its "
               "own (1 rank): srun gave MPI no way to connect them. Use "
               "`srun --mpi=pmi2` (Debian's MPICH speaks PMI-1/PMI-2), set "
               "MpiDefault=pmi2 in slurm.conf or export SLURM_MPI_TYPE=pmi2, "
               "or start the ranks with mpiexec inside the allocation", n);
}

/* Another MPI's launcher (Open MPI's mpirun starting a program built with
 * MPICH, or the reverse) starts N processes that each find no launcher
 * they know and become jobs of one rank: each would run main as the head.
 * The launcher's own variables say how many it started. */
static void refuse_foreign_launcher(void)
{
    static const struct {
        const char *var, *who;
    } launchers[] = {
        {"OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun/mpiexec"},
        {"PMI_SIZE", "a PMI launcher (MPICH's mpiexec, srun --mpi=pmi2)"},
    };
    for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
        const char *v = getenv(launchers[i].var);
        long long n = v ? atoll(v) : 0;
        if (n <= 0 || n == tgt_rt->size)
            continue;
        char lib[256];
        ev_mpi_library(lib, sizeof(lib));
        ompc_fatal("%s started %lld processes (%s=%s), but this program's MPI "
                   "sees a job of %d rank%s: the program was built against "
                   "another MPI than the launcher's. Library: \"%s\". Start it "
                   "with that library's mpiexec (Debian: mpiexec.mpich for "
                   "MPICH), or rebuild it with the launcher's MPI",
                   launchers[i].who, n, launchers[i].var, v, tgt_rt->size,
                   tgt_rt->size == 1 ? "" : "s", lib);
    }
}

/* Whether the main program imports `name` from a shared library: its
 * undefined dynamic symbols are those below the GNU hash table's first
 * hashed symbol (or, with a SysV table, among all of them). */
struct exe_import_query {
    const char *name;
    bool found;
};

static int exe_import_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct exe_import_query *q = arg;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 1;
    uintptr_t symtab = 0, strtab = 0, gnu_hash = 0, sysv_hash = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        /* glibc relocates these in place for most objects, not for all. */
        uintptr_t v = dyn->d_un.d_ptr;
        if (v && v < info->dlpi_addr)
            v += info->dlpi_addr;
        if (dyn->d_tag == DT_SYMTAB)
            symtab = v;
        else if (dyn->d_tag == DT_STRTAB)
            strtab = v;
        else if (dyn->d_tag == DT_GNU_HASH)
            gnu_hash = v;
        else if (dyn->d_tag == DT_HASH)
            sysv_hash = v;
    }
    uint32_t nsyms = 0;
    if (gnu_hash)
        nsyms = ((const uint32_t *)gnu_hash)[1]; /* symoffset */
    else if (sysv_hash)
        nsyms = ((const uint32_t *)sysv_hash)[1]; /* nchain */
    if (!symtab || !strtab)
        return 1;
    const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab;
    for (uint32_t i = 1; i < nsyms; i++)
        if (sym[i].st_shndx == SHN_UNDEF &&
            strcmp((const char *)strtab + sym[i].st_name, q->name) == 0) {
            q->found = true;
            break;
        }
    return 1; /* the main program comes first; stop there */
}

bool tgt_exe_imports(const char *name)
{
    struct exe_import_query q = {name, false};
    dl_iterate_phdr(exe_import_cb, &q);
    return q.found;
}

bool tgt_symbol_is_ours(const char *name)
{
    Dl_info found, self;
    void *f = dlsym(RTLD_DEFAULT, name);
    return f && dladdr(f, &found) && dladdr((void *)tgt_exe_imports, &self) &&
           found.dli_fbase == self.dli_fbase;
}

/* A program linked with libomp ahead of this library (not by ompcc,
 * ompc++ or the CMake package) calls libomp's task-reduction entry points
 * directly, and target tasks that join a task reduction then lose their
 * contributions (tgt_taskred.c). */
static void warn_link_order(void)
{
    if (tgt_symbol_is_ours("__kmpc_task_reduction_get_th_data") ||
        !tgt_exe_imports("__kmpc_task_reduction_get_th_data"))
        return;
    ompc_warn("this program uses task reductions but was not linked by ompcc "
              "or ompc++: libomp comes before ompc's libomptarget among its "
              "libraries, so a target task's in_reduction contribution can be "
              "lost. Link with ompcc/ompc++ or the CMake package, or put "
              "-Wl,--no-as-needed -lomptarget ahead of -fopenmp's libraries");
}

/* Defaults for the head's libomp, unless the user chose otherwise.  libomp
 * reads its environment at its first construct, after this constructor.
 *
 * Wait policy: the head's OpenMP threads only record and wait, and by
 * default libomp keeps idle threads spinning (for 200 ms after each barrier
 * or task wait); on a node shared with workers that spinning takes the
 * cores the kernels run on.  So they wait passively, except on one rank,
 * where the head runs the kernels itself: a kernel's team then had to be
 * woken for every kernel, as an executor's team on a node of its own does
 * not (docs/performance.md, the chain of nowait kernels).
 *
 * Hidden helper threads: libomp hands every `target nowait` task to a team
 * of 8 helper threads so that a blocking device call cannot hold up the
 * encountering team.  Here recording a target task never waits for a
 * device (it returns once the task is in the graph), so the helpers only
 * add a thread hand-off per task (docs/performance.md, "the head's libomp
 * defaults").  Without them a target task is an ordinary task, recorded by the
 * encountering thread (serial code) or by whichever team thread takes it. */
static bool wait_policy_chosen(void)
{
    static const char *const chosen[] = {"OMP_WAIT_POLICY", "KMP_BLOCKTIME",
                                         "KMP_LIBRARY"};
    bool wait_chosen = false;
    for (size_t i = 0; i < sizeof(chosen) / sizeof(chosen[0]); i++)
        wait_chosen = wait_chosen || getenv(chosen[i]);
    return wait_chosen;
}

static void head_env_defaults(void)
{
    if (!tgt_rt->executor && !wait_policy_chosen())
        setenv("OMP_WAIT_POLICY", "passive", 0);
    setenv("LIBOMP_USE_HIDDEN_HELPER_TASK", "0", 0);
}

/* Executors on a crowded node (ev_node: CPUs shared with other ranks of
 * the job) wait passively too.  Each thread that runs kernels (kernel and
 * handler threads) is a libomp root with a team of its own, whose threads
 * spin after every parallel region: kernels that ran on different roots
 * left teams spinning on the CPUs the next kernel's team needed, and that
 * team waited for the thread that lost its core. */
static void executor_env_defaults(void)
{
    if (!ev_node(tgt_rt->ev)->crowded || tgt_rt->size < 2 || wait_policy_chosen())
        return;
    setenv("OMP_WAIT_POLICY", "passive", 0);
    ompc_info("rank %d: kernel teams wait passively between parallel regions "
              "(crowded node)", tgt_rt->rank);
}

static const char *head_threads_str(void)
{
    static char buf[32];
    if (tgt_rt->head_threads == 0)
        return "OpenMP default";
    snprintf(buf, sizeof(buf), "%d", tgt_rt->head_threads);
    return buf;
}

/* The head's OpenMP team size.  Target tasks record one at a time (the
 * graph's recording lock), so a second head thread adds no throughput:
 * it steals target tasks from the thread creating them and the two take
 * turns on the lock.  Where the head shares its CPUs with workers, that
 * thread also takes a CPU from their kernels (they split the cores
 * without counting the head); docs/performance.md, "the head's libomp
 * defaults". */
static void choose_head_threads(void)
{
    int64_t n = ompc_config_get()->head_threads;
    const ev_node_t *node = ev_node(tgt_rt->ev);
    /* libomp cannot grow the head's thread table much past a few threads
     * per CPU (hidden helper tasks are off, see head_env_defaults) and
     * dies of a failed assertion in the first parallel region. */
    int64_t most = 2 * (int64_t)(node->ncpus > 0 ? node->ncpus : 1);
    if (n > most)
        ompc_fatal_user("environment variable OMPC_HEAD_THREADS=\"%lld\": out "
                        "of range [0, %lld] (at most 2 per CPU the head may run "
                        "on, and it may run on %d)", (long long)n, (long long)most,
                        node->ncpus);
    if (n == 0) {
        const char *env = getenv("OMP_NUM_THREADS");
        if ((env && *env) || node->nsame < 2)
            return;
        n = 1;
    }
    if (!omp_set_num_threads)
        return;
    omp_set_num_threads((int)n);
    tgt_rt->head_threads = (int)n;
}

void __tgt_register_lib(tgt_bin_desc_t *desc)
{
    pthread_mutex_lock(&register_mtx);
    if (registrations++ > 0) {
        /* A second image (a shared library with its own target regions):
         * workers were captured in the first registration already. */
        pthread_mutex_unlock(&register_mtx);
        if (tgt_rt && tgt_rt->size > 1)
            ompc_fatal("this program registers more than one offloading image "
                       "(shared libraries with target regions); ompc supports "
                       "one image per program");
        return;
    }
    /* Before anything else: the split needs one thread and no MPI state. */
    int64_t supervisor_pid = 0;
    ompc_status_t sup_st = tgt_supervise(&supervisor_pid);
    ompc_set_fatal_cleanup(kmp_forget_self);
    ompc_log_set_thread_name("main");
    uint64_t t_start = ompc_now_ns();
    tgt_rt = calloc(1, sizeof(*tgt_rt));
    if (!tgt_rt)
        ompc_fatal("out of memory starting the offloading runtime");
    tgt_rt->t_start_ns = t_start;
    tgt_rt->offload = parse_offload_env();
    tgt_rt->info = ompc_config_get()->info != 0;
    pthread_mutex_init(&tgt_rt->map_mtx, NULL);
    if (desc->num_images < 1)
        ompc_fatal("the program has no device image; compile with ompcc");
    read_entries(desc);
    /* Rank 0 is the head: it records and schedules, the workers compute. */
    if (ev_ctx_create_opts(&tgt_rt->ev, &(ev_ctx_opts_t){.coordinator = 0}) != OMPC_OK)
        ompc_fatal("cannot start the event system");
    tgt_rt->rank = ev_ctx_rank(tgt_rt->ev);
    tgt_rt->size = ev_ctx_size(tgt_rt->ev);
    refuse_srun_without_pmi();
    refuse_foreign_launcher();
    refuse_tool_disabled();
    if (sup_st != OMPC_OK)
        ompc_info("rank %d runs without a supervisor (%s): a signal that kills "
                  "it is reported by the launcher only", tgt_rt->rank,
                  sup_st == OMPC_ERR_UNSUPPORTED
                      ? "threads were started before the offloading runtime"
                      : ompc_status_str(sup_st));
    rank_id_t *ids = check_same_build(desc, supervisor_pid);
    report_refusal();
    watch_sigterm(&ids[tgt_rt->rank]);
    if (dm_ctx_create(tgt_rt->ev, &tgt_rt->dm) != OMPC_OK)
        ompc_fatal("cannot start the data manager");
    if (tgt_kernel_fn_register() != OMPC_OK || tgt_model_fn_register() != OMPC_OK ||
        tgt_ahead_fn_register() != OMPC_OK)
        ompc_fatal("cannot register the kernel launcher");
    const char *trace = ompc_config_get()->trace;
    ompc_trace_init(tgt_rt->rank, trace && *trace);
    ompc_trace_thread_name("main");
    tgt_rt->executor = tgt_rt->size == 1 || tgt_rt->rank != 0;
    if (tgt_rt->rank == 0) {
        warn_link_order();
        head_env_defaults();
    }
    if (tgt_rt->executor) {
        executor_env_defaults();
        load_image(desc);
        choose_kernel_threads();
    } else {
        choose_head_threads();
    }
    tgt_model_share_cores();
    share_globals();
    share_indirect();
    ev_ctx_start(tgt_rt->ev);
    if (tgt_rt->rank == 0) {
        tgt_model_init();
        tgt_graph_init();
        tgt_mpi_guard_check();
    }
    tgt_rt->t_ready_ns = ompc_now_ns();
    ompc_trace_span("runtime", "start-up", t_start, tgt_rt->t_ready_ns, NULL, 0);
    if (tgt_rt->info && tgt_rt->rank == 0)
        fprintf(stderr, "[ompc info] %d rank(s): head rank 0, %d executor(s); "
                "%d kernel(s), %d declare target variable(s), %d indirect "
                "function(s); requires %#llx; head threads: %s\n",
                tgt_rt->size, dm_num_executors(tgt_rt->dm), tgt_rt->nkernels,
                tgt_rt->nglobals, tgt_rt->nindirect,
                (unsigned long long)requires_seen, head_threads_str());
    if (tgt_rt->info && tgt_rt->rank == 0) {
        print_ranks(ids);
        if (tgt_rt->size == 1 && launched_alone())
            fprintf(stderr, "[ompc info] running without an MPI launcher "
                    "(singleton MPI job): rank 0 is the only rank and runs every "
                    "kernel itself. To run on a cluster, start the program with "
                    "`mpiexec -n N %s` (or srun -n N): rank 0 runs main, ranks "
                    "1..N-1 run kernels\n", ids[0].exe);
    }
    free(ids);
    pthread_mutex_unlock(&register_mtx);
    if (tgt_rt->rank == 0)
        return;
    /* A worker: serve until the head says exit, then leave without running
     * main or the program's destructors. */
    tgt_ahead_start();
    ev_ctx_serve(tgt_rt->ev);
    tgt_ahead_stop();
    dm_ctx_destroy(tgt_rt->dm);
    ev_ctx_destroy(tgt_rt->ev);
    fflush(NULL);
    kmp_forget_self();
    _exit(0);
}

void __tgt_unregister_lib(tgt_bin_desc_t *desc)
{
    (void)desc;
    /* MPI_Abort of a one-rank job runs the exit handlers, and this one
     * would post to a dead MPI (MPICH asserts in MPI_Irecv). */
    if (ompc_aborting())
        return;
    pthread_mutex_lock(&register_mtx);
    if (--registrations > 0 || !tgt_rt) {
        pthread_mutex_unlock(&register_mtx);
        return;
    }
    uint64_t t_sd0 = ompc_now_ns();
    tgt_graph_fini();
    tgt_model_fini();
    if (tgt_rt->info) {
        dm_stats_t s;
        dm_get_stats(tgt_rt->dm, &s);
        fprintf(stderr, "[ompc info] rank 0: %llu kernel(s) run; moved %llu B "
                "host->device, %llu B device->host, %llu B worker->worker in "
                "%llu transfer(s)\n", (unsigned long long)tgt_rt->kernels_run,
                (unsigned long long)s.bytes_host_to_dev,
                (unsigned long long)s.bytes_dev_to_host,
                (unsigned long long)s.bytes_dev_to_dev,
                (unsigned long long)s.transfers_dev_to_dev);
    }
    ompc_trace_span("runtime", "shutdown", t_sd0, ompc_now_ns(), NULL, 0);
    tgt_trace_gather();
    ev_ctx_shutdown(tgt_rt->ev);
    if (ompc_config_get()->stats)
        tgt_stats_print(t_sd0, ompc_now_ns());
    dm_ctx_destroy(tgt_rt->dm);
    ev_ctx_destroy(tgt_rt->ev);
    ompc_trace_fini();
    pthread_mutex_unlock(&register_mtx);
}

void __tgt_init_all_rtls(void) {}

/* Called by objects built before LLVM 19 (which passes requirements in
 * entries instead), from a constructor: before __tgt_register_lib, whose
 * start-up reports a refusal, or after it on rank 0 alone (the workers
 * stay in __tgt_register_lib), which reports it at once. */
void __tgt_register_requires(int64_t flags)
{
    pthread_mutex_lock(&register_mtx);
    requires_note(flags, "registered by __tgt_register_requires, source file unknown");
    bool now = tgt_rt && refusal[0];
    pthread_mutex_unlock(&register_mtx);
    if (now)
        ompc_fatal_user("%s", refusal);
}
