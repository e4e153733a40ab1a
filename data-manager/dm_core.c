/* Data manager: the device address range, buffer locations, forwarding and
 * invalidation.  Head-side state sits under one mutex that is never held
 * across a wait on an event. */
#define _GNU_SOURCE
#include "dm_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

/* ------------------------------------------------- executor-side functions */
/* args {addr, span, epoch, data follows}: map the pages and expose them
 * to events (when the data lands, if it follows: dm_pages_commit_ahead). */
static ompc_status_t dm_fn_commit(ev_exec_info_t *info)
{
    uint64_t a[4];
    if (info->args_size != sizeof(a))
        return OMPC_ERR_INVALID;
    memcpy(a, info->args, sizeof(a));
    return dm_exec_commit_ahead(info->ctx, a[0], a[1], a[2], 0, a[3] != 0);
}

/* A launch that runs ahead commits its buffers itself (tgt_ahead.c), so a
 * commit may find the pages there already: mapping them again would
 * replace their data with zeros. */
ompc_status_t dm_exec_commit(ev_ctx_t *ev, dm_addr_t addr, size_t span, uint64_t epoch)
{
    return dm_pages_commit(ev, (uintptr_t)addr, span, epoch);
}

ompc_status_t dm_exec_commit_ahead(ev_ctx_t *ev, dm_addr_t addr, size_t span,
                                   uint64_t epoch, uint64_t seq, bool data_follows)
{
    return dm_pages_commit_ahead(ev, (uintptr_t)addr, span, epoch, seq, data_follows);
}

static void cand_remove(dm_ctx_t *dm, int exec, dm_buf_t *b);

/* The number a commit or close of b's copy on exec carries: the buffer's
 * serial in the high half (a new buffer may take a freed one's address
 * while a close of the old one waits on a worker), its last close's
 * number in the low half. */
static uint64_t cnum(const dm_buf_t *b, int exec)
{
    return (uint64_t)b->serial << 32 | (b->cepoch[exec] & 0xffffffffu);
}

/* args {addr, span}: forget the pages (memory goes back to the system, the
 * addresses stay reserved). */
