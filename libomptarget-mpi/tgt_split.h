/* Loops split across workers (docs/architecture.md, "Loops split across
 * workers"): the messages between the head and the executors, and the
 * calls the rest of the offload layer makes.
 *
 * A split kernel runs in two steps.  First every share runs on its
 * executor (tgt.split.run): the executor twins the buffers the kernel may
 * write, runs its contiguous share of the kernel's teams, and answers
 * with the byte ranges that changed.  Then the head checks that no two
 * shares changed the same bytes and either moves every helper's changed
 * bytes to the home executor (worker to worker; the home's copy becomes
 * the one valid copy), or has the home put its twins back and runs the
 * kernel whole there (tgt.split.end). */
#ifndef OMPC_TGT_SPLIT_H
#define OMPC_TGT_SPLIT_H

#include "tgt_internal.h"

#include <assert.h>

/* ------------------------------------------------------------- messages */
#define TGT_SPLIT_MAGIC 0x54494c5053u /* "SPLIT" */

/* tgt.split.run's arguments: this header, nbufs tgt_split_buf_t, then a
 * kernel launch message (tgt_wire.h). */
typedef struct tgt_split_hdr {
    uint64_t magic;
    uint64_t key;            /* the split's id, unique per head */
    uint32_t share;          /* this executor's share, 0..nshares-1 */
    uint32_t nshares;
    int32_t home_rank;       /* the rank whose copy becomes valid */
    uint32_t nbufs;          /* buffers to twin (the ones the kernel may write) */
    uint32_t nguard;         /* tgt_split_guard_t after the buffers */
    uint32_t hflags;         /* TGT_SPLIT_KEEP_TWINS */
    /* This share's part of the kernel's work: the shares before it hold
     * [0, w_lo) of TGT_SPLIT_WSCALE, this one [w_lo, w_hi); the last ends
     * at TGT_SPLIT_WSCALE.  Sized by each executor's measured speed. */
    uint32_t w_lo, w_hi;
} tgt_split_hdr_t;
/* A helper keeps its twins until the head ends its share (DROP, PUSH or
 * RESTORE), so that an undone split can put its copy back: set when some
 * buffer's pieces are fetched where touched, on every member
 * (docs/architecture.md, "Loops split across workers"). */
#define TGT_SPLIT_KEEP_TWINS 0x1u
static_assert(sizeof(tgt_split_hdr_t) == 48, "tgt_split_hdr_t is a wire format");
/* The whole of a kernel's work in tgt_split_hdr_t.w_lo/w_hi units. */
#define TGT_SPLIT_WSCALE (1u << 20)

/* Bytes of a buffer this share's copy lacks (another share's piece, kept
 * where it was written): fetched when the kernel touches them
 * (dm_guard_begin). */
typedef struct tgt_split_guard {
    uint32_t buf;            /* index into the header's buffers */
    uint32_t pad;
    uint64_t off, len;
    int64_t rank;            /* whose copy holds them */
    uint64_t addr;           /* of byte off there */
} tgt_split_guard_t;
static_assert(sizeof(tgt_split_guard_t) == 40, "tgt_split_guard_t is a wire format");
/* At most this many per share (the rest of a buffer's pieces come at once). */
#define TGT_SPLIT_MAX_GUARDS 512

typedef struct tgt_split_buf {
    uint64_t addr;           /* on this executor */
    uint64_t home_addr;      /* on the home executor */
    uint64_t size;
    uint64_t zero;           /* 1: no data yet: zeroed on every share before
                              * the kernel, so that all start alike */
} tgt_split_buf_t;
static_assert(sizeof(tgt_split_buf_t) == 32, "tgt_split_buf_t is a wire format");

/* Why a share is not safe to merge (tgt_split_reply_t.flags). */
#define TGT_SPLIT_NO_TEAMS 0x1u      /* the kernel made no teams region */
#define TGT_SPLIT_NO_DIST 0x2u       /* a team ran no static distribute loop */
#define TGT_SPLIT_RED_SHAPE                                                              \
    0x4u     /* a reduction across teams over several
                                      * variables, a variable-length section,
                                      * or two reductions */
