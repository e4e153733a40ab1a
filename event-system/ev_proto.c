/* The protocol of each event kind: origin and destination halves as small
 * state machines.  A step posts non-blocking MPI operations and returns
 * EV_STEP_WAIT; the gate calls it again whenever one of its requests
 * completes (or, for condition waits, on every pass).  State 9 everywhere
 * means "final messages posted, finish when they complete". */
#define _GNU_SOURCE
#include "ev_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ST_FINISH 9

ev_op_t *ev_op_new(ev_ctx_t *ctx, int kind, ev_role_t role)
{
    (void)ctx;
    ev_op_t *op = calloc(1, sizeof(*op));
    if (!op)
        return NULL;
    op->kind = kind;
    op->role = role;
    op->peer = -1;
    op->peer2 = -1;
    op->status = OMPC_OK;
    return op;
}

void ev_op_free(ev_op_t *op)
{
    free(op->msg);
    free(op->msg2);
    free(op->rbuf);
    free(op->rbuf2);
    free(op->scratch);
    free(op->sbuf);
    free(op);
}

static MPI_Comm op_comm(ev_ctx_t *ctx, const ev_op_t *op)
{
    return ctx->comms[op->comm_idx];
}

/* Build and send a notification for this op to rank `to`. */
static void notify(ev_ctx_t *ctx, ev_op_t *op, void **slot, int kind, int to,
                   const ev_wire_hdr_t *fields, const void *payload, size_t plen)
{
    char *buf = malloc(sizeof(ev_wire_hdr_t) + plen);
    if (!buf)
        ompc_fatal("rank %d: out of memory building a %s notification", ctx->rank,
                   ev_kind_name(kind));
    ev_wire_hdr_t h = *fields;
    if (ev_progress_hot(ctx))
        h.flags |= EV_F_HOT;
    h.magic = EV_MAGIC;
    h.kind = (uint16_t)kind;
    h.origin = ctx->rank;
    h.tag = op->tag;
    h.payload = (uint32_t)plen;
    memcpy(buf, &h, sizeof(h));
    if (plen)
        memcpy(buf + sizeof(h), payload, plen);
    *slot = buf;
    ev_op_isend(ctx, op, buf, sizeof(h) + plen, to, ctx->ctrl, EV_NOTIFY_TAG, EV_RQ_MISC);
}

/* Post the receive of a reply (or of an exchange data header) carrying up
 * to cap inline bytes. */
static void reply_expect(ev_ctx_t *ctx, ev_op_t *op, void **slot, int from, size_t cap,
                         int mpitag)
{
    size_t len = sizeof(ev_wire_reply_t) + cap;
    *slot = malloc(len);
    if (!*slot)
        ompc_fatal("rank %d: out of memory for a %zu-byte reply", ctx->rank, len);
    ev_op_irecv(ctx, op, *slot, len, from, op_comm(ctx, op), mpitag, EV_RQ_REPLY);
}

/* Send a reply (or exchange data header) from op->sbuf. */
static void reply_send(ev_ctx_t *ctx, ev_op_t *op, int to, int mpitag, ompc_status_t st,
                       uint64_t value, const void *payload, size_t plen)
{
    free(op->sbuf);
    op->sbuf = malloc(sizeof(ev_wire_reply_t) + plen);
    if (!op->sbuf)
        ompc_fatal("rank %d: out of memory for a reply", ctx->rank);
    ev_wire_reply_t r = {.status = st, .payload = (uint32_t)plen, .value = value};
    memcpy(op->sbuf, &r, sizeof(r));
    if (plen)
        memcpy((char *)op->sbuf + sizeof(r), payload, plen);
    ev_op_isend(ctx, op, op->sbuf, sizeof(r) + plen, to, op_comm(ctx, op), mpitag,
                EV_RQ_REPLY);
}

static void reply_to_origin(ev_ctx_t *ctx, ev_op_t *op, ompc_status_t st, uint64_t value,
                            const void *payload, size_t plen)
{
    reply_send(ctx, op, op->origin, EV_MPITAG_REPLY(op->tag), st, value, payload, plen);
}

static ev_wire_reply_t reply_read(const void *buf)
{
    ev_wire_reply_t r;
    memcpy(&r, buf, sizeof(r));
    return r;
}

static void stream_start(ev_ctx_t *ctx, ev_op_t *op, char *buf, size_t size, bool send,
                         int peer, bool discard)
{
    op->stream = (ev_stream_t){.buf = buf,
                               .size = size,
                               .send = send,
                               .peer = peer,
                               .mpitag = EV_MPITAG_DATA(op->tag),
                               .discard = discard};
    if (discard && !op->scratch) {
        op->scratch = malloc(ctx->chunk);
        if (!op->scratch)
            ompc_fatal("rank %d: out of memory for a drain buffer", ctx->rank);
    }
    ev_stream_pump(ctx, op);
}

