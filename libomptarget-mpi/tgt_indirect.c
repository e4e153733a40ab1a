/* Indirect functions (`declare target ... indirect`): executors learn
 * the head's address of each one and reach their own device function from
 * it, in kernel arguments (tgt_indirect_find) and, on workers, through
 * jumps placed at the head's addresses. */
#define _GNU_SOURCE
#include "tgt_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int indirect_cmp(const void *a, const void *b)
{
    uint64_t x = ((const tgt_indirect_t *)a)->head_addr;
    uint64_t y = ((const tgt_indirect_t *)b)->head_addr;
    return x < y ? -1 : x > y;
}

void *tgt_indirect_find(uint64_t v)
{
    if (tgt_rt->nindirect == 0)
        return NULL;
    tgt_indirect_t key = {.head_addr = v};
    const tgt_indirect_t *f = bsearch(&key, tgt_rt->indirect, (size_t)tgt_rt->nindirect,
                                      sizeof(tgt_indirect_t), indirect_cmp);
    return f ? f->dev_fn : NULL;
}

/* "name (line N)" of the source function of an indirect entry, whose
 * name is __omp_offloading_<device>_<file>_<function>_l<line>. */
static const char *indirect_label(const char *entry, char *buf, size_t cap)
{
    static const char prefix[] = "__omp_offloading_";
    const char *p = entry, *l = strrchr(entry, '_');
    if (strncmp(p, prefix, sizeof(prefix) - 1) == 0) {
        p += sizeof(prefix) - 1;
        for (int field = 0; field < 2 && p; field++) {
            p = strchr(p, '_');
            p = p ? p + 1 : NULL;
        }
    } else {
        p = NULL;
    }
    if (!p || !l || l <= p || l[1] != 'l')
        snprintf(buf, cap, "%s", entry);
    else
        snprintf(buf, cap, "%.*s (line %s)", (int)(l - p), p, l + 2);
    return buf;
}

/* `jmp *0(%rip)` followed by the 8-byte target: clobbers no register. */
#define TGT_JUMP_LEN 14

static void jump_write(unsigned char *at, void *target)
{
    static const unsigned char op[6] = {0xff, 0x25, 0, 0, 0, 0};
    uint64_t t = (uint64_t)(uintptr_t)target;
    memcpy(at, op, sizeof(op));
    memcpy(at + sizeof(op), &t, sizeof(t));
}

/* Workers: the head's address of each indirect function jumps to this
 * worker's device function.  Clang 19 compiles a call through a function
 * pointer on the x86_64 device as a plain indirect call (no lookup in a
 * table, unlike the GPU targets that call __llvm_omp_indirect_call_lookup
 * themselves), so a head address a kernel reads from mapped data must be
 * callable here.  Where the head and this worker load the executable at
 * different addresses (ASLR), the head's addresses are free here and get
 * pages of jumps; where at the same one (non-PIE, ASLR off), they hold
 * this worker's host copy of the function, which workers never run, and
 * its first bytes are replaced. */
static void place_jumps(void)
{
    tgt_indirect_t *v = tgt_rt->indirect;
    int n = tgt_rt->nindirect;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    bool in_place = v[0].head_addr == (uint64_t)(uintptr_t)v[0].host_addr;
    uintptr_t *pages = NULL;
    size_t npages = 0, cap = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && v[i].head_addr == v[i - 1].head_addr)
            continue; /* two names for one host function (folded code) */
        uintptr_t at = (uintptr_t)v[i].head_addr;
        if (in_place != (at == (uintptr_t)v[i].host_addr))
            ompc_fatal("indirect function %s: the head's address moved by a "
                       "different amount than the others",
                       v[i].name);
        for (uintptr_t p = at & ~(pg - 1); p < at + TGT_JUMP_LEN; p += pg) {
            if (npages > 0 && pages[npages - 1] == p)
                continue;
            if (in_place) {
                if (mprotect((void *)p, pg, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
                    ompc_fatal("rank %d: cannot make the code page of indirect "
                               "function %s writable (%s): the worker must redirect "
                               "it to the device function",
                               tgt_rt->rank, v[i].name, strerror(errno));
            } else {
                void *m = mmap((void *)p, pg, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
                if (m != (void *)p) {
                    if (m != MAP_FAILED)
                        munmap(m, pg);
                    char l[160];
                    ompc_fatal_user("rank %d: the head's address of indirect function "
                                    "%s (%#lx) is in use on this worker, which needs it "
                                    "to jump to the device function. Start every rank "
                                    "with the same address layout: `mpiexec -n N "
                                    "setarch -R ./app`",
                                    tgt_rt->rank, indirect_label(v[i].name, l, sizeof(l)),
                                    (unsigned long)at);
                }
            }
            pages = tgt_grow(pages, &cap, npages, sizeof(*pages),
                             "indirect function pages");
            pages[npages++] = p;
        }
        jump_write((unsigned char *)at, v[i].dev_fn);
    }
    for (size_t i = 0; i < npages; i++)
        if (mprotect((void *)pages[i], pg, PROT_READ | PROT_EXEC) != 0)
            ompc_fatal("rank %d: cannot make the jumps to indirect functions "
                       "executable (%s)",
                       tgt_rt->rank, strerror(errno));
    __builtin___clear_cache((char *)pages[0], (char *)pages[npages - 1] + pg);
    free(pages);
}

/* Collective, with workers: each indirect function needs TGT_JUMP_LEN
 * bytes at the head's address (place_jumps).  Rank 0 names the first two
 * that are closer and ends the job. */
static void check_jump_room(void)
{
    const tgt_indirect_t *v = tgt_rt->indirect;
    for (int i = 0; i + 1 < tgt_rt->nindirect; i++) {
        uint64_t gap = v[i + 1].head_addr - v[i].head_addr;
        if (gap == 0 || gap >= TGT_JUMP_LEN)
            continue;
        if (tgt_rt->rank != 0)
            for (;;)
                pause(); /* rank 0 reports and aborts the job */
        char a[160], b[160];
        ompc_fatal_user("the indirect functions %s and %s are %llu bytes apart "
                        "in the executable; ompc needs %d bytes at each to reach "
                        "the device function from a worker. Compile with "
                        "-falign-functions=16 (the default at -O1 and above, "
                        "not at -Os/-Oz)",
                        indirect_label(v[i].name, a, sizeof(a)),
                        indirect_label(v[i + 1].name, b, sizeof(b)),
                        (unsigned long long)gap, TGT_JUMP_LEN);
    }
}

/* Collective: executors learn the head's address of each indirect
 * function (ASLR places the executable differently in every process). */
void tgt_indirect_share(void)
{
    int n = tgt_rt->nindirect;
    if (n == 0)
        return;
    uint64_t *mine = calloc((size_t)n, sizeof(uint64_t));
    if (!mine)
        ompc_fatal("out of memory sharing indirect function addresses");
    for (int i = 0; i < n; i++)
        mine[i] = (uint64_t)(uintptr_t)tgt_rt->indirect[i].host_addr;
    uint64_t *all = tgt_rt_allgather(mine, (size_t)n * sizeof(uint64_t),
                                     "indirect function addresses");
    for (int i = 0; i < n; i++)
        tgt_rt->indirect[i].head_addr = all[i]; /* rank 0's row */
    free(mine);
    free(all);
    qsort(tgt_rt->indirect, (size_t)n, sizeof(tgt_indirect_t), indirect_cmp);
    if (tgt_rt->size == 1)
        return; /* the head's addresses are its own: no jumps */
    check_jump_room();
    if (tgt_rt->executor)
        place_jumps();
}
