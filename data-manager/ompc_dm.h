/* ompc data manager: where every device buffer lives.
 *
 * The device of an ompc job is the set of executor ranks (the workers, or
 * rank 0 alone when the job has one rank).  Device memory is one address
 * space: a range of virtual addresses reserved at the same place on every
 * rank at start-up, so a device address means the same thing on every
 * executor (pointers stored inside device data stay valid wherever a kernel
 * runs).  An executor commits the pages of a buffer only while it holds a
 * copy.
 *
 * Per buffer the head tracks which executors hold a valid copy, and whether
 * a host-side snapshot (data written by the host and not sent anywhere yet)
 * is valid.  Before a kernel runs on executor k, dm_acquire makes each of its
 * buffers valid on k by forwarding from a valid copy, worker to worker; after
 * it, dm_written marks the buffers the kernel wrote as valid on k only.
 *
 * This layer knows nothing of OpenMP or clang.  Head-side functions may be
 * called from any thread of rank 0. */
#ifndef OMPC_DM_H
#define OMPC_DM_H

#include "ompc_ev.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dm_ctx dm_ctx_t;
typedef struct dm_buf dm_buf_t;
typedef uint64_t dm_addr_t;

/* Collective, between ev_ctx_create and ev_ctx_start (it registers the
 * executor-side functions).  Reserves the device address range. */
ompc_status_t dm_ctx_create(ev_ctx_t *ev, dm_ctx_t **dm_p);
/* Head: frees every buffer still allocated.  Other ranks: unmaps. */
void dm_ctx_destroy(dm_ctx_t *dm);

/* Executors are numbered 0..n-1; dm_executor_rank maps them to MPI ranks. */
int dm_num_executors(const dm_ctx_t *dm);
int dm_executor_rank(const dm_ctx_t *dm, int executor);

/* ---------------------------------------------------------- head side */
/* A new device buffer with no valid data yet. */
ompc_status_t dm_alloc(dm_ctx_t *dm, size_t size, dm_buf_t **buf_p);
/* A buffer that already exists on every executor at per-executor addresses
 * (declare-target globals): valid everywhere, never freed. */
ompc_status_t dm_register_fixed(dm_ctx_t *dm, const dm_addr_t *exec_addrs, size_t size,
                                dm_buf_t **buf_p);
/* Release the buffer on every executor and recycle its addresses. */
ompc_status_t dm_free(dm_ctx_t *dm, dm_buf_t *buf);

dm_addr_t dm_buf_addr(const dm_buf_t *buf);
size_t dm_buf_size(const dm_buf_t *buf);
/* The buffer containing [addr, addr+len), or NULL; *off_p the offset. */
dm_buf_t *dm_buf_find(dm_ctx_t *dm, dm_addr_t addr, size_t len, size_t *off_p);
/* dm_buf_find(dm, addrs[i], 0, NULL) into bufs_p[i] for n values at once,
 * under one lock; values no buffer could hold (outside the device range
 * and every fixed buffer) are answered without it. */
void dm_bufs_find(dm_ctx_t *dm, const dm_addr_t *addrs, size_t n, dm_buf_t **bufs_p);

/* Host -> device: the bytes are copied before the call returns (src may
 * change afterwards). */
ompc_status_t dm_write(dm_ctx_t *dm, dm_buf_t *buf, size_t off, const void *src,
                       size_t len);
/* Whether the buffer ever got data (a fresh buffer has none: whoever
 * writes it first decides where its data lives). */
bool dm_buf_has_data(dm_ctx_t *dm, dm_buf_t *buf);
/* dm_write of the whole buffer from malloc'd memory the data manager takes
 * over (no copy; it frees data). */
ompc_status_t dm_write_adopt(dm_ctx_t *dm, dm_buf_t *buf, void *data);
/* dm_write of the whole buffer from memory the caller lends until the
 * data has reached an executor or dm_unborrow returns, whichever comes
 * first; meanwhile the caller must not change or free it.  No host copy is
 * made: the first dm_acquire sends straight from src (for large copies,
 * where a snapshot is a second pass over the data and fresh pages). */