static ompc_status_t dm_fn_decommit(ev_exec_info_t *info)
{
    uint64_t a[2];
    if (info->args_size != sizeof(a))
        return OMPC_ERR_INVALID;
    memcpy(a, info->args, sizeof(a));
    dm_pages_map_lock();
    ompc_status_t st = ev_mem_unregister(info->ctx, (void *)(uintptr_t)a[0]);
    dm_pages_forget((uintptr_t)a[0]);
    if (st == OMPC_OK) {
        dm_pages_kept_forget((uintptr_t)a[0], (size_t)a[1]);
        void *p = mmap((void *)(uintptr_t)a[0], a[1], PROT_NONE,
                       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        st = p == MAP_FAILED ? OMPC_ERR_NOMEM : OMPC_OK;
    }
    dm_pages_map_unlock();
    return st;
}

/* args {addr, span, epoch}: close a stale copy now (dm_close_now). */
static ompc_status_t dm_fn_close(ev_exec_info_t *info)
{
    uint64_t a[3];
    if (info->args_size != sizeof(a))
        return OMPC_ERR_INVALID;
    memcpy(a, info->args, sizeof(a));
    dm_pages_close_now((uintptr_t)a[0], (size_t)a[1], a[2]);
    return OMPC_OK;
}

/* ------------------------------------------------------------ lifecycle */
/* Try to reserve [c, c+size) on this rank; every rank learns whether all
 * of them succeeded. */
static bool dm_try_everywhere(ev_ctx_t *ev, uintptr_t c, size_t size)
{
    void *mine = mmap((void *)c, size, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                      -1, 0);
    bool ok = mine == (void *)c;
    if (!ok && mine != MAP_FAILED)
        munmap(mine, size); /* an old kernel ignored the flag */
    int64_t failed = !ok;
    ev_coll_max(ev, &failed);
    if (failed && ok)
        munmap(mine, size);
    return !failed;
}

/* Reserve the same address range on every rank.  With address-space
 * randomisation each rank's libraries sit somewhere else, so one rank's
 * choice may be taken on another: every rank proposes where its kernel
 * would put such a range (valid memory, sanitizers included), plus a few
 * shifted variants, and all ranks try the candidates in turn. */
static ompc_status_t dm_reserve(dm_ctx_t *dm)
{
    ev_ctx_t *ev = dm->ev;
    size_t size = (size_t)ompc_config_get()->device_va;
    int n = ev_ctx_size(ev);
    uint64_t *props = calloc((size_t)n, sizeof(uint64_t));
    if (!props)
        return OMPC_ERR_NOMEM;
    for (int round = 0; round < 4; round++) {
        void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        uint64_t mine = p == MAP_FAILED ? 0 : (uint64_t)(uintptr_t)p;
        if (p != MAP_FAILED)
            munmap(p, size);
        ev_coll_allgather(ev, &mine, sizeof(mine), props);
        /* Candidates: each proposal, then each moved down by 2x and 4x the
         * size (below the libraries, still in the mapping area). */
        for (int shift = 0; shift < 3; shift++) {
            for (int r = 0; r < n; r++) {
                uint64_t c = props[r];
                uint64_t delta = shift ? (uint64_t)size * (2u << (shift - 1)) : 0;
                if (c == 0 || c < delta + ((uint64_t)1 << 32))
                    continue;
                c -= delta;
                if (dm_try_everywhere(ev, (uintptr_t)c, size)) {
                    dm->va_base = (uintptr_t)c;
                    dm->va_size = size;
                    free(props);
                    return OMPC_OK;
                }
            }
        }
    }
    free(props);
    ompc_fatal("no address range of %zu bytes is free on every rank for device "
               "memory; lower OMPC_DEVICE_VA",
               size);
}

ompc_status_t dm_ctx_create(ev_ctx_t *ev, dm_ctx_t **dm_p)
{
    dm_ctx_t *dm = calloc(1, sizeof(*dm));
    if (!dm)
        return OMPC_ERR_NOMEM;
    dm->ev = ev;
    int size = ev_ctx_size(ev);
    dm->nexec = size > 1 ? size - 1 : 1;
    dm->exec_rank = calloc((size_t)dm->nexec, sizeof(int));
    dm->kept = calloc((size_t)dm->nexec, sizeof(size_t));
    dm->cand = calloc((size_t)dm->nexec, sizeof(*dm->cand));
    dm->ncand = calloc(2 * (size_t)dm->nexec, sizeof(size_t));
    if (!dm->exec_rank || !dm->kept || !dm->cand || !dm->ncand) {
        free(dm->exec_rank);
        free(dm->kept);
        free(dm->cand);
        free(dm->ncand);
        free(dm);
        return OMPC_ERR_NOMEM;
    }
    dm->capcand = dm->ncand + dm->nexec;
    /* With one rank the head is the only executor: no copy elsewhere. */
    dm->close_stale = size > 1 && ompc_config_get()->page_faults;
    dm->keep_max = (size_t)ompc_config_get()->device_keep;
    for (int i = 0; i < dm->nexec; i++)
        dm->exec_rank[i] = size > 1 ? i + 1 : 0;
    pthread_mutex_init(&dm->mtx, NULL);
    pthread_cond_init(&dm->pin_cond, NULL);
    ompc_status_t st = ev_fn_register(ev, "dm.commit", dm_fn_commit, EV_FN_INLINE,
                                      &dm->fn_commit);
    if (st == OMPC_OK)
        st = ev_fn_register(ev, "dm.decommit", dm_fn_decommit, EV_FN_INLINE,
                            &dm->fn_decommit);
    if (st == OMPC_OK)
        st = ev_fn_register(ev, "dm.close", dm_fn_close, EV_FN_INLINE, &dm->fn_close);
    if (st != OMPC_OK) {
        free(dm->exec_rank);
        free(dm->kept);
        free(dm->cand);
        free(dm->ncand);
        free(dm);
        return st;
    }
    dm_reserve(dm);
    dm->bump = dm->va_base;
    st = dm_pages_create(dm, size == 1 || ev_ctx_rank(ev) != 0);
    if (st != OMPC_OK)
        ompc_fatal("cannot start the device page service: %s", ompc_status_str(st));
    *dm_p = dm;
    return OMPC_OK;
}

static void dm_buf_destroy(dm_buf_t *b)
{
    free(b->pieces);
    free(b->exec_addr);
    if (!b->snap_borrowed)
        free(b->snap);
    free(b); /* the per-executor arrays live in the same block */
}

static void dm_drop_node(ompc_tmap_node_t *n, void *arg)
{
    (void)arg;
    dm_buf_destroy(OMPC_TMAP_ENTRY(n, dm_buf_t, node));
}

void dm_ctx_destroy(dm_ctx_t *dm)
{
    if (!dm)
        return;
    dm_pages_destroy(dm);
    /* Executors unmap the whole range below; no need to decommit each. */
    pthread_mutex_lock(&dm->mtx);
    ompc_tmap_drain(&dm->bufs, dm_drop_node, NULL);
    for (int i = 0; i < DM_FREE_BUCKETS; i++) {
        while (dm->free_spans[i]) {
            dm_free_span_t *f = dm->free_spans[i];
            dm->free_spans[i] = f->next;
            free(f);
        }
    }
    pthread_mutex_unlock(&dm->mtx);
    munmap((void *)dm->va_base, dm->va_size);
    pthread_mutex_destroy(&dm->mtx);
    pthread_cond_destroy(&dm->pin_cond);
    for (int i = 0; i < dm->nexec; i++)
        free(dm->cand[i]);
    free(dm->cand);
    free(dm->ncand);
    free(dm->exec_rank);
    free(dm->kept);
    free(dm->pstats);
    free(dm);
}

int dm_num_executors(const dm_ctx_t *dm) { return dm->nexec; }
int dm_executor_rank(const dm_ctx_t *dm, int executor) { return dm->exec_rank[executor]; }

/* ------------------------------------------------------------- buffers */
static dm_buf_t *dm_buf_new(dm_ctx_t *dm, size_t size)
{
    _Static_assert(sizeof(ev_handle_t *) == 8, "handle slots are 8 bytes");
    /* One block: a buffer is made per mapped region (a task's firstprivate
     * copy too), so five more allocations each were a cost per task. */
    size_t P = (size_t)dm->nexec;
    size_t words = (sizeof(dm_buf_t) + 7) / 8 + 4 * P + (4 * P + 7) / 8;
    uint64_t *blk = calloc(words, 8);
    if (!blk)
        return NULL;
    dm_buf_t *b = (dm_buf_t *)blk;
    uint64_t *w = blk + (sizeof(dm_buf_t) + 7) / 8;
    b->commit_h = (ev_handle_t **)w;
    b->fetch_h = (ev_handle_t **)(w + P);
    b->fetch_gen = w + 2 * P;
    b->cepoch = w + 3 * P;
    b->valid = (uint8_t *)(w + 4 * P);
    b->committed = b->valid + P;
    b->cand = b->committed + P;
    b->ro = b->cand + P;
    static _Atomic uint32_t serials;
    b->serial = atomic_fetch_add(&serials, 1) + 1;
    b->size = size;
    b->span = (size + DM_PAGE - 1) / DM_PAGE * DM_PAGE;
    if (b->span == 0)
        b->span = DM_PAGE;
    return b;
}

ompc_status_t dm_alloc(dm_ctx_t *dm, size_t size, dm_buf_t **buf_p)
{
    dm_buf_t *b = dm_buf_new(dm, size);
    if (!b)
        return OMPC_ERR_NOMEM;
    pthread_mutex_lock(&dm->mtx);
    /* Loops that map and unmap the same sizes reuse the same addresses. */
    dm_free_span_t **bucket = &dm->free_spans[(b->span / DM_PAGE) % DM_FREE_BUCKETS];
    dm_free_span_t **pp = bucket;
    while (*pp && (*pp)->span != b->span)
        pp = &(*pp)->next;
    if (*pp) {
        dm_free_span_t *f = *pp;
        *pp = f->next;
        b->node.key = f->addr;
        if (f->keep) {
            memcpy(b->committed, f->committed, (size_t)dm->nexec);
            /* Its writers open those copies (dm_open_take): one missed
             * would make a named writer's writes go back through faults,
             * and their write-back invalidate its own copy. */
            memcpy(b->ro, f->committed + dm->nexec, (size_t)dm->nexec);
            for (int i = 0; i < dm->nexec && b->span > DM_KEEP_COMMITTED; i++)
                if (f->committed[i])
                    dm->kept[i] -= b->span;
        }
        free(f);
    } else if (dm->bump + b->span <= dm->va_base + dm->va_size) {
        b->node.key = dm->bump;
        dm->bump += b->span;
    } else {
        pthread_mutex_unlock(&dm->mtx);
        ompc_error("device memory address range exhausted (OMPC_DEVICE_VA=%zu) "
                   "allocating %zu bytes",
                   dm->va_size, size);
        dm_buf_destroy(b);
        return OMPC_ERR_NOMEM;
    }
    ompc_tmap_insert(&dm->bufs, &b->node);
    pthread_mutex_unlock(&dm->mtx);
    *buf_p = b;
    return OMPC_OK;
}

ompc_status_t dm_register_fixed(dm_ctx_t *dm, const dm_addr_t *exec_addrs, size_t size,
                                dm_buf_t **buf_p)
{
    dm_buf_t *b = dm_buf_new(dm, size);
    if (!b)
        return OMPC_ERR_NOMEM;
    b->exec_addr = malloc((size_t)dm->nexec * sizeof(dm_addr_t));
    if (!b->exec_addr) {
        dm_buf_destroy(b);
        return OMPC_ERR_NOMEM;
    }
    memcpy(b->exec_addr, exec_addrs, (size_t)dm->nexec * sizeof(dm_addr_t));
    b->fixed = true;
    b->has_data = true;
    memset(b->valid, 1, (size_t)dm->nexec);
    memset(b->committed, 1, (size_t)dm->nexec);
    /* Fixed buffers live outside the device range: keyed by executor 0's
     * address, which is what the host sees as their device address. */
    b->node.key = exec_addrs[0];
    pthread_mutex_lock(&dm->mtx);
    ompc_tmap_insert(&dm->bufs, &b->node);
    dm_addr_t lo = atomic_load_explicit(&dm->fixed_lo, memory_order_relaxed);
    dm_addr_t hi = atomic_load_explicit(&dm->fixed_hi, memory_order_relaxed);
    if (!hi || b->node.key < lo)
        atomic_store_explicit(&dm->fixed_lo, b->node.key, memory_order_release);
    if (b->node.key + (size ? size : 1) > hi)
        atomic_store_explicit(&dm->fixed_hi, b->node.key + (size ? size : 1),
                              memory_order_release);
    pthread_mutex_unlock(&dm->mtx);
    *buf_p = b;
    return OMPC_OK;
}

dm_addr_t dm_buf_addr(const dm_buf_t *buf) { return buf->node.key; }
size_t dm_buf_size(const dm_buf_t *buf) { return buf->size; }

static dm_addr_t addr_on(const dm_buf_t *b, int exec)
{
    return b->fixed ? b->exec_addr[exec] : b->node.key;
}

/* dm->mtx held: the buffer holding [addr, addr + len) (or ending there). */
static dm_buf_t *buf_at_locked(dm_ctx_t *dm, dm_addr_t addr, size_t len)
{
    ompc_tmap_node_t *n = ompc_tmap_floor(&dm->bufs, addr);
    dm_buf_t *b = n ? OMPC_TMAP_ENTRY(n, dm_buf_t, node) : NULL;
    if (b && (addr + len > b->node.key + (b->size ? b->size : 1) || addr + len < addr))
        return NULL;
    return b;
}

dm_buf_t *dm_buf_find(dm_ctx_t *dm, dm_addr_t addr, size_t len, size_t *off_p)
{
    pthread_mutex_lock(&dm->mtx);
    dm_buf_t *b = buf_at_locked(dm, addr, len);
    pthread_mutex_unlock(&dm->mtx);
    if (b && off_p)
        *off_p = addr - b->node.key;
    return b;
}

/* Whether addr may lie in (or one past) a buffer.  A buffer registered by
 * another thread is known here through whatever told this thread its
 * address, which comes after the registration. */
static bool may_hold(dm_ctx_t *dm, dm_addr_t addr)
{
    if (addr >= dm->va_base && addr <= dm->va_base + dm->va_size)
        return true;
    dm_addr_t hi = atomic_load_explicit(&dm->fixed_hi, memory_order_acquire);
    return hi && addr >= atomic_load_explicit(&dm->fixed_lo, memory_order_relaxed) &&
           addr <= hi;
}

void dm_bufs_find(dm_ctx_t *dm, const dm_addr_t *addrs, size_t n, dm_buf_t **bufs_p)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        bufs_p[i] = NULL;
        any = any || may_hold(dm, addrs[i]);
    }
    if (!any)
        return;
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++) {
        if (may_hold(dm, addrs[i]))
            bufs_p[i] = buf_at_locked(dm, addrs[i], 0);
    }
    pthread_mutex_unlock(&dm->mtx);
}

