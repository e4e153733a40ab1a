/* Per-process and per-role CPU time (ompc_cpu.h). */
#define _GNU_SOURCE
#include "ompc_cpu.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

const char *const ompc_cpu_role_names[OMPC_CPU_NROLES] = {"main", "gate", "handler",
                                                          "kernels", "dispatch"};

/* Runtime threads are a handful per rank (gate, handlers, engines,
 * dispatch); more than this are counted in the rest. */
#define CPU_SLOTS 128

typedef struct cpu_slot {
    bool used;
    ompc_cpu_role_t role;
    clockid_t clk;           /* the thread's CPU clock */
} cpu_slot_t;

/* mtx guards everything below.  A thread stays registered until it
 * unregisters itself under mtx, so a clock read under mtx is that of a
 * live thread. */
static struct {
    pthread_mutex_t mtx;
    cpu_slot_t slot[CPU_SLOTS];
    uint64_t ended_ns[OMPC_CPU_NROLES]; /* threads that ended */
} cpu = {.mtx = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int my_slot = -1;

static uint64_t ts_ns(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static uint64_t tv_ns(const struct timeval *t)
{
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_usec * 1000u;
}

void ompc_cpu_thread_begin(ompc_cpu_role_t role)
{
    clockid_t clk;
    if (my_slot >= 0 || pthread_getcpuclockid(pthread_self(), &clk) != 0)
        return;
    pthread_mutex_lock(&cpu.mtx);
    for (int i = 0; i < CPU_SLOTS; i++)
        if (!cpu.slot[i].used) {
            cpu.slot[i] = (cpu_slot_t){.used = true, .role = role, .clk = clk};
            my_slot = i;
            break;
        }
    pthread_mutex_unlock(&cpu.mtx);
}

void ompc_cpu_thread_end(void)
{
    if (my_slot < 0)
        return;
    struct timespec t;
    bool ok = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0;
    pthread_mutex_lock(&cpu.mtx);
    cpu_slot_t *s = &cpu.slot[my_slot];
    if (ok)
        cpu.ended_ns[s->role] += ts_ns(&t);
    s->used = false;
    pthread_mutex_unlock(&cpu.mtx);
    my_slot = -1;
}

void ompc_cpu_sample(ompc_cpu_sample_t *s_p)
{
    ompc_cpu_sample_t s;
    memset(&s, 0, sizeof(s));
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        s.user_ns = tv_ns(&ru.ru_utime);
        s.sys_ns = tv_ns(&ru.ru_stime);
        s.vcsw = (uint64_t)ru.ru_nvcsw;
        s.ivcsw = (uint64_t)ru.ru_nivcsw;
    }
    pthread_mutex_lock(&cpu.mtx);
    memcpy(s.role_ns, cpu.ended_ns, sizeof(s.role_ns));
    for (int i = 0; i < CPU_SLOTS; i++) {
        struct timespec t;
        if (cpu.slot[i].used && clock_gettime(cpu.slot[i].clk, &t) == 0)
            s.role_ns[cpu.slot[i].role] += ts_ns(&t);
    }
    pthread_mutex_unlock(&cpu.mtx);
    *s_p = s;
}
