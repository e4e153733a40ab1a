/* Trace recorder.
 *
 * Recording: each thread appends to its own chunked buffer and copies its
 * strings into its own arena, so recording takes no lock.  An event becomes
 * visible to readers (serialize, counts) when its chunk's count is stored
 * with release order; readers never block the writer, and events are never
 * moved or freed before fini, so a reader may run while threads record.
 *
 * Writing: this rank's events go through the same blob encoding as the
 * other ranks' before the JSON is written, so the parser that guards rank 0
 * against corrupt blobs runs on every write, and there is one JSON writer. */
#define _GNU_SOURCE
#include "ompc_trace.h"

#include "ompc_file.h"
#include "ompc_u64map.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    /* Small enough that an idle thread costs little, large enough that
     * allocation is rare. */
    TRACE_CHUNK_EVENTS = 1024,
    TRACE_STRCHUNK_BYTES = 16384,
    TRACE_NAME_MAX = 64,
};

/* Arena lengths of argument keys and strings are 16-bit. */
_Static_assert(OMPC_TRACE_STR_MAX <= UINT16_MAX, "OMPC_TRACE_STR_MAX too large");
/* An event's argument count travels in one byte of the blob. */
_Static_assert(OMPC_TRACE_ARGS_MAX <= UINT8_MAX, "OMPC_TRACE_ARGS_MAX too large");

/* Bytes of strings a rank may keep per event it may keep.  Names and
 * categories are interned per thread, so this is mostly args. */
#define TRACE_STR_BYTES_PER_EVENT 64u
#define TRACE_STR_BYTES_MIN (1u << 20)

/* Timestamps, durations and offsets are kept at or below this, so that the
 * sums and differences the writer forms never overflow int64_t (the
 * monotonic clock would need 73 years of uptime to get there). */
#define TRACE_TIME_MAX (INT64_MAX / 4)

#define TRACE_NONE UINT32_MAX

/* ------------------------------------------------------------ recording */

typedef struct trace_ev {
    uint64_t ts;
    uint64_t val;     /* 'X': duration; 'C': the value's bits; 'i': 0 */
    const char *cat;  /* arena strings of the owner thread; NULL if absent */
    const char *name;
    /* 'C': the series; 'X' and 'i': nargs arguments encoded by
     * thread_args_store, NULL when nargs is 0. */
    const char *args;
    uint8_t ph;
    uint8_t nargs;
} trace_ev_t;

/* Filled by the owner thread only.  A reader loads next before n (both
 * acquire): a chunk that already has a successor is full, so the n it then
 * reads is final and the snapshot has no hole. */
typedef struct trace_chunk {
    _Atomic(struct trace_chunk *) next;
    _Atomic size_t n;
    size_t cap;
    trace_ev_t ev[];
} trace_chunk_t;

/* Arena strings are a 4-byte length, the bytes and a NUL; a string is
 * handed around as a pointer to its bytes, so serialize needs no strlen. */
typedef struct trace_strchunk {
    struct trace_strchunk *next;
    size_t used, cap;
    char data[];
} trace_strchunk_t;

typedef struct trace_thread {
    struct trace_thread *next;     /* under trace.lock */
    uint32_t tid;                  /* immutable */
    char name[TRACE_NAME_MAX];     /* under trace.lock */
    _Atomic(trace_chunk_t *) head; /* stored once by the owner */
    _Atomic uint64_t dropped;      /* added to by the owner */
    /* Owner only (and fini). */
    trace_chunk_t *tail;
    size_t tail_n;
    trace_strchunk_t *strs;
    ompc_u64map_t intern;          /* trace_hash -> arena string */
} trace_thread_t;

typedef struct trace_ctx {
    pthread_mutex_t lock;
    _Atomic bool on;
    /* Bumped by every init: a thread whose cached generation differs
     * registers a new buffer rather than use one that fini freed. */
    _Atomic uint64_t gen;
    _Atomic uint64_t max_events;
    /* Budgets are reserved a chunk at a time, not per event, so threads
     * touch these shared counters rarely. */
    _Atomic uint64_t events_reserved;
    _Atomic uint64_t str_bytes_reserved;
    /* Events lost before their thread had a buffer to count them in. */
    _Atomic uint64_t lost;
    /* Under lock. */
    int rank;
    uint32_t next_tid;
    trace_thread_t *threads;
} trace_ctx_t;

static trace_ctx_t trace = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* One thread-local object: the library is position-independent, so every
 * thread-local variable reached costs a __tls_get_addr call. */
typedef struct trace_tls {
    trace_thread_t *thread;
    uint64_t gen;
    /* Kept apart from the buffer so that a name given before init (threads
     * name themselves when they start) still labels the track. */
    char name[TRACE_NAME_MAX];
} trace_tls_t;

static _Thread_local trace_tls_t tls;

static void trace_lock(void)
{
    int rc = pthread_mutex_lock(&trace.lock);
    if (rc != 0)
        ompc_fatal("trace: pthread_mutex_lock: %s", strerror(rc));
}

static void trace_unlock(void)
{
    int rc = pthread_mutex_unlock(&trace.lock);
    if (rc != 0)
        ompc_fatal("trace: pthread_mutex_unlock: %s", strerror(rc));
}

/* Reserve between min_take and want units of a budget; 0 if fewer than
 * min_take are left. */
static uint64_t trace_budget_take(_Atomic uint64_t *used, uint64_t limit,
                                  uint64_t min_take, uint64_t want)
{
    uint64_t u = atomic_load_explicit(used, memory_order_relaxed);
    for (;;) {
        if (u >= limit || limit - u < min_take)
            return 0;
        uint64_t take = limit - u < want ? limit - u : want;
        if (atomic_compare_exchange_weak_explicit(
                used, &u, u + take, memory_order_relaxed, memory_order_relaxed))
            return take;
    }
}

static uint64_t trace_str_limit(void)
{
    uint64_t max = atomic_load_explicit(&trace.max_events, memory_order_relaxed);
    if (max > (UINT64_MAX - TRACE_STR_BYTES_MIN) / TRACE_STR_BYTES_PER_EVENT)
        return UINT64_MAX;
    return max * TRACE_STR_BYTES_PER_EVENT + TRACE_STR_BYTES_MIN;
}

/* Eight bytes per step: a byte-at-a-time hash was the largest cost of
 * recording a span.  Only ever used in memory, so byte order is moot. */
