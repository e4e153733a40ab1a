/* Device pages on demand: a kernel that reaches a device page its executor
 * does not hold (memory no clause named: a linked list's later nodes,
 * omp_target_alloc blocks behind pointers stored in device data) gets the
 * page from the valid copy of its buffer instead of a crash.
 *
 * Mechanism: SIGSEGV + mprotect, not userfaultfd.  An ordinary user may
 * open userfaultfd only in user-mode-only mode on this kind of system
 * (vm.unprivileged_userfaultfd = 0), where a fault taken inside the kernel
 * (an MPI receive into a missing page) fails with EFAULT instead of
 * waiting; the signal works for every user.  Its cost, a signal per fault,
 * is small beside the MPI round trip that serves it
 * (docs/performance.md).
 *
 * The protocol (docs/architecture.md, "Device pages on demand"):
 * - The faulting thread (a kernel's thread: the handler thread or one of
 *   the kernel's libomp threads) never serves its own fault: from the
 *   signal handler it pushes a request that lives on its own stack onto a
 *   lock-free list (MPSC), writes one byte to a pipe, and sleeps on a futex
 *   in the request.  Only async-signal-safe steps: atomics, write(2),
 *   futex(2).  It holds no lock of ours, and MPI is never entered there.
 * - The service thread (one per executor) asks the head, which keeps where
 *   the valid copy of every buffer lives, for a block of the buffer from
 *   the faulting page on (OMPC_FAULT_BLOCK).  The head reads it from the
 *   valid copy (an executor, or its own snapshot) like a `from` copy.
 * - The block is filled off to the side and moved into place with mremap,
 *   read-only: no other thread ever sees a half-filled page.  A write
 *   fault makes the page writable and keeps a twin (its bytes as fetched).
 * - At the end of each task, the bytes of every writable page that differ
 *   from its twin go back to the head, which patches the valid copy of the
 *   buffer and invalidates the others (dm_write): later kernels anywhere,
 *   `from` copies and `target update` see them.  Writers of different bytes
 *   of one page on different workers merge; only bytes that changed travel.
 * - Pages fetched this way are valid only while the tasks that may use
 *   them run: when the last kernel running on the executor ends, they are
 *   dropped, and a task that starts while others run drops the read-only
 *   ones first (it must see writes ordered before it).
 *
 * Faults outside the device range, from a thread while no kernel runs on
 * this rank, or on device addresses that belong to no buffer, go to the
 * handler that was there before (the sanitizer's, UCX's) or to the default
 * action: the rank dies of SIGSEGV and its supervisor names the kernel. */
#define _GNU_SOURCE
#include "dm_internal.h"
#include "ompc_trace.h"
#include "ompc_u64map.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* A fault waiting for service, on the faulting thread's stack. */
typedef struct dm_fault {
    uintptr_t addr;
    int write;
    _Atomic uint32_t state; /* FAULT_* */
    struct dm_fault *next;
} dm_fault_t;

enum { FAULT_WAITING = 0, FAULT_SERVED = 1, FAULT_REFUSED = 2 };

/* A stale copy to close when task seq starts (dm_exec_close). */
typedef struct dm_close {
    uint64_t seq, epoch;
    uintptr_t addr;
    size_t span;
} dm_close_t;

/* A commit not mapped yet (dm_pages_commit_ahead): its data is on the way,
 * or a kernel running here holds pages of its range through faults. */
typedef struct dm_defer {
    uint64_t seq, epoch; /* seq: the task it is for (0: not known) */
    uintptr_t addr;
    size_t span;
    bool data;           /* its data follows */
} dm_defer_t;

/* A page this executor holds through a fault. */
/* A buffer a task running here names (docs/architecture.md, "Writes into
 * a worker's copy"), from its launch's list. */
typedef struct dm_named {
    uint64_t seq;
    uintptr_t addr;
    bool write;
} dm_named_t;

/* A small served copy that a kernel not naming it may write unseen: its
 * bytes as that kernel started, diffed against the copy when it ends
 * (shared_start, watches_end): a copy and a compare cost less than
 * protecting the copy and opening it again for its next writer. */
typedef struct dm_watch {
    uint64_t task; /* the kernel's task_watch */
    uintptr_t base;
    size_t span;
    unsigned char *snap; /* NULL once settled (watch_settle) */
    unsigned char *early; /* runs settled, sent at the kernel's end */
    size_t nearly, capearly;
} dm_watch_t;

/* At most this many bytes of served copies are watched for one kernel;
 * the others turn read-only (a kernel beside many served copies would
 * otherwise pay a copy of each at every start). */
#define DM_WATCH_MAX (4 * DM_PAGE)

typedef struct dm_fpage {
    uintptr_t addr;
    void *twin; /* writable pages: the bytes as fetched or last written back */
    bool committed; /* a page of a read-only committed copy, written by a
                       kernel: read-only again once written back */
} dm_fpage_t;

/* The head's answer to a fetch.  from_rank < 0: the len bytes follow (in
 * the reply, or in the executor's staging buffer).  Else another worker
 * holds the copy to read: the executor reads n_in bytes from from_addr on
 * from_rank itself, and the rest of the block reads as zeros. */
typedef struct dm_fetch_hdr {
    uint64_t start, len;      /* pages served, from the faulting one on */
    uint64_t buf_addr, buf_size;
    uint64_t first;           /* 1: the first fault on this buffer anywhere */
    int64_t from_rank;
    uint64_t from_addr, n_in;
} dm_fetch_hdr_t;

struct dm_pages {
    dm_ctx_t *dm;
    size_t block;                  /* OMPC_FAULT_BLOCK, whole pages */
    int wake[2];                   /* pipe: signal handlers -> service */
    _Atomic(dm_fault_t *) reqs;    /* MPSC: handlers push, service takes all */
    _Atomic int running;           /* kernels running on this executor */
    _Atomic bool stop;
    pthread_t svc;
    bool svc_started;
    struct sigaction old_segv;
    void (*namer)(char *buf, size_t cap);
    /* mtx guards drop_epoch (how many times a task began while others
     * ran, and their read-only pages were dropped) and seqs (the
     * launched-ahead tasks running here, named in fetches).  pages, those
     * held through faults (key: address), is guarded by map_mtx as well: a
     * commit on the gate thread takes only map_mtx.  No thread waits on an
     * event while it holds either (a fetch, a write-back): the gate moves
     * the reply the waiter needs, and a task may begin or end on it. */
    pthread_mutex_t mtx;
    ompc_u64map_t pages;
    uint64_t drop_epoch;
    uint64_t *seqs;
    size_t nseqs, capseqs;
    /* Under map_mtx: closes waiting for their task, and per buffer
     * address the highest epoch of a commit seen (a close up to it is
     * cancelled: the copy was committed again after the close was
     * listed). */
    dm_close_t *closes;
    size_t ncloses, capcloses;
    ompc_u64map_t cepochs;
    ompc_u64map_t landed;          /* address -> cepochs when data landed */
    ompc_u64map_t closed;          /* address -> number of the last close
                                      applied here */
    ompc_u64map_t seen;            /* address -> highest number of a commit
                                      here (its buffer's serial high) */
    _Atomic size_t ncep;           /* entries of cepochs */
    /* Under map_mtx: copies committed again after a close, without access
     * until their data lands (buffer address -> span); ndark counts them
     * for the landing path's quick check. */
    ompc_u64map_t dark;
    _Atomic size_t ndark;
    /* Under map_mtx: streams landing off to the side (dm_pages_land_stage;
     * where the bytes go -> its dm_stage_t). */
    ompc_u64map_t stages;
    /* Under map_mtx: commits not mapped yet (ndefers for the landing
     * path's quick check), and the block the service thread is fetching
     * ([fetch_lo, fetch_hi), empty when none): a commit or a landing over
     * it waits like one over pages held. */
    dm_defer_t *defers;
    size_t capdefers;
    _Atomic size_t ndefers;
    uintptr_t fetch_lo, fetch_hi;
    /* Under map_mtx: committed copies that are read-only here (buffer
     * address -> span), because a copy of them was made on another worker
     * (dm_pages_served): a kernel's write into one faults and goes back to
     * the head like any write through a fault.  nro counts them for the
     * fast paths. */
    ompc_u64map_t ro;
    _Atomic size_t nro;
    /* Under map_mtx: copies served to another worker that are still
     * writable here (buffer address -> span).  One turns read-only when a
     * kernel that does not name it starts here, or at once when such a
     * kernel runs as it is served: a program whose kernels name what they
     * touch pays nothing for it.  named lists the buffers the running
     * tasks' launches named; nblind counts the running tasks whose launch
     * named none (launched directly, or before any copy moved): those
     * count as naming nothing.  served is set once anything was served
     * (then a task launched directly takes map_mtx as it starts). */
    ompc_u64map_t shared;
    _Atomic size_t nshared;
    dm_named_t *named;
    size_t nnamed, capnamed;
    _Atomic size_t nblind;
    _Atomic bool served;
    /* Under map_mtx: the watched copies of the running kernels (nwatch
     * for the fast paths), and the source of their task_watch ids. */
    dm_watch_t *watches;
    size_t capwatches;
    _Atomic size_t nwatch;
    _Atomic uint64_t watch_ids;
    int memfd;                     /* /proc/self/mem, or -1 (dm_exec_store) */
    void *fetch_buf;               /* block bytes, exposed to events */
    unsigned char *reply;          /* EV_EXEC_MAX_RESULT: a fetch's reply */
    /* This executor's counts (its own figures; the head keeps per-worker
     * totals for OMPC_STATS). */
    _Atomic uint64_t faults;
};

/* One SIGSEGV handler per process: it finds its context here.  And the
 * head's fetch and write-back functions find their data manager here (the
 * event system passes no context to a function; a process has one). */
static _Atomic(dm_pages_t *) dm_pages_live;
static _Atomic(dm_ctx_t *) dm_fn_owner;
static uintptr_t live_base, live_end;

/* Commits and decommits of whole buffers (gate thread) and the service
 * thread's page changes exclude each other, so that a page is never both
 * a fault page and part of a committed buffer being mapped. */
static pthread_mutex_t map_mtx = PTHREAD_MUTEX_INITIALIZER;
void dm_pages_map_lock(void) { pthread_mutex_lock(&map_mtx); }
void dm_pages_map_unlock(void) { pthread_mutex_unlock(&map_mtx); }

/* ------------------------------------------ guarded pages kept protected
 * The pages a split share's guards protected and its kernel never touched
 * stay protected after dm_guard_end (docs/architecture.md, "Loops split
 * across workers": their bytes are stale here, and a member's copy of a
 * spread buffer keeps them stale until the next split over the same
 * members protects them again, or a gather or a copy lands over them).
 * Protecting and opening them on every split cost two mprotect calls
 * over most of the other shares' pieces; kept, a stencil's next split
 * protects nothing new.  Each slot holds one stretch, packed so that a
 * slot changes in one atomic step: the page number above KEPT_NBITS, the
 * page count below; 0 is a free slot.  A slot goes from a stretch to 0 by
 * exactly one taker (atomic exchange or compare-and-swap), who then owns
 * opening it or knowing it protected: dm_guard_begin takes them all (a
 * split's guards protect what they need), a landing over one opens it
 * (kept_drop), a commit, close or decommit forgets it (its mapping is
 * reset there), and the SIGSEGV handler opens the one a thread touches
 * outside a split (a kept span reused by a new buffer; the stale bytes it
 * then sees are what an open page would have shown). */
#define KEPT_SLOTS 256
#define KEPT_NBITS 28
static _Atomic uint64_t kept[KEPT_SLOTS];
static _Atomic size_t kept_used; /* slots published since the last take */

static uint64_t kept_pack(uintptr_t addr, uint64_t npages)
{
    return (uint64_t)(addr / DM_PAGE) << KEPT_NBITS | npages;
}

static uintptr_t kept_addr(uint64_t v) { return (uintptr_t)(v >> KEPT_NBITS) * DM_PAGE; }

static uint64_t kept_len(uint64_t v)
{
    return (v & (((uint64_t)1 << KEPT_NBITS) - 1)) * DM_PAGE;
}

/* Publish [addr, addr+len) (page-aligned, protected) as kept; false when
 * no slot is free or it is too long for one (the caller opens it). */
static bool kept_put(uintptr_t addr, uint64_t len)
{
    uint64_t np = len / DM_PAGE;
    if (np == 0 || np >= ((uint64_t)1 << KEPT_NBITS))
        return false;
    for (size_t i = 0; i < KEPT_SLOTS; i++) {
        uint64_t z = 0;
        if (atomic_compare_exchange_strong(&kept[i], &z, kept_pack(addr, np))) {
            atomic_fetch_add(&kept_used, 1);
            return true;
        }
    }
    return false;
}

/* The stretches kept over [addr, addr+size), taken off the table; opened
 * when open is set (a landing's bytes come next), else only forgotten. */
static void kept_drop(uintptr_t addr, size_t size, bool open)
{
    if (atomic_load_explicit(&kept_used, memory_order_relaxed) == 0)
        return;
    for (size_t i = 0; i < KEPT_SLOTS; i++) {
        uint64_t v = atomic_load_explicit(&kept[i], memory_order_relaxed);
        if (!v || kept_addr(v) >= addr + size || kept_addr(v) + kept_len(v) <= addr)
            continue;
        if (!atomic_compare_exchange_strong(&kept[i], &v, 0))
            continue;
        if (open && mprotect((void *)kept_addr(v), (size_t)kept_len(v),
                             PROT_READ | PROT_WRITE) != 0)
            ompc_fatal("cannot open kept device pages at %#llx",
                       (unsigned long long)kept_addr(v));
    }
}

/* SIGSEGV handler, any thread: whether a was in a kept stretch, opened
 * now (or taken meanwhile by another taker, who opens it or guards it:
 * either way the access is tried again, and faults again if it must). */
static bool kept_open_sig(uintptr_t a)
{
    if (atomic_load_explicit(&kept_used, memory_order_relaxed) == 0)
        return false;
    for (size_t i = 0; i < KEPT_SLOTS; i++) {
        uint64_t v = atomic_load_explicit(&kept[i], memory_order_relaxed);
        if (!v || a < kept_addr(v) || a >= kept_addr(v) + kept_len(v))
            continue;
        if (!atomic_compare_exchange_strong(&kept[i], &v, 0))
            return true;
        return mprotect((void *)kept_addr(v), (size_t)kept_len(v),
                        PROT_READ | PROT_WRITE) == 0;
    }
    return false;
}

void dm_pages_kept_forget(uintptr_t addr, size_t span) { kept_drop(addr, span, false); }

static long futex(_Atomic uint32_t *w, int op, uint32_t val)
{
    return syscall(SYS_futex, (uint32_t *)w, op, val, NULL, NULL, 0);
}

/* Async-signal-safe: writes a whole message with write(2). */
static void say(const char *msg, size_t len)
{
    while (len > 0) {
        ssize_t w = write(STDERR_FILENO, msg, len);
        if (w <= 0)
            return;
        msg += w;
        len -= (size_t)w;
    }
}

/* The handler that was there before ours, or the default action: then the
 * access faults again and the rank dies of SIGSEGV (its supervisor names
 * the kernel that ran). */