/* ---------------------------------------------- buffers spread by range */
/* dm->mtx held: waits while another thread gathers b's pieces. */
static void spread_wait(dm_ctx_t *dm, dm_buf_t *b)
{
    while (b->gathering)
        pthread_cond_wait(&dm->pin_cond, &dm->mtx);
}

/* dm->mtx held: forget b's pieces without moving them (their bytes were
 * overwritten, or the buffer goes). */
/* dm->mtx held: b's spread record (NULL: none), taken off the buffer; the
 * caller owns the pieces. */
static dm_piece_t *spread_detach(dm_ctx_t *dm, dm_buf_t *b, int *home_p, size_t *n_p)
{
    spread_wait(dm, b);
    dm_piece_t *p = b->pieces;
    if (!p)
        return NULL;
    *home_p = b->spread_home;
    *n_p = b->npieces;
    b->pieces = NULL;
    b->npieces = 0;
    atomic_fetch_sub(&dm->nspread, 1);
    return p;
}

static void spread_forget(dm_ctx_t *dm, dm_buf_t *b)
{
    int home;
    size_t n;
    free(spread_detach(dm, b, &home, &n));
}

/* dm->mtx held: exec keeps bytes of b that no other copy has. */
static bool spread_holds(const dm_buf_t *b, int exec)
{
    if (!b->pieces)
        return false;
    if (b->spread_home == exec)
        return true;
    for (size_t k = 0; k < b->npieces; k++)
        if (b->pieces[k].exec == exec && b->pieces[k].len)
            return true;
    return false;
}

ompc_status_t dm_spread(dm_ctx_t *dm, dm_buf_t *b, int home, const dm_piece_t *p,
                        size_t n)
{
    if (home < 0 || home >= dm->nexec || b->fixed)
        return OMPC_ERR_INVALID;
    dm_piece_t *c = malloc((n ? n : 1) * sizeof(*c));
    if (!c)
        return OMPC_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        if (p[i].exec < 0 || p[i].exec >= dm->nexec || p[i].off > b->size ||
            p[i].len > b->size - p[i].off) {
            free(c);
            return OMPC_ERR_INVALID;
        }
        c[i] = p[i];
    }
    pthread_mutex_lock(&dm->mtx);
    spread_forget(dm, b);
    b->pieces = c;
    b->npieces = n;
    b->spread_home = home;
    atomic_fetch_add(&dm->nspread, 1);
    pthread_mutex_unlock(&dm->mtx);
    return OMPC_OK;
}

bool dm_spread_take(dm_ctx_t *dm, dm_buf_t *b, int *home_p, dm_piece_t **p_p, size_t *n_p)
{
    if (atomic_load(&dm->nspread) == 0)
        return false;
    pthread_mutex_lock(&dm->mtx);
    *p_p = spread_detach(dm, b, home_p, n_p);
    pthread_mutex_unlock(&dm->mtx);
    return *p_p != NULL;
}

ompc_status_t dm_gather(dm_ctx_t *dm, dm_buf_t *const *bufs, size_t n)
{
    if (atomic_load(&dm->nspread) == 0)
        return OMPC_OK;
    ompc_status_t first = OMPC_OK;
    for (size_t i = 0; i < n; i++) {
        dm_buf_t *b = bufs[i];
        int home;
        size_t np;
        pthread_mutex_lock(&dm->mtx);
        dm_piece_t *p = spread_detach(dm, b, &home, &np);
        if (!p) {
            pthread_mutex_unlock(&dm->mtx);
            continue;
        }
        /* Readers of b wait on `gathering` until its home copy is whole. */
        b->gathering = true;
        ev_handle_t **hs = malloc((np ? np : 1) * sizeof(*hs));
        size_t nh = 0;
        ompc_status_t st = hs ? OMPC_OK : OMPC_ERR_NOMEM;
        for (size_t k = 0; k < np && st == OMPC_OK; k++) {
            if (p[k].exec == home || !p[k].len)
                continue;
            st = ev_exchange(dm->ev, dm->exec_rank[p[k].exec],
                             addr_on(b, p[k].exec) + p[k].off, dm->exec_rank[home],
                             addr_on(b, home) + p[k].off, (size_t)p[k].len, &hs[nh]);
            if (st == OMPC_OK) {
                nh++;
                dm->stats.bytes_dev_to_dev += p[k].len;
                dm->stats.transfers_dev_to_dev++;
            }
        }
        pthread_mutex_unlock(&dm->mtx);
        ompc_status_t wst = ev_wait_all(hs, nh);
        for (size_t k = 0; k < nh; k++)
            ev_handle_release(hs[k]);
        free(hs);
        free(p);
        if (st == OMPC_OK)
            st = wst;
        pthread_mutex_lock(&dm->mtx);
        b->gathering = false;
        pthread_cond_broadcast(&dm->pin_cond);
        pthread_mutex_unlock(&dm->mtx);
        if (st != OMPC_OK && first == OMPC_OK)
            first = st;
    }
    return first;
}

