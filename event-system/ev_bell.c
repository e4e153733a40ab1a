/* Doorbells: waking an idle rank's gate thread when an event reaches it.
 *
 * MPI has no blocking wait that leaves the core alone (MPICH polls inside
 * MPI_Wait), so an idle gate thread naps between polls, up to
 * OMPC_POLL_MAX_US.  Every message that reached a napping rank used to wait
 * out the rest of its nap, and a fine-grained task crosses several ranks
 * (kernel done -> head, head -> exchange source and target, head ->
 * executor): most of such a task's time went to naps.
 *
 * Now a napping gate sleeps in ppoll() on three descriptors: an eventfd its
 * own threads write (work pushed to the inbox), an abstract AF_UNIX datagram
 * socket that peers on the same host send to, and a UDP socket for peers on
 * other hosts.  A sender rings after posting a message unless it rang the
 * peer within the last half of the peer's OMPC_SPIN_US (every rank tells
 * the others its own at start-up), or heard from it in that time in a
 * message marked EV_F_HOT (sent while some thread of the peer polled MPI,
 * with at least 3/4 of its spin window ahead): such a peer still polls and
 * sees the message without help, and a stream of messages costs no system
 * call each.
 *
 * Peers on the same host also share a nap word per rank (OMPC_DOORBELL_AWAKE,
 * memory from MPI_Win_allocate_shared).  A crowded rank polls no spin window,
 * so the rules above rang it for every message, although its gate is often
 * awake (running a kernel, or between passes) and would see the message
 * anyway: each such ring is a sendto on the sender and a datagram to drain
 * on the receiver (docs/performance.md, "nap flags").  The word's low bit
 * says the gate may sleep; the rest counts the rings senders left out.  A
 * sender posts its message, then either counts itself into the word (bit
 * clear: no ring) or rings (bit set), in one compare-and-swap.  A gate
 * about to sleep sets the bit with one atomic or: if the count moved since
 * its last look, a message may have been posted after its last probe, and
 * it polls EV_WAKE_PASSES more times first (the passes that also cover a
 * ring arriving before MPI shows its message); it clears the bit once
 * woken or busy.  Polling again only when a ring was left out keeps an
 * idle-to-idle exchange as cheap as before.
 *
 * A ring is a hint.  A lost or refused datagram (peer in another network
 * namespace, no route, buffer full) costs at most one nap, as before.
 *
 * The same sockets carry liveness pings and pongs (ev_core.c), out of
 * MPI's band: a rank whose MPI sends wait behind a stopped peer must
 * still be heard.  Such a datagram carries the job's id, and one that
 * does not match, or any other stranger, is a mere ring. */
#define _GNU_SOURCE
#include "ev_internal.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* What each rank publishes at start-up. */
typedef struct bell_card {
    char host[72];
    uint32_t ip;   /* network order; 0: no UDP bell */
    uint16_t port; /* network order */
    uint16_t pad;
    uint64_t spin_us; /* how long its threads poll (0: they sleep at once) */
} bell_card_t;

/* A liveness datagram (a ring is a single byte). */
#define BELL_LIVE_MAGIC 0x6f6d7063u /* "ompc" */
typedef struct bell_live {
    uint32_t magic;
    uint32_t pong;  /* 0: ping, 1: pong */
    int32_t rank;   /* sender */
    uint32_t pad;
    uint64_t job;
} bell_live_t;

static int bell_socket(int domain, int type)
{
    return socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

static void bell_local_addr(ev_bell_peer_t *p, uint64_t job, int rank)
{
    struct sockaddr_un *a = (struct sockaddr_un *)&p->addr;
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    /* Abstract name (leading NUL): no file to clean up after a crash. */
    int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "ompc-bell-%016llx-%d",
                     (unsigned long long)job, rank);
    p->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* This host's IPv4 address as others would reach it: the first address
 * its name resolves to outside 127/8 (0 if none). */
static uint32_t bell_host_ip(const char *host)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return 0;
    uint32_t ip = 0;
    for (struct addrinfo *r = res; r && !ip; r = r->ai_next) {
        uint32_t a = ((struct sockaddr_in *)r->ai_addr)->sin_addr.s_addr;
        if ((ntohl(a) >> 24) != 127)
            ip = a;
    }
    freeaddrinfo(res);
    return ip;
}