static void chain(dm_pages_t *pg, int sig, siginfo_t *si, void *uc)
{
    /* No context (the handler outlived it): the default action. */
    const struct sigaction *old = pg ? &pg->old_segv : NULL;
    if (old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(sig, si, uc);
        return;
    }
    if (old && !(old->sa_flags & SA_SIGINFO) && old->sa_handler != SIG_DFL &&
        old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
        return;
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGSEGV, &dfl, NULL);
}

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    uintptr_t a = (uintptr_t)si->si_addr;
    if (pg && si->si_code == SEGV_ACCERR && a >= live_base && a < live_end &&
        kept_open_sig(a)) {
        errno = saved; /* the access is tried again */
        return;
    }
    if (!pg || si->si_code != SEGV_ACCERR || a < live_base || a >= live_end ||
        atomic_load(&pg->running) == 0 ||
        (pg->svc_started && pthread_equal(pthread_self(), pg->svc))) {
        chain(pg, sig, si, ucv);
        errno = saved;
        return;
    }
    int is_write = 1; /* unknown: a write fault serves a read too */
#if defined(__x86_64__)
    const ucontext_t *uc = ucv;
    is_write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
    dm_fault_t f = {.addr = a, .write = is_write, .state = FAULT_WAITING, .next = NULL};
    dm_fault_t *top = atomic_load(&pg->reqs);
    do
        f.next = top;
    while (!atomic_compare_exchange_weak(&pg->reqs, &top, &f));
    char one = 1;
    while (write(pg->wake[1], &one, 1) < 0 && errno == EINTR)
        ;
    uint32_t s;
    while ((s = atomic_load(&f.state)) == FAULT_WAITING)
        futex(&f.state, FUTEX_WAIT_PRIVATE, FAULT_WAITING);
    if (s == FAULT_REFUSED) {
        /* The service thread wrote the message (not async-signal-safe
         * work), naming the address. */
        chain(pg, sig, si, ucv);
    }
    errno = saved;
}

/* ------------------------------------------------------------ head side */
static int exec_of_rank(const dm_ctx_t *dm, int rank)
{
    for (int e = 0; e < dm->nexec; e++)
        if (dm->exec_rank[e] == rank)
            return e;
    return -1;
}

/* dm->mtx held: the executor other than exec whose copy of b a fault of
 * exec reads, or -1 when the head serves the bytes itself (its snapshot
 * is the valid copy, the buffer was never written, or only exec's own
 * copy is valid: its commit is in flight). */
static int page_holder(const dm_ctx_t *dm, const dm_buf_t *b, int exec)
{
    if (b->snap_valid || !b->has_data)
        return -1;
    for (int e = 0; e < dm->nexec; e++)
        if (b->valid[e] && e != exec)
            return e;
    return -1;
}

/* Serve a fault of executor exec at addr: *h_p, and up to block bytes of
 * the buffer holding addr, from its page on, into bytes (block bytes).
 * seqs: the launched-ahead tasks running on exec (dm_set_fault_source).
 * peer: exec may read the bytes from another worker itself; when that
 * worker holds the copy to read, *h_p names it (from_rank) and bytes is
 * left alone.  OMPC_ERR_INVALID if no buffer holds addr. */
static ompc_status_t page_serve(dm_ctx_t *dm, int exec, uint64_t addr, uint64_t block,
                                const uint64_t *seqs, size_t nseqs, bool peer,
                                dm_fetch_hdr_t *h_p, void *bytes)
{
    dm_fetch_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.from_rank = -1;
    if (atomic_load(&dm->nspread) > 0) {
        /* A buffer a split kernel left spread: its pieces go home first. */
        dm_buf_t *sb = dm_buf_find(dm, addr, 1, NULL);
        if (sb) {
            ompc_status_t gst = dm_gather(dm, &sb, 1);
            if (gst != OMPC_OK)
                return gst;
        }
    }
    pthread_mutex_lock(&dm->mtx);
    ompc_tmap_node_t *n = ompc_tmap_floor(&dm->bufs, addr);
    dm_buf_t *b = n ? OMPC_TMAP_ENTRY(n, dm_buf_t, node) : NULL;
    if (!b || b->fixed || addr >= b->node.key + b->span) {
        pthread_mutex_unlock(&dm->mtx);
        ompc_debug("page fault of executor %d at %#llx: in no device buffer", exec,
                   (unsigned long long)addr);
        return OMPC_ERR_INVALID;
    }
    h.start = addr & ~(uint64_t)(DM_PAGE - 1);
    uint64_t end = b->node.key + b->span;
    h.len = end - h.start < block ? end - h.start : block;
    h.buf_addr = b->node.key;
    h.buf_size = b->size;
    h.first = !b->faulted;
    b->faulted = true;
    uint64_t off = h.start - h.buf_addr;
    /* Bytes past the buffer's size (the rest of its last page) are zeros;
     * a buffer never written reads as zeros. */
    h.n_in = off < h.buf_size ? (h.buf_size - off < h.len ? h.buf_size - off : h.len) : 0;
    int holder = peer ? page_holder(dm, b, exec) : -1;
    if (exec >= 0) {
        dm->pstats[exec].faults++;
        dm->pstats[exec].bytes_fetched += h.len;
    }
    pthread_mutex_unlock(&dm->mtx);
    /* A writer the faulting task follows may be done on its executor
     * before the head has handled its completion (launch ahead): its
     * bytes are there, not in the copy the bookkeeping names yet. */
    int src = -1;
    if (dm->fault_source && exec >= 0 && nseqs > 0)
        src = dm->fault_source(exec, seqs, nseqs, h.buf_addr);
    if (src >= 0 && src != exec)
        holder = peer ? src : -1;
    if (holder >= 0 && h.n_in > 0) {
        /* The faulting executor reads the copy straight from its holder:
         * the bytes skip the head (docs/architecture.md, "Device pages on
         * demand").  The holder's copy is current now; a write ordered
         * before the faulting task reached it before that task began. */
        h.from_rank = dm->exec_rank[holder];
        h.from_addr = h.buf_addr + off;
        pthread_mutex_lock(&dm->mtx);
        dm->pstats[exec].peer_faults++;
        dm->pstats[exec].bytes_from_peers += h.n_in;
        pthread_mutex_unlock(&dm->mtx);
        dm_count_forward(dm, h.n_in);
        *h_p = h;
        return OMPC_OK;
    }
    memset(bytes, 0, h.len);
    ompc_status_t st = OMPC_OK;
    if (h.n_in > 0)
        st = src >= 0 && src != exec ? dm_read_on(dm, b, src, off, bytes, h.n_in)
                                     : dm_read(dm, b, off, bytes, h.n_in);
    if (st == OMPC_OK)
        *h_p = h;
    return st;
}

/* The refusal of a write through faults that a named writer running at
 * the same time on another executor would undo. */
static void page_write_clash(dm_ctx_t *dm, int exec, const dm_buf_t *b, int named_by)
{
    ompc_fatal_user("a kernel on rank %d wrote device buffer %#llx (%zu bytes) through "
                    "page faults while a kernel running at the same time on rank %d "
                    "names that buffer and may write it: the two writes cannot be "
                    "merged; order the two target tasks with depend, or name the "
                    "buffer in both (OMPC_INFO=1 names the kernels)",
                    exec >= 0 ? dm->exec_rank[exec] : -1, (unsigned long long)b->node.key,
                    b->size, dm->exec_rank[named_by]);
}

/* Patches of a write-back in flight at once (page_write): a write-back
 * of scattered bytes has a run per few bytes, and each patch of a copy on
 * a worker waited for alone cost a round trip. */
#define PW_FLIGHT 64

/* Wait for the n patches in hs; the first error goes to *first. */
static void pw_flush(ev_handle_t **hs, size_t *n, ompc_status_t *first)
{
    ompc_status_t st = ev_wait_all(hs, *n);
    for (size_t i = 0; i < *n; i++)
        ev_handle_release(hs[i]);
    *n = 0;
    if (st != OMPC_OK && *first == OMPC_OK)
        *first = st;
}

/* A write-back (the runs of ompc_dm.h).  Each run patches the valid copy
 * of its buffer (the others become invalid).  For a task launched ahead
 * (seq), the graph's hooks first order the patch after the writers
 * before the task, then send the runs on to the tasks launched before
 * the write that read the buffer.  Runs into a buffer the writing task
 * itself names for writing are dropped: they came from its own copy,
 * read-only there because its opening was missed, and its completion
 * makes that copy the only valid one; a patch elsewhere would make it
 * stale, and a later close of it would lose the task's writes. */
static ompc_status_t page_write(dm_ctx_t *dm, int exec, const void *args, size_t size)
{
    const unsigned char *p = args, *end = p + size, *runs = NULL;
    ompc_status_t first = OMPC_OK;
    uint64_t seq = 0;
    const dm_buf_t *ordered = NULL; /* the buffer the order hook last saw */
    bool own = false;               /* ordered is the writer's own */
    bool served = false;            /* the runs come from a served copy */
    ev_handle_t *flight[PW_FLIGHT]; /* patches not waited for yet */
    size_t nflight = 0;
    unsigned char *kept = NULL;     /* the runs kept, once one is dropped */
    size_t nkept = 0;
    while (p + 16 <= end) {
        uint64_t addr, len;
        memcpy(&addr, p, 8);
        memcpy(&len, p + 8, 8);
        uint64_t padded = (len + 7) & ~(uint64_t)7;
        if (len == 0 || padded > (uint64_t)(end - p - 16)) {
            pw_flush(flight, &nflight, &first);
            free(kept);
            return OMPC_ERR_INVALID;
        }
        if (addr == 0 && (len == 8 || len == 16)) {
            memcpy(&seq, p + 16, 8);
            uint64_t from_served = 0;
            if (len == 16)
                memcpy(&from_served, p + 24, 8);
            if (from_served && exec >= 0) {
                pthread_mutex_lock(&dm->mtx);
                dm->pstats[exec].served_writes++;
                pthread_mutex_unlock(&dm->mtx);
            }
            served = from_served != 0;
            p += 16 + padded;
            continue;
        }
        if (!runs)
            runs = p;
        const unsigned char *run = p;
        p += 16;
        size_t off;
        dm_buf_t *b = dm_buf_find(dm, addr, 1, &off);
        if (b && !b->fixed && b != ordered) {
            if (seq && dm->fw_hooks.order) {
                own = dm->fw_hooks.order(exec, seq, b->node.key, b->size);
            } else {
                pthread_mutex_lock(&dm->mtx);
                own = exec >= 0 && b->pin_count > 0 && b->pin_exec == exec;
                int named_by = b->pin_count > 0 && b->pin_exec != exec ? b->pin_exec : -1;
                pthread_mutex_unlock(&dm->mtx);
                if (named_by >= 0)
                    /* That kernel's completion makes its own copy the only
                     * valid one: these bytes would be lost.  Never
                     * silently. */
                    page_write_clash(dm, exec, b, named_by);
            }
            ordered = b;
        }
        if (b && !b->fixed && own) {
            if (!kept) {
                kept = malloc((size_t)(end - runs));
                if (!kept) {
                    pw_flush(flight, &nflight, &first);
                    return OMPC_ERR_NOMEM;
                }
                nkept = (size_t)(run - runs);
                memcpy(kept, runs, nkept);
            }
            p += padded;
            continue;
        }
        if (kept) {
            memcpy(kept + nkept, run, 16 + (size_t)padded);
            nkept += 16 + (size_t)padded;
        }
        if (b && !b->fixed) {
            /* Bytes past the buffer's size belong to nobody. */
            uint64_t n_in = off < b->size ? (b->size - off < len ? b->size - off : len)
                                          : 0;
            ev_handle_t *h = NULL;
            ompc_status_t st = n_in ? dm_write_start(dm, b, off, p, n_in, &h) : OMPC_OK;
            if (h)
                flight[nflight++] = h;
            if (nflight == PW_FLIGHT)
                pw_flush(flight, &nflight, &first);
            if (st != OMPC_OK && first == OMPC_OK)
                first = st;
            pthread_mutex_lock(&dm->mtx);
            if (exec >= 0) {
                dm->pstats[exec].bytes_written_back += n_in;
                if (served)
                    dm->pstats[exec].bytes_from_served += n_in;
            }
            pthread_mutex_unlock(&dm->mtx);
        }
        p += padded;
    }
    pw_flush(flight, &nflight, &first);
    if (first == OMPC_OK && seq && runs && dm->fw_hooks.done) {
        if (!kept)
            dm->fw_hooks.done(exec, seq, runs, (size_t)(end - runs));
        else if (nkept)
            dm->fw_hooks.done(exec, seq, kept, nkept);
    }
    free(kept);
    return first;
}

/* args {addr, block, staging, seqs of the tasks running there...}: the
 * result is the dm_fetch_hdr_t.  When another worker holds the copy to
 * read, the header names it and the executor reads the bytes from there
 * itself.  Else they come through the head's memory (its own snapshot,
 * or the executor's own copy whose commit is in flight): with the reply,
 * or into the executor's staging buffer (exposed to events) when they do
 * not fit there. */
static ompc_status_t dm_fn_page_fetch(ev_exec_info_t *info)
{
    dm_ctx_t *dm = atomic_load(&dm_fn_owner);
    uint64_t a[3];
    if (!dm || info->args_size < sizeof(a) || info->args_size % 8 ||
        info->result_cap < sizeof(dm_fetch_hdr_t))
        return OMPC_ERR_INVALID;
    memcpy(a, info->args, sizeof(a));
    size_t nseqs = (info->args_size - sizeof(a)) / 8;
    uint64_t *seqs = nseqs ? malloc(nseqs * 8) : NULL;
    if (nseqs && !seqs)
        return OMPC_ERR_NOMEM;
    if (nseqs)
        memcpy(seqs, (const char *)info->args + sizeof(a), nseqs * 8);
    if (a[1] == 0 || a[1] > ((uint64_t)1 << 26)) {
        free(seqs);
        return OMPC_ERR_INVALID;
    }
    void *tmp = malloc(a[1]);
    if (!tmp) {
        free(seqs);
        return OMPC_ERR_NOMEM;
    }
    dm_fetch_hdr_t h;
    int exec = exec_of_rank(dm, info->origin);
    ompc_status_t st = page_serve(dm, exec, a[0], a[1], seqs, nseqs, exec >= 0, &h, tmp);
    free(seqs);
    bool inline_bytes = st == OMPC_OK && h.from_rank < 0 &&
                        sizeof(h) + h.len <= info->result_cap;
    if (st == OMPC_OK && h.from_rank >= 0) {
        /* The executor reads the bytes from their holder itself. */
    } else if (inline_bytes) {
        /* With the reply: one message fewer on the fault's path. */
        memcpy((char *)info->result + sizeof(h), tmp, h.len);
    } else if (st == OMPC_OK) {
        ev_handle_t *hs = NULL;
        st = ev_finish(ev_submit(info->ctx, info->origin, tmp, a[2], h.len, &hs), hs);
    }
    free(tmp);
    if (st == OMPC_OK) {
        memcpy(info->result, &h, sizeof(h));
        info->result_size = sizeof(h) + (inline_bytes ? h.len : 0);
    }
    return st;
}