ompc_status_t dm_free(dm_ctx_t *dm, dm_buf_t *b)
{
    if (b->fixed)
        return OMPC_ERR_INVALID;
    /* Spans stay mapped where they are, for the next buffer of the same
     * size (loops that map and unmap every iteration): small ones always,
     * large ones within the executor's budget (a fresh mapping costs a
     * zeroed page fault per page when the data arrives, on the transfer's
     * path).  The rest give their memory back, without waiting for the
     * executors. */
    bool small = b->span <= DM_KEEP_COMMITTED;
    dm_free_span_t *f = calloc(1, sizeof(*f) + 2 * (size_t)dm->nexec);
    if (!f)
        return OMPC_ERR_NOMEM;
    bool keep = false;
    pthread_mutex_lock(&dm->mtx);
    spread_forget(dm, b);
    ompc_tmap_erase(&dm->bufs, b->node.key);
    for (int i = 0; i < dm->nexec; i++)
        if (b->cand[i])
            cand_remove(dm, i, b);
    f->addr = b->node.key;
    f->span = b->span;
    for (int i = 0; i < dm->nexec; i++) {
        if (!b->committed[i])
            continue;
        if (small || dm->kept[i] + b->span <= dm->keep_max) {
            if (!small)
                dm->kept[i] += b->span;
            f->committed[i] = 1;
            f->committed[dm->nexec + i] = b->ro[i];
            keep = true;
            continue;
        }
        uint64_t args[2] = {b->node.key, b->span};
        ev_handle_t *h;
        if (ev_execute(dm->ev, dm->exec_rank[i], dm->fn_decommit, args, sizeof(args),
                       NULL, 0, &h) == OMPC_OK)
            ev_handle_release(h);
    }
    f->keep = keep;
    /* Commits that came with a kernel launch are never waited for. */
    for (int i = 0; i < dm->nexec; i++)
        if (b->commit_h[i]) {
            ev_handle_release(b->commit_h[i]);
            b->commit_h[i] = NULL;
        }
    dm_free_span_t **bucket = &dm->free_spans[(b->span / DM_PAGE) % DM_FREE_BUCKETS];
    f->next = *bucket;
    *bucket = f;
    pthread_mutex_unlock(&dm->mtx);
    dm_buf_destroy(b);
    return OMPC_OK;
}

/* First executor holding a valid copy, searching from `from` so that
 * different consumers spread over different sources.  -1 if none. */
static int dm_pick_source(const dm_ctx_t *dm, const dm_buf_t *b, int from)
{
    for (int i = 0; i < dm->nexec; i++) {
        int e = (from + i) % dm->nexec;
        if (b->valid[e])
            return e;
    }
    return -1;
}

/* ------------------------------------------- stale copies (mtx held) */
/* A copy of b that an executor keeps mapped after the data changed
 * elsewhere would be read, old, by a kernel there that reaches it through
 * a pointer; the launch of a later task there lists it for closing
 * (dm_stale_take, docs/architecture.md "Device pages on demand"). */
static void cand_remove(dm_ctx_t *dm, int exec, dm_buf_t *b)
{
    dm_buf_t **v = dm->cand[exec];
    for (size_t i = 0; i < dm->ncand[exec]; i++)
        if (v[i] == b) {
            v[i] = v[--dm->ncand[exec]];
            break;
        }
    b->cand[exec] = 0;
}

/* Every executor but `except` that has b's pages mapped. */
static void stale_note(dm_ctx_t *dm, dm_buf_t *b, int except)
{
    if (!dm->close_stale || b->fixed)
        return;
    for (int e = 0; e < dm->nexec; e++) {
        if (e == except || b->cand[e] || b->committed[e] == DM_COMMIT_NONE)
            continue;
        if (dm->ncand[e] == dm->capcand[e]) {
            size_t nc = dm->capcand[e] ? 2 * dm->capcand[e] : 16;
            dm_buf_t **v = realloc(dm->cand[e], nc * sizeof(*v));
            if (!v)
                ompc_fatal("out of memory tracking device copies");
            dm->cand[e] = v;
            dm->capcand[e] = nc;
        }
        dm->cand[e][dm->ncand[e]++] = b;
        b->cand[e] = 1;
    }
}

void dm_stale_note(dm_ctx_t *dm, dm_buf_t *b, int writer)
{
    pthread_mutex_lock(&dm->mtx);
    stale_note(dm, b, writer);
    pthread_mutex_unlock(&dm->mtx);
}

size_t dm_stale_take(dm_ctx_t *dm, int exec, dm_stale_fn_t judge, void *arg,
                     dm_stale_copy_t **out_p)
{
    *out_p = NULL;
    if (!dm->close_stale)
        return 0;
    size_t n = 0, cap = 0;
    dm_stale_copy_t *out = NULL;
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < dm->ncand[exec];) {
        dm_buf_t *b = dm->cand[exec][i];
        uint8_t *c = &b->committed[exec];
        if (*c == DM_COMMIT_SENT && b->commit_h[exec] &&
            ev_test(b->commit_h[exec]) != OMPC_INPROGRESS) {
            *c = DM_COMMIT_DONE;
            ev_handle_release(b->commit_h[exec]);
            b->commit_h[exec] = NULL;
        }
        /* A copy holding a piece of a spread buffer, or one a gather is
         * reading, carries the only valid bytes of that range: it stays
         * open until the gather has taken them. */
        if (b->gathering || spread_holds(b, exec)) {
            i++;
            continue;
        }
        dm_stale_t v = *c == DM_COMMIT_NONE ? DM_STALE_CURRENT : judge(b, arg);
        if (v == DM_STALE_UNKNOWN)
            v = b->valid[exec] || !b->has_data ? DM_STALE_CURRENT
                : b->fetch_h[exec]             ? DM_STALE_LATER
                                               : DM_STALE_YES;
        /* A commit still travelling (claimed, maybe not sent yet) comes
         * with a launch before the writer's, so it lands before the task
         * starts there: the close, numbered later, still applies. */
        if (v == DM_STALE_LATER) {
            i++;
            continue;
        }
        if (v == DM_STALE_YES) {
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                dm_stale_copy_t *o = realloc(out, cap * sizeof(*o));
                if (!o)
                    ompc_fatal("out of memory launching a kernel");
                out = o;
            }
            b->cepoch[exec] = ++dm->close_ctr;
            out[n++] = (dm_stale_copy_t){b->node.key, b->span, cnum(b, exec)};
            /* Gone from there: a later task there that names the buffer
             * commits it again and gets its data. */
            *c = DM_COMMIT_NONE;
            if (b->commit_h[exec]) {
                ev_handle_release(b->commit_h[exec]);
                b->commit_h[exec] = NULL;
            }
            b->valid[exec] = 0;
        }
        dm->cand[exec][i] = dm->cand[exec][--dm->ncand[exec]];
        b->cand[exec] = 0;
    }
    pthread_mutex_unlock(&dm->mtx);
    *out_p = out;
    return n;
}

