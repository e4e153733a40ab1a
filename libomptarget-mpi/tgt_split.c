/* Loops split across workers, the executors' half (tgt_split.h; the
 * mechanism and why it is sound: docs/architecture.md, "Loops split across
 * workers").
 *
 * A share of a `teams` kernel runs on the handler thread that receives it.
 * This library stands in for libomp's teams and worksharing entry points
 * (ompcc links it ahead of libomp, so the device image's calls bind here):
 * outside a share every stand-in forwards to libomp unchanged.  Inside a
 * share, __kmpc_fork_teams does not start a league: it runs the teams
 * microtask once per team of the share, one team after the other on this
 * thread, each time as team v of T.  The team's distribute loop
 * (__kmpc_for_static_init_* with a distribute schedule) gets team v's
 * iterations of T, omp_get_team_num/omp_get_num_teams answer v and T on
 * every thread of the team (parallel regions inside carry them to their
 * threads), and each team's `parallel for` gets all of this executor's
 * cores, as an unsplit kernel's one team does. */
#define _GNU_SOURCE
#include "tgt_split.h"
#include "ompc_trace.h"

#include <dlfcn.h>
#include <ffi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------- libomp */
typedef void (*micro_t)(int32_t *gtid, int32_t *btid, ...);

#define REAL(type, name)                                                                 \
    typedef __typeof__(type) real_t_;                                                    \
    static _Atomic(real_t_) real_;                                                       \
    real_t_ f_ = real_;                                                                  \
    if (!f_) {                                                                           \
        f_ = (real_t_)tgt_libomp_next(name);                                             \
        real_ = f_;                                                                      \
    }

/* Calls fn(fixed..., var...) where every argument is pointer-sized (clang
 * passes a microtask's shared variables as pointers or as values cast to
 * 64 bits).  variadic: fn takes var as its `...`. */
static void call_ptrs(void *fn, bool variadic, int nfixed, void **fixed, int nvar,
                      void **var)
{
    int n = nfixed + nvar;
    ffi_type *types_st[16];
    void *vals_st[16];
    void **slots_st[16];
    ffi_type **types = n <= 16 ? types_st : malloc((size_t)n * sizeof(*types));
    void **vals = n <= 16 ? vals_st : malloc((size_t)n * sizeof(*vals));
    void ***slots = n <= 16 ? slots_st : malloc((size_t)n * sizeof(*slots));
    if (!types || !vals || !slots)
        ompc_fatal("out of memory calling a microtask");
    for (int i = 0; i < n; i++) {
        types[i] = &ffi_type_pointer;
        vals[i] = i < nfixed ? fixed[i] : var[i - nfixed];
        slots[i] = &vals[i];
    }
    ffi_cif cif;
    ffi_status st = variadic ? ffi_prep_cif_var(&cif, FFI_DEFAULT_ABI, (unsigned)nfixed,
                                                (unsigned)n, &ffi_type_void, types)
                             : ffi_prep_cif(&cif, FFI_DEFAULT_ABI, (unsigned)n,
                                            &ffi_type_void, types);
    if (st != FFI_OK)
        ompc_fatal("cannot call a microtask with %d arguments", n);
    ffi_call(&cif, FFI_FN(fn), NULL, (void **)slots);
    if (n > 16) {
        free(types);
        free(vals);
        free(slots);
    }
}

/* ------------------------------------------------------- share state */
typedef struct share share_t;

/* What a thread knows of the split share it works for.  The handler
 * thread running a share has share set and team -1 until the teams
 * region; the threads of a team (this thread while it runs the team, and
 * the threads of parallel regions inside) have team and nteams. */
typedef struct split_tls {
    share_t *share;
    int32_t team, nteams;
    int depth;               /* 0: the team's initial thread, at team level */
} split_tls_t;
static _Thread_local split_tls_t cur;

struct share {
    uint64_t key;
    int kidx;                /* the kernel's index (hints) */
    uint32_t idx, nshares;
    int home_rank;
    bool home;
    uint32_t nbufs;
    tgt_split_buf_t *bufs;
    uint32_t nguard;
    tgt_split_guard_t *guards;
    bool guarded;            /* dm_guard_begin ran */
    bool keep_twins;         /* helper: until the head ends the share */
    unsigned char **twins;
    /* Guarded pages the kernel never touched (they stayed protected: not
     * read, not written), sorted by buffer and offset: their twin bytes were
     * never copied, and they are neither compared nor put back.  Until the
     * kernel ends: every guarded page (holes in the twins). */
    tgt_split_range_t *skip;
    size_t nskip, skip_cap;
    _Atomic uint32_t flags;
    int32_t pushed_teams;    /* num_teams the kernel asked for (0: none) */
    uint32_t teams, my_teams;
    bool in_teams;
    /* Its part of the work (tgt_split_hdr_t): teams [w_lo*T, w_hi*T) of
     * TGT_SPLIT_WSCALE*T, or with one team per share (the kernel asked for
     * no number), that team's static distribute iterations in that
     * proportion (iter_sized).  part: what it ran, for the reply. */
    uint32_t w_lo, w_hi;
    bool iter_sized;
    uint64_t part, teams_ns;
    /* Reductions across teams: the combiner the teams used (team level),
     * and the pointer arguments of the teams region into buffers. */
    void (*red_fn)(void *, void *);
    uint32_t ncands;
    bool cands_over;
    tgt_split_cand_t cands[TGT_SPLIT_NCANDS];
    bool in_window;          /* a team is combining its reduction */
    unsigned char window[TGT_SPLIT_NCANDS][TGT_SPLIT_CAND_MAX];
    /* Home: the reduction variable's region (its address and length), which
     * helpers' pushed bytes must not overwrite (shares_mtx). */
    uint64_t red_addr, red_len;
    char **packs;            /* helper: tgt.split.apply messages */
    size_t *pack_len, npacks;
    struct share *next;
};

static pthread_mutex_t shares_mtx = PTHREAD_MUTEX_INITIALIZER;
static share_t *shares;

static void share_flag(share_t *s, uint32_t f)
{
    atomic_fetch_or_explicit(&s->flags, f, memory_order_relaxed);
}

/* Twins freed by earlier splits, kept for the next one of the same size:
 * a fresh block of that size costs a page fault per page, which took
 * longer than the copy itself for a stream of split kernels.  At most
 * TWIN_KEEP blocks and TWIN_KEEP_BYTES in all. */
#define TWIN_KEEP 8
#define TWIN_KEEP_BYTES ((size_t)1 << 30)
static pthread_mutex_t twin_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *p;
    size_t n;
} twin_kept[TWIN_KEEP];
static size_t twin_kept_bytes;

static void *twin_get(size_t n)
{
    pthread_mutex_lock(&twin_mtx);
    for (int i = 0; i < TWIN_KEEP; i++)
        if (twin_kept[i].p && twin_kept[i].n == n) {
            void *p = twin_kept[i].p;
            twin_kept[i].p = NULL;
            twin_kept_bytes -= n;
            pthread_mutex_unlock(&twin_mtx);
            return p;
        }
    pthread_mutex_unlock(&twin_mtx);
    return malloc(n ? n : 1);
}

static void twin_put(void *p, size_t n)
{
    if (!p)
        return;
    pthread_mutex_lock(&twin_mtx);
    for (int i = 0; i < TWIN_KEEP && twin_kept_bytes + n <= TWIN_KEEP_BYTES; i++)
        if (!twin_kept[i].p) {
            twin_kept[i].p = p;
            twin_kept[i].n = n;
            twin_kept_bytes += n;
            pthread_mutex_unlock(&twin_mtx);
            return;
        }
    pthread_mutex_unlock(&twin_mtx);
    free(p);
}

