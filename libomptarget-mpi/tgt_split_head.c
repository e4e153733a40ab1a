/* Loops split across workers, the head's half (tgt_split.h): which
 * kernels to split, running the shares, checking and merging what they
 * wrote, and running a kernel unsplit when the merge would not be sound.
 * docs/architecture.md, "Loops split across workers", says why each step
 * is there. */
#define _GNU_SOURCE
#include "tgt_split.h"
#include "ompc_trace.h"
#include "tgt_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Per kernel, what launches showed (bits), and why it runs unsplit. */
#define KS_TEAMS 0x1u    /* launched as a teams region */
#define KS_NOTEAMS 0x2u  /* launched without teams, or with one team */
#define KS_UNSPLIT 0x4u  /* a split of it was not sound: never again */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic unsigned *kstate;
/* OMPC_STATS, per kernel (split_mtx). */
typedef struct kstats {
    uint64_t merged, undone, reduced;
    uint32_t shares, teams;  /* of the last split */
    uint64_t ranges, bytes;  /* merged: changed ranges, bytes moved home */
    uint64_t in_ns, run_ns, merge_ns;
    /* OMPC_SPLIT=auto: the kernel's time whole (s; learnt before it was
     * split), the overhead of its last split beyond its longest share (s)
     * and that split's shares, the launches to wait after a split that did
     * not gain, and the decisions made. */
    double whole_s, over_s;
    int over_w;
    int64_t backoff;
    uint64_t auto_split, auto_whole;
    /* Share sizes: whether the last split's parts were unequal, and where
     * its shares started (TGT_SPLIT_WSCALE units, nsh + 1 of them). */
    bool sized, spread;      /* spread: the last split kept writes in place */
    uint32_t cum[65];
} kstats_t;
static kstats_t *kstats;
/* OMPC_SPLIT=auto: launches of each kernel to run whole before it is
 * considered again (tgt_split_wanted reads it without split_mtx). */
static _Atomic int64_t *kskip;
/* The head's memory bandwidth, bytes/s (auto's model of twinning), and
 * the time of a write fault on a fresh page, s (auto's model of the pages
 * a first split touches for the first time: twins, inputs a helper
 * receives).  The workers are taken to be alike. */
static double mem_bw, fault_s;
static size_t page_size;
static bool interposed;
/* One split at a time: every executor runs at most one share, and the
 * shares of two splits never wait for each other. */
static pthread_mutex_t split_mtx = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_key;    /* split_mtx */

/* What the last split merged on this thread, for tgt_split_after. */
static _Thread_local struct {
    bool pending;
    int nsh;
    int ex[64];
    bool *changed;           /* per buffer of wr */
    size_t nwr;
    /* Per buffer of wr: the pieces to leave spread (keep_pieces), or
     * none (merged at home). */
    dm_piece_t **pieces;
    size_t *npieces;
} last;

static void last_clear(void)
{
    for (size_t b = 0; last.pieces && b < last.nwr; b++)
        free(last.pieces[b]);
    free(last.pieces);
    free(last.npieces);
    free(last.changed);
    last.pieces = NULL;
    last.npieces = NULL;
    last.changed = NULL;
    last.pending = false;
}

static void split_init(void)
{
    kstate = calloc(tgt_rt->nkernels > 0 ? (size_t)tgt_rt->nkernels : 1, sizeof(*kstate));
    kstats = calloc(tgt_rt->nkernels > 0 ? (size_t)tgt_rt->nkernels : 1, sizeof(*kstats));
    kskip = calloc(tgt_rt->nkernels > 0 ? (size_t)tgt_rt->nkernels : 1, sizeof(*kskip));
    if (!kstate || !kstats || !kskip)
        ompc_fatal("out of memory for the split state of kernels");
    if (ompc_config_get()->split < 0) {
        /* Twinning is a copy and a compare: a copy's speed, best of 3. */
        size_t n = (size_t)4 << 20;
        char *a = malloc(n), *b = malloc(n);
        double best = 0;
        for (int r = 0; a && b && r < 3; r++) {
            memset(a, r, n);
            uint64_t t = ompc_now_ns();
            memcpy(b, a, n);
            /* The copy is never read: without this the compiler drops it
             * (and the buffers), and the speed measured is of nothing. */
            __asm__ volatile("" : : "r"(a), "r"(b) : "memory");
            uint64_t d = ompc_now_ns() - t;
            double bw = (double)n / ((double)(d ? d : 1) * 1e-9);
            if (bw > best)
                best = bw;
        }
        free(a);
        free(b);
        mem_bw = best > 0 ? best : 1e9;
        /* A write fault per fresh page: best of 3 over 4 MiB mapped anew. */
        long ps = sysconf(_SC_PAGESIZE);
        page_size = ps > 0 ? (size_t)ps : 4096;
        double fbest = 0;
        for (int r = 0; r < 3; r++) {
            char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            if (m == MAP_FAILED)
                break;
            uint64_t t = ompc_now_ns();
            for (size_t o = 0; o < n; o += page_size)
                ((volatile char *)m)[o] = 1;
            double per = (double)(ompc_now_ns() - t) * 1e-9 / (double)(n / page_size);
            munmap(m, n);
            if (fbest == 0 || per < fbest)
                fbest = per;
        }
        fault_s = fbest;
    }
    interposed = tgt_split_interposed();
    if (!interposed && ompc_config_get()->split != 0)
        ompc_warn("OMPC_SPLIT is set but libomp's teams entry points do not reach "
                  "this runtime (the program was not linked by ompcc, with the "
                  "offloading runtime ahead of libomp): no kernel is split");
}

void tgt_split_note(const tgt_kernel_t *k, int32_t num_teams)
{
    if (ompc_config_get()->split == 0 || !k)
        return;
    pthread_once(&once, split_init);
    atomic_fetch_or(&kstate[k - tgt_rt->kernels],
                    num_teams >= 0 && num_teams != 1 ? KS_TEAMS : KS_NOTEAMS);
}

bool tgt_split_wanted(const tgt_kernel_t *k)
{
    /* auto (-1): once the kernel's time is known, tgt_split_exec predicts
     * (and may still run it whole); not while it waits out a split that did
     * not gain. */
    int64_t split = ompc_config_get()->split;
    if ((split < 2 && split != -1) || !k || dm_num_executors(tgt_rt->dm) < 2)
        return false;
    pthread_once(&once, split_init);
    if (!interposed || atomic_load(&kstate[k - tgt_rt->kernels]) != KS_TEAMS)
        return false;
    if (split == -1) {
        if (!tgt_model_known(k))
            return false;
        _Atomic int64_t *skip = &kskip[k - tgt_rt->kernels];
        if (atomic_load(skip) > 0) {
            atomic_fetch_sub(skip, 1);
            return false;
        }
    }
    return true;
}

/* A split that did not gain: run whole for ks->backoff launches (8, then
 * doubling to 1024), then predict again (split_mtx). */
#define AUTO_BACKOFF_MIN 8
#define AUTO_BACKOFF_MAX 1024
static void auto_back_off(const tgt_kernel_t *k, kstats_t *ks)
{
    if (ks->backoff < AUTO_BACKOFF_MIN)
        ks->backoff = AUTO_BACKOFF_MIN;
    atomic_store(&kskip[k - tgt_rt->kernels], ks->backoff);
    if (ks->backoff < AUTO_BACKOFF_MAX)
        ks->backoff *= 2;
    ks->whole_s = 0; /* learnt again from the runs whole meanwhile */
}

