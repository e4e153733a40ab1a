/* Private to libomptarget-mpi/: clang-19's offloading ABI as we use it, and
 * the runtime state behind the __tgt_* entry points. */
#ifndef OMPC_TGT_INTERNAL_H
#define OMPC_TGT_INTERNAL_H

#include "ompc_cpu.h"
#include "ompc_dm.h"
#include "ompc_ev.h"
#include "ompc_tmap.h"
#include "tgt_wire.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* ------------------------------------------------------------ lock order
 * A thread that holds one of these may take only those below it:
 *
 *   register_mtx     start-up and image registration only (tgt_register.c)
 *   plan_mtx         from tgt_plan_begin until tgt_plan_mapped (tgt_map.c):
 *                    one construct maps at a time, and its ticket puts
 *                    its node in the graph in that order (tgt_g.mtx:
 *                    tgt_rec_construct)
 *   tgt_rt->map_mtx  the mapping table
 *   tgt_g.sched_mtx  one flush places nodes at a time (tgt_flush.c)
 *   tgt_g.mtx        the graph, its queues and statistics
 *                    (tgt_graph_internal.h says which fields)
 *   tgt_g.ahead_mtx  launch-ahead's per-buffer plans (tgt_ahead_head.c)
 *   dm->mtx          where copies live (data-manager/)
 *
 * Leaves, holding nothing else while held: model.mtx (tgt_model.c;
 * taken under tgt_g.mtx), ahd_exec.mtx (tgt_ahead.c, executors),
 * tgt_taskred.c's mtx.
 * The event system's own locks come below all of these: any of them may
 * be held while an event starts.  Only plan_mtx and map_mtx may be held
 * while an event is waited for (mapping allocates and copies under them);
 * tgt_g.*, dm->mtx and the leaves never are, since gate handlers take them
 * (fn_done takes tgt_g.mtx) and the gate would wait for its own waiter.  A
 * pin of a buffer (dm_pin) is tried under tgt_g.mtx, never waited for. */

/* ------------------------------------------------- clang-19 ABI (facts) */
/* From libomp, which every OpenMP program loads; weak so that the library
 * links on its own. */
void omp_set_num_threads(int n) __attribute__((weak));
int __kmpc_global_thread_num(void *loc) __attribute__((weak));

typedef struct tgt_offload_entry {
    void *addr;     /* kernel: host region id; global: host address */
    char *name;
    size_t size;    /* 0 for kernels */
    int32_t flags;
    int32_t data;
} tgt_offload_entry_t;

/* Entry flags (LLVM 19's OpenMPOffloadingDeclareTargetFlags and the
 * OMPIRBuilder's entry kinds).  0 is a kernel (size 0) or a `declare
 * target to/enter` variable (size > 0).  CTOR/DTOR kernels were dropped
 * before LLVM 19 (device constructors run from the image's init_array) and
 * INDIRECT_VTABLE came after it: neither is handled, both are refused. */
#define TGT_ENTRY_LINK 0x01            /* size 8: the variable's pointer */
#define TGT_ENTRY_CTOR 0x02
#define TGT_ENTRY_DTOR 0x04
#define TGT_ENTRY_INDIRECT                                                               \
    0x08        /* addr: host function; the device
                                          symbol holds the device function */
#define TGT_ENTRY_REGISTER_REQUIRES 0x10 /* data: the TU's requires flags */
#define TGT_ENTRY_INDIRECT_VTABLE 0x20

/* Requires flags (OpenMPOffloadingRequiresDirFlags), in a REGISTER_REQUIRES
 * entry's data and in __tgt_register_requires' argument. */
#define TGT_REQ_NONE 0x001
#define TGT_REQ_REVERSE_OFFLOAD 0x002
#define TGT_REQ_UNIFIED_ADDRESS 0x004
#define TGT_REQ_UNIFIED_SHARED_MEMORY 0x008
#define TGT_REQ_DYNAMIC_ALLOCATORS 0x010

typedef struct tgt_device_image {
    void *image_start;
    void *image_end;
    tgt_offload_entry_t *entries_begin;
    tgt_offload_entry_t *entries_end;
} tgt_device_image_t;

typedef struct tgt_bin_desc {
    int32_t num_images;
    tgt_device_image_t *images;
    tgt_offload_entry_t *host_entries_begin;
    tgt_offload_entry_t *host_entries_end;
} tgt_bin_desc_t;