#define TGT_SPLIT_CRITICAL 0x8u      /* a critical section (across teams) */
#define TGT_SPLIT_FAULTED 0x10u      /* wrote into pages that came on demand */
#define TGT_SPLIT_TOO_MANY 0x20u     /* more changed ranges than a reply holds */
#define TGT_SPLIT_NESTED_TEAMS 0x40u /* a second teams region in the share */

/* tgt.split.run's result: this, then nranges tgt_split_range_t. */
typedef struct tgt_split_reply {
    uint64_t kernel_ns;
    uint32_t flags;
    uint32_t nranges;
    uint32_t teams;          /* teams the kernel has (virtual) */
    uint32_t my_teams;       /* of which this share ran */
    uint32_t reduced;        /* 1: its teams combined one reduction variable */
    uint32_t ncands;         /* tgt_split_cand_t after the ranges */
    uint64_t fetched;        /* bytes the guards brought */
    uint64_t teams_ns;       /* running the share's teams, and only that */
    uint64_t part;           /* of the work those teams did, in
                              * TGT_SPLIT_WSCALE units: the header's part,
                              * or my_teams of teams when the iterations of
                              * a team could not be sized */
} tgt_split_reply_t;
static_assert(sizeof(tgt_split_reply_t) == 56, "tgt_split_reply_t is a wire format");

typedef struct tgt_split_range {
    uint32_t buf;            /* index into the header's buffers */
    uint32_t pad;
    uint64_t off, len;
} tgt_split_range_t;
static_assert(sizeof(tgt_split_range_t) == 24, "tgt_split_range_t is a wire format");

/* Where a reduction variable may be: a pointer argument of the teams
 * region into a buffer the kernel may write, with the bytes from there to
 * the buffer's end after the share (at most TGT_SPLIT_CAND_MAX; len 0:
 * longer).  written: its first bytes changed while a team combined its
 * reduction into the original (between __kmpc_reduce_nowait and its end,
 * where the compiled code writes nothing else): the variable. */
#define TGT_SPLIT_NCANDS 8
#define TGT_SPLIT_CAND_MAX 256
typedef struct tgt_split_cand {
    uint32_t buf;
    uint32_t len;
    uint64_t off;
    uint32_t written;
    uint32_t pad;
    unsigned char bytes[TGT_SPLIT_CAND_MAX];
} tgt_split_cand_t;
static_assert(sizeof(tgt_split_cand_t) == 24 + TGT_SPLIT_CAND_MAX,
              "tgt_split_cand_t is a wire format");

/* At most this many changed ranges per share: the reply of an execute
 * event holds 64 KiB (EV_EXEC_MAX_RESULT), the candidates included. */
#define TGT_SPLIT_MAX_RANGES                                                             \
    ((EV_EXEC_MAX_RESULT - sizeof(tgt_split_reply_t) -                                   \
      TGT_SPLIT_NCANDS * sizeof(tgt_split_cand_t)) /                                     \
     sizeof(tgt_split_range_t))

/* Changed ranges up to this long travel packed, in tgt.split.apply
 * messages from the helper to the home (the helper keeps their bytes
 * until tgt.split.end); longer ones as exchange events the head commands.
 * One event per range of a stencil's thousand small ones cost more than
 * its kernel (performance.md, "loops split across workers"). */
#define TGT_SPLIT_SMALL 4096

/* tgt.split.end's arguments: to the home, and to each helper that kept
 * small ranges (a helper without any forgets its share once it has
 * answered). */
