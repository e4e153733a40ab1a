/* Start-up and shutdown: __tgt_register_lib splits the process (rank 0
 * returns to run main, the other ranks serve events and never return),
 * checks that the ranks form one job of one build, chooses the head's and
 * executors' thread defaults and starts every part of the runtime in
 * order; __tgt_unregister_lib ends them.  The image itself is read by
 * tgt_image.c and tgt_indirect.c. */
#define _GNU_SOURCE
#include "tgt_graph.h"
#include "tgt_split.h"
#include "ompc_trace.h"

#include <dlfcn.h>
#include <hwloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t register_mtx = PTHREAD_MUTEX_INITIALIZER;
static int registrations;

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
                cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE);
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
    for (tgt_offload_entry_t *e = desc->host_entries_begin; e < desc->host_entries_end;
         e++) {
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
static rank_id_t *check_same_build(const tgt_bin_desc_t *desc, int64_t supervisor_pid)
{
    rank_id_t mine;
    rank_id_fill(desc, supervisor_pid, &mine);
    rank_id_t *all = tgt_rt_allgather(&mine, sizeof(mine), "rank identities");
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
        int w = last > r ? snprintf(list + len, sizeof(list) - len,
                                    "%sranks %d-%d run %s (build %016llx)",
                                    groups > 1 ? "; " : "", r, last, all[r].exe,
                                    (unsigned long long)all[r].build)
                         : snprintf(list + len, sizeof(list) - len,
                                    "%srank %d runs %s (build %016llx)",
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
                     "by a user); the job ends\n",
                     tgt_rt->rank, tgt_rt->rank, (long long)me->pid, me->host);
    if (n <= 0)
        return;
    sigterm_len = (size_t)n < sizeof(sigterm_msg) ? (size_t)n : sizeof(sigterm_msg) - 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

/* UCX, MPICH's transport, catches SIGSEGV, SIGBUS, SIGFPE and SIGILL from
 * the moment its library loads (UCX_HANDLE_ERRORS, "bt" by default): a
 * crash in a kernel then prints UCX's backtrace of its own handler first,
 * and the supervisor's line naming the kernel comes last, under it.
 * Unless the user asked for UCX's handling, those signals go back to their
 * default action here, before the supervisor splits the process: the rank
 * dies at the faulting instruction (a core file shows that frame) and the
 * line naming the kernel is the first.  Setting the variable here would be
 * too late: UCX reads it when it loads, and would warn that it is unused. */
static void ucx_handlers_off(void)
{
    const char *set = getenv("UCX_HANDLE_ERRORS");
    if (set && *set)
        return;
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0)
            continue;
        void *fn = (old.sa_flags & SA_SIGINFO) ? (void *)old.sa_sigaction
                                               : (void *)old.sa_handler;
        Dl_info where;
        if (fn == (void *)SIG_DFL || fn == (void *)SIG_IGN || !dladdr(fn, &where) ||
            !where.dli_fname)
            continue;
        const char *base = strrchr(where.dli_fname, '/');
        if (strncmp(base ? base + 1 : where.dli_fname, "libucs", 6) != 0)
            continue;
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sigs[i], &dfl, NULL);
    }
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
    if (tgt_mpi_apps_world_size() != 1 || !n || atoll(n) <= 1)
        return;
    ompc_fatal("srun started %s tasks, but MPI sees this one as a job of its "
               "own (1 rank): srun gave MPI no way to connect them. Use "
               "`srun --mpi=pmi2` (Debian's MPICH speaks PMI-1/PMI-2), set "
               "MpiDefault=pmi2 in slurm.conf or export SLURM_MPI_TYPE=pmi2, "
               "or start the ranks with mpiexec inside the allocation",
               n);
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
        if (n <= 0 || n == tgt_mpi_apps_world_size())
            continue;
        char lib[256];
        ev_mpi_library(lib, sizeof(lib));
        ompc_fatal("%s started %lld processes (%s=%s), but this program's MPI "
                   "sees a job of %d rank%s: the program was built against "
                   "another MPI than the launcher's. Library: \"%s\". Start it "
                   "with that library's mpiexec (Debian: mpiexec.mpich for "
                   "MPICH), or rebuild it with the launcher's MPI",
                   launchers[i].who, n, launchers[i].var, v, tgt_mpi_apps_world_size(),
                   tgt_mpi_apps_world_size() == 1 ? "" : "s", lib);
    }
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
              "(crowded node)",
              tgt_rt->rank);
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
                        "on, and it may run on %d)",
                        (long long)n, (long long)most, node->ncpus);
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
    ucx_handlers_off();
    /* Before anything else: the split needs one thread and no MPI state. */
    int64_t supervisor_pid = 0;
    ompc_status_t sup_st = tgt_supervise(&supervisor_pid);
    ompc_set_fatal_cleanup(kmp_forget_self);
    ompc_log_set_thread_name("main");
    ompc_cpu_thread_begin(OMPC_CPU_MAIN);
    uint64_t t_start = ompc_now_ns();
    tgt_rt = calloc(1, sizeof(*tgt_rt));
    if (!tgt_rt)
        ompc_fatal("out of memory starting the offloading runtime");
    tgt_rt->t_start_ns = t_start;
    tgt_rt->offload = parse_offload_env();
    tgt_rt->info = ompc_config_get()->info != 0;
    tgt_rt->stats = ompc_config_get()->stats != 0;
    pthread_mutex_init(&tgt_rt->map_mtx, NULL);
    if (desc->num_images < 1)
        ompc_fatal("the program has no device image; compile with ompcc");
    tgt_image_read_entries(desc);
    /* Rank 0 is the head: it records and schedules, the workers compute.
     * In an MPI program, rank 0 of each application rank's group. */
    MPI_Comm group = tgt_mpi_apps_start();
    if (ev_ctx_create_opts(&tgt_rt->ev,
                           &(ev_ctx_opts_t){.coordinator = 0, .world = group}) != OMPC_OK)
        ompc_fatal("cannot start the event system");
    tgt_mpi_apps_activate();
    tgt_rt->rank = ev_ctx_rank(tgt_rt->ev);
    tgt_rt->size = ev_ctx_size(tgt_rt->ev);
    refuse_srun_without_pmi();
    refuse_foreign_launcher();
    refuse_tool_disabled();
    if (sup_st != OMPC_OK)
        ompc_info("rank %d runs without a supervisor (%s): a signal that kills "
                  "it is reported by the launcher only",
                  tgt_rt->rank,
                  sup_st == OMPC_ERR_UNSUPPORTED
                      ? "threads were started before the offloading runtime"
                      : ompc_status_str(sup_st));
    rank_id_t *ids = check_same_build(desc, supervisor_pid);
    tgt_image_report_refusal();
    watch_sigterm(&ids[tgt_rt->rank]);
    if (dm_ctx_create(tgt_rt->ev, &tgt_rt->dm) != OMPC_OK)
        ompc_fatal("cannot start the data manager");
    if (tgt_kernel_fn_register() != OMPC_OK || tgt_model_fn_register() != OMPC_OK ||
        tgt_ahead_fn_register() != OMPC_OK || tgt_split_fn_register() != OMPC_OK)
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
        tgt_image_load(desc);
        choose_kernel_threads();
    } else {
        choose_head_threads();
    }
    tgt_model_share_cores();
    tgt_image_share_globals();
    tgt_indirect_share();
    ev_ctx_start(tgt_rt->ev);
    if (tgt_rt->rank == 0) {
        tgt_model_init();
        tgt_graph_init();
        tgt_mpi_apps_check();
    }
    tgt_rt->t_ready_ns = ompc_now_ns();
    ompc_trace_span("runtime", "start-up", t_start, tgt_rt->t_ready_ns, NULL, 0);
    if (tgt_rt->info && tgt_rt->rank == 0)
        fprintf(stderr,
                "[ompc info] %d rank(s): head rank 0, %d executor(s); "
                "%d kernel(s), %d declare target variable(s), %d indirect "
                "function(s); requires %#llx; head threads: %s\n",
                tgt_rt->size, dm_num_executors(tgt_rt->dm), tgt_rt->nkernels,
                tgt_rt->nglobals, tgt_rt->nindirect,
                (unsigned long long)tgt_image_requires(), head_threads_str());
    if (tgt_rt->info && tgt_rt->rank == 0) {
        print_ranks(ids);
        if (tgt_rt->size == 1 && launched_alone())
            fprintf(stderr,
                    "[ompc info] running without an MPI launcher "
                    "(singleton MPI job): rank 0 is the only rank and runs every "
                    "kernel itself. To run on a cluster, start the program with "
                    "`mpiexec -n N %s` (or srun -n N): rank 0 runs main, ranks "
                    "1..N-1 run kernels\n",
                    ids[0].exe);
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
    tgt_mpi_apps_finish();
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
    tgt_calls_close();
    tgt_graph_fini();
    tgt_model_fini();
    if (tgt_rt->info) {
        dm_stats_t s;
        dm_get_stats(tgt_rt->dm, &s);
        fprintf(stderr,
                "[ompc info] rank 0: %llu kernel(s) run; moved %llu B "
                "host->device, %llu B device->host, %llu B worker->worker in "
                "%llu transfer(s)\n",
                (unsigned long long)tgt_rt->kernels_run,
                (unsigned long long)s.bytes_host_to_dev,
                (unsigned long long)s.bytes_dev_to_host,
                (unsigned long long)s.bytes_dev_to_dev,
                (unsigned long long)s.transfers_dev_to_dev);
    }
    ompc_trace_span("runtime", "shutdown", t_sd0, ompc_now_ns(), NULL, 0);
    tgt_trace_gather();
    if (ompc_config_get()->stats)
        tgt_stats_gather();
    ev_ctx_shutdown(tgt_rt->ev);
    if (ompc_config_get()->stats) {
        tgt_stats_print(t_sd0, ompc_now_ns());
        tgt_split_stats_print();
    }
    dm_ctx_destroy(tgt_rt->dm);
    ev_ctx_destroy(tgt_rt->ev);
    tgt_mpi_apps_finish();
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
    tgt_image_requires_note(flags, "registered by __tgt_register_requires, "
                                   "source file unknown");
    const char *refusal = tgt_rt ? tgt_image_refusal() : NULL;
    pthread_mutex_unlock(&register_mtx);
    if (refusal)
        ompc_fatal_user("%s", refusal);
}
