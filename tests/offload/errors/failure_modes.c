/* Failure modes of the environment rather than of the program (argv[1]):
 *   sum        offloads a reduction and checks it (prints PASS); run alone
 *              (no mpiexec), with MPI refusing threads, or next to a
 *              different build (failure_modes_b.c) in an MPMD job.
 *   kill-9     a worker is killed (SIGKILL, as the OOM killer does) while
 *              the head waits in a taskwait over deferred target tasks.
 *   term       the same with SIGTERM, what SLURM sends first.
 *   head-kill  the head is killed (SIGKILL) after an offload.
 *   exit-3     sum, then main returns 3.
 *   group-usr1 a worker catches SIGUSR1 and sends it to its own process
 *              group (as Hydra and srun signal a rank): its handler must
 *              run once, and the rank survive.
 *   group-term a worker sends SIGTERM to its own process group.
 *   wait       sum, says "ready", then sleeps a minute (to be interrupted).
 *   stop-worker AT  a stencil of deferred target tasks spread over the
 *              workers, forwarding blocks between them; at step AT the
 *              task of block AT % SB stops its process (SIGSTOP: a hung
 *              rank that still exists).
 *   stop-head AT    the same stencil; the head stops itself after
 *              submitting step AT (AT < 0: runs to the end and checks).
 * Who dies says so first ("failure_modes: rank R (pid P) kills itself
 * with signal S"), so that tests can check who the runtime names. */
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 1000
#define NTASKS 8

static double v[N];

static int run_sum(void)
{
    for (int i = 0; i < N; i++)
        v[i] = i;
    double sum = 0;
#pragma omp target map(to: v[0:N]) map(tofrom: sum)
    for (int i = 0; i < N; i++)
        sum += v[i];
#ifdef FAILURE_MODES_OTHER_BUILD
    /* one more kernel: a different device image */
#pragma omp target map(tofrom: sum)
    sum += 0;
#endif
    double want = (double)N * (N - 1) / 2;
    if (sum != want) {
        printf("FAIL sum: got %.0f, want %.0f\n", sum, want);
        return 1;
    }
    printf("PASS sum\n");
    return 0;
}

/* The launcher's rank of this process (MPI is not ours to ask in a
 * kernel). */
static const char *launcher_rank(void)
{
    const char *r = getenv("PMI_RANK");
    return r ? r : "?";
}

/* write(2), not stdio: `stderr` does not resolve to libc's in the device
 * image. */
static void say(const char *what, int sig)
{
    char line[160];
    int n = snprintf(line, sizeof(line), "failure_modes: rank %s (pid %d) %s "
                     "with signal %d\n", launcher_rank(), (int)getpid(), what, sig);
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}

static void kill_self(int sig)
{
    say("kills itself", sig);
    kill(getpid(), sig);
}

/* A chain of deferred target tasks; task `victim` kills its process. */
static int run_kill(int sig)
{
    int chain[NTASKS] = {0};
    for (int t = 0; t < NTASKS; t++) {
        int victim = t == 3;
#pragma omp target nowait map(tofrom: chain[0:NTASKS]) depend(inout: chain[0:NTASKS]) \
    firstprivate(victim, sig)
        {
            usleep(100 * 1000);
            if (victim)
                kill_self(sig);
            chain[t] = 1;
        }
    }
#pragma omp taskwait
    printf("failure_modes: the head survived a killed worker (chain[3]=%d)\n",
           chain[3]);
    return 0;
}

/* The handler runs in the worker's process, on the device's copy. */
#pragma omp declare target
static volatile sig_atomic_t usr1_count;

static void on_usr1(int sig)
{
    (void)sig;
    usr1_count++;
}
#pragma omp end declare target

/* A worker signals its whole process group; returns how many times its
 * SIGUSR1 handler ran (only meaningful for SIGUSR1). */
