/* omp_target_alloc memory reached through pointers stored in device data,
 * which no clause names (argv[1] picks the case):
 *   chain:  a device array of pointers to omp_target_alloc blocks, filled
 *           with omp_target_memcpy; a kernel sums the blocks through it,
 *           another doubles them, the host reads them back.
 *   tree:   one kernel builds a binary tree in omp_target_alloc blocks,
 *           a later one (ordered only by depend on a token) sums it; with
 *           OMPC_SCHEDULER=roundrobin the two run on different workers.
 *   par:    a parallel for kernel whose threads all fault at once: every
 *           iteration reads the shared first block and writes its own.
 *   merge:  two kernels with no order between them write different bytes
 *           of one page (on two workers under roundrobin): both writes
 *           survive.
 *   clash:  a kernel writes through faults a buffer that another kernel
 *           running at the same time on another worker names: refused by
 *           name (the named writer's copy wins when it completes). */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NB 64
#define BLOCK 1024 /* longs per block: two pages */

static int dev, host;

static int chain(void)
{
    long **blocks = calloc(NB, sizeof(long *));
    long *init = malloc(BLOCK * sizeof(long));
    for (int b = 0; b < NB; b++) {
        blocks[b] = omp_target_alloc(BLOCK * sizeof(long), dev);
        for (int i = 0; i < BLOCK; i++)
            init[i] = b * 10000L + i;
        if (!blocks[b] || omp_target_memcpy(blocks[b], init, BLOCK * sizeof(long), 0, 0, dev,
                                            host))
            return 2;
    }
    long **table = omp_target_alloc(NB * sizeof(long *), dev);
    if (!table || omp_target_memcpy(table, blocks, NB * sizeof(long *), 0, 0, dev, host))
        return 2;
    long sum = 0;
#pragma omp target is_device_ptr(table) map(tofrom : sum)
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < BLOCK; i++)
            sum += table[b][i];
    long want = 0;
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < BLOCK; i++)
            want += b * 10000L + i;
    if (sum != want) {
        fprintf(stderr, "chain: sum %ld, want %ld\n", sum, want);
        return 1;
    }
#pragma omp target is_device_ptr(table)
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < BLOCK; i += 3)
            table[b][i] *= 2;
    for (int b = 0; b < NB; b++) {
        if (omp_target_memcpy(init, blocks[b], BLOCK * sizeof(long), 0, 0, host, dev))
            return 2;
        for (int i = 0; i < BLOCK; i++)
            if (init[i] != (b * 10000L + i) * (i % 3 == 0 ? 2 : 1)) {
                fprintf(stderr, "chain: block %d [%d] = %ld\n", b, i, init[i]);
                return 1;
            }
        omp_target_free(blocks[b], dev);
    }
    omp_target_free(table, dev);
    free(blocks);
    free(init);
    printf("chain: ok\n");
    return 0;
}

typedef struct tnode {
    struct tnode *left, *right;
    long value;
} tnode_t;

#define TN 255 /* a complete tree of 8 levels */

#pragma omp declare target
static long tree_sum(const tnode_t *t)
{
    return t ? t->value + tree_sum(t->left) + tree_sum(t->right) : 0;
}
#pragma omp end declare target

static int tree(void)
{
    /* Every node its own block, so that the reader faults on each. */
    tnode_t **nodes = calloc(TN, sizeof(*nodes));
    for (int i = 0; i < TN; i++)
        if (!(nodes[i] = omp_target_alloc(sizeof(tnode_t), dev)))
            return 2;
    tnode_t **holder = omp_target_alloc(sizeof(tnode_t *), dev);
    uintptr_t h = (uintptr_t)holder;
    int token = 0;
    long sum = -1;
#pragma omp parallel num_threads(1)
#pragma omp single
    {
#pragma omp target nowait depend(out : token) map(to : nodes[:TN]) firstprivate(h)
        {
            for (int i = TN - 1; i >= 0; i--) {
                nodes[i]->value = i + 1;
                nodes[i]->left = 2 * i + 1 < TN ? nodes[2 * i + 1] : NULL;
                nodes[i]->right = 2 * i + 2 < TN ? nodes[2 * i + 2] : NULL;
            }
            *(tnode_t **)h = nodes[0];
        }
#pragma omp target nowait depend(in : token) map(from : sum) firstprivate(h)
        sum = tree_sum(*(tnode_t **)h);
    }
    if (sum != (long)TN * (TN + 1) / 2) {
        fprintf(stderr, "tree: sum %ld, want %ld\n", sum, (long)TN * (TN + 1) / 2);
        return 1;
    }
    for (int i = 0; i < TN; i++)
        omp_target_free(nodes[i], dev);
    omp_target_free(holder, dev);
    free(nodes);
    printf("tree: ok\n");
    return 0;
}

