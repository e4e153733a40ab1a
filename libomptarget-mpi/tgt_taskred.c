/* Task reductions that target tasks join (`target in_reduction`, with or
 * without nowait, inside `taskgroup task_reduction`, a `taskloop
 * reduction` or a `parallel`/worksharing `reduction(task, ...)`).
 *
 * clang-19 maps a target task's reduction item itself, the original
 * variable, tofrom: the task body asks libomp for the thread's private copy
 * (__kmpc_task_reduction_get_th_data) and then ignores the answer.  On a
 * stock runtime each task copies the variable's current value in and its
 * sum back out while it runs.  Here a target task is recorded: its input is
 * the value when it was recorded, its output lands when the graph runs, and
 * libomp, which saw the task complete at once, may fold the group's private
 * copies into the variable before that.  Contributions are lost without
 * any error.
 *
 * So each target task that joins a reduction gets a copy of its own.  This
 * library stands in for libomp's get_th_data (ompcc links it ahead of
 * libomp so that its definitions win; see tgt_exports.map): in a target
 * task it makes a fresh copy initialised as libomp would, and the kernel
 * launch that follows on the same thread maps that copy where the task
 * named the variable (tgt_taskred_redirect).  When the taskgroup's wait
 * ends (every task of the group has been recorded), the graph is flushed,
 * so each copy holds its kernel's result, and the thread ending the group
 * folds the copies into its own libomp copy, which libomp then folds into
 * the variable as usual.  The item descriptions (size, initialiser,
 * combiner) come from the reduction-init calls, which this library stands
 * in for as well.
 *
 * Which taskgroup a thread is ending is the innermost it began: a stack per
 * thread, pushed and popped by the OMPT taskgroup callbacks (tgt_ompt.c),
 * whose top the reduction-init calls name. */
#define _GNU_SOURCE
#include "tgt_graph.h"

#include <stdlib.h>
#include <string.h>

/* Layouts of libomp's reduction inputs (kmp.h, stable since LLVM 9): the
 * old interface's initialiser takes the private copy only, the new one
 * also the original item. */
typedef struct {
    unsigned lazy_priv : 1;
    unsigned reserved : 31;
} kmp_red_flags_t;

typedef struct { /* __kmpc_task_reduction_init, ..._modifier_init */
    void *shar;
    size_t size;
    void *init, *fini, *comb;
    kmp_red_flags_t flags;
} kmp_red_input_old_t;

typedef struct { /* __kmpc_taskred_init, __kmpc_taskred_modifier_init */
    void *shar, *orig;
    size_t size;
    void *init, *fini, *comb;
    kmp_red_flags_t flags;
} kmp_red_input_t;

typedef struct {
    void *shar, *orig;
    size_t size;
    void (*init1)(void *priv);             /* old interface */
    void (*init2)(void *priv, void *orig); /* new interface */
    void (*fini)(void *priv);
    void (*comb)(void *into, void *from);
} red_item_t;

typedef struct red_copy {
    struct red_copy *next;
    const red_item_t *item;
    void *buf;
} red_copy_t;

typedef struct red_group {
    struct red_group *next;
    void *tg;          /* libomp's taskgroup, as the init call returned it */
    int n;
    red_copy_t *copies; /* handed to deferred target tasks, not folded yet */
    red_item_t items[];
} red_group_t;

/* Groups with reductions that have not ended; guarded by mtx.  Newest
 * first, so that an item named by its original finds the innermost. */
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static red_group_t *groups;

/* The calling thread's open taskgroups, innermost last (the libomp
 * taskgroup of those with reductions, else NULL). */
#define TG_DEPTH 64
static _Thread_local void *tg_stack[TG_DEPTH];
static _Thread_local int tg_depth;

typedef void *(*init_fn_t)(int gtid, int num, void *data);
typedef void *(*mod_init_fn_t)(void *loc, int gtid, int is_ws, int num, void *data);
typedef void *(*get_fn_t)(int gtid, void *tg, void *data);

#define REAL(type, name)                                                                 \
    static _Atomic(type) real_;                                                          \
    type f_ = real_;                                                                     \
    if (!f_) {                                                                           \
        f_ = (type)tgt_libomp_next(name);                                                \
        real_ = f_;                                                                      \
    }

