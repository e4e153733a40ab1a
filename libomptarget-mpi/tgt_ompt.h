/* Private to the OMPT tool: tgt_ompt.c (its callbacks, which call the
 * graph) and tgt_ompt_task.c (what they learnt about the current task and
 * thread, which the rest of the library reads). */
#ifndef OMPC_TGT_OMPT_H
#define OMPC_TGT_OMPT_H

#include "tgt_internal.h"

#include <omp-tools.h>

#define TGT_DEPS_MAGIC 0x6f6d7063646570ull /* "ompcdep" */
#define TGT_KERNEL_MAGIC 0x6f6d70636b726eull /* "ompckrn" */

/* A task's depend list, in its ompt_data_t from the dependences callback
 * until the task completes. */
struct tgt_task_deps {
    uint64_t magic;
    int n;
    bool target;             /* a target task (recorded, not a host task) */
    bool taskwait;           /* the dependences of a `taskwait depend` */
    tgt_dep_t deps[];
};

/* Parallel regions a kernel opened on this thread: their threads run
 * kernel code too (counted by the implicit-task callback). */
extern _Thread_local int tgt_kernel_par_depth;

/* The tool's initialisation hands over libomp's task query. */
void tgt_ompt_task_init(ompt_get_task_info_t get_task_info);

#endif