static uint64_t trace_hash(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;
    size_t i = 0;
    for (; len - i >= 8; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s + i, len - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ h >> 29;
}

static uint32_t trace_str_len(const char *s)
{
    uint32_t len;
    memcpy(&len, s - 4, sizeof(len));
    return len;
}

/* Room for len bytes in the thread's arena, the length and the NUL around
 * them already written; NULL when the budget or memory runs out. */
static char *thread_arena_alloc(trace_thread_t *th, size_t len)
{
    size_t need = 4 + len + 1;
    trace_strchunk_t *c = th->strs;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > TRACE_STRCHUNK_BYTES ? need : TRACE_STRCHUNK_BYTES;
        if (!trace_budget_take(&trace.str_bytes_reserved, trace_str_limit(), cap, cap))
            return NULL;
        c = malloc(sizeof(*c) + cap);
        if (!c) {
            atomic_fetch_sub_explicit(&trace.str_bytes_reserved, cap,
                                      memory_order_relaxed);
            return NULL;
        }
        c->used = 0;
        c->cap = cap;
        c->next = th->strs;
        th->strs = c;
    }
    char *p = c->data + c->used;
    uint32_t len32 = (uint32_t)len;
    memcpy(p, &len32, sizeof(len32));
    p[4 + len] = '\0';
    c->used += need;
    return p + 4;
}

static const char *thread_str_store(trace_thread_t *th, const char *s, size_t len)
{
    char *p = thread_arena_alloc(th, len);
    if (p)
        memcpy(p, s, len);
    return p;
}

/* Arguments as one arena string in host byte order, unaligned: per
 * argument a u8 type, a u16 key length and the key, then the value: 8
 * bytes for a number, a u16 length and the bytes for a string.  Recording
 * copies bytes only; keys and strings become JSON when the file is
 * written.  NULL for an unknown type or when the arena is full. */
static const char *thread_args_store(trace_thread_t *th, const ompc_trace_arg_t *args,
                                     size_t nargs)
{
    uint16_t klen[OMPC_TRACE_ARGS_MAX], slen[OMPC_TRACE_ARGS_MAX];
    size_t need = 0;
    for (size_t i = 0; i < nargs; i++) {
        const ompc_trace_arg_t *a = &args[i];
        klen[i] = (uint16_t)(a->key ? strnlen(a->key, OMPC_TRACE_STR_MAX) : 0);
        need += 3 + (size_t)klen[i];
        switch (a->type) {
        case OMPC_TRACE_ARG_U64:
        case OMPC_TRACE_ARG_I64:
        case OMPC_TRACE_ARG_F64: need += 8; break;
        case OMPC_TRACE_ARG_STR:
            slen[i] = (uint16_t)(a->str ? strnlen(a->str, OMPC_TRACE_STR_MAX) : 0);
            need += 2 + (size_t)slen[i];
            break;
        default: return NULL;
        }
    }
    char *rec = thread_arena_alloc(th, need), *p = rec;
    if (!rec)
        return NULL;
    for (size_t i = 0; i < nargs; i++) {
        const ompc_trace_arg_t *a = &args[i];
        *p++ = (char)a->type;
        memcpy(p, &klen[i], 2);
        if (klen[i])
            memcpy(p + 2, a->key, klen[i]);
        p += 2 + klen[i];
        switch (a->type) {
        case OMPC_TRACE_ARG_U64:
            memcpy(p, &a->u64, 8);
            p += 8;
            break;
        case OMPC_TRACE_ARG_I64:
            memcpy(p, &a->i64, 8);
            p += 8;
            break;
        case OMPC_TRACE_ARG_F64:
            memcpy(p, &a->f64, 8);
            p += 8;
            break;
        default:
            memcpy(p, &slen[i], 2);
            if (slen[i])
                memcpy(p + 2, a->str, slen[i]);
            p += 2 + slen[i];
            break;
        }
    }
    return rec;
}

/* Names and categories repeat endlessly; each distinct one is stored once
 * per thread.  The caller's pointer cannot be the key: kernel names may be
 * freed and their address reused for another string.  The key is the
 * string's 64-bit hash; a second string with the same hash is stored
 * apart each time (correct, only not shared). */
static const char *thread_intern(trace_thread_t *th, const char *s)
{
    size_t len = strnlen(s, OMPC_TRACE_STR_MAX);
    uint64_t h = trace_hash(s, len), v;
    if (ompc_u64map_get(&th->intern, h, &v)) {
        const char *p = (const char *)(uintptr_t)v;
        if (trace_str_len(p) == len && memcmp(p, s, len) == 0)
            return p;
        return thread_str_store(th, s, len);
    }
    const char *p = thread_str_store(th, s, len);
    /* Not remembered when the map cannot grow: the next one is stored
     * again, the event is kept. */
    if (p)
        (void)ompc_u64map_put(&th->intern, h, (uint64_t)(uintptr_t)p);
    return p;
}

static trace_thread_t *trace_register(uint64_t gen)
{
    trace_thread_t *th = calloc(1, sizeof(*th));
    if (!th)
        return NULL;
    atomic_init(&th->head, NULL);
    atomic_init(&th->dropped, 0);
    trace_lock();
    if (atomic_load_explicit(&trace.gen, memory_order_relaxed) != gen) {
        trace_unlock();
        free(th);
        return NULL;
    }
    th->tid = trace.next_tid++;
    memcpy(th->name, tls.name, sizeof(th->name));
    th->next = trace.threads;
    trace.threads = th;
    trace_unlock();
    tls.thread = th;
    tls.gen = gen;
    return th;
}

/* The calling thread's buffer, registered on first use; NULL when
 * recording is off or registration failed. */
static trace_thread_t *trace_self(void)
{
    /* Acquire pairs with init's release store: whoever sees the recorder on
     * also sees the generation init set. */
    if (!atomic_load_explicit(&trace.on, memory_order_acquire))
        return NULL;
    uint64_t gen = atomic_load_explicit(&trace.gen, memory_order_relaxed);
    if (tls.gen == gen)
        return tls.thread;
    return trace_register(gen);
}