typedef struct tgt_ident {
    int32_t reserved_1;
    int32_t flags;
    int32_t reserved_2;
    int32_t reserved_3;
    const char *psource; /* ";file;function;line;column;;" */
} tgt_ident_t;

typedef struct tgt_kernel_args {
    uint32_t version;
    uint32_t num_args;
    void **arg_base_ptrs;
    void **arg_ptrs;
    int64_t *arg_sizes;
    int64_t *arg_types;
    void **arg_names;
    void **arg_mappers;
    uint64_t tripcount;
    uint64_t flags;          /* bit 0: nowait */
    uint32_t num_teams[3];
    uint32_t thread_limit[3];
    uint32_t dyn_cgroup_mem;
} tgt_kernel_args_t;

#define TGT_KFLAG_NOWAIT 0x1u

/* Map-type bits (OpenMP ABI as clang-19 emits them). */
#define TGT_MAP_TO 0x1
#define TGT_MAP_FROM 0x2
#define TGT_MAP_ALWAYS 0x4
#define TGT_MAP_DELETE 0x8
#define TGT_MAP_PTR_AND_OBJ 0x10
#define TGT_MAP_TARGET_PARAM 0x20
#define TGT_MAP_RETURN_PARAM 0x40
#define TGT_MAP_PRIVATE 0x80
#define TGT_MAP_LITERAL 0x100
#define TGT_MAP_IMPLICIT 0x200
#define TGT_MAP_CLOSE 0x400
#define TGT_MAP_MAPPER 0x800
#define TGT_MAP_PRESENT 0x1000
#define TGT_MAP_OMPX_HOLD 0x2000
#define TGT_MAP_NON_CONTIG 0x100000000000ll
#define TGT_MAP_MEMBER_OF 0xffff000000000000ll

/* ------------------------------------------------------- runtime state */
typedef struct tgt_kernel {
    const void *host_id;
    const char *name;
    void *fn;                /* executors: the kernel in the device image */
} tgt_kernel_t;

typedef struct tgt_global {
    void *host_addr;
    const char *name;
    size_t size;
    void *dev_addr;          /* executors: the global in the device image */
    dm_buf_t *buf;           /* head */
} tgt_global_t;

/* A `declare target ... indirect` function.  Executors translate the
 * head's address of it to their own device function: in kernel arguments,
 * and (workers) through a jump placed at the head's address. */
typedef struct tgt_indirect {
    uint64_t head_addr;      /* rank 0's host address of the function */
    void *host_addr;         /* this process's host address */
    const char *name;        /* the entry's name (a device symbol) */
    void *dev_fn;            /* executors: the device function */
} tgt_indirect_t;

/* Saved host value of a pointer inside mapped data whose device copy was
 * attached to a device address: restored whenever the host copy is
 * refreshed from the device. */
typedef struct tgt_shadow {
    void **host_slot;
    void *host_value;
    uint64_t dev_value;
    uint64_t obj_dev;        /* device address of the mapped object itself */
    struct tgt_shadow *next;
} tgt_shadow_t;

/* One host range mapped to the device. */
typedef struct tgt_map {
    ompc_tmap_node_t node;   /* key: host begin */
    uintptr_t hst_end;
    dm_buf_t *buf;
    size_t buf_off;          /* offset of host begin inside buf */
    int64_t dyn_ref;
    int64_t hold_ref;
    bool infinite;           /* declare target / associated: never unmapped */
    bool owns_buf;
    tgt_shadow_t *shadows;
    struct tgt_map *sprev, *snext; /* list of entries that have shadows */
} tgt_map_t;

typedef enum {
    TGT_OFFLOAD_DEFAULT,
    TGT_OFFLOAD_MANDATORY,
    TGT_OFFLOAD_DISABLED
} tgt_offload_t;

/* Make room for one more element in a growing array of n elements (cap
 * doubles, from 16); out of memory is fatal, naming what. */
void *tgt_grow(void *arr, size_t *cap, size_t n, size_t elem, const char *what);