/* The data changed; tag names who changed it (0: nobody in particular). */
static void dm_changed(dm_ctx_t *dm, dm_buf_t *b, uint64_t tag)
{
    b->wgen++;
    b->wtag = tag ? tag : (UINT64_C(1) << 63) | ++dm->tag_ctr;
    memset(b->valid, 0, (size_t)dm->nexec);
    stale_note(dm, b, -1);
}

/* Forget the snapshot's memory (the caller's, if borrowed, stays). */
static void dm_snap_release(dm_buf_t *b)
{
    if (!b->snap_borrowed)
        free(b->snap);
    b->snap = NULL;
    b->snap_borrowed = false;
}

static void dm_drop_snapshot(dm_buf_t *b)
{
    b->snap_valid = false;
    if (b->busy == 0)
        dm_snap_release(b);
}

ompc_status_t dm_write(dm_ctx_t *dm, dm_buf_t *b, size_t off, const void *src, size_t len)
{
    ev_handle_t *h = NULL;
    ompc_status_t st = dm_write_start(dm, b, off, src, len, &h);
    return h ? ev_finish(st, h) : st;
}

ompc_status_t dm_write_start(dm_ctx_t *dm, dm_buf_t *b, size_t off, const void *src,
                             size_t len, ev_handle_t **h_p)
{
    if (off + len > b->size || off + len < off)
        return OMPC_ERR_INVALID;
    if (len == 0)
        return OMPC_OK;
    bool whole = off == 0 && len == b->size;
    if (!whole) {
        /* Part of it: the bytes around it must be whole somewhere. */
        ompc_status_t gst = dm_gather(dm, &b, 1);
        if (gst != OMPC_OK)
            return gst;
    }
    pthread_mutex_lock(&dm->mtx);
    if (whole)
        spread_forget(dm, b);
    int src_exec = dm_pick_source(dm, b, 0);
    if (src_exec < 0 || (whole && !b->fixed)) {
        /* Keep a snapshot: sent to whichever executor needs it first.  A
         * borrowed one is the caller's memory: it becomes our own copy. */
        if (!b->snap || b->snap_borrowed) {
            void *own = malloc(b->size);
            if (!own) {
                pthread_mutex_unlock(&dm->mtx);
                return OMPC_ERR_NOMEM;
            }
            if (b->snap && b->snap_valid && !whole)
                memcpy(own, b->snap, b->size);
            else if (!whole)
                /* Bytes nobody wrote read as zeros, as a fresh page does
                 * (a write-back of a fault page sends only bytes that
                 * changed). */
                memset(own, 0, b->size);
            b->snap = own;
            b->snap_borrowed = false;
        }
        memcpy((char *)b->snap + off, src, len);
        b->snap_valid = true;
        b->has_data = true;
        dm_changed(dm, b, 0);
        dm->stats.bytes_host_to_dev += len;
        pthread_mutex_unlock(&dm->mtx);
        return OMPC_OK;
    }
    /* Part of a buffer that lives on executors: patch one copy, the others
     * are stale now. */
    dm_changed(dm, b, 0);
    b->valid[src_exec] = 1;
    dm_drop_snapshot(b);
    dm->stats.bytes_host_to_dev += len;
    dm_addr_t a = addr_on(b, src_exec) + off;
    int rank = dm->exec_rank[src_exec];
    pthread_mutex_unlock(&dm->mtx);
    return ev_submit(dm->ev, rank, src, a, len, h_p);
}

bool dm_buf_has_data(dm_ctx_t *dm, dm_buf_t *b)
{
    pthread_mutex_lock(&dm->mtx);
    bool h = b->has_data;
    pthread_mutex_unlock(&dm->mtx);
    return h;
}

/* Makes snap the buffer's whole contents, owned (adopt) or lent (borrow);
 * false, with nothing changed, while a transfer still reads the old
 * snapshot or the buffer is fixed (the caller copies instead). */
static bool snap_install(dm_ctx_t *dm, dm_buf_t *b, const void *snap, bool lent)
{
    pthread_mutex_lock(&dm->mtx);
    if (b->fixed || b->busy > 0) {
        pthread_mutex_unlock(&dm->mtx);
        return false;
    }
    spread_forget(dm, b);
    dm_snap_release(b);
    b->snap = (void *)(uintptr_t)snap;
    b->snap_borrowed = lent;
    b->snap_valid = true;
    b->has_data = true;
    dm_changed(dm, b, 0);
    dm->stats.bytes_host_to_dev += b->size;
    pthread_mutex_unlock(&dm->mtx);
    return true;
}

ompc_status_t dm_write_adopt(dm_ctx_t *dm, dm_buf_t *b, void *data)
{
    if (snap_install(dm, b, data, false))
        return OMPC_OK;
    ompc_status_t st = dm_write(dm, b, 0, data, b->size);
    free(data);
    return st;
}

ompc_status_t dm_write_borrow(dm_ctx_t *dm, dm_buf_t *b, const void *src)
{
    if (snap_install(dm, b, src, true))
        return OMPC_OK;
    return dm_write(dm, b, 0, src, b->size);
}

ompc_status_t dm_unborrow(dm_ctx_t *dm, dm_buf_t *b)
{
    ompc_status_t st = OMPC_OK;
    pthread_mutex_lock(&dm->mtx);
    while (b->snap_borrowed && b->busy > 0)
        pthread_cond_wait(&dm->pin_cond, &dm->mtx);
    if (b->snap_borrowed) {
        if (b->snap_valid && dm_pick_source(dm, b, 0) < 0) {
            /* No executor has the data yet: keep a copy of our own. */
            void *own = malloc(b->size ? b->size : 1);
            if (own) {
                memcpy(own, b->snap, b->size);
                b->snap = own;
                b->snap_borrowed = false;
            } else {
                st = OMPC_ERR_NOMEM;
                b->snap_valid = false;
                dm_snap_release(b);
            }
        } else {
            b->snap_valid = false;
            dm_snap_release(b);
        }
    }
    pthread_mutex_unlock(&dm->mtx);
    return st;
}

/* dm->mtx held, released here: bytes [off, off + len) of b's copy on
 * executor e into dst, counted as a device-to-host read. */
static ompc_status_t read_copy_unlock(dm_ctx_t *dm, dm_buf_t *b, int e, size_t off,
                                      void *dst, size_t len)
{
    dm->stats.bytes_dev_to_host += len;
    dm_addr_t a = addr_on(b, e) + off;
    int rank = dm->exec_rank[e];
    pthread_mutex_unlock(&dm->mtx);
    ev_handle_t *h = NULL;
    return ev_finish(ev_retrieve(dm->ev, rank, a, dst, len, &h), h);
}

