/* MPI programs that offload (docs/mpi.md).
 *
 * ompc starts MPI in __tgt_register_lib, before main.  With
 * OMPC_WORKERS_PER_RANK set, the launcher's ranks are split into groups:
 * the first rank of each group is an application rank (it returns to run
 * main), the others are its workers (they serve its target regions and
 * never reach main).  Each group's communicator is the whole world of one
 * ompc runtime (event system, graph, HEFT, forwarding), and the
 * application ranks get a communicator of their own, which stands for
 * MPI_COMM_WORLD in every MPI call the program makes.
 *
 * Why interposition, and why it is sound.  MPICH's MPI_COMM_WORLD is a
 * compile-time constant in the program, so the program's calls must be
 * caught: this library defines every MPI entry point that takes a
 * communicator by value (tgt_mpi_wrap.inc, made from MPICH's headers) and
 * passes it on with MPI_COMM_WORLD replaced by the application's world;
 * everything else (requests, statuses, groups, windows, files and the
 * communicators the program makes itself) derives from those calls and
 * needs no mapping.  Both names are defined, MPI_x and PMPI_x, and each
 * calls the next definition of its own name (dlsym RTLD_NEXT): a profiling
 * tool linked after this library still sees MPI_x, and one linked before
 * it reaches our PMPI_x, so the mapping happens whatever the order.
 * MPI sessions cannot help (the world process set holds every process the
 * launcher started), and MPI_Comm_spawn would need a launcher that spawns
 * (srun does not place spawned processes on the allocation's nodes).
 *
 * The program's MPI_Init and MPI_Init_thread return at once (MPI already
 * runs with MPI_THREAD_MULTIPLE; `provided` is what MPICH would grant,
 * the level asked for).  Its MPI_Finalize is deferred until ompc's own
 * shutdown at exit: device data may still be mapped on the workers, and
 * target regions may follow.  MPI_Abort ends the whole job with the
 * program's code, after a line naming the application rank.
 *
 * The definitions catch every caller in the process (the program, its
 * libraries, MPICH's Fortran bindings, which call the C names) when this
 * library comes before the MPI library in the program's NEEDED list:
 * ompcc and ompc::offload link it first.  tgt_mpi_apps_check() notices a
 * program linked otherwise.  ompc's own start and end of MPI go through
 * the event system's ev_mpi_start/ev_mpi_finish, let through here. */
#define _GNU_SOURCE
#include "tgt_graph.h"

#include <dlfcn.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- the state */
/* Written by the main thread in __tgt_register_lib, before main and
 * before the runtime's threads exist (except app_world, see below); the
 * program's own calls read and update the app_* flags from its main
 * thread as MPI_Init and MPI_Finalize are meant to be called. */
typedef struct apps {
    bool on;            /* OMPC_WORKERS_PER_RANK set: the ranks were split */
    int world_rank, world_size;
    MPI_Comm group;     /* this rank's application rank and its workers */
    MPI_Comm app;       /* the application ranks (MPI_COMM_NULL on workers) */
    MPI_Comm finish;    /* every rank: the wait before MPI_Finalize */
    int app_rank, app_size; /* on a worker: the rank it serves, and 0 */
    bool app_init;      /* the program called MPI_Init or MPI_Init_thread */
    bool app_fin;       /* ... and MPI_Finalize */
    bool app_left;      /* ... or ended with status 0 without MPI_Finalize */
} apps_t;

static apps_t apps = {
    .group = MPI_COMM_WORLD, .app = MPI_COMM_NULL, .finish = MPI_COMM_NULL};

/* What MPI_COMM_WORLD stands for in the program's calls: set once, after
 * the event system's threads started (they may be in a wrapped call). */
static _Atomic MPI_Comm app_world = MPI_COMM_WORLD;

/* ompc's own MPI_Init_thread and MPI_Finalize (ev_mpi_start/finish). */
static _Thread_local bool own_call;

static MPI_Comm map_comm(MPI_Comm c)
{
    return c == MPI_COMM_WORLD ? atomic_load_explicit(&app_world, memory_order_relaxed)
                               : c;
}
/* In a wrapper: the argument as the next definition must get it (raw_:
 * the next is a tool's MPI_x, which gets the program's own handles). */
#define APPW(c) (raw_ ? (c) : map_comm(c))

/* The next definition of `name` after this library (MPICH's, or a tool's
 * linked after us), looked up once. */