/* A flag word per rank, a cache line apart: each is written by its own
 * gate, and a shared line would make every nap a coherence miss for the
 * other gates' flags. */
#define BELL_NAP_STRIDE 64

/* Collective over ctx->coll: maps the nap flags of the ranks that share
 * this host and have flags on (cards: every rank's card).  Every rank
 * takes part whatever its own settings; one that cannot map them (or has
 * them off) leaves its word set, so its peers ring it as before. */
static void bell_nap_init(ev_ctx_t *ctx, const bell_card_t *cards, bool want)
{
    ev_bell_t *b = &ctx->bell;
    b->nap_win = MPI_WIN_NULL;
    MPI_Comm local;
    EV_CHECK_MPI(MPI_Comm_split_type(ctx->coll, MPI_COMM_TYPE_SHARED, ctx->rank,
                                     MPI_INFO_NULL, &local),
                 "MPI_Comm_split_type");
    int n = 0, me = 0;
    MPI_Comm_size(local, &n);
    MPI_Comm_rank(local, &me);
    int *ranks = malloc((size_t)n * sizeof(int));
    int *wants = malloc((size_t)n * sizeof(int));
    int w = want;
    if (!ranks || !wants)
        ompc_fatal("out of memory setting up the nap flags");
    EV_CHECK_MPI(MPI_Allgather(&ctx->rank, 1, MPI_INT, ranks, 1, MPI_INT, local),
                 "MPI_Allgather");
    EV_CHECK_MPI(MPI_Allgather(&w, 1, MPI_INT, wants, 1, MPI_INT, local),
                 "MPI_Allgather");
    /* A failure here costs only the saving: ask for an error code, not an
     * abort. */
    MPI_Comm_set_errhandler(local, MPI_ERRORS_RETURN);
    void *base = NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    int rc = MPI_Win_allocate_shared(BELL_NAP_STRIDE, 1, info, local, &base, &b->nap_win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        ompc_debug("nap flags: no shared memory between this host's ranks");
        b->nap_win = MPI_WIN_NULL;
    }
    if (b->nap_win != MPI_WIN_NULL) {
        b->my_nap = base;
        /* Set until the gate first polls: a peer rings a rank not yet
         * serving. */
        atomic_init(b->my_nap, 1);
    }
    /* Every word is initialised before any rank reads one. */
    EV_CHECK_MPI(MPI_Barrier(local), "MPI_Barrier");
    if (b->nap_win != MPI_WIN_NULL && want) {
        b->nap = calloc((size_t)ctx->size, sizeof(*b->nap));
        if (!b->nap)
            ompc_fatal("out of memory setting up the nap flags");
        for (int i = 0; i < n; i++) {
            MPI_Aint size;
            int disp;
            void *p = NULL;
            int r = ranks[i];
            if (i == me || !wants[i] || r < 0 || r >= ctx->size ||
                strcmp(cards[r].host, cards[ctx->rank].host) != 0 ||
                MPI_Win_shared_query(b->nap_win, i, &size, &disp, &p) != MPI_SUCCESS ||
                !p || size < (MPI_Aint)sizeof(uint32_t))
                continue;
            b->nap[r] = p;
        }
    }
    if (!want)
        b->my_nap = NULL; /* stays set: peers ring this rank */
    free(ranks);
    free(wants);
    MPI_Comm_free(&local);
}