ompc_status_t dm_read(dm_ctx_t *dm, dm_buf_t *b, size_t off, void *dst, size_t len)
{
    if (off + len > b->size || off + len < off)
        return OMPC_ERR_INVALID;
    if (len == 0)
        return OMPC_OK;
    ompc_status_t gst = dm_gather(dm, &b, 1);
    if (gst != OMPC_OK)
        return gst;
    pthread_mutex_lock(&dm->mtx);
    if (b->snap_valid) {
        /* A borrowed snapshot may be dst itself. */
        if ((char *)b->snap + off != dst)
            memmove(dst, (char *)b->snap + off, len);
        dm->stats.bytes_dev_to_host += len;
        pthread_mutex_unlock(&dm->mtx);
        return OMPC_OK;
    }
    int e = dm_pick_source(dm, b, 0);
    if (e < 0 || !b->has_data) {
        pthread_mutex_unlock(&dm->mtx);
        return OMPC_OK; /* never written: contents undefined */
    }
    return read_copy_unlock(dm, b, e, off, dst, len);
}

ompc_status_t dm_read_on(dm_ctx_t *dm, dm_buf_t *b, int exec, size_t off, void *dst,
                         size_t len)
{
    if (off + len > b->size || off + len < off || exec < 0 || exec >= dm->nexec)
        return OMPC_ERR_INVALID;
    if (len == 0)
        return OMPC_OK;
    pthread_mutex_lock(&dm->mtx);
    return read_copy_unlock(dm, b, exec, off, dst, len);
}

ompc_status_t dm_copy(dm_ctx_t *dm, dm_buf_t *dst, size_t doff, dm_buf_t *src,
                      size_t soff, size_t len)
{
    /* Staged through the host: device-to-device copies requested by the
     * program (omp_target_memcpy) are rare; kernel data never takes this
     * path. */
    void *tmp = malloc(len ? len : 1);
    if (!tmp)
        return OMPC_ERR_NOMEM;
    ompc_status_t st = dm_read(dm, src, soff, tmp, len);
    if (st == OMPC_OK)
        st = dm_write(dm, dst, doff, tmp, len);
    free(tmp);
    return st;
}

/* ------------------------------------------------------------- acquire */
/* One pass of dm_acquire; *again_p: a buffer's data changed while it was
 * being made valid (a write-back of bytes written through page faults
 * lands at any time), so exec does not hold it yet. */
static ompc_status_t acquire_pass(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n,
                                  bool *again_p)
{
    int rank = dm->exec_rank[exec];
    ev_handle_t **hs = malloc((n ? 2 * n : 1) * sizeof(*hs));
    dm_buf_t **moved = malloc((n ? n : 1) * sizeof(*moved));
    /* Per buffer, the data's generation that exec's copy will hold, and
     * the number of the copy's last close when this pass committed it (or
     * found it committed): a close listed since (dm_stale_take, another
     * thread's launch) makes the copy there one this pass must not fill
     * nor call valid.  The worker drops or hides the copy by that close's
     * number, so the next pass commits it again, numbered after it. */
    uint64_t *gens = malloc((n ? 2 * n : 1) * sizeof(*gens));
    uint64_t *eps = gens + n;
    if (!hs || !moved || !gens) {
        free(hs);
        free(moved);
        free(gens);
        return OMPC_ERR_NOMEM;
    }
    ompc_status_t first = OMPC_OK;
    /* Phase 1: map the pages where needed.  No wait: the executor's gate
     * runs the (inline) commit as soon as its notification arrives, and MPI
     * delivers that notification before the transfers that follow. */
    size_t nh = 0, nforeign = 0;
    ev_handle_t **foreign = malloc((n ? n : 1) * sizeof(*foreign));
    if (!foreign) {
        free(hs);
        free(moved);
        free(gens);
        return OMPC_ERR_NOMEM;
    }
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++) {
        dm_buf_t *b = bufs[i];
        /* Claimed by a launch whose event is being started. */
        while (b->committed[exec] == DM_COMMIT_SENT && !b->commit_h[exec])
            pthread_cond_wait(&dm->pin_cond, &dm->mtx);
        eps[i] = b->cepoch[exec];
        if (b->committed[exec] == DM_COMMIT_SENT) {
            ev_handle_retain(b->commit_h[exec]);
            foreign[nforeign++] = b->commit_h[exec];
            continue;
        }
        if (b->committed[exec] == DM_COMMIT_DONE)
            continue;
        /* Whether phase 2 will move data here: the worker maps the copy
         * only when it lands, so that no kernel there reads it before. */
        uint64_t args[4] = {b->node.key, b->span, cnum(b, exec),
                            b->has_data && !b->valid[exec]};
        ev_handle_t *h;
        ompc_status_t st = ev_execute(dm->ev, rank, dm->fn_commit, args, sizeof(args),
                                      NULL, 0, &h);
        if (st == OMPC_OK) {
            b->committed[exec] = DM_COMMIT_SENT;
            ev_handle_retain(h); /* the buffer's reference */
            b->commit_h[exec] = h;
            hs[nh++] = h;
        } else if (first == OMPC_OK) {
            first = st;
        }
    }
    pthread_mutex_unlock(&dm->mtx);
    /* Commits other threads sent must land before our transfers. */
    ompc_status_t fst = ev_wait_all(foreign, nforeign);
    for (size_t i = 0; i < nforeign; i++)
        ev_handle_release(foreign[i]);
    free(foreign);
    if (first == OMPC_OK)
        first = fst;
    /* Phase 2: forward every stale buffer from a valid copy.  A transfer
     * to this executor that another thread has in flight is waited for,
     * never repeated: a second copy landing after the first thread's
     * kernel started would overwrite what that kernel wrote. */
    size_t nmoved = 0;
    ompc_status_t st = OMPC_OK;
    ev_handle_t **fetching = malloc((n ? n : 1) * sizeof(*fetching));
    size_t nfetching = 0;
    if (!fetching) {
        free(hs);
        free(moved);
        free(gens);
        return OMPC_ERR_NOMEM;
    }
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n && first == OMPC_OK; i++) {
        dm_buf_t *b = bufs[i];
        gens[i] = b->wgen;
        if (b->cepoch[exec] != eps[i]) {
            *again_p = true; /* closed there since phase 1 */
            continue;
        }
        if (b->fetch_h[exec]) {
            if (ev_test(b->fetch_h[exec]) == OMPC_INPROGRESS) {
                gens[i] = b->fetch_gen[exec];
                ev_handle_retain(b->fetch_h[exec]);
                fetching[nfetching++] = b->fetch_h[exec];
                continue;
            }
            /* Done, but the thread that started it may not have marked
             * the copy valid yet: unless the data changed since, what it
             * brought is current.  Fetching again could land after that
             * thread's kernel started and overwrite its writes. */
            ev_handle_release(b->fetch_h[exec]);
            b->fetch_h[exec] = NULL;
            if (b->fetch_gen[exec] == b->wgen)
                b->valid[exec] = 1;
        }
        if (b->valid[exec] || !b->has_data)
            continue;
        bool dup = false;
        for (size_t k = 0; k < nmoved; k++)
            dup |= moved[k] == b;
        if (dup)
            continue;
        int src = dm_pick_source(dm, b, exec);
        if (src >= 0) {
            b->ro[src] = 1; /* the send hook protects it there */
            atomic_store_explicit(&dm->ro_marks, true, memory_order_relaxed);
            st = ev_exchange(dm->ev, dm->exec_rank[src], addr_on(b, src), rank,
                             addr_on(b, exec), b->size, &hs[nh]);
            dm->stats.bytes_dev_to_dev += b->size;
            dm->stats.transfers_dev_to_dev++;
            if (ompc_config_get()->info)
                fprintf(stderr,
                        "[ompc info] r0 move: device %#lx (%zu B) rank %d "
                        "-> rank %d\n",
                        (unsigned long)b->node.key, b->size, dm->exec_rank[src], rank);
        } else if (b->snap_valid) {
            if (ompc_config_get()->info)
                fprintf(stderr,
                        "[ompc info] r0 move: device %#lx (%zu B) head "
                        "-> rank %d\n",
                        (unsigned long)b->node.key, b->size, rank);
            b->busy++;
            st = ev_submit(dm->ev, rank, b->snap, addr_on(b, exec), b->size, &hs[nh]);
        } else {
            continue;
        }
        if (st == OMPC_OK) {
            ev_handle_retain(hs[nh]); /* the buffer's reference */
            b->fetch_h[exec] = hs[nh];
            b->fetch_gen[exec] = b->wgen;
            nh++;
            moved[nmoved++] = b;
        } else if (first == OMPC_OK) {
            first = st;
        }
    }
    pthread_mutex_unlock(&dm->mtx);
    st = ev_wait_all(hs, nh);
    if (first == OMPC_OK)
        first = st;
    st = ev_wait_all(fetching, nfetching);
    if (first == OMPC_OK)
        first = st;
    for (size_t i = 0; i < nfetching; i++)
        ev_handle_release(fetching[i]);
    free(fetching);
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++) {
        dm_buf_t *b = bufs[i];
        if (b->committed[exec] == DM_COMMIT_SENT && b->commit_h[exec] &&
            ev_test(b->commit_h[exec]) != OMPC_INPROGRESS) {
            b->committed[exec] = DM_COMMIT_DONE;
            ev_handle_release(b->commit_h[exec]);
            b->commit_h[exec] = NULL;
        }
    }
    for (size_t k = 0; k < nmoved; k++) {
        dm_buf_t *b = moved[k];
        if (b->fetch_h[exec] && ev_test(b->fetch_h[exec]) != OMPC_INPROGRESS) {
            ev_handle_release(b->fetch_h[exec]);
            b->fetch_h[exec] = NULL;
        }
    }
    for (size_t i = 0; i < nh; i++)
        ev_handle_release(hs[i]);
    bool idle = false; /* a snapshot's last transfer ended */
    for (size_t k = 0; k < nmoved; k++) {
        dm_buf_t *b = moved[k];
        if (b->snap && b->busy > 0 && --b->busy == 0) {
            idle = true;
            if (!b->snap_valid)
                dm_snap_release(b);
        }
    }
    if (first == OMPC_OK) {
        for (size_t i = 0; i < n; i++) {
            dm_buf_t *b = bufs[i];
            if (b->wgen != gens[i] || b->cepoch[exec] != eps[i]) {
                *again_p = true;
                continue;
            }
            b->valid[exec] = 1;
            /* The caller's memory is lent only until a copy exists. */
            if (b->snap_borrowed && b->busy == 0) {
                b->snap_valid = false;
                dm_snap_release(b);
            }
        }
    }
    if (idle)
        pthread_cond_broadcast(&dm->pin_cond);
    pthread_mutex_unlock(&dm->mtx);
    free(hs);
    free(moved);
    free(gens);
    return first;
}