ompc_status_t dm_write_borrow(dm_ctx_t *dm, dm_buf_t *buf, const void *src);
/* End the loan of dm_write_borrow (no-op if it ended): waits for transfers
 * reading the memory, and copies it if no executor has the data yet. */
ompc_status_t dm_unborrow(dm_ctx_t *dm, dm_buf_t *buf);
/* Device -> host, from a valid copy.  Bytes never written are left as they
 * are in dst. */
ompc_status_t dm_read(dm_ctx_t *dm, dm_buf_t *buf, size_t off, void *dst, size_t len);
/* dm_read from executor exec's copy, whatever this layer thinks of it
 * (the caller knows it is current: dm_set_fault_source). */
ompc_status_t dm_read_on(dm_ctx_t *dm, dm_buf_t *buf, int exec, size_t off, void *dst,
                         size_t len);
/* Device -> device (may be within one buffer if the ranges do not overlap). */
ompc_status_t dm_copy(dm_ctx_t *dm, dm_buf_t *dst, size_t doff, dm_buf_t *src,
                      size_t soff, size_t len);

/* Make every buffer valid on executor `exec` (transfers run in parallel,
 * worker to worker when a worker holds a copy).  Blocks until done. */
ompc_status_t dm_acquire(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n);
/* The kernel that ran on `exec` wrote these buffers: other copies are
 * invalid now. */
void dm_written(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n);
/* Writers of one buffer must share an executor: replicas on two executors
 * written at the same time could not be merged.  dm_pin_executor returns
 * the executor some of the buffers are pinned to by kernels in flight, or
 * -1.  dm_pin pins every buffer to exec, waiting first while any of them is
 * pinned elsewhere (all or nothing, so two waiters cannot deadlock);
 * dm_unpin releases them when the kernel is done. */
int dm_pin_executor(dm_ctx_t *dm, dm_buf_t *const *bufs, size_t n);
void dm_pin(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n);
void dm_unpin(dm_ctx_t *dm, dm_buf_t *const *bufs, size_t n);
/* dm_pin without waiting: false (nothing pinned) if it would wait. */
bool dm_try_pin(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n);

/* ------------------------------------------- buffers spread by range
 * A kernel split over executors (libomptarget-mpi/tgt_split_head.c) leaves
 * each share's written bytes where they were written.  Its home's copy is
 * the buffer's valid copy except for the pieces, whose current bytes are
 * on their executor's copy only.  Every reader here (dm_acquire, dm_read,
 * dm_write of part of it, page faults) first gathers the pieces to the
 * home, so the rest of this layer and its callers see one valid copy;
 * dm_gather does it for callers that move data themselves (launch ahead),
 * and a whole write or dm_free forgets the pieces. */
typedef struct dm_piece {
    int exec;
    uint64_t off, len;
} dm_piece_t;
/* Record that buf's valid copy on home (marked by dm_written_by) lacks
 * pieces, held by their executors (a piece of home's own is kept too, for
 * dm_spread_take; it does not move home).  Replaces any earlier record. */
ompc_status_t dm_spread(dm_ctx_t *dm, dm_buf_t *buf, int home, const dm_piece_t *p,
                        size_t n);
/* Take buf's record over instead of gathering it (the caller moves the
 * pieces itself): true with *home_p and the pieces (the caller frees
 * *p_p), false if the buffer is not spread. */
bool dm_spread_take(dm_ctx_t *dm, dm_buf_t *buf, int *home_p, dm_piece_t **p_p,
                    size_t *n_p);
/* Move every piece of the buffers to its home copy (worker to worker,
 * all at once) and forget the records.  Blocks until done. */
ompc_status_t dm_gather(dm_ctx_t *dm, dm_buf_t *const *bufs, size_t n);

