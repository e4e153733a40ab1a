/* The supervisor: a process between the launcher and the rank, so that a
 * rank killed by a signal it cannot catch (SIGKILL from the out-of-memory
 * killer or the batch system) is reported by rank.  Hydra and srun only
 * name a PID or a task, and the dying process cannot speak for itself.
 *
 * The split happens in __tgt_register_lib, before MPI or any thread
 * exists: the child goes on as the rank (and as everything the program
 * is), the parent only waits for it.  The launcher keeps seeing the
 * parent: same PID, same file descriptors (stdio pipes and the PMI
 * socket stay open in it, so the launcher notices nothing until the
 * report is out), same exit status (the parent exits with the child's
 * code or dies of the child's signal).
 *
 * Signals are not forwarded.  Hydra signals each rank's process group
 * (it makes every rank a session leader and kills -pgid), srun signals
 * every process of the step, a terminal its foreground group: the rank
 * gets each of these directly, and a forwarded copy would run the
 * program's handler twice (a checkpoint on SIGUSR1, say).  Instead the
 * supervisor mirrors the rank's dispositions:
 *  - a signal the rank takes at its default (terminate) is at its default
 *    in the supervisor too, so that both die of it in the same kill(2),
 *    exit status fixed by the kernel.  Reacting after the rank died would
 *    lose a race with the launcher's clean-up: Hydra SIGKILLs every
 *    group as soon as one rank is gone, and ORs the statuses it reaps
 *    (Ctrl-C would end as "signal 11", SIGINT | SIGKILL);
 *  - a signal the rank catches or ignores is blocked in the supervisor,
 *    which must outlive the rank's handler: dying would SIGKILL the rank
 *    (PR_SET_PDEATHSIG) in the middle of, say, a checkpoint;
 *  - SIGTERM (the runtime catches it to say which rank got it), SIGPIPE
 *    (the supervisor's own write to a closed stderr) and the signals that
 *    dump core (its death would cut the rank's dump short) stay blocked.
 * The rank's dispositions are re-read from /proc every
 * SUPERVISE_REFRESH_MS, the only way to learn of a handler the program
 * installs.  A signal the supervisor received too was sent to the whole
 * group or job: its sender knows, and no report is made. */
#define _GNU_SOURCE
#include "tgt_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool env_int(const char *name, int64_t *v_p)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 0)
        return false;
    *v_p = v;
    return true;
}

bool tgt_launcher_rank(int64_t *rank_p, int64_t *size_p)
{
    /* The first launcher that set its variables wins: under Hydra started
     * by srun, SLURM_PROCID numbers Hydra's proxies, not the ranks. */
    static const struct {
        const char *rank, *size;
    } vars[] = {
        {"PMI_RANK", "PMI_SIZE"},                         /* Hydra, srun --mpi=pmi2 */
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, /* Open MPI */
        {"PMIX_RANK", NULL},                              /* PMIx servers */
        {"SLURM_PROCID", "SLURM_NTASKS"},                 /* srun */
    };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        int64_t rank, size = -1;
        if (!env_int(vars[i].rank, &rank))
            continue;
        /* A batch script's own environment has SLURM_PROCID too; only a
         * step started by srun has a step id. */
        if (i == 3 && !getenv("SLURM_STEP_ID"))
            continue;
        if (vars[i].size && !env_int(vars[i].size, &size))
            size = -1;
        *rank_p = rank;
        *size_p = size;
        return true;
    }
    return false;
}

/* fork keeps only the calling thread: a thread some other constructor
 * started would be missing from the rank. */
static int count_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* Our own table: sigabbrev_np needs glibc 2.32, newer than many clusters'
 * (RHEL 8 has 2.28). */