static void share_free(share_t *s)
{
    for (uint32_t i = 0; s->twins && i < s->nbufs; i++)
        twin_put(s->twins[i], (size_t)s->bufs[i].size);
    free(s->twins);
    for (size_t i = 0; i < s->npacks; i++)
        free(s->packs[i]);
    free(s->packs);
    free(s->pack_len);
    free(s->guards);
    free(s->skip);
    free(s->bufs);
    free(s);
}

static void skip_add(share_t *s, uint32_t buf, uint64_t off, uint64_t len)
{
    if (s->nskip == s->skip_cap) {
        size_t cap = s->skip_cap ? 2 * s->skip_cap : 16;
        tgt_split_range_t *n = realloc(s->skip, cap * sizeof(*n));
        if (!n)
            ompc_fatal("rank %d: out of memory guarding a split kernel's buffers",
                       tgt_rt->rank);
        s->skip = n;
        s->skip_cap = cap;
    }
    s->skip[s->nskip++] = (tgt_split_range_t){.buf = buf, .off = off, .len = len};
}

static int skip_cmp(const void *a, const void *b)
{
    const tgt_split_range_t *x = a, *y = b;
    if (x->buf != y->buf)
        return x->buf < y->buf ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Calls fn on each stretch of buffer buf outside the skipped pages. */
typedef void (*span_fn_t)(void *arg, uint32_t buf, uint64_t from, uint64_t to);
static void each_span(const share_t *s, uint32_t buf, span_fn_t fn, void *arg)
{
    uint64_t at = 0, size = s->bufs[buf].size;
    for (size_t k = 0; k < s->nskip; k++) {
        const tgt_split_range_t *q = &s->skip[k];
        if (q->buf != buf)
            continue;
        if (q->off > at)
            fn(arg, buf, at, q->off);
        at = q->off + q->len;
    }
    if (at < size)
        fn(arg, buf, at, size);
}

static void span_twin(void *arg, uint32_t buf, uint64_t from, uint64_t to)
{
    share_t *s = arg;
    memcpy(s->twins[buf] + from, (const char *)(uintptr_t)s->bufs[buf].addr + from,
           (size_t)(to - from));
}

static void span_restore(void *arg, uint32_t buf, uint64_t from, uint64_t to)
{
    share_t *s = arg;
    /* The copy may be read-only here (served to a peer meanwhile). */
    dm_exec_store((char *)(uintptr_t)s->bufs[buf].addr + from, s->twins[buf] + from,
                  (size_t)(to - from));
}

/* What a share's kernel touched of other shares' pieces (pages fetched on
 * a fault, or before it ran on this table's word), per kernel and share:
 * the next share of the same kernel gets those pages with the rest of
 * dm_guard_begin's fetches, before its kernel runs, instead of a fault
 * each while every thread of the kernel waits (a stencil's halo rows).
 * Every HINT_RELEARN-th share of a kernel goes without, so that pages no
 * longer touched drop out.  Addresses are this executor's (a buffer
 * mapped elsewhere simply matches no guard).  hint_mtx. */
#define HINTS 64
#define HINT_RELEARN 16
typedef struct hint {
    int kidx;                /* -1: free */
    uint32_t idx, nshares;
    uint64_t uses;
    dm_guard_pre_t *v;
    size_t n;
} hint_t;
static pthread_mutex_t hint_mtx = PTHREAD_MUTEX_INITIALIZER;
static hint_t hints[HINTS];
static size_t hint_next; /* the entry to reuse when none is free */

static hint_t *hint_find(const share_t *s, bool add)
{
    hint_t *free_e = NULL;
    for (size_t i = 0; i < HINTS; i++) {
        hint_t *h = &hints[i];
        if (h->v == NULL && h->uses == 0) {
            free_e = free_e ? free_e : h;
            continue;
        }
        if (h->kidx == s->kidx && h->idx == s->idx && h->nshares == s->nshares)
            return h;
    }
    if (!add)
        return NULL;
    hint_t *h = free_e ? free_e : &hints[hint_next++ % HINTS];
    free(h->v);
    *h = (hint_t){s->kidx, s->idx, s->nshares, 0, NULL, 0};
    return h;
}

/* The pages to fetch before share s's kernel runs (*n_p of them; NULL:
 * none).  The caller frees them. */
static dm_guard_pre_t *hint_get(const share_t *s, size_t *n_p)
{
    *n_p = 0;
    if (s->kidx < 0)
        return NULL;
    dm_guard_pre_t *v = NULL;
    pthread_mutex_lock(&hint_mtx);
    hint_t *h = hint_find(s, false);
    if (h && h->n && ++h->uses % HINT_RELEARN != 0 && (v = malloc(h->n * sizeof(*v)))) {
        memcpy(v, h->v, h->n * sizeof(*v));
        *n_p = h->n;
    }
    pthread_mutex_unlock(&hint_mtx);
    return v;
}

/* After dm_guard_end: the whole pages inside s's guards that were fetched
 * (not in s->skip, sorted) become the kernel's hint. */
static void hint_learn(const share_t *s)
{
    if (s->kidx < 0)
        return;
    dm_guard_pre_t *v = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t i = 0; i < s->nguard; i++) {
        const tgt_split_guard_t *q = &s->guards[i];
        uint64_t a = s->bufs[q->buf].addr + q->off, e = a + q->len;
        uint64_t pa = (a + DM_GUARD_PAGE - 1) & ~(uint64_t)(DM_GUARD_PAGE - 1);
        uint64_t pe = e & ~(uint64_t)(DM_GUARD_PAGE - 1);
        /* [pa, pe) minus the untouched stretches of the same buffer. */
        uint64_t at = pa;
        for (size_t k = 0; at < pe && k <= s->nskip; k++) {
            uint64_t ss = pe, se = pe;
            if (k < s->nskip) {
                const tgt_split_range_t *r = &s->skip[k];
                if (r->buf != q->buf)
                    continue;
                ss = s->bufs[r->buf].addr + r->off;
                se = ss + r->len;
                if (se <= at || ss >= pe)
                    continue;
            }
            if (ss > at) {
                if (n > 0 && v[n - 1].addr + v[n - 1].len == at) {
                    v[n - 1].len += ss - at;
                } else {
                    if (n == cap) {
                        cap = cap ? 2 * cap : 8;
                        dm_guard_pre_t *nv = realloc(v, cap * sizeof(*nv));
                        if (!nv) {
                            free(v);
                            return; /* no hint: faults as before */
                        }
                        v = nv;
                    }
                    v[n++] = (dm_guard_pre_t){at, ss - at};
                }
            }
            at = se > at ? se : at;
        }
    }
    pthread_mutex_lock(&hint_mtx);
    hint_t *h = n ? hint_find(s, true) : hint_find(s, false);
    if (h) {
        free(h->v);
        h->v = v;
        h->n = n;
        v = NULL;
    }
    pthread_mutex_unlock(&hint_mtx);
    free(v);
}

/* dm_guard_end: a run's pages that stayed protected. */
static void guard_untouched(void *arg, size_t run, uint64_t addr, uint64_t len)
{
    share_t *s = arg;
    uint32_t b = s->guards[run].buf;
    skip_add(s, b, addr - s->bufs[b].addr, len);
}