typedef struct tgt_rt {
    ev_ctx_t *ev;
    dm_ctx_t *dm;
    int rank, size;
    bool executor;           /* this rank runs kernels */
    tgt_offload_t offload;
    bool info;               /* OMPC_INFO */
    bool stats;              /* OMPC_STATS */
    tgt_kernel_t *kernels;   /* sorted by host_id */
    int nkernels;
    tgt_global_t *globals;
    int nglobals;
    tgt_indirect_t *indirect; /* executors: sorted by head_addr */
    int nindirect;
    void *image;             /* dlopen handle (executors) */
    ev_fn_id_t fn_kernel;
    ev_fn_id_t fn_split_run, fn_split_end, fn_split_drop, fn_split_apply,
        fn_split_reduce; /* tgt_split.c */
    ev_fn_id_t fn_ahead_launch, fn_ahead_watch, fn_ahead_arrive, fn_ahead_done,
        fn_ahead_prompt, fn_ahead_patch;
    int kernel_threads;      /* executors: threads for parallel regions in
                                kernels (0: leave libomp's default) */
    int kernel_slots;        /* executors: kernels that may run at once */
    int head_threads;        /* head: team size set (0: libomp's default) */
    pthread_mutex_t map_mtx; /* the mapping table */
    ompc_tmap_t maps;
    tgt_map_t *shadowed;     /* entries holding attached pointers */
    int *exec_cores;         /* head: cores of each executor */
    _Atomic uint64_t kernels_run;
    _Atomic uint64_t kernel_ns;  /* executors: run time of every kernel run
                                    here, summed (OMPC_STATS) */
    _Atomic uint64_t kernel_cpu_ns; /* executors: CPU time of the threads
                                       running them, during them, summed */
    _Atomic uint64_t kernels_here; /* executors: kernels run here */
    uint64_t t_start_ns;     /* head: registration began */
    uint64_t t_ready_ns;     /* head: start-up done */
    /* Read by every offloading call, written at shutdown: a line of their
     * own, away from the counters above that threads write per task. */
    _Alignas(64) _Atomic bool closing; /* __tgt_unregister_lib began (tgt_call_enter) */
    _Atomic(struct tgt_call_slot *) call_slots; /* tgt_rt.c: each thread's calls */
} tgt_rt_t;

extern tgt_rt_t *tgt_rt;

/* Collective, at start-up: every rank gives len bytes; returns every
 * rank's bytes, rank by rank (size * len), for the caller to free.  Out of
 * memory or a failed exchange stops the job, naming what was exchanged. */
void *tgt_rt_allgather(const void *mine, size_t len, const char *what);

/* tgt_rt.c: the state above and helpers every file uses. */
bool tgt_ready(void);

/* Any thread, around each offloading entry point that maps, records or
 * allocates: exit() on one thread runs __tgt_unregister_lib while others
 * may still be in target tasks.  tgt_call_enter counts the call in the
 * calling thread's slot and returns the slot, or, once the shutdown began
 * on another thread, parks this one until the process ends (it must not
 * touch the runtime being torn down); tgt_call_leave(slot), on the same
 * thread, ends a counted call.  tgt_calls_close (the shutting-down thread)
 * marks the shutdown and waits for the calls inside other threads to
 * leave. */
typedef struct tgt_call_slot tgt_call_slot_t;
tgt_call_slot_t *tgt_call_enter(void);
void tgt_call_leave(tgt_call_slot_t *slot);
void tgt_calls_close(void);
/* "file:line" (or "unknown location") of an ident, into buf. */
const char *tgt_loc(const void *ident, char *buf, size_t cap);

/* tgt_image.c: offload entries and the device image, at start-up (under
 * tgt_register.c's register_mtx). */
void tgt_image_read_entries(const tgt_bin_desc_t *desc);
/* Collective, after the ranks checked they run one build: a refusal of
 * the entries is reported by rank 0, the others wait for its abort. */
void tgt_image_report_refusal(void);
/* The first refusal noted (an entry or requirement this runtime does not
 * handle), or NULL. */
const char *tgt_image_refusal(void);
/* Notes requirement flags from `where`; refuses those not honoured. */
void tgt_image_requires_note(int64_t flags, const char *where);
int64_t tgt_image_requires(void); /* every flag noted so far */
void tgt_image_load(const tgt_bin_desc_t *desc); /* executors */
/* Collective: each declare target variable's address on each executor;
 * the head maps the variables for good. */
void tgt_image_share_globals(void);
const tgt_kernel_t *tgt_kernel_find(const void *host_id);

/* tgt_indirect.c.  Collective, at start-up: executors learn the head's
 * address of each indirect function, and workers place their jumps. */
void tgt_indirect_share(void);
/* Executors: the device function for the head's address of an indirect
 * function, or NULL when v is no such address. */