/* Executor side, around one split share (one at a time per process):
 * bytes of a buffer this executor's copy lacks, each run current at
 * (rank, src).  dm_guard_begin fetches at once the runs' bytes in pages
 * they share with other bytes, protects the pages wholly inside a run, and
 * fetches such a page (every thread of the kernel waits) when the kernel
 * touches it: a share gets only what it reads.  Each byte fetched is also
 * written to twin (the run's twin of its first byte, or NULL), so that a
 * comparison with the twin sees only the kernel's own writes.  Call it on
 * the thread that runs the kernel, after dm_pages_task_begin;
 * dm_guard_end, once the kernel's threads are done, says how many bytes
 * came.  The pages never touched stay protected, their bytes stale: the
 * next dm_guard_begin keeps those it protects too and opens the rest, and
 * meanwhile a copy landing over them opens them first, as does a thread
 * touching one outside a split (SIGSEGV). */
typedef struct dm_guard_run {
    uint64_t addr, len;      /* here */
    int64_t rank;            /* where the current bytes are */
    uint64_t src;            /* their address there */
    unsigned char *twin;
} dm_guard_run_t;
/* pre (npre of them, or none): bytes here whose pages the kernel is
 * expected to touch (what it touched last time), fetched at once with the
 * rest instead of a fault each; every fetch dm_guard_begin makes is
 * started before any is waited for. */
typedef struct dm_guard_pre {
    uint64_t addr, len;
} dm_guard_pre_t;
ompc_status_t dm_guard_begin(dm_ctx_t *dm, const dm_guard_run_t *runs, size_t n,
                             const dm_guard_pre_t *pre, size_t npre);
/* The pages guards protect: the whole pages of size DM_GUARD_PAGE inside a
 * run (the bytes of a run in pages it shares with other bytes come at
 * once). */
#define DM_GUARD_PAGE 4096u
/* untouched (or NULL), called by dm_guard_end, for
 * each stretch of a run's protected pages that stayed protected
 * throughout: the kernel neither read nor wrote them, and their twin bytes
 * were never written.  run: its index in dm_guard_begin's list. */
typedef void (*dm_guard_untouched_t)(void *arg, size_t run, uint64_t addr, uint64_t len);
ompc_status_t dm_guard_end(dm_ctx_t *dm, uint64_t *fetched_p,
                           dm_guard_untouched_t untouched, void *arg);

/* Bytes of the buffers already valid on exec (placement policies). */
size_t dm_bytes_valid_on(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n);
/* The same for every executor at once (bytes_p: one per executor). */
void dm_bytes_valid_each(dm_ctx_t *dm, dm_buf_t *const *bufs, size_t n, size_t *bytes_p);

/* ------------------------------------------------------ launch ahead
 * Kernels may be sent to their executor before their inputs exist; the
 * executors then move data between themselves (libomptarget-mpi/
 * tgt_ahead.c).  The head keeps this layer's view right with these. */
/* Executor side, from a gate-thread function: map and expose a buffer's
 * pages unless they are already (a repeated commit keeps the data).
 * epoch: dm_buf_commit_epoch when the commit was planned; it cancels a
 * close of the copy numbered up to it not applied yet (dm_exec_close). */
ompc_status_t dm_exec_commit(ev_ctx_t *ev, dm_addr_t addr, size_t span, uint64_t epoch);
/* The same for a launch of task seq; data_follows: the buffer's data may
 * come here (every launch says so).  Such a copy is mapped when its data may land, no
 * kernel here holding pages of it through faults (dm_exec_land_ready), or
 * when task seq starts (dm_exec_task_commits), not before: a kernel
 * running here meanwhile reaches it through faults, never its zeros. */
ompc_status_t dm_exec_commit_ahead(ev_ctx_t *ev, dm_addr_t addr, size_t span,
                                   uint64_t epoch, uint64_t seq, bool data_follows);
/* Executor side, gate thread: whether bytes for [addr, addr+size) may land
 * now (false: keep them and ask again on a later pass of the gate). */
bool dm_exec_land_ready(dm_addr_t addr, size_t size);
/* Executor side, before task seq's own writes into its buffers (launch
 * ahead's patches): its commits kept for later are mapped. */
