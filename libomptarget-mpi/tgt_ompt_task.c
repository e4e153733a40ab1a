/* What the OMPT tool learnt about the task and thread running now: the
 * current target task and its depend list, and whether this thread runs a
 * kernel.  Recording, launching, task reductions and the exit hook read
 * it; it calls no other file of the library (tgt_ompt.c, the callbacks,
 * writes it). */
#include "tgt_ompt.h"

#include <stddef.h>

static ompt_get_task_info_t get_task_info;

_Thread_local bool tgt_in_kernel;
_Thread_local int tgt_kernel_par_depth;

void tgt_ompt_task_init(ompt_get_task_info_t fn) { get_task_info = fn; }

bool tgt_ompt_in_kernel(void) { return tgt_in_kernel || tgt_kernel_par_depth > 0; }

void *tgt_ompt_current_target_task(void)
{
    int flags = 0;
    ompt_data_t *task = NULL;
    if (!get_task_info || get_task_info(0, &flags, &task, NULL, NULL, NULL) != 2 ||
        !(flags & ompt_task_target))
        return NULL;
    return task;
}

bool tgt_ompt_in_deferred_target_task(void)
{
    if (!get_task_info)
        return false;
    int flags = 0;
    ompt_data_t *task = NULL;
    if (get_task_info(0, &flags, &task, NULL, NULL, NULL) != 2)
        return false;
    return (flags & ompt_task_target) && !(flags & ompt_task_undeferred);
}

const tgt_task_deps_t *tgt_ompt_current_deps(int *n_p, const tgt_dep_t **deps_p)
{
    *n_p = 0;
    *deps_p = NULL;
    if (!get_task_info)
        return NULL;
    int flags = 0;
    ompt_data_t *task = NULL;
    if (get_task_info(0, &flags, &task, NULL, NULL, NULL) != 2 || !task || !task->ptr)
        return NULL;
    tgt_task_deps_t *d = task->ptr;
    if (d->magic != TGT_DEPS_MAGIC)
        return NULL;
    *n_p = d->n;
    *deps_p = d->deps;
    return d;
}