static trace_ev_t *thread_slot(trace_thread_t *th)
{
    trace_chunk_t *c = th->tail;
    if (c && th->tail_n < c->cap)
        return &c->ev[th->tail_n];
    uint64_t take = trace_budget_take(
        &trace.events_reserved,
        atomic_load_explicit(&trace.max_events, memory_order_relaxed), 1,
        TRACE_CHUNK_EVENTS);
    if (!take)
        return NULL;
    trace_chunk_t *nc = malloc(sizeof(*nc) + (size_t)take * sizeof(trace_ev_t));
    if (!nc) {
        atomic_fetch_sub_explicit(&trace.events_reserved, take, memory_order_relaxed);
        return NULL;
    }
    atomic_init(&nc->next, NULL);
    atomic_init(&nc->n, 0);
    nc->cap = (size_t)take;
    if (c)
        atomic_store_explicit(&c->next, nc, memory_order_release);
    else
        atomic_store_explicit(&th->head, nc, memory_order_release);
    th->tail = nc;
    th->tail_n = 0;
    return &nc->ev[0];
}

/* series is for 'C' only, args and nargs for 'X' and 'i' only. */
static void trace_record(uint8_t ph, const char *cat, const char *name,
                         const char *series, const ompc_trace_arg_t *args, size_t nargs,
                         uint64_t ts, uint64_t val)
{
    trace_thread_t *th = trace_self();
    if (!th) {
        if (atomic_load_explicit(&trace.on, memory_order_relaxed))
            atomic_fetch_add_explicit(&trace.lost, 1, memory_order_relaxed);
        return;
    }
    trace_ev_t *ev = thread_slot(th);
    if (!ev)
        goto drop;
    ev->ph = ph;
    ev->ts = ts;
    ev->val = val;
    ev->cat = NULL;
    ev->args = NULL;
    ev->nargs = 0;
    if (cat && !(ev->cat = thread_intern(th, cat)))
        goto drop;
    if (!(ev->name = thread_intern(th, name ? name : "")))
        goto drop;
    if (ph == 'C') {
        if (!(ev->args = thread_intern(th, series)))
            goto drop;
    } else if (args && nargs) {
        if (nargs > OMPC_TRACE_ARGS_MAX)
            nargs = OMPC_TRACE_ARGS_MAX;
        if (!(ev->args = thread_args_store(th, args, nargs)))
            goto drop;
        ev->nargs = (uint8_t)nargs;
    }
    th->tail_n++;
    atomic_store_explicit(&th->tail->n, th->tail_n, memory_order_release);
    return;
drop:
    /* An unpublished slot is simply reused by the next event. */
    atomic_fetch_add_explicit(&th->dropped, 1, memory_order_relaxed);
}

static uint64_t trace_clamp_time(uint64_t t)
{
    return t > (uint64_t)TRACE_TIME_MAX ? (uint64_t)TRACE_TIME_MAX : t;
}

/* ------------------------------------------------------------ public API */

static void trace_free_threads(trace_thread_t *th)
{
    while (th) {
        trace_thread_t *next = th->next;
        trace_chunk_t *c = atomic_load_explicit(&th->head, memory_order_relaxed);
        while (c) {
            trace_chunk_t *cn = atomic_load_explicit(&c->next, memory_order_relaxed);
            free(c);
            c = cn;
        }
        trace_strchunk_t *s = th->strs;
        while (s) {
            trace_strchunk_t *sn = s->next;
            free(s);
            s = sn;
        }
        ompc_u64map_fini(&th->intern);
        free(th);
        th = next;
    }
}

void ompc_trace_fini(void)
{
    atomic_store_explicit(&trace.on, false, memory_order_relaxed);
    trace_lock();
    trace_thread_t *threads = trace.threads;
    trace.threads = NULL;
    trace.next_tid = 0;
    trace_unlock();
    trace_free_threads(threads);
    atomic_store_explicit(&trace.events_reserved, 0, memory_order_relaxed);
    atomic_store_explicit(&trace.str_bytes_reserved, 0, memory_order_relaxed);
    atomic_store_explicit(&trace.lost, 0, memory_order_relaxed);
}

void ompc_trace_init(int rank, bool enabled)
{
    ompc_trace_fini();
    if (enabled && rank < 0) {
        ompc_error("trace: rank %d is not a rank; tracing stays off", rank);
        enabled = false;
    }
    trace_lock();
    trace.rank = rank;
    atomic_store_explicit(&trace.max_events, OMPC_TRACE_MAX_EVENTS_DEFAULT,
                          memory_order_relaxed);
    atomic_fetch_add_explicit(&trace.gen, 1, memory_order_relaxed);
    trace_unlock();
    atomic_store_explicit(&trace.on, enabled, memory_order_release);
}

bool ompc_trace_on(void) { return atomic_load_explicit(&trace.on, memory_order_relaxed); }

uint64_t ompc_trace_now_ns(void) { return ompc_now_ns(); }

void ompc_trace_set_max_events(uint64_t max_events)
{
    atomic_store_explicit(&trace.max_events, max_events, memory_order_relaxed);
}

void ompc_trace_thread_name(const char *name)
{
    snprintf(tls.name, sizeof(tls.name), "%s", name ? name : "");
    if (!atomic_load_explicit(&trace.on, memory_order_relaxed))
        return;
    trace_thread_t *th = trace_self();
    if (!th)
        return;
    trace_lock();
    memcpy(th->name, tls.name, sizeof(th->name));
    trace_unlock();
}

void ompc_trace_span(const char *cat, const char *name, uint64_t t0_ns, uint64_t t1_ns,
                     const ompc_trace_arg_t *args, size_t nargs)
{
    if (!atomic_load_explicit(&trace.on, memory_order_relaxed))
        return;
    uint64_t ts = trace_clamp_time(t0_ns);
    uint64_t dur = trace_clamp_time(t1_ns > t0_ns ? t1_ns - t0_ns : 0);
    trace_record('X', cat, name, NULL, args, nargs, ts, dur);
}

void ompc_trace_instant(const char *cat, const char *name, const ompc_trace_arg_t *args,
                        size_t nargs)
{
    if (!atomic_load_explicit(&trace.on, memory_order_relaxed))
        return;
    trace_record('i', cat, name, NULL, args, nargs, trace_clamp_time(ompc_trace_now_ns()),
                 0);
}

void ompc_trace_counter(const char *name, const char *series, double value)
{
    if (!atomic_load_explicit(&trace.on, memory_order_relaxed) || !isfinite(value))
        return;
    uint64_t bits;
    memcpy(&bits, &value, sizeof(bits));
    trace_record('C', NULL, name, series ? series : "value", NULL, 0,
                 trace_clamp_time(ompc_trace_now_ns()), bits);
}