static int finish_when_sent(ev_op_t *op)
{
    return op->npending ? EV_STEP_WAIT : EV_STEP_DONE;
}

/* ================================================================ origins */

/* alloc, free, sync, exit, local exchange, execute: notify, await reply. */
static int origin_simple_step(ev_ctx_t *ctx, ev_op_t *op)
{
    switch (op->state) {
    case 0: {
        size_t cap = op->kind == EV_K_EXECUTE ? op->size : 0;
        reply_expect(ctx, op, &op->rbuf, op->peer, cap, EV_MPITAG_REPLY(op->tag));
        ev_wire_hdr_t f = {0};
        const void *payload = NULL;
        size_t plen = 0;
        int kind = op->kind;
        switch (op->kind) {
        case EV_K_ALLOC: f.size = op->size; break;
        case EV_K_FREE: f.addr = (uint64_t)(uintptr_t)op->dst; break;
        case EV_K_EXECUTE:
            f.arg = (uint64_t)op->hdr.arg;
            f.size = op->size;
            payload = op->src;
            plen = op->hdr.size;
            break;
        case EV_K_EXCHANGE:
            kind = EV_K_EXCH_LOCAL;
            f.addr = op->hdr.addr;
            f.addr2 = op->hdr.addr2;
            f.size = op->size;
            break;
        default: break;
        }
        notify(ctx, op, &op->msg, kind, op->peer, &f, payload, plen);
        op->state = 1;
        return EV_STEP_WAIT;
    }
    case 1: {
        if (op->npending)
            return EV_STEP_WAIT;
        ev_wire_reply_t r = reply_read(op->rbuf);
        op->status = r.status;
        if (op->kind == EV_K_ALLOC && r.status == OMPC_OK)
            op->h->addr = r.value;
        if (op->kind == EV_K_EXECUTE) {
            if (r.payload > op->size)
                ev_proto_fatal(ctx, op->peer, NULL,
                               "execute result larger than "
                               "the result buffer");
            if (r.payload)
                memcpy(op->dst, (char *)op->rbuf + sizeof(r), r.payload);
            op->h->result_size = r.payload;
        }
        return EV_STEP_DONE;
    }
    }
    OMPC_ASSERT(0);
    return EV_STEP_DONE;
}

static int origin_submit_step(ev_ctx_t *ctx, ev_op_t *op)
{
    if (op->state == 0) {
        bool inl = op->size <= ctx->inline_max;
        reply_expect(ctx, op, &op->rbuf, op->peer, 0, EV_MPITAG_REPLY(op->tag));
        ev_wire_hdr_t f = {
            .addr = op->hdr.addr, .size = op->size, .flags = inl ? EV_F_INLINE : 0};
        notify(ctx, op, &op->msg, EV_K_SUBMIT, op->peer, &f, inl ? op->src : NULL,
               inl ? op->size : 0);
        if (!inl)
            stream_start(ctx, op, (char *)op->src, op->size, true, op->peer, false);
        op->state = 1;
        return EV_STEP_WAIT;
    }
    ev_stream_pump(ctx, op);
    if (op->npending)
        return EV_STEP_WAIT;
    op->status = reply_read(op->rbuf).status;
    return EV_STEP_DONE;
}

static int origin_retrieve_step(ev_ctx_t *ctx, ev_op_t *op)
{
    switch (op->state) {
    case 0: {
        bool inl = op->size <= ctx->inline_max;
        reply_expect(ctx, op, &op->rbuf, op->peer, inl ? op->size : 0,
                     EV_MPITAG_REPLY(op->tag));
        ev_wire_hdr_t f = {
            .addr = op->hdr.addr, .size = op->size, .flags = inl ? EV_F_INLINE : 0};
        notify(ctx, op, &op->msg, EV_K_RETRIEVE, op->peer, &f, NULL, 0);
        op->state = 1;
        return EV_STEP_WAIT;
    }
    case 1: {
        if (op->ncook[EV_RQ_REPLY])
            return EV_STEP_WAIT;
        ev_wire_reply_t r = reply_read(op->rbuf);
        op->status = r.status;
        op->state = ST_FINISH;
        if (r.status != OMPC_OK)
            return finish_when_sent(op);
        if (op->size <= ctx->inline_max) {
            if (r.payload != op->size)
                ev_proto_fatal(ctx, op->peer, NULL,
                               "retrieve reply size differs "
                               "from the requested size");
            memcpy(op->dst, (char *)op->rbuf + sizeof(r), op->size);
            return finish_when_sent(op);
        }
        if (r.value != op->size)
            ev_proto_fatal(ctx, op->peer, NULL,
                           "retrieve announces a size "
                           "different from the requested size");
        stream_start(ctx, op, op->dst, op->size, false, op->peer, false);
        op->state = 2;
        return EV_STEP_WAIT;
    }
    case 2: ev_stream_pump(ctx, op); return finish_when_sent(op);
    default: return finish_when_sent(op);
    }
}