/* Parts move in steps of this fraction of the work: a boundary that moves
 * costs a split whose shares keep their writes in place the pages between
 * the old and new boundary (fetched on a fault each), which then show as
 * a slower share and move it again. */
#define PART_STEP (TGT_SPLIT_WSCALE / 64)

/* Each share's part of kernel k's work over executors ex (split_mtx):
 * equal while the executors' measured speeds (tgt_model_speed) are within
 * a factor 2 of each other (back to equal once within 1.5), or while its
 * last split kept what its shares wrote in place (the next split's shares
 * fetch what moved boundaries hand them, page by page), else in
 * proportion to them, a share at least a sixteenth of the fastest's so
 * that one slow measurement does not starve an executor of the runs that
 * would measure it again; rounded to PART_STEP, and the last split's parts
 * kept unless one moves by more than a step.  On this VM the speeds of
 * alike workers swing by more than that factor under load, and moving
 * boundaries for it cost more than it saved (docs/performance.md, "shares
 * sized by measured speed").  cum[i] is where share i starts, in
 * TGT_SPLIT_WSCALE units; cum[nsh] the whole. */
static void share_parts(const tgt_kernel_t *k, kstats_t *ks, const int *ex, int nsh,
                        uint32_t *cum)
{
    double sp[nsh], max = 0, min = 0, sum = 0;
    for (int i = 0; i < nsh; i++) {
        sp[i] = tgt_model_speed(k, ex[i]);
        max = sp[i] > max ? sp[i] : max;
        min = i == 0 || sp[i] < min ? sp[i] : min;
    }
    bool unequal = nsh <= 64 && !ks->spread && max > 0 &&
                   min < max / (ks->sized ? 1.5 : 2.0);
    for (int i = 0; i < nsh; i++) {
        if (!unequal || !(sp[i] >= max / 16))
            sp[i] = unequal ? max / 16 : 1;
        sum += sp[i];
    }
    double at = 0;
    cum[0] = 0;
    for (int i = 0; i < nsh; i++) {
        at += sp[i];
        uint64_t c = (uint64_t)TGT_SPLIT_WSCALE * (uint64_t)(i + 1) / (uint64_t)nsh;
        if (unequal && sum > 0)
            c = ((uint64_t)(at / sum * TGT_SPLIT_WSCALE) + PART_STEP / 2) / PART_STEP *
                PART_STEP;
        cum[i + 1] = c < cum[i]             ? cum[i]
                     : c > TGT_SPLIT_WSCALE ? TGT_SPLIT_WSCALE
                                            : (uint32_t)c;
    }
    cum[nsh] = TGT_SPLIT_WSCALE;
    if (nsh > 64)
        return;
    bool keep = unequal && ks->sized && ks->shares == (uint32_t)nsh;
    for (int i = 1; keep && i < nsh; i++) {
        int64_t d = (int64_t)cum[i] - (int64_t)ks->cum[i];
        keep = d <= PART_STEP && d >= -(int64_t)PART_STEP;
    }
    if (keep)
        memcpy(cum, ks->cum, (size_t)(nsh + 1) * sizeof(*cum));
    ks->sized = unequal;
    memcpy(ks->cum, cum, (size_t)(nsh + 1) * sizeof(*cum));
}

/* OMPC_SPLIT=auto: the number of shares that the model predicts is
 * fastest for kernel k at home with buffers bufs (wr: the ones it may
 * write), or 0 for whole (split_mtx).  The shares together run as fast as
 * their executors' measured speeds add up (whole on one: the kernel's
 * time there); the split's overhead is what the last split of it cost
 * beyond its longest share (scaled by its helpers), or before any: the
 * bytes of its buffers the helpers lack moved to them, the written ones
 * moved back, twinning (a copy and a compare on every share), and a write
 * fault per page a share touches for the first time (its twins, and what
 * a helper receives), over the measured link, memory and fault speeds
 * (docs/architecture.md, "Loops split across workers", auto). */
static int auto_shares(const tgt_kernel_t *k, int home, int ne, dm_buf_t *const *bufs,
                       size_t nbufs, dm_buf_t *const *wr, size_t nwr, double *whole_p,
                       double *pred_p)
{
    kstats_t *ks = &kstats[k - tgt_rt->kernels];
    if (ks->whole_s <= 0)
        ks->whole_s = tgt_model_cost(k, home);
    double whole = ks->whole_s, t = 0, data = 0, ibw = 0;
    for (size_t b = 0; b < nwr; b++)
        t += (double)dm_buf_size(wr[b]);
    for (size_t b = 0; b < nbufs; b++)
        if (dm_buf_has_data(tgt_rt->dm, bufs[b]))
            data += (double)dm_buf_size(bufs[b]);
    size_t *valid = calloc((size_t)ne, sizeof(*valid));
    if (!valid)
        ompc_fatal("out of memory predicting a split of kernel %s", k->name);
    dm_bytes_valid_each(tgt_rt->dm, bufs, nbufs, valid);
    for (int i = 1; i < ne; i++) {
        double v = tgt_model_inv_bw((home + i) % ne);
        if (v > ibw)
            ibw = v;
    }
    double lat = tgt_model_lat(home);
    double pg = (double)(page_size ? page_size : 4096);
    int best = 0;
    double best_t = whole, speed = whole > 0 ? 1 / whole : 0, moved = 0, lack_max = 0;
    double pmin = 0; /* the fastest split, chosen or not (OMPC_INFO) */
    for (int w = 2; w <= ne; w++) {
        int h = (home + w - 1) % ne;
        speed += tgt_model_speed(k, h);
        double lack = data - (double)valid[h];
        lack = lack > 0 ? lack : 0;
        moved += lack;
        lack_max = lack > lack_max ? lack : lack_max;
        double over = ks->over_w > 1
                          ? ks->over_s * (double)(w - 1) / (double)(ks->over_w - 1)
                          : moved * ibw + (double)(w - 1) / (double)w * t * ibw +
                                3 * t / mem_bw + fault_s * (t + lack_max) / pg + 2 * lat;
        double p = (speed > 0 ? 1 / speed : whole / (double)w) + over;
        if (pmin == 0 || p < pmin)
            pmin = p;
        if (p < best_t) {
            best_t = p;
            best = w;
        }
    }
    free(valid);
    *whole_p = whole;
    *pred_p = pmin > 0 ? pmin : best_t;
    /* A gain of a tenth at least: the model's figures are estimates. */
    return best && best_t < 0.9 * whole ? best : 0;
}

/* Why a share cannot be merged, for OMPC_INFO. */
static const char *flag_reason(uint32_t f)
{
    if (f & TGT_SPLIT_NO_TEAMS)
        return "it runs no teams region";
    if (f & TGT_SPLIT_NESTED_TEAMS)
        return "it runs more than one teams region";
    if (f & TGT_SPLIT_NO_DIST)
        return "a team runs no static distribute loop (every team would run the "
               "whole region)";
    if (f & TGT_SPLIT_RED_SHAPE)
        return "its reduction across teams is over more than one variable, a "
               "variable-length array section, or more than eight pointer arguments "
               "(not split yet)";
    if (f & TGT_SPLIT_CRITICAL)
        return "it has a critical section, which excludes across teams";
    if (f & TGT_SPLIT_TOO_MANY)
        return "a share changed too many separate byte ranges to merge";
    return "unknown";
}

typedef struct tagged {
    tgt_split_range_t r;
    uint32_t share;
} tagged_t;