static ompc_status_t dm_fn_page_write(ev_exec_info_t *info)
{
    dm_ctx_t *dm = atomic_load(&dm_fn_owner);
    if (!dm)
        return OMPC_ERR_INVALID;
    return page_write(dm, exec_of_rank(dm, info->origin), info->args, info->args_size);
}

void dm_set_fault_write_hooks(dm_ctx_t *dm, const dm_fault_write_hooks_t *hooks)
{
    dm->fw_hooks = *hooks;
}

void dm_set_fault_source(dm_ctx_t *dm, dm_fault_source_fn_t fn) { dm->fault_source = fn; }

void dm_page_stats_of(dm_ctx_t *dm, int exec, dm_page_stats_t *stats_p)
{
    pthread_mutex_lock(&dm->mtx);
    *stats_p = dm->pstats[exec];
    pthread_mutex_unlock(&dm->mtx);
}

/* -------------------------------------------------------- executor side */
static bool page_committed(dm_pages_t *pg, uintptr_t page)
{
    return ev_mem_contains(pg->dm->ev, (const void *)page, DM_PAGE);
}

/* map_mtx held: the read-only committed copy holding addr (its address
 * and span), if any. */
static bool ro_find(dm_pages_t *pg, uintptr_t addr, uintptr_t *base_p, size_t *span_p)
{
    if (atomic_load_explicit(&pg->nro, memory_order_relaxed) == 0)
        return false;
    uintptr_t base;
    size_t size;
    uint64_t span;
    if (!ev_mem_find(pg->dm->ev, (const void *)addr, &base, &size) ||
        !ompc_u64map_get(&pg->ro, base, &span))
        return false;
    if (base_p)
        *base_p = base;
    if (span_p)
        *span_p = (size_t)span;
    return true;
}

/* map_mtx held: the copy at base is no longer read-only here (opened by
 * the caller, mapped afresh or closed). */
static void ro_forget(dm_pages_t *pg, uintptr_t base)
{
    uint64_t v;
    if (atomic_load_explicit(&pg->nro, memory_order_relaxed) > 0 &&
        ompc_u64map_remove(&pg->ro, base, &v))
        atomic_fetch_sub(&pg->nro, 1);
    if (atomic_load_explicit(&pg->nshared, memory_order_relaxed) > 0 &&
        ompc_u64map_remove(&pg->shared, base, &v))
        atomic_fetch_sub(&pg->nshared, 1);
    /* Made anew or closed: nothing left to diff.  A watch settled before
     * keeps its runs (its kernel's own writes, sent at its end). */
    for (size_t i = 0; i < atomic_load_explicit(&pg->nwatch, memory_order_relaxed);)
        if (pg->watches[i].base == base && pg->watches[i].snap) {
            free(pg->watches[i].snap);
            free(pg->watches[i].early);
            pg->watches[i] = pg->watches[atomic_fetch_sub(&pg->nwatch, 1) - 1];
        } else {
            i++;
        }
}

/* The watch id of the kernel this thread runs (dm_pages_task_begin to
 * _end). */
static _Thread_local uint64_t task_watch;

/* map_mtx held: watch the copy at base for the kernel this thread starts;
 * false if it cannot (then it is protected). */
static bool watch_add(dm_pages_t *pg, uintptr_t base, size_t span)
{
    size_t n = atomic_load_explicit(&pg->nwatch, memory_order_relaxed);
    if (n == pg->capwatches) {
        size_t nc = pg->capwatches ? 2 * pg->capwatches : 8;
        dm_watch_t *v = realloc(pg->watches, nc * sizeof(*v));
        if (!v)
            return false;
        pg->watches = v;
        pg->capwatches = nc;
    }
    unsigned char *snap = malloc(span);
    if (!snap)
        return false;
    memcpy(snap, (const void *)base, span);
    pg->watches[n] = (dm_watch_t){task_watch, base, span, snap, NULL, 0, 0};
    atomic_fetch_add(&pg->nwatch, 1);
    return true;
}

/* map_mtx held: the copy at base (span bytes) turns read-only. */
static void ro_protect(dm_pages_t *pg, uintptr_t base, size_t span)
{
    if (mprotect((void *)base, span, PROT_READ) != 0 ||
        ompc_u64map_put(&pg->ro, base, span) != OMPC_OK)
        ompc_fatal("rank %d: cannot protect device buffer %#llx", ev_ctx_rank(pg->dm->ev),
                   (unsigned long long)base);
    atomic_fetch_add(&pg->nro, 1);
}

/* map_mtx held: whether running task seq's launch named the buffer at
 * addr. */
static bool named_by(const dm_pages_t *pg, uint64_t seq, uintptr_t addr)
{
    for (size_t i = 0; i < pg->nnamed; i++)
        if (pg->named[i].seq == seq && pg->named[i].addr == addr)
            return true;
    return false;
}

/* map_mtx held: whether a task running here names the buffer at addr for
 * writing (its completion makes this copy the only current one). */
static bool named_writer(const dm_pages_t *pg, uintptr_t addr)
{
    for (size_t i = 0; i < pg->nnamed; i++)
        if (pg->named[i].addr == addr && pg->named[i].write)
            return true;
    return false;
}

/* map_mtx held: whether every task running here names the buffer at
 * addr (then a copy of it served now may stay writable). */
static bool named_by_all(const dm_pages_t *pg, uintptr_t addr)
{
    if (atomic_load(&pg->nblind) > 0)
        return false;
    for (size_t i = 0; i < pg->nnamed; i++)
        if (!named_by(pg, pg->named[i].seq, addr))
            return false;
    return true;
}

static bool page_dark(dm_pages_t *pg, uintptr_t page);

/* map_mtx held: task seq starts here (blind: its launch named nothing).
 * The served copies it does not name are watched, up to DM_WATCH_MAX
 * bytes of small ones, and stay served; the others turn read-only (one
 * kept dark since its commit stays without access). */
static void shared_start(dm_pages_t *pg, uint64_t seq, bool blind)
{
    if (atomic_load_explicit(&pg->nshared, memory_order_relaxed) == 0)
        return;
    size_t pos = 0, n = 0, watched = 0;
    uint64_t k, v, *drop = malloc(ompc_u64map_size(&pg->shared) * 2 * sizeof(uint64_t));
    if (!drop)
        ompc_fatal("rank %d: out of memory starting a kernel", ev_ctx_rank(pg->dm->ev));
    while (ompc_u64map_next(&pg->shared, &pos, &k, &v))
        if (blind || !named_by(pg, seq, (uintptr_t)k)) {
            if (v % DM_PAGE == 0 && watched + v <= DM_WATCH_MAX &&
                !page_dark(pg, (uintptr_t)k) && watch_add(pg, (uintptr_t)k, (size_t)v)) {
                watched += v;
                continue;
            }
            drop[2 * n] = k;
            drop[2 * n++ + 1] = v;
        }
    for (size_t i = 0; i < n; i++) {
        ompc_u64map_remove(&pg->shared, drop[2 * i], &v);
        atomic_fetch_sub(&pg->nshared, 1);
        if (!page_dark(pg, (uintptr_t)drop[2 * i]))
            ro_protect(pg, (uintptr_t)drop[2 * i], (size_t)drop[2 * i + 1]);
    }
    free(drop);
}

/* Back to PROT_NONE, memory returned (map_mtx held).  A page of a
 * committed copy goes back to read-only while its copy is. */