void ompc_trace_counts(uint64_t *events_p, uint64_t *dropped_p)
{
    uint64_t events = 0, dropped = 0;
    trace_lock();
    for (trace_thread_t *th = trace.threads; th; th = th->next) {
        trace_chunk_t *c = atomic_load_explicit(&th->head, memory_order_acquire);
        while (c) {
            trace_chunk_t *next = atomic_load_explicit(&c->next, memory_order_acquire);
            events += atomic_load_explicit(&c->n, memory_order_acquire);
            c = next;
        }
        dropped += atomic_load_explicit(&th->dropped, memory_order_relaxed);
    }
    trace_unlock();
    dropped += atomic_load_explicit(&trace.lost, memory_order_relaxed);
    if (events_p)
        *events_p = events;
    if (dropped_p)
        *dropped_p = dropped;
}

/* ----------------------------------------------------------------- blobs
 *
 * Version 2, all integers little-endian, no alignment:
 *   header  "OMPCTRCE" u32 version, i32 rank, u64 total size, u64 dropped,
 *           u64 max_events, u32 nstrings, u32 nthreads, u64 nevents,
 *           u64 nargs
 *   strings nstrings x { u32 len, len bytes }             (ids 0..n-1)
 *   threads nthreads x { u32 name string id }             (index = tid)
 *   args    nargs    x { u8 type, 3 zero bytes, u32 key string id,
 *                        u64 value }
 *   events  nevents  x { u8 ph, u8 nargs, 2 zero bytes, u32 tid, u32 cat,
 *                        u32 name, u32 args, u64 ts_ns, u64 val }
 * Absent strings are id 0xffffffff.  val is the duration for 'X', 0 for
 * 'i' and the IEEE double bits for 'C' (whose args is the series).  An
 * argument's type is an ompc_trace_type_t; its value is the number (a
 * double's IEEE bits) or, for a string, the string's id.  The events of
 * 'X' and 'i' take the arguments in order: an event's args is the index of
 * its first argument (0xffffffff when it has none), every argument belongs
 * to exactly one event.  The blob must end exactly after the last event. */

#define TRACE_MAGIC "OMPCTRCE"
#define TRACE_VERSION 2u
#define TRACE_HDR_BYTES 64u
#define TRACE_ARG_BYTES 16u
#define TRACE_EV_BYTES 36u

static void enc_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void enc_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t dec_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t dec_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A growing byte buffer that remembers an allocation failure, so encoders
 * check once at the end. */
typedef struct trace_buf {
    uint8_t *p;
    size_t len, cap;
    bool failed;
} trace_buf_t;

static uint8_t *buf_append(trace_buf_t *b, size_t n)
{
    if (b->failed)
        return NULL;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->failed = true;
                return NULL;
            }
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    uint8_t *r = b->p + b->len;
    b->len += n;
    return r;
}

/* Strings deduplicated by content across threads while serializing: the
 * string's hash maps to its id, the id to the offset of its bytes in the
 * strings section (an offset: the section moves as it grows), so strings
 * from anywhere, not only arenas, can be added.  A second string with the
 * same hash gets an id of its own each time (correct, only not shared). */
typedef struct trace_strset {
    ompc_u64map_t ids; /* trace_hash -> id */
    size_t *off;       /* per id: its bytes in out, after the length */
    uint32_t n, cap;
    trace_buf_t out;   /* the strings section */
} trace_strset_t;

static int strset_add(trace_strset_t *set, const char *s, uint32_t len, uint32_t *id_p)
{
    if (set->n >= TRACE_NONE - 1)
        return -1;
    if (set->n == set->cap) {
        uint32_t cap = set->cap ? 2 * set->cap : 1024;
        size_t *off = realloc(set->off, (size_t)cap * sizeof(*off));
        if (!off)
            return -1;
        set->off = off;
        set->cap = cap;
    }
    uint8_t *p = buf_append(&set->out, 4 + (size_t)len);
    if (!p)
        return -1;
    enc_u32(p, len);
    memcpy(p + 4, s, len);
    set->off[set->n] = (size_t)(p + 4 - set->out.p);
    *id_p = set->n++;
    return 0;
}

/* The id of the len bytes at s in *id_p; -1 on failure. */
static int strset_id(trace_strset_t *set, const char *s, uint32_t len, uint32_t *id_p)
{
    uint64_t h = trace_hash(s, len), id;
    if (ompc_u64map_get(&set->ids, h, &id)) {
        const uint8_t *q = set->out.p + set->off[id];
        if (dec_u32(q - 4) == len && memcmp(q, s, len) == 0) {
            *id_p = (uint32_t)id;
            return 0;
        }
        return strset_add(set, s, len, id_p);
    }
    if (strset_add(set, s, len, id_p) != 0 ||
        ompc_u64map_put(&set->ids, h, *id_p) != OMPC_OK)
        return -1;
    return 0;
}

/* strset_id for an arena string, which may be absent (TRACE_NONE). */
static int strset_arena_id(trace_strset_t *set, const char *s, uint32_t *id_p)
{
    if (!s) {
        *id_p = TRACE_NONE;
        return 0;
    }
    return strset_id(set, s, trace_str_len(s), id_p);
}

/* Append the arguments thread_args_store encoded at rec to out in the
 * blob's form; -1 on failure. */
static int args_encode(trace_strset_t *set, trace_buf_t *out, const char *rec)
{
    const char *p = rec, *end = rec + trace_str_len(rec);
    while (p < end) {
        uint8_t type = (uint8_t)*p++;
        uint16_t klen, slen;
        uint32_t key, str;
        uint64_t val;
        memcpy(&klen, p, 2);
        if (strset_id(set, p + 2, klen, &key) != 0)
            return -1;
        p += 2 + klen;
        if (type == OMPC_TRACE_ARG_STR) {
            memcpy(&slen, p, 2);
            if (strset_id(set, p + 2, slen, &str) != 0)
                return -1;
            val = str;
            p += 2 + slen;
        } else {
            memcpy(&val, p, 8);
            p += 8;
        }
        uint8_t *a = buf_append(out, TRACE_ARG_BYTES);
        if (!a)
            return -1;
        a[0] = type;
        a[1] = a[2] = a[3] = 0;
        enc_u32(a + 4, key);
        enc_u64(a + 8, val);
    }
    return 0;
}