void dm_exec_task_commits(uint64_t seq);
/* Executor side, gate thread: close this executor's copy of the buffer at
 * addr when task seq starts (dm_pages_task_begin), unless a commit of
 * epoch >= this close's came first.  Epoch DM_EPOCH_OPEN: the task names
 * the buffer for writing, open the copy instead, if it is read-only
 * (dm_open_take, dm_names_take); DM_EPOCH_NAMED: the task names it
 * (dm_names_take).  Real closes carry the buffer's serial in the high
 * half, never 0. */
#define DM_EPOCH_OPEN 0
#define DM_EPOCH_NAMED 1
void dm_exec_close(uint64_t seq, dm_addr_t addr, size_t span, uint64_t epoch);
/* Executor side, gate thread: bytes for the copy at addr arrived with a
 * message; true if this placed them (a copy kept without access until
 * its data lands), else the caller copies them. */
bool dm_exec_land(dm_addr_t addr, size_t size, const void *bytes);
/* Head: the number of the last close of buf's copy on exec listed
 * (dm_stale_take), 0 if none; every commit of that copy carries it. */
uint64_t dm_buf_commit_epoch(dm_ctx_t *dm, dm_buf_t *buf, int exec);
size_t dm_buf_span(const dm_buf_t *buf);
/* The buffer's address on one executor (they differ only for fixed ones). */
dm_addr_t dm_buf_addr_on(const dm_buf_t *buf, int exec);
/* A launch message carries the commits of its buffers.  dm_commit_claim
 * puts in out[] (returns how many) the buffers not known committed on
 * exec: first the *nclaimed it marks as being committed now, then those
 * whose commit is already on its way in another message.  A launch names
 * both (a repeated commit is harmless), since messages sent by different
 * threads, or batched, may arrive in any order.  dm_commit_claimed then
 * names the event that carries the claimed ones (NULL: it did not start;
 * they are uncommitted again).  Transfers into claimed buffers wait for
 * that event. */
size_t dm_commit_claim(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n,
                       dm_buf_t **out, size_t *nclaimed);
void dm_commit_claimed(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n,
                       ev_handle_t *h);
/* Whose data a buffer holds: the tag given to dm_written_by (a task's
 * sequence number, below 2^63), or a value of its own after any other
 * change. */
uint64_t dm_buf_wtag(dm_ctx_t *dm, dm_buf_t *buf);
void dm_written_by(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n, uint64_t tag);
/* A copy of the data of writer `tag` arrived on exec: valid there unless
 * the data changed since. */
void dm_valid_if(dm_ctx_t *dm, int exec, dm_buf_t *buf, uint64_t tag);
/* Where exec should fetch buf from: an executor holding it, or -1 when
 * exec holds it already (also for a buffer never written) or only the
 * head does (*head_only).  *tag_p: dm_buf_wtag. */
int dm_source_for(dm_ctx_t *dm, dm_buf_t *buf, int exec, bool *head_only,
                  uint64_t *tag_p);
/* Stale copies (docs/architecture.md, "Device pages on demand"): an
 * executor's copy of a buffer written elsewhere since stays mapped there,
 * and a kernel that reaches it through a pointer would read old bytes.
 * dm_stale_note says a writer of buf was launched on executor `writer`
 * (-1: none; the data changed), so every other executor's copy may
 * become stale.  dm_stale_take, for a task about to be launched on exec,
 * asks judge about each such copy and returns (*out_p, malloc'd) those to
 * close when the task starts there: it forgets them (uncommitted, not
 * valid), so a later task there that names the buffer commits it again.
 * judge (called with this layer's lock held: it must not call into it)
 * says CURRENT (the task brings it, or a task there holds it since the
 * write), YES (a writer in flight elsewhere that the task follows), LATER
 * (a writer in flight the task does not follow: ask again later) or
 * UNKNOWN (no writer in flight: this layer's bookkeeping decides). */