static int origin_exchange_step(ev_ctx_t *ctx, ev_op_t *op)
{
    if (op->state == 0) {
        bool inl = op->size <= ctx->inline_max;
        uint16_t fl = inl ? EV_F_INLINE : 0;
        int a = op->peer, b = op->peer2;
        reply_expect(ctx, op, &op->rbuf, a, 0, EV_MPITAG_REPLY(op->tag));
        reply_expect(ctx, op, &op->rbuf2, b, 0, EV_MPITAG_REPLY(op->tag));
        ev_wire_hdr_t fa = {
            .addr = op->hdr.addr, .size = op->size, .peer = b, .flags = fl};
        ev_wire_hdr_t fb = {
            .addr = op->hdr.addr2, .size = op->size, .peer = a, .flags = fl};
        notify(ctx, op, &op->msg, EV_K_EXCH_SEND, a, &fa, NULL, 0);
        notify(ctx, op, &op->msg2, EV_K_EXCH_RECV, b, &fb, NULL, 0);
        op->state = 1;
        return EV_STEP_WAIT;
    }
    if (op->npending)
        return EV_STEP_WAIT;
    ompc_status_t sa = reply_read(op->rbuf).status;
    ompc_status_t sb = reply_read(op->rbuf2).status;
    op->status = sa != OMPC_OK ? sa : sb;
    return EV_STEP_DONE;
}

/* =========================================================== destinations */

static bool dest_range_ok(ev_ctx_t *ctx, uint64_t addr, uint64_t size)
{
    return ev_region_contains(ctx, (uintptr_t)addr, (size_t)size);
}

static _Atomic(ev_land_hook_fn_t) land_hook;
void ev_set_land_hook(ev_land_hook_fn_t fn) { atomic_store(&land_hook, fn); }
static _Atomic(ev_land_ready_fn_t) land_ready;
void ev_set_land_ready_hook(ev_land_ready_fn_t fn) { atomic_store(&land_ready, fn); }
static _Atomic(ev_land_stage_fn_t) land_stage;
static _Atomic(ev_land_done_fn_t) land_done;
void ev_set_land_stage_hooks(ev_land_stage_fn_t stage, ev_land_done_fn_t done)
{
    atomic_store(&land_done, done);
    atomic_store(&land_stage, stage);
}
static _Atomic(ev_send_hook_fn_t) send_hook;
void ev_set_send_hook(ev_send_hook_fn_t fn) { atomic_store(&send_hook, fn); }

static int dest_alloc_step(ev_ctx_t *ctx, ev_op_t *op)
{
    if (op->state == 0) {
        size_t size = op->hdr.size ? (size_t)op->hdr.size : 1;
        size_t rounded = (size + 63) & ~(size_t)63;
        void *p = rounded >= size ? aligned_alloc(64, rounded) : NULL;
        ompc_status_t st = OMPC_ERR_NOMEM;
        if (p) {
            st = ev_region_insert(ctx, (uintptr_t)p, size, true);
            if (st != OMPC_OK) {
                free(p);
                p = NULL;
            }
        }
        ompc_debug("alloc %llu B for r%d -> %p", (unsigned long long)op->hdr.size,
                   op->origin, p);
        reply_to_origin(ctx, op, st, (uint64_t)(uintptr_t)p, NULL, 0);
        op->state = ST_FINISH;
    }
    return finish_when_sent(op);
}

static int dest_free_step(ev_ctx_t *ctx, ev_op_t *op)
{
    if (op->state == 0) {
        ompc_status_t st = ev_region_remove(ctx, (uintptr_t)op->hdr.addr, true);
        if (st == OMPC_OK)
            free((void *)(uintptr_t)op->hdr.addr);
        else
            ompc_warn("free from rank %d (tag %d): %#llx is not an ev_alloc "
                      "region",
                      op->origin, op->tag, (unsigned long long)op->hdr.addr);
        reply_to_origin(ctx, op, st, 0, NULL, 0);
        op->state = ST_FINISH;
    }
    return finish_when_sent(op);
}

static void warn_bad_range(ev_ctx_t *ctx, ev_op_t *op, uint64_t addr, uint64_t size)
{
    (void)ctx;
    ompc_warn("%s from rank %d (tag %d): [%#llx, +%llu) is not inside a "
              "registered region",
              ev_kind_name(op->kind), op->origin, op->tag, (unsigned long long)addr,
              (unsigned long long)size);
}

/* Receive hdr.size bytes into the local range at hdr.addr, for a submit or
 * the target side of an exchange: `inline_data` when they came with a
 * message, else a stream from rank `from` (drained into scratch if the range
 * is bad: the sender's requests must complete for the error to travel
 * back).  Streams continue in state `stream_state` with recv_stream_step. */