static ompc_status_t trace_serialize_locked(void **blob_p, size_t *size_p)
{
    ompc_status_t st = OMPC_ERR_NOMEM;
    uint32_t nthreads = trace.next_tid;
    trace_strset_t set = {0};
    trace_buf_t evs = {0}, args_out = {0};
    uint64_t nevents = 0, nargs = 0,
             dropped = atomic_load_explicit(&trace.lost, memory_order_relaxed);
    trace_thread_t **by_tid = calloc(nthreads ? nthreads : 1, sizeof(*by_tid));
    uint32_t *name_ids = calloc(nthreads ? nthreads : 1, sizeof(*name_ids));
    if (!by_tid || !name_ids)
        goto out;
    for (trace_thread_t *th = trace.threads; th; th = th->next) {
        OMPC_ASSERT(th->tid < nthreads && !by_tid[th->tid]);
        by_tid[th->tid] = th;
    }
    for (uint32_t t = 0; t < nthreads; t++) {
        trace_thread_t *th = by_tid[t];
        OMPC_ASSERT(th);
        name_ids[t] = TRACE_NONE;
        if (th->name[0] &&
            strset_id(&set, th->name, (uint32_t)strlen(th->name), &name_ids[t]) != 0)
            goto out;
        dropped += atomic_load_explicit(&th->dropped, memory_order_relaxed);
        trace_chunk_t *c = atomic_load_explicit(&th->head, memory_order_acquire);
        while (c) {
            trace_chunk_t *next = atomic_load_explicit(&c->next, memory_order_acquire);
            size_t n = atomic_load_explicit(&c->n, memory_order_acquire);
            for (size_t i = 0; i < n; i++) {
                const trace_ev_t *e = &c->ev[i];
                uint32_t cat, name, args = TRACE_NONE;
                if (strset_arena_id(&set, e->cat, &cat) != 0 ||
                    strset_arena_id(&set, e->name, &name) != 0)
                    goto out;
                if (e->ph == 'C') {
                    if (strset_arena_id(&set, e->args, &args) != 0)
                        goto out;
                } else if (e->nargs) {
                    /* Indices are u32 and TRACE_NONE means none. */
                    if (nargs + e->nargs >= TRACE_NONE ||
                        args_encode(&set, &args_out, e->args) != 0)
                        goto out;
                    args = (uint32_t)nargs;
                    nargs += e->nargs;
                }
                uint8_t *p = buf_append(&evs, TRACE_EV_BYTES);
                if (!p)
                    goto out;
                p[0] = e->ph;
                p[1] = e->nargs;
                p[2] = p[3] = 0;
                enc_u32(p + 4, t);
                enc_u32(p + 8, cat);
                enc_u32(p + 12, name);
                enc_u32(p + 16, args);
                enc_u64(p + 20, e->ts);
                enc_u64(p + 28, e->val);
                nevents++;
            }
            c = next;
        }
    }
    if (set.out.failed || evs.failed || args_out.failed)
        goto out;
    size_t size = TRACE_HDR_BYTES + set.out.len + 4 * (size_t)nthreads + args_out.len +
                  evs.len;
    uint8_t *blob = malloc(size);
    if (!blob)
        goto out;
    memcpy(blob, TRACE_MAGIC, 8);
    enc_u32(blob + 8, TRACE_VERSION);
    enc_u32(blob + 12, (uint32_t)trace.rank);
    enc_u64(blob + 16, size);
    enc_u64(blob + 24, dropped);
    enc_u64(blob + 32, atomic_load_explicit(&trace.max_events, memory_order_relaxed));
    enc_u32(blob + 40, set.n);
    enc_u32(blob + 44, nthreads);
    enc_u64(blob + 48, nevents);
    enc_u64(blob + 56, nargs);
    uint8_t *p = blob + TRACE_HDR_BYTES;
    if (set.out.len)
        memcpy(p, set.out.p, set.out.len);
    p += set.out.len;
    for (uint32_t t = 0; t < nthreads; t++, p += 4)
        enc_u32(p, name_ids[t]);
    if (args_out.len)
        memcpy(p, args_out.p, args_out.len);
    p += args_out.len;
    if (evs.len)
        memcpy(p, evs.p, evs.len);
    *blob_p = blob;
    *size_p = size;
    st = OMPC_OK;
out:
    free(evs.p);
    free(args_out.p);
    free(set.out.p);
    free(set.off);
    ompc_u64map_fini(&set.ids);
    free(name_ids);
    free(by_tid);
    return st;
}

ompc_status_t ompc_trace_serialize(void **blob_p, size_t *size_p)
{
    if (!blob_p || !size_p)
        return OMPC_ERR_INVALID;
    if (!atomic_load_explicit(&trace.on, memory_order_acquire))
        return OMPC_ERR_INVALID;
    trace_lock();
    ompc_status_t st = trace_serialize_locked(blob_p, size_p);
    trace_unlock();
    return st;
}

/* A blob checked by blob_parse; points into the blob's bytes. */
typedef struct trace_blob {
    int rank;
    uint64_t dropped, max_events;
    uint32_t nstrings, nthreads;
    uint64_t nevents, nargs;
    const uint8_t **str;
    uint32_t *str_len;
    const uint8_t *threads;
    const uint8_t *args;
    const uint8_t *events;
    int64_t offset;
    int64_t ts_min, end_max; /* raw; meaningful when nevents > 0 */
    const char *why;         /* what was wrong, after OMPC_ERR_PROTOCOL */
} trace_blob_t;

static void blob_free(trace_blob_t *b)
{
    free(b->str);
    free(b->str_len);
    b->str = NULL;
    b->str_len = NULL;
}

static bool blob_id_ok(const trace_blob_t *b, uint32_t id, bool optional)
{
    return id < b->nstrings || (optional && id == TRACE_NONE);
}

static ompc_status_t blob_bad(trace_blob_t *b, const char *why)
{
    blob_free(b);
    b->why = why;
    return OMPC_ERR_PROTOCOL;
}

/* Check every field before anything trusts it: any byte pattern must end
 * in OMPC_ERR_PROTOCOL, not in a read out of bounds. */