static void group_add(void *tg, int num, const void *data, bool new_iface)
{
    /* Outside a taskgroup OMPT reported (OMPT disabled) or nested too deep
     * to follow: left to libomp alone, and a target task that joins it
     * is refused in get_th_data. */
    if (tg_depth < 1 || tg_depth > TG_DEPTH)
        return;
    tg_stack[tg_depth - 1] = tg;
    red_group_t *g = malloc(sizeof(*g) + (size_t)num * sizeof(red_item_t));
    if (!g)
        ompc_fatal("out of memory recording a task reduction");
    g->tg = tg;
    g->n = num;
    g->copies = NULL;
    for (int i = 0; i < num; i++) {
        red_item_t *it = &g->items[i];
        memset(it, 0, sizeof(*it));
        if (new_iface) {
            const kmp_red_input_t *in = &((const kmp_red_input_t *)data)[i];
            it->shar = in->shar;
            it->orig = in->orig ? in->orig : in->shar;
            it->size = in->size;
            it->init2 = (void (*)(void *, void *))in->init;
            it->fini = (void (*)(void *))in->fini;
            it->comb = (void (*)(void *, void *))in->comb;
        } else {
            const kmp_red_input_old_t *in = &((const kmp_red_input_old_t *)data)[i];
            it->shar = in->shar;
            it->size = in->size;
            it->init1 = (void (*)(void *))in->init;
            it->fini = (void (*)(void *))in->fini;
            it->comb = (void (*)(void *, void *))in->comb;
        }
    }
    pthread_mutex_lock(&mtx);
    g->next = groups;
    groups = g;
    pthread_mutex_unlock(&mtx);
}

void *__kmpc_task_reduction_init(int gtid, int num, void *data)
{
    REAL(init_fn_t, "__kmpc_task_reduction_init");
    void *tg = f_(gtid, num, data);
    group_add(tg, num, data, false);
    return tg;
}

void *__kmpc_taskred_init(int gtid, int num, void *data)
{
    REAL(init_fn_t, "__kmpc_taskred_init");
    void *tg = f_(gtid, num, data);
    group_add(tg, num, data, true);
    return tg;
}

void *__kmpc_task_reduction_modifier_init(void *loc, int gtid, int is_ws, int num,
                                          void *data)
{
    REAL(mod_init_fn_t, "__kmpc_task_reduction_modifier_init");
    void *tg = f_(loc, gtid, is_ws, num, data);
    group_add(tg, num, data, false);
    return tg;
}

void *__kmpc_taskred_modifier_init(void *loc, int gtid, int is_ws, int num, void *data)
{
    REAL(mod_init_fn_t, "__kmpc_taskred_modifier_init");
    void *tg = f_(loc, gtid, is_ws, num, data);
    group_add(tg, num, data, true);
    return tg;
}

/* The item `data` names (its original, or any private copy of it), in
 * group tg if it is there, else in the innermost group that has it.
 * Called with mtx held. */
static const red_item_t *item_find(void *tg, void *data, red_group_t **g_p)
{
    for (int pass = 0; pass < 2; pass++)
        for (red_group_t *g = groups; g; g = g->next) {
            if (pass == 0 && g->tg != tg)
                continue;
            for (int i = 0; i < g->n; i++)
                if (g->items[i].shar == data) {
                    *g_p = g;
                    return &g->items[i];
                }
            for (red_copy_t *c = g->copies; c; c = c->next)
                if (c->buf == data) {
                    *g_p = g;
                    return c->item;
                }
        }
    return NULL;
}

/* Copies made by this thread's current target task, for its kernel launch
 * to map in place of the variables they stand for. */
#define REDIRECT_MAX 64
static _Thread_local struct {
    void *task; /* the target task they belong to (its OMPT data) */
    int n;
    void *var[REDIRECT_MAX], *copy[REDIRECT_MAX];
} redirect;