static void *next_fn(void *_Atomic *slot, const char *name)
{
    void *fn = atomic_load_explicit(slot, memory_order_acquire);
    if (fn)
        return fn;
    fn = dlsym(RTLD_NEXT, name);
    /* MPI linked ahead of this library (tgt_mpi_apps_check): ompc's own
     * calls still get here, and MPI's definition comes first. */
    Dl_info found, self;
    if (!fn && (fn = dlsym(RTLD_DEFAULT, name)) && dladdr(fn, &found) &&
        dladdr((void *)next_fn, &self) && found.dli_fbase == self.dli_fbase)
        fn = NULL;
    if (!fn) {
        fprintf(stderr,
                "[ompc] fatal: %s: no MPI library after ompc's libomptarget "
                "defines it (%s)\n",
                name, dlerror());
        abort();
    }
    atomic_store_explicit(slot, fn, memory_order_release);
    return fn;
}

#define NEXT(type, name)                                                                 \
    ({                                                                                   \
        static void *_Atomic slot_;                                                      \
        (type) next_fn(&slot_, name);                                                    \
    })

/* --------------------------------------------- calls that take a communicator */
#define OMPC_WRAP(name, params, args)                                                    \
    int name params                                                                      \
    {                                                                                    \
        int(*next_) params = NEXT(int(*) params, #name);                                 \
        bool raw_ = (void *)next_ != NEXT(void *, "P" #name);                            \
        return next_ args;                                                               \
    }                                                                                    \
    int P##name params                                                                   \
    {                                                                                    \
        const bool raw_ = false;                                                         \
        return NEXT(int(*) params, "P" #name) args;                                      \
    }
#include "tgt_mpi_wrap.inc"
#undef OMPC_WRAP

/* ------------------------------------------------------------- refusals */
#define WORKERS_WHAT_TO_DO                                                               \
    "set OMPC_WORKERS_PER_RANK to the number of workers each application rank "          \
    "gets and start (1 + that) times as many ranks (OMPC_WORKERS_PER_RANK=2 "            \
    "mpiexec -n 6 ./app: 2 application ranks, each with 2 workers), or "                 \
    "OMPC_WORKERS_PER_RANK=node for one application rank per node; docs/mpi.md"

static void real_abort(int code)
{
    NEXT(int (*)(MPI_Comm, int), "PMPI_Abort")(MPI_COMM_WORLD, code);
    abort();
}

static void guard_abort(int code)
{
    /* Hydra drops output still in its pipes once a job is aborted. */
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    real_abort(code);
}

/* Called before ompc started (a shared library's constructor runs before
 * the program's, which registers the offloading image): every rank gets
 * here at once, before ompc could split them.  MPI is started only to end
 * the job with one message from rank 0; the others wait for its abort,
 * then report themselves should it not come (rank 0 took another path). */
static _Noreturn void refuse_before_start(const char *call)
{
    int init = 0, provided = 0, rank = 0;
    PMPI_Initialized(&init);
    if (init || NEXT(int (*)(int *, char ***, int, int *), "PMPI_Init_thread")(
                    NULL, NULL, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        ompc_log_set_rank(rank);
        ompc_set_abort_hook(guard_abort);
    }
    if (rank != 0) {
        struct timespec ts = {30, 0};
        nanosleep(&ts, NULL);
    }
    ompc_fatal_user("the program calls %s from a constructor, before ompc "
                    "started MPI and split the ranks into application ranks and "
                    "their workers: call it from main",
                    call);
}

/* Whether the program may use MPI: the ranks were split, or there is one. */
static void check_may_use_mpi(const char *call)
{
    if (!tgt_ready())
        refuse_before_start(call);
    if (apps.on || apps.world_size == 1)
        return;
    ompc_fatal_user("the program calls %s, but OMPC_WORKERS_PER_RANK is not set, "
                    "so all %d ranks serve one copy of main (rank 0 runs it, the "
                    "others run its target regions) and there are no application "
                    "ranks for MPI to connect: %s",
                    call, apps.world_size, WORKERS_WHAT_TO_DO);
}

/* ------------------------------------------------- start and end of MPI */
/* An application rank leaving without MPI_Finalize (exit() or main's
 * return; registered at the program's MPI_Init, so it runs before ompc's
 * own shutdown).  Under plain MPI the launcher ends the job when a rank
 * leaves so; under ompc the rank would wait at its shutdown for the others,
 * which may be waiting for it in a collective: a hang.  A non-zero status
 * ends the job at once with that code, naming the rank.  Status 0 waits,
 * since the others may be ending the same way, but only for
 * OMPC_PEER_TIMEOUT (tgt_mpi_apps_finish): a rank still running then
 * either waits for this one in an MPI call or talks to no one, and
 * nothing on this side can tell which. */
static void app_exit_hook(int status, void *arg)
{
    (void)arg;
    if (!apps.on || apps.app == MPI_COMM_NULL || apps.app_fin || ompc_aborting())
        return;
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    fflush(stdout);
    if (status == 0) {
        apps.app_left = true;
        ompc_warn("application rank %d of %d ends without calling MPI_Finalize: "
                  "it waits up to %.1f s (OMPC_PEER_TIMEOUT) for the other "
                  "application ranks to end, then ends the job; call MPI_Finalize "
                  "before returning",
                  apps.app_rank, apps.app_size,
                  (double)ompc_config_get()->peer_timeout_ms * 1e-3);
        return;
    }
    ompc_set_aborting();
    fprintf(stderr,
            "[ompc r%d] fatal: application rank %d of %d (rank %d of the job, pid "
            "%lld on %s) exits with status %d without calling MPI_Finalize; the job "
            "ends with exit code %d\n",
            apps.world_rank, apps.app_rank, apps.app_size, apps.world_rank,
            (long long)getpid(), host, status, status & 0xff);
    guard_abort(status & 0xff);
}

/* The end of app_exit_hook's status 0 case: the other application ranks
 * did not end within OMPC_PEER_TIMEOUT of this one. */
static _Noreturn void app_left_abort(double waited_s)
{
    ompc_set_aborting();
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    fflush(stdout);
    fprintf(stderr,
            "[ompc r%d] fatal: application rank %d of %d (rank %d of the job, pid "
            "%lld on %s) ended with status 0 without calling MPI_Finalize, and the "
            "other application ranks have not ended %.1f s later (OMPC_PEER_TIMEOUT): "
            "one may be waiting for it in an MPI call, which would never return "
            "(plain MPI's launcher ends the job at once here); the job ends with "
            "exit code 1. Call MPI_Finalize on every rank before returning\n",
            apps.world_rank, apps.app_rank, apps.app_size, apps.world_rank,
            (long long)getpid(), host, waited_s);
    guard_abort(1);
    abort();
}

static int app_init(const char *call, int required, int *provided)
{
    check_may_use_mpi(call);
    if (apps.app_init || apps.app_fin)
        ompc_fatal_user("the program calls %s a second time%s: MPI may be "
                        "initialised once per process",
                        call, apps.app_fin ? " (after MPI_Finalize)" : "");
    apps.app_init = true;
    if (apps.on && apps.app != MPI_COMM_NULL && on_exit(app_exit_hook, NULL) != 0)
        ompc_warn("cannot register the exit check of application rank %d", apps.app_rank);
    if (provided)
        *provided = required < MPI_THREAD_SINGLE     ? MPI_THREAD_SINGLE
                    : required > MPI_THREAD_MULTIPLE ? MPI_THREAD_MULTIPLE
                                                     : required;
    return MPI_SUCCESS;
}

static int app_init_thread(const char *real, int *argc, char ***argv, int required,
                           int *provided)
{
    if (own_call)
        return NEXT(int (*)(int *, char ***, int, int *), real)(argc, argv, required,
                                                                provided);
    return app_init("MPI_Init_thread", required, provided);
}

/* A profiling tool linked after this library defines MPI_x too: its
 * definition comes next, and MPI's own MPI_x is a weak alias of PMPI_x
 * (same address).  The tool then gets the call, and its PMPI_x reaches
 * ours; else ours handles it at once. */
static void *tool_fn(void *next, void *real) { return next == real ? NULL : next; }
#define TOOL_NEXT(type, name) ((type)tool_fn(NEXT(void *, name), NEXT(void *, "P" name)))

int MPI_Init(int *argc, char ***argv)
{
    int (*tool)(int *, char ***) = TOOL_NEXT(int (*)(int *, char ***), "MPI_Init");
    if (tool)
        return tool(argc, argv);
    return app_init("MPI_Init", MPI_THREAD_SINGLE, NULL);
}

int PMPI_Init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return app_init("MPI_Init", MPI_THREAD_SINGLE, NULL);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int (*tool)(int *, char ***, int, int *) = TOOL_NEXT(
        int (*)(int *, char ***, int, int *), "MPI_Init_thread");
    if (tool && !own_call)
        return tool(argc, argv, required, provided);
    return app_init_thread("MPI_Init_thread", argc, argv, required, provided);
}

int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return app_init_thread("PMPI_Init_thread", argc, argv, required, provided);
}

static int app_finalize(const char *real)
{
    if (own_call)
        return NEXT(int (*)(void), real)();
    check_may_use_mpi("MPI_Finalize");
    if (apps.app_fin)
        ompc_fatal_user("the program calls MPI_Finalize a second time: MPI may be "
                        "finalised once per process");
    /* Deferred to ompc's shutdown (tgt_mpi_apps_finish), at exit. */
    apps.app_fin = true;
    return MPI_SUCCESS;
}

int MPI_Finalize(void)
{
    int (*tool)(void) = TOOL_NEXT(int (*)(void), "MPI_Finalize");
    if (tool && !own_call)
        return tool();
    return app_finalize("MPI_Finalize");
}
int PMPI_Finalize(void) { return app_finalize("PMPI_Finalize"); }

static _Noreturn void app_abort(MPI_Comm comm, int code)
{
    /* ompc's own fatal errors end the job this way too (the event
     * system's abort hook), after their own message. */
    if (ompc_aborting() || !tgt_ready())
        real_abort(code);
    ompc_set_aborting();
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    fflush(stdout);
    if (apps.on)
        fprintf(stderr,
                "[ompc r%d] fatal: application rank %d of %d (rank %d of the job, "
                "pid %lld on %s) called MPI_Abort(%s, %d); the job ends with exit "
                "code %d\n",
                apps.world_rank, apps.app_rank, apps.app_size, apps.world_rank,
                (long long)getpid(), host,
                comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : "a communicator", code,
                code & 0xff);
    else
        fprintf(stderr,
                "[ompc r%d] fatal: rank %d (pid %lld on %s) called MPI_Abort(%s, %d); "
                "the job ends with exit code %d\n",
                apps.world_rank, apps.world_rank, (long long)getpid(), host,
                comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : "a communicator", code,
                code & 0xff);
    guard_abort(code);
    abort();
}

int MPI_Abort(MPI_Comm comm, int code)
{
    int (*tool)(MPI_Comm, int) = TOOL_NEXT(int (*)(MPI_Comm, int), "MPI_Abort");
    if (tool && !ompc_aborting())
        tool(comm, code);
    app_abort(comm, code);
}
int PMPI_Abort(MPI_Comm comm, int code) { app_abort(comm, code); }

/* ------------------------------------------------------------- start-up */
static void check_mpi(int rc, const char *call)
{
    if (rc != MPI_SUCCESS)
        ompc_fatal("%s failed while splitting the ranks (error %d)", call, rc);
}

MPI_Comm tgt_mpi_apps_start(void)
{
    own_call = true;
    ompc_status_t st = ev_mpi_start();
    own_call = false;
    if (st != OMPC_OK)
        ompc_fatal("cannot start MPI: %s", ompc_status_str(st));
    PMPI_Comm_rank(MPI_COMM_WORLD, &apps.world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &apps.world_size);
    int64_t w = ompc_config_get()->workers_per_rank;
    if (w == OMPC_WORKERS_NONE)
        return MPI_COMM_WORLD;
    if (w == OMPC_WORKERS_NODE) {
        check_mpi(PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                                       apps.world_rank, MPI_INFO_NULL, &apps.group),
                  "MPI_Comm_split_type");
    } else {
        if (apps.world_size % (w + 1) != 0)
            ompc_fatal_user("OMPC_WORKERS_PER_RANK=%lld: the launcher started %d "
                            "ranks, which is not a multiple of 1 + %lld (each "
                            "application rank and its workers); start %lld or %lld "
                            "ranks",
                            (long long)w, apps.world_size, (long long)w,
                            (long long)(apps.world_size / (w + 1)) * (w + 1),
                            (long long)(apps.world_size / (w + 1) + 1) * (w + 1));
        check_mpi(PMPI_Comm_split(MPI_COMM_WORLD, apps.world_rank / (int)(w + 1),
                                  apps.world_rank, &apps.group),
                  "MPI_Comm_split");
    }
    int grank = -1;
    PMPI_Comm_rank(apps.group, &grank);
    check_mpi(PMPI_Comm_split(MPI_COMM_WORLD, grank == 0 ? 0 : MPI_UNDEFINED,
                              apps.world_rank, &apps.app),
              "MPI_Comm_split");
    if (apps.app != MPI_COMM_NULL) {
        PMPI_Comm_rank(apps.app, &apps.app_rank);
        PMPI_Comm_size(apps.app, &apps.app_size);
        PMPI_Comm_set_name(apps.app, "MPI_COMM_WORLD");
    }
    /* Each rank learns which application rank its group serves, for the
     * supervisor's report should it die (tgt_supervise.c). */
    int served = apps.app_rank;
    check_mpi(PMPI_Bcast(&served, 1, MPI_INT, 0, apps.group), "MPI_Bcast");
    if (grank != 0)
        apps.app_rank = served;
    atomic_store(&tgt_kernel_rec->app_group, served + 1);
    atomic_store(&tgt_kernel_rec->app_head, grank == 0);
    check_mpi(PMPI_Comm_dup(MPI_COMM_WORLD, &apps.finish), "MPI_Comm_dup");
    apps.on = true;
    return apps.group;
}

void tgt_mpi_apps_activate(void)
{
    if (apps.app != MPI_COMM_NULL)
        atomic_store_explicit(&app_world, apps.app, memory_order_relaxed);
}

bool tgt_mpi_apps_on(void) { return apps.on; }
int tgt_mpi_apps_world_size(void) { return apps.world_size; }
int tgt_mpi_apps_world_rank(void) { return apps.world_rank; }
int tgt_mpi_apps_rank(void) { return apps.on ? apps.app_rank : 0; }
int tgt_mpi_apps_size(void) { return apps.on ? apps.app_size : 1; }

const char *tgt_mpi_apps_path(const char *path, char *buf, size_t cap)
{
    if (!path || !*path || !apps.on || apps.app_rank <= 0)
        return path;
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1))
        dot = path + strlen(path);
    int n = snprintf(buf, cap, "%.*s-r%d%s", (int)(dot - path), path, apps.app_rank, dot);
    return n > 0 && (size_t)n < cap ? buf : path;
}