static ompc_status_t blob_parse(const void *data, size_t size, trace_blob_t *b)
{
    *b = (trace_blob_t){0};
    const uint8_t *p = data;
    if (!p || size < TRACE_HDR_BYTES)
        return blob_bad(b, "shorter than the header");
    if (memcmp(p, TRACE_MAGIC, 8) != 0)
        return blob_bad(b, "not a trace blob (bad magic)");
    if (dec_u32(p + 8) != TRACE_VERSION)
        return blob_bad(b, "unknown version");
    int32_t rank = (int32_t)dec_u32(p + 12);
    if (rank < 0)
        return blob_bad(b, "negative rank");
    if (dec_u64(p + 16) != size)
        return blob_bad(b, "size differs from the size in the header");
    b->rank = rank;
    b->dropped = dec_u64(p + 24);
    b->max_events = dec_u64(p + 32);
    b->nstrings = dec_u32(p + 40);
    b->nthreads = dec_u32(p + 44);
    b->nevents = dec_u64(p + 48);
    b->nargs = dec_u64(p + 56);
    size_t off = TRACE_HDR_BYTES;

    /* Each string takes at least 4 bytes: bounds the arrays below by the
     * blob's size before allocating them. */
    if (b->nstrings == TRACE_NONE || b->nstrings > (size - off) / 4)
        return blob_bad(b, "string count exceeds the blob");
    size_t n = b->nstrings ? b->nstrings : 1;
    b->str = malloc(n * sizeof(*b->str));
    b->str_len = malloc(n * sizeof(*b->str_len));
    if (!b->str || !b->str_len) {
        blob_free(b);
        return OMPC_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < b->nstrings; i++) {
        if (size - off < 4)
            return blob_bad(b, "string table truncated");
        uint32_t len = dec_u32(p + off);
        off += 4;
        if (len > size - off)
            return blob_bad(b, "string runs past the end");
        b->str[i] = p + off;
        b->str_len[i] = len;
        off += len;
    }

    if (b->nthreads > (size - off) / 4)
        return blob_bad(b, "thread table truncated");
    b->threads = p + off;
    for (uint32_t t = 0; t < b->nthreads; t++)
        if (!blob_id_ok(b, dec_u32(b->threads + 4 * (size_t)t), true))
            return blob_bad(b, "thread name is not a string id");
    off += 4 * (size_t)b->nthreads;

    if (b->nargs > (size - off) / TRACE_ARG_BYTES)
        return blob_bad(b, "argument table truncated");
    b->args = p + off;
    for (uint64_t i = 0; i < b->nargs; i++) {
        const uint8_t *a = b->args + i * TRACE_ARG_BYTES;
        uint64_t val = dec_u64(a + 8);
        if (a[1] || a[2] || a[3])
            return blob_bad(b, "non-zero padding in an argument");
        if (!blob_id_ok(b, dec_u32(a + 4), false))
            return blob_bad(b, "argument key is not a string id");
        if (a[0] > OMPC_TRACE_ARG_STR)
            return blob_bad(b, "unknown argument type");
        if (a[0] == OMPC_TRACE_ARG_STR && val >= b->nstrings)
            return blob_bad(b, "argument value is not a string id");
    }
    off += (size_t)b->nargs * TRACE_ARG_BYTES;

    if ((size - off) % TRACE_EV_BYTES != 0 || b->nevents != (size - off) / TRACE_EV_BYTES)
        return blob_bad(b, "event count does not match the size");
    b->events = p + off;
    b->ts_min = TRACE_TIME_MAX;
    b->end_max = 0;
    uint64_t next_arg = 0;
    for (uint64_t i = 0; i < b->nevents; i++) {
        const uint8_t *e = b->events + i * TRACE_EV_BYTES;
        uint8_t ph = e[0], nargs = e[1];
        uint32_t tid = dec_u32(e + 4), name = dec_u32(e + 12);
        uint32_t cat = dec_u32(e + 8), args = dec_u32(e + 16);
        uint64_t ts = dec_u64(e + 20), val = dec_u64(e + 28);
        if (e[2] || e[3])
            return blob_bad(b, "non-zero padding in an event");
        if (tid >= b->nthreads)
            return blob_bad(b, "event on an unknown thread");
        if (!blob_id_ok(b, cat, true) || !blob_id_ok(b, name, false))
            return blob_bad(b, "event refers to a missing string");
        if (ph == 'C') {
            if (nargs || !blob_id_ok(b, args, false))
                return blob_bad(b, "counter without a series");
        } else if (nargs == 0) {
            if (args != TRACE_NONE)
                return blob_bad(b, "event without arguments refers to some");
        } else {
            if (args != next_arg || nargs > b->nargs - next_arg)
                return blob_bad(b, "event arguments out of order or missing");
            next_arg += nargs;
        }
        if (ts > (uint64_t)TRACE_TIME_MAX)
            return blob_bad(b, "timestamp out of range");
        uint64_t end = ts;
        if (ph == 'X') {
            if (val > (uint64_t)TRACE_TIME_MAX)
                return blob_bad(b, "duration out of range");
            end += val;
        } else if (ph == 'i') {
            if (val != 0)
                return blob_bad(b, "instant event with a value");
        } else if (ph == 'C') {
            double v;
            memcpy(&v, &val, sizeof(v));
            if (!isfinite(v))
                return blob_bad(b, "counter value is not finite");
        } else {
            return blob_bad(b, "unknown event type");
        }
        if ((int64_t)ts < b->ts_min)
            b->ts_min = (int64_t)ts;
        if ((int64_t)end > b->end_max)
            b->end_max = (int64_t)end;
    }
    if (next_arg != b->nargs)
        return blob_bad(b, "arguments that no event has");
    return OMPC_OK;
}

ompc_status_t ompc_trace_blob_rank(const void *blob, size_t size, int *rank_p)
{
    trace_blob_t b;
    ompc_status_t st = blob_parse(blob, size, &b);
    if (st != OMPC_OK)
        return st;
    blob_free(&b);
    if (rank_p)
        *rank_p = b.rank;
    return OMPC_OK;
}

/* ------------------------------------------------------------------ JSON */

/* Length of the well-formed UTF-8 sequence at s (n bytes available), or 0:
 * overlong forms, surrogates and code points past U+10FFFF are not. */