/* ------------------------------------------------- libomp stand-ins */
void __kmpc_push_num_teams(void *loc, int32_t gtid, int32_t nteams, int32_t nth)
{
    if (cur.share && cur.team < 0) {
        cur.share->pushed_teams = nteams;
        return;
    }
    REAL(void (*)(void *, int32_t, int32_t, int32_t), "__kmpc_push_num_teams");
    f_(loc, gtid, nteams, nth);
}

void __kmpc_push_num_teams_51(void *loc, int32_t gtid, int32_t lb, int32_t ub,
                              int32_t nth)
{
    if (cur.share && cur.team < 0) {
        cur.share->pushed_teams = ub > 0 ? ub : lb;
        return;
    }
    REAL(void (*)(void *, int32_t, int32_t, int32_t, int32_t),
         "__kmpc_push_num_teams_51");
    f_(loc, gtid, lb, ub, nth);
}

/* libomp's __kmpc_fork_call with argc pointer-sized arguments: the common
 * counts without libffi (every parallel region of the program comes
 * through here). */
typedef void (*fork_t)(void *, int32_t, micro_t, ...);
static void fork_fwd(fork_t f, void *loc, int32_t argc, micro_t m, void **a)
{
    switch (argc) {
    case 0: f(loc, argc, m); return;
    case 1: f(loc, argc, m, a[0]); return;
    case 2: f(loc, argc, m, a[0], a[1]); return;
    case 3: f(loc, argc, m, a[0], a[1], a[2]); return;
    case 4: f(loc, argc, m, a[0], a[1], a[2], a[3]); return;
    case 5: f(loc, argc, m, a[0], a[1], a[2], a[3], a[4]); return;
    case 6: f(loc, argc, m, a[0], a[1], a[2], a[3], a[4], a[5]); return;
    case 7: f(loc, argc, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6]); return;
    case 8: f(loc, argc, m, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); return;
    default: {
        void *fixed[3] = {loc, (void *)(intptr_t)argc, (void *)m};
        call_ptrs((void *)f, true, 3, fixed, argc, a);
    }
    }
}

/* Share i's first team of T for the cumulative part c (TGT_SPLIT_WSCALE
 * units): T*c rounded, but at least one team for each share before and
 * after it when there are enough.  Every share computes every boundary
 * alike, so the shares' teams are contiguous, disjoint and cover T. */
static uint64_t team_bound(uint64_t t, uint32_t i, uint32_t n, uint32_t c)
{
    if (t < n)
        return t * i / n;
    uint64_t b = (t * c + TGT_SPLIT_WSCALE / 2) / TGT_SPLIT_WSCALE;
    if (b < i)
        b = i;
    if (b > t - (n - i))
        b = t - (n - i);
    return b;
}

/* Test hook OMPC_TEST_SPLIT_SLOW=R:F (not a setting): rank R runs the
 * teams of its shares F times as long (it waits F-1 times their time
 * after them), as a busier worker would; tests of share sizing need
 * executors of unequal speed on one machine. */
static pthread_once_t slow_once = PTHREAD_ONCE_INIT;
static double slow_factor = 1;
static void slow_read(void)
{
    const char *v = getenv("OMPC_TEST_SPLIT_SLOW");
    char *end = NULL;
    long r = v ? strtol(v, &end, 10) : -1;
    if (v && end && *end == ':' && r == tgt_rt->rank) {
        double x = strtod(end + 1, NULL);
        if (x > 1 && x <= 100)
            slow_factor = x;
    }
}

/* The teams of a share: T teams in all (the kernel's num_teams, else the
 * nteams-var ICV, else one per share), share i of n running the teams
 * from team_bound(i) to team_bound(i+1): its part of the league. */
static void run_teams(share_t *s, void *loc, micro_t micro, int argc, void **args)
{
    if (s->in_teams) {
        share_flag(s, TGT_SPLIT_NESTED_TEAMS);
        return;
    }
    s->in_teams = true;
    int icv; /* OMP_NUM_TEAMS, omp_set_num_teams */
    {
        REAL(int (*)(void), "omp_get_max_teams");
        icv = f_();
    }
    uint64_t t = s->pushed_teams > 0 ? (uint64_t)s->pushed_teams
                 : icv > 0           ? (uint64_t)icv
                                     : s->nshares;
    uint64_t t0 = team_bound(t, s->idx, s->nshares, s->w_lo);
    uint64_t t1 = team_bound(t, s->idx + 1, s->nshares, s->w_hi);
    s->teams = (uint32_t)t;
    s->my_teams = (uint32_t)(t1 - t0);
    /* One team per share by our choice (the kernel named no number): its
     * iterations, not the teams, carry the share's part. */
    s->iter_sized = s->pushed_teams <= 0 && icv <= 0;
    s->part = t ? (t1 - t0) * TGT_SPLIT_WSCALE / t : 0;
    for (int a = 0; a < argc; a++) {
        uintptr_t p = (uintptr_t)args[a];
        for (uint32_t b = 0; b < s->nbufs; b++) {
            if (p < s->bufs[b].addr || p - s->bufs[b].addr >= s->bufs[b].size)
                continue;
            uint64_t off = p - s->bufs[b].addr;
            bool dup = false;
            for (uint32_t c = 0; c < s->ncands && !dup; c++)
                dup = s->cands[c].buf == b && s->cands[c].off == off;
            if (dup)
                break;
            if (s->ncands == TGT_SPLIT_NCANDS) {
                s->cands_over = true;
                break;
            }
            s->cands[s->ncands].buf = b;
            s->cands[s->ncands++].off = off;
            break;
        }
    }
    REAL(int32_t (*)(void *), "__kmpc_global_thread_num");
    int32_t gtid = f_(loc), btid = 0;
    void *fixed[2] = {&gtid, &btid};
    split_tls_t saved = cur;
    uint64_t ts = ompc_now_ns();
    for (uint64_t v = t0; v < t1; v++) {
        cur.team = (int32_t)v;
        cur.nteams = (int32_t)t;
        cur.depth = 0;
        call_ptrs((void *)micro, false, 2, fixed, argc, args);
    }
    cur = saved;
    uint64_t took = ompc_now_ns() - ts;
    if (ompc_trace_on()) {
        const ompc_trace_arg_t a[] = {OMPC_TRACE_U64("first", t0),
                                      OMPC_TRACE_U64("teams", t1 - t0)};
        ompc_trace_span("split", "teams", ts, ts + took, a, OMPC_TRACE_NARGS(a));
    }
    pthread_once(&slow_once, slow_read);
    if (slow_factor > 1) {
        uint64_t ns = (uint64_t)((slow_factor - 1) * (double)took);
        struct timespec d = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
        while (nanosleep(&d, &d) != 0)
            ;
        took = ompc_now_ns() - ts;
    }
    s->teams_ns = took;
}

/* A fork call's shared-variable pointers, read from its va_list into st
 * (FORK_ARGS_STACK of them) or, for more, into a heap array the caller
 * frees when it is not st. */
#define FORK_ARGS_STACK 16
static void **fork_args(void **st, int32_t argc, va_list ap, const char *what)
{
    void **args = argc <= FORK_ARGS_STACK ? st : malloc((size_t)argc * sizeof(void *));
    if (!args)
        ompc_fatal("out of memory starting a %s region", what);
    for (int32_t i = 0; i < argc; i++)
        args[i] = va_arg(ap, void *);
    return args;
}

void __kmpc_fork_teams(void *loc, int32_t argc, micro_t micro, ...)
{
    void *st[FORK_ARGS_STACK];
    va_list ap;
    va_start(ap, micro);
    void **args = fork_args(st, argc, ap, "teams");
    va_end(ap);
    if (cur.share && cur.team < 0) {
        run_teams(cur.share, loc, micro, argc, args);
    } else {
        if (cur.share)
            share_flag(cur.share, TGT_SPLIT_NESTED_TEAMS);
        REAL(fork_t, "__kmpc_fork_teams");
        fork_fwd(f_, loc, argc, micro, args);
    }
    if (args != st)
        free(args);
}