ompc_status_t dm_acquire(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n)
{
    if (exec < 0 || exec >= dm->nexec)
        return OMPC_ERR_INVALID;
    ompc_status_t st = dm_gather(dm, bufs, n);
    if (st != OMPC_OK)
        return st;
    bool again;
    do {
        again = false;
        st = acquire_pass(dm, exec, bufs, n, &again);
    } while (st == OMPC_OK && again);
    return st;
}

void dm_written(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n)
{
    dm_written_by(dm, exec, bufs, n, 0);
}

void dm_written_by(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n, uint64_t tag)
{
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++) {
        dm_buf_t *b = bufs[i];
        /* Its writer gathered it first (dm_acquire, dm_gather). */
        spread_forget(dm, b);
        dm_changed(dm, b, tag);
        b->valid[exec] = 1;
        b->has_data = true;
        dm_drop_snapshot(b);
    }
    pthread_mutex_unlock(&dm->mtx);
}

int dm_pin_executor(dm_ctx_t *dm, dm_buf_t *const *bufs, size_t n)
{
    int e = -1;
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n && e < 0; i++)
        if (bufs[i]->pin_count > 0)
            e = bufs[i]->pin_exec;
    pthread_mutex_unlock(&dm->mtx);
    return e;
}

/* Caller holds mtx. */
static bool dm_pin_locked(int exec, dm_buf_t *const *bufs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (bufs[i]->pin_count > 0 && bufs[i]->pin_exec != exec)
            return false;
    for (size_t i = 0; i < n; i++) {
        bufs[i]->pin_exec = exec;
        bufs[i]->pin_count++;
    }
    return true;
}

void dm_pin(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n)
{
    pthread_mutex_lock(&dm->mtx);
    while (!dm_pin_locked(exec, bufs, n))
        pthread_cond_wait(&dm->pin_cond, &dm->mtx);
    pthread_mutex_unlock(&dm->mtx);
}

bool dm_try_pin(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n)
{
    pthread_mutex_lock(&dm->mtx);
    bool ok = dm_pin_locked(exec, bufs, n);
    pthread_mutex_unlock(&dm->mtx);
    return ok;
}

void dm_unpin(dm_ctx_t *dm, dm_buf_t *const *bufs, size_t n)
{
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++)
        if (bufs[i]->pin_count > 0)
            bufs[i]->pin_count--;
    pthread_cond_broadcast(&dm->pin_cond);
    pthread_mutex_unlock(&dm->mtx);
}

/* ------------------------------------------------------ launch ahead */
size_t dm_buf_span(const dm_buf_t *buf) { return buf->span; }
dm_addr_t dm_buf_addr_on(const dm_buf_t *buf, int exec) { return addr_on(buf, exec); }

size_t dm_commit_claim(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n,
                       dm_buf_t **out, size_t *nclaimed)
{
    /* Claimed ones fill out[] from the front, those in flight from the
     * back; the latter then move up behind the former. */
    size_t k = 0, back = n;
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++) {
        dm_buf_t *b = bufs[i];
        if (b->fixed || b->committed[exec] == DM_COMMIT_DONE)
            continue;
        if (b->committed[exec] == DM_COMMIT_SENT) {
            out[--back] = b;
            continue;
        }
        b->committed[exec] = DM_COMMIT_SENT;
        b->commit_h[exec] = NULL;
        out[k++] = b;
    }
    pthread_mutex_unlock(&dm->mtx);
    *nclaimed = k;
    for (size_t i = back; i < n; i++)
        out[k++] = out[i];
    return k;
}

