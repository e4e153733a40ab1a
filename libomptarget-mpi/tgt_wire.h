/* The messages of a kernel launch and of launch-ahead, as they travel: the
 * one description both the head (tgt_kernel.c, tgt_dispatch.c,
 * tgt_ahead_head.c, tgt_graph.c) and the executors (tgt_kernel.c,
 * tgt_ahead.c) encode and decode through.
 *
 * Each struct here is a wire layout: fixed-width fields, no padding (the
 * static checks below say so), sent as it is in memory.  The ranks of one
 * job share byte order and word size.  A message is a sequence of these
 * structs and raw bytes padded to 8, so every struct in it starts 8-byte
 * aligned within the message; readers still copy structs out (memcpy), so
 * a buffer of any alignment is fine.
 *
 * Decoders check every length and count against the message's size before
 * anything is taken and return NULL, or a sentence saying what is wrong;
 * the handler then refuses the whole message (OMPC_ERR_INVALID).  Encoders
 * trust their caller: the sizes come from the matching *_size function.
 * Nothing here keeps state: any thread may call any of it. */
#ifndef OMPC_TGT_WIRE_H
#define OMPC_TGT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t tgt_wire_pad8(uint64_t len) { return (len + 7) / 8 * 8; }

/* ------------------------------------------------------ kernel launch
 * "tgt.kernel" (tgt_kernel.c) and the kernel part of a launch ahead:
 *
 *   tgt_wire_kernel_t, then nargs uint64_t arguments;
 *   optionally, small copies into the kernel's fresh buffers
 *   (tgt_dispatch.c, inline_writes; the head committed their pages):
 *     uint64_t count, then per copy a tgt_wire_span_t {address here,
 *     length} and its bytes padded to 8;
 *   optionally, after a (maybe empty) block of copies, the copies a direct
 *   launch's reply brings back (tgt_dispatch.c, read_backs):
 *     uint64_t count, then a tgt_wire_span_t {address there, length} each.
 *
 * The reply of "tgt.kernel": tgt_wire_kernel_reply_t, then the bytes of
 * each read-back, padded to 8. */
typedef struct tgt_wire_kernel {
    uint32_t kernel;         /* index into the image's kernel table */
    uint32_t nargs;          /* the kernel's arguments after dyn_ptr */
} tgt_wire_kernel_t;

typedef struct tgt_wire_span {
    uint64_t addr;
    uint64_t len;
} tgt_wire_span_t;

typedef struct tgt_wire_kernel_reply {
    uint64_t kernel_ns;      /* the kernel's run time, executor clock */
} tgt_wire_kernel_reply_t;

_Static_assert(sizeof(tgt_wire_kernel_t) == 8, "kernel launch header: 2 x u32");
_Static_assert(offsetof(tgt_wire_kernel_t, nargs) == 4, "kernel launch header");
_Static_assert(sizeof(tgt_wire_span_t) == 16, "copy: {address, length}");
_Static_assert(offsetof(tgt_wire_span_t, len) == 8, "copy: {address, length}");
_Static_assert(sizeof(tgt_wire_kernel_reply_t) == 8, "kernel reply: {ns}");

/* The reply of "tgt.cpu" (OMPC_STATS): a worker's CPU time and context
 * switches from getrusage, the run time of the kernels it ran, and its
 * threads' CPU by role (ompc_cpu.h's order). */
typedef struct tgt_wire_cpu {
    uint64_t user_ns, sys_ns;
    uint64_t vcsw, ivcsw;    /* voluntary, involuntary context switches */
    uint64_t kernel_ns;      /* kernels' run time, summed */
    uint64_t kernel_cpu_ns;  /* their threads' CPU time while they ran */
    uint64_t kernels;        /* kernels run */
    uint64_t role_ns[5];
} tgt_wire_cpu_t;

_Static_assert(sizeof(tgt_wire_cpu_t) == 96, "cpu reply: 12 x u64");
_Static_assert(offsetof(tgt_wire_cpu_t, role_ns) == 56, "cpu reply: roles last");

/* A kernel launch, decoded (pointers into the message). */
typedef struct tgt_wire_kernel_view {
    uint32_t kernel, nargs;
    const unsigned char *args;      /* nargs uint64_t */
    uint64_t ncopies;
    const unsigned char *copies;    /* the first copy (tgt_wire_copy_next) */
    bool has_backs;                 /* a read-back block is present */
    uint64_t nbacks;
    const unsigned char *backs;     /* tgt_wire_back_get */
} tgt_wire_kernel_view_t;

