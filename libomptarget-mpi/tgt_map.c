/* The host <-> device mapping table and OpenMP's map semantics: reference
 * counts, to/from/always/delete/present, struct members, pointer
 * attachment (PTR_AND_OBJ) with shadow pointers, firstprivate copies,
 * user-defined mappers.
 *
 * The table is one ordered map of non-overlapping host ranges under
 * map_mtx, changed at once; the data a construct moves is not: it comes
 * back as a plan of data operations (tgt_plan_t), which the task graph
 * records and runs later.  Device copies belong to the data manager; the
 * table only says which device buffer backs which host range.  This file
 * calls no other file of the library but tgt_rt.c. */
#define _GNU_SOURCE
#include "tgt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- plans */
/* One construct maps at a time (plan_mtx, from tgt_plan_begin to
 * tgt_plan_mapped), and takes a ticket as it starts: nodes enter the graph
 * in ticket order (tgt_rec_construct: one built before its turn is parked
 * until the one before it enters), so in the order
 * of their mapping-table changes, or another construct could use a mapping
 * whose data ops belong to a node not in the graph yet.  Between the two
 * steps a construct holds no lock: several threads build their nodes
 * (host bytes taken, launch messages written) at once. */
static pthread_mutex_t plan_mtx = PTHREAD_MUTEX_INITIALIZER;
static uint64_t plan_tickets; /* plan_mtx: the last ticket taken */

/* The arrays every construct fills and drops (its plan's ops, its kernel's
 * buffers, firstprivate copies and arguments), kept from one construct to
 * the next: a heap block per list per construct was four of the head's
 * mallocs and frees per task (docs/performance.md, "the head's CPU per
 * task").  One set per recording thread, since a construct keeps them
 * past plan_mtx; freed when the thread ends.  An array grown past
 * SPARE_MAX entries is freed instead of kept. */
#define SPARE_MAX 4096
struct tgt_spare {
    tgt_plan_op_t *ops;
    size_t capops;
    dm_buf_t **bufs, **temps;
    size_t capbufs, captemps;
    uint64_t *kargs;
    size_t capkargs;
    bool keyed; /* spare_key set on this thread: spare_free runs at its end */
};
/* Reached once per construct (tgt_plan_begin), then through the plan: in
 * a shared library each access to a thread-local variable is a call. */
static _Thread_local struct tgt_spare spare;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_free(void *arg)
{
    struct tgt_spare *sp = arg;
    free(sp->ops);
    free(sp->bufs);
    free(sp->temps);
    free(sp->kargs);
    memset(sp, 0, sizeof(*sp));
}

static void spare_key_make(void)
{
    if (pthread_key_create(&spare_key, spare_free) != 0)
        ompc_fatal("cannot create the recording threads' key");
}

static void spare_keyed(struct tgt_spare *sp)
{
    pthread_once(&spare_once, spare_key_make);
    pthread_setspecific(spare_key, sp);
    sp->keyed = true;
}

/* Array arr (capacity n) becomes spare field F of sp (this thread's)
 * unless one is there already or it is too large to keep; else it is
 * freed. */
#define SPARE_KEEP(sp, F, arr, n)                                                        \
    do {                                                                                 \
        if (!(sp)->F && (n) <= SPARE_MAX) {                                              \
            (sp)->F = (arr);                                                             \
            (sp)->cap##F = (n);                                                          \
            if (!(sp)->keyed)                                                            \
                spare_keyed(sp);                                                         \
        } else {                                                                         \
            free(arr);                                                                   \
        }                                                                                \
    } while (0)

void tgt_plan_begin(tgt_plan_t *p)
{
    struct tgt_spare *sp = &spare;
    memset(p, 0, sizeof(*p));
    p->spare = sp;
    p->ops = sp->ops;
    p->cap = sp->capops;
    sp->ops = NULL;
    sp->capops = 0;
    pthread_mutex_lock(&plan_mtx);
    p->ticket = ++plan_tickets;
}

void tgt_plan_mapped(tgt_plan_t *p)
{
    (void)p;
    pthread_mutex_unlock(&plan_mtx);
}

void tgt_mapped_begin(tgt_mapped_t *m, const tgt_plan_t *p)
{
    struct tgt_spare *sp = p->spare;
    memset(m, 0, sizeof(*m));
    m->bufs = sp->bufs;
    m->capbufs = sp->capbufs;
    m->temps = sp->temps;
    m->captemps = sp->captemps;
    m->kargs = sp->kargs;
    m->capkargs = sp->capkargs;
    sp->bufs = sp->temps = NULL;
    sp->kargs = NULL;
    sp->capbufs = sp->captemps = sp->capkargs = 0;
}

void tgt_mapped_release(tgt_mapped_t *m, const tgt_plan_t *p)
{
    struct tgt_spare *sp = p->spare;
    for (size_t i = 0; i < m->ntemps; i++)
        dm_free(tgt_rt->dm, m->temps[i]);
    SPARE_KEEP(sp, bufs, m->bufs, m->capbufs);
    SPARE_KEEP(sp, temps, m->temps, m->captemps);
    SPARE_KEEP(sp, kargs, m->kargs, m->capkargs);
    memset(m, 0, sizeof(*m));
}

