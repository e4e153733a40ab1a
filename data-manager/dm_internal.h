/* Private to data-manager/. */
#ifndef OMPC_DM_INTERNAL_H
#define OMPC_DM_INTERNAL_H

#include "ompc_dm.h"
#include "ompc_tmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define DM_PAGE 4096u
#define DM_FREE_BUCKETS 1024

struct dm_buf {
    ompc_tmap_node_t node;   /* key: device address */
    size_t size;
    size_t span;             /* size rounded up to whole pages */
    bool fixed;              /* per-executor addresses, never freed */
    dm_addr_t *exec_addr;    /* fixed buffers: address on each executor */
    uint8_t *valid;          /* per executor: holds the current data */
    uint8_t *committed;      /* per executor: DM_COMMIT_* */
    uint8_t *cand;           /* per executor: in dm->cand[exec] (its copy
                                there may have become stale) */
    uint8_t *ro;             /* per executor: a copy was made from its copy
                                there, which is read-only since (a hint:
                                dm_open_take) */
    uint32_t serial;         /* this buffer's number (cnum) */
    uint64_t *cepoch;        /* per executor: the last close of its copy
                                there (dm->close_ctr), sent with commits */
    ev_handle_t **commit_h;  /* per executor: the commit in flight, if any */
    ev_handle_t **fetch_h;   /* per executor: the data transfer in flight */
    uint64_t *fetch_gen;     /* per executor: wgen when that transfer began */
    uint64_t wgen;           /* bumped whenever copies are invalidated */
    uint64_t wtag;           /* whose data it holds (dm_written_by), or a
                                unique value with the top bit set */
    void *snap;              /* host snapshot of data not sent anywhere */
    bool snap_valid;
    bool snap_borrowed;      /* snap is the caller's memory (dm_write_borrow):
                                never written or freed here */
    bool has_data;           /* ever written (else nothing to forward) */
    int busy;                /* transfers reading snap in flight; its
                                drop to 0 is broadcast on pin_cond */
    int pin_exec;            /* executor of the kernels pinning it */
    int pin_count;           /* kernels in flight that may write it */
    bool faulted;            /* a kernel reached it through a page fault
                                (OMPC_INFO names the first) */
    /* Spread by a split kernel (dm_spread): the current bytes of each piece
     * are on its executor, the rest on spread_home's copy. */
    dm_piece_t *pieces;
    size_t npieces;
    int spread_home;
    bool gathering;          /* pieces on their way home; the drop to
                                false is broadcast on pin_cond */
};

/* committed[] states.  A commit in flight may have been sent by another
 * thread: its notification has no MPI order with ours, so transfers into
 * the buffer wait for it (our own commits are ordered before our own
 * transfers on the control channel). */
enum { DM_COMMIT_NONE = 0, DM_COMMIT_DONE = 1, DM_COMMIT_SENT = 2 };

/* Freed spans up to this size keep their pages on the executors; larger
 * ones do while the executor's kept bytes stay within OMPC_DEVICE_KEEP. */
#define DM_KEEP_COMMITTED (1u << 20)

typedef struct dm_free_span {
    dm_addr_t addr;
    size_t span;
    struct dm_free_span *next;
    bool keep;               /* pages still mapped where committed[] says */
    uint8_t committed[];     /* per executor, when keep; then per executor
                                the buffer's ro[]: a copy kept read-only
                                there stays so for the next buffer */
} dm_free_span_t;

