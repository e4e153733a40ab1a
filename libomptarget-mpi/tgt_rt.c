/* The runtime's state (tgt_rt) and the small helpers every file of
 * libomptarget-mpi/ uses: source locations, user-error messages, growing
 * arrays.  It calls no other file of the library, so that all of them may
 * call it. */
#define _GNU_SOURCE
#include "tgt_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

tgt_rt_t *tgt_rt;

bool tgt_ready(void) { return tgt_rt != NULL; }

/* Each thread that makes offloading calls counts them in a slot of its
 * own, on a cache line of its own: one counter shared by all threads was
 * two atomic operations per call on a line every recording thread wrote.
 * Slots are listed in tgt_rt->call_slots (pushed, never removed, so the
 * shutting-down thread may walk the list while threads join it); a thread
 * that ends frees its slot for the next new thread (call_key's
 * destructor), so the list grows with the threads alive at once. */
struct tgt_call_slot {
    _Atomic int64_t depth;    /* calls in progress; written by its owner */
    _Atomic bool taken;       /* owned by a live thread */
    bool closing_self;        /* owner only: it is shutting down */
    struct tgt_call_slot *next; /* set before it is published */
} __attribute__((aligned(64)));

static _Thread_local tgt_call_slot_t *my_slot;
static pthread_key_t call_key;
static pthread_once_t call_once = PTHREAD_ONCE_INIT;

/* At the thread's end (its calls have all returned). */
static void call_slot_free(void *arg)
{
    tgt_call_slot_t *s = arg;
    my_slot = NULL;
    atomic_store(&s->taken, false);
}

static void call_key_make(void)
{
    if (pthread_key_create(&call_key, call_slot_free) != 0)
        ompc_fatal("cannot create the offloading threads' key");
}

static tgt_call_slot_t *call_slot_take(void)
{
    pthread_once(&call_once, call_key_make);
    tgt_call_slot_t *s;
    for (s = atomic_load(&tgt_rt->call_slots); s; s = s->next) {
        bool no = false;
        if (!atomic_load_explicit(&s->taken, memory_order_relaxed) &&
            atomic_compare_exchange_strong(&s->taken, &no, true))
            break;
    }
    if (!s) {
        s = aligned_alloc(64, sizeof(*s));
        if (!s)
            ompc_fatal("out of memory for an offloading thread's slot");
        memset(s, 0, sizeof(*s));
        atomic_init(&s->taken, true);
        tgt_call_slot_t *head = atomic_load(&tgt_rt->call_slots);
        do
            s->next = head;
        while (!atomic_compare_exchange_weak(&tgt_rt->call_slots, &head, s));
    }
    s->closing_self = false;
    pthread_setspecific(call_key, s);
    my_slot = s;
    return s;
}

tgt_call_slot_t *tgt_call_enter(void)
{
    tgt_call_slot_t *s = my_slot;
    if (!s)
        s = call_slot_take();
    /* Counted first, checked second; tgt_calls_close marks first and reads
     * the counts second: one of the two sees the other (both sequentially
     * consistent).  A slot taken after the closer walked the list was
     * published after the mark, so its owner sees the mark. */
    int64_t d = atomic_load_explicit(&s->depth, memory_order_relaxed);
    atomic_store(&s->depth, d + 1);
    if (d > 0 || s->closing_self ||
        !atomic_load_explicit(&tgt_rt->closing, memory_order_seq_cst))
        return s;
    atomic_store(&s->depth, d);
    for (;;)
        pause();
}

void tgt_call_leave(tgt_call_slot_t *s)
{
    int64_t d = atomic_load_explicit(&s->depth, memory_order_relaxed);
    atomic_store_explicit(&s->depth, d - 1, memory_order_release);
}

/* Calls in progress on threads other than the caller's. */
static int64_t calls_elsewhere(const tgt_call_slot_t *self)
{
    int64_t n = 0;
    for (tgt_call_slot_t *s = atomic_load(&tgt_rt->call_slots); s; s = s->next)
        if (s != self)
            n += atomic_load(&s->depth);
    return n;
}

void tgt_calls_close(void)
{
    tgt_call_slot_t *self = my_slot ? my_slot : call_slot_take();
    self->closing_self = true;
    atomic_store(&tgt_rt->closing, true);
    double limit_s = (double)ompc_config_get()->peer_timeout_ms / 1000.0;
    uint64_t t0 = ompc_now_ns();
    long nap_us = 50;
    int64_t n;
    while ((n = calls_elsewhere(self)) > 0) {
        if ((double)(ompc_now_ns() - t0) > limit_s * 1e9) {
            ompc_warn("the program ends while %lld offloading call(s) on other "
                      "threads have not returned for %.0f s (OMPC_PEER_TIMEOUT); "
                      "shutting down anyway",
                      (long long)n, limit_s);
            return;
        }
        struct timespec ts = {0, nap_us * 1000};
        nanosleep(&ts, NULL);
        nap_us = nap_us < 5000 ? nap_us * 2 : 5000;
    }
}

const char *tgt_fmt_(const char *fmt, ...)
{
    static _Thread_local char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return buf;
}

const char *tgt_loc(const void *ident, char *buf, size_t cap)
{
    const tgt_ident_t *id = ident;
    if (!id || !id->psource || strncmp(id->psource, ";unknown", 8) == 0) {
        snprintf(buf, cap, "unknown location (compile with -g for one)");
        return buf;
    }
    /* ";file;function;line;column;;" */
    char file[160] = "", func[96] = "";
    int line = 0, col = 0;
    if (sscanf(id->psource, ";%159[^;];%95[^;];%d;%d", file, func, &line, &col) >= 3)
        snprintf(buf, cap, "%s:%d:%d (in %s)", file, line, col, func);
    else
        snprintf(buf, cap, "%s", id->psource);
    return buf;
}

void *tgt_rt_allgather(const void *mine, size_t len, const char *what)
{
    void *all = calloc((size_t)tgt_rt->size, len);
    if (!all)
        ompc_fatal("out of memory exchanging %s", what);
    if (ev_coll_allgather(tgt_rt->ev, mine, len, all) != OMPC_OK)
        ompc_fatal("cannot exchange %s at start-up", what);
    return all;
}

void *tgt_grow(void *arr, size_t *cap, size_t n, size_t elem, const char *what)
{
    if (n < *cap)
        return arr;
    size_t c = *cap ? 2 * *cap : 16;
    void *na = realloc(arr, c * elem);
    if (!na)
        ompc_fatal("out of memory: %s", what);
    *cap = c;
    return na;
}