ompc_status_t ev_bell_init(ev_ctx_t *ctx)
{
    ev_bell_t *b = &ctx->bell;
    int n = ctx->size;
    b->fd_local = b->fd_udp = -1;
    b->nap_win = MPI_WIN_NULL;
    b->fd_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    b->peers = calloc((size_t)n, sizeof(*b->peers));
    b->heard = calloc((size_t)n, sizeof(*b->heard));
    b->rung = calloc((size_t)n, sizeof(*b->rung));
    b->alive = calloc((size_t)n, sizeof(*b->alive));
    bell_card_t *cards = calloc((size_t)n, sizeof(*cards));
    if (b->fd_wake < 0 || !b->peers || !b->heard || !b->rung || !b->alive || !cards) {
        free(cards);
        return OMPC_ERR_NOMEM;
    }
    for (int r = 0; r < n; r++) {
        b->peers[r].fd = -1;
        atomic_init(&b->heard[r], 0);
        atomic_init(&b->rung[r], 0);
        atomic_init(&b->alive[r], 0);
    }
    /* The collectives below run on every rank whatever its own setting, so
     * that ranks started with different OMPC_DOORBELL values cannot hang. */
    uint64_t job = ((uint64_t)getpid() << 32) ^ ompc_now_ns();
    EV_CHECK_MPI(MPI_Bcast(&job, 1, MPI_UINT64_T, 0, ctx->coll), "MPI_Bcast");
    b->job = job;
    bell_card_t me = {.spin_us = ctx->spin_us};
    if (gethostname(me.host, sizeof(me.host) - 1) != 0)
        snprintf(me.host, sizeof(me.host), "unknown-%d", ctx->rank);
    EV_CHECK_MPI(MPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, cards, (int)sizeof(me),
                               MPI_BYTE, ctx->coll),
                 "MPI_Allgather");
    bool remote = false; /* some two ranks on different hosts (same answer everywhere) */
    for (int r = 1; r < n && !remote; r++)
        remote = strcmp(cards[r].host, cards[0].host) != 0;
    bool on = ctx->cfg->doorbell && n > 1;
    if (on) {
        b->fd_local = bell_socket(AF_UNIX, SOCK_DGRAM);
        ev_bell_peer_t self;
        bell_local_addr(&self, job, ctx->rank);
        if (b->fd_local >= 0 &&
            bind(b->fd_local, (struct sockaddr *)&self.addr, self.len) != 0) {
            ompc_debug("doorbell: local socket unavailable (%s)", strerror(errno));
            close(b->fd_local);
            b->fd_local = -1;
        }
    }
    if (remote) {
        if (on && (me.ip = bell_host_ip(me.host)) != 0 &&
            (b->fd_udp = bell_socket(AF_INET, SOCK_DGRAM)) >= 0) {
            struct sockaddr_in a = {.sin_family = AF_INET,
                                    .sin_addr.s_addr = htonl(INADDR_ANY)};
            socklen_t len = sizeof(a);
            if (bind(b->fd_udp, (struct sockaddr *)&a, sizeof(a)) == 0 &&
                getsockname(b->fd_udp, (struct sockaddr *)&a, &len) == 0) {
                me.port = a.sin_port;
            } else {
                close(b->fd_udp);
                b->fd_udp = -1;
            }
        }
        if (b->fd_udp < 0)
            me.ip = 0;
        EV_CHECK_MPI(MPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, cards, (int)sizeof(me),
                                   MPI_BYTE, ctx->coll),
                     "MPI_Allgather");
    }
    for (int r = 0; r < n && on; r++) {
        ev_bell_peer_t *p = &b->peers[r];
        if (r == ctx->rank)
            continue;
        /* Whether a peer still polls depends on its own setting: a rank
         * that sleeps at once (crowded, or the head beside workers) is
         * rung for every message. */
        p->quiet_ns = cards[r].spin_us * 500u;
        if (strcmp(cards[r].host, me.host) == 0) {
            if (b->fd_local >= 0) {
                bell_local_addr(p, job, r);
                p->fd = b->fd_local;
            }
        } else if (b->fd_udp >= 0 && cards[r].ip && cards[r].port) {
            struct sockaddr_in *a = (struct sockaddr_in *)&p->addr;
            memset(a, 0, sizeof(*a));
            a->sin_family = AF_INET;
            a->sin_addr.s_addr = cards[r].ip;
            a->sin_port = cards[r].port;
            p->len = sizeof(*a);
            p->fd = b->fd_udp;
        }
    }
    /* Peers on this host ring through fd_local, others through fd_udp
     * (they got no route if our card had no address). */
    b->reachable = on && b->fd_local >= 0 && (!remote || b->fd_udp >= 0);
    bell_nap_init(ctx, cards, on && ctx->cfg->doorbell_awake);
    free(cards);
    return OMPC_OK;
}