void *tgt_indirect_find(uint64_t v);

/* tgt_elf.c.  The source file that defined the local symbol at addr,
 * into buf; false when the object's symbol table does not say. */
bool tgt_elf_symbol_file(const void *addr, char *buf, size_t cap);
/* The main program imports this symbol from a shared library. */
bool tgt_exe_imports(const char *name);
/* The process resolves this symbol to this library's definition (ompcc's
 * link order is in effect). */
bool tgt_symbol_is_ours(const char *name);

/* tgt_mpi_apps.c: MPI programs that offload (docs/mpi.md).  Main thread,
 * in __tgt_register_lib.  _start starts MPI and, with
 * OMPC_WORKERS_PER_RANK set, splits the ranks into application ranks and
 * their workers; it returns the communicator of this rank's group (the
 * ranks of its ompc runtime; MPI_COMM_WORLD when not split).  _activate,
 * once the event system runs on that group, maps MPI_COMM_WORLD to the
 * application ranks in the program's MPI calls.  _finish, after
 * ev_ctx_destroy on every rank, waits for the whole job and ends MPI. */
MPI_Comm tgt_mpi_apps_start(void);
void tgt_mpi_apps_activate(void);
void tgt_mpi_apps_finish(void);
bool tgt_mpi_apps_on(void);
int tgt_mpi_apps_world_rank(void);
int tgt_mpi_apps_world_size(void);
/* The application rank and their count (0 and 1 when not split). */
int tgt_mpi_apps_rank(void);
int tgt_mpi_apps_size(void);
/* A file every head writes (OMPC_TRACE): application rank r > 0 writes
 * `name-r<r>.ext` (into buf) instead of `name.ext`, so that the heads do
 * not write over each other. */
const char *tgt_mpi_apps_path(const char *path, char *buf, size_t cap);
/* Rank 0 of each group at start-up: fatal when the ranks were split but the
 * program's MPI calls would not reach our definitions (linked without
 * ompcc's flags); a warning when the program calls MPI_Init and was not
 * split. */
void tgt_mpi_apps_check(void);

/* tgt_supervise.c.  The rank and world size a launcher (Hydra, srun, Open
 * MPI, PMIx) put in the environment, size -1 when it gave none; false
 * when no launcher started this process. */
bool tgt_launcher_rank(int64_t *rank_p, int64_t *size_p);
/* First thing in __tgt_register_lib, while the process has one thread and
 * no MPI state: when a launcher started the process (and OMPC_SUPERVISE=1)
 * it splits in two.  Returns in the child, which goes on as the rank, with
 * the supervisor's pid (0 when not supervised); never returns in the
 * supervisor, which waits for the rank, names it if a signal kills it, and
 * leaves with the rank's exit status.  OMPC_ERR_UNSUPPORTED: threads
 * exist already (the process goes on unsupervised). */
ompc_status_t tgt_supervise(int64_t *supervisor_pid_p);
/* What the rank's supervisor needs to name a kernel that ended the
 * process (exit, _exit, abort in a target region): kept in a page shared
 * with the supervisor (a plain static one when unsupervised).  Names are
 * the offload entries' own strings, in the program image, which the
 * supervisor (forked from the same image) has at the same address. */
typedef struct tgt_kernel_rec {
    _Atomic(const char *) running;   /* the last kernel started */
    atomic_int nrunning;             /* kernels running now */
    _Atomic(const char *) exited_in; /* exit() was called in this kernel */
    atomic_int exit_status;          /* and with this status */
    atomic_int exit_outside;         /* exit() was called outside kernels */
    atomic_int app_group;            /* split ranks (tgt_mpi_apps.c): 1 + the
                                      * application rank of this rank's group */
    atomic_int app_head;             /* ... and 1 when it is that rank */
} tgt_kernel_rec_t;
extern tgt_kernel_rec_t *tgt_kernel_rec;
/* " (function, line N)" from clang's name of a target region, or "". */
void tgt_kernel_where(const char *name, char *buf, size_t cap);
/* Set by tgt_kernel_run on its thread: device pages were fetched on demand
 * on this executor while the kernel ran. */
extern _Thread_local bool tgt_kernel_faulted;
/* ... and bytes it wrote through such pages went back to the head. */
extern _Thread_local bool tgt_kernel_fault_wrote;
/* Set by tgt_kernel_run on its thread: the CPU time the kernel took on it,
 * where OMPC_STATS measures it (else UINT64_MAX).  A thread's CPU clock is
 * a system call: a caller that needs the figure too reads this one. */