static size_t utf8_len(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static bool json_plain(uint8_t c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* Escape the character at s (n bytes available) into out (room for 6):
 * returns the bytes written, *used_p the bytes consumed. */
static size_t json_unit(const uint8_t *s, size_t n, char *out, size_t *used_p)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t c = s[0];
    char e = 0;
    *used_p = 1;
    if (json_plain(c)) {
        out[0] = (char)c;
        return 1;
    }
    switch (c) {
    case '"': e = '"'; break;
    case '\\': e = '\\'; break;
    case '\n': e = 'n'; break;
    case '\r': e = 'r'; break;
    case '\t': e = 't'; break;
    case '\b': e = 'b'; break;
    case '\f': e = 'f'; break;
    default: break;
    }
    if (e) {
        out[0] = '\\';
        out[1] = e;
        return 2;
    }
    if (c < 0x20) {
        memcpy(out, "\\u00", 4);
        out[4] = hex[c >> 4];
        out[5] = hex[c & 15];
        return 6;
    }
    size_t len = utf8_len(s, n);
    if (len) {
        memcpy(out, s, len);
        *used_p = len;
        return len;
    }
    memcpy(out, "\\ufffd", 6);
    return 6;
}

/* The file goes through a private buffer and write(2): stdio's per-call
 * locking and format parsing cost more than everything else put together. */
typedef struct trace_out {
    int fd;
    int err; /* first errno; later output is discarded */
    bool first;
    size_t len;
    char buf[1 << 16];
} trace_out_t;

static void out_flush(trace_out_t *w)
{
    size_t off = 0;
    while (off < w->len && !w->err) {
        ssize_t n = write(w->fd, w->buf + off, w->len - off);
        if (n < 0) {
            if (errno != EINTR)
                w->err = errno;
            continue;
        }
        off += (size_t)n;
    }
    w->len = 0;
}

static void out_bytes(trace_out_t *w, const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        if (w->len == sizeof(w->buf))
            out_flush(w);
        size_t k = sizeof(w->buf) - w->len;
        if (k > n)
            k = n;
        memcpy(w->buf + w->len, s, k);
        w->len += k;
        s += k;
        n -= k;
    }
}

#define OUT_LIT(w, lit) out_bytes((w), (lit), sizeof(lit) - 1)

static void out_u64(trace_out_t *w, uint64_t v)
{
    char tmp[20];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    out_bytes(w, tmp + i, sizeof(tmp) - i);
}

/* Microseconds with three decimals, from integer nanoseconds: exact. */
static void out_us(trace_out_t *w, int64_t ns)
{
    OMPC_ASSERT(ns >= 0);
    out_u64(w, (uint64_t)ns / 1000);
    char frac[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
                    (char)('0' + ns % 10)};
    out_bytes(w, frac, sizeof(frac));
}

static void out_str(trace_out_t *w, const uint8_t *s, size_t len)
{
    OUT_LIT(w, "\"");
    size_t i = 0;
    while (i < len) {
        size_t run = i;
        while (run < len && json_plain(s[run]))
            run++;
        if (run > i) {
            out_bytes(w, s + i, run - i);
            i = run;
            continue;
        }
        char esc[8];
        size_t used, n = json_unit(s + i, len - i, esc, &used);
        out_bytes(w, esc, n);
        i += used;
    }
    OUT_LIT(w, "\"");
}

static void out_blob_str(trace_out_t *w, const trace_blob_t *b, uint32_t id)
{
    out_str(w, b->str[id], b->str_len[id]);
}

/* Starts an event: events are separated by ",\n". */
static void out_open(trace_out_t *w, const char *ph, int pid, uint32_t tid)
{
    if (w->first)
        OUT_LIT(w, "\n{\"ph\":\"");
    else
        OUT_LIT(w, ",\n{\"ph\":\"");
    w->first = false;
    out_bytes(w, ph, strlen(ph));
    OUT_LIT(w, "\",\"pid\":");
    out_u64(w, (uint64_t)pid);
    OUT_LIT(w, ",\"tid\":");
    out_u64(w, tid);
}

/* A form that round-trips every double; null for the ones
 * JSON cannot spell. */
static void out_f64(trace_out_t *w, uint64_t bits)
{
    double v;
    char num[32];
    memcpy(&v, &bits, sizeof(v));
    if (!isfinite(v)) {
        OUT_LIT(w, "null");
        return;
    }
    int n = snprintf(num, sizeof(num), "%.17g", v);
    out_bytes(w, num, (size_t)n);
}

/* The n arguments from index first, which blob_parse checked. */
static void out_args(trace_out_t *w, const trace_blob_t *b, uint32_t first, uint32_t n)
{
    OUT_LIT(w, ",\"args\":{");
    for (uint32_t k = 0; k < n; k++) {
        const uint8_t *a = b->args + ((size_t)first + k) * TRACE_ARG_BYTES;
        uint64_t val = dec_u64(a + 8);
        if (k)
            OUT_LIT(w, ",");
        out_blob_str(w, b, dec_u32(a + 4));
        OUT_LIT(w, ":");
        switch (a[0]) {
        case OMPC_TRACE_ARG_U64: out_u64(w, val); break;
        case OMPC_TRACE_ARG_I64:
            if ((int64_t)val < 0) {
                OUT_LIT(w, "-");
                val = 0 - val;
            }
            out_u64(w, val);
            break;
        case OMPC_TRACE_ARG_F64: out_f64(w, val); break;
        default: out_blob_str(w, b, (uint32_t)val); break;
        }
    }
    OUT_LIT(w, "}");
}