/* Encoding, head: the launch is tgt_wire_kernel_size(nargs) bytes; a block
 * of copies adds tgt_wire_count_size() and tgt_wire_copy_size(len) per
 * copy; a block of read-backs tgt_wire_count_size() (twice when no block
 * of copies precedes it: an empty one goes first) and
 * sizeof(tgt_wire_span_t) each. */
static inline size_t tgt_wire_kernel_size(uint32_t nargs)
{
    return sizeof(tgt_wire_kernel_t) + (size_t)nargs * sizeof(uint64_t);
}
static inline size_t tgt_wire_count_size(void) { return sizeof(uint64_t); }
static inline size_t tgt_wire_copy_size(uint64_t len)
{
    return sizeof(tgt_wire_span_t) + tgt_wire_pad8(len);
}
/* Each writes at p and returns the end of what it wrote. */
unsigned char *tgt_wire_kernel_put(unsigned char *p, uint32_t kernel, uint32_t nargs,
                                   const uint64_t *args);
unsigned char *tgt_wire_count_put(unsigned char *p, uint64_t count);
unsigned char *tgt_wire_copy_put(unsigned char *p, uint64_t addr, const void *bytes,
                                 uint64_t len);
unsigned char *tgt_wire_back_put(unsigned char *p, uint64_t addr, uint64_t len);

/* Decoding, executor: the kernel index alone (false: too short), or the
 * whole message checked (NULL) or what is wrong with it. */
bool tgt_wire_kernel_peek(const void *m, size_t len, uint32_t *kernel_p);
const char *tgt_wire_kernel_decode(const void *m, size_t len,
                                   tgt_wire_kernel_view_t *v_p);
/* The copy at p (a decoded view's copies, then each return value): its
 * span and bytes; returns where the next one starts. */
const unsigned char *tgt_wire_copy_next(const unsigned char *p, tgt_wire_span_t *s_p,
                                        const void **bytes_p);
static inline uint64_t tgt_wire_kernel_arg(const tgt_wire_kernel_view_t *v, uint32_t i)
{
    uint64_t a;
    memcpy(&a, v->args + (size_t)i * sizeof(a), sizeof(a));
    return a;
}
static inline tgt_wire_span_t tgt_wire_back_get(const tgt_wire_kernel_view_t *v,
                                                uint64_t i)
{
    tgt_wire_span_t s;
    memcpy(&s, v->backs + i * sizeof(s), sizeof(s));
    return s;
}

/* ----------------------------------------------------- launch ahead
 * "tgt.ahead.launch", head -> executor, with a reply:
 *
 *   tgt_wire_batch_t, then per launch a uint64_t word count and the
 *   launch, that many 8-byte words:
 *     tgt_wire_launch_t, then ncommit tgt_wire_commit_t, nafter uint64_t
 *     sequence numbers (tasks of this executor the kernel waits for),
 *     npull tgt_wire_pull_t, nclose tgt_wire_commit_t (stale copies to
 *     close when the task starts), and the kernel launch message
 *     (above), klen bytes padded to 8.
 *
 * Reply: tgt_wire_launch_reply_t. */
typedef struct tgt_wire_batch {
    uint64_t count;          /* launches */
    uint64_t mode;           /* the head's generation << 1 | prompt */
} tgt_wire_batch_t;

typedef struct tgt_wire_launch {
    uint64_t seq;            /* the task */
    uint64_t lwm;            /* every task up to it is done everywhere */
    uint64_t ncommit, nafter, npull;
    uint64_t klen;           /* the kernel launch message, bytes */
    uint64_t nclose;
} tgt_wire_launch_t;

/* Pages of the executor's device space to back before the kernel runs;
 * in the close list, a copy there that is stale once the task starts
 * (docs/architecture.md, "Device pages on demand"), or with epoch 0 a
 * read-only copy there that the task may write, to open when it starts. */
typedef struct tgt_wire_commit {
    uint64_t addr;
    uint64_t span;
    uint64_t epoch;          /* dm_exec_commit, dm_exec_close */
} tgt_wire_commit_t;

/* Once task `after` is done on rank, size bytes from src there to dst here
 * (declare target variables live at different addresses on different
 * ranks).  size 0: only the order (a predecessor no data comes from). */