static int recv_into_range(ev_ctx_t *ctx, ev_op_t *op, const void *inline_data, int from,
                           int stream_state)
{
    /* Not yet: the op keeps its state, posts nothing and waits on the
     * gate's list, where this step runs again on every pass. */
    ev_land_ready_fn_t ready = atomic_load_explicit(&land_ready, memory_order_relaxed);
    if (ready && op->hdr.size && !ready((uintptr_t)op->hdr.addr, (size_t)op->hdr.size))
        return EV_STEP_WAIT;
    bool ok = dest_range_ok(ctx, op->hdr.addr, op->hdr.size);
    if (!ok)
        warn_bad_range(ctx, op, op->hdr.addr, op->hdr.size);
    op->status = ok ? OMPC_OK : OMPC_ERR_BAD_ADDR;
    if (inline_data) {
        ev_land_hook_fn_t hook = ok ? atomic_load_explicit(&land_hook,
                                                           memory_order_relaxed)
                                    : NULL;
        bool placed = hook && op->hdr.size &&
                      hook((uintptr_t)op->hdr.addr, (size_t)op->hdr.size, inline_data);
        if (ok && op->hdr.size && !placed)
            memcpy((void *)(uintptr_t)op->hdr.addr, inline_data, op->hdr.size);
        reply_to_origin(ctx, op, op->status, 0, NULL, 0);
        op->state = ST_FINISH;
        return EV_STEP_WAIT;
    }
    ev_land_stage_fn_t stage = ok ? atomic_load_explicit(&land_stage,
                                                         memory_order_relaxed)
                                  : NULL;
    op->staged = stage && op->hdr.size
                     ? stage((uintptr_t)op->hdr.addr, (size_t)op->hdr.size)
                     : NULL;
    stream_start(ctx, op, op->staged ? op->staged : (char *)(uintptr_t)op->hdr.addr,
                 op->hdr.size, false, from, !ok);
    op->state = stream_state;
    return EV_STEP_WAIT;
}

/* The stream of recv_into_range: reply once every chunk arrived. */
static int recv_stream_step(ev_ctx_t *ctx, ev_op_t *op)
{
    ev_stream_pump(ctx, op);
    if (!ev_stream_done(op))
        return EV_STEP_WAIT;
    if (op->staged) {
        atomic_load_explicit(&land_done, memory_order_relaxed)(
            (uintptr_t)op->hdr.addr, (size_t)op->hdr.size, op->staged);
        op->staged = NULL;
    }
    reply_to_origin(ctx, op, op->status, 0, NULL, 0);
    op->state = ST_FINISH;
    return EV_STEP_WAIT;
}

static int dest_submit_step(ev_ctx_t *ctx, ev_op_t *op)
{
    switch (op->state) {
    case 0:
        return recv_into_range(ctx, op,
                               (op->hdr.flags & EV_F_INLINE)
                                   ? (char *)op->msg + sizeof(ev_wire_hdr_t)
                                   : NULL,
                               op->origin, 1);
    case 1: return recv_stream_step(ctx, op);
    default: return finish_when_sent(op);
    }
}

static int dest_retrieve_step(ev_ctx_t *ctx, ev_op_t *op)
{
    switch (op->state) {
    case 0: {
        bool ok = dest_range_ok(ctx, op->hdr.addr, op->hdr.size);
        void *src = (void *)(uintptr_t)op->hdr.addr;
        op->state = ST_FINISH;
        if (!ok) {
            warn_bad_range(ctx, op, op->hdr.addr, op->hdr.size);
            reply_to_origin(ctx, op, OMPC_ERR_BAD_ADDR, 0, NULL, 0);
        } else if (op->hdr.flags & EV_F_INLINE) {
            reply_to_origin(ctx, op, OMPC_OK, op->hdr.size, src, op->hdr.size);
        } else {
            reply_to_origin(ctx, op, OMPC_OK, op->hdr.size, NULL, 0);
            stream_start(ctx, op, src, op->hdr.size, true, op->origin, false);
            op->state = 1;
        }
        return EV_STEP_WAIT;
    }
    case 1: ev_stream_pump(ctx, op); return finish_when_sent(op);
    default: return finish_when_sent(op);
    }
}