typedef enum {
    DM_STALE_UNKNOWN,
    DM_STALE_CURRENT,
    DM_STALE_YES,
    DM_STALE_LATER
} dm_stale_t;
typedef dm_stale_t (*dm_stale_fn_t)(dm_buf_t *buf, void *arg);
typedef struct dm_stale_copy {
    uint64_t addr, span, epoch; /* epoch: the close's number */
} dm_stale_copy_t;
void dm_stale_note(dm_ctx_t *dm, dm_buf_t *buf, int writer);
/* A task launched directly (not ahead) starts as soon as its launch
 * arrives, after everything it follows: its closes go first, at once
 * (one message each, waited for). */
ompc_status_t dm_close_now(dm_ctx_t *dm, int exec, const dm_stale_copy_t *c, size_t n);
size_t dm_stale_take(dm_ctx_t *dm, int exec, dm_stale_fn_t judge, void *arg,
                     dm_stale_copy_t **out_p);
/* Writes into a worker's copy (docs/architecture.md, "Device pages on
 * demand"): a copy from which another worker's copy was made is read-only
 * there.  dm_open_take appends to the list (*list_p, nlist entries,
 * realloc'd; returns the new count) an entry {address, span, epoch 0} for
 * each of the buffers a task about to start on exec names for writing
 * whose copy there may be read-only: the executor opens it when the task
 * starts (dm_exec_close with epoch 0), as the task's completion makes it
 * the only current copy. */
size_t dm_open_take(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n,
                    dm_stale_copy_t **list_p, size_t nlist);
/* For a task launched ahead on exec, once some copy was served: appends
 * an entry for each buffer the task names (bufs, n), epoch DM_EPOCH_OPEN
 * for those it may write (wr, nwr), else DM_EPOCH_NAMED.  The executor
 * then opens the copies the task writes, whatever the marks say, and
 * turns read-only, as the task starts, only the served copies it does not
 * name. */
size_t dm_names_take(dm_ctx_t *dm, int exec, dm_buf_t *const *bufs, size_t n,
                     dm_buf_t *const *wr, size_t nwr, dm_stale_copy_t **list_p,
                     size_t nlist);
/* Head: launch ahead plans a copy of buf from exec's copy (a pull), which
 * exec's serve makes read-only: noted for dm_open_take. */
void dm_served_from(dm_ctx_t *dm, dm_buf_t *buf, int exec);
/* Executor side: a copy of [addr, addr+size) is being sent to another
 * worker (launch ahead's serve): the copy here turns read-only. */
void dm_exec_served(dm_addr_t addr, size_t size);
/* Executor side: open the copy at addr (a buffer's address) if it is
 * read-only here: a task that names it for writing starts. */
void dm_exec_open(dm_addr_t addr);
/* Executor side: the runtime's own write of len bytes (src NULL: zeros)
 * into a copy here, read-only or not (landed patches, split shares). */
void dm_exec_store(void *dst, const void *src, size_t len);
/* A forward between executors planned elsewhere, for the statistics. */
void dm_count_forward(dm_ctx_t *dm, size_t bytes);
/* Bytes brought to the host another way (with a kernel's reply). */
void dm_count_read(dm_ctx_t *dm, size_t bytes);

/* ------------------------------------------------ device pages on demand
 * A kernel may reach device memory no clause named (pointers stored in
 * device data).  On an executor, a page it does not hold is fetched from
 * the valid copy of its buffer when the kernel touches it, and the bytes
 * it writes there go back at the end of the task (dm_pages.c). */
typedef struct dm_pages dm_pages_t;
/* Executor side, on the thread that runs the kernel: around each kernel.
 * task_begin returns a token for task_end; task_end writes back what the
 * kernel wrote through faults (blocks until the head has it) and says
 * whether faults were served on this executor meanwhile (faulted_p) and
 * whether it wrote any bytes back (wrote_p; either may be NULL). */
/* seq: the launched-ahead task about to run (0: none); the head orders
 * the fetches of its faults after the writers it follows
 * (dm_set_fault_source). */