extern _Thread_local uint64_t tgt_kernel_cpu_ns;
/* Set around tgt_kernel_run by launch ahead: the task's seq (else 0), for
 * the head's check of writes through faults. */
extern _Thread_local uint64_t tgt_kernel_seq;
/* Around each kernel's call (tgt_kernel.c); the first start also installs
 * the exit() hook (see tgt_supervise.c). */
void tgt_kernel_rec_start(const char *name);
void tgt_kernel_rec_end(void);
/* Removes the file libomp registers for process PID (it is left behind by
 * any exit that skips libomp's exit handler: a worker's _exit, a signal).
 * Async-signal-safe. */
void tgt_kmp_forget(pid_t pid);

/* tgt_map.c: the mapping table.  One batch of map arguments, as clang
 * passes them. */
typedef struct tgt_args {
    int32_t n;
    void **base;
    void **begin;
    int64_t *sizes;
    int64_t *types;
    void **mappers;
    const void *loc;
} tgt_args_t;

/* Per-argument results of mapping, for the kernel launch. */
#define TGT_DEVVALS 16
typedef struct tgt_mapped {
    dm_buf_t **bufs;         /* buffers the region touches */
    size_t nbufs, capbufs;
    dm_buf_t **temps;        /* firstprivate copies, freed after the region */
    size_t ntemps, captemps;
    uint64_t *kargs;         /* kernel arguments, TARGET_PARAM order */
    size_t nkargs, capkargs;
    /* Values passed by value that may be device addresses, looked up
     * together (one lock of the data manager per batch, not per value). */
    uint64_t devvals[TGT_DEVVALS];
    size_t ndevvals;
} tgt_mapped_t;

/* The data operations one construct's mapping asks for, in order: the
 * task graph records them into the construct's node (tgt_rec_construct),
 * which does them when it runs. */
typedef enum {
    TGT_PLAN_WRITE,          /* the program's bytes src into buf at off */
    TGT_PLAN_WRITE_VALUE,    /* value's 8 bytes into buf at off (an attached
                              * pointer's device value) */
    TGT_PLAN_READ,           /* buf at off back into host memory */
    TGT_PLAN_HOST_STORE,     /* a pointer value restored in host memory */
    TGT_PLAN_FREE,           /* buf's last reference went away */
} tgt_plan_kind_t;
typedef struct tgt_plan_op {
    tgt_plan_kind_t kind;
    dm_buf_t *buf;
    size_t off, len;
    const void *src;         /* WRITE: taken when the plan is recorded */
    void *host;              /* READ: destination; HOST_STORE: the slot */
    uint64_t value;          /* WRITE_VALUE; HOST_STORE: the pointer */
} tgt_plan_op_t;
typedef struct tgt_plan {
    tgt_plan_op_t *ops;      /* ops[0, npre) before the kernel, the rest after */
    size_t nops, cap, npre;
    bool post;
    uint64_t ticket;         /* the construct's place in mapping order (1, 2, ...) */
    struct tgt_spare *spare; /* its thread's spare arrays (tgt_map.c) */
} tgt_plan_t;
/* An empty plan with the next ticket; takes the planning lock (see the
 * lock order), which tgt_plan_mapped releases once the construct's
 * mapping-table changes are made.  The plan's node enters the graph in
 * ticket order (tgt_rec_construct), then tgt_plan_end drops the plan. */
void tgt_plan_begin(tgt_plan_t *p);
/* Ops planned from now on come after the kernel. */
void tgt_plan_post(tgt_plan_t *p);
void tgt_plan_mapped(tgt_plan_t *p);
void tgt_plan_end(tgt_plan_t *p);

/* Map, unmap or update the arguments a (expanding user-defined mappers):
 * the mapping table changes now, the data ops are appended to p.  out
 * (may be NULL: target data / enter data launch nothing) collects the
 * buffers and arguments of a kernel. */
ompc_status_t tgt_data_begin(const tgt_args_t *a, tgt_mapped_t *out, tgt_plan_t *p);
ompc_status_t tgt_data_end(const tgt_args_t *a, tgt_plan_t *p);
ompc_status_t tgt_data_update(const tgt_args_t *a, tgt_plan_t *p);
/* Device address for a host address inside a mapping (0 if absent). */
uint64_t tgt_map_dev_addr(const void *host, size_t size, dm_buf_t **buf_p);
void tgt_mapped_add(tgt_mapped_t *m, dm_buf_t *b);
/* An empty m whose arrays are the spares of p's thread (p: the
 * construct's plan, begun on this thread); tgt_mapped_release frees the
 * firstprivate copies still in m and gives the arrays back once their
 * contents were taken. */
