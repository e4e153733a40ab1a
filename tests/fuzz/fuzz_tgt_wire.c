/* Fuzz target: the launch message decoders (libomptarget-mpi/tgt_wire.c).
 * Byte 0 picks the message (modulo 6: kernel launch, launch batch, watches,
 * completions, arrive, prompt), the rest is the message as received.
 *
 * Wrong answers: a refusal without a reason; an accepted message whose
 * parts reach outside it or do not add up to its length; an accepted
 * launch that does not encode back to the same bytes (padding aside). */
#include "fuzz.h"

#include "tgt_wire.h"

#include <stdlib.h>
#include <string.h>

const char *const fuzz_dict[] = {
    "\x01\x00\x00\x00\x00\x00\x00\x00",
    "\x00\x00\x00\x00\x00\x00\x00\x00",
    "\xff\xff\xff\xff\xff\xff\xff\xff",
    "\x06\x00\x00\x00\x00\x00\x00\x00",
    "\x30\x00\x00\x00\x00\x00\x00\x00",
    "\x00\x80\x00\x00\x00\x00\x00\x00",
    NULL,
};

static const unsigned char *msg_end;

static void inside(const void *p, size_t len, const char *what)
{
    const unsigned char *q = p;
    if (!q || q > msg_end || len > (size_t)(msg_end - q))
        fuzz_fail("accepted, but %s reaches outside the message", what);
}

static void refused(const char *why)
{
    if (!why[0])
        fuzz_fail("refused without a reason");
}

static void kernel(const unsigned char *m, size_t len)
{
    tgt_wire_kernel_view_t v;
    const char *bad = tgt_wire_kernel_decode(m, len, &v);
    if (bad) {
        refused(bad);
        return;
    }
    inside(v.args, (size_t)v.nargs * sizeof(uint64_t), "the arguments");
    const unsigned char *p = v.copies;
    for (uint64_t c = 0; c < v.ncopies; c++) {
        tgt_wire_span_t s;
        const void *bytes;
        inside(p, sizeof(s), "a copy's header");
        p = tgt_wire_copy_next(p, &s, &bytes);
        inside(bytes, s.len, "a copy");
    }
    if (v.has_backs)
        inside(v.backs, v.nbacks * sizeof(tgt_wire_span_t), "the read-backs");
}

static void batch(const unsigned char *m, size_t len)
{
    tgt_wire_batch_reader_t r;
    const char *bad = tgt_wire_batch_open(m, len, &r);
    if (bad) {
        refused(bad);
        return;
    }
    size_t total = sizeof(tgt_wire_batch_t), n = 0;
    tgt_wire_launch_view_t l;
    while (tgt_wire_batch_next(&r, &l)) {
        size_t size = tgt_wire_launch_size(&l.h);
        inside(l.kmsg, l.h.klen, "a launch's kernel message");
        /* Encoded again from its parts, the launch is the same bytes up to
         * the kernel message's padding. */
        unsigned char *again = malloc(size ? size : 1);
        if (!again)
            fuzz_fail("out of memory");
        tgt_wire_commit_t *c = malloc(l.h.ncommit * sizeof(*c) + 1);
        uint64_t *a = malloc(l.h.nafter * sizeof(*a) + 1);
        tgt_wire_pull_t *p = malloc(l.h.npull * sizeof(*p) + 1);
        tgt_wire_commit_t *x = malloc(l.h.nclose * sizeof(*x) + 1);
        if (!c || !a || !p || !x)
            fuzz_fail("out of memory");
        for (uint64_t i = 0; i < l.h.ncommit; i++)
            c[i] = tgt_wire_commit_get(&l, i);
        for (uint64_t i = 0; i < l.h.nafter; i++)
            a[i] = tgt_wire_after_get(&l, i);
        for (uint64_t i = 0; i < l.h.npull; i++)
            p[i] = tgt_wire_pull_get(&l, i);
        for (uint64_t i = 0; i < l.h.nclose; i++)
            x[i] = tgt_wire_close_get(&l, i);
        tgt_wire_launch_put(again, &l.h, c, a, p, x, l.kmsg);
        size_t pad = tgt_wire_pad8(l.h.klen) - l.h.klen;
        const unsigned char *start = (const unsigned char *)l.commits - sizeof(l.h);
        if (memcmp(again, start, size - pad) != 0)
            fuzz_fail("launch %zu does not encode back to its bytes", n);
        free(again);
        free(c);
        free(a);
        free(p);
        free(x);
        total += tgt_wire_batch_item_size(size);
        n++;
    }
    if (n != r.count || total != len)
        fuzz_fail("%zu launches in %zu bytes, but the batch says %llu in %zu", n, total,
                  (unsigned long long)r.count, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    /* A copy, so that the sanitizers see the message's exact end. */
    size_t len = size - 1;
    unsigned char *m = malloc(len ? len : 1);
    if (!m)
        fuzz_fail("out of memory");
    memcpy(m, data + 1, len);
    msg_end = m + len;
    const char *bad = NULL;
    size_t n = 0;
    switch (data[0] % 6) {
    case 0: kernel(m, len); break;
    case 1: batch(m, len); break;
    case 2:
        bad = tgt_wire_watches_open(m, len, &n);
        if (!bad && n * sizeof(tgt_wire_watch_t) != len)
            fuzz_fail("%zu watches in %zu bytes", n, len);
        for (size_t i = 0; !bad && i < n; i++)
            (void)tgt_wire_watch_get(m, i);
        break;
    case 3:
        bad = tgt_wire_dones_open(m, len, &n);
        if (!bad && n * sizeof(tgt_wire_done_t) != len)
            fuzz_fail("%zu completions in %zu bytes", n, len);
        for (size_t i = 0; !bad && i < n; i++)
            (void)tgt_wire_done_get(m, i);
        break;
    case 4: {
        tgt_wire_arrive_t h;
        const void *bytes;
        bad = tgt_wire_arrive_open(m, len, &h, &bytes);
        if (!bad && tgt_wire_arrive_size(&h) != len)
            fuzz_fail("arrive of %zu bytes accepted as %zu", len,
                      tgt_wire_arrive_size(&h));
        if (!bad && h.has_bytes)
            inside(bytes, h.size, "the forwarded bytes");
        break;
    }
    default: {
        tgt_wire_prompt_t p;
        bad = tgt_wire_prompt_open(m, len, &p);
        break;
    }
    }
    if (bad)
        refused(bad);
    free(m);
    return 0;
}