static int tagged_cmp(const void *a, const void *b)
{
    const tgt_split_range_t *x = &((const tagged_t *)a)->r,
                            *y = &((const tagged_t *)b)->r;
    if (x->buf != y->buf)
        return x->buf < y->buf ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Two shares changed one byte: describes it into why.  t is sorted by
 * buffer and offset; end[s] is how far share s's ranges of the current
 * buffer reach (a share's own ranges never overlap each other). */
static bool find_overlap(tagged_t *t, size_t n, int nsh, dm_buf_t *const *wr, char *why,
                         size_t cap)
{
    qsort(t, n, sizeof(*t), tagged_cmp);
    uint64_t end[nsh];
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || t[i].r.buf != t[i - 1].r.buf)
            memset(end, 0, sizeof(end));
        for (int s = 0; s < nsh; s++) {
            if ((uint32_t)s == t[i].share || end[s] <= t[i].r.off)
                continue;
            snprintf(why, cap,
                     "shares %d and %u both changed bytes near offset %llu of the "
                     "buffer at device address %#llx (%zu bytes): the loop writes "
                     "outside its share",
                     s, t[i].share, (unsigned long long)t[i].r.off,
                     (unsigned long long)dm_buf_addr(wr[t[i].r.buf]),
                     dm_buf_size(wr[t[i].r.buf]));
            return true;
        }
        uint64_t e = t[i].r.off + t[i].r.len;
        if (e > end[t[i].share])
            end[t[i].share] = e;
    }
    return false;
}

/* A reduction across teams: the variable's region and the helpers' values
 * of it to combine into the home's. */
typedef struct red {
    uint32_t buf, len;
    uint64_t off;
    bool home_changed;
    size_t nparts;
    unsigned char *parts;    /* nparts x tgt_pad8(len) bytes */
} red_t;

static const tgt_split_cand_t *reply_cand(const char *p, uint32_t buf, uint64_t off)
{
    tgt_split_reply_t rep;
    memcpy(&rep, p, sizeof(rep));
    const char *c = p + sizeof(rep) + (size_t)rep.nranges * sizeof(tgt_split_range_t);
    for (uint32_t i = 0; i < rep.ncands; i++) {
        const tgt_split_cand_t *cd = (const tgt_split_cand_t *)(c + i * sizeof(*cd));
        if (cd->buf == buf && cd->off == off)
            return cd;
    }
    return NULL;
}

/* When the shares' teams combined a reduction: the variable is the one
 * candidate region (a pointer argument of the teams region to the end of
 * its buffer) that a team changed while combining into it, on any share;
 * every change to that buffer must lie in it.  Its ranges leave t (*n_p),
 * which the byte merge then moves; the helpers that changed it give their
 * values (red).  Sets why when the variable cannot be told apart. */
static red_t find_reduction(const char *res, size_t res_cap, int nsh, tagged_t *t,
                            size_t *n_p, size_t nwr, char *why, size_t cap)
{
    red_t red = {0};
    bool any = false;
    for (int i = 0; i < nsh; i++) {
        tgt_split_reply_t rep;
        memcpy(&rep, res + (size_t)i * res_cap, sizeof(rep));
        any |= rep.reduced != 0;
    }
    if (!any)
        return red;
    tgt_split_reply_t home;
    memcpy(&home, res, sizeof(home));
    if (!home.reduced) {
        snprintf(why, cap,
                 "it has a reduction across teams and the home's share ran "
                 "no team (fewer teams than executors)");
        return red;
    }
    int found = 0;
    tgt_split_cand_t pick = {0};
    for (int i = 0; i < nsh; i++) {
        const char *p = res + (size_t)i * res_cap;
        tgt_split_reply_t rep;
        memcpy(&rep, p, sizeof(rep));
        const char *c0 = p + sizeof(rep) +
                         (size_t)rep.nranges * sizeof(tgt_split_range_t);
        for (uint32_t c = 0; c < rep.ncands; c++) {
            tgt_split_cand_t cd;
            memcpy(&cd, c0 + c * sizeof(cd), sizeof(cd));
            if (!cd.written || (found && cd.buf == pick.buf && cd.off == pick.off))
                continue;
            found++;
            pick = cd;
        }
    }
    if (found == 0) {
        /* No team's combining changed the first bytes after any candidate:
         * nothing to combine, unless the variable is one that reaches past
         * them. */
        const char *hc = res + sizeof(home) +
                         (size_t)home.nranges * sizeof(tgt_split_range_t);
        for (uint32_t c = 0; c < home.ncands; c++) {
            tgt_split_cand_t cd;
            memcpy(&cd, hc + c * sizeof(cd), sizeof(cd));
            if (!cd.len) {
                snprintf(why, cap,
                         "its teams' reduction changed none of the first %d bytes "
                         "after each pointer argument, and one reaches further: the "
                         "reduction variable cannot be found",
                         TGT_SPLIT_CAND_MAX);
                break;
            }
        }
        return red;
    }
    if (found > 1 || pick.buf >= nwr) {
        snprintf(why, cap,
                 "its teams combined their reduction into more than one "
                 "place: the reduction variable cannot be told apart");
        return red;
    }
    if (!pick.len) {
        snprintf(why, cap,
                 "its reduction variable lies more than %d bytes before the "
                 "end of its buffer (not split yet)",
                 TGT_SPLIT_CAND_MAX);
        return red;
    }
    red.buf = pick.buf;
    red.off = pick.off;
    red.len = pick.len;
    size_t step = tgt_pad8(pick.len);
    red.parts = malloc((size_t)nsh * step);
    if (!red.parts)
        ompc_fatal("out of memory combining a split reduction");
    bool part_of[nsh];
    memset(part_of, 0, sizeof(part_of));
    size_t m = 0;
    for (size_t i = 0; i < *n_p; i++) {
        if (t[i].r.buf != red.buf) {
            t[m++] = t[i];
            continue;
        }
        if (t[i].r.off < red.off || t[i].r.off + t[i].r.len > red.off + red.len) {
            snprintf(why, cap,
                     "it has a reduction across teams and changes the "
                     "buffer of its reduction variable outside the variable");
            return red;
        }
        if (t[i].share == 0)
            red.home_changed = true;
        else
            part_of[t[i].share] = true;
    }
    *n_p = m;
    for (int i = 1; i < nsh; i++) {
        if (!part_of[i])
            continue;
        const tgt_split_cand_t *cd = reply_cand(res + (size_t)i * res_cap, red.buf,
                                                red.off);
        if (!cd || cd->len != red.len) {
            snprintf(why, cap,
                     "share %d of its reduction across teams saw other "
                     "arguments than the home's",
                     i);
            return red;
        }
        memset(red.parts + red.nparts * step, 0, step);
        memcpy(red.parts + red.nparts * step, cd->bytes, red.len);
        red.nparts++;
    }
    return red;
}