/* A parallel region inside a split team: its threads learn the team. */
typedef struct wrap {
    split_tls_t tls;
    micro_t micro;
    int argc;
    void **args;
} wrap_t;

static void wrap_micro(int32_t *gtid, int32_t *btid, wrap_t *w)
{
    split_tls_t saved = cur;
    cur = w->tls;
    void *fixed[2] = {gtid, btid};
    call_ptrs((void *)w->micro, false, 2, fixed, w->argc, w->args);
    cur = saved;
}

void __kmpc_fork_call(void *loc, int32_t argc, micro_t micro, ...)
{
    void *st[FORK_ARGS_STACK];
    va_list ap;
    va_start(ap, micro);
    void **args = fork_args(st, argc, ap, "parallel");
    va_end(ap);
    REAL(fork_t, "__kmpc_fork_call");
    if (cur.share && cur.team >= 0) {
        wrap_t w = {cur, micro, argc, args};
        w.tls.depth++;
        f_(loc, 1, (micro_t)wrap_micro, &w);
    } else {
        fork_fwd(f_, loc, argc, micro, args);
    }
    if (args != st)
        free(args);
}

int omp_get_team_num(void)
{
    if (cur.share && cur.team >= 0)
        return cur.team;
    REAL(int (*)(void), "omp_get_team_num");
    return f_();
}

int omp_get_num_teams(void)
{
    if (cur.share && cur.team >= 0)
        return cur.nteams;
    REAL(int (*)(void), "omp_get_num_teams");
    return f_();
}

/* Set by a team's distribute loop (the team's own thread). */
static _Thread_local bool dist_seen;

/* libomp's schedule numbers for distribute loops. */
#define SCH_DIST_CHUNKED 91
#define SCH_DIST_STATIC 92

/* Team v of nt's iterations of a distribute loop over [*lo, *up] by incr:
 * the static schedule libomp uses for teams (balanced chunks, or chunks of
 * `chunk` dealt round-robin).  UT is the unsigned type of the loop. */
#define DIST_BOUNDS(T, UT, ST)                                                           \
    do {                                                                                 \
        UT trip;                                                                         \
        if (incr > 0)                                                                    \
            trip = *pupper < *plower ? 0 : (UT)((UT)(*pupper - *plower) / (UT)incr) + 1; \
        else                                                                             \
            trip = *plower < *pupper ? 0                                                 \
                                     : (UT)((UT)(*plower - *pupper) / (UT)(-incr)) + 1;  \
        UT v = (UT)cur.team, nt = (UT)cur.nteams;                                        \
        if (sched == SCH_DIST_CHUNKED) {                                                 \
            if (chunk < 1)                                                               \
                chunk = 1;                                                               \
            ST span = (ST)(chunk * incr);                                                \
            if (plast)                                                                   \
                *plast = trip > 0 && (v == ((trip - 1) / (UT)chunk) % nt);               \
            *plower = (T)(*plower + (T)(span * (ST)v));                                  \
            *pupper = (T)(*plower + (T)span - (T)incr);                                  \
            *pstride = (ST)(span * (ST)nt);                                              \
        } else {                                                                         \
            UT small = trip / nt, extra = trip % nt;                                     \
            UT first = v * small + (v < extra ? v : extra);                              \
            UT count = small + (v < extra ? 1 : 0);                                      \
            if (cur.share->iter_sized) {                                                 \
                first = (UT)((unsigned __int128)trip * cur.share->w_lo /                 \
                             TGT_SPLIT_WSCALE);                                          \
                count = (UT)((unsigned __int128)trip * cur.share->w_hi /                 \
                             TGT_SPLIT_WSCALE) -                                         \
                        first;                                                           \
                cur.share->part = cur.share->w_hi - cur.share->w_lo;                     \
            }                                                                            \
            if (plast)                                                                   \
                *plast = count > 0 && first + count == trip;                             \
            if (count == 0) {                                                            \
                *plower = (T)(*pupper + (T)incr);                                        \
            } else {                                                                     \
                *plower = (T)(*plower + (T)((ST)first * incr));                          \
                *pupper = (T)(*plower + (T)((ST)(count - 1) * incr));                    \
            }                                                                            \
            *pstride = (ST)trip;                                                         \
        }                                                                                \
    } while (0)