void ev_bell_fini(ev_ctx_t *ctx)
{
    ev_bell_t *b = &ctx->bell;
    if (b->fd_local >= 0)
        close(b->fd_local);
    if (b->fd_udp >= 0)
        close(b->fd_udp);
    if (b->fd_wake >= 0)
        close(b->fd_wake);
    if (b->nap_win != MPI_WIN_NULL)
        MPI_Win_free(&b->nap_win);
    free(b->nap);
    free(b->peers);
    free(b->heard);
    free(b->rung);
    free((void *)b->alive);
    memset(b, 0, sizeof(*b));
}

void ev_bell_heard(ev_ctx_t *ctx, int peer)
{
    if (peer >= 0 && peer < ctx->size)
        atomic_store_explicit(&ctx->bell.heard[peer], ompc_now_ns(),
                              memory_order_relaxed);
}

void ev_bell_ring(ev_ctx_t *ctx, int peer)
{
    ev_bell_t *b = &ctx->bell;
    if (peer < 0 || peer >= ctx->size || b->peers[peer].fd < 0)
        return;
    uint64_t now = ompc_now_ns();
    uint64_t quiet = b->peers[peer].quiet_ns;
    if (now - atomic_load_explicit(&b->heard[peer], memory_order_relaxed) < quiet ||
        now - atomic_load_explicit(&b->rung[peer], memory_order_relaxed) < quiet)
        return;
    if (b->nap && b->nap[peer]) {
        /* Pairs with ev_bell_nap_begin: our message was posted before the
         * count moves, and a gate that sees the count move polls again
         * before it sleeps. */
        _Atomic uint32_t *w = b->nap[peer];
        uint32_t v = atomic_load(w);
        while (!(v & 1u))
            if (atomic_compare_exchange_weak(w, &v, v + 2u)) {
                atomic_fetch_add_explicit(&b->st_awake, 1, memory_order_relaxed);
                return;
            }
    }
    atomic_fetch_add_explicit(&b->st_rung, 1, memory_order_relaxed);
    atomic_store_explicit(&b->rung[peer], now, memory_order_relaxed);
    char c = 0;
    const ev_bell_peer_t *p = &b->peers[peer];
    if (sendto(p->fd, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
               (const struct sockaddr *)&p->addr, p->len) < 0)
        ompc_trace("doorbell to r%d: %s", peer, strerror(errno));
}

bool ev_bell_nap_begin(ev_ctx_t *ctx)
{
    ev_bell_t *b = &ctx->bell;
    if (!b->my_nap)
        return false;
    uint32_t count = atomic_fetch_or(b->my_nap, 1u) >> 1;
    bool moved = count != b->nap_seen;
    b->nap_seen = count;
    return moved;
}

void ev_bell_nap_end(ev_ctx_t *ctx)
{
    if (ctx->bell.my_nap)
        atomic_fetch_and(ctx->bell.my_nap, ~1u);
}