static int run_group_signal(int sig)
{
    int ran = -1;
#pragma omp target map(from: ran) firstprivate(sig)
    {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_usr1;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, NULL);
        usr1_count = 0;
        /* The supervisor learns of a new handler within a second
         * (SUPERVISE_REFRESH_MS); launchers' signals come later than this
         * in real runs. */
        usleep(1500 * 1000);
        say("signals its process group", sig);
        kill(0, sig);
        usleep(300 * 1000); /* time for a second copy to arrive */
        ran = usr1_count;
    }
    return ran;
}

#define SB 4
#define SN 512
#define SSTEPS 12

static void stop_self(void)
{
    say("stops itself", SIGSTOP);
    kill(getpid(), SIGSTOP);
}

static int run_stencil(int stop_task, int stop_head)
{
    double *blk[SB];
    for (int b = 0; b < SB; b++) {
        blk[b] = malloc(SN * sizeof(double));
        for (int i = 0; i < SN; i++)
            blk[b][i] = b;
        double *pb = blk[b];
#pragma omp target enter data map(to: pb[0:SN])
    }
    /* The blocks stay on the workers: the tasks move no data through the
     * head, so the head launches them ahead (tgt_ahead.c). */
    for (int s = 0; s < SSTEPS; s++) {
        for (int b = 0; b < SB; b++) {
            double *pl = blk[(b + SB - 1) % SB], *pr = blk[(b + 1) % SB], *pb = blk[b];
            int victim = s == stop_task && b == stop_task % SB;
#pragma omp target nowait firstprivate(victim) \
    map(to: pl[0:SN], pr[0:SN]) map(tofrom: pb[0:SN]) \
    depend(in: pl[0], pr[0]) depend(inout: pb[0])
            {
                usleep(20 * 1000);
                if (victim)
                    stop_self();
                double side = pl[0] + pr[0];
                for (int i = 0; i < SN; i++)
                    pb[i] += 1 + 0 * side;
            }
        }
        if (s == stop_head)
            stop_self();
    }
#pragma omp taskwait
    for (int b = 0; b < SB; b++) {
        double *pb = blk[b];
#pragma omp target exit data map(from: pb[0:SN])
    }
    for (int b = 0; b < SB; b++)
        for (int i = 0; i < SN; i++)
            if (blk[b][i] != b + SSTEPS) {
                printf("FAIL stencil: block %d [%d] = %g, want %d\n", b, i,
                       blk[b][i], b + SSTEPS);
                return 1;
            }
    printf("PASS stencil\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "sum") == 0)
        return run_sum();
    if (strcmp(mode, "kill-9") == 0)
        return run_kill(SIGKILL);
    if (strcmp(mode, "term") == 0)
        return run_kill(SIGTERM);
    if (strcmp(mode, "head-kill") == 0) {
        if (run_sum() != 0)
            return 1;
        kill_self(SIGKILL);
        return 0;
    }
    if (strcmp(mode, "exit-3") == 0)
        return run_sum() != 0 ? 1 : 3;
    if (strcmp(mode, "group-usr1") == 0) {
        int ran = run_group_signal(SIGUSR1);
        printf("%s group-usr1: the handler ran %d time(s)\n",
               ran == 1 ? "PASS" : "FAIL", ran);
        return ran == 1 ? 0 : 1;
    }
    if (strcmp(mode, "wait") == 0) {
        if (run_sum() != 0)
            return 1;
        printf("failure_modes: ready\n");
        fflush(stdout);
        sleep(60);
        return 0;
    }
    if (strcmp(mode, "group-term") == 0) {
        run_group_signal(SIGTERM);
        printf("failure_modes: the job survived SIGTERM to a worker's group\n");
        return 0;
    }
    int at = argc > 2 ? atoi(argv[2]) : -1;
    if (strcmp(mode, "stop-worker") == 0)
        return run_stencil(at, -1);
    if (strcmp(mode, "stop-head") == 0)
        return run_stencil(-1, at);
    fprintf(stderr, "usage: %s sum|kill-9|term|head-kill|exit-3|group-usr1|"
            "group-term|wait|stop-worker AT|stop-head AT\n", argv[0]);
    return 2;
}