/* Source side of an exchange: header to the target, then the data. */
static int dest_exch_send_step(ev_ctx_t *ctx, ev_op_t *op)
{
    switch (op->state) {
    case 0: {
        bool ok = dest_range_ok(ctx, op->hdr.addr, op->hdr.size);
        bool inl = op->hdr.flags & EV_F_INLINE;
        void *src = (void *)(uintptr_t)op->hdr.addr;
        op->status = ok ? OMPC_OK : OMPC_ERR_BAD_ADDR;
        ev_send_hook_fn_t hook = ok ? atomic_load_explicit(&send_hook,
                                                           memory_order_relaxed)
                                    : NULL;
        if (hook && op->hdr.size)
            hook((uintptr_t)op->hdr.addr, (size_t)op->hdr.size);
        if (!ok)
            warn_bad_range(ctx, op, op->hdr.addr, op->hdr.size);
        reply_send(ctx, op, op->peer, EV_MPITAG_DATA(op->tag), op->status, op->hdr.size,
                   ok && inl ? src : NULL, ok && inl ? op->hdr.size : 0);
        if (ok && !inl)
            stream_start(ctx, op, src, op->hdr.size, true, op->peer, false);
        op->state = 1;
        return EV_STEP_WAIT;
    }
    case 1:
        ev_stream_pump(ctx, op);
        if (op->npending)
            return EV_STEP_WAIT;
        reply_to_origin(ctx, op, op->status, 0, NULL, 0);
        op->state = ST_FINISH;
        return EV_STEP_WAIT;
    default: return finish_when_sent(op);
    }
}

/* Target side of an exchange: header from the source, then the data. */
static int dest_exch_recv_step(ev_ctx_t *ctx, ev_op_t *op)
{
    bool inl = op->hdr.flags & EV_F_INLINE;
    switch (op->state) {
    case 0:
        reply_expect(ctx, op, &op->rbuf, op->peer, inl ? op->hdr.size : 0,
                     EV_MPITAG_DATA(op->tag));
        op->state = 1;
        return EV_STEP_WAIT;
    case 1: {
        if (op->ncook[EV_RQ_REPLY])
            return EV_STEP_WAIT;
        ev_wire_reply_t r = reply_read(op->rbuf);
        if (r.status != OMPC_OK) {
            reply_to_origin(ctx, op, r.status, 0, NULL, 0);
            op->state = ST_FINISH;
            return EV_STEP_WAIT;
        }
        if (r.value != op->hdr.size || (inl && r.payload != op->hdr.size))
            ev_proto_fatal(ctx, op->peer, &op->hdr,
                           "exchange data header size "
                           "differs from the commanded size");
        return recv_into_range(ctx, op, inl ? (char *)op->rbuf + sizeof(r) : NULL,
                               op->peer, 2);
    }
    case 2: return recv_stream_step(ctx, op);
    default: return finish_when_sent(op);
    }
}

static int dest_exch_local_step(ev_ctx_t *ctx, ev_op_t *op)
{
    if (op->state == 0) {
        bool ok = dest_range_ok(ctx, op->hdr.addr, op->hdr.size) &&
                  dest_range_ok(ctx, op->hdr.addr2, op->hdr.size);
        if (ok && op->hdr.size)
            memmove((void *)(uintptr_t)op->hdr.addr2, (void *)(uintptr_t)op->hdr.addr,
                    op->hdr.size);
        else if (!ok)
            warn_bad_range(ctx, op, op->hdr.addr, op->hdr.size);
        reply_to_origin(ctx, op, ok ? OMPC_OK : OMPC_ERR_BAD_ADDR, 0, NULL, 0);
        op->state = ST_FINISH;
    }
    return finish_when_sent(op);
}

static int dest_execute_step(ev_ctx_t *ctx, ev_op_t *op)
{
    switch (op->state) {
    case 0: {
        const ev_fn_entry_t *e = ev_fn_lookup(ctx, (int64_t)op->hdr.arg);
        if (!e) {
            ompc_warn("execute from rank %d (tag %d): no function with id %lld is "
                      "registered here",
                      op->origin, op->tag, (long long)op->hdr.arg);
            reply_to_origin(ctx, op, OMPC_ERR_NO_FUNCTION, 0, NULL, 0);
            op->state = ST_FINISH;
            return EV_STEP_WAIT;
        }
        op->sbuf = malloc(sizeof(ev_wire_reply_t) + op->hdr.size);
        if (!op->sbuf)
            ompc_fatal("rank %d: out of memory for an execute result", ctx->rank);
        op->state = 1;
        if (!(e->flags & EV_FN_INLINE))
            return EV_STEP_HANDLER;
    }
    /* fall through: inline functions run on the gate thread */
    case 1: {
        const ev_fn_entry_t *e = ev_fn_lookup(ctx, (int64_t)op->hdr.arg);
        ev_exec_info_t info = {
            .ctx = ctx,
            .origin = op->origin,
            .args = (char *)op->msg + sizeof(ev_wire_hdr_t),
            .args_size = op->hdr.payload,
            .result = (char *)op->sbuf + sizeof(ev_wire_reply_t),
            .result_cap = op->hdr.size,
        };
        op->status = e->fn(&info);
        op->size = info.result_size <= info.result_cap ? info.result_size
                                                       : info.result_cap;
        op->state = 2;
        /* On a handler too: send the reply from here rather than after a
         * hand-off back to the gate; the gate only tracks its completion. */
    }
    /* fall through */
    case 2: {
        /* reply_send would reallocate sbuf, which holds the result already:
         * write the reply header in front of it instead. */
        ev_wire_reply_t r = {.status = op->status, .payload = (uint32_t)op->size};
        memcpy(op->sbuf, &r, sizeof(r));
        ev_op_isend(ctx, op, op->sbuf, sizeof(r) + op->size, op->origin, op_comm(ctx, op),
                    EV_MPITAG_REPLY(op->tag), EV_RQ_REPLY);
        op->state = ST_FINISH;
        return EV_STEP_WAIT;
    }
    default: return finish_when_sent(op);
    }
}