static void signal_name(int sig, char *buf, size_t cap)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
        {SIGILL, "SIGILL"},       {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
        {SIGBUS, "SIGBUS"},       {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
        {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
        {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
        {SIGSTKFLT, "SIGSTKFLT"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
        {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGIO, "SIGIO"},
        {SIGPWR, "SIGPWR"},       {SIGSYS, "SIGSYS"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].sig == sig) {
            snprintf(buf, cap, "%s", names[i].name);
            return;
        }
    if (sig >= SIGRTMIN && sig <= SIGRTMAX)
        snprintf(buf, cap, "SIGRTMIN+%d", sig - SIGRTMIN);
    else
        snprintf(buf, cap, "signal %d", sig);
}

/* Who sends these, so that the reader knows where to look. */
static const char *signal_hint(int sig)
{
    switch (sig) {
    case SIGKILL:
        return ": usually the out-of-memory killer (see `dmesg`) or the batch "
               "system at a time limit or on scancel (see `sacct`)";
    case SIGTERM:
        return ": sent by the batch system at a time limit or on scancel, or "
               "by a user";
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
        return ": a crash in a kernel, the program or a library; for a core "
               "file run with `ulimit -c unlimited`, or run under a debugger";
    case SIGABRT:
        return ": abort() was called (a failed assertion or a library "
               "error; see the messages above)";
    case SIGXCPU: return ": the CPU time limit ran out (`ulimit -t` or the batch system)";
    case SIGXFSZ: return ": a file grew past the file size limit (`ulimit -f`)";
    case SIGPIPE: return ": it wrote to a pipe or socket nobody reads any more";
    default: return "";
    }
}

/* ------------------------------------------------ kernels that end the rank
 * A kernel that calls exit(), _exit() or abort() ends its rank in the
 * middle of the job; the launcher then kills the other ranks and ORs the
 * statuses it reaps (exit 3 | SIGKILL reads "signal 9", SIGABRT | SIGKILL
 * "signal 15").  The supervisor sees the rank's status, and reads in a
 * shared page which kernel was running: it names rank, kernel and status,
 * and ends the job through the launcher's abort (PMI `cmd=abort`, what
 * MPI_Abort sends), whose exit code the launcher reports as the job's.
 * _exit cannot be hooked at all and abort() only by a handler the program
 * may replace, so the report is the supervisor's in every case; exit()'s
 * hook only records the status and leaves at once: the exit handlers
 * after it would shut the runtime down under the running kernel (the
 * head's, with one rank, waited for it for ever). */
static tgt_kernel_rec_t unsupervised_rec;
tgt_kernel_rec_t *tgt_kernel_rec = &unsupervised_rec;
static bool supervised;
static _Thread_local const char *this_kernel;

/* The launcher's abort, as MPI_Abort sends it (PMI-1 wire protocol, on
 * the socket the supervisor shares with the rank).  False when the
 * launcher gave no PMI socket. */
static bool launcher_abort(int code)
{
    int64_t fd;
    if (!env_int("PMI_FD", &fd) || fd > 1 << 20)
        return false;
    char line[64];
    int n = snprintf(line, sizeof(line), "cmd=abort exitcode=%d\n", code);
    return write((int)fd, line, (size_t)n) == n;
}

static void kernel_exit_hook(int status, void *arg)
{
    (void)arg;
    /* main's own exit, with nowait kernels still running on other
     * threads, is no kernel's doing. */
    if (!tgt_ompt_in_kernel()) {
        atomic_store(&tgt_kernel_rec->exit_outside, 1);
        return;
    }
    const char *name = this_kernel ? this_kernel : atomic_load(&tgt_kernel_rec->running);
    atomic_store(&tgt_kernel_rec->exit_status, status);
    atomic_store(&tgt_kernel_rec->exited_in, name ? name : "?");
    fflush(stdout);
    fflush(stderr);
    if (!supervised) {
        /* No supervisor to speak for the rank: it says so itself. */
        char msg[512];
        int rank = tgt_rt ? tgt_rt->rank : -1;
        int n = snprintf(
            msg, sizeof(msg),
            "[ompc r%d] fatal: rank %d (pid %lld) ended in "
            "kernel %s with exit status %d (exit(%d)); the job ends with exit "
            "code %d\n",
            rank, rank, (long long)getpid(), name ? name : "?", status & 0xff, status,
            status & 0xff);
        ssize_t w = write(STDERR_FILENO, msg,
                          n > 0 && (size_t)n < sizeof(msg) ? (size_t)n : 0);
        (void)w;
        /* Hydra drops output still in its pipes once it aborts the job. */
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        launcher_abort(status & 0xff);
    }
    _exit(status);
}

static void install_exit_hook(void) { on_exit(kernel_exit_hook, NULL); }

void tgt_kernel_rec_start(const char *name)
{
    /* At the first kernel, after main started: exit handlers run last
     * registered first, and this one must precede __tgt_unregister_lib's,
     * which the program registers once __tgt_register_lib returns. */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_exit_hook);
    this_kernel = name;
    atomic_store(&tgt_kernel_rec->running, name);
    atomic_fetch_add(&tgt_kernel_rec->nrunning, 1);
}

void tgt_kernel_rec_end(void)
{
    atomic_fetch_sub(&tgt_kernel_rec->nrunning, 1);
    this_kernel = NULL;
}

/* "__omp_offloading_<dev>_<file>_<function>_l<line>": clang's name of a
 * target region says where it is. */
void tgt_kernel_where(const char *name, char *buf, size_t cap)
{
    static const char prefix[] = "__omp_offloading_";
    buf[0] = '\0';
    if (!name || strncmp(name, prefix, sizeof(prefix) - 1) != 0)
        return;
    const char *p = name + sizeof(prefix) - 1;
    for (int i = 0; i < 2 && p; i++) {
        p = strchr(p, '_');
        p = p ? p + 1 : NULL;
    }
    const char *l = strrchr(name, '_');
    if (!p || !l || l <= p || l[1] != 'l' || !l[2] ||
        strspn(l + 2, "0123456789") != strlen(l + 2))
        return;
    snprintf(buf, cap, " (%.*s, line %s)", (int)(l - p), p, l + 2);
}

/* Writes a report snprintf made (n bytes wanted, cap the buffer), ending
 * in a newline even when cut, then gives the launcher time to forward it:
 * Hydra drops output still in its pipes once it cleans up the job. */
static void say_and_settle(char *msg, int n, size_t cap)
{
    if (n <= 0)
        return;
    size_t len = (size_t)n < cap ? (size_t)n : cap - 1;
    msg[len - 1] = '\n';
    ssize_t w = write(STDERR_FILENO, msg, len);
    (void)w;
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* The rank's role: head or worker, or in an MPI program whose ranks were
 * split (tgt_mpi_apps.c), which application rank it is or works for. */
static const char *role_of(int64_t rank, char *buf, size_t cap)
{
    const tgt_kernel_rec_t *r = tgt_kernel_rec;
    int group = atomic_load(&r->app_group);
    if (group <= 0)
        return rank == 0 ? "head" : "worker";
    snprintf(buf, cap,
             atomic_load(&r->app_head) ? "application rank %d"
                                       : "worker of application rank %d",
             group - 1);
    return buf;
}

/* The rank ended in a kernel: exited with status (sig 0) or died of sig. */
static void report_kernel(pid_t child, int64_t rank, int64_t size, int exit_status,
                          int sig)
{
    const tgt_kernel_rec_t *r = tgt_kernel_rec;
    const char *via_exit = atomic_load(&r->exited_in);
    const char *name = via_exit ? via_exit : atomic_load(&r->running);
    int running = atomic_load(&r->nrunning);
    char host[64] = "?", of[32] = "", where[160], what[160], signame[32];
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "?");
    if (size > 0)
        snprintf(of, sizeof(of), " of %lld", (long long)size);
    tgt_kernel_where(name, where, sizeof(where));
    if (sig) {
        signal_name(sig, signame, sizeof(signame));
        snprintf(what, sizeof(what), "signal %d (%s)", sig, signame);
    } else if (via_exit) {
        snprintf(what, sizeof(what), "exit status %d (exit(%d))", exit_status,
                 atomic_load(&r->exit_status));
    } else {
        snprintf(what, sizeof(what),
                 "exit status %d (_exit(%d), or exit() with exit "
                 "handlers that never returned)",
                 exit_status, exit_status);
    }
    int code = sig ? 128 + sig : exit_status;
    char msg[1024], role[64];
    int n = snprintf(
        msg, sizeof(msg),
        "[ompc r%lld] fatal: rank %lld%s (%s; pid %lld on %s) ended in kernel "
        "%s%s with %s%s%s; the job ends with exit code %d\n",
        (long long)rank, (long long)rank, of, role_of(rank, role, sizeof(role)),
        (long long)child, host, name ? name : "?", where, what,
        running > 1 && !via_exit ? " while several kernels ran (the last started "
                                   "is named)"
                                 : "",
        sig ? signal_hint(sig) : "", code);
    say_and_settle(msg, n, sizeof(msg));
}

static void report(pid_t child, int sig, int64_t rank, int64_t size)
{
    char host[64] = "?", name[32], of[32] = "";
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "?");
    signal_name(sig, name, sizeof(name));
    if (size > 0)
        snprintf(of, sizeof(of), " of %lld", (long long)size);
    char msg[640], role[64];
    int n = snprintf(msg, sizeof(msg),
                     "[ompc r%lld] fatal: rank %lld%s (%s; pid %lld on %s, "
                     "supervisor pid %lld) was killed by signal %d (%s)%s\n",
                     (long long)rank, (long long)rank, of,
                     role_of(rank, role, sizeof(role)), (long long)child, host,
                     (long long)getpid(), sig, name, signal_hint(sig));
    say_and_settle(msg, n, sizeof(msg));
}

/* Leave with the status the launcher would have seen from the rank. */
static _Noreturn void die_of(int sig)
{
    /* No core file of the supervisor next to (or over) the rank's. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    kill(getpid(), sig);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    _exit(128 + sig); /* a signal whose default is not to terminate */
}

/* How stale the mirror of the rank's dispositions may be: a handler the
 * program installs is honoured from at most this long after.  Launchers'
 * signals come minutes into a run (time limits, checkpoints, Ctrl-C);
 * one read of /proc a second costs nothing a rank would notice. */
#define SUPERVISE_REFRESH_MS 1000

/* The mirrored signals: those whose default action ends a process without
 * a core dump, but SIGTERM and SIGPIPE (see the top of this file). */
static void mirrored_signals(sigset_t *set)
{
    static const int sigs[] = {SIGHUP,    SIGINT,    SIGALRM, SIGUSR1, SIGUSR2,
                               SIGSTKFLT, SIGVTALRM, SIGPROF, SIGIO,   SIGPWR};
    sigemptyset(set);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaddset(set, sigs[i]);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        sigaddset(set, sig);
}

/* The signals the rank catches or ignores, bit sig-1, from /proc (the
 * dispositions are process-wide).  False when unknown. */
static bool rank_handled(pid_t child, uint64_t *handled_p)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%lld/status", (long long)child);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    unsigned long long ign = 0, cgt = 0;
    int found = 0;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        found += sscanf(line, "SigIgn: %llx", &ign) == 1;
        found += sscanf(line, "SigCgt: %llx", &cgt) == 1;
    }
    fclose(f);
    if (found != 2)
        return false;
    *handled_p = (uint64_t)(ign | cgt);
    return true;
}