void tgt_plan_post(tgt_plan_t *p) { p->post = true; }

void tgt_plan_end(tgt_plan_t *p)
{
    SPARE_KEEP(p->spare, ops, p->ops, p->cap);
    memset(p, 0, sizeof(*p));
}

static tgt_plan_op_t *plan_add(tgt_plan_t *p, tgt_plan_kind_t kind)
{
    p->ops = tgt_grow(p->ops, &p->cap, p->nops, sizeof(*p->ops), "planning data ops");
    tgt_plan_op_t *op = &p->ops[p->nops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    if (!p->post)
        p->npre = p->nops;
    return op;
}

/* Host bytes [src, src+len) into b at off: the bytes are taken when the
 * plan is recorded. */
static void plan_write(tgt_plan_t *p, dm_buf_t *b, size_t off, const void *src,
                       size_t len)
{
    if (len == 0)
        return;
    tgt_plan_op_t *op = plan_add(p, TGT_PLAN_WRITE);
    op->buf = b;
    op->off = off;
    op->len = len;
    op->src = src;
}

/* A device address into b at off (an attached pointer's device value). */
static void plan_write_value(tgt_plan_t *p, dm_buf_t *b, size_t off, uint64_t v)
{
    tgt_plan_op_t *op = plan_add(p, TGT_PLAN_WRITE_VALUE);
    op->buf = b;
    op->off = off;
    op->len = sizeof(v);
    op->value = v;
}

static void plan_read(tgt_plan_t *p, dm_buf_t *b, size_t off, void *dst, size_t len)
{
    if (len == 0)
        return;
    tgt_plan_op_t *op = plan_add(p, TGT_PLAN_READ);
    op->buf = b;
    op->off = off;
    op->len = len;
    op->host = dst;
}

static void plan_host_store(tgt_plan_t *p, void **slot, void *value)
{
    tgt_plan_op_t *op = plan_add(p, TGT_PLAN_HOST_STORE);
    op->host = slot;
    op->value = (uint64_t)(uintptr_t)value;
    op->len = sizeof(void *);
}

static void plan_free(tgt_plan_t *p, dm_buf_t *b)
{
    p->post = true; /* frees come after everything else of the node */
    tgt_plan_op_t *op = plan_add(p, TGT_PLAN_FREE);
    op->buf = b;
}

/* ----------------------------------------------------------------- table */
static tgt_map_t *map_of(ompc_tmap_node_t *n)
{
    return n ? OMPC_TMAP_ENTRY(n, tgt_map_t, node) : NULL;
}

static tgt_map_t *map_lookup_locked(uintptr_t begin, size_t size, bool *overlap_p)
{
    *overlap_p = false;
    tgt_map_t *m = map_of(ompc_tmap_floor(&tgt_rt->maps, begin));
    if (m && begin < m->hst_end) {
        if (begin + size <= m->hst_end)
            return m;
        *overlap_p = true;
        return m;
    }
    tgt_map_t *next = map_of(ompc_tmap_ceil(&tgt_rt->maps, begin));
    if (next && size && next->node.key < begin + size) {
        *overlap_p = true;
        return next;
    }
    return NULL;
}

static ompc_status_t map_insert_locked(uintptr_t begin, size_t size, dm_buf_t *buf,
                                       size_t buf_off, bool infinite, bool owns,
                                       tgt_map_t **m_p)
{
    tgt_map_t *m = calloc(1, sizeof(*m));
    if (!m)
        return OMPC_ERR_NOMEM;
    m->node.key = begin;
    m->hst_end = begin + size;
    m->buf = buf;
    m->buf_off = buf_off;
    m->infinite = infinite;
    m->owns_buf = owns;
    ompc_tmap_insert(&tgt_rt->maps, &m->node);
    *m_p = m;
    return OMPC_OK;
}

static void map_remove_locked(tgt_map_t *m)
{
    ompc_tmap_erase(&tgt_rt->maps, m->node.key);
    if (m->shadows) {
        if (m->sprev)
            m->sprev->snext = m->snext;
        else
            tgt_rt->shadowed = m->snext;
        if (m->snext)
            m->snext->sprev = m->sprev;
    }
    while (m->shadows) {
        tgt_shadow_t *s = m->shadows;
        m->shadows = s->next;
        free(s);
    }
}

static uint64_t dev_of(const tgt_map_t *m, uintptr_t host)
{
    return dm_buf_addr(m->buf) + m->buf_off + (host - m->node.key);
}

void tgt_map_dep_bufs(const tgt_dep_t *deps, int ndeps, dm_buf_t **bufs_p)
{
    pthread_mutex_lock(&tgt_rt->map_mtx);
    for (int d = 0; d < ndeps; d++) {
        bufs_p[d] = NULL;
        if (deps[d].type == TGT_DEP_ALL)
            continue;
        bool overlap;
        tgt_map_t *m = map_lookup_locked((uintptr_t)deps[d].addr, 1, &overlap);
        if (m && !overlap)
            bufs_p[d] = m->buf;
    }
    pthread_mutex_unlock(&tgt_rt->map_mtx);
}

uint64_t tgt_map_dev_addr(const void *host, size_t size, dm_buf_t **buf_p)
{
    bool overlap;
    pthread_mutex_lock(&tgt_rt->map_mtx);
    tgt_map_t *m = map_lookup_locked((uintptr_t)host, size, &overlap);
    uint64_t d = m && !overlap ? dev_of(m, (uintptr_t)host) : 0;
    if (buf_p)
        *buf_p = m && !overlap ? m->buf : NULL;
    pthread_mutex_unlock(&tgt_rt->map_mtx);
    return d;
}

/* ------------------------------------------------- the device routines */
ompc_status_t tgt_map_associate(const void *host, size_t size, dm_buf_t *b, size_t off)
{
    pthread_mutex_lock(&tgt_rt->map_mtx);
    bool overlap;
    tgt_map_t *m = map_lookup_locked((uintptr_t)host, size, &overlap);
    ompc_status_t st = OMPC_ERR_INVALID;
    if (!m) {
        /* Associated memory stays mapped until disassociated. */
        st = map_insert_locked((uintptr_t)host, size, b, off, true, false, &m);
    } else if (!overlap && m->buf == b &&
               m->buf_off + ((uintptr_t)host - m->node.key) == off) {
        st = OMPC_OK; /* the same association again */
    }
    pthread_mutex_unlock(&tgt_rt->map_mtx);
    return st;
}

ompc_status_t tgt_map_disassociate(const void *host)
{
    pthread_mutex_lock(&tgt_rt->map_mtx);
    bool overlap;
    tgt_map_t *m = map_lookup_locked((uintptr_t)host, 0, &overlap);
    ompc_status_t st = OMPC_ERR_INVALID;
    if (m && !overlap && m->node.key == (uintptr_t)host && m->infinite && !m->owns_buf) {
        map_remove_locked(m);
        free(m);
        st = OMPC_OK;
    }
    pthread_mutex_unlock(&tgt_rt->map_mtx);
    return st;
}

void tgt_map_dump(void)
{
    pthread_mutex_lock(&tgt_rt->map_mtx);
    printf("ompc device 0 mapping table:\n%-18s %-18s %10s %8s %8s\n", "host", "device",
           "bytes", "dynref", "holdref");
    for (ompc_tmap_node_t *n = ompc_tmap_ceil(&tgt_rt->maps, 0); n;) {
        tgt_map_t *m = OMPC_TMAP_ENTRY(n, tgt_map_t, node);
        printf("%#-18lx %#-18lx %10zu %8s %8lld\n", (unsigned long)m->node.key,
               (unsigned long)(dm_buf_addr(m->buf) + m->buf_off),
               (size_t)(m->hst_end - m->node.key),
               m->infinite ? "INF" : tgt_fmt_("%lld", (long long)m->dyn_ref),
               (long long)m->hold_ref);
        n = ompc_tmap_ceil(&tgt_rt->maps,
                           m->hst_end > m->node.key ? m->hst_end : m->node.key + 1);
    }
    pthread_mutex_unlock(&tgt_rt->map_mtx);
}

void tgt_map_add_global(tgt_global_t *g)
{
    tgt_map_t *m;
    pthread_mutex_lock(&tgt_rt->map_mtx);
    if (map_insert_locked((uintptr_t)g->host_addr, g->size, g->buf, 0, true, false, &m) !=
        OMPC_OK)
        ompc_fatal("out of memory mapping declare target variable %s", g->name);
    pthread_mutex_unlock(&tgt_rt->map_mtx);
}

void tgt_mapped_add(tgt_mapped_t *m, dm_buf_t *b)
{
    for (size_t i = 0; i < m->nbufs; i++)
        if (m->bufs[i] == b)
            return;
    m->bufs = tgt_grow(m->bufs, &m->capbufs, m->nbufs, sizeof(*m->bufs),
                       "collecting kernel buffers");
    m->bufs[m->nbufs++] = b;
}

static void mapped_add_temp(tgt_mapped_t *m, dm_buf_t *b)
{
    m->temps = tgt_grow(m->temps, &m->captemps, m->ntemps, sizeof(*m->temps),
                        "firstprivate copies");
    m->temps[m->ntemps++] = b;
}

static void kargs_push(tgt_mapped_t *m, uint64_t v)
{
    m->kargs = tgt_grow(m->kargs, &m->capkargs, m->nkargs, sizeof(*m->kargs),
                        "building kernel arguments");
    m->kargs[m->nkargs++] = v;
}

/* A value passed to a kernel that is a device address (is_device_ptr, or a
 * pointer into memory from omp_target_alloc) keeps its buffer with the
 * kernel, so the executor gets the data.  Values are looked up in batches
 * (devvals_flush, at the latest when tgt_data_begin ends): a lock of the
 * data manager per value was most of the mutex calls of a recorded task
 * with a few scalars and device pointers (docs/performance.md, "the
 * head's CPU per task, continued"). */
static void devvals_flush(tgt_mapped_t *out)
{
    dm_buf_t *bufs[TGT_DEVVALS];
    dm_bufs_find(tgt_rt->dm, out->devvals, out->ndevvals, bufs);
    for (size_t i = 0; i < out->ndevvals; i++)
        if (bufs[i])
            tgt_mapped_add(out, bufs[i]);
    out->ndevvals = 0;
}

static void note_device_value(tgt_mapped_t *out, uint64_t v)
{
    if (out->ndevvals == TGT_DEVVALS)
        devvals_flush(out);
    out->devvals[out->ndevvals++] = v;
}

static _Noreturn void overlap_error(const void *loc, uintptr_t begin, size_t size,
                                    const tgt_map_t *m)
{
    TGT_USER_ERROR(loc,
                   "mapping of host range %#lx (%zu bytes) partially "
                   "overlaps an existing mapping of %#lx (%zu bytes): an "
                   "existing mapping cannot be extended",
                   (unsigned long)begin, size, (unsigned long)m->node.key,
                   (size_t)(m->hst_end - m->node.key));
}

static void copy_to(tgt_plan_t *p, tgt_map_t *m, uintptr_t begin, size_t size);

/* Map one host range (the object part of an argument).  Returns the entry,
 * or NULL for a zero-length section that is not mapped. */
static tgt_map_t *map_one(tgt_plan_t *p, const tgt_args_t *a, int32_t i, uintptr_t begin,
                          size_t size, int64_t type, bool update_ref, bool *is_new_p)
{
    bool overlap;
    *is_new_p = false;
    tgt_map_t *m = map_lookup_locked(begin, size, &overlap);
    if (overlap)
        overlap_error(a->loc, begin, size, m);
    if (m) {
        if (update_ref && !m->infinite) {
            if (type & TGT_MAP_OMPX_HOLD)
                m->hold_ref++;
            else
                m->dyn_ref++;
        }
        /* A struct member is copied when its parent entry was created by
         * this same construct (the parent holds the only reference). */
        bool first = !update_ref && !m->infinite && m->dyn_ref + m->hold_ref == 1;
        if ((type & TGT_MAP_TO) && ((type & TGT_MAP_ALWAYS) || first))
            copy_to(p, m, begin, size);
        return m;
    }
    if (type & TGT_MAP_PRESENT)
        TGT_USER_ERROR(a->loc,
                       "'present' map of host address %#lx (%zu bytes, "
                       "argument %d): the data is not mapped on the device",
                       (unsigned long)begin, size, i);
    if (size == 0)
        return NULL;
    dm_buf_t *buf;
    ompc_status_t st = dm_alloc(tgt_rt->dm, size, &buf);
    if (st != OMPC_OK)
        TGT_USER_ERROR(a->loc, "cannot allocate %zu bytes of device memory: %s", size,
                       ompc_status_str(st));
    if (map_insert_locked(begin, size, buf, 0, false, true, &m) != OMPC_OK)
        ompc_fatal("out of memory in the mapping table");
    if (type & TGT_MAP_OMPX_HOLD)
        m->hold_ref = 1;
    else
        m->dyn_ref = 1;
    *is_new_p = true;
    if (type & TGT_MAP_TO)
        plan_write(p, buf, 0, (const void *)begin, size);
    if (tgt_rt->info)
        fprintf(stderr, "[ompc info] r0 map: host %#lx (%zu B) -> device %#lx%s\n",
                (unsigned long)begin, size, (unsigned long)dm_buf_addr(buf),
                (type & TGT_MAP_TO) ? " (copied to)" : "");
    return m;
}

/* Point the device copy of the pointer at host address `slot` (inside
 * mapping pm) to the device copy of the object it points to. */
static void attach_pointer(tgt_plan_t *p, tgt_map_t *pm, uintptr_t slot, tgt_map_t *obj,
                           uintptr_t obj_begin)
{
    void *host_value = *(void **)slot;
    uint64_t dev_value = dev_of(obj, obj_begin) - (obj_begin - (uintptr_t)host_value);
    for (tgt_shadow_t *s = pm->shadows; s; s = s->next) {
        if ((uintptr_t)s->host_slot != slot)
            continue;
        if (s->dev_value == dev_value)
            return; /* attached already */
        /* The pointer now designates another object: re-attach. */
        s->host_value = host_value;
        s->dev_value = dev_value;
        s->obj_dev = dev_of(obj, obj_begin);
        plan_write_value(p, pm->buf, pm->buf_off + (slot - pm->node.key), dev_value);
        return;
    }
    tgt_shadow_t *s = malloc(sizeof(*s));
    if (!s)
        ompc_fatal("out of memory attaching a pointer");
    s->host_slot = (void **)slot;
    s->host_value = host_value;
    s->dev_value = dev_value;
    s->obj_dev = dev_of(obj, obj_begin);
    if (!pm->shadows) {
        pm->sprev = NULL;
        pm->snext = tgt_rt->shadowed;
        if (pm->snext)
            pm->snext->sprev = pm;
        tgt_rt->shadowed = pm;
    }
    s->next = pm->shadows;
    pm->shadows = s;
    plan_write_value(p, pm->buf, pm->buf_off + (slot - pm->node.key), dev_value);
}

/* Call fn on every shadow pointer whose slot lies in [begin, begin+size). */
static void for_shadows(tgt_plan_t *p, uintptr_t begin, size_t size,
                        void (*fn)(tgt_plan_t *p, tgt_map_t *m, tgt_shadow_t *s))
{
    tgt_map_t *m = map_of(ompc_tmap_floor(&tgt_rt->maps, begin));
    if (!m || m->hst_end <= begin)
        m = map_of(ompc_tmap_ceil(&tgt_rt->maps, begin));
    while (m && m->node.key < begin + size) {
        for (tgt_shadow_t *s = m->shadows; s; s = s->next)
            if ((uintptr_t)s->host_slot >= begin &&
                (uintptr_t)s->host_slot + sizeof(void *) <= begin + size)
                fn(p, m, s);
        if (m->hst_end == m->node.key)
            break;
        m = map_of(ompc_tmap_ceil(&tgt_rt->maps, m->hst_end));
    }
}

/* The host copy was refreshed from the device: attached pointers get their
 * host values back. */
static void shadow_restore_host(tgt_plan_t *p, tgt_map_t *m, tgt_shadow_t *s)
{
    (void)m;
    plan_host_store(p, s->host_slot, s->host_value);
}

/* The device copy was overwritten from the host: attached pointers get
 * their device values back. */
static void shadow_restore_device(tgt_plan_t *p, tgt_map_t *m, tgt_shadow_t *s)
{
    plan_write_value(p, m->buf, m->buf_off + ((uintptr_t)s->host_slot - m->node.key),
                     s->dev_value);
}

static void copy_to(tgt_plan_t *p, tgt_map_t *m, uintptr_t begin, size_t size)
{
    if (size == 0)
        return;
    plan_write(p, m->buf, m->buf_off + (begin - m->node.key), (const void *)begin, size);
    for_shadows(p, begin, size, shadow_restore_device);
}

static void copy_from(tgt_plan_t *p, tgt_map_t *m, uintptr_t begin, size_t size)
{
    if (size == 0)
        return;
    plan_read(p, m->buf, m->buf_off + (begin - m->node.key), (void *)begin, size);
    for_shadows(p, begin, size, shadow_restore_host);
}

/* ------------------------------------------------ user-defined mappers */
/* A map argument with a user-defined mapper stands for the components its
 * mapper function pushes (through __tgt_push_mapper_component into this
 * handle); mapping, unmapping and updates expand it and recurse. */
typedef struct mapper_components {
    int64_t n, cap;
    void **base, **begin;
    int64_t *sizes, *types;
} mapper_components_t;
typedef void (*mapper_fn_t)(void *handle, void *base, void *begin, int64_t size,
                            int64_t type, void *name);

int64_t __tgt_mapper_num_components(void *handle)
{
    return ((mapper_components_t *)handle)->n;
}

void __tgt_push_mapper_component(void *handle, void *base, void *begin, int64_t size,
                                 int64_t type, void *name)
{
    (void)name;
    mapper_components_t *c = handle;
    if (c->n == c->cap) {
        int64_t cap = c->cap ? 2 * c->cap : 8;
        void **nb = realloc(c->base, (size_t)cap * sizeof(void *));
        void **np = realloc(c->begin, (size_t)cap * sizeof(void *));
        int64_t *ns = realloc(c->sizes, (size_t)cap * sizeof(int64_t));
        int64_t *nt = realloc(c->types, (size_t)cap * sizeof(int64_t));
        if (!nb || !np || !ns || !nt)
            ompc_fatal("out of memory expanding a user-defined mapper");
        c->base = nb;
        c->begin = np;
        c->sizes = ns;
        c->types = nt;
        c->cap = cap;
    }
    c->base[c->n] = base;
    c->begin[c->n] = begin;
    c->sizes[c->n] = size;
    c->types[c->n] = type;
    c->n++;
}

/* Argument i of a through its mapper, as the arguments *sub (which point
 * into c: the caller frees it with mapper_components_free). */
static void mapper_expand(const tgt_args_t *a, int32_t i, mapper_components_t *c,
                          tgt_args_t *sub)
{
    memset(c, 0, sizeof(*c));
    mapper_fn_t fn = (mapper_fn_t)a->mappers[i];
    fn(c, a->base[i], a->begin[i], a->sizes[i], a->types[i], NULL);
    *sub = (tgt_args_t){(int32_t)c->n, c->base, c->begin, c->sizes,
                        c->types,      NULL,    a->loc};
}

static void mapper_components_free(mapper_components_t *c)
{
    free(c->base);
    free(c->begin);
    free(c->sizes);
    free(c->types);
    memset(c, 0, sizeof(*c));
}

/* out collects buffers (and, when kargs is true, kernel arguments). */
static void data_begin_locked(tgt_plan_t *p, const tgt_args_t *a, tgt_mapped_t *out,
                              bool kargs)
{
    /* The last plain kernel argument: its host base and what the kernel
     * gets for it.  Further sections of the same array (clang passes them
     * as entries with that base, not as arguments) are reached by the
     * kernel through that one address, so on the device they must sit at
     * the same offsets from it as on the host: sections mapped one by one
     * are separate blocks, and the kernel would read and write beside
     * them (LLVM's runtime crashes there). */
    uintptr_t arg_base = 0;
    uint64_t arg_dev = 0;
    bool have_arg = false;
    for (int32_t i = 0; i < a->n; i++) {
        int64_t t = a->types[i];
        uintptr_t begin = (uintptr_t)a->begin[i];
        uintptr_t base = (uintptr_t)a->base[i];
        size_t size = (size_t)a->sizes[i];
        if (a->mappers && a->mappers[i]) {
            mapper_components_t c;
            tgt_args_t sub;
            mapper_expand(a, i, &c, &sub);
            data_begin_locked(p, &sub, out, false);
            mapper_components_free(&c);
            if (out && kargs && (t & TGT_MAP_TARGET_PARAM)) {
                bool overlap;
                tgt_map_t *m = map_lookup_locked(begin, size, &overlap);
                kargs_push(out, m && !overlap ? dev_of(m, begin) - (begin - base)
                                              : (uint64_t)base);
            }
            continue;
        }
        if (t & TGT_MAP_LITERAL) {
            /* clang's entry for what a lambda's closure refers to (a
             * variable captured by reference, a pointer or `this`): LLVM's
             * runtime writes the device address into the closure's device
             * copy.  Ours does not yet, and the kernel would reach host
             * memory through the closure: wrong values on the head, a crash
             * on a worker. */
            if (kargs && (t & TGT_MAP_PTR_AND_OBJ))
                TGT_USER_ERROR(a->loc,
                               "a lambda called in this target region was "
                               "made on the host and captures a variable by "
                               "reference, a pointer or 'this' (host address "
                               "%p, argument %d); ompc cannot give the lambda's "
                               "device copy the device addresses yet: capture "
                               "by value, or make the lambda inside the region",
                               a->begin[i], i);
            if (out && kargs && (t & TGT_MAP_TARGET_PARAM)) {
                kargs_push(out, (uint64_t)begin);
                note_device_value(out, (uint64_t)begin);
            }
            continue;
        }
        if (t & TGT_MAP_PRIVATE) {
            if (!out)
                continue;
            /* firstprivate by reference: a fresh device copy per launch. */
            dm_buf_t *tmp;
            if (dm_alloc(tgt_rt->dm, size ? size : 1, &tmp) != OMPC_OK)
                TGT_USER_ERROR(a->loc,
                               "cannot allocate a firstprivate argument "
                               "(%zu bytes) on the device",
                               size);
            plan_write(p, tmp, 0, (const void *)begin, size);
            mapped_add_temp(out, tmp);
            tgt_mapped_add(out, tmp);
            if (kargs && (t & TGT_MAP_TARGET_PARAM))
                kargs_push(out, dm_buf_addr(tmp) - (begin - base));
            continue;
        }
        bool member = (t & TGT_MAP_MEMBER_OF) != 0;
        tgt_map_t *pm = NULL;
        if (t & TGT_MAP_PTR_AND_OBJ) {
            /* The pointer itself lives in mapped data (a struct member) or
             * gets a mapping of its own. */
            bool is_new;
            pm = map_one(p, a, i, base, sizeof(void *),
                         t & ~(int64_t)(TGT_MAP_TO | TGT_MAP_FROM | TGT_MAP_PRESENT |
                                        TGT_MAP_ALWAYS),
                         !member, &is_new);
        }
        /* The object of a pointer-and-object member is an allocation of its
         * own, with its own reference count; only the pointer slot lives
         * inside the parent. */
        bool own_ref = !member || (t & TGT_MAP_PTR_AND_OBJ);
        bool is_new;
        tgt_map_t *m = map_one(p, a, i, begin, size, t, own_ref, &is_new);
        if (pm && m)
            attach_pointer(p, pm, base, m, begin);
        if ((t & TGT_MAP_RETURN_PARAM) && m)
            a->base[i] = (void *)(uintptr_t)(dev_of(m, begin) - (begin - base));
        if (!out)
            continue;
        if (m)
            tgt_mapped_add(out, m->buf);
        if (pm)
            tgt_mapped_add(out, pm->buf);
        bool plain = !member && !(t & TGT_MAP_PTR_AND_OBJ);
        if (kargs && plain && !(t & TGT_MAP_TARGET_PARAM) && have_arg && m &&
            base == arg_base && dev_of(m, begin) != arg_dev + (begin - base))
            TGT_USER_ERROR(a->loc,
                           "map of [%p, +%zu): a section of the same array "
                           "as an earlier map of this construct, but the two are "
                           "separate blocks on the device (mapped one by one), and "
                           "the kernel reaches both through one address; map one "
                           "section that covers both first (target enter data)",
                           (void *)begin, size);
        if (kargs && (t & TGT_MAP_TARGET_PARAM)) {
            /* For a pointer-and-object argument the kernel gets the object
             * through the pointer's value, not the pointer's address. */
            if (t & TGT_MAP_PTR_AND_OBJ)
                base = (uintptr_t)*(void **)base;
            uint64_t v;
            if (m)
                v = dev_of(m, begin) - (begin - base);
            else
                v = (uint64_t)base; /* unmapped zero-length section */
            kargs_push(out, v);
            if (!m)
                note_device_value(out, v);
            have_arg = plain && m;
            arg_base = base;
            arg_dev = v;
        }
    }
}

/* A kernel reaches data through pointers attached inside the data it maps
 * (a struct's pointer member mapped by an earlier construct, a link
 * variable's reference pointer): those objects travel with it too,
 * transitively.  Only objects still mapped where the pointer was attached
 * count: an unmapped one's buffer is freed when its construct's node runs,
 * and a kernel holding it would start on freed memory. */
static void add_attached_locked(tgt_mapped_t *out)
{
    if (!tgt_rt->shadowed)
        return;
    /* out->bufs grows while we walk it: that is the transitive part. */
    for (size_t i = 0; i < out->nbufs; i++)
        for (tgt_map_t *m = tgt_rt->shadowed; m; m = m->snext)
            if (m->buf == out->bufs[i])
                for (tgt_shadow_t *s = m->shadows; s; s = s->next) {
                    uintptr_t obj = (uintptr_t)s->host_value +
                                    (s->obj_dev - s->dev_value);
                    tgt_map_t *om = map_of(ompc_tmap_floor(&tgt_rt->maps, obj));
                    if (om && obj < om->hst_end && dev_of(om, obj) == s->obj_dev)
                        tgt_mapped_add(out, om->buf);
                }
}

ompc_status_t tgt_data_begin(const tgt_args_t *a, tgt_mapped_t *out, tgt_plan_t *p)
{
    pthread_mutex_lock(&tgt_rt->map_mtx);
    data_begin_locked(p, a, out, true);
    if (out && out->ndevvals)
        devvals_flush(out);
    if (out)
        add_attached_locked(out);
    pthread_mutex_unlock(&tgt_rt->map_mtx);
    return OMPC_OK;
}

/* Unmap one range; entries to free are collected in `dead` (freed by the
 * caller outside the lock). */
static void unmap_one(tgt_plan_t *p, const tgt_args_t *a, int32_t i, uintptr_t begin,
                      size_t size, int64_t t, bool update_ref, bool parent_delete,
                      tgt_map_t ***dead, size_t *ndead)
{
    bool overlap;
    tgt_map_t *m = map_lookup_locked(begin, size, &overlap);
    if (!m || overlap) {
        if (t & TGT_MAP_PRESENT)
            TGT_USER_ERROR(a->loc,
                           "'present' unmap of host address %#lx (%zu "
                           "bytes, argument %d): the data is not mapped",
                           (unsigned long)begin, size, i);
        return;
    }
    bool last;
    if (update_ref) {
        if (!m->infinite) {
            if (t & TGT_MAP_DELETE) {
                m->dyn_ref = 0;
            } else if (t & TGT_MAP_OMPX_HOLD) {
                if (m->hold_ref > 0)
                    m->hold_ref--;
            } else if (m->dyn_ref > 0) {
                m->dyn_ref--;
            }
        }
        last = !m->infinite && m->dyn_ref == 0 && m->hold_ref == 0;
    } else {
        /* A struct member: its entry goes away with the parent's. */
        last = !m->infinite && (parent_delete || (m->dyn_ref + m->hold_ref <= 1));
    }
    if ((t & TGT_MAP_FROM) && (last || (t & TGT_MAP_ALWAYS)))
        copy_from(p, m, begin, size);
    if (last && update_ref) {
        map_remove_locked(m);
        (*dead)[(*ndead)++] = m;
    }
}

/* Mappings a construct removes; the first DEAD_STACK on the stack (a
 * block per construct was one of the head's mallocs per task). */
#define DEAD_STACK 32
typedef struct dead_list {
    tgt_map_t **v;
    size_t n, cap;
    tgt_map_t *stk[DEAD_STACK];
} dead_list_t;

static void data_end_locked(tgt_plan_t *p, const tgt_args_t *a, dead_list_t *dead)
{
    if (dead->n + 2 * (size_t)a->n + 1 > dead->cap) {
        size_t cap = dead->n + 2 * (size_t)a->n + 16;
        tgt_map_t **nv = realloc(dead->v == dead->stk ? NULL : dead->v,
                                 cap * sizeof(*nv));
        if (!nv)
            ompc_fatal("out of memory unmapping");
        if (dead->v == dead->stk)
            memcpy(nv, dead->stk, dead->n * sizeof(*nv));
        dead->v = nv;
        dead->cap = cap;
    }
    for (int32_t i = a->n - 1; i >= 0; i--) {
        int64_t t = a->types[i];
        if (t & (TGT_MAP_LITERAL | TGT_MAP_PRIVATE))
            continue;
        if (a->mappers && a->mappers[i]) {
            mapper_components_t c;
            tgt_args_t sub;
            mapper_expand(a, i, &c, &sub);
            data_end_locked(p, &sub, dead);
            mapper_components_free(&c);
            continue;
        }
        uintptr_t begin = (uintptr_t)a->begin[i];
        uintptr_t base = (uintptr_t)a->base[i];
        size_t size = (size_t)a->sizes[i];
        bool member = (t & TGT_MAP_MEMBER_OF) != 0 && !(t & TGT_MAP_PTR_AND_OBJ);
        bool parent_delete = false;
        if (member) {
            int32_t p = (int32_t)((uint64_t)t >> 48) - 1;
            parent_delete = p >= 0 && p < a->n && (a->types[p] & TGT_MAP_DELETE);
        }
        unmap_one(p, a, i, begin, size, t, !member, parent_delete, &dead->v, &dead->n);
        if ((t & TGT_MAP_PTR_AND_OBJ) && !(t & TGT_MAP_MEMBER_OF))
            unmap_one(p, a, i, base, sizeof(void *),
                      t & (TGT_MAP_DELETE | TGT_MAP_OMPX_HOLD), true, false, &dead->v,
                      &dead->n);
    }
}

ompc_status_t tgt_data_end(const tgt_args_t *a, tgt_plan_t *p)
{
    dead_list_t dead;
    dead.v = dead.stk;
    dead.n = 0;
    dead.cap = DEAD_STACK;
    pthread_mutex_lock(&tgt_rt->map_mtx);
    data_end_locked(p, a, &dead);
    pthread_mutex_unlock(&tgt_rt->map_mtx);
    for (size_t k = 0; k < dead.n; k++) {
        tgt_map_t *m = dead.v[k];
        if (tgt_rt->info)
            fprintf(stderr, "[ompc info] r0 unmap: host %#lx (%zu B)\n",
                    (unsigned long)m->node.key, (size_t)(m->hst_end - m->node.key));
        if (m->owns_buf)
            plan_free(p, m->buf);
        free(m);
    }
    if (dead.v != dead.stk)
        free(dead.v);
    return OMPC_OK;
}

/* One dimension of a non-contiguous update (clang's descriptor: outermost
 * dimension first, strides in bytes, the element itself as the last
 * dimension). */
typedef struct tgt_nc_dim {
    uint64_t offset, count, stride;
} tgt_nc_dim_t;

/* Update every contiguous run of the section, recursing over dimensions;
 * the innermost dimensions that are contiguous together form one run. */
static void update_nc(tgt_plan_t *p, const tgt_args_t *a, int64_t t, uintptr_t base,
                      const tgt_nc_dim_t *d, int nd, int dim, uint64_t off, uint64_t run,
                      int run_dims)
{
    if (dim == nd - run_dims) {
        uintptr_t begin = base + off;
        bool overlap;
        tgt_map_t *m = map_lookup_locked(begin, run, &overlap);
        if (!m || overlap) {
            if (t & TGT_MAP_PRESENT)
                TGT_USER_ERROR(a->loc,
                               "'present' update of host address %#lx "
                               "(%lu bytes): the data is not mapped",
                               (unsigned long)begin, (unsigned long)run);
            return;
        }
        if (t & TGT_MAP_TO)
            copy_to(p, m, begin, run);
        if (t & TGT_MAP_FROM)
            copy_from(p, m, begin, run);
        return;
    }
    for (uint64_t k = 0; k < d[dim].count; k++)
        update_nc(p, a, t, base, d, nd, dim + 1,
                  off + (d[dim].offset + k) * d[dim].stride, run, run_dims);
}

static void update_noncontiguous(tgt_plan_t *p, const tgt_args_t *a, int32_t i)
{
    int nd = (int)a->sizes[i];
    const tgt_nc_dim_t *d = (const tgt_nc_dim_t *)a->begin[i];
    if (nd < 1)
        return;
    /* Merge trailing dimensions while each one exactly fills the stride of
     * the one outside it. */
    uint64_t run = d[nd - 1].count * d[nd - 1].stride;
    int run_dims = 1;
    while (run_dims < nd && d[nd - run_dims].offset == 0 &&
           d[nd - run_dims].count * d[nd - run_dims].stride ==
               d[nd - run_dims - 1].stride) {
        run_dims++;
        run = d[nd - run_dims].count * d[nd - run_dims].stride;
    }
    /* The offset of the outermost merged dimension starts every run. */
    int first_merged = nd - run_dims;
    uint64_t inner_off = d[first_merged].offset * d[first_merged].stride;
    update_nc(p, a, a->types[i], (uintptr_t)a->base[i] + inner_off, d, nd, 0, 0, run,
              run_dims);
}

static void data_update_locked(tgt_plan_t *p, const tgt_args_t *a)
{
    for (int32_t i = 0; i < a->n; i++) {
        int64_t t = a->types[i];
        uintptr_t begin = (uintptr_t)a->begin[i];
        size_t size = (size_t)a->sizes[i];
        if (a->mappers && a->mappers[i]) {
            mapper_components_t c;
            tgt_args_t sub;
            mapper_expand(a, i, &c, &sub);
            data_update_locked(p, &sub);
            mapper_components_free(&c);
            continue;
        }
        if (t & TGT_MAP_NON_CONTIG) {
            update_noncontiguous(p, a, i);
            continue;
        }
        bool overlap;
        tgt_map_t *m = map_lookup_locked(begin, size, &overlap);
        if (!m || overlap) {
            if (t & TGT_MAP_PRESENT)
                TGT_USER_ERROR(a->loc,
                               "'present' update of host address %#lx "
                               "(%zu bytes): the data is not mapped",
                               (unsigned long)begin, size);
            continue; /* OpenMP: updates of unmapped data do nothing */
        }
        if (t & TGT_MAP_TO)
            copy_to(p, m, begin, size);
        if (t & TGT_MAP_FROM)
            copy_from(p, m, begin, size);
    }
}

ompc_status_t tgt_data_update(const tgt_args_t *a, tgt_plan_t *p)
{
    pthread_mutex_lock(&tgt_rt->map_mtx);
    data_update_locked(p, a);
    pthread_mutex_unlock(&tgt_rt->map_mtx);
    return OMPC_OK;
}
