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
#include <mpi.h>
#include <string.h>
#include <time.h>

#define GUARD_WHAT_TO_DO                                                                 \
    "ompc owns MPI in this version: it initialises MPI before main (rank 0 "             \
    "runs main, the other ranks run target regions and never reach main) "               \
    "and finalises it at exit, so a program built for ompc must not call "               \
    "MPI_Init, MPI_Init_thread or MPI_Finalize. Remove the program's own "               \
    "MPI calls and let ompc spread its target regions over the ranks; a "                \
    "program that needs MPI of its own runs only with LLVM's stock "                     \
    "libomptarget (clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu, "             \
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
    if (init ||
        PMPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        ompc_log_set_rank(rank);
        ompc_set_abort_hook(guard_abort);
    }
    if (rank != 0) {
        struct timespec ts = {30, 0};
        nanosleep(&ts, NULL);
    }
    ompc_fatal_user("the program calls %s itself (before ompc started, from a "
                    "constructor); " GUARD_WHAT_TO_DO,
                    call);
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

int MPI_Finalize(void) { refuse("MPI_Finalize"); }

void tgt_mpi_guard_check(void)
{
    static const char *const names[] = {"MPI_Init", "MPI_Init_thread", "mpi_init_",
                                        "mpi_init_thread_"};
    if (tgt_symbol_is_ours("MPI_Init"))
        return;
    const char *call = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !call; i++)
        if (tgt_exe_imports(names[i]))
            call = names[i];
    if (!call)
        return;
    Dl_info seen;
    void *sym = dlsym(RTLD_DEFAULT, "MPI_Init");
    const char *lib = sym && dladdr(sym, &seen) && seen.dli_fname ? seen.dli_fname
                                                                  : "another library";
    ompc_warn("this program calls %s, but it was linked with %s ahead of ompc's "
              "libomptarget, so ompc cannot refuse that call by name: it would "
              "end in MPICH's \"Cannot call MPI_INIT or MPI_INIT_THREAD more "
              "than once\". ompc owns MPI in this version (it initialises MPI "
              "before main); link with ompcc or CMake's ompc::offload, which put "
              "libomptarget first, to have such a call refused with the reason",
              call, lib);
}