static bool handled(uint64_t mask, int sig) { return (mask >> (sig - 1)) & 1; }

typedef struct supervisor {
    pid_t child;
    int64_t rank, size;
    sigset_t mirrored;  /* see mirrored_signals */
    sigset_t waited;    /* SIGCHLD and the mirrored signals now blocked */
    sigset_t received;  /* signals taken by sigwaitinfo so far */
} supervisor_t;

/* Block what the rank handles, unblock (at SIG_DFL) what it takes at its
 * default.  A copy that arrived while blocked is taken first: it was
 * meant for a rank that handled it, and must not kill us now. */
static void mirror(supervisor_t *sv)
{
    uint64_t mask;
    if (!rank_handled(sv->child, &mask))
        return; /* gone: SIGCHLD is on its way */
    sigset_t block, unblock;
    sigfillset(&block);
    sigemptyset(&unblock);
    sigemptyset(&sv->waited);
    sigaddset(&sv->waited, SIGCHLD);
    for (int sig = 1; sig <= SIGRTMAX; sig++) {
        if (sigismember(&sv->mirrored, sig) != 1)
            continue;
        if (handled(mask, sig)) {
            sigaddset(&sv->waited, sig);
        } else {
            sigdelset(&block, sig);
            sigaddset(&unblock, sig);
        }
    }
    struct timespec zero = {0, 0};
    siginfo_t si;
    int sig;
    while ((sig = sigtimedwait(&unblock, &si, &zero)) > 0)
        sigaddset(&sv->received, sig);
    pthread_sigmask(SIG_SETMASK, &block, NULL);
}