struct dm_ctx {
    ev_ctx_t *ev;
    int nexec;
    int *exec_rank;
    ev_fn_id_t fn_commit, fn_decommit, fn_close;
    uintptr_t va_base;
    size_t va_size;
    /* head state, under mtx */
    pthread_mutex_t mtx;
    pthread_cond_t pin_cond;
    ompc_tmap_t bufs;
    dm_addr_t bump;
    dm_free_span_t *free_spans[DM_FREE_BUCKETS]; /* exact-size reuse */
    dm_stats_t stats;
    _Atomic int nspread;     /* buffers with pieces (a fast test) */
    /* Written under mtx, read without it (dm_bufs_find): the lowest and
     * highest address of the fixed buffers ever registered. */
    _Atomic dm_addr_t fixed_lo, fixed_hi;
    _Atomic bool ro_marks;   /* some dm_buf_t.ro was ever set */
    uint64_t tag_ctr;        /* wtag values of changes nobody named */
    size_t keep_max;         /* OMPC_DEVICE_KEEP */
    size_t *kept;            /* per executor: bytes of free spans above
                                DM_KEEP_COMMITTED still mapped there */
    /* Per executor, under mtx: the buffers whose copy there may have
     * become stale since a launch to it last looked (dm_stale_take). */
    dm_buf_t ***cand;
    size_t *ncand, *capcand;
    bool close_stale;        /* executors close stale copies (page faults on) */
    uint64_t close_ctr;      /* closes listed, numbered from 1 */
    /* Device pages on demand (dm_pages.c). */
    ev_fn_id_t fn_page_fetch, fn_page_write;
    dm_fault_write_hooks_t fw_hooks; /* head (dm_set_fault_write_hooks) */
    dm_fault_source_fn_t fault_source;           /* head */
    dm_page_stats_t *pstats; /* head, under mtx: per executor */
    dm_pages_t *pg;          /* executors: the fault service, or NULL */
};

/* dm_pages.c.  dm_pages_create registers the head's page functions (every
 * rank, in dm_ctx_create) and, on an executor, installs the SIGSEGV
 * handler and starts the fault service thread. */
ompc_status_t dm_pages_create(dm_ctx_t *dm, bool executor);
void dm_pages_destroy(dm_ctx_t *dm);
/* Around every change of an executor's page mappings (commit, decommit,
 * fault pages). */
void dm_pages_map_lock(void);
/* Commit [addr, addr+span) as a buffer's pages (dm_exec_commit): pages a
 * running kernel holds through faults keep their bytes until the buffer's
 * data lands; one it wrote through faults stops the rank by name. */
ompc_status_t dm_pages_commit(ev_ctx_t *ev, uintptr_t addr, size_t span, uint64_t epoch);
void dm_pages_map_unlock(void);
/* Device pages a split's guards left protected over [addr, addr+span) are
 * forgotten (their mapping is being reset: commit, close, decommit). */
void dm_pages_kept_forget(uintptr_t addr, size_t span);
/* Close a stale copy at once (dm_close_now's message, gate thread). */
void dm_pages_close_now(uintptr_t addr, size_t span, uint64_t epoch);
/* A commit for task seq (0: not known); data_follows: a transfer for
 * the range is on its way.  A range not mapped yet is mapped at once,
 * unless its data follows or a running kernel holds pages of it through
 * faults: then it is mapped when its data may land (dm_pages_land_ready)
 * or when task seq starts (dm_pages_task_begin, dm_exec_task_commits). */
ompc_status_t dm_pages_commit_ahead(ev_ctx_t *ev, uintptr_t addr, size_t span,
                                    uint64_t epoch, uint64_t seq, bool data_follows);
/* The event system's land hook (ev_set_land_hook). */
/* dm_write without waiting: *h_p, when set, is the patch of the valid
 * copy in flight (src untouched until it completes; the caller finishes
 * it).  The bookkeeping is done on return. */
ompc_status_t dm_write_start(dm_ctx_t *dm, dm_buf_t *b, size_t off, const void *src,
                             size_t len, ev_handle_t **h_p);
bool dm_pages_land(uintptr_t addr, size_t size, const void *bytes);
/* Its land-ready hook (ev_set_land_ready_hook). */
bool dm_pages_land_ready(uintptr_t addr, size_t size);
/* Its land stage and done hooks (ev_set_land_stage_hooks). */
void *dm_pages_land_stage(uintptr_t addr, size_t size);
void dm_pages_land_done(uintptr_t addr, size_t size, void *staged);
/* The event system's send hook (ev_set_send_hook), and launch ahead's
 * serves (dm_exec_served): a copy of [addr, addr+size) is being made on
 * another worker, so the copy here turns read-only (a kernel's write into
 * it faults and goes back to the head). */
void dm_pages_served(uintptr_t addr, size_t size);
/* map_mtx held: the copy at addr is decommitted. */
void dm_pages_forget(uintptr_t addr);

#endif