void tgt_mpi_apps_finish(void)
{
    if (apps.on) {
        /* MPI_Finalize waits for every rank of the job, and MPICH polls a
         * core while it waits: an application rank that ends early (and
         * its workers) would take CPUs from the ranks still computing.
         * So wait here first, asleep between tests. */
        MPI_Request req;
        if (MPI_Ibarrier(apps.finish, &req) == MPI_SUCCESS) {
            int done = 0;
            long nap_us = 50;
            const uint64_t t0 = ompc_now_ns();
            const uint64_t limit_ns = (uint64_t)ompc_config_get()->peer_timeout_ms *
                                      1000000u;
            while (MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
                if (apps.app_left && ompc_now_ns() - t0 >= limit_ns)
                    app_left_abort((double)(ompc_now_ns() - t0) * 1e-9);
                struct timespec ts = {0, nap_us * 1000};
                nanosleep(&ts, NULL);
                nap_us = nap_us < 20000 ? nap_us * 2 : 20000;
            }
        }
        atomic_store_explicit(&app_world, MPI_COMM_WORLD, memory_order_relaxed);
        PMPI_Comm_free(&apps.finish);
        if (apps.app != MPI_COMM_NULL)
            PMPI_Comm_free(&apps.app);
        PMPI_Comm_free(&apps.group);
        apps.on = false;
    }
    own_call = true;
    ev_mpi_finish();
    own_call = false;
}