void *__kmpc_task_reduction_get_th_data(int gtid, void *tg, void *data)
{
    REAL(get_fn_t, "__kmpc_task_reduction_get_th_data");
    void *task = tgt_graph_active() ? tgt_ompt_current_target_task() : NULL;
    if (!task)
        return f_(gtid, tg, data);
    pthread_mutex_lock(&mtx);
    red_group_t *g = NULL;
    const red_item_t *it = item_find(tg, data, &g);
    pthread_mutex_unlock(&mtx);
    if (!it)
        ompc_fatal("a target task joins a task reduction (in_reduction) whose "
                   "item at %p ompc did not see begin (OMP_TOOL disabled, or "
                   "more than %d taskgroups nested)",
                   data, TG_DEPTH);
    if (redirect.task != task) {
        redirect.task = task;
        redirect.n = 0;
    }
    if (redirect.n == REDIRECT_MAX)
        ompc_fatal("a target task joins more than %d task reductions", REDIRECT_MAX);
    size_t cap = it->size ? it->size : 1;
    void *buf = aligned_alloc(64, (cap + 63) / 64 * 64);
    red_copy_t *c = malloc(sizeof(*c));
    if (!buf || !c)
        ompc_fatal("out of memory for a target task's reduction copy");
    memset(buf, 0, cap);
    if (it->init2)
        it->init2(buf, it->orig);
    else if (it->init1)
        it->init1(buf);
    c->item = it;
    c->buf = buf;
    pthread_mutex_lock(&mtx);
    c->next = g->copies;
    g->copies = c;
    pthread_mutex_unlock(&mtx);
    redirect.var[redirect.n] = it->shar;
    redirect.copy[redirect.n] = buf;
    redirect.n++;
    return buf;
}

bool tgt_taskred_redirect(tgt_args_t *a, void **space)
{
    void *task = redirect.n ? tgt_ompt_current_target_task() : NULL;
    if (!task || task != redirect.task)
        return false;
    void **base = space, **begin = space + a->n;
    memcpy(base, a->base, (size_t)a->n * sizeof(void *));
    memcpy(begin, a->begin, (size_t)a->n * sizeof(void *));
    for (int32_t i = 0; i < a->n; i++)
        for (int r = 0; r < redirect.n; r++)
            if (a->begin[i] == redirect.var[r] && a->base[i] == redirect.var[r]) {
                base[i] = begin[i] = redirect.copy[r];
                break;
            }
    a->base = base;
    a->begin = begin;
    redirect.n = 0;
    redirect.task = NULL;
    return true;
}

void tgt_taskred_group_begin(void)
{
    if (tg_depth < TG_DEPTH)
        tg_stack[tg_depth] = NULL;
    tg_depth++;
}

void tgt_taskred_group_end(void)
{
    if (tg_depth > 0)
        tg_depth--;
}

void tgt_taskred_group_wait_end(void)
{
    if (tg_depth < 1 || tg_depth > TG_DEPTH || !tg_stack[tg_depth - 1])
        return;
    void *tg = tg_stack[tg_depth - 1];
    tg_stack[tg_depth - 1] = NULL;
    pthread_mutex_lock(&mtx);
    red_group_t **pp = &groups;
    while (*pp && (*pp)->tg != tg)
        pp = &(*pp)->next;
    red_group_t *g = *pp;
    if (g)
        *pp = g->next;
    pthread_mutex_unlock(&mtx);
    if (!g)
        return;
    if (g->copies) {
        /* Every task of the group is recorded: run them, so that each copy
         * holds its kernel's contribution, then fold the copies into this
         * thread's libomp copy (no task of this thread runs meanwhile; the
         * last thread of a parallel reduction folds after every thread
         * passed here). */
        tgt_graph_sync_all();
        REAL(get_fn_t, "__kmpc_task_reduction_get_th_data");
        int gtid = __kmpc_global_thread_num(NULL);
        for (red_copy_t *c = g->copies, *next; c; c = next) {
            next = c->next;
            void *mine = f_(gtid, tg, c->item->shar);
            c->item->comb(mine, c->buf);
            if (c->item->fini)
                c->item->fini(c->buf);
            free(c->buf);
            free(c);
        }
    }
    free(g);
}
