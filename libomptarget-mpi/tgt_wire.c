/* Encoding and checked decoding of the launch messages (tgt_wire.h says
 * what each holds).  Plain C on byte buffers, no runtime state, so that a
 * fuzz target can drive the decoders alone. */
#include "tgt_wire.h"

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static unsigned char *put(unsigned char *p, const void *src, size_t len)
{
    if (len)
        memcpy(p, src, len);
    return p + len;
}

/* ------------------------------------------------------ kernel launch */
unsigned char *tgt_wire_kernel_put(unsigned char *p, uint32_t kernel, uint32_t nargs,
                                   const uint64_t *args)
{
    tgt_wire_kernel_t h = {kernel, nargs};
    p = put(p, &h, sizeof(h));
    return put(p, args, (size_t)nargs * sizeof(uint64_t));
}

unsigned char *tgt_wire_count_put(unsigned char *p, uint64_t count)
{
    return put(p, &count, sizeof(count));
}

unsigned char *tgt_wire_copy_put(unsigned char *p, uint64_t addr, const void *bytes,
                                 uint64_t len)
{
    tgt_wire_span_t s = {addr, len};
    p = put(p, &s, sizeof(s));
    p = put(p, bytes, len);
    memset(p, 0, tgt_wire_pad8(len) - len);
    return p + (tgt_wire_pad8(len) - len);
}

unsigned char *tgt_wire_back_put(unsigned char *p, uint64_t addr, uint64_t len)
{
    tgt_wire_span_t s = {addr, len};
    return put(p, &s, sizeof(s));
}

bool tgt_wire_kernel_peek(const void *m, size_t len, uint32_t *kernel_p)
{
    tgt_wire_kernel_t h;
    if (len < sizeof(h))
        return false;
    memcpy(&h, m, sizeof(h));
    *kernel_p = h.kernel;
    return true;
}

const char *tgt_wire_kernel_decode(const void *m, size_t len, tgt_wire_kernel_view_t *v_p)
{
    const unsigned char *p = m, *end = p + len;
    tgt_wire_kernel_view_t v = {0};
    tgt_wire_kernel_t h;
    if (len < sizeof(h))
        return "shorter than a kernel launch's header";
    memcpy(&h, p, sizeof(h));
    v.kernel = h.kernel;
    v.nargs = h.nargs;
    p += sizeof(h);
    if ((size_t)(end - p) / sizeof(uint64_t) < h.nargs)
        return "shorter than the kernel arguments it counts";
    v.args = p;
    p += (size_t)h.nargs * sizeof(uint64_t);
    if (p != end) {
        if ((size_t)(end - p) < sizeof(uint64_t))
            return "a block of copies without its count";
        v.ncopies = get_u64(p);
        p += sizeof(uint64_t);
        v.copies = p;
        for (uint64_t c = 0; c < v.ncopies; c++) {
            tgt_wire_span_t s;
            if ((size_t)(end - p) < sizeof(s))
                return "shorter than the copies it counts";
            memcpy(&s, p, sizeof(s));
            p += sizeof(s);
            if (s.len > (size_t)(end - p) || tgt_wire_pad8(s.len) > (size_t)(end - p))
                return "a copy longer than the message";
            p += tgt_wire_pad8(s.len);
        }
    }
    if (p != end) {
        if ((size_t)(end - p) < sizeof(uint64_t))
            return "a block of read-backs without its count";
        v.has_backs = true;
        v.nbacks = get_u64(p);
        p += sizeof(uint64_t);
        v.backs = p;
        if (v.nbacks > (size_t)(end - p) / sizeof(tgt_wire_span_t) ||
            (size_t)(end - p) != v.nbacks * sizeof(tgt_wire_span_t))
            return "read-backs that do not fill the message";
    }
    *v_p = v;
    return NULL;
}

const unsigned char *tgt_wire_copy_next(const unsigned char *p, tgt_wire_span_t *s_p,
                                        const void **bytes_p)
{
    memcpy(s_p, p, sizeof(*s_p));
    *bytes_p = p + sizeof(*s_p);
    return p + tgt_wire_copy_size(s_p->len);
}

/* ------------------------------------------------------- launch ahead */
size_t tgt_wire_launch_size(const tgt_wire_launch_t *h)
{
    return sizeof(*h) + h->ncommit * sizeof(tgt_wire_commit_t) +
           h->nafter * sizeof(uint64_t) + h->npull * sizeof(tgt_wire_pull_t) +
           h->nclose * sizeof(tgt_wire_commit_t) + tgt_wire_pad8(h->klen);
}

void tgt_wire_launch_put(void *buf, const tgt_wire_launch_t *h,
                         const tgt_wire_commit_t *commits, const uint64_t *afters,
                         const tgt_wire_pull_t *pulls, const tgt_wire_commit_t *closes,
                         const void *kmsg)
{
    unsigned char *p = buf;
    p = put(p, h, sizeof(*h));
    p = put(p, commits, h->ncommit * sizeof(*commits));
    p = put(p, afters, h->nafter * sizeof(*afters));
    p = put(p, pulls, h->npull * sizeof(*pulls));
    p = put(p, closes, h->nclose * sizeof(*closes));
    p = put(p, kmsg, h->klen);
    memset(p, 0, tgt_wire_pad8(h->klen) - h->klen);
}

unsigned char *tgt_wire_batch_begin(void *buf, uint64_t count, uint64_t gen, bool prompt)
{
    tgt_wire_batch_t b = {count, gen << 1 | (prompt ? 1u : 0u)};
    return put(buf, &b, sizeof(b));
}