static _Noreturn void lost(const supervisor_t *sv, const char *call)
{
    char msg[160];
    int n = snprintf(msg, sizeof(msg),
                     "[ompc r%lld] fatal: the supervisor lost "
                     "rank %lld (pid %lld): %s: %s\n",
                     (long long)sv->rank, (long long)sv->rank, (long long)sv->child, call,
                     strerror(errno));
    ssize_t w = write(STDERR_FILENO, msg, n > 0 ? (size_t)n : 0);
    (void)w;
    kill(sv->child, SIGKILL);
    _exit(70);
}

/* DIR followed by "__KMP_REGISTERED_LIB_<pid>_<uid>", written without
 * stdio so that a signal handler may call it. */
static void kmp_path(char *buf, size_t cap, const char *dir, long pid, long uid)
{
    char digits[2][24];
    long nums[2] = {pid, uid};
    for (int k = 0; k < 2; k++) {
        char rev[24];
        int n = 0;
        unsigned long v = nums[k] < 0 ? 0 : (unsigned long)nums[k];
        do
            rev[n++] = (char)('0' + v % 10);
        while ((v /= 10) && n < 23);
        for (int i = 0; i < n; i++)
            digits[k][i] = rev[n - 1 - i];
        digits[k][n] = 0;
    }
    const char *parts[] = {dir, "__KMP_REGISTERED_LIB_", digits[0], "_", digits[1]};
    size_t len = 0;
    for (size_t p = 0; p < sizeof(parts) / sizeof(parts[0]); p++)
        for (const char *c = parts[p]; *c && len + 1 < cap; c++)
            buf[len++] = *c;
    buf[len] = 0;
}