static void page_drop(dm_pages_t *pg, dm_fpage_t *e)
{
    if (!page_committed(pg, e->addr))
        mmap((void *)e->addr, DM_PAGE, PROT_NONE,
             MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    else if (e->committed && ro_find(pg, e->addr, NULL, NULL) &&
             mprotect((void *)e->addr, DM_PAGE, PROT_READ) != 0)
        ompc_fatal("rank %d: cannot protect device page %#llx again",
                   ev_ctx_rank(pg->dm->ev), (unsigned long long)e->addr);
    free(e->twin);
    free(e);
}

/* Fill [addr, addr+len) with bytes, read-only, in one step (map_mtx held):
 * prepared off to the side and moved into place, so that no thread of a
 * running kernel sees the page before its bytes. */
static bool pages_install(uintptr_t addr, size_t len, const void *bytes)
{
    void *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        return false;
    memcpy(s, bytes, len);
    /* The system call itself: UCX's memory hooks replace mremap with a
     * function that drops the new address (the page then lands at 0).  No
     * registration cache needs to hear of this move: the staging pages
     * never served as an MPI buffer. */
    if (mprotect(s, len, PROT_READ) != 0 ||
        (void *)syscall(SYS_mremap, s, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
                        (void *)addr) != (void *)addr) {
        munmap(s, len);
        return false;
    }
    return true;
}

static dm_fpage_t *fpage_get(dm_pages_t *pg, uintptr_t page)
{
    uint64_t v;
    return ompc_u64map_get(&pg->pages, page, &v) ? (dm_fpage_t *)(uintptr_t)v : NULL;
}

/* map_mtx held: whether a page of [addr, addr+span) is held through a
 * fault, or is being fetched for one. */
static bool range_held(dm_pages_t *pg, uintptr_t addr, size_t span)
{
    if (pg->fetch_lo < addr + span && addr < pg->fetch_hi)
        return true;
    if (ompc_u64map_size(&pg->pages) == 0)
        return false;
    size_t pos = 0;
    uint64_t k, v;
    while (ompc_u64map_next(&pg->pages, &pos, &k, &v))
        if (k >= addr && k < addr + span)
            return true;
    return false;
}

/* map_mtx held: the bookkeeping of a commit that arrived (false: it is
 * numbered before a close applied here and is dropped). */
static bool commit_note(dm_pages_t *pg, uintptr_t addr, uint64_t epoch,
                        ompc_status_t *st_p)
{
    uint64_t closed;
    if (pg && ompc_u64map_get(&pg->closed, addr, &closed) && epoch < closed) {
        /* Numbered before a close applied here (the head's dispatching
         * threads' messages crossed): the head forgot this commit when it
         * listed the close, and commits the copy again, numbered after it,
         * if a task here names it.  Mapping it would give a kernel here
         * zeros or old bytes where it must fault. */
        return false;
    }
    uint64_t seen;
    if (pg && (!ompc_u64map_get(&pg->seen, addr, &seen) || seen < epoch) &&
        ompc_u64map_put(&pg->seen, addr, epoch) != OMPC_OK)
        ompc_fatal("out of memory committing device memory");
    if (pg) {
        /* A close waiting here for an older buffer that had this address
         * (freed since): not this one's. */
        for (size_t i = 0; i < pg->ncloses;)
            if (pg->closes[i].addr == addr && pg->closes[i].epoch >> 32 != 0 &&
                pg->closes[i].epoch >> 32 < epoch >> 32)
                pg->closes[i] = pg->closes[--pg->ncloses];
            else
                i++;
    }
    if (pg && (epoch & 0xffffffffu)) {
        /* Committed again after a close was listed: its data is on the way
         * (closes_apply). */
        uint64_t old;
        if (!ompc_u64map_get(&pg->cepochs, addr, &old) || old < epoch)
            *st_p = ompc_u64map_put(&pg->cepochs, addr, epoch);
        atomic_store(&pg->ncep, ompc_u64map_size(&pg->cepochs));
    }
    return true;
}

/* map_mtx held: map and expose a committed range (unless it is already). */
static ompc_status_t commit_map(dm_pages_t *pg, ev_ctx_t *ev, uintptr_t addr, size_t span,
                                uint64_t epoch, bool until_land)
{
    ompc_status_t st = OMPC_OK;
    if (!ev_mem_contains(ev, (const void *)addr, span)) {
        kept_drop(addr, span, false);
        if (pg)
            ro_forget(pg, addr); /* mapped afresh below */
        size_t held = 0;
        for (uintptr_t q = addr; pg && q < addr + span; q += DM_PAGE) {
            dm_fpage_t *e = fpage_get(pg, q);
            /* Also while that kernel writes them back: the launch's data
             * was planned before the write and may still land over it. */
            if (e && e->twin)
                /* A launch planned this buffer's copy before the kernel
                 * running here wrote it through faults: the copy would
                 * replace those writes, and its bytes would travel back
                 * as the kernel's.  Never silently. */
                ompc_fatal_user(
                    "rank %d: a kernel running here wrote device buffer page %#llx "
                    "through page faults (a pointer none of its clauses names) while "
                    "a target task launched ahead of its end names that buffer and "
                    "brings its copy here: the write would be lost; name the buffer in "
                    "the writing kernel's map, is_device_ptr or depend clause, or set "
                    "OMPC_AHEAD=0",
                    ev_ctx_rank(ev), (unsigned long long)q);
            held += e != NULL;
        }
        /* A copy closed here before (epoch), or one mapped for data that
         * lands now (until_land): a kernel running here may still reach
         * it through a pointer, and must not read it before its data
         * landed, all of it.  Without access until then (dm_pages_land,
         * dm_pages_land_done); a kernel that touches it meanwhile waits
         * in serve_fault. */
        bool dark = pg && ((epoch & 0xffffffffu) > 0 || until_land);
        if (dark && held) {
            for (uintptr_t q = addr; q < addr + span; q += DM_PAGE) {
                uint64_t v;
                if (ompc_u64map_remove(&pg->pages, q, &v))
                    free((dm_fpage_t *)(uintptr_t)v);
            }
            held = 0;
        }
        /* Pages a kernel here holds through faults keep their bytes until
         * the buffer's data lands over them: prepared off to the side and
         * moved into place at once (a thread of that kernel may read them
         * meanwhile; a fresh mapping would show it zeros). */
        void *p = mmap(
            held ? NULL : (void *)addr, span, dark ? PROT_NONE : PROT_READ | PROT_WRITE,
            held ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
            -1, 0);
        if (p != MAP_FAILED && dark) {
            if (ompc_u64map_put(&pg->dark, addr, span) != OMPC_OK)
                p = MAP_FAILED;
            else
                atomic_fetch_add(&pg->ndark, 1);
        }
        if (p != MAP_FAILED && held) {
            for (uintptr_t q = addr; q < addr + span; q += DM_PAGE) {
                uint64_t v;
                if (!ompc_u64map_get(&pg->pages, q, &v))
                    continue;
                memcpy((char *)p + (q - addr), (const void *)q, DM_PAGE);
                ompc_u64map_remove(&pg->pages, q, &v);
                free((dm_fpage_t *)(uintptr_t)v);
            }
            if ((void *)syscall(SYS_mremap, p, span, span, MREMAP_MAYMOVE | MREMAP_FIXED,
                                (void *)addr) != (void *)addr) {
                munmap(p, span);
                p = MAP_FAILED;
            } else {
                p = (void *)addr;
            }
        }
        st = p == MAP_FAILED ? OMPC_ERR_NOMEM : ev_mem_register(ev, p, span);
    }
    return st;
}

/* map_mtx held: whether a commit of the copy at addr is kept for later. */
static bool defer_has(dm_pages_t *pg, uintptr_t addr)
{
    size_t n = atomic_load_explicit(&pg->ndefers, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        if (pg->defers[i].addr == addr)
            return true;
    return false;
}

/* map_mtx held: keep a commit for later (dm_pages_commit_ahead). */
static void defer_add(dm_pages_t *pg, uintptr_t addr, size_t span, uint64_t epoch,
                      uint64_t seq, bool data)
{
    size_t n = atomic_load(&pg->ndefers);
    for (size_t i = 0; i < n; i++)
        if (pg->defers[i].addr == addr) { /* a later commit of the same copy */
            if (epoch > pg->defers[i].epoch)
                pg->defers[i].epoch = epoch;
            if (!pg->defers[i].seq || (seq && seq < pg->defers[i].seq))
                pg->defers[i].seq = seq;
            pg->defers[i].data |= data;
            return;
        }
    if (n == pg->capdefers) {
        size_t nc = pg->capdefers ? 2 * pg->capdefers : 16;
        dm_defer_t *v = realloc(pg->defers, nc * sizeof(*v));
        if (!v)
            ompc_fatal("out of memory committing device memory");
        pg->defers = v;
        pg->capdefers = nc;
    }
    pg->defers[n] = (dm_defer_t){seq, epoch, addr, span, data};
    atomic_store(&pg->ndefers, n + 1);
    ompc_trace("commit of %#llx for task %llu kept for later", (unsigned long long)addr,
               (unsigned long long)seq);
}

/* map_mtx held: map deferred commit i now and forget it (landing: for its
 * data, which lands right after). */
static ompc_status_t defer_apply(dm_pages_t *pg, size_t i, bool landing)
{
    dm_defer_t d = pg->defers[i];
    ompc_trace("commit of %#llx for task %llu mapped", (unsigned long long)d.addr,
               (unsigned long long)d.seq);
    size_t n = atomic_load(&pg->ndefers) - 1;
    pg->defers[i] = pg->defers[n];
    atomic_store(&pg->ndefers, n);
    uint64_t closed;
    if (ompc_u64map_get(&pg->closed, d.addr, &closed) && d.epoch < closed)
        return OMPC_OK; /* a close applied since: as if it had come first */
    return commit_map(pg, pg->dm->ev, d.addr, d.span, d.epoch, landing && d.data);
}

/* A commit by the head's data manager (dm.commit): mapped at once, unless
 * a kernel running here holds pages of the range through faults (or is
 * fetching one): then it waits for its data, or for a task to start with
 * the range clear (defers_begin). */
ompc_status_t dm_pages_commit(ev_ctx_t *ev, uintptr_t addr, size_t span, uint64_t epoch)
{
    return dm_pages_commit_ahead(ev, addr, span, epoch, 0, false);
}

/* A commit: see dm_internal.h.  map_mtx alone (it guards pg->pages):
 * pg->mtx may be held by the service thread waiting for a fetch, whose
 * reply this gate thread must receive. */
ompc_status_t dm_pages_commit_ahead(ev_ctx_t *ev, uintptr_t addr, size_t span,
                                    uint64_t epoch, uint64_t seq, bool data_follows)
{
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    dm_pages_map_lock();
    ompc_status_t st = OMPC_OK;
    if (commit_note(pg, addr, epoch, &st) && st == OMPC_OK) {
        /* A commit in flight is repeated by the head in later launches
         * (dm_commit_claim): one already kept waits with it. */
        if (pg && !ev_mem_contains(ev, (const void *)addr, span) &&
            (data_follows || range_held(pg, addr, span) || defer_has(pg, addr)))
            defer_add(pg, addr, span, epoch, seq, data_follows);
        else
            st = commit_map(pg, ev, addr, span, epoch, false);
    }
    dm_pages_map_unlock();
    return st;
}

/* The event system's land-ready hook, and launch ahead's arrivals of bytes
 * (gate thread): data for a copy whose commit waits lands once no kernel
 * here holds pages of its range through faults, the commit mapped first;
 * until then it waits, and those kernels keep their pages. */
bool dm_pages_land_ready(uintptr_t addr, size_t size)
{
    kept_drop(addr, size, true);
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    if (!pg || atomic_load_explicit(&pg->ndefers, memory_order_relaxed) == 0)
        return true;
    bool ready = true;
    dm_pages_map_lock();
    for (size_t i = 0; i < atomic_load(&pg->ndefers); i++) {
        const dm_defer_t *d = &pg->defers[i];
        if (addr + size <= d->addr || addr >= d->addr + d->span)
            continue;
        if (range_held(pg, d->addr, d->span)) {
            ready = false;
            break;
        }
        if (defer_apply(pg, i, true) != OMPC_OK)
            ompc_fatal("rank %d: cannot map device buffer %#llx for its data",
                       ev_ctx_rank(pg->dm->ev), (unsigned long long)addr);
        i--; /* defer_apply moved the last one here */
    }
    dm_pages_map_unlock();
    return ready;
}

bool dm_exec_land_ready(dm_addr_t addr, size_t size)
{
    return dm_pages_land_ready((uintptr_t)addr, size);
}

/* map_mtx held, task seq starting here: its own deferred commits (a
 * buffer it names that no data comes for) are mapped now, and those of
 * unknown task no data follows whose range is clear (the task that needs
 * one starts after its commit was answered). */
static void defers_begin(dm_pages_t *pg, uint64_t seq)
{
    for (size_t i = 0; i < atomic_load(&pg->ndefers);) {
        const dm_defer_t *d = &pg->defers[i];
        bool mine = seq && d->seq == seq;
        if (!mine && (d->seq || d->data || range_held(pg, d->addr, d->span))) {
            i++;
            continue;
        }
        if (defer_apply(pg, i, false) != OMPC_OK)
            ompc_fatal("rank %d: cannot map device buffer %#llx for a kernel",
                       ev_ctx_rank(pg->dm->ev), (unsigned long long)d->addr);
    }
}

/* defers_begin for a task starting, when any commit is kept (checked
 * first without map_mtx, as the landing path does). */
static void defers_start(dm_pages_t *pg, uint64_t seq)
{
    if (!pg || atomic_load_explicit(&pg->ndefers, memory_order_relaxed) == 0)
        return;
    dm_pages_map_lock();
    defers_begin(pg, seq);
    dm_pages_map_unlock();
}

void dm_exec_task_commits(uint64_t seq)
{
    defers_start(atomic_load(&dm_pages_live), seq);
}

void dm_exec_close(uint64_t seq, dm_addr_t addr, size_t span, uint64_t epoch)
{
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    if (!pg || !seq)
        return;
    dm_pages_map_lock();
    if (pg->ncloses == pg->capcloses) {
        size_t nc = pg->capcloses ? 2 * pg->capcloses : 16;
        dm_close_t *v = realloc(pg->closes, nc * sizeof(*v));
        if (!v)
            ompc_fatal("out of memory launching a kernel");
        pg->closes = v;
        pg->capcloses = nc;
    }
    pg->closes[pg->ncloses++] = (dm_close_t){seq, epoch, (uintptr_t)addr, span};
    dm_pages_map_unlock();
}

/* map_mtx held: the copy without access that [addr, addr+size) lands in,
 * *k_p its address and *span_p its span (false: none). */
static bool dark_find(dm_pages_t *pg, uintptr_t addr, size_t size, uintptr_t *k_p,
                      uint64_t *span_p)
{
    if (atomic_load_explicit(&pg->ndark, memory_order_relaxed) == 0)
        return false;
    size_t pos = 0;
    uint64_t k, v;
    while (ompc_u64map_next(&pg->dark, &pos, &k, &v))
        if (addr >= k && addr + size <= k + v) {
            *k_p = (uintptr_t)k;
            *span_p = v;
            return true;
        }
    return false;
}

/* map_mtx held: the data of a commit after a close has come; a close up to
 * that commit's number not applied yet has nothing left to hide
 * (closes_apply). */
static void landed_note(dm_pages_t *pg, uintptr_t addr)
{
    uint64_t ep;
    if (atomic_load_explicit(&pg->ncep, memory_order_relaxed) &&
        ompc_u64map_get(&pg->cepochs, addr, &ep) &&
        ompc_u64map_put(&pg->landed, addr, ep) != OMPC_OK)
        ompc_fatal("out of memory receiving device data");
}

/* map_mtx held: a copy without access at k opens (dark entry removed). */
static void dark_forget(dm_pages_t *pg, uintptr_t k)
{
    uint64_t span;
    if (ompc_u64map_remove(&pg->dark, k, &span))
        atomic_fetch_sub(&pg->ndark, 1);
}

/* Whether no copy here waits for its data (the landing path's quick check,
 * without map_mtx). */
static bool none_dark(dm_pages_t *pg)
{
    return !pg || (atomic_load_explicit(&pg->ncep, memory_order_relaxed) == 0 &&
                   atomic_load_explicit(&pg->ndark, memory_order_relaxed) == 0);
}

/* map_mtx held: open the copy without access at k, span bytes, with the
 * memory at s (its data, moved in with one mremap) when s is not NULL and
 * the move succeeds (true), else as it is. */
static bool dark_open(dm_pages_t *pg, uintptr_t k, uint64_t span, void *s)
{
    kept_drop(k, (size_t)span, false);
    dark_forget(pg, k);
    bool moved = s &&
                 (void *)syscall(SYS_mremap, s, span, span, MREMAP_MAYMOVE | MREMAP_FIXED,
                                 (void *)k) == (void *)k;
    if (!moved && mprotect((void *)k, span, PROT_READ | PROT_WRITE) != 0)
        ompc_fatal("rank %d: cannot open device buffer %#llx for its data",
                   ev_ctx_rank(pg->dm->ev), (unsigned long long)k);
    return moved;
}

/* map_mtx held: new bytes land at addr (a launch's data, or a
 * write-back's patch of the valid copy): a copy there that was served is
 * made anew, writable and served no more.  One still without access
 * opens with its data (dark_open). */
static void renew(dm_pages_t *pg, uintptr_t addr)
{
    uintptr_t rbase, k;
    size_t rspan;
    uint64_t span;
    if (ro_find(pg, addr, &rbase, &rspan)) {
        if (!dark_find(pg, rbase, 1, &k, &span) &&
            mprotect((void *)rbase, rspan, PROT_READ | PROT_WRITE) != 0)
            ompc_fatal("rank %d: cannot open device buffer %#llx for its data",
                       ev_ctx_rank(pg->dm->ev), (unsigned long long)rbase);
        ro_forget(pg, rbase);
    } else if (atomic_load_explicit(&pg->nshared, memory_order_relaxed) > 0 &&
               ev_mem_find(pg->dm->ev, (const void *)addr, &rbase, &rspan)) {
        ro_forget(pg, rbase);
    }
}

/* Whether no copy here waits for its data or was served (the landing
 * path's quick check, without map_mtx). */
static bool none_landing(dm_pages_t *pg)
{
    return none_dark(pg) &&
           (!pg || (atomic_load_explicit(&pg->nro, memory_order_relaxed) == 0 &&
                    atomic_load_explicit(&pg->nshared, memory_order_relaxed) == 0));
}

/* The event system's land hook, and launch ahead's arrivals: a copy kept
 * without access (after a close, or mapped as its data comes) opens as
 * its data lands.  Bytes that came with the message are moved in at once
 * (filled off to the side, one mremap): a kernel that reaches the copy
 * sees the old state or the new, never zeros. */
bool dm_pages_land(uintptr_t addr, size_t size, const void *bytes)
{
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    if (none_landing(pg))
        return false;
    dm_pages_map_lock();
    landed_note(pg, addr);
    uintptr_t k;
    uint64_t span;
    bool placed = false;
    renew(pg, addr);
    if (dark_find(pg, addr, size, &k, &span)) {
        void *s = bytes ? mmap(NULL, span, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                        : MAP_FAILED;
        if (s != MAP_FAILED)
            memcpy((char *)s + (addr - k), bytes, size);
        placed = dark_open(pg, k, span, s != MAP_FAILED ? s : NULL);
        if (!placed && s != MAP_FAILED)
            munmap(s, span);
    }
    dm_pages_map_unlock();
    return placed;
}

/* A stream landing off to the side: its memory, and the copy it is for. */
typedef struct dm_stage {
    void *base; /* span bytes, mapped for the stream */
    uintptr_t k; /* the copy's address */
    size_t span;
} dm_stage_t;

/* The event system's land stage hook: a stream into a copy kept without
 * access lands off to the side and opens the copy at its end
 * (dm_pages_land_done): a kernel that reaches the copy meanwhile waits
 * for all of it (serve_fault), where an open copy would show it the
 * bytes not arrived yet as zeros. */
void *dm_pages_land_stage(uintptr_t addr, size_t size)
{
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    if (none_landing(pg))
        return NULL;
    dm_pages_map_lock();
    renew(pg, addr);
    landed_note(pg, addr);
    uintptr_t k;
    uint64_t span;
    void *at = NULL;
    if (dark_find(pg, addr, size, &k, &span)) {
        dm_stage_t *st = malloc(sizeof(*st));
        void *s = st ? mmap(NULL, span, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                     : MAP_FAILED;
        if (s == MAP_FAILED) {
            free(st);
            ompc_fatal("rank %d: out of memory receiving device buffer %#llx",
                       ev_ctx_rank(pg->dm->ev), (unsigned long long)k);
        }
        *st = (dm_stage_t){s, k, span};
        at = (char *)s + (addr - k);
        if (ompc_u64map_put(&pg->stages, (uint64_t)(uintptr_t)at,
                            (uint64_t)(uintptr_t)st) != OMPC_OK)
            ompc_fatal("out of memory receiving device data");
    }
    dm_pages_map_unlock();
    return at;
}

/* The event system's land done hook: a staged stream has all its bytes.
 * The copy opens with them in one mremap; if another landing opened it
 * meanwhile they are copied in, and if it was closed meanwhile they go. */
void dm_pages_land_done(uintptr_t addr, size_t size, void *staged)
{
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    uint64_t v;
    dm_pages_map_lock();
    if (!ompc_u64map_remove(&pg->stages, (uint64_t)(uintptr_t)staged, &v))
        ompc_fatal("rank %d: device data for %#llx landed in memory not staged for it",
                   ev_ctx_rank(pg->dm->ev), (unsigned long long)addr);
    dm_stage_t st = *(dm_stage_t *)(uintptr_t)v;
    free((void *)(uintptr_t)v);
    uintptr_t k;
    uint64_t span;
    bool moved = false;
    if (dark_find(pg, addr, size, &k, &span))
        moved = dark_open(pg, k, span, k == st.k && span == st.span ? st.base : NULL);
    if (!moved && ev_mem_contains(pg->dm->ev, (const void *)addr, size))
        memcpy((void *)addr, staged, size);
    if (!moved)
        munmap(st.base, st.span);
    dm_pages_map_unlock();
}

bool dm_exec_land(dm_addr_t addr, size_t size, const void *bytes)
{
    return dm_pages_land((uintptr_t)addr, size, bytes);
}

/* map_mtx held: whether page is in a copy waiting for its data. */
static bool page_dark(dm_pages_t *pg, uintptr_t page)
{
    uintptr_t k;
    uint64_t span;
    return dark_find(pg, page, 1, &k, &span);
}

/* map_mtx held: a task that names the copy at addr for writing starts:
 * its completion makes this copy the only current one, so it is writable
 * (docs/architecture.md, "Writes into a worker's copy"). */
static ompc_status_t diff_page(const dm_fpage_t *e, const unsigned char *cur,
                               unsigned char **msg, size_t *len, size_t *cap);

/* map_mtx held: a named writer opens the copy at base while kernels that
 * do not name it watch it.  What each wrote so far is its own (the
 * writer has not run yet): the runs are kept for that kernel's end.
 * What any of them writes from now on mixes with the writer's bytes,
 * which its completion carries (this copy then the only current one),
 * so the watch ends here.  Diffed later, it would send the writer's
 * bytes as that kernel's, and launch ahead would apply them to tasks
 * after it over newer ones. */
static void watch_settle(dm_pages_t *pg, uintptr_t base)
{
    for (size_t i = 0; i < atomic_load_explicit(&pg->nwatch, memory_order_relaxed); i++) {
        dm_watch_t *w = &pg->watches[i];
        if (w->base != base || !w->snap)
            continue;
        for (size_t off = 0; off < w->span; off += DM_PAGE) {
            const dm_fpage_t e = {w->base + off, w->snap + off, true};
            if (diff_page(&e, (const unsigned char *)w->base + off, &w->early, &w->nearly,
                          &w->capearly) != OMPC_OK)
                ompc_fatal("rank %d: out of memory opening device buffer %#llx",
                           ev_ctx_rank(pg->dm->ev), (unsigned long long)base);
        }
        free(w->snap);
        w->snap = NULL;
    }
}

static void open_one(dm_pages_t *pg, uintptr_t addr)
{
    if (atomic_load_explicit(&pg->nwatch, memory_order_relaxed) > 0)
        watch_settle(pg, addr);
    uintptr_t base;
    size_t span;
    if (ro_find(pg, addr, &base, &span) && base == addr &&
        mprotect((void *)base, span, PROT_READ | PROT_WRITE) != 0)
        ompc_fatal("rank %d: cannot open device buffer %#llx for a kernel",
                   ev_ctx_rank(pg->dm->ev), (unsigned long long)base);
    ro_forget(pg, addr); /* served or not, the only current copy once done */
}

/* map_mtx held: task seq's launch names the buffer at addr. */
static void named_add(dm_pages_t *pg, uint64_t seq, uintptr_t addr, bool write)
{
    if (pg->nnamed == pg->capnamed) {
        size_t nc = pg->capnamed ? 2 * pg->capnamed : 16;
        dm_named_t *v = realloc(pg->named, nc * sizeof(*v));
        if (!v)
            ompc_fatal("out of memory starting a kernel");
        pg->named = v;
        pg->capnamed = nc;
    }
    pg->named[pg->nnamed++] = (dm_named_t){seq, addr, write};
}

/* map_mtx held: close one stale copy (closes_apply, dm_pages_close_now). */
static void close_one(dm_pages_t *pg, uintptr_t addr, size_t span, uint64_t epoch)
{
    uint64_t prev;
    if ((!ompc_u64map_get(&pg->closed, addr, &prev) || prev < epoch) &&
        ompc_u64map_put(&pg->closed, addr, epoch) != OMPC_OK)
        ompc_fatal("out of memory closing a stale device copy");
    /* A close of a buffer freed since, whose address a newer one took and
     * committed here (the close's launch was sent after that commit):
     * not that one's to close. */
    uint64_t seen;
    if (ompc_u64map_get(&pg->seen, addr, &seen) && seen >> 32 > epoch >> 32)
        return;
    if (!ev_mem_contains(pg->dm->ev, (const void *)addr, span))
        return;
    uint64_t committed = 0, landed = 0;
    ompc_u64map_get(&pg->cepochs, addr, &committed);
    ompc_u64map_get(&pg->landed, addr, &landed);
    if (landed >= epoch)
        return; /* a later launch's data is here already */
    ro_forget(pg, addr);
    if (committed >= epoch) {
        /* A later launch committed it (before this close came, or after)
         * and its data is on the way: no access until it lands
         * (dm_pages_land). */
        kept_drop(addr, span, false); /* dark: it opens whole as its data lands */
        if (mprotect((void *)addr, span, PROT_NONE) != 0 ||
            ompc_u64map_put(&pg->dark, addr, span) != OMPC_OK)
            ompc_fatal("rank %d: cannot close the stale copy of device buffer %#llx",
                       ev_ctx_rank(pg->dm->ev), (unsigned long long)addr);
        atomic_fetch_add(&pg->ndark, 1);
        return;
    }
    kept_drop(addr, span, false);
    if (ev_mem_unregister(pg->dm->ev, (void *)addr) != OMPC_OK ||
        mmap((void *)addr, span, PROT_NONE,
             MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
             0) == MAP_FAILED)
        ompc_fatal("rank %d: cannot close the stale copy of device buffer %#llx",
                   ev_ctx_rank(pg->dm->ev), (unsigned long long)addr);
    ompc_trace("rank %d: closed stale copy %#llx (%zu bytes)", ev_ctx_rank(pg->dm->ev),
               (unsigned long long)addr, span);
}

/* pg->mtx held, task seq starting: close the stale copies its launch
 * listed.  Unexposed (the event system receives into it no more; a later
 * commit maps it afresh) and without access, its memory returned: a
 * kernel that reaches it faults and gets the current bytes. */
static bool closes_apply(dm_pages_t *pg, uint64_t seq)
{
    dm_pages_map_lock();
    bool named = false;
    for (size_t i = 0; i < pg->ncloses;) {
        dm_close_t c = pg->closes[i];
        if (c.seq != seq) {
            i++;
            continue;
        }
        pg->closes[i] = pg->closes[--pg->ncloses];
        if (c.epoch == DM_EPOCH_OPEN || c.epoch == DM_EPOCH_NAMED) {
            if (c.epoch == DM_EPOCH_OPEN)
                open_one(pg, c.addr);
            named_add(pg, seq, c.addr, c.epoch == DM_EPOCH_OPEN);
            named = true;
        } else {
            close_one(pg, c.addr, c.span, c.epoch);
        }
    }
    if (!named)
        atomic_fetch_add(&pg->nblind, 1);
    shared_start(pg, seq, !named);
    dm_pages_map_unlock();
    return named;
}

void dm_pages_close_now(uintptr_t addr, size_t span, uint64_t epoch)
{
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    if (!pg)
        return;
    dm_pages_map_lock();
    if (epoch == DM_EPOCH_OPEN)
        open_one(pg, addr);
    else if (epoch != DM_EPOCH_NAMED)
        close_one(pg, addr, span, epoch);
    dm_pages_map_unlock();
}

void dm_pages_served(uintptr_t addr, size_t size)
{
    (void)size;
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    if (!pg || addr < live_base || addr >= live_end)
        return;
    uintptr_t base;
    size_t span;
    uint64_t v;
    /* Before the lock: a task starting without it (dm_pages_task_begin)
     * either counts in nblind here or takes the lock to look. */
    atomic_store(&pg->served, true);
    dm_pages_map_lock();
    if (ev_mem_find(pg->dm->ev, (const void *)addr, &base, &span) &&
        !ompc_u64map_get(&pg->ro, base, &v) && !page_dark(pg, base)) {
        bool was = ompc_u64map_get(&pg->shared, base, &v);
        if (named_by_all(pg, base)) {
            /* Read-only when a kernel that does not name it starts. */
            if (!was) {
                if (ompc_u64map_put(&pg->shared, base, span) != OMPC_OK)
                    ompc_fatal("rank %d: out of memory serving device buffer %#llx",
                               ev_ctx_rank(pg->dm->ev), (unsigned long long)base);
                atomic_fetch_add(&pg->nshared, 1);
            }
        } else {
            if (was) {
                ompc_u64map_remove(&pg->shared, base, &v);
                atomic_fetch_sub(&pg->nshared, 1);
            }
            ro_protect(pg, base, span);
        }
    }
    dm_pages_map_unlock();
}

void dm_pages_forget(uintptr_t addr)
{
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    if (pg)
        ro_forget(pg, addr);
}

void dm_exec_served(dm_addr_t addr, size_t size)
{
    dm_pages_served((uintptr_t)addr, size);
}

void dm_exec_open(dm_addr_t addr)
{
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    if (!pg || (atomic_load_explicit(&pg->nro, memory_order_relaxed) == 0 &&
                atomic_load_explicit(&pg->nshared, memory_order_relaxed) == 0))
        return;
    dm_pages_map_lock();
    open_one(pg, (uintptr_t)addr);
    dm_pages_map_unlock();
}

/* map_mtx held: the runtime stores len bytes at dst (src NULL: zeros):
 * the snapshots of watched copies take them too, so that they do not
 * count as a kernel's writes. */
static void watch_store(dm_pages_t *pg, uintptr_t dst, const void *src, size_t len)
{
    for (size_t i = 0; i < atomic_load_explicit(&pg->nwatch, memory_order_relaxed); i++) {
        const dm_watch_t *w = &pg->watches[i];
        if (!w->snap)
            continue;
        uintptr_t lo = dst > w->base ? dst : w->base;
        uintptr_t hi = dst + len < w->base + w->span ? dst + len : w->base + w->span;
        if (lo >= hi)
            continue;
        if (src)
            memcpy(w->snap + (lo - w->base), (const char *)src + (lo - dst), hi - lo);
        else
            memset(w->snap + (lo - w->base), 0, hi - lo);
    }
}

void dm_exec_store(void *dst, const void *src, size_t len)
{
    dm_pages_t *pg = atomic_load(&dm_pages_live);
    if (!pg || len == 0 ||
        (atomic_load_explicit(&pg->nro, memory_order_relaxed) == 0 &&
         atomic_load_explicit(&pg->nwatch, memory_order_relaxed) == 0)) {
        if (src)
            memcpy(dst, src, len);
        else
            memset(dst, 0, len);
        return;
    }
    dm_pages_map_lock();
    watch_store(pg, (uintptr_t)dst, src, len);
    uintptr_t base;
    size_t span;
    if (!ro_find(pg, (uintptr_t)dst, &base, &span)) {
        if (src)
            memcpy(dst, src, len);
        else
            memset(dst, 0, len);
        dm_pages_map_unlock();
        return;
    }
    /* Through /proc/self/mem, which ignores the pages' protection: a
     * kernel running here keeps faulting on the copy meanwhile.  Where
     * that is refused, the copy opens around the store. */
    void *zeros = src ? NULL : calloc(1, len);
    const char *from = src ? src : zeros;
    size_t done = 0;
    while (pg->memfd >= 0 && from && done < len) {
        ssize_t w = pwrite(pg->memfd, from + done, len - done,
                           (off_t)((uintptr_t)dst + done));
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    if (done < len) {
        if (mprotect((void *)base, span, PROT_READ | PROT_WRITE) != 0)
            ompc_fatal("rank %d: cannot open device buffer %#llx",
                       ev_ctx_rank(pg->dm->ev), (unsigned long long)base);
        if (src)
            memcpy((char *)dst + done, (const char *)src + done, len - done);
        else
            memset((char *)dst + done, 0, len - done);
        if (mprotect((void *)base, span, PROT_READ) != 0)
            ompc_fatal("rank %d: cannot protect device buffer %#llx",
                       ev_ctx_rank(pg->dm->ev), (unsigned long long)base);
    }
    free(zeros);
    dm_pages_map_unlock();
}

/* pg->mtx and map_mtx held: make a held page writable, keeping its bytes
 * as the twin. */
static ompc_status_t fpage_make_writable(dm_fpage_t *e)
{
    if (e->twin)
        return OMPC_OK;
    e->twin = malloc(DM_PAGE);
    if (!e->twin)
        return OMPC_ERR_NOMEM;
    memcpy(e->twin, (const void *)e->addr, DM_PAGE);
    if (mprotect((void *)e->addr, DM_PAGE, PROT_READ | PROT_WRITE) != 0) {
        free(e->twin);
        e->twin = NULL;
        return OMPC_ERR_NOMEM;
    }
    return OMPC_OK;
}

static void fetch_info(dm_pages_t *pg, const dm_fetch_hdr_t *h, uintptr_t addr,
                       bool write)
{
    char kernel[256] = "?", msg[768];
    if (pg->namer)
        pg->namer(kernel, sizeof(kernel));
    /* write(2), not stdio: the kernel's own threads may hold stderr's
     * lock while they wait for this very fault. */
    int n = snprintf(msg, sizeof(msg),
                     "[ompc info] r%d kernel %s %s device buffer %#llx (%llu bytes) "
                     "at offset %llu, which none of its clauses names: its pages "
                     "are fetched on demand (map it, or name it in a depend "
                     "clause, to move it with the kernel at once)\n",
                     ev_ctx_rank(pg->dm->ev), kernel, write ? "wrote" : "read",
                     (unsigned long long)h->buf_addr, (unsigned long long)h->buf_size,
                     (unsigned long long)(addr - h->buf_addr));
    if (n > 0)
        say(msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* The bytes the head's answer *h says another worker holds, into
 * pg->fetch_buf (the rest of the block: zeros).  No lock held: the
 * holder's gate serves the read, and this rank's gate moves its reply. */
static ompc_status_t fetch_from_peer(dm_pages_t *pg, const dm_fetch_hdr_t *h)
{
    ev_ctx_t *ev = pg->dm->ev;
    if (h->from_rank <= 0 || h->from_rank >= ev_ctx_size(ev) ||
        h->from_rank == ev_ctx_rank(ev) || h->len > pg->block || h->n_in > h->len)
        return OMPC_ERR_INVALID;
    memset((char *)pg->fetch_buf + h->n_in, 0, h->len - h->n_in);
    ev_handle_t *eh = NULL;
    return ev_finish(
        ev_retrieve(ev, (int)h->from_rank, h->from_addr, pg->fetch_buf, h->n_in, &eh),
        eh);
}

/* The block from page on into pg->fetch_buf, its header into *h_p.
 * seqs: the launched-ahead tasks running here when the fault came (a
 * copy: fetch runs without pg->mtx). */
static ompc_status_t fetch(dm_pages_t *pg, uintptr_t page, const uint64_t *seqs,
                           size_t nseqs, dm_fetch_hdr_t *h_p)
{
    dm_ctx_t *dm = pg->dm;
    ompc_status_t st;
    if (ev_ctx_rank(dm->ev) == 0) { /* one rank: the head serves itself */
        st = page_serve(dm, 0, page, pg->block, seqs, nseqs, false, h_p, pg->fetch_buf);
    } else {
        /* Blocks that fit come back with the reply, larger ones into
         * fetch_buf.  The running tasks' seqs follow (as many as the
         * message takes: at most one per kernel thread of this rank). */
        size_t ns = nseqs < EV_EXEC_MAX_ARGS / 8 - 3 ? nseqs : EV_EXEC_MAX_ARGS / 8 - 3;
        uint64_t *args = malloc((3 + ns) * sizeof(uint64_t));
        if (!args)
            return OMPC_ERR_NOMEM;
        args[0] = page;
        args[1] = pg->block;
        args[2] = (uint64_t)(uintptr_t)pg->fetch_buf;
        if (ns)
            memcpy(args + 3, seqs, ns * sizeof(uint64_t));
        ev_handle_t *h = NULL;
        st = ev_execute(dm->ev, 0, dm->fn_page_fetch, args, (3 + ns) * sizeof(uint64_t),
                        pg->reply, EV_EXEC_MAX_RESULT, &h);
        free(args);
        if (st == OMPC_OK) {
            st = ev_wait(h);
            size_t got = ev_handle_result_size(h);
            ev_handle_release(h);
            if (st == OMPC_OK && got < sizeof(*h_p))
                st = OMPC_ERR_INVALID;
            if (st == OMPC_OK) {
                memcpy(h_p, pg->reply, sizeof(*h_p));
                if (h_p->from_rank >= 0)
                    st = got == sizeof(*h_p) ? fetch_from_peer(pg, h_p)
                                             : OMPC_ERR_INVALID;
                else if (got == sizeof(*h_p) + h_p->len && h_p->len <= pg->block)
                    memcpy(pg->fetch_buf, pg->reply + sizeof(*h_p), h_p->len);
                else if (got != sizeof(*h_p))
                    st = OMPC_ERR_INVALID;
            }
        }
    }
    if (st != OMPC_OK)
        return st;
    if (h_p->start != page || h_p->len == 0 || h_p->len % DM_PAGE || h_p->len > pg->block)
        return OMPC_ERR_INVALID;
    return OMPC_OK;
}

/* Service thread, no lock held: a page committed again after a close,
 * its data still on the way (the launch that brings it names it; that
 * transfer waits for nothing this kernel does): the kernel waits until it
 * lands.  The gate moves the data. */
static ompc_status_t wait_landed(dm_pages_t *pg, uintptr_t page, uint64_t t0)
{
    uint64_t deadline = t0 + (uint64_t)ompc_config_get()->peer_timeout_ms * 1000000u;
    bool dark = true;
    while (dark && ompc_now_ns() < deadline) {
        usleep(50);
        dm_pages_map_lock();
        dark = page_dark(pg, page);
        dm_pages_map_unlock();
    }
    ompc_trace("page %#llx landed", (unsigned long long)page);
    return dark ? OMPC_ERR_TIMEOUT : OMPC_OK;
}

/* ------------------------------------------------- split shares' guards
 * Pages a split share's copy holds stale (docs/architecture.md, "Loops
 * split across workers"): protected while the share runs, fetched from
 * the worker holding them when touched.  One share at a time per process;
 * guard_mtx guards the table (the service thread reads it). */
_Static_assert(DM_GUARD_PAGE == DM_PAGE, "guards protect the data manager's pages");
static pthread_mutex_t guard_mtx = PTHREAD_MUTEX_INITIALIZER;
static dm_guard_run_t *guard_runs;
static uint8_t **guard_done; /* per run, per page: fetched already */
static size_t guard_n;
static uint64_t guard_fetched;
static bool guard_on;

/* Fetches [addr, addr+len) of run r into dst (and its twin); waits. */
static ompc_status_t guard_fetch(ev_ctx_t *ev, const dm_guard_run_t *r, uint64_t addr,
                                 size_t len, void *dst)
{
    ev_handle_t *h = NULL;
    ompc_status_t st = ev_finish(
        ev_retrieve(ev, (int)r->rank, r->src + (addr - r->addr), dst, len, &h), h);
    if (st == OMPC_OK && r->twin)
        memcpy(r->twin + (addr - r->addr), dst, len);
    return st;
}

/* A fetch dm_guard_begin makes before the kernel runs: [addr, addr+len)
 * of run r (as the caller gave it). */
typedef struct guard_job {
    dm_guard_run_t r;
    uint64_t addr, len;
    ev_handle_t *h;
} guard_job_t;

static bool job_push(guard_job_t **j_p, size_t *n_p, size_t *cap_p,
                     const dm_guard_run_t *r, uint64_t addr, uint64_t len)
{
    if (*n_p == *cap_p) {
        size_t cap = *cap_p ? 2 * *cap_p : 16;
        guard_job_t *nj = realloc(*j_p, cap * sizeof(*nj));
        if (!nj)
            return false;
        *j_p = nj;
        *cap_p = cap;
    }
    (*j_p)[(*n_p)++] = (guard_job_t){*r, addr, len, NULL};
    return true;
}

/* Starts every job's fetch into place at once, waits for all, then writes
 * the bytes to the twins: one round trip for all of them rather than one
 * each (a stencil's share has two partial pages per neighbour's piece and
 * buffer, and its halo). */
static ompc_status_t jobs_run(ev_ctx_t *ev, guard_job_t *j, size_t n)
{
    ompc_status_t st = OMPC_OK;
    size_t started = 0;
    for (; started < n && st == OMPC_OK; started++)
        st = ev_retrieve(ev, (int)j[started].r.rank,
                         j[started].r.src + (j[started].addr - j[started].r.addr),
                         (void *)(uintptr_t)j[started].addr, (size_t)j[started].len,
                         &j[started].h);
    if (st != OMPC_OK)
        started--; /* its handle was not set */
    for (size_t i = 0; i < started; i++) {
        ompc_status_t w = ev_wait(j[i].h);
        ev_handle_release(j[i].h);
        if (st == OMPC_OK)
            st = w;
    }
    for (size_t i = 0; st == OMPC_OK && i < n; i++)
        if (j[i].r.twin)
            memcpy(j[i].r.twin + (j[i].addr - j[i].r.addr),
                   (const void *)(uintptr_t)j[i].addr, (size_t)j[i].len);
    return st;
}

/* dm_guard_begin: every stretch earlier splits left protected is taken off
 * the table; its pages that this split protects too (inside run i, not
 * fetched now: !done[i]) are marked in have[i] and stay protected, the
 * others open before anything is fetched into them. */
static void kept_take(const dm_guard_run_t *v, size_t n, uint8_t *const *done,
                      uint8_t *const *have)
{
    if (atomic_load(&kept_used) == 0)
        return;
    dm_pages_map_lock();
    for (size_t k = 0; k < KEPT_SLOTS; k++) {
        uint64_t x = atomic_exchange(&kept[k], 0);
        if (!x)
            continue;
        uintptr_t ka = kept_addr(x), ke = ka + (uintptr_t)kept_len(x);
        uintptr_t open_at = 0; /* start of a stretch to open (0: none) */
        size_t r = 0;
        for (uintptr_t q = ka; q <= ke; q += DM_PAGE) {
            bool keep = false;
            if (q < ke) {
                if (!(r < n && q >= v[r].addr && q < v[r].addr + v[r].len))
                    for (r = 0; r < n; r++)
                        if (q >= v[r].addr && q < v[r].addr + v[r].len)
                            break;
                if (r < n) {
                    size_t at = (size_t)((q - v[r].addr) / DM_PAGE);
                    keep = !done[r][at];
                    if (keep)
                        have[r][at] = 1;
                }
            }
            if (!keep && q < ke && !open_at)
                open_at = q;
            if ((keep || q == ke) && open_at) {
                if (mprotect((void *)open_at, q - open_at, PROT_READ | PROT_WRITE) != 0)
                    ompc_fatal("cannot open kept device pages at %#llx",
                               (unsigned long long)open_at);
                open_at = 0;
            }
        }
    }
    atomic_store(&kept_used, 0);
    dm_pages_map_unlock();
}

ompc_status_t dm_guard_begin(dm_ctx_t *dm, const dm_guard_run_t *runs, size_t n,
                             const dm_guard_pre_t *pre, size_t npre)
{
    dm_pages_t *pg = dm->pg;
    if (n == 0)
        return OMPC_OK;
    if (!pg)
        return OMPC_ERR_INVALID; /* no fault service: the pages could not come */
    dm_guard_run_t *v = malloc(n * sizeof(*v));
    uint8_t **done = calloc(n, sizeof(*done));
    guard_job_t *jobs = NULL;
    size_t njobs = 0, jcap = 0;
    if (!v || !done) {
        free(v);
        free(done);
        return OMPC_ERR_NOMEM;
    }
    memcpy(v, runs, n * sizeof(*v));
    uint64_t eager = 0;
    ompc_status_t st = OMPC_OK;
    for (size_t i = 0; i < n && st == OMPC_OK; i++) {
        /* The whole pages inside the run are guarded; its bytes in pages
         * it shares come now, straight into place (nothing runs yet). */
        uint64_t a = v[i].addr, e = v[i].addr + v[i].len;
        uint64_t pa = (a + DM_PAGE - 1) & ~(uint64_t)(DM_PAGE - 1);
        uint64_t pe = e & ~(uint64_t)(DM_PAGE - 1);
        if (pa >= pe) {
            if (e > a && !job_push(&jobs, &njobs, &jcap, &runs[i], a, e - a))
                st = OMPC_ERR_NOMEM;
            eager += e - a;
            v[i].len = 0;
            continue;
        }
        if (a < pa && !job_push(&jobs, &njobs, &jcap, &runs[i], a, pa - a))
            st = OMPC_ERR_NOMEM;
        if (pe < e && !job_push(&jobs, &njobs, &jcap, &runs[i], pe, e - pe))
            st = OMPC_ERR_NOMEM;
        eager += (pa - a) + (e - pe);
        v[i].twin = v[i].twin ? v[i].twin + (pa - a) : NULL;
        v[i].src += pa - a;
        v[i].addr = pa;
        v[i].len = pe - pa;
        if (st == OMPC_OK && !(done[i] = calloc(v[i].len / DM_PAGE, 1)))
            st = OMPC_ERR_NOMEM;
        /* Pages the caller expects the kernel to touch come now as well,
         * instead of a fault each while every thread of the kernel waits. */
        for (size_t k = 0; k < npre && st == OMPC_OK; k++) {
            uint64_t ps = pre[k].addr & ~(uint64_t)(DM_PAGE - 1);
            uint64_t pz = (pre[k].addr + pre[k].len + DM_PAGE - 1) &
                          ~(uint64_t)(DM_PAGE - 1);
            ps = ps > pa ? ps : pa;
            pz = pz < pe ? pz : pe;
            for (uint64_t q = ps; q < pz; q += DM_PAGE) {
                size_t at = (size_t)((q - pa) / DM_PAGE);
                if (done[i][at])
                    continue;
                uint64_t qe = q;
                while (qe < pz && !done[i][(qe - pa) / DM_PAGE]) {
                    done[i][(qe - pa) / DM_PAGE] = 1;
                    qe += DM_PAGE;
                }
                if (!job_push(&jobs, &njobs, &jcap, &v[i], q, qe - q))
                    st = OMPC_ERR_NOMEM;
                eager += qe - q;
                q = qe - DM_PAGE;
            }
        }
    }
    uint8_t **have = calloc(n, sizeof(*have)); /* per run, per page: kept */
    if (!have)
        st = OMPC_ERR_NOMEM;
    for (size_t i = 0; i < n && st == OMPC_OK; i++)
        if (v[i].len && !(have[i] = calloc(v[i].len / DM_PAGE, 1)))
            st = OMPC_ERR_NOMEM;
    uint64_t t0 = ompc_now_ns();
    if (st == OMPC_OK)
        kept_take(v, n, done, have);
    uint64_t t1 = ompc_now_ns();
    if (st == OMPC_OK)
        st = jobs_run(dm->ev, jobs, njobs);
    uint64_t t2 = ompc_now_ns();
    free(jobs);
    if (st != OMPC_OK) {
        for (size_t i = 0; i < n; i++) {
            free(done[i]);
            free(have ? have[i] : NULL);
        }
        free(have);
        free(done);
        free(v);
        return st;
    }
    pthread_mutex_lock(&guard_mtx);
    if (guard_on) {
        pthread_mutex_unlock(&guard_mtx);
        for (size_t i = 0; i < n; i++) {
            free(done[i]);
            free(have[i]);
        }
        free(have);
        free(done);
        free(v);
        return OMPC_ERR_INVALID; /* one share at a time */
    }
    /* Every stretch of a run's pages not fetched above and not kept
     * protected from an earlier split. */
    uint64_t nprot = 0, t3 = ompc_now_ns();
    dm_pages_map_lock();
    for (size_t i = 0; i < n && st == OMPC_OK; i++) {
        size_t np = (size_t)(v[i].len / DM_PAGE), q = 0;
        while (q < np && st == OMPC_OK) {
            if (done[i][q] || have[i][q]) {
                q++;
                continue;
            }
            size_t e = q;
            while (e < np && !done[i][e] && !have[i][e])
                e++;
            if (mprotect((void *)(uintptr_t)(v[i].addr + (uint64_t)q * DM_PAGE),
                         (size_t)(e - q) * DM_PAGE, PROT_NONE) != 0)
                st = OMPC_ERR_NOMEM;
            nprot += e - q;
            q = e;
        }
    }
    dm_pages_map_unlock();
    if (ompc_trace_on()) {
        const ompc_trace_arg_t a[] = {OMPC_TRACE_U64("fetches", njobs)};
        const ompc_trace_arg_t b[] = {OMPC_TRACE_U64("pages", nprot)};
        ompc_trace_span("split", "guard keep", t0, t1, NULL, 0);
        ompc_trace_span("split", "guard fetch", t1, t2, a, OMPC_TRACE_NARGS(a));
        ompc_trace_span("split", "guard protect", t3, ompc_now_ns(), b,
                        OMPC_TRACE_NARGS(b));
    }
    for (size_t i = 0; i < n; i++)
        free(have[i]);
    free(have);
    guard_runs = v;
    guard_done = done;
    guard_n = n;
    guard_fetched = eager;
    guard_on = true;
    pthread_mutex_unlock(&guard_mtx);
    return st;
}

ompc_status_t dm_guard_end(dm_ctx_t *dm, uint64_t *fetched_p,
                           dm_guard_untouched_t untouched, void *arg)
{
    (void)dm;
    ompc_status_t st = OMPC_OK;
    pthread_mutex_lock(&guard_mtx);
    if (guard_on) {
        /* The pages never touched stay protected (kept, for the next
         * split's guards), unless the table is full. */
        dm_pages_map_lock();
        for (size_t i = 0; i < guard_n; i++) {
            size_t np = (size_t)(guard_runs[i].len / DM_PAGE), q = 0;
            while (q < np) {
                if (guard_done[i][q]) {
                    q++;
                    continue;
                }
                size_t e = q;
                while (e < np && !guard_done[i][e])
                    e++;
                uintptr_t a = (uintptr_t)(guard_runs[i].addr + (uint64_t)q * DM_PAGE);
                uint64_t len = (uint64_t)(e - q) * DM_PAGE;
                if (untouched)
                    untouched(arg, i, a, len);
                if (!kept_put(a, len) &&
                    mprotect((void *)a, (size_t)len, PROT_READ | PROT_WRITE) != 0)
                    st = OMPC_ERR_NOMEM;
                q = e;
            }
        }
        dm_pages_map_unlock();
        for (size_t i = 0; i < guard_n; i++)
            free(guard_done[i]);
        free(guard_done);
        guard_done = NULL;
        free(guard_runs);
        guard_runs = NULL;
        guard_n = 0;
        guard_on = false;
    }
    if (fetched_p)
        *fetched_p = guard_fetched;
    guard_fetched = 0;
    pthread_mutex_unlock(&guard_mtx);
    return st;
}

/* Pages fetched per fault (a kernel reading its halo row by row). */
#define GUARD_BLOCK 16

/* Service thread: a fault on a guarded page is served here (true): the
 * bytes of the page and of up to GUARD_BLOCK - 1 untouched pages after it
 * in its run come from the run's worker, go to its twin, and are moved
 * into place writable in one step; *st_p says how it went. */
static bool guard_serve(dm_pages_t *pg, uintptr_t page, ompc_status_t *st_p)
{
    pthread_mutex_lock(&guard_mtx);
    size_t ri = guard_n;
    for (size_t i = 0; guard_on && i < guard_n && ri == guard_n; i++)
        if (page >= guard_runs[i].addr && page < guard_runs[i].addr + guard_runs[i].len)
            ri = i;
    if (ri == guard_n) {
        pthread_mutex_unlock(&guard_mtx);
        return false;
    }
    const dm_guard_run_t *r = &guard_runs[ri];
    uint8_t *done = guard_done[ri];
    size_t first = (size_t)((page - r->addr) / DM_PAGE), npg = 0;
    ompc_status_t st = OMPC_OK;
    /* Another thread's fault brought it already: the access is retried. */
    while (npg < GUARD_BLOCK && first + npg < r->len / DM_PAGE && !done[first + npg])
        npg++;
    if (npg > 0) {
        size_t len = npg * DM_PAGE;
        void *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                       0);
        st = s == MAP_FAILED ? OMPC_ERR_NOMEM : OMPC_OK;
        if (st == OMPC_OK)
            st = guard_fetch(pg->dm->ev, r, page, len, s);
        if (st == OMPC_OK) {
            /* The system call itself (UCX's hook drops the new address),
             * as pages_install does. */
            dm_pages_map_lock();
            if ((void *)syscall(SYS_mremap, s, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
                                (void *)page) != (void *)page)
                st = OMPC_ERR_NOMEM;
            dm_pages_map_unlock();
        }
        if (st == OMPC_OK) {
            memset(done + first, 1, npg);
            guard_fetched += len;
        } else if (s != MAP_FAILED) {
            munmap(s, len);
        }
    }
    pthread_mutex_unlock(&guard_mtx);
    *st_p = st;
    return true;
}

/* Service thread: one fault. */
static ompc_status_t serve_fault(dm_pages_t *pg, uintptr_t addr, bool write)
{
    uintptr_t page = addr & ~(uintptr_t)(DM_PAGE - 1);
    uint64_t t0 = ompc_now_ns();
    ompc_status_t st = OMPC_OK;
    if (guard_serve(pg, page, &st))
        return st;
    pthread_mutex_lock(&pg->mtx);
    dm_pages_map_lock();
    dm_fpage_t *e = fpage_get(pg, page);
    if (e) {
        /* Another thread's fault brought it, or a read brought it and
         * this is the first write. */
        if (write)
            st = fpage_make_writable(e);
        dm_pages_map_unlock();
        ompc_trace("page %#llx held", (unsigned long long)page);
        pthread_mutex_unlock(&pg->mtx);
        return st;
    }
    bool committed = page_committed(pg, page);
    bool dark = committed && page_dark(pg, page);
    uintptr_t rbase;
    if (committed && !dark && write && ro_find(pg, page, &rbase, NULL) &&
        named_writer(pg, rbase)) {
        /* A task running here names it for writing (the copy was served
         * while it ran): its completion makes this copy the only current
         * one, bytes and all, so the copy simply opens. */
        open_one(pg, rbase);
        dm_pages_map_unlock();
        pthread_mutex_unlock(&pg->mtx);
        return OMPC_OK;
    }
    if (committed && !dark && write && ro_find(pg, page, NULL, NULL)) {
        /* A write into a read-only copy (current elsewhere too): the page
         * opens with a twin, and what the kernel wrote goes back to the
         * head at the end of the task, as on a fetched page. */
        e = calloc(1, sizeof(*e));
        if (!e || ompc_u64map_put(&pg->pages, page, (uint64_t)(uintptr_t)e) != OMPC_OK) {
            free(e);
            st = OMPC_ERR_NOMEM;
        } else {
            e->addr = page;
            e->committed = true;
            st = fpage_make_writable(e);
        }
        dm_pages_map_unlock();
        pthread_mutex_unlock(&pg->mtx);
        atomic_fetch_add_explicit(&pg->faults, 1, memory_order_relaxed);
        if (ompc_trace_on()) {
            const ompc_trace_arg_t args[] = {OMPC_TRACE_U64("addr", addr)};
            ompc_trace_span("pages", "write into a shared copy", t0, ompc_now_ns(), args,
                            1);
        }
        return st;
    }
    dm_pages_map_unlock();
    if (dark) {
        pthread_mutex_unlock(&pg->mtx);
        return wait_landed(pg, page, t0);
    }
    if (committed) { /* its buffer arrived with a launch meanwhile */
        ompc_trace("page %#llx committed", (unsigned long long)page);
        pthread_mutex_unlock(&pg->mtx);
        return OMPC_OK;
    }
    /* Not under pg->mtx: the gate takes it to commit a launch's buffers,
     * and it moves the reply this waits for.  A task that begins
     * meanwhile (drop_epoch) may need bytes newer than these: fetched
     * again. */
    dm_fetch_hdr_t h;
    uint64_t epoch;
    uint64_t *seqs = NULL;
    size_t nseqs = 0;
    /* A commit or a landing over the block waits until it is installed
     * (dm_pages_commit_ahead, dm_pages_land_ready). */
    dm_pages_map_lock();
    pg->fetch_lo = page;
    pg->fetch_hi = page + pg->block;
    dm_pages_map_unlock();
    do {
        epoch = pg->drop_epoch;
        free(seqs);
        nseqs = pg->nseqs;
        seqs = nseqs ? malloc(nseqs * sizeof(*seqs)) : NULL;
        if (nseqs && !seqs) {
            st = OMPC_ERR_NOMEM;
            break;
        }
        if (nseqs)
            memcpy(seqs, pg->seqs, nseqs * sizeof(*seqs));
        pthread_mutex_unlock(&pg->mtx);
        st = fetch(pg, page, seqs, nseqs, &h);
        pthread_mutex_lock(&pg->mtx);
    } while (st == OMPC_OK && epoch != pg->drop_epoch);
    free(seqs);
    dm_pages_map_lock();
    pg->fetch_lo = pg->fetch_hi = 0;
    if (st != OMPC_OK) {
        dm_pages_map_unlock();
        pthread_mutex_unlock(&pg->mtx);
        return st;
    }
    const unsigned char *bytes = pg->fetch_buf;
    /* Install the runs of pages not held yet (a page held may be written
     * already: its bytes here would be older). */
    uint64_t cep = 0, landed = 0;
    if (page_committed(pg, page) && ompc_u64map_get(&pg->cepochs, h.buf_addr, &cep) &&
        ompc_u64map_get(&pg->landed, h.buf_addr, &landed) && cep > 0 && landed >= cep) {
        /* Committed again after a close and its data landed during the
         * fetch: the copy holds what the kernel must see. */
        dm_pages_map_unlock();
        pthread_mutex_unlock(&pg->mtx);
        return OMPC_OK;
    }
    if (page_committed(pg, page) && page_dark(pg, page)) {
        /* Committed again after a close during the fetch: the launch's
         * data, not these bytes, is what the copy will hold. */
        dm_pages_map_unlock();
        pthread_mutex_unlock(&pg->mtx);
        return wait_landed(pg, page, t0);
    }
    if (page_committed(pg, page))
        /* A launch committed the buffer during the fetch (the gate's
         * commits never wait for one: it moves the reply).  The launch's
         * data, planned before this kernel's access, may land over the
         * page at any time, and until it does the page reads as zeros:
         * never silently. */
        ompc_fatal_user("rank %d: a kernel reached device page %#llx through a "
                        "pointer none of its clauses names while a target task "
                        "launched ahead names that buffer and brings its copy here: "
                        "what the kernel reads or writes there is not ordered with "
                        "that copy; name the buffer in the kernel's map, "
                        "is_device_ptr or depend clause, or set OMPC_AHEAD=0",
                        ev_ctx_rank(pg->dm->ev), (unsigned long long)page);
    for (uint64_t off = 0; off < h.len && st == OMPC_OK;) {
        uintptr_t p = (uintptr_t)(h.start + off);
        if (fpage_get(pg, p) || page_committed(pg, p)) {
            off += DM_PAGE;
            continue;
        }
        uint64_t run = off;
        while (run < h.len && !fpage_get(pg, (uintptr_t)(h.start + run)) &&
               !page_committed(pg, (uintptr_t)(h.start + run)))
            run += DM_PAGE;
        if (!pages_install(p, run - off, bytes + off)) {
            st = OMPC_ERR_NOMEM;
            break;
        }
        for (uint64_t q = off; q < run; q += DM_PAGE) {
            dm_fpage_t *n = calloc(1, sizeof(*n));
            if (!n || ompc_u64map_put(&pg->pages, h.start + q, (uint64_t)(uintptr_t)n) !=
                          OMPC_OK) {
                free(n);
                st = OMPC_ERR_NOMEM;
                break;
            }
            n->addr = (uintptr_t)(h.start + q);
        }
        off = run;
    }
    if (st == OMPC_OK && write && (e = fpage_get(pg, page)))
        st = fpage_make_writable(e);
    dm_pages_map_unlock();
    pthread_mutex_unlock(&pg->mtx);
    atomic_fetch_add_explicit(&pg->faults, 1, memory_order_relaxed);
    uint64_t t1 = ompc_now_ns();
    if (ompc_trace_on()) {
        /* from: the rank the bytes came from (0: through the head). */
        const ompc_trace_arg_t args[] = {
            OMPC_TRACE_U64("addr", addr), OMPC_TRACE_U64("bytes", h.len),
            OMPC_TRACE_U64("write", write),
            OMPC_TRACE_U64("from", h.from_rank > 0 ? (uint64_t)h.from_rank : 0)};
        ompc_trace_span("pages", "page fault", t0, t1, args, 4);
    }
    if (h.first && ompc_config_get()->info)
        fetch_info(pg, &h, addr, write);
    return st;
}

static void *service_main(void *arg)
{
    dm_pages_t *pg = arg;
    ompc_log_set_thread_name("pages");
    bool named = false;
    for (;;) {
        char buf[64];
        ssize_t r = read(pg->wake[0], buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || atomic_load(&pg->stop))
            break;
        if (!named && ompc_trace_on()) {
            ompc_trace_thread_name("pages");
            named = true;
        }
        dm_fault_t *list = atomic_exchange(&pg->reqs, NULL), *fifo = NULL;
        while (list) { /* oldest first */
            dm_fault_t *next = list->next;
            list->next = fifo;
            fifo = list;
            list = next;
        }
        while (fifo) {
            /* The request lives on the faulting thread's stack: read what
             * is needed before it is released. */
            dm_fault_t *f = fifo;
            fifo = f->next;
            ompc_status_t st = serve_fault(pg, f->addr, f->write);
            ompc_trace("rank %d: %s fault at %#llx: %s", ev_ctx_rank(pg->dm->ev),
                       f->write ? "write" : "read", (unsigned long long)f->addr,
                       ompc_status_str(st));
            if (st != OMPC_OK)
                ompc_debug("rank %d: fault at %#llx: %s", ev_ctx_rank(pg->dm->ev),
                           (unsigned long long)f->addr, ompc_status_str(st));
            if (st == OMPC_ERR_INVALID) {
                char msg[256];
                int n = snprintf(msg, sizeof(msg),
                                 "[ompc r%d] fatal: a kernel reached device address "
                                 "%#llx, which no device buffer holds (freed, or never "
                                 "allocated); the rank stops with SIGSEGV\n",
                                 ev_ctx_rank(pg->dm->ev), (unsigned long long)f->addr);
                if (n > 0)
                    say(msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
            } else if (st != OMPC_OK)
                ompc_error("rank %d: cannot fetch device page %#llx for a kernel: %s",
                           ev_ctx_rank(pg->dm->ev), (unsigned long long)f->addr,
                           ompc_status_str(st));
            atomic_store(&f->state, st == OMPC_OK ? FAULT_SERVED : FAULT_REFUSED);
            futex(&f->state, FUTEX_WAKE_PRIVATE, 1);
        }
    }
    return NULL;
}

ompc_status_t dm_pages_create(dm_ctx_t *dm, bool executor)
{
    dm->pstats = calloc((size_t)dm->nexec, sizeof(dm_page_stats_t));
    if (!dm->pstats)
        return OMPC_ERR_NOMEM;
    atomic_store(&dm_fn_owner, dm);
    ompc_status_t st = ev_fn_register(dm->ev, "dm.page_fetch", dm_fn_page_fetch, 0,
                                      &dm->fn_page_fetch);
    if (st == OMPC_OK)
        st = ev_fn_register(dm->ev, "dm.page_write", dm_fn_page_write, 0,
                            &dm->fn_page_write);
    if (st != OMPC_OK || !executor || !ompc_config_get()->page_faults)
        return st;
    dm_pages_t *pg = calloc(1, sizeof(*pg));
    if (!pg)
        return OMPC_ERR_NOMEM;
    pg->dm = dm;
    pg->block = ((size_t)ompc_config_get()->fault_block + DM_PAGE - 1) / DM_PAGE *
                DM_PAGE;
    pg->reply = malloc(EV_EXEC_MAX_RESULT);
    if (!pg->reply) {
        free(pg);
        return OMPC_ERR_NOMEM;
    }
    /* The head sends fetched bytes here when they do not fit its reply. */
    pg->fetch_buf = mmap(NULL, pg->block, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_mutex_init(&pg->mtx, NULL);
    if (pg->fetch_buf == MAP_FAILED) {
        free(pg->reply);
        free(pg);
        return OMPC_ERR_NOMEM;
    }
    if (ev_mem_register(dm->ev, pg->fetch_buf, pg->block) != OMPC_OK ||
        pipe2(pg->wake, O_CLOEXEC) != 0) {
        ev_mem_unregister(dm->ev, pg->fetch_buf);
        munmap(pg->fetch_buf, pg->block);
        free(pg->reply);
        free(pg);
        return OMPC_ERR_NOMEM;
    }
    if (pthread_create(&pg->svc, NULL, service_main, pg) != 0) {
        close(pg->wake[0]);
        close(pg->wake[1]);
        ev_mem_unregister(dm->ev, pg->fetch_buf);
        munmap(pg->fetch_buf, pg->block);
        free(pg->reply);
        free(pg);
        return OMPC_ERR_THREAD;
    }
    pg->svc_started = true;
    /* The runtime's own writes into read-only copies (dm_exec_store). */
    pg->memfd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
    live_base = dm->va_base;
    live_end = dm->va_base + dm->va_size;
    atomic_store(&dm_pages_live, pg);
    ev_set_land_hook(dm_pages_land);
    ev_set_land_ready_hook(dm_pages_land_ready);
    ev_set_land_stage_hooks(dm_pages_land_stage, dm_pages_land_done);
    ev_set_send_hook(dm_pages_served);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &pg->old_segv) != 0) {
        atomic_store(&dm_pages_live, NULL);
        dm->pg = pg;
        dm_pages_destroy(dm);
        return OMPC_ERR_INVALID;
    }
    dm->pg = pg;
    return OMPC_OK;
}

void dm_pages_destroy(dm_ctx_t *dm)
{
    dm_pages_t *pg = dm->pg;
    if (!pg)
        return;
    if (atomic_load(&dm_pages_live) == pg) {
        sigaction(SIGSEGV, &pg->old_segv, NULL);
        atomic_store(&dm_pages_live, NULL);
    }
    atomic_store(&pg->stop, true);
    char one = 1;
    if (write(pg->wake[1], &one, 1) == 1)
        pthread_join(pg->svc, NULL);
    close(pg->wake[0]);
    close(pg->wake[1]);
    size_t pos = 0;
    uint64_t k, v;
    while (ompc_u64map_next(&pg->pages, &pos, &k, &v)) {
        dm_fpage_t *e = (dm_fpage_t *)(uintptr_t)v;
        free(e->twin);
        free(e);
    }
    ompc_u64map_fini(&pg->pages);
    ompc_u64map_fini(&pg->cepochs);
    ompc_u64map_fini(&pg->dark);
    ompc_u64map_fini(&pg->stages);
    ompc_u64map_fini(&pg->landed);
    ompc_u64map_fini(&pg->closed);
    ompc_u64map_fini(&pg->seen);
    ompc_u64map_fini(&pg->ro);
    ompc_u64map_fini(&pg->shared);
    free(pg->named);
    for (size_t i = 0; i < atomic_load(&pg->nwatch); i++) {
        free(pg->watches[i].snap);
        free(pg->watches[i].early);
    }
    free(pg->watches);
    if (pg->memfd >= 0)
        close(pg->memfd);
    free(pg->closes);
    free(pg->defers);
    free(pg->seqs);
    pthread_mutex_destroy(&pg->mtx);
    ev_mem_unregister(dm->ev, pg->fetch_buf);
    munmap(pg->fetch_buf, pg->block);
    free(pg->reply);
    free(pg);
    dm->pg = NULL;
}

void dm_pages_set_namer(dm_ctx_t *dm, void (*namer)(char *buf, size_t cap))
{
    if (dm->pg)
        dm->pg->namer = namer;
}

typedef struct drop_arg {
    dm_pages_t *pg;
    bool all;
} drop_arg_t;

static bool drop_one(uint64_t key, uint64_t val, void *arg)
{
    (void)key;
    const drop_arg_t *d = arg;
    dm_fpage_t *e = (dm_fpage_t *)(uintptr_t)val;
    if (!d->all && e->twin)
        return false;
    page_drop(d->pg, e);
    return true;
}

/* pg->mtx held: drop the pages held (all, or only the read-only ones). */
static void drop_pages(dm_pages_t *pg, bool all)
{
    dm_pages_map_lock();
    drop_arg_t d = {pg, all};
    if (ompc_u64map_size(&pg->pages) > 0)
        ompc_u64map_remove_if(&pg->pages, drop_one, &d);
    dm_pages_map_unlock();
}

/* Whether the task this thread runs had its named buffers listed
 * (dm_pages_task_begin to _end). */
static _Thread_local bool task_named;

uint64_t dm_pages_task_begin(dm_ctx_t *dm, uint64_t seq)
{
    dm_pages_t *pg = dm->pg;
    if (!pg)
        return 0;
    pthread_mutex_lock(&pg->mtx);
    task_watch = atomic_fetch_add(&pg->watch_ids, 1) + 1;
    if (seq) {
        if (pg->nseqs == pg->capseqs) {
            size_t nc = pg->capseqs ? 2 * pg->capseqs : 8;
            uint64_t *v = realloc(pg->seqs, nc * sizeof(*v));
            if (!v)
                ompc_fatal("out of memory starting a kernel");
            pg->seqs = v;
            pg->capseqs = nc;
        }
        pg->seqs[pg->nseqs++] = seq;
        task_named = closes_apply(pg, seq);
    } else {
        task_named = false;
        atomic_fetch_add(&pg->nblind, 1);
        if (atomic_load(&pg->served)) {
            dm_pages_map_lock();
            shared_start(pg, 0, true);
            dm_pages_map_unlock();
        }
    }
    defers_start(pg, seq);
    /* Pages held for kernels still running may predate writes ordered
     * before this task: read-only ones go (the others' twins keep their
     * own writes apart). */
    if (atomic_load(&pg->running) > 0) {
        pg->drop_epoch++;
        if (ompc_u64map_size(&pg->pages) > 0)
            drop_pages(pg, false);
    }
    atomic_fetch_add(&pg->running, 1);
    pthread_mutex_unlock(&pg->mtx);
    return atomic_load(&pg->faults);
}

/* Appends to *msg the runs where cur (a copy of the page taken now)
 * differs from the page's twin. */
static ompc_status_t diff_page(const dm_fpage_t *e, const unsigned char *cur,
                               unsigned char **msg, size_t *len, size_t *cap)
{
    const unsigned char *old = e->twin;
    size_t i = 0;
    while (i < DM_PAGE) {
        if (cur[i] == old[i]) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < DM_PAGE && cur[j] != old[j])
            j++;
        size_t n = j - i, padded = (n + 7) & ~(size_t)7;
        if (*len + 16 + padded > *cap) {
            size_t nc = (*cap ? 2 * *cap : 65536) + 16 + padded;
            unsigned char *m = realloc(*msg, nc);
            if (!m)
                return OMPC_ERR_NOMEM;
            *msg = m;
            *cap = nc;
        }
        uint64_t hdr[2] = {(uint64_t)e->addr + i, n};
        memcpy(*msg + *len, hdr, 16);
        memcpy(*msg + *len + 16, cur + i, n);
        memset(*msg + *len + 16 + n, 0, padded - n);
        *len += 16 + padded;
        i = j;
    }
    return OMPC_OK;
}

/* The run that names the writing task: {0, 16, seq, from a served copy}
 * (the head counts those apart, OMPC_STATS). */
#define SEQ_RUN 32

/* Send the runs of msg to the head, in messages within the event
 * system's limit on arguments (a run never spans two: a page's runs are
 * at most a page plus its header), each led by the run naming the task
 * (seq), which the head's hooks need (dm_set_fault_write_hooks). */
static ompc_status_t write_back(dm_ctx_t *dm, uint64_t seq, bool served,
                                const unsigned char *msg, size_t len)
{
    unsigned char *all = malloc(SEQ_RUN + len);
    if (!all)
        return OMPC_ERR_NOMEM;
    memcpy(all + SEQ_RUN, msg, len);
    const uint64_t hdr[4] = {0, 16, seq, served};
    ompc_status_t st = OMPC_OK;
    if (ev_ctx_rank(dm->ev) == 0) {
        memcpy(all, hdr, SEQ_RUN);
        st = page_write(dm, 0, all, SEQ_RUN + len);
        free(all);
        return st;
    }
    size_t done = SEQ_RUN;
    while (st == OMPC_OK && done < SEQ_RUN + len) {
        size_t n = 0;
        while (done + n < SEQ_RUN + len) {
            uint64_t rl;
            memcpy(&rl, all + done + n + 8, 8);
            size_t run = 16 + ((rl + 7) & ~(uint64_t)7);
            if (SEQ_RUN + n + run > EV_EXEC_MAX_ARGS)
                break;
            n += run;
        }
        /* The bytes before this part were sent already: the header goes
         * there. */
        memcpy(all + done - SEQ_RUN, hdr, SEQ_RUN);
        ev_handle_t *h = NULL;
        st = ev_finish(ev_execute(dm->ev, 0, dm->fn_page_write, all + done - SEQ_RUN,
                                  SEQ_RUN + n, NULL, 0, &h),
                       h);
        done += n;
    }
    free(all);
    return st;
}

/* The kernel this thread ran (task seq) ended: what changed in the
 * copies watched for it goes to the head, as a write through a fault
 * does.  The bytes are taken under map_mtx (a close may take the copy
 * away), diffed and sent without it. */
static ompc_status_t watches_end(dm_ctx_t *dm, dm_pages_t *pg, uint64_t seq,
                                 bool *wrote_p)
{
    if (atomic_load_explicit(&pg->nwatch, memory_order_relaxed) == 0)
        return OMPC_OK;
    /* Each of this kernel's watches, its snapshot in snap and the copy's
     * current bytes in now. */
    struct ended {
        dm_watch_t w;
        unsigned char *now;
    } *mine = NULL;
    size_t n = 0, cap = 0;
    ompc_status_t st = OMPC_OK;
    dm_pages_map_lock();
    for (size_t i = 0; i < atomic_load_explicit(&pg->nwatch, memory_order_relaxed);) {
        dm_watch_t w = pg->watches[i];
        if (w.task != task_watch) {
            i++;
            continue;
        }
        pg->watches[i] = pg->watches[atomic_fetch_sub(&pg->nwatch, 1) - 1];
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 4;
            struct ended *v = realloc(mine, nc * sizeof(*v));
            if (v) {
                mine = v;
                cap = nc;
            }
        }
        unsigned char *now = n < cap && w.snap ? malloc(w.span) : NULL;
        if (n == cap || (w.snap && !now)) {
            free(w.snap);
            free(w.early);
            st = OMPC_ERR_NOMEM;
            continue;
        }
        if (now)
            memcpy(now, (const void *)w.base, w.span);
        mine[n++] = (struct ended){w, now};
    }
    dm_pages_map_unlock();
    unsigned char *msg = NULL;
    size_t len = 0, mcap = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t off = 0; st == OMPC_OK && mine[i].now && off < mine[i].w.span;
             off += DM_PAGE) {
            const dm_fpage_t e = {mine[i].w.base + off, mine[i].w.snap + off, true};
            st = diff_page(&e, mine[i].now + off, &msg, &len, &mcap);
        }
        if (st == OMPC_OK && mine[i].w.nearly) {
            if (len + mine[i].w.nearly > mcap) {
                unsigned char *m = realloc(msg, len + mine[i].w.nearly);
                if (m) {
                    msg = m;
                    mcap = len + mine[i].w.nearly;
                } else {
                    st = OMPC_ERR_NOMEM;
                }
            }
            if (st == OMPC_OK) {
                memcpy(msg + len, mine[i].w.early, mine[i].w.nearly);
                len += mine[i].w.nearly;
            }
        }
        free(mine[i].w.early);
        free(mine[i].now);
        free(mine[i].w.snap);
    }
    free(mine);
    if (st == OMPC_OK && len > 0) {
        uint64_t t0 = ompc_now_ns();
        if (wrote_p)
            *wrote_p = true;
        st = write_back(dm, seq, true, msg, len);
        if (ompc_trace_on()) {
            const ompc_trace_arg_t args[] = {OMPC_TRACE_U64("bytes", len)};
            ompc_trace_span("pages", "write back from a served copy", t0, ompc_now_ns(),
                            args, 1);
        }
    }
    free(msg);
    return st;
}

ompc_status_t dm_pages_task_end(dm_ctx_t *dm, uint64_t faults_at_begin, uint64_t seq,
                                bool *faulted_p, bool *wrote_p)
{
    dm_pages_t *pg = dm->pg;
    if (faulted_p)
        *faulted_p = false;
    if (wrote_p)
        *wrote_p = false;
    if (!pg)
        return OMPC_OK;
    ompc_status_t st = watches_end(dm, pg, seq, wrote_p);
    /* The kernel wrote its last: served copies need not wait for it. */
    if (task_named) {
        dm_pages_map_lock();
        for (size_t i = 0; i < pg->nnamed;)
            if (pg->named[i].seq == seq)
                pg->named[i] = pg->named[--pg->nnamed];
            else
                i++;
        dm_pages_map_unlock();
    } else {
        atomic_fetch_sub(&pg->nblind, 1);
    }
    pthread_mutex_lock(&pg->mtx);
    dm_pages_map_lock(); /* pages: a commit may change it meanwhile */
    bool held = ompc_u64map_size(&pg->pages) > 0;
    if (!held)
        dm_pages_map_unlock();
    if (held) {
        uint64_t t0 = ompc_now_ns();
        /* Each writable page is copied once, diffed against its twin, and
         * that copy becomes the twin once the head has the bytes: kernels
         * still running may write the page meanwhile, and what they write
         * after the copy must show in the next diff. */
        size_t nw = 0, pos = 0;
        uint64_t k, v;
        while (ompc_u64map_next(&pg->pages, &pos, &k, &v))
            nw += ((dm_fpage_t *)(uintptr_t)v)->twin != NULL;
        uintptr_t *addrs = calloc(nw ? nw : 1, sizeof(*addrs));
        unsigned char *copies = malloc(nw ? nw * DM_PAGE : 1);
        unsigned char *msg = NULL;
        size_t len = 0, cap = 0, i = 0;
        if (!addrs || !copies)
            st = OMPC_ERR_NOMEM;
        pos = 0;
        while (st == OMPC_OK && ompc_u64map_next(&pg->pages, &pos, &k, &v)) {
            dm_fpage_t *e = (dm_fpage_t *)(uintptr_t)v;
            if (!e->twin)
                continue;
            unsigned char *cur = copies + i * DM_PAGE;
            memcpy(cur, (const void *)e->addr, DM_PAGE);
            addrs[i++] = e->addr;
            st = diff_page(e, cur, &msg, &len, &cap);
        }
        dm_pages_map_unlock();
        if (st == OMPC_OK && len > 0) {
            /* Without either lock (see struct dm_pages): a commit or a drop
             * may change pages meanwhile, so they are found again by
             * address below. */
            pthread_mutex_unlock(&pg->mtx);
            st = write_back(dm, seq, false, msg, len);
            pthread_mutex_lock(&pg->mtx);
        }
        free(msg);
        if (wrote_p && len > 0)
            *wrote_p = true;
        if (st == OMPC_OK && atomic_load(&pg->running) > 1) {
            /* Kernels still running keep their pages. */
            dm_pages_map_lock();
            for (size_t j = 0; j < i; j++) {
                dm_fpage_t *e = fpage_get(pg, addrs[j]);
                if (e && e->twin)
                    memcpy(e->twin, copies + j * DM_PAGE, DM_PAGE);
            }
            dm_pages_map_unlock();
        } else if (st == OMPC_OK) {
            drop_pages(pg, true);
        }
        free(addrs);
        free(copies);
        if (len > 0 && ompc_trace_on()) {
            const ompc_trace_arg_t args[] = {OMPC_TRACE_U64("bytes", len)};
            ompc_trace_span("pages", "write back", t0, ompc_now_ns(), args, 1);
        }
    }
    for (size_t i = 0; seq && i < pg->nseqs; i++)
        if (pg->seqs[i] == seq) {
            pg->seqs[i] = pg->seqs[--pg->nseqs];
            break;
        }
    atomic_fetch_sub(&pg->running, 1);
    pthread_mutex_unlock(&pg->mtx);
    if (faulted_p)
        *faulted_p = atomic_load(&pg->faults) != faults_at_begin;
    return st;
}