void tgt_mapped_begin(tgt_mapped_t *m, const tgt_plan_t *p);
void tgt_mapped_release(tgt_mapped_t *m, const tgt_plan_t *p);
void tgt_map_add_global(tgt_global_t *g);
/* omp_target_associate_ptr: host [host, +size) is backed by b at off until
 * disassociated; OMPC_ERR_INVALID if it overlaps another mapping. */
ompc_status_t tgt_map_associate(const void *host, size_t size, dm_buf_t *b, size_t off);
/* omp_target_disassociate_ptr: OMPC_ERR_INVALID unless host begins an
 * association. */
ompc_status_t tgt_map_disassociate(const void *host);
void tgt_map_dump(void); /* ompx_dump_mapping_tables, on stdout */

/* tgt_kernel.c */
ompc_status_t tgt_kernel_fn_register(void);
/* Called by tgt_kernel_run on its thread once the launch's own copies are
 * in place, just before the kernel (set at start-up, before any launch;
 * tgt_split.c's share twins its buffers there). */
extern void (*tgt_kernel_before)(void);
/* Run a kernel launch message (tgt_wire.h) on this thread; *ns_p: its run
 * time.  *v_p: the message decoded, whose read-backs (v_p->nbacks; none
 * without a block) its reply must bring back; a caller that passes NULL
 * refuses a message that asks for any. */
ompc_status_t tgt_kernel_run(const void *args, size_t args_size, uint64_t *ns_p,
                             tgt_wire_kernel_view_t *v_p);
/* The kernel a launch message (tgt_kernel_run's args) names, or -1 if it
 * names none. */
int tgt_kernel_msg_index(const void *args, size_t args_size);

/* tgt_ompt_task.c: the depend list of the target task running on this
 * thread, as the OMPT tool (tgt_ompt.c) saw it. */
typedef enum {
    TGT_DEP_IN,              /* in */
    TGT_DEP_OUT,             /* out, inout, mutexinoutset */
    TGT_DEP_INOUTSET,
    TGT_DEP_ALL,             /* omp_all_memory */
} tgt_dep_type_t;
typedef struct tgt_dep {
    uintptr_t addr;
    bool in_only;            /* depend(in:); anything else may write */
    uint8_t type;            /* tgt_dep_type_t */
} tgt_dep_t;
/* The buffers of the mappings holding each dependence address (NULL: none,
 * or an all-dependence), under one lock of the mapping table. */
void tgt_map_dep_bufs(const tgt_dep_t *deps, int ndeps, dm_buf_t **bufs_p);
typedef struct tgt_task_deps tgt_task_deps_t;
const tgt_task_deps_t *tgt_ompt_current_deps(int *n_p, const tgt_dep_t **deps_p);
/* This thread runs a kernel (or a parallel region inside one): barriers
 * and tasks here are the kernel's own, not flush points. */
extern _Thread_local bool tgt_in_kernel;
bool tgt_ompt_in_kernel(void); /* tgt_in_kernel, or a parallel region in one */
/* The current task is a deferred (nowait) target task: libomp does not
 * wait for it, so neither does the construct it runs. */
bool tgt_ompt_in_deferred_target_task(void);
/* Copies inside a launch message and its reply are padded to 8 bytes. */
static inline uint64_t tgt_pad8(uint64_t len) { return (len + 7) / 8 * 8; }

/* The current task if it is a target task (deferred or not), else NULL. */
void *tgt_ompt_current_target_task(void);

/* libomp's own definition of an entry point this library stands in for
 * (tgt_taskred.c, tgt_split.c); ends the job if there is none. */
void *tgt_libomp_next(const char *name);

#define TGT_USER_ERROR(loc, ...)                                                         \
    do {                                                                                 \
        char tgt_lb_[256];                                                               \
        ompc_fatal_user("%s: %s", tgt_loc(loc, tgt_lb_, sizeof(tgt_lb_)),                \
                        tgt_fmt_(__VA_ARGS__));                                          \
    } while (0)
const char *tgt_fmt_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