void tgt_kmp_forget(pid_t pid)
{
    /* libomp 19 names the file that tells a second libomp in the same
     * process apart this way, in shared memory (/dev/shm on Linux) or in
     * /tmp where that is missing; only its exit handler removes it. */
    static const char *const dirs[] = {"/dev/shm/", "/tmp/"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char path[96];
        kmp_path(path, sizeof(path), dirs[i], (long)pid, (long)getuid());
        unlink(path);
    }
}

static _Noreturn void supervise(pid_t child, int64_t rank, int64_t size)
{
    supervisor_t sv = {.child = child, .rank = rank, .size = size};
    /* Tells the two apart in ps, and keeps `pkill -x prog` from hitting
     * both. */
    prctl(PR_SET_NAME, "ompc-supervise", 0, 0, 0);
    /* A signal sent between blocking and fork is pending here only. */
    sigset_t pending;
    if (sigpending(&pending) == 0)
        for (int sig = 1; sig <= SIGRTMAX; sig++)
            if (sig != SIGCHLD && (sig < 32 || sig >= SIGRTMIN) &&
                sigismember(&pending, sig) == 1)
                kill(child, sig);
    /* The program's handlers are the rank's business. */
    mirrored_signals(&sv.mirrored);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig <= SIGRTMAX; sig++)
        if (sigismember(&sv.mirrored, sig) == 1)
            sigaction(sig, &dfl, NULL);
    sigemptyset(&sv.received);
    mirror(&sv);
    int status;
    for (;;) {
        struct timespec refresh = {SUPERVISE_REFRESH_MS / 1000,
                                   (SUPERVISE_REFRESH_MS % 1000) * 1000000L};
        siginfo_t si;
        int sig = sigtimedwait(&sv.waited, &si, &refresh);
        if (sig < 0 && errno != EAGAIN && errno != EINTR)
            lost(&sv, "sigtimedwait");
        /* WNOWAIT: the rank stays a zombie, so that its PID, and with it
         * the name of its libomp file, is nobody else's until the file is
         * gone. */
        siginfo_t gone = {.si_pid = 0};
        if (waitid(P_PID, (id_t)child, &gone, WEXITED | WNOHANG | WNOWAIT) < 0 &&
            errno != EINTR)
            lost(&sv, "waitid");
        if (gone.si_pid == child) {
            tgt_kmp_forget(child);
            if (waitpid(child, &status, 0) != child)
                lost(&sv, "waitpid");
            break;
        }
        if (sig > 0 && sig != SIGCHLD)
            sigaddset(&sv.received, sig);
        mirror(&sv);
    }
    const tgt_kernel_rec_t *kr = tgt_kernel_rec;
    bool in_kernel = atomic_load(&kr->exited_in) ||
                     (atomic_load(&kr->nrunning) > 0 && !atomic_load(&kr->exit_outside));
    if (WIFEXITED(status)) {
        int code = WEXITSTATUS(status);
        if (in_kernel) {
            report_kernel(child, rank, size, code, 0);
            launcher_abort(code);
        }
        _exit(code);
    }
    int sig = WTERMSIG(status);
    bool shared = sigismember(&sv.received, sig) == 1 ||
                  (sigpending(&pending) == 0 && sigismember(&pending, sig) == 1);
    /* SIGKILL and SIGTERM come from outside (the OOM killer, the batch
     * system): the kernel that ran is not their cause. */
    if (!shared && in_kernel && sig != SIGKILL && sig != SIGTERM) {
        report_kernel(child, rank, size, 0, sig);
        if (launcher_abort(128 + sig))
            _exit(128 + sig);
    } else if (!shared) {
        report(child, sig, rank, size);
    }
    die_of(sig);
}