void dm_commit_claimed(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n,
                       ev_handle_t *h)
{
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++) {
        /* A close listed since the claim forgot the copy (dm_stale_take);
         * another thread may have committed it again, with its handle. */
        if (bufs[i]->committed[exec] != DM_COMMIT_SENT || bufs[i]->commit_h[exec])
            continue;
        if (h) {
            ev_handle_retain(h); /* the buffer's reference */
            bufs[i]->commit_h[exec] = h;
        } else {
            bufs[i]->committed[exec] = DM_COMMIT_NONE;
        }
    }
    pthread_cond_broadcast(&dm->pin_cond);
    pthread_mutex_unlock(&dm->mtx);
}

ompc_status_t dm_close_now(dm_ctx_t *dm, int exec, const dm_stale_copy_t *c, size_t n)
{
    ev_handle_t **hs = n ? calloc(n, sizeof(*hs)) : NULL;
    if (n && !hs)
        return OMPC_ERR_NOMEM;
    ompc_status_t first = OMPC_OK;
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t args[3] = {c[i].addr, c[i].span, c[i].epoch};
        ompc_status_t st = ev_execute(dm->ev, dm->exec_rank[exec], dm->fn_close, args,
                                      sizeof(args), NULL, 0, &hs[nh]);
        if (st == OMPC_OK)
            nh++;
        else if (first == OMPC_OK)
            first = st;
    }
    ompc_status_t st = ev_wait_all(hs, nh);
    for (size_t i = 0; i < nh; i++)
        ev_handle_release(hs[i]);
    free(hs);
    return first != OMPC_OK ? first : st;
}

uint64_t dm_buf_commit_epoch(dm_ctx_t *dm, dm_buf_t *b, int exec)
{
    pthread_mutex_lock(&dm->mtx);
    uint64_t c = cnum(b, exec);
    pthread_mutex_unlock(&dm->mtx);
    return c;
}

uint64_t dm_buf_wtag(dm_ctx_t *dm, dm_buf_t *b)
{
    pthread_mutex_lock(&dm->mtx);
    uint64_t t = b->wtag;
    pthread_mutex_unlock(&dm->mtx);
    return t;
}

void dm_valid_if(dm_ctx_t *dm, int exec, dm_buf_t *b, uint64_t tag)
{
    pthread_mutex_lock(&dm->mtx);
    if (b->wtag == tag && b->has_data)
        b->valid[exec] = 1;
    pthread_mutex_unlock(&dm->mtx);
}

int dm_source_for(dm_ctx_t *dm, dm_buf_t *b, int exec, bool *head_only, uint64_t *tag_p)
{
    pthread_mutex_lock(&dm->mtx);
    bool here = b->valid[exec] || !b->has_data;
    int src = here ? -1 : dm_pick_source(dm, b, exec);
    *head_only = !here && src < 0;
    *tag_p = b->wtag;
    pthread_mutex_unlock(&dm->mtx);
    return src;
}

void dm_served_from(dm_ctx_t *dm, dm_buf_t *b, int exec)
{
    if (!dm->close_stale || b->fixed)
        return;
    pthread_mutex_lock(&dm->mtx);
    b->ro[exec] = 1;
    pthread_mutex_unlock(&dm->mtx);
    atomic_store_explicit(&dm->ro_marks, true, memory_order_relaxed);
}

size_t dm_open_take(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n,
                    dm_stale_copy_t **list_p, size_t nlist)
{
    /* A program whose copies never moved between workers takes no lock. */
    if (!dm->close_stale || n == 0 ||
        !atomic_load_explicit(&dm->ro_marks, memory_order_relaxed))
        return nlist;
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++) {
        dm_buf_t *b = bufs[i];
        if (b->fixed || !b->ro[exec])
            continue;
        b->ro[exec] = 0;
        if (b->committed[exec] == DM_COMMIT_NONE)
            continue; /* mapped afresh when committed again */
        dm_stale_copy_t *v = realloc(*list_p, (nlist + 1) * sizeof(*v));
        if (!v)
            ompc_fatal("out of memory launching a kernel");
        v[nlist++] = (dm_stale_copy_t){b->node.key, b->span, 0};
        *list_p = v;
    }
    pthread_mutex_unlock(&dm->mtx);
    return nlist;
}

static bool buf_in(dm_buf_t *const *v, size_t n, const dm_buf_t *b)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == b)
            return true;
    return false;
}

size_t dm_names_take(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n,
                     dm_buf_t *const *wr, size_t nwr, dm_stale_copy_t **list_p,
                     size_t nlist)
{
    /* A program whose copies never moved between workers sends nothing. */
    if (!dm->close_stale || n + nwr == 0 ||
        !atomic_load_explicit(&dm->ro_marks, memory_order_relaxed))
        return nlist;
    dm_stale_copy_t *v = realloc(*list_p, (nlist + n + nwr) * sizeof(*v));
    if (!v)
        ompc_fatal("out of memory launching a kernel");
    *list_p = v;
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n + nwr; i++) {
        dm_buf_t *b = i < n ? bufs[i] : wr[i - n];
        if (b->fixed || (i >= n && buf_in(bufs, n, b)))
            continue;
        bool w = i >= n || buf_in(wr, nwr, b);
        if (w)
            b->ro[exec] = 0; /* the executor opens it */
        v[nlist++] = (dm_stale_copy_t){b->node.key, b->span,
                                       w ? DM_EPOCH_OPEN : DM_EPOCH_NAMED};
    }
    pthread_mutex_unlock(&dm->mtx);
    return nlist;
}

void dm_count_forward(dm_ctx_t *dm, size_t bytes)
{
    pthread_mutex_lock(&dm->mtx);
    dm->stats.bytes_dev_to_dev += bytes;
    dm->stats.transfers_dev_to_dev++;
    pthread_mutex_unlock(&dm->mtx);
}

void dm_count_read(dm_ctx_t *dm, size_t bytes)
{
    pthread_mutex_lock(&dm->mtx);
    dm->stats.bytes_dev_to_host += bytes;
    pthread_mutex_unlock(&dm->mtx);
}

size_t dm_bytes_valid_on(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n)
{
    size_t bytes = 0;
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++)
        if (bufs[i]->valid[exec])
            bytes += bufs[i]->size;
    pthread_mutex_unlock(&dm->mtx);
    return bytes;
}

void dm_bytes_valid_each(dm_ctx_t *dm, dm_buf_t *const *bufs, size_t n, size_t *bytes_p)
{
    memset(bytes_p, 0, (size_t)dm->nexec * sizeof(*bytes_p));
    pthread_mutex_lock(&dm->mtx);
    for (size_t i = 0; i < n; i++)
        for (int e = 0; e < dm->nexec; e++)
            if (bufs[i]->valid[e])
                bytes_p[e] += bufs[i]->size;
    pthread_mutex_unlock(&dm->mtx);
}

void dm_get_stats(dm_ctx_t *dm, dm_stats_t *stats_p)
{
    pthread_mutex_lock(&dm->mtx);
    *stats_p = dm->stats;
    pthread_mutex_unlock(&dm->mtx);
}