/* The home combines the helpers' values into its own (tgt.split.reduce). */
static void combine_home(const red_t *red, uint64_t key, int home_rank,
                         const tgt_ident_t *loc, const tgt_kernel_t *k, char *why,
                         size_t cap)
{
    size_t step = tgt_pad8(red->len);
    size_t len = sizeof(tgt_split_reduce_t) + red->nparts * step;
    if (len > EV_EXEC_MAX_ARGS) {
        snprintf(why, cap, "its reduction variable is too large to combine");
        return;
    }
    char *a = malloc(len);
    if (!a)
        ompc_fatal("out of memory combining a split reduction");
    tgt_split_reduce_t h = {TGT_SPLIT_MAGIC, key,      red->buf,
                            red->len,        red->off, red->nparts};
    memcpy(a, &h, sizeof(h));
    memcpy(a + sizeof(h), red->parts, red->nparts * step);
    uint32_t refused = 1;
    ev_handle_t *hd = NULL;
    ompc_status_t st = ev_execute(tgt_rt->ev, home_rank, tgt_rt->fn_split_reduce, a, len,
                                  &refused, sizeof(refused), &hd);
    if (st == OMPC_OK)
        st = ev_wait(hd);
    if (hd)
        ev_handle_release(hd);
    free(a);
    if (st != OMPC_OK)
        TGT_USER_ERROR(loc, "combining the reduction of split kernel %s failed: %s",
                       k->name, ompc_status_str(st));
    if (refused)
        snprintf(why, cap,
                 "its reduction variable's initial value changes when "
                 "combined with itself (e.g. a sum that starts from "
                 "non-zero), and every share starts from it");
}

/* Ends a share: tgt.split.end on rank (not waited for: *h_p). */
static void end_start(int rank, uint64_t key, tgt_split_action_t act, int home_rank,
                      tgt_split_end_t *e, ev_handle_t **h_p, const tgt_ident_t *loc,
                      const tgt_kernel_t *k)
{
    *e = (tgt_split_end_t){TGT_SPLIT_MAGIC, key, (uint32_t)act, home_rank};
    ompc_status_t st = ev_execute(tgt_rt->ev, rank, tgt_rt->fn_split_end, e, sizeof(*e),
                                  NULL, 0, h_p);
    if (st != OMPC_OK)
        TGT_USER_ERROR(loc, "cannot end split kernel %s on rank %d: %s", k->name, rank,
                       ompc_status_str(st));
}

static void wait_all(ev_handle_t **h, size_t n, const tgt_ident_t *loc,
                     const tgt_kernel_t *k);

/* A merged share on rank forgets its state (tgt.split.drop, posted). */
static void drop_post(int rank, uint64_t key, const tgt_ident_t *loc,
                      const tgt_kernel_t *k)
{
    tgt_split_end_t e = {TGT_SPLIT_MAGIC, key, (uint32_t)TGT_SPLIT_DROP, 0};
    ompc_status_t st = ev_post(tgt_rt->ev, rank, tgt_rt->fn_split_drop, &e, sizeof(e));
    if (st != OMPC_OK)
        TGT_USER_ERROR(loc, "cannot end split kernel %s on rank %d: %s", k->name, rank,
                       ompc_status_str(st));
}

/* Ends the share on rank and waits. */
static void end_one(int rank, uint64_t key, tgt_split_action_t act,
                    const tgt_ident_t *loc, const tgt_kernel_t *k)
{
    tgt_split_end_t e;
    ev_handle_t *h;
    end_start(rank, key, act, 0, &e, &h, loc, k);
    wait_all(&h, 1, loc, k);
}

static void wait_all(ev_handle_t **h, size_t n, const tgt_ident_t *loc,
                     const tgt_kernel_t *k)
{
    for (size_t i = 0; i < n; i++) {
        ompc_status_t st = ev_wait(h[i]);
        ev_handle_release(h[i]);
        if (st != OMPC_OK)
            TGT_USER_ERROR(loc, "merging split kernel %s failed: %s", k->name,
                           ompc_status_str(st));
    }
}

/* Every helper's changed bytes go to the home, all at once and worker to
 * worker: long ranges as exchanges, the small ones packed by the helpers
 * that kept them (keeps[i]). */
static void move_home(const tagged_t *t, size_t n, uint64_t key, int nsh,
                      const bool *keeps, const int *ranks, const int *ex,
                      dm_buf_t *const *wr, const tgt_ident_t *loc, const tgt_kernel_t *k)
{
    ev_handle_t **h = malloc((n + (size_t)nsh) * sizeof(*h));
    tgt_split_end_t *e = malloc((size_t)nsh * sizeof(*e));
    if (!h || !e)
        ompc_fatal("out of memory merging kernel %s", k->name);
    size_t m = 0;
    for (int i = 1; i < nsh; i++)
        if (keeps[i])
            end_start(ranks[i], key, TGT_SPLIT_PUSH, ranks[0], &e[i], &h[m++], loc, k);
    for (size_t i = 0; i < n; i++) {
        if (t[i].share == 0 || t[i].r.len <= TGT_SPLIT_SMALL)
            continue;
        dm_buf_t *b = wr[t[i].r.buf];
        ompc_status_t st = ev_exchange(
            tgt_rt->ev, ranks[t[i].share], dm_buf_addr_on(b, ex[t[i].share]) + t[i].r.off,
            ranks[0], dm_buf_addr_on(b, ex[0]) + t[i].r.off, (size_t)t[i].r.len, &h[m]);
        if (st != OMPC_OK)
            TGT_USER_ERROR(loc, "cannot merge share %u of kernel %s: %s", t[i].share,
                           k->name, ompc_status_str(st));
        m++;
    }
    wait_all(h, m, loc, k);
    free(h);
    free(e);
}


/* ------------------------------------------------ shares kept in place
 * After a split, the bytes each share wrote stay on its executor: the
 * data manager records the buffer as spread (dm_spread), with a piece per
 * run of a share's changed ranges and a piece of length 0 per executor of
 * the split (its *members*: every member's copy holds the buffer's bytes
 * outside the pieces, as all started from the same bytes).  The next split
 * over the same executors from the same home fills in each member's copy
 * with the other members' pieces, worker to worker, instead of moving the
 * whole buffer from the home to every helper and the shares back; any
 * other reader gathers the pieces to the home first (data-manager).  The
 * docs (architecture.md, "Loops split across workers") say why it is
 * sound. */

static int piece_off_cmp(const void *a, const void *b)
{
    const dm_piece_t *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Appends a piece to *p_p (m used of cap), growing it; false (and *p_p
 * freed) when out of memory. */
static bool piece_push(dm_piece_t **p_p, size_t *m_p, size_t *cap_p, int exec,
                       uint64_t off, uint64_t len)
{
    if (*m_p == *cap_p) {
        dm_piece_t *np = realloc(*p_p, 2 * *cap_p * sizeof(**p_p));
        if (!np) {
            free(*p_p);
            *p_p = NULL;
            return false;
        }
        *p_p = np;
        *cap_p *= 2;
    }
    (*p_p)[(*m_p)++] = (dm_piece_t){exec, off, len};
    return true;
}

/* The record of buffer buf after a split: the shares' changed ranges
 * (t, n of them, sorted by buffer and offset), plus what the pieces of
 * the record before it (old, nold; NULL: none) still hold outside them;
 * runs of one executor's pieces joined (the bytes between are in no piece,
 * so the same on every member), then the members.  NULL when out of memory
 * (the buffer is merged at the home instead). */
static dm_piece_t *merge_pieces(const dm_piece_t *old, size_t nold, const tagged_t *t,
                                size_t n, uint32_t buf, int nsh, const int *ex,
                                size_t *np_p)
{
    size_t nnew = 0;
    for (size_t i = 0; i < n; i++)
        nnew += t[i].r.buf == buf;
    /* An old piece is cut by each new range at most once in two. */
    size_t cap = nnew + 2 * nold + nnew + (size_t)nsh + 1;
    dm_piece_t *p = malloc(cap * sizeof(*p));
    if (!p)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i].r.buf == buf)
            p[m++] = (dm_piece_t){ex[t[i].share], t[i].r.off, t[i].r.len};
    size_t first_new = 0;
    for (size_t q = 0; q < nold; q++) {
        if (!old[q].len)
            continue;
        uint64_t cur = old[q].off, end = old[q].off + old[q].len;
        for (size_t j = first_new; j < nnew && cur < end; j++) {
            uint64_t ns = p[j].off, ne = p[j].off + p[j].len;
            if (ne <= cur || ns >= end)
                continue;
            if (ns > cur && !piece_push(&p, &m, &cap, old[q].exec, cur, ns - cur))
                return NULL;
            cur = ne;
        }
        if (cur < end && !piece_push(&p, &m, &cap, old[q].exec, cur, end - cur))
            return NULL;
    }
    qsort(p, m, sizeof(*p), piece_off_cmp);
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        if (k > 0 && p[k - 1].exec == p[i].exec) {
            p[k - 1].len = p[i].off + p[i].len - p[k - 1].off;
            continue;
        }
        p[k++] = p[i];
    }
    if (k + (size_t)nsh > cap) {
        dm_piece_t *np = realloc(p, (k + (size_t)nsh) * sizeof(*p));
        if (!np) {
            free(p);
            return NULL;
        }
        p = np;
    }
    for (int i = 0; i < nsh; i++)
        p[k++] = (dm_piece_t){ex[i], 0, 0};
    *np_p = k;
    return p;
}

