/* ompc owns MPI in this version: it initialises MPI in __tgt_register_lib,
 * before main (rank 0 returns to run main, the other ranks serve target
 * regions and never reach it), and finalises it at exit.  A program that
 * starts or ends MPI itself would die inside MPICH ("Cannot call MPI_INIT
 * or MPI_INIT_THREAD more than once") with no word of why, so this library
 * defines the MPI calls that start and end MPI and refuses them by name.
 *
 * The definitions catch every caller in the process (the program, its
 * shared libraries, MPICH's Fortran bindings, which call the C names) when
 * this library comes before the MPI library in the program's NEEDED list:
 * ompcc and ompc::offload link it first.  ompc's own start and end call the
 * PMPI_ names, which MPI defines for exactly this kind of interposition.
 * tgt_mpi_guard_check() notices a program linked otherwise. */
#define _GNU_SOURCE
#include "tgt_graph.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <mpi.h>
#include <string.h>
#include <time.h>

#define GUARD_WHAT_TO_DO                                                      \
    "ompc owns MPI in this version: it initialises MPI before main (rank 0 " \
    "runs main, the other ranks run target regions and never reach main) "   \
    "and finalises it at exit, so a program built for ompc must not call "   \
    "MPI_Init, MPI_Init_thread or MPI_Finalize. Remove the program's own "   \
    "MPI calls and let ompc spread its target regions over the ranks; a "    \
    "program that needs MPI of its own runs only with LLVM's stock "         \
    "libomptarget (clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu, " \
    "not ompcc)"

static void guard_abort(int code)
{
    /* Hydra drops output still in its pipes once a job is aborted. */
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    PMPI_Abort(MPI_COMM_WORLD, code);
}

/* Called before ompc started (a shared library's constructor runs before
 * the program's, which registers the offloading image): every rank gets
 * here at once.  MPI is started only to end the job with one message from
 * rank 0; the others wait for its abort, then report themselves should it
 * not come (rank 0 took another path). */
static _Noreturn void refuse_before_start(const char *call)
{
    int init = 0, provided = 0, rank = 0;
    PMPI_Initialized(&init);
    if (init || PMPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) ==
                    MPI_SUCCESS) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        ompc_log_set_rank(rank);
        ompc_set_abort_hook(guard_abort);
    }
    if (rank != 0) {
        struct timespec ts = {30, 0};
        nanosleep(&ts, NULL);
    }
    ompc_fatal_user("the program calls %s itself (before ompc started, from a "
                    "constructor); " GUARD_WHAT_TO_DO, call);
}

static _Noreturn void refuse(const char *call)
{
    if (!tgt_ready())
        refuse_before_start(call);
    ompc_fatal_user("the program calls %s itself; " GUARD_WHAT_TO_DO, call);
}

int MPI_Init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    refuse("MPI_Init");
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    (void)argc;
    (void)argv;
    (void)required;
    (void)provided;
    refuse("MPI_Init_thread");
}

int MPI_Finalize(void)
{
    refuse("MPI_Finalize");
}

/* The first of the names that start MPI which the program's executable
 * imports, or NULL.  Reads the relocations of the executable's dynamic
 * section (glibc has made their addresses absolute, unless the section is
 * read-only). */
static int find_import(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    static const char *const names[] = {"MPI_Init", "MPI_Init_thread",
                                        "mpi_init_", "mpi_init_thread_"};
    const char **found = data;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 1;
    ElfW(Addr) base = info->dlpi_addr, symtab = 0, strtab = 0;
    ElfW(Addr) rel[2] = {0, 0};
    size_t relsz[2] = {0, 0};
    for (; dyn->d_tag != DT_NULL; dyn++) {
        ElfW(Addr) p = dyn->d_un.d_ptr < base ? base + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = p; break;
        case DT_STRTAB: strtab = p; break;
        case DT_RELA: rel[0] = p; break;
        case DT_RELASZ: relsz[0] = dyn->d_un.d_val; break;
        case DT_JMPREL: rel[1] = p; break;
        case DT_PLTRELSZ: relsz[1] = dyn->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab)
        return 1;
    const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
    for (int t = 0; t < 2 && !*found; t++) {
        const ElfW(Rela) *r = (const ElfW(Rela) *)rel[t];
        for (size_t i = 0; r && i < relsz[t] / sizeof(*r) && !*found; i++) {
            size_t s = ELF64_R_SYM(r[i].r_info);
            if (s == 0 || syms[s].st_shndx != SHN_UNDEF)
                continue;
            const char *name = (const char *)strtab + syms[s].st_name;
            for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++)
                if (strcmp(name, names[n]) == 0)
                    *found = names[n];
        }
    }
    return 1; /* the executable comes first: stop after it */
}

void tgt_mpi_guard_check(void)
{
    Dl_info mine, seen;
    void *sym = dlsym(RTLD_DEFAULT, "MPI_Init");
    if (!sym || !dladdr((void *)refuse, &mine) || !dladdr(sym, &seen) ||
        seen.dli_fbase == mine.dli_fbase)
        return;
    const char *call = NULL;
    dl_iterate_phdr(find_import, &call);
    if (!call)
        return;
    ompc_warn("this program calls %s, but it was linked with %s ahead of ompc's "
              "libomptarget, so ompc cannot refuse that call by name: it would "
              "end in MPICH's \"Cannot call MPI_INIT or MPI_INIT_THREAD more "
              "than once\". ompc owns MPI in this version (it initialises MPI "
              "before main); link with ompcc or CMake's ompc::offload, which put "
              "libomptarget first, to have such a call refused with the reason",
              call, seen.dli_fname ? seen.dli_fname : "another library");
}