/* Rank 0 of each group at start-up: the definitions above must be the
 * ones the process resolves. */
void tgt_mpi_apps_check(void)
{
    static const char *const names[] = {"MPI_Init", "MPI_Init_thread", "mpi_init_",
                                        "mpi_init_thread_"};
    /* Every call ends in a PMPI_ name (a tool's wrapper calls it), and
     * tools do not define those: ours must come before MPI's. */
    if (tgt_symbol_is_ours("PMPI_Init") && tgt_symbol_is_ours("PMPI_Comm_rank"))
        return;
    const char *call = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !call; i++)
        if (tgt_exe_imports(names[i]))
            call = names[i];
    if (!call && !apps.on)
        return;
    Dl_info seen;
    void *sym = dlsym(RTLD_DEFAULT, "PMPI_Init");
    const char *lib = sym && dladdr(sym, &seen) && seen.dli_fname ? seen.dli_fname
                                                                  : "another library";
    if (apps.on)
        ompc_fatal_user("OMPC_WORKERS_PER_RANK is set, but this program was linked "
                        "with %s ahead of ompc's libomptarget: its MPI calls would "
                        "reach MPI directly and count the workers as ranks of its "
                        "own. Link with ompcc or CMake's ompc::offload, which put "
                        "libomptarget first",
                        lib);
    ompc_warn("this program calls %s, but it was linked with %s ahead of ompc's "
              "libomptarget, so ompc cannot take that call over: it would end in "
              "MPICH's \"Cannot call MPI_INIT or MPI_INIT_THREAD more than once\". "
              "Link with ompcc or CMake's ompc::offload, which put libomptarget "
              "first, and set OMPC_WORKERS_PER_RANK (docs/mpi.md)",
              call, lib);
}