/* Whether the bytes at p are exactly one launch; its view if so. */
static bool launch_parse(const unsigned char *p, size_t bytes, tgt_wire_launch_view_t *l)
{
    tgt_wire_launch_t h;
    size_t words = bytes / sizeof(uint64_t);
    if (bytes < sizeof(h))
        return false;
    memcpy(&h, p, sizeof(h));
    /* Each count bounded first, so that the sum below cannot wrap. */
    if (h.ncommit > words || h.nafter > words || h.npull > words || h.nclose > words ||
        h.klen > bytes || tgt_wire_launch_size(&h) != bytes)
        return false;
    l->h = h;
    l->commits = p + sizeof(h);
    l->afters = l->commits + h.ncommit * sizeof(tgt_wire_commit_t);
    l->pulls = l->afters + h.nafter * sizeof(uint64_t);
    l->closes = l->pulls + h.npull * sizeof(tgt_wire_pull_t);
    l->kmsg = l->closes + h.nclose * sizeof(tgt_wire_commit_t);
    return true;
}

const char *tgt_wire_batch_open(const void *m, size_t len, tgt_wire_batch_reader_t *r_p)
{
    const unsigned char *p = m, *end = p + len;
    tgt_wire_batch_t b;
    if (len % sizeof(uint64_t) || len < sizeof(b))
        return "not a whole number of words, or shorter than a batch header";
    memcpy(&b, p, sizeof(b));
    p += sizeof(b);
    if (b.count > len / sizeof(uint64_t))
        return "more launches than the message has words";
    for (uint64_t i = 0; i < b.count; i++) {
        tgt_wire_launch_view_t l;
        if ((size_t)(end - p) < sizeof(uint64_t))
            return "shorter than the launches it counts";
        uint64_t words = get_u64(p);
        p += sizeof(uint64_t);
        if (words > (size_t)(end - p) / sizeof(uint64_t))
            return "a launch longer than the message";
        if (!launch_parse(p, words * sizeof(uint64_t), &l))
            return "a launch whose counts do not add up to its length";
        p += words * sizeof(uint64_t);
    }
    if (p != end)
        return "bytes after the last launch";
    *r_p = (tgt_wire_batch_reader_t){.count = b.count,
                                     .gen = b.mode >> 1,
                                     .prompt = b.mode & 1,
                                     .left = b.count,
                                     .at = (const unsigned char *)m + sizeof(b)};
    return NULL;
}

bool tgt_wire_batch_next(tgt_wire_batch_reader_t *r, tgt_wire_launch_view_t *l_p)
{
    if (!r->left)
        return false;
    size_t bytes = get_u64(r->at) * sizeof(uint64_t);
    r->at += sizeof(uint64_t);
    bool ok = launch_parse(r->at, bytes, l_p); /* checked by open */
    r->at += bytes;
    r->left--;
    return ok;
}

/* ------------------------------------------------ one-way notifications */
static const char *array_open(size_t len, size_t elem, size_t *n_p)
{
    if (len == 0 || len % elem)
        return "empty, or not a whole number of entries";
    *n_p = len / elem;
    return NULL;
}

const char *tgt_wire_watches_open(const void *m, size_t len, size_t *n_p)
{
    (void)m;
    return array_open(len, sizeof(tgt_wire_watch_t), n_p);
}

const char *tgt_wire_dones_open(const void *m, size_t len, size_t *n_p)
{
    (void)m;
    return array_open(len, sizeof(tgt_wire_done_t), n_p);
}

size_t tgt_wire_arrive_size(const tgt_wire_arrive_t *h)
{
    return sizeof(*h) + (h->has_bytes ? h->size : 0);
}

void tgt_wire_arrive_put(void *buf, const tgt_wire_arrive_t *h, const void *bytes)
{
    unsigned char *p = put(buf, h, sizeof(*h));
    if (h->has_bytes)
        put(p, bytes, h->size);
}

const char *tgt_wire_arrive_open(const void *m, size_t len, tgt_wire_arrive_t *h_p,
                                 const void **bytes_p)
{
    tgt_wire_arrive_t h;
    if (len < sizeof(h))
        return "shorter than its header";
    memcpy(&h, m, sizeof(h));
    if (len - sizeof(h) != (h.has_bytes ? h.size : 0))
        return "a length other than its header says";
    *h_p = h;
    *bytes_p = h.has_bytes ? (const unsigned char *)m + sizeof(h) : NULL;
    return NULL;
}

const char *tgt_wire_prompt_open(const void *m, size_t len, tgt_wire_prompt_t *p_p)
{
    if (len != sizeof(*p_p))
        return "not one generation";
    memcpy(p_p, m, sizeof(*p_p));
    return NULL;
}

const char *tgt_wire_patch_open(const void *m, size_t len, tgt_wire_patch_t *h_p,
                                const unsigned char **runs_p, size_t *runs_len_p)
{
    tgt_wire_patch_t h;
    if (len < sizeof(h))
        return "shorter than its header";
    memcpy(&h, m, sizeof(h));
    const unsigned char *runs = (const unsigned char *)m + sizeof(h), *p = runs;
    size_t left = len - sizeof(h);
    while (left > 0) {
        uint64_t addr, rl;
        if (left < 16)
            return "a run shorter than its header";
        memcpy(&addr, p, 8);
        memcpy(&rl, p + 8, 8);
        if (rl == 0 || addr == 0 || rl > left - 16 ||
            ((rl + 7) & ~(uint64_t)7) > left - 16)
            return "a run longer than the message";
        size_t run = 16 + (size_t)((rl + 7) & ~(uint64_t)7);
        p += run;
        left -= run;
    }
    *h_p = h;
    *runs_p = runs;
    *runs_len_p = len - sizeof(h);
    return NULL;
}