typedef struct tgt_wire_pull {
    uint64_t after;
    uint64_t src, dst, size;
    uint64_t rank;
} tgt_wire_pull_t;

typedef struct tgt_wire_launch_reply {
    uint64_t arrived_ns;     /* executor clock; 0: it was busy, not timed */
} tgt_wire_launch_reply_t;

_Static_assert(sizeof(tgt_wire_batch_t) == 16, "batch: {count, mode}");
_Static_assert(sizeof(tgt_wire_launch_t) == 56, "launch: 7 x u64");
_Static_assert(offsetof(tgt_wire_launch_t, nclose) == 48, "launch: nclose last");
_Static_assert(sizeof(tgt_wire_commit_t) == 24, "commit: {address, span, epoch}");
_Static_assert(sizeof(tgt_wire_pull_t) == 40, "pull: 5 x u64");
_Static_assert(offsetof(tgt_wire_pull_t, rank) == 32, "pull: rank last");
_Static_assert(sizeof(tgt_wire_launch_reply_t) == 8, "launch reply: {ns}");

/* Encoding, head.  A launch: fill h's counts, then size and put it. */
size_t tgt_wire_launch_size(const tgt_wire_launch_t *h);
void tgt_wire_launch_put(void *buf, const tgt_wire_launch_t *h,
                         const tgt_wire_commit_t *commits, const uint64_t *afters,
                         const tgt_wire_pull_t *pulls, const tgt_wire_commit_t *closes,
                         const void *kmsg);
/* A batch of count launches of lens len[i] (each a launch_size) is
 * sizeof(tgt_wire_batch_t) plus tgt_wire_batch_item_size(len[i]) each:
 * the launch's word count (tgt_wire_count_put) and the launch. */
static inline size_t tgt_wire_batch_item_size(size_t launch_len)
{
    return sizeof(uint64_t) + launch_len;
}
unsigned char *tgt_wire_batch_begin(void *buf, uint64_t count, uint64_t gen, bool prompt);

/* Decoding, executor: open checks the whole batch (every launch in it),
 * then next gives the launches in order. */
typedef struct tgt_wire_batch_reader {
    uint64_t count, gen;
    bool prompt;
    uint64_t left;
    const unsigned char *at;
} tgt_wire_batch_reader_t;

typedef struct tgt_wire_launch_view {
    tgt_wire_launch_t h;
    const unsigned char *commits, *afters, *pulls, *closes;
    const void *kmsg;        /* h.klen bytes */
} tgt_wire_launch_view_t;

const char *tgt_wire_batch_open(const void *m, size_t len, tgt_wire_batch_reader_t *r_p);
bool tgt_wire_batch_next(tgt_wire_batch_reader_t *r, tgt_wire_launch_view_t *l_p);
static inline tgt_wire_commit_t tgt_wire_commit_get(const tgt_wire_launch_view_t *l,
                                                    uint64_t i)
{
    tgt_wire_commit_t c;
    memcpy(&c, l->commits + i * sizeof(c), sizeof(c));
    return c;
}
static inline tgt_wire_commit_t tgt_wire_close_get(const tgt_wire_launch_view_t *l,
                                                   uint64_t i)
{
    tgt_wire_commit_t c;
    memcpy(&c, l->closes + i * sizeof(c), sizeof(c));
    return c;
}
static inline uint64_t tgt_wire_after_get(const tgt_wire_launch_view_t *l, uint64_t i)
{
    uint64_t a;
    memcpy(&a, l->afters + i * sizeof(a), sizeof(a));
    return a;
}
static inline tgt_wire_pull_t tgt_wire_pull_get(const tgt_wire_launch_view_t *l,
                                                uint64_t i)
{
    tgt_wire_pull_t p;
    memcpy(&p, l->pulls + i * sizeof(p), sizeof(p));
    return p;
}

/* "tgt.ahead.watch", executor -> executor, one-way: an array of
 * tgt_wire_watch_t, one launch batch's data requests to one peer (at most
 * TGT_WIRE_WATCH_MAX in a message, the rest in more).  Once task `after`
 * is done here, size bytes at addr to daddr on crank, for its task cseq. */
typedef struct tgt_wire_watch {
    uint64_t after;
    uint64_t addr, daddr, size;
    uint64_t cseq;
    uint64_t crank;
} tgt_wire_watch_t;
_Static_assert(sizeof(tgt_wire_watch_t) == 48, "watch: 6 x u64");