/* Whether pieces p (n) were left by a split over exactly the executors
 * ex[0..nsh) from home ex[0]. */
static bool same_members(const dm_piece_t *p, size_t n, int rec_home, int nsh,
                         const int *ex)
{
    if (rec_home != ex[0])
        return false;
    int members = 0;
    for (size_t k = 0; k < n; k++) {
        if (p[k].len)
            continue;
        bool in = false;
        for (int i = 0; i < nsh && !in; i++)
            in = ex[i] == p[k].exec;
        if (!in)
            return false;
        members++;
    }
    return members == nsh;
}

/* What fill_in hands to the rest of a split: per buffer of wr, the record
 * taken over whose pieces the helpers fetch when touched (NULL: none), and
 * per share the guards saying so. */
typedef struct keep {
    dm_piece_t **old;
    size_t *nold;
    tgt_split_guard_t **g;
    uint32_t *ng;
    bool *lazy_buf;          /* per buffer of bufs */
} keep_t;

static void keep_free(keep_t *kp, size_t nwr, int nsh)
{
    for (size_t b = 0; kp->old && b < nwr; b++)
        free(kp->old[b]);
    for (int i = 0; kp->g && i < nsh; i++)
        free(kp->g[i]);
    free(kp->old);
    free(kp->nold);
    free(kp->g);
    free(kp->ng);
    free(kp->lazy_buf);
}

/* Before the shares run, for every buffer of bufs that the last split over
 * the same executors from the same home left spread: a member gets the
 * other members' pieces at once if the kernel may not write the buffer,
 * else each one only where its kernel touches it (guards: its halo; the
 * members keep their twins, so that an undone split can put every copy
 * back and gather the pieces home).  Moves run all at once, worker to
 * worker.  Buffers spread otherwise are gathered at their home.  Returns
 * the bytes moved at once. */
static size_t fill_in(dm_buf_t *const *bufs, size_t nbufs, dm_buf_t *const *wr,
                      size_t nwr, int nsh, const int *ex, const int *ranks, keep_t *kp,
                      const tgt_ident_t *loc, const tgt_kernel_t *k)
{
    dm_ctx_t *dm = tgt_rt->dm;
    size_t cap = 0, nh = 0, bytes = 0, fcap = 0, nfilled = 0;
    ev_handle_t **h = NULL;
    dm_buf_t **filled = NULL;
    uint64_t *tags = NULL;
    for (size_t b = 0; b < nbufs; b++) {
        int rec_home;
        dm_piece_t *p;
        size_t np;
        if (!dm_spread_take(dm, bufs[b], &rec_home, &p, &np))
            continue;
        if (!same_members(p, np, rec_home, nsh, ex)) {
            ompc_status_t st = dm_spread(dm, bufs[b], rec_home, p, np);
            if (st == OMPC_OK)
                st = dm_gather(dm, &bufs[b], 1);
            free(p);
            if (st != OMPC_OK)
                TGT_USER_ERROR(loc, "gathering the data of split kernel %s failed: %s",
                               k->name, ompc_status_str(st));
            continue;
        }
        /* Lazy for every member if the shares twin it (it is in wr) and
         * the guards fit in each share's message. */
        size_t wi = nwr;
        for (size_t w = 0; w < nwr && wi == nwr; w++)
            if (wr[w] == bufs[b])
                wi = w;
        bool lazy = wi < nwr;
        for (int i = 0; lazy && i < nsh; i++) {
            size_t cnt = kp->ng[i];
            for (size_t q = 0; q < np; q++)
                cnt += p[q].len && p[q].exec != ex[i];
            lazy = cnt <= TGT_SPLIT_MAX_GUARDS;
        }
        for (size_t q = 0; q < np; q++) {
            if (!p[q].len)
                continue;
            for (int i = 0; i < nsh; i++) {
                if (ex[i] == p[q].exec)
                    continue;
                if (lazy) {
                    tgt_split_guard_t *ng = realloc(kp->g[i],
                                                    (kp->ng[i] + 1) * sizeof(*ng));
                    if (!ng)
                        ompc_fatal("out of memory splitting kernel %s", k->name);
                    kp->g[i] = ng;
                    ng[kp->ng[i]++] = (tgt_split_guard_t){
                        (uint32_t)wi,
                        0,
                        p[q].off,
                        p[q].len,
                        dm_executor_rank(dm, p[q].exec),
                        dm_buf_addr_on(bufs[b], p[q].exec) + p[q].off};
                    continue;
                }
                if (nh == cap) {
                    cap = cap ? 2 * cap : 16;
                    h = realloc(h, cap * sizeof(*h));
                    if (!h)
                        ompc_fatal("out of memory splitting kernel %s", k->name);
                }
                ompc_status_t st = ev_exchange(
                    tgt_rt->ev, dm_executor_rank(dm, p[q].exec),
                    dm_buf_addr_on(bufs[b], p[q].exec) + p[q].off, ranks[i],
                    dm_buf_addr_on(bufs[b], ex[i]) + p[q].off, (size_t)p[q].len, &h[nh]);
                if (st != OMPC_OK)
                    TGT_USER_ERROR(loc, "cannot move a share of split kernel %s: %s",
                                   k->name, ompc_status_str(st));
                nh++;
                bytes += p[q].len;
                dm_count_forward(dm, (size_t)p[q].len);
            }
        }
        if (lazy) {
            /* The helpers' copies stay short of the pieces: no move to
             * them below, and the record goes on after the split. */
            kp->old[wi] = p;
            kp->nold[wi] = np;
            kp->lazy_buf[b] = true;
            continue;
        }
        free(p);
        if (nfilled == fcap) {
            fcap = fcap ? 2 * fcap : 8;
            filled = realloc(filled, fcap * sizeof(*filled));
            tags = realloc(tags, fcap * sizeof(*tags));
            if (!filled || !tags)
                ompc_fatal("out of memory splitting kernel %s", k->name);
        }
        filled[nfilled] = bufs[b];
        tags[nfilled++] = dm_buf_wtag(dm, bufs[b]);
    }
    /* Once the moves are done every member holds each such buffer's
     * current bytes (the ones its last writer, the split, left). */
    wait_all(h, nh, loc, k);
    for (size_t f = 0; f < nfilled; f++)
        for (int i = 0; i < nsh; i++)
            dm_valid_if(dm, ex[i], filled[f], tags[f]);
    free(h);
    free(filled);
    free(tags);
    return bytes;
}