static int par(void)
{
    long **blocks = calloc(NB, sizeof(long *));
    for (int b = 0; b < NB; b++)
        if (!(blocks[b] = omp_target_alloc(BLOCK * sizeof(long), dev)))
            return 2;
    long *ones = malloc(BLOCK * sizeof(long));
    for (int i = 0; i < BLOCK; i++)
        ones[i] = i;
    if (omp_target_memcpy(blocks[0], ones, BLOCK * sizeof(long), 0, 0, dev, host))
        return 2;
    long shared_sum = (long)BLOCK * (BLOCK - 1) / 2;
    /* Iterations 1.. read block 0 (all threads fault on its pages at once)
     * and fill their own block. */
#pragma omp target parallel for num_threads(4) map(to : blocks[:NB])
    for (int b = 1; b < NB; b++) {
        long s = 0;
        for (int i = 0; i < BLOCK; i++)
            s += blocks[0][i];
        for (int i = 0; i < BLOCK; i++)
            blocks[b][i] = s + b * i;
    }
    for (int b = 1; b < NB; b++) {
        if (omp_target_memcpy(ones, blocks[b], BLOCK * sizeof(long), 0, 0, host, dev))
            return 2;
        for (int i = 0; i < BLOCK; i++)
            if (ones[i] != shared_sum + (long)b * i) {
                fprintf(stderr, "par: block %d [%d] = %ld\n", b, i, ones[i]);
                return 1;
            }
    }
    for (int b = 0; b < NB; b++)
        omp_target_free(blocks[b], dev);
    free(blocks);
    free(ones);
    printf("par: ok\n");
    return 0;
}

static int merge(void)
{
    char *page = omp_target_alloc(4096, dev);
    char zero[4096] = {0};
    if (!page || omp_target_memcpy(page, zero, sizeof(zero), 0, 0, dev, host))
        return 2;
    /* Hidden from the runtime, which takes a device address passed by
     * value for a use of its buffer (and would then run both writers on
     * one worker): only the faults see this page. */
    const uintptr_t key = 0x5a5a5a5a5a5a5a5aull;
    uintptr_t a = (uintptr_t)page ^ key;
    int t1 = 0, t2 = 0;
#pragma omp parallel num_threads(1)
#pragma omp single
    {
        /* No order between the two: different dependences. */
#pragma omp target nowait depend(out : t1) firstprivate(a, key)
        for (int i = 0; i < 2048; i++)
            ((char *)(a ^ key))[i] = (char)(1 + i % 100);
#pragma omp target nowait depend(out : t2) firstprivate(a, key)
        for (int i = 2048; i < 4096; i++)
            ((char *)(a ^ key))[i] = (char)(101 + i % 100);
    }
    char got[4096];
    if (omp_target_memcpy(got, page, sizeof(got), 0, 0, host, dev))
        return 2;
    for (int i = 0; i < 4096; i++) {
        char want = (char)(i < 2048 ? 1 + i % 100 : 101 + i % 100);
        if (got[i] != want) {
            fprintf(stderr, "merge: byte %d = %d, want %d (a write was lost)\n", i, got[i],
                    want);
            return 1;
        }
    }
    omp_target_free(page, dev);
    printf("merge: ok\n");
    return 0;
}

/* A kernel that names a buffer (is_device_ptr: it may write it) runs
 * while another, with no order between them, writes that buffer through
 * a pointer it does not name: the runtime must refuse by name, since the
 * named writer's copy becomes the only valid one when it completes. */
static int clash(void)
{
    long *buf = omp_target_alloc(4096, dev);
    long zero[512] = {0};
    if (!buf || omp_target_memcpy(buf, zero, sizeof(zero), 0, 0, dev, host))
        return 2;
    const uintptr_t key = 0x5a5a5a5a5a5a5a5aull;
    uintptr_t a = (uintptr_t)buf ^ key;
    int t1 = 0, t2 = 0;
#pragma omp parallel num_threads(1)
#pragma omp single
    {
#pragma omp target nowait depend(out : t1) is_device_ptr(buf)
        {
            double t0 = omp_get_wtime();
            while (omp_get_wtime() - t0 < 2.0)
                ;
            buf[0] = 1;
        }
#pragma omp target nowait depend(out : t2) firstprivate(a, key)
        ((long *)(a ^ key))[1] = 2;
    }
    printf("clash: not refused\n");
    return 1;
}

int main(int argc, char **argv)
{
    dev = omp_get_default_device();
    host = omp_get_initial_device();
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "chain"))
        return chain();
    if (!strcmp(mode, "tree"))
        return tree();
    if (!strcmp(mode, "par"))
        return par();
    if (!strcmp(mode, "merge"))
        return merge();
    if (!strcmp(mode, "clash"))
        return clash();
    fprintf(stderr, "usage: %s chain|tree|par|merge|clash\n", argv[0]);
    return 2;
}