/* "tgt.ahead.arrive", executor -> executor, one-way: tgt_wire_arrive_t,
 * then the size bytes when has_bytes (up to TGT_WIRE_ARRIVE_INLINE_MAX;
 * larger data went first as a transfer and this is its notice). */
typedef struct tgt_wire_arrive {
    uint64_t cseq;           /* the consumer's task */
    uint64_t daddr, size;
    uint64_t has_bytes;      /* 0 or 1 */
    uint64_t served_ns;      /* sender's clock; 0: not timed */
    uint64_t rank;           /* the sender */
} tgt_wire_arrive_t;
_Static_assert(sizeof(tgt_wire_arrive_t) == 48, "arrive: 6 x u64");
#define TGT_WIRE_ARRIVE_INLINE_MAX (32 * 1024)

/* "tgt.ahead.done", executor -> head, one-way: an array of
 * tgt_wire_done_t, several tasks per message.  The task's slowest timed
 * input came from hop_rank (-1: none) hop_raw ns after that rank served
 * it (the two ranks' clocks). */
typedef struct tgt_wire_done {
    uint64_t seq;
    uint64_t kernel_ns;
    int64_t status;          /* ompc_status_t */
    uint64_t hop_raw;
    int64_t hop_rank;
} tgt_wire_done_t;
_Static_assert(sizeof(tgt_wire_done_t) == 40, "done: 5 x 8 bytes");
_Static_assert(offsetof(tgt_wire_done_t, hop_rank) == 32, "done: hop_rank last");

/* "tgt.ahead.prompt", head -> executor, one-way: from generation gen on,
 * the head may wait for a completion. */
typedef struct tgt_wire_prompt {
    uint64_t gen;
} tgt_wire_prompt_t;
_Static_assert(sizeof(tgt_wire_prompt_t) == 8, "prompt: {gen}");

/* "tgt.ahead.patch", head -> executor, with a reply once it is kept:
 * bytes that task seq, launched before they were written, must see.  A
 * task it is ordered after wrote them through page faults.
 * tgt_wire_patch_t, then runs, each {u64 addr, u64 len, then len bytes
 * padded to 8} (the write-back runs of data-manager/ompc_dm.h).  The
 * executor applies them when task seq starts. */
typedef struct tgt_wire_patch {
    uint64_t seq;
} tgt_wire_patch_t;
_Static_assert(sizeof(tgt_wire_patch_t) == 8, "patch: {seq}");

/* A one-way event carries at most this many bytes (EV_EXEC_MAX_ARGS, the
 * event system's limit, checked where both are known: tgt_ahead.c). */
#define TGT_WIRE_MAX_BYTES (64 * 1024)
#define TGT_WIRE_WATCH_MAX (TGT_WIRE_MAX_BYTES / sizeof(tgt_wire_watch_t))

/* Decoding the arrays and the rest: n elements, or what is wrong.  The
 * getters copy element i out. */
const char *tgt_wire_watches_open(const void *m, size_t len, size_t *n_p);
const char *tgt_wire_dones_open(const void *m, size_t len, size_t *n_p);
static inline tgt_wire_watch_t tgt_wire_watch_get(const void *m, size_t i)
{
    tgt_wire_watch_t w;
    memcpy(&w, (const unsigned char *)m + i * sizeof(w), sizeof(w));
    return w;
}
static inline tgt_wire_done_t tgt_wire_done_get(const void *m, size_t i)
{
    tgt_wire_done_t d;
    memcpy(&d, (const unsigned char *)m + i * sizeof(d), sizeof(d));
    return d;
}
/* Arrive: the header and where its bytes are (NULL without). */
size_t tgt_wire_arrive_size(const tgt_wire_arrive_t *h);
void tgt_wire_arrive_put(void *buf, const tgt_wire_arrive_t *h, const void *bytes);
const char *tgt_wire_arrive_open(const void *m, size_t len, tgt_wire_arrive_t *h_p,
                                 const void **bytes_p);
const char *tgt_wire_prompt_open(const void *m, size_t len, tgt_wire_prompt_t *p_p);
/* Patch: the header, and where its runs are (each checked to fit). */
const char *tgt_wire_patch_open(const void *m, size_t len, tgt_wire_patch_t *h_p,
                                const unsigned char **runs_p, size_t *runs_len_p);

#endif