bool tgt_split_exec(const tgt_ident_t *loc, const tgt_kernel_t *k, int home,
                    const char *msg, size_t msg_len, dm_buf_t *const *bufs, size_t nbufs,
                    dm_buf_t *const *wr, size_t nwr, uint64_t *ns_p)
{
    int ne = dm_num_executors(tgt_rt->dm);
    int64_t want = ompc_config_get()->split;
    int nsh = want < ne ? (int)want : ne;
    uint64_t t0 = ompc_now_ns();
    pthread_mutex_lock(&split_mtx);
    double whole = 0, pred = 0;
    if (want < 0) {
        nsh = auto_shares(k, home, ne, bufs, nbufs, wr, nwr, &whole, &pred);
        kstats_t *ks = &kstats[k - tgt_rt->kernels];
        if (nsh < 2) {
            ks->auto_whole++;
            auto_back_off(k, ks);
            pthread_mutex_unlock(&split_mtx);
            if (tgt_rt->info)
                fprintf(stderr,
                        "[ompc info] r0 auto: kernel %s runs whole: %.3f ms whole, "
                        "split predicted no faster (%.3f ms)\n",
                        k->name, whole * 1e3, pred * 1e3);
            return false;
        }
        ks->auto_split++;
    }
    if (nsh < 2) {
        pthread_mutex_unlock(&split_mtx);
        return false;
    }
    uint64_t key = ++next_key;
    int ex[nsh], ranks[nsh];
    for (int i = 0; i < nsh; i++) {
        ex[i] = (home + i) % ne;
        ranks[i] = dm_executor_rank(tgt_rt->dm, ex[i]);
    }
    uint32_t cum[nsh + 1];
    kstats_t *ks = &kstats[k - tgt_rt->kernels];
    share_parts(k, ks, ex, nsh, cum);
    /* The first split of a kernel runs cold (fresh twins, pages touched
     * for the first time): its shares' times say little of the speeds. */
    bool learn = ks->merged + ks->undone > 0;
    /* Buffers the last split over these executors left spread stay in
     * place; inputs reach every share as they reach the home. */
    keep_t kp = {calloc(nwr ? nwr : 1, sizeof(*kp.old)),
                 calloc(nwr ? nwr : 1, sizeof(*kp.nold)),
                 calloc((size_t)nsh, sizeof(*kp.g)), calloc((size_t)nsh, sizeof(*kp.ng)),
                 calloc(nbufs ? nbufs : 1, sizeof(bool))};
    if (!kp.old || !kp.nold || !kp.g || !kp.ng || !kp.lazy_buf)
        ompc_fatal("out of memory splitting kernel %s", k->name);
    size_t filled = fill_in(bufs, nbufs, wr, nwr, nsh, ex, ranks, &kp, loc, k);
    /* The helpers get the rest as the home does, but for the buffers whose
     * missing pieces they fetch when touched. */
    dm_buf_t **hb = malloc((nbufs ? nbufs : 1) * sizeof(*hb));
    size_t nhb = 0;
    if (!hb)
        ompc_fatal("out of memory splitting kernel %s", k->name);
    for (size_t b = 0; b < nbufs; b++)
        if (!kp.lazy_buf[b])
            hb[nhb++] = bufs[b];
    for (int i = 0; i < nsh; i++) {
        ompc_status_t st = i == 0 ? dm_acquire(tgt_rt->dm, ex[0], bufs, nbufs)
                                  : dm_acquire(tgt_rt->dm, ex[i], hb, nhb);
        if (st != OMPC_OK)
            TGT_USER_ERROR(loc,
                           "moving the region's data to executor %d for a split "
                           "failed: %s",
                           ex[i], ompc_status_str(st));
    }
    uint64_t t_in = ompc_now_ns();
    free(hb);
    bool any_lazy = false;
    for (size_t b = 0; b < nwr; b++)
        any_lazy |= kp.old[b] != NULL;
    uint32_t maxg = 0;
    for (int i = 0; i < nsh; i++)
        maxg = kp.ng[i] > maxg ? kp.ng[i] : maxg;
    /* Each share's slot holds the most guards any share has. */
    size_t args_len = sizeof(tgt_split_hdr_t) + nwr * sizeof(tgt_split_buf_t) +
                      (size_t)maxg * sizeof(tgt_split_guard_t) + msg_len;
    size_t res_cap = sizeof(tgt_split_reply_t) +
                     TGT_SPLIT_MAX_RANGES * sizeof(tgt_split_range_t) +
                     TGT_SPLIT_NCANDS * sizeof(tgt_split_cand_t);
    char *args = malloc((size_t)nsh * args_len);
    char *res = malloc((size_t)nsh * res_cap);
    if (!args || !res)
        ompc_fatal("out of memory splitting kernel %s", k->name);
    /* A buffer without data (map(from:), alloc) holds whatever each
     * executor's pages held: zeroed everywhere, every share starts from
     * the same bytes, and a byte a helper wrote equal to its old value is
     * still right on the home.  Declare target variables hold the image's
     * initial values everywhere until written. */
    uint64_t *fresh = calloc(nwr ? nwr : 1, sizeof(*fresh));
    if (!fresh)
        ompc_fatal("out of memory splitting kernel %s", k->name);
    for (size_t b = 0; b < nwr; b++) {
        bool global = false;
        for (int g = 0; g < tgt_rt->nglobals && !global; g++)
            global = tgt_rt->globals[g].buf == wr[b];
        fresh[b] = !global && !dm_buf_has_data(tgt_rt->dm, wr[b]);
    }
    ev_handle_t *h[nsh];
    for (int i = 0; i < nsh; i++) {
        char *a = args + (size_t)i * args_len;
        tgt_split_hdr_t hdr = {TGT_SPLIT_MAGIC, key,
                               (uint32_t)i,     (uint32_t)nsh,
                               ranks[0],        (uint32_t)nwr,
                               kp.ng[i],        any_lazy ? TGT_SPLIT_KEEP_TWINS : 0,
                               cum[i],          cum[i + 1]};
        memcpy(a, &hdr, sizeof(hdr));
        for (size_t b = 0; b < nwr; b++) {
            tgt_split_buf_t sb = {dm_buf_addr_on(wr[b], ex[i]),
                                  dm_buf_addr_on(wr[b], ex[0]), dm_buf_size(wr[b]),
                                  fresh[b]};
            memcpy(a + sizeof(hdr) + b * sizeof(sb), &sb, sizeof(sb));
        }
        size_t at = sizeof(hdr) + nwr * sizeof(tgt_split_buf_t);
        if (kp.ng[i])
            memcpy(a + at, kp.g[i], kp.ng[i] * sizeof(tgt_split_guard_t));
        at += kp.ng[i] * sizeof(tgt_split_guard_t);
        memcpy(a + at, msg, msg_len);
        ompc_status_t st = ev_execute(tgt_rt->ev, ranks[i], tgt_rt->fn_split_run, a,
                                      at + msg_len, res + (size_t)i * res_cap, res_cap,
                                      &h[i]);
        if (st != OMPC_OK)
            TGT_USER_ERROR(loc, "cannot launch share %d of kernel %s: %s", i, k->name,
                           ompc_status_str(st));
    }
    free(fresh);
    uint32_t flags = 0, teams = 0;
    uint64_t t_run = 0, fetched = 0;
    uint64_t ns = 0;
    size_t nranges = 0;
    /* What each share ran, for OMPC_INFO: rank and per mille of the work. */
    char parts[24 * 64] = "";
    size_t plen = 0;
    for (int i = 0; i < nsh; i++) {
        ompc_status_t st = ev_wait(h[i]);
        size_t got = ev_handle_result_size(h[i]);
        ev_handle_release(h[i]);
        if (st != OMPC_OK)
            TGT_USER_ERROR(loc, "share %d of kernel %s failed on executor %d: %s", i,
                           k->name, ex[i], ompc_status_str(st));
        tgt_split_reply_t rep;
        memcpy(&rep, res + (size_t)i * res_cap, sizeof(rep));
        if (rep.ncands > TGT_SPLIT_NCANDS ||
            got != sizeof(rep) + (size_t)rep.nranges * sizeof(tgt_split_range_t) +
                       (size_t)rep.ncands * sizeof(tgt_split_cand_t))
            TGT_USER_ERROR(loc, "share %d of kernel %s sent a malformed reply", i,
                           k->name);
        flags |= rep.flags;
        fetched += rep.fetched;
        if (learn && !rep.flags && rep.part > 0 && rep.part <= TGT_SPLIT_WSCALE)
            tgt_model_learn_share(k, ex[i], (double)rep.part / TGT_SPLIT_WSCALE,
                                  (double)rep.teams_ns * 1e-9);
        if (plen < sizeof(parts) - 32)
            plen += (size_t)snprintf(parts + plen, sizeof(parts) - plen,
                                     "%srank %d %.1f%%", i ? ", " : "", ranks[i],
                                     (double)rep.part * 100.0 / TGT_SPLIT_WSCALE);
        teams = rep.teams;
        ns = rep.kernel_ns > ns ? rep.kernel_ns : ns;
        nranges += rep.nranges;
    }
    free(args);
    t_run = ompc_now_ns();
    if (flags & TGT_SPLIT_FAULTED)
        TGT_USER_ERROR(loc,
                       "kernel %s was split over %d executors and wrote, through "
                       "a pointer, into device memory that no clause names "
                       "(device pages on demand), which a split kernel cannot "
                       "merge: map that data, or set OMPC_SPLIT=off",
                       k->name, nsh);
    char why[512] = "";
    red_t red = {0};
    bool keeps[nsh];
    memset(keeps, 0, sizeof(keeps));
    tagged_t *t = malloc((nranges ? nranges : 1) * sizeof(*t));
    if (!t)
        ompc_fatal("out of memory merging kernel %s", k->name);
    size_t n = 0, bytes = 0;
    if (flags) {
        snprintf(why, sizeof(why), "%s", flag_reason(flags));
    } else {
        for (int i = 0; i < nsh; i++) {
            const char *p = res + (size_t)i * res_cap;
            tgt_split_reply_t rep;
            memcpy(&rep, p, sizeof(rep));
            for (uint32_t r = 0; r < rep.nranges; r++) {
                memcpy(&t[n].r, p + sizeof(rep) + r * sizeof(tgt_split_range_t),
                       sizeof(t[n].r));
                if (t[n].r.buf >= nwr || t[n].r.off > dm_buf_size(wr[t[n].r.buf]) ||
                    t[n].r.len > dm_buf_size(wr[t[n].r.buf]) - t[n].r.off)
                    TGT_USER_ERROR(loc,
                                   "share %d of kernel %s named bytes outside its "
                                   "buffers",
                                   i, k->name);
                bytes += i > 0 ? t[n].r.len : 0;
                t[n++].share = (uint32_t)i;
            }
        }
        for (size_t i = 0; i < n; i++)
            if (t[i].share > 0 && t[i].r.len <= TGT_SPLIT_SMALL)
                keeps[t[i].share] = true;
        red = find_reduction(res, res_cap, nsh, t, &n, nwr, why, sizeof(why));
        if (!why[0])
            find_overlap(t, n, nsh, wr, why, sizeof(why));
    }
    last_clear();
    if (!why[0] && red.nparts)
        combine_home(&red, key, ranks[0], loc, k, why, sizeof(why));
    free(res);
    free(red.parts);
    size_t nspread = 0;
    if (!why[0] && nsh <= 64 && (last.changed = calloc(nwr ? nwr : 1, sizeof(bool))) &&
        (last.pieces = calloc(nwr ? nwr : 1, sizeof(*last.pieces))) &&
        (last.npieces = calloc(nwr ? nwr : 1, sizeof(*last.npieces)))) {
        for (size_t i = 0; i < n; i++)
            last.changed[t[i].r.buf] = true;
        if (red.nparts || red.home_changed)
            last.changed[red.buf] = true;
        last.pending = true;
        last.nsh = nsh;
        last.nwr = nwr;
        memcpy(last.ex, ex, (size_t)nsh * sizeof(int));
        /* What each share changed stays where it was written (t is sorted
         * by buffer and offset), but for the reduction's buffer (the home
         * holds the combined value) and declare target variables. */
        if (ompc_config_get()->split_keep) {
            for (size_t b = 0; b < nwr; b++) {
                /* Helpers short of pieces are not valid, changed or not;
                 * a record dropped leaves the home's copy, which is whole,
                 * the only valid one. */
                if (kp.old[b])
                    last.changed[b] = true;
                bool global = (red.nparts || red.home_changed) && red.buf == b;
                for (int g = 0; g < tgt_rt->nglobals && !global; g++)
                    global = tgt_rt->globals[g].buf == wr[b];
                if (!last.changed[b] || global)
                    continue;
                last.pieces[b] = merge_pieces(kp.old[b], kp.nold[b], t, n, (uint32_t)b,
                                              nsh, ex, &last.npieces[b]);
                nspread += last.pieces[b] != NULL;
            }
        }
    } else if (!why[0]) {
        last_clear();
    }
    bool kept_any[nsh];
    memcpy(kept_any, keeps, sizeof(kept_any));
    if (nspread) {
        /* Ranges of spread buffers do not move home; a helper keeps small
         * ranges (to pack) only of buffers that do, and forgets the rest. */
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!last.pieces[t[i].r.buf])
                t[m++] = t[i];
        n = m;
        memset(keeps, 0, sizeof(keeps));
        for (size_t i = 0; i < n; i++)
            if (t[i].share > 0 && t[i].r.len <= TGT_SPLIT_SMALL)
                keeps[t[i].share] = true;
        bytes = 0;
        for (size_t i = 0; i < n; i++)
            bytes += t[i].share > 0 ? t[i].r.len : 0;
    }
    if (!why[0]) {
        /* Helpers that keep something but push nothing forget it, and the
         * home its twins once the helpers' bytes are in: posted, not
         * waited for (a round trip each on the split's path; what follows
         * on those ranks runs after them). */
        for (int i = 1; i < nsh; i++)
            if (!keeps[i] && (kept_any[i] || any_lazy))
                drop_post(ranks[i], key, loc, k);
        move_home(t, n, key, nsh, keeps, ranks, ex, wr, loc, k);
        drop_post(ranks[0], key, loc, k);
        if (tgt_rt->info)
            fprintf(stderr,
                    "[ompc info] r0 split %s over %d executors (%u teams): %zu changed "
                    "ranges, %zu bytes moved to executor %d, %zu share(s)' reduction "
                    "combined, %zu buffer(s) kept in place (%zu bytes filled in, "
                    "%llu fetched when touched); "
                    "inputs %.3f ms, shares %.3f ms (longest kernel %.3f ms), "
                    "merge %.3f ms; work: %s\n",
                    k->name, nsh, teams, n, bytes, home, red.nparts, nspread, filled,
                    (unsigned long long)fetched, (double)(t_in - t0) * 1e-6,
                    (double)(t_run - t_in) * 1e-6, (double)ns * 1e-6,
                    (double)(ompc_now_ns() - t_run) * 1e-6, parts);
    } else {
        /* Helpers that kept small ranges forget them; helpers short of
         * pieces put their copies back as they were (their own pieces
         * current again), and the pieces then go home, whose copy the
         * kernel runs on whole. */
        for (int i = 1; i < nsh; i++)
            if (keeps[i] || any_lazy)
                end_one(ranks[i], key, any_lazy ? TGT_SPLIT_RESTORE : TGT_SPLIT_DROP, loc,
                        k);
        end_one(ranks[0], key, TGT_SPLIT_RESTORE, loc, k);
        for (size_t b = 0; b < nwr; b++) {
            if (!kp.old[b])
                continue;
            ompc_status_t st = dm_spread(tgt_rt->dm, wr[b], ex[0], kp.old[b], kp.nold[b]);
            if (st == OMPC_OK)
                st = dm_gather(tgt_rt->dm, &wr[b], 1);
            if (st != OMPC_OK)
                TGT_USER_ERROR(loc, "gathering the data of split kernel %s failed: %s",
                               k->name, ompc_status_str(st));
        }
    }
    free(t);
    keep_free(&kp, nwr, nsh);
    if (why[0]) {
        /* The home is as it was before the kernel: run it whole there. */
        atomic_fetch_or(&kstate[k - tgt_rt->kernels], KS_UNSPLIT);
        char where[160];
        tgt_kernel_where(k->name, where, sizeof(where));
        if (tgt_rt->info)
            fprintf(stderr, "[ompc info] r0 kernel %s%s runs unsplit: %s\n", k->name,
                    where, why);
        ompc_info("kernel %s%s runs unsplit from now on: %s", k->name, where, why);
        tgt_wire_kernel_reply_t rep = {0};
        ev_handle_t *hk = NULL;
        ompc_status_t st = ev_execute(tgt_rt->ev, ranks[0], tgt_rt->fn_kernel, msg,
                                      msg_len, &rep, sizeof(rep), &hk);
        if (st == OMPC_OK)
            st = ev_wait(hk);
        if (hk)
            ev_handle_release(hk);
        if (st != OMPC_OK)
            TGT_USER_ERROR(loc, "kernel %s failed on executor %d: %s", k->name, home,
                           ompc_status_str(st));
        ns = rep.kernel_ns;
    }
    ks->shares = (uint32_t)nsh;
    ks->spread = nspread > 0;
    ks->teams = teams;
    if (why[0]) {
        ks->undone++;
    } else {
        ks->merged++;
        ks->reduced += red.nparts > 0;
        ks->ranges += n;
        ks->bytes += bytes;
    }
    ks->in_ns += t_in - t0;
    ks->run_ns += t_run - t_in;
    ks->merge_ns += ompc_now_ns() - t_run;
    if (want < 0) {
        /* What the split took against the kernel whole: learn its overhead,
         * and run whole for a while if it did not gain. */
        double took = (double)(ompc_now_ns() - t0) * 1e-9;
        if (!why[0]) {
            ks->over_s = took - (double)ns * 1e-9;
            ks->over_w = nsh;
        }
        if (tgt_rt->info)
            fprintf(stderr,
                    "[ompc info] r0 auto: kernel %s split over %d executors took %.3f ms "
                    "(predicted %.3f ms, whole %.3f ms)\n",
                    k->name, nsh, took * 1e3, pred * 1e3, whole * 1e3);
        if (took >= whole)
            auto_back_off(k, ks);
        else
            ks->backoff = AUTO_BACKOFF_MIN;
    }
    pthread_mutex_unlock(&split_mtx);
    const ompc_trace_arg_t targs[] = {
        OMPC_TRACE_U64("shares", (uint64_t)nsh),
        OMPC_TRACE_U64("teams", teams),
        OMPC_TRACE_U64("merged", why[0] ? 0 : 1),
        OMPC_TRACE_U64("reduced", red.nparts ? 1 : 0),
        OMPC_TRACE_U64("predicted_us", (uint64_t)(pred * 1e6)),
        OMPC_TRACE_U64("whole_us", (uint64_t)(whole * 1e6))};
    ompc_trace_span("split", k->name, t0, ompc_now_ns(), targs,
                    sizeof(targs) / sizeof(targs[0]));
    *ns_p = ns;
    return true;
}