#define STATIC_INIT(NAME, T, UT, ST)                                                     \
    void NAME(void *loc, int32_t gtid, int32_t sched, int32_t *plast, T *plower,         \
              T *pupper, ST *pstride, ST incr, ST chunk)                                 \
    {                                                                                    \
        if (cur.share && cur.team >= 0 && cur.depth == 0 &&                              \
            (sched == SCH_DIST_STATIC || sched == SCH_DIST_CHUNKED) && incr != 0) {      \
            dist_seen = true;                                                            \
            DIST_BOUNDS(T, UT, ST);                                                      \
            return;                                                                      \
        }                                                                                \
        REAL(void (*)(void *, int32_t, int32_t, int32_t *, T *, T *, ST *, ST, ST),      \
             #NAME);                                                                     \
        f_(loc, gtid, sched, plast, plower, pupper, pstride, incr, chunk);               \
    }

STATIC_INIT(__kmpc_for_static_init_4, int32_t, uint32_t, int32_t)
STATIC_INIT(__kmpc_for_static_init_4u, uint32_t, uint32_t, int32_t)
STATIC_INIT(__kmpc_for_static_init_8, int64_t, uint64_t, int64_t)
STATIC_INIT(__kmpc_for_static_init_8u, uint64_t, uint64_t, int64_t)

/* A reduction at team level combines this share's teams into the
 * executor's copy of the variable; the head combines the shares' copies
 * with the same combiner (fn_split_reduce), which takes a list of one
 * pointer per variable: one variable of fixed size only (a list of one
 * pointer; a variable-length section adds its length to the list).  A
 * critical section excludes across teams: flagged, and the head runs the
 * kernel unsplit. */
typedef int32_t (*reduce_t)(void *, int32_t, int32_t, size_t, void *,
                            void (*)(void *, void *), void *);

/* The first bytes of candidate c's region (at most TGT_SPLIT_CAND_MAX). */
static size_t cand_head(const share_t *s, uint32_t c, const unsigned char **p)
{
    const tgt_split_cand_t *cd = &s->cands[c];
    uint64_t rest = s->bufs[cd->buf].size - cd->off;
    *p = (const unsigned char *)(uintptr_t)s->bufs[cd->buf].addr + cd->off;
    return rest < TGT_SPLIT_CAND_MAX ? (size_t)rest : TGT_SPLIT_CAND_MAX;
}

static share_t *team_level(void)
{
    return cur.share && cur.team >= 0 && cur.depth == 0 ? cur.share : NULL;
}

/* A team of a share starts combining its reduction into the original
 * (got: libomp's answer, 1 for a team's lone thread): the candidates'
 * bytes before. */
static void team_reduce(int32_t nvars, size_t size, void (*fn)(void *, void *),
                        int32_t got)
{
    share_t *s = team_level();
    if (!s)
        return;
    if (nvars != 1 || size != sizeof(void *) || (s->red_fn && s->red_fn != fn) ||
        got != 1)
        share_flag(s, TGT_SPLIT_RED_SHAPE);
    s->red_fn = fn;
    for (uint32_t c = 0; c < s->ncands; c++) {
        const unsigned char *p;
        size_t n = cand_head(s, c, &p);
        memcpy(s->window[c], p, n);
    }
    s->in_window = got == 1;
}

/* The team has combined: the candidates it changed hold the variable. */
static void team_reduce_end(void)
{
    share_t *s = team_level();
    if (!s || !s->in_window)
        return;
    s->in_window = false;
    for (uint32_t c = 0; c < s->ncands; c++) {
        const unsigned char *p;
        size_t n = cand_head(s, c, &p);
        if (memcmp(s->window[c], p, n) != 0)
            s->cands[c].written = 1;
    }
}

int32_t __kmpc_reduce_nowait(void *loc, int32_t gtid, int32_t nvars, size_t size,
                             void *data, void (*fn)(void *, void *), void *lck)
{
    REAL(reduce_t, "__kmpc_reduce_nowait");
    int32_t got = f_(loc, gtid, nvars, size, data, fn, lck);
    team_reduce(nvars, size, fn, got);
    return got;
}

int32_t __kmpc_reduce(void *loc, int32_t gtid, int32_t nvars, size_t size, void *data,
                      void (*fn)(void *, void *), void *lck)
{
    REAL(reduce_t, "__kmpc_reduce");
    int32_t got = f_(loc, gtid, nvars, size, data, fn, lck);
    team_reduce(nvars, size, fn, got);
    return got;
}

void __kmpc_end_reduce_nowait(void *loc, int32_t gtid, void *lck)
{
    team_reduce_end();
    REAL(void (*)(void *, int32_t, void *), "__kmpc_end_reduce_nowait");
    f_(loc, gtid, lck);
}

void __kmpc_end_reduce(void *loc, int32_t gtid, void *lck)
{
    team_reduce_end();
    REAL(void (*)(void *, int32_t, void *), "__kmpc_end_reduce");
    f_(loc, gtid, lck);
}

void __kmpc_critical(void *loc, int32_t gtid, void *crit)
{
    if (cur.share)
        share_flag(cur.share, TGT_SPLIT_CRITICAL);
    REAL(void (*)(void *, int32_t, void *), "__kmpc_critical");
    f_(loc, gtid, crit);
}

void __kmpc_critical_with_hint(void *loc, int32_t gtid, void *crit, uint32_t hint)
{
    if (cur.share)
        share_flag(cur.share, TGT_SPLIT_CRITICAL);
    REAL(void (*)(void *, int32_t, void *, uint32_t), "__kmpc_critical_with_hint");
    f_(loc, gtid, crit, hint);
}

bool tgt_split_interposed(void)
{
    static const struct {
        const char *name;
        void *mine;
    } fns[] = {
        {"__kmpc_fork_teams", (void *)__kmpc_fork_teams},
        {"__kmpc_fork_call", (void *)__kmpc_fork_call},
        {"__kmpc_for_static_init_4", (void *)__kmpc_for_static_init_4},
        {"__kmpc_for_static_init_8", (void *)__kmpc_for_static_init_8},
        {"omp_get_team_num", (void *)omp_get_team_num},
        {"omp_get_num_teams", (void *)omp_get_num_teams},
        {"__kmpc_reduce_nowait", (void *)__kmpc_reduce_nowait},
        {"__kmpc_end_reduce_nowait", (void *)__kmpc_end_reduce_nowait},
    };
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
        if (dlsym(RTLD_DEFAULT, fns[i].name) != fns[i].mine)
            return false;
    return true;
}

/* ----------------------------------------------------------- the share */
void tgt_split_share_begin(void)
{
    share_t *s = cur.share;
    if (!s || s->twins)
        return;
    s->twins = calloc(s->nbufs ? s->nbufs : 1, sizeof(*s->twins));
    if (!s->twins)
        ompc_fatal("rank %d: out of memory twinning a split kernel's buffers",
                   tgt_rt->rank);
    /* The pages the guards protect are not twinned: the bytes a kernel
     * fetches go to the twin as they come (dm_guard_begin), and pages it
     * never touches it cannot have changed. */
    for (uint32_t i = 0; i < s->nguard; i++) {
        const tgt_split_guard_t *q = &s->guards[i];
        uint64_t a = s->bufs[q->buf].addr + q->off, e = a + q->len;
        uint64_t pa = (a + DM_GUARD_PAGE - 1) & ~(uint64_t)(DM_GUARD_PAGE - 1);
        uint64_t pe = e & ~(uint64_t)(DM_GUARD_PAGE - 1);
        if (pa < pe)
            skip_add(s, q->buf, pa - s->bufs[q->buf].addr, pe - pa);
    }
    if (s->nskip)
        qsort(s->skip, s->nskip, sizeof(*s->skip), skip_cmp);
    uint64_t t0 = ompc_now_ns();
    for (uint32_t i = 0; i < s->nbufs; i++) {
        size_t n = (size_t)s->bufs[i].size;
        s->twins[i] = twin_get(n);
        if (!s->twins[i])
            ompc_fatal("rank %d: out of memory twinning %zu bytes of a split kernel's "
                       "buffer",
                       tgt_rt->rank, n);
        each_span(s, i, span_twin, s);
    }
    uint64_t t1 = ompc_now_ns();
    if (s->nguard) {
        /* Other shares' pieces come when the kernel touches them. */
        dm_guard_run_t *g = malloc(s->nguard * sizeof(*g));
        if (!g)
            ompc_fatal("rank %d: out of memory guarding a split kernel's buffers",
                       tgt_rt->rank);
        for (uint32_t i = 0; i < s->nguard; i++) {
            const tgt_split_guard_t *q = &s->guards[i];
            g[i] = (dm_guard_run_t){s->bufs[q->buf].addr + q->off, q->len, q->rank,
                                    q->addr, s->twins[q->buf] + q->off};
        }
        size_t npre;
        dm_guard_pre_t *pre = hint_get(s, &npre);
        ompc_status_t st = dm_guard_begin(tgt_rt->dm, g, s->nguard, pre, npre);
        free(pre);
        free(g);
        if (st != OMPC_OK)
            ompc_fatal("rank %d: cannot guard a split kernel's buffers: %s", tgt_rt->rank,
                       ompc_status_str(st));
        s->guarded = true;
    }
    if (ompc_trace_on()) {
        const ompc_trace_arg_t a[] = {OMPC_TRACE_U64("guards", s->nguard)};
        ompc_trace_span("split", "twin", t0, t1, NULL, 0);
        ompc_trace_span("split", "guard", t1, ompc_now_ns(), a, OMPC_TRACE_NARGS(a));
    }
}

/* Changed bytes closer than gap are sent as one range: GAP at first,
 * doubled up to GAP_MAX while the ranges overflow the reply.  The bytes in
 * between are unchanged (equal to the twin), so sending them is harmless
 * unless another share changed them, and then the home sees the two ranges
 * overlap and runs the kernel unsplit: never a silent overwrite.  A field
 * near a fixed point (a converging Jacobi sweep) leaves many such holes in
 * every row. */
#define GAP 64
#define GAP_MAX 4096

typedef struct ranges {
    tgt_split_range_t *v;
    size_t n, cap;
    uint64_t gap;
    bool full;
} ranges_t;

/* Joins the ranges closer than a doubled gap, in place (they come in
 * order of buffer and offset); false when no larger gap is allowed. */
static bool range_widen(ranges_t *r)
{
    if (r->gap >= GAP_MAX)
        return false;
    r->gap *= 2;
    size_t k = 0;
    for (size_t i = 1; i < r->n; i++) {
        tgt_split_range_t *p = &r->v[k], *q = &r->v[i];
        if (p->buf == q->buf && p->off + p->len + r->gap >= q->off)
            p->len = q->off + q->len - p->off;
        else
            r->v[++k] = *q;
    }
    r->n = r->n ? k + 1 : 0;
    return true;
}

static void range_add(ranges_t *r, uint32_t buf, uint64_t b, uint64_t e)
{
    for (;;) {
        if (r->n > 0 && r->v[r->n - 1].buf == buf &&
            r->v[r->n - 1].off + r->v[r->n - 1].len + r->gap >= b) {
            r->v[r->n - 1].len = e - r->v[r->n - 1].off;
            return;
        }
        if (r->n < r->cap)
            break;
        if (!range_widen(r)) {
            r->full = true;
            return;
        }
    }
    r->v[r->n++] = (tgt_split_range_t){.buf = buf, .off = b, .len = e - b};
}

/* The bytes of now that differ from twin in [from, size), to the byte, as
 * ranges (offsets from now). */
static void diff_buf(ranges_t *r, uint32_t buf, const unsigned char *now,
                     const unsigned char *twin, size_t from, size_t size)
{
    size_t i = from;
    while (i < size && !r->full) {
        size_t blk = size - i < 4096 ? size - i : 4096;
        if (memcmp(now + i, twin + i, blk) == 0) {
            i += blk;
            continue;
        }
        size_t end = i + blk, j = i;
        for (; j + 8 <= end; j += 8) {
            uint64_t a, b;
            memcpy(&a, now + j, 8);
            memcpy(&b, twin + j, 8);
            uint64_t x = a ^ b;
            if (!x)
                continue;
            /* Little-endian: the lowest differing byte is the first. */
            unsigned first = (unsigned)__builtin_ctzll(x) / 8;
            unsigned last = 7 - (unsigned)__builtin_clzll(x) / 8;
            range_add(r, buf, j + first, j + last + 1);
        }
        for (; j < end; j++)
            if (now[j] != twin[j])
                range_add(r, buf, j, j + 1);
        i = end;
    }
}

typedef struct diff_arg {
    share_t *s;
    ranges_t *r;
} diff_arg_t;

static void span_diff(void *arg, uint32_t buf, uint64_t from, uint64_t to)
{
    diff_arg_t *d = arg;
    diff_buf(d->r, buf, (const unsigned char *)(uintptr_t)d->s->bufs[buf].addr,
             d->s->twins[buf], (size_t)from, (size_t)to);
}

/* A helper keeps the bytes of its small changed ranges, packed into
 * tgt.split.apply messages for the home. */
static ompc_status_t pack_small(share_t *s, const ranges_t *r)
{
    const size_t cap = EV_EXEC_MAX_ARGS;
    char *cur_pack = NULL;
    size_t len = 0, cnt = 0;
    for (size_t i = 0; i <= r->n; i++) {
        bool last = i == r->n;
        const tgt_split_range_t *g = last ? NULL : &r->v[i];
        if (g && g->len > TGT_SPLIT_SMALL)
            continue;
        size_t need = g ? sizeof(tgt_split_span_t) + tgt_pad8(g->len) : 0;
        if (cur_pack && (last || len + need > cap)) {
            tgt_split_apply_t h = {TGT_SPLIT_MAGIC, s->key, cnt};
            memcpy(cur_pack, &h, sizeof(h));
            char **np = realloc(s->packs, (s->npacks + 1) * sizeof(*np));
            size_t *nl = np ? realloc(s->pack_len, (s->npacks + 1) * sizeof(*nl)) : NULL;
            if (np)
                s->packs = np;
            if (!np || !nl) {
                free(cur_pack);
                return OMPC_ERR_NOMEM;
            }
            s->pack_len = nl;
            s->packs[s->npacks] = cur_pack;
            s->pack_len[s->npacks++] = len;
            cur_pack = NULL;
        }
        if (last)
            break;
        if (!cur_pack) {
            cur_pack = malloc(cap);
            if (!cur_pack)
                return OMPC_ERR_NOMEM;
            len = sizeof(tgt_split_apply_t);
            cnt = 0;
        }
        const tgt_split_buf_t *b = &s->bufs[g->buf];
        tgt_split_span_t sp = {b->home_addr + g->off, g->len};
        memcpy(cur_pack + len, &sp, sizeof(sp));
        memcpy(cur_pack + len + sizeof(sp), (const char *)(uintptr_t)b->addr + g->off,
               (size_t)g->len);
        memset(cur_pack + len + sizeof(sp) + g->len, 0, tgt_pad8(g->len) - g->len);
        len += need;
        cnt++;
    }
    return OMPC_OK;
}

static ompc_status_t fn_split_run(ev_exec_info_t *info)
{
    tgt_split_hdr_t h;
    if (info->args_size < sizeof(h))
        return OMPC_ERR_INVALID;
    memcpy(&h, info->args, sizeof(h));
    size_t bl = (size_t)h.nbufs * sizeof(tgt_split_buf_t);
    if (h.magic != TGT_SPLIT_MAGIC || h.nshares == 0 || h.share >= h.nshares ||
        h.w_lo > h.w_hi || h.w_hi > TGT_SPLIT_WSCALE ||
        h.nbufs > (info->args_size - sizeof(h)) / sizeof(tgt_split_buf_t) ||
        info->result_cap < sizeof(tgt_split_reply_t)) {
        ompc_error("rank %d: refused a split share: malformed header", tgt_rt->rank);
        return OMPC_ERR_INVALID;
    }
    share_t *s = calloc(1, sizeof(*s));
    if (!s)
        return OMPC_ERR_NOMEM;
    s->key = h.key;
    s->kidx = -1;
    s->idx = h.share;
    s->nshares = h.nshares;
    s->w_lo = h.w_lo;
    s->w_hi = h.w_hi;
    s->home_rank = h.home_rank;
    s->home = h.home_rank == tgt_rt->rank;
    s->nbufs = h.nbufs;
    s->bufs = malloc(bl ? bl : 1);
    size_t gl = (size_t)h.nguard * sizeof(tgt_split_guard_t);
    if (h.nguard > TGT_SPLIT_MAX_GUARDS || gl > info->args_size - sizeof(h) - bl) {
        ompc_error("rank %d: refused a split share: malformed guards", tgt_rt->rank);
        free(s->bufs);
        free(s);
        return OMPC_ERR_INVALID;
    }
    s->guards = malloc(gl ? gl : 1);
    if (!s->bufs || !s->guards) {
        free(s->bufs);
        free(s->guards);
        free(s);
        return OMPC_ERR_NOMEM;
    }
    memcpy(s->bufs, (const char *)info->args + sizeof(h), bl);
    memcpy(s->guards, (const char *)info->args + sizeof(h) + bl, gl);
    s->nguard = h.nguard;
    s->keep_twins = (h.hflags & TGT_SPLIT_KEEP_TWINS) != 0;
    for (uint32_t i = 0; i < s->nguard; i++)
        if (s->guards[i].buf >= s->nbufs ||
            s->guards[i].off > s->bufs[s->guards[i].buf].size ||
            s->guards[i].len > s->bufs[s->guards[i].buf].size - s->guards[i].off) {
            ompc_error("rank %d: refused a split share: a guard outside its buffer",
                       tgt_rt->rank);
            share_free(s);
            return OMPC_ERR_INVALID;
        }
    for (uint32_t i = 0; i < s->nbufs; i++)
        if (!ev_mem_contains(info->ctx, (void *)(uintptr_t)s->bufs[i].addr,
                             (size_t)s->bufs[i].size)) {
            ompc_error("rank %d: refused a split share: buffer %u is not device memory",
                       tgt_rt->rank, i);
            share_free(s);
            return OMPC_ERR_BAD_ADDR;
        }
    /* The share may write them (a split kernel names its buffers): copies
     * read-only here since they were served open, as for any named
     * writer. */
    for (uint32_t i = 0; i < s->nbufs; i++)
        dm_exec_open(s->bufs[i].addr);
    for (uint32_t i = 0; i < s->nbufs; i++)
        if (s->bufs[i].zero)
            dm_exec_store((void *)(uintptr_t)s->bufs[i].addr, NULL,
                          (size_t)s->bufs[i].size);
    const char *msg = (const char *)info->args + sizeof(h) + bl + gl;
    size_t msg_len = info->args_size - sizeof(h) - bl - gl;
    s->kidx = tgt_kernel_msg_index(msg, msg_len);
    tgt_split_reply_t rep = {0};
    split_tls_t saved = cur;
    cur = (split_tls_t){.share = s, .team = -1, .nteams = 0, .depth = 0};
    dist_seen = false;
    ompc_status_t st = tgt_kernel_run(msg, msg_len, &rep.kernel_ns, NULL);
    cur = saved;
    if (st == OMPC_OK && !s->twins)
        tgt_split_share_begin(); /* a kernel that never ran: nothing changed */
    uint64_t tg = ompc_now_ns();
    if (s->guarded) {
        /* The kernel's threads are done: pages never touched open again
         * (stale, and equal to their twins). */
        s->nskip = 0;
        ompc_status_t gst = dm_guard_end(tgt_rt->dm, &rep.fetched, guard_untouched, s);
        if (s->nskip)
            qsort(s->skip, s->nskip, sizeof(*s->skip), skip_cmp);
        s->guarded = false;
        if (gst == OMPC_OK)
            hint_learn(s);
        if (st == OMPC_OK)
            st = gst;
    }
    if (st != OMPC_OK) {
        share_free(s);
        return st;
    }
    uint32_t flags = atomic_load(&s->flags);
    /* Pages read on demand hold the bytes every writer ordered before the
     * kernel left, whichever share reads them; bytes written through them
     * went to the head at once, where shares' diffs of one counter would
     * merge silently and an undone split could not take them back. */
    if (tgt_kernel_fault_wrote)
        flags |= TGT_SPLIT_FAULTED;
    if (!s->in_teams)
        flags |= TGT_SPLIT_NO_TEAMS;
    else if (s->my_teams > 0 && !dist_seen)
        flags |= TGT_SPLIT_NO_DIST;
    if (s->red_fn && s->cands_over)
        flags |= TGT_SPLIT_RED_SHAPE;
    size_t cand_bytes = (size_t)s->ncands * sizeof(tgt_split_cand_t);
    if (info->result_cap < sizeof(rep) + cand_bytes) {
        share_free(s);
        return OMPC_ERR_INVALID;
    }
    size_t cap = (info->result_cap - sizeof(rep) - cand_bytes) /
                 sizeof(tgt_split_range_t);
    if (cap > TGT_SPLIT_MAX_RANGES)
        cap = TGT_SPLIT_MAX_RANGES;
    ranges_t r = {(tgt_split_range_t *)((char *)info->result + sizeof(rep)), 0, cap, GAP,
                  false};
    diff_arg_t da = {s, &r};
    uint64_t td = ompc_now_ns();
    for (uint32_t i = 0; i < s->nbufs && !r.full; i++)
        each_span(s, i, span_diff, &da);
    if (ompc_trace_on()) {
        const ompc_trace_arg_t a[] = {OMPC_TRACE_U64("fetched", rep.fetched)};
        const ompc_trace_arg_t b[] = {OMPC_TRACE_U64("ranges", r.n)};
        ompc_trace_span("split", "guard end", tg, td, a, OMPC_TRACE_NARGS(a));
        ompc_trace_span("split", "diff", td, ompc_now_ns(), b, OMPC_TRACE_NARGS(b));
    }
    if (r.full) {
        flags |= TGT_SPLIT_TOO_MANY;
        r.n = 0;
    }
    rep.flags = flags;
    rep.nranges = (uint32_t)r.n;
    rep.teams = s->teams;
    rep.my_teams = s->my_teams;
    rep.teams_ns = s->teams_ns;
    rep.part = s->part;
    rep.reduced = s->red_fn != NULL;
    rep.ncands = s->ncands;
    memcpy(info->result, &rep, sizeof(rep));
    char *cp = (char *)info->result + sizeof(rep) + r.n * sizeof(tgt_split_range_t);
    for (uint32_t c = 0; c < s->ncands; c++) {
        tgt_split_cand_t *cd = &s->cands[c];
        uint64_t rest = s->bufs[cd->buf].size - cd->off;
        cd->len = rest <= TGT_SPLIT_CAND_MAX ? (uint32_t)rest : 0;
        memset(cd->bytes, 0, sizeof(cd->bytes));
        if (cd->len)
            memcpy(cd->bytes, (const char *)(uintptr_t)s->bufs[cd->buf].addr + cd->off,
                   cd->len);
        memcpy(cp + (size_t)c * sizeof(*cd), cd, sizeof(*cd));
    }
    info->result_size = sizeof(rep) + r.n * sizeof(tgt_split_range_t) + cand_bytes;
    /* A helper is done but for its small ranges, which it sends itself
     * when the head says so; the head moves the others (worker to worker,
     * from its copy, which nothing writes meanwhile). */
    if (!s->home) {
        for (uint32_t i = 0; !s->keep_twins && i < s->nbufs; i++) {
            twin_put(s->twins[i], (size_t)s->bufs[i].size);
            s->twins[i] = NULL;
        }
        if (!flags && pack_small(s, &r) != OMPC_OK) {
            share_free(s);
            return OMPC_ERR_NOMEM;
        }
        if (!s->npacks && !s->keep_twins) {
            share_free(s);
            return OMPC_OK;
        }
    }
    pthread_mutex_lock(&shares_mtx);
    s->next = shares;
    shares = s;
    pthread_mutex_unlock(&shares_mtx);
    return OMPC_OK;
}

static share_t *share_take(uint64_t key)
{
    pthread_mutex_lock(&shares_mtx);
    share_t **pp = &shares;
    while (*pp && (*pp)->key != key)
        pp = &(*pp)->next;
    share_t *s = *pp;
    if (s)
        *pp = s->next;
    pthread_mutex_unlock(&shares_mtx);
    return s;
}

static ompc_status_t fn_split_end(ev_exec_info_t *info)
{
    tgt_split_end_t e;
    if (info->args_size != sizeof(e))
        return OMPC_ERR_INVALID;
    memcpy(&e, info->args, sizeof(e));
    share_t *s = e.magic == TGT_SPLIT_MAGIC ? share_take(e.key) : NULL;
    if (!s) {
        ompc_error("rank %d: refused the end of split %llu: no such share", tgt_rt->rank,
                   (unsigned long long)e.key);
        return OMPC_ERR_INVALID;
    }
    ompc_status_t st = OMPC_OK;
    if (e.action == TGT_SPLIT_RESTORE && s->twins && (s->home || s->keep_twins)) {
        for (uint32_t i = 0; i < s->nbufs; i++)
            each_span(s, i, span_restore, s);
    } else if (e.action == TGT_SPLIT_PUSH && !s->home) {
        ev_handle_t **h = calloc(s->npacks ? s->npacks : 1, sizeof(*h));
        if (!h)
            st = OMPC_ERR_NOMEM;
        size_t started = 0;
        for (size_t i = 0; st == OMPC_OK && i < s->npacks; i++, started++)
            st = ev_execute(info->ctx, e.home_rank, tgt_rt->fn_split_apply, s->packs[i],
                            s->pack_len[i], NULL, 0, &h[i]);
        for (size_t i = 0; i < started; i++) {
            ompc_status_t w = ev_wait(h[i]);
            ev_handle_release(h[i]);
            if (st == OMPC_OK)
                st = w;
        }
        free(h);
    } else if (e.action != TGT_SPLIT_DROP) {
        st = OMPC_ERR_INVALID;
    }
    share_free(s);
    return st;
}

/* tgt.split.drop: a merged split's share is done here with nothing to
 * push or put back; its twins go back to the pool.  Short (the gate
 * thread runs it), and posted without a reply: the head does not wait a
 * round trip for it, and its next event to this rank (the next split's
 * share) runs after it. */
static ompc_status_t fn_split_drop(ev_exec_info_t *info)
{
    tgt_split_end_t e;
    if (info->args_size != sizeof(e))
        return OMPC_ERR_INVALID;
    memcpy(&e, info->args, sizeof(e));
    share_t *s = e.magic == TGT_SPLIT_MAGIC && e.action == TGT_SPLIT_DROP
                     ? share_take(e.key)
                     : NULL;
    if (!s) {
        ompc_error("rank %d: refused to drop split %llu: no such share", tgt_rt->rank,
                   (unsigned long long)e.key);
        return OMPC_ERR_INVALID;
    }
    share_free(s);
    return OMPC_OK;
}

static ompc_status_t fn_split_apply(ev_exec_info_t *info)
{
    tgt_split_apply_t h;
    if (info->args_size < sizeof(h))
        return OMPC_ERR_INVALID;
    memcpy(&h, info->args, sizeof(h));
    if (h.magic != TGT_SPLIT_MAGIC)
        return OMPC_ERR_INVALID;
    const char *base = (const char *)info->args + sizeof(h);
    const char *end = (const char *)info->args + info->args_size;
    /* A helper's bytes of the reduction variable are combined, not copied
     * (fn_split_reduce; the head keeps a range that covers both out). */
    uint64_t xa = 0, xl = 0;
    pthread_mutex_lock(&shares_mtx);
    for (share_t *s = shares; s; s = s->next)
        if (s->key == h.key && s->home) {
            xa = s->red_addr;
            xl = s->red_len;
        }
    pthread_mutex_unlock(&shares_mtx);
    /* Every range is checked before any is written. */
    for (int pass = 0; pass < 2; pass++) {
        const char *q = base;
        for (uint64_t i = 0; i < h.nranges; i++) {
            tgt_split_span_t sp;
            if ((size_t)(end - q) < sizeof(sp))
                return OMPC_ERR_INVALID;
            memcpy(&sp, q, sizeof(sp));
            q += sizeof(sp);
            if (sp.len > TGT_SPLIT_SMALL || tgt_pad8(sp.len) > (uint64_t)(end - q) ||
                !ev_mem_contains(info->ctx, (void *)(uintptr_t)sp.addr, (size_t)sp.len)) {
                ompc_error("rank %d: refused the bytes of split %llu: range %llu is not "
                           "device memory",
                           tgt_rt->rank, (unsigned long long)h.key,
                           (unsigned long long)i);
                return OMPC_ERR_BAD_ADDR;
            }
            if (pass == 1 && !(xl && sp.addr >= xa && sp.addr - xa < xl))
                dm_exec_store((void *)(uintptr_t)sp.addr, q, (size_t)sp.len);
            q += tgt_pad8(sp.len);
        }
    }
    return OMPC_OK;
}

/* Combines the helpers' values of the reduction variable into the home's
 * with the combiner the home's teams used, after checking that the
 * initial value every share started from (the home's twin) is unchanged
 * when combined with itself: each share counted it once. */
static ompc_status_t fn_split_reduce(ev_exec_info_t *info)
{
    tgt_split_reduce_t h;
    if (info->args_size < sizeof(h) || info->result_cap < sizeof(uint32_t))
        return OMPC_ERR_INVALID;
    memcpy(&h, info->args, sizeof(h));
    size_t step = tgt_pad8(h.len);
    if (h.magic != TGT_SPLIT_MAGIC || h.len == 0 || h.len > TGT_SPLIT_CAND_MAX ||
        h.nparts > (info->args_size - sizeof(h)) / step)
        return OMPC_ERR_INVALID;
    pthread_mutex_lock(&shares_mtx);
    share_t *s = shares;
    while (s && !(s->key == h.key && s->home))
        s = s->next;
    pthread_mutex_unlock(&shares_mtx);
    if (!s || !s->red_fn || !s->twins || h.buf >= s->nbufs ||
        h.off > s->bufs[h.buf].size || h.len > s->bufs[h.buf].size - h.off) {
        ompc_error("rank %d: refused to combine the reduction of split %llu: no such "
                   "share or variable",
                   tgt_rt->rank, (unsigned long long)h.key);
        return OMPC_ERR_INVALID;
    }
    /* 16-aligned copies: the combiner reads its variables as their type. */
    _Alignas(16) unsigned char a[TGT_SPLIT_CAND_MAX], b[TGT_SPLIT_CAND_MAX];
    const unsigned char *init = s->twins[h.buf] + h.off;
    memcpy(a, init, h.len);
    memcpy(b, init, h.len);
    void *l[1] = {a}, *r[1] = {b};
    s->red_fn(l, r);
    uint32_t refused = memcmp(a, init, h.len) != 0;
    unsigned char *mine = (unsigned char *)(uintptr_t)s->bufs[h.buf].addr + h.off;
    for (uint64_t i = 0; !refused && i < h.nparts; i++) {
        memcpy(b, (const char *)info->args + sizeof(h) + i * step, h.len);
        void *ml[1] = {mine}, *pr[1] = {b};
        s->red_fn(ml, pr);
    }
    if (!refused) {
        pthread_mutex_lock(&shares_mtx);
        s->red_addr = (uint64_t)(uintptr_t)mine;
        s->red_len = h.len;
        pthread_mutex_unlock(&shares_mtx);
    }
    memcpy(info->result, &refused, sizeof(refused));
    info->result_size = sizeof(refused);
    return OMPC_OK;
}

ompc_status_t tgt_split_fn_register(void)
{
    tgt_kernel_before = tgt_split_share_begin;
    ompc_status_t st = ev_fn_register(tgt_rt->ev, "tgt.split.run", fn_split_run, 0,
                                      &tgt_rt->fn_split_run);
    if (st == OMPC_OK)
        st = ev_fn_register(tgt_rt->ev, "tgt.split.end", fn_split_end, 0,
                            &tgt_rt->fn_split_end);
    if (st == OMPC_OK)
        st = ev_fn_register(tgt_rt->ev, "tgt.split.drop", fn_split_drop, EV_FN_INLINE,
                            &tgt_rt->fn_split_drop);
    if (st == OMPC_OK)
        st = ev_fn_register(tgt_rt->ev, "tgt.split.apply", fn_split_apply, 0,
                            &tgt_rt->fn_split_apply);
    if (st == OMPC_OK)
        st = ev_fn_register(tgt_rt->ev, "tgt.split.reduce", fn_split_reduce, 0,
                            &tgt_rt->fn_split_reduce);
    return st;
}