static int dest_sync_step(ev_ctx_t *ctx, ev_op_t *op)
{
    if (op->state == 0) {
        if (!ev_arrivals_before_done(ctx, op))
            return EV_STEP_WAIT;
        reply_to_origin(ctx, op, OMPC_OK, 0, NULL, 0);
        op->state = ST_FINISH;
        return EV_STEP_WAIT;
    }
    if (op->npending)
        return EV_STEP_WAIT;
    if (op->kind == EV_K_EXIT)
        ev_signal_exit(ctx);
    return EV_STEP_DONE;
}

/* Check the kind-specific header fields, then choose the step function. */
void ev_dest_start(ev_ctx_t *ctx, ev_op_t *op)
{
    const ev_wire_hdr_t *h = &op->hdr;
    bool inl = h->flags & EV_F_INLINE;
    switch (h->kind) {
    case EV_K_ALLOC:
    case EV_K_FREE:
    case EV_K_SYNC:
    case EV_K_EXIT:
    case EV_K_RETRIEVE:
    case EV_K_EXCH_LOCAL:
        if (h->payload != 0)
            ev_proto_fatal(ctx, op->origin, h, "unexpected payload");
        break;
    case EV_K_SUBMIT:
        if (h->payload != (inl ? h->size : 0))
            ev_proto_fatal(ctx, op->origin, h,
                           "wrong message size: payload "
                           "does not match the submit size");
        break;
    case EV_K_EXCH_SEND:
    case EV_K_EXCH_RECV:
        if (h->payload != 0)
            ev_proto_fatal(ctx, op->origin, h, "unexpected payload");
        if (h->peer < 0 || h->peer >= ctx->size || h->peer == ctx->rank)
            ev_proto_fatal(ctx, op->origin, h, "exchange names an invalid peer");
        break;
    case EV_K_EXECUTE:
        if (h->payload > EV_EXEC_MAX_ARGS || h->size > EV_EXEC_MAX_RESULT)
            ev_proto_fatal(ctx, op->origin, h,
                           "execute arguments or result "
                           "larger than the limit");
        break;
    default: ev_proto_fatal(ctx, op->origin, h, "unknown event kind");
    }
    if ((inl && h->size > (1u << 30)) || h->size > ((uint64_t)1 << 62))
        ev_proto_fatal(ctx, op->origin, h, "size field out of range");
    switch (h->kind) {
    case EV_K_ALLOC: op->step = dest_alloc_step; break;
    case EV_K_FREE: op->step = dest_free_step; break;
    case EV_K_SUBMIT: op->step = dest_submit_step; break;
    case EV_K_RETRIEVE: op->step = dest_retrieve_step; break;
    case EV_K_EXCH_SEND:
        op->step = dest_exch_send_step;
        op->peer = h->peer; /* it mostly waits on the target */
        op->peer2 = op->origin;
        break;
    case EV_K_EXCH_RECV:
        op->step = dest_exch_recv_step;
        op->peer = h->peer;
        op->peer2 = op->origin;
        break;
    case EV_K_EXCH_LOCAL: op->step = dest_exch_local_step; break;
    case EV_K_EXECUTE: op->step = dest_execute_step; break;
    case EV_K_SYNC:
    case EV_K_EXIT: op->step = dest_sync_step; break;
    }
}

/* ============================================================ public API */

static ompc_status_t check_rank(const ev_ctx_t *ctx, int rank)
{
    if (rank < 0 || rank >= ctx->size) {
        ompc_error("rank %d: event to rank %d, but ranks are 0..%d", ctx->rank, rank,
                   ctx->size - 1);
        return OMPC_ERR_INVALID;
    }
    return OMPC_OK;
}

static ompc_status_t start_new(ev_ctx_t *ctx, int kind, int peer, ev_step_fn_t step,
                               ev_op_t **op_p)
{
    ompc_status_t st = check_rank(ctx, peer);
    if (st != OMPC_OK)
        return st;
    ev_op_t *op = ev_op_new(ctx, kind, EV_ORIGIN);
    if (!op)
        return OMPC_ERR_NOMEM;
    op->peer = peer;
    op->step = step;
    *op_p = op;
    return OMPC_OK;
}

#define CHECK_HP(h_p)                                                                    \
    do {                                                                                 \
        if (!(h_p))                                                                      \
            return OMPC_ERR_INVALID;                                                     \
    } while (0)