uint64_t dm_pages_task_begin(dm_ctx_t *dm, uint64_t seq);
/* seq: the launched-ahead task that ran (0: none), named to the head
 * with the write-back (dm_set_fault_write_hooks). */
ompc_status_t dm_pages_task_end(dm_ctx_t *dm, uint64_t token, uint64_t seq,
                                bool *faulted_p, bool *wrote_p);
/* A write-back is a list of runs, each {u64 addr, u64 len, then len bytes
 * padded to 8}; a run at address 0 of 8 or 16 bytes names the writing
 * task's seq instead, and in its second word whether the runs come from a
 * copy served to another worker (counted apart, OMPC_STATS). */
/* Head: how write-backs of tasks launched ahead (seq != 0) meet the task
 * graph.  order(exec, seq, buf_addr, size) runs before a write-back
 * patches a buffer.  It returns true if the task itself names that buffer
 * for writing: its completion makes its own copy, which holds the bytes,
 * the only valid one, and the runs into that buffer are dropped (patching
 * another copy would make the writer's own copy stale, and a later close
 * could remove the only one with its writes).  Else it returns false once
 * every writer of that buffer ordered before the task is taken in here
 * (its completion would otherwise make its own copy, without these bytes,
 * the only valid one), and ends the job by name if a writer may run at
 * the same time on another executor.  done(exec, seq, runs, len) runs once
 * the message's runs are applied (those kept): it sends them on to tasks
 * launched before the write that will read the buffer, and returns once
 * they are there.  Without hooks (or seq 0), runs into a buffer pinned by
 * a kernel on the writing executor are dropped as above (the pin is a
 * named writer's), and one pinned by a kernel on another executor is
 * refused by name. */
typedef struct dm_fault_write_hooks {
    bool (*order)(int exec, uint64_t seq, uint64_t buf_addr, size_t size);
    void (*done)(int exec, uint64_t seq, const void *runs, size_t len);
} dm_fault_write_hooks_t;
void dm_set_fault_write_hooks(dm_ctx_t *dm, const dm_fault_write_hooks_t *hooks);
/* Head: source(exec, seqs, n, buffer address) says where a fault of exec
 * reads the buffer's bytes when the tasks running there (seqs, launched
 * ahead) follow a writer of it whose completion the head has not handled
 * yet: that writer's executor, whose copy holds its bytes (the task
 * started after the writer was done).  -1: the valid copy this layer
 * knows of. */
typedef int (*dm_fault_source_fn_t)(int exec, const uint64_t *seqs, size_t n,
                                    uint64_t buf_addr);
void dm_set_fault_source(dm_ctx_t *dm, dm_fault_source_fn_t fn);
/* How OMPC_INFO names the running kernel (called on the fault service
 * thread; writes a string into buf). */
void dm_pages_set_namer(dm_ctx_t *dm, void (*namer)(char *buf, size_t cap));
typedef struct dm_page_stats {
    uint64_t faults;              /* fetches served */
    uint64_t bytes_fetched;
    uint64_t bytes_written_back;
    uint64_t peer_faults;         /* of faults: read straight from the
                                     worker holding the copy */
    uint64_t bytes_from_peers;
    uint64_t served_writes;       /* write-backs of kernels' writes into
                                     copies served to other workers */
    uint64_t bytes_from_served;   /* of bytes_written_back: theirs */
} dm_page_stats_t;
/* Head: one executor's figures. */
void dm_page_stats_of(dm_ctx_t *dm, int exec, dm_page_stats_t *stats_p);

typedef struct dm_stats {
    uint64_t bytes_host_to_dev;
    uint64_t bytes_dev_to_host;
    uint64_t bytes_dev_to_dev;   /* worker to worker (exchange events) */
    uint64_t transfers_dev_to_dev;
} dm_stats_t;
void dm_get_stats(dm_ctx_t *dm, dm_stats_t *stats_p);

#ifdef __cplusplus
}
#endif
#endif