typedef enum {
    TGT_SPLIT_DROP = 1,      /* the merge is good (home) or undone (helper):
                              * forget the share */
    TGT_SPLIT_RESTORE = 2,   /* home: put the twins back, then forget them */
    TGT_SPLIT_PUSH = 3,      /* helper: send the small ranges home, forget */
} tgt_split_action_t;
typedef struct tgt_split_end {
    uint64_t magic;
    uint64_t key;
    uint32_t action;
    int32_t home_rank;
} tgt_split_end_t;
static_assert(sizeof(tgt_split_end_t) == 24, "tgt_split_end_t is a wire format");
/* tgt.split.drop (posted, no reply) carries a tgt_split_end_t with action
 * TGT_SPLIT_DROP: the same as tgt.split.end's DROP, run on the gate
 * thread, and ordered before the head's later events to that rank. */

/* tgt.split.apply's arguments (helper to home): this, then per range its
 * address on the home and length, and its bytes padded to 8; at most
 * EV_EXEC_MAX_ARGS in all. */
typedef struct tgt_split_apply {
    uint64_t magic;
    uint64_t key;
    uint64_t nranges;
} tgt_split_apply_t;
static_assert(sizeof(tgt_split_apply_t) == 24, "tgt_split_apply_t is a wire format");
typedef struct tgt_split_span {
    uint64_t addr, len;
} tgt_split_span_t;
static_assert(sizeof(tgt_split_span_t) == 16, "tgt_split_span_t is a wire format");

/* tgt.split.reduce's arguments (head to home): this, then nparts helpers'
 * values of the reduction variable's region, len bytes each padded to 8.
 * The home combines each into its own with the combiner its teams used,
 * once its initial value combined with itself is unchanged (every share
 * started from it).  Result: a uint32_t, 0 combined, 1 refused for that. */
typedef struct tgt_split_reduce {
    uint64_t magic;
    uint64_t key;
    uint32_t buf;
    uint32_t len;
    uint64_t off;
    uint64_t nparts;
} tgt_split_reduce_t;
static_assert(sizeof(tgt_split_reduce_t) == 40, "tgt_split_reduce_t is a wire format");

/* ----------------------------------------------------------- executors */
/* Registers tgt.split.run, .end, .apply and .reduce (every rank, in this
 * order). */
ompc_status_t tgt_split_fn_register(void);
/* tgt_kernel_before (tgt_kernel_run calls it just before the kernel, the
 * launch's own copies in place): a split share twins its buffers here.  A
 * no-op outside a split share. */
void tgt_split_share_begin(void);
/* Whether this library's stand-ins for libomp's teams and worksharing
 * entry points are the ones the device image calls (ompcc links it first);
 * false disables splitting. */
bool tgt_split_interposed(void);

/* ---------------------------------------------------------------- head */
/* __tgt_target_kernel saw kernel k launched with num_teams (-1: a target
 * region without teams). */
void tgt_split_note(const tgt_kernel_t *k, int32_t num_teams);
/* Whether the head should split k over several executors (OMPC_SPLIT). */
bool tgt_split_wanted(const tgt_kernel_t *k);
/* Runs launch message msg of kernel k split over executors starting at
 * home (the buffers bufs already valid there; wr the ones it may write),
 * and waits for it.  On return the kernel's effects on wr are in home's
 * copy only, as if it had run there; *ns_p: the longest share's run time.
 * false: not split (too few executors), nothing was done. */
bool tgt_split_exec(const tgt_ident_t *loc, const tgt_kernel_t *k, int home,
                    const char *msg, size_t msg_len, dm_buf_t *const *bufs, size_t nbufs,
                    dm_buf_t *const *wr, size_t nwr, uint64_t *ns_p);
/* Once the split kernel's node marked wr written by it (tag), on the
 * thread that ran tgt_split_exec: the buffers no share changed are valid
 * again on the helpers, whose bytes of them are the home's.  A no-op
 * when this thread ran no split since. */
void tgt_split_after(dm_buf_t *const *wr, size_t nwr, uint64_t tag);
/* OMPC_STATS: one line per kernel that was split (head, at shutdown). */
void tgt_split_stats_print(void);

#endif