static void out_blob(trace_out_t *w, const trace_blob_t *b, int64_t base)
{
    int r = b->rank;
    char label[64];
    int n = snprintf(label, sizeof(label), "rank %d (%s)", r, r == 0 ? "head" : "worker");
    out_open(w, "M", r, 0);
    OUT_LIT(w, ",\"name\":\"process_name\",\"args\":{\"name\":");
    out_str(w, (const uint8_t *)label, (size_t)n);
    OUT_LIT(w, "}}");
    out_open(w, "M", r, 0);
    OUT_LIT(w, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":");
    out_u64(w, (uint64_t)r);
    OUT_LIT(w, "}}");
    for (uint32_t t = 0; t < b->nthreads; t++) {
        uint32_t id = dec_u32(b->threads + 4 * (size_t)t);
        out_open(w, "M", r, t);
        OUT_LIT(w, ",\"name\":\"thread_name\",\"args\":{\"name\":");
        if (id == TRACE_NONE) {
            n = snprintf(label, sizeof(label), "thread %" PRIu32, t);
            out_str(w, (const uint8_t *)label, (size_t)n);
        } else {
            out_blob_str(w, b, id);
        }
        OUT_LIT(w, "}}");
        out_open(w, "M", r, t);
        OUT_LIT(w, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
        out_u64(w, t);
        OUT_LIT(w, "}}");
    }
    for (uint64_t i = 0; i < b->nevents; i++) {
        const uint8_t *e = b->events + i * TRACE_EV_BYTES;
        char ph[2] = {(char)e[0], '\0'};
        uint8_t nargs = e[1];
        uint32_t tid = dec_u32(e + 4), cat = dec_u32(e + 8);
        uint32_t name = dec_u32(e + 12), args = dec_u32(e + 16);
        uint64_t ts = dec_u64(e + 20), val = dec_u64(e + 28);
        out_open(w, ph, r, tid);
        OUT_LIT(w, ",\"ts\":");
        out_us(w, (int64_t)ts + b->offset - base);
        if (ph[0] == 'X') {
            OUT_LIT(w, ",\"dur\":");
            out_us(w, (int64_t)val);
        } else if (ph[0] == 'i') {
            OUT_LIT(w, ",\"s\":\"t\"");
        }
        if (cat != TRACE_NONE) {
            OUT_LIT(w, ",\"cat\":");
            out_blob_str(w, b, cat);
        }
        OUT_LIT(w, ",\"name\":");
        out_blob_str(w, b, name);
        if (ph[0] == 'C') {
            OUT_LIT(w, ",\"args\":{");
            out_blob_str(w, b, args);
            OUT_LIT(w, ":");
            out_f64(w, val);
            OUT_LIT(w, "}");
        } else if (nargs) {
            out_args(w, b, args, nargs);
        }
        OUT_LIT(w, "}");
    }
    if (b->dropped) {
        out_open(w, "i", r, 0);
        OUT_LIT(w, ",\"s\":\"p\",\"ts\":");
        out_us(w, b->nevents ? b->end_max + b->offset - base : 0);
        OUT_LIT(w, ",\"cat\":\"trace\",\"name\":\"trace events dropped\","
                   "\"args\":{\"dropped\":");
        out_u64(w, b->dropped);
        OUT_LIT(w, ",\"max_events\":");
        out_u64(w, b->max_events);
        OUT_LIT(w, "}}");
    }
}

static ompc_status_t trace_write_file(const char *path, trace_blob_t *b, int n,
                                      int64_t base)
{
    trace_out_t *w = malloc(sizeof(*w));
    if (!w)
        return OMPC_ERR_NOMEM;
    ompc_file_out_t o;
    if (ompc_file_replace_begin(&o, path) != OMPC_OK) {
        ompc_error("trace: %s", o.why);
        free(w);
        return OMPC_ERR_INVALID;
    }
    w->fd = o.fd;
    w->err = 0;
    w->first = true;
    w->len = 0;
    OUT_LIT(w, "{\"traceEvents\":[");
    for (int i = 0; i < n; i++)
        out_blob(w, &b[i], base);
    OUT_LIT(w, "\n],\"displayTimeUnit\":\"ms\"}\n");
    out_flush(w);
    int err = w->err;
    free(w);
    if (ompc_file_replace_commit(&o, err) != OMPC_OK) {
        ompc_error("trace: %s", o.why);
        return OMPC_ERR_INVALID;
    }
    return OMPC_OK;
}

ompc_status_t ompc_trace_write(const char *path, const void *const *blobs,
                               const size_t *sizes, const int64_t *offsets_ns, int nblobs)
{
    if (!path || !path[0] || nblobs < 0 || (nblobs > 0 && (!blobs || !sizes)))
        return OMPC_ERR_INVALID;
    for (int i = 0; offsets_ns && i < nblobs; i++) {
        if (offsets_ns[i] > TRACE_TIME_MAX || offsets_ns[i] < -TRACE_TIME_MAX) {
            ompc_error("trace: clock offset %" PRId64 " ns of blob %d is out of "
                       "range",
                       offsets_ns[i], i);
            return OMPC_ERR_INVALID;
        }
    }
    void *own = NULL;
    size_t own_size = 0;
    ompc_status_t st = ompc_trace_serialize(&own, &own_size);
    if (st != OMPC_OK)
        return st;
    int n = nblobs + 1, parsed = 0;
    trace_blob_t *b = calloc((size_t)n, sizeof(*b));
    if (!b) {
        st = OMPC_ERR_NOMEM;
        goto out;
    }
    for (; parsed < n; parsed++) {
        const void *data = parsed ? blobs[parsed - 1] : own;
        size_t size = parsed ? sizes[parsed - 1] : own_size;
        st = blob_parse(data, size, &b[parsed]);
        if (st != OMPC_OK) {
            if (st == OMPC_ERR_PROTOCOL)
                ompc_error("trace: blob %d (%zu bytes) is malformed: %s", parsed - 1,
                           size, b[parsed].why);
            goto out;
        }
        b[parsed].offset = parsed && offsets_ns ? offsets_ns[parsed - 1] : 0;
        for (int j = 0; j < parsed; j++) {
            if (b[j].rank == b[parsed].rank) {
                ompc_error("trace: two blobs of rank %d", b[j].rank);
                parsed++;
                st = OMPC_ERR_PROTOCOL;
                goto out;
            }
        }
    }
    /* Times in the file count from the earliest event of any rank. */
    int64_t base = 0;
    bool any = false;
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        total += b[i].nevents;
        if (b[i].dropped)
            ompc_warn("trace: rank %d dropped %" PRIu64 " events (limit %" PRIu64
                      " per rank)",
                      b[i].rank, b[i].dropped, b[i].max_events);
        if (!b[i].nevents)
            continue;
        int64_t t = b[i].ts_min + b[i].offset;
        if (!any || t < base)
            base = t;
        any = true;
    }
    st = trace_write_file(path, b, n, base);
    if (st == OMPC_OK)
        ompc_info("trace: wrote %s: %" PRIu64 " events from %d ranks", path, total, n);
out:
    for (int i = 0; b && i < parsed; i++)
        blob_free(&b[i]);
    free(b);
    free(own);
    return st;
}