ompc_status_t ev_alloc(ev_ctx_t *ctx, int rank, size_t size, ev_handle_t **h_p)
{
    CHECK_HP(h_p);
    ev_op_t *op;
    ompc_status_t st = start_new(ctx, EV_K_ALLOC, rank, origin_simple_step, &op);
    if (st != OMPC_OK)
        return st;
    op->size = size;
    return ev_origin_start(ctx, op, h_p);
}

ompc_status_t ev_free(ev_ctx_t *ctx, int rank, ev_addr_t addr, ev_handle_t **h_p)
{
    CHECK_HP(h_p);
    ev_op_t *op;
    ompc_status_t st = start_new(ctx, EV_K_FREE, rank, origin_simple_step, &op);
    if (st != OMPC_OK)
        return st;
    op->dst = (void *)(uintptr_t)addr;
    return ev_origin_start(ctx, op, h_p);
}

ompc_status_t ev_submit(ev_ctx_t *ctx, int rank, const void *src, ev_addr_t dst,
                        size_t size, ev_handle_t **h_p)
{
    CHECK_HP(h_p);
    if (!src && size)
        return OMPC_ERR_INVALID;
    ev_op_t *op;
    ompc_status_t st = start_new(ctx, EV_K_SUBMIT, rank, origin_submit_step, &op);
    if (st != OMPC_OK)
        return st;
    op->src = src;
    op->size = size;
    op->hdr.addr = dst;
    return ev_origin_start(ctx, op, h_p);
}

ompc_status_t ev_retrieve(ev_ctx_t *ctx, int rank, ev_addr_t src, void *dst, size_t size,
                          ev_handle_t **h_p)
{
    CHECK_HP(h_p);
    if (!dst && size)
        return OMPC_ERR_INVALID;
    ev_op_t *op;
    ompc_status_t st = start_new(ctx, EV_K_RETRIEVE, rank, origin_retrieve_step, &op);
    if (st != OMPC_OK)
        return st;
    op->dst = dst;
    op->size = size;
    op->hdr.addr = src;
    return ev_origin_start(ctx, op, h_p);
}

ompc_status_t ev_exchange(ev_ctx_t *ctx, int src_rank, ev_addr_t src, int dst_rank,
                          ev_addr_t dst, size_t size, ev_handle_t **h_p)
{
    CHECK_HP(h_p);
    ompc_status_t st = check_rank(ctx, dst_rank);
    if (st != OMPC_OK)
        return st;
    bool local = src_rank == dst_rank;
    ev_op_t *op;
    st = start_new(ctx, EV_K_EXCHANGE, src_rank,
                   local ? origin_simple_step : origin_exchange_step, &op);
    if (st != OMPC_OK)
        return st;
    op->peer2 = local ? -1 : dst_rank;
    op->size = size;
    op->hdr.addr = src;
    op->hdr.addr2 = dst;
    return ev_origin_start(ctx, op, h_p);
}

ompc_status_t ev_execute(ev_ctx_t *ctx, int rank, ev_fn_id_t fn, const void *args,
                         size_t args_size, void *result, size_t result_cap,
                         ev_handle_t **h_p)
{
    CHECK_HP(h_p);
    if (fn < 0 || args_size > EV_EXEC_MAX_ARGS || result_cap > EV_EXEC_MAX_RESULT ||
        (args_size && !args) || (result_cap && !result))
        return OMPC_ERR_INVALID;
    ev_op_t *op;
    ompc_status_t st = start_new(ctx, EV_K_EXECUTE, rank, origin_simple_step, &op);
    if (st != OMPC_OK)
        return st;
    op->src = args;
    op->hdr.size = args_size;
    op->hdr.arg = (uint64_t)fn;
    op->dst = result;
    op->size = result_cap;
    return ev_origin_start(ctx, op, h_p);
}

/* The notification is the whole one-way event: finish once it is sent. */
static int origin_post_step(ev_ctx_t *ctx, ev_op_t *op)
{
    (void)ctx;
    return finish_when_sent(op);
}

ompc_status_t ev_post(ev_ctx_t *ctx, int rank, ev_fn_id_t fn, const void *args,
                      size_t args_size)
{
    if (args_size > EV_EXEC_MAX_ARGS || (args_size && !args))
        return OMPC_ERR_INVALID;
    /* Every rank registers the same functions: the local entry says how
     * the destination will run it, and only inline ones may be posted (a
     * handler thread would need an op to come back to). */
    const ev_fn_entry_t *e = fn >= 0 ? ev_fn_lookup(ctx, fn) : NULL;
    if (!e || !(e->flags & EV_FN_INLINE))
        return OMPC_ERR_INVALID;
    ompc_status_t st = ev_origin_check(ctx, EV_K_EXECUTE);
    if (st != OMPC_OK)
        return st;
    ev_op_t *op;
    st = start_new(ctx, EV_K_EXECUTE, rank, origin_post_step, &op);
    if (st != OMPC_OK)
        return st;
    op->origin = ctx->rank;
    op->state = ST_FINISH;
    ev_wire_hdr_t f = {.flags = EV_F_ONEWAY, .arg = (uint64_t)fn};
    notify(ctx, op, &op->msg, EV_K_EXECUTE, rank, &f, args, args_size);
    ev_origin_post_sent(ctx, op);
    return OMPC_OK;
}