ompc_status_t tgt_supervise(int64_t *supervisor_pid_p)
{
    int64_t rank, size;
    if (!ompc_config_get()->supervise || !tgt_launcher_rank(&rank, &size)) {
        *supervisor_pid_p = 0;
        return OMPC_OK;
    }
    if (count_threads() != 1)
        return OMPC_ERR_UNSUPPORTED;
    /* Blocked before the fork, so that no signal finds the supervisor
     * with an inherited handler or a stale default before its first
     * mirror(). */
    sigset_t all, old_mask;
    sigfillset(&all);
    if (pthread_sigmask(SIG_SETMASK, &all, &old_mask) != 0)
        return OMPC_ERR_THREAD;
    /* Ignored SIGCHLD (inherited through exec) would reap the rank behind
     * waitpid's back. */
    struct sigaction dfl, old_chld;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGCHLD, &dfl, &old_chld);
    /* Shared with the rank after the fork (see report_kernel). */
    void *page = mmap(NULL, sizeof(tgt_kernel_rec_t), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        sigaction(SIGCHLD, &old_chld, NULL);
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
        return OMPC_ERR_NOMEM;
    }
    tgt_kernel_rec = page;
    supervised = true;
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        tgt_kernel_rec = &unsupervised_rec;
        supervised = false;
        munmap(page, sizeof(tgt_kernel_rec_t));
        sigaction(SIGCHLD, &old_chld, NULL);
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
        return OMPC_ERR_NOMEM;
    }
    if (child > 0)
        supervise(child, rank, size);
    /* The rank never outlives its supervisor: the launcher would lose
     * track of it. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent)
        kill(getpid(), SIGKILL);
    sigaction(SIGCHLD, &old_chld, NULL);
    if (pthread_sigmask(SIG_SETMASK, &old_mask, NULL) != 0)
        ompc_fatal("rank %lld: cannot restore the signal mask after starting "
                   "the supervisor",
                   (long long)rank);
    *supervisor_pid_p = (int64_t)parent;
    return OMPC_OK;
}
