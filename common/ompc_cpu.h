/* CPU time of this process, whole and by thread role, for OMPC_STATS.
 *
 * A runtime thread calls ompc_cpu_thread_begin() with its role when it
 * starts and ompc_cpu_thread_end() before it returns; ompc_cpu_sample()
 * then adds the CPU clocks of the live ones to what ended ones left.
 * Threads that never registered (OpenMP teams inside kernels, the
 * program's own threads) are the rest of the process total.  The state is
 * process-wide, like the thread names of the log: CPU time belongs to the
 * process, not to one runtime instance.  Every function may be called from
 * any thread. */
#ifndef OMPC_CPU_H
#define OMPC_CPU_H

#include <stdint.h>

typedef enum ompc_cpu_role {
    OMPC_CPU_MAIN,           /* the thread that registered the image */
    OMPC_CPU_GATE,           /* the event system's MPI progress thread */
    OMPC_CPU_HANDLER,        /* event handlers (run kernels on workers) */
    OMPC_CPU_KERNELS,        /* workers: kernels launched ahead */
    OMPC_CPU_DISPATCH,       /* head: the graph's dispatch threads */
    OMPC_CPU_NROLES
} ompc_cpu_role_t;

/* The role names as OMPC_STATS prints them. */
extern const char *const ompc_cpu_role_names[OMPC_CPU_NROLES];

typedef struct ompc_cpu_sample {
    uint64_t user_ns;        /* getrusage(RUSAGE_SELF) */
    uint64_t sys_ns;
    uint64_t vcsw;           /* voluntary context switches */
    uint64_t ivcsw;          /* involuntary context switches */
    uint64_t role_ns[OMPC_CPU_NROLES]; /* user+system by role */
} ompc_cpu_sample_t;

/* The calling thread's CPU time counts under ROLE from now on.  Past the
 * table's capacity a thread is counted in the rest only. */
void ompc_cpu_thread_begin(ompc_cpu_role_t role);
/* The calling thread's CPU time so far is kept under its role; call it
 * last thing before the thread returns. */
void ompc_cpu_thread_end(void);
/* The process now. */
void ompc_cpu_sample(ompc_cpu_sample_t *s_p);

#endif