void ev_dest_posted(ev_ctx_t *ctx, const ev_wire_hdr_t *h, const void *args, int src)
{
    if (h->tag != 0 || h->size != 0)
        ev_proto_fatal(ctx, src, h, "one-way execute with a tag or a result");
    if (h->payload > EV_EXEC_MAX_ARGS)
        ev_proto_fatal(ctx, src, h, "execute arguments larger than the limit");
    const ev_fn_entry_t *e = ev_fn_lookup(ctx, (int64_t)h->arg);
    if (!e || !(e->flags & EV_FN_INLINE))
        ev_proto_fatal(ctx, src, h,
                       "one-way execute of a function that is not "
                       "registered here as inline");
    ev_exec_info_t info = {
        .ctx = ctx, .origin = src, .args = args, .args_size = h->payload};
    ompc_status_t st = e->fn(&info);
    atomic_fetch_add_explicit(&ctx->st_served, 1, memory_order_relaxed);
    if (st != OMPC_OK)
        ompc_fatal("rank %d: %s, posted by rank %d, failed: %s", ctx->rank, e->name, src,
                   ompc_status_str(st));
}

ompc_status_t ev_start_control(ev_ctx_t *ctx, int kind, int rank, ev_handle_t **h_p)
{
    CHECK_HP(h_p);
    ev_op_t *op;
    ompc_status_t st = start_new(ctx, kind, rank, origin_simple_step, &op);
    if (st != OMPC_OK)
        return st;
    return ev_origin_start(ctx, op, h_p);
}

ompc_status_t ev_sync(ev_ctx_t *ctx, int rank, ev_handle_t **h_p)
{
    return ev_start_control(ctx, EV_K_SYNC, rank, h_p);
}

ompc_status_t ev_sync_all(ev_ctx_t *ctx)
{
    ev_handle_t **hs = calloc((size_t)ctx->size, sizeof(*hs));
    if (!hs)
        return OMPC_ERR_NOMEM;
    ompc_status_t first = OMPC_OK;
    int n = 0;
    for (int r = 0; r < ctx->size; r++) {
        ompc_status_t st = ev_sync(ctx, r, &hs[n]);
        if (st == OMPC_OK)
            n++;
        else if (first == OMPC_OK)
            first = st;
    }
    ompc_status_t st = ev_wait_all(hs, (size_t)n);
    for (int i = 0; i < n; i++)
        ev_handle_release(hs[i]);
    free(hs);
    return first != OMPC_OK ? first : st;
}

/* ------------------------------------------------------------ functions */
ompc_status_t ev_fn_register(ev_ctx_t *ctx, const char *name, ev_fn_t fn, unsigned flags,
                             ev_fn_id_t *id_p)
{
    if (!fn || !name || !id_p)
        return OMPC_ERR_INVALID;
    if (atomic_load(&ctx->started)) {
        ompc_error("rank %d: function %s registered after ev_ctx_start; "
                   "register every function before starting",
                   ctx->rank, name);
        return OMPC_ERR_INVALID;
    }
    pthread_mutex_lock(&ctx->fn_mtx);
    int n = atomic_load(&ctx->nfns);
    if (n >= EV_MAX_FNS) {
        pthread_mutex_unlock(&ctx->fn_mtx);
        return OMPC_ERR_NOMEM;
    }
    ctx->fns[n] = (ev_fn_entry_t){.name = name, .fn = fn, .flags = flags};
    atomic_store_explicit(&ctx->nfns, n + 1, memory_order_release);
    pthread_mutex_unlock(&ctx->fn_mtx);
    *id_p = n;
    return OMPC_OK;
}

const ev_fn_entry_t *ev_fn_lookup(ev_ctx_t *ctx, int64_t id)
{
    if (id < 0 || id >= atomic_load_explicit(&ctx->nfns, memory_order_acquire))
        return NULL;
    return &ctx->fns[id];
}

ompc_status_t ev_mem_register(ev_ctx_t *ctx, void *base, size_t size)
{
    if (!base)
        return OMPC_ERR_INVALID;
    return ev_region_insert(ctx, (uintptr_t)base, size, false);
}

bool ev_mem_contains(ev_ctx_t *ctx, const void *base, size_t size)
{
    return ev_region_contains(ctx, (uintptr_t)base, size);
}

ompc_status_t ev_mem_unregister(ev_ctx_t *ctx, void *base)
{
    return ev_region_remove(ctx, (uintptr_t)base, false);
}