void tgt_split_after(dm_buf_t *const *wr, size_t nwr, uint64_t tag)
{
    if (!last.pending)
        return;
    last.pending = false;
    for (size_t b = 0; b < nwr && b < last.nwr; b++) {
        for (int i = 1; !last.changed[b] && i < last.nsh; i++)
            dm_valid_if(tgt_rt->dm, last.ex[i], wr[b], tag);
        if (last.pieces[b] && dm_spread(tgt_rt->dm, wr[b], last.ex[0], last.pieces[b],
                                        last.npieces[b]) != OMPC_OK)
            ompc_fatal("cannot record where a split kernel left its shares");
    }
    last_clear();
}

void tgt_split_stats_print(void)
{
    if (!kstats)
        return;
    pthread_mutex_lock(&split_mtx);
    for (int i = 0; i < tgt_rt->nkernels; i++) {
        const kstats_t *ks = &kstats[i];
        if (!ks->merged && !ks->undone && !ks->auto_whole)
            continue;
        char where[160];
        tgt_kernel_where(tgt_rt->kernels[i].name, where, sizeof(where));
        fprintf(stderr,
                "[ompc stats] split %s%s: %llu run(s) over %u executors (%u teams) "
                "merged, %llu undone and run unsplit, %llu with a reduction combined; "
                "%llu changed ranges, %llu bytes moved to the home; inputs %.3f s, "
                "shares %.3f s, merge %.3f s\n",
                tgt_rt->kernels[i].name, where, (unsigned long long)ks->merged,
                ks->shares, ks->teams, (unsigned long long)ks->undone,
                (unsigned long long)ks->reduced, (unsigned long long)ks->ranges,
                (unsigned long long)ks->bytes, (double)ks->in_ns * 1e-9,
                (double)ks->run_ns * 1e-9, (double)ks->merge_ns * 1e-9);
        if (ompc_config_get()->split < 0)
            fprintf(stderr,
                    "[ompc stats] split auto %s%s: %llu launch(es) split, %llu run whole "
                    "on the model's prediction (whole %.3f ms; last split's overhead "
                    "%.3f ms over %d executors)\n",
                    tgt_rt->kernels[i].name, where, (unsigned long long)ks->auto_split,
                    (unsigned long long)ks->auto_whole, ks->whole_s * 1e3,
                    ks->over_s * 1e3, ks->over_w);
    }
    pthread_mutex_unlock(&split_mtx);
}