void ev_bell_wake(ev_ctx_t *ctx)
{
    uint64_t one = 1;
    /* EAGAIN means the counter is already non-zero: the gate wakes anyway. */
    if (write(ctx->bell.fd_wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
        ompc_trace("gate wake-up: %s", strerror(errno));
}

bool ev_bell_ping(ev_ctx_t *ctx, int peer, bool pong)
{
    ev_bell_t *b = &ctx->bell;
    if (peer < 0 || peer >= ctx->size || !b->peers || b->peers[peer].fd < 0)
        return false;
    const ev_bell_peer_t *p = &b->peers[peer];
    bell_live_t m = {
        .magic = BELL_LIVE_MAGIC, .pong = pong, .rank = ctx->rank, .job = b->job};
    if (sendto(p->fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL,
               (const struct sockaddr *)&p->addr, p->len) < 0) {
        ompc_trace("liveness datagram to r%d: %s", peer, strerror(errno));
        return false;
    }
    return true;
}

/* Datagrams bell_drain takes per system call. */
#define BELL_DRAIN_BATCH 16

/* Empties a socket: rings are dropped, liveness datagrams of this job
 * counted and pings answered.  One recvmmsg takes every datagram waiting
 * (up to BELL_DRAIN_BATCH): a read per datagram and one more to see the
 * socket empty cost a woken gate two system calls per ring
 * (docs/performance.md, "system calls per task"). */
static void bell_drain(ev_ctx_t *ctx, int fd)
{
    ev_bell_t *b = &ctx->bell;
    union {
        bell_live_t live;
        char bytes[64];
    } buf[BELL_DRAIN_BATCH];
    struct iovec iov[BELL_DRAIN_BATCH];
    struct mmsghdr mh[BELL_DRAIN_BATCH];
    for (int i = 0; i < BELL_DRAIN_BATCH; i++) {
        iov[i] = (struct iovec){.iov_base = &buf[i], .iov_len = sizeof(buf[i])};
        mh[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
    }
    int n;
    do {
        n = recvmmsg(fd, mh, BELL_DRAIN_BATCH, MSG_DONTWAIT, NULL);
        for (int i = 0; i < n; i++) {
            const bell_live_t *l = &buf[i].live;
            if (mh[i].msg_len != sizeof(bell_live_t) || l->magic != BELL_LIVE_MAGIC ||
                l->job != b->job || l->pong > 1 || l->rank < 0 || l->rank >= ctx->size ||
                l->rank == ctx->rank)
                continue;
            atomic_store_explicit(&b->alive[l->rank], ompc_now_ns(),
                                  memory_order_relaxed);
            if (!l->pong)
                ev_bell_ping(ctx, l->rank, true);
        }
    } while (n == BELL_DRAIN_BATCH);
}

void ev_bell_poll(ev_ctx_t *ctx)
{
    ev_bell_t *b = &ctx->bell;
    if (b->fd_local >= 0)
        bell_drain(ctx, b->fd_local);
    if (b->fd_udp >= 0)
        bell_drain(ctx, b->fd_udp);
}

bool ev_bell_wait(ev_ctx_t *ctx, uint64_t us)
{
    ev_bell_t *b = &ctx->bell;
    struct pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = (struct pollfd){.fd = b->fd_wake, .events = POLLIN};
    if (b->fd_local >= 0)
        fds[n++] = (struct pollfd){.fd = b->fd_local, .events = POLLIN};
    if (b->fd_udp >= 0)
        fds[n++] = (struct pollfd){.fd = b->fd_udp, .events = POLLIN};
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
    if (ppoll(fds, n, &ts, NULL) <= 0)
        return false;
    /* One read resets the eventfd's counter. */
    uint64_t count;
    if ((fds[0].revents & POLLIN) && read(b->fd_wake, &count, sizeof(count)) < 0 &&
        errno != EAGAIN)
        ompc_trace("gate wake-up: %s", strerror(errno));
    for (nfds_t i = 1; i < n; i++)
        if (fds[i].revents & POLLIN)
            bell_drain(ctx, fds[i].fd);
    return true;
}
